/* wf_api.c - the public library (weightfs.h) over wf_set, wf_view and
 * wf_live.  The only file whose functions libweightfs.so exports: every
 * other object is built with hidden visibility. */
#include "lib/weightfs.h"
#include "lib/wf_api_int.h"
#include "base/wf_buf.h"
#include "base/wf_pool.h"
#include "base/wf_names.h"
#include "view/wf_hf_file.h"
#include "view/wf_live.h"
#include "model/wf_set.h"
#include "net/wf_source.h"
#include "model/wf_meta.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"
#include "view/wf_hfq.h"
#include "view/wf_stats.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The public codes are the library's own, plus one. */
_Static_assert((int)WEIGHTFS_ENOMEM == (int)WF_ERR_NOMEM && (int)WEIGHTFS_ECHANGED == (int)WF_ERR_CHANGED &&
		       (int)WEIGHTFS_ERANGE == (int)WF_ERR_RANGE && (int)WEIGHTFS_EFORMAT == (int)WF_ERR_FORMAT,
	       "weightfs.h codes must match enum wf_err");
_Static_assert(WEIGHTFS_MAX_DIMS == WF_MAX_DIMS, "weightfs.h WEIGHTFS_MAX_DIMS");

/* Below this many bytes per thread, starting a thread costs more than the
 * decode it takes over. */
#define PAR_MIN_BYTES (1u << 20)

struct weightfs_model {
	struct wf_model *m;
	struct wf_live lv;
	struct wf_names names; /* tensor name -> index; the hidden parts of decoded layers from n_tensors on */
	uint32_t *stored_of;   /* [n_tensors]: the hidden part a decoded layer's name is stored under, or
				* WF_NAMES_NONE (GPTQ, AWQ: PREFIX.weight is no stored tensor) */
	int dtype;             /* WEIGHTFS_F32..STORED: what WEIGHTFS_DEFAULT stands for */
	/* the hf/ view (weightfs_hf_size), made on first use under hf_lock:
	 * threads asking in the same dtype at once must not both make or
	 * drop it (a double free) */
	pthread_mutex_t hf_lock;
	struct wf_hf_file *hf;
	int hf_dtype;
	struct wf_live hf_lv;  /* reads of its files (hf_seg) */
	bool hf_lv_ok;
	/* a GGUF's metadata.json, never kept by the model (wf_meta.h): made
	 * whole on the first weightfs_metadata_json, under meta_lock */
	pthread_mutex_t meta_lock;
	char *meta;
	size_t meta_len;
};

/* The view a public dtype asks for (WEIGHTFS_F32..WEIGHTFS_STORED). */
static enum wf_vk dtype_view(int dtype)
{
	static const enum wf_vk views[] = {WF_VK_F32, WF_VK_F16, WF_VK_BF16, WF_VK_RAW};
	return views[dtype];
}

int wf_api_fail(char *err, size_t errlen, int code, const char *fmt, ...)
{
	if (err && errlen) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return code;
}

static pthread_once_t sigbus_once = PTHREAD_ONCE_INIT;
static int sigbus_rc;

static void install_sigbus(void)
{
	sigbus_rc = wf_live_catch_sigbus();
}

