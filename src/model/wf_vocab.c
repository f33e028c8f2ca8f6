/* wf_vocab.c - the tokenizer key/values of a model folder (wf_vocab.h):
 * which converter path runs, the final checks and the writing; what the
 * paths share is in wf_vocab_base.c, which calls none of them. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_names.h"
#include "model/wf_json_scan.h"

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
	if (!exact && !wf_idset_init(&set, v->n_tok, voc_tok_at, v->tok))
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

/* wf_vocab_write, writing into w when not NULL, filling *len when not
 * NULL. */
static enum wf_err vocab_run(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vocab_size,
			     struct wf_gguf_w *w, struct wf_vocab_len *len, char *err)
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
	if (rc == WF_OK && w) {
		emit(&v, w);
		if (w->rc != WF_OK)
			rc = wf_fail(err, w->rc, "tokenizer: %s", w->err);
	}
	if (rc == WF_OK && len) {
		/* len() of json.load's dict and list: the keys are each once (voc_vocab_unique) */
		const cJSON *vocab = jget(jget(v.tj, "model"), "vocab");
		len->n_tokens = v.n_tok;
		len->spm = v.from_spm;
		len->tj_vocab = !v.tj ? -1 : v.big.vocab_on ? (int64_t)v.big.n_vocab
				: cJSON_IsObject(vocab) ? cJSON_GetArraySize(vocab) : -1;
		len->tj_added = v.tj && v.big.add_on ? (int64_t)v.big.n_add : -1;
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

enum wf_err wf_vocab_write(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vocab_size,
			   struct wf_gguf_w *w, char *err)
{
	return vocab_run(f, r, vocab_size, w, NULL, err);
}

enum wf_err wf_vocab_len(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vocab_size,
			 struct wf_vocab_len *out, char *err)
{
	memset(out, 0, sizeof *out);
	return vocab_run(f, r, vocab_size, NULL, out, err);
}
