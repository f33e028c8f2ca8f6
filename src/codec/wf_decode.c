/* wf_decode.c - block decoders: model bytes to float32.
 *
 * Bit-exactness with ggml (dequantize_row_<type> in ggml/src/ggml-quants.c,
 * ggml 0.21.0; see wf_decode.h):
 * every step is a float32 operation in the order ggml evaluates it; products
 * of a scale and a small integer are exact in float32, so at most the last
 * multiply or the final "- min" rounds.  Nothing here may be built with
 * -ffast-math: flushing subnormals breaks MXFP4 (e = 0, 1) and tiny scales,
 * and the sign of zero must survive (0 * -d = -0, Q1_0 gives -d for d = +0).
 * ggml applies i-quant sign bits by multiplying by +-1.0f; GCC at -O2
 * compiles that into a sign flip (xorps), so a NaN scale's sign flips too.
 * We negate explicitly: the same bits at every optimization level, and the
 * same as the SIMD decoders (wf_decode_x86.c).  The two only differ for NaN.
 *
 * Input has no alignment guarantee (safetensors data is not aligned, GGUF
 * blocks have odd sizes), so multi-byte fields are assembled from bytes in
 * little-endian order; that also keeps the code independent of host order.
 */
#include "codec/wf_decode.h"

#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_iq_tables.h"

static inline float f32_from_bits(uint32_t u)
{
	float f;

	memcpy(&f, &u, sizeof f);
	return f;
}

static inline uint32_t f32_bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

/* A sign bit applied to x: a set bit negates (flips the sign, NaN too). */
static inline float with_sign(float x, unsigned bit)
{
	return bit ? -x : x;
}

float wf_f16_to_f32(uint16_t h)
{
	uint32_t sign = (uint32_t)(h & 0x8000) << 16;
	unsigned exp = (h >> 10) & 0x1F;
	uint32_t man = h & 0x3FF;

	if (exp == 0x1F) {
		/* ggml's conversion passes NaNs through a float multiply, which
		 * sets the quiet bit: 0x7C01 becomes 0x7FC02000, not 0x7F802000. */
		if (man)
			return f32_from_bits(sign | 0x7FC00000 | man << 13);
		return f32_from_bits(sign | 0x7F800000);
	}
	if (exp == 0) {
		/* Subnormal (or zero): man * 2^-24 is exact and normal in f32. */
		return f32_from_bits(sign | f32_bits((float)man * 0x1p-24f));
	}
	return f32_from_bits(sign | (exp + 112) << 23 | man << 13);
}

float wf_bf16_to_f32(uint16_t h)
{
	/* bfloat16 is the top half of a binary32; NaN payloads pass as is. */
	return f32_from_bits((uint32_t)h << 16);
}

void wf_decode_f16(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++)
		dst[i] = wf_f16_to_f32(wf_le16(src + 2 * i));
}

void wf_decode_bf16(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++)
		dst[i] = wf_bf16_to_f32(wf_le16(src + 2 * i));
}

void wf_decode_f64(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++) {
		uint64_t u = wf_le64(src + 8 * i);
		double d;

		memcpy(&d, &u, sizeof d);
		dst[i] = (float)d;  /* round to nearest, as numpy/torch do */
	}
}

/* --- legacy 32-element quants ------------------------------------------ */

void wf_decode_q4_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q4_0_BYTES, dst += WF_Q4_0_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q4_0_D));
		const uint8_t *qs = src + WF_Q4_0_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = (float)((qs[j] & 0xF) - 8) * d;
			dst[j + 16] = (float)((qs[j] >> 4) - 8) * d;
		}
	}
}

void wf_decode_q4_1(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q4_1_BYTES, dst += WF_Q4_1_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q4_1_D));
		const float m = wf_f16_to_f32(wf_le16(src + WF_Q4_1_M));
		const uint8_t *qs = src + WF_Q4_1_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = (float)(qs[j] & 0xF) * d + m;
			dst[j + 16] = (float)(qs[j] >> 4) * d + m;
		}
	}
}

