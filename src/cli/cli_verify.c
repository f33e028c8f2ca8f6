/* cli_verify.c - weightfs verify [--json] [--write FILE] [--against FILE]
 * MODEL: is the download intact (docs/weightfs.1, COMMANDS)?
 *
 * What can be checked without a reference is: the model opens (the
 * parsers hold every header to the file's size, every tensor's bytes to
 * their file, a safetensors index's total_size to the shards), a GGUF's
 * padding is zeros and no longer than its alignment, every byte of every
 * file can be read, and in a hub cache every file matches the digest its
 * blob is named by (cli_hub.c).  A remote MODEL (hf://, s3://, https://)
 * is staged as the other commands stage it (net/wf_source.h): its weight
 * files are hashed from their remote memory, SIGBUS caught (a chunk not
 * fetched is "could not check", never zeros read from a placeholder), and
 * each file of an hf:// source is held to the digest the Hub's listing
 * gives it, judged as a hub cache's blobs are.  A manifest written by --write (the
 * SHA-256 of every file and of every tensor's stored bytes) is the
 * reference --against holds the model to, naming each tensor that
 * differs.  Digests run on every core, biggest job first; exit codes are
 * cmp's: 0 intact, 1 differs, 2 could not check. */
#include "base/wf_bus.h"
#include "base/wf_names.h"
#include "base/wf_pool.h"
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "cli/cli_look.h"
#include "cli/cli_hub.h"
#include "cli/cli_vstate.h"
#include "model/wf_set.h"
#include "net/wf_source.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MANIFEST_FORMAT "weightfs-manifest"
/* A manifest larger than this is refused (a million tensors take ~250 MB). */
#define MANIFEST_MAX (1u << 30)
/* Bytes each pread of a digest covers: the hash reads them while they are
 * still in L2. */
#define PIECE (256u << 10)

struct v_opts {
	bool json;
	const char *model, *write, *against;
};

/* Everything one run found and made. */
struct v_run {
	struct v_opts o;
	struct v_state st;
	struct v_hub hub;     /* a hub cache's blobs, or a remote source's files and their listed digests */
	bool is_hub;
	bool remote;          /* MODEL is hf://, s3:// or http(s)://, staged at `staged` */
	char *staged;
	char **bare;          /* [n_bare] a remote source's files it published no digest for */
	size_t n_bare;
	struct wf_model *m;
	size_t *part_job;     /* [n_parts]: the job of each part's file digest */
	size_t *tensor_job;   /* [n_tensors]: the job of each tensor's digest, or SIZE_MAX */
	uint64_t n_tensor_sums;
	uint8_t (*side_sum)[WF_SHA256_LEN]; /* [n_sidecars]: the digests of a folder's other small files */
	enum wf_err open_rc;  /* why MODEL did not open, or WF_OK */
	size_t open_prob;     /* the problem saying so */
	cJSON *manifest;
};

/* ---------------------------------------------------------------- digests */

/* What the workers share: the jobs to run, in the order `order` gives. */
struct v_pool {
	struct v_job *jobs;
	const size_t *order;
	size_t n;
	_Atomic size_t next;
	struct cli_meter *meter;
};

/* Where a digest's bytes come from: a file by pread, or a remote object's
 * memory, each chunk fetched on first touch (net/wf_remote.h). */
struct v_src {
	int fd;
	const uint8_t *mem; /* or NULL */
	uint64_t mem_len;
};

/* Copies n bytes of a remote object's memory; false when a chunk could
 * not be fetched (SIGBUS, caught here: never zeros taken for its bytes). */
static bool copy_guarded(void *dst, const uint8_t *src, size_t n)
{
	sigjmp_buf jb;
	if (sigsetjmp(jb, 1) != 0) {
		wf_bus_jmp = NULL;
		return false;
	}
	wf_bus_jmp = &jb;
	memcpy(dst, src, n);
	wf_bus_jmp = NULL;
	return true;
}

/* pread's contract on either source; a fetch that failed is -2. */
static ssize_t read_piece(const struct v_src *f, void *buf, size_t n, uint64_t off)
{
	if (!f->mem)
		return pread(f->fd, buf, n, (off_t)off);
	if (off >= f->mem_len)
		return 0;
	if (n > f->mem_len - off)
		n = (size_t)(f->mem_len - off);
	return copy_guarded(buf, f->mem + off, n) ? (ssize_t)n : -2;
}

/* Hashes [off, off + len) of f (len UINT64_MAX: to the end) into s, read
 * in order (so a remote object's read-ahead grows); *got gets the bytes
 * hashed; an errno, V_NOT_FETCHED, or 0. */
static int hash_src(const struct v_src *f, uint64_t off, uint64_t len, struct wf_sha *s, uint8_t *buf, uint64_t *got,
		    _Atomic uint64_t *done)
{
	*got = 0;
	while (*got < len) {
		uint64_t left = len - *got;
		size_t want = left < PIECE ? (size_t)left : PIECE;
		ssize_t n = read_piece(f, buf, want, off + *got);
		if (n == -2)
			return V_NOT_FETCHED;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return errno;
		if (n == 0)
			return len == UINT64_MAX ? 0 : ENODATA;
		if (!wf_sha_update(s, buf, (size_t)n))
			return ENOMEM;
		*got += (uint64_t)n;
		atomic_fetch_add_explicit(done, (uint64_t)n, memory_order_relaxed);
	}
	return 0;
}

/* Opened O_NONBLOCK and held to a regular file by fstat: a FIFO would
 * block the open, a device be read forever. */
