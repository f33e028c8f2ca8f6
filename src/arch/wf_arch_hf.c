/* wf_arch_hf.c - the hf/ view's plan (wf_arch.h, wf_arch_hf_plan): the
 * Hugging Face folder transformers would build from a GGUF model, its
 * config.json and generation_config.json, and the tensors of its
 * model.safetensors under HF names (the architecture table read
 * backwards).  Rules: ../shared/docs/gguf-to-hf-and-quantizers.md, Part A;
 * where transformers' own GGUF loader drops what the GGUF says (rope
 * scaling, head_dim of qwen2/phi3, Gemma's soft caps and query scale,
 * attention biases), config.json says it, so that the model computes what
 * llama.cpp computes (docs/hf.md). */
#include "arch/wf_arch.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GGUF's key/values through wf_gguf_kv.h's getters, as the plan reads them. */

/* A whole-number scalar (any integer type, or a bool as 0 or 1), or false. */
static bool kv_int(const struct wf_gguf_vals *k, const char *key, int64_t *v)
{
	int64_t id = wf_gguf_find(k, key);
	bool b;
	if (wf_gguf_bool(k, id, &b) == WF_GGUF_OK) {
		*v = b;
		return true;
	}
	return wf_gguf_int(k, id, INT64_MIN, INT64_MAX, v) == WF_GGUF_OK;
}

/* A finite float scalar (FLOAT32 or FLOAT64), or false. */
static bool kv_num(const struct wf_gguf_vals *k, const char *key, double *v)
{
	return wf_gguf_float(k, wf_gguf_find(k, key), v) == WF_GGUF_OK && isfinite(*v);
}

/* A string's bytes, or NULL. */
static const uint8_t *kv_str(const struct wf_gguf_vals *k, const char *key, size_t *n)
{
	const uint8_t *p;
	uint64_t len;
	if (wf_gguf_str(k, wf_gguf_find(k, key), &p, &len) != WF_GGUF_OK)
		return NULL;
	*n = (size_t)len;
	return p;
}

static bool kv_get(const struct wf_gguf_vals *k, const char *key)
{
	return wf_gguf_find(k, key) >= 0;
}

/* What the plan reads, in one place. */
struct hp {
	struct wf_gguf_vals kv;
	const struct wf_arch_info *a;
	int64_t n_exp;          /* a mixture of experts: its expert_count, else 0 */
	uint32_t *exps;         /* ... and per layer, how many of its 3 stacked expert tensors were seen */
	int64_t n_layer;
	int64_t dense;          /* leading_dense_block_count: the first layers, with no experts */
	int64_t n_nextn;        /* nextn_predict_layers: the last layers, MTP blocks (GLM) */
	char arch[32];          /* general.architecture */
	char key[96];
	struct wf_buf *j;       /* config.json being written */
	bool first;
	char *why;
	bool ds_bias;           /* some layer has exp_probs_b (DeepSeek V3) */
};

static const char *k_(struct hp *h, const char *rest)
{
	snprintf(h->key, sizeof h->key, "%s.%s", h->arch, rest);
	return h->key;
}

static void field(struct hp *h, const char *name)
{
	wf_buf_puts(h->j, h->first ? "\n  " : ",\n  ");
	h->first = false;
	wf_buf_json_str(h->j, name, strlen(name));
	wf_buf_puts(h->j, ": ");
}

static void put_int(struct hp *h, const char *name, int64_t v)
{
	field(h, name);
	wf_buf_printf(h->j, "%lld", (long long)v);
}

static void put_num(struct hp *h, const char *name, double v, bool f32)
{
	field(h, name);
	if (f32)
		wf_buf_json_f32(h->j, (float)v);
	else
		wf_buf_json_f64(h->j, v);
}

static void put_str(struct hp *h, const char *name, const char *v)
{
	field(h, name);
	wf_buf_json_str(h->j, v, strlen(v));
}

static void put_raw(struct hp *h, const char *name, const char *v)
{
	field(h, name);
	wf_buf_puts(h->j, v);
}

/* A required whole number of the architecture, in [lo, hi]. */
static enum wf_err need_int(struct hp *h, const char *rest, int64_t lo, int64_t hi, int64_t *v)
{
	const char *key = k_(h, rest);
	if (!kv_int(&h->kv, key, v))
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: missing, or not a whole number", key);
	if (*v < lo || *v > hi)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld is out of range", key, (long long)*v);
	return WF_OK;
}

static bool has_tensor(const struct wf_model *m, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].name_len == n && memcmp(m->tensors[i].name, name, n) == 0)
			return true;
	return false;
}

static const struct wf_tensor *tensor_of(const struct wf_model *m, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].name_len == n && memcmp(m->tensors[i].name, name, n) == 0)
			return &m->tensors[i];
	return NULL;
}

/* The numbers every architecture has. */
struct dims {
	int64_t embd, ff, layers, heads, kv_heads, ctx, head_dim, rot, vocab;
	double eps, theta;
};

static enum wf_err read_dims(struct hp *h, const struct wf_model *m, struct dims *d)
{
	enum wf_err rc;
	if ((rc = need_int(h, "embedding_length", 1, 1 << 20, &d->embd)) ||
	    (rc = need_int(h, "feed_forward_length", 1, 1 << 24, &d->ff)) ||
	    (rc = need_int(h, "block_count", 1, 1 << 16, &d->layers)) ||
	    (rc = need_int(h, "attention.head_count", 1, 1 << 16, &d->heads)))
		return rc;
	if (!kv_int(&h->kv, k_(h, "attention.head_count_kv"), &d->kv_heads))
		d->kv_heads = d->heads;
	if (d->kv_heads < 1 || d->heads % d->kv_heads)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld does not divide the %lld heads",
			       k_(h, "attention.head_count_kv"), (long long)d->kv_heads, (long long)d->heads);
	if (!kv_int(&h->kv, k_(h, "context_length"), &d->ctx) || d->ctx < 1)
		d->ctx = 2048;
	/* head_dim: attention.key_length, else what the q (Phi-3: qkv) rows say */
	const struct wf_tensor *q = tensor_of(m, "blk.0.attn_q.weight"), *qkv = tensor_of(m, "blk.0.attn_qkv.weight");
	uint64_t qrows = q && q->ndim == 2 ? q->shape[0] : 0, per = (uint64_t)d->heads;
	if (!qrows && qkv && qkv->ndim == 2)
		qrows = qkv->shape[0], per = (uint64_t)(d->heads + 2 * d->kv_heads);
	if (kv_int(&h->kv, k_(h, "attention.key_length"), &d->head_dim) && d->head_dim >= 1) {
		/* as llama.cpp reads it */
	} else if (qrows && qrows % per == 0) {
		d->head_dim = (int64_t)(qrows / per);
	} else {
		if (d->embd % d->heads)
			return wf_fail(h->why, WF_ERR_UNSUP, "metadata: %lld heads do not divide embedding_length %lld",
				       (long long)d->heads, (long long)d->embd);
		d->head_dim = d->embd / d->heads;
	}
	if (!kv_int(&h->kv, k_(h, "rope.dimension_count"), &d->rot) || d->rot < 1 || d->rot > d->head_dim)
		d->rot = d->head_dim;
	if (!kv_num(&h->kv, k_(h, "attention.layer_norm_rms_epsilon"), &d->eps) || !(d->eps > 0))
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: missing, or not a positive number",
			       k_(h, "attention.layer_norm_rms_epsilon"));
	if (!kv_num(&h->kv, k_(h, "rope.freq_base"), &d->theta) || !(d->theta > 0))
		d->theta = 10000.0;
	const struct wf_tensor *emb = tensor_of(m, "token_embd.weight");
	if (!emb || emb->ndim != 2 || (int64_t)emb->shape[1] != d->embd)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor token_embd.weight: missing, or not [vocab, %lld]",
			       (long long)d->embd);
	d->vocab = (int64_t)emb->shape[0];
	return WF_OK;
}

