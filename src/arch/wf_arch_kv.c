/* wf_arch_kv.c - config.json as the converter reads it, and the key/values
 * each architecture's converter class writes from it (wf_arch_int.h): the
 * hooks the descriptors (wf_arch_*.c) name. */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <cjson/cJSON.h>

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- config */

const cJSON *wf_cfg_hp(const struct wf_cfg *c, const char *k)
{
	if (c->no_head_dim && strcmp(k, "head_dim") == 0)
		return NULL;
	const cJSON *v = c->text ? cJSON_GetObjectItemCaseSensitive(c->text, k) : NULL;
	if (!v)
		v = cJSON_GetObjectItemCaseSensitive(c->root, k);
	if (!v && c->dflt)
		v = cJSON_GetObjectItemCaseSensitive(c->dflt, k);
	return v;
}

/* find_hparam: the first of keys present (a JSON null counts as absent,
 * as the converter's optional lookups test `is not None`). */
const cJSON *wf_cfg_find(const struct wf_cfg *c, const char *const *keys, const char **which)
{
	for (; *keys; keys++) {
		const cJSON *v = wf_cfg_hp(c, *keys);
		if (v && !cJSON_IsNull(v)) {
			if (which)
				*which = *keys;
			return v;
		}
	}
	return NULL;
}

/* A JSON number that is a whole number in [0, 2^32). */
bool wf_cfg_u32(const cJSON *v, uint32_t *out)
{
	if (!cJSON_IsNumber(v) || !(v->valuedouble >= 0) || v->valuedouble > 4294967295.0 ||
	    v->valuedouble != floor(v->valuedouble))
		return false;
	*out = (uint32_t)v->valuedouble;
	return true;
}

/* Writes u32 key k from the first of keys; *had whether one was there.
 * A value of the wrong type fails the plan (the converter would fail to
 * pack it). */
enum wf_err wf_cfg_put_u32(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys,
			   bool required, uint32_t *val)
{
	const char *which = keys[0];
	const cJSON *v = wf_cfg_find(c, keys, &which);
	uint32_t u;
	if (!v)
		return required ? wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", keys[0]) : WF_OK;
	if (!wf_cfg_u32(v, &u))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)", which);
	wf_gguf_w_u32(w, k, u);
	if (val)
		*val = u;
	return WF_OK;
}

enum wf_err wf_cfg_put_f32(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const cJSON *v, const char *field)
{
	if (!v)
		return WF_OK;
	if (!cJSON_IsNumber(v))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not a number", field);
	wf_gguf_w_f32(w, k, (float)v->valuedouble);
	return WF_OK;
}

enum wf_err wf_cfg_put_f32k(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys)
{
	const char *which = keys[0];
	return wf_cfg_put_f32(c, w, k, wf_cfg_find(c, keys, &which), which);
}

/* ---------------------------------------------------------------- rope */