/* The 5th bit of element j lives in bit j of qh (elements 16..31 too). */
static inline int q5_lo(const uint8_t *qs, uint32_t qh, int j)
{
	return (qs[j] & 0xF) | (int)((qh >> j) & 1) << 4;
}

static inline int q5_hi(const uint8_t *qs, uint32_t qh, int j)
{
	return (qs[j] >> 4) | (int)((qh >> (j + 16)) & 1) << 4;
}

void wf_decode_q5_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q5_0_BYTES, dst += WF_Q5_0_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q5_0_D));
		const uint32_t qh = wf_le32(src + WF_Q5_0_QH);
		const uint8_t *qs = src + WF_Q5_0_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = (float)(q5_lo(qs, qh, j) - 16) * d;
			dst[j + 16] = (float)(q5_hi(qs, qh, j) - 16) * d;
		}
	}
}

void wf_decode_q5_1(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q5_1_BYTES, dst += WF_Q5_1_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q5_1_D));
		const float m = wf_f16_to_f32(wf_le16(src + WF_Q5_1_M));
		const uint32_t qh = wf_le32(src + WF_Q5_1_QH);
		const uint8_t *qs = src + WF_Q5_1_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = (float)q5_lo(qs, qh, j) * d + m;
			dst[j + 16] = (float)q5_hi(qs, qh, j) * d + m;
		}
	}
}

void wf_decode_q8_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q8_0_BYTES, dst += WF_Q8_0_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q8_0_D));

		for (int j = 0; j < WF_Q8_0_BLCK; j++)
			dst[j] = (float)(int8_t)src[WF_Q8_0_QS + j] * d;
	}
}

/* ggml registers no to_float for Q8_1 (it is the activation side of the
 * dot products), but block_q8_1 (ggml-common.h) is Q8_0's d and qs with the
 * sum s = d * sum(qs) in between: each weight is qs[j] * d exactly as
 * dequantize_row_q8_0 computes it; s is redundant and not read. */
void wf_decode_q8_1(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q8_1_BYTES, dst += WF_Q8_1_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q8_1_D));

		for (int j = 0; j < WF_Q8_1_BLCK; j++)
			dst[j] = (float)(int8_t)src[WF_Q8_1_QS + j] * d;
	}
}

/* --- k-quants (256-element super-blocks) -------------------------------- */

void wf_decode_q2_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q2_K_BYTES, dst += WF_Q2_K_BLCK) {
		const uint8_t *scales = src + WF_Q2_K_SCALES, *qs = src + WF_Q2_K_QS;
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q2_K_D));
		const float dmin = wf_f16_to_f32(wf_le16(src + WF_Q2_K_DMIN));

		/* Halves n of 128, 2-bit planes j, 16-element runs h. */
		for (int n = 0; n < 2; n++)
			for (int j = 0; j < 4; j++)
				for (int h = 0; h < 2; h++) {
					const uint8_t sc = scales[8 * n + 2 * j + h];
					const float dl = d * (float)(sc & 0xF);
					const float ml = dmin * (float)(sc >> 4);
					const uint8_t *q = qs + 32 * n + 16 * h;
					float *y = dst + 128 * n + 32 * j + 16 * h;

					for (int l = 0; l < 16; l++)
						y[l] = dl * (float)((q[l] >> (2 * j)) & 3) - ml;
				}
	}
}

