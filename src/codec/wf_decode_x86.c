/* wf_decode_x86.c - AVX2 + F16C versions of the block decoders: every ggml
 * type's, and F64 (the F8 family stays scalar).
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


/* Q8_1 is Q8_0 with the redundant sum s between d and qs (see the scalar
 * twin); s is not read. */
TGT void wf_decode_q8_1_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++, src += WF_Q8_1_BYTES, dst += WF_Q8_1_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q8_1_D)));
		const __m128i a = _mm_loadu_si128((const __m128i *)(src + WF_Q8_1_QS));
		const __m128i b = _mm_loadu_si128((const __m128i *)(src + WF_Q8_1_QS + 16));

		st16_i8_mul(dst, a, d);
		st16_i8_mul(dst + 16, b, d);
	}
}

/* Eight bytes at q widened to 32-bit lanes: the K-quants take both nibbles
 * from one widening (and, shift), where widening each nibble vector
 * separately costs three times the shuffles. */
static inline TGT __m256i u8x8_epi32(const uint8_t *q)
{
	return _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)q));
}

/* y = d * (float)v - m for eight 32-bit lanes. */
static inline TGT void st8_mulsub(float *y, __m256i v, __m256 d, __m256 m)
{
	_mm256_storeu_ps(y, _mm256_sub_ps(_mm256_mul_ps(d, _mm256_cvtepi32_ps(v)), m));
}

/* The eight sub-block scales d * sc[j] and mins dmin * mn[j] of a Q4_K/Q5_K
 * block into ds[] and ms[], each the scalar code's one product: the 6-bit
 * fields unpacked with whole-word masks (j < 4: the low six bits of bytes
 * j and j + 4; j >= 4: a nibble of byte j + 4 with the top two bits of byte
 * j - 4 or j above it), converted and multiplied eight at a time.  Doing
 * this once per block instead of per sub-block through scalar converts was
 * most of what Q5_K lacked against ggml -march=native (docs/performance.md).
 * The callers broadcast from ds/ms: a load, not a shuffle. */
static inline TGT void k4_scales_mins(const uint8_t *s, float d, float dmin, float *ds, float *ms)
{
	const uint32_t a = wf_le32(s), b = wf_le32(s + 4), c = wf_le32(s + 8);
	const uint32_t sc_hi = (c & 0x0F0F0F0F) | ((a >> 6) & 0x03030303) << 4;
	const uint32_t mn_hi = ((c >> 4) & 0x0F0F0F0F) | ((b >> 6) & 0x03030303) << 4;
	const __m128i sc = _mm_cvtsi64_si128((long long)((uint64_t)sc_hi << 32 | (a & 0x3F3F3F3F)));
	const __m128i mn = _mm_cvtsi64_si128((long long)((uint64_t)mn_hi << 32 | (b & 0x3F3F3F3F)));

	_mm256_storeu_ps(ds, _mm256_mul_ps(_mm256_set1_ps(d), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(sc))));
	_mm256_storeu_ps(ms, _mm256_mul_ps(_mm256_set1_ps(dmin), _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(mn))));
}

TGT void wf_decode_q4_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m4 = _mm256_set1_epi32(0xF);
	float ds[8], ms[8];

	for (size_t b = 0; b < nblocks; b++, src += WF_Q4_K_BYTES, dst += WF_Q4_K_BLCK) {
		const uint8_t *qs = src + WF_Q4_K_QS;

		k4_scales_mins(src + WF_Q4_K_SCALES, h2f(wf_le16(src + WF_Q4_K_D)),
			       h2f(wf_le16(src + WF_Q4_K_DMIN)), ds, ms);
		for (int c = 0; c < 4; c++) {
			const __m256 d1 = _mm256_broadcast_ss(ds + 2 * c), m1 = _mm256_broadcast_ss(ms + 2 * c);
			const __m256 d2 = _mm256_broadcast_ss(ds + 2 * c + 1);
			const __m256 m2 = _mm256_broadcast_ss(ms + 2 * c + 1);
			float *y = dst + 64 * c;

			for (int l = 0; l < 32; l += 8) {
				const __m256i v = u8x8_epi32(qs + 32 * c + l);

				st8_mulsub(y + l, _mm256_and_si256(v, m4), d1, m1);
				st8_mulsub(y + l + 32, _mm256_srli_epi32(v, 4), d2, m2);
			}
		}
	}
}