static void run_job(struct v_job *j, uint8_t *buf, struct wf_sha *s256, struct wf_sha *s1, _Atomic uint64_t *done)
{
	/* a remote object's bytes only from its memory: its staged
	 * placeholder holds none (zeros) */
	int fd = j->mem ? -1 : j->fd >= 0 ? j->fd : open(j->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat st = {.st_mode = S_IFREG, .st_size = (off_t)j->mem_len};
	if (!j->mem && (fd < 0 || fstat(fd, &st) != 0)) {
		j->err_no = errno;
		goto out;
	}
	if (!S_ISREG(st.st_mode)) {
		j->err_no = V_NOT_FILE;
		goto out;
	}
	struct wf_sha *s = j->kind == V_FILE_GIT ? s1 : s256;
	if (j->kind == V_FILE_GIT) {
		char head[40];
		int n = snprintf(head, sizeof head, "blob %llu", (unsigned long long)st.st_size);
		wf_sha_update(s, head, (size_t)n + 1); /* with its NUL */
	}
	uint64_t off = j->kind == V_RANGE_SHA256 ? j->off : 0, len = j->kind == V_RANGE_SHA256 ? j->len : UINT64_MAX;
	struct v_src f = {.fd = fd, .mem = j->mem, .mem_len = j->mem_len};
	j->err_no = hash_src(&f, off, len, s, buf, &j->size, done);
	if (!j->err_no && j->kind == V_FILE_GIT && j->size != (uint64_t)st.st_size)
		j->err_no = EAGAIN; /* it changed while it was read */
	uint8_t tmp[WF_SHA256_LEN];
	if (!wf_sha_final(s, j->err_no ? tmp : j->sum) && !j->err_no)
		j->err_no = ENOMEM;
out:
	if (fd >= 0 && fd != j->fd)
		close(fd);
	j->done = true;
}

static void *worker(void *arg)
{
	struct v_pool *p = arg;
	uint8_t *buf = malloc(PIECE);
	struct wf_sha *s256 = wf_sha_new(WF_SHA256), *s1 = wf_sha_new(WF_SHA1);
	for (;;) {
		size_t k = atomic_fetch_add(&p->next, 1);
		if (k >= p->n)
			break;
		struct v_job *j = &p->jobs[p->order[k]];
		if (!buf || !s256 || !s1) {
			j->err_no = ENOMEM;
			j->done = true;
			continue;
		}
		run_job(j, buf, s256, s1, &p->meter->done);
	}
	wf_sha_free(s256);
	wf_sha_free(s1);
	free(buf);
	return NULL;
}

static const struct v_job *sort_jobs;

static int bigger_first(const void *a, const void *b)
{
	const struct v_job *x = &sort_jobs[*(const size_t *)a], *y = &sort_jobs[*(const size_t *)b];
	if (x->len != y->len)
		return x->len > y->len ? -1 : 1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

/* Runs every job not yet done on every core, the biggest first so that
 * the last to finish are small; false when out of memory. */
static bool run_jobs(struct v_state *st)
{
	size_t n = 0;
	size_t *order = malloc((st->n_jobs + 1) * sizeof *order);
	if (!order)
		return false;
	uint64_t total = 0;
	for (size_t k = 0; k < st->n_jobs; k++)
		if (!st->jobs[k].done) {
			order[n++] = k;
			total += st->jobs[k].len;
		}
	sort_jobs = st->jobs;
	qsort(order, n, sizeof *order, bigger_first);
	struct cli_meter mt;
	cli_meter_start(&mt, "verify", total);
	struct v_pool p = {.jobs = st->jobs, .order = order, .n = n, .meter = &mt};
	atomic_init(&p.next, 0);
	if (n)
		wf_pool_run(wf_pool_threads(0, n), worker, &p, 0);
	cli_meter_stop(&mt);
	free(order);
	return true;
}

/* ---------------------------------------------------------------- the model's own checks */

static int by_begin(const void *a, const void *b)
{
	return wf_span_cmp(a, b);
}

/* Whether bytes [off, off + n) of f are all zero; -1 when unreadable. */
static int zeros(const struct v_src *f, uint64_t off, uint64_t n)
{
	uint8_t buf[4096];
	while (n) {
		size_t want = n < sizeof buf ? (size_t)n : sizeof buf;
		ssize_t got = read_piece(f, buf, want, off);
		if (got <= 0)
			return -1;
		for (ssize_t i = 0; i < got; i++)
			if (buf[i])
				return 0;
		off += (uint64_t)got;
		n -= (uint64_t)got;
	}
	return 1;
}

/* The bytes between tensor `prev` (or the data section's start) and
 * `begin` of part pi, or after the last tensor (`begin` the file's end). */
static void gap(struct v_run *r, const struct v_src *f, uint32_t pi, const struct wf_tensor *prev, uint64_t end, uint64_t begin,
		bool last)
{
	const struct wf_part *p = &r->m->parts[pi];
	uint64_t n = begin - end, a = r->m->alignment;
	struct wf_buf nm = {0};
	cli_name(&nm, prev->name, prev->name_len);
	const char *tn = nm.oom ? "?" : nm.data;
	if (n >= a)
		v_problem(&r->st, V_DIFFERS, "padding", p->name, prev->name, prev->name_len,
			  "%s: %" PRIu64 " byte%s %s tensor %s, more than the padding to the alignment (%" PRIu64 ") can be",
			  cli_path(p->name), n, n == 1 ? "" : "s", last ? "after the last" : "after", tn, a);
	else if (n && zeros(f, end, n) == 0)
		v_problem(&r->st, V_DIFFERS, "padding", p->name, prev->name, prev->name_len,
			  "%s: the %" PRIu64 " byte%s of padding after tensor %s %s not zeros", cli_path(p->name), n,
			  n == 1 ? "" : "s", tn, n == 1 ? "is" : "are");
	wf_buf_free(&nm);
}

/* A GGUF part's data section: between tensors and after the last, only
 * the zeros that pad each tensor to the alignment, as llama.cpp and
 * gguf-py write them. */
static bool gguf_padding(struct v_run *r, uint32_t pi, struct wf_span *sp)
{
	const struct wf_part *p = &r->m->parts[pi];
	size_t n = 0;
	for (size_t i = 0; i < r->m->n_tensors; i++) {
		const struct wf_tensor *t = &r->m->tensors[i];
		if (t->part == pi && t->nbytes)
			sp[n++] = (struct wf_span){t->offset, t->offset + t->nbytes, i};
	}
	if (!n)
		return true;
	qsort(sp, n, sizeof *sp, by_begin);
	if (p->remote) { /* its memory, never its placeholder's zeros */
		struct v_src f = {.fd = -1, .mem = p->data, .mem_len = p->len};
		for (size_t k = 0; k < n && !r->st.oom; k++) {
			uint64_t next = k + 1 < n ? sp[k + 1].begin : p->len;
			if (next > sp[k].end)
				gap(r, &f, pi, &r->m->tensors[sp[k].tensor], sp[k].end, next, k + 1 == n);
		}
		return !r->st.oom;
	}
	int fd = p->fd >= 0 ? p->fd : open(p->path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	struct stat s;
	if (fd >= 0 && (fstat(fd, &s) != 0 || !S_ISREG(s.st_mode))) {
		if (fd != p->fd)
			close(fd);
		return true; /* replaced by a special file: the digests say so */
	}
	if (fd < 0)
		return true; /* the digests will say it cannot be read */
	uint64_t size = (uint64_t)s.st_size;
	struct v_src f = {.fd = fd};
	for (size_t k = 0; k < n && !r->st.oom; k++) {
		uint64_t next = k + 1 < n ? sp[k + 1].begin : size;
		if (next > sp[k].end)
			gap(r, &f, pi, &r->m->tensors[sp[k].tensor], sp[k].end, next, k + 1 == n);
	}
	if (fd != p->fd)
		close(fd);
	return !r->st.oom;
}

static bool model_checks(struct v_run *r)
{
	if (r->m->format != WF_FMT_GGUF || r->m->alignment == 0)
		return true; /* safetensors: the parser holds the header to the file exactly */
	struct wf_span *sp = malloc((r->m->n_tensors + 1) * sizeof *sp);
	bool ok = sp != NULL;
	for (uint32_t pi = 0; ok && pi < r->m->n_parts; pi++)
		ok = gguf_padding(r, pi, sp);
	free(sp);
	return ok;
}

/* ---------------------------------------------------------------- opening */

/* A digest job on part p's bytes: from its remote memory when it has
 * one, else from its file. */
static size_t add_part_job(struct v_run *r, enum v_job_kind kind, const struct wf_part *p, uint64_t off, uint64_t len,
			   size_t ref)
{
	size_t k = v_add_job(&r->st, kind, p->path, p->fd, off, len, ref);
	if (k != SIZE_MAX && p->remote) {
		r->st.jobs[k].mem = p->data;
		r->st.jobs[k].mem_len = p->len;
	}
	return k;
}

static bool part_jobs(struct v_run *r)
{
	r->part_job = calloc(r->m->n_parts + 1, sizeof *r->part_job);
	r->tensor_job = malloc((r->m->n_tensors + 1) * sizeof *r->tensor_job);
	if (!r->part_job || !r->tensor_job)
		return false;
	for (size_t i = 0; i < r->m->n_tensors; i++)
		r->tensor_job[i] = SIZE_MAX;
	for (uint32_t pi = 0; pi < r->m->n_parts; pi++) {
		const struct wf_part *p = &r->m->parts[pi];
		const struct v_blob *b = r->is_hub || r->remote ? v_hub_blob(&r->hub, p->path) : NULL;
		/* a blob named by its SHA-256 is hashed once, for both */
		if (b && b->job != SIZE_MAX && r->st.jobs[b->job].kind == V_FILE_SHA256)
			r->part_job[pi] = b->job;
		else
			r->part_job[pi] = add_part_job(r, V_FILE_SHA256, p, 0, 0, pi);
		if (r->part_job[pi] == SIZE_MAX)
			return false;
	}
	return true;
}

/* Digest jobs for the tensors of part pi (every part: pi UINT32_MAX). */
static bool tensor_jobs(struct v_run *r, uint32_t pi)
{
	for (size_t i = 0; i < r->m->n_tensors; i++) {
		const struct wf_tensor *t = &r->m->tensors[i];
		if ((pi != UINT32_MAX && t->part != pi) || r->tensor_job[i] != SIZE_MAX)
			continue;
		const struct wf_part *p = &r->m->parts[t->part];
		r->tensor_job[i] = add_part_job(r, V_RANGE_SHA256, p, t->offset, t->nbytes, i);
		if (r->tensor_job[i] == SIZE_MAX)
			return false;
		r->n_tensor_sums++;
	}
	return true;
}

/* Opens MODEL as the mount would; a model that does not open is the first
 * problem (it differs from any intact file when a parser refused it). */
static void open_model(struct v_run *r)
{
	char err[WF_ERRLEN];
	enum wf_err rc = wf_set_open(&r->m, r->staged ? r->staged : r->o.model, err);
	if (rc == WF_OK)
		return;
	r->m = NULL;
	r->open_rc = rc;
	r->open_prob = r->st.n_probs;
	v_problem(&r->st, rc == WF_ERR_FORMAT ? V_DIFFERS : V_TROUBLE, "open", NULL, NULL, 0, "%s: %s",
		  cli_path(r->o.model), err);
}

/* Once every check ran: a model that did not open because a hub cache's
 * file is damaged is damage too; a hub cache whose every blob matches its
 * name and that holds no model weightfs reads (a PyTorch checkpoint) is
 * intact, the model's own checks skipped. */
static void settle_open(struct v_run *r)
{
	if (r->open_rc == WF_OK || r->open_prob >= r->st.n_probs)
		return;
	struct v_prob *op = &r->st.probs[r->open_prob];
	bool damage = false, other = false;
	for (size_t i = 0; i < r->st.n_probs; i++)
		if (i != r->open_prob) {
			damage |= r->st.probs[i].sev == V_DIFFERS;
			other = true;
		}
	if (damage)
		op->sev = V_DIFFERS;
	else if (r->is_hub && r->open_rc == WF_ERR_IO && !other && !r->o.write && !r->o.against)
		op->sev = V_NOTE;
}

/* The digests of a folder's small files, which the model holds in memory
 * (at most WF_SIDECARS_TOTAL_MAX bytes: hashed here, on one thread). */
static bool sidecar_sums(struct v_run *r)
{
	if (!r->m->n_sidecars || r->m->sidecars_beside)
		return true; /* none, or not the model's: a file of a folder named as MODEL */
	struct wf_sha *s = wf_sha_new(WF_SHA256);
	r->side_sum = malloc(r->m->n_sidecars * sizeof *r->side_sum);
	bool ok = s && r->side_sum;
	for (size_t i = 0; ok && i < r->m->n_sidecars; i++)
		ok = wf_sha_update(s, r->m->sidecars[i].data, r->m->sidecars[i].len) && wf_sha_final(s, r->side_sum[i]);
	wf_sha_free(s);
	return ok;
}

/* ---------------------------------------------------------------- remote sources */

/* A staged path as the report names it: its path in the source (a one-file
 * source: the file's name), never the staging folder's. */
static const char *shown(const struct v_run *r, const char *path)
{
	size_t n = r->staged ? strlen(r->staged) : 0;
	if (!n || !path || strncmp(path, r->staged, n) != 0)
		return path;
	if (path[n] == '/')
		return path + n + 1;
	const char *b = strrchr(path, '/');
	return !path[n] && b ? b + 1 : path;
}

/* MODEL is hf://, s3:// or http(s)://: staged as the other commands stage
 * it (net/wf_source.h).  False when it could not be: the first problem. */
static bool stage_remote(struct v_run *r)
{
	char err[WF_ERRLEN];
	r->remote = true;
	r->hub.listed = "the Hub";
	enum wf_err rc = wf_bus_catch() != 0 ? wf_fail(err, WF_ERR_IO, "cannot catch SIGBUS: %s", strerror(errno))
					     : wf_source_stage(r->o.model, &r->staged, err);
	if (rc == WF_OK)
		return true;
	free(r->staged);
	r->staged = NULL;
	v_problem(&r->st, V_TROUBLE, "open", NULL, NULL, 0, "%s: %s", cli_path(r->o.model), err);
	return false;
}

/* The digest job for staged file `path` (not a part of the model): a
 * placeholder's from its remote memory, a small file's from its copy. */
static size_t file_job(struct v_run *r, enum v_job_kind kind, const char *path)
{
	struct wf_robj *ro = NULL;
	char err[WF_ERRLEN];
	const uint8_t *mem = NULL;
	if (wf_source_open(path, &ro, err) != WF_OK || (ro && !(mem = wf_robj_data(ro, err)))) {
		v_problem(&r->st, V_TROUBLE, "file", shown(r, path), NULL, 0, "%s: %s", cli_path(shown(r, path)), err);
		return SIZE_MAX - 1; /* said; no job */
	}
	size_t k = v_add_job(&r->st, kind, path, -1, 0, 0, 0);
	if (k != SIZE_MAX && ro) {
		r->st.jobs[k].mem = mem;
		r->st.jobs[k].mem_len = wf_robj_size(ro);
	}
	return k;
}

/* Every file the source staged under MODEL: held to the digest its
 * listing gives it (v_hub_judge judges), or noted as having none. */
static bool listed_jobs(struct v_run *r)
{
	const char *path;
	enum wf_digest_kind kind;
	char hex[65];
	size_t n = strlen(r->staged);
	for (size_t i = 0; wf_source_file(i, &path, &kind, hex); i++) {
		if (strncmp(path, r->staged, n) != 0 || (path[n] && path[n] != '/'))
			continue; /* another source's */
		const char *rel = shown(r, path);
		if (kind == WF_DIGEST_NONE) {
			char **nb = realloc(r->bare, (r->n_bare + 1) * sizeof *nb);
			if (nb)
				r->bare = nb;
			if (!nb || !(nb[r->n_bare] = strdup(rel)))
				return false;
			r->n_bare++;
			continue;
		}
		enum v_job_kind jk = kind == WF_DIGEST_SHA256 ? V_FILE_SHA256 : V_FILE_GIT;
		size_t k = SIZE_MAX - 1;
		for (uint32_t pi = 0; r->m && pi < r->m->n_parts && k == SIZE_MAX - 1; pi++)
			if (r->m->parts[pi].path && strcmp(r->m->parts[pi].path, path) == 0)
				k = add_part_job(r, jk, &r->m->parts[pi], 0, 0, pi);
		if (k == SIZE_MAX - 1)
			k = file_job(r, jk, path);
		if (k == SIZE_MAX)
			return false;
		if (k != SIZE_MAX - 1 && !v_hub_listed(&r->hub, rel, path, hex, k))
			return false;
	}
	return !r->st.oom;
}

/* ---------------------------------------------------------------- manifests */

static void hex_of(const struct v_job *j, char *hex)
{
	wf_sha_hex(j->sum, WF_SHA256_LEN, hex);
}

static void manifest_text(const struct v_run *r, struct wf_buf *b)
{
	char hex[2 * WF_SHA256_LEN + 1];
	wf_buf_puts(b, "{\"format\": \"" MANIFEST_FORMAT "\", \"version\": 1,\n \"files\": [");
	for (uint32_t pi = 0; pi < r->m->n_parts; pi++) {
		const struct v_job *j = &r->st.jobs[r->part_job[pi]];
		hex_of(j, hex);
		wf_buf_puts(b, pi ? ",\n  {\"name\": " : "\n  {\"name\": ");
		wf_buf_json_str(b, r->m->parts[pi].name, strlen(r->m->parts[pi].name));
		wf_buf_printf(b, ", \"size\": %" PRIu64 ", \"sha256\": \"%s\"}", j->size, hex);
	}
	for (size_t i = 0; r->side_sum && i < r->m->n_sidecars; i++) {
		const struct wf_sidecar *sc = &r->m->sidecars[i];
		wf_sha_hex(r->side_sum[i], WF_SHA256_LEN, hex);
		wf_buf_puts(b, r->m->n_parts || i ? ",\n  {\"name\": " : "\n  {\"name\": ");
		wf_buf_json_str(b, sc->name, strlen(sc->name));
		wf_buf_printf(b, ", \"size\": %" PRIu64 ", \"sha256\": \"%s\", \"sidecar\": true}", sc->len, hex);
	}
	wf_buf_puts(b, "],\n \"tensors\": [");
	for (size_t i = 0; i < r->m->n_tensors; i++) {
		const struct wf_tensor *t = &r->m->tensors[i];
		hex_of(&r->st.jobs[r->tensor_job[i]], hex);
		wf_buf_puts(b, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
		wf_buf_json_str(b, t->name, t->name_len);
		wf_buf_puts(b, ", \"file\": ");
		wf_buf_json_str(b, r->m->parts[t->part].name, strlen(r->m->parts[t->part].name));
		wf_buf_printf(b, ", \"offset\": %" PRIu64 ", \"nbytes\": %" PRIu64 ", \"sha256\": \"%s\"}", t->offset,
			      t->nbytes, hex);
	}
	wf_buf_puts(b, "]}\n");
}

/* Writes the manifest to a temporary file beside `path`, then renames it
 * into place, so a failed run leaves the old manifest whole. */
static bool write_manifest(struct v_run *r)
{
	struct wf_buf b = {0};
	manifest_text(r, &b);
	size_t n = strlen(r->o.write) + 16;
	char *tmp = malloc(n);
	bool ok = false;
	int fd = -1;
	if (!b.oom && tmp) {
		snprintf(tmp, n, "%s.tmp%ld", r->o.write, (long)getpid());
		fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		ok = fd >= 0 && cli_write_all(fd, b.data, b.len) == 0 && fsync(fd) == 0;
		ok = fd >= 0 && close(fd) == 0 && ok && rename(tmp, r->o.write) == 0;
		if (!ok)
			v_problem(&r->st, V_TROUBLE, "manifest", r->o.write, NULL, 0, "%s: cannot be written: %s",
				  cli_path(r->o.write), strerror(errno));
		if (!ok)
			unlink(tmp);
	}
	free(tmp);
	wf_buf_free(&b);
	return ok || !r->st.oom;
}

static bool read_manifest(struct v_run *r)
{
	int fd = open(r->o.against, O_RDONLY | O_CLOEXEC);
	struct stat s;
	char *text = NULL;
	ssize_t got = -1;
	if (fd >= 0 && fstat(fd, &s) == 0 && S_ISREG(s.st_mode) && s.st_size < MANIFEST_MAX &&
	    (text = malloc((size_t)s.st_size + 1)))
		got = read(fd, text, (size_t)s.st_size);
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (got >= 0)
		r->manifest = cJSON_ParseWithLength(text, (size_t)got);
	free(text);
	const cJSON *f = cJSON_GetObjectItemCaseSensitive(r->manifest, "format");
	if (!cJSON_IsString(f) || strcmp(f->valuestring, MANIFEST_FORMAT) != 0 ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r->manifest, "files")) ||
	    !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(r->manifest, "tensors"))) {
		v_problem(&r->st, V_TROUBLE, "manifest", r->o.against, NULL, 0, "%s: %s", cli_path(r->o.against),
			  got < 0 ? strerror(e) : "not a manifest weightfs verify --write made");
		cJSON_Delete(r->manifest);
		r->manifest = NULL;
		return false;
	}
	return true;
}

/* A manifest array's entries in an array of their own and by name: cJSON
 * keeps an array as a list, so cJSON_GetArrayItem walks it from its start
 * (a loop of those over 40,000 entries took 6.5 s). */
struct m_ix {
	struct wf_names names;
	const cJSON **e; /* [n] the entries in order */
	bool *seen;      /* [n] */
	size_t n;
};

static void ix_free(struct m_ix *x)
{
	if (x->e)
		wf_names_free(&x->names);
	free(x->e);
	free(x->seen);
}

/* The manifest's entry whose "name" is s[0..n), and its index in *k. */
static const cJSON *entry_named(const struct m_ix *x, const char *s, size_t n, uint32_t *k)
{
	*k = wf_names_get(&x->names, s, n);
	return *k == WF_NAMES_NONE ? NULL : x->e[*k];
}

static bool index_names(struct m_ix *x, const cJSON *arr)
{
	size_t n = 0;
	for (const cJSON *c = arr->child; c; c = c->next)
		n++;
	*x = (struct m_ix){.n = n, .seen = calloc(n + 1, sizeof *x->seen), .e = calloc(n + 1, sizeof *x->e)};
	if (!x->seen || !x->e || !wf_names_init(&x->names, n + 1)) {
		free(x->e);
		x->e = NULL; /* names not made: ix_free leaves them */
		return false;
	}
	size_t k = 0;
	for (const cJSON *c = arr->child; c; c = c->next, k++) {
		x->e[k] = c;
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c, "name");
		if (cJSON_IsString(nm))
			wf_names_put(&x->names, nm->valuestring, strlen(nm->valuestring), (uint32_t)k);
	}
	return true;
}

