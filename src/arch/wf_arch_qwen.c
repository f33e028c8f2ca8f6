/* wf_arch_qwen.c - Qwen2 and Qwen3, and their mixtures of experts
 * (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const qwen3_parts[] = {"attn_norm", "attn_q",   "attn_k",   "attn_v",  "attn_output", "ffn_norm",
					  "ffn_gate",  "ffn_up",   "ffn_down", "attn_q_norm", "attn_k_norm", NULL};
static const char *const qwen2moe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					     "ffn_gate_inp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
					     "ffn_gate_inp_shexp", NULL};
static const char *const qwen3moe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					     "ffn_gate_inp", "attn_q_norm", "attn_k_norm", NULL};

static const struct wf_moe_form qwen2_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "qwen2_moe", NULL, NULL, NULL, true};
static const struct wf_moe_form qwen3_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "qwen3_moe", NULL, NULL, NULL, true};

static const struct wf_cfg_class qwen2_cfg[] = {
	{"qwen2", 0,
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 32}, {NULL, 0}}},
};
static const struct wf_cfg_class qwen3_cfg[] = {
	{"qwen3", 0,
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 32}, {"head_dim", 128}, {NULL, 0}}},
};

/* Qwen2MoeModel.set_gguf_parameters adds the experts' widths, each if
 * config.json has it. */
static enum wf_err kv_qwen(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = wf_kv_text(c, w, a->gguf, ftype);
	char k[96];
	if (rc == WF_OK && a->experts) {
		snprintf(k, sizeof k, "%s.expert_feed_forward_length", a->gguf);
		rc = wf_cfg_put_u32(c, w, k, KEYS("moe_intermediate_size"), false, NULL);
	}
	if (rc == WF_OK && a->experts) {
		snprintf(k, sizeof k, "%s.expert_shared_feed_forward_length", a->gguf);
		rc = wf_cfg_put_u32(c, w, k, KEYS("shared_expert_intermediate_size"), false, NULL);
	}
	return rc;
}


/* Qwen2-MoE's and Qwen3-MoE's fields (moe-and-mla.md 2-3, hf/ view):
 * what llama.cpp runs is what transformers computes with them (Qwen2-MoE's
 * weights are not renormalised, Qwen3-MoE's are). */
static enum wf_err qwen_moe(struct wf_hfc *h, enum wf_hfc_at at, bool norm_topk)
{
	int64_t ff;
	enum wf_err rc = WF_OK;
	if (at == WF_HFC_ROPE)
		wf_hfc_scaling(h);
	if (at != WF_HFC_BODY || (rc = wf_hfc_experts(h, "num_experts")) != WF_OK ||
	    (rc = wf_hfc_need(h, "expert_feed_forward_length", 1, 1 << 24, &ff)) != WF_OK)
		return rc;
	wf_hfc_int(h, "moe_intermediate_size", ff);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_shared_feed_forward_length"), &ff))
		wf_hfc_int(h, "shared_expert_intermediate_size", ff);
	wf_hfc_raw(h, "norm_topk_prob", norm_topk ? "true" : "false");
	wf_hfc_int(h, "decoder_sparse_step", 1);
	wf_hfc_raw(h, "mlp_only_layers", "[]");
	return WF_OK;
}

static enum wf_err cfg_qwen2moe(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
				const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	(void)d;
	return qwen_moe(h, at, false);
}

static enum wf_err cfg_qwen3moe(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
				const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	(void)d;
	return qwen_moe(h, at, true);
}

const struct wf_arch wf_arch_qwen2 = {
	.hf = {"Qwen2ForCausalLM", NULL}, .gguf = "qwen2", .canon = "qwen2", .names = {"qwen2", "Qwen2ForCausalLM"},
	.tok = WF_VOCAB_QWEN, .kvs = kv_qwen, .parts = wf_arch_llama_parts,
	.configs = qwen2_cfg, .n_configs = WF_ARRAY_LEN(qwen2_cfg),
};

const struct wf_arch wf_arch_qwen3 = {
	.hf = {"Qwen3ForCausalLM", NULL}, .gguf = "qwen3", .canon = "qwen3", .names = {"qwen3", "Qwen3ForCausalLM"},
	.tok = WF_VOCAB_QWEN, .kvs = kv_qwen, .parts = qwen3_parts,
	.configs = qwen3_cfg, .n_configs = WF_ARRAY_LEN(qwen3_cfg),
	.hf_attn_bias = true,
};

const struct wf_arch wf_arch_qwen2moe = {
	.hf = {"Qwen2MoeForCausalLM", NULL}, .gguf = "qwen2moe",
	.tok = WF_VOCAB_QWEN, .kvs = kv_qwen, .parts = qwen2moe_parts, .experts = &qwen2_experts,
	.config = cfg_qwen2moe,
};

const struct wf_arch wf_arch_qwen3moe = {
	.hf = {"Qwen3MoeForCausalLM", NULL}, .gguf = "qwen3moe",
	.tok = WF_VOCAB_QWEN, .kvs = kv_qwen, .parts = qwen3moe_parts, .experts = &qwen3_experts,
	.hf_attn_bias = true, .config = cfg_qwen3moe,
};
