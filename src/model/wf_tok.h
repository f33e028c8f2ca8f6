/* wf_tok.h - the token model both tokenizer directions share: a folder's
 * tokenizer files to GGUF key/values (wf_vocab*) and a GGUF's key/values
 * to hf/'s tokenizer files (wf_hf_tok*).  What a token is (its text and
 * type), which text a token may hold, and which pre-tokenizers llama.cpp
 * reproduces are facts of the two runtimes, not of one direction: each is
 * written here once and both directions read it. */
#ifndef WF_TOK_H
#define WF_TOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A token's type as GGUF stores it (gguf-py TokenType, llama.cpp's
 * llama_token_type): tokenizer.ggml.token_type's values. */
enum wf_tok_type {
	WF_TOK_NORMAL = 1,
	WF_TOK_UNKNOWN = 2,
	WF_TOK_CONTROL = 3,
	WF_TOK_USER = 4,
	WF_TOK_UNUSED = 5,
	WF_TOK_BYTE = 6,
};

/* Text inside a tokenizer file or a GGUF value, not NUL-terminated.  The
 * JSON side compares it as characters (s), the GGUF side as bytes (p):
 * one view, two names for its pointer. */
struct wf_tok_str {
	union {
		const char *s;
		const uint8_t *p;
	};
	size_t n;
};

/* NULL when p[0..n) may be a token's text in both runtimes (valid UTF-8
 * without U+0000), else what is wrong with it, for a message: "not valid
 * UTF-8", or that it holds U+0000 (valid UTF-8, but llama.cpp's C strings
 * would cut it), whichever comes first. */
const char *wf_tok_text_bad(const void *p, size_t n);

/* One pre-tokenizer llama.cpp reproduces (llama-vocab.cpp: the split
 * regexes llm_tokenizer_bpe applies one after the other, and the flags
 * its load() sets for that tokenizer.ggml.pre), with the tokenizer.json
 * shape convert_hf_to_gguf.py names it from, when weightfs recognises one. */
struct wf_tok_pre {
	const char *names;          /* '|'-separated tokenizer.ggml.pre values */
	const char *const *regex;   /* llama.cpp's split regexes, NULL-terminated */
	bool ignore_merges, add_bos, clean_spaces;
	/* HF -> GGUF: the name written for a tokenizer.json whose
	 * pre_tokenizer is ByteLevel alone (hf_split NULL) or
	 * Sequence[Split(hf_split), ByteLevel] and whose model.ignore_merges
	 * equals ignore_merges; NULL when no tokenizer.json gives this row */
	const char *hf_name;
	const char *hf_split;       /* the Split regex as tokenizer.json spells it (JSON-unescaped) */
	bool hf_nfc;                /* an NFC normalizer is allowed too (the converter's qwen2 entry was
				     * hashed with one; llama.cpp does not apply it, nor does the
				     * converter's output) */
};

/* The row tokenizer.ggml.pre = s[0..n) names; NULL when llama.cpp's value
 * is not one weightfs maps. */
const struct wf_tok_pre *wf_tok_pre_by_name(const void *s, size_t n);

/* The row a tokenizer.json's byte-level pre-tokenizer stands for: split
 * is its Split regex (NULL for ByteLevel alone), ignore_merges its
 * model.ignore_merges; NULL when the converter's hash would name a
 * pre-tokenizer weightfs cannot tell from the file's shape. */
const struct wf_tok_pre *wf_tok_pre_by_shape(const char *split, bool ignore_merges);

#endif
