/* wf_arch_llama.c - LlamaModel and the classes built on it: Llama,
 * Mistral (and Mistral3ForConditionalGeneration's text model), SmolLM3,
 * Granite, and Mixtral, a Llama with experts (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const wf_arch_llama_parts[] = {"attn_norm", "attn_q",   "attn_k", "attn_v", "attn_output",
					   "ffn_norm",  "ffn_gate", "ffn_up", "ffn_down", NULL};
static const char *const mixtral_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
					    "ffn_norm", "ffn_gate_inp", NULL};

static const struct wf_moe_form mixtral_experts = {
	".block_sparse_moe.experts.", {"w1", "w2", "w3"}, {"ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"},
	"block_sparse_moe.gate", "mixtral", NULL, NULL, NULL, false};

static const struct wf_cfg_class llama_cfg[] = {
	{"llama", WF_DERIVE_KV_HEADS | WF_DERIVE_HEAD_DIM,
	 {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {NULL, 0}}},
	{"mistral", WF_DERIVE_KV_HEADS | WF_DERIVE_HEAD_DIM,
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 8}, {NULL, 0}}},
};
static const struct wf_cfg_class granite_cfg[] = {
	{"granite", WF_DERIVE_KV_HEADS,
	 {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {"embedding_multiplier", 1},
	  {"logits_scaling", 1}, {"residual_multiplier", 1}, {"attention_multiplier", 1}, {NULL, 0}}},
};
static const struct wf_cfg_class smollm3_cfg[] = {
	{"smollm3", 0,
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 2000000}, {"num_key_value_heads", 4},
	  {NULL, 0}}},
};

static enum wf_err kv_llama(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = wf_kv_text(c, w, a->gguf, ftype);
	char kv[64], kr[64];
	snprintf(kv, sizeof kv, "%s.vocab_size", a->gguf);
	snprintf(kr, sizeof kr, "%s.rope.dimension_count", a->gguf);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, kv, KEYS("vocab_size"), true, NULL);
	uint32_t h, n;
	const cJSON *hd = wf_cfg_not_null(wf_cfg_hp(c, "head_dim"));
	if (rc == WF_OK && hd)
		rc = wf_cfg_put_u32(c, w, kr, KEYS("head_dim"), true, NULL);
	else if (rc == WF_OK) {
		if (!wf_cfg_u32(wf_cfg_hp(c, "hidden_size"), &n) || !wf_cfg_u32(wf_cfg_hp(c, "num_attention_heads"), &h) || !h)
			return wf_fail(c->why, WF_ERR_UNSUP, "config.json: hidden_size, num_attention_heads: missing");
		wf_gguf_w_u32(w, kr, n / h);
	}
	return rc;
}

/* GraniteModel.set_gguf_parameters: head_dim popped (no key/value length,
 * rope.dimension_count = hidden / heads), LlamaModel's keys, then each of
 * the multipliers that is truthy. */
