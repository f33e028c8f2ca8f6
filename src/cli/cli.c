/* cli.c - weightfs ls, info, cat and convert: what a mount of MODEL would
 * show, without mounting it.
 *
 * Every command opens MODEL exactly as the mount does (wf_set_open, the
 * output view, the tree) and reads through the mount's one read path
 * (wf_live_read), so its bytes are the bytes of the mount's files and its
 * messages and exit codes for a bad MODEL are the mount's.  Part of the
 * command-line program: it prints and picks exit codes; the library never
 * does. */
#include "cli/cli.h"
#include "cli/cli_diff.h"
#include "cli/cli_stats.h"
#include "base/wf_buf.h"
#include "view/wf_live.h"
#include "model/wf_model.h"
#include "view/wf_out.h"
#include "model/wf_set.h"
#include "mount/wf_tree.h"
#include "mount/wf_preview.h"
#include "codec/wf_types.h"

#include <errno.h>
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

/* Bytes one read or one worker's piece of convert covers: large enough
 * that a pwrite costs little per byte, small enough that a worker per
 * core keeps memory modest (16 MiB each). */
#define PIECE (16u << 20)

struct cmd_opts {
	const char *cmd;
	const char *pos[2];   /* MODEL, then TENSOR or OUT */
	int n_pos;
	bool json, force, npy, preview;
	char *dtype;          /* -o dtype=T; owned */
	uint64_t offset, length;
	bool have_length;
};

/* The model as a mount would serve it. */
struct session {
	struct wf_model *m;
	struct wf_tree *t;
	struct wf_live lv;
	bool live;
};

static const char *const usages[] = {
	"weightfs ls [--json] [-o dtype=T,npy] MODEL",
	"weightfs info [--json] MODEL",
	"weightfs cat [--offset N] [--length N] [-o dtype=T,npy] MODEL TENSOR",
	"weightfs convert [--force] [-o dtype=T] MODEL OUT.safetensors",
};

static const char *usage_of(const char *cmd)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(usages); i++) {
		size_t n = strlen(cmd);
		if (strncmp(usages[i] + 9, cmd, n) == 0 && usages[i][9 + n] == ' ')
			return usages[i];
	}
	return usages[0];
}

bool cli_is_command(const char *arg)
{
	return arg && (strcmp(arg, "ls") == 0 || strcmp(arg, "info") == 0 || strcmp(arg, "cat") == 0 ||
		       strcmp(arg, "convert") == 0 || strcmp(arg, "stats") == 0 || strcmp(arg, "diff") == 0);
}

int cli_exit_code(enum wf_err rc)
{
	switch (rc) {
	case WF_OK:
		return 0;
	case WF_ERR_IO:
	case WF_ERR_CHANGED:
		return EXIT_OPEN;
	case WF_ERR_FORMAT:
		return EXIT_FORMAT;
	case WF_ERR_UNSUP:
	case WF_ERR_RANGE:
		return EXIT_UNSUP;
	case WF_ERR_NOMEM:
		return EXIT_NOMEM;
	}
	return EXIT_USAGE;
}

__attribute__((format(printf, 2, 3)))
static int usage_error(const char *cmd, const char *fmt, ...)
{
	va_list ap;
	fprintf(stderr, "weightfs %s: ", cmd);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fprintf(stderr, " (usage: %s)\n", usage_of(cmd));
	return EXIT_USAGE;
}

/* A decimal count of bytes: digits only, no sign (strtoull takes "-1"). */
static bool parse_u64(const char *s, uint64_t *v)
{
	if (!s || *s < '0' || *s > '9')
		return false;
	char *end;
	errno = 0;
	unsigned long long x = strtoull(s, &end, 10);
	if (errno || *end)
		return false;
	*v = x;
	return true;
}

