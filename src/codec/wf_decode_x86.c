/* wf_decode_x86.c - AVX2 + F16C versions of the hottest block decoders.
 *
 * Each function here decodes exactly what its scalar twin in wf_decode.c
 * decodes, bit for bit: the same float32 operations in the same order, one
 * lane per element (an int -> float conversion, then the multiplies and
 * subtractions the scalar code does, in its association).  Nothing is fused:
 * the target is "avx2,f16c" without "fma", and the Makefile builds this file
 * with -ffp-contract=off, so a*b - c stays two roundings as in ggml.  f16
 * scales go through F16C's vcvtph2ps, which is exact for every finite
 * input (subnormals included) and quiets signalling NaNs the same way ggml's
 * conversion does; tests/unit/check_simd.c holds both paths to that.
 *
 * The file compiles for baseline x86-64: only the functions carry the
 * target attribute, and wf_types.c calls them only after wf_cpu_has_simd()
 * said yes.  On other architectures it is empty.
 */
#include "codec/wf_decode.h"

#ifdef WF_HAVE_X86_SIMD

#include <cpuid.h>
#include <immintrin.h>
#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_iq_tables.h"

#define TGT __attribute__((target("avx2,f16c")))

int wf_cpu_has_simd(void)
{
	unsigned a, b, c, d;

	/* avx2 through the compiler (it also checks the OS saves YMM state);
	 * F16C from CPUID leaf 1, as clang's builtin does not know "f16c". */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx2") || !__get_cpuid(1, &a, &b, &c, &d))
		return 0;
	return (c & bit_F16C) != 0;
}

static inline TGT float h2f(uint16_t h)
{
	return _mm_cvtss_f32(_mm_cvtph_ps(_mm_cvtsi32_si128(h)));
}

/* Eight signed bytes (the low 8 of v) as eight floats. */
static inline TGT __m256 i8x8_ps(__m128i v)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepi8_epi32(v));
}

/* Sixteen signed bytes times d, stored to y[0..15]. */
static inline TGT void st16_i8_mul(float *y, __m128i v, __m256 d)
{
	_mm256_storeu_ps(y, _mm256_mul_ps(i8x8_ps(v), d));
	_mm256_storeu_ps(y + 8, _mm256_mul_ps(i8x8_ps(_mm_srli_si128(v, 8)), d));
}

/* Sixteen signed bytes: d1 * q - m1, stored to y[0..15]. */
static inline TGT void st16_i8_mulsub(float *y, __m128i v, __m256 d, __m256 m)
{
	_mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, i8x8_ps(v)), m));
	_mm256_storeu_ps(y + 8, _mm256_sub_ps(_mm256_mul_ps(d, i8x8_ps(_mm_srli_si128(v, 8))), m));
}

TGT void wf_decode_f16_avx2(const uint8_t *src, float *dst, size_t n)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m128i a = _mm_loadu_si128((const __m128i *)(src + 2 * i));
		__m128i b = _mm_loadu_si128((const __m128i *)(src + 2 * i + 16));

		_mm256_storeu_ps(dst + i, _mm256_cvtph_ps(a));
		_mm256_storeu_ps(dst + i + 8, _mm256_cvtph_ps(b));
	}
	for (; i < n; i++)
		dst[i] = h2f(wf_le16(src + 2 * i));
}

TGT void wf_decode_bf16_avx2(const uint8_t *src, float *dst, size_t n)
{
	size_t i = 0;

	for (; i + 16 <= n; i += 16) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(src + 2 * i));
		__m256i lo = _mm256_cvtepu16_epi32(_mm256_castsi256_si128(a));
		__m256i hi = _mm256_cvtepu16_epi32(_mm256_extracti128_si256(a, 1));

		_mm256_storeu_si256((__m256i *)(dst + i), _mm256_slli_epi32(lo, 16));
		_mm256_storeu_si256((__m256i *)(dst + i + 8), _mm256_slli_epi32(hi, 16));
	}
	for (; i < n; i++) {
		uint32_t u = (uint32_t)wf_le16(src + 2 * i) << 16;

		memcpy(dst + i, &u, 4);
	}
}

/* y = (float)(q - 8) * d, q the nibbles: the scalar code's one multiply. */
TGT void wf_decode_q4_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF), b8 = _mm_set1_epi8(8);

	for (size_t i = 0; i < nblocks; i++, src += WF_Q4_0_BYTES, dst += WF_Q4_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q4_0_D)));
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_Q4_0_QS));
		const __m128i lo = _mm_sub_epi8(_mm_and_si128(q, m4), b8);
		const __m128i hi = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 4), m4), b8);

		st16_i8_mul(dst, lo, d);
		st16_i8_mul(dst + 16, hi, d);
	}
}

