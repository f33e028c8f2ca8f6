/* wf_attr.c - extended attribute names and values (wf_attr.h). */
#include "mount/wf_attr.h"
#include "view/wf_view.h"
#include "codec/wf_types.h"
#include "view/wf_hfq.h"

#include <string.h>

/* Every name a tensor has, each NUL-terminated (the array's own NUL ends
 * the last); wf_xattr_get answers exactly these. */
static const char tensor_names[] = WF_XATTR_PREFIX "shape\0" WF_XATTR_PREFIX "dtype\0"
	WF_XATTR_PREFIX "type\0" WF_XATTR_PREFIX "name";
/* A decoded quantized layer also has its scheme's parameters (wf_hfq.h). */
static const char layer_names[] = WF_XATTR_PREFIX "shape\0" WF_XATTR_PREFIX "dtype\0"
	WF_XATTR_PREFIX "type\0" WF_XATTR_PREFIX "name\0" WF_XATTR_PREFIX "quant";

/* The tensor behind node idx, or NULL for any other node. */
static const struct wf_tensor *tensor_of(const struct wf_tree *t, uint32_t idx)
{
	if (idx >= t->n_nodes || t->nodes[idx].kind != WF_NODE_TENSOR)
		return NULL;
	return &t->m->tensors[t->nodes[idx].tensor];
}

enum wf_err wf_xattr_get(const struct wf_tree *t, uint32_t idx, const char *name, struct wf_buf *b,
			 char *err)
{
	const struct wf_tensor *ts = tensor_of(t, idx);
	size_t pl = strlen(WF_XATTR_PREFIX);
	if (!ts || strncmp(name, WF_XATTR_PREFIX, pl) != 0)
		return wf_fail(err, WF_ERR_RANGE, "no attribute %s", name);
	const char *key = name + pl;
	if (strcmp(key, "shape") == 0)
		wf_view_shape_json(ts, b);
	else if (strcmp(key, "dtype") == 0)
		wf_buf_puts(b, wf_view_dtype(ts));
	else if (strcmp(key, "type") == 0)
		wf_buf_puts(b, wf_type_get(ts->type)->name);
	else if (strcmp(key, "name") == 0)
		wf_buf_put(b, ts->name, ts->name_len);
	else if (strcmp(key, "quant") == 0 && ts->q)
		wf_hfq_params_json(ts->q, b);
	else
		return wf_fail(err, WF_ERR_RANGE, "no attribute %s", name);
	if (b->oom)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory for attribute %s", name);
	return WF_OK;
}

const char *wf_xattr_list(const struct wf_tree *t, uint32_t idx, size_t *len)
{
	const struct wf_tensor *ts = tensor_of(t, idx);
	if (ts && ts->q) {
		*len = sizeof layer_names;
		return layer_names;
	}
	*len = ts ? sizeof tensor_names : 0;
	return *len ? tensor_names : "";
}
