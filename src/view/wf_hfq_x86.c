/* wf_hfq_x86.c - AVX2 twins of the quantized-layer decoders of wf_hfq.c
 * (FP8, GPTQ 2/3/4/8 bits, AWQ, MLX affine 2-6/8 bits, bitsandbytes NF4/FP4
 * and 8-bit)
 * and the choice between them and the scalar ones (wf_hfq_simd.h).
 *
 * Exactness: each lane does the scalar decoder's float32 operations in its
 * order: an exact int -> float conversion, then the same multiply (and
 * subtraction or addition), one rounding each.  The target is "avx2"
 * without "fma" and the Makefile builds this file with -ffp-contract=off,
 * so nothing is fused.  Scales, zeros and absmax values are converted by
 * the same scalar code the reference uses, once per group (not per element),
 * and table lookups (e4m3 codes, NF4/FP4 codes, act-order groups) only move
 * values.  What a vector step cannot take (the columns before the first
 * multiple of 8, the last few, a group size that is not a multiple of 8, a
 * table that would be too big) goes to the scalar decoder itself, so the
 * twin is the reference there by construction.
 *
 * Like src/codec/wf_decode_x86.c, the file compiles for baseline x86-64:
 * only the functions carry the target attribute, and wf_hfq_decoder picks
 * them only when wf_simd_active() (AVX2 and F16C present, not switched
 * off).  On other architectures only the choice is compiled.
 */
#include "view/wf_hfq_simd.h"
#include "view/wf_hfq.h"
#include "codec/wf_decode.h"
#include "codec/wf_types.h"

#include <string.h>

#ifdef WF_HAVE_X86_SIMD

#include <immintrin.h>

#define TGT __attribute__((target("avx2")))

/* Groups whose zero and scale one call tabulates (GPTQ act-order). */
#define GPTQ_TABLE 1024

/* The reference for [col, col+n) of row; nothing when n is 0. */
static void scalar(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	if (n)
		wf_hfq_scheme(q->scheme)->decode(q, row, col, n, dst);
}

/* The 8 fields (bits <= 8 wide) in the low 8 * bits bits of v, field j in
 * lane j: fields 0-3 from the low 32 bits, 4-7 from the 32 after 4 * bits. */
static inline TGT __m256i fields8(uint64_t v, unsigned bits, __m256i shifts, __m256i mask)
{
	int lo = (int)(uint32_t)v, hi = (int)(uint32_t)(v >> (4 * bits));
	__m256i x = bits <= 4 ? _mm256_set1_epi32(lo) : _mm256_set_epi32(hi, hi, hi, hi, lo, lo, lo, lo);
	return _mm256_and_si256(_mm256_srlv_epi32(x, shifts), mask);
}

/* fields8's shift of each lane: up to 4 bits all 8 fields are in one
 * 32-bit word; above, two words of 4 fields each. */
static inline TGT __m256i field_shifts(unsigned bits)
{
	int b = (int)bits;
	if (bits <= 4)
		return _mm256_set_epi32(7 * b, 6 * b, 5 * b, 4 * b, 3 * b, 2 * b, b, 0);
	return _mm256_set_epi32(3 * b, 2 * b, b, 0, 3 * b, 2 * b, b, 0);
}

/* ---------------------------------------------------------------- FP8 */

/* The e4m3 codes of 8 bytes as floats, without a table lookup per lane:
 * a normal code's float32 bits are its 7 magnitude bits shifted to the
 * top of the mantissa plus the exponent's rebias (120 << 23); the 8 codes
 * below the normals (zero, subnormals) and the two NaNs are taken from the
 * table itself.  check_hfq_simd compares all 256 codes with the table. */
static inline TGT __m256 e4m3x8(const float *e4m3, __m128i bytes)
{
	__m256i c = _mm256_cvtepu8_epi32(bytes), m = _mm256_and_si256(c, _mm256_set1_epi32(0x7f));
	__m256i normal = _mm256_add_epi32(_mm256_slli_epi32(m, 20), _mm256_set1_epi32(120 << 23));
	__m256 small = _mm256_permutevar8x32_ps(_mm256_loadu_ps(e4m3), m);
	__m256 mag = _mm256_blendv_ps(_mm256_castsi256_ps(normal), small,
				      _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(8), m)));
	__m256i sign = _mm256_slli_epi32(_mm256_and_si256(c, _mm256_set1_epi32(0x80)), 24);
	__m256 v = _mm256_or_ps(mag, _mm256_castsi256_ps(sign));
	__m256 nan = _mm256_blendv_ps(_mm256_set1_ps(e4m3[0x7f]), _mm256_set1_ps(e4m3[0xff]), _mm256_castsi256_ps(sign));
	return _mm256_blendv_ps(v, nan, _mm256_castsi256_ps(_mm256_cmpeq_epi32(m, _mm256_set1_epi32(0x7f))));
}

