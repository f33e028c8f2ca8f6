/* wf_st_stream.c - model.safetensors' header a window at a time
 * (wf_st_stream.h).
 *
 * The header is walked as a sequence of steps (a cursor); each step writes
 * one small piece.  A long string (a name, a key, a value of metadata.json)
 * is cut into pieces of about PIECE input bytes, only where cutting cannot
 * change the output: never inside a JSON escape and never before a UTF-8
 * continuation byte, so the validity of every UTF-8 sequence and every
 * escape is decided inside one piece.  A piece's JSON string body is what
 * the whole string's encoder writes for those bytes, quotes left off.
 *
 * A GGUF's metadata.json is never held whole (wf_meta.h): its keys and
 * values are read from the file instead, a piece at a time, as the bytes
 * the text's strings decode to (a key's and a string's raw bytes) or, for
 * other values, their JSON text.  The pieces are cut as above (at most 3
 * bytes past PIECE: past three continuation bytes no valid sequence
 * reaches), so the header is byte for byte the one the text would make. */
#include "mount/wf_st_stream.h"
#include "mount/wf_gen_int.h"
#include "model/wf_gguf_meta.h"
#include "model/wf_meta.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

#include <inttypes.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PIECE (16u << 10)  /* input bytes a string piece holds, about */
#define STEP (64u << 10)   /* output bytes between checkpoints, at least */

enum { S_HEAD, S_FMT, S_META, S_TYPES, S_TENSORS, S_TAIL, S_DONE };
enum { P_START, P_KEY, P_VAL, P_NAME, P_REST };

/* Where the walk is: enough to go on from here alone. */
struct cur {
	uint64_t out;            /* header bytes written before this point */
	uint64_t dpos;           /* S_TENSORS: where tensor idx's data starts */
	size_t idx;              /* S_META: key number; S_TYPES, S_TENSORS: tensor */
	size_t kv;               /* S_META: where the search for the next key starts */
	size_t k0, k1, v0, v1;   /* S_META: the current key's and value's extents */
	size_t in;               /* the next piece of the current string starts here */
	uint8_t sect, phase;
	bool any;                /* S_TYPES: an entry was written */
};

struct wf_st_stream {
	const struct wf_model *m;
	uint64_t id;
	uint64_t len;
	struct wf_st_sparse names, keys;
	bool types;
	size_t meta0;            /* just past metadata.json's '{' */
	size_t fmt_v0, fmt_v1;   /* the model's "format" string, or 0, 0 */
	bool gguf;               /* a GGUF: keys and values from the file (m->meta_gen) */
	size_t fmt_key;          /* a GGUF's "format" string key, or SIZE_MAX */
	struct cur *cps;         /* checkpoints, ascending by out */
	size_t n_cps, cap_cps;
};

/* Where the walk's bytes go: those in [lo, hi) into buf (NULL: counted only). */
struct sink {
	uint64_t pos, lo, hi;
	char *buf;
	struct wf_buf t1, t2, t3;  /* scratch */
	uint64_t *offs;            /* the measuring pass: data offsets */
	char *pbuf;                /* a GGUF: the piece read from the file (PIECE + 3 bytes) */
	enum wf_err rc;            /* why the walk stopped (oom set), if not out of memory */
	bool oom;
};

static void put(struct sink *k, const void *p, size_t n)
{
	wf_window_put(k->buf, k->lo, k->hi, &k->pos, p, n);
}

static void puts_(struct sink *k, const char *s)
{
	wf_window_put(k->buf, k->lo, k->hi, &k->pos, s, strlen(s));
}

/* Puts a JSON string's body (b holds '"' body '"'). */
static void put_body(struct sink *k, struct wf_buf *b)
{
	if (b->oom || b->len < 2) {
		k->oom = true;
		return;
	}
	put(k, b->data + 1, b->len - 2);
}

static bool is_cont(char c)
{
	return ((uint8_t)c & 0xc0) == 0x80;
}

/* The end of a piece of raw bytes p[a..end) (cut before a non-continuation byte). */
static size_t cut_raw(const char *p, size_t a, size_t end)
{
	if (end - a <= PIECE)
		return end;
	size_t i = a + PIECE;
	while (i < end && is_cont(p[i]))
		i++;
	return i;
}

/* The end of a piece of the JSON string text s[a..end), a at no escape. */
static size_t cut_json(const char *s, size_t a, size_t end)
{
	size_t i = a;
	while (i < end && (i - a < PIECE || s[i] == '\\' || is_cont(s[i])))
		i += s[i] != '\\' ? 1 : s[i + 1] == 'u' ? 6 : 2;
	return i < end ? i : end;
}

