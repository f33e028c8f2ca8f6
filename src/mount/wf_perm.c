/* wf_perm.c - owner, group and mode of each node (wf_perm.h). */
#include "mount/wf_perm.h"

#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/xattr.h>
#include <unistd.h>

struct wf_perm_side {
	const char *data;
	size_t i;
	struct wf_perm perm;
};

struct wf_perm wf_perm_of(const struct stat *st)
{
	return (struct wf_perm){.uid = st->st_uid, .gid = st->st_gid, .mode = st->st_mode & 0444};
}

struct wf_perm wf_perm_search(const struct stat *st)
{
	return (struct wf_perm){.uid = st->st_uid, .gid = st->st_gid, .mode = (st->st_mode & 0111) << 2};
}

/* Whether need s (no ACL) lets through owner uid (*u), the members of
 * group gid but uid (*g), and everyone else (*o). */
static void pass_plain(const struct wf_perm *s, uid_t uid, gid_t gid, bool *u, bool *g, bool *o)
{
	bool su = s->mode & S_IRUSR, sg = s->mode & S_IRGRP, so = s->mode & S_IROTH;
	bool own = s->uid == uid, grp = s->gid == gid;
	/* our owner may or may not be in this need's group */
	*u = *u && (own ? su : sg && so);
	/* a member of our group (not our owner) may own this need's object,
	 * and may or may not be in its group when it is not ours */
	*g = *g && (own || su) && (grp ? sg : sg && so);
	/* anyone else may own it or be in its group */
	*o = *o && so && (own || su) && (grp || sg);
}

/* The same for a need with an ACL, as the kernel checks one: the owner's
 * entry, else a named user's, else any matching group's entry that
 * grants (none granting: refused), else other's.  A class whose
 * memberships are unknown must pass every entry it may meet. */
static void pass_acl(const struct wf_perm *s, uid_t uid, gid_t gid, bool *u, bool *g, bool *o)
{
	const struct wf_perm_acl *a = s->acl;
	bool su = s->mode & S_IRUSR, so = s->mode & S_IROTH, own = s->uid == uid;
	bool users = true;             /* every named user's entry but uid's */
	bool groups = so && a->group_obj; /* every group's entry, and other's */
	bool others = so;              /* the same but gid's */
	int u_entry = -1, g_entry = -1; /* uid's and gid's entries: -1 none */
	if (s->gid == gid)
		g_entry = a->group_obj;
	else
		others = others && a->group_obj;
	for (uint32_t i = 0; i < a->n; i++) {
		bool ok = a->e[i].ok, me = a->e[i].group ? a->e[i].id == gid : a->e[i].id == uid;
		if (!a->e[i].group && me) /* one entry a user, unless an odd ACL */
			u_entry = u_entry < 0 ? ok : u_entry && ok;
		else if (!a->e[i].group)
			users = users && ok;
		else if (me)
			g_entry = g_entry < 0 ? ok : g_entry && ok;
		else
			others = others && ok;
		groups = groups && (!a->e[i].group || ok);
	}
	*u = *u && (own ? su : u_entry >= 0 ? u_entry : groups);
	*g = *g && (own || su) && users && (g_entry >= 0 ? g_entry : groups);
	*o = *o && (own || su) && users && others;
}

/* The read bits owner uid and group gid can carry: a bit only where
 * whoever it covers is sure to pass every need. */
static mode_t grant(uid_t uid, gid_t gid, const struct wf_perm *need, size_t n)
{
	bool u = true, g = true, o = true;
	for (size_t i = 0; i < n && (u || g || o); i++)
		(need[i].acl ? pass_acl : pass_plain)(&need[i], uid, gid, &u, &g, &o);
	return (u ? S_IRUSR : 0) | (g ? S_IRGRP : 0) | (o ? S_IROTH : 0);
}

/* How much owner uid with bits m lets through: root reads whatever the
 * bits say, so root's own bit counts for nothing. */
static int n_bits(uid_t uid, mode_t m)
{
	return (uid != 0 && (m & S_IRUSR)) + !!(m & S_IRGRP) + !!(m & S_IROTH);
}

/* Owners and groups tried by wf_perm_all: the first few named (a set's
 * files have one or two; more only costs some bits). */
