/* wf_gguf_file.c - model.gguf made on read (wf_gguf_file.h). */
#include "view/wf_gguf_file.h"
#include "model/wf_gguf.h"
#include "model/wf_gguf_w.h"
#include "model/wf_vocab.h"
#include "view/wf_view.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct wf_sidecar *sidecar(const struct wf_model *m, const char *name)
{
	for (size_t i = 0; i < m->n_sidecars; i++)
		if (strcmp(m->sidecars[i].name, name) == 0)
			return &m->sidecars[i];
	return NULL;
}

#define SIDE(m, name, p, n)                                                  \
	do {                                                                 \
		const struct wf_sidecar *s_ = sidecar(m, name);              \
		(p) = s_ ? (const void *)s_->data : NULL;                    \
		(n) = s_ ? (size_t)s_->len : 0;                              \
	} while (0)

static void vocab_files(const struct wf_model *m, struct wf_vocab_files *f)
{
	memset(f, 0, sizeof *f);
	SIDE(m, "tokenizer.json", f->tokenizer_json, f->tokenizer_json_len);
	SIDE(m, "tokenizer_config.json", f->tokenizer_config_json, f->tokenizer_config_json_len);
	SIDE(m, "tokenizer.model", f->tokenizer_model, f->tokenizer_model_len);
	SIDE(m, "config.json", f->config_json, f->config_json_len);
	SIDE(m, "added_tokens.json", f->added_tokens_json, f->added_tokens_json_len);
	SIDE(m, "special_tokens_map.json", f->special_tokens_map_json, f->special_tokens_map_json_len);
	SIDE(m, "merges.txt", f->merges_txt, f->merges_txt_len);
	SIDE(m, "chat_template.jinja", f->chat_template_jinja, f->chat_template_jinja_len);
	SIDE(m, "chat_template.json", f->chat_template_json, f->chat_template_json_len);
	f->has_tekken_json = sidecar(m, "tekken.json") != NULL;
}

/* A file the converter reads that the folder loader left out (unreadable,
 * or too big to hold): model.gguf made without it would be made from
 * other files than the converter's, so it is left out too, with the
 * loader's line ("NAME: why"). */
static enum wf_err read_files_held(const struct wf_model *m, char *why)
{
	static const char *const read[] = {"config.json", "generation_config.json", "tokenizer.json",
					   "tokenizer_config.json", "tokenizer.model", "added_tokens.json",
					   "special_tokens_map.json", "merges.txt", "chat_template.jinja",
					   "chat_template.json", "tekken.json"};
	for (const char *p = m->left_out; p && *p;) {
		const char *nl = strchr(p, '\n');
		size_t n = nl ? (size_t)(nl - p) : strlen(p);
		for (size_t i = 0; i < sizeof read / sizeof read[0]; i++) {
			size_t k = strlen(read[i]);
			if (n > k + 2 && memcmp(p, read[i], k) == 0 && p[k] == ':' && p[k + 1] == ' ')
				return wf_fail(why, WF_ERR_UNSUP, "%.*s", (int)(n < 400 ? n : 400), p);
		}
		p += n + (nl != NULL);
	}
	return WF_OK;
}

/* The model's folder name, for general.name: the last directory of the
 * first part's path. */
static char *folder_name(const struct wf_model *m)
{
	const char *p = m->n_parts ? m->parts[0].path : NULL;
	const char *e = p ? strrchr(p, '/') : NULL;
	if (!e)
		return NULL;
	const char *s = e;
	while (s > p && s[-1] != '/')
		s--;
	return s < e ? strndup(s, (size_t)(e - s)) : NULL;
}

static enum wf_vk out_vk(uint32_t type)
{
	return type == WF_T_F16 ? WF_VK_F16 : type == WF_T_BF16 ? WF_VK_BF16 : WF_VK_F32;
}

/* How planned tensor p, or one slab of it (nbytes of its data), is read
 * from source tensor src. */
