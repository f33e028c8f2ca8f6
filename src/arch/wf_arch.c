/* wf_arch.c - the architecture table (wf_arch.h). */
#include "arch/wf_arch.h"
#include "arch/wf_card.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_json_scan.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- names */

static const struct {
	const char *name, *canon;
} archs[] = {
	{"llama", "llama"}, {"LlamaForCausalLM", "llama"},
	{"mistral", "mistral"}, {"MistralForCausalLM", "mistral"},
	{"qwen2", "qwen2"}, {"Qwen2ForCausalLM", "qwen2"},
	{"qwen3", "qwen3"}, {"Qwen3ForCausalLM", "qwen3"},
	{"gemma", "gemma"}, {"GemmaForCausalLM", "gemma"},
	{"gemma2", "gemma2"}, {"Gemma2ForCausalLM", "gemma2"},
	{"gemma3", "gemma3"}, {"gemma3_text", "gemma3"}, {"Gemma3ForCausalLM", "gemma3"},
	{"phi3", "phi3"}, {"Phi3ForCausalLM", "phi3"},
	{"smollm3", "smollm3"}, {"SmolLM3ForCausalLM", "smollm3"},
	{"granite", "granite"}, {"GraniteForCausalLM", "granite"},
	{"olmo2", "olmo2"}, {"Olmo2ForCausalLM", "olmo2"},
};

const char *wf_arch_canon(const char *arch)
{
	for (size_t i = 0; arch && i < WF_ARRAY_LEN(archs); i++)
		if (strcmp(arch, archs[i].name) == 0)
			return archs[i].canon;
	return NULL;
}

struct arch;
static const struct arch *row_of(const char *key, int experts);
static bool row_permutes(const struct arch *a);

bool wf_arch_permutes_qk(const char *arch)
{
	return arch && (strcmp(arch, "llama") == 0 || strcmp(arch, "mistral") == 0 || row_permutes(row_of(arch, 0)));
}

bool wf_arch_norm_plus_one(const char *arch)
{
	return arch && strncmp(arch, "gemma", 5) == 0;
}

static bool num(const char **p, unsigned long *v);

static bool starts(const char *s, size_t n, const char *p)
{
	size_t k = strlen(p);
	return n >= k && memcmp(s, p, k) == 0;
}

enum wf_naming wf_name_naming(const char *s, size_t n)
{
	if (starts(s, n, "blk.") || starts(s, n, "token_embd.") || starts(s, n, "output.") ||
	    starts(s, n, "output_norm."))
		return WF_NAMES_GGUF;
	if (starts(s, n, "model.layers.") || starts(s, n, "model.embed_tokens.") || starts(s, n, "model.norm.") ||
	    starts(s, n, "lm_head."))
		return WF_NAMES_HF;
	return WF_NAMES_OTHER;
}

/* Per-layer parts: HF's name after "model.layers.N." up to ".weight" or
 * ".bias", and llama.cpp's after "blk.N.". */
static const struct {
	const char *hf, *gguf;
	char qk;
} layer_map[] = {
	{"input_layernorm", "attn_norm", 0},
	{"self_attn.q_proj", "attn_q", 'q'},
	{"self_attn.k_proj", "attn_k", 'k'},
	{"self_attn.v_proj", "attn_v", 0},
	{"self_attn.o_proj", "attn_output", 0},
	{"self_attn.qkv_proj", "attn_qkv", 0},
	{"self_attn.q_norm", "attn_q_norm", 0},
	{"self_attn.k_norm", "attn_k_norm", 0},
	{"post_attention_layernorm", "ffn_norm", 0},
	{"mlp.gate_proj", "ffn_gate", 0},
	{"mlp.up_proj", "ffn_up", 0},
	{"mlp.down_proj", "ffn_down", 0},
	{"mlp.gate_up_proj", "ffn_up", 0},
	{"block_sparse_moe.gate", "ffn_gate_inp", 0},
	{"mlp.gate", "ffn_gate_inp", 0},
	{"mlp.shared_expert.gate_proj", "ffn_gate_shexp", 0},
	{"mlp.shared_expert.up_proj", "ffn_up_shexp", 0},
	{"mlp.shared_expert.down_proj", "ffn_down_shexp", 0},
	{"mlp.shared_expert_gate", "ffn_gate_inp_shexp", 0},
};

struct part_map {
	const char *hf, *gguf;
};

/* Gemma 2 and 3 norm around both sublayers: their own four names. */
static const struct part_map gemma2_map[] = {
	{"post_attention_layernorm", "post_attention_norm"},
	{"pre_feedforward_layernorm", "ffn_norm"},
	{"post_feedforward_layernorm", "post_ffw_norm"},
};

/* DeepSeek's shared experts (plural: layer_map's rows are Qwen2-MoE's)
 * and router bias (filter_tensors makes e_score_correction_bias
 * e_score_correction.bias), which GLM-4.5 has too. */
static const struct part_map shared_experts_map[] = {
	{"mlp.shared_experts.gate_proj", "ffn_gate_shexp"},
	{"mlp.shared_experts.up_proj", "ffn_up_shexp"},
	{"mlp.shared_experts.down_proj", "ffn_down_shexp"},
	{"mlp.gate.e_score_correction", "exp_probs_b"},
};

/* GLM-4.5 (moe-and-mla.md 7): GLM4_MOE has ATTN_POST_NORM and no
 * FFN_NORM, so post_attention_layernorm is post_attention_norm; the MTP
 * block's own tensors (tensor_mapping.py NEXTN_*). */
static const struct part_map glm4moe_map[] = {
	{"post_attention_layernorm", "post_attention_norm"},
	{"eh_proj", "nextn.eh_proj"},
	{"embed_tokens", "nextn.embed_tokens"},
	{"enorm", "nextn.enorm"},
	{"hnorm", "nextn.hnorm"},
	{"shared_head.head", "nextn.shared_head_head"},
	{"shared_head.norm", "nextn.shared_head_norm"},
};

/* gpt-oss's own names (gpt_oss.py; tensor_mapping.py): sinks (a ".weight"
 * added by filter_tensors), the router, the norm after attention. */
static const struct part_map gptoss_map[] = {
	{"self_attn.sinks", "attn_sinks"},
	{"mlp.router", "ffn_gate_inp"},
	{"post_attention_layernorm", "post_attention_norm"},
};

/* DeepSeek's MLA (moe-and-mla.md 6.1); kv_b_proj is split in two
 * (mla_split). */
static const struct part_map deepseek2_map[] = {
	{"self_attn.q_a_proj", "attn_q_a"},
	{"self_attn.q_a_layernorm", "attn_q_a_norm"},
	{"self_attn.q_b_proj", "attn_q_b"},
	{"self_attn.kv_a_proj_with_mqa", "attn_kv_a_mqa"},
	{"self_attn.kv_a_layernorm", "attn_kv_a_norm"},
	{"self_attn.kv_b_proj", "attn_kv_b"},
};

/* The architectures whose layer parts take their own names first, both
 * ways; an architecture may have several rows, read in order. */
static const struct {
	const char *arch;
	const struct part_map *map;
	size_t n;
} own_maps[] = {
	{"gemma2", gemma2_map, WF_ARRAY_LEN(gemma2_map)},
	{"gemma3", gemma2_map, WF_ARRAY_LEN(gemma2_map)},
	{"glm4moe", glm4moe_map, WF_ARRAY_LEN(glm4moe_map)},
	{"glm4moe", shared_experts_map, WF_ARRAY_LEN(shared_experts_map)},
	{"gpt-oss", gptoss_map, WF_ARRAY_LEN(gptoss_map)},
	{"deepseek2", deepseek2_map, WF_ARRAY_LEN(deepseek2_map)},
	{"deepseek2", shared_experts_map, WF_ARRAY_LEN(shared_experts_map)},
	{"olmo2", gemma2_map, WF_ARRAY_LEN(gemma2_map)}, /* its norms after each sublayer: two of the four */
};

static const struct {
	const char *hf, *gguf;
} global_map[] = {
	{"model.embed_tokens", "token_embd"},
	{"model.norm", "output_norm"},
	{"lm_head", "output"},
};

/* The suffix ".weight" or ".bias" of s[0..n), or NULL. */
static const char *param_suffix(const char *s, size_t n, size_t *stem)
{
	static const char *const sfx[] = {".weight", ".bias"};
	for (size_t i = 0; i < WF_ARRAY_LEN(sfx); i++) {
		size_t k = strlen(sfx[i]);
		if (n > k && memcmp(s + n - k, sfx[i], k) == 0) {
			*stem = n - k;
			return sfx[i];
		}
	}
	return NULL;
}

static bool eq(const char *s, size_t n, const char *lit)
{
	return strlen(lit) == n && memcmp(s, lit, n) == 0;
}

/* Layer part s[0..n) (an HF part when from_hf, else a GGUF one) in arch's
 * own map: the other side's name, or NULL. */
static const char *own_part(const char *arch, const char *s, size_t n, bool from_hf)
{
	for (size_t i = 0; arch && i < WF_ARRAY_LEN(own_maps); i++) {
		if (strcmp(arch, own_maps[i].arch) != 0)
			continue;
		for (size_t k = 0; k < own_maps[i].n; k++)
			if (eq(s, n, from_hf ? own_maps[i].map[k].hf : own_maps[i].map[k].gguf))
				return from_hf ? own_maps[i].map[k].gguf : own_maps[i].map[k].hf;
	}
	return NULL;
}

static const char *layer_part(const char *arch, const char *s, size_t n, char *qk)
{
	const char *own = own_part(arch, s, n, true);
	*qk = 0;
	if (own)
		return own;
	for (size_t i = 0; i < WF_ARRAY_LEN(layer_map); i++) {
		if (eq(s, n, layer_map[i].hf)) {
			*qk = layer_map[i].qk;
			return layer_map[i].gguf;
		}
	}
	return NULL;
}

/* filter_tensors' rename: a name ending e_score_correction_bias is read
 * as e_score_correction.bias (and written back so in hf/). */
static const char ESCB[] = "e_score_correction_bias";

bool wf_hf_to_gguf_name(const char *arch, const char *hf, size_t n, char *out, size_t outlen, char *qk,
			bool *norm)
{
	size_t stem;
	const char *sfx = param_suffix(hf, n, &stem);
	if (!sfx && n > sizeof ESCB - 1 && memcmp(hf + n - (sizeof ESCB - 1), ESCB, sizeof ESCB - 1) == 0)
		sfx = ".bias", stem = n - 5;
	*qk = 0;
	*norm = false;
	if (!sfx)
		return false;
	const char *to = NULL;
	int len = -1;
	for (size_t i = 0; i < WF_ARRAY_LEN(global_map); i++)
		if (eq(hf, stem, global_map[i].hf))
			len = snprintf(out, outlen, "%s%s", (to = global_map[i].gguf), sfx);
	if (!to && starts(hf, stem, "model.layers.")) {
		const char *p = hf + 13, *end = hf + stem;
		unsigned long layer = 0;
		const char *d = p;
		while (d < end && *d >= '0' && *d <= '9' && d - p < 9)
			layer = layer * 10 + (unsigned long)(*d++ - '0');
		/* digits, no leading zero unless "0", then '.' */
		if (d == p || d >= end || *d != '.' || (*p == '0' && d - p > 1))
			return false;
		to = layer_part(arch, d + 1, (size_t)(end - d - 1), qk);
		if (to)
			len = snprintf(out, outlen, "blk.%lu.%s%s", layer, to, sfx);
	}
	if (!to || len < 0 || (size_t)len >= outlen)
		return false;
	*norm = strcmp(sfx, ".weight") == 0 && strlen(to) >= 4 && strcmp(to + strlen(to) - 4, "norm") == 0;
	return true;
}

uint64_t wf_qk_row(uint64_t row, uint64_t rows, uint64_t heads, bool to_hf)
{
	uint64_t d = rows / heads, half = d / 2, h = row / d, r = row % d;
	if (to_hf)
		return h * d + (r % 2) * half + r / 2;
	return h * d + (r % half) * 2 + r / half;
}

/* ---------------------------------------------------------------- config */

/* config.json as the converter sees it: text_config's keys over the
 * root's (B:1186), and the transformers config class's defaults for what
 * the file leaves out (AutoConfig, hf-to-gguf.md 5.6), added to `dflt`. */
struct cfg {
	cJSON *root;
	const cJSON *text;
	cJSON *dflt;
	char *why;
	bool experts;       /* the architecture has experts: expert_count and expert_used_count written */
	bool rms_eps_1e5;   /* OlmoeModel writes layer_norm_rms_epsilon 1e-5 over the config's */
	bool mla;           /* DeepseekV2Model: head_count_kv 1, key/value_length the latent's (below) */
	uint32_t mla_k, mla_v; /* kv_lora_rank + qk_rope_head_dim, kv_lora_rank */
	int mla_tied;       /* mla_skipped's config fields, read once: -1 not yet, else tie_word_embeddings */
	uint32_t mla_layers; /* ... and num_hidden_layers (UINT32_MAX: absent) */
	bool mxfp4;         /* gpt-oss experts written as MXFP4: general.file_type MOSTLY_MXFP4_MOE */
	uint32_t extra_blocks; /* Glm4MoeModel: the MTP blocks block_count counts too (struct moe_form nextn) */
	const char *count_key; /* a row's own expert count field, written over the base's when present */
	uint32_t gating;    /* a row's expert_gating_func written over the config's, or 0 */
	struct moe *moe;    /* and its experts' tensors, parked for stacking */
	bool wrapper;       /* a multimodal release (wrappers[]): its text model is converted */
	bool renamed;       /* a wrapper's tensor lost "language_model.": two may now have one name */
	bool no_head_dim;   /* GraniteModel pops head_dim from the hparams before writing them */
};

static const cJSON *hp(const struct cfg *c, const char *k)
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
static const cJSON *find(const struct cfg *c, const char *const *keys, const char **which)
{
	for (; *keys; keys++) {
		const cJSON *v = hp(c, *keys);
		if (v && !cJSON_IsNull(v)) {
			if (which)
				*which = *keys;
			return v;
		}
	}
	return NULL;
}

/* A JSON number that is a whole number in [0, 2^32). */
static bool as_u32(const cJSON *v, uint32_t *out)
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
static enum wf_err put_u32(struct cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys,
			   bool required, uint32_t *val)
{
	const char *which = keys[0];
	const cJSON *v = find(c, keys, &which);
	uint32_t u;
	if (!v)
		return required ? wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", keys[0]) : WF_OK;
	if (!as_u32(v, &u))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)", which);
	wf_gguf_w_u32(w, k, u);
	if (val)
		*val = u;
	return WF_OK;
}

static enum wf_err put_f32(struct cfg *c, struct wf_gguf_w *w, const char *k, const cJSON *v, const char *field)
{
	if (!v)
		return WF_OK;
	if (!cJSON_IsNumber(v))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not a number", field);
	wf_gguf_w_f32(w, k, (float)v->valuedouble);
	return WF_OK;
}

