/* wf_hfq.c - the schemes' checks and the range read of a decoded layer
 * (wf_hfq.h); the table and its scalar decoders are wf_hfq_scheme.c, the
 * SIMD twins wf_hfq_x86.c, both below this file (no call comes back up).
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
#include "view/wf_hfq_simd.h"
#include "base/wf_buf.h"
#include "codec/wf_decode.h"
#include "codec/wf_round.h"
#include "codec/wf_types.h"

#include <pthread.h>
#include <string.h>

/* ------------------------------------------------------------- checks */

static bool is_scale_type(int type)
{
	return type == WF_T_F32 || type == WF_T_F16 || type == WF_T_BF16;
}

static uint64_t ceil_div(uint64_t a, uint64_t b)
{
	return a / b + (a % b != 0);
}

/* The bytes a part of rows x cols elements of its type must have. */
static bool part_bytes_ok(const struct wf_hfq_part *p)
{
	const struct wf_type *ty = wf_type_get(p->type);
	uint64_t n, bytes;
	return p->p && ty && ty->blck == 1 && wf_mul_ok(p->rows, p->cols, &n) && wf_mul_ok(n, ty->bytes, &bytes) &&
	       bytes == p->nbytes;
}

static enum wf_err fp8_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_FP8_W], *s = &q->part[WF_HFQ_FP8_S];
	if (!s->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: FP8 weight without its scale", who);
	if (w->type != WF_T_F8_E4M3 || !is_scale_type(s->type))
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: FP8 needs an F8_E4M3 weight and an F32/BF16/F16 scale",
			       who);
	if (q->bh == 0 || q->bw == 0 || w->rows != q->out || w->cols != q->in || !part_bytes_ok(w) ||
	    !part_bytes_ok(s))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: FP8 weight or scale shape disagrees with its bytes", who);
	if (s->rows != ceil_div(q->out, q->bh) || s->cols != ceil_div(q->in, q->bw))
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: scale grid [%" PRIu64 ", %" PRIu64 "] does not fit weight [%" PRIu64
			       ", %" PRIu64 "] in blocks of %" PRIu64 "x%" PRIu64 " (needs [%" PRIu64 ", %" PRIu64 "])",
			       who, s->rows, s->cols, q->out, q->in, q->bh, q->bw, ceil_div(q->out, q->bh),
			       ceil_div(q->in, q->bw));
	return WF_OK;
}

static enum wf_err gptq_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_GPTQ_QW], *qz = &q->part[WF_HFQ_GPTQ_QZ];
	const struct wf_hfq_part *sc = &q->part[WF_HFQ_GPTQ_SC], *gi = &q->part[WF_HFQ_GPTQ_GI];
	if (q->bits != 2 && q->bits != 3 && q->bits != 4 && q->bits != 8)
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: GPTQ with %u bits (weightfs decodes 2, 3, 4 and 8)", who,
			       q->bits);
	if (!qz->p || !sc->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: GPTQ qweight without %s", who, qz->p ? "scales" : "qzeros");
	if ((qw->type != WF_T_I32 && qw->type != WF_T_U32) || (qz->type != WF_T_I32 && qz->type != WF_T_U32) ||
	    !is_scale_type(sc->type) || (gi->p && gi->type != WF_T_I32))
		return wf_fail(err, WF_ERR_UNSUP,
			       "layer %s: GPTQ needs int32 qweight, qzeros and g_idx and F16/BF16/F32 scales", who);
	if (!part_bytes_ok(qw) || !part_bytes_ok(qz) || !part_bytes_ok(sc) || (gi->p && !part_bytes_ok(gi)))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: a part's shape disagrees with its bytes", who);
	uint64_t zcols, ibits;
	if (q->group == 0 || q->in == 0 || q->out == 0 || !wf_mul_ok(q->in, q->bits, &ibits) || ibits % 32 ||
	    qw->rows != ibits / 32 || qw->cols != q->out || !wf_mul_ok(q->out, q->bits, &zcols) || zcols % 32)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: qweight [%" PRIu64 ", %" PRIu64 "] is not [in * %u / 32, out] over whole "
			       "32-bit words (out %" PRIu64 ")",
			       who, qw->rows, qw->cols, q->bits, q->out);
	uint64_t groups = ceil_div(q->in, q->group);
	if (q->groups != groups || sc->rows != groups || sc->cols != q->out || qz->rows != groups ||
	    qz->cols != zcols / 32)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: scales [%" PRIu64 ", %" PRIu64 "] / qzeros [%" PRIu64 ", %" PRIu64
			       "] do not match %" PRIu64 " groups of %u over [%" PRIu64 ", %" PRIu64 "]",
			       who, sc->rows, sc->cols, qz->rows, qz->cols, groups, q->group, q->out, q->in);
	if (gi->p && gi->rows * gi->cols != q->in)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: g_idx has %" PRIu64 " entries for %" PRIu64 " inputs",
			       who, gi->rows * gi->cols, q->in);
	for (uint64_t i = 0; gi->p && i < q->in; i++) {
		uint32_t g = wf_le32(gi->p + 4 * i);
		if (g >= groups)
			return wf_fail(err, WF_ERR_FORMAT,
				       "layer %s: g_idx[%" PRIu64 "] = %d is outside [0, %" PRIu64 ")", who, i,
				       (int32_t)g, groups);
	}
	return WF_OK;
}

