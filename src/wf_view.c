/* wf_view.c - range reads over the type table, in any output dtype. */
#include "wf_view.h"
#include "wf_hfq.h"
#include "wf_out.h"
#include "wf_types.h"

#include <string.h>

/* Blocks decoded per step when the output cannot take them directly:
 * 4096 floats (16 KiB) of scratch, a whole number of blocks of any type. */
#define SCRATCH_FLOATS 4096

enum wf_vk wf_view_kind(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	if (t->vk != WF_VK_DEFAULT || !ty)
		return ty ? (enum wf_vk)t->vk : WF_VK_NONE;
	if (ty->kind == WF_VIEW_HFQ)
		return WF_VK_F32;
	/* a type with no decoder is served as its stored bytes */
	return ty->kind == WF_VIEW_DECODE ? WF_VK_F32 : WF_VK_RAW;
}

unsigned wf_view_elem_size(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	switch (wf_view_kind(t)) {
	case WF_VK_RAW: return ty->stored ? ty->bytes : 1;
	case WF_VK_F16:
	case WF_VK_BF16: return 2;
	default: return 4;
	}
}

uint64_t wf_view_block_bytes(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	/* a raw view is its bytes: a source block is as long in the view */
	return wf_view_kind(t) == WF_VK_RAW ? ty->bytes : (uint64_t)ty->blck * wf_view_elem_size(t);
}

void wf_view_span(const struct wf_tensor *t, uint64_t off, uint64_t len, uint64_t *first, uint64_t *count)
{
	uint64_t bsz = wf_view_block_bytes(t);
	*first = off / bsz;
	*count = 0;
	if (off >= t->size || len == 0)
		return;
	uint64_t end = len > t->size - off ? t->size : off + len;
	*count = (end + bsz - 1) / bsz - *first;
}

/* Checks a read of view bytes [off, off+*len) of t against src_len and
 * clips *len to the end of the view (0 at or past it). */
static enum wf_err check_range(const struct wf_tensor *t, const struct wf_type *ty, enum wf_vk vk,
			       uint64_t src_len, uint64_t off, size_t *len)
{
	if (!ty || vk == WF_VK_NONE || (vk != WF_VK_RAW && !ty->decode && ty->kind != WF_VIEW_RAW) ||
	    t->offset > src_len)
		return WF_ERR_RANGE;
	if (off >= t->size || *len == 0) {
		*len = 0;
		return WF_OK;
	}
	if (*len > t->size - off)
		*len = (size_t)(t->size - off);
	/* Only the source blocks this read needs must be inside src. */
	uint64_t first, count, need_end;
	wf_view_span(t, off, *len, &first, &count);
	if (!wf_mul_ok(first + count, ty->bytes, &need_end) || need_end > t->nbytes ||
	    need_end > src_len - t->offset)
		return WF_ERR_RANGE;
	return WF_OK;
}

/* Decodes n blocks at src into float32 at dst; raw float32 is copied. */
static void to_f32(const struct wf_type *ty, wf_decode_fn decode, const uint8_t *src, float *dst, size_t n)
{
	if (decode)
		decode(src, dst, n);
	else
		memcpy(dst, src, n * ty->bytes); /* F32: one float per block */
}

enum wf_err wf_view_read(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len,
			 uint64_t off, size_t len, void *outv, size_t *n_out)
{
	uint8_t *out = outv;
	const struct wf_type *ty = wf_type_get(t->type);
	*n_out = 0;
	if (t->q) /* a layer of several stored tensors: its parts hold the bytes */
		return wf_hfq_view_read(t, off, len, outv, n_out);
	if (!ty)
		return WF_ERR_RANGE;
	enum wf_vk vk = wf_view_kind(t);
	enum wf_err rc = check_range(t, ty, vk, src_len, off, &len);
	if (rc != WF_OK || len == 0)
		return rc;
	const uint8_t *base = src + t->offset;

	if (vk == WF_VK_RAW) {
		memcpy(out, base + off, len);
		*n_out = len;
		return WF_OK;
	}

	/* float32 elements per block in, 2 or 4 bytes per element out */
	wf_decode_fn decode = ty->kind == WF_VIEW_DECODE ? wf_type_decoder(ty) : NULL;
	uint64_t bsz = wf_view_block_bytes(t);
	uint64_t blk = off / bsz;
	uint64_t end = off + len;
	size_t done = 0;
	float scratch[SCRATCH_FLOATS];
	uint16_t half[SCRATCH_FLOATS];
	size_t per_step = SCRATCH_FLOATS / ty->blck;
	while (off + done < end) {
		uint64_t pos = off + done;            /* view byte we are at */
		uint64_t blk_start = blk * bsz;       /* view byte where blk starts */
		uint64_t skip = pos - blk_start;      /* bytes of blk before pos */
		uint64_t want = end - pos;
		uint8_t *dst = out + done;
		/* Whole float32 blocks land straight in the caller's buffer when
		 * it is aligned for floats there. */
		if (vk == WF_VK_F32 && skip == 0 && want >= bsz && ((uintptr_t)dst % _Alignof(float)) == 0) {
			uint64_t n = want / bsz;
			to_f32(ty, decode, base + blk * ty->bytes, (float *)dst, (size_t)n);
			blk += n;
			done += (size_t)(n * bsz);
			continue;
		}
		uint64_t n = (skip + want + bsz - 1) / bsz;
		if (n > per_step)
			n = per_step;
		to_f32(ty, decode, base + blk * ty->bytes, scratch, (size_t)n);
		const uint8_t *from = (const uint8_t *)scratch;
		if (vk != WF_VK_F32) {
			size_t ne = (size_t)(n * ty->blck);
			if (vk == WF_VK_F16)
				wf_f32_to_f16_n(scratch, half, ne);
			else
				wf_f32_to_bf16_n(scratch, half, ne);
			from = (const uint8_t *)half;
		}
		uint64_t avail = n * bsz - skip;
		uint64_t take = want < avail ? want : avail;
		memcpy(dst, from + skip, (size_t)take);
		done += (size_t)take;
		blk += n;
	}
	*n_out = done;
	return WF_OK;
}
