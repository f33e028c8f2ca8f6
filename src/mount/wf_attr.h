/* wf_attr.h - the extended attributes of a mount's files.
 *
 * A tensor's file carries four read-only attributes (docs/weightfs.1):
 *   user.weightfs.shape   its shape as a JSON array, outermost first
 *   user.weightfs.dtype   the numpy dtype of the file's elements
 *   user.weightfs.type    the tensor's stored type (ggml or safetensors name)
 *   user.weightfs.name    its name in the model file, bytes as stored
 * and, unless it is a decoded quantized layer, a fifth:
 *   user.weightfs.sha256  the SHA-256 of its stored bytes in the model file
 *                         (not of the decoded view), 64 hex digits, made on
 *                         first ask and kept (wf_xattr_sha256)
 * while a decoded quantized layer (wf_hfq.h) has instead:
 *   user.weightfs.quant   its scheme and parameters as a JSON object
 * Other nodes carry none.  Which names exist and what they hold is decided
 * here, so the FUSE layer only sizes its replies and maps errors.
 */
#ifndef WF_ATTR_H
#define WF_ATTR_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "mount/wf_tree.h"
#include "view/wf_live.h"

#define WF_XATTR_PREFIX "user.weightfs."

/* Appends to b the value of attribute `name` (NUL-terminated, with its
 * namespace: "user.weightfs.shape") of node idx of t; the value has no
 * terminating NUL.  Returns WF_OK; WF_ERR_RANGE when the node has no
 * attribute of that name (or idx is no node); WF_ERR_NOMEM when an
 * append failed (b.oom).  err (may be NULL) gets one line. */
enum wf_err wf_xattr_get(const struct wf_tree *t, uint32_t idx, const char *name, struct wf_buf *b,
			 char *err);

/* The digests user.weightfs.sha256 has given so far, one slot per tensor,
 * shared by every reading thread. */
struct wf_sums;

/* A cache for the n tensors of a model; NULL when out of memory.  Its
 * slots are allocated on the first digest asked for. */
struct wf_sums *wf_sums_new(size_t n);
void wf_sums_free(struct wf_sums *s);

/* Appends to b user.weightfs.sha256 of node idx of t: the hex SHA-256 of
 * the tensor's stored bytes, read through lv's guarded read (a part that
 * changed fails the read) the first time, from s after that.  Safe to call
 * from several threads at once.  Returns WF_OK; WF_ERR_RANGE when the node
 * has no such attribute (no tensor, or a decoded layer); WF_ERR_CHANGED or
 * WF_ERR_IO when its bytes could not be read; WF_ERR_NOMEM. */
enum wf_err wf_xattr_sha256(struct wf_sums *s, struct wf_live *lv, const struct wf_tree *t, uint32_t idx,
			    struct wf_buf *b, char *err);

/* The names of node idx's attributes as listxattr(2) gives them, each
 * followed by a NUL, back to back; *len gets their bytes, 0 for a node
 * with none (or no node).  The text is static. */
const char *wf_xattr_list(const struct wf_tree *t, uint32_t idx, size_t *len);

#endif
