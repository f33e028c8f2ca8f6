/* cli_span.c - convert's writes: stored bytes file to file, decoded bytes
 * a step at a time (cli_span.h). */
#include "cli/cli_span.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "codec/wf_types.h"
#include "view/wf_view.h"

bool cli_span_copy_off(void)
{
	const char *e = getenv("WEIGHTFS_CONVERT_NO_COPY");
	return e && *e && strcmp(e, "0") != 0;
}

char *cli_span_buf(void)
{
	char *b = aligned_alloc(CLI_SPAN_BUF, CLI_SPAN_BUF);
	if (b)
		madvise(b, CLI_SPAN_BUF, MADV_HUGEPAGE); /* advice: 4 KiB pages work too */
	return b;
}

/* How many of the bytes [off, off + len) of model.safetensors are one
 * part's stored bytes, unchanged (0 when off's are not); *fd and *src get
 * where they start, *part the part. */
static size_t stored_span(const struct cli_span_out *o, uint64_t off, size_t len, int *fd, uint64_t *src,
			  uint32_t *part)
{
	const struct wf_live *lv = &o->s->lv;
	const struct wf_model *m = lv->m;
	struct wf_seg sg;
	lv->seg(lv->files, o->node, off, &sg);
	if (sg.kind != WF_SEG_VIEW || sg.tensor >= m->n_tensors || off < sg.start || off - sg.start >= sg.len)
		return 0;
	/* a tensor of model.gguf is its source's bytes only when nothing
	 * changes them on the way */
	if (sg.xf && (sg.xf->perm_heads || sg.xf->add || sg.xf->quiet_bf16 || sg.xf->validate || sg.xf->quant ||
		      sg.xf->perm_to_hf || sg.xf->hs || sg.xf->gather))
		return 0;
	struct wf_tensor vt;
	const struct wf_tensor *t = sg.xf ? wf_xform_tensor(sg.xf, &vt) : &m->tensors[sg.tensor];
	if (!t || t->vk != WF_VK_RAW || t->q || t->part >= m->n_parts || m->parts[t->part].fd < 0)
		return 0;
	uint64_t in = off - sg.start, n = sg.len - in < len ? sg.len - in : len;
	/* the view of a stored tensor is its bytes: the same bounds a read checks */
	if (sg.from > t->nbytes || in > t->nbytes - sg.from || n > t->nbytes - sg.from - in ||
	    t->offset > m->parts[t->part].len || t->nbytes > m->parts[t->part].len - t->offset)
		return 0;
	*fd = m->parts[t->part].fd;
	*src = t->offset + sg.from + in;
	*part = t->part;
	return (size_t)n;
}

/* After a copy, the check a read makes (wf_live.c): the part is still the
 * file that was opened, else the copy may hold bytes of another. */
static enum wf_err check_part(struct cli_span_out *o, uint32_t part)
{
	struct wf_live *lv = &o->s->lv;
	char why[WF_ERRLEN];
	if (atomic_load(&lv->changed[part]))
		return WF_ERR_CHANGED;
	if (wf_model_check(lv->m, part, why) == WF_OK)
		return WF_OK;
	if (!atomic_exchange(&lv->changed[part], true) && lv->notice)
		lv->notice(lv->ctx, lv->m->n_parts > 1 ? lv->m->parts[part].name : NULL, why);
	return WF_ERR_CHANGED;
}

/* copy_file_range of n bytes; 1 when copied, 0 when the kernel will not
 * (another filesystem, no support, a short source: the read path then
 * decides), -1 with *werr on a write error. */
static int copy_stored(struct cli_span_out *o, int in, uint64_t src, uint64_t dst, size_t n, int *werr)
{
	while (n) {
		loff_t s = (loff_t)src, d = (loff_t)dst;
		pthread_mutex_lock(&o->lock);
		ssize_t k = copy_file_range(in, &s, o->fd, &d, n, 0);
		pthread_mutex_unlock(&o->lock);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == ENOSPC || errno == EDQUOT || errno == EFBIG)) {
			*werr = errno;
			return -1;
		}
		if (k <= 0) {
			atomic_store(&o->no_copy, true);
			return 0;
		}
		src += (uint64_t)k;
		dst += (uint64_t)k;
		n -= (size_t)k;
	}
	return 1;
}

static int pwrite_all(struct cli_span_out *o, const char *p, size_t n, uint64_t off, int *werr)
{
	int rc = 0;
	pthread_mutex_lock(&o->lock);
	for (size_t w = 0; w < n;) {
		ssize_t k = pwrite(o->fd, p + w, n - w, (off_t)(off + w));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			*werr = k < 0 ? errno : ENOSPC;
			rc = -1;
			break;
		}
		w += (size_t)k;
	}
	pthread_mutex_unlock(&o->lock);
	return rc;
}

/* One step: stored bytes copied, or up to CLI_SPAN_STEP bytes decoded and
 * written; *did gets the bytes done. */
static enum wf_err step(struct cli_span_out *o, char *buf, uint64_t off, size_t len, size_t *did, int *werr)
{
	int fd;
	uint64_t src;
	uint32_t part;
	size_t n = atomic_load(&o->no_copy) ? 0 : stored_span(o, off, len, &fd, &src, &part);
	if (n) {
		int c = copy_stored(o, fd, src, off, n, werr);
		if (c < 0)
			return WF_ERR_IO;
		if (c > 0) {
			*did = n;
			return check_part(o, part);
		}
	}
	n = len < CLI_SPAN_STEP ? len : CLI_SPAN_STEP;
	size_t got;
	enum wf_err rc = wf_live_read(&o->s->lv, o->node, off, n, buf, &got);
	if (rc == WF_OK && got != n)
		rc = WF_ERR_RANGE; /* the file is shorter than its size: a bug */
	if (rc != WF_OK)
		return rc;
	if (pwrite_all(o, buf, n, off, werr) != 0)
		return WF_ERR_IO;
	*did = n;
	return WF_OK;
}

enum wf_err cli_span_write(struct cli_span_out *o, char *buf, uint64_t off, size_t len, int *werr)
{
	while (len) {
		size_t did = 0;
		enum wf_err rc = step(o, buf, off, len, &did, werr);
		if (rc != WF_OK)
			return rc;
		off += did;
		len -= did;
	}
	return WF_OK;
}