static enum wf_err put_f32k(struct cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys)
{
	const char *which = keys[0];
	return put_f32(c, w, k, find(c, keys, &which), which);
}

/* ---------------------------------------------------------------- rows */

struct arch;
typedef enum wf_err (*kv_fn)(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);

/* A transformers config class's defaults the converter sees (5.6):
 * key, value; NULL-terminated. */
struct dflt {
	const char *key;
	double v;
};

struct arch {
	const char *hf[4];        /* config.json architectures[0] */
	const char *gguf;         /* general.architecture, and the canonical name for the name map */
	enum wf_vocab_route tok;
	bool permute_qk;          /* LlamaModel's undo_permute */
	bool norm_plus_one;       /* Gemma: every *norm.weight stored as 1 + w */
	bool drop_lm_head;        /* Gemma 2 never writes output.weight */
	kv_fn kvs;
	const char *const *parts; /* the layer parts (wf_hf_to_gguf_name's GGUF names) the arch has */
	const struct moe_form *experts; /* per-expert tensors stacked (struct moe), or NULL */
};

/* The architectures whose checkpoints hold every expert of a projection
 * in one tensor (gpt-oss, moe-and-mla.md 8.2): oss_tensor's names. */
static bool packed_experts(const struct arch *a)
{
	return strcmp(a->gguf, "gpt-oss") == 0;
}

/* How an architecture's checkpoint names its experts, and the order the
 * converter writes the three stacked tensors in (moe-and-mla.md 1.2). */
struct moe_form {
	const char *mid;          /* "model.layers.L" MID "X.PROJ.weight" */
	const char *proj[3];      /* in the order written */
	const char *gguf[3];      /* what each becomes: blk.L.GGUF.weight */
	const char *router;       /* the router's HF layer part (ffn_gate_inp) */
	const char *model_type;   /* config.json's model_type (hf/) */
	const char *count;        /* the count of experts the converter reads first, or NULL: the base's keys */
	const char *dense;        /* config field: that many leading layers have a dense MLP, no experts */
	const char *nextn;        /* config field: that many MTP blocks follow the layers, with experts too */
};

static const struct moe_form mixtral_experts = {
	".block_sparse_moe.experts.", {"w1", "w2", "w3"}, {"ffn_gate_exps", "ffn_down_exps", "ffn_up_exps"},
	"block_sparse_moe.gate", "mixtral", NULL, NULL, NULL};
static const struct moe_form qwen2_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "qwen2_moe", NULL, NULL, NULL};
static const struct moe_form olmoe_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "olmoe", NULL, NULL, NULL};
static const struct moe_form deepseek_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "deepseek_v3", NULL, "first_k_dense_replace", NULL};
static const struct moe_form qwen3_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "qwen3_moe", NULL, NULL, NULL};
/* Glm4MoeModel.modify_tensors stacks hparams["n_routed_experts"] of each
 * layer, the MTP block's too (block_count includes it) */
static const struct moe_form glm4_experts = {
	".mlp.experts.", {"down_proj", "gate_proj", "up_proj"}, {"ffn_down_exps", "ffn_gate_exps", "ffn_up_exps"},
	"mlp.gate", "glm4_moe", "n_routed_experts", "first_k_dense_replace", "num_nextn_predict_layers"};

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

static const char *const llama_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					  "ffn_gate", "ffn_up", "ffn_down", NULL};
static const char *const qwen3_parts[] = {"attn_norm", "attn_q",   "attn_k",   "attn_v",  "attn_output", "ffn_norm",
					  "ffn_gate",  "ffn_up",   "ffn_down", "attn_q_norm", "attn_k_norm", NULL};
static const char *const gemma2_parts[] = {"attn_norm", "attn_q",   "attn_k",        "attn_v",
					   "attn_output", "post_attention_norm", "ffn_norm", "post_ffw_norm",
					   "ffn_gate",  "ffn_up",   "ffn_down", NULL};
static const char *const gemma3_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
					   "post_attention_norm", "ffn_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
					   "ffn_down", "attn_q_norm", "attn_k_norm", NULL};
static const char *const mixtral_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output",
					    "ffn_norm", "ffn_gate_inp", NULL};
static const char *const qwen2moe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					     "ffn_gate_inp", "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp",
					     "ffn_gate_inp_shexp", NULL};
static const char *const qwen3moe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					     "ffn_gate_inp", "attn_q_norm", "attn_k_norm", NULL};
static const char *const olmoe_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
					  "ffn_gate_inp", "attn_q_norm", "attn_k_norm", NULL};
static const char *const deepseek2_parts[] = {"attn_norm", "attn_q", "attn_q_a", "attn_q_a_norm", "attn_q_b",
					      "attn_kv_a_mqa", "attn_kv_a_norm", "attn_kv_b", "attn_output", "ffn_norm",
					      "ffn_gate", "ffn_up", "ffn_down", "ffn_gate_inp", "exp_probs_b",
					      "ffn_gate_shexp", "ffn_up_shexp", "ffn_down_shexp", NULL};
static const char *const gptoss_parts[] = {"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_sinks",
					   "post_attention_norm", "ffn_gate_inp", NULL};
static const char *const glm4moe_parts[] = {
	"attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm", "attn_k_norm", "post_attention_norm",
	"ffn_gate", "ffn_up", "ffn_down", "ffn_gate_inp", "exp_probs_b", "ffn_gate_shexp", "ffn_up_shexp",
	"ffn_down_shexp", "nextn.eh_proj", "nextn.embed_tokens", "nextn.enorm", "nextn.hnorm", "nextn.shared_head_head",
	"nextn.shared_head_norm", NULL};
static const char *const olmo2_parts[] = {"attn_q", "attn_k", "attn_v", "attn_output", "attn_q_norm",
					  "attn_k_norm", "post_attention_norm", "post_ffw_norm", "ffn_gate", "ffn_up",
					  "ffn_down", NULL};
static const char *const phi3_parts[] = {"attn_norm", "attn_qkv", "attn_q", "attn_k", "attn_v", "attn_output",
					 "ffn_norm", "ffn_up", "ffn_down", NULL};

static enum wf_err kv_llama(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_mistral3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_granite(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_olmo2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_qwen(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_gemma2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_gemma(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_gemma3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_phi3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_olmoe(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_deepseek2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_gptoss(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);
static enum wf_err kv_glm4moe(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype);

/* conversion/__init__.py's registrations for the architectures in scope */
static const struct arch arch_rows[] = {
	{{"LlamaForCausalLM", "LLaMAForCausalLM", "MistralForCausalLM", NULL}, "llama", WF_VOCAB_LLAMA, true, false,
	 false, kv_llama, llama_parts, NULL},
	/* Mistral3ForConditionalGeneration's text model (mistral3.py Ministral3Model, a
	 * LlamaModel); hf[0] is its hf/ class, MistralForCausalLM, which
	 * config.json matches on llama's row above */
	{{"MistralForCausalLM", "Mistral3ForConditionalGeneration", NULL}, "mistral3", WF_VOCAB_LLAMA, true, false,
	 false, kv_mistral3, llama_parts, NULL},
	/* SmolLM3Model: LlamaModel's tensors and keys under smollm3; its NoPE
	 * layers are not written (llama.cpp's smollm3 leaves every 4th out) */
	{{"SmolLM3ForCausalLM", NULL}, "smollm3", WF_VOCAB_LLAMA, true, false, false, kv_llama, llama_parts, NULL},
	/* GraniteModel: LlamaModel without head_dim, and its four multipliers */
	{{"GraniteForCausalLM", NULL}, "granite", WF_VOCAB_LLAMA, true, false, false, kv_granite, llama_parts, NULL},
	/* Olmo2Model: norms after each sublayer, q/k norms over the whole projection */
	{{"Olmo2ForCausalLM", NULL}, "olmo2", WF_VOCAB_GPT2, false, false, false, kv_olmo2, olmo2_parts, NULL},
	{{"Qwen2ForCausalLM", NULL}, "qwen2", WF_VOCAB_QWEN, false, false, false, kv_qwen, llama_parts, NULL},
	{{"Qwen3ForCausalLM", NULL}, "qwen3", WF_VOCAB_QWEN, false, false, false, kv_qwen, qwen3_parts, NULL},
	/* GemmaModel: Gemma 2's keys without its softcaps and window; lm_head dropped */
	{{"GemmaForCausalLM", NULL}, "gemma", WF_VOCAB_GEMMA, false, true, true, kv_gemma, llama_parts, NULL},
	{{"Gemma2ForCausalLM", NULL}, "gemma2", WF_VOCAB_GEMMA2, false, true, true, kv_gemma2, gemma2_parts, NULL},
	{{"Gemma3ForCausalLM", "Gemma3ForConditionalGeneration", NULL}, "gemma3", WF_VOCAB_GEMMA3, false, true, false,
	 kv_gemma3, gemma3_parts, NULL},
	{{"Phi3ForCausalLM", NULL}, "phi3", WF_VOCAB_PHI3, false, false, false, kv_phi3, phi3_parts, NULL},
	/* after llama's: a GGUF "llama" is read back as the dense row */
	{{"MixtralForCausalLM", NULL}, "llama", WF_VOCAB_LLAMA, true, false, false, kv_llama, mixtral_parts,
	 &mixtral_experts},
	{{"Qwen2MoeForCausalLM", NULL}, "qwen2moe", WF_VOCAB_QWEN, false, false, false, kv_qwen, qwen2moe_parts,
	 &qwen2_experts},
	{{"Qwen3MoeForCausalLM", NULL}, "qwen3moe", WF_VOCAB_QWEN, false, false, false, kv_qwen, qwen3moe_parts,
	 &qwen3_experts},
	{{"OlmoeForCausalLM", NULL}, "olmoe", WF_VOCAB_GPT2, false, false, false, kv_olmoe, olmoe_parts, &olmoe_experts},
	{{"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM", NULL}, "deepseek2", WF_VOCAB_GPT2, false, false, false,
	 kv_deepseek2, deepseek2_parts, &deepseek_experts},
	{{"GptOssForCausalLM", NULL}, "gpt-oss", WF_VOCAB_GPT2, false, false, false, kv_gptoss, gptoss_parts, NULL},
	{{"Glm4MoeForCausalLM", NULL}, "glm4moe", WF_VOCAB_GLM, false, false, false, kv_glm4moe, glm4moe_parts,
	 &glm4_experts},
};

/* DeepseekV2Model's rows: kv_b_proj split (mla_split), the MTP layer
 * skipped, a tied lm_head dropped. */
static bool is_mla(const struct arch *a)
{
	return a->kvs == kv_deepseek2;
}

/* The defaults of each config class, by config.json's model_type (which
 * picks the class AutoConfig builds, whatever the architecture). */
static const struct {
	const char *model_type;
	struct dflt d[16];
} dflts[] = {
	{"llama", {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {NULL, 0}}},
	{"mistral",
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 8}, {NULL, 0}}},
	{"qwen2",
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 32}, {NULL, 0}}},
	{"qwen3",
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 32}, {"head_dim", 128}, {NULL, 0}}},
	{"gemma",
	 {{"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {"num_key_value_heads", 16},
	  {"head_dim", 256}, {NULL, 0}}},
	{"gemma2",
	 {{"max_position_embeddings", 8192}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000},
	  {"num_key_value_heads", 4}, {"head_dim", 256}, {"attn_logit_softcapping", 50},
	  {"final_logit_softcapping", 30}, {"sliding_window", 4096}, {"query_pre_attn_scalar", 256}, {NULL, 0}}},
	{"gemma3_text",
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-6}, {"rope_theta", 1000000},
	  {"rope_local_base_freq", 10000}, {"num_key_value_heads", 4}, {"head_dim", 256},
	  {"sliding_window", 4096}, {"sliding_window_pattern", 6}, {NULL, 0}}},
	{"granite",
	 {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-6}, {"rope_theta", 10000}, {"embedding_multiplier", 1},
	  {"logits_scaling", 1}, {"residual_multiplier", 1}, {"attention_multiplier", 1}, {NULL, 0}}},
	{"smollm3",
	 {{"max_position_embeddings", 32768}, {"rms_norm_eps", 1e-6}, {"rope_theta", 2000000}, {"num_key_value_heads", 4},
	  {NULL, 0}}},
	{"olmo2", {{"max_position_embeddings", 2048}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000}, {NULL, 0}}},
	{"phi3",
	 {{"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000},
	  {"original_max_position_embeddings", 4096}, {NULL, 0}}},
	/* DeepseekV2Model.set_gguf_parameters: rms_norm_eps defaults to 1e-6 */
	{"deepseek_v2", {{"rms_norm_eps", 1e-6}, {NULL, 0}}},
	{"deepseek_v3", {{"rms_norm_eps", 1e-6}, {NULL, 0}}},
	{"olmoe",
	 {{"max_position_embeddings", 4096}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000}, {"num_experts", 64},
	  {"num_experts_per_tok", 8}, {NULL, 0}}},
	/* Glm4MoeConfig (norm_topk_prob's default, true, in kv_glm4moe) */
	{"glm4_moe",
	 {{"max_position_embeddings", 131072}, {"rms_norm_eps", 1e-5}, {"rope_theta", 10000},
	  {"num_key_value_heads", 8}, {"partial_rotary_factor", 0.5}, {"moe_intermediate_size", 1408},
	  {"num_experts_per_tok", 8}, {"n_shared_experts", 1}, {"n_routed_experts", 128},
	  {"routed_scaling_factor", 1.0}, {"n_group", 1}, {"topk_group", 1}, {"first_k_dense_replace", 1},
	  {NULL, 0}}},
};

/* Fills c->dflt with the defaults for config.json's model_type, and the
 * ones derived from other fields (num_key_value_heads = heads, Llama's
 * head_dim = hidden / heads). */
