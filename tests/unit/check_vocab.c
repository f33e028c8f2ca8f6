/* check_vocab.c - unit tests for the tokenizer key/values
 * (src/model/wf_vocab*.c, wf_spm.c): each converter path on small
 * hand-made files, checked against the exact key/values (order, GGUF
 * types, values) read back from the header wf_gguf_w makes, and every
 * hostile input refused with one printable line. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cjson/cJSON.h>

#include "base/wf_buf.h"
#include "model/wf_json_scan.h"
#include "model/wf_gguf_w.h"
#include "model/wf_spm.h"
#include "model/wf_vocab.h"

/* ---- a tiny GGUF key/value reader: one line per key, "key:TYPE=value" */

struct rd {
	const uint8_t *p, *end;
};

static uint64_t rd_n(struct rd *r, size_t n)
{
	uint64_t v = 0;
	ck_assert_msg((size_t)(r->end - r->p) >= n, "GGUF header truncated");
	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)r->p[i] << (8 * i);
	r->p += n;
	return v;
}

static void rd_str(struct rd *r, struct wf_buf *out)
{
	uint64_t n = rd_n(r, 8);
	ck_assert((uint64_t)(r->end - r->p) >= n);
	wf_buf_put(out, r->p, n);
	r->p += n;
}

static void rd_val(struct rd *r, uint32_t t, struct wf_buf *out)
{
	uint32_t u;
	float f;
	switch (t) {
	case WF_GT_UINT32:
		wf_buf_printf(out, "%u", (unsigned)rd_n(r, 4));
		break;
	case WF_GT_INT32:
		wf_buf_printf(out, "%d", (int)(int32_t)rd_n(r, 4));
		break;
	case WF_GT_FLOAT32:
		u = (uint32_t)rd_n(r, 4);
		memcpy(&f, &u, 4);
		wf_buf_printf(out, "%g", (double)f);
		break;
	case WF_GT_BOOL:
		wf_buf_puts(out, rd_n(r, 1) ? "true" : "false");
		break;
	case WF_GT_STRING:
		rd_str(r, out);
		break;
	default:
		ck_abort_msg("unexpected GGUF type %u", (unsigned)t);
	}
}

static const char *tname(uint32_t t)
{
	switch (t) {
	case WF_GT_UINT32: return "u32";
	case WF_GT_INT32: return "i32";
	case WF_GT_FLOAT32: return "f32";
	case WF_GT_BOOL: return "bool";
	case WF_GT_STRING: return "str";
	default: return "?";
	}
}

/* The key/values of a finished header as text. */
static char *dump_kv(const uint8_t *h, size_t len)
{
	struct rd r = {h, h + len};
	struct wf_buf out = {0};
	ck_assert(rd_n(&r, 4) == 0x46554747u);
	ck_assert(rd_n(&r, 4) == 3);
	ck_assert(rd_n(&r, 8) == 0);
	uint64_t n = rd_n(&r, 8);
	for (uint64_t i = 0; i < n; i++) {
		rd_str(&r, &out);
		uint32_t t = (uint32_t)rd_n(&r, 4);
		if (t == WF_GT_ARRAY) {
			uint32_t et = (uint32_t)rd_n(&r, 4);
			uint64_t m = rd_n(&r, 8);
			wf_buf_printf(&out, ":[%s]=", tname(et));
			for (uint64_t k = 0; k < m; k++) {
				if (k)
					wf_buf_putc(&out, ',');
				rd_val(&r, et, &out);
			}
		} else {
			wf_buf_printf(&out, ":%s=", tname(t));
			rd_val(&r, t, &out);
		}
		wf_buf_putc(&out, '\n');
	}
	ck_assert(wf_buf_finish(&out));
	return out.data;
}

/* JSON written with ` for " (the regexes hold ' already) */
static char *J(const char *s)
{
	char *o = strdup(s);
	ck_assert_ptr_nonnull(o);
	for (char *p = o; *p; p++)
		if (*p == '`')
			*p = '"';
	return o;
}

#define SET(f, field, text) ((f)->field = (text), (f)->field##_len = strlen((f)->field))

static enum wf_err run(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vs, char **dump, char *err)
{
	struct wf_gguf_w w;
	char *hdr = NULL;
	size_t len = 0;
	wf_gguf_w_init(&w);
	err[0] = 0;
	enum wf_err rc = wf_vocab_write(f, r, vs, &w, err);
	*dump = NULL;
	if (rc == WF_OK) {
		ck_assert_int_eq(wf_gguf_w_finish(&w, &hdr, &len, err), WF_OK);
		*dump = dump_kv((const uint8_t *)hdr, len);
		free(hdr);
	} else {
		/* one line, printable, naming something */
		ck_assert_msg(err[0], "no message");
		for (const char *p = err; *p; p++)
			ck_assert_msg((unsigned char)*p >= 0x20 && *p != 0x7f, "control byte in %s", err);
	}
	wf_gguf_w_free(&w);
	return rc;
}

static void expect(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vs, const char *want)
{
	char err[WF_ERRLEN], *got;
	enum wf_err rc = run(f, r, vs, &got, err);
	ck_assert_msg(rc == WF_OK, "refused: %s", err);
	ck_assert_msg(strcmp(got, want) == 0, "got:\n%s\nwant:\n%s", got, want);
	free(got);
}

static void expect_fail(const struct wf_vocab_files *f, enum wf_vocab_route r, int64_t vs, enum wf_err code,
			const char *needle)
{
	char err[WF_ERRLEN], *got;
	enum wf_err rc = run(f, r, vs, &got, err);
	ck_assert_msg(rc == code, "rc %d (want %d): %s\n%s", (int)rc, (int)code, err, got ? got : "");
	ck_assert_msg(strstr(err, needle), "message '%s' lacks '%s'", err, needle);
}

/* ---- tokenizer.json fixtures */

#define RE_L3 "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"
#define RE_QW "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?\\\\p{L}+|\\\\p{N}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|\\\\s+(?!\\\\S)|\\\\s+"

#define PT_SPLIT(re) "{`type`:`Sequence`,`pretokenizers`:[{`type`:`Split`,`pattern`:{`Regex`:`" re "`},`behavior`:`Isolated`,`invert`:false},{`type`:`ByteLevel`,`add_prefix_space`:false,`trim_offsets`:true,`use_regex`:false}]}"
#define PT_GPT2 "{`type`:`ByteLevel`,`add_prefix_space`:false,`trim_offsets`:true,`use_regex`:true}"

static char tjbuf[8192];

/* A byte-level BPE tokenizer.json: vocab a b ab Ġ c, two added tokens. */
static const char *bpe_tj(const char *pre, const char *normalizer, const char *model_extra, const char *merges,
			  const char *post)
{
	snprintf(tjbuf, sizeof tjbuf,
		 "{`version`:`1.0`,`added_tokens`:["
		 "{`id`:5,`content`:`<|begin_of_text|>`,`single_word`:false,`lstrip`:false,`rstrip`:false,`normalized`:false,`special`:true},"
		 "{`id`:6,`content`:`<|eot_id|>`,`single_word`:false,`lstrip`:false,`rstrip`:false,`normalized`:false,`special`:true}],"
		 "`normalizer`:%s,`pre_tokenizer`:%s,`post_processor`:%s,"
		 "`decoder`:{`type`:`ByteLevel`,`add_prefix_space`:true,`trim_offsets`:true,`use_regex`:true},"
		 "`model`:{`type`:`BPE`,`dropout`:null,`unk_token`:null,`continuing_subword_prefix`:null,"
		 "`end_of_word_suffix`:null,`fuse_unk`:false,`byte_fallback`:false%s,"
		 "`vocab`:{`a`:0,`b`:1,`ab`:2,`\xc4\xa0`:3,`c`:4},`merges`:%s}}",
		 normalizer, pre, post, model_extra, merges);
	char *j = J(tjbuf);
	snprintf(tjbuf, sizeof tjbuf, "%s", j);
	free(j);
	return tjbuf;
}

#define POST_L3 "{`type`:`Sequence`,`processors`:[{`type`:`ByteLevel`,`add_prefix_space`:true,`trim_offsets`:false,`use_regex`:true},{`type`:`TemplateProcessing`,`single`:[{`SpecialToken`:{`id`:`<|begin_of_text|>`,`type_id`:0}},{`Sequence`:{`id`:`A`,`type_id`:0}}],`pair`:[{`SpecialToken`:{`id`:`<|begin_of_text|>`,`type_id`:0}},{`Sequence`:{`id`:`A`,`type_id`:0}},{`SpecialToken`:{`id`:`<|begin_of_text|>`,`type_id`:1}},{`Sequence`:{`id`:`B`,`type_id`:1}}],`special_tokens`:{}}]}"