void wf_decode_q3_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q3_K_BYTES, dst += WF_Q3_K_BLCK) {
		const uint8_t *hmask = src + WF_Q3_K_HMASK, *qs = src + WF_Q3_K_QS;
		const uint8_t *s = src + WF_Q3_K_SCALES;
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q3_K_D));
		int sc[16];

		/* Sixteen 6-bit scales: low nibbles in s[0..7], high 2 bits
		 * packed in s[8..11], stored biased by 32. */
		for (int i = 0; i < 16; i++) {
			int lo4 = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
			int hi2 = (s[8 + i % 4] >> (2 * (i / 4))) & 3;

			sc[i] = (lo4 | hi2 << 4) - 32;
		}
		for (int n = 0; n < 2; n++)
			for (int j = 0; j < 4; j++)
				for (int h = 0; h < 2; h++) {
					const float dl = d * (float)sc[8 * n + 2 * j + h];
					const uint8_t *q = qs + 32 * n + 16 * h;
					const uint8_t *hm = hmask + 16 * h;
					const unsigned bit = 1u << (4 * n + j);
					float *y = dst + 128 * n + 32 * j + 16 * h;

					/* A clear high bit means "subtract 4". */
					for (int l = 0; l < 16; l++)
						y[l] = dl * (float)(((q[l] >> (2 * j)) & 3) -
								    ((hm[l] & bit) ? 0 : 4));
				}
	}
}


void wf_decode_q4_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q4_K_BYTES, dst += WF_Q4_K_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q4_K_D));
		const float dmin = wf_f16_to_f32(wf_le16(src + WF_Q4_K_DMIN));
		const uint8_t *scales = src + WF_Q4_K_SCALES, *qs = src + WF_Q4_K_QS;

		for (int c = 0; c < 4; c++) {
			int sc, mn;

			wf_scale_min_k4(2 * c, scales, &sc, &mn);
			const float d1 = d * (float)sc, m1 = dmin * (float)mn;
			wf_scale_min_k4(2 * c + 1, scales, &sc, &mn);
			const float d2 = d * (float)sc, m2 = dmin * (float)mn;
			const uint8_t *q = qs + 32 * c;
			float *y = dst + 64 * c;

			for (int l = 0; l < 32; l++) {
				y[l] = d1 * (float)(q[l] & 0xF) - m1;
				y[l + 32] = d2 * (float)(q[l] >> 4) - m2;
			}
		}
	}
}

void wf_decode_q5_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q5_K_BYTES, dst += WF_Q5_K_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q5_K_D));
		const float dmin = wf_f16_to_f32(wf_le16(src + WF_Q5_K_DMIN));
		const uint8_t *scales = src + WF_Q5_K_SCALES, *qh = src + WF_Q5_K_QH;
		const uint8_t *qs = src + WF_Q5_K_QS;

		for (int c = 0; c < 4; c++) {
			int sc, mn;

			wf_scale_min_k4(2 * c, scales, &sc, &mn);
			const float d1 = d * (float)sc, m1 = dmin * (float)mn;
			wf_scale_min_k4(2 * c + 1, scales, &sc, &mn);
			const float d2 = d * (float)sc, m2 = dmin * (float)mn;
			const unsigned u1 = 1u << (2 * c), u2 = 2u << (2 * c);
			const uint8_t *q = qs + 32 * c;
			float *y = dst + 64 * c;

			for (int l = 0; l < 32; l++) {
				y[l] = d1 * (float)((q[l] & 0xF) + ((qh[l] & u1) ? 16 : 0)) - m1;
				y[l + 32] = d2 * (float)((q[l] >> 4) + ((qh[l] & u2) ? 16 : 0)) - m2;
			}
		}
	}
}

