/* wf_st.c - safetensors parser.
 *
 * Enforces the reference loader's rules (huggingface/safetensors
 * tensor.rs): header length at most 100 MB and inside the file, header
 * valid UTF-8 and a JSON object, __metadata__ an object of strings, every
 * other key a tensor {dtype, shape, data_offsets}, byte length equal to
 * elements times dtype size, offsets contiguous from 0 with no gap or
 * overlap, and the data ending exactly at end of file.  Duplicate keys are
 * refused too (the reference does, with a misleading message).
 */
#include "model/wf_st.h"
#include "base/wf_buf.h"
#include "base/wf_names.h"
#include "model/wf_meta.h"
#include "model/wf_json_scan.h"
#include "codec/wf_types.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define ST_MAX_HEADER 100000000ULL
/* JSON numbers pass through a double in cJSON; above 2^53 they are not exact. */
#define ST_MAX_INT 9007199254740992.0

/* cJSON reports a failed allocation exactly as it reports a syntax error
 * (a NULL tree), so out of memory would read as a malformed file.  Its
 * allocations go through these hooks, which note a failure in a
 * thread-local flag; wf_st_parse clears it before parsing and checks it
 * when cJSON fails.  Thread-local because the hooks are process-wide and
 * another thread may be parsing at the same time. */
static _Thread_local bool cj_oom;
/* allocations left before they fail (test hook); negative: never */
static _Thread_local long cj_fail_after = -1;
static pthread_once_t cj_hooks_once = PTHREAD_ONCE_INIT;

static void *cj_malloc(size_t n)
{
	if (cj_fail_after == 0) {
		cj_oom = true;
		return NULL;
	}
	if (cj_fail_after > 0)
		cj_fail_after--;
	void *p = malloc(n);
	if (!p)
		cj_oom = true;
	return p;
}

static void cj_free(void *p)
{
	free(p);
}

static void cj_hooks_init(void)
{
	cJSON_Hooks h = {.malloc_fn = cj_malloc, .free_fn = cj_free};
	cJSON_InitHooks(&h);
}

void wf_json_fail_after(long n)
{
	pthread_once(&cj_hooks_once, cj_hooks_init);
	cj_fail_after = n;
}

static bool is_ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* cJSON turns \u0000 into a NUL that ends its C strings, which would
 * silently shorten a name; find such escapes in the raw text first. */
static bool has_nul_escape(const uint8_t *s, uint64_t n)
{
	for (uint64_t i = 0; i + 1 < n; i++) {
		if (s[i] != '\\')
			continue;
		if (s[i + 1] == 'u' && i + 5 < n && memcmp(s + i + 2, "0000", 4) == 0)
			return true;
		i++; /* skip the escaped character */
	}
	return false;
}

static uint64_t skip_digits(const uint8_t *s, uint64_t n, uint64_t i)
{
	while (i < n && s[i] >= '0' && s[i] <= '9')
		i++;
	return i;
}

/* Where the lexer is, for one question: is a number an element of a
 * tensor's shape or data_offsets (an array at depth 3 under a key of the
 * tensor's object)?  A key written with escapes may decode to "shape", so
 * it counts too. */
struct dims_ctx {
	int depth;           /* { and [ open */
	int dims_depth;      /* depth of the shape/data_offsets array we are in, or 0 */
	bool last_dims;      /* the last string at depth 2 names shape or data_offsets */
	bool key_dims;       /* ... and it was a key */
};

static void dims_string(struct dims_ctx *d, const uint8_t *s, uint64_t n)
{
	if (d->depth == 2)
		d->last_dims = (n == 5 && memcmp(s, "shape", 5) == 0) ||
			       (n == 12 && memcmp(s, "data_offsets", 12) == 0) || memchr(s, '\\', n) != NULL;
}

static void dims_punct(struct dims_ctx *d, uint8_t c)
{
	if (c == ':' && d->depth == 2)
		d->key_dims = d->last_dims;
	else if (c == ',' && d->depth == 2)
		d->key_dims = false;
	else if (c == '{' || c == '[')
		d->dims_depth = (++d->depth == 3 && c == '[' && d->key_dims) ? 3 : d->dims_depth;
	else if (c == '}' || c == ']')
		d->dims_depth = d->depth-- == d->dims_depth ? 0 : d->dims_depth;
}

