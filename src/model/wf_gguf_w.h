/* wf_gguf_w.h - writing a GGUF v3 header: key/values and tensor infos.
 *
 * model.gguf (view/wf_gguf_plan.h) is made on read, but its header is made
 * once, here, into memory: the key/values in the order they are added
 * (the order convert_hf_to_gguf.py writes them in), then the tensor infos,
 * then zeros up to the data section's alignment.  Appends never fail at
 * the call site: a failure (out of memory, a duplicate key, an array
 * whose element count does not match what was announced, a string over
 * GGUF's limits) is sticky, and wf_gguf_w_finish reports it once.
 */
#ifndef WF_GGUF_W_H
#define WF_GGUF_W_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "base/wf_hash.h"
#include "model/wf_gguf_kv.h" /* enum wf_gtype */

#include <stdbool.h>
#include <stdint.h>

/* GGUF's default alignment of the data section and of every tensor. */
#define WF_GGUF_ALIGN 32
/* ggml's GGML_MAX_NAME: a tensor name is shorter than this. */
#define WF_GGUF_NAME_MAX 64

struct wf_gguf_w {
	struct wf_buf kv;       /* the key/values as they are written */
	uint64_t n_kv;
	struct wf_buf ti;       /* the tensor infos */
	uint64_t n_tensors;
	uint64_t data_len;      /* the data section so far: each tensor padded to WF_GGUF_ALIGN */
	struct wf_buf keys;     /* keys added, each NUL-terminated, to refuse a second one */
	uint64_t *slots;        /* open addressing over keys: offset + 1 into keys, 0 when empty */
	size_t n_slots;         /* a power of two, more than twice n_kv; 0 until the first key */
	struct wf_hash_key hkey; /* random per writer: key names cannot be chosen to collide */
	/* an array being written: elements still expected and their type */
	uint64_t arr_left;
	enum wf_gtype arr_type;
	bool in_arr;
	const char *const *drop; /* NULL-terminated keys whose scalar writes are skipped (the caller writes them
				  * later, elsewhere: llama-quantize's order), or NULL */
	enum wf_err rc;         /* the first failure, sticky; WF_OK while none */
	char err[WF_ERRLEN];    /* what it was */
};

/* Starts an empty writer (all zero is one too). */
void wf_gguf_w_init(struct wf_gguf_w *w);
void wf_gguf_w_free(struct wf_gguf_w *w);

/* Whether key has been added. */
bool wf_gguf_w_has(const struct wf_gguf_w *w, const char *key);

/* Scalar key/values.  The key must be new (else the writer fails:
 * llama.cpp refuses duplicate keys). */
void wf_gguf_w_u32(struct wf_gguf_w *w, const char *key, uint32_t v);
void wf_gguf_w_i32(struct wf_gguf_w *w, const char *key, int32_t v);
void wf_gguf_w_u64(struct wf_gguf_w *w, const char *key, uint64_t v);
void wf_gguf_w_f32(struct wf_gguf_w *w, const char *key, float v);
void wf_gguf_w_bool(struct wf_gguf_w *w, const char *key, bool v);
/* A string value of n bytes (stored as they are: GGUF strings are bytes). */
void wf_gguf_w_str(struct wf_gguf_w *w, const char *key, const char *s, size_t n);

/* A value already in GGUF's encoding (val[0..n): what follows the type
 * field: data[kv.val - 4 .. kv.end) of an index entry, an array's element
 * type and count included), of type t, copied as it is. */
void wf_gguf_w_raw(struct wf_gguf_w *w, const char *key, enum wf_gtype t, const void *val, size_t n);

/* An array of `count` elements of type `elem` (not ARRAY): begin, then
 * exactly count calls of the matching element writer, then end.  An
 * empty array is allowed here; the caller leaves out keys the converter
 * would not write (gguf-py skips empty lists). */
void wf_gguf_w_arr_begin(struct wf_gguf_w *w, const char *key, enum wf_gtype elem, uint64_t count);
void wf_gguf_w_arr_str(struct wf_gguf_w *w, const char *s, size_t n);
void wf_gguf_w_arr_f32(struct wf_gguf_w *w, float v);
void wf_gguf_w_arr_i32(struct wf_gguf_w *w, int32_t v);
void wf_gguf_w_arr_u32(struct wf_gguf_w *w, uint32_t v);
void wf_gguf_w_arr_bool(struct wf_gguf_w *w, bool v);
void wf_gguf_w_arr_end(struct wf_gguf_w *w);

/* A tensor info: name (shorter than WF_GGUF_NAME_MAX), ndim (1..4)
 * extents in ggml's order (ne[0] innermost), ggml type id, and its data's
 * bytes.  Its offset is the data section so far; the data section then
 * grows by nbytes padded to WF_GGUF_ALIGN.  *offset (may be NULL) gets
 * the tensor's offset within the data section. */
void wf_gguf_w_tensor(struct wf_gguf_w *w, const char *name, uint32_t ndim, const uint64_t *ne, uint32_t ggml_type,
		      uint64_t nbytes, uint64_t *offset);

/* Puts the header together: magic, version 3, the counts, the key/values,
 * the tensor infos and zeros up to WF_GGUF_ALIGN (from the start of the
 * file).  On success *out is malloc'ed (*len bytes, the data section
 * starts there) and the writer may be freed; otherwise returns the first
 * failure with its message in err. */
enum wf_err wf_gguf_w_finish(struct wf_gguf_w *w, char **out, size_t *len, char *err);

#endif
