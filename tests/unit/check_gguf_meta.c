/* check_gguf_meta.c - a GGUF's metadata.json made a window at a time
 * (model/wf_gguf_meta.c) is byte for byte the text weightfs used to build
 * whole when the model opened.
 *
 * The oracle below is that builder as it was (wf_gguf.c's metadata_json,
 * kept here only: src/ never builds the text whole), walking the key/values
 * with wf_gguf_kvs.  Every file is read whole, in windows of many sizes
 * (1 byte, primes, a checkpoint's step and around it) from many offsets,
 * and through the metadata/ files' view (wf_meta_gguf_value); a file
 * changed under the generator gives WF_ERR_CHANGED, never other bytes.
 */
#include "base/wf_buf.h"
#include "model/wf_gguf.h"
#include "model/wf_gguf_meta.h"
#include "model/wf_meta.h"
#include "model/wf_model.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ORACLE "tests/data/ggml-oracle"

/* ------------------------------------------------------------ the oracle */

enum { GV_U8, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL, GV_STR, GV_ARR, GV_U64, GV_I64, GV_F64 };
static const uint8_t vsize[] = {1, 1, 2, 2, 4, 4, 4, 1, 0, 0, 8, 8, 8};

static void json_scalar(struct wf_buf *b, uint32_t t, const uint8_t *p)
{
	uint32_t u32;
	uint64_t u64;
	float f;
	double d;
	switch (t) {
	case GV_U8: wf_buf_printf(b, "%u", p[0]); break;
	case GV_I8: wf_buf_printf(b, "%d", (int8_t)p[0]); break;
	case GV_U16: wf_buf_printf(b, "%u", wf_le16(p)); break;
	case GV_I16: wf_buf_printf(b, "%d", (int16_t)wf_le16(p)); break;
	case GV_U32: wf_buf_printf(b, "%" PRIu32, wf_le32(p)); break;
	case GV_I32: wf_buf_printf(b, "%" PRId32, (int32_t)wf_le32(p)); break;
	case GV_U64: wf_buf_printf(b, "%" PRIu64, wf_le64(p)); break;
	case GV_I64: wf_buf_printf(b, "%" PRId64, (int64_t)wf_le64(p)); break;
	case GV_BOOL: wf_buf_puts(b, p[0] ? "true" : "false"); break;
	case GV_F32:
		u32 = wf_le32(p);
		memcpy(&f, &u32, 4);
		wf_buf_json_f32(b, f);
		break;
	case GV_F64:
		u64 = wf_le64(p);
		memcpy(&d, &u64, 8);
		wf_buf_json_f64(b, d);
		break;
	}
}

static const uint8_t *json_gstr(struct wf_buf *b, const uint8_t *p)
{
	uint64_t n = wf_le64(p);
	wf_buf_json_str(b, p + 8, (size_t)n);
	return p + 8 + n;
}

/* The old builder: one entry per key/value, framed as wf_meta.h says. */
static void oracle_kv(struct wf_meta_json *w, const uint8_t *buf, const struct wf_gguf_kv *kv)
{
	struct wf_buf *b = &w->b;
	wf_meta_json_key(w, buf + kv->key, (size_t)kv->key_len);
	const uint8_t *p = buf + kv->val;
	if (kv->type == GV_STR) {
		json_gstr(b, p);
	} else if (kv->type == GV_ARR) {
		uint32_t elem = wf_le32(p - 12);
		uint64_t count = wf_le64(p - 8);
		ck_assert_uint_eq(elem, kv->elem);
		ck_assert_uint_eq(count, kv->count);
		wf_buf_putc(b, '[');
		for (uint64_t j = 0; j < count; j++) {
			if (j)
				wf_buf_puts(b, ", ");
			if (elem == GV_STR) {
				p = json_gstr(b, p);
			} else {
				json_scalar(b, elem, p);
				p += vsize[elem];
			}
		}
		wf_buf_putc(b, ']');
	} else {
		json_scalar(b, kv->type, p);
	}
}

static char *oracle(const uint8_t *buf, size_t len, size_t *out_len)
{
	struct wf_meta_json w = {0};
	char err[WF_ERRLEN];
	struct wf_model *m = NULL;
	ck_assert_msg(wf_gguf_parse(&m, buf, len, err) == WF_OK, "%s", err);
	for (size_t i = 0; i < m->kvs->n; i++)
		oracle_kv(&w, buf, &m->kvs->kv[i]);
	wf_model_free(m);
	wf_buf_puts(&w.b, w.n ? "\n}\n" : "{}\n");
	ck_assert(wf_buf_finish(&w.b));
	*out_len = w.b.len;
	return w.b.data;
}