/* The piece s[a..b) of a JSON string of metadata.json, decoded and written
 * as wf_st_header writes a decoded string. */
static void put_dec(struct sink *k, const char *s, size_t a, size_t b)
{
	k->t1.len = k->t2.len = 0;
	wf_gen_decode_string(s, a - 1, b + 1, &k->t1);
	wf_gen_json_str_utf8(&k->t2, k->t1.data ? k->t1.data : "", k->t1.len);
	if (k->t1.oom)
		k->oom = true;
	put_body(k, &k->t2);
}

static void put_utf8(struct sink *k, const char *p, size_t n)
{
	k->t2.len = 0;
	wf_gen_json_str_utf8(&k->t2, p, n);
	put_body(k, &k->t2);
}

static void put_esc(struct sink *k, const char *p, size_t n)
{
	k->t3.len = 0;
	wf_buf_json_str(&k->t3, p, n);
	put_body(k, &k->t3);
}

/* The next piece of a GGUF's key (key) or value number idx, len bytes,
 * from byte in: read into k->pbuf; returns its length (0 and k->oom on
 * failure, k->rc saying why). */
static size_t gguf_piece(const struct wf_st_stream *s, struct sink *k, bool key, size_t idx, uint64_t in,
			 uint64_t len)
{
	uint64_t left = len - in;
	size_t want = left <= PIECE + 3 ? (size_t)left : PIECE + 3;
	if (!k->pbuf && !(k->pbuf = malloc(PIECE + 3))) {
		k->oom = true;
		return 0;
	}
	enum wf_err rc = key ? wf_meta_gguf_key_read(s->m, idx, in, want, k->pbuf, NULL)
			     : wf_meta_gguf_value(s->m, idx, in, want, k->pbuf, NULL);
	if (rc != WF_OK) {
		k->rc = rc;
		k->oom = true;
		return 0;
	}
	if (want == left)
		return want;
	size_t i = PIECE;
	while (i < want && is_cont(k->pbuf[i]))
		i++;
	return i;
}

/* Writes the next piece of a GGUF's key or value idx (len bytes) from
 * c->in: a string's bytes as wf_st_header writes a decoded string, other
 * values' JSON text escaped (esc). */
static void gguf_put(const struct wf_st_stream *s, struct cur *c, struct sink *k, bool key, size_t idx,
		     uint64_t len, bool esc)
{
	size_t n = gguf_piece(s, k, key, idx, c->in, len);
	if (k->oom)
		return;
	if (esc)
		put_esc(k, k->pbuf, n);
	else
		put_utf8(k, k->pbuf, n);
	c->in += n;
}

/* Whether a GGUF's key i is "format". */
static bool gguf_is_format(const struct wf_st_stream *s, size_t i)
{
	char b[6];
	return wf_gguf_meta_key(s->m->meta_gen, i)->key_len == 6 &&
	       wf_meta_gguf_key_read(s->m, i, 0, 6, b, NULL) == WF_OK && memcmp(b, "format", 6) == 0;
}

/* The entry of sparse list sp for number i, or -1. */
static long sparse_find(const struct wf_st_sparse *sp, size_t i)
{
	size_t lo = 0, hi = sp->n;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (sp->e[mid].idx < i)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sp->n && sp->e[lo].idx == i ? (long)lo : -1;
}

static void step_head(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	uint8_t le[8];
	uint64_t body = s->len - 8;
	for (int b = 0; b < 8; b++)
		le[b] = (uint8_t)(body >> (8 * b));
	put(k, le, 8);
	puts_(k, "{\"__metadata__\":{\"format\":");
	c->kv = s->meta0;
	c->idx = 0;
	c->phase = P_START;
	if (s->fmt_v1 || s->fmt_key != SIZE_MAX) {
		puts_(k, "\"");
		c->in = s->gguf ? 0 : s->fmt_v0 + 1;
		c->sect = S_FMT;
	} else {
		puts_(k, "\"pt\"");
		c->sect = S_META;
	}
}

static void step_fmt(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	if (s->gguf) {
		uint64_t len = wf_gguf_meta_value_len(s->m->meta_gen, s->fmt_key);
		if (c->in < len) {
			gguf_put(s, c, k, false, s->fmt_key, len, false);
		} else {
			puts_(k, "\"");
			c->sect = S_META;
		}
		return;
	}
	const char *j = s->m->metadata_json;
	size_t end = s->fmt_v1 - 1;
	if (c->in < end) {
		size_t b = cut_json(j, c->in, end);
		put_dec(k, j, c->in, b);
		c->in = b;
		return;
	}
	puts_(k, "\"");
	c->sect = S_META;
}

