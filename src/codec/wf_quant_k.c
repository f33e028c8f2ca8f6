/* wf_quant_k.c - the super-block encoders: Q2_K Q3_K Q4_K Q5_K Q6_K (ggml's
 * quantize_row_<t>_ref) and IQ4_NL IQ4_XS (quantize_row_iq4_nl_impl with
 * no importance weights, ntry = 7, as ggml_quantize_chunk runs them).
 *
 * The scale searches are ggml's, step for step: every sum accumulates in
 * the same order with the same association ((w*l)*l, never w*(l*l)), ties
 * between candidates go the way ggml's strict comparisons send them, and
 * the final levels are computed from the fp16-rounded scales, as ggml
 * re-reads them.  Integers meet floats where ggml's do (an int times a
 * float is exact here, the sums are not).
 */
#include <math.h>
#include <string.h>

#include "codec/wf_blocks.h"
#include "codec/wf_iq_tables.h"
#include "codec/wf_quant.h"
#include "codec/wf_quant_int.h"

/* ggml's make_qkx2_quants: levels 0..nmax with a min for n values x under
 * weights w (L gets the levels, *the_min the negated min); use_mad scores
 * absolute rather than squared errors; simd runs the search with AVX2
 * (the same result).  Returns the scale. */
static float qkx2(int n, int nmax, const float *x, const float *w, uint8_t *L, float *the_min,
		  float rmin, float rdelta, int nstep, int use_mad, int simd)
{
	float min = x[0], max = x[0], sum_w = w[0], sum_x = sum_w * x[0];
	uint8_t aux[32];

	for (int i = 1; i < n; i++) {
		if (x[i] < min)
			min = x[i];
		if (x[i] > max)
			max = x[i];
		sum_w += w[i];
		sum_x += w[i] * x[i];
	}
	if (min > 0)
		min = 0;
	if (max == min) {
		memset(L, 0, (size_t)n);
		*the_min = -min;
		return 0.0f;
	}
	float iscale = (float)nmax / (max - min), scale = 1.0f / iscale, best = 0;
	for (int i = 0; i < n; i++) {
		int l = wf_nearest(iscale * (x[i] - min));
		L[i] = (uint8_t)WF_QMAX(0, WF_QMIN(nmax, l));
		float diff = scale * L[i] + min - x[i];
		best += w[i] * (use_mad ? fabsf(diff) : diff * diff);
	}
#ifdef WF_HAVE_X86_SIMD
	if (simd && n <= 32 && nstep < 24) {
		const struct wf_qkx2 q = { n, nmax, nstep, use_mad, x, w, max, rmin, rdelta, sum_w, sum_x };
		scale = wf_qkx2_search_avx2(&q, L, &min, scale, best);
		*the_min = -min;
		return scale;
	}
#else
	(void)simd;
#endif
	for (int is = 0; is <= nstep; is++) {
		float sum_l = 0, sum_l2 = 0, sum_xl = 0;

		iscale = (rmin + rdelta * is + nmax) / (max - min);
		for (int i = 0; i < n; i++) {
			int l = wf_nearest(iscale * (x[i] - min));
			l = WF_QMAX(0, WF_QMIN(nmax, l));
			aux[i] = (uint8_t)l;
			sum_l += w[i] * l;
			sum_l2 += w[i] * l * l;
			sum_xl += w[i] * l * x[i];
		}
		float D = sum_w * sum_l2 - sum_l * sum_l;
		if (!(D > 0))
			continue;
		float this_scale = (sum_w * sum_xl - sum_x * sum_l) / D;
		float this_min = (sum_l2 * sum_x - sum_l * sum_xl) / D;
		if (this_min > 0) {
			this_min = 0;
			this_scale = sum_xl / sum_l2;
		}
		float cur = 0;
		for (int i = 0; i < n; i++) {
			float diff = this_scale * aux[i] + this_min - x[i];
			cur += w[i] * (use_mad ? fabsf(diff) : diff * diff);
		}
		if (cur < best) {
			memcpy(L, aux, (size_t)n);
			best = cur;
			scale = this_scale;
			min = this_min;
		}
	}
	*the_min = -min;
	return scale;
}