/* --------------------------------------------------- the files compared */

/* Reads [off, off + n) through the model and compares it with want. */
static void window_eq(const struct wf_model *m, const char *want, uint64_t off, size_t n, char *buf)
{
	enum wf_err rc = wf_meta_read(m, off, n, buf, NULL);
	ck_assert_msg(rc == WF_OK, "read [%" PRIu64 ", +%zu): %d", off, n, rc);
	ck_assert_msg(memcmp(buf, want + off, n) == 0, "window [%" PRIu64 ", +%zu) differs", off, n);
}

/* Windows of size w from a few starts, covering the text; when that would
 * be many reads (each makes up to two steps of text again), about 150
 * windows spread over it instead. */
static void windows_of(const struct wf_model *m, const char *want, size_t len, size_t w, char *buf)
{
	size_t starts[] = {0, w / 2 + 1, w - 1};
	for (size_t s = 0; s < 3; s++) {
		size_t stride = len / w > 150 ? (len / 150) | 1 : w;
		for (size_t off = starts[s] < len ? starts[s] : 0; off < len; off += stride)
			window_eq(m, want, off, len - off < w ? len - off : w, buf);
	}
}

/* The metadata/ files: a string's raw bytes, any other value its text. */
static void values_eq(const struct wf_model *m, const char *want)
{
	const struct wf_gguf_meta *g = m->meta_gen;
	for (size_t i = 0; i < wf_gguf_meta_count(g); i++) {
		const struct wf_gguf_kv *k = wf_gguf_meta_key(g, i);
		const struct wf_gguf_meta_text *tx = wf_gguf_meta_text(g, i);
		uint64_t n = wf_gguf_meta_value_len(g, i);
		char *v = malloc(n + 1);
		ck_assert_ptr_nonnull(v);
		ck_assert_int_eq(wf_meta_gguf_value(m, i, 0, (size_t)n, v, NULL), WF_OK);
		if (k->type == GV_STR) {
			/* the JSON string in the text, made from exactly these bytes */
			struct wf_buf j = {0};
			wf_buf_json_str(&j, v, (size_t)n);
			ck_assert_uint_eq(j.len, tx->v1 - tx->v0);
			ck_assert(memcmp(j.data, want + tx->v0, j.len) == 0);
			wf_buf_free(&j);
		} else {
			ck_assert(memcmp(v, want + tx->v0, (size_t)n) == 0);
		}
		if (n > 2) { /* a window inside it */
			char c;
			ck_assert_int_eq(wf_meta_gguf_value(m, i, n / 2, 1, &c, NULL), WF_OK);
			ck_assert_int_eq(c, v[n / 2]);
		}
		ck_assert_int_eq(wf_meta_gguf_value(m, i, n, 1, v, NULL), WF_ERR_RANGE);
		struct wf_buf key = {0};
		ck_assert_int_eq(wf_meta_gguf_key(m, i, &key, NULL), WF_OK);
		ck_assert_uint_eq(key.len, k->key_len);
		wf_buf_free(&key);
		free(v);
	}
}

/* Parses buf, compares the generator's text with the oracle's every way. */
static void check_bytes(const uint8_t *buf, size_t len, const char *what)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_gguf_parse(&m, buf, len, err) == WF_OK, "%s: %s", what, err);
	ck_assert_ptr_null(m->metadata_json); /* never whole */
	ck_assert_ptr_nonnull(m->meta_gen);
	size_t wl;
	char *want = oracle(buf, len, &wl);
	ck_assert_msg(wf_meta_len(m) == wl, "%s: length %" PRIu64 ", oracle %zu", what, wf_meta_len(m), wl);
	char *text;
	size_t tl;
	ck_assert_int_eq(wf_meta_dup(m, &text, &tl, NULL), WF_OK);
	ck_assert_uint_eq(tl, wl);
	ck_assert_msg(memcmp(text, want, wl) == 0, "%s: the text differs", what);
	ck_assert_int_eq(text[tl], '\0');
	free(text);
	char *win = malloc(wl > 300000 ? wl : 300000);
	ck_assert_ptr_nonnull(win);
	static const size_t sizes[] = {1, 2, 7, 127, 4093, WF_GGUF_META_STEP - 1, WF_GGUF_META_STEP + 1, 262147};
	for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++)
		windows_of(m, want, wl, sizes[s], win);
	/* one byte at every offset near the first checkpoints' steps */
	for (uint64_t c = WF_GGUF_META_STEP; c < wl && c < 5 * WF_GGUF_META_STEP; c += WF_GGUF_META_STEP)
		for (uint64_t o = c - 24; o < c + 24 && o < wl; o++)
			window_eq(m, want, o, 1, win);
	window_eq(m, want, 0, wl, win);
	ck_assert_int_eq(wf_meta_read(m, wl, 1, win, NULL), WF_ERR_RANGE);
	ck_assert_int_eq(wf_meta_read(m, wl + 1, 0, win, NULL), WF_ERR_RANGE);
	ck_assert_int_eq(wf_meta_read(m, wl, 0, win, NULL), WF_OK);
	values_eq(m, want);
	free(win);
	free(want);
	wf_model_free(m);
}