/* The end of the number at s[i], or n + 1 when it is no JSON number;
 * *frac tells whether it has a fraction or an exponent. */
static uint64_t lex_number(const uint8_t *s, uint64_t n, uint64_t i, bool *frac)
{
	*frac = false;
	if (s[i] == '-')
		i++;
	if (i < n && s[i] == '0')
		i++;
	else if (i < n && s[i] >= '1' && s[i] <= '9')
		i = skip_digits(s, n, i);
	else
		return n + 1;
	if (i < n && s[i] == '.') {
		uint64_t d = skip_digits(s, n, i + 1);
		if (d == i + 1)
			return n + 1;
		i = d;
		*frac = true;
	}
	if (i < n && (s[i] == 'e' || s[i] == 'E')) {
		*frac = true;
		i++;
		if (i < n && (s[i] == '+' || s[i] == '-'))
			i++;
		uint64_t d = skip_digits(s, n, i);
		if (d == i)
			return n + 1;
		i = d;
	}
	if (i < n && memchr("0123456789+-.eE", s[i], 15))
		return n + 1;
	return i;
}

/* cJSON is laxer than JSON (RFC 8259) where the reference's serde_json is
 * not: it skips any control byte as whitespace, keeps raw control bytes in
 * strings and hands 01, 1. or 1.e5 to strtod.  Check the tokens here;
 * cJSON still checks the grammar.  Returns the offset of the first bad
 * token, or n.  *frac (n if none) gets the offset of the first element of
 * a shape or data_offsets written with a fraction or an exponent: cJSON
 * reads 1.0 and 1e0 as 1, the reference (integers) refuses them. */
static uint64_t json_lex_bad(const uint8_t *s, uint64_t n, uint64_t *frac)
{
	struct dims_ctx d = {0};
	*frac = n;
	uint64_t i = 0;
	while (i < n) {
		uint8_t c = s[i];
		if (c == '"') {
			uint64_t from = ++i;
			for (; i < n && s[i] != '"'; i++) {
				if (s[i] < 0x20)
					return i;
				if (s[i] == '\\')
					i++; /* cJSON checks the escape itself */
			}
			dims_string(&d, s + from, (i < n ? i : n) - from);
			i++;
		} else if (c == '-' || (c >= '0' && c <= '9')) {
			bool fr;
			uint64_t end = lex_number(s, n, i, &fr);
			if (end > n)
				return i;
			if (fr && d.dims_depth && d.depth == d.dims_depth && *frac == n)
				*frac = i;
			i = end;
		} else if (is_ws(c) || memchr("{}[],:", c, 6) || (c >= 'a' && c <= 'z')) {
			dims_punct(&d, c);
			i++; /* letters: cJSON checks true, false, null */
		} else {
			return i;
		}
	}
	return n;
}

/* Reads a JSON number that must be a non-negative integer below 2^53. */
static bool get_uint(const cJSON *j, uint64_t *v)
{
	if (!cJSON_IsNumber(j))
		return false;
	double d = j->valuedouble;
	if (!(d >= 0) || d >= ST_MAX_INT || floor(d) != d)
		return false;
	*v = (uint64_t)d;
	return true;
}


