/* wf_hfq.h - tensors made of several stored tensors: the quantized Linear
 * layers of Hugging Face checkpoints (FP8 with block scales, GPTQ, ...).
 *
 * A quantized layer PREFIX is stored as parts (PREFIX.weight +
 * PREFIX.weight_scale_inv, or PREFIX.qweight + qzeros + scales + g_idx),
 * possibly in different files of the model.  It is shown as one float32
 * tensor PREFIX.weight of shape [out, in] (nn.Linear's layout), decoded on
 * read, row by row, for only the elements a read covers.
 *
 * One scheme table (wf_hfq.c) has a row per scheme: its name (the type
 * tensors.json gives), its row in the type table, and a decoder.  A
 * decoder is a pure function of the parts' bytes: it needs neither the
 * model nor FUSE, so unit tests call it on buffers.  wf_hfq_detect.c finds
 * the layers (config.json's quantization_config, quantize_config.json),
 * checks every part's dtype and shape, and puts the decoded tensors in the
 * model's tensor list in place of their parts, so every view (the tree,
 * model.safetensors, the commands, the C library, the Python module) and
 * the one read path (wf_live_read -> wf_view_read) serve them as any other
 * tensor.  Under -o dtype=stored nothing is replaced: every tensor is
 * shown exactly as stored.
 *
 * Arithmetic (docs/quantized.md): float32 on the exact stored values, one
 * rounding per operation in the reference's order, no fused multiply-add
 * (the Makefile builds wf_hfq.o with -ffp-contract=off), no final cast to
 * the checkpoint's dtype.
 */
#ifndef WF_HFQ_H
#define WF_HFQ_H

#include "base/wf_common.h"
#include "model/wf_model.h"
#include "codec/wf_decode.h"
#include "codec/wf_types.h"

#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct wf_buf;

enum wf_hfq_scheme_id {
	WF_HFQ_FP8 = 0,  /* e4m3 weight times a scale per block of bh x bw (DeepSeek, compressed-tensors) */
	WF_HFQ_GPTQ,     /* GPTQ v1: qweight, qzeros, scales, g_idx */
	WF_HFQ_AWQ,      /* AutoAWQ GEMM: qweight, qzeros, scales, nibbles in the order 0,2,4,6,1,3,5,7 */
	WF_HFQ_MLX,      /* MLX affine: weight, scales, biases */
	WF_HFQ_BNB,      /* bitsandbytes 4-bit (NF4/FP4): weight bytes, absmax, quant_map (nested absmax) */
	WF_HFQ_BNB8,     /* bitsandbytes 8-bit (LLM.int8): int8 weight, SCB (row absmax) (wf_hfq_bnb8.c) */
	WF_HFQ_MXFP4,    /* MXFP4 experts (gpt-oss): X_blocks, X_scales, served as X [E, C, R] (wf_hfq_mxfp4.c) */
	WF_HFQ_COUNT
};

/* Roles of the parts, per scheme (index into wf_hfq.c[]). */
enum {
	WF_HFQ_FP8_W = 0, WF_HFQ_FP8_S,                                   /* weight, scale */
	WF_HFQ_GPTQ_QW = 0, WF_HFQ_GPTQ_QZ, WF_HFQ_GPTQ_SC, WF_HFQ_GPTQ_GI, /* g_idx may be absent */
	WF_HFQ_AWQ_QW = 0, WF_HFQ_AWQ_QZ, WF_HFQ_AWQ_SC,
	WF_HFQ_MLX_W = 0, WF_HFQ_MLX_S, WF_HFQ_MLX_B,
	WF_HFQ_BNB_W = 0, WF_HFQ_BNB_ABS, WF_HFQ_BNB_MAP, WF_HFQ_BNB_NABS, WF_HFQ_BNB_NMAP, WF_HFQ_BNB_STATE,
	WF_HFQ_BNB8_W = 0, WF_HFQ_BNB8_SCB, WF_HFQ_BNB8_FMT,              /* weight_format may be absent */
	WF_HFQ_MXFP4_B = 0, WF_HFQ_MXFP4_S,                               /* blocks [E,R,G,16], scales [E,R,G] */
	WF_HFQ_MAX_PARTS = 6
};

