/* cli_opt.c - the commands' one option parser, their usage lines and -h
 * (cli_opt.h); and the command line's two conventions every command
 * shares: how a path is shown in a message, and which exit code a
 * failure gets.  Nothing here knows a command: it reads their tables. */
#include "cli/cli_opt.h"

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

int cli_exit_code(enum wf_err rc)
{
	switch (rc) {
	case WF_OK:
		return 0;
	case WF_ERR_IO:
	case WF_ERR_CHANGED:
		return EXIT_OPEN;
	case WF_ERR_FORMAT:
		return EXIT_FORMAT;
	case WF_ERR_UNSUP:
	case WF_ERR_RANGE:
		return EXIT_UNSUP;
	case WF_ERR_NOMEM:
		return EXIT_NOMEM;
	}
	return EXIT_USAGE;
}

const char *cli_path(const char *p)
{
	static _Thread_local char buf[4][WF_QPATH];
	static _Thread_local unsigned next;
	char *out = buf[next++ % 4];
	return wf_quote_path(out, WF_QPATH, p);
}

/* ---------------------------------------------------------------- usage and help */

static void opt_usage(FILE *f, const struct cli_opt *o)
{
	if (o->long_name)
		fprintf(f, "[--%s%s%s]", o->long_name, o->argh ? " " : "", o->argh ? o->argh : "");
	else
		fprintf(f, "[-%c%s%s]", o->short_name, o->argh ? " " : "", o->argh ? o->argh : "");
}

void cli_opt_usage(FILE *f, const struct cli_cmd *c)
{
	for (const struct cli_opt *o = c->opts; o->kind != CLI_OPT_END; o++) {
		opt_usage(f, o);
		fputc(' ', f);
	}
	fputs(c->args, f);
}

void cli_opt_help(FILE *f, const struct cli_cmd *c)
{
	fprintf(f, "usage: weightfs %s ", c->name);
	cli_opt_usage(f, c);
	fprintf(f, "\n\n%s\n\noptions:\n", c->summary);
	for (const struct cli_opt *o = c->opts; o->kind != CLI_OPT_END; o++) {
		char spell[96];
		int n = 0;
		if (o->short_name)
			n = snprintf(spell, sizeof spell, "-%c%s%s", o->short_name, o->argh && !o->long_name ? " " : "",
				     o->argh && !o->long_name ? o->argh : "");
		if (o->long_name)
			snprintf(spell + n, sizeof spell - (size_t)n, "%s--%s%s%s", n ? ", " : "", o->long_name,
				 o->argh ? " " : "", o->argh ? o->argh : "");
		fprintf(f, "    %-24s %s\n", spell, o->help);
		if (o->kind == CLI_OPT_ENUM) {
			fprintf(f, "    %-24s one of:", "");
			for (const char *const *v = o->names; *v; v++)
				fprintf(f, " %s", *v);
			fputc('\n', f);
		}
	}
	fprintf(f, "    %-24s %s\n\nSee weightfs(1), COMMANDS.\n", "-h, --help", "print this help and exit");
}

void cli_opt_list(FILE *f, const struct cli_cmd *c)
{
	for (const struct cli_opt *o = c->opts; o->kind != CLI_OPT_END; o++) {
		if (o->short_name)
			fprintf(f, "-%c%s%s\n", o->short_name, o->argh ? " " : "", o->argh ? o->argh : "");
		if (o->long_name)
			fprintf(f, "--%s%s%s\n", o->long_name, o->argh ? " " : "", o->argh ? o->argh : "");
	}
	fputs("-h\n--help\n", f);
}

