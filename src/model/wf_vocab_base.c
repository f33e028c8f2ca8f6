/* wf_vocab_base.c - what the converter paths of wf_vocab*.c share: the
 * arena, the writer's key/value dict, the JSON helpers (as Python's json
 * and the converter read values), the token-string sets and the chat
 * template.  A leaf: it calls no path, so the paths and the dispatcher
 * (wf_vocab.c) form no cycle. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_names.h"
#include "model/wf_json_scan.h"

void *voc_alloc(struct voc *v, size_t n)
{
	void **nb = wf_grow(v->blk, v->n_blk, &v->cap_blk, sizeof *nb, 16);
	if (!nb)
		return NULL;
	v->blk = nb;
	void *p = malloc(n ? n : 1);
	if (p)
		v->blk[v->n_blk++] = p;
	return p;
}

enum wf_err voc_nomem(struct voc *v)
{
	return wf_fail(v->err, WF_ERR_NOMEM, "tokenizer: out of memory");
}

/* Sets a key as GGUFWriter.add_key_value does: a key set again keeps its
 * first place and takes the new value. */
enum wf_err voc_kv(struct voc *v, const char *key, enum vkv_kind kind, uint32_t u, bool b, const char *s, size_t n)
{
	struct vkv *e = NULL;
	for (size_t i = 0; i < v->n_kv && !e; i++)
		if (strcmp(v->kv[i].key, key) == 0)
			e = &v->kv[i];
	if (!e) {
		if (v->n_kv == VKV_MAX)
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer: more than %d tokenizer keys", VKV_MAX);
		e = &v->kv[v->n_kv++];
		e->key = key;
	}
	e->kind = kind;
	e->u = u;
	e->b = b;
	e->s.s = s;
	e->s.n = n;
	return WF_OK;
}

/* Makes room for n tokens, all "[PAD{i}]" UNUSED (score -10000, the
 * SentencePiece path's filler; the other paths set their own). */
enum wf_err voc_tokens(struct voc *v, size_t n)
{
	if (n == 0 || n > (size_t)WF_VOCAB_MAX_TOKENS)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer: %zu tokens (1 to %" PRId64 " supported)", n,
			       WF_VOCAB_MAX_TOKENS);
	v->tok = voc_alloc(v, n * sizeof *v->tok);
	if (!v->tok)
		return voc_nomem(v);
	for (size_t i = 0; i < n; i++)
		v->tok[i] = (struct vtok){NULL, 0, WF_TOK_UNUSED, -10000.0f};
	v->n_tok = n;
	return WF_OK;
}

/* obj.get(key) as Python's json gives it: with duplicate keys the last
 * one wins.  NULL when absent or obj is not an object. */
const cJSON *jget(const cJSON *obj, const char *key)
{
	const cJSON *hit = NULL;
	if (!cJSON_IsObject(obj))
		return NULL;
	for (const cJSON *c = obj->child; c; c = c->next)
		if (c->string && strcmp(c->string, key) == 0)
			hit = c;
	return hit;
}

/* Python's truth value of a JSON value (NULL: absent, i.e. None). */
bool jtruthy(const cJSON *j)
{
	if (!j || cJSON_IsNull(j) || cJSON_IsFalse(j))
		return false;
	if (cJSON_IsNumber(j))
		return j->valuedouble != 0;
	if (cJSON_IsString(j))
		return j->valuestring[0] != 0;
	if (cJSON_IsArray(j) || cJSON_IsObject(j))
		return j->child != NULL;
	return true;
}

bool jstr_is(const cJSON *j, const char *s)
{
	return cJSON_IsString(j) && strcmp(j->valuestring, s) == 0;
}

/* An int as Python sees one: JSON true/false are 1/0 (bool is int); a
 * number with no fraction counts as an int (cJSON cannot tell 1 from
 * 1.0, which Python's json would make a float and the converter skip:
 * [not determined] here, taken as the int). */
