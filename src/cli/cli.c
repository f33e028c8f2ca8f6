/* cli.c - the weightfs commands besides mounting: what a mount of MODEL
 * would show, without mounting it.
 *
 * One table names every command, its arguments and its options; dispatch,
 * argument checks, usage lines and -h all come from it.  Every command
 * opens MODEL exactly as the mount does (wf_mount_open) and reads through
 * the mount's one read path (wf_live_read), so its bytes are the bytes of
 * the mount's files and its messages and exit codes for a bad MODEL are
 * the mount's.  Part of the command-line program: it prints and picks
 * exit codes; the library never does. */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "view/wf_view.h"
#include "arch/wf_arch.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Options a command takes besides MODEL and its other arguments. */
enum {
	OPT_JSON = 1 << 0,    /* --json */
	OPT_FORCE = 1 << 1,   /* --force */
	OPT_RANGE = 1 << 2,   /* --offset N, --length N */
	OPT_DTYPE = 1 << 3,   /* -o dtype=T */
	OPT_GGUF = 1 << 7,    /* -o gguf=T */
	OPT_NPY = 1 << 4,     /* -o npy */
	OPT_O_IGNORED = 1 << 5, /* -o taken and ignored: the output is the same under every option (but those
				 * the command also names: info's gguf=) */
	OPT_PREVIEW = 1 << 6, /* -o preview */
};

static const struct cli_cmd {
	const char *name;
	const char *args;     /* its usage line after the name */
	int n_pos;            /* MODEL, then TENSOR or OUT */
	unsigned opts;
	int (*run)(struct cli_session *s, const struct cli_opts *o);
	int (*main)(int argc, char **argv); /* a command that parses its own arguments */
} commands[] = {
	{"ls", "[--json] [-o dtype=T,npy] MODEL", 1, OPT_JSON | OPT_DTYPE | OPT_NPY, cli_ls, NULL},
	{"info", "[--json] [-o gguf=T] MODEL", 1, OPT_JSON | OPT_O_IGNORED | OPT_GGUF, cli_info, NULL},
	{"cat", "[--offset N] [--length N] [--force] [-o dtype=T,npy,preview] MODEL TENSOR", 2,
	 OPT_RANGE | OPT_FORCE | OPT_DTYPE | OPT_NPY | OPT_PREVIEW, cli_cat, NULL},
	{"convert", "[--force] [-o dtype=T,gguf=T] MODEL OUT.safetensors|OUT.gguf", 2, OPT_FORCE | OPT_DTYPE | OPT_GGUF,
	 cli_convert, NULL},
	{"stats", "[--json] [-o dtype=T] MODEL [NAME|PREFIX ...]", 0, 0, NULL, cli_stats},
	{"diff", "[--json] A B", 0, 0, NULL, cli_diff},
	{"verify", "[--json] [--write FILE] [--against FILE] MODEL", 0, 0, NULL, cli_verify},
};

static const struct cli_cmd *cmd_of(const char *name)
{
	for (size_t i = 0; name && i < WF_ARRAY_LEN(commands); i++)
		if (strcmp(name, commands[i].name) == 0)
			return &commands[i];
	return NULL;
}

bool cli_is_command(const char *arg)
{
	return cmd_of(arg) != NULL;
}

void cli_usage(FILE *f, const char *prog)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(commands); i++)
		fprintf(f, "       %s %s %s\n", prog, commands[i].name, commands[i].args);
}

void cli_command_names(FILE *f)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(commands); i++)
		fprintf(f, "%s%s", i ? ", " : "", commands[i].name);
}

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

int cli_usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "weightfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (usage: weightfs %s %s)\n", cmd, cmd_of(cmd)->args);
	return EXIT_USAGE;
}

/* A decimal count of bytes: digits only, no sign (strtoull takes "-1"). */
static bool parse_u64(const char *s, uint64_t *v)
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

/* -o's list: the mount's options that change what the files hold. */
static int parse_o(struct cli_opts *o, const char *list)
{
	char *copy = strdup(list);
	if (!copy)
		return EXIT_NOMEM;
	int ret = 0;
	char *save = NULL;
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		if (strncmp(opt, "dtype=", 6) == 0) {
			if (o->dtype && strcmp(o->dtype, opt + 6) != 0) {
				ret = cli_usage_error(o->cmd, "-o dtype=%s and dtype=%s contradict each other", o->dtype,
						  opt + 6);
				break;
			}
			free(o->dtype);
			if (!(o->dtype = strdup(opt + 6))) {
				ret = EXIT_NOMEM;
				break;
			}
		} else if (strncmp(opt, "gguf=", 5) == 0 && (cmd_of(o->cmd)->opts & OPT_GGUF)) {
			uint32_t ft;
			if (!wf_arch_parse_ftype(opt + 5, &ft) || (o->gguf && strcmp(o->gguf, opt + 5) != 0)) {
				char q[WF_QPATH];
				ret = cli_usage_error(o->cmd, "-o gguf=%s: not a type model.gguf is made in (auto, f32, f16, bf16, or a llama-quantize type: q8_0, q4_k_m, ...)%s",
						  wf_quote_path(q, sizeof q, opt + 5), o->gguf ? ", or it contradicts another" : "");
				break;
			}
			free(o->gguf);
			if (!(o->gguf = strdup(opt + 5))) {
				ret = EXIT_NOMEM;
				break;
			}
		} else if (strcmp(opt, "npy") == 0 && (cmd_of(o->cmd)->opts & OPT_NPY)) {
			o->npy = true;
		} else if (strcmp(opt, "preview") == 0 && (cmd_of(o->cmd)->opts & OPT_PREVIEW)) {
			o->preview = true;
		} else if (cmd_of(o->cmd)->opts & OPT_O_IGNORED) {
			continue; /* a mount's option: the output does not depend on it */
		} else {
			ret = cli_usage_error(o->cmd, "-o %s: not an option of this command", opt);
			break;
		}
	}
	free(copy);
	return ret;
}

