/* wf_arch_int.h - inside src/arch/: one descriptor per architecture.
 *
 * An architecture is one `struct wf_arch` in a file of its own
 * (wf_arch_llama.c, wf_arch_qwen.c, ...) and one line in the registry
 * (wf_arch_reg.c), as Linux's squashfs registers its decompressors: the
 * engine (wf_arch.c: model.gguf's plan and the name map) walks the
 * registry, reads the descriptor's facts and calls its hooks where an
 * architecture needs code.  The key/value writers the hooks share, and
 * config.json as the converter reads it, are in wf_arch_kv.c.  Not
 * exported from src/arch/. */
#ifndef WF_ARCH_INT_H
#define WF_ARCH_INT_H

#include "base/wf_common.h"
#include "base/wf_buf.h"
#include "model/wf_gguf.h"
#include "model/wf_gguf_w.h"
#include "model/wf_model.h"
#include "model/wf_vocab.h"

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#define KEYS(...) ((const char *const[]){__VA_ARGS__, NULL})

struct moe;
struct wf_arch_plan;
struct wf_hfc;
struct wf_hfc_dims;
struct wf_arch;

/* config.json as the converter sees it: text_config's keys over the
 * root's (B:1186), and the transformers config class's defaults for what
 * the file leaves out (AutoConfig, hf-to-gguf.md 5.6), added to `dflt`. */
struct wf_cfg {
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
	uint32_t extra_blocks; /* Glm4MoeModel: the MTP blocks block_count counts too (struct wf_moe_form nextn) */
	const char *count_key; /* a row's own expert count field, written over the base's when present */
	uint32_t gating;    /* a row's expert_gating_func written over the config's, or 0 */
	struct moe *moe;    /* and its experts' tensors, parked for stacking */
	bool wrapper;       /* a multimodal release (wrappers[]): its text model is converted */
	bool renamed;       /* a wrapper's tensor lost "language_model.": two may now have one name */
	bool no_head_dim;   /* GraniteModel pops head_dim from the hparams before writing them */
	const struct wf_vocab_files *tok; /* the tokenizer files (wf_arch_in.tok), or NULL */
	enum wf_vocab_route route;        /* ... the row's route through them, */
	int64_t vocab_size;               /* ... and config.json's vocab_size (-1: none), as wf_vocab_write takes them */
};

/* rope_parameters as TextModel.__init__ mirrors them (B:1193-1211): the
 * object to read scaling fields from (its full_attention part if any),
 * and the mirrored top-level values.  Returns the object (may be NULL). */
struct wf_rope {
	const cJSON *p;          /* rope_parameters / rope_scaling, or NULL */
	const cJSON *type;       /* rope_type, mirrored from `type` */
	const cJSON *theta;      /* rope_theta, mirrored from the top level */
	const cJSON *theta_swa;  /* sliding_attention.rope_theta, mirrored from local keys */
	const cJSON *orig_ctx;   /* original_max_position_embeddings */
	const cJSON *prf;        /* partial_rotary_factor */
};
/* A transformers config class's default the converter sees (5.6). */
struct wf_dflt {
	const char *key;
	double v;
};

/* Fields a config class derives from others when config.json leaves them
 * out. */
enum {
	WF_DERIVE_KV_HEADS = 1,  /* num_key_value_heads = num_attention_heads */
	WF_DERIVE_HEAD_DIM = 2,  /* LlamaConfig: head_dim = hidden_size / num_attention_heads */
	WF_DERIVE_MLA = 4,       /* DeepseekV2/V3Config: kv heads = heads, head_dim = qk_rope_head_dim */
};

/* One config class, by config.json's model_type (which picks the class
 * AutoConfig builds, whatever the architecture): its defaults,
 * NULL-terminated, and what it derives. */
struct wf_cfg_class {
	const char *model_type;
	unsigned derive;
	struct wf_dflt d[16];
};

/* Layer parts named otherwise than layer_map's (wf_arch.c), both ways. */
struct wf_part_map {
	const char *hf, *gguf;
};
struct wf_part_maps {
	const struct wf_part_map *map;
	size_t n;
};

/* How an architecture's checkpoint names its experts, and the order the
 * converter writes the three stacked tensors in (moe-and-mla.md 1.2). */
struct wf_moe_form {
	const char *mid;          /* "model.layers.L" MID "X.PROJ.weight" */
	const char *proj[3];      /* in the order written */
	const char *gguf[3];      /* what each becomes: blk.L.GGUF.weight */
	const char *router;       /* the router's HF layer part (ffn_gate_inp) */
	const char *model_type;   /* config.json's model_type (hf/) */
	const char *count;        /* the count of experts the converter reads first, or NULL: the base's keys */
	const char *dense;        /* config field: that many leading layers have a dense MLP, no experts */
	const char *nextn;        /* config field: that many MTP blocks follow the layers, with experts too */
	bool fused;               /* also transformers 5's fused form (moe-and-mla.md 3): ".mlp.experts."
				   * gate_up_proj [E, 2F, H] (each expert's gate rows, then its up rows) and
				   * down_proj [E, H, F], with or without ".weight" */
};

