/* wf_round.c - float32 to half and bfloat16, nearest-even (wf_round.h). */
#include "codec/wf_round.h"
#include "codec/wf_types.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_F16C_PATH 1
#endif

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

uint16_t wf_f32_to_f16(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffff;
	if (a > 0x7f800000)
		return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
	if (a >= 0x477ff000) /* 65520 and up round to infinity (65520 is a tie, to even) */
		return (uint16_t)(sign | 0x7c00);
	if (a >= 0x38800000) { /* a normal half: rebias the exponent, round the 13 dropped bits */
		uint32_t r = a - 0x38000000;
		r += 0xfff + ((r >> 13) & 1);
		return (uint16_t)(sign | (r >> 13));
	}
	if (a <= 0x33000000) /* at most 2^-25, half the smallest subnormal: to zero */
		return sign;
	/* a subnormal half: units of 2^-24 */
	uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000, sh = 126 - e;
	uint32_t qv = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
	if (rem > half || (rem == half && (qv & 1)))
		qv++;
	return (uint16_t)(sign | qv);
}

uint16_t wf_f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x0040);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#ifdef HAVE_F16C_PATH
__attribute__((target("avx2,f16c")))
static void f16_n_f16c(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(src + i);
		__m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm_storeu_si128((__m128i *)(dst + i), h);
	}
	for (; i < n; i++)
		dst[i] = wf_f32_to_f16(src[i]);
}
#endif

void wf_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
{
#ifdef HAVE_F16C_PATH
	if (wf_simd_active()) {
		f16_n_f16c(src, dst, n);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		dst[i] = wf_f32_to_f16(src[i]);
}

#ifdef HAVE_F16C_PATH
/* The scalar rounding below, eight at a time: -O2 does not vectorize it,
 * and the scalar loop made bf16 views slower per element than f32 ones. */
__attribute__((target("avx2")))
static size_t bf16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
	const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
	const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
	const __m256i quiet = _mm256_set1_epi32(0x0040);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i r[2];
		for (int k = 0; k < 2; k++) {
			__m256i u = _mm256_loadu_si256((const __m256i *)(src + i + 8 * k));
			__m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
			__m256i rne = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), odd), 16);
			__m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
			/* a NaN: |u| > inf, as signed 32-bit numbers (|u| < 2^31) */
			__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
			r[k] = _mm256_blendv_epi8(rne, qn, nan);
		}
		/* every lane is below 2^16: packus keeps it; it packs per 128-bit
		 * lane, so put the four quarters back in order */
		__m256i p = _mm256_packus_epi32(r[0], r[1]);
		p = _mm256_permute4x64_epi64(p, 0xd8);
		_mm256_storeu_si256((__m256i *)(dst + i), p);
	}
	return i;
}
#endif

void wf_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
#ifdef HAVE_F16C_PATH
	if (wf_simd_active())
		i = bf16_n_avx2(src, dst, n);
#endif
	for (; i < n; i++) {
		uint32_t u = f32_bits(src[i]);
		uint16_t r = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
		uint16_t qn = (uint16_t)((u >> 16) | 0x0040);
		dst[i] = (u & 0x7fffffff) > 0x7f800000 ? qn : r;
	}
}

/* bfloat16 NaNs in place: h & 0x7fff above 0x7f80, as signed 16-bit
 * numbers (the top bit cleared); a branch per 32 values, taken only where
 * one is a NaN (almost never in a model). */
#ifdef HAVE_F16C_PATH
__attribute__((target("avx2")))
static size_t bf16_quiet_avx2(uint16_t *p, size_t n)
{
	const __m256i abs = _mm256_set1_epi16(0x7fff), inf = _mm256_set1_epi16(0x7f80);
	const __m256i quiet = _mm256_set1_epi16(0x0040);
	size_t i = 0;
	for (; i + 32 <= n; i += 32) {
		__m256i a = _mm256_loadu_si256((const __m256i *)(p + i));
		__m256i b = _mm256_loadu_si256((const __m256i *)(p + i + 16));
		__m256i na = _mm256_cmpgt_epi16(_mm256_and_si256(a, abs), inf);
		__m256i nb = _mm256_cmpgt_epi16(_mm256_and_si256(b, abs), inf);
		if (_mm256_testz_si256(_mm256_or_si256(na, nb), _mm256_or_si256(na, nb)))
			continue;
		_mm256_storeu_si256((__m256i *)(p + i), _mm256_or_si256(a, _mm256_and_si256(na, quiet)));
		_mm256_storeu_si256((__m256i *)(p + i + 16), _mm256_or_si256(b, _mm256_and_si256(nb, quiet)));
	}
	return i;
}
#endif

void wf_bf16_quiet_n(void *bytes, size_t n)
{
	uint8_t *p = bytes;
	size_t i = 0;
#ifdef HAVE_F16C_PATH
	/* lanes of 16 bits read as the bytes' little-endian values */
	if (wf_simd_active() && ((uintptr_t)p & 1) == 0)
		i = bf16_quiet_avx2((uint16_t *)bytes, n);
#endif
	for (; i < n; i++) {
		uint16_t h = (uint16_t)(p[2 * i] | p[2 * i + 1] << 8);
		if ((h & 0x7fff) > 0x7f80) {
			h |= 0x40;
			p[2 * i] = (uint8_t)h;
			p[2 * i + 1] = (uint8_t)(h >> 8);
		}
	}
}