static void vusage_error(const struct cli_cmd *c, const char *fmt, va_list ap)
{
	fprintf(stderr, "weightfs %s: ", c->name);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (usage: weightfs %s ", c->name);
	cli_opt_usage(stderr, c);
	fputs(")\n", stderr);
}

int cli_usage_error(const struct cli_cmd *c, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vusage_error(c, fmt, ap);
	va_end(ap);
	return c->usage_exit;
}

/* ---------------------------------------------------------------- parsing */

/* How the user spelled the option, for messages: "--offset", "-o". */
static const char *spelled(const struct cli_opt *o, bool as_long, char *buf, size_t len)
{
	if (as_long)
		snprintf(buf, len, "--%s", o->long_name);
	else
		snprintf(buf, len, "-%c", o->short_name);
	return buf;
}

/* A decimal count: digits only, no sign or space (strtoull takes "-1"). */
static bool parse_uint(const char *s, uint64_t *v)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

/* Stores a value-taking option's value; returns 0 or the exit code after
 * the one line. */
static int take_value(const struct cli_cmd *c, const struct cli_opt *o, const char *name, char *arg, void *vals)
{
	char *field = (char *)vals + o->off;
	switch (o->kind) {
	case CLI_OPT_UINT: {
		uint64_t v;
		if (!parse_uint(arg, &v) || v < o->min || v > o->max) {
			if (o->min == 0 && o->max == UINT64_MAX)
				return cli_usage_error(c, "%s %s: not a %s", name, cli_path(arg), o->noun ? o->noun : "number");
			return cli_usage_error(c, "%s %s: not a %s from %" PRIu64 " to %" PRIu64, name, cli_path(arg),
					       o->noun ? o->noun : "number", o->min, o->max);
		}
		memcpy(field, &v, sizeof v);
		return 0;
	}
	case CLI_OPT_STRING:
		memcpy(field, &arg, sizeof arg);
		return 0;
	case CLI_OPT_ENUM:
		for (int k = 0; o->names[k]; k++) {
			if (strcmp(o->names[k], arg) == 0) {
				memcpy(field, &k, sizeof k);
				return 0;
			}
		}
		return cli_usage_error(c, "%s %s: not one of its values (weightfs %s -h lists them)", name, cli_path(arg),
				       c->name);
	case CLI_OPT_CALLBACK: {
		char msg[512] = "";
		int rc = o->cb(o, arg, vals, msg, sizeof msg);
		if (rc != 0 && msg[0]) {
			fprintf(stderr, "weightfs %s: %s (usage: weightfs %s ", c->name, msg, c->name);
			cli_opt_usage(stderr, c);
			fputs(")\n", stderr);
		}
		return rc;
	}
	default:
		return 0;
	}
}

static const struct cli_opt *find_long(const struct cli_cmd *c, const char *name, size_t n)
{
	for (const struct cli_opt *o = c->opts; o->kind != CLI_OPT_END; o++)
		if (o->long_name && strlen(o->long_name) == n && memcmp(o->long_name, name, n) == 0)
			return o;
	return NULL;
}

static const struct cli_opt *find_short(const struct cli_cmd *c, char s)
{
	for (const struct cli_opt *o = c->opts; o->kind != CLI_OPT_END; o++)
		if (o->short_name && o->short_name == s)
			return o;
	return NULL;
}

/* "--name", "--name=VALUE" or "--name VALUE" at argv[*i]. */
static int parse_long(const struct cli_cmd *c, int argc, char **argv, int *i, void *vals)
{
	char *a = argv[*i] + 2, *eq = strchr(a, '=');
	size_t n = eq ? (size_t)(eq - a) : strlen(a);
	char name[96];
	if (n == 4 && memcmp(a, "help", 4) == 0 && !eq) {
		cli_opt_help(stdout, c);
		return CLI_HELP;
	}
	const struct cli_opt *o = find_long(c, a, n);
	if (!o)
		return cli_usage_error(c, "%s: unknown option", cli_path(argv[*i]));
	spelled(o, true, name, sizeof name);
	if (o->kind == CLI_OPT_FLAG) {
		if (eq)
			return cli_usage_error(c, "%s: %s takes no value", cli_path(argv[*i]), name);
		*(bool *)((char *)vals + o->off) = true;
		return 0;
	}
	char *v = eq ? eq + 1 : *i + 1 < argc ? argv[++*i] : NULL;
	if (!v)
		return cli_usage_error(c, "%s: needs a value (%s)", name, o->argh ? o->argh : "VALUE");
	return take_value(c, o, name, v, vals);
}

/* "-x", "-xVALUE", "-x VALUE", or flags bundled: "-ab". */
static int parse_short(const struct cli_cmd *c, int argc, char **argv, int *i, void *vals)
{
	for (char *p = argv[*i] + 1; *p; p++) {
		char name[8];
		if (*p == 'h') {
			cli_opt_help(stdout, c);
			return CLI_HELP;
		}
		const struct cli_opt *o = find_short(c, *p);
		if (!o) {
			char one[3] = {'-', *p, 0};
			return p == argv[*i] + 1 && !p[1] ? cli_usage_error(c, "%s: unknown option", cli_path(argv[*i]))
							 : cli_usage_error(c, "%s: unknown option (in %s)", cli_path(one),
									   cli_path(argv[*i]));
		}
		spelled(o, false, name, sizeof name);
		if (o->kind == CLI_OPT_FLAG) {
			*(bool *)((char *)vals + o->off) = true;
			continue;
		}
		char *v = p[1] ? p + 1 : *i + 1 < argc ? argv[++*i] : NULL;
		if (!v)
			return cli_usage_error(c, "%s: needs a value (%s)", name, o->argh ? o->argh : "VALUE");
		return take_value(c, o, name, v, vals);
	}
	return 0;
}

int cli_parse(const struct cli_cmd *c, int argc, char **argv, void *vals, int *n_pos)
{
	bool dash_dash = false;
	int n = 0;
	for (int i = 2; i < argc; i++) {
		char *a = argv[i];
		int rc = 0;
		if (dash_dash || a[0] != '-' || a[1] == '\0') {
			if (c->max_pos >= 0 && n == c->max_pos)
				return cli_usage_error(c, "%s: one argument too many", cli_path(a));
			argv[2 + n++] = a; /* never past i: each argument is moved down or stays */
			continue;
		}
		if (strcmp(a, "--") == 0)
			dash_dash = true;
		else if (a[1] == '-')
			rc = parse_long(c, argc, argv, &i, vals);
		else
			rc = parse_short(c, argc, argv, &i, vals);
		if (rc != 0)
			return rc;
	}
	*n_pos = n;
	if (n < c->min_pos)
		return cli_usage_error(c, "%s", c->missing);
	return 0;
}
