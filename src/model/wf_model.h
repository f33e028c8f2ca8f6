/* wf_model.h - a parsed model file, in terms neither format owns.
 *
 * A model is the mapped file plus one descriptor per tensor.  Parsing
 * validates every number before it is used; a model that parsed is safe
 * to serve: every tensor's bytes lie inside the mapping and its view size
 * does not overflow.
 */
#ifndef WF_MODEL_H
#define WF_MODEL_H

#include "base/wf_common.h"
#include "codec/wf_types.h"
#include "model/wf_part.h"

#include <stdint.h>
#include <sys/stat.h>

/* GGUF allows 4 dims (GGML_MAX_DIMS); numpy allows 32, safetensors follows. */
#define WF_MAX_DIMS 32

enum wf_format {
	WF_FMT_GGUF,
	WF_FMT_SAFETENSORS,
};

struct wf_gguf_meta;
struct wf_gguf_kvs;

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
	uint32_t part;       /* index into model->parts: the file the data is in */
	uint8_t vk;          /* enum wf_vk (wf_types.h): what the tensor's file holds; the type's own
			      * view once parsed, the mount's dtype once wf_tensor_set_view ran */
	const struct wf_hfq *q; /* a layer of several stored tensors (view/wf_hfq.h), else NULL */
};


/* A small file of a model folder shown at the mount's root (config.json,
 * tokenizer.json, ...), read into memory when the model is opened. */
struct wf_sidecar {
	char *name;
	char *data;
	uint64_t len;
	struct stat st;      /* of the file read (a symlink's target): its owner and mode */
	char *path;          /* the path it was read by (a symlink, maybe), or NULL */
};

struct wf_model {
	enum wf_format format;
	const uint8_t *data;     /* the whole file, mapped read-only (or a caller's buffer) */
	uint64_t data_len;       /* bytes at data */
	uint32_t version;        /* GGUF version (2 or 3); 0 for safetensors */
	uint32_t alignment;      /* GGUF data alignment; 1 for safetensors */
	uint64_t data_offset;    /* where tensor data starts: GGUF data section, safetensors 8 + N */
	uint64_t n_kv;           /* GGUF key/value pairs, or safetensors __metadata__ entries */
	int64_t split_no;        /* GGUF split.no: this file's place in a split set, 0-based; -1 if absent */
	int64_t split_count;     /* GGUF split.count: files in the set; -1 if absent */
	int64_t split_tensors;   /* GGUF split.tensors.count: tensors in the whole set; -1 if absent */
	struct wf_tensor *tensors; /* [n_tensors], in the order the file lists them */
	size_t n_tensors;
	char *metadata_json;     /* metadata.json of a safetensors model (its __metadata__), kept whole;
				  * NULL for a GGUF, whose text is made on read from meta_gen.
				  * Read either through wf_meta.h (wf_meta_len, wf_meta_read) */
	size_t metadata_json_len;
	struct wf_gguf_kvs *kvs; /* a GGUF's key/values (parts[0]'s), indexed once by the parser: read them
				  * through wf_gguf_kv.h's getters; else NULL */
	struct wf_gguf_meta *meta_gen; /* a GGUF's metadata.json, made a window at a time from parts[0]'s
					* key/values (wf_gguf_meta.h); else NULL */
	struct wf_part *parts;   /* [n_parts]: the files behind the tensors; parts[0] holds data */
	uint32_t n_parts;
	struct wf_sidecar *sidecars; /* [n_sidecars]: a model folder's other small files */
	size_t n_sidecars;
	bool sidecars_beside;    /* MODEL is a file of a model folder: sidecars are the folder's files
				  * model.gguf and WEIGHTFS.txt read (wf_set.h), not shown at the root */
	char *parts_json;        /* parts.json for a model of several files, else NULL */
	size_t parts_json_len;
	struct wf_hfq *hfq;      /* [n_hfq]: the quantized layers wf_hfq_apply found */
	size_t n_hfq;
	struct wf_tensor *hidden; /* [n_hidden]: the stored tensors decoded layers took the place of (each
				   * layer's parts, its main part under its stored name), not listed;
				   * the C library reaches them by name (weightfs.h) */
	size_t n_hidden;
	bool hfq_done;           /* wf_hfq_apply ran */
	bool has_index_st;       /* the model came through a safetensors index: */
	struct stat index_st;    /* its stat (its metadata is in metadata.json) */
	char *index_path;        /* and the path it was read by */
	struct wf_watch *watch;  /* inotify on the parts (wf_watch.h), or NULL */
	struct wf_maps *maps;    /* more parts than live mappings: parts mapped on first read
				  * (wf_maps.h; their data NULL); else NULL, every part mapped */
	char *left_out;          /* files of the model's folder left out, one "NAME: why" a line, or NULL */
};

