/* check_st_stream.c - model.safetensors' header made a window at a time
 * (mount/wf_st_stream.c) is byte for byte the header wf_st_header builds
 * whole, for models whose strings are cut into pieces (long names, keys
 * and values with escapes, multi-byte characters, stray bytes, surrogate
 * pairs), read in windows of every alignment. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"
#include "model/wf_meta.h"
#include "model/wf_model.h"
#include "mount/wf_gen.h"
#include "mount/wf_st_stream.h"
#include "view/wf_view.h"

static unsigned long rng = 12345;

static unsigned rnd(unsigned n)
{
	rng = rng * 6364136223846793005ul + 1442695040888963407ul;
	return (unsigned)((rng >> 33) % n);
}

/* n bytes of a name: ASCII, multi-byte characters, stray bytes. */
static void rand_bytes(struct wf_buf *b, size_t n)
{
	static const char *bits[] = {"a", "b.", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xff", "\xc3",
				     "\x80", "\"", "\\", "\n", "\x01", "z"};
	while (b->len < n)
		wf_buf_puts(b, bits[rnd(sizeof bits / sizeof bits[0])]);
}

/* JSON string text of about n bytes as our metadata.json writes it, with
 * escapes of every kind, \udcXX stray bytes and surrogate pairs. */
static void rand_json_str(struct wf_buf *b, size_t n)
{
	static const char *bits[] = {"a", "bc", "\\\"", "\\\\", "\\n", "\\t", "\\u0001", "\\udcff", "\\udc80",
				     "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\\u00e9", "/", "\\/", "x"};
	size_t start = b->len;
	wf_buf_putc(b, '"');
	while (b->len - start < n)
		wf_buf_puts(b, bits[rnd(sizeof bits / sizeof bits[0])]);
	wf_buf_putc(b, '"');
}

static void add_tensor(struct wf_model *m, const char *name, size_t len, int type, uint64_t rows)
{
	struct wf_tensor *t = &m->tensors[m->n_tensors++];
	t->name = malloc(len + 1);
	memcpy(t->name, name, len);
	t->name[len] = '\0';
	t->name_len = len;
	t->type = type;
	t->ndim = 2;
	t->shape = malloc(2 * sizeof *t->shape);
	t->shape[0] = rows;
	t->shape[1] = 32;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tensor_sizes(t, true, err), WF_OK);
}

/* The stream's bytes equal wf_st_header's, read whole and in windows. */
static void check_same(const struct wf_model *m)
{
	char *hdr;
	uint64_t hl, *offs, sl, *soffs;
	ck_assert_int_eq(wf_st_header(m, &hdr, &hl, &offs), WF_OK);
	struct wf_st_stream *s;
	ck_assert_int_eq(wf_st_stream_new(m, &s, &sl, &soffs), WF_OK);
	ck_assert_uint_eq(sl, hl);
	ck_assert_int_eq(memcmp(offs, soffs, (m->n_tensors + 1) * sizeof *offs), 0);
	char *buf = malloc(hl);
	ck_assert_int_eq(wf_st_stream_read(s, 0, hl, buf), WF_OK);
	if (memcmp(buf, hdr, hl) != 0) {
		uint64_t i = 0;
		while (buf[i] == hdr[i])
			i++;
		ck_abort_msg("byte %llu of %llu: %02x, want %02x", (unsigned long long)i, (unsigned long long)hl,
			     (unsigned char)buf[i], (unsigned char)hdr[i]);
	}
	/* windows of odd sizes at odd places, as reads ask for them */
	for (uint64_t off = 0; off < hl; off += 1 + rnd(40000)) {
		size_t n = 1 + rnd(70000);
		if (n > hl - off)
			n = hl - off;
		memset(buf, 0, n);
		ck_assert_int_eq(wf_st_stream_read(s, off, n, buf), WF_OK);
		ck_assert_msg(memcmp(buf, hdr + off, n) == 0, "window at %llu, %zu bytes", (unsigned long long)off, n);
	}
	ck_assert_int_ne(wf_st_stream_read(s, hl, 1, buf), WF_OK);
	free(buf);
	free(hdr);
	free(offs);
	free(soffs);
	wf_st_stream_free(s);
}

