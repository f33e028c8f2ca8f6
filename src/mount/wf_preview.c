/* wf_preview.c - NAME.png heatmaps of tensors (wf_preview.h). */
#include "mount/wf_preview.h"
#include "base/wf_buf.h"
#include "view/wf_stats.h"
#include "view/wf_view.h"

#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

/* A stored deflate block holds at most this many bytes. */
#define STORED_MAX 65535u

/* Pixel kinds besides a value. */
enum { PX_EMPTY = 0, PX_VALUE, PX_NAN, PX_POSINF, PX_NEGINF };

/* Rows and columns of t folded to 2-D; a strip for 1-D and scalars.
 * Meaningful only when t has elements (then cols > 0). */
static void fold(const struct wf_tensor *t, uint64_t *rows, uint64_t *cols)
{
	*cols = t->ndim ? t->shape[t->ndim - 1] : 1;
	*rows = *cols ? t->nelems / *cols : 0;
}

uint64_t wf_preview_dims(const struct wf_tensor *t, uint32_t *w, uint32_t *h)
{
	uint64_t rows, cols;
	fold(t, &rows, &cols);
	if (t->nelems == 0) {
		*w = *h = 1;
	} else {
		*w = (uint32_t)(cols < WF_PREVIEW_MAX ? cols : WF_PREVIEW_MAX);
		*h = t->ndim < 2 ? WF_PREVIEW_STRIP : (uint32_t)(rows < WF_PREVIEW_MAX ? rows : WF_PREVIEW_MAX);
	}
	uint64_t raw = (uint64_t)*h * (1 + 3 * (uint64_t)*w);
	uint64_t blocks = (raw + STORED_MAX - 1) / STORED_MAX;
	uint64_t zlen = 2 + raw + 5 * blocks + 4;
	return 8 + (12 + 13) + (12 + zlen) + 12;
}

/* ---------------------------------------------------------------- pixels */

struct canvas {
	uint32_t w, h;
	uint64_t rows, cols;
	float *v;       /* [w*h] the value of largest magnitude so far */
	uint8_t *kind;  /* [w*h] PX_* */
};

static void put(struct canvas *cv, size_t px, double x)
{
	uint8_t k = cv->kind[px];
	if (k == PX_NAN)
		return;
	if (isnan(x)) {
		cv->kind[px] = PX_NAN;
	} else if (isinf(x)) {
		if (k != PX_POSINF && k != PX_NEGINF)
			cv->kind[px] = x > 0 ? PX_POSINF : PX_NEGINF;
	} else if (k == PX_EMPTY) {
		cv->kind[px] = PX_VALUE;
		cv->v[px] = (float)x;
	} else if (k == PX_VALUE && fabs(x) > fabsf(cv->v[px])) {
		cv->v[px] = (float)x;
	}
}

/* Folds the values v[0..n) of elements first.. into the canvas. */
static void paint(struct canvas *cv, uint64_t first, const double *v, size_t n)
{
	uint64_t r = first / cv->cols, c = first % cv->cols;
	for (size_t i = 0; i < n; i++) {
		uint64_t y = r * cv->h / cv->rows, x = c * cv->w / cv->cols;
		put(cv, (size_t)(y * cv->w + x), v[i]);
		if (++c == cv->cols) {
			c = 0;
			r++;
		}
	}
}

static int cmp_float(const void *a, const void *b)
{
	float x = *(const float *)a, y = *(const float *)b;
	return (x > y) - (x < y);
}

/* The colour scale s (wf_preview.h). */
static double scale_of(const struct canvas *cv)
{
	size_t n = 0, px = (size_t)cv->w * cv->h;
	float *m = malloc(px * sizeof *m);
	if (!m)
		return 1;
	for (size_t i = 0; i < px; i++)
		if (cv->kind[i] == PX_VALUE)
			m[n++] = fabsf(cv->v[i]);
	double s = 0;
	if (n) {
		qsort(m, n, sizeof *m, cmp_float);
		s = m[(n - 1) * 99 / 100];
		if (s == 0)
			s = m[n - 1];
	}
	free(m);
	return s > 0 ? s : 1;
}