static enum wf_err kv_granite(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	c->no_head_dim = true;
	enum wf_err rc = kv_llama(a, c, w, ftype);
	c->no_head_dim = false;
	static const char *const m[][2] = {{"attention_multiplier", "granite.attention.scale"},
					   {"embedding_multiplier", "granite.embedding_scale"},
					   {"residual_multiplier", "granite.residual_scale"},
					   {"logits_scaling", "granite.logit_scale"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(m) && rc == WF_OK; i++) {
		const cJSON *v = wf_cfg_not_null(wf_cfg_hp(c, m[i][0]));
		if (v && !cJSON_IsFalse(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
			rc = wf_cfg_put_f32(c, w, m[i][1], v, m[i][0]);
	}
	return rc;
}

/* Mistral3Model: Ministral3Model (LlamaModel's keys under mistral3) for a
 * text model_type of mistral (Mistral Small 3.1, 3.2); ministral3's yarn
 * keys and mistral4's experts (DeepseekV2Model) are not made. */
static enum wf_err kv_mistral3(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	const cJSON *mt = wf_cfg_hp(c, "model_type");
	if (cJSON_IsString(mt) && (strcmp(mt->valuestring, "ministral3") == 0 || strcmp(mt->valuestring, "mistral4") == 0))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: model_type: %s text models are not made",
			       mt->valuestring);
	return kv_llama(a, c, w, ftype);
}


/* Llama 3's rope scaling: factor, low_freq_factor, high_freq_factor,
 * original_max_position_embeddings. */
struct llama3 {
	double factor, low, high, old;
};

/* rope_freqs' value k of dim / 2 (L:298-326), in float32 as torch
 * computes it: freq = 1 / base^(2k / dim), then its wavelength against
 * the old context's bands. */
static float llama3_at(const struct llama3 *p, uint32_t k, uint32_t dim, float base)
{
	float lowl = (float)(p->old / p->low), highl = (float)(p->old / p->high);
	float e = (float)(2 * k) / (float)dim;
	float freq = (1.0f / powf(base, e)) * 1.0f;
	float wl = (1.0f / freq) * (float)(2 * M_PI);
	if (wl < highl)
		return 1.0f;
	if (wl > lowl)
		return (float)p->factor;
	float smooth = ((1.0f / wl) * (float)p->old - (float)p->low) / (float)(p->high - p->low);
	return 1.0f / ((1.0f - smooth) / (float)p->factor + smooth);
}

/* Llama 3's rope_freqs.weight (L:298-326), in float32 as torch computes
 * it: freqs = 1 / base^(arange(0, dim, 2) / dim), then per frequency its
 * wavelength against the old context's bands. */
static enum wf_err llama3_values(struct wf_cfg *c, const struct wf_rope *r, float **out, uint64_t *n)
{
	const cJSON *hd = wf_cfg_not_null(wf_cfg_hp(c, "head_dim"));
	uint32_t dim = 0, hidden, heads;
	if (hd ? !wf_cfg_u32(hd, &dim) : (!wf_cfg_u32(wf_cfg_hp(c, "hidden_size"), &hidden) || !wf_cfg_u32(wf_cfg_hp(c, "num_attention_heads"), &heads) || !heads))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: head_dim: missing for rope_type llama3");
	if (!hd)
		dim = hidden / heads;
	if (dim < 2 || dim > 65536)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: head_dim: %u is not a rope dimension", dim);
	const cJSON *fv = wf_cfg_not_null(wf_cfg_item(r->p, "factor")), *lv = wf_cfg_not_null(wf_cfg_item(r->p, "low_freq_factor")),
		    *hv = wf_cfg_not_null(wf_cfg_item(r->p, "high_freq_factor"));
	const cJSON *ov = wf_cfg_not_null(wf_cfg_item(r->p, "original_max_position_embeddings"));
	const cJSON *vals[] = {r->theta, fv, lv, hv, ov};
	for (size_t i = 0; i < WF_ARRAY_LEN(vals); i++)
		if (vals[i] && !cJSON_IsNumber(vals[i]))
			return wf_fail(c->why, WF_ERR_FORMAT, "config.json: rope_scaling: a llama3 field is not a number");
	float base = r->theta ? (float)r->theta->valuedouble : 10000.0f;
	struct llama3 p = {fv ? fv->valuedouble : 8.0, lv ? lv->valuedouble : 1.0, hv ? hv->valuedouble : 4.0,
			   ov ? ov->valuedouble : 8192};
	*n = (dim + 1) / 2; /* torch.arange(0, dim, 2): ceil(dim / 2) frequencies */
	if (!(*out = malloc(*n * sizeof **out)))
		return WF_ERR_NOMEM;
	for (uint32_t k = 0; k < *n; k++)
		(*out)[k] = llama3_at(&p, k, dim, base);
	return WF_OK;
}

/* LlamaModel.generate_extra_tensors: rope_freqs.weight for a rope_type of
 * llama3 (the gen hook of every LlamaModel row). */
static enum wf_err gen_llama3(const struct wf_arch *a, struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap)
{
	(void)a;
	struct wf_rope r;
	wf_cfg_rope(c, &r);
	if (!wf_rope_is(&r, "llama3"))
		return WF_OK;
	float *v = NULL;
	uint64_t n = 0;
	enum wf_err rc = llama3_values(c, &r, &v, &n);
	return rc == WF_OK ? wf_arch_gen_add(c, pl, cap, "rope_freqs.weight", n, v) : rc;
}

/* Llama 3's rope scaling, read back from the rope_freqs.weight llama.cpp
 * made of it: factor is the largest factor; the band between the two
 * wavelengths gives a line in 1/wavelength whose slope and intercept are
 * old_context / (high - low) and -low / (high - low) (llama3_at above);
 * low_freq_factor is taken as 1, as in every Llama 3.x.  The scaling
 * found must give the tensor's values back (to 1e-4), else config.json is
 * left out naming it: transformers would rope otherwise than llama.cpp. */
static enum wf_err llama3_scaling(struct wf_hfc *h, const struct wf_model *m, const struct wf_hfc_dims *d)
{
	const struct wf_tensor *t = wf_hfc_tensor(m, "rope_freqs.weight");
	if (!t || t->type != WF_T_F32 || t->nelems != (uint64_t)(d->rot / 2) || t->part >= m->n_parts ||
	    !m->parts[t->part].data)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor rope_freqs.weight: not %lld float32 values (rope.dimension_count / 2): "
			       "no rope_scaling of it", (long long)(d->rot / 2));
	const uint8_t *p = m->parts[t->part].data + t->offset;
	double factor = 1, sx = 0, sy = 0, sxx = 0, sxy = 0;
	size_t nb = 0;
	for (uint64_t i = 0; i < t->nelems; i++) {
		uint32_t u = wf_le32(p + 4 * i);
		float v;
		memcpy(&v, &u, 4);
		if (isfinite(v) && v > factor)
			factor = v;
	}
	for (uint64_t i = 0; factor > 1 && i < t->nelems; i++) {
		uint32_t u = wf_le32(p + 4 * i);
		float v;
		memcpy(&v, &u, 4);
		if (!(v > 1.0001 && v < factor * 0.9999))
			continue;
		double freq = 1.0 / pow(d->theta, (double)(2 * i) / (double)d->rot);
		double x = freq / (2 * M_PI), s = (1.0 / v - 1.0 / factor) / (1.0 - 1.0 / factor);
		sx += x, sy += s, sxx += x * x, sxy += x * s, nb++;
	}
	double low = 1, high = 4, old = 8192, w1 = 0, wf = INFINITY;
	for (uint64_t i = 0; factor > 1 && !nb && i < t->nelems; i++) {
		/* no point in the band: any context between the wavelengths of the last 1 x 4 and the
		 * first factor ropes the same (8192 when it does, as Llama 3.x) */
		uint32_t u = wf_le32(p + 4 * i);
		float v;
		memcpy(&v, &u, 4);
		double wl = 2 * M_PI * pow(d->theta, (double)(2 * i) / (double)d->rot);
		if (v == 1.0f && wl > w1)
			w1 = wl;
		if (v == (float)factor && wl < wf)
			wf = wl;
	}
	if (factor > 1 && !nb && !(4 * w1 < old && old < wf) && isfinite(wf))
		old = round(sqrt(4 * w1 * wf));
	if (nb == 1 && sx > 0) /* one point: high_freq_factor taken as 4 too */
		old = round((sy * (high - low) + low) / sx);
	if (nb >= 2 && sxx * nb - sx * sx > 0) {
		double slope = (nb * sxy - sx * sy) / (nb * sxx - sx * sx), icept = (sy - slope * sx) / nb;
		if (icept < 0 && slope > 0) {
			high = low - 1.0 / icept;
			old = round(slope * (high - low));
			high = round(high * 64) / 64;
		}
	}
	struct llama3 l3 = {(float)factor, low, high, old};
	for (uint64_t i = 0; i < t->nelems; i++) {
		uint32_t u = wf_le32(p + 4 * i);
		float v, w = factor > 1 ? llama3_at(&l3, (uint32_t)i, (uint32_t)d->rot, (float)d->theta) : 1.0f;
		memcpy(&v, &u, 4);
		if (!(fabsf(v - w) <= 1e-4f * fabsf(w)))
			return wf_fail(h->why, WF_ERR_UNSUP, "tensor rope_freqs.weight: value %llu (%g) is not Llama 3's rope "
				       "scaling (factor %g, low_freq_factor 1, high_freq_factor %g, original context %g gives %g)",
				       (unsigned long long)i, (double)v, factor, high, old, (double)w);
	}
	if (factor <= 1)
		return WF_OK;
	wf_hfc_field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"rope_type\": \"llama3\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)factor);
	wf_buf_puts(h->j, ", \"low_freq_factor\": ");
	wf_buf_json_f64(h->j, low);
	wf_buf_puts(h->j, ", \"high_freq_factor\": ");
	wf_buf_json_f64(h->j, high);
	wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld}", (long long)old);
	return WF_OK;
}