/* 32 unsigned bytes in v: y[k] = d * (float)v[k] - m for k = 0..31. */
static inline TGT void st32_u8_mulsub(float *y, __m256i v, __m256 d, __m256 m)
{
	st16_i8_mulsub(y, _mm256_castsi256_si128(v), d, m);
	st16_i8_mulsub(y + 16, _mm256_extracti128_si256(v, 1), d, m);
}

TGT void wf_decode_q5_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m4 = _mm256_set1_epi8(0xF), b16 = _mm256_set1_epi8(16);
	float ds[8], ms[8];

	for (size_t b = 0; b < nblocks; b++, src += WF_Q5_K_BYTES, dst += WF_Q5_K_BLCK) {
		const uint8_t *qs = src + WF_Q5_K_QS;
		__m256i qh = _mm256_loadu_si256((const __m256i *)(src + WF_Q5_K_QH));

		k4_scales_mins(src + WF_Q5_K_SCALES, h2f(wf_le16(src + WF_Q5_K_D)),
			       h2f(wf_le16(src + WF_Q5_K_DMIN)), ds, ms);
		/* qh shifts right by two per 64 elements, so bits 2c and 2c + 1 of
		 * each byte are always its bits 0 and 1 (the 16-bit shifts carry
		 * other bytes' bits only into bits this never reads); shifted to
		 * bit 4 they are the +16.  Values 0..31 fit signed bytes. */
		for (int c = 0; c < 4; c++, qh = _mm256_srli_epi16(qh, 2)) {
			const __m256i q = _mm256_loadu_si256((const __m256i *)(qs + 32 * c));
			const __m256i h1 = _mm256_and_si256(_mm256_slli_epi16(qh, 4), b16);
			const __m256i h2 = _mm256_and_si256(_mm256_slli_epi16(qh, 3), b16);

			st32_u8_mulsub(dst + 64 * c, _mm256_or_si256(_mm256_and_si256(q, m4), h1),
				       _mm256_broadcast_ss(ds + 2 * c), _mm256_broadcast_ss(ms + 2 * c));
			st32_u8_mulsub(dst + 64 * c + 32,
				       _mm256_or_si256(_mm256_and_si256(_mm256_srli_epi16(q, 4), m4), h2),
				       _mm256_broadcast_ss(ds + 2 * c + 1), _mm256_broadcast_ss(ms + 2 * c + 1));
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
 * signs, applied by flipping as the scalar code does (wf_decode.c).  A
 * table (8 KiB, L1-resident) rather than broadcast-and-compare: the
 * broadcast competes with the byte widening for the one shuffle port. */
#define SB(b, j) ((uint32_t)(((b) >> (j)) & 1) << 31)
#define SROW(b) { SB(b, 0), SB(b, 1), SB(b, 2), SB(b, 3), SB(b, 4), SB(b, 5), SB(b, 6), SB(b, 7) }
#define SROW4(b) SROW(b), SROW((b) + 1), SROW((b) + 2), SROW((b) + 3)
#define SROW16(b) SROW4(b), SROW4((b) + 4), SROW4((b) + 8), SROW4((b) + 12)
#define SROW64(b) SROW16(b), SROW16((b) + 16), SROW16((b) + 32), SROW16((b) + 48)
static const uint32_t sign_rows[256][8] __attribute__((aligned(32))) = {
	SROW64(0), SROW64(64), SROW64(128), SROW64(192),
};

static inline TGT __m256 sign8(unsigned s)
{
	return _mm256_load_ps((const float *)sign_rows[s & 0xFF]);
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

TGT void wf_decode_f64_avx2(const uint8_t *src, float *dst, size_t n)
{
	size_t i = 0;

	/* vcvtpd2ps rounds to nearest and quiets NaNs as the scalar cvtsd2ss */
	for (; i + 8 <= n; i += 8) {
		__m128 a = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(src + 8 * i)));
		__m128 b = _mm256_cvtpd_ps(_mm256_loadu_pd((const double *)(src + 8 * i + 32)));

		_mm256_storeu_ps(dst + i, _mm256_set_m128(b, a));
	}
	wf_decode_f64(src + 8 * i, dst + i, n - i);
}

/* --- k-quants without a min nibble table: Q2_K, Q3_K ------------------------ */

TGT void wf_decode_q2_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m3 = _mm256_set1_epi8(3);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q2_K_BYTES, dst += WF_Q2_K_BLCK) {
		const uint8_t *scales = src + WF_Q2_K_SCALES;
		const float d = h2f(wf_le16(src + WF_Q2_K_D));
		const float dmin = h2f(wf_le16(src + WF_Q2_K_DMIN));

		for (int n = 0; n < 2; n++) {
			const __m256i q = _mm256_loadu_si256((const __m256i *)(src + WF_Q2_K_QS + 32 * n));

			for (int j = 0; j < 4; j++) {
				/* the low 16 bytes are run h = 0, the high 16 run h = 1 */
				const __m256i v = _mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3);
				const uint8_t s0 = scales[8 * n + 2 * j], s1 = scales[8 * n + 2 * j + 1];
				float *y = dst + 128 * n + 32 * j;

				st16_i8_mulsub(y, _mm256_castsi256_si128(v), _mm256_set1_ps(d * (float)(s0 & 0xF)),
					       _mm256_set1_ps(dmin * (float)(s0 >> 4)));
				st16_i8_mulsub(y + 16, _mm256_extracti128_si256(v, 1),
					       _mm256_set1_ps(d * (float)(s1 & 0xF)),
					       _mm256_set1_ps(dmin * (float)(s1 >> 4)));
			}
		}
	}
}

