/* wf_arch_quant.c - model.gguf quantized (-o gguf=q4_k_m and the other
 * llama-quantize file types; wf_arch.h, wf_arch_quantize): which type
 * llama.cpp's llama-quantize gives each tensor, and in which order it
 * writes them.  From llama-quant.cpp (llama_tensor_get_type_impl,
 * tensor_type_fallback, tensor_get_category, init_quantize_state_counters)
 * at the version of the npm package the tests load, for a run without an
 * imatrix, tensor-type overrides or pruning; ../shared/docs/
 * gguf-to-hf-and-quantizers.md B.8 restates the rules. */
#include "arch/wf_arch.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* llama_ftype numbers (llama.h) and their default tensor types
 * (llama_ftype_get_default_type). */
enum {
	FT_Q4_0 = 2, FT_Q4_1 = 3, FT_Q8_0 = 7, FT_Q5_0 = 8, FT_Q5_1 = 9, FT_Q2_K = 10, FT_Q3_K_S = 11,
	FT_Q3_K_M = 12, FT_Q3_K_L = 13, FT_Q4_K_S = 14, FT_Q4_K_M = 15, FT_Q5_K_S = 16, FT_Q5_K_M = 17,
	FT_Q6_K = 18, FT_Q2_K_S = 21, FT_IQ4_NL = 25, FT_IQ4_XS = 30,
};

static const struct {
	const char *name;
	uint32_t ftype;
	int type;
} ftypes[] = {
	{"q4_0", FT_Q4_0, WF_T_Q4_0},       {"q4_1", FT_Q4_1, WF_T_Q4_1},       {"q8_0", FT_Q8_0, WF_T_Q8_0},
	{"q5_0", FT_Q5_0, WF_T_Q5_0},       {"q5_1", FT_Q5_1, WF_T_Q5_1},       {"q2_k", FT_Q2_K, WF_T_Q2_K},
	{"q2_k_s", FT_Q2_K_S, WF_T_Q2_K},   {"q3_k_s", FT_Q3_K_S, WF_T_Q3_K},   {"q3_k_m", FT_Q3_K_M, WF_T_Q3_K},
	{"q3_k_l", FT_Q3_K_L, WF_T_Q3_K},   {"q4_k_s", FT_Q4_K_S, WF_T_Q4_K},   {"q4_k_m", FT_Q4_K_M, WF_T_Q4_K},
	{"q5_k_s", FT_Q5_K_S, WF_T_Q5_K},   {"q5_k_m", FT_Q5_K_M, WF_T_Q5_K},   {"q6_k", FT_Q6_K, WF_T_Q6_K},
	{"iq4_nl", FT_IQ4_NL, WF_T_IQ4_NL}, {"iq4_xs", FT_IQ4_XS, WF_T_IQ4_XS},
};

/* Bare tensor types that name no file type: llama-quantize --pure. */
static const struct {
	const char *name;
	uint32_t ftype;
} pure_alias[] = {{"q3_k", FT_Q3_K_M}, {"q4_k", FT_Q4_K_M}, {"q5_k", FT_Q5_K_M}};

bool wf_arch_parse_qftype(const char *s, uint32_t *ftype)
{
	size_t n = strlen(s);
	bool pure = n > 5 && strcmp(s + n - 5, "-pure") == 0;
	if (pure)
		n -= 5;
	for (size_t i = 0; i < WF_ARRAY_LEN(ftypes); i++)
		if (strlen(ftypes[i].name) == n && strncmp(s, ftypes[i].name, n) == 0) {
			*ftype = ftypes[i].ftype | (pure ? WF_FTYPE_PURE : 0);
			return true;
		}
	for (size_t i = 0; !pure && i < WF_ARRAY_LEN(pure_alias); i++)
		if (strcmp(s, pure_alias[i].name) == 0) {
			*ftype = pure_alias[i].ftype | WF_FTYPE_PURE;
			return true;
		}
	return false;
}

bool wf_ftype_quantized(uint32_t ftype)
{
	return ftype != WF_FTYPE_AUTO && wf_ftype_default_type(ftype) >= 0 &&
	       (ftype & ~WF_FTYPE_PURE) != WF_FTYPE_ALL_F32 && (ftype & ~WF_FTYPE_PURE) != WF_FTYPE_MOSTLY_F16 &&
	       (ftype & ~WF_FTYPE_PURE) != WF_FTYPE_MOSTLY_BF16;
}

