/* wf_diff.c - comparing two tensors' values; GGUF <-> HF names (wf_diff.h). */
#include "view/wf_diff.h"
#include "base/wf_buf.h"
#include "base/wf_pool.h"
#include "codec/wf_types.h"
#include "view/wf_stats.h"
#include "view/wf_view.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- values */

/* A Neumaier-compensated sum. */
struct ksum {
	double s, c;
};

static inline void kadd(struct ksum *k, double x)
{
	double t = k->s + x;
	if (fabs(k->s) >= fabs(x))
		k->c += (k->s - t) + x;
	else
		k->c += (x - t) + k->s;
	k->s = t;
}

static double kval(const struct ksum *k)
{
	return k->s + k->c;
}

struct part {
	uint64_t n, differ;
	double max_abs;
	struct ksum d2, a2, b2, ab;
};

struct job {
	struct wf_live *la, *lb;
	const struct wf_tensor *ta, *tb;
	const struct wf_diff_map *map;
	uint64_t rows, cols; /* for the permutation: A's rows of cols elements */
	unsigned esz_a, esz_b;
	_Atomic uint64_t *done;
};

/* Reads B's elements that pair with A's [first, first+n) into raw. */
static enum wf_err read_b(struct job *j, uint64_t first, size_t n, uint8_t *raw)
{
	size_t got;
	enum wf_err rc;
	if (!j->map->perm_heads) {
		rc = wf_live_read_view(j->lb, j->tb, first * j->esz_b, n * j->esz_b, raw, &got);
		return rc != WF_OK ? rc : got == n * j->esz_b ? WF_OK : WF_ERR_RANGE;
	}
	for (size_t k = 0; k < n;) {
		uint64_t e = first + k, row = e / j->cols, col = e % j->cols;
		size_t run = (size_t)(j->cols - col) < n - k ? (size_t)(j->cols - col) : n - k;
		uint64_t brow = wf_qk_row(row, j->rows, j->map->perm_heads, j->map->a_is_gguf);
		rc = wf_live_read_view(j->lb, j->tb, (brow * j->cols + col) * j->esz_b, run * j->esz_b,
				       raw + k * j->esz_b, &got);
		if (rc != WF_OK)
			return rc;
		if (got != run * j->esz_b)
			return WF_ERR_RANGE;
		k += run;
	}
	return WF_OK;
}

static void reduce(const struct wf_diff_map *map, const double *a, const double *b, size_t n, struct part *p)
{
	memset(p, 0, sizeof *p);
	for (size_t i = 0; i < n; i++) {
		double x = a[i], y = b[i];
		if (map->a_add != 0)
			x = (float)(x + map->a_add);
		if (map->b_add != 0)
			y = (float)(y + map->b_add);
		if (!(x == y || (isnan(x) && isnan(y))))
			p->differ++;
		if (!isfinite(x) || !isfinite(y))
			continue;
		double d = fabs(x - y);
		if (d > p->max_abs)
			p->max_abs = d;
		p->n++;
		kadd(&p->d2, d * d);
		kadd(&p->a2, x * x);
		kadd(&p->b2, y * y);
		kadd(&p->ab, x * y);
	}
}

/* A worker's buffers, a chunk's worth each. */
struct scratch {
	uint8_t *ra, *rb;
	double *da, *db;
};

static void scratch_free(void *p)
{
	struct scratch *b = p;
	free(b->ra);
	free(b->rb);
	free(b->da);
	free(b->db);
	free(b);
}

static void *scratch_new(void *ctx)
{
	(void)ctx;
	struct scratch *b = calloc(1, sizeof *b);
	if (b && (b->ra = malloc((size_t)WF_STATS_CHUNK * 8)) && (b->rb = malloc((size_t)WF_STATS_CHUNK * 8)) &&
	    (b->da = malloc((size_t)WF_STATS_CHUNK * sizeof(double))) &&
	    (b->db = malloc((size_t)WF_STATS_CHUNK * sizeof(double))))
		return b;
	if (b)
		scratch_free(b);
	return NULL;
}

static enum wf_err run_chunk(void *ctx, uint64_t c, void *part, void *scratch)
{
	struct job *j = ctx;
	struct scratch *b = scratch;
	uint64_t first = c * WF_STATS_CHUNK, left = j->ta->nelems - first;
	size_t n = left < WF_STATS_CHUNK ? (size_t)left : WF_STATS_CHUNK, got;
	enum wf_err rc = wf_live_read_view(j->la, j->ta, first * j->esz_a, n * j->esz_a, b->ra, &got);
	if (rc != WF_OK)
		return rc;
	if (got != n * j->esz_a)
		return WF_ERR_RANGE;
	if ((rc = read_b(j, first, n, b->rb)) != WF_OK)
		return rc;
	wf_stats_to_double(j->ta, b->ra, n, b->da);
	wf_stats_to_double(j->tb, b->rb, n, b->db);
	reduce(j->map, b->da, b->db, n, part);
	if (j->done)
		atomic_fetch_add(j->done, n * j->esz_a);
	return WF_OK;
}

