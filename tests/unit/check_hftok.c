/* check_hftok.c - unit tests for the hf/ tokenizer files
 * (src/model/wf_hf_tok*.c): a tiny SentencePiece and a tiny byte-level
 * vocabulary checked field by field (merges rebuilt from scores in score
 * order, added tokens, post-processor, tokenizer.model read back with
 * wf_spm_parse), and hostile key/values refused with one printable line
 * and no crash, on GGUF bytes made in memory. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "model/wf_gguf.h"
#include "model/wf_gguf_w.h"
#include "model/wf_hf_tok.h"
#include "model/wf_spm.h"

/* the SentencePiece vocabulary: id, text, score, type */
static const char *const spm_tok[] = {"<unk>", "<s>", "</s>", "<0x0A>", "\xe2\x96\x81", "a", "b",
				      "\xe2\x96\x81" "a", "ab", "\xe2\x96\x81" "ab", "<|im_end|>"};
static const float spm_score[] = {0, 0, 0, 0, -1, -2, -3, -4, -5, -6, 0};
static const int32_t spm_type[] = {2, 3, 3, 6, 1, 1, 1, 1, 1, 1, 1};
#define N_SPM (sizeof spm_tok / sizeof spm_tok[0])

enum { F_NONE = 0, F_NO_SCORES = 1, F_SHORT_SCORES = 2, F_BAD_UTF8 = 4, F_TOKENS_U32 = 8, F_NAN = 16,
       F_TYPE_99 = 32, F_BOS_STR = 64, F_ADDBOS_U8 = 128, F_EMPTY = 256, F_MODEL_FOO = 512, F_NO_MODEL = 1024,
       F_NUL = 2048 };

static char *gguf_spm(unsigned flags, size_t *len)
{
	struct wf_gguf_w w;
	char err[WF_ERRLEN], *out = NULL;
	wf_gguf_w_init(&w);
	wf_gguf_w_str(&w, "general.architecture", "llama", 5);
	if (!(flags & F_NO_MODEL))
		wf_gguf_w_str(&w, "tokenizer.ggml.model", flags & F_MODEL_FOO ? "foo" : "llama", flags & F_MODEL_FOO ? 3 : 5);
	size_t n = flags & F_EMPTY ? 0 : N_SPM;
	if (flags & F_TOKENS_U32) {
		wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_UINT32, n);
		for (size_t i = 0; i < n; i++)
			wf_gguf_w_arr_u32(&w, (uint32_t)i);
	} else {
		wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, n);
		for (size_t i = 0; i < n; i++)
			wf_gguf_w_arr_str(&w, i == 6 && (flags & F_BAD_UTF8) ? "\xc3(" : i == 6 && (flags & F_NUL) ? "b\0c" : spm_tok[i],
					  i == 6 && (flags & (F_BAD_UTF8 | F_NUL)) ? (flags & F_NUL ? 3 : 2) : strlen(spm_tok[i]));
	}
	wf_gguf_w_arr_end(&w);
	if (!(flags & F_NO_SCORES)) {
		size_t ns = flags & F_SHORT_SCORES ? n - 1 : n;
		wf_gguf_w_arr_begin(&w, "tokenizer.ggml.scores", WF_GT_FLOAT32, ns);
		for (size_t i = 0; i < ns; i++)
			wf_gguf_w_arr_f32(&w, i == 5 && (flags & F_NAN) ? __builtin_nanf("") : spm_score[i]);
		wf_gguf_w_arr_end(&w);
	}
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.token_type", WF_GT_INT32, n);
	for (size_t i = 0; i < n; i++)
		wf_gguf_w_arr_i32(&w, i == 4 && (flags & F_TYPE_99) ? 99 : spm_type[i]);
	wf_gguf_w_arr_end(&w);
	if (flags & F_BOS_STR)
		wf_gguf_w_str(&w, "tokenizer.ggml.bos_token_id", "1", 1);
	else
		wf_gguf_w_u32(&w, "tokenizer.ggml.bos_token_id", 1);
	wf_gguf_w_u32(&w, "tokenizer.ggml.eos_token_id", 2);
	if (flags & F_ADDBOS_U8)
		wf_gguf_w_raw(&w, "tokenizer.ggml.add_bos_token", WF_GT_UINT8, "\1", 1);
	wf_gguf_w_bool(&w, "tokenizer.ggml.add_eos_token", true);
	wf_gguf_w_str(&w, "tokenizer.chat_template", "{{ x }}", 7);
	ck_assert_int_eq(wf_gguf_w_finish(&w, &out, len, err), WF_OK);
	wf_gguf_w_free(&w);
	return out;
}