static bool digest_is(const cJSON *e, const uint8_t *sum)
{
	const cJSON *d = cJSON_GetObjectItemCaseSensitive(e, "sha256");
	uint8_t want[WF_SHA256_LEN];
	return cJSON_IsString(d) && strlen(d->valuestring) == 2 * WF_SHA256_LEN &&
	       wf_sha_unhex(d->valuestring, WF_SHA256_LEN, want) && memcmp(want, sum, sizeof want) == 0;
}

/* Names in the manifest the model does not have. */
static void left_over(struct v_run *r, const struct m_ix *x, const char *what)
{
	for (size_t k = 0; k < x->n; k++) {
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(x->e[k], "name");
		if (x->seen[k] || !cJSON_IsString(nm))
			continue;
		struct wf_buf b = {0};
		cli_name(&b, nm->valuestring, strlen(nm->valuestring));
		bool t = what[0] == 't';
		v_problem(&r->st, V_DIFFERS, what, t ? NULL : nm->valuestring, t ? nm->valuestring : NULL,
			  strlen(nm->valuestring), "%s %s: in the manifest, not in the model", what, b.oom ? "?" : b.data);
		wf_buf_free(&b);
	}
}

/* The index of the manifest's one weight file (an entry not marked
 * "sidecar") when it has exactly one, else WF_NAMES_NONE. */
