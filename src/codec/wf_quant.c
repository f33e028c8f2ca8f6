/* wf_quant.c - the 32-weight encoders (Q4_0 Q4_1 Q5_0 Q5_1 Q8_0), the
 * float ones (F32 F16 BF16).
 *
 * Bit-exactness with ggml's quantize_row_<t>_ref (ggml-quants.c): each
 * float operation happens in ggml's order, divisions stay divisions and
 * reciprocals reciprocals; ggml's float-to-int casts truncate (wf_cvtt)
 * except Q8_0's roundf, which rounds ties away from zero.
 *
 * Infinities and NaNs are encoded, not refused: they reach those casts as
 * NaN or infinity (C leaves the result undefined), and ggml's x86-64 build
 * turns them into cvttss2si's 0x80000000, whose low byte wf_cvtt keeps.
 * tests/unit/check_quant.c holds the result to that build's bytes.
 */
#include "codec/wf_quant.h"

#include <float.h>
#include <math.h>
#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_quant_int.h"

#if defined(__SSE2__)
#include <emmintrin.h>

/* Q4_0/Q4_1's 16 quant bytes from v = ((x - sub) * id) + add for the 32
 * values x, four at a time: cvttps2dq gives cvttss2si's results (0x80000000
 * for NaN and out of range), the low byte of each is ggml's int8_t cast,
 * then MIN(15, q), and byte j is q[j] | q[j + 16] << 4, truncated. */
static void nibbles_sse2(const float *x, float sub, float id, float add, uint8_t *qs)
{
	const __m128 vs = _mm_set1_ps(sub), vi = _mm_set1_ps(id), va = _mm_set1_ps(add);
	const __m128i h = _mm_set1_epi32(15), lo8 = _mm_set1_epi32(0xff), lo4 = _mm_set1_epi32(0x0f);
	__m128i r[4];

	for (int k = 0; k < 4; k++) {
		__m128i q[2];
		for (int half = 0; half < 2; half++) {
			__m128 f = _mm_loadu_ps(x + 16 * half + 4 * k);
			f = _mm_add_ps(_mm_mul_ps(_mm_sub_ps(f, vs), vi), va);
			__m128i v = _mm_srai_epi32(_mm_slli_epi32(_mm_cvttps_epi32(f), 24), 24);
			__m128i gt = _mm_cmpgt_epi32(v, h);
			q[half] = _mm_or_si128(_mm_and_si128(gt, h), _mm_andnot_si128(gt, v));
		}
		r[k] = _mm_or_si128(_mm_and_si128(q[0], lo8), _mm_slli_epi32(_mm_and_si128(q[1], lo4), 4));
	}
	_mm_storeu_si128((__m128i *)qs, _mm_packus_epi16(_mm_packs_epi32(r[0], r[1]), _mm_packs_epi32(r[2], r[3])));
}

/* Q8_0's amax, ggml's MAX(amax, |x|) fold: lane by lane it is maxps, and
 * without NaNs (|x| >= 0, so no -0 either) the lanes' merge changes
 * nothing; with a NaN ggml's fold restarts after it, so the scalar fold
 * runs then. */
static float q8_amax_sse2(const float *x)
{
	const __m128 absm = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
	__m128 m = _mm_setzero_ps(), nan = _mm_setzero_ps();
	float a[4], amax = 0.0f;

	for (int j = 0; j < WF_Q8_0_BLCK; j += 4) {
		__m128 v = _mm_loadu_ps(x + j);
		nan = _mm_or_ps(nan, _mm_cmpunord_ps(v, v));
		m = _mm_max_ps(m, _mm_and_ps(v, absm));
	}
	if (_mm_movemask_ps(nan)) {
		for (int j = 0; j < WF_Q8_0_BLCK; j++)
			amax = WF_QMAX(amax, fabsf(x[j]));
		return amax;
	}
	_mm_storeu_ps(a, m);
	for (int k = 0; k < 4; k++)
		amax = WF_QMAX(amax, a[k]);
	return amax;
}

/* Q8_0's 32 quants (int8_t)roundf(x * id), four at a time.  roundf (ties
 * away from zero) is trunc(|v|) + (|v| - trunc(|v|) >= 0.5), both steps
 * exact, with v's sign, for |v| < 2^31; beyond, and for NaN, the scalar
 * cast gives 0x80000000, whose low byte is 0. */