/* y = (float)(nibble) * d + m, as the scalar code: product, then sum. */
TGT void wf_decode_q4_1_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);

	for (size_t i = 0; i < nblocks; i++, src += WF_Q4_1_BYTES, dst += WF_Q4_1_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q4_1_D)));
		const __m256 m = _mm256_set1_ps(h2f(wf_le16(src + WF_Q4_1_M)));
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_Q4_1_QS));
		const __m128i v[2] = { _mm_and_si128(q, m4), _mm_and_si128(_mm_srli_epi16(q, 4), m4) };

		for (int h = 0; h < 2; h++) {
			_mm256_storeu_ps(dst + 16 * h, _mm256_add_ps(_mm256_mul_ps(i8x8_ps(v[h]), d), m));
			_mm256_storeu_ps(dst + 16 * h + 8,
					 _mm256_add_ps(_mm256_mul_ps(i8x8_ps(_mm_srli_si128(v[h], 8)), d), m));
		}
	}
}

/* Bits 0..15 of x (one per element) as 0x10 in each of 16 bytes. */
static inline TGT __m128i bits_to_0x10(uint32_t x)
{
	const __m128i shuf = _mm_set_epi64x(0x0101010101010101, 0);
	const __m128i sel = _mm_set1_epi64x((long long)0x8040201008040201ULL);
	__m128i b = _mm_shuffle_epi8(_mm_cvtsi32_si128((int)x), shuf);

	b = _mm_cmpeq_epi8(_mm_and_si128(b, sel), sel);
	return _mm_and_si128(b, _mm_set1_epi8(0x10));
}

TGT void wf_decode_q5_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF), b16 = _mm_set1_epi8(16);

	for (size_t i = 0; i < nblocks; i++, src += WF_Q5_0_BYTES, dst += WF_Q5_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q5_0_D)));
		const uint32_t qh = wf_le32(src + WF_Q5_0_QH);
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_Q5_0_QS));
		__m128i lo = _mm_or_si128(_mm_and_si128(q, m4), bits_to_0x10(qh & 0xFFFF));
		__m128i hi = _mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), bits_to_0x10(qh >> 16));

		st16_i8_mul(dst, _mm_sub_epi8(lo, b16), d);
		st16_i8_mul(dst + 16, _mm_sub_epi8(hi, b16), d);
	}
}

TGT void wf_decode_q5_1_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);

	for (size_t i = 0; i < nblocks; i++, src += WF_Q5_1_BYTES, dst += WF_Q5_1_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q5_1_D)));
		const __m256 m = _mm256_set1_ps(h2f(wf_le16(src + WF_Q5_1_M)));
		const uint32_t qh = wf_le32(src + WF_Q5_1_QH);
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_Q5_1_QS));
		const __m128i v[2] = {
			_mm_or_si128(_mm_and_si128(q, m4), bits_to_0x10(qh & 0xFFFF)),
			_mm_or_si128(_mm_and_si128(_mm_srli_epi16(q, 4), m4), bits_to_0x10(qh >> 16)),
		};

		for (int h = 0; h < 2; h++) {
			_mm256_storeu_ps(dst + 16 * h, _mm256_add_ps(_mm256_mul_ps(i8x8_ps(v[h]), d), m));
			_mm256_storeu_ps(dst + 16 * h + 8,
					 _mm256_add_ps(_mm256_mul_ps(i8x8_ps(_mm_srli_si128(v[h], 8)), d), m));
		}
	}
}

TGT void wf_decode_q8_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q8_0_BYTES, dst += WF_Q8_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q8_0_D)));
		const __m128i a = _mm_loadu_si128((const __m128i *)(src + WF_Q8_0_QS));
		const __m128i b = _mm_loadu_si128((const __m128i *)(src + WF_Q8_0_QS + 16));

		st16_i8_mul(dst, a, d);
		st16_i8_mul(dst + 16, b, d);
	}
}


/* 32 unsigned bytes in v: y[k] = d * (float)v[k] - m for k = 0..31. */
static inline TGT void st32_u8_mulsub(float *y, __m256i v, __m256 d, __m256 m)
{
	st16_i8_mulsub(y, _mm256_castsi256_si128(v), d, m);
	st16_i8_mulsub(y + 16, _mm256_extracti128_si256(v, 1), d, m);
}

