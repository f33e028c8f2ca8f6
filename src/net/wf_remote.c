/* wf_remote.c - remote objects as memory, fetched by the chunk on first
 * touch (wf_remote.h). */
#include "net/wf_remote.h"
#include "net/wf_cache.h"
#include "net/wf_http.h"

#include <errno.h>
#include <fcntl.h>
#include <linux/userfaultfd.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

struct wf_remote_conf wf_remote_conf = {.chunk = 4u << 20, .streams = 4, .mem = 256u << 20,
					.cache_size = WF_CACHE_SIZE_DEFAULT};

/* STAGED: fetched ahead, its bytes held (the staged ring) until a reader
 * touches the chunk.  Placed only then, so that every chunk a sequential
 * reader reaches faults once, and the read-ahead sees the reader move
 * through what it fetched (a chunk placed ahead of time would be read
 * without a fault, and the window would drain before the next one). */
enum { ABSENT, QUEUED, INFLIGHT, STAGED, PRESENT };
#define RA_MAX 16 /* chunks fetched ahead at most */
#define HELD_MAX (2 * RA_MAX) /* staged chunks held at most, all objects: the oldest dropped */
#define HEAD_ASK (256u << 10) /* a probe's head of a first chunk, past remote_mem */

struct wf_robj {
	char *url, *etag, *token;
	char *asked;       /* the URL opened (before redirects): the pin hint's name */
	uint8_t *incache;  /* a bit per chunk: in the cache folder (read from or put there) */
	uint64_t n_ck;     /* chunks at the pinned chunk size */
	atomic_uint_least64_t n_incache;
	struct wf_http_sigv4 *sig; /* S3: every request signed with this; NULL else */
	char key[33];      /* the cache's name for this version of the object */
	uint64_t size;
	uint8_t *base;     /* the registered mapping, maplen bytes */
	size_t maplen;
	uint64_t chunk, n_chunks;
	uint8_t *st;       /* per chunk: ABSENT ... PRESENT */
	uint8_t *pre;      /* the first chunk, fetched by the pinning probe, until mapped */
	uint64_t pre_len;  /* its bytes, counted in pre_bytes until placed */
	uint64_t last_c, ra_end;
	unsigned window;
	bool seen;         /* a fault came: last_c means something */
	bool failing;      /* a notice was given for a failure; reset by a success */
	atomic_bool changed;
	char why[WF_ERRLEN];
	struct wf_robj *next;
};

struct fill;

struct job {
	struct wf_robj *o;
	uint64_t c;
	struct fill *g; /* a wf_remote_fill's job: into the cache only; NULL: into memory */
};

/* One wf_remote_fill: its jobs are fed to the queue a few at a time. */
struct fill {
	pthread_cond_t cv;
	struct wf_fill st;
	unsigned queued;   /* jobs in the queue or in a worker's hands */
	bool failed;
	char why[WF_ERRLEN];
};

struct waiter {
	struct wf_robj *o;
	uint64_t c;
	pid_t tid;
	uintptr_t addr;
};

