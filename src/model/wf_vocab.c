/* wf_vocab.c - the tokenizer key/values of a model folder (wf_vocab.h):
 * which converter path runs, the writer's key/value dict, the JSON
 * helpers the paths share, the chat template and the final checks. */
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
	if (v->n_blk == v->cap_blk) {
		size_t nc = v->cap_blk ? v->cap_blk * 2 : 16;
		void **nb = realloc(v->blk, nc * sizeof *nb);
		if (!nb)
			return NULL;
		v->blk = nb;
		v->cap_blk = nc;
	}
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

static const void *tok_at(const void *ctx, uint32_t i, size_t *n)
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
	if (!wf_idset_init(set, v->n_tok, tok_at, v->tok))
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

/* "[PAD{i}]" with i canonical decimal: the filler's spelling. */
static bool pad_index(const char *s, size_t n, size_t *i)
{
	size_t x = 0;
	if (n < 6 || memcmp(s, "[PAD", 4) != 0 || s[n - 1] != ']' || (s[4] == '0' && n > 6) || n > 14)
		return false;
	for (size_t k = 4; k < n - 1; k++) {
		if (s[k] < '0' || s[k] > '9')
			return false;
		x = x * 10 + (size_t)(s[k] - '0');
	}
	*i = x;
	return true;
}

/* llama.cpp asserts that token strings are unique (a map from text to
 * id the size of the list): two equal strings, a filler's included, are
 * refused here instead. */
static enum wf_err check_unique(struct voc *v, const char *src)
{
	struct wf_idset set;
	char q[96];
	enum wf_err rc = WF_OK;
	/* tokenizer.json's set has each string once already: only the fillers to check */
	bool exact = voc_ts_exact(v);
	if (!exact && !wf_idset_init(&set, v->n_tok, tok_at, v->tok))
		return voc_nomem(v);
	for (size_t i = 0; i < v->n_tok && rc == WF_OK; i++) {
		const struct vtok *t = &v->tok[i];
		size_t p;
		if (!t->s)
			continue;
		uint32_t o = exact ? WF_NAMES_NONE : wf_idset_put(&set, t->s, t->n, (uint32_t)i);
		if (o == WF_NAMES_NONE && pad_index(t->s, t->n, &p) && p < v->n_tok && !v->tok[p].s)
			o = (uint32_t)p;
		if (o != WF_NAMES_NONE)
			rc = wf_fail(v->err, WF_ERR_UNSUP, "%s: tokens %" PRIu32 " and %zu are both %s (llama.cpp needs unique tokens)",
				     src, o, i, wf_quote(q, sizeof q, t->s, t->n));
	}
	if (!exact)
		wf_idset_free(&set);
	return rc;
}

static void emit_arr(const struct voc *v, const struct vkv *e, struct wf_gguf_w *w)
{
	char pad[32];
	switch (e->kind) {
	case VKV_TOKENS:
		wf_gguf_w_arr_begin(w, e->key, WF_GT_STRING, v->n_tok);
		for (size_t i = 0; i < v->n_tok; i++) {
			int k = snprintf(pad, sizeof pad, "[PAD%zu]", i);
			if (v->tok[i].s)
				wf_gguf_w_arr_str(w, v->tok[i].s, v->tok[i].n);
			else
				wf_gguf_w_arr_str(w, pad, (size_t)k);
		}
		break;
	case VKV_SCORES:
		wf_gguf_w_arr_begin(w, e->key, WF_GT_FLOAT32, v->n_tok);
		for (size_t i = 0; i < v->n_tok; i++)
			wf_gguf_w_arr_f32(w, v->tok[i].score);
		break;
	case VKV_TYPES:
		wf_gguf_w_arr_begin(w, e->key, WF_GT_INT32, v->n_tok);
		for (size_t i = 0; i < v->n_tok; i++)
			wf_gguf_w_arr_i32(w, v->tok[i].type);
		break;
	case VKV_MERGES:
		wf_gguf_w_arr_begin(w, e->key, WF_GT_STRING, v->n_mg);
		for (size_t i = 0; i < v->n_mg; i++)
			wf_gguf_w_arr_str(w, v->mg[i].s, v->mg[i].n);
		break;
	default:
		wf_gguf_w_arr_begin(w, e->key, WF_GT_STRING, v->n_tpl);
		for (size_t i = 0; i < v->n_tpl; i++)
			wf_gguf_w_arr_str(w, v->tpl[i].s, v->tpl[i].n);
		break;
	}
	wf_gguf_w_arr_end(w);
}