TGT void wf_decode_q4_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m4 = _mm256_set1_epi8(0xF);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q4_K_BYTES, dst += WF_Q4_K_BLCK) {
		const float d = h2f(wf_le16(src + WF_Q4_K_D));
		const float dmin = h2f(wf_le16(src + WF_Q4_K_DMIN));
		const uint8_t *scales = src + WF_Q4_K_SCALES, *qs = src + WF_Q4_K_QS;

		for (int c = 0; c < 4; c++) {
			int sc, mn;

			wf_scale_min_k4(2 * c, scales, &sc, &mn);
			const float d1 = d * (float)sc, m1 = dmin * (float)mn;
			wf_scale_min_k4(2 * c + 1, scales, &sc, &mn);
			const float d2 = d * (float)sc, m2 = dmin * (float)mn;
			const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));

			/* values 0..15 are the same read as signed bytes */
			st32_u8_mulsub(dst + 64 * c, _mm256_and_si256(q, m4),
				       _mm256_set1_ps(d1), _mm256_set1_ps(m1));
			st32_u8_mulsub(dst + 64 * c + 32, _mm256_and_si256(_mm256_srli_epi16(q, 4), m4),
				       _mm256_set1_ps(d2), _mm256_set1_ps(m2));
		}
	}
}

TGT void wf_decode_q5_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), b16 = _mm256_set1_epi8(16);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q5_K_BYTES, dst += WF_Q5_K_BLCK) {
		const float d = h2f(wf_le16(src + WF_Q5_K_D));
		const float dmin = h2f(wf_le16(src + WF_Q5_K_DMIN));
		const uint8_t *scales = src + WF_Q5_K_SCALES, *qs = src + WF_Q5_K_QS;
		const __m256i qh = _mm256_loadu_si256((const __m256i *)(src + WF_Q5_K_QH));

		for (int c = 0; c < 4; c++) {
			int sc, mn;

			wf_scale_min_k4(2 * c, scales, &sc, &mn);
			const float d1 = d * (float)sc, m1 = dmin * (float)mn;
			wf_scale_min_k4(2 * c + 1, scales, &sc, &mn);
			const float d2 = d * (float)sc, m2 = dmin * (float)mn;
			const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
			const __m256i u1 = _mm256_set1_epi8((char)(1 << (2 * c)));
			const __m256i u2 = _mm256_set1_epi8((char)(2 << (2 * c)));
			/* +16 where the qh bit is set; values 0..31 fit signed bytes */
			const __m256i h1 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, u1), u1), b16);
			const __m256i h2 = _mm256_and_si256(_mm256_cmpeq_epi8(_mm256_and_si256(qh, u2), u2), b16);

			st32_u8_mulsub(dst + 64 * c, _mm256_or_si256(_mm256_and_si256(q, m4), h1),
				       _mm256_set1_ps(d1), _mm256_set1_ps(m1));
			st32_u8_mulsub(dst + 64 * c + 32,
				       _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h2),
				       _mm256_set1_ps(d2), _mm256_set1_ps(m2));
		}
	}
}

/* 32 signed bytes in v: the first 16 times s0, the next 16 times s1. */
static inline TGT void st32_i8_mul2(float *y, __m256i v, float s0, float s1)
{
	st16_i8_mul(y, _mm256_castsi256_si128(v), _mm256_set1_ps(s0));
	st16_i8_mul(y + 16, _mm256_extracti128_si256(v, 1), _mm256_set1_ps(s1));
}

TGT void wf_decode_q6_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), m30 = _mm256_set1_epi8(0x30);
	const __m256i b32 = _mm256_set1_epi8(32);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q6_K_BYTES, dst += WF_Q6_K_BLCK) {
		const float d = h2f(wf_le16(src + WF_Q6_K_D));

		for (int n = 0; n < 2; n++) {
			const uint8_t *ql = src + WF_Q6_K_QL + 64 * n;
			const int8_t *sc = (const int8_t *)(src + WF_Q6_K_SCALES + 8 * n);
			const __m256i l0 = _mm256_loadu_si256((const __m256i *)ql);
			const __m256i l1 = _mm256_loadu_si256((const __m256i *)(ql + 32));
			const __m256i h = _mm256_loadu_si256((const __m256i *)(src + WF_Q6_K_QH + 32 * n));
			float *y = dst + 128 * n;
			float ds[8];

			/* ggml's association: (d * sc) * q */
			for (int k = 0; k < 8; k++)
				ds[k] = d * (float)sc[k];
			const __m256i q1 = _mm256_or_si256(_mm256_and_si256(l0, m4),
							   _mm256_and_si256(_mm256_slli_epi16(h, 4), m30));
			const __m256i q2 = _mm256_or_si256(_mm256_and_si256(l1, m4),
							   _mm256_and_si256(_mm256_slli_epi16(h, 2), m30));
			const __m256i q3 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l0, 4), m4),
							   _mm256_and_si256(h, m30));
			const __m256i q4 = _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(l1, 4), m4),
							   _mm256_and_si256(_mm256_srli_epi16(h, 2), m30));

			st32_i8_mul2(y, _mm256_sub_epi8(q1, b32), ds[0], ds[1]);
			st32_i8_mul2(y + 32, _mm256_sub_epi8(q2, b32), ds[2], ds[3]);
			st32_i8_mul2(y + 64, _mm256_sub_epi8(q3, b32), ds[4], ds[5]);
			st32_i8_mul2(y + 96, _mm256_sub_epi8(q4, b32), ds[6], ds[7]);
		}
	}
}