static enum wf_err awq_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_AWQ_QW], *qz = &q->part[WF_HFQ_AWQ_QZ];
	const struct wf_hfq_part *sc = &q->part[WF_HFQ_AWQ_SC];
	if (!qz->p || !sc->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: AWQ qweight without %s", who, qz->p ? "scales" : "qzeros");
	if (q->bits != 4)
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: AWQ with %u bits (weightfs decodes 4)", who, q->bits);
	if ((qw->type != WF_T_I32 && qw->type != WF_T_U32) || (qz->type != WF_T_I32 && qz->type != WF_T_U32) ||
	    !is_scale_type(sc->type))
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: AWQ needs int32 qweight and qzeros and F16/BF16/F32 scales",
			       who);
	if (!part_bytes_ok(qw) || !part_bytes_ok(qz) || !part_bytes_ok(sc))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: a part's shape disagrees with its bytes", who);
	if (q->group == 0 || q->in % q->group || q->out % 8 || qw->rows != q->in || qw->cols != q->out / 8 ||
	    qz->rows != q->in / q->group || qz->cols != q->out / 8 || sc->rows != q->in / q->group ||
	    sc->cols != q->out)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: qweight [%" PRIu64 ", %" PRIu64 "], qzeros [%" PRIu64 ", %" PRIu64
			       "], scales [%" PRIu64 ", %" PRIu64 "] are not [in, out/8], [in/%u, out/8], [in/%u, out]",
			       who, qw->rows, qw->cols, qz->rows, qz->cols, sc->rows, sc->cols, q->group, q->group);
	return WF_OK;
}

static enum wf_err mlx_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_MLX_W], *sc = &q->part[WF_HFQ_MLX_S];
	const struct wf_hfq_part *bi = &q->part[WF_HFQ_MLX_B];
	if (!sc->p || !bi->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: MLX weight without %s", who, sc->p ? "biases" : "scales");
	if (q->bits < 2 || q->bits > 8 || q->bits == 7)
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: MLX affine with %u bits (weightfs decodes 2-6 and 8)", who,
			       q->bits);
	if ((w->type != WF_T_U32 && w->type != WF_T_I32) || !is_scale_type(sc->type) || !is_scale_type(bi->type))
		return wf_fail(err, WF_ERR_UNSUP, "layer %s: MLX needs a uint32 weight and float scales and biases", who);
	if (!part_bytes_ok(w) || !part_bytes_ok(sc) || !part_bytes_ok(bi))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: a part's shape disagrees with its bytes", who);
	uint64_t ibits;
	if (q->group == 0 || q->in % q->group || w->rows != q->out || sc->rows != q->out || bi->rows != q->out ||
	    !wf_mul_ok(q->in, q->bits, &ibits) || ibits != w->cols * 32 ||
	    sc->cols != q->in / q->group || bi->cols != sc->cols)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: scales [%" PRIu64 ", %" PRIu64 "] / biases [%" PRIu64 ", %" PRIu64
			       "] do not match weight [%" PRIu64 ", %" PRIu64 " words] in groups of %u",
			       who, sc->rows, sc->cols, bi->rows, bi->cols, w->rows, w->cols, q->group);
	return WF_OK;
}

