/* wf_summary.c - the text of WEIGHTFS.txt (see wf_summary.h). */
#include "mount/wf_summary.h"
#include "model/wf_meta.h"
#include "view/wf_gguf_file.h"
#include "view/wf_hf_file.h"
#include "base/wf_hash.h"
#include "base/wf_buf.h"
#include "mount/wf_gen.h"
#include "view/wf_view.h"
#include "codec/wf_types.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Most bytes of a name shown in a line: names come from the model file
 * and may be anything, the summary must stay a readable text. */
#define SHOW_MAX 64
/* config.json is parsed only when smaller than this (it is a few KiB). */
#define CONFIG_MAX (1u << 20)

/* Appends s[0..n) as one line's worth of text: what wf_printable_seq
 * calls printable kept, anything else (control bytes, invalid UTF-8, the
 * C1 and bidirectional controls) as '?', cut to max bytes with "...". */
static void put_clean(struct wf_buf *b, const char *s, size_t n, size_t max)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t out = 0;
	for (size_t i = 0; i < n;) {
		size_t l = wf_printable_seq(p + i, n - i);
		if (out + (l ? l : 1) > max) {
			wf_buf_puts(b, "...");
			return;
		}
		if (l == 0) {
			wf_buf_putc(b, '?');
			out++;
			i++;
		} else {
			wf_buf_put(b, p + i, l);
			out += l;
			i += l;
		}
	}
}

/* "1,234,567" */
static void put_count(struct wf_buf *b, uint64_t v)
{
	char d[32];
	int n = snprintf(d, sizeof d, "%" PRIu64, v);
	for (int i = 0; i < n; i++) {
		if (i && (n - i) % 3 == 0)
			wf_buf_putc(b, ',');
		wf_buf_putc(b, d[i]);
	}
}

/* "999", "12.3K", "7.2B": a parameter count at a glance. */
static void fmt_short(char *out, size_t len, uint64_t v)
{
	static const char units[] = "KMBT";
	if (v < 1000) {
		snprintf(out, len, "%" PRIu64, v);
		return;
	}
	double x = (double)v;
	size_t u = 0;
	x /= 1000;
	while (x >= 999.95 && u + 1 < sizeof units - 1) {
		x /= 1000;
		u++;
	}
	snprintf(out, len, "%.1f%c", x, units[u]);
}

