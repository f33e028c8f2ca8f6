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


/* gpt-oss's fields (moe-and-mla.md 8.3) as GptOssConfig reads them, for
 * what llama.cpp's gpt-oss graph runs: even layers slide (its default
 * period 2, layer 0 sliding), SWIGLU_OAI's limit 7 (hard-coded there), and
 * YaRN's correction dims rounded (ggml_rope_yarn_corr_dims floors and ceils
 * them: rope_scaling.truncate true, whatever the checkpoint said). */
static enum wf_err gptoss_fields(struct wf_hfc *h, const struct wf_model *m, const struct wf_hfc_dims *d)
{
	int64_t used, win, old;
	double v;
	enum wf_err rc;
	if ((rc = wf_hfc_need(h, "expert_used_count", 1, h->n_exp, &used)) != WF_OK ||
	    (rc = wf_hfc_need(h, "attention.sliding_window", 1, INT32_MAX, &win)) != WF_OK)
		return rc;
	wf_hfc_int(h, "num_local_experts", h->n_exp);
	wf_hfc_int(h, "num_experts_per_tok", used);
	wf_hfc_int(h, "experts_per_token", used);
	wf_hfc_int(h, "sliding_window", win);
	wf_hfc_field(h, "layer_types");
	wf_buf_putc(h->j, '[');
	for (int64_t i = 0; i < d->layers; i++)
		wf_buf_puts(h->j, i ? (i % 2 ? ", \"full_attention\"" : ", \"sliding_attention\"") : "\"sliding_attention\"");
	wf_buf_putc(h->j, ']');
	wf_hfc_raw(h, "attention_bias", wf_hfc_has(m, "blk.0.attn_q.bias") ? "true" : "false");
	wf_hfc_num(h, "attention_dropout", 0.0, false);
	wf_hfc_num(h, "swiglu_limit", 7.0, false);
	wf_hfc_num(h, "router_aux_loss_coef", 0.9, false);
	wf_hfc_raw(h, "output_router_logits", "false");
	size_t n;
	const uint8_t *type = wf_gguf_get_str(&h->kv, wf_hfc_key(h, "rope.scaling.type"), &n);
	if (!type || n != 4 || memcmp(type, "yarn", 4) != 0 || !wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.factor"), &v)) {
		wf_hfc_raw(h, "rope_scaling", "null");
		return WF_OK;
	}
	wf_hfc_field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"rope_type\": \"yarn\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)v);
	wf_buf_puts(h->j, ", \"beta_fast\": ");
	wf_buf_json_f32(h->j, wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.yarn_beta_fast"), &v) ? (float)v : 32.0f);
	wf_buf_puts(h->j, ", \"beta_slow\": ");
	wf_buf_json_f32(h->j, wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.yarn_beta_slow"), &v) ? (float)v : 1.0f);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	wf_buf_puts(h->j, ", \"truncate\": true}");
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.scaling.original_context_length"), &old))
		wf_hfc_int(h, "initial_context_length", old);
	return WF_OK;
}

static enum wf_err cfg_gptoss(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			      const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY)
		return gptoss_fields(h, m, d);
	return WF_OK; /* gptoss_fields wrote rope_scaling */
}

const struct wf_arch wf_arch_gptoss = {
	.hf = {"GptOssForCausalLM", NULL}, .gguf = "gpt-oss",
	.tok = WF_VOCAB_GPT2, .packed_experts = true, .kvs = kv_gptoss, .parts = gptoss_parts,
	.maps = {{gptoss_map, WF_ARRAY_LEN(gptoss_map)}},
	.hf_model_type = "gpt_oss", .config = cfg_gptoss,
};
