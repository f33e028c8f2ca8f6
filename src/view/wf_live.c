/* wf_live.c - reads that never return bytes of a changed file (wf_live.h). */
#include "view/wf_live.h"
#include "view/wf_hfq.h"
#include "view/wf_view.h"
#include "base/wf_bus.h"
#include "view/wf_prefetch.h"
#include "model/wf_maps.h"
#include "arch/wf_arch.h"
#include "codec/wf_decode.h"
#include "codec/wf_round.h"

#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>

void (*wf_live_test_hook)(const struct wf_live *lv, uint32_t part);

int wf_live_catch_sigbus(void)
{
	return wf_bus_catch();
}

enum wf_err wf_live_init(struct wf_live *lv, const struct wf_model *m, wf_seg_fn seg, const void *files,
			 wf_notice_fn notice, void *ctx)
{
	memset(lv, 0, sizeof *lv);
	lv->changed = calloc(m->n_parts ? m->n_parts : 1, sizeof *lv->changed);
	if (!lv->changed)
		return WF_ERR_NOMEM;
	for (uint32_t i = 0; i < m->n_parts; i++)
		atomic_init(&lv->changed[i], false);
	lv->m = m;
	lv->seg = seg;
	lv->files = files;
	lv->notice = notice;
	lv->ctx = ctx;
	return WF_OK;
}

static void gather_buf_drop(void);

void wf_live_free(struct wf_live *lv)
{
	free(lv->changed);
	lv->changed = NULL;
	gather_buf_drop();
}

/* Parts a read touched, to check after the copy. */
#define TOUCH_MAX 16
struct touched {
	uint32_t part[TOUCH_MAX];
	unsigned n;
};

/* Marks `part` changed, saying why once. */
static enum wf_err changed(struct wf_live *lv, uint32_t part, const char *why)
{
	if (!atomic_exchange(&lv->changed[part], true) && lv->notice)
		lv->notice(lv->ctx, lv->m->n_parts > 1 ? lv->m->parts[part].name : NULL, why);
	return WF_ERR_CHANGED;
}

static enum wf_err check_part(struct wf_live *lv, uint32_t part)
{
	char why[WF_ERRLEN];
	if (wf_model_check(lv->m, part, why) == WF_OK)
		return WF_OK;
	return changed(lv, part, why);
}

/* The part whose pooled mapping (wf_maps.h) this thread is reading, to
 * give back after a SIGBUS too; static storage, so its value survives the
 * jump. */
#define NO_PART UINT32_MAX
static __thread volatile uint32_t held_part = NO_PART;

/* The bytes of a part mapped on first read, taken from the pool (held_part
 * says so until release_part). */
static enum wf_err part_bytes(struct wf_live *lv, uint32_t part, const uint8_t **data)
{
	const struct wf_part *p = &lv->m->parts[part];
	*data = p->data;
	if (p->data)
		return WF_OK;
	char why[WF_ERRLEN];
	enum wf_err rc = wf_maps_get(lv->m->maps, lv->m->parts, part, data, why);
	if (rc == WF_ERR_CHANGED)
		return changed(lv, part, why);
	if (rc == WF_OK)
		held_part = part;
	return rc;
}

static void release_part(struct wf_live *lv)
{
	uint32_t part = held_part;
	if (part == NO_PART)
		return;
	held_part = NO_PART;
	wf_maps_put(lv->m->maps, lv->m->parts, part);
}

/* Notes that a read touched `part`; a part that does not fit the list is
 * checked at once, which keeps the promise as well: its bytes are copied
 * by then. */
static enum wf_err note_part(struct wf_live *lv, struct touched *tc, uint32_t part)
{
	for (unsigned i = 0; i < tc->n; i++)
		if (tc->part[i] == part)
			return WF_OK;
	if (tc->n < TOUCH_MAX) {
		tc->part[tc->n++] = part;
		return WF_OK;
	}
	return check_part(lv, part);
}

/* Source bytes a decoded view reads by pread at a time (on the stack). */
#define WF_LIVE_BOUNCE (32u << 10)

/* -1 until decided: 1 read source bytes with pread, 0 through the mapping. */
static atomic_int pread_mode = -1;

void wf_live_set_pread(int on)
{
	atomic_store(&pread_mode, on ? 1 : 0);
}

static bool use_pread(void)
{
	int m = atomic_load_explicit(&pread_mode, memory_order_relaxed);
	if (m < 0) {
		const char *e = getenv("WEIGHTFS_NO_PREAD");
		m = e && *e && strcmp(e, "0") != 0 ? 0 : 1;
		atomic_store(&pread_mode, m);
	}
	return m == 1;
}

/* Copies view bytes of one tensor, noting its part (every part of a layer
 * made of several stored tensors, which may lie in several files).
 * mapped: through the mapping even where pread is the rule (a transposed
 * read's thousands of runs of a few bytes: a system call each costs more
 * than the page faults, which the next reads of the rows share). */