/* "512 B", "21.3 KiB", "4.1 GiB" */
static void fmt_bytes(char *out, size_t len, uint64_t v)
{
	static const char *const units[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
	if (v < 1024) {
		snprintf(out, len, "%" PRIu64 " B", v);
		return;
	}
	double x = (double)v / 1024;
	size_t u = 0;
	while (x >= 1023.95 && u + 1 < WF_ARRAY_LEN(units)) {
		x /= 1024;
		u++;
	}
	snprintf(out, len, "%.1f %s", x, units[u]);
}

/* Bytes of a GGUF's metadata value read for the summary: put_clean shows
 * at most 200 characters, and knows it must cut after 204 bytes. */
#define META_SHOWN 256

/* The text of metadata key `key`, or NULL.  A GGUF's is made from the file
 * (wf_meta.h): its first META_SHOWN bytes, into *tmp and buf. */
static const struct wf_meta_file *meta_get(const struct wf_tree *t, const char *key, struct wf_meta_file *tmp,
					   char *buf)
{
	size_t n = strlen(key);
	for (size_t i = 0; i < t->n_meta; i++) {
		const struct wf_meta_file *f = &t->meta[i];
		if (f->name_len != n || memcmp(f->name, key, n) != 0)
			continue;
		if (f->data)
			return f;
		*tmp = *f;
		tmp->len = f->len < META_SHOWN ? f->len : META_SHOWN;
		tmp->data = buf;
		return wf_meta_gguf_value(t->m, i, 0, tmp->len, buf, NULL) == WF_OK ? tmp : NULL;
	}
	return NULL;
}

/* A model folder's config.json (Hugging Face): its name and architecture,
 * when the metadata has none. */
static cJSON *config_json(const struct wf_model *m)
{
	for (size_t i = 0; i < m->n_sidecars; i++) {
		const struct wf_sidecar *sc = &m->sidecars[i];
		if (strcmp(sc->name, "config.json") == 0 && sc->len < CONFIG_MAX)
			return cJSON_ParseWithLength(sc->data, (size_t)sc->len);
	}
	return NULL;
}

/* Appends "Label:  value" for a metadata key, or the fallback. */
static void put_field(struct wf_buf *b, const char *label, const struct wf_meta_file *f, const char *fallback)
{
	wf_buf_printf(b, "%-14s", label);
	if (f && f->len)
		put_clean(b, f->data, f->len, 200);
	else
		put_clean(b, fallback, strlen(fallback), 200);
	wf_buf_putc(b, '\n');
}

/* ---------------------------------------------------------------- layers */

/* Where a layer index is in a name: the first component that is only
 * digits (at most 9, so it fits a uint32).  stack_len is the bytes before
 * it (without the '.'), kind_at where the rest starts (n when nothing
 * follows). */
static bool find_layer(const char *s, size_t n, size_t *stack_len, uint32_t *layer, size_t *kind_at)
{
	size_t from = 0;
	while (from <= n) {
		const char *dot = memchr(s + from, '.', n - from);
		size_t end = dot ? (size_t)(dot - s) : n;
		size_t len = end - from;
		bool digits = len > 0 && len <= 9;
		for (size_t i = from; digits && i < end; i++)
			digits = s[i] >= '0' && s[i] <= '9';
		if (digits) {
			uint32_t v = 0;
			for (size_t i = from; i < end; i++)
				v = v * 10 + (uint32_t)(s[i] - '0');
			*stack_len = from ? from - 1 : 0;
			*layer = v;
			*kind_at = dot ? end + 1 : n;
			return true;
		}
		if (!dot)
			break;
		from = end + 1;
	}
	return false;
}

/* A tensor kind as shown: the name after the layer index, further indices
 * (experts) as '*', ".weight" left out at the end, cleaned and cut. */
static void kind_text(const char *s, size_t n, struct wf_buf *out)
{
	out->len = 0;
	static const char w[] = ".weight";
	if (n > sizeof w - 1 && memcmp(s + n - (sizeof w - 1), w, sizeof w - 1) == 0)
		n -= sizeof w - 1;
	struct wf_buf raw = {0};
	for (size_t from = 0; from < n && raw.len <= SHOW_MAX;) {
		const char *dot = memchr(s + from, '.', n - from);
		size_t end = dot ? (size_t)(dot - s) : n;
		bool digits = end > from;
		for (size_t i = from; digits && i < end; i++)
			digits = s[i] >= '0' && s[i] <= '9';
		if (digits)
			wf_buf_putc(&raw, '*');
		else
			wf_buf_put(&raw, s + from, end - from);
		if (dot)
			wf_buf_putc(&raw, '.');
		from = end + 1;
	}
	if (n == 0)
		wf_buf_puts(&raw, "(layer)");
	if (raw.oom)
		out->oom = true;
	else
		put_clean(out, raw.data, raw.len, SHOW_MAX / 2);
	wf_buf_free(&raw);
}

struct stack {
	const char *name;    /* into a tensor's name */
	size_t len;
	uint64_t hash;
	char *kinds[WF_SUMMARY_KINDS];
	uint64_t kind_hash[WF_SUMMARY_KINDS];
	size_t n_kinds;
	bool more_kinds;     /* some tensors' kinds did not get a column */
	size_t n_tensors;
};

struct ent {
	uint32_t layer;
	uint16_t stack;
	uint16_t kind;       /* WF_SUMMARY_KINDS: not a column of its own */
	uint32_t tensor;
};

static int ent_cmp(const void *a, const void *b)
{
	const struct ent *x = a, *y = b;
	if (x->stack != y->stack)
		return x->stack < y->stack ? -1 : 1;
	if (x->layer != y->layer)
		return x->layer < y->layer ? -1 : 1;
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	return (x->tensor > y->tensor) - (x->tensor < y->tensor);
}

/* One cell: how many tensors of a kind a layer has, and their type (-1:
 * several types). */
struct cell {
	uint32_t count;
	int type;
};

struct row {
	uint32_t first, last;    /* layers */
	uint64_t params;         /* per layer */
	struct cell c[WF_SUMMARY_KINDS + 1];
};

static void cell_text(const struct cell *c, char *out, size_t len)
{
	const struct wf_type *ty = c->type >= 0 ? wf_type_get(c->type) : NULL;
	const char *tn = ty ? ty->name : "mixed";
	if (c->count == 0)
		snprintf(out, len, "-");
	else if (c->count == 1)
		snprintf(out, len, "%s", tn);
	else
		snprintf(out, len, "%" PRIu32 "x%s", c->count, tn);
}

static bool row_same(const struct row *a, const struct row *b, size_t ncol)
{
	if (a->params != b->params)
		return false;
	for (size_t k = 0; k < ncol; k++)
		if (a->c[k].count != b->c[k].count || a->c[k].type != b->c[k].type)
			return false;
	return true;
}

/* One layer's entries become one row, the unit that alike layers share;
 * returns where the next layer's entries start. */
static size_t layer_row(const struct wf_model *m, const struct stack *s, const struct ent *e, size_t n, size_t i,
			struct row *cur)
{
	memset(cur, 0, sizeof *cur);
	cur->first = cur->last = e[i].layer;
	size_t j = i;
	for (; j < n && e[j].layer == e[i].layer; j++) {
		const struct wf_tensor *tn = &m->tensors[e[j].tensor];
		struct cell *c = &cur->c[e[j].kind < s->n_kinds ? e[j].kind : s->n_kinds];
		c->type = c->count == 0 || c->type == tn->type ? tn->type : -1;
		c->count++;
		cur->params += tn->nelems;
	}
	return j;
}

/* The layer column shows a range where alike layers were folded. */
static int range_text(const struct row *r, char *txt, size_t len)
{
	return r->first == r->last ? snprintf(txt, len, "%" PRIu32, r->first)
				   : snprintf(txt, len, "%" PRIu32 "-%" PRIu32, r->first, r->last);
}

/* The columns are as wide as their widest cell among the rows shown. */
static void col_widths(const struct stack *s, const struct row *rows, size_t n_rows, size_t ncol, size_t *w,
		       size_t *w_layer)
{
	char txt[64];
	for (size_t k = 0; k < ncol; k++) {
		w[k] = k < s->n_kinds ? strlen(s->kinds[k]) : 4;
		for (size_t r = 0; r < n_rows; r++) {
			cell_text(&rows[r].c[k], txt, sizeof txt);
			if (strlen(txt) > w[k])
				w[k] = strlen(txt);
		}
	}
	for (size_t r = 0; r < n_rows; r++) {
		int l = range_text(&rows[r], txt, sizeof txt);
		if ((size_t)l > *w_layer)
			*w_layer = (size_t)l;
	}
}

/* The table itself, once the rows are folded and the widths known. */
static void put_rows(struct wf_buf *b, const struct stack *s, const struct row *rows, size_t n_rows, size_t ncol,
		     const size_t *w, size_t w_layer, size_t w_par)
{
	char txt[64];
	wf_buf_printf(b, "  %-*s", (int)w_layer, "layer");
	for (size_t k = 0; k < ncol; k++)
		wf_buf_printf(b, "  %-*s", (int)w[k], k < s->n_kinds ? s->kinds[k] : "more");
	wf_buf_printf(b, "  %*s\n", (int)w_par, "params");
	for (size_t r = 0; r < n_rows; r++) {
		range_text(&rows[r], txt, sizeof txt);
		wf_buf_printf(b, "  %-*s", (int)w_layer, txt);
		for (size_t k = 0; k < ncol; k++) {
			cell_text(&rows[r].c[k], txt, sizeof txt);
			wf_buf_printf(b, "  %-*s", (int)w[k], txt);
		}
		fmt_short(txt, sizeof txt, rows[r].params);
		wf_buf_printf(b, "  %*s\n", (int)w_par, txt);
	}
}

/* Prints the table of stack s from its sorted entries e[0..n). */
static bool put_stack(struct wf_buf *b, const struct wf_model *m, const struct stack *s, const struct ent *e,
		      size_t n)
{
	size_t ncol = s->n_kinds + (s->more_kinds ? 1 : 0);
	struct row *rows = calloc(WF_SUMMARY_ROWS, sizeof *rows);
	if (!rows)
		return false;
	size_t n_rows = 0;
	uint64_t layers = 0, rest_layers = 0;
	uint32_t rest_first = 0, rest_last = 0;
	struct row cur;
	for (size_t i = 0; i < n;) {
		i = layer_row(m, s, e, n, i, &cur);
		layers++;
		struct row *prev = n_rows ? &rows[n_rows - 1] : NULL;
		if (rest_layers == 0 && prev && prev->last + 1 == cur.first && row_same(prev, &cur, ncol)) {
			prev->last = cur.first;
		} else if (rest_layers == 0 && n_rows < WF_SUMMARY_ROWS) {
			rows[n_rows++] = cur;
		} else {
			if (rest_layers++ == 0)
				rest_first = cur.first;
			rest_last = cur.first;
		}
	}

	size_t w_layer = 5, w_par = 6, w[WF_SUMMARY_KINDS + 1];
	col_widths(s, rows, n_rows, ncol, w, &w_layer);
	wf_buf_puts(b, "\nLayers ");
	put_clean(b, s->name, s->len, SHOW_MAX);
	wf_buf_printf(b, ".N: %" PRIu64 " layer%s, %zu tensor%s\n", layers, layers == 1 ? "" : "s", s->n_tensors,
		      s->n_tensors == 1 ? "" : "s");
	put_rows(b, s, rows, n_rows, ncol, w, w_layer, w_par);
	if (rest_layers)
		wf_buf_printf(b, "  ... %" PRIu64 " more layer%s (%" PRIu32 "-%" PRIu32 "): see tensors.json\n",
			      rest_layers, rest_layers == 1 ? "" : "s", rest_first, rest_last);
	if (s->more_kinds)
		wf_buf_puts(b, "  (more: tensors of kinds without a column of their own)\n");
	free(rows);
	return true;
}

/* A stack is found by its name before the layer index; a new name opens a
 * stack while there is room.  Returns its index, or WF_SUMMARY_STACKS when
 * full (the tensor then goes with the others). */
static size_t stack_of(struct stack *st, size_t *n_st, const char *name, size_t slen)
{
	uint64_t h = wf_fnv1a(name, slen);
	size_t s = 0;
	while (s < *n_st && !(st[s].hash == h && st[s].len == slen && memcmp(st[s].name, name, slen) == 0))
		s++;
	if (s == *n_st) {
		if (*n_st == WF_SUMMARY_STACKS)
			return WF_SUMMARY_STACKS;
		st[s].name = name;
		st[s].len = slen;
		st[s].hash = h;
		(*n_st)++;
	}
	return s;
}

/* A kind gets a column of its own while there is room, else it counts as
 * "more".  Returns its column (WF_SUMMARY_KINDS: none), or -1 out of
 * memory. */
static long kind_of(struct stack *st, const struct wf_buf *kind)
{
	uint64_t kh = wf_fnv1a(kind->data, kind->len);
	size_t k = 0;
	while (k < st->n_kinds && !(st->kind_hash[k] == kh && strlen(st->kinds[k]) == kind->len &&
				    memcmp(st->kinds[k], kind->data, kind->len) == 0))
		k++;
	if (k == st->n_kinds) {
		if (k == WF_SUMMARY_KINDS) {
			st->more_kinds = true;
		} else {
			st->kinds[k] = strndup(kind->data, kind->len);
			if (!st->kinds[k])
				return -1;
			st->kind_hash[k] = kh;
			st->n_kinds++;
		}
	}
	return (long)k;
}

/* Every tensor goes to a stack's table or to the list of the others;
 * false out of memory. */
static bool sort_tensors(const struct wf_model *m, struct stack *st, size_t *n_st, struct ent *e, size_t *n_e,
			 uint32_t *others, size_t *n_others, struct wf_buf *kind)
{
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		size_t slen, kat;
		uint32_t layer;
		if (!find_layer(tn->name, tn->name_len, &slen, &layer, &kat)) {
			others[(*n_others)++] = (uint32_t)i;
			continue;
		}
		size_t s = stack_of(st, n_st, tn->name, slen);
		if (s == WF_SUMMARY_STACKS) {
			others[(*n_others)++] = (uint32_t)i;
			continue;
		}
		kind_text(tn->name + kat, tn->name_len - kat, kind);
		if (kind->oom)
			return false;
		long k = kind_of(&st[s], kind);
		if (k < 0)
			return false;
		st[s].n_tensors++;
		e[(*n_e)++] =
			(struct ent){.layer = layer, .stack = (uint16_t)s, .kind = (uint16_t)k, .tensor = (uint32_t)i};
	}
	return true;
}

