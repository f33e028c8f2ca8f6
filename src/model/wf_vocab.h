/* wf_vocab.h - a Hugging Face model folder's tokenizer files turned into
 * the GGUF tokenizer.* key/values, in the order and with the values that
 * llama.cpp's convert_hf_to_gguf.py writes them (docs: hf-to-gguf.md
 * section 7; 5.5 for llama's special cases).
 *
 * What cannot be reproduced exactly is refused, never approximated: the
 * converter names the pre-tokenizer by hashing a tokenization, which needs
 * HF tokenizers; here the tokenizer.json pre_tokenizer, normalizer, model
 * flags and decoder are compared with the few known shapes (llama-bpe,
 * smaug-bpe, qwen2, gpt-2), and anything else is WF_ERR_UNSUP.
 */
#ifndef WF_VOCAB_H
#define WF_VOCAB_H

#include "base/wf_common.h"
#include "model/wf_gguf_w.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Most tokens a vocabulary may have (config vocab_size included): 8 times
 * the largest real one (Gemma 3's 262,144), so a hostile count costs at
 * most ~50 MiB of descriptors and never an unbounded loop. */
#define WF_VOCAB_MAX_TOKENS ((int64_t)1 << 21)

/* The files of a model folder the tokenizer comes from; any may be absent
 * (NULL).  The bytes are borrowed for the call only. */
struct wf_vocab_files {
	const char *tokenizer_json; size_t tokenizer_json_len;
	const char *tokenizer_config_json; size_t tokenizer_config_json_len;
	const uint8_t *tokenizer_model; size_t tokenizer_model_len; /* SentencePiece ModelProto */
	const char *config_json; size_t config_json_len;
	const char *added_tokens_json; size_t added_tokens_json_len;
	const char *special_tokens_map_json; size_t special_tokens_map_json_len; /* not read (see wf_vocab_bpe.c is_special_id) */
	const char *merges_txt; size_t merges_txt_len;
	const char *chat_template_jinja; size_t chat_template_jinja_len;
	const char *chat_template_json; size_t chat_template_json_len;
	/* the folder has additional_chat_templates/ *.jinja or tekken.json:
	 * converter paths this module does not take (refused) */
	bool has_additional_chat_templates;
	bool has_tekken_json;
};

/* Which converter path order the architecture uses (hf-to-gguf.md 7.1). */
enum wf_vocab_route {
	WF_VOCAB_LLAMA,  /* SentencePiece, then Llama-2-style tokenizer.json, then GPT-2 BPE; 32016/49152, add_prefix_space */
	WF_VOCAB_QWEN,   /* SentencePiece if tokenizer.model, else GPT-2 BPE */
	WF_VOCAB_GEMMA2, /* SentencePiece required, then add_space_prefix=false */
	WF_VOCAB_GEMMA3, /* SentencePiece + add_space_prefix=false if tokenizer.model, else GPT-2 BPE */
	WF_VOCAB_PHI3,   /* Phi-3's own SentencePiece routine, or GPT-2 BPE when tokenizer_class is GPT2Tokenizer */
	WF_VOCAB_GPT2,   /* GPT-2 BPE only (TextModel.set_vocab) */
	WF_VOCAB_GLM,    /* GPT-2 BPE, then GLM's bos/eot/unk/eom from its added tokens (_set_vocab_glm) */
	WF_VOCAB_GEMMA,  /* Gemma's: SentencePiece, CodeGemma's special ids, then add_space_prefix=false */
};

/* Writes the tokenizer key/values into w in the converter's order.
 * vocab_size: the hparams' vocab_size the converter sees (config.json's,
 * text_config merged, gemma3n's vocab_size_per_layer_input first), or -1
 * when absent.  Returns WF_OK; WF_ERR_UNSUP or WF_ERR_FORMAT with one line
 * in err (WF_ERRLEN bytes) naming the file and field, untrusted text
 * quoted, when the tokenizer cannot be mapped exactly; WF_ERR_NOMEM.  On
 * failure some key/values may already be in w: the caller drops it. */
enum wf_err wf_vocab_write(const struct wf_vocab_files *f, enum wf_vocab_route route, int64_t vocab_size,
			   struct wf_gguf_w *w, char *err);

/* The lengths a converter class reads off the tokenizer besides writing
 * it (Gemma3Model.modify_tensors cuts token_embd to them, hf-to-gguf.md
 * 3.3): what wf_vocab_write would write with the same arguments, not
 * written. */
struct wf_vocab_len {
	uint64_t n_tokens; /* tokenizer.ggml.tokens' length */
	bool spm;          /* the tokens are tokenizer.model's (a SentencePiece path) */
	int64_t tj_vocab;  /* entries of tokenizer.json's model.vocab, or -1: no tokenizer.json or no such object */
	int64_t tj_added;  /* entries of its added_tokens, or -1: none, or not a list */
};

/* Fills *out as above.  Returns WF_OK, or wf_vocab_write's failure (the
 * same line in err) when the tokenizer cannot be written. */
enum wf_err wf_vocab_len(const struct wf_vocab_files *f, enum wf_vocab_route route, int64_t vocab_size,
			 struct wf_vocab_len *out, char *err);

#endif
