/* cli_fetch.c - weightfs fetch SOURCE [TENSOR...]: fills the cache with a
 * remote source's bytes (docs/remote.md, "weightfs fetch"), so that later
 * mounts and commands, -o offline ones too, read them from disk.
 *
 * The whole source: every chunk of every weight file, fetched by the
 * remote layer's streams (wf_remote_fill), none kept in memory; then each
 * Hub weight file is put together into its blob of the Hugging Face cache
 * (checked against the listing's sha256 first).  Named tensors: the model
 * is opened as a mount would open it (its headers fetched and cached) and
 * only the chunks covering those tensors' stored bytes are fetched.  On a
 * terminal, a progress line on stderr, redrawn in place; the result is one
 * summary line on stdout. */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "mount/wf_sha.h"
#include "net/wf_hubcache.h"
#include "net/wf_remote.h"
#include "net/wf_source.h"
#include "view/wf_hfq.h"

#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>
#include <unistd.h>

struct fetch_opts {
	struct cli_o o;
};

struct meter {
	bool tty;
	double t0, last;
	int width;
	struct wf_fill f; /* the last counts seen */
};

static double now_s(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

/* "12.3 MiB" */
static void human(double b, char *out, size_t cap)
{
	static const char *const u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
	int k = 0;
	while (b >= 1024 && k < 4)
		b /= 1024, k++;
	snprintf(out, cap, k ? "%.1f %s" : "%.0f %s", b, u[k]);
}

static void draw(void *ctx, const struct wf_fill *f)
{
	struct meter *m = ctx;
	m->f = *f;
	double t = now_s();
	if (!m->tty || (t - m->last < 0.1 && f->done < f->total))
		return;
	m->last = t;
	char done[32], total[32], rate[32], left[32] = "";
	double el = t - m->t0, r = el > 0 ? (double)f->fetched / el : 0;
	human((double)f->done, done, sizeof done);
	human((double)f->total, total, sizeof total);
	human(r, rate, sizeof rate);
	if (r > 0 && f->done < f->total) {
		double s = (double)(f->total - f->done) / r;
		snprintf(left, sizeof left, "  %d:%02d left", (int)(s / 60), (int)s % 60);
	}
	char bar[64];
	int bw = m->width >= 90 ? 30 : m->width >= 70 ? 16 : 0, fill = f->total ? (int)(bw * f->done / f->total) : bw;
	for (int i = 0; i < bw; i++)
		bar[i] = i < fill ? '#' : '.';
	bar[bw] = '\0';
	fprintf(stderr, "\r%s%s%s%s / %s  %s/s%s\033[K", bw ? "[" : "", bar, bw ? "]  " : "", done, total, rate, left);
	fflush(stderr);
}

/* Every weight file, whole. */
static int whole(const char *src, struct wf_fill_range **out, size_t *n)
{
	char err[WF_ERRLEN];
	struct wf_source_weight w;
	size_t k = 0;
	for (; wf_source_weight(k, &w); k++) {
	}
	*out = calloc(k ? k : 1, sizeof **out);
	if (!*out)
		return EXIT_NOMEM;
	for (*n = 0; wf_source_weight(*n, &w); (*n)++) {
		if (!w.o) {
			fprintf(stderr, "weightfs: %s: %s: not pinned (%s)\n", cli_path(src), cli_path(w.path), "a bug");
			return EXIT_OPEN;
		}
		(*out)[*n] = (struct wf_fill_range){w.o, 0, wf_robj_size(w.o)};
	}
	(void)err;
	return 0;
}

/* A tensor's stored bytes as ranges of its files' objects. */
static int tensor_ranges(const struct wf_model *m, const struct wf_tensor *t, struct wf_fill_range *r, size_t *n)
{
	if (!t->q) {
		if (t->part >= m->n_parts || !m->parts[t->part].remote)
			return -1;
		r[(*n)++] = (struct wf_fill_range){m->parts[t->part].remote, t->offset, t->nbytes};
		return 0;
	}
	for (int k = 0; k < WF_HFQ_MAX_PARTS; k++) {
		const struct wf_hfq_part *p = &t->q->part[k];
		if (!p->p)
			continue;
		if (p->file >= m->n_parts || !m->parts[p->file].remote || !m->parts[p->file].data)
			return -1;
		r[(*n)++] = (struct wf_fill_range){m->parts[p->file].remote, (uint64_t)(p->p - m->parts[p->file].data),
						   p->nbytes};
	}
	return 0;
}

static int named(const struct wf_model *m, const char *src, char **names, int n_names, struct wf_fill_range **out,
		 size_t *n)
{
	*out = calloc((size_t)n_names * WF_HFQ_MAX_PARTS + 1, sizeof **out);
	if (!*out)
		return EXIT_NOMEM;
	*n = 0;
	for (int i = 0; i < n_names; i++) {
		size_t len = strlen(names[i]), k = 0;
		while (k < m->n_tensors && (m->tensors[k].name_len != len || memcmp(m->tensors[k].name, names[i], len)))
			k++;
		char q[256];
		if (k == m->n_tensors) {
			fprintf(stderr, "weightfs: %s: no tensor %s (weightfs ls lists them)\n", cli_path(src),
				wf_quote(q, sizeof q, names[i], len));
			return EXIT_USAGE;
		}
		if (tensor_ranges(m, &m->tensors[k], *out, n) != 0) {
			fprintf(stderr, "weightfs: %s: tensor %s: its bytes are not in a remote file\n", cli_path(src),
				wf_quote(q, sizeof q, names[i], len));
			return EXIT_OPEN;
		}
	}
	return 0;
}

/* One Hub weight file from the cache into its blob, checked against its
 * sha256 on the way; false (nothing left behind) when it cannot be. */
static bool assemble(const char *repo, const char *commit, const struct wf_source_weight *w)
{
	char tmp[4800] = "";
	int fd = wf_hubc_begin(repo, w->blob, tmp, sizeof tmp);
	if (fd < 0) /* there already, or no hub cache: link what is there */
		return wf_hubc_end(repo, commit, w->path, w->blob, NULL, true);
	size_t cap = 4u << 20;
	uint8_t *buf = malloc(cap), d[32];
	struct wf_sha *sh = wf_sha_new(WF_SHA256);
	uint64_t size = wf_robj_size(w->o);
	bool ok = buf && sh;
	for (uint64_t at = 0; ok && at < size;) {
		size_t n = size - at < cap ? (size_t)(size - at) : cap;
		ok = wf_robj_cached(w->o, at, buf, n) && wf_sha_update(sh, buf, n) && cli_write_all(fd, buf, n) == 0;
		at += n;
	}
	char hex[65];
	ok = close(fd) == 0 && ok && wf_sha_final(sh, d);
	if (ok) {
		wf_sha_hex(d, 32, hex);
		ok = strcmp(hex, w->blob) == 0;
	}
	wf_sha_free(sh);
	free(buf);
	return wf_hubc_end(repo, commit, w->path, w->blob, tmp, ok);
}

static void summary(const char *src, const struct wf_fill *f, size_t files, double el, size_t blobs)
{
	char total[32], got[32], rate[32];
	human((double)f->total, total, sizeof total);
	human((double)f->fetched, got, sizeof got);
	human(el > 0 ? (double)f->fetched / el : 0, rate, sizeof rate);
	printf("%s: %s in %zu chunks of %zu file%s in the cache: %s fetched in %.1f s (%s/s), the rest there "
	       "already", src, total, f->chunks, files, files == 1 ? "" : "s", got, el, rate);
	if (blobs)
		printf("; %zu file%s in the Hugging Face cache", blobs, blobs == 1 ? "" : "s");
	printf("\n");
}

/* The fill with its progress line; *f its final counts, *blobs the Hub
 * weight files then put in the Hugging Face cache.  The exit code. */
static int run_fill(const char *src, const struct wf_fill_range *r, size_t n, bool hub_blobs, struct wf_fill *f,
		    size_t *blobs)
{
	char err[WF_ERRLEN];
	struct meter m = {.tty = isatty(STDERR_FILENO), .t0 = now_s(), .width = 80};
	struct winsize ws;
	if (m.tty && ioctl(STDERR_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col)
		m.width = ws.ws_col;
	enum wf_err rc = wf_remote_fill(r, n, draw, &m, err);
	*f = m.f;
	if (m.tty)
		fprintf(stderr, "\r\033[K");
	if (rc != WF_OK) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(src), err);
		return cli_exit_code(rc);
	}
	*blobs = hub_blobs ? cli_hub_keep(true) : 0;
	return 0;
}