static struct wf_model *model_with(const char *meta, size_t cap)
{
	struct wf_model *m = wf_model_new(WF_FMT_GGUF, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->tensors = calloc(cap, sizeof *m->tensors);
	m->metadata_json = strdup(meta);
	m->metadata_json_len = strlen(meta);
	return m;
}

START_TEST(test_small)
{
	struct wf_model *m = model_with("{\n \"general.name\": \"x\",\n \"n\": [1, 2]\n}\n", 4);
	add_tensor(m, "blk.0.w", 7, WF_T_Q8_0, 2);
	add_tensor(m, "bad\xff", 4, WF_T_I32, 1);
	add_tensor(m, "bad\xc3\xbf", 5, WF_T_F16, 3); /* meets the one before once mapped: ~2 */
	add_tensor(m, "", 0, WF_T_F32, 1);
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_RAW, err), WF_OK);
	check_same(m);
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_F32, err), WF_OK);
	check_same(m);
	wf_model_free(m);
	/* valid names that are renamed all the same: twice, and ours */
	m = model_with("{}", 4);
	add_tensor(m, "a", 1, WF_T_F32, 1);
	add_tensor(m, "__metadata__", 12, WF_T_F32, 1);
	add_tensor(m, "a", 1, WF_T_F32, 1);
	add_tensor(m, "a~2", 3, WF_T_F32, 1);
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_F32, err), WF_OK);
	check_same(m);
	wf_model_free(m);
	m = model_with("{}", 1);
	check_same(m);
	wf_model_free(m);
	/* renamed keys, ours met, the model's own format (not a string: left out) */
	m = model_with("{\"weightfs.stored_types\": \"mine\", \"k\\udcff\": \"1\", \"k\\u00ff\": \"2\","
		       " \"format\": 7, \"k\\u00ff~2\": \"3\"}\n", 1);
	add_tensor(m, "w", 1, WF_T_Q8_0, 2);
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_RAW, err), WF_OK);
	check_same(m);
	wf_model_free(m);
}
END_TEST

/* Strings far longer than a piece, and more tensors than a checkpoint's
 * stretch, so reads start from checkpoints inside strings. */
START_TEST(test_long)
{
	for (int round = 0; round < 4; round++) {
		struct wf_buf meta = {0}, nb = {0};
		wf_buf_puts(&meta, "{");
		if (round % 2)
			wf_buf_puts(&meta, "\"format\": "), rand_json_str(&meta, 40000 + rnd(9)), wf_buf_puts(&meta, ",");
		for (int k = 0; k < 5; k++) {
			wf_buf_puts(&meta, k ? ", " : "");
			rand_json_str(&meta, k == 2 ? 70000 + rnd(7) : 1 + rnd(30)); /* a long key */
			wf_buf_puts(&meta, ": ");
			if (k % 2)
				rand_json_str(&meta, 100000 + rnd(20000));
			else /* an array as its JSON text, strings inside */
				for (int e = 0, n = 3000 + (int)rnd(100); e < n; e++)
					wf_buf_puts(&meta, e == 0 ? "[" : ", "), rand_json_str(&meta, 1 + rnd(40)),
						wf_buf_puts(&meta, e == n - 1 ? "]" : "");
		}
		wf_buf_puts(&meta, "}\n");
		ck_assert(!meta.oom);
		struct wf_model *m = model_with(meta.data, 3003);
		for (int i = 0; i < 3000; i++) {
			nb.len = 0;
			rand_bytes(&nb, i % 997 == 5 ? 50000 + rnd(30000) : 1 + rnd(20));
			wf_buf_printf(&nb, "%d", i % 1500); /* the same stray-byte names now and then */
			add_tensor(m, nb.data, nb.len, i % 3 ? WF_T_F16 : WF_T_Q4_0, 1 + rnd(3));
		}
		char err[WF_ERRLEN];
		ck_assert_int_eq(wf_model_set_view(m, round < 2 ? WF_VK_RAW : WF_VK_F32, err), WF_OK);
		check_same(m);
		wf_model_free(m);
		wf_buf_free(&meta);
		wf_buf_free(&nb);
	}
}
END_TEST

static void g_u32(struct wf_buf *b, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		wf_buf_putc(b, (char)(v >> (8 * i)));
}

static void g_u64(struct wf_buf *b, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		wf_buf_putc(b, (char)(v >> (8 * i)));
}