bool jint(const cJSON *j, int64_t *out)
{
	if (cJSON_IsBool(j)) {
		*out = cJSON_IsTrue(j);
		return true;
	}
	if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble != floor(j->valuedouble) ||
	    fabs(j->valuedouble) > 9007199254740992.0)
		return false;
	*out = (int64_t)j->valuedouble;
	return true;
}

const void *voc_pool_at(const void *ctx, uint32_t i, size_t *n)
{
	const struct vpool *p = ctx;
	*n = p->pos[2 * (size_t)i + 1];
	return p->s + p->pos[2 * (size_t)i];
}

const void *voc_tok_at(const void *ctx, uint32_t i, size_t *n)
{
	const struct vtok *t = ctx;
	*n = t[i].n;
	return t[i].s;
}

bool voc_ts_exact(const struct voc *v)
{
	if (!v->ts_on)
		return false;
	for (size_t i = 0; i < v->n_tok || i < v->ts_n; i++) {
		const char *s = i < v->ts_n ? v->ts_s[i].s : NULL, *t = i < v->n_tok ? v->tok[i].s : NULL;
		if (s != t || (s && v->tok[i].n != v->ts_s[i].n))
			return false;
	}
	return true;
}

bool voc_tok_idset(const struct voc *v, struct wf_idset *set)
{
	if (!wf_idset_init(set, v->n_tok, voc_tok_at, v->tok))
		return false;
	for (size_t i = 0; i < v->n_tok; i++)
		if (v->tok[i].s)
			wf_idset_put(set, v->tok[i].s, v->tok[i].n, (uint32_t)i);
	return true;
}

static bool wraps(const char *s, size_t n, const char *a, const char *z)
{
	size_t na = strlen(a), nz = strlen(z);
	return n >= na && n >= nz && memcmp(s, a, na) == 0 && memcmp(s + n - nz, z, nz) == 0;
}

/* TextModel.does_token_look_special.  Python's startswith/endswith may
 * share characters ("<|>" looks special), as here. */
bool looks_special(const char *s, size_t n)
{
	static const char *const exact[] = {"<pad>", "<mask>", "<2mass>", "[@BOS@]"};
	for (size_t i = 0; i < WF_ARRAY_LEN(exact); i++)
		if (n == strlen(exact[i]) && memcmp(s, exact[i], n) == 0)
			return true;
	return wraps(s, n, "<|", "|>") || wraps(s, n, "<\xef\xbd\x9c", "\xef\xbd\x9c>") || wraps(s, n, "<unused", ">");
}

/* s with every U+2581 (the SentencePiece space) replaced by ' ', as the
 * converter pre-normalizes user-defined tokens; s itself when it has none.
 * NULL when out of memory. */
const char *replace_u2581(struct voc *v, const char *s, size_t n, size_t *out_n)
{
	if (!memmem(s, n, "\xe2\x96\x81", 3)) {
		*out_n = n;
		return s;
	}
	char *o = voc_alloc(v, n + 1);
	size_t k = 0;
	if (!o)
		return NULL;
	for (size_t i = 0; i < n;) {
		if (i + 3 <= n && memcmp(s + i, "\xe2\x96\x81", 3) == 0) {
			o[k++] = ' ';
			i += 3;
		} else {
			o[k++] = s[i++];
		}
	}
	o[k] = 0;
	*out_n = k;
	return o;
}

enum wf_err voc_json_ok(struct voc *v, const char *name, const char *t, size_t n)
{
	if (!wf_utf8_valid(t, n))
		return wf_fail(v->err, WF_ERR_FORMAT, "%s: not valid UTF-8", name);
	if (wf_json_bom(t, n))
		return wf_json_strict(name, t, n, NULL, v->err);
	if (wf_json_nul_escape(t, n))
		return wf_fail(v->err, WF_ERR_UNSUP, "%s: a string holds \\u0000", name);
	return WF_OK;
}

