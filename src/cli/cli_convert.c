/* cli_convert.c - weightfs convert: the mount's model.safetensors written to
 * a file, by a worker per core, through a temporary file renamed into
 * place only when whole. */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "cli/cli_out.h"
#include "cli/cli_span.h"

#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* A signal that asks convert to stop: workers finish their piece and quit. */
static atomic_int stop_sig;

static void on_stop(int sig)
{
	atomic_store(&stop_sig, sig);
}

struct conv {
	struct cli_session *s;
	uint32_t node;
	uint64_t size;
	int fd;
	struct cli_span_out out;      /* where the workers write */
	const char *model, *tmp;
	atomic_uint_fast64_t next;    /* the next piece to take */
	atomic_uint_fast64_t done;    /* bytes written */
	atomic_int running;           /* workers not yet finished */
	atomic_bool failed;
	pthread_mutex_t lock;         /* guards the first failure below */
	enum wf_err rc;               /* a read failed with this, */
	uint64_t off, len;            /* of the piece [off, off+len), */
	int write_errno;              /* or a write with this */
};

static void conv_fail(struct conv *c, enum wf_err rc, int e, uint64_t off, uint64_t len)
{
	pthread_mutex_lock(&c->lock);
	if (!atomic_load(&c->failed)) {
		c->rc = rc;
		c->off = off;
		c->len = len;
		c->write_errno = e;
		atomic_store(&c->failed, true);
	}
	pthread_mutex_unlock(&c->lock);
}

/* Takes pieces in turn; cli_span_write decides how each is written. */
static void *conv_worker(void *arg)
{
	struct conv *c = arg;
	char *buf = cli_span_buf();
	if (!buf)
		conv_fail(c, WF_ERR_NOMEM, 0, 0, 0);
	while (buf && !atomic_load(&c->failed) && !atomic_load(&stop_sig)) {
		uint64_t off = (uint64_t)atomic_fetch_add(&c->next, 1) * CLI_PIECE;
		if (off >= c->size)
			break;
		size_t n = c->size - off < CLI_PIECE ? (size_t)(c->size - off) : CLI_PIECE;
		int werr = 0;
		enum wf_err rc = cli_span_write(&c->out, buf, off, n, &werr);
		if (rc != WF_OK) {
			conv_fail(c, rc, werr, off, n);
			break;
		}
		atomic_fetch_add(&c->done, n);
	}
	free(buf);
	atomic_fetch_sub(&c->running, 1);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void progress(uint64_t done, uint64_t size, double secs, bool end)
{
	double mb = done / 1e6, rate = secs > 0 ? mb / secs : 0;
	if (end) {
		fprintf(stderr, "\r%.1f MB in %.1f s, %.0f MB/s\033[K\n", mb, secs, rate);
		return;
	}
	double pct = size ? 100.0 * done / size : 100.0;
	fprintf(stderr, "\r%5.1f%%  %.1f of %.1f MB  %.0f MB/s", pct, mb, size / 1e6, rate);
	if (rate > 0) {
		unsigned long left = (unsigned long)((size - done) / 1e6 / rate + 0.5);
		fprintf(stderr, "  %lu:%02lu left", left / 60, left % 60);
	}
	fputs("\033[K", stderr);
}

/* Syncs the folder that holds path, so the rename survives a crash. */
static void sync_dir_of(const char *path)
{
	char *d = strdup(path);
	if (!d)
		return;
	int fd = open(dirname(d), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		fsync(fd); /* best effort: the data itself is already synced */
		close(fd);
	}
	free(d);
}

/* The checks before anything is made, so a refused run has nothing to
 * unwind; the lock comes last for the same reason. */
static int conv_init(struct conv *c, const struct cli_opts *o)
{
	const char *model = o->pos[0], *out = o->pos[1];
	struct stat st;
	if (!o->force && lstat(out, &st) == 0) {
		fprintf(stderr, "weightfs: %s: already exists; weightfs convert --force replaces it\n", cli_path(out));
		return EXIT_USAGE;
	}
	/* OUT.gguf is the mount's model.gguf, anything else its model.safetensors */
	size_t ol = strlen(out);
	bool gguf = ol >= 5 && strcmp(out + ol - 5, ".gguf") == 0;
	const struct wf_tree *t = c->s->mt.t;
	c->node = gguf ? wf_tree_lookup(t, 0, "model.gguf", 10) : wf_tree_lookup(t, 0, "model.safetensors", 17);
	if (gguf && (c->node == WF_NO_NODE || t->nodes[c->node].kind != WF_NODE_MODEL_GGUF)) {
		fprintf(stderr, "weightfs: %s: model.gguf: %s\n", cli_path(model),
			t->gguf_why ? t->gguf_why : "a GGUF model has one only with -o gguf=TYPE (retyped)");
		return EXIT_USAGE;
	}
	if (c->node == WF_NO_NODE || (t->nodes[c->node].kind != WF_NODE_MODEL_ST && !gguf)) {
		fprintf(stderr, "weightfs: %s: model.safetensors: missing\n", cli_path(model)); /* a bug */
		return EXIT_USAGE;
	}
	c->size = wf_files_size(c->s->mt.t, c->node);
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	if (pthread_mutex_init(&c->out.lock, NULL) != 0) {
		pthread_mutex_destroy(&c->lock);
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	c->out.s = c->s;
	c->out.node = c->node;
	atomic_init(&c->out.no_copy, cli_span_copy_off());
	return 0;
}

/* Handlers first: a signal between creating the temporary file and
 * removing it must not kill us with it still there. */
static void catch_stops(const int sigs[3], struct sigaction prev[3], sigset_t *stops)
{
	struct sigaction sa = {.sa_handler = on_stop};
	sigemptyset(stops);
	for (int i = 0; i < 3; i++)
		sigaddset(stops, sigs[i]);
	sigemptyset(&sa.sa_mask);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &sa, &prev[i]);
}

/* More workers than cores or than pieces would only wait on each other,
 * and since one writes at a time (cli_span.c), more than CONV_MAX_WORKERS
 * gain nothing either; that cap also holds their buffers (CLI_SPAN_BUF
 * each) to 32 MiB, within the 64 MiB the peak memory bound of
 * docs/security.md leaves besides the header's share. */
#define CONV_MAX_WORKERS 16

static long worker_count(uint64_t size)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t pieces = (size + CLI_PIECE - 1) / CLI_PIECE;
	long nth = cores < 1 ? 1 : cores > CONV_MAX_WORKERS ? CONV_MAX_WORKERS : cores;
	if ((uint64_t)nth > pieces)
		nth = pieces ? (long)pieces : 1;
	return nth;
}

