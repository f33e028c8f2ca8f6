/* wf_arch_glm4moe.c - GLM-4.5 (Glm4MoeForCausalLM): shared experts, the
 * router bias, leading dense layers and the MTP block (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const glm4moe_parts[] = {
	"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm", "post_attention_norm",
	"ffn_gate", "ffn_up", "ffn_down", "ffn_gate_inp", "exp_probs_b", "ffn_gate_shexp", "ffn_up_shexp",
	"ffn_down_shexp", "nextn.eh_proj", "nextn.embed_tokens", "nextn.enorm", "nextn.hnorm", "nextn.shared_head_head",
	"nextn.shared_head_norm", NULL};

/* GLM-4.5 (moe-and-mla.md 7): GLM4_MOE has ATTN_POST_NORM and no
 * FFN_NORM, so post_attention_layernorm is post_attention_norm; the MTP
 * block's own tensors (tensor_mapping.py NEXTN_*). */
static const struct wf_part_map glm4moe_map[] = {
	{"post_attention_layernorm", "post_attention_norm"},
	{"eh_proj", "nextn.eh_proj"},
	{"embed_tokens", "nextn.embed_tokens"},
	{"enorm", "nextn.enorm"},
	{"hnorm", "nextn.hnorm"},
	{"shared_head.head", "nextn.shared_head_head"},
	{"shared_head.norm", "nextn.shared_head_norm"},
};

/* Glm4MoeModel.modify_tensors stacks hparams["n_routed_experts"] of each
 * layer, the MTP block's too (block_count includes it) */
static const struct wf_moe_form glm4_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "glm4_moe", "n_routed_experts", "first_k_dense_replace", "num_nextn_predict_layers", false};

/* Glm4MoeConfig (norm_topk_prob's default, true, in kv_glm4moe) */
static const struct wf_cfg_class glm4moe_cfg[] = {
	{"glm4_moe", 0,
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000},
	  {"num_key_value_heads", 8}, {"partial_rotary_factor", 0.5}, {"moe_intermediate_size", 1408},
	  {"num_experts_per_tok", 8}, {"n_shared_experts", 1}, {"n_routed_experts", 128},
	  {"routed_scaling_factor", 1.0}, {"n_group", 1}, {"topk_group", 1}, {"first_k_dense_replace", 1},
	  {NULL, 0}}},
};

/* Glm4MoeModel.set_gguf_parameters (moe-and-mla.md 7): the base block
 * (block_count with the MTP blocks, expert_count from n_routed_experts),
 * then the rotary part of head_dim, the expert fields, gating 2 always,
 * expert_weights_norm whenever norm_topk_prob is set (false too), and
 * nextn_predict_layers. */
static enum wf_err kv_glm4moe(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[96];
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	c->count_key = "n_routed_experts";
	c->gating = 2;
	enum wf_err rc = wf_kv_text(c, w, a->gguf, ftype);
	c->count_key = NULL;
	c->gating = 0;
	if (rc != WF_OK)
		return rc;
	/* int(head_dim * rope_parameters.get("partial_rotary_factor", 0.5)),
	 * head_dim from hidden_size // num_attention_heads when null */
	uint32_t hd, hidden, heads;
	const cJSON *hv = wf_cfg_not_null(wf_cfg_hp(c, "head_dim"));
	if (hv ? !wf_cfg_u32(hv, &hd)
	       : (!wf_cfg_u32(wf_cfg_hp(c, "hidden_size"), &hidden) || !wf_cfg_u32(wf_cfg_hp(c, "num_attention_heads"), &heads) || !heads))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing or not a whole number",
			       hv ? "head_dim" : "hidden_size, num_attention_heads");
	if (!hv)
		hd = hidden / heads;
	struct wf_rope r;
	wf_cfg_rope(c, &r);
	if (r.prf && !cJSON_IsNumber(r.prf))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: partial_rotary_factor: not a number");
	double rot = hd * (r.prf ? r.prf->valuedouble : 0.5);
	if (!(rot >= 0 && rot < 4294967296.0))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: partial_rotary_factor: head_dim times it is not a count");
	wf_gguf_w_u32(w, K("rope.dimension_count"), (uint32_t)rot);
	rc = wf_cfg_put_u32(c, w, K("expert_feed_forward_length"), KEYS("moe_intermediate_size"), false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("expert_shared_count"), KEYS("n_shared_experts"), false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("leading_dense_block_count"), KEYS("first_k_dense_replace"), false, NULL);
	if (rc == WF_OK && !wf_gguf_w_has(w, K("expert_gating_func")))
		wf_gguf_w_u32(w, k, 2);
	if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, K("expert_weights_scale"), KEYS("routed_scaling_factor"));
	const cJSON *nt = wf_cfg_hp(c, "norm_topk_prob");
	if (rc == WF_OK && nt && !cJSON_IsNull(nt) && !cJSON_IsBool(nt))
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: norm_topk_prob: not a boolean");
	if (rc == WF_OK && !cJSON_IsNull(nt)) /* Glm4MoeConfig's default: true */
		wf_gguf_w_bool(w, K("expert_weights_norm"), !nt || cJSON_IsTrue(nt));
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("nextn_predict_layers"), KEYS("num_nextn_predict_layers"), false, NULL);
#undef K
	return rc;
}


