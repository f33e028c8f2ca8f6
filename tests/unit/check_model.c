/* check_model.c - unit tests for the GGUF and safetensors parsers
 * (wf_gguf.c, wf_st.c, wf_model.c) over byte buffers built here, and for
 * the committed malformed corpus (tests/malformed, expect.json).
 *
 * Every parse runs on a heap copy of exactly the bytes under test, so a
 * read one byte past the end is an AddressSanitizer report, not luck.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "json_bytes.h"
#include "tj_text.h"
#include "base/wf_buf.h"
#include "model/wf_gguf.h"
#include "model/wf_model.h"
#include "model/wf_meta.h"
#include "model/wf_open.h"
#include "model/wf_st.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"

/* ---- byte builders ---- */

static void put_u8(struct wf_buf *b, uint8_t v)
{
	wf_buf_put(b, &v, 1);
}

static void put_u16(struct wf_buf *b, uint16_t v)
{
	uint8_t p[2] = {(uint8_t)v, (uint8_t)(v >> 8)};
	wf_buf_put(b, p, 2);
}

static void put_u32(struct wf_buf *b, uint32_t v)
{
	uint8_t p[4];
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, p, 4);
}

static void put_u64(struct wf_buf *b, uint64_t v)
{
	uint8_t p[8];
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, p, 8);
}

static void put_gstrn(struct wf_buf *b, const char *s, size_t n)
{
	put_u64(b, n);
	wf_buf_put(b, s, n);
}

static void put_gstr(struct wf_buf *b, const char *s)
{
	put_gstrn(b, s, strlen(s));
}

static void pad_to(struct wf_buf *b, size_t a)
{
	while (b->len % a)
		put_u8(b, 0);
}

static void put_fill(struct wf_buf *b, size_t n, uint8_t seed)
{
	for (size_t i = 0; i < n; i++)
		put_u8(b, (uint8_t)(seed + i * 7));
}

enum { GV_U8, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL, GV_STR, GV_ARR, GV_U64, GV_I64, GV_F64 };

static void gguf_head(struct wf_buf *b, uint32_t version, uint64_t n_tensors, uint64_t n_kv)
{
	wf_buf_put(b, "GGUF", 4);
	put_u32(b, version);
	put_u64(b, n_tensors);
	put_u64(b, n_kv);
}

static void kv_head(struct wf_buf *b, const char *key, uint32_t type)
{
	put_gstr(b, key);
	put_u32(b, type);
}

static void kv_u32(struct wf_buf *b, const char *key, uint32_t v)
{
	kv_head(b, key, GV_U32);
	put_u32(b, v);
}

static void kv_str(struct wf_buf *b, const char *key, const char *v)
{
	kv_head(b, key, GV_STR);
	put_gstr(b, v);
}

static void arr_head(struct wf_buf *b, const char *key, uint32_t elem, uint64_t n)
{
	kv_head(b, key, GV_ARR);
	put_u32(b, elem);
	put_u64(b, n);
}

/* A tensor info record; ne in GGUF order (ne[0] innermost). */
static void tinfo(struct wf_buf *b, const char *name, uint32_t n_dims, const uint64_t *ne, uint32_t type,
		  uint64_t off)
{
	put_gstr(b, name);
	put_u32(b, n_dims);
	for (uint32_t i = 0; i < n_dims; i++)
		put_u64(b, ne[i]);
	put_u32(b, type);
	put_u64(b, off);
}

/* 8-byte length, the header text as given, then data_len bytes of data. */
static void st_file(struct wf_buf *b, const char *json, size_t json_len, size_t data_len)
{
	put_u64(b, json_len);
	wf_buf_put(b, json, json_len);
	put_fill(b, data_len, 3);
}

static void st_json(struct wf_buf *b, const char *json, size_t data_len)
{
	st_file(b, json, strlen(json), data_len);
}

/* ---- parsing a heap copy ---- */

struct parsed {
	uint8_t *buf;
	struct wf_model *m;
	enum wf_err rc;
	char err[WF_ERRLEN];
};

enum which { P_GGUF, P_ST, P_ANY };

/* metadata.json of m whole (a GGUF's is made on read, never kept:
 * wf_meta_dup); valid until the next call. */
static char *meta_last;
static const char *meta_of(const struct wf_model *m, size_t *len)
{
	size_t n = 0;
	free(meta_last);
	meta_last = NULL;
	ck_assert_int_eq(wf_meta_dup(m, &meta_last, &n, NULL), WF_OK);
	if (len)
		*len = n;
	return meta_last;
}

static void parse_n(struct parsed *p, enum which w, const void *data, size_t len)
{
	p->buf = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(p->buf);
	if (len)
		memcpy(p->buf, data, len);
	p->err[0] = '\0';
	p->m = (struct wf_model *)1; /* the parser must reset it */
	switch (w) {
	case P_GGUF: p->rc = wf_gguf_parse(&p->m, p->buf, len, p->err); break;
	case P_ST: p->rc = wf_st_parse(&p->m, p->buf, len, p->err); break;
	case P_ANY: p->rc = wf_open_parse(&p->m, p->buf, len, NULL, p->err); break;
	}
	if (p->rc != WF_OK)
		ck_assert_ptr_null(p->m);
}

static void parse_buf(struct parsed *p, enum which w, const struct wf_buf *b)
{
	parse_n(p, w, b->data, b->len);
}

static void parsed_free(struct parsed *p)
{
	if (p->rc == WF_OK)
		wf_model_free(p->m);
	free(p->buf);
	p->buf = NULL;
	p->m = NULL;
}

/* The error is one non-empty line holding every one of the substrings. */
static void check_err(const char *err, const char *want1, const char *want2)
{
	ck_assert_msg(err[0] != '\0', "empty error message");
	ck_assert_msg(strchr(err, '\n') == NULL, "error is not one line: %s", err);
	ck_assert_msg(strlen(err) < WF_ERRLEN - 1, "error was cut: %s", err);
	if (want1)
		ck_assert_msg(strstr(err, want1) != NULL, "error \"%s\" lacks \"%s\"", err, want1);
	if (want2)
		ck_assert_msg(strstr(err, want2) != NULL, "error \"%s\" lacks \"%s\"", err, want2);
}

static void expect_fail(enum which w, const struct wf_buf *b, enum wf_err code, const char *want1,
			const char *want2)
{
	struct parsed p;
	parse_buf(&p, w, b);
	ck_assert_msg(p.rc == code, "rc %d, want %d (err: %s)", p.rc, code, p.err);
	check_err(p.err, want1, want2);
	parsed_free(&p);
}

/* Every proper prefix of b is refused as malformed, without a crash. */
static void all_prefixes_fail(enum which w, const struct wf_buf *b)
{
	for (size_t n = 0; n < b->len; n++) {
		struct parsed p;
		parse_n(&p, w, b->data, n);
		ck_assert_msg(p.rc == WF_ERR_FORMAT, "prefix of %zu/%zu bytes: rc %d (%s)", n, b->len, p.rc,
			      p.err);
		check_err(p.err, NULL, NULL);
		parsed_free(&p);
	}
}

/* ---- GGUF: valid files ---- */

struct exp_tensor {
	const char *name;
	uint32_t n_dims;
	uint64_t ne[4];
	uint32_t type;
	uint64_t nbytes;
	uint64_t rel;      /* offset inside the data section */
};

static const struct exp_tensor rich_tensors[] = {
	{"token_embd.weight", 2, {4, 3}, WF_T_F32, 48, 0},
	{"blk.0.attn_q.weight", 2, {64, 2}, WF_T_Q4_0, 2 * 2 * 18, 0},
	{"scalar", 0, {0}, WF_T_I32, 4, 0},
	{"empty", 2, {0, 5}, WF_T_F16, 0, 0},
	{"blk.0.ffn.q4k", 1, {256}, WF_T_Q4_K, 144, 0},
	{"odd", 4, {3, 1, 2, 1}, WF_T_I8, 6, 0},
};

