/* wf_gguf_meta.c - a GGUF's metadata.json a window at a time
 * (wf_gguf_meta.h).
 *
 * The text is walked as a sequence of steps (a cursor); each step writes
 * one small piece: a separator, a scalar or up to ARR_RUN of an array's
 * scalars, or up to PIECE bytes of a string.  A string is cut only where
 * wf_buf_json_str's loop is between two units (a run of ASCII, an escape,
 * one UTF-8 sequence or one stray byte), so each piece is exactly what the
 * whole string's encoder writes for those bytes.  The text written is
 * wf_meta.h's framing of the values as wf_gguf.c's parser reads them:
 *     {\n "key": value,\n "key": value\n}\n      and  {}\n  when empty.
 */
#include "model/wf_gguf_meta.h"
#include "base/wf_buf.h"
#include "model/wf_gguf_kv.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PIECE (4u << 10)  /* string bytes a step writes, at most (plus one UTF-8 sequence) */
#define ARR_RUN 64        /* array scalars a step writes, at most */


enum { P_OPEN, P_SEP, P_KEY, P_VAL, P_STR, P_ARR, P_ASTR, P_END, P_TAIL, P_DONE };

/* Where the walk is: enough to go on from here alone. */
struct cur {
	uint64_t out;  /* text bytes before this point */
	uint64_t pos;  /* file: the next byte to read */
	uint64_t end;  /* file: the end of the string being written */
	uint64_t j;    /* array: the next element */
	size_t kv;     /* the key being written */
	uint8_t ph;
};

struct wf_gguf_meta {
	const struct wf_gguf_kv *keys; /* the index's entries (wf_gguf_kv.h), not owned */
	struct wf_gguf_meta_text *text; /* [n] */
	size_t n;
	uint64_t len;
	struct cur *cps;  /* checkpoints, ascending by out */
	size_t n_cps, cap_cps;
};

/* Where the walk's bytes go: those in [lo, hi) into buf (NULL: counted). */
struct sink {
	uint64_t pos, lo, hi;
	char *buf;
	const uint8_t *data;
	uint64_t len;
	struct wf_buf t;    /* scratch for a float */
	bool bad;           /* the file's bytes do not make the text measured */
	bool measure;       /* the first pass: fills the keys' text offsets */
};

static void put(struct sink *k, const void *p, size_t n)
{
	wf_window_put(k->buf, k->lo, k->hi, &k->pos, p, n);
}

static void puts_(struct sink *k, const char *s)
{
	wf_window_put(k->buf, k->lo, k->hi, &k->pos, s, strlen(s));
}

/* Whether data[pos .. pos + n) lies inside [pos, lim) and the file. */
static bool fits(struct sink *k, uint64_t pos, uint64_t n, uint64_t lim)
{
	if (lim > k->len || pos > lim || n > lim - pos) {
		k->bad = true;
		return false;
	}
	return true;
}

/* Writes string bytes data[*pos .. end) as wf_buf_json_str writes them,
 * quotes left off, stopping after PIECE bytes at a unit boundary. */