size_t cli_hub_keep(bool all)
{
	size_t n = 0;
	const char *commit, *repo = wf_source_hub(&commit);
	struct wf_source_weight w;
	for (size_t i = 0; repo && wf_source_weight(i, &w); i++)
		if (w.o && w.blob && (all || wf_robj_whole(w.o)) && assemble(repo, commit, &w))
			n++;
	return n;
}

static size_t files_of(const struct wf_fill_range *r, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t j = 0;
		while (j < i && r[j].o != r[i].o)
			j++;
		k += j == i;
	}
	return k;
}

static int fetch_main(const struct cli_cmd *c, int argc, char **argv)
{
	struct fetch_opts o = {0};
	int n_pos = 0, ret = cli_parse(c, argc, argv, &o, &n_pos);
	if (ret != 0)
		return ret == CLI_HELP ? 0 : ret;
	const char *src = argv[2];
	if (!wf_source_is_remote(src))
		return cli_usage_error(c, "%s: not a remote source (hf://ORG/NAME, http:// or https://)", cli_path(src));
	if (wf_remote_conf.offline)
		return cli_usage_error(c, "-o offline: fetching needs the network");
	if (wf_remote_conf.cache_off)
		return cli_usage_error(c, "-o cache=none: there is no cache to fill");
	struct cli_session s = {0};
	char err[WF_ERRLEN], *local = NULL;
	struct wf_fill_range *r = NULL;
	size_t n = 0;
	if (n_pos > 1) {
		ret = cli_open(&s.mt, src, NULL, &(struct wf_tree_opts){0});
		if (ret == 0)
			ret = named(s.mt.m, src, argv + 3, n_pos - 1, &r, &n);
	} else {
		enum wf_err rc = wf_source_stage(src, &local, err);
		if (rc != WF_OK) {
			fprintf(stderr, "weightfs: %s: %s\n", cli_path(src), err);
			ret = cli_exit_code(rc);
		} else {
			if (wf_source_warning())
				fprintf(stderr, "weightfs: %s\n", wf_source_warning());
			ret = whole(src, &r, &n);
		}
	}
	if (ret == 0 && !wf_remote_conf.cache) {
		fprintf(stderr, "weightfs: %s: no cache folder to fill (%s)\n", cli_path(src),
			wf_source_warning() ? wf_source_warning() : "none");
		ret = EXIT_OPEN;
	}
	struct wf_fill f = {0};
	size_t blobs = 0;
	double t0 = now_s();
	if (ret == 0 && (ret = run_fill(src, r, n, n_pos == 1, &f, &blobs)) == 0)
		summary(src, &f, files_of(r, n), now_s() - t0, blobs);
	free(r);
	free(local);
	if (n_pos > 1)
		wf_mount_close(&s.mt);
	if (ret == 0 && fflush(stdout) != 0)
		ret = EXIT_USAGE;
	return ret;
}

static const struct cli_opt fetch_opts[] = {
	{.kind = CLI_OPT_CALLBACK, .short_name = 'o', .argh = "LIST", .off = offsetof(struct fetch_opts, o),
	 .cb = cli_o_list, .data = CLI_O_ANY,
	 .help = "cache=DIR, cache_size=N, remote_chunk=N, remote_streams=N (docs/remote.md)"},
	CLI_END,
};

const struct cli_cmd cli_cmd_fetch = {
	.name = "fetch", .args = "SOURCE [TENSOR ...]", .min_pos = 1, .max_pos = -1,
	.missing = "SOURCE is missing", .opts = fetch_opts, .usage_exit = EXIT_USAGE, .run = fetch_main,
	.summary = "Fills the cache with a remote source's bytes: all of them, or those of the TENSORs named.",
};
