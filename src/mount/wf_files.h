/* wf_files.h - the bytes of the mount's files.
 *
 * The tree (wf_tree.h) gives every file a name and a kind; this says what
 * each holds, as a list of segments, each either bytes in memory or a
 * range of one tensor's view (wf_live.h):
 *   a tensor          its view, behind its .npy header with -o npy
 *   model.safetensors its header (made on first read), then every view
 *   other files       bytes (metadata.json, tensors.json, WEIGHTFS.txt,
 *                     metadata/KEY, parts.json, sidecars)
 * wf_live_read serves every file through wf_files_seg, so the guarded read
 * never needs to know the tree.
 */
#ifndef WF_FILES_H
#define WF_FILES_H

#include "mount/wf_tree.h"
#include "view/wf_live.h"

#include <stdint.h>

/* The bytes of file node idx of t (0 for a directory). */
uint64_t wf_files_size(const struct wf_tree *t, uint32_t idx);

/* The segment of file node idx of tree (a struct wf_tree) that holds byte
 * off; kind WF_SEG_NONE at or past the end, for a directory, or for no
 * node.  A wf_seg_fn, safe to call from many reading threads at once. */
void wf_files_seg(const void *tree, uint32_t idx, uint64_t off, struct wf_seg *seg);

/* Copies bytes [off, off+len) of file node `node` of t into out through
 * the guarded read lv (set up over t with wf_files_seg): what the mount
 * and `weightfs cat` serve, -o preview's pictures included. */
enum wf_err wf_files_read(const struct wf_tree *t, struct wf_live *lv, uint32_t node, uint64_t off, size_t len,
			  void *out, size_t *got);

#endif