static TGT void fp8_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *s = &q->part[WF_HFQ_FP8_S];
	const uint8_t *src = q->part[WF_HFQ_FP8_W].p + row * q->in + col;
	const float *e4m3 = wf_hfq_e4m3_table();
	uint64_t srow = (row / q->bh) * s->cols;
	size_t i = 0;
	while (i < n) {
		uint64_t blk = (col + i) / q->bw, end = (blk + 1) * q->bw - col;
		size_t stop = end < n ? (size_t)end : n;
		float sc = wf_hfq_part_float(s, srow + blk);
		__m256 vs = _mm256_set1_ps(sc);
		for (; i + 8 <= stop; i += 8) {
			__m256 w = e4m3x8(e4m3, _mm_loadl_epi64((const __m128i *)(src + i)));
			_mm256_storeu_ps(dst + i, _mm256_mul_ps(w, vs));
		}
		for (; i < stop; i++)
			dst[i] = e4m3[src[i]] * sc;
	}
}

/* --------------------------------------------------------------- GPTQ */

/* Inputs i .. i+7 (i a multiple of 8) of the column stream colp. */
static inline TGT __m256i gptq_fields(const uint8_t *colp, uint64_t stride, uint64_t i, unsigned bits,
				      __m256i shifts, __m256i mask)
{
	uint64_t bit = i * bits, w = bit >> 5;
	unsigned s0 = (unsigned)(bit & 31);
	uint64_t v = wf_le32(colp + w * stride);
	if (s0 + 8 * bits > 32) /* then word w+1 holds some of these fields */
		v |= (uint64_t)wf_le32(colp + (w + 1) * stride) << 32;
	return fields8(v >> s0, bits, shifts, mask);
}

static TGT void gptq_body(const struct wf_hfq *q, uint64_t row, uint64_t a, uint64_t b, uint64_t g0,
			  const int32_t *zs, const float *ss, float *dst)
{
	const uint8_t *colp = q->part[WF_HFQ_GPTQ_QW].p + row * 4, *gi = q->part[WF_HFQ_GPTQ_GI].p;
	uint64_t stride = q->out * 4;
	__m256i shifts = field_shifts(q->bits), mask = _mm256_set1_epi32((int)((1u << q->bits) - 1));
	for (uint64_t i = a; i < b; i += 8, dst += 8) {
		__m256i v = gptq_fields(colp, stride, i, q->bits, shifts, mask), z;
		__m256 s;
		if (gi) { /* act-order: every input its own group */
			__m256i g = _mm256_loadu_si256((const __m256i *)(gi + 4 * i));
			z = _mm256_i32gather_epi32((const int *)zs, g, 4);
			s = _mm256_i32gather_ps(ss, g, 4);
		} else { /* group % 8 == 0: the 8 inputs share one group */
			uint64_t g = i / q->group - g0;
			z = _mm256_set1_epi32(zs[g]);
			s = _mm256_set1_ps(ss[g]);
		}
		_mm256_storeu_ps(dst, _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
	}
}

static TGT void gptq_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *sc = &q->part[WF_HFQ_GPTQ_SC];
	bool act = q->part[WF_HFQ_GPTQ_GI].p != NULL;
	uint64_t end = col + n, a = (col + 7) / 8 * 8, b = end / 8 * 8;
	/* a table of every group costs more than it saves on a short piece */
	if (a >= b || (act && (q->groups > GPTQ_TABLE || q->groups > n)) || (!act && q->group % 8)) {
		scalar(q, row, col, n, dst);
		return;
	}
	uint64_t g0 = act ? 0 : a / q->group, g1 = act ? q->groups : (b - 1) / q->group + 1;
	if (g1 - g0 > GPTQ_TABLE) {
		scalar(q, row, col, n, dst);
		return;
	}
	int32_t zs[GPTQ_TABLE];
	float ss[GPTQ_TABLE];
	for (uint64_t g = g0; g < g1; g++) {
		zs[g - g0] = wf_hfq_gptq_zero(q, g, row);
		ss[g - g0] = wf_hfq_part_float(sc, g * q->out + row);
	}
	scalar(q, row, col, (size_t)(a - col), dst);
	gptq_body(q, row, a, b, g0, zs, ss, dst + (a - col));
	scalar(q, row, b, (size_t)(end - b), dst + (b - col));
}