WEIGHTFS_API int weightfs_open(const char *path, int dtype, weightfs_model **out, char *err, size_t errlen)
{
	char msg[WF_ERRLEN], qb[WF_QPATH];
	if (out)
		*out = NULL;
	if (!path || !out)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_open: path and out must not be NULL");
	const char *qp = wf_quote_path(qb, sizeof qb, path); /* for messages */
	if (dtype < WEIGHTFS_F32 || dtype > WEIGHTFS_STORED)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "%s: unknown output dtype %d", qp, dtype);
	/* Before the model is mapped: a fault must never find no handler. */
	pthread_once(&sigbus_once, install_sigbus);
	if (sigbus_rc != 0)
		return wf_api_fail(err, errlen, WEIGHTFS_EIO, "%s: cannot install the SIGBUS handler", qp);
	weightfs_model *h = calloc(1, sizeof *h);
	if (!h)
		return wf_api_fail(err, errlen, WEIGHTFS_ENOMEM, "%s: out of memory", qp);
	pthread_mutex_init(&h->meta_lock, NULL);
	pthread_mutex_init(&h->hf_lock, NULL);
	h->dtype = dtype;
	/* hf://, s3:// and http(s):// (net/wf_source.h): staged as a folder
	 * the loaders read as any, as the mount and the commands do */
	char *staged = NULL;
	enum wf_err rc = wf_source_is_remote(path) ? wf_source_stage(path, &staged, msg) : WF_OK;
	if (rc == WF_OK)
		rc = wf_set_open(&h->m, staged ? staged : path, msg);
	free(staged);
	if (rc != WF_OK) {
		free(h);
		return wf_api_fail(err, errlen, (int)rc, "%s: %s", qp, msg);
	}
	/* quantized layers: decoded tensors in place of their parts, unless
	 * the model is opened to show what is stored */
	if ((rc = wf_hfq_apply(h->m, dtype_view(h->dtype), msg)) != WF_OK) {
		wf_model_free(h->m);
		free(h);
		return wf_api_fail(err, errlen, (int)rc, "%s: %s", qp, msg);
	}
	if (wf_live_init(&h->lv, h->m, NULL, NULL, NULL, NULL) != WF_OK ||
	    !wf_names_init(&h->names, h->m->n_tensors + h->m->n_hidden) ||
	    !(h->stored_of = malloc((h->m->n_tensors ? h->m->n_tensors : 1) * sizeof *h->stored_of))) {
		weightfs_close(h);
		return wf_api_fail(err, errlen, WEIGHTFS_ENOMEM, "%s: out of memory", qp);
	}
	for (size_t i = 0; i < h->m->n_tensors; i++) {
		const struct wf_tensor *t = &h->m->tensors[i];
		/* names are unique: every parser and wf_set refuse duplicates */
		wf_names_put(&h->names, t->name, t->name_len, (uint32_t)i);
		h->stored_of[i] = WF_NAMES_NONE;
	}
	for (size_t k = 0; k < h->m->n_hidden; k++) {
		/* a part named as its decoded layer (FP8, MLX, bnb: PREFIX.weight)
		 * is that layer's stored form; the others are found by name */
		const struct wf_tensor *t = &h->m->hidden[k];
		uint32_t v = wf_names_put(&h->names, t->name, t->name_len, (uint32_t)(h->m->n_tensors + k));
		if (v != WF_NAMES_NONE && v < h->m->n_tensors)
			h->stored_of[v] = (uint32_t)k;
	}
	*out = h;
	return WEIGHTFS_OK;
}

static void hf_drop(weightfs_model *h)
{
	if (h->hf_lv_ok)
		wf_live_free(&h->hf_lv);
	h->hf_lv_ok = false;
	wf_hf_file_free(h->hf);
	h->hf = NULL;
}

WEIGHTFS_API void weightfs_close(weightfs_model *h)
{
	if (!h)
		return;
	hf_drop(h);
	wf_names_free(&h->names);
	free(h->stored_of);
	wf_live_free(&h->lv);
	wf_model_free(h->m);
	free(h->meta);
	pthread_mutex_destroy(&h->meta_lock);
	pthread_mutex_destroy(&h->hf_lock);
	free(h);
}

WEIGHTFS_API size_t weightfs_n_tensors(const weightfs_model *h)
{
	return h ? h->m->n_tensors : 0;
}

WEIGHTFS_API int64_t weightfs_find(const weightfs_model *h, const char *name, size_t len)
{
	if (!h || !name || h->m->n_tensors == 0)
		return -1;
	uint32_t v = wf_names_get(&h->names, name, len);
	return v == WF_NAMES_NONE ? -1 : (int64_t)v;
}

/* The failure of WEIGHTFS_STORED on decoded layer t, which is no stored
 * tensor (GPTQ, AWQ): names the parts that are. */
