/* wf_gguf.c - GGUF (versions 2 and 3, little-endian) parser.
 *
 * Reads from a byte buffer through a bounds-checked cursor; every count
 * and length is checked against the bytes left before anything is
 * allocated, so what a header can make us allocate is bounded by the
 * file's size.  The rules follow ggml's reader (gguf.cpp), with two
 * deliberate differences: tensor names are not limited to 63 bytes, and
 * tensor offsets need only be aligned, inside the file and not overlapping
 * another tensor's bytes, not packed back to back in order as ggml wants.
 * Gaps and any order are harmless; overlaps are refused because they let a
 * small file present many times its size (docs/security.md).
 */
#include "model/wf_gguf.h"
#include "base/wf_names.h"
#include "model/wf_gguf_meta.h"
#include "codec/wf_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cur {
	const uint8_t *p;
	uint64_t len;
	uint64_t pos;
	char *err;
	const char *what; /* the field being read, for "truncated" messages */
};

static enum wf_err truncated(struct cur *c)
{
	return wf_fail(c->err, WF_ERR_FORMAT, "%s: truncated at byte %" PRIu64 " (file is %" PRIu64 " bytes)",
		       c->what, c->pos, c->len);
}

static uint64_t left(const struct cur *c)
{
	return c->len - c->pos;
}

static enum wf_err rd_u32(struct cur *c, uint32_t *v)
{
	if (left(c) < 4)
		return truncated(c);
	*v = wf_le32(c->p + c->pos);
	c->pos += 4;
	return WF_OK;
}

static enum wf_err rd_u64(struct cur *c, uint64_t *v)
{
	if (left(c) < 8)
		return truncated(c);
	*v = wf_le64(c->p + c->pos);
	c->pos += 8;
	return WF_OK;
}

/* A GGUF string: u64 length then bytes. *s points into the buffer. */
static enum wf_err rd_str(struct cur *c, const uint8_t **s, uint64_t *n)
{
	enum wf_err rc = rd_u64(c, n);
	if (rc)
		return rc;
	if (*n > left(c))
		return wf_fail(c->err, WF_ERR_FORMAT,
			       "%s: string length %" PRIu64 " at byte %" PRIu64 " runs past end of file",
			       c->what, *n, c->pos - 8);
	*s = c->p + c->pos;
	c->pos += *n;
	return WF_OK;
}

/* Skips over a value of type t (elem/count for arrays already read),
 * checking it fits. */
static enum wf_err skip_value(struct cur *c, uint32_t t, uint32_t elem, uint64_t count)
{
	if (t == WF_GT_STRING) {
		const uint8_t *s;
		uint64_t n;
		return rd_str(c, &s, &n);
	}
	if (t == WF_GT_ARRAY) {
		if (elem == WF_GT_STRING) {
			/* each element needs at least its 8-byte length */
			if (count > left(c) / 8)
				return wf_fail(c->err, WF_ERR_FORMAT,
					       "%s: array of %" PRIu64 " strings cannot fit in the %" PRIu64
					       " bytes left", c->what, count, left(c));
			for (uint64_t i = 0; i < count; i++) {
				const uint8_t *s;
				uint64_t n;
				enum wf_err rc = rd_str(c, &s, &n);
				if (rc)
					return rc;
			}
			return WF_OK;
		}
		uint64_t bytes;
		if (!wf_mul_ok(count, wf_gguf_type_size(elem), &bytes) || bytes > left(c))
			return wf_fail(c->err, WF_ERR_FORMAT,
				       "%s: array of %" PRIu64 " %s values runs past end of file",
				       c->what, count, wf_gguf_type_name(elem));
		c->pos += bytes;
		return WF_OK;
	}
	if (left(c) < wf_gguf_type_size(t))
		return truncated(c);
	c->pos += wf_gguf_type_size(t);
	return WF_OK;
}

/* metadata.json: every key/value pair, in file order, made a window at a
 * time on read (wf_gguf_meta.h); here only measured. */
static enum wf_err metadata_json(struct wf_model *m, char *err)
{
	enum wf_err rc = wf_gguf_meta_new(m->data, m->data_len, m->kvs, &m->meta_gen);
	if (rc == WF_ERR_NOMEM)
		return wf_fail(err, rc, "out of memory writing metadata.json");
	if (rc != WF_OK)
		return wf_fail(err, rc, "metadata.json: the file changed while it was read");
	return WF_OK;
}

/* Records llama.cpp's split keys (gguf-split writes split.no and
 * split.count as u16 and split.tensors.count as i32; any non-negative
 * integer is taken) for the split-set rules in wf_set.c. */
