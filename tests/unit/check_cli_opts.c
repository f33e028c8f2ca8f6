/* check_cli_opts.c - unit tests for the commands' option parser
 * (cli_opt.c) on argv arrays: every kind of option, "--", "--opt=value"
 * and "--opt value", bundled short flags, the arguments moved to the
 * front, and each usage error one line naming the command and the option,
 * with the command's exit code; usage and -h made from the table. */
#include <check.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli/cli_opt.h"

struct vals {
	bool json, all, quiet;
	uint64_t count;
	const char *file;
	int color;
	char seen[64];
	int calls;
};

static const char *const colors[] = {"never", "auto", "always", NULL};

/* A callback that keeps what it was given and refuses "bad". */
static int keep(const struct cli_opt *opt, char *arg, void *v, char *msg, size_t len)
{
	struct vals *vals = v;
	if (strcmp(arg, "bad") == 0) {
		snprintf(msg, len, "-%c %s: refused (data %u)", opt->short_name, arg, opt->data);
		return 7;
	}
	snprintf(vals->seen, sizeof vals->seen, "%s", arg);
	vals->calls++;
	return 0;
}

static const struct cli_opt opts[] = {
	CLI_FLAG(0, "json", offsetof(struct vals, json), "print JSON"),
	CLI_FLAG('a', "all", offsetof(struct vals, all), "everything"),
	CLI_FLAG('q', NULL, offsetof(struct vals, quiet), "say less"),
	{.kind = CLI_OPT_UINT, .short_name = 'n', .long_name = "count", .argh = "N", .off = offsetof(struct vals, count),
	 .min = 1, .max = 100, .help = "how many"},
	CLI_STRING(0, "write", "FILE", offsetof(struct vals, file), "where to"),
	{.kind = CLI_OPT_ENUM, .long_name = "color", .argh = "WHEN", .off = offsetof(struct vals, color), .names = colors,
	 .help = "when to color"},
	{.kind = CLI_OPT_CALLBACK, .short_name = 'o', .argh = "LIST", .cb = keep, .data = 42, .help = "a list"},
	CLI_END,
};

static int never_run(const struct cli_cmd *c, int argc, char **argv)
{
	(void)c, (void)argc, (void)argv;
	return 99;
}

static const struct cli_cmd cmd = {
	.name = "try", .args = "MODEL [MORE ...]", .min_pos = 1, .max_pos = 3, .missing = "MODEL is missing",
	.opts = opts, .usage_exit = 2, .summary = "A command for the tests.", .run = never_run,
};

static char out_text[4096], err_text[4096];
static struct vals v;
static char *av[32];
static int n_pos;

/* Runs cli_parse on "weightfs try ARGS..." (NULL-terminated), stdout and
 * stderr caught into out_text and err_text. */
static int parse(const char *first, ...)
{
	static char store[32][128] = {"weightfs", "try"};
	int ac = 0;
	av[ac] = store[ac];
	ac++;
	av[ac] = store[ac];
	ac++;
	va_list ap;
	va_start(ap, first);
	for (const char *a = first; a; a = va_arg(ap, const char *)) {
		snprintf(store[ac], sizeof store[ac], "%s", a); /* argv's strings are writable */
		av[ac] = store[ac];
		ac++;
	}
	va_end(ap);
	memset(&v, 0, sizeof v);
	n_pos = -1;
	fflush(stdout);
	fflush(stderr);
	FILE *fo = tmpfile(), *fe = tmpfile();
	ck_assert_ptr_nonnull(fo);
	ck_assert_ptr_nonnull(fe);
	int so = dup(1), se = dup(2);
	dup2(fileno(fo), 1);
	dup2(fileno(fe), 2);
	int rc = cli_parse(&cmd, ac, av, &v, &n_pos);
	fflush(stdout);
	fflush(stderr);
	dup2(so, 1);
	dup2(se, 2);
	close(so);
	close(se);
	size_t n;
	rewind(fo);
	n = fread(out_text, 1, sizeof out_text - 1, fo);
	out_text[n] = 0;
	rewind(fe);
	n = fread(err_text, 1, sizeof err_text - 1, fe);
	err_text[n] = 0;
	fclose(fo);
	fclose(fe);
	return rc;
}

