/* fixture.h - models the unit tests build in memory, without a file.
 *
 * A model with no bytes behind it: tensors have names, types and shapes
 * (so the tree, the views, the summary and the sizes can be built) but no
 * data to read. */
#ifndef FIXTURE_H
#define FIXTURE_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "codec/wf_types.h"
#include "model/wf_model.h"

/* An empty safetensors-shaped model with room for n tensors and "{}" as
 * its metadata; fill them with fixture_tensor. */
static inline struct wf_model *fixture_model(size_t n)
{
	struct wf_model *m = wf_model_new(WF_FMT_SAFETENSORS, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->tensors = calloc(n ? n : 1, sizeof *m->tensors);
	m->metadata_json = strdup("{}\n");
	m->metadata_json_len = 3;
	ck_assert(m->tensors && m->metadata_json);
	return m;
}

/* Tensor i of m (the next one: i == m->n_tensors): name[0..name_len)
 * (any bytes), type and shape as given, sizes and view as a parser sets
 * them, its data at offset `offset` of no file. */
static inline struct wf_tensor *fixture_tensor(struct wf_model *m, size_t i, const char *name, size_t name_len,
					       int type, uint32_t ndim, const uint64_t *shape, uint64_t offset)
{
	struct wf_tensor *t = &m->tensors[i];
	char err[WF_ERRLEN];
	t->name = malloc(name_len + 1);
	t->shape = malloc((ndim ? ndim : 1) * sizeof *t->shape);
	ck_assert(t->name && t->shape);
	memcpy(t->name, name, name_len);
	t->name[name_len] = '\0';
	t->name_len = name_len;
	t->type = type;
	t->ndim = ndim;
	memcpy(t->shape, shape, ndim * sizeof *shape);
	ck_assert_msg(wf_tensor_sizes(t, false, err) == WF_OK, "%s", err);
	t->offset = offset;
	m->n_tensors = i + 1;
	return t;
}

#endif
