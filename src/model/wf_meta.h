/* wf_meta.h - metadata.json's text, framed the same way for every format,
 * and how every consumer reads it whatever the format.
 *
 * One object, one entry a line after a space:
 *     {\n "key": value,\n "key": value\n}\n      and  {}\n  when empty.
 * The parsers only say what the keys and values are; the mount tests
 * compare the text byte for byte with the oracle manifests, so its layout
 * lives in one place.
 */
#ifndef WF_META_H
#define WF_META_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "model/wf_model.h"

struct wf_meta_json {
	struct wf_buf b; /* the text so far; b.oom once any append failed */
	size_t n;        /* entries begun */
};

/* Begins the next entry: the separator, key[0..n) as a JSON string (any
 * bytes: wf_buf_json_str) and ": ".  The caller then appends the value,
 * which must be one JSON value, to w->b. */
void wf_meta_json_key(struct wf_meta_json *w, const void *key, size_t n);

/* Closes the object and gives the text to m (metadata_json and
 * metadata_json_len, replacing any it had) with n_kv the number of
 * entries.  Returns WF_ERR_NOMEM, with m unchanged, if any append failed.
 * w is left empty either way. */
enum wf_err wf_meta_json_finish(struct wf_meta_json *w, struct wf_model *m, char *err);

/* Drops a text abandoned part way; safe on an empty w. */
void wf_meta_json_free(struct wf_meta_json *w);

/* A safetensors model keeps its text whole (m->metadata_json: bounded by
 * its header, which cJSON parsed anyway); a GGUF's is made on read from
 * its key/values (m->meta_gen, wf_gguf_meta.h) and never held whole.
 * These serve both. */

/* metadata.json's length in bytes (that of "{}\n" for a model with none). */
uint64_t wf_meta_len(const struct wf_model *m);

/* Fills buf with bytes [off, off + n) of metadata.json.  A GGUF's are made
 * from parts[0]'s bytes, mapped for the call if the model keeps it
 * unmapped (wf_maps.h); the caller reads under the SIGBUS guard (wf_live,
 * or wf_meta_dup's) and checks the part afterwards if it must know the
 * bytes are the file's as opened.  Returns WF_OK; WF_ERR_RANGE past the
 * end; WF_ERR_CHANGED when the file's bytes no longer make the text
 * measured at open; WF_ERR_NOMEM or WF_ERR_IO; err (may be NULL) says. */
enum wf_err wf_meta_read(const struct wf_model *m, uint64_t off, size_t n, char *buf, char *err);

/* The whole text as a malloc'd, NUL-terminated copy in *text (*len bytes),
 * for the few callers that need it small or on demand (the C library's
 * weightfs_metadata_json).  A GGUF's is made under a SIGBUS window and
 * parts[0] checked afterwards: a file changed or cut short gives
 * WF_ERR_CHANGED, never other bytes.  Returns as wf_meta_read. */
enum wf_err wf_meta_dup(const struct wf_model *m, char **text, size_t *len, char *err);

/* The same, appended to out (left as it was on failure): parts.json of a
 * GGUF split set embeds each part's text. */
enum wf_err wf_meta_append(const struct wf_model *m, struct wf_buf *out, char *err);

/* For a GGUF (m->meta_gen), key i's raw bytes appended to out (out->oom
 * when out of memory), and bytes [off, off + n) of its file in metadata/
 * (a string's raw bytes, any other value its JSON text: wf_gguf_meta.h)
 * into buf.  Return as wf_meta_read. */
enum wf_err wf_meta_gguf_key(const struct wf_model *m, size_t i, struct wf_buf *out, char *err);
/* Bytes [off, off + n) of key i's raw bytes into buf (a key can be long). */
enum wf_err wf_meta_gguf_key_read(const struct wf_model *m, size_t i, uint64_t off, size_t n, char *buf, char *err);
enum wf_err wf_meta_gguf_value(const struct wf_model *m, size_t i, uint64_t off, size_t n, char *buf, char *err);

#endif