#define CANDIDATES 8

static void candidate(uint32_t *v, size_t *n, uint32_t id)
{
	size_t k;
	for (k = 0; k < *n && v[k] != id; k++)
		;
	if (k == *n && *n < CANDIDATES)
		v[(*n)++] = id;
}

struct wf_perm wf_perm_all(const struct wf_perm *need, size_t n)
{
	uint32_t us[CANDIDATES], gs[CANDIDATES];
	size_t nu = 0, ng = 0;
	for (size_t i = 0; i < n && (nu < CANDIDATES || ng < CANDIDATES); i++) {
		candidate(us, &nu, need[i].uid);
		candidate(gs, &ng, need[i].gid);
		/* a named user or group of an ACL may be the only one let through */
		for (uint32_t k = 0; need[i].acl && k < need[i].acl->n; k++)
			candidate(need[i].acl->e[k].group ? gs : us, need[i].acl->e[k].group ? &ng : &nu,
				  need[i].acl->e[k].id);
	}
	struct wf_perm best = {.uid = need[0].uid, .gid = need[0].gid};
	best.mode = grant(best.uid, best.gid, need, n);
	for (size_t a = 0; a < nu && n_bits(best.uid, best.mode) < 3; a++)
		for (size_t b = 0; b < ng; b++) {
			mode_t m = grant(us[a], gs[b], need, n);
			if (n_bits(us[a], m) > n_bits(best.uid, best.mode))
				best = (struct wf_perm){.uid = us[a], .gid = gs[b], .mode = m};
		}
	return best;
}

static uint32_t le16(const uint8_t *b)
{
	return (uint32_t)b[0] | (uint32_t)b[1] << 8;
}

static uint32_t le32(const uint8_t *b)
{
	return le16(b) | le16(b + 2) << 16;
}

/* The kernel's ACL tags (linux/posix_acl_xattr.h). */
enum { ACL_USER_OBJ = 1, ACL_USER = 2, ACL_GROUP_OBJ = 4, ACL_GROUP = 8, ACL_MASK = 0x10, ACL_OTHER = 0x20 };

bool wf_perm_acl_parse(struct wf_perm_acl *a, const void *v, size_t n, unsigned want)
{
	const uint8_t *b = v;
	memset(a, 0, sizeof *a);
	if (n < 4 || (n - 4) % 8 || le32(b) != 2)
		return false;
	bool mask = true, have_mask = false, have_group = false;
	for (size_t off = 4; off < n; off += 8) {
		uint32_t tag = le16(b + off), id = le32(b + off + 4);
		bool ok = le16(b + off + 2) & want;
		if (tag == ACL_USER || tag == ACL_GROUP) {
			if (a->n == WF_PERM_ACL_MAX)
				return false;
			a->e[a->n].group = tag == ACL_GROUP;
			a->e[a->n].ok = ok;
			a->e[a->n++].id = id;
		} else if (tag == ACL_GROUP_OBJ) {
			a->group_obj = ok;
			have_group = true;
		} else if (tag == ACL_MASK) {
			mask = ok;
			have_mask = true;
		} else if (tag != ACL_USER_OBJ && tag != ACL_OTHER) {
			return false; /* the owner's and other's are the mode's bits */
		}
	}
	if (!have_group || (a->n && !have_mask))
		return false;
	a->group_obj = a->group_obj && mask;
	for (uint32_t i = 0; i < a->n; i++)
		a->e[i].ok = a->e[i].ok && mask;
	return true;
}

/* ------------------------------------------------- the folders of a path */

struct needs {
	struct wf_perm *v;
	size_t n, cap;
};

static bool needs_push(struct needs *s, struct wf_perm p)
{
	struct wf_perm *v = wf_grow(s->v, s->n, &s->cap, sizeof *v, 16);
	if (!v)
		return false;
	s->v = v;
	s->v[s->n++] = p;
	return true;
}

static int perm_cmp(const void *a, const void *b)
{
	const struct wf_perm *x = a, *y = b;
	if (x->uid != y->uid)
		return x->uid < y->uid ? -1 : 1;
	if (x->gid != y->gid)
		return x->gid < y->gid ? -1 : 1;
	if (x->mode != y->mode)
		return x->mode < y->mode ? -1 : 1;
	return (x->acl > y->acl) - (x->acl < y->acl);
}

