/* wf_vocab_tj.c - tokenizer.json with its two big members read outside
 * cJSON.  Llama 3's file is 9 MB, nearly all of it model.vocab (128,256
 * entries) and model.merges (280,147): cJSON's tree of those was a node
 * of ~64 bytes per string, 80 MB in all, and most of the time to open a
 * folder went to faulting that memory in.  Here the last "model" entry's
 * last "vocab" object and last "merges" list (the ones jget() returns)
 * are read with wf_json_scan's cJSON-exact grammar into compact arrays
 * (v->big), and cJSON parses the rest of the file with {} and [] in their
 * place, so everything else keeps its cJSON access. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/wf_json_scan.h"

size_t voc_merge_part(char *o, const char *p, size_t n)
{
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (p[i] == ' ') {
			o[k++] = (char)0xc4;
			o[k++] = (char)0xa0;
		} else {
			o[k++] = p[i];
		}
	}
	return k;
}

static enum wf_err bad(struct voc *v, const char *field, const struct wf_jcur *c)
{
	return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: %s: %s (byte %" PRIu64 ")", field, c->why, c->pos);
}

/* A value of model.vocab: its id as jint() gives one, TJ_NOT_INT for any
 * other value (checked whole all the same).  depth: containers open. */
static bool read_id(struct wf_jcur *c, int64_t *id)
{
	double d;
	uint8_t b = c->pos < c->n ? c->s[c->pos] : 0;
	*id = TJ_NOT_INT;
	if (b != '-' && !(b >= '0' && b <= '9'))
		return wf_json_skip(c, 3);
	if (!wf_json_number(c, &d))
		return false;
	if (isfinite(d) && d == floor(d) && fabs(d) <= 9007199254740992.0)
		*id = (int64_t)d;
	return true;
}

/* After a member's value: true at ',' (moved past it), false at the
 * closing byte (moved past it); why set when neither. */
static bool next_item(struct wf_jcur *c, uint8_t close, bool *more)
{
	wf_jcur_ws(c);
	*more = c->pos < c->n && c->s[c->pos] == ',';
	if (*more || (c->pos < c->n && c->s[c->pos] == close)) {
		c->pos++;
		return true;
	}
	c->why = close == '}' ? "no ',' or '}' after a value" : "no ',' or ']' after a value";
	return false;
}

/* (wf_json_strict refuses the same in the rest of the file.)  Only the
 * routes that do not read model.vocab pay for the table: Llama 3's
 * 128,256 keys fault in 12 MiB of it. */
enum wf_err voc_vocab_unique(struct voc *v)
{
	const struct tjbig *b = &v->big;
	struct wf_names set;
	enum wf_err rc = WF_OK;
	char q[96];
	if (!b->vocab_on || b->vocab_unique)
		return WF_OK;
	if (!wf_names_init(&set, b->n_vocab + 1))
		return voc_nomem(v);
	for (size_t i = 0; i < b->n_vocab && rc == WF_OK; i++)
		if (wf_names_put(&set, b->vkey[i].s, b->vkey[i].n, (uint32_t)i) != WF_NAMES_NONE)
			rc = wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: 'model': 'vocab': key %s given twice in one "
				     "object (Python's json keeps the last, cJSON the first)",
				     wf_quote(q, sizeof q, b->vkey[i].s, b->vkey[i].n));
	wf_names_free(&set);
	return rc;
}

/* model.vocab, the object s[v0, v1): cJSON parses it with 2 containers
 * open (the file's object and model). */