static void q2_k_block(const float *x, uint8_t *y, int simd)
{
	uint8_t L[WF_QK_K], *sc = y + WF_Q2_K_SCALES;
	float w[16], mins[16], scales[16], max_scale = 0, max_min = 0;

	for (int j = 0; j < 16; j++) {
		for (int l = 0; l < 16; l++)
			w[l] = fabsf(x[16 * j + l]);
		scales[j] = qkx2(16, 3, x + 16 * j, w, L + 16 * j, &mins[j], -0.5f, 0.1f, 15, 1, simd);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	memset(sc, 0, 16);
	wf_put16(y + WF_Q2_K_D, wf_quant_f16(max_scale > 0 ? max_scale / 15.0f : 0.0f));
	wf_put16(y + WF_Q2_K_DMIN, wf_quant_f16(max_min > 0 ? max_min / 15.0f : 0.0f));
	if (max_scale > 0) {
		float iscale = 15.0f / max_scale;
		for (int j = 0; j < 16; j++)
			sc[j] = (uint8_t)wf_nearest(iscale * scales[j]);
	}
	if (max_min > 0) {
		float iscale = 15.0f / max_min;
		for (int j = 0; j < 16; j++)
			sc[j] = (uint8_t)(sc[j] | (unsigned)wf_nearest(iscale * mins[j]) << 4);
	}
	const float d0 = wf_f16_to_f32(wf_le16(y + WF_Q2_K_D));
	const float m0 = wf_f16_to_f32(wf_le16(y + WF_Q2_K_DMIN));
	for (int j = 0; j < 16; j++) {
		const float d = d0 * (sc[j] & 0xF);
		if (d == 0)
			continue;
		const float dm = m0 * (sc[j] >> 4);
		for (int i = 0; i < 16; i++) {
			int l = wf_nearest((x[16 * j + i] + dm) / d);
			L[16 * j + i] = (uint8_t)WF_QMAX(0, WF_QMIN(3, l));
		}
	}
	for (int j = 0; j < WF_QK_K; j += 128)
		for (int l = 0; l < 32; l++)
			y[WF_Q2_K_QS + j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 |
							     L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

void wf_quant_q2_k(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		q2_k_block(src + b * WF_QK_K, dst + b * WF_Q2_K_BYTES, 0);
}

#ifdef WF_HAVE_X86_SIMD
void wf_quant_q2_k_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		q2_k_block(src + b * WF_QK_K, dst + b * WF_Q2_K_BYTES, 1);
}
#endif

/* The signed value of the first largest |x| of n values and that |x|. */
static float absmax(const float *x, int n, float *amax_out)
{
	float amax = 0, max = 0;

	for (int i = 0; i < n; i++) {
		float ax = fabsf(x[i]);
		if (ax > amax) {
			amax = ax;
			max = x[i];
		}
	}
	*amax_out = amax;
	return max;
}

/* ggml's make_q3_quants(n, nmax, x, L, do_rmse = true): signed levels
 * -nmax..nmax-1, refined one element at a time for up to 5 rounds; L gets
 * level + nmax (or 0 for a zero group).  Returns the scale. */
static float q3_levels(int n, int nmax, const float *x, int8_t *L)
{
	float amax, max = absmax(x, n, &amax), sumlx = 0, suml2 = 0;

	if (amax < WF_GROUP_EPS) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	float iscale = -nmax / max;
	for (int i = 0; i < n; i++) {
		int l = wf_nearest(iscale * x[i]);
		l = WF_QMAX(-nmax, WF_QMIN(nmax - 1, l));
		L[i] = (int8_t)l;
		float w = x[i] * x[i];
		sumlx += w * x[i] * l;
		suml2 += w * l * l;
	}
	for (int itry = 0; itry < 5; itry++) {
		int changed = 0;
		for (int i = 0; i < n; i++) {
			float w = x[i] * x[i], slx = sumlx - w * x[i] * L[i];
			if (!(slx > 0))
				continue;
			float sl2 = suml2 - w * L[i] * L[i];
			int nl = wf_nearest(x[i] * sl2 / slx);
			nl = WF_QMAX(-nmax, WF_QMIN(nmax - 1, nl));
			if (nl == L[i])
				continue;
			slx += w * x[i] * nl;
			sl2 += w * nl * nl;
			if (sl2 > 0 && slx * slx * suml2 > sumlx * sumlx * sl2) {
				L[i] = (int8_t)nl;
				sumlx = slx;
				suml2 = sl2;
				changed++;
			}
		}
		if (!changed)
			break;
	}
	for (int i = 0; i < n; i++)
		L[i] = (int8_t)(L[i] + nmax);
	return suml2 > 0.0f ? sumlx / suml2 : 0.0f;
}

/* Q3_K's 16 6-bit scales, packed (low nibbles in bytes 0..7, high pairs in
 * 8..11), and the super-scale. */
static void q3_k_scales(const float *scales, uint8_t *y)
{
	float amax = 0, max_scale = 0;
	uint8_t *s = y + WF_Q3_K_SCALES;

	for (int j = 0; j < 16; j++) {
		if (fabsf(scales[j]) > amax) {
			amax = fabsf(scales[j]);
			max_scale = scales[j];
		}
	}
	memset(s, 0, 12);
	if (max_scale == 0) {
		wf_put16(y + WF_Q3_K_D, wf_quant_f16(0.0f));
		return;
	}
	float iscale = -32.0f / max_scale;
	for (int j = 0; j < 16; j++) {
		int8_t l8 = (int8_t)wf_nearest(iscale * scales[j]);
		int l = WF_QMAX(-32, WF_QMIN(31, l8)) + 32;
		if (j < 8)
			s[j] = (uint8_t)(l & 0xF);
		else
			s[j - 8] = (uint8_t)(s[j - 8] | (l & 0xF) << 4);
		s[j % 4 + 8] = (uint8_t)(s[j % 4 + 8] | (l >> 4) << (2 * (j / 4)));
	}
	wf_put16(y + WF_Q3_K_D, wf_quant_f16(1 / iscale));
}

static void q3_k_block(const float *x, uint8_t *y)
{
	int8_t L[WF_QK_K];
	float scales[16];
	const uint8_t *s = y + WF_Q3_K_SCALES;

	for (int j = 0; j < 16; j++)
		scales[j] = q3_levels(16, 4, x + 16 * j, L + 16 * j);
	q3_k_scales(scales, y);
	const float d0 = wf_f16_to_f32(wf_le16(y + WF_Q3_K_D));
	for (int j = 0; j < 16; j++) {
		int sc = j < 8 ? s[j] & 0xF : s[j - 8] >> 4;
		sc = (sc | ((s[8 + j % 4] >> (2 * (j / 4))) & 3) << 4) - 32;
		const float d = d0 * sc;
		if (d == 0)
			continue;
		for (int i = 0; i < 16; i++) {
			int l = wf_nearest(x[16 * j + i] / d);
			L[16 * j + i] = (int8_t)(WF_QMAX(-4, WF_QMIN(3, l)) + 4);
		}
	}
	uint8_t *hm = y + WF_Q3_K_HMASK;
	memset(hm, 0, WF_QK_K / 8);
	for (int j = 0; j < WF_QK_K; j++) {
		if (L[j] > 3) {
			hm[j % 32] = (uint8_t)(hm[j % 32] | 1u << (j / 32));
			L[j] = (int8_t)(L[j] - 4);
		}
	}
	for (int j = 0; j < WF_QK_K; j += 128)
		for (int l = 0; l < 32; l++)
			y[WF_Q3_K_QS + j / 4 + l] = (uint8_t)(L[j + l] | L[j + l + 32] << 2 |
							     L[j + l + 64] << 4 | L[j + l + 96] << 6);
}

void wf_quant_q3_k(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		q3_k_block(src + b * WF_QK_K, dst + b * WF_Q3_K_BYTES);
}

/* Q4_K and Q5_K (nmax 15 or 31): the shared front half.  Fits the 8
 * sub-blocks, writes d, dmin and the 12 scale bytes at y (both types keep
 * them at the same offsets) and the final levels into L. */
static void k45_levels(const float *x, uint8_t *y, uint8_t *L, int nmax, int simd)
{
	float w[32], mins[8], scales[8], max_scale = 0, max_min = 0;
	uint8_t *s = y + WF_Q4_K_SCALES;

	for (int j = 0; j < 8; j++) {
		const float *xb = x + 32 * j;
		float sum_x2 = 0;
		for (int l = 0; l < 32; l++)
			sum_x2 += xb[l] * xb[l];
		float av_x = sqrtf(sum_x2 / 32);
		for (int l = 0; l < 32; l++)
			w[l] = av_x + fabsf(xb[l]);
		scales[j] = nmax == 15 ? qkx2(32, 15, xb, w, L + 32 * j, &mins[j], -1.0f, 0.1f, 20, 0, simd)
				       : qkx2(32, 31, xb, w, L + 32 * j, &mins[j], -0.5f, 0.1f, 15, 0, simd);
		if (scales[j] > max_scale)
			max_scale = scales[j];
		if (mins[j] > max_min)
			max_min = mins[j];
	}
	float inv_scale = max_scale > 0 ? 63.0f / max_scale : 0.0f;
	float inv_min = max_min > 0 ? 63.0f / max_min : 0.0f;
	for (int j = 0; j < 8; j++) {
		uint8_t ls = (uint8_t)wf_nearest(inv_scale * scales[j]);
		uint8_t lm = (uint8_t)wf_nearest(inv_min * mins[j]);
		ls = WF_QMIN(63, ls);
		lm = WF_QMIN(63, lm);
		if (j < 4) {
			s[j] = ls;
			s[j + 4] = lm;
		} else {
			s[j + 4] = (uint8_t)((ls & 0xF) | (lm & 0xF) << 4);
			s[j - 4] = (uint8_t)(s[j - 4] | (ls >> 4) << 6);
			s[j] = (uint8_t)(s[j] | (lm >> 4) << 6);
		}
	}
	wf_put16(y + WF_Q4_K_D, wf_quant_f16(max_scale / 63.0f));
	wf_put16(y + WF_Q4_K_DMIN, wf_quant_f16(max_min / 63.0f));
	const float d0 = wf_f16_to_f32(wf_le16(y + WF_Q4_K_D));
	const float m0 = wf_f16_to_f32(wf_le16(y + WF_Q4_K_DMIN));
	for (int j = 0; j < 8; j++) {
		int sc, m;
		wf_scale_min_k4(j, s, &sc, &m);
		const float d = d0 * sc;
		if (d == 0)
			continue;
		const float dm = m0 * m;
		for (int i = 0; i < 32; i++) {
			int l = wf_nearest((x[32 * j + i] + dm) / d);
			L[32 * j + i] = (uint8_t)WF_QMAX(0, WF_QMIN(nmax, l));
		}
	}
}

_Static_assert(WF_Q4_K_D == WF_Q5_K_D && WF_Q4_K_DMIN == WF_Q5_K_DMIN &&
	       WF_Q4_K_SCALES == WF_Q5_K_SCALES, "Q4_K and Q5_K share their scale fields");

static void q4_k_run(const float *src, uint8_t *dst, size_t nblocks, int simd)
{
	uint8_t L[WF_QK_K];

	for (size_t b = 0; b < nblocks; b++) {
		uint8_t *y = dst + b * WF_Q4_K_BYTES, *q = y + WF_Q4_K_QS;

		k45_levels(src + b * WF_QK_K, y, L, 15, simd);
		for (int j = 0; j < WF_QK_K; j += 64, q += 32)
			for (int l = 0; l < 32; l++)
				q[l] = (uint8_t)(L[j + l] | L[j + l + 32] << 4);
	}
}

static void q5_k_run(const float *src, uint8_t *dst, size_t nblocks, int simd)
{
	uint8_t L[WF_QK_K];

	for (size_t b = 0; b < nblocks; b++) {
		uint8_t *y = dst + b * WF_Q5_K_BYTES, *qh = y + WF_Q5_K_QH, *ql = y + WF_Q5_K_QS;
		uint8_t m1 = 1, m2 = 2;

		k45_levels(src + b * WF_QK_K, y, L, 31, simd);
		memset(qh, 0, WF_QK_K / 8);
		for (int n = 0; n < WF_QK_K; n += 64, ql += 32) {
			for (int j = 0; j < 32; j++) {
				int l1 = L[n + j], l2 = L[n + j + 32];
				if (l1 > 15) {
					l1 -= 16;
					qh[j] |= m1;
				}
				if (l2 > 15) {
					l2 -= 16;
					qh[j] |= m2;
				}
				ql[j] = (uint8_t)(l1 | l2 << 4);
			}
			m1 = (uint8_t)(m1 << 2);
			m2 = (uint8_t)(m2 << 2);
		}
	}
}

void wf_quant_q4_k(const float *src, uint8_t *dst, size_t nblocks)
{
	q4_k_run(src, dst, nblocks, 0);
}

void wf_quant_q5_k(const float *src, uint8_t *dst, size_t nblocks)
{
	q5_k_run(src, dst, nblocks, 0);
}

#ifdef WF_HAVE_X86_SIMD
void wf_quant_q4_k_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	q4_k_run(src, dst, nblocks, 1);
}

void wf_quant_q5_k_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	q5_k_run(src, dst, nblocks, 1);
}
#endif