/* json.load of one file: valid UTF-8, one value and only whitespace after
 * it, no byte order mark, no key given twice in an object (refused, as
 * json.load would read its last value).  cJSON's own nesting limit (CJSON_NESTING_LIMIT, 1000) bounds its
 * recursion, and nothing here walks deeper than a few fixed levels. */
enum wf_err voc_parse_json(struct voc *v, const char *name, const char *t, size_t n, cJSON **out)
{
	const char *end = NULL;
	*out = NULL;
	enum wf_err rc;
	if (!t)
		return WF_OK;
	if ((rc = voc_json_ok(v, name, t, n)) != WF_OK)
		return rc;
	*out = cJSON_ParseWithLengthOpts(t, n, &end, false);
	if (!*out)
		return wf_fail(v->err, WF_ERR_FORMAT, "%s: not valid JSON (or nested too deeply)", name);
	while (end && end < t + n && (*end == ' ' || *end == '\t' || *end == '\n' || *end == '\r'))
		end++;
	if (end != t + n && !(end && *end == 0 && end + 1 == t + n))
		return wf_fail(v->err, WF_ERR_FORMAT, "%s: bytes after the JSON value", name);
	return wf_json_strict(name, t, n, *out, v->err);
}

/* open(path, encoding='utf-8').read(): universal newlines turn "\r\n"
 * and a lone "\r" into "\n". */
static enum wf_err read_text(struct voc *v, const char *name, const char *t, size_t n, struct wf_tok_str *out)
{
	char *o;
	size_t k = 0;
	if (!wf_utf8_valid(t, n))
		return wf_fail(v->err, WF_ERR_FORMAT, "%s: not valid UTF-8", name);
	o = voc_alloc(v, n + 1);
	if (!o)
		return voc_nomem(v);
	for (size_t i = 0; i < n; i++) {
		if (t[i] == '\r' && i + 1 < n && t[i + 1] == '\n')
			continue;
		o[k++] = t[i] == '\r' ? '\n' : t[i];
	}
	o[k] = 0;
	out->s = o;
	out->n = k;
	return WF_OK;
}

/* gguf_writer.add_chat_template's name filter: each character not an
 * ASCII letter or digit becomes one '_'. */
static const char *tpl_key(struct voc *v, const char *name)
{
	static const char pre[] = "tokenizer.chat_template.";
	size_t n = strlen(name), k = sizeof pre - 1;
	char *o = voc_alloc(v, k + n + 1);
	if (!o)
		return NULL;
	memcpy(o, pre, k);
	for (size_t i = 0; i < n;) {
		size_t q = wf_utf8_seq((const uint8_t *)name + i, n - i);
		unsigned char c = (unsigned char)name[i];
		bool keep = (c >= '0' && c <= '9') || ((c | 0x20) >= 'a' && (c | 0x20) <= 'z');
		o[k++] = keep ? (char)c : '_';
		i += q ? q : 1;
	}
	o[k] = 0;
	return o;
}

static enum wf_err tpl_name(struct voc *v, const char *key)
{
	size_t pl = strlen("tokenizer.chat_template.");
	for (size_t i = 0; i < v->n_tpl; i++)
		if (strcmp(v->tpl[i].s, key + pl) == 0)
			return WF_OK;
	v->tpl[v->n_tpl].s = key + pl;
	v->tpl[v->n_tpl].n = strlen(key + pl);
	v->n_tpl++;
	return WF_OK;
}

/* A list of {name, template}: each named one its own key, their names in
 * tokenizer.chat_templates, "default" in tokenizer.chat_template.  The
 * writer collects the names in a Python set, whose order depends on the
 * process's string hashing: [not determined], written here in the order
 * the list gives them. */
