/* wf_model.h - a parsed model file, in terms neither format owns.
 *
 * A model is the mapped file plus one descriptor per tensor.  Parsing
 * validates every number before it is used; a model that parsed is safe
 * to serve: every tensor's bytes lie inside the mapping and its view size
 * does not overflow.
 */
#ifndef WF_MODEL_H
#define WF_MODEL_H

#include "wf_common.h"

#include <stdint.h>
#include <sys/stat.h>

/* GGUF allows 4 dims (GGML_MAX_DIMS); numpy allows 32, safetensors follows. */
#define WF_MAX_DIMS 32

enum wf_format {
	WF_FMT_GGUF,
	WF_FMT_SAFETENSORS,
};

struct wf_tensor {
	char *name;          /* name bytes as stored, NUL-terminated; may hold NUL or invalid UTF-8 */
	size_t name_len;     /* bytes in name, excluding the terminator */
	int type;            /* row id in the type table (wf_types.h) */
	uint32_t ndim;       /* number of dims; 0 for a scalar */
	uint64_t *shape;     /* [ndim] row-major numpy order, outermost first (GGUF ne reversed) */
	uint64_t nelems;     /* product of shape (1 for a scalar) */
	uint64_t offset;     /* absolute byte offset of the data in the model file */
	uint64_t nbytes;     /* bytes of data in the model file */
	uint64_t size;       /* bytes of the tensor's file in the mount: nelems * view element size */
};

struct wf_model {
	enum wf_format format;
	const uint8_t *data;     /* the whole file, mapped read-only (or a caller's buffer) */
	uint64_t data_len;       /* bytes at data */
	uint32_t version;        /* GGUF version (2 or 3); 0 for safetensors */
	uint32_t alignment;      /* GGUF data alignment; 1 for safetensors */
	uint64_t data_offset;    /* where tensor data starts: GGUF data section, safetensors 8 + N */
	uint64_t n_kv;           /* GGUF key/value pairs, or safetensors __metadata__ entries */
	struct wf_tensor *tensors; /* [n_tensors], in the order the file lists them */
	size_t n_tensors;
	char *metadata_json;     /* metadata.json: GGUF key/values or safetensors __metadata__ */
	size_t metadata_json_len;

	/* set by wf_model_open only */
	int fd;                  /* the model file, read-only; -1 for buffers */
	struct stat st;          /* of the model file at open */
	void *map;               /* mmap base, or NULL */
};

/* Parses buf[0..len) as a GGUF file.  On success *out owns the descriptors
 * but not buf, which must outlive it.  On failure returns WF_ERR_FORMAT or
 * WF_ERR_UNSUP with one line in err naming the field or tensor (two tensors
 * for overlapping data), or WF_ERR_NOMEM when an allocation fails. */
enum wf_err wf_gguf_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err);

/* The same for safetensors, enforcing the reference loader's rules.  Also
 * returns WF_ERR_NOMEM ("out of memory ...") when an allocation fails,
 * including cJSON's, which would otherwise look like a syntax error. */
enum wf_err wf_st_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err);

/* Test hook: on the calling thread, the JSON parser's allocations fail
 * after n more succeed (and keep failing); n < 0 turns this off (the
 * default).  Lets tests prove an allocation failure inside cJSON is
 * reported as WF_ERR_NOMEM. */
void wf_json_fail_after(long n);

/* Parses buf as whichever format it holds: GGUF by its magic, else
 * safetensors.  `hint` (a file name, may be NULL) only picks which
 * format's message to give for a file that is neither. */
enum wf_err wf_model_parse(struct wf_model **out, const uint8_t *buf, uint64_t len,
			   const char *hint, char *err);

/* Opens path read-only, checks it is a regular file, maps it and parses
 * it.  err gets one line without the file name; the caller adds it. */
enum wf_err wf_model_open(struct wf_model **out, const char *path, char *err);

/* Frees descriptors and unmaps; safe on a partly built model and on NULL. */
void wf_model_free(struct wf_model *m);

/* Allocates an empty model for a parser; NULL when out of memory. */
struct wf_model *wf_model_new(enum wf_format fmt, const uint8_t *buf, uint64_t len);

/* Fills t->nelems, t->nbytes and t->size from t->type and t->shape, checking
 * that the shape suits the type's blocks (the innermost dim, or for
 * safetensors the element count, is a whole number of blocks) and that
 * nothing overflows.  `inner_only` selects GGUF's rule (ne[0] % blck). */
enum wf_err wf_tensor_sizes(struct wf_tensor *t, bool inner_only, char *err);

#endif