static uint32_t only_weights(const struct m_ix *x)
{
	uint32_t found = WF_NAMES_NONE;
	for (size_t k = 0; k < x->n; k++) {
		if (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(x->e[k], "sidecar")))
			continue;
		if (found != WF_NAMES_NONE)
			return WF_NAMES_NONE;
		found = (uint32_t)k;
	}
	return found;
}

/* A folder's small files against the manifest's entries of the same name. */
static void compare_sidecars(struct v_run *r, struct m_ix *x)
{
	for (size_t i = 0; r->side_sum && i < r->m->n_sidecars; i++) {
		const char *name = r->m->sidecars[i].name;
		uint32_t k;
		const cJSON *e = entry_named(x, name, strlen(name), &k);
		if (!e) {
			v_problem(&r->st, V_DIFFERS, "file", name, NULL, 0, "file %s: not in the manifest", cli_path(name));
			continue;
		}
		x->seen[k] = true;
		if (!digest_is(e, r->side_sum[i]))
			v_problem(&r->st, V_DIFFERS, "file", name, NULL, 0, "file %s: differs from the manifest",
				  cli_path(name));
	}
}

/* Each part's digest against the manifest's; differs[pi] 1 when it is
 * not the same, 2 when the manifest has no such file: its tensors are
 * then hashed and compared. */
