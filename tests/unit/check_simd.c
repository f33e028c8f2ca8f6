/* check_simd.c - the SIMD decoders (wf_decode_x86.c) against the scalar
 * ones (wf_decode.c), bit for bit, and both paths against the ggml oracle.
 *
 *  - every type whose row has a decode_simd: random blocks, with f16 scale
 *    fields set to special values (+-0, subnormals, +-Inf, quiet and
 *    signalling NaNs, +-65504) in a share of the blocks, at odd source
 *    alignments and block counts, decoded by both functions and compared
 *    as bytes;
 *  - the same for MXFP4's e8m0 and NVFP4's ue4m3 byte scales and IQ1_M's
 *    scattered d (0, 1, 0x7F, 0x80, 0xFF, ...);
 *  - the known blocks of check_types.c (known_blocks.h): the SIMD twin
 *    gives ggml's bytes;
 *  - F16 and BF16: all 65536 inputs; F64: NaNs with payloads, +-0, +-Inf,
 *    subnormals, overflow and halfway roundings;
 *  - every ggml type with a decoder has a SIMD twin;
 *  - every tensor of tests/data/ggml-oracle (manifest.json; the directory
 *    may be moved with WF_ORACLE_DIR) opened with wf_open_file and read
 *    through wf_view_read, whole and in odd-sized pieces, with SIMD off and
 *    on, against the expected .f32 files.
 * Q4_1 and Q5_1 accept two NaNs of different payload (see nan_order_free).
 * Without AVX2/F16C the SIMD halves are skipped (and say so); the scalar
 * half of the oracle test still runs.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "model/wf_model.h"
#include "model/wf_open.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

#include "known_blocks.h"

static int have_simd;

static uint64_t rng = 0x243F6A8885A308D3u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static const uint16_t special_f16[] = {
	0x0000, 0x8000, 0x0001, 0x8001, 0x03FF, 0x83FF, 0x0400, 0x7BFF, 0xFBFF,
	0x7C00, 0xFC00, 0x7C01, 0xFC01, 0x7DFF, 0x7E00, 0xFE00, 0x7FFF, 0x3C00, 0xBC00,
};

/* Byte offsets of the f16 scale fields in one block, -1 terminated. */
static const int *scale_offsets(int id)
{
	static const int at0[] = {0, -1}, at0_2[] = {0, 2, -1}, q6k[] = {208, -1}, none[] = {-1};
	static const int q2k[] = {80, 82, -1}, q3k[] = {108, -1}, tq1[] = {52, -1}, tq2[] = {64, -1};

	switch (id) {
	case WF_T_Q4_1: case WF_T_Q5_1: case WF_T_Q4_K: case WF_T_Q5_K:
		return at0_2;
	case WF_T_Q6_K:
		return q6k;
	case WF_T_Q2_K:
		return q2k;
	case WF_T_Q3_K:
		return q3k;
	case WF_T_TQ1_0:
		return tq1;
	case WF_T_TQ2_0:
		return tq2;
	case WF_T_Q4_0: case WF_T_Q5_0: case WF_T_Q8_0: case WF_T_IQ2_XXS:
	case WF_T_IQ4_NL: case WF_T_IQ4_XS: case WF_T_IQ2_XS: case WF_T_IQ2_S:
	case WF_T_IQ3_XXS: case WF_T_IQ3_S: case WF_T_IQ1_S: case WF_T_Q1_0: case WF_T_Q2_0:
		return at0;
	default:
		return none;
	}
}

/* Byte scales whose edge values random bytes hit too rarely: MXFP4's e8m0
 * (0 and 1 are f32 subnormals, 255 the largest) and NVFP4's ue4m3 (0x7F is
 * the "NaN" read as zero, 0x80/0xFF have bit 7 set). */
static const uint8_t special_u8[] = {0x00, 0x01, 0x02, 0x7F, 0x80, 0x81, 0xFE, 0xFF};

/* Puts the special value into block p's scale fields where r says so. */
static void special_scales(int id, uint8_t *p, uint64_t r)
{
	uint16_t v = special_f16[(r >> 8) % WF_ARRAY_LEN(special_f16)];
	uint8_t u = special_u8[(r >> 8) % WF_ARRAY_LEN(special_u8)];

	if (r % 4)
		return;
	if (id == WF_T_IQ1_M) {
		/* d is the top nibbles of the four scale words at 48..55 */
		for (int k = 0; k < 4; k++)
			p[48 + 2 * k + 1] = (uint8_t)((p[48 + 2 * k + 1] & 0x0F) | ((v >> (4 * k)) & 0xF) << 4);
	} else if (id == WF_T_MXFP4) {
		p[0] = u;
	} else if (id == WF_T_NVFP4) {
		p[(r >> 16) % 4] = u;
	}
}