static enum wf_err add_defaults(struct cfg *c)
{
	if (!(c->dflt = cJSON_CreateObject()))
		return WF_ERR_NOMEM;
	const cJSON *mt = hp(c, "model_type");
	const char *t = cJSON_IsString(mt) ? mt->valuestring : "";
	for (size_t i = 0; i < WF_ARRAY_LEN(dflts); i++)
		if (strcmp(t, dflts[i].model_type) == 0)
			for (const struct dflt *d = dflts[i].d; d->key; d++)
				if (!hp(c, d->key) && !cJSON_AddNumberToObject(c->dflt, d->key, d->v))
					return WF_ERR_NOMEM;
	const cJSON *heads = hp(c, "num_attention_heads"), *hidden = hp(c, "hidden_size");
	bool llama_like = strcmp(t, "llama") == 0 || strcmp(t, "mistral") == 0;
	const cJSON *kv = hp(c, "num_key_value_heads");
	if ((!kv || cJSON_IsNull(kv)) && cJSON_IsNumber(heads) &&
	    (llama_like || strcmp(t, "phi3") == 0 || strcmp(t, "olmoe") == 0 || strcmp(t, "granite") == 0 ||
	     strcmp(t, "olmo2") == 0)) {
		cJSON_DeleteItemFromObjectCaseSensitive(c->dflt, "num_key_value_heads");
		if (!cJSON_AddNumberToObject(c->dflt, "num_key_value_heads", heads->valuedouble))
			return WF_ERR_NOMEM;
	}
	/* DeepseekV2Config / V3Config: num_key_value_heads = heads, head_dim =
	 * qk_rope_head_dim (moe-and-mla.md 1.4) */
	bool deepseek = strcmp(t, "deepseek_v2") == 0 || strcmp(t, "deepseek_v3") == 0;
	const cJSON *rope_dim = hp(c, "qk_rope_head_dim"), *hd0 = hp(c, "head_dim");
	if (deepseek && (!kv || cJSON_IsNull(kv)) && cJSON_IsNumber(heads) &&
	    !cJSON_AddNumberToObject(c->dflt, "num_key_value_heads", heads->valuedouble))
		return WF_ERR_NOMEM;
	if (deepseek && (!hd0 || cJSON_IsNull(hd0)) && cJSON_IsNumber(rope_dim)) {
		cJSON_DeleteItemFromObjectCaseSensitive(c->dflt, "head_dim");
		if (!cJSON_AddNumberToObject(c->dflt, "head_dim", rope_dim->valuedouble))
			return WF_ERR_NOMEM;
	}
	uint32_t h, n;
	const cJSON *hd = hp(c, "head_dim");
	if (llama_like && (!hd || cJSON_IsNull(hd)) && as_u32(heads, &h) && h && as_u32(hidden, &n)) {
		cJSON_DeleteItemFromObjectCaseSensitive(c->dflt, "head_dim");
		if (!cJSON_AddNumberToObject(c->dflt, "head_dim", n / h))
			return WF_ERR_NOMEM;
	}
	return WF_OK;
}

/* ---------------------------------------------------------------- rope */

/* rope_parameters as TextModel.__init__ mirrors them (B:1193-1211): the
 * object to read scaling fields from (its full_attention part if any),
 * and the mirrored top-level values.  Returns the object (may be NULL). */
struct rope {
	const cJSON *p;          /* rope_parameters / rope_scaling, or NULL */
	const cJSON *type;       /* rope_type, mirrored from `type` */
	const cJSON *theta;      /* rope_theta, mirrored from the top level */
	const cJSON *theta_swa;  /* sliding_attention.rope_theta, mirrored from local keys */
	const cJSON *orig_ctx;   /* original_max_position_embeddings */
	const cJSON *prf;        /* partial_rotary_factor */
};

static const cJSON *item(const cJSON *o, const char *k)
{
	return cJSON_IsObject(o) ? cJSON_GetObjectItemCaseSensitive(o, k) : NULL;
}

static const cJSON *not_null(const cJSON *v)
{
	return v && !cJSON_IsNull(v) ? v : NULL;
}

static void rope_of(const struct cfg *c, struct rope *r)
{
	const cJSON *rp = not_null(hp(c, "rope_parameters"));
	if (!rp)
		rp = not_null(hp(c, "rope_scaling"));
	if (rp && !cJSON_IsObject(rp))
		rp = NULL;
	memset(r, 0, sizeof *r);
	bool split = item(rp, "full_attention") || item(rp, "sliding_attention");
	const cJSON *full = item(rp, "full_attention");
	r->p = full ? full : rp;
	r->type = not_null(item(r->p, "rope_type"));
	r->theta = not_null(item(r->p, "rope_theta"));
	r->theta_swa = not_null(item(item(rp, "sliding_attention"), "rope_theta"));
	r->orig_ctx = not_null(item(r->p, "original_max_position_embeddings"));
	r->prf = not_null(item(r->p, "partial_rotary_factor"));
	if (split)
		return;
	if (!r->theta_swa)
		r->theta_swa = find(c, KEYS("local_rope_theta", "rope_local_theta", "rope_theta_local", "swa_rope_theta",
					    "rope_local_base_freq"), NULL);
	if (!r->theta)
		r->theta = find(c, KEYS("global_rope_theta", "rope_global_theta", "rope_theta_global", "rope_theta",
					"rotary_emb_base"), NULL);
	if (!r->type)
		r->type = not_null(item(r->p, "type"));
	if (!r->prf)
		r->prf = find(c, KEYS("partial_rotary_factor", "rope_pct", "rope_percent"), NULL);
	if (!r->orig_ctx)
		r->orig_ctx = find(c, KEYS("original_max_position_embeddings"), NULL);
}

static bool type_is(const struct rope *r, const char *s)
{
	return cJSON_IsString(r->type) && strcasecmp(r->type->valuestring, s) == 0;
}

/* The rope-scaling key/values (B:1296-1330). */
static enum wf_err kv_rope_scaling(struct cfg *c, const struct rope *r, struct wf_gguf_w *w, const char *a)
{
	char k[96];
	const cJSON *factor = not_null(item(r->p, "factor"));
	bool lin = cJSON_IsString(r->type) && strcmp(r->type->valuestring, "linear") == 0;
	bool yarn = cJSON_IsString(r->type) && strcmp(r->type->valuestring, "yarn") == 0;
	enum wf_err rc = WF_OK;
	if ((lin || yarn) && factor) {
		snprintf(k, sizeof k, "%s.rope.scaling.type", a);
		wf_gguf_w_str(w, k, lin ? "linear" : "yarn", lin ? 6 : 4);
		snprintf(k, sizeof k, "%s.rope.scaling.factor", a);
		rc = put_f32(c, w, k, factor, "rope_scaling.factor");
	}
	if (rc == WF_OK && yarn && factor) {
		uint32_t u;
		if (!as_u32(r->orig_ctx, &u))
			return wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_scaling.original_max_position_embeddings: %s",
				       r->orig_ctx ? "not an integer" : "missing");
		snprintf(k, sizeof k, "%s.rope.scaling.original_context_length", a);
		wf_gguf_w_u32(w, k, u);
		static const char *const yk[][3] = {{"extrapolation_factor", NULL, "yarn_ext_factor"},
						    {"attention_factor", "attn_factor", "yarn_attn_factor"},
						    {"beta_fast", NULL, "yarn_beta_fast"},
						    {"beta_slow", NULL, "yarn_beta_slow"}};
		for (size_t i = 0; i < WF_ARRAY_LEN(yk) && rc == WF_OK; i++) {
			const cJSON *v = not_null(item(r->p, yk[i][0]));
			if (!v && yk[i][1])
				v = not_null(item(r->p, yk[i][1]));
			snprintf(k, sizeof k, "%s.rope.scaling.%s", a, yk[i][2]);
			rc = put_f32(c, w, k, v, yk[i][0]);
		}
	}
	if (rc == WF_OK && (type_is(r, "su") || type_is(r, "longrope")) && cJSON_IsString(r->type) &&
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
static enum wf_err kv_gating(struct cfg *c, struct wf_gguf_w *w, const char *k)
{
	static const struct {
		const char *s;
		uint32_t v;
	} fn[] = {{"sigmoid", 2}, {"softmax", 1}, {"sqrtsoftplus", 4}};
	const char *which = "scoring_func";
	const cJSON *v = find(c, KEYS("score_function", "scoring_func", "score_func", "moe_router_activation",
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
static enum wf_err kv_experts(struct cfg *c, struct wf_gguf_w *w, const char *a)
{
	char k[96];
	enum wf_err rc = WF_OK;
#define K(s) (snprintf(k, sizeof k, "%s." s, a), k)
	if (!c->experts && find(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), NULL))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_local_experts: mixtures of experts are not made");
	/* a row's own count, re-added after the base block, keeps this place */
	const char *const own[] = {c->count_key, NULL};
	const char *const *ek = KEYS("num_local_experts", "num_experts", "n_routed_experts");
	if (c->count_key && find(c, own, NULL))
		ek = own;
	if (rc == WF_OK && c->experts)
		rc = put_u32(c, w, K("expert_count"), ek, true, NULL);
	if (rc == WF_OK && c->experts)
		rc = put_u32(c, w, K("expert_used_count"),
			     KEYS("num_experts_per_tok", "num_experts_per_token", "top_k_experts"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("expert_group_count"), KEYS("n_group"), false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("expert_group_used_count"), KEYS("topk_group"), false, NULL);
	if (rc == WF_OK)
		rc = kv_gating(c, w, K("expert_gating_func"));
#undef K
	return rc;
}

static enum wf_err kv_text(struct cfg *c, struct wf_gguf_w *w, const char *a, uint32_t ftype)
{
	char k[96];
	struct rope r;
	rope_of(c, &r);
#define K(s) (snprintf(k, sizeof k, "%s." s, a), k)
	const char *which = "num_hidden_layers";
	const cJSON *bc = find(c, KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), &which);
	uint32_t blocks;
	enum wf_err rc = WF_OK;
	if (!bc)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_hidden_layers: missing");
	else if (!as_u32(bc, &blocks) || blocks > UINT32_MAX - c->extra_blocks)
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)%s", which,
			     c->extra_blocks ? " with the MTP blocks" : "");
	else
		wf_gguf_w_u32(w, K("block_count"), blocks + c->extra_blocks);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("context_length"),
			     KEYS("max_position_embeddings", "n_ctx", "n_positions", "max_length", "max_sequence_length",
				  "model_max_length"),
			     false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("embedding_length"), KEYS("hidden_size", "n_embd", "dim"), false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("feed_forward_length"),
			     KEYS("prefix_dense_intermediate_size", "dense_intermediate_size", "intermediate_size",
				  "n_inner", "hidden_dim"),
			     false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.head_count"), KEYS("num_attention_heads", "n_head", "n_heads"), false, NULL);
	if (rc == WF_OK && c->mla)
		wf_gguf_w_u32(w, K("attention.head_count_kv"), 1); /* MLA as MQA: the converter sets it to 1 first */
	else if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.head_count_kv"), KEYS("num_key_value_heads", "n_kv_heads"), false, NULL);
	if (rc == WF_OK && cJSON_IsFalse(hp(c, "is_causal")))
		wf_gguf_w_bool(w, K("attention.causal"), false);
	if (rc == WF_OK)
		rc = kv_rope_scaling(c, &r, w, a);
	if (rc == WF_OK)
		rc = put_f32(c, w, K("rope.freq_base"), r.theta, "rope_theta");
	if (rc == WF_OK)
		rc = put_f32(c, w, K("rope.freq_base_swa"), r.theta_swa, "rope_local_base_freq");
	if (rc == WF_OK && c->rms_eps_1e5)
		wf_gguf_w_f32(w, K("attention.layer_norm_rms_epsilon"), 1e-5f);
	else if (rc == WF_OK)
		rc = put_f32k(c, w, K("attention.layer_norm_rms_epsilon"), KEYS("rms_norm_eps", "norm_eps"));
	if (rc == WF_OK)
		rc = put_f32k(c, w, K("attention.layer_norm_epsilon"),
			      KEYS("layer_norm_eps", "layer_norm_epsilon", "norm_epsilon"));
	if (rc == WF_OK)
		rc = kv_experts(c, w, a);
	if (rc == WF_OK && c->mla && not_null(hp(c, "head_dim"))) {
		/* written from head_dim, then overwritten in place with the latent's */
		wf_gguf_w_u32(w, K("attention.key_length"), c->mla_k);
		wf_gguf_w_u32(w, K("attention.value_length"), c->mla_v);
	} else if (rc == WF_OK && not_null(hp(c, "head_dim"))) {
		rc = put_u32(c, w, K("attention.key_length"), KEYS("head_dim"), false, NULL);
		if (rc == WF_OK)
			rc = put_u32(c, w, K("attention.value_length"), KEYS("head_dim"), false, NULL);
	}
#undef K
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	return rc;
}

static enum wf_err kv_llama(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_text(c, w, a->gguf, ftype);
	char kv[64], kr[64];
	snprintf(kv, sizeof kv, "%s.vocab_size", a->gguf);
	snprintf(kr, sizeof kr, "%s.rope.dimension_count", a->gguf);
	if (rc == WF_OK)
		rc = put_u32(c, w, kv, KEYS("vocab_size"), true, NULL);
	uint32_t h, n;
	const cJSON *hd = not_null(hp(c, "head_dim"));
	if (rc == WF_OK && hd)
		rc = put_u32(c, w, kr, KEYS("head_dim"), true, NULL);
	else if (rc == WF_OK) {
		if (!as_u32(hp(c, "hidden_size"), &n) || !as_u32(hp(c, "num_attention_heads"), &h) || !h)
			return wf_fail(c->why, WF_ERR_UNSUP, "config.json: hidden_size, num_attention_heads: missing");
		wf_gguf_w_u32(w, kr, n / h);
	}
	return rc;
}

/* GraniteModel.set_gguf_parameters: head_dim popped (no key/value length,
 * rope.dimension_count = hidden / heads), LlamaModel's keys, then each of
 * the multipliers that is truthy. */
static enum wf_err kv_granite(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	c->no_head_dim = true;
	enum wf_err rc = kv_llama(a, c, w, ftype);
	c->no_head_dim = false;
	static const char *const m[][2] = {{"attention_multiplier", "granite.attention.scale"},
					   {"embedding_multiplier", "granite.embedding_scale"},
					   {"residual_multiplier", "granite.residual_scale"},
					   {"logits_scaling", "granite.logit_scale"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(m) && rc == WF_OK; i++) {
		const cJSON *v = not_null(hp(c, m[i][0]));
		if (v && !cJSON_IsFalse(v) && !(cJSON_IsNumber(v) && v->valuedouble == 0))
			rc = put_f32(c, w, m[i][1], v, m[i][0]);
	}
	return rc;
}

/* Olmo2Model: the base block; a sliding_window (Olmo 3's, written with its
 * per-layer pattern) is not made. */
static enum wf_err kv_olmo2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	if (hp(c, "sliding_window"))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: sliding_window: OLMo 3's sliding window is not made");
	return kv_text(c, w, a->gguf, ftype);
}

/* Mistral3Model: Ministral3Model (LlamaModel's keys under mistral3) for a
 * text model_type of mistral (Mistral Small 3.1, 3.2); ministral3's yarn
 * keys and mistral4's experts (DeepseekV2Model) are not made. */
static enum wf_err kv_mistral3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	const cJSON *mt = hp(c, "model_type");
	if (cJSON_IsString(mt) && (strcmp(mt->valuestring, "ministral3") == 0 || strcmp(mt->valuestring, "mistral4") == 0))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: model_type: %s text models are not made",
			       mt->valuestring);
	return kv_llama(a, c, w, ftype);
}

/* Qwen2MoeModel.set_gguf_parameters adds the experts' widths, each if
 * config.json has it. */
static enum wf_err kv_qwen(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_text(c, w, a->gguf, ftype);
	char k[96];
	if (rc == WF_OK && a->experts) {
		snprintf(k, sizeof k, "%s.expert_feed_forward_length", a->gguf);
		rc = put_u32(c, w, k, KEYS("moe_intermediate_size"), false, NULL);
	}
	if (rc == WF_OK && a->experts) {
		snprintf(k, sizeof k, "%s.expert_shared_feed_forward_length", a->gguf);
		rc = put_u32(c, w, k, KEYS("shared_expert_intermediate_size"), false, NULL);
	}
	return rc;
}

