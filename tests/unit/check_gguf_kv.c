/* check_gguf_kv.c - the GGUF value API (model/wf_gguf_kv.h): the value-type
 * table, the index wf_gguf_parse builds, and every typed getter, over GGUF
 * files built here byte by byte (little-endian, whatever the host).
 *
 * Each parse runs on a heap copy of exactly the bytes under test, so a read
 * one byte past the end is an AddressSanitizer report (make SANITIZE=1).
 */
#include <check.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_buf.h"
#include "model/wf_gguf.h"

/* ---- byte builders ---- */

static void put_le(struct wf_buf *b, uint64_t v, int n)
{
	uint8_t p[8];
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, p, (size_t)n);
}

static void put_str(struct wf_buf *b, const void *s, size_t n)
{
	put_le(b, n, 8);
	wf_buf_put(b, s, n);
}

static void key(struct wf_buf *b, const char *k, uint32_t type)
{
	put_str(b, k, strlen(k));
	put_le(b, type, 4);
}

static void f32(struct wf_buf *b, float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	put_le(b, u, 4);
}

static void f64(struct wf_buf *b, double d)
{
	uint64_t u;
	memcpy(&u, &d, 8);
	put_le(b, u, 8);
}

static void head(struct wf_buf *b, uint64_t n_kv)
{
	wf_buf_put(b, "GGUF", 4);
	put_le(b, 3, 4);
	put_le(b, 0, 8); /* no tensors */
	put_le(b, n_kv, 8);
}

/* One key of every scalar type, a string that is not UTF-8, and arrays. */
static size_t build_all(struct wf_buf *b)
{
	head(b, 19);
	key(b, "u8", WF_GT_UINT8), put_le(b, 255, 1);
	key(b, "i8", WF_GT_INT8), put_le(b, 0x80, 1); /* -128 */
	key(b, "u16", WF_GT_UINT16), put_le(b, 65535, 2);
	key(b, "i16", WF_GT_INT16), put_le(b, 0xfffe, 2); /* -2 */
	key(b, "u32", WF_GT_UINT32), put_le(b, 4000000000u, 4);
	key(b, "i32", WF_GT_INT32), put_le(b, 0x7fffffff, 4);
	key(b, "f32", WF_GT_FLOAT32), f32(b, -1.5f);
	key(b, "bool", WF_GT_BOOL), put_le(b, 1, 1);
	key(b, "bool2", WF_GT_BOOL), put_le(b, 2, 1); /* ggml reads any non-zero byte as true */
	key(b, "str", WF_GT_STRING), put_str(b, "h\xffi", 3);
	key(b, "u64", WF_GT_UINT64), put_le(b, UINT64_MAX, 8);
	key(b, "i64", WF_GT_INT64), put_le(b, (uint64_t)INT64_MIN, 8);
	key(b, "f64", WF_GT_FLOAT64), f64(b, 0.1);
	key(b, "a_i16", WF_GT_ARRAY), put_le(b, WF_GT_INT16, 4), put_le(b, 3, 8);
	put_le(b, 1, 2), put_le(b, 0xffff, 2), put_le(b, 0x8000, 2);
	key(b, "a_f32", WF_GT_ARRAY), put_le(b, WF_GT_FLOAT32, 4), put_le(b, 2, 8);
	f32(b, 2.5f), f32(b, -0.0f);
	key(b, "a_str", WF_GT_ARRAY), put_le(b, WF_GT_STRING, 4), put_le(b, 3, 8);
	put_str(b, "a", 1), put_str(b, "", 0), put_str(b, "\xc3\x28", 2);
	key(b, "a_empty", WF_GT_ARRAY), put_le(b, WF_GT_STRING, 4), put_le(b, 0, 8);
	key(b, "a_u64", WF_GT_ARRAY), put_le(b, WF_GT_UINT64, 4), put_le(b, 1, 8), put_le(b, UINT64_MAX, 8);
	key(b, "a_f64", WF_GT_ARRAY), put_le(b, WF_GT_FLOAT64, 4), put_le(b, 1, 8), f64(b, 1e300);
	ck_assert(!b->oom);
	return b->len;
}

