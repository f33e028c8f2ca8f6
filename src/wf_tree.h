/* wf_tree.h - the mount's namespace: tensor names to paths and inodes.
 *
 * Built once at mount time and never changed, so a node's index is its
 * identity for the mount's life: inode = index + 1, the root is index 0
 * (FUSE_ROOT_ID 1).  Naming rules (docs/naming.md):
 *  - a name splits on '.' into path components;
 *  - in each component '%', '/', control bytes (0x00-0x1F, 0x7F) and bytes
 *    that are not valid UTF-8 become %XX (upper-case hex); an empty
 *    component becomes "%", "." becomes "%2E" and ".." becomes "%2E%2E";
 *  - a component longer than 255 bytes after escaping keeps its first bytes
 *    and ends in "%~" plus 16 hex digits of a hash of the whole component;
 *  - a tensor whose path is also a directory (a.b next to a.b.c) is the
 *    file "<component>.tensor" beside that directory;
 *  - since no generated component holds '.', names with a '.' are ours:
 *    "metadata.json", "tensors.json", "*.tensor";
 *  - should two entries of one directory still meet (a hash collision),
 *    the later one gets "~N" appended, N = 2, 3, ... in model order.
 */
#ifndef WF_TREE_H
#define WF_TREE_H

#include "wf_common.h"
#include "wf_hash.h"
#include "wf_model.h"

#include <stdint.h>

#define WF_NO_NODE UINT32_MAX

enum wf_node_kind {
	WF_NODE_DIR,
	WF_NODE_TENSOR,  /* a tensor's view */
	WF_NODE_BLOB,    /* a generated file held in memory (metadata.json, tensors.json) */
};

struct wf_node {
	char *name;            /* escaped path component, NUL-terminated; "" for the root */
	uint32_t name_len;
	uint32_t parent;       /* index of the parent; the root is its own parent */
	enum wf_node_kind kind;
	uint32_t tensor;       /* WF_NODE_TENSOR: index into model->tensors */
	const char *blob;      /* WF_NODE_BLOB: contents */
	uint64_t blob_len;
	uint32_t *children;    /* WF_NODE_DIR: child indices sorted by name (bytewise) */
	uint32_t n_children;
	uint32_t n_subdirs;    /* WF_NODE_DIR: children that are directories (for st_nlink) */
};

struct wf_tree {
	struct wf_node *nodes;      /* [n_nodes]; nodes[0] is the root */
	uint32_t n_nodes;
	uint32_t *tensor_node;      /* [model->n_tensors]: the node of each tensor */
	char *tensors_json;         /* contents of tensors.json */
	size_t tensors_json_len;
	/* private: lookup table keyed by (parent, name) */
	uint32_t *slots;
	size_t n_slots;
	struct wf_hash_key key;     /* random per tree: names cannot be chosen to collide */
	uint32_t *child_pool;
};

/* Builds the tree for model m (which must outlive it), including
 * metadata.json and tensors.json at the root.  Work is linear in the total
 * length of the names (plus sorting each directory). */
enum wf_err wf_tree_build(struct wf_tree **out, const struct wf_model *m, char *err);

void wf_tree_free(struct wf_tree *t);

/* The child of dir named name[0..len), or WF_NO_NODE. */
uint32_t wf_tree_lookup(const struct wf_tree *t, uint32_t dir, const char *name, size_t len);

/* Appends the path of node idx relative to the root ("" for the root). */
struct wf_buf;
void wf_tree_path(const struct wf_tree *t, uint32_t idx, struct wf_buf *out);

/* Escapes one component (see above) into out; exposed for tests. */
void wf_escape_component(const uint8_t *s, size_t n, struct wf_buf *out);

#endif