/* wf_hf_tok_make on the model the parser makes of buf (its key/value
 * index: the tokenizer reads them through it) */
static enum wf_err make_raw(const void *buf, size_t len, struct wf_hf_tok *t, char *why)
{
	struct wf_model *m = NULL;
	why[0] = 0;
	memset(t, 0, sizeof *t);
	enum wf_err e = wf_gguf_parse(&m, buf, len, why);
	if (e == WF_OK)
		e = wf_hf_tok_make(m, t, why);
	wf_model_free(m);
	if (e != WF_OK) {
		ck_assert_ptr_null(t->tokenizer_json);
		ck_assert_msg(why[0] && !strchr(why, '\n'), "one line: %s", why);
		for (const char *p = why; *p; p++)
			ck_assert_msg((unsigned char)*p >= 0x20, "printable: %s", why);
	}
	return e;
}

static cJSON *jget(cJSON *o, const char *path)
{
	char buf[256];
	snprintf(buf, sizeof buf, "%s", path);
	for (char *k = strtok(buf, "."); k && o; k = strtok(NULL, "."))
		o = cJSON_GetObjectItemCaseSensitive(o, k);
	return o;
}

static int merge_index(cJSON *merges, const char *a, const char *b)
{
	int i = 0;
	for (cJSON *m = merges->child; m; m = m->next, i++)
		if (!strcmp(cJSON_GetArrayItem(m, 0)->valuestring, a) && !strcmp(cJSON_GetArrayItem(m, 1)->valuestring, b))
			return i;
	return -1;
}

START_TEST(test_spm)
{
	size_t len;
	char *g = gguf_spm(F_NONE, &len), why[WF_ERRLEN];
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_OK);
	cJSON *j = cJSON_Parse(t.tokenizer_json);
	ck_assert_ptr_nonnull(j);
	ck_assert(cJSON_IsTrue(jget(j, "model.byte_fallback")));
	ck_assert_str_eq(jget(j, "model.unk_token")->valuestring, "<unk>");
	ck_assert_int_eq(cJSON_GetArraySize(jget(j, "model.vocab")), N_SPM);
	cJSON *mg = jget(j, "model.merges");
	/* every split of a token into two tokens, by the joined token's score */
	ck_assert_int_eq(cJSON_GetArraySize(mg), 4);
	ck_assert_int_eq(merge_index(mg, "\xe2\x96\x81", "a"), 0);
	ck_assert_int_eq(merge_index(mg, "a", "b"), 1);
	/* a token's splits by the halves' scores: score(▁) -1 > score(▁a) -4 */
	ck_assert_int_eq(merge_index(mg, "\xe2\x96\x81", "ab"), 2);
	ck_assert_int_eq(merge_index(mg, "\xe2\x96\x81" "a", "b"), 3);
	/* control, unknown and control-looking (<|im_end|>) tokens are special added tokens */
	cJSON *at = jget(j, "added_tokens");
	ck_assert_int_eq(cJSON_GetArraySize(at), 4);
	ck_assert_int_eq(jget(cJSON_GetArrayItem(at, 3), "id")->valueint, 10);
	ck_assert(cJSON_IsFalse(jget(cJSON_GetArrayItem(at, 0), "normalized")));
	/* add_bos by default, add_eos from its key */
	cJSON *single = jget(j, "post_processor.single");
	ck_assert_int_eq(cJSON_GetArraySize(single), 3);
	ck_assert_str_eq(jget(cJSON_GetArrayItem(single, 2), "SpecialToken.id")->valuestring, "</s>");
	ck_assert_str_eq(jget(j, "normalizer.normalizers")->child->child->next->valuestring, "\xe2\x96\x81");
	cJSON_Delete(j);
	j = cJSON_Parse(t.tokenizer_config_json);
	ck_assert_ptr_nonnull(j);
	ck_assert_str_eq(jget(j, "chat_template")->valuestring, "{{ x }}");
	ck_assert_str_eq(jget(j, "bos_token")->valuestring, "<s>");
	ck_assert(cJSON_IsTrue(jget(j, "add_eos_token")));
	ck_assert(cJSON_IsTrue(jget(j, "added_tokens_decoder.10.special")));
	cJSON_Delete(j);
	j = cJSON_Parse(t.special_tokens_map_json);
	ck_assert_str_eq(jget(j, "unk_token.content")->valuestring, "<unk>");
	cJSON_Delete(j);
	/* tokenizer.model: the pieces back, BPE */
	ck_assert_ptr_nonnull(t.tokenizer_model);
	struct wf_spm s;
	ck_assert_int_eq(wf_spm_parse((const uint8_t *)t.tokenizer_model, t.tokenizer_model_len, 100, &s, why), WF_OK);
	ck_assert_int_eq(s.n, N_SPM);
	ck_assert_int_eq(s.model_type, WF_SPM_BPE);
	for (size_t i = 0; i < N_SPM; i++) {
		ck_assert_int_eq(s.p[i].n, strlen(spm_tok[i]));
		ck_assert(!memcmp(s.p[i].s, spm_tok[i], s.p[i].n));
		ck_assert(s.p[i].score == spm_score[i]);
		ck_assert_int_eq(s.p[i].type, spm_type[i]);
	}
	wf_spm_free(&s);
	wf_hf_tok_free(&t);
	ck_assert_ptr_null(t.tokenizer_json);
	free(g);
}
END_TEST

