/* check_out.c - unit tests for output dtypes and generated files: float32
 * to half and bfloat16 rounding (wf_view.c, wf_round.c), .npy headers, the
 * model.safetensors header and metadata files (wf_gen.c). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_buf.h"
#include "mount/wf_gen.h"
#include "model/wf_model.h"
#include "codec/wf_round.h"
#include "view/wf_view.h"
#include "model/wf_st.h"
#include "codec/wf_types.h"

static float from_bits(uint32_t u)
{
	float f;
	memcpy(&f, &u, 4);
	return f;
}

START_TEST(test_f16_edges)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{0x00000000, 0x0000}, {0x80000000, 0x8000},          /* signed zeros */
		{0x3f800000, 0x3c00}, {0xbf800000, 0xbc00},          /* +-1 */
		{0x477fe000, 0x7bff},                                 /* 65504, the largest half */
		{0x477fefff, 0x7bff},                                 /* just under the tie */
		{0x477ff000, 0x7c00},                                 /* 65520: tie, to even = inf */
		{0x7f800000, 0x7c00}, {0xff800000, 0xfc00},          /* infinities */
		{0x7f7fffff, 0x7c00},                                 /* FLT_MAX overflows */
		{0x38800000, 0x0400},                                 /* 2^-14, smallest normal */
		{0x387fc000, 0x03ff},                                 /* largest subnormal */
		{0x387fe000, 0x0400},                                 /* rounds up into the normals */
		{0x33800000, 0x0001},                                 /* 2^-24, smallest subnormal */
		{0x33000000, 0x0000},                                 /* 2^-25: tie, to even = 0 */
		{0x33000001, 0x0001},                                 /* just above the tie */
		{0x33c00000, 0x0002},                                 /* 1.5 * 2^-24: tie, to even = 2 */
		{0x34200000, 0x0002},                                 /* 2.5 * 2^-24: tie, to even = 2 */
		{0x3f801000, 0x3c00},                                 /* 1 + 2^-11: tie, to even */
		{0x3f803000, 0x3c02},                                 /* 1 + 3*2^-11: tie, to even (up) */
		{0x7fc00000, 0x7e00}, {0xffc00000, 0xfe00},          /* quiet NaNs */
		{0x7f800001, 0x7e00},                                 /* signalling NaN: quieted */
		{0x7fffffff, 0x7fff},                                 /* payload's top bits kept */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		uint16_t got = wf_f32_to_f16(from_bits(cases[i].in));
		ck_assert_msg(got == cases[i].out, "f16(0x%08x) = 0x%04x, want 0x%04x", cases[i].in, got, cases[i].out);
		uint16_t arr;
		float f = from_bits(cases[i].in);
		wf_f32_to_f16_n(&f, &arr, 1);
		ck_assert_uint_eq(arr, cases[i].out);
	}
}
END_TEST

START_TEST(test_bf16_edges)
{
	static const struct {
		uint32_t in;
		uint16_t out;
	} cases[] = {
		{0x00000000, 0x0000}, {0x80000000, 0x8000},
		{0x3f808000, 0x3f80},  /* tie, to even (down) */
		{0x3f818000, 0x3f82},  /* tie, to even (up) */
		{0x3f808001, 0x3f81},
		{0x7f7fffff, 0x7f80},  /* FLT_MAX rounds to inf, as torch does */
		{0x7f800000, 0x7f80}, {0xff800000, 0xff80},
		{0x00000001, 0x0000},  /* float32 subnormals round like anything else */
		{0x00008000, 0x0000}, {0x00018000, 0x0002},
		{0x7fc00000, 0x7fc0}, {0xffc00001, 0xffc0},
		{0x7f800001, 0x7fc0},  /* signalling NaN: quieted, not rounded to inf */
		{0x7fffffff, 0x7fff},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		float f = from_bits(cases[i].in);
		uint16_t got = wf_f32_to_bf16(f), arr;
		wf_f32_to_bf16_n(&f, &arr, 1);
		ck_assert_msg(got == cases[i].out && arr == got, "bf16(0x%08x) = 0x%04x/0x%04x, want 0x%04x",
			      cases[i].in, got, arr, cases[i].out);
	}
}
END_TEST

/* The array path (F16C where the CPU has it) agrees with the scalar one
 * on every 4099th float32 bit pattern, all exponents and both signs. */
