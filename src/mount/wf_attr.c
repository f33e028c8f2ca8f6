/* wf_attr.c - extended attribute names and values (wf_attr.h). */
#include "mount/wf_attr.h"
#include "view/wf_view.h"
#include "codec/wf_types.h"
#include "view/wf_hfq.h"
#include "mount/wf_sha.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Every name a tensor has, each NUL-terminated (the array's own NUL ends
 * the last); wf_xattr_get answers exactly these. */
static const char tensor_names[] = WF_XATTR_PREFIX "shape\0" WF_XATTR_PREFIX "dtype\0"
	WF_XATTR_PREFIX "type\0" WF_XATTR_PREFIX "name\0" WF_XATTR_PREFIX "sha256";
/* A decoded quantized layer also has its scheme's parameters (wf_hfq.h). */
static const char layer_names[] = WF_XATTR_PREFIX "shape\0" WF_XATTR_PREFIX "dtype\0"
	WF_XATTR_PREFIX "type\0" WF_XATTR_PREFIX "name\0" WF_XATTR_PREFIX "quant";

/* The tensor behind node idx, or NULL for any other node. */
static const struct wf_tensor *tensor_of(const struct wf_tree *t, uint32_t idx)
{
	if (idx >= t->n_nodes || t->nodes[idx].kind != WF_NODE_TENSOR)
		return NULL;
	return &t->m->tensors[t->nodes[idx].tensor];
}

enum wf_err wf_xattr_get(const struct wf_tree *t, uint32_t idx, const char *name, struct wf_buf *b,
			 char *err)
{
	const struct wf_tensor *ts = tensor_of(t, idx);
	size_t pl = strlen(WF_XATTR_PREFIX);
	if (!ts || strncmp(name, WF_XATTR_PREFIX, pl) != 0)
		return wf_fail(err, WF_ERR_RANGE, "no attribute %s", name);
	const char *key = name + pl;
	if (strcmp(key, "shape") == 0)
		wf_view_shape_json(ts, b);
	else if (strcmp(key, "dtype") == 0)
		wf_buf_puts(b, wf_view_dtype(ts));
	else if (strcmp(key, "type") == 0)
		wf_buf_puts(b, wf_type_get(ts->type)->name);
	else if (strcmp(key, "name") == 0)
		wf_buf_put(b, ts->name, ts->name_len);
	else if (strcmp(key, "quant") == 0 && ts->q)
		wf_hfq_params_json(ts->q, b);
	else
		return wf_fail(err, WF_ERR_RANGE, "no attribute %s", name);
	if (b->oom)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory for attribute %s", name);
	return WF_OK;
}

const char *wf_xattr_list(const struct wf_tree *t, uint32_t idx, size_t *len)
{
	const struct wf_tensor *ts = tensor_of(t, idx);
	if (ts && ts->q) {
		*len = sizeof layer_names;
		return layer_names;
	}
	*len = ts ? sizeof tensor_names : 0;
	return *len ? tensor_names : "";
}

struct wf_sums {
	pthread_mutex_t lock;
	size_t n;
	uint8_t (*sum)[WF_SHA256_LEN]; /* [n], allocated on the first digest made */
	uint8_t *have;                 /* [n]: sum[i] is made */
};

struct wf_sums *wf_sums_new(size_t n)
{
	struct wf_sums *s = calloc(1, sizeof *s);
	if (!s || pthread_mutex_init(&s->lock, NULL) != 0) {
		free(s);
		return NULL;
	}
	s->n = n;
	return s;
}

void wf_sums_free(struct wf_sums *s)
{
	if (!s)
		return;
	pthread_mutex_destroy(&s->lock);
	free(s->sum);
	free(s->have);
	free(s);
}

/* Bytes one guarded read of a digest covers. */
#define SUM_PIECE (1u << 20)

/* The SHA-256 of tensor ts's stored bytes, read as a stored view of it. */
static enum wf_err digest(struct wf_live *lv, const struct wf_tensor *ts, uint8_t *out, char *err)
{
	struct wf_tensor raw = *ts;
	raw.vk = WF_VK_RAW;
	raw.size = raw.nbytes;
	raw.q = NULL;
	struct wf_sha *sha = wf_sha_new(WF_SHA256);
	uint8_t *buf = malloc(SUM_PIECE);
	enum wf_err rc = sha && buf ? WF_OK : WF_ERR_NOMEM;
	for (uint64_t off = 0; rc == WF_OK && off < raw.nbytes;) {
		size_t want = raw.nbytes - off < SUM_PIECE ? (size_t)(raw.nbytes - off) : SUM_PIECE, got = 0;
		rc = wf_live_read_view(lv, &raw, off, want, buf, &got);
		if (rc == WF_OK && got == 0)
			rc = WF_ERR_IO; /* shorter than its header says: the part changed */
		if (rc == WF_OK && !wf_sha_update(sha, buf, got))
			rc = WF_ERR_NOMEM;
		off += got;
	}
	if (rc == WF_OK && !wf_sha_final(sha, out))
		rc = WF_ERR_NOMEM;
	wf_sha_free(sha);
	free(buf);
	return rc == WF_OK ? WF_OK : wf_fail(err, rc, "cannot read the stored bytes for the digest");
}

enum wf_err wf_xattr_sha256(struct wf_sums *s, struct wf_live *lv, const struct wf_tree *t, uint32_t idx,
			    struct wf_buf *b, char *err)
{
	const struct wf_tensor *ts = tensor_of(t, idx);
	if (!ts || ts->q || !s)
		return wf_fail(err, WF_ERR_RANGE, "no attribute " WF_XATTR_PREFIX "sha256");
	size_t i = t->nodes[idx].tensor;
	uint8_t d[WF_SHA256_LEN];
	bool have = false;
	pthread_mutex_lock(&s->lock);
	if (i < s->n && s->have && s->have[i]) {
		memcpy(d, s->sum[i], sizeof d);
		have = true;
	}
	pthread_mutex_unlock(&s->lock);
	/* two threads asking at once both hash: the same bytes, the same digest */
	enum wf_err rc = have ? WF_OK : digest(lv, ts, d, err);
	if (rc != WF_OK)
		return rc;
	pthread_mutex_lock(&s->lock);
	if (!s->sum && i < s->n) {
		s->sum = calloc(s->n, sizeof *s->sum);
		s->have = calloc(s->n, 1);
		if (!s->sum || !s->have) { /* served, just not kept */
			free(s->sum);
			free(s->have);
			s->sum = NULL;
			s->have = NULL;
		}
	}
	if (s->have && i < s->n) {
		memcpy(s->sum[i], d, sizeof d);
		s->have[i] = 1;
	}
	pthread_mutex_unlock(&s->lock);
	char hex[2 * WF_SHA256_LEN + 1];
	wf_sha_hex(d, sizeof d, hex);
	wf_buf_puts(b, hex);
	return b->oom ? wf_fail(err, WF_ERR_NOMEM, "out of memory for attribute sha256") : WF_OK;
}
