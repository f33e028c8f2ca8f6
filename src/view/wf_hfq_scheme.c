/* wf_hfq_scheme.c - the scheme table and its scalar decoders (wf_hfq.h):
 * the reference every SIMD twin (wf_hfq_x86.c) is checked against and
 * falls back to.  A leaf of the hfq files: it calls no read path.
 *
 * Sources of the layouts and formulas (docs/quantized.md has the detail):
 *   FP8 block scales: deepseek-ai/DeepSeek-V3 inference/kernel.py
 *     weight_dequant_kernel (W = float32(e4m3) * scale_inv[r/128, c/128],
 *     a multiplication despite the name; partial blocks at the edges);
 *     neuralmagic/compressed-tensors lifecycle/forward.py _dequantize
 *     (x_q.to(scale.dtype) * scale; per tensor, channel or block).
 *   GPTQ v1: AutoGPTQ qlinear_cuda.py QuantLinear.pack (values along the
 *     packed axis form one little-endian bit stream); GPTQModel
 *     gptqmodel/utils/model.py convert_gptq_v1_to_v2_format_module (zeros:
 *     add 0x55555555 / 0x11111111 / 0x01010101 to whole words for 2/4/8
 *     bits, (field + 1) & 7 for 3 bits); W[o,i] = (q - z[g_idx[i]]) *
 *     scales[g_idx[i], o].
 *   AWQ GEMM: casper-hansen/AutoAWQ awq/utils/packing_utils.py
 *     dequantize_gemm and AWQ_REVERSE_ORDER: word w of a row holds columns
 *     8w..8w+7, column 8w+j in nibble [0,4,1,5,2,6,3,7][j]; zeros as stored;
 *     W[o,i] = (q - z[i/g, o]) * s[i/g, o].
 *   MLX affine: ml-explore/mlx mlx/ops.cpp affine_dequantize (w * scales +
 *     biases; values along each row as a little-endian bit stream):
 *     W[o,i] = q * s[o, i/g] + b[o, i/g], two operations, two roundings.
 *   bitsandbytes 4-bit: bitsandbytes functional.py dequantize_4bit and
 *     backends/default/ops.py: element k (row-major over [out, in]) in the
 *     high nibble of byte k/2 when k is even; W[k] = code[nibble] *
 *     absmax[k / blocksize]; nested absmax a[j] = code2[absmax_u8[j]] *
 *     nested_absmax[j / nested_blocksize], then + nested_offset (two
 *     roundings); code and code2 are the stored quant_map and
 *     nested_quant_map (which equal bnb's built-in tables).
 */
#include "view/wf_hfq.h"
#include "codec/wf_decode.h"
#include "codec/wf_round.h"
#include "codec/wf_types.h"

#include <pthread.h>
#include <string.h>

/* ---------------------------------------------------------------- FP8 */

/* Every e4m3 code's value, from the type table's decoder, made once. */
static float e4m3_lut[256];
static pthread_once_t e4m3_once = PTHREAD_ONCE_INIT;

static void e4m3_init(void)
{
	uint8_t codes[256];
	for (int c = 0; c < 256; c++)
		codes[c] = (uint8_t)c;
	wf_decode_f8_e4m3(codes, e4m3_lut, 256);
}

const float *wf_hfq_e4m3_table(void)
{
	pthread_once(&e4m3_once, e4m3_init);
	return e4m3_lut;
}

static void fp8_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_FP8_W], *s = &q->part[WF_HFQ_FP8_S];
	const uint8_t *src = w->p + row * q->in + col;
	const float *lut = wf_hfq_e4m3_table();
	uint64_t srow = (row / q->bh) * s->cols;
	size_t i = 0;
	while (i < n) {
		/* one scale covers the columns up to the end of its block */
		uint64_t c = col + i, blk = c / q->bw, end = (blk + 1) * q->bw - col;
		size_t stop = end < n ? (size_t)end : n;
		float sc = wf_hfq_part_float(s, srow + blk);
		for (; i < stop; i++)
			dst[i] = lut[src[i]] * sc;
	}
}

/* --------------------------------------------------------------- GPTQ */

/* Groups whose zero and scale a call looks up once (act-order jumps
 * between groups at every input). */
#define GPTQ_ROW_GROUPS 512

static void gptq_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_GPTQ_QW], *sc = &q->part[WF_HFQ_GPTQ_SC];
	const struct wf_hfq_part *gi = &q->part[WF_HFQ_GPTQ_GI];
	const uint8_t *colp = qw->p + row * 4; /* column `row` of qweight */
	uint64_t stride = q->out * 4;
	int32_t zs[GPTQ_ROW_GROUPS];
	float ss[GPTQ_ROW_GROUPS];
	bool table = q->groups <= GPTQ_ROW_GROUPS && q->groups <= n;
	for (uint64_t g = 0; table && g < q->groups; g++) {
		zs[g] = wf_hfq_gptq_zero(q, g, row);
		ss[g] = wf_hfq_part_float(sc, g * q->out + row);
	}
	uint64_t last_g = UINT64_MAX;
	int32_t z = 0;
	float s = 0;
	uint32_t mask = (1u << q->bits) - 1;
	uint64_t g = col / q->group, gnext = (g + 1) * q->group; /* without g_idx: groups in order */
	for (size_t k = 0; k < n; k++) {
		uint64_t i = col + k;
		if (gi->p)
			g = wf_le32(gi->p + 4 * i);
		else if (i == gnext)
			g++, gnext += q->group;
		if (table) {
			z = zs[g];
			s = ss[g];
		} else if (g != last_g) {
			z = wf_hfq_gptq_zero(q, g, row);
			s = wf_hfq_part_float(sc, g * q->out + row);
			last_g = g;
		}
		int32_t v;
		if (q->bits == 3) {
			v = (int32_t)wf_hfq_stream_field(colp, stride, i, 3);
		} else { /* 2, 4, 8: a field never straddles two words */
			uint64_t bit = i * q->bits;
			v = (int32_t)((wf_le32(colp + (bit >> 5) * stride) >> (bit & 31)) & mask);
		}
		dst[k] = (float)(v - z) * s;
	}
}

