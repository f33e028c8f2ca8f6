/* wf_meta.h - metadata.json's text, framed the same way for every format.
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

#endif