typedef enum wf_err (*wf_arch_kv_fn)(const struct wf_arch *a, struct wf_cfg *c, struct wf_gguf_w *w,
				     uint32_t ftype);
/* Tensors the converter generates from config.json rather than reads
 * (generate_extra_tensors: Llama 3's rope_freqs, Phi-3's rope factors),
 * first in model.gguf (B:908): each added by wf_arch_gen_add; pl has room
 * for cap tensors. */
/* hf/'s config.json is written in three steps, and an architecture's
 * config hook is called at each (wf_arch_hf.c, write_config): HEAD before
 * anything is written (it may set h->cls and h->model_type: DeepSeek V2 or
 * V3), BODY after the fields every architecture has, ROPE after the token
 * ids (rope_scaling and what follows it; a row with no hook gets
 * wf_hfc_scaling's linear or yarn there, a hook that wants it calls it). */
enum wf_hfc_at { WF_HFC_HEAD, WF_HFC_BODY, WF_HFC_ROPE };
typedef enum wf_err (*wf_arch_cfg_fn)(const struct wf_arch *a, struct wf_hfc *h, const struct wf_model *m,
				      const struct wf_hfc_dims *d, enum wf_hfc_at at);
/* The rows of token_embd.weight the converter keeps of the checkpoint's
 * `rows` (Gemma3Model.modify_tensors: the tokenizer's real vocabulary):
 * *keep <= rows, or a failure naming why. */
typedef enum wf_err (*wf_arch_rows_fn)(const struct wf_arch *a, struct wf_cfg *c, uint64_t rows, uint64_t *keep);
typedef enum wf_err (*wf_arch_gen_fn)(const struct wf_arch *a, struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap);

/* One architecture: what convert_hf_to_gguf.py's class for it does, and
 * what transformers' class reads back. */
struct wf_arch {
	const char *hf[4];        /* config.json architectures[0]; hf[0] is hf/'s */
	const char *gguf;         /* general.architecture, and the name map's name for the row */
	const char *canon;        /* the name wf_arch_canon gives `names` (diff's), or NULL */
	const char *names[4];     /* the names (model_type aliases, classes) wf_arch_canon takes */
	const char *wrapper;      /* the class of hf[] that is a multimodal release: its text model converted */
	const char *hf_model_type; /* hf/'s model_type when not general.architecture's (nor the experts') */
	enum wf_vocab_route tok;
	bool permute_qk;          /* LlamaModel's undo_permute */
	bool norm_plus_one;       /* Gemma: every *norm.weight stored as 1 + w */
	bool drop_lm_head;        /* Gemma 2 never writes output.weight */
	bool mla;                 /* DeepseekV2Model: kv_b_proj split (mla_split), MTP skipped, tied lm_head dropped */
	bool packed_experts;      /* every expert of a projection in one tensor (gpt-oss: oss_tensor) */
	bool fused_gate_up;       /* ffn_up is HF's mlp.gate_up_proj (gate and up, in that order) */
	wf_arch_kv_fn kvs;        /* set_gguf_parameters */
	wf_arch_gen_fn gen;       /* generate_extra_tensors, or NULL: none */
	wf_arch_rows_fn embd_rows; /* token_embd cut to fewer rows, or NULL: as stored */
	/* hf/'s config.json (transformers' config class for the row) */
	const char *hf_act;       /* hidden_act, or NULL: "silu" */
	bool hf_attn_bias;        /* attention_bias: whether blk.0.attn_q.bias is there */
	const char *const *hf_said; /* GGUF tensors config.json says instead (the generated ones), NULL-terminated */
	wf_arch_cfg_fn config;    /* what else the class reads, or NULL (enum wf_hfc_at) */
	const char *const *parts; /* the layer parts (GGUF names) the arch has, NULL-terminated */
	const struct wf_moe_form *experts; /* per-expert tensors stacked (struct moe), or NULL */
	struct wf_part_maps maps[3]; /* own layer part names, read before layer_map's, in order */
	const struct wf_cfg_class *configs; /* the config classes of its model_types */
	size_t n_configs;
};

/* The registry (wf_arch_reg.c): every descriptor, in the order config.json
 * classes and general.architecture are looked up (a dense row before the
 * mixture of experts of the same general.architecture). */
#define WF_ARCH_ROWS_MAX 64
extern const struct wf_arch *const wf_arch_rows[];
extern const size_t wf_arch_n_rows;

/* The descriptors (one file each, or one per converter family). */
extern const struct wf_arch wf_arch_llama, wf_arch_mistral3, wf_arch_smollm3, wf_arch_granite, wf_arch_mixtral;
extern const struct wf_arch wf_arch_qwen2, wf_arch_qwen3, wf_arch_qwen2moe, wf_arch_qwen3moe;
extern const struct wf_arch wf_arch_gemma, wf_arch_gemma2, wf_arch_gemma3;
extern const struct wf_arch wf_arch_phi3, wf_arch_olmo2, wf_arch_olmoe;
extern const struct wf_arch wf_arch_deepseek2, wf_arch_gptoss, wf_arch_glm4moe;
/* data two families share */
extern const char *const wf_arch_llama_parts[];
extern const struct wf_part_map wf_arch_norms4[3];
extern const struct wf_part_map wf_arch_shared_experts[4];