/* A file with every value type and the tensors above; align 0 = default.
 * Fills rel offsets into *ts (a copy of rich_tensors) and the data offset. */
static void build_rich(struct wf_buf *b, uint32_t version, uint32_t align, struct exp_tensor *ts,
		       uint64_t *data_off)
{
	size_t nt = WF_ARRAY_LEN(rich_tensors);
	uint32_t a = align ? align : 32;
	memcpy(ts, rich_tensors, sizeof rich_tensors);
	gguf_head(b, version, nt, align ? 6 : 5);
	kv_str(b, "general.architecture", "llama");
	if (align)
		kv_u32(b, "general.alignment", align);
	kv_head(b, "a.f64", GV_F64);
	put_u64(b, 0x3FB999999999999AULL); /* 0.1 */
	arr_head(b, "a.strs", GV_STR, 3);
	put_gstr(b, "x");
	put_gstr(b, "");
	put_gstr(b, "y\"z");
	arr_head(b, "a.empty", GV_I32, 0);
	kv_head(b, "a.bool", GV_BOOL);
	put_u8(b, 1);
	uint64_t at = 0;
	for (size_t i = 0; i < nt; i++) {
		at = (at + a - 1) / a * a;
		ts[i].rel = at;
		tinfo(b, ts[i].name, ts[i].n_dims, ts[i].ne, ts[i].type, at);
		at += ts[i].nbytes;
	}
	pad_to(b, a);
	*data_off = b->len;
	for (size_t i = 0; i < nt; i++) {
		while (b->len < *data_off + ts[i].rel)
			put_u8(b, 0xAA);
		put_fill(b, ts[i].nbytes, (uint8_t)i);
	}
}

static void check_rich(const struct wf_model *m, const struct exp_tensor *ts, uint64_t data_off,
		       uint32_t version, uint32_t align)
{
	ck_assert_int_eq(m->format, WF_FMT_GGUF);
	ck_assert_uint_eq(m->version, version);
	ck_assert_uint_eq(m->alignment, align ? align : 32);
	ck_assert_uint_eq(m->data_offset, data_off);
	ck_assert_uint_eq(m->n_kv, align ? 6 : 5);
	ck_assert_uint_eq(m->n_tensors, WF_ARRAY_LEN(rich_tensors));
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		const struct exp_tensor *e = &ts[i];
		ck_assert_str_eq(t->name, e->name);
		ck_assert_uint_eq(t->name_len, strlen(e->name));
		ck_assert_int_eq(t->type, (int)e->type);
		ck_assert_uint_eq(t->ndim, e->n_dims);
		uint64_t n = 1;
		for (uint32_t d = 0; d < e->n_dims; d++) {
			/* numpy order: GGUF's ne reversed */
			ck_assert_uint_eq(t->shape[d], e->ne[e->n_dims - 1 - d]);
			n *= e->ne[d];
		}
		ck_assert_uint_eq(t->nelems, n);
		ck_assert_uint_eq(t->nbytes, e->nbytes);
		ck_assert_uint_eq(t->size, n * wf_vk_elem_size(wf_type_get(t->type), (enum wf_vk)t->vk));
		ck_assert_uint_eq(t->offset, data_off + e->rel);
		ck_assert_uint_eq(t->offset % (align ? align : 32), 0);
	}
	size_t ml;
	const char *mt = meta_of(m, &ml);
	cJSON *j = cJSON_ParseWithLength(mt, ml);
	ck_assert_msg(j != NULL, "metadata.json is not JSON: %s", mt);
	ck_assert_int_eq(cJSON_GetArraySize(j), (int)m->n_kv);
	cJSON_Delete(j);
}

START_TEST(test_gguf_valid)
{
	static const uint32_t aligns[] = {0, 1, 8, 64, 256};
	uint32_t version = 2 + (uint32_t)(_i % 2);
	uint32_t align = aligns[_i / 2];
	struct wf_buf b = {0};
	struct exp_tensor ts[WF_ARRAY_LEN(rich_tensors)];
	uint64_t data_off;
	build_rich(&b, version, align, ts, &data_off);
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_msg(p.rc == WF_OK, "rc %d: %s", p.rc, p.err);
	check_rich(p.m, ts, data_off, version, align);
	parsed_free(&p);
	/* the dispatcher finds it by magic, whatever the name says */
	parse_buf(&p, P_ANY, &b);
	ck_assert_int_eq(p.rc, WF_OK);
	ck_assert_int_eq(p.m->format, WF_FMT_GGUF);
	parsed_free(&p);
	wf_buf_free(&b);
}
END_TEST

START_TEST(test_gguf_prefixes)
{
	struct wf_buf b = {0};
	struct exp_tensor ts[WF_ARRAY_LEN(rich_tensors)];
	uint64_t data_off;
	build_rich(&b, 2 + (uint32_t)_i, _i ? 64 : 0, ts, &data_off);
	all_prefixes_fail(P_GGUF, &b);
	wf_buf_free(&b);

	/* no tensors: the file ends with the last value */
	gguf_head(&b, 3, 0, 2);
	kv_str(&b, "k", "v");
	arr_head(&b, "s", GV_STR, 2);
	put_gstr(&b, "ab");
	put_gstr(&b, "c");
	all_prefixes_fail(P_GGUF, &b);
	wf_buf_free(&b);
}
END_TEST

START_TEST(test_gguf_zero_tensors)
{
	struct wf_buf b = {0};
	gguf_head(&b, 3, 0, 0);
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_int_eq(p.rc, WF_OK);
	ck_assert_uint_eq(p.m->n_tensors, 0);
	ck_assert_str_eq(meta_of(p.m, NULL), "{}\n");
	ck_assert_uint_eq(wf_meta_len(p.m), 3);
	ck_assert_ptr_null(p.m->metadata_json);
	parsed_free(&p);
	wf_buf_free(&b);
}
END_TEST