/* An option's value: "--offset=N" or "--offset N". */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int parse_args(int argc, char **argv, struct cli_opts *o, const struct cli_cmd *c)
{
	const char *cmd = o->cmd;
	bool dash_dash = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v;
		int rc;
		if (dash_dash || a[0] != '-' || a[1] == '\0') {
			if (o->n_pos == c->n_pos)
				return cli_usage_error(cmd, "%s: one argument too many", a);
			o->pos[o->n_pos++] = a;
		} else if (strcmp(a, "--") == 0) {
			dash_dash = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			printf("usage: weightfs %s %s\nSee weightfs(1), COMMANDS.\n", c->name, c->args);
			return -1;
		} else if (strcmp(a, "--json") == 0 && (c->opts & OPT_JSON)) {
			o->json = true;
		} else if (strcmp(a, "--force") == 0 && (c->opts & OPT_FORCE)) {
			o->force = true;
		} else if (strcmp(a, "-o") == 0 || (a[1] == 'o' && a[2])) {
			const char *list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!list)
				return cli_usage_error(cmd, "%s: needs a value", a);
			if ((c->opts & OPT_O_IGNORED) && !(c->opts & OPT_GGUF))
				continue;
			if ((rc = parse_o(o, list)) != 0)
				return rc;
		} else if ((c->opts & OPT_RANGE) && (v = opt_value(argc, argv, &i, "--offset"))) {
			if (!parse_u64(v, &o->offset))
				return cli_usage_error(cmd, "--offset %s: not a byte count", v);
		} else if ((c->opts & OPT_RANGE) && (v = opt_value(argc, argv, &i, "--length"))) {
			if (!parse_u64(v, &o->length))
				return cli_usage_error(cmd, "--length %s: not a byte count", v);
			o->have_length = true;
		} else {
			return cli_usage_error(cmd, "%s: unknown option", cli_path(a));
		}
	}
	if (o->n_pos < c->n_pos)
		return cli_usage_error(cmd, "%s", c->n_pos == 1 ? "MODEL is missing" :
				       strcmp(cmd, "cat") == 0 ? "MODEL and TENSOR are needed" : "MODEL and OUT are needed");
	return 0;
}

int cli_dtype(const char *dtype, enum wf_vk *want)
{
	*want = WF_VK_F32;
	if (dtype && !wf_view_parse(dtype, want)) {
		fprintf(stderr, "weightfs: -o dtype=%s: unknown output type (f32, f16, bf16 or stored)\n",
			cli_path(dtype));
		return EXIT_USAGE;
	}
	return 0;
}

int cli_open(struct wf_mount *mt, const char *model, const char *dtype, const struct wf_tree_opts *opts)
{
	char err[WF_ERRLEN];
	enum wf_vk want;
	memset(mt, 0, sizeof *mt);
	if (cli_dtype(dtype, &want) != 0)
		return EXIT_USAGE;
	enum wf_err rc = wf_mount_open(mt, model, want, opts, err);
	if (rc != WF_OK) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(model), err);
		return cli_exit_code(rc);
	}
	return 0;
}

static int open_session(const struct cli_opts *o, struct cli_session *s)
{
	memset(s, 0, sizeof *s);
	uint32_t ft = WF_FTYPE_AUTO;
	if (o->gguf)
		wf_arch_parse_ftype(o->gguf, &ft);
	int ret = cli_open(&s->mt, o->pos[0], o->dtype,
			   &(struct wf_tree_opts){.npy = o->npy, .preview = o->preview, .gguf_set = o->gguf != NULL, .gguf = ft});
	if (ret != 0)
		return ret;
	if (wf_live_init(&s->lv, s->mt.m, wf_files_seg, s->mt.t, cli_notice, NULL) != WF_OK) {
		fprintf(stderr, "weightfs: %s: out of memory\n", cli_path(o->pos[0]));
		return EXIT_NOMEM;
	}
	s->live = true;
	return 0;
}

static void close_session(struct cli_session *s)
{
	if (s->live)
		wf_live_free(&s->lv);
	wf_mount_close(&s->mt);
}

int cli_main(int argc, char **argv)
{
	const struct cli_cmd *c = cmd_of(argv[1]);
	if (c->main)
		return c->main(argc, argv);
	struct cli_opts o = {.cmd = argv[1]};
	struct cli_session s = {0};
	int ret = parse_args(argc, argv, &o, c);
	if (ret != 0) {
		ret = ret < 0 ? 0 : ret; /* -1: --help printed */
		goto out;
	}
	if ((ret = open_session(&o, &s)) == 0)
		ret = c->run(&s, &o);
out:
	close_session(&s);
	free(o.dtype);
	free(o.gguf);
	return ret;
}
