/* wf_quant_x86.c - AVX2 twins of ggml's scale searches: make_qkx2_quants
 * (Q2_K, Q4_K, Q5_K), make_qx_quants (Q6_K) and IQ4's scale tries (IQ4_NL,
 * IQ4_XS), byte-identical with the scalar ones (wf_quant_k.c).
 *
 * ggml tries nstep + 1 scales one after the other, each a sequential sum
 * over the sub-block's values: the order of those sums must stay, so the
 * vector lanes are not values but *tries*: lane s runs try s's own sums in
 * ggml's order, with ggml's roundings (no FMA: this file is built with
 * -ffp-contract=off and only "avx2" as target).  The tries depend on each
 * other only through `min`, which an accepted try replaces: all tries are
 * computed with the current min, scanned in order as ggml would accept
 * them, and after an accepted try that changed min the later tries are
 * computed again with the new one.
 */
#include "codec/wf_quant_int.h"

#ifdef WF_HAVE_X86_SIMD

#include <immintrin.h>
#include <string.h>

#define TGT __attribute__((target("avx2")))
#define NV 3          /* vectors of 8 tries: up to 24 (ggml's Q4_K has 21, Q5_K 16) */
#define NT (8 * NV)

/* One pass: every try's levels (lev[i][s]), its fit and its error, with
 * the given min; ok[s] says whether ggml would look at try s (D > 0). */
struct qk_pass {
	int32_t lev[32][NT];
	float cur[NT], scale[NT], min[NT];
	int32_t ok[NT];
};

TGT static void qk_pass(const struct wf_qkx2 *q, float min, struct qk_pass *p)
{
	const int n = q->n, nmax = q->nmax;
	const float *x = q->x, *w = q->w, max = q->max, rmin = q->rmin, rdelta = q->rdelta;
	const float sum_w = q->sum_w, sum_x = q->sum_x;
	const __m256 absmask = _mm256_castsi256_ps(_mm256_set1_epi32(0x7fffffff));
	float isc[NT];
	__m256 vis[NV], sl[NV], sl2[NV], sxl[NV], tsc[NV], tmn[NV], cur[NV];
	const __m256i mask = _mm256_set1_epi32(0x007fffff), off = _mm256_set1_epi32(0x00400000);
	const __m256i hi = _mm256_set1_epi32(nmax), zero = _mm256_setzero_si256();

	for (int s = 0; s < NT; s++)
		isc[s] = (rmin + rdelta * s + nmax) / (max - min);
	for (int v = 0; v < NV; v++) {
		vis[v] = _mm256_loadu_ps(isc + 8 * v);
		sl[v] = sl2[v] = sxl[v] = cur[v] = _mm256_setzero_ps();
	}
	for (int i = 0; i < n; i++) {
		const __m256 xm = _mm256_set1_ps(x[i] - min), vw = _mm256_set1_ps(w[i]), vx = _mm256_set1_ps(x[i]);
		for (int v = 0; v < NV; v++) {
			__m256 t = _mm256_add_ps(_mm256_mul_ps(vis[v], xm), _mm256_set1_ps(12582912.0f));
			__m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mask), off);
			l = _mm256_max_epi32(zero, _mm256_min_epi32(hi, l));
			_mm256_storeu_si256((__m256i *)(p->lev[i] + 8 * v), l);
			__m256 lf = _mm256_cvtepi32_ps(l), wl = _mm256_mul_ps(vw, lf);
			sl[v] = _mm256_add_ps(sl[v], wl);
			sl2[v] = _mm256_add_ps(sl2[v], _mm256_mul_ps(wl, lf));
			sxl[v] = _mm256_add_ps(sxl[v], _mm256_mul_ps(wl, vx));
		}
	}
	const __m256 vsw = _mm256_set1_ps(sum_w), vsx = _mm256_set1_ps(sum_x), z = _mm256_setzero_ps();
	for (int v = 0; v < NV; v++) {
		__m256 D = _mm256_sub_ps(_mm256_mul_ps(vsw, sl2[v]), _mm256_mul_ps(sl[v], sl[v]));
		__m256 sc = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(vsw, sxl[v]), _mm256_mul_ps(vsx, sl[v])), D);
		__m256 mn = _mm256_div_ps(_mm256_sub_ps(_mm256_mul_ps(sl2[v], vsx), _mm256_mul_ps(sl[v], sxl[v])), D);
		__m256 pos = _mm256_cmp_ps(mn, z, _CMP_GT_OQ);
		tmn[v] = _mm256_blendv_ps(mn, z, pos);
		tsc[v] = _mm256_blendv_ps(sc, _mm256_div_ps(sxl[v], sl2[v]), pos);
		_mm256_storeu_si256((__m256i *)(p->ok + 8 * v), _mm256_castps_si256(_mm256_cmp_ps(D, z, _CMP_GT_OQ)));
	}
	for (int i = 0; i < n; i++) {
		const __m256 vw = _mm256_set1_ps(w[i]), vx = _mm256_set1_ps(x[i]);
		for (int v = 0; v < NV; v++) {
			__m256 lf = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(p->lev[i] + 8 * v)));
			__m256 diff = _mm256_sub_ps(_mm256_add_ps(_mm256_mul_ps(tsc[v], lf), tmn[v]), vx);
			__m256 e = q->use_mad ? _mm256_and_ps(diff, absmask) : _mm256_mul_ps(diff, diff);
			cur[v] = _mm256_add_ps(cur[v], _mm256_mul_ps(vw, e));
		}
	}
	for (int v = 0; v < NV; v++) {
		_mm256_storeu_ps(p->cur + 8 * v, cur[v]);
		_mm256_storeu_ps(p->scale + 8 * v, tsc[v]);
		_mm256_storeu_ps(p->min + 8 * v, tmn[v]);
	}
}

