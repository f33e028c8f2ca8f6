/* wf_arch_olmo.c - OLMo 2 and OLMoE (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const olmo2_parts[] = {"attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
					  "attn_k_norm", "post_attention_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
					  "ffn_down", NULL};
static const char *const olmoe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					  "ffn_gate_inp", "attn_q_norm", "attn_k_norm", NULL};

static const struct wf_moe_form olmoe_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "olmoe", NULL, NULL, NULL, false};

static const struct wf_cfg_class olmo2_cfg[] = {
	{"olmo2", WF_DERIVE_KV_HEADS,
	 {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000}, {NULL, 0}}},
};
static const struct wf_cfg_class olmoe_cfg[] = {
	{"olmoe", WF_DERIVE_KV_HEADS,
	 {{"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000}, {"num_experts", 64},
	  {"num_experts_per_tok", 8}, {NULL, 0}}},
};

/* Olmo2Model: the base block; a sliding_window (Olmo 3's, written with its
 * per-layer pattern) is not made. */
static enum wf_err kv_olmo2(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	if (wf_cfg_hp(c, "sliding_window"))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: sliding_window: OLMo 3's sliding window is not made");
	return wf_kv_text(c, w, a->gguf, ftype);
}

/* OlmoeModel.set_gguf_parameters: the base block, then
 * add_layer_norm_rms_eps(1e-5), which keeps the base's place (the config
 * class's default makes it always there) and replaces its value. */
static enum wf_err kv_olmoe(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	c->rms_eps_1e5 = true;
	enum wf_err rc = wf_kv_text(c, w, a->gguf, ftype);
	c->rms_eps_1e5 = false;
	return rc;
}


/* Olmo2Model: norms after each sublayer (two of Gemma 2's four names), q/k
 * norms over the whole projection */
static enum wf_err cfg_olmoe(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			     const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	(void)d;
	enum wf_err rc = WF_OK;
	/* experts of intermediate_size; llama.cpp does not renormalise */
	if (at == WF_HFC_BODY && (rc = wf_hfc_experts(h, "num_experts")) == WF_OK) {
		wf_hfc_raw(h, "norm_topk_prob", "false");
		wf_hfc_raw(h, "clip_qkv", "null");
	}
	if (at == WF_HFC_ROPE)
		wf_hfc_scaling(h);
	return rc;
}

const struct wf_arch wf_arch_olmo2 = {
	.hf = {"Olmo2ForCausalLM", NULL}, .gguf = "olmo2", .canon = "olmo2", .names = {"olmo2", "Olmo2ForCausalLM"},
	.tok = WF_VOCAB_GPT2, .kvs = kv_olmo2, .parts = olmo2_parts,
	.maps = {{wf_arch_norms4, WF_ARRAY_LEN(wf_arch_norms4)}},
	.configs = olmo2_cfg, .n_configs = WF_ARRAY_LEN(olmo2_cfg),
	.hf_attn_bias = true,
};

const struct wf_arch wf_arch_olmoe = {
	.hf = {"OlmoeForCausalLM", NULL}, .gguf = "olmoe",
	.tok = WF_VOCAB_GPT2, .kvs = kv_olmoe, .parts = olmoe_parts, .experts = &olmoe_experts,
	.configs = olmoe_cfg, .n_configs = WF_ARRAY_LEN(olmoe_cfg),
	.config = cfg_olmoe,
};
