/* wf_arch.h - the architecture table: how llama.cpp's convert_hf_to_gguf.py
 * turns a Hugging Face checkpoint of each architecture into GGUF.
 *
 * One row per architecture says which config.json `architectures` it is,
 * its GGUF general.architecture, the order in which the converter tries
 * tokenizers, whether it permutes q/k rows for llama.cpp's rope, whether
 * it stores norms as 1 + w, and which key/values it writes from which
 * config fields (with the transformers defaults the converter sees through
 * AutoConfig).  The HF -> GGUF tensor names and the q/k permutation live
 * here too, so `weightfs diff`, model.gguf and the hf/ view all pair
 * names and rows the same way.  The rules, with their sources, are in
 * ../shared/docs/hf-to-gguf.md (sections 1-5); docs/gguf.md says what
 * weightfs does where the converter's output cannot be known.
 *
 * llama.cpp's q/k permutation, with H heads (H = n_head for q, n_head_kv
 * for k) of D rows each: the HF rows of a head are [first halves of the
 * rotary pairs, second halves], the GGUF ones interleave them:
 *     GGUF row h*D + 2*i + j  =  HF row h*D + j*(D/2) + i   (i < D/2, j < 2)
 */
#ifndef WF_ARCH_H
#define WF_ARCH_H

#include "base/wf_common.h"
#include "model/wf_gguf_w.h"
#include "model/wf_model.h"
#include "model/wf_vocab.h"

#include <stdbool.h>
#include <stdint.h>

/* The row of the other layout that holds row `row` of a tensor of `rows`
 * rows in `heads` heads: from GGUF order to HF order when to_hf, else back. */
uint64_t wf_qk_row(uint64_t row, uint64_t rows, uint64_t heads, bool to_hf);

/* Architectures of the llama family weightfs can pair names for.  arch is
 * a GGUF general.architecture, a config.json model_type, or one of its
 * architectures ("LlamaForCausalLM"); returns the canonical name ("llama",
 * "mistral", "qwen2", "qwen3", "gemma", "gemma2", "gemma3", "phi3") or
 * NULL for any other. */
const char *wf_arch_canon(const char *arch);

/* Whether llama.cpp permutes q/k rows for arch (canonical), and whether
 * it stores norm weights as 1 + w. */
bool wf_arch_permutes_qk(const char *arch);
bool wf_arch_norm_plus_one(const char *arch);

/* The naming convention of one tensor name. */
enum wf_naming {
	WF_NAMES_OTHER = 0,
	WF_NAMES_GGUF,  /* blk.N.*, token_embd.*, output.*, output_norm.* */
	WF_NAMES_HF,    /* model.layers.N.*, model.embed_tokens.*, model.norm.*, lm_head.* */
};
enum wf_naming wf_name_naming(const char *name, size_t n);

/* The GGUF name llama.cpp gives HF tensor hf[0..n) under arch (canonical,
 * or NULL: llama's rules) into out (NUL-terminated); false when no rule
 * maps it or out is too small.  *qk gets 'q' or 'k' for the tensors whose
 * rows llama.cpp permutes (q_proj, k_proj: weight and bias), else 0;
 * *norm whether it is a norm weight.  This is the permissive map `diff`
 * pairs with; model.gguf also checks the name is one the architecture has
 * (wf_arch_plan). */
bool wf_hf_to_gguf_name(const char *arch, const char *hf, size_t n, char *out, size_t outlen, char *qk,
			bool *norm);

/* The architecture `diff` pairs an HF checkpoint's names with a GGUF's
 * by: the GGUF's general.architecture gguf_arch, which llama.cpp converted
 * with, but hf_arch (the HF side's model_type or class, or NULL) when that
 * is a row of its own whose class gguf_arch's row converts (a Mistral
 * checkpoint, whose GGUF says llama).  Returns one of the two pointers. */
const char *wf_arch_pair_arch(const char *gguf_arch, const char *hf_arch);

/* The HF name of expert x of the stacked GGUF tensor g
 * ("blk.L.ffn_gate_exps.weight") under the row of HF class `hf_class`
 * into out: "model.layers.L.block_sparse_moe.experts.X.w1.weight" for
 * Mixtral; false when g is no stacked expert tensor of that row. */
