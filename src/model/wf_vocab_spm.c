/* wf_vocab_spm.c - the SentencePiece paths: TextModel's
 * _create_vocab_sentencepiece / _set_vocab_sentencepiece and Phi-3's own
 * routine (conversion/phi.py), which differs in its bounds checks and in
 * not pre-normalizing user-defined tokens. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <string.h>

#include "base/wf_names.h"
#include "model/wf_spm.h"

/* The base pieces: ids past the vocabulary are dropped (the converter
 * warns and stops), USER_DEFINED pieces become NORMAL. */
static void spm_pieces(struct voc *v, const struct wf_spm *sp)
{
	for (size_t i = 0; i < sp->n && i < v->n_tok; i++) {
		const struct wf_spm_piece *p = &sp->p[i];
		struct vtok *t = &v->tok[i];
		t->s = (const char *)p->s;
		t->n = p->n;
		t->score = p->score;
		switch (p->type) {
		case WF_SPM_UNKNOWN:
		case WF_SPM_CONTROL:
		case WF_SPM_UNUSED:
		case WF_SPM_BYTE:
			t->type = p->type;
			break;
		default:
			t->type = WF_TOK_NORMAL;
		}
	}
}

/* An id key of added_tokens_decoder: Python's int() takes more spellings
 * ("+5", " 5", "5_0", other scripts' digits) than canonical ASCII digits,
 * which are all that is accepted here. */
static bool id_key(const char *s, int64_t *out)
{
	int64_t x = 0;
	size_t n = strlen(s);
	if (n == 0 || n > 12)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		x = x * 10 + (s[i] - '0');
	}
	*out = x;
	return true;
}

static enum wf_err no_dup_keys(struct voc *v, const cJSON *obj, const char *src)
{
	struct wf_names set;
	enum wf_err rc = WF_OK;
	char q[96];
	if (!wf_names_init(&set, (size_t)cJSON_GetArraySize(obj) + 1))
		return voc_nomem(v);
	for (const cJSON *c = obj->child; c && rc == WF_OK; c = c->next)
		if (wf_names_put(&set, c->string, strlen(c->string), 0) != WF_NAMES_NONE)
			rc = wf_fail(v->err, WF_ERR_UNSUP, "%s: key %s given twice", src,
				     wf_quote(q, sizeof q, c->string, strlen(c->string)));
	wf_names_free(&set);
	return rc;
}

static void set_tok(struct vtok *t, const char *s, size_t n, int32_t type)
{
	t->s = s;
	t->n = (uint32_t)n;
	t->score = -1000.0f;
	t->type = type;
}

/* added_tokens.json {content: id}: USER_DEFINED, ids past the vocabulary
 * skipped. */
static enum wf_err added_json(struct voc *v)
{
	const struct wf_vocab_files *f = v->f;
	enum wf_err rc;
	char q[96];
	if (!f->added_tokens_json)
		return WF_OK;
	rc = voc_parse_json(v, "added_tokens.json", f->added_tokens_json, f->added_tokens_json_len, &v->added);
	if (rc == WF_OK && !cJSON_IsObject(v->added))
		rc = wf_fail(v->err, WF_ERR_FORMAT, "added_tokens.json: not an object");
	if (rc == WF_OK)
		rc = no_dup_keys(v, v->added, "added_tokens.json");
	for (const cJSON *c = rc == WF_OK ? v->added->child : NULL; c; c = c->next) {
		int64_t id;
		size_t n = strlen(c->string);
		if (!jint(c, &id) || cJSON_IsBool(c) || id < 0)
			return wf_fail(v->err, WF_ERR_FORMAT, "added_tokens.json: %s: id not a non-negative integer",
				       wf_quote(q, sizeof q, c->string, n));
		if ((size_t)id < v->n_tok)
			set_tok(&v->tok[id], c->string, n, WF_TOK_USER);
	}
	return rc;
}

/* tokenizer_config.json added_tokens_decoder {"id": {content, special}};
 * phi3: no bounds check (an id past the list fails the converter), no
 * look-special test and no U+2581 replacement. */
