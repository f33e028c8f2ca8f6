/* wf_usage.h - the sizes the mount reports: st_size and st_blocks of each
 * node, and the totals statfs gives to df.
 *
 * Space is counted in 4 KiB fragments, as on a disk filesystem, so that
 * du (the sum of st_blocks) and df (statfs) agree to the byte.  A
 * directory's size is that of its entries written as ext4 writes them,
 * rounded up to a fragment, so no folder shows "0 bytes".  Nothing here
 * allocates or keeps state: everything is computed from the tree.
 */
#ifndef WF_USAGE_H
#define WF_USAGE_H

#include "model/wf_model.h"
#include "mount/wf_tree.h"

#include <stdint.h>

#define WF_FRAGMENT 4096u /* statfs f_frsize; the unit st_blocks is rounded to */

/* What statfs reports: a read-only filesystem that is full, with nothing
 * free and no inodes free, whose used space is what du counts. */
struct wf_usage {
	uint64_t frsize;   /* fragment size in bytes (WF_FRAGMENT) */
	uint64_t blocks;   /* fragments used: the sum of every node's fragments */
	uint64_t files;    /* inodes: one per node */
};

/* st_size of node idx of t: a tensor's
 * view size, a generated file's length, a directory's entries rounded up
 * to WF_FRAGMENT (never 0). */
uint64_t wf_usage_size(const struct wf_tree *t, uint32_t idx);

/* st_blocks (512-byte units) of node idx: its size rounded up to whole
 * fragments, so blocks * 512 >= size (never read as sparse). */
uint64_t wf_usage_blocks(const struct wf_tree *t, uint32_t idx);

/* The statfs totals of the whole tree; linear in the number of nodes and
 * directory entries. */
void wf_usage_get(const struct wf_tree *t, struct wf_usage *out);

#endif