static int lines(const char *s)
{
	int n = 0;
	for (; *s; s++)
		n += *s == '\n';
	return n;
}

/* A usage error: the command's code, one line on stderr that names the
 * command and holds `what`, and the usage line made from the table. */
static void usage_error(int rc, int want, const char *what)
{
	ck_assert_int_eq(rc, want);
	ck_assert_int_eq(lines(err_text), 1);
	ck_assert_msg(strncmp(err_text, "weightfs try: ", 14) == 0, "%s", err_text);
	ck_assert_msg(strstr(err_text, what) != NULL, "%s lacks %s", err_text, what);
	ck_assert_msg(strstr(err_text, "(usage: weightfs try [--json] [--all] [-q] [--count N] [--write FILE] "
				       "[--color WHEN] [-o LIST] MODEL [MORE ...])") != NULL, "%s", err_text);
	ck_assert_str_eq(out_text, "");
}

START_TEST(every_kind)
{
	ck_assert_int_eq(parse("--json", "m.gguf", "-a", "--count", "12", "--write=out.json", "--color", "always",
			       "-o", "x=1,y", "b", NULL), 0);
	ck_assert(v.json && v.all && !v.quiet);
	ck_assert_uint_eq(v.count, 12);
	ck_assert_str_eq(v.file, "out.json");
	ck_assert_int_eq(v.color, 2);
	ck_assert_str_eq(v.seen, "x=1,y");
	ck_assert_int_eq(n_pos, 2);
	ck_assert_str_eq(av[2], "m.gguf");
	ck_assert_str_eq(av[3], "b");
	ck_assert_str_eq(err_text, "");
	/* the other spellings of the same */
	ck_assert_int_eq(parse("--count=100", "--write", "w", "--color=never", "-oLIST", "-n1", "m", NULL), 0);
	ck_assert_uint_eq(v.count, 1); /* the last one given wins */
	ck_assert_str_eq(v.file, "w");
	ck_assert_int_eq(v.color, 0);
	ck_assert_str_eq(v.seen, "LIST");
	ck_assert_int_eq(parse("-n", "7", "m", "-o", "a", "-o", "b", NULL), 0);
	ck_assert_uint_eq(v.count, 7);
	ck_assert_int_eq(v.calls, 2);
}
END_TEST

START_TEST(bundled_short_flags)
{
	ck_assert_int_eq(parse("-aq", "m", NULL), 0);
	ck_assert(v.all && v.quiet);
	/* a value-taking option ends the bundle with the rest of it, or the next word */
	ck_assert_int_eq(parse("-qn5", "m", NULL), 0);
	ck_assert(v.quiet);
	ck_assert_uint_eq(v.count, 5);
	ck_assert_int_eq(parse("-aqo", "v", "m", NULL), 0);
	ck_assert_str_eq(v.seen, "v");
	usage_error(parse("-aZ", "m", NULL), 2, "-Z: unknown option (in -aZ)");
}
END_TEST

START_TEST(dash_dash_ends_options)
{
	ck_assert_int_eq(parse("--json", "--", "--all", "-", "-q", NULL), 0);
	ck_assert(v.json && !v.all && !v.quiet);
	ck_assert_int_eq(n_pos, 3);
	ck_assert_str_eq(av[2], "--all");
	ck_assert_str_eq(av[3], "-");
	ck_assert_str_eq(av[4], "-q");
	/* "-" alone is an argument anywhere */
	ck_assert_int_eq(parse("-", "--all", NULL), 0);
	ck_assert_int_eq(n_pos, 1);
	ck_assert_str_eq(av[2], "-");
	ck_assert(v.all);
}
END_TEST

