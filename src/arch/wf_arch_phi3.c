/* wf_arch_phi3.c - Phi-3 and Phi-4 (Phi3ForCausalLM): q/k/v and gate/up
 * fused, generated rope factors (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const phi3_parts[] = {"attn_norm", "attn_qkv", "attn_q", "attn_k", "attn_v", "attn_output",
					 "ffn_norm", "ffn_up", "ffn_down", NULL};

static const struct wf_cfg_class phi3_cfg[] = {
	{"phi3", WF_DERIVE_KV_HEADS,
	 {{"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000},
	  {"original_max_position_embeddings", 4096}, {NULL, 0}}},
};

static enum wf_err kv_phi3(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	(void)a;
	struct wf_rope r;
	wf_cfg_rope(c, &r);
	uint32_t n_embd = 0, n_head = 0, u = 0;
	enum wf_err rc = wf_cfg_put_u32(c, w, "phi3.context_length", KEYS("n_positions", "max_position_embeddings"), true, NULL);
	if (rc == WF_OK && !wf_cfg_u32(r.orig_ctx, &u))
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: original_max_position_embeddings: missing");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "phi3.rope.scaling.original_context_length", u);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.embedding_length", KEYS("hidden_size", "n_embd"), true, &n_embd);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.feed_forward_length", KEYS("intermediate_size"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.block_count", KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), true,
			     NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.attention.head_count", KEYS("num_attention_heads", "n_head"), true, &n_head);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.attention.head_count_kv", KEYS("num_key_value_heads", "n_head_kv"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, "phi3.attention.layer_norm_rms_epsilon", KEYS("rms_norm_eps"));
	double pct = cJSON_IsNumber(r.prf) ? r.prf->valuedouble : 1.0;
	if (rc == WF_OK && !n_head)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_attention_heads: 0");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "phi3.rope.dimension_count", (uint32_t)((uint64_t)(pct * n_embd) / n_head));
	if (rc == WF_OK && !r.theta)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_theta: missing");
	if (rc == WF_OK)
		rc = wf_cfg_put_f32(c, w, "phi3.rope.freq_base", r.theta, "rope_theta");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	const cJSON *sw = wf_cfg_not_null(wf_cfg_hp(c, "sliding_window"));
	if (rc == WF_OK && !sw)
		wf_gguf_w_u32(w, "phi3.attention.sliding_window", 0);
	else if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "phi3.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	return rc;
}


const struct wf_arch wf_arch_phi3 = {
	.hf = {"Phi3ForCausalLM", NULL}, .gguf = "phi3", .canon = "phi3", .names = {"phi3", "Phi3ForCausalLM"},
	.tok = WF_VOCAB_PHI3, .rope_factors = true, .fused_gate_up = true, .kvs = kv_phi3, .parts = phi3_parts,
	.configs = phi3_cfg, .n_configs = WF_ARRAY_LEN(phi3_cfg),
};
