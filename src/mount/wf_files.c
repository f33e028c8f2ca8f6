/* wf_files.c - the bytes of the mount's files (wf_files.h). */
#include "mount/wf_files.h"
#include "mount/wf_gen.h"
#include "mount/wf_preview.h"

#include <stdlib.h>
#include <string.h>

/* model.safetensors' header, made on first use; NULL when out of memory. */
static const char *st_header_get(const struct wf_tree *t)
{
	struct wf_st_lazy *lz = t->st_lazy;
	char *h = atomic_load_explicit(&lz->header, memory_order_acquire);
	if (h)
		return h;
	pthread_mutex_lock(&lz->lock);
	h = atomic_load_explicit(&lz->header, memory_order_relaxed);
	if (!h) {
		uint64_t len, *offs = NULL;
		/* the same model renders the same bytes as at build time */
		if (wf_st_header(t->m, &h, &len, &offs) == WF_OK && len == t->st_header_len)
			atomic_store_explicit(&lz->header, h, memory_order_release);
		else {
			free(h);
			h = NULL;
		}
		free(offs);
	}
	pthread_mutex_unlock(&lz->lock);
	return h;
}

uint64_t wf_files_size(const struct wf_tree *t, uint32_t idx)
{
	const struct wf_node *nd = &t->nodes[idx];
	switch (nd->kind) {
	case WF_NODE_TENSOR:
		return nd->npy_len + t->m->tensors[nd->tensor].size;
	case WF_NODE_BLOB:
		return nd->blob_len;
	case WF_NODE_MODEL_ST:
		return t->st_header_len + t->st_offsets[t->m->n_tensors];
	case WF_NODE_PREVIEW: {
		uint32_t pw, ph;
		return wf_preview_dims(&t->m->tensors[nd->tensor], &pw, &ph);
	}
	default:
		return 0;
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
	if (nd->kind == WF_NODE_BLOB) {
		if (off < nd->blob_len) {
			seg->kind = WF_SEG_BYTES;
			seg->len = nd->blob_len;
			seg->bytes = nd->blob;
		}
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
		if (off < head && !(hb = st_header_get(t))) {
			seg->kind = WF_SEG_NOMEM;
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