static enum wf_err tpl_list(struct voc *v, const char *src, const cJSON *list)
{
	const cJSON *dflt = NULL;
	size_t n = (size_t)cJSON_GetArraySize(list), i = 0;
	if (n > 256)
		return wf_fail(v->err, WF_ERR_UNSUP, "%s: chat_template: %zu templates (256 supported)", src, n);
	v->tpl = voc_alloc(v, (n + 1) * sizeof *v->tpl);
	v->n_tpl = 0;
	if (!v->tpl)
		return voc_nomem(v);
	for (const cJSON *c = list->child; c; c = c->next, i++) {
		const cJSON *nm = jget(c, "name"), *t = jget(c, "template");
		if (!cJSON_IsObject(c) || (nm && !cJSON_IsString(nm)))
			return wf_fail(v->err, WF_ERR_FORMAT, "%s: chat_template[%zu]: not {name, template}", src, i);
		if (!nm || !nm->valuestring[0] || !t || cJSON_IsNull(t))
			continue;
		if (!cJSON_IsString(t))
			return wf_fail(v->err, WF_ERR_FORMAT, "%s: chat_template[%zu].template: not a string", src, i);
		const char *key = tpl_key(v, nm->valuestring);
		if (!key)
			return voc_nomem(v);
		if (strcmp(key, "tokenizer.chat_template.default") == 0) {
			dflt = t;
			continue;
		}
		enum wf_err rc = voc_kv(v, key, VKV_STR, 0, false, t->valuestring, strlen(t->valuestring));
		if (rc == WF_OK)
			rc = tpl_name(v, key);
		if (rc != WF_OK)
			return rc;
	}
	enum wf_err rc = WF_OK;
	if (v->n_tpl)
		rc = voc_kv(v, "tokenizer.chat_templates", VKV_TPLNAMES, 0, false, NULL, 0);
	if (rc == WF_OK && dflt)
		rc = voc_kv(v, "tokenizer.chat_template", VKV_STR, 0, false, dflt->valuestring, strlen(dflt->valuestring));
	return rc;
}

/* SpecialVocab's chat template (read only when tokenizer_config.json is
 * truthy, which the caller checked): tokenizer_config's "chat_template"
 * when the key is there (even null), else chat_template.jinja, else
 * chat_template.json's "chat_template"; a string or a list, anything
 * else is ignored as the converter does. */
enum wf_err voc_chat_template_load(struct voc *v)
{
	const struct wf_vocab_files *f = v->f;
	const cJSON *ct = jget(v->tc, "chat_template");
	enum wf_err rc = WF_OK;
	v->ct_kind = 0;
	v->ct_src = "tokenizer_config.json";
	if (!ct && f->chat_template_jinja) {
		if (f->has_additional_chat_templates)
			return wf_fail(v->err, WF_ERR_UNSUP, "additional_chat_templates: not supported");
		rc = read_text(v, "chat_template.jinja", f->chat_template_jinja, f->chat_template_jinja_len, &v->ct);
		v->ct_kind = rc == WF_OK;
		return rc;
	}
	if (!ct && f->chat_template_json) {
		v->ct_src = "chat_template.json";
		/* parsed once, kept (v->ctj) until the key/values are written */
		if (!v->ctj) {
			rc = voc_parse_json(v, v->ct_src, f->chat_template_json, f->chat_template_json_len, &v->ctj);
			if (rc != WF_OK)
				return rc;
		}
		if (!cJSON_IsObject(v->ctj))
			return wf_fail(v->err, WF_ERR_FORMAT, "%s: not an object", v->ct_src);
		ct = jget(v->ctj, "chat_template");
	}
	if (cJSON_IsString(ct)) {
		v->ct_kind = 1;
		v->ct.s = ct->valuestring;
		v->ct.n = strlen(ct->valuestring);
	} else if (cJSON_IsArray(ct)) {
		v->ct_kind = 2;
		v->ct_list = ct;
	}
	return WF_OK;
}

enum wf_err voc_chat_template_write(struct voc *v)
{
	if (v->ct_kind == 1)
		return voc_kv(v, "tokenizer.chat_template", VKV_STR, 0, false, v->ct.s, v->ct.n);
	if (v->ct_kind == 2)
		return tpl_list(v, v->ct_src, v->ct_list);
	return WF_OK;
}