/* GLM-4.5's fields (moe-and-mla.md 7, hf/ view): what llama.cpp's
 * glm4moe graph runs, as Glm4MoeConfig says it.  The MTP blocks stay in
 * the file (transformers ignores their tensors) and out of
 * num_hidden_layers. */
static enum wf_err glm4moe_fields(struct wf_hfc *h, const struct wf_model *m, const struct wf_hfc_dims *d)
{
	int64_t used, ff, shared, v;
	double scale;
	enum wf_err rc;
	if ((rc = wf_hfc_need(h, "expert_used_count", 1, h->n_exp, &used)) != WF_OK ||
	    (rc = wf_hfc_need(h, "expert_feed_forward_length", 1, 1 << 24, &ff)) != WF_OK ||
	    (rc = wf_hfc_need(h, "expert_shared_count", 0, 1 << 16, &shared)) != WF_OK)
		return rc;
	/* llama.cpp: no key is sigmoid; transformers' router has no other */
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_gating_func"), &v) && v != 2)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld, but transformers' Glm4Moe routes by sigmoid (2) "
			       "only", h->key, (long long)v);
	wf_hfc_int(h, "n_routed_experts", h->n_exp);
	wf_hfc_int(h, "num_experts_per_tok", used);
	wf_hfc_int(h, "moe_intermediate_size", ff);
	wf_hfc_int(h, "n_shared_experts", shared);
	wf_hfc_int(h, "first_k_dense_replace", h->dense);
	/* llama.cpp scales by expert_weights_scale unless it is 0 or absent */
	if (!wf_gguf_get_num(&h->kv, wf_hfc_key(h, "expert_weights_scale"), &scale) || scale == 0)
		scale = 1.0;
	wf_hfc_num(h, "routed_scaling_factor", scale, true);
	wf_hfc_raw(h, "norm_topk_prob", wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_weights_norm"), &v) && v ? "true" : "false");
	wf_hfc_int(h, "n_group", wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_group_count"), &v) && v > 1 ? v : 1);
	wf_hfc_int(h, "topk_group", wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_group_used_count"), &v) && v > 1 ? v : 1);
	wf_hfc_num(h, "partial_rotary_factor", (double)d->rot / (double)d->head_dim, false);
	wf_hfc_raw(h, "use_qk_norm", wf_hfc_has(m, "blk.0.attn_q_norm.weight") ? "true" : "false");
	wf_hfc_raw(h, "attention_bias", wf_hfc_has(m, "blk.0.attn_q.bias") ? "true" : "false");
	wf_hfc_int(h, "num_nextn_predict_layers", h->n_nextn);
	return WF_OK;
}

static enum wf_err cfg_glm4moe(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			       const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY)
		return glm4moe_fields(h, m, d);
	if (at == WF_HFC_ROPE)
		wf_hfc_scaling(h);
	return WF_OK;
}

const struct wf_arch wf_arch_glm4moe = {
	.hf = {"Glm4MoeForCausalLM", NULL}, .gguf = "glm4moe",
	.tok = WF_VOCAB_GLM, .kvs = kv_glm4moe, .parts = glm4moe_parts, .experts = &glm4_experts,
	.maps = {{glm4moe_map, WF_ARRAY_LEN(glm4moe_map)},
		 {wf_arch_shared_experts, WF_ARRAY_LEN(wf_arch_shared_experts)}},
	.configs = glm4moe_cfg, .n_configs = WF_ARRAY_LEN(glm4moe_cfg),
	.config = cfg_glm4moe,
};