static const struct {
	unsigned flags;
	const char *why;
} hostile[] = {
	{F_NO_MODEL, "tokenizer.ggml.model: absent"},
	{F_MODEL_FOO, "tokenizer.ggml.model: 'foo'"},
	{F_NO_SCORES, "tokenizer.ggml.scores: absent"},
	{F_SHORT_SCORES, "10 scores for 11 tokens"},
	{F_BAD_UTF8, "tokenizer.ggml.tokens[6]: not valid UTF-8"},
	/* valid UTF-8, refused as what it is */
	{F_NUL, "tokenizer.ggml.tokens[6]: holds U+0000"},
	{F_TOKENS_U32, "tokenizer.ggml.tokens: an array of GGUF type 4"},
	{F_NAN, "tokenizer.ggml.scores[5]: not a finite number"},
	{F_TYPE_99, "tokenizer.ggml.token_type[4]: unknown token type 99"},
	{F_BOS_STR, "tokenizer.ggml.bos_token_id: GGUF type 8"},
	{F_ADDBOS_U8, "tokenizer.ggml.add_bos_token: GGUF type 0"},
	{F_EMPTY, "tokenizer.ggml.tokens: empty"},
};

START_TEST(test_hostile)
{
	size_t len;
	char *g = gguf_spm(hostile[_i].flags, &len), why[WF_ERRLEN];
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_ERR_UNSUP);
	ck_assert_msg(strstr(why, hostile[_i].why), "%s: want %s", why, hostile[_i].why);
	/* through the real parser too, when it takes the file */
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	if (wf_gguf_parse(&m, (const uint8_t *)g, len, err) == WF_OK) {
		ck_assert_int_eq(wf_hf_tok_make(m, &t, why), WF_ERR_UNSUP);
		wf_model_free(m);
	}
	free(g);
}
END_TEST

