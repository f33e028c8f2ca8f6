/* wf_arch_deepseek2.c - DeepSeek V2 and V3 (DeepseekV2Model): MLA with
 * kv_b_proj split, shared experts, the router's score-correction bias,
 * leading dense layers (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const deepseek2_parts[] = {"attn_norm", "attn_q", "attn_q_a", "attn_q_a_norm", "attn_q_b",
					      "attn_kv_a_mqa", "attn_kv_a_norm", "attn_kv_b", "attn_output", "ffn_norm",
					      "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_inp", "exp_probs_b",
					      "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", NULL};

/* DeepSeek's shared experts (plural: layer_map's rows are Qwen2-MoE's)
 * and router bias (filter_tensors makes e_score_correction_bias
 * e_score_correction.bias), which GLM-4.5 has too. */
const struct wf_part_map wf_arch_shared_experts[4] = {
	{"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
	{"mlp.shared_experts.up_proj", "ffn_up_shexp"},
	{"mlp.shared_experts.down_proj", "ffn_down_shexp"},
	{"mlp.gate.e_score_correction", "exp_probs_b"},
};

/* DeepSeek's MLA (moe-and-mla.md 6.1); kv_b_proj is split in two
 * (mla_split). */
static const struct wf_part_map deepseek2_map[] = {
	{"self_attn.q_a_proj", "attn_q_a"},
	{"self_attn.q_a_layernorm", "attn_q_a_norm"},
	{"self_attn.q_b_proj", "attn_q_b"},
	{"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
	{"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
	{"self_attn.kv_b_proj", "attn_kv_b"},
};

static const struct wf_moe_form deepseek_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "deepseek_v3", NULL, "first_k_dense_replace", NULL, false};

/* DeepseekV2Model.set_gguf_parameters: rms_norm_eps defaults to 1e-6 */
static const struct wf_cfg_class deepseek_cfg[] = {
	{"deepseek_v2", WF_DERIVE_MLA, {{"rms_norm_eps", 1e-6}, {NULL, 0}}},
	{"deepseek_v3", WF_DERIVE_MLA, {{"rms_norm_eps", 1e-6}, {NULL, 0}}},
};

/* llama.cpp's group-limited routing splits the experts into n_group equal
 * groups and keeps topk_group of them: counts it could not run are
 * refused. */
static enum wf_err ds_groups_ok(struct wf_cfg *c)
{
	uint32_t ne = 0, ng = 1, tg = 1;
	const cJSON *gj = wf_cfg_not_null(wf_cfg_hp(c, "n_group")), *tj = wf_cfg_not_null(wf_cfg_hp(c, "topk_group"));
	wf_cfg_u32(wf_cfg_not_null(wf_cfg_hp(c, "n_routed_experts")), &ne);
	if ((gj && (!wf_cfg_u32(gj, &ng) || !ng)) || (tj && (!wf_cfg_u32(tj, &tg) || !tg)))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not an integer from 1", gj && (!wf_cfg_u32(gj, &ng) || !ng)
			       ? "n_group" : "topk_group");
	if (ne && ne % ng)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: n_group: %" PRIu32 " groups do not divide n_routed_experts "
			       "(%" PRIu32 ")", ng, ne);
	if (tg > ng)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: topk_group: %" PRIu32 ", more than n_group (%" PRIu32 ")",
			       tg, ng);
	return WF_OK;
}

/* DeepseekV2Model.set_gguf_parameters (moe-and-mla.md 6.3): the base
 * block with head_count_kv 1 and key/value_length the latent's, then the
 * MLA and expert keys. */