static void emit(const struct voc *v, struct wf_gguf_w *w)
{
	for (size_t i = 0; i < v->n_kv; i++) {
		const struct vkv *e = &v->kv[i];
		if (e->kind == VKV_U32)
			wf_gguf_w_u32(w, e->key, e->u);
		else if (e->kind == VKV_BOOL)
			wf_gguf_w_bool(w, e->key, e->b);
		else if (e->kind == VKV_STR)
			wf_gguf_w_str(w, e->key, e->s.s, e->s.n);
		else
			emit_arr(v, e, w);
	}
}

static enum wf_err route_llama(struct voc *v)
{
	const cJSON *aps = jget(v->tc, "add_prefix_space");
	static const char *const fim[] = {"prefix", "suffix", "middle", "eot"};
	static const int64_t fim_ids[] = {32007, 32008, 32009, 32010};
	enum wf_err rc = WF_OK;
	int64_t vs = v->vocab_size < 0 ? 32000 : v->vocab_size;
	if (v->f->has_tekken_json && !v->f->tokenizer_json)
		return wf_fail(v->err, WF_ERR_UNSUP, "tekken.json: the Mistral tokenizer is not supported");
	if (aps && !cJSON_IsNull(aps)) {
		if (!cJSON_IsBool(aps))
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: add_prefix_space: not a boolean");
		rc = voc_kv(v, "tokenizer.ggml.add_space_prefix", VKV_BOOL, 0, cJSON_IsTrue(aps), NULL, 0);
	}
	if (rc == WF_OK && jstr_is(jget(v->tc, "tokenizer_class"), "HybridDNATokenizer"))
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer_config.json: tokenizer_class: HybridDNATokenizer is not supported");
	if (rc == WF_OK)
		rc = voc_sentencepiece(v);
	if (rc == WF_ERR_RANGE)
		rc = voc_llama_hf(v);
	if (rc == WF_ERR_RANGE)
		rc = voc_gpt2(v);
	if (rc == WF_OK && vs == 32016)
		rc = voc_special(v, false, fim, 4, -1, fim_ids, 4);
	if (rc == WF_OK && vs == 49152)
		rc = voc_kv(v, "tokenizer.ggml.add_bos_token", VKV_BOOL, 0, false, NULL, 0);
	return rc;
}

static enum wf_err route_phi3(struct voc *v)
{
	if (v->tc) {
		const cJSON *cls = jget(v->tc, "tokenizer_class");
		if (!cls)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: tokenizer_class: missing (the converter needs it)");
		if (jstr_is(cls, "GPT2Tokenizer"))
			return voc_gpt2(v);
	}
	enum wf_err rc = voc_phi3_spm(v);
	if (rc == WF_ERR_RANGE)
		rc = wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.model: missing");
	return rc;
}