/* One stored tensor a layer is made of. */
struct wf_hfq_part {
	const uint8_t *p;  /* its bytes (in its file's mapping, or a test's buffer); NULL: absent */
	uint64_t nbytes;
	uint32_t file;     /* index into the model's parts: the file the bytes are in */
	int type;          /* row of the type table: F8_E4M3, I32, F16, BF16, F32 */
	uint64_t rows, cols; /* its shape as 2-D: [n] is [1, n], [] is [1, 1] */
};

struct wf_hfq {
	int scheme;           /* enum wf_hfq_scheme_id */
	uint64_t out, in;     /* the decoded weight: [out, in] */
	uint32_t bits;        /* GPTQ: 2, 3, 4 or 8; AWQ: 4; MLX: 2, 3, 4, 5, 6 or 8; bnb 8-bit: 8 */
	uint32_t group;       /* inputs per group (GPTQ: in when the config says -1) */
	uint64_t groups;      /* GPTQ: rows of scales and qzeros */
	uint64_t bh, bw;      /* FP8: rows and columns of weight one scale covers */
	uint64_t block;       /* bnb: elements per absmax */
	uint64_t nblock;      /* bnb nested: absmax values per nested absmax; 0 when not nested */
	float noffset;        /* bnb nested: added to every absmax */
	uint64_t experts;     /* MXFP4: E (out = E * C, in = R) */
	const char *qtype;    /* bnb: "nf4" or "fp4" */
	const char *source;   /* what the parameters came from: "fp8", "compressed-tensors", "gptq", "awq", "mlx", "bitsandbytes" */
	struct wf_hfq_part part[WF_HFQ_MAX_PARTS];
};

/* A scheme's row. */
struct wf_hfq_scheme {
	const char *name;  /* the type tensors.json and user.weightfs.type give: "FP8", "GPTQ" */
	int type;          /* its row in the type table (wf_types.h) */
	/* Writes W[row, col .. col+n) to dst.  The caller keeps row < out
	 * and col + n <= in, and the parts were checked (wf_hfq_check). */
	void (*decode)(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst);
	/* the packed words run along the inputs (a word holds several
	 * outputs' values): reads of whole rows decode in tiles of rows,
	 * so that each cache line of them is read once, not once a row */
	bool across_rows;
};

/* The scheme's row, or NULL for an id out of range. */
const struct wf_hfq_scheme *wf_hfq_scheme(int id);

/* Checks that q's parts agree with each other and with out/in, bits and
 * group (dtypes, shapes, byte counts, every g_idx value in [0, groups)),
 * so that its decoder reads only bytes inside its parts.  name/name_len
 * name the layer in the one-line message.  WF_OK, WF_ERR_FORMAT or
 * WF_ERR_UNSUP. */
enum wf_err wf_hfq_check(const struct wf_hfq *q, const char *name, size_t name_len, char *err);

/* float32(1/127): the float bitsandbytes' literal 7.874015718698502e-3 is
 * (wf_hfq_bnb8.c says why the product is taken with it, not a division). */
#define WF_HFQ_BNB8_INV127 7.874015718698502e-3f

/* bitsandbytes 8-bit (wf_hfq_bnb8.c): the decoder of its scheme row, and
 * its part of wf_hfq_check (who is the quoted layer name). */
void wf_hfq_bnb8_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst);
enum wf_err wf_hfq_bnb8_check(const struct wf_hfq *q, const char *who, char *err);

/* MXFP4 (wf_hfq_mxfp4.c): the decoder of its scheme row, and its part of
 * wf_hfq_check.  A layer of E experts whose blocks are [E, R, G, 16] and
 * scales [E, R, G] is decoded as transformers' convert_moe_packed_tensors
 * gives it: [E, C, R] with C = 32 G (the last two axes swapped), seen
 * here as out = E * C rows of in = R values. */
void wf_hfq_mxfp4_decode(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst);
enum wf_err wf_hfq_mxfp4_check(const struct wf_hfq *q, const char *who, char *err);

/* The float32 value of FP4 (e2m1) code c (0..15) as transformers'
 * FP4_VALUES has it (code 8 is -0), and of E8M0 scale byte s (2^(s-127),
 * +inf for 255, as torch's ldexp computes it in float32). */
float wf_hfq_mxfp4_code(unsigned c);
float wf_hfq_mxfp4_scale(unsigned s);

/* Copies bytes [off, off+len) of the view of composite tensor t (t->q set;
 * t->vk F32, F16 or BF16) into out, decoding only the rows and columns the
 * range covers; *n_out gets the count (less at the end of the view).
 * WF_ERR_RANGE when t's view is not a decoded one. */
