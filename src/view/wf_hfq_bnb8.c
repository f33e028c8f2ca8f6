/* wf_hfq_bnb8.c - bitsandbytes 8-bit (LLM.int8) layers: the decoder and the
 * check of the BNB8 scheme row (wf_hfq.h).
 *
 * Layout (bitsandbytes-foundation/bitsandbytes bitsandbytes/nn/modules.py
 * Linear8bitLt._save_to_state_dict): PREFIX.weight int8 [out, in] (the
 * row-major CB), PREFIX.SCB float32 [out] (each row's absmax), and, from
 * bitsandbytes 0.41 on, PREFIX.weight_format, a 0-d uint8 tensor: 0 is
 * "row" (LINEAR_8BIT_WEIGHTS_FORMAT_MAPPING in bitsandbytes/utils.py);
 * 1-3 (col32, col_turing, col_ampere) are tiled GPU layouts that
 * maybe_rearrange_weight now refuses to load: so do we.
 *
 * Value (bitsandbytes/_ops.py, the default kernel of
 * int8_vectorwise_dequant, and transformers integrations/bitsandbytes.py
 * dequantize_bnb_weight's fallback): `A * stats.view(-1, 1) *
 * 7.874015718698502e-3` in float32, evaluated left to right: the int8
 * value (exact in float32) times SCB[row], rounded, then times
 * float32(1/127) (the literal is exactly that float), rounded.  Two
 * roundings in that order: dividing by 127 instead changes about 1 value
 * in 20, and SCB * (1/127) first about 1 in 3 (random data).  No final
 * cast (transformers then casts to the model's dtype).
 */
#include "view/wf_hfq.h"
#include "codec/wf_types.h"

#include <string.h>


void wf_hfq_bnb8_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_BNB8_W], *s = &q->part[WF_HFQ_BNB8_SCB];
	const uint8_t *src = w->p + row * q->in + col;
	uint32_t u = wf_le32(s->p + 4 * row);
	float scb;
	memcpy(&scb, &u, 4);
	for (size_t i = 0; i < n; i++) {
		float a = (float)(int8_t)src[i] * scb; /* its own statement: rounded here */
		dst[i] = a * WF_HFQ_BNB8_INV127;
	}
}

/* Whether p's bytes are rows x cols elements of its type. */
static bool bytes_ok(const struct wf_hfq_part *p)
{
	const struct wf_type *ty = wf_type_get(p->type);
	uint64_t n, bytes;
	return p->p && ty && ty->blck == 1 && wf_mul_ok(p->rows, p->cols, &n) && wf_mul_ok(n, ty->bytes, &bytes) &&
	       bytes == p->nbytes;
}

static bool is_int_type(int type)
{
	switch (type) {
	case WF_T_U8: case WF_T_I8: case WF_T_U16: case WF_T_I16:
	case WF_T_U32: case WF_T_I32: case WF_T_U64: case WF_T_I64: return true;
	default: return false;
	}
}

enum wf_err wf_hfq_bnb8_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *w = &q->part[WF_HFQ_BNB8_W], *s = &q->part[WF_HFQ_BNB8_SCB];
	const struct wf_hfq_part *f = &q->part[WF_HFQ_BNB8_FMT];
	if (!s->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: bitsandbytes int8 weight without its SCB", who);
	if (w->type != WF_T_I8 || s->type != WF_T_F32)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: bitsandbytes 8-bit needs an I8 weight and an F32 SCB", who);
	if (!bytes_ok(w) || !bytes_ok(s) || w->rows != q->out || w->cols != q->in)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: weight or SCB shape disagrees with its bytes", who);
	if (s->rows != 1 || s->cols != q->out)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: SCB has %" PRIu64 " values for a weight of %" PRIu64 " rows (needs [%" PRIu64
			       "])", who, s->rows * s->cols, q->out, q->out);
	if (!f->p)
		return WF_OK;
	if (!is_int_type(f->type) || !bytes_ok(f) || f->rows * f->cols != 1)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: weight_format is not one integer", who);
	for (uint64_t k = 0; k < f->nbytes; k++)
		if (f->p[k])
			return wf_fail(err, WF_ERR_UNSUP,
				       "layer %s: weight_format is not 0 (row-major): a tiled GPU layout weightfs does "
				       "not decode", who);
	return WF_OK;
}