/* ---------------------------------------------------------------- AWQ */

/* Nibble of the word holding column 8w + j (AWQ_REVERSE_ORDER, wf_hfq.c). */
static const uint8_t awq_nibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static TGT void awq_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_AWQ_QW], *qz = &q->part[WF_HFQ_AWQ_QZ];
	const struct wf_hfq_part *sc = &q->part[WF_HFQ_AWQ_SC];
	uint64_t wcols = q->out / 8, w = row / 8, end = col + n, a = (col + 7) / 8 * 8, b = end / 8 * 8;
	if (a >= b || q->group % 8 || wcols > INT32_MAX / 8) {
		scalar(q, row, col, n, dst);
		return;
	}
	unsigned sh = 4u * awq_nibble[row % 8];
	int st = (int)wcols;
	/* input i's word of this row is wcols words after input i-1's */
	__m256i idx = _mm256_set_epi32(7 * st, 6 * st, 5 * st, 4 * st, 3 * st, 2 * st, st, 0);
	__m256i m15 = _mm256_set1_epi32(15), z = _mm256_setzero_si256();
	__m128i cnt = _mm_cvtsi32_si128((int)sh);
	__m256 s = _mm256_setzero_ps();
	uint64_t last_g = UINT64_MAX;
	scalar(q, row, col, (size_t)(a - col), dst);
	for (uint64_t i = a; i < b; i += 8) {
		uint64_t g = i / q->group; /* group % 8 == 0: one group for the 8 */
		if (g != last_g) {
			z = _mm256_set1_epi32((int32_t)((wf_le32(qz->p + (g * wcols + w) * 4) >> sh) & 15));
			s = _mm256_set1_ps(wf_hfq_part_float(sc, g * q->out + row));
			last_g = g;
		}
		const int *base = (const int *)(qw->p + (i * wcols + w) * 4);
		__m256i v = _mm256_and_si256(_mm256_srl_epi32(_mm256_i32gather_epi32(base, idx, 4), cnt), m15);
		_mm256_storeu_ps(dst + (i - col), _mm256_mul_ps(_mm256_cvtepi32_ps(_mm256_sub_epi32(v, z)), s));
	}
	scalar(q, row, b, (size_t)(end - b), dst + (b - col));
}

/* ---------------------------------------------------------------- MLX */

/* Values [i, end) of one group (i a multiple of 8, 8 bytes readable at
 * each step): q * s + b, a product then a sum, as the scalar code. */
static inline TGT void mlx_group(const uint8_t *rowp, uint64_t i, uint64_t end, unsigned bits, float s, float b,
				 float *dst)
{
	__m256i shifts = field_shifts(bits), mask = _mm256_set1_epi32((int)((1u << bits) - 1));
	__m256 vs = _mm256_set1_ps(s), vb = _mm256_set1_ps(b);
	for (; i < end; i += 8, dst += 8) {
		/* 8 values from input i are the `bits` bytes from byte
		 * i * bits / 8 of the row's little-endian stream */
		uint64_t v;
		memcpy(&v, rowp + i * bits / 8, 8);
		__m256 qs = _mm256_mul_ps(_mm256_cvtepi32_ps(fields8(v, bits, shifts, mask)), vs);
		_mm256_storeu_ps(dst, _mm256_add_ps(qs, vb));
	}
}