static enum wf_err view_piece_as(struct wf_live *lv, struct touched *tc, const struct wf_tensor *t, uint64_t off,
				 size_t len, uint8_t *out, size_t *got, bool mapped)
{
	uint32_t files[WF_HFQ_MAX_PARTS + 1], n = 0;
	files[n++] = t->part;
	for (unsigned k = 0; t->q && k < WF_HFQ_MAX_PARTS; k++)
		if (t->q->part[k].p)
			files[n++] = t->q->part[k].file;
	for (uint32_t k = 0; k < n; k++)
		if (files[k] >= lv->m->n_parts || atomic_load_explicit(&lv->changed[files[k]], memory_order_relaxed))
			return WF_ERR_CHANGED;
	const struct wf_part *p = &lv->m->parts[t->part];
	const uint8_t *data = p->data;
	bool pooled = !data; /* a model of few parts never is: nothing more on its path */
	enum wf_err rc = pooled ? part_bytes(lv, t->part, &data) : WF_OK;
	if (rc != WF_OK)
		return rc;
	if (!t->q)
		wf_prefetch_read(t, p->fd, off, len); /* network storage: one reader, ahead */
	if (!t->q && !pooled && p->fd >= 0 && !mapped && use_pread()) {
		/* pread, not the mapping: a page's first touch through the
		 * mapping is a fault, several times the copy on a VM
		 * (docs/performance.md, model.gguf) */
		uint8_t bounce[WF_LIVE_BOUNCE];
		rc = wf_view_pread(t, p->fd, p->len, off, len, out, got, bounce, sizeof bounce);
		/* the file ended early: what the mapping's SIGBUS would have said */
		if (rc == WF_ERR_CHANGED && check_part(lv, t->part) == WF_OK)
			changed(lv, t->part, "shorter than when it was opened");
	} else {
		rc = wf_view_read(t, data, p->len, off, len, out, got);
	}
	if (rc == WF_OK && wf_live_test_hook)
		wf_live_test_hook(lv, t->part);
	if (pooled)
		release_part(lv);
	for (uint32_t k = 0; k < n && rc == WF_OK; k++)
		rc = note_part(lv, tc, files[k]);
	return rc;
}

static enum wf_err view_piece(struct wf_live *lv, struct touched *tc, const struct wf_tensor *t, uint64_t off,
			      size_t len, uint8_t *out, size_t *got)
{
	return view_piece_as(lv, tc, t, off, len, out, got, false);
}

/* Float32 bytes quant_piece makes before it encodes them: well inside
 * L1/L2. */
#define XFORM_CHUNK (32u << 10)

/* Bytes xform_floats reads before it fixes them: still in L2 for the
 * fix, and one pread each (model.gguf, BF16 kept, at 0.81-0.93x the bf16
 * view with 32 KiB, 0.94-1.00x with 256 KiB, 0.93-1.14x with 1 MiB: make
 * bench part 15, load 1.5-2).  -DFIX_CHUNK=N to measure another. */
#ifndef FIX_CHUNK
#define FIX_CHUNK (256u << 10)
#endif

/* A buffer xform_piece holds while it copies, for after_sigbus to free. */
static __thread void *xform_tmp;

/* The element fix-ups of a made tensor (wf_xform) over n whole elements. */
static void xform_fix(const struct wf_xform *xf, uint8_t *p, size_t n)
{
	if (xf->add) {
		for (size_t i = 0; i < n; i++) {
			float v;
			memcpy(&v, p + 4 * i, 4);
			v = xf->add == 3 ? v - 1.0f : v + 1.0f;
			if (xf->add == 2)
				v = wf_f16_to_f32(wf_f32_to_f16(v));
			memcpy(p + 4 * i, &v, 4);
		}
	} else if (xf->quiet_bf16) {
		wf_bf16_quiet_n(p, n);
	}
}

/* Source rows of a permuted q/k tensor read at once by perm_rows. */
#define PERM_CHUNK (64u << 10)

/* Whether source row h0 + j of a head of d rows holds one of the output
 * rows [a, b), and which: wf_qk_row within one head, without dividing. */
static bool perm_wanted(bool to_hf, uint64_t h0, uint64_t d, uint64_t j, uint64_t a, uint64_t b, uint64_t *o)
{
	uint64_t half = d / 2;
	*o = h0 + (to_hf ? (j & 1) * half + j / 2 : (j < half ? 2 * j : 2 * (j - half) + 1));
	return *o >= a && *o < b;
}

/* Whole output rows [a, b) of a q/k tensor whose rows are permuted, all in
 * one head, to out: the source rows they come from are read in runs (at
 * most PERM_CHUNK, from a wanted row to the last wanted one; rows between
 * that are not wanted are read too: in hf/'s order every other one) and
 * each wanted row copied to where it goes.  Row by row, the reads jump between the head's two halves, which
 * the prefetcher does not follow (8 Q8_0 q tensors of 4 MiB: 6.2 ms
 * against 0.6 unpermuted), and with source bytes by pread each row is a
 * system call (27 ms).  A range inside a head still makes at most two
 * runs: replies seldom start on a head.  Rows of PERM_CHUNK or more go
 * straight to out. */
static enum wf_err perm_rows(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t a,
			     uint64_t b, uint64_t rows, uint64_t rb, uint8_t *out)
{
	uint8_t tmp[PERM_CHUNK];
	uint64_t d = rows / xf->perm_heads, h0 = a - a % d, per = rb < PERM_CHUNK ? PERM_CHUNK / rb : 1, o;
	enum wf_err rc = WF_OK;
	bool to_hf = xf->perm_to_hf;
	for (uint64_t s = h0; s < h0 + d && rc == WF_OK;) {
		if (!perm_wanted(to_hf, h0, d, s - h0, a, b, &o)) {
			s++;
			continue;
		}
		uint64_t k = 1, last = h0 + d - s < per ? h0 + d : s + per, o2; /* the run: s to its last wanted row */
		for (uint64_t u = s + 1; u < last; u++)
			if (perm_wanted(to_hf, h0, d, u - h0, a, b, &o2))
				k = u - s + 1;
		uint8_t *dst = per > 1 ? tmp : out + (o - a) * rb;
		size_t g;
		rc = view_piece(lv, tc, xf->t, s * rb, (size_t)(k * rb), dst, &g);
		if (rc == WF_OK && g != k * rb)
			rc = WF_ERR_RANGE;
		for (uint64_t i = 0; per > 1 && rc == WF_OK && i < k; i++)
			if (perm_wanted(to_hf, h0, d, s + i - h0, a, b, &o))
				memcpy(out + (o - a) * rb, tmp + i * rb, (size_t)rb);
		s += k;
	}
	return rc;
}