/* A header whose one key/value claims n elements of type et in a few bytes. */
static size_t claim(uint8_t *buf, const char *key, uint32_t et, uint64_t n, size_t extra)
{
	uint8_t *p = buf;
	memcpy(p, "GGUF", 4), p += 4;
	uint32_t v = 3;
	memcpy(p, &v, 4), p += 4;
	uint64_t z = 0, one = 2;
	memcpy(p, &z, 8), p += 8;
	memcpy(p, &one, 8), p += 8;
	uint64_t kl = 20, sl = 5;
	memcpy(p, &kl, 8), p += 8;
	memcpy(p, "tokenizer.ggml.model", 20), p += 20;
	v = 8;
	memcpy(p, &v, 4), p += 4;
	memcpy(p, &sl, 8), p += 8;
	memcpy(p, "llama", 5), p += 5;
	kl = strlen(key);
	memcpy(p, &kl, 8), p += 8;
	memcpy(p, key, kl), p += kl;
	v = 9;
	memcpy(p, &v, 4), p += 4;
	memcpy(p, &et, 4), p += 4;
	memcpy(p, &n, 8), p += 8;
	memset(p, 0, extra), p += extra;
	return (size_t)(p - buf);
}

START_TEST(test_huge_claims)
{
	uint8_t buf[256];
	char why[WF_ERRLEN];
	struct wf_hf_tok t;
	const uint64_t counts[] = {10000000, UINT64_MAX, (uint64_t)1 << 40};
	/* the parser refuses them (the count cannot fit in the bytes left)
	 * before the tokenizer reads a key */
	for (size_t i = 0; i < 3; i++) {
		size_t len = claim(buf, "tokenizer.ggml.tokens", 8, counts[i], 32);
		ck_assert_int_eq(make_raw(buf, len, &t, why), WF_ERR_FORMAT);
		ck_assert_msg(strstr(why, "tokenizer.ggml.tokens"), "%s", why);
		len = claim(buf, "tokenizer.ggml.tokens", 6, counts[i], 32);
		ck_assert_int_eq(make_raw(buf, len, &t, why), WF_ERR_FORMAT);
	}
	/* truncated in every place: refused, never read past the buffer */
	size_t full = claim(buf, "tokenizer.ggml.tokens", 8, 2, 0);
	for (size_t n = 0; n < full; n++) {
		uint8_t *cut = malloc(n ? n : 1);
		memcpy(cut, buf, n);
		ck_assert_int_ne(make_raw(cut, n, &t, why), WF_OK);
		free(cut);
	}
}
END_TEST

/* byte-level: pre llama-bpe, merges kept only when HF's BPE can load them */
START_TEST(test_bytelevel)
{
	static const char *const tok[] = {"a", "b", "ab", "\xc4\xa0", "\xc4\xa0" "a", "<|begin_of_text|>", "c"};
	static const char *const merges[] = {"a b", "\xc4\xa0 a", "a c", "b a", "a b", "nospace"};
	struct wf_gguf_w w;
	char err[WF_ERRLEN], *g = NULL, why[WF_ERRLEN];
	size_t len;
	wf_gguf_w_init(&w);
	wf_gguf_w_str(&w, "tokenizer.ggml.model", "gpt2", 4);
	wf_gguf_w_str(&w, "tokenizer.ggml.pre", "llama-bpe", 9);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, 7);
	for (int i = 0; i < 7; i++)
		wf_gguf_w_arr_str(&w, tok[i], strlen(tok[i]));
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.merges", WF_GT_STRING, 6);
	for (int i = 0; i < 6; i++)
		wf_gguf_w_arr_str(&w, merges[i], strlen(merges[i]));
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_u32(&w, "tokenizer.ggml.bos_token_id", 5);
	ck_assert_int_eq(wf_gguf_w_finish(&w, &g, &len, err), WF_OK);
	wf_gguf_w_free(&w);
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_OK);
	cJSON *j = cJSON_Parse(t.tokenizer_json);
	ck_assert_ptr_nonnull(j);
	cJSON *mg = jget(j, "model.merges");
	ck_assert_int_eq(cJSON_GetArraySize(mg), 2); /* a b, Ġ a; not "a c" (no "ac"), "b a", the duplicate */
	ck_assert_int_eq(merge_index(mg, "a", "b"), 0);
	ck_assert(cJSON_IsTrue(jget(j, "model.ignore_merges")));
	ck_assert(cJSON_IsFalse(jget(j, "model.byte_fallback")));
	ck_assert_ptr_null(t.tokenizer_model);
	cJSON *pre = jget(j, "pre_tokenizer.pretokenizers");
	ck_assert_int_eq(cJSON_GetArraySize(pre), 2);
	ck_assert_ptr_nonnull(strstr(jget(pre->child, "pattern.Regex")->valuestring, "\\p{N}{1,3}"));
	/* llama-bpe: add_bos, and <|begin_of_text|> is BOS */
	ck_assert_str_eq(jget(jget(j, "post_processor.single")->child, "SpecialToken.id")->valuestring, "<|begin_of_text|>");
	cJSON_Delete(j);
	wf_hf_tok_free(&t);
	free(g);
}
END_TEST