/* metadata.json from __metadata__, an object of strings (wf_meta.h). */
static enum wf_err parse_metadata(struct wf_model *m, const cJSON *meta, char *err)
{
	char q[96];
	if (!cJSON_IsObject(meta))
		return wf_fail(err, WF_ERR_FORMAT, "header: __metadata__ is not an object");
	struct wf_meta_json w = {0};
	size_t n = 0;
	for (const cJSON *e = meta->child; e; e = e->next)
		n++;
	/* two equal keys: readers keep one or the other, and metadata.json
	 * would hold both */
	struct wf_names keys = {0};
	if (!wf_names_init(&keys, n)) {
		wf_names_free(&keys);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	for (const cJSON *e = meta->child; e; e = e->next) {
		const char *why = !cJSON_IsString(e) ? "value is not a string"
				  : wf_names_put(&keys, e->string, strlen(e->string), 0) != WF_NAMES_NONE ? "given twice"
				  : NULL;
		if (why) {
			wf_names_free(&keys);
			wf_meta_json_free(&w);
			return wf_fail(err, WF_ERR_FORMAT, "__metadata__ key %s: %s", wf_quote(q, sizeof q, e->string,
				       strlen(e->string)), why);
		}
		wf_meta_json_key(&w, e->string, strlen(e->string));
		wf_buf_json_str(&w.b, e->valuestring, strlen(e->valuestring));
	}
	wf_names_free(&keys);
	return wf_meta_json_finish(&w, m, err);
}

static enum wf_err parse_tensor(struct wf_tensor *t, const cJSON *e, struct wf_span *sp, char *err)
{
	char q[96];
	wf_quote(q, sizeof q, e->string, strlen(e->string));
	if (!cJSON_IsObject(e))
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: entry is not an object", q);
	/* cJSON finds the first of two equal keys, Python's json the last:
	 * a repeated field would read differently elsewhere */
	static const char *const fields[] = {"dtype", "shape", "data_offsets"};
	unsigned seen[3] = {0};
	for (const cJSON *f = e->child; f; f = f->next)
		for (int k = 0; k < 3; k++)
			if (strcmp(f->string, fields[k]) == 0 && seen[k]++)
				return wf_fail(err, WF_ERR_FORMAT, "tensor %s: %s given twice", q, fields[k]);
	const cJSON *dtype = cJSON_GetObjectItemCaseSensitive(e, "dtype");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(e, "shape");
	const cJSON *offs = cJSON_GetObjectItemCaseSensitive(e, "data_offsets");
	if (!cJSON_IsString(dtype))
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: dtype missing or not a string", q);
	if (!cJSON_IsArray(shape))
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: shape missing or not an array", q);
	if (!cJSON_IsArray(offs) || cJSON_GetArraySize(offs) != 2)
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: data_offsets missing or not an array of two integers", q);
	t->type = wf_type_from_st(dtype->valuestring, strlen(dtype->valuestring));
	if (t->type < 0) {
		char d[64];
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: unknown dtype %s", q,
			       wf_quote(d, sizeof d, dtype->valuestring, strlen(dtype->valuestring)));
	}
	int nd = cJSON_GetArraySize(shape);
	if (nd > WF_MAX_DIMS)
		return wf_fail(err, WF_ERR_UNSUP, "tensor %s: %d dimensions, more than numpy's %d", q, nd,
			       WF_MAX_DIMS);
	t->ndim = (uint32_t)nd;
	t->shape = calloc(nd ? (size_t)nd : 1, sizeof *t->shape);
	if (!t->shape)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	int i = 0;
	for (const cJSON *d = shape->child; d; d = d->next, i++) {
		if (!get_uint(d, &t->shape[i]))
			return wf_fail(err, WF_ERR_FORMAT,
				       "tensor %s: shape[%d] is not a non-negative integer below 2^53", q, i);
	}
	if (!get_uint(offs->child, &sp->begin) || !get_uint(offs->child->next, &sp->end))
		return wf_fail(err, WF_ERR_FORMAT,
			       "tensor %s: data_offsets are not non-negative integers below 2^53", q);
	if (sp->end < sp->begin)
		return wf_fail(err, WF_ERR_FORMAT, "tensor %s: data_offsets [%" PRIu64 ", %" PRIu64 "] end before they begin",
			       q, sp->begin, sp->end);
	enum wf_err rc = wf_tensor_sizes(t, false, err);
	if (rc)
		return rc;
	if (sp->end - sp->begin != t->nbytes)
		return wf_fail(err, WF_ERR_FORMAT,
			       "tensor %s: data_offsets span %" PRIu64 " bytes but %" PRIu64 " elements of %s take %" PRIu64,
			       q, sp->end - sp->begin, t->nelems, dtype->valuestring, t->nbytes);
	return WF_OK;
}

/* Refuses two tensors of one name, as the reference does (cJSON keeps
 * both entries of a repeated key). */