const cJSON *wf_cfg_item(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

const cJSON *wf_cfg_not_null(const cJSON *v)
{
	return v && !cJSON_IsNull(v) ? v : NULL;
}

void wf_cfg_rope(const struct wf_cfg *c, struct wf_rope *r)
{
	const cJSON *rp = wf_cfg_not_null(wf_cfg_hp(c, "rope_parameters"));
	if (!rp)
		rp = wf_cfg_not_null(wf_cfg_hp(c, "rope_scaling"));
	if (rp && !cJSON_IsObject(rp))
		rp = NULL;
	memset(r, 0, sizeof *r);
	bool split = wf_cfg_item(rp, "full_attention") || wf_cfg_item(rp, "sliding_attention");
	const cJSON *full = wf_cfg_item(rp, "full_attention");
	r->p = full ? full : rp;
	r->type = wf_cfg_not_null(wf_cfg_item(r->p, "rope_type"));
	r->theta = wf_cfg_not_null(wf_cfg_item(r->p, "rope_theta"));
	r->theta_swa = wf_cfg_not_null(wf_cfg_item(wf_cfg_item(rp, "sliding_attention"), "rope_theta"));
	r->orig_ctx = wf_cfg_not_null(wf_cfg_item(r->p, "original_max_position_embeddings"));
	r->prf = wf_cfg_not_null(wf_cfg_item(r->p, "partial_rotary_factor"));
	if (split)
		return;
	if (!r->theta_swa)
		r->theta_swa = wf_cfg_find(c, KEYS("local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta",
					    "rope_local_base_freq"), NULL);
	if (!r->theta)
		r->theta = wf_cfg_find(c, KEYS("global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta",
					"rotary_emb_base"), NULL);
	if (!r->type)
		r->type = wf_cfg_not_null(wf_cfg_item(r->p, "type"));
	if (!r->prf)
		r->prf = wf_cfg_find(c, KEYS("partial_rotary_factor", "rope_pct", "rope_percent"), NULL);
	if (!r->orig_ctx)
		r->orig_ctx = wf_cfg_find(c, KEYS("original_max_position_embeddings"), NULL);
}

bool wf_rope_is(const struct wf_rope *r, const char *s)
{
	return cJSON_IsString(r->type) && strcasecmp(r->type->valuestring, s) == 0;
}

/* The rope-scaling key/values (B:1296-1330). */
static enum wf_err kv_rope_scaling(struct wf_cfg *c, const struct wf_rope *r, struct wf_gguf_w *w, const char *a)
{
	char k[96];
	const cJSON *factor = wf_cfg_not_null(wf_cfg_item(r->p, "factor"));
	bool lin = cJSON_IsString(r->type) && strcmp(r->type->valuestring, "linear") == 0;
	bool yarn = cJSON_IsString(r->type) && strcmp(r->type->valuestring, "yarn") == 0;
	enum wf_err rc = WF_OK;
	if ((lin || yarn) && factor) {
		snprintf(k, sizeof k, "%s.rope.scaling.type", a);
		wf_gguf_w_str(w, k, lin ? "linear" : "yarn", lin ? 6 : 4);
		snprintf(k, sizeof k, "%s.rope.scaling.factor", a);
		rc = wf_cfg_put_f32(c, w, k, factor, "rope_scaling.factor");
	}
	if (rc == WF_OK && yarn && factor) {
		uint32_t u;
		if (!wf_cfg_u32(r->orig_ctx, &u))
			return wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_scaling.original_max_position_embeddings: %s",
				       r->orig_ctx ? "not an integer" : "missing");
		snprintf(k, sizeof k, "%s.rope.scaling.original_context_length", a);
		wf_gguf_w_u32(w, k, u);
		static const char *const yk[][3] = {{"extrapolation_factor", NULL, "yarn_ext_factor"},
						    {"attention_factor", "attn_factor", "yarn_attn_factor"},
						    {"beta_fast", NULL, "yarn_beta_fast"},
						    {"beta_slow", NULL, "yarn_beta_slow"}};
		for (size_t i = 0; i < WF_ARRAY_LEN(yk) && rc == WF_OK; i++) {
			const cJSON *v = wf_cfg_not_null(wf_cfg_item(r->p, yk[i][0]));
			if (!v && yk[i][1])
				v = wf_cfg_not_null(wf_cfg_item(r->p, yk[i][1]));
			snprintf(k, sizeof k, "%s.rope.scaling.%s", a, yk[i][2]);
			rc = wf_cfg_put_f32(c, w, k, v, yk[i][0]);
		}
	}
	if (rc == WF_OK && (wf_rope_is(r, "su") || wf_rope_is(r, "longrope")) && cJSON_IsString(r->type) &&
	    (strcmp(r->type->valuestring, "su") == 0 || strcmp(r->type->valuestring, "longrope") == 0)) {
		snprintf(k, sizeof k, "%s.rope.scaling.type", a);
		wf_gguf_w_str(w, k, "longrope", 8);
	}
	return rc;
}

/* ---------------------------------------------------------------- key/values */

/* expert_gating_func from the config's score function (moe-and-mla.md
 * 1.4: sigmoid 2, softmax 1, sqrtsoftplus 4, anything else raises); a
 * row's own value (c->gating), written later by the converter, takes this
 * place when the config has one. */
static enum wf_err kv_gating(struct wf_cfg *c, struct wf_gguf_w *w, const char *k)
{
	static const struct {
		const char *s;
		uint32_t v;
	} fn[] = {{"sigmoid", 2}, {"softmax", 1}, {"sqrtsoftplus", 4}};
	const char *which = "scoring_func";
	const cJSON *v = wf_cfg_find(c, KEYS("score_function", "scoring_func", "score_func", "moe_router_activation",
				      "moe_router_activation_func", "expert_selection_fn"), &which);
	if (!v)
		return WF_OK;
	for (size_t i = 0; cJSON_IsString(v) && i < WF_ARRAY_LEN(fn); i++)
		if (strcmp(v->valuestring, fn[i].s) == 0) {
			wf_gguf_w_u32(w, k, c->gating ? c->gating : fn[i].v);
			return WF_OK;
		}
	return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not sigmoid, softmax or sqrtsoftplus", which);
}

/* TextModel.set_gguf_parameters (B:1268-1380), through general.file_type. */
/* The base block's expert keys (moe-and-mla.md 1.4): the counts, the
 * groups and the gating function, each when the config has it. */