static void colour(const struct canvas *cv, size_t px, double s, uint8_t rgb[3])
{
	static const uint8_t special[][3] = {
		[PX_EMPTY] = {128, 128, 128}, [PX_NAN] = {255, 0, 255},
		[PX_POSINF] = {255, 255, 0}, [PX_NEGINF] = {0, 255, 255},
	};
	if (cv->kind[px] != PX_VALUE) {
		memcpy(rgb, special[cv->kind[px]], 3);
		return;
	}
	double t = (double)cv->v[px] / s;
	t = t > 1 ? 1 : t < -1 ? -1 : t;
	uint8_t k = (uint8_t)floor(255.0 * (1.0 - fabs(t)) + 0.5);
	rgb[0] = t >= 0 ? 255 : k;
	rgb[1] = k;
	rgb[2] = t >= 0 ? k : 255;
}

/* ---------------------------------------------------------------- PNG */

static uint8_t *be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
	return p + 4;
}

/* Closes the chunk whose length field is at start: its CRC over type and
 * data.  Returns the end. */
static uint8_t *chunk_end(uint8_t *start, uint8_t *end)
{
	uint32_t len = (uint32_t)(end - start - 8);
	be32(start, len);
	uLong crc = crc32(0L, start + 4, len + 4);
	return be32(end, (uint32_t)crc);
}