START_TEST(test_arrays_match_scalar)
{
	enum { N = 1 << 16 };
	float *src = malloc(N * sizeof *src);
	uint16_t *h = malloc(N * sizeof *h), *b = malloc(N * sizeof *b);
	ck_assert(src && h && b);
	for (uint64_t base = 0; base < (1ull << 32); base += (uint64_t)N * 4099) {
		for (size_t i = 0; i < N; i++)
			src[i] = from_bits((uint32_t)(base + i * 4099));
		wf_f32_to_f16_n(src, h, N);
		wf_f32_to_bf16_n(src, b, N);
		for (size_t i = 0; i < N; i++) {
			ck_assert_uint_eq(h[i], wf_f32_to_f16(src[i]));
			ck_assert_uint_eq(b[i], wf_f32_to_bf16(src[i]));
		}
	}
	free(src);
	free(h);
	free(b);
}
END_TEST

/* wf_bf16_quiet_n over every 16-bit pattern, at every start offset
 * within a SIMD lane and with SIMD on and off: only NaNs change, each by
 * the quiet bit alone. */
START_TEST(test_bf16_quiet)
{
	enum { N = 1 << 16 };
	uint8_t *buf = malloc(2 * N + 64);
	ck_assert(buf);
	for (int simd = 0; simd < 2; simd++) {
		wf_simd_set(simd);
		for (size_t lead = 0; lead < 33; lead += 2) {
			for (size_t i = 0; i < N; i++) {
				buf[lead + 2 * i] = (uint8_t)i;
				buf[lead + 2 * i + 1] = (uint8_t)(i >> 8);
			}
			wf_bf16_quiet_n(buf + lead, N);
			for (uint32_t i = 0; i < N; i++) {
				uint16_t h = (uint16_t)(buf[lead + 2 * i] | buf[lead + 2 * i + 1] << 8);
				bool nan = (i & 0x7f80) == 0x7f80 && (i & 0x7f);
				ck_assert_msg(h == (nan ? (i | 0x40) : i), "0x%04x -> 0x%04x (lead %zu, simd %d)", i, h,
					      lead, simd);
			}
		}
	}
	/* an odd address takes the scalar path: the same answer */
	buf[1] = 0x81;
	buf[2] = 0x7f;
	wf_bf16_quiet_n(buf + 1, 1);
	ck_assert_uint_eq(buf[1], 0xc1);
	wf_simd_set(1);
	free(buf);
}
END_TEST

static struct wf_tensor tensor(int type, uint32_t ndim, const uint64_t *shape)
{
	static uint64_t dims[4];
	struct wf_tensor t = {0};
	memcpy(dims, shape, ndim * sizeof *dims);
	t.name = (char *)"t";
	t.name_len = 1;
	t.type = type;
	t.ndim = ndim;
	t.shape = dims;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tensor_sizes(&t, type < WF_T_ST_FIRST, err), WF_OK);
	return t;
}

START_TEST(test_views)
{
	char err[WF_ERRLEN];
	uint64_t s[2] = {3, 64}, dims[WF_MAX_DIMS];
	struct wf_tensor t = tensor(WF_T_Q4_0, 2, s);
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_F16, err), WF_OK);
	ck_assert_uint_eq(t.size, 3 * 64 * 2);
	ck_assert_str_eq(wf_view_dtype(&t), "float16");
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_RAW, err), WF_OK);
	ck_assert_uint_eq(t.size, 3 * 2 * 18);
	ck_assert_str_eq(wf_view_dtype(&t), "uint8");
	ck_assert_str_eq(wf_view_st_dtype(&t), "U8");
	ck_assert_uint_eq(wf_view_shape(&t, dims), 2);
	ck_assert_uint_eq(dims[1], 36);
	struct wf_tensor b = tensor(WF_T_BF16, 2, s);
	ck_assert_int_eq(wf_tensor_set_view(&b, WF_VK_BF16, err), WF_OK);
	ck_assert_int_eq(b.vk, WF_VK_RAW);
	ck_assert_str_eq(wf_view_descr(&b), "<u2");
	ck_assert_str_eq(wf_view_st_dtype(&b), "BF16");
	struct wf_tensor i = tensor(WF_T_I16, 2, s);
	ck_assert_int_eq(wf_tensor_set_view(&i, WF_VK_BF16, err), WF_OK);
	ck_assert_int_eq(i.vk, WF_VK_RAW); /* integers stay as they are */
	ck_assert_str_eq(wf_view_dtype(&i), "int16");
	/* F4 packs two per byte: an odd row is no whole bytes */
	uint64_t odd[2] = {2, 3};
	struct wf_tensor f4 = {0};
	f4.name = (char *)"f4";
	f4.name_len = 2;
	f4.type = WF_T_F4;
	f4.ndim = 2;
	f4.shape = odd;
	f4.nelems = 6;
	f4.nbytes = 3;
	ck_assert_int_eq(wf_tensor_set_view(&f4, WF_VK_RAW, err), WF_ERR_UNSUP);
	ck_assert_msg(strstr(err, "f4") && strstr(err, "stored"), "%s", err);
}
END_TEST