static bool compare_files(struct v_run *r, uint8_t *differs)
{
	struct m_ix x;
	if (!index_names(&x, cJSON_GetObjectItemCaseSensitive(r->manifest, "files"))) {
		ix_free(&x);
		return false;
	}
	for (uint32_t pi = 0; pi < r->m->n_parts; pi++) {
		const char *name = r->m->parts[pi].name;
		uint32_t k;
		const cJSON *e = entry_named(&x, name, strlen(name), &k);
		if (!e && r->m->n_parts == 1 && (k = only_weights(&x)) != WF_NAMES_NONE)
			e = x.e[k]; /* one file, renamed: still the one */
		if (e)
			x.seen[k] = true;
		const struct v_job *j = &r->st.jobs[r->part_job[pi]];
		differs[pi] = j->err_no ? 0 : !e ? 2 : !digest_is(e, j->sum);
		if (!e)
			v_problem(&r->st, V_DIFFERS, "file", name, NULL, 0, "file %s: not in the manifest", cli_path(name));
	}
	compare_sidecars(r, &x);
	left_over(r, &x, "file");
	ix_free(&x);
	return !r->st.oom;
}

static void tensor_differs(struct v_run *r, const struct wf_tensor *t, const char *why)
{
	struct wf_buf b = {0};
	cli_name(&b, t->name, t->name_len);
	const char *file = r->m->parts[t->part].name;
	v_problem(&r->st, V_DIFFERS, "tensor", file, t->name, t->name_len, "tensor %s (in %s): %s", b.oom ? "?" : b.data,
		  cli_path(file), why);
	wf_buf_free(&b);
}