static uint8_t *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "%s", path);
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *b = malloc((size_t)n + 1);
	ck_assert(b && fread(b, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	*len = (size_t)n;
	return b;
}

/* Every GGUF of the ggml oracle, written by ggml's own writer. */
START_TEST(test_oracle_files)
{
	DIR *d = opendir(ORACLE);
	ck_assert_ptr_nonnull(d);
	struct dirent *e;
	int n = 0;
	while ((e = readdir(d)) != NULL) {
		size_t l = strlen(e->d_name);
		if (l < 6 || strcmp(e->d_name + l - 5, ".gguf") != 0)
			continue;
		char path[512];
		snprintf(path, sizeof path, "%s/%s", ORACLE, e->d_name);
		size_t len;
		uint8_t *b = slurp(path, &len);
		check_bytes(b, len, e->d_name);
		free(b);
		n++;
	}
	closedir(d);
	ck_assert_int_ge(n, 3);
}
END_TEST

/* ------------------------------------------------- GGUFs made here */

static void u32(struct wf_buf *b, uint32_t v)
{
	uint8_t le[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)};
	wf_buf_put(b, le, 4);
}

static void u64(struct wf_buf *b, uint64_t v)
{
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, le, 8);
}

static void gstr(struct wf_buf *b, const void *s, size_t n)
{
	u64(b, n);
	wf_buf_put(b, s, n);
}

static void key(struct wf_buf *b, const char *k, uint32_t type)
{
	gstr(b, k, strlen(k));
	u32(b, type);
}

/* A scalar of type t from the pseudo-random v. */
static void scalar(struct wf_buf *b, uint32_t t, uint64_t v)
{
	if (t == GV_BOOL) {
		uint8_t c = (uint8_t)(v % 3 == 0 ? 0 : v % 3 == 1 ? 1 : 0x80); /* any non-zero is true */
		wf_buf_put(b, &c, 1);
		return;
	}
	if (t == GV_F32 && v % 7 == 0) { /* NaN, infinities, -0.0 */
		static const uint32_t sp[] = {0x7fc00000u, 0x7f800000u, 0xff800000u, 0x80000000u};
		u32(b, sp[v / 7 % 4]);
		return;
	}
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, le, vsize[t]);
}