START_TEST(test_npy_header)
{
	char h[WF_NPY_HEADER_MAX];
	uint64_t s[2] = {3, 64};
	struct wf_tensor t = tensor(WF_T_Q8_0, 2, s);
	size_t n = wf_npy_header(&t, h);
	ck_assert_uint_eq(n % 64, 0);
	ck_assert_int_eq(memcmp(h, "\x93NUMPY\x01\x00", 8), 0);
	ck_assert_uint_eq((uint8_t)h[8] | (uint8_t)h[9] << 8, n - 10);
	ck_assert_int_eq(h[n - 1], '\n');
	ck_assert_msg(memmem(h, n, "'descr': '<f4', 'fortran_order': False, 'shape': (3, 64), }", 58) != NULL,
		      "%.*s", (int)n, h);
	uint64_t one[1] = {5};
	struct wf_tensor v = tensor(WF_T_I8, 1, one);
	n = wf_npy_header(&v, h);
	ck_assert_msg(memmem(h, n, "'shape': (5,), }", 16) != NULL, "%.*s", (int)n, h);
	struct wf_tensor sc = tensor(WF_T_F32, 0, one);
	n = wf_npy_header(&sc, h);
	ck_assert_msg(memmem(h, n, "'shape': (), }", 14) != NULL, "%.*s", (int)n, h);
}
END_TEST

START_TEST(test_meta_files)
{
	static const char json[] = "{\n \"a.b\": \"line\\nnext \\\"q\\\" \\u00e9\\udcff\",\n \"n\": -0.0,\n"
				   " \"arr\": [1, \"x]\", [2]],\n \"k\\udcfe\": true\n}\n";
	struct wf_meta_file *f;
	size_t n;
	char *text;
	ck_assert_int_eq(wf_meta_files(json, sizeof json - 1, &f, &n, &text), WF_OK);
	ck_assert_uint_eq(n, 4);
	ck_assert_str_eq(f[0].name, "a.b");
	ck_assert_uint_eq(f[0].len, 17);
	ck_assert_int_eq(memcmp(f[0].data, "line\nnext \"q\" \xc3\xa9\xff", 17), 0);
	ck_assert_int_eq(memcmp(f[1].data, "-0.0", f[1].len), 0);
	ck_assert_int_eq(memcmp(f[2].data, "[1, \"x]\", [2]]", f[2].len), 0);
	ck_assert_uint_eq(f[3].name_len, 2);
	ck_assert_int_eq(memcmp(f[3].name, "k\xfe", 2), 0);
	for (size_t i = 0; i < n; i++)
		free(f[i].name);
	free(f);
	free(text);
}
END_TEST

/* model.safetensors' header, with zero data behind it, is a safetensors
 * file our own strict parser accepts, with every tensor as its view. */
START_TEST(test_st_header)
{
	static const uint64_t s1[2] = {2, 32}, s2[1] = {4};
	struct wf_model *m = wf_model_new(WF_FMT_GGUF, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->tensors = calloc(3, sizeof *m->tensors);
	m->n_tensors = 3;
	const char *names[3] = {"blk.0.w", "bad\xff", "bad\xc3\xbf"}; /* the last two meet once mapped */
	const int types[3] = {WF_T_Q8_0, WF_T_I32, WF_T_F16};
	for (int i = 0; i < 3; i++) {
		struct wf_tensor *t = &m->tensors[i];
		t->name = strdup(names[i]);
		t->name_len = strlen(names[i]);
		t->type = types[i];
		t->ndim = i ? 1 : 2;
		t->shape = malloc(2 * sizeof *t->shape);
		memcpy(t->shape, i ? s2 : s1, t->ndim * sizeof *t->shape);
		char err[WF_ERRLEN];
		ck_assert_int_eq(wf_tensor_sizes(t, true, err), WF_OK);
	}
	m->metadata_json = strdup("{\n \"general.name\": \"x\",\n \"n\": [1, 2]\n}\n");
	m->metadata_json_len = strlen(m->metadata_json);
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_RAW, err), WF_OK);
	char *hdr;
	uint64_t hl, *offs;
	ck_assert_int_eq(wf_st_header(m, &hdr, &hl, &offs), WF_OK);
	ck_assert_uint_eq(hl % 8, 0);
	uint64_t total = hl + offs[3];
	uint8_t *file = calloc(1, total);
	memcpy(file, hdr, hl);
	struct wf_model *back;
	ck_assert_msg(wf_st_parse(&back, file, total, err) == WF_OK, "%s: %.*s", err, (int)hl - 8, hdr + 8);
	ck_assert_uint_eq(back->n_tensors, 3);
	ck_assert_str_eq(back->tensors[0].name, "blk.0.w");
	ck_assert_int_eq(back->tensors[0].type, WF_T_U8);
	ck_assert_uint_eq(back->tensors[0].shape[1], 34); /* one Q8_0 block of 34 bytes per row */
	ck_assert_int_eq(back->tensors[1].type, WF_T_I32);
	ck_assert_str_eq(back->tensors[1].name, "bad\xc3\xbf");
	ck_assert_str_eq(back->tensors[2].name, "bad\xc3\xbf~2");
	ck_assert_int_eq(back->tensors[2].type, WF_T_F16);
	ck_assert_ptr_nonnull(strstr(back->metadata_json, "\"general.name\": \"x\""));
	ck_assert_ptr_nonnull(strstr(back->metadata_json, "\"format\": \"pt\""));
	ck_assert_ptr_nonnull(strstr(back->metadata_json, "\"n\": \"[1, 2]\""));
	ck_assert_ptr_nonnull(strstr(back->metadata_json, "weightfs.stored_types"));
	wf_model_free(back);
	free(file);
	free(hdr);
	free(offs);
	wf_model_free(m);
}
END_TEST

