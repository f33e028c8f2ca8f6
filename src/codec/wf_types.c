/* wf_types.c - the tensor type table and its lookups.
 *
 * Geometry (blck, bytes) for the ggml ids is ggml's type_traits table in
 * ggml/src/ggml.c (blck_size, type_size) of ggml 0.21.0, whose sources are
 * those of llama.cpp commit 3f545beccee69d9975f466ec7e45fd9aacd8ba90
 * (docs/types.md lists it); the block types' come from wf_blocks.h, which
 * the decoders read their field offsets from too.  A row with
 * name == NULL is a hole: a removed ggml id (4, 5, 31-33, 36-38) or an id
 * nobody assigned (43..63).
 */
#include "codec/wf_types.h"

#include <stdlib.h>
#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_decode.h"
#include "codec/wf_quant.h"

#ifdef WF_HAVE_X86_SIMD
#define SIMD(fn) fn##_avx2
#else
#define SIMD(fn) NULL
#endif

/* A plain array whose bytes the view passes through unchanged. */
#define RAW(n, dt, sz) \
	{ .name = (n), .dtype = (dt), .blck = 1, .bytes = (sz), \
	  .vk = WF_VK_RAW, .decode = NULL, .stored = (dt) }

/* Blocks of bl elements in by bytes, decoded to float32 by fn. */
#define DEC(n, bl, by, fn) \
	{ .name = (n), .dtype = "float32", .blck = (bl), .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .floats = true }

/* The same with a SIMD twin of fn (wf_decode_x86.c). */
#define DECS(n, bl, by, fn) \
	{ .name = (n), .dtype = "float32", .blck = (bl), .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .decode_simd = SIMD(fn), .floats = true }

/* The same with an encoder qfn (wf_quant.h). */
#define DECSQ(n, bl, by, fn, qfn) \
	{ .name = (n), .dtype = "float32", .blck = (bl), .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .decode_simd = SIMD(fn), .quantize = (qfn), .floats = true }

/* The same with an AVX2 twin of qfn too. */
#define DECSQS(n, bl, by, fn, qfn) \
	{ .name = (n), .dtype = "float32", .blck = (bl), .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .decode_simd = SIMD(fn), .quantize = (qfn), \
	  .quantize_simd = SIMD(qfn), .floats = true }

/* One element per block, decoded to float32, stored as the element type
 * el (numpy or ml_dtypes name). */
#define DECE(n, by, fn, el) \
	{ .name = (n), .dtype = "float32", .blck = 1, .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .stored = (el), .floats = true }
#define DECESQ(n, by, fn, el, qfn) \
	{ .name = (n), .dtype = "float32", .blck = 1, .bytes = (by), \
	  .vk = WF_VK_F32, .decode = (fn), .decode_simd = SIMD(fn), .stored = (el), .quantize = (qfn), \
	  .floats = true }

/* Known geometry, no decoder: served as the stored bytes (uint8) under
 * every output dtype, its type named in tensors.json. */
#define NODEC(n, bl, by) \
	{ .name = (n), .dtype = "uint8", .blck = (bl), .bytes = (by), \
	  .vk = WF_VK_RAW, .decode = NULL }

/* A layer made of several stored tensors, decoded per row (wf_hfq.h). */
#define HFQ(n) \
	{ .name = (n), .dtype = "float32", .blck = 1, .bytes = 4, \
	  .vk = WF_VK_F32, .decode = NULL, .layer = true }

