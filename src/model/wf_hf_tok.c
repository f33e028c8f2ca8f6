/* wf_hf_tok.c - the hf/ tokenizer files of a GGUF model (wf_hf_tok.h):
 * which tokens are added tokens, the byte-level merges, and the JSON of
 * tokenizer.json, tokenizer_config.json and special_tokens_map.json.
 * docs/hf.md says where this departs from transformers' own GGUF loader
 * and why (llama.cpp's ids are the reference). */
#include "model/wf_hf_tok.h"
#include "model/wf_hf_tok_int.h"
#include "model/wf_gguf.h"

#include <stdlib.h>
#include <string.h>

/* Texts llama.cpp's load() makes control tokens whatever their type
 * (EOT/EOM/FIM/EOG detection by text), and those it makes user-defined
 * (gpt-oss).  Both are matched in text like added tokens. */
static const char *const control_texts[] = {
	"</s>", "<EOT>", "<MID>", "<PAD>", "<PRE>", "<REPO>", "<SUF>", "<end_of_turn>", "<end_of_utterance>",
	"<fim-middle>", "<fim-pad>", "<fim-prefix>", "<fim-repo>", "<fim-suffix>", "<fim_middle>", "<fim_pad>",
	"<fim_prefix>", "<fim_suffix>", "<reponame>", "<|calls|>", "<|call|>", "<|code_middle|>", "<|code_prefix|>",
	"<|code_suffix|>", "<|endoftext|>", "<|end|>", "<|eom_id|>", "<|eot_id|>", "<|file_sep|>", "<|fim_middle|>",
	"<|fim_pad|>", "<|fim_prefix|>", "<|fim_repo|>", "<|fim_suffix|>", "<|flush|>", "<|im_end|>", "<|middle|>",
	"<|prefix|>", "<|repo_name|>", "<|return|>", "<|suffix|>", "<\xef\xbd\x9c" "end\xe2\x96\x81of\xe2\x96\x81sentence\xef\xbd\x9c>",
	"<\xef\xbd\x9c" "fim\xe2\x96\x81" "begin\xef\xbd\x9c>", "<\xef\xbd\x9c" "fim\xe2\x96\x81" "end\xef\xbd\x9c>",
	"<\xef\xbd\x9c" "fim\xe2\x96\x81hole\xef\xbd\x9c>", "[EOT]", "[PAD]", "_<EOT>", "\xe2\x96\x81<MID>",
	"\xe2\x96\x81<PRE>", "\xe2\x96\x81<SUF>", NULL,
};
static const char *const user_texts[] = {"<|channel|>", "<|message|>", "<|start|>", "<|constrain|>", NULL};

static bool tok_is(const struct wf_tok_str *t, const char *s)
{
	size_t n = strlen(s);
	return t->n == n && memcmp(t->p, s, n) == 0;
}

static bool name_is_phi3(const struct ht_in *in)
{
	struct wf_tok_str name;
	if (!ht_str_of(in, &in->name, &name))
		return false;
	uint64_t n = name.n;
	const uint8_t *p = name.p;
	for (uint64_t i = 0; i + 4 <= n; i++) {
		char c[5];
		for (int k = 0; k < 5 && i + k < n; k++)
			c[k] = (char)(p[i + k] >= 'A' && p[i + k] <= 'Z' ? p[i + k] + 32 : p[i + k]);
		if (!memcmp(c, "phi3", 4) || (i + 5 <= n && !memcmp(c, "phi-3", 5)))
			return true;
	}
	return false;
}

static int64_t find_text(const struct ht_in *in, const char *s)
{
	return ht_lookup(in, (const uint8_t *)s, strlen(s));
}

/* llama.cpp's end-of-generation workarounds that change a token's kind:
 * <|end|> is user-defined next to <|return|> and <|call|> (gpt-oss) or
 * <|calls|> and <|flush|> (solar-open); </s> is a normal token next to
 * <|tool_response> (Gemma 4). */