/* -o's list: the mount's options that change what the files hold. */
static int parse_o(struct cmd_opts *o, const char *list)
{
	char *copy = strdup(list);
	if (!copy)
		return EXIT_NOMEM;
	int ret = 0;
	char *save = NULL;
	for (char *opt = strtok_r(copy, ",", &save); opt; opt = strtok_r(NULL, ",", &save)) {
		if (strncmp(opt, "dtype=", 6) == 0) {
			if (o->dtype && strcmp(o->dtype, opt + 6) != 0) {
				ret = usage_error(o->cmd, "-o dtype=%s and dtype=%s contradict each other", o->dtype,
						  opt + 6);
				break;
			}
			free(o->dtype);
			if (!(o->dtype = strdup(opt + 6))) {
				ret = EXIT_NOMEM;
				break;
			}
		} else if (strcmp(opt, "npy") == 0 && strcmp(o->cmd, "convert") != 0) {
			o->npy = true;
		} else if (strcmp(opt, "preview") == 0 && strcmp(o->cmd, "convert") != 0) {
			o->preview = true;
		} else {
			ret = usage_error(o->cmd, "-o %s: not an option of this command", opt);
			break;
		}
	}
	free(copy);
	return ret;
}

/* An option's value: "--offset=N" or "--offset N". */
static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen(name);
	if (strncmp(argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int parse_args(int argc, char **argv, struct cmd_opts *o, int want_pos)
{
	const char *cmd = o->cmd;
	bool is_cat = strcmp(cmd, "cat") == 0, is_conv = strcmp(cmd, "convert") == 0;
	bool dash_dash = false;
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i], *v;
		int rc;
		if (dash_dash || a[0] != '-' || a[1] == '\0') {
			if (o->n_pos == want_pos)
				return usage_error(cmd, "%s: one argument too many", a);
			o->pos[o->n_pos++] = a;
		} else if (strcmp(a, "--") == 0) {
			dash_dash = true;
		} else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
			printf("usage: %s\nSee weightfs(1), COMMANDS.\n", usage_of(cmd));
			return -1;
		} else if (strcmp(a, "--json") == 0 && !is_cat && !is_conv) {
			o->json = true;
		} else if (strcmp(a, "--force") == 0 && is_conv) {
			o->force = true;
		} else if (strcmp(a, "-o") == 0 || (a[1] == 'o' && a[2])) {
			const char *list = a[2] ? a + 2 : (i + 1 < argc ? argv[++i] : NULL);
			if (!list)
				return usage_error(cmd, "%s: needs a value", a);
			if (strcmp(cmd, "info") == 0) /* metadata.json is the same under every option */
				continue;
			if ((rc = parse_o(o, list)) != 0)
				return rc;
		} else if (is_cat && (v = opt_value(argc, argv, &i, "--offset"))) {
			if (!parse_u64(v, &o->offset))
				return usage_error(cmd, "--offset %s: not a byte count", v);
		} else if (is_cat && (v = opt_value(argc, argv, &i, "--length"))) {
			if (!parse_u64(v, &o->length))
				return usage_error(cmd, "--length %s: not a byte count", v);
			o->have_length = true;
		} else {
			return usage_error(cmd, "%s: unknown option", a);
		}
	}
	if (o->n_pos < want_pos)
		return usage_error(cmd, "%s", want_pos == 1 ? "MODEL is missing" :
				   is_cat ? "MODEL and TENSOR are needed" : "MODEL and OUT are needed");
	return 0;
}

/* The first change a read ran into, for its message.  Called at most once
 * per part, from whichever thread read it. */
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static char notice_msg[WF_ERRLEN];

static void on_notice(void *ctx, const char *part, const char *why)
{
	(void)ctx;
	pthread_mutex_lock(&notice_lock);
	if (!notice_msg[0])
		snprintf(notice_msg, sizeof notice_msg, "%s%s%s", part ? part : "", part ? ": " : "", why);
	pthread_mutex_unlock(&notice_lock);
}

