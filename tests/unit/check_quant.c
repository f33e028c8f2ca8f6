/* check_quant.c - the encoders (src/codec/wf_quant*.c) against ggml.
 *
 *  - every deterministic input case of tests/clients/quant_oracle.py
 *    (normal, tiny, huge, subnormal, zeros, +-0, .5 ties, constant, sparse,
 *    several rows, inf/NaN, ...), regenerated here bit for bit (the
 *    SHA-256 of each input must equal the one the oracle recorded), is
 *    encoded as every type of tests/data/quant-oracle/digests.json through
 *    wf_quantize_rows, and the SHA-256 of the bytes must equal that of
 *    ggml_quantize_chunk(imatrix = NULL) (the directory may be moved with
 *    WF_QUANT_ORACLE_DIR);
 *  - the type table: exactly the oracle's types have a quantize column;
 *  - wf_quantize_rows' errors (no encoder, partial blocks, short buffer,
 *    overflow) leave dst untouched;
 *  - encoding blocks one call at a time gives the bytes of one call; the
 *    AVX2 twins (Q2_K, Q4_K, Q5_K, Q6_K, IQ4_NL, IQ4_XS) give the scalar bytes on every case, and the
 *    digests are checked with SIMD off and on;
 *  - round trips through the type's decoder: zeros stay zeros, F32 is
 *    exact, F16/BF16 exact on representable values, and the quantization
 *    error on the normal case is within each type's expected bound.
 */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "codec/wf_decode.h"
#include "codec/wf_types.h"
#include "lib/weightfs.h"
#include "sha256.h"

#define ORACLE_DIR "tests/data/quant-oracle"

/* ---------------------------------------------------------------- inputs
 * Mirrors quant_oracle.py's Rng and case_bits: change both together. */

struct rng { uint64_t s; };

static uint64_t rng_next(struct rng *r)
{
	uint64_t z = (r->s += 0x9E3779B97F4A7C15ull);

	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
	return z ^ (z >> 31);
}

static int64_t rng_gauss(struct rng *r)
{
	int64_t s = 0;

	for (int i = 0; i < 4; i++)
		s += (int64_t)(rng_next(r) >> 42);
	return s - (1 << 23);
}

