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
#include "arch/wf_arch_int.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>



static enum wf_err read_dims(struct wf_hfc *h, const struct wf_model *m, struct wf_hfc_dims *d)
{
	enum wf_err rc;
	if ((rc = wf_hfc_need(h, "embedding_length", 1, 1 << 20, &d->embd)) ||
	    (rc = wf_hfc_need(h, "feed_forward_length", 1, 1 << 24, &d->ff)) ||
	    (rc = wf_hfc_need(h, "block_count", 1, 1 << 16, &d->layers)) ||
	    (rc = wf_hfc_need(h, "attention.head_count", 1, 1 << 16, &d->heads)))
		return rc;
	if (!wf_gguf_get_int(&h->kv, wf_hfc_key(h, "attention.head_count_kv"), &d->kv_heads))
		d->kv_heads = d->heads;
	if (d->kv_heads < 1 || d->heads % d->kv_heads)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld does not divide the %lld heads",
			       wf_hfc_key(h, "attention.head_count_kv"), (long long)d->kv_heads, (long long)d->heads);
	if (!wf_gguf_get_int(&h->kv, wf_hfc_key(h, "context_length"), &d->ctx) || d->ctx < 1)
		d->ctx = 2048;
	/* head_dim: attention.key_length, else what the q (Phi-3: qkv) rows say */
	const struct wf_tensor *q = wf_hfc_tensor(m, "blk.0.attn_q.weight"), *qkv = wf_hfc_tensor(m, "blk.0.attn_qkv.weight");
	uint64_t qrows = q && q->ndim == 2 ? q->shape[0] : 0, per = (uint64_t)d->heads;
	if (!qrows && qkv && qkv->ndim == 2)
		qrows = qkv->shape[0], per = (uint64_t)(d->heads + 2 * d->kv_heads);
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "attention.key_length"), &d->head_dim) && d->head_dim >= 1) {
		/* as llama.cpp reads it */
	} else if (qrows && qrows % per == 0) {
		d->head_dim = (int64_t)(qrows / per);
	} else {
		if (d->embd % d->heads)
			return wf_fail(h->why, WF_ERR_UNSUP, "metadata: %lld heads do not divide embedding_length %lld",
				       (long long)d->heads, (long long)d->embd);
		d->head_dim = d->embd / d->heads;
	}
	if (!wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.dimension_count"), &d->rot) || d->rot < 1 || d->rot > d->head_dim)
		d->rot = d->head_dim;
	if (!wf_gguf_get_num(&h->kv, wf_hfc_key(h, "attention.layer_norm_rms_epsilon"), &d->eps) || !(d->eps > 0))
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: missing, or not a positive number",
			       wf_hfc_key(h, "attention.layer_norm_rms_epsilon"));
	if (!wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.freq_base"), &d->theta) || !(d->theta > 0))
		d->theta = 10000.0;
	const struct wf_tensor *emb = wf_hfc_tensor(m, "token_embd.weight");
	if (!emb || emb->ndim != 2 || (int64_t)emb->shape[1] != d->embd)
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor token_embd.weight: missing, or not [vocab, %lld]",
			       (long long)d->embd);
	d->vocab = (int64_t)emb->shape[0];
	return WF_OK;
}

