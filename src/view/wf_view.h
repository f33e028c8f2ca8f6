/* wf_view.h - serving byte ranges of a tensor's file.
 *
 * A tensor's file holds its elements in the view dtype (float32 for float
 * types).  A read of [off, off+len) touches only the source blocks that
 * cover it: the arithmetic is wf_view_span, the decoding wf_view_read.
 */
#ifndef WF_VIEW_H
#define WF_VIEW_H

#include "base/wf_common.h"
#include "model/wf_model.h"

/* What t's file holds (t->vk, or for an unset one the type's own view:
 * float32 decode, raw, or none). */
enum wf_vk wf_view_kind(const struct wf_tensor *t);

/* Bytes per element of t's view (1 for stored blocks, shown as bytes). */
unsigned wf_view_elem_size(const struct wf_tensor *t);

/* Bytes of t's view one source block makes: a range split on multiples of
 * it never decodes a block twice. */
uint64_t wf_view_block_bytes(const struct wf_tensor *t);

/* The source blocks that cover view bytes [off, off+len) of t, clipped to
 * the end of the view: *first is the index of the first block, *count how
 * many (0 when off is at or past the end or len is 0). */
void wf_view_span(const struct wf_tensor *t, uint64_t off, uint64_t len, uint64_t *first, uint64_t *count);

/* Copies view bytes [off, off+len) of t, whose source bytes lie in
 * src[0..src_len) (the model mapping), into out.  *n_out gets the number
 * of bytes written: len, or less at the end of the view, 0 past it.
 * Returns WF_ERR_RANGE (and writes nothing) when the type has no decoder
 * or the source blocks this read needs are not inside src (nor inside the
 * tensor's nbytes).  src_len may be less than the mapping: callers pass
 * the file's current size so that bytes lost to truncation are refused. */
enum wf_err wf_view_read(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len,
			 uint64_t off, size_t len, void *out, size_t *n_out);

#endif
