/* wf_gguf_w.c - writing a GGUF v3 header (wf_gguf_w.h). */
#include "model/wf_gguf_w.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* gguf.cpp's limits on what it reads back: longer strings and arrays are
 * refused by llama.cpp, so none is written. */
#define STR_MAX ((uint64_t)1 << 30)
#define ARR_MAX ((uint64_t)1 << 30)

void wf_gguf_w_init(struct wf_gguf_w *w)
{
	memset(w, 0, sizeof *w);
}

void wf_gguf_w_free(struct wf_gguf_w *w)
{
	wf_buf_free(&w->kv);
	wf_buf_free(&w->ti);
	wf_buf_free(&w->keys);
	free(w->slots);
	memset(w, 0, sizeof *w);
}

static bool failed(struct wf_gguf_w *w)
{
	if (w->rc == WF_OK && (w->kv.oom || w->ti.oom || w->keys.oom))
		wf_fail(w->err, (w->rc = WF_ERR_NOMEM), "out of memory");
	return w->rc != WF_OK;
}

__attribute__((format(printf, 3, 4))) static void fail(struct wf_gguf_w *w, enum wf_err rc, const char *fmt, ...)
{
	if (w->rc != WF_OK)
		return;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(w->err, sizeof w->err, fmt, ap);
	va_end(ap);
	w->rc = rc;
}

