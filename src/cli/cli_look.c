/* cli_look.c - shared by stats and diff (cli_look.h). */
#include "cli/cli_look.h"
#include "net/wf_source.h"
#include "cli/cli.h"
#include "model/wf_set.h"
#include "view/wf_view.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

int cli_model_open(struct cli_model *cm, const char *path, const char *dtype)
{
	char err[WF_ERRLEN];
	enum wf_vk out;
	memset(cm, 0, sizeof *cm);
	cm->path = path;
	if (cli_dtype(dtype, &out) != 0)
		return EXIT_USAGE;
	if (wf_live_catch_sigbus() != 0) {
		fprintf(stderr, "weightfs: sigaction: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	/* hf:// and https://: staged as cli_open does (net/wf_source.h) */
	char *staged = NULL;
	enum wf_err rc = wf_source_is_remote(path) ? wf_source_stage(path, &staged, err) : WF_OK;
	if (rc == WF_OK)
		rc = wf_set_open(&cm->m, staged ? staged : path, err);
	free(staged);
	if (rc == WF_OK)
		rc = wf_model_set_view(cm->m, out, err);
	if (rc != WF_OK) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(path), err);
		return cli_exit_code(rc);
	}
	if (wf_live_init(&cm->lv, cm->m, NULL, NULL, NULL, NULL) != WF_OK) {
		fprintf(stderr, "weightfs: %s: out of memory\n", cli_path(path));
		return EXIT_NOMEM;
	}
	cm->live = true;
	return 0;
}

void cli_model_close(struct cli_model *cm)
{
	if (cm->live)
		wf_live_free(&cm->lv);
	wf_model_free(cm->m);
	memset(cm, 0, sizeof *cm);
}

int cli_model_read_failed(const struct cli_model *cm, enum wf_err rc, const char *msg)
{
	char why[WF_ERRLEN] = "";
	if (rc == WF_ERR_CHANGED) {
		for (uint32_t p = 0; p < cm->m->n_parts; p++) {
			if (wf_model_check(cm->m, p, why) != WF_OK) {
				fprintf(stderr, "weightfs: %s: %s%s%s changed since it was opened\n", cli_path(cm->path),
					cm->m->n_parts > 1 ? cli_path(cm->m->parts[p].name) : "",
					cm->m->n_parts > 1 ? ": " : "", why);
				return cli_exit_code(rc);
			}
		}
	}
	fprintf(stderr, "weightfs: %s: %s\n", cli_path(cm->path), msg);
	return cli_exit_code(rc);
}

size_t cli_display(struct wf_buf *b, const char *s, size_t n, size_t max)
{
	size_t c = 0;
	for (size_t i = 0; i < n;) {
		if (max && c >= max) {
			wf_buf_puts(b, "...");
			c += 3;
			break;
		}
		const uint8_t *u = (const uint8_t *)s + i;
		size_t k = *u >= 0x80 ? wf_printable_seq(u, n - i) : 1;
		if (k > 1) {
			wf_buf_put(b, u, k);
			c++;
			i += k;
			continue;
		}
		if (*u == '\n') {
			wf_buf_puts(b, "\\n");
			c += 2;
		} else if (*u == '\\') {
			wf_buf_puts(b, "\\\\");
			c += 2;
		} else if (*u < 0x20 || *u >= 0x7f) {
			wf_buf_printf(b, "\\x%02X", *u);
			c += 4;
		} else {
			wf_buf_putc(b, (char)*u);
			c++;
		}
		i++;
	}
	return c;
}

size_t cli_name(struct wf_buf *b, const char *s, size_t n)
{
	return cli_display(b, s, n, 0);
}

/* ---------------------------------------------------------------- meter */

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *meter_run(void *arg)
{
	struct cli_meter *mt = arg;
	double t0 = now_s();
	bool drawn = false;
	while (!atomic_load(&mt->stop)) {
		struct timespec ts = {0, 100 * 1000 * 1000};
		nanosleep(&ts, NULL);
		double secs = now_s() - t0;
		if (secs < 0.5 || atomic_load(&mt->stop))
			continue;
		uint64_t done = atomic_load(&mt->done);
		double pct = mt->total ? 100.0 * (double)done / (double)mt->total : 100.0;
		fprintf(stderr, "\r%s  %5.1f%%  %.1f of %.1f MB  %.0f MB/s\033[K", mt->label, pct, done / 1e6,
			mt->total / 1e6, done / 1e6 / secs);
		drawn = true;
	}
	if (drawn)
		fputs("\r\033[K", stderr);
	return NULL;
}

void cli_meter_start(struct cli_meter *mt, const char *label, uint64_t total)
{
	mt->label = label;
	mt->total = total;
	atomic_init(&mt->done, 0);
	atomic_init(&mt->stop, false);
	mt->running = isatty(STDERR_FILENO) && pthread_create(&mt->tid, NULL, meter_run, mt) == 0;
}

