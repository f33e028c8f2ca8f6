/* wf_model.c - a model's own life: made, checked against its files, sized, freed.
 * Opening a file and picking its parser is wf_open.c. */
#include "model/wf_model.h"
#include "net/wf_remote.h"
#include "model/wf_watch.h"
#include "model/wf_maps.h"
#include "model/wf_gguf_meta.h"
#include "model/wf_gguf_kv.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

struct wf_model *wf_model_new(enum wf_format fmt, const uint8_t *buf, uint64_t len)
{
	struct wf_model *m = calloc(1, sizeof *m);
	if (!m)
		return NULL;
	m->format = fmt;
	m->data = buf;
	m->data_len = len;
	m->alignment = 1;
	m->split_no = m->split_count = m->split_tensors = -1;
	m->parts = calloc(1, sizeof *m->parts);
	if (!m->parts) {
		free(m);
		return NULL;
	}
	m->n_parts = 1;
	m->parts[0].data = buf;
	m->parts[0].len = len;
	m->parts[0].fd = -1;
	return m;
}

void wf_model_free(struct wf_model *m)
{
	if (!m)
		return;
	for (size_t i = 0; i < m->n_tensors; i++) {
		free(m->tensors[i].name);
		free(m->tensors[i].shape);
	}
	free(m->tensors);
	free(m->metadata_json);
	wf_gguf_meta_free(m->meta_gen);
	wf_gguf_kvs_free(m->kvs);
	wf_maps_free(m->maps, m->parts);
	for (uint32_t i = 0; i < m->n_parts; i++) {
		struct wf_part *p = &m->parts[i];
		if (p->map)
			munmap(p->map, p->len);
		if (p->fd >= 0)
			close(p->fd);
		free(p->name);
		free(p->path);
		free(p->link);
	}
	free(m->parts);
	for (size_t i = 0; i < m->n_sidecars; i++) {
		free(m->sidecars[i].name);
		free(m->sidecars[i].data);
		free(m->sidecars[i].path);
	}
	free(m->index_path);
	free(m->sidecars);
	free(m->parts_json);
	free(m->hfq);
	for (size_t i = 0; i < m->n_hidden; i++) {
		free(m->hidden[i].name);
		free(m->hidden[i].shape);
	}
	free(m->hidden);
	free(m->left_out);
	wf_watch_free(m->watch);
	free(m);
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

enum wf_err wf_model_check(const struct wf_model *m, uint32_t part, char *err)
{
	if (part >= m->n_parts)
		return wf_fail(err, WF_ERR_RANGE, "no part %" PRIu32, part);
	const struct wf_part *p = &m->parts[part];
	if (p->remote)
		return wf_robj_check(p->remote, err); /* pinned by its ETag, not by a stat */
	if (p->fd < 0 && !p->path)
		return WF_OK;
	struct stat now;
	if (p->fd >= 0 ? fstat(p->fd, &now) != 0 : stat(p->path, &now) != 0)
		return wf_fail(err, errno == ENOENT ? WF_ERR_CHANGED : WF_ERR_IO, "cannot stat: %s",
			       strerror(errno));
	const struct stat *was = &p->st;
	if (now.st_dev != was->st_dev || now.st_ino != was->st_ino)
		return wf_fail(err, WF_ERR_CHANGED, "is another file now (and weightfs had too few "
			       "descriptors to keep the one it mounted open)");
	if (now.st_size != was->st_size)
		return wf_fail(err, WF_ERR_CHANGED, "size changed from %jd to %jd bytes",
			       (intmax_t)was->st_size, (intmax_t)now.st_size);
	if (!same_time(&now.st_mtim, &was->st_mtim))
		return wf_fail(err, WF_ERR_CHANGED, "was modified (mtime changed)");
	bool modified, watched = wf_watch_part(m->watch, part, &modified);
	if (modified)
		return wf_fail(err, WF_ERR_CHANGED, "was written to (the kernel reported a modification)");
	/* a file whose every name is gone (replaced by rename, or removed)
	 * moved its ctime doing so; any other ctime move may hide a write */
	if (!same_time(&now.st_ctim, &was->st_ctim) && !(watched && now.st_nlink == 0 && was->st_nlink > 0))
		return wf_fail(err, WF_ERR_CHANGED, "was changed (ctime changed)");
	return WF_OK;
}

enum wf_err wf_model_watch(struct wf_model *m)
{
	struct wf_watch *w = wf_watch_new(m->parts, m->n_parts);
	if (!w)
		return WF_ERR_NOMEM;
	wf_watch_free(m->watch);
	m->watch = w;
	return WF_OK;
}

enum wf_err wf_tensor_sizes(struct wf_tensor *t, bool inner_only, char *err)
{
	char q[96];
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t n = 1;
	for (uint32_t i = 0; i < t->ndim; i++) {
		if (!wf_mul_ok(n, t->shape[i], &n))
			return wf_fail(err, WF_ERR_FORMAT, "tensor %s: element count overflows 64 bits",
				       wf_quote(q, sizeof q, t->name, t->name_len));
	}
	uint64_t inner = inner_only ? (t->ndim ? t->shape[t->ndim - 1] : 1) : n;
	if (inner % ty->blck != 0)
		return wf_fail(err, WF_ERR_FORMAT,
			       "tensor %s: %s %" PRIu64 " is not a multiple of the %s block size %u",
			       wf_quote(q, sizeof q, t->name, t->name_len),
			       inner_only ? "innermost dimension" : "element count", inner, ty->name, ty->blck);
	/* float32, the widest view any option gives, must fit in an off_t */
	uint64_t nbytes, widest;
	if (!wf_mul_ok(n / ty->blck, ty->bytes, &nbytes) || !wf_mul_ok(n, 4, &widest) || widest > INT64_MAX ||
	    nbytes > INT64_MAX)
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: byte size overflows 64 bits",
			       wf_quote(q, sizeof q, t->name, t->name_len));
	t->nelems = n;
	t->nbytes = nbytes;
	t->vk = (uint8_t)ty->vk;
	t->size = ty->vk == WF_VK_RAW ? nbytes : n * wf_vk_elem_size(ty, ty->vk);
	return WF_OK;
}

int wf_span_cmp(const void *a, const void *b)
{
	const struct wf_span *x = a, *y = b;
	if (x->begin != y->begin)
		return x->begin < y->begin ? -1 : 1;
	if (x->end != y->end)
		return x->end < y->end ? -1 : 1;
	return x->tensor < y->tensor ? -1 : x->tensor > y->tensor;
}
