/* cli_out.h - an output file that appears whole or not at all (convert).
 *
 * The bytes go into an unnamed file in OUT's folder (O_TMPFILE), which is
 * given OUT's name only once it is complete and synced: a run killed with
 * SIGKILL leaves nothing behind.  Where the filesystem has no O_TMPFILE, a
 * hidden ".OUT.weightfs-PID-N.tmp" beside OUT is used and renamed; such
 * files left by processes that no longer exist are removed first.  The
 * file is created with the mode given (the model's permission bits, as cp
 * does), less the umask. */
#ifndef CLI_OUT_H
#define CLI_OUT_H

#include <stdbool.h>
#include <sys/types.h>

struct cli_out {
	int fd;          /* where the bytes go; -1 when closed */
	char *tmp;       /* the named temporary file, or NULL with O_TMPFILE */
	char *out;       /* the final name */
};

/* Creates the file for out; returns 0, or -1 with errno set. */
int cli_out_open(struct cli_out *o, const char *out, mode_t mode);

/* Syncs the bytes and gives them the name out (over an existing out only
 * with force; EEXIST otherwise); closes the descriptor either way.
 * Returns 0, or -1 with errno set. */
int cli_out_commit(struct cli_out *o, bool force);

/* Drops whatever was made (closes, removes the named temporary file) and
 * frees o; safe after a commit and on a zeroed o. */
void cli_out_abort(struct cli_out *o);

/* Removes files ".BASE.weightfs-PID-N.tmp" beside out whose PID names no
 * live process; returns how many. */
int cli_out_clean_stale(const char *out);

#endif