/* Opens MODEL as the mount does, with the same one-line messages. */
static int open_session(const struct cmd_opts *o, struct session *s)
{
	char err[WF_ERRLEN];
	enum wf_out out = WF_OUT_F32;
	memset(s, 0, sizeof *s);
	if (o->dtype && !wf_out_parse(o->dtype, &out)) {
		fprintf(stderr, "weightfs: -o dtype=%s: unknown output type (f32, f16, bf16 or stored)\n", o->dtype);
		return EXIT_USAGE;
	}
	enum wf_err rc = wf_set_open(&s->m, o->pos[0], err);
	if (rc == WF_OK)
		rc = wf_model_set_view(s->m, out, err);
	if (rc == WF_OK)
		rc = wf_tree_build_opts(&s->t, s->m, &(struct wf_tree_opts){.npy = o->npy, .preview = o->preview}, err);
	if (rc != WF_OK) {
		fprintf(stderr, "weightfs: %s: %s\n", o->pos[0], err);
		return cli_exit_code(rc);
	}
	if (wf_live_init(&s->lv, s->m, wf_tree_seg, s->t, on_notice, NULL) != WF_OK) {
		fprintf(stderr, "weightfs: %s: out of memory\n", o->pos[0]);
		return EXIT_NOMEM;
	}
	s->live = true;
	return 0;
}

static void close_session(struct session *s)
{
	if (s->live)
		wf_live_free(&s->lv);
	wf_tree_free(s->t);
	wf_model_free(s->m);
}

/* Says why a read of MODEL failed; returns the exit code. */
static int read_failed(const char *model, const char *what, enum wf_err rc)
{
	if (rc == WF_ERR_CHANGED)
		fprintf(stderr, "weightfs: %s: %s since it was opened\n", model,
			notice_msg[0] ? notice_msg : "a file of the model changed");
	else if (rc == WF_ERR_RANGE)
		fprintf(stderr, "weightfs: %s: %s: cannot be read: weightfs has no decoder for its type "
			"(-o dtype=stored shows its bytes)\n", model, what);
	else
		fprintf(stderr, "weightfs: %s: %s: read failed\n", model, what);
	return cli_exit_code(rc);
}

static int write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Writes bytes [off, off+len) of file node `node` to stdout. */
static int dump_node(struct session *s, const char *model, const char *what, uint32_t node, uint64_t off,
		     uint64_t len)
{
	uint64_t size = wf_tree_size(s->t, node);
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	size_t cap = len < PIECE ? (size_t)len : PIECE;
	char *buf = malloc(cap ? cap : 1);
	if (!buf) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	int ret = 0;
	while (len) {
		size_t n = len < cap ? (size_t)len : cap, got;
		enum wf_err rc = wf_mount_read(s->t, &s->lv, node, off, n, buf, &got);
		if (rc != WF_OK) {
			ret = read_failed(model, what, rc);
			break;
		}
		if (got == 0)
			break;
		if (write_all(STDOUT_FILENO, buf, got) != 0) {
			fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
			ret = EXIT_USAGE;
			break;
		}
		off += got;
		len -= got;
	}
	free(buf);
	return ret;
}

static int dump_root_file(struct session *s, const char *model, const char *name)
{
	uint32_t node = wf_tree_lookup(s->t, 0, name, strlen(name));
	if (node == WF_NO_NODE) { /* every tree has both; a bug */
		fprintf(stderr, "weightfs: %s: %s: missing\n", model, name);
		return EXIT_USAGE;
	}
	int ret = dump_node(s, model, name, node, 0, UINT64_MAX);
	if (ret == 0 && fflush(stdout) != 0)
		ret = EXIT_USAGE;
	return ret;
}

/* A name or value for a terminal: control bytes, backslashes and bytes
 * that are not UTF-8 as escapes; *cols gets its width in characters.  At
 * most `max` characters (0: no limit), then "...". */
