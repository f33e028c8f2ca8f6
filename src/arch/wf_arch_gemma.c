/* wf_arch_gemma.c - Gemma, Gemma 2 and Gemma 3 (and
 * Gemma3ForConditionalGeneration's text model): norms stored as 1 + w
 * (wf_arch_int.h). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const gemma2_parts[] = {"attn_norm", "attn_q",   "attn_k",        "attn_v",
					   "attn_output", "post_attention_norm", "ffn_norm", "post_ffw_norm",
					   "ffn_gate",  "ffn_up",   "ffn_down", NULL};
static const char *const gemma3_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
					   "post_attention_norm", "ffn_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
					   "ffn_down", "attn_q_norm", "attn_k_norm", NULL};

/* Gemma 2 and 3 norm around both sublayers: their own four names. */
const struct wf_part_map wf_arch_norms4[3] = {
	{"post_attention_layernorm", "post_attention_norm"},
	{"pre_feedforward_layernorm", "ffn_norm"},
	{"post_feedforward_layernorm", "post_ffw_norm"},
};

static const struct wf_cfg_class gemma_cfg[] = {
	{"gemma", 0,
	 {{"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {"num_key_value_heads", 16},
	  {"head_dim", 256}, {NULL, 0}}},
};
static const struct wf_cfg_class gemma2_cfg[] = {
	{"gemma2", 0,
	 {{"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 4}, {"head_dim", 256}, {"attn_logit_softcapping", 50},
	  {"final_logit_softcapping", 30}, {"sliding_window", 4096}, {"query_pre_attn_scalar", 256}, {NULL, 0}}},
};
static const struct wf_cfg_class gemma3_cfg[] = {
	{"gemma3_text", 0,
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000},
	  {"rope_local_base_freq", 10000}, {"num_key_value_heads", 4}, {"head_dim", 256},
	  {"sliding_window", 4096}, {"sliding_window_pattern", 6}, {NULL, 0}}},
};

/* GemmaModel.set_gguf_parameters (and the first part of Gemma2Model's):
 * every field required, in this order. */
static enum wf_err kv_gemma(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[64];
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	enum wf_err rc = wf_cfg_put_u32(c, w, K("context_length"), KEYS("max_position_embeddings"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("embedding_length"), KEYS("hidden_size"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("block_count"), KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), true,
			     NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("feed_forward_length"), KEYS("intermediate_size"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.head_count"), KEYS("num_attention_heads"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.head_count_kv"), KEYS("num_key_value_heads", "num_attention_heads"), true,
			     NULL);
	if (rc == WF_OK && !wf_cfg_hp(c, "rms_norm_eps"))
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: rms_norm_eps: missing");
	if (rc == WF_OK)
		rc = wf_cfg_put_f32k(c, w, K("attention.layer_norm_rms_epsilon"), KEYS("rms_norm_eps"));
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.key_length"), KEYS("head_dim"), true, NULL);
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, K("attention.value_length"), KEYS("head_dim"), true, NULL);
#undef K
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	return rc;
}

