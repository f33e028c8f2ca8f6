/* check_types.c - unit tests for the type table (wf_types.c) and the block
 * decoders (wf_decode.c).
 *
 * The expected geometry below is typed in from ggml's type_traits table
 * (ggml/src/ggml.c, ggml 0.21.0) and the safetensors format's dtypes, as
 * docs/types.md lists them, not derived from the implementation, so a wrong
 * row in the table shows up here; so does a wrong block size in
 * src/codec/wf_blocks.h, whose constants every block row must also equal.
 * Decoder outputs are compared as bytes (memcmp), so -0.0 vs +0.0 and NaN
 * payloads count.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_types.h"
#include "known_blocks.h"

struct expect {
	const char *name;     /* NULL: a hole */
	const char *dtype;
	uint32_t blck, bytes, out_size;
	int kind;             /* K_RAW, K_DECODE, K_NODEC or K_HFQ below */
	int st;               /* also a safetensors dtype spelling */
};

/* plain arrays; decoded types; types with no decoder (shown as their
 * bytes); layers of several stored tensors (view/wf_hfq.h) */
enum { K_RAW, K_DECODE, K_NODEC, K_HFQ };
#define E(n, dt, bl, by, os, k, st) { n, dt, bl, by, os, K_##k, st }

static const struct expect expected[WF_T_COUNT] = {
	[0]  = E("F32", "float32", 1, 4, 4, RAW, 1),
	[1]  = E("F16", "float32", 1, 2, 4, DECODE, 1),
	[2]  = E("Q4_0", "float32", 32, 18, 4, DECODE, 0),
	[3]  = E("Q4_1", "float32", 32, 20, 4, DECODE, 0),
	[6]  = E("Q5_0", "float32", 32, 22, 4, DECODE, 0),
	[7]  = E("Q5_1", "float32", 32, 24, 4, DECODE, 0),
	[8]  = E("Q8_0", "float32", 32, 34, 4, DECODE, 0),
	[9]  = E("Q8_1", "float32", 32, 36, 4, DECODE, 0),
	[10] = E("Q2_K", "float32", 256, 84, 4, DECODE, 0),
	[11] = E("Q3_K", "float32", 256, 110, 4, DECODE, 0),
	[12] = E("Q4_K", "float32", 256, 144, 4, DECODE, 0),
	[13] = E("Q5_K", "float32", 256, 176, 4, DECODE, 0),
	[14] = E("Q6_K", "float32", 256, 210, 4, DECODE, 0),
	[15] = E("Q8_K", "float32", 256, 292, 4, DECODE, 0),
	[16] = E("IQ2_XXS", "float32", 256, 66, 4, DECODE, 0),
	[17] = E("IQ2_XS", "float32", 256, 74, 4, DECODE, 0),
	[18] = E("IQ3_XXS", "float32", 256, 98, 4, DECODE, 0),
	[19] = E("IQ1_S", "float32", 256, 50, 4, DECODE, 0),
	[20] = E("IQ4_NL", "float32", 32, 18, 4, DECODE, 0),
	[21] = E("IQ3_S", "float32", 256, 110, 4, DECODE, 0),
	[22] = E("IQ2_S", "float32", 256, 82, 4, DECODE, 0),
	[23] = E("IQ4_XS", "float32", 256, 136, 4, DECODE, 0),
	[24] = E("I8", "int8", 1, 1, 1, RAW, 1),
	[25] = E("I16", "int16", 1, 2, 2, RAW, 1),
	[26] = E("I32", "int32", 1, 4, 4, RAW, 1),
	[27] = E("I64", "int64", 1, 8, 8, RAW, 1),
	[28] = E("F64", "float32", 1, 8, 4, DECODE, 1),
	[29] = E("IQ1_M", "float32", 256, 56, 4, DECODE, 0),
	[30] = E("BF16", "float32", 1, 2, 4, DECODE, 1),
	[34] = E("TQ1_0", "float32", 256, 54, 4, DECODE, 0),
	[35] = E("TQ2_0", "float32", 256, 66, 4, DECODE, 0),
	[39] = E("MXFP4", "float32", 32, 17, 4, DECODE, 0),
	[40] = E("NVFP4", "float32", 64, 36, 4, DECODE, 0),
	[41] = E("Q1_0", "float32", 128, 18, 4, DECODE, 0),
	[42] = E("Q2_0", "float32", 64, 18, 4, DECODE, 0),
	[64] = E("BOOL", "bool", 1, 1, 1, RAW, 1),
	[65] = E("U8", "uint8", 1, 1, 1, RAW, 1),
	[66] = E("U16", "uint16", 1, 2, 2, RAW, 1),
	[67] = E("U32", "uint32", 1, 4, 4, RAW, 1),
	[68] = E("U64", "uint64", 1, 8, 8, RAW, 1),
	[69] = E("F8_E4M3", "float32", 1, 1, 4, DECODE, 1),
	[70] = E("F8_E5M2", "float32", 1, 1, 4, DECODE, 1),
	[71] = E("F8_E8M0", "float32", 1, 1, 4, DECODE, 1),
	[72] = E("F8_E4M3FNUZ", "float32", 1, 1, 4, DECODE, 1),
	[73] = E("F8_E5M2FNUZ", "float32", 1, 1, 4, DECODE, 1),
	[74] = E("F4", "float32", 2, 1, 4, DECODE, 1),
	[75] = E("F6_E2M3", "uint8", 4, 3, 1, NODEC, 1),
	[76] = E("F6_E3M2", "uint8", 4, 3, 1, NODEC, 1),
	[77] = E("C64", "complex64", 1, 8, 8, RAW, 1),
	/* decoded layers of several stored tensors: no file's dtype */
	[78] = E("FP8", "float32", 1, 4, 4, HFQ, 0),
	[79] = E("GPTQ", "float32", 1, 4, 4, HFQ, 0),
	[80] = E("AWQ", "float32", 1, 4, 4, HFQ, 0),
	[81] = E("MLX", "float32", 1, 4, 4, HFQ, 0),
	[82] = E("BNB4", "float32", 1, 4, 4, HFQ, 0),
	[83] = E("BNB8", "float32", 1, 4, 4, HFQ, 0),
	[84] = E("MXFP4", "float32", 1, 4, 4, HFQ, 0),
};