static bool compare_tensors(struct v_run *r, const uint8_t *differs, size_t *per_part)
{
	struct m_ix x;
	if (!index_names(&x, cJSON_GetObjectItemCaseSensitive(r->manifest, "tensors"))) {
		ix_free(&x);
		return false;
	}
	for (size_t i = 0; i < r->m->n_tensors; i++) {
		const struct wf_tensor *t = &r->m->tensors[i];
		uint32_t k;
		const cJSON *e = entry_named(&x, t->name, t->name_len, &k);
		if (!e) {
			tensor_differs(r, t, "not in the manifest");
			continue;
		}
		x.seen[k] = true;
		if (!differs[t->part])
			continue; /* its file is the manifest's, byte for byte */
		const struct v_job *j = &r->st.jobs[r->tensor_job[i]];
		const cJSON *nb = cJSON_GetObjectItemCaseSensitive(e, "nbytes");
		if (j->err_no)
			continue; /* said with the digests' read errors */
		if (!cJSON_IsNumber(nb) || (uint64_t)nb->valuedouble != t->nbytes) {
			tensor_differs(r, t, "its size differs from the manifest's");
			per_part[t->part]++;
		} else if (!digest_is(e, j->sum)) {
			tensor_differs(r, t, "its SHA-256 differs from the manifest's");
			per_part[t->part]++;
		}
	}
	left_over(r, &x, "tensor");
	ix_free(&x);
	return !r->st.oom;
}

/* --against: files first; the tensors of a file that differs are hashed
 * only then, to name them. */
static bool against(struct v_run *r)
{
	if (!read_manifest(r))
		return true;
	uint8_t *differs = calloc(r->m->n_parts + 1, sizeof *differs); /* 1: differs, 2: not in the manifest */
	size_t *per_part = calloc(r->m->n_parts + 1, sizeof *per_part);
	bool ok = differs && per_part && compare_files(r, differs);
	for (uint32_t pi = 0; ok && pi < r->m->n_parts; pi++)
		if (differs[pi])
			ok = tensor_jobs(r, pi);
	ok = ok && run_jobs(&r->st) && compare_tensors(r, differs, per_part);
	for (uint32_t pi = 0; ok && pi < r->m->n_parts; pi++) {
		const char *name = r->m->parts[pi].name;
		if (differs[pi] == 2)
			continue; /* not in the manifest: said */
		if (differs[pi] && per_part[pi])
			v_problem(&r->st, V_DIFFERS, "file", name, NULL, 0,
				  "file %s: differs from the manifest (%zu tensor%s)", cli_path(name), per_part[pi],
				  per_part[pi] == 1 ? "" : "s");
		else if (differs[pi])
			v_problem(&r->st, V_DIFFERS, "file", name, NULL, 0,
				  "file %s: differs from the manifest outside its tensors' bytes (header or padding)",
				  cli_path(name));
	}
	free(differs);
	free(per_part);
	return ok;
}

/* A part that is a hub cache's LFS blob (MODEL named a file or folder in
 * a snapshot, not the cache): its SHA-256 against the blob's name too. */
static void blob_names(struct v_run *r)
{
	for (uint32_t pi = 0; pi < r->m->n_parts; pi++) {
		const char *path = r->m->parts[pi].path, *base = path ? strrchr(path, '/') : NULL;
		const struct v_job *j = &r->st.jobs[r->part_job[pi]];
		if (!base || base - path < 6 || strncmp(base - 6, "/blobs", 6) != 0 || strlen(base + 1) != 64 || j->err_no)
			continue;
		char hex[2 * WF_SHA256_LEN + 1];
		uint8_t d[WF_SHA256_LEN];
		hex_of(j, hex);
		if (wf_sha_unhex(base + 1, WF_SHA256_LEN, d) && strcmp(hex, base + 1) != 0)
			v_problem(&r->st, V_DIFFERS, "blob", r->m->parts[pi].name, NULL, 0,
				  "%s (blobs/%.12s...): its SHA-256 is %s, but the blob's name says %s",
				  cli_path(r->m->parts[pi].name), base + 1, hex, base + 1);
	}
}

/* Read errors of the digests, one line each. */
static void read_errors(struct v_run *r)
{
	for (size_t k = 0; k < r->st.n_jobs; k++) {
		const struct v_job *j = &r->st.jobs[k];
		const struct v_blob *b = r->is_hub || r->remote ? v_hub_blob(&r->hub, j->path) : NULL;
		if (!j->err_no || (b && b->job == k))
			continue; /* a blob's: v_hub_judge says it */
		if (j->kind == V_RANGE_SHA256) {
			const struct wf_tensor *t = &r->m->tensors[j->ref];
			if (j->err_no == V_NOT_FETCHED && r->st.jobs[r->part_job[t->part]].err_no)
				continue; /* its file's line says it */
			tensor_differs(r, t, j->err_no == ENODATA ? "its bytes end early: the file is shorter than its header says"
								 : v_strerror(j->err_no));
			if (j->err_no != ENODATA)
				r->st.probs[r->st.n_probs - 1].sev = V_TROUBLE;
		} else {
			v_problem(&r->st, V_TROUBLE, "file", shown(r, j->path), NULL, 0, "%s: cannot be read: %s",
				  cli_path(shown(r, j->path)), v_strerror(j->err_no));
		}
	}
}