static void display(struct wf_buf *b, const char *s, size_t n, size_t max, size_t *cols)
{
	size_t c = 0;
	for (size_t i = 0; i < n;) {
		if (max && c >= max) {
			wf_buf_puts(b, "...");
			c += 3;
			break;
		}
		const uint8_t *u = (const uint8_t *)s + i;
		size_t k = *u >= 0x80 ? wf_utf8_seq(u, n - i) : 1;
		if (k > 1) {
			wf_buf_put(b, u, k);
			c++;
			i += k;
			continue;
		}
		if (*u == '\n') {
			wf_buf_puts(b, "\\n");
			c += 2;
		} else if (*u == '\\') {
			wf_buf_puts(b, "\\\\");
			c += 2;
		} else if (*u < 0x20 || *u >= 0x7f) {
			wf_buf_printf(b, "\\x%02X", *u);
			c += 4;
		} else {
			wf_buf_putc(b, (char)*u);
			c++;
		}
		i++;
	}
	if (cols)
		*cols = c;
}

static void pad(size_t have, size_t want)
{
	for (; have < want; have++)
		putchar(' ');
}

/* ls: one line per tensor, columns sized to the widest entry. */
static int cmd_ls(struct session *s, const struct cmd_opts *o)
{
	if (o->json)
		return dump_root_file(s, o->pos[0], "tensors.json");
	const struct wf_model *m = s->m;
	struct wf_buf text = {0};
	size_t *at = calloc(m->n_tensors * 5 + 1, sizeof *at); /* per tensor: name, shape, their widths, size */
	size_t w[5] = {4, 4, 5, 5, 4}; /* NAME TYPE DTYPE SHAPE SIZE */
	int ret = 0;
	if (!at)
		goto oom;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		size_t *r = at + 5 * i, cols;
		r[0] = text.len;
		display(&text, tn->name, tn->name_len, 0, &cols);
		wf_buf_putc(&text, '\0');
		r[2] = cols;
		r[1] = text.len;
		uint64_t dims[WF_MAX_DIMS];
		uint32_t nd = wf_view_shape(tn, dims);
		size_t start = text.len;
		wf_buf_putc(&text, '[');
		for (uint32_t d = 0; d < nd; d++)
			wf_buf_printf(&text, "%s%" PRIu64, d ? ", " : "", dims[d]);
		wf_buf_putc(&text, ']');
		r[3] = text.len - start;
		wf_buf_putc(&text, '\0');
		char num[24];
		r[4] = (size_t)snprintf(num, sizeof num, "%" PRIu64, tn->size);
		const size_t widths[5] = {r[2], strlen(wf_type_get(tn->type)->name), strlen(wf_view_dtype(tn)),
					   r[3], r[4]};
		for (int k = 0; k < 5; k++)
			if (widths[k] > w[k])
				w[k] = widths[k];
	}
	if (text.oom)
		goto oom;
	/* a header for people; scripts reading a pipe get the lines alone */
	if (isatty(STDOUT_FILENO)) {
		printf("NAME");
		pad(4, w[0]);
		printf("  %-*s  %-*s  %-*s  %*s\n", (int)w[1], "TYPE", (int)w[2], "DTYPE", (int)w[3], "SHAPE",
		       (int)w[4], "SIZE");
	}
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		const size_t *r = at + 5 * i;
		fputs(text.data + r[0], stdout);
		pad(r[2], w[0]);
		printf("  %-*s  %-*s  %-*s  %*" PRIu64 "\n", (int)w[1], wf_type_get(tn->type)->name, (int)w[2],
		       wf_view_dtype(tn), (int)w[3], text.data + r[1], (int)w[4], tn->size);
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		ret = EXIT_USAGE;
	}
	goto out;
oom:
	fprintf(stderr, "weightfs: out of memory\n");
	ret = EXIT_NOMEM;
out:
	free(at);
	wf_buf_free(&text);
	return ret;
}

/* info: each metadata key and its value as the metadata folder's files
 * hold it, long values cut to a line. */