static enum wf_err route(struct voc *v, enum wf_vocab_route r)
{
	enum wf_err rc;
	switch (r) {
	case WF_VOCAB_LLAMA:
		return route_llama(v);
	case WF_VOCAB_PHI3:
		return route_phi3(v);
	case WF_VOCAB_GPT2:
		return voc_gpt2(v);
	case WF_VOCAB_GLM:
		return voc_glm(v);
	case WF_VOCAB_QWEN:
	case WF_VOCAB_GEMMA3:
		rc = voc_sentencepiece(v);
		if (rc == WF_ERR_RANGE)
			return voc_gpt2(v);
		if (rc == WF_OK && r == WF_VOCAB_GEMMA3)
			rc = voc_kv(v, "tokenizer.ggml.add_space_prefix", VKV_BOOL, 0, false, NULL, 0);
		return rc;
	case WF_VOCAB_GEMMA:
		/* GemmaModel.set_vocab: a second SpecialVocab of CodeGemma's ids
		 * (prefix, suffix, middle and fsep have no writer handler: eot 107
		 * is written; bos/eos flags again, in place), its chat template
		 * not written twice */
		rc = voc_sentencepiece(v);
		if (rc == WF_ERR_RANGE)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.model: missing (gemma requires it)");
		if (rc == WF_OK) {
			static const char *const t[] = {"prefix", "suffix", "middle", "fsep", "eot"};
			static const int64_t ids[] = {67, 69, 68, 70, 107};
			v->no_chat_template = true;
			rc = voc_special(v, false, t, 5, -1, ids, 5);
			v->no_chat_template = false;
		}
		if (rc == WF_OK)
			rc = voc_kv(v, "tokenizer.ggml.add_space_prefix", VKV_BOOL, 0, false, NULL, 0);
		return rc;
	case WF_VOCAB_GEMMA2:
		rc = voc_sentencepiece(v);
		if (rc == WF_ERR_RANGE)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.model: missing (gemma2 requires it)");
		if (rc == WF_OK)
			rc = voc_kv(v, "tokenizer.ggml.add_space_prefix", VKV_BOOL, 0, false, NULL, 0);
		return rc;
	}
	return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer: unknown route %d", (int)r);
}

static enum wf_err parse_files(struct voc *v)
{
	const struct wf_vocab_files *f = v->f;
	enum wf_err rc = f->tokenizer_json ? voc_parse_tj(v, f->tokenizer_json, f->tokenizer_json_len) : WF_OK;
	if (rc == WF_OK)
		rc = voc_parse_json(v, "tokenizer_config.json", f->tokenizer_config_json, f->tokenizer_config_json_len,
				    &v->tc);
	if (rc == WF_OK)
		rc = voc_parse_json(v, "config.json", f->config_json, f->config_json_len, &v->cfg);
	/* the converter calls .get on each: anything but an object makes it fail */
	if (rc == WF_OK && v->tj && !cJSON_IsObject(v->tj))
		rc = wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: not an object");
	if (rc == WF_OK && v->tc && !cJSON_IsObject(v->tc))
		rc = wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: not an object");
	if (rc == WF_OK && v->cfg && !cJSON_IsObject(v->cfg))
		rc = wf_fail(v->err, WF_ERR_FORMAT, "config.json: not an object");
	return rc;
}

enum wf_err wf_vocab_write(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vocab_size,
			   struct wf_gguf_w *w, char *err)
{
	struct voc v = {.f = f, .vocab_size = vocab_size, .err = err};
	enum wf_err rc = parse_files(&v);
	if (rc == WF_OK && vocab_size > WF_VOCAB_MAX_TOKENS)
		rc = wf_fail(err, WF_ERR_UNSUP, "config.json: vocab_size: %" PRId64 " (at most %" PRId64 " supported)",
			     vocab_size, WF_VOCAB_MAX_TOKENS);
	if (rc == WF_OK)
		rc = route(&v, r);
	if (rc == WF_OK)
		rc = check_unique(&v, f->tokenizer_model && v.n_tok ? "tokenizer.model" : "tokenizer.json");
	if (rc == WF_OK)
		rc = voc_vocab_unique(&v);
	if (rc == WF_OK) {
		emit(&v, w);
		if (w->rc != WF_OK)
			rc = wf_fail(err, w->rc, "tokenizer: %s", w->err);
	}
	if (v.ts_on)
		wf_idset_free(&v.ts);
	cJSON_Delete(v.tj);
	cJSON_Delete(v.tc);
	cJSON_Delete(v.cfg);
	cJSON_Delete(v.added);
	cJSON_Delete(v.ctj);
	for (size_t i = 0; i < v.n_blk; i++)
		free(v.blk[i]);
	free(v.blk);
	return rc;
}