/* Exact metadata.json text: 64-bit extremes, floats, escapes, \udcXX. */
START_TEST(test_gguf_metadata_json)
{
	struct wf_buf b = {0};
	gguf_head(&b, 3, 0, 22);
	kv_head(&b, "u8", GV_U8); put_u8(&b, 255);
	kv_head(&b, "i8", GV_I8); put_u8(&b, 0x80);
	kv_head(&b, "u16", GV_U16); put_u16(&b, 65535);
	kv_head(&b, "i16", GV_I16); put_u16(&b, 0x8000);
	kv_head(&b, "u32", GV_U32); put_u32(&b, 4294967295u);
	kv_head(&b, "i32", GV_I32); put_u32(&b, 0x80000000u);
	kv_head(&b, "f32", GV_F32); put_u32(&b, 0x3DCCCCCDu); /* 0.1f */
	kv_head(&b, "bool", GV_BOOL); put_u8(&b, 2);           /* ggml: non-zero is true */
	kv_head(&b, "u64", GV_U64); put_u64(&b, UINT64_MAX);
	kv_head(&b, "i64", GV_I64); put_u64(&b, 0x8000000000000000ULL);
	kv_head(&b, "f64", GV_F64); put_u64(&b, 0xC00C000000000000ULL); /* -3.5 */
	kv_head(&b, "nan", GV_F32); put_u32(&b, 0x7FC00000u);
	kv_head(&b, "inf", GV_F64); put_u64(&b, 0xFFF0000000000000ULL);
	kv_str(&b, "esc", "q\"b\\s/\n\t\r\x01\x1f\x7f\xc3\xa9");
	kv_head(&b, "bad", GV_STR); put_gstrn(&b, "a\xff" "b\xc3(\xed\xa0\x80", 8);
	put_gstrn(&b, "k\xfe\0", 3); put_u32(&b, GV_BOOL); put_u8(&b, 0);
	arr_head(&b, "as", GV_STR, 3); put_gstr(&b, "x"); put_gstr(&b, ""); put_gstrn(&b, "\xc0\xaf", 2);
	arr_head(&b, "ae", GV_STR, 0);
	arr_head(&b, "ai", GV_I64, 2); put_u64(&b, UINT64_MAX); put_u64(&b, 0x8000000000000000ULL);
	arr_head(&b, "ab", GV_BOOL, 2); put_u8(&b, 0); put_u8(&b, 1);
	arr_head(&b, "af", GV_F32, 2); put_u32(&b, 0x3FC00000u); put_u32(&b, 0x80000000u);
	arr_head(&b, "au", GV_U64, 1); put_u64(&b, UINT64_MAX);
	static const char want[] =
		"{\n"
		" \"u8\": 255,\n"
		" \"i8\": -128,\n"
		" \"u16\": 65535,\n"
		" \"i16\": -32768,\n"
		" \"u32\": 4294967295,\n"
		" \"i32\": -2147483648,\n"
		" \"f32\": 0.1,\n"
		" \"bool\": true,\n"
		" \"u64\": 18446744073709551615,\n"
		" \"i64\": -9223372036854775808,\n"
		" \"f64\": -3.5,\n"
		" \"nan\": \"NaN\",\n"
		" \"inf\": \"-Infinity\",\n"
		" \"esc\": \"q\\\"b\\\\s/\\n\\t\\r\\u0001\\u001f\x7f\xc3\xa9\",\n"
		" \"bad\": \"a\\udcffb\\udcc3(\\udced\\udca0\\udc80\",\n"
		" \"k\\udcfe\\u0000\": false,\n"
		" \"as\": [\"x\", \"\", \"\\udcc0\\udcaf\"],\n"
		" \"ae\": [],\n"
		" \"ai\": [-1, -9223372036854775808],\n"
		" \"ab\": [false, true],\n"
		" \"af\": [1.5, -0.0],\n"
		" \"au\": [18446744073709551615]\n"
		"}\n";
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_msg(p.rc == WF_OK, "rc %d: %s", p.rc, p.err);
	ck_assert_str_eq(meta_of(p.m, NULL), want);
	ck_assert_uint_eq(wf_meta_len(p.m), strlen(want));
	ck_assert_ptr_null(p.m->metadata_json); /* never kept whole */
	ck_assert_uint_eq(p.m->n_kv, 22);
	parsed_free(&p);
	wf_buf_free(&b);
}
END_TEST

/* ---- GGUF: malformed ---- */

struct bad {
	enum wf_err code;
	const char *want1, *want2;
};

static const uint64_t ne1[] = {8};

/* A minimal valid tail: one F32 tensor "w" of 8 elements at offset 0. */
static void one_tensor_tail(struct wf_buf *b)
{
	tinfo(b, "w", 1, ne1, WF_T_F32, 0);
	pad_to(b, 32);
	put_fill(b, 32, 1);
}

