/* wf_quant.h - encoders: float32 to ggml blocks, byte-identical with
 * ggml's ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row,
 * imatrix = NULL) of ggml 0.21.0 (llama.cpp commit
 * 3f545beccee69d9975f466ec7e45fd9aacd8ba90, as in
 * @node-llama-cpp/linux-x64@3.21.1's libggml-base.so), built for x86-64
 * without FMA.
 *
 * Each encoder has the wf_quant_fn signature (wf_types.h) and is the
 * `quantize` column of the type table: nblocks consecutive blocks of blck
 * float32 values in, nblocks * bytes bytes out (no alignment assumed for
 * dst).  Every block is encoded from its own values alone, so rows and
 * chunking do not change the bytes: nrows x n_per_row values are just
 * nrows * n_per_row / blck blocks.
 *
 * Which ggml function each one reproduces, with imatrix = NULL:
 *   Q4_0 Q4_1 Q5_0 Q5_1 Q8_0  quantize_row_<t>_ref
 *   Q2_K Q3_K Q4_K Q5_K Q6_K  quantize_row_<t>_ref
 *   IQ4_NL IQ4_XS             quantize_row_iq4_nl_impl (ntry = 7, weights x*x)
 *   F32 F16 BF16              memcpy, ggml_fp32_to_fp16_row, ggml_fp32_to_bf16_row_ref
 * The files are built with -ffp-contract=off: ggml's results depend on
 * each float operation rounding on its own.
 *
 * Callers use the type table (wf_types.h), not these names: a row's
 * `quantize` (scalar, the reference) and `quantize_simd` (AVX2 twin or
 * NULL), wf_type_quantizer(ty) to pick one, wf_quantize_rows() for a
 * checked nrows x n_per_row call.  Each encoder is pure (no state, any
 * thread); its stack use is a few KiB.
 */
#ifndef WF_QUANT_H
#define WF_QUANT_H

#include <stddef.h>
#include <stdint.h>

#include "codec/wf_decode.h" /* WF_HAVE_X86_SIMD */

/* ggml's fp32 -> fp16 (ggml_compute_fp32_to_fp16): round to nearest even,
 * overflow to infinity, every NaN to 0x7E00 with its sign. */
uint16_t wf_quant_f16(float f);

void wf_quant_f32(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_f16_n(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_bf16(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q4_0(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q4_1(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q5_0(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q5_1(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q8_0(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q2_k(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q3_k(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q4_k(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q5_k(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q6_k(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_iq4_nl(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_iq4_xs(const float *src, uint8_t *dst, size_t nblocks);

/* AVX2 twins (same bytes; wf_quant_x86.c), for CPUs wf_cpu_has_simd() accepts. */
#ifdef WF_HAVE_X86_SIMD
void wf_quant_q2_k_avx2(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q4_k_avx2(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q5_k_avx2(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_q6_k_avx2(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_iq4_nl_avx2(const float *src, uint8_t *dst, size_t nblocks);
void wf_quant_iq4_xs_avx2(const float *src, uint8_t *dst, size_t nblocks);
#endif

#endif