/* Workers block the stop signals, so they reach this thread, whose sleep
 * they cut short; returns how many started. */
static long start_workers(struct conv *c, pthread_t *th, long nth, const sigset_t *stops)
{
	sigset_t old;
	pthread_sigmask(SIG_BLOCK, stops, &old);
	long started = 0;
	for (; started < nth; started++) {
		atomic_fetch_add(&c->running, 1);
		if (pthread_create(&th[started], NULL, conv_worker, c) != 0) {
			atomic_fetch_sub(&c->running, 1);
			break;
		}
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return started;
}

/* This thread only draws the bar while the workers copy, then joins them. */
static void wait_workers(struct conv *c, pthread_t *th, long nth, bool bar, double t0)
{
	double drawn = 0;
	while (atomic_load(&c->running) > 0) {
		nanosleep(&(struct timespec){0, 10 * 1000 * 1000}, NULL);
		double t = now_s();
		if (bar && t - drawn >= 0.1 && !atomic_load(&stop_sig)) {
			progress(atomic_load(&c->done), c->size, t - t0, false);
			drawn = t;
		}
	}
	for (long i = 0; i < nth; i++)
		pthread_join(th[i], NULL);
}

/* A worker's first failure decides the message and the exit code. */
static int conv_failure(const struct conv *c, const char *model, const char *out)
{
	if (c->rc == WF_ERR_IO) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(out), strerror(c->write_errno));
		return EXIT_USAGE;
	}
	if (c->rc == WF_ERR_NOMEM) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	const struct wf_tree *t = c->s->mt.t;
	return cli_read_failed(c->s, model, t->nodes[c->node].kind == WF_NODE_MODEL_GGUF ? "model.gguf" : "model.safetensors",
			       c->node, c->off, c->len, c->rc);
}

