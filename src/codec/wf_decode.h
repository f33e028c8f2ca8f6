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
void wf_decode_q4_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q5_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q6_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_q8_k_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq2_xxs_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_nl_avx2(const uint8_t *src, float *dst, size_t nblocks);
void wf_decode_iq4_xs_avx2(const uint8_t *src, float *dst, size_t nblocks);
#endif

#endif