static enum wf_err split_key(struct cur *c, struct wf_model *m, const struct wf_gguf_vals *v, int64_t id,
			     const char *what)
{
	static const char *const names[] = {"split.no", "split.count", "split.tensors.count"};
	int64_t *dst[] = {&m->split_no, &m->split_count, &m->split_tensors};
	const struct wf_gguf_kv *kv = wf_gguf_at(v, id);
	for (size_t i = 0; i < WF_ARRAY_LEN(names); i++) {
		if (kv->key_len != strlen(names[i]) || memcmp(v->data + kv->key, names[i], kv->key_len) != 0)
			continue;
		uint64_t x;
		if (wf_gguf_uint(v, id, INT64_MAX, &x) != WF_GGUF_OK)
			return wf_fail(c->err, WF_ERR_FORMAT, "%s: must be a non-negative integer", what);
		*dst[i] = (int64_t)x;
	}
	return WF_OK;
}

/* Takes in the keys that change how the file is read: general.alignment
 * and the split keys. */
static enum wf_err known_key(struct cur *c, struct wf_model *m, const struct wf_gguf_vals *v, int64_t id,
			     const char *what)
{
	const struct wf_gguf_kv *kv = wf_gguf_at(v, id);
	if (kv->key_len != 17 || memcmp(v->data + kv->key, "general.alignment", 17) != 0)
		return split_key(c, m, v, id, what);
	uint64_t a;
	if (kv->type != WF_GT_UINT32 || wf_gguf_uint(v, id, UINT32_MAX, &a) != WF_GGUF_OK)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: must be of type u32, not %s", what,
			       wf_gguf_type_name(kv->type));
	if (a == 0 || (a & (a - 1)) != 0)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: %" PRIu64 " is not a power of two", what, a);
	m->alignment = (uint32_t)a;
	return WF_OK;
}

/* Key/value i: its key, type and value checked to lie in the file, added
 * to the index (a second of the same key is refused, as ggml does). */
static enum wf_err parse_kv(struct cur *c, struct wf_model *m, uint64_t i)
{
	char q[96], what[160];
	struct wf_gguf_kv kv = {0};
	const uint8_t *key;
	uint32_t type, elem = 0;
	enum wf_err rc;
	snprintf(what, sizeof what, "metadata key %" PRIu64, i);
	c->what = what;
	if ((rc = rd_str(c, &key, &kv.key_len)))
		return rc;
	kv.key = (uint64_t)(key - c->p);
	snprintf(what, sizeof what, "metadata key %s", wf_quote(q, sizeof q, key, (size_t)kv.key_len));
	if (kv.key_len == 0)
		return wf_fail(c->err, WF_ERR_FORMAT, "metadata key %" PRIu64 ": empty key", i);
	struct wf_gguf_vals v = {m->kvs, c->p, c->len};
	if (wf_gguf_findn(&v, key, (size_t)kv.key_len) >= 0)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: duplicate key", what);
	if ((rc = rd_u32(c, &type)))
		return rc;
	if (type >= WF_GT_COUNT)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: unknown value type %" PRIu32, what, type);
	if (type == WF_GT_ARRAY) {
		if ((rc = rd_u32(c, &elem)) || (rc = rd_u64(c, &kv.count)))
			return rc;
		if (elem >= WF_GT_COUNT)
			return wf_fail(c->err, WF_ERR_FORMAT, "%s: unknown array element type %" PRIu32, what, elem);
		if (elem == WF_GT_ARRAY)
			return wf_fail(c->err, WF_ERR_UNSUP, "%s: arrays of arrays are not supported (ggml rejects them)",
				       what);
	}
	kv.type = (uint8_t)type;
	kv.elem = (uint8_t)elem;
	kv.val = c->pos;
	if ((rc = skip_value(c, type, elem, kv.count)))
		return rc;
	kv.end = c->pos;
	if (wf_gguf_kvs_add(m->kvs, c->p, c->len, &kv) != 1)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: duplicate key", what);
	return known_key(c, m, &v, (int64_t)m->kvs->n - 1, what);
}

static enum wf_err parse_kvs(struct cur *c, struct wf_model *m, uint64_t n_kv)
{
	/* smallest pair: 8-byte key length, 1 key byte, 4-byte type, 1 value byte */
	if (n_kv > left(c) / 14)
		return wf_fail(c->err, WF_ERR_FORMAT,
			       "header: n_kv %" PRIu64 " cannot fit in a %" PRIu64 "-byte file", n_kv, c->len);
	if (!(m->kvs = wf_gguf_kvs_new((size_t)n_kv)))
		return wf_fail(c->err, WF_ERR_NOMEM, "out of memory for %" PRIu64 " metadata keys", n_kv);
	enum wf_err rc = WF_OK;
	for (uint64_t i = 0; i < n_kv && rc == WF_OK; i++)
		rc = parse_kv(c, m, i);
	return rc;
}


