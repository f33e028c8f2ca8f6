/* wf_stats.c - summary statistics of a tensor's values (wf_stats.h). */
#include "view/wf_stats.h"
#include "base/wf_buf.h"
#include "base/wf_pool.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Below this, pairwise summation adds in a plain loop: the rounding error
 * of 64 doubles in a row is far below what float32 inputs carry. */
#define PAIRWISE_LEAF 64

double wf_sum_pairwise(const double *v, size_t n)
{
	if (n <= PAIRWISE_LEAF) {
		double s = 0;
		for (size_t i = 0; i < n; i++)
			s += v[i];
		return s;
	}
	size_t h = n / 2;
	return wf_sum_pairwise(v, h) + wf_sum_pairwise(v + h, n - h);
}

/* How view elements become doubles. */
enum conv {
	C_NONE, C_F32, C_F64, C_DECODE, C_BOOL,
	C_I8, C_I16, C_I32, C_I64, C_U8, C_U16, C_U32, C_U64,
};

static const struct {
	const char *dtype;
	enum conv c;
} raw_convs[] = {
	{"float32", C_F32}, {"float64", C_F64}, {"bool", C_BOOL},
	{"int8", C_I8}, {"int16", C_I16}, {"int32", C_I32}, {"int64", C_I64},
	{"uint8", C_U8}, {"uint16", C_U16}, {"uint32", C_U32}, {"uint64", C_U64},
};

/* The conversion for t's view, and for C_DECODE the one-element-per-block
 * decoder that turns its stored elements (half, bfloat16, float8) into
 * float32 exactly. */
static enum conv conv_of(const struct wf_tensor *t, wf_decode_fn *dec)
{
	const struct wf_type *ty = wf_type_get(t->type);
	*dec = NULL;
	if (!ty)
		return C_NONE;
	switch (((enum wf_vk)t->vk)) {
	case WF_VK_F32: return C_F32;
	case WF_VK_F16: *dec = wf_type_decoder(wf_type_get(WF_T_F16)); return C_DECODE;
	case WF_VK_BF16: *dec = wf_type_decoder(wf_type_get(WF_T_BF16)); return C_DECODE;
	case WF_VK_RAW: break;
	default: return C_NONE;
	}
	const char *dt = wf_view_dtype(t);
	for (size_t i = 0; i < WF_ARRAY_LEN(raw_convs); i++)
		if (strcmp(dt, raw_convs[i].dtype) == 0)
			return raw_convs[i].c;
	if (ty->vk == WF_VK_F32 && ty->blck == 1 && ty->decode) {
		*dec = wf_type_decoder(ty);
		return C_DECODE;
	}
	return C_NONE;
}

bool wf_stats_supported(const struct wf_tensor *t)
{
	wf_decode_fn dec;
	return conv_of(t, &dec) != C_NONE;
}

/* Widens n elements of C type T at raw into out. */
#define WIDEN(T)                                                  \
	do {                                                      \
		const T *p_ = raw;                                \
		for (size_t i_ = 0; i_ < n; i_++)                 \
			out[i_] = (double)p_[i_];                 \
	} while (0)

static void convert(enum conv c, wf_decode_fn dec, const void *raw, size_t n, double *out, float *tmp)
{
	switch (c) {
	case C_F32: WIDEN(float); break;
	case C_F64: WIDEN(double); break;
	case C_I8: WIDEN(int8_t); break;
	case C_I16: WIDEN(int16_t); break;
	case C_I32: WIDEN(int32_t); break;
	case C_I64: WIDEN(int64_t); break;
	case C_U8: WIDEN(uint8_t); break;
	case C_U16: WIDEN(uint16_t); break;
	case C_U32: WIDEN(uint32_t); break;
	case C_U64: WIDEN(uint64_t); break;
	case C_BOOL: {
		const uint8_t *p = raw;
		for (size_t i = 0; i < n; i++)
			out[i] = p[i] != 0;
		break;
	}
	case C_DECODE:
		dec(raw, tmp, n);
		for (size_t i = 0; i < n; i++)
			out[i] = tmp[i];
		break;
	case C_NONE:
		memset(out, 0, n * sizeof *out);
		break;
	}
}