static void eog_fixups(struct ht_in *in)
{
	int64_t end = find_text(in, "<|end|>"), s = find_text(in, "</s>");
	if (end >= 0 && ((find_text(in, "<|return|>") >= 0 && find_text(in, "<|call|>") >= 0) ||
			 (find_text(in, "<|calls|>") >= 0 && find_text(in, "<|flush|>") >= 0)))
		in->added[end] = 1;
	if (s >= 0 && find_text(in, "<|tool_response>") >= 0)
		in->added[s] = 0;
}

/* added[i]: 2 special (control, unknown), 1 not special (user-defined);
 * rstrip[i] as llama.cpp sets it for a model named Phi-3. */
static enum wf_err mark_added(struct ht_in *in, char *why)
{
	in->added = calloc(in->n, 1);
	in->rstrip = calloc(in->n, 1);
	if (!in->added || !in->rstrip)
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.tokens: out of memory");
	for (size_t i = 0; i < in->n; i++) {
		int32_t t = in->type[i];
		in->added[i] = t == WF_TOK_CONTROL || t == WF_TOK_UNKNOWN ? 2 : t == WF_TOK_USER ? 1 : 0;
		for (const char *const *c = control_texts; *c; c++)
			if (tok_is(&in->tok[i], *c))
				in->added[i] = 2;
		for (const char *const *c = user_texts; *c; c++)
			if (tok_is(&in->tok[i], *c))
				in->added[i] = 1;
	}
	eog_fixups(in);
	if (!name_is_phi3(in))
		return WF_OK;
	for (size_t i = 0; i < in->n; i++) {
		const struct wf_tok_str *t = &in->tok[i];
		in->rstrip[i] = (in->added[i] || tok_is(t, "</s>")) && !tok_is(t, "<unk>") && !tok_is(t, "<s>") &&
				!tok_is(t, "<|endoftext|>");
	}
	return WF_OK;
}

/* ---------------------------------------------------------------- byte-level merges */

struct pairset {
	uint64_t *v; /* key + 1, 0 empty */
	size_t cap;
	struct wf_hash_key key;
};

static bool pair_add(struct pairset *s, uint64_t k)
{
	size_t h = wf_hash(&s->key, &k, 8) & (s->cap - 1);
	for (;; h = (h + 1) & (s->cap - 1)) {
		if (!s->v[h]) {
			s->v[h] = k + 1;
			return true;
		}
		if (s->v[h] == k + 1)
			return false;
	}
}

/* Keeps the merges HF's BPE can load: both halves and their join in the
 * vocabulary (it refuses a file otherwise), the first of duplicates (llama.cpp's
 * bpe_ranks.emplace keeps the first rank). */
static enum wf_err bl_merges(struct ht_in *in, char *why)
{
	struct wf_tok_str *m;
	size_t nm;
	if (!in->merges.set)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.merges: absent, and a gpt2 vocabulary needs it");
	if (!ht_arr_strs(in, &in->merges, "tokenizer.ggml.merges", 0, &m, &nm, why))
		return strstr(why, "out of memory") ? WF_ERR_NOMEM : WF_ERR_UNSUP;
	struct pairset ps = {.cap = 16};
	while (ps.cap < nm * 2)
		ps.cap <<= 1;
	ps.v = calloc(ps.cap, sizeof *ps.v);
	in->merge = malloc((nm ? nm : 1) * sizeof *in->merge);
	char *join = malloc(1);
	size_t join_cap = 1;
	enum wf_err e = WF_OK;
	if (!ps.v || !in->merge || !join)
		e = wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.merges: out of memory");
	wf_hash_key_init(&ps.key);
	for (size_t i = 0; e == WF_OK && i < nm; i++) {
		const uint8_t *sp = m[i].n > 1 ? memchr(m[i].p + 1, ' ', m[i].n - 1) : NULL;
		if (!sp)
			continue;
		size_t la = (size_t)(sp - m[i].p), lb = m[i].n - la - 1;
		int64_t a = ht_lookup(in, m[i].p, la), b = ht_lookup(in, sp + 1, lb);
		if (a < 0 || b < 0)
			continue;
		if (la + lb > join_cap) {
			char *j = realloc(join, la + lb);
			if (!j) {
				e = wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.merges: out of memory");
				break;
			}
			join = j, join_cap = la + lb;
		}
		memcpy(join, m[i].p, la);
		memcpy(join + la, sp + 1, lb);
		if (ht_lookup(in, (const uint8_t *)join, la + lb) < 0 || !pair_add(&ps, (uint64_t)a << 32 | (uint64_t)b))
			continue;
		in->merge[in->n_merge][0] = (uint32_t)a;
		in->merge[in->n_merge++][1] = (uint32_t)b;
	}
	free(join);
	free(ps.v);
	free(m);
	return e;
}

