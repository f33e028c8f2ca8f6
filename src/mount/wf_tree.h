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
 *    "metadata.json", "tensors.json", "WEIGHTFS.txt", "*.tensor";
 *  - with -o npy every tensor file is "<component>.npy", with -o suffix
 *    "<component>.<dtype suffix>" (weight.f32); the component is first
 *    shortened as above to leave room for the suffix and a "~N";
 *  - should two entries of one directory still meet (a hash collision),
 *    the later one gets "~N" appended, N = 2, 3, ... in model order;
 *  - deep or long names: a tensor keeps at most WF_TREE_MAX_DIRS leading
 *    components as directories, and only while they (with their '/') fit
 *    in WF_TREE_DIR_BYTES bytes; the rest of the name, dots and all, is
 *    its file's one last component ('.' escaped as %2E, then shortened as
 *    above).  When the names would make more directories than
 *    max(WF_TREE_DIR_FLOOR, header bytes / WF_TREE_DIR_HEADER_DIV), the
 *    limit on directories per tensor is lowered, for the whole model, to
 *    the largest that keeps within that number.  Every path is thus at
 *    most WF_TREE_DIR_BYTES + 255 bytes, and memory stays linear in the
 *    header whatever the names are.
 */
#ifndef WF_TREE_H
#define WF_TREE_H

#include "base/wf_common.h"
#include "mount/wf_gen.h"
#include "model/wf_model.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#define WF_NO_NODE UINT32_MAX

/* The summary's name at the root (wf_summary.h makes its text). */
#define WF_TREE_SUMMARY_NAME "WEIGHTFS.txt"

/* Most directories above a tensor's file (so at most 32 path components). */
#define WF_TREE_MAX_DIRS 31
/* Most bytes of a tensor's directories, each with its '/': a path is at
 * most this plus a 255-byte file name, far below PATH_MAX (4096) even
 * under a long mount point. */
#define WF_TREE_DIR_BYTES 768
/* Directories a model may always have, and how many header bytes each
 * further one needs: a directory costs about 40 bytes of memory, and the
 * daemon promises at most 10 bytes per header byte (docs/security.md). */
#define WF_TREE_DIR_FLOOR 65536
#define WF_TREE_DIR_HEADER_DIV 32

enum wf_node_kind {
	WF_NODE_DIR,
	WF_NODE_TENSOR,  /* a tensor's view (behind its .npy header with -o npy) */
	WF_NODE_BLOB,    /* a file held in memory (metadata.json, a metadata key, a sidecar) */
	WF_NODE_MODEL_ST, /* model.safetensors: its header, then every tensor's view in turn */
	WF_NODE_MODEL_GGUF, /* model.gguf: a Hugging Face checkpoint as llama.cpp's converter writes it (wf_gguf_file.h) */
	WF_NODE_HF_ST,   /* hf/model.safetensors: a GGUF model under HF names (wf_hf_file.h) */
	WF_NODE_PREVIEW, /* -o preview: NAME.png of tensor `tensor` (wf_preview.h; read with wf_preview_read) */
	WF_NODE_TJSON,   /* tensors.json: made a window at a time on read (wf_tj.h) */
	WF_NODE_MJSON,   /* a GGUF's metadata.json: made a window at a time on read (wf_meta.h) */
	WF_NODE_MVAL,    /* a GGUF's metadata/KEY: key meta_key's value, made on read (wf_meta.h) */
};

/* What the tree holds besides the tensors' own files. */
struct wf_tree_opts {
	bool npy;            /* tensor files are NAME.npy: a .npy header, then the view */
	bool suffix;         /* tensor files are NAME.SUFFIX, the suffix naming the view's
			      * dtype (wf_view_suffix: weight.f32); ignored with npy */
	bool preview;        /* NAME.png beside every tensor file (wf_preview.h) */
	bool gguf_set;       /* -o gguf= was given: */
	uint32_t gguf;       /* model.gguf's type (WF_FTYPE_*, wf_arch.h); else the converter's default */
};

struct wf_chunk;
struct wf_previews;

struct wf_st_stream;
struct wf_tj;
struct wf_gguf_file;
struct wf_hf_file;

/* One node is 32 bytes: a hostile model can make millions.  The unions
 * hold what only one kind needs; read a field only for its kind. */
struct wf_node {
	char *name;            /* escaped path component, NUL-terminated; "" for the root */
	union {
		uint32_t *children;   /* WF_NODE_DIR: child indices sorted by name (bytewise) */
		const char *blob;     /* WF_NODE_BLOB: contents */
		size_t meta_key;      /* WF_NODE_MVAL: the key's number in metadata.json */
	};
	union {
		struct {
			uint32_t n_children; /* WF_NODE_DIR */
			uint32_t n_subdirs;  /* WF_NODE_DIR: children that are directories (for st_nlink) */
		};
		uint64_t blob_len;    /* WF_NODE_BLOB, WF_NODE_MVAL */
		struct {
			uint32_t tensor;  /* WF_NODE_TENSOR, WF_NODE_PREVIEW: index into model->tensors */
			uint16_t npy_len; /* WF_NODE_TENSOR: its .npy header's bytes (0 without -o npy) */
		};
	};
	uint32_t parent;       /* index of the parent; the root is its own parent */
	uint16_t name_len;     /* at most 255 */
	uint8_t kind;          /* enum wf_node_kind */
};

