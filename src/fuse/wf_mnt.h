/* wf_mnt.h - what a directory is before weightfs mounts on it.
 *
 * The kernel stacks a mount on top of another one, and libfuse mounts over
 * a directory's files, hiding them; neither is what a user means.  A FUSE
 * mount whose daemon was killed still passes stat(2) from cached
 * attributes, so a dead mount is found through the mount table and a
 * request that cannot be answered from cache (statfs, readdir).
 */
#ifndef WF_MNT_H
#define WF_MNT_H

#include "base/wf_common.h"

enum wf_mnt_state {
	WF_MNT_FREE,      /* an empty directory that is not a mount point */
	WF_MNT_NONEMPTY,  /* a directory with entries; `entry` names one */
	WF_MNT_MOUNTED,   /* already a mount point: `fstype`, `source` */
	WF_MNT_DEAD,      /* a FUSE mount whose daemon is gone (ENOTCONN) */
};

struct wf_mnt_info {
	enum wf_mnt_state state;
	char fstype[64];     /* MOUNTED, DEAD when found in the table: "fuse.weightfs", "ext4" */
	char source[1024];   /* the mount's source ("" if none) */
	char dev[32];        /* the mount's device, "major:minor" (also its /sys/class/bdi name) */
	char entry[256];     /* NONEMPTY: one entry's name */
};

/* Inspects dir as a mount point.  Returns WF_ERR_IO with err set to the
 * reason ("not a directory", or strerror of the failed call) when dir
 * cannot be a mount point at all; otherwise WF_OK and out->state.
 * mountinfo is a mount table in /proc/self/mountinfo format (tests pass
 * their own); when several mounts are stacked on dir, the last (topmost)
 * one is described. */
enum wf_err wf_mnt_inspect(const char *dir, const char *mountinfo, struct wf_mnt_info *out, char *err);

/* Finds the absolute, resolved path dir in a mountinfo table.  Returns
 * WF_OK with *found set (and fstype, source filled from the last matching
 * line when found), or WF_ERR_IO when the table cannot be read. */
enum wf_err wf_mnt_lookup(const char *mountinfo, const char *dir, bool *found, struct wf_mnt_info *out,
			  char *err);

/* Sets the kernel read-ahead of the FUSE mount on dir (absolute and
 * resolved) to kb KiB by writing SYSFS/class/bdi/MAJ:MIN/read_ahead_kb,
 * where MAJ:MIN is the topmost mount on dir in the mountinfo table.  The
 * kernel caps a FUSE mount's read-ahead at 128 KiB whatever the daemon
 * asks for; only this file raises it, and only root may write it.  Returns
 * WF_OK, or WF_ERR_IO with err saying why (no FUSE mount on dir, or the
 * write's errno) and nothing changed. */
enum wf_err wf_mnt_readahead(const char *mountinfo, const char *sysfs, const char *dir, unsigned kb, char *err);

#endif
