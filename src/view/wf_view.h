/* wf_view.h - what a tensor's file holds, and serving byte ranges of it.
 *
 * By default a float or quantized tensor's file holds float32, decoded.
 * `-o dtype=f16` and `bf16` round those float32 values to nearest-even
 * (wf_round.h); `stored` shows the file's own bytes: float and integer
 * tensors keep their dtype and shape, a tensor packed in blocks becomes
 * uint8 with shape [..., bytes per row].  Integer and bool tensors are the
 * same under every option.  wf_tensor_set_view fixes a tensor's view
 * (t->vk, t->size) once; everything else reads it from there: the dtype
 * names and shape below, and the range reads.
 *
 * A read of [off, off+len) touches only the source blocks that cover it:
 * the arithmetic is wf_view_span, the decoding wf_view_read.
 */
#ifndef WF_VIEW_H
#define WF_VIEW_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "codec/wf_types.h"
#include "model/wf_model.h"

#include <stdint.h>

/* Parses a -o dtype= value: "f32", "f16", "bf16" (also "float32",
 * "float16", "bfloat16") give WF_VK_F32, WF_VK_F16, WF_VK_BF16, and
 * "stored" gives WF_VK_RAW; false for anything else. */
bool wf_view_parse(const char *s, enum wf_vk *want);

/* Sets t's view for the dtype `want` asks for (wf_view_parse's values):
 * t->vk and t->size.  Fails (WF_ERR_UNSUP, naming the tensor) when
 * stored cannot show t as whole rows of bytes (sub-byte types with an odd
 * row), WF_ERR_RANGE for a `want` no option gives. */
enum wf_err wf_tensor_set_view(struct wf_tensor *t, enum wf_vk want, char *err);

/* The same for every tensor of m. */
enum wf_err wf_model_set_view(struct wf_model *m, enum wf_vk want, char *err);

/* The numpy name of t's view elements ("float32", "float16", "bfloat16",
 * "uint8" for stored blocks, ...), the .npy descr of one element ("<f4",
 * "<u2" for bfloat16, "|u1" for float8 and blocks), and the safetensors
 * dtype for model.safetensors ("F32", "BF16", "U8" for blocks). */
const char *wf_view_dtype(const struct wf_tensor *t);
const char *wf_view_descr(const struct wf_tensor *t);
const char *wf_view_st_dtype(const struct wf_tensor *t);

/* The file-name suffix (without its '.') that names t's view dtype under
 * -o suffix: "f32", "f16", "bf16", "f64", "i8".."i64", "u8".."u64"
 * (blocks under -o dtype=stored are "u8"), "bool", "c64", and for float8
 * "f8e4m3", "f8e5m2", "f8e8m0", "f8e4m3fnuz", "f8e5m2fnuz".  None of these
 * is a glob of shared-mime-info 2.2, so a desktop takes the type from
 * packaging/weightfs-mime.xml (application/x-weightfs-SUFFIX) instead of
 * sniffing the bytes.  At most WF_SUFFIX_MAX bytes. */
#define WF_SUFFIX_MAX 10
const char *wf_view_suffix(const struct wf_tensor *t);

/* The same from a numpy dtype name (wf_view_dtype's), or NULL if unknown. */
const char *wf_dtype_suffix(const char *dtype);

/* t's view shape into dims (WF_MAX_DIMS): its shape, except that stored
 * blocks end in the bytes of one row.  Returns the number of dims. */
uint32_t wf_view_shape(const struct wf_tensor *t, uint64_t *dims);

/* Appends t's view shape as a JSON array ("[4096, 32]"). */
void wf_view_shape_json(const struct wf_tensor *t, struct wf_buf *b);

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

/* wf_view_read with the source bytes read by pread() from fd (t's file,
 * src_len bytes when opened) instead of a mapping: a first read of a page
 * through a fresh mapping costs a page fault, several times the copy on a
 * VM.  Bytes of a raw view go straight into out; others through bounce
 * (cap bytes, at least one source block: a whole number of blocks is read
 * and decoded at a time).  Not for a layer of several stored tensors
 * (t->q: WF_ERR_RANGE).  Returns what wf_view_read returns, or
 * WF_ERR_CHANGED when the file ends before the bytes the read needs (it
 * shrank), WF_ERR_IO when pread fails. */
enum wf_err wf_view_pread(const struct wf_tensor *t, int fd, uint64_t src_len, uint64_t off, size_t len,
			  void *out, size_t *n_out, uint8_t *bounce, size_t cap);

#endif
