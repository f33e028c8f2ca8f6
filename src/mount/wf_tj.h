/* wf_tj.h - tensors.json made a window at a time.
 *
 * tensors.json lists every tensor (name, path, type, dtype, shape, size,
 * offset, nbytes): about 140 bytes a tensor, 3.5 x the header of a GGUF of
 * 1,000,000 one-float tensors, which kept whole put `weightfs convert -o
 * gguf=f16` over docs/security.md's bound.  So the mount does not keep it:
 * one pass when the tree is built measures it and keeps where each group
 * of WF_TJ_GROUP tensors' entries starts (8 bytes a group); a read makes
 * the groups it covers again.  The bytes are exactly wf_tj_text's.
 */
#ifndef WF_TJ_H
#define WF_TJ_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "model/wf_model.h"

#include <stdint.h>

struct wf_tj;

/* Tensors whose entries a checkpoint covers: a read makes at most about
 * this many entries more than it returns. */
#define WF_TJ_GROUP 64

/* Appends tensor i's path in the mount to out (the tree's: wf_tree_path). */
typedef void (*wf_tj_path_fn)(const void *ctx, size_t i, struct wf_buf *out);

/* Measures tensors.json of model m, whose tensors' paths path(ctx, i)
 * gives (m and ctx must outlive the stream, and the paths stay the same):
 * *len gets its bytes.  Returns WF_OK or WF_ERR_NOMEM. */
enum wf_err wf_tj_new(const struct wf_model *m, wf_tj_path_fn path, const void *ctx, struct wf_tj **out,
		      uint64_t *len);

void wf_tj_free(struct wf_tj *s);

/* A number no other stream of this process has: tells windows apart. */
uint64_t wf_tj_id(const struct wf_tj *s);

/* Fills buf with bytes [off, off + n) of tensors.json, which must lie
 * inside it.  Safe to call from several threads at once.  Returns WF_OK,
 * WF_ERR_NOMEM, or WF_ERR_RANGE when the range passes the end. */
enum wf_err wf_tj_read(const struct wf_tj *s, uint64_t off, size_t n, char *buf);

/* Appends the whole of tensors.json to out (for tests and tools: the
 * mount never holds it whole); out->oom when out of memory. */
void wf_tj_text(const struct wf_tj *s, struct wf_buf *out);

#endif