static uint32_t bits_of(int64_t v, int k)
{
	float f = ldexpf((float)v, k);
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

#define SIGN 0x80000000u
static const uint32_t nonfinite[4] = { 0x7F800000u, 0xFF800000u, 0x7FC00000u, 0xFFC00000u };

struct qcase { const char *name; size_t nrows, npr; };

static const struct qcase cases[] = {
	{ "normal", 4, 1024 }, { "small", 4, 1024 }, { "tiny", 4, 1024 }, { "tiny_eps", 4, 1024 },
	{ "f16_subnormal", 4, 1024 }, { "huge", 4, 1024 }, { "huge_max", 4, 1024 },
	{ "subnormal", 4, 1024 }, { "zeros", 2, 512 }, { "signed_zeros", 2, 512 },
	{ "halves", 4, 1024 }, { "quarters", 4, 1024 }, { "ints", 4, 1024 },
	{ "constant", 4, 1024 }, { "constant256", 4, 1024 }, { "sparse", 4, 1024 },
	{ "one_hot", 4, 1024 }, { "blockscale", 4, 1024 }, { "bits", 4, 1024 },
	{ "positive", 4, 1024 }, { "negative", 4, 1024 }, { "rows_3x768", 3, 768 },
	{ "one_row", 1, 4096 }, { "outliers", 4, 1024 }, { "nonfinite", 4, 1024 },
	{ "nonfinite_rare", 4, 1024 }, { "nan_block", 2, 512 }, { "zeros_one_sign", 4, 1024 },
};
#define NCASES (sizeof cases / sizeof cases[0])

static int is(const char *a, const char *b)
{
	return strcmp(a, b) == 0;
}

/* One element of case nm (element i; blk is the per-block draw). */
static uint32_t case_elem(struct rng *r, const char *nm, size_t i, int64_t blk)
{
	static const struct { const char *n; int k; } scaled[] = {
		{ "normal", -21 }, { "small", -28 }, { "tiny", -81 }, { "tiny_eps", -71 },
		{ "f16_subnormal", -38 }, { "huge", 79 }, { "huge_max", 104 },
		{ "rows_3x768", -21 }, { "one_row", -21 },
	};
	uint64_t z;

	for (size_t k = 0; k < sizeof scaled / sizeof scaled[0]; k++)
		if (is(nm, scaled[k].n))
			return bits_of(rng_gauss(r), scaled[k].k);
	if (is(nm, "subnormal")) {
		z = rng_next(r);
		return (uint32_t)(z & 0x7FFFFF) | (z >> 63 ? SIGN : 0);
	}
	if (is(nm, "zeros"))
		return 0;
	if (is(nm, "signed_zeros"))
		return rng_next(r) >> 63 ? SIGN : 0;
	if (is(nm, "halves"))
		return bits_of((int)(rng_next(r) % 33) - 16, -1);
	if (is(nm, "quarters"))
		return bits_of((int)(rng_next(r) % 65) - 32, -2);
	if (is(nm, "ints"))
		return bits_of((int)(rng_next(r) % 255) - 127, 0);
	if (is(nm, "constant") || is(nm, "constant256"))
		return bits_of(blk, -21);
	if (is(nm, "sparse")) {
		z = rng_next(r);
		return z % 32 == 0 ? bits_of(rng_gauss(r), -21) : 0;
	}
	if (is(nm, "one_hot"))
		return (int64_t)(i % 32) == blk ? bits_of(rng_gauss(r), -21) : 0;
	if (is(nm, "blockscale"))
		return bits_of(rng_gauss(r), -21 + (int)blk);
	if (is(nm, "bits")) {
		z = rng_next(r);
		uint32_t e = 127 - 24 + (uint32_t)((z >> 32) % 49);
		return (z >> 63 ? SIGN : 0) | e << 23 | (uint32_t)(z & 0x7FFFFF);
	}
	if (is(nm, "positive"))
		return bits_of(llabs(rng_gauss(r)), -21);
	if (is(nm, "negative"))
		return bits_of(-llabs(rng_gauss(r)), -21);
	if (is(nm, "outliers")) {
		z = rng_next(r);
		return bits_of(rng_gauss(r), z % 100 == 0 ? -11 : -21);
	}
	if (is(nm, "nonfinite") || is(nm, "nonfinite_rare")) {
		z = rng_next(r);
		if (z % (is(nm, "nonfinite") ? 64 : 1024) < (is(nm, "nonfinite") ? 4u : 2u))
			return nonfinite[z % 4];
		return bits_of(rng_gauss(r), -21);
	}
	if (is(nm, "zeros_one_sign")) {
		z = rng_next(r);
		if (z % 5 == 0)
			return z >> 63 ? SIGN : 0;
		int64_t v = llabs(rng_gauss(r));
		return bits_of((i / 32) % 2 ? -v : v, -21);
	}
	if (is(nm, "nan_block"))
		return (i / 32) % 2 == 0 ? 0x7FC00000u : bits_of(rng_gauss(r), -21);
	ck_abort_msg("unknown case %s", nm);
	return 0;
}

/* The values of cases[idx] (malloc'd, nrows * npr floats). */
static float *case_floats(size_t idx)
{
	const char *nm = cases[idx].name;
	size_t n = cases[idx].nrows * cases[idx].npr;
	struct rng r = { 0x5157414E54000000ull + idx };
	float *x = malloc(n * sizeof *x);
	int64_t blk = 0;

	ck_assert_ptr_nonnull(x);
	for (size_t i = 0; i < n; i++) {
		if (i % 32 == 0) {
			if (is(nm, "constant"))
				blk = rng_gauss(&r);
			else if (is(nm, "one_hot"))
				blk = (int64_t)(rng_next(&r) % 32);
			else if (is(nm, "blockscale"))
				blk = (int64_t)(rng_next(&r) % 61) - 30;
		}
		if (is(nm, "constant256") && i % 256 == 0)
			blk = rng_gauss(&r);
		uint32_t u = case_elem(&r, nm, i, blk);
		memcpy(&x[i], &u, sizeof u);
	}
	return x;
}

/* ---------------------------------------------------------------- oracle */

static cJSON *oracle;

static void load_oracle(void)
{
	const char *dir = getenv("WF_QUANT_ORACLE_DIR");
	char path[4096];

	snprintf(path, sizeof path, "%s/digests.json", dir && *dir ? dir : ORACLE_DIR);
	FILE *f = fopen(path, "rb");
	ck_assert_msg(f != NULL, "cannot open %s", path);
	fseek(f, 0, SEEK_END);
	long len = ftell(f);
	rewind(f);
	char *buf = malloc((size_t)len + 1);
	ck_assert_ptr_nonnull(buf);
	ck_assert_uint_eq(fread(buf, 1, (size_t)len, f), (size_t)len);
	buf[len] = 0;
	fclose(f);
	oracle = cJSON_Parse(buf);
	free(buf);
	ck_assert_msg(oracle != NULL, "%s: not JSON", path);
}

static void free_oracle(void)
{
	cJSON_Delete(oracle);
	oracle = NULL;
}

/* The type id named nm ("Q4_K"), or -1. */
static int type_by_name(const char *nm)
{
	for (int id = 0; id < WF_GGML_TYPE_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty && strcmp(ty->name, nm) == 0)
			return id;
	}
	return -1;
}

