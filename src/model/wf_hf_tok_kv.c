/* wf_hf_tok_kv.c - the GGUF tokenizer key/values for wf_hf_tok: typed,
 * bounds-checked accessors over wf_gguf_kvs' raw values, the meaning
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

static uint64_t rd64(const uint8_t *p)
{
	uint64_t v;
	memcpy(&v, p, 8);
	return v;
}

static uint32_t rd32(const uint8_t *p)
{
	uint32_t v;
	memcpy(&v, p, 4);
	return v;
}

static bool key_is(const struct wf_gguf_kv *kv, const char *k)
{
	size_t n = strlen(k);
	return kv->key_len == n && memcmp(kv->key, k, n) == 0;
}

static void set_raw(struct ht_raw *r, const struct wf_gguf_kv *kv)
{
	r->set = true;
	r->type = kv->type;
	r->val = kv->val;
	r->len = kv->val_len;
}

static enum wf_err on_kv(void *ctx, const struct wf_gguf_kv *kv)
{
	struct ht_in *in = ctx;
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
	for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
		if (key_is(kv, map[i].k)) {
			set_raw((struct ht_raw *)((char *)in + map[i].off), kv);
			return WF_OK;
		}
	if (kv->key_len > sizeof tp - 1 && memcmp(kv->key, tp, sizeof tp - 1) == 0 && in->n_tpl < HT_MAX_TEMPLATES) {
		in->tpl_name[in->n_tpl] = (struct wf_tok_str){.p = kv->key + sizeof tp - 1, .n = kv->key_len - (sizeof tp - 1)};
		set_raw(&in->tpl[in->n_tpl++], kv);
	}
	return WF_OK;
}

/* A string value: type STR, length inside the value, valid UTF-8 without NUL. */
static enum wf_err get_str(const struct ht_raw *r, const char *key, struct wf_tok_str *out, char *why)
{
	if (r->type != HT_STR || r->len < 8)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a string", key, r->type);
	uint64_t n = rd64(r->val);
	if (n > r->len - 8 || n > UINT32_MAX)
		return wf_fail(why, WF_ERR_UNSUP, "%s: string length %llu past its value", key, (unsigned long long)n);
	const char *bad = wf_tok_text_bad(r->val + 8, (size_t)n);
	if (bad)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %s", key, bad);
	*out = (struct wf_tok_str){.p = r->val + 8, .n = (size_t)n};
	return WF_OK;
}

/* A token id: UINT32 (or a non-negative INT32), as llama.cpp's get_key
 * reads it; an id past the vocabulary is ignored, as llama.cpp does
 * ("bad special token ... using default id"). */
static enum wf_err get_id(const struct ht_raw *r, const char *key, size_t n_tok, int64_t *id, char *why)
{
	if (!r->set)
		return WF_OK;
	if ((r->type != HT_U32 && r->type != HT_I32) || r->len != 4)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a uint32", key, r->type);
	uint32_t v = rd32(r->val);
	if (r->type == HT_I32 && (int32_t)v < 0)
		return wf_fail(why, WF_ERR_UNSUP, "%s: negative id %d", key, (int32_t)v);
	if (v < n_tok)
		*id = v;
	return WF_OK;
}

static enum wf_err get_bool(const struct ht_raw *r, const char *key, bool *out, char *why)
{
	if (!r->set)
		return WF_OK;
	if (r->type != HT_BOOL || r->len != 1 || r->val[0] > 1)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not a bool", key, r->type);
	*out = r->val[0] != 0;
	return WF_OK;
}

/* Array header: element type and count, the count checked against the
 * bytes of the value (at least min_elem bytes each) and against max. */
static enum wf_err arr_head(const struct ht_raw *r, const char *key, uint32_t *et, uint64_t *cnt, uint64_t min_elem,
			    uint64_t max, char *why)
{
	if (r->type != HT_ARR || r->len < 12)
		return wf_fail(why, WF_ERR_UNSUP, "%s: GGUF type %u, not an array", key, r->type);
	*et = rd32(r->val);
	*cnt = rd64(r->val + 4);
	if (*cnt > max)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu elements, more than %llu", key, (unsigned long long)*cnt,
			       (unsigned long long)max);
	if (*cnt > (r->len - 12) / min_elem)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu elements do not fit in its %llu bytes", key,
			       (unsigned long long)*cnt, (unsigned long long)r->len);
	return WF_OK;
}