/* Refuses two tensors whose bytes overlap, in O(n log n): sorted by start,
 * a span overlaps an earlier one exactly when it starts before the furthest
 * end seen so far.  Tensors of no bytes overlap nothing. */
static enum wf_err check_overlaps(const struct wf_model *m, char *err)
{
	size_t n = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		n += m->tensors[i].nbytes > 0;
	if (n < 2)
		return WF_OK;
	struct wf_span *sp = malloc(n * sizeof *sp);
	if (!sp)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory checking %zu tensors for overlaps", n);
	n = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		if (t->nbytes > 0)
			sp[n++] = (struct wf_span){t->offset, t->offset + t->nbytes, i};
	}
	qsort(sp, n, sizeof *sp, wf_span_cmp);
	enum wf_err rc = WF_OK;
	size_t far = 0; /* the span with the furthest end so far */
	for (size_t i = 1; i < n; i++) {
		if (sp[i].begin < sp[far].end) {
			const struct wf_tensor *a = &m->tensors[sp[far].tensor], *b = &m->tensors[sp[i].tensor];
			char qa[96], qb[96];
			rc = wf_fail(err, WF_ERR_FORMAT,
				     "tensor %s: data [%" PRIu64 ", +%" PRIu64 ") overlaps tensor %s [%" PRIu64
				     ", +%" PRIu64 ") in the data section",
				     wf_quote(qb, sizeof qb, b->name, b->name_len), b->offset - m->data_offset,
				     b->nbytes, wf_quote(qa, sizeof qa, a->name, a->name_len),
				     a->offset - m->data_offset, a->nbytes);
			break;
		}
		if (sp[i].end > sp[far].end)
			far = i;
	}
	free(sp);
	return rc;
}

/* Reads tensor info i into m->tensors[i] (counted in m->n_tensors as soon
 * as it owns a name, so a failure frees it) and its offset into *off. */
static enum wf_err parse_tensor_info(struct cur *c, struct wf_model *m, uint64_t i, struct wf_names *names,
				     uint64_t *off)
{
	char q[96], what[160];
	struct wf_tensor *t = &m->tensors[i];
	snprintf(what, sizeof what, "tensor %" PRIu64, i);
	c->what = what;
	const uint8_t *name;
	uint64_t name_len;
	enum wf_err rc = rd_str(c, &name, &name_len);
	if (rc)
		return rc;
	t->name = malloc((size_t)name_len + 1);
	if (!t->name)
		return wf_fail(c->err, WF_ERR_NOMEM, "out of memory for tensor names");
	memcpy(t->name, name, (size_t)name_len);
	t->name[name_len] = '\0';
	t->name_len = (size_t)name_len;
	m->n_tensors = (size_t)i + 1;
	snprintf(what, sizeof what, "tensor %s", wf_quote(q, sizeof q, name, (size_t)name_len));
	if (wf_names_put(names, name, (size_t)name_len, 0) != WF_NAMES_NONE)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: duplicate tensor name", what);
	uint32_t n_dims;
	if ((rc = rd_u32(c, &n_dims)))
		return rc;
	if (n_dims > 4)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: n_dims %" PRIu32 " exceeds GGUF's 4", what, n_dims);
	t->ndim = n_dims;
	t->shape = calloc(n_dims ? n_dims : 1, sizeof *t->shape);
	if (!t->shape)
		return wf_fail(c->err, WF_ERR_NOMEM, "out of memory for tensor shapes");
	for (uint32_t d = 0; d < n_dims; d++) {
		uint64_t ne;
		if ((rc = rd_u64(c, &ne)))
			return rc;
		if (ne > INT64_MAX)
			return wf_fail(c->err, WF_ERR_FORMAT, "%s: ne[%" PRIu32 "] = %" PRIu64 " is negative as int64",
				       what, d, ne);
		t->shape[n_dims - 1 - d] = ne; /* numpy order is ne reversed */
	}
	uint32_t gtype;
	if ((rc = rd_u32(c, &gtype)))
		return rc;
	t->type = wf_type_from_gguf(gtype);
	if (t->type < 0)
		return wf_fail(c->err, WF_ERR_FORMAT, "%s: unknown or removed ggml type id %" PRIu32, what, gtype);
	if ((rc = rd_u64(c, off)))
		return rc;
	return wf_tensor_sizes(t, true, c->err);
}

/* Places the data section after the tensor infos (at the next multiple of
 * the alignment) and each tensor at its offset in it, inside the file. */