/* Source bytes head_slice_t reads at once: a bound on the stack it uses,
 * whatever the tensor (a DeepSeek-V3 k_b of 16 MiB is read 32 KiB at a
 * time, never whole). */
#define HS_CHUNK (32u << 10)

/* The shape of a head-sliced tensor (wf_xform.hs): rows, row bytes,
 * element bytes, rows of a head; false if it does not hold (the plan
 * checked it, so only a source that changed gets here). */
static bool hs_shape(const struct wf_xform *xf, uint64_t *rows, uint64_t *rb, uint64_t *es, uint64_t *d)
{
	const struct wf_tensor *t = xf->t;
	/* a 3-D source is its rows of the last axis (transformers 5's fused experts [E, 2F, H]) */
	uint64_t cols = t->ndim >= 2 ? t->shape[t->ndim - 1] : 0;
	if (t->ndim < 2 || t->ndim > 3 || !cols || !t->nelems || !xf->hs_heads || !xf->hs_n)
		return false;
	*rows = t->nelems / cols;
	*rb = t->size / *rows;
	*es = *rb / cols;
	*d = *rows / xf->hs_heads;
	return *rows % xf->hs_heads == 0 && *rb % cols == 0 && (*es == 2 || *es == 4) &&
	       (uint64_t)xf->hs_off + xf->hs_n <= *d && t->size == *rows * *rb;
}

/* Output elements [e0, e1) of a transposed head slice (WF_HS_T: output
 * element (h, c, k) is source element (h D + off + k, c)) to out.  For
 * each head, the output rows c touched give a column span of the
 * source; the n source rows of that span are read a chunk at a time
 * (whole rows in one read when the span is the whole row) and each
 * element put where it goes.  Only the source rows and columns the range
 * needs are read. */
static enum wf_err head_slice_t(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t e0,
				uint64_t e1, uint8_t *out)
{
	uint8_t tmp[HS_CHUNK];
	uint64_t rows, rb, es, d;
	if (!hs_shape(xf, &rows, &rb, &es, &d))
		return WF_ERR_RANGE;
	uint64_t cols = xf->t->shape[xf->t->ndim - 1], n = xf->hs_n, per_head = cols * n, base = e0;
	while (e0 < e1) {
		uint64_t h = e0 / per_head, h0 = h * per_head, end = e1 < h0 + per_head ? e1 : h0 + per_head;
		uint64_t c0 = (e0 - h0) / n, c1 = (end - h0 + n - 1) / n;
		if ((c1 - c0) * es > HS_CHUNK) {
			/* a span wider than the buffer: its first HS_CHUNK bytes */
			c1 = c0 + HS_CHUNK / es;
			if (end > h0 + c1 * n)
				end = h0 + c1 * n;
		}
		uint64_t span = (c1 - c0) * es, kb = HS_CHUNK / span, src0 = h * d + xf->hs_off;
		for (uint64_t k0 = 0; k0 < n; k0 += kb) {
			uint64_t kn = n - k0 < kb ? n - k0 : kb;
			size_t g;
			enum wf_err rc = WF_OK;
			if (c0 == 0 && c1 == cols) {
				rc = view_piece(lv, tc, xf->t, (src0 + k0) * rb, (size_t)(kn * rb), tmp, &g);
				if (rc == WF_OK && g != kn * rb)
					rc = WF_ERR_RANGE;
			}
			for (uint64_t k = 0; !(c0 == 0 && c1 == cols) && k < kn && rc == WF_OK; k++) {
				rc = view_piece(lv, tc, xf->t, (src0 + k0 + k) * rb + c0 * es, (size_t)span, tmp + k * span, &g);
				if (rc == WF_OK && g != span)
					rc = WF_ERR_RANGE;
			}
			if (rc != WF_OK)
				return rc;
			for (uint64_t k = 0; k < kn; k++)
				for (uint64_t c = c0; c < c1; c++) {
					uint64_t e = h0 + c * n + k0 + k;
					if (e >= e0 && e < end)
						memcpy(out + (e - base) * es, tmp + k * span + (c - c0) * es, (size_t)es);
				}
		}
		e0 = end;
	}
	return WF_OK;
}

/* View bytes [off, off+len) of a head-sliced tensor (wf_xform.hs). */
static enum wf_err head_slice(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			      size_t len, uint8_t *out, size_t *got)
{
	uint64_t rows, rb, es, d;
	*got = 0;
	if (!hs_shape(xf, &rows, &rb, &es, &d))
		return WF_ERR_RANGE;
	uint64_t total = (uint64_t)xf->hs_heads * xf->hs_n * rb;
	if (off >= total)
		return WF_OK;
	if (len > total - off)
		len = (size_t)(total - off);
	size_t done = 0, g;
	while (done < len) {
		uint64_t at = off + done;
		size_t n;
		enum wf_err rc;
		if (xf->hs == WF_HS_ROWS) {
			/* output row r: head r / n, its row off + r % n; a run to the head's end */
			uint64_t r = at / rb, in = at % rb, h = r / xf->hs_n, j = r % xf->hs_n;
			uint64_t run = (xf->hs_n - j) * rb - in;
			n = run < len - done ? (size_t)run : len - done;
			rc = view_piece(lv, tc, xf->t, (h * d + xf->hs_off + j) * rb + in, n, out + done, &g);
			if (rc == WF_OK && g != n)
				rc = WF_ERR_RANGE;
		} else if (at % es || len - done < es) {
			/* a cut element: through a buffer */
			uint8_t el[4];
			uint64_t skip = at % es;
			n = es - skip < len - done ? (size_t)(es - skip) : len - done;
			rc = head_slice_t(lv, tc, xf, at / es, at / es + 1, el);
			if (rc == WF_OK)
				memcpy(out + done, el + skip, n);
		} else {
			n = (size_t)((len - done) / es * es);
			rc = head_slice_t(lv, tc, xf, at / es, (at + n) / es, out + done);
		}
		if (rc != WF_OK)
			return rc;
		done += n;
	}
	*got = done;
	return WF_OK;
}