/* Encodes cases[ci] as type id; returns the malloc'd bytes and their count. */
static uint8_t *encode_case(int id, size_t ci, const float *x, size_t *len)
{
	const struct wf_type *ty = wf_type_get(id);
	size_t n = cases[ci].nrows * cases[ci].npr, cap = n / ty->blck * ty->bytes;
	uint8_t *out = malloc(cap + 1);
	char err[WF_ERRLEN] = "";

	ck_assert_ptr_nonnull(out);
	ck_assert_msg(wf_quantize_rows(id, x, cases[ci].nrows, cases[ci].npr, out, cap, len, err) == WF_OK,
		      "%s %s: %s", ty->name, cases[ci].name, err);
	ck_assert_uint_eq(*len, cap);
	return out;
}

START_TEST(test_cases_match_oracle_shapes)
{
	cJSON *cs = cJSON_GetObjectItem(oracle, "cases");

	ck_assert_int_eq(cJSON_GetArraySize(cs), (int)NCASES);
	for (size_t i = 0; i < NCASES; i++) {
		cJSON *c = cJSON_GetArrayItem(cs, (int)i);
		ck_assert_str_eq(cJSON_GetObjectItem(c, "name")->valuestring, cases[i].name);
		ck_assert_int_eq(cJSON_GetObjectItem(c, "nrows")->valueint, (int)cases[i].nrows);
		ck_assert_int_eq(cJSON_GetObjectItem(c, "n_per_row")->valueint, (int)cases[i].npr);
	}
}
END_TEST

/* The C generator gives the oracle's inputs, bit for bit. */
START_TEST(test_inputs_match_oracle)
{
	cJSON *in = cJSON_GetObjectItem(oracle, "inputs");
	char hex[65];

	for (size_t i = 0; i < NCASES; i++) {
		float *x = case_floats(i);
		sha256_hex(x, cases[i].nrows * cases[i].npr * sizeof *x, hex);
		free(x);
		cJSON *want = cJSON_GetObjectItem(in, cases[i].name);
		ck_assert_msg(want && cJSON_IsString(want), "%s: no input digest", cases[i].name);
		ck_assert_msg(strcmp(hex, want->valuestring) == 0, "%s: input %s, oracle's %s",
			      cases[i].name, hex, want->valuestring);
	}
}
END_TEST