static int no_stored_form(const weightfs_model *h, const struct wf_tensor *t, char *err, size_t errlen)
{
	char q[96], list[WF_ERRLEN] = "";
	size_t used = 0;
	for (size_t k = 0; k < h->m->n_hidden && used + 100 < sizeof list; k++) {
		const struct wf_tensor *p = &h->m->hidden[k];
		const uint8_t *at = h->m->parts[p->part].data + p->offset;
		for (int r = 0; r < WF_HFQ_MAX_PARTS; r++)
			if (t->q->part[r].p == at && t->q->part[r].p) {
				used += (size_t)snprintf(list + used, sizeof list - used, "%s%s", used ? ", " : "",
							 wf_quote(q, sizeof q, p->name, p->name_len));
				break;
			}
	}
	const struct wf_type *ty = wf_type_get(t->type);
	return wf_api_fail(err, errlen, WEIGHTFS_EUNSUP,
			   "tensor %s: a decoded %s layer, not a stored tensor: read its stored parts %s by name, or "
			   "open the model with dtype stored", wf_quote(q, sizeof q, t->name, t->name_len),
			   ty ? ty->name : "?", list);
}

/* A copy of tensor i with its view set for dtype: reads in any dtype share
 * one model, and the copy shares the model's name and shape arrays.
 * Indices from n_tensors on are the hidden parts of decoded layers; a
 * decoded layer read as stored is the stored tensor of its name. */
static int view_of(const weightfs_model *h, size_t i, int dtype, struct wf_tensor *t, char *err, size_t errlen)
{
	char msg[WF_ERRLEN];
	if (!h)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "no model");
	size_t n = h->m->n_tensors;
	if (i >= n + h->m->n_hidden)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "tensor index %zu: the model has %zu tensors and %zu "
				   "hidden parts", i, n, h->m->n_hidden);
	if (dtype == WEIGHTFS_DEFAULT)
		dtype = h->dtype;
	if (dtype < WEIGHTFS_F32 || dtype > WEIGHTFS_STORED)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "unknown output dtype %d", dtype);
	*t = i < n ? h->m->tensors[i] : h->m->hidden[i - n];
	if (t->q && dtype == WEIGHTFS_STORED) {
		if (h->stored_of[i] == WF_NAMES_NONE)
			return no_stored_form(h, t, err, errlen);
		*t = h->m->hidden[h->stored_of[i]];
	}
	enum wf_err rc = wf_tensor_set_view(t, dtype_view(dtype), msg);
	if (rc != WF_OK)
		return wf_api_fail(err, errlen, (int)rc, "%s", msg);
	return WEIGHTFS_OK;
}

WEIGHTFS_API int weightfs_tensor_info(const weightfs_model *h, size_t i, int dtype, struct weightfs_tensor_info *info,
				      char *err, size_t errlen)
{
	struct wf_tensor t;
	if (!info)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_tensor_info: info must not be NULL");
	int rc = view_of(h, i, dtype, &t, err, errlen);
	if (rc != WEIGHTFS_OK)
		return rc;
	const struct wf_type *ty = wf_type_get(t.type);
	memset(info, 0, sizeof *info);
	info->name = t.name;
	info->name_len = t.name_len;
	info->type = ty && ty->name ? ty->name : "?";
	info->dtype = wf_view_dtype(&t);
	info->elem_size = wf_view_elem_size(&t);
	info->ndim = wf_view_shape(&t, info->shape);
	info->nelems = 1;
	for (uint32_t d = 0; d < info->ndim; d++)
		info->nelems *= info->shape[d];
	info->size = t.size;
	const struct wf_part *p = &h->m->parts[t.part];
	info->file = p->name ? p->name : "";
	info->offset = t.offset;
	info->nbytes = t.nbytes;
	info->readable = t.vk != WF_VK_NONE;
	return WEIGHTFS_OK;
}