/* ---------------------------------------------------------------- AWQ */

/* Nibble of word holding column 8w + j (AWQ_REVERSE_ORDER). */
static const uint8_t awq_nibble[8] = {0, 4, 1, 5, 2, 6, 3, 7};

static void awq_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_AWQ_QW], *qz = &q->part[WF_HFQ_AWQ_QZ];
	const struct wf_hfq_part *sc = &q->part[WF_HFQ_AWQ_SC];
	uint64_t wcols = q->out / 8, w = row / 8;
	unsigned sh = 4u * awq_nibble[row % 8];
	size_t k = 0;
	while (k < n) {
		/* one group's zero and scale up to the group's end */
		uint64_t g = (col + k) / q->group, end = (g + 1) * q->group - col;
		size_t stop = end < n ? (size_t)end : n;
		int32_t z = (int32_t)((wf_le32(qz->p + (g * wcols + w) * 4) >> sh) & 15);
		float s = wf_hfq_part_float(sc, g * q->out + row);
		for (; k < stop; k++) {
			int32_t v = (int32_t)((wf_le32(qw->p + ((col + k) * wcols + w) * 4) >> sh) & 15);
			dst[k] = (float)(v - z) * s;
		}
	}
}

/* ---------------------------------------------------------------- MLX */

static void mlx_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_MLX_W], *sc = &q->part[WF_HFQ_MLX_S];
	const struct wf_hfq_part *bi = &q->part[WF_HFQ_MLX_B];
	const uint8_t *rowp = w->p + row * w->cols * 4;
	uint64_t gbase = row * sc->cols;
	bool whole = q->bits == 2 || q->bits == 4 || q->bits == 8; /* a value inside one word */
	uint32_t mask = (1u << q->bits) - 1;
	size_t k = 0;
	while (k < n) {
		uint64_t g = (col + k) / q->group, end = (g + 1) * q->group - col;
		size_t stop = end < n ? (size_t)end : n;
		float s = wf_hfq_part_float(sc, gbase + g), b = wf_hfq_part_float(bi, gbase + g);
		for (; k < stop; k++) {
			uint64_t i = col + k, bit = i * q->bits;
			uint32_t v = whole ? (wf_le32(rowp + (bit >> 5) * 4) >> (bit & 31)) & mask
					   : wf_hfq_stream_field(rowp, 4, i, q->bits);
			float qs = (float)v * s;
			dst[k] = qs + b;
		}
	}
}

/* ---------------------------------------------------------------- bnb */

static void bnb_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_BNB_W], *map = &q->part[WF_HFQ_BNB_MAP];
	float code[16];
	for (int c = 0; c < 16; c++)
		code[c] = wf_hfq_part_float(map, (uint64_t)c);
	uint64_t k0 = row * q->in + col;
	size_t i = 0;
	while (i < n) {
		/* one absmax up to the end of its block */
		uint64_t j = (k0 + i) / q->block, end = (j + 1) * q->block - k0;
		size_t stop = end < n ? (size_t)end : n;
		float a = wf_hfq_bnb_absmax(q, j);
		for (; i < stop; i++) {
			uint64_t k = k0 + i;
			uint8_t byte = w->p[k >> 1];
			dst[i] = code[(k & 1) ? byte & 15 : byte >> 4] * a;
		}
	}
}

/* ---------------------------------------------------------- the table */

static const struct wf_hfq_scheme schemes[WF_HFQ_COUNT] = {
	[WF_HFQ_FP8] = {"FP8", WF_T_HFQ_FP8, fp8_decode, false},
	[WF_HFQ_GPTQ] = {"GPTQ", WF_T_HFQ_GPTQ, gptq_decode, true},
	[WF_HFQ_AWQ] = {"AWQ", WF_T_HFQ_AWQ, awq_decode, true},
	[WF_HFQ_MLX] = {"MLX", WF_T_HFQ_MLX, mlx_decode, false},
	[WF_HFQ_BNB] = {"BNB4", WF_T_HFQ_BNB, bnb_decode, false},
	[WF_HFQ_BNB8] = {"BNB8", WF_T_HFQ_BNB8, wf_hfq_bnb8_decode, false},
	/* a decoded row reads one nibble of every stored row: 8 rows share them */
	[WF_HFQ_MXFP4] = {"MXFP4", WF_T_HFQ_MXFP4, wf_hfq_mxfp4_decode, true},
};

const struct wf_hfq_scheme *wf_hfq_scheme(int id)
{
	return id >= 0 && id < WF_HFQ_COUNT ? &schemes[id] : NULL;
}