/* The tables come in stack order, each from its own run of the sorted
 * entries. */
static bool put_stacks(struct wf_buf *b, const struct wf_model *m, const struct stack *st, size_t n_st,
		       struct ent *e, size_t n_e)
{
	bool ok = true;
	qsort(e, n_e, sizeof *e, ent_cmp);
	if (n_st)
		wf_buf_puts(b, "\nThe layers: one row per layer (alike layers in a row share it), one column per\n"
			       "kind of tensor (\".weight\" left out, * for an index such as an expert's),\n"
			       "each cell the tensor's type in the model (NxTYPE: N tensors; - none).\n");
	for (size_t s = 0, at = 0; s < n_st && ok; s++) {
		size_t from = at;
		while (at < n_e && e[at].stack == s)
			at++;
		ok = put_stack(b, m, &st[s], e + from, at - from);
	}
	return ok;
}

/* Tensors outside any stack get a line each, up to WF_SUMMARY_OTHERS. */
static void put_others(struct wf_buf *b, const struct wf_tree *t, const uint32_t *others, size_t n_others,
		       size_t n_st)
{
	const struct wf_model *m = t->m;
	wf_buf_printf(b, "\n%s tensors (type, shape in numpy order, file):\n", n_st ? "Other" : "The");
	size_t w = 0;
	for (size_t i = 0; i < n_others && i < WF_SUMMARY_OTHERS; i++) {
		size_t l = m->tensors[others[i]].name_len;
		w = l > w ? l : w;
	}
	w = w > SHOW_MAX ? SHOW_MAX : w;
	struct wf_buf path = {0};
	for (size_t i = 0; i < n_others && i < WF_SUMMARY_OTHERS; i++) {
		const struct wf_tensor *tn = &m->tensors[others[i]];
		size_t at = b->len;
		wf_buf_puts(b, "  ");
		put_clean(b, tn->name, tn->name_len, SHOW_MAX);
		for (size_t pad = b->len - at; pad < w + 4; pad++)
			wf_buf_putc(b, ' ');
		const struct wf_type *ty = wf_type_get(tn->type);
		wf_buf_printf(b, "%-8s ", ty ? ty->name : "?");
		at = b->len;
		wf_view_shape_json(tn, b);
		for (size_t pad = b->len - at; pad < 14; pad++)
			wf_buf_putc(b, ' ');
		wf_buf_puts(b, "  ");
		path.len = 0;
		wf_tree_path(t, t->tensor_node[others[i]], &path);
		if (!path.oom)
			put_clean(b, path.data, path.len, 2 * SHOW_MAX);
		wf_buf_putc(b, '\n');
	}
	if (path.oom)
		b->oom = true;
	wf_buf_free(&path);
	if (n_others > WF_SUMMARY_OTHERS)
		wf_buf_printf(b, "  ... %zu more: see tensors.json\n", n_others - WF_SUMMARY_OTHERS);
}

