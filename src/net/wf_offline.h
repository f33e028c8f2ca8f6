/* wf_offline.h - what a remote source was at its last online staging,
 * kept in the cache folder so that -o offline can stage it again with no
 * network at all (docs/remote.md, "Offline").
 *
 * A record is CACHE/.sources/KEY.json, KEY a hash of the source as named
 * (the Hub's endpoint, repository, revision and subfolder; or the URL):
 * the commit the revision resolved to, the chunk size, and each staged
 * file by its path in the staging folder: a small file by its size and
 * the cache file holding its bytes (CACHE/files/..., checked as chunks
 * are: wf_cache.h), a weight file by the pin its remote object had (the
 * URL asked, the URL that answered, its ETag, its size).  Written under a
 * temporary name and renamed, so a reader sees the last whole record.
 * The .sources folder is bookkeeping: never evicted, a few KiB a source.
 */
#ifndef WF_OFFLINE_H
#define WF_OFFLINE_H

#include "base/wf_common.h"
#include "net/wf_remote.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wf_rec;

struct wf_rec_file {
	const char *rel;      /* its path in the staging folder */
	uint64_t size;
	bool weight;          /* a weight file: the pin below; else a small file */
	const char *open_url, *url, *etag; /* a weight file's pin */
	const char *key;      /* a small file's cache file, relative to the cache folder */
};

/* A record being made of source `src` (as named on the command line,
 * the Hub's endpoint given apart); NULL when out of memory. */
struct wf_rec *wf_rec_new(const char *src, const char *endpoint);
void wf_rec_free(struct wf_rec *r);

/* What the record says of the staging: the folder to open in the staging
 * folder, and the Hub's commit ("" for a URL). */
void wf_rec_set(struct wf_rec *r, const char *local_rel, const char *commit);

/* Adds a small file (its bytes kept in the cache) or a weight file's pin;
 * false when out of memory or the bytes could not be kept. */
bool wf_rec_small(struct wf_rec *r, const char *rel, const char *url, const char *etag, const uint8_t *data,
		  size_t len);
bool wf_rec_weight(struct wf_rec *r, const char *rel, const char *open_url, const struct wf_robj *o);

/* Writes the record into the cache folder (wf_remote_conf.cache). */
enum wf_err wf_rec_save(struct wf_rec *r, char *err);

/* The record of src (as wf_rec_new names it), for an offline staging;
 * err (one line) when the cache holds none: the source was never staged
 * online with this cache folder. */
enum wf_err wf_rec_load(const char *src, const char *endpoint, struct wf_rec **out, char *err);

/* A loaded record's contents. */
const char *wf_rec_local(const struct wf_rec *r);
const char *wf_rec_commit(const struct wf_rec *r);
uint64_t wf_rec_chunk(const struct wf_rec *r);
size_t wf_rec_count(const struct wf_rec *r);
bool wf_rec_file(const struct wf_rec *r, size_t i, struct wf_rec_file *f);

/* A small file's bytes from the cache (malloc'd, f->size of them); NULL
 * when the cache no longer holds them whole. */
uint8_t *wf_rec_small_data(const struct wf_rec_file *f);

#endif