/* Every (type, case) digest of ggml's output, through the scalar encoders
 * (_i = 0) and with the AVX2 twins on (_i = 1; skipped, and said, on a CPU
 * without AVX2). */
START_TEST(test_digests)
{
	cJSON *dg = cJSON_GetObjectItem(oracle, "digests"), *t;
	int bad = 0, checked = 0;
	char hex[65];

	if (wf_simd_set(_i) != _i) {
		fprintf(stderr, "check_quant: no AVX2: the SIMD digests are not checked\n");
		return;
	}
	for (size_t ci = 0; ci < NCASES; ci++) {
		float *x = case_floats(ci);
		cJSON_ArrayForEach(t, dg) {
			int id = type_by_name(t->string);
			cJSON *want = cJSON_GetObjectItem(t, cases[ci].name);
			size_t len;

			ck_assert_msg(id >= 0, "unknown type %s", t->string);
			ck_assert_msg(want != NULL, "%s: no digest for %s", t->string, cases[ci].name);
			uint8_t *out = encode_case(id, ci, x, &len);
			sha256_hex(out, len, hex);
			free(out);
			checked++;
			if (strcmp(hex, want->valuestring) != 0) {
				fprintf(stderr, "check_quant: %s %s: %s, ggml %s\n", t->string,
					cases[ci].name, hex, want->valuestring);
				bad++;
			}
		}
		free(x);
	}
	wf_simd_set(1);
	ck_assert_int_ge(checked, 15 * (int)NCASES);
	ck_assert_msg(bad == 0, "%d of %d (type, case) outputs differ from ggml's (simd %d)", bad, checked, _i);
}
END_TEST

/* Exactly the oracle's types have an encoder. */
START_TEST(test_table)
{
	cJSON *dg = cJSON_GetObjectItem(oracle, "digests");
	int n = 0;

	for (int id = 0; id < WF_T_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty == NULL || ty->quantize == NULL)
			continue;
		ck_assert_msg(cJSON_GetObjectItem(dg, ty->name) != NULL, "%s: an encoder without an oracle",
			      ty->name);
		n++;
	}
	ck_assert_int_eq(n, cJSON_GetArraySize(dg));
}
END_TEST

START_TEST(test_errors)
{
	float x[512] = { 1.0f, -2.0f };
	uint8_t out[1024];
	size_t len = 7;
	char err[WF_ERRLEN];

	memset(out, 0xAB, sizeof out);
	ck_assert_int_eq(wf_quantize_rows(WF_T_IQ2_XXS, x, 1, 256, out, sizeof out, &len, err), WF_ERR_UNSUP);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q8_1, x, 1, 32, out, sizeof out, &len, err), WF_ERR_UNSUP);
	ck_assert_int_eq(wf_quantize_rows(9999, x, 1, 32, out, sizeof out, &len, err), WF_ERR_UNSUP);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q4_K, x, 2, 128, out, sizeof out, &len, err), WF_ERR_UNSUP);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q4_0, x, 1, 48, out, sizeof out, &len, err), WF_ERR_UNSUP);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q4_K, x, 2, 256, out, 287, &len, err), WF_ERR_RANGE);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q8_0, x, SIZE_MAX / 4, 64, out, sizeof out, &len, err),
			 WF_ERR_RANGE);
	ck_assert_int_eq(wf_quantize_rows(WF_T_F32, x, SIZE_MAX / 2, 4, out, sizeof out, &len, err),
			 WF_ERR_RANGE);
	ck_assert_uint_eq(len, 7);
	for (size_t i = 0; i < sizeof out; i++)
		ck_assert_uint_eq(out[i], 0xAB);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q4_K, x, 2, 256, out, 288, &len, err), WF_OK);
	ck_assert_uint_eq(len, 288);
	ck_assert_uint_eq(out[288], 0xAB);
	ck_assert_int_eq(wf_quantize_rows(WF_T_Q4_K, x, 0, 256, out, 0, &len, err), WF_OK);
	ck_assert_uint_eq(len, 0);
}
END_TEST