static enum wf_err added_decoder(struct voc *v, bool phi3)
{
	const cJSON *d = jget(v->tc, "added_tokens_decoder");
	enum wf_err rc = WF_OK;
	char q[96];
	if (!d)
		return WF_OK;
	if (!cJSON_IsObject(d))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder: not an object");
	rc = no_dup_keys(v, d, "tokenizer_config.json: added_tokens_decoder");
	for (const cJSON *c = rc == WF_OK ? d->child : NULL; c; c = c->next) {
		const cJSON *ct = jget(c, "content");
		int64_t id;
		size_t n;
		if (!id_key(c->string, &id) || !cJSON_IsString(ct))
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder[%s]: bad id or content",
				       wf_quote(q, sizeof q, c->string, strlen(c->string)));
		if ((size_t)id >= v->n_tok) {
			if (phi3)
				return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer_config.json: added_tokens_decoder[%" PRId64
					       "]: past the vocabulary", id);
			continue;
		}
		const char *s = ct->valuestring;
		n = strlen(s);
		bool control = jtruthy(jget(c, "special")) || (!phi3 && looks_special(s, n));
		if (!control && !phi3 && !(s = replace_u2581(v, s, n, &n)))
			return voc_nomem(v);
		set_tok(&v->tok[id], s, n, control ? WF_TOK_CONTROL : WF_TOK_USER);
	}
	return rc;
}

/* Phi-3 also applies tokenizer.json's added_tokens, unchecked. */
static enum wf_err phi3_tj_added(struct voc *v)
{
	const cJSON *at = jget(v->tj, "added_tokens");
	size_t i = 0;
	if (!at)
		return WF_OK;
	if (!cJSON_IsArray(at))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens: not a list");
	for (; i < v->big.n_add; i++) {
		const struct tjadd *c = &v->big.add[i];
		if (!c->id_ok || !c->content || c->id < 0 || (size_t)c->id >= v->n_tok)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens[%zu]: bad id or content", i);
		set_tok(&v->tok[c->id], c->content, strlen(c->content), c->special_truthy ? WF_TOK_CONTROL : WF_TOK_USER);
	}
	return WF_OK;
}

enum wf_err voc_write_llama(struct voc *v)
{
	enum wf_err rc = voc_kv(v, "tokenizer.ggml.model", VKV_STR, 0, false, "llama", 5);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.pre", VKV_STR, 0, false, "default", 7);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.tokens", VKV_TOKENS, 0, false, NULL, 0);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.scores", VKV_SCORES, 0, false, NULL, 0);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.token_type", VKV_TYPES, 0, false, NULL, 0);
	if (rc == WF_OK)
		rc = voc_special(v, false, NULL, 0, (int64_t)v->n_tok, NULL, 0);
	return rc;
}

static enum wf_err spm_common(struct voc *v, bool phi3)
{
	struct wf_spm sp;
	enum wf_err rc;
	int64_t vs;
	if (!v->f->tokenizer_model)
		return WF_ERR_RANGE;
	v->from_spm = true;
	rc = wf_spm_parse(v->f->tokenizer_model, v->f->tokenizer_model_len, (size_t)WF_VOCAB_MAX_TOKENS, &sp, v->err);
	if (rc != WF_OK)
		return rc;
	/* `vocab_size or sp.vocab_size()`; phi3: hparams.get('vocab_size', ...) */
	vs = v->vocab_size > 0 || (phi3 && v->vocab_size == 0) ? v->vocab_size : (int64_t)sp.n;
	if (phi3 && (size_t)vs < sp.n)
		rc = wf_fail(v->err, WF_ERR_FORMAT, "config.json: vocab_size %" PRId64 " is below tokenizer.model's %zu pieces", vs,
			     sp.n);
	if (rc == WF_OK)
		rc = voc_tokens(v, (size_t)vs);
	if (rc == WF_OK)
		spm_pieces(v, &sp);
	if (rc == WF_OK)
		rc = added_json(v);
	if (rc == WF_OK)
		rc = added_decoder(v, phi3);
	if (rc == WF_OK && phi3)
		rc = phi3_tj_added(v);
	if (rc == WF_OK)
		rc = voc_write_llama(v);
	wf_spm_free(&sp);
	return rc;
}

enum wf_err voc_sentencepiece(struct voc *v)
{
	return spm_common(v, false);
}

enum wf_err voc_phi3_spm(struct voc *v)
{
	return spm_common(v, true);
}