void wf_decode_q6_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q6_K_BYTES, dst += WF_Q6_K_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q6_K_D));

		for (int n = 0; n < 2; n++) {
			const uint8_t *ql = src + WF_Q6_K_QL + 64 * n;
			const uint8_t *qh = src + WF_Q6_K_QH + 32 * n;
			const int8_t *sc = (const int8_t *)(src + WF_Q6_K_SCALES + 8 * n);
			float *y = dst + 128 * n;

			for (int l = 0; l < 32; l++) {
				const int is = l / 16;
				const int q1 = ((ql[l] & 0xF) | ((qh[l] >> 0) & 3) << 4) - 32;
				const int q2 = ((ql[l + 32] & 0xF) | ((qh[l] >> 2) & 3) << 4) - 32;
				const int q3 = ((ql[l] >> 4) | ((qh[l] >> 4) & 3) << 4) - 32;
				const int q4 = ((ql[l + 32] >> 4) | ((qh[l] >> 6) & 3) << 4) - 32;

				/* ggml's association: (d * sc) * q. */
				y[l] = d * (float)sc[is + 0] * (float)q1;
				y[l + 32] = d * (float)sc[is + 2] * (float)q2;
				y[l + 64] = d * (float)sc[is + 4] * (float)q3;
				y[l + 96] = d * (float)sc[is + 6] * (float)q4;
			}
		}
	}
}

void wf_decode_q8_k(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q8_K_BYTES, dst += WF_Q8_K_BLCK) {
		/* d is a full float32 here; bsums are not needed. */
		const float d = f32_from_bits(wf_le32(src + WF_Q8_K_D));

		for (int j = 0; j < WF_Q8_K_BLCK; j++)
			dst[j] = d * (float)(int8_t)src[WF_Q8_K_QS + j];
	}
}

/* --- i-quants ------------------------------------------------------------ */

/* Eight grid values times db, with sign bit j of `signs` flipping value j. */
static inline void put8(float *y, float db, const uint8_t *g, unsigned signs)
{
	for (int j = 0; j < 8; j++)
		y[j] = with_sign(db * (float)g[j], signs & (1u << j));
}

void wf_decode_iq2_xxs(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_XXS_BYTES, dst += WF_IQ2_XXS_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ2_XXS_D));

		for (int ib = 0; ib < 8; ib++) {
			const uint8_t *p = src + WF_IQ2_XXS_QS + 8 * ib;
			const uint32_t a1 = wf_le32(p + 4);
			const float db = d * (0.5f + (float)(a1 >> 28)) * 0.25f;

			/* a0's bytes index the grid; a1 holds 4 x 7 sign bits. */
			for (int l = 0; l < 4; l++)
				put8(dst + 32 * ib + 8 * l, db, wf_iq2xxs_grid[p[l]],
				     wf_ksigns_iq2xs[(a1 >> (7 * l)) & 127]);
		}
	}
}

void wf_decode_iq2_xs(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_XS_BYTES, dst += WF_IQ2_XS_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ2_XS_D));
		const uint8_t *scales = src + WF_IQ2_XS_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const float db[2] = {
				d * (0.5f + (float)(scales[ib] & 0xF)) * 0.25f,
				d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f,
			};

			for (int l = 0; l < 4; l++) {
				const uint16_t v = wf_le16(src + WF_IQ2_XS_QS + 2 * (4 * ib + l));

				put8(dst + 32 * ib + 8 * l, db[l / 2], wf_iq2xs_grid[v & 511],
				     wf_ksigns_iq2xs[v >> 9]);
			}
		}
	}
}

void wf_decode_iq2_s(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_S_BYTES, dst += WF_IQ2_S_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ2_S_D));
		const uint8_t *qs = src + WF_IQ2_S_QS, *signs = src + WF_IQ2_S_SIGNS;
		const uint8_t *qh = src + WF_IQ2_S_QH, *scales = src + WF_IQ2_S_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const float db[2] = {
				d * (0.5f + (float)(scales[ib] & 0xF)) * 0.25f,
				d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f,
			};

			for (int l = 0; l < 4; l++) {
				const unsigned idx = qs[4 * ib + l] | ((qh[ib] >> (2 * l)) & 3u) << 8;

				/* Sign bytes are plain masks here, no parity table. */
				put8(dst + 32 * ib + 8 * l, db[l / 2], wf_iq2s_grid[idx],
				     signs[4 * ib + l]);
			}
		}
	}
}