/* View bytes [off, off+len) of kv_b_proj put back together (WF_HS_KVB):
 * per head, nope rows that are k_b[h]'s columns (a transposed head slice
 * of k_b seen as heads x kv_lora_rank rows of nope) then v rows of v_b. */
static enum wf_err kv_b_join(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			     size_t len, uint8_t *out, size_t *got)
{
	const struct wf_tensor *k = xf->t;
	struct wf_tensor kt = *k, vt = *xf->t2;
	char err[WF_ERRLEN];
	*got = 0;
	if (k->ndim != 3 || vt.ndim != 3 || wf_tensor_set_view(&vt, k->vk, err) != WF_OK)
		return WF_ERR_RANGE;
	uint64_t nh = k->shape[0], kvr = k->shape[1], nope = k->shape[2], vd = vt.shape[1];
	if (!nh || !kvr || !nope || !vd || vt.shape[0] != nh || vt.shape[2] != kvr || k->size % (nh * kvr * nope) ||
	    vt.size != k->size / nope * vd)
		return WF_ERR_RANGE;
	uint64_t es = k->size / (nh * kvr * nope), rb = kvr * es, per = (nope + vd) * rb, total = nh * per;
	/* k_b as rows of nope: the transposed slice of each head is k_b[h]^T */
	kt.ndim = 2;
	kt.shape[0] = nh * kvr;
	kt.shape[1] = nope;
	struct wf_xform kx = {.t = &kt, .hs = WF_HS_T, .hs_heads = (uint32_t)nh, .hs_off = 0, .hs_n = (uint32_t)kvr};
	if (nh > UINT32_MAX || kvr > UINT32_MAX)
		return WF_ERR_RANGE;
	if (off >= total)
		return WF_OK;
	if (len > total - off)
		len = (size_t)(total - off);
	size_t done = 0;
	while (done < len) {
		uint64_t at = off + done, h = at / per, in = at % per, n, g;
		enum wf_err rc;
		if (in < nope * rb) {
			n = nope * rb - in < len - done ? nope * rb - in : len - done;
			rc = head_slice(lv, tc, &kx, h * nope * rb + in, (size_t)n, out + done, &g);
		} else {
			in -= nope * rb;
			n = vd * rb - in < len - done ? vd * rb - in : len - done;
			size_t gg;
			rc = view_piece(lv, tc, &vt, h * vd * rb + in, (size_t)n, out + done, &gg);
			g = gg;
		}
		if (rc == WF_OK && g != n)
			rc = WF_ERR_RANGE;
		if (rc != WF_OK)
			return rc;
		done += (size_t)n;
	}
	*got = done;
	return WF_OK;
}

/* View bytes [off, off+len) of a made tensor, rows in its order. */
static enum wf_err xform_rows(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			      size_t len, uint8_t *out, size_t *got)
{
	if (xf->hs == WF_HS_KVB)
		return kv_b_join(lv, tc, xf, off, len, out, got);
	if (xf->hs)
		return head_slice(lv, tc, xf, off, len, out, got);
	if (!xf->perm_heads)
		return view_piece(lv, tc, xf->t, off, len, out, got);
	uint64_t rows = xf->t->ndim ? xf->t->shape[0] : 0;
	uint64_t rb = rows ? xf->t->size / rows : 0;
	size_t done = 0;
	*got = 0;
	if (!rb || rows % (2 * xf->perm_heads))
		return WF_ERR_RANGE;
	uint64_t d = rows / xf->perm_heads; /* rows of a head */
	while (done < len && off + done < xf->t->size) {
		uint64_t at = off + done, r = at / rb, in = at % rb;
		size_t n = rb - in < len - done ? (size_t)(rb - in) : len - done, g;
		if (in == 0 && len - done >= rb) {
			/* whole rows, up to the end of r's head */
			uint64_t nr = (len - done) / rb, end = r - r % d + d;
			if (nr > end - r)
				nr = end - r;
			enum wf_err rc = perm_rows(lv, tc, xf, r, r + nr, rows, rb, out + done);
			if (rc != WF_OK)
				return rc;
			done += (size_t)(nr * rb);
			continue;
		}
		uint64_t src = wf_qk_row(r, rows, xf->perm_heads, !xf->perm_to_hf);
		enum wf_err rc = view_piece(lv, tc, xf->t, src * rb + in, n, out + done, &g);
		if (rc != WF_OK)
			return rc;
		if (g != n)
			return WF_ERR_RANGE;
		done += n;
	}
	*got = done;
	return WF_OK;
}

static enum wf_err xform_floats(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
				size_t len, uint8_t *out, size_t *got);

/* Blocks of a tensor quantized on read: the float32 values of whole
 * blocks (xform_floats), encoded, and the bytes asked for copied out; a
 * piece at a time so that the floats stay in the cache. */
