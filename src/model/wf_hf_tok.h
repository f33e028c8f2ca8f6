/* wf_hf_tok.h - the tokenizer files of the hf/ folder of a GGUF model:
 * tokenizer.json, tokenizer_config.json, special_tokens_map.json and, for
 * a SentencePiece vocabulary, tokenizer.model, made from the GGUF's
 * tokenizer.* key/values so that Hugging Face tokenizers gives the same
 * ids as llama.cpp on the GGUF (docs/hf.md, "Tokenizer files").
 *
 * What cannot be mapped exactly is refused, never approximated.
 */
#ifndef WF_HF_TOK_H
#define WF_HF_TOK_H

#include "base/wf_common.h"
#include "model/wf_model.h"

#include <stddef.h>

struct wf_hf_tok {
	char *tokenizer_json; size_t tokenizer_json_len;
	char *tokenizer_config_json; size_t tokenizer_config_json_len;
	char *special_tokens_map_json; size_t special_tokens_map_json_len;
	char *tokenizer_model; size_t tokenizer_model_len; /* NULL unless SentencePiece (and loadable by it) */
};

/* Makes the files from m (a parsed GGUF, format WF_FMT_GGUF; only its
 * data/data_len are read, every length checked again).  Returns WF_OK
 * with *out owning its buffers (each NUL-terminated); WF_ERR_UNSUP with
 * one line in why (WF_ERRLEN bytes) naming the key and what is wrong when
 * the file has no tokenizer keys (then there are no tokenizer files) or
 * a vocabulary that cannot be mapped exactly; WF_ERR_NOMEM.  On failure
 * *out is all NULL. */
enum wf_err wf_hf_tok_make(const struct wf_model *m, struct wf_hf_tok *out, char *why);

/* Frees what wf_hf_tok_make made; safe on a zeroed struct, which it leaves. */
void wf_hf_tok_free(struct wf_hf_tok *t);

#endif