/* A failed read's one line: what changed, or why the bytes cannot be served. */
static int read_fail(weightfs_model *h, const struct wf_tensor *t, enum wf_err rc, char *err, size_t errlen)
{
	char q[96], qp[WF_QPATH], why[WF_ERRLEN] = "";
	const struct wf_type *ty = wf_type_get(t->type);
	wf_quote(q, sizeof q, t->name, t->name_len);
	if (rc == WF_ERR_CHANGED) {
		const char *part = NULL;
		/* the tensor's part, or one the reads found changed, before all: a
		 * model may have 100,000 */
		if (t->part < h->m->n_parts && wf_model_check(h->m, t->part, why) != WF_OK)
			part = h->m->parts[t->part].name;
		for (uint32_t p = 0; p < h->m->n_parts && !part; p++)
			if (atomic_load_explicit(&h->lv.changed[p], memory_order_relaxed) &&
			    wf_model_check(h->m, p, why) != WF_OK)
				part = h->m->parts[p].name;
		for (uint32_t p = 0; p < h->m->n_parts && !part; p++) {
			if (wf_model_check(h->m, p, why) != WF_OK) {
				part = h->m->parts[p].name;
				break;
			}
		}
		return wf_api_fail(err, errlen, WEIGHTFS_ECHANGED, "tensor %s: %s%s changed since the model was opened%s%s",
			    q, part ? "file " : "a file of the model", part ? wf_quote_path(qp, sizeof qp, part) : "",
			    why[0] ? ": " : "", why);
	}
	if (rc == WF_ERR_RANGE && t->vk == WF_VK_NONE)
		return wf_api_fail(err, errlen, WEIGHTFS_ERANGE, "tensor %s: type %s cannot be decoded (read it as stored)",
			    q, ty && ty->name ? ty->name : "?");
	if (rc == WF_ERR_RANGE)
		return wf_api_fail(err, errlen, WEIGHTFS_ERANGE, "tensor %s: its bytes are not in the file", q);
	return wf_api_fail(err, errlen, (int)rc, "tensor %s: read failed", q);
}

WEIGHTFS_API int weightfs_read(weightfs_model *h, size_t i, int dtype, uint64_t offset, size_t len, void *buf,
			       size_t *got, char *err, size_t errlen)
{
	struct wf_tensor t;
	size_t n = 0;
	if (got)
		*got = 0;
	if (!got || (!buf && len))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_read: buf and got must not be NULL");
	int rc = view_of(h, i, dtype, &t, err, errlen);
	if (rc != WEIGHTFS_OK)
		return rc;
	enum wf_err wrc = wf_live_read_view(&h->lv, &t, offset, len, buf, &n);
	if (wrc != WF_OK)
		return read_fail(h, &t, wrc, err, errlen);
	*got = n;
	return WEIGHTFS_OK;
}

struct piece {
	weightfs_model *h;
	const struct wf_tensor *t;
	uint64_t off;
	size_t len;
	uint8_t *out;
	size_t got;
	enum wf_err rc;
};

static void *run_piece(void *arg)
{
	struct piece *p = arg;
	p->rc = wf_live_read_view(&p->h->lv, p->t, p->off, p->len, p->out, &p->got);
	return NULL;
}

WEIGHTFS_API int weightfs_read_parallel(weightfs_model *h, size_t i, int dtype, uint64_t offset, size_t len,
					void *buf, size_t *got, unsigned nthreads, char *err, size_t errlen)
{
	struct wf_tensor t;
	if (got)
		*got = 0;
	if (!got || (!buf && len))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_read_parallel: buf and got must not be NULL");
	int rc = view_of(h, i, dtype, &t, err, errlen);
	if (rc != WEIGHTFS_OK)
		return rc;
	/* clip to the tensor, so the pieces split only what will be read */
	if (offset >= t.size)
		len = 0;
	else if (len > t.size - offset)
		len = (size_t)(t.size - offset);
	nthreads = wf_pool_threads(nthreads, len / PAR_MIN_BYTES);
	if (nthreads <= 1)
		return weightfs_read(h, i, dtype, offset, len, buf, got, err, errlen);

	/* piece size: a whole number of blocks, so every boundary after the
	 * first is one (offset itself may fall inside a block), no block is
	 * decoded twice, and whole blocks land straight in buf */
	uint64_t blk = wf_view_block_bytes(&t);
	uint64_t per = (len / nthreads + blk - 1) / blk * blk;
	struct piece pc[WF_POOL_MAX];
	unsigned n = 0;
	for (uint64_t done = 0; done < len && n < nthreads; n++) {
		uint64_t end = n + 1 == nthreads ? len : (offset + done + per) / blk * blk - offset;
		if (end > len)
			end = len;
		if (end <= done)
			end = len;
		pc[n] = (struct piece){.h = h, .t = &t, .off = offset + done, .len = (size_t)(end - done),
				       .out = (uint8_t *)buf + done, .rc = WF_OK};
		done = end;
	}
	wf_pool_run(n, run_piece, pc, sizeof pc[0]);
	size_t total = 0;
	for (unsigned k = 0; k < n; k++) {
		if (pc[k].rc != WF_OK)
			return read_fail(h, &t, pc[k].rc, err, errlen);
		total += pc[k].got;
	}
	*got = total;
	return WEIGHTFS_OK;
}