static void put_body(struct sink *k, uint64_t *pos, uint64_t end)
{
	const uint8_t *s = k->data;
	uint64_t i = *pos, stop = end - i > PIECE ? i + PIECE : end;
	char e[8];
	while (i < stop) {
		uint64_t run = i;
		while (run < stop && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
			run++;
		put(k, s + i, (size_t)(run - i));
		if ((i = run) >= stop)
			break;
		uint8_t c = s[i];
		size_t l = 1;
		if (c == '"' || c == '\\') {
			e[0] = '\\', e[1] = (char)c;
			put(k, e, 2);
		} else if (c < 0x20) {
			if (c == '\n' || c == '\t' || c == '\r')
				puts_(k, c == '\n' ? "\\n" : c == '\t' ? "\\t" : "\\r");
			else
				put(k, e, (size_t)snprintf(e, sizeof e, "\\u%04x", c));
		} else if ((l = wf_utf8_seq(s + i, (size_t)(end - i))) == 0) {
			put(k, e, (size_t)snprintf(e, sizeof e, "\\udc%02x", c)); /* wf_buf_json_str's stray byte */
			l = 1;
		} else {
			put(k, s + i, l);
		}
		i += l;
	}
	*pos = i;
}

/* Writes the scalar of type t at p as wf_gguf.c always wrote it. */
static void put_scalar(struct sink *k, uint32_t t, const uint8_t *p)
{
	char s[32];
	int n = 0;
	switch (t) {
	case WF_GT_UINT8: n = snprintf(s, sizeof s, "%u", p[0]); break;
	case WF_GT_INT8: n = snprintf(s, sizeof s, "%d", (int8_t)p[0]); break;
	case WF_GT_UINT16: n = snprintf(s, sizeof s, "%u", wf_le16(p)); break;
	case WF_GT_INT16: n = snprintf(s, sizeof s, "%d", (int16_t)wf_le16(p)); break;
	case WF_GT_UINT32: n = snprintf(s, sizeof s, "%" PRIu32, wf_le32(p)); break;
	case WF_GT_INT32: n = snprintf(s, sizeof s, "%" PRId32, (int32_t)wf_le32(p)); break;
	case WF_GT_UINT64: n = snprintf(s, sizeof s, "%" PRIu64, wf_le64(p)); break;
	case WF_GT_INT64: n = snprintf(s, sizeof s, "%" PRId64, (int64_t)wf_le64(p)); break;
	/* ggml reads any non-zero byte as true */
	case WF_GT_BOOL: n = snprintf(s, sizeof s, "%s", p[0] ? "true" : "false"); break;
	case WF_GT_FLOAT32: case WF_GT_FLOAT64: {
		k->t.len = 0;
		if (t == WF_GT_FLOAT32) { /* 4 bytes only: a value may end the file */
			uint32_t u32 = wf_le32(p);
			float f;
			memcpy(&f, &u32, 4);
			wf_buf_json_f32(&k->t, f);
		} else {
			uint64_t u64 = wf_le64(p);
			double d;
			memcpy(&d, &u64, 8);
			wf_buf_json_f64(&k->t, d);
		}
		if (k->t.oom)
			return;
		put(k, k->t.data, k->t.len);
		return;
	}
	default: k->bad = true; return;
	}
	put(k, s, (size_t)n);
}

/* Begins key kv's value: a scalar whole, an array's '[' or a string's '"'. */
static void step_val(const struct wf_gguf_meta *g, struct cur *c, struct sink *k)
{
	const struct wf_gguf_kv *kv = &g->keys[c->kv];
	if (k->measure)
		g->text[c->kv].v0 = k->pos;
	c->pos = kv->val;
	if (kv->type == WF_GT_STRING) {
		if (!fits(k, kv->val, 8, kv->end))
			return;
		uint64_t n = wf_le64(k->data + kv->val);
		if (!fits(k, kv->val + 8, n, kv->end))
			return;
		c->pos = kv->val + 8;
		c->end = c->pos + n;
		puts_(k, "\"");
		c->ph = P_STR;
	} else if (kv->type == WF_GT_ARRAY) {
		puts_(k, "[");
		c->j = 0;
		c->ph = P_ARR;
	} else if (wf_gguf_type_size(kv->type) && fits(k, kv->val, wf_gguf_type_size(kv->type), kv->end)) {
		put_scalar(k, kv->type, k->data + kv->val);
		c->pos += wf_gguf_type_size(kv->type);
		c->ph = P_END;
	} else {
		k->bad = true;
	}
}

/* The next elements of key kv's array: a run of scalars, or one string's
 * opening; ']' after the last. */
static void step_arr(const struct wf_gguf_meta *g, struct cur *c, struct sink *k)
{
	const struct wf_gguf_kv *kv = &g->keys[c->kv];
	if (c->j >= kv->count) {
		puts_(k, "]");
		c->ph = P_END;
		return;
	}
	if (kv->elem == WF_GT_STRING) {
		if (!fits(k, c->pos, 8, kv->end))
			return;
		uint64_t n = wf_le64(k->data + c->pos);
		if (!fits(k, c->pos + 8, n, kv->end))
			return;
		puts_(k, c->j ? ", \"" : "\"");
		c->pos += 8;
		c->end = c->pos + n;
		c->ph = P_ASTR;
		return;
	}
	unsigned sz = wf_gguf_type_size(kv->elem);
	if (sz == 0) {
		k->bad = true;
		return;
	}
	for (int r = 0; r < ARR_RUN && c->j < kv->count && !k->bad; r++, c->j++) {
		if (!fits(k, c->pos, sz, kv->end))
			return;
		if (c->j)
			puts_(k, ", ");
		put_scalar(k, kv->elem, k->data + c->pos);
		c->pos += sz;
	}
}

/* Ends key kv's value, checking it ended where it did when measured. */
static void step_end(struct wf_gguf_meta *g, struct cur *c, struct sink *k)
{
	const struct wf_gguf_kv *kv = &g->keys[c->kv];
	struct wf_gguf_meta_text *tx = &g->text[c->kv];
	if (c->pos != kv->end)
		k->bad = true;
	if (k->measure)
		tx->v1 = k->pos;
	else if (k->pos != tx->v1)
		k->bad = true;
	c->kv++;
	c->ph = c->kv < g->n ? P_SEP : P_TAIL;
}

static void step(struct wf_gguf_meta *g, struct cur *c, struct sink *k)
{
	const struct wf_gguf_kv *kv = c->kv < g->n ? &g->keys[c->kv] : NULL;
	switch (c->ph) {
	case P_OPEN:
		if (g->n == 0)
			puts_(k, "{}\n");
		c->ph = g->n ? P_SEP : P_DONE;
		break;
	case P_SEP:
		if (k->measure)
			g->text[c->kv].t0 = k->pos;
		puts_(k, c->kv ? ",\n \"" : "{\n \"");
		if (fits(k, kv->key, kv->key_len, k->len)) {
			c->pos = kv->key;
			c->end = kv->key + kv->key_len;
			c->ph = P_KEY;
		}
		break;
	case P_KEY:
		if (c->pos < c->end) {
			put_body(k, &c->pos, c->end);
		} else {
			puts_(k, "\": ");
			c->ph = P_VAL;
		}
		break;
	case P_VAL: step_val(g, c, k); break;
	case P_STR:
	case P_ASTR:
		if (c->pos < c->end) {
			put_body(k, &c->pos, c->end);
		} else {
			puts_(k, "\"");
			if (c->ph == P_ASTR)
				c->j++;
			c->ph = c->ph == P_ASTR ? P_ARR : P_END;
		}
		break;
	case P_ARR: step_arr(g, c, k); break;
	case P_END: step_end(g, c, k); break;
	case P_TAIL:
		puts_(k, "\n}\n");
		c->ph = P_DONE;
		break;
	default: k->bad = true; break;
	}
}

static bool add_cp(struct wf_gguf_meta *g, const struct cur *c)
{
	struct cur *p = wf_grow(g->cps, g->n_cps, &g->cap_cps, sizeof *p, 16);
	if (!p)
		return false;
	g->cps = p;
	g->cps[g->n_cps++] = *c;
	return true;
}

/* The measuring pass: the text's length, the keys' offsets, checkpoints. */
static enum wf_err measure(struct wf_gguf_meta *g, const uint8_t *data, uint64_t len)
{
	struct sink k = {.data = data, .len = len, .measure = true};
	struct cur c = {.ph = P_OPEN};
	uint64_t last = 0;
	bool ok = true;
	while (c.ph != P_DONE && !k.bad && !k.t.oom && ok) {
		c.out = k.pos;
		if (c.ph == P_OPEN || k.pos - last >= WF_GGUF_META_STEP) {
			ok = add_cp(g, &c);
			last = k.pos;
		}
		step(g, &c, &k);
	}
	bool oom = k.t.oom || !ok;
	wf_buf_free(&k.t);
	if (oom)
		return WF_ERR_NOMEM;
	if (k.bad)
		return WF_ERR_CHANGED;
	g->len = k.pos;
	return WF_OK;
}

enum wf_err wf_gguf_meta_new(const uint8_t *data, uint64_t len, const struct wf_gguf_kvs *ix,
			     struct wf_gguf_meta **out)
{
	*out = NULL;
	struct wf_gguf_meta *g = calloc(1, sizeof *g);
	if (!g || !(g->text = calloc(ix->n ? ix->n : 1, sizeof *g->text))) {
		free(g);
		return WF_ERR_NOMEM;
	}
	g->keys = ix->kv;
	g->n = ix->n;
	enum wf_err rc = measure(g, data, len);
	if (rc != WF_OK) {
		wf_gguf_meta_free(g);
		return rc;
	}
	/* give back what doubling left unused: the checkpoints live as long as the model */
	struct cur *p = realloc(g->cps, g->n_cps * sizeof *p);
	if (p) {
		g->cps = p;
		g->cap_cps = g->n_cps;
	}
	*out = g;
	return WF_OK;
}

void wf_gguf_meta_free(struct wf_gguf_meta *g)
{
	if (!g)
		return;
	free(g->text);
	free(g->cps);
	free(g);
}

uint64_t wf_gguf_meta_len(const struct wf_gguf_meta *g)
{
	return g->len;
}

size_t wf_gguf_meta_count(const struct wf_gguf_meta *g)
{
	return g->n;
}

const struct wf_gguf_kv *wf_gguf_meta_key(const struct wf_gguf_meta *g, size_t i)
{
	return &g->keys[i];
}

const struct wf_gguf_meta_text *wf_gguf_meta_text(const struct wf_gguf_meta *g, size_t i)
{
	return &g->text[i];
}

/* Whether the walk at c (k.pos bytes out) is where checkpoint p says. */
static bool same_cur(const struct cur *c, uint64_t out, const struct cur *p)
{
	return out == p->out && c->pos == p->pos && c->end == p->end && c->j == p->j && c->kv == p->kv &&
	       c->ph == p->ph;
}

enum wf_err wf_gguf_meta_read(const struct wf_gguf_meta *g, const uint8_t *data, uint64_t len, uint64_t off,
			      size_t n, char *buf)
{
	if (off > g->len || n > g->len - off)
		return WF_ERR_RANGE;
	if (n == 0)
		return WF_OK;
	/* the last checkpoint at or before off */
	size_t lo = 0, hi = g->n_cps;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->cps[mid].out <= off)
			lo = mid;
		else
			hi = mid;
	}
	struct cur c = g->cps[lo];
	struct sink k = {.pos = c.out, .lo = off, .hi = off + n, .buf = buf, .data = data, .len = len};
	/* a read pass writes nothing into g: step takes it non-const for the
	 * measuring pass alone (k.measure) */
	struct wf_gguf_meta *gw = (struct wf_gguf_meta *)g;
	while (c.ph != P_DONE && !k.bad && !k.t.oom && k.pos < k.hi)
		step(gw, &c, &k);
	/* then on to the next checkpoint, which the walk must meet exactly: a
	 * length in the file changed since it was measured moves the walk off
	 * it, even when the value's end is far past this window */
	size_t nx = lo + 1;
	while (nx < g->n_cps && g->cps[nx].out < k.pos)
		nx++;
	while (nx < g->n_cps && c.ph != P_DONE && !k.bad && !k.t.oom && k.pos < g->cps[nx].out)
		step(gw, &c, &k);
	if (nx < g->n_cps && !k.t.oom && !k.bad && !same_cur(&c, k.pos, &g->cps[nx]))
		k.bad = true;
	bool oom = k.t.oom;
	wf_buf_free(&k.t);
	if (oom)
		return WF_ERR_NOMEM;
	return k.bad || k.pos < k.hi ? WF_ERR_CHANGED : WF_OK;
}

uint64_t wf_gguf_meta_value_len(const struct wf_gguf_meta *g, size_t i)
{
	const struct wf_gguf_kv *kv = &g->keys[i];
	return kv->type == WF_GT_STRING ? kv->end - kv->val - 8 : g->text[i].v1 - g->text[i].v0;
}

enum wf_err wf_gguf_meta_value(const struct wf_gguf_meta *g, const uint8_t *data, uint64_t len, size_t i,
			       uint64_t off, size_t n, char *buf)
{
	if (i >= g->n)
		return WF_ERR_RANGE;
	const struct wf_gguf_kv *kv = &g->keys[i];
	uint64_t vlen = wf_gguf_meta_value_len(g, i);
	if (off > vlen || n > vlen - off)
		return WF_ERR_RANGE;
	if (kv->type != WF_GT_STRING)
		return wf_gguf_meta_read(g, data, len, g->text[i].v0 + off, n, buf);
	/* a string's file is its bytes: its length must still be the one measured */
	if (kv->end > len || wf_le64(data + kv->val) != vlen)
		return WF_ERR_CHANGED;
	memcpy(buf, data + kv->val + 8 + off, n);
	return WF_OK;
}
