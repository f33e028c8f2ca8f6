/* wf_perm.c - owner, group and mode of each node (wf_perm.h). */
#include "mount/wf_perm.h"

#include <stdint.h>
#include <stdlib.h>

struct wf_perm_side {
	const char *data;
	size_t i;
};

struct wf_perm wf_perm_of(const struct stat *st)
{
	return (struct wf_perm){.uid = st->st_uid, .gid = st->st_gid, .mode = st->st_mode & 0444};
}

struct wf_perm wf_perm_strictest(const struct stat *const *sts, size_t n)
{
	struct wf_perm r = wf_perm_of(sts[0]);
	bool u = true, g = true, o = true;
	for (size_t i = 0; i < n; i++) {
		const struct stat *s = sts[i];
		bool su = s->st_mode & S_IRUSR, sg = s->st_mode & S_IRGRP, so = s->st_mode & S_IROTH;
		bool own = s->st_uid == r.uid, grp = s->st_gid == r.gid;
		/* our owner may or may not be in this file's group */
		u = u && (own ? su : sg && so);
		/* a member of our group (not our owner) may own this file, and
		 * may or may not be in its group when it is not ours */
		g = g && (own || su) && (grp ? sg : sg && so);
		/* anyone else may own this file or be in its group */
		o = o && so && (own || su) && (grp || sg);
	}
	r.mode = (u ? S_IRUSR : 0) | (g ? S_IRGRP : 0) | (o ? S_IROTH : 0);
	return r;
}

static int side_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct wf_perm_side *)a)->data;
	uintptr_t y = (uintptr_t)((const struct wf_perm_side *)b)->data;
	return x < y ? -1 : x > y;
}

enum wf_err wf_perms_init(struct wf_perms *p, const struct wf_tree *t, const struct wf_model *m, char *err)
{
	*p = (struct wf_perms){.t = t, .m = m};
	size_t n = (size_t)m->n_parts + (m->has_index_st ? 1 : 0);
	const struct stat **sts = calloc(n ? n : 1, sizeof *sts);
	p->side = calloc(m->n_sidecars ? m->n_sidecars : 1, sizeof *p->side);
	if (!sts || !p->side) {
		free(sts);
		free(p->side);
		p->side = NULL;
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < m->n_parts; i++)
		sts[i] = &m->parts[i].st;
	if (m->has_index_st)
		sts[m->n_parts] = &m->index_st;
	p->strict = wf_perm_strictest(sts, n);
	free(sts);
	for (size_t i = 0; i < m->n_sidecars; i++)
		p->side[p->n_side++] = (struct wf_perm_side){.data = m->sidecars[i].data, .i = i};
	qsort(p->side, p->n_side, sizeof *p->side, side_cmp);
	return WF_OK;
}

void wf_perms_free(struct wf_perms *p)
{
	free(p->side);
	p->side = NULL;
	p->n_side = 0;
}

/* The sidecar whose bytes node nd shows, or NULL. */
static const struct wf_sidecar *sidecar_of(const struct wf_perms *p, const struct wf_node *nd)
{
	size_t lo = 0, hi = p->n_side;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->side[mid].data == nd->blob) {
			const struct wf_sidecar *sc = &p->m->sidecars[p->side[mid].i];
			/* only the root shows sidecars, with all their bytes */
			return nd->parent == 0 && nd->blob_len == sc->len ? sc : NULL;
		}
		if ((uintptr_t)p->side[mid].data < (uintptr_t)nd->blob)
			lo = mid + 1;
		else
			hi = mid;
	}
	return NULL;
}

struct wf_perm wf_perm_node(const struct wf_perms *p, uint32_t idx)
{
	const struct wf_node *nd = &p->t->nodes[idx];
	struct wf_perm r = p->strict;
	const struct wf_sidecar *sc;
	if (nd->kind == WF_NODE_TENSOR)
		r = wf_perm_of(&p->m->parts[p->m->tensors[nd->tensor].part].st);
	else if (nd->kind == WF_NODE_BLOB && nd->blob && (sc = sidecar_of(p, nd)) != NULL)
		r = wf_perm_of(&sc->st);
	else if (nd->kind == WF_NODE_DIR)
		r.mode |= (r.mode & 0444) >> 2;
	return r;
}