static enum wf_err read_vocab(struct voc *v, const uint8_t *s, uint64_t v0, uint64_t v1)
{
	struct tjbig *b = &v->big;
	struct wf_jcur c = {s, v1, v0 + 1, NULL};
	size_t max = (size_t)(v1 - v0) / 5 + 1, used = 0, i = 0; /* an entry is at least `"":0,` */
	char *arena = voc_alloc(v, (size_t)(v1 - v0));
	bool more = true;
	b->vkey = voc_alloc(v, max * sizeof *b->vkey);
	b->vid = voc_alloc(v, max * sizeof *b->vid);
	if (!arena || !b->vkey || !b->vid)
		return voc_nomem(v);
	wf_jcur_ws(&c);
	if (c.pos < c.n && s[c.pos] == '}') {
		c.pos++;
		more = false;
	}
	for (; more; i++) {
		uint64_t st, len;
		wf_jcur_ws(&c);
		if (c.pos >= c.n || s[c.pos] != '"' || i >= max)
			return c.why = "a key is not a string", bad(v, "model.vocab", &c);
		st = c.pos;
		int r = wf_json_string(&c, (uint8_t *)arena + used, &len);
		if (r < 0)
			return bad(v, "model.vocab", &c);
		b->vkey[i] = (struct wf_tok_str){.s = r == 1 ? (const char *)s + st + 1 : arena + used, .n = (size_t)len};
		used += r == 2 ? (size_t)len : 0;
		wf_jcur_ws(&c);
		if (c.pos >= c.n || s[c.pos] != ':')
			return c.why = "no ':' after a key", bad(v, "model.vocab", &c);
		c.pos++;
		wf_jcur_ws(&c);
		if (!read_id(&c, &b->vid[i]) || !next_item(&c, '}', &more))
			return bad(v, "model.vocab", &c);
	}
	if (c.pos != v1)
		return c.why = "bytes after the object", bad(v, "model.vocab", &c);
	b->n_vocab = i;
	b->vocab_on = true;
	return WF_OK;
}

/* The merges being read: the arena their strings go to (used bytes of
 * it), and scratch room for a list item's escaped string. */
struct mread {
	struct voc *v;
	char *arena, *scratch;
	size_t used;
};

/* One merge given as a list (c at its '['): its strings joined into the
 * arena (TJM_LIST), or TJM_BADLIST when an item is not a string. */
static bool read_list(struct mread *m, struct wf_jcur *c, size_t i)
{
	struct tjbig *b = &m->v->big;
	size_t k = 0, items = 0;
	bool more = true, first_str = false;
	char *o = m->arena + m->used;
	b->mkind[i] = TJM_LIST;
	c->pos++;
	wf_jcur_ws(c);
	if (c->pos < c->n && c->s[c->pos] == ']') {
		c->pos++;
		more = false;
	}
	for (; more; items++) {
		uint64_t st, len;
		wf_jcur_ws(c);
		if (c->pos >= c->n || c->s[c->pos] != '"') {
			b->mkind[i] = TJM_BADLIST;
			if (!wf_json_skip(c, 4))
				return false;
		} else {
			st = c->pos;
			int r = wf_json_string(c, (uint8_t *)m->scratch, &len);
			if (r < 0)
				return false;
			first_str |= items == 0;
			if (items)
				o[k++] = ' ';
			k += voc_merge_part(o + k, r == 1 ? (const char *)c->s + st + 1 : m->scratch, (size_t)len);
		}
		if (!next_item(c, ']', &more))
			return false;
	}
	if (i == 0) {
		b->m0_len = items;
		b->m0_first_str = first_str;
	}
	b->mg[i] = (struct wf_tok_str){.s = o, .n = b->mkind[i] == TJM_LIST ? k : 0};
	m->used += b->mkind[i] == TJM_LIST ? k : 0;
	return true;
}

/* One merge (c at its first byte). */
static bool read_merge(struct mread *m, struct wf_jcur *c, size_t i)
{
	struct tjbig *b = &m->v->big;
	uint64_t st = c->pos, len;
	if (c->pos < c->n && c->s[c->pos] == '[')
		return read_list(m, c, i);
	if (c->pos >= c->n || c->s[c->pos] != '"') {
		b->mkind[i] = TJM_OTHER;
		b->mg[i] = (struct wf_tok_str){.s = "", .n = 0};
		return wf_json_skip(c, 3);
	}
	int r = wf_json_string(c, (uint8_t *)m->arena + m->used, &len);
	if (r < 0)
		return false;
	b->mkind[i] = TJM_STR;
	b->mg[i] = (struct wf_tok_str){.s = r == 1 ? (const char *)c->s + st + 1 : m->arena + m->used, .n = (size_t)len};
	m->used += r == 2 ? (size_t)len : 0;
	return true;
}

/* model.merges, the list s[m0, m1).  A list item's joined form is at most
 * twice its raw bytes, a string's at most its raw bytes: the arena of
 * twice the member's bytes holds them all (untouched pages cost nothing). */