bool wf_gguf_expert_name(const char *hf_class, const char *g, unsigned long x, char *out, size_t outlen);

/* The HF name transformers gives GGUF tensor g under gguf_arch (a
 * general.architecture, or a row's HF class for the row itself; the
 * inverse of wf_hf_to_gguf_name, restricted to the tensors the
 * architecture has) into out; false when it has none (rope_freqs.weight,
 * Phi-3's rope factors, Gemma 2's output.weight: transformers drops
 * them).  *qk gets 'q' or 'k' for rows to put back in HF's order, *norm
 * whether it is a norm weight (Gemma's 1 + w). */
bool wf_gguf_to_hf_name(const char *gguf_arch, const char *g, char *out, size_t outlen, char *qk, bool *norm);

/* ---------------------------------------------------------------- model.gguf */

/* general.file_type values (llama_ftype) of the types model.gguf has. */
#define WF_FTYPE_ALL_F32 0u
#define WF_FTYPE_MOSTLY_F16 1u
#define WF_FTYPE_MOSTLY_BF16 32u
#define WF_FTYPE_MOSTLY_MXFP4_MOE 38u /* llama_ftype LLAMA_FTYPE_MOSTLY_MXFP4_MOE */
/* -o gguf= absent: the converter's --outtype auto */
#define WF_FTYPE_AUTO UINT32_MAX
/* with a quantized file type: llama-quantize --pure (every tensor it
 * quantizes in the default type, no mixture rules) */
#define WF_FTYPE_PURE 0x10000u

/* Parses a llama-quantize file type as -o gguf= names it: "q8_0",
 * "q4_k_m", ..., "iq4_xs"; NAME-pure for --pure, and "q3_k", "q4_k",
 * "q5_k" for the pure K types.  Sets *ftype to its llama_ftype (with
 * WF_FTYPE_PURE); false for any other string. */
bool wf_arch_parse_qftype(const char *s, uint32_t *ftype);

/* Whether ftype (a WF_FTYPE_* or parsed by wf_arch_parse_qftype) is a
 * quantized file type; its default tensor type (wf_types.h id), or -1. */
bool wf_ftype_quantized(uint32_t ftype);
int wf_ftype_default_type(uint32_t ftype);

/* The file type as llama-quantize prints it ("Q4_K_M", "Q8_0 (pure)",
 * "F32", "F16", "BF16"); static. */
const char *wf_ftype_name(uint32_t ftype);

struct wf_arch_plan;

/* What llama-quantize's rules read of a model's hyperparameters. */
struct wf_quant_hp {
	char arch[32];          /* general.architecture */
	uint32_t n_layer, n_head, n_head_kv, n_expert;
};

/* Reads *hp from a GGUF's key/values (a model's, or a header made in
 * memory and parsed).  WF_ERR_UNSUP with one line in why when block_count
 * or head_count is missing. */
struct wf_gguf_vals;
enum wf_err wf_quant_hp_read(const struct wf_gguf_vals *v, struct wf_quant_hp *hp, char *why);

/* Whether llama-quantize quantizes a tensor named `name` of ne[0..ndim)
 * (ggml order): 2 dims or more as ggml_n_dims counts them, a name ending
 * in "weight", not a norm or one of llama-quant.cpp's exceptions. */
bool wf_arch_quantizes(const char *name, const uint64_t *ne, uint32_t ndim);

/* llama.cpp's loader order of tensor names a[0..na) and b[0..nb)
 * (weight_name_comparer, the order llama-quantize writes): names without
 * a blk.N. prefix first, then by layer N as sscanf("blk.%d.") reads it,
 * then bytewise, a prefix first.  <0, 0 or >0 as for qsort. */
int wf_arch_loader_cmp(const char *a, size_t na, const char *b, size_t nb);

/* Applies llama-quantize's file type ftype to plan (its tensors as the
 * F32 GGUF llama-quantize reads, or a GGUF model's as stored): puts them
 * in llama.cpp's loader order and gives each tensor it quantizes its type
 * (the mixture's rules, no imatrix; WF_FTYPE_PURE: the default type),
 * with the shape fallbacks, setting quant (an F16 fallback: vk F16),
 * validate, vk and nbytes; sets plan->ftype.  WF_ERR_UNSUP for a file
 * type with no default type. */