static enum wf_err set_xf(const struct wf_model *m, const struct wf_gguf_file *g, const struct wf_arch_tensor *p,
			  const struct wf_tensor *src, uint64_t nbytes, struct wf_xform *xf, char *why)
{
	/* the view is set on a copy here to check its size, and again on
	 * each read (wf_xform.vk): no copy of the tensor is kept */
	struct wf_tensor view = *src;
	enum wf_vk vk = p->vk ? (enum wf_vk)p->vk : out_vk(p->type);
	enum wf_err rc = wf_tensor_set_view(&view, vk, why);
	if (rc != WF_OK)
		return rc;
	uint32_t heads = 0;
	const struct wf_tensor *t2 = NULL;
	bool pair = p->gather == WF_GATHER_T_PAIR || p->gather == WF_GATHER_PAIR;
	if (pair) {
		/* gpt-oss's gate_up_proj (hf/): gate (src) and up, alike, both in this view */
		struct wf_tensor v2;
		if (p->n_stack || p->sliced || p->src2 >= m->n_tensors)
			return wf_fail(why, WF_ERR_RANGE, "tensor %s: no second source", p->name);
		v2 = m->tensors[p->src2];
		if ((rc = wf_tensor_set_view(&v2, vk, why)) != WF_OK)
			return rc;
		if (v2.size != view.size || v2.ndim != src->ndim ||
		    memcmp(v2.shape, src->shape, src->ndim * sizeof *src->shape) != 0)
			return wf_fail(why, WF_ERR_RANGE, "tensor %s: its two sources differ in shape", p->name);
		view.size += v2.size;
	} else if (!p->n_stack && !p->sliced && p->hs.kind == WF_HS_KVB) {
		/* kv_b_proj of k_b (src) and v_b: both in this view */
		struct wf_tensor v2;
		if (p->hs.off >= m->n_tensors)
			return wf_fail(why, WF_ERR_RANGE, "tensor %s: no attn_v_b", p->name);
		t2 = &m->tensors[p->hs.off];
		v2 = *t2;
		if ((rc = wf_tensor_set_view(&v2, vk, why)) != WF_OK)
			return rc;
		view.size += v2.size;
	} else if (p->prefix) {
		/* the first rows of the source, as they are */
		uint64_t rows = src->ndim ? src->shape[0] : 0, keep = p->ndim ? p->ne[p->ndim - 1] : 0;
		if (p->n_stack || p->sliced || p->gather || p->hs.kind || !rows || view.size % rows || keep > rows)
			return wf_fail(why, WF_ERR_RANGE, "tensor %s: its rows out of the source's", p->name);
		view.size = view.size / rows * keep;
	} else if (!p->n_stack && !p->sliced && p->hs.kind) {
		/* a slice of each head: n of the d rows of each of ne[2] heads */
		/* a 2-D source's rows, or a 3-D one's of its last axis (transformers 5's fused experts) */
		uint64_t rows = (src->ndim == 2 || src->ndim == 3) && src->shape[src->ndim - 1]
				? src->nelems / src->shape[src->ndim - 1] : 0, whole = view.size;
		heads = p->ndim == 3 && p->ne[2] <= UINT32_MAX ? (uint32_t)p->ne[2] : 0;
		if (!heads || !rows || rows % heads || p->hs.off + p->hs.n > rows / heads || !p->hs.n)
			return wf_fail(why, WF_ERR_RANGE, "tensor %s: rows of its heads out of the source's", p->name);
		view.size = whole / (rows / heads) * p->hs.n;
	}
	/* a gathered tensor makes all of its source's elements, or half (gate or up); MXFP4 ones as
	 * 17 bytes per 32 of the source's float32 elements */
	bool mx = p->gather >= WF_GATHER_MX_ALL && p->gather <= WF_GATHER_MX_ODD;
	unsigned parts = p->gather == WF_GATHER_NONE || p->gather == WF_GATHER_MX_ALL || p->gather == WF_GATHER_T_ALL ||
				 pair ? 1 : 2;
	uint64_t made = mx ? view.size / 128 * 17 / parts : view.size / parts;
	if (!p->quant && made != nbytes)
		return wf_fail(why, WF_ERR_RANGE, "tensor %s: %" PRIu64 " bytes planned, %" PRIu64 " made", p->name, nbytes,
			       made);
	*xf = (struct wf_xform){.t = src, .vk = (uint8_t)vk, .perm_heads = p->perm_heads, .perm_to_hf = p->perm_to_hf,
				.add = p->add};
	if (heads)
		xf->hs = p->hs.kind, xf->hs_heads = heads, xf->hs_off = p->hs.off, xf->hs_n = p->hs.n;
	if (t2)
		xf->hs = WF_HS_KVB, xf->t2 = t2;
	if (pair)
		xf->t2 = &m->tensors[p->src2];
	xf->quant = p->quant ? (uint8_t)p->type : 0;
	xf->gather = p->gather;
	xf->validate = p->validate;
	xf->quiet_bf16 = !g->plan.generic && !g->plan.from_gguf && p->type == WF_T_BF16 && src->type == WF_T_BF16 &&
			 !src->q;
	return WF_OK;
}