static uint64_t rnd(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Strings that test the escaper: controls, quotes, valid and invalid
 * UTF-8, sequences cut short, surrogates, NUL. */
static const char *const odd_strings[] = {
	"", "plain", "a\"b\\c/d", "\n\t\r\b\f\x01\x1f\x7f", "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80",
	"\xff\xfe\x80\xbf", "\xc3", "\xe2\x82", "\xf0\x9f\x98", "\xed\xa0\x80", "\xc0\xaf", "\xf4\x90\x80\x80",
	"x\xc3\xa9\xc3", "\xe2\x80\xa8\xe2\x80\xa9", "tab\there",
};

/* A long string: every kind of byte, stray continuation runs, sequences
 * across every offset a piece could end at. */
static void long_string(struct wf_buf *s, size_t n, uint64_t seed)
{
	static const char *const units[] = {"abc", "\"", "\\", "\n", "\x02", "\xc3\xa9", "\xe2\x82\xac",
					    "\xf0\x9f\x98\x80", "\x80", "\xbf\xbf\xbf\xbf\xbf", "\xff", "\xe2\x82"};
	while (s->len < n) {
		const char *u = units[rnd(&seed) % (sizeof units / sizeof *units)];
		wf_buf_put(s, u, strlen(u));
	}
}

static void make_rich(struct wf_buf *b, uint64_t seed, size_t long_n)
{
	static const uint32_t scal[] = {GV_U8, GV_I8, GV_U16, GV_I16, GV_U32, GV_I32, GV_F32, GV_BOOL,
					GV_U64, GV_I64, GV_F64};
	size_t ns = sizeof scal / sizeof *scal, no = sizeof odd_strings / sizeof *odd_strings;
	uint64_t n_kv = ns /* scalars */ + ns /* empty arrays */ + ns /* long arrays */ + no /* strings */ +
			4 /* empty array of strings, array of strings, long string, long key */;
	wf_buf_put(b, "GGUF", 4);
	u32(b, 3);
	u64(b, 0);
	u64(b, n_kv);
	char k[64];
	for (size_t i = 0; i < ns; i++) {
		snprintf(k, sizeof k, "scalar.%zu", i);
		key(b, k, scal[i]);
		scalar(b, scal[i], rnd(&seed));
	}
	for (size_t i = 0; i < ns; i++) {
		snprintf(k, sizeof k, "empty.%zu", i);
		key(b, k, GV_ARR);
		u32(b, scal[i]);
		u64(b, 0);
	}
	for (size_t i = 0; i < ns; i++) {
		snprintf(k, sizeof k, "long.%zu", i);
		key(b, k, GV_ARR);
		u32(b, scal[i]);
		size_t n = long_n / (vsize[scal[i]] * 2) + 3;
		u64(b, n);
		for (size_t j = 0; j < n; j++)
			scalar(b, scal[i], rnd(&seed));
	}
	for (size_t i = 0; i < no; i++) {
		snprintf(k, sizeof k, "str\xff.%zu\n\"", i); /* keys need escaping too */
		key(b, k, GV_STR);
		gstr(b, odd_strings[i], strlen(odd_strings[i]));
	}
	key(b, "strs.empty", GV_ARR);
	u32(b, GV_STR);
	u64(b, 0);
	key(b, "strs", GV_ARR);
	u32(b, GV_STR);
	size_t n = long_n / 8 + no;
	u64(b, n);
	for (size_t j = 0; j < n; j++) {
		const char *s = odd_strings[rnd(&seed) % no];
		gstr(b, s, strlen(s));
	}
	struct wf_buf s = {0};
	long_string(&s, long_n, seed);
	key(b, "long.string", GV_STR);
	gstr(b, s.data, s.len);
	/* a long key, and a plain value */
	u64(b, 1 + s.len / 3);
	wf_buf_putc(b, 'K');
	wf_buf_put(b, s.data, s.len / 3);
	u32(b, GV_U8);
	scalar(b, GV_U8, 7);
	wf_buf_free(&s);
	ck_assert(!b->oom);
}

/* Every value type, empty arrays, strings that need escapes, long arrays
 * and strings crossing many checkpoints. */
START_TEST(test_made_files)
{
	static const size_t longs[] = {0, 100, 70000, 200000};
	for (size_t i = 0; i < sizeof longs / sizeof *longs; i++) {
		struct wf_buf b = {0};
		make_rich(&b, 0x9e3779b97f4a7c15ULL + i, longs[i]);
		char what[64];
		snprintf(what, sizeof what, "rich, long %zu", longs[i]);
		check_bytes((const uint8_t *)b.data, b.len, what);
		wf_buf_free(&b);
	}
}
END_TEST

/* No key at all: "{}\n". */
START_TEST(test_empty)
{
	struct wf_buf b = {0};
	wf_buf_put(&b, "GGUF", 4);
	u32(&b, 3);
	u64(&b, 0);
	u64(&b, 0);
	check_bytes((const uint8_t *)b.data, b.len, "empty");
	wf_buf_free(&b);
}
END_TEST

/* Values that end the file, in a buffer of exactly its bytes: nothing is
 * read past a value (an f32 once was read as 8 bytes). */
START_TEST(test_value_ends_file)
{
	static const uint32_t types[] = {GV_F32, GV_U8, GV_U16, GV_F64, GV_STR, GV_ARR};
	for (size_t i = 0; i < sizeof types / sizeof *types; i++) {
		struct wf_buf b = {0};
		wf_buf_put(&b, "GGUF", 4);
		u32(&b, 3);
		u64(&b, 0);
		u64(&b, 1);
		key(&b, "last", types[i]);
		if (types[i] == GV_STR) {
			gstr(&b, "\xc3", 1);
		} else if (types[i] == GV_ARR) {
			u32(&b, GV_F32);
			u64(&b, 3);
			for (int j = 0; j < 3; j++)
				scalar(&b, GV_F32, 0x3fc00000u + (uint64_t)j);
		} else {
			scalar(&b, types[i], 0x40490fdb40490fdbull);
		}
		uint8_t *exact = malloc(b.len);
		memcpy(exact, b.data, b.len);
		check_bytes(exact, b.len, "a value ending the file");
		free(exact);
		wf_buf_free(&b);
	}
}
END_TEST

/* A 2,000,000-element bool array: the generator keeps a checkpoint per
 * step of text, not the text (13 MB) nor a record per element. */
START_TEST(test_bool_array_small_state)
{
	struct wf_buf b = {0};
	wf_buf_put(&b, "GGUF", 4);
	u32(&b, 3);
	u64(&b, 0);
	u64(&b, 1);
	key(&b, "bools", GV_ARR);
	u32(&b, GV_BOOL);
	u64(&b, 2000000);
	for (size_t j = 0; j < 2000000; j++)
		wf_buf_putc(&b, (char)(j % 5 == 0));
	check_bytes((const uint8_t *)b.data, b.len, "bools");
	wf_buf_free(&b);
}
END_TEST

/* A file changed under the generator: errors, never bytes. */
START_TEST(test_changed)
{
	struct wf_buf b = {0};
	make_rich(&b, 42, 70000);
	uint8_t *buf = malloc(b.len);
	memcpy(buf, b.data, b.len);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_gguf_parse(&m, buf, b.len, err), WF_OK);
	const struct wf_gguf_meta *g = m->meta_gen;
	uint64_t len = wf_gguf_meta_len(g);
	char *out = malloc(len);
	ck_assert_int_eq(wf_gguf_meta_read(g, buf, b.len, 0, len, out), WF_OK);
	/* shorter than measured: the walk finds its bytes outside */
	ck_assert_int_eq(wf_gguf_meta_read(g, buf, b.len / 2, 0, len, out), WF_ERR_CHANGED);
	ck_assert_int_eq(wf_gguf_meta_read(g, buf, 30, len - 10, 10, out), WF_ERR_CHANGED);
	/* each string's length, and each array's first string's, made larger */
	for (size_t i = 0; i < wf_gguf_meta_count(g); i++) {
		const struct wf_gguf_kv *k = wf_gguf_meta_key(g, i);
		const struct wf_gguf_meta_text *tx = wf_gguf_meta_text(g, i);
		uint64_t at = k->type == GV_STR ? k->val : k->type == GV_ARR && k->elem == GV_STR && k->count ? k->val : 0;
		if (!at)
			continue;
		buf[at + 1] ^= 0x10;
		ck_assert_int_eq(wf_gguf_meta_read(g, buf, b.len, tx->v0, (size_t)(tx->v1 - tx->v0), out), WF_ERR_CHANGED);
		ck_assert_int_eq(wf_meta_read(m, tx->v0, (size_t)(tx->v1 - tx->v0), out, NULL), WF_ERR_CHANGED);
		if (k->type == GV_STR && wf_gguf_meta_value_len(g, i) > 0)
			ck_assert_int_eq(wf_meta_gguf_value(m, i, 0, 1, out, NULL), WF_ERR_CHANGED);
		char *t;
		size_t tl;
		ck_assert_int_eq(wf_meta_dup(m, &t, &tl, NULL), WF_ERR_CHANGED);
		buf[at + 1] ^= 0x10;
	}
	/* a bool made false ("true" to "false"): the value's end moves */
	for (size_t i = 0; i < wf_gguf_meta_count(g); i++) {
		const struct wf_gguf_kv *k = wf_gguf_meta_key(g, i);
		const struct wf_gguf_meta_text *tx = wf_gguf_meta_text(g, i);
		if (k->type != GV_BOOL)
			continue;
		uint8_t was = buf[k->val];
		buf[k->val] = !was;
		ck_assert_int_eq(wf_gguf_meta_read(g, buf, b.len, tx->v0, (size_t)(tx->v1 - tx->v0 + 1), out),
				 WF_ERR_CHANGED);
		buf[k->val] = was;
	}
	/* a key's length changed */
	const struct wf_gguf_kv *k0 = wf_gguf_meta_key(g, 0);
	buf[k0->key - 8] ^= 1;
	ck_assert_int_eq(wf_meta_gguf_key_read(m, 0, 0, 1, out, NULL), WF_ERR_CHANGED);
	buf[k0->key - 8] ^= 1;
	ck_assert_int_eq(wf_gguf_meta_read(g, buf, b.len, 0, len, out), WF_OK);
	free(out);
	wf_model_free(m);
	free(buf);
	wf_buf_free(&b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("gguf_meta");
	TCase *tc = tcase_create("gguf_meta");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, test_oracle_files);
	tcase_add_test(tc, test_made_files);
	tcase_add_test(tc, test_empty);
	tcase_add_test(tc, test_value_ends_file);
	tcase_add_test(tc, test_bool_array_small_state);
	tcase_add_test(tc, test_changed);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