const char *wf_ftype_name(uint32_t ftype)
{
	static const char *const up[] = {"Q4_0",   "Q4_1",   "Q8_0",   "Q5_0",   "Q5_1",   "Q2_K",
					 "Q2_K_S", "Q3_K_S", "Q3_K_M", "Q3_K_L", "Q4_K_S", "Q4_K_M",
					 "Q5_K_S", "Q5_K_M", "Q6_K",   "IQ4_NL", "IQ4_XS"};
	static const char *const pure[] = {"Q4_0 (pure)",   "Q4_1 (pure)",   "Q8_0 (pure)",   "Q5_0 (pure)",
					   "Q5_1 (pure)",   "Q2_K (pure)",   "Q2_K_S (pure)", "Q3_K_S (pure)",
					   "Q3_K_M (pure)", "Q3_K_L (pure)", "Q4_K_S (pure)", "Q4_K_M (pure)",
					   "Q5_K_S (pure)", "Q5_K_M (pure)", "Q6_K (pure)",   "IQ4_NL (pure)",
					   "IQ4_XS (pure)"};
	_Static_assert(WF_ARRAY_LEN(up) == WF_ARRAY_LEN(ftypes) && WF_ARRAY_LEN(pure) == WF_ARRAY_LEN(ftypes),
		       "one name per file type");
	uint32_t f = ftype & ~WF_FTYPE_PURE;
	if (f == WF_FTYPE_ALL_F32)
		return "F32";
	if (f == WF_FTYPE_MOSTLY_BF16)
		return "BF16";
	for (size_t i = 0; ftype != WF_FTYPE_AUTO && i < WF_ARRAY_LEN(ftypes); i++)
		if (ftypes[i].ftype == f)
			return ftype & WF_FTYPE_PURE ? pure[i] : up[i];
	return "F16";
}

int wf_ftype_default_type(uint32_t ftype)
{
	uint32_t f = ftype & ~WF_FTYPE_PURE;
	for (size_t i = 0; ftype != WF_FTYPE_AUTO && i < WF_ARRAY_LEN(ftypes); i++)
		if (ftypes[i].ftype == f)
			return ftypes[i].type;
	return -1;
}

/* ---------------------------------------------------------------- the hparams the rules read */

enum wf_err wf_quant_hp_read(const struct wf_gguf_vals *v, struct wf_quant_hp *hp, char *why)
{
	memset(hp, 0, sizeof *hp);
	const uint8_t *a;
	uint64_t n;
	if (wf_gguf_str(v, wf_gguf_find(v, "general.architecture"), &a, &n) == WF_GGUF_OK && n < sizeof hp->arch &&
	    !memchr(a, 0, (size_t)n)) {
		memcpy(hp->arch, a, (size_t)n);
		hp->arch[n] = '\0';
		hp->n_layer = (uint32_t)wf_gguf_arch_int(v, hp->arch, "block_count", 0, UINT32_MAX);
		hp->n_head = (uint32_t)wf_gguf_arch_int(v, hp->arch, "attention.head_count", 0, UINT32_MAX);
		hp->n_head_kv = (uint32_t)wf_gguf_arch_int(v, hp->arch, "attention.head_count_kv", 0, UINT32_MAX);
		hp->n_expert = (uint32_t)wf_gguf_arch_int(v, hp->arch, "expert_count", 0, UINT32_MAX);
	}
	if (!hp->n_head_kv)
		hp->n_head_kv = hp->n_head;
	if (!hp->n_layer || !hp->n_head) {
		/* the architecture is the file's bytes: quoted, never raw */
		char q[80];
		const char *an = *hp->arch ? wf_quote(q, sizeof q, hp->arch, strlen(hp->arch)) : "ARCH";
		return wf_fail(why, WF_ERR_UNSUP, "metadata: %s.block_count and %s.attention.head_count are needed "
						  "to choose the types (llama-quantize reads them)", an, an);
	}
	return WF_OK;
}

/* ---------------------------------------------------------------- the rules */

/* Names llama-quantize never quantizes although they end in "weight"
 * (tensor_allows_quantization): substrings, then whole names. */