void wf_stats_to_double(const struct wf_tensor *t, const void *raw, size_t n, double *out)
{
	wf_decode_fn dec;
	enum conv c = conv_of(t, &dec);
	if (c != C_DECODE) {
		convert(c, dec, raw, n, out, NULL);
		return;
	}
	float tmp[1024];
	const uint8_t *p = raw;
	size_t esz = wf_view_elem_size(t);
	for (size_t done = 0; done < n;) {
		size_t k = n - done < WF_ARRAY_LEN(tmp) ? n - done : WF_ARRAY_LEN(tmp);
		convert(c, dec, p + done * esz, k, out + done, tmp);
		done += k;
	}
}

/* One chunk's partial result; merged in a fixed order. */
struct part {
	uint64_t n, zeros, nan, inf; /* n: finite elements */
	double mean, m2, min, max, absmax;
};

/* Reduces v[0..n) (overwritten) into *p: a two-pass mean and sum of
 * squared deviations, both summed pairwise. */
static void reduce(double *v, size_t n, struct part *p)
{
	size_t k = 0;
	memset(p, 0, sizeof *p);
	p->min = INFINITY;
	p->max = -INFINITY;
	for (size_t i = 0; i < n; i++) {
		double x = v[i];
		if (isnan(x)) {
			p->nan++;
			continue;
		}
		if (isinf(x)) {
			p->inf++;
			continue;
		}
		p->zeros += x == 0;
		if (x < p->min)
			p->min = x;
		if (x > p->max)
			p->max = x;
		if (fabs(x) > p->absmax)
			p->absmax = fabs(x);
		v[k++] = x;
	}
	p->n = k;
	if (!k)
		return;
	p->mean = wf_sum_pairwise(v, k) / (double)k;
	for (size_t i = 0; i < k; i++)
		v[i] = (v[i] - p->mean) * (v[i] - p->mean);
	p->m2 = wf_sum_pairwise(v, k);
}

/* Chan et al.'s update: a absorbs b. */
static void merge(void *into, const void *from)
{
	struct part *a = into;
	const struct part *b = from;
	uint64_t n = a->n + b->n;
	if (b->n) {
		double d = b->mean - a->mean;
		double fa = (double)a->n, fb = (double)b->n, fn = (double)n;
		a->mean += d * (fb / fn);
		a->m2 += b->m2 + d * d * (fa * fb / fn);
		if (b->min < a->min)
			a->min = b->min;
		if (b->max > a->max)
			a->max = b->max;
		if (b->absmax > a->absmax)
			a->absmax = b->absmax;
	}
	a->n = n;
	a->zeros += b->zeros;
	a->nan += b->nan;
	a->inf += b->inf;
}

struct job {
	struct wf_live *lv;
	const struct wf_tensor *t;
	enum conv conv;
	wf_decode_fn dec;
	unsigned esz;
	_Atomic uint64_t *done;
};

/* A worker's buffers: a chunk's worth, or the tensor's when it is
 * smaller (5 MiB for each one-float tensor of a model of a million was
 * 0.3 ms a tensor; a fresh mapping each time under ASan: 7.5 ms). */
struct scratch {
	uint8_t *raw;
	float *tmp;
	double *dbl;
};

static void scratch_free(void *p)
{
	struct scratch *b = p;
	free(b->raw);
	free(b->tmp);
	free(b->dbl);
	free(b);
}

static void *scratch_new(void *ctx)
{
	const struct job *j = ctx;
	size_t n = j->t->nelems < WF_STATS_CHUNK ? (size_t)j->t->nelems : WF_STATS_CHUNK;
	struct scratch *b = calloc(1, sizeof *b);
	if (b && (b->raw = malloc(n * 8)) && (b->tmp = malloc(n * sizeof(float))) && (b->dbl = malloc(n * sizeof(double))))
		return b;
	if (b)
		scratch_free(b);
	return NULL;
}