/* OlmoeModel.set_gguf_parameters: the base block, then
 * add_layer_norm_rms_eps(1e-5), which keeps the base's place (the config
 * class's default makes it always there) and replaces its value. */
static enum wf_err kv_olmoe(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	c->rms_eps_1e5 = true;
	enum wf_err rc = kv_text(c, w, a->gguf, ftype);
	c->rms_eps_1e5 = false;
	return rc;
}

/* A u32 the rest of the plan divides or counts by: present and from 1 to
 * max. */
static enum wf_err need_u32(struct cfg *c, const char *field, uint32_t max, uint32_t *v)
{
	const cJSON *j = not_null(hp(c, field));
	if (!j)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", field);
	if (!as_u32(j, v) || *v < 1 || *v > max)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not an integer from 1 to %" PRIu32, field, max);
	return WF_OK;
}

/* llama.cpp's group-limited routing splits the experts into n_group equal
 * groups and keeps topk_group of them: counts it could not run are
 * refused. */
static enum wf_err ds_groups_ok(struct cfg *c)
{
	uint32_t ne = 0, ng = 1, tg = 1;
	const cJSON *gj = not_null(hp(c, "n_group")), *tj = not_null(hp(c, "topk_group"));
	as_u32(not_null(hp(c, "n_routed_experts")), &ne);
	if ((gj && (!as_u32(gj, &ng) || !ng)) || (tj && (!as_u32(tj, &tg) || !tg)))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not an integer from 1", gj && (!as_u32(gj, &ng) || !ng)
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
static enum wf_err kv_deepseek2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[96];
	uint32_t kvr = 512, rope = 0, nope = 0, vd = 0;
	const cJSON *kvj = not_null(hp(c, "kv_lora_rank"));
	if (kvj && !as_u32(kvj, &kvr))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: kv_lora_rank: not an integer in [0, 2^32)");
	enum wf_err rc = need_u32(c, "qk_rope_head_dim", 65535, &rope);
	if (rc == WF_OK)
		rc = need_u32(c, "qk_nope_head_dim", 65535, &nope);
	if (rc == WF_OK)
		rc = need_u32(c, "v_head_dim", 65535, &vd);
	if (rc != WF_OK)
		return rc;
	if ((rc = ds_groups_ok(c)) != WF_OK)
		return rc;
	if ((uint64_t)kvr + rope > UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: kv_lora_rank: %" PRIu32 " + qk_rope_head_dim passes 2^32", kvr);
	c->mla = true;
	c->mla_k = kvr + rope;
	c->mla_v = kvr;
	rc = kv_text(c, w, a->gguf, ftype);
	c->mla = false;
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	const cJSON *fk = not_null(hp(c, "first_k_dense_replace"));
	if (rc == WF_OK && fk)
		rc = put_u32(c, w, K("leading_dense_block_count"), KEYS("first_k_dense_replace"), true, NULL);
	else if (rc == WF_OK && not_null(hp(c, "n_routed_experts")))
		wf_gguf_w_u32(w, K("leading_dense_block_count"), 0);
	else if (rc == WF_OK)
		rc = put_u32(c, w, K("leading_dense_block_count"), KEYS("num_hidden_layers"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("vocab_size"), KEYS("vocab_size"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.q_lora_rank"), KEYS("q_lora_rank"), false, NULL);
	if (rc == WF_OK)
		wf_gguf_w_u32(w, K("attention.kv_lora_rank"), kvr);
	if (rc == WF_OK && !not_null(hp(c, "head_dim"))) {
		wf_gguf_w_u32(w, K("attention.key_length"), c->mla_k);
		wf_gguf_w_u32(w, K("attention.value_length"), c->mla_v);
	}
	if (rc == WF_OK) {
		wf_gguf_w_u32(w, K("attention.key_length_mla"), nope + rope);
		wf_gguf_w_u32(w, K("attention.value_length_mla"), vd);
		rc = put_u32(c, w, K("expert_feed_forward_length"), KEYS("moe_intermediate_size", "intermediate_size"),
			     true, NULL);
	}
	/* expert_count again: the same value, in its place */
	if (rc == WF_OK && !not_null(hp(c, "n_shared_experts")))
		wf_gguf_w_u32(w, K("expert_shared_count"), 0);
	else if (rc == WF_OK)
		rc = put_u32(c, w, K("expert_shared_count"), KEYS("n_shared_experts"), true, NULL);
	if (rc == WF_OK)
		rc = put_f32k(c, w, K("expert_weights_scale"), KEYS("routed_scaling_factor"));
	const cJSON *norm = not_null(hp(c, "norm_topk_prob"));
	if (rc == WF_OK && norm && !cJSON_IsFalse(norm) && !(cJSON_IsNumber(norm) && norm->valuedouble == 0))
		wf_gguf_w_bool(w, K("expert_weights_norm"), true);
	if (rc == WF_OK)
		wf_gguf_w_u32(w, K("rope.dimension_count"), rope);
	struct rope r;
	rope_of(c, &r);
	const cJSON *ms = not_null(item(r.p, "mscale_all_dim"));
	if (rc == WF_OK && ms && !cJSON_IsNumber(ms))
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: rope_scaling.mscale_all_dim: not a number");
	else if (rc == WF_OK && ms) /* TAG_DEEPSEEK2_YARN_LOG_MUL_FIX: 0.1 x, in double */
		wf_gguf_w_f32(w, K("rope.scaling.yarn_log_multiplier"), (float)(0.1 * ms->valuedouble));
#undef K
	return rc;
}

/* Glm4MoeModel.set_gguf_parameters (moe-and-mla.md 7): the base block
 * (block_count with the MTP blocks, expert_count from n_routed_experts),
 * then the rotary part of head_dim, the expert fields, gating 2 always,
 * expert_weights_norm whenever norm_topk_prob is set (false too), and
 * nextn_predict_layers. */
static enum wf_err kv_glm4moe(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[96];
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	c->count_key = "n_routed_experts";
	c->gating = 2;
	enum wf_err rc = kv_text(c, w, a->gguf, ftype);
	c->count_key = NULL;
	c->gating = 0;
	if (rc != WF_OK)
		return rc;
	/* int(head_dim * rope_parameters.get("partial_rotary_factor", 0.5)),
	 * head_dim from hidden_size // num_attention_heads when null */
	uint32_t hd, hidden, heads;
	const cJSON *hv = not_null(hp(c, "head_dim"));
	if (hv ? !as_u32(hv, &hd)
	       : (!as_u32(hp(c, "hidden_size"), &hidden) || !as_u32(hp(c, "num_attention_heads"), &heads) || !heads))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing or not a whole number",
			       hv ? "head_dim" : "hidden_size, num_attention_heads");
	if (!hv)
		hd = hidden / heads;
	struct rope r;
	rope_of(c, &r);
	if (r.prf && !cJSON_IsNumber(r.prf))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: partial_rotary_factor: not a number");
	double rot = hd * (r.prf ? r.prf->valuedouble : 0.5);
	if (!(rot >= 0 && rot < 4294967296.0))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: partial_rotary_factor: head_dim times it is not a count");
	wf_gguf_w_u32(w, K("rope.dimension_count"), (uint32_t)rot);
	rc = put_u32(c, w, K("expert_feed_forward_length"), KEYS("moe_intermediate_size"), false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("expert_shared_count"), KEYS("n_shared_experts"), false, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("leading_dense_block_count"), KEYS("first_k_dense_replace"), false, NULL);
	if (rc == WF_OK && !wf_gguf_w_has(w, K("expert_gating_func")))
		wf_gguf_w_u32(w, k, 2);
	if (rc == WF_OK)
		rc = put_f32k(c, w, K("expert_weights_scale"), KEYS("routed_scaling_factor"));
	const cJSON *nt = hp(c, "norm_topk_prob");
	if (rc == WF_OK && nt && !cJSON_IsNull(nt) && !cJSON_IsBool(nt))
		rc = wf_fail(c->why, WF_ERR_FORMAT, "config.json: norm_topk_prob: not a boolean");
	if (rc == WF_OK && !cJSON_IsNull(nt)) /* Glm4MoeConfig's default: true */
		wf_gguf_w_bool(w, K("expert_weights_norm"), !nt || cJSON_IsTrue(nt));
	if (rc == WF_OK)
		rc = put_u32(c, w, K("nextn_predict_layers"), KEYS("num_nextn_predict_layers"), false, NULL);
#undef K
	return rc;
}

/* GptOssModel.set_gguf_parameters: the base block (its file_type MOSTLY_MXFP4_MOE
 * when the experts were MXFP4: prepare_metadata sets it after the tensors,
 * in the key's first place), then the sliding window and the experts' width. */
static enum wf_err kv_gptoss(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_text(c, w, a->gguf, c->mxfp4 ? WF_FTYPE_MOSTLY_MXFP4_MOE : ftype);
	if (rc == WF_OK)
		rc = put_u32(c, w, "gpt-oss.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, "gpt-oss.expert_feed_forward_length", KEYS("intermediate_size"), true, NULL);
	return rc;
}

/* GemmaModel.set_gguf_parameters (and the first part of Gemma2Model's):
 * every field required, in this order. */
static enum wf_err kv_gemma(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	char k[64];
#define K(s) (snprintf(k, sizeof k, "%s." s, a->gguf), k)
	enum wf_err rc = put_u32(c, w, K("context_length"), KEYS("max_position_embeddings"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("embedding_length"), KEYS("hidden_size"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("block_count"), KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), true,
			     NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("feed_forward_length"), KEYS("intermediate_size"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.head_count"), KEYS("num_attention_heads"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.head_count_kv"), KEYS("num_key_value_heads", "num_attention_heads"), true,
			     NULL);
	if (rc == WF_OK && !hp(c, "rms_norm_eps"))
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: rms_norm_eps: missing");
	if (rc == WF_OK)
		rc = put_f32k(c, w, K("attention.layer_norm_rms_epsilon"), KEYS("rms_norm_eps"));
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.key_length"), KEYS("head_dim"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, K("attention.value_length"), KEYS("head_dim"), true, NULL);
#undef K
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	return rc;
}

static enum wf_err kv_gemma2(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_gemma(a, c, w, ftype);
	static const char *const need[][2] = {{"attn_logit_softcapping", "gemma2.attn_logit_softcapping"},
					      {"final_logit_softcapping", "gemma2.final_logit_softcapping"}};
	for (size_t i = 0; i < WF_ARRAY_LEN(need) && rc == WF_OK; i++) {
		const cJSON *v = not_null(hp(c, need[i][0]));
		rc = v ? put_f32(c, w, need[i][1], v, need[i][0])
		       : wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", need[i][0]);
	}
	if (rc == WF_OK)
		rc = put_u32(c, w, "gemma2.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	return rc;
}

static enum wf_err kv_gemma3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	enum wf_err rc = kv_text(c, w, a->gguf, ftype);
	/* G:140-157 writes context_length, head_count, rms epsilon, key and
	 * value length, freq_base and head_count_kv again: with AutoConfig's
	 * defaults in place those are the values kv_text wrote, in place */
	if (rc == WF_OK && not_null(hp(c, "attn_logit_softcapping")))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: attn_logit_softcapping: set (the converter asserts it is not)");
	const cJSON *fl = not_null(hp(c, "final_logit_softcapping"));
	if (rc == WF_OK && fl && !(cJSON_IsNumber(fl) && fl->valuedouble == 0) && !cJSON_IsFalse(fl))
		rc = put_f32(c, w, "gemma3.final_logit_softcapping", fl, "final_logit_softcapping");
	const cJSON *pat = hp(c, "sliding_window_pattern");
	if (rc == WF_OK && !(cJSON_IsNumber(pat) && pat->valuedouble == 1))
		rc = put_u32(c, w, "gemma3.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	if (rc == WF_OK && !wf_gguf_w_has(w, "gemma3.attention.head_count_kv"))
		rc = put_u32(c, w, "gemma3.attention.head_count_kv", KEYS("num_key_value_heads"), true, NULL);
	return rc;
}

static enum wf_err kv_phi3(const struct arch *a, struct cfg *c, struct wf_gguf_w *w, uint32_t ftype)
{
	(void)a;
	struct rope r;
	rope_of(c, &r);
	uint32_t n_embd = 0, n_head = 0, u = 0;
	enum wf_err rc = put_u32(c, w, "phi3.context_length", KEYS("n_positions", "max_position_embeddings"), true, NULL);
	if (rc == WF_OK && !as_u32(r.orig_ctx, &u))
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: original_max_position_embeddings: missing");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "phi3.rope.scaling.original_context_length", u);
	if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.embedding_length", KEYS("hidden_size", "n_embd"), true, &n_embd);
	if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.feed_forward_length", KEYS("intermediate_size"), true, NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.block_count", KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), true,
			     NULL);
	if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.attention.head_count", KEYS("num_attention_heads", "n_head"), true, &n_head);
	if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.attention.head_count_kv", KEYS("num_key_value_heads", "n_head_kv"), true, NULL);
	if (rc == WF_OK)
		rc = put_f32k(c, w, "phi3.attention.layer_norm_rms_epsilon", KEYS("rms_norm_eps"));
	double pct = cJSON_IsNumber(r.prf) ? r.prf->valuedouble : 1.0;
	if (rc == WF_OK && !n_head)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_attention_heads: 0");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "phi3.rope.dimension_count", (uint32_t)((uint64_t)(pct * n_embd) / n_head));
	if (rc == WF_OK && !r.theta)
		rc = wf_fail(c->why, WF_ERR_UNSUP, "config.json: rope_theta: missing");
	if (rc == WF_OK)
		rc = put_f32(c, w, "phi3.rope.freq_base", r.theta, "rope_theta");
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.file_type", ftype);
	const cJSON *sw = not_null(hp(c, "sliding_window"));
	if (rc == WF_OK && !sw)
		wf_gguf_w_u32(w, "phi3.attention.sliding_window", 0);
	else if (rc == WF_OK)
		rc = put_u32(c, w, "phi3.attention.sliding_window", KEYS("sliding_window"), true, NULL);
	return rc;
}

/* ---------------------------------------------------------------- general */

/* gguf-py's Metadata.id_to_title: words split on '-' and spaces, each
 * all-lowercase word that is not a version or a number title-cased. */
static void id_to_title(const char *s, struct wf_buf *b)
{
	bool first = true;
	while (*s) {
		while (*s == '-' || *s == ' ' || *s == '\t' || *s == '\n')
			s++;
		const char *e = s;
		while (*e && *e != '-' && *e != ' ' && *e != '\t' && *e != '\n')
			e++;
		if (e == s)
			break;
		bool lower = false, upper = false;
		for (const char *p = s; p < e; p++) {
			lower |= *p >= 'a' && *p <= 'z';
			upper |= *p >= 'A' && *p <= 'Z';
		}
		bool numeric = (*s >= '0' && *s <= '9') || (*s == 'v' && e - s > 1 && s[1] >= '0' && s[1] <= '9');
		if (!first)
			wf_buf_putc(b, ' ');
		first = false;
		bool word_start = true;
		for (const char *p = s; p < e; p++) {
			char ch = *p;
			bool alpha = (ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z');
			if (lower && !upper && !numeric && alpha)
				ch = word_start ? (char)(ch & ~0x20) : ch;
			wf_buf_putc(b, ch);
			word_start = !alpha;
		}
		s = e;
	}
}

/* general.size_label (wf_card.h), counted over the plan's tensors: the
 * converter counts the tensors it has added when it writes the metadata. */
static bool size_label(const struct cfg *c, const struct wf_arch_in *in, const struct wf_arch_plan *pl,
		       struct wf_buf *b)
{
	struct wf_card_count n = {0};
	for (size_t i = 0; i < pl->n; i++)
		wf_card_count_add(&n, pl->t[i].name, pl->t[i].ne, pl->t[i].ndim);
	/* metadata.py reads config.json itself: its top level, no defaults */
	const cJSON *np = cJSON_GetObjectItemCaseSensitive(c->root, "_name_or_path");
	struct wf_card_in ci = {.readme = in->readme, .readme_len = in->readme_len,
				.name_or_path = cJSON_IsString(np) ? np->valuestring : NULL,
				.dir = in->name ? in->name : "model"};
	return wf_card_size_label(&ci, &n, b);
}

/* general.* (B:1026-1056, metadata.py:606-632): type, the sampling
 * settings of generation_config.json, the name and the size label.  The
 * other descriptive keys the converter guesses from a model card are not
 * written. */
static enum wf_err kv_general(struct cfg *c, const struct wf_arch_in *in, const struct wf_arch_plan *pl,
			      struct wf_gguf_w *w)
{
	wf_gguf_w_str(w, "general.type", "model", 5);
	/* Metadata.load_generation_config: a file json.load refuses (a byte
	 * order mark, bytes after the value) is no file; one it reads
	 * otherwise than cJSON (a key given twice) leaves model.gguf out */
	cJSON *g = wf_json_bom(in->gen_config, in->gen_config_len) ? NULL
									: wf_json_parse_whole(in->gen_config, in->gen_config_len);
	enum wf_err rc = g ? wf_json_strict("generation_config.json", in->gen_config, in->gen_config_len, g, c->why)
			   : WF_OK;
	static const char *const samp[][3] = {
		{"top_k", "general.sampling.top_k", "i"},     {"top_p", "general.sampling.top_p", "f"},
		{"min_p", "general.sampling.min_p", "f"},     {"xtc_probability", "general.sampling.xtc_probability", "f"},
		{"xtc_threshold", "general.sampling.xtc_threshold", "f"}, {"temperature", "general.sampling.temp", "f"},
		{"penalty_last_n", "general.sampling.penalty_last_n", "i"},
		{"repetition_penalty", "general.sampling.penalty_repeat", "f"},
		{"mirostat", "general.sampling.mirostat", "i"},
		{"mirostat_tau", "general.sampling.mirostat_tau", "f"}, {"mirostat_eta", "general.sampling.mirostat_eta", "f"},
	};
	for (size_t i = 0; cJSON_IsObject(g) && i < WF_ARRAY_LEN(samp) && rc == WF_OK; i++) {
		const cJSON *v = not_null(cJSON_GetObjectItemCaseSensitive(g, samp[i][0]));
		if (i == 7 && !v)
			v = not_null(cJSON_GetObjectItemCaseSensitive(g, "penalty_repeat"));
		if (!v)
			continue;
		if (!cJSON_IsNumber(v))
			rc = wf_fail(c->why, WF_ERR_FORMAT, "generation_config.json: %s: not a number", samp[i][0]);
		else if (samp[i][2][0] == 'f')
			wf_gguf_w_f32(w, samp[i][1], (float)v->valuedouble);
		else if (v->valuedouble != floor(v->valuedouble) || fabs(v->valuedouble) > 2147483647.0)
			rc = wf_fail(c->why, WF_ERR_FORMAT, "generation_config.json: %s: not a 32-bit integer", samp[i][0]);
		else
			wf_gguf_w_i32(w, samp[i][1], (int32_t)v->valuedouble);
	}
	cJSON_Delete(g);
	/* the name: config.json's _name_or_path when it is an id (at most
	 * one '/'), else the folder's name */
	const cJSON *np = hp(c, "_name_or_path");
	const char *id = in->name ? in->name : "model";
	if (cJSON_IsString(np) && *np->valuestring && !strchr(strchr(np->valuestring, '/') ? strchr(np->valuestring, '/') + 1 : "", '/'))
		id = strchr(np->valuestring, '/') ? strchr(np->valuestring, '/') + 1 : np->valuestring;
	struct wf_buf b = {0};
	id_to_title(id, &b);
	if (b.len)
		wf_gguf_w_str(w, "general.name", b.data, b.len);
	bool oom = b.oom;
	/* set_gguf_meta_model: name, (author, version, organization,
	 * finetune, basename, description, quantized_by,) size_label */
	b.len = 0;
	if (size_label(c, in, pl, &b) && !b.oom)
		wf_gguf_w_str(w, "general.size_label", b.data, b.len);
	oom |= b.oom;
	wf_buf_free(&b);
	return rc != WF_OK ? rc : oom ? WF_ERR_NOMEM : WF_OK;
}

/* ---------------------------------------------------------------- GGUF -> HF (the hf/ view) */

/* The row named key: by general.architecture (with experts or without,
 * when there are both), or by its HF class (hf[0]). */
static const struct arch *row_of(const char *key, int experts)
{
	const struct arch *any = NULL;
	for (size_t i = 0; key && i < WF_ARRAY_LEN(arch_rows); i++) {
		const struct arch *a = &arch_rows[i];
		if (strcmp(key, a->hf[0]) == 0)
			return a;
		if (strcmp(key, a->gguf) != 0)
			continue;
		if (experts < 0 || (a->experts != NULL) == (experts > 0))
			return a;
		any = any ? any : a;
	}
	return any;
}

static bool row_permutes(const struct arch *a)
{
	return a && a->permute_qk;
}

const struct wf_arch_info *wf_arch_info_of(const char *gguf_arch, bool experts)
{
	static struct wf_arch_info info[WF_ARRAY_LEN(arch_rows)];
	const struct arch *a = row_of(gguf_arch, experts);
	if (!a)
		return NULL;
	size_t i = (size_t)(a - arch_rows);
	info[i] = (struct wf_arch_info){.hf_class = a->hf[0], .gguf = a->gguf, .permute_qk = a->permute_qk,
				       .norm_plus_one = a->norm_plus_one, .no_lm_head = a->drop_lm_head,
				       .experts = a->experts != NULL,
				       .model_type = a->experts ? a->experts->model_type
						   : strcmp(a->gguf, "mistral3") == 0 ? "mistral" : NULL};
	return &info[i];
}

bool wf_gguf_expert_name(const char *hf_class, const char *g, unsigned long x, char *out, size_t outlen)
{
	const struct arch *a = row_of(hf_class, -1);
	const char *s = g;
	unsigned long layer;
	if (!a || !a->experts || strncmp(s, "blk.", 4) != 0)
		return false;
	s += 4;
	if (!num(&s, &layer) || *s++ != '.')
		return false;
	for (unsigned k = 0; k < 3; k++) {
		size_t n = strlen(a->experts->gguf[k]);
		if (strncmp(s, a->experts->gguf[k], n) == 0 && strcmp(s + n, ".weight") == 0) {
			int len = snprintf(out, outlen, "model.layers.%lu%s%lu.%s.weight", layer, a->experts->mid, x,
					   a->experts->proj[k]);
			return len > 0 && (size_t)len < outlen;
		}
	}
	return false;
}

/* The HF layer part of GGUF part g[0..n) under row a, or NULL. */
static const char *hf_part(const struct arch *a, const char *g, size_t n, char *qk)
{
	bool phi3 = strcmp(a->gguf, "phi3") == 0;
	*qk = 0;
	bool known = false;
	for (const char *const *q = a->parts; *q && !known; q++)
		known = eq(g, n, *q);
	if (!known)
		return NULL;
	if (a->experts && eq(g, n, "ffn_gate_inp"))
		return a->experts->router;
	const char *own = own_part(a->gguf, g, n, false);
	if (own)
		return own;
	if (phi3 && eq(g, n, "ffn_up"))
		return "mlp.gate_up_proj"; /* gate and up fused, in that order */
	for (size_t i = 0; i < WF_ARRAY_LEN(layer_map); i++)
		if (eq(g, n, layer_map[i].gguf)) {
			*qk = a->permute_qk ? layer_map[i].qk : 0;
			return layer_map[i].hf;
		}
	return NULL;
}

bool wf_gguf_to_hf_name(const char *gguf_arch, const char *g, char *out, size_t outlen, char *qk, bool *norm)
{
	const struct arch *a = NULL;
	a = row_of(gguf_arch, 0);
	size_t n = strlen(g), stem;
	const char *sfx = param_suffix(g, n, &stem);
	*qk = 0;
	*norm = false;
	if (!a || !sfx)
		return false;
	const char *to = NULL, *part = NULL;
	int len = -1;
	for (size_t i = 0; i < WF_ARRAY_LEN(global_map); i++)
		if (eq(g, stem, global_map[i].gguf) && !(a->drop_lm_head && strcmp(global_map[i].hf, "lm_head") == 0))
			len = snprintf(out, outlen, "%s%s", (to = global_map[i].hf), sfx), part = global_map[i].gguf;
	if (!to && starts(g, stem, "blk.")) {
		const char *p = g + 4, *end = g + stem, *d = p;
		unsigned long layer = 0;
		while (d < end && *d >= '0' && *d <= '9' && d - p < 9)
			layer = layer * 10 + (unsigned long)(*d++ - '0');
		if (d == p || d >= end || *d != '.' || (*p == '0' && d - p > 1))
			return false;
		part = d + 1;
		to = hf_part(a, part, (size_t)(end - part), qk);
		/* ESCB's rename undone: "e_score_correction" + "_bias" */
		size_t tl = to ? strlen(to) : 0, el = sizeof ESCB - 6;
		if (to && strcmp(sfx, ".bias") == 0 && tl >= el && memcmp(to + tl - el, ESCB, el) == 0)
			sfx = "_bias";
		if (to)
			len = snprintf(out, outlen, "model.layers.%lu.%s%s", layer, to, sfx);
	}
	if (!to || len < 0 || (size_t)len >= outlen)
		return false;
	/* filter_tensors' rename undone: e_score_correction.bias -> _bias */
	if (strcmp(to, "mlp.gate.e_score_correction") == 0 && strcmp(sfx, ".bias") == 0)
		out[len - 5] = '_';
	size_t pl = strlen(to);
	*norm = strcmp(sfx, ".weight") == 0 && ((pl >= 4 && strcmp(to + pl - 4, "norm") == 0) ||
						(pl >= 9 && strcmp(to + pl - 9, "layernorm") == 0));
	return true;
}

/* ---------------------------------------------------------------- tensors */

static bool has_part(const struct arch *a, const char *gguf_name)
{
	/* blk.N.PART.weight|bias */
	const char *p = strchr(gguf_name + 4, '.');
	if (!p)
		return false;
	p++;
	const char *e = strrchr(p, '.');
	size_t n = e ? (size_t)(e - p) : strlen(p);
	for (const char *const *q = a->parts; *q; q++)
		if (strlen(*q) == n && memcmp(*q, p, n) == 0)
			return true;
	return false;
}

/* Whether the converter skips tensor `name` (B:909-911, filter_tensors). */
static bool skipped(const struct arch *a, const char *name)
{
	static const char *const ends[] = {".attention.masked_bias", ".attention.bias", ".rotary_emb.inv_freq"};
	size_t n = strlen(name);
	for (size_t i = 0; i < WF_ARRAY_LEN(ends); i++)
		if (n >= strlen(ends[i]) && strcmp(name + n - strlen(ends[i]), ends[i]) == 0)
			return true;
	return a->drop_lm_head && strcmp(name, "lm_head.weight") == 0;
}

/* TextModel.filter_tensors (base.py): the tensors of a vision or audio
 * tower and its projector, which the converter leaves out of the text
 * model's file (they go to --mmproj's). */
static bool not_text(const char *name)
{
	static const char *const pre[] = {"mlp", "vit.", "vpm.", "siglip2.", "conformer.", "merger.", "resampler.",
					  "sound_encoder.", "sound_projection.", "speech_embeddings."};
	static const char *const in[] = {"visual.", "vision.", "audio.", "talker.", "vision_", "audio_", "token2wav.",
					 "code2wav.", "projector.", "pre_mm_projector_norm", "image_newline",
					 "view_seperator", "patch_embed", "patch_embedding", "patch_merger.",
					 "patch_merge_mlp.", "model.connector."};
	for (size_t i = 0; i < WF_ARRAY_LEN(pre); i++)
		if (strncmp(name, pre[i], strlen(pre[i])) == 0)
			return true;
	for (size_t i = 0; i < WF_ARRAY_LEN(in); i++)
		if (strstr(name, in[i]))
			return true;
	return false;
}

/* ModelBase.filter_tensors: every "language_model." taken out of the name
 * (str.replace), so that language_model.model.X (older saves) and
 * model.language_model.X (transformers 4.52 on) are both model.X.  False
 * when the result does not fit out. */
static bool text_name(const char *name, char *out, size_t outlen)
{
	static const char lm[] = "language_model.";
	size_t n = 0;
	for (const char *s = name; *s;) {
		if (strncmp(s, lm, sizeof lm - 1) == 0) {
			s += sizeof lm - 1;
			continue;
		}
		if (n + 1 >= outlen)
			return false;
		out[n++] = *s++;
	}
	out[n] = 0;
	return true;
}

/* The source tensors in the converter's order: part files by name, and
 * names sorted within each file (B:206-295, U:331-333). */
struct ord {
	const char *file;
	const char *name;
	size_t i;
};

static const char *base_name(const char *p)
{
	const char *s = p ? strrchr(p, '/') : NULL;
	return s ? s + 1 : p ? p : "";
}

static int ord_cmp(const void *x, const void *y)
{
	const struct ord *a = x, *b = y;
	int c = strcmp(a->file, b->file);
	return c ? c : strcmp(a->name, b->name);
}

/* llama's auto --outtype (B:166-183): the first tensor of 2 or more dims
 * stored as BF16 or F16 decides; F32 ones and decoded layers do not. */
static uint32_t auto_ftype(const struct wf_model *m, const struct ord *o, size_t n)
{
	for (size_t k = 0; k < n; k++) {
		const struct wf_tensor *t = &m->tensors[o[k].i];
		if (t->ndim < 2 || t->q)
			continue;
		if (t->type == WF_T_BF16)
			return WF_FTYPE_MOSTLY_BF16;
		if (t->type == WF_T_F16)
			return WF_FTYPE_MOSTLY_F16;
	}
	return WF_FTYPE_MOSTLY_F16;
}

/* A plain float (or decoded) tensor the converter can read. */
static bool convertible(const struct wf_tensor *t)
{
	return t->q || t->type == WF_T_F32 || t->type == WF_T_F16 || t->type == WF_T_BF16 || t->type == WF_T_F64 ||
	       (wf_type_get(t->type) && wf_type_get(t->type)->vk == WF_VK_F32 && !wf_type_get(t->type)->layer);
}

static enum wf_err add_tensor(struct wf_arch_plan *pl, size_t cap, const char *name, int64_t src, uint32_t ndim,
			      const uint64_t *shape, bool norm_or_1d, uint32_t ftype, char *why)
{
	if (pl->n >= cap)
		return wf_fail(why, WF_ERR_RANGE, "too many tensors");
	struct wf_arch_tensor *t = &pl->t[pl->n];
	memset(t, 0, sizeof *t);
	if (ndim < 1 || ndim > 4)
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: %u dims do not fit GGUF", name, ndim);
	if (!(t->name = wf_arch_name_add(pl, name, strlen(name))))
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	t->src = src;
	t->ndim = ndim;
	uint64_t el = 1;
	for (uint32_t d = 0; d < ndim; d++) {
		t->ne[d] = shape[ndim - 1 - d];
		if (!wf_mul_ok(el, t->ne[d], &el))
			return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many elements", name);
	}
	t->type = norm_or_1d || ftype == WF_FTYPE_ALL_F32 ? WF_T_F32 : ftype == WF_FTYPE_MOSTLY_BF16 ? WF_T_BF16 : WF_T_F16;
	if (!wf_mul_ok(el, t->type == WF_T_F32 ? 4 : 2, &t->nbytes))
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many bytes", name);
	pl->n++;
	return WF_OK;
}

/* Llama 3's rope_freqs.weight (L:298-326), in float32 as torch computes
 * it: freqs = 1 / base^(arange(0, dim, 2) / dim), then per frequency its
 * wavelength against the old context's bands. */
static enum wf_err llama3_freqs(struct cfg *c, const struct rope *r, float **out, uint64_t *n)
{
	const cJSON *hd = not_null(hp(c, "head_dim"));
	uint32_t dim = 0, hidden, heads;
	if (hd ? !as_u32(hd, &dim) : (!as_u32(hp(c, "hidden_size"), &hidden) || !as_u32(hp(c, "num_attention_heads"), &heads) || !heads))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: head_dim: missing for rope_type llama3");
	if (!hd)
		dim = hidden / heads;
	if (dim < 2 || dim > 65536)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: head_dim: %u is not a rope dimension", dim);
	const cJSON *fv = not_null(item(r->p, "factor")), *lv = not_null(item(r->p, "low_freq_factor")),
		    *hv = not_null(item(r->p, "high_freq_factor"));
	const cJSON *ov = not_null(item(r->p, "original_max_position_embeddings"));
	const cJSON *vals[] = {r->theta, fv, lv, hv, ov};
	for (size_t i = 0; i < WF_ARRAY_LEN(vals); i++)
		if (vals[i] && !cJSON_IsNumber(vals[i]))
			return wf_fail(c->why, WF_ERR_FORMAT, "config.json: rope_scaling: a llama3 field is not a number");
	float base = r->theta ? (float)r->theta->valuedouble : 10000.0f;
	double factor = fv ? fv->valuedouble : 8.0, low = lv ? lv->valuedouble : 1.0, high = hv ? hv->valuedouble : 4.0;
	double old = ov ? ov->valuedouble : 8192;
	float lowl = (float)(old / low), highl = (float)(old / high);
	*n = (dim + 1) / 2; /* torch.arange(0, dim, 2): ceil(dim / 2) frequencies */
	if (!(*out = malloc(*n * sizeof **out)))
		return WF_ERR_NOMEM;
	for (uint32_t k = 0; k < *n; k++) {
		float e = (float)(2 * k) / (float)dim;
		float freq = (1.0f / powf(base, e)) * 1.0f;
		float wl = (1.0f / freq) * (float)(2 * M_PI);
		float v;
		if (wl < highl)
			v = 1.0f;
		else if (wl > lowl)
			v = (float)factor;
		else {
			float smooth = ((1.0f / wl) * (float)old - (float)low) / (float)(high - low);
			v = 1.0f / ((1.0f - smooth) / (float)factor + smooth);
		}
		(*out)[k] = v;
	}
	return WF_OK;
}

/* A JSON array of n numbers as float32 (torch.tensor(list, float32)). */
static enum wf_err f32_array(struct cfg *c, const cJSON *arr, uint64_t n, const char *field, float **out)
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
static enum wf_err phi3_factors(struct cfg *c, const struct rope *r, struct wf_arch_plan *pl, size_t cap)
{
	const cJSON *lf = not_null(item(r->p, "long_factor")), *sf = not_null(item(r->p, "short_factor"));
	if (!lf || (cJSON_IsArray(lf) && !cJSON_GetArraySize(lf)))
		return WF_OK;
	uint32_t n_embd, n_head, mp, orig;
	if (!as_u32(find(c, KEYS("hidden_size", "n_embd"), NULL), &n_embd) ||
	    !as_u32(find(c, KEYS("num_attention_heads", "n_head"), NULL), &n_head) || !n_head ||
	    !as_u32(find(c, KEYS("n_positions", "max_position_embeddings"), NULL), &mp) || !as_u32(r->orig_ctx, &orig) ||
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
		if (rc == WF_OK && (rc = add_tensor(pl, cap, names[k], -1, 1, &half, true, pl->ftype, c->why)) != WF_OK)
			free(v);
		if (rc != WF_OK)
			return rc;
		pl->t[pl->n - 1].gen = v;
	}
	return WF_OK;
}

/* Generated tensors, first in the file (B:908): llama3's rope_freqs,
 * Phi-3's rope factors. */
static enum wf_err gen_tensors(const struct arch *a, struct cfg *c, struct wf_arch_plan *pl, size_t cap)
{
	struct rope r;
	rope_of(c, &r);
	if (strcmp(a->gguf, "phi3") == 0)
		return phi3_factors(c, &r, pl, cap);
	if (!a->permute_qk || !type_is(&r, "llama3")) /* LlamaModel.generate_extra_tensors */
		return WF_OK;
	float *v = NULL;
	uint64_t n;
	enum wf_err rc = llama3_freqs(c, &r, &v, &n);
	if (rc == WF_OK)
		rc = add_tensor(pl, cap, "rope_freqs.weight", -1, 1, &n, true, pl->ftype, c->why);
	if (rc == WF_OK)
		pl->t[pl->n - 1].gen = v;
	else
		free(v);
	return rc;
}

/* The heads of q (n_head) or k (n_head_kv, when it differs) for
 * LlamaModel.permute, checked against the rows. */
static enum wf_err qk_heads(struct cfg *c, char qk, const struct wf_tensor *t, uint64_t *heads)
{
	uint32_t h = 0, hk = 0;
	if (!as_u32(find(c, KEYS("n_heads", "num_attention_heads"), NULL), &h) || !h)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_attention_heads: missing");
	const cJSON *kv = find(c, KEYS("n_kv_heads", "num_key_value_heads"), NULL);
	if (kv && !as_u32(kv, &hk))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: num_key_value_heads: not an integer");
	*heads = qk == 'k' && kv && hk && hk != h ? hk : h;
	if (!t->ndim || t->shape[0] % (2 * *heads) != 0) {
		char q[96];
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " rows do not split into %" PRIu64 " heads",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim ? t->shape[0] : 0, *heads);
	}
	return WF_OK;
}

/* ---------------------------------------------------------------- experts */

/* Mixtral's experts (moe-and-mla.md 1.2 and 2): a layer's per-expert w1,
 * w2 and w3 are parked until all 3 E of the layer are in, then written as
 * ffn_gate_exps, ffn_down_exps and ffn_up_exps (w1, w2, w3: the
 * converter's order), each the E tensors stacked on a new outer axis in
 * expert order, at the place of the layer's last expert tensor in the
 * converter's order.  Nothing is copied: each is read slab by slab from
 * its sources (wf_gguf_file.c), which may sit in different shards. */
struct moe {
	const struct moe_form *f;
	const char *field;  /* config.json's count of experts: num_local_experts, num_experts, ... */
	uint32_t n_layer, n_exp;
	uint32_t n_main;    /* the layers before the MTP blocks (f->nextn): n_layer without them */
	uint32_t dense;     /* the leading layers with no experts (f->dense) */
	size_t mtp_other;   /* the MTP blocks' tensors other than experts */
	uint32_t *slot;  /* [n_layer][3][n_exp]: the source tensor, or UINT32_MAX; becomes plan->stacks */
	uint32_t *count; /* [n_layer]: slots filled */
};

/* A decimal number as the converter's names have it (no leading zero,
 * under 10^9), advancing *p. */
static bool num(const char **p, unsigned long *v)
{
	const char *s = *p, *d = s;
	*v = 0;
	while (*d >= '0' && *d <= '9' && d - s < 9)
		*v = *v * 10 + (unsigned long)(*d++ - '0');
	if (d == s || (*s == '0' && d - s > 1) || (*d >= '0' && *d <= '9'))
		return false;
	*p = d;
	return true;
}

/* "model.layers.L" MID "X.PROJ.weight" of form f: L, X and PROJ's place
 * in the order written. */
static bool expert_name(const struct moe_form *f, const char *s, unsigned long *layer, unsigned long *x, unsigned *k)
{
	static const char pre[] = "model.layers.";
	size_t ml = strlen(f->mid);
	if (strncmp(s, pre, sizeof pre - 1) != 0)
		return false;
	s += sizeof pre - 1;
	if (!num(&s, layer) || strncmp(s, f->mid, ml) != 0)
		return false;
	s += ml;
	if (!num(&s, x) || *s++ != '.')
		return false;
	for (*k = 0; *k < 3; ++*k) {
		size_t pl = strlen(f->proj[*k]);
		if (strncmp(s, f->proj[*k], pl) == 0 && strcmp(s + pl, ".weight") == 0)
			return true;
	}
	return false;
}

/* The counts the experts are parked by, checked against the checkpoint: a
 * layer of E experts has 3 E tensors, so more than it holds is refused
 * before anything is allocated for them. */
static enum wf_err moe_init(struct cfg *c, const struct wf_model *m, struct moe *e)
{
	uint32_t used = 0;
	const char *which = "num_local_experts";
	const char *const own[] = {e->f->count, NULL};
	/* a row's own count is the one it stacks by (GLM: hparams["n_routed_experts"]) */
	const cJSON *ve = e->f->count ? find(c, own, &which) : find(c, KEYS("num_local_experts", "num_experts",
									    "n_routed_experts"), &which);
	if (!ve)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", e->f->count ? e->f->count : which);
	e->field = which;
	if (!as_u32(ve, &e->n_exp) || e->n_exp < 1 || e->n_exp > UINT16_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not a count of experts from 1 to 65535", which);
	const cJSON *vu = find(c, KEYS("num_experts_per_tok", "num_experts_per_token", "top_k_experts"), &which);
	if (!vu)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_experts_per_tok: missing");
	if (!as_u32(vu, &used) || used < 1 || used > e->n_exp)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not from 1 to the %" PRIu32 " experts", which,
			       e->n_exp);
	if (!as_u32(find(c, KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), &which), &e->n_layer) ||
	    !e->n_layer)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_hidden_layers: missing or 0");
	/* Glm4MoeModel: block_count += hparams.get(nextn, 0), so null fails it */
	const cJSON *vn = e->f->nextn ? hp(c, e->f->nextn) : NULL, *vd = e->f->dense ? not_null(hp(c, e->f->dense)) : NULL;
	e->n_main = e->n_layer;
	if (vn && (!as_u32(vn, &c->extra_blocks) || c->extra_blocks > UINT16_MAX))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not a count of MTP blocks from 0 to 65535", e->f->nextn);
	e->n_layer += c->extra_blocks;
	if (vd && !as_u32(vd, &e->dense))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)", e->f->dense);
	/* the leading dense layers have no slots (DeepSeek-V3's 3 of 61 layers
	 * hold 3 x 3 x 256 fewer than its tensors); every layer has some
	 * tensor, so more layers than tensors is refused too */
	if (e->dense > e->n_main)
		e->dense = e->n_main;
	size_t n = (size_t)(e->n_layer - e->dense) * 3 * e->n_exp;
	if (n / 3 / e->n_exp != e->n_layer - e->dense || n > m->n_tensors || e->n_layer > m->n_tensors ||
	    m->n_tensors >= UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP,
			       "config.json: num_hidden_layers x %s: %" PRIu32 " x %" PRIu32
			       " experts, more than the checkpoint's %zu tensors hold", e->field, e->n_layer, e->n_exp,
			       m->n_tensors);
	e->slot = malloc((n ? n : 1) * sizeof *e->slot);
	e->count = calloc(e->n_layer, sizeof *e->count);
	if (!e->slot || !e->count)
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	memset(e->slot, 0xff, n * sizeof *e->slot);
	return WF_OK;
}

/* Layer `layer`'s three stacked tensors, once all its experts are in. */
static enum wf_err moe_stack(struct cfg *c, const struct wf_model *m, unsigned long layer, struct wf_arch_plan *pl,
			     size_t cap)
{
	const struct moe *e = c->moe;
	char q[96], g[64];
	for (unsigned k = 0; k < 3; k++) {
		const uint32_t *st = &e->slot[((size_t)(layer - e->dense) * 3 + k) * e->n_exp];
		const struct wf_tensor *t0 = &m->tensors[st[0]];
		for (uint32_t x = 0; x < e->n_exp; x++) {
			const struct wf_tensor *t = &m->tensors[st[x]];
			if (t->ndim != 2 || t->shape[0] != t0->shape[0] || t->shape[1] != t0->shape[1])
				return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: not 2-D of expert 0's shape (%" PRIu64
					       " x %" PRIu64 "): experts are stacked", wf_quote(q, sizeof q, t->name, t->name_len),
					       t0->ndim ? t0->shape[0] : 0, t0->ndim > 1 ? t0->shape[1] : 0);
			if (!convertible(t))
				return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: dtype %s is not converted",
					       wf_quote(q, sizeof q, t->name, t->name_len),
					       wf_type_get(t->type) ? wf_type_get(t->type)->name : "?");
		}
		uint64_t shape[3] = {e->n_exp, t0->shape[0], t0->shape[1]};
		snprintf(g, sizeof g, "blk.%lu.%s.weight", layer, e->f->gguf[k]);
		enum wf_err rc = add_tensor(pl, cap, g, st[0], 3, shape, false, pl->ftype, c->why);
		if (rc != WF_OK)
			return rc;
		pl->t[pl->n - 1].n_stack = (uint16_t)e->n_exp;
		pl->t[pl->n - 1].stack = st;
	}
	return WF_OK;
}

