/* cli_stats.c - weightfs stats: per-tensor statistics of the values a
 * mount of MODEL would show (docs/weightfs.1, COMMANDS). */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "cli/cli_look.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"
#include "view/wf_stats.h"

#include <errno.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct stats_opts {
	bool json;
	struct cli_o o;   /* -o: only dtype= changes the values */
	const char *model;
	char **sel;       /* the NAME|PREFIX arguments */
	int n_sel;
};

/* One selected tensor's outcome. */
struct row {
	size_t tensor;
	enum wf_err rc;
	struct wf_stats st;
	char *err;       /* the failure's line, when rc != WF_OK */
};

static bool selected(const struct wf_tensor *t, const struct stats_opts *o, bool *hit)
{
	bool any = o->n_sel == 0;
	for (int k = 0; k < o->n_sel; k++) {
		size_t n = strlen(o->sel[k]);
		if (n <= t->name_len && memcmp(t->name, o->sel[k], n) == 0) {
			hit[k] = true;
			any = true;
		}
	}
	return any;
}

/* The tensors the arguments select, in the model's order; an argument
 * that selects nothing is a usage error. */
static int select_rows(const struct cli_model *cm, const struct stats_opts *o, struct row **rows, size_t *n)
{
	bool *hit = calloc((size_t)o->n_sel + 1, sizeof *hit);
	*rows = calloc(cm->m->n_tensors + 1, sizeof **rows);
	*n = 0;
	if (!hit || !*rows) {
		free(hit);
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	for (size_t i = 0; i < cm->m->n_tensors; i++)
		if (selected(&cm->m->tensors[i], o, hit))
			(*rows)[(*n)++].tensor = i;
	int ret = 0;
	for (int k = 0; k < o->n_sel && !ret; k++) {
		if (!hit[k]) {
			char q[256];
			fprintf(stderr, "weightfs: %s: no tensor named %s or starting with it (weightfs ls lists "
				"them)\n", cli_path(cm->path), wf_quote(q, sizeof q, o->sel[k], strlen(o->sel[k])));
			ret = EXIT_USAGE;
		}
	}
	free(hit);
	return ret;
}

static void print_json(const struct cli_model *cm, const struct row *rows, size_t n, struct wf_buf *b)
{
	wf_buf_puts(b, "{\"tensors\": [");
	bool first = true;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct wf_tensor *t = &cm->m->tensors[r->tensor];
		if (r->rc != WF_OK)
			continue;
		wf_buf_puts(b, first ? "\n  {\"name\": " : ",\n  {\"name\": ");
		first = false;
		wf_buf_json_str(b, t->name, t->name_len);
		wf_buf_printf(b, ", \"type\": \"%s\", \"dtype\": \"%s\", \"shape\": ", wf_type_get(t->type)->name,
			      wf_view_dtype(t));
		wf_view_shape_json(t, b);
		wf_buf_printf(b, ", \"count\": %" PRIu64 ", \"min\": ", r->st.count);
		cli_json_num(b, r->st.min);
		wf_buf_puts(b, ", \"max\": ");
		cli_json_num(b, r->st.max);
		wf_buf_puts(b, ", \"mean\": ");
		cli_json_num(b, r->st.mean);
		wf_buf_puts(b, ", \"std\": ");
		cli_json_num(b, r->st.std);
		wf_buf_puts(b, ", \"absmax\": ");
		cli_json_num(b, r->st.absmax);
		wf_buf_printf(b, ", \"zeros\": %" PRIu64 ", \"nan\": %" PRIu64 ", \"inf\": %" PRIu64 "}", r->st.zeros,
			      r->st.nan, r->st.inf);
	}
	wf_buf_puts(b, first ? "], \"errors\": [" : "\n], \"errors\": [");
	first = true;
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct wf_tensor *t = &cm->m->tensors[r->tensor];
		if (r->rc == WF_OK)
			continue;
		wf_buf_puts(b, first ? "\n  {\"name\": " : ",\n  {\"name\": ");
		first = false;
		wf_buf_json_str(b, t->name, t->name_len);
		wf_buf_puts(b, ", \"error\": ");
		wf_buf_json_str(b, r->err, strlen(r->err));
		wf_buf_putc(b, '}');
	}
	wf_buf_puts(b, first ? "]}\n" : "\n]}\n");
}

/* The table's cells, added once to measure and once to print. */
static void text_cells(struct cli_table *tb, const struct cli_model *cm, const struct row *rows, size_t n)
{
	static const char *const head[] = {"NAME", "TYPE", "SHAPE", "COUNT", "MIN", "MAX", "MEAN", "STD",
					   "ABSMAX", "ZEROS", "NAN", "INF"};
	for (size_t k = 0; k < WF_ARRAY_LEN(head); k++)
		cli_table_cell(tb, "%s", head[k]);
	for (size_t i = 0; i < n; i++) {
		const struct row *r = &rows[i];
		const struct wf_tensor *t = &cm->m->tensors[r->tensor];
		if (r->rc != WF_OK)
			continue;
		struct wf_buf shape = {0};
		wf_view_shape_json(t, &shape);
		cli_table_name(tb, t->name, t->name_len);
		cli_table_cell(tb, "%s", wf_type_get(t->type)->name);
		cli_table_cell(tb, "%s", shape.oom ? "?" : shape.data);
		wf_buf_free(&shape);
		cli_table_cell(tb, "%" PRIu64, r->st.count);
		const double v[] = {r->st.min, r->st.max, r->st.mean, r->st.std, r->st.absmax};
		for (size_t k = 0; k < WF_ARRAY_LEN(v); k++)
			cli_table_num(tb, v[k]);
		cli_table_cell(tb, "%" PRIu64, r->st.zeros);
		cli_table_cell(tb, "%" PRIu64, r->st.nan);
		cli_table_cell(tb, "%" PRIu64, r->st.inf);
	}
}