static enum wf_err quant_piece(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			       size_t len, uint8_t *out, size_t *got)
{
	const struct wf_type *ty = wf_type_get(xf->quant);
	*got = 0;
	/* what is encoded: the source's elements; a head slice fewer, kv_b_proj more; half of
	 * them gathered (gate or up) */
	bool half = xf->gather == WF_GATHER_COLS_EVEN || xf->gather == WF_GATHER_COLS_ODD ||
		    xf->gather == WF_GATHER_T_EVEN || xf->gather == WF_GATHER_T_ODD;
	uint64_t nel = half ? xf->t->nelems / 2 : xf->t->nelems;
	if (xf->hs == WF_HS_KVB)
		nel += xf->t2->nelems;
	else if (xf->hs)
		nel = xf->t->ndim == 2 || xf->t->ndim == 3 ? (uint64_t)xf->hs_heads * xf->hs_n * xf->t->shape[xf->t->ndim - 1] : 0;
	if (!ty || !ty->quantize || !ty->blck || !nel || nel % ty->blck)
		return WF_ERR_RANGE;
	uint64_t nblk = nel / ty->blck, total = nblk * ty->bytes;
	if (off >= total)
		return WF_OK;
	if (len > total - off)
		len = (size_t)(total - off);
	size_t per = ty->blck >= XFORM_CHUNK / 4 ? 1 : XFORM_CHUNK / 4 / ty->blck; /* blocks a piece */
	uint8_t *tmp = malloc(per * ty->blck * 4 + per * ty->bytes);
	if (!tmp)
		return WF_ERR_NOMEM;
	xform_tmp = tmp; /* freed by after_sigbus should the copy fault */
	struct wf_xform fx = *xf;
	fx.quant = 0;
	fx.validate = false; /* llama-quantize checks what it wrote, not what it read */
	enum wf_err rc = WF_OK;
	size_t done = 0;
	while (rc == WF_OK && done < len) {
		uint64_t at = off + done, b0 = at / ty->bytes, n = nblk - b0 < per ? nblk - b0 : per, g;
		size_t fg = 0, w = 0;
		char err[WF_ERRLEN];
		rc = xform_floats(lv, tc, &fx, b0 * ty->blck * 4, (size_t)(n * ty->blck * 4), tmp, &fg);
		if (rc == WF_OK && fg != n * ty->blck * 4)
			rc = WF_ERR_RANGE;
		uint8_t *blocks = tmp + per * ty->blck * 4;
		if (rc == WF_OK)
			rc = wf_quantize_rows(xf->quant, (const float *)(const void *)tmp, 1, (size_t)(n * ty->blck), blocks,
					      per * ty->bytes, &w, err);
		if (rc == WF_OK && xf->validate && !wf_blocks_valid(xf->quant, blocks, w))
			rc = WF_ERR_RANGE; /* llama-quantize refuses a row whose scales are not finite */
		if (rc != WF_OK)
			break;
		uint64_t skip = at - b0 * ty->bytes;
		g = w - skip < len - done ? w - skip : len - done;
		memcpy(out + done, blocks + skip, (size_t)g);
		done += (size_t)g;
	}
	xform_tmp = NULL;
	free(tmp);
	*got = rc == WF_OK ? done : 0;
	return rc;
}

const struct wf_tensor *wf_xform_tensor(const struct wf_xform *xf, struct wf_tensor *tmp)
{
	if (!xf->vk)
		return xf->t;
	char err[WF_ERRLEN];
	*tmp = *xf->t;
	return wf_tensor_set_view(tmp, (enum wf_vk)xf->vk, err) == WF_OK ? tmp : NULL;
}

/* ggml MXFP4 blocks of a decoded MXFP4 layer (WF_GATHER_MX_*), made from
 * its stored blocks and scales: the layer's parts are pinned in memory
 * (wf_hfq_detect.c), so they are read where they lie; their files are
 * noted as a view of the layer notes them. */
static enum wf_err gather_mx(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			     size_t len, uint8_t *out, size_t *got)
{
	const struct wf_hfq *q = xf->t->q;
	*got = 0;
	if (!q || q->scheme != WF_HFQ_MXFP4 || !q->experts)
		return WF_ERR_RANGE;
	const struct wf_hfq_part *bp = &q->part[WF_HFQ_MXFP4_B], *sp = &q->part[WF_HFQ_MXFP4_S];
	uint32_t files[3] = {xf->t->part, bp->file, sp->file};
	for (unsigned k = 0; k < 3; k++)
		if (files[k] >= lv->m->n_parts || atomic_load_explicit(&lv->changed[files[k]], memory_order_relaxed))
			return WF_ERR_CHANGED;
	uint64_t R = q->in, G = sp->cols, E = q->experts;
	bool all = xf->gather == WF_GATHER_MX_ALL;
	uint64_t Ro = all ? R : R / 2, total = E * Ro * G * 17;
	if (off >= total)
		return WF_OK;
	if (len > total - off)
		len = (size_t)(total - off);
	size_t done = 0;
	while (done < len) {
		uint64_t at = off + done, b = at / 17, g = b % G, ro = (b / G) % Ro, e = b / G / Ro;
		uint64_t r = all ? ro : 2 * ro + (xf->gather == WF_GATHER_MX_ODD);
		uint64_t idx = (e * R + r) * G + g;
		const uint8_t *src = bp->p + idx * 16;
		uint8_t blk[17];
		blk[0] = sp->p[idx];
		/* HF: byte i holds values 2i (low) and 2i+1; ggml: byte k holds k (low) and k+16 */
		for (unsigned k = 0; k < 16; k++) {
			unsigned lo = (src[k >> 1] >> ((k & 1) * 4)) & 15, hi = (src[(k + 16) >> 1] >> ((k & 1) * 4)) & 15;
			blk[1 + k] = (uint8_t)(lo | hi << 4);
		}
		size_t skip = (size_t)(at - b * 17), n = 17 - skip < len - done ? 17 - skip : len - done;
		memcpy(out + done, blk + skip, n);
		done += n;
	}
	enum wf_err rc = WF_OK;
	for (unsigned k = 0; k < 3 && rc == WF_OK; k++)
		rc = note_part(lv, tc, files[k]);
	*got = rc == WF_OK ? done : 0;
	return rc;
}

/* Each thread's gather_floats buffer, kept between reads and grown to the
 * largest tile a read needed: a fresh malloc of a tile (1.5 MB on
 * gpt-oss's widths) is an mmap, its page faults and an munmap every read.
 * Freed when the thread ends, or by wf_live_free on the thread that
 * calls it (a program's main thread runs no key destructor).  Never
 * nested: gather_floats reads plain views only. */