TGT void wf_decode_iq4_nl_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	const __m128i kv = _mm_loadu_si128((const __m128i *)wf_kvalues_iq4nl);

	for (size_t b = 0; b < nblocks; b++, src += WF_IQ4_NL_BYTES, dst += WF_IQ4_NL_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_IQ4_NL_D)));
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_IQ4_NL_QS));

		/* scalar: d * (float)kvalues[q]; the product commutes exactly */
		st16_i8_mul(dst, _mm_shuffle_epi8(kv, _mm_and_si128(q, m4)), d);
		st16_i8_mul(dst + 16, _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), d);
	}
}

TGT void wf_decode_iq4_xs_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	const __m128i kv = _mm_loadu_si128((const __m128i *)wf_kvalues_iq4nl);

	for (size_t b = 0; b < nblocks; b++, src += WF_IQ4_XS_BYTES, dst += WF_IQ4_XS_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ4_XS_D));
		const uint16_t scales_h = wf_le16(src + WF_IQ4_XS_SCALES_H);
		const uint8_t *scales_l = src + WF_IQ4_XS_SCALES_L, *qs = src + WF_IQ4_XS_QS;

		for (int ib = 0; ib < 8; ib++) {
			const int ls = ((scales_l[ib / 2] >> (4 * (ib % 2))) & 0xF) |
				       ((scales_h >> (2 * ib)) & 3) << 4;
			const __m256 dl = _mm256_set1_ps(d * (float)(ls - 32));
			const __m128i q = _mm_loadu_si128((const __m128i *)(qs + 16 * ib));

			st16_i8_mul(dst + 32 * ib, _mm_shuffle_epi8(kv, _mm_and_si128(q, m4)), dl);
			st16_i8_mul(dst + 32 * ib + 16,
				    _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), dl);
		}
	}
}

/* The f32 sign bit in lane j where bit j of s is set: the i-quants'
 * signs, applied by flipping as the scalar code does (wf_decode.c). */
static inline TGT __m256 sign8(unsigned s)
{
	const __m256i sel = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
	const __m256i set = _mm256_cmpeq_epi32(_mm256_and_si256(_mm256_set1_epi32((int)s), sel), sel);

	return _mm256_castsi256_ps(_mm256_slli_epi32(set, 31));
}

/* Eight unsigned grid bytes at g as floats. */
static inline TGT __m256 u8x8_ps(const uint8_t *g)
{
	return _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)g)));
}

TGT void wf_decode_iq2_xxs_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_XXS_BYTES, dst += WF_IQ2_XXS_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ2_XXS_D));

		for (int ib = 0; ib < 8; ib++) {
			const uint8_t *p = src + WF_IQ2_XXS_QS + 8 * ib;
			const uint32_t a1 = wf_le32(p + 4);
			const __m256 db = _mm256_set1_ps(d * (0.5f + (float)(a1 >> 28)) * 0.25f);

			/* scalar: db * (float)g[j], then the sign flipped */
			for (int l = 0; l < 4; l++) {
				__m256 g = _mm256_mul_ps(db, u8x8_ps(wf_iq2xxs_grid[p[l]]));

				_mm256_storeu_ps(dst + 32 * ib + 8 * l,
						 _mm256_xor_ps(g, sign8(wf_ksigns_iq2xs[(a1 >> (7 * l)) & 127])));
			}
		}
	}
}

TGT void wf_decode_q8_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q8_K_BYTES, dst += WF_Q8_K_BLCK) {
		float df;
		uint32_t u = wf_le32(src + WF_Q8_K_D);

		memcpy(&df, &u, 4);
		const __m256 d = _mm256_set1_ps(df);
		for (int j = 0; j < WF_Q8_K_BLCK; j += 16)
			st16_i8_mul(dst + j, _mm_loadu_si128((const __m128i *)(src + WF_Q8_K_QS + j)), d);
	}
}

#endif /* WF_HAVE_X86_SIMD */