/* ---------------------------------------------------------------- report */

static int exit_code(const struct v_run *r)
{
	int worst = r->st.oom ? V_TROUBLE : 0;
	for (size_t i = 0; i < r->st.n_probs; i++)
		if ((int)r->st.probs[i].sev > worst)
			worst = (int)r->st.probs[i].sev;
	return worst;
}

static const char *verdict_of(int code)
{
	return code == 0 ? "intact" : code == 1 ? "differs" : "unchecked";
}

static void json_opt(struct wf_buf *b, const char *key, const char *s, size_t n)
{
	wf_buf_printf(b, ", \"%s\": ", key);
	if (s)
		wf_buf_json_str(b, s, n);
	else
		wf_buf_puts(b, "null");
}

static const char *verdict_of(int code);

/* "source": a remote source's files, each with the digest its listing
 * gives and how it compared; null for a local model. */
static void json_source(const struct v_run *r, struct wf_buf *b)
{
	wf_buf_puts(b, ", \"source\": ");
	if (!r->remote) {
		wf_buf_puts(b, "null");
		return;
	}
	wf_buf_puts(b, "{\"files\": [");
	for (size_t i = 0; i < r->hub.n_blobs; i++) {
		const struct v_blob *bl = &r->hub.blobs[i];
		wf_buf_puts(b, i ? ", {\"name\": " : "{\"name\": ");
		wf_buf_json_str(b, bl->link, strlen(bl->link));
		wf_buf_printf(b, ", \"digest\": \"%s\", \"listed\": \"%s\", \"verdict\": \"%s\"}",
			      strlen(bl->name) == 64 ? "sha256" : "git-sha1", bl->name, verdict_of((int)bl->verdict));
	}
	for (size_t i = 0; i < r->n_bare; i++) {
		wf_buf_puts(b, i || r->hub.n_blobs ? ", {\"name\": " : "{\"name\": ");
		wf_buf_json_str(b, r->bare[i], strlen(r->bare[i]));
		wf_buf_puts(b, ", \"digest\": null, \"listed\": null, \"verdict\": null}");
	}
	wf_buf_puts(b, "]}");
}

/* A remote source's files: each one's digest matched (the ones that did
 * not are problems), or none published. */
static void text_source(const struct v_run *r, struct wf_buf *b)
{
	for (size_t i = 0; i < r->hub.n_blobs; i++) {
		const struct v_blob *bl = &r->hub.blobs[i];
		if (bl->verdict == V_NOTE)
			wf_buf_printf(b, "%s: matches the %s %s lists\n", cli_path(bl->link),
				      strlen(bl->name) == 64 ? "SHA-256" : "git blob id", r->hub.listed);
	}
	for (size_t i = 0; i < r->n_bare; i++)
		wf_buf_printf(b, "%s: no digest published by the source to check against (read whole)\n",
			      cli_path(r->bare[i]));
}

/* A file's path; a remote source's file as the source names it
 * (hf://ORG/NAME/FILE), never its staging folder nor the URL it was read
 * from (a CDN's may be signed). */
static void json_path(const struct v_run *r, const char *path, struct wf_buf *b)
{
	const char *rel = shown(r, path);
	if (!r->remote || rel == path) {
		wf_buf_json_str(b, path, strlen(path));
		return;
	}
	struct wf_buf j = {0};
	size_t n = strlen(r->o.model);
	while (n && r->o.model[n - 1] == '/')
		n--;
	if (strcmp(path, r->staged) == 0) /* a source of one file: the source */
		wf_buf_puts(&j, r->o.model);
	else
		wf_buf_printf(&j, "%.*s/%s", (int)n, r->o.model, rel);
	if (j.oom)
		b->oom = true;
	else
		wf_buf_json_str(b, j.data, j.len);
	wf_buf_free(&j);
}

static void json_report(const struct v_run *r, int code, struct wf_buf *b)
{
	char hex[2 * WF_SHA256_LEN + 1];
	wf_buf_puts(b, "{\"model\": ");
	wf_buf_json_str(b, r->o.model, strlen(r->o.model));
	wf_buf_printf(b, ", \"verdict\": \"%s\", \"exit\": %d, \"hub\": ", verdict_of(code), code);
	if (r->is_hub) {
		wf_buf_puts(b, "{\"root\": ");
		wf_buf_json_str(b, r->hub.root, strlen(r->hub.root));
		wf_buf_printf(b, ", \"blobs\": %zu, \"links\": %zu, \"unfinished\": %zu}", r->hub.n_blobs, r->hub.n_links,
			      r->hub.n_unfinished);
	} else {
		wf_buf_puts(b, "null");
	}
	json_source(r, b);
	wf_buf_puts(b, ", \"files\": [");
	for (uint32_t pi = 0; r->m && pi < r->m->n_parts; pi++) {
		const struct v_job *j = &r->st.jobs[r->part_job[pi]];
		hex_of(j, hex);
		wf_buf_puts(b, pi ? ", {\"name\": " : "{\"name\": ");
		wf_buf_json_str(b, r->m->parts[pi].name, strlen(r->m->parts[pi].name));
		wf_buf_puts(b, ", \"path\": ");
		json_path(r, r->m->parts[pi].path, b);
		wf_buf_printf(b, ", \"size\": %" PRIu64 ", \"sha256\": ", j->size);
		if (j->err_no)
			wf_buf_puts(b, "null}");
		else
			wf_buf_printf(b, "\"%s\"}", hex);
	}
	wf_buf_printf(b, "], \"tensors\": %zu, \"tensors_hashed\": %" PRIu64 ", \"problems\": [",
		      r->m ? r->m->n_tensors : 0, r->n_tensor_sums);
	for (size_t i = 0; i < r->st.n_probs; i++) {
		const struct v_prob *p = &r->st.probs[i];
		wf_buf_printf(b, "%s{\"kind\": \"%s\", \"exit\": %d", i ? ",\n  " : "\n  ", p->kind, (int)p->sev);
		json_opt(b, "file", p->file, p->file ? strlen(p->file) : 0);
		json_opt(b, "tensor", p->tensor, p->tensor_len);
		json_opt(b, "message", p->msg, strlen(p->msg));
		wf_buf_putc(b, '}');
	}
	wf_buf_puts(b, "]}\n");
}

