/* wf_hf_tok_kv.c - the GGUF tokenizer key/values for wf_hf_tok: typed,
 * read through wf_gguf_kv.h's getters, the meaning
 * llama.cpp gives them (llama-vocab.cpp, llama_vocab::impl::load), and a
 * text -> id table. */
#include "model/wf_hf_tok_int.h"
#include "model/wf_gguf.h"
#include "model/wf_vocab.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_MERGES ((uint64_t)WF_VOCAB_MAX_TOKENS * 4)

/* Fills in's key/value handles from the index: the keys it reads, and
 * the named chat templates in file order. */
static void find_keys(struct ht_in *in)
{
	static const char tp[] = "tokenizer.chat_template.";
	static const struct { const char *k; size_t off; } map[] = {
		{"tokenizer.ggml.model", offsetof(struct ht_in, model)},
		{"tokenizer.ggml.pre", offsetof(struct ht_in, pre)},
		{"tokenizer.ggml.tokens", offsetof(struct ht_in, tokens)},
		{"tokenizer.ggml.scores", offsetof(struct ht_in, scores)},
		{"tokenizer.ggml.token_type", offsetof(struct ht_in, types)},
		{"tokenizer.ggml.merges", offsetof(struct ht_in, merges)},
		{"tokenizer.ggml.bos_token_id", offsetof(struct ht_in, bos_kv)},
		{"tokenizer.ggml.eos_token_id", offsetof(struct ht_in, eos_kv)},
		{"tokenizer.ggml.unknown_token_id", offsetof(struct ht_in, unk_kv)},
		{"tokenizer.ggml.padding_token_id", offsetof(struct ht_in, pad_kv)},
		{"tokenizer.ggml.add_bos_token", offsetof(struct ht_in, add_bos_kv)},
		{"tokenizer.ggml.add_eos_token", offsetof(struct ht_in, add_eos_kv)},
		{"tokenizer.ggml.add_space_prefix", offsetof(struct ht_in, add_space)},
		{"tokenizer.ggml.remove_extra_whitespaces", offsetof(struct ht_in, rm_ws)},
		{"tokenizer.chat_template", offsetof(struct ht_in, chat)},
		{"general.name", offsetof(struct ht_in, name)},
	};
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++) {
		struct ht_raw *r = (struct ht_raw *)((char *)in + map[i].off);
		r->id = wf_gguf_find(&in->v, map[i].k);
		r->set = r->id >= 0;
		r->type = r->set ? wf_gguf_at(&in->v, r->id)->type : 0;
	}
	for (size_t i = 0; i < in->v.ix->n && in->n_tpl < HT_MAX_TEMPLATES; i++) {
		uint64_t n;
		const uint8_t *k = wf_gguf_key(&in->v, (int64_t)i, &n);
		if (k && n > sizeof tp - 1 && memcmp(k, tp, sizeof tp - 1) == 0) {
			in->tpl_name[in->n_tpl] = (struct wf_tok_str){.p = k + sizeof tp - 1, .n = n - (sizeof tp - 1)};
			in->tpl[in->n_tpl++] = (struct ht_raw){true, (int64_t)i, in->v.ix->kv[i].type};
		}
	}
}

/* A string value: type STR, length inside the value, valid UTF-8 without NUL. */
static enum wf_err get_str(const struct ht_in *in, const struct ht_raw *r, const char *key, struct wf_tok_str *out,
			   char *why)
{
	const uint8_t *p;
	uint64_t n;
	enum wf_gguf_got g = wf_gguf_str(&in->v, r->id, &p, &n);
	if (g == WF_GGUF_TYPE || g == WF_GGUF_ABSENT)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a string", key, r->type);
	if (g != WF_GGUF_OK || n > UINT32_MAX)
		return wf_fail(why, WF_ERR_UNSUP, "%s: string length past its value", key);
	const char *bad = wf_tok_text_bad(p, (size_t)n);
	if (bad)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %s", key, bad);
	*out = (struct wf_tok_str){.p = p, .n = (size_t)n};
	return WF_OK;
}

bool ht_str_of(const struct ht_in *in, const struct ht_raw *r, struct wf_tok_str *out)
{
	const uint8_t *p;
	uint64_t n;
	if (!r->set || wf_gguf_str(&in->v, r->id, &p, &n) != WF_GGUF_OK || n > UINT32_MAX)
		return false;
	*out = (struct wf_tok_str){.p = p, .n = (size_t)n};
	return true;
}