/* Builds malformed GGUF case i into b; returns false past the last case. */
static bool bad_gguf(int i, struct wf_buf *b, struct bad *w)
{
	static const uint64_t ne_big[] = {1ULL << 32, 1ULL << 32};
	static const uint64_t ne_neg[] = {1ULL << 63};
	static const uint64_t ne_q[] = {33};
	static const uint64_t ne_size[] = {1ULL << 62};
	static const uint64_t ne_f64[] = {1ULL << 61, 2};
	static const uint64_t ne5[] = {1, 1, 1, 1, 1};
	*w = (struct bad){WF_ERR_FORMAT, NULL, NULL};
	switch (i) {
	case 0: wf_buf_put(b, "GGUX", 4); put_u32(b, 3); put_u64(b, 0); put_u64(b, 0);
		*w = (struct bad){WF_ERR_FORMAT, "header", "bad magic"}; break;
	case 1: gguf_head(b, 1, 0, 0); *w = (struct bad){WF_ERR_UNSUP, "version 1", NULL}; break;
	case 2: wf_buf_put(b, "GGUF\0\0\0\3", 8); put_u64(b, 0); put_u64(b, 0);
		*w = (struct bad){WF_ERR_UNSUP, "big-endian", NULL}; break;
	case 3: wf_buf_put(b, "FUGG\3\0\0\0", 8); put_u64(b, 0); put_u64(b, 0);
		*w = (struct bad){WF_ERR_UNSUP, "big-endian", NULL}; break;
	case 4: gguf_head(b, 4, 0, 0); *w = (struct bad){WF_ERR_UNSUP, "version 4", NULL}; break;
	case 5: gguf_head(b, 3, 0, UINT64_MAX); put_fill(b, 64, 0); w->want1 = "n_kv 18446744073709551615"; break;
	case 6: gguf_head(b, 3, UINT64_MAX, 0); put_fill(b, 64, 0); w->want1 = "n_tensors 18446744073709551615"; break;
	case 7: gguf_head(b, 3, 0, 1ULL << 63); w->want1 = "n_kv"; break;
	case 8: gguf_head(b, 3, 0, 1); put_u64(b, UINT64_MAX); put_fill(b, 16, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 0", "string length 18446744073709551615"}; break;
	case 9: gguf_head(b, 3, 0, 1); put_u64(b, 17); wf_buf_put(b, "general.name\0\0\0\0", 16);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 0", "past end of file"}; break;
	case 10: gguf_head(b, 3, 0, 1); kv_head(b, "k", GV_STR); put_u64(b, UINT64_MAX - 2); put_fill(b, 8, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'k'", "string length"}; break;
	case 11: gguf_head(b, 3, 0, 1); arr_head(b, "arr", GV_U32, UINT64_MAX); put_fill(b, 8, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'arr'", "array of 18446744073709551615 u32"}; break;
	case 12: /* 2^61 * 8 wraps to 0 */
		gguf_head(b, 3, 0, 1); arr_head(b, "arr", GV_U64, 1ULL << 61); put_fill(b, 8, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'arr'", "runs past end"}; break;
	case 13: gguf_head(b, 3, 0, 1); arr_head(b, "names", GV_STR, UINT64_MAX / 8); put_fill(b, 40, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'names'", "strings cannot fit"}; break;
	case 14: gguf_head(b, 3, 0, 1); arr_head(b, "names", GV_STR, 2); put_gstr(b, "ok"); put_u64(b, UINT64_MAX);
		put_fill(b, 8, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'names'", "string length 18446744073709551615"}; break;
	case 15: gguf_head(b, 3, 0, 1); arr_head(b, "nest", GV_ARR, 1); put_u32(b, GV_U8); put_u64(b, 1); put_u8(b, 0);
		*w = (struct bad){WF_ERR_UNSUP, "metadata key 'nest'", "arrays of arrays"}; break;
	case 16: gguf_head(b, 3, 0, 1); kv_head(b, "k", 13); put_u32(b, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'k'", "unknown value type 13"}; break;
	case 17: gguf_head(b, 3, 0, 1); kv_head(b, "k", UINT32_MAX); put_u32(b, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'k'", "unknown value type 4294967295"}; break;
	case 18: gguf_head(b, 3, 0, 1); arr_head(b, "a", 13, 1); put_u32(b, 0);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'a'", "unknown array element type 13"}; break;
	case 19: gguf_head(b, 3, 0, 2); kv_u32(b, "dup.key", 1); kv_u32(b, "dup.key", 2);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 'dup.key'", "duplicate key"}; break;
	case 20: gguf_head(b, 3, 0, 1); kv_u32(b, "", 1);
		*w = (struct bad){WF_ERR_FORMAT, "metadata key 0", "empty key"}; break;
	case 21: gguf_head(b, 3, 2, 0); tinfo(b, "w", 1, ne1, 0, 0); tinfo(b, "w", 1, ne1, 0, 32);
		pad_to(b, 32); put_fill(b, 64, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'w'", "duplicate tensor name"}; break;
	case 22: gguf_head(b, 3, 1, 0); tinfo(b, "five", 5, ne5, 0, 0); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'five'", "n_dims 5"}; break;
	case 23: gguf_head(b, 3, 1, 0); tinfo(b, "big", 2, ne_big, WF_T_I8, 0); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'big'", "element count overflows"}; break;
	case 24: gguf_head(b, 3, 1, 0); tinfo(b, "neg", 1, ne_neg, WF_T_I8, 0); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'neg'", "ne[0] = 9223372036854775808"}; break;
	case 25: gguf_head(b, 3, 1, 0); tinfo(b, "q", 1, ne_q, WF_T_Q4_0, 0); pad_to(b, 32); put_fill(b, 64, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'q'", "not a multiple of the Q4_0 block size 32"}; break;
	case 26: gguf_head(b, 3, 1, 0); tinfo(b, "sz", 1, ne_size, WF_T_F32, 0); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'sz'", "byte size overflows"}; break;
	case 27: gguf_head(b, 3, 1, 0); tinfo(b, "f64", 2, ne_f64, WF_T_F64, 0); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'f64'", "overflows"}; break;
	case 28: gguf_head(b, 3, 1, 0); tinfo(b, "w", 1, ne1, WF_T_F32, 4); pad_to(b, 32); put_fill(b, 64, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'w'", "offset 4 is not a multiple of the alignment 32"}; break;
	case 29: gguf_head(b, 3, 1, 0); tinfo(b, "w", 1, ne1, WF_T_F32, 32); pad_to(b, 32); put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'w'", "past end of file"}; break;
	case 30: gguf_head(b, 3, 1, 0); tinfo(b, "w", 1, ne1, WF_T_F32, UINT64_MAX - 31); pad_to(b, 32);
		put_fill(b, 32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'w'", "past end of file"}; break;
	case 31: gguf_head(b, 3, 1, 1); kv_u32(b, "general.alignment", 0); one_tensor_tail(b);
		*w = (struct bad){WF_ERR_FORMAT, "general.alignment", "0 is not a power of two"}; break;
	case 32: gguf_head(b, 3, 1, 1); kv_u32(b, "general.alignment", 48); one_tensor_tail(b);
		*w = (struct bad){WF_ERR_FORMAT, "general.alignment", "48 is not a power of two"}; break;
	case 33: gguf_head(b, 3, 1, 1); kv_head(b, "general.alignment", GV_U64); put_u64(b, 32); one_tensor_tail(b);
		*w = (struct bad){WF_ERR_FORMAT, "general.alignment", "must be of type u32, not u64"}; break;
	case 34: gguf_head(b, 3, 1, 1); kv_str(b, "general.alignment", "32"); one_tensor_tail(b);
		*w = (struct bad){WF_ERR_FORMAT, "general.alignment", "not str"}; break;
	case 35: /* the data section would begin past the end */
		gguf_head(b, 3, 1, 0); tinfo(b, "e", 1, (const uint64_t[]){0}, WF_T_F32, 0);
		*w = (struct bad){WF_ERR_FORMAT, "data section", "past end of file"}; break;
	case 36: /* the data overlaps the header: offset fine, bytes short by one */
		gguf_head(b, 3, 1, 0); tinfo(b, "w", 1, ne1, WF_T_F32, 0); pad_to(b, 32); put_fill(b, 31, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'w'", "past end of file"}; break;
	case 37: gguf_head(b, 3, 1, 0); put_u64(b, UINT64_MAX); put_fill(b, 40, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 0", "string length"}; break;
	case 38: gguf_head(b, 0, 0, 0); *w = (struct bad){WF_ERR_UNSUP, "big-endian", NULL}; break;
	case 39: wf_buf_put(b, "GGU", 3); *w = (struct bad){WF_ERR_FORMAT, "bad magic", NULL}; break;
	case 40: /* n_tensors fits the counts check but the records do not */
		gguf_head(b, 3, 2, 0); tinfo(b, "w", 1, ne1, WF_T_F32, 0); put_gstr(b, "x"); put_u32(b, 1); put_u32(b, 0);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'x'", "truncated"}; break;
	default: return false;
	}
	return true;
}

#define N_BAD_GGUF 41

START_TEST(test_gguf_bad)
{
	struct wf_buf b = {0};
	struct bad w;
	ck_assert(bad_gguf(_i, &b, &w));
	expect_fail(P_GGUF, &b, w.code, w.want1, w.want2);
	wf_buf_free(&b);
}
END_TEST

START_TEST(test_gguf_bad_count)
{
	struct wf_buf b = {0};
	struct bad w;
	ck_assert(!bad_gguf(N_BAD_GGUF, &b, &w));
	wf_buf_free(&b);
}
END_TEST

/* Every type id: holes and ids past the table are refused by number. */
START_TEST(test_gguf_type_ids)
{
	static const uint32_t ids[] = {4, 5, 31, 32, 33, 36, 37, 38, 43, 63, 64, 65, 1000, UINT32_MAX};
	for (size_t k = 0; k < WF_ARRAY_LEN(ids); k++) {
		struct wf_buf b = {0};
		char num[32];
		gguf_head(&b, 3, 1, 0);
		tinfo(&b, "t", 1, (const uint64_t[]){256}, ids[k], 0);
		pad_to(&b, 32);
		put_fill(&b, 4096, 0);
		snprintf(num, sizeof num, "type id %u", ids[k]);
		expect_fail(P_GGUF, &b, WF_ERR_FORMAT, "tensor 't'", num);
		wf_buf_free(&b);
	}
	/* every row the table has parses, with its own block geometry */
	for (uint32_t id = 0; id < WF_GGML_TYPE_COUNT; id++) {
		const struct wf_type *ty = wf_type_get((int)id);
		if (!ty)
			continue;
		struct wf_buf b = {0};
		uint64_t ne[2] = {ty->blck * 2, 3};
		gguf_head(&b, 3, 1, 0);
		tinfo(&b, "t", 2, ne, id, 0);
		pad_to(&b, 32);
		put_fill(&b, 6 * ty->bytes, 0);
		struct parsed p;
		parse_buf(&p, P_GGUF, &b);
		ck_assert_msg(p.rc == WF_OK, "type %u: %s", id, p.err);
		ck_assert_uint_eq(p.m->tensors[0].nbytes, 6 * ty->bytes);
		ck_assert_uint_eq(p.m->tensors[0].nelems, 6 * ty->blck);
		parsed_free(&p);
		wf_buf_free(&b);
	}
}
END_TEST

/* n_dims 0 is a one-element scalar, as in ggml (all ne = 1); a block
 * type cannot hold one element. */
START_TEST(test_gguf_ndims0)
{
	struct wf_buf b = {0};
	gguf_head(&b, 3, 1, 0);
	tinfo(&b, "s", 0, NULL, WF_T_F16, 0);
	pad_to(&b, 32);
	put_u16(&b, 0x3C00);
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_msg(p.rc == WF_OK, "%s", p.err);
	ck_assert_uint_eq(p.m->tensors[0].ndim, 0);
	ck_assert_uint_eq(p.m->tensors[0].nelems, 1);
	ck_assert_uint_eq(p.m->tensors[0].nbytes, 2);
	ck_assert_uint_eq(p.m->tensors[0].size, 4);
	parsed_free(&p);
	wf_buf_free(&b);

	gguf_head(&b, 3, 1, 0);
	tinfo(&b, "s", 0, NULL, WF_T_Q8_0, 0);
	pad_to(&b, 32);
	put_fill(&b, 34, 0);
	expect_fail(P_GGUF, &b, WF_ERR_FORMAT, "tensor 's'", "block size 32");
	wf_buf_free(&b);
}
END_TEST

/* A name with bytes that need quoting still gives a one-line message. */
START_TEST(test_gguf_err_quoting)
{
	struct wf_buf b = {0};
	char name[400];
	memset(name, 'x', sizeof name);
	name[3] = '\n';
	name[5] = '\'';
	name[7] = (char)0xff;
	gguf_head(&b, 3, 2, 0);
	put_gstrn(&b, name, sizeof name);
	put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 0);
	put_gstrn(&b, name, sizeof name);
	put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 32);
	pad_to(&b, 32);
	put_fill(&b, 64, 0);
	expect_fail(P_GGUF, &b, WF_ERR_FORMAT, "tensor 'xxx\\x0ax\\x27x\\xffx", "duplicate tensor name");
	wf_buf_free(&b);
}
END_TEST

/* Names may hold NUL and any byte; the length is what counts. */
START_TEST(test_gguf_binary_names)
{
	struct wf_buf b = {0};
	gguf_head(&b, 3, 2, 0);
	put_gstrn(&b, "a\0b", 3); put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 0);
	put_gstrn(&b, "a\0c", 3); put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 32);
	pad_to(&b, 32);
	put_fill(&b, 64, 0);
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_msg(p.rc == WF_OK, "%s", p.err);
	ck_assert_uint_eq(p.m->tensors[0].name_len, 3);
	ck_assert_mem_eq(p.m->tensors[1].name, "a\0c", 4);
	parsed_free(&p);
	wf_buf_free(&b);
}
END_TEST

/* Keys and names that differ only in bytes that are not UTF-8 stay distinct
 * in metadata.json and tensors.json (with U+FFFD they became one string,
 * and JSON readers kept one of them), and the \udcXX escapes give back
 * the original bytes. */
START_TEST(test_gguf_invalid_utf8_distinct)
{
	struct wf_buf b = {0};
	gguf_head(&b, 3, 2, 2);
	put_gstrn(&b, "k\xff", 2); put_u32(&b, GV_STR); put_gstrn(&b, "v\xff", 2);
	put_gstrn(&b, "k\xfe", 2); put_u32(&b, GV_STR); put_gstrn(&b, "v\xfe", 2);
	put_gstrn(&b, "t\xff", 2); put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 0);
	put_gstrn(&b, "t\xfe", 2); put_u32(&b, 1); put_u64(&b, 8); put_u32(&b, 0); put_u64(&b, 32);
	pad_to(&b, 32);
	put_fill(&b, 64, 0);
	struct parsed p;
	parse_buf(&p, P_GGUF, &b);
	ck_assert_msg(p.rc == WF_OK, "%s", p.err);
	size_t ml;
	const char *mt = meta_of(p.m, &ml);
	ck_assert_str_eq(mt, "{\n \"k\\udcff\": \"v\\udcff\",\n \"k\\udcfe\": \"v\\udcfe\"\n}\n");
	cJSON *j = json_bytes_parse(mt, ml);
	ck_assert_ptr_nonnull(j);
	ck_assert_int_eq(cJSON_GetArraySize(j), 2);
	const cJSON *v1 = cJSON_GetObjectItemCaseSensitive(j, "k\xff");
	const cJSON *v2 = cJSON_GetObjectItemCaseSensitive(j, "k\xfe");
	ck_assert(cJSON_IsString(v1) && cJSON_IsString(v2));
	ck_assert_str_eq(v1->valuestring, "v\xff");
	ck_assert_str_eq(v2->valuestring, "v\xfe");
	cJSON_Delete(j);

	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tree_build(&t, p.m, err), WF_OK);
	size_t tj_len;
	char *tj = tj_text(t, &tj_len);
	ck_assert_ptr_nonnull(strstr(tj, "\"name\":\"t\\udcff\""));
	ck_assert_ptr_nonnull(strstr(tj, "\"name\":\"t\\udcfe\""));
	j = json_bytes_parse(tj, tj_len);
	free(tj);
	ck_assert_ptr_nonnull(j);
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(j, "tensors");
	ck_assert_int_eq(cJSON_GetArraySize(ts), 2);
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ts, 0), "name")->valuestring, "t\xff");
	ck_assert_str_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ts, 1), "name")->valuestring, "t\xfe");
	cJSON_Delete(j);
	wf_tree_free(t);
	parsed_free(&p);
	wf_buf_free(&b);
}
END_TEST

/* ---- safetensors: valid ---- */

START_TEST(test_st_valid)
{
	struct wf_buf b = {0};
	static const char json[] =
		"{\"__metadata__\":{\"format\":\"pt\",\"q\":\"a\\\"\\u00e9\\n\"},"
		"\"b.weight\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
		"\"a.bias\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]},"
		"\"s\":{\"dtype\":\"I32\",\"shape\":[],\"data_offsets\":[28,32]},"
		"\"z\":{\"dtype\":\"BF16\",\"shape\":[2,0,7],\"data_offsets\":[32,32]},"
		"\"extra\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[32,33],\"x\":[1.5,{}]}}    ";
	st_json(&b, json, 33);
	struct parsed p;
	parse_buf(&p, P_ST, &b);
	ck_assert_msg(p.rc == WF_OK, "%s", p.err);
	const struct wf_model *m = p.m;
	uint64_t d = 8 + strlen(json);
	ck_assert_int_eq(m->format, WF_FMT_SAFETENSORS);
	ck_assert_uint_eq(m->data_offset, d);
	ck_assert_uint_eq(m->n_kv, 2);
	ck_assert_uint_eq(m->n_tensors, 5);
	ck_assert_str_eq(m->metadata_json, "{\n \"format\": \"pt\",\n \"q\": \"a\\\"\xc3\xa9\\n\"\n}\n");
	/* file order is kept */
	ck_assert_str_eq(m->tensors[0].name, "b.weight");
	ck_assert_int_eq(m->tensors[0].type, WF_T_F16);
	ck_assert_uint_eq(m->tensors[0].ndim, 2);
	ck_assert_uint_eq(m->tensors[0].shape[0], 2);
	ck_assert_uint_eq(m->tensors[0].shape[1], 3);
	ck_assert_uint_eq(m->tensors[0].offset, d + 16);
	ck_assert_uint_eq(m->tensors[0].size, 24);
	ck_assert_uint_eq(m->tensors[1].offset, d);
	ck_assert_uint_eq(m->tensors[2].ndim, 0);
	ck_assert_uint_eq(m->tensors[2].nelems, 1);
	ck_assert_uint_eq(m->tensors[2].nbytes, 4);
	ck_assert_uint_eq(m->tensors[3].nelems, 0);
	ck_assert_uint_eq(m->tensors[3].nbytes, 0);
	ck_assert_uint_eq(m->tensors[3].size, 0);
	ck_assert_uint_eq(m->tensors[4].offset, d + 32);
	parsed_free(&p);
	parse_buf(&p, P_ANY, &b);
	ck_assert_int_eq(p.rc, WF_OK);
	ck_assert_int_eq(p.m->format, WF_FMT_SAFETENSORS);
	parsed_free(&p);
	all_prefixes_fail(P_ST, &b);
	wf_buf_free(&b);
}
END_TEST

/* An allocation that fails inside cJSON is out of memory, not a syntax
 * error: fail each of the parse's JSON allocations in turn (and all after
 * it), from the first until the parse needs no more. */
START_TEST(test_st_json_oom)
{
	struct wf_buf b = {0};
	static const char json[] =
		"{\"__metadata__\":{\"format\":\"pt\"},"
		"\"b.weight\":{\"dtype\":\"F16\",\"shape\":[2,3],\"data_offsets\":[16,28]},"
		"\"a.bias\":{\"dtype\":\"F32\",\"shape\":[4],\"data_offsets\":[0,16]}}";
	st_json(&b, json, 28);
	long n;
	for (n = 0; n < 1000; n++) {
		struct parsed p;
		wf_json_fail_after(n);
		parse_buf(&p, P_ST, &b);
		wf_json_fail_after(-1);
		if (p.rc == WF_OK) {
			parsed_free(&p);
			break;
		}
		ck_assert_msg(p.rc == WF_ERR_NOMEM, "allocation %ld failed: rc %d (%s)", n, p.rc, p.err);
		check_err(p.err, "out of memory", NULL);
		parsed_free(&p);
	}
	/* 3 objects in the root, 2 arrays each... at least one per value */
	ck_assert_msg(n >= 15 && n < 1000, "the parse made %ld JSON allocations", n);
	wf_buf_free(&b);
}
END_TEST

/* The reference test_empty: "{}" padded with spaces, and JSON whitespace
 * on both sides (safetensors >= 0.8). */
START_TEST(test_st_empty)
{
	static const char *const hdrs[] = {"{}      ", "{}", " \t\r\n{ }\n ", "{\"__metadata__\":{}}"};
	for (size_t i = 0; i < WF_ARRAY_LEN(hdrs); i++) {
		struct wf_buf b = {0};
		st_json(&b, hdrs[i], 0);
		struct parsed p;
		parse_buf(&p, P_ST, &b);
		ck_assert_msg(p.rc == WF_OK, "%s: %s", hdrs[i], p.err);
		ck_assert_uint_eq(p.m->n_tensors, 0);
		ck_assert_str_eq(p.m->metadata_json, "{}\n");
		parsed_free(&p);
		wf_buf_free(&b);
	}
}
END_TEST

/* Every safetensors dtype, at its bit size (formats.md section 1). */
START_TEST(test_st_dtypes)
{
	static const struct { const char *name; unsigned bits; } dt[] = {
		{"BOOL", 8}, {"F4", 4}, {"F6_E2M3", 6}, {"F6_E3M2", 6}, {"U8", 8}, {"I8", 8},
		{"F8_E5M2", 8}, {"F8_E4M3", 8}, {"F8_E8M0", 8}, {"F8_E4M3FNUZ", 8}, {"F8_E5M2FNUZ", 8},
		{"I16", 16}, {"U16", 16}, {"F16", 16}, {"BF16", 16}, {"I32", 32}, {"U32", 32}, {"F32", 32},
		{"C64", 64}, {"F64", 64}, {"I64", 64}, {"U64", 64},
	};
	struct wf_buf j = {0};
	wf_buf_putc(&j, '{');
	uint64_t at = 0;
	for (size_t i = 0; i < WF_ARRAY_LEN(dt); i++) {
		uint64_t nb = 12 * dt[i].bits / 8; /* 12 elements: whole bytes for 4 and 6 bits */
		wf_buf_printf(&j, "%s\"t%zu\":{\"dtype\":\"%s\",\"shape\":[3,4],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}",
			      i ? "," : "", i, dt[i].name, at, at + nb);
		at += nb;
	}
	wf_buf_putc(&j, '}');
	struct wf_buf b = {0};
	st_file(&b, j.data, j.len, (size_t)at);
	struct parsed p;
	parse_buf(&p, P_ST, &b);
	ck_assert_msg(p.rc == WF_OK, "%s", p.err);
	ck_assert_uint_eq(p.m->n_tensors, WF_ARRAY_LEN(dt));
	for (size_t i = 0; i < WF_ARRAY_LEN(dt); i++) {
		const struct wf_tensor *t = &p.m->tensors[i];
		ck_assert_str_eq(wf_type_get(t->type)->name, dt[i].name);
		ck_assert_uint_eq(t->nbytes, 12 * dt[i].bits / 8);
		ck_assert_uint_eq(t->nelems, 12);
	}
	parsed_free(&p);
	wf_buf_free(&b);
	wf_buf_free(&j);
}
END_TEST

/* ---- safetensors: malformed ---- */

static const char T4[] = "{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}";

static bool bad_st(int i, struct wf_buf *b, struct bad *w)
{
	struct wf_buf j = {0};
	*w = (struct bad){WF_ERR_FORMAT, NULL, NULL};
	switch (i) {
	case 0: wf_buf_put(b, "\x02\0\0\0\0\0", 6); w->want1 = "too short"; break;
	case 1: put_u64(b, 100); wf_buf_puts(b, "{}"); *w = (struct bad){WF_ERR_FORMAT, "length 100", "past end of file"}; break;
	case 2: put_u64(b, 100000001); wf_buf_puts(b, "{}"); w->want1 = "exceeds the 100 MB limit"; break;
	case 3: put_u64(b, UINT64_MAX); wf_buf_puts(b, "{}"); w->want1 = "length 18446744073709551615 exceeds"; break;
	case 4: put_u64(b, 100000000); wf_buf_puts(b, "{}"); w->want1 = "past end of file"; break;
	case 5: st_json(b, "{abc}", 0); w->want1 = "invalid JSON"; break;
	case 6: st_json(b, "[]", 0); w->want1 = "does not start with '{'"; break;
	case 7: st_json(b, "", 0); w->want1 = "does not start with '{'"; break;
	case 8: st_json(b, "        ", 0); w->want1 = "does not start with '{'"; break;
	case 9: st_json(b, "{\"a\xff\":1}", 0); w->want1 = "invalid UTF-8 at byte 11"; break;
	case 10: st_json(b, "{\"\xc0\x80\":1}", 0); w->want1 = "invalid UTF-8"; break;
	case 11: st_json(b, "{\"\xed\xa0\x80\":1}", 0); w->want1 = "invalid UTF-8"; break;
	case 12: st_json(b, "{\"\xf4\x90\x80\x80\":1}", 0); w->want1 = "invalid UTF-8"; break;
	case 13: st_json(b, "{} x", 0); w->want1 = "unexpected bytes after the JSON object"; break;
	case 14: st_json(b, "{}{}", 0); w->want1 = "unexpected bytes after the JSON object"; break;
	case 15: st_json(b, "{\"__metadata__\":{\"a\":1}}", 0); *w = (struct bad){WF_ERR_FORMAT, "__metadata__ key 'a'", "not a string"}; break;
	case 16: st_json(b, "{\"__metadata__\":[]}", 0); w->want1 = "__metadata__ is not an object"; break;
	case 17: st_json(b, "{\"__metadata__\":{\"a\":null}}", 0); w->want1 = "__metadata__ key 'a'"; break;
	case 18: st_json(b, "{\"t\":{\"shape\":[1],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "dtype missing"}; break;
	case 19: st_json(b, "{\"t\":{\"dtype\":7,\"shape\":[1],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "dtype missing or not a string"}; break;
	case 20: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "shape missing"}; break;
	case 21: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "data_offsets missing"}; break;
	case 22: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4,8]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "array of two"}; break;
	case 23: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[-1],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "shape[0]"}; break;
	case 24: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[2,1.5],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "shape[1]"}; break;
	case 25: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1e300],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "shape[0]"}; break;
	case 26: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[\"1\"],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "shape[0]"}; break;
	case 27: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[-4,0]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "data_offsets are not"}; break;
	case 28: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,9007199254740992]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "data_offsets are not"}; break;
	case 29: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,0]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "end before they begin"}; break;
	case 30: st_json(b, "{\"t\":{\"dtype\":\"F31\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "unknown dtype 'F31'"}; break;
	case 31: st_json(b, "{\"t\":{\"dtype\":\"f32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "unknown dtype 'f32'"}; break;
	case 32: st_json(b, "{\"t\":{\"dtype\":\"Q4_0\",\"shape\":[32],\"data_offsets\":[0,18]}}", 18); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "unknown dtype"}; break;
	case 33: st_json(b, "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4); *w = (struct bad){WF_ERR_FORMAT, "tensor 't'", "span 4 bytes but 2 elements of F32 take 8"}; break;
	case 34: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},\"b\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[8,12]}}", 12); *w = (struct bad){WF_ERR_FORMAT, "tensor 'b'", "(gap)"}; break;
	case 35: st_json(b, "{\"a\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[0,8]},\"b\":{\"dtype\":\"F64\",\"shape\":[1],\"data_offsets\":[4,12]}}", 12); *w = (struct bad){WF_ERR_FORMAT, "tensor 'b'", "(overlap)"}; break;
	case 36: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[4,8]}}", 8); *w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "begin at 4"}; break;
	case 37: wf_buf_puts(&j, "{\"a\":"); wf_buf_puts(&j, T4); wf_buf_putc(&j, '}'); st_file(b, j.data, j.len, 5);
		*w = (struct bad){WF_ERR_FORMAT, "data:", "trailing bytes"}; break;
	case 38: wf_buf_puts(&j, "{\"a\":"); wf_buf_puts(&j, T4); wf_buf_putc(&j, '}'); st_file(b, j.data, j.len, 3);
		*w = (struct bad){WF_ERR_FORMAT, "data:", "file truncated"}; break;
	case 39: wf_buf_puts(&j, "{\"a\":"); wf_buf_puts(&j, T4); wf_buf_puts(&j, ",\"a\":"); wf_buf_puts(&j, T4);
		wf_buf_putc(&j, '}'); st_file(b, j.data, j.len, 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "duplicate tensor name"}; break;
	case 40: st_json(b, "{\"__metadata__\":{},\"__metadata__\":{}}", 0); w->want1 = "duplicate key '__metadata__'"; break;
	case 41: st_json(b, "{\"a\":1}", 0); *w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "not an object"}; break;
	case 42: st_json(b, "{\"a\":{\"dtype\":\"U8\",\"shape\":[1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1],\"data_offsets\":[0,1]}}", 1);
		*w = (struct bad){WF_ERR_UNSUP, "tensor 'a'", "33 dimensions"}; break;
	case 43: wf_buf_puts(&j, "{\"a\":"); for (int k = 0; k < 100000; k++) wf_buf_putc(&j, '[');
		wf_buf_putc(&j, '}'); st_file(b, j.data, j.len, 0); w->want1 = "invalid JSON"; break;
	case 44: st_json(b, "{\"a\\u0000b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]}}", 1);
		*w = (struct bad){WF_ERR_UNSUP, "\\u0000", NULL}; break;
	case 45: st_json(b, "{\"a\":{\"dtype\":\"U8\",\"shape\":[4503599627370496,4503599627370496],\"data_offsets\":[0,1]}}", 1);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "element count overflows"}; break;
	case 46: st_json(b, "{\"a\":{\"dtype\":\"F4\",\"shape\":[3],\"data_offsets\":[0,2]}}", 2);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "element count 3 is not a multiple of the F4 block size 2"}; break;
	case 47: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[4503599627370496,4096],\"data_offsets\":[0,1]}}", 1);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "overflows"}; break;
	case 48: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0]}}", 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "data_offsets"}; break;
	case 49: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":1,\"data_offsets\":[0,4]}}", 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "shape missing or not an array"}; break;
	case 50: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}", 4); w->want1 = "invalid JSON"; break;
	case 51: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]},}", 4); w->want1 = "invalid JSON"; break;
	case 52: st_json(b, "{\"a\":\"\\x\"}", 0); w->want1 = "invalid JSON"; break;
	/* cJSON is laxer than JSON; the reference (serde_json) refuses these */
	case 53: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[01],\"data_offsets\":[0,4]}}", 4); w->want1 = "JSON"; break;
	case 54: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.],\"data_offsets\":[0,4]}}", 4); w->want1 = "JSON"; break;
	case 55: st_json(b, "{\x01\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); w->want1 = "JSON"; break;
	case 56: st_json(b, "{\"a\x1f\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); w->want1 = "JSON"; break;
	case 57: st_json(b, "{\"__metadata__\":{\"k\":\"tab\there\"}}", 0); w->want1 = "JSON"; break;
	case 58: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[-01],\"data_offsets\":[0,4]}}", 4); w->want1 = "JSON"; break;
	case 59: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"x\":1.e5}}", 4); w->want1 = "JSON"; break;
	/* issue 17 item 10: what cJSON would take one way and Python's json another */
	case 60: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"dtype\":\"I32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "dtype given twice"}; break;
	case 61: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"shape\":[1],\"data_offsets\":[0,4]}}", 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "shape given twice"}; break;
	case 62: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4],\"data_offsets\":[0,4]}}", 4);
		*w = (struct bad){WF_ERR_FORMAT, "tensor 'a'", "data_offsets given twice"}; break;
	case 63: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1.0],\"data_offsets\":[0,4]}}", 4);
		w->want1 = "in a shape or data_offsets has a fraction or exponent"; break;
	case 64: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1e0],\"data_offsets\":[0,4]}}", 4);
		w->want1 = "in a shape or data_offsets has a fraction or exponent"; break;
	case 65: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4.0]}}", 4);
		w->want1 = "in a shape or data_offsets has a fraction or exponent"; break;
	case 66: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"\\u0073hape\":[1E0],\"data_offsets\":[0,4]}}", 4);
		w->want1 = "in a shape or data_offsets has a fraction or exponent"; break;
	case 67: st_json(b, "{\"__metadata__\":{\"a\":\"1\",\"a\":\"2\"}}", 0);
		*w = (struct bad){WF_ERR_FORMAT, "__metadata__ key 'a'", "given twice"}; break;
	/* the object's own structure, now checked by wf_json_scan.c */
	case 68: st_json(b, "{,\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); w->want1 = "invalid JSON near byte 9"; break;
	case 69: st_json(b, "{\"a\" {\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", 4); w->want1 = "invalid JSON"; break;
	case 70: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]} \"b\":1}", 4); w->want1 = "invalid JSON"; break;
	case 71: st_json(b, "{\"a\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]]}", 4); w->want1 = "invalid JSON"; break;
	case 72: st_json(b, "{\"a\":}", 0); w->want1 = "invalid JSON"; break;
	case 73: st_json(b, "{\"a\":{\"b\":\"}\"}", 0); w->want1 = "invalid JSON"; break;
	default: wf_buf_free(&j); return false;
	}
	wf_buf_free(&j);
	return true;
}