static const char *const keep_sub[] = {
	"_norm.weight", "ffn_gate_inp.weight", "ffn_gate_tid2eid.weight", "altup", "laurel",
	"per_layer_model_proj", "ssm_conv1d", "shortconv.conv.weight", "indexer.k_proj.weight",
	"indexer.q_proj.weight", "time_mix_first.weight", "time_mix_w0.weight", "time_mix_w1.weight",
	"time_mix_w2.weight", "time_mix_v0.weight", "time_mix_v1.weight", "time_mix_v2.weight",
	"time_mix_a0.weight", "time_mix_a1.weight", "time_mix_a2.weight", "time_mix_g1.weight",
	"time_mix_g2.weight", "time_mix_decay_w1.weight", "time_mix_decay_w2.weight",
	"time_mix_lerp_fused.weight", "attn_rel_b.weight", ".position_embd", "sam.pos_embd", "sam.neck.",
	"sam.net_", ".rel_pos", ".patch_embd", ".patch_merger", "a.rvq.codebook", "mm.a.code_embd",
};
static const char *const keep_name[] = {"position_embd.weight", "token_types.weight"};

bool wf_arch_quantizes(const char *name, const uint64_t *ne, uint32_t ndim)
{
	uint32_t nd = ndim;
	while (nd > 1 && ne[nd - 1] <= 1) /* ggml_n_dims: outermost ne of 1 (or 0) do not count */
		nd--;
	size_t n = strlen(name);
	if (nd < 2 || n < 6 || memcmp(name + n - 6, "weight", 6) != 0)
		return false;
	for (size_t i = 0; i < WF_ARRAY_LEN(keep_sub); i++)
		if (strstr(name, keep_sub[i]))
			return false;
	for (size_t i = 0; i < WF_ARRAY_LEN(keep_name); i++)
		if (strcmp(name, keep_name[i]) == 0)
			return false;
	return true;
}

enum cat { C_OTHER, C_OUTPUT, C_TOKEN_EMBD, C_QKV, C_KV_B, C_V, C_K, C_Q, C_ATTN_OUT, C_UP, C_GATE, C_DOWN };

static enum cat category(const char *n)
{
	if (strcmp(n, "output.weight") == 0)
		return C_OUTPUT;
	if (strcmp(n, "token_embd.weight") == 0 || strcmp(n, "per_layer_token_embd.weight") == 0)
		return C_TOKEN_EMBD;
	static const struct {
		const char *sub;
		enum cat c;
	} subs[] = {{"attn_qkv.weight", C_QKV}, {"attn_kv_b.weight", C_KV_B}, {"attn_v.weight", C_V},
		    {"attn_k.weight", C_K},     {"attn_q.weight", C_Q},       {"attn_output.weight", C_ATTN_OUT},
		    {"ffn_up", C_UP},           {"ffn_gate", C_GATE},         {"ffn_down", C_DOWN}};
	for (size_t i = 0; i < WF_ARRAY_LEN(subs); i++)
		if (strstr(n, subs[i].sub))
			return subs[i].c;
	return C_OTHER;
}

static bool attn_v_like(enum cat c)
{
	return c == C_V || c == C_QKV || c == C_KV_B;
}

struct qstate {
	const struct wf_quant_hp *hp;
	uint32_t ftype;              /* without the pure bit */
	int n_attention_wv, i_attention_wv, i_ffn_down, n_layer;
	bool tied;                   /* no output.weight: token_embd follows the output rules */
	bool is_70b;
};

static bool more_bits(int i, int n)
{
	return i < n / 8 || i >= 7 * n / 8 || (i - n / 8) % 3 == 2;
}

/* The layer ffn_down's rule looks at: its counter, or (experts) its name's. */
static int down_layer(const struct qstate *q, const char *name)
{
	if (q->hp->n_expert > 1) {
		int l = -1;
		if (strncmp(name, "blk.", 4) == 0)
			l = atoi(name + 4);
		return l;
	}
	return q->i_ffn_down;
}

/* output.weight (and a tied token_embd.weight): Q8_0 when the default
 * type's block does not divide a row, else Q6_K unless the file is Q8_0. */
static int output_type(int t, uint64_t ne0)
{
	if (ne0 % wf_type_get(t)->blck)
		return WF_T_Q8_0;
	return t != WF_T_Q8_0 ? WF_T_Q6_K : t;
}

static int attn_v_type(struct qstate *q, int t)
{
	uint32_t f = q->ftype, gqa = q->hp->n_head_kv ? q->hp->n_head / q->hp->n_head_kv : 1;
	if (f == FT_Q2_K)
		t = gqa >= 4 ? WF_T_Q4_K : WF_T_Q3_K;
	else if (f == FT_Q2_K_S && gqa >= 4)
		t = WF_T_Q4_K;
	else if (f == FT_Q3_K_M)
		t = q->i_attention_wv < 2 ? WF_T_Q5_K : WF_T_Q4_K;
	else if (f == FT_Q3_K_L)
		t = WF_T_Q5_K;
	else if ((f == FT_IQ4_NL || f == FT_IQ4_XS) && gqa >= 4)
		t = WF_T_Q5_K;
	else if ((f == FT_Q4_K_M || f == FT_Q5_K_M) && more_bits(q->i_attention_wv, q->n_attention_wv))
		t = WF_T_Q6_K;
	else if (f == FT_Q4_K_S && q->i_attention_wv < 4)
		t = WF_T_Q5_K;
	if (q->is_70b && (t == WF_T_Q3_K || t == WF_T_Q4_K))
		t = WF_T_Q5_K;
	if (q->hp->n_expert == 8)
		t = WF_T_Q8_0;
	q->i_attention_wv++;
	return t;
}

