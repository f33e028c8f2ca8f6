/* wf_arch_gguf.c - model.gguf of a GGUF model, retyped (-o gguf=TYPE,
 * wf_arch.h's wf_arch_plan_gguf): the file llama.cpp's llama-quantize
 * writes for --allow-requantize with that type, from llama-quant.cpp
 * (llama_model_quantize_impl) at the version of the npm package the tests
 * load (../shared/docs/gguf-to-hf-and-quantizers.md, B.8):
 *
 *   - key/values: the source's, in order, less general.quantization_version,
 *     general.file_type and split.*; then general.quantization_version = 2
 *     and general.file_type = the type (gguf_set_val_u32 removes a key and
 *     appends it again);
 *   - tensors: in the loader's weights_map order (weight_name_comparer:
 *     names without a blk.N. prefix first, then by layer N, then by name);
 *   - each tensor tensor_allows_quantization accepts becomes the type
 *     (decoded to float32, then ggml_quantize_chunk's F16 / BF16 rounding);
 *     the rest, and those already of the type, keep their stored bytes.
 *
 * One difference: ggml aligns the data to the source's general.alignment;
 * model.gguf always uses GGUF's default 32 and drops that key. */
#include "arch/wf_arch.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether llama-quantize would give tensor t (a GGUF tensor) the file's type. */
static bool allows_retype(const struct wf_tensor *t)
{
	uint64_t ne[4] = {1, 1, 1, 1};
	if (t->ndim > 4)
		return false;
	wf_shape_reverse(ne, t->shape, t->ndim);
	return wf_arch_quantizes(t->name, ne, t->ndim ? t->ndim : 1);
}

struct ord {
	size_t i;
	const struct wf_tensor *t;
};

static int cmp_ord(const void *a, const void *b)
{
	const struct ord *x = a, *y = b;
	return wf_arch_loader_cmp(x->t->name, x->t->name_len, y->t->name, y->t->name_len);
}

struct kv_copy {
	struct wf_gguf_w *w;
	char *why;
};

static enum wf_err copy_kv(struct kv_copy *c, const struct wf_gguf_vals *v, int64_t id)
{
	char q[96];
	uint64_t key_len, n;
	const uint8_t *key = wf_gguf_key(v, id, &key_len), *val = wf_gguf_raw(v, id, &n);
	if (!key || !val)
		return wf_fail(c->why, WF_ERR_CHANGED, "metadata key %" PRId64 ": no longer in the file", id);
	if (memchr(key, 0, (size_t)key_len))
		return wf_fail(c->why, WF_ERR_UNSUP, "metadata key %s: holds a NUL byte",
			       wf_quote(q, sizeof q, key, (size_t)key_len));
	char *k = strndup((const char *)key, (size_t)key_len);
	if (!k)
		return wf_fail(c->why, WF_ERR_NOMEM, "out of memory");
	static const char *const drop[] = {"general.quantization_version", "general.file_type", "general.alignment",
					   "split.no", "split.count", "split.tensors.count"};
	bool skip = false;
	for (size_t i = 0; i < WF_ARRAY_LEN(drop); i++)
		skip |= strcmp(k, drop[i]) == 0;
	if (!skip)
		wf_gguf_w_raw(c->w, k, (enum wf_gtype)wf_gguf_at(v, id)->type, val, (size_t)n);
	free(k);
	return c->w->rc == WF_OK ? WF_OK : wf_fail(c->why, c->w->rc, "%s", c->w->err);
}

/* Tensor t of the plan: the file's type, or its own bytes. */
static enum wf_err retype_tensor(const struct wf_tensor *t, size_t src, uint32_t ftype, struct wf_arch_tensor *o,
				 char *why)
{
	char q[96];
	memset(o, 0, sizeof *o);
	if (t->name_len >= WF_GGUF_NAME_MAX || strlen(t->name) != t->name_len || t->ndim > 4)
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: not a name or shape ggml loads",
			       wf_quote(q, sizeof q, t->name, t->name_len));
	uint32_t want = ftype == WF_FTYPE_ALL_F32 ? WF_T_F32 : ftype == WF_FTYPE_MOSTLY_BF16 ? WF_T_BF16 : WF_T_F16;
	const struct wf_type *ty = wf_type_get(t->type);
	/* WF_FTYPE_AUTO here: every tensor as stored (a quantized file type decides after) */
	bool retype = ftype != WF_FTYPE_AUTO && allows_retype(t) && (uint32_t)t->type != want;
	bool floats = wf_type_floats(t->type);
	if (retype && !floats)
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: its type %s has no float32 decoding to make %s from",
			       wf_quote(q, sizeof q, t->name, t->name_len), ty && ty->name ? ty->name : "?",
			       wf_type_get((int)want)->name);
	o->name = t->name; /* the same name: the model outlives the plan */
	o->src = (int64_t)src;
	o->ndim = t->ndim ? t->ndim : 1;
	o->ne[0] = 1;
	wf_shape_reverse(o->ne, t->shape, t->ndim);
	o->type = retype ? want : (uint32_t)t->type;
	o->vk = retype ? 0 : WF_VK_RAW;
	o->validate = retype;
	if (!retype)
		o->nbytes = t->nbytes;
	else if (!wf_mul_ok(t->nelems, wf_type_get((int)want)->bytes, &o->nbytes))
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many bytes", wf_quote(q, sizeof q, t->name, t->name_len));
	return WF_OK;
}