static void put_u32(struct wf_buf *b, uint32_t v)
{
	uint8_t p[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	wf_buf_put(b, p, 4);
}

static void put_u64(struct wf_buf *b, uint64_t v)
{
	put_u32(b, (uint32_t)v);
	put_u32(b, (uint32_t)(v >> 32));
}

static void put_str(struct wf_gguf_w *w, struct wf_buf *b, const char *s, size_t n)
{
	if (n > STR_MAX) {
		fail(w, WF_ERR_UNSUP, "a string of %zu bytes is longer than GGUF allows", n);
		return;
	}
	uint8_t t[64]; /* length and a short string in one append: Llama 3's 408,000 tokens and merges */
	for (int i = 0; i < 8; i++)
		t[i] = (uint8_t)((uint64_t)n >> (8 * i));
	if (n <= sizeof t - 8) {
		memcpy(t + 8, s, n);
		wf_buf_put(b, t, 8 + n);
		return;
	}
	wf_buf_put(b, t, 8);
	wf_buf_put(b, s, n);
}

/* The slot of key k: where it is, or the empty one it would go in. */
static size_t slot_of(const struct wf_gguf_w *w, const char *k)
{
	size_t mask = w->n_slots - 1, i = (size_t)wf_hash(&w->hkey, k, strlen(k)) & mask;
	while (w->slots[i] && strcmp(w->keys.data + w->slots[i] - 1, k) != 0)
		i = (i + 1) & mask;
	return i;
}

bool wf_gguf_w_has(const struct wf_gguf_w *w, const char *key)
{
	return w->n_slots && w->slots[slot_of(w, key)];
}

/* Room for one more key in the table (rebuilt twice as large past half
 * full, so adding n keys is linear); false when out of memory. */
static bool grow(struct wf_gguf_w *w)
{
	if (w->n_slots && (w->n_kv + 1) * 2 < w->n_slots)
		return true;
	size_t n = w->n_slots ? w->n_slots * 2 : 64;
	uint64_t *old = w->slots;
	size_t old_n = w->n_slots;
	if (!(w->slots = calloc(n, sizeof *w->slots))) {
		w->slots = old;
		return false;
	}
	if (!old_n)
		wf_hash_key_init(&w->hkey);
	w->n_slots = n;
	for (size_t i = 0; i < old_n; i++)
		if (old[i])
			w->slots[slot_of(w, w->keys.data + old[i] - 1)] = old[i];
	free(old);
	return true;
}

/* Starts key/value `key` of type t: false (the writer failed) if it
 * cannot be added. */
static bool key(struct wf_gguf_w *w, const char *k, enum wf_gtype t)
{
	if (failed(w))
		return false;
	if (w->in_arr) {
		fail(w, WF_ERR_RANGE, "key %s: inside an unfinished array", k);
		return false;
	}
	for (const char *const *d = w->drop; d && *d && t != WF_GT_ARRAY; d++)
		if (strcmp(*d, k) == 0)
			return false; /* skipped, not failed */
	if (!*k || wf_gguf_w_has(w, k)) {
		fail(w, WF_ERR_RANGE, *k ? "key %s written twice" : "an empty key%s", k);
		return false;
	}
	if (!grow(w)) {
		fail(w, WF_ERR_NOMEM, "out of memory");
		return false;
	}
	uint64_t at = w->keys.len;
	wf_buf_put(&w->keys, k, strlen(k) + 1);
	if (w->keys.oom)
		return !failed(w);
	w->slots[slot_of(w, k)] = at + 1;
	put_str(w, &w->kv, k, strlen(k));
	put_u32(&w->kv, (uint32_t)t);
	w->n_kv++;
	return !failed(w);
}

void wf_gguf_w_u32(struct wf_gguf_w *w, const char *k, uint32_t v)
{
	if (key(w, k, WF_GT_UINT32))
		put_u32(&w->kv, v);
}

void wf_gguf_w_i32(struct wf_gguf_w *w, const char *k, int32_t v)
{
	if (key(w, k, WF_GT_INT32))
		put_u32(&w->kv, (uint32_t)v);
}

void wf_gguf_w_u64(struct wf_gguf_w *w, const char *k, uint64_t v)
{
	if (key(w, k, WF_GT_UINT64))
		put_u64(&w->kv, v);
}

void wf_gguf_w_f32(struct wf_gguf_w *w, const char *k, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	if (key(w, k, WF_GT_FLOAT32))
		put_u32(&w->kv, u);
}

void wf_gguf_w_bool(struct wf_gguf_w *w, const char *k, bool v)
{
	if (key(w, k, WF_GT_BOOL))
		wf_buf_putc(&w->kv, v ? 1 : 0);
}

void wf_gguf_w_str(struct wf_gguf_w *w, const char *k, const char *s, size_t n)
{
	if (key(w, k, WF_GT_STRING))
		put_str(w, &w->kv, s, n);
}

void wf_gguf_w_raw(struct wf_gguf_w *w, const char *k, enum wf_gtype t, const void *val, size_t n)
{
	if (key(w, k, t))
		wf_buf_put(&w->kv, val, n);
}

void wf_gguf_w_arr_begin(struct wf_gguf_w *w, const char *k, enum wf_gtype elem, uint64_t count)
{
	if (elem == WF_GT_ARRAY || (unsigned)elem > WF_GT_FLOAT64) {
		fail(w, WF_ERR_RANGE, "key %s: arrays of type %d are not written", k, (int)elem);
		return;
	}
	if (count > ARR_MAX) {
		fail(w, WF_ERR_UNSUP, "key %s: %" PRIu64 " elements is more than GGUF allows", k, count);
		return;
	}
	if (!key(w, k, WF_GT_ARRAY))
		return;
	put_u32(&w->kv, (uint32_t)elem);
	put_u64(&w->kv, count);
	w->in_arr = true;
	w->arr_left = count;
	w->arr_type = elem;
}

/* Whether one more element of type t may be written. */
static bool elem(struct wf_gguf_w *w, enum wf_gtype t)
{
	if (failed(w))
		return false;
	if (!w->in_arr || w->arr_type != t || !w->arr_left) {
		fail(w, WF_ERR_RANGE, "an array element of type %d does not fit the array being written", (int)t);
		return false;
	}
	w->arr_left--;
	return true;
}

void wf_gguf_w_arr_str(struct wf_gguf_w *w, const char *s, size_t n)
{
	if (elem(w, WF_GT_STRING))
		put_str(w, &w->kv, s, n);
}

void wf_gguf_w_arr_f32(struct wf_gguf_w *w, float v)
{
	uint32_t u;
	memcpy(&u, &v, 4);
	if (elem(w, WF_GT_FLOAT32))
		put_u32(&w->kv, u);
}

void wf_gguf_w_arr_i32(struct wf_gguf_w *w, int32_t v)
{
	if (elem(w, WF_GT_INT32))
		put_u32(&w->kv, (uint32_t)v);
}

void wf_gguf_w_arr_u32(struct wf_gguf_w *w, uint32_t v)
{
	if (elem(w, WF_GT_UINT32))
		put_u32(&w->kv, v);
}

void wf_gguf_w_arr_bool(struct wf_gguf_w *w, bool v)
{
	if (elem(w, WF_GT_BOOL))
		wf_buf_putc(&w->kv, v ? 1 : 0);
}

void wf_gguf_w_arr_end(struct wf_gguf_w *w)
{
	if (failed(w))
		return;
	if (!w->in_arr || w->arr_left)
		fail(w, WF_ERR_RANGE, "an array ended with %" PRIu64 " elements missing", w->arr_left);
	w->in_arr = false;
}

void wf_gguf_w_tensor(struct wf_gguf_w *w, const char *name, uint32_t ndim, const uint64_t *ne, uint32_t ggml_type,
		      uint64_t nbytes, uint64_t *offset)
{
	if (failed(w))
		return;
	size_t n = strlen(name);
	uint64_t padded, end;
	if (n == 0 || n >= WF_GGUF_NAME_MAX || ndim < 1 || ndim > 4) {
		fail(w, WF_ERR_UNSUP, "tensor %s: a name of %zu bytes or %u dims does not fit GGUF", name, n, ndim);
		return;
	}
	if (!wf_add_ok(nbytes, WF_GGUF_ALIGN - 1, &padded) ||
	    !wf_add_ok(w->data_len, padded - padded % WF_GGUF_ALIGN, &end)) {
		fail(w, WF_ERR_UNSUP, "tensor %s: the data section would pass 2^64 bytes", name);
		return;
	}
	put_str(w, &w->ti, name, n);
	put_u32(&w->ti, ndim);
	for (uint32_t d = 0; d < ndim; d++)
		put_u64(&w->ti, ne[d]);
	put_u32(&w->ti, ggml_type);
	put_u64(&w->ti, w->data_len);
	if (offset)
		*offset = w->data_len;
	w->data_len = end;
	w->n_tensors++;
}

enum wf_err wf_gguf_w_finish(struct wf_gguf_w *w, char **out, size_t *len, char *err)
{
	*out = NULL;
	*len = 0;
	if (!failed(w) && w->in_arr)
		fail(w, WF_ERR_RANGE, "an array was not ended");
	if (failed(w))
		return wf_fail(err, w->rc, "%s", w->err);
	/* The header is made in the larger of the two buffers, grown in place
	 * (realloc remaps a big block) with its bytes moved up, the other
	 * copied in: a copy of both would hold the larger twice at the peak
	 * (39 MB of tensor infos for 1,000,000 tensors, docs/security.md's
	 * bound; Llama 3's 8 MB of tokenizer key/values, whose copy into
	 * fresh pages cost 2,000 page faults). */
	size_t head = 24 + w->kv.len, total, pad;
	if (w->kv.len > SIZE_MAX - 24 || w->ti.len > SIZE_MAX - head - WF_GGUF_ALIGN)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	total = head + w->ti.len;
	pad = (WF_GGUF_ALIGN - total % WF_GGUF_ALIGN) % WF_GGUF_ALIGN;
	bool in_kv = w->kv.len > w->ti.len;
	struct wf_buf *grown = in_kv ? &w->kv : &w->ti;
	char *p = realloc(grown->data, total + pad);
	if (!p)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	size_t kv_len = w->kv.len, ti_len = w->ti.len;
	*grown = (struct wf_buf){0}; /* the header owns it now */
	if (in_kv) {
		memmove(p + 24, p, kv_len);
		if (ti_len)
			memcpy(p + head, w->ti.data, ti_len);
	} else {
		memmove(p + head, p, ti_len);
		if (kv_len)
			memcpy(p + 24, w->kv.data, kv_len);
	}
	struct wf_buf pre = {0};
	put_u32(&pre, 0x46554747u); /* "GGUF" */
	put_u32(&pre, 3);
	put_u64(&pre, w->n_tensors);
	put_u64(&pre, w->n_kv);
	if (pre.oom) {
		free(p);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	memcpy(p, pre.data, 24);
	wf_buf_free(&pre);
	memset(p + total, 0, pad);
	*out = p;
	*len = total + pad;
	return WF_OK;
}