static char tcbuf[2048], cfgbuf[512];

static const char *jtext(char *buf, size_t n, const char *s)
{
	char *j = J(s);
	snprintf(buf, n, "%s", j);
	free(j);
	return buf;
}

START_TEST(test_llama_bpe)
{
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_L3), "null", ",`ignore_merges`:true", "[`a b`]", POST_L3));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`bos_token`:`<|begin_of_text|>`,`eos_token`:`<|eot_id|>`,`chat_template`:`{{ x }}`,`clean_up_tokenization_spaces`:true}"));
	SET(&f, config_json, jtext(cfgbuf, sizeof cfgbuf, "{`bos_token_id`:5,`eos_token_id`:[6,7],`vocab_size`:9}"));
	expect(&f, WF_VOCAB_LLAMA, 9,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=llama-bpe\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc4\xa0,c,<|begin_of_text|>,<|eot_id|>,[PAD7],[PAD8]\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1,3,3,5,5\n"
	       "tokenizer.ggml.merges:[str]=a b\n"
	       "tokenizer.ggml.bos_token_id:u32=5\n"
	       "tokenizer.ggml.eos_token_id:u32=6\n"
	       "tokenizer.ggml.add_bos_token:bool=true\n"
	       "tokenizer.ggml.add_sep_token:bool=false\n"
	       "tokenizer.chat_template:str={{ x }}\n");
}
END_TEST

/* Qwen2: NFC allowed, merges as pairs (a space becomes U+0120), no vocab_size */
START_TEST(test_qwen2_pairs)
{
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_QW), "{`type`:`NFC`}", ",`ignore_merges`:false",
				       "[[`a`,`b`],[`\xc4\xa0`,`c`]]", PT_GPT2));
	/* Ġc is not a token: refused */
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "model.merges[1]");
	/* nor is an added token, for HF's BPE model */
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_QW), "{`type`:`NFC`}", "", "[[`a`,`b`],[`<|eot_id|>`,`c`]]", PT_GPT2));
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "model.merges[1]: '<|eot_id|> c' is not two tokens whose join "
		    "is one: '<|eot_id|>' is not in model.vocab");
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_QW), "{`type`:`NFC`}", "", "[[`a`,`b`]]", PT_GPT2));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`eos_token`:{`content`:`<|eot_id|>`},`add_bos_token`:false,`add_eos_token`:false}"));
	expect(&f, WF_VOCAB_QWEN, -1,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=qwen2\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc4\xa0,c,<|begin_of_text|>,<|eot_id|>\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1,3,3\n"
	       "tokenizer.ggml.merges:[str]=a b\n"
	       "tokenizer.ggml.eos_token_id:u32=6\n"
	       "tokenizer.ggml.add_bos_token:bool=false\n"
	       "tokenizer.ggml.add_eos_token:bool=false\n");
}
END_TEST

/* GPT-2: ByteLevel alone; no merges in tokenizer.json, merges.txt instead */
START_TEST(test_gpt2_merges_txt)
{
	struct wf_vocab_files f = {0};
	static const char mt[] = "#version: 0.2\r\na b\r\n\nbad line here\n  ab   c  \nx";
	SET(&f, tokenizer_json, bpe_tj(PT_GPT2, "null", "", "[]", "null"));
	f.merges_txt = mt;
	f.merges_txt_len = strlen(mt);
	/* "ab c" names abc, not a token */
	expect_fail(&f, WF_VOCAB_GEMMA3, -1, WF_ERR_FORMAT, "merges.txt: merges[1]");
	static const char mt2[] = "#version: 0.2\r\na b\r\n\nbad line here\n";
	f.merges_txt = mt2;
	f.merges_txt_len = strlen(mt2);
	expect(&f, WF_VOCAB_GEMMA3, -1,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=gpt-2\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc4\xa0,c,<|begin_of_text|>,<|eot_id|>\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1,3,3\n"
	       "tokenizer.ggml.merges:[str]=a b\n");
}
END_TEST

START_TEST(test_pre_unknown)
{
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT("\\\\p{N}+"), "null", "", "[`a b`]", "null"));
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "tokenizer.json: pre_tokenizer");
	/* qwen2's regex with ignore_merges: no known name */
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_QW), "null", ",`ignore_merges`:true", "[`a b`]", "null"));
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "pre_tokenizer");
	/* a Lowercase normalizer with the Llama 3 shape */
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_L3), "{`type`:`Lowercase`}", ",`ignore_merges`:true", "[`a b`]", "null"));
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "normalizer");
	/* Llama 3's regex without ignore_merges is smaug-bpe */
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_L3), "null", "", "[`a b`]", "null"));
	char err[WF_ERRLEN], *got;
	ck_assert_int_eq(run(&f, WF_VOCAB_QWEN, -1, &got, err), WF_OK);
	ck_assert(strstr(got, "tokenizer.ggml.pre:str=smaug-bpe\n"));
	free(got);
}
END_TEST

/* A byte-level BPE tokenizer.json (pre-tokenizer pre, model options extra) with the added
 * tokens add[0..n), ids from 5. */
static const char *glm_tj(const char *const *add, size_t n, const char *pre, const char *extra)
{
	char a[1024] = "";
	for (size_t i = 0; i < n; i++)
		snprintf(a + strlen(a), sizeof a - strlen(a), "%s{`id`:%zu,`content`:`%s`,`single_word`:false,`lstrip`:false,"
			 "`rstrip`:false,`normalized`:false,`special`:true}", i ? "," : "", 5 + i, add[i]);
	snprintf(tjbuf, sizeof tjbuf,
		 "{`version`:`1.0`,`added_tokens`:[%s],`normalizer`:null,`pre_tokenizer`:%s,`post_processor`:null,"
		 "`decoder`:{`type`:`ByteLevel`,`add_prefix_space`:true,`trim_offsets`:true,`use_regex`:true},"
		 "`model`:{`type`:`BPE`,`dropout`:null,`unk_token`:null,`continuing_subword_prefix`:null,"
		 "`end_of_word_suffix`:null,`fuse_unk`:false,`byte_fallback`:false%s,"
		 "`vocab`:{`a`:0,`b`:1,`ab`:2,`\xc4\xa0`:3,`c`:4},`merges`:[`a b`]}}", a, pre, extra);
	char *j = J(tjbuf);
	snprintf(tjbuf, sizeof tjbuf, "%s", j);
	free(j);
	return tjbuf;
}

/* GLM (_set_vocab_glm): GPT-2 BPE, then bos, eot, unk, eom set to the added tokens [gMASK],
 * <|user|>, <|endoftext|>, <|observation|> after SpecialVocab loaded its own (eos and pad
 * from tokenizer_config.json, kept; unk among them would be kept too) */
START_TEST(test_glm)
{
	static const char *const add[] = {"<|endoftext|>", "[gMASK]", "<|user|>", "<|observation|>"};
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, glm_tj(add, 4, PT_GPT2, ""));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf, "{`eos_token`:`<|endoftext|>`,`pad_token`:`<|endoftext|>`}"));
	SET(&f, config_json, jtext(cfgbuf, sizeof cfgbuf, "{`eos_token_id`:[5,7,8],`pad_token_id`:5}"));
	expect(&f, WF_VOCAB_GLM, -1,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=gpt-2\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc4\xa0,c,<|endoftext|>,[gMASK],<|user|>,<|observation|>\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1,3,3,3,3\n"
	       "tokenizer.ggml.merges:[str]=a b\n"
	       "tokenizer.ggml.eos_token_id:u32=5\n"
	       "tokenizer.ggml.padding_token_id:u32=5\n"
	       "tokenizer.ggml.bos_token_id:u32=6\n"
	       "tokenizer.ggml.eot_token_id:u32=7\n"
	       "tokenizer.ggml.unknown_token_id:u32=5\n"
	       "tokenizer.ggml.eom_token_id:u32=8\n");
	/* a bos of tokenizer_config.json's own is kept */
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf, "{`bos_token`:`<|user|>`}"));
	char err[WF_ERRLEN], *got;
	ck_assert_int_eq(run(&f, WF_VOCAB_GLM, -1, &got, err), WF_OK);
	ck_assert_msg(strstr(got, "tokenizer.ggml.bos_token_id:u32=7\n"), "%s", got);
	free(got);
	/* Llama 3's split with GLM's tokens (either ignore_merges): GLM-4.5's own vocabulary, which
	 * the converter's hash names glm4 [unverified: no GLM tokenizer here] */
	SET(&f, tokenizer_config_json, "{}");
	for (int im = 0; im < 2; im++) {
		SET(&f, tokenizer_json, glm_tj(add, 4, PT_SPLIT(RE_L3), im ? ",`ignore_merges`:true" : ""));
		ck_assert_int_eq(run(&f, WF_VOCAB_GLM, -1, &got, err), WF_OK);
		ck_assert_msg(strstr(got, "tokenizer.ggml.pre:str=glm4\n"), "%s", got);
		free(got);
	}
	/* the converter's KeyError: one of the four missing */
	SET(&f, tokenizer_json, glm_tj(add, 3, PT_GPT2, ""));
	expect_fail(&f, WF_VOCAB_GLM, -1, WF_ERR_UNSUP, "tokenizer.json: added_tokens: no '<|observation|>'");
	/* tokenizer_config.json giving one another id */
	SET(&f, tokenizer_json, glm_tj(add, 4, PT_GPT2, ""));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`added_tokens_decoder`:{`9`:{`content`:`[gMASK]`,`special`:true}}}"));
	expect_fail(&f, WF_VOCAB_GLM, -1, WF_ERR_UNSUP, "added_tokens_decoder: '[gMASK]' under id 9");
}
END_TEST

