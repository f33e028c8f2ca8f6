/* wf_part.h - one file of a model: what the model (wf_model.h) and the
 * watch on its files (wf_watch.h) both need to know of it. */
#ifndef WF_PART_H
#define WF_PART_H

#include <stdint.h>
#include <sys/stat.h>

/* One file a model's tensors live in: the file itself for a single-file
 * model, one part of a split GGUF or one shard of a safetensors set. */
struct wf_part {
	char *name;          /* file name in its folder, as tensors.json gives it; NULL for a buffer */
	char *path;          /* path to reopen it by (absolute); NULL for a buffer */
	char *link;          /* the symlink it was opened through (a hub snapshot's: absolute), else
			      * NULL; who may search its folders matters too (mount/wf_perm.h) */
	const uint8_t *data; /* its bytes: the read-only mapping, or a caller's buffer */
	uint64_t len;        /* bytes at data */
	int fd;              /* open read-only; -1 for a buffer, or when closed to spare descriptors */
	struct stat st;      /* of the file when opened: the identity the mount serves */
	void *map;           /* mmap base to unmap, or NULL */
	struct wf_robj *remote; /* a remote object (net/wf_remote.h) data is the memory of, else NULL */
};

#endif