/* Two 4-value grid rows times db; sign bits 0..3 go to g1, 4..7 to g2. */
static inline void put4x2(float *y, float db, const uint8_t *g1, const uint8_t *g2,
			  unsigned signs)
{
	for (int j = 0; j < 4; j++) {
		y[j] = with_sign(db * (float)g1[j], signs & (1u << j));
		y[j + 4] = with_sign(db * (float)g2[j], signs & (1u << (j + 4)));
	}
}

void wf_decode_iq3_xxs(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ3_XXS_BYTES, dst += WF_IQ3_XXS_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ3_XXS_D));
		const uint8_t *qs = src + WF_IQ3_XXS_QS;

		for (int ib = 0; ib < 8; ib++) {
			const uint32_t a = wf_le32(src + WF_IQ3_XXS_SAS + 4 * ib);
			const float db = d * (0.5f + (float)(a >> 28)) * 0.5f;

			for (int l = 0; l < 4; l++)
				put4x2(dst + 32 * ib + 8 * l, db,
				       wf_iq3xxs_grid[qs[8 * ib + 2 * l]],
				       wf_iq3xxs_grid[qs[8 * ib + 2 * l + 1]],
				       wf_ksigns_iq2xs[(a >> (7 * l)) & 127]);
		}
	}
}

void wf_decode_iq3_s(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ3_S_BYTES, dst += WF_IQ3_S_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ3_S_D));
		const uint8_t *qs = src + WF_IQ3_S_QS, *qh = src + WF_IQ3_S_QH;
		const uint8_t *signs = src + WF_IQ3_S_SIGNS, *scales = src + WF_IQ3_S_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const int s = (scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
			const float db = d * (float)(1 + 2 * s);

			for (int l = 0; l < 4; l++) {
				const unsigned i1 = qs[8 * ib + 2 * l] |
						    ((qh[ib] >> (2 * l)) & 1u) << 8;
				const unsigned i2 = qs[8 * ib + 2 * l + 1] |
						    ((qh[ib] >> (2 * l + 1)) & 1u) << 8;

				put4x2(dst + 32 * ib + 8 * l, db, wf_iq3s_grid[i1],
				       wf_iq3s_grid[i2], signs[4 * ib + l]);
			}
		}
	}
}

#define IQ1_DELTA 0.125f

/* dl * (g[j] + delta) for one 8-value iq1s grid row. */
static inline void put8_iq1(float *y, float dl, const int8_t *g, float delta)
{
	for (int j = 0; j < 8; j++)
		y[j] = dl * ((float)g[j] + delta);
}

void wf_decode_iq1_s(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ1_S_BYTES, dst += WF_IQ1_S_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ1_S_D));
		const uint8_t *qs = src + WF_IQ1_S_QS;

		for (int ib = 0; ib < 8; ib++) {
			const uint16_t h = wf_le16(src + WF_IQ1_S_QH + 2 * ib);
			const float dl = d * (float)(2 * ((h >> 12) & 7) + 1);
			const float delta = (h & 0x8000) ? -IQ1_DELTA : IQ1_DELTA;

			for (int l = 0; l < 4; l++) {
				const unsigned idx = qs[4 * ib + l] | ((h >> (3 * l)) & 7u) << 8;

				put8_iq1(dst + 32 * ib + 8 * l, dl, wf_iq1s_grid[idx], delta);
			}
		}
	}
}

