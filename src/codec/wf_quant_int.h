/* wf_quant_int.h - arithmetic shared by the encoders (wf_quant.c,
 * wf_quant_k.c); private to them.  Each helper reproduces one ggml
 * primitive bit for bit, including what x86-64 does where C leaves the
 * result undefined. */
#ifndef WF_QUANT_INT_H
#define WF_QUANT_INT_H

#include <stdint.h>
#include <string.h>
#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include "codec/wf_decode.h"

/* ggml's fp32 -> fp16 (wf_quant.c, also in wf_quant.h). */
uint16_t wf_quant_f16(float f);

#define WF_QMIN(a, b) ((a) < (b) ? (a) : (b))
#define WF_QMAX(a, b) ((a) > (b) ? (a) : (b))

/* ggml's GROUP_MAX_EPS: a group whose largest |x| is below it is zero. */
#define WF_GROUP_EPS 1e-15f

/* ggml's nearest_int: add 1.5 * 2^23 and read the low mantissa bits,
 * which rounds to nearest even for |f| <= 4194303 and gives fixed garbage
 * beyond (ggml's assert is compiled out; so is ours). */
static inline int wf_nearest(float f)
{
	float v = f + 12582912.0f;
	int32_t i;

	memcpy(&i, &v, sizeof i);
	return (i & 0x007fffff) - 0x00400000;
}

/* A C cast of f to a 32-bit int as x86-64's cvttss2si does it: truncation,
 * and INT32_MIN for NaN and out-of-range values (C calls those undefined;
 * ggml's quants reach them for subnormal scales, where 1/d is infinite).
 * Narrower casts (int8_t, uint8_t) then keep the low byte, as GCC does. */
static inline int32_t wf_cvtt(float f)
{
#if defined(__SSE__)
	return _mm_cvtt_ss2si(_mm_set_ss(f)); /* the instruction itself: defined for every f */
#else
	if (f >= -2147483648.0f && f < 2147483648.0f)
		return (int32_t)f;
	return INT32_MIN;
#endif
}

static inline void wf_put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* A scale as ggml stores it and reads it back (fp16 round trip). */
static inline float wf_f16_round(float f)
{
	return wf_f16_to_f32(wf_quant_f16(f));
}

#ifdef WF_HAVE_X86_SIMD
/* The state make_qkx2_quants' search starts from (wf_quant_k.c's qkx2):
 * n <= 32 values x with weights w, levels 0..nmax, tries 0..nstep < 24. */
struct wf_qkx2 {
	int n, nmax, nstep, use_mad;
	const float *x, *w;
	float max, rmin, rdelta, sum_w, sum_x;
};

/* That search with AVX2, from the first fit's scale and
 * error best and min *min_io: L and *min_io get what ggml's tries leave,
 * the scale is returned (wf_quant_x86.c).  Needs an AVX2 CPU. */
float wf_qkx2_search_avx2(const struct wf_qkx2 *q, uint8_t *L, float *min_io, float scale, float best);

/* make_qx_quants(n <= 16, nmax, x, L, rmse_type = 1) after its zero-group
 * test, with AVX2; w = x*x, wx = w*x; max is the signed largest |x|. */
float wf_qx_levels_avx2(int n, int nmax, const float *x, const float *w, const float *wx, float max,
			int8_t *L);

/* IQ4's scale for 32 values x (not all below the zero threshold; max the
 * signed largest |x|) over the 16 IQ4 values v as floats, with AVX2. */
float wf_iq4_scale_avx2(const float *x, float max, const float *v);
#endif

#endif