/* Drops repeated needs, v[0] kept first (wf_perm_all prefers it). */
static void needs_unique(struct needs *s)
{
	if (s->n < 3)
		return;
	qsort(s->v + 1, s->n - 1, sizeof *s->v, perm_cmp);
	size_t k = 1;
	for (size_t i = 1; i < s->n; i++)
		if (perm_cmp(&s->v[i], &s->v[0]) != 0 && perm_cmp(&s->v[i], &s->v[k - 1]) != 0)
			s->v[k++] = s->v[i];
	s->n = k;
}

#define ACL_XATTR "system.posix_acl_access"

struct acl_node {
	struct acl_node *next;
	struct wf_perm_acl a;
};

/* Folders already examined, by the path they were named by: a set's
 * 20,000 shards share one folder, a hub snapshot's links two. */
#define DIR_SLOTS 8

struct dir_slot {
	char *key;
	char *real;  /* the folder resolved */
	struct wf_perm *need;
	size_t n;
};

struct walker {
	struct dir_slot slot[DIR_SLOTS];
	unsigned next;   /* the slot to reuse next */
	struct needs cur; /* what the file being examined needs */
	struct acl_node *acls; /* every ACL the needs point to */
};

static void walker_free(struct walker *w)
{
	for (unsigned i = 0; i < DIR_SLOTS; i++) {
		free(w->slot[i].key);
		free(w->slot[i].real);
		free(w->slot[i].need);
	}
	free(w->cur.v);
	while (w->acls) {
		struct acl_node *n = w->acls->next;
		free(w->acls);
		w->acls = n;
	}
}

/* Need p of path (or of descriptor fd >= 0) with its access ACL, if it
 * has one, for access bit want.  One that cannot be read or is not
 * understood leaves only the owner's bit: its named entries may refuse a
 * user what the bits show, and its group bits are only the mask. */
static enum wf_err with_acl(struct walker *w, const char *path, int fd, unsigned want, struct wf_perm *p)
{
	uint8_t buf[4 + 8 * (WF_PERM_ACL_MAX + 4)];
	ssize_t n = fd >= 0 ? fgetxattr(fd, ACL_XATTR, buf, sizeof buf) : getxattr(path, ACL_XATTR, buf, sizeof buf);
	if (n < 0 && (errno == ENODATA || errno == ENOTSUP))
		return WF_OK;
	struct acl_node *an = malloc(sizeof *an);
	if (!an)
		return WF_ERR_NOMEM;
	if (n < 0 || !wf_perm_acl_parse(&an->a, buf, (size_t)n, want)) {
		free(an);
		p->mode &= S_IRUSR;
		return WF_OK;
	}
	an->next = w->acls;
	w->acls = an;
	p->acl = &an->a;
	return WF_OK;
}

/* What searching resolved folder `dir` and each folder above it needs,
 * into s; *sure false when one cannot be examined. */
static enum wf_err dir_needs(struct walker *w, char *dir, struct needs *s, bool *sure)
{
	size_t len = strlen(dir);
	enum wf_err rc = WF_OK;
	for (size_t i = 0; i < len && *sure && rc == WF_OK; i++) {
		if (dir[i] != '/' && i + 1 < len)
			continue;
		size_t end = dir[i] == '/' ? (i ? i : 1) : len;
		char saved = dir[end];
		dir[end] = '\0';
		struct stat st;
		if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
			*sure = false;
		} else {
			struct wf_perm p = wf_perm_search(&st);
			if ((rc = with_acl(w, dir, -1, 1, &p)) == WF_OK && !needs_push(s, p))
				rc = WF_ERR_NOMEM;
		}
		dir[end] = saved;
	}
	return rc;
}

/* Appends to w->cur what searching folder `dir` (as named) needs; *real
 * (if real is not NULL) the folder resolved, until the next call. */