static uint8_t *copy(const struct wf_buf *b, size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(p);
	memcpy(p, b->data, n);
	return p;
}

static struct wf_model *parse(const uint8_t *p, size_t n)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_msg(wf_gguf_parse(&m, p, n, err) == WF_OK, "%s", err);
	ck_assert_ptr_nonnull(m->kvs);
	return m;
}

START_TEST(type_table)
{
	static const unsigned size[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};
	static const char *const name[] = {"u8", "i8", "u16", "i16", "u32", "i32", "f32",
					   "bool", "str", "arr", "u64", "i64", "f64"};
	ck_assert_int_eq(WF_GT_COUNT, 13);
	for (uint32_t t = 0; t < WF_GT_COUNT; t++) {
		ck_assert_uint_eq(wf_gguf_type_size(t), size[t]);
		ck_assert_str_eq(wf_gguf_type_name(t), name[t]);
		ck_assert(wf_gguf_type_is_int(t) == (t <= WF_GT_INT32 || t == WF_GT_UINT64 || t == WF_GT_INT64));
	}
	ck_assert_uint_eq(wf_gguf_type_size(13), 0);
	ck_assert_uint_eq(wf_gguf_type_size(UINT32_MAX), 0);
	ck_assert_str_eq(wf_gguf_type_name(13), "?");
	ck_assert(!wf_gguf_type_is_int(WF_GT_BOOL));
}
END_TEST

START_TEST(scalars)
{
	struct wf_buf b = {0};
	size_t n = build_all(&b);
	uint8_t *p = copy(&b, n);
	struct wf_model *m = parse(p, n);
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	uint64_t u;
	int64_t i;
	double d;
	bool t;
	ck_assert_uint_eq(v.ix->n, 19);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "u8"), UINT64_MAX, &u), WF_GGUF_OK);
	ck_assert_uint_eq(u, 255);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "u8"), 254, &u), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "i8"), INT64_MIN, INT64_MAX, &i), WF_GGUF_OK);
	ck_assert_int_eq(i, -128);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "i8"), UINT64_MAX, &u), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "i8"), -127, 0, &i), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "u16"), UINT64_MAX, &u), WF_GGUF_OK);
	ck_assert_uint_eq(u, 65535);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "i16"), INT64_MIN, INT64_MAX, &i), WF_GGUF_OK);
	ck_assert_int_eq(i, -2);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "u32"), UINT32_MAX, &u), WF_GGUF_OK);
	ck_assert_uint_eq(u, 4000000000u);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "u32"), INT32_MIN, INT32_MAX, &i), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "i32"), INT32_MIN, INT32_MAX, &i), WF_GGUF_OK);
	ck_assert_int_eq(i, INT32_MAX);
	/* a UINT64 above INT64_MAX: a uint, never an int */
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "u64"), UINT64_MAX, &u), WF_GGUF_OK);
	ck_assert_uint_eq(u, UINT64_MAX);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "u64"), INT64_MIN, INT64_MAX, &i), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "i64"), INT64_MIN, INT64_MAX, &i), WF_GGUF_OK);
	ck_assert(i == INT64_MIN);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "i64"), UINT64_MAX, &u), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_float(&v, wf_gguf_find(&v, "f32"), &d), WF_GGUF_OK);
	ck_assert(d == -1.5);
	ck_assert_int_eq(wf_gguf_float(&v, wf_gguf_find(&v, "f64"), &d), WF_GGUF_OK);
	ck_assert(d == 0.1);
	ck_assert_int_eq(wf_gguf_bool(&v, wf_gguf_find(&v, "bool"), &t), WF_GGUF_OK);
	ck_assert(t);
	ck_assert_int_eq(wf_gguf_bool(&v, wf_gguf_find(&v, "bool2"), &t), WF_GGUF_OK);
	ck_assert(t);
	const uint8_t *s;
	ck_assert_int_eq(wf_gguf_str(&v, wf_gguf_find(&v, "str"), &s, &u), WF_GGUF_OK);
	/* GGUF strings are bytes: a byte that is not UTF-8 comes back as it is */
	ck_assert_uint_eq(u, 3);
	ck_assert(memcmp(s, "h\xffi", 3) == 0);
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

