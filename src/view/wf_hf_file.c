/* wf_hf_file.c - hf/ made on read (wf_hf_file.h). */
#include "view/wf_hf_file.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"

#include <stdlib.h>
#include <string.h>

static const char *st_dtype(uint32_t type)
{
	return type == WF_T_BF16 ? "BF16" : type == WF_T_F16 ? "F16" : "F32";
}

/* The safetensors header: its 8-byte length, then the JSON, padded with
 * spaces to a multiple of 8 (as the safetensors library writes it) so
 * that the data is aligned. */
static enum wf_err st_header(struct wf_gguf_file *g, char *why)
{
	struct wf_buf j = {0};
	uint64_t at = 0;
	/* made in one buffer, its length filled in last (two copies would
	 * hold the text twice at the peak) */
	wf_buf_put(&j, "\0\0\0\0\0\0\0\0", 8);
	wf_buf_puts(&j, "{\"__metadata__\":{\"format\":\"pt\"}");
	for (size_t i = 0; i < g->plan.n; i++) {
		const struct wf_arch_tensor *t = &g->plan.t[i];
		wf_buf_putc(&j, ',');
		wf_buf_json_str(&j, t->name, strlen(t->name));
		wf_buf_printf(&j, ":{\"dtype\":\"%s\",\"shape\":[", st_dtype(t->type));
		for (uint32_t d = 0; d < t->ndim; d++)
			wf_buf_printf(&j, "%s%" PRIu64, d ? "," : "", t->ne[t->ndim - 1 - d]);
		wf_buf_printf(&j, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", at, at + t->nbytes);
		at += t->nbytes;
	}
	wf_buf_putc(&j, '}');
	while (j.len % 8)
		wf_buf_putc(&j, ' ');
	if (j.oom || !wf_buf_finish(&j)) {
		wf_buf_free(&j);
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	}
	for (int i = 0; i < 8; i++)
		j.data[i] = (char)((uint64_t)(j.len - 8) >> (8 * i));
	g->header = j.data;
	g->header_len = j.len;
	return WF_OK;
}

/* The model's part of hf/: config.json, generation_config.json and
 * model.safetensors; WF_ERR_UNSUP (with h->model_why) leaves them out. */
static enum wf_err make_model(const struct wf_model *m, enum wf_vk vk, struct wf_hf_file *h)
{
	struct wf_hf_plan p;
	enum wf_err rc = wf_arch_hf_plan(m, vk, &p, h->model_why);
	if (rc != WF_OK)
		return rc;
	struct wf_gguf_file *g = calloc(1, sizeof *g);
	if (!g) {
		wf_hf_plan_free(&p);
		return wf_fail(h->model_why, WF_ERR_NOMEM, "out of memory");
	}
	h->config_json = p.config_json, h->config_len = p.config_len;
	h->gen_json = p.gen_json, h->gen_len = p.gen_len;
	g->plan = p.st;
	g->plan.from_gguf = true; /* no gguf-py NaN rule on the way back */
	h->st = g;
	rc = st_header(g, h->model_why);
	if (rc == WF_OK)
		rc = wf_made_lay_out(m, g, 1, h->model_why);
	if (rc != WF_OK) {
		free(h->config_json);
		free(h->gen_json);
		wf_gguf_file_free(g);
		h->config_json = h->gen_json = NULL;
		h->st = NULL;
	}
	return rc;
}

enum wf_err wf_hf_file_add_tok(struct wf_hf_file *h, const struct wf_model *m)
{
	if (h->tok_tried)
		return WF_OK;
	enum wf_err rt = wf_hf_tok_make(m, &h->tok, h->tok_why);
	h->tok_tried = rt != WF_ERR_NOMEM;
	h->has_tok = rt == WF_OK;
	return rt == WF_ERR_NOMEM ? rt : WF_OK;
}

enum wf_err wf_hf_file_new(const struct wf_model *m, enum wf_vk vk, struct wf_hf_file **out, char *why)
{
	return wf_hf_file_make(m, vk, true, out, why);
}

enum wf_err wf_hf_file_make(const struct wf_model *m, enum wf_vk vk, bool tok, struct wf_hf_file **out, char *why)
{
	*out = NULL;
	struct wf_hf_file *h = calloc(1, sizeof *h);
	if (!h)
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	enum wf_err rm = make_model(m, vk, h);
	enum wf_err rt = rm == WF_ERR_NOMEM ? rm : !tok ? WF_OK : wf_hf_file_add_tok(h, m);
	if (rm == WF_ERR_NOMEM || rt == WF_ERR_NOMEM) {
		wf_hf_file_free(h);
		return wf_fail(why, WF_ERR_NOMEM, "out of memory");
	}
	if (!h->st && (!h->has_tok || !tok)) {
		if (tok)
			wf_fail(why, WF_ERR_UNSUP, "%s; and no tokenizer files: %s", h->model_why, h->tok_why);
		else
			wf_fail(why, WF_ERR_UNSUP, "%s", h->model_why);
		wf_hf_file_free(h);
		return WF_ERR_UNSUP;
	}
	*out = h;
	return WF_OK;
}

void wf_hf_file_free(struct wf_hf_file *h)
{
	if (!h)
		return;
	free(h->config_json);
	free(h->gen_json);
	wf_gguf_file_free(h->st);
	wf_hf_tok_free(&h->tok);
	free(h);
}