static enum wf_err add_dir(struct walker *w, const char *dir, bool *sure, const char **real_out)
{
	for (unsigned i = 0; i < DIR_SLOTS; i++) {
		struct dir_slot *sl = &w->slot[i];
		if (sl->key && strcmp(sl->key, dir) == 0) {
			for (size_t k = 0; k < sl->n; k++)
				if (!needs_push(&w->cur, sl->need[k]))
					return WF_ERR_NOMEM;
			if (real_out)
				*real_out = sl->real;
			return WF_OK;
		}
	}
	char *real = realpath(dir, NULL);
	if (!real) {
		*sure = false;
		return errno == ENOMEM ? WF_ERR_NOMEM : WF_OK;
	}
	struct needs s = {0};
	enum wf_err rc = dir_needs(w, real, &s, sure);
	if (rc != WF_OK || !*sure) { /* not kept: examined again, and refused again, next time */
		free(real);
		free(s.v);
		return rc;
	}
	struct dir_slot *sl = &w->slot[w->next];
	w->next = (w->next + 1) % DIR_SLOTS;
	free(sl->key);
	free(sl->real);
	free(sl->need);
	*sl = (struct dir_slot){.key = strdup(dir), .real = real, .need = s.v, .n = s.n};
	if (!sl->key)
		return WF_ERR_NOMEM;
	return add_dir(w, dir, sure, real_out);
}

/* The next path of a symlink chain: link `cur`'s target, read from the
 * folder `dir` it is in; NULL with *sure false when it cannot be read. */
static char *follow(const char *cur, const char *dir, bool *sure)
{
	char t[PATH_MAX];
	ssize_t n = readlink(cur, t, sizeof t - 1);
	if (n <= 0 || (size_t)n >= sizeof t - 1) {
		*sure = false;
		return NULL;
	}
	t[n] = '\0';
	if (t[0] == '/')
		return strdup(t);
	size_t a = strlen(dir);
	char *p = malloc(a + 1 + (size_t)n + 1);
	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, t, (size_t)n + 1);
	}
	return p;
}

/* Symlinks followed at most, as the kernel's limit (ELOOP past it). */
#define MAX_HOPS 40

/* Appends to w->cur the search of the folders opening `path` takes: the
 * folder of each link of its chain and of the file at its end (each
 * resolved, with the folders above it); *self, the file's need, gets the
 * file's access ACL. */
static enum wf_err walk(struct walker *w, const char *path, struct wf_perm *self, bool *sure)
{
	enum wf_err rc = WF_OK;
	char *cur = strdup(path);
	for (int hop = 0; cur && rc == WF_OK && *sure; hop++) {
		char *slash = strrchr(cur, '/');
		char *dir = slash ? strndup(cur, slash == cur ? 1 : (size_t)(slash - cur)) : strdup(".");
		struct stat st;
		char *next = NULL;
		if (!dir)
			rc = WF_ERR_NOMEM;
		else if ((rc = add_dir(w, dir, sure, NULL)) != WF_OK || !*sure)
			;
		else if (lstat(cur, &st) != 0)
			*sure = false;
		else if (!S_ISLNK(st.st_mode))
			rc = with_acl(w, cur, -1, 4, self);
		else if (hop == MAX_HOPS)
			*sure = false;
		else if (!(next = follow(cur, dir, sure)) && *sure)
			rc = WF_ERR_NOMEM;
		free(dir);
		free(cur);
		cur = next;
		if (!next && rc == WF_OK && *sure)
			return WF_OK; /* the end of the chain */
	}
	if (!cur && rc == WF_OK && *sure)
		rc = WF_ERR_NOMEM;
	free(cur);
	return rc;
}

/* The same for a path known to be resolved (no symlink in it: a part not
 * opened through one), its file open as fd if fd >= 0: its folder only,
 * with no lookup of the file by name (20,000 shards: 85 ms down to 20). */
static enum wf_err walk_resolved(struct walker *w, const char *path, int fd, struct wf_perm *self, bool *sure)
{
	const char *slash = strrchr(path, '/');
	char *dir = slash ? strndup(path, slash == path ? 1 : (size_t)(slash - path)) : strdup(".");
	if (!dir)
		return WF_ERR_NOMEM;
	enum wf_err rc = add_dir(w, dir, sure, NULL);
	free(dir);
	if (rc == WF_OK && *sure)
		rc = with_acl(w, path, fd, 4, self);
	return rc;
}

