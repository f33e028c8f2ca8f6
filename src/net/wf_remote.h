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
 * With a cache folder (wf_remote_conf.cache: -o cache=DIR, else the
 * default one wf_source_stage picks), each chunk fetched is also kept in
 * DIR/KEY/CHUNKSIZE-INDEX, KEY a hash of the URL opened, the pinned ETag
 * and the size: a later mount of the same version reads it from disk.  The
 * folder's files are written, checked, bounded and shared as wf_cache.h
 * says: a torn or partial file (a crash, a full disk) is fetched again,
 * never served.  -o offline (wf_remote_conf.offline) fetches nothing: a
 * chunk the cache lacks fails at once, as a fetch that failed does.
 * wf_remote_fill puts chunks into the cache without mapping them
 * (weightfs fetch).
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
	const char *cache; /* a folder keeping fetched chunks across mounts (absolute), or NULL */
	uint64_t cache_size; /* the cache folder's limit in bytes (wf_cache.h) */
	bool cache_off;    /* -o cache=none: no cache, not even the default one */
	bool offline;      /* -o offline: no network; what the cache lacks fails with EIO */
};
extern struct wf_remote_conf wf_remote_conf;

struct wf_robj;

/* How wf_robj_open reaches an object. */
struct wf_robj_how {
	const char *token;                /* a bearer token for url's own host, or NULL */
	const struct wf_http_sigv4 *sig;  /* S3: every request signed with it (copied), never redirected; or NULL */
	int64_t want_size;                /* the size listed (the answer must match), or -1 */
	void *curl;                       /* the calling thread's handle (wf_http_new), or NULL: one for the call */
};

/* Opens url: one ranged GET from its first byte (redirects followed, the
 * token kept off other hosts) pins the URL that answered, its ETag and its
 * size, and brings the first chunk (a mount parses it first), held until
 * the mapping is made and placed on the first touch.  It asks for one
 * byte instead when the cache holds that chunk at the version it pinned
 * last (a pin hint in the cache), or when the first chunks held reach
 * remote_mem.  err: one line. */
enum wf_err wf_robj_open(struct wf_robj **out, const char *url, const struct wf_robj_how *how, char *err);

/* Brings the object's first chunk now if wf_robj_open did not (from the
 * cache, else the network), as wf_robj_open would have kept it; nothing
 * when over remote_mem or when the fetch fails (the first touch then
 * fetches it, and says why).  curl: as in wf_robj_how.  Before
 * wf_robj_data, from one thread per object. */
void wf_robj_prefetch_head(struct wf_robj *o, void *curl);

/* An object pinned without the network: as wf_robj_open would have pinned
 * open_url (the URL asked, which names its chunks in the cache) answered
 * by url with etag and size (for -o offline, from what an earlier mount
 * recorded).  token: sent to url's host, or NULL. */
enum wf_err wf_robj_pinned(struct wf_robj **out, const char *open_url, const char *url, const char *etag,
			   uint64_t size, const char *token, char *err);

/* The object's bytes (wf_robj_size of them), mapped on first call and for
 * the object's life; NULL with err set when the mapping cannot be made. */
const uint8_t *wf_robj_data(struct wf_robj *o, char *err);
uint64_t wf_robj_size(const struct wf_robj *o);
const char *wf_robj_url(const struct wf_robj *o);
const char *wf_robj_etag(const struct wf_robj *o);   /* as the server gave it, quotes and all */

/* Whether every chunk of o has been in the cache folder during this
 * process (fetched into it, or read from it): what a whole Hub file put
 * into the Hugging Face cache at the end waits for. */
bool wf_robj_whole(const struct wf_robj *o);

/* WF_OK while the object is the version pinned; WF_ERR_CHANGED (err: why)
 * once a fetch saw another. */
enum wf_err wf_robj_check(const struct wf_robj *o, char *err);

/* What a wf_remote_fill did so far (what its callback sees). */
struct wf_fill {
	uint64_t total;    /* bytes of the chunks asked */
	uint64_t done;     /* of those, bytes now in the cache */
	uint64_t fetched;  /* of done, bytes fetched over the network (the rest was there) */
	size_t chunks;     /* chunks asked */
};
typedef void (*wf_fill_fn)(void *ctx, const struct wf_fill *f);

struct wf_fill_range {
	struct wf_robj *o;
	uint64_t off, len;
};

/* Makes every chunk covering the ranges r[0..n) present in the cache
 * folder: each one not there already (whole and checked) is fetched, up
 * to remote_streams at once, and written to the cache, never kept in
 * memory.  fn (may be NULL) is called from this thread about five times a
 * second and once at the end.  WF_OK when all are in the cache; else err
 * says the first failure (the chunks not yet begun are not tried). */
enum wf_err wf_remote_fill(const struct wf_fill_range *r, size_t n, wf_fill_fn fn, void *ctx, char *err);

/* Bytes [off, off+len) of o from the cache alone into dst: false when a
 * chunk of them is not there whole (never the network). */
bool wf_robj_cached(struct wf_robj *o, uint64_t off, uint8_t *dst, size_t len);

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