static TGT void mlx_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_MLX_W], *sc = &q->part[WF_HFQ_MLX_S];
	const struct wf_hfq_part *bi = &q->part[WF_HFQ_MLX_B];
	uint64_t end = col + n, a = (col + 7) / 8 * 8, b = end / 8 * 8;
	/* the last 8-byte load must stay inside the row: inputs from
	 * (rowbytes - 8) * 8 / bits on go to the scalar code */
	uint64_t rowbytes = w->cols * 4, safe = rowbytes >= 8 ? (rowbytes - 8) * 8 / q->bits / 8 * 8 + 8 : 0;
	if (b > safe)
		b = safe;
	if (a >= b || q->group % 8) {
		scalar(q, row, col, n, dst);
		return;
	}
	const uint8_t *rowp = w->p + row * rowbytes;
	uint64_t gbase = row * sc->cols;
	scalar(q, row, col, (size_t)(a - col), dst);
	for (uint64_t i = a; i < b;) {
		uint64_t g = i / q->group, gend = (g + 1) * q->group < b ? (g + 1) * q->group : b;
		mlx_group(rowp, i, gend, q->bits, wf_hfq_part_float(sc, gbase + g), wf_hfq_part_float(bi, gbase + g), dst + (i - col));
		i = gend;
	}
	scalar(q, row, b, (size_t)(end - b), dst + (b - col));
}

/* ---------------------------------------------------------------- bnb */

static TGT void bnb_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const uint8_t *wp = q->part[WF_HFQ_BNB_W].p;
	/* element k = row * in + col is what the stream and the blocks count */
	uint64_t k0 = row * q->in + col, ke = k0 + n, ka = (k0 + 7) / 8 * 8, kb = ke / 8 * 8;
	if (ka >= kb || q->block % 8) {
		scalar(q, row, col, n, dst);
		return;
	}
	float code[16];
	for (int c = 0; c < 16; c++)
		code[c] = wf_hfq_part_float(&q->part[WF_HFQ_BNB_MAP], (uint64_t)c);
	__m256 lo = _mm256_loadu_ps(code), hi = _mm256_loadu_ps(code + 8), a = _mm256_setzero_ps();
	/* element 2m in the high nibble of byte m, 2m+1 in the low one */
	__m256i shifts = _mm256_set_epi32(24, 28, 16, 20, 8, 12, 0, 4), m15 = _mm256_set1_epi32(15);
	uint64_t last_j = UINT64_MAX;
	scalar(q, row, col, (size_t)(ka - k0), dst);
	for (uint64_t k = ka; k < kb; k += 8) {
		uint64_t j = k / q->block; /* block % 8 == 0: one absmax for the 8 */
		if (j != last_j) {
			a = _mm256_set1_ps(wf_hfq_bnb_absmax(q, j));
			last_j = j;
		}
		__m256i c = _mm256_set1_epi32((int)wf_le32(wp + k / 2));
		c = _mm256_and_si256(_mm256_srlv_epi32(c, shifts), m15);
		/* code[c]: the low 3 bits pick within each half, bit 3 the half */
		__m256 v = _mm256_blendv_ps(_mm256_permutevar8x32_ps(lo, c), _mm256_permutevar8x32_ps(hi, c),
					    _mm256_castsi256_ps(_mm256_slli_epi32(c, 28)));
		_mm256_storeu_ps(dst + (k - k0), _mm256_mul_ps(v, a));
	}
	scalar(q, row, col + (kb - k0), (size_t)(ke - kb), dst + (kb - k0));
}

/* -------------------------------------------------------------- bnb8 */

/* LLM.int8 rows: each lane the scalar decoder's two products in its order,
 * the int8 value (exact as a float) times the row's SCB, rounded, then
 * times float32(1/127), rounded.  Only one operand of each can be a NaN
 * (SCB), so even NaN payloads match the scalar decoder's. */
static TGT void bnb8_avx2(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const uint8_t *src = q->part[WF_HFQ_BNB8_W].p + row * q->in + col;
	uint32_t u = wf_le32(q->part[WF_HFQ_BNB8_SCB].p + 4 * row);
	float scb;
	memcpy(&scb, &u, 4);
	__m256 vs = _mm256_set1_ps(scb), vk = _mm256_set1_ps(WF_HFQ_BNB8_INV127);
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256i c = _mm256_cvtepi8_epi32(_mm_loadl_epi64((const __m128i *)(src + i)));
		__m256 a = _mm256_mul_ps(_mm256_cvtepi32_ps(c), vs);
		_mm256_storeu_ps(dst + i, _mm256_mul_ps(a, vk));
	}
	scalar(q, row, col + i, n - i, dst + i);
}

/* ------------------------------------------------ eight rows at a time */