#define N_BAD_ST 74

START_TEST(test_st_bad)
{
	struct wf_buf b = {0};
	struct bad w;
	ck_assert(bad_st(_i, &b, &w));
	expect_fail(P_ST, &b, w.code, w.want1, w.want2);
	wf_buf_free(&b);
}
END_TEST

START_TEST(test_st_bad_count)
{
	struct wf_buf b = {0};
	struct bad w;
	ck_assert(!bad_st(N_BAD_ST, &b, &w));
	wf_buf_free(&b);
}
END_TEST

/* A real header of 100 MB + 1 in a sparse file: refused before any of it
 * is read. */
START_TEST(test_st_huge_header_file)
{
	char path[] = "/tmp/wf-check-XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	uint8_t h[8];
	uint64_t n = 100000001;
	for (int i = 0; i < 8; i++)
		h[i] = (uint8_t)(n >> (8 * i));
	ck_assert_int_eq(write(fd, h, 8), 8);
	ck_assert_int_eq(pwrite(fd, "{", 1, 8), 1);
	ck_assert_int_eq(ftruncate(fd, (off_t)(8 + n + 16)), 0);
	close(fd);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN] = "";
	enum wf_err rc = wf_open_file(&m, path, err);
	unlink(path);
	ck_assert_int_eq(rc, WF_ERR_FORMAT);
	ck_assert_ptr_null(m);
	check_err(err, "exceeds the 100 MB limit", NULL);
}
END_TEST