/* Sorts the tensors into stacks and prints a table per stack; the rest
 * (embeddings, output, norms) one per line. */
static bool put_layers(struct wf_buf *b, const struct wf_tree *t)
{
	const struct wf_model *m = t->m;
	struct stack st[WF_SUMMARY_STACKS];
	size_t n_st = 0;
	struct ent *e = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *e);
	uint32_t *others = malloc((m->n_tensors ? m->n_tensors : 1) * sizeof *others);
	struct wf_buf kind = {0};
	bool ok = e && others;
	size_t n_e = 0, n_others = 0;
	memset(st, 0, sizeof st);

	if (ok)
		ok = sort_tensors(m, st, &n_st, e, &n_e, others, &n_others, &kind);
	if (ok)
		ok = put_stacks(b, m, st, n_st, e, n_e);
	if (ok && n_others)
		put_others(b, t, others, n_others, n_st);
	for (size_t s = 0; s < n_st; s++)
		for (size_t k = 0; k < st[s].n_kinds; k++)
			free(st[s].kinds[k]);
	wf_buf_free(&kind);
	free(e);
	free(others);
	return ok;
}

/* ---------------------------------------------------------------- types */

struct type_sum {
	uint32_t n;
	uint64_t params, nbytes, size;
	const char *dtype;   /* the view's: the same for every tensor of a type */
	int type;
};