bool ht_arr_strs(const struct ht_raw *r, const char *key, size_t want, struct wf_tok_str **out, size_t *n, char *why)
{
	uint32_t et;
	uint64_t cnt;
	*out = NULL;
	if (r->type == HT_ARR && r->len >= 12 && rd32(r->val) != HT_STR)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of strings", key, rd32(r->val)), false;
	if (arr_head(r, key, &et, &cnt, 8, want ? want : MAX_MERGES, why) != WF_OK)
		return false;
	struct wf_tok_str *s = calloc(cnt ? cnt : 1, sizeof *s);
	if (!s)
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", key), false;
	uint64_t at = 12;
	for (uint64_t i = 0; i < cnt; i++) {
		uint64_t len = r->len - at < 8 ? UINT64_MAX : rd64(r->val + at);
		if (len > r->len - at - 8 || len > UINT32_MAX) {
			free(s);
			return wf_fail(why, WF_ERR_UNSUP, "%s[%llu]: length past the value", key, (unsigned long long)i), false;
		}
		s[i] = (struct wf_tok_str){.p = r->val + at + 8, .n = (size_t)len};
		const char *bad = wf_tok_text_bad(s[i].p, s[i].n);
		if (bad) {
			free(s);
			return wf_fail(why, WF_ERR_UNSUP, "%s[%llu]: %s", key, (unsigned long long)i, bad), false;
		}
		at += 8 + len;
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
	enum wf_err e = arr_head(&in->scores, key, &et, &cnt, 4, WF_VOCAB_MAX_TOKENS, why);
	if (e != WF_OK)
		return e;
	if (et != HT_F32 && et != HT_I32)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of float32", key, et);
	if (cnt != in->n)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu scores for %zu tokens", key, (unsigned long long)cnt, in->n);
	if (!(in->score = malloc((in->n ? in->n : 1) * sizeof *in->score)))
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", key);
	for (size_t i = 0; i < in->n; i++) {
		uint32_t v = rd32(in->scores.val + 12 + 4 * i);
		float f;
		memcpy(&f, &v, 4);
		in->score[i] = et == HT_I32 ? (float)(int32_t)v : f;
		if (!isfinite(in->score[i]))
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
	enum wf_err e = arr_head(&in->types, key, &et, &cnt, 4, WF_VOCAB_MAX_TOKENS, why);
	if (e != WF_OK)
		return e;
	if (et != HT_I32)
		return wf_fail(why, WF_ERR_UNSUP, "%s: an array of GGUF type %u, not of int32", key, et);
	if (cnt != in->n)
		return wf_fail(why, WF_ERR_UNSUP, "%s: %llu types for %zu tokens", key, (unsigned long long)cnt, in->n);
	for (size_t i = 0; i < in->n; i++) {
		in->type[i] = (int32_t)rd32(in->types.val + 12 + 4 * i);
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
	enum wf_err e = get_str(&in->model, "tokenizer.ggml.model", &s, why);
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
	if (in->pre.set && (e = get_str(&in->pre, "tokenizer.ggml.pre", &in->pre_s, why)) != WF_OK)
		return e;
	if (in->chat.set && (e = get_str(&in->chat, "tokenizer.chat_template", &in->chat_s, why)) != WF_OK)
		return e;
	if (!in->tokens.set)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.tokens: absent");
	if (!ht_arr_strs(&in->tokens, "tokenizer.ggml.tokens", WF_VOCAB_MAX_TOKENS, &in->tok, &in->n, why))
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
	if ((e = get_id(&in->bos_kv, "tokenizer.ggml.bos_token_id", in->n, &in->bos, why)) ||
	    (e = get_id(&in->eos_kv, "tokenizer.ggml.eos_token_id", in->n, &in->eos, why)) ||
	    (e = get_id(&in->unk_kv, "tokenizer.ggml.unknown_token_id", in->n, &in->unk, why)) ||
	    (e = get_id(&in->pad_kv, "tokenizer.ggml.padding_token_id", in->n, &in->pad, why)))
		return e;
	return WF_OK;
}

enum wf_err ht_read(const uint8_t *buf, uint64_t len, struct ht_in *in, char *why)
{
	/* wf_gguf_kvs starts at byte 16 without checking that the file has it */
	if (len < 24)
		return wf_fail(why, WF_ERR_UNSUP, "header: %llu bytes, too short for GGUF", (unsigned long long)len);
	enum wf_err e = wf_gguf_kvs(buf, len, on_kv, in, why);
	if (e != WF_OK)
		return e == WF_ERR_NOMEM ? e : WF_ERR_UNSUP;
	if ((e = get_model(in, why)) || (e = fill_empty(in, why)) || (e = get_scores(in, why)) ||
	    (e = get_types(in, why)) || (e = build_table(in, why)) || (e = get_flags(in, why)))
		return e;
	bool rm = false;
	if ((e = get_bool(&in->rm_ws, "tokenizer.ggml.remove_extra_whitespaces", &rm, why)))
		return e;
	if (rm)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.remove_extra_whitespaces: true, which HF tokenizers' BPE cannot do");
	return WF_OK;
}

enum wf_err ht_read_flags(struct ht_in *in, char *why)
{
	enum wf_err e;
	if ((e = get_bool(&in->add_bos_kv, "tokenizer.ggml.add_bos_token", &in->add_bos, why)) ||
	    (e = get_bool(&in->add_eos_kv, "tokenizer.ggml.add_eos_token", &in->add_eos, why)) ||
	    (e = get_bool(&in->add_space, "tokenizer.ggml.add_space_prefix", &in->add_space_prefix, why)))
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