static void fill_blocks(int id, const struct wf_type *ty, uint8_t *p, size_t nblocks)
{
	for (size_t i = 0; i < nblocks * ty->bytes; i++)
		p[i] = (uint8_t)next();
	const int *offs = scale_offsets(id);
	for (size_t b = 0; b < nblocks; b++) {
		for (int k = 0; offs[k] >= 0; k++) {
			uint64_t r = next();
			if (r % 4 == 0) {
				uint16_t v = special_f16[(r >> 8) % WF_ARRAY_LEN(special_f16)];
				p[b * ty->bytes + (size_t)offs[k]] = (uint8_t)v;
				p[b * ty->bytes + (size_t)offs[k] + 1] = (uint8_t)(v >> 8);
			}
		}
		special_scales(id, p + b * ty->bytes, next());
	}
}

/* Types computing q * d + m: when d and m are both NaN, which NaN an add
 * returns depends on the operand order the compiler picked for the
 * commutative "+" (clang and gcc differ), so there two NaNs of any payload
 * count as equal.  Everything else must match bit for bit. */
static bool nan_order_free(const struct wf_type *ty)
{
	return ty == wf_type_get(WF_T_Q4_1) || ty == wf_type_get(WF_T_Q5_1);
}

static bool is_nan_bits(uint32_t x)
{
	return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu);
}

/* Decodes src with both functions into poisoned buffers; compares bytes. */
static void compare(const struct wf_type *ty, const uint8_t *src, size_t nblocks)
{
	size_t n = nblocks * ty->blck;
	float *a = malloc(n * sizeof *a + 64), *b = malloc(n * sizeof *b + 64);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	memset(a, 0xA5, n * sizeof *a + 64);
	memset(b, 0xA5, n * sizeof *b + 64);
	ty->decode(src, a, nblocks);
	ty->decode_simd(src, b, nblocks);
	if (memcmp(a, b, n * sizeof *a + 64) != 0) {
		for (size_t i = 0; i < n + 16; i++) {
			uint32_t x, y;
			memcpy(&x, a + i, 4);
			memcpy(&y, b + i, 4);
			if (x != y && !(i < n && nan_order_free(ty) && is_nan_bits(x) && is_nan_bits(y)))
				ck_abort_msg("%s: element %zu of %zu: scalar 0x%08x, SIMD 0x%08x", ty->name, i, n, x, y);
		}
	}
	free(a);
	free(b);
}

START_TEST(test_random_blocks)
{
	const struct wf_type *ty = wf_type_get(_i);
	if (!ty || !ty->decode_simd)
		return;
	if (!have_simd) {
		printf("check_simd: %s: no AVX2/F16C on this CPU, SIMD comparison skipped\n", ty->name);
		return;
	}
	/* n counts that exercise tails of the 16-wide element loops */
	static const size_t counts[] = {1, 2, 3, 7, 8, 15, 16, 17, 31, 33, 255, 1000};
	for (size_t c = 0; c < WF_ARRAY_LEN(counts); c++) {
		for (size_t align = 0; align < 3; align++) {
			size_t nb = counts[c];
			uint8_t *buf = malloc(nb * ty->bytes + 8);
			ck_assert_ptr_nonnull(buf);
			for (int rep = 0; rep < 4; rep++) {
				fill_blocks(_i, ty, buf + align, nb);
				compare(ty, buf + align, nb);
			}
			free(buf);
		}
	}
}
END_TEST

/* F16 and BF16 elements: every 16-bit pattern, NaNs and subnormals included. */
START_TEST(test_all_halves)
{
	static const int ids[] = {WF_T_F16, WF_T_BF16};
	if (!have_simd) {
		printf("check_simd: no AVX2/F16C on this CPU, F16/BF16 comparison skipped\n");
		return;
	}
	uint8_t *src = malloc(2 * 65536 + 1);
	ck_assert_ptr_nonnull(src);
	for (size_t k = 0; k < WF_ARRAY_LEN(ids); k++) {
		const struct wf_type *ty = wf_type_get(ids[k]);
		ck_assert_ptr_nonnull(ty->decode_simd);
		for (int align = 0; align < 2; align++) {
			for (uint32_t h = 0; h < 65536; h++) {
				src[align + 2 * h] = (uint8_t)h;
				src[align + 2 * h + 1] = (uint8_t)(h >> 8);
			}
			compare(ty, src + align, 65536);
			compare(ty, src + align + 2, 65533);  /* a tail */
		}
	}
	free(src);
}
END_TEST