static enum wf_err kv_experts(struct wf_cfg *c, struct wf_gguf_w *w, const char *a)
{
	char k[96];
	enum wf_err rc = WF_OK;
#define K(s) (snprintf(k, sizeof k, "%s." s, a), k)
	if (!c->experts && wf_cfg_find(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), NULL))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_local_experts: mixtures of experts are not made");
	/* a row's own count, re-added after the base block, keeps this place */
	const char *const own[] = {c->count_key, NULL};
	const char *const *ek = KEYS("num_local_experts", "num_experts", "n_routed_experts");
	if (c->count_key && wf_cfg_find(c, own, NULL))
		ek = own;
	if (rc == WF_OK && c->experts)
		rc = wf_cfg_put_u32(c, w, K("expert_count"), ek, true, NULL);
	if (rc == WF_OK && c->experts)
		rc = wf_cfg_put_u32(c, w, K("expert_used_count"),
			     KEYS("num_experts_per_tok", "num_experts_per_token", "top_k_experts"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("expert_group_count"), KEYS("n_group"), false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("expert_group_used_count"), KEYS("topk_group"), false, NULL);
	if (rc == WF_OK)
		rc = kv_gating(c, w, K("expert_gating_func"));
#undef K
	return rc;
}

enum wf_err wf_kv_text(struct wf_cfg *c, struct wf_gguf_w *w, const char *a, uint32_t ftype)
{
	char k[96];
	struct wf_rope r;
	wf_cfg_rope(c, &r);
#define K(s) (snprintf(k, sizeof k, "%s." s, a), k)
	const char *which = "num_hidden_layers";
	const cJSON *bc = wf_cfg_find(c, KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), &which);
	uint32_t blocks;
	enum wf_err rc = WF_OK;
	if (!bc)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_hidden_layers: missing");
	else if (!wf_cfg_u32(bc, &blocks) || blocks > UINT32_MAX - c->extra_blocks)
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)%s", which,
			     c->extra_blocks ? " with the MTP blocks" : "");
	else
		wf_gguf_w_u32(w, K("block_count"), blocks + c->extra_blocks);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("context_length"),
			     KEYS("max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
				  "model_max_length"),
			     false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("embedding_length"), KEYS("hidden_size", "n_embd", "dim"), false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("feed_forward_length"),
			     KEYS("prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size",
				  "n_inner", "hidden_dim"),
			     false, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.head_count"), KEYS("num_attention_heads", "n_head", "n_heads"), false, NULL);
	if (rc == WF_OK && c->mla)
		wf_gguf_w_u32(w, K("attention.head_count_kv"), 1); /* MLA as MQA: the converter sets it to 1 first */
	else if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.head_count_kv"), KEYS("num_key_value_heads", "n_kv_heads"), false, NULL);
	if (rc == WF_OK && cJSON_IsFalse(wf_cfg_hp(c, "is_causal")))
		wf_gguf_w_bool(w, K("attention.causal"), false);
	if (rc == WF_OK)
		rc = kv_rope_scaling(c, &r, w, a);
	if (rc == WF_OK)
		rc = wf_cfg_put_f32(c, w, K("rope.freq_base"), r.theta, "rope_theta");
	if (rc == WF_OK)
		rc = wf_cfg_put_f32(c, w, K("rope.freq_base_swa"), r.theta_swa, "rope_local_base_freq");
	if (rc == WF_OK && c->rms_eps_1e5)
		wf_gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-5f);
	else if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, K("attention.layer_norm_rms_epsilon"), KEYS("rms_norm_eps", "norm_eps"));
	if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, K("attention.layer_norm_epsilon"),
			      KEYS("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"));
	if (rc == WF_OK)
		rc = kv_experts(c, w, a);
	if (rc == WF_OK && c->mla && wf_cfg_not_null(wf_cfg_hp(c, "head_dim"))) {
		/* written from head_dim, then overwritten in place with the latent's */
		wf_gguf_w_u32(w, K("attention.key_length"), c->mla_k);
		wf_gguf_w_u32(w, K("attention.value_length"), c->mla_v);
	} else if (rc == WF_OK && wf_cfg_not_null(wf_cfg_hp(c, "head_dim"))) {
		rc = wf_cfg_put_u32(c, w, K("attention.key_length"), KEYS("head_dim"), false, NULL);
		if (rc == WF_OK)
			rc = wf_cfg_put_u32(c, w, K("attention.value_length"), KEYS("head_dim"), false, NULL);
	}
#undef K
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	return rc;
}

/* A u32 the rest of the plan divides or counts by: present and from 1 to
 * max. */
enum wf_err wf_cfg_need_u32(struct wf_cfg *c, const char *field, uint32_t max, uint32_t *v)
{
	const cJSON *j = wf_cfg_not_null(wf_cfg_hp(c, field));
	if (!j)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", field);
	if (!wf_cfg_u32(j, v) || *v < 1 || *v > max)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not an integer from 1 to %" PRIu32, field, max);
	return WF_OK;
}