/* In two passes, so that a row a tensor costs only its struct row (a kept
 * table of 12 cells a row doubled stats' peak over ls', issue 31). */
static bool print_text(const struct cli_model *cm, const struct row *rows, size_t n)
{
	struct cli_table tb;
	cli_table_init(&tb, 12, ~7u); /* numbers right-aligned */
	cli_table_two_pass(&tb);
	text_cells(&tb, cm, rows, n);
	bool ok = cli_table_two_pass_print(&tb);
	if (ok)
		text_cells(&tb, cm, rows, n);
	cli_table_free(&tb);
	return ok;
}

/* Computes every row; a model that changed or memory running out stops
 * the run, a tensor that has no statistics (no decoder, complex, stored
 * blocks) is noted and the run goes on. */
static int compute(struct cli_model *cm, struct row *rows, size_t n)
{
	struct cli_meter mt;
	uint64_t total = 0;
	for (size_t i = 0; i < n; i++)
		total += cm->m->tensors[rows[i].tensor].size;
	cli_meter_start(&mt, "stats", total);
	int ret = 0;
	for (size_t i = 0; i < n && !ret; i++) {
		char err[WF_ERRLEN];
		struct row *r = &rows[i];
		r->rc = wf_stats_tensor(&cm->lv, &cm->m->tensors[r->tensor], 0, &mt.done, &r->st, err);
		if (r->rc == WF_ERR_CHANGED || r->rc == WF_ERR_NOMEM) {
			cli_meter_stop(&mt);
			ret = cli_model_read_failed(cm, r->rc, err);
		} else if (r->rc != WF_OK && !(r->err = strdup(err))) {
			ret = EXIT_NOMEM;
		}
	}
	cli_meter_stop(&mt);
	return ret;
}

static int stats_main(const struct cli_cmd *c, int argc, char **argv)
{
	struct stats_opts o = {0};
	struct cli_model cm = {0};
	struct row *rows = NULL;
	size_t n = 0;
	int n_pos = 0, ret = cli_parse(c, argc, argv, &o, &n_pos);
	if (ret != 0)
		return ret == CLI_HELP ? 0 : ret;
	o.model = argv[2];
	o.sel = argv + 3;
	o.n_sel = n_pos - 1;
	if ((ret = cli_model_open(&cm, o.model, o.o.dtype)) != 0 || (ret = select_rows(&cm, &o, &rows, &n)) != 0 ||
	    (ret = compute(&cm, rows, n)) != 0)
		goto out;
	struct wf_buf b = {0};
	if (o.json)
		print_json(&cm, rows, n, &b);
	if (o.json ? (!b.oom && fwrite(b.data, 1, b.len, stdout) == b.len) : print_text(&cm, rows, n)) {
		for (size_t i = 0; i < n; i++) {
			if (rows[i].rc != WF_OK) {
				fprintf(stderr, "weightfs: %s: %s\n", cli_path(o.model), rows[i].err);
				ret = cli_exit_code(rows[i].rc);
			}
		}
	} else {
		ret = b.oom ? EXIT_NOMEM : EXIT_USAGE;
		fprintf(stderr, "weightfs: %s\n", b.oom ? "out of memory" : "stdout: cannot write");
	}
	wf_buf_free(&b);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		ret = EXIT_USAGE;
	}
out:
	for (size_t i = 0; rows && i < n; i++)
		free(rows[i].err);
	free(rows);
	cli_model_close(&cm);
	return ret;
}

static const struct cli_opt stats_opts[] = {
	CLI_FLAG(0, "json", offsetof(struct stats_opts, json), "print JSON: one object a tensor, and the errors"),
	{.kind = CLI_OPT_CALLBACK, .short_name = 'o', .argh = "dtype=T", .off = offsetof(struct stats_opts, o),
	 .cb = cli_o_list, .data = CLI_O_VIEWS, .help = "the values of the mount's -o dtype=T (npy, suffix and preview "
	 "taken, changing nothing)"},
	CLI_END,
};

const struct cli_cmd cli_cmd_stats = {
	.name = "stats", .args = "MODEL [NAME|PREFIX ...]", .min_pos = 1, .max_pos = -1, .missing = "MODEL is missing",
	.opts = stats_opts, .usage_exit = EXIT_USAGE, .run = stats_main,
	.summary = "Per-tensor statistics (count, min, max, mean, std, absmax, zeros, NaN, inf) of the values a "
		   "mount shows, of every tensor or those named or starting with a PREFIX.",
};
