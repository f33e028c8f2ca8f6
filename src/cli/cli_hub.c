/* cli_hub.c - weightfs verify's checks of a Hugging Face hub cache
 * (cli_verify.h): models--ORG--NAME/blobs/ holds each file once, named by
 * its digest (an LFS file by its SHA-256, 64 hex digits; a small file by
 * its git blob id, the SHA-1 of "blob SIZE\0" and its bytes, 40 hex
 * digits), snapshots/REV/ holds a symlink per file of revision REV into
 * blobs/, and refs/main names a revision. */
#include "cli/cli.h"
#include "cli/cli_hub.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Snapshot folders deeper than this are not walked (a loop, or abuse). */
#define MAX_DEPTH 32

static bool is_dir(const char *dir, const char *name)
{
	char *p = wf_path_join(dir, name);
	struct stat st;
	bool ok = p && stat(p, &st) == 0 && S_ISDIR(st.st_mode);
	free(p);
	return ok;
}

bool v_hub_detect(const char *path, struct v_hub *h)
{
	memset(h, 0, sizeof *h);
	char *r = realpath(path, NULL);
	if (!r)
		return false;
	if (is_dir(r, "blobs") && is_dir(r, "snapshots")) {
		h->root = r;
		return true;
	}
	/* ROOT/snapshots/REV */
	char *slash = strrchr(r, '/');
	if (slash && slash > r) {
		*slash = '\0';
		char *up = strrchr(r, '/');
		if (up && strcmp(up + 1, "snapshots") == 0) {
			*up = '\0';
			if (*r && is_dir(r, "blobs") && (h->snap = strdup(slash + 1))) {
				h->root = r;
				return true;
			}
		}
	}
	free(r);
	free(h->snap);
	h->snap = NULL;
	return false;
}

