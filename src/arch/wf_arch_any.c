/* wf_arch_any.c - model.gguf of a checkpoint llama.cpp has no architecture
 * for (wf_arch.h, wf_arch_plan_any): every tensor under its own name, in
 * its stored dtype where GGUF has one and else decoded to F32, with the
 * model's __metadata__ and config.json as key/values.  llama.cpp will not
 * run it, but every GGUF tool reads it (gguf-py, gguf-dump, a GGUF viewer). */
#include "arch/wf_arch.h"
#include "codec/wf_types.h"

#include <cjson/cJSON.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The GGUF type and view of a stored tensor: its own bytes when GGUF has
 * its dtype, float32 when it decodes; false when neither (unsigned ints,
 * bool: no GGUF type holds their values). */
static bool any_type(const struct wf_tensor *t, uint32_t *type, uint8_t *vk, unsigned *es)
{
	static const struct {
		int id;
		unsigned es;
	} same[] = {{WF_T_F32, 4}, {WF_T_F16, 2}, {WF_T_BF16, 2}, {WF_T_F64, 8},
		    {WF_T_I8, 1},  {WF_T_I16, 2}, {WF_T_I32, 4},  {WF_T_I64, 8}};
	for (size_t i = 0; !t->q && i < WF_ARRAY_LEN(same); i++)
		if (t->type == same[i].id) {
			*type = (uint32_t)same[i].id;
			*vk = WF_VK_RAW;
			*es = same[i].es;
			return true;
		}
	if (t->q || wf_type_floats(t->type)) {
		*type = WF_T_F32;
		*vk = WF_VK_F32;
		*es = 4;
		return true;
	}
	return false;
}

static enum wf_err any_tensor(const struct wf_model *m, size_t i, struct wf_arch_plan *pl, char *why)
{
	const struct wf_tensor *t = &m->tensors[i];
	struct wf_arch_tensor *o = &pl->t[pl->n];
	char q[96];
	unsigned es;
	memset(o, 0, sizeof *o);
	if (t->name_len >= WF_GGUF_NAME_MAX || strlen(t->name) != t->name_len || !t->name_len)
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: a GGUF tensor name is 1 to %d bytes with no NUL",
			       wf_quote(q, sizeof q, t->name, t->name_len), WF_GGUF_NAME_MAX - 1);
	if (t->ndim > 4)
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: %u dims, GGUF has at most 4",
			       wf_quote(q, sizeof q, t->name, t->name_len), t->ndim);
	if (!any_type(t, &o->type, &o->vk, &es))
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: GGUF has no type for its dtype %s",
			       wf_quote(q, sizeof q, t->name, t->name_len),
			       wf_type_get(t->type) ? wf_type_get(t->type)->name : "?");
	o->name = t->name; /* the same name: the model outlives the plan */
	o->src = (int64_t)i;
	o->ndim = t->ndim ? t->ndim : 1;
	o->ne[0] = 1;
	wf_shape_reverse(o->ne, t->shape, t->ndim);
	if (!wf_mul_ok(t->nelems, es, &o->nbytes))
		return wf_fail(why, WF_ERR_UNSUP, "tensor %s: too many bytes", wf_quote(q, sizeof q, t->name, t->name_len));
	pl->n++;
	return WF_OK;
}

/* One config.json field as a key/value: strings, bools and numbers as
 * themselves (whole numbers INT64, others FLOAT64), arrays of one kind of
 * scalar as arrays, anything else as its JSON text. */
static void any_kv(struct wf_gguf_w *w, const char *key, const cJSON *v)
{
	if (cJSON_IsString(v)) {
		wf_gguf_w_str(w, key, v->valuestring, strlen(v->valuestring));
		return;
	}
	if (cJSON_IsBool(v)) {
		wf_gguf_w_bool(w, key, cJSON_IsTrue(v));
		return;
	}
	if (cJSON_IsNumber(v) && v->valuedouble == floor(v->valuedouble) && fabs(v->valuedouble) < 9.2e18) {
		wf_gguf_w_u64(w, key, (uint64_t)(int64_t)v->valuedouble);
		return;
	}
	if (cJSON_IsNumber(v)) {
		/* FLOAT64 through a FLOAT32 writer would lose bits: keep its text */
		char num[64];
		snprintf(num, sizeof num, "%.17g", v->valuedouble);
		wf_gguf_w_str(w, key, num, strlen(num));
		return;
	}
	char *text = cJSON_PrintUnformatted(v);
	if (text)
		wf_gguf_w_str(w, key, text, strlen(text));
	else
		wf_gguf_w_str(w, key, "", 0);
	free(text);
}

static void any_kvs(const struct wf_model *m, const struct wf_arch_in *in, struct wf_gguf_w *w, const char *arch)
{
	char key[320];
	wf_gguf_w_str(w, "general.architecture", arch, strlen(arch));
	wf_gguf_w_str(w, "general.type", "model", 5);
	if (in->name)
		wf_gguf_w_str(w, "general.name", in->name, strlen(in->name));
	/* a safetensors model's text (a GGUF is planned by wf_arch_plan_gguf,
	 * never here: its text is never whole, wf_meta.h) */
	cJSON *md = m->metadata_json ? cJSON_ParseWithLength(m->metadata_json, m->metadata_json_len) : NULL;
	for (const cJSON *e = cJSON_IsObject(md) ? md->child : NULL; e; e = e->next)
		if (e->string && strlen(e->string) < 200 && snprintf(key, sizeof key, "safetensors.metadata.%s", e->string) > 0 &&
		    !wf_gguf_w_has(w, key))
			any_kv(w, key, e);
	cJSON_Delete(md);
	cJSON *cfg = in->config ? cJSON_ParseWithLength(in->config, in->config_len) : NULL;
	for (const cJSON *e = cJSON_IsObject(cfg) ? cfg->child : NULL; e; e = e->next)
		if (e->string && strlen(e->string) < 200 && snprintf(key, sizeof key, "hf.config.%s", e->string) > 0 &&
		    !wf_gguf_w_has(w, key))
			any_kv(w, key, e);
	cJSON_Delete(cfg);
}

enum wf_err wf_arch_plan_any(const struct wf_model *m, const struct wf_arch_in *in, struct wf_gguf_w *w,
			     struct wf_arch_plan *plan, char *why)
{
	memset(plan, 0, sizeof *plan);
	plan->vocab_size = -1;
	plan->generic = true;
	plan->tok = WF_VOCAB_QWEN; /* SentencePiece when there is a tokenizer.model, else byte-level BPE */
	plan->ftype = WF_FTYPE_ALL_F32;
	if (!(plan->t = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *plan->t)))
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	enum wf_err rc = WF_OK;
	for (size_t i = 0; i < m->n_tensors && rc == WF_OK; i++)
		rc = any_tensor(m, i, plan, why);
	if (rc != WF_OK) {
		wf_arch_plan_free(plan);
		return rc;
	}
	/* the name llama.cpp is told: config.json's model_type, else none it knows */
	cJSON *cfg = in->config ? cJSON_ParseWithLength(in->config, in->config_len) : NULL;
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(cfg, "model_type");
	snprintf(plan->arch_buf, sizeof plan->arch_buf, "%s",
		 cJSON_IsString(mt) && *mt->valuestring && strlen(mt->valuestring) < sizeof plan->arch_buf ? mt->valuestring
													  : "unknown");
	cJSON_Delete(cfg);
	plan->arch = plan->arch_buf;
	any_kvs(m, in, w, plan->arch);
	return WF_OK;
}