TGT void wf_decode_q3_k_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m3 = _mm256_set1_epi8(3), four = _mm256_set1_epi8(4);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q3_K_BYTES, dst += WF_Q3_K_BLCK) {
		const uint8_t *s = src + WF_Q3_K_SCALES;
		const float d = h2f(wf_le16(src + WF_Q3_K_D));
		const __m256i hm = _mm256_loadu_si256((const __m256i *)(src + WF_Q3_K_HMASK));
		float dl[16];

		/* the scalar decoder's 6-bit scales, biased by 32 */
		for (int i = 0; i < 16; i++) {
			int lo4 = i < 8 ? s[i] & 0xF : s[i - 8] >> 4;
			int hi2 = (s[8 + i % 4] >> (2 * (i / 4))) & 3;

			dl[i] = d * (float)((lo4 | hi2 << 4) - 32);
		}
		for (int n = 0; n < 2; n++) {
			const __m256i q = _mm256_loadu_si256((const __m256i *)(src + WF_Q3_K_QS + 32 * n));

			for (int j = 0; j < 4; j++) {
				const __m256i bit = _mm256_set1_epi8((char)(1 << (4 * n + j)));
				const __m256i set = _mm256_cmpeq_epi8(_mm256_and_si256(hm, bit), bit);
				/* a clear high bit subtracts 4: values -4..3 */
				const __m256i v = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 2 * j), m3),
								  _mm256_andnot_si256(set, four));
				float *y = dst + 128 * n + 32 * j;

				st16_i8_mul(y, _mm256_castsi256_si128(v), _mm256_set1_ps(dl[8 * n + 2 * j]));
				st16_i8_mul(y + 16, _mm256_extracti128_si256(v, 1),
					    _mm256_set1_ps(dl[8 * n + 2 * j + 1]));
			}
		}
	}
}