static const struct wf_type wf_types[WF_T_COUNT] = {
	/* F32's encoder is a copy, as ggml_quantize_chunk's. */
	[WF_T_F32]      = { .name = "F32", .dtype = "float32", .blck = 1, .bytes = 4,
			    .vk = WF_VK_RAW, .stored = "float32", .quantize = wf_quant_f32, .floats = true },
	[WF_T_F16]      = DECESQ("F16", 2, wf_decode_f16, "float16", wf_quant_f16_n),
	[WF_T_Q4_0]     = DECSQ("Q4_0", WF_Q4_0_BLCK, WF_Q4_0_BYTES, wf_decode_q4_0, wf_quant_q4_0),
	[WF_T_Q4_1]     = DECSQ("Q4_1", WF_Q4_1_BLCK, WF_Q4_1_BYTES, wf_decode_q4_1, wf_quant_q4_1),
	[WF_T_Q5_0]     = DECSQ("Q5_0", WF_Q5_0_BLCK, WF_Q5_0_BYTES, wf_decode_q5_0, wf_quant_q5_0),
	[WF_T_Q5_1]     = DECSQ("Q5_1", WF_Q5_1_BLCK, WF_Q5_1_BYTES, wf_decode_q5_1, wf_quant_q5_1),
	[WF_T_Q8_0]     = DECSQ("Q8_0", WF_Q8_0_BLCK, WF_Q8_0_BYTES, wf_decode_q8_0, wf_quant_q8_0),
	/* ggml's activation format: ggml has no to_float; qs * d as Q8_0. */
	[WF_T_Q8_1]     = DECS("Q8_1", WF_Q8_1_BLCK, WF_Q8_1_BYTES, wf_decode_q8_1),
	[WF_T_Q2_K]     = DECSQS("Q2_K", WF_Q2_K_BLCK, WF_Q2_K_BYTES, wf_decode_q2_k, wf_quant_q2_k),
	[WF_T_Q3_K]     = DECSQ("Q3_K", WF_Q3_K_BLCK, WF_Q3_K_BYTES, wf_decode_q3_k, wf_quant_q3_k),
	[WF_T_Q4_K]     = DECSQS("Q4_K", WF_Q4_K_BLCK, WF_Q4_K_BYTES, wf_decode_q4_k, wf_quant_q4_k),
	[WF_T_Q5_K]     = DECSQS("Q5_K", WF_Q5_K_BLCK, WF_Q5_K_BYTES, wf_decode_q5_k, wf_quant_q5_k),
	[WF_T_Q6_K]     = DECSQS("Q6_K", WF_Q6_K_BLCK, WF_Q6_K_BYTES, wf_decode_q6_k, wf_quant_q6_k),
	/* Not ggml's registered to_float; follows dequantize_row_q8_K. */
	[WF_T_Q8_K]     = DECS("Q8_K", WF_Q8_K_BLCK, WF_Q8_K_BYTES, wf_decode_q8_k),
	[WF_T_IQ2_XXS]  = DECS("IQ2_XXS", WF_IQ2_XXS_BLCK, WF_IQ2_XXS_BYTES, wf_decode_iq2_xxs),
	[WF_T_IQ2_XS]   = DECS("IQ2_XS", WF_IQ2_XS_BLCK, WF_IQ2_XS_BYTES, wf_decode_iq2_xs),
	[WF_T_IQ3_XXS]  = DECS("IQ3_XXS", WF_IQ3_XXS_BLCK, WF_IQ3_XXS_BYTES, wf_decode_iq3_xxs),
	[WF_T_IQ1_S]    = DECS("IQ1_S", WF_IQ1_S_BLCK, WF_IQ1_S_BYTES, wf_decode_iq1_s),
	[WF_T_IQ4_NL]   = DECSQS("IQ4_NL", WF_IQ4_NL_BLCK, WF_IQ4_NL_BYTES, wf_decode_iq4_nl, wf_quant_iq4_nl),
	[WF_T_IQ3_S]    = DECS("IQ3_S", WF_IQ3_S_BLCK, WF_IQ3_S_BYTES, wf_decode_iq3_s),
	[WF_T_IQ2_S]    = DECS("IQ2_S", WF_IQ2_S_BLCK, WF_IQ2_S_BYTES, wf_decode_iq2_s),
	[WF_T_IQ4_XS]   = DECSQS("IQ4_XS", WF_IQ4_XS_BLCK, WF_IQ4_XS_BYTES, wf_decode_iq4_xs, wf_quant_iq4_xs),
	[WF_T_I8]       = RAW("I8", "int8", 1),
	[WF_T_I16]      = RAW("I16", "int16", 2),
	[WF_T_I32]      = RAW("I32", "int32", 4),
	[WF_T_I64]      = RAW("I64", "int64", 8),
	/* Narrowed to float32 so every float view has one element type. */
	[WF_T_F64]      = DECESQ("F64", 8, wf_decode_f64, "float64", NULL),
	[WF_T_IQ1_M]    = DECS("IQ1_M", WF_IQ1_M_BLCK, WF_IQ1_M_BYTES, wf_decode_iq1_m),
	[WF_T_BF16]     = DECESQ("BF16", 2, wf_decode_bf16, "bfloat16", wf_quant_bf16),
	[WF_T_TQ1_0]    = DECS("TQ1_0", WF_TQ1_0_BLCK, WF_TQ1_0_BYTES, wf_decode_tq1_0),
	[WF_T_TQ2_0]    = DECS("TQ2_0", WF_TQ2_0_BLCK, WF_TQ2_0_BYTES, wf_decode_tq2_0),
	[WF_T_MXFP4]    = DECS("MXFP4", WF_MXFP4_BLCK, WF_MXFP4_BYTES, wf_decode_mxfp4),
	[WF_T_NVFP4]    = DECS("NVFP4", WF_NVFP4_BLCK, WF_NVFP4_BYTES, wf_decode_nvfp4),
	[WF_T_Q1_0]     = DECS("Q1_0", WF_Q1_0_BLCK, WF_Q1_0_BYTES, wf_decode_q1_0),
	[WF_T_Q2_0]     = DECS("Q2_0", WF_Q2_0_BLCK, WF_Q2_0_BYTES, wf_decode_q2_0),

	[WF_T_BOOL]     = RAW("BOOL", "bool", 1),
	[WF_T_U8]       = RAW("U8", "uint8", 1),
	[WF_T_U16]      = RAW("U16", "uint16", 2),
	[WF_T_U32]      = RAW("U32", "uint32", 4),
	[WF_T_U64]      = RAW("U64", "uint64", 8),
	[WF_T_F8_E4M3]  = DECE("F8_E4M3", 1, wf_decode_f8_e4m3, "float8_e4m3fn"),
	[WF_T_F8_E5M2]  = DECE("F8_E5M2", 1, wf_decode_f8_e5m2, "float8_e5m2"),
	[WF_T_F8_E8M0]  = DECE("F8_E8M0", 1, wf_decode_f8_e8m0, "float8_e8m0fnu"),
	[WF_T_F8_E4M3FNUZ] = DECE("F8_E4M3FNUZ", 1, wf_decode_f8_e4m3fnuz, "float8_e4m3fnuz"),
	[WF_T_F8_E5M2FNUZ] = DECE("F8_E5M2FNUZ", 1, wf_decode_f8_e5m2fnuz, "float8_e5m2fnuz"),
	/* torch float4_e2m1fn_x2: the first element in the low nibble. */
	[WF_T_F4]       = DEC("F4", 2, 1, wf_decode_f4),
	/* No reference (torch, ml_dtypes, OCP) fixes how four 6-bit values
	 * sit in three bytes, so these are served as their stored bytes. */
	[WF_T_F6_E2M3]  = NODEC("F6_E2M3", 4, 3),
	[WF_T_F6_E3M2]  = NODEC("F6_E3M2", 4, 3),
	[WF_T_C64]      = RAW("C64", "complex64", 8),

	/* Decoded layers: their scheme (wf_hfq.c) reads their parts. */
	[WF_T_HFQ_FP8]  = HFQ("FP8"),
	[WF_T_HFQ_GPTQ] = HFQ("GPTQ"),
	[WF_T_HFQ_AWQ]  = HFQ("AWQ"),
	[WF_T_HFQ_MLX]  = HFQ("MLX"),
	[WF_T_HFQ_BNB]  = HFQ("BNB4"),
	[WF_T_HFQ_BNB8] = HFQ("BNB8"),
	[WF_T_HFQ_MXFP4] = HFQ("MXFP4"),
};