static enum wf_err moe_park(struct cfg *c, const struct wf_model *m, size_t i, struct wf_arch_plan *pl, size_t cap)
{
	const struct wf_tensor *t = &m->tensors[i];
	struct moe *e = c->moe;
	unsigned long layer, x;
	unsigned k;
	char q[96];
	expert_name(e->f, t->name, &layer, &x, &k);
	if (layer >= e->n_layer || x >= e->n_exp)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %s %lu, past config.json's %s (%" PRIu32 ")",
			       wf_quote(q, sizeof q, t->name, t->name_len), layer >= e->n_layer ? "layer" : "expert",
			       layer >= e->n_layer ? layer : x,
			       layer < e->n_layer ? e->field : e->n_layer > e->n_main ? "num_hidden_layers + MTP blocks"
										: "num_hidden_layers",
			       layer >= e->n_layer ? e->n_layer : e->n_exp);
	/* llama.cpp makes no expert tensors for a dense layer: counted, refused by moe_done */
	if (layer < e->dense) {
		e->count[layer]++;
		return WF_OK;
	}
	uint32_t *slot = &e->slot[((layer - e->dense) * 3 + k) * e->n_exp + x];
	if (*slot != UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: given twice", wf_quote(q, sizeof q, t->name, t->name_len));
	*slot = (uint32_t)i;
	return ++e->count[layer] == 3 * e->n_exp ? moe_stack(c, m, layer, pl, cap) : WF_OK;
}