/* --- more i-quants ----------------------------------------------------------- */

/* Eight unsigned grid values (the low 8 bytes of g) times db, sign bit j of
 * s flipping value j: the scalar put8 / put4x2. */
static inline TGT void put8_grid(float *y, __m256 db, __m128i g, unsigned s)
{
	const __m256 v = _mm256_cvtepi32_ps(_mm256_cvtepu8_epi32(g));

	_mm256_storeu_ps(y, _mm256_xor_ps(_mm256_mul_ps(db, v), sign8(s)));
}

/* Two 4-byte grid rows side by side, as put4x2 reads them. */
static inline TGT __m128i rows4x2(const uint8_t *g1, const uint8_t *g2)
{
	uint32_t a, b;

	memcpy(&a, g1, 4);
	memcpy(&b, g2, 4);
	return _mm_insert_epi32(_mm_cvtsi32_si128((int)a), (int)b, 1);
}

TGT void wf_decode_iq2_xs_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_XS_BYTES, dst += WF_IQ2_XS_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ2_XS_D));
		const uint8_t *scales = src + WF_IQ2_XS_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const __m256 db[2] = {
				_mm256_set1_ps(d * (0.5f + (float)(scales[ib] & 0xF)) * 0.25f),
				_mm256_set1_ps(d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f),
			};

			for (int l = 0; l < 4; l++) {
				const uint16_t v = wf_le16(src + WF_IQ2_XS_QS + 2 * (4 * ib + l));

				put8_grid(dst + 32 * ib + 8 * l, db[l / 2],
					  _mm_loadl_epi64((const __m128i *)wf_iq2xs_grid[v & 511]),
					  wf_ksigns_iq2xs[v >> 9]);
			}
		}
	}
}

TGT void wf_decode_iq2_s_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ2_S_BYTES, dst += WF_IQ2_S_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ2_S_D));
		const uint8_t *qs = src + WF_IQ2_S_QS, *signs = src + WF_IQ2_S_SIGNS;
		const uint8_t *qh = src + WF_IQ2_S_QH, *scales = src + WF_IQ2_S_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const __m256 db[2] = {
				_mm256_set1_ps(d * (0.5f + (float)(scales[ib] & 0xF)) * 0.25f),
				_mm256_set1_ps(d * (0.5f + (float)(scales[ib] >> 4)) * 0.25f),
			};

			for (int l = 0; l < 4; l++) {
				const unsigned idx = qs[4 * ib + l] | ((qh[ib] >> (2 * l)) & 3u) << 8;

				put8_grid(dst + 32 * ib + 8 * l, db[l / 2],
					  _mm_loadl_epi64((const __m128i *)wf_iq2s_grid[idx]), signs[4 * ib + l]);
			}
		}
	}
}

TGT void wf_decode_iq3_xxs_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ3_XXS_BYTES, dst += WF_IQ3_XXS_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ3_XXS_D));
		const uint8_t *qs = src + WF_IQ3_XXS_QS;

		for (int ib = 0; ib < 8; ib++) {
			const uint32_t a = wf_le32(src + WF_IQ3_XXS_SAS + 4 * ib);
			const __m256 db = _mm256_set1_ps(d * (0.5f + (float)(a >> 28)) * 0.5f);

			for (int l = 0; l < 4; l++)
				put8_grid(dst + 32 * ib + 8 * l, db,
					  rows4x2(wf_iq3xxs_grid[qs[8 * ib + 2 * l]],
						  wf_iq3xxs_grid[qs[8 * ib + 2 * l + 1]]),
					  wf_ksigns_iq2xs[(a >> (7 * l)) & 127]);
		}
	}
}