static enum wf_err kv_deepseek2(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[96];
	uint32_t kvr = 512, rope = 0, nope = 0, vd = 0;
	const cJSON *kvj = wf_cfg_not_null(wf_cfg_hp(c, "kv_lora_rank"));
	if (kvj && !wf_cfg_u32(kvj, &kvr))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: kv_lora_rank: not an integer in [0, 2^32)");
	enum wf_err rc = wf_cfg_need_u32(c, "qk_rope_head_dim", 65535, &rope);
	if (rc == WF_OK)
		rc = wf_cfg_need_u32(c, "qk_nope_head_dim", 65535, &nope);
	if (rc == WF_OK)
		rc = wf_cfg_need_u32(c, "v_head_dim", 65535, &vd);
	if (rc != WF_OK)
		return rc;
	if ((rc = ds_groups_ok(c)) != WF_OK)
		return rc;
	if ((uint64_t)kvr + rope > UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: kv_lora_rank: %" PRIu32 " + qk_rope_head_dim passes 2^32", kvr);
	c->mla = true;
	c->mla_k = kvr + rope;
	c->mla_v = kvr;
	rc = wf_kv_text(c, w, a->gguf, ftype);
	c->mla = false;
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	const cJSON *fk = wf_cfg_not_null(wf_cfg_hp(c, "first_k_dense_replace"));
	if (rc == WF_OK && fk)
		rc = wf_cfg_put_u32(c, w, K("leading_dense_block_count"), KEYS("first_k_dense_replace"), true, NULL);
	else if (rc == WF_OK && wf_cfg_not_null(wf_cfg_hp(c, "n_routed_experts")))
		wf_gguf_w_u32(w, K("leading_dense_block_count"), 0);
	else if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("leading_dense_block_count"), KEYS("num_hidden_layers"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("vocab_size"), KEYS("vocab_size"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.q_lora_rank"), KEYS("q_lora_rank"), false, NULL);
	if (rc == WF_OK)
		wf_gguf_w_u32(w, K("attention.kv_lora_rank"), kvr);
	if (rc == WF_OK && !wf_cfg_not_null(wf_cfg_hp(c, "head_dim"))) {
		wf_gguf_w_u32(w, K("attention.key_length"), c->mla_k);
		wf_gguf_w_u32(w, K("attention.value_length"), c->mla_v);
	}
	if (rc == WF_OK) {
		wf_gguf_w_u32(w, K("attention.key_length_mla"), nope + rope);
		wf_gguf_w_u32(w, K("attention.value_length_mla"), vd);
		rc = wf_cfg_put_u32(c, w, K("expert_feed_forward_length"), KEYS("moe_intermediate_size", "intermediate_size"),
			     true, NULL);
	}
	/* expert_count again: the same value, in its place */
	if (rc == WF_OK && !wf_cfg_not_null(wf_cfg_hp(c, "n_shared_experts")))
		wf_gguf_w_u32(w, K("expert_shared_count"), 0);
	else if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("expert_shared_count"), KEYS("n_shared_experts"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, K("expert_weights_scale"), KEYS("routed_scaling_factor"));
	const cJSON *norm = wf_cfg_not_null(wf_cfg_hp(c, "norm_topk_prob"));
	if (rc == WF_OK && norm && !cJSON_IsFalse(norm) && !(cJSON_IsNumber(norm) && norm->valuedouble == 0))
		wf_gguf_w_bool(w, K("expert_weights_norm"), true);
	if (rc == WF_OK)
		wf_gguf_w_u32(w, K("rope.dimension_count"), rope);
	struct wf_rope r;
	wf_cfg_rope(c, &r);
	const cJSON *ms = wf_cfg_not_null(wf_cfg_item(r.p, "mscale_all_dim"));
	if (rc == WF_OK && ms && !cJSON_IsNumber(ms))
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: rope_scaling.mscale_all_dim: not a number");
	else if (rc == WF_OK && ms) /* TAG_DEEPSEEK2_YARN_LOG_MUL_FIX: 0.1 x, in double */
		wf_gguf_w_f32(w, K("rope.scaling.yarn_log_multiplier"), (float)(0.1 * ms->valuedouble));
#undef K
	return rc;
}


/* DeepSeek V2 / V3 (moe-and-mla.md 6.4): V3 when the router has a
 * score-correction bias or sigmoid gating. */
static bool ds_v3(struct wf_hfc *h, const struct wf_model *m)
{
	int64_t g;
	(void)m;
	return h->ds_bias || (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_gating_func"), &g) && g == 2);
}

/* DeepseekV2Config / V3Config's MLA, expert and yarn fields, from the
 * deepseek2 key/values DeepseekV2Model wrote (kv_deepseek2 above). */
static enum wf_err ds_fields(struct wf_hfc *h, const struct wf_hfc_dims *d, bool v3)
{
	int64_t kvr, kmla, vmla, rot, v;
	enum wf_err rc;
	if ((rc = wf_hfc_need(h, "attention.kv_lora_rank", 1, 1 << 20, &kvr)) ||
	    (rc = wf_hfc_need(h, "attention.key_length_mla", 2, 1 << 16, &kmla)) ||
	    (rc = wf_hfc_need(h, "attention.value_length_mla", 1, 1 << 16, &vmla)) ||
	    (rc = wf_hfc_need(h, "rope.dimension_count", 1, kmla - 1, &rot)))
		return rc;
	wf_hfc_int(h, "qk_rope_head_dim", rot);
	wf_hfc_int(h, "qk_nope_head_dim", kmla - rot);
	wf_hfc_int(h, "v_head_dim", vmla);
	wf_hfc_int(h, "kv_lora_rank", kvr);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "attention.q_lora_rank"), &v) && v > 0)
		wf_hfc_int(h, "q_lora_rank", v);
	else
		wf_hfc_raw(h, "q_lora_rank", "null");
	if (h->n_exp) {
		int64_t used, ff, ng = 1, tg = 1, gating = 1;
		if ((rc = wf_hfc_need(h, "expert_used_count", 1, h->n_exp, &used)) ||
		    (rc = wf_hfc_need(h, "expert_feed_forward_length", 1, 1 << 24, &ff)))
			return rc;
		wf_hfc_int(h, "n_routed_experts", h->n_exp);
		wf_hfc_int(h, "num_experts_per_tok", used);
		wf_hfc_int(h, "moe_intermediate_size", ff);
		wf_hfc_int(h, "n_shared_experts", wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_shared_count"), &v) && v >= 0 ? v : 0);
		wf_hfc_int(h, "first_k_dense_replace", h->dense);
		double sc;
		wf_hfc_num(h, "routed_scaling_factor", wf_gguf_get_num(&h->kv, wf_hfc_key(h, "expert_weights_scale"), &sc) && sc != 0 ? sc : 1.0,
			true);
		wf_hfc_raw(h, "norm_topk_prob", wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_weights_norm"), &v) && v ? "true" : "false");
		if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_group_count"), &v) && v >= 1)
			ng = v;
		if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_group_used_count"), &v) && v >= 1)
			tg = v;
		if (h->n_exp % ng || tg > ng)
			return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld groups of %lld experts, %lld kept",
				       wf_hfc_key(h, "expert_group_count"), (long long)ng, (long long)h->n_exp, (long long)tg);
		wf_hfc_int(h, "n_group", ng);
		wf_hfc_int(h, "topk_group", tg);
		if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "expert_gating_func"), &v))
			gating = v;
		wf_hfc_str(h, "scoring_func", gating == 2 ? "sigmoid" : "softmax");
		wf_hfc_str(h, "topk_method", v3 ? "noaux_tc" : ng > 1 ? "group_limited_greedy" : "greedy");
	}
	wf_hfc_raw(h, "attention_bias", "false");
	wf_hfc_raw(h, "rope_interleave", "true");
	wf_hfc_int(h, "num_nextn_predict_layers", 0);
	size_t n;
	const uint8_t *type = wf_gguf_get_str(&h->kv, wf_hfc_key(h, "rope.scaling.type"), &n);
	double factor, x;
	int64_t old;
	if (!type || n != 4 || memcmp(type, "yarn", 4) || !wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.factor"), &factor))
		return WF_OK;
	wf_hfc_field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"type\": \"yarn\", \"rope_type\": \"yarn\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)factor);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	static const char *const yk[][2] = {{"rope.scaling.yarn_beta_fast", "beta_fast"},
					    {"rope.scaling.yarn_beta_slow", "beta_slow"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(yk); i++)
		if (wf_gguf_get_num(&h->kv, wf_hfc_key(h, yk[i][0]), &x)) {
			wf_buf_printf(h->j, ", \"%s\": ", yk[i][1]);
			wf_buf_json_f32(h->j, (float)x);
		}
	/* yarn_log_multiplier is 0.1 mscale_all_dim; mscale the same, so that
	 * transformers' rope attention factor is 1 as llama.cpp's is */
	if (wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.yarn_log_multiplier"), &x)) {
		wf_buf_puts(h->j, ", \"mscale\": ");
		wf_buf_json_f32(h->j, (float)(x / 0.1));
		wf_buf_puts(h->j, ", \"mscale_all_dim\": ");
		wf_buf_json_f32(h->j, (float)(x / 0.1));
	}
	wf_buf_putc(h->j, '}');
	(void)d;
	return WF_OK;
}

static enum wf_err cfg_deepseek2(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
				 const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	bool v3 = ds_v3(h, m);
	if (at == WF_HFC_HEAD) {
		h->cls = v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM";
		h->model_type = v3 ? "deepseek_v3" : "deepseek_v2";
	}
	if (at == WF_HFC_BODY)
		return ds_fields(h, d, v3);
	return WF_OK; /* ds_fields wrote rope_scaling */
}

const struct wf_arch wf_arch_deepseek2 = {
	.hf = {"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", NULL}, .gguf = "deepseek2",
	.tok = WF_VOCAB_GPT2, .mla = true, .kvs = kv_deepseek2, .parts = deepseek2_parts,
	.experts = &deepseek_experts,
	.maps = {{deepseek2_map, WF_ARRAY_LEN(deepseek2_map)},
		 {wf_arch_shared_experts, WF_ARRAY_LEN(wf_arch_shared_experts)}},
	.configs = deepseek_cfg, .n_configs = WF_ARRAY_LEN(deepseek_cfg),
	.config = cfg_deepseek2,
};
