/* wf_files.c - the bytes of the mount's files (wf_files.h). */
#include "mount/wf_files.h"
#include "mount/wf_gen.h"
#include "mount/wf_preview.h"
#include "mount/wf_st_stream.h"
#include "mount/wf_tj.h"
#include "model/wf_meta.h"
#include "view/wf_gguf_file.h"
#include "view/wf_hf_file.h"

#include <pthread.h>

#include <stdlib.h>
#include <string.h>

/* model.safetensors' header, tensors.json and a GGUF's metadata.json (and
 * its metadata/ files) are not kept (wf_st_stream.h, wf_tj.h, wf_meta.h):
 * each reading thread keeps the last window of each it made, freed when
 * the thread ends. */
#define WIN ((size_t)256 << 10)

enum { W_ST, W_TJ, W_MJ, W_MV, N_WIN };

struct st_win {
	uint64_t id;     /* the stream it is from; 0: none */
	size_t idx;      /* W_MV: the key */
	uint64_t lo;
	size_t len;
	char *buf;       /* WIN bytes */
};

static pthread_key_t win_key;
static pthread_once_t win_once = PTHREAD_ONCE_INIT;
static bool win_ok;

static void win_free(void *p)
{
	struct st_win *w = p;
	for (int i = 0; i < N_WIN; i++)
		free(w[i].buf);
	free(w);
}

static void win_init(void)
{
	win_ok = pthread_key_create(&win_key, win_free) == 0;
}

/* The calling thread's window `which` (W_ST, W_TJ, ...), its buffer made;
 * NULL when out of memory. */
static struct st_win *thread_win(int which)
{
	pthread_once(&win_once, win_init);
	if (!win_ok)
		return NULL;
	struct st_win *w = pthread_getspecific(win_key);
	if (!w) {
		if (!(w = calloc(N_WIN, sizeof *w)) || pthread_setspecific(win_key, w) != 0) {
			free(w);
			return NULL;
		}
	}
	if (!w[which].buf && !(w[which].buf = malloc(WIN)))
		return NULL;
	return &w[which];
}

/* What window `which` is of: its stream's number and its length. */
static uint64_t win_source(const struct wf_tree *t, int which, size_t idx, uint64_t *total)
{
	switch (which) {
	case W_ST: *total = t->st_header_len; return wf_st_stream_id(t->st_stream);
	case W_TJ: *total = t->tj_len; return wf_tj_id(t->tj);
	case W_MJ: *total = wf_meta_len(t->m); return t->meta_id;
	default: *total = t->meta[idx].len; return t->meta_id;
	}
}

static enum wf_err win_make(const struct wf_tree *t, int which, size_t idx, uint64_t lo, size_t n, char *buf)
{
	switch (which) {
	case W_ST: return wf_st_stream_read(t->st_stream, lo, n, buf);
	case W_TJ: return wf_tj_read(t->tj, lo, n, buf);
	case W_MJ: return wf_meta_read(t->m, lo, n, buf, NULL);
	default: return wf_meta_gguf_value(t->m, idx, lo, n, buf, NULL);
	}
}

/* The calling thread's window `which` holding byte off (of key idx's file
 * for W_MV); NULL with *rc set when it cannot be made. */
static const struct st_win *window(const struct wf_tree *t, int which, size_t idx, uint64_t off, enum wf_err *rc)
{
	struct st_win *w = thread_win(which);
	*rc = WF_ERR_NOMEM;
	if (!w)
		return NULL;
	uint64_t total, id = win_source(t, which, idx, &total);
	if (w->id == id && w->idx == idx && off >= w->lo && off - w->lo < w->len)
		return w;
	uint64_t lo = off - off % WIN, n = total - lo;
	w->id = 0;
	if (n > WIN)
		n = WIN;
	if ((*rc = win_make(t, which, idx, lo, (size_t)n, w->buf)) != WF_OK)
		return NULL;
	w->id = id;
	w->idx = idx;
	w->lo = lo;
	w->len = (size_t)n;
	return w;
}

/* A window's bytes as the segment holding off.  Those of a GGUF's
 * metadata are made from its first file, which the read then checks. */
static void window_seg(const struct wf_tree *t, int which, size_t idx, uint64_t off, struct wf_seg *seg)
{
	enum wf_err rc;
	const struct st_win *w = window(t, which, idx, off, &rc);
	if (!w) {
		seg->kind = rc == WF_ERR_CHANGED || rc == WF_ERR_IO ? WF_SEG_CHANGED : WF_SEG_NOMEM;
		return;
	}
	seg->kind = WF_SEG_BYTES;
	seg->start = w->lo;
	seg->len = w->len;
	seg->bytes = w->buf;
	seg->of_part0 = which == W_MJ || which == W_MV || (which == W_ST && t->m->meta_gen);
}