_Static_assert(sizeof(struct weightfs_stats) == sizeof(struct wf_stats), "weightfs_stats mirrors wf_stats");

WEIGHTFS_API int weightfs_stats(weightfs_model *h, size_t i, int dtype, unsigned nthreads, struct weightfs_stats *st,
				char *err, size_t errlen)
{
	struct wf_tensor t;
	struct wf_stats ws;
	char msg[WF_ERRLEN];
	if (!st)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_stats: st must not be NULL");
	memset(st, 0, sizeof *st);
	int rc = view_of(h, i, dtype, &t, err, errlen);
	if (rc != WEIGHTFS_OK)
		return rc;
	enum wf_err wrc = wf_stats_tensor(&h->lv, &t, nthreads, NULL, &ws, msg);
	if (wrc == WF_ERR_CHANGED)
		return read_fail(h, &t, wrc, err, errlen);
	if (wrc != WF_OK)
		return wf_api_fail(err, errlen, (int)wrc, "%s", msg);
	*st = (struct weightfs_stats){.count = ws.count, .finite = ws.finite, .min = ws.min, .max = ws.max,
				      .mean = ws.mean, .std = ws.std, .absmax = ws.absmax, .zeros = ws.zeros,
				      .nan = ws.nan, .inf = ws.inf};
	return WEIGHTFS_OK;
}

static const char *const hf_names[WEIGHTFS_HF_FILES] = {
	"model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
	"tokenizer_config.json", "special_tokens_map.json", "tokenizer.model",
};

WEIGHTFS_API const char *weightfs_hf_file_name(int file)
{
	return file >= 0 && file < WEIGHTFS_HF_FILES ? hf_names[file] : NULL;
}

/* The bytes of an hf/ file held in memory (all but model.safetensors), or NULL. */
static const char *hf_blob(const struct wf_hf_file *f, int file, size_t *len)
{
	const char *p[WEIGHTFS_HF_FILES] = {NULL, f->config_json, f->gen_json};
	size_t n[WEIGHTFS_HF_FILES] = {0, f->config_len, f->gen_len};
	if (f->has_tok) {
		p[3] = f->tok.tokenizer_json, n[3] = f->tok.tokenizer_json_len;
		p[4] = f->tok.tokenizer_config_json, n[4] = f->tok.tokenizer_config_json_len;
		p[5] = f->tok.special_tokens_map_json, n[5] = f->tok.special_tokens_map_json_len;
		p[6] = f->tok.tokenizer_model, n[6] = f->tok.tokenizer_model_len;
	}
	*len = n[file];
	return p[file];
}

static void hf_seg(const void *files, uint32_t file, uint64_t off, struct wf_seg *seg)
{
	const struct wf_hf_file *f = files;
	memset(seg, 0, sizeof *seg);
	seg->kind = WF_SEG_NONE;
	size_t len;
	const char *b;
	if (file == WEIGHTFS_HF_SAFETENSORS && f->st) {
		wf_gguf_file_seg(f->st, off, seg);
	} else if (file < WEIGHTFS_HF_FILES && file != WEIGHTFS_HF_SAFETENSORS && (b = hf_blob(f, (int)file, &len)) &&
		   off < len) {
		seg->kind = WF_SEG_BYTES;
		seg->len = len;
		seg->bytes = b;
	}
}

static int hf_size_locked(weightfs_model *h, int dtype, int file, uint64_t *size, char *err, size_t errlen);

