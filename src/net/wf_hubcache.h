/* wf_hubcache.h - Hub files written into the Hugging Face cache layout, as
 * huggingface_hub lays it out (docs/remote.md; research notes 1.5), so
 * that transformers and huggingface_hub find them offline:
 *
 *   HUB/models--ORG--NAME/blobs/BLOB            the bytes
 *   HUB/models--ORG--NAME/snapshots/COMMIT/PATH a relative symlink to them
 *   HUB/models--ORG--NAME/refs/REV              the commit, no newline
 *
 * HUB is $HF_HUB_CACHE (or $HUGGINGFACE_HUB_CACHE), else $HF_HOME/hub,
 * else $XDG_CACHE_HOME/huggingface/hub, else ~/.cache/huggingface/hub.
 * BLOB is the file's X-Linked-Etag, else its ETag, without W/ and quotes
 * (the sha256 of an LFS file).  Every write is a temporary name renamed
 * into place (a blob's is BLOB.XXXXXXXX.incomplete, as huggingface_hub's
 * own since v1.18), so a reader never sees part of one.  All best effort:
 * a cache that cannot be written costs only itself.
 */
#ifndef WF_HUBCACHE_H
#define WF_HUBCACHE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The blob name of an ETag as huggingface_hub normalizes it; false when
 * it cannot name a file (empty, a '/', too long). */
bool wf_hubc_blob_name(const char *etag, char *out, size_t cap);

/* Keeps data as the blob of etag (unless it is there) and links
 * snapshots/COMMIT/PATH to it. */
bool wf_hubc_put(const char *repo, const char *commit, const char *path, const char *etag, const uint8_t *data,
		 size_t len);

/* A blob written by the caller: wf_hubc_begin opens its temporary file
 * (tmp filled; -1 when the blob is there already or cannot be made),
 * wf_hubc_end renames it into place when ok (else removes it) and links
 * snapshots/COMMIT/PATH to the blob. */
int wf_hubc_begin(const char *repo, const char *etag, char *tmp, size_t cap);
bool wf_hubc_end(const char *repo, const char *commit, const char *path, const char *etag, const char *tmp,
		 bool ok);

/* refs/REV := commit. */
bool wf_hubc_ref(const char *repo, const char *rev, const char *commit);

#endif