uint64_t wf_files_size(const struct wf_tree *t, uint32_t idx)
{
	const struct wf_node *nd = &t->nodes[idx];
	switch (nd->kind) {
	case WF_NODE_TENSOR:
		return nd->npy_len + t->m->tensors[nd->tensor].size;
	case WF_NODE_BLOB:
		return nd->blob_len;
	case WF_NODE_TJSON:
		return t->tj_len;
	case WF_NODE_MJSON:
		return wf_meta_len(t->m);
	case WF_NODE_MVAL:
		return nd->blob_len;
	case WF_NODE_MODEL_ST:
		return t->st_header_len + t->st_offsets[t->m->n_tensors];
	case WF_NODE_MODEL_GGUF:
		return t->gguf ? t->gguf->size : 0;
	case WF_NODE_HF_ST:
		return t->hf ? t->hf->st->size : 0;
	case WF_NODE_PREVIEW: {
		uint32_t pw, ph;
		return wf_preview_dims(&t->m->tensors[nd->tensor], &pw, &ph);
	}
	default:
		return 0;
	}
}

/* Files that are one piece of memory, or made by a module of their own. */
static void whole_seg(const struct wf_tree *t, const struct wf_node *nd, uint64_t off, struct wf_seg *seg)
{
	if (nd->kind == WF_NODE_MODEL_GGUF) {
		if (t->gguf)
			wf_gguf_file_seg(t->gguf, off, seg);
	} else if (nd->kind == WF_NODE_HF_ST) {
		if (t->hf)
			wf_gguf_file_seg(t->hf->st, off, seg);
	} else if (off < nd->blob_len) {
		seg->kind = WF_SEG_BYTES;
		seg->len = nd->blob_len;
		seg->bytes = nd->blob;
	}
}

void wf_files_seg(const void *tree, uint32_t idx, uint64_t off, struct wf_seg *seg)
{
	const struct wf_tree *t = tree;
	/* one npy header per thread: a BYTES segment points into it */
	static __thread char npy[WF_NPY_HEADER_MAX];
	memset(seg, 0, sizeof *seg);
	seg->kind = WF_SEG_NONE;
	if (idx >= t->n_nodes)
		return;
	const struct wf_node *nd = &t->nodes[idx];
	if (nd->kind == WF_NODE_BLOB || nd->kind == WF_NODE_MODEL_GGUF || nd->kind == WF_NODE_HF_ST) {
		whole_seg(t, nd, off, seg);
		return;
	}
	uint64_t head;
	const char *hb = NULL;
	size_t tensor;
	if (nd->kind == WF_NODE_TENSOR) {
		/* the header's length is the node's; its bytes are made when read */
		head = nd->npy_len;
		if (off < head)
			wf_npy_header(&t->m->tensors[nd->tensor], npy);
		hb = npy;
		tensor = nd->tensor;
	} else if (nd->kind == WF_NODE_MODEL_ST) {
		head = t->st_header_len;
		if (off < head) {
			window_seg(t, W_ST, 0, off, seg);
			return;
		}
		/* the tensor whose view holds off: the last start at or before it,
		 * skipping empty views */
		const uint64_t *o = t->st_offsets;
		size_t lo = 0, hi = t->m->n_tensors;
		uint64_t d = off < head ? 0 : off - head;
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			if (o[mid] <= d)
				lo = mid;
			else
				hi = mid;
		}
		while (lo + 1 < t->m->n_tensors && o[lo + 1] <= d)
			lo++;
		tensor = lo;
	} else {
		if (nd->kind == WF_NODE_TJSON && off < t->tj_len)
			window_seg(t, W_TJ, 0, off, seg);
		else if (nd->kind == WF_NODE_MJSON && off < wf_meta_len(t->m))
			window_seg(t, W_MJ, 0, off, seg);
		else if (nd->kind == WF_NODE_MVAL && off < nd->blob_len)
			window_seg(t, W_MV, nd->meta_key, off, seg);
		return;
	}
	if (off < head) {
		seg->kind = WF_SEG_BYTES;
		seg->len = head;
		seg->bytes = hb;
		return;
	}
	if (tensor >= t->m->n_tensors)
		return;
	uint64_t vstart = head + (nd->kind == WF_NODE_MODEL_ST ? t->st_offsets[tensor] : 0);
	const struct wf_tensor *tn = &t->m->tensors[tensor];
	if (off >= vstart + tn->size)
		return;
	seg->kind = WF_SEG_VIEW;
	seg->start = vstart;
	seg->len = tn->size;
	seg->tensor = (uint32_t)tensor;
	seg->from = 0;
}

enum wf_err wf_files_read(const struct wf_tree *t, struct wf_live *lv, uint32_t node, uint64_t off, size_t len,
			  void *out, size_t *got)
{
	/* a picture is made whole from its tensor, not served in segments */
	if (node < t->n_nodes && t->nodes[node].kind == WF_NODE_PREVIEW && t->previews)
		return wf_preview_copy(t->previews, lv, t->nodes[node].tensor, off, len, out, got);
	return wf_live_read(lv, node, off, len, out, got);
}