/* A token id: UINT32 (or a non-negative INT32), as llama.cpp's get_key
 * reads it; an id past the vocabulary is ignored, as llama.cpp does
 * ("bad special token ... using default id"). */
static enum wf_err get_id(const struct ht_in *in, const struct ht_raw *r, const char *key, size_t n_tok, int64_t *id,
			  char *why)
{
	if (!r->set)
		return WF_OK;
	int64_t v;
	if (r->type != WF_GT_UINT32 && r->type != WF_GT_INT32)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a uint32", key, r->type);
	if (wf_gguf_int(&in->v, r->id, INT32_MIN, UINT32_MAX, &v) != WF_GGUF_OK)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a uint32", key, r->type);
	if (v < 0)
		return wf_fail(why, WF_ERR_UNSUP, "%s: negative id %d", key, (int)v);
	if ((uint64_t)v < n_tok)
		*id = v;
	return WF_OK;
}

/* A bool: BOOL, read as llama.cpp reads it (any non-zero byte is true). */
static enum wf_err get_bool(const struct ht_in *in, const struct ht_raw *r, const char *key, bool *out, char *why)
{
	if (!r->set)
		return WF_OK;
	if (wf_gguf_bool(&in->v, r->id, out) != WF_GGUF_OK)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a bool", key, r->type);
	return WF_OK;
}

/* Array header: element type and count, the count checked against max
 * (the parser checked it against the value's bytes). */
static enum wf_err arr_head(const struct ht_in *in, const struct ht_raw *r, const char *key, uint32_t *et,
			    uint64_t *cnt, uint64_t max, char *why)
{
	if (wf_gguf_arr(&in->v, r->id, et, cnt) != WF_GGUF_OK)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not an array", key, r->type);
	if (*cnt > max)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu elements, more than %llu", key, (unsigned long long)*cnt,
			       (unsigned long long)max);
	return WF_OK;
}

bool ht_arr_strs(const struct ht_in *in, const struct ht_raw *r, const char *key, size_t want, struct wf_tok_str **out,
		 size_t *n, char *why)
{
	uint32_t et;
	uint64_t cnt;
	*out = NULL;
	if (wf_gguf_arr(&in->v, r->id, &et, &cnt) == WF_GGUF_OK && et != WF_GT_STRING)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of strings", key, et), false;
	if (arr_head(in, r, key, &et, &cnt, want ? want : MAX_MERGES, why) != WF_OK)
		return false;
	struct wf_tok_str *s = calloc(cnt ? cnt : 1, sizeof *s);
	if (!s)
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", key), false;
	struct wf_gguf_it it = {0};
	for (uint64_t i = 0; i < cnt; i++) {
		const uint8_t *p;
		uint64_t len;
		if (wf_gguf_arr_str_next(&in->v, r->id, &it, &p, &len) != WF_GGUF_OK || len > UINT32_MAX) {
			free(s);
			return wf_fail(why, WF_ERR_UNSUP, "%s[%llu]: length past the value", key, (unsigned long long)i), false;
		}
		s[i] = (struct wf_tok_str){.p = p, .n = (size_t)len};
		const char *bad = wf_tok_text_bad(s[i].p, s[i].n);
		if (bad) {
			free(s);
			return wf_fail(why, WF_ERR_UNSUP, "%s[%llu]: %s", key, (unsigned long long)i, bad), false;
		}
	}
	*out = s;
	*n = (size_t)cnt;
	return true;
}

/* scores: FLOAT32 (or INT32, as llama.cpp accepts), one per token, finite */
static enum wf_err get_scores(struct ht_in *in, char *why)
{
	static const char key[] = "tokenizer.ggml.scores";
	uint32_t et;
	uint64_t cnt;
	if (!in->scores.set)
		return in->spm ? wf_fail(why, WF_ERR_UNSUP, "%s: absent, and a SentencePiece vocabulary needs it", key) : WF_OK;
	enum wf_err e = arr_head(in, &in->scores, key, &et, &cnt, WF_VOCAB_MAX_TOKENS, why);
	if (e != WF_OK)
		return e;
	if (et != WF_GT_FLOAT32 && et != WF_GT_INT32)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of float32", key, et);
	if (cnt != in->n)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu scores for %zu tokens", key, (unsigned long long)cnt, in->n);
	if (!(in->score = malloc((in->n ? in->n : 1) * sizeof *in->score)))
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", key);
	for (size_t i = 0; i < in->n; i++) {
		double d = 0;
		int64_t v = 0;
		enum wf_gguf_got g = et == WF_GT_INT32 ? wf_gguf_arr_int(&in->v, in->scores.id, i, INT32_MIN, INT32_MAX, &v)
						       : wf_gguf_arr_float(&in->v, in->scores.id, i, &d);
		in->score[i] = et == WF_GT_INT32 ? (float)v : (float)d;
		if (g != WF_GGUF_OK || !isfinite(in->score[i]))
			return wf_fail(why, WF_ERR_UNSUP, "%s[%zu]: not a finite number", key, i);
	}
	return WF_OK;
}