/* ggml ids that safetensors spells the same way; all other safetensors
 * dtypes have rows of their own from WF_T_ST_FIRST on. */
static const int st_shared_ids[] = {
	WF_T_F32, WF_T_F16, WF_T_BF16, WF_T_F64,
	WF_T_I8, WF_T_I16, WF_T_I32, WF_T_I64,
};

const struct wf_type *wf_type_get(int id)
{
	if (id < 0 || id >= WF_T_COUNT || wf_types[id].name == NULL)
		return NULL;
	return &wf_types[id];
}

bool wf_type_floats(int id)
{
	const struct wf_type *ty = wf_type_get(id);
	return ty && ty->floats;
}

unsigned wf_vk_elem_size(const struct wf_type *ty, enum wf_vk vk)
{
	switch (vk) {
	case WF_VK_RAW: return ty->stored ? ty->bytes : 1;
	case WF_VK_F16:
	case WF_VK_BF16: return 2;
	default: return 4;
	}
}

int wf_type_from_gguf(uint32_t gguf_type)
{
	if (gguf_type >= WF_GGML_TYPE_COUNT || wf_types[gguf_type].name == NULL)
		return -1;
	return (int)gguf_type;
}

static int name_is(int id, const char *s, size_t len)
{
	const char *name = wf_types[id].name;

	/* s comes from a JSON header: not NUL-terminated, may hold NULs. */
	return name != NULL && strlen(name) == len && memcmp(name, s, len) == 0;
}

int wf_type_from_st(const char *s, size_t len)
{
	if (s == NULL)
		return -1;
	for (size_t i = 0; i < sizeof st_shared_ids / sizeof st_shared_ids[0]; i++)
		if (name_is(st_shared_ids[i], s, len))
			return st_shared_ids[i];
	for (int id = WF_T_ST_FIRST; id < WF_T_HFQ_FIRST; id++)
		if (name_is(id, s, len))
			return id;
	return -1;
}

/* -1: not decided yet; 0: scalar; 1: SIMD.  Every thread computes the same
 * answer, so a race on the first use is harmless. */
static int simd_state = -1;

static int simd_allowed(int enable)
{
#ifdef WF_HAVE_X86_SIMD
	return enable && wf_cpu_has_simd();
#else
	(void)enable;
	return 0;
#endif
}