/* SmolLM3: llama.cpp ropes every layer but each 4th (smollm3.cpp,
 * n_no_rope_layer_step), which is SmolLM3Config's no_rope_layers (1: rope)
 * for an interval of 4. */
static void smollm3_fields(struct wf_hfc *h, const struct wf_hfc_dims *d)
{
	wf_hfc_raw(h, "attention_bias", "false");
	wf_hfc_raw(h, "mlp_bias", "false");
	wf_hfc_int(h, "no_rope_layer_interval", 4);
	wf_hfc_field(h, "no_rope_layers");
	wf_buf_putc(h->j, '[');
	for (int64_t i = 0; i < d->layers; i++) {
		if (i)
			wf_buf_puts(h->j, ", ");
		wf_buf_putc(h->j, (i + 1) % 4 ? '1' : '0');
	}
	wf_buf_putc(h->j, ']');
	wf_hfc_raw(h, "use_sliding_window", "false");
}

/* Granite's multipliers as llama.cpp applies them (granite.cpp): a key
 * absent is no scaling, but for the attention's, 1/sqrt(head_dim). */
static void granite_fields(struct wf_hfc *h, const struct wf_hfc_dims *d)
{
	static const char *const m[][2] = {{"attention.scale", "attention_multiplier"},
					   {"embedding_scale", "embedding_multiplier"},
					   {"residual_scale", "residual_multiplier"},
					   {"logit_scale", "logits_scaling"}};
	wf_hfc_raw(h, "attention_bias", "false");
	wf_hfc_raw(h, "mlp_bias", "false");
	for (size_t i = 0; i < WF_ARRAY_LEN(m); i++) {
		double v;
		if (wf_gguf_get_num(&h->kv, wf_hfc_key(h, m[i][0]), &v) && v != 0)
			wf_hfc_num(h, m[i][1], v, true);
		else
			wf_hfc_num(h, m[i][1], i ? 1.0 : 1.0 / sqrt((double)d->head_dim), i != 0);
	}
}