WEIGHTFS_API int weightfs_hf_size(weightfs_model *h, int dtype, int file, uint64_t *size, char *err, size_t errlen)
{
	if (!h || !size || file < 0 || file >= WEIGHTFS_HF_FILES ||
	    (dtype != WEIGHTFS_DEFAULT && (dtype < WEIGHTFS_F32 || dtype > WEIGHTFS_BF16)))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_hf_size: bad argument");
	if (dtype == WEIGHTFS_DEFAULT)
		dtype = h->dtype == WEIGHTFS_STORED ? WEIGHTFS_F32 : h->dtype;
	pthread_mutex_lock(&h->hf_lock);
	int rc = hf_size_locked(h, dtype, file, size, err, errlen);
	pthread_mutex_unlock(&h->hf_lock);
	return rc;
}

/* weightfs_hf_size under hf_lock. */
static int hf_size_locked(weightfs_model *h, int dtype, int file, uint64_t *size, char *err, size_t errlen)
{
	char msg[WF_ERRLEN];
	if (h->hf && h->hf_dtype != dtype)
		hf_drop(h);
	bool tok = file >= WEIGHTFS_HF_TOKENIZER; /* the tokenizer files only when asked for: they cost most */
	if (h->hf && tok && !h->hf->tok_tried && wf_hf_file_add_tok(h->hf, h->m) != WF_OK)
		return wf_api_fail(err, errlen, WEIGHTFS_ENOMEM, "hf/: out of memory");
	if (!h->hf) {
		enum wf_err rc = wf_hf_file_make(h->m, dtype_view(dtype), tok, &h->hf, msg);
		if (rc != WF_OK)
			return wf_api_fail(err, errlen, (int)rc, "hf/: %s", msg);
		if (wf_live_init(&h->hf_lv, h->m, hf_seg, h->hf, NULL, NULL) != WF_OK) {
			hf_drop(h);
			return wf_api_fail(err, errlen, WEIGHTFS_ENOMEM, "hf/: out of memory");
		}
		h->hf_lv_ok = true;
		h->hf_dtype = dtype;
	}
	size_t len = 0;
	if (file == WEIGHTFS_HF_SAFETENSORS && h->hf->st) {
		*size = h->hf->st->size;
		return WEIGHTFS_OK;
	}
	if (file != WEIGHTFS_HF_SAFETENSORS && hf_blob(h->hf, file, &len)) {
		*size = len;
		return WEIGHTFS_OK;
	}
	return wf_api_fail(err, errlen, WEIGHTFS_EUNSUP, "hf/%s: none: %s", hf_names[file],
			   file <= WEIGHTFS_HF_GENERATION_CONFIG ? h->hf->model_why
			   : !h->hf->has_tok			 ? h->hf->tok_why
								 : "a byte-level vocabulary has no tokenizer.model");
}

/* The failure of a read of hf/ file `file`. */
static int hf_read_fail(int file, enum wf_err rc, char *err, size_t errlen)
{
	return wf_api_fail(err, errlen, (int)rc, "hf/%s: %s", hf_names[file],
			   rc == WF_ERR_CHANGED ? "a file of the model changed" : "cannot be read");
}

WEIGHTFS_API int weightfs_hf_read(weightfs_model *h, int file, uint64_t offset, size_t len, void *buf, size_t *got,
				  char *err, size_t errlen)
{
	size_t n = 0;
	if (got)
		*got = 0;
	if (!h || !h->hf || !h->hf_lv_ok || file < 0 || file >= WEIGHTFS_HF_FILES || (!buf && len))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_hf_read: bad argument, or no weightfs_hf_size first");
	enum wf_err rc = wf_live_read(&h->hf_lv, (uint32_t)file, offset, len, buf, &n);
	if (got)
		*got = n;
	if (rc != WF_OK)
		return hf_read_fail(file, rc, err, errlen);
	return WEIGHTFS_OK;
}

/* One thread's share of weightfs_hf_read_parallel. */
struct hf_piece {
	weightfs_model *h;
	uint32_t file;
	uint64_t off;
	size_t len;
	uint8_t *out;
	size_t got;
	enum wf_err rc;
};

static void *run_hf_piece(void *arg)
{
	struct hf_piece *p = arg;
	p->rc = wf_live_read(&p->h->hf_lv, p->file, p->off, p->len, p->out, &p->got);
	return NULL;
}

