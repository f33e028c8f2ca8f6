/* wf_cache.h - the local cache folder of fetched bytes (docs/remote.md,
 * "The cache"): whole files written under a temporary name and renamed,
 * each ending with a checksum of its bytes, kept under a size limit by
 * evicting the least recently used, shared safely by several processes.
 *
 * Every file of the folder but its bookkeeping is a "cache file": DIR/SUB/
 * NAME, SUB a folder of the cache (an object's key, or "files").  A cache
 * file is its bytes, then their 64-bit checksum (FNV-1a's step over
 * 64-bit words, wf_cache.c), little-endian; a read
 * checks both the length and the sum, so a torn or partial file (a crash,
 * a full disk) reads as absent, never as bytes.  A hit sets the file's
 * mtime to now: mtime orders eviction (atime is often off or relatime).
 *
 * DIR/.lock is the bookkeeping: flock(2)ed exclusively around every
 * rename into place and every eviction, it holds the folder's size in
 * bytes as text.  A put that would take the folder over the limit first
 * scans the folder (the truth, whatever other processes did), deletes
 * the oldest files until the new one fits under 7/8 of the limit (so a
 * full cache is scanned once per limit/8 bytes put, not at every put),
 * then renames.  Temporary files (NAME.tmp.PID.TID) are never counted
 * nor evicted while fresh: an eviction can never remove a file another
 * process is about to rename into place, and a rename is atomic, so a
 * reader opens a whole file or none.  A temporary file an hour old was
 * left by a crash: the scan removes it.
 */
#ifndef WF_CACHE_H
#define WF_CACHE_H

#include "base/wf_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The default limit of a cache folder (-o cache_size=). */
#define WF_CACHE_SIZE_DEFAULT (10ull << 30)

/* A byte count: decimal digits, then optionally K, M, G or T (powers of
 * 1024, either case, an optional "B" or "iB" after).  False for anything
 * else, an empty string or an overflow. */
bool wf_size_parse(const char *s, uint64_t *out);

/* The default cache folder: $XDG_CACHE_HOME/weightfs when that is an
 * absolute path, else $HOME/.cache/weightfs.  err when neither is set. */
enum wf_err wf_cache_default(char *out, size_t cap, char *err);

/* Makes dir (and its parents) and checks that a file can be made in it
 * (and puts a CACHEDIR.TAG there, which backup tools skip); *real
 * (malloc'd) is its absolute path.  err: one line. */
enum wf_err wf_cache_ready(const char *dir, char **real, char *err);

/* The cache file dir/rel, len bytes, into buf: true only when the file is
 * whole and its sum right (it is then marked used). */
bool wf_cache_get(const char *dir, const char *rel, uint8_t *buf, uint64_t len);

/* Keeps buf[0..len) as dir/rel (rel's folder made when missing), the
 * folder kept under limit bytes (0: no limit).  Failures only cost a
 * later fetch: false, nothing else. */
bool wf_cache_put(const char *dir, const char *rel, const uint8_t *buf, uint64_t len, uint64_t limit);

/* Under the folder's lock: scans dir, removes stale temporary files and
 * the least recently used cache files until the rest plus `incoming`
 * bytes fit in `target`, and records the size left.  *total (may be
 * NULL): the bytes left.  For puts and the tests; WF_ERR_IO when the
 * folder cannot be read or locked. */
enum wf_err wf_cache_evict(const char *dir, uint64_t target, uint64_t incoming, uint64_t *total);

#endif
