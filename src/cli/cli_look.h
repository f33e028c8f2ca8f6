/* cli_look.h - what the commands that look at values (stats, diff) share:
 * a model opened as the mount would serve it (without its tree), a
 * progress meter for a terminal, names made printable, and an aligned
 * table.  Part of the command-line program: these print. */
#ifndef CLI_LOOK_H
#define CLI_LOOK_H

#include "base/wf_buf.h"
#include "model/wf_model.h"
#include "view/wf_live.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>

struct cli_model {
	const char *path;
	struct wf_model *m;
	struct wf_live lv;
	bool live;
};

/* Opens MODEL `path` (any form wf_set_open takes) with every tensor's view
 * set for -o dtype=`dtype` (NULL: f32), the SIGBUS guard installed.  On
 * failure prints "weightfs: PATH: why" and returns the exit code (the
 * mount's for the same model); 0 on success.  cm is then closed with
 * cli_model_close (also after a failure). */
int cli_model_open(struct cli_model *cm, const char *path, const char *dtype);
void cli_model_close(struct cli_model *cm);

/* Prints why a read of cm failed (rc from a wf_live read; msg the
 * reader's one line) and returns the exit code. */
int cli_model_read_failed(const struct cli_model *cm, enum wf_err rc, const char *msg);

/* Appends s[0..n) for a terminal: a newline as \n, a backslash as \\,
 * other control bytes, bytes that are not UTF-8 and the bytes of the code
 * points wf_printable_seq refuses (C1, bidirectional controls, line and
 * paragraph separators) as \xNN.  At most max
 * characters (0: no limit), then "...".  Returns its width in characters.
 * The one escaper of every command's names and values. */
size_t cli_display(struct wf_buf *b, const char *s, size_t n, size_t max);

/* cli_display with no limit: a tensor name in a table. */
size_t cli_name(struct wf_buf *b, const char *name, size_t n);

/* A progress line on stderr, drawn only when stderr is a terminal and the
 * work lasts over half a second: "LABEL  42.0%  1.2 of 2.9 GB". */
struct cli_meter {
	const char *label;
	uint64_t total;          /* bytes of work */
	_Atomic uint64_t done;   /* bytes done so far, added by the workers */
	atomic_bool stop;
	bool running;
	pthread_t tid;
};

void cli_meter_start(struct cli_meter *mt, const char *label, uint64_t total);
/* Stops the meter and erases its line. */
void cli_meter_stop(struct cli_meter *mt);

/* An aligned text table: cells are added row by row; a column is
 * right-aligned (numbers) when its bit in right_mask is set. */
struct cli_table {
	unsigned ncols;
	unsigned right_mask;
	struct wf_buf text;      /* cells, NUL-terminated one after another */
	size_t *cells;           /* per cell: offset in text, then its width */
	size_t n_cells, cap;
	bool oom;
	/* two-pass mode (cli_table_two_pass): nothing is kept but each
	 * column's width; the caller adds every cell twice */
	int pass;                /* 0: kept; 1: measuring; 2: printing */
	size_t w[32];
	size_t col;              /* the next cell's column in two-pass mode */
};

void cli_table_init(struct cli_table *tb, unsigned ncols, unsigned right_mask);
/* Adds one cell, formatted as printf does; a cell's width is its bytes
 * unless the cell was added with cli_table_name. */
void cli_table_cell(struct cli_table *tb, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Adds a cell holding a tensor name (made printable by cli_name). */
void cli_table_name(struct cli_table *tb, const char *name, size_t n);
/* Prints the table, columns two spaces apart; false when out of memory
 * (nothing printed). */
bool cli_table_print(struct cli_table *tb);
void cli_table_free(struct cli_table *tb);

/* Two-pass mode, for tables too big to keep (a row per tensor of a
 * 1,000,000-tensor model held 250 MB of cells): after cli_table_init, the
 * caller adds every cell once to measure the columns, calls
 * cli_table_two_pass_print, then adds the same cells again, each printed
 * as it comes; cli_table_print is then not called.  False from
 * cli_table_two_pass_print when there are more than 32 columns. */
void cli_table_two_pass(struct cli_table *tb);
bool cli_table_two_pass_print(struct cli_table *tb);

/* A double for the table: %.6g, "-" for NaN. */
void cli_table_num(struct cli_table *tb, double v);

/* Appends v as a JSON number, or null for NaN and infinities. */
void cli_json_num(struct wf_buf *b, double v);

#endif
