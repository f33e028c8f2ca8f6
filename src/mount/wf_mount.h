/* wf_mount.h - MODEL as the mount shows it.
 *
 * The mount and every command see the same thing: the model opened in any
 * of its forms (wf_set.h), every tensor's view set for the mount's dtype
 * (wf_view.h), the tree of files (wf_tree.h) and the summary WEIGHTFS.txt
 * (wf_summary.h).  This is the one place that puts them together, so no
 * front-end can show a different model than another.
 */
#ifndef WF_MOUNT_H
#define WF_MOUNT_H

#include "base/wf_common.h"
#include "codec/wf_types.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"

struct wf_mount {
	struct wf_model *m;   /* MODEL, its views set for the mount's dtype */
	struct wf_tree *t;    /* its files, WEIGHTFS.txt filled in */
};

/* Builds m's tree with its summary: what a reader of the mount sees.
 * Returns WF_OK, or the tree's or the summary's error (err says which). */
enum wf_err wf_mount_tree(struct wf_tree **out, const struct wf_model *m, const struct wf_tree_opts *opts,
			  char *err);

/* Opens MODEL `model`, sets every tensor's view for `want` (a value of
 * wf_view_parse: WF_VK_F32, WF_VK_F16, WF_VK_BF16 or WF_VK_RAW for
 * stored) and builds its tree with opts (NULL: the defaults).  On failure
 * mt is empty and err holds one line, without the model's name, naming
 * the file, tensor or field. */
enum wf_err wf_mount_open(struct wf_mount *mt, const char *model, enum wf_vk want, const struct wf_tree_opts *opts,
			  char *err);

/* Frees what wf_mount_open made; safe on an empty or zeroed mt. */
void wf_mount_close(struct wf_mount *mt);

#endif