static void token_ids(struct wf_hfc *h)
{
	static const char *const ids[][2] = {{"tokenizer.ggml.bos_token_id", "bos_token_id"},
					     {"tokenizer.ggml.eos_token_id", "eos_token_id"},
					     {"tokenizer.ggml.padding_token_id", "pad_token_id"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(ids); i++) {
		int64_t v;
		if (wf_gguf_get_int(&h->kv, ids[i][0], &v) && v >= 0)
			wf_hfc_int(h, ids[i][1], v);
	}
}

static const char *dtype_name(enum wf_vk vk)
{
	return vk == WF_VK_BF16 ? "bfloat16" : vk == WF_VK_F16 ? "float16" : "float32";
}

/* The leading dense layers and the trailing MTP blocks, each within the
 * block count (h->dense, h->n_nextn). */
static enum wf_err layer_kinds(struct wf_hfc *h, const struct wf_hfc_dims *d)
{
	h->dense = h->n_nextn = 0;
	enum wf_err rc = WF_OK;
	if (wf_gguf_find(&h->kv, wf_hfc_key(h, "leading_dense_block_count")) >= 0)
		rc = wf_hfc_need(h, "leading_dense_block_count", 0, d->layers, &h->dense);
	if (rc == WF_OK && wf_gguf_find(&h->kv, wf_hfc_key(h, "nextn_predict_layers")) >= 0)
		rc = wf_hfc_need(h, "nextn_predict_layers", 0, d->layers - 1, &h->n_nextn);
	return rc;
}

/* config.json: the fields every architecture has, then the row's own
 * (its config hook, at each of enum wf_hfc_at's steps). */
static enum wf_err write_config(struct wf_hfc *h, const struct wf_model *m, enum wf_vk vk)
{
	struct wf_hfc_dims d;
	const struct wf_arch *a = h->a;
	enum wf_err rc = read_dims(h, m, &d);
	if (rc != WF_OK || (rc = layer_kinds(h, &d)) != WF_OK)
		return rc;
	h->cls = a->hf[0];
	h->model_type = a->experts ? a->experts->model_type : a->hf_model_type ? a->hf_model_type : h->arch;
	if (a->config && (rc = a->config(a, h, m, &d, WF_HFC_HEAD)) != WF_OK)
		return rc;
	wf_buf_putc(h->j, '{');
	wf_hfc_field(h, "architectures");
	wf_buf_puts(h->j, "[");
	wf_buf_json_str(h->j, h->cls, strlen(h->cls));
	wf_buf_puts(h->j, "]");
	wf_hfc_str(h, "model_type", h->model_type);
	wf_hfc_int(h, "hidden_size", d.embd);
	wf_hfc_int(h, "intermediate_size", d.ff);
	wf_hfc_int(h, "num_hidden_layers", d.layers - h->n_nextn);
	wf_hfc_int(h, "num_attention_heads", d.heads);
	/* MLA: the GGUF's one kv head and latent key length are llama.cpp's */
	wf_hfc_int(h, "num_key_value_heads", a->mla ? d.heads : d.kv_heads);
	wf_hfc_int(h, "head_dim", a->mla ? d.rot : d.head_dim);
	wf_hfc_int(h, "max_position_embeddings", d.ctx);
	wf_hfc_num(h, "rms_norm_eps", d.eps, true);
	wf_hfc_num(h, "rope_theta", d.theta, true);
	wf_hfc_int(h, "vocab_size", d.vocab);
	bool tied = !wf_hfc_has(m, "output.weight") || a->drop_lm_head;
	wf_hfc_raw(h, "tie_word_embeddings", tied ? "true" : "false");
	wf_hfc_str(h, "hidden_act", a->hf_act ? a->hf_act : "silu");
	if (a->hf_attn_bias)
		wf_hfc_raw(h, "attention_bias", wf_hfc_has(m, "blk.0.attn_q.bias") ? "true" : "false");
	if (a->config && (rc = a->config(a, h, m, &d, WF_HFC_BODY)) != WF_OK)
		return rc;
	token_ids(h);
	if (!a->config)
		wf_hfc_scaling(h);
	else if ((rc = a->config(a, h, m, &d, WF_HFC_ROPE)) != WF_OK)
		return rc;
	wf_hfc_str(h, "torch_dtype", dtype_name(vk));
	wf_buf_puts(h->j, "\n}\n");
	return WF_OK;
}

/* generation_config.json: the special ids, and the sampling settings
 * the converter keeps as general.sampling.* (wf_arch.c, kv_general). */
static void write_gen(struct wf_hfc *h)
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
		if (wf_gguf_get_num(&h->kv, f[i][0], &v)) {
			wf_hfc_num(h, f[i][1], v, true);
			sample = true;
		}
	}
	int64_t k;
	if (wf_gguf_get_int(&h->kv, "general.sampling.top_k", &k)) {
		wf_hfc_int(h, "top_k", k);
		sample = true;
	}
	if (sample)
		wf_hfc_raw(h, "do_sample", "true");
	wf_buf_puts(j, h->first ? "}\n" : "\n}\n");
}

