/* wf_round.h - float32 to IEEE half and to bfloat16, rounding to
 * nearest-even, as numpy's astype(np.float16) and torch's
 * .to(torch.bfloat16) do: what -o dtype=f16 and bf16 show. */
#ifndef WF_ROUND_H
#define WF_ROUND_H

#include <stddef.h>
#include <stdint.h>

/* float32 to IEEE half and to bfloat16, rounding to nearest-even:
 * overflow gives infinity, subnormal results round correctly.  A NaN stays
 * a quiet NaN with its sign and the top bits of its payload (the bits that
 * fit), the quiet bit set: half 0x7E00 | sign | payload >> 13, bfloat16
 * (bits >> 16) | 0x0040. */
uint16_t wf_f32_to_f16(float f);
uint16_t wf_f32_to_bf16(float f);

/* The same over arrays (SIMD where the CPU has F16C/AVX2; bit-identical). */
void wf_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);
void wf_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);

/* Sets the quiet bit (0x0040) of every NaN among the n little-endian
 * bfloat16 values at bytes, as gguf-py's float32 -> bfloat16 rounding
 * does; other values are left as they are (SIMD where the CPU has AVX2;
 * bit-identical). */
void wf_bf16_quiet_n(void *bytes, size_t n);

#endif