static int ffn_down_type(struct qstate *q, int t, const char *name)
{
	uint32_t f = q->ftype;
	int i = down_layer(q, name), n = q->n_layer;
	if (f == FT_Q2_K)
		t = WF_T_Q3_K;
	else if (f == FT_Q2_K_S) {
		if (i < n / 8)
			t = WF_T_Q4_K;
	} else if (f == FT_Q3_K_M)
		t = i < n / 16 ? WF_T_Q5_K : WF_T_Q4_K; /* "arch != FALCON ||": Q4_K for every arch here */
	else if (f == FT_Q3_K_L)
		t = WF_T_Q5_K;
	else if (f == FT_Q4_K_M) {
		if (more_bits(i, n))
			t = WF_T_Q6_K;
	} else if (i < n / 8 && (f == FT_IQ4_NL || f == FT_IQ4_XS))
		t = WF_T_Q5_K;
	else if (f == FT_Q5_K_M && more_bits(i, n))
		t = WF_T_Q6_K;
	else if (f == FT_Q4_K_S && i < n / 8)
		t = WF_T_Q5_K;
	q->i_ffn_down++;
	return t;
}

static int attn_out_type(const struct qstate *q, int t)
{
	uint32_t f = q->ftype;
	if (q->hp->n_expert == 8) {
		static const uint32_t five[] = {FT_Q2_K, FT_Q3_K_S, FT_Q3_K_M, FT_IQ4_NL, FT_Q4_K_S, FT_Q4_K_M, FT_IQ4_XS};
		for (size_t k = 0; k < WF_ARRAY_LEN(five); k++)
			if (f == five[k])
				return WF_T_Q5_K;
		return t;
	}
	return f == FT_Q2_K ? WF_T_Q3_K : f == FT_Q3_K_M ? WF_T_Q4_K : f == FT_Q3_K_L ? WF_T_Q5_K : t;
}

/* llama_tensor_get_type_impl for the file types above, no imatrix. */
static int mixture_type(struct qstate *q, int t, const char *name, uint64_t ne0)
{
	enum cat c = category(name);
	if (c == C_OUTPUT || (q->tied && c == C_TOKEN_EMBD))
		return output_type(t, ne0);
	if (c == C_TOKEN_EMBD)
		return t;
	if (attn_v_like(c))
		return attn_v_type(q, t);
	if (c == C_K)
		return q->hp->n_expert == 8 ? WF_T_Q8_0 : t;
	if (c == C_DOWN)
		return ffn_down_type(q, t, name);
	if (c == C_ATTN_OUT)
		return attn_out_type(q, t);
	if (c == C_QKV) /* unreachable: attn_v_like caught it (as in llama.cpp) */
		return t;
	return t;
}

/* tensor_type_fallback: a type whose block does not divide ne0. */
static int fallback(int t, uint64_t ne0)
{
	const struct wf_type *ty = wf_type_get(t);
	if (ne0 % ty->blck == 0)
		return t;
	int r = t;
	switch (t) {
	case WF_T_IQ4_XS: r = WF_T_IQ4_NL; break;
	case WF_T_Q2_K:
	case WF_T_Q3_K: r = WF_T_Q4_0; break;
	case WF_T_Q4_K: r = WF_T_Q5_0; break;
	case WF_T_Q5_K: r = WF_T_Q5_1; break;
	case WF_T_Q6_K: r = WF_T_Q8_0; break;
	default: break;
	}
	return ne0 % wf_type_get(r)->blck ? WF_T_F16 : r;
}

/* ---------------------------------------------------------------- the plan */

/* The layer sscanf("blk.%d.") finds in a name, or -1 (%d into an int:
 * what glibc keeps of a longer number). */
static long layer_of(const char *s)
{
	if (strncmp(s, "blk.", 4) != 0)
		return -1;
	char *end;
	long v = strtol(s + 4, &end, 10);
	return end == s + 4 ? -1 : (long)(int)(unsigned int)(unsigned long)v;
}