static uint32_t out_type(enum wf_vk vk)
{
	return vk == WF_VK_BF16 ? WF_T_BF16 : vk == WF_VK_F16 ? WF_T_F16 : WF_T_F32;
}

/* A stacked expert tensor (ne [in, out, E]) as its E per-expert HF
 * tensors, each a slab of it (moe-and-mla.md 2-4, hf/ view). */
static enum wf_err plan_experts(struct wf_hfc *h, const struct wf_model *m, size_t i, enum wf_vk vk,
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
			       wf_hfc_key(h, "expert_count"));
	for (uint64_t x = 0; x < t->shape[0]; x++) {
		struct wf_arch_tensor *o = &pl->t[pl->n];
		memset(o, 0, sizeof *o);
		wf_gguf_expert_name(h->a->hf[0], t->name, (unsigned long)x, hn, sizeof hn);
		o->src = (int64_t)i;
		o->ndim = 2;
		o->ne[0] = t->shape[2];
		o->ne[1] = t->shape[1];
		o->type = out_type(vk);
		o->n_stack = (uint16_t)t->shape[0];
		o->sliced = true;
		o->slab = x;
		if (!wf_mul_ok(t->nelems / t->shape[0], wf_type_get((int)o->type)->bytes, &o->nbytes))
			return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: too many bytes", t->name);
		if (!(o->name = wf_arch_name_add(pl, hn, strlen(hn))))
			return wf_fail(h->why, WF_ERR_NOMEM, "out of memory");
		pl->n++;
	}
	return WF_OK;
}

/* The GGUF tensors with no HF tensor that are not lost: the generated
 * ones config.json says instead (the row's hf_said: Llama 3's rope_freqs
 * and Phi-3's rope factors, read back as rope_scaling), and Gemma 2's
 * output.weight (docs/hf.md: HF ties it). */
static bool said_otherwise(const struct wf_hfc *h, const char *name)
{
	for (const char *const *s = h->a->hf_said; s && *s; s++)
		if (strcmp(name, *s) == 0)
			return true;
	return h->a->drop_lm_head && strcmp(name, "output.weight") == 0;
}

/* DeepSeek's attn_k_b and attn_v_b as the kv_b_proj they were split from
 * (moe-and-mla.md 6.4): planned at k_b, read from both (WF_HS_KVB); v_b
 * gives nothing of its own. */