static void text_report(const struct v_run *r, int code, struct wf_buf *b)
{
	char hex[2 * WF_SHA256_LEN + 1];
	for (uint32_t pi = 0; r->m && pi < r->m->n_parts; pi++) {
		const struct v_job *j = &r->st.jobs[r->part_job[pi]];
		if (j->err_no)
			continue;
		hex_of(j, hex);
		wf_buf_printf(b, "%s  %s\n", hex, cli_path(r->m->parts[pi].name)); /* as sha256sum prints it */
	}
	if (r->remote)
		text_source(r, b);
	size_t n_bad = 0, n_trouble = 0;
	for (size_t i = 0; i < r->st.n_probs; i++)
		if (r->st.probs[i].sev == V_TROUBLE)
			n_trouble++;
	for (size_t i = 0; i < r->st.n_probs; i++)
		if (r->st.probs[i].sev == V_DIFFERS) {
			wf_buf_printf(b, "%s\n", r->st.probs[i].msg);
			n_bad++;
		} else {
			fprintf(stderr, "weightfs: %s%s%s\n", r->st.probs[i].sev == V_NOTE ? "note: " : "",
				r->st.probs[i].msg, r->st.probs[i].sev == V_NOTE ? " (the model's own checks skipped)" : "");
		}
	if (r->is_hub && r->hub.n_unfinished)
		fprintf(stderr, "weightfs: note: %zu unfinished download%s in blobs/ (*.incomplete), not checked\n",
			r->hub.n_unfinished, r->hub.n_unfinished == 1 ? "" : "s");
	if (code == 0 && r->m)
		wf_buf_printf(b, "intact: %u file%s, %zu tensors", r->m->n_parts, r->m->n_parts == 1 ? "" : "s",
			      r->m->n_tensors);
	else if (code == 0)
		wf_buf_puts(b, "intact: every blob matches its name");
	else if (code == 1)
		wf_buf_printf(b, "DIFFERS: %zu problem%s", n_bad, n_bad == 1 ? "" : "s");
	else
		wf_buf_printf(b, "could not check: %zu problem%s", n_trouble, n_trouble == 1 ? "" : "s");
	if (r->is_hub)
		wf_buf_printf(b, "; hub cache: %zu blobs, %zu links", r->hub.n_blobs, r->hub.n_links);
	if (r->o.against && code == 0)
		wf_buf_printf(b, "; as the manifest %s says", cli_path(r->o.against));
	wf_buf_putc(b, '\n');
}

static int report(const struct v_run *r)
{
	int code = exit_code(r);
	struct wf_buf b = {0};
	if (r->o.json)
		json_report(r, code, &b);
	else
		text_report(r, code, &b);
	if (b.oom || fwrite(b.data, 1, b.len, stdout) != b.len || fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", b.oom ? "out of memory" : strerror(errno));
		code = V_TROUBLE;
	}
	wf_buf_free(&b);
	return code;
}

/* ---------------------------------------------------------------- the command */

static bool verify(struct v_run *r)
{
	if (wf_source_is_remote(r->o.model)) {
		if (!stage_remote(r))
			return !r->st.oom;
	} else {
		r->is_hub = v_hub_detect(r->o.model, &r->hub);
	}
	if (r->is_hub && !v_hub_scan(&r->hub, &r->st))
		return false;
	open_model(r);
	if (r->remote && !listed_jobs(r))
		return false;
	if (r->m && !sidecar_sums(r))
		return false;
	if (r->m && (!model_checks(r) || !part_jobs(r) || (r->o.write && !tensor_jobs(r, UINT32_MAX))))
		return false;
	if (!run_jobs(&r->st))
		return false;
	if (r->is_hub || r->remote)
		v_hub_judge(&r->hub, &r->st);
	else if (r->m)
		blob_names(r);
	if (r->m && r->o.against && !against(r))
		return false;
	if (r->m)
		read_errors(r);
	settle_open(r);
	if (r->o.write && exit_code(r) != V_TROUBLE && r->m)
		return write_manifest(r);
	if (r->o.write)
		v_problem(&r->st, V_TROUBLE, "manifest", r->o.write, NULL, 0, "%s: not written: the model %s",
			  cli_path(r->o.write), r->m ? "could not be read whole" : "did not open");
	return !r->st.oom;
}

static int verify_main(const struct cli_cmd *c, int argc, char **argv)
{
	struct v_run r = {0};
	int n_pos = 0, ret = cli_parse(c, argc, argv, &r.o, &n_pos);
	if (ret != 0)
		return ret == CLI_HELP ? 0 : ret;
	r.o.model = argv[2];
	if (!verify(&r))
		r.st.oom = true;
	if (r.st.oom)
		fprintf(stderr, "weightfs: out of memory\n");
	ret = report(&r);
	for (size_t i = 0; i < r.st.n_probs; i++) {
		free(r.st.probs[i].msg);
		free(r.st.probs[i].file);
		free(r.st.probs[i].tensor);
	}
	free(r.st.probs);
	free(r.st.jobs);
	free(r.part_job);
	free(r.tensor_job);
	free(r.side_sum);
	for (size_t i = 0; i < r.n_bare; i++)
		free(r.bare[i]);
	free(r.bare);
	free(r.staged);
	cJSON_Delete(r.manifest);
	v_hub_free(&r.hub);
	wf_model_free(r.m);
	return ret;
}

static const struct cli_opt verify_opts[] = {
	CLI_FLAG(0, "json", offsetof(struct v_opts, json), "print JSON: the verdict, the exit code, every problem"),
	CLI_STRING(0, "write", "FILE", offsetof(struct v_opts, write), "write a manifest of every file's and tensor's "
		   "SHA-256 to FILE"),
	CLI_STRING(0, "against", "FILE", offsetof(struct v_opts, against), "compare with the manifest FILE"),
	CLI_END,
};

const struct cli_cmd cli_cmd_verify = {
	.name = "verify", .args = "MODEL", .min_pos = 1, .max_pos = 1, .missing = "MODEL is missing",
	.opts = verify_opts, .usage_exit = V_TROUBLE, .run = verify_main,
	.summary = "Checks MODEL whole: its own checks, every file read, a hub cache's blobs against their names, "
		   "an hf:// source's files against the digests the Hub lists (exit 0: intact, 1: something differs, 2: it could not be checked).",
};