static pthread_key_t gather_key;
static pthread_once_t gather_once = PTHREAD_ONCE_INIT;
static bool gather_key_ok;

struct gather_buf {
	size_t cap;
	uint8_t bytes[];
};

static void gather_key_init(void)
{
	gather_key_ok = pthread_key_create(&gather_key, free) == 0;
}

/* This thread's buffer of at least size bytes, or NULL. */
static uint8_t *gather_buf(size_t size)
{
	pthread_once(&gather_once, gather_key_init);
	if (!gather_key_ok)
		return NULL;
	struct gather_buf *b = pthread_getspecific(gather_key);
	if (b && b->cap >= size)
		return b->bytes;
	struct gather_buf *nb = malloc(sizeof *nb + size);
	if (!nb || pthread_setspecific(gather_key, nb) != 0) {
		free(nb);
		return NULL;
	}
	free(b);
	nb->cap = size;
	return nb->bytes;
}

static void gather_buf_drop(void)
{
	pthread_once(&gather_once, gather_key_init);
	if (!gather_key_ok)
		return;
	free(pthread_getspecific(gather_key));
	pthread_setspecific(gather_key, NULL);
}

/* Output rows (e, a) of B elements from source [E, X, Y]: a tile of na
 * rows, the columns S*a0 .. S*(a0+na) of every source row of expert e,
 * read into tmp at a stride of na*S elements (gather_floats). */
