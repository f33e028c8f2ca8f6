/* cli.h - the commands of the weightfs program besides mounting: ls, info,
 * cat, convert, stats, diff and verify (docs/weightfs.1, COMMANDS).  Part of the command-line
 * program, not of the library: these print and choose exit codes. */
#ifndef CLI_H
#define CLI_H

#include "base/wf_common.h"
#include "mount/wf_mount.h"

#include <stdbool.h>
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

/* True if arg is the name of a command ("ls", "info", "cat", ...):
 * only an exact match counts, so a model file named like one is mounted
 * as ./ls. */
bool cli_is_command(const char *arg);

/* Writes each command's usage line ("       PROG ls [--json] ... MODEL\n"),
 * for the program's -h. */
void cli_usage(FILE *f, const char *prog);

/* Writes the commands' names, comma-separated, for messages. */
void cli_command_names(FILE *f);

/* Writes command cmd's options, one spelling a line with " ARG" after one
 * that takes a value (weightfs --list-options CMD, which the bash
 * completion reads); -1 when cmd is no command, else 0. */
int cli_list_options(FILE *f, const char *cmd);

/* Reads -o dtype=`dtype` (NULL: f32) into *want; on an unknown name says
 * so in one line and returns EXIT_USAGE, else 0. */
int cli_dtype(const char *dtype, enum wf_vk *want);

/* Opens MODEL as the mount shows it (wf_mount_open) under -o dtype=`dtype`
 * (NULL: f32) and the tree options; on failure says why in one line
 * ("weightfs: MODEL: ...") and returns the exit code, else 0. */
int cli_open(struct wf_mount *mt, const char *model, const char *dtype, const struct wf_tree_opts *opts);

/* A path or file name for a one-line message: p as it is when printable,
 * else its escaped form (wf_quote_path) in one of four buffers of the
 * calling thread, so up to four can go into one fprintf. */
const char *cli_path(const char *p);

/* Runs the command argv[1] with its arguments; returns the exit code. */
int cli_main(int argc, char **argv);

#endif
