/* wf_gguf_kv.c - GGUF key/values: the value-type table, the index, the
 * typed getters (wf_gguf_kv.h). */
#include "model/wf_gguf_kv.h"
#include "base/wf_common.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum kind { K_UINT, K_INT, K_FLOAT, K_BOOL, K_STR, K_ARR };

/* THE table of GGUF value types: one row each, in gguf.h's numbering. */
static const struct {
	const char *name; /* ggml's GGUF_TYPE_NAME */
	uint8_t size;     /* bytes of one value; 0 for strings and arrays */
	uint8_t kind;
} vtypes[WF_GT_COUNT] = {
	[WF_GT_UINT8] = {"u8", 1, K_UINT},     [WF_GT_INT8] = {"i8", 1, K_INT},
	[WF_GT_UINT16] = {"u16", 2, K_UINT},   [WF_GT_INT16] = {"i16", 2, K_INT},
	[WF_GT_UINT32] = {"u32", 4, K_UINT},   [WF_GT_INT32] = {"i32", 4, K_INT},
	[WF_GT_FLOAT32] = {"f32", 4, K_FLOAT}, [WF_GT_BOOL] = {"bool", 1, K_BOOL},
	[WF_GT_STRING] = {"str", 0, K_STR},    [WF_GT_ARRAY] = {"arr", 0, K_ARR},
	[WF_GT_UINT64] = {"u64", 8, K_UINT},   [WF_GT_INT64] = {"i64", 8, K_INT},
	[WF_GT_FLOAT64] = {"f64", 8, K_FLOAT},
};

unsigned wf_gguf_type_size(uint32_t t)
{
	return t < WF_GT_COUNT ? vtypes[t].size : 0;
}

const char *wf_gguf_type_name(uint32_t t)
{
	return t < WF_GT_COUNT ? vtypes[t].name : "?";
}

bool wf_gguf_type_is_int(uint32_t t)
{
	return t < WF_GT_COUNT && (vtypes[t].kind == K_UINT || vtypes[t].kind == K_INT);
}

/* ---------------------------------------------------------------- the index */

struct wf_gguf_kvs *wf_gguf_kvs_new(size_t cap)
{
	struct wf_gguf_kvs *ix = calloc(1, sizeof *ix);
	if (!ix)
		return NULL;
	size_t slots = 16;
	while (slots <= 2 * cap && slots < SIZE_MAX / 4)
		slots *= 2;
	ix->kv = calloc(cap ? cap : 1, sizeof *ix->kv);
	ix->slot = calloc(slots, sizeof *ix->slot);
	if (!ix->kv || !ix->slot || cap > UINT32_MAX - 1) {
		wf_gguf_kvs_free(ix);
		return NULL;
	}
	ix->cap = cap;
	ix->n_slot = slots;
	wf_hash_key_init(&ix->hkey);
	return ix;
}

void wf_gguf_kvs_free(struct wf_gguf_kvs *ix)
{
	if (!ix)
		return;
	free(ix->kv);
	free(ix->slot);
	free(ix);
}

/* Whether data[off .. off + n) lies in data[0..len). */
static bool inside(uint64_t len, uint64_t off, uint64_t n)
{
	return off <= len && n <= len - off;
}

/* The slot that holds key (n bytes) or the empty one where it would go. */
static size_t slot_of(const struct wf_gguf_kvs *ix, const uint8_t *data, uint64_t len, const void *key, size_t n)
{
	size_t mask = ix->n_slot - 1, h = (size_t)wf_hash(&ix->hkey, key, n) & mask;
	for (;; h = (h + 1) & mask) {
		uint32_t s = ix->slot[h];
		if (!s)
			return h;
		const struct wf_gguf_kv *e = &ix->kv[s - 1];
		if (e->key_len == n && inside(len, e->key, n) && memcmp(data + e->key, key, n) == 0)
			return h;
	}
}

int wf_gguf_kvs_add(struct wf_gguf_kvs *ix, const uint8_t *data, uint64_t len, const struct wf_gguf_kv *kv)
{
	if (ix->n >= ix->cap || !inside(len, kv->key, kv->key_len))
		return -1;
	size_t h = slot_of(ix, data, len, data + kv->key, (size_t)kv->key_len);
	if (ix->slot[h])
		return 0;
	ix->kv[ix->n] = *kv;
	ix->slot[h] = (uint32_t)++ix->n;
	return 1;
}

