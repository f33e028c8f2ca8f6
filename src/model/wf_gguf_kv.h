/* wf_gguf_kv.h - GGUF key/values: the one value-type table, the index the
 * parser builds once, and typed getters over it (as ggml's gguf.cpp has
 * one type table and gguf_get_val_*; no code of it).
 *
 * wf_gguf.h includes this header: it is the GGUF value API.  It lives in
 * a module of its own, needing only base/, because the metadata.json
 * generator (wf_gguf_meta) and the header writer (wf_gguf_w) need the
 * value types too, and wf_gguf.c, which builds a wf_model, already calls
 * them: one module for both would be a cycle (docs/design.md, Layers).
 *
 * The index keeps offsets, never pointers: a set of many parts unmaps its
 * first part once the header is parsed and maps it again on use
 * (wf_maps.h), so every getter is given the file's bytes again
 * (struct wf_gguf_vals) and checks every position against them and
 * against the extent the parser found.  A file rewritten in place gives
 * WF_GGUF_BAD, never bytes from outside the value.  Every number is read
 * little-endian whatever the host.
 */
#ifndef WF_GGUF_KV_H
#define WF_GGUF_KV_H

#include "base/wf_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* GGUF value types (gguf.h's enum gguf_type, same numbers). */
enum wf_gtype {
	WF_GT_UINT8 = 0,
	WF_GT_INT8 = 1,
	WF_GT_UINT16 = 2,
	WF_GT_INT16 = 3,
	WF_GT_UINT32 = 4,
	WF_GT_INT32 = 5,
	WF_GT_FLOAT32 = 6,
	WF_GT_BOOL = 7,
	WF_GT_STRING = 8,
	WF_GT_ARRAY = 9,
	WF_GT_UINT64 = 10,
	WF_GT_INT64 = 11,
	WF_GT_FLOAT64 = 12,
	WF_GT_COUNT
};

/* Bytes of one value of type t: 1..8 for the scalars, 0 for STRING,
 * ARRAY and a number that is no type. */
unsigned wf_gguf_type_size(uint32_t t);
/* ggml's short name of type t ("u8", "i32", "f32", "bool", "str", "arr",
 * ...), or "?" for a number that is no type. */
const char *wf_gguf_type_name(uint32_t t);
/* Whether t is one of the eight integer types (not BOOL). */
bool wf_gguf_type_is_int(uint32_t t);

/* One key/value, as offsets into its file. */
struct wf_gguf_kv {
	uint64_t key, key_len; /* the key's bytes: data[key .. key + key_len) */
	uint64_t val, end;     /* the value's bytes after its type (an array's after its element type and
				* count): data[val .. end) */
	uint64_t count;        /* an array's elements; 0 for the rest */
	uint8_t type, elem;    /* enum wf_gtype; an array's element type (never ARRAY), else 0 */
};

/* The key/values of one GGUF file, in file order, with a hash of their
 * keys (SipHash under a random key: names cannot be chosen to collide). */
struct wf_gguf_kvs {
	struct wf_gguf_kv *kv; /* [n] */
	size_t n, cap;
	uint32_t *slot;        /* [n_slot] entry + 1, 0 empty; n_slot a power of two > 2 * cap */
	size_t n_slot;
	struct wf_hash_key hkey;
};

/* An empty index with room for cap entries; NULL when out of memory. */
struct wf_gguf_kvs *wf_gguf_kvs_new(size_t cap);
/* Frees ix; safe on NULL. */
void wf_gguf_kvs_free(struct wf_gguf_kvs *ix);
/* Appends kv (whose key lies in data[0..len), checked) unless its key is
 * there already.  Returns 1 when added, 0 for a duplicate key (ggml
 * refuses a file with one, so does the parser), -1 when the key is not in
 * data or the index is full. */
int wf_gguf_kvs_add(struct wf_gguf_kvs *ix, const uint8_t *data, uint64_t len, const struct wf_gguf_kv *kv);

/* The key/values of a file as the getters read them: the index and the
 * bytes of the file it was built from (mapped now). */
struct wf_gguf_vals {
	const struct wf_gguf_kvs *ix;
	const uint8_t *data;
	uint64_t len;
};

/* What a getter found. */
enum wf_gguf_got {
	WF_GGUF_OK = 0,
	WF_GGUF_ABSENT,  /* no such key (or no index, or no bytes) */
	WF_GGUF_TYPE,    /* the value is of another type */
	WF_GGUF_RANGE,   /* a number outside the range asked for, or an element past the array's end */
	WF_GGUF_BAD,     /* the value's bytes no longer lie where the parser found them */
};