/* Every block type wf_blocks.h describes, at its type id; zero elsewhere. */
struct geometry {
	uint32_t blck, bytes;
};

#define B(T) [WF_T_##T] = { WF_##T##_BLCK, WF_##T##_BYTES }

static const struct geometry blocks_h[WF_T_COUNT] = {
	B(Q4_0), B(Q4_1), B(Q5_0), B(Q5_1), B(Q8_0), B(Q8_1),
	B(Q2_K), B(Q3_K), B(Q4_K), B(Q5_K), B(Q6_K), B(Q8_K),
	B(IQ2_XXS), B(IQ2_XS), B(IQ2_S), B(IQ3_XXS), B(IQ3_S),
	B(IQ1_S), B(IQ1_M), B(IQ4_NL), B(IQ4_XS),
	B(TQ1_0), B(TQ2_0), B(MXFP4), B(NVFP4), B(Q1_0), B(Q2_0),
};

static uint32_t bits_of(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* --- the table ----------------------------------------------------------- */

START_TEST(test_row)
{
	const struct expect *e = &expected[_i];
	const struct wf_type *t = wf_type_get(_i);

	if (!e->name) {
		ck_assert_msg(t == NULL, "id %d should be a hole", _i);
		if (_i < WF_GGML_TYPE_COUNT)
			ck_assert_int_eq(wf_type_from_gguf((uint32_t)_i), -1);
		return;
	}
	ck_assert_msg(t != NULL, "id %d (%s) has no row", _i, e->name);
	ck_assert_str_eq(t->name, e->name);
	ck_assert_str_eq(t->dtype, e->dtype);
	ck_assert_uint_gt(t->blck, 0);
	ck_assert_uint_gt(t->bytes, 0);
	ck_assert_uint_gt(wf_vk_elem_size(t, t->vk), 0);
	ck_assert_uint_eq(t->blck, e->blck);
	ck_assert_uint_eq(t->bytes, e->bytes);
	ck_assert_uint_eq(wf_vk_elem_size(t, t->vk), e->out_size);
	static const enum wf_vk own_view[] = {[K_RAW] = WF_VK_RAW, [K_DECODE] = WF_VK_F32, [K_NODEC] = WF_VK_RAW,
					      [K_HFQ] = WF_VK_F32};
	ck_assert_int_eq(t->vk, own_view[e->kind]);
	ck_assert_int_eq(t->layer, e->kind == K_HFQ);
	ck_assert_int_eq(t->decode != NULL, e->kind == K_DECODE);
	ck_assert_int_eq(t->stored == NULL, e->kind == K_NODEC || e->kind == K_HFQ || (e->kind == K_DECODE && t->blck > 1));
	if (e->kind == K_RAW)
		ck_assert_uint_eq(wf_vk_elem_size(t, t->vk) * t->blck, t->bytes);

	/* Names round-trip through the lookups of the format(s) using them. */
	if (_i < WF_GGML_TYPE_COUNT)
		ck_assert_int_eq(wf_type_from_gguf((uint32_t)_i), _i);
	ck_assert_int_eq(wf_type_from_st(e->name, strlen(e->name)), e->st ? _i : -1);
}
END_TEST

/* The table's block rows, wf_blocks.h and ggml's numbers (expected[]) agree;
 * every ggml row with more than one element per block has a layout there. */
START_TEST(test_row_blocks_h)
{
	const struct geometry *g = &blocks_h[_i];
	const struct wf_type *t = wf_type_get(_i);

	if (g->blck == 0) {
		if (t && _i < WF_GGML_TYPE_COUNT)
			ck_assert_msg(t->blck == 1, "%s has blocks but no layout in wf_blocks.h",
				      t->name);
		return;
	}
	ck_assert_msg(t != NULL, "id %d: wf_blocks.h describes a block, the table has no row", _i);
	ck_assert_uint_eq(t->blck, g->blck);
	ck_assert_uint_eq(t->bytes, g->bytes);
	ck_assert_uint_eq(g->blck, expected[_i].blck);
	ck_assert_uint_eq(g->bytes, expected[_i].bytes);
}
END_TEST

START_TEST(test_lookup_edges)
{
	ck_assert_ptr_null(wf_type_get(-1));
	ck_assert_ptr_null(wf_type_get(WF_T_COUNT));
	ck_assert_ptr_null(wf_type_get(WF_GGML_TYPE_COUNT));
	ck_assert_ptr_null(wf_type_get(WF_T_ST_FIRST - 1));
	ck_assert_int_eq(wf_type_from_gguf(WF_GGML_TYPE_COUNT), -1);
	ck_assert_int_eq(wf_type_from_gguf(WF_T_BOOL), -1);
	ck_assert_int_eq(wf_type_from_gguf(UINT32_MAX), -1);

	/* Exact, case-sensitive, bounded by len (the string is not NUL-terminated). */
	ck_assert_int_eq(wf_type_from_st("f16", 3), -1);
	ck_assert_int_eq(wf_type_from_st("F1", 2), -1);
	ck_assert_int_eq(wf_type_from_st("F16\0", 4), -1);
	ck_assert_int_eq(wf_type_from_st("F16x", 3), WF_T_F16);
	ck_assert_int_eq(wf_type_from_st("F8_E4M3FN", 9), -1);
	ck_assert_int_eq(wf_type_from_st("", 0), -1);
	ck_assert_int_eq(wf_type_from_st("Q4_0", 4), -1);
	ck_assert_int_eq(wf_type_from_st("U8", 2), WF_T_U8);
	ck_assert_int_eq(wf_type_from_st("F8_E4M3", 7), WF_T_F8_E4M3);
}
END_TEST

/* The floats column: exactly F32 and the rows that decode to float32 and
 * are no layer; every site that asks "has floats" reads it. */
START_TEST(test_floats_column)
{
	for (int id = -1; id <= WF_T_COUNT; id++) {
		const struct wf_type *t = wf_type_get(id);
		bool want = t && (id == WF_T_F32 || (t->vk == WF_VK_F32 && !t->layer && t->decode));
		ck_assert_msg(wf_type_floats(id) == want, "type %d (%s)", id, t && t->name ? t->name : "-");
		if (t)
			ck_assert(t->floats == want);
	}
	static const int yes[] = {WF_T_F32, WF_T_F16, WF_T_BF16, WF_T_F64, WF_T_Q4_K, WF_T_MXFP4, WF_T_F8_E4M3, WF_T_F4};
	static const int no[] = {WF_T_I8, WF_T_I32, WF_T_U8, WF_T_BOOL, WF_T_C64, WF_T_F6_E2M3, WF_T_HFQ_GPTQ,
				 WF_T_HFQ_MXFP4};
	for (size_t i = 0; i < sizeof yes / sizeof *yes; i++)
		ck_assert(wf_type_floats(yes[i]));
	for (size_t i = 0; i < sizeof no / sizeof *no; i++)
		ck_assert(!wf_type_floats(no[i]));
}
END_TEST

/* --- known blocks from the oracle ---------------------------------------- */

#define N_KNOWN ((int)(sizeof known_blocks / sizeof known_blocks[0]))

START_TEST(test_known_block)
{
	const struct known_block *kb = &known_blocks[_i];
	const struct wf_type *t = wf_type_get(kb->type);
	float *out;
	uint8_t *shifted;

	ck_assert_ptr_nonnull(t);
	ck_assert_int_eq(t->vk, WF_VK_F32);
	ck_assert_uint_eq(kb->in_len, kb->nblocks * t->bytes);
	ck_assert_uint_eq(kb->out_len, kb->nblocks * t->blck * sizeof(float));
	out = malloc(kb->out_len);
	shifted = malloc(kb->in_len + 1);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_nonnull(shifted);

	memset(out, 0xA5, kb->out_len);
	t->decode(kb->in, out, kb->nblocks);
	ck_assert_msg(memcmp(out, kb->out, kb->out_len) == 0, "%s: %s differs", t->name, kb->source);

	/* Same bytes at an odd address: decoders must not assume alignment. */
	memcpy(shifted + 1, kb->in, kb->in_len);
	memset(out, 0x5A, kb->out_len);
	t->decode(shifted + 1, out, kb->nblocks);
	ck_assert_msg(memcmp(out, kb->out, kb->out_len) == 0, "%s: unaligned decode differs",
		      t->name);
	free(shifted);
	free(out);
}
END_TEST

/* --- hand-made edge cases for the plain float types ----------------------- */

struct edge {
	int type;
	uint8_t in[2];      /* one element, little-endian */
	uint32_t out;       /* expected float32 bits */
	const char *what;
};

static const struct edge edges[] = {
	{ WF_T_F16, {0x00, 0x80}, 0x80000000, "f16 -0" },
	{ WF_T_F16, {0x01, 0x00}, 0x33800000, "f16 smallest subnormal 2^-24" },
	{ WF_T_F16, {0xFF, 0x83}, 0xB87FC000, "f16 largest negative subnormal" },
	{ WF_T_F16, {0x00, 0x04}, 0x38800000, "f16 smallest normal 2^-14" },
	{ WF_T_F16, {0xFF, 0x7B}, 0x477FE000, "f16 max 65504" },
	{ WF_T_F16, {0x00, 0x7C}, 0x7F800000, "f16 +inf" },
	{ WF_T_F16, {0x00, 0xFC}, 0xFF800000, "f16 -inf" },
	{ WF_T_F16, {0x00, 0x7E}, 0x7FC00000, "f16 quiet NaN" },
	{ WF_T_F16, {0x01, 0x7C}, 0x7FC02000, "f16 signalling NaN comes out quiet (ggml)" },
	{ WF_T_BF16, {0x00, 0x80}, 0x80000000, "bf16 -0" },
	{ WF_T_BF16, {0x01, 0x00}, 0x00010000, "bf16 subnormal kept" },
	{ WF_T_BF16, {0x80, 0xFF}, 0xFF800000, "bf16 -inf" },
	{ WF_T_BF16, {0x81, 0x7F}, 0x7F810000, "bf16 signalling NaN kept as is" },
	{ WF_T_F8_E4M3, {0x7E}, 0x43E00000, "e4m3fn 0x7E = 448 (no inf)" },
	{ WF_T_F8_E4M3, {0x78}, 0x43800000, "e4m3fn 0x78 = 256" },
	{ WF_T_F8_E4M3, {0x7F}, 0x7FF00000, "e4m3fn 0x7F NaN" },
	{ WF_T_F8_E4M3, {0xFF}, 0xFFF00000, "e4m3fn 0xFF NaN keeps sign" },
	{ WF_T_F8_E4M3, {0x80}, 0x80000000, "e4m3fn 0x80 = -0" },
	{ WF_T_F8_E4M3, {0x01}, 0x3B000000, "e4m3fn smallest subnormal 2^-9" },
	{ WF_T_F8_E4M3, {0x08}, 0x3C800000, "e4m3fn smallest normal 2^-6" },
	{ WF_T_F8_E5M2, {0x7C}, 0x7F800000, "e5m2 0x7C +inf" },
	{ WF_T_F8_E5M2, {0xFC}, 0xFF800000, "e5m2 0xFC -inf" },
	{ WF_T_F8_E5M2, {0x7B}, 0x47600000, "e5m2 max 57344" },
	{ WF_T_F8_E5M2, {0x01}, 0x37800000, "e5m2 smallest subnormal 2^-16" },
	{ WF_T_F8_E5M2, {0x80}, 0x80000000, "e5m2 -0" },
	{ WF_T_F8_E5M2, {0x7D}, 0x7FE00000, "e5m2 0x7D NaN, quieted like f16" },
	{ WF_T_F8_E8M0, {0x00}, 0x00400000, "e8m0 0 = 2^-127 (f32 subnormal)" },
	{ WF_T_F8_E8M0, {0x01}, 0x00800000, "e8m0 1 = 2^-126" },
	{ WF_T_F8_E8M0, {0x7F}, 0x3F800000, "e8m0 127 = 1" },
	{ WF_T_F8_E8M0, {0xFE}, 0x7F000000, "e8m0 254 = 2^127" },
	{ WF_T_F8_E8M0, {0xFF}, 0x7F800001, "e8m0 0xFF NaN (torch bits)" },
	{ WF_T_F8_E4M3FNUZ, {0x00}, 0x00000000, "e4m3fnuz 0" },
	{ WF_T_F8_E4M3FNUZ, {0x80}, 0x7F800001, "e4m3fnuz 0x80 NaN" },
	{ WF_T_F8_E4M3FNUZ, {0x7F}, 0x43700000, "e4m3fnuz max 240" },
	{ WF_T_F8_E4M3FNUZ, {0x40}, 0x3F800000, "e4m3fnuz 0x40 = 1 (bias 8)" },
	{ WF_T_F8_E4M3FNUZ, {0xC0}, 0xBF800000, "e4m3fnuz 0xC0 = -1" },
	{ WF_T_F8_E4M3FNUZ, {0x01}, 0x3A800000, "e4m3fnuz smallest subnormal 2^-10" },
	{ WF_T_F8_E5M2FNUZ, {0x7F}, 0x47600000, "e5m2fnuz max 57344" },
	{ WF_T_F8_E5M2FNUZ, {0x40}, 0x3F800000, "e5m2fnuz 0x40 = 1 (bias 16)" },
	{ WF_T_F8_E5M2FNUZ, {0x01}, 0x37000000, "e5m2fnuz smallest subnormal 2^-17" },
	{ WF_T_F8_E5M2FNUZ, {0x80}, 0x7F800001, "e5m2fnuz 0x80 NaN" },
};

#define N_EDGES ((int)(sizeof edges / sizeof edges[0]))

START_TEST(test_edge)
{
	const struct edge *e = &edges[_i];
	const struct wf_type *t = wf_type_get(e->type);
	float out;

	ck_assert_ptr_nonnull(t);
	t->decode(e->in, &out, 1);
	ck_assert_msg(bits_of(out) == e->out, "%s: got 0x%08x, want 0x%08x", e->what,
		      (unsigned)bits_of(out), (unsigned)e->out);
}
END_TEST

/* Every f16 input against a reference computed another way (ldexp). */
START_TEST(test_f16_exhaustive)
{
	const struct wf_type *t = wf_type_get(WF_T_F16);

	for (uint32_t h = 0; h < 65536; h++) {
		const uint8_t in[2] = { (uint8_t)h, (uint8_t)(h >> 8) };
		const unsigned e = (h >> 10) & 31, m = h & 1023;
		uint32_t want;
		float out;

		if (e == 31) {
			want = (h & 0x8000) << 16 | 0x7F800000 | (m ? 0x400000 | m << 13 : 0);
		} else {
			float v = e ? ldexpf((float)(1024 + m), (int)e - 25)
				    : ldexpf((float)m, -24);

			want = bits_of((h & 0x8000) ? -v : v);
		}
		t->decode(in, &out, 1);
		ck_assert_msg(bits_of(out) == want, "f16 0x%04x: got 0x%08x, want 0x%08x",
			      (unsigned)h, (unsigned)bits_of(out), (unsigned)want);
	}
}
END_TEST

/* --- hand-made edge cases for block types ---------------------------------- */

/* MXFP4 with e = 0 and 1: the scale 2^(e-128) is an f32 subnormal, and so
 * are small results; nothing may be flushed to zero. */
START_TEST(test_mxfp4_subnormal)
{
	uint8_t blk[17] = { 0x00 };
	float out[32];

	blk[1] = 0x21;  /* y[0] = 1*d, y[16] = 2*d */
	blk[2] = 0x9F;  /* y[1] = -12*d, y[17] = -1*d */
	blk[3] = 0x08;  /* y[2] = code 8 ("-0") -> +0 */
	wf_type_get(WF_T_MXFP4)->decode(blk, out, 1);
	ck_assert_uint_eq(bits_of(out[0]), 0x00200000);   /* 2^-128 */
	ck_assert_uint_eq(bits_of(out[16]), 0x00400000);  /* 2^-127 */
	ck_assert_uint_eq(bits_of(out[1]), 0x81400000);   /* -12 * 2^-128 */
	ck_assert_uint_eq(bits_of(out[17]), 0x80200000);  /* -2^-128 */
	ck_assert_uint_eq(bits_of(out[2]), 0x00000000);
	ck_assert_uint_eq(bits_of(out[3]), 0x00000000);

	blk[0] = 0x01;
	wf_type_get(WF_T_MXFP4)->decode(blk, out, 1);
	ck_assert_uint_eq(bits_of(out[0]), 0x00400000);   /* 2^-127 */
	ck_assert_uint_eq(bits_of(out[1]), 0x81C00000);   /* -12 * 2^-127 */
}
END_TEST

/* NVFP4 scales (halved UE4M3): 0xFF reads as 0x7F's bit pattern without the
 * NaN rule, 480 * 0.5 = 240; 0x7F and 0x80 give 0. */
START_TEST(test_nvfp4_scales)
{
	uint8_t blk[36];
	float out[64];

	memset(blk, 0x11, sizeof blk);  /* every code 1, i.e. value 1 (x2 table) */
	blk[0] = 0xFF;
	blk[1] = 0x7F;
	blk[2] = 0x80;
	blk[3] = 0x01;
	wf_type_get(WF_T_NVFP4)->decode(blk, out, 1);
	for (int j = 0; j < 16; j++) {
		ck_assert_uint_eq(bits_of(out[j]), 0x43700000);       /* 1 * 240 */
		ck_assert_uint_eq(bits_of(out[16 + j]), 0x00000000);
		ck_assert_uint_eq(bits_of(out[32 + j]), 0x00000000);
		ck_assert_uint_eq(bits_of(out[48 + j]), 0x3A800000);  /* 2^-9 * 0.5 */
	}
}
END_TEST

/* Q1_0: clear bits give -d by negation, so d = +0 yields -0. */
START_TEST(test_q1_0_signed_zero)
{
	uint8_t blk[18] = { 0x00, 0x00 };
	float out[128];

	blk[2] = 0x01;   /* element 0 set */
	blk[17] = 0x80;  /* element 127 set */
	wf_type_get(WF_T_Q1_0)->decode(blk, out, 1);
	for (int j = 0; j < 128; j++)
		ck_assert_uint_eq(bits_of(out[j]), (j == 0 || j == 127) ? 0x00000000 : 0x80000000);

	blk[1] = 0x80;   /* d = -0 flips both */
	wf_type_get(WF_T_Q1_0)->decode(blk, out, 1);
	for (int j = 0; j < 128; j++)
		ck_assert_uint_eq(bits_of(out[j]), (j == 0 || j == 127) ? 0x80000000 : 0x00000000);
}
END_TEST

/* Q4_0 with d = -0: the code-8 element is 0 * -0 = -0, the others signed 0. */
START_TEST(test_q4_0_negative_zero_scale)
{
	uint8_t blk[18] = { 0x00, 0x80 };
	float out[32];

	blk[2] = 0x98;  /* y[0] = 0 * -0 = -0, y[16] = 1 * -0 = -0 */
	blk[3] = 0x07;  /* y[1] = -1 * -0 = +0, y[17] = -8 * -0 = +0 */
	wf_type_get(WF_T_Q4_0)->decode(blk, out, 1);
	ck_assert_uint_eq(bits_of(out[0]), 0x80000000);
	ck_assert_uint_eq(bits_of(out[16]), 0x80000000);
	ck_assert_uint_eq(bits_of(out[1]), 0x00000000);
	ck_assert_uint_eq(bits_of(out[17]), 0x00000000);
}
END_TEST

/* A block decoder writes exactly nblocks * blck floats and nothing more. */
START_TEST(test_decode_bounds)
{
	const struct wf_type *t = wf_type_get(_i);
	uint8_t *in;
	float *out;
	size_t n = 3;

	if (!t || !t->decode)
		return;
	in = malloc(n * t->bytes);
	out = malloc((n * t->blck + 1) * sizeof(float));
	ck_assert_ptr_nonnull(in);
	ck_assert_ptr_nonnull(out);
	for (size_t k = 0; k < n * t->bytes; k++)
		in[k] = (uint8_t)(k * 37 + 11);
	out[n * t->blck] = 1234.5f;
	t->decode(in, out, n);
	ck_assert_uint_eq(bits_of(out[n * t->blck]), bits_of(1234.5f));
	t->decode(in, out, 0);  /* zero blocks is a no-op */
	free(in);
	free(out);
}
END_TEST

static Suite *types_suite(void)
{
	Suite *s = suite_create("types");
	TCase *tc;

	tc = tcase_create("table");
	tcase_add_loop_test(tc, test_row, 0, WF_T_COUNT);
	tcase_add_loop_test(tc, test_row_blocks_h, 0, WF_T_COUNT);
	tcase_add_test(tc, test_lookup_edges);
	tcase_add_test(tc, test_floats_column);
	suite_add_tcase(s, tc);

	tc = tcase_create("known_blocks");
	tcase_add_loop_test(tc, test_known_block, 0, N_KNOWN);
	tcase_add_loop_test(tc, test_decode_bounds, 0, WF_T_COUNT);
	suite_add_tcase(s, tc);

	tc = tcase_create("edges");
	tcase_add_loop_test(tc, test_edge, 0, N_EDGES);
	tcase_add_test(tc, test_f16_exhaustive);
	tcase_add_test(tc, test_mxfp4_subnormal);
	tcase_add_test(tc, test_nvfp4_scales);
	tcase_add_test(tc, test_q1_0_signed_zero);
	tcase_add_test(tc, test_q4_0_negative_zero_scale);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(types_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