int64_t wf_gguf_findn(const struct wf_gguf_vals *v, const void *key, size_t n)
{
	if (!v->ix || !v->data || !v->ix->n)
		return -1;
	uint32_t s = v->ix->slot[slot_of(v->ix, v->data, v->len, key, n)];
	return s ? (int64_t)s - 1 : -1;
}

int64_t wf_gguf_find(const struct wf_gguf_vals *v, const char *key)
{
	return wf_gguf_findn(v, key, strlen(key));
}

const struct wf_gguf_kv *wf_gguf_at(const struct wf_gguf_vals *v, int64_t id)
{
	return v->ix && id >= 0 && (uint64_t)id < v->ix->n ? &v->ix->kv[id] : NULL;
}

const uint8_t *wf_gguf_key(const struct wf_gguf_vals *v, int64_t id, uint64_t *n)
{
	const struct wf_gguf_kv *e = wf_gguf_at(v, id);
	if (!e || !v->data || !inside(v->len, e->key, e->key_len))
		return NULL;
	*n = e->key_len;
	return v->data + e->key;
}

/* ---------------------------------------------------------------- getters */

const uint8_t *wf_gguf_raw(const struct wf_gguf_vals *v, int64_t id, uint64_t *n)
{
	const struct wf_gguf_kv *e = wf_gguf_at(v, id);
	uint64_t start = e && e->type == WF_GT_ARRAY ? e->val - 12 : e ? e->val : 0;
	if (!e || !v->data || e->val < 12 || start > e->end || !inside(v->len, start, e->end - start))
		return NULL;
	*n = e->end - start;
	return v->data + start;
}

/* Entry id if it is of type `type` (ARRAY: with elements of kind `ek`, or
 * any when ek < 0) and its extent lies in the file; else why not. */
static enum wf_gguf_got entry(const struct wf_gguf_vals *v, int64_t id, const struct wf_gguf_kv **out)
{
	const struct wf_gguf_kv *e = wf_gguf_at(v, id);
	if (!e || !v->data)
		return WF_GGUF_ABSENT;
	if (e->val > e->end || !inside(v->len, e->val, e->end - e->val))
		return WF_GGUF_BAD;
	*out = e;
	return WF_GGUF_OK;
}

/* The integer of type t at p (its bytes checked present) as a signed
 * 128-bit-free pair: *neg for a negative value, *mag its magnitude. */
static void read_int(uint32_t t, const uint8_t *p, bool *neg, uint64_t *mag)
{
	uint64_t u = 0;
	unsigned n = vtypes[t].size;
	for (unsigned i = 0; i < n; i++)
		u |= (uint64_t)p[i] << (8 * i);
	*neg = vtypes[t].kind == K_INT && (u >> (8 * n - 1)) & 1;
	if (*neg && n < 8)
		u |= ~0ull << (8 * n);
	*mag = *neg ? 0 - u : u; /* two's complement: the magnitude of INT64_MIN is 2^63 */
}

/* An integer of type t at p in [min, max]. */
static enum wf_gguf_got int_in(uint32_t t, const uint8_t *p, int64_t min, int64_t max, int64_t *out)
{
	bool neg;
	uint64_t mag;
	read_int(t, p, &neg, &mag);
	if (neg ? mag > (uint64_t)INT64_MAX + 1 : mag > (uint64_t)INT64_MAX)
		return WF_GGUF_RANGE;
	int64_t x = neg ? (mag == (uint64_t)INT64_MAX + 1 ? INT64_MIN : -(int64_t)mag) : (int64_t)mag;
	if (x < min || x > max)
		return WF_GGUF_RANGE;
	*out = x;
	return WF_GGUF_OK;
}