/* model.safetensors never holds two equal metadata keys: the model's own
 * "weightfs.stored_types" meets ours, and keys that differ only in stray
 * bytes meet once those are written as characters (issue 17 item 10).
 * Our parser refuses duplicate metadata keys, so the round trip is the
 * check; the values say which key went where. */
START_TEST(test_st_header_unique_keys)
{
	static const uint64_t s1[2] = {2, 32};
	struct wf_model *m = wf_model_new(WF_FMT_GGUF, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->tensors = calloc(1, sizeof *m->tensors);
	m->n_tensors = 1;
	struct wf_tensor *t = &m->tensors[0];
	t->name = strdup("w");
	t->name_len = 1;
	t->type = WF_T_Q8_0;
	t->ndim = 2;
	t->shape = malloc(2 * sizeof *t->shape);
	memcpy(t->shape, s1, sizeof s1);
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tensor_sizes(t, true, err), WF_OK);
	m->metadata_json = strdup("{\"weightfs.stored_types\": \"mine\", \"k\\udcff\": \"1\", \"k\\u00ff\": \"2\","
				  " \"k\\u00ff~2\": \"3\", \"format\": \"gguf\"}\n");
	m->metadata_json_len = strlen(m->metadata_json);
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_RAW, err), WF_OK);
	char *hdr;
	uint64_t hl, *offs;
	ck_assert_int_eq(wf_st_header(m, &hdr, &hl, &offs), WF_OK);
	uint64_t total = hl + offs[1];
	uint8_t *file = calloc(1, total);
	memcpy(file, hdr, hl);
	struct wf_model *back;
	ck_assert_msg(wf_st_parse(&back, file, total, err) == WF_OK, "%s: %.*s", err, (int)hl - 8, hdr + 8);
	const char *md = back->metadata_json;
	ck_assert_msg(strstr(md, "\"format\": \"gguf\"") != NULL, "%s", md);
	ck_assert_msg(strstr(md, "\"weightfs.stored_types~2\": \"mine\"") != NULL, "%s", md);
	ck_assert_msg(strstr(md, "\"weightfs.stored_types\": \"{") != NULL, "%s", md);
	ck_assert_msg(strstr(md, "\"k\xc3\xbf\": \"1\"") != NULL, "%s", md);
	/* in model order: the second "k\xc3\xbf" takes ~2, so the model's own "k\xc3\xbf~2" comes after */
	ck_assert_msg(strstr(md, "\"k\xc3\xbf~2\": \"2\"") != NULL, "%s", md);
	ck_assert_msg(strstr(md, "\"k\xc3\xbf~2~2\": \"3\"") != NULL, "%s", md);
	wf_model_free(back);
	free(file);
	free(hdr);
	free(offs);
	wf_model_free(m);
}
END_TEST

static Suite *out_suite(void)
{
	Suite *s = suite_create("out");
	TCase *tc = tcase_create("round");
	tcase_add_test(tc, test_f16_edges);
	tcase_add_test(tc, test_bf16_edges);
	tcase_add_test(tc, test_arrays_match_scalar);
	tcase_add_test(tc, test_bf16_quiet);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	tc = tcase_create("gen");
	tcase_add_test(tc, test_views);
	tcase_add_test(tc, test_npy_header);
	tcase_add_test(tc, test_meta_files);
	tcase_add_test(tc, test_st_header);
	tcase_add_test(tc, test_st_header_unique_keys);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(out_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