/* Key key's entry, or -1.  key is n bytes (_find: NUL-terminated). */
int64_t wf_gguf_findn(const struct wf_gguf_vals *v, const void *key, size_t n);
int64_t wf_gguf_find(const struct wf_gguf_vals *v, const char *key);
/* Entry id (0 <= id < ix->n) itself, or NULL. */
const struct wf_gguf_kv *wf_gguf_at(const struct wf_gguf_vals *v, int64_t id);
/* Entry id's key bytes (NULL when they are no longer in the file). */
const uint8_t *wf_gguf_key(const struct wf_gguf_vals *v, int64_t id, uint64_t *n);

/* Entry id's value as GGUF encodes it after the type field (an array's
 * from its element type on), to copy it as it is (wf_gguf_w_raw); NULL
 * when it no longer lies in the file. */
const uint8_t *wf_gguf_raw(const struct wf_gguf_vals *v, int64_t id, uint64_t *n);

/* Scalars of entry id (-1: absent).  _uint takes any integer type whose
 * value is in [0, max], _int any whose value is in [min, max] (a UINT64
 * above INT64_MAX is RANGE); _float FLOAT32 or FLOAT64 (NaN and the
 * infinities are values, the caller judges them); _bool BOOL, true for
 * any non-zero byte as ggml reads it; _str STRING's bytes (GGUF strings
 * are bytes: not checked for UTF-8 here) and their count.  Nothing is
 * written to *out unless WF_GGUF_OK. */
enum wf_gguf_got wf_gguf_uint(const struct wf_gguf_vals *v, int64_t id, uint64_t max, uint64_t *out);
enum wf_gguf_got wf_gguf_int(const struct wf_gguf_vals *v, int64_t id, int64_t min, int64_t max, int64_t *out);
enum wf_gguf_got wf_gguf_float(const struct wf_gguf_vals *v, int64_t id, double *out);
enum wf_gguf_got wf_gguf_bool(const struct wf_gguf_vals *v, int64_t id, bool *out);
enum wf_gguf_got wf_gguf_str(const struct wf_gguf_vals *v, int64_t id, const uint8_t **p, uint64_t *n);

/* By key (NUL-terminated), for a caller that wants a usable value or
 * nothing (which of ABSENT, TYPE, RANGE and BAD does not matter to it):
 * _int a whole number (any integer type, or a BOOL as 0 or 1: config
 * fields that are counts or flags), _num a finite FLOAT32 or FLOAT64, each
 * true when *out was set; _str a STRING's bytes and their count, or NULL.
 * _arch_int reads "ARCH.rest" (a key of architecture arch) as an integer
 * in [min, max] (not BOOL), and gives 0 for anything else. */
bool wf_gguf_get_int(const struct wf_gguf_vals *v, const char *key, int64_t *out);
bool wf_gguf_get_num(const struct wf_gguf_vals *v, const char *key, double *out);
const uint8_t *wf_gguf_get_str(const struct wf_gguf_vals *v, const char *key, size_t *n);
int64_t wf_gguf_arch_int(const struct wf_gguf_vals *v, const char *arch, const char *rest, int64_t min, int64_t max);

/* An ARRAY's element type and count (the count was checked against the
 * bytes by the parser: at least a length of 8 bytes per string). */
enum wf_gguf_got wf_gguf_arr(const struct wf_gguf_vals *v, int64_t id, uint32_t *elem, uint64_t *count);
/* Element i of an ARRAY of integers (as _int), of floats (as _float).
 * An index past the end is RANGE; another element type is TYPE. */
enum wf_gguf_got wf_gguf_arr_int(const struct wf_gguf_vals *v, int64_t id, uint64_t i, int64_t min, int64_t max,
				 int64_t *out);
enum wf_gguf_got wf_gguf_arr_float(const struct wf_gguf_vals *v, int64_t id, uint64_t i, double *out);

/* The strings of an ARRAY of STRING, in order: start with it zeroed and
 * call _next until it returns anything but WF_GGUF_OK (WF_GGUF_RANGE
 * after the last string).  Element i by itself is O(i): _arr_str. */
struct wf_gguf_it {
	uint64_t i, pos;
};
enum wf_gguf_got wf_gguf_arr_str_next(const struct wf_gguf_vals *v, int64_t id, struct wf_gguf_it *it,
				      const uint8_t **p, uint64_t *n);
enum wf_gguf_got wf_gguf_arr_str(const struct wf_gguf_vals *v, int64_t id, uint64_t i, const uint8_t **p,
				 uint64_t *n);

#endif