/* Every layer's experts were stacked (each class's prepare_tensors:
 * "Unprocessed experts"; a layer with none could not run either), but
 * the leading dense layers', which must have none (llama.cpp would not
 * load them), and the MTP blocks' when the checkpoint has none of their
 * tensors (llama.cpp then loads the trunk alone). */
static enum wf_err moe_done(struct cfg *c, struct wf_arch_plan *pl)
{
	const struct moe *e = c->moe;
	for (uint32_t l = 0; l < e->n_layer; l++) {
		if (l < e->dense && e->count[l])
			return wf_fail(c->why, WF_ERR_UNSUP, "layer %" PRIu32 ": %" PRIu32 " expert tensors, but config.json's "
				       "%s %" PRIu32 " makes it a dense layer", l, e->count[l], e->f->dense, e->dense);
		if (l >= e->dense && e->count[l] != 3 * e->n_exp && !(l >= e->n_main && !e->count[l] && !e->mtp_other))
			return wf_fail(c->why, WF_ERR_UNSUP,
				       "layer %" PRIu32 ": %" PRIu32 " of its %" PRIu32 " expert tensors (%s, %s, %s of "
				       "config.json's %s %" PRIu32 ")", l, e->count[l], 3 * e->n_exp, e->f->proj[0], e->f->proj[1],
				       e->f->proj[2], e->field, e->n_exp);
	}
	pl->stacks = e->slot;
	pl->n_stacks = (size_t)(e->n_layer - e->dense) * 3 * e->n_exp;
	c->moe->slot = NULL;
	return WF_OK;
}