/* ---- a small protobuf encoder for tokenizer.model */

struct pb {
	uint8_t b[4096];
	size_t n;
};

static void pb_byte(struct pb *p, uint8_t c)
{
	ck_assert(p->n < sizeof p->b);
	p->b[p->n++] = c;
}

static void pb_varint(struct pb *p, uint64_t v)
{
	do {
		pb_byte(p, (uint8_t)((v & 0x7f) | (v > 0x7f ? 0x80 : 0)));
		v >>= 7;
	} while (v);
}

static void pb_bytes(struct pb *p, unsigned field, const void *s, size_t n)
{
	pb_varint(p, (uint64_t)field << 3 | 2);
	pb_varint(p, n);
	for (size_t i = 0; i < n; i++)
		pb_byte(p, ((const uint8_t *)s)[i]);
}

/* ModelProto.pieces += {piece, score, type} (type 0: left out) */
static void pb_piece(struct pb *p, const char *s, float score, int type)
{
	struct pb m = {.n = 0};
	uint32_t u;
	pb_bytes(&m, 1, s, strlen(s));
	memcpy(&u, &score, 4);
	pb_varint(&m, 2 << 3 | 5);
	for (int i = 0; i < 4; i++)
		pb_byte(&m, (uint8_t)(u >> (8 * i)));
	if (type) {
		pb_varint(&m, 3 << 3 | 0);
		pb_varint(&m, (uint64_t)type);
	}
	pb_bytes(p, 1, m.b, m.n);
}

static void pb_trainer(struct pb *p, int model_type)
{
	struct pb m = {.n = 0};
	pb_bytes(&m, 1, "x.txt", 5);  /* input: skipped */
	pb_varint(&m, 3 << 3 | 0);
	pb_varint(&m, (uint64_t)model_type);
	pb_bytes(p, 2, m.b, m.n);
}

/* <unk> <s> </s> ▁a <0x41> ud(USER_DEFINED), BPE, plus a normalizer_spec */
static void llama_spm(struct pb *p)
{
	p->n = 0;
	pb_piece(p, "<unk>", 0.0f, 2);
	pb_piece(p, "<s>", 0.0f, 3);
	pb_piece(p, "</s>", 0.0f, 3);
	pb_trainer(p, 2);
	pb_piece(p, "\xe2\x96\x81" "a", -1.5f, 0);
	pb_piece(p, "<0x41>", 0.0f, 6);
	pb_piece(p, "ud", -2.0f, 4);
	pb_bytes(p, 3, "\x0a\x04nmt\x00", 6);
}

START_TEST(test_spm_llama)
{
	struct wf_vocab_files f = {0};
	struct pb p;
	static const char jinja[] = "{% a %}\r\nb\rc";
	llama_spm(&p);
	f.tokenizer_model = p.b;
	f.tokenizer_model_len = p.n;
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`add_prefix_space`:false,`add_bos_token`:true,`add_eos_token`:false,`bos_token`:`<s>`,"
		"`added_tokens_decoder`:{`1`:{`content`:`<s>`,`special`:true},`7`:{`content`:`x\xe2\x96\x81y`,`special`:false},"
		"`8`:{`content`:`<unused0>`},`99`:{`content`:`far`}}}"));
	SET(&f, config_json, jtext(cfgbuf, sizeof cfgbuf, "{`bos_token_id`:1,`eos_token_id`:2,`pad_token_id`:50}"));
	SET(&f, added_tokens_json, "{\"more\": 6, \"toofar\": 12}");
	f.chat_template_jinja = jinja;
	f.chat_template_jinja_len = strlen(jinja);
	expect(&f, WF_VOCAB_LLAMA, 10,
	       "tokenizer.ggml.add_space_prefix:bool=false\n"
	       "tokenizer.ggml.model:str=llama\n"
	       "tokenizer.ggml.pre:str=default\n"
	       "tokenizer.ggml.tokens:[str]=<unk>,<s>,</s>,\xe2\x96\x81" "a,<0x41>,ud,more,x y,<unused0>,[PAD9]\n"
	       "tokenizer.ggml.scores:[f32]=0,-1000,0,-1.5,0,-2,-1000,-1000,-1000,-10000\n"
	       "tokenizer.ggml.token_type:[i32]=2,3,3,1,6,1,4,4,3,5\n"
	       "tokenizer.ggml.bos_token_id:u32=1\n"
	       "tokenizer.ggml.eos_token_id:u32=2\n"
	       "tokenizer.ggml.add_bos_token:bool=true\n"
	       "tokenizer.ggml.add_eos_token:bool=false\n"
	       "tokenizer.chat_template:str={% a %}\nb\nc\n");
	/* gemma2 and gemma3: add_space_prefix=false comes last; no vocab_size: the pieces' count */
	f.tokenizer_config_json = NULL;
	f.added_tokens_json = NULL;
	expect(&f, WF_VOCAB_GEMMA2, -1,
	       "tokenizer.ggml.model:str=llama\n"
	       "tokenizer.ggml.pre:str=default\n"
	       "tokenizer.ggml.tokens:[str]=<unk>,<s>,</s>,\xe2\x96\x81" "a,<0x41>,ud\n"
	       "tokenizer.ggml.scores:[f32]=0,0,0,-1.5,0,-2\n"
	       "tokenizer.ggml.token_type:[i32]=2,3,3,1,6,1\n"
	       "tokenizer.ggml.bos_token_id:u32=1\n"
	       "tokenizer.ggml.eos_token_id:u32=2\n"
	       "tokenizer.ggml.add_space_prefix:bool=false\n");
}
END_TEST

/* The lengths Gemma 3's embedding cut reads (wf_vocab_len): the token
 * list's, tokenizer.json's model.vocab and added_tokens, whether from
 * tokenizer.model; a tokenizer the writer refuses is refused alike. */
START_TEST(test_vocab_len)
{
	struct wf_vocab_files f = {0};
	struct wf_vocab_len n;
	char err[WF_ERRLEN];
	SET(&f, tokenizer_json, bpe_tj(PT_GPT2, "null", "", "[`a b`]", "null"));
	ck_assert_int_eq(wf_vocab_len(&f, WF_VOCAB_GEMMA3, -1, &n, err), WF_OK);
	ck_assert(!n.spm);
	ck_assert_uint_eq(n.n_tokens, 7);
	ck_assert_int_eq(n.tj_vocab, 5);
	ck_assert_int_eq(n.tj_added, 2);
	ck_assert_int_eq(wf_vocab_len(&f, WF_VOCAB_GEMMA3, 9, &n, err), WF_OK);
	ck_assert_uint_eq(n.n_tokens, 9); /* padded to config.json's vocab_size */
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT("\\\\p{N}+"), "null", "", "[`a b`]", "null"));
	ck_assert_int_eq(wf_vocab_len(&f, WF_VOCAB_GEMMA3, -1, &n, err), WF_ERR_UNSUP);
	ck_assert_ptr_nonnull(strstr(err, "pre_tokenizer"));
	struct wf_vocab_files g = {0};
	struct pb p;
	llama_spm(&p);
	g.tokenizer_model = p.b;
	g.tokenizer_model_len = p.n;
	ck_assert_int_eq(wf_vocab_len(&g, WF_VOCAB_GEMMA3, -1, &n, err), WF_OK);
	ck_assert(n.spm);
	ck_assert_uint_eq(n.n_tokens, 6); /* the pieces */
	ck_assert_int_eq(n.tj_vocab, -1);
	ck_assert_int_eq(n.tj_added, -1);
	ck_assert_int_eq(wf_vocab_len(&g, WF_VOCAB_GEMMA3, 8, &n, err), WF_OK);
	ck_assert_uint_eq(n.n_tokens, 8);
}
END_TEST