START_TEST(errors)
{
	usage_error(parse("--bogus", "m", NULL), 2, "--bogus: unknown option");
	usage_error(parse("-x", "m", NULL), 2, "-x: unknown option");
	usage_error(parse("m", "--count", NULL), 2, "--count: needs a value (N)");
	usage_error(parse("m", "--write", NULL), 2, "--write: needs a value (FILE)");
	usage_error(parse("m", "-o", NULL), 2, "-o: needs a value (LIST)");
	usage_error(parse("--count", "0", "m", NULL), 2, "--count 0: not a number from 1 to 100");
	usage_error(parse("--count=101", "m", NULL), 2, "--count 101: not a number from 1 to 100");
	usage_error(parse("--count", "-1", "m", NULL), 2, "--count -1: not a number");
	usage_error(parse("-n", "1x", "m", NULL), 2, "-n 1x: not a number");
	usage_error(parse("--count", "99999999999999999999999", "m", NULL), 2, "not a number");
	usage_error(parse("--color", "blue", "m", NULL), 2, "--color blue: not one of its values");
	usage_error(parse("--json=yes", "m", NULL), 2, "--json=yes: --json takes no value");
	usage_error(parse("-o", "bad", "m", NULL), 7, "-o bad: refused (data 42)");
	usage_error(parse(NULL), 2, "MODEL is missing");
	usage_error(parse("a", "b", "c", "d", NULL), 2, "d: one argument too many");
	/* a name with a terminal's escape is shown escaped */
	usage_error(parse("--x\x1by", "m", NULL), 2, "'--x\\x1by': unknown option");
	/* no abbreviations: an option is spelled whole */
	usage_error(parse("--jso", "m", NULL), 2, "--jso: unknown option");
}
END_TEST

START_TEST(help_from_the_table)
{
	for (int k = 0; k < 3; k++) {
		int rc = k == 0 ? parse("-h", NULL) : k == 1 ? parse("--help", NULL) : parse("m", "--json", "-h", NULL);
		ck_assert_int_eq(rc, CLI_HELP);
		ck_assert_str_eq(err_text, "");
		static const char head[] = "usage: weightfs try [--json] [--all] [-q] [--count N] [--write FILE] "
					   "[--color WHEN] [-o LIST] MODEL [MORE ...]\n\nA command for the tests.\n";
		ck_assert_msg(strncmp(out_text, head, sizeof head - 1) == 0, "%s", out_text);
		/* each option's spellings and help, the enum's values */
		const char *want[] = {"--json ", "print JSON", "-a, --all", "everything", "-q ", "say less",
				      "-n, --count N", "how many", "--write FILE", "where to", "--color WHEN",
				      "one of: never auto always", "-o LIST", "a list", "-h, --help"};
		for (size_t i = 0; i < sizeof want / sizeof *want; i++)
			ck_assert_msg(strstr(out_text, want[i]) != NULL, "help lacks %s:\n%s", want[i], out_text);
	}
}
END_TEST

START_TEST(list_options)
{
	char buf[1024] = "";
	FILE *f = fmemopen(buf, sizeof buf, "w");
	ck_assert_ptr_nonnull(f);
	cli_opt_list(f, &cmd);
	fclose(f);
	ck_assert_str_eq(buf, "--json\n-a\n--all\n-q\n-n N\n--count N\n--write FILE\n--color WHEN\n-o LIST\n-h\n--help\n");
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_opt");
	TCase *tc = tcase_create("parse");
	tcase_add_test(tc, every_kind);
	tcase_add_test(tc, bundled_short_flags);
	tcase_add_test(tc, dash_dash_ends_options);
	tcase_add_test(tc, errors);
	tcase_add_test(tc, help_from_the_table);
	tcase_add_test(tc, list_options);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