/* A quantized file type: every tensor as stored first, then
 * llama-quantize's choices (wf_arch_quantize); those it changes must
 * decode to float32. */
static enum wf_err plan_quantized(const struct wf_model *m, uint32_t ftype, struct wf_arch_plan *plan, char *why)
{
	struct wf_quant_hp hp;
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	enum wf_err rc = wf_quant_hp_read(&v, &hp, why);
	for (size_t i = 0; rc == WF_OK && i < m->n_tensors; i++)
		if ((rc = retype_tensor(&m->tensors[i], i, WF_FTYPE_AUTO, &plan->t[i], why)) == WF_OK)
			plan->n++;
	if (rc == WF_OK)
		rc = wf_arch_quantize(plan, ftype, &hp, why);
	for (size_t i = 0; rc == WF_OK && i < plan->n; i++) {
		const struct wf_arch_tensor *p = &plan->t[i];
		const struct wf_tensor *t = &m->tensors[p->src];
		const struct wf_type *ty = wf_type_get(t->type);
		bool floats = wf_type_floats(t->type);
		if (p->vk != WF_VK_RAW && !floats)
			rc = wf_fail(why, WF_ERR_UNSUP, "tensor %s: its type %s has no float32 decoding to quantize from",
				     p->name, ty && ty->name ? ty->name : "?");
	}
	return rc;
}

static enum wf_err plan_tensors(const struct wf_model *m, uint32_t ftype, struct wf_arch_plan *plan, char *why)
{
	size_t n = m->n_tensors;
	struct ord *o = calloc(n ? n : 1, sizeof *o);
	if (!(plan->t = calloc(n ? n : 1, sizeof *plan->t)) || !o) {
		free(o);
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	}
	if (wf_ftype_quantized(ftype)) {
		free(o);
		return plan_quantized(m, ftype, plan, why);
	}
	for (size_t i = 0; i < n; i++)
		o[i] = (struct ord){.i = i, .t = &m->tensors[i]};
	qsort(o, n, sizeof *o, cmp_ord);
	enum wf_err rc = WF_OK;
	for (size_t k = 0; k < n && rc == WF_OK; k++)
		if ((rc = retype_tensor(o[k].t, o[k].i, ftype, &plan->t[k], why)) == WF_OK)
			plan->n++;
	free(o);
	return rc;
}

enum wf_err wf_arch_plan_gguf(const struct wf_model *m, uint32_t ftype, struct wf_gguf_w *w,
			      struct wf_arch_plan *plan, char *why)
{
	memset(plan, 0, sizeof *plan);
	plan->vocab_size = -1;
	plan->from_gguf = true;
	if (ftype == WF_FTYPE_AUTO)
		ftype = WF_FTYPE_MOSTLY_F16;
	plan->ftype = ftype;
	enum wf_err rc = plan_tensors(m, ftype, plan, why);
	struct kv_copy c = {.w = w, .why = why};
	struct wf_gguf_vals v = wf_gguf_vals_of(m);
	for (size_t i = 0; rc == WF_OK && m->n_parts && v.data && i < v.ix->n; i++)
		rc = copy_kv(&c, &v, (int64_t)i);
	if (rc == WF_OK) {
		wf_gguf_w_u32(w, "general.quantization_version", 2);
		wf_gguf_w_u32(w, "general.file_type", ftype & ~WF_FTYPE_PURE);
	}
	if (rc != WF_OK) {
		wf_arch_plan_free(plan);
		return rc;
	}
	snprintf(plan->arch_buf, sizeof plan->arch_buf, "%s", wf_ftype_name(ftype));
	plan->arch = plan->arch_buf;
	return WF_OK;
}
