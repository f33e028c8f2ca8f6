/* wf_meta.c - metadata.json's framing (wf_meta.h). */
#include "model/wf_meta.h"

#include <stdlib.h>

void wf_meta_json_key(struct wf_meta_json *w, const void *key, size_t n)
{
	wf_buf_puts(&w->b, w->n ? ",\n " : "{\n ");
	wf_buf_json_str(&w->b, key, n);
	wf_buf_puts(&w->b, ": ");
	w->n++;
}

enum wf_err wf_meta_json_finish(struct wf_meta_json *w, struct wf_model *m, char *err)
{
	wf_buf_puts(&w->b, w->n ? "\n}\n" : "{}\n");
	if (!wf_buf_finish(&w->b)) {
		wf_meta_json_free(w);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory writing metadata.json");
	}
	free(m->metadata_json);
	m->metadata_json = w->b.data;
	m->metadata_json_len = w->b.len;
	m->n_kv = w->n;
	*w = (struct wf_meta_json){0};
	return WF_OK;
}

void wf_meta_json_free(struct wf_meta_json *w)
{
	wf_buf_free(&w->b);
	*w = (struct wf_meta_json){0};
}
