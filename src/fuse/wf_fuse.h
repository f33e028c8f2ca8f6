/* wf_fuse.h - the FUSE low-level front-end: a thin translator from FUSE
 * requests to the tree and view modules.  Nothing here parses a file. */
#ifndef WF_FUSE_H
#define WF_FUSE_H

#define FUSE_USE_VERSION 312
#include <fuse_lowlevel.h>

#include "view/wf_live.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"
#include "mount/wf_perm.h"

struct wf_fs {
	const struct wf_model *m;  /* the parsed, mapped model */
	const struct wf_tree *t;   /* its namespace */
	uid_t uid;                 /* owner reported for every node when perms is NULL */
	gid_t gid;
	const struct wf_perms *perms; /* owner, group and mode of each node (wf_perm.h) */
	double timeout;            /* entry/attr cache timeout, seconds */
	struct wf_live *live;      /* reads: segments, identity checks, SIGBUS (wf_live.h) */
	struct wf_sums *sums;      /* user.weightfs.sha256 made so far (wf_attr.h); NULL: none shown */
};

/* The operations; pass a struct wf_fs as userdata to fuse_session_new. */
extern const struct fuse_lowlevel_ops wf_fuse_ops;

#endif
