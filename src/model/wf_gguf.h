/* wf_gguf.h - the GGUF parser (versions 2 and 3, little-endian). */
#ifndef WF_GGUF_H
#define WF_GGUF_H

#include "base/wf_common.h"
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

#endif