/* The sums ggml's make_qx_quants scores a candidate iscale by, with its
 * weights x*x: sumlx adds (w*x)*l and suml2 (w*l)*l, so w = x*x and
 * wx = w*x can be computed once per group with the same roundings.  Levels
 * + nmax (clamped to -nmax..nmax-1) go to L if given. */
static void qx_sums(int n, int nmax, const float *x, const float *w, const float *wx, float iscale,
		    int8_t *L, float *sumlx, float *suml2)
{
	float a = 0, b = 0;

	for (int i = 0; i < n; i++) {
		int l = wf_nearest(iscale * x[i]);
		l = WF_QMAX(-nmax, WF_QMIN(nmax - 1, l));
		if (L)
			L[i] = (int8_t)(l + nmax);
		a += wx[i] * l;
		b += w[i] * l * l;
	}
	*sumlx = a;
	*suml2 = b;
}

/* ggml's make_qx_quants(n <= 16, nmax, x, L, rmse_type = 1, qw = NULL);
 * simd: its AVX2 twin (the same result). */
static float qx_levels(int n, int nmax, const float *x, int8_t *L, int simd)
{
	float amax, max = absmax(x, n, &amax), sumlx, suml2, w[16], wx[16];

	if (amax < WF_GROUP_EPS) {
		memset(L, 0, (size_t)n);
		return 0.0f;
	}
	for (int i = 0; i < n; i++) {
		w[i] = x[i] * x[i];
		wx[i] = w[i] * x[i];
	}
#ifdef WF_HAVE_X86_SIMD
	if (simd)
		return wf_qx_levels_avx2(n, nmax, x, w, wx, max, L);
#else
	(void)simd;
#endif
	qx_sums(n, nmax, x, w, wx, -nmax / max, L, &sumlx, &suml2);
	float scale = suml2 != 0 ? sumlx / suml2 : 0.0f, best = scale * sumlx;
	for (int is = -9; is <= 9; is++) {
		if (is == 0)
			continue;
		float iscale = -(nmax + 0.1f * is) / max;
		qx_sums(n, nmax, x, w, wx, iscale, NULL, &sumlx, &suml2);
		if (suml2 > 0 && sumlx * sumlx > best * suml2) {
			for (int i = 0; i < n; i++) {
				int l = wf_nearest(iscale * x[i]);
				L[i] = (int8_t)(WF_QMAX(-nmax, WF_QMIN(nmax - 1, l)) + nmax);
			}
			scale = sumlx / suml2;
			best = scale * sumlx;
		}
	}
	return scale;
}