/* ---------------------------------------------------------------- JSON */

static void jstr(struct wf_buf *b, const struct wf_tok_str *s)
{
	wf_buf_json_str(b, s->p, s->n);
}

static void added_obj(struct wf_buf *b, const struct ht_in *in, size_t i, bool with_id)
{
	if (with_id)
		wf_buf_printf(b, "{\"id\":%zu,\"content\":", i);
	else
		wf_buf_puts(b, "{\"content\":");
	jstr(b, &in->tok[i]);
	wf_buf_printf(b, ",\"single_word\":false,\"lstrip\":false,\"rstrip\":%s,\"normalized\":false", in->rstrip[i] ? "true" : "false");
	if (with_id)
		wf_buf_printf(b, ",\"special\":%s}", in->added[i] == 2 ? "true" : "false");
	else
		wf_buf_putc(b, '}');
}

static void j_added(struct wf_buf *b, const struct ht_in *in)
{
	bool first = true;
	wf_buf_puts(b, "  \"added_tokens\": [");
	for (size_t i = 0; i < in->n; i++) {
		if (!in->added[i])
			continue;
		wf_buf_puts(b, first ? "\n    " : ",\n    ");
		first = false;
		added_obj(b, in, i, true);
	}
	wf_buf_puts(b, first ? "],\n" : "\n  ],\n");
}

static void j_special(struct wf_buf *b, const struct ht_in *in, int64_t id, int type_id)
{
	wf_buf_puts(b, "{\"SpecialToken\":{\"id\":");
	jstr(b, &in->tok[id]);
	wf_buf_printf(b, ",\"type_id\":%d}},", type_id);
}

static void j_template_side(struct wf_buf *b, const struct ht_in *in, const char *seq, int type_id)
{
	if (in->add_bos)
		j_special(b, in, in->bos, type_id);
	wf_buf_printf(b, "{\"Sequence\":{\"id\":\"%s\",\"type_id\":%d}}", seq, type_id);
	if (in->add_eos) {
		wf_buf_putc(b, ',');
		j_special(b, in, in->eos, type_id);
		b->len--; /* the comma j_special leaves */
	}
}

static void j_special_entry(struct wf_buf *b, const struct ht_in *in, int64_t id, bool *first)
{
	if (!*first)
		wf_buf_putc(b, ',');
	*first = false;
	jstr(b, &in->tok[id]);
	wf_buf_puts(b, ":{\"id\":");
	jstr(b, &in->tok[id]);
	wf_buf_printf(b, ",\"ids\":[%lld],\"tokens\":[", (long long)id);
	jstr(b, &in->tok[id]);
	wf_buf_puts(b, "]}");
}

/* add_bos / add_eos as the TemplateProcessing transformers' Llama
 * tokenizer builds (update_post_processor): "BOS $A EOS", pair "BOS $A EOS BOS $B EOS". */
static void j_post(struct wf_buf *b, const struct ht_in *in)
{
	wf_buf_puts(b, "  \"post_processor\": ");
	if (!in->add_bos && !in->add_eos) {
		wf_buf_puts(b, in->spm || in->gemma4 ? "null,\n"
				       : "{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":false,\"use_regex\":true},\n");
		return;
	}
	wf_buf_puts(b, "{\"type\":\"TemplateProcessing\",\"single\":[");
	j_template_side(b, in, "A", 0);
	wf_buf_puts(b, "],\"pair\":[");
	j_template_side(b, in, "A", 0);
	wf_buf_putc(b, ',');
	j_template_side(b, in, "B", 1);
	wf_buf_puts(b, "],\"special_tokens\":{");
	bool first = true;
	if (in->add_bos)
		j_special_entry(b, in, in->bos, &first);
	if (in->add_eos && !(in->add_bos && in->bos == in->eos))
		j_special_entry(b, in, in->eos, &first);
	wf_buf_puts(b, "}},\n");
}