START_TEST(test_bytelevel_refused)
{
	static const char *const pre[] = {"no-such-pre", NULL};
	for (int k = 0; k < 2; k++) {
		struct wf_gguf_w w;
		char err[WF_ERRLEN], *g = NULL, why[WF_ERRLEN];
		size_t len;
		wf_gguf_w_init(&w);
		wf_gguf_w_str(&w, "tokenizer.ggml.model", "gpt2", 4);
		if (pre[k])
			wf_gguf_w_str(&w, "tokenizer.ggml.pre", pre[k], strlen(pre[k]));
		wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, 1);
		wf_gguf_w_arr_str(&w, "a", 1);
		wf_gguf_w_arr_end(&w);
		ck_assert_int_eq(wf_gguf_w_finish(&w, &g, &len, err), WF_OK);
		wf_gguf_w_free(&w);
		struct wf_hf_tok t;
		ck_assert_int_eq(make_raw(g, len, &t, why), WF_ERR_UNSUP);
		ck_assert_ptr_nonnull(strstr(why, pre[k] ? "tokenizer.ggml.pre" : "tokenizer.ggml.merges: absent"));
		free(g);
	}
}
END_TEST

/* gemma4: raw UTF-8 BPE with byte fallback, BOS added even when the key says not */
START_TEST(test_gemma4)
{
	static const char *const tok[] = {"<pad>", "</s>", "<bos>", "<unk>", "\xe2\x96\x81", "a", "\xe2\x96\x81" "a",
					  "<|tool_response>"};
	struct wf_gguf_w w;
	char err[WF_ERRLEN], *g = NULL, why[WF_ERRLEN];
	size_t len;
	wf_gguf_w_init(&w);
	wf_gguf_w_str(&w, "tokenizer.ggml.model", "gemma4", 6);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, 8);
	for (int i = 0; i < 8; i++)
		wf_gguf_w_arr_str(&w, tok[i], strlen(tok[i]));
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.token_type", WF_GT_INT32, 8);
	for (int i = 0; i < 8; i++)
		wf_gguf_w_arr_i32(&w, i < 3 || i == 7 ? 3 : i == 3 ? 2 : 1);
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.merges", WF_GT_STRING, 1);
	wf_gguf_w_arr_str(&w, "\xe2\x96\x81 a", 5);
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_u32(&w, "tokenizer.ggml.bos_token_id", 2);
	wf_gguf_w_bool(&w, "tokenizer.ggml.add_bos_token", false);
	ck_assert_int_eq(wf_gguf_w_finish(&w, &g, &len, err), WF_OK);
	wf_gguf_w_free(&w);
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_OK);
	cJSON *j = cJSON_Parse(t.tokenizer_json);
	ck_assert_ptr_nonnull(j);
	ck_assert(cJSON_IsTrue(jget(j, "model.byte_fallback")));
	ck_assert_int_eq(cJSON_GetArraySize(jget(j, "model.merges")), 1);
	ck_assert_str_eq(jget(j, "pre_tokenizer.type")->valuestring, "Split");
	ck_assert_str_eq(jget(j, "normalizer.content")->valuestring, "\xe2\x96\x81");
	ck_assert_str_eq(jget(jget(j, "post_processor.single")->child, "SpecialToken.id")->valuestring, "<bos>");
	/* </s> is not an added token next to <|tool_response> (llama.cpp makes it normal) */
	for (cJSON *a = jget(j, "added_tokens")->child; a; a = a->next)
		ck_assert_str_ne(jget(a, "content")->valuestring, "</s>");
	ck_assert_int_eq(cJSON_GetArraySize(jget(j, "added_tokens")), 4);
	cJSON_Delete(j);
	wf_hf_tok_free(&t);
	free(g);
}
END_TEST