static uint32_t bits(float f)
{
	uint32_t u;

	memcpy(&u, &f, sizeof u);
	return u;
}

TGT float wf_qkx2_search_avx2(const struct wf_qkx2 *q, uint8_t *L, float *min_io, float scale, float best)
{
	struct qk_pass p;
	float min = *min_io;
	int s0 = 0, ns = q->nstep + 1;

	while (s0 < ns) {
		int next = ns;

		qk_pass(q, min, &p);
		for (int s = s0; s < ns; s++) {
			if (!p.ok[s] || !(p.cur[s] < best))
				continue;
			for (int i = 0; i < q->n; i++)
				L[i] = (uint8_t)p.lev[i][s];
			best = p.cur[s];
			scale = p.scale[s];
			float old = min;
			min = p.min[s];
			if (bits(min) != bits(old)) {
				next = s + 1;
				break;
			}
		}
		s0 = next;
	}
	*min_io = min;
	return scale;
}

/* make_qx_quants(n <= 16, nmax, x, L, rmse_type = 1) for Q6_K, with its 19
 * candidate scales (ggml's first guess, then is = -9..9 but 0) in lanes:
 * unlike qkx2's tries they are independent, so one pass computes every
 * candidate's sums (each in ggml's order, weights w = x*x and wx = w*x as
 * the scalar code has them) and the scan takes them in ggml's order. */
TGT float wf_qx_levels_avx2(int n, int nmax, const float *x, const float *w, const float *wx, float max,
			    int8_t *L)
{
	float isc[NT], slx[NT], sl2[NT];
	__m256 vis[NV], a[NV], b[NV];
	const __m256i lo = _mm256_set1_epi32(-nmax), hi = _mm256_set1_epi32(nmax - 1);
	const __m256i mask = _mm256_set1_epi32(0x007fffff), off = _mm256_set1_epi32(0x00400000);

	isc[0] = -nmax / max;
	for (int k = 1; k < NT; k++) {
		int is = k <= 9 ? k - 10 : k - 9; /* -9..-1, 1..9, then unused lanes */
		isc[k] = -(nmax + 0.1f * is) / max;
	}
	for (int v = 0; v < NV; v++) {
		vis[v] = _mm256_loadu_ps(isc + 8 * v);
		a[v] = b[v] = _mm256_setzero_ps();
	}
	for (int i = 0; i < n; i++) {
		const __m256 vx = _mm256_set1_ps(x[i]), vw = _mm256_set1_ps(w[i]), vwx = _mm256_set1_ps(wx[i]);
		for (int v = 0; v < NV; v++) {
			__m256 t = _mm256_add_ps(_mm256_mul_ps(vis[v], vx), _mm256_set1_ps(12582912.0f));
			__m256i l = _mm256_sub_epi32(_mm256_and_si256(_mm256_castps_si256(t), mask), off);
			__m256 lf = _mm256_cvtepi32_ps(_mm256_max_epi32(lo, _mm256_min_epi32(hi, l)));
			a[v] = _mm256_add_ps(a[v], _mm256_mul_ps(vwx, lf));
			b[v] = _mm256_add_ps(b[v], _mm256_mul_ps(_mm256_mul_ps(vw, lf), lf));
		}
	}
	for (int v = 0; v < NV; v++) {
		_mm256_storeu_ps(slx + 8 * v, a[v]);
		_mm256_storeu_ps(sl2 + 8 * v, b[v]);
	}
	float scale = sl2[0] != 0 ? slx[0] / sl2[0] : 0.0f, best = scale * slx[0], iscale = isc[0];
	for (int k = 1; k <= 18; k++) {
		if (sl2[k] > 0 && slx[k] * slx[k] > best * sl2[k]) {
			scale = slx[k] / sl2[k];
			best = scale * slx[k];
			iscale = isc[k];
		}
	}
	for (int i = 0; i < n; i++) {
		int l = wf_nearest(iscale * x[i]);
		L[i] = (int8_t)(WF_QMAX(-nmax, WF_QMIN(nmax - 1, l)) + nmax);
	}
	return scale;
}