static void q6_k_block(const float *x, uint8_t *y, int simd)
{
	int8_t L[WF_QK_K];
	float scales[16], max_scale = 0, max_abs = 0;

	for (int ib = 0; ib < 16; ib++) {
		scales[ib] = qx_levels(16, 32, x + 16 * ib, L + 16 * ib, simd);
		if (fabsf(scales[ib]) > max_abs) {
			max_abs = fabsf(scales[ib]);
			max_scale = scales[ib];
		}
	}
	if (max_abs < WF_GROUP_EPS) {
		memset(y, 0, WF_Q6_K_BYTES);
		return;
	}
	float iscale = -128.0f / max_scale;
	int8_t *sc = (int8_t *)(y + WF_Q6_K_SCALES);
	wf_put16(y + WF_Q6_K_D, wf_quant_f16(1 / iscale));
	for (int ib = 0; ib < 16; ib++)
		sc[ib] = (int8_t)WF_QMIN(127, wf_nearest(iscale * scales[ib]));
	const float d0 = wf_f16_to_f32(wf_le16(y + WF_Q6_K_D));
	for (int j = 0; j < 16; j++) {
		const float d = d0 * sc[j];
		if (d == 0)
			continue;
		for (int i = 0; i < 16; i++) {
			int l = wf_nearest(x[16 * j + i] / d);
			L[16 * j + i] = (int8_t)(WF_QMAX(-32, WF_QMIN(31, l)) + 32);
		}
	}
	uint8_t *ql = y + WF_Q6_K_QL, *qh = y + WF_Q6_K_QH;
	for (int j = 0; j < WF_QK_K; j += 128, ql += 64, qh += 32) {
		for (int l = 0; l < 32; l++) {
			int a = L[j + l], b = L[j + l + 32], c = L[j + l + 64], e = L[j + l + 96];
			ql[l] = (uint8_t)((a & 0xF) | (c & 0xF) << 4);
			ql[l + 32] = (uint8_t)((b & 0xF) | (e & 0xF) << 4);
			qh[l] = (uint8_t)(a >> 4 | (b >> 4) << 2 | (c >> 4) << 4 | (e >> 4) << 6);
		}
	}
}