struct wf_tree {
	struct wf_node *nodes;      /* [n_nodes]; nodes[0] is the root */
	uint32_t n_nodes;
	uint32_t *tensor_node;      /* [model->n_tensors]: the node of each tensor */
	struct wf_tj *tj;           /* tensors.json: made a window at a time on read (wf_tj.h), never kept */
	uint64_t tj_len;            /* its bytes */
	unsigned max_dirs;          /* the limit on directories per tensor this model got */
	bool npy;                   /* tensor files carry .npy headers */
	bool suffix;                /* tensor file names end in their dtype's suffix */
	uint32_t summary_node;      /* WEIGHTFS.txt: empty until wf_tree_set_summary */
	char *summary;              /* its text (wf_summary.h, made by wf_mount_tree) */
	uint32_t meta_node;         /* the folder of one file per metadata key */
	uint64_t meta_id;           /* a number no other tree of this process has: tells the windows of
				     * a GGUF's metadata.json and metadata/ files apart (wf_files.c) */
	struct wf_previews *previews; /* -o preview: the rendered NAME.png files; else NULL */
	uint32_t *preview_node;     /* -o preview: [model->n_tensors] the node of each NAME.png; else NULL */
	const struct wf_model *m;
	/* model.safetensors: its header's length (measured at build time)
	 * and what makes its bytes a window at a time on read (wf_files.c):
	 * the header itself is never kept */
	uint64_t st_header_len;
	struct wf_st_stream *st_stream;
	uint64_t *st_offsets;       /* [n_tensors + 1]: each view's start after the header, and the end */
	struct wf_gguf_file *gguf;  /* model.gguf, or NULL when there is none: */
	char *gguf_why;             /* why not (one line, for WEIGHTFS.txt), or NULL for a GGUF source */
	struct wf_hf_file *hf;      /* hf/ of a GGUF model, or NULL: */
	char *hf_why;               /* why not (one line), or NULL for a safetensors source */
	struct wf_meta_file *meta;  /* one file per metadata key, in metadata.json's order */
	size_t n_meta;
	char *meta_text;            /* what the metadata files' texts point into */
	/* private */
	uint32_t *child_pool;       /* every directory's children, back to back */
	struct wf_chunk *names;     /* node names, packed into chunks */
};

/* Builds the tree for model m (which must outlive it), including
 * metadata.json and tensors.json at the root.  Work is linear in the total
 * length of the names (plus sorting each directory); what stays allocated
 * is linear in the number of nodes, which is at most one per header byte
 * the names take and, beyond WF_TREE_DIR_FLOOR directories, one directory
 * per WF_TREE_DIR_HEADER_DIV bytes of m->data_offset.  Returns freed heap
 * pages to the system before returning (glibc keeps them otherwise). */
enum wf_err wf_tree_build(struct wf_tree **out, const struct wf_model *m, char *err);

/* The same with options (NULL: the defaults, as wf_tree_build).  Besides
 * the tensors, every tree has WEIGHTFS.txt (a summary for people, empty
 * until wf_tree_set_summary), model.safetensors (the whole model as one
 * safetensors file in the mount's dtype) and a folder of one file per
 * metadata key, "metadata" (or "metadata.d" should a tensor or a file of
 * the model's folder take that name). */
enum wf_err wf_tree_build_opts(struct wf_tree **out, const struct wf_model *m, const struct wf_tree_opts *opts,
			       char *err);

/* Gives t the text of WEIGHTFS.txt (len bytes, NUL-terminated, taken
 * over: freed with t).  The summary reads the finished tree, so it comes
 * after wf_tree_build_opts, from wf_mount_tree. */
void wf_tree_set_summary(struct wf_tree *t, char *text, size_t len);

void wf_tree_free(struct wf_tree *t);

/* The child of dir named name[0..len), or WF_NO_NODE (binary search in
 * the sorted children: nothing here depends on a hash a file could aim at). */
uint32_t wf_tree_lookup(const struct wf_tree *t, uint32_t dir, const char *name, size_t len);

/* Appends the path of node idx relative to the root ("" for the root). */
struct wf_buf;
void wf_tree_path(const struct wf_tree *t, uint32_t idx, struct wf_buf *out);

/* Escapes one component (see above) into out; exposed for tests.  Work is
 * linear in n, and out grows by at most 255 bytes whatever n is. */
void wf_escape_component(const uint8_t *s, size_t n, struct wf_buf *out);

#endif