static enum wf_err place_tensors(struct cur *c, struct wf_model *m, const uint64_t *offs)
{
	char q[96];
	uint64_t data_off = c->pos;
	if (m->n_tensors > 0) {
		uint64_t a = m->alignment;
		if (!wf_add_ok(data_off, a - 1, &data_off))
			return wf_fail(c->err, WF_ERR_FORMAT, "header: data section offset overflows");
		data_off -= data_off % a;
		if (data_off > c->len)
			return wf_fail(c->err, WF_ERR_FORMAT,
				       "header: data section would start at byte %" PRIu64
				       ", past end of file (%" PRIu64 " bytes)", data_off, c->len);
	}
	m->data_offset = data_off;
	for (size_t i = 0; i < m->n_tensors; i++) {
		struct wf_tensor *t = &m->tensors[i];
		uint64_t abs, end;
		wf_quote(q, sizeof q, t->name, t->name_len);
		if (offs[i] % m->alignment != 0)
			return wf_fail(c->err, WF_ERR_FORMAT,
				       "tensor %s: offset %" PRIu64 " is not a multiple of the alignment %" PRIu32,
				       q, offs[i], m->alignment);
		if (!wf_add_ok(data_off, offs[i], &abs) || !wf_add_ok(abs, t->nbytes, &end) || end > c->len)
			return wf_fail(c->err, WF_ERR_FORMAT,
				       "tensor %s: data [%" PRIu64 ", +%" PRIu64 ") at offset %" PRIu64
				       " in the data section runs past end of file (%" PRIu64 " bytes)",
				       q, offs[i], t->nbytes, offs[i], c->len);
		t->offset = abs;
	}
	return WF_OK;
}

static enum wf_err parse_tensors(struct cur *c, struct wf_model *m, uint64_t n_tensors)
{
	/* smallest record: name length 8 + 1, n_dims 4, type 4, offset 8 */
	if (n_tensors > left(c) / 25)
		return wf_fail(c->err, WF_ERR_FORMAT,
			       "header: n_tensors %" PRIu64 " cannot fit in a %" PRIu64 "-byte file",
			       n_tensors, c->len);
	m->tensors = calloc(n_tensors ? n_tensors : 1, sizeof *m->tensors);
	uint64_t *offs = calloc(n_tensors ? n_tensors : 1, sizeof *offs);
	struct wf_names names = {0}; /* as for keys */
	enum wf_err rc = WF_OK;
	if (!m->tensors || !offs || !wf_names_init(&names, (size_t)n_tensors)) {
		rc = wf_fail(c->err, WF_ERR_NOMEM, "out of memory for %" PRIu64 " tensors", n_tensors);
		goto out;
	}
	for (uint64_t i = 0; i < n_tensors && rc == WF_OK; i++)
		rc = parse_tensor_info(c, m, i, &names, &offs[i]);
	if (rc == WF_OK && (rc = place_tensors(c, m, offs)) == WF_OK)
		rc = check_overlaps(m, c->err);
out:
	free(offs);
	wf_names_free(&names);
	return rc;
}

bool wf_gguf_magic(const uint8_t *buf, uint64_t len)
{
	return len >= 4 && (memcmp(buf, "GGUF", 4) == 0 || memcmp(buf, "FUGG", 4) == 0);
}

enum wf_err wf_gguf_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err)
{
	*out = NULL;
	struct cur c = {.p = buf, .len = len, .err = err, .what = "header"};
	if (!wf_gguf_magic(buf, len))
		return wf_fail(err, WF_ERR_FORMAT, "header: not a GGUF file (bad magic)");
	c.pos = 4;
	uint32_t version;
	enum wf_err rc = rd_u32(&c, &version);
	if (rc)
		return rc;
	/* ggml's test: a byte-swapped version has its low half zero */
	if (memcmp(buf, "FUGG", 4) == 0 || (version & 0xFFFF) == 0)
		return wf_fail(err, WF_ERR_UNSUP, "header: big-endian GGUF files are not supported");
	if (version == 1)
		return wf_fail(err, WF_ERR_UNSUP, "header: GGUF version 1 is obsolete and not supported");
	if (version != 2 && version != 3)
		return wf_fail(err, WF_ERR_UNSUP, "header: unsupported GGUF version %" PRIu32, version);
	uint64_t n_tensors, n_kv;
	if ((rc = rd_u64(&c, &n_tensors)) || (rc = rd_u64(&c, &n_kv)))
		return rc;

	struct wf_model *m = wf_model_new(WF_FMT_GGUF, buf, len);
	if (!m)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	m->version = version;
	m->alignment = 32; /* GGUF_DEFAULT_ALIGNMENT */
	m->n_kv = n_kv;
	if ((rc = parse_kvs(&c, m, n_kv)) || (rc = parse_tensors(&c, m, n_tensors)) || (rc = metadata_json(m, err))) {
		wf_model_free(m);
		return rc;
	}
	*out = m;
	return WF_OK;
}
