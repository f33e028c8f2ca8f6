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

/* One key/value of a GGUF header, its value as the bytes that encode it. */
struct wf_gguf_kv {
	const uint8_t *key;  /* key bytes (not NUL-terminated) */
	uint64_t key_len;
	uint32_t type;       /* GGUF value type (gguf.h's enum gguf_type) */
	const uint8_t *val;  /* the value's encoding after its type: for an array its element type, count and elements */
	uint64_t val_len;
};

/* Calls fn(ctx, kv) for each key/value of the GGUF file buf[0..len), in
 * file order, and stops at the first call that does not return WF_OK,
 * returning what it returned.  Every length is checked again (buf may
 * have been parsed by wf_gguf_parse, but the walk trusts nothing);
 * WF_ERR_FORMAT with one line in err for a header that does not walk. */
enum wf_err wf_gguf_kvs(const uint8_t *buf, uint64_t len, enum wf_err (*fn)(void *ctx, const struct wf_gguf_kv *kv),
			void *ctx, char *err);

#endif