START_TEST(wrong_types)
{
	struct wf_buf b = {0};
	size_t n = build_all(&b);
	uint8_t *p = copy(&b, n);
	struct wf_model *m = parse(p, n);
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	uint64_t u = 77;
	int64_t i = 77;
	double d = 77;
	bool t = false;
	const uint8_t *s = NULL;
	uint32_t et;
	/* every getter on every key of another type: TYPE, nothing written */
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "f32"), UINT64_MAX, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "bool"), UINT64_MAX, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_uint(&v, wf_gguf_find(&v, "str"), UINT64_MAX, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_int(&v, wf_gguf_find(&v, "a_i16"), INT64_MIN, INT64_MAX, &i), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_float(&v, wf_gguf_find(&v, "i32"), &d), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_bool(&v, wf_gguf_find(&v, "u8"), &t), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_str(&v, wf_gguf_find(&v, "a_str"), &s, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_arr(&v, wf_gguf_find(&v, "str"), &et, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_arr_int(&v, wf_gguf_find(&v, "a_f32"), 0, INT64_MIN, INT64_MAX, &i), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_arr_float(&v, wf_gguf_find(&v, "a_i16"), 0, &d), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_arr_str(&v, wf_gguf_find(&v, "a_i16"), 0, &s, &u), WF_GGUF_TYPE);
	ck_assert_int_eq(wf_gguf_arr_int(&v, wf_gguf_find(&v, "u8"), 0, INT64_MIN, INT64_MAX, &i), WF_GGUF_TYPE);
	ck_assert(u == 77 && i == 77 && d == 77 && !t && !s);
	/* absent keys, a prefix of a key, no index at all */
	ck_assert_int_eq(wf_gguf_find(&v, "nope"), -1);
	ck_assert_int_eq(wf_gguf_find(&v, "u"), -1);
	ck_assert_int_eq(wf_gguf_findn(&v, "u8x", 2), wf_gguf_find(&v, "u8"));
	ck_assert_int_eq(wf_gguf_uint(&v, -1, UINT64_MAX, &u), WF_GGUF_ABSENT);
	ck_assert_int_eq(wf_gguf_str(&v, 19, &s, &u), WF_GGUF_ABSENT);
	struct wf_gguf_vals none = {0};
	ck_assert_int_eq(wf_gguf_find(&none, "u8"), -1);
	ck_assert_int_eq(wf_gguf_float(&none, 0, &d), WF_GGUF_ABSENT);
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

START_TEST(arrays)
{
	struct wf_buf b = {0};
	size_t n = build_all(&b);
	uint8_t *p = copy(&b, n);
	struct wf_model *m = parse(p, n);
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	uint32_t et;
	uint64_t cnt, len;
	int64_t i;
	double d;
	const uint8_t *s;
	int64_t a = wf_gguf_find(&v, "a_i16");
	ck_assert_int_eq(wf_gguf_arr(&v, a, &et, &cnt), WF_GGUF_OK);
	ck_assert_uint_eq(et, WF_GT_INT16);
	ck_assert_uint_eq(cnt, 3);
	static const int64_t want[] = {1, -1, -32768};
	for (uint64_t k = 0; k < 3; k++) {
		ck_assert_int_eq(wf_gguf_arr_int(&v, a, k, INT64_MIN, INT64_MAX, &i), WF_GGUF_OK);
		ck_assert_int_eq(i, want[k]);
	}
	ck_assert_int_eq(wf_gguf_arr_int(&v, a, 3, INT64_MIN, INT64_MAX, &i), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_arr_int(&v, a, UINT64_MAX, INT64_MIN, INT64_MAX, &i), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_arr_int(&v, a, 1, 0, 10, &i), WF_GGUF_RANGE);
	int64_t f = wf_gguf_find(&v, "a_f32");
	ck_assert_int_eq(wf_gguf_arr_float(&v, f, 0, &d), WF_GGUF_OK);
	ck_assert(d == 2.5);
	ck_assert_int_eq(wf_gguf_arr_float(&v, f, 1, &d), WF_GGUF_OK);
	ck_assert(d == 0 && signbit(d)); /* the sign of zero kept */
	ck_assert_int_eq(wf_gguf_arr_float(&v, f, 2, &d), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_arr_float(&v, wf_gguf_find(&v, "a_f64"), 0, &d), WF_GGUF_OK);
	ck_assert(d == 1e300);
	ck_assert_int_eq(wf_gguf_arr_int(&v, wf_gguf_find(&v, "a_u64"), 0, INT64_MIN, INT64_MAX, &i), WF_GGUF_RANGE);
	/* strings: by iterator and by index, a non-UTF-8 one as its bytes */
	int64_t as = wf_gguf_find(&v, "a_str");
	struct wf_gguf_it it = {0};
	static const char *const ws[] = {"a", "", "\xc3\x28"};
	for (int k = 0; k < 3; k++) {
		ck_assert_int_eq(wf_gguf_arr_str_next(&v, as, &it, &s, &len), WF_GGUF_OK);
		ck_assert_uint_eq(len, strlen(ws[k]));
		ck_assert(memcmp(s, ws[k], len) == 0);
	}
	ck_assert_int_eq(wf_gguf_arr_str_next(&v, as, &it, &s, &len), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_arr_str_next(&v, as, &it, &s, &len), WF_GGUF_RANGE);
	ck_assert_int_eq(wf_gguf_arr_str(&v, as, 2, &s, &len), WF_GGUF_OK);
	ck_assert_uint_eq(len, 2);
	ck_assert_int_eq(wf_gguf_arr_str(&v, as, 3, &s, &len), WF_GGUF_RANGE);
	int64_t ae = wf_gguf_find(&v, "a_empty");
	struct wf_gguf_it it2 = {0};
	ck_assert_int_eq(wf_gguf_arr_str_next(&v, ae, &it2, &s, &len), WF_GGUF_RANGE);
	/* the raw value, as wf_gguf_w_raw copies it: element type, count, elements */
	const uint8_t *raw = wf_gguf_raw(&v, a, &len);
	ck_assert_ptr_nonnull(raw);
	ck_assert_uint_eq(len, 4 + 8 + 3 * 2);
	ck_assert_uint_eq(wf_le32(raw), WF_GT_INT16);
	raw = wf_gguf_raw(&v, wf_gguf_find(&v, "u16"), &len);
	ck_assert_uint_eq(len, 2);
	ck_assert_uint_eq(wf_le16(raw), 65535);
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

/* Every prefix of the file is refused by the parser (one line, no crash,
 * no read past the copy), and the getters over the whole file's index
 * given only a prefix of its bytes (a file that shrank) say BAD or ABSENT,
 * never read past it. */
START_TEST(truncated)
{
	struct wf_buf b = {0};
	size_t n = build_all(&b);
	for (size_t k = 0; k < n; k++) {
		uint8_t *p = copy(&b, k);
		struct wf_model *m = NULL;
		char err[WF_ERRLEN] = "";
		ck_assert_msg(wf_gguf_parse(&m, p, k, err) != WF_OK, "prefix of %zu bytes parsed", k);
		ck_assert(err[0] && !strchr(err, '\n'));
		free(p);
	}
	uint8_t *p = copy(&b, n);
	struct wf_model *m = parse(p, n);
	for (size_t k = 0; k < n; k += 7) {
		uint8_t *q = copy(&b, k);
		struct wf_gguf_vals v = {m->kvs, q, k};
		for (int64_t id = 0; id < (int64_t)m->kvs->n; id++) {
			const struct wf_gguf_kv *e = wf_gguf_at(&v, id);
			bool whole = e->end <= k;
			uint64_t u, len;
			int64_t i;
			double d;
			bool t;
			const uint8_t *s;
			enum wf_gguf_got g[] = {wf_gguf_uint(&v, id, UINT64_MAX, &u),
						wf_gguf_int(&v, id, INT64_MIN, INT64_MAX, &i), wf_gguf_float(&v, id, &d),
						wf_gguf_bool(&v, id, &t), wf_gguf_str(&v, id, &s, &len),
						wf_gguf_arr_int(&v, id, 0, INT64_MIN, INT64_MAX, &i),
						wf_gguf_arr_float(&v, id, 0, &d), wf_gguf_arr_str(&v, id, 2, &s, &len)};
			for (size_t j = 0; j < sizeof g / sizeof g[0]; j++)
				ck_assert(whole || (g[j] == WF_GGUF_BAD || g[j] == WF_GGUF_ABSENT));
			if (e->key + e->key_len > k)
				ck_assert_ptr_null(wf_gguf_key(&v, id, &u));
		}
		free(q);
	}
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

/* A string's length or an array's bytes changed after the parse (a file
 * rewritten in place): BAD, never bytes outside the value. */
START_TEST(rewritten)
{
	struct wf_buf b = {0};
	size_t n = build_all(&b);
	uint8_t *p = copy(&b, n);
	struct wf_model *m = parse(p, n);
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	const uint8_t *s;
	uint64_t len;
	const struct wf_gguf_kv *e = wf_gguf_at(&v, wf_gguf_find(&v, "str"));
	p[e->val] = 200; /* the string's length, now past its value */
	ck_assert_int_eq(wf_gguf_str(&v, wf_gguf_find(&v, "str"), &s, &len), WF_GGUF_BAD);
	p[e->val] = 2; /* shorter: the value no longer ends where it did */
	ck_assert_int_eq(wf_gguf_str(&v, wf_gguf_find(&v, "str"), &s, &len), WF_GGUF_BAD);
	const struct wf_gguf_kv *a = wf_gguf_at(&v, wf_gguf_find(&v, "a_str"));
	p[a->val + 8 + 1 + 7] = 0x80; /* the second string's length, huge */
	ck_assert_int_eq(wf_gguf_arr_str(&v, wf_gguf_find(&v, "a_str"), 1, &s, &len), WF_GGUF_BAD);
	ck_assert_int_eq(wf_gguf_arr_str(&v, wf_gguf_find(&v, "a_str"), 0, &s, &len), WF_GGUF_OK);
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

/* Counts no file can hold: refused by the parser before anything is
 * allocated; an index entry whose count disagrees with its bytes: BAD. */
START_TEST(huge_counts)
{
	static const uint32_t elems[] = {WF_GT_UINT8, WF_GT_UINT32, WF_GT_FLOAT64, WF_GT_STRING};
	static const uint64_t counts[] = {UINT64_MAX, UINT64_MAX / 8 + 1, (uint64_t)1 << 61, 1000};
	for (size_t e = 0; e < 4; e++)
		for (size_t c = 0; c < 4; c++) {
			struct wf_buf b = {0};
			head(&b, 1);
			key(&b, "a", WF_GT_ARRAY), put_le(&b, elems[e], 4), put_le(&b, counts[c], 8);
			put_le(&b, 0, 8);
			uint8_t *p = copy(&b, b.len);
			struct wf_model *m = NULL;
			char err[WF_ERRLEN];
			ck_assert_int_eq(wf_gguf_parse(&m, p, b.len, err), WF_ERR_FORMAT);
			ck_assert_msg(strstr(err, "metadata key 'a'"), "%s", err);
			free(p);
			wf_buf_free(&b);
		}
	struct wf_buf b = {0};
	head(&b, (uint64_t)1 << 62); /* more keys than bytes */
	uint8_t *p = copy(&b, b.len);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_gguf_parse(&m, p, b.len, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "n_kv"), "%s", err);
	free(p);
	wf_buf_free(&b);
	/* a hand-made index entry: 4 u32 elements claimed over 8 bytes */
	static const uint8_t data[] = {'k', 1, 0, 0, 0, 2, 0, 0, 0};
	struct wf_gguf_kvs *ix = wf_gguf_kvs_new(2);
	ck_assert_ptr_nonnull(ix);
	struct wf_gguf_kv kv = {.key = 0, .key_len = 1, .val = 1, .end = 9, .count = 4, .type = WF_GT_ARRAY,
				.elem = WF_GT_UINT32};
	ck_assert_int_eq(wf_gguf_kvs_add(ix, data, sizeof data, &kv), 1);
	struct wf_gguf_vals v = {ix, data, sizeof data};
	int64_t i;
	ck_assert_int_eq(wf_gguf_arr_int(&v, 0, 0, INT64_MIN, INT64_MAX, &i), WF_GGUF_BAD);
	kv.count = UINT64_MAX; /* count * 4 overflows */
	ix->kv[0] = kv;
	ck_assert_int_eq(wf_gguf_arr_int(&v, 0, 0, INT64_MIN, INT64_MAX, &i), WF_GGUF_BAD);
	kv.count = 2;
	ix->kv[0] = kv;
	ck_assert_int_eq(wf_gguf_arr_int(&v, 0, 1, INT64_MIN, INT64_MAX, &i), WF_GGUF_OK);
	ck_assert_int_eq(i, 2);
	/* a key not in the bytes, and an index that is full */
	struct wf_gguf_kv out = {.key = 8, .key_len = 2};
	ck_assert_int_eq(wf_gguf_kvs_add(ix, data, sizeof data, &out), -1);
	struct wf_gguf_kv two = {.key = 1, .key_len = 1};
	ck_assert_int_eq(wf_gguf_kvs_add(ix, data, sizeof data, &two), 1);
	ck_assert_int_eq(wf_gguf_kvs_add(ix, data, sizeof data, &two), -1);
	wf_gguf_kvs_free(ix);
}
END_TEST

/* A key given twice: ggml refuses the file, so does the parser, naming the
 * key; the index refuses it too. */
START_TEST(duplicates)
{
	struct wf_buf b = {0};
	head(&b, 3);
	key(&b, "x", WF_GT_UINT8), put_le(&b, 1, 1);
	key(&b, "y", WF_GT_UINT8), put_le(&b, 2, 1);
	key(&b, "x", WF_GT_STRING), put_str(&b, "z", 1);
	uint8_t *p = copy(&b, b.len);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_gguf_parse(&m, p, b.len, err), WF_ERR_FORMAT);
	ck_assert_str_eq(err, "metadata key 'x': duplicate key");
	ck_assert_ptr_null(m);
	struct wf_gguf_kvs *ix = wf_gguf_kvs_new(2);
	struct wf_gguf_kv a = {.key = 32, .key_len = 1}, c = {.key = 46, .key_len = 1};
	ck_assert_uint_eq(p[32], (uint8_t)'x');
	ck_assert_uint_eq(p[46], (uint8_t)'y');
	ck_assert_int_eq(wf_gguf_kvs_add(ix, p, b.len, &a), 1);
	ck_assert_int_eq(wf_gguf_kvs_add(ix, p, b.len, &a), 0);
	ck_assert_int_eq(wf_gguf_kvs_add(ix, p, b.len, &c), 1);
	wf_gguf_kvs_free(ix);
	free(p);
	wf_buf_free(&b);
}
END_TEST

/* Many keys: every one found by the hash, in file order in the index. */
START_TEST(many_keys)
{
	enum { N = 5000 };
	struct wf_buf b = {0};
	head(&b, N);
	char k[32];
	for (int i = 0; i < N; i++) {
		snprintf(k, sizeof k, "k.%d", i);
		key(&b, k, WF_GT_INT32), put_le(&b, (uint32_t)-i, 4);
	}
	uint8_t *p = copy(&b, b.len);
	struct wf_model *m = parse(p, b.len);
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	for (int i = 0; i < N; i++) {
		snprintf(k, sizeof k, "k.%d", i);
		int64_t id = wf_gguf_find(&v, k), x;
		ck_assert_int_eq(id, i);
		ck_assert_int_eq(wf_gguf_int(&v, id, INT32_MIN, 0, &x), WF_GGUF_OK);
		ck_assert_int_eq(x, -i);
	}
	ck_assert_int_eq(wf_gguf_find(&v, "k.5000"), -1);
	wf_model_free(m);
	free(p);
	wf_buf_free(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gguf_kv");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, type_table);
	tcase_add_test(tc, scalars);
	tcase_add_test(tc, wrong_types);
	tcase_add_test(tc, arrays);
	tcase_add_test(tc, truncated);
	tcase_add_test(tc, rewritten);
	tcase_add_test(tc, huge_counts);
	tcase_add_test(tc, duplicates);
	tcase_add_test(tc, many_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