/* The dispatcher: a ".gguf" name without the magic still gets the GGUF
 * message, unless the bytes look like a safetensors header. */
START_TEST(test_dispatch)
{
	static const uint8_t junk[] = "NOPE-not-a-model-at-all";
	struct wf_model *m;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_open_parse(&m, junk, sizeof junk - 1, "x.GGUF", err), WF_ERR_FORMAT);
	check_err(err, "bad magic", NULL);
	ck_assert_int_eq(wf_open_parse(&m, junk, sizeof junk - 1, "x.safetensors", err), WF_ERR_FORMAT);
	check_err(err, "header", NULL);
	ck_assert_int_eq(wf_open_parse(&m, junk, 0, "x.safetensors", err), WF_ERR_FORMAT);
	check_err(err, "too short", NULL);
	/* named neither, and not either inside */
	ck_assert_int_eq(wf_open_parse(&m, junk, 0, NULL, err), WF_ERR_FORMAT);
	check_err(err, "not a GGUF or safetensors file", "empty");
	ck_assert_int_eq(wf_open_parse(&m, junk, sizeof junk - 1, "README.md", err), WF_ERR_FORMAT);
	check_err(err, "not a GGUF or safetensors file", "text");
	static const uint8_t zip[] = "PK\3\4\24\0\0\0\10\0rest";
	ck_assert_int_eq(wf_open_parse(&m, zip, sizeof zip - 1, "pytorch_model.bin", err), WF_ERR_FORMAT);
	check_err(err, "not a GGUF or safetensors file", "zip");
	static const uint8_t pickle[] = "\x80\x02}q\0(X\x05\0\0\0";
	ck_assert_int_eq(wf_open_parse(&m, pickle, sizeof pickle - 1, "model.pkl", err), WF_ERR_FORMAT);
	check_err(err, "not a GGUF or safetensors file", "pickle");
	struct wf_buf b = {0};
	st_json(&b, "{}", 0);
	ck_assert_int_eq(wf_open_parse(&m, (const uint8_t *)b.data, b.len, "misnamed.gguf", err), WF_OK);
	ck_assert_int_eq(m->format, WF_FMT_SAFETENSORS);
	wf_model_free(m);
	wf_buf_free(&b);
}
END_TEST