/* Whether the key j[k0..k1) decodes to "format" (written first, not again). */
static bool is_format(struct sink *k, const char *j, size_t k0, size_t k1)
{
	if (k1 - k0 > 64)
		return false;
	k->t1.len = 0;
	wf_gen_decode_string(j, k0, k1, &k->t1);
	return k->t1.len == 6 && memcmp(k->t1.data, "format", 6) == 0;
}

/* Opens __metadata__'s entry for key c->idx: its key whole when it was
 * renamed (true: the value comes next), else just its opening quote. */
static bool open_entry(const struct wf_st_stream *s, const struct cur *c, struct sink *k)
{
	puts_(k, ",");
	long r = sparse_find(&s->keys, c->idx);
	if (r < 0) {
		puts_(k, "\"");
		return false;
	}
	put(k, s->keys.e[r].text, s->keys.e[r].len);
	puts_(k, ":\"");
	return true;
}

/* A GGUF's key c->idx begins (wf_meta.h): as meta_start, from the file. */
static void gguf_meta_start(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	if (c->idx >= wf_gguf_meta_count(s->m->meta_gen)) {
		c->sect = S_TYPES;
		c->phase = P_START;
		return;
	}
	if (gguf_is_format(s, c->idx)) {
		c->idx++;
		return;
	}
	c->phase = open_entry(s, c, k) ? P_VAL : P_KEY;
	c->in = 0;
}

/* A GGUF's key and value, a piece at a time (step_meta's, from the file). */
static void gguf_step_meta(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	const struct wf_gguf_kv *kv = c->phase == P_START ? NULL : wf_gguf_meta_key(s->m->meta_gen, c->idx);
	if (c->phase == P_START) {
		gguf_meta_start(s, c, k);
	} else if (c->phase == P_KEY) {
		if (c->in < kv->key_len) {
			gguf_put(s, c, k, true, c->idx, kv->key_len, false);
			return;
		}
		puts_(k, "\":\"");
		c->phase = P_VAL;
		c->in = 0;
	} else {
		uint64_t len = wf_gguf_meta_value_len(s->m->meta_gen, c->idx);
		if (c->in < len) {
			gguf_put(s, c, k, false, c->idx, len, kv->type != WF_GT_STRING);
			return;
		}
		puts_(k, "\"");
		c->idx++;
		c->phase = P_START;
	}
}

static void meta_start(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	const char *j = s->m->metadata_json;
	size_t next;
	if (!wf_gen_kv_at(j, s->m->metadata_json_len, c->kv, &c->k0, &c->k1, &c->v0, &c->v1, &next)) {
		c->sect = S_TYPES;
		c->phase = P_START;
		return;
	}
	c->kv = next;
	if (is_format(k, j, c->k0, c->k1)) {
		c->idx++;
		return;
	}
	if (open_entry(s, c, k)) {
		c->phase = P_VAL;
		c->in = c->v0 + (j[c->v0] == '"');
	} else {
		c->phase = P_KEY;
		c->in = c->k0 + 1;
	}
}

static void step_meta(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	const char *j = s->m->metadata_json;
	if (c->phase == P_START) {
		meta_start(s, c, k);
	} else if (c->phase == P_KEY) {
		if (c->in < c->k1 - 1) {
			size_t b = cut_json(j, c->in, c->k1 - 1);
			put_dec(k, j, c->in, b);
			c->in = b;
			return;
		}
		puts_(k, "\":\"");
		c->phase = P_VAL;
		c->in = c->v0 + (j[c->v0] == '"');
	} else {
		bool str = j[c->v0] == '"';
		size_t end = str ? c->v1 - 1 : c->v1;
		if (c->in < end) {
			/* a string as its decoded text, other values as their JSON text */
			size_t b = str ? cut_json(j, c->in, end) : cut_raw(j, c->in, end);
			if (str)
				put_dec(k, j, c->in, b);
			else
				put_esc(k, j + c->in, b - c->in);
			c->in = b;
			return;
		}
		puts_(k, "\"");
		c->idx++;
		c->phase = P_START;
	}
}

