/* cli_show.c - weightfs ls, info and cat: a mount's listing, metadata and
 * file bytes without mounting. */
#include "cli/cli.h"
#include "model/wf_meta.h"
#include "cli/cli_int.h"
#include "cli/cli_look.h"
#include "base/wf_buf.h"
#include "view/wf_gguf_file.h"
#include "view/wf_view.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void pad(size_t have, size_t want)
{
	for (; have < want; have++)
		putchar(' ');
}

static int ls(struct cli_session *s, const struct cli_opts *o)
{
	if (o->json)
		return cli_dump_root_file(s, o->pos[0], "tensors.json");
	const struct wf_model *m = s->mt.m;
	struct wf_buf text = {0};
	size_t *at = calloc(m->n_tensors * 5 + 1, sizeof *at); /* per tensor: name, shape, their widths, size */
	size_t w[5] = {4, 4, 5, 5, 4}; /* NAME TYPE DTYPE SHAPE SIZE */
	int ret = 0;
	if (!at)
		goto oom;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		size_t *r = at + 5 * i, cols;
		r[0] = text.len;
		cols = cli_display(&text, tn->name, tn->name_len, 0);
		wf_buf_putc(&text, '\0');
		r[2] = cols;
		r[1] = text.len;
		size_t start = text.len;
		wf_view_shape_json(tn, &text);
		r[3] = text.len - start;
		wf_buf_putc(&text, '\0');
		char num[24];
		r[4] = (size_t)snprintf(num, sizeof num, "%" PRIu64, tn->size);
		const size_t widths[5] = {r[2], strlen(wf_type_get(tn->type)->name), strlen(wf_view_dtype(tn)),
					   r[3], r[4]};
		for (int k = 0; k < 5; k++)
			if (widths[k] > w[k])
				w[k] = widths[k];
	}
	if (text.oom)
		goto oom;
	/* a header for people; scripts reading a pipe get the lines alone */
	if (isatty(STDOUT_FILENO)) {
		printf("NAME");
		pad(4, w[0]);
		printf("  %-*s  %-*s  %-*s  %*s\n", (int)w[1], "TYPE", (int)w[2], "DTYPE", (int)w[3], "SHAPE",
		       (int)w[4], "SIZE");
	}
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		const size_t *r = at + 5 * i;
		fputs(text.data + r[0], stdout);
		pad(r[2], w[0]);
		printf("  %-*s  %-*s  %-*s  %*" PRIu64 "\n", (int)w[1], wf_type_get(tn->type)->name, (int)w[2],
		       wf_view_dtype(tn), (int)w[3], text.data + r[1], (int)w[4], tn->size);
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		ret = EXIT_USAGE;
	}
	goto out;
oom:
	fprintf(stderr, "weightfs: out of memory\n");
	ret = EXIT_NOMEM;
out:
	free(at);
	wf_buf_free(&text);
	return ret;
}

/* The last line of `info`: what model.gguf is, or why there is none (the
 * line WEIGHTFS.txt has), for the models that have or could have one. */
static void info_gguf(const struct wf_tree *t, struct wf_buf *line)
{
	line->len = 0;
	if (t->gguf && t->gguf->plan.from_gguf)
		wf_buf_printf(line, "\nmodel.gguf: this model retyped to %s (as llama-quantize --allow-requantize)\n",
			      t->gguf->plan.arch);
	else if (t->gguf && t->gguf->plan.generic)
		wf_buf_puts(line, "\nmodel.gguf: every tensor as stored; llama.cpp cannot run it: ");
	else if (t->gguf)
		wf_buf_printf(line, "\nmodel.gguf: %s, %s, as convert_hf_to_gguf.py writes it\n", t->gguf->plan.arch,
			      wf_ftype_name(t->gguf->plan.ftype));
	else if (t->gguf_why)
		wf_buf_puts(line, "\nmodel.gguf: none: ");
	const char *why = t->gguf && t->gguf->plan.generic ? t->gguf->plan.why_generic : !t->gguf ? t->gguf_why : NULL;
	if (why) {
		cli_display(line, why, strlen(why), 300);
		wf_buf_putc(line, '\n');
	}
	if (!line->oom && line->len)
		fwrite(line->data, 1, line->len, stdout);
}