/* A stacked tensor's slabs: one xform each, at its stack's place. */
static enum wf_err set_slabs(const struct wf_model *m, struct wf_gguf_file *g, const struct wf_arch_tensor *p,
			     char *why)
{
	size_t base = (size_t)(p->stack - g->plan.stacks);
	if (p->nbytes % p->n_stack)
		return wf_fail(why, WF_ERR_RANGE, "tensor %s: %" PRIu64 " bytes in %u slabs", p->name, p->nbytes,
			       (unsigned)p->n_stack);
	enum wf_err rc = WF_OK;
	for (uint32_t k = 0; k < p->n_stack && rc == WF_OK; k++)
		rc = set_xf(m, g, p, &m->tensors[p->stack[k]], p->nbytes / p->n_stack, &g->xs[base + k], why);
	return rc;
}

enum wf_err wf_made_lay_out(const struct wf_model *m, struct wf_gguf_file *g, unsigned align, char *why)
{
	size_t n = g->plan.n;
	g->xf = calloc(n ? n : 1, sizeof *g->xf);
	g->start = calloc(n + 1, sizeof *g->start);
	g->xs = g->plan.n_stacks ? calloc(g->plan.n_stacks, sizeof *g->xs) : NULL;
	if (!g->xf || !g->start || (g->plan.n_stacks && !g->xs))
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	uint64_t at = g->header_len;
	for (size_t i = 0; i < n; i++) {
		const struct wf_arch_tensor *p = &g->plan.t[i];
		g->start[i] = at;
		if (!wf_add_ok(at, p->nbytes + (align - p->nbytes % align) % align, &at))
			return wf_fail(why, WF_ERR_UNSUP, "model.gguf would pass 2^64 bytes");
		uint64_t whole;
		enum wf_err rc = p->src < 0 ? WF_OK
			       : p->sliced ? (wf_mul_ok(p->nbytes, p->n_stack, &whole)
						 ? set_xf(m, g, p, &m->tensors[p->src], whole, &g->xf[i], why)
						 : wf_fail(why, WF_ERR_RANGE, "tensor %s: too many bytes", p->name))
			       : p->n_stack ? set_slabs(m, g, p, why)
					    : set_xf(m, g, p, &m->tensors[p->src], p->nbytes, &g->xf[i], why);
		if (rc != WF_OK)
			return rc;
	}
	g->start[n] = g->size = at;
	return WF_OK;
}

/* llama-quantize's types over the F32 plan, with the hyperparameters its
 * rules read taken from the key/values written so far (general.* and the
 * architecture's, before the tokenizer's). */
