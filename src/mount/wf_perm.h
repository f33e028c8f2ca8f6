/* wf_perm.h - who may read each file of the mount.
 *
 * With allow_other, the kernel's default_permissions check is all that
 * stands between a local user and the model's bytes: so every node shows
 * the owner, group and read bits of the file its bytes come from, and a
 * user reads through the mount only what they could read directly.
 *  - a tensor: its part's;
 *  - a sidecar: the file read (a symlink's target);
 *  - everything weightfs makes from the headers (directories, tensors.json,
 *    metadata.json, metadata/, parts.json, model.safetensors,
 *    WEIGHTFS.txt): the strictest of the parts and the index
 *    (wf_perm_strictest).
 * Write bits are never shown (the mount is read-only); a directory gets x
 * wherever it has r.
 */
#ifndef WF_PERM_H
#define WF_PERM_H

#include "base/wf_common.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"

#include <sys/stat.h>
#include <sys/types.h>

struct wf_perm {
	uid_t uid;
	gid_t gid;
	mode_t mode;  /* permission bits only (no file type) */
};

struct wf_perm_side;

struct wf_perms {
	const struct wf_tree *t;
	const struct wf_model *m;
	struct wf_perm strict;       /* the generated files' */
	struct wf_perm_side *side;   /* sidecars by their bytes' address, sorted */
	size_t n_side;
};

/* The owner, group and read bits of one file's stat. */
struct wf_perm wf_perm_of(const struct stat *st);

/* An owner, group and read bits that let no user read more than every
 * one of the n files allows them directly (n >= 1): the first file's
 * owner and group, and a read bit only where, for every file, whoever
 * that bit covers is sure to be able to read it, without knowing anyone's
 * group list (so a user whose membership matters and is unknown needs
 * both the group and the other bit).  Files all of one owner and group
 * give the bits they all share. */
struct wf_perm wf_perm_strictest(const struct stat *const *sts, size_t n);

/* Prepares the permissions of tree t of model m (both must outlive p). */
enum wf_err wf_perms_init(struct wf_perms *p, const struct wf_tree *t, const struct wf_model *m, char *err);

void wf_perms_free(struct wf_perms *p);

/* The owner, group and permission bits of node idx. */
struct wf_perm wf_perm_node(const struct wf_perms *p, uint32_t idx);

#endif