static enum wf_err get_types(struct ht_in *in, char *why)
{
	static const char key[] = "tokenizer.ggml.token_type";
	uint32_t et;
	uint64_t cnt;
	if (!(in->type = malloc((in->n ? in->n : 1) * sizeof *in->type)))
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", key);
	for (size_t i = 0; i < in->n; i++)
		in->type[i] = WF_TOK_NORMAL;
	if (!in->types.set)
		return WF_OK;
	enum wf_err e = arr_head(in, &in->types, key, &et, &cnt, WF_VOCAB_MAX_TOKENS, why);
	if (e != WF_OK)
		return e;
	if (et != WF_GT_INT32)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of int32", key, et);
	if (cnt != in->n)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu types for %zu tokens", key, (unsigned long long)cnt, in->n);
	for (size_t i = 0; i < in->n; i++) {
		int64_t t;
		if (wf_gguf_arr_int(&in->v, in->types.id, i, INT32_MIN, INT32_MAX, &t) != WF_GGUF_OK)
			return wf_fail(why, WF_ERR_UNSUP, "%s[%zu]: not in its value", key, i);
		in->type[i] = (int32_t)t;
		if (in->type[i] < 0 || in->type[i] > WF_TOK_BYTE)
			return wf_fail(why, WF_ERR_UNSUP, "%s[%zu]: unknown token type %d", key, i, in->type[i]);
	}
	return WF_OK;
}

/* llama.cpp names an empty token "[EMPTY_i]" (load); so do we. */
static enum wf_err fill_empty(struct ht_in *in, char *why)
{
	size_t n_empty = 0, at = 0;
	for (size_t i = 0; i < in->n; i++)
		n_empty += in->tok[i].n == 0;
	if (!n_empty)
		return WF_OK;
	if (!(in->empty_buf = malloc(n_empty * 24)))
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.tokens: out of memory");
	for (size_t i = 0; i < in->n; i++)
		if (in->tok[i].n == 0) {
			int k = snprintf(in->empty_buf + at, 24, "[EMPTY_%zu]", i);
			in->tok[i] = (struct wf_tok_str){.s = in->empty_buf + at, .n = k};
			at += 24;
		}
	return WF_OK;
}

static const void *tok_text(const void *ctx, uint32_t i, size_t *n)
{
	const struct wf_tok_str *t = &((const struct ht_in *)ctx)->tok[i];
	*n = t->n;
	return t->p;
}

static enum wf_err build_table(struct ht_in *in, char *why)
{
	if (in->n >= UINT32_MAX - 1 || !wf_idset_init(&in->ids, in->n, tok_text, in))
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.tokens: out of memory");
	/* the set keeps the first index put of equal texts: putting the last
	 * first makes the last one win, as in llama.cpp */
	for (size_t i = in->n; i-- > 0;)
		wf_idset_put(&in->ids, in->tok[i].p, in->tok[i].n, (uint32_t)i);
	return WF_OK;
}

int64_t ht_lookup(const struct ht_in *in, const uint8_t *p, size_t n)
{
	uint32_t i = wf_idset_get(&in->ids, p, n);
	return i == WF_NAMES_NONE ? -1 : (int64_t)i;
}