static enum wf_err quantize_plan(const struct wf_gguf_w *w, uint32_t ftype, struct wf_gguf_file *g, char *why)
{
	struct wf_buf b = {0};
	static const uint8_t head[24] = {'G', 'G', 'U', 'F', 3};
	wf_buf_put(&b, head, sizeof head);
	uint64_t n = w->n_kv;
	for (int i = 0; i < 8 && b.data; i++)
		b.data[16 + i] = (char)(n >> (8 * i));
	wf_buf_put(&b, w->kv.data, w->kv.len);
	if (b.oom) {
		wf_buf_free(&b);
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	}
	struct wf_quant_hp hp;
	struct wf_model *hm = NULL;
	enum wf_err rc = wf_gguf_parse(&hm, (const uint8_t *)b.data, b.len, why);
	if (rc == WF_OK) {
		struct wf_gguf_vals v = wf_gguf_vals_of(hm);
		rc = wf_quant_hp_read(&v, &hp, why);
	}
	wf_model_free(hm);
	wf_buf_free(&b);
	return rc == WF_OK ? wf_arch_quantize(&g->plan, ftype, &hp, why) : rc;
}

/* The header: the plan's key/values, the tokenizer's, the tensor infos. */
static enum wf_err make_header(const struct wf_model *m, uint32_t ftype, struct wf_gguf_file *g, char *why)
{
	struct wf_gguf_w w;
	wf_gguf_w_init(&w);
	if (m->format == WF_FMT_GGUF) {
		/* a GGUF retyped: its own key/values, tokenizer included */
		enum wf_err rc = wf_arch_plan_gguf(m, ftype, &w, &g->plan, why);
		if (rc == WF_OK) {
			wf_arch_plan_infos(&g->plan, &w);
			rc = wf_gguf_w_finish(&w, &g->header, &g->header_len, why);
		}
		wf_gguf_w_free(&w);
		return rc;
	}
	enum wf_err held = read_files_held(m, why);
	if (held != WF_OK) {
		wf_gguf_w_free(&w);
		return held;
	}
	struct wf_vocab_files f;
	vocab_files(m, &f);
	struct wf_arch_in in = {.name = folder_name(m), .tok = &f};
	SIDE(m, "config.json", in.config, in.config_len);
	SIDE(m, "generation_config.json", in.gen_config, in.gen_config_len);
	SIDE(m, "README.md", in.readme, in.readme_len);
	/* a quantized file type: the F32 GGUF llama-quantize would read, whose
	 * general.quantization_version and file_type it moves to the end */
	static const char *const deferred[] = {"general.quantization_version", "general.file_type", NULL};
	bool q = wf_ftype_quantized(ftype);
	if (q)
		w.drop = deferred;
	enum wf_err rc = wf_arch_plan(m, &in, q ? WF_FTYPE_ALL_F32 : ftype, &w, &g->plan, why);
	if (rc == WF_OK && q)
		rc = quantize_plan(&w, ftype, g, why);
	if (rc != WF_OK && g->plan.generic && q) {
		char no_arch[WF_ERRLEN];
		snprintf(no_arch, sizeof no_arch, "%s", why);
		rc = wf_fail(why, WF_ERR_UNSUP, "-o gguf=%s: llama-quantize runs only on an architecture llama.cpp "
						 "has (%s)", wf_ftype_name(ftype), no_arch);
	} else if (rc != WF_OK && g->plan.generic) {
		/* no architecture to follow: every tensor as stored, and the
		 * tokenizer only if it maps (tried on a writer of its own first) */
		char no_arch[WF_ERRLEN];
		snprintf(no_arch, sizeof no_arch, "%s", why);
		wf_gguf_w_free(&w);
		wf_gguf_w_init(&w);
		rc = wf_arch_plan_any(m, &in, &w, &g->plan, why);
		struct wf_gguf_w tw;
		wf_gguf_w_init(&tw);
		char tok_why[WF_ERRLEN];
		bool tok = rc == WF_OK && wf_vocab_write(&f, g->plan.tok, -1, &tw, tok_why) == WF_OK;
		wf_gguf_w_free(&tw);
		if (tok)
			rc = wf_vocab_write(&f, g->plan.tok, -1, &w, why);
		if (rc == WF_OK)
			snprintf(g->plan.why_generic, sizeof g->plan.why_generic, "%s", no_arch);
	} else if (rc == WF_OK) {
		rc = wf_vocab_write(&f, g->plan.tok, g->plan.vocab_size, &w, why);
	}
	if (rc == WF_OK && q) {
		w.drop = NULL;
		wf_gguf_w_u32(&w, "general.quantization_version", 2);
		wf_gguf_w_u32(&w, "general.file_type", ftype & ~WF_FTYPE_PURE);
	}
	free((char *)in.name);
	if (rc == WF_OK) {
		wf_arch_plan_infos(&g->plan, &w);
		rc = wf_gguf_w_finish(&w, &g->header, &g->header_len, why);
	}
	wf_gguf_w_free(&w);
	return rc;
}

