/* wf_hf_tok_pre.c - llama.cpp's pre-tokenizer per tokenizer.ggml.pre for
 * byte-level (gpt2) vocabularies: the split regexes it applies one after
 * the other (llama-vocab.cpp, llm_tokenizer_bpe's constructor) and the
 * flags its load() sets (ignore_merges, add_bos, clean_spaces).  Only the
 * types whose regexes were checked against llama.cpp on a real vocabulary
 * (tests/clients/check_hf_tok.py), or that share such regexes, are here;
 * any other value is refused. */
#include "model/wf_hf_tok_int.h"

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

struct pre_row {
	const char *names; /* '|'-separated tokenizer.ggml.pre values */
	const char *const *regex;
	bool ignore_merges, add_bos, clean_spaces;
};

static const struct pre_row rows[] = {
	{"llama3|llama-v3|llama-bpe|falcon3|falcon-h1|pixtral|midm-2.0|lfm2|jina-v5-nano", rx_llama3, true, true, true},
	{"dbrx|smaug-bpe", rx_llama3, false, false, true},
	{"qwen2|deepseek-r1-qwen|kormo|f2llmv2", rx_qwen2, false, false, false},
	{"stablelm2", rx_qwen2, false, false, true},
	{"qwen35", rx_qwen35, false, false, false},
	{"gpt-2|phi-2|mpt|olmo|jais|exaone4|gigachat|a.x-4.0|mellum|modern-bert|jina-es|jina-de|jina-v2-es|jina-v2-de",
	 rx_gpt2, false, false, true},
	{"trillion|granite-docling", rx_gpt2, false, false, false},
	{"starcoder|refact|codeshell|exaone|minerva-7b|mellum2", rx_starcoder, false, false, true},
	{"command-r|smollm", rx_starcoder, false, false, false},
	{"falcon", rx_falcon, false, false, true},
	{"deepseek-llm", rx_ds_llm, false, false, false},
	{"deepseek-coder", rx_ds_coder, false, false, false},
	{"default", rx_default, false, false, true},
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

/* Sets in's regex and flags from tokenizer.ggml.pre (absent: llama.cpp's
 * "default", as it does with a warning). */
enum wf_err ht_pre(struct ht_in *in, char *why)
{
	const uint8_t *s = in->pre_s.p ? in->pre_s.p : (const uint8_t *)"default";
	size_t n = in->pre_s.p ? in->pre_s.n : 7;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++)
		if (in_list(rows[i].names, s, n)) {
			in->regex = rows[i].regex;
			in->ignore_merges = rows[i].ignore_merges;
			in->add_bos = rows[i].add_bos;
			in->clean_spaces = rows[i].clean_spaces;
			return WF_OK;
		}
	char q[96];
	return wf_fail(why, WF_ERR_UNSUP, "tokenizer.ggml.pre: %s is not a pre-tokenizer weightfs maps", wf_quote(q, sizeof q, s, n));
}