/* The output's mode: the model's permission bits (those all its files
 * share), as cp gives a copy; the umask applies on top. */
static mode_t model_mode(const struct wf_model *m)
{
	mode_t mode = 0777;
	for (uint32_t i = 0; i < m->n_parts; i++)
		mode &= m->parts[i].st.st_mode & 0777;
	return mode;
}

static int convert(struct cli_session *s, const struct cli_opts *o)
{
	const char *model = o->pos[0], *out = o->pos[1];
	struct conv c = {.s = s, .fd = -1, .model = model};
	int ret = conv_init(&c, o);
	if (ret != 0)
		return ret;
	struct cli_out co = {.fd = -1};
	pthread_t *th = NULL;
	long nth = 0;
	ret = EXIT_USAGE;
	sigset_t stops;
	struct sigaction prev[3];
	const int sigs[3] = {SIGINT, SIGTERM, SIGHUP};
	catch_stops(sigs, prev, &stops);
	if (wf_live_catch_sigbus() != 0) {
		fprintf(stderr, "weightfs: sigaction: %s\n", strerror(errno));
		goto out;
	}
	if (cli_out_open(&co, out, model_mode(s->mt.m)) != 0) {
		fprintf(stderr, "weightfs: %s: cannot create a temporary file beside it: %s\n", cli_path(out), strerror(errno));
		goto out;
	}
	c.fd = c.out.fd = co.fd;
	if (ftruncate(c.fd, (off_t)c.size) != 0) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(out), strerror(errno));
		goto out;
	}
	nth = worker_count(c.size);
	th = calloc((size_t)nth, sizeof *th);
	if (!th) {
		fprintf(stderr, "weightfs: out of memory\n");
		ret = EXIT_NOMEM;
		goto out;
	}
	nth = start_workers(&c, th, nth, &stops);
	if (nth == 0) {
		fprintf(stderr, "weightfs: cannot start a thread\n");
		goto out;
	}
	bool bar = isatty(STDERR_FILENO);
	double t0 = now_s();
	wait_workers(&c, th, nth, bar, t0);
	int sig = atomic_load(&stop_sig);
	if (bar)
		fputs(sig || atomic_load(&c.failed) ? "\r\033[K" : "", stderr);
	if (sig) {
		ret = 128 + sig;
		fprintf(stderr, "weightfs: %s: interrupted (%s); nothing written\n", cli_path(out), strsignal(sig));
		goto out;
	}
	if (atomic_load(&c.failed)) {
		ret = conv_failure(&c, model, out);
		goto out;
	}
	c.fd = -1; /* co owns it */
	if (cli_out_commit(&co, o->force) != 0) {
		if (errno == EEXIST)
			fprintf(stderr, "weightfs: %s: already exists; weightfs convert --force replaces it\n", cli_path(out));
		else
			fprintf(stderr, "weightfs: %s: %s\n", cli_path(out), strerror(errno));
		goto out;
	}
	sync_dir_of(out);
	if (bar)
		progress(c.size, c.size, now_s() - t0, true);
	ret = 0;
out:
	cli_out_abort(&co);
	free(th);
	pthread_mutex_destroy(&c.lock);
	pthread_mutex_destroy(&c.out.lock);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &prev[i], NULL);
	return ret;
}

static int convert_main(const struct cli_cmd *c, int argc, char **argv)
{
	return cli_session_main(c, argc, argv, convert);
}

static const struct cli_opt convert_opts[] = {
	CLI_FLAG(0, "force", offsetof(struct cli_opts, force), "replace OUT if it exists"),
	{.kind = CLI_OPT_CALLBACK, .short_name = 'o', .argh = "dtype=T,gguf=T", .off = offsetof(struct cli_opts, o),
	 .cb = cli_o_list, .data = CLI_O_GGUF, .help = "the mount's options that change what the files hold (weightfs(1))"},
	CLI_END,
};

const struct cli_cmd cli_cmd_convert = {
	.name = "convert", .args = "MODEL OUT.safetensors|OUT.gguf", .min_pos = 2, .max_pos = 2,
	.missing = "MODEL and OUT are needed", .opts = convert_opts, .usage_exit = EXIT_USAGE, .run = convert_main,
	.summary = "Writes MODEL as the mount's model.safetensors (or model.gguf) would hold it to OUT.",
};
