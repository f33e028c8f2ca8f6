/* wf_gguf.h - the GGUF parser (versions 2 and 3, little-endian) and, through
 * wf_gguf_kv.h, the API of a GGUF's key/values: the value-type table, the
 * index the parser builds (wf_model.kvs) and typed getters. */
#ifndef WF_GGUF_H
#define WF_GGUF_H

#include "base/wf_common.h"
#include "model/wf_gguf_kv.h"
#include "model/wf_model.h"

/* Whether buf starts with GGUF's magic in either byte order ("GGUF", or
 * "FUGG" as a big-endian writer leaves it): such a file is GGUF, to be
 * parsed (or refused) as one whatever its name. */
bool wf_gguf_magic(const uint8_t *buf, uint64_t len);

/* Parses buf[0..len) as a GGUF file.  On success *out owns the descriptors
 * but not buf, which must outlive it.  On failure returns WF_ERR_FORMAT or
 * WF_ERR_UNSUP with one line in err naming the field or tensor (two tensors
 * for overlapping data), or WF_ERR_NOMEM when an allocation fails. */
enum wf_err wf_gguf_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err);

/* The key/values of GGUF model m (a set's: its first part's, as llama.cpp
 * reads them) for the getters of wf_gguf_kv.h, over m->data: none (every
 * getter WF_GGUF_ABSENT) when m is no GGUF or its first part is not mapped
 * now (a set of many parts maps it on use: wf_maps_get, then give the
 * bytes in .data and .len yourself). */
static inline struct wf_gguf_vals wf_gguf_vals_of(const struct wf_model *m)
{
	return (struct wf_gguf_vals){m->kvs, m->kvs ? m->data : NULL, m->data_len};
}

#endif
