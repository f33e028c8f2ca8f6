/* wf_watch.c - inotify IN_MODIFY on every part (wf_watch.h). */
#include "model/wf_watch.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdalign.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

struct wd_part {
	int wd;
	uint32_t part;
};

struct wf_watch {
	int fd;                   /* the inotify instance, non-blocking */
	pthread_mutex_t lock;     /* one thread drains at a time */
	struct wd_part *map;      /* sorted by wd; a file named twice has one wd */
	size_t n_map;
	uint32_t n_parts;
	atomic_bool *watched;     /* [n_parts] */
	atomic_bool *modified;    /* [n_parts] */
};

static int wd_cmp(const void *a, const void *b)
{
	const struct wd_part *x = a, *y = b;
	if (x->wd != y->wd)
		return x->wd < y->wd ? -1 : 1;
	return x->part < y->part ? -1 : x->part > y->part;
}

/* Adds a watch on part p, which must still be the file opened: through its
 * descriptor when it has one (exact even if renamed or unlinked), else by
 * path, then checked against the identity taken at open. */
static int watch_one(int fd, const struct wf_part *p)
{
	char path[64];
	const char *at = p->path;
	if (p->fd >= 0) {
		snprintf(path, sizeof path, "/proc/self/fd/%d", p->fd);
		at = path;
	}
	int wd = inotify_add_watch(fd, at, IN_MODIFY);
	if (wd < 0 && p->fd >= 0 && p->path)
		return -1;
	struct stat st;
	if (wd >= 0 && p->fd < 0 &&
	    (stat(p->path, &st) != 0 || st.st_dev != p->st.st_dev || st.st_ino != p->st.st_ino))
		return -1; /* another file by now: the watch is on the wrong one */
	return wd;
}

/* Watches one model may take: inotify watches are counted per user
 * (fs.inotify.max_user_watches, 8192 on older kernels), and a model of
 * 100,000 parts must not take them all from the user's other programs. */
static uint32_t watch_budget(void)
{
	unsigned long max = 8192;
	FILE *f = fopen("/proc/sys/fs/inotify/max_user_watches", "re");
	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 8192;
		fclose(f);
	}
	max /= 4;
	return max < WF_WATCH_MAX ? (uint32_t)max : WF_WATCH_MAX;
}

struct wf_watch *wf_watch_new(const struct wf_part *parts, uint32_t n_parts)
{
	struct wf_watch *w = calloc(1, sizeof *w);
	if (!w)
		return NULL;
	w->fd = -1;
	w->n_parts = n_parts;
	w->map = calloc(n_parts ? n_parts : 1, sizeof *w->map);
	w->watched = calloc(n_parts ? n_parts : 1, sizeof *w->watched);
	w->modified = calloc(n_parts ? n_parts : 1, sizeof *w->modified);
	if (!w->map || !w->watched || !w->modified || pthread_mutex_init(&w->lock, NULL) != 0) {
		free(w->map);
		free(w->watched);
		free(w->modified);
		free(w);
		return NULL;
	}
	for (uint32_t i = 0; i < n_parts; i++) {
		atomic_init(&w->watched[i], false);
		atomic_init(&w->modified[i], false);
	}
	w->fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
	uint32_t budget = watch_budget();
	for (uint32_t i = 0; w->fd >= 0 && i < n_parts && w->n_map < budget; i++) {
		const struct wf_part *p = &parts[i];
		/* a part without a descriptor needs none: found by its path it
		 * has a link, so the strict rule (any ctime move) already sees
		 * every write to it */
		if (p->fd < 0)
			continue;
		int wd = watch_one(w->fd, p);
		if (wd < 0)
			continue;
		w->map[w->n_map++] = (struct wd_part){.wd = wd, .part = i};
		atomic_store(&w->watched[i], true);
	}
	qsort(w->map, w->n_map, sizeof *w->map, wd_cmp);
	return w;
}

/* Marks every part of watch descriptor wd with flag f set. */
static void mark(struct wf_watch *w, int wd, atomic_bool *flags, bool value)
{
	size_t lo = 0, hi = w->n_map;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (w->map[mid].wd < wd)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (; lo < w->n_map && w->map[lo].wd == wd; lo++)
		atomic_store(&flags[w->map[lo].part], value);
}

/* Reads every queued event.  Under the lock: a thread that finds the
 * queue empty because another is reading it waits for that one to have
 * set the flags. */
static void drain(struct wf_watch *w)
{
	alignas(struct inotify_event) char buf[4096];
	pthread_mutex_lock(&w->lock);
	for (;;) {
		ssize_t n = read(w->fd, buf, sizeof buf);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		for (char *p = buf; p < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)p;
			if (ev->mask & IN_Q_OVERFLOW) /* events lost: any part may have been written */
				for (uint32_t i = 0; i < w->n_parts; i++)
					atomic_store(&w->modified[i], true);
			if (ev->mask & IN_MODIFY)
				mark(w, ev->wd, w->modified, true);
			if (ev->mask & IN_IGNORED) /* the watch is gone (file system unmounted) */
				mark(w, ev->wd, w->watched, false);
			p += sizeof *ev + ev->len;
		}
	}
	pthread_mutex_unlock(&w->lock);
}

bool wf_watch_part(struct wf_watch *w, uint32_t part, bool *modified)
{
	*modified = false;
	if (!w || part >= w->n_parts || w->fd < 0)
		return false;
	drain(w);
	*modified = atomic_load(&w->modified[part]);
	return atomic_load(&w->watched[part]);
}

void wf_watch_free(struct wf_watch *w)
{
	if (!w)
		return;
	if (w->fd >= 0)
		close(w->fd);
	pthread_mutex_destroy(&w->lock);
	free(w->map);
	free(w->watched);
	free(w->modified);
	free(w);
}