/* The same for a part opened through symlink `link`, resolved to `path`
 * (open as fd if fd >= 0): a hub snapshot's link straight to its blob is
 * examined with no lookup of either by name but readlink (20,000 links:
 * 270 ms down to 155); any other chain by walk. */
static enum wf_err walk_link(struct walker *w, const char *link, const char *path, int fd, struct wf_perm *self,
			     bool *sure)
{
	const char *slash = strrchr(link, '/');
	char *dir = slash ? strndup(link, slash == link ? 1 : (size_t)(slash - link)) : strdup(".");
	char *next = NULL, *ndir = NULL;
	const char *real = NULL;
	enum wf_err rc = dir ? add_dir(w, dir, sure, NULL) : WF_ERR_NOMEM;
	if (rc == WF_OK && *sure && !(next = follow(link, dir, sure)) && *sure)
		rc = WF_ERR_NOMEM;
	free(dir);
	if (rc != WF_OK || !*sure)
		return rc;
	slash = strrchr(next, '/');
	ndir = slash ? strndup(next, slash == next ? 1 : (size_t)(slash - next)) : strdup(".");
	rc = ndir ? add_dir(w, ndir, sure, &real) : WF_ERR_NOMEM;
	free(ndir);
	/* the target's resolved folder and its name make the part's resolved
	 * path: then the target is the file, no further link */
	const char *base = slash ? slash + 1 : next;
	size_t rl = real ? strlen(real) : 0;
	bool direct = rc == WF_OK && *sure && real && strncmp(path, real, rl) == 0 &&
		      (rl == 1 || path[rl] == '/') && strcmp(path + (rl > 1 ? rl + 1 : 1), base) == 0;
	if (direct)
		rc = with_acl(w, path, fd, 4, self);
	else if (rc == WF_OK && *sure)
		rc = walk(w, next, self, sure);
	free(next);
	return rc;
}

/* How a file was opened: by path (NULL: a buffer), which may hold
 * symlinks unless resolved; or, resolved, through symlink `link`; open as
 * fd, or -1. */
struct opened {
	const char *path, *link;
	bool resolved;
	int fd;
};

/* What reading the file of stat st, opened as f says, needs, folded; also
 * appended to `all`, unfolded. */
static enum wf_err file_perm(struct walker *w, const struct opened *f, const struct stat *st, struct wf_perm *out,
			     struct needs *all)
{
	w->cur.n = 0;
	bool sure = true;
	struct wf_perm self = wf_perm_of(st);
	if (!needs_push(&w->cur, self))
		return WF_ERR_NOMEM;
	enum wf_err rc = !f->path     ? WF_OK
			 : f->link    ? walk_link(w, f->link, f->path, f->fd, &self, &sure)
			 : f->resolved ? walk_resolved(w, f->path, f->fd, &self, &sure)
				       : walk(w, f->path, &self, &sure);
	if (rc != WF_OK)
		return rc;
	w->cur.v[0] = self;
	if (!sure) /* something on the way could not be examined: nobody */
		w->cur.v[0] = (struct wf_perm){.uid = self.uid, .gid = self.gid};
	needs_unique(&w->cur);
	*out = wf_perm_all(w->cur.v, w->cur.n);
	for (size_t i = 0; all && i < w->cur.n; i++)
		if (!needs_push(all, w->cur.v[i]))
			return WF_ERR_NOMEM;
	if (all && all->n > 4096)
		needs_unique(all);
	return WF_OK;
}

enum wf_err wf_perm_path(const char *path, const struct stat *st, struct wf_perm *out, char *err)
{
	struct walker w = {0};
	enum wf_err rc = file_perm(&w, &(struct opened){.path = path, .fd = -1}, st, out, NULL);
	walker_free(&w);
	return rc == WF_OK ? WF_OK : wf_fail(err, rc, "out of memory");
}

/* ------------------------------------------------------------ the nodes */

static int side_cmp(const void *a, const void *b)
{
	uintptr_t x = (uintptr_t)((const struct wf_perm_side *)a)->data;
	uintptr_t y = (uintptr_t)((const struct wf_perm_side *)b)->data;
	return x < y ? -1 : x > y;
}