static int type_cmp(const void *a, const void *b)
{
	const struct type_sum *x = a, *y = b;
	if (x->nbytes != y->nbytes)
		return x->nbytes > y->nbytes ? -1 : 1;
	return x->type - y->type;
}

static void put_types(struct wf_buf *b, const struct wf_model *m, const struct type_sum *ts, size_t n)
{
	char p[32], s1[32], s2[32];
	wf_buf_puts(b, "\nTypes (in the model; \"file\" is what the mount's files hold):\n");
	wf_buf_printf(b, "  %-12s %8s %12s %12s  %-16s %12s\n", "type", "tensors", "params", "bytes", "file dtype",
		      "file bytes");
	for (size_t i = 0; i < n; i++) {
		const struct wf_type *ty = wf_type_get(ts[i].type);
		fmt_short(p, sizeof p, ts[i].params);
		fmt_bytes(s1, sizeof s1, ts[i].nbytes);
		fmt_bytes(s2, sizeof s2, ts[i].size);
		wf_buf_printf(b, "  %-12s %8" PRIu32 " %12s %12s  %-16s %12s\n", ty ? ty->name : "?", ts[i].n, p, s1,
			      ts[i].dtype, s2);
	}
	(void)m;
}

/* ---------------------------------------------------------------- the text */