static enum wf_err kv_gemma2(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_gemma(a, c, w, ftype);
	static const char *const need[][2] = {{"attn_logit_softcapping", "gemma2.attn_logit_softcapping"},
					      {"final_logit_softcapping", "gemma2.final_logit_softcapping"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(need) && rc == WF_OK; i++) {
		const cJSON *v = wf_cfg_not_null(wf_cfg_hp(c, need[i][0]));
		rc = v ? wf_cfg_put_f32(c, w, need[i][1], v, need[i][0])
		       : wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", need[i][0]);
	}
	if (rc == WF_OK)
		rc = wf_cfg_put_u32(c, w, "gemma2.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	return rc;
}

static enum wf_err kv_gemma3(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = wf_kv_text(c, w, a->gguf, ftype);
	/* G:140-157 writes context_length, head_count, rms epsilon, key and
	 * value length, freq_base and head_count_kv again: with AutoConfig's
	 * defaults in place those are the values kv_text wrote, in place */
	if (rc == WF_OK && wf_cfg_not_null(wf_cfg_hp(c, "attn_logit_softcapping")))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: attn_logit_softcapping: set (the converter asserts it is not)");
	const cJSON *fl = wf_cfg_not_null(wf_cfg_hp(c, "final_logit_softcapping"));
	if (rc == WF_OK && fl && !(cJSON_IsNumber(fl) && fl->valuedouble == 0) && !cJSON_IsFalse(fl))
		rc = wf_cfg_put_f32(c, w, "gemma3.final_logit_softcapping", fl, "final_logit_softcapping");
	const cJSON *pat = wf_cfg_hp(c, "sliding_window_pattern");
	if (rc == WF_OK && !(cJSON_IsNumber(pat) && pat->valuedouble == 1))
		rc = wf_cfg_put_u32(c, w, "gemma3.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	if (rc == WF_OK && !wf_gguf_w_has(w, "gemma3.attention.head_count_kv"))
		rc = wf_cfg_put_u32(c, w, "gemma3.attention.head_count_kv", KEYS("num_key_value_heads"), true, NULL);
	return rc;
}

/* Gemma3Model.modify_tensors (G:159-170): embed_tokens cut to the real
 * vocabulary, len(tokens) of the SentencePiece routine when there is a
 * tokenizer.model (the token list model.gguf has), else tokenizer.json's
 * len(model.vocab) + len(added_tokens).  A cut to another count than the
 * token list's makes a file llama.cpp refuses (token_embd must have a
 * row per token): left out instead. */
static enum wf_err rows_gemma3(const struct wf_arch *a, struct wf_cfg *c, uint64_t rows, uint64_t *keep)
{
	(void)a;
	static const struct wf_vocab_files none;
	struct wf_vocab_len n;
	*keep = rows;
	enum wf_err rc = wf_vocab_len(c->tok ? c->tok : &none, c->route, c->vocab_size, &n, c->why);
	if (rc != WF_OK)
		return rc;
	if (!n.spm && (n.tj_vocab < 0 || n.tj_added < 0))
		return wf_fail(c->why, WF_ERR_UNSUP, "tokenizer.json: %s: missing (the converter cuts Gemma 3's embed_tokens "
			       "to len(model.vocab) + len(added_tokens))", n.tj_vocab < 0 ? "model.vocab" : "added_tokens");
	uint64_t real = n.spm ? n.n_tokens : (uint64_t)n.tj_vocab + (uint64_t)n.tj_added;
	if (real >= rows)
		return WF_OK;
	if (real != n.n_tokens || !real)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor model.embed_tokens.weight: cut from %" PRIu64 " to %" PRIu64
			       " rows (tokenizer.json's model.vocab + added_tokens, as the converter cuts Gemma 3's), but "
			       "the tokenizer has %" PRIu64 " tokens: llama.cpp would not load it", rows, real, n.n_tokens);
	*keep = real;
	return WF_OK;
}

/* GemmaModel: Gemma 2's keys without its softcaps and window; lm_head dropped */
/* Gemma 2 and 3: llama.cpp's attention scale is 1/sqrt(head_dim) but for
 * the 27B models (46 and 62 layers), 1/sqrt(hidden / heads). */
static void gemma_fields(struct wf_hfc *h, const struct wf_hfc_dims *d, bool g3)
{
	bool big = d->layers == (g3 ? 62 : 46);
	wf_hfc_int(h, "query_pre_attn_scalar", big ? d->embd / d->heads : d->head_dim);
	wf_hfc_str(h, "hidden_activation", "gelu_pytorch_tanh");
	int64_t sw;
	if (wf_gguf_get_int(&h->kv, wf_hfc_key(h, "attention.sliding_window"), &sw) && sw > 0)
		wf_hfc_int(h, "sliding_window", sw);
	double cap;
	if (!g3 && wf_gguf_get_num(&h->kv, wf_hfc_key(h, "attn_logit_softcapping"), &cap) && cap > 0)
		wf_hfc_num(h, "attn_logit_softcapping", cap, true);
	else if (!g3)
		wf_hfc_raw(h, "attn_logit_softcapping", "null");
	if (wf_gguf_get_num(&h->kv, wf_hfc_key(h, "final_logit_softcapping"), &cap) && cap > 0)
		wf_hfc_num(h, "final_logit_softcapping", cap, true);
	else
		wf_hfc_raw(h, "final_logit_softcapping", "null");
	if (g3) {
		wf_hfc_int(h, "sliding_window_pattern", 6); /* llama.cpp's set_swa_pattern(6) */
		double local;
		if (!wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.freq_base_swa"), &local) || !(local > 0))
			local = 10000.0; /* llama.cpp's default for the sliding layers */
		wf_hfc_num(h, "rope_local_base_freq", local, true);
		if (wf_gguf_find(&h->kv, wf_hfc_key(h, "rope.scaling.type")) < 0)
			wf_hfc_raw(h, "rope_scaling", "null");
	}
}

static enum wf_err cfg_gemma(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			     const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	(void)d;
	if (at == WF_HFC_BODY)
		wf_hfc_str(h, "hidden_activation", "gelu_pytorch_tanh");
	if (at == WF_HFC_ROPE)
		wf_hfc_scaling(h);
	return WF_OK;
}

static enum wf_err cfg_gemma2(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			      const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	if (at == WF_HFC_ROPE)
		gemma_fields(h, d, false);
	return WF_OK;
}

static enum wf_err cfg_gemma3(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
			      const struct wf_hfc_dims *d, enum wf_hfc_at at)
{
	(void)a;
	(void)m;
	if (at == WF_HFC_ROPE) {
		gemma_fields(h, d, true);
		wf_hfc_scaling(h);
	}
	return WF_OK;
}

const struct wf_arch wf_arch_gemma = {
	.hf = {"GemmaForCausalLM", NULL}, .gguf = "gemma", .canon = "gemma", .names = {"gemma", "GemmaForCausalLM"},
	.tok = WF_VOCAB_GEMMA, .norm_plus_one = true, .drop_lm_head = true, .kvs = kv_gemma,
	.parts = wf_arch_llama_parts, .configs = gemma_cfg, .n_configs = WF_ARRAY_LEN(gemma_cfg),
	.hf_act = "gelu_pytorch_tanh", .config = cfg_gemma,
};

const struct wf_arch wf_arch_gemma2 = {
	.hf = {"Gemma2ForCausalLM", NULL}, .gguf = "gemma2", .canon = "gemma2", .names = {"gemma2", "Gemma2ForCausalLM"},
	.tok = WF_VOCAB_GEMMA2, .norm_plus_one = true, .drop_lm_head = true, .kvs = kv_gemma2, .parts = gemma2_parts,
	.maps = {{wf_arch_norms4, WF_ARRAY_LEN(wf_arch_norms4)}},
	.configs = gemma2_cfg, .n_configs = WF_ARRAY_LEN(gemma2_cfg),
	.hf_act = "gelu_pytorch_tanh", .config = cfg_gemma2,
};

const struct wf_arch wf_arch_gemma3 = {
	.hf = {"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", NULL}, .gguf = "gemma3", .canon = "gemma3",
	.names = {"gemma3", "gemma3_text", "Gemma3ForCausalLM"}, .wrapper = "Gemma3ForConditionalGeneration",
	.tok = WF_VOCAB_GEMMA3, .norm_plus_one = true, .kvs = kv_gemma3, .embd_rows = rows_gemma3, .parts = gemma3_parts,
	.maps = {{wf_arch_norms4, WF_ARRAY_LEN(wf_arch_norms4)}},
	.configs = gemma3_cfg, .n_configs = WF_ARRAY_LEN(gemma3_cfg),
	.hf_act = "gelu_pytorch_tanh", .hf_model_type = "gemma3_text", .config = cfg_gemma3,
};
