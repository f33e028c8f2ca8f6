/* wf_arch_gptoss.c - gpt-oss (GptOssForCausalLM): attention sinks, every
 * expert of a projection in one tensor, MXFP4 experts (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gptoss_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_sinks",
					   "post_attention_norm", "ffn_gate_inp", NULL};

/* gpt-oss's own names (gpt_oss.py; tensor_mapping.py): sinks (a ".weight"
 * added by filter_tensors), the router, the norm after attention. */
static const struct wf_part_map gptoss_map[] = {
	{"self_attn.sinks", "attn_sinks"},
	{"mlp.router", "ffn_gate_inp"},
	{"post_attention_layernorm", "post_attention_norm"},
};

/* GptOssModel.set_gguf_parameters: the base block (its file_type MOSTLY_MXFP4_MOE
 * when the experts were MXFP4: prepare_metadata sets it after the tensors,
 * in the key's first place), then the sliding window and the experts' width. */
static enum wf_err kv_gptoss(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = wf_kv_text(c, w, a->gguf, c->mxfp4 ? WF_FTYPE_MOSTLY_MXFP4_MOE : ftype);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "gpt-oss.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "gpt-oss.expert_feed_forward_length", KEYS("intermediate_size"), true, NULL);
	return rc;
}


const struct wf_arch wf_arch_gptoss = {
	.hf = {"GptOssForCausalLM", NULL}, .gguf = "gpt-oss",
	.tok = WF_VOCAB_GPT2, .packed_experts = true, .kvs = kv_gptoss, .parts = gptoss_parts,
	.maps = {{gptoss_map, WF_ARRAY_LEN(gptoss_map)}},
};