/* The model's totals, and per type for the types table (sorted biggest
 * first); returns how many types there are. */
static size_t sum_types(const struct wf_model *m, struct type_sum *ts, uint64_t *params, uint64_t *nbytes,
			uint64_t *size)
{
	size_t n_ts = 0;
	memset(ts, 0, WF_T_COUNT * sizeof *ts);
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		if (tn->type < 0 || tn->type >= WF_T_COUNT)
			continue;
		struct type_sum *x = &ts[tn->type];
		x->n++;
		x->params += tn->nelems;
		x->nbytes += tn->nbytes;
		x->size += tn->size;
		x->dtype = wf_view_dtype(tn);
		x->type = tn->type;
		*params += tn->nelems;
		*nbytes += tn->nbytes;
		*size += tn->size;
	}
	for (int i = 0; i < WF_T_COUNT; i++)
		if (ts[i].n)
			ts[n_ts++] = ts[i];
	qsort(ts, n_ts, sizeof *ts, type_cmp);
	return n_ts;
}

/* config.json's name and architecture stand in when GGUF's general.* are
 * missing. */
static void config_names(const cJSON *cfg, const char **cfg_name, const char **cfg_arch)
{
	if (!cfg)
		return;
	cJSON *a = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
	cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
	cJSON *nm = cJSON_GetObjectItemCaseSensitive(cfg, "_name_or_path");
	if (cJSON_IsArray(a) && cJSON_IsString(cJSON_GetArrayItem(a, 0)))
		*cfg_arch = cJSON_GetArrayItem(a, 0)->valuestring;
	else if (cJSON_IsString(mt))
		*cfg_arch = mt->valuestring;
	if (cJSON_IsString(nm) && *nm->valuestring)
		*cfg_name = nm->valuestring;
}

/* The heading fields tell which model this is at a glance. */
static void put_head(struct wf_buf *b, const struct wf_tree *t, const char *cfg_name, const char *cfg_arch,
		     uint64_t params, uint64_t nbytes, uint64_t size)
{
	const struct wf_model *m = t->m;
	char s1[32], s2[32];
	const char *file0 = m->n_parts && m->parts[0].name ? m->parts[0].name : "(a buffer)";
	wf_buf_puts(b, WF_SUMMARY_NAME " - a model mounted by weightfs (read-only)\n\n");
	struct wf_meta_file tmp;
	char buf[META_SHOWN];
	put_field(b, "Model:", meta_get(t, "general.name", &tmp, buf), cfg_name ? cfg_name : file0);
	put_field(b, "Architecture:", meta_get(t, "general.architecture", &tmp, buf),
		  cfg_arch ? cfg_arch : "(not stated)");
	const struct wf_meta_file *sl = meta_get(t, "general.size_label", &tmp, buf);
	if (sl)
		put_field(b, "Size label:", sl, "");
	wf_buf_printf(b, "%-14s", "Source:");
	if (m->format == WF_FMT_GGUF)
		wf_buf_printf(b, "GGUF v%u", m->version);
	else
		wf_buf_puts(b, "safetensors");
	wf_buf_puts(b, ", ");
	put_clean(b, file0, strlen(file0), SHOW_MAX);
	if (m->n_parts > 1)
		wf_buf_printf(b, " and %u more files (parts.json)", m->n_parts - 1);
	if (m->n_kv)
		wf_buf_printf(b, ", %" PRIu64 " metadata key%s\n", m->n_kv, m->n_kv == 1 ? "" : "s");
	else
		wf_buf_puts(b, ", no metadata\n");
	wf_buf_printf(b, "%-14s", "Parameters:");
	put_count(b, params);
	fmt_short(s1, sizeof s1, params);
	wf_buf_printf(b, " (%s) in %zu tensor%s\n", s1, m->n_tensors, m->n_tensors == 1 ? "" : "s");
	fmt_bytes(s1, sizeof s1, nbytes);
	fmt_bytes(s2, sizeof s2, size);
	wf_buf_printf(b, "%-14s%s in the model, %s as the mount's files\n", "Bytes:", s1, s2);
}

/* A real tensor and its file show how names map to paths better than a
 * rule would. */
