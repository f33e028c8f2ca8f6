/* cli_out.c - an output file that appears whole or not at all (cli_out.h). */
#include "cli/cli_out.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* dirname and basename of path, in new strings. */
static int split(const char *path, char **dir, char **base)
{
	char *d = strdup(path), *b = strdup(path);
	*dir = d ? strdup(dirname(d)) : NULL;
	*base = b ? strdup(basename(b)) : NULL;
	free(d);
	free(b);
	if (*dir && *base)
		return 0;
	free(*dir);
	free(*base);
	errno = ENOMEM;
	return -1;
}

/* Whether name is ".BASE.weightfs-PID-N.tmp"; *pid gets PID. */
static bool stale_name(const char *name, const char *base, long *pid)
{
	size_t bl = strlen(base);
	if (name[0] != '.' || strncmp(name + 1, base, bl) != 0 || strncmp(name + 1 + bl, ".weightfs-", 10) != 0)
		return false;
	const char *p = name + 1 + bl + 10;
	char *end;
	errno = 0;
	long v = strtol(p, &end, 10);
	if (errno || end == p || v <= 0 || *end != '-')
		return false;
	p = end + 1;
	strtoul(p, &end, 10);
	if (end == p || strcmp(end, ".tmp") != 0)
		return false;
	*pid = v;
	return true;
}

int cli_out_clean_stale(const char *out)
{
	char *dir, *base;
	if (split(out, &dir, &base) != 0)
		return 0;
	int n = 0;
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL) {
		long pid;
		if (!stale_name(de->d_name, base, &pid) || pid == (long)getpid())
			continue;
		/* a live process (or one we may not signal) keeps its file */
		if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
			continue;
		n += unlinkat(dirfd(d), de->d_name, 0) == 0;
	}
	if (d)
		closedir(d);
	free(dir);
	free(base);
	return n;
}

static int open_named(struct cli_out *o, const char *dir, const char *base, mode_t mode)
{
	for (unsigned i = 0; i < 100; i++) {
		free(o->tmp);
		if (asprintf(&o->tmp, "%s/.%s.weightfs-%ld-%u.tmp", dir, base, (long)getpid(), i) < 0) {
			o->tmp = NULL;
			errno = ENOMEM;
			return -1;
		}
		o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode);
		if (o->fd >= 0)
			return 0;
		if (errno != EEXIST)
			break;
	}
	free(o->tmp);
	o->tmp = NULL;
	return -1;
}

int cli_out_open(struct cli_out *o, const char *out, mode_t mode)
{
	*o = (struct cli_out){.fd = -1};
	char *dir, *base;
	if (split(out, &dir, &base) != 0)
		return -1;
	o->out = strdup(out);
	int rc = -1;
	if (!o->out) {
		errno = ENOMEM;
		goto done;
	}
	o->fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, mode);
	if (o->fd >= 0) {
		rc = 0;
		goto done;
	}
	/* filesystems without O_TMPFILE say EOPNOTSUPP (or EISDIR on old kernels) */
	if (errno != EOPNOTSUPP && errno != EISDIR && errno != EINVAL)
		goto done;
	cli_out_clean_stale(out);
	rc = open_named(o, dir, base, mode);
done:
	if (rc != 0) {
		int e = errno;
		cli_out_abort(o);
		errno = e;
	}
	free(dir);
	free(base);
	return rc;
}

/* Links the unnamed file at o->fd to name (fails with EEXIST if taken). */
static int link_fd(int fd, const char *name)
{
	char proc[64];
	snprintf(proc, sizeof proc, "/proc/self/fd/%d", fd);
	return linkat(AT_FDCWD, proc, AT_FDCWD, name, AT_SYMLINK_FOLLOW);
}

/* Gives the unnamed file its name; over an existing one through a
 * short-lived named link and a rename. */
static int name_tmpfile(struct cli_out *o, bool force)
{
	if (link_fd(o->fd, o->out) == 0)
		return 0;
	if (errno != EEXIST || !force)
		return -1;
	char *dir, *base;
	if (split(o->out, &dir, &base) != 0)
		return -1;
	int rc = -1;
	for (unsigned i = 0; i < 100 && rc != 0; i++) {
		free(o->tmp);
		if (asprintf(&o->tmp, "%s/.%s.weightfs-%ld-%u.tmp", dir, base, (long)getpid(), i) < 0) {
			o->tmp = NULL;
			errno = ENOMEM;
			break;
		}
		if (link_fd(o->fd, o->tmp) == 0)
			rc = 0;
		else if (errno != EEXIST)
			break;
	}
	free(dir);
	free(base);
	if (rc == 0 && (rc = rename(o->tmp, o->out)) == 0) {
		free(o->tmp);
		o->tmp = NULL;
	}
	return rc;
}

/* Puts the named temporary file at out; without force, never over an
 * existing out, even one that appeared while converting. */
static int place_named(struct cli_out *o, bool force)
{
	if (force)
		return rename(o->tmp, o->out);
	if (renameat2(AT_FDCWD, o->tmp, AT_FDCWD, o->out, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a filesystem without RENAME_NOREPLACE: link fails on an existing name too */
	if (link(o->tmp, o->out) != 0)
		return -1;
	unlink(o->tmp);
	return 0;
}

int cli_out_commit(struct cli_out *o, bool force)
{
	int e = 0;
	if (fsync(o->fd) != 0)
		e = errno;
	int rc = e ? -1 : o->tmp ? place_named(o, force) : name_tmpfile(o, force);
	if (rc != 0 && !e)
		e = errno;
	if (rc == 0) { /* renamed: nothing left to remove */
		free(o->tmp);
		o->tmp = NULL;
	}
	if (close(o->fd) != 0 && !e) {
		e = errno;
		rc = -1;
	}
	o->fd = -1;
	errno = e;
	return rc;
}

void cli_out_abort(struct cli_out *o)
{
	if (o->fd >= 0)
		close(o->fd);
	o->fd = -1;
	if (o->tmp)
		unlink(o->tmp);
	free(o->tmp);
	free(o->out);
	o->tmp = o->out = NULL;
}
