/* wf_prefetch.c - the in-order reader for network storage
 * (wf_prefetch.h). */
#include "view/wf_prefetch.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <unistd.h>

#include "codec/wf_types.h"
#include "view/wf_view.h"

/* One pread: the lower mount's usual read-ahead window, so each is one
 * request there. */
#define STEP ((size_t)128 << 10)

/* Filesystem magics (statfs f_type) where a read is a network round trip. */
static const long remote_fs[] = {
	0x65735546,          /* FUSE: rclone, sshfs, s3fs, gcsfuse, ... */
	0x6969,              /* NFS */
	0x517B,              /* SMB */
	(long)0xFF534D42,    /* CIFS */
	(long)0xFE534D42,    /* SMB2 */
	0x00C36400,          /* Ceph */
	0x01021997,          /* 9p */
	0x5346414F,          /* AFS */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t moved = PTHREAD_COND_INITIALIZER;
static int mode = -2; /* -2: not read from the environment yet */
/* Bumped by wf_prefetch_set: a thread's cached "this descriptor is local"
 * holds only for the mode it was made under. */
static atomic_uint mode_gen;
/* The last descriptor this thread found on local storage, and mode_gen
 * then: every local read would otherwise take the lock and an fstat.  A
 * descriptor number reused for another file only turns read-ahead on or
 * off for a while: it never changes what a read returns. */
static __thread int local_fd = -1;
static __thread unsigned local_gen;
/* One stream per sequential reader: bytes [start, end) of fd; its thread
 * has asked for them up to pos and has them up to done.  gen changes
 * whenever the stream is replaced or given up. */
struct stream {
	int fd;
	uint64_t start, pos, done, end;
	unsigned gen;
	uint64_t used;        /* when a read last touched it (a counter) */
	bool started, busy;
	pthread_cond_t wake;
};
static struct stream streams[WF_PREFETCH_STREAMS];
static uint64_t clock_now;
/* devices already classified: st_dev and whether it is remote */
static struct { dev_t dev; bool remote, used; } seen[8];
static unsigned seen_next;

bool wf_prefetch_env_off(void)
{
	const char *e = getenv("WEIGHTFS_NO_READAHEAD");
	return e && *e && strcmp(e, "0") != 0;
}

void wf_prefetch_set(int m)
{
	pthread_mutex_lock(&mu);
	mode = m;
	atomic_fetch_add(&mode_gen, 1);
	for (unsigned i = 0; i < WF_PREFETCH_STREAMS; i++) {
		/* forgotten: a later file may get the same descriptor number */
		struct stream *s = &streams[i];
		s->fd = -1;
		s->start = s->pos = s->done = s->end = 0;
		s->gen++;
	}
	pthread_cond_broadcast(&moved);
	pthread_mutex_unlock(&mu);
}

/* Under mu.  One fstatfs per device, then the table. */
static bool is_remote(int fd)
{
	struct stat st;
	struct statfs sf;
	if (fstat(fd, &st) != 0)
		return false;
	for (unsigned i = 0; i < sizeof seen / sizeof seen[0]; i++)
		if (seen[i].used && seen[i].dev == st.st_dev)
			return seen[i].remote;
	bool r = false;
	if (fstatfs(fd, &sf) == 0)
		for (size_t i = 0; i < sizeof remote_fs / sizeof remote_fs[0]; i++)
			r = r || (long)sf.f_type == remote_fs[i];
	unsigned k = seen_next++ % (sizeof seen / sizeof seen[0]);
	seen[k].dev = st.st_dev;
	seen[k].remote = r;
	seen[k].used = true;
	return r;
}

struct reader_arg {
	struct stream *s;
	char *buf;
};

static void *reader(void *arg)
{
	struct reader_arg ra = *(struct reader_arg *)arg;
	struct stream *s = ra.s;
	free(arg);
	pthread_mutex_lock(&mu);
	for (;;) {
		while (s->pos >= s->end) {
			s->busy = false;
			pthread_cond_broadcast(&moved);
			pthread_cond_wait(&s->wake, &mu);
		}
		s->busy = true;
		int fd = s->fd;
		unsigned g = s->gen;
		uint64_t pos = s->pos;
		size_t n = s->end - pos < STEP ? (size_t)(s->end - pos) : STEP;
		s->pos = pos + n;
		pthread_mutex_unlock(&mu);
		/* the bytes only pass through: what counts is the page cache */
		ssize_t k = pread(fd, ra.buf, n, (off_t)pos);
		pthread_mutex_lock(&mu);
		if (g == s->gen) {
			if (k > 0) {
				s->done = pos + n;
			} else {
				/* EOF or an error: give the stream up; waiting
				 * readers fault the bytes in themselves */
				s->pos = s->end = s->done;
				s->gen++;
			}
		}
		pthread_cond_broadcast(&moved);
	}
	return NULL;
}

/* fork() copies no thread: a child that inherited started == true would
 * wait for a reader that does not exist.  mu is held across the fork so
 * the child gets the state whole, then starts over. */
static void before_fork(void)
{
	pthread_mutex_lock(&mu);
}

static void after_fork_parent(void)
{
	pthread_mutex_unlock(&mu);
}

static void after_fork_child(void)
{
	for (unsigned i = 0; i < WF_PREFETCH_STREAMS; i++) {
		struct stream *s = &streams[i];
		s->started = s->busy = false;
		s->fd = -1;
		s->start = s->pos = s->done = s->end = 0;
		s->gen++;
		pthread_cond_init(&s->wake, NULL);
	}
	pthread_cond_init(&moved, NULL);
	pthread_mutex_unlock(&mu);
}

/* Under mu: s's thread, once; false when it cannot run. */
static bool start(struct stream *s)
{
	static bool fork_handled;

	if (s->started)
		return true;
	if (!fork_handled && pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0)
		return false;
	fork_handled = true;
	struct reader_arg *ra = malloc(sizeof *ra);
	char *buf = malloc(STEP);
	pthread_t th;
	pthread_attr_t at;
	if (!ra || !buf || pthread_attr_init(&at) != 0) {
		free(ra);
		free(buf);
		return false;
	}
	*ra = (struct reader_arg){.s = s, .buf = buf};
	pthread_cond_init(&s->wake, NULL);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	s->started = pthread_create(&th, &at, reader, ra) == 0;
	pthread_attr_destroy(&at);
	if (!s->started) {
		free(ra);
		free(buf);
	}
	return s->started;
}

/* Under mu: the stream source byte a of fd continues (from up to a
 * window behind its start, for reads the kernel sent together and that
 * arrived out of order, to its end), else the one used longest ago, which
 * is given over to a. */
static struct stream *pick(int fd, uint64_t a, bool *fresh)
{
	struct stream *old = &streams[0];
	for (unsigned i = 0; i < WF_PREFETCH_STREAMS; i++) {
		struct stream *s = &streams[i];
		uint64_t lo = s->start > WF_PREFETCH_WINDOW ? s->start - WF_PREFETCH_WINDOW : 0;
		if (s->fd == fd && s->end > s->start && a >= lo && a <= s->end) {
			*fresh = false;
			return s;
		}
		if (s->used < old->used)
			old = s;
	}
	*fresh = true;
	return old;
}

void wf_prefetch_read(const struct wf_tensor *t, int fd, uint64_t off, size_t len)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t first, count, next, ncount;

	if (!ty || fd < 0 || len < WF_PREFETCH_MIN_READ || off >= t->size)
		return;
	unsigned gen = atomic_load_explicit(&mode_gen, memory_order_relaxed);
	if (fd == local_fd && gen == local_gen)
		return;
	/* wf_view_span clips the blocks to the view; block counts times block
	 * bytes stay within t->nbytes, which the model's checks bound */
	const uint64_t k = 1 + WF_PREFETCH_AHEAD;
	uint64_t ahead = (uint64_t)len <= UINT64_MAX / k ? (uint64_t)len * k : UINT64_MAX;
	wf_view_span(t, off, len, &first, &count);
	wf_view_span(t, off, ahead, &next, &ncount);
	uint64_t a = t->offset + first * ty->bytes, own = t->offset + (first + count) * ty->bytes;
	uint64_t b = t->offset + (next + ncount) * ty->bytes, end = t->offset + t->nbytes;
	/* at least a window of source bytes: a quantized view's next reads
	 * need few, which would leave the thread idle between requests */
	if (b - a < WF_PREFETCH_WINDOW)
		b = a + WF_PREFETCH_WINDOW;
	own = own < end ? own : end;
	b = b < end ? b : end;
	pthread_mutex_lock(&mu);
	if (mode == -2)
		mode = wf_prefetch_env_off() ? 0 : -1;
	bool remote = mode == 1 || (mode != 0 && is_remote(fd));
	if (!remote) {
		local_fd = fd;
		local_gen = gen;
	}
	if (remote) {
		bool fresh;
		struct stream *s = pick(fd, a, &fresh);
		if (start(s)) {
			if (!fresh) {
				/* the stream goes on: keep what was asked for */
				if (b > s->end)
					s->end = b;
			} else {
				s->fd = fd;
				s->start = s->pos = s->done = a;
				s->end = b;
				s->gen++;
			}
			s->used = ++clock_now;
			pthread_cond_signal(&s->wake);
			unsigned g = s->gen;
			while (g == s->gen && s->done < own && a >= s->start)
				pthread_cond_wait(&moved, &mu);
		}
	}
	pthread_mutex_unlock(&mu);
}

void wf_prefetch_drain(void)
{
	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < WF_PREFETCH_STREAMS; i++)
		while (streams[i].started && (streams[i].busy || streams[i].pos < streams[i].end))
			pthread_cond_wait(&moved, &mu);
	pthread_mutex_unlock(&mu);
}

unsigned wf_prefetch_streams(int fd, uint64_t a, uint64_t *end)
{
	unsigned n = 0;
	*end = 0;
	pthread_mutex_lock(&mu);
	for (unsigned i = 0; i < WF_PREFETCH_STREAMS; i++) {
		const struct stream *s = &streams[i];
		if (s->fd != fd || s->end <= s->start)
			continue;
		n++;
		if (a >= s->start && a < s->end)
			*end = s->end;
	}
	pthread_mutex_unlock(&mu);
	return n;
}