static int info(struct cli_session *s, const struct cli_opts *o)
{
	if (o->json)
		return cli_dump_root_file(s, o->pos[0], "metadata.json");
	const struct wf_tree *t = s->mt.t;
	size_t kw = 0;
	if (t->n_meta == 0) {
		/* on a terminal, a word rather than nothing; a pipe gets no lines */
		if (isatty(STDOUT_FILENO))
			printf("%s: no metadata\n", o->pos[0]);
		struct wf_buf g = {0};
		info_gguf(t, &g);
		wf_buf_free(&g);
		return 0;
	}
	struct wf_buf line = {0};
	/* 100 columns show at most 404 bytes: more than that is cut alike */
	char shown[512];
	for (size_t i = 0; i < t->n_meta; i++) {
		size_t cols;
		line.len = 0;
		cols = cli_display(&line, t->meta[i].name, t->meta[i].name_len, 48);
		if (cols > kw)
			kw = cols;
	}
	for (size_t i = 0; i < t->n_meta && !line.oom; i++) {
		const struct wf_meta_file *f = &t->meta[i];
		size_t cols;
		line.len = 0;
		cols = cli_display(&line, f->name, f->name_len, 48);
		for (; cols < kw; cols++)
			wf_buf_putc(&line, ' ');
		wf_buf_puts(&line, "  ");
		const char *v = f->data;
		size_t vn = f->len;
		if (!v) { /* a GGUF's, made from the file (wf_meta.h): what 100 columns can show */
			vn = vn < sizeof shown ? vn : sizeof shown;
			v = wf_meta_gguf_value(t->m, i, 0, vn, shown, NULL) == WF_OK ? shown : "";
			vn = v == shown ? vn : 0;
		}
		cli_display(&line, v, vn, 100);
		if (f->len > 100)
			wf_buf_printf(&line, " (%zu bytes)", f->len);
		wf_buf_putc(&line, '\n');
		if (!line.oom)
			fwrite(line.data, 1, line.len, stdout);
	}
	if (!line.oom)
		info_gguf(t, &line);
	bool oom = line.oom;
	wf_buf_free(&line);
	if (oom) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* TENSOR as the model names it, or as its path in the mount. */
static uint32_t find_tensor(const struct cli_session *s, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < s->mt.m->n_tensors; i++)
		if (s->mt.m->tensors[i].name_len == n && memcmp(s->mt.m->tensors[i].name, name, n) == 0)
			return s->mt.t->tensor_node[i];
	uint32_t node = 0;
	for (const char *p = name; *p && node != WF_NO_NODE;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len)
			node = wf_tree_lookup(s->mt.t, node, p, len);
		p += len + (slash != NULL);
	}
	if (node != WF_NO_NODE && (s->mt.t->nodes[node].kind == WF_NODE_TENSOR ||
				   s->mt.t->nodes[node].kind == WF_NODE_PREVIEW))
		return node;
	/* -o preview: NAME.png, NAME a tensor's name */
	if (s->mt.t->preview_node && n > 4 && strcmp(name + n - 4, ".png") == 0)
		for (size_t i = 0; i < s->mt.m->n_tensors; i++)
			if (s->mt.m->tensors[i].name_len == n - 4 && memcmp(s->mt.m->tensors[i].name, name, n - 4) == 0)
				return s->mt.t->preview_node[i];
	return WF_NO_NODE;
}

