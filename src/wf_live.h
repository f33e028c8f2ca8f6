/* wf_live.h - serving a model that may change under us.
 *
 * The mount (and any in-process reader) serves the files as they were when
 * opened.  A read copies or decodes its bytes, then checks that every file
 * it touched is still that file (wf_model_check); a change makes that read
 * and every later read of the changed file fail, and is reported once.  A
 * page of the mapping that vanished (the file shrank) raises SIGBUS, which
 * wf_live_catch_sigbus turns into a failed read on the reading thread.
 */
#ifndef WF_LIVE_H
#define WF_LIVE_H

#include "wf_common.h"
#include "wf_model.h"

#include <stdatomic.h>

struct wf_tree;

/* Called once per changed part, from the reading thread: part names it when
 * the model has several files (else NULL), why says what changed. */
typedef void (*wf_notice_fn)(void *ctx, const char *part, const char *why);

struct wf_live {
	const struct wf_model *m;
	const struct wf_tree *t;   /* for wf_live_read; may be NULL */
	atomic_bool *changed;      /* [m->n_parts]: the part changed since it was opened */
	wf_notice_fn notice;       /* may be NULL */
	void *ctx;
};

/* Sets up lv over m (and tree t, may be NULL); returns WF_ERR_NOMEM or WF_OK. */
enum wf_err wf_live_init(struct wf_live *lv, const struct wf_model *m, const struct wf_tree *t,
			 wf_notice_fn notice, void *ctx);
void wf_live_free(struct wf_live *lv);

/* Installs the process's SIGBUS handler: a fault on a mapping inside a
 * wf_live read ends that read with WF_ERR_CHANGED; any other SIGBUS keeps
 * its default action.  Returns 0, or -1 with errno set. */
int wf_live_catch_sigbus(void);

/* Copies bytes [off, off+len) of file node `node` of lv->t (any file: a
 * tensor, an .npy, model.safetensors, a JSON text) into out; *got gets the
 * count (less at the end of the file).  WF_ERR_RANGE when a tensor the
 * range covers cannot be read (no decoder); WF_ERR_CHANGED when a file it
 * touched changed. */
enum wf_err wf_live_read(struct wf_live *lv, uint32_t node, uint64_t off, size_t len, void *out, size_t *got);

/* The same for view bytes [off, off+len) of tensor `tensor` of lv->m. */
enum wf_err wf_live_read_tensor(struct wf_live *lv, size_t tensor, uint64_t off, size_t len, void *out,
				size_t *got);

/* The same for a tensor descriptor t of lv->m other than the model's own:
 * a copy of one of m->tensors whose view was set for another output dtype
 * (wf_tensor_set_view), so that one model serves every dtype per call. */
enum wf_err wf_live_read_view(struct wf_live *lv, const struct wf_tensor *t, uint64_t off, size_t len, void *out,
			      size_t *got);

#endif