/* Llama 3's rope scaling, read back from the rope_freqs.weight llama.cpp
 * made of it: factor is the largest factor; the band between the two
 * wavelengths gives a line in 1/wavelength whose slope and intercept are
 * old_context / (high - low) and -low / (high - low) (wf_arch.c,
 * llama3_freqs); low_freq_factor is taken as 1, as in every Llama 3.x. */
static void llama3_scaling(struct hp *h, const struct wf_model *m, const struct dims *d)
{
	const struct wf_tensor *t = tensor_of(m, "rope_freqs.weight");
	if (!t || t->type != WF_T_F32 || t->nelems != (uint64_t)(d->rot / 2) || t->part >= m->n_parts ||
	    !m->parts[t->part].data)
		return;
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
	double low = 1, high = 4, old = 8192;
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
	if (factor <= 1)
		return;
	field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"rope_type\": \"llama3\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)factor);
	wf_buf_puts(h->j, ", \"low_freq_factor\": ");
	wf_buf_json_f64(h->j, low);
	wf_buf_puts(h->j, ", \"high_freq_factor\": ");
	wf_buf_json_f64(h->j, high);
	wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld}", (long long)old);
}

/* rope.scaling.type linear or yarn, as the converter writes them. */
static void kv_scaling(struct hp *h)
{
	size_t n;
	const uint8_t *type = kv_str(&h->kv, k_(h, "rope.scaling.type"), &n);
	double factor;
	if (!type || !kv_num(&h->kv, k_(h, "rope.scaling.factor"), &factor))
		return;
	bool linear = n == 6 && memcmp(type, "linear", 6) == 0, yarn = n == 4 && memcmp(type, "yarn", 4) == 0;
	if (!linear && !yarn)
		return;
	field(h, "rope_scaling");
	wf_buf_printf(h->j, "{\"rope_type\": \"%s\", \"factor\": ", linear ? "linear" : "yarn");
	wf_buf_json_f32(h->j, (float)factor);
	int64_t old;
	if (yarn && kv_int(&h->kv, k_(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	wf_buf_putc(h->j, '}');
}

static void token_ids(struct hp *h)
{
	static const char *const ids[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token_id"},
					     {"tokenizer.ggml.eos_token_id", "eos_token_id"},
					     {"tokenizer.ggml.padding_token_id", "pad_token_id"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(ids); i++) {
		int64_t v;
		if (kv_int(&h->kv, ids[i][0], &v) && v >= 0)
			put_int(h, ids[i][1], v);
	}
}

static const char *dtype_name(enum wf_vk vk)
{
	return vk == WF_VK_BF16 ? "bfloat16" : vk == WF_VK_F16 ? "float16" : "float32";
}

/* Gemma 2 and 3: llama.cpp's attention scale is 1/sqrt(head_dim) but for
 * the 27B models (46 and 62 layers), 1/sqrt(hidden / heads). */
static void gemma_fields(struct hp *h, const struct dims *d, bool g3)
{
	bool big = d->layers == (g3 ? 62 : 46);
	put_int(h, "query_pre_attn_scalar", big ? d->embd / d->heads : d->head_dim);
	put_str(h, "hidden_activation", "gelu_pytorch_tanh");
	int64_t sw;
	if (kv_int(&h->kv, k_(h, "attention.sliding_window"), &sw) && sw > 0)
		put_int(h, "sliding_window", sw);
	double cap;
	if (!g3 && kv_num(&h->kv, k_(h, "attn_logit_softcapping"), &cap) && cap > 0)
		put_num(h, "attn_logit_softcapping", cap, true);
	else if (!g3)
		put_raw(h, "attn_logit_softcapping", "null");
	if (kv_num(&h->kv, k_(h, "final_logit_softcapping"), &cap) && cap > 0)
		put_num(h, "final_logit_softcapping", cap, true);
	else
		put_raw(h, "final_logit_softcapping", "null");
	if (g3) {
		put_int(h, "sliding_window_pattern", 6); /* llama.cpp's set_swa_pattern(6) */
		double local;
		if (!kv_num(&h->kv, k_(h, "rope.freq_base_swa"), &local) || !(local > 0))
			local = 10000.0; /* llama.cpp's default for the sliding layers */
		put_num(h, "rope_local_base_freq", local, true);
		if (!kv_get(&h->kv, k_(h, "rope.scaling.type")))
			put_raw(h, "rope_scaling", "null");
	}
}

static void phi3_fields(struct hp *h, const struct wf_model *m, const struct dims *d)
{
	put_num(h, "partial_rotary_factor", (double)d->rot / (double)d->head_dim, false);
	int64_t v;
	if (kv_int(&h->kv, k_(h, "rope.scaling.original_context_length"), &v) && v > 0)
		put_int(h, "original_max_position_embeddings", v);
	if (kv_int(&h->kv, k_(h, "attention.sliding_window"), &v) && v > 0)
		put_int(h, "sliding_window", v);
	const struct wf_tensor *fl = tensor_of(m, "rope_factors_long.weight"),
			       *fs = tensor_of(m, "rope_factors_short.weight");
	if (!fl || !fs || fl->type != WF_T_F32 || fs->type != WF_T_F32 || fl->nelems != fs->nelems ||
	    fl->nelems > 4096 || !m->parts[fl->part].data || !m->parts[fs->part].data)
		return;
	field(h, "rope_scaling");
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

/* A mixture of experts' fields (moe-and-mla.md 2-4, hf/ view): what
 * llama.cpp runs is what transformers computes with them (Qwen2-MoE's
 * weights are not renormalised, Qwen3-MoE's and Mixtral's are). */
static enum wf_err moe_fields(struct hp *h)
{
	int64_t used, ff;
	enum wf_err rc = need_int(h, "expert_used_count", 1, h->n_exp, &used);
	if (rc != WF_OK)
		return rc;
	bool mixtral = strcmp(h->a->hf_class, "MixtralForCausalLM") == 0;
	put_int(h, mixtral ? "num_local_experts" : "num_experts", h->n_exp);
	put_int(h, "num_experts_per_tok", used);
	if (mixtral) {
		put_num(h, "router_jitter_noise", 0.0, false);
		put_raw(h, "sliding_window", "null");
		return WF_OK;
	}
	if (strcmp(h->arch, "olmoe") == 0) {
		/* experts of intermediate_size; llama.cpp does not renormalise */
		put_raw(h, "norm_topk_prob", "false");
		put_raw(h, "clip_qkv", "null");
		return WF_OK;
	}
	if ((rc = need_int(h, "expert_feed_forward_length", 1, 1 << 24, &ff)) != WF_OK)
		return rc;
	put_int(h, "moe_intermediate_size", ff);
	if (kv_int(&h->kv, k_(h, "expert_shared_feed_forward_length"), &ff))
		put_int(h, "shared_expert_intermediate_size", ff);
	put_raw(h, "norm_topk_prob", strcmp(h->arch, "qwen3moe") == 0 ? "true" : "false");
	put_int(h, "decoder_sparse_step", 1);
	put_raw(h, "mlp_only_layers", "[]");
	return WF_OK;
}

/* DeepSeek V2 / V3 (moe-and-mla.md 6.4): V3 when the router has a
 * score-correction bias or sigmoid gating. */
static bool ds_v3(struct hp *h, const struct wf_model *m)
{
	int64_t g;
	(void)m;
	return h->ds_bias || (kv_int(&h->kv, k_(h, "expert_gating_func"), &g) && g == 2);
}

/* DeepseekV2Config / V3Config's MLA, expert and yarn fields, from the
 * deepseek2 key/values DeepseekV2Model wrote (wf_arch.c, kv_deepseek2). */
static enum wf_err ds_fields(struct hp *h, const struct dims *d, bool v3)
{
	int64_t kvr, kmla, vmla, rot, v;
	enum wf_err rc;
	if ((rc = need_int(h, "attention.kv_lora_rank", 1, 1 << 20, &kvr)) ||
	    (rc = need_int(h, "attention.key_length_mla", 2, 1 << 16, &kmla)) ||
	    (rc = need_int(h, "attention.value_length_mla", 1, 1 << 16, &vmla)) ||
	    (rc = need_int(h, "rope.dimension_count", 1, kmla - 1, &rot)))
		return rc;
	put_int(h, "qk_rope_head_dim", rot);
	put_int(h, "qk_nope_head_dim", kmla - rot);
	put_int(h, "v_head_dim", vmla);
	put_int(h, "kv_lora_rank", kvr);
	if (kv_int(&h->kv, k_(h, "attention.q_lora_rank"), &v) && v > 0)
		put_int(h, "q_lora_rank", v);
	else
		put_raw(h, "q_lora_rank", "null");
	if (h->n_exp) {
		int64_t used, ff, ng = 1, tg = 1, gating = 1;
		if ((rc = need_int(h, "expert_used_count", 1, h->n_exp, &used)) ||
		    (rc = need_int(h, "expert_feed_forward_length", 1, 1 << 24, &ff)))
			return rc;
		put_int(h, "n_routed_experts", h->n_exp);
		put_int(h, "num_experts_per_tok", used);
		put_int(h, "moe_intermediate_size", ff);
		put_int(h, "n_shared_experts", kv_int(&h->kv, k_(h, "expert_shared_count"), &v) && v >= 0 ? v : 0);
		put_int(h, "first_k_dense_replace", h->dense);
		double sc;
		put_num(h, "routed_scaling_factor", kv_num(&h->kv, k_(h, "expert_weights_scale"), &sc) && sc != 0 ? sc : 1.0,
			true);
		put_raw(h, "norm_topk_prob", kv_int(&h->kv, k_(h, "expert_weights_norm"), &v) && v ? "true" : "false");
		if (kv_int(&h->kv, k_(h, "expert_group_count"), &v) && v >= 1)
			ng = v;
		if (kv_int(&h->kv, k_(h, "expert_group_used_count"), &v) && v >= 1)
			tg = v;
		if (h->n_exp % ng || tg > ng)
			return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld groups of %lld experts, %lld kept",
				       k_(h, "expert_group_count"), (long long)ng, (long long)h->n_exp, (long long)tg);
		put_int(h, "n_group", ng);
		put_int(h, "topk_group", tg);
		if (kv_int(&h->kv, k_(h, "expert_gating_func"), &v))
			gating = v;
		put_str(h, "scoring_func", gating == 2 ? "sigmoid" : "softmax");
		put_str(h, "topk_method", v3 ? "noaux_tc" : ng > 1 ? "group_limited_greedy" : "greedy");
	}
	put_raw(h, "attention_bias", "false");
	put_raw(h, "rope_interleave", "true");
	put_int(h, "num_nextn_predict_layers", 0);
	size_t n;
	const uint8_t *type = kv_str(&h->kv, k_(h, "rope.scaling.type"), &n);
	double factor, x;
	int64_t old;
	if (!type || n != 4 || memcmp(type, "yarn", 4) || !kv_num(&h->kv, k_(h, "rope.scaling.factor"), &factor))
		return WF_OK;
	field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"type\": \"yarn\", \"rope_type\": \"yarn\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)factor);
	if (kv_int(&h->kv, k_(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	static const char *const yk[][2] = {{"rope.scaling.yarn_beta_fast", "beta_fast"},
					    {"rope.scaling.yarn_beta_slow", "beta_slow"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(yk); i++)
		if (kv_num(&h->kv, k_(h, yk[i][0]), &x)) {
			wf_buf_printf(h->j, ", \"%s\": ", yk[i][1]);
			wf_buf_json_f32(h->j, (float)x);
		}
	/* yarn_log_multiplier is 0.1 mscale_all_dim; mscale the same, so that
	 * transformers' rope attention factor is 1 as llama.cpp's is */
	if (kv_num(&h->kv, k_(h, "rope.scaling.yarn_log_multiplier"), &x)) {
		wf_buf_puts(h->j, ", \"mscale\": ");
		wf_buf_json_f32(h->j, (float)(x / 0.1));
		wf_buf_puts(h->j, ", \"mscale_all_dim\": ");
		wf_buf_json_f32(h->j, (float)(x / 0.1));
	}
	wf_buf_putc(h->j, '}');
	(void)d;
	return WF_OK;
}

/* GLM-4.5's fields (moe-and-mla.md 7, hf/ view): what llama.cpp's
 * glm4moe graph runs, as Glm4MoeConfig says it.  The MTP blocks stay in
 * the file (transformers ignores their tensors) and out of
 * num_hidden_layers. */
/* The leading dense layers and the trailing MTP blocks, each within the
 * block count (h->dense, h->n_nextn). */
static enum wf_err layer_kinds(struct hp *h, const struct dims *d)
{
	h->dense = h->n_nextn = 0;
	enum wf_err rc = WF_OK;
	if (kv_get(&h->kv, k_(h, "leading_dense_block_count")))
		rc = need_int(h, "leading_dense_block_count", 0, d->layers, &h->dense);
	if (rc == WF_OK && kv_get(&h->kv, k_(h, "nextn_predict_layers")))
		rc = need_int(h, "nextn_predict_layers", 0, d->layers - 1, &h->n_nextn);
	return rc;
}

static enum wf_err glm4moe_fields(struct hp *h, const struct wf_model *m, const struct dims *d)
{
	int64_t used, ff, shared, v;
	double scale;
	enum wf_err rc;
	if ((rc = need_int(h, "expert_used_count", 1, h->n_exp, &used)) != WF_OK ||
	    (rc = need_int(h, "expert_feed_forward_length", 1, 1 << 24, &ff)) != WF_OK ||
	    (rc = need_int(h, "expert_shared_count", 0, 1 << 16, &shared)) != WF_OK)
		return rc;
	/* llama.cpp: no key is sigmoid; transformers' router has no other */
	if (kv_int(&h->kv, k_(h, "expert_gating_func"), &v) && v != 2)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld, but transformers' Glm4Moe routes by sigmoid (2) "
			       "only", h->key, (long long)v);
	put_int(h, "n_routed_experts", h->n_exp);
	put_int(h, "num_experts_per_tok", used);
	put_int(h, "moe_intermediate_size", ff);
	put_int(h, "n_shared_experts", shared);
	put_int(h, "first_k_dense_replace", h->dense);
	/* llama.cpp scales by expert_weights_scale unless it is 0 or absent */
	if (!kv_num(&h->kv, k_(h, "expert_weights_scale"), &scale) || scale == 0)
		scale = 1.0;
	put_num(h, "routed_scaling_factor", scale, true);
	put_raw(h, "norm_topk_prob", kv_int(&h->kv, k_(h, "expert_weights_norm"), &v) && v ? "true" : "false");
	put_int(h, "n_group", kv_int(&h->kv, k_(h, "expert_group_count"), &v) && v > 1 ? v : 1);
	put_int(h, "topk_group", kv_int(&h->kv, k_(h, "expert_group_used_count"), &v) && v > 1 ? v : 1);
	put_num(h, "partial_rotary_factor", (double)d->rot / (double)d->head_dim, false);
	put_raw(h, "use_qk_norm", has_tensor(m, "blk.0.attn_q_norm.weight") ? "true" : "false");
	put_raw(h, "attention_bias", has_tensor(m, "blk.0.attn_q.bias") ? "true" : "false");
	put_int(h, "num_nextn_predict_layers", h->n_nextn);
	return WF_OK;
}

/* SmolLM3: llama.cpp ropes every layer but each 4th (smollm3.cpp,
 * n_no_rope_layer_step), which is SmolLM3Config's no_rope_layers (1: rope)
 * for an interval of 4. */
static void smollm3_fields(struct hp *h, const struct dims *d)
{
	put_raw(h, "attention_bias", "false");
	put_raw(h, "mlp_bias", "false");
	put_int(h, "no_rope_layer_interval", 4);
	field(h, "no_rope_layers");
	wf_buf_putc(h->j, '[');
	for (int64_t i = 0; i < d->layers; i++) {
		if (i)
			wf_buf_puts(h->j, ", ");
		wf_buf_putc(h->j, (i + 1) % 4 ? '1' : '0');
	}
	wf_buf_putc(h->j, ']');
	put_raw(h, "use_sliding_window", "false");
}

/* Granite's multipliers as llama.cpp applies them (granite.cpp): a key
 * absent is no scaling, but for the attention's, 1/sqrt(head_dim). */
static void granite_fields(struct hp *h, const struct dims *d)
{
	static const char *const m[][2] = {{"attention.scale", "attention_multiplier"},
					   {"embedding_scale", "embedding_multiplier"},
					   {"residual_scale", "residual_multiplier"},
					   {"logit_scale", "logits_scaling"}};
	put_raw(h, "attention_bias", "false");
	put_raw(h, "mlp_bias", "false");
	for (size_t i = 0; i < WF_ARRAY_LEN(m); i++) {
		double v;
		if (kv_num(&h->kv, k_(h, m[i][0]), &v) && v != 0)
			put_num(h, m[i][1], v, true);
		else
			put_num(h, m[i][1], i ? 1.0 : 1.0 / sqrt((double)d->head_dim), i != 0);
	}
}

/* gpt-oss's fields (moe-and-mla.md 8.3) as GptOssConfig reads them, for
 * what llama.cpp's gpt-oss graph runs: even layers slide (its default
 * period 2, layer 0 sliding), SWIGLU_OAI's limit 7 (hard-coded there), and
 * YaRN's correction dims rounded (ggml_rope_yarn_corr_dims floors and ceils
 * them: rope_scaling.truncate true, whatever the checkpoint said). */
static enum wf_err gptoss_fields(struct hp *h, const struct wf_model *m, const struct dims *d)
{
	int64_t used, win, old;
	double v;
	enum wf_err rc;
	if ((rc = need_int(h, "expert_used_count", 1, h->n_exp, &used)) != WF_OK ||
	    (rc = need_int(h, "attention.sliding_window", 1, INT32_MAX, &win)) != WF_OK)
		return rc;
	put_int(h, "num_local_experts", h->n_exp);
	put_int(h, "num_experts_per_tok", used);
	put_int(h, "experts_per_token", used);
	put_int(h, "sliding_window", win);
	field(h, "layer_types");
	wf_buf_putc(h->j, '[');
	for (int64_t i = 0; i < d->layers; i++)
		wf_buf_puts(h->j, i ? (i % 2 ? ", \"full_attention\"" : ", \"sliding_attention\"") : "\"sliding_attention\"");
	wf_buf_putc(h->j, ']');
	put_raw(h, "attention_bias", has_tensor(m, "blk.0.attn_q.bias") ? "true" : "false");
	put_num(h, "attention_dropout", 0.0, false);
	put_num(h, "swiglu_limit", 7.0, false);
	put_num(h, "router_aux_loss_coef", 0.9, false);
	put_raw(h, "output_router_logits", "false");
	size_t n;
	const uint8_t *type = kv_str(&h->kv, k_(h, "rope.scaling.type"), &n);
	if (!type || n != 4 || memcmp(type, "yarn", 4) != 0 || !kv_num(&h->kv, k_(h, "rope.scaling.factor"), &v)) {
		put_raw(h, "rope_scaling", "null");
		return WF_OK;
	}
	field(h, "rope_scaling");
	wf_buf_puts(h->j, "{\"rope_type\": \"yarn\", \"factor\": ");
	wf_buf_json_f32(h->j, (float)v);
	wf_buf_puts(h->j, ", \"beta_fast\": ");
	wf_buf_json_f32(h->j, kv_num(&h->kv, k_(h, "rope.scaling.yarn_beta_fast"), &v) ? (float)v : 32.0f);
	wf_buf_puts(h->j, ", \"beta_slow\": ");
	wf_buf_json_f32(h->j, kv_num(&h->kv, k_(h, "rope.scaling.yarn_beta_slow"), &v) ? (float)v : 1.0f);
	if (kv_int(&h->kv, k_(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	wf_buf_puts(h->j, ", \"truncate\": true}");
	if (kv_int(&h->kv, k_(h, "rope.scaling.original_context_length"), &old))
		put_int(h, "initial_context_length", old);
	return WF_OK;
}

static enum wf_err write_config(struct hp *h, const struct wf_model *m, enum wf_vk vk)
{
	struct dims d;
	enum wf_err rc = read_dims(h, m, &d);
	if (rc != WF_OK)
		return rc;
	bool g2 = strcmp(h->arch, "gemma2") == 0, g3 = strcmp(h->arch, "gemma3") == 0;
	bool phi3 = strcmp(h->arch, "phi3") == 0, ds = strcmp(h->arch, "deepseek2") == 0, v3 = ds && ds_v3(h, m);
	bool glm = strcmp(h->arch, "glm4moe") == 0, oss = strcmp(h->arch, "gpt-oss") == 0;
	const char *cls = !ds ? h->a->hf_class : v3 ? "DeepseekV3ForCausalLM" : "DeepseekV2ForCausalLM";
	if ((rc = layer_kinds(h, &d)) != WF_OK)
		return rc;
	wf_buf_putc(h->j, '{');
	field(h, "architectures");
	wf_buf_puts(h->j, "[");
	wf_buf_json_str(h->j, cls, strlen(cls));
	wf_buf_puts(h->j, "]");
	put_str(h, "model_type", ds ? (v3 ? "deepseek_v3" : "deepseek_v2")
				    : h->a->model_type ? h->a->model_type : g3 ? "gemma3_text" : oss ? "gpt_oss" : h->arch);
	put_int(h, "hidden_size", d.embd);
	put_int(h, "intermediate_size", d.ff);
	put_int(h, "num_hidden_layers", d.layers - h->n_nextn);
	put_int(h, "num_attention_heads", d.heads);
	/* MLA: the GGUF's one kv head and latent key length are llama.cpp's */
	put_int(h, "num_key_value_heads", ds ? d.heads : d.kv_heads);
	put_int(h, "head_dim", ds ? d.rot : d.head_dim);
	put_int(h, "max_position_embeddings", d.ctx);
	put_num(h, "rms_norm_eps", d.eps, true);
	put_num(h, "rope_theta", d.theta, true);
	put_int(h, "vocab_size", d.vocab);
	bool tied = !has_tensor(m, "output.weight") || h->a->no_lm_head;
	put_raw(h, "tie_word_embeddings", tied ? "true" : "false");
	bool g1 = strcmp(h->arch, "gemma") == 0;
	if (!g1 && !g2 && !g3)
		put_str(h, "hidden_act", "silu");
	else
		put_str(h, "hidden_act", "gelu_pytorch_tanh");
	if (g1)
		put_str(h, "hidden_activation", "gelu_pytorch_tanh");
	if (strcmp(h->arch, "llama") == 0 || strcmp(h->arch, "qwen3") == 0 || strcmp(h->arch, "qwen3moe") == 0 ||
	    strcmp(h->arch, "olmo2") == 0)
		put_raw(h, "attention_bias", has_tensor(m, "blk.0.attn_q.bias") ? "true" : "false");
	if (ds && (rc = ds_fields(h, &d, v3)) != WF_OK)
		return rc;
	if (glm && (rc = glm4moe_fields(h, m, &d)) != WF_OK)
		return rc;
	if (oss && (rc = gptoss_fields(h, m, &d)) != WF_OK)
		return rc;
	if (h->a->experts && !ds && !glm && (rc = moe_fields(h)) != WF_OK)
		return rc;
	if (strcmp(h->arch, "llama") == 0 && !h->a->experts)
		put_raw(h, "mlp_bias", "false");
	if (strcmp(h->arch, "smollm3") == 0)
		smollm3_fields(h, &d);
	if (strcmp(h->arch, "granite") == 0)
		granite_fields(h, &d);
	if (strcmp(h->arch, "mistral3") == 0)
		put_raw(h, "sliding_window", "null"); /* MistralConfig's default is 4096; llama.cpp's mistral3 has none */
	token_ids(h);
	if (g2 || g3)
		gemma_fields(h, &d, g3);
	if (phi3)
		phi3_fields(h, m, &d);
	else if (strcmp(h->arch, "llama") == 0 && has_tensor(m, "rope_freqs.weight"))
		llama3_scaling(h, m, &d);
	else if (!g2 && !ds && !oss)
		kv_scaling(h);
	put_str(h, "torch_dtype", dtype_name(vk));
	wf_buf_puts(h->j, "\n}\n");
	return WF_OK;
}

/* generation_config.json: the special ids, and the sampling settings
 * the converter keeps as general.sampling.* (wf_arch.c, kv_general). */
static void write_gen(struct hp *h)
{
	struct wf_buf *j = h->j;
	h->first = true;
	wf_buf_putc(j, '{');
	token_ids(h);
	static const char *const f[][2] = {{"general.sampling.temp", "temperature"},
					   {"general.sampling.top_p", "top_p"},
					   {"general.sampling.min_p", "min_p"}};
	bool sample = false;
	for (size_t i = 0; i < WF_ARRAY_LEN(f); i++) {
		double v;
		if (kv_num(&h->kv, f[i][0], &v)) {
			put_num(h, f[i][1], v, true);
			sample = true;
		}
	}
	int64_t k;
	if (kv_int(&h->kv, "general.sampling.top_k", &k)) {
		put_int(h, "top_k", k);
		sample = true;
	}
	if (sample)
		put_raw(h, "do_sample", "true");
	wf_buf_puts(j, h->first ? "}\n" : "\n}\n");
}

static uint32_t out_type(enum wf_vk vk)
{
	return vk == WF_VK_BF16 ? WF_T_BF16 : vk == WF_VK_F16 ? WF_T_F16 : WF_T_F32;
}

/* A stacked expert tensor (ne [in, out, E]) as its E per-expert HF
 * tensors, each a slab of it (moe-and-mla.md 2-4, hf/ view). */
static enum wf_err plan_experts(struct hp *h, const struct wf_model *m, size_t i, enum wf_vk vk,
				struct wf_arch_plan *pl)
{
	const struct wf_tensor *t = &m->tensors[i];
	char q[96], hn[WF_GGUF_NAME_MAX];
	bool floats = wf_type_floats(t->type);
	unsigned long layer = strtoul(t->name + 4, NULL, 10); /* "blk.L.": wf_gguf_expert_name checked it */
	if (layer < (unsigned long)h->n_layer)
		h->exps[layer]++;
	if (!floats || t->ndim != 3 || (int64_t)t->shape[0] != h->n_exp)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: not %lld experts of a float type stacked on its outer axis "
			       "(metadata key %s)", wf_quote(q, sizeof q, t->name, t->name_len), (long long)h->n_exp,
			       k_(h, "expert_count"));
	for (uint64_t x = 0; x < t->shape[0]; x++) {
		struct wf_arch_tensor *o = &pl->t[pl->n];
		memset(o, 0, sizeof *o);
		wf_gguf_expert_name(h->a->hf_class, t->name, (unsigned long)x, hn, sizeof hn);
		o->src = (int64_t)i;
		o->ndim = 2;
		o->ne[0] = t->shape[2];
		o->ne[1] = t->shape[1];
		o->type = out_type(vk);
		o->n_stack = (uint16_t)t->shape[0];
		o->sliced = true;
		o->slab = x;
		if (!wf_mul_ok(t->nelems / t->shape[0], o->type == WF_T_F32 ? 4 : 2, &o->nbytes))
			return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many bytes", t->name);
		if (!(o->name = wf_arch_name_add(pl, hn, strlen(hn))))
			return wf_fail(h->why, WF_ERR_NOMEM, "out of memory");
		pl->n++;
	}
	return WF_OK;
}

/* The GGUF tensors with no HF tensor that are not lost: Llama 3's
 * rope_freqs and Phi-3's rope factors, which config.json's rope_scaling
 * says, and Gemma 2's output.weight (docs/hf.md: HF ties it). */
static bool said_otherwise(const struct hp *h, const char *name)
{
	if (strcmp(h->arch, "llama") == 0)
		return strcmp(name, "rope_freqs.weight") == 0;
	if (strcmp(h->arch, "phi3") == 0)
		return strcmp(name, "rope_factors_long.weight") == 0 || strcmp(name, "rope_factors_short.weight") == 0;
	return h->a->no_lm_head && strcmp(name, "output.weight") == 0;
}

/* DeepSeek's attn_k_b and attn_v_b as the kv_b_proj they were split from
 * (moe-and-mla.md 6.4): planned at k_b, read from both (WF_HS_KVB); v_b
 * gives nothing of its own. */
static enum wf_err plan_kv_b(struct hp *h, const struct wf_model *m, size_t i, enum wf_vk vk, struct wf_arch_plan *pl)
{
	const struct wf_tensor *t = &m->tensors[i];
	char q[96], other[WF_GGUF_NAME_MAX + 8], hn[WF_GGUF_NAME_MAX];
	size_t stem = (size_t)(strstr(t->name, ".attn_") - t->name);
	bool is_k = t->name[stem + 6] == 'k';
	snprintf(other, sizeof other, "%.*s.attn_%c_b.weight", (int)stem, t->name, is_k ? 'v' : 'k');
	size_t j = m->n_tensors;
	for (size_t x = 0; x < m->n_tensors; x++)
		if (m->tensors[x].name_len == strlen(other) && memcmp(m->tensors[x].name, other, strlen(other)) == 0)
			j = x;
	if (j == m->n_tensors)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: no %s to make kv_b_proj with",
			       wf_quote(q, sizeof q, t->name, t->name_len), other);
	if (!is_k)
		return WF_OK;
	const struct wf_tensor *v = &m->tensors[j];
	bool floats = wf_type_floats(t->type) && wf_type_floats(v->type);
	/* k_b [heads, kv_lora_rank, nope], v_b [heads, v, kv_lora_rank] */
	if (!floats || t->ndim != 3 || v->ndim != 3 || t->shape[0] != v->shape[0] || t->shape[1] != v->shape[2] ||
	    !t->shape[0] || !t->shape[1] || !t->shape[2] || !v->shape[1])
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: not [heads, kv_lora_rank, nope] of floats with %s [heads, v, "
			       "kv_lora_rank]", wf_quote(q, sizeof q, t->name, t->name_len), other);
	if (j > UINT32_MAX)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many tensors", other);
	struct wf_arch_tensor *o = &pl->t[pl->n];
	memset(o, 0, sizeof *o);
	snprintf(hn, sizeof hn, "model.layers.%lu.self_attn.kv_b_proj.weight", strtoul(t->name + 4, NULL, 10));
	o->src = (int64_t)i;
	o->ndim = 2;
	o->ne[0] = t->shape[1];
	o->ne[1] = t->shape[0] * (t->shape[2] + v->shape[1]);
	o->type = out_type(vk);
	o->hs.kind = WF_HS_KVB;
	o->hs.off = (uint32_t)j;
	if (!wf_mul_ok(o->ne[0] * o->ne[1], o->type == WF_T_F32 ? 4 : 2, &o->nbytes))
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many bytes", t->name);
	if (!(o->name = wf_arch_name_add(pl, hn, strlen(hn))))
		return wf_fail(h->why, WF_ERR_NOMEM, "out of memory");
	pl->n++;
	return WF_OK;
}

/* Index of the tensor named "blk.L.<part><sfx>" (the layer's prefix
 * taken from name, up to its dot at stem), or m->n_tensors. */
static size_t sibling(const struct wf_model *m, const char *name, size_t stem, const char *part, const char *sfx)
{
	char want[WF_GGUF_NAME_MAX + 32];
	int n = snprintf(want, sizeof want, "%.*s%s%s", (int)stem, name, part, sfx);
	for (size_t x = 0; n > 0 && (size_t)n < sizeof want && x < m->n_tensors; x++)
		if (m->tensors[x].name_len == (size_t)n && memcmp(m->tensors[x].name, want, (size_t)n) == 0)
			return x;
	return m->n_tensors;
}

/* One planned tensor read from m->tensors[i] (and src2) through gather,
 * numpy shape shape[0..ndim) (outermost first). */
static enum wf_err oss_put(struct hp *h, const struct wf_model *m, size_t i, size_t src2, enum wf_gather gather,
			   uint32_t ndim, const uint64_t *shape, const char *hn, enum wf_vk vk, struct wf_arch_plan *pl)
{
	struct wf_arch_tensor *o = &pl->t[pl->n];
	memset(o, 0, sizeof *o);
	o->src = (int64_t)i;
	o->ndim = ndim;
	uint64_t nel = 1;
	wf_shape_reverse(o->ne, shape, ndim);
	for (uint32_t k = 0; k < ndim; k++)
		nel *= shape[k];
	o->type = out_type(vk);
	o->gather = (uint8_t)gather;
	if (gather == WF_GATHER_T_PAIR || gather == WF_GATHER_PAIR) {
		if (src2 > UINT32_MAX)
			return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many tensors", m->tensors[i].name);
		o->src2 = (uint32_t)src2;
	}
	if (!wf_mul_ok(nel, o->type == WF_T_F32 ? 4 : 2, &o->nbytes))
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many bytes", m->tensors[i].name);
	if (!(o->name = wf_arch_name_add(pl, hn, strlen(hn))))
		return wf_fail(h->why, WF_ERR_NOMEM, "out of memory");
	pl->n++;
	return WF_OK;
}

/* gpt-oss's experts as transformers' GptOssExperts holds them
 * (moe-and-mla.md 8.3), one tensor a projection: gate_up_proj [E, H, 2F]
 * is ffn_gate_exps and ffn_up_exps [E, F, H] transposed and interleaved
 * (gate in the even columns), read from both (WF_GATHER_T_PAIR; planned
 * at gate, up gives nothing of its own), its bias [E, 2F] likewise
 * (WF_GATHER_PAIR); down_proj [E, F, H] is ffn_down_exps [E, H, F]
 * transposed (WF_GATHER_T_ALL), its bias as it is.  The sinks lose the
 * ".weight" the converter gave them.  False when t is none of these. */
static bool plan_gptoss(struct hp *h, const struct wf_model *m, size_t i, enum wf_vk vk, struct wf_arch_plan *pl,
			enum wf_err *rc)
{
	const struct wf_tensor *t = &m->tensors[i];
	char hn[WF_GGUF_NAME_MAX + 32], q[96];
	const char *dot = strlen(t->name) == t->name_len && strncmp(t->name, "blk.", 4) == 0 ? strchr(t->name + 4, '.')
											       : NULL;
	unsigned long layer = dot ? strtoul(t->name + 4, NULL, 10) : 0;
	const char *part = dot ? dot + 1 : "";
	bool w = strstr(part, ".weight") && strcmp(strstr(part, ".weight"), ".weight") == 0;
	bool b = !w && strstr(part, ".bias") && strcmp(strstr(part, ".bias"), ".bias") == 0;
	size_t stem = (size_t)(part - t->name);
	const char *sfx = w ? ".weight" : ".bias";
	bool gate = strncmp(part, "ffn_gate_exps.", 14) == 0, up = strncmp(part, "ffn_up_exps.", 12) == 0;
	bool down = strncmp(part, "ffn_down_exps.", 14) == 0;
	*rc = WF_OK;
	if (dot && w && strcmp(part, "attn_sinks.weight") == 0) {
		snprintf(hn, sizeof hn, "model.layers.%lu.self_attn.sinks", layer);
		uint64_t shape[1] = {t->ndim == 1 ? t->shape[0] : 0};
		if (t->ndim != 1)
			*rc = wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: not 1-D", wf_quote(q, sizeof q, t->name, t->name_len));
		else
			*rc = oss_put(h, m, i, 0, WF_GATHER_NONE, 1, shape, hn, vk, pl);
		return true;
	}
	if (!dot || !(w || b) || !(gate || up || down))
		return false;
	const struct wf_type *ty = wf_type_get(t->type);
	bool floats = t->type == WF_T_F32 || t->type == WF_T_F16 || t->type == WF_T_BF16 ||
		      (ty && ty->vk == WF_VK_F32 && !ty->layer);
	uint32_t nd = w ? 3 : 2;
	if (!floats || t->ndim != nd || (int64_t)t->shape[0] != h->n_exp || !t->shape[1] || (w && !t->shape[2])) {
		*rc = wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: not %lld experts of a float type stacked on its outer axis "
			      "(metadata key %s)", wf_quote(q, sizeof q, t->name, t->name_len), (long long)h->n_exp,
			      k_(h, "expert_count"));
		return true;
	}
	if (w && layer < (unsigned long)h->n_layer)
		h->exps[layer]++;
	if (up)
		return true; /* read by gate's gate_up_proj */
	if (down) {
		snprintf(hn, sizeof hn, "model.layers.%lu.mlp.experts.%s", layer, w ? "down_proj" : "down_proj_bias");
		uint64_t shape[3] = {t->shape[0], w ? t->shape[2] : t->shape[1], w ? t->shape[1] : 0};
		*rc = oss_put(h, m, i, 0, w ? WF_GATHER_T_ALL : WF_GATHER_NONE, nd, shape, hn, vk, pl);
		return true;
	}
	size_t j = sibling(m, t->name, stem, "ffn_up_exps", sfx);
	const struct wf_tensor *u = j < m->n_tensors ? &m->tensors[j] : NULL;
	if (!u || u->type != t->type || u->ndim != t->ndim || memcmp(u->shape, t->shape, nd * sizeof *t->shape) != 0) {
		*rc = wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: no ffn_up_exps%s of its type and shape to make gate_up_proj "
			      "with", wf_quote(q, sizeof q, t->name, t->name_len), sfx);
		return true;
	}
	snprintf(hn, sizeof hn, "model.layers.%lu.mlp.experts.%s", layer, w ? "gate_up_proj" : "gate_up_proj_bias");
	uint64_t shape[3] = {t->shape[0], w ? t->shape[2] : 2 * t->shape[1], w ? 2 * t->shape[1] : 0};
	*rc = oss_put(h, m, i, j, w ? WF_GATHER_T_PAIR : WF_GATHER_PAIR, nd, shape, hn, vk, pl);
	return true;
}

/* One GGUF tensor as its HF tensor, or nothing (no HF counterpart).  A
 * tensor the architecture's row does not know (a Mixtral's experts and
 * router under general.architecture llama) is refused: transformers would
 * build the dense model and initialise what it lacks at random. */
static enum wf_err plan_tensor(struct hp *h, const struct wf_model *m, size_t i, const struct dims *d, enum wf_vk vk,
			       struct wf_arch_plan *pl)
{
	const struct wf_tensor *t = &m->tensors[i];
	struct wf_arch_tensor *o = &pl->t[pl->n];
	char qk, hn[WF_GGUF_NAME_MAX], q[96];
	bool norm;
	memset(o, 0, sizeof *o);
	if (strlen(t->name) == t->name_len && h->a->experts && wf_gguf_expert_name(h->a->hf_class, t->name, 0, hn, sizeof hn))
		return plan_experts(h, m, i, vk, pl);
	enum wf_err rc;
	if (strcmp(h->arch, "gpt-oss") == 0 && plan_gptoss(h, m, i, vk, pl, &rc))
		return rc;
	if (strlen(t->name) == t->name_len && strcmp(h->arch, "deepseek2") == 0 && strstr(t->name, ".attn_") &&
	    (strcmp(strstr(t->name, ".attn_"), ".attn_k_b.weight") == 0 ||
	     strcmp(strstr(t->name, ".attn_"), ".attn_v_b.weight") == 0))
		return plan_kv_b(h, m, i, vk, pl);
	if (strlen(t->name) != t->name_len || !wf_gguf_to_hf_name(h->a->hf_class, t->name, hn, sizeof hn, &qk, &norm)) {
		if (strlen(t->name) == t->name_len && said_otherwise(h, t->name))
			return WF_OK;
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: %s has no HF name for it (transformers would build the "
			       "model without it)", wf_quote(q, sizeof q, t->name, t->name_len), h->a->hf_class);
	}
	const struct wf_type *ty = wf_type_get(t->type);
	bool floats = wf_type_floats(t->type);
	if (!floats || t->ndim < 1 || t->ndim > 4)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: its type %s has no float values for model.safetensors",
			       wf_quote(q, sizeof q, t->name, t->name_len), ty && ty->name ? ty->name : "?");
	o->src = (int64_t)i;
	o->ndim = t->ndim;
	wf_shape_reverse(o->ne, t->shape, t->ndim);
	if (qk) {
		o->perm_heads = (uint64_t)(qk == 'q' ? d->heads : d->kv_heads);
		o->perm_to_hf = true;
		if (!t->ndim || t->shape[0] % (2 * o->perm_heads))
			return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: %llu rows do not split into %llu heads of pairs",
				       t->name, (unsigned long long)(t->ndim ? t->shape[0] : 0),
				       (unsigned long long)o->perm_heads);
	}
	bool minus = norm && h->a->norm_plus_one;
	o->add = minus ? WF_ADD_SUB_F32 : WF_ADD_NONE;
	o->type = minus ? WF_T_F32 : out_type(vk);
	if (!wf_mul_ok(t->nelems, o->type == WF_T_F32 ? 4 : 2, &o->nbytes))
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many bytes", t->name);
	if (!(o->name = wf_arch_name_add(pl, hn, strlen(hn))))
		return wf_fail(h->why, WF_ERR_NOMEM, "out of memory");
	pl->n++;
	return WF_OK;
}

static int by_name(const void *x, const void *y)
{
	return strcmp(((const struct wf_arch_tensor *)x)->name, ((const struct wf_arch_tensor *)y)->name);
}

static enum wf_err plan_all(struct hp *h, const struct wf_model *m, enum wf_vk vk, struct wf_hf_plan *out)
{
	struct wf_buf cfg = {0}, gen = {0};
	struct dims d;
	h->j = &cfg;
	h->first = true;
	enum wf_err rc = write_config(h, m, vk);
	if (rc == WF_OK)
		rc = read_dims(h, m, &d);
	h->j = &gen;
	if (rc == WF_OK)
		write_gen(h);
	struct wf_arch_plan *pl = &out->st;
	pl->vocab_size = -1;
	size_t cap = m->n_tensors ? m->n_tensors : 1;
	char hn[WF_GGUF_NAME_MAX];
	for (size_t i = 0; rc == WF_OK && h->n_exp && i < m->n_tensors; i++)
		if (wf_gguf_expert_name(h->a->hf_class, m->tensors[i].name, 0, hn, sizeof hn) &&
		    !wf_add_ok(cap, (size_t)h->n_exp, &cap))
			rc = WF_ERR_NOMEM;
	if (rc == WF_OK && !(pl->t = calloc(cap, sizeof *pl->t)))
		rc = WF_ERR_NOMEM;
	h->n_layer = rc == WF_OK ? d.layers : 0;
	if (rc == WF_OK && h->n_exp && !(h->exps = calloc((size_t)d.layers, sizeof *h->exps)))
		rc = WF_ERR_NOMEM;
	for (size_t i = 0; rc == WF_OK && i < m->n_tensors; i++)
		rc = plan_tensor(h, m, i, &d, vk, pl);
	/* transformers would initialise a missing expert at random; the
	 * leading dense layers have none, and an MTP block none or all */
	for (int64_t l = 0; rc == WF_OK && h->exps && l < d.layers; l++)
		if (l < h->dense ? h->exps[l] != 0 : h->exps[l] != 3 && !(l >= d.layers - h->n_nextn && !h->exps[l]))
			rc = wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s %lld, but layer %lld has %u of its %d stacked "
				     "expert tensors", k_(h, "expert_count"), (long long)h->n_exp, (long long)l, h->exps[l],
				     l < h->dense ? 0 : 3);
	free(h->exps);
	h->exps = NULL;
	if (rc == WF_OK)
		qsort(pl->t, pl->n, sizeof *pl->t, by_name);
	for (size_t i = 1; rc == WF_OK && i < pl->n; i++)
		if (strcmp(pl->t[i - 1].name, pl->t[i].name) == 0)
			rc = wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: two GGUF tensors map to it", pl->t[i].name);
	if (rc == WF_OK && (cfg.oom || gen.oom || !wf_buf_finish(&cfg) || !wf_buf_finish(&gen)))
		rc = WF_ERR_NOMEM;
	if (rc == WF_OK) {
		out->config_json = cfg.data, out->config_len = cfg.len;
		out->gen_json = gen.data, out->gen_len = gen.len;
	} else {
		wf_buf_free(&cfg);
		wf_buf_free(&gen);
	}
	return rc;
}

enum wf_err wf_arch_hf_plan(const struct wf_model *m, enum wf_vk vk, struct wf_hf_plan *out, char *why)
{
	memset(out, 0, sizeof *out);
	struct hp h = {.why = why};
	h.kv = wf_gguf_vals_of(m);
	enum wf_err rc = m->format == WF_FMT_GGUF && m->n_parts && h.kv.data
				 ? WF_OK
				 : wf_fail(why, WF_ERR_UNSUP, "not a GGUF model");
	size_t n = 0;
	const uint8_t *arch = rc == WF_OK ? kv_str(&h.kv, "general.architecture", &n) : NULL;
	if (rc == WF_OK && (!arch || n >= sizeof h.arch || memchr(arch, 0, n)))
		rc = wf_fail(why, WF_ERR_UNSUP, "metadata key general.architecture: missing, or not a short string");
	if (rc == WF_OK) {
		memcpy(h.arch, arch, n);
		h.arch[n] = '\0';
		int64_t ne = 0;
		if (!(h.a = wf_arch_info_of(h.arch, kv_int(&h.kv, k_(&h, "expert_count"), &ne) && ne > 0))) {
			char q[96];
			rc = wf_fail(why, WF_ERR_UNSUP, "general.architecture %s: transformers has no model for it here",
				     wf_quote(q, sizeof q, arch, n));
		}
	}
	if (rc == WF_OK && (h.a->experts || strcmp(h.arch, "gpt-oss") == 0))
		rc = need_int(&h, "expert_count", 1, UINT16_MAX, &h.n_exp);
	if (rc == WF_OK && strcmp(h.arch, "deepseek2") == 0) {
		/* DeepSeek's leading dense layers have no experts */
		if (!kv_int(&h.kv, k_(&h, "leading_dense_block_count"), &h.dense) || h.dense < 0)
			h.dense = 0;
		for (size_t i = 0; i < m->n_tensors && !h.ds_bias; i++)
			h.ds_bias = m->tensors[i].name_len > 17 &&
				    strcmp(m->tensors[i].name + m->tensors[i].name_len - 17, ".exp_probs_b.bias") == 0;
	}
	if (rc == WF_OK)
		rc = plan_all(&h, m, vk, out);
	if (rc == WF_ERR_NOMEM)
		wf_fail(why, rc, "out of memory");
	if (rc != WF_OK)
		wf_hf_plan_free(out);
	return rc;
}

void wf_hf_plan_free(struct wf_hf_plan *p)
{
	free(p->config_json);
	free(p->gen_json);
	wf_arch_plan_free(&p->st);
	memset(p, 0, sizeof *p);
}
