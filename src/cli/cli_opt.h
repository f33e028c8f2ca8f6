/* cli_opt.h - the commands' option tables and their one parser (as git's
 * parse_options): each command declares a table of option descriptors
 * beside its code and a struct cli_cmd that cli.c's commands[] lists;
 * parsing, every usage error, the usage line, -h and --list-options all
 * come from the table, so no command keeps usage text of its own.
 * Private to src/cli. */
#ifndef CLI_OPT_H
#define CLI_OPT_H

#include "base/wf_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/* Exit codes of the program, the mount's and the commands' alike
 * (documented in docs/weightfs.1). */
enum {
	EXIT_USAGE = 1,    /* bad command line, the mount itself failed, or OUT cannot be written */
	EXIT_OPEN = 2,     /* MODEL cannot be opened, is not a regular file, lies inside the mount
			    * point, or changed while being read */
	EXIT_FORMAT = 3,   /* MODEL is malformed */
	EXIT_UNSUP = 4,    /* MODEL is well-formed but uses something weightfs does not support */
	EXIT_NOMEM = 5,
};

/* The exit code for a failure of wf_set_open and friends, so the commands
 * and the mount answer the same model with the same code. */
int cli_exit_code(enum wf_err rc);

/* A path or file name for a one-line message: p as it is when printable,
 * else its escaped form (wf_quote_path) in one of four buffers of the
 * calling thread, so up to four can go into one fprintf. */
const char *cli_path(const char *p);

enum cli_opt_kind {
	CLI_OPT_END = 0,  /* ends a table */
	CLI_OPT_FLAG,     /* a bool set to true; takes no value */
	CLI_OPT_UINT,     /* a uint64_t: decimal digits only, within [min, max] */
	CLI_OPT_STRING,   /* a char * into argv (the last one given wins) */
	CLI_OPT_ENUM,     /* an int: the index of the value in names[] */
	CLI_OPT_CALLBACK, /* cb(opt, value, vals, ...) decides */
};

struct cli_opt;

/* A CLI_OPT_CALLBACK's handler: `arg` is the option's value (modifiable:
 * it lies in argv), `vals` the command's values.  Returns 0, or an exit
 * code after writing one line into msg (without "weightfs CMD: "), which
 * the parser completes with the usage line and prints. */
typedef int (*cli_opt_cb)(const struct cli_opt *opt, char *arg, void *vals, char *msg, size_t len);

struct cli_opt {
	enum cli_opt_kind kind;
	char short_name;            /* -x, or 0 */
	const char *long_name;      /* --name (without the dashes), or NULL */
	const char *argh;           /* the value's name in usage ("N", "FILE"); NULL for a flag */
	const char *help;           /* one line for -h */
	size_t off;                 /* where the value lands: offsetof(the command's values, field) */
	uint64_t min, max;          /* CLI_OPT_UINT's range */
	const char *noun;           /* CLI_OPT_UINT: "not a NOUN" ("byte count"); NULL: "number" */
	const char *const *names;   /* CLI_OPT_ENUM: the values, NULL-terminated */
	cli_opt_cb cb;              /* CLI_OPT_CALLBACK */
	unsigned data;              /* for the callback (what -o takes, for instance) */
};

#define CLI_FLAG(s, l, field_off, h) {.kind = CLI_OPT_FLAG, .short_name = (s), .long_name = (l), .off = (field_off), .help = (h)}
#define CLI_STRING(s, l, arg, field_off, h) \
	{.kind = CLI_OPT_STRING, .short_name = (s), .long_name = (l), .argh = (arg), .off = (field_off), .help = (h)}
#define CLI_END {.kind = CLI_OPT_END}

/* A command: cli.c's commands[] lists one per command. */
struct cli_cmd {
	const char *name;
	const char *args;           /* its arguments in usage, after the options: "MODEL [NAME ...]" */
	int min_pos, max_pos;       /* how many arguments; max_pos < 0: no limit */
	const char *missing;        /* the message when there are fewer than min_pos */
	const struct cli_opt *opts; /* ends with CLI_END */
	int usage_exit;             /* the exit code of a bad command line (1; diff and verify: 2) */
	const char *summary;        /* one line for -h */
	/* Runs the command on argv (argv[1] is its name); returns the exit code. */
	int (*run)(const struct cli_cmd *c, int argc, char **argv);
};

/* What cli_parse returns when -h or --help printed the help: exit 0. */
#define CLI_HELP (-1)

/* Parses argv[2..argc) by c's table into vals (the struct each opt's off
 * is into, initialised by the caller).  Options and arguments may come in
 * any order; "--" ends the options; "-" is an argument; "--name=VALUE" and
 * "--name VALUE", "-xVALUE" and "-x VALUE", and short flags bundled
 * ("-ab") are accepted.  The arguments are moved to argv[2..2 + *n_pos).
 * Returns 0; CLI_HELP after -h or --help printed the help to stdout; or,
 * after one line on stderr naming the command and the option
 * ("weightfs CMD: MESSAGE (usage: weightfs CMD ...)"), c->usage_exit or
 * a callback's code. */
int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *vals, int *n_pos);

/* Says "weightfs CMD: MESSAGE (usage: ...)" on stderr and returns
 * c->usage_exit: for a usage error found after parsing. */
__attribute__((format(printf, 2, 3)))
int cli_usage_error(const struct cli_cmd *c, const char *fmt, ...);

/* Writes c's usage line after "weightfs CMD " ("[--json] [-o T] MODEL"). */
void cli_opt_usage(FILE *f, const struct cli_cmd *c);

/* Writes c's help: the usage line, the summary and one line per option. */
void cli_opt_help(FILE *f, const struct cli_cmd *c);

/* Writes one line per spelling of each of c's options, followed by " ARG"
 * when it takes a value ("--json", "--offset N", "-o LIST"): what the bash
 * completion offers. */
void cli_opt_list(FILE *f, const struct cli_cmd *c);

#endif