void wf_decode_iq1_m(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ1_M_BYTES, dst += WF_IQ1_M_BLCK) {
		const uint8_t *qs = src + WF_IQ1_M_QS, *qh = src + WF_IQ1_M_QH;
		uint16_t sc[4];

		for (int k = 0; k < 4; k++)
			sc[k] = wf_le16(src + WF_IQ1_M_SCALES + 2 * k);
		/* No d field: its 16 bits are the top nibbles of the 4 scale words. */
		const uint16_t dbits = (uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
						  ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000));
		const float d = wf_f16_to_f32(dbits);

		for (int ib = 0; ib < 8; ib++) {
			const unsigned w = sc[ib / 2], sh = 6u * (unsigned)(ib % 2);
			const float dl1 = d * (float)(2 * ((w >> sh) & 7) + 1);
			const float dl2 = d * (float)(2 * ((w >> (sh + 3)) & 7) + 1);
			const unsigned h0 = qh[2 * ib], h1 = qh[2 * ib + 1];
			const unsigned idx[4] = {
				qs[4 * ib + 0] | ((h0 << 8) & 0x700),
				qs[4 * ib + 1] | ((h0 << 4) & 0x700),
				qs[4 * ib + 2] | ((h1 << 8) & 0x700),
				qs[4 * ib + 3] | ((h1 << 4) & 0x700),
			};
			const float delta[4] = {
				(h0 & 0x08) ? -IQ1_DELTA : IQ1_DELTA,
				(h0 & 0x80) ? -IQ1_DELTA : IQ1_DELTA,
				(h1 & 0x08) ? -IQ1_DELTA : IQ1_DELTA,
				(h1 & 0x80) ? -IQ1_DELTA : IQ1_DELTA,
			};

			for (int l = 0; l < 4; l++)
				put8_iq1(dst + 32 * ib + 8 * l, l < 2 ? dl1 : dl2,
					 wf_iq1s_grid[idx[l]], delta[l]);
		}
	}
}

void wf_decode_iq4_nl(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ4_NL_BYTES, dst += WF_IQ4_NL_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ4_NL_D));
		const uint8_t *qs = src + WF_IQ4_NL_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = d * (float)wf_kvalues_iq4nl[qs[j] & 0xF];
			dst[j + 16] = d * (float)wf_kvalues_iq4nl[qs[j] >> 4];
		}
	}
}

void wf_decode_iq4_xs(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ4_XS_BYTES, dst += WF_IQ4_XS_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_IQ4_XS_D));
		const uint16_t scales_h = wf_le16(src + WF_IQ4_XS_SCALES_H);
		const uint8_t *scales_l = src + WF_IQ4_XS_SCALES_L, *qs = src + WF_IQ4_XS_QS;

		for (int ib = 0; ib < 8; ib++) {
			const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
				       ((scales_h >> (2 * ib)) & 3) << 4;
			const float dl = d * (float)(ls - 32);
			const uint8_t *q = qs + 16 * ib;
			float *y = dst + 32 * ib;

			for (int j = 0; j < 16; j++) {
				y[j] = dl * (float)wf_kvalues_iq4nl[q[j] & 0xF];
				y[j + 16] = dl * (float)wf_kvalues_iq4nl[q[j] >> 4];
			}
		}
	}
}

/* --- ternary, FP4, 1- and 2-bit ---------------------------------------- */

/* Base-3 digit n of a TQ1_0 byte: the byte is a fixed-point fraction, so
 * multiplying by 3^n (wrapping at 8 bits) brings digit n to the top and
 * (q * 3) >> 8 reads it off. */
static inline float tq1_digit(uint8_t byte, int n, float d)
{
	static const uint8_t pow3[5] = {1, 3, 9, 27, 81};
	const uint8_t q = (uint8_t)(byte * pow3[n]);
	const int t = (q * 3) >> 8;

	return (float)(t - 1) * d;
}

void wf_decode_tq1_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_TQ1_0_BYTES, dst += WF_TQ1_0_BLCK) {
		const uint8_t *qs = src + WF_TQ1_0_QS, *qh = src + WF_TQ1_0_QH;
		const float d = wf_f16_to_f32(wf_le16(src + WF_TQ1_0_D));

		for (int n = 0; n < 5; n++)
			for (int m = 0; m < 32; m++)
				dst[32 * n + m] = tq1_digit(qs[m], n, d);
		for (int n = 0; n < 5; n++)
			for (int m = 0; m < 16; m++)
				dst[160 + 16 * n + m] = tq1_digit(qs[32 + m], n, d);
		for (int n = 0; n < 4; n++)
			for (int j = 0; j < 4; j++)
				dst[240 + 4 * n + j] = tq1_digit(qh[j], n, d);
	}
}