/* Whether part `part` of m is still the file that was opened: the
 * same device, inode, size and modification time, no write reported by
 * the kernel (wf_watch.h), and the same change time unless the link count
 * went down with a watch on the part.  A read compares this after it has
 * copied or decoded its bytes: a writer that shrinks or rewrites the file
 * during the copy leaves zeros or a mix of old and new bytes that no range
 * check can tell from data, but it always moves the size or the
 * modification time first, and its write is queued as an IN_MODIFY event
 * before it returns, so setting the times back afterwards cannot hide it.
 * A file replaced by rename or removed (no name left: link count 0) moved
 * its change time doing so but kept its contents, so with a watch that is
 * no change; any other change time that moved (a link added or removed,
 * a chmod, or any of it on a part without a watch) is one: a write through
 * a shared mapping raises no event, and ctime is then its only witness.  Returns WF_OK; WF_ERR_CHANGED with what
 * changed in err (may be NULL); or WF_ERR_IO if fstat fails.  A part
 * parsed from a buffer never changes.  A part whose descriptor was closed
 * (more parts than descriptors) is looked up by its path; a file that was
 * replaced by rename is then another file, and counts as a change. */
enum wf_err wf_model_check(const struct wf_model *m, uint32_t part, char *err);

/* Watches every part of m that has a file for writes (wf_watch.h; best
 * effort: a part that cannot be watched gets the strict identity rule).
 * Returns WF_ERR_NOMEM or WF_OK. */
enum wf_err wf_model_watch(struct wf_model *m);

/* Frees descriptors and unmaps; safe on a partly built model and on NULL. */
void wf_model_free(struct wf_model *m);

/* Allocates an empty model for a parser; NULL when out of memory. */
struct wf_model *wf_model_new(enum wf_format fmt, const uint8_t *buf, uint64_t len);

/* Fills t->nelems, t->nbytes, t->vk and t->size (the type's own view)
 * from t->type and t->shape, checking
 * that the shape suits the type's blocks (the innermost dim, or for
 * safetensors the element count, is a whole number of blocks) and that
 * nothing overflows.  `inner_only` selects GGUF's rule (ne[0] % blck). */
enum wf_err wf_tensor_sizes(struct wf_tensor *t, bool inner_only, char *err);

/* A tensor's bytes [begin, end) in its file: both parsers sort these to
 * find overlaps (and safetensors, gaps). */
struct wf_span {
	uint64_t begin, end;
	size_t tensor;
};

/* qsort order: by begin, then end, then tensor index. */
int wf_span_cmp(const void *a, const void *b);

/* A numpy shape (outermost first) as ggml's ne (innermost first), or back:
 * the one reversal every translation between the two orders makes.  n
 * values; dst and src must not overlap. */
static inline void wf_shape_reverse(uint64_t *dst, const uint64_t *src, uint32_t n)
{
	for (uint32_t d = 0; d < n; d++)
		dst[d] = src[n - 1 - d];
}

#endif
