/* wf_fuse.h - the FUSE low-level front-end: a thin translator from FUSE
 * requests to the tree and view modules.  Nothing here parses a file. */
#ifndef WF_FUSE_H
#define WF_FUSE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include <stdatomic.h>

#include "wf_model.h"
#include "wf_tree.h"

struct wf_fs {
	const struct wf_model *m;  /* the parsed, mapped model */
	const struct wf_tree *t;   /* its namespace */
	uid_t uid;                 /* owner reported for every node */
	gid_t gid;
	double timeout;            /* entry/attr cache timeout, seconds */
	/* Called once per part, from a reading thread, when a file of the
	 * model is found changed (wf_model_check): part names it when the
	 * model has several files (else NULL), msg says what changed.  May be
	 * NULL. */
	void (*notice)(const char *part, const char *msg);
	atomic_bool *changed;      /* [m->n_parts]: the part changed, its tensors' reads fail with EIO */
};

/* The operations; pass a struct wf_fs as userdata to fuse_session_new. */
extern const struct fuse_lowlevel_ops wf_fuse_ops;

/* Installs the SIGBUS handler that turns a fault on the model mapping
 * (the file was truncated under the mount) into EIO for that read.
 * Returns 0 or -1 with errno set. */
int wf_fuse_catch_sigbus(void);

#endif