static enum wf_err plan_kv_b(struct wf_hfc *h, const struct wf_model *m, size_t i, enum wf_vk vk, struct wf_arch_plan *pl)
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
	if (!wf_mul_ok(o->ne[0] * o->ne[1], wf_type_get((int)o->type)->bytes, &o->nbytes))
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
static enum wf_err oss_put(struct wf_hfc *h, const struct wf_model *m, size_t i, size_t src2, enum wf_gather gather,
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
	if (!wf_mul_ok(nel, wf_type_get((int)o->type)->bytes, &o->nbytes))
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
static bool plan_gptoss(struct wf_hfc *h, const struct wf_model *m, size_t i, enum wf_vk vk, struct wf_arch_plan *pl,
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
			      wf_hfc_key(h, "expert_count"));
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
static enum wf_err plan_tensor(struct wf_hfc *h, const struct wf_model *m, size_t i, const struct wf_hfc_dims *d, enum wf_vk vk,
			       struct wf_arch_plan *pl)
{
	const struct wf_tensor *t = &m->tensors[i];
	struct wf_arch_tensor *o = &pl->t[pl->n];
	char qk, hn[WF_GGUF_NAME_MAX], q[96];
	bool norm;
	memset(o, 0, sizeof *o);
	if (strlen(t->name) == t->name_len && h->a->experts && wf_gguf_expert_name(h->a->hf[0], t->name, 0, hn, sizeof hn))
		return plan_experts(h, m, i, vk, pl);
	enum wf_err rc;
	if (h->a->packed_experts && plan_gptoss(h, m, i, vk, pl, &rc))
		return rc;
	if (strlen(t->name) == t->name_len && h->a->mla && strstr(t->name, ".attn_") &&
	    (strcmp(strstr(t->name, ".attn_"), ".attn_k_b.weight") == 0 ||
	     strcmp(strstr(t->name, ".attn_"), ".attn_v_b.weight") == 0))
		return plan_kv_b(h, m, i, vk, pl);
	if (strlen(t->name) != t->name_len || !wf_gguf_to_hf_name(h->a->hf[0], t->name, hn, sizeof hn, &qk, &norm)) {
		if (strlen(t->name) == t->name_len && said_otherwise(h, t->name))
			return WF_OK;
		return wf_fail(h->why, WF_ERR_UNSUP, "tensor %s: %s has no HF name for it (transformers would build the "
			       "model without it)", wf_quote(q, sizeof q, t->name, t->name_len), h->a->hf[0]);
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
	if (!wf_mul_ok(t->nelems, wf_type_get((int)o->type)->bytes, &o->nbytes))
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

static enum wf_err plan_all(struct wf_hfc *h, const struct wf_model *m, enum wf_vk vk, struct wf_hf_plan *out)
{
	struct wf_buf cfg = {0}, gen = {0};
	struct wf_hfc_dims d;
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
		if (wf_gguf_expert_name(h->a->hf[0], m->tensors[i].name, 0, hn, sizeof hn) &&
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
				     "expert tensors", wf_hfc_key(h, "expert_count"), (long long)h->n_exp, (long long)l, h->exps[l],
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
	struct wf_hfc h = {.why = why};
	h.kv = wf_gguf_vals_of(m);
	enum wf_err rc = m->format == WF_FMT_GGUF && m->n_parts && h.kv.data
				 ? WF_OK
				 : wf_fail(why, WF_ERR_UNSUP, "not a GGUF model");
	size_t n = 0;
	const uint8_t *arch = rc == WF_OK ? wf_gguf_get_str(&h.kv, "general.architecture", &n) : NULL;
	if (rc == WF_OK && (!arch || n >= sizeof h.arch || memchr(arch, 0, n)))
		rc = wf_fail(why, WF_ERR_UNSUP, "metadata key general.architecture: missing, or not a short string");
	if (rc == WF_OK) {
		memcpy(h.arch, arch, n);
		h.arch[n] = '\0';
		int64_t ne = 0;
		if (!(h.a = wf_arch_row_of(h.arch, wf_gguf_get_int(&h.kv, wf_hfc_key(&h, "expert_count"), &ne) && ne > 0))) {
			char q[96];
			rc = wf_fail(why, WF_ERR_UNSUP, "general.architecture %s: transformers has no model for it here",
				     wf_quote(q, sizeof q, arch, n));
		}
	}
	if (rc == WF_OK && (h.a->experts || h.a->packed_experts))
		rc = wf_hfc_need(&h, "expert_count", 1, UINT16_MAX, &h.n_exp);
	if (rc == WF_OK && h.a->mla) {
		/* DeepSeek's leading dense layers have no experts */
		if (!wf_gguf_get_int(&h.kv, wf_hfc_key(&h, "leading_dense_block_count"), &h.dense) || h.dense < 0)
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