START_TEST(test_spm_bad)
{
	struct wf_vocab_files f = {0};
	struct pb p;
	llama_spm(&p);
	f.tokenizer_model = p.b;
	/* every truncation is refused (or, cut between fields, parses) without a crash */
	for (size_t n = 0; n < p.n; n++) {
		char err[WF_ERRLEN], *got;
		f.tokenizer_model_len = n;
		if (run(&f, WF_VOCAB_QWEN, -1, &got, err) == WF_OK)
			free(got);
		else
			ck_assert_msg(strstr(err, "tokenizer.model"), "%s", err);
	}
	/* a varint of 11 bytes */
	static const uint8_t ov[] = {0x0a, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01};
	f.tokenizer_model = ov;
	f.tokenizer_model_len = sizeof ov;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "tokenizer.model");
	/* a group */
	static const uint8_t gr[] = {0x0b, 0x0c};
	f.tokenizer_model = gr;
	f.tokenizer_model_len = sizeof gr;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "tokenizer.model: malformed field");
	/* WORD model, invalid UTF-8 piece, duplicate piece, no <unk> */
	p.n = 0;
	pb_piece(&p, "<unk>", 0, 2);
	pb_trainer(&p, 3);
	f.tokenizer_model = p.b;
	f.tokenizer_model_len = p.n;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "model_type");
	p.n = 0;
	pb_piece(&p, "<unk>", 0, 2);
	pb_piece(&p, "\xff\x0a", 0, 0);
	f.tokenizer_model_len = p.n;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "pieces[1]: piece is not valid UTF-8");
	p.n = 0;
	pb_piece(&p, "<unk>", 0, 2);
	pb_piece(&p, "a\n", 0, 0);
	pb_piece(&p, "a\n", 0, 0);
	f.tokenizer_model_len = p.n;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "tokens 1 and 2 are both 'a\\x0a'");
	p.n = 0;
	pb_piece(&p, "a", 0, 0);
	f.tokenizer_model_len = p.n;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "UNKNOWN");
	/* gemma2 without tokenizer.model */
	f.tokenizer_model = NULL;
	expect_fail(&f, WF_VOCAB_GEMMA2, -1, WF_ERR_FORMAT, "tokenizer.model: missing");
}
END_TEST

START_TEST(test_llama_hf)
{
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, jtext(tjbuf, sizeof tjbuf,
		"{`added_tokens`:[{`id`:0,`content`:`<unk>`,`special`:true},{`id`:1,`content`:`<s>`,`special`:true},"
		"{`id`:2,`content`:`</s>`,`special`:true},{`id`:8,`content`:`<extra>`,`special`:false}],"
		"`normalizer`:{`type`:`Sequence`,`normalizers`:[{`type`:`Prepend`,`prepend`:`x`},{`type`:`Lowercase`}]},"
		"`post_processor`:{`type`:`TemplateProcessing`,`single`:[{`SpecialToken`:{`id`:`<s>`}},{`Sequence`:{`id`:`A`}}],"
		"`pair`:[{`SpecialToken`:{`id`:`<s>`}},{`Sequence`:{`id`:`A`}},{`SpecialToken`:{`id`:`<s>`}},{`Sequence`:{`id`:`B`}}]},"
		"`decoder`:{`type`:`Sequence`,`decoders`:[]},"
		"`model`:{`type`:`BPE`,`byte_fallback`:true,`vocab`:{`<unk>`:0,`<s>`:1,`</s>`:2,`<0x41>`:3,`\xe2\x96\x81" "a`:4,`b`:5,"
		"`\xe2\x96\x81`:6,`a`:7},`merges`:[`\xe2\x96\x81 a`]}}"));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`bos_token`:{`content`:`<s>`,`lstrip`:false},`eos_token`:`</s>`,`unk_token`:`<unk>`,"
		"`chat_template`:[{`name`:`default`,`template`:`D`},{`name`:`tool use!`,`template`:`T`},{`name`:`rag`,`template`:`R`}]}"));
	expect(&f, WF_VOCAB_LLAMA, 32000,
	       "tokenizer.ggml.model:str=llama\n"
	       "tokenizer.ggml.pre:str=default\n"
	       "tokenizer.ggml.tokens:[str]=<unk>,<s>,</s>,<0x41>,\xe2\x96\x81" "a,b,\xe2\x96\x81,a,<extra>\n"
	       "tokenizer.ggml.scores:[f32]=-1000,-1000,-1000,-1000,-1000,-1000,-1000,-1000,-1000\n"
	       "tokenizer.ggml.token_type:[i32]=3,3,3,6,1,1,1,1,4\n"
	       "tokenizer.ggml.bos_token_id:u32=1\n"
	       "tokenizer.ggml.eos_token_id:u32=2\n"
	       "tokenizer.ggml.unknown_token_id:u32=0\n"
	       "tokenizer.ggml.add_bos_token:bool=true\n"
	       "tokenizer.ggml.add_sep_token:bool=false\n"
	       "tokenizer.chat_template.tool_use_:str=T\n"
	       "tokenizer.chat_template.rag:str=R\n"
	       "tokenizer.chat_templates:[str]=tool_use_,rag\n"
	       "tokenizer.chat_template:str=D\n"
	       "tokenizer.ggml.normalizer.lowercase:bool=true\n");
}
END_TEST

/* A Llama-2 style tokenizer.json (Mistral's) whose merges HF's BPE refuses
 * to load (MergeTokenOutOfVocabulary): a side, or the join, no token.  The
 * converter writes no merges, but loads the file first: no model.gguf. */
static const char *llama_hf_tj(const char *merges)
{
	static char b[1024], m[256];
	snprintf(m, sizeof m, "%s", merges);
	for (char *p = m; *p; p++)
		*p = *p == '`' ? '"' : *p;
	snprintf(b, sizeof b,
		 "{\"added_tokens\":[{\"id\":9,\"content\":\"w\"}],\"decoder\":{\"type\":\"Sequence\",\"decoders\":[]},\"model\":{\"type\":\"BPE\",\"byte_fallback\":true,"
		 "\"vocab\":{\"<unk>\":0,\"<s>\":1,\"</s>\":2,\"a\":3,\"b\":4,\"ab\":5,\"x\xc4\xa0y\":6,\"x y\":7,\"z\":8},"
		 "\"merges\":%s}}", m);
	return b;
}

START_TEST(test_llama_hf_merges)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	SET(&f, tokenizer_json, llama_hf_tj("[`a b`,`a q`]"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT,
		    "tokenizer.json: model.merges[1]: 'a q' is not two tokens whose join is one: 'q' is not in model.vocab");
	SET(&f, tokenizer_json, llama_hf_tj("[`a b`,`b a`]"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT, "model.merges[1]: 'b a' is not two tokens whose join is one: "
		    "the join 'ba' is not in model.vocab");
	SET(&f, tokenizer_json, llama_hf_tj("[[`q`,`b`]]"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT, "model.merges[0]: 'q b' is not two tokens whose join is one: "
		    "'q' is not in model.vocab");
	/* an added token is no token of HF's BPE model */
	SET(&f, tokenizer_json, llama_hf_tj("[`a w`]"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT, "model.merges[0]: 'a w' is not two tokens whose join is one: "
		    "'w' is not in model.vocab");
	SET(&f, tokenizer_json, llama_hf_tj("[`ab`]"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT, "model.merges[0]: 'ab' is not two tokens whose join is one");
	/* no merges, and a pair whose part held a space (written U+0120 by the
	 * converter's join; HF reads the part itself): loaded, none written */
	const char *const ok[] = {"[]", "[[`a`,`b`],[`x y`,`z`]]"};
	for (size_t i = 0; i < 2; i++) {
		SET(&f, tokenizer_json, llama_hf_tj(ok[i]));
		ck_assert_msg(run(&f, WF_VOCAB_LLAMA, -1, &got, err) == WF_OK, "%s: %s", ok[i], err);
		ck_assert(strstr(got, "tokenizer.ggml.model:str=llama\n") && !strstr(got, "merges"));
		free(got);
	}
}
END_TEST

/* CodeLlama's eot after the vocabulary; Granite's add_bos=false keeps its place */
START_TEST(test_llama_vocab_specials)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_L3), "null", ",`ignore_merges`:true", "[`a b`]", POST_L3));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf, "{`bos_token`:`<|begin_of_text|>`,`add_eos_token`:true}"));
	ck_assert_int_eq(run(&f, WF_VOCAB_LLAMA, 49152, &got, err), WF_OK);
	ck_assert_msg(strstr(got, "tokenizer.ggml.add_bos_token:bool=false\ntokenizer.ggml.add_sep_token:bool=false\n"
				  "tokenizer.ggml.add_eos_token:bool=true\n"), "%s", got);
	free(got);
	ck_assert_int_eq(run(&f, WF_VOCAB_LLAMA, 32016, &got, err), WF_OK);
	ck_assert_msg(strstr(got, "tokenizer.ggml.add_eos_token:bool=true\ntokenizer.ggml.eot_token_id:u32=32010\n"), "%s", got);
	ck_assert(!strstr(got, "u32=32007"));
	free(got);
}
END_TEST