static enum wf_err check_unique(const struct wf_model *m, char *err)
{
	char q[96];
	struct wf_names names = {0};
	if (!wf_names_init(&names, m->n_tensors)) {
		wf_names_free(&names);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	enum wf_err rc = WF_OK;
	for (size_t i = 0; i < m->n_tensors && rc == WF_OK; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		if (wf_names_put(&names, t->name, t->name_len, 0) != WF_NAMES_NONE)
			rc = wf_fail(err, WF_ERR_FORMAT, "tensor %s: duplicate tensor name",
				     wf_quote(q, sizeof q, t->name, t->name_len));
	}
	wf_names_free(&names);
	return rc;
}

/* Checks that the tensors' data_offsets tile the nbuf bytes after the
 * header exactly, from 0 with no gap or overlap, as the reference loader
 * wants, and places each tensor.  Sorts spans. */
static enum wf_err tile_data(struct wf_model *m, struct wf_span *spans, uint64_t nbuf, char *err)
{
	char q[96];
	qsort(spans, m->n_tensors, sizeof *spans, wf_span_cmp);
	uint64_t at = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[spans[i].tensor];
		if (spans[i].begin != at)
			return wf_fail(err, WF_ERR_FORMAT,
				       "tensor %s: data_offsets begin at %" PRIu64 " but the tensor before ends at %" PRIu64
				       " (%s)", wf_quote(q, sizeof q, t->name, t->name_len), spans[i].begin, at,
				       spans[i].begin > at ? "gap" : "overlap");
		at = spans[i].end;
	}
	if (at != nbuf)
		return wf_fail(err, WF_ERR_FORMAT,
			       "data: tensors cover %" PRIu64 " bytes but the file holds %" PRIu64 " after the header (%s)",
			       at, nbuf, at < nbuf ? "trailing bytes" : "file truncated");
	for (size_t i = 0; i < m->n_tensors; i++)
		m->tensors[spans[i].tensor].offset = m->data_offset + spans[i].begin;
	return WF_OK;
}

/* One top-level entry, parsed alone by cJSON: a tensor, or __metadata__. */
static enum wf_err parse_entry(struct wf_model *m, struct wf_span *spans, const cJSON *e, bool *have_meta,
			       char *err)
{
	size_t klen = strlen(e->string);
	if (strcmp(e->string, "__metadata__") == 0) {
		if (*have_meta)
			return wf_fail(err, WF_ERR_FORMAT, "header: duplicate key '__metadata__'");
		*have_meta = true;
		return parse_metadata(m, e, err);
	}
	struct wf_tensor *t = &m->tensors[m->n_tensors];
	struct wf_span *sp = &spans[m->n_tensors];
	t->name = malloc(klen + 1);
	if (!t->name)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	memcpy(t->name, e->string, klen + 1);
	t->name_len = klen;
	sp->tensor = m->n_tensors++;
	return parse_tensor(t, e, sp, err);
}

/* Counts the object's entries, checking its structure; *end gets the
 * offset just after its '}'. */
static enum wf_err count_entries(const uint8_t *s, uint64_t n, size_t *count, uint64_t *end, char *err)
{
	struct wf_json_entry e;
	uint64_t pos = 1;
	int r;
	*count = 0;
	while ((r = wf_json_next(s, n, &pos, &e)) == 1)
		(*count)++;
	if (r < 0)
		return wf_fail(err, WF_ERR_FORMAT, "header: invalid JSON near byte %" PRIu64, 8 + pos);
	*end = pos;
	return WF_OK;
}

/* The header's object s[0..n) (s[0] is its '{', `at` its offset in the
 * header): __metadata__ (at most once) and one entry per tensor, whose
 * bytes are the nbuf after the header.  Each entry is handed to cJSON
 * alone, so the peak is one entry's tree, not the whole header's. */