/* The name of tensor i as model.safetensors holds it, into b (quotes included). */
static void st_name(const struct wf_st_stream *s, size_t i, struct wf_buf *b)
{
	long r = sparse_find(&s->names, i);
	b->len = 0;
	if (r >= 0)
		wf_buf_put(b, s->names.e[r].text, s->names.e[r].len);
	else
		wf_gen_json_str_utf8(b, s->m->tensors[i].name, s->m->tensors[i].name_len);
}

static void step_types(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	const struct wf_model *m = s->m;
	if (c->phase == P_START) {
		c->idx = 0;
		c->any = false;
		c->phase = P_NAME;
		if (s->types)
			puts_(k, ",\"weightfs.stored_types\":\"");
		else
			c->idx = m->n_tensors;
	}
	if (c->idx >= m->n_tensors) {
		puts_(k, s->types ? "}\"}" : "}");
		c->sect = S_TENSORS;
		c->phase = P_START;
		c->idx = 0;
		c->dpos = 0;
		return;
	}
	const struct wf_tensor *t = &m->tensors[c->idx];
	if (strcmp(wf_view_st_dtype(t), "U8") == 0 && t->type != WF_T_U8) {
		/* the types' own JSON, written as one string */
		st_name(s, c->idx, &k->t2);
		k->t1.len = 0;
		wf_buf_putc(&k->t1, c->any ? ',' : '{');
		wf_buf_put(&k->t1, k->t2.data, k->t2.len);
		wf_buf_printf(&k->t1, ":\"%s\"", wf_type_get(t->type)->name);
		if (k->t1.oom || k->t2.oom)
			k->oom = true;
		else
			put_esc(k, k->t1.data, k->t1.len);
		c->any = true;
	}
	c->idx++;
}

/* The rest of tensor idx's entry after its name. */
static void tensor_rest(const struct wf_tensor *t, struct cur *c, struct sink *k)
{
	struct wf_buf *b = &k->t1;
	b->len = 0;
	wf_buf_printf(b, ":{\"dtype\":\"%s\",\"shape\":[", wf_view_st_dtype(t));
	uint64_t dims[WF_MAX_DIMS];
	uint32_t nd = wf_view_shape(t, dims);
	for (uint32_t d = 0; d < nd; d++)
		wf_buf_printf(b, d ? ",%" PRIu64 : "%" PRIu64, dims[d]);
	if (k->offs)
		k->offs[c->idx] = c->dpos;
	wf_buf_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", c->dpos, c->dpos + t->size);
	c->dpos += t->size;
	if (b->oom)
		k->oom = true;
	else
		put(k, b->data, b->len);
}

static void step_tensors(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	const struct wf_model *m = s->m;
	if (c->idx >= m->n_tensors) {
		if (k->offs)
			k->offs[m->n_tensors] = c->dpos;
		c->sect = S_TAIL;
		return;
	}
	const struct wf_tensor *t = &m->tensors[c->idx];
	if (c->phase == P_START) {
		long r = sparse_find(&s->names, c->idx);
		puts_(k, ",");
		if (r >= 0)
			put(k, s->names.e[r].text, s->names.e[r].len);
		else
			puts_(k, "\"");
		c->phase = r >= 0 ? P_REST : P_NAME;
		c->in = 0;
	} else if (c->phase == P_NAME) {
		if (c->in < t->name_len) {
			size_t b = cut_raw(t->name, c->in, t->name_len);
			put_utf8(k, t->name + c->in, b - c->in);
			c->in = b;
		} else {
			puts_(k, "\"");
			c->phase = P_REST;
		}
	} else {
		tensor_rest(t, c, k);
		c->idx++;
		c->phase = P_START;
	}
}

static void step(const struct wf_st_stream *s, struct cur *c, struct sink *k)
{
	switch (c->sect) {
	case S_HEAD: step_head(s, c, k); break;
	case S_FMT: step_fmt(s, c, k); break;
	case S_META:
		if (s->gguf)
			gguf_step_meta(s, c, k);
		else
			step_meta(s, c, k);
		break;
	case S_TYPES: step_types(s, c, k); break;
	case S_TENSORS: step_tensors(s, c, k); break;
	default:
		/* '}' and spaces to a multiple of 8, so the data is aligned */
		puts_(k, "}");
		while (k->pos % 8 != 0)
			puts_(k, " ");
		c->sect = S_DONE;
		break;
	}
}

static bool add_cp(struct wf_st_stream *s, const struct cur *c)
{
	struct cur *p = wf_grow(s->cps, s->n_cps, &s->cap_cps, sizeof *p, 64);
	if (!p)
		return false;
	s->cps = p;
	s->cps[s->n_cps++] = *c;
	return true;
}