/* Elements of a part, whatever its shape. */
static uint64_t part_elems(const struct wf_hfq_part *p)
{
	return p->rows * p->cols; /* checked against nbytes by part_bytes_ok */
}

static enum wf_err bnb_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_BNB_W], *ab = &q->part[WF_HFQ_BNB_ABS];
	const struct wf_hfq_part *map = &q->part[WF_HFQ_BNB_MAP], *na = &q->part[WF_HFQ_BNB_NABS];
	const struct wf_hfq_part *nm = &q->part[WF_HFQ_BNB_NMAP];
	if (!ab->p || !map->p || (q->nblock && (!na->p || !nm->p)))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: bitsandbytes weight without its %s", who,
			       !ab->p ? "absmax" : !map->p ? "quant_map" : "nested_absmax / nested_quant_map");
	uint64_t n, nb;
	if (!wf_mul_ok(q->out, q->in, &n) || q->block == 0 || w->type != WF_T_U8 || !part_bytes_ok(w) ||
	    w->nbytes != n / 2 + n % 2)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: quant_state shape [%" PRIu64 ", %" PRIu64 "] does not match %" PRIu64
			       " packed bytes", who, q->out, q->in, w->nbytes);
	nb = n / q->block + (n % q->block != 0);
	if (map->type != WF_T_F32 || !part_bytes_ok(map) || part_elems(map) != 16 || !part_bytes_ok(ab) ||
	    part_elems(ab) != nb || (q->nblock ? ab->type != WF_T_U8 : ab->type != WF_T_F32))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: absmax or quant_map do not match %" PRIu64
			       " blocks of %" PRIu64, who, nb, q->block);
	if (q->nblock && (na->type != WF_T_F32 || nm->type != WF_T_F32 || !part_bytes_ok(na) || !part_bytes_ok(nm) ||
			  part_elems(nm) != 256 || part_elems(na) != nb / q->nblock + (nb % q->nblock != 0)))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: nested absmax does not match %" PRIu64
			       " absmax values in blocks of %" PRIu64, who, nb, q->nblock);
	return WF_OK;
}