/* Blocks depend on their own values only: one call per block, in any
 * order, gives the bytes of a single call (wf_quant_fn's contract). */
START_TEST(test_blockwise)
{
	float *x = case_floats(0);
	size_t n = cases[0].nrows * cases[0].npr;

	for (int id = 0; id < WF_T_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty == NULL || ty->quantize == NULL)
			continue;
		size_t nb = n / ty->blck, len = nb * ty->bytes;
		uint8_t *a = malloc(len), *b = malloc(len);
		ck_assert_ptr_nonnull(a);
		ck_assert_ptr_nonnull(b);
		ty->quantize(x, a, nb);
		for (size_t k = nb; k-- > 0;)
			ty->quantize(x + k * ty->blck, b + k * ty->bytes, 1);
		ck_assert_msg(memcmp(a, b, len) == 0, "%s: block by block differs", ty->name);
		free(a);
		free(b);
	}
	free(x);
}
END_TEST

/* Relative RMS error of decode(encode(normal case)), per type: ggml's
 * quantizers' own accuracy, with a margin (each measured at 0.8 of its
 * bound; WF_QUANT_VERBOSE=1 prints them). */
static const struct { const char *name; double bound; } rt_bound[] = {
	{ "F32", 0.0 }, { "F16", 3e-4 }, { "BF16", 2.2e-3 }, { "Q8_0", 0.0065 },
	{ "Q6_K", 0.021 }, { "Q5_K", 0.043 }, { "Q5_0", 0.052 }, { "Q5_1", 0.046 },
	{ "Q4_K", 0.086 }, { "Q4_0", 0.104 }, { "Q4_1", 0.095 }, { "IQ4_NL", 0.094 },
	{ "IQ4_XS", 0.094 }, { "Q3_K", 0.183 }, { "Q2_K", 0.36 },
};

static double rt_error(const struct wf_type *ty, const float *x, size_t n, float *y)
{
	size_t nb = n / ty->blck;
	uint8_t *q = malloc(nb * ty->bytes);
	double se = 0, sx = 0;

	ck_assert_ptr_nonnull(q);
	ty->quantize(x, q, nb);
	if (ty->decode)
		ty->decode(q, y, nb);
	else
		memcpy(y, q, n * sizeof *y); /* F32: the bytes are the values */
	free(q);
	for (size_t i = 0; i < n; i++) {
		se += ((double)x[i] - y[i]) * ((double)x[i] - y[i]);
		sx += (double)x[i] * x[i];
	}
	return sqrt(se / sx);
}

START_TEST(test_round_trip)
{
	float *x = case_floats(0), *y = malloc(4096 * sizeof *y);
	float *z = case_floats(8); /* zeros */
	size_t n = cases[0].nrows * cases[0].npr, nz = cases[8].nrows * cases[8].npr;

	ck_assert_ptr_nonnull(y);
	ck_assert_uint_eq(n, 4096);
	for (size_t k = 0; k < sizeof rt_bound / sizeof rt_bound[0]; k++) {
		const struct wf_type *ty = wf_type_get(type_by_name(rt_bound[k].name));
		ck_assert_ptr_nonnull(ty);
		double e = rt_error(ty, x, n, y);
		if (getenv("WF_QUANT_VERBOSE"))
			fprintf(stderr, "%-7s %.5f\n", ty->name, e);
		ck_assert_msg(e <= rt_bound[k].bound, "%s: relative RMS error %g > %g", ty->name, e,
			      rt_bound[k].bound);
		ck_assert_msg(k == 0 || e > 0, "%s: lossless on normal data?", ty->name);
		uint8_t q[4096];
		ty->quantize(z, q, nz / ty->blck);
		if (ty->decode)
			ty->decode(q, y, nz / ty->blck);
		else
			memcpy(y, q, nz * sizeof *y);
		for (size_t i = 0; i < nz; i++)
			ck_assert_msg(y[i] == 0.0f, "%s: zeros decode to %g", ty->name, y[i]);
	}
	free(x);
	free(y);
	free(z);
}
END_TEST

