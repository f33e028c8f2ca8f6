/* wf_hfq_mxfp4.c - MXFP4 experts (gpt-oss checkpoints): the decoder and
 * the check of scheme WF_HFQ_MXFP4 (wf_hfq.h).
 *
 * Layout (transformers integrations/mxfp4.py Mxfp4GptOssExperts): a
 * parameter X of E experts is stored as X_blocks, uint8 [E, R, G, 16], and
 * X_scales, uint8 [E, R, G]: row r of expert e holds C = 32 G values in G
 * blocks of 32; byte i of a block holds value 2i in its low nibble and
 * value 2i+1 in its high nibble, each an FP4 e2m1 code; the block's scale
 * byte s is an E8M0 exponent.
 *
 * Value (convert_moe_packed_tensors): FP4_VALUES[code] (0, 0.5, 1, 1.5,
 * 2, 3, 4, 6 and their negatives; code 8 is -0.0) times 2^(s - 127), the
 * product torch.ldexp takes as `x * pow(2.0, s - 127)` in float32: 2^-127
 * is a subnormal float32 and exact, 2^128 (s = 255) overflows to +inf, so
 * a zero code under s = 255 gives NaN and the others +-inf.  The
 * reference then stores bfloat16; every finite product has at most two
 * significant bits and lies within bfloat16's range, so that cast changes
 * no value (NaN payloads aside): the float32 here equals it.
 *
 * Shape: convert_moe_packed_tensors reshapes to [E, R, C] and returns
 * out.transpose(1, 2): [E, C, R].  So element (e, c, r) of the decoded
 * tensor is value c of row r of expert e.  As a 2-D layer that is out =
 * E * C rows (e, c) of in = R values r: a decoded row walks the stored
 * rows, reading one nibble of each.
 *
 * ggml's MXFP4 (ggml-common.h kvalues_mxfp4, ggml-impl.h
 * ggml_e8m0_to_fp32_half) differs in two corners, which the HF view does
 * not follow: its code 8 is +0, and its scale 255 is the finite 2^127
 * (times doubled codes: 2^128 * code), not +inf.
 */
#include "view/wf_hfq.h"

#include <math.h>

/* transformers' FP4_VALUES: -0.0 at code 8 */
static const float fp4_values[16] = {+0.0f, +0.5f, +1.0f, +1.5f, +2.0f, +3.0f, +4.0f, +6.0f,
				     -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};

float wf_hfq_mxfp4_code(unsigned c)
{
	return fp4_values[c & 15];
}

float wf_hfq_mxfp4_scale(unsigned s)
{
	/* float32(pow(2, s - 127)): exact from 2^-127 (subnormal) to 2^127 */
	return s >= 255 ? INFINITY : ldexpf(1.0f, (int)s - 127);
}

void wf_hfq_mxfp4_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst)
{
	const struct wf_hfq_part *b = &q->part[WF_HFQ_MXFP4_B], *s = &q->part[WF_HFQ_MXFP4_S];
	uint64_t groups = s->cols, c_per = q->out / q->experts;
	uint64_t e = row / c_per, c = row % c_per, g = c / 32;
	unsigned byte = (unsigned)(c % 32) / 2, shift = (c & 1) ? 4 : 0;
	/* block (e, r, g) is at flat index (e * R + r) * G + g */
	uint64_t idx = (e * q->in + col) * groups + g;
	for (size_t k = 0; k < n; k++, idx += groups) {
		unsigned code = (b->p[idx * 16 + byte] >> shift) & 15;
		dst[k] = fp4_values[code] * wf_hfq_mxfp4_scale(s->p[idx]);
	}
}

/* Whether p's bytes are rows x cols bytes (both parts are uint8). */
static bool u8_bytes_ok(const struct wf_hfq_part *p)
{
	uint64_t n;
	return p->p && p->type == WF_T_U8 && wf_mul_ok(p->rows, p->cols, &n) && n == p->nbytes;
}

enum wf_err wf_hfq_mxfp4_check(const struct wf_hfq *q, const char *who, char *err)
{
	const struct wf_hfq_part *b = &q->part[WF_HFQ_MXFP4_B], *s = &q->part[WF_HFQ_MXFP4_S];
	if (!s->p)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: MXFP4 blocks without their scales", who);
	if (b->type != WF_T_U8 || s->type != WF_T_U8)
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: MXFP4 needs uint8 blocks and scales", who);
	if (!u8_bytes_ok(b) || !u8_bytes_ok(s))
		return wf_fail(err, WF_ERR_FORMAT, "layer %s: MXFP4 blocks or scales shape disagrees with its bytes",
			       who);
	/* blocks [E * R * G, 16], scales [E * R, G], out = E * 32 G, in = R */
	uint64_t er, c, out, blocks;
	if (q->experts == 0 || q->in == 0 || s->cols == 0 || !wf_mul_ok(q->experts, q->in, &er) || s->rows != er ||
	    !wf_mul_ok(s->cols, 32, &c) || !wf_mul_ok(q->experts, c, &out) || out != q->out || b->cols != 16 ||
	    !wf_mul_ok(er, s->cols, &blocks) || b->rows != blocks)
		return wf_fail(err, WF_ERR_FORMAT,
			       "layer %s: MXFP4 blocks (%" PRIu64 " of 16 bytes) and scales [%" PRIu64 ", %" PRIu64
			       "] do not describe %" PRIu64 " experts of [%" PRIu64 ", %" PRIu64 "]",
			       who, b->rows, s->rows, s->cols, q->experts, q->experts ? q->out / q->experts : 0, q->in);
	return WF_OK;
}
