/* wf_set.c - MODEL as a user names it: one file, a split GGUF, a
 * safetensors index and its shards, or a model folder (see wf_set.h).
 *
 * Every file is opened and validated on its own by wf_open_file, then the
 * rules that tie the files together are checked (wf_set_split.c,
 * wf_set_index.c, wf_set_folder.c), and the parts are merged into one
 * model: tensors in part order, each naming its part (wf_set_parts.c).
 */
#include "model/wf_set.h"
#include "model/wf_set_int.h"
#include "model/wf_watch.h"
#include "model/wf_open.h"
#include "model/wf_maps.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/mman.h>
#include <sys/stat.h>

/* Descriptors kept free for FUSE, the loop's threads and the C library. */
#define FD_RESERVE 64

/* Splits "DIR/NAME" into an absolute dir and a name. */
static enum wf_err split_path(const char *arg, char **dir, char **name, char *err)
{
	const char *slash = strrchr(arg, '/');
	char *d = slash ? strndup(arg, (size_t)(slash - arg) + (slash == arg)) : strdup(".");
	*name = strdup(slash ? slash + 1 : arg);
	*dir = d ? realpath(d, NULL) : NULL;
	int e = errno;
	free(d);
	if (!*name || !*dir) {
		free(*name);
		free(*dir);
		*name = *dir = NULL;
		return e == ENOMEM ? wf_fail(err, WF_ERR_NOMEM, "out of memory")
				   : wf_fail(err, WF_ERR_IO, "cannot resolve its folder: %s", strerror(e));
	}
	return WF_OK;
}

/* Descriptors open in the process now (0 when /proc is not there). */
static size_t fds_open(void)
{
	DIR *d = opendir("/proc/self/fd");
	size_t n = 0;
	if (!d)
		return 0;
	while (readdir(d))
		n++;
	closedir(d);
	/* ".", ".." and the listing's own descriptor */
	return n > 3 ? n - 3 : 0;
}

/* How many part descriptors this set may keep open: of what the soft limit
 * leaves free now (a process may hold several sets, and descriptors of its
 * own), all but FD_RESERVE, or half when that is little. */
static size_t fd_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1 << 20;
	size_t soft = (size_t)rl.rlim_cur, used = fds_open();
	size_t avail = soft > used ? soft - used : 0;
	return avail > 2 * FD_RESERVE ? avail - FD_RESERVE : avail / 2;
}

/* A safetensors file or index named as MODEL is its folder's model
 * (wf_set_beside), unless it is one shard of a set no index names: the
 * rest of that set is not mounted, so no config describes what is. */
static enum wf_err beside(struct wf_set_loader *L, const char *name, bool indexed, struct wf_model **out)
{
	size_t plen;
	unsigned long no, of;
	if (!indexed && wf_set_split_name(name, ".safetensors", &plen, &no, &of) && of > 1)
		return WF_OK;
	enum wf_err rc = wf_set_beside(L, *out);
	if (rc != WF_OK) {
		wf_model_free(*out);
		*out = NULL;
	}
	return rc;
}

static enum wf_err set_open(struct wf_set_loader *L, struct wf_model **out, const char *arg)
{
	char *err = L->err;
	char *name = NULL;
	enum wf_err rc;
	*out = NULL;
	struct stat st;
	if (stat(arg, &st) != 0)
		return wf_fail(err, WF_ERR_IO, "cannot open: %s", strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		L->dir = realpath(arg, NULL);
		if (!L->dir)
			return wf_fail(err, WF_ERR_IO, "cannot resolve: %s", strerror(errno));
		rc = wf_set_load_folder(L, out);
		free(L->dir);
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return wf_fail(err, WF_ERR_IO, "not a regular file or a folder");
	if ((rc = split_path(arg, &L->dir, &name, err)) != WF_OK)
		return rc;
	if (wf_set_ends_with(name, ".index.json")) {
		struct wf_set_index ix;
		rc = wf_set_index_load(L, name, &ix);
		if (rc == WF_OK)
			rc = wf_set_load_index(L, &ix, NULL, NULL, out);
		wf_set_index_free(&ix);
		if (rc == WF_OK)
			rc = beside(L, name, true, out);
		goto done;
	}
	/* a file on its own keeps the messages it always had: no file name */
	struct wf_model *m;
	if ((rc = wf_set_split_limit(L, name, ".gguf")) != WF_OK)
		goto done;
	rc = wf_open_file(&m, arg, err);
	if (rc != WF_OK)
		goto done;
	if (lstat(arg, &st) == 0 && S_ISLNK(st.st_mode) && !(m->parts[0].link = wf_path_join(L->dir, name))) {
		wf_model_free(m);
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
		goto done;
	}
	L->fds_kept = 1;
	if (m->format == WF_FMT_GGUF && m->split_count > 1) {
		rc = wf_set_load_split(L, m, name, out);
	} else if (m->format == WF_FMT_SAFETENSORS) {
		struct wf_set_index ix;
		bool found;
		rc = wf_set_index_beside(L, name, &ix, &found);
		if (rc == WF_OK && found)
			rc = wf_set_load_index(L, &ix, m, name, out);
		else if (rc == WF_OK)
			*out = m;
		else
			wf_model_free(m);
		if (found)
			wf_set_index_free(&ix);
		if (rc == WF_OK)
			rc = beside(L, name, found, out);
	} else {
		*out = m;
	}
done:
	free(name);
	free(L->dir);
	return rc;
}

enum wf_err wf_set_open(struct wf_model **out, const char *arg, char *err)
{
	struct wf_set_loader L = {.err = err, .fd_budget = fd_budget(), .map_cap = wf_maps_cap()};
	enum wf_err rc = set_open(&L, out, arg);
	wf_set_drop_flush(&L);
	/* the headers are parsed: their mapped pages leave the process before
	 * the tree is built (the page cache keeps them), so the peak holds the
	 * tree or the header, not both (1,000,000 GGUF tensors: 37 MiB less) */
	for (size_t i = 0; rc == WF_OK && i < (*out)->n_parts; i++)
		if ((*out)->parts[i].map)
			madvise((*out)->parts[i].map, (size_t)(*out)->parts[i].len, MADV_DONTNEED);
	if (rc == WF_OK && wf_model_watch(*out) != WF_OK) {
		wf_model_free(*out);
		*out = NULL;
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	return rc;
}