/* Whether DeepseekV2Model.modify_tensors drops tensor `name`: lm_head
 * when tie_word_embeddings, and the MTP layers (re.match
 * "model.layers.(\\d+)" at or past num_hidden_layers), before the experts
 * are parked. */
static bool mla_skipped(struct cfg *c, const char *name)
{
	if (c->mla_tied < 0) {
		/* once, not for each of a DeepSeek-V3's 90,000 tensors */
		c->mla_tied = cJSON_IsTrue(hp(c, "tie_word_embeddings"));
		if (!as_u32(hp(c, "num_hidden_layers"), &c->mla_layers))
			c->mla_layers = UINT32_MAX;
	}
	if (c->mla_tied && (strcmp(name, "lm_head.weight") == 0 || strcmp(name, "model.lm_head.weight") == 0))
		return true;
	uint32_t n_layer = c->mla_layers;
	if (strncmp(name, "model", 5) != 0 || !name[5] || strncmp(name + 6, "layers", 6) != 0 || !name[12] ||
	    !(name[13] >= '0' && name[13] <= '9') || n_layer == UINT32_MAX)
		return false;
	uint64_t v = 0;
	for (const char *d = name + 13; *d >= '0' && *d <= '9'; d++)
		v = v > UINT32_MAX ? v : v * 10 + (uint64_t)(*d - '0');
	return v >= n_layer;
}

/* kv_b_proj (moe-and-mla.md 6.1): viewed as num_key_value_heads heads of
 * qk_nope_head_dim + v_head_dim rows, split into attn_k_b (each head's
 * first nope rows, transposed: ne [nope, kv_lora_rank, heads]) and
 * attn_v_b (the next v rows: ne [kv_lora_rank, v, heads]), in that order;
 * both read from kv_b_proj on demand (wf_xform.hs). */
static enum wf_err mla_split(struct cfg *c, const struct wf_tensor *t, size_t i, const char *g,
			     struct wf_arch_plan *pl, size_t cap)
{
	uint32_t nkv = 0, nope = 0, vd = 0;
	char q[96], name[WF_GGUF_NAME_MAX + 8];
	enum wf_err rc = need_u32(c, "num_key_value_heads", UINT32_MAX, &nkv);
	if (rc == WF_OK)
		rc = need_u32(c, "qk_nope_head_dim", 65535, &nope);
	if (rc == WF_OK)
		rc = need_u32(c, "v_head_dim", 65535, &vd);
	if (rc != WF_OK)
		return rc;
	if (t->ndim != 2 || !t->shape[1] || t->shape[0] != (uint64_t)nkv * (nope + vd))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " rows, not config.json's num_key_value_heads "
			       "(%" PRIu32 ") x (qk_nope_head_dim + v_head_dim) (%" PRIu32 ")",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim ? t->shape[0] : 0, nkv, nope + vd);
	/* the converter writes both as they are; llama.cpp's latent is
	 * kv_lora_rank wide, so one that differs could not load */
	uint32_t kvr = 512;
	const cJSON *kvj = not_null(hp(c, "kv_lora_rank"));
	if ((kvj && !as_u32(kvj, &kvr)) || t->shape[1] != kvr)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " columns, not config.json's kv_lora_rank (%s)",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->shape[1],
			       kvj && !as_u32(kvj, &kvr) ? "not an integer" : kvj ? "as given" : "512 by default");
	const char *at = strstr(g, "attn_kv_b");
	const uint64_t kshape[3] = {nkv, t->shape[1], nope}, vshape[3] = {nkv, vd, t->shape[1]};
	for (int k = 0; k < 2 && rc == WF_OK; k++) {
		snprintf(name, sizeof name, "%.*s%s%s", (int)(at - g), g, k ? "attn_v_b" : "attn_k_b", at + 9);
		rc = add_tensor(pl, cap, name, (int64_t)i, 3, k ? vshape : kshape, false, pl->ftype, c->why);
		if (rc == WF_OK) {
			struct wf_arch_tensor *o = &pl->t[pl->n - 1];
			o->hs.kind = k ? WF_HS_ROWS : WF_HS_T;
			o->hs.off = k ? nope : 0;
			o->hs.n = (uint16_t)(k ? vd : nope);
		}
	}
	return rc;
}

/* ---------------------------------------------------------------- gpt-oss */

/* gpt-oss's experts (gpt_oss.py GptOssModel, moe-and-mla.md 8.2): one
 * tensor per projection, "model.layers.L.mlp.experts." + gate_up_proj,
 * down_proj (dense: [E, H, 2F] used as x @ W with gate and up interleaved
 * in the columns, and [E, F, H]; or a decoded MXFP4 layer, view/wf_hfq.h,
 * of the same shape) and their biases [E, 2F], [E, H].  The projection's
 * name (what follows "experts."), or NULL. */
static const char *oss_expert(const char *name, unsigned long *layer)
{
	static const char pre[] = "model.layers.", mid[] = ".mlp.experts.";
	const char *s = name;
	if (strncmp(s, pre, sizeof pre - 1) != 0)
		return NULL;
	s += sizeof pre - 1;
	if (!num(&s, layer) || strncmp(s, mid, sizeof mid - 1) != 0)
		return NULL;
	s += sizeof mid - 1;
	static const char *const projs[] = {"gate_up_proj", "down_proj", "gate_up_proj_bias", "down_proj_bias"};
	for (size_t k = 0; k < WF_ARRAY_LEN(projs); k++)
		if (strcmp(s, projs[k]) == 0)
			return projs[k];
	return NULL;
}

/* An expert tensor's outer axis against config.json's count of experts:
 * llama.cpp sizes every expert tensor by expert_count, so a checkpoint
 * whose tensors hold another count makes a file it cannot load. */
static enum wf_err oss_count(struct cfg *c, const struct wf_tensor *t)
{
	const char *which = "num_local_experts";
	uint32_t n;
	char q[96];
	const cJSON *v = find(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), &which);
	if (!as_u32(v, &n) || n == 0)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: %s", which, v ? "not a count of experts" : "missing");
	if (!t->ndim || t->shape[0] != n)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " experts, config.json's %s says %" PRIu32,
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim ? t->shape[0] : 0, which, n);
	return WF_OK;
}

/* Adds blk.L.PART (one of gpt-oss's expert tensors) of numpy shape
 * [d0, d1, d2] (or [d1, d2] for 2 dims) read from tensor i through gather. */
static enum wf_err oss_add(struct cfg *c, struct wf_arch_plan *pl, size_t cap, unsigned long layer, const char *part,
			   size_t i, uint32_t ndim, const uint64_t *shape, bool f32, enum wf_gather gather)
{
	char g[96];
	snprintf(g, sizeof g, "blk.%lu.%s", layer, part);
	enum wf_err rc = add_tensor(pl, cap, g, (int64_t)i, ndim, shape, f32, pl->ftype, c->why);
	if (rc == WF_OK)
		pl->t[pl->n - 1].gather = (uint8_t)gather;
	return rc;
}

/* The MXFP4 experts, first in the file (GptOssModel.generate_extra_tensors
 * writes them before the main loop, in the converter's order of the
 * checkpoint's tensors): per layer down, then gate and up, the stored
 * blocks re-laid as ggml MXFP4 on read (WF_GATHER_MX_*). */
static enum wf_err oss_mxfp4(struct cfg *c, const struct wf_model *m, const struct ord *o, size_t n,
			     struct wf_arch_plan *pl, size_t cap)
{
	for (size_t k = 0; k < n; k++) {
		const struct wf_tensor *t = &m->tensors[o[k].i];
		unsigned long layer;
		const char *x = t->type == WF_T_HFQ_MXFP4 ? oss_expert(t->name, &layer) : NULL;
		char q[96];
		if (!x)
			continue;
		bool gu = strcmp(x, "gate_up_proj") == 0;
		enum wf_err rc0 = oss_count(c, t);
		if (rc0 != WF_OK)
			return rc0;
		if (!gu && strcmp(x, "down_proj") != 0)
			return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: MXFP4 where gpt-oss has a float bias",
				       wf_quote(q, sizeof q, t->name, t->name_len));
		/* decoded [E, C, R] from blocks [E, R, C/32, 16]: ggml ne [C, R, E] */
		uint64_t E = t->shape[0], C = t->shape[1], R = t->shape[2];
		if (t->ndim != 3 || C % 32 || (gu && R % 2))
			return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: MXFP4 experts of [%" PRIu64 ", %" PRIu64 "] do not "
				       "split into gate and up", wf_quote(q, sizeof q, t->name, t->name_len), R, C);
		uint64_t shape[3] = {E, gu ? R / 2 : R, C}, nb;
		static const char *const parts[3] = {"ffn_down_exps.weight", "ffn_gate_exps.weight", "ffn_up_exps.weight"};
		for (unsigned j = gu ? 1 : 0; j < (gu ? 3u : 1u); j++) {
			enum wf_err rc = oss_add(c, pl, cap, layer, parts[j], o[k].i, 3, shape, false,
						 !gu ? WF_GATHER_MX_ALL : j == 1 ? WF_GATHER_MX_EVEN : WF_GATHER_MX_ODD);
			if (rc != WF_OK)
				return rc;
			struct wf_arch_tensor *p = &pl->t[pl->n - 1];
			p->type = WF_T_MXFP4;
			if (!wf_mul_ok(E * shape[1], C / 32, &nb) || !wf_mul_ok(nb, 17, &p->nbytes))
				return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: too many bytes", p->name);
		}
		c->mxfp4 = true;
	}
	return WF_OK;
}

/* gpt-oss's expert tensor i in the main loop (GptOssModel.modify_tensors):
 * the dense projections transposed, gate_up's columns split (even: gate,
 * odd: up), the biases split alike; MXFP4 ones were written first. */
static enum wf_err oss_tensor(struct cfg *c, const struct wf_model *m, size_t i, const char *x, unsigned long layer,
			      struct wf_arch_plan *pl, size_t cap)
{
	const struct wf_tensor *t = &m->tensors[i];
	char q[96];
	if (t->type == WF_T_HFQ_MXFP4)
		return WF_OK;
	if (!convertible(t))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: dtype %s is not converted",
			       wf_quote(q, sizeof q, t->name, t->name_len),
			       wf_type_get(t->type) ? wf_type_get(t->type)->name : "?");
	bool bias = strstr(x, "_bias") != NULL, gu = strncmp(x, "gate_up", 7) == 0;
	enum wf_err rc0 = oss_count(c, t);
	if (rc0 != WF_OK)
		return rc0;
	if (t->ndim != (bias ? 2u : 3u) || (gu && t->shape[t->ndim - 1] % 2))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %u dims, not gpt-oss's %s",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim,
			       bias ? (gu ? "[E, 2F]" : "[E, H]") : gu ? "[E, H, 2F]" : "[E, F, H]");
	enum wf_err rc;
	if (bias && !gu)
		return oss_add(c, pl, cap, layer, "ffn_down_exps.bias", i, 2, t->shape, true, WF_GATHER_NONE);
	if (bias) {
		uint64_t s[2] = {t->shape[0], t->shape[1] / 2};
		rc = oss_add(c, pl, cap, layer, "ffn_gate_exps.bias", i, 2, s, true, WF_GATHER_COLS_EVEN);
		return rc == WF_OK ? oss_add(c, pl, cap, layer, "ffn_up_exps.bias", i, 2, s, true, WF_GATHER_COLS_ODD) : rc;
	}
	if (!gu) {
		uint64_t s[3] = {t->shape[0], t->shape[2], t->shape[1]};
		return oss_add(c, pl, cap, layer, "ffn_down_exps.weight", i, 3, s, false, WF_GATHER_T_ALL);
	}
	uint64_t s[3] = {t->shape[0], t->shape[2] / 2, t->shape[1]};
	rc = oss_add(c, pl, cap, layer, "ffn_gate_exps.weight", i, 3, s, false, WF_GATHER_T_EVEN);
	return rc == WF_OK ? oss_add(c, pl, cap, layer, "ffn_up_exps.weight", i, 3, s, false, WF_GATHER_T_ODD) : rc;
}