/* A template ending in another special token: the old eos becomes eot. */
START_TEST(test_template_eot)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	SET(&f, tokenizer_json, bpe_tj(PT_SPLIT(RE_L3), "null", ",`ignore_merges`:true", "[`a b`]",
		"{`type`:`TemplateProcessing`,`single`:[{`SpecialToken`:{`id`:`<|begin_of_text|>`}},{`Sequence`:{`id`:`A`}},"
		"{`SpecialToken`:{`id`:`<|eot_id|>`}}],`pair`:[]}"));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf, "{`bos_token`:`<|begin_of_text|>`,`eos_token`:`c`}"));
	ck_assert_int_eq(run(&f, WF_VOCAB_QWEN, -1, &got, err), WF_OK);
	/* eos now <|eot_id|> (6); eot is "c", a base token only, so no id */
	ck_assert_msg(strstr(got, "tokenizer.ggml.bos_token_id:u32=5\ntokenizer.ggml.eos_token_id:u32=6\n"
				  "tokenizer.ggml.add_bos_token:bool=true\ntokenizer.ggml.add_eos_token:bool=true\n"), "%s", got);
	free(got);
}
END_TEST

START_TEST(test_phi3)
{
	struct wf_vocab_files f = {0};
	struct pb p;
	llama_spm(&p);
	f.tokenizer_model = p.b;
	f.tokenizer_model_len = p.n;
	SET(&f, tokenizer_config_json, "{}");
	expect_fail(&f, WF_VOCAB_PHI3, 8, WF_ERR_FORMAT, "tokenizer_class");
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`tokenizer_class`:`LlamaTokenizer`,`added_tokens_decoder`:{`6`:{`content`:`<|end|>`,`special`:true},"
		"`7`:{`content`:`x\xe2\x96\x81y`}}}"));
	expect(&f, WF_VOCAB_PHI3, 8,
	       "tokenizer.ggml.model:str=llama\n"
	       "tokenizer.ggml.pre:str=default\n"
	       "tokenizer.ggml.tokens:[str]=<unk>,<s>,</s>,\xe2\x96\x81" "a,<0x41>,ud,<|end|>,x\xe2\x96\x81y\n"
	       "tokenizer.ggml.scores:[f32]=0,0,0,-1.5,0,-2,-1000,-1000\n"
	       "tokenizer.ggml.token_type:[i32]=2,3,3,1,6,1,3,4\n");
	/* an id past the vocabulary fails phi3's routine */
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`tokenizer_class`:`LlamaTokenizer`,`added_tokens_decoder`:{`8`:{`content`:`z`}}}"));
	expect_fail(&f, WF_VOCAB_PHI3, 8, WF_ERR_FORMAT, "added_tokens_decoder[8]");
	/* GPT2Tokenizer: the BPE path */
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf, "{`tokenizer_class`:`GPT2Tokenizer`}"));
	SET(&f, tokenizer_json, bpe_tj(PT_GPT2, "null", "", "[`a b`]", "null"));
	char err[WF_ERRLEN], *got;
	ck_assert_int_eq(run(&f, WF_VOCAB_PHI3, -1, &got, err), WF_OK);
	ck_assert(strstr(got, "tokenizer.ggml.pre:str=gpt-2\n"));
	free(got);
}
END_TEST

/* A Llama 2 folder: tokenizer.model for the vocabulary, tokenizer.json
 * only for SpecialVocab (its added_tokens give the ids, its template add_bos). */
START_TEST(test_spm_with_tokenizer_json)
{
	struct wf_vocab_files f = {0};
	struct pb p;
	char err[WF_ERRLEN], *got;
	llama_spm(&p);
	f.tokenizer_model = p.b;
	f.tokenizer_model_len = p.n;
	SET(&f, tokenizer_json, jtext(tjbuf, sizeof tjbuf,
		"{`added_tokens`:[{`id`:0,`content`:`<unk>`,`special`:true},{`id`:1,`content`:`<s>`,`special`:true}],"
		"`post_processor`:{`type`:`TemplateProcessing`,`single`:[{`SpecialToken`:{`id`:`<s>`}},{`Sequence`:{`id`:`A`}}]},"
		"`model`:{`type`:`BPE`,`byte_fallback`:true,`vocab`:{}}}"));
	SET(&f, tokenizer_config_json, jtext(tcbuf, sizeof tcbuf,
		"{`bos_token`:{`content`:`<s>`},`unk_token`:{`content`:`<unk>`},`eos_token`:`</s>`,`add_eos_token`:false}"));
	ck_assert_int_eq(run(&f, WF_VOCAB_LLAMA, -1, &got, err), WF_OK);
	ck_assert_msg(strstr(got, "tokenizer.ggml.token_type:[i32]=2,3,3,1,6,1\n"
				  "tokenizer.ggml.bos_token_id:u32=1\ntokenizer.ggml.unknown_token_id:u32=0\n"
				  "tokenizer.ggml.add_bos_token:bool=true\ntokenizer.ggml.add_eos_token:bool=false\n"), "%s", got);
	free(got);
	/* model.vocab, which this route does not read, holds a key twice: json.load would keep its last id */
	SET(&f, tokenizer_json, jtext(tjbuf, sizeof tjbuf,
		"{`added_tokens`:[{`id`:0,`content`:`<unk>`,`special`:true},{`id`:1,`content`:`<s>`,`special`:true}],"
		"`model`:{`type`:`BPE`,`byte_fallback`:true,`vocab`:{`a`:0,`b`:1,`\\u0061`:2}}}"));
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_FORMAT, "tokenizer.json: 'model': 'vocab': key 'a' given twice");
	SET(&f, tokenizer_json, jtext(tjbuf, sizeof tjbuf,
		"{`added_tokens`:[{`id`:0,`content`:`<unk>`,`special`:true},{`id`:1,`content`:`<s>`,`special`:true}],"
		"`model`:{`type`:`BPE`,`byte_fallback`:true,`vocab`:{`a`:0,`b`:1,`c`:2}}}"));
	ck_assert_msg(run(&f, WF_VOCAB_LLAMA, -1, &got, err) == WF_OK, "%s", err);
	free(got);
	/* the other paths the converter has and this module refuses */
	f.has_additional_chat_templates = true;
	f.chat_template_jinja = "x";
	f.chat_template_jinja_len = 1;
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_UNSUP, "additional_chat_templates");
	f.has_additional_chat_templates = false;
	SET(&f, tokenizer_config_json, "{\"tokenizer_class\": \"HybridDNATokenizer\"}");
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_UNSUP, "HybridDNATokenizer");
	f.tokenizer_json = NULL;
	f.has_tekken_json = true;
	expect_fail(&f, WF_VOCAB_LLAMA, -1, WF_ERR_UNSUP, "tekken.json");
}
END_TEST

static const char *const hostile_tj[] = {
	"[1,2]",
	"{\"model\": 5}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":-1},\"merges\":[]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":99999999},\"merges\":[]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"a\":1},\"merges\":[]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":0},\"merges\":[]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[5]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\", 7]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\", \"ab\"]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},\"added_tokens\":[7],\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},\"added_tokens\":[{\"id\":1,\"content\":\"zz\"}],\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},\"added_tokens\":[{\"id\":3,\"content\":\"\xc4\xa0x\",\"normalized\":false}],\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\\u0000\":0}}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\xff\":0}}}",
	"{\"model\":{\"type\":\"WordPiece\",\"vocab\":{\"a\":0}}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},\"post_processor\":\"x\",\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]},\"post_processor\":{\"type\":\"TemplateProcessing\",\"single\":[3,4]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false}}",
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0}} trailing",
};

START_TEST(test_hostile_json)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	SET(&f, tokenizer_json, hostile_tj[_i]);
	enum wf_err rc = run(&f, WF_VOCAB_QWEN, -1, &got, err);
	ck_assert_msg(rc == WF_ERR_FORMAT || rc == WF_ERR_UNSUP, "case %d accepted:\n%s", _i, got ? got : "");
	ck_assert_msg(strncmp(err, "tokenizer.json: ", 16) == 0, "case %d: %s", _i, err);
}
END_TEST

