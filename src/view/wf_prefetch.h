/* wf_prefetch.h - one in-order reader for a tensor's source bytes on
 * network storage.
 *
 * On a model file that lives on network storage (an rclone mount, NFS), a
 * read of a decoded view faults its source pages in from the mapping: the
 * network idles while we decode and while the request goes back and
 * forth, and when the kernel sends the mount several reads at once, their
 * faults reach the lower mount out of order, which rclone (without its
 * disk cache) serves by dropping its read-ahead buffer and re-seeking.
 * So each read of at least WF_PREFETCH_MIN_READ bytes instead hands its
 * source range, plus what the next WF_PREFETCH_AHEAD reads of the same
 * size will need, to one background thread, which reads the stream in
 * order with pread() (filling the page cache the mapping reads from), and
 * waits until its own range is in; the next reads' ranges are then
 * already travelling while this one decodes.  The lower mount sees one
 * sequential reader, as for `cat`.
 *
 * (MADV_WILLNEED on the next range was tried first: it sends the lower
 * FUSE mount many concurrent reads at once; first reads through rclone
 * became 3-10x slower.)
 */
#ifndef WF_PREFETCH_H
#define WF_PREFETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "model/wf_model.h"

#define WF_PREFETCH_MIN_READ ((size_t)64 << 10)
#define WF_PREFETCH_AHEAD 4
/* The least a read puts on the stream past its own start, in source bytes:
 * a quantized view's next WF_PREFETCH_AHEAD reads need only a few KiB. */
#define WF_PREFETCH_WINDOW ((uint64_t)2 << 20)
/* Streams (each a thread) kept at once: readers of different tensors, or
 * of different places of one, each get their own. */
#define WF_PREFETCH_STREAMS 4

/* Before view bytes [off, off + len) of t are decoded from the mapping of
 * fd (t's file, open read-only): puts their source bytes and those of
 * view bytes [off + len, off + (1 + WF_PREFETCH_AHEAD) * len), clipped to
 * the tensor's data, on the read-ahead thread's stream (continuing the
 * stream when this range follows on from it, else replacing it), and
 * waits until the thread has read this read's own part.  Reads shorter
 * than WF_PREFETCH_MIN_READ (random access), fd < 0, and (in the default
 * mode) a file on a local filesystem do nothing.  Advisory only: when the
 * thread's pread fails or another stream replaces this one, the wait ends
 * and the caller's own faults read (or fail) as they would have. */
void wf_prefetch_read(const struct wf_tensor *t, int fd, uint64_t off, size_t len);

/* -1: only for files on network filesystems (FUSE, NFS, SMB/CIFS, Ceph,
 * 9p, AFS): the default, unless WEIGHTFS_NO_READAHEAD is set to anything
 * but "" or "0" (then 0); 0: never; 1: always (tests). */
void wf_prefetch_set(int mode);

/* True when WEIGHTFS_NO_READAHEAD turns the in-order reader off (set to
 * anything but "" or "0"): the mount then also keeps the kernel's
 * read-ahead, which without this reader faults a remote model's pages out
 * of order. */
bool wf_prefetch_env_off(void);

/* Blocks until the threads have read everything on their streams (tests). */
void wf_prefetch_drain(void);

/* How many streams hold a range of fd, and the end of the one holding
 * source byte a (0 if none) (tests). */
unsigned wf_prefetch_streams(int fd, uint64_t a, uint64_t *end);

#endif