enum wf_err wf_arch_quantize(struct wf_arch_plan *plan, uint32_t ftype, const struct wf_quant_hp *hp, char *why);

/* Parses a -o gguf= value ("f32", "f16", "bf16", "auto", or a quantized
 * file type: wf_arch_parse_qftype); false for any other. */
bool wf_arch_parse_ftype(const char *s, uint32_t *ftype);

/* How a tensor's values are changed on the way. */
enum wf_add {
	WF_ADD_NONE = 0,
	WF_ADD_F32,  /* + 1, in float32 (Gemma's norms from BF16 and F32 sources) */
	WF_ADD_F16,  /* + 1 in half precision, then widened (from F16 sources, as torch does it) */
	WF_ADD_SUB_F32, /* - 1, in float32 (hf/: Gemma's norms back to HF's w) */
};

/* How a tensor is a slice of each head's rows of its source (wf_arch_tensor.hs,
 * wf_xform.hs): the rows as they are, or each head's slice transposed. */
#define WF_HS_ROWS 1
#define WF_HS_T 2
#define WF_HS_KVB 3 /* hf/: kv_b_proj of attn_k_b (src) and attn_v_b (hs.off: its index) */

/* Elements of model.gguf's tensor gathered from a source that is laid out
 * otherwise (gpt-oss, moe-and-mla.md 8.2).  MX_*: a decoded MXFP4 layer
 * (view/wf_hfq.h, E experts of [C, R] as [E, C, R]) written as ggml
 * MXFP4 blocks straight from its stored blocks and scales: its rows r of
 * the stored [E, R, C/32, 16] (all, the even ones, the odd ones) become
 * ne [C, R', E], each 16-byte block re-laid (byte k = value k | value k+16
 * << 4) behind its scale byte.  COLS_*: a float view [A, 2B] whose even
 * or odd columns make [A, B].  T_*: a float view [E, B, S*A] (S 1 for
 * T_ALL, 2 for T_EVEN / T_ODD) transposed to [E, A, B], taking columns
 * S*a (+1 for T_ODD).  The way back (hf/ of a gpt-oss GGUF): T_PAIR, two
 * float views [E, B, A] (src and src2: gate and up) transposed into one
 * [E, A, 2B], the first's in the even columns, the second's in the odd;
 * PAIR, two [E, B] interleaved into [E, 2B] likewise. */
enum wf_gather {
	WF_GATHER_NONE = 0,
	WF_GATHER_MX_ALL, WF_GATHER_MX_EVEN, WF_GATHER_MX_ODD,
	WF_GATHER_COLS_EVEN, WF_GATHER_COLS_ODD,
	WF_GATHER_T_ALL, WF_GATHER_T_EVEN, WF_GATHER_T_ODD,
	WF_GATHER_T_PAIR, WF_GATHER_PAIR,
};

/* One tensor of model.gguf, in the order the converter writes them.  A
 * plan holds one per tensor of the model, so it is kept compact (88 bytes:
 * a model of 1,000,000 tensors must stay within docs/security.md's bound):
 * the name is a pointer, not a buffer. */
