/* wf_preview.h - NAME.png beside every tensor file (-o preview).
 *
 * A heatmap of the tensor's float32 values: a 2-D tensor as rows x
 * columns, more dimensions folded to [product of the outer dims, last dim],
 * a 1-D tensor (or a scalar) as a strip WF_PREVIEW_STRIP pixels tall.  At
 * most WF_PREVIEW_MAX pixels a side: pixel (y, x) summarises the elements
 * (r, c) with r * H / R == y and c * W / C == x (integer division): a NaN
 * among them makes it NaN, else an infinity makes it that infinity, else
 * it is the value of largest magnitude (the first one met, in row-major
 * order, on a tie).  Colours: a diverging map centred on 0, white at 0,
 * red for positive, blue for negative, saturated at s = the 99th
 * percentile of the finite pixels' magnitudes (of one row for a strip;
 * as float32, sorted ascending, the one at index (n - 1) * 99 / 100), or
 * their largest when that is 0, or 1:
 *     t = clamp(v / s, -1, 1),  k = floor(255 * (1 - |t|) + 0.5),
 *     t >= 0: (255, k, k)       t < 0: (k, k, 255)
 * NaN is magenta (255, 0, 255), +inf yellow (255, 255, 0), -inf cyan
 * (0, 255, 255); a tensor of no elements is one grey (128, 128, 128)
 * pixel.
 *
 * The file is an 8-bit RGB PNG whose zlib stream holds stored (not
 * compressed) deflate blocks, so its size is a function of the width and
 * height alone: st_size is exact before anything is read.  It is rendered
 * on first read (one render at a time, from the tensor through the
 * guarded read, so a model changed under it fails the read) and kept in a
 * cache of at most WF_PREVIEW_CACHE bytes of rendered files, least
 * recently used first out.
 */
#ifndef WF_PREVIEW_H
#define WF_PREVIEW_H

#include "base/wf_common.h"
#include "model/wf_model.h"
#include "view/wf_live.h"

#define WF_PREVIEW_MAX 1024
#define WF_PREVIEW_STRIP 16
#define WF_PREVIEW_CACHE (64u << 20)

/* The image's width and height for tensor t (numpy-order shape), and the
 * PNG's size in bytes. */
uint64_t wf_preview_dims(const struct wf_tensor *t, uint32_t *w, uint32_t *h);

/* Renders tensor t of lv->m (its float32 values, whatever t's own view)
 * into a new PNG of exactly wf_preview_dims bytes at *png (free() it).
 * Reads the tensor in chunks; besides that, memory is a float and a byte
 * per pixel and the PNG.  WF_ERR_RANGE when the values cannot be read (no
 * decoder), WF_ERR_CHANGED when the model changed, WF_ERR_NOMEM. */
enum wf_err wf_preview_render(struct wf_live *lv, const struct wf_tensor *t, uint8_t **png, size_t *len);

/* The rendered files of one tree. */
struct wf_previews;
struct wf_previews *wf_previews_new(void);
void wf_previews_free(struct wf_previews *pv);

/* Copies bytes [off, off+len) of the picture of tensor `tensor` (rendered
 * on first use, kept in pv) into out; *got the count.  Fails as a read of
 * the tensor would (WF_ERR_CHANGED when its file changed, even for a
 * picture already made). */
enum wf_err wf_preview_copy(struct wf_previews *pv, struct wf_live *lv, uint32_t tensor, uint64_t off, size_t len,
			    void *out, size_t *got);

#endif