/* One checkpoint tensor: skipped, or named and added with its transform. */
static enum wf_err map_tensor(const struct arch *a, struct cfg *c, const struct wf_model *m, size_t i,
			      struct wf_arch_plan *pl, size_t cap)
{
	const struct wf_tensor *t = &m->tensors[i];
	char q[96], g[WF_GGUF_NAME_MAX + 8], qk;
	bool norm;
	const char *name = t->name;
	if (strlen(name) != t->name_len)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: a NUL in its name", wf_quote(q, sizeof q, name, t->name_len));
	char tn[WF_GGUF_NAME_MAX + 64];
	if (c->wrapper && not_text(name)) {
		pl->n_not_text++;
		return WF_OK;
	}
	if (c->wrapper && strstr(name, "language_model.")) {
		if (!text_name(name, tn, sizeof tn))
			return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: no GGUF name for %s (the converter refuses it too)",
				       wf_quote(q, sizeof q, name, t->name_len), a->gguf);
		name = tn;
		c->renamed = true;
	}
	if (skipped(a, name) || (is_mla(a) && mla_skipped(c, name)))
		return WF_OK;
	unsigned long layer, x;
	unsigned k;
	if (c->moe && expert_name(c->moe->f, name, &layer, &x, &k))
		return moe_park(c, m, i, pl, cap);
	const char *ox = packed_experts(a) ? oss_expert(name, &layer) : NULL;
	if (ox)
		return oss_tensor(c, m, i, ox, layer, pl, cap);
	/* GptOssModel.filter_tensors: "sinks" gets a ".weight" (DeepSeek's and
	 * GLM's e_score_correction_bias is read as a .bias by the name map) */
	char renamed[WF_GGUF_NAME_MAX + 16];
	size_t nl = strlen(name); /* the wrappers' renamed, or as stored */
	if (packed_experts(a) && nl >= 6 && strcmp(name + nl - 6, ".sinks") == 0 && nl + 8 <= sizeof renamed) {
		memcpy(renamed, name, nl);
		memcpy(renamed + nl, ".weight", 8);
		name = renamed;
		nl += 7;
	}
	if (!wf_hf_to_gguf_name(a->gguf, name, nl, g, sizeof g, &qk, &norm) ||
	    (strncmp(g, "blk.", 4) == 0 && !has_part(a, g)))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: no GGUF name for %s (the converter refuses it too)",
			       wf_quote(q, sizeof q, name, t->name_len), a->gguf);
	/* the converter's name map covers the blocks block_count says (an MTP
	 * block's eh_proj with num_nextn_predict_layers 0: "Can not map") */
	const char *lp = g + 4;
	bool blk = c->moe && strncmp(g, "blk.", 4) == 0 && num(&lp, &layer);
	if (blk && layer >= c->moe->n_layer)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: layer %lu, past config.json's %s (%" PRIu32 ")",
			       wf_quote(q, sizeof q, name, t->name_len), layer,
			       c->moe->n_layer > c->moe->n_main ? "num_hidden_layers + MTP blocks" : "num_hidden_layers",
			       c->moe->n_layer);
	if (blk && layer >= c->moe->n_main)
		c->moe->mtp_other++;
	if (!convertible(t))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: dtype %s is not converted", wf_quote(q, sizeof q, name, t->name_len),
			       wf_type_get(t->type) ? wf_type_get(t->type)->name : "?");
	size_t gl = strlen(g);
	if (is_mla(a) && strstr(g, ".attn_kv_b.weight") && strcmp(strstr(g, ".attn_kv_b.weight"), ".attn_kv_b.weight") == 0)
		return mla_split(c, t, i, g, pl, cap);
	/* the routers too (moe-and-mla.md 1.3) */
	bool f32 = t->ndim <= 1 || (gl >= 12 && strcmp(g + gl - 12, "_norm.weight") == 0) ||
		   gl < 7 || strcmp(g + gl - 7, ".weight") != 0 || strstr(g, ".ffn_gate_inp.") ||
		   strstr(g, ".ffn_gate_inp_shexp.");
	enum wf_err rc = add_tensor(pl, cap, g, (int64_t)i, t->ndim ? t->ndim : 1, t->ndim ? t->shape : (const uint64_t[]){1},
				    f32, pl->ftype, c->why);
	if (rc != WF_OK)
		return rc;
	struct wf_arch_tensor *o = &pl->t[pl->n - 1];
	if (a->permute_qk && qk)
		rc = qk_heads(c, qk, t, &o->perm_heads);
	/* G:116-121: every name ending in norm.weight, in the source's precision */
	if (a->norm_plus_one && strlen(name) >= 11 && strcmp(name + strlen(name) - 11, "norm.weight") == 0)
		o->add = t->type == WF_T_F16 && !t->q ? WF_ADD_F16 : WF_ADD_F32;
	return rc;
}

/* The multimodal releases whose text model is converted: their vision
 * tower and projector are left out and "language_model." taken out of
 * the names, as TextModel.filter_tensors does for every class; weightfs
 * does it for these only, refusing such tensors in a text model's
 * checkpoint as before. */
static const char *const wrappers[] = {"Gemma3ForConditionalGeneration", "Mistral3ForConditionalGeneration"};

static const struct arch *find_arch(struct cfg *c, char *why)
{
	const cJSON *as = hp(c, "architectures");
	const cJSON *a0 = cJSON_IsArray(as) ? cJSON_GetArrayItem(as, 0) : NULL;
	char q[96];
	if (!cJSON_IsString(a0))
		return wf_fail(why, WF_ERR_UNSUP, "config.json: architectures: missing"), NULL;
	for (size_t i = 0; i < WF_ARRAY_LEN(arch_rows); i++)
		for (size_t k = 0; k < 4 && arch_rows[i].hf[k]; k++)
			if (strcmp(arch_rows[i].hf[k], a0->valuestring) == 0) {
				for (size_t w = 0; w < WF_ARRAY_LEN(wrappers); w++)
					c->wrapper |= strcmp(wrappers[w], a0->valuestring) == 0;
				return &arch_rows[i];
			}
	wf_fail(why, WF_ERR_UNSUP, "config.json: architectures: %s is not an architecture model.gguf is made for",
		wf_quote(q, sizeof q, a0->valuestring, strlen(a0->valuestring)));
	return NULL;
}

static enum wf_err open_cfg(struct cfg *c, const struct wf_arch_in *in)
{
	if (!in->config)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: missing");
	c->root = wf_json_parse_whole(in->config, in->config_len);
	if (!cJSON_IsObject(c->root))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: not a JSON object");
	/* read as json.load reads it, or not at all */
	enum wf_err rc = wf_json_strict("config.json", in->config, in->config_len, c->root, c->why);
	if (rc != WF_OK)
		return rc;
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(c->root, "text_config");
	c->text = cJSON_IsObject(tc) ? tc : NULL;
	return add_defaults(c) == WF_OK ? WF_OK : wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
}

/* No key/value heads: LlamaModel.permute divides k's rows by them (the
 * converter stops there), and llama.cpp divides by head_count_kv. */
static enum wf_err kv_heads_ok(struct cfg *c)
{
	static const char *const keys[] = {"num_key_value_heads", "n_kv_heads", "n_head_kv"};
	for (size_t i = 0; i < WF_ARRAY_LEN(keys); i++) {
		const cJSON *v = hp(c, keys[i]);
		if (cJSON_IsNumber(v) && v->valuedouble == 0)
			return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: 0 (the converter's q/k permutation and "
				       "llama.cpp divide by it)", keys[i]);
	}
	return WF_OK;
}

static int name_cmp(const void *x, const void *y)
{
	return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* Each GGUF name once: the converter keeps a wrapper's tensors in a dict
 * by their names without "language_model.", so of two that become one
 * name (a checkpoint with both layouts) it would write the later's bytes
 * at the earlier's place; such a checkpoint is refused instead. */
static enum wf_err names_once(struct cfg *c, const struct wf_arch_plan *pl)
{
	const char **v = malloc((pl->n ? pl->n : 1) * sizeof *v);
	if (!v)
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < pl->n; i++)
		v[i] = pl->t[i].name;
	qsort(v, pl->n, sizeof *v, name_cmp);
	enum wf_err rc = WF_OK;
	for (size_t i = 1; i < pl->n && rc == WF_OK; i++)
		if (strcmp(v[i - 1], v[i]) == 0)
			rc = wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: two of the checkpoint's tensors have this name once "
				     "\"language_model.\" is taken out of theirs", v[i]);
	free(v);
	return rc;
}

static enum wf_err plan_tensors(const struct arch *a, struct cfg *c, const struct wf_model *m,
				struct wf_arch_plan *pl, uint32_t ftype)
{
	/* a source tensor makes at most two (DeepSeek's kv_b_proj, gpt-oss's gate_up and its bias),
	 * plus the generated ones */
	size_t cap = (packed_experts(a) || is_mla(a) ? 2 * m->n_tensors : m->n_tensors) + 4;
	struct ord *o = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *o);
	pl->t = calloc(cap, sizeof *pl->t);
	if (!o || !pl->t) {
		free(o);
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	}
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		o[i] = (struct ord){base_name(t->part < m->n_parts ? m->parts[t->part].path : NULL), t->name, i};
	}
	qsort(o, m->n_tensors, sizeof *o, ord_cmp);
	pl->ftype = ftype == WF_FTYPE_AUTO ? auto_ftype(m, o, m->n_tensors) : ftype;
	struct moe moe = {.f = a->experts};
	enum wf_err rc = WF_OK;
	if (rc == WF_OK && a->experts && (rc = moe_init(c, m, &moe)) == WF_OK)
		c->moe = &moe;
	if (rc == WF_OK)
		rc = gen_tensors(a, c, pl, cap);
	if (rc == WF_OK && packed_experts(a))
		rc = oss_mxfp4(c, m, o, m->n_tensors, pl, cap);
	for (size_t k = 0; k < m->n_tensors && rc == WF_OK; k++)
		rc = map_tensor(a, c, m, o[k].i, pl, cap);
	if (rc == WF_OK && c->moe)
		rc = moe_done(c, pl);
	if (rc == WF_OK && c->renamed)
		rc = names_once(c, pl);
	free(moe.slot);
	free(moe.count);
	c->moe = NULL;
	free(o);
	return rc;
}

enum wf_err wf_arch_plan(const struct wf_model *m, const struct wf_arch_in *in, uint32_t ftype,
			 struct wf_gguf_w *w, struct wf_arch_plan *plan, char *why)
{
	struct cfg c = {.why = why, .root = NULL, .mla_tied = -1};
	memset(plan, 0, sizeof *plan);
	plan->vocab_size = -1;
	const struct arch *a = NULL;
	enum wf_err rc = m->format != WF_FMT_SAFETENSORS ? wf_fail(why, WF_ERR_UNSUP, "not a Hugging Face checkpoint")
							  : open_cfg(&c, in);
	bool no_arch = false;
	if (rc == WF_OK && !(a = find_arch(&c, why)))
		rc = WF_ERR_UNSUP, no_arch = true;
	if (rc == WF_OK) {
		plan->arch = a->gguf;
		c.experts = a->experts != NULL || packed_experts(a);
		plan->tok = a->tok;
		uint32_t vs;
		if (as_u32(hp(&c, "vocab_size"), &vs))
			plan->vocab_size = vs;
		rc = kv_heads_ok(&c);
		if (rc == WF_OK)
			rc = plan_tensors(a, &c, m, plan, ftype);
	}
	if (rc == WF_OK) {
		wf_gguf_w_str(w, "general.architecture", a->gguf, strlen(a->gguf));
		/* written by prepare_tensors, before the metadata */
		if (plan->has_attn_factor)
			wf_gguf_w_f32(w, "phi3.rope.scaling.attn_factor", (float)plan->attn_factor);
		rc = kv_general(&c, in, plan, w);
	}
	if (rc == WF_OK)
		rc = a->kvs(a, &c, w, plan->ftype);
	if (rc == WF_OK)
		wf_gguf_w_u32(w, "general.quantization_version", 2);
	cJSON_Delete(c.root);
	cJSON_Delete(c.dflt);
	if (rc != WF_OK)
		wf_arch_plan_free(plan);
	/* no rules to follow at all (wf_arch_plan_any's case), rather than
	 * rules the checkpoint breaks */
	plan->generic = rc == WF_ERR_UNSUP && m->format == WF_FMT_SAFETENSORS && (!in->config || no_arch);
	return rc;
}

void wf_arch_plan_infos(const struct wf_arch_plan *plan, struct wf_gguf_w *w)
{
	for (size_t i = 0; i < plan->n; i++)
		wf_gguf_w_tensor(w, plan->t[i].name, plan->t[i].ndim, plan->t[i].ne, plan->t[i].type, plan->t[i].nbytes,
				 NULL);
}

bool wf_arch_parse_ftype(const char *s, uint32_t *ftype)
{
	static const struct {
		const char *s;
		uint32_t v;
	} f[] = {{"f32", WF_FTYPE_ALL_F32}, {"f16", WF_FTYPE_MOSTLY_F16}, {"bf16", WF_FTYPE_MOSTLY_BF16},
		 {"auto", WF_FTYPE_AUTO}};
	for (size_t i = 0; i < WF_ARRAY_LEN(f); i++)
		if (strcmp(s, f[i].s) == 0) {
			*ftype = f[i].v;
			return true;
		}
	return wf_arch_parse_qftype(s, ftype);
}

/* Names are small (GGUF's are under 64 bytes): one malloc per chunk of
 * many, so the allocator's overhead is not paid per name. */
#define NAMES_CHUNK ((size_t)64 << 10)

struct wf_arch_names {
	struct wf_arch_names *next;
	size_t used, cap;
	char s[];
};

const char *wf_arch_name_add(struct wf_arch_plan *plan, const char *s, size_t n)
{
	struct wf_arch_names *c = plan->names;
	if (n >= SIZE_MAX - sizeof *c - NAMES_CHUNK)
		return NULL;
	if (!c || c->cap - c->used < n + 1) {
		size_t cap = n + 1 > NAMES_CHUNK ? n + 1 : NAMES_CHUNK;
		if (!(c = malloc(sizeof *c + cap)))
			return NULL;
		*c = (struct wf_arch_names){.next = plan->names, .cap = cap};
		plan->names = c;
	}
	char *at = c->s + c->used;
	memcpy(at, s, n);
	at[n] = 0;
	c->used += n + 1;
	return at;
}

void wf_arch_plan_free(struct wf_arch_plan *plan)
{
	for (size_t i = 0; plan->t && i < plan->n; i++)
		if (plan->t[i].src < 0)
			free(plan->t[i].gen);
	free(plan->t);
	free(plan->stacks);
	for (struct wf_arch_names *c = plan->names, *next; c; c = next) {
		next = c->next;
		free(c);
	}
	memset(plan, 0, sizeof *plan);
}