START_TEST(test_hostile_misc)
{
	struct wf_vocab_files f = {0};
	char *deep = malloc(200001);
	ck_assert_ptr_nonnull(deep);
	memset(deep, '[', 100000);
	memset(deep + 100000, ']', 100000);
	deep[200000] = 0;
	SET(&f, tokenizer_json, deep);
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "tokenizer.json: not valid JSON");
	free(deep);
	SET(&f, tokenizer_json, bpe_tj(PT_GPT2, "null", "", "[`a b`]", "null"));
	SET(&f, config_json, "{\"bos_token_id\": -3}");
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "config.json: bos token id -3 is negative");
	SET(&f, config_json, "{\"text_config\": 4}");
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "config.json: text_config");
	f.config_json = NULL;
	expect_fail(&f, WF_VOCAB_QWEN, (int64_t)1 << 40, WF_ERR_UNSUP, "vocab_size");
	expect_fail(&f, WF_VOCAB_QWEN, 4, WF_ERR_FORMAT, "config.json: vocab_size 4");
	/* a token that collides with a filler's name */
	SET(&f, tokenizer_json, J("{`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2,`[PAD4]`:3},`merges`:[`a b`]},"
				  "`decoder`:{`type`:`ByteLevel`},`pre_tokenizer`:{`type`:`ByteLevel`,`add_prefix_space`:false}}"));
	expect_fail(&f, WF_VOCAB_QWEN, 6, WF_ERR_UNSUP, "are both '[PAD4]'");
	free((char *)f.tokenizer_json);
	SET(&f, tokenizer_json, bpe_tj(PT_GPT2, "null", "", "[`a b`]", "null"));
	SET(&f, tokenizer_config_json, "{\"chat_template\": [{\"name\": 5}]}");
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "chat_template[0]");
	SET(&f, tokenizer_config_json, "{\"x\": 1}");
	SET(&f, chat_template_json, "{\"chat_template\": \"J\"}");
	char err[WF_ERRLEN], *got;
	ck_assert_int_eq(run(&f, WF_VOCAB_QWEN, -1, &got, err), WF_OK);
	ck_assert(strstr(got, "tokenizer.chat_template:str=J\n"));
	free(got);
	SET(&f, chat_template_json, "[]");
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "chat_template.json: not an object");
}
END_TEST

/* The files read as json.load reads them (docs/security.md): a byte order
 * mark (json.load refuses the file, cJSON skips it) and a key given twice
 * (json.load keeps its last value, cJSON its first) are refused in each
 * JSON file the converter reads, naming the file and the key. */
START_TEST(test_json_as_python)
{
	static const char bom[] = "\xef\xbb\xbf";
	struct wf_vocab_files f = {0};
	char buf[8256], err[WF_ERRLEN], *got;
	const char *tj = bpe_tj(PT_GPT2, "null", "", "[`a b`]", "null");
	snprintf(buf, sizeof buf, "%s%s", bom, tj);
	SET(&f, tokenizer_json, buf);
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "tokenizer.json: begins with a UTF-8 byte order mark");
	SET(&f, tokenizer_json, tj);
	ck_assert_msg(run(&f, WF_VOCAB_QWEN, -1, &got, err) == WF_OK, "%s", err);
	free(got);
	static const struct {
		const char *cfg, *tc, *want;
	} cases[] = {
		{"\xef\xbb\xbf{\"bos_token_id\": 0}", NULL, "config.json: begins with a UTF-8 byte order mark"},
		{NULL, "\xef\xbb\xbf{\"add_bos_token\": true}", "tokenizer_config.json: begins with a UTF-8 byte order mark"},
		{"{\"bos_token_id\": 0, \"bos_token_id\": 1}", NULL, "config.json: key 'bos_token_id' given twice"},
		{"{\"text_config\": {\"eos_token_id\": 0, \"eos_token_id\": 1}}", NULL,
		 "config.json: 'text_config': key 'eos_token_id' given twice"},
		{NULL, "{\"add_bos_token\": false, \"add_bos_token\": true}", "tokenizer_config.json: key 'add_bos_token' given twice"},
		{NULL, "{\"chat_template\": [{\"name\": \"a\", \"template\": \"x\", \"name\": \"b\"}]}",
		 "tokenizer_config.json: key 'name' given twice"},
	};
	for (size_t i = 0; i < WF_ARRAY_LEN(cases); i++) {
		f.config_json = cases[i].cfg;
		f.config_json_len = cases[i].cfg ? strlen(cases[i].cfg) : 0;
		f.tokenizer_config_json = cases[i].tc;
		f.tokenizer_config_json_len = cases[i].tc ? strlen(cases[i].tc) : 0;
		expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, cases[i].want);
	}
	/* the same keys in two objects are no repetition */
	SET(&f, config_json, "{\"bos_token_id\": 0, \"text_config\": {\"bos_token_id\": 0}}");
	f.tokenizer_config_json = NULL;
	ck_assert_msg(run(&f, WF_VOCAB_QWEN, -1, &got, err) == WF_OK, "%s", err);
	free(got);
}
END_TEST

/* 200,000 added tokens: linear, bounded */
START_TEST(test_many_added)
{
	struct wf_buf b = {0};
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	wf_buf_puts(&b, "{\"added_tokens\":[");
	for (int i = 0; i < 200000; i++)
		wf_buf_printf(&b, "%s{\"id\":%d,\"content\":\"t%d\",\"special\":false,\"normalized\":true}", i ? "," : "", i + 5, i);
	wf_buf_puts(&b, "],\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
			"\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2,\"c\":3,\"d\":4},\"merges\":[\"a b\"]}}");
	ck_assert(wf_buf_finish(&b));
	f.tokenizer_json = b.data;
	f.tokenizer_json_len = b.len;
	clock_t t0 = clock();
	ck_assert_int_eq(run(&f, WF_VOCAB_QWEN, -1, &got, err), WF_OK);
	ck_assert(clock() - t0 < 10 * CLOCKS_PER_SEC);
	free(got);
	wf_buf_free(&b);
}
END_TEST

/* a config.json vocab_size past WF_VOCAB_MAX_TOKENS (10^7 here) is refused
 * before anything is padded to it */
START_TEST(test_vocab_size_huge)
{
	struct wf_vocab_files f = {0};
	static const char tj[] = "{\"added_tokens\":[],\"decoder\":{\"type\":\"ByteLevel\"},"
				 "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
				 "\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},\"merges\":[\"a b\"]}}";
	f.tokenizer_json = tj;
	f.tokenizer_json_len = strlen(tj);
	clock_t t0 = clock();
	expect_fail(&f, WF_VOCAB_QWEN, 10000000, WF_ERR_UNSUP, "10000000");
	ck_assert(clock() - t0 < 2 * CLOCKS_PER_SEC);
}
END_TEST

/* ---- tokenizer.json's model.vocab and model.merges read without cJSON
 * (wf_vocab_tj.c, wf_json_scan.c): the same values cJSON gives. */

/* wf_json_string against cJSON on one string literal: both refuse it, or
 * both give the same bytes.  cJSON reads \uXXXX with bad hex, \u0000 and
 * a raw NUL as a NUL that cuts the string short: refused here instead
 * (allowed_strict), and json.load refuses all three. */
static void string_as_cjson(const char *lit, size_t n, bool allowed_strict)
{
	uint8_t out[256];
	uint64_t len;
	struct wf_jcur c = {(const uint8_t *)lit, n, 0, NULL};
	ck_assert(n < sizeof out);
	int r = wf_json_string(&c, out, &len);
	const char *end = NULL;
	cJSON *j = cJSON_ParseWithLengthOpts(lit, n, &end, false);
	bool cj_ok = j && cJSON_IsString(j) && end == lit + n;
	if (r > 0 && c.pos < n)
		r = -1, c.why = "bytes after the string"; /* the literal is more than one string */
	if (r > 0 && !cj_ok)
		ck_abort_msg("accepted what cJSON refuses: %.*s", (int)n, lit);
	if (r < 0) {
		bool nul = strstr(c.why, "hex") || strstr(c.why, "\\u0000") || strstr(c.why, "NUL");
		ck_assert_msg(!cj_ok || (allowed_strict && nul), "refused what cJSON reads (%s): %.*s", c.why, (int)n, lit);
	} else {
		const uint8_t *got = r == 1 ? (const uint8_t *)lit + 1 : out;
		ck_assert_msg(len == strlen(j->valuestring) && memcmp(got, j->valuestring, len) == 0, "bytes differ: %.*s",
			      (int)n, lit);
	}
	cJSON_Delete(j);
}