static enum wf_err parse_header(struct wf_model *m, const uint8_t *s, uint64_t n, uint64_t at, uint64_t nbuf,
				char *err)
{
	size_t count = 0;
	uint64_t end = 0;
	enum wf_err rc = count_entries(s, n, &count, &end, err);
	if (rc != WF_OK)
		return rc;
	if (end != n)
		return wf_fail(err, WF_ERR_FORMAT, "header: unexpected bytes after the JSON object at byte %" PRIu64,
			       8 + at + end);
	m->tensors = calloc(count ? count : 1, sizeof *m->tensors);
	struct wf_span *spans = calloc(count ? count : 1, sizeof *spans);
	struct wf_buf one = {0};
	if (!m->tensors || !spans) {
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory for %zu tensors", count);
		goto out;
	}
	bool have_meta = false;
	struct wf_json_entry e;
	uint64_t pos = 1;
	while (rc == WF_OK && wf_json_next(s, n, &pos, &e) == 1) {
		one.len = 0;
		wf_buf_putc(&one, '{');
		wf_buf_put(&one, s + e.key0, e.key1 - e.key0);
		wf_buf_putc(&one, ':');
		wf_buf_put(&one, s + e.val0, e.val1 - e.val0);
		wf_buf_putc(&one, '}');
		if (one.oom) {
			rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
			break;
		}
		cj_oom = false;
		cJSON *obj = cJSON_ParseWithLength(one.data, one.len);
		if (!obj) {
			rc = cj_oom ? wf_fail(err, WF_ERR_NOMEM, "out of memory parsing the header")
				    : wf_fail(err, WF_ERR_FORMAT, "header: invalid JSON near byte %" PRIu64, 8 + at + e.key0);
			break;
		}
		rc = parse_entry(m, spans, obj->child, &have_meta, err);
		cJSON_Delete(obj);
	}
	if (rc == WF_OK && (rc = check_unique(m, err)) == WF_OK)
		rc = tile_data(m, spans, nbuf, err);
out:
	wf_buf_free(&one);
	free(spans);
	return rc;
}

enum wf_err wf_st_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err)
{
	*out = NULL;
	if (len < 8)
		return wf_fail(err, WF_ERR_FORMAT,
			       "header: file is %" PRIu64 " bytes, too short for the 8-byte header length", len);
	uint64_t n = wf_le64(buf);
	if (n > ST_MAX_HEADER)
		return wf_fail(err, WF_ERR_FORMAT, "header: length %" PRIu64 " exceeds the 100 MB limit", n);
	if (n > len - 8)
		return wf_fail(err, WF_ERR_FORMAT,
			       "header: length %" PRIu64 " runs past end of file (%" PRIu64 " bytes)", n, len);
	const uint8_t *h = buf + 8;
	for (uint64_t i = 0; i < n;) {
		size_t l = wf_utf8_seq(h + i, (size_t)(n - i));
		if (l == 0)
			return wf_fail(err, WF_ERR_FORMAT, "header: invalid UTF-8 at byte %" PRIu64, 8 + i);
		i += l;
	}
	/* The reader accepts JSON whitespace around the object; cJSON would
	 * also skip any control byte, so check the ends ourselves. */
	uint64_t a = 0, z = n;
	while (a < n && is_ws(h[a]))
		a++;
	while (z > a && is_ws(h[z - 1]))
		z--;
	if (a == z || h[a] != '{')
		return wf_fail(err, WF_ERR_FORMAT, "header: does not start with '{' (not a safetensors file?)");
	uint64_t frac, bad = json_lex_bad(h + a, z - a, &frac);
	if (bad < z - a)
		return wf_fail(err, WF_ERR_FORMAT, "header: invalid JSON token at byte %" PRIu64, 8 + a + bad);

	if (has_nul_escape(h + a, z - a))
		return wf_fail(err, WF_ERR_UNSUP, "header: a key or string holds \\u0000, which weightfs does not support");
	pthread_once(&cj_hooks_once, cj_hooks_init);
	struct wf_model *m = wf_model_new(WF_FMT_SAFETENSORS, buf, len);
	if (!m)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	m->data_offset = 8 + n;
	enum wf_err rc = parse_header(m, h + a, z - a, a, len - 8 - n, err);
	/* after the tensors' own checks, so 1.5 keeps its message naming the
	 * tensor; what is left is 1.0 or 1e0, which read as integers */
	if (rc == WF_OK && frac < z - a)
		rc = wf_fail(err, WF_ERR_FORMAT,
			     "header: number at byte %" PRIu64 " in a shape or data_offsets has a fraction or "
			     "exponent (they are integers)", 8 + a + frac);
	if (rc == WF_OK && !m->metadata_json) { /* no __metadata__: an empty object */
		struct wf_meta_json w = {0};
		rc = wf_meta_json_finish(&w, m, err);
	}
	if (rc) {
		wf_model_free(m);
		return rc;
	}
	*out = m;
	return WF_OK;
}