static void q8_sse2(const float *x, float id, uint8_t *qs)
{
	const __m128 vid = _mm_set1_ps(id), half = _mm_set1_ps(0.5f), lim = _mm_set1_ps(2147483648.0f);
	const __m128 absm = _mm_castsi128_ps(_mm_set1_epi32(0x7fffffff));
	const __m128i imin = _mm_set1_epi32(INT32_MIN), lo8 = _mm_set1_epi32(0xff);
	__m128i r[8];

	for (int k = 0; k < 8; k++) {
		__m128 v = _mm_mul_ps(_mm_loadu_ps(x + 4 * k), vid), a = _mm_and_ps(v, absm);
		__m128i t = _mm_cvttps_epi32(a);
		__m128 fr = _mm_sub_ps(a, _mm_cvtepi32_ps(t));
		t = _mm_sub_epi32(t, _mm_castps_si128(_mm_cmpge_ps(fr, half)));
		__m128i neg = _mm_srai_epi32(_mm_castps_si128(v), 31);
		t = _mm_sub_epi32(_mm_xor_si128(t, neg), neg);
		__m128i big = _mm_castps_si128(_mm_cmpnlt_ps(a, lim));
		t = _mm_or_si128(_mm_andnot_si128(big, t), _mm_and_si128(big, imin));
		r[k] = _mm_and_si128(t, lo8);
	}
	for (int h = 0; h < 2; h++)
		_mm_storeu_si128((__m128i *)(qs + 16 * h),
				 _mm_packus_epi16(_mm_packs_epi32(r[4 * h], r[4 * h + 1]),
						  _mm_packs_epi32(r[4 * h + 2], r[4 * h + 3])));
}
#endif

uint16_t wf_quant_f16(float f)
{
	uint32_t u, a;

	memcpy(&u, &f, sizeof u);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
	a = u & 0x7fffffffu;
	if (a > 0x7f800000u)
		return sign | 0x7e00u;
	if (a >= 0x477ff000u) /* from 65520 (a tie, to even) up: infinity */
		return sign | 0x7c00u;
	if (a >= 0x38800000u) { /* normal: rebias, round the 13 dropped bits to even */
		a = a - 0x38000000u;
		a += 0xfffu + ((a >> 13) & 1u);
		return (uint16_t)(sign | (a >> 13));
	}
	if (a <= 0x33000000u) /* at most half the smallest subnormal */
		return sign;
	uint32_t e = a >> 23, m = (a & 0x7fffffu) | 0x800000u, sh = 126 - e;
	uint32_t q = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
	if (rem > half || (rem == half && (q & 1u)))
		q++;
	return (uint16_t)(sign | q);
}

void wf_quant_f32(const float *src, uint8_t *dst, size_t nblocks)
{
	memcpy(dst, src, nblocks * sizeof(float));
}

void wf_quant_f16_n(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++)
		wf_put16(dst + 2 * i, wf_quant_f16(src[i]));
}

/* ggml_compute_fp32_to_bf16: a NaN keeps its top bits and gets the quiet
 * bit, everything else rounds to nearest even (overflowing to infinity). */
void wf_quant_bf16(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t i = 0; i < nblocks; i++) {
		uint32_t u;

		memcpy(&u, &src[i], sizeof u);
		if ((u & 0x7fffffffu) > 0x7f800000u)
			u = (u >> 16) | 0x40u;
		else
			u = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
		wf_put16(dst + 2 * i, (uint16_t)u);
	}
}

/* The signed value of the first largest |x| of n values (0 if all are 0). */
static float signed_absmax(const float *x, int n)
{
	float amax = 0.0f, max = 0.0f;

	for (int j = 0; j < n; j++) {
		if (amax < fabsf(x[j])) {
			amax = fabsf(x[j]);
			max = x[j];
		}
	}
	return max;
}

void wf_quant_q4_0(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_Q4_0_BLCK;
		uint8_t *y = dst + b * WF_Q4_0_BYTES;
		const float d = signed_absmax(x, WF_Q4_0_BLCK) / -8.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;

		wf_put16(y + WF_Q4_0_D, wf_quant_f16(d));
#if defined(__SSE2__)
		/* x - 0 is x, -0 and NaN included: the scalar loop's bytes */
		nibbles_sse2(x, 0.0f, id, 8.5f, y + WF_Q4_0_QS);
#else
		for (int j = 0; j < 16; j++) {
			int8_t a = (int8_t)wf_cvtt(x[j] * id + 8.5f);
			int8_t c = (int8_t)wf_cvtt(x[j + 16] * id + 8.5f);
			uint8_t q0 = (uint8_t)WF_QMIN(15, a), q1 = (uint8_t)WF_QMIN(15, c);

			y[WF_Q4_0_QS + j] = (uint8_t)(q0 | q1 << 4);
		}
#endif
	}
}

void wf_quant_q5_0(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_Q5_0_BLCK;
		uint8_t *y = dst + b * WF_Q5_0_BYTES;
		const float d = signed_absmax(x, WF_Q5_0_BLCK) / -16.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		uint32_t qh = 0;

		wf_put16(y + WF_Q5_0_D, wf_quant_f16(d));
		for (int j = 0; j < 16; j++) {
			int8_t a = (int8_t)wf_cvtt(x[j] * id + 16.5f);
			int8_t c = (int8_t)wf_cvtt(x[j + 16] * id + 16.5f);
			uint8_t q0 = (uint8_t)WF_QMIN(31, a), q1 = (uint8_t)WF_QMIN(31, c);

			y[WF_Q5_0_QS + j] = (uint8_t)((q0 & 15) | (q1 & 15) << 4);
			qh |= (uint32_t)((q0 & 0x10u) >> 4) << j;
			qh |= (uint32_t)((q1 & 0x10u) >> 4) << (j + 16);
		}
		for (int k = 0; k < 4; k++)
			y[WF_Q5_0_QH + k] = (uint8_t)(qh >> 8 * k);
	}
}

