/* wf_maps.c - live mappings of a many-part model, mapped on first read and
 * kept in a least-recently-used pool (wf_maps.h). */
#include "model/wf_maps.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/wf_unmap.h"

#define NONE UINT32_MAX

struct slot {
	const uint8_t *map;  /* the live mapping, or NULL */
	uint32_t refs;       /* reads using it */
	uint32_t prev, next; /* in the idle list (refs 0, map set), oldest first */
};

struct wf_maps {
	pthread_mutex_t lock;
	uint32_t n, cap;
	uint32_t live;       /* slots with a mapping */
	uint32_t head, tail; /* the idle list */
	struct slot *s;
	struct wf_unmap drop; /* evicted mappings, unmapped together */
};

uint32_t wf_maps_cap(void)
{
	const char *v = getenv("WF_MAX_MAPS");
	char *end;
	unsigned long n = v && *v ? strtoul(v, &end, 10) : 0;
	if (v && *v && *end == '\0' && n >= 1 && n <= 1000000)
		return (uint32_t)n;
	/* a system that lowered the limit keeps three quarters of it free */
	unsigned long max = 65530;
	FILE *f = fopen("/proc/sys/vm/max_map_count", "re");
	if (f) {
		if (fscanf(f, "%lu", &max) != 1)
			max = 65530;
		fclose(f);
	}
	return max / 4 < WF_MAPS_DEFAULT ? (uint32_t)(max / 4 ? max / 4 : 1) : WF_MAPS_DEFAULT;
}

struct wf_maps *wf_maps_new(uint32_t n_parts, uint32_t cap)
{
	struct wf_maps *mp = calloc(1, sizeof *mp);
	if (!mp)
		return NULL;
	mp->s = calloc(n_parts ? n_parts : 1, sizeof *mp->s);
	if (!mp->s || pthread_mutex_init(&mp->lock, NULL) != 0) {
		free(mp->s);
		free(mp);
		return NULL;
	}
	mp->n = n_parts;
	mp->cap = cap ? cap : 1;
	mp->head = mp->tail = NONE;
	mp->drop.max = mp->cap / 64 < 1 ? 1 : mp->cap / 64 > WF_MAPS_DROP ? WF_MAPS_DROP : mp->cap / 64;
	return mp;
}

static bool same_time(const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec == b->tv_sec && a->tv_nsec == b->tv_nsec;
}

/* Maps part p: through its descriptor, else through its path, which must
 * still lead to the file that was opened, unchanged (the strict rule of
 * wf_model_check for a part without a descriptor: any moved time is a
 * change), so a file replaced meanwhile is never read as the part. */