/* ---- merges against every split of every token, tried one by one (the
 * old quadratic derivation, kept here as the oracle) on random vocabularies
 * of short texts over a few letters, some of two or three bytes, with
 * repeated texts and tied scores */
struct ocand {
	float st, sl, sr;
	uint32_t l, r, t, k;
};

static int ocand_cmp(const void *pa, const void *pb)
{
	const struct ocand *a = pa, *b = pb;
	if (a->st != b->st)
		return a->st > b->st ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->sl != b->sl)
		return a->sl > b->sl ? -1 : 1;
	if (a->sr != b->sr)
		return a->sr > b->sr ? -1 : 1;
	return a->k < b->k ? -1 : a->k > b->k;
}

static int64_t olookup(char **tok, size_t n, const char *p, size_t len)
{
	for (size_t i = n; i-- > 0;)
		if (strlen(tok[i]) == len && !memcmp(tok[i], p, len))
			return (int64_t)i;
	return -1;
}

static size_t oracle_merges(char **tok, const float *score, size_t n, struct ocand *c)
{
	size_t nc = 0;
	for (size_t i = 0; i < n; i++) {
		size_t len = strlen(tok[i]);
		if (olookup(tok, n, tok[i], len) != (int64_t)i)
			continue;
		for (size_t k = 1; k < len; k++) {
			int64_t l = olookup(tok, n, tok[i], k), r = olookup(tok, n, tok[i] + k, len - k);
			if ((tok[i][k] & 0xC0) != 0x80 && l >= 0 && r >= 0)
				c[nc++] = (struct ocand){score[i], score[l], score[r], (uint32_t)l, (uint32_t)r, (uint32_t)i,
							 (uint32_t)k};
		}
	}
	qsort(c, nc, sizeof *c, ocand_cmp);
	return nc;
}

#define N_RAND 300

START_TEST(test_spm_splits)
{
	static const char *const letter[] = {"a", "b", "\xe2\x96\x81", "\xc3\xa9", "ab"};
	uint64_t x = 0x9E3779B97F4A7C15ull * (uint64_t)(_i + 1);
	char *tok[N_RAND];
	float score[N_RAND];
	struct wf_gguf_w w;
	char err[WF_ERRLEN], why[WF_ERRLEN], *g = NULL;
	size_t len;
	for (size_t i = 0; i < N_RAND; i++) {
		tok[i] = calloc(1, 64);
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		size_t nl = i < 3 ? 0 : 1 + (x >> 33) % (i < 40 ? 2 : 9);
		if (i < 3)
			strcpy(tok[i], (const char *[]){"<unk>", "<s>", "</s>"}[i]);
		for (size_t j = 0; j < nl; j++) {
			x = x * 6364136223846793005ull + 1442695040888963407ull;
			strcat(tok[i], letter[(x >> 33) % (sizeof letter / sizeof letter[0])]);
		}
		score[i] = -(float)((x >> 40) % 16); /* ties */
	}
	wf_gguf_w_init(&w);
	wf_gguf_w_str(&w, "general.architecture", "llama", 5);
	wf_gguf_w_str(&w, "tokenizer.ggml.model", "llama", 5);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, N_RAND);
	for (size_t i = 0; i < N_RAND; i++)
		wf_gguf_w_arr_str(&w, tok[i], strlen(tok[i]));
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.scores", WF_GT_FLOAT32, N_RAND);
	for (size_t i = 0; i < N_RAND; i++)
		wf_gguf_w_arr_f32(&w, score[i]);
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.token_type", WF_GT_INT32, N_RAND);
	for (size_t i = 0; i < N_RAND; i++)
		wf_gguf_w_arr_i32(&w, i == 0 ? 2 : i < 3 ? 3 : 1);
	wf_gguf_w_arr_end(&w);
	ck_assert_int_eq(wf_gguf_w_finish(&w, &g, &len, err), WF_OK);
	wf_gguf_w_free(&w);
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_OK);
	cJSON *j = cJSON_Parse(t.tokenizer_json), *mg = jget(j, "model.merges");
	struct ocand *c = malloc(N_RAND * 64 * sizeof *c);
	size_t nc = oracle_merges(tok, score, N_RAND, c), i = 0;
	ck_assert_uint_gt(nc, 50);
	ck_assert_int_eq(cJSON_GetArraySize(mg), (int)nc);
	for (cJSON *m = mg->child; m; m = m->next, i++) {
		ck_assert_str_eq(cJSON_GetArrayItem(m, 0)->valuestring, tok[c[i].l]);
		ck_assert_str_eq(cJSON_GetArrayItem(m, 1)->valuestring, tok[c[i].r]);
	}
	for (size_t k = 0; k < N_RAND; k++)
		free(tok[k]);
	free(c);
	cJSON_Delete(j);
	wf_hf_tok_free(&t);
	free(g);
}
END_TEST