static enum wf_err read_merges(struct voc *v, const uint8_t *s, uint64_t m0, uint64_t m1)
{
	struct tjbig *b = &v->big;
	struct wf_jcur c = {s, m1, m0 + 1, NULL};
	size_t span = (size_t)(m1 - m0), max = span / 2 + 1, i = 0; /* an item is at least `1,` */
	struct mread m = {v, voc_alloc(v, 2 * span + 16), voc_alloc(v, span), 0};
	bool more = true;
	b->mg = voc_alloc(v, max * sizeof *b->mg);
	b->mkind = voc_alloc(v, max);
	if (!m.arena || !m.scratch || !b->mg || !b->mkind)
		return voc_nomem(v);
	wf_jcur_ws(&c);
	if (c.pos < c.n && s[c.pos] == ']') {
		c.pos++;
		more = false;
	}
	for (; more; i++) {
		wf_jcur_ws(&c);
		if (i >= max)
			return c.why = "too many items", bad(v, "model.merges", &c);
		if (!read_merge(&m, &c, i) || !next_item(&c, ']', &more))
			return bad(v, "model.merges", &c);
	}
	if (c.pos != m1)
		return c.why = "bytes after the list", bad(v, "model.merges", &c);
	b->n_merges = i;
	b->merges_on = true;
	return WF_OK;
}

/* An entry's record; its content copied to *pool. */
static void add_record(const cJSON *c, struct tjadd *r, char **pool)
{
	const cJSON *ct = jget(c, "content"), *id = jget(c, "id"), *sp = jget(c, "special");
	*r = (struct tjadd){.is_obj = cJSON_IsObject(c), .id_bool = cJSON_IsBool(id), .special_true = cJSON_IsTrue(sp),
			    .special_truthy = jtruthy(sp), .normalized_true = cJSON_IsTrue(jget(c, "normalized"))};
	r->id_ok = jint(id, &r->id);
	if (cJSON_IsString(ct)) {
		size_t n = strlen(ct->valuestring) + 1;
		r->content = memcpy(*pool, ct->valuestring, n);
		*pool += n;
	}
}

/* added_tokens, the list s[a0, a1): each entry checked with cJSON's grammar
 * as a value inside 2 containers, then parsed alone.  Its content is at
 * most its text's bytes: a pool of the list's bytes holds them all. */
static enum wf_err read_added(struct voc *v, const uint8_t *s, uint64_t a0, uint64_t a1)
{
	struct tjbig *b = &v->big;
	struct wf_jcur c = {s, a1, a0 + 1, NULL};
	size_t max = (size_t)(a1 - a0) / 2 + 1, i = 0; /* an item is at least `1,` */
	char *pool = voc_alloc(v, (size_t)(a1 - a0));
	bool more = true;
	b->add = voc_alloc(v, max * sizeof *b->add);
	if (!pool || !b->add)
		return voc_nomem(v);
	wf_jcur_ws(&c);
	if (c.pos < c.n && s[c.pos] == ']') {
		c.pos++;
		more = false;
	}
	for (; more; i++) {
		wf_jcur_ws(&c);
		uint64_t st = c.pos;
		if (i >= max)
			return c.why = "too many items", bad(v, "added_tokens", &c);
		if (!wf_json_skip(&c, 2))
			return bad(v, "added_tokens", &c);
		cJSON *e = cJSON_ParseWithLength((const char *)s + st, (size_t)(c.pos - st));
		if (!e)
			return voc_nomem(v); /* its grammar is checked: only memory is left to fail */
		/* out of the tree wf_json_strict saw: a key given twice here is refused too */
		enum wf_err rc = wf_json_strict("tokenizer.json", NULL, 0, e, v->err);
		if (rc == WF_OK)
			add_record(e, &b->add[i], &pool);
		cJSON_Delete(e);
		if (rc != WF_OK)
			return rc;
		if (!next_item(&c, ']', &more))
			return bad(v, "added_tokens", &c);
	}
	if (c.pos != a1)
		return c.why = "bytes after the list", bad(v, "added_tokens", &c);
	b->n_add = i;
	b->add_on = true;
	return WF_OK;
}

/* The same from the tree, when the scanner did not find the list. */
static enum wf_err add_from_tree(struct voc *v)
{
	struct tjbig *b = &v->big;
	const cJSON *at = jget(v->tj, "added_tokens");
	size_t n = 0, bytes = 1;
	if (b->add_on || !cJSON_IsArray(at))
		return WF_OK;
	for (const cJSON *c = at->child; c; c = c->next, n++) {
		const cJSON *ct = jget(c, "content");
		bytes += cJSON_IsString(ct) ? strlen(ct->valuestring) + 1 : 0;
	}
	char *pool = voc_alloc(v, bytes);
	b->add = voc_alloc(v, (n + 1) * sizeof *b->add);
	if (!pool || !b->add)
		return voc_nomem(v);
	n = 0;
	for (const cJSON *c = at->child; c; c = c->next)
		add_record(c, &b->add[n++], &pool);
	b->n_add = n;
	b->add_on = true;
	return WF_OK;
}