/* config.json as the converter reads it, and the writers the hooks share
 * (wf_arch_kv.c). */
const cJSON *wf_cfg_hp(const struct wf_cfg *c, const char *k);
const cJSON *wf_cfg_find(const struct wf_cfg *c, const char *const *keys, const char **which);
bool wf_cfg_u32(const cJSON *v, uint32_t *out);
enum wf_err wf_cfg_put_u32(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys,
			   bool required, uint32_t *val);
enum wf_err wf_cfg_put_f32(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const cJSON *v, const char *field);
enum wf_err wf_cfg_put_f32k(struct wf_cfg *c, struct wf_gguf_w *w, const char *k, const char *const *keys);
const cJSON *wf_cfg_item(const cJSON *o, const char *k);
const cJSON *wf_cfg_not_null(const cJSON *v);
void wf_cfg_rope(const struct wf_cfg *c, struct wf_rope *r);
bool wf_rope_is(const struct wf_rope *r, const char *s);
enum wf_err wf_cfg_need_u32(struct wf_cfg *c, const char *field, uint32_t max, uint32_t *v);
/* TextModel.set_gguf_parameters, the key/values every converter class
 * here writes first (block_count through general.file_type, with rope
 * scaling and the expert keys), under architecture a. */
enum wf_err wf_kv_text(struct wf_cfg *c, struct wf_gguf_w *w, const char *a, uint32_t ftype);

/* Adds tensor `name` of numpy shape shape[0..ndim) to pl (room for cap),
 * read from m->tensors[src] (or -1: generated), in ftype's float type (F32
 * when norm_or_1d); WF_ERR_UNSUP naming it when GGUF cannot hold it
 * (wf_arch_put.c, as the rest below). */
enum wf_err wf_arch_add_tensor(struct wf_arch_plan *pl, size_t cap, const char *name, int64_t src, uint32_t ndim,
			       const uint64_t *shape, bool norm_or_1d, uint32_t ftype, char *why);
/* Adds the generated 1-D float32 tensor name of n values v (owned by the
 * plan from here, freed on failure) to pl, which has room for cap. */
enum wf_err wf_arch_gen_add(struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap, const char *name, uint64_t n,
			    float *v);

/* hf/'s plan as it reads the GGUF and writes config.json (wf_arch_hf.c);
 * the config hooks read and write through the wf_hfc_* below. */
struct wf_hfc {
	struct wf_gguf_vals kv;
	const struct wf_arch *a;  /* the row of general.architecture */
	const char *cls;        /* config.json's architectures[0] (HEAD: a->hf[0]) */
	const char *model_type; /* ... and model_type */
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

/* The numbers every architecture has (read_dims). */
struct wf_hfc_dims {
	int64_t embd, ff, layers, heads, kv_heads, ctx, head_dim, rot, vocab;
	double eps, theta;
};

/* The row of GGUF general.architecture gguf_arch (with experts or
 * without, when there are both), or of HF class hf[0]; NULL for none. */
const struct wf_arch *wf_arch_row_of(const char *gguf_arch, bool experts);

/* "ARCH.rest" (in h->key, until the next call). */
const char *wf_hfc_key(struct wf_hfc *h, const char *rest);
/* The architecture's key rest, a whole number in [lo, hi]: else
 * WF_ERR_UNSUP naming it in h->why. */
enum wf_err wf_hfc_need(struct wf_hfc *h, const char *rest, int64_t lo, int64_t hi, int64_t *v);
/* The model's tensor of that name, or NULL; whether it has one. */
const struct wf_tensor *wf_hfc_tensor(const struct wf_model *m, const char *name);
bool wf_hfc_has(const struct wf_model *m, const char *name);
/* config.json's next field: its name (the value written after it), or a
 * whole number, a float (as float32 when f32, else float64), a string, raw
 * JSON text. */
void wf_hfc_field(struct wf_hfc *h, const char *name);
void wf_hfc_int(struct wf_hfc *h, const char *name, int64_t v);
void wf_hfc_num(struct wf_hfc *h, const char *name, double v, bool f32);
void wf_hfc_str(struct wf_hfc *h, const char *name, const char *v);
void wf_hfc_raw(struct wf_hfc *h, const char *name, const char *v);
/* rope_scaling of rope.scaling.type linear or yarn, as the converter
 * writes them (nothing for another or none). */
void wf_hfc_scaling(struct wf_hfc *h);
/* A mixture of experts' two counts: count_field (num_experts,
 * num_local_experts) and num_experts_per_tok. */
enum wf_err wf_hfc_experts(struct wf_hfc *h, const char *count_field);

#endif