void wf_quant_q6_k(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		q6_k_block(src + b * WF_QK_K, dst + b * WF_Q6_K_BYTES, 0);
}

#ifdef WF_HAVE_X86_SIMD
void wf_quant_q6_k_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		q6_k_block(src + b * WF_QK_K, dst + b * WF_Q6_K_BYTES, 1);
}
#endif

/* ggml's best_index_int8 over the 16 IQ4 values: the nearest, the lower
 * one unless the upper is strictly nearer.  ggml's binary search ends at
 * the last value <= x; counting those values finds the same one without
 * its unpredictable branches.  A NaN ends that search at 15. */
/* wf_kvalues_iq4nl as floats (check_quant's digests would see a typo) */
static const float iq4_v[16] = { -127, -104, -83, -65, -49, -35, -22, -10,
				 1, 13, 25, 38, 53, 69, 89, 113 };

static inline int iq4_index(float x)
{
	const float *v = iq4_v;
	int ml = 0;

	if (x <= v[0])
		return 0;
	if (!(x < v[15]))
		return 15; /* x >= v[15], or NaN */
	for (int k = 1; k < 15; k++)
		ml += x >= v[k];
	return x - v[ml] < v[ml + 1] - x ? ml : ml + 1;
}

/* The sums an IQ4 scale candidate id is scored by (weights x*x). */
static void iq4_sums(const float *x, float id, float *sumqx, float *sumq2)
{
	float a = 0, b = 0;

	for (int j = 0; j < 32; j++) {
		float q = wf_kvalues_iq4nl[iq4_index(id * x[j])], w = x[j] * x[j];
		a += w * q * x[j];
		b += w * q * q;
	}
	*sumqx = a;
	*sumq2 = b;
}