static enum wf_err map_part(const struct wf_part *p, const uint8_t **out, char *err)
{
	static const uint8_t empty[1];
	*out = NULL;
	if (p->len == 0) {
		*out = empty;
		return WF_OK;
	}
	int fd = p->fd;
	if (fd < 0) {
		if (!p->path)
			return wf_fail(err, WF_ERR_IO, "has no file to map");
		fd = open(p->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
		if (fd < 0)
			return wf_fail(err, errno == ENOENT ? WF_ERR_CHANGED : WF_ERR_IO, "cannot open: %s",
				       strerror(errno));
		struct stat now;
		const struct stat *was = &p->st;
		enum wf_err rc = WF_OK;
		if (fstat(fd, &now) != 0)
			rc = wf_fail(err, WF_ERR_IO, "cannot stat: %s", strerror(errno));
		else if (!S_ISREG(now.st_mode) || now.st_dev != was->st_dev || now.st_ino != was->st_ino)
			rc = wf_fail(err, WF_ERR_CHANGED, "is another file now (opened again by its path to be read)");
		else if (now.st_size != was->st_size || !same_time(&now.st_mtim, &was->st_mtim) ||
			 !same_time(&now.st_ctim, &was->st_ctim))
			rc = wf_fail(err, WF_ERR_CHANGED, "was changed (size, mtime or ctime moved)");
		if (rc != WF_OK) {
			close(fd);
			return rc;
		}
	}
	void *map = mmap(NULL, (size_t)p->len, PROT_READ, MAP_SHARED, fd, 0);
	int e = errno;
	if (fd != p->fd)
		close(fd); /* the mapping keeps the file; descriptors are few */
	if (map == MAP_FAILED)
		return wf_fail(err, e == ENOMEM ? WF_ERR_NOMEM : WF_ERR_IO, "cannot map: %s", strerror(e));
	*out = map;
	return WF_OK;
}

static void unmap(const struct wf_part *p, const uint8_t *map)
{
	if (map && p->len)
		munmap((void *)map, (size_t)p->len);
}

static void idle_remove(struct wf_maps *mp, uint32_t i)
{
	struct slot *s = &mp->s[i];
	if (s->prev != NONE)
		mp->s[s->prev].next = s->next;
	else
		mp->head = s->next;
	if (s->next != NONE)
		mp->s[s->next].prev = s->prev;
	else
		mp->tail = s->prev;
	s->prev = s->next = NONE;
}

static void idle_append(struct wf_maps *mp, uint32_t i)
{
	struct slot *s = &mp->s[i];
	s->next = NONE;
	s->prev = mp->tail;
	if (mp->tail != NONE)
		mp->s[mp->tail].next = i;
	else
		mp->head = i;
	mp->tail = i;
}

/* Under the lock: puts mapping `map` of part p with those to unmap; when
 * that batch is full, moves it to *out for the caller to unmap after
 * unlocking (wf_unmap_flush) and returns true. */
static bool give_up(struct wf_maps *mp, const struct wf_part *p, const uint8_t *map, struct wf_unmap *out)
{
	if (!map || !p->len)
		return false;
	if (!wf_unmap_add(&mp->drop, map, p->len))
		return false;
	*out = mp->drop;
	mp->drop.n_run = mp->drop.n = 0;
	return true;
}

/* Under the lock: takes the oldest idle mapping out of the pool when it
 * is over its size; true when the caller has a batch to unmap in *out. */
static bool evict_one(struct wf_maps *mp, const struct wf_part *parts, struct wf_unmap *out)
{
	uint32_t j = mp->head;
	if (mp->live <= mp->cap || j == NONE)
		return false;
	idle_remove(mp, j);
	const uint8_t *victim = mp->s[j].map;
	mp->s[j].map = NULL;
	mp->live--;
	return give_up(mp, &parts[j], victim, out);
}

/* Under the lock: one more reader of the live mapping of slot i. */
static const uint8_t *take(struct wf_maps *mp, uint32_t i)
{
	struct slot *s = &mp->s[i];
	if (s->refs++ == 0)
		idle_remove(mp, i);
	return s->map;
}

enum wf_err wf_maps_get(struct wf_maps *mp, const struct wf_part *parts, uint32_t part, const uint8_t **data,
			char *err)
{
	const struct wf_part *p = &parts[part];
	*data = p->data;
	if (p->data || !mp)
		return p->data ? WF_OK : wf_fail(err, WF_ERR_IO, "is not mapped");
	if (part >= mp->n)
		return wf_fail(err, WF_ERR_RANGE, "no part %" PRIu32, part);
	pthread_mutex_lock(&mp->lock);
	if (mp->s[part].map) {
		*data = take(mp, part);
		pthread_mutex_unlock(&mp->lock);
		return WF_OK;
	}
	pthread_mutex_unlock(&mp->lock);
	/* opened and mapped unlocked: a slow disk stalls only this read */
	const uint8_t *map;
	bool extra = false;
	enum wf_err rc = map_part(p, &map, err);
	if (rc != WF_OK)
		return rc;
	pthread_mutex_lock(&mp->lock);
	struct slot *s = &mp->s[part];
	if (s->map) {
		extra = true; /* another thread mapped it meanwhile: use that one */
	} else {
		s->map = map;
		s->prev = s->next = NONE;
		mp->live++;
		idle_append(mp, part); /* take() moves it out again */
	}
	*data = take(mp, part);
	struct wf_unmap batch;
	bool flush = evict_one(mp, parts, &batch);
	pthread_mutex_unlock(&mp->lock);
	if (extra)
		unmap(p, map);
	if (flush)
		wf_unmap_flush(&batch);
	return WF_OK;
}

void wf_maps_put(struct wf_maps *mp, const struct wf_part *parts, uint32_t part)
{
	if (!mp || parts[part].data || part >= mp->n)
		return;
	struct wf_unmap batch;
	bool flush = false;
	pthread_mutex_lock(&mp->lock);
	struct slot *s = &mp->s[part];
	if (s->refs && --s->refs == 0) {
		if (mp->live > mp->cap) { /* over the size while all were in use: shrink now */
			flush = give_up(mp, &parts[part], s->map, &batch);
			s->map = NULL;
			mp->live--;
		} else {
			idle_append(mp, part);
		}
	}
	pthread_mutex_unlock(&mp->lock);
	if (flush)
		wf_unmap_flush(&batch);
}

enum wf_err wf_maps_pin(struct wf_part *p, char *err)
{
	if (p->data)
		return WF_OK;
	const uint8_t *map;
	enum wf_err rc = map_part(p, &map, err);
	if (rc != WF_OK)
		return rc;
	p->data = map;
	p->map = p->len ? (void *)map : NULL;
	return WF_OK;
}

uint32_t wf_maps_live(struct wf_maps *mp)
{
	if (!mp)
		return 0;
	pthread_mutex_lock(&mp->lock);
	uint32_t n = mp->live;
	pthread_mutex_unlock(&mp->lock);
	return n;
}

void wf_maps_free(struct wf_maps *mp, const struct wf_part *parts)
{
	if (!mp)
		return;
	for (uint32_t i = 0; i < mp->n; i++)
		unmap(&parts[i], mp->s[i].map);
	wf_unmap_flush(&mp->drop);
	pthread_mutex_destroy(&mp->lock);
	free(mp->s);
	free(mp);
}
