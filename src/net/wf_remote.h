/* wf_remote.h - a remote object seen as read-only memory, fetched by the
 * chunk on first touch (docs/remote.md, docs/design.md).
 *
 * An object is a URL, its size and its ETag, pinned when it is opened.
 * wf_robj_data gives an address range of the object's size: a private
 * anonymous mapping registered with userfaultfd(2).  A thread that touches
 * a page no chunk of which is here yet waits in the kernel while a fetch
 * thread GETs that chunk (-o remote_chunk=, 4 MiB) by one ranged request
 * sent If-Match the pinned ETag, checks the answer (206, the Content-Range
 * asked for, the whole body, the same ETag) and copies it in, which wakes
 * the thread.  So the parsers and every view read a remote model through
 * a plain pointer, untouched, and only the chunks they touch are fetched.
 *
 * A fetch that fails (the server down after its retries, or an answer for
 * another version of the object) wakes the waiting thread with SIGBUS at
 * the address it touched: the one handler (base/wf_bus.h) turns that into
 * a refused header or an EIO read, never other bytes.  An object whose
 * version changed is marked so (wf_robj_check) and says so once on
 * stderr; a transient failure is not, and the next read tries again.
 *
 * Up to -o remote_streams= (4) chunks are fetched at once, each thread with
 * its own libcurl handle (connections kept alive; DNS and TLS sessions
 * shared).  A fault right after the previous one's read-ahead doubles the
 * window of chunks fetched ahead (to 16); any other resets it to none.
 * Chunks held in memory are capped (-o remote_mem=, 256 MiB): the oldest
 * are dropped (MADV_DONTNEED) and fetched again if touched again, so
 * memory is bounded by streams x chunk plus that cap, whatever the model.
 *
 * With a cache folder (-o cache=DIR), each chunk fetched is also kept in
 * DIR/KEY/CHUNKSIZE-INDEX, KEY a hash of the URL opened, the pinned ETag
 * and the size: a later mount of the same version reads it from disk.  A
 * chunk file is written under a temporary name and renamed whole, and it
 * ends with a checksum of its bytes, checked on every read from the cache:
 * a torn or partial file (a crash, a full disk) is fetched again, never
 * served.
 */
#ifndef WF_REMOTE_H
#define WF_REMOTE_H

#include "base/wf_common.h"
#include "net/wf_http.h"

#include <stdbool.h>
#include <stdint.h>

struct wf_remote_conf {
	uint64_t chunk;   /* bytes per ranged GET: a multiple of the page size, 64 KiB .. 256 MiB */
	unsigned streams; /* fetches in flight, 1..64 */
	uint64_t mem;     /* chunks kept in memory at most, in bytes */
	const char *cache; /* a folder keeping fetched chunks across mounts, or NULL */
};
extern struct wf_remote_conf wf_remote_conf;

struct wf_robj;

/* Opens url: one ranged GET of its first byte (redirects followed, the
 * token kept off other hosts) pins the URL that answered, its ETag and its
 * size; want_size (or -1) must match.  err: one line. */
enum wf_err wf_robj_open(struct wf_robj **out, const char *url, const char *token, int64_t want_size,
			 char *err);

/* wf_robj_open for an S3 object: every request (the pinning one and each
 * chunk's) signed with sig (copied), never redirected. */
enum wf_err wf_robj_open_signed(struct wf_robj **out, const char *url, const struct wf_http_sigv4 *sig,
				int64_t want_size, char *err);

/* Fetches the object's first chunk now (or reads it from the cache), held
 * until the mapping is made and placed on the first touch: the pinning
 * threads call it side by side, so that parsing a folder's headers costs
 * no round trip per file.  Up to remote_mem bytes in all; nothing when
 * over it, or when the fetch fails (the first touch then fetches it, and
 * says why).  Before wf_robj_data, from one thread per object. */
void wf_robj_prefetch_head(struct wf_robj *o);

/* The object's bytes (wf_robj_size of them), mapped on first call and for
 * the object's life; NULL with err set when the mapping cannot be made. */
const uint8_t *wf_robj_data(struct wf_robj *o, char *err);
uint64_t wf_robj_size(const struct wf_robj *o);
const char *wf_robj_url(const struct wf_robj *o);

/* WF_OK while the object is the version pinned; WF_ERR_CHANGED (err: why)
 * once a fetch saw another. */
enum wf_err wf_robj_check(const struct wf_robj *o, char *err);

/* Bytes fetched over the network so far, all objects (for tests). */
uint64_t wf_remote_fetched(void);

/* After fork(2) in the child (fuse_daemonize): the fetch threads and the
 * userfaultfd belong to the parent; makes them again.  Nothing when no
 * object was mapped. */
enum wf_err wf_remote_after_fork(char *err);

/* Stops the threads and unmaps every object (at exit; no read may be in
 * flight). */
void wf_remote_shutdown(void);

#endif