/* Values a type holds exactly come back exactly: halves through F16 and
 * BF16, and through Q8_0 the integers of a block whose largest is 127. */
START_TEST(test_exact)
{
	float x[64], y[64];
	uint8_t q[256];

	for (int i = 0; i < 64; i++)
		x[i] = (float)((i * 37) % 255 - 127) * (i < 32 ? 1.0f : 0.5f);
	x[5] = 127.0f;
	x[40] = -63.5f;
	wf_type_get(WF_T_F16)->quantize(x, q, 64);
	wf_type_get(WF_T_F16)->decode(q, y, 64);
	ck_assert_mem_eq(x, y, sizeof x);
	wf_type_get(WF_T_BF16)->quantize(x, q, 64);
	wf_type_get(WF_T_BF16)->decode(q, y, 64);
	ck_assert_mem_eq(x, y, sizeof x);
	wf_type_get(WF_T_Q8_0)->quantize(x, q, 1);
	wf_type_get(WF_T_Q8_0)->decode(q, y, 1);
	ck_assert_mem_eq(x, y, 32 * sizeof x[0]);
}
END_TEST

/* The public calls (weightfs.h) over the same encoders and decoders. */
START_TEST(test_public_api)
{
	float x[512], y[512];
	uint8_t q[600];
	size_t len = 0;
	char err[128] = "";
	uint32_t blck, bytes;
	int enc, dec;

	for (int i = 0; i < 512; i++)
		x[i] = (float)((i * 7919) % 1001 - 500) / 64.0f;
	ck_assert_int_eq(weightfs_type_parse("q4_k"), WF_T_Q4_K);
	ck_assert_int_eq(weightfs_type_parse("IQ4_XS"), WF_T_IQ4_XS);
	ck_assert_int_eq(weightfs_type_parse("bool"), -1); /* safetensors-only: no ggml type */
	ck_assert_int_eq(weightfs_type_parse("q4_kk"), -1);
	ck_assert_int_eq(weightfs_type_parse(NULL), -1);
	ck_assert_int_eq(weightfs_type_info(4, &blck, &bytes, &enc, &dec), WEIGHTFS_EINVAL);
	ck_assert_int_eq(weightfs_type_info(WF_T_Q4_K, &blck, &bytes, &enc, &dec), WEIGHTFS_OK);
	ck_assert(blck == 256 && bytes == 144 && enc == 1 && dec == 1);
	ck_assert_int_eq(weightfs_type_info(WF_T_IQ2_XXS, NULL, NULL, &enc, &dec), WEIGHTFS_OK);
	ck_assert(enc == 0 && dec == 1);
	ck_assert_int_eq(weightfs_type_info(WF_T_F32, NULL, NULL, &enc, &dec), WEIGHTFS_OK);
	ck_assert(enc == 1 && dec == 1);
	ck_assert_int_eq(weightfs_quantize(WF_T_Q4_K, NULL, 2, 256, q, sizeof q, &len, err, sizeof err),
			 WEIGHTFS_EINVAL);
	ck_assert_int_eq(weightfs_quantize(WF_T_BOOL, x, 2, 256, q, sizeof q, &len, err, sizeof err),
			 WEIGHTFS_EUNSUP);
	ck_assert_int_eq(weightfs_quantize(WF_T_Q4_K, x, 2, 256, q, 100, &len, err, sizeof err), WEIGHTFS_ERANGE);
	ck_assert_msg(strstr(err, "do not fit") != NULL, "%s", err);
	ck_assert_int_eq(weightfs_quantize(WF_T_Q4_K, x, 2, 256, q, sizeof q, &len, err, sizeof err), WEIGHTFS_OK);
	ck_assert_uint_eq(len, 288);
	ck_assert_int_eq(weightfs_dequantize(WF_T_Q4_K, q, 287, y, 512, err, sizeof err), WEIGHTFS_ERANGE);
	ck_assert_int_eq(weightfs_dequantize(WF_T_Q4_K, q, 288, y, 500, err, sizeof err), WEIGHTFS_EUNSUP);
	ck_assert_int_eq(weightfs_dequantize(WF_T_F6_E2M3, q, 288, y, 4, err, sizeof err), WEIGHTFS_EUNSUP);
	ck_assert_int_eq(weightfs_dequantize(WF_T_Q4_K, q, 288, y, 512, err, sizeof err), WEIGHTFS_OK);
	float z[512];
	wf_type_get(WF_T_Q4_K)->decode(q, z, 2);
	ck_assert_mem_eq(y, z, sizeof y);
	ck_assert_int_eq(weightfs_quantize(WF_T_F32, x, 1, 512, q, sizeof q, &len, err, sizeof err), WEIGHTFS_ERANGE);
}
END_TEST

