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
#include "model/wf_arch.h"
#include "model/wf_model.h"
#include "view/wf_gguf_file.h"

struct wf_hf_file {
	char *config_json;          /* config.json */
	size_t config_len;
	char *gen_json;             /* generation_config.json */
	size_t gen_len;
	struct wf_gguf_file *st;    /* model.safetensors: header and tensors, laid out back to back */
};

/* Makes hf/ for the GGUF model m, tensors in dtype vk (WF_VK_F32, F16 or
 * BF16).  Returns WF_OK with *out set; WF_ERR_UNSUP with one line in why
 * when transformers would have no model for it (wf_arch_hf_plan);
 * WF_ERR_NOMEM. */
enum wf_err wf_hf_file_new(const struct wf_model *m, enum wf_vk vk, struct wf_hf_file **out, char *why);

void wf_hf_file_free(struct wf_hf_file *h);

#endif