int wf_simd_active(void)
{
	int s = __atomic_load_n(&simd_state, __ATOMIC_RELAXED);
	if (s < 0) {
		const char *e = getenv("WEIGHTFS_NO_SIMD");
		s = simd_allowed(!(e && *e && strcmp(e, "0") != 0));
		__atomic_store_n(&simd_state, s, __ATOMIC_RELAXED);
	}
	return s;
}

int wf_simd_set(int enable)
{
	int s = simd_allowed(enable);
	__atomic_store_n(&simd_state, s, __ATOMIC_RELAXED);
	return s;
}

wf_decode_fn wf_type_decoder(const struct wf_type *ty)
{
	if (ty->decode_simd && wf_simd_active())
		return ty->decode_simd;
	return ty->decode;
}

wf_quant_fn wf_type_quantizer(const struct wf_type *ty)
{
	if (ty->quantize_simd && wf_simd_active())
		return ty->quantize_simd;
	return ty->quantize;
}

enum wf_err wf_quantize_rows(int type, const float *src, size_t nrows, size_t n_per_row,
			     void *dst, size_t dst_len, size_t *written, char *err)
{
	const struct wf_type *ty = wf_type_get(type);
	uint64_t n, bytes;

	if (ty == NULL || ty->quantize == NULL)
		return wf_fail(err, WF_ERR_UNSUP, "no encoder for type %d (%s)", type,
			       ty ? ty->name : "unknown");
	if (n_per_row % ty->blck != 0)
		return wf_fail(err, WF_ERR_UNSUP, "%s: a row of %zu values is not a whole number of %u-value blocks",
			       ty->name, n_per_row, (unsigned)ty->blck);
	if (!wf_mul_ok(nrows, n_per_row, &n) || !wf_mul_ok(n / ty->blck, ty->bytes, &bytes) ||
	    n > SIZE_MAX / sizeof(float))
		return wf_fail(err, WF_ERR_RANGE, "%s: %zu x %zu values overflow", ty->name, nrows, n_per_row);
	if (bytes > dst_len)
		return wf_fail(err, WF_ERR_RANGE, "%s: %llu bytes do not fit in %zu", ty->name,
			       (unsigned long long)bytes, dst_len);
	if (n > 0)
		wf_type_quantizer(ty)(src, dst, (size_t)(n / ty->blck));
	*written = (size_t)bytes;
	return WF_OK;
}

/* Where a block keeps its half-float scales (ggml-common.h): d, and the
 * second one (dmin or m) or -1. */
static const struct {
	int type;
	int d, d2;
} scale_at[] = {
	{WF_T_Q4_0, WF_Q4_0_D, -1},     {WF_T_Q4_1, WF_Q4_1_D, WF_Q4_1_M},   {WF_T_Q5_0, WF_Q5_0_D, -1},
	{WF_T_Q5_1, WF_Q5_1_D, WF_Q5_1_M}, {WF_T_Q8_0, WF_Q8_0_D, -1},     {WF_T_Q2_K, WF_Q2_K_D, WF_Q2_K_DMIN},
	{WF_T_Q3_K, WF_Q3_K_D, -1},     {WF_T_Q4_K, WF_Q4_K_D, WF_Q4_K_DMIN}, {WF_T_Q5_K, WF_Q5_K_D, WF_Q5_K_DMIN},
	{WF_T_Q6_K, WF_Q6_K_D, -1},     {WF_T_IQ4_NL, WF_IQ4_NL_D, -1},     {WF_T_IQ4_XS, WF_IQ4_XS_D, -1},
};

static bool f16_finite(const uint8_t *p)
{
	return (wf_le16(p) & 0x7C00) != 0x7C00;
}

bool wf_blocks_valid(int type, const uint8_t *data, size_t nbytes)
{
	if (type == WF_T_F32) {
		for (size_t i = 0; i + 4 <= nbytes; i += 4)
			if ((wf_le32(data + i) & 0x7F800000u) == 0x7F800000u)
				return false;
		return true;
	}
	if (type == WF_T_F16 || type == WF_T_BF16) {
		uint16_t e = type == WF_T_F16 ? 0x7C00 : 0x7F80;
		for (size_t i = 0; i + 2 <= nbytes; i += 2)
			if ((wf_le16(data + i) & e) == e)
				return false;
		return true;
	}
	const struct wf_type *ty = wf_type_get(type);
	for (size_t k = 0; ty && k < WF_ARRAY_LEN(scale_at); k++) {
		if (scale_at[k].type != type)
			continue;
		for (size_t b = 0; b + ty->bytes <= nbytes; b += ty->bytes)
			if (!f16_finite(data + b + scale_at[k].d) || (scale_at[k].d2 >= 0 && !f16_finite(data + b + scale_at[k].d2)))
				return false;
	}
	return true;
}