/* LlamaModel's rope read back (every row whose gen is gen_llama3, and
 * whose hf_said is llama_said): Llama 3's from rope_freqs.weight, else
 * linear or yarn. */
static enum wf_err rope_llama(struct wf_hfc *h, const struct wf_model *m, const struct wf_hfc_dims *d)
{
	if (wf_hfc_has(m, "rope_freqs.weight"))
		return llama3_scaling(h, m, d);
	wf_hfc_scaling(h);
	return WF_OK;
}

static enum wf_err cfg_llama(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			     const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY)
		wf_hfc_raw(h, "mlp_bias", "false");
	return at == WF_HFC_ROPE ? rope_llama(h, m, d) : WF_OK;
}

static enum wf_err cfg_mixtral(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			       const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	enum wf_err rc = WF_OK;
	if (at == WF_HFC_BODY && (rc = wf_hfc_experts(h, "num_local_experts")) == WF_OK) {
		wf_hfc_num(h, "router_jitter_noise", 0.0, false);
		wf_hfc_raw(h, "sliding_window", "null");
	}
	if (at == WF_HFC_ROPE)
		rc = rope_llama(h, m, d);
	return rc;
}

static enum wf_err cfg_mistral3(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
				const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY) /* MistralConfig's default is 4096; llama.cpp's mistral3 has none */
		wf_hfc_raw(h, "sliding_window", "null");
	return at == WF_HFC_ROPE ? rope_llama(h, m, d) : WF_OK;
}