/* Bytes of hf/ file `file` as made (0 when it has none): where a read is
 * clipped before it is cut in shares. */
static uint64_t hf_file_size(const weightfs_model *h, int file)
{
	size_t len = 0;
	if (file == WEIGHTFS_HF_SAFETENSORS)
		return h->hf->st ? h->hf->st->size : 0;
	return hf_blob(h->hf, file, &len) ? len : 0;
}

WEIGHTFS_API int weightfs_hf_read_parallel(weightfs_model *h, int file, uint64_t offset, size_t len, void *buf,
					   size_t *got, unsigned nthreads, char *err, size_t errlen)
{
	if (got)
		*got = 0;
	if (!h || !h->hf || !h->hf_lv_ok || file < 0 || file >= WEIGHTFS_HF_FILES || (!buf && len))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL,
				   "weightfs_hf_read_parallel: bad argument, or no weightfs_hf_size first");
	uint64_t size = hf_file_size(h, file);
	len = offset >= size ? 0 : len > size - offset ? (size_t)(size - offset) : len;
	nthreads = wf_pool_threads(nthreads, len / PAR_MIN_BYTES);
	if (nthreads <= 1)
		return weightfs_hf_read(h, file, offset, len, buf, got, err, errlen);
	/* whole MiBs from offset: a read of a whole tensor (offset at its start,
	 * as get_tensor reads) is cut between blocks, elements and (for the
	 * rows of 1 MiB's divisors) rows, so no share decodes a block twice */
	uint64_t per = (len / nthreads + PAR_MIN_BYTES - 1) / PAR_MIN_BYTES * PAR_MIN_BYTES;
	struct hf_piece pc[WF_POOL_MAX];
	unsigned n = 0;
	for (uint64_t done = 0; done < len && n < nthreads; n++) {
		uint64_t end = n + 1 == nthreads || len - done <= per ? len : done + per;
		pc[n] = (struct hf_piece){.h = h, .file = (uint32_t)file, .off = offset + done,
					  .len = (size_t)(end - done), .out = (uint8_t *)buf + done, .rc = WF_OK};
		done = end;
	}
	wf_pool_run(n, run_hf_piece, pc, sizeof pc[0]);
	size_t total = 0;
	for (unsigned k = 0; k < n; k++) {
		if (pc[k].rc != WF_OK)
			return hf_read_fail(file, pc[k].rc, err, errlen);
		total += pc[k].got;
		if (pc[k].got < pc[k].len)
			break; /* the bytes after a short share are not where they belong */
	}
	if (got)
		*got = total;
	return WEIGHTFS_OK;
}

WEIGHTFS_API const char *weightfs_metadata_json(const weightfs_model *ch, size_t *len)
{
	static const char empty[] = "{}";
	if (len)
		*len = 0;
	if (!ch) {
		if (len)
			*len = sizeof empty - 1;
		return empty;
	}
	if (!ch->m->meta_gen) { /* a safetensors model keeps its text */
		if (len)
			*len = ch->m->metadata_json ? ch->m->metadata_json_len : sizeof empty - 1;
		return ch->m->metadata_json ? ch->m->metadata_json : empty;
	}
	/* the handle is the caller's; only this cache in it changes */
	weightfs_model *h = (weightfs_model *)ch;
	pthread_mutex_lock(&h->meta_lock);
	if (!h->meta && wf_meta_dup(h->m, &h->meta, &h->meta_len, NULL) != WF_OK)
		h->meta = NULL;
	const char *s = h->meta;
	if (s && len)
		*len = h->meta_len;
	pthread_mutex_unlock(&h->meta_lock);
	return s;
}

WEIGHTFS_API int weightfs_dtype_parse(const char *name)
{
	enum wf_vk want;
	if (!name || !wf_view_parse(name, &want))
		return -1;
	switch (want) {
	case WF_VK_F16: return WEIGHTFS_F16;
	case WF_VK_BF16: return WEIGHTFS_BF16;
	case WF_VK_RAW: return WEIGHTFS_STORED;
	default: return WEIGHTFS_F32;
	}
}

WEIGHTFS_API const char *weightfs_version(void)
{
	return WEIGHTFS_VERSION;
}