static enum wf_err get_model(struct ht_in *in, char *why)
{
	struct wf_tok_str s;
	if (!in->model.set)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.model: absent, no tokenizer in this file");
	enum wf_err e = get_str(in, &in->model, "tokenizer.ggml.model", &s, why);
	if (e != WF_OK)
		return e;
	if (s.n == 5 && !memcmp(s.p, "llama", 5))
		in->spm = true;
	else if (s.n == 6 && !memcmp(s.p, "gemma4", 6))
		in->gemma4 = true;
	else if (!(s.n == 4 && !memcmp(s.p, "gpt2", 4))) {
		char q[96];
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.model: %s is not one weightfs maps (llama, gpt2, gemma4)",
			       wf_quote(q, sizeof q, s.p, s.n));
	}
	if (in->pre.set && (e = get_str(in, &in->pre, "tokenizer.ggml.pre", &in->pre_s, why)) != WF_OK)
		return e;
	if (in->chat.set && (e = get_str(in, &in->chat, "tokenizer.chat_template", &in->chat_s, why)) != WF_OK)
		return e;
	if (!in->tokens.set)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.tokens: absent");
	if (!ht_arr_strs(in, &in->tokens, "tokenizer.ggml.tokens", WF_VOCAB_MAX_TOKENS, &in->tok, &in->n, why))
		return strstr(why, "out of memory") ? WF_ERR_NOMEM : WF_ERR_UNSUP;
	if (in->n == 0)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.tokens: empty");
	return WF_OK;
}

/* The special ids and flags with llama.cpp's defaults for the model type. */
static enum wf_err get_flags(struct ht_in *in, char *why)
{
	enum wf_err e;
	in->bos = in->eos = in->unk = in->pad = -1;
	if (in->spm) {
		in->bos = 1, in->eos = 2, in->unk = 0;
		in->add_bos = true, in->add_space_prefix = true;
	} else if (in->gemma4) {
		in->clean_spaces = true;
	} else {
		in->bos = 11, in->eos = 11; /* llama.cpp's default for gpt2 vocabularies (Falcon's) */
		in->clean_spaces = true;
	}
	if (in->bos >= (int64_t)in->n)
		in->bos = -1;
	if (in->eos >= (int64_t)in->n)
		in->eos = -1;
	if ((e = get_id(in, &in->bos_kv, "tokenizer.ggml.bos_token_id", in->n, &in->bos, why)) ||
	    (e = get_id(in, &in->eos_kv, "tokenizer.ggml.eos_token_id", in->n, &in->eos, why)) ||
	    (e = get_id(in, &in->unk_kv, "tokenizer.ggml.unknown_token_id", in->n, &in->unk, why)) ||
	    (e = get_id(in, &in->pad_kv, "tokenizer.ggml.padding_token_id", in->n, &in->pad, why)))
		return e;
	return WF_OK;
}

enum wf_err ht_read(const struct wf_gguf_vals *v, struct ht_in *in, char *why)
{
	enum wf_err e;
	if (!v->ix || !v->data)
		return wf_fail(why, WF_ERR_UNSUP, "header: no GGUF key/values to read");
	in->v = *v;
	find_keys(in);
	if ((e = get_model(in, why)) || (e = fill_empty(in, why)) || (e = get_scores(in, why)) ||
	    (e = get_types(in, why)) || (e = build_table(in, why)) || (e = get_flags(in, why)))
		return e;
	bool rm = false;
	if ((e = get_bool(in, &in->rm_ws, "tokenizer.ggml.remove_extra_whitespaces", &rm, why)))
		return e;
	if (rm)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.remove_extra_whitespaces: true, which HF tokenizers' BPE cannot do");
	return WF_OK;
}

enum wf_err ht_read_flags(struct ht_in *in, char *why)
{
	enum wf_err e;
	if ((e = get_bool(in, &in->add_bos_kv, "tokenizer.ggml.add_bos_token", &in->add_bos, why)) ||
	    (e = get_bool(in, &in->add_eos_kv, "tokenizer.ggml.add_eos_token", &in->add_eos, why)) ||
	    (e = get_bool(in, &in->add_space, "tokenizer.ggml.add_space_prefix", &in->add_space_prefix, why)))
		return e;
	if (in->gemma4)
		in->add_bos = true; /* llama.cpp overrides add_bos_token false for Gemma 4 */
	if (in->add_bos && in->bos < 0)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.add_bos_token: true, but there is no BOS token");
	if (in->add_eos && in->eos < 0)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.add_eos_token: true, but there is no EOS token");
	return WF_OK;
}

void ht_in_free(struct ht_in *in)
{
	free(in->tok);
	free(in->empty_buf);
	free(in->score);
	free(in->type);
	free(in->added);
	free(in->rstrip);
	wf_idset_free(&in->ids);
	free(in->merge);
	memset(in, 0, sizeof *in);
}