static bool all_hex(const char *s, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (!((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f')))
			return false;
	return s[n] == '\0';
}

/* The blob named `name`, added (with its digest job) if it is new; NULL
 * when out of memory. */
static struct v_blob *blob_of(struct v_hub *h, struct v_state *st, const char *name)
{
	for (size_t i = 0; i < h->n_blobs; i++) /* a cache holds tens of files */
		if (strcmp(h->blobs[i].name, name) == 0)
			return &h->blobs[i];
	struct v_blob *nb = wf_grow(h->blobs, h->n_blobs, &h->cap_blobs, sizeof *nb, 16);
	if (!nb)
		return NULL;
	h->blobs = nb;
	struct v_blob *b = &h->blobs[h->n_blobs];
	memset(b, 0, sizeof *b);
	char *dir = wf_path_join(h->root, "blobs");
	b->name = strdup(name);
	b->path = dir ? wf_path_join(dir, name) : NULL;
	free(dir);
	if (!b->name || !b->path) {
		free(b->name);
		free(b->path);
		return NULL;
	}
	size_t n = strlen(name);
	b->job = SIZE_MAX;
	if (n == 64 && all_hex(name, 64))
		b->job = v_add_job(st, V_FILE_SHA256, b->path, -1, 0, 0, h->n_blobs);
	else if (n == 40 && all_hex(name, 40))
		b->job = v_add_job(st, V_FILE_GIT, b->path, -1, 0, 0, h->n_blobs);
	h->n_blobs++;
	return b;
}

/* One symlink of a snapshot: where it leads must be a file in blobs/. */
static bool check_link(struct v_hub *h, struct v_state *st, const char *path, const char *rel)
{
	char target[PATH_MAX];
	ssize_t n = readlink(path, target, sizeof target - 1);
	target[n > 0 ? n : 0] = '\0';
	h->n_links++;
	char *res = realpath(path, NULL);
	struct stat rs;
	if (!res || stat(res, &rs) != 0) {
		v_problem(st, V_DIFFERS, "link", rel, NULL, 0, "snapshots/%s: a dangling link (to %s): %s", cli_path(rel),
			  cli_path(target), strerror(errno));
		free(res);
		return !st->oom;
	}
	size_t lr = strlen(h->root);
	const char *base = strrchr(res, '/') + 1;
	if (strncmp(res, h->root, lr) != 0 || strncmp(res + lr, "/blobs/", 7) != 0 || strchr(res + lr + 7, '/') ||
	    !S_ISREG(rs.st_mode)) {
		v_problem(st, V_DIFFERS, "link", rel, NULL, 0, "snapshots/%s: leads to %s, not to a file in blobs/",
			  cli_path(rel), cli_path(res));
		free(res);
		return !st->oom;
	}
	struct v_blob *b = blob_of(h, st, base);
	free(res);
	if (b && !b->link)
		b->link = strdup(rel);
	return b != NULL && !st->oom;
}

static bool walk(struct v_hub *h, struct v_state *st, const char *dir, const char *rel, int depth)
{
	DIR *d = opendir(dir);
	if (!d) {
		v_problem(st, V_TROUBLE, "link", rel, NULL, 0, "snapshots/%s: cannot be listed: %s", cli_path(rel),
			  strerror(errno));
		return !st->oom;
	}
	struct dirent *de;
	bool ok = true;
	while (ok && (de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		char *path = wf_path_join(dir, de->d_name), *r = wf_path_join(rel, de->d_name);
		struct stat ls;
		ok = path && r;
		if (ok && lstat(path, &ls) == 0) {
			if (S_ISLNK(ls.st_mode))
				ok = check_link(h, st, path, r);
			else if (S_ISDIR(ls.st_mode) && depth < MAX_DEPTH)
				ok = walk(h, st, path, r, depth + 1);
			/* a plain file in a snapshot was put there by hand: no digest to hold it to */
		}
		free(path);
		free(r);
	}
	closedir(d);
	return ok;
}

/* refs/main, when there is one, must name a snapshot. */
static void check_refs(struct v_hub *h, struct v_state *st)
{
	char *refs = wf_path_join(h->root, "refs/main");
	int fd = refs ? open(refs, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1; /* a FIFO must not block */
	struct stat s;
	FILE *f = fd >= 0 && fstat(fd, &s) == 0 && S_ISREG(s.st_mode) ? fdopen(fd, "r") : NULL;
	if (!f && fd >= 0) {
		close(fd);
		v_problem(st, V_DIFFERS, "refs", "refs/main", NULL, 0, "refs/main: not a regular file");
	}
	char rev[256] = "";
	if (f && fgets(rev, sizeof rev, f))
		rev[strcspn(rev, "\r\n")] = '\0';
	if (f) {
		char *snaps = wf_path_join(h->root, "snapshots");
		if (!*rev || strchr(rev, '/') || !snaps || !is_dir(snaps, rev))
			v_problem(st, V_DIFFERS, "refs", "refs/main", NULL, 0,
				  "refs/main names revision %s, which has no folder in snapshots/", cli_path(rev));
		free(snaps);
		fclose(f);
	}
	free(refs);
}

/* Every file of blobs/ (the whole cache is checked). */
static bool all_blobs(struct v_hub *h, struct v_state *st)
{
	char *dir = wf_path_join(h->root, "blobs");
	DIR *d = dir ? opendir(dir) : NULL;
	bool ok = dir != NULL;
	struct dirent *de;
	while (ok && d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		size_t n = strlen(de->d_name);
		if (n > 11 && strcmp(de->d_name + n - 11, ".incomplete") == 0) {
			h->n_unfinished++;
			continue;
		}
		ok = blob_of(h, st, de->d_name) != NULL;
	}
	if (d)
		closedir(d);
	free(dir);
	return ok;
}

bool v_hub_scan(struct v_hub *h, struct v_state *st)
{
	char *snaps = wf_path_join(h->root, "snapshots");
	if (!snaps)
		return false;
	bool ok = true;
	if (h->snap) {
		char *one = wf_path_join(snaps, h->snap);
		ok = one && walk(h, st, one, h->snap, 0);
		free(one);
	} else {
		DIR *d = opendir(snaps);
		struct dirent *de;
		while (ok && d && (de = readdir(d)) != NULL) {
			if (de->d_name[0] == '.')
				continue;
			char *one = wf_path_join(snaps, de->d_name);
			ok = one && walk(h, st, one, de->d_name, 0);
			free(one);
		}
		if (d)
			closedir(d);
		check_refs(h, st);
		ok = ok && all_blobs(h, st);
	}
	free(snaps);
	return ok && !st->oom;
}

bool v_hub_listed(struct v_hub *h, const char *rel, const char *path, const char *hex, size_t job)
{
	struct v_blob *nb = wf_grow(h->blobs, h->n_blobs, &h->cap_blobs, sizeof *nb, 16);
	if (!nb)
		return false;
	h->blobs = nb;
	struct v_blob *b = &h->blobs[h->n_blobs];
	*b = (struct v_blob){.name = strdup(hex), .path = strdup(path), .link = strdup(rel), .job = job};
	if (!b->name || !b->path || !b->link) {
		free(b->name);
		free(b->path);
		free(b->link);
		return false;
	}
	h->n_blobs++;
	return true;
}

void v_hub_judge(struct v_hub *h, struct v_state *st)
{
	for (size_t i = 0; i < h->n_blobs; i++) {
		struct v_blob *b = &h->blobs[i];
		if (b->job == SIZE_MAX)
			continue;
		const struct v_job *j = &st->jobs[b->job];
		char what[WF_QPATH + 16];
		if (h->listed)
			snprintf(what, sizeof what, "%s", b->link);
		else
			snprintf(what, sizeof what, "%s%s", b->link ? "snapshots/" : "blobs/", b->link ? b->link : b->name);
		size_t n = j->kind == V_FILE_GIT ? WF_SHA1_LEN : WF_SHA256_LEN;
		const char *dname = j->kind == V_FILE_GIT ? "git blob id" : "SHA-256";
		char hex[2 * WF_SHA256_LEN + 1];
		wf_sha_hex(j->sum, n, hex);
		b->verdict = j->err_no ? V_TROUBLE : strcmp(hex, b->name) != 0 ? V_DIFFERS : V_NOTE;
		if (j->err_no && h->listed)
			v_problem(st, V_TROUBLE, "file", what, NULL, 0, "%s: cannot be read: %s", cli_path(what),
				  v_strerror(j->err_no));
		else if (j->err_no)
			v_problem(st, V_TROUBLE, "blob", what, NULL, 0, "%s (blobs/%.12s...): cannot be read: %s",
				  cli_path(what), b->name, v_strerror(j->err_no));
		else if (b->verdict == V_DIFFERS && h->listed)
			v_problem(st, V_DIFFERS, "file", what, NULL, 0, "%s: its %s is %s, but %s lists %s", cli_path(what),
				  dname, hex, h->listed, b->name);
		else if (b->verdict == V_DIFFERS)
			v_problem(st, V_DIFFERS, "blob", what, NULL, 0,
				  "%s (blobs/%.12s...): its %s is %s, but the blob's name says %s", cli_path(what), b->name,
				  dname, hex, b->name);
	}
}

const struct v_blob *v_hub_blob(const struct v_hub *h, const char *path)
{
	for (size_t i = 0; path && i < h->n_blobs; i++)
		if (strcmp(h->blobs[i].path, path) == 0)
			return &h->blobs[i];
	return NULL;
}

void v_hub_free(struct v_hub *h)
{
	for (size_t i = 0; i < h->n_blobs; i++) {
		free(h->blobs[i].name);
		free(h->blobs[i].path);
		free(h->blobs[i].link);
	}
	free(h->blobs);
	free(h->root);
	free(h->snap);
	memset(h, 0, sizeof *h);
}
