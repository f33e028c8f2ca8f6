/* wf_mnt.c - inspecting a mount point before mounting (wf_mnt.h). */
#include "fuse/wf_mnt.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>

/* mountinfo escapes space, tab, newline and backslash as \NNN (octal). */
static void unescape(char *s)
{
	char *o = s;
	for (char *p = s; *p; p++) {
		if (p[0] == '\\' && p[1] >= '0' && p[1] <= '3' && p[2] >= '0' && p[2] <= '7' &&
		    p[3] >= '0' && p[3] <= '7') {
			*o++ = (char)((p[1] - '0') << 6 | (p[2] - '0') << 3 | (p[3] - '0'));
			p += 3;
		} else {
			*o++ = *p;
		}
	}
	*o = '\0';
}

static void copy_field(char *dst, size_t n, const char *src)
{
	snprintf(dst, n, "%s", src ? src : "");
	unescape(dst);
}

/* Fields of one line: "id parent maj:min root MOUNTPOINT opts [tags...] -
 * FSTYPE SOURCE superopts".  Returns false for a line not in that shape. */
static bool parse_line(char *line, char **dev, char **mp, char **fstype, char **source)
{
	char *save = NULL, *f[6], *tok;
	for (int i = 0; i < 6; i++) {
		f[i] = strtok_r(i ? NULL : line, " \n", &save);
		if (!f[i])
			return false;
	}
	while ((tok = strtok_r(NULL, " \n", &save)) && strcmp(tok, "-") != 0)
		; /* optional tags (shared:N, master:N) up to the separator */
	if (!tok)
		return false;
	*dev = f[2];
	*mp = f[4];
	*fstype = strtok_r(NULL, " \n", &save);
	*source = strtok_r(NULL, " \n", &save);
	return *fstype != NULL;
}

enum wf_err wf_mnt_lookup(const char *mountinfo, const char *dir, bool *found, struct wf_mnt_info *out,
			  char *err)
{
	FILE *f = fopen(mountinfo, "re");
	if (!f)
		return wf_fail(err, WF_ERR_IO, "%s: %s", mountinfo, strerror(errno));
	char *line = NULL, *dev, *mp, *fstype, *source;
	size_t cap = 0;
	*found = false;
	while (getline(&line, &cap, f) > 0) {
		if (!parse_line(line, &dev, &mp, &fstype, &source))
			continue;
		unescape(mp);
		if (strcmp(mp, dir) != 0)
			continue;
		*found = true; /* keep going: a later line is mounted on top */
		copy_field(out->fstype, sizeof out->fstype, fstype);
		copy_field(out->source, sizeof out->source, source);
		copy_field(out->dev, sizeof out->dev, dev);
	}
	int bad = ferror(f);
	free(line);
	fclose(f);
	if (bad)
		return wf_fail(err, WF_ERR_IO, "%s: read error", mountinfo);
	return WF_OK;
}

/* A dead mount point fails realpath itself: resolve its parent, then say
 * which mount it was from the table (best effort: fstype stays ""). */
static void describe_dead(const char *dir, const char *mountinfo, struct wf_mnt_info *out)
{
	char tmp[PATH_MAX], parent[PATH_MAX], full[PATH_MAX + 256];
	out->state = WF_MNT_DEAD;
	if (snprintf(tmp, sizeof tmp, "%s", dir) >= (int)sizeof tmp)
		return;
	size_t n = strlen(tmp);
	while (n > 1 && tmp[n - 1] == '/')
		tmp[--n] = '\0';
	char *slash = strrchr(tmp, '/');
	const char *base = slash ? slash + 1 : tmp;
	if (!realpath(slash ? (slash == tmp ? "/" : (*slash = '\0', tmp)) : ".", parent))
		return;
	snprintf(full, sizeof full, "%s%s%s", parent, strcmp(parent, "/") ? "/" : "", base);
	bool found;
	struct wf_mnt_info mi;
	memset(&mi, 0, sizeof mi);
	if (wf_mnt_lookup(mountinfo, full, &found, &mi, NULL) == WF_OK && found) {
		memcpy(out->fstype, mi.fstype, sizeof out->fstype);
		memcpy(out->source, mi.source, sizeof out->source);
	}
}

