/* wf_hf_file.h - hf/: a GGUF model as the Hugging Face folder transformers
 * builds from it, made on read (the plan: wf_arch.h, wf_arch_hf_plan).
 *
 * config.json and generation_config.json are texts made once; the folder's
 * model.safetensors is made like model.gguf (wf_gguf_file.h): its header
 * once, each read converting only the tensors' bytes that cover it (HF
 * names, q/k rows in HF's order, Gemma's norms less 1, the chosen dtype).
 */
#ifndef WF_HF_FILE_H
#define WF_HF_FILE_H

#include "base/wf_common.h"
#include "arch/wf_arch.h"
#include "model/wf_hf_tok.h"
#include "model/wf_model.h"
#include "view/wf_gguf_file.h"

struct wf_hf_file {
	/* the model, or none (model_why says why) */
	char *config_json;          /* config.json */
	size_t config_len;
	char *gen_json;             /* generation_config.json */
	size_t gen_len;
	struct wf_gguf_file *st;    /* model.safetensors: header and tensors, laid out back to back */
	char model_why[WF_ERRLEN];
	/* the tokenizer files (wf_hf_tok.h), or none (tok_why says why) */
	struct wf_hf_tok tok;
	bool has_tok;
	bool tok_tried;             /* the tokenizer files were asked for (made, or tok_why says why not) */
	char tok_why[WF_ERRLEN];
};

/* Makes hf/ for the GGUF model m, tensors in dtype vk (WF_VK_F32, F16 or
 * BF16): the model's files when transformers has a model for it
 * (wf_arch_hf_plan), the tokenizer's when it maps (wf_hf_tok_make), each
 * part with the reason when it is absent.  Returns WF_OK with *out set
 * when there is at least one of the two; WF_ERR_UNSUP with both reasons in
 * why when there is neither; WF_ERR_NOMEM. */
enum wf_err wf_hf_file_new(const struct wf_model *m, enum wf_vk vk, struct wf_hf_file **out, char *why);

/* The same, with the tokenizer files only when tok is set (a reader of
 * the tensors alone skips their cost: most of the time of opening a
 * model of a large vocabulary); wf_hf_file_add_tok makes them later. */
enum wf_err wf_hf_file_make(const struct wf_model *m, enum wf_vk vk, bool tok, struct wf_hf_file **out, char *why);

/* Makes h's tokenizer files if they were not asked for yet; WF_OK (with
 * h->has_tok false and h->tok_why when they cannot be made) or
 * WF_ERR_NOMEM. */
enum wf_err wf_hf_file_add_tok(struct wf_hf_file *h, const struct wf_model *m);

void wf_hf_file_free(struct wf_hf_file *h);

#endif