/* ---- the committed malformed corpus ---- */

static char *corpus_dir(void)
{
	const char *d = getenv("WF_MALFORMED_DIR");
	return strdup(d && *d ? d : "tests/malformed");
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	size_t cap = 4096, n = 0;
	uint8_t *p = malloc(cap);
	for (;;) {
		if (n == cap) {
			cap *= 2;
			p = realloc(p, cap);
		}
		ck_assert_ptr_nonnull(p);
		size_t r = fread(p + n, 1, cap - n, f);
		if (r == 0)
			break;
		n += r;
	}
	fclose(f);
	/* an exact-size copy, so ASan sees a one-byte over-read */
	uint8_t *q = malloc(n ? n : 1);
	ck_assert_ptr_nonnull(q);
	memcpy(q, p, n);
	free(p);
	*len = n;
	return q;
}

START_TEST(test_corpus)
{
	char *dir = corpus_dir();
	char path[PATH_MAX];
	snprintf(path, sizeof path, "%s/expect.json", dir);
	size_t len;
	uint8_t *text = slurp(path, &len);
	ck_assert_msg(text != NULL, "cannot read %s (run from the repo root or set WF_MALFORMED_DIR)", path);
	cJSON *list = cJSON_ParseWithLength((const char *)text, len);
	ck_assert_msg(cJSON_IsArray(list), "%s is not a JSON list", path);
	int n = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, list) {
		const cJSON *file = cJSON_GetObjectItemCaseSensitive(e, "file");
		const cJSON *ex = cJSON_GetObjectItemCaseSensitive(e, "exit");
		const cJSON *msg = cJSON_GetObjectItemCaseSensitive(e, "message");
		ck_assert(cJSON_IsString(file) && cJSON_IsNumber(ex) && cJSON_IsString(msg));
		ck_assert_msg(ex->valueint == 3 || ex->valueint == 4, "%s: exit %d", file->valuestring, ex->valueint);
		enum wf_err want = ex->valueint == 3 ? WF_ERR_FORMAT : WF_ERR_UNSUP;
		snprintf(path, sizeof path, "%s/%s", dir, file->valuestring);
		size_t flen;
		uint8_t *buf = slurp(path, &flen);
		ck_assert_msg(buf != NULL, "cannot read %s", path);
		ck_assert_msg(flen < 65536, "%s: %zu bytes, the corpus keeps files under 64 KiB", path, flen);
		struct wf_model *m = NULL;
		char err[WF_ERRLEN] = "";
		enum wf_err rc = wf_open_parse(&m, buf, flen, file->valuestring, err);
		ck_assert_msg(rc == want, "%s: rc %d, want %d (%s)", file->valuestring, rc, want, err);
		ck_assert_msg(strstr(err, msg->valuestring) != NULL, "%s: error \"%s\" lacks \"%s\"",
			      file->valuestring, err, msg->valuestring);
		check_err(err, NULL, NULL);
		free(buf);
		/* the mapped path the binary takes says the same */
		char err2[WF_ERRLEN] = "";
		rc = wf_open_file(&m, path, err2);
		ck_assert_msg(rc == want, "%s: wf_open_file rc %d (%s)", file->valuestring, rc, err2);
		ck_assert_str_eq(err2, err);
		n++;
	}
	ck_assert_msg(n >= 60, "only %d corpus entries", n);
	cJSON_Delete(list);
	free(text);
	free(dir);
}
END_TEST

