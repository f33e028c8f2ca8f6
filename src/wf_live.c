/* wf_live.c - reads that never return bytes of a changed file (wf_live.h). */
#include "wf_live.h"
#include "wf_prefetch.h"
#include "wf_tree.h"
#include "wf_view.h"

#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

/* A fault on the model mapping (the file shrank under us) jumps back to
 * the read that touched it. */
static __thread sigjmp_buf *bus_jmp;

static void on_sigbus(int sig, siginfo_t *si, void *uc)
{
	(void)si, (void)uc;
	if (bus_jmp)
		siglongjmp(*bus_jmp, 1);
	signal(sig, SIG_DFL);
	raise(sig);
}

int wf_live_catch_sigbus(void)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_sigaction = on_sigbus;
	sa.sa_flags = SA_SIGINFO | SA_NODEFER;
	sigemptyset(&sa.sa_mask);
	return sigaction(SIGBUS, &sa, NULL);
}

enum wf_err wf_live_init(struct wf_live *lv, const struct wf_model *m, const struct wf_tree *t,
			 wf_notice_fn notice, void *ctx)
{
	memset(lv, 0, sizeof *lv);
	lv->changed = calloc(m->n_parts ? m->n_parts : 1, sizeof *lv->changed);
	if (!lv->changed)
		return WF_ERR_NOMEM;
	for (uint32_t i = 0; i < m->n_parts; i++)
		atomic_init(&lv->changed[i], false);
	lv->m = m;
	lv->t = t;
	lv->notice = notice;
	lv->ctx = ctx;
	return WF_OK;
}

void wf_live_free(struct wf_live *lv)
{
	free(lv->changed);
	lv->changed = NULL;
}

/* Parts a read touched, to check after the copy. */
#define TOUCH_MAX 16
struct touched {
	uint32_t part[TOUCH_MAX];
	unsigned n;
};

static enum wf_err check_part(struct wf_live *lv, uint32_t part)
{
	char why[WF_ERRLEN];
	if (wf_model_check(lv->m, part, why) == WF_OK)
		return WF_OK;
	if (!atomic_exchange(&lv->changed[part], true) && lv->notice)
		lv->notice(lv->ctx, lv->m->n_parts > 1 ? lv->m->parts[part].name : NULL, why);
	return WF_ERR_CHANGED;
}

/* Copies view bytes of one tensor, noting its part; a part that does not
 * fit the list is checked at once, which keeps the promise as well: its
 * bytes are copied by then. */
static enum wf_err view_piece(struct wf_live *lv, struct touched *tc, const struct wf_tensor *t, uint64_t off,
			      size_t len, uint8_t *out, size_t *got)
{
	uint32_t part = t->part;
	if (atomic_load_explicit(&lv->changed[part], memory_order_relaxed))
		return WF_ERR_CHANGED;
	const struct wf_part *p = &lv->m->parts[part];
	wf_prefetch_read(t, p->fd, off, len); /* network storage: one reader, ahead */
	enum wf_err rc = wf_view_read(t, p->data, p->len, off, len, out, got);
	if (rc != WF_OK)
		return rc;
	for (unsigned i = 0; i < tc->n; i++)
		if (tc->part[i] == part)
			return WF_OK;
	if (tc->n < TOUCH_MAX) {
		tc->part[tc->n++] = part;
		return WF_OK;
	}
	return check_part(lv, part);
}

static enum wf_err check_touched(struct wf_live *lv, const struct touched *tc)
{
	enum wf_err rc = WF_OK;
	for (unsigned i = 0; i < tc->n; i++)
		if (check_part(lv, tc->part[i]) != WF_OK)
			rc = WF_ERR_CHANGED;
	return rc;
}

/* After a SIGBUS: which part's pages vanished is not known here, and the
 * list of touched parts may be stale (it changed after sigsetjmp); check
 * them all.  Rare: only a file shrinking under a read gets here. */
