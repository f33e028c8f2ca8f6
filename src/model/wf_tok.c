/* wf_tok.c - the token model both tokenizer directions share (wf_tok.h).
 *
 * The pre-tokenizer table: only the types whose regexes were checked
 * against llama.cpp on a real vocabulary (tests/clients/check_hf_tok.py),
 * or that share such regexes, are here; any other value is refused, in
 * either direction. */
#include "model/wf_tok.h"

#include "base/wf_common.h"

#include <string.h>

#define CONTRACTIONS "(?:'[sS]|'[tT]|'[rR][eE]|'[vV][eE]|'[mM]|'[lL][lL]|'[dD])"
#define R_LLAMA3 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define R_QWEN2 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define R_QWEN35 CONTRACTIONS "|[^\\r\\n\\p{L}\\p{N}]?[\\p{L}\\p{M}]+|\\p{N}| ?[^\\s\\p{L}\\p{M}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define R_GPT2 "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)"
#define R_CJK "[一-龥ࠀ-一가-퟿]+"

static const char *const rx_llama3[] = {R_LLAMA3, NULL};
static const char *const rx_qwen2[] = {R_QWEN2, NULL};
static const char *const rx_qwen35[] = {R_QWEN35, NULL};
static const char *const rx_gpt2[] = {R_GPT2, NULL};
static const char *const rx_starcoder[] = {"\\p{N}", R_GPT2, NULL};
static const char *const rx_falcon[] = {"[\\p{P}\\$\\+<=>\\^~\\|`]+", R_GPT2, "[0-9][0-9][0-9]", NULL};
static const char *const rx_default[] = {"[\\p{P}\\$\\+<=>\\^~\\|]+", R_GPT2, "\\p{N}+", "[0-9][0-9][0-9]", NULL};
static const char *const rx_ds_llm[] = {
	"[\r\n]",
	"\\s?[A-Za-zµÀ-ÖØ-öø-ƺƼ-ƿǄ-ʓʕ-ʯͰ-ͳͶͷͻ-ͽͿΆΈ-ΊΌΎ-ΡΣ-ϵϷ-ҁҊ-ԯԱ-ՖႠ-ჅᎠ-Ᏽᏸ-ᏽᲐ-ᲺᲽ-Ჿᴀ-ᴫᵫ-ᵷᵹ-ᶚḀ-ἕἘ-Ἕἠ-ὅὈ-Ὅὐ-ὗὙὛὝὟ-ώᾀ-ᾴᾶ-ᾼιῂ-ῄῆ-ῌῐ-ΐῖ-Ίῠ-Ῥῲ-ῴῶ-ῼℂℇℊ-ℓℕℙ-ℝℤΩℨK-ℭℯ-ℴℹℼ-ℿⅅ-ⅉⅎↃↄⰀ-ⱻⱾ-ⳤⳫ-ⳮⳲⳳꙀ-ꙭꚀ-ꚛꜢ-ꝯꝱ-ꞇꞋ-ꞎꭰ-ꮿﬀ-ﬆﬓ-ﬗＡ-Ｚａ-ｚ𐐀-𐑏𐒰-𐓓𐓘-𐓻𐲀-𐲲𐳀-𐳲𑢠-𑣟𞤀-𞥃]+",
	"\\s?[!-/:-~！-／：-～‘-‟　-。]+",
	"\\s+$",
	R_CJK,
	"\\p{N}+",
	NULL,
};
static const char *const rx_ds_coder[] = {"[\r\n]", "\\s?\\p{L}+", "\\s?\\p{P}+", R_CJK, "\\p{N}", NULL};

/* The Split regexes of tokenizer.json (JSON-unescaped) that the converter's
 * hashes name llama-bpe / smaug-bpe and qwen2: what llama.cpp's
 * llm_tokenizer_bpe spells with explicit case classes, HF spells (?i:...). */
#define HF_LLAMA3                                                                                                      \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "                                     \
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"
#define HF_QWEN2                                                                                                       \
	"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "                                          \
	"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+"

static const struct wf_tok_pre rows[] = {
	{"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano", rx_llama3, true, true, true,
	 "llama-bpe", HF_LLAMA3, false},
	{"dbrx|smaug-bpe", rx_llama3, false, false, true, "smaug-bpe", HF_LLAMA3, false},
	{"qwen2|deepseek-r1-qwen|kormo|f2llmv2", rx_qwen2, false, false, false, "qwen2", HF_QWEN2, true},
	{"stablelm2", rx_qwen2, false, false, true, NULL, NULL, false},
	{"qwen35", rx_qwen35, false, false, false, NULL, NULL, false},
	{"gpt-2|phi-2|mpt|olmo|jais|exaone4|gigachat|a.x-4.0|mellum|modern-bert|jina-es|jina-de|jina-v2-es|jina-v2-de",
	 rx_gpt2, false, false, true, "gpt-2", NULL, false},
	{"trillion|granite-docling", rx_gpt2, false, false, false, NULL, NULL, false},
	{"starcoder|refact|codeshell|exaone|minerva-7b|mellum2", rx_starcoder, false, false, true, NULL, NULL, false},
	{"command-r|smollm", rx_starcoder, false, false, false, NULL, NULL, false},
	{"falcon", rx_falcon, false, false, true, NULL, NULL, false},
	{"deepseek-llm", rx_ds_llm, false, false, false, NULL, NULL, false},
	{"deepseek-coder", rx_ds_coder, false, false, false, NULL, NULL, false},
	{"default", rx_default, false, false, true, NULL, NULL, false},
};

static bool in_list(const char *names, const uint8_t *s, size_t n)
{
	for (const char *p = names;;) {
		const char *e = strchr(p, '|');
		size_t k = e ? (size_t)(e - p) : strlen(p);
		if (k == n && memcmp(p, s, n) == 0)
			return true;
		if (!e)
			return false;
		p = e + 1;
	}
}

const struct wf_tok_pre *wf_tok_pre_by_name(const void *s, size_t n)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(rows); i++)
		if (in_list(rows[i].names, s, n))
			return &rows[i];
	return NULL;
}

const struct wf_tok_pre *wf_tok_pre_by_shape(const char *split, bool ignore_merges)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(rows); i++) {
		const struct wf_tok_pre *r = &rows[i];
		if (r->hf_name && r->ignore_merges == ignore_merges &&
		    (split ? r->hf_split && strcmp(split, r->hf_split) == 0 : !r->hf_split))
			return r;
	}
	return NULL;
}

const char *wf_tok_text_bad(const void *p, size_t n)
{
	const uint8_t *z = n ? memchr(p, 0, n) : NULL;
	/* an invalid sequence before the first NUL is named first, as a scan from the start meets it */
	if (!wf_utf8_valid(p, z ? (size_t)(z - (const uint8_t *)p) : n))
		return "not valid UTF-8";
	return z ? "holds U+0000 (valid UTF-8, but a NUL is refused)" : NULL;
}
