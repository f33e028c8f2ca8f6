/* wf_hubcache.c - the Hugging Face cache layout (wf_hubcache.h). */
#include "net/wf_hubcache.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#define PATH_CAP 4600

static bool env_path(const char *name, const char *tail, char *out, size_t cap)
{
	const char *v = getenv(name);
	return v && v[0] == '/' && snprintf(out, cap, "%s%s", v, tail) < (int)cap;
}

/* HUB/models--ORG--NAME */
static bool repo_dir(const char *repo, char *out, size_t cap)
{
	char hub[4096];
	if (!env_path("HF_HUB_CACHE", "", hub, sizeof hub) && !env_path("HUGGINGFACE_HUB_CACHE", "", hub, sizeof hub) &&
	    !env_path("HF_HOME", "/hub", hub, sizeof hub) &&
	    !env_path("XDG_CACHE_HOME", "/huggingface/hub", hub, sizeof hub) &&
	    !env_path("HOME", "/.cache/huggingface/hub", hub, sizeof hub))
		return false;
	if (!*repo || strstr(repo, "..") || strchr(repo, '/') != strrchr(repo, '/'))
		return false;
	int n = snprintf(out, cap, "%s/models--", hub);
	for (const char *s = repo; *s && n + 3 < (int)cap; s++) {
		if (*s == '/')
			out[n++] = '-', out[n++] = '-';
		else
			out[n++] = *s;
	}
	out[n] = '\0';
	return n + 3 < (int)cap;
}

/* mkdir -p of path's folder */
static void make_parents(const char *path)
{
	char p[PATH_CAP];
	snprintf(p, sizeof p, "%s", path);
	for (char *s = p + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
}

bool wf_hubc_blob_name(const char *etag, char *out, size_t cap)
{
	if (strncmp(etag, "W/", 2) == 0)
		etag += 2;
	size_t n = strlen(etag);
	if (n >= 2 && etag[0] == '"' && etag[n - 1] == '"')
		etag++, n -= 2;
	if (n == 0 || n >= cap || memchr(etag, '/', n) || memchr(etag, '"', n) || (n <= 2 && etag[0] == '.'))
		return false;
	memcpy(out, etag, n);
	out[n] = '\0';
	return true;
}

static void tmp_name(const char *path, char *out, size_t cap, const char *suffix)
{
	uint32_t r = 0;
	if (getrandom(&r, sizeof r, 0) != sizeof r)
		r = (uint32_t)getpid() * 2654435761u;
	snprintf(out, cap, "%s.%08x%s", path, r, suffix);
}

/* snapshots/COMMIT/PATH -> ../../blobs/BLOB (one more ../ a folder of PATH) */
static bool link_snapshot(const char *dir, const char *commit, const char *path, const char *blob)
{
	if (strstr(path, "..") || path[0] == '/' || strlen(commit) < 7 || strchr(commit, '/'))
		return false;
	char lp[PATH_CAP], target[PATH_CAP], tmp[PATH_CAP + 32], have[PATH_CAP];
	snprintf(lp, sizeof lp, "%s/snapshots/%s/%s", dir, commit, path);
	int n = 0;
	for (const char *s = path; (s = strchr(s, '/')); s++)
		n += snprintf(target + n, sizeof target - (size_t)n, "../");
	snprintf(target + n, sizeof target - (size_t)n, "../../blobs/%s", blob);
	ssize_t k = readlink(lp, have, sizeof have - 1);
	if (k > 0 && (size_t)k == strlen(target) && memcmp(have, target, (size_t)k) == 0)
		return true;
	make_parents(lp);
	tmp_name(lp, tmp, sizeof tmp, ".tmp");
	if (symlink(target, tmp) != 0)
		return false;
	if (rename(tmp, lp) != 0) {
		unlink(tmp);
		return false;
	}
	return true;
}

int wf_hubc_begin(const char *repo, const char *etag, char *tmp, size_t cap)
{
	char dir[4096], blob[256], bp[PATH_CAP];
	if (!repo_dir(repo, dir, sizeof dir) || !wf_hubc_blob_name(etag, blob, sizeof blob))
		return -1;
	snprintf(bp, sizeof bp, "%s/blobs/%s", dir, blob);
	if (access(bp, F_OK) == 0)
		return -1;
	make_parents(bp);
	tmp_name(bp, tmp, cap, ".incomplete");
	return open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
}

bool wf_hubc_end(const char *repo, const char *commit, const char *path, const char *etag, const char *tmp,
		 bool ok)
{
	char dir[4096], blob[256], bp[PATH_CAP];
	if (!repo_dir(repo, dir, sizeof dir) || !wf_hubc_blob_name(etag, blob, sizeof blob))
		return false;
	snprintf(bp, sizeof bp, "%s/blobs/%s", dir, blob);
	if (tmp && *tmp) {
		if (ok && rename(tmp, bp) != 0)
			ok = false;
		if (!ok)
			unlink(tmp);
	}
	if (access(bp, F_OK) != 0)
		return false;
	return link_snapshot(dir, commit, path, blob) && ok;
}

bool wf_hubc_put(const char *repo, const char *commit, const char *path, const char *etag, const uint8_t *data,
		 size_t len)
{
	char tmp[PATH_CAP + 32] = "";
	int fd = wf_hubc_begin(repo, etag, tmp, sizeof tmp);
	bool ok = true;
	if (fd >= 0) {
		for (size_t done = 0; ok && done < len;) {
			ssize_t w = write(fd, data + done, len - done);
			ok = w > 0;
			done += ok ? (size_t)w : 0;
		}
		ok = close(fd) == 0 && ok;
	} else {
		tmp[0] = '\0';
	}
	return wf_hubc_end(repo, commit, path, etag, tmp, ok);
}

bool wf_hubc_ref(const char *repo, const char *rev, const char *commit)
{
	char dir[4096], rp[PATH_CAP], tmp[PATH_CAP + 32];
	if (!repo_dir(repo, dir, sizeof dir) || strstr(rev, "..") || rev[0] == '/' || !*rev)
		return false;
	snprintf(rp, sizeof rp, "%s/refs/%s", dir, rev);
	make_parents(rp);
	tmp_name(rp, tmp, sizeof tmp, ".tmp");
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0)
		return false;
	size_t n = strlen(commit);
	bool ok = write(fd, commit, n) == (ssize_t)n;
	ok = close(fd) == 0 && ok && rename(tmp, rp) == 0;
	if (!ok)
		unlink(tmp);
	return ok;
}