enum wf_err wf_gguf_file_new(const struct wf_model *m, uint32_t ftype, struct wf_gguf_file **out, char *why)
{
	*out = NULL;
	struct wf_gguf_file *g = calloc(1, sizeof *g);
	if (!g)
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	enum wf_err rc = make_header(m, ftype, g, why);
	if (rc == WF_OK)
		rc = wf_made_lay_out(m, g, WF_GGUF_ALIGN, why);
	if (rc != WF_OK) {
		wf_gguf_file_free(g);
		return rc;
	}
	*out = g;
	return WF_OK;
}

void wf_gguf_file_free(struct wf_gguf_file *g)
{
	if (!g)
		return;
	free(g->header);
	wf_arch_plan_free(&g->plan);
	free(g->xf);
	free(g->xs);
	free(g->start);
	free(g);
}

/* Zeros between tensors: at most WF_GGUF_ALIGN - 1 bytes. */
static const char zeros[WF_GGUF_ALIGN];

void wf_gguf_file_seg(const struct wf_gguf_file *g, uint64_t off, struct wf_seg *seg)
{
	memset(seg, 0, sizeof *seg);
	seg->kind = WF_SEG_NONE;
	if (off >= g->size)
		return;
	if (off < g->header_len) {
		seg->kind = WF_SEG_BYTES;
		seg->len = g->header_len;
		seg->bytes = g->header;
		return;
	}
	if (!g->plan.n)
		return;
	/* the last tensor starting at or before off */
	size_t lo = 0, hi = g->plan.n;
	while (hi - lo > 1) {
		size_t mid = lo + (hi - lo) / 2;
		if (g->start[mid] <= off)
			lo = mid;
		else
			hi = mid;
	}
	const struct wf_arch_tensor *p = &g->plan.t[lo];
	uint64_t s = g->start[lo];
	if (off >= s + p->nbytes) {
		seg->kind = WF_SEG_BYTES;
		seg->start = s + p->nbytes;
		seg->len = g->start[lo + 1] - seg->start;
		seg->bytes = zeros;
		return;
	}
	seg->start = s;
	seg->len = p->nbytes;
	if (p->src < 0) {
		seg->kind = WF_SEG_BYTES;
		seg->bytes = (const char *)p->gen;
		return;
	}
	seg->kind = WF_SEG_VIEW;
	seg->tensor = (uint32_t)p->src;
	seg->xf = &g->xf[lo];
	if (p->sliced) {
		seg->from = p->slab * p->nbytes; /* the slab's place in the whole source's view */
	} else if (p->n_stack) {
		/* the slab holding off */
		uint64_t slab = p->nbytes / p->n_stack, k = (off - s) / slab;
		seg->start = s + k * slab;
		seg->len = slab;
		seg->tensor = p->stack[k];
		seg->xf = &g->xs[(size_t)(p->stack - g->plan.stacks) + k];
	}
}
