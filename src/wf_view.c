/* wf_view.c - range reads over the type table. */
#include "wf_view.h"
#include "wf_types.h"

#include <string.h>

/* Blocks decoded per step when the output cannot take them directly:
 * 4096 floats (16 KiB) of scratch, a whole number of blocks of any type. */
#define SCRATCH_FLOATS 4096

void wf_view_span(const struct wf_tensor *t, uint64_t off, uint64_t len, uint64_t *first, uint64_t *count)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t bsz = (uint64_t)ty->blck * ty->out_size; /* view bytes per block */
	*first = off / bsz;
	*count = 0;
	if (off >= t->size || len == 0)
		return;
	uint64_t end = len > t->size - off ? t->size : off + len;
	*count = (end + bsz - 1) / bsz - *first;
}

/* Checks a read of view bytes [off, off+*len) of t against src_len and
 * clips *len to the end of the view (0 at or past it). */
static enum wf_err check_range(const struct wf_tensor *t, const struct wf_type *ty, uint64_t src_len,
			       uint64_t off, size_t *len)
{
	if (!ty || ty->kind == WF_VIEW_NONE || t->offset > src_len)
		return WF_ERR_RANGE;
	if (off >= t->size || *len == 0) {
		*len = 0;
		return WF_OK;
	}
	if (*len > t->size - off)
		*len = (size_t)(t->size - off);
	/* Only the source blocks this read needs must be inside src: a caller
	 * passing the file's current size (it may have shrunk) gets the
	 * surviving ranges served and the lost ones refused. */
	uint64_t first, count, need_end;
	wf_view_span(t, off, *len, &first, &count);
	if (!wf_mul_ok(first + count, ty->bytes, &need_end) || need_end > t->nbytes ||
	    need_end > src_len - t->offset)
		return WF_ERR_RANGE;
	return WF_OK;
}

enum wf_err wf_view_raw(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len,
			uint64_t off, size_t len, const uint8_t **p, size_t *n)
{
	const struct wf_type *ty = wf_type_get(t->type);
	*p = NULL;
	*n = 0;
	if (!ty || ty->kind != WF_VIEW_RAW)
		return WF_ERR_RANGE;
	enum wf_err rc = check_range(t, ty, src_len, off, &len);
	if (rc != WF_OK || len == 0)
		return rc;
	*p = src + t->offset + off; /* a raw view is its source bytes */
	*n = len;
	return WF_OK;
}

enum wf_err wf_view_read(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len,
			 uint64_t off, size_t len, void *outv, size_t *n_out)
{
	uint8_t *out = outv;
	const struct wf_type *ty = wf_type_get(t->type);
	*n_out = 0;
	enum wf_err rc = check_range(t, ty, src_len, off, &len);
	if (rc != WF_OK || len == 0)
		return rc;
	const uint8_t *base = src + t->offset;

	if (ty->kind == WF_VIEW_RAW) {
		memcpy(out, base + off, len);
		*n_out = len;
		return WF_OK;
	}

	/* WF_VIEW_DECODE: float32 output, ty->blck elements per block. */
	wf_decode_fn decode = wf_type_decoder(ty);
	uint64_t bsz = (uint64_t)ty->blck * 4;
	uint64_t blk = off / bsz;
	uint64_t end = off + len;
	size_t done = 0;
	float scratch[SCRATCH_FLOATS];
	size_t per_step = SCRATCH_FLOATS / ty->blck;
	while (off + done < end) {
		uint64_t pos = off + done;            /* view byte we are at */
		uint64_t blk_start = blk * bsz;       /* view byte where blk starts */
		uint64_t skip = pos - blk_start;      /* bytes of blk before pos */
		uint64_t want = end - pos;
		uint8_t *dst = out + done;
		/* Whole blocks land straight in the caller's buffer when it is
		 * aligned for floats there. */
		if (skip == 0 && want >= bsz && ((uintptr_t)dst % _Alignof(float)) == 0) {
			uint64_t n = want / bsz;
			decode(base + blk * ty->bytes, (float *)dst, (size_t)n);
			blk += n;
			done += (size_t)(n * bsz);
			continue;
		}
		uint64_t n = (skip + want + bsz - 1) / bsz;
		if (n > per_step)
			n = per_step;
		decode(base + blk * ty->bytes, scratch, (size_t)n);
		uint64_t avail = n * bsz - skip;
		uint64_t take = want < avail ? want : avail;
		memcpy(dst, (uint8_t *)scratch + skip, (size_t)take);
		done += (size_t)take;
		blk += n;
	}
	*n_out = done;
	return WF_OK;
}