static int cmd_info(struct session *s, const struct cmd_opts *o)
{
	if (o->json)
		return dump_root_file(s, o->pos[0], "metadata.json");
	const struct wf_tree *t = s->t;
	size_t kw = 0;
	struct wf_buf line = {0};
	for (size_t i = 0; i < t->n_meta; i++) {
		size_t cols;
		line.len = 0;
		display(&line, t->meta[i].name, t->meta[i].name_len, 48, &cols);
		if (cols > kw)
			kw = cols;
	}
	for (size_t i = 0; i < t->n_meta && !line.oom; i++) {
		const struct wf_meta_file *f = &t->meta[i];
		size_t cols;
		line.len = 0;
		display(&line, f->name, f->name_len, 48, &cols);
		for (; cols < kw; cols++)
			wf_buf_putc(&line, ' ');
		wf_buf_puts(&line, "  ");
		display(&line, f->data, f->len, 100, NULL);
		if (f->len > 100)
			wf_buf_printf(&line, " (%zu bytes)", f->len);
		wf_buf_putc(&line, '\n');
		if (!line.oom)
			fwrite(line.data, 1, line.len, stdout);
	}
	bool oom = line.oom;
	wf_buf_free(&line);
	if (oom) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	return 0;
}

/* TENSOR as the model names it, or as its path in the mount. */
static uint32_t find_tensor(const struct session *s, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < s->m->n_tensors; i++)
		if (s->m->tensors[i].name_len == n && memcmp(s->m->tensors[i].name, name, n) == 0)
			return s->t->tensor_node[i];
	uint32_t node = 0;
	for (const char *p = name; *p && node != WF_NO_NODE;) {
		const char *slash = strchr(p, '/');
		size_t len = slash ? (size_t)(slash - p) : strlen(p);
		if (len)
			node = wf_tree_lookup(s->t, node, p, len);
		p += len + (slash != NULL);
	}
	if (node != WF_NO_NODE && (s->t->nodes[node].kind == WF_NODE_TENSOR || s->t->nodes[node].kind == WF_NODE_PREVIEW))
		return node;
	/* -o preview: NAME.png, NAME a tensor's name */
	if (s->t->preview_node && n > 4 && strcmp(name + n - 4, ".png") == 0)
		for (size_t i = 0; i < s->m->n_tensors; i++)
			if (s->m->tensors[i].name_len == n - 4 && memcmp(s->m->tensors[i].name, name, n - 4) == 0)
				return s->t->preview_node[i];
	return WF_NO_NODE;
}

static int cmd_cat(struct session *s, const struct cmd_opts *o)
{
	uint32_t node = find_tensor(s, o->pos[1]);
	if (node == WF_NO_NODE) {
		char q[256];
		fprintf(stderr, "weightfs: %s: no tensor %s (give its name, or its path in a mount: weightfs ls "
			"--json lists both)\n", o->pos[0], wf_quote(q, sizeof q, o->pos[1], strlen(o->pos[1])));
		return EXIT_USAGE;
	}
	if (wf_live_catch_sigbus() != 0) {
		fprintf(stderr, "weightfs: sigaction: %s\n", strerror(errno));
		return EXIT_USAGE;
	}
	return dump_node(s, o->pos[0], o->pos[1], node, o->offset, o->have_length ? o->length : UINT64_MAX);
}

/* ---------------------------------------------------------------- convert */

/* A signal that asks convert to stop: workers finish their piece and quit. */
static atomic_int stop_sig;

static void on_stop(int sig)
{
	atomic_store(&stop_sig, sig);
}

struct conv {
	struct session *s;
	uint32_t node;
	uint64_t size;
	int fd;
	const char *model, *tmp;
	atomic_uint_fast64_t next;    /* the next piece to take */
	atomic_uint_fast64_t done;    /* bytes written */
	atomic_int running;           /* workers not yet finished */
	atomic_bool failed;
	pthread_mutex_t lock;         /* guards the first failure below */
	enum wf_err rc;               /* a read failed with this, */
	int write_errno;              /* or a write with this */
};