/* tokens a, aa, ..., a^600 (a 0.2 MB GGUF): every split of every one is a
 * merge, 36 million bytes of them (m^3 / 6) from 180,000 bytes of tokens:
 * refused by the merges' bound (8 times the tokens' cost + 16 MiB), one
 * line; a^1..a^200 (1.3 MB of merges) still made. */
static char *gguf_chain(size_t m, size_t *len)
{
	struct wf_gguf_w w;
	char err[WF_ERRLEN], *g = NULL, *a = malloc(m);
	memset(a, 'a', m);
	wf_gguf_w_init(&w);
	wf_gguf_w_str(&w, "general.architecture", "llama", 5);
	wf_gguf_w_str(&w, "tokenizer.ggml.model", "llama", 5);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.tokens", WF_GT_STRING, m + 1);
	wf_gguf_w_arr_str(&w, "<unk>", 5);
	for (size_t i = 1; i <= m; i++)
		wf_gguf_w_arr_str(&w, a, i);
	wf_gguf_w_arr_end(&w);
	wf_gguf_w_arr_begin(&w, "tokenizer.ggml.scores", WF_GT_FLOAT32, m + 1);
	for (size_t i = 0; i <= m; i++)
		wf_gguf_w_arr_f32(&w, -(float)i);
	wf_gguf_w_arr_end(&w);
	ck_assert_int_eq(wf_gguf_w_finish(&w, &g, len, err), WF_OK);
	wf_gguf_w_free(&w);
	free(a);
	return g;
}

START_TEST(test_spm_merges_bound)
{
	size_t len;
	char why[WF_ERRLEN], *g = gguf_chain(600, &len);
	struct wf_hf_tok t;
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_ERR_UNSUP);
	ck_assert_msg(strstr(why, "tokenizer.ggml.tokens: the merges made from the scores would take more than"), "%s",
		      why);
	free(g);
	g = gguf_chain(200, &len);
	ck_assert_int_eq(make_raw(g, len, &t, why), WF_OK);
	cJSON *j = cJSON_Parse(t.tokenizer_json);
	ck_assert_int_eq(cJSON_GetArraySize(jget(j, "model.merges")), 200 * 199 / 2);
	cJSON_Delete(j);
	wf_hf_tok_free(&t);
	free(g);
}
END_TEST

static Suite *hftok_suite(void)
{
	Suite *s = suite_create("hftok");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_spm);
	tcase_add_loop_test(tc, test_hostile, 0, (int)(sizeof hostile / sizeof hostile[0]));
	tcase_add_test(tc, test_huge_claims);
	tcase_add_test(tc, test_bytelevel);
	tcase_add_test(tc, test_bytelevel_refused);
	tcase_add_test(tc, test_gemma4);
	tcase_add_loop_test(tc, test_spm_splits, 0, 20);
	tcase_add_test(tc, test_spm_merges_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(hftok_suite());
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