static enum wf_err cfg_smollm3(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			       const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY)
		smollm3_fields(h, d);
	return at == WF_HFC_ROPE ? rope_llama(h, m, d) : WF_OK;
}

static enum wf_err cfg_granite(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			       const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	if (at == WF_HFC_BODY)
		granite_fields(h, d);
	return at == WF_HFC_ROPE ? rope_llama(h, m, d) : WF_OK;
}

/* what config.json says of gen_llama3's tensor instead (rope_llama) */
static const char *const llama_said[] = {"rope_freqs.weight", NULL};

/* conversion/__init__.py's LlamaModel registrations */
const struct wf_arch wf_arch_llama = {
	.hf = {"LlamaForCausalLM", "LLaMAForCausalLM", "MistralForCausalLM", NULL},
	.gguf = "llama", .canon = "llama", .names = {"llama", "LlamaForCausalLM"},
	.tok = WF_VOCAB_LLAMA, .permute_qk = true, .gen = gen_llama3, .kvs = kv_llama, .parts = wf_arch_llama_parts,
	.configs = llama_cfg, .n_configs = WF_ARRAY_LEN(llama_cfg),
	.hf_attn_bias = true, .hf_said = llama_said, .config = cfg_llama,
};

/* Mistral3ForConditionalGeneration's text model (mistral3.py
 * Ministral3Model, a LlamaModel); hf[0] is its hf/ class,
 * MistralForCausalLM, which config.json matches on llama's row */
const struct wf_arch wf_arch_mistral3 = {
	.hf = {"MistralForCausalLM", "Mistral3ForConditionalGeneration", NULL},
	.gguf = "mistral3", .canon = "mistral", .names = {"mistral", "MistralForCausalLM"},
	.wrapper = "Mistral3ForConditionalGeneration", .hf_model_type = "mistral",
	.tok = WF_VOCAB_LLAMA, .permute_qk = true, .gen = gen_llama3, .kvs = kv_mistral3, .parts = wf_arch_llama_parts,
	.hf_said = llama_said, .config = cfg_mistral3,
};

/* SmolLM3Model: LlamaModel's tensors and keys under smollm3; its NoPE
 * layers are not written (llama.cpp's smollm3 leaves every 4th out) */
const struct wf_arch wf_arch_smollm3 = {
	.hf = {"SmolLM3ForCausalLM", NULL}, .gguf = "smollm3", .canon = "smollm3",
	.names = {"smollm3", "SmolLM3ForCausalLM"},
	.tok = WF_VOCAB_LLAMA, .permute_qk = true, .gen = gen_llama3, .kvs = kv_llama, .parts = wf_arch_llama_parts,
	.configs = smollm3_cfg, .n_configs = WF_ARRAY_LEN(smollm3_cfg),
	.hf_said = llama_said, .config = cfg_smollm3,
};

/* GraniteModel: LlamaModel without head_dim, and its four multipliers */
const struct wf_arch wf_arch_granite = {
	.hf = {"GraniteForCausalLM", NULL}, .gguf = "granite", .canon = "granite",
	.names = {"granite", "GraniteForCausalLM"},
	.tok = WF_VOCAB_LLAMA, .permute_qk = true, .gen = gen_llama3, .kvs = kv_granite, .parts = wf_arch_llama_parts,
	.configs = granite_cfg, .n_configs = WF_ARRAY_LEN(granite_cfg),
	.hf_said = llama_said, .config = cfg_granite,
};

/* registered after llama's: a GGUF "llama" is read back as the dense row */
const struct wf_arch wf_arch_mixtral = {
	.hf = {"MixtralForCausalLM", NULL}, .gguf = "llama",
	.tok = WF_VOCAB_LLAMA, .permute_qk = true, .gen = gen_llama3, .kvs = kv_llama, .parts = mixtral_parts,
	.experts = &mixtral_experts,
	.hf_attn_bias = true, .hf_said = llama_said, .config = cfg_mixtral,
};