static void g_str(struct wf_buf *b, const char *s, size_t n)
{
	g_u64(b, n);
	wf_buf_put(b, s, n);
}

/* A GGUF's header is made from its key/values in the file, never from a
 * whole metadata.json (wf_meta.h): the same bytes as wf_st_header makes
 * from the text (the oracle: the text set on the model, no generator).
 * Keys that meet once stray bytes are characters, "format", long keys and
 * values with every kind of byte, a long float array. */
START_TEST(test_gguf)
{
	struct wf_buf b = {0}, lng = {0}, lk = {0};
	rand_bytes(&lng, 50000);
	rand_bytes(&lk, 40000);
	wf_buf_put(&b, "GGUF", 4);
	g_u32(&b, 3);
	g_u64(&b, 0);
	g_u64(&b, 8);
	g_str(&b, "k\xff", 2), g_u32(&b, 8), g_str(&b, "a", 1);
	g_str(&b, "k\xc3\xbf", 3), g_u32(&b, 8), g_str(&b, "b\xff\x01", 3);
	g_str(&b, "format", 6), g_u32(&b, 8), g_str(&b, "gguf\xc3", 5);
	g_str(&b, "weightfs.stored_types", 21), g_u32(&b, 4), g_u32(&b, 7);
	g_str(&b, "long", 4), g_u32(&b, 8), g_str(&b, lng.data, lng.len);
	g_str(&b, lk.data, lk.len), g_u32(&b, 7), wf_buf_putc(&b, 1);
	g_str(&b, "floats", 6), g_u32(&b, 9), g_u32(&b, 6), g_u64(&b, 30000);
	for (uint32_t i = 0; i < 30000; i++)
		g_u32(&b, 0x3f800000u + i * 977u);
	g_str(&b, "strs", 4), g_u32(&b, 9), g_u32(&b, 8), g_u64(&b, 3);
	g_str(&b, "x\"", 2), g_str(&b, "", 0), g_str(&b, "\xe2\x82", 2);
	struct wf_model *m;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_gguf_parse(&m, (const uint8_t *)b.data, b.len, err), WF_OK);
	ck_assert_ptr_null(m->metadata_json);
	char *hdr, *buf;
	uint64_t hl, *offs, sl, *soffs;
	size_t tl;
	struct wf_gguf_meta *g = m->meta_gen;
	ck_assert_int_eq(wf_meta_dup(m, &m->metadata_json, &tl, NULL), WF_OK);
	m->metadata_json_len = tl;
	m->meta_gen = NULL;
	ck_assert_int_eq(wf_st_header(m, &hdr, &hl, &offs), WF_OK);
	free(m->metadata_json);
	m->metadata_json = NULL;
	m->meta_gen = g;
	struct wf_st_stream *s;
	ck_assert_int_eq(wf_st_stream_new(m, &s, &sl, &soffs), WF_OK);
	ck_assert_uint_eq(sl, hl);
	buf = malloc(hl);
	ck_assert_int_eq(wf_st_stream_read(s, 0, hl, buf), WF_OK);
	ck_assert(memcmp(buf, hdr, hl) == 0);
	for (uint64_t off = 0; off < hl; off += 1 + rnd(20000)) {
		size_t n = 1 + rnd(30000);
		if (n > hl - off)
			n = hl - off;
		ck_assert_int_eq(wf_st_stream_read(s, off, n, buf), WF_OK);
		ck_assert_msg(memcmp(buf, hdr + off, n) == 0, "window at %llu, %zu bytes", (unsigned long long)off, n);
	}
	ck_assert_ptr_nonnull(strstr(hdr + 8, "\"k\u00ff~2\"") ? hdr + 8 : NULL);
	free(buf);
	free(hdr);
	free(offs);
	free(soffs);
	wf_st_stream_free(s);
	wf_model_free(m);
	wf_buf_free(&b);
	wf_buf_free(&lng);
	wf_buf_free(&lk);
}
END_TEST

static Suite *st_stream_suite(void)
{
	Suite *s = suite_create("st_stream");
	TCase *tc = tcase_create("same");
	tcase_add_test(tc, test_small);
	tcase_add_test(tc, test_long);
	tcase_add_test(tc, test_gguf);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(st_stream_suite());
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
