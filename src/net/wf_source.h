/* wf_source.h - remote sources named on the command line: hf://ORG/NAME
 * [@REV][/SUBFOLDER] and http(s)://HOST/PATH (docs/remote.md).
 *
 * A source is staged as a local folder the model loaders read as they read
 * any folder: the small files (config.json, the tokenizer's, the index:
 * every file that is no weight file and at most 64 MiB) fetched whole, and
 * each weight file (.safetensors, .gguf) a sparse placeholder of its size,
 * registered here.  wf_open_file_at asks wf_source_open for every path it
 * opens: a placeholder comes back as its remote object (wf_remote.h),
 * pinned then; its bytes are never read from the placeholder.  The Hub's
 * revision is resolved to a commit once, and every file read at it.
 */
#ifndef WF_SOURCE_H
#define WF_SOURCE_H

#include "base/wf_common.h"
#include "net/wf_remote.h"

#include <stdbool.h>

/* True for hf://, http:// and https:// names. */
bool wf_source_is_remote(const char *name);

/* Resolves src and stages it; *local (malloc'd) is the path to open in
 * its place.  err: one line (gated, private, missing repository, revision
 * or file, the server's answer; with -o offline or HF_HUB_OFFLINE, no
 * record of the source in the cache).  The cache folder is chosen here
 * (wf_remote_conf: the one named, else the default, wf_cache.h), and an
 * online staging records itself there for a later offline one
 * (wf_offline.h); the Hub's small files also land in the Hugging Face
 * cache layout (wf_hubcache.h) unless the cache is off. */
enum wf_err wf_source_stage(const char *src, char **local, char *err);

/* Why the default cache folder is not used, when it cannot be made or
 * written (the staging went on uncached); NULL when it is, or was not
 * asked for.  For the caller to say once. */
const char *wf_source_warning(void);

/* The weight files staged, in listing order (i from 0; false past the
 * end): o its pinned object (NULL until pinned: wf_source_open pins it),
 * path its path in the Hub's repository (or the URL's file name), blob
 * its LFS sha256 from the Hub's listing (its name in the Hugging Face
 * cache), or NULL. */
struct wf_source_weight {
	struct wf_robj *o;
	const char *path;
	const char *blob;
};
bool wf_source_weight(size_t i, struct wf_source_weight *w);

/* The Hub repository staged (ORG/NAME) and *commit its commit; NULL for
 * a URL or before a staging. */
const char *wf_source_hub(const char **commit);

/* *out: the remote object a staged placeholder at path stands for, opened
 * and pinned on first ask; NULL for any other path (WF_OK). */
enum wf_err wf_source_open(const char *path, struct wf_robj **out, char *err);

/* The digest a source publishes for a file: the Hub's listing gives an
 * LFS file's SHA-256 (lfs.oid) and any other file's git blob id (oid: the
 * SHA-1 of "blob SIZE\0" and its bytes); S3 and plain HTTPS publish none
 * a client can hold the bytes to (an ETag is no digest). */
enum wf_digest_kind {
	WF_DIGEST_NONE,
	WF_DIGEST_SHA256,
	WF_DIGEST_GIT_SHA1,
};

/* The digest entry e of a Hub tree listing (one element of
 * /api/models/REPO/tree/COMMIT) gives its file: an LFS file's lfs.oid (64
 * lowercase hex digits, its SHA-256), another file's oid (40, its git blob
 * id; an LFS file's oid is its pointer's, never its bytes').  Anything
 * else (missing, not a string, another length, not lowercase hex) is
 * WF_DIGEST_NONE, hex "". */
struct cJSON;
enum wf_digest_kind wf_hub_entry_digest(const struct cJSON *e, char hex[65]);

/* The i-th file staged so far (every source, in staging order; placeholders
 * and small files alike): *path its staged path (valid until cleanup),
 * *kind and hex (lowercase, NUL-ended; "" for none) the digest its source
 * published for it.  False when there is no i-th file. */
bool wf_source_file(size_t i, const char **path, enum wf_digest_kind *kind, char hex[65]);

/* Removes what wf_source_stage made (at exit). */
void wf_source_cleanup(void);

#endif