/* Q4_1/Q5_1's range: min and max, both strict, from +-FLT_MAX, so NaNs
 * are passed over and the first of equal values wins. */
static void range_of(const float *x, int n, float *mn, float *mx)
{
	float min = FLT_MAX, max = -FLT_MAX;

#if defined(__SSE2__)
	/* minps(v, m) is v < m ? v : m, the scalar step, lane by lane; lanes
	 * and their merge only change which of several equal values wins,
	 * which shows only for +-0: then the first zero is the answer. */
	__m128 vmn = _mm_set1_ps(FLT_MAX), vmx = _mm_set1_ps(-FLT_MAX);
	for (int j = 0; j + 4 <= n; j += 4) {
		__m128 v = _mm_loadu_ps(x + j);
		vmn = _mm_min_ps(v, vmn);
		vmx = _mm_max_ps(v, vmx);
	}
	float a[4], b[4];
	_mm_storeu_ps(a, vmn);
	_mm_storeu_ps(b, vmx);
	for (int k = 0; k < 4; k++) {
		min = a[k] < min ? a[k] : min;
		max = b[k] > max ? b[k] : max;
	}
	for (int j = n & ~3; j < n; j++) {
		min = x[j] < min ? x[j] : min;
		max = x[j] > max ? x[j] : max;
	}
	for (int j = 0; (min == 0 || max == 0) && j < n; j++) {
		if (x[j] == 0) {
			if (min == 0)
				min = x[j];
			if (max == 0)
				max = x[j];
			break;
		}
	}
#else
	for (int j = 0; j < n; j++) {
		if (x[j] < min)
			min = x[j];
		if (x[j] > max)
			max = x[j];
	}
#endif
	*mn = min;
	*mx = max;
}

void wf_quant_q4_1(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_Q4_1_BLCK;
		uint8_t *y = dst + b * WF_Q4_1_BYTES;
		float min, max;

		range_of(x, WF_Q4_1_BLCK, &min, &max);
		const float d = (max - min) / 15.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		wf_put16(y + WF_Q4_1_D, wf_quant_f16(d));
		wf_put16(y + WF_Q4_1_M, wf_quant_f16(min));
#if defined(__SSE2__)
		nibbles_sse2(x, min, id, 0.5f, y + WF_Q4_1_QS);
#else
		for (int j = 0; j < 16; j++) {
			int8_t a = (int8_t)wf_cvtt((x[j] - min) * id + 0.5f);
			int8_t c = (int8_t)wf_cvtt((x[j + 16] - min) * id + 0.5f);
			uint8_t q0 = (uint8_t)WF_QMIN(15, a), q1 = (uint8_t)WF_QMIN(15, c);

			y[WF_Q4_1_QS + j] = (uint8_t)(q0 | q1 << 4);
		}
#endif
	}
}

void wf_quant_q5_1(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_Q5_1_BLCK;
		uint8_t *y = dst + b * WF_Q5_1_BYTES;
		uint32_t qh = 0;
		float min, max;

		range_of(x, WF_Q5_1_BLCK, &min, &max);
		const float d = (max - min) / 31.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		wf_put16(y + WF_Q5_1_D, wf_quant_f16(d));
		wf_put16(y + WF_Q5_1_M, wf_quant_f16(min));
		for (int j = 0; j < 16; j++) {
			/* no clamp here in ggml: a cast to uint8_t */
			uint8_t q0 = (uint8_t)wf_cvtt((x[j] - min) * id + 0.5f);
			uint8_t q1 = (uint8_t)wf_cvtt((x[j + 16] - min) * id + 0.5f);

			y[WF_Q5_1_QS + j] = (uint8_t)((q0 & 15) | (q1 & 15) << 4);
			qh |= (uint32_t)((q0 & 0x10u) >> 4) << j;
			qh |= (uint32_t)((q1 & 0x10u) >> 4) << (j + 16);
		}
		for (int k = 0; k < 4; k++)
			y[WF_Q5_1_QH + k] = (uint8_t)(qh >> 8 * k);
	}
}

void wf_quant_q8_0(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_Q8_0_BLCK;
		uint8_t *y = dst + b * WF_Q8_0_BYTES;
#if defined(__SSE2__)
		const float amax = q8_amax_sse2(x);
#else
		float amax = 0.0f;

		for (int j = 0; j < WF_Q8_0_BLCK; j++)
			amax = WF_QMAX(amax, fabsf(x[j]));
#endif
		const float d = amax / 127.0f;
		const float id = d != 0.0f ? 1.0f / d : 0.0f;
		wf_put16(y + WF_Q8_0_D, wf_quant_f16(d));
#if defined(__SSE2__)
		q8_sse2(x, id, y + WF_Q8_0_QS);
#else
		for (int j = 0; j < WF_Q8_0_BLCK; j++)
			y[WF_Q8_0_QS + j] = (uint8_t)(int8_t)wf_cvtt(roundf(x[j] * id));
#endif
	}
}
