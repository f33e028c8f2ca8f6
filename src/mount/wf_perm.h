/* wf_perm.h - who may read each file of the mount.
 *
 * With allow_other, the kernel's default_permissions check is all that
 * stands between a local user and the model's bytes: so every node shows
 * an owner, group and read bits that let a user read through the mount
 * only what they could read directly, folders included.  To open a file a
 * user needs search (x) permission on every folder of its path and read
 * permission on the file; a node needs, for each file its bytes come from,
 * the file's read and the search of each folder of its resolved path and
 * of the folder of each symlink that led to it (a hub snapshot's link into
 * blobs/):
 *  - a tensor: its part;
 *  - a sidecar: the file read (through its symlinks);
 *  - model.gguf: the parts, the index and every sidecar (its vocabulary and
 *    hyperparameters come from them);
 *  - everything else weightfs makes from the headers (directories,
 *    tensors.json, metadata.json, metadata/, parts.json, model.safetensors,
 *    WEIGHTFS.txt): the parts and the index.
 * wf_perm_all turns such a set of needs into one owner, group and mode.
 * Write bits are never shown (the mount is read-only); a directory gets x
 * wherever it has r.  docs/security.md states the rule.
 */
#ifndef WF_PERM_H
#define WF_PERM_H

#include "base/wf_common.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"

#include <sys/stat.h>
#include <sys/types.h>

/* The entries of an access ACL that can let a user through, each reduced
 * to whether it grants the access a need is for (the mask applied to the
 * named entries and the owning group's). */
#define WF_PERM_ACL_MAX 32

struct wf_perm_acl {
	bool group_obj;   /* the owning group's entry */
	uint32_t n;       /* named entries */
	struct {
		bool group;   /* a named group (else a named user) */
		bool ok;
		uint32_t id;
	} e[WF_PERM_ACL_MAX];
};

/* An owner, group and read bits: of a node, or of one thing a reader must
 * pass (a file to read, a folder to search: then the bits that let its
 * owner, its group and everyone else through, in the read positions; the
 * owner's and everyone else's entries of an ACL are those bits). */
struct wf_perm {
	uid_t uid;
	gid_t gid;
	mode_t mode;  /* permission bits only (no file type) */
	const struct wf_perm_acl *acl; /* a need's access ACL, or NULL; never a node's */
};

/* Parses access ACL xattr value v (n bytes, the kernel's
 * system.posix_acl_access form) for the access of permission bit `want`
 * (4 read, 1 search).  False when it is not one this reads (then only its
 * owner's bits are sure). */
bool wf_perm_acl_parse(struct wf_perm_acl *a, const void *v, size_t n, unsigned want);

struct wf_perm_side;

struct wf_perms {
	const struct wf_tree *t;
	const struct wf_model *m;
	struct wf_perm strict;       /* the generated files' */
	struct wf_perm gguf;         /* model.gguf's */
	struct wf_perm *part;        /* [m->n_parts]: each part's, its tensors' */
	struct wf_perm_side *side;   /* sidecars by their bytes' address, sorted */
	size_t n_side;
};

/* What reading the file of stat st needs: its owner, group and read bits. */
struct wf_perm wf_perm_of(const struct stat *st);

/* What passing through the folder of stat st needs: its owner, group and
 * search bits, moved to the read positions. */
struct wf_perm wf_perm_search(const struct stat *st);

/* One owner, group and read bits that let no user read unless they pass
 * every one of the n needs (n >= 1), without knowing anyone's group list
 * (so where a user's membership of a group matters and is unknown, both
 * the group and the other bit must let them through).  Of the owners and
 * groups the needs name, the pair that grants the most bits (root's own
 * bit not counted: root reads regardless); on a tie need[0]'s.  One need gives its own bits; needs of one owner and group
 * the bits they all share.  A need with an ACL lets a user through as the
 * kernel would (its named users and groups are tried as owners and groups
 * too). */
struct wf_perm wf_perm_all(const struct wf_perm *need, size_t n);

/* What reading the file of stat st, opened by `path`, needs, folded by
 * wf_perm_all: its read, the search of each folder of its resolved path
 * and of the folder of each symlink on the way (path itself may be one).
 * An access ACL counts by its entries (one not understood: by its owner's
 * bits alone); anything that cannot be examined (gone, not a folder, a
 * symlink loop) lets nobody through, so the result is then mode 0. */
enum wf_err wf_perm_path(const char *path, const struct stat *st, struct wf_perm *out, char *err);

/* Prepares the permissions of tree t of model m (both must outlive p),
 * examining the folders of every file now. */
enum wf_err wf_perms_init(struct wf_perms *p, const struct wf_tree *t, const struct wf_model *m, char *err);

void wf_perms_free(struct wf_perms *p);

/* The owner, group and permission bits of node idx. */
struct wf_perm wf_perm_node(const struct wf_perms *p, uint32_t idx);

#endif