static enum wf_err gather_tile(struct wf_live *lv, struct touched *tc, const struct wf_tensor *t, uint64_t es,
			       uint64_t e, uint64_t a0, uint64_t na, unsigned S, unsigned par, uint64_t X, uint64_t Y,
			       uint8_t *tmp)
{
	uint64_t st = na * S * es, want = (na - 1) * S + 1 + par;
	if (S * a0 + want > Y)
		want = Y - S * a0;
	for (uint64_t b = 0; b < X; b++) {
		size_t gg;
		enum wf_err rc = view_piece_as(lv, tc, t, ((e * X + b) * Y + S * a0) * es, (size_t)(want * es),
					       tmp + b * st, &gg, true);
		if (rc == WF_OK && gg != want * es)
			rc = WF_ERR_RANGE;
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

/* n bytes at off of t's view into tmp, and of t2's (when not NULL) after them. */
static enum wf_err gather_row(struct wf_live *lv, struct touched *tc, const struct wf_tensor *t,
			      const struct wf_tensor *t2, uint64_t off, uint64_t n, uint8_t *tmp)
{
	size_t gg;
	enum wf_err rc = view_piece(lv, tc, t, off, (size_t)n, tmp, &gg);
	if (rc == WF_OK && gg != n)
		rc = WF_ERR_RANGE;
	if (rc == WF_OK && t2 && (rc = view_piece(lv, tc, t2, off, (size_t)n, tmp + n, &gg)) == WF_OK && gg != n)
		rc = WF_ERR_RANGE;
	return rc;
}

/* Elements of a float view gathered into another layout (WF_GATHER_COLS_*,
 * WF_GATHER_T_* and the two-source PAIR / T_PAIR, arch/wf_arch.h):
 * source runs read a piece at a time into a buffer and picked from.  A
 * piece is the output rows the read covers, at most TILE: a transposed
 * row costs one source run per source row, so rows past the read's end
 * would be all cost. */
static enum wf_err gather_floats(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
				 size_t len, uint8_t *out, size_t *got)
{
	const struct wf_tensor *t = xf->t;
	*got = 0;
	if (!t->nelems || t->size % t->nelems)
		return WF_ERR_RANGE;
	uint64_t es = t->size / t->nelems;
	enum wf_gather gk = (enum wf_gather)xf->gather;
	bool cols = gk == WF_GATHER_COLS_EVEN || gk == WF_GATHER_COLS_ODD;
	bool pair = gk == WF_GATHER_PAIR, tpair = gk == WF_GATHER_T_PAIR;
	struct wf_tensor t2 = {0}; /* PAIR, T_PAIR: the second source in t's view */
	if (pair || tpair) {
		char err[WF_ERRLEN];
		if (!xf->t2)
			return WF_ERR_RANGE;
		t2 = *xf->t2;
		if (wf_tensor_set_view(&t2, t->vk, err) != WF_OK || t2.size != t->size || t2.ndim != t->ndim ||
		    memcmp(t2.shape, t->shape, t->ndim * sizeof *t->shape) != 0)
			return WF_ERR_RANGE;
	}
	unsigned S = gk == WF_GATHER_T_ALL || tpair ? 1 : 2;
	unsigned par = gk == WF_GATHER_COLS_ODD || gk == WF_GATHER_T_ODD;
	uint64_t E, A, B, X, Y; /* out [E, A, B] from source [E, X, Y] */
	if (cols || pair) {
		if (t->ndim != 2 || (cols && t->shape[1] % 2))
			return WF_ERR_RANGE;
		E = 1, A = X = t->shape[0], Y = t->shape[1], B = cols ? Y / 2 : 2 * Y;
	} else {
		if (t->ndim != 3 || t->shape[2] % S)
			return WF_ERR_RANGE;
		E = t->shape[0], X = t->shape[1], Y = t->shape[2], A = Y / S, B = tpair ? 2 * X : X;
	}
	uint64_t total = E * A * B * es;
	if (off >= total)
		return WF_OK;
	if (len > total - off)
		len = (size_t)(total - off);
	enum { TILE = 64 };
	uint64_t rowb = B * es, rows = (off % rowb + len + rowb - 1) / rowb; /* output rows the read covers */
	if (rows > TILE)
		rows = TILE;
	uint64_t tmpb = cols ? Y * es : pair ? 2 * Y * es : (tpair ? 2 : 1) * X * rows * S * es;
	uint8_t *tmp = gather_buf((size_t)(tmpb + rowb)), *row = tmp ? tmp + tmpb : NULL;
	enum wf_err rc = tmp ? WF_OK : WF_ERR_NOMEM;
	size_t done = 0;
	while (rc == WF_OK && done < len) {
		uint64_t at = off + done, orow = at / rowb, e = orow / A, a0 = orow % A;
		uint64_t need = (at % rowb + (len - done) + rowb - 1) / rowb;
		uint64_t na = cols || pair ? 1 : A - a0 < need ? A - a0 : need;
		if (na > TILE)
			na = TILE;
		if (cols || pair) /* one source row, of each source */
			rc = gather_row(lv, tc, t, pair ? &t2 : NULL, a0 * Y * es, Y * es, tmp);
		else if ((rc = gather_tile(lv, tc, t, es, e, a0, na, S, par, X, Y, tmp)) == WF_OK && tpair)
			rc = gather_tile(lv, tc, &t2, es, e, a0, na, S, par, X, Y, tmp + X * na * es);
		uint64_t st = na * S * es; /* a source row's run in tmp */
		for (uint64_t i = 0; i < na && rc == WF_OK && done < len; i++) {
			uint64_t skip = off + done - (orow + i) * rowb;
			size_t n = rowb - skip < len - done ? (size_t)(rowb - skip) : len - done;
			uint8_t *dst = n == rowb ? out + done : row; /* a whole row goes straight out */
			for (uint64_t b = 0; b < B; b++) {
				const uint8_t *from = cols ? tmp + (2 * b + par) * es
						      : pair ? tmp + ((b & 1) * Y + b / 2) * es
						      : tpair ? tmp + ((b & 1) * X + b / 2) * st + i * es
							      : tmp + b * st + (i * S + par) * es;
				memcpy(dst + b * es, from, (size_t)es);
			}
			if (dst == row)
				memcpy(out + done, row + skip, n);
			done += n;
		}
	}
	*got = rc == WF_OK ? done : 0;
	return rc;
}

static enum wf_err xform_piece(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			       size_t len, uint8_t *out, size_t *got)
{
	if (xf->gather >= WF_GATHER_MX_ALL && xf->gather <= WF_GATHER_MX_ODD)
		return gather_mx(lv, tc, xf, off, len, out, got);
	struct wf_tensor vt;
	struct wf_xform fx;
	if (xf->vk) {
		fx = *xf;
		if (!(fx.t = wf_xform_tensor(xf, &vt)))
			return WF_ERR_RANGE;
		fx.vk = 0;
		xf = &fx;
	}
	return xf->quant ? quant_piece(lv, tc, xf, off, len, out, got) : xform_floats(lv, tc, xf, off, len, out, got);
}

/* A made tensor's bytes: its rows, then the fix-ups on whole elements
 * (through a buffer when the range cuts an element). */
static enum wf_err xform_floats(struct wf_live *lv, struct touched *tc, const struct wf_xform *xf, uint64_t off,
			       size_t len, uint8_t *out, size_t *got)
{
	bool half = xf->t->vk == WF_VK_F16 || xf->t->vk == WF_VK_BF16;
	unsigned es = wf_vk_elem_size(NULL, half ? (enum wf_vk)xf->t->vk : WF_VK_F32); /* floats, float32 unless half */
	int vt = !half ? WF_T_F32 : xf->t->vk == WF_VK_BF16 ? WF_T_BF16 : WF_T_F16; /* what is checked */
	if (xf->gather && !xf->quiet_bf16 && !xf->validate) /* gpt-oss's experts, also quant_piece's floats */
		return gather_floats(lv, tc, xf, off, len, out, got);
	if (xf->gather) { /* whole elements fixed and checked, through a buffer */
		uint64_t lo = off - off % es, hi = off + len;
		hi += (es - hi % es) % es;
		size_t n = (size_t)(hi - lo), g = 0;
		uint8_t *tmp = malloc(n ? n : 1);
		if (!tmp)
			return WF_ERR_NOMEM;
		xform_tmp = tmp; /* freed by after_sigbus should the copy fault */
		enum wf_err rc = gather_floats(lv, tc, xf, lo, n, tmp, &g);
		g -= g % es;
		if (rc == WF_OK && xf->quiet_bf16)
			wf_bf16_quiet_n(tmp, g / es);
		if (rc == WF_OK && xf->validate && !wf_blocks_valid(vt, tmp, g))
			rc = WF_ERR_RANGE;
		size_t skip = (size_t)(off - lo);
		*got = rc == WF_OK && g > skip ? (g - skip < len ? g - skip : len) : 0;
		if (*got)
			memcpy(out, tmp + skip, *got);
		xform_tmp = NULL;
		free(tmp);
		return rc;
	}
	if (!xf->add && !xf->quiet_bf16 && !xf->validate)
		return xform_rows(lv, tc, xf, off, len, out, got);
	if (off % es == 0 && len % es == 0) {
		/* in pieces that stay in the cache between the copy and the fix:
		 * a second pass over a whole reply (up to 1 MiB) went to memory
		 * and cost as much as the copy (model.gguf at 0.7x the bf16 view) */
		size_t done = 0, g = 0;
		*got = 0;
		while (done < len) {
			size_t n = len - done < FIX_CHUNK ? len - done : FIX_CHUNK;
			enum wf_err rc = xform_rows(lv, tc, xf, off + done, n, out + done, &g);
			if (rc != WF_OK)
				return rc;
			xform_fix(xf, out + done, g / es);
			if (xf->validate && !wf_blocks_valid(vt, out + done, g))
				return WF_ERR_RANGE; /* llama-quantize refuses an infinity or NaN it made */
			done += g;
			*got = done;
			if (g < n)
				break;
		}
		return WF_OK;
	}
	uint64_t lo = off - off % es, hi = off + len;
	hi += (es - hi % es) % es;
	size_t n = (size_t)(hi - lo), g;
	uint8_t *tmp = malloc(n);
	if (!tmp)
		return WF_ERR_NOMEM;
	xform_tmp = tmp; /* freed by after_sigbus should the copy fault */
	enum wf_err rc = xform_rows(lv, tc, xf, lo, n, tmp, &g);
	if (rc == WF_OK) {
		xform_fix(xf, tmp, g / es);
		if (xf->validate && !wf_blocks_valid(vt, tmp, g))
			rc = WF_ERR_RANGE;
	}
	if (rc == WF_OK) {
		size_t skip = (size_t)(off - lo);
		*got = g > skip ? (g - skip < len ? g - skip : len) : 0;
		memcpy(out, tmp + skip, *got);
	}
	xform_tmp = NULL;
	free(tmp);
	return rc;
}

static enum wf_err check_touched(struct wf_live *lv, const struct touched *tc)
{
	enum wf_err rc = WF_OK;
	for (unsigned i = 0; i < tc->n; i++)
		if (check_part(lv, tc->part[i]) != WF_OK)
			rc = WF_ERR_CHANGED;
	return rc;
}

/* After a SIGBUS: which part's pages vanished is not known here, and the
 * list of touched parts may be stale (it changed after sigsetjmp); check
 * them all.  Rare: only a file shrinking under a read gets here.  A part
 * read through the pool is the one that faulted: it alone is checked
 * (a model of 100,000 parts would stat them all), and given back. */
static enum wf_err after_sigbus(struct wf_live *lv)
{
	free(xform_tmp);
	xform_tmp = NULL;
	uint32_t held = held_part;
	if (held != NO_PART) {
		release_part(lv);
		check_part(lv, held);
		return WF_ERR_CHANGED;
	}
	for (uint32_t i = 0; i < lv->m->n_parts; i++)
		check_part(lv, i);
	return WF_ERR_CHANGED;
}

/* One copy: the bytes of a tensor's view, or of a file lv->seg knows. */
struct job {
	const struct wf_tensor *t; /* this tensor's view, or NULL for ... */
	uint32_t file;             /* ... this file */
	uint64_t off;
	size_t len;
	uint8_t *out;
};

static enum wf_err copy_segments(struct wf_live *lv, struct touched *tc, const struct job *j, size_t *got);

/* Runs job j with SIGBUS caught, then checks every part it touched: a
 * check after the copy sees any writer that raced it, since the size or
 * mtime moves before the bytes do. */
static enum wf_err guarded(struct wf_live *lv, const struct job *j, size_t *got)
{
	struct touched tc = {.n = 0};
	sigjmp_buf jb;
	*got = 0;
	if (sigsetjmp(jb, 1) != 0) {
		wf_bus_jmp = NULL;
		*got = 0;
		return after_sigbus(lv);
	}
	wf_bus_jmp = &jb;
	enum wf_err rc = j->t ? view_piece(lv, &tc, j->t, j->off, j->len, j->out, got)
			      : copy_segments(lv, &tc, j, got);
	wf_bus_jmp = NULL;
	if (check_touched(lv, &tc) != WF_OK)
		rc = WF_ERR_CHANGED;
	if (rc != WF_OK)
		*got = 0;
	return rc;
}

enum wf_err wf_live_read_view(struct wf_live *lv, const struct wf_tensor *t, uint64_t off, size_t len, void *out,
			      size_t *got)
{
	*got = 0;
	if (t->part >= lv->m->n_parts)
		return WF_ERR_RANGE;
	struct job j = {.t = t, .off = off, .len = len, .out = out};
	return guarded(lv, &j, got);
}

/* The copy of a file, segment by segment. */
static enum wf_err copy_segments(struct wf_live *lv, struct touched *tc, const struct job *j, size_t *got)
{
	size_t done = 0;
	enum wf_err rc = WF_OK;
	while (done < j->len) {
		struct wf_seg seg = {.kind = WF_SEG_NONE}; /* a seg function may set only the fields it needs */
		lv->seg(lv->files, j->file, j->off + done, &seg);
		if (seg.kind == WF_SEG_NONE)
			break;
		if (seg.kind == WF_SEG_NOMEM || seg.kind == WF_SEG_CHANGED) {
			rc = seg.kind == WF_SEG_NOMEM ? WF_ERR_NOMEM : check_part(lv, 0) != WF_OK ? WF_ERR_CHANGED
				: changed(lv, 0, "its key/values no longer make the metadata.json measured at open");
			break;
		}
		if (seg.kind == WF_SEG_BYTES && seg.of_part0 && (rc = note_part(lv, tc, 0)) != WF_OK)
			break;
		uint64_t in = j->off + done - seg.start;
		uint64_t n = seg.len - in;
		if (n > j->len - done)
			n = j->len - done;
		size_t piece = (size_t)n;
		if (seg.kind == WF_SEG_BYTES) {
			memcpy(j->out + done, seg.bytes + in, piece);
		} else if ((rc = seg.xf ? xform_piece(lv, tc, seg.xf, seg.from + in, piece, j->out + done, &piece)
				      : view_piece(lv, tc, &lv->m->tensors[seg.tensor], seg.from + in, piece,
						   j->out + done, &piece)) != WF_OK) {
			break;
		} else if (piece != n) {
			rc = WF_ERR_RANGE; /* a view shorter than its segment: a bug, not data */
			break;
		}
		done += (size_t)n;
	}
	*got = done;
	return rc;
}

enum wf_err wf_live_read(struct wf_live *lv, uint32_t file, uint64_t off, size_t len, void *out, size_t *got)
{
	*got = 0;
	if (!lv->seg)
		return WF_ERR_RANGE;
	struct job j = {.file = file, .off = off, .len = len, .out = out};
	return guarded(lv, &j, got);
}
