/* wf_tj.c - tensors.json made a window at a time (wf_tj.h). */
#include "mount/wf_tj.h"
#include "codec/wf_types.h"
#include "view/wf_hfq.h"
#include "view/wf_view.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* The text is pieces: 0 the head, 1..n_groups the groups of entries, then
 * the tail; at[p] is where piece p starts and at[n_pieces] the length. */
struct wf_tj {
	const struct wf_model *m;
	wf_tj_path_fn path;
	const void *ctx;
	size_t n_groups;
	uint64_t *at;     /* [n_groups + 3] */
	uint64_t id;
};

static void head(const struct wf_model *m, struct wf_buf *b)
{
	if (m->format == WF_FMT_GGUF)
		wf_buf_printf(b, "{\"format\":\"gguf\",\"version\":%u,\"alignment\":%u,\"data_offset\":%" PRIu64
			      ",\"metadata_count\":%" PRIu64 ",\n\"tensors\":[",
			      m->version, m->alignment, m->data_offset, m->n_kv);
	else
		wf_buf_printf(b, "{\"format\":\"safetensors\",\"data_offset\":%" PRIu64
			      ",\"metadata_count\":%" PRIu64 ",\n\"tensors\":[",
			      m->data_offset, m->n_kv);
}

/* Tensor i's path as a JSON string. */
static void path(const struct wf_tj *s, size_t i, struct wf_buf *b)
{
	wf_buf_putc(b, '"');
	size_t at = b->len;
	s->path(s->ctx, i, b);
	/* paths are ASCII-safe except '"' and '\\', which need escaping */
	if (!b->oom && memchr(b->data + at, '"', b->len - at) == NULL &&
	    memchr(b->data + at, '\\', b->len - at) == NULL) {
		wf_buf_putc(b, '"');
	} else if (!b->oom) {
		struct wf_buf p = {0};
		wf_buf_put(&p, b->data + at, b->len - at);
		b->len = at - 1;
		wf_buf_json_str(b, p.data, p.len);
		b->oom |= p.oom;
		wf_buf_free(&p);
	}
}

/* Tensor i's entry, with the separator before it. */
static void entry(const struct wf_tj *s, size_t i, struct wf_buf *b)
{
	const struct wf_model *m = s->m;
	const struct wf_tensor *tn = &m->tensors[i];
	const struct wf_type *ty = wf_type_get(tn->type);
	wf_buf_puts(b, i ? ",\n{\"name\":" : "\n{\"name\":");
	wf_buf_json_str(b, tn->name, tn->name_len);
	wf_buf_puts(b, ",\"path\":");
	path(s, i, b);
	wf_buf_printf(b, ",\"type\":\"%s\",\"dtype\":\"%s\",\"shape\":", ty->name, wf_view_dtype(tn));
	wf_view_shape_json(tn, b);
	wf_buf_printf(b, ",\"size\":%" PRIu64 ",", tn->size);
	const char *file = m->parts[tn->part].name;
	if (file) {
		wf_buf_puts(b, "\"file\":");
		wf_buf_json_str(b, file, strlen(file));
		wf_buf_putc(b, ',');
	}
	wf_buf_printf(b, "\"offset\":%" PRIu64 ",\"nbytes\":%" PRIu64, tn->offset, tn->nbytes);
	if (tn->q) { /* a decoded layer: its scheme and parameters */
		wf_buf_puts(b, ",\"quant\":");
		wf_hfq_params_json(tn->q, b);
	}
	wf_buf_putc(b, '}');
}

/* Appends piece p of the text to b. */
static void piece(const struct wf_tj *s, size_t p, struct wf_buf *b)
{
	size_t n = s->m->n_tensors;
	if (p == 0) {
		head(s->m, b);
	} else if (p > s->n_groups) {
		wf_buf_puts(b, n ? "\n]}\n" : "]}\n");
	} else {
		size_t end = (p - 1) * WF_TJ_GROUP + WF_TJ_GROUP < n ? (p - 1) * WF_TJ_GROUP + WF_TJ_GROUP : n;
		for (size_t i = (p - 1) * WF_TJ_GROUP; i < end && !b->oom; i++)
			entry(s, i, b);
	}
}

void wf_tj_text(const struct wf_tj *s, struct wf_buf *out)
{
	for (size_t p = 0; p < s->n_groups + 2 && !out->oom; p++)
		piece(s, p, out);
}

enum wf_err wf_tj_new(const struct wf_model *m, wf_tj_path_fn path_fn, const void *ctx, struct wf_tj **out,
		      uint64_t *len)
{
	static atomic_uint_fast64_t ids;
	*out = NULL;
	*len = 0;
	struct wf_tj *s = calloc(1, sizeof *s);
	if (!s)
		return WF_ERR_NOMEM;
	*s = (struct wf_tj){.m = m, .path = path_fn, .ctx = ctx, .n_groups = (m->n_tensors + WF_TJ_GROUP - 1) / WF_TJ_GROUP};
	s->id = atomic_fetch_add(&ids, 1) + 1;
	if (!(s->at = malloc((s->n_groups + 3) * sizeof *s->at))) {
		free(s);
		return WF_ERR_NOMEM;
	}
	/* one pass, a piece at a time: only a piece's text is ever held */
	struct wf_buf b = {0};
	uint64_t at = 0;
	for (size_t p = 0; p < s->n_groups + 2 && !b.oom; p++) {
		b.len = 0;
		piece(s, p, &b);
		s->at[p] = at;
		at += b.len;
	}
	s->at[s->n_groups + 2] = at;
	bool oom = b.oom;
	wf_buf_free(&b);
	if (oom) {
		wf_tj_free(s);
		return WF_ERR_NOMEM;
	}
	*out = s;
	*len = at;
	return WF_OK;
}

void wf_tj_free(struct wf_tj *s)
{
	if (!s)
		return;
	free(s->at);
	free(s);
}

uint64_t wf_tj_id(const struct wf_tj *s)
{
	return s->id;
}

/* The piece holding byte off (< the length): the last that starts at or
 * before it (no piece is empty). */
static size_t piece_of(const struct wf_tj *s, uint64_t off)
{
	size_t lo = 0, hi = s->n_groups + 2;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->at[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	return lo;
}

enum wf_err wf_tj_read(const struct wf_tj *s, uint64_t off, size_t n, char *buf)
{
	uint64_t len = s->at[s->n_groups + 2];
	if (off > len || n > len - off)
		return WF_ERR_RANGE;
	struct wf_buf b = {0};
	enum wf_err rc = WF_OK;
	size_t done = 0;
	while (done < n && rc == WF_OK) {
		uint64_t at = off + done;
		size_t p = piece_of(s, at);
		b.len = 0;
		piece(s, p, &b);
		if (b.oom)
			rc = WF_ERR_NOMEM;
		else if (b.len != s->at[p + 1] - s->at[p])
			rc = WF_ERR_RANGE; /* not the text measured: a bug */
		else {
			uint64_t in = at - s->at[p];
			size_t k = b.len - in < n - done ? (size_t)(b.len - in) : n - done;
			memcpy(buf + done, b.data + in, k);
			done += k;
		}
	}
	wf_buf_free(&b);
	return rc;
}