enum wf_err wf_hfq_check(const struct wf_hfq *q, const char *name, size_t name_len, char *err)
{
	char who[96];
	wf_quote(who, sizeof who, name, name_len);
	if (!q->part[0].p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: no packed weight", who);
	switch (q->scheme) {
	case WF_HFQ_FP8: return fp8_check(q, who, err);
	case WF_HFQ_GPTQ: return gptq_check(q, who, err);
	case WF_HFQ_AWQ: return awq_check(q, who, err);
	case WF_HFQ_MLX: return mlx_check(q, who, err);
	case WF_HFQ_BNB: return bnb_check(q, who, err);
	case WF_HFQ_BNB8: return wf_hfq_bnb8_check(q, who, err);
	case WF_HFQ_MXFP4: return wf_hfq_mxfp4_check(q, who, err);
	default: return wf_fail(err, WF_ERR_UNSUP, "layer %s: unknown scheme %d", who, q->scheme);
	}
}

/* ---------------------------------------------------------- the reads */

#define SCRATCH_FLOATS 4096
#define TILE_ROWS 8
#define TILE_COLS (SCRATCH_FLOATS / TILE_ROWS)

/* Rows [row, row+nrows) whole (nrows <= TILE_ROWS) into out, as view
 * elements of es bytes, decoded tile by tile across the rows. */
static void whole_rows(const struct wf_hfq *q, wf_hfq_decode_fn dec, enum wf_vk vk, uint64_t row,
		       unsigned nrows, uint8_t *out, float *scratch, uint16_t *half)
{
	unsigned es = wf_vk_elem_size(NULL, vk);
	bool in_place = vk == WF_VK_F32 && (uintptr_t)out % sizeof(float) == 0; /* float32 lands in out */
	_Static_assert(TILE_ROWS == 8, "wf_hfq_rows8_decoder decodes 8 rows");
	wf_hfq_rows8_fn rows8 = nrows == TILE_ROWS ? wf_hfq_rows8_decoder(q, row) : NULL;
	for (uint64_t c = 0; c < q->in; c += TILE_COLS) {
		size_t n = q->in - c < TILE_COLS ? (size_t)(q->in - c) : TILE_COLS;
		if (rows8 && in_place) { /* the whole width: its tables are made once */
			rows8(q, row, 0, (size_t)q->in, (float *)(void *)out, (size_t)q->in);
			break;
		}
		if (rows8)
			rows8(q, row, c, n, scratch, TILE_COLS);
		for (unsigned r = 0; r < nrows; r++) {
			float *f = scratch + (size_t)r * TILE_COLS;
			uint8_t *to = out + ((uint64_t)r * q->in + c) * es;
			if (!rows8 && in_place) {
				dec(q, row + r, c, n, (float *)(void *)to);
				continue;
			}
			if (!rows8)
				dec(q, row + r, c, n, f);
			const void *from = f;
			if (vk != WF_VK_F32) {
				if (vk == WF_VK_F16)
					wf_f32_to_f16_n(f, half, n);
				else
					wf_f32_to_bf16_n(f, half, n);
				from = half;
			}
			memcpy(to, from, n * es);
		}
	}
}

enum wf_err wf_hfq_view_read(const struct wf_tensor *t, uint64_t off, size_t len, void *outv, size_t *n_out)
{
	const struct wf_hfq *q = t->q;
	enum wf_vk vk = (enum wf_vk)t->vk;
	*n_out = 0;
	if (!q || (vk != WF_VK_F32 && vk != WF_VK_F16 && vk != WF_VK_BF16))
		return WF_ERR_RANGE;
	if (off >= t->size || len == 0)
		return WF_OK;
	if (len > t->size - off)
		len = (size_t)(t->size - off);
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(q->scheme);
	wf_hfq_decode_fn dec = wf_hfq_decoder(q); /* SIMD twin or scalar */
	unsigned es = wf_vk_elem_size(NULL, vk);
	uint8_t *out = outv;
	float scratch[SCRATCH_FLOATS];
	uint16_t half[SCRATCH_FLOATS];
	uint64_t end = off + len, pos = off;
	while (pos < end) {
		uint64_t e = pos / es, row = e / q->in, col = e % q->in;
		uint64_t rows_left = (end - pos) / es / q->in;
		uint8_t *at = out + (pos - off);
		uint64_t done = sc->across_rows && col == 0 && pos % es == 0 && vk == WF_VK_F32 &&
					(uintptr_t)at % sizeof(float) == 0
				? wf_hfq_rows_f32(q, row, rows_left, (float *)(void *)at)
				: 0;
		if (done) { /* float32 rows in place, 8 at a time */
			pos += done * q->in * es;
			continue;
		}
		if (sc->across_rows && col == 0 && pos % es == 0 && rows_left >= 2) {
			unsigned nr = rows_left < TILE_ROWS ? (unsigned)rows_left : TILE_ROWS;
			whole_rows(q, dec, vk, row, nr, out + (pos - off), scratch, half);
			pos += (uint64_t)nr * q->in * es;
			continue;
		}
		uint64_t last = (end - 1) / es; /* last element the read covers */
		uint64_t n = q->in - col;
		if (n > last - e + 1)
			n = last - e + 1;
		if (n > SCRATCH_FLOATS)
			n = SCRATCH_FLOATS;
		uint8_t *to = out + (pos - off);
		if (vk == WF_VK_F32 && pos == e * es && end - pos >= n * es && (uintptr_t)to % sizeof(float) == 0) {
			dec(q, row, col, (size_t)n, (float *)(void *)to); /* whole elements, in place */
			pos += n * es;
			continue;
		}
		dec(q, row, col, (size_t)n, scratch);
		const uint8_t *from = (const uint8_t *)scratch;
		if (vk == WF_VK_F16)
			wf_f32_to_f16_n(scratch, half, (size_t)n);
		else if (vk == WF_VK_BF16)
			wf_f32_to_bf16_n(scratch, half, (size_t)n);
		if (vk != WF_VK_F32)
			from = (const uint8_t *)half;
		uint64_t skip = pos - e * es, avail = n * es - skip;
		uint64_t take = end - pos < avail ? end - pos : avail;
		memcpy(out + (pos - off), from + skip, (size_t)take);
		pos += take;
	}
	*n_out = len;
	return WF_OK;
}

void wf_hfq_params_json(const struct wf_hfq *q, struct wf_buf *b)
{
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(q->scheme);
	wf_buf_printf(b, "{\"scheme\":\"%s\",\"source\":\"%s\"", sc ? sc->name : "?", q->source ? q->source : "");
	if (q->scheme == WF_HFQ_FP8) {
		const struct wf_type *st = wf_type_get(q->part[WF_HFQ_FP8_S].type);
		wf_buf_printf(b, ",\"block\":[%" PRIu64 ",%" PRIu64 "],\"scale_dtype\":\"%s\"", q->bh, q->bw,
			      st ? st->name : "?");
	} else if (q->scheme == WF_HFQ_GPTQ) {
		const struct wf_type *st = wf_type_get(q->part[WF_HFQ_GPTQ_SC].type);
		wf_buf_printf(b, ",\"bits\":%u,\"group_size\":%u,\"groups\":%" PRIu64 ",\"g_idx\":%s,"
			      "\"scale_dtype\":\"%s\"",
			      q->bits, q->group, q->groups, q->part[WF_HFQ_GPTQ_GI].p ? "true" : "false",
			      st ? st->name : "?");
	} else if (q->scheme == WF_HFQ_BNB) {
		wf_buf_printf(b, ",\"quant_type\":\"%s\",\"blocksize\":%" PRIu64 ",\"nested\":%s", q->qtype,
			      q->block, q->nblock ? "true" : "false");
		if (q->nblock) {
			wf_buf_printf(b, ",\"nested_blocksize\":%" PRIu64 ",\"nested_offset\":", q->nblock);
			wf_buf_json_f32(b, q->noffset);
		}
	} else if (q->scheme == WF_HFQ_BNB8) {
		wf_buf_printf(b, ",\"bits\":8,\"scale_dtype\":\"F32\",\"weight_format\":\"row\"");
	} else if (q->scheme == WF_HFQ_MXFP4) {
		wf_buf_printf(b, ",\"bits\":4,\"group_size\":32,\"experts\":%" PRIu64 ",\"scale_dtype\":\"E8M0\"",
			      q->experts);
	} else {
		const struct wf_type *st = wf_type_get(q->part[q->scheme == WF_HFQ_AWQ ? WF_HFQ_AWQ_SC : WF_HFQ_MLX_S].type);
		wf_buf_printf(b, ",\"bits\":%u,\"group_size\":%u,\"scale_dtype\":\"%s\"", q->bits, q->group,
			      st ? st->name : "?");
	}
	wf_buf_putc(b, '}');
}