TGT void wf_decode_iq3_s_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ3_S_BYTES, dst += WF_IQ3_S_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ3_S_D));
		const uint8_t *qs = src + WF_IQ3_S_QS, *qh = src + WF_IQ3_S_QH;
		const uint8_t *signs = src + WF_IQ3_S_SIGNS, *scales = src + WF_IQ3_S_SCALES;

		for (int ib = 0; ib < 8; ib++) {
			const int s = (scales[ib / 2] >> (4 * (ib % 2))) & 0xF;
			const __m256 db = _mm256_set1_ps(d * (float)(1 + 2 * s));

			for (int l = 0; l < 4; l++) {
				const unsigned i1 = qs[8 * ib + 2 * l] | ((qh[ib] >> (2 * l)) & 1u) << 8;
				const unsigned i2 = qs[8 * ib + 2 * l + 1] | ((qh[ib] >> (2 * l + 1)) & 1u) << 8;

				put8_grid(dst + 32 * ib + 8 * l, db, rows4x2(wf_iq3s_grid[i1], wf_iq3s_grid[i2]),
					  signs[4 * ib + l]);
			}
		}
	}
}

/* dl * ((float)g[j] + delta) for one signed 8-value iq1s grid row. */
static inline TGT void put8_iq1(float *y, __m256 dl, const int8_t *g, __m256 delta)
{
	const __m256 v = i8x8_ps(_mm_loadl_epi64((const __m128i *)g));

	_mm256_storeu_ps(y, _mm256_mul_ps(dl, _mm256_add_ps(v, delta)));
}

/* +0.125, or -0.125 when bit 31 of neg is set: a data-dependent select
 * would be a branch that random delta bits mispredict half the time. */
static inline TGT __m256 iq1_delta(unsigned neg)
{
	return _mm256_castsi256_ps(_mm256_set1_epi32((int)(0x3E000000u | (neg & 0x80000000u))));
}

TGT void wf_decode_iq1_s_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ1_S_BYTES, dst += WF_IQ1_S_BLCK) {
		const float d = h2f(wf_le16(src + WF_IQ1_S_D));
		const uint8_t *qs = src + WF_IQ1_S_QS;

		for (int ib = 0; ib < 8; ib++) {
			const uint16_t h = wf_le16(src + WF_IQ1_S_QH + 2 * ib);
			const __m256 dl = _mm256_set1_ps(d * (float)(2 * ((h >> 12) & 7) + 1));
			const __m256 delta = iq1_delta((unsigned)(h & 0x8000) << 16);

			for (int l = 0; l < 4; l++) {
				const unsigned idx = qs[4 * ib + l] | ((h >> (3 * l)) & 7u) << 8;

				put8_iq1(dst + 32 * ib + 8 * l, dl, wf_iq1s_grid[idx], delta);
			}
		}
	}
}

TGT void wf_decode_iq1_m_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_IQ1_M_BYTES, dst += WF_IQ1_M_BLCK) {
		const uint8_t *qs = src + WF_IQ1_M_QS, *qh = src + WF_IQ1_M_QH;
		uint16_t sc[4];

		for (int k = 0; k < 4; k++)
			sc[k] = wf_le16(src + WF_IQ1_M_SCALES + 2 * k);
		const float d = h2f((uint16_t)((sc[0] >> 12) | ((sc[1] >> 8) & 0x00F0) |
					       ((sc[2] >> 4) & 0x0F00) | (sc[3] & 0xF000)));

		for (int ib = 0; ib < 8; ib++) {
			const unsigned w = sc[ib / 2], sh = 6u * (unsigned)(ib % 2);
			const __m256 dl1 = _mm256_set1_ps(d * (float)(2 * ((w >> sh) & 7) + 1));
			const __m256 dl2 = _mm256_set1_ps(d * (float)(2 * ((w >> (sh + 3)) & 7) + 1));
			const unsigned h0 = qh[2 * ib], h1 = qh[2 * ib + 1];
			float *y = dst + 32 * ib;

			put8_iq1(y, dl1, wf_iq1s_grid[qs[4 * ib + 0] | ((h0 << 8) & 0x700)], iq1_delta((h0 & 0x08) << 28));
			put8_iq1(y + 8, dl1, wf_iq1s_grid[qs[4 * ib + 1] | ((h0 << 4) & 0x700)], iq1_delta((h0 & 0x80) << 24));
			put8_iq1(y + 16, dl2, wf_iq1s_grid[qs[4 * ib + 2] | ((h1 << 8) & 0x700)], iq1_delta((h1 & 0x08) << 28));
			put8_iq1(y + 24, dl2, wf_iq1s_grid[qs[4 * ib + 3] | ((h1 << 4) & 0x700)], iq1_delta((h1 & 0x80) << 24));
		}
	}
}