/* Whether the key at s[e->key0, e->key1) decodes to name. */
static bool key_is(const uint8_t *s, const struct wf_json_entry *e, const char *name)
{
	uint8_t buf[256];
	uint64_t len;
	struct wf_jcur c = {s, e->key1, e->key0, NULL};
	size_t nl = strlen(name);
	/* longer than every escaped spelling; what is decoded is never longer
	 * than the quoted key, so it fits buf */
	if (e->key1 - e->key0 > 6 * nl + 2 || e->key1 - e->key0 > sizeof buf)
		return false;
	int r = wf_json_string(&c, buf, &len);
	return r > 0 && len == nl && memcmp(r == 1 ? s + e->key0 + 1 : buf, name, nl) == 0;
}

/* The entries of model, whose '{' is at s[open]: the spans of the last
 * "vocab" when it is an object and the last "merges" when a list (the
 * ones jget() gives), and *end after the '}'; false when the object's
 * structure is broken. */
static bool model_members(const uint8_t *s, uint64_t n, uint64_t open, uint64_t span[2][2], uint64_t *end)
{
	struct wf_json_entry e;
	uint64_t pos = open + 1;
	int r;
	while ((r = wf_json_next(s, n, &pos, &e)) == 1) {
		int k = key_is(s, &e, "vocab") ? 0 : key_is(s, &e, "merges") ? 1 : -1;
		if (k >= 0) {
			bool fit = s[e.val0] == (k == 0 ? '{' : '[');
			span[k][0] = fit ? e.val0 : 0;
			span[k][1] = fit ? e.val1 : 0;
		}
	}
	*end = pos;
	return r == 0;
}

/* The spans of the last model's model.vocab and model.merges, and of the
 * last added_tokens, each [0, 0) when it is not there as an object / a
 * list or the file's structure (as wf_json_next sees it) is broken: cJSON
 * reads the file whole then.  Each byte of the file is walked once. */
static void find_big(const uint8_t *s, uint64_t n, uint64_t span[3][2])
{
	struct wf_json_entry e;
	uint64_t pos = n >= 3 && memcmp(s, "\xef\xbb\xbf", 3) == 0 ? 3 : 0; /* cJSON skips a BOM */
	struct wf_jcur c = {s, n, pos, NULL};
	int r;
	memset(span, 0, 6 * sizeof span[0][0]);
	wf_jcur_ws(&c);
	if (c.pos >= n || s[c.pos] != '{')
		return;
	pos = c.pos + 1;
	while ((r = wf_json_key(s, n, &pos, &e)) == 1) {
		bool model = key_is(s, &e, "model"), added = !model && key_is(s, &e, "added_tokens");
		if (model)
			memset(span, 0, 4 * sizeof span[0][0]); /* a later "model" is the one */
		if (model && s[e.val0] == '{') {
			if (!model_members(s, n, e.val0, span, &e.val1))
				break;
		} else {
			e.val1 = wf_json_value_end(s, n, e.val0);
		}
		if (added) { /* a later one is the one, a list or not */
			span[2][0] = s[e.val0] == '[' ? e.val0 : 0;
			span[2][1] = s[e.val0] == '[' ? e.val1 : 0;
		}
		if (wf_json_end(s, n, &pos, &e) != 1)
			break;
	}
	if (r != 0)
		memset(span, 0, 6 * sizeof span[0][0]);
}

/* model.vocab and model.merges copied from the tree, when it has them
 * (the scanner did not find them, and cJSON did). */
