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
	/* Called once, from a reading thread, when the model is found changed
	 * (wf_model_check): msg says what changed.  May be NULL. */
	void (*notice)(const char *msg);
	atomic_bool changed;       /* the model changed: every tensor read fails with EIO */
};

/* The operations; pass a struct wf_fs as userdata to fuse_session_new. */
extern const struct fuse_lowlevel_ops wf_fuse_ops;

/* Installs the SIGBUS handler that turns a fault on the model mapping
 * (the file was truncated under the mount) into EIO for that read.
 * Returns 0 or -1 with errno set. */
int wf_fuse_catch_sigbus(void);

#endif