static double float_at(uint32_t t, const uint8_t *p)
{
	if (t == WF_GT_FLOAT32) {
		uint32_t u = wf_le32(p);
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	uint64_t u = wf_le64(p);
	double d;
	memcpy(&d, &u, 8);
	return d;
}

/* A scalar entry of one of the kinds in mask (bit per kind), whole in its extent. */
static enum wf_gguf_got scalar(const struct wf_gguf_vals *v, int64_t id, unsigned mask, const struct wf_gguf_kv **e)
{
	enum wf_gguf_got g = entry(v, id, e);
	if (g != WF_GGUF_OK)
		return g;
	if ((*e)->type >= WF_GT_COUNT || !(mask >> vtypes[(*e)->type].kind & 1))
		return WF_GGUF_TYPE;
	return (*e)->end - (*e)->val == vtypes[(*e)->type].size ? WF_GGUF_OK : WF_GGUF_BAD;
}

enum wf_gguf_got wf_gguf_uint(const struct wf_gguf_vals *v, int64_t id, uint64_t max, uint64_t *out)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = scalar(v, id, 1u << K_UINT | 1u << K_INT, &e);
	if (g != WF_GGUF_OK)
		return g;
	bool neg;
	uint64_t mag;
	read_int(e->type, v->data + e->val, &neg, &mag);
	if (neg || mag > max)
		return WF_GGUF_RANGE;
	*out = mag;
	return WF_GGUF_OK;
}

enum wf_gguf_got wf_gguf_int(const struct wf_gguf_vals *v, int64_t id, int64_t min, int64_t max, int64_t *out)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = scalar(v, id, 1u << K_UINT | 1u << K_INT, &e);
	return g != WF_GGUF_OK ? g : int_in(e->type, v->data + e->val, min, max, out);
}

enum wf_gguf_got wf_gguf_float(const struct wf_gguf_vals *v, int64_t id, double *out)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = scalar(v, id, 1u << K_FLOAT, &e);
	if (g == WF_GGUF_OK)
		*out = float_at(e->type, v->data + e->val);
	return g;
}

enum wf_gguf_got wf_gguf_bool(const struct wf_gguf_vals *v, int64_t id, bool *out)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = scalar(v, id, 1u << K_BOOL, &e);
	if (g == WF_GGUF_OK)
		*out = v->data[e->val] != 0;
	return g;
}

/* The string whose 8-byte length is at data[*pos], inside [*pos, end). */
static enum wf_gguf_got str_at(const struct wf_gguf_vals *v, uint64_t *pos, uint64_t end, const uint8_t **p,
			       uint64_t *n)
{
	if (*pos > end || end - *pos < 8)
		return WF_GGUF_BAD;
	uint64_t len = wf_le64(v->data + *pos);
	if (len > end - *pos - 8)
		return WF_GGUF_BAD;
	*p = v->data + *pos + 8;
	*n = len;
	*pos += 8 + len;
	return WF_GGUF_OK;
}

enum wf_gguf_got wf_gguf_str(const struct wf_gguf_vals *v, int64_t id, const uint8_t **p, uint64_t *n)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = entry(v, id, &e);
	if (g != WF_GGUF_OK)
		return g;
	if (e->type != WF_GT_STRING)
		return WF_GGUF_TYPE;
	uint64_t pos = e->val;
	if ((g = str_at(v, &pos, e->end, p, n)) == WF_GGUF_OK && pos != e->end)
		return WF_GGUF_BAD;
	return g;
}

enum wf_gguf_got wf_gguf_arr(const struct wf_gguf_vals *v, int64_t id, uint32_t *elem, uint64_t *count)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = entry(v, id, &e);
	if (g != WF_GGUF_OK)
		return g;
	if (e->type != WF_GT_ARRAY)
		return WF_GGUF_TYPE;
	*elem = e->elem;
	*count = e->count;
	return WF_GGUF_OK;
}

/* Element i of a scalar array of a kind in mask: its bytes. */
static enum wf_gguf_got arr_elem(const struct wf_gguf_vals *v, int64_t id, uint64_t i, unsigned mask,
				 const struct wf_gguf_kv **e, const uint8_t **p)
{
	enum wf_gguf_got g = entry(v, id, e);
	if (g != WF_GGUF_OK)
		return g;
	if ((*e)->type != WF_GT_ARRAY || (*e)->elem >= WF_GT_COUNT || !(mask >> vtypes[(*e)->elem].kind & 1))
		return WF_GGUF_TYPE;
	if (i >= (*e)->count)
		return WF_GGUF_RANGE;
	uint64_t sz = vtypes[(*e)->elem].size, bytes;
	if (!wf_mul_ok((*e)->count, sz, &bytes) || bytes != (*e)->end - (*e)->val)
		return WF_GGUF_BAD;
	*p = v->data + (*e)->val + i * sz;
	return WF_GGUF_OK;
}