static void j_pipeline(struct wf_buf *b, const struct ht_in *in)
{
	if (in->gemma4) {
		/* llama.cpp: spaces escaped, the text split at newline runs, BPE over raw UTF-8 */
		wf_buf_puts(b, "  \"normalizer\": {\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"},\n"
			       "  \"pre_tokenizer\": {\"type\":\"Split\",\"pattern\":{\"Regex\":\"[^\\n]+|[\\n]+\"},"
			       "\"behavior\":\"Isolated\",\"invert\":false},\n");
		j_post(b, in);
		wf_buf_puts(b, "  \"decoder\": {\"type\":\"Sequence\",\"decoders\":["
			       "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},\"content\":\" \"},"
			       "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}]},\n");
		return;
	}
	if (in->spm) {
		wf_buf_puts(b, "  \"normalizer\": {\"type\":\"Sequence\",\"normalizers\":[");
		if (in->add_space_prefix)
			wf_buf_puts(b, "{\"type\":\"Prepend\",\"prepend\":\"\xe2\x96\x81\"},");
		wf_buf_puts(b, "{\"type\":\"Replace\",\"pattern\":{\"String\":\" \"},\"content\":\"\xe2\x96\x81\"}]},\n"
			       "  \"pre_tokenizer\": null,\n");
		j_post(b, in);
		wf_buf_puts(b, "  \"decoder\": {\"type\":\"Sequence\",\"decoders\":["
			       "{\"type\":\"Replace\",\"pattern\":{\"String\":\"\xe2\x96\x81\"},\"content\":\" \"},"
			       "{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"}");
		if (in->add_space_prefix)
			wf_buf_puts(b, ",{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}");
		wf_buf_puts(b, "]},\n");
		return;
	}
	wf_buf_puts(b, "  \"normalizer\": null,\n  \"pre_tokenizer\": {\"type\":\"Sequence\",\"pretokenizers\":[");
	for (const char *const *r = in->regex; *r; r++) {
		wf_buf_puts(b, "\n    {\"type\":\"Split\",\"pattern\":{\"Regex\":");
		wf_buf_json_str(b, *r, strlen(*r));
		wf_buf_puts(b, "},\"behavior\":\"Isolated\",\"invert\":false},");
	}
	wf_buf_puts(b, "\n    {\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":false}]},\n");
	j_post(b, in);
	wf_buf_puts(b, "  \"decoder\": {\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},\n");
}

static void j_model(struct wf_buf *b, const struct ht_in *in)
{
	wf_buf_puts(b, "  \"model\": {\n    \"type\": \"BPE\",\n    \"dropout\": null,\n    \"unk_token\": ");
	if (in->spm && in->unk >= 0)
		jstr(b, &in->tok[in->unk]);
	else
		wf_buf_puts(b, "null");
	wf_buf_printf(b, ",\n    \"continuing_subword_prefix\": null,\n    \"end_of_word_suffix\": null,\n"
			 "    \"fuse_unk\": %s,\n    \"byte_fallback\": %s,\n    \"ignore_merges\": %s,\n    \"vocab\": {",
		      in->spm ? "true" : "false", in->spm || in->gemma4 ? "true" : "false", in->ignore_merges ? "true" : "false");
	bool first = true;
	for (size_t i = 0; i < in->n; i++) {
		if (ht_lookup(in, in->tok[i].p, in->tok[i].n) != (int64_t)i)
			continue; /* a duplicate text: the last id has it, as in llama.cpp */
		wf_buf_puts(b, first ? "\n      " : ",\n      ");
		first = false;
		jstr(b, &in->tok[i]);
		wf_buf_printf(b, ": %zu", i);
	}
	wf_buf_puts(b, "\n    },\n    \"merges\": [");
	for (size_t i = 0; i < in->n_merge; i++) {
		wf_buf_puts(b, i ? ",\n      [" : "\n      [");
		jstr(b, &in->tok[in->merge[i][0]]);
		wf_buf_putc(b, ',');
		jstr(b, &in->tok[in->merge[i][1]]);
		wf_buf_putc(b, ']');
	}
	wf_buf_puts(b, "\n    ]\n  }\n}\n");
}