START_TEST(test_json_string)
{
	static const char *const lits[] = {
		"\"\"", "\"abc\"", "\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"", "\"\\u0041\\u00e9\\u20AC\"", "\"\\ud83d\\ude00x\"",
		"\"\\uD83D\\uDE00\"", "\"\xc4\xa0the\"", "\"a\\u0020b\"", "\"\\ud800\"", "\"\\udc00\"", "\"\\ud800\\u0041\"",
		"\"\\ud800x\"", "\"\\ud83d\\ude0\"", "\"\\u12\"", "\"\\x\"", "\"\\\"", "\"abc", "\"\\", "\"\\u00e", "\"\\ud83d\\",
		"\"\\ud83d\\u\"", "\"tab\there\"", "\"\\'\"", "\"\\U0041\"",
	};
	for (size_t i = 0; i < sizeof lits / sizeof lits[0]; i++)
		string_as_cjson(lits[i], strlen(lits[i]), false);
	string_as_cjson("\"\\u+041\"", 9, true);
	/* cJSON's NUL readings */
	string_as_cjson("\"\\u0000\"", 8, true);
	string_as_cjson("\"\\uzzzz\"", 8, true);
	string_as_cjson("\"a\0b\"", 5, true);
	/* every string of up to 7 bytes over an alphabet of escape pieces */
	static const char alpha[] = "\\\"u0dD8cAe/n";
	char lit[16];
	for (unsigned long k = 0; k < 12UL * 12 * 12 * 12 * 12; k++) {
		size_t n = 0;
		lit[n++] = '"';
		for (unsigned long x = k; n < 6; x /= 12)
			lit[n++] = alpha[x % 12];
		lit[n++] = '"';
		string_as_cjson(lit, n, strstr(lit, "\\u") != NULL);
	}
}
END_TEST

/* A tokenizer.json whose vocab and merges hold escapes */
static const char tj_esc[] =
	"{\"model\":{\"type\":\"BPE\",\"vocab\":{\"\\u0061\":0,\"b\":1,\"a\\u0062\":2,\"\\u00e9\":3,\"\\ud83d\\ude00\":4,"
	"\"\\\"q\":5,\"x\\\\y\":6,\"\\n\":7},\"merges\":[\"a \\u0062\"]},\"decoder\":{\"type\":\"ByteLevel\"},"
	"\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
	"\"added_tokens\":[{\"id\":8,\"content\":\"<s>\",\"special\":true}]}";

START_TEST(test_tj_escapes)
{
	struct wf_vocab_files f = {0};
	SET(&f, tokenizer_json, tj_esc);
	expect(&f, WF_VOCAB_QWEN, -1,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=gpt-2\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc3\xa9,\xf0\x9f\x98\x80,\"q,x\\y,\n,<s>\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1,1,1,1,3\n"
	       "tokenizer.ggml.merges:[str]=a b\n");
	/* pairs, escaped, a space inside a part written U+0120 */
	SET(&f, tokenizer_json, J("{`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2,`\xc4\xa0`:3,`\xc4\xa0" "a`:4},"
				  "`merges`:[[`\\u0061`,`b`],[` `,`a`]]},`decoder`:{`type`:`ByteLevel`},"
				  "`pre_tokenizer`:{`type`:`ByteLevel`,`add_prefix_space`:false}}"));
	expect(&f, WF_VOCAB_QWEN, -1,
	       "tokenizer.ggml.model:str=gpt2\n"
	       "tokenizer.ggml.pre:str=gpt-2\n"
	       "tokenizer.ggml.tokens:[str]=a,b,ab,\xc4\xa0,\xc4\xa0" "a\n"
	       "tokenizer.ggml.token_type:[i32]=1,1,1,1,1\n"
	       "tokenizer.ggml.merges:[str]=a b,\xc4\xa0 a\n");
	free((char *)f.tokenizer_json);
}
END_TEST