enum wf_err wf_mnt_inspect(const char *dir, const char *mountinfo, struct wf_mnt_info *out, char *err)
{
	memset(out, 0, sizeof *out);
	struct stat st;
	if (stat(dir, &st) != 0) {
		if (errno == ENOTCONN) {
			describe_dead(dir, mountinfo, out);
			return WF_OK;
		}
		return wf_fail(err, WF_ERR_IO, "%s", strerror(errno));
	}
	if (!S_ISDIR(st.st_mode))
		return wf_fail(err, WF_ERR_IO, "not a directory");

	char real[PATH_MAX];
	if (!realpath(dir, real)) {
		if (errno == ENOTCONN) {
			describe_dead(dir, mountinfo, out);
			return WF_OK;
		}
		return wf_fail(err, WF_ERR_IO, "%s", strerror(errno));
	}
	bool mounted;
	enum wf_err rc = wf_mnt_lookup(mountinfo, real, &mounted, out, err);
	if (rc != WF_OK)
		return rc;
	if (mounted) {
		/* stat may be answered from cached attributes; statfs never is */
		struct statfs sf;
		out->state = statfs(dir, &sf) != 0 && errno == ENOTCONN ? WF_MNT_DEAD : WF_MNT_MOUNTED;
		return WF_OK;
	}

	DIR *d = opendir(dir);
	if (!d) {
		if (errno == ENOTCONN) {
			out->state = WF_MNT_DEAD;
			return WF_OK;
		}
		return wf_fail(err, WF_ERR_IO, "cannot list it: %s", strerror(errno));
	}
	out->state = WF_MNT_FREE;
	struct dirent *e;
	errno = 0;
	while ((e = readdir(d))) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		out->state = WF_MNT_NONEMPTY;
		snprintf(out->entry, sizeof out->entry, "%s", e->d_name);
		break;
	}
	int rerr = errno;
	closedir(d);
	if (!e && rerr)
		return wf_fail(err, WF_ERR_IO, "cannot list it: %s", strerror(rerr));
	return WF_OK;
}

enum wf_err wf_mnt_readahead(const char *mountinfo, const char *sysfs, const char *dir, unsigned kb, char *err)
{
	struct wf_mnt_info mi;
	bool found;
	memset(&mi, 0, sizeof mi);
	enum wf_err rc = wf_mnt_lookup(mountinfo, dir, &found, &mi, err);
	if (rc != WF_OK)
		return rc;
	/* a device name with a '/' or '..' would write some other file */
	unsigned maj, min;
	char tail;
	if (!found || strncmp(mi.fstype, "fuse", 4) != 0 || sscanf(mi.dev, "%u:%u%c", &maj, &min, &tail) != 2)
	{
		char qd[WF_QPATH];
		return wf_fail(err, WF_ERR_IO, "no FUSE mount on %s in %s", wf_quote_path(qd, sizeof qd, dir), mountinfo);
	}
	char path[PATH_MAX], val[16];
	snprintf(path, sizeof path, "%s/class/bdi/%u:%u/read_ahead_kb", sysfs, maj, min);
	int n = snprintf(val, sizeof val, "%u\n", kb);
	FILE *f = fopen(path, "we");
	if (!f)
		return wf_fail(err, WF_ERR_IO, "%s: %s", path, strerror(errno));
	bool ok = fwrite(val, 1, (size_t)n, f) == (size_t)n;
	ok = fclose(f) == 0 && ok;
	if (!ok)
		return wf_fail(err, WF_ERR_IO, "%s: %s", path, strerror(errno));
	return WF_OK;
}