static void merge(void *into, const void *from_)
{
	struct part *a = into;
	const struct part *b = from_;
	a->n += b->n;
	a->differ += b->differ;
	if (b->max_abs > a->max_abs)
		a->max_abs = b->max_abs;
	struct ksum *to[] = {&a->d2, &a->a2, &a->b2, &a->ab};
	const struct ksum *from[] = {&b->d2, &b->a2, &b->b2, &b->ab};
	for (int k = 0; k < 4; k++) {
		kadd(to[k], from[k]->s);
		kadd(to[k], from[k]->c);
	}
}

static void finish(const struct part *p, uint64_t count, struct wf_diff *out)
{
	double n = (double)p->n, d2 = kval(&p->d2), a2 = kval(&p->a2), b2 = kval(&p->b2);
	out->count = count;
	out->finite = p->n;
	out->differ = p->differ;
	out->max_abs = p->n ? p->max_abs : NAN;
	out->rmse = p->n ? sqrt(d2 / n) : NAN;
	out->rel_rmse = p->n && a2 > 0 ? out->rmse / sqrt(a2 / n) : NAN;
	/* one square root where the product stays finite: identical tensors
	 * then give exactly 1 */
	double ab = kval(&p->ab), prod = a2 * b2;
	out->cosine = a2 > 0 && b2 > 0 ? (isfinite(prod) && prod > 0 ? ab / sqrt(prod) : ab / sqrt(a2) / sqrt(b2)) : NAN;
}

static enum wf_err diff_fail(const struct wf_tensor *ta, const struct wf_tensor *tb, enum wf_err rc, char *err)
{
	char qa[96], qb[96];
	wf_quote(qa, sizeof qa, ta->name, ta->name_len);
	wf_quote(qb, sizeof qb, tb->name, tb->name_len);
	switch (rc) {
	case WF_ERR_RANGE: return wf_fail(err, rc, "%s / %s: values cannot be read (no decoder, or bytes not in "
					  "the file)", qa, qb);
	case WF_ERR_CHANGED: return wf_fail(err, rc, "%s / %s: a file changed since it was opened", qa, qb);
	case WF_ERR_NOMEM: return wf_fail(err, rc, "%s / %s: out of memory", qa, qb);
	default: return wf_fail(err, rc, "%s / %s: values cannot be compared (%s, %s)", qa, qb,
				wf_view_dtype(ta), wf_view_dtype(tb));
	}
}

enum wf_err wf_diff_tensors(struct wf_live *la, const struct wf_tensor *ta, struct wf_live *lb,
			    const struct wf_tensor *tb, const struct wf_diff_map *map, unsigned nthreads,
			    _Atomic uint64_t *done, struct wf_diff *out, char *err)
{
	struct job j = {.la = la, .lb = lb, .ta = ta, .tb = tb, .map = map, .done = done,
			.esz_a = wf_view_elem_size(ta), .esz_b = wf_view_elem_size(tb)};
	memset(out, 0, sizeof *out);
	if (!wf_stats_supported(ta) || !wf_stats_supported(tb) || ta->nelems != tb->nelems ||
	    j.esz_a * ta->nelems != ta->size || j.esz_b * tb->nelems != tb->size)
		return diff_fail(ta, tb, ((enum wf_vk)ta->vk) == WF_VK_NONE || ((enum wf_vk)tb->vk) == WF_VK_NONE ?
				 WF_ERR_RANGE : WF_ERR_UNSUP, err);
	if (map->perm_heads) {
		j.rows = ta->ndim ? ta->shape[0] : 1;
		j.cols = j.rows ? ta->nelems / j.rows : 0;
		if (!ta->ndim || j.rows % (2 * map->perm_heads) != 0) {
			char q[96];
			return wf_fail(err, WF_ERR_UNSUP, "%s: %" PRIu64 " rows do not split into %" PRIu64 " heads of "
				       "rotary pairs", wf_quote(q, sizeof q, ta->name, ta->name_len), j.rows,
				       map->perm_heads);
		}
	}
	uint64_t nchunks = (ta->nelems + WF_STATS_CHUNK - 1) / WF_STATS_CHUNK;
	struct part total = {0};
	if (nchunks == 0) {
		finish(&total, 0, out);
		return WF_OK;
	}
	struct part *parts = calloc((size_t)nchunks, sizeof *parts);
	if (!parts)
		return diff_fail(ta, tb, WF_ERR_NOMEM, err);
	struct wf_chunks job = {.n = nchunks, .parts = parts, .part_size = sizeof *parts, .ctx = &j,
				.scratch = scratch_new, .scratch_free = scratch_free, .chunk = run_chunk, .merge = merge};
	enum wf_err rc = wf_pool_chunks(nthreads, &job);
	if (rc == WF_OK)
		finish(&parts[0], ta->nelems, out);
	free(parts);
	return rc == WF_OK ? WF_OK : diff_fail(ta, tb, rc, err);
}