static enum wf_err run_chunk(void *ctx, uint64_t c, void *part, void *scratch)
{
	const struct job *j = ctx;
	struct scratch *b = scratch;
	uint64_t first = c * WF_STATS_CHUNK;
	uint64_t n = j->t->nelems - first < WF_STATS_CHUNK ? j->t->nelems - first : WF_STATS_CHUNK;
	size_t len = (size_t)n * j->esz, got = 0;
	/* a float32 view reads straight into the floats it widens */
	void *into = j->conv == C_F32 ? (void *)b->tmp : (void *)b->raw;
	enum wf_err rc = wf_live_read_view(j->lv, j->t, first * j->esz, len, into, &got);
	if (rc != WF_OK)
		return rc;
	if (got != len)
		return WF_ERR_RANGE;
	convert(j->conv, j->dec, into, (size_t)n, b->dbl, b->tmp);
	reduce(b->dbl, (size_t)n, part);
	if (j->done)
		atomic_fetch_add(j->done, len);
	return WF_OK;
}

static void finish(const struct part *p, uint64_t count, struct wf_stats *st)
{
	st->count = count;
	st->finite = p->n;
	st->zeros = p->zeros;
	st->nan = p->nan;
	st->inf = p->inf;
	if (p->n == 0) {
		st->min = st->max = st->mean = st->std = st->absmax = NAN;
		return;
	}
	st->min = p->min;
	st->max = p->max;
	st->absmax = p->absmax;
	st->mean = p->mean;
	st->std = sqrt(p->m2 / (double)p->n);
}

static enum wf_err stats_fail(const struct wf_tensor *t, enum wf_err rc, char *err)
{
	char q[96];
	wf_quote(q, sizeof q, t->name, t->name_len);
	switch (rc) {
	case WF_ERR_UNSUP: return wf_fail(err, rc, "tensor %s: %s values have no statistics", q, wf_view_dtype(t));
	case WF_ERR_RANGE: return wf_fail(err, rc, "tensor %s: its values cannot be read (no decoder for %s, or "
					  "bytes not in the file)", q, wf_type_get(t->type)->name);
	case WF_ERR_CHANGED: return wf_fail(err, rc, "tensor %s: a file of the model changed since it was opened", q);
	case WF_ERR_NOMEM: return wf_fail(err, rc, "tensor %s: out of memory", q);
	default: return wf_fail(err, rc, "tensor %s: read failed", q);
	}
}

enum wf_err wf_stats_tensor(struct wf_live *lv, const struct wf_tensor *t, unsigned nthreads,
			    _Atomic uint64_t *done, struct wf_stats *st, char *err)
{
	struct job j = {.lv = lv, .t = t, .esz = wf_view_elem_size(t), .done = done};
	memset(st, 0, sizeof *st);
	j.conv = conv_of(t, &j.dec);
	if (j.conv == C_NONE)
		return stats_fail(t, ((enum wf_vk)t->vk) == WF_VK_NONE ? WF_ERR_RANGE : WF_ERR_UNSUP, err);
	if (j.esz > 8 || (uint64_t)j.esz * t->nelems != t->size) {
		char q[96];
		return wf_fail(err, WF_ERR_UNSUP, "tensor %s: stored as %s blocks, whose bytes are not its values "
			       "(drop -o dtype=stored)", wf_quote(q, sizeof q, t->name, t->name_len),
			       wf_type_get(t->type)->name);
	}
	uint64_t nchunks = (t->nelems + WF_STATS_CHUNK - 1) / WF_STATS_CHUNK;
	struct part total = {.min = INFINITY, .max = -INFINITY};
	if (nchunks == 0) {
		finish(&total, 0, st);
		return WF_OK;
	}
	struct part *parts = calloc((size_t)nchunks, sizeof *parts);
	if (!parts)
		return stats_fail(t, WF_ERR_NOMEM, err);
	struct wf_chunks job = {.n = nchunks, .parts = parts, .part_size = sizeof *parts, .ctx = &j,
				.scratch = scratch_new, .scratch_free = scratch_free, .chunk = run_chunk, .merge = merge};
	enum wf_err rc = wf_pool_chunks(nthreads, &job);
	if (rc == WF_OK)
		finish(&parts[0], t->nelems, st);
	free(parts);
	return rc == WF_OK ? WF_OK : stats_fail(t, rc, err);
}