/* ids, duplicate members, lone surrogates, nesting: as the cJSON tree read them */
#define TJ_HEAD "{`decoder`:{`type`:`ByteLevel`},`pre_tokenizer`:{`type`:`ByteLevel`,`add_prefix_space`:false},"
static const struct {
	const char *tj;  /* ` for " */
	int rc;          /* WF_OK, or the error */
	const char *want; /* a line of the key/values, or a piece of the message */
} tj_cases[] = {
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1.0,`ab`:2e0},`merges`:[`a b`]}}", WF_OK, "tokens:[str]=a,b,ab\n"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1.5,`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT, "model.vocab[1]: id not an integer"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:true,`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT, "model.vocab[1]: id not an integer"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:`1`,`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT, "model.vocab[1]: id not an integer"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:[1,{`x`:null}],`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT, "model.vocab[1]: id not an integer"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:-0,`ab`:2},`merges`:[`a b`]}}", WF_ERR_UNSUP, "given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1e400,`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT, "id not an integer"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:01,`ab`:2},`merges`:[`a b`]}}", WF_OK, "tokens:[str]=a,b,ab\n"},
	/* a member given twice: refused (json.load would read the last, cJSON the first), wherever it is,
	 * the scanned model.vocab and model.merges included (keys inside model.vocab: test_spm_with_tokenizer_json) */
	{TJ_HEAD "`model`:{`vocab`:{`q`:0},`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]}}", WF_ERR_FORMAT,
	 "tokenizer.json: 'model': key 'vocab' given twice in one object"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`x y`],`merges`:[`a b`]}}", WF_ERR_FORMAT,
	 "'model': key 'merges' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`],`merges`:5}}", WF_ERR_FORMAT, "key 'merges' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`],`vocab`:[]}}", WF_ERR_FORMAT, "key 'vocab' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`z`:0},`merges`:[`a b`]},`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]}}",
	 WF_ERR_FORMAT, "tokenizer.json: key 'model' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]},`model`:7}", WF_ERR_FORMAT, "key 'model' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]},`mod\\u0065l`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2,`c`:3},`merges`:[`a b`]}}",
	 WF_ERR_FORMAT, "key 'model' given twice"},
	{TJ_HEAD "`added_tokens`:[],`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]},`added_tokens`:[]}",
	 WF_ERR_FORMAT, "tokenizer.json: key 'added_tokens' given twice"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]},`added_tokens`:[{`id`:0,`id`:1}]}",
	 WF_ERR_FORMAT, "tokenizer.json: key 'id' given twice"},
	/* keys that differ only past a \\u0000 that cJSON would cut them at: refused for the NUL */
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`]},`x\\u0000a`:1,`x\\u0000b`:2}",
	 WF_ERR_UNSUP, "\\u0000"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2,`\\ud800`:3},`merges`:[`a b`]}}", WF_ERR_FORMAT, "tokenizer.json: model.vocab: a high surrogate"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`,`\\udfff x`]}}", WF_ERR_FORMAT, "tokenizer.json: model.merges: a lone low surrogate"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[[`a`,`b`],[`a`,5]]}}", WF_ERR_FORMAT, "model.merges[1]: not a list of strings"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[[`a`,`b`],`a b`]}}", WF_ERR_FORMAT, "model.merges[1]: not a pair"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[[`a`,`b`,`c`]]}}", WF_ERR_FORMAT, "model.merges: unknown format"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[{`a`:`b`}]}}", WF_ERR_FORMAT, "model.merges: unknown format"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[1,1,1,1,1,1,1,1,1,1,1,1]}}", WF_ERR_FORMAT, "model.merges: unknown format"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`,[`a`,`b`]]}}", WF_ERR_FORMAT, "model.merges[1]: not a string"},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2},`merges`:[`a b`,]}}", WF_ERR_FORMAT, "tokenizer.json: model.merges: "},
	{TJ_HEAD "`model`:{`type`:`BPE`,`vocab`:{`a`:0,`b`:1,`ab`:2,},`merges`:[`a b`]}}", WF_ERR_FORMAT, "tokenizer.json: model.vocab: "},
	/* whitespace cJSON takes (any byte up to ' '): read whole by cJSON */
	{TJ_HEAD "`model`:{`type`:`BPE`,\f`vocab`:{`a`:0,\f`b`:1,`ab`:2},`merges`:[`a b`\f]}}", WF_OK, "merges:[str]=a b\n"},
};

START_TEST(test_tj_cases)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	SET(&f, tokenizer_json, J(tj_cases[_i].tj));
	enum wf_err rc = run(&f, WF_VOCAB_QWEN, -1, &got, err);
	ck_assert_msg((int)rc == tj_cases[_i].rc, "case %d: rc %d: %s", _i, (int)rc, err);
	ck_assert_msg(strstr(rc == WF_OK ? got : err, tj_cases[_i].want), "case %d: %s lacks %s", _i, rc == WF_OK ? got : err,
		      tj_cases[_i].want);
	free(got);
	free((char *)f.tokenizer_json);
}
END_TEST

/* A vocab value nested d deep inside the file's object, model and vocab:
 * refused exactly where cJSON's nesting limit refuses the file. */
START_TEST(test_tj_nesting)
{
	for (int d = 995; d <= 1001; d++) {
		struct wf_buf b = {0};
		struct wf_vocab_files f = {0};
		char err[WF_ERRLEN], *got;
		wf_buf_puts(&b, "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\","
				"\"add_prefix_space\":false},\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":");
		for (int i = 0; i < d; i++)
			wf_buf_putc(&b, '[');
		for (int i = 0; i < d; i++)
			wf_buf_putc(&b, ']');
		wf_buf_puts(&b, "},\"merges\":[\"a b\"]}}");
		ck_assert(wf_buf_finish(&b));
		cJSON *j = cJSON_ParseWithLength(b.data, b.len);
		f.tokenizer_json = b.data;
		f.tokenizer_json_len = b.len;
		ck_assert_int_ne(run(&f, WF_VOCAB_QWEN, -1, &got, err), WF_OK);
		if (j)
			ck_assert_msg(strstr(err, "id not an integer"), "depth %d: %s", d, err);
		else
			ck_assert_msg(strstr(err, "nested too deeply"), "depth %d: %s", d, err);
		cJSON_Delete(j);
		wf_buf_free(&b);
	}
}
END_TEST

/* Every prefix of a tokenizer.json (each in a buffer of its own size, so
 * a sanitizer build sees any read past it) and every byte of it replaced
 * by each of a few: refused when cJSON refuses the text, else the same
 * key/values as cJSON's own rendering of it (decoded values written with
 * no escape beyond what JSON needs) gives. */
START_TEST(test_tj_mutations)
{
	static const char subst[] = {'"', '\\', '{', '}', '[', ']', ',', ':', ' ', '\f', 'u', '0', 'x', '1'};
	size_t n = strlen(tj_esc);
	char err[WF_ERRLEN], err2[WF_ERRLEN], *got, *got2;
	for (size_t len = 0; len < n; len++) {
		struct wf_vocab_files f = {0};
		char *p = malloc(len ? len : 1);
		ck_assert_ptr_nonnull(p);
		memcpy(p, tj_esc, len);
		f.tokenizer_json = p;
		f.tokenizer_json_len = len;
		ck_assert_msg(run(&f, WF_VOCAB_QWEN, -1, &got, err) != WF_OK, "prefix %zu accepted", len);
		ck_assert_msg(strncmp(err, "tokenizer.json: ", 16) == 0, "prefix %zu: %s", len, err);
		free(p);
	}
	for (size_t at = 0; at < n; at++)
		for (size_t k = 0; k < sizeof subst; k++) {
			struct wf_vocab_files f = {0};
			char *p = malloc(n);
			ck_assert_ptr_nonnull(p);
			memcpy(p, tj_esc, n);
			p[at] = subst[k];
			f.tokenizer_json = p;
			f.tokenizer_json_len = n;
			const char *end = NULL;
			cJSON *j = cJSON_ParseWithLengthOpts(p, n, &end, false);
			enum wf_err rc = run(&f, WF_VOCAB_QWEN, -1, &got, err);
			if (!j || end != p + n) {
				ck_assert_msg(rc != WF_OK, "%zu=%c: accepted what cJSON refuses", at, subst[k]);
			} else if (!strstr(err, "hex") && !strstr(err, "\\u0000")) { /* cJSON's NUL readings */
				char *r = cJSON_PrintUnformatted(j);
				ck_assert_ptr_nonnull(r);
				SET(&f, tokenizer_json, r);
				enum wf_err rc2 = run(&f, WF_VOCAB_QWEN, -1, &got2, err2);
				ck_assert_msg(rc == rc2, "%zu=%c: %d (%s) but %d (%s) for %s", at, subst[k], (int)rc, err,
					      (int)rc2, err2, r);
				if (rc == WF_OK)
					ck_assert_msg(strcmp(got, got2) == 0, "%zu=%c:\n%s\n%s", at, subst[k], got, got2);
				free(got2);
				free(r);
			}
			free(got);
			cJSON_Delete(j);
			free(p);
		}
}
END_TEST

/* 126 tokens and 100 merges (more than the lookups kept in flight): all
 * found; a merge that is no join refused by its own index; a string given
 * two ids far apart refused. */
static void big_tj(struct wf_buf *b, int bad_merge, int dup_at)
{
	int id = 0;
	wf_buf_puts(b, "{\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false},"
		       "\"model\":{\"type\":\"BPE\",\"vocab\":{");
	for (char c = 'a'; c <= 'z'; c++)
		wf_buf_printf(b, "%s\"%c\":%d", id ? "," : "", c, id), id++;
	for (char x = 'a'; x <= 'j'; x++)
		for (char y = 'a'; y <= 'j'; y++, id++)
			wf_buf_printf(b, ",\"%c%c\":%d", x, id == dup_at ? 'q' : y, id == dup_at ? 0 : id);
	wf_buf_puts(b, "},\"merges\":[");
	for (int m = 0; m < 100; m++)
		wf_buf_printf(b, "%s\"%c %c\"", m ? "," : "", 'a' + m / 10, m == bad_merge ? 'z' : 'a' + m % 10);
	wf_buf_puts(b, "]}}");
	ck_assert(wf_buf_finish(b));
}

START_TEST(test_tj_many)
{
	struct wf_vocab_files f = {0};
	char err[WF_ERRLEN], *got;
	struct wf_buf b = {0};
	big_tj(&b, -1, -1);
	f.tokenizer_json = b.data;
	f.tokenizer_json_len = b.len;
	ck_assert_msg(run(&f, WF_VOCAB_QWEN, -1, &got, err) == WF_OK, "%s", err);
	ck_assert(strstr(got, "tokenizer.ggml.merges:[str]=a a,a b,a c,"));
	ck_assert(strstr(got, ",j i,j j\n"));
	free(got);
	wf_buf_free(&b);
	big_tj(&b, 57, -1);
	f.tokenizer_json = b.data;
	f.tokenizer_json_len = b.len;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_FORMAT, "model.merges[57]: 'f z' is not two tokens");
	wf_buf_free(&b);
	big_tj(&b, -1, 99);
	f.tokenizer_json = b.data;
	f.tokenizer_json_len = b.len;
	expect_fail(&f, WF_VOCAB_QWEN, -1, WF_ERR_UNSUP, "token 0 'hq': its id or its text is given twice");
	wf_buf_free(&b);
}
END_TEST

static Suite *vocab_suite(void)
{
	Suite *s = suite_create("vocab");
	TCase *tc = tcase_create("bpe");
	tcase_add_test(tc, test_llama_bpe);
	tcase_add_test(tc, test_qwen2_pairs);
	tcase_add_test(tc, test_gpt2_merges_txt);
	tcase_add_test(tc, test_pre_unknown);
	tcase_add_test(tc, test_vocab_len);
	tcase_add_test(tc, test_glm);
	tcase_add_test(tc, test_llama_vocab_specials);
	tcase_add_test(tc, test_template_eot);
	suite_add_tcase(s, tc);
	tc = tcase_create("spm");
	tcase_add_test(tc, test_spm_llama);
	tcase_add_test(tc, test_spm_bad);
	tcase_add_test(tc, test_llama_hf);
	tcase_add_test(tc, test_llama_hf_merges);
	tcase_add_test(tc, test_phi3);
	tcase_add_test(tc, test_spm_with_tokenizer_json);
	suite_add_tcase(s, tc);
	tc = tcase_create("hostile");
	tcase_add_loop_test(tc, test_hostile_json, 0, (int)(sizeof hostile_tj / sizeof hostile_tj[0]));
	tcase_add_test(tc, test_hostile_misc);
	tcase_add_test(tc, test_many_added);
	tcase_add_test(tc, test_json_as_python);
	tcase_add_test(tc, test_vocab_size_huge);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("scan");
	tcase_add_test(tc, test_json_string);
	tcase_add_test(tc, test_tj_escapes);
	tcase_add_test(tc, test_tj_many);
	tcase_add_loop_test(tc, test_tj_cases, 0, (int)(sizeof tj_cases / sizeof tj_cases[0]));
	tcase_add_test(tc, test_tj_nesting);
	tcase_add_test(tc, test_tj_mutations);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(vocab_suite());
	int failed;
	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