/* tests/valid: edge files that must parse. */
START_TEST(test_valid_edges)
{
	static const char *const files[] = {"zero_tensors.gguf", "zero_size_tensor.gguf", "scalar.gguf",
		"gaps_any_order.gguf",
		"zero_tensors.safetensors", "zero_size_tensor.safetensors", "scalar.safetensors"};
	const char *d = getenv("WF_VALID_DIR");
	for (size_t i = 0; i < WF_ARRAY_LEN(files); i++) {
		char path[PATH_MAX];
		snprintf(path, sizeof path, "%s/%s", d && *d ? d : "tests/valid", files[i]);
		struct wf_model *m = NULL;
		char err[WF_ERRLEN] = "";
		enum wf_err rc = wf_open_file(&m, path, err);
		ck_assert_msg(rc == WF_OK, "%s: %s", path, err);
		wf_model_free(m);
	}
}
END_TEST

static Suite *model_suite(void)
{
	Suite *s = suite_create("model");
	TCase *tc;

	tc = tcase_create("gguf");
	tcase_add_loop_test(tc, test_gguf_valid, 0, 10);
	tcase_add_loop_test(tc, test_gguf_prefixes, 0, 2);
	tcase_add_test(tc, test_gguf_zero_tensors);
	tcase_add_test(tc, test_gguf_metadata_json);
	tcase_add_loop_test(tc, test_gguf_bad, 0, N_BAD_GGUF);
	tcase_add_test(tc, test_gguf_bad_count);
	tcase_add_test(tc, test_gguf_type_ids);
	tcase_add_test(tc, test_gguf_ndims0);
	tcase_add_test(tc, test_gguf_err_quoting);
	tcase_add_test(tc, test_gguf_binary_names);
	tcase_add_test(tc, test_gguf_invalid_utf8_distinct);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("safetensors");
	tcase_add_test(tc, test_st_valid);
	tcase_add_test(tc, test_st_empty);
	tcase_add_test(tc, test_st_json_oom);
	tcase_add_test(tc, test_st_dtypes);
	tcase_add_loop_test(tc, test_st_bad, 0, N_BAD_ST);
	tcase_add_test(tc, test_st_bad_count);
	tcase_add_test(tc, test_st_huge_header_file);
	tcase_add_test(tc, test_dispatch);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);

	tc = tcase_create("corpus");
	tcase_add_test(tc, test_corpus);
	tcase_add_test(tc, test_valid_edges);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(model_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