/* The scale of one 32-value IQ4 group (quantize_row_iq4_nl_impl's first
 * pass with ntry = 7, no importance weights); 0 for a zero group. */
static float iq4_scale(const float *x, int simd)
{
	float amax, max = absmax(x, 32, &amax), sumqx, sumq2;

	if (amax < WF_GROUP_EPS)
		return 0.0f;
#ifdef WF_HAVE_X86_SIMD
	if (simd)
		return wf_iq4_scale_avx2(x, max, iq4_v);
#else
	(void)simd;
#endif
	float d = -max / wf_kvalues_iq4nl[0];
	iq4_sums(x, 1 / d, &sumqx, &sumq2);
	d = sumq2 > 0 ? sumqx / sumq2 : 0.0f;
	float best = d * sumqx;
	for (int itry = -7; itry <= 7; itry++) {
		float id = (float)(itry + wf_kvalues_iq4nl[0]) / max;
		iq4_sums(x, id, &sumqx, &sumq2);
		if (sumq2 > 0 && sumqx * sumqx > best * sumq2) {
			d = sumqx / sumq2;
			best = d * sumqx;
		}
	}
	return d;
}

/* 32 values as IQ4 indices under reciprocal scale id, packed in 16 bytes
 * (value j in the low nibble, j + 16 in the high one). */
