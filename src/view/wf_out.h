/* wf_out.h - what a tensor's file holds: the mount's output dtype.
 *
 * By default a float or quantized tensor's file holds float32, decoded.
 * `-o dtype=f16` and `bf16` round those float32 values to nearest-even
 * (as numpy's astype(np.float16) and torch's .to(torch.bfloat16) do);
 * `stored` shows the file's own bytes: float and integer tensors keep their
 * dtype and shape, a tensor packed in blocks becomes uint8 with shape
 * [..., bytes per row].  Integer and bool tensors are the same under every
 * option.  wf_tensor_set_view fills a tensor's view fields from its type
 * and the option; wf_view_read (wf_view.h) then serves that view.
 */
#ifndef WF_OUT_H
#define WF_OUT_H

#include "base/wf_common.h"
#include "model/wf_model.h"

#include <stdint.h>

enum wf_out {
	WF_OUT_F32 = 0,
	WF_OUT_F16,
	WF_OUT_BF16,
	WF_OUT_STORED,
};

/* Parses "f32", "f16", "bf16" or "stored" (also "float32", "float16",
 * "bfloat16"); false for anything else. */
bool wf_out_parse(const char *s, enum wf_out *out);
const char *wf_out_name(enum wf_out out);

/* Sets t's view for option `out`: t->vk and t->size.  Fails
 * (WF_ERR_UNSUP, naming the tensor) when `stored` cannot show t as whole
 * rows of bytes (sub-byte types with an odd row). */
enum wf_err wf_tensor_set_view(struct wf_tensor *t, enum wf_out out, char *err);

/* The same for every tensor of m. */
enum wf_err wf_model_set_view(struct wf_model *m, enum wf_out out, char *err);

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
struct wf_buf;
void wf_view_shape_json(const struct wf_tensor *t, struct wf_buf *b);

/* float32 to IEEE half and to bfloat16, rounding to nearest-even:
 * overflow gives infinity, subnormal results round correctly.  A NaN stays
 * a quiet NaN with its sign and the top bits of its payload (the bits that
 * fit), the quiet bit set: half 0x7E00 | sign | payload >> 13, bfloat16
 * (bits >> 16) | 0x0040. */
uint16_t wf_f32_to_f16(float f);
uint16_t wf_f32_to_bf16(float f);

/* The same over arrays (SIMD where the CPU has F16C/AVX2; bit-identical). */
void wf_f32_to_f16_n(const float *src, uint16_t *dst, size_t n);
void wf_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n);

#endif