/* --- ternary, FP4, 1- and 2-bit ------------------------------------------ */

/* TQ1_0 digits of the bytes in the 32-bit lanes of v, 256 * 3^n for byte
 * k in lane k of pw: the low 16 bits of byte * 256 * 3^n are (byte * 3^n
 * mod 256) << 8, and the high 16 of that times 3 are the digit, the
 * scalar (q * 3) >> 8; the lanes' high halves stay zero.  Value (digit -
 * 1) * d. */
static inline TGT void tq1_8(float *y, __m256i v, __m256i pw, __m256 d)
{
	const __m256i t = _mm256_mulhi_epu16(_mm256_mullo_epi16(v, pw), _mm256_set1_epi32(3));

	_mm256_storeu_ps(y, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(t, _mm256_set1_epi32(1))), d));
}

TGT void wf_decode_tq1_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	/* each byte widened once, then all its digits: lanes 4n..4n+3 of the
	 * qh part hold qh[0..3] times 3^n */
	const __m256i pw[5] = {
		_mm256_set1_epi32(256 * 1), _mm256_set1_epi32(256 * 3), _mm256_set1_epi32(256 * 9),
		_mm256_set1_epi32(256 * 27), _mm256_set1_epi32(256 * 81),
	};
	const __m256i pwh0 = _mm256_setr_epi32(256, 256, 256, 256, 768, 768, 768, 768);
	const __m256i pwh1 = _mm256_setr_epi32(2304, 2304, 2304, 2304, 6912, 6912, 6912, 6912);

	for (size_t b = 0; b < nblocks; b++, src += WF_TQ1_0_BYTES, dst += WF_TQ1_0_BLCK) {
		const uint8_t *qs = src + WF_TQ1_0_QS;
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_TQ1_0_D)));

		for (int m = 0; m < 32; m += 8) {
			const __m256i v = u8x8_epi32(qs + m);

			for (int n = 0; n < 5; n++)
				tq1_8(dst + 32 * n + m, v, pw[n], d);
		}
		for (int m = 0; m < 16; m += 8) {
			const __m256i v = u8x8_epi32(qs + 32 + m);

			for (int n = 0; n < 5; n++)
				tq1_8(dst + 160 + 16 * n + m, v, pw[n], d);
		}
		const __m256i h = _mm256_cvtepu8_epi32(_mm_set1_epi32((int)wf_le32(src + WF_TQ1_0_QH)));

		tq1_8(dst + 240, h, pwh0, d);
		tq1_8(dst + 248, h, pwh1, d);
	}
}

TGT void wf_decode_tq2_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m256i m3 = _mm256_set1_epi8(3), one = _mm256_set1_epi8(1);

	for (size_t b = 0; b < nblocks; b++, src += WF_TQ2_0_BYTES, dst += WF_TQ2_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_TQ2_0_D)));

		for (int j0 = 0; j0 < WF_TQ2_0_QS_LEN; j0 += 32) {
			const __m256i q = _mm256_loadu_si256((const __m256i *)(src + WF_TQ2_0_QS + j0));

			for (int l = 0; l < 4; l++) {
				const __m256i v = _mm256_sub_epi8(_mm256_and_si256(_mm256_srli_epi16(q, 2 * l), m3), one);
				float *y = dst + 4 * j0 + 32 * l;

				st16_i8_mul(y, _mm256_castsi256_si128(v), d);
				st16_i8_mul(y + 16, _mm256_extracti128_si256(v, 1), d);
			}
		}
	}
}

