/* wf_arch.c - the engine over the architecture registry (wf_arch.h,
 * wf_arch_int.h): the name map, model.gguf's plan. */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"
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

/* The row wf_arch_canon gives name to, or NULL. */
static const struct wf_arch *by_canon(const char *name)
{
	for (size_t i = 0; name && i < wf_arch_n_rows; i++)
		for (size_t k = 0; k < WF_ARRAY_LEN(wf_arch_rows[i]->names) && wf_arch_rows[i]->names[k]; k++)
			if (strcmp(name, wf_arch_rows[i]->names[k]) == 0)
				return wf_arch_rows[i];
	return NULL;
}

const char *wf_arch_canon(const char *arch)
{
	const struct wf_arch *a = by_canon(arch);
	return a ? a->canon : NULL;
}

static const struct wf_arch *row_of(const char *key, int experts);

/* The row a name means: a name wf_arch_canon takes, a general.architecture
 * (the dense row first) or a row's HF class. */
static const struct wf_arch *row_named(const char *name)
{
	const struct wf_arch *a = by_canon(name);
	return a ? a : row_of(name, 0);
}

bool wf_arch_permutes_qk(const char *arch)
{
	const struct wf_arch *a = row_named(arch);
	return a && a->permute_qk;
}

bool wf_arch_norm_plus_one(const char *arch)
{
	const struct wf_arch *a = row_named(arch);
	return a && a->norm_plus_one;
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
static const char *own_part(const struct wf_arch *a, const char *s, size_t n, bool from_hf)
{
	for (size_t i = 0; a && i < WF_ARRAY_LEN(a->maps) && a->maps[i].map; i++)
		for (size_t k = 0; k < a->maps[i].n; k++)
			if (eq(s, n, from_hf ? a->maps[i].map[k].hf : a->maps[i].map[k].gguf))
				return from_hf ? a->maps[i].map[k].gguf : a->maps[i].map[k].hf;
	return NULL;
}

/* The name map, one walk both ways: layer part s[0..n) of row a (NULL:
 * Llama's rules) as the other side names it, or NULL.  From HF (to_hf
 * false) it is the permissive map diff pairs with, and *qk says which
 * rows llama.cpp permutes wherever the architecture permutes them; to HF,
 * only the parts row a has, and *qk only where it does. */
static const char *layer_walk(const struct wf_arch *a, const char *s, size_t n, bool to_hf, char *qk)
{
	*qk = 0;
	bool known = !to_hf;
	for (const char *const *q = to_hf ? a->parts : NULL; q && *q && !known; q++)
		known = eq(s, n, *q);
	if (!known)
		return NULL;
	if (to_hf && a->experts && eq(s, n, "ffn_gate_inp"))
		return a->experts->router;
	const char *own = own_part(a, s, n, !to_hf);
	if (own)
		return own;
	if (to_hf && a->fused_gate_up && eq(s, n, "ffn_up"))
		return "mlp.gate_up_proj"; /* gate and up fused, in that order */
	for (size_t i = 0; i < WF_ARRAY_LEN(layer_map); i++)
		if (eq(s, n, to_hf ? layer_map[i].gguf : layer_map[i].hf)) {
			*qk = !to_hf || a->permute_qk ? layer_map[i].qk : 0;
			return to_hf ? layer_map[i].hf : layer_map[i].gguf;
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
		to = layer_walk(row_named(arch), d + 1, (size_t)(end - d - 1), false, qk);
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

/* ---------------------------------------------------------------- config defaults */

/* The config class of config.json's model_type, or NULL. */
static const struct wf_cfg_class *cfg_class(const char *model_type)
{
	for (size_t i = 0; i < wf_arch_n_rows; i++)
		for (size_t k = 0; k < wf_arch_rows[i]->n_configs; k++)
			if (strcmp(model_type, wf_arch_rows[i]->configs[k].model_type) == 0)
				return &wf_arch_rows[i]->configs[k];
	return NULL;
}

/* Sets default k to v in c->dflt, over any there. */
static enum wf_err set_dflt(struct wf_cfg *c, const char *k, double v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(c->dflt, k);
	return cJSON_AddNumberToObject(c->dflt, k, v) ? WF_OK : WF_ERR_NOMEM;
}

/* Fills c->dflt with the defaults of config.json's model_type's class, and
 * the ones it derives from other fields (num_key_value_heads = heads,
 * Llama's head_dim = hidden / heads, DeepSeek's head_dim =
 * qk_rope_head_dim). */
static enum wf_err add_defaults(struct wf_cfg *c)
{
	if (!(c->dflt = cJSON_CreateObject()))
		return WF_ERR_NOMEM;
	const cJSON *mt = wf_cfg_hp(c, "model_type");
	const struct wf_cfg_class *cl = cfg_class(cJSON_IsString(mt) ? mt->valuestring : "");
	for (const struct wf_dflt *d = cl ? cl->d : NULL; d && d->key; d++)
		if (!wf_cfg_hp(c, d->key) && !cJSON_AddNumberToObject(c->dflt, d->key, d->v))
			return WF_ERR_NOMEM;
	unsigned derive = cl ? cl->derive : 0;
	const cJSON *heads = wf_cfg_hp(c, "num_attention_heads"), *hidden = wf_cfg_hp(c, "hidden_size");
	const cJSON *kv = wf_cfg_hp(c, "num_key_value_heads");
	enum wf_err rc = WF_OK;
	if ((derive & (WF_DERIVE_KV_HEADS | WF_DERIVE_MLA)) && (!kv || cJSON_IsNull(kv)) && cJSON_IsNumber(heads))
		rc = set_dflt(c, "num_key_value_heads", heads->valuedouble);
	/* DeepseekV2Config / V3Config: head_dim = qk_rope_head_dim (moe-and-mla.md 1.4) */
	const cJSON *rope_dim = wf_cfg_hp(c, "qk_rope_head_dim"), *hd0 = wf_cfg_hp(c, "head_dim");
	if (rc == WF_OK && (derive & WF_DERIVE_MLA) && (!hd0 || cJSON_IsNull(hd0)) && cJSON_IsNumber(rope_dim))
		rc = set_dflt(c, "head_dim", rope_dim->valuedouble);
	uint32_t h, n;
	const cJSON *hd = wf_cfg_hp(c, "head_dim");
	if (rc == WF_OK && (derive & WF_DERIVE_HEAD_DIM) && (!hd || cJSON_IsNull(hd)) && wf_cfg_u32(heads, &h) && h &&
	    wf_cfg_u32(hidden, &n))
		rc = set_dflt(c, "head_dim", n / h);
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
static bool size_label(const struct wf_cfg *c, const struct wf_arch_in *in, const struct wf_arch_plan *pl,
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
static enum wf_err kv_general(struct wf_cfg *c, const struct wf_arch_in *in, const struct wf_arch_plan *pl,
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
		const cJSON *v = wf_cfg_not_null(cJSON_GetObjectItemCaseSensitive(g, samp[i][0]));
		if (i == 7 && !v)
			v = wf_cfg_not_null(cJSON_GetObjectItemCaseSensitive(g, "penalty_repeat"));
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
	const cJSON *np = wf_cfg_hp(c, "_name_or_path");
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
static const struct wf_arch *row_of(const char *key, int experts)
{
	const struct wf_arch *any = NULL;
	for (size_t i = 0; key && i < wf_arch_n_rows; i++) {
		const struct wf_arch *a = wf_arch_rows[i];
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

const struct wf_arch *wf_arch_row_of(const char *gguf_arch, bool experts)
{
	return row_of(gguf_arch, experts);
}

const char *wf_arch_pair_arch(const char *gguf_arch, const char *hf_arch)
{
	const struct wf_arch *h = hf_arch && *hf_arch ? by_canon(hf_arch) : NULL, *g = row_of(gguf_arch, 0);
	for (size_t k = 0; h && g && h != g && k < WF_ARRAY_LEN(g->hf) && g->hf[k]; k++)
		if (strcmp(g->hf[k], h->hf[0]) == 0)
			return hf_arch;
	return gguf_arch;
}

bool wf_gguf_expert_name(const char *hf_class, const char *g, unsigned long x, char *out, size_t outlen)
{
	const struct wf_arch *a = row_of(hf_class, -1);
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

bool wf_gguf_to_hf_name(const char *gguf_arch, const char *g, char *out, size_t outlen, char *qk, bool *norm)
{
	const struct wf_arch *a = NULL;
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
		to = layer_walk(a, part, (size_t)(end - part), true, qk);
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

static bool has_part(const struct wf_arch *a, const char *gguf_name)
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
static bool skipped(const struct wf_arch *a, const char *name)
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
	return t->q || wf_type_floats(t->type);
}

/* The heads of q (n_head) or k (n_head_kv, when it differs) for
 * LlamaModel.permute, checked against the rows. */
static enum wf_err qk_heads(struct wf_cfg *c, char qk, const struct wf_tensor *t, uint64_t *heads)
{
	uint32_t h = 0, hk = 0;
	if (!wf_cfg_u32(wf_cfg_find(c, KEYS("n_heads", "num_attention_heads"), NULL), &h) || !h)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_attention_heads: missing");
	const cJSON *kv = wf_cfg_find(c, KEYS("n_kv_heads", "num_key_value_heads"), NULL);
	if (kv && !wf_cfg_u32(kv, &hk))
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
	const struct wf_moe_form *f;
	const char *field;  /* config.json's count of experts: num_local_experts, num_experts, ... */
	uint32_t n_layer, n_exp;
	uint32_t n_main;    /* the layers before the MTP blocks (f->nextn): n_layer without them */
	uint32_t dense;     /* the leading layers with no experts (f->dense) */
	size_t mtp_other;   /* the MTP blocks' tensors other than experts */
	uint32_t *slot;  /* [n_layer][3][n_exp]: the source tensor, or UINT32_MAX; becomes plan->stacks
			  * (f->fused: made at the first per-expert tensor, NULL until then) */
	uint32_t *count; /* [n_layer]: slots filled */
	uint32_t *fused; /* f->fused: [n_layer][2] the layer's fused gate_up_proj and down_proj, or UINT32_MAX */
	size_t n_slots;  /* the slots slot holds once made */
	const struct wf_model *m;
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
static bool expert_name(const struct wf_moe_form *f, const char *s, unsigned long *layer, unsigned long *x, unsigned *k)
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

static enum wf_err moe_too_many(struct wf_cfg *c, const struct moe *e)
{
	return wf_fail(c->why, WF_ERR_UNSUP,
		       "config.json: num_hidden_layers x %s: %" PRIu32 " x %" PRIu32
		       " experts, more than the checkpoint's %zu tensors hold", e->field, e->n_layer, e->n_exp,
		       e->m->n_tensors);
}

/* The slots of the per-expert tensors, each an index into the model's
 * tensors: no more than the checkpoint has tensors. */
static enum wf_err moe_slots(struct wf_cfg *c, struct moe *e)
{
	if (e->n_slots > e->m->n_tensors)
		return moe_too_many(c, e);
	e->slot = malloc((e->n_slots ? e->n_slots : 1) * sizeof *e->slot);
	if (!e->slot)
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	memset(e->slot, 0xff, e->n_slots * sizeof *e->slot);
	return WF_OK;
}

/* The counts the experts are parked by, checked against the checkpoint: a
 * layer of E experts has 3 E tensors, so more than it holds is refused
 * before anything is allocated for them. */
static enum wf_err moe_init(struct wf_cfg *c, const struct wf_model *m, struct moe *e)
{
	uint32_t used = 0;
	const char *which = "num_local_experts";
	const char *const own[] = {e->f->count, NULL};
	/* a row's own count is the one it stacks by (GLM: hparams["n_routed_experts"]) */
	const cJSON *ve = e->f->count ? wf_cfg_find(c, own, &which) : wf_cfg_find(c, KEYS("num_local_experts", "num_experts",
									    "n_routed_experts"), &which);
	if (!ve)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: missing", e->f->count ? e->f->count : which);
	e->field = which;
	if (!wf_cfg_u32(ve, &e->n_exp) || e->n_exp < 1 || e->n_exp > UINT16_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not a count of experts from 1 to 65535", which);
	const cJSON *vu = wf_cfg_find(c, KEYS("num_experts_per_tok", "num_experts_per_token", "top_k_experts"), &which);
	if (!vu)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_experts_per_tok: missing");
	if (!wf_cfg_u32(vu, &used) || used < 1 || used > e->n_exp)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not from 1 to the %" PRIu32 " experts", which,
			       e->n_exp);
	if (!wf_cfg_u32(wf_cfg_find(c, KEYS("n_layers", "num_hidden_layers", "n_layer", "num_layers"), &which), &e->n_layer) ||
	    !e->n_layer)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: num_hidden_layers: missing or 0");
	/* Glm4MoeModel: block_count += hparams.get(nextn, 0), so null fails it */
	const cJSON *vn = e->f->nextn ? wf_cfg_hp(c, e->f->nextn) : NULL, *vd = e->f->dense ? wf_cfg_not_null(wf_cfg_hp(c, e->f->dense)) : NULL;
	e->n_main = e->n_layer;
	if (vn && (!wf_cfg_u32(vn, &c->extra_blocks) || c->extra_blocks > UINT16_MAX))
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: not a count of MTP blocks from 0 to 65535", e->f->nextn);
	e->n_layer += c->extra_blocks;
	if (vd && !wf_cfg_u32(vd, &e->dense))
		return wf_fail(c->why, WF_ERR_FORMAT, "config.json: %s: not an integer in [0, 2^32)", e->f->dense);
	/* the leading dense layers have no slots (DeepSeek-V3's 3 of 61 layers
	 * hold 3 x 3 x 256 fewer than its tensors); every layer has some
	 * tensor, so more layers than tensors is refused too */
	if (e->dense > e->n_main)
		e->dense = e->n_main;
	size_t n = (size_t)(e->n_layer - e->dense) * 3 * e->n_exp;
	e->n_slots = n;
	e->m = m;
	if (n / 3 / e->n_exp != e->n_layer - e->dense || e->n_layer > m->n_tensors || m->n_tensors >= UINT32_MAX)
		return moe_too_many(c, e);
	e->count = calloc(e->n_layer, sizeof *e->count);
	e->fused = e->f->fused ? malloc((size_t)e->n_layer * 2 * sizeof *e->fused) : NULL;
	if (!e->count || (e->f->fused && !e->fused))
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	if (e->fused)
		memset(e->fused, 0xff, (size_t)e->n_layer * 2 * sizeof *e->fused);
	/* the slots wait for a per-expert tensor: a fused checkpoint has a few tensors a layer
	 * (and one of a form the converter does not take is refused naming it) */
	return WF_OK;
}

/* Layer `layer`'s three stacked tensors, once all its experts are in. */
static enum wf_err moe_stack(struct wf_cfg *c, const struct wf_model *m, unsigned long layer, struct wf_arch_plan *pl,
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
		enum wf_err rc = wf_arch_add_tensor(pl, cap, g, st[0], 3, shape, false, pl->ftype, c->why);
		if (rc != WF_OK)
			return rc;
		pl->t[pl->n - 1].n_stack = (uint16_t)e->n_exp;
		pl->t[pl->n - 1].stack = st;
	}
	return WF_OK;
}

static enum wf_err moe_park(struct wf_cfg *c, const struct wf_model *m, size_t i, struct wf_arch_plan *pl, size_t cap)
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
	enum wf_err rc = e->slot ? WF_OK : moe_slots(c, e);
	if (rc != WF_OK)
		return rc;
	uint32_t *slot = &e->slot[((layer - e->dense) * 3 + k) * e->n_exp + x];
	if (*slot != UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: given twice", wf_quote(q, sizeof q, t->name, t->name_len));
	*slot = (uint32_t)i;
	return ++e->count[layer] == 3 * e->n_exp ? moe_stack(c, m, layer, pl, cap) : WF_OK;
}

/* Transformers 5's fused experts of a layer: "model.layers.L" MID
 * "gate_up_proj" or "down_proj", with or without ".weight" (MID the form's,
 * or ".mlp.experts.", where transformers 5 puts every family's experts).
 * *which: 0 gate_up_proj, 1 down_proj. */
static bool fused_name(const struct wf_moe_form *f, const char *s, unsigned long *layer, unsigned *which)
{
	static const char pre[] = "model.layers.";
	const char *mids[] = {".mlp.experts.", f->mid};
	if (strncmp(s, pre, sizeof pre - 1) != 0)
		return false;
	s += sizeof pre - 1;
	if (!num(&s, layer))
		return false;
	for (unsigned k = 0; k < 2; k++) {
		size_t ml = strlen(mids[k]);
		if (strncmp(s, mids[k], ml) != 0)
			continue;
		static const char *const proj[] = {"gate_up_proj", "down_proj"};
		for (*which = 0; *which < 2; ++*which) {
			size_t pl = strlen(proj[*which]);
			if (strncmp(s + ml, proj[*which], pl) == 0 && (!s[ml + pl] || strcmp(s + ml + pl, ".weight") == 0))
				return true;
		}
	}
	return false;
}

/* The GGUF part of the stacked projection proj ("gate_proj", ...). */
static const char *moe_part(const struct wf_moe_form *f, const char *proj)
{
	for (unsigned k = 0; k < 3; k++)
		if (strcmp(f->proj[k], proj) == 0)
			return f->gguf[k];
	return NULL;
}

/* One of a layer's fused expert tensors (Qwen2MoeModel.modify_tensors,
 * moe-and-mla.md 3): down_proj [E, H, F] as it is, at its place;
 * gate_up_proj [E, 2F, H] as the gate (each expert's first F rows) then
 * the up projection (the next F), read as row slices of it (WF_HS_ROWS,
 * its E experts the heads): nothing copied, and the bytes those of the
 * per-expert form stacked.  Forms the converter stacks only per expert
 * (it stalls on these: "Unprocessed experts") are refused, naming it. */
static enum wf_err moe_fused(const struct wf_arch *a, struct wf_cfg *c, const struct wf_model *m, size_t i,
			     unsigned long layer, unsigned which, struct wf_arch_plan *pl, size_t cap)
{
	struct moe *e = c->moe;
	const struct wf_tensor *t = &m->tensors[i];
	char q[96], g[64];
	wf_quote(q, sizeof q, t->name, t->name_len);
	if (!e->f->fused)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: transformers 5's fused experts, which llama.cpp's converter "
			       "does not convert for %s (only per expert: model.layers.L%sX.%s.weight)", q, a->gguf,
			       e->f->mid, e->f->proj[0]);
	if (layer >= e->n_layer || layer < e->dense)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: layer %lu, %s", q, layer,
			       layer >= e->n_layer ? "past config.json's num_hidden_layers" : "a dense layer");
	uint32_t *fu = &e->fused[2 * layer];
	if (fu[which] != UINT32_MAX)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: given twice (with and without .weight)", q);
	if (!convertible(t))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: dtype %s is not converted", q,
			       wf_type_get(t->type) ? wf_type_get(t->type)->name : "?");
	/* llama.cpp sizes every expert tensor by expert_count; the converter splits gate_up in halves */
	if (t->ndim != 3 || t->shape[0] != e->n_exp || (which == 0 && (t->shape[1] % 2 || t->shape[1] / 2 > UINT16_MAX)))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: not [%" PRIu32 " experts, %s] (config.json's %s)", q,
			       e->n_exp, which ? "hidden, F" : "2 F (F under 65536), hidden", e->field);
	const struct wf_tensor *o = fu[!which] != UINT32_MAX ? &m->tensors[fu[!which]] : NULL;
	const struct wf_tensor *gu = which ? o : t, *dn = which ? t : o;
	if (o && (gu->shape[1] != 2 * dn->shape[2] || gu->shape[2] != dn->shape[1]))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: [%" PRIu64 ", %" PRIu64 ", %" PRIu64 "] does not match its "
			       "layer's %s", q, t->shape[0], t->shape[1], t->shape[2], which ? "gate_up_proj" : "down_proj");
	fu[which] = (uint32_t)i;
	enum wf_err rc;
	if (which) {
		snprintf(g, sizeof g, "blk.%lu.%s.weight", layer, moe_part(e->f, "down_proj"));
		return wf_arch_add_tensor(pl, cap, g, (int64_t)i, 3, t->shape, false, pl->ftype, c->why);
	}
	uint64_t F = t->shape[1] / 2, shape[3] = {t->shape[0], F, t->shape[2]};
	for (unsigned k = 0; k < 2; k++) {
		snprintf(g, sizeof g, "blk.%lu.%s.weight", layer, moe_part(e->f, k ? "up_proj" : "gate_proj"));
		if ((rc = wf_arch_add_tensor(pl, cap, g, (int64_t)i, 3, shape, false, pl->ftype, c->why)) != WF_OK)
			return rc;
		struct wf_arch_tensor *p = &pl->t[pl->n - 1];
		p->hs.kind = WF_HS_ROWS;
		p->hs.off = k ? (uint32_t)F : 0;
		p->hs.n = (uint16_t)F;
	}
	return WF_OK;
}

/* Every layer's experts were stacked (each class's prepare_tensors:
 * "Unprocessed experts"; a layer with none could not run either), but
 * the leading dense layers', which must have none (llama.cpp would not
 * load them), and the MTP blocks' when the checkpoint has none of their
 * tensors (llama.cpp then loads the trunk alone). */
static enum wf_err moe_done(struct wf_cfg *c, struct wf_arch_plan *pl)
{
	const struct moe *e = c->moe;
	for (uint32_t l = 0; l < e->n_layer; l++) {
		const uint32_t *fu = e->fused ? &e->fused[2 * l] : NULL;
		bool any_fused = fu && (fu[0] != UINT32_MAX || fu[1] != UINT32_MAX);
		if (any_fused && (e->count[l] || fu[0] == UINT32_MAX || fu[1] == UINT32_MAX))
			return wf_fail(c->why, WF_ERR_UNSUP, "layer %" PRIu32 ": %s", l, e->count[l]
				       ? "transformers 5's fused experts and per-expert tensors both (the converter would "
					 "write ffn_*_exps twice)"
				       : fu[0] == UINT32_MAX ? "mlp.experts.down_proj without mlp.experts.gate_up_proj"
							     : "mlp.experts.gate_up_proj without mlp.experts.down_proj");
		if (any_fused)
			continue;
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
	pl->n_stacks = e->slot ? e->n_slots : 0;
	c->moe->slot = NULL;
	return WF_OK;
}

/* Whether DeepseekV2Model.modify_tensors drops tensor `name`: lm_head
 * when tie_word_embeddings, and the MTP layers (re.match
 * "model.layers.(\\d+)" at or past num_hidden_layers), before the experts
 * are parked. */
static bool mla_skipped(struct wf_cfg *c, const char *name)
{
	if (c->mla_tied < 0) {
		/* once, not for each of a DeepSeek-V3's 90,000 tensors */
		c->mla_tied = cJSON_IsTrue(wf_cfg_hp(c, "tie_word_embeddings"));
		if (!wf_cfg_u32(wf_cfg_hp(c, "num_hidden_layers"), &c->mla_layers))
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
static enum wf_err mla_split(struct wf_cfg *c, const struct wf_tensor *t, size_t i, const char *g,
			     struct wf_arch_plan *pl, size_t cap)
{
	uint32_t nkv = 0, nope = 0, vd = 0;
	char q[96], name[WF_GGUF_NAME_MAX + 8];
	enum wf_err rc = wf_cfg_need_u32(c, "num_key_value_heads", UINT32_MAX, &nkv);
	if (rc == WF_OK)
		rc = wf_cfg_need_u32(c, "qk_nope_head_dim", 65535, &nope);
	if (rc == WF_OK)
		rc = wf_cfg_need_u32(c, "v_head_dim", 65535, &vd);
	if (rc != WF_OK)
		return rc;
	if (t->ndim != 2 || !t->shape[1] || t->shape[0] != (uint64_t)nkv * (nope + vd))
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " rows, not config.json's num_key_value_heads "
			       "(%" PRIu32 ") x (qk_nope_head_dim + v_head_dim) (%" PRIu32 ")",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim ? t->shape[0] : 0, nkv, nope + vd);
	/* the converter writes both as they are; llama.cpp's latent is
	 * kv_lora_rank wide, so one that differs could not load */
	uint32_t kvr = 512;
	const cJSON *kvj = wf_cfg_not_null(wf_cfg_hp(c, "kv_lora_rank"));
	if ((kvj && !wf_cfg_u32(kvj, &kvr)) || t->shape[1] != kvr)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " columns, not config.json's kv_lora_rank (%s)",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->shape[1],
			       kvj && !wf_cfg_u32(kvj, &kvr) ? "not an integer" : kvj ? "as given" : "512 by default");
	const char *at = strstr(g, "attn_kv_b");
	const uint64_t kshape[3] = {nkv, t->shape[1], nope}, vshape[3] = {nkv, vd, t->shape[1]};
	for (int k = 0; k < 2 && rc == WF_OK; k++) {
		snprintf(name, sizeof name, "%.*s%s%s", (int)(at - g), g, k ? "attn_v_b" : "attn_k_b", at + 9);
		rc = wf_arch_add_tensor(pl, cap, name, (int64_t)i, 3, k ? vshape : kshape, false, pl->ftype, c->why);
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
static enum wf_err oss_count(struct wf_cfg *c, const struct wf_tensor *t)
{
	const char *which = "num_local_experts";
	uint32_t n;
	char q[96];
	const cJSON *v = wf_cfg_find(c, KEYS("num_local_experts", "num_experts", "n_routed_experts"), &which);
	if (!wf_cfg_u32(v, &n) || n == 0)
		return wf_fail(c->why, WF_ERR_UNSUP, "config.json: %s: %s", which, v ? "not a count of experts" : "missing");
	if (!t->ndim || t->shape[0] != n)
		return wf_fail(c->why, WF_ERR_UNSUP, "tensor %s: %" PRIu64 " experts, config.json's %s says %" PRIu32,
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim ? t->shape[0] : 0, which, n);
	return WF_OK;
}

/* Adds blk.L.PART (one of gpt-oss's expert tensors) of numpy shape
 * [d0, d1, d2] (or [d1, d2] for 2 dims) read from tensor i through gather. */
static enum wf_err oss_add(struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap, unsigned long layer, const char *part,
			   size_t i, uint32_t ndim, const uint64_t *shape, bool f32, enum wf_gather gather)
{
	char g[96];
	snprintf(g, sizeof g, "blk.%lu.%s", layer, part);
	enum wf_err rc = wf_arch_add_tensor(pl, cap, g, (int64_t)i, ndim, shape, f32, pl->ftype, c->why);
	if (rc == WF_OK)
		pl->t[pl->n - 1].gather = (uint8_t)gather;
	return rc;
}

/* The MXFP4 experts, first in the file (GptOssModel.generate_extra_tensors
 * writes them before the main loop, in the converter's order of the
 * checkpoint's tensors): per layer down, then gate and up, the stored
 * blocks re-laid as ggml MXFP4 on read (WF_GATHER_MX_*). */
static enum wf_err oss_mxfp4(struct wf_cfg *c, const struct wf_model *m, const struct ord *o, size_t n,
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
static enum wf_err oss_tensor(struct wf_cfg *c, const struct wf_model *m, size_t i, const char *x, unsigned long layer,
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

/* Checkpoint tensor i as GGUF tensor g, in its shape but for the rows of
 * token_embd the row cuts it to (a prefix of the source). */
static enum wf_err add_mapped(const struct wf_arch *a, struct wf_cfg *c, const struct wf_tensor *t, size_t i, const char *g,
			      bool f32, struct wf_arch_plan *pl, size_t cap)
{
	uint64_t shape[WF_MAX_DIMS] = {1};
	if (t->ndim)
		memcpy(shape, t->shape, t->ndim * sizeof *shape);
	if (a->embd_rows && strcmp(g, "token_embd.weight") == 0 && t->ndim == 2) {
		enum wf_err rc = a->embd_rows(a, c, t->shape[0], &shape[0]);
		if (rc != WF_OK)
			return rc;
	}
	enum wf_err rc = wf_arch_add_tensor(pl, cap, g, (int64_t)i, t->ndim ? t->ndim : 1, shape, f32, pl->ftype, c->why);
	if (rc == WF_OK)
		pl->t[pl->n - 1].prefix = t->ndim && shape[0] < t->shape[0];
	return rc;
}

/* One checkpoint tensor: skipped, or named and added with its transform. */
static enum wf_err map_tensor(const struct wf_arch *a, struct wf_cfg *c, const struct wf_model *m, size_t i,
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
	if (skipped(a, name) || (a->mla && mla_skipped(c, name)))
		return WF_OK;
	unsigned long layer, x;
	unsigned k;
	if (c->moe && expert_name(c->moe->f, name, &layer, &x, &k))
		return moe_park(c, m, i, pl, cap);
	if (c->moe && fused_name(c->moe->f, name, &layer, &k))
		return moe_fused(a, c, m, i, layer, k, pl, cap);
	const char *ox = a->packed_experts ? oss_expert(name, &layer) : NULL;
	if (ox)
		return oss_tensor(c, m, i, ox, layer, pl, cap);
	/* GptOssModel.filter_tensors: "sinks" gets a ".weight" (DeepSeek's and
	 * GLM's e_score_correction_bias is read as a .bias by the name map) */
	char renamed[WF_GGUF_NAME_MAX + 16];
	size_t nl = strlen(name); /* the wrappers' renamed, or as stored */
	if (a->packed_experts && nl >= 6 && strcmp(name + nl - 6, ".sinks") == 0 && nl + 8 <= sizeof renamed) {
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
	if (a->mla && strstr(g, ".attn_kv_b.weight") && strcmp(strstr(g, ".attn_kv_b.weight"), ".attn_kv_b.weight") == 0)
		return mla_split(c, t, i, g, pl, cap);
	/* the routers too (moe-and-mla.md 1.3) */
	bool f32 = t->ndim <= 1 || (gl >= 12 && strcmp(g + gl - 12, "_norm.weight") == 0) ||
		   gl < 7 || strcmp(g + gl - 7, ".weight") != 0 || strstr(g, ".ffn_gate_inp.") ||
		   strstr(g, ".ffn_gate_inp_shexp.");
	enum wf_err rc = add_mapped(a, c, t, i, g, f32, pl, cap);
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

/* The row of config.json's architectures[0].  A multimodal release whose
 * text model is converted (a row's `wrapper`): its vision tower and
 * projector are left out and "language_model." taken out of the names,
 * as TextModel.filter_tensors does for every class; weightfs does it for
 * these only, refusing such tensors in a text model's checkpoint as
 * before. */
static const struct wf_arch *find_arch(struct wf_cfg *c, char *why)
{
	const cJSON *as = wf_cfg_hp(c, "architectures");
	const cJSON *a0 = cJSON_IsArray(as) ? cJSON_GetArrayItem(as, 0) : NULL;
	char q[96];
	if (!cJSON_IsString(a0))
		return wf_fail(why, WF_ERR_UNSUP, "config.json: architectures: missing"), NULL;
	for (size_t i = 0; i < wf_arch_n_rows; i++)
		for (size_t k = 0; k < WF_ARRAY_LEN(wf_arch_rows[i]->hf) && wf_arch_rows[i]->hf[k]; k++)
			if (strcmp(wf_arch_rows[i]->hf[k], a0->valuestring) == 0) {
				c->wrapper = wf_arch_rows[i]->wrapper && strcmp(wf_arch_rows[i]->wrapper, a0->valuestring) == 0;
				return wf_arch_rows[i];
			}
	wf_fail(why, WF_ERR_UNSUP, "config.json: architectures: %s is not an architecture model.gguf is made for",
		wf_quote(q, sizeof q, a0->valuestring, strlen(a0->valuestring)));
	return NULL;
}

static enum wf_err open_cfg(struct wf_cfg *c, const struct wf_arch_in *in)
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
static enum wf_err kv_heads_ok(struct wf_cfg *c)
{
	static const char *const keys[] = {"num_key_value_heads", "n_kv_heads", "n_head_kv"};
	for (size_t i = 0; i < WF_ARRAY_LEN(keys); i++) {
		const cJSON *v = wf_cfg_hp(c, keys[i]);
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
static enum wf_err names_once(struct wf_cfg *c, const struct wf_arch_plan *pl)
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

static enum wf_err plan_tensors(const struct wf_arch *a, struct wf_cfg *c, const struct wf_model *m,
				struct wf_arch_plan *pl, uint32_t ftype)
{
	/* a source tensor makes at most two (DeepSeek's kv_b_proj, gpt-oss's gate_up and its bias,
	 * transformers 5's fused gate_up_proj),
	 * plus the generated ones */
	size_t cap = (a->packed_experts || a->mla || (a->experts && a->experts->fused) ? 2 * m->n_tensors : m->n_tensors) + 4;
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
		rc = a->gen ? a->gen(a, c, pl, cap) : WF_OK; /* first in the file (B:908) */
	if (rc == WF_OK && a->packed_experts)
		rc = oss_mxfp4(c, m, o, m->n_tensors, pl, cap);
	for (size_t k = 0; k < m->n_tensors && rc == WF_OK; k++)
		rc = map_tensor(a, c, m, o[k].i, pl, cap);
	if (rc == WF_OK && c->moe)
		rc = moe_done(c, pl);
	if (rc == WF_OK && c->renamed)
		rc = names_once(c, pl);
	free(moe.slot);
	free(moe.count);
	free(moe.fused);
	c->moe = NULL;
	free(o);
	return rc;
}

enum wf_err wf_arch_plan(const struct wf_model *m, const struct wf_arch_in *in, uint32_t ftype,
			 struct wf_gguf_w *w, struct wf_arch_plan *plan, char *why)
{
	struct wf_cfg c = {.why = why, .root = NULL, .mla_tied = -1};
	memset(plan, 0, sizeof *plan);
	plan->vocab_size = -1;
	const struct wf_arch *a = NULL;
	enum wf_err rc = m->format != WF_FMT_SAFETENSORS ? wf_fail(why, WF_ERR_UNSUP, "not a Hugging Face checkpoint")
							  : open_cfg(&c, in);
	bool no_arch = false;
	if (rc == WF_OK && !(a = find_arch(&c, why)))
		rc = WF_ERR_UNSUP, no_arch = true;
	if (rc == WF_OK) {
		plan->arch = a->gguf;
		c.experts = a->experts != NULL || a->packed_experts;
		plan->tok = a->tok;
		uint32_t vs;
		if (wf_cfg_u32(wf_cfg_hp(&c, "vocab_size"), &vs))
			plan->vocab_size = vs;
		c.tok = in->tok, c.route = a->tok, c.vocab_size = plan->vocab_size;
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