struct wf_arch_tensor {
	const char *name;            /* its GGUF name, NUL-terminated: the source tensor's own name when
				      * the same (the model outlives the plan), else in the plan's names */
	int64_t src;                 /* index into m->tensors, or -1: generated (gen); stacked: the first slab's */
	uint64_t ne[4];              /* ggml order, ne[0] innermost */
	uint64_t nbytes;             /* its data in model.gguf */
	uint64_t perm_heads;         /* q/k rows permuted with this many heads (wf_qk_row), or 0 */
	union {
		float *gen;          /* src -1: its values, [elements], owned */
		const uint32_t *stack; /* n_stack > 0: the source tensor of each slab, in the plan's stacks */
		uint64_t slab;       /* sliced: which of src's n_stack slabs this is */
		uint32_t src2;       /* gather T_PAIR, PAIR: the second source (index into m->tensors) */
		struct {             /* hs: a slice of each head's rows of src (wf_xform.hs): heads ne[2] */
			uint32_t off;
			uint16_t n;
			uint8_t kind; /* WF_HS_ROWS, WF_HS_T */
		} hs;
	};
	uint32_t type;               /* ggml type: WF_T_F32, WF_T_F16 or WF_T_BF16 */
	uint8_t ndim;                /* 1..4 (a byte: the entry stays 88 bytes) */
	uint16_t n_stack;            /* 0, or the experts stacked on ne[2] (moe-and-mla.md 1.2): slab k, of
				      * nbytes / n_stack bytes, is source tensor stack[k] made as a 2-D
				      * tensor of this type */
	bool perm_to_hf;             /* ... put back from llama.cpp's order into HF's (hf/), not the reverse */
	uint8_t add;                 /* enum wf_add */
	uint8_t vk;                  /* the source view it is read through (enum wf_vk), or 0: the one of `type` */
	bool validate;               /* llama-quantize checks what it made (ggml_validate_row_data): a read
				      * of a block or value that fails the check fails (EIO) */
	bool quant;                  /* encoded on read from the float32 view (vk WF_VK_F32) into `type`
				      * (wf_quant.h), as ggml_quantize_chunk does */
	bool sliced;                 /* hf/: slab `slab` of the n_stack on src's outer axis (one expert of a
				      * stacked GGUF tensor), not src whole */
	uint8_t gather;              /* enum wf_gather: elements gathered from a source laid out otherwise */
	bool prefix;                 /* the first ne[ndim-1] rows of src only, as they are (Gemma 3's token_embd
				      * cut to its tokenizer's vocabulary) */
};
/* docs/security.md's bound counts a plan entry as 88 bytes a tensor */
_Static_assert(sizeof(struct wf_arch_tensor) <= 88, "struct wf_arch_tensor grew past 88 bytes");

/* Chunks of the names a plan makes (wf_arch_name_add). */
struct wf_arch_names;

struct wf_arch_plan {
	const char *arch;            /* general.architecture (static) */
	enum wf_vocab_route tok;     /* the tokenizer routine (wf_vocab.h) */
	int64_t vocab_size;          /* config.json's vocab_size, or -1 */
	uint32_t ftype;              /* general.file_type */
	struct wf_arch_tensor *t;    /* [n] */
	size_t n;
	struct wf_arch_names *names; /* the names t points at that are not the source's, owned */
	uint32_t *stacks;            /* what stacked tensors' stack points into, owned */
	size_t n_stacks;             /* its entries: one per slab of every stacked tensor, and unused ones */
	bool generic;                /* no architecture llama.cpp runs: every tensor as stored (wf_arch_plan_any) */
	char arch_buf[64];           /* generic: general.architecture (config.json's model_type, or "unknown") */
	char why_generic[WF_ERRLEN]; /* generic: why no architecture's rules apply */
	bool from_gguf;              /* a GGUF source retyped (wf_arch_plan_gguf): no tokenizer to add */
	bool has_attn_factor;        /* Phi-3 long-context rope: phi3.rope.scaling.attn_factor */
	double attn_factor;
	size_t n_not_text;           /* a multimodal wrapper's vision tower and projector tensors, left out */
};

/* A copy of s[0..n) and a NUL in plan's names, kept until
 * wf_arch_plan_free; NULL when out of memory.  The names are packed in
 * chunks that never move (plan->t's pointers stay valid), rather than
 * each tensor holding a buffer of GGML_MAX_NAME bytes. */
const char *wf_arch_name_add(struct wf_arch_plan *plan, const char *s, size_t n);

/* The text inputs of the plan: the model folder's small files. */
struct wf_arch_in {
	const char *config;          /* config.json's bytes, or NULL */
	size_t config_len;
	const char *gen_config;      /* generation_config.json, or NULL */
	size_t gen_config_len;
	const char *name;            /* the model's folder name (general.name), or NULL */
	const char *readme;          /* README.md (its front matter: general.size_label), or NULL */
	size_t readme_len;
	const struct wf_vocab_files *tok; /* the tokenizer files (a row that reads their lengths), or NULL: none */
};