static void sink_free(struct sink *k)
{
	free(k->pbuf);
	wf_buf_free(&k->t1);
	wf_buf_free(&k->t2);
	wf_buf_free(&k->t3);
}

/* The measuring pass: the header's length, the data offsets, checkpoints. */
static enum wf_err measure(struct wf_st_stream *s, uint64_t *offs)
{
	struct sink k = {.offs = offs};
	struct cur c = {.sect = S_HEAD};
	uint64_t last = 0;
	bool ok = true;
	s->len = 8; /* the length field is not known yet; only its size counts */
	while (c.sect != S_DONE && !k.oom && ok) {
		c.out = k.pos;
		if (c.sect == S_HEAD || k.pos - last >= STEP) {
			ok = add_cp(s, &c);
			last = k.pos;
		}
		step(s, &c, &k);
	}
	sink_free(&k);
	if (k.rc != WF_OK)
		return k.rc;
	if (k.oom || !ok)
		return WF_ERR_NOMEM;
	s->len = k.pos;
	return WF_OK;
}

/* Where the model's metadata.json object begins, and its "format" string. */
static enum wf_err find_meta(struct wf_st_stream *s)
{
	s->fmt_key = SIZE_MAX;
	if (s->m->meta_gen) {
		s->gguf = true;
		for (size_t i = 0; i < wf_gguf_meta_count(s->m->meta_gen); i++)
			if (wf_gguf_meta_key(s->m->meta_gen, i)->type == WF_GT_STRING && gguf_is_format(s, i))
				s->fmt_key = i;
		return WF_OK;
	}
	const char *j = s->m->metadata_json;
	size_t n = s->m->metadata_json_len, i = 0, k0, k1, v0, v1, next;
	while (j && i < n && strchr(" \t\r\n", j[i]))
		i++;
	if (!j || i >= n || j[i] != '{')
		return WF_ERR_FORMAT;
	s->meta0 = ++i;
	while (wf_gen_kv_at(j, n, i, &k0, &k1, &v0, &v1, &next)) {
		if (k1 - k0 == 8 && memcmp(j + k0, "\"format\"", 8) == 0 && j[v0] == '"')
			s->fmt_v0 = v0, s->fmt_v1 = v1;
		i = next;
	}
	return WF_OK;
}

enum wf_err wf_st_stream_new(const struct wf_model *m, struct wf_st_stream **out, uint64_t *len,
			     uint64_t **offsets)
{
	static atomic_uint_fast64_t ids;
	*out = NULL;
	*offsets = NULL;
	struct wf_st_stream *s = calloc(1, sizeof *s);
	uint64_t *offs = malloc((m->n_tensors + 1) * sizeof *offs);
	if (!s || !offs) {
		free(s);
		free(offs);
		return WF_ERR_NOMEM;
	}
	s->m = m;
	s->id = atomic_fetch_add(&ids, 1) + 1;
	s->types = wf_st_has_types(m);
	enum wf_err rc = find_meta(s);
	if (rc == WF_OK)
		rc = wf_st_renames(m, &s->names, &s->keys);
	if (rc == WF_OK)
		rc = measure(s, offs);
	if (rc != WF_OK) {
		wf_st_stream_free(s);
		free(offs);
		return rc;
	}
	*out = s;
	*len = s->len;
	*offsets = offs;
	return WF_OK;
}

void wf_st_stream_free(struct wf_st_stream *s)
{
	if (!s)
		return;
	wf_st_sparse_free(&s->names);
	wf_st_sparse_free(&s->keys);
	free(s->cps);
	free(s);
}

uint64_t wf_st_stream_id(const struct wf_st_stream *s)
{
	return s->id;
}

enum wf_err wf_st_stream_read(const struct wf_st_stream *s, uint64_t off, size_t n, char *buf)
{
	if (off > s->len || n > s->len - off)
		return WF_ERR_RANGE;
	/* the last checkpoint at or before off */
	size_t lo = 0, hi = s->n_cps;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (s->cps[mid].out <= off)
			lo = mid;
		else
			hi = mid;
	}
	struct cur c = s->cps[lo];
	struct sink k = {.pos = c.out, .lo = off, .hi = off + n, .buf = buf};
	while (c.sect != S_DONE && !k.oom && k.pos < k.hi)
		step(s, &c, &k);
	sink_free(&k);
	if (k.rc != WF_OK)
		return k.rc;
	return k.oom ? WF_ERR_NOMEM : k.pos >= k.hi ? WF_OK : WF_ERR_RANGE;
}
