/* wf_gen_int.h - what wf_st_stream.c shares with wf_gen.c: the pieces of
 * model.safetensors' header, so the header can be made a window at a time
 * and still be byte for byte what wf_st_header writes. */
#ifndef WF_GEN_INT_H
#define WF_GEN_INT_H

#include "base/wf_buf.h"
#include "model/wf_model.h"

/* A name model.safetensors gives differently from its plain encoding:
 * number idx (a tensor, or a key of metadata.json counting every key),
 * written as text (len bytes, quotes included). */
struct wf_st_rename {
	size_t idx;
	char *text;
	size_t len;
};

/* The renames of one kind, idx ascending. */
struct wf_st_sparse {
	size_t n;
	struct wf_st_rename *e;
};

void wf_st_sparse_free(struct wf_st_sparse *s);

/* Whether model.safetensors writes "weightfs.stored_types" for m. */
bool wf_st_has_types(const struct wf_model *m);

/* The "~N" renames of tensor names and metadata keys wf_st_header makes.
 * Returns WF_OK, WF_ERR_NOMEM, or WF_ERR_FORMAT (metadata.json is not an
 * object: a bug). */
enum wf_err wf_st_renames(const struct wf_model *m, struct wf_st_sparse *names, struct wf_st_sparse *keys);

/* The key/value of metadata.json (our own JSON, length n) whose key starts
 * at or after the first non-blank at s[i] (i just past '{' or a value):
 * fills the key's extent [*k0, *k1) and the value's [*v0, *v1), quotes
 * included, and *next (where the next search starts).  False at the end
 * or on a malformed object. */
bool wf_gen_kv_at(const char *s, size_t n, size_t i, size_t *k0, size_t *k1, size_t *v0, size_t *v1, size_t *next);

/* Appends the bytes the JSON string s[i..end) stands for (i at its opening
 * quote, end past its closing one): the decoding wf_st_header uses. */
void wf_gen_decode_string(const char *s, size_t i, size_t end, struct wf_buf *b);

/* Appends s[0..n) as a JSON string that is valid UTF-8 throughout (a stray
 * byte becomes U+00XX), as wf_st_header writes names and strings. */
void wf_gen_json_str_utf8(struct wf_buf *b, const char *s, size_t n);

#endif