enum wf_gguf_got wf_gguf_arr_int(const struct wf_gguf_vals *v, int64_t id, uint64_t i, int64_t min, int64_t max,
				 int64_t *out)
{
	const struct wf_gguf_kv *e;
	const uint8_t *p;
	enum wf_gguf_got g = arr_elem(v, id, i, 1u << K_UINT | 1u << K_INT, &e, &p);
	return g != WF_GGUF_OK ? g : int_in(e->elem, p, min, max, out);
}

enum wf_gguf_got wf_gguf_arr_float(const struct wf_gguf_vals *v, int64_t id, uint64_t i, double *out)
{
	const struct wf_gguf_kv *e;
	const uint8_t *p;
	enum wf_gguf_got g = arr_elem(v, id, i, 1u << K_FLOAT, &e, &p);
	if (g == WF_GGUF_OK)
		*out = float_at(e->elem, p);
	return g;
}

enum wf_gguf_got wf_gguf_arr_str_next(const struct wf_gguf_vals *v, int64_t id, struct wf_gguf_it *it,
				      const uint8_t **p, uint64_t *n)
{
	const struct wf_gguf_kv *e;
	enum wf_gguf_got g = entry(v, id, &e);
	if (g != WF_GGUF_OK)
		return g;
	if (e->type != WF_GT_ARRAY || e->elem != WF_GT_STRING)
		return WF_GGUF_TYPE;
	if (it->i >= e->count)
		return it->i == e->count && it->pos != 0 && it->pos != e->end ? WF_GGUF_BAD : WF_GGUF_RANGE;
	if (it->i == 0)
		it->pos = e->val;
	if ((g = str_at(v, &it->pos, e->end, p, n)) == WF_GGUF_OK)
		it->i++;
	return g;
}

enum wf_gguf_got wf_gguf_arr_str(const struct wf_gguf_vals *v, int64_t id, uint64_t i, const uint8_t **p,
				 uint64_t *n)
{
	struct wf_gguf_it it = {0};
	enum wf_gguf_got g;
	do
		g = wf_gguf_arr_str_next(v, id, &it, p, n);
	while (g == WF_GGUF_OK && it.i <= i);
	return g;
}

bool wf_gguf_get_int(const struct wf_gguf_vals *v, const char *key, int64_t *out)
{
	int64_t id = wf_gguf_find(v, key);
	bool b;
	if (wf_gguf_bool(v, id, &b) == WF_GGUF_OK) {
		*out = b;
		return true;
	}
	return wf_gguf_int(v, id, INT64_MIN, INT64_MAX, out) == WF_GGUF_OK;
}

bool wf_gguf_get_num(const struct wf_gguf_vals *v, const char *key, double *out)
{
	double x;
	if (wf_gguf_float(v, wf_gguf_find(v, key), &x) != WF_GGUF_OK || !isfinite(x))
		return false;
	*out = x;
	return true;
}

const uint8_t *wf_gguf_get_str(const struct wf_gguf_vals *v, const char *key, size_t *n)
{
	const uint8_t *p;
	uint64_t len;
	if (wf_gguf_str(v, wf_gguf_find(v, key), &p, &len) != WF_GGUF_OK)
		return NULL;
	*n = (size_t)len;
	return p;
}

int64_t wf_gguf_arch_int(const struct wf_gguf_vals *v, const char *arch, const char *rest, int64_t min, int64_t max)
{
	char key[128];
	int64_t x;
	int w = snprintf(key, sizeof key, "%s.%s", arch, rest);
	if (w < 0 || (size_t)w >= sizeof key)
		return 0; /* longer than any key of an architecture */
	return wf_gguf_int(v, wf_gguf_find(v, key), min, max, &x) == WF_GGUF_OK ? x : 0;
}