static void iq4_pack(const float *x, float id, uint8_t *q)
{
	for (int j = 0; j < 16; j++)
		q[j] = (uint8_t)(iq4_index(id * x[j]) | iq4_index(id * x[j + 16]) << 4);
}

static void iq4_nl_run(const float *src, uint8_t *dst, size_t nblocks, int simd)
{
	for (size_t b = 0; b < nblocks; b++) {
		const float *x = src + b * WF_IQ4_NL_BLCK;
		uint8_t *y = dst + b * WF_IQ4_NL_BYTES;
		float d = iq4_scale(x, simd);

		wf_put16(y + WF_IQ4_NL_D, wf_quant_f16(d));
		iq4_pack(x, d != 0 ? 1 / d : 0, y + WF_IQ4_NL_QS);
	}
}

static void iq4_xs_block(const float *x, uint8_t *y, int simd)
{
	float scales[8], max_scale = 0, amax = 0;
	uint8_t *sl = y + WF_IQ4_XS_SCALES_L;
	unsigned sh = 0;

	for (int ib = 0; ib < 8; ib++) {
		scales[ib] = iq4_scale(x + 32 * ib, simd);
		if (fabsf(scales[ib]) > amax) {
			amax = fabsf(scales[ib]);
			max_scale = scales[ib];
		}
	}
	const float d = -max_scale / 32;
	const float id = d != 0 ? 1 / d : 0.0f;
	wf_put16(y + WF_IQ4_XS_D, wf_quant_f16(d));
	for (int ib = 0; ib < 8; ib++) {
		int l = wf_nearest(id * scales[ib]);
		l = WF_QMAX(-32, WF_QMIN(31, l));
		float dl = d * l;
		iq4_pack(x + 32 * ib, dl != 0 ? 1 / dl : 0.0f, y + WF_IQ4_XS_QS + 16 * ib);
		l += 32;
		if (ib % 2 == 0)
			sl[ib / 2] = (uint8_t)(l & 0xF);
		else
			sl[ib / 2] = (uint8_t)(sl[ib / 2] | (l & 0xF) << 4);
		sh |= (unsigned)(l >> 4) << 2 * (ib % 8);
	}
	wf_put16(y + WF_IQ4_XS_SCALES_H, (uint16_t)sh);
}

void wf_quant_iq4_nl(const float *src, uint8_t *dst, size_t nblocks)
{
	iq4_nl_run(src, dst, nblocks, 0);
}

void wf_quant_iq4_xs(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		iq4_xs_block(src + b * WF_QK_K, dst + b * WF_IQ4_XS_BYTES, 0);
}

#ifdef WF_HAVE_X86_SIMD
void wf_quant_iq4_nl_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	iq4_nl_run(src, dst, nblocks, 1);
}

void wf_quant_iq4_xs_avx2(const float *src, uint8_t *dst, size_t nblocks)
{
	for (size_t b = 0; b < nblocks; b++)
		iq4_xs_block(src + b * WF_QK_K, dst + b * WF_IQ4_XS_BYTES, 1);
}
#endif