void wf_decode_tq2_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_TQ2_0_BYTES, dst += WF_TQ2_0_BLCK) {
		const uint8_t *qs = src + WF_TQ2_0_QS;
		const float d = wf_f16_to_f32(wf_le16(src + WF_TQ2_0_D));

		for (int j0 = 0; j0 < WF_TQ2_0_QS_LEN; j0 += 32)
			for (int l = 0; l < 4; l++)
				for (int m = 0; m < 32; m++)
					dst[4 * j0 + 32 * l + m] =
						(float)(((qs[j0 + m] >> (2 * l)) & 3) - 1) * d;
	}
}

void wf_decode_mxfp4(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_MXFP4_BYTES, dst += WF_MXFP4_BLCK) {
		const float d = wf_e8m0_half(src[WF_MXFP4_E]);
		const uint8_t *qs = src + WF_MXFP4_QS;

		for (int j = 0; j < 16; j++) {
			dst[j] = (float)wf_kvalues_fp4[qs[j] & 0xF] * d;
			dst[j + 16] = (float)wf_kvalues_fp4[qs[j] >> 4] * d;
		}
	}
}

void wf_decode_nvfp4(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_NVFP4_BYTES, dst += WF_NVFP4_BLCK) {
		const uint8_t *qs = src + WF_NVFP4_QS;

		for (int s = 0; s < WF_NVFP4_D_LEN; s++) {
			const float ds = wf_ue4m3_half(src[WF_NVFP4_D + s]);
			float *y = dst + 16 * s;

			for (int j = 0; j < 8; j++) {
				y[j] = (float)wf_kvalues_fp4[qs[8 * s + j] & 0xF] * ds;
				y[j + 8] = (float)wf_kvalues_fp4[qs[8 * s + j] >> 4] * ds;
			}
		}
	}
}

void wf_decode_q1_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q1_0_BYTES, dst += WF_Q1_0_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q1_0_D));
		const uint8_t *qs = src + WF_Q1_0_QS;

		/* A clear bit is -d by negation, so d = +0 gives -0. */
		for (int j = 0; j < WF_Q1_0_BLCK; j++)
			dst[j] = ((qs[j / 8] >> (j % 8)) & 1) ? d : -d;
	}
}

void wf_decode_q2_0(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q2_0_BYTES, dst += WF_Q2_0_BLCK) {
		const float d = wf_f16_to_f32(wf_le16(src + WF_Q2_0_D));
		const uint8_t *qs = src + WF_Q2_0_QS;

		for (int j = 0; j < WF_Q2_0_BLCK; j++)
			dst[j] = (float)(((qs[j / 4] >> (2 * (j % 4))) & 3) - 1) * d;
	}
}

/* --- safetensors 8-bit floats ------------------------------------------
 * No oracle file contains a NaN encoding, so NaN bit patterns follow
 * PyTorch's conversions (safetensors dtypes are torch dtypes): E4M3 keeps
 * sign and mantissa under an all-ones exponent, E5M2 goes through the f16
 * path, FNUZ and E8M0 NaNs come out as 0x7F800001. */

#define TORCH_F8_NAN 0x7F800001u

void wf_decode_f8_e4m3(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++) {
		const uint8_t x = src[i];
		const uint32_t sign = (uint32_t)(x & 0x80) << 24;
		const unsigned exp = (x >> 3) & 0xF, man = x & 7;

		if ((x & 0x7F) == 0x7F)
			/* S.1111.111 is the only NaN: e4m3fn has no infinities,
			 * so S.1111.000..110 are ordinary numbers up to 448. */
			dst[i] = f32_from_bits(sign | 0x7F800000 | man << 20);
		else if (exp == 0)
			dst[i] = f32_from_bits(sign | f32_bits((float)man * 0x1p-9f));
		else
			dst[i] = f32_from_bits(sign | (exp + 120) << 23 | man << 20);
	}
}