int wf_arch_loader_cmp(const char *a, size_t na, const char *b, size_t nb)
{
	long la = layer_of(a), lb = layer_of(b);
	if (la != lb)
		return la < lb ? -1 : 1;
	int c = memcmp(a, b, na < nb ? na : nb);
	if (c)
		return c;
	return na < nb ? -1 : na > nb;
}

static int loader_order(const void *x, const void *y)
{
	const struct wf_arch_tensor *a = x, *b = y;
	return wf_arch_loader_cmp(a->name, strlen(a->name), b->name, strlen(b->name));
}

static uint64_t row_bytes(int t, uint64_t ne0)
{
	const struct wf_type *ty = wf_type_get(t);
	return ne0 / ty->blck * ty->bytes;
}

/* llama-quantize's 70B rule (llama-quant.cpp: qs.model.type ==
 * LLM_TYPE_70B): llama_model's load_hparams calls a model 70B by its
 * general.architecture and 80 blocks, for these of llama.cpp's
 * architectures only, llama when its attention is grouped (with n_head ==
 * n_head_kv, 80 blocks are a 65B).  It is llama.cpp's table keyed by GGUF
 * names, not a fact of a converter class: it applies to a GGUF retyped
 * (wf_arch_plan_gguf) of any architecture, olmo and deci among them, which
 * the registry has no row for.  So it stays here, the one table besides
 * the registry that names architectures (tools/check_layers.py,
 * ARCH_TABLES). */
static const struct {
	const char *arch;
	bool gqa;
} llama_70b[] = {{"llama", true}, {"qwen2", false}, {"olmo", false}, {"deci", false}};

enum wf_err wf_arch_quantize(struct wf_arch_plan *plan, uint32_t ftype, const struct wf_quant_hp *hp, char *why)
{
	int dflt = wf_ftype_default_type(ftype);
	if (dflt < 0)
		return wf_fail(why, WF_ERR_UNSUP, "file type %u: not one model.gguf is made in", ftype);
	struct qstate q = {.hp = hp, .ftype = ftype & ~WF_FTYPE_PURE, .n_layer = (int)hp->n_layer, .tied = true};
	for (size_t i = 0; i < WF_ARRAY_LEN(llama_70b); i++)
		if (strcmp(hp->arch, llama_70b[i].arch) == 0 && hp->n_layer == 80 &&
		    (!llama_70b[i].gqa || hp->n_head != hp->n_head_kv))
			q.is_70b = true;
	qsort(plan->t, plan->n, sizeof *plan->t, loader_order);
	for (size_t i = 0; i < plan->n; i++) {
		q.n_attention_wv += attn_v_like(category(plan->t[i].name));
		q.tied &= category(plan->t[i].name) != C_OUTPUT;
	}
	for (size_t i = 0; i < plan->n; i++) {
		struct wf_arch_tensor *t = &plan->t[i];
		if (!wf_arch_quantizes(t->name, t->ne, t->ndim))
			continue;
		int nt = dflt;
		if (!(ftype & WF_FTYPE_PURE))
			nt = mixture_type(&q, nt, t->name, t->ne[0]);
		nt = fallback(nt, t->ne[0]);
		if ((uint32_t)nt == t->type)
			continue;
		/* llama_model_quantize_impl: "requantizing from type %s is disabled"
		 * (gpt-oss's MXFP4 experts; --allow-requantize is not the default);
		 * a GGUF source is retyped as with --allow-requantize (docs/gguf.md) */
		if (!plan->from_gguf && t->type != WF_T_F32 && t->type != WF_T_F16 && t->type != WF_T_BF16)
			return wf_fail(why, WF_ERR_UNSUP, "tensor %s: llama-quantize does not requantize from %s (without "
				       "--allow-requantize)", t->name, wf_type_get((int)t->type) ? wf_type_get((int)t->type)->name
												 : "?");
		uint64_t rows = 1;
		for (uint32_t d = 1; d < t->ndim; d++)
			rows *= t->ne[d];
		t->type = (uint32_t)nt;
		t->quant = nt != WF_T_F16;
		t->vk = nt == WF_T_F16 ? WF_VK_F16 : WF_VK_F32;
		t->validate = true;
		if (!wf_mul_ok(rows, row_bytes(nt, t->ne[0]), &t->nbytes))
			return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many bytes", t->name);
	}
	plan->ftype = ftype; /* the pure bit kept for WEIGHTFS.txt; general.file_type is written without it */
	return WF_OK;
}