/* Decides model.gguf for the Hugging Face model m as the converter would
 * write it with --outtype `ftype` (WF_FTYPE_*, or WF_FTYPE_AUTO): writes
 * the key/values that come before the tokenizer's into w (general.*, the
 * architecture's hyperparameters, general.quantization_version), and fills
 * *plan with the tensors.  Returns WF_OK; WF_ERR_UNSUP with one line in
 * why when model.gguf cannot be what the converter writes (no config.json,
 * an architecture llama.cpp's converter does not know, a tensor it cannot
 * name, a required field absent, a q/k tensor whose rows do not split into
 * its heads), WF_ERR_FORMAT for a config.json that is not valid JSON or
 * holds a field of the wrong type, WF_ERR_NOMEM.  The caller adds the
 * tokenizer's key/values, then the tensor infos (wf_arch_plan_infos). */
enum wf_err wf_arch_plan(const struct wf_model *m, const struct wf_arch_in *in, uint32_t ftype,
			 struct wf_gguf_w *w, struct wf_arch_plan *plan, char *why);

/* model.gguf for a checkpoint of no architecture llama.cpp runs (or with
 * no config.json): every tensor of m under its own name and in model order,
 * in its stored dtype where GGUF has one (F32, F16, BF16, F64, I8..I64) and
 * else decoded to F32; general.architecture is config.json's model_type
 * (or "unknown"), and the key/values are the general.* ones, every
 * __metadata__ entry as safetensors.metadata.KEY and every top-level
 * config.json field as hf.config.KEY (strings, bools and whole numbers as
 * themselves, other numbers and nested values as their JSON text).  The
 * caller may add a tokenizer's key/values.  Fails (WF_ERR_UNSUP, naming the
 * tensor) for a name GGUF cannot hold, more than 4 dims, or a dtype with
 * no GGUF type (unsigned integers, bool). */
enum wf_err wf_arch_plan_any(const struct wf_model *m, const struct wf_arch_in *in, struct wf_gguf_w *w,
			     struct wf_arch_plan *plan, char *why);

/* model.gguf of a GGUF model m with -o gguf=`ftype` (WF_FTYPE_AUTO: F16):
 * what llama.cpp's llama-quantize --allow-requantize writes for that
 * type: m's key/values (split.* and general.alignment left out) then
 * general.quantization_version and general.file_type; the tensors in
 * llama.cpp's loader order, those it quantizes (2-D or more, named
 * *weight, not norms and the other exceptions of llama-quant.cpp) in the
 * type, the rest as stored.  Returns WF_OK; WF_ERR_UNSUP with one line in
 * why for a tensor ggml could not load or decode, or a key with a NUL
 * byte; WF_ERR_NOMEM. */
enum wf_err wf_arch_plan_gguf(const struct wf_model *m, uint32_t ftype, struct wf_gguf_w *w,
			      struct wf_arch_plan *plan, char *why);

/* Adds plan's tensor infos to w, in order. */
void wf_arch_plan_infos(const struct wf_arch_plan *plan, struct wf_gguf_w *w);

void wf_arch_plan_free(struct wf_arch_plan *plan);

/* ---------------------------------------------------------------- hf/ */

/* The hf/ view of a GGUF model: the folder transformers builds from it. */
struct wf_hf_plan {
	char *config_json;          /* config.json's text */
	size_t config_len;
	char *gen_json;             /* generation_config.json's text */
	size_t gen_len;
	struct wf_arch_plan st;     /* model.safetensors' tensors, by HF name, in file order (names sorted) */
};

/* Plans hf/ for the GGUF model m, its tensors in dtype vk (WF_VK_F32,
 * WF_VK_F16 or WF_VK_BF16; Gemma's norms are F32 whatever vk): names by
 * wf_gguf_to_hf_name, q/k rows put back, Gemma's norms less 1.  Returns
 * WF_OK; WF_ERR_UNSUP with one line in why (an architecture transformers
 * has no model for here, a required key missing or of the wrong type,
 * inconsistent head counts, a tensor of no float values); WF_ERR_NOMEM. */
enum wf_err wf_arch_hf_plan(const struct wf_model *m, enum wf_vk vk, struct wf_hf_plan *out, char *why);

void wf_hf_plan_free(struct wf_hf_plan *p);

#endif
