/* wf_decode.h - block decoders behind the type table (private to wf_types.c
 * and the tests).
 *
 * Each function has the wf_decode_fn signature from wf_types.h: it decodes
 * nblocks consecutive blocks at src (no alignment assumed, multi-byte fields
 * little-endian) into nblocks * blck float32 values at dst.  The ggml ones
 * are bit-exact with ggml's dequantize_row_<type> functions in
 * ggml/src/ggml-quants.c of ggml 0.21.0, whose sources are those of
 * llama.cpp commit 3f545beccee69d9975f466ec7e45fd9aacd8ba90; those functions
 * are the formulas.
 */
#ifndef WF_DECODE_H
#define WF_DECODE_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "base/wf_common.h"

/* 6-bit scale and min of sub-block j of a Q4_K/Q5_K block, packed in the
 * block's 12 scale bytes s (ggml's get_scale_min_k4). */
static inline void wf_scale_min_k4(int j, const uint8_t *s, int *sc, int *mn)
{
	if (j < 4) {
		*sc = s[j] & 63;
		*mn = s[j + 4] & 63;
	} else {
		*sc = (s[j + 4] & 0xF) | (s[j - 4] >> 6) << 4;
		*mn = (s[j + 4] >> 4) | (s[j] >> 6) << 4;
	}
}

/* The block scales of MXFP4 and NVFP4, halved to cancel ggml's doubled fp4
 * table; shared by the scalar and SIMD decoders so both read them alike. */
static inline float wf_bits_f32(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

/* ggml_e8m0_to_fp32_half: 2^(e-128) for every e, no NaN case.  e = 0, 1 are
 * f32 subnormals, which is why FTZ builds get MXFP4 wrong. */
static inline float wf_e8m0_half(uint8_t e)
{
	if (e < 2)
		return wf_bits_f32(UINT32_C(0x00200000) << e);
	return wf_bits_f32((uint32_t)(e - 1) << 23);
}

/* ggml_ue4m3_to_fp32 (NVFP4 sub-block scale), already halved.  Bit 7 is
 * ignored; only 0x7F is the "NaN" that maps to zero, so 0xFF is 240. */
static inline float wf_ue4m3_half(uint8_t x)
{
	unsigned exp = (x >> 3) & 0xF, man = x & 7;

	if (x == 0x00 || x == 0x7F)
		return 0.0f;
	if (exp == 0)
		return (float)man * 0x1p-10f;   /* man * 2^-9 * 0.5, exact */
	/* (1 + man/8) * 2^(exp-7) * 0.5: f32 exponent field exp - 8 + 127. */
	return wf_bits_f32((exp + 119) << 23 | man << 20);
}

/* Scalar conversions shared with the table's users. */
float wf_f16_to_f32(uint16_t h);  /* ggml's: signalling NaNs come out quiet */
float wf_bf16_to_f32(uint16_t h);

/* Plain element arrays (blck 1). */
void wf_decode_f16(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_bf16(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f64(const uint8_t *src, float *dst, size_t nblocks);

/* ggml legacy quants (32 elements). */
void wf_decode_q4_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q4_1(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_1(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_1(const uint8_t *src, float *dst, size_t nblocks); /* no ggml to_float: qs * d */

/* ggml k-quants (256 elements). */
void wf_decode_q2_k(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q3_k(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q4_k(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_k(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q6_k(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_k(const uint8_t *src, float *dst, size_t nblocks);

/* ggml i-quants. */
void wf_decode_iq2_xxs(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_xs(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_s(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq3_xxs(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq3_s(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq1_s(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq1_m(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_nl(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_xs(const uint8_t *src, float *dst, size_t nblocks);

/* ggml ternary, FP4 and 1/2-bit types. */
void wf_decode_tq1_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_tq2_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_mxfp4(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_nvfp4(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q1_0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q2_0(const uint8_t *src, float *dst, size_t nblocks);

/* safetensors 8-bit floats (blck 1). */
void wf_decode_f8_e4m3(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f8_e5m2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f8_e8m0(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f8_e4m3fnuz(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f8_e5m2fnuz(const uint8_t *src, float *dst, size_t nblocks);

/* safetensors F4 (torch float4_e2m1fn_x2): one byte (two elements) per block. */
void wf_decode_f4(const uint8_t *src, float *dst, size_t nblocks);

/* AVX2 + F16C twins of some decoders above (wf_decode_x86.c), bit-exact
 * with them; only wf_types.c picks them, and only when wf_cpu_has_simd(). */
#if defined(__x86_64__) && defined(__GNUC__)
#define WF_HAVE_X86_SIMD 1
int wf_cpu_has_simd(void);  /* the CPU has AVX2 and F16C */
void wf_decode_f16_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_bf16_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q4_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q4_1_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_1_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_1_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q4_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q6_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_xxs_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_nl_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_xs_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_f64_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q2_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q3_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_xs_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_s_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq3_xxs_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq3_s_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq1_s_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq1_m_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_tq1_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_tq2_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_mxfp4_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_nvfp4_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q1_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q2_0_avx2(const uint8_t *src, float *dst, size_t nblocks);
#endif

#endif