/* Stores the transpose of r[0..7] (8 x 8): row k of dst (dst + k * ld)
 * gets lane k of every r[j].  Shuffles only move values, bits unchanged. */
static inline TGT void store_t8(const __m256 r[8], float *dst, size_t ld)
{
	__m256 t0 = _mm256_unpacklo_ps(r[0], r[1]), t1 = _mm256_unpackhi_ps(r[0], r[1]);
	__m256 t2 = _mm256_unpacklo_ps(r[2], r[3]), t3 = _mm256_unpackhi_ps(r[2], r[3]);
	__m256 t4 = _mm256_unpacklo_ps(r[4], r[5]), t5 = _mm256_unpackhi_ps(r[4], r[5]);
	__m256 t6 = _mm256_unpacklo_ps(r[6], r[7]), t7 = _mm256_unpackhi_ps(r[6], r[7]);
	__m256 u0 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 u1 = _mm256_shuffle_ps(t0, t2, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 u2 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 u3 = _mm256_shuffle_ps(t1, t3, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 u4 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 u5 = _mm256_shuffle_ps(t4, t6, _MM_SHUFFLE(3, 2, 3, 2));
	__m256 u6 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(1, 0, 1, 0));
	__m256 u7 = _mm256_shuffle_ps(t5, t7, _MM_SHUFFLE(3, 2, 3, 2));
	_mm256_storeu_ps(dst, _mm256_permute2f128_ps(u0, u4, 0x20));
	_mm256_storeu_ps(dst + ld, _mm256_permute2f128_ps(u1, u5, 0x20));
	_mm256_storeu_ps(dst + 2 * ld, _mm256_permute2f128_ps(u2, u6, 0x20));
	_mm256_storeu_ps(dst + 3 * ld, _mm256_permute2f128_ps(u3, u7, 0x20));
	_mm256_storeu_ps(dst + 4 * ld, _mm256_permute2f128_ps(u0, u4, 0x31));
	_mm256_storeu_ps(dst + 5 * ld, _mm256_permute2f128_ps(u1, u5, 0x31));
	_mm256_storeu_ps(dst + 6 * ld, _mm256_permute2f128_ps(u2, u6, 0x31));
	_mm256_storeu_ps(dst + 7 * ld, _mm256_permute2f128_ps(u3, u7, 0x31));
}

/* Rows [row, row+8), inputs [col, a) and [b, col+n), one row at a time. */
static void rows8_edges(wf_hfq_decode_fn one, const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n,
			uint64_t a, uint64_t b, float *dst, size_t ld)
{
	for (unsigned r = 0; r < 8; r++) {
		if (a >= b) {
			one(q, row + r, col, n, dst + r * ld);
			continue;
		}
		scalar(q, row + r, col, (size_t)(a - col), dst + r * ld);
		scalar(q, row + r, b, (size_t)(col + n - b), dst + r * ld + (b - col));
	}
}

/* Groups a GPTQ tile tabulates (8 zeros and 8 scales each). */
#define R8_GROUPS 256

/* Input k of the 8 outputs whose column words start at colp: bits-wide
 * fields of one 32-byte load (two when the field straddles words). */
static inline TGT __m256i gptq_col8(const uint8_t *colp, uint64_t stride, uint64_t k, unsigned bits, __m256i mask)
{
	uint64_t bit = k * bits, w = bit >> 5;
	unsigned sh = (unsigned)(bit & 31);
	__m256i v = _mm256_srl_epi32(_mm256_loadu_si256((const __m256i *)(colp + w * stride)), _mm_cvtsi32_si128((int)sh));
	if (sh + bits > 32) {
		__m256i nx = _mm256_loadu_si256((const __m256i *)(colp + (w + 1) * stride));
		v = _mm256_or_si256(v, _mm256_sll_epi32(nx, _mm_cvtsi32_si128((int)(32 - sh))));
	}
	return _mm256_and_si256(v, mask);
}

/* GPTQ qweight holds the 8 outputs' words of one input side by side: a
 * vector per input has the 8 rows in its lanes, and a transpose makes rows
 * of it.  Every input's group (act-order or not) picks 8 zeros and 8
 * scales from the tables with one load each. */
static TGT void gptq_body8(const struct wf_hfq *q, uint64_t row, uint64_t a, uint64_t b, uint64_t g0,
			   const int32_t *zt, const float *st, float *dst, size_t ld)
{
	const uint8_t *colp = q->part[WF_HFQ_GPTQ_QW].p + row * 4, *gi = q->part[WF_HFQ_GPTQ_GI].p;
	uint64_t stride = q->out * 4, g = a / q->group, gnext = (g + 1) * q->group;
	__m256i mask = _mm256_set1_epi32((int)((1u << q->bits) - 1));
	for (uint64_t i = a; i < b; i += 8, dst += 8) {
		__m256 y[8];
#pragma GCC unroll 8
		for (unsigned j = 0; j < 8; j++) {
			uint64_t k = i + j;
			if (gi)
				g = wf_le32(gi + 4 * k);
			else if (k == gnext)
				g++, gnext += q->group;
			uint64_t t = (g - g0) * 8;
			__m256i v = _mm256_sub_epi32(gptq_col8(colp, stride, k, q->bits, mask),
						     _mm256_loadu_si256((const __m256i *)(zt + t)));
			y[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(v), _mm256_loadu_ps(st + t));
		}
		store_t8(y, dst, ld);
	}
}

static TGT void gptq_rows8(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst, size_t ld)
{
	bool act = q->part[WF_HFQ_GPTQ_GI].p != NULL;
	uint64_t end = col + n, a = (col + 7) / 8 * 8, b = end / 8 * 8;
	uint64_t g0 = act ? 0 : a / q->group, g1 = act ? q->groups : (b ? (b - 1) / q->group + 1 : 0);
	if (a >= b || g1 - g0 > R8_GROUPS) {
		rows8_edges(gptq_avx2, q, row, col, n, 1, 0, dst, ld);
		return;
	}
	int32_t zt[R8_GROUPS * 8];
	float st[R8_GROUPS * 8];
	for (uint64_t g = g0; g < g1; g++)
		for (unsigned j = 0; j < 8; j++) {
			zt[(g - g0) * 8 + j] = wf_hfq_gptq_zero(q, g, row + j);
			st[(g - g0) * 8 + j] = wf_hfq_part_float(&q->part[WF_HFQ_GPTQ_SC], g * q->out + row + j);
		}
	rows8_edges(gptq_avx2, q, row, col, n, a, b, dst, ld);
	gptq_body8(q, row, a, b, g0, zt, st, dst + (a - col), ld);
}

/* AWQ's word (input i, word column row / 8) holds all 8 rows' values of
 * input i: one load a vector of the 8 rows, a transpose per 8 inputs. */
static TGT void awq_rows8(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst, size_t ld)
{
	const uint8_t *qw = q->part[WF_HFQ_AWQ_QW].p, *qz = q->part[WF_HFQ_AWQ_QZ].p;
	uint64_t wcols = q->out / 8, w = row / 8, end = col + n, a = (col + 7) / 8 * 8, b = end / 8 * 8;
	rows8_edges(awq_avx2, q, row, col, n, a, b, dst, ld);
	if (a >= b)
		return;
	/* lane r: the nibble of row 8w + r (AWQ_REVERSE_ORDER) */
	__m256i sh = _mm256_set_epi32(28, 12, 24, 8, 20, 4, 16, 0), m15 = _mm256_set1_epi32(15), z = sh;
	__m256 s = _mm256_setzero_ps();
	uint64_t g, gnext = a; /* loads a's group at k == a */
	dst += a - col;
	for (uint64_t i = a; i < b; i += 8, dst += 8) {
		__m256 y[8];
#pragma GCC unroll 8
		for (unsigned j = 0; j < 8; j++) {
			uint64_t k = i + j;
			if (k == gnext) {
				float sc[8];
				g = k / q->group, gnext = (g + 1) * q->group;
				z = _mm256_set1_epi32((int)wf_le32(qz + (g * wcols + w) * 4));
				z = _mm256_and_si256(_mm256_srlv_epi32(z, sh), m15);
				for (unsigned r = 0; r < 8; r++)
					sc[r] = wf_hfq_part_float(&q->part[WF_HFQ_AWQ_SC], g * q->out + row + r);
				s = _mm256_loadu_ps(sc);
			}
			__m256i v = _mm256_set1_epi32((int)wf_le32(qw + (k * wcols + w) * 4));
			v = _mm256_sub_epi32(_mm256_and_si256(_mm256_srlv_epi32(v, sh), m15), z);
			y[j] = _mm256_mul_ps(_mm256_cvtepi32_ps(v), s);
		}
		store_t8(y, dst, ld);
	}
}

static wf_hfq_rows8_fn simd_rows8(const struct wf_hfq *q, uint64_t row)
{
	if (row > q->out || q->out - row < 8)
		return NULL;
	if (q->scheme == WF_HFQ_GPTQ && wf_hfq_simd_decoder(q))
		return gptq_rows8;
	if (q->scheme == WF_HFQ_AWQ && wf_hfq_simd_decoder(q) && row % 8 == 0)
		return awq_rows8;
	return NULL;
}

/* Inputs per column block of an AWQ band: the band's cache lines of
 * qweight for one block (a line per input) stay in L1 across its strips. */
#define AWQ_BAND_COLS 256
#define AWQ_BAND_ROWS 64

static uint64_t simd_rows_f32(const struct wf_hfq *q, uint64_t row, uint64_t nrows, float *dst)
{
	wf_hfq_rows8_fn f = nrows >= 8 ? simd_rows8(q, row) : NULL;
	if (!f)
		return 0;
	if (q->scheme != WF_HFQ_AWQ) { /* GPTQ: one strip, the whole width (tables made once) */
		f(q, row, 0, (size_t)q->in, dst, (size_t)q->in);
		return 8;
	}
	/* AWQ: a line of qweight holds 16 strips' words of one input; a band
	 * of strips walked block by block uses each line up to 8 times */
	uint64_t rows = (nrows < AWQ_BAND_ROWS ? nrows : AWQ_BAND_ROWS) / 8 * 8;
	if (q->out - row < rows)
		rows = (q->out - row) / 8 * 8;
	for (uint64_t c = 0; c < q->in; c += AWQ_BAND_COLS) {
		size_t n = q->in - c < AWQ_BAND_COLS ? (size_t)(q->in - c) : AWQ_BAND_COLS;
		for (uint64_t r = 0; r < rows; r += 8)
			f(q, row + r, c, n, dst + r * q->in + c, (size_t)q->in);
	}
	return rows;
}

wf_hfq_decode_fn wf_hfq_simd_decoder(const struct wf_hfq *q)
{
	switch (q->scheme) {
	case WF_HFQ_FP8: return fp8_avx2;
	case WF_HFQ_GPTQ: return q->bits == 2 || q->bits == 3 || q->bits == 4 || q->bits == 8 ? gptq_avx2 : NULL;
	case WF_HFQ_AWQ: return q->bits == 4 ? awq_avx2 : NULL;
	case WF_HFQ_MLX: return q->bits >= 2 && q->bits <= 8 && q->bits != 7 ? mlx_avx2 : NULL;
	case WF_HFQ_BNB: /* the 4-bit kinds only, whatever else the scheme grows */
		return q->qtype && (!strcmp(q->qtype, "nf4") || !strcmp(q->qtype, "fp4")) ? bnb_avx2 : NULL;
	case WF_HFQ_BNB8: return bnb8_avx2;
	default: return NULL;
	}
}

#else /* no x86 SIMD */

wf_hfq_decode_fn wf_hfq_simd_decoder(const struct wf_hfq *q)
{
	(void)q;
	return NULL;
}

static uint64_t simd_rows_f32(const struct wf_hfq *q, uint64_t row, uint64_t nrows, float *dst)
{
	(void)q, (void)row, (void)nrows, (void)dst;
	return 0;
}

#endif

wf_hfq_rows8_fn wf_hfq_rows8_decoder(const struct wf_hfq *q, uint64_t row)
{
#ifdef WF_HAVE_X86_SIMD
	return wf_simd_active() ? simd_rows8(q, row) : NULL;
#else
	(void)q, (void)row;
	return NULL;
#endif
}

uint64_t wf_hfq_rows_f32(const struct wf_hfq *q, uint64_t row, uint64_t nrows, float *dst)
{
	return wf_simd_active() ? simd_rows_f32(q, row, nrows, dst) : 0;
}

wf_hfq_decode_fn wf_hfq_decoder(const struct wf_hfq *q)
{
	wf_hfq_decode_fn f = wf_simd_active() ? wf_hfq_simd_decoder(q) : NULL;
	return f ? f : wf_hfq_scheme(q->scheme)->decode;
}