void cli_meter_stop(struct cli_meter *mt)
{
	if (!mt->running)
		return;
	atomic_store(&mt->stop, true);
	pthread_join(mt->tid, NULL);
	mt->running = false;
}

/* ---------------------------------------------------------------- table */

void cli_table_init(struct cli_table *tb, unsigned ncols, unsigned right_mask)
{
	memset(tb, 0, sizeof *tb);
	tb->ncols = ncols;
	tb->right_mask = right_mask;
}

static void add_cell(struct cli_table *tb, size_t off, size_t width)
{
	size_t (*c)[2] = wf_grow(tb->cells, tb->n_cells, &tb->cap, sizeof *c, 64); /* (offset, width) a cell */
	if (!c) {
		tb->oom = true;
		return;
	}
	tb->cells = (size_t *)c;
	tb->cells[2 * tb->n_cells] = off;
	tb->cells[2 * tb->n_cells + 1] = width;
	tb->n_cells++;
}

/* Pads and prints one cell of text s (width w) as cli_table_print does. */
static void put_cell(const struct cli_table *tb, unsigned col, const char *s, size_t have, bool last)
{
	bool right = tb->right_mask >> col & 1;
	if (col)
		fputs("  ", stdout);
	for (size_t k = have; right && k < tb->w[col]; k++)
		putchar(' ');
	fputs(s, stdout);
	for (size_t k = have; !right && !last && k < tb->w[col]; k++)
		putchar(' ');
	if (last)
		putchar('\n');
}

/* A cell in two-pass mode: measured, or printed. */
static void pass_cell(struct cli_table *tb, const char *s, size_t width)
{
	unsigned col = (unsigned)(tb->col % tb->ncols);
	tb->col++;
	if (col >= WF_ARRAY_LEN(tb->w))
		return;
	if (tb->pass == 1 && width > tb->w[col])
		tb->w[col] = width;
	else if (tb->pass == 2)
		put_cell(tb, col, s, width, col + 1 == tb->ncols);
}

void cli_table_two_pass(struct cli_table *tb)
{
	tb->pass = 1;
}

bool cli_table_two_pass_print(struct cli_table *tb)
{
	if (tb->ncols > WF_ARRAY_LEN(tb->w))
		return false;
	tb->pass = 2;
	tb->col = 0;
	return true;
}

void cli_table_cell(struct cli_table *tb, const char *fmt, ...)
{
	char s[256];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(s, sizeof s, fmt, ap);
	va_end(ap);
	if (tb->pass) {
		pass_cell(tb, s, strlen(s));
		return;
	}
	size_t off = tb->text.len;
	wf_buf_puts(&tb->text, s);
	wf_buf_putc(&tb->text, '\0');
	add_cell(tb, off, strlen(s));
}

void cli_table_name(struct cli_table *tb, const char *name, size_t n)
{
	if (tb->pass) { /* one name's text at a time */
		tb->text.len = 0;
		size_t w = cli_name(&tb->text, name, n);
		wf_buf_putc(&tb->text, '\0');
		pass_cell(tb, tb->text.oom ? "?" : tb->text.data, tb->text.oom ? 1 : w);
		return;
	}
	size_t off = tb->text.len;
	size_t w = cli_name(&tb->text, name, n);
	wf_buf_putc(&tb->text, '\0');
	add_cell(tb, off, w);
}

void cli_table_num(struct cli_table *tb, double v)
{
	if (isnan(v))
		cli_table_cell(tb, "-");
	else
		cli_table_cell(tb, "%.6g", v);
}

bool cli_table_print(struct cli_table *tb)
{
	size_t w[32] = {0};
	if (tb->oom || tb->text.oom || tb->ncols > WF_ARRAY_LEN(w))
		return false;
	for (size_t i = 0; i < tb->n_cells; i++)
		if (tb->cells[2 * i + 1] > w[i % tb->ncols])
			w[i % tb->ncols] = tb->cells[2 * i + 1];
	memcpy(tb->w, w, sizeof w);
	for (size_t i = 0; i < tb->n_cells; i++) {
		unsigned col = (unsigned)(i % tb->ncols);
		put_cell(tb, col, tb->text.data + tb->cells[2 * i], tb->cells[2 * i + 1],
			 col + 1 == tb->ncols || i + 1 == tb->n_cells);
	}
	return true;
}

void cli_table_free(struct cli_table *tb)
{
	wf_buf_free(&tb->text);
	free(tb->cells);
	memset(tb, 0, sizeof *tb);
}

void cli_json_num(struct wf_buf *b, double v)
{
	if (isnan(v) || isinf(v))
		wf_buf_puts(b, "null");
	else
		wf_buf_json_f64(b, v);
}