/* The oracle's known blocks (known_blocks.h, also check_types.c): the SIMD
 * twin gives ggml's bytes too, aligned and at an odd address. */
START_TEST(test_known_blocks)
{
	const struct known_block *kb = &known_blocks[_i];
	const struct wf_type *ty = wf_type_get(kb->type);
	ck_assert_ptr_nonnull(ty);
	if (!ty->decode_simd)
		return;
	if (!have_simd) {
		printf("check_simd: %s: no AVX2/F16C on this CPU, known block skipped\n", ty->name);
		return;
	}
	float *out = malloc(kb->out_len);
	uint8_t *shifted = malloc(kb->in_len + 1);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(shifted);
	for (int align = 0; align < 2; align++) {
		memcpy(shifted + align, kb->in, kb->in_len);
		memset(out, 0xA5, kb->out_len);
		ty->decode_simd(shifted + align, out, kb->nblocks);
		ck_assert_msg(memcmp(out, kb->out, kb->out_len) == 0, "%s: SIMD decode of %s differs (offset %d)",
			      ty->name, kb->source, align);
		compare(ty, shifted + align, kb->nblocks);
	}
	free(shifted);
	free(out);
}
END_TEST

/* F64 edge values: NaNs with payloads (signalling too), +-0, +-Inf,
 * subnormals of both widths, float overflow and halfway roundings. */
START_TEST(test_f64_specials)
{
	static const uint64_t v[] = {
		0x0000000000000000u, 0x8000000000000000u, 0x7FF0000000000000u, 0xFFF0000000000000u,
		0x7FF0000000000001u, 0xFFF4000000000000u, 0x7FF8000000000000u, 0x7FFFFFFFFFFFFFFFu,
		0x7FF80000DEADBEEFu, 0x0000000000000001u, 0x800FFFFFFFFFFFFFu, 0x36A0000000000000u,
		0x3690000000000000u, 0x47EFFFFFE0000000u, 0x47EFFFFFF0000000u, 0xC7F0000000000000u,
		0x3FF0000010000000u, 0x3FF0000030000000u, 0x3FF0000010000001u, 0x3FF0000000000000u,
	};
	const struct wf_type *ty = wf_type_get(WF_T_F64);
	ck_assert_ptr_nonnull(ty);
	ck_assert_ptr_nonnull(ty->decode_simd);
	if (!have_simd) {
		printf("check_simd: no AVX2/F16C on this CPU, F64 comparison skipped\n");
		return;
	}
	size_t n = 3 * WF_ARRAY_LEN(v);
	uint8_t *src = malloc(8 * n + 1);
	ck_assert_ptr_nonnull(src);
	for (size_t align = 0; align < 2; align++) {
		for (size_t i = 0; i < n; i++)
			for (int k = 0; k < 8; k++)
				src[align + 8 * i + k] = (uint8_t)(v[(i * 7) % WF_ARRAY_LEN(v)] >> (8 * k));
		for (size_t m = 1; m <= n; m++)
			compare(ty, src + align, m);
	}
	free(src);
}
END_TEST

/* Every ggml type with a decoder has a SIMD twin (issue 21). */
START_TEST(test_all_ggml_have_simd)
{
	for (int id = 0; id < WF_GGML_TYPE_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty && ty->decode)
			ck_assert_msg(ty->decode_simd != NULL, "%s has no SIMD decoder", ty->name);
	}
}
END_TEST

/* --- the oracle ------------------------------------------------------------ */

static const char *oracle_dir(void)
{
	const char *d = getenv("WF_ORACLE_DIR");
	return d && *d ? d : "tests/data/ggml-oracle";
}

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	char *buf = NULL;
	long n;
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		if (buf) {
			buf[n] = '\0';
			*len = (size_t)n;
		}
	}
	fclose(f);
	return buf;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* Reads all of t through wf_view_read in pieces of `piece` bytes. */
static uint8_t *read_view(const struct wf_model *m, const struct wf_tensor *t, size_t piece)
{
	uint8_t *out = malloc(t->size + 1);
	ck_assert_ptr_nonnull(out);
	for (uint64_t off = 0; off < t->size; off += piece) {
		size_t got;
		ck_assert_int_eq(wf_view_read(t, m->data, m->data_len, off, piece, out + off, &got), WF_OK);
		ck_assert_uint_eq(got, off + piece > t->size ? t->size - off : piece);
	}
	return out;
}