static void j_tokenizer(struct wf_buf *b, const struct ht_in *in)
{
	wf_buf_puts(b, "{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n");
	j_added(b, in);
	j_pipeline(b, in);
	j_model(b, in);
}

static void j_tok_or_null(struct wf_buf *b, const struct ht_in *in, int64_t id)
{
	if (id >= 0)
		jstr(b, &in->tok[id]);
	else
		wf_buf_puts(b, "null");
}

static void j_chat(struct wf_buf *b, const struct ht_in *in)
{
	if (in->chat_s.p && !in->n_tpl) {
		wf_buf_puts(b, "  \"chat_template\": ");
		jstr(b, &in->chat_s);
		wf_buf_puts(b, ",\n");
		return;
	}
	if (!in->n_tpl)
		return;
	/* named templates: transformers' list form, "default" first */
	wf_buf_puts(b, "  \"chat_template\": [");
	if (in->chat_s.p) {
		wf_buf_puts(b, "{\"name\":\"default\",\"template\":");
		jstr(b, &in->chat_s);
		wf_buf_puts(b, "},");
	}
	for (size_t i = 0; i < in->n_tpl; i++) {
		struct wf_tok_str t = {0};
		ht_str_of(in, &in->tpl[i], &t); /* checked by prepare */
		wf_buf_puts(b, "{\"name\":");
		jstr(b, &in->tpl_name[i]);
		wf_buf_puts(b, ",\"template\":");
		wf_buf_json_str(b, t.p, t.n);
		wf_buf_putc(b, '}');
		if (i + 1 < in->n_tpl)
			wf_buf_putc(b, ',');
	}
	wf_buf_puts(b, "],\n");
}

static void j_config(struct wf_buf *b, const struct ht_in *in)
{
	wf_buf_printf(b, "{\n  \"add_bos_token\": %s,\n  \"add_eos_token\": %s,\n  \"added_tokens_decoder\": {",
		      in->add_bos ? "true" : "false", in->add_eos ? "true" : "false");
	bool first = true;
	for (size_t i = 0; i < in->n; i++) {
		if (!in->added[i])
			continue;
		wf_buf_printf(b, "%s\n    \"%zu\": ", first ? "" : ",", i);
		first = false;
		added_obj(b, in, i, false);
		b->len--; /* reopen the object for "special" */
		wf_buf_printf(b, ",\"special\":%s}", in->added[i] == 2 ? "true" : "false");
	}
	wf_buf_puts(b, first ? "},\n  \"bos_token\": " : "\n  },\n  \"bos_token\": ");
	j_tok_or_null(b, in, in->bos);
	wf_buf_puts(b, ",\n");
	j_chat(b, in);
	wf_buf_printf(b, "  \"clean_up_tokenization_spaces\": %s,\n  \"eos_token\": ", in->clean_spaces ? "true" : "false");
	j_tok_or_null(b, in, in->eos);
	wf_buf_puts(b, ",\n  \"model_max_length\": 1000000000000000019884624838656,\n  \"pad_token\": ");
	j_tok_or_null(b, in, in->pad);
	wf_buf_puts(b, ",\n  \"tokenizer_class\": \"PreTrainedTokenizerFast\",\n  \"unk_token\": ");
	j_tok_or_null(b, in, in->unk);
	wf_buf_puts(b, "\n}\n");
}

static void j_map(struct wf_buf *b, const struct ht_in *in)
{
	static const char *const names[] = {"bos_token", "eos_token", "pad_token", "unk_token"};
	const int64_t ids[] = {in->bos, in->eos, in->pad, in->unk};
	bool first = true;
	wf_buf_putc(b, '{');
	for (int k = 0; k < 4; k++) {
		if (ids[k] < 0)
			continue;
		wf_buf_printf(b, "%s\n  \"%s\": {\"content\":", first ? "" : ",", names[k]);
		first = false;
		jstr(b, &in->tok[ids[k]]);
		wf_buf_printf(b, ",\"lstrip\":false,\"normalized\":false,\"rstrip\":%s,\"single_word\":false}",
			      in->rstrip[ids[k]] ? "true" : "false");
	}
	wf_buf_puts(b, first ? "}\n" : "\n}\n");
}

