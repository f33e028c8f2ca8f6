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


/* A JSON array of n numbers as float32 (torch.tensor(list, float32)). */
static enum wf_err f32_array(struct wf_cfg *c, const cJSON *arr, uint64_t n, const char *field, float **out)
{
	if (!cJSON_IsArray(arr) || (uint64_t)cJSON_GetArraySize(arr) != n)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_scaling.%s: not %" PRIu64 " numbers", field, n);
	if (!(*out = malloc((n ? n : 1) * sizeof **out)))
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	uint64_t i = 0;
	for (const cJSON *e = arr->child; e; e = e->next, i++) {
		if (!cJSON_IsNumber(e)) {
			free(*out);
			*out = NULL;
			return wf_fail(c->why, WF_ERR_FORMAT, "config.json: rope_scaling.%s[%" PRIu64 "]: not a number", field, i);
		}
		(*out)[i] = (float)e->valuedouble;
	}
	return WF_OK;
}

/* Phi-3's long-context rope factors (P:175-211): rope_factors_long and
 * _short, and the attention factor key/value that comes with them. */
static enum wf_err gen_phi3(const struct wf_arch *a, struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap)
{
	(void)a;
	struct wf_rope rope, *r = &rope;
	wf_cfg_rope(c, r);
	const cJSON *lf = wf_cfg_not_null(wf_cfg_item(r->p, "long_factor")), *sf = wf_cfg_not_null(wf_cfg_item(r->p, "short_factor"));
	if (!lf || (cJSON_IsArray(lf) && !cJSON_GetArraySize(lf)))
		return WF_OK;
	uint32_t n_embd, n_head, mp, orig;
	if (!wf_cfg_u32(wf_cfg_find(c, KEYS("hidden_size", "n_embd"), NULL), &n_embd) ||
	    !wf_cfg_u32(wf_cfg_find(c, KEYS("num_attention_heads", "n_head"), NULL), &n_head) || !n_head ||
	    !wf_cfg_u32(wf_cfg_find(c, KEYS("n_positions", "max_position_embeddings"), NULL), &mp) || !wf_cfg_u32(r->orig_ctx, &orig) ||
	    orig < 2)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: the fields of Phi-3's long-context rope are missing");
	double scale = (double)mp / orig, pct = cJSON_IsNumber(r->prf) ? r->prf->valuedouble : 1.0;
	const char *t = cJSON_IsString(r->type) ? r->type->valuestring : "";
	if (strcasecmp(t, "su") == 0 || strcasecmp(t, "longrope") == 0)
		pl->attn_factor = scale > 1.0 ? sqrt(1 + log(scale) / log(orig)) : 1.0;
	else if (strcasecmp(t, "yarn") == 0)
		pl->attn_factor = scale > 1.0 ? 0.1 * log(scale) + 1.0 : 1.0;
	else
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_scaling.type: %s rope with long_factor is not converted",
			       *t ? "this" : "no");
	pl->has_attn_factor = true;
	uint64_t half = (uint64_t)(pct * n_embd) / n_head / 2;
	const char *names[2] = {"rope_factors_long.weight", "rope_factors_short.weight"};
	const cJSON *arrs[2] = {lf, sf};
	for (int k = 0; k < 2; k++) {
		float *v;
		enum wf_err rc = f32_array(c, arrs[k], half, k ? "short_factor" : "long_factor", &v);
		if (rc == WF_OK)
			rc = wf_arch_gen_add(c, pl, cap, names[k], half, v);
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

static void phi3_fields(struct wf_hfc *h, const struct wf_model *m, const struct wf_hfc_dims *d)
{
	wf_hfc_num(h, "partial_rotary_factor", (double)d->rot / (double)d->head_dim, false);
	int64_t v;
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.scaling.original_context_length"), &v) && v > 0)
		wf_hfc_int(h, "original_max_position_embeddings", v);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "attention.sliding_window"), &v) && v > 0)
		wf_hfc_int(h, "sliding_window", v);
	const struct wf_tensor *fl = wf_hfc_tensor(m, "rope_factors_long.weight"),
			       *fs = wf_hfc_tensor(m, "rope_factors_short.weight");
	if (!fl || !fs || fl->type != WF_T_F32 || fs->type != WF_T_F32 || fl->nelems != fs->nelems ||
	    fl->nelems > 4096 || !m->parts[fl->part].data || !m->parts[fs->part].data)
		return;
	wf_hfc_field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"type\": \"longrope\"");
	const struct wf_tensor *ts[2] = {fl, fs};
	for (int k = 0; k < 2; k++) {
		wf_buf_puts(h->j, k ? ", \"short_factor\": [" : ", \"long_factor\": [");
		const uint8_t *p = m->parts[ts[k]->part].data + ts[k]->offset;
		for (uint64_t i = 0; i < ts[k]->nelems; i++) {
			uint32_t u = wf_le32(p + 4 * i);
			float f;
			memcpy(&f, &u, 4);
			if (i)
				wf_buf_puts(h->j, ", ");
			wf_buf_json_f32(h->j, f);
		}
		wf_buf_putc(h->j, ']');
	}
	wf_buf_putc(h->j, '}');
}

static enum wf_err cfg_phi3(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			    const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_ROPE)
		phi3_fields(h, m, d);
	return WF_OK;
}

static const char *const phi3_said[] = {"rope_factors_long.weight", "rope_factors_short.weight", NULL};

const struct wf_arch wf_arch_phi3 = {
	.hf = {"Phi3ForCausalLM", NULL}, .gguf = "phi3", .canon = "phi3", .names = {"phi3", "Phi3ForCausalLM"},
	.tok = WF_VOCAB_PHI3, .gen = gen_phi3, .fused_gate_up = true, .kvs = kv_phi3, .parts = phi3_parts,
	.configs = phi3_cfg, .n_configs = WF_ARRAY_LEN(phi3_cfg),
	.hf_said = phi3_said, .config = cfg_phi3,
};
