/* wf_arch_put.c - what the engine and the descriptors' hooks write
 * through (wf_arch_int.h): a plan's tensors and the names it makes
 * (model.gguf's and hf/'s), the generated tensors of the gen hooks, and
 * hf/'s config.json fields and key/value reads of the config hooks.  It
 * calls nothing of the engine or the registry, so a descriptor that
 * calls it makes no cycle (docs/design.md, Layers). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_gguf.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- plans */

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

enum wf_err wf_arch_add_tensor(struct wf_arch_plan *pl, size_t cap, const char *name, int64_t src, uint32_t ndim,
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
	wf_shape_reverse(t->ne, shape, ndim);
	for (uint32_t d = 0; d < ndim; d++) {
		if (!wf_mul_ok(el, t->ne[d], &el))
			return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many elements", name);
	}
	t->type = norm_or_1d || ftype == WF_FTYPE_ALL_F32 ? WF_T_F32 : ftype == WF_FTYPE_MOSTLY_BF16 ? WF_T_BF16 : WF_T_F16;
	if (!wf_mul_ok(el, wf_type_get((int)t->type)->bytes, &t->nbytes))
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many bytes", name);
	pl->n++;
	return WF_OK;
}

enum wf_err wf_arch_gen_add(struct wf_cfg *c, struct wf_arch_plan *pl, size_t cap, const char *name, uint64_t n,
			    float *v)
{
	enum wf_err rc = wf_arch_add_tensor(pl, cap, name, -1, 1, &n, true, pl->ftype, c->why);
	if (rc == WF_OK)
		pl->t[pl->n - 1].gen = v;
	else
		free(v);
	return rc;
}

/* ---------------------------------------------------------------- hf/'s config.json */

const char *wf_hfc_key(struct wf_hfc *h, const char *rest)
{
	snprintf(h->key, sizeof h->key, "%s.%s", h->arch, rest);
	return h->key;
}

void wf_hfc_field(struct wf_hfc *h, const char *name)
{
	wf_buf_puts(h->j, h->first ? "\n  " : ",\n  ");
	h->first = false;
	wf_buf_json_str(h->j, name, strlen(name));
	wf_buf_puts(h->j, ": ");
}

void wf_hfc_int(struct wf_hfc *h, const char *name, int64_t v)
{
	wf_hfc_field(h, name);
	wf_buf_printf(h->j, "%lld", (long long)v);
}

void wf_hfc_num(struct wf_hfc *h, const char *name, double v, bool f32)
{
	wf_hfc_field(h, name);
	if (f32)
		wf_buf_json_f32(h->j, (float)v);
	else
		wf_buf_json_f64(h->j, v);
}

void wf_hfc_str(struct wf_hfc *h, const char *name, const char *v)
{
	wf_hfc_field(h, name);
	wf_buf_json_str(h->j, v, strlen(v));
}

void wf_hfc_raw(struct wf_hfc *h, const char *name, const char *v)
{
	wf_hfc_field(h, name);
	wf_buf_puts(h->j, v);
}

/* A required whole number of the architecture, in [lo, hi]. */
enum wf_err wf_hfc_need(struct wf_hfc *h, const char *rest, int64_t lo, int64_t hi, int64_t *v)
{
	const char *key = wf_hfc_key(h, rest);
	if (!wf_gguf_get_int(&h->kv, key, v))
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: missing, or not a whole number", key);
	if (*v < lo || *v > hi)
		return wf_fail(h->why, WF_ERR_UNSUP, "metadata key %s: %lld is out of range", key, (long long)*v);
	return WF_OK;
}

bool wf_hfc_has(const struct wf_model *m, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].name_len == n && memcmp(m->tensors[i].name, name, n) == 0)
			return true;
	return false;
}

const struct wf_tensor *wf_hfc_tensor(const struct wf_model *m, const char *name)
{
	size_t n = strlen(name);
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].name_len == n && memcmp(m->tensors[i].name, name, n) == 0)
			return &m->tensors[i];
	return NULL;
}

/* rope.scaling.type linear or yarn, as the converter writes them. */
void wf_hfc_scaling(struct wf_hfc *h)
{
	size_t n;
	const uint8_t *type = wf_gguf_get_str(&h->kv, wf_hfc_key(h, "rope.scaling.type"), &n);
	double factor;
	if (!type || !wf_gguf_get_num(&h->kv, wf_hfc_key(h, "rope.scaling.factor"), &factor))
		return;
	bool linear = n == 6 && memcmp(type, "linear", 6) == 0, yarn = n == 4 && memcmp(type, "yarn", 4) == 0;
	if (!linear && !yarn)
		return;
	wf_hfc_field(h, "rope_scaling");
	wf_buf_printf(h->j, "{\"rope_type\": \"%s\", \"factor\": ", linear ? "linear" : "yarn");
	wf_buf_json_f32(h->j, (float)factor);
	int64_t old;
	if (yarn && wf_gguf_get_int(&h->kv, wf_hfc_key(h, "rope.scaling.original_context_length"), &old))
		wf_buf_printf(h->j, ", \"original_max_position_embeddings\": %lld", (long long)old);
	wf_buf_putc(h->j, '}');
}

/* A mixture of experts' counts (moe-and-mla.md 2-4, hf/ view). */
enum wf_err wf_hfc_experts(struct wf_hfc *h, const char *count_field)
{
	int64_t used;
	enum wf_err rc = wf_hfc_need(h, "expert_used_count", 1, h->n_exp, &used);
	if (rc != WF_OK)
		return rc;
	wf_hfc_int(h, count_field, h->n_exp);
	wf_hfc_int(h, "num_experts_per_tok", used);
	return WF_OK;
}