/* Each part's and the index's needs into gen, each sidecar's into side. */
static enum wf_err all_files(struct wf_perms *p, struct walker *w, struct needs *gen, struct needs *side)
{
	const struct wf_model *m = p->m;
	enum wf_err rc = WF_OK;
	for (uint32_t i = 0; i < m->n_parts && rc == WF_OK; i++) {
		const struct wf_part *pt = &m->parts[i];
		/* a part's path is resolved (wf_part.h) */
		struct opened f = {.path = pt->path, .link = pt->link, .resolved = true, .fd = pt->fd};
		rc = file_perm(w, &f, &pt->st, &p->part[i], gen);
	}
	struct wf_perm ix;
	if (rc == WF_OK && m->has_index_st)
		rc = file_perm(w, &(struct opened){.path = m->index_path, .fd = -1}, &m->index_st, &ix, gen);
	for (size_t i = 0; i < m->n_sidecars && rc == WF_OK; i++) {
		const struct wf_sidecar *sc = &m->sidecars[i];
		p->side[p->n_side] = (struct wf_perm_side){.data = sc->data, .i = i};
		rc = file_perm(w, &(struct opened){.path = sc->path, .fd = -1}, &sc->st, &p->side[p->n_side++].perm,
			       side);
	}
	return rc;
}

enum wf_err wf_perms_init(struct wf_perms *p, const struct wf_tree *t, const struct wf_model *m, char *err)
{
	*p = (struct wf_perms){.t = t, .m = m};
	p->part = calloc(m->n_parts ? m->n_parts : 1, sizeof *p->part);
	p->side = calloc(m->n_sidecars ? m->n_sidecars : 1, sizeof *p->side);
	struct walker w = {0};
	struct needs gen = {0}, side = {0};
	enum wf_err rc = p->part && p->side ? all_files(p, &w, &gen, &side) : WF_ERR_NOMEM;
	if (rc == WF_OK && !gen.n && !needs_push(&gen, (struct wf_perm){0}))
		rc = WF_ERR_NOMEM; /* no file at all: nobody but root */
	if (rc == WF_OK) {
		needs_unique(&gen);
		p->strict = wf_perm_all(gen.v, gen.n);
		for (size_t i = 0; i < side.n && rc == WF_OK; i++)
			if (!needs_push(&gen, side.v[i]))
				rc = WF_ERR_NOMEM;
	}
	if (rc == WF_OK) {
		needs_unique(&gen);
		p->gguf = wf_perm_all(gen.v, gen.n);
		qsort(p->side, p->n_side, sizeof *p->side, side_cmp);
	}
	walker_free(&w); /* the needs' ACLs with it */
	free(gen.v);
	free(side.v);
	if (rc != WF_OK) {
		wf_perms_free(p);
		return wf_fail(err, rc, "out of memory");
	}
	return WF_OK;
}

void wf_perms_free(struct wf_perms *p)
{
	free(p->part);
	free(p->side);
	p->part = NULL;
	p->side = NULL;
	p->n_side = 0;
}

/* The sidecar whose bytes node nd shows, or NULL. */
static const struct wf_perm_side *sidecar_of(const struct wf_perms *p, const struct wf_node *nd)
{
	size_t lo = 0, hi = p->n_side;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (p->side[mid].data == nd->blob) {
			const struct wf_sidecar *sc = &p->m->sidecars[p->side[mid].i];
			/* only the root shows sidecars, with all their bytes */
			return nd->parent == 0 && nd->blob_len == sc->len ? &p->side[mid] : NULL;
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
	const struct wf_perm_side *sc;
	if (nd->kind == WF_NODE_TENSOR)
		r = p->part[p->m->tensors[nd->tensor].part];
	else if (nd->kind == WF_NODE_MODEL_GGUF)
		r = p->gguf;
	else if (nd->kind == WF_NODE_BLOB && nd->blob && (sc = sidecar_of(p, nd)) != NULL)
		r = sc->perm;
	else if (nd->kind == WF_NODE_DIR)
		r.mode |= (r.mode & 0444) >> 2;
	return r;
}
