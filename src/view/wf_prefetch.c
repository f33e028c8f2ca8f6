/* wf_prefetch.c - the in-order reader for network storage
 * (wf_prefetch.h). */
#include "view/wf_prefetch.h"

#include <pthread.h>
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
static pthread_cond_t wake = PTHREAD_COND_INITIALIZER, moved = PTHREAD_COND_INITIALIZER;
static int mode = -2; /* -2: not read from the environment yet */
static bool started, busy;
/* The stream: bytes [want_start, want_end) of want_fd; the thread has
 * asked for them up to want_pos and has them up to done_pos.  gen changes
 * whenever the stream is replaced or given up. */
static int want_fd = -1;
static uint64_t want_start, want_pos, done_pos, want_end;
static unsigned gen;
/* devices already classified: st_dev and whether it is remote */
static struct { dev_t dev; bool remote, used; } seen[8];
static unsigned seen_next;

void wf_prefetch_set(int m)
{
	pthread_mutex_lock(&mu);
	mode = m;
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

static void *reader(void *arg)
{
	char *buf = arg;
	pthread_mutex_lock(&mu);
	for (;;) {
		while (want_pos >= want_end) {
			busy = false;
			pthread_cond_broadcast(&moved);
			pthread_cond_wait(&wake, &mu);
		}
		busy = true;
		int fd = want_fd;
		unsigned g = gen;
		uint64_t pos = want_pos;
		size_t n = want_end - pos < STEP ? (size_t)(want_end - pos) : STEP;
		want_pos = pos + n;
		pthread_mutex_unlock(&mu);
		/* the bytes only pass through: what counts is the page cache */
		ssize_t k = pread(fd, buf, n, (off_t)pos);
		pthread_mutex_lock(&mu);
		if (g == gen) {
			if (k > 0) {
				done_pos = pos + n;
			} else {
				/* EOF or an error: give the stream up; waiting
				 * readers fault the bytes in themselves */
				want_pos = want_end = done_pos;
				gen++;
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
	started = busy = false;
	want_fd = -1;
	want_start = want_pos = done_pos = want_end = 0;
	gen++;
	pthread_cond_init(&wake, NULL);
	pthread_cond_init(&moved, NULL);
	pthread_mutex_unlock(&mu);
}

/* Under mu: the thread, once; false when it cannot run. */
static bool start(void)
{
	static bool fork_handled;

	if (started)
		return true;
	if (!fork_handled && pthread_atfork(before_fork, after_fork_parent, after_fork_child) != 0)
		return false;
	fork_handled = true;
	char *buf = malloc(STEP);
	pthread_t th;
	pthread_attr_t at;
	if (!buf || pthread_attr_init(&at) != 0) {
		free(buf);
		return false;
	}
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	started = pthread_create(&th, &at, reader, buf) == 0;
	pthread_attr_destroy(&at);
	if (!started)
		free(buf);
	return started;
}

void wf_prefetch_read(const struct wf_tensor *t, int fd, uint64_t off, size_t len)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t first, count, next, ncount;

	if (!ty || fd < 0 || len < WF_PREFETCH_MIN_READ || off >= t->size)
		return;
	/* wf_view_span clips the blocks to the view; block counts times block
	 * bytes stay within t->nbytes, which the model's checks bound */
	const uint64_t k = 1 + WF_PREFETCH_AHEAD;
	uint64_t ahead = (uint64_t)len <= UINT64_MAX / k ? (uint64_t)len * k : UINT64_MAX;
	wf_view_span(t, off, len, &first, &count);
	wf_view_span(t, off, ahead, &next, &ncount);
	uint64_t a = t->offset + first * ty->bytes, own = t->offset + (first + count) * ty->bytes;
	uint64_t b = t->offset + (next + ncount) * ty->bytes, end = t->offset + t->nbytes;
	own = own < end ? own : end;
	b = b < end ? b : end;
	pthread_mutex_lock(&mu);
	if (mode == -2) {
		const char *e = getenv("WEIGHTFS_NO_READAHEAD");
		mode = e && *e && strcmp(e, "0") != 0 ? 0 : -1;
	}
	if (mode != 0 && (mode == 1 || is_remote(fd)) && start()) {
		if (fd == want_fd && a >= want_start && a <= want_end) {
			/* the stream goes on: keep what was asked for */
			if (b > want_end)
				want_end = b;
		} else {
			want_fd = fd;
			want_start = want_pos = done_pos = a;
			want_end = b;
			gen++;
		}
		pthread_cond_signal(&wake);
		unsigned g = gen;
		while (g == gen && done_pos < own)
			pthread_cond_wait(&moved, &mu);
	}
	pthread_mutex_unlock(&mu);
}

void wf_prefetch_drain(void)
{
	pthread_mutex_lock(&mu);
	while (started && (busy || want_pos < want_end))
		pthread_cond_wait(&moved, &mu);
	pthread_mutex_unlock(&mu);
}
