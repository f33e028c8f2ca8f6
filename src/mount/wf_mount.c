/* wf_mount.c - MODEL as the mount shows it (wf_mount.h). */
#include "mount/wf_mount.h"
#include "model/wf_set.h"
#include "mount/wf_summary.h"
#include "view/wf_view.h"

#include <string.h>

enum wf_err wf_mount_tree(struct wf_tree **out, const struct wf_model *m, const struct wf_tree_opts *opts,
			  char *err)
{
	struct wf_tree *t;
	enum wf_err rc = wf_tree_build_opts(&t, m, opts, err);
	if (rc != WF_OK)
		return rc;
	char *text;
	size_t len;
	rc = wf_summary(t, t->nodes[t->meta_node].name, &text, &len, err);
	if (rc != WF_OK) {
		wf_tree_free(t);
		return rc;
	}
	wf_tree_set_summary(t, text, len);
	*out = t;
	return WF_OK;
}

enum wf_err wf_mount_open(struct wf_mount *mt, const char *model, enum wf_vk want, const struct wf_tree_opts *opts,
			  char *err)
{
	memset(mt, 0, sizeof *mt);
	enum wf_err rc = wf_set_open(&mt->m, model, err);
	if (rc == WF_OK)
		rc = wf_model_set_view(mt->m, want, err);
	if (rc == WF_OK)
		rc = wf_mount_tree(&mt->t, mt->m, opts, err);
	if (rc != WF_OK)
		wf_mount_close(mt);
	return rc;
}

void wf_mount_close(struct wf_mount *mt)
{
	wf_tree_free(mt->t);
	wf_model_free(mt->m);
	memset(mt, 0, sizeof *mt);
}