static enum wf_err after_sigbus(struct wf_live *lv)
{
	for (uint32_t i = 0; i < lv->m->n_parts; i++)
		check_part(lv, i);
	return WF_ERR_CHANGED;
}

/* One copy: the bytes of a tensor's view, or of a file of the tree. */
struct job {
	uint32_t node;            /* a file of the tree, or WF_NO_NODE for ... */
	const struct wf_tensor *t; /* ... this tensor's view */
	uint64_t off;
	size_t len;
	uint8_t *out;
};

static enum wf_err copy_segments(struct wf_live *lv, struct touched *tc, const struct job *j, size_t *got);

/* Runs job j with SIGBUS caught, then checks every part it touched: a
 * check after the copy sees any writer that raced it, since the size or
 * mtime moves before the bytes do. */
static enum wf_err guarded(struct wf_live *lv, const struct job *j, size_t *got)
{
	struct touched tc = {.n = 0};
	sigjmp_buf jb;
	*got = 0;
	if (sigsetjmp(jb, 1) != 0) {
		bus_jmp = NULL;
		*got = 0;
		return after_sigbus(lv);
	}
	bus_jmp = &jb;
	enum wf_err rc = j->node == WF_NO_NODE ? view_piece(lv, &tc, j->t, j->off, j->len, j->out, got)
					       : copy_segments(lv, &tc, j, got);
	bus_jmp = NULL;
	if (check_touched(lv, &tc) != WF_OK)
		rc = WF_ERR_CHANGED;
	if (rc != WF_OK)
		*got = 0;
	return rc;
}

enum wf_err wf_live_read_tensor(struct wf_live *lv, size_t tensor, uint64_t off, size_t len, void *out,
				size_t *got)
{
	*got = 0;
	if (tensor >= lv->m->n_tensors)
		return WF_ERR_RANGE;
	return wf_live_read_view(lv, &lv->m->tensors[tensor], off, len, out, got);
}

enum wf_err wf_live_read_view(struct wf_live *lv, const struct wf_tensor *t, uint64_t off, size_t len, void *out,
			      size_t *got)
{
	*got = 0;
	if (t->part >= lv->m->n_parts)
		return WF_ERR_RANGE;
	struct job j = {.node = WF_NO_NODE, .t = t, .off = off, .len = len, .out = out};
	return guarded(lv, &j, got);
}

/* The copy of a file of the tree, segment by segment. */
static enum wf_err copy_segments(struct wf_live *lv, struct touched *tc, const struct job *j, size_t *got)
{
	size_t done = 0;
	enum wf_err rc = WF_OK;
	while (done < j->len) {
		struct wf_seg seg;
		wf_tree_seg(lv->t, j->node, j->off + done, &seg);
		if (seg.kind == WF_SEG_NONE)
			break;
		if (seg.kind == WF_SEG_NOMEM) {
			rc = WF_ERR_NOMEM;
			break;
		}
		uint64_t in = j->off + done - seg.start;
		uint64_t n = seg.len - in;
		if (n > j->len - done)
			n = j->len - done;
		size_t piece = (size_t)n;
		if (seg.kind == WF_SEG_BYTES) {
			memcpy(j->out + done, seg.bytes + in, piece);
		} else if ((rc = view_piece(lv, tc, &lv->m->tensors[seg.tensor], seg.from + in, piece, j->out + done,
					     &piece)) != WF_OK) {
			break;
		} else if (piece != n) {
			rc = WF_ERR_RANGE; /* a view shorter than its segment: a bug, not data */
			break;
		}
		done += (size_t)n;
	}
	*got = done;
	return rc;
}

enum wf_err wf_live_read(struct wf_live *lv, uint32_t node, uint64_t off, size_t len, void *out, size_t *got)
{
	struct job j = {.node = node, .off = off, .len = len, .out = out};
	return guarded(lv, &j, got);
}