static void put_example(struct wf_buf *b, const struct wf_tree *t)
{
	const struct wf_model *m = t->m;
	struct wf_buf ex = {0};
	if (m->n_tensors) {
		wf_tree_path(t, t->tensor_node[0], &ex);
		if (!ex.oom)
			wf_buf_putc(&ex, '\0');
	}
	wf_buf_puts(b, "\nThe files\n"
		       "  Every tensor is one file, its name split on '.' into folders");
	if (m->n_tensors && !ex.oom) {
		wf_buf_puts(b, ":\n  ");
		put_clean(b, m->tensors[0].name, m->tensors[0].name_len, SHOW_MAX);
		wf_buf_puts(b, " is ");
		put_clean(b, ex.data, strlen(ex.data), 2 * SHOW_MAX);
	}
	wf_buf_free(&ex);
	wf_buf_puts(b, ".\n");
}

/* With suffixes on, a reader must know which suffix means which dtype. */
static void put_suffixes(struct wf_buf *b, const struct type_sum *ts, size_t n_ts)
{
	wf_buf_puts(b, "  A file's suffix names its dtype:");
	const char *sep = " ";
	for (size_t i = 0; i < n_ts; i++) {
		bool dup = false; /* one mention per dtype */
		for (size_t j = 0; j < i; j++)
			dup |= strcmp(ts[j].dtype, ts[i].dtype) == 0;
		if (dup)
			continue;
		const char *sx = wf_dtype_suffix(ts[i].dtype);
		wf_buf_printf(b, "%s.%s %s", sep, sx ? sx : "u8", ts[i].dtype);
		sep = ", ";
	}
	wf_buf_puts(b, ".\n");
}

/* model.gguf: what it is, or why the folder has none (one line from
 * wf_gguf_file_new, naming the file and field or the tensor). */
static void put_gguf(struct wf_buf *b, const struct wf_tree *t)
{
	if (t->gguf && t->gguf->plan.generic) {
		wf_buf_puts(b, "  model.gguf: every tensor under its own name, as stored (F32 where GGUF has no\n"
			       "  such type), with the metadata and config.json as key/values; llama.cpp\n"
			       "  cannot run it: ");
		put_clean(b, t->gguf->plan.why_generic, strlen(t->gguf->plan.why_generic), 300);
		wf_buf_puts(b, ".\n");
	} else if (t->gguf && t->gguf->plan.from_gguf) {
		wf_buf_printf(b, "  model.gguf: this model retyped to %s as llama.cpp's llama-quantize\n"
				 "  --allow-requantize writes it (-o gguf=), made on read.\n",
			      t->gguf->plan.arch);
	} else if (t->gguf && wf_ftype_quantized(t->gguf->plan.ftype)) {
		wf_buf_printf(b, "  model.gguf: the model as llama.cpp's convert_hf_to_gguf.py and then llama-quantize\n"
				 "  write it (%s, %s), made on read: llama.cpp runs it from here.\n",
			      t->gguf->plan.arch, wf_ftype_name(t->gguf->plan.ftype));
	} else if (t->gguf) {
		wf_buf_printf(b, "  model.gguf: the model as llama.cpp's convert_hf_to_gguf.py writes it (%s, %s),\n"
				 "  made on read: llama.cpp runs it from here (-o gguf= picks its type).\n",
			      t->gguf->plan.arch,
			      wf_ftype_name(t->gguf->plan.ftype));
	} else if (t->gguf_why) {
		wf_buf_puts(b, t->m->format == WF_FMT_GGUF ? "  No model.gguf (-o gguf=): "
							   : "  No model.gguf: llama.cpp's converter would not make it the same: ");
		put_clean(b, t->gguf_why, strlen(t->gguf_why), 300);
		wf_buf_puts(b, ".\n");
	}
	if (t->gguf && t->gguf->plan.n_not_text)
		wf_buf_printf(b, "  It is the text model only: the %zu tensors of the vision tower and projector\n"
				 "  are not in it (the converter writes those only with --mmproj, to a file of\n"
				 "  their own).\n",
			      t->gguf->plan.n_not_text);
}