static void conv_fail(struct conv *c, enum wf_err rc, int e)
{
	pthread_mutex_lock(&c->lock);
	if (!atomic_load(&c->failed)) {
		c->rc = rc;
		c->write_errno = e;
		atomic_store(&c->failed, true);
	}
	pthread_mutex_unlock(&c->lock);
}

static void *conv_worker(void *arg)
{
	struct conv *c = arg;
	char *buf = malloc(PIECE);
	if (!buf)
		conv_fail(c, WF_ERR_NOMEM, 0);
	while (buf && !atomic_load(&c->failed) && !atomic_load(&stop_sig)) {
		uint64_t off = (uint64_t)atomic_fetch_add(&c->next, 1) * PIECE;
		if (off >= c->size)
			break;
		size_t n = c->size - off < PIECE ? (size_t)(c->size - off) : PIECE, got;
		enum wf_err rc = wf_live_read(&c->s->lv, c->node, off, n, buf, &got);
		if (rc == WF_OK && got != n)
			rc = WF_ERR_RANGE; /* the file is shorter than its size: a bug */
		if (rc != WF_OK) {
			conv_fail(c, rc, 0);
			break;
		}
		for (size_t w = 0; w < n;) {
			ssize_t k = pwrite(c->fd, buf + w, n - w, (off_t)(off + w));
			if (k < 0 && errno == EINTR)
				continue;
			if (k <= 0) {
				conv_fail(c, WF_ERR_IO, k < 0 ? errno : ENOSPC);
				break;
			}
			w += (size_t)k;
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

/* A fresh file beside out for the bytes: the rename at the end is then
 * within one filesystem, and a failed run leaves only this name, which it
 * removes. */
static int open_temp(const char *out, char **tmp)
{
	char *d = strdup(out), *b = strdup(out);
	int fd = -1;
	if (!d || !b) {
		errno = ENOMEM;
		goto out;
	}
	const char *dir = dirname(d), *base = basename(b);
	for (unsigned i = 0; i < 100; i++) {
		free(*tmp);
		if (asprintf(tmp, "%s/.%s.weightfs-%ld-%u.tmp", dir, base, (long)getpid(), i) < 0) {
			*tmp = NULL;
			errno = ENOMEM;
			goto out;
		}
		fd = open(*tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
		if (fd >= 0 || errno != EEXIST)
			break;
	}
out:
	free(d);
	free(b);
	return fd;
}

/* Puts tmp at out; without force, never over an existing out, even one
 * that appeared while converting. */
static int place(const char *tmp, const char *out, bool force)
{
	if (force)
		return rename(tmp, out);
	if (renameat2(AT_FDCWD, tmp, AT_FDCWD, out, RENAME_NOREPLACE) == 0)
		return 0;
	if (errno != EINVAL && errno != ENOSYS)
		return -1;
	/* a filesystem without RENAME_NOREPLACE: link fails on an existing name too */
	if (link(tmp, out) != 0)
		return -1;
	unlink(tmp);
	return 0;
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
static int conv_init(struct conv *c, const struct cmd_opts *o)
{
	const char *model = o->pos[0], *out = o->pos[1];
	struct stat st;
	if (!o->force && lstat(out, &st) == 0) {
		fprintf(stderr, "weightfs: %s: already exists; weightfs convert --force replaces it\n", out);
		return EXIT_USAGE;
	}
	c->node = wf_tree_lookup(c->s->t, 0, "model.safetensors", 17);
	if (c->node == WF_NO_NODE || c->s->t->nodes[c->node].kind != WF_NODE_MODEL_ST) {
		fprintf(stderr, "weightfs: %s: model.safetensors: missing\n", model); /* a bug */
		return EXIT_USAGE;
	}
	c->size = wf_tree_size(c->s->t, c->node);
	if (pthread_mutex_init(&c->lock, NULL) != 0) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
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

/* More workers than cores or than pieces would only wait on each other. */
static long worker_count(uint64_t size)
{
	long cores = sysconf(_SC_NPROCESSORS_ONLN);
	uint64_t pieces = (size + PIECE - 1) / PIECE;
	long nth = cores < 1 ? 1 : cores > 256 ? 256 : cores;
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
		fprintf(stderr, "weightfs: %s: %s\n", out, strerror(c->write_errno));
		return EXIT_USAGE;
	}
	if (c->rc == WF_ERR_NOMEM) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	return read_failed(model, "model.safetensors", c->rc);
}

/* The bytes must be on disk before out names them; on failure the caller
 * still removes tmp. */
static int commit_file(struct conv *c, const char *tmp, const char *out, bool force)
{
	/* close even when fsync fails: the descriptor must not outlive the run */
	int synced = fsync(c->fd) == 0 ? 0 : errno;
	int closed = close(c->fd) == 0 ? 0 : errno;
	c->fd = -1;
	if (synced || closed) {
		fprintf(stderr, "weightfs: %s: %s\n", out, strerror(synced ? synced : closed));
		return -1;
	}
	if (place(tmp, out, force) != 0) {
		if (errno == EEXIST)
			fprintf(stderr, "weightfs: %s: already exists; weightfs convert --force replaces it\n", out);
		else
			fprintf(stderr, "weightfs: %s: %s\n", out, strerror(errno));
		return -1;
	}
	return 0;
}

static int cmd_convert(struct session *s, const struct cmd_opts *o)
{
	const char *model = o->pos[0], *out = o->pos[1];
	struct conv c = {.s = s, .fd = -1, .model = model};
	int ret = conv_init(&c, o);
	if (ret != 0)
		return ret;
	char *tmp = NULL;
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
	c.fd = open_temp(out, &tmp);
	if (c.fd < 0) {
		fprintf(stderr, "weightfs: %s: cannot create a temporary file beside it: %s\n", out, strerror(errno));
		goto out;
	}
	if (ftruncate(c.fd, (off_t)c.size) != 0) {
		fprintf(stderr, "weightfs: %s: %s\n", out, strerror(errno));
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
		fprintf(stderr, "weightfs: %s: interrupted (%s); nothing written\n", out, strsignal(sig));
		goto out;
	}
	if (atomic_load(&c.failed)) {
		ret = conv_failure(&c, model, out);
		goto out;
	}
	if (commit_file(&c, tmp, out, o->force) != 0)
		goto out;
	free(tmp);
	tmp = NULL; /* in place: nothing to remove */
	sync_dir_of(out);
	if (bar)
		progress(c.size, c.size, now_s() - t0, true);
	ret = 0;
out:
	if (c.fd >= 0)
		close(c.fd);
	if (tmp)
		unlink(tmp);
	free(tmp);
	free(th);
	pthread_mutex_destroy(&c.lock);
	for (int i = 0; i < 3; i++)
		sigaction(sigs[i], &prev[i], NULL);
	return ret;
}

int cli_main(int argc, char **argv)
{
	struct cmd_opts o = {.cmd = argv[1]};
	struct session s = {0};
	if (strcmp(o.cmd, "stats") == 0)
		return cli_stats(argc, argv);
	if (strcmp(o.cmd, "diff") == 0)
		return cli_diff(argc, argv);
	bool two = strcmp(o.cmd, "cat") == 0 || strcmp(o.cmd, "convert") == 0;
	int ret = parse_args(argc, argv, &o, two ? 2 : 1);
	if (ret != 0) {
		ret = ret < 0 ? 0 : ret; /* -1: --help printed */
		goto out;
	}
	if ((ret = open_session(&o, &s)) != 0)
		goto out;
	if (strcmp(o.cmd, "ls") == 0)
		ret = cmd_ls(&s, &o);
	else if (strcmp(o.cmd, "info") == 0)
		ret = cmd_info(&s, &o);
	else if (strcmp(o.cmd, "cat") == 0)
		ret = cmd_cat(&s, &o);
	else
		ret = cmd_convert(&s, &o);
out:
	close_session(&s);
	free(o.dtype);
	return ret;
}