enum wf_err wf_hfq_view_read(const struct wf_tensor *t, uint64_t off, size_t len, void *out, size_t *n_out);

/* Appends t's scheme and parameters as a JSON object
 * ({"scheme":"GPTQ","bits":4,"group_size":128,...}). */
void wf_hfq_params_json(const struct wf_hfq *q, struct wf_buf *b);

/* Finds the quantized layers of m from its config (config.json's
 * quantization_config, quantize_config.json; a sidecar, or the file beside
 * a single-file model), checks them, and, unless want is WF_VK_RAW (stored),
 * replaces each layer's parts in m->tensors by one decoded tensor
 * PREFIX.weight, moving the parts (the main one under its stored name) to
 * m->hidden.  A model with no quantization config is left as it is.
 * Refuses (one line naming the layer) a scheme, format or bits weightfs
 * does not decode, a missing part, parts that disagree.  Call once, before
 * wf_model_set_view and the tree. */
enum wf_err wf_hfq_apply(struct wf_model *m, enum wf_vk want, char *err);

/* --- what the scalar decoders (wf_hfq.c) and their SIMD twins
 * (wf_hfq_x86.c) both read a layer's parts with: one definition each,
 * inline, so a twin's scalar edges and tables are the reference's very
 * operations and both files' hot loops keep them inlined. */

/* One scale or float of a part, widened exactly to float32. */
static inline float wf_hfq_part_float(const struct wf_hfq_part *p, uint64_t idx)
{
	switch (p->type) {
	case WF_T_F32: {
		uint32_t u = wf_le32(p->p + 4 * idx);
		float f;
		memcpy(&f, &u, 4);
		return f;
	}
	case WF_T_BF16: return wf_bf16_to_f32(wf_le16(p->p + 2 * idx));
	default: return wf_f16_to_f32(wf_le16(p->p + 2 * idx));
	}
}

/* Field k (bits wide) of the little-endian bit stream whose 32-bit word w
 * is at base + w * stride; fields may straddle two words (3 bits). */
static inline uint32_t wf_hfq_stream_field(const uint8_t *base, uint64_t stride, uint64_t k, uint32_t bits)
{
	uint64_t bit = k * bits, w = bit >> 5;
	uint32_t sh = (uint32_t)(bit & 31);
	uint64_t v = wf_le32(base + w * stride) >> sh;
	if (sh + bits > 32)
		v |= (uint64_t)wf_le32(base + (w + 1) * stride) << (32 - sh);
	return (uint32_t)v & ((1u << bits) - 1);
}

/* GPTQ v1 zero of group g, output o (wf_hfq.c's top comment): whole words
 * plus 0x55555555 / 0x11111111 / 0x01010101, 3 bits field by field. */
static inline int32_t wf_hfq_gptq_zero(const struct wf_hfq *q, uint64_t g, uint64_t o)
{
	const struct wf_hfq_part *z = &q->part[WF_HFQ_GPTQ_QZ];
	const uint8_t *rowp = z->p + g * z->cols * 4;
	if (q->bits == 3)
		return (int32_t)((wf_hfq_stream_field(rowp, 4, o, 3) + 1) & 7);
	static const uint32_t add[9] = {[2] = 0x55555555u, [4] = 0x11111111u, [8] = 0x01010101u};
	uint64_t bit = o * q->bits;
	uint32_t word = wf_le32(rowp + (bit >> 5) * 4) + add[q->bits];
	return (int32_t)((word >> (bit & 31)) & ((1u << q->bits) - 1));
}

/* bitsandbytes absmax of block j; nested: code2[byte] * nested_absmax,
 * then + nested_offset, two roundings. */
static inline float wf_hfq_bnb_absmax(const struct wf_hfq *q, uint64_t j)
{
	const struct wf_hfq_part *ab = &q->part[WF_HFQ_BNB_ABS];
	if (!q->nblock)
		return wf_hfq_part_float(ab, j);
	float a = wf_hfq_part_float(&q->part[WF_HFQ_BNB_NMAP], ab->p[j]) *
		  wf_hfq_part_float(&q->part[WF_HFQ_BNB_NABS], j / q->nblock);
	return a + q->noffset;
}

/* float32 of every e4m3 code (wf_decode_f8_e4m3's), made once. */
const float *wf_hfq_e4m3_table(void);

#endif