START_TEST(test_oracle)
{
	char path[4096];
	size_t len;
	snprintf(path, sizeof path, "%s/manifest.json", oracle_dir());
	char *text = slurp(path, &len);
	ck_assert_msg(text != NULL, "cannot read %s", path);
	cJSON *man = cJSON_Parse(text);
	ck_assert_ptr_nonnull(man);
	const cJSON *tensors = cJSON_GetObjectItemCaseSensitive(man, "tensors");
	ck_assert(cJSON_IsArray(tensors));

	int modes = have_simd ? 2 : 1, checked = 0;
	if (!have_simd)
		printf("check_simd: no AVX2/F16C on this CPU, oracle checked with the scalar path only\n");
	const cJSON *e;
	cJSON_ArrayForEach(e, tensors) {
		const char *file = jstr(e, "file"), *name = jstr(e, "name"), *exp = jstr(e, "expected_f32");
		ck_assert(file && name);
		if (!exp)
			continue;  /* no float conversion in ggml: nothing to compare */
		char err[WF_ERRLEN];
		struct wf_model *m;
		snprintf(path, sizeof path, "%s/%s", oracle_dir(), file);
		ck_assert_msg(wf_open_file(&m, path, err) == WF_OK, "%s: %s", path, err);
		const struct wf_tensor *t = NULL;
		for (size_t i = 0; i < m->n_tensors; i++)
			if (strcmp(m->tensors[i].name, name) == 0)
				t = &m->tensors[i];
		ck_assert_msg(t != NULL, "%s: no tensor %s", file, name);
		snprintf(path, sizeof path, "%s/%s", oracle_dir(), exp);
		size_t elen;
		uint8_t *want = slurp(path, &elen);
		ck_assert_msg(want != NULL, "cannot read %s", path);
		ck_assert_uint_eq(elen, t->size);
		for (int mode = 0; mode < modes; mode++) {
			ck_assert_int_eq(wf_simd_set(mode), mode);
			static const size_t pieces[] = {(size_t)1 << 30, 4096, 1000, 4};
			for (size_t p = 0; p < WF_ARRAY_LEN(pieces); p++) {
				uint8_t *got = read_view(m, t, pieces[p]);
				ck_assert_msg(memcmp(got, want, elen) == 0, "%s %s: %s path, %zu-byte reads differ from %s",
					      file, name, mode ? "SIMD" : "scalar", pieces[p], exp);
				free(got);
			}
		}
		checked++;
		free(want);
		wf_model_free(m);
	}
	ck_assert_int_gt(checked, 100);
	wf_simd_set(1);
	cJSON_Delete(man);
	free(text);
}
END_TEST

/* WEIGHTFS_NO_SIMD and wf_simd_set decide what wf_type_decoder returns. */
START_TEST(test_switch)
{
	const struct wf_type *ty = wf_type_get(WF_T_Q4_K);
	ck_assert_int_eq(wf_simd_set(0), 0);
	ck_assert_int_eq(wf_simd_active(), 0);
	ck_assert_ptr_eq((void *)wf_type_decoder(ty), (void *)ty->decode);
	ck_assert_int_eq(wf_simd_set(1), have_simd);
	ck_assert_ptr_eq((void *)wf_type_decoder(ty), (void *)(have_simd ? ty->decode_simd : ty->decode));
	/* a type without a SIMD twin always gets its scalar decoder */
	ty = wf_type_get(WF_T_F8_E4M3);
	ck_assert_ptr_null((void *)ty->decode_simd);
	ck_assert_ptr_eq((void *)wf_type_decoder(ty), (void *)ty->decode);
}
END_TEST

int main(void)
{
	/* the first query reads WEIGHTFS_NO_SIMD; wf_simd_set(1) asks the CPU */
	const char *env = getenv("WEIGHTFS_NO_SIMD");
	int active = wf_simd_active();
	have_simd = wf_simd_set(1);
	if (env && *env && strcmp(env, "0") != 0 && active)
		fprintf(stderr, "check_simd: WEIGHTFS_NO_SIMD=%s but SIMD was on\n", env), exit(1);
	if (!have_simd)
		printf("check_simd: CPU lacks AVX2/F16C: only the scalar path is tested\n");

	Suite *s = suite_create("simd");
	TCase *tc = tcase_create("simd");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, test_random_blocks, 0, WF_T_COUNT);
	tcase_add_test(tc, test_all_halves);
	tcase_add_loop_test(tc, test_known_blocks, 0, (int)WF_ARRAY_LEN(known_blocks));
	tcase_add_test(tc, test_f64_specials);
	tcase_add_test(tc, test_all_ggml_have_simd);
	tcase_add_test(tc, test_oracle);
	tcase_add_test(tc, test_switch);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