/* Writes the PNG of the canvas into png (exactly wf_preview_dims bytes). */
static void encode(const struct canvas *cv, double s, uint8_t *png)
{
	static const uint8_t sig[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
	uint8_t *p = png, *c;
	memcpy(p, sig, 8);
	p += 8;
	c = p;
	p = be32(p, 0);
	memcpy(p, "IHDR", 4);
	p = be32(be32(p + 4, cv->w), cv->h);
	*p++ = 8; /* bit depth */
	*p++ = 2; /* RGB */
	*p++ = 0; /* deflate */
	*p++ = 0; /* adaptive filters (every row uses none) */
	*p++ = 0; /* not interlaced */
	p = chunk_end(c, p);

	c = p;
	p = be32(p, 0);
	memcpy(p, "IDAT", 4);
	p += 4;
	*p++ = 0x78; /* zlib: deflate, 32 KiB window */
	*p++ = 0x01; /* no dictionary, level "fastest"; 0x7801 % 31 == 0 */
	/* row by row into a scanline, then into stored blocks of at most
	 * STORED_MAX bytes, a block header wherever one starts */
	uint64_t left = (uint64_t)cv->h * (1 + 3 * (uint64_t)cv->w);
	uint32_t in_block = 0;
	uLong adler = adler32(0L, Z_NULL, 0);
	uint8_t line[1 + 3 * WF_PREVIEW_MAX];
	for (uint32_t y = 0; y < cv->h; y++) {
		size_t n = 0;
		line[n++] = 0; /* filter: none */
		for (uint32_t x = 0; x < cv->w; x++, n += 3)
			colour(cv, (size_t)y * cv->w + x, s, line + n);
		adler = adler32(adler, line, (uInt)n);
		for (size_t k = 0; k < n;) {
			if (!in_block) {
				in_block = left < STORED_MAX ? (uint32_t)left : STORED_MAX;
				*p++ = left == in_block ? 1 : 0; /* BFINAL on the last; BTYPE 00: stored */
				*p++ = (uint8_t)in_block;
				*p++ = (uint8_t)(in_block >> 8);
				*p++ = (uint8_t)~in_block;
				*p++ = (uint8_t)(~in_block >> 8);
			}
			size_t take = n - k < in_block ? n - k : in_block;
			memcpy(p, line + k, take);
			p += take;
			k += take;
			in_block -= (uint32_t)take;
			left -= take;
		}
	}
	p = be32(p, (uint32_t)adler);
	p = chunk_end(c, p);

	c = p;
	p = be32(p, 0);
	memcpy(p, "IEND", 4);
	chunk_end(c, p + 4);
}

/* ---------------------------------------------------------------- rendering */

static enum wf_err paint_all(struct wf_live *lv, const struct wf_tensor *t, struct canvas *cv)
{
	unsigned esz = wf_view_elem_size(t);
	uint8_t *raw = malloc((size_t)WF_STATS_CHUNK * 8);
	double *dbl = malloc((size_t)WF_STATS_CHUNK * sizeof *dbl);
	enum wf_err rc = raw && dbl ? WF_OK : WF_ERR_NOMEM;
	for (uint64_t first = 0; rc == WF_OK && first < t->nelems; first += WF_STATS_CHUNK) {
		size_t n = t->nelems - first < WF_STATS_CHUNK ? (size_t)(t->nelems - first) : WF_STATS_CHUNK, got;
		rc = wf_live_read_view(lv, t, first * esz, n * esz, raw, &got);
		if (rc == WF_OK && got != n * esz)
			rc = WF_ERR_RANGE;
		if (rc != WF_OK)
			break;
		wf_stats_to_double(t, raw, n, dbl);
		paint(cv, first, dbl, n);
	}
	free(raw);
	free(dbl);
	return rc;
}

enum wf_err wf_preview_render(struct wf_live *lv, const struct wf_tensor *t0, uint8_t **png, size_t *len)
{
	struct wf_tensor t = *t0;
	char err[WF_ERRLEN];
	*png = NULL;
	*len = 0;
	/* the picture is of the values, whatever -o dtype the files hold */
	if (wf_tensor_set_view(&t, WF_VK_F32, err) != WF_OK)
		return WF_ERR_RANGE;
	if (t.nelems && (!wf_stats_supported(&t) || (uint64_t)wf_view_elem_size(&t) * t.nelems != t.size))
		return WF_ERR_RANGE;
	struct canvas cv = {0};
	uint64_t size = wf_preview_dims(&t, &cv.w, &cv.h);
	size_t px = (size_t)cv.w * cv.h;
	fold(&t, &cv.rows, &cv.cols);
	cv.v = calloc(px, sizeof *cv.v);
	cv.kind = calloc(px, 1);
	uint8_t *out = malloc((size_t)size);
	enum wf_err rc = cv.v && cv.kind && out ? WF_OK : WF_ERR_NOMEM;
	double s = 1;
	if (rc == WF_OK && t.nelems) {
		/* a strip paints its first row, takes its scale from it, and
		 * the other rows repeat it */
		uint32_t h = cv.h;
		if (t.ndim < 2)
			cv.h = 1;
		rc = paint_all(lv, &t, &cv);
		s = scale_of(&cv);
		cv.h = h;
		for (uint32_t y = 1; t.ndim < 2 && y < cv.h; y++) {
			memcpy(cv.v + (size_t)y * cv.w, cv.v, cv.w * sizeof *cv.v);
			memcpy(cv.kind + (size_t)y * cv.w, cv.kind, cv.w);
		}
	}
	if (rc == WF_OK) {
		encode(&cv, s, out);
		*png = out;
		*len = (size_t)size;
		out = NULL;
	}
	free(out);
	free(cv.v);
	free(cv.kind);
	return rc;
}

/* ---------------------------------------------------------------- the cache */

/* Most rendered files kept at once (each entry is scanned on a lookup). */
#define CACHE_ENTRIES 4096

struct entry {
	uint32_t tensor;
	unsigned refs;      /* readers copying from it: never evicted meanwhile */
	uint8_t *png;
	size_t len;
	uint64_t stamp;     /* last use */
};

struct wf_previews {
	pthread_mutex_t lock;   /* the entries */
	pthread_mutex_t render; /* one render at a time: memory stays bounded */
	struct entry e[CACHE_ENTRIES];
	size_t n;
	size_t bytes;
	uint64_t clock;
};

struct wf_previews *wf_previews_new(void)
{
	struct wf_previews *pv = calloc(1, sizeof *pv);
	if (pv) {
		pthread_mutex_init(&pv->lock, NULL);
		pthread_mutex_init(&pv->render, NULL);
	}
	return pv;
}

void wf_previews_free(struct wf_previews *pv)
{
	if (!pv)
		return;
	for (size_t i = 0; i < pv->n; i++)
		free(pv->e[i].png);
	pthread_mutex_destroy(&pv->lock);
	pthread_mutex_destroy(&pv->render);
	free(pv);
}

/* Under pv->lock: whether tensor's file is cached; if so it is
 * referenced and *png, *len point at it (the bytes stay put while
 * referenced, though the entry itself may move). */
static bool lookup(struct wf_previews *pv, uint32_t tensor, const uint8_t **png, size_t *len)
{
	for (size_t i = 0; i < pv->n; i++) {
		if (pv->e[i].tensor == tensor) {
			pv->e[i].refs++;
			pv->e[i].stamp = ++pv->clock;
			*png = pv->e[i].png;
			*len = pv->e[i].len;
			return true;
		}
	}
	return false;
}

/* Under pv->lock: drops unreferenced entries, oldest first, until the
 * cache fits its budget and has a free slot. */
static void evict(struct wf_previews *pv)
{
	while (pv->bytes > WF_PREVIEW_CACHE || pv->n == CACHE_ENTRIES) {
		size_t old = pv->n;
		for (size_t i = 0; i < pv->n; i++)
			if (!pv->e[i].refs && (old == pv->n || pv->e[i].stamp < pv->e[old].stamp))
				old = i;
		if (old == pv->n)
			return; /* everything is being read: over budget until released */
		pv->bytes -= pv->e[old].len;
		free(pv->e[old].png);
		pv->e[old] = pv->e[--pv->n];
	}
}

/* The rendered file of tensor i, referenced: copy from *png, then call
 * release.  Renders it when absent. */
static enum wf_err acquire(struct wf_previews *pv, struct wf_live *lv, uint32_t i, const uint8_t **png, size_t *len)
{
	pthread_mutex_lock(&pv->lock);
	bool hit = lookup(pv, i, png, len);
	pthread_mutex_unlock(&pv->lock);
	if (hit)
		return WF_OK;
	pthread_mutex_lock(&pv->render);
	pthread_mutex_lock(&pv->lock);
	hit = lookup(pv, i, png, len); /* rendered while we waited */
	pthread_mutex_unlock(&pv->lock);
	enum wf_err rc = WF_OK;
	if (!hit) {
		uint8_t *out;
		size_t n;
		rc = wf_preview_render(lv, &lv->m->tensors[i], &out, &n);
		if (rc == WF_OK) {
			pthread_mutex_lock(&pv->lock);
			evict(pv);
			if (pv->n < CACHE_ENTRIES) {
				pv->e[pv->n++] = (struct entry){.tensor = i, .refs = 1, .png = out, .len = n,
								.stamp = ++pv->clock};
				pv->bytes += n;
				*png = out;
				*len = n;
			} else { /* every slot being read at once: cannot happen with fewer readers */
				free(out);
				rc = WF_ERR_NOMEM;
			}
			pthread_mutex_unlock(&pv->lock);
		}
	}
	pthread_mutex_unlock(&pv->render);
	return rc;
}

static void release(struct wf_previews *pv, uint32_t i)
{
	pthread_mutex_lock(&pv->lock);
	for (size_t k = 0; k < pv->n; k++)
		if (pv->e[k].tensor == i && pv->e[k].refs)
			pv->e[k].refs--;
	evict(pv);
	pthread_mutex_unlock(&pv->lock);
}

enum wf_err wf_preview_copy(struct wf_previews *pv, struct wf_live *lv, uint32_t tensor, uint64_t off, size_t len,
			    void *out, size_t *got)
{
	*got = 0;
	const uint8_t *png;
	size_t n;
	enum wf_err rc = acquire(pv, lv, tensor, &png, &n);
	if (rc != WF_OK)
		return rc;
	size_t take = off >= n ? 0 : n - off < len ? (size_t)(n - off) : len;
	memcpy(out, png + off, take);
	release(pv, tensor);
	/* after the copy, as for every file: a cached picture of a file that
	 * has changed since must not be served (an empty read of the tensor
	 * is the guarded path's check alone) */
	struct wf_tensor tv = lv->m->tensors[tensor];
	char err[WF_ERRLEN];
	size_t none;
	uint8_t dummy;
	if (wf_tensor_set_view(&tv, WF_VK_F32, err) != WF_OK)
		return WF_ERR_RANGE;
	if ((rc = wf_live_read_view(lv, &tv, 0, 0, &dummy, &none)) != WF_OK)
		return rc;
	*got = take;
	return WF_OK;
}