/* hf/: what it is, or why a GGUF model has none. */
static void put_hf(struct wf_buf *b, const struct wf_tree *t)
{
	if (t->hf && t->hf->st) {
		wf_buf_puts(b, "  hf/: the Hugging Face folder transformers builds from this GGUF, made on\n"
			       "  read: config.json, generation_config.json, model.safetensors under HF names");
		wf_buf_puts(b, t->hf->has_tok ? ", the\n  tokenizer files; AutoModelForCausalLM.from_pretrained(\"MOUNT/hf\") loads it.\n"
					      : ";\n  AutoModelForCausalLM.from_pretrained(\"MOUNT/hf\") loads it.\n");
	}
	if (t->hf && t->hf->st && !t->hf->has_tok) {
		wf_buf_puts(b, "  No tokenizer files in hf/: ");
		put_clean(b, t->hf->tok_why, strlen(t->hf->tok_why), 300);
		wf_buf_puts(b, ".\n");
	}
	if (t->hf && !t->hf->st) {
		wf_buf_puts(b, "  hf/ holds the tokenizer files only (AutoTokenizer loads them); no config.json or\n"
			       "  model.safetensors: ");
		put_clean(b, t->hf->model_why, strlen(t->hf->model_why), 300);
		wf_buf_puts(b, ".\n");
	} else if (!t->hf && t->hf_why) {
		wf_buf_puts(b, "  No hf/: ");
		put_clean(b, t->hf_why, strlen(t->hf_why), 300);
		wf_buf_puts(b, ".\n");
	}
}

/* How to read the files differs with -o npy and suffix, so it is told as
 * this mount has them. */
static void put_files(struct wf_buf *b, const struct wf_tree *t, const struct type_sum *ts, size_t n_ts,
		      const char *meta_dir)
{
	put_example(b, t);
	if (t->npy)
		wf_buf_puts(b, "  Each file is a .npy array (numpy.load reads it): a header with the dtype\n"
			       "  and shape, then the values, little-endian, row-major (C order).\n");
	else
		wf_buf_puts(b, "  Each file holds the tensor's values and nothing else: raw little-endian\n"
			       "  numbers in row-major (C) order, with no header; read one with\n"
			       "  numpy.fromfile(FILE, dtype=DTYPE).reshape(SHAPE).\n");
	wf_buf_puts(b, "  Their dtype is the \"file dtype\" of the types below: float and quantized\n"
		       "  tensors are decoded on read (-o dtype= chooses float32, float16, bfloat16\n"
		       "  or the stored bytes); integer and bool tensors are as stored.\n");
	if (t->suffix && !t->npy)
		put_suffixes(b, ts, n_ts);
	wf_buf_printf(b, "  Shapes (numpy order, outermost first), dtypes and types of every tensor:\n"
			 "  tensors.json; of one file: its xattrs user.weightfs.shape, .dtype, .type and\n"
			 "  .name (getfattr -d FILE)%s.\n", t->npy ? " and its .npy header" : "");
	wf_buf_printf(b, "  Also here: metadata.json and %s/ (the model's metadata, a file per key),\n"
			 "  model.safetensors (the whole model as one safetensors file, in the files'\n"
			 "  dtypes)%s.\n", meta_dir, t->m->parts_json ? ", parts.json (the model's files)" : "");
	put_gguf(b, t);
	put_hf(b, t);
	if (t->m->left_out) {
		/* one line each, as the loader said why */
		wf_buf_puts(b, "  Left out of the model's folder (not part of the model: unreadable, or too big):\n");
		for (const char *p = t->m->left_out; *p;) {
			const char *nl = strchr(p, '\n');
			size_t n = nl ? (size_t)(nl - p) : strlen(p);
			wf_buf_puts(b, "    ");
			put_clean(b, p, n, 200);
			wf_buf_putc(b, '\n');
			p += n + (nl != NULL);
		}
	}
}

enum wf_err wf_summary(const struct wf_tree *t, const char *meta_dir, char **text, size_t *len, char *err)
{
	const struct wf_model *m = t->m;
	struct wf_buf b = {0};
	struct type_sum ts[WF_T_COUNT];
	uint64_t params = 0, nbytes = 0, size = 0;
	size_t n_ts = sum_types(m, ts, &params, &nbytes, &size);

	/* name and architecture: GGUF's general.*, else config.json's */
	cJSON *cfg = config_json(m);
	const char *cfg_name = NULL, *cfg_arch = NULL;
	config_names(cfg, &cfg_name, &cfg_arch);
	put_head(&b, t, cfg_name, cfg_arch, params, nbytes, size);
	put_files(&b, t, ts, n_ts, meta_dir);
	put_types(&b, m, ts, n_ts);
	bool ok = put_layers(&b, t);
	cJSON_Delete(cfg);
	if (!ok || !wf_buf_finish(&b)) {
		wf_buf_free(&b);
		return wf_fail(err, WF_ERR_NOMEM, WF_SUMMARY_NAME ": out of memory");
	}
	*text = b.data;
	*len = b.len;
	return WF_OK;
}