void wf_decode_f8_e5m2(const uint8_t *src, float *dst, size_t nblocks)
{
	/* E5M2 is exactly the top byte of an IEEE binary16. */
	for (size_t i = 0; i < nblocks; i++)
		dst[i] = wf_f16_to_f32((uint16_t)(src[i] << 8));
}

void wf_decode_f8_e8m0(const uint8_t *src, float *dst, size_t nblocks)
{
	/* 2^(x-127): x is the f32 exponent field itself, except x = 0 whose
	 * 2^-127 is the f32 subnormal 0x00400000.  ggml's own e8m0 helper
	 * turns 0xFF into +inf; the OCP format and torch say NaN. */
	for (size_t i = 0; i < nblocks; i++) {
		const uint8_t x = src[i];

		if (x == 0xFF)
			dst[i] = f32_from_bits(TORCH_F8_NAN);
		else if (x == 0)
			dst[i] = f32_from_bits(0x00400000);
		else
			dst[i] = f32_from_bits((uint32_t)x << 23);
	}
}

/* FNUZ: no infinities, no -0; 0x80 (what would be -0) is the one NaN. */
static inline float f8_fnuz(uint8_t x, unsigned mbits, int bias)
{
	const uint32_t sign = (uint32_t)(x & 0x80) << 24;
	const unsigned exp = (x & 0x7F) >> mbits, man = x & ((1u << mbits) - 1);

	if (x == 0x80)
		return f32_from_bits(TORCH_F8_NAN);
	if (exp == 0) {
		/* man * 2^(1 - bias - mbits), exact */
		float v = (float)man * f32_from_bits((uint32_t)(127 + 1 - bias - (int)mbits) << 23);

		return f32_from_bits(sign | f32_bits(v));
	}
	return f32_from_bits(sign | (uint32_t)((int)exp - bias + 127) << 23 | man << (23 - mbits));
}

void wf_decode_f8_e4m3fnuz(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++)
		dst[i] = f8_fnuz(src[i], 3, 8);
}

void wf_decode_f8_e5m2fnuz(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++)
		dst[i] = f8_fnuz(src[i], 2, 16);
}

/* --- safetensors F4 ----------------------------------------------------
 * safetensors' F4 is torch's float4_e2m1fn_x2 (its Python binding maps one
 * to the other): two E2M1 values per byte, element 2k in bits 3..0 and
 * element 2k+1 in bits 7..4 ("val1 : val0 / 7654 : 3210" in pytorch
 * torch/headeronly/util/Float4_e2m1fn_x2.h).  E2M1 (OCP MX v1.0, 5.3.3):
 * sign, 2 exponent bits (bias 1), 1 mantissa bit; exponent 0 is
 * subnormal (0 or 0.5); no infinities or NaN, and code 8 is -0. */
static const uint32_t e2m1_bits[16] = {
	0x00000000, 0x3F000000, 0x3F800000, 0x3FC00000, /* 0, 0.5, 1, 1.5 */
	0x40000000, 0x40400000, 0x40800000, 0x40C00000, /* 2, 3, 4, 6 */
	0x80000000, 0xBF000000, 0xBF800000, 0xBFC00000, /* -0, -0.5, -1, -1.5 */
	0xC0000000, 0xC0400000, 0xC0800000, 0xC0C00000, /* -2, -3, -4, -6 */
};

void wf_decode_f4(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++) {
		dst[2 * i] = f32_from_bits(e2m1_bits[src[i] & 0xF]);
		dst[2 * i + 1] = f32_from_bits(e2m1_bits[src[i] >> 4]);
	}
}