/* y = (float)kvalues_fp4[nibble] * d, as the scalar code (product order). */
TGT void wf_decode_mxfp4_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	const __m128i kv = _mm_loadu_si128((const __m128i *)wf_kvalues_fp4);

	for (size_t b = 0; b < nblocks; b++, src += WF_MXFP4_BYTES, dst += WF_MXFP4_BLCK) {
		const __m256 d = _mm256_set1_ps(wf_e8m0_half(src[WF_MXFP4_E]));
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_MXFP4_QS));

		st16_i8_mul(dst, _mm_shuffle_epi8(kv, _mm_and_si128(q, m4)), d);
		st16_i8_mul(dst + 16, _mm_shuffle_epi8(kv, _mm_and_si128(_mm_srli_epi16(q, 4), m4)), d);
	}
}

TGT void wf_decode_nvfp4_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m4 = _mm_set1_epi8(0xF);
	const __m128i kv = _mm_loadu_si128((const __m128i *)wf_kvalues_fp4);

	for (size_t b = 0; b < nblocks; b++, src += WF_NVFP4_BYTES, dst += WF_NVFP4_BLCK) {
		for (int s = 0; s < WF_NVFP4_D_LEN; s++) {
			const __m256 ds = _mm256_set1_ps(wf_ue4m3_half(src[WF_NVFP4_D + s]));
			const __m128i q = _mm_loadl_epi64((const __m128i *)(src + WF_NVFP4_QS + 8 * s));
			/* 8 low nibbles are elements 0..7, the 8 high ones 8..15 */
			const __m128i v = _mm_unpacklo_epi64(_mm_and_si128(q, m4),
							     _mm_and_si128(_mm_srli_epi16(q, 4), m4));

			st16_i8_mul(dst + 16 * s, _mm_shuffle_epi8(kv, v), ds);
		}
	}
}

TGT void wf_decode_q1_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++, src += WF_Q1_0_BYTES, dst += WF_Q1_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q1_0_D)));

		/* a clear bit is -d: the sign flipped, as the scalar negation */
		for (int k = 0; k < WF_Q1_0_QS_LEN; k++)
			_mm256_storeu_ps(dst + 8 * k, _mm256_xor_ps(d, sign8(~(unsigned)src[WF_Q1_0_QS + k] & 0xFF)));
	}
}

TGT void wf_decode_q2_0_avx2(const uint8_t *src, float *dst, size_t nblocks)
{
	const __m128i m3 = _mm_set1_epi8(3), one = _mm_set1_epi8(1);

	for (size_t b = 0; b < nblocks; b++, src += WF_Q2_0_BYTES, dst += WF_Q2_0_BLCK) {
		const __m256 d = _mm256_set1_ps(h2f(wf_le16(src + WF_Q2_0_D)));
		const __m128i q = _mm_loadu_si128((const __m128i *)(src + WF_Q2_0_QS));
		__m128i p[4];

		/* element 4k + l is plane l of byte k: interleave the planes */
		for (int l = 0; l < 4; l++)
			p[l] = _mm_sub_epi8(_mm_and_si128(_mm_srli_epi16(q, 2 * l), m3), one);
		const __m128i p01l = _mm_unpacklo_epi8(p[0], p[1]), p01h = _mm_unpackhi_epi8(p[0], p[1]);
		const __m128i p23l = _mm_unpacklo_epi8(p[2], p[3]), p23h = _mm_unpackhi_epi8(p[2], p[3]);

		st16_i8_mul(dst, _mm_unpacklo_epi16(p01l, p23l), d);
		st16_i8_mul(dst + 16, _mm_unpackhi_epi16(p01l, p23l), d);
		st16_i8_mul(dst + 32, _mm_unpacklo_epi16(p01h, p23h), d);
		st16_i8_mul(dst + 48, _mm_unpackhi_epi16(p01h, p23h), d);
	}
}

#endif /* WF_HAVE_X86_SIMD */