static enum wf_err big_from_tree(struct voc *v)
{
	struct tjbig *b = &v->big;
	const cJSON *m = jget(v->tj, "model"), *vo = jget(m, "vocab"), *mg = jget(m, "merges");
	size_t i = 0;
	if (!b->vocab_on && cJSON_IsObject(vo)) {
		size_t n = (size_t)cJSON_GetArraySize(vo);
		b->vkey = voc_alloc(v, (n + 1) * sizeof *b->vkey);
		b->vid = voc_alloc(v, (n + 1) * sizeof *b->vid);
		if (!b->vkey || !b->vid)
			return voc_nomem(v);
		for (const cJSON *c = vo->child; c; c = c->next, i++) {
			b->vkey[i] = (struct wf_tok_str){.s = c->string, .n = strlen(c->string)};
			if (cJSON_IsBool(c) || !jint(c, &b->vid[i]))
				b->vid[i] = TJ_NOT_INT;
		}
		b->n_vocab = i;
		b->vocab_on = true;
		b->vocab_unique = true; /* the tree passed wf_json_strict */
	}
	if (b->merges_on || !cJSON_IsArray(mg))
		return WF_OK;
	size_t n = (size_t)cJSON_GetArraySize(mg);
	b->mg = voc_alloc(v, (n + 1) * sizeof *b->mg);
	b->mkind = voc_alloc(v, n + 1);
	if (!b->mg || !b->mkind)
		return voc_nomem(v);
	i = 0;
	for (const cJSON *c = mg->child; c; c = c->next, i++) {
		size_t len = 0, k = 0, items = 0;
		uint8_t kind = cJSON_IsString(c) ? TJM_STR : cJSON_IsArray(c) ? TJM_LIST : TJM_OTHER;
		for (const cJSON *p = kind == TJM_LIST ? c->child : NULL; p; p = p->next, items++) {
			kind = cJSON_IsString(p) ? kind : TJM_BADLIST;
			len += kind == TJM_LIST ? strlen(p->valuestring) * 2 + 1 : 0;
		}
		char *o = kind == TJM_LIST ? voc_alloc(v, len + 1) : NULL;
		if (kind == TJM_LIST && !o)
			return voc_nomem(v);
		for (const cJSON *p = o ? c->child : NULL; p; p = p->next) {
			if (p != c->child)
				o[k++] = ' ';
			k += voc_merge_part(o + k, p->valuestring, strlen(p->valuestring));
		}
		b->mkind[i] = kind;
		b->mg[i] = kind == TJM_STR ? (struct wf_tok_str){.s = c->valuestring, .n = strlen(c->valuestring)} : (struct wf_tok_str){.s = o ? o : "", .n = k};
		if (i == 0) {
			b->m0_len = items;
			b->m0_first_str = cJSON_IsArray(c) && cJSON_IsString(c->child);
		}
	}
	b->n_merges = i;
	b->merges_on = true;
	return WF_OK;
}

/* The file with "{}" or "[]" for each span read (spans apart, any order). */
static char *rest_of(const char *t, size_t n, uint64_t span[3][2], size_t *len)
{
	static const char *const stub[3] = {"{}", "[]", "[]"};
	uint64_t cut = 0, at = 0;
	for (int k = 0; k < 3; k++)
		cut += span[k][1] - span[k][0];
	char *rest = malloc(n - cut + 7), *o = rest;
	if (!rest)
		return NULL;
	for (;;) {
		int w = -1;
		for (int k = 0; k < 3; k++)
			if (span[k][1] && span[k][0] >= at && (w < 0 || span[k][0] < span[w][0]))
				w = k;
		if (w < 0)
			break;
		memcpy(o, t + at, span[w][0] - at);
		o += span[w][0] - at;
		memcpy(o, stub[w], 2);
		o += 2;
		at = span[w][1];
	}
	memcpy(o, t + at, n - at);
	*len = (size_t)(o + (n - at) - rest);
	return rest;
}

enum wf_err voc_parse_tj(struct voc *v, const char *t, size_t n)
{
	const uint8_t *s = (const uint8_t *)t;
	uint64_t span[3][2];
	size_t len;
	enum wf_err rc = voc_json_ok(v, "tokenizer.json", t, n);
	if (rc != WF_OK)
		return rc;
	find_big(s, n, span);
	if (span[0][1])
		rc = read_vocab(v, s, span[0][0], span[0][1]);
	if (rc == WF_OK && span[1][1])
		rc = read_merges(v, s, span[1][0], span[1][1]);
	if (rc == WF_OK && span[2][1])
		rc = read_added(v, s, span[2][0], span[2][1]);
	if (rc != WF_OK)
		return rc;
	char *rest = rest_of(t, n, span, &len);
	if (!rest)
		return voc_nomem(v);
	rc = voc_parse_json(v, "tokenizer.json", rest, len, &v->tj);
	free(rest);
	if (rc == WF_OK)
		rc = big_from_tree(v);
	return rc == WF_OK ? add_from_tree(v) : rc;
}