static int cat(struct cli_session *s, const struct cli_opts *o)
{
	uint32_t node = find_tensor(s, o->pos[1]);
	if (node == WF_NO_NODE) {
		char q[256];
		fprintf(stderr, "weightfs: %s: no tensor %s (give its name, or its path in a mount: weightfs ls "
			"--json lists both)\n", cli_path(o->pos[0]), wf_quote(q, sizeof q, o->pos[1], strlen(o->pos[1])));
		return EXIT_USAGE;
	}
	/* as gzip does: binary numbers would garble the terminal */
	if (isatty(STDOUT_FILENO) && !o->force) {
		fprintf(stderr, "weightfs cat: refusing to write binary data to a terminal: pipe it (| od -A d -t f4 "
			"| head) or redirect it, or give --force\n");
		return EXIT_USAGE;
	}
	if (wf_live_catch_sigbus() != 0) {
		fprintf(stderr, "weightfs: sigaction: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	return cli_dump_node(s, o->pos[0], o->pos[1], node, o->offset, o->length);
}

/* ---------------------------------------------------------------- the commands' tables */

#define JSON_OPT(what) CLI_FLAG(0, "json", offsetof(struct cli_opts, json), what)
#define O_OPT(arg, takes) \
	{.kind = CLI_OPT_CALLBACK, .short_name = 'o', .argh = (arg), .off = offsetof(struct cli_opts, o), \
	 .cb = cli_o_list, .data = (takes), .help = "the mount's options that change what the files hold (weightfs(1))"}

static int ls_main(const struct cli_cmd *c, int argc, char **argv)
{
	return cli_session_main(c, argc, argv, ls);
}

static int info_main(const struct cli_cmd *c, int argc, char **argv)
{
	return cli_session_main(c, argc, argv, info);
}

static int cat_main(const struct cli_cmd *c, int argc, char **argv)
{
	return cli_session_main(c, argc, argv, cat);
}

static const struct cli_opt ls_opts[] = {
	JSON_OPT("print tensors.json as the mount shows it"),
	O_OPT("dtype=T,npy", CLI_O_NPY),
	CLI_END,
};

const struct cli_cmd cli_cmd_ls = {
	.name = "ls", .args = "MODEL", .min_pos = 1, .max_pos = 1, .missing = "MODEL is missing", .opts = ls_opts,
	.usage_exit = EXIT_USAGE, .run = ls_main,
	.summary = "Lists MODEL's tensors: name, type, dtype, shape and size of each file a mount shows.",
};

static const struct cli_opt info_opts[] = {
	JSON_OPT("print metadata.json as the mount shows it"),
	O_OPT("gguf=T", CLI_O_GGUF | CLI_O_ANY),
	CLI_END,
};

const struct cli_cmd cli_cmd_info = {
	.name = "info", .args = "MODEL", .min_pos = 1, .max_pos = 1, .missing = "MODEL is missing",
	.opts = info_opts, .usage_exit = EXIT_USAGE, .run = info_main,
	.summary = "Shows MODEL's format, parts, metadata and what its model.gguf would be.",
};

static const struct cli_opt cat_opts[] = {
	{.kind = CLI_OPT_UINT, .long_name = "offset", .argh = "N", .off = offsetof(struct cli_opts, offset),
	 .max = UINT64_MAX, .noun = "byte count", .help = "start N bytes into the file"},
	{.kind = CLI_OPT_UINT, .long_name = "length", .argh = "N", .off = offsetof(struct cli_opts, length),
	 .max = UINT64_MAX, .noun = "byte count", .help = "write at most N bytes"},
	CLI_FLAG(0, "force", offsetof(struct cli_opts, force), "write to a terminal too"),
	O_OPT("dtype=T,npy,preview", CLI_O_NPY | CLI_O_PREVIEW),
	CLI_END,
};

const struct cli_cmd cli_cmd_cat = {
	.name = "cat", .args = "MODEL TENSOR", .min_pos = 2, .max_pos = 2, .missing = "MODEL and TENSOR are needed",
	.opts = cat_opts, .usage_exit = EXIT_USAGE, .run = cat_main,
	.summary = "Writes the bytes of TENSOR's file (its name, or its path in a mount) to stdout.",
};