/* v[idx] for 8 indices 0..15 of the 16-entry table t. */
TGT static inline __m256 lookup16(__m256 t0, __m256 t1, __m256i idx)
{
	__m256 a = _mm256_permutevar8x32_ps(t0, idx), b = _mm256_permutevar8x32_ps(t1, idx);
	return _mm256_blendv_ps(a, b, _mm256_castsi256_ps(_mm256_cmpgt_epi32(idx, _mm256_set1_epi32(7))));
}

/* The IQ4 value best_index_int8 picks for each lane of al (wf_quant_k.c's
 * iq4_index, lane by lane: the count of table values <= al, then the
 * nearer neighbour; <= v[0] gives v[0], NaN and >= v[15] give v[15]). */
TGT static inline __m256 iq4_value(__m256 al, __m256 t0, __m256 t1, const float *v)
{
	__m256i ml = _mm256_setzero_si256();

	for (int k = 1; k < 15; k++)
		ml = _mm256_sub_epi32(ml, _mm256_castps_si256(_mm256_cmp_ps(al, _mm256_set1_ps(v[k]), _CMP_GE_OQ)));
	__m256 lo = lookup16(t0, t1, ml), hi = lookup16(t0, t1, _mm256_add_epi32(ml, _mm256_set1_epi32(1)));
	__m256 nearer_lo = _mm256_cmp_ps(_mm256_sub_ps(al, lo), _mm256_sub_ps(hi, al), _CMP_LT_OQ);
	__m256 q = _mm256_blendv_ps(hi, lo, nearer_lo);
	q = _mm256_blendv_ps(q, _mm256_set1_ps(v[15]), _mm256_cmp_ps(al, _mm256_set1_ps(v[15]), _CMP_NLT_UQ));
	return _mm256_blendv_ps(q, _mm256_set1_ps(v[0]), _mm256_cmp_ps(al, _mm256_set1_ps(v[0]), _CMP_LE_OQ));
}

/* The scale of one 32-value IQ4 group (wf_quant_k.c's iq4_scale after its
 * zero-group test), its 16 candidates in lanes: ggml's first guess 1/d,
 * then itry = -7..7, each summing (w*q)*x and (w*q)*q in ggml's order. */
TGT float wf_iq4_scale_avx2(const float *x, float max, const float *v)
{
	float ids[16], sqx[16], sq2[16];
	const __m256 t0 = _mm256_loadu_ps(v), t1 = _mm256_loadu_ps(v + 8);
	__m256 vid[2], a[2], b[2];
	float d = -max / v[0];

	ids[0] = 1 / d;
	for (int k = 1; k < 16; k++)
		ids[k] = (float)(k - 8 + (int)v[0]) / max;
	for (int h = 0; h < 2; h++) {
		vid[h] = _mm256_loadu_ps(ids + 8 * h);
		a[h] = b[h] = _mm256_setzero_ps();
	}
	for (int j = 0; j < 32; j++) {
		const __m256 vx = _mm256_set1_ps(x[j]), vw = _mm256_set1_ps(x[j] * x[j]);
		for (int h = 0; h < 2; h++) {
			__m256 q = iq4_value(_mm256_mul_ps(vid[h], vx), t0, t1, v), wq = _mm256_mul_ps(vw, q);
			a[h] = _mm256_add_ps(a[h], _mm256_mul_ps(wq, vx));
			b[h] = _mm256_add_ps(b[h], _mm256_mul_ps(wq, q));
		}
	}
	for (int h = 0; h < 2; h++) {
		_mm256_storeu_ps(sqx + 8 * h, a[h]);
		_mm256_storeu_ps(sq2 + 8 * h, b[h]);
	}
	d = sq2[0] > 0 ? sqx[0] / sq2[0] : 0.0f;
	float best = d * sqx[0];
	for (int k = 1; k < 16; k++) {
		if (sq2[k] > 0 && sqx[k] * sqx[k] > best * sq2[k]) {
			d = sqx[k] / sq2[k];
			best = d * sqx[k];
		}
	}
	return d;
}

#endif /* WF_HAVE_X86_SIMD */
