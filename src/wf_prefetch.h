/* wf_prefetch.h - asking for a tensor's next source bytes early.
 *
 * On a model file that lives on network storage (an rclone mount, NFS), a
 * read of a decoded view waits for its source pages, then decodes, then
 * the next read waits again: the network idles while we decode.  Telling
 * the kernel which source range the next read of the same tensor will
 * need (MADV_WILLNEED) starts that transfer before this read decodes.
 */
#ifndef WF_PREFETCH_H
#define WF_PREFETCH_H

#include <stddef.h>
#include <stdint.h>

#include "wf_model.h"

/* Asks the kernel to start reading the source bytes that view bytes
 * [off + len, off + len + WF_PREFETCH_AHEAD * len) of t decode from, clipped
 * to the tensor's data and to map_len.  map is the page-aligned read-only
 * mapping of t's file (map_len bytes).  Reads shorter than
 * WF_PREFETCH_MIN_READ (random access) ask for nothing.  Advisory only:
 * errors are ignored, and nothing is read here; the caller's own read of
 * those bytes still checks and faults them as before. */
void wf_prefetch_next(const struct wf_tensor *t, const uint8_t *map, uint64_t map_len, uint64_t off, size_t len);

#define WF_PREFETCH_MIN_READ ((size_t)64 << 10)
#define WF_PREFETCH_AHEAD 2

#endif