/* Every AVX2 twin gives its scalar encoder's bytes on every case, and
 * Q2_K, Q4_K, Q5_K, Q6_K, IQ4_NL and IQ4_XS have one (the searches that gain most from it). */
START_TEST(test_simd_twins)
{
#ifdef WF_HAVE_X86_SIMD
	int twins = 0;

	ck_assert_ptr_nonnull(wf_type_get(WF_T_Q2_K)->quantize_simd);
	ck_assert_ptr_nonnull(wf_type_get(WF_T_Q4_K)->quantize_simd);
	ck_assert_ptr_nonnull(wf_type_get(WF_T_Q5_K)->quantize_simd);
	ck_assert_ptr_nonnull(wf_type_get(WF_T_Q6_K)->quantize_simd);
	ck_assert_ptr_nonnull(wf_type_get(WF_T_IQ4_NL)->quantize_simd);
	ck_assert_ptr_nonnull(wf_type_get(WF_T_IQ4_XS)->quantize_simd);
	if (!wf_cpu_has_simd()) {
		fprintf(stderr, "check_quant: no AVX2: the SIMD twins are not run\n");
		return;
	}
	for (size_t ci = 0; ci < NCASES; ci++) {
		float *x = case_floats(ci);
		size_t n = cases[ci].nrows * cases[ci].npr;
		for (int id = 0; id < WF_T_COUNT; id++) {
			const struct wf_type *ty = wf_type_get(id);
			if (ty == NULL || ty->quantize_simd == NULL)
				continue;
			size_t nb = n / ty->blck, len = nb * ty->bytes;
			uint8_t *a = malloc(len), *b = malloc(len);
			ck_assert_ptr_nonnull(a);
			ck_assert_ptr_nonnull(b);
			ty->quantize(x, a, nb);
			ty->quantize_simd(x, b, nb);
			ck_assert_msg(memcmp(a, b, len) == 0, "%s %s: the AVX2 twin differs", ty->name, cases[ci].name);
			free(a);
			free(b);
			twins++;
		}
		free(x);
	}
	ck_assert_int_eq(twins, 6 * (int)NCASES);
#else
	fprintf(stderr, "check_quant: not an x86 build: no SIMD twins\n");
#endif
}
END_TEST

static Suite *quant_suite(void)
{
	Suite *s = suite_create("quant");
	TCase *tc = tcase_create("oracle");

	tcase_add_checked_fixture(tc, load_oracle, free_oracle);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_cases_match_oracle_shapes);
	tcase_add_test(tc, test_inputs_match_oracle);
	tcase_add_loop_test(tc, test_digests, 0, 2);
	tcase_add_test(tc, test_table);
	suite_add_tcase(s, tc);
	tc = tcase_create("encoders");
	tcase_add_checked_fixture(tc, load_oracle, free_oracle);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_blockwise);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_exact);
	tcase_add_test(tc, test_public_api);
	tcase_add_test(tc, test_simd_twins);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(quant_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