static enum wf_err take(struct wf_buf *b, char **p, size_t *n, char *why)
{
	if (!wf_buf_finish(b)) {
		wf_buf_free(b);
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer files: out of memory");
	}
	*p = b->data;
	*n = b->len;
	*b = (struct wf_buf){0};
	return WF_OK;
}

/* Sets in's regex and flags from tokenizer.ggml.pre (absent: llama.cpp's
 * "default", as it does with a warning), by the table HF -> GGUF reads too. */
static enum wf_err ht_pre(struct ht_in *in, char *why)
{
	const uint8_t *s = in->pre_s.p ? in->pre_s.p : (const uint8_t *)"default";
	size_t n = in->pre_s.p ? in->pre_s.n : 7;
	const struct wf_tok_pre *row = wf_tok_pre_by_name(s, n);
	char q[96];
	if (!row)
		return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.pre: %s is not a pre-tokenizer weightfs maps",
			       wf_quote(q, sizeof q, s, n));
	in->regex = row->regex;
	in->ignore_merges = row->ignore_merges;
	in->add_bos = row->add_bos;
	in->clean_spaces = row->clean_spaces;
	return WF_OK;
}

static enum wf_err prepare(const struct wf_model *m, struct ht_in *in, char *why)
{
	enum wf_err e;
	if (!m || m->format != WF_FMT_GGUF)
		return wf_fail(why, WF_ERR_UNSUP, "not a GGUF model: no tokenizer key/values");
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	if ((e = ht_read(&v, in, why)))
		return e;
	if (!in->spm && !in->gemma4 && (e = ht_pre(in, why)))
		return e;
	if ((e = ht_read_flags(in, why)) || (e = mark_added(in, why)))
		return e;
	for (size_t i = 0; i < in->n_tpl; i++) {
		struct wf_tok_str t;
		if (!ht_str_of(in, &in->tpl[i], &t) || wf_tok_text_bad(t.p, t.n) || wf_tok_text_bad(in->tpl_name[i].p, in->tpl_name[i].n))
			return wf_fail(why, WF_ERR_UNSUP, "tokenizer.chat_template.NAME (the %zu-th): name or value not a UTF-8 string", i + 1);
	}
	return in->spm ? ht_spm_merges(in, why) : bl_merges(in, why);
}

enum wf_err wf_hf_tok_make(const struct wf_model *m, struct wf_hf_tok *out, char *why)
{
	struct ht_in in = {0};
	memset(out, 0, sizeof *out);
	enum wf_err e = prepare(m, &in, why);
	struct wf_buf b[4] = {{0}};
	if (e == WF_OK) {
		j_tokenizer(&b[0], &in);
		j_config(&b[1], &in);
		j_map(&b[2], &in);
		if (in.spm && ht_spm_loadable(&in))
			ht_spm_model(&in, &b[3]);
	}
	if (e == WF_OK && (e = take(&b[0], &out->tokenizer_json, &out->tokenizer_json_len, why)) == WF_OK &&
	    (e = take(&b[1], &out->tokenizer_config_json, &out->tokenizer_config_json_len, why)) == WF_OK &&
	    (e = take(&b[2], &out->special_tokens_map_json, &out->special_tokens_map_json_len, why)) == WF_OK &&
	    b[3].len)
		e = take(&b[3], &out->tokenizer_model, &out->tokenizer_model_len, why);
	if (e != WF_OK) {
		wf_hf_tok_free(out);
		for (int i = 0; i < 4; i++)
			wf_buf_free(&b[i]);
	}
	ht_in_free(&in);
	return e;
}

void wf_hf_tok_free(struct wf_hf_tok *t)
{
	free(t->tokenizer_json);
	free(t->tokenizer_config_json);
	free(t->special_tokens_map_json);
	free(t->tokenizer_model);
	memset(t, 0, sizeof *t);
}