struct worker {
	pthread_t thr;
	void *curl;
	uint8_t *buf;
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t work = PTHREAD_COND_INITIALIZER;
static int uffd = -1, stop_pipe[2] = {-1, -1};
static bool running, stopping;
static pthread_t fault_thr;
static struct worker *workers;
static unsigned n_workers;
static struct wf_robj *objs;
static struct job *queue;
static size_t q_n, q_cap;
static struct waiter *waiters;
static size_t w_n, w_cap;
static struct job *resident; /* chunks in memory, oldest first (a ring) */
static size_t r_head, r_n, r_cap;
/* STAGED chunks and their bytes, oldest first (a ring): at most HELD_MAX,
 * so no per-chunk table grows with the model */
static struct held {
	struct wf_robj *o;
	uint64_t c;
	uint8_t *buf;
} staged[HELD_MAX];
static size_t s_head, s_n;
/* Chunk buffers given back by placed staged chunks, reused: a fresh
 * buffer's first touch costs page faults (a third of a read, perf). */
static uint8_t *spare[HELD_MAX];
static size_t n_spare;

/* Staged chunks held at most: half of remote_mem, 2 .. HELD_MAX. */
static size_t held_cap(void)
{
	uint64_t n = wf_remote_conf.mem / (wf_remote_conf.chunk ? wf_remote_conf.chunk : 1) / 2;
	return n < 2 ? 2 : n > HELD_MAX ? HELD_MAX : (size_t)n;
}

static void give_spare(uint8_t *buf)
{
	if (buf && n_spare < held_cap())
		spare[n_spare++] = buf;
	else
		free(buf);
}
static atomic_uint_least64_t fetched;
static atomic_uint_least64_t pre_bytes; /* first chunks held from pinning probes, not yet placed */
static size_t page;

uint64_t wf_remote_fetched(void)
{
	return atomic_load(&fetched);
}

uint64_t wf_robj_size(const struct wf_robj *o)
{
	return o->size;
}

const char *wf_robj_url(const struct wf_robj *o)
{
	return o->url;
}

enum wf_err wf_robj_check(const struct wf_robj *o, char *err)
{
	if (!atomic_load(&o->changed))
		return WF_OK;
	return wf_fail(err, WF_ERR_CHANGED, "%s", o->why);
}

/* ---- under mu ---- */

static uint64_t chunk_len(const struct wf_robj *o, uint64_t c)
{
	uint64_t off = c * o->chunk;
	return o->size - off < o->chunk ? o->size - off : o->chunk;
}

/* The chunk's bytes in the mapping: whole pages. */
static uint64_t chunk_span(const struct wf_robj *o, uint64_t c)
{
	return (chunk_len(o, c) + page - 1) / page * page;
}

static bool push(struct wf_robj *o, uint64_t c, bool front)
{
	if (o->st[c] == QUEUED) {
		/* asked ahead, now waited for: to the front */
		for (size_t i = 0; front && i < q_n; i++)
			if (queue[i].o == o && queue[i].c == c && !queue[i].g) {
				struct job jb = queue[i];
				memmove(queue + 1, queue, i * sizeof *queue);
				queue[0] = jb;
				break;
			}
		return true;
	}
	if (q_n == q_cap) {
		size_t n = q_cap ? q_cap * 2 : 64;
		struct job *q = realloc(queue, n * sizeof *q);
		if (!q)
			return false;
		queue = q, q_cap = n;
	}
	if (front) {
		memmove(queue + 1, queue, q_n * sizeof *queue);
		queue[0] = (struct job){o, c, NULL};
	} else {
		queue[q_n] = (struct job){o, c, NULL};
	}
	q_n++;
	o->st[c] = QUEUED;
	pthread_cond_signal(&work);
	return true;
}

/* SIGBUS at addr for thread tid, as a fault there would give: the one
 * handler (wf_bus) reads only si_addr.  SI_QUEUE, since only a process's
 * main thread may send another thread a kernel-looking code. */
static void bus_thread(pid_t tid, uintptr_t addr)
{
	siginfo_t si;
	memset(&si, 0, sizeof si);
	si.si_signo = SIGBUS;
	si.si_code = SI_QUEUE;
	si.si_addr = (void *)addr;
	syscall(SYS_rt_tgsigqueueinfo, getpid(), tid, SIGBUS, &si);
}

static void wake(struct wf_robj *o, uint64_t c)
{
	struct uffdio_range r = {.start = (uintptr_t)(o->base + c * o->chunk), .len = chunk_span(o, c)};
	ioctl(uffd, UFFDIO_WAKE, &r);
}

/* Gives up the waiters of chunk c: woken (the bytes are there) or told
 * by SIGBUS (they never will be, this time). */
static void settle(struct wf_robj *o, uint64_t c, bool ok)
{
	size_t k = 0;
	for (size_t i = 0; i < w_n; i++) {
		if (waiters[i].o == o && waiters[i].c == c) {
			if (!ok)
				bus_thread(waiters[i].tid, waiters[i].addr);
			continue;
		}
		waiters[k++] = waiters[i];
	}
	w_n = k;
	if (ok)
		wake(o, c);
}

static void evict_over_cap(void)
{
	uint64_t cap = wf_remote_conf.mem / (wf_remote_conf.chunk ? wf_remote_conf.chunk : 1);
	if (cap < (uint64_t)n_workers * 2)
		cap = (uint64_t)n_workers * 2;
	while (r_n > cap) {
		struct job v = resident[r_head];
		r_head = (r_head + 1) % r_cap;
		r_n--;
		if (v.o->st[v.c] != PRESENT)
			continue;
		/* gone from memory; a touch faults again and fetches it again */
		madvise(v.o->base + v.c * v.o->chunk, chunk_span(v.o, v.c), MADV_DONTNEED);
		v.o->st[v.c] = ABSENT;
	}
}

static void note_resident(struct wf_robj *o, uint64_t c)
{
	if (r_n == r_cap) {
		size_t n = r_cap ? r_cap * 2 : 64;
		struct job *r = malloc(n * sizeof *r);
		if (!r)
			return; /* not tracked: stays in memory */
		for (size_t i = 0; i < r_n; i++)
			r[i] = resident[(r_head + i) % r_cap];
		free(resident);
		resident = r, r_cap = n, r_head = 0;
	}
	resident[(r_head + r_n) % r_cap] = (struct job){o, c, NULL};
	r_n++;
	evict_over_cap();
}

/* Whether a thread waits on chunk c. */
static bool waited(const struct wf_robj *o, uint64_t c)
{
	for (size_t i = 0; i < w_n; i++)
		if (waiters[i].o == o && waiters[i].c == c)
			return true;
	return false;
}

/* Keeps chunk c's fetched bytes (buf, now the object's) until touched;
 * over HELD_MAX, the oldest staged chunk is dropped (fetched again if it
 * is touched after all). */
static void hold(struct wf_robj *o, uint64_t c, uint8_t *buf)
{
	if (s_n >= held_cap()) {
		struct held v = staged[s_head];
		s_head = (s_head + 1) % HELD_MAX;
		s_n--;
		give_spare(v.buf);
		v.o->st[v.c] = ABSENT;
	}
	o->st[c] = STAGED;
	staged[(s_head + s_n) % HELD_MAX] = (struct held){o, c, buf};
	s_n++;
}

/* Takes chunk c's held bytes out of the ring (NULL when none). */
static uint8_t *unhold(const struct wf_robj *o, uint64_t c)
{
	for (size_t i = 0; i < s_n; i++) {
		struct held *h = &staged[(s_head + i) % HELD_MAX];
		if (h->o != o || h->c != c)
			continue;
		uint8_t *buf = h->buf;
		for (size_t k = i; k + 1 < s_n; k++) /* the younger ones move up: order kept */
			staged[(s_head + k) % HELD_MAX] = staged[(s_head + k + 1) % HELD_MAX];
		s_n--;
		return buf;
	}
	return NULL;
}

/* Copies a fetched chunk in, which wakes whoever waits on its pages.
 * Without the lock: the chunk is INFLIGHT, this thread's alone. */
static bool place(struct wf_robj *o, uint64_t c, const uint8_t *buf)
{
	uint64_t span = chunk_span(o, c);
	struct uffdio_copy cp = {.dst = (uintptr_t)(o->base + c * o->chunk), .src = (uintptr_t)buf, .len = span};
	if (ioctl(uffd, UFFDIO_COPY, &cp) == 0)
		return true;
	if (errno != EEXIST)
		return false;
	/* some pages are there already: the rest page by page */
	for (uint64_t p = 0; p < span; p += page) {
		struct uffdio_copy one = {.dst = cp.dst + p, .src = cp.src + p, .len = page,
					  .mode = UFFDIO_COPY_MODE_DONTWAKE};
		if (ioctl(uffd, UFFDIO_COPY, &one) != 0 && errno != EEXIST)
			return false;
	}
	return true;
}

/* The probe's head (the first n bytes, less than chunk 0) placed: whole
 * pages only, but for the object's last, so that no page is filled with
 * zeros where bytes belong; a fault past them fetches chunk 0 whole. */
static bool place_head(struct wf_robj *o, const uint8_t *buf, uint64_t n)
{
	uint64_t len = n == o->size ? (n + page - 1) / page * page : n / page * page;
	struct uffdio_copy cp = {.dst = (uintptr_t)o->base, .src = (uintptr_t)buf, .len = len};
	return len == 0 || ioctl(uffd, UFFDIO_COPY, &cp) == 0 || errno == EEXIST;
}

/* ---- the fault thread ---- */

static struct wf_robj *owner(uintptr_t a)
{
	for (struct wf_robj *o = objs; o; o = o->next)
		if (o->base && a >= (uintptr_t)o->base && a < (uintptr_t)o->base + o->maplen)
			return o;
	return NULL;
}

/* Read-ahead: a fault on the chunk after the last one (or on one fetched
 * ahead) doubles the window of chunks kept asked for ahead of the reader,
 * up to RA_MAX; any other fault resets it to none (mountpoint-s3 and
 * hf-mount do the same: random reads fetch only what they touch).  Each
 * chunk faults once (STAGED says why), so a sequential reader moves the
 * window along and the fetches run ahead of it. */
static void read_ahead(struct wf_robj *o, uint64_t c)
{
	if (o->seen && c == o->last_c)
		return; /* another page of the same chunk */
	bool seq = o->seen && c > o->last_c && c <= o->ra_end + 1;
	unsigned max = RA_MAX < held_cap() ? RA_MAX : (unsigned)held_cap();
	o->window = seq ? (o->window ? (o->window * 2 > max ? max : o->window * 2) : 1) : 0;
	o->seen = true;
	o->last_c = c;
	uint64_t from = seq && o->ra_end > c ? o->ra_end + 1 : c + 1;
	uint64_t end = c + o->window < o->n_chunks ? c + o->window : o->n_chunks - 1;
	for (uint64_t k = from; k <= end; k++)
		if (o->st[k] == ABSENT)
			push(o, k, false);
	o->ra_end = end > c ? end : c;
}

/* Places staged chunk c from the fault thread (outside the lock, the
 * chunk INFLIGHT meanwhile, as a worker does). */
static void place_held(struct wf_robj *o, uint64_t c)
{
	/* the probe's first chunk (its pages only, not a chunk's), else the ring's */
	bool pre = c == 0 && o->pre;
	uint8_t *buf = pre ? o->pre : unhold(o, c);
	uint64_t head = 0; /* the probe brought only a head of chunk 0: its length */
	o->st[c] = INFLIGHT;
	if (pre) {
		head = o->pre_len < chunk_len(o, 0) ? o->pre_len : 0;
		atomic_fetch_sub(&pre_bytes, o->pre_len);
		o->pre = NULL;
		o->pre_len = 0;
	}
	if (!buf) { /* cannot be: STAGED always has its bytes; fetch it again */
		o->st[c] = ABSENT;
		push(o, c, true);
		return;
	}
	pthread_mutex_unlock(&mu);
	bool ok = head ? place_head(o, buf, head) : place(o, c, buf);
	pthread_mutex_lock(&mu);
	if (pre)
		free(buf);
	else
		give_spare(buf);
	if (ok && !head) {
		o->st[c] = PRESENT;
		note_resident(o, c);
	} else {
		/* a head: the rest of chunk 0 is fetched when touched (a waiter
		 * past the head faults again when woken) */
		o->st[c] = ABSENT;
	}
	settle(o, c, ok);
}

static void on_fault(uintptr_t addr, pid_t tid)
{
	pthread_mutex_lock(&mu);
	struct wf_robj *o = owner(addr);
	if (!o) {
		pthread_mutex_unlock(&mu);
		bus_thread(tid, addr);
		return;
	}
	uint64_t c = (addr - (uintptr_t)o->base) / o->chunk;
	unsigned char in = 0;
	void *pg = (void *)(addr & ~(uintptr_t)(page - 1));
	if (o->st[c] == PRESENT && mincore(pg, page, &in) == 0 && !(in & 1)) {
		/* said here but gone (a copy interrupted by a fork): again */
		madvise(o->base + c * o->chunk, chunk_span(o, c), MADV_DONTNEED);
		o->st[c] = ABSENT;
	}
	if (o->st[c] == PRESENT) {
		wake(o, c); /* the copy came between the fault and its message */
	} else if (atomic_load(&o->changed)) {
		bus_thread(tid, addr);
	} else {
		if (w_n == w_cap) {
			size_t n = w_cap ? w_cap * 2 : 64;
			struct waiter *w = realloc(waiters, n * sizeof *w);
			if (!w) {
				pthread_mutex_unlock(&mu);
				bus_thread(tid, addr);
				return;
			}
			waiters = w, w_cap = n;
		}
		waiters[w_n++] = (struct waiter){o, c, tid, addr};
		read_ahead(o, c);
		if (o->st[c] == STAGED)
			place_held(o, c);
		else if ((o->st[c] == ABSENT || o->st[c] == QUEUED) && !push(o, c, true))
			settle(o, c, false);
	}
	pthread_mutex_unlock(&mu);
}

static void *fault_loop(void *u)
{
	(void)u;
	struct pollfd p[2] = {{.fd = uffd, .events = POLLIN}, {.fd = stop_pipe[0], .events = POLLIN}};
	for (;;) {
		if (poll(p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			break;
		}
		if (p[1].revents)
			break;
		struct uffd_msg msg[16];
		ssize_t n = read(uffd, msg, sizeof msg);
		for (ssize_t i = 0; n > 0 && i < n / (ssize_t)sizeof msg[0]; i++)
			if (msg[i].event == UFFD_EVENT_PAGEFAULT)
				on_fault((uintptr_t)msg[i].arg.pagefault.address,
					 (pid_t)msg[i].arg.pagefault.feat.ptid);
	}
	return NULL;
}

/* ---- the cache folder ---- */

static uint64_t fnv(uint64_t h, const void *p, size_t n)
{
	const uint8_t *b = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ b[i]) * 0x100000001b3ull;
	return h;
}

/* Two FNV-1a streams from different offsets: 128 bits of name. */
static void cache_key(struct wf_robj *o, const char *url)
{
	char sz[32];
	snprintf(sz, sizeof sz, "%llu", (unsigned long long)o->size);
	uint64_t a = 0xcbf29ce484222325ull, b = 0x84222325cbf29ce4ull;
	const char *parts[3] = {url, o->etag, sz};
	for (int i = 0; i < 3; i++) {
		a = fnv(a, parts[i], strlen(parts[i]) + 1);
		b = fnv(b, parts[i], strlen(parts[i]) + 1);
		b = fnv(b, &a, sizeof a);
	}
	snprintf(o->key, sizeof o->key, "%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

/* The chunk's cache file, relative to the cache folder (wf_cache.h). */
static void chunk_rel(const struct wf_robj *o, uint64_t c, char *out, size_t cap)
{
	snprintf(out, cap, "%s/%llu-%llu", o->key, (unsigned long long)o->chunk, (unsigned long long)c);
}

/* Chunk c seen in the cache folder: counted once (wf_robj_whole). */
static bool mark_cached(struct wf_robj *o, uint64_t c)
{
	if (o->incache && c < o->n_ck && o->chunk == wf_remote_conf.chunk) {
		uint8_t bit = (uint8_t)(1u << (c % 8));
		if (!(__atomic_fetch_or(&o->incache[c / 8], bit, __ATOMIC_RELAXED) & bit))
			atomic_fetch_add(&o->n_incache, 1);
	}
	return true;
}

static bool cache_get(struct wf_robj *o, uint64_t c, uint8_t *buf)
{
	char rel[128];
	if (!wf_remote_conf.cache)
		return false;
	chunk_rel(o, c, rel, sizeof rel);
	return wf_cache_get(wf_remote_conf.cache, rel, buf, chunk_len(o, c)) && mark_cached(o, c);
}

static bool cache_put(struct wf_robj *o, uint64_t c, const uint8_t *buf)
{
	char rel[128];
	if (!wf_remote_conf.cache)
		return false;
	chunk_rel(o, c, rel, sizeof rel);
	return wf_cache_put(wf_remote_conf.cache, rel, buf, chunk_len(o, c), wf_remote_conf.cache_size) &&
	       mark_cached(o, c);
}

bool wf_robj_whole(const struct wf_robj *o)
{
	return o->incache && o->n_ck && atomic_load(&o->n_incache) == o->n_ck;
}

/* ---- the fetch threads ---- */

static void fail_notice(struct wf_robj *o, bool changed, const char *why)
{
	if (changed) {
		snprintf(o->why, sizeof o->why, "%s", why);
		if (!atomic_exchange(&o->changed, true))
			fprintf(stderr, "weightfs: %s: %s; its reads fail with EIO\n", o->url, why);
	} else if (!o->failing) {
		o->failing = true;
		fprintf(stderr, "weightfs: %s: %s; reads fail with EIO %s\n", o->url, why,
			wf_remote_conf.offline ? "where the cache lacks their bytes" : "until it answers again");
	}
}

/* One chunk's ranged GET, checked: *changed when the answer is of
 * another version of the object. */
static bool fetch(struct worker *w, struct wf_robj *o, uint64_t c, bool *changed, char *why)
{
	uint64_t off = c * o->chunk, len = chunk_len(o, c);
	struct wf_http_req rq = {.url = o->url, .token = o->token, .sigv4 = o->sig, .if_match = o->etag,
				 .has_range = true, .off = off, .len = len, .out = w->buf, .cap = (size_t)len};
	struct wf_http_resp rs;
	*changed = false;
	enum wf_err rc = wf_http_do(w->curl, &rq, &rs, why);
	free(rs.body);
	if (rc != WF_OK)
		return false;
	atomic_fetch_add(&fetched, rs.body_len);
	if (rs.status == 412 || rs.status == 404 || rs.status == 410 || rs.status == 416) {
		*changed = true;
		wf_fail(why, WF_ERR_CHANGED, "%s on the server (HTTP %ld to a range of the version mounted)",
			rs.status == 412 ? "changed" : rs.status == 416 ? "shrank" : "is gone", rs.status);
		return false;
	}
	if (rs.status != 206) {
		wf_fail(why, WF_ERR_IO, "HTTP %ld to a range request", rs.status);
		return false;
	}
	if (rs.etag[0] && strcmp(rs.etag, o->etag) != 0) {
		*changed = true;
		wf_fail(why, WF_ERR_CHANGED, "changed on the server (ETag %s, mounted %s)", rs.etag, o->etag);
		return false;
	}
	if (!rs.has_cr || rs.cr_a != off || rs.cr_b != off + len - 1 || rs.cr_total != o->size) {
		wf_fail(why, WF_ERR_IO, "answered another range than bytes %llu-%llu/%llu",
			(unsigned long long)off, (unsigned long long)(off + len - 1), (unsigned long long)o->size);
		*changed = rs.has_cr && rs.cr_total != o->size;
		return false;
	}
	if (rs.body_len != len) {
		wf_fail(why, WF_ERR_IO, "sent %zu bytes of a %llu-byte range", rs.body_len, (unsigned long long)len);
		return false;
	}
	return true;
}

/* fetch, unless the mount is offline: then a chunk not in the cache fails
 * at once, never waits for a network that is not to be used */
static bool fetch_or_not(struct worker *w, struct wf_robj *o, uint64_t c, bool *changed, char *why)
{
	if (wf_remote_conf.offline) {
		*changed = false;
		wf_fail(why, WF_ERR_IO, "bytes %llu-%llu are not in the cache (-o offline)",
			(unsigned long long)(c * o->chunk), (unsigned long long)(c * o->chunk + chunk_len(o, c) - 1));
		return false;
	}
	return fetch(w, o, c, changed, why);
}

/* Under mu, which it drops while it works: a wf_remote_fill's chunk into
 * the cache, unless it is there already. */
static void fill_one(struct worker *w, struct job *j)
{
	struct fill *g = j->g;
	bool ok = false, net = false, changed = false;
	char why[WF_ERRLEN] = "";
	if (!g->failed) {
		pthread_mutex_unlock(&mu);
		ok = !atomic_load(&j->o->changed) && cache_get(j->o, j->c, w->buf);
		if (!ok && !atomic_load(&j->o->changed)) {
			net = ok = fetch_or_not(w, j->o, j->c, &changed, why);
			if (ok && !cache_put(j->o, j->c, w->buf)) {
				ok = false;
				snprintf(why, sizeof why, "cannot keep fetched bytes in the cache %s (full disk? a chunk "
					 "over 7/8 of cache_size?)", wf_remote_conf.cache);
			}
		} else if (!ok) {
			snprintf(why, sizeof why, "%s", j->o->why);
		}
		pthread_mutex_lock(&mu);
		if (changed) {
			snprintf(j->o->why, sizeof j->o->why, "%s", why);
			atomic_store(&j->o->changed, true);
		}
	}
	uint64_t len = chunk_len(j->o, j->c);
	if (ok) {
		g->st.done += len;
		g->st.fetched += net ? len : 0;
	} else if (!g->failed) {
		g->failed = true;
		snprintf(g->why, sizeof g->why, "%s: %s", j->o->url, why);
	}
	g->queued--;
	pthread_cond_signal(&g->cv);
}

static void *worker_loop(void *u)
{
	struct worker *w = u;
	char why[WF_ERRLEN];
	pthread_mutex_lock(&mu);
	for (;;) {
		while (!stopping && q_n == 0)
			pthread_cond_wait(&work, &mu);
		if (stopping)
			break;
		struct job j = queue[0];
		memmove(queue, queue + 1, --q_n * sizeof *queue);
		if (j.g) {
			fill_one(w, &j);
			continue;
		}
		j.o->st[j.c] = INFLIGHT;
		pthread_mutex_unlock(&mu);
		bool changed = false, cached = !atomic_load(&j.o->changed) && cache_get(j.o, j.c, w->buf);
		bool ok = cached || (!atomic_load(&j.o->changed) && fetch_or_not(w, j.o, j.c, &changed, why));
		if (ok && !cached)
			cache_put(j.o, j.c, w->buf);
		if (ok) {
			uint64_t len = chunk_len(j.o, j.c);
			memset(w->buf + len, 0, chunk_span(j.o, j.c) - len);
		}
		if (ok) {
			/* fetched ahead and no one waits: held until touched */
			pthread_mutex_lock(&mu);
			uint8_t *fresh = n_spare ? spare[--n_spare] : NULL;
			if (!fresh) {
				pthread_mutex_unlock(&mu);
				fresh = malloc(wf_remote_conf.chunk);
				pthread_mutex_lock(&mu);
			}
			if (fresh && !waited(j.o, j.c)) {
				hold(j.o, j.c, w->buf);
				w->buf = fresh;
				continue; /* with mu held, as the loop's top wants */
			}
			give_spare(fresh);
			pthread_mutex_unlock(&mu);
		}
		/* the copy outside the lock: the chunk is INFLIGHT, so no one else
		 * copies it or evicts it; a thread preempted while holding the
		 * lock stalled every fault behind it (waits of 270 ms seen under load) */
		if (ok && !place(j.o, j.c, w->buf)) {
			ok = false;
			snprintf(why, sizeof why, "cannot place fetched bytes: %s", strerror(errno));
		}
		pthread_mutex_lock(&mu);
		if (ok) {
			j.o->st[j.c] = PRESENT;
			j.o->failing = false;
			note_resident(j.o, j.c);
		} else {
			j.o->st[j.c] = ABSENT;
			if (!atomic_load(&j.o->changed))
				fail_notice(j.o, changed, why);
		}
		settle(j.o, j.c, ok);
	}
	pthread_mutex_unlock(&mu);
	return NULL;
}

/* ---- set-up ---- */

static int make_uffd(void)
{
	int fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK);
#ifdef UFFD_USER_MODE_ONLY
	if (fd < 0 && errno == EPERM)
		fd = (int)syscall(SYS_userfaultfd, O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);
#endif
	if (fd < 0)
		return -1;
	struct uffdio_api api = {.api = UFFD_API, .features = UFFD_FEATURE_THREAD_ID};
	if (ioctl(fd, UFFDIO_API, &api) != 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	return fd;
}

static enum wf_err reg(struct wf_robj *o, char *err)
{
	struct uffdio_register r = {.range = {.start = (uintptr_t)o->base, .len = o->maplen},
				    .mode = UFFDIO_REGISTER_MODE_MISSING};
	if (ioctl(uffd, UFFDIO_REGISTER, &r) != 0)
		return wf_fail(err, WF_ERR_IO, "userfaultfd register: %s", strerror(errno));
	return WF_OK;
}

/* Under mu: the threads, when none run. */
static enum wf_err start(char *err)
{
	if (running)
		return WF_OK;
	long ps = sysconf(_SC_PAGESIZE);
	page = ps > 0 ? (size_t)ps : 4096;
	if (uffd < 0 && (uffd = make_uffd()) < 0)
		return wf_fail(err, WF_ERR_IO, "userfaultfd: %s (remote sources need it: vm.unprivileged_userfaultfd=1 "
			       "or root)", strerror(errno));
	if (stop_pipe[0] < 0 && pipe2(stop_pipe, O_CLOEXEC) != 0)
		return wf_fail(err, WF_ERR_IO, "pipe: %s", strerror(errno));
	unsigned n = wf_remote_conf.streams < 1 ? 1 : wf_remote_conf.streams > 64 ? 64 : wf_remote_conf.streams;
	if (!workers && !(workers = calloc(n, sizeof *workers)))
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	stopping = false;
	for (unsigned i = 0; i < n; i++) {
		struct worker *w = &workers[i];
		if (!w->curl && !wf_remote_conf.offline)
			w->curl = wf_http_new();
		if (!w->buf)
			w->buf = malloc(wf_remote_conf.chunk);
		if ((!w->curl && !wf_remote_conf.offline) || !w->buf)
			return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	/* the threads must not take the SIGBUS meant for readers, nor FUSE's signals */
	sigset_t all, old;
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	int e = pthread_create(&fault_thr, NULL, fault_loop, NULL);
	for (unsigned i = 0; e == 0 && i < n; i++, n_workers = i)
		e = pthread_create(&workers[i].thr, NULL, worker_loop, &workers[i]);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	running = true;
	if (e != 0)
		return wf_fail(err, WF_ERR_IO, "cannot start a fetch thread: %s", strerror(e));
	return WF_OK;
}

/* Why a probe was refused, in the Hub's words where it gave its code
 * (docs/remote.md 1.4). */
static enum wf_err refusal(const struct wf_http_resp *rs, char *err)
{
	const char *code = rs->error_code;
	if (strcmp(code, "GatedRepo") == 0)
		return wf_fail(err, WF_ERR_IO, "the repository is gated: %s",
			       rs->status == 401 ? "log in (HF_TOKEN or the token file) with an account granted access"
						 : "this token's account is not granted access yet");
	if (strcmp(code, "RepoNotFound") == 0)
		return wf_fail(err, WF_ERR_IO, "no such repository (or it is private and the token has no access)");
	if (rs->status == 404 || rs->status == 410)
		return wf_fail(err, WF_ERR_IO, "no such file on the server (HTTP %ld%s%s)", rs->status,
			       code[0] ? " " : "", code);
	if (rs->status == 401 || rs->status == 403)
		return wf_fail(err, WF_ERR_IO, "access refused (HTTP %ld%s%s)", rs->status,
			       rs->error_msg[0] ? ": " : "", rs->error_msg);
	if (rs->status == 200)
		return wf_fail(err, WF_ERR_IO, "the server does not answer Range requests (HTTP 200)");
	return wf_fail(err, WF_ERR_IO, "HTTP %ld%s%s", rs->status, code[0] ? " " : "", code);
}

static enum wf_err pin_obj(struct wf_robj **out, const char *open_url, const char *url, const char *etag,
			   uint64_t size, const char *token, const struct wf_http_sigv4 *sig, char *err);

/* The pin hint: an object's ETag and size when it was last pinned, kept in
 * the cache (pins/NAME, NAME from the URL asked), so that the next open
 * knows whether the cache holds the first chunk before the server answers:
 * the probe then asks for one byte, not the chunk again. */
struct pin_hint {
	char etag[sizeof ((struct wf_http_resp *)0)->etag];
	uint64_t size;
};

static void hint_rel(const char *open_url, char *out, size_t cap)
{
	uint64_t a = fnv(0xcbf29ce484222325ull, open_url, strlen(open_url));
	uint64_t b = fnv(0x84222325cbf29ce4ull, open_url, strlen(open_url));
	snprintf(out, cap, "pins/%016llx%016llx", (unsigned long long)a, (unsigned long long)b);
}

static bool hint_get(const char *open_url, struct pin_hint *h)
{
	char rel[64];
	if (!wf_remote_conf.cache)
		return false;
	hint_rel(open_url, rel, sizeof rel);
	return wf_cache_get(wf_remote_conf.cache, rel, (uint8_t *)h, sizeof *h) && memchr(h->etag, 0, sizeof h->etag) &&
	       h->etag[0];
}

static void hint_put(const struct wf_robj *o)
{
	struct pin_hint h;
	char rel[64];
	if (!wf_remote_conf.cache || strlen(o->etag) >= sizeof h.etag)
		return;
	memset(&h, 0, sizeof h);
	memcpy(h.etag, o->etag, strlen(o->etag));
	h.size = o->size;
	hint_rel(o->asked, rel, sizeof rel);
	wf_cache_put(wf_remote_conf.cache, rel, (const uint8_t *)&h, sizeof h, wf_remote_conf.cache_size);
}

/* What the pinning probe asks for.  The whole first chunk (what a mount
 * parses first), so that pinning and the header cost one request, unless
 * the cache holds that chunk at the version last pinned (then `cached`
 * has it and one byte is asked) or the read-ahead budget is spent. */
struct probe {
	uint64_t ask;    /* bytes asked from 0: 1, or the first chunk's length */
	uint64_t held;   /* bytes counted in pre_bytes for it */
	uint8_t *cached; /* the first chunk from the cache (page-rounded), or NULL */
	struct pin_hint hint;
};

static uint64_t page_span(uint64_t len)
{
	long ps = sysconf(_SC_PAGESIZE);
	uint64_t pg = ps > 0 ? (uint64_t)ps : 4096;
	return (len + pg - 1) / pg * pg;
}

/* len more bytes of first chunks held, if that keeps them under cap. */
static bool hold_budget(uint64_t len, uint64_t cap)
{
	if (atomic_fetch_add(&pre_bytes, len) + len > cap) {
		atomic_fetch_sub(&pre_bytes, len);
		return false;
	}
	return true;
}

static void probe_plan(const char *url, int64_t want_size, struct probe *p)
{
	memset(p, 0, sizeof *p);
	p->ask = 1;
	uint64_t len = want_size >= 0 && (uint64_t)want_size < wf_remote_conf.chunk ? (uint64_t)want_size
										     : wf_remote_conf.chunk;
	if (want_size == 0 || wf_remote_conf.offline)
		return;
	if (!hold_budget(len, wf_remote_conf.mem)) {
		/* first chunks of many large files past remote_mem: a head of each
		 * (most headers fit), so that the parse does not wait a round trip
		 * per file, one file after another */
		len = len < HEAD_ASK ? len : HEAD_ASK;
		if (!hold_budget(len, wf_remote_conf.mem + wf_remote_conf.mem / 4))
			return;
		p->held = p->ask = len;
		return;
	}
	p->held = len;
	if (hint_get(url, &p->hint) && (want_size < 0 || p->hint.size == (uint64_t)want_size)) {
		struct wf_robj t = {.etag = p->hint.etag, .size = p->hint.size, .chunk = wf_remote_conf.chunk};
		uint64_t n = chunk_len(&t, 0), span = page_span(n);
		cache_key(&t, url);
		if (n && (p->cached = malloc(span)) && cache_get(&t, 0, p->cached)) {
			memset(p->cached + n, 0, span - n);
			if (n != p->held) {
				atomic_fetch_sub(&pre_bytes, p->held);
				atomic_fetch_add(&pre_bytes, n);
				p->held = n;
			}
			return;
		}
		free(p->cached);
		p->cached = NULL;
	}
	p->ask = len;
}

/* The probe's first chunk kept as o->pre (placed on the first touch), and
 * put in the cache with the hint; else its budget given back. */
static void probe_keep(struct probe *p, struct wf_robj *o, const struct wf_http_resp *rs)
{
	o->chunk = wf_remote_conf.chunk; /* what chunk_len and the cache's names need */
	uint64_t n = chunk_len(o, 0);
	if (p->cached && strcmp(p->hint.etag, o->etag) == 0 && p->hint.size == o->size && p->held == n) {
		o->pre = p->cached, o->pre_len = n;
		mark_cached(o, 0);
		return;
	}
	free(p->cached);
	uint64_t got = rs->body_len; /* the first chunk, or a head of it (probe_plan) */
	if (p->ask > 1 && got && got <= n && p->held >= got) {
		uint64_t span = page_span(got);
		if ((o->pre = malloc(span))) {
			memcpy(o->pre, rs->body, got);
			memset(o->pre + got, 0, span - got);
			o->pre_len = got;
			atomic_fetch_sub(&pre_bytes, p->held - got);
			if (got == n && cache_put(o, 0, o->pre))
				hint_put(o);
			return;
		}
	}
	atomic_fetch_sub(&pre_bytes, p->held);
}

/* The probe's answer judged: a range from 0 of the asked length (less at
 * the object's end), of the size listed, with an ETag to pin. */
static enum wf_err probe_check(const struct wf_http_resp *rs, const struct probe *p, int64_t want_size, char *err)
{
	bool empty = rs->status == 416 && want_size == 0;
	if (!empty && rs->status != 206)
		return refusal(rs, err);
	uint64_t size = empty ? 0 : rs->cr_total, end = size < p->ask ? size : p->ask;
	if (!empty && (!rs->has_cr || rs->cr_a != 0 || end == 0 || rs->cr_b != end - 1 || rs->body_len != end))
		return wf_fail(err, WF_ERR_IO, "answered a range request with another range");
	if (!rs->etag[0])
		return wf_fail(err, WF_ERR_IO, "no ETag: the version read could not be pinned");
	if (want_size >= 0 && size != (uint64_t)want_size)
		return wf_fail(err, WF_ERR_IO, "is %llu bytes, the listing said %lld", (unsigned long long)size,
			       (long long)want_size);
	return WF_OK;
}

static enum wf_err open_obj(struct wf_robj **out, const char *url, const struct wf_robj_how *how, char *err)
{
	*out = NULL;
	struct probe pb;
	probe_plan(url, how->want_size, &pb);
	/* the body into a buffer: a refusal's page is longer than one byte;
	 * a signed request is never redirected (the signature names the region) */
	struct wf_http_req rq = {.url = url, .token = how->token, .sigv4 = how->sig, .has_range = true, .off = 0,
				 .len = pb.ask, .follow = !how->sig,
				 .cap = pb.ask > (1u << 16) ? (size_t)pb.ask : 1u << 16};
	struct wf_http_resp rs;
	enum wf_err rc = wf_http_do(how->curl, &rq, &rs, err);
	if (rc != WF_OK) {
		free(pb.cached);
		atomic_fetch_sub(&pre_bytes, pb.held);
		return rc;
	}
	rc = probe_check(&rs, &pb, how->want_size, err);
	char h0[256], h1[256];
	wf_http_host(url, h0, sizeof h0);
	wf_http_host(rs.url[0] ? rs.url : url, h1, sizeof h1);
	/* a pre-signed URL elsewhere gets no token (huggingface_hub does the same) */
	if (rc == WF_OK)
		rc = pin_obj(out, url, rs.url[0] ? rs.url : url, rs.etag, rs.status == 416 ? 0 : rs.cr_total,
			     strcmp(h0, h1) == 0 ? how->token : NULL, how->sig, err);
	if (rc == WF_OK)
		probe_keep(&pb, *out, &rs);
	else {
		free(pb.cached);
		atomic_fetch_sub(&pre_bytes, pb.held);
	}
	free(rs.body);
	return rc;
}

static enum wf_err pin_obj(struct wf_robj **out, const char *open_url, const char *url, const char *etag,
			   uint64_t size, const char *token, const struct wf_http_sigv4 *sig, char *err)
{
	*out = NULL;
	struct wf_robj *o = calloc(1, sizeof *o);
	if (!o)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	o->url = strdup(url);
	o->etag = strdup(etag);
	o->asked = strdup(open_url);
	o->token = token ? strdup(token) : NULL;
	o->size = size;
	o->n_ck = (size + wf_remote_conf.chunk - 1) / wf_remote_conf.chunk;
	o->incache = wf_remote_conf.cache && o->n_ck ? calloc((size_t)((o->n_ck + 7) / 8), 1) : NULL;
	atomic_init(&o->n_incache, 0);
	if (sig && (o->sig = malloc(sizeof *o->sig)))
		*o->sig = *sig;
	atomic_init(&o->changed, false);
	if (!o->url || !o->etag || !o->asked || (wf_remote_conf.cache && o->n_ck && !o->incache) ||
	    (token && !o->token) || (sig && !o->sig)) {
		free(o->url), free(o->etag), free(o->token), free(o->sig), free(o->asked), free(o->incache), free(o);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	cache_key(o, open_url);
	pthread_mutex_lock(&mu);
	o->next = objs;
	objs = o;
	pthread_mutex_unlock(&mu);
	*out = o;
	return WF_OK;
}

enum wf_err wf_robj_open(struct wf_robj **out, const char *url, const struct wf_robj_how *how, char *err)
{
	return open_obj(out, url, how, err);
}

enum wf_err wf_robj_pinned(struct wf_robj **out, const char *open_url, const char *url, const char *etag,
			   uint64_t size, const char *token, char *err)
{
	return pin_obj(out, open_url, url, etag, size, token, NULL, err);
}

void wf_robj_prefetch_head(struct wf_robj *o, void *curl)
{
	uint64_t len = o->size < wf_remote_conf.chunk ? o->size : wf_remote_conf.chunk;
	if (len == 0 || o->base || o->pre || !hold_budget(len, wf_remote_conf.mem))
		return; /* over the budget: the parse's first touch fetches it */
	/* the chunk's pages only: a small shard's header must not cost a whole
	 * chunk of fresh memory (first touches are what a mount of many
	 * shards spent its time on, perf) */
	uint64_t span = page_span(len);
	struct worker w = {.curl = curl ? curl : wf_http_new(), .buf = malloc(span)};
	o->chunk = wf_remote_conf.chunk; /* what chunk_len and the cache's names need */
	bool changed = false, ok = w.curl && w.buf;
	char why[WF_ERRLEN];
	bool cached = ok && cache_get(o, 0, w.buf);
	ok = ok && (cached || fetch_or_not(&w, o, 0, &changed, why));
	if (ok && !cached && cache_put(o, 0, w.buf))
		hint_put(o);
	if (!curl)
		wf_http_free(w.curl);
	if (!ok) {
		free(w.buf); /* the parse's first touch tries again, and says why */
		atomic_fetch_sub(&pre_bytes, len);
		return;
	}
	memset(w.buf + len, 0, span - len);
	o->pre = w.buf;
	o->pre_len = len;
}

const char *wf_robj_etag(const struct wf_robj *o)
{
	return o->etag;
}

static int by_chunk(const void *a, const void *b)
{
	const struct job *x = a, *y = b;
	if (x->o != y->o)
		return (uintptr_t)x->o < (uintptr_t)y->o ? -1 : 1;
	return x->c < y->c ? -1 : x->c > y->c;
}

/* The chunks covering r[0..n), each once, in order; *total their bytes. */
static struct job *fill_jobs(const struct wf_fill_range *r, size_t n, size_t *n_jobs, uint64_t *total)
{
	size_t cap = 0, k = 0;
	struct job *v = NULL;
	*total = 0;
	for (size_t i = 0; i < n; i++) {
		struct wf_robj *o = r[i].o;
		if (!o->chunk)
			o->chunk = wf_remote_conf.chunk; /* as wf_robj_data will set it */
		if (!r[i].len || r[i].off >= o->size)
			continue;
		uint64_t end = r[i].len > o->size - r[i].off ? o->size : r[i].off + r[i].len;
		for (uint64_t c = r[i].off / o->chunk; c * o->chunk < end; c++) {
			if (k == cap) {
				size_t nc = cap ? cap * 2 : 256;
				struct job *nv = realloc(v, nc * sizeof *nv);
				if (!nv) {
					free(v);
					return NULL;
				}
				v = nv, cap = nc;
			}
			v[k++] = (struct job){o, c, NULL};
		}
	}
	if (k)
		qsort(v, k, sizeof *v, by_chunk);
	size_t u = 0;
	for (size_t i = 0; i < k; i++)
		if (u == 0 || v[i].o != v[u - 1].o || v[i].c != v[u - 1].c) {
			v[u++] = v[i];
			*total += chunk_len(v[i].o, v[i].c);
		}
	*n_jobs = u;
	return v ? v : malloc(1);
}

/* Under mu: the queue given the fill's next jobs, a few per stream. */
static bool fill_feed(struct fill *g, const struct job *v, size_t n, size_t *next)
{
	while (!g->failed && *next < n && g->queued < 2 * n_workers) {
		if (q_n == q_cap) {
			size_t c = q_cap ? q_cap * 2 : 64;
			struct job *q = realloc(queue, c * sizeof *q);
			if (!q)
				return false;
			queue = q, q_cap = c;
		}
		queue[q_n] = v[(*next)++];
		queue[q_n++].g = g;
		g->queued++;
		pthread_cond_signal(&work);
	}
	return true;
}

static void fill_progress(struct fill *g, wf_fill_fn fn, void *ctx)
{
	if (!fn)
		return;
	struct wf_fill snap = g->st;
	pthread_mutex_unlock(&mu);
	fn(ctx, &snap);
	pthread_mutex_lock(&mu);
}

enum wf_err wf_remote_fill(const struct wf_fill_range *r, size_t n, wf_fill_fn fn, void *ctx, char *err)
{
	if (!wf_remote_conf.cache)
		return wf_fail(err, WF_ERR_IO, "no cache folder to fill (-o cache=none?)");
	struct fill g = {.cv = PTHREAD_COND_INITIALIZER};
	size_t n_jobs = 0, next = 0;
	struct job *v = fill_jobs(r, n, &n_jobs, &g.st.total);
	if (!v)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	g.st.chunks = n_jobs;
	pthread_mutex_lock(&mu);
	enum wf_err rc = start(err);
	bool fed = rc == WF_OK;
	while (rc == WF_OK && (g.queued || (fed && !g.failed && next < n_jobs))) {
		fed = fed && fill_feed(&g, v, n_jobs, &next);
		if (!g.queued)
			break;
		struct timespec t;
		clock_gettime(CLOCK_REALTIME, &t);
		t.tv_nsec += 200 * 1000000L;
		if (t.tv_nsec >= 1000000000L)
			t.tv_sec++, t.tv_nsec -= 1000000000L;
		pthread_cond_timedwait(&g.cv, &mu, &t);
		fill_progress(&g, fn, ctx);
	}
	fill_progress(&g, fn, ctx);
	pthread_mutex_unlock(&mu);
	pthread_cond_destroy(&g.cv);
	free(v);
	if (rc != WF_OK)
		return rc;
	if (g.failed)
		return wf_fail(err, WF_ERR_IO, "%s", g.why);
	if (!fed)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	return WF_OK;
}

bool wf_robj_cached(struct wf_robj *o, uint64_t off, uint8_t *dst, size_t len)
{
	if (!o->chunk)
		o->chunk = wf_remote_conf.chunk;
	if (off > o->size || len > o->size - off)
		return false;
	uint8_t *buf = malloc(o->chunk);
	bool ok = buf != NULL;
	for (uint64_t at = off; ok && at < off + len;) {
		uint64_t c = at / o->chunk, in = at - c * o->chunk, take = chunk_len(o, c) - in;
		if (take > off + len - at)
			take = off + len - at;
		ok = cache_get(o, c, buf);
		if (ok)
			memcpy(dst + (at - off), buf + in, take);
		at += take;
	}
	free(buf);
	return ok;
}

const uint8_t *wf_robj_data(struct wf_robj *o, char *err)
{
	static const uint8_t empty[1];
	if (o->size == 0)
		return empty;
	pthread_mutex_lock(&mu);
	if (o->base) {
		pthread_mutex_unlock(&mu);
		return o->base;
	}
	enum wf_err rc = start(err);
	if (rc != WF_OK) {
		pthread_mutex_unlock(&mu);
		return NULL;
	}
	o->chunk = wf_remote_conf.chunk;
	o->n_chunks = (o->size + o->chunk - 1) / o->chunk;
	o->maplen = (size_t)((o->size + page - 1) / page * page);
	o->st = calloc(o->n_chunks, 1);
	if (o->pre && (!o->st || o->pre_len > chunk_len(o, 0))) {
		/* fetched at a larger chunk size: not this mapping's first chunk */
		atomic_fetch_sub(&pre_bytes, o->pre_len);
		free(o->pre);
		o->pre = NULL, o->pre_len = 0;
	}
	if (o->pre)
		o->st[0] = STAGED; /* the probe's first chunk: placed on the header's first touch */
	void *m = o->st ? mmap(NULL, o->maplen, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0)
			: MAP_FAILED;
	if (m == MAP_FAILED) {
		free(o->st);
		o->st = NULL;
		pthread_mutex_unlock(&mu);
		wf_fail(err, WF_ERR_NOMEM, "cannot map %llu bytes", (unsigned long long)o->size);
		return NULL;
	}
	o->base = m;
	if (reg(o, err) != WF_OK) {
		munmap(m, o->maplen);
		o->base = NULL;
		pthread_mutex_unlock(&mu);
		return NULL;
	}
	pthread_mutex_unlock(&mu);
	return o->base;
}

enum wf_err wf_remote_after_fork(char *err)
{
	if (!objs)
		return WF_OK;
	/* alone now: the parent's threads are gone, whatever they held */
	pthread_mutex_t m0 = PTHREAD_MUTEX_INITIALIZER;
	pthread_cond_t c0 = PTHREAD_COND_INITIALIZER;
	memcpy(&mu, &m0, sizeof mu);
	memcpy(&work, &c0, sizeof work);
	running = false;
	n_workers = 0;
	q_n = w_n = 0;
	if (uffd >= 0)
		close(uffd);
	uffd = make_uffd();
	if (uffd < 0)
		return wf_fail(err, WF_ERR_IO, "userfaultfd: %s", strerror(errno));
	for (struct wf_robj *o = objs; o; o = o->next) {
		if (!o->base)
			continue;
		/* a chunk the parent was copying in may be here in part: dropped */
		for (uint64_t c = 0; c < o->n_chunks; c++)
			if (o->st[c] != PRESENT) {
				o->st[c] = ABSENT;
				madvise(o->base + c * o->chunk, chunk_span(o, c), MADV_DONTNEED);
			}
		if (reg(o, err) != WF_OK)
			return WF_ERR_IO;
	}
	for (unsigned i = 0; workers && i < wf_remote_conf.streams && i < 64; i++) {
		wf_http_free(workers[i].curl); /* the parent's connections: closed here */
		workers[i].curl = NULL;
	}
	pthread_mutex_lock(&mu);
	enum wf_err rc = start(err);
	pthread_mutex_unlock(&mu);
	return rc;
}

void wf_remote_shutdown(void)
{
	pthread_mutex_lock(&mu);
	bool was = running;
	stopping = true;
	pthread_cond_broadcast(&work);
	pthread_mutex_unlock(&mu);
	if (was) {
		if (write(stop_pipe[1], "x", 1) < 0) {
		}
		pthread_join(fault_thr, NULL);
		for (unsigned i = 0; i < n_workers; i++)
			pthread_join(workers[i].thr, NULL);
	}
	for (unsigned i = 0; workers && i < n_workers; i++) {
		wf_http_free(workers[i].curl);
		free(workers[i].buf);
	}
	free(workers);
	workers = NULL;
	n_workers = 0;
	running = false;
	while (objs) {
		struct wf_robj *o = objs;
		objs = o->next;
		if (o->base)
			munmap(o->base, o->maplen);
		free(o->pre);
		free(o->st), free(o->url), free(o->etag), free(o->token), free(o->sig), free(o->asked), free(o->incache), free(o);
	}
	free(queue), free(waiters), free(resident);
	queue = NULL, waiters = NULL, resident = NULL;
	q_n = q_cap = w_n = w_cap = r_n = r_cap = r_head = 0;
	while (s_n)
		free(staged[(s_head + --s_n) % HELD_MAX].buf);
	s_head = 0;
	while (n_spare)
		free(spare[--n_spare]);
	if (uffd >= 0)
		close(uffd);
	uffd = -1;
	for (int i = 0; i < 2; i++)
		if (stop_pipe[i] >= 0)
			close(stop_pipe[i]), stop_pipe[i] = -1;
}
