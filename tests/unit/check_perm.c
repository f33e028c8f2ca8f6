/* check_perm.c - unit tests for the owner, group and mode of each node
 * (wf_perm.c): a node never lets a user read what the files behind it
 * would not, and shows a single file's bits as they are. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "codec/wf_types.h"
#include "model/wf_model.h"
#include "mount/wf_perm.h"
#include "mount/wf_tree.h"

/* A small world: users 1..4, groups 1..3; member[u][g]. */
#define NU 5
#define NG 4
static const bool member[NU][NG] = {
	{0}, {0, 1, 0, 0}, {0, 1, 1, 0}, {0, 0, 1, 1}, {0, 0, 0, 0},
};

/* The kernel's read check for user u (not root) on owner/group/mode. */
static bool can_read(unsigned u, uid_t uid, gid_t gid, mode_t mode)
{
	if (u == uid)
		return mode & S_IRUSR;
	if (gid < NG && member[u][gid])
		return mode & S_IRGRP;
	return mode & S_IROTH;
}

static unsigned long long rng_state = 88172645463325252ull;
static unsigned rnd(unsigned n)
{
	rng_state ^= rng_state << 13;
	rng_state ^= rng_state >> 7;
	rng_state ^= rng_state << 17;
	return (unsigned)(rng_state % n);
}

START_TEST(test_all_never_widens)
{
	unsigned granted = 0, widened = 0;
	for (int iter = 0; iter < 200000; iter++) {
		struct wf_perm need[5];
		size_t n = 1 + rnd(5);
		for (size_t i = 0; i < n; i++) {
			struct stat st = {.st_uid = 1 + rnd(NU - 1), .st_gid = 1 + rnd(NG - 1)};
			st.st_mode = (i && rnd(2) ? S_IFDIR : S_IFREG) | rnd(01000);
			/* a file to read, or a folder on the way to search */
			need[i] = S_ISDIR(st.st_mode) ? wf_perm_search(&st) : wf_perm_of(&st);
		}
		struct wf_perm p = wf_perm_all(need, n);
		ck_assert_int_eq(p.mode & ~(mode_t)0444, 0);
		for (unsigned u = 1; u < NU; u++) {
			bool all = true;
			for (size_t i = 0; i < n; i++)
				all = all && can_read(u, need[i].uid, need[i].gid, need[i].mode);
			bool gets = can_read(u, p.uid, p.gid, p.mode);
			if (gets && !all)
				ck_abort_msg("iter %d: user %u reads the result (%o %u:%u) but not every need", iter, u,
					     (unsigned)p.mode, (unsigned)p.uid, (unsigned)p.gid);
			granted += gets;
		}
		if (n == 1) /* one file: its own bits, unchanged */
			ck_assert_int_eq(p.mode, need[0].mode);
		/* the first need's owner and group would never grant more */
		struct wf_perm first = wf_perm_all(need, 1);
		widened += first.mode != p.mode;
	}
	ck_assert_uint_gt(granted, 10000); /* not a rule that denies everyone */
	ck_assert_uint_gt(widened, 0);
}
END_TEST

static struct wf_perm need_file(uid_t u, gid_t g, mode_t m)
{
	struct stat st = {.st_uid = u, .st_gid = g, .st_mode = S_IFREG | m};
	return wf_perm_of(&st);
}

static struct wf_perm need_dir(uid_t u, gid_t g, mode_t m)
{
	struct stat st = {.st_uid = u, .st_gid = g, .st_mode = S_IFDIR | m};
	return wf_perm_search(&st);
}

START_TEST(test_all_same_owner)
{
	struct wf_perm a = need_file(7, 8, 0644), b = need_file(7, 8, 0640);
	struct wf_perm v[] = {a, b};
	struct wf_perm p = wf_perm_all(v, 2);
	ck_assert_int_eq(p.uid, 7);
	ck_assert_int_eq(p.gid, 8);
	ck_assert_int_eq(p.mode, 0440);
	/* 0644 7:8 and 0640 7:9: members of 9 read both (the first by its
	 * other bit), so the pair shows as group 9's */
	v[1] = need_file(7, 9, 0640);
	p = wf_perm_all(v, 2);
	ck_assert_int_eq(p.mode, 0440);
	ck_assert_int_eq(p.gid, 9);
	v[1] = need_file(7, 9, 0600);
	ck_assert_int_eq(wf_perm_all(v, 2).mode, 0400);
}
END_TEST

/* A file's folders: the bits issue 31 asks for, case by case. */
START_TEST(test_all_folders)
{
	/* a 0644 file in a 0700 folder of root's: root's alone */
	struct wf_perm v[4] = {need_file(0, 0, 0644), need_dir(0, 0, 0755), need_dir(0, 0, 0700)};
	struct wf_perm p = wf_perm_all(v, 3);
	ck_assert_int_eq(p.mode, 0400);
	ck_assert_int_eq(p.uid, 0);
	/* a 0750 folder of group 5: its members, as group 5 */
	v[2] = need_dir(0, 5, 0750);
	p = wf_perm_all(v, 3);
	ck_assert_int_eq(p.mode, 0440);
	ck_assert_int_eq(p.gid, 5);
	/* 0711 and 0755 folders: everyone */
	v[2] = need_dir(0, 5, 0711);
	ck_assert_int_eq(wf_perm_all(v, 3).mode, 0444);
	/* a folder nobody but its owner (user 3) searches: user 3's */
	v[2] = need_dir(3, 3, 0700);
	p = wf_perm_all(v, 3);
	ck_assert_int_eq(p.mode, 0400);
	ck_assert_int_eq(p.uid, 3);
	/* a hub snapshot: 0755 snapshot folder, 0700 blobs of user 3 */
	v[3] = need_dir(0, 0, 0755);
	ck_assert_int_eq(wf_perm_all(v, 4).mode, 0400);
	/* searchable by group 5 only, the file readable by group 6 only */
	v[0] = need_file(0, 6, 0640);
	v[2] = need_dir(0, 5, 0710);
	ck_assert_int_eq(wf_perm_all(v, 3).mode, 0400); /* both groups: unknown, so root only */
	/* a folder with nothing for anyone: nobody but root */
	v[2] = need_dir(0, 0, 0000);
	ck_assert_int_eq(wf_perm_all(v, 3).mode, 0);
}
END_TEST

/* The kernel's check of an ACL'd need for user u (not root): the owner's
 * entry, a named user's, else any matching group entry that grants (one
 * matching but none granting: refused), else other's. */
static bool can_pass_acl(unsigned u, const struct wf_perm *s)
{
	const struct wf_perm_acl *a = s->acl;
	if (u == s->uid)
		return s->mode & S_IRUSR;
	for (uint32_t i = 0; i < a->n; i++)
		if (!a->e[i].group && a->e[i].id == u)
			return a->e[i].ok;
	bool matched = false, ok = false;
	if (s->gid < NG && member[u][s->gid]) {
		matched = true;
		ok = a->group_obj;
	}
	for (uint32_t i = 0; i < a->n; i++)
		if (a->e[i].group && a->e[i].id < NG && member[u][a->e[i].id]) {
			matched = true;
			ok = ok || a->e[i].ok;
		}
	return matched ? ok : (s->mode & S_IROTH) != 0;
}

static bool can_pass(unsigned u, const struct wf_perm *s)
{
	return s->acl ? can_pass_acl(u, s) : can_read(u, s->uid, s->gid, s->mode);
}

static void print_need(size_t i, const struct wf_perm *s)
{
	fprintf(stderr, "need %zu: %u:%u %o", i, (unsigned)s->uid, (unsigned)s->gid, (unsigned)s->mode);
	for (uint32_t k = 0; s->acl && k < s->acl->n; k++)
		fprintf(stderr, " %s%c%u=%d", k ? "" : "acl: ", s->acl->e[k].group ? 'g' : 'u', (unsigned)s->acl->e[k].id,
			s->acl->e[k].ok);
	fprintf(stderr, s->acl ? " group_obj=%d\n" : "\n", s->acl ? s->acl->group_obj : 0);
}

/* Random needs, some with ACLs of random named users and groups: nobody
 * passes the fold who does not pass every need as the kernel checks it. */
START_TEST(test_all_acl_never_widens)
{
	static struct wf_perm_acl acls[4];
	unsigned granted = 0, named_owner = 0;
	for (int iter = 0; iter < 200000; iter++) {
		struct wf_perm need[4];
		size_t n = 1 + rnd(4);
		for (size_t i = 0; i < n; i++) {
			unsigned b = rnd(8);
			need[i] = (struct wf_perm){.uid = 1 + rnd(NU - 1), .gid = 1 + rnd(NG - 1),
						   .mode = (b & 4 ? S_IRUSR : 0) | (b & 2 ? S_IRGRP : 0) | (b & 1 ? S_IROTH : 0)};
			if (rnd(2))
				continue;
			struct wf_perm_acl *a = &acls[i];
			memset(a, 0, sizeof *a);
			a->group_obj = rnd(2);
			a->n = rnd(4);
			for (uint32_t k = 0; k < a->n; k++) {
				a->e[k].group = rnd(2);
				a->e[k].id = 1 + rnd(a->e[k].group ? NG - 1 : NU - 1);
				a->e[k].ok = rnd(2);
			}
			need[i].acl = a;
		}
		struct wf_perm p = wf_perm_all(need, n);
		ck_assert_ptr_null(p.acl);
		for (unsigned u = 1; u < NU; u++) {
			bool all = true;
			for (size_t i = 0; i < n; i++)
				all = all && can_pass(u, &need[i]);
			bool gets = can_read(u, p.uid, p.gid, p.mode);
			if (gets && !all) {
				for (size_t i = 0; i < n; i++)
					print_need(i, &need[i]);
				ck_abort_msg("iter %d: user %u reads the result (%o %u:%u) but not every need", iter, u,
					     (unsigned)p.mode, (unsigned)p.uid, (unsigned)p.gid);
			}
			granted += gets;
		}
		bool named = true;
		for (size_t i = 0; i < n; i++)
			named = named && p.uid != need[i].uid;
		named_owner += named && p.mode;
	}
	ck_assert_uint_gt(granted, 10000);
	ck_assert_uint_gt(named_owner, 0); /* a named user shown as the owner, sometimes */
}
END_TEST

/* A folder's ACL as the kernel stores it: named user 7 may search, the
 * owning group not; what wf_perm_all makes of it; ACLs not understood. */
START_TEST(test_acl_parse)
{
	/* user::rwx user:7:r-x group::r-- mask::r-x other::--- */
	uint8_t v[] = {2, 0, 0, 0, 1, 0, 7, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 5, 0, 7, 0, 0, 0,
		       4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x10, 0, 5, 0, 0xff, 0xff, 0xff, 0xff,
		       0x20, 0, 0, 0, 0xff, 0xff, 0xff, 0xff};
	struct wf_perm_acl a;
	ck_assert(wf_perm_acl_parse(&a, v, sizeof v, 1));
	ck_assert_uint_eq(a.n, 1);
	ck_assert(!a.group_obj);
	ck_assert(a.e[0].ok && !a.e[0].group && a.e[0].id == 7);
	/* read access: group::r-- and the mask grant it */
	ck_assert(wf_perm_acl_parse(&a, v, sizeof v, 4));
	ck_assert(a.group_obj);
	/* a mask without x: user 7 refused after all */
	v[30] = 4;
	ck_assert(wf_perm_acl_parse(&a, v, sizeof v, 1));
	ck_assert(!a.e[0].ok);
	v[30] = 5;
	/* the folder (root's, mode 0750 as the ACL shows it) and a 0644 file
	 * in it: user 7 alone, shown as its owner */
	ck_assert(wf_perm_acl_parse(&a, v, sizeof v, 1));
	struct wf_perm need[2] = {need_file(0, 0, 0644), need_dir(0, 0, 0750)};
	need[1].acl = &a;
	struct wf_perm r = wf_perm_all(need, 2);
	ck_assert_int_eq(r.uid, 7);
	ck_assert_int_eq(r.mode, 0400);
	/* not understood: a bad version, a ragged size, an unknown tag, named
	 * entries without a mask, no owning group's entry */
	v[0] = 3;
	ck_assert(!wf_perm_acl_parse(&a, v, sizeof v, 1));
	v[0] = 2;
	ck_assert(!wf_perm_acl_parse(&a, v, sizeof v - 1, 1));
	v[36] = 0x40;
	ck_assert(!wf_perm_acl_parse(&a, v, sizeof v, 1));
	v[36] = 0x20;
	ck_assert(!wf_perm_acl_parse(&a, v, 28, 1));
	ck_assert(!wf_perm_acl_parse(&a, v, 12, 1));
	ck_assert(wf_perm_acl_parse(&a, v, sizeof v, 1));
}
END_TEST

/* ------------------------------------------- real folders (wf_perm_path) */

static char base[64];

static void mk(const char *rel, mode_t mode, bool dir)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", base, rel);
	if (dir)
		ck_assert_int_eq(mkdir(p, mode), 0);
	else
		ck_assert_int_eq(close(open(p, O_CREAT | O_WRONLY, mode)), 0);
	ck_assert_int_eq(chmod(p, mode), 0); /* whatever the umask */
}

static void ln(const char *target, const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", base, rel);
	ck_assert_int_eq(symlink(target, p), 0);
}

/* wf_perm_path of base/rel, the file's stat followed; mode 0777 when it
 * has none (a loop, a dangling link). */
static struct wf_perm path_perm(const char *rel)
{
	char p[256], err[WF_ERRLEN];
	snprintf(p, sizeof p, "%s/%s", base, rel);
	struct stat st = {.st_uid = getuid(), .st_gid = getgid(), .st_mode = S_IFREG | 0644};
	stat(p, &st);
	struct wf_perm r;
	ck_assert_int_eq(wf_perm_path(p, &st, &r, err), WF_OK);
	return r;
}

/* A minimal access ACL (user::rw-, user:12345:---, group::r--, mask::r--,
 * other::r--; with x for a folder): the bits still say 0644 (0755), while
 * user 12345 gets nothing. */
static bool set_acl(const char *rel, bool dir)
{
	uint8_t acl[] = {2, 0, 0, 0, 1, 0, 6, 0, 0xff, 0xff, 0xff, 0xff, 2, 0, 0, 0, 0x39, 0x30, 0, 0,
			 4, 0, 4, 0, 0xff, 0xff, 0xff, 0xff, 0x10, 0, 4, 0, 0xff, 0xff, 0xff, 0xff,
			 0x20, 0, 4, 0, 0xff, 0xff, 0xff, 0xff};
	for (size_t i = 4; dir && i < sizeof acl; i += 8)
		if (acl[i] != 2)
			acl[i + 2] |= 1;
	char p[256];
	snprintf(p, sizeof p, "%s/%s", base, rel);
	if (setxattr(p, "system.posix_acl_access", acl, sizeof acl, 0) == 0)
		return true;
	fprintf(stderr, "check_perm: no ACL on %s (%s): the ACL cases are not checked\n", p, strerror(errno));
	return false;
}

START_TEST(test_path_folders)
{
	snprintf(base, sizeof base, "/tmp/check_perm.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	ck_assert_int_eq(chmod(base, 0755), 0);
	mk("open", 0755, true);
	mk("open/f", 0644, false);
	mk("closed", 0700, true);
	mk("closed/f", 0644, false);
	mk("grp", 0750, true);
	mk("grp/f", 0644, false);
	mk("snap", 0755, true);
	ln("../closed/f", "snap/to_closed");
	ln("../open/f", "snap/to_open");
	ln("to_closed", "snap/chain"); /* a link to a link */
	ln("../open/f", "closed/to_open");
	ln("loop", "open/loop");
	ln("nothing", "open/dangling");
	ck_assert_int_eq(path_perm("open/f").mode, 0444);
	struct wf_perm r = path_perm("closed/f");
	ck_assert_int_eq(r.mode, 0400);
	ck_assert_int_eq(r.uid, getuid());
	r = path_perm("grp/f");
	ck_assert_int_eq(r.mode, 0440);
	ck_assert_int_eq(r.gid, getgid());
	/* a link's target's folders, and the link's own */
	ck_assert_int_eq(path_perm("snap/to_open").mode, 0444);
	ck_assert_int_eq(path_perm("snap/to_closed").mode, 0400);
	ck_assert_int_eq(path_perm("snap/chain").mode, 0400);
	ck_assert_int_eq(path_perm("closed/to_open").mode, 0400);
	/* what cannot be examined lets nobody through */
	ck_assert_int_eq(path_perm("open/loop").mode, 0);
	ck_assert_int_eq(path_perm("open/dangling").mode, 0);
	ck_assert_int_eq(path_perm("open/missing").mode, 0);
	ck_assert_int_eq(path_perm("open/f/below").mode, 0);
	/* an ACL on the file or on a folder: its owner alone */
	mk("acl", 0755, true);
	mk("acl/f", 0644, false);
	mk("open/acl_f", 0644, false);
	if (set_acl("acl", true) && set_acl("open/acl_f", false)) {
		/* the bits alone would let everyone through; the ACL refuses user
		 * 12345: shown as 12345's, their bit clear, everyone else's set */
		r = path_perm("acl/f");
		ck_assert_int_eq(r.mode, 0044);
		ck_assert_int_eq(r.uid, 12345);
		r = path_perm("open/acl_f");
		ck_assert_int_eq(r.mode, 0044);
		ck_assert_int_eq(r.uid, 12345);
	}
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* A model of two parts (tensors a.w and b.w, one each) and a config.json
 * sidecar; the parts' and sidecar's stats are the caller's to set. */
static struct wf_model *two_part_model(void)
{
	struct wf_model *m = wf_model_new(WF_FMT_SAFETENSORS, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->metadata_json = strdup("{}\n");
	m->metadata_json_len = 3;
	m->parts = realloc(m->parts, 2 * sizeof *m->parts);
	memset(&m->parts[1], 0, sizeof m->parts[1]);
	m->parts[1].fd = -1;
	m->n_parts = 2;
	m->tensors = calloc(2, sizeof *m->tensors);
	const char *names[] = {"a.w", "b.w"};
	for (int i = 0; i < 2; i++) {
		struct wf_tensor *t = &m->tensors[i];
		t->name = strdup(names[i]);
		t->name_len = 3;
		t->type = WF_T_F32;
		t->ndim = 1;
		t->shape = malloc(sizeof *t->shape);
		t->shape[0] = t->nelems = 1;
		t->nbytes = t->size = 4;
		t->part = (uint32_t)i;
	}
	m->n_tensors = 2;
	m->sidecars = calloc(1, sizeof *m->sidecars);
	m->sidecars[0].name = strdup("config.json");
	m->sidecars[0].data = strdup("{}");
	m->sidecars[0].len = 2;
	m->n_sidecars = 1;
	return m;
}

/* The same model, its files at real paths: part a.w in a 0755 folder,
 * part b.w a link from a 0755 snapshot folder to a 0700 blobs folder,
 * config.json a link into the 0755 folder: each node's bits follow. */
START_TEST(test_node_folders)
{
	snprintf(base, sizeof base, "/tmp/check_perm.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(base));
	ck_assert_int_eq(chmod(base, 0755), 0);
	mk("open", 0755, true);
	mk("open/a", 0644, false);
	mk("open/cfg", 0644, false);
	mk("blobs", 0700, true);
	mk("blobs/b", 0644, false);
	mk("snap", 0755, true);
	ln("../blobs/b", "snap/b");
	ln("../open/cfg", "snap/config.json");
	ln("b", "snap/chain");          /* a link to the link */
	mk("closed2", 0700, true);
	ln("../blobs/b", "closed2/hop");
	ln("../closed2/hop", "snap/via"); /* through a link in a 0700 folder */
	struct wf_model *m = two_part_model();
	char p0[256];
	snprintf(p0, sizeof p0, "%s/open/a", base);
	m->parts[0].path = strdup(p0);
	ck_assert_int_eq(stat(p0, &m->parts[0].st), 0);
	snprintf(p0, sizeof p0, "%s/snap/b", base);
	m->parts[1].link = strdup(p0);
	m->parts[1].path = realpath(p0, NULL);
	ck_assert_int_eq(stat(p0, &m->parts[1].st), 0);
	snprintf(p0, sizeof p0, "%s/snap/config.json", base);
	m->sidecars[0].path = strdup(p0);
	ck_assert_int_eq(stat(p0, &m->sidecars[0].st), 0);
	char err[WF_ERRLEN];
	struct wf_tree *t;
	ck_assert_int_eq(wf_tree_build(&t, m, err), WF_OK);
	struct wf_perms p;
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[0]).mode, 0444);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[1]).mode, 0400);
	ck_assert_int_eq(wf_perm_node(&p, 0).mode, 0500); /* the root: both parts */
	uint32_t cfg = wf_tree_lookup(t, 0, "config.json", 11);
	ck_assert_int_eq(wf_perm_node(&p, cfg).mode, 0444);
	uint32_t tj = wf_tree_lookup(t, 0, "tensors.json", 12);
	ck_assert_int_eq(wf_perm_node(&p, tj).mode, 0400);
	wf_perms_free(&p);
	/* the blobs opened to all: everything is everyone's */
	snprintf(p0, sizeof p0, "%s/blobs", base);
	ck_assert_int_eq(chmod(p0, 0755), 0);
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[1]).mode, 0444);
	ck_assert_int_eq(wf_perm_node(&p, 0).mode, 0555);
	ck_assert_int_eq(wf_perm_node(&p, tj).mode, 0444);
	wf_perms_free(&p);
	/* the same blob through a chain of links: open; through a link in a
	 * 0700 folder: its owner's */
	const char *via[] = {"snap/chain", "snap/via"};
	const mode_t via_mode[] = {0444, 0400};
	for (int i = 0; i < 2; i++) {
		free(m->parts[1].link);
		snprintf(p0, sizeof p0, "%s/%s", base, via[i]);
		m->parts[1].link = strdup(p0);
		ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
		ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[1]).mode, via_mode[i]);
		wf_perms_free(&p);
	}
	free(m->parts[1].link);
	snprintf(p0, sizeof p0, "%s/snap/b", base);
	m->parts[1].link = strdup(p0);
	/* config.json's folder closed: config.json, and model.gguf if any */
	snprintf(p0, sizeof p0, "%s/open", base);
	ck_assert_int_eq(chmod(p0, 0711), 0);
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	ck_assert_int_eq(wf_perm_node(&p, cfg).mode, 0444);
	snprintf(p0, sizeof p0, "%s/snap", base);
	ck_assert_int_eq(chmod(p0, 0700), 0);
	wf_perms_free(&p);
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	ck_assert_int_eq(wf_perm_node(&p, cfg).mode, 0400);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[0]).mode, 0444);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[1]).mode, 0400);
	ck_assert_int_eq(p.gguf.mode, 0400);
	ck_assert_int_eq(p.strict.mode, 0400);
	wf_perms_free(&p);
	wf_tree_free(t);
	wf_model_free(m);
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", base);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* Two parts with different modes, a sidecar: each node's bits. */
START_TEST(test_node_perms)
{
	struct wf_model *m = two_part_model();
	m->parts[0].st = (struct stat){.st_uid = 5, .st_gid = 6, .st_mode = S_IFREG | 0644};
	m->parts[1].st = (struct stat){.st_uid = 5, .st_gid = 6, .st_mode = S_IFREG | 0600};
	m->sidecars[0].st = (struct stat){.st_uid = 9, .st_gid = 10, .st_mode = S_IFREG | 0604};
	char err[WF_ERRLEN];
	struct wf_tree *t;
	ck_assert_int_eq(wf_tree_build(&t, m, err), WF_OK);
	struct wf_perms p;
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	struct wf_perm r = wf_perm_node(&p, t->tensor_node[0]);
	ck_assert_int_eq(r.mode, 0444);
	r = wf_perm_node(&p, t->tensor_node[1]);
	ck_assert_int_eq(r.mode, 0400);
	r = wf_perm_node(&p, 0); /* the root: strictest, searchable where readable */
	ck_assert_int_eq(r.mode, 0500);
	ck_assert_int_eq(r.uid, 5);
	uint32_t cfg = wf_tree_lookup(t, 0, "config.json", 11);
	ck_assert_uint_ne(cfg, WF_NO_NODE);
	r = wf_perm_node(&p, cfg);
	ck_assert_int_eq(r.mode, 0404);
	ck_assert_int_eq(r.uid, 9);
	ck_assert_int_eq(r.gid, 10);
	uint32_t tj = wf_tree_lookup(t, 0, "tensors.json", 12);
	ck_assert_int_eq(wf_perm_node(&p, tj).mode, 0400);
	uint32_t ms = wf_tree_lookup(t, 0, "model.safetensors", 17);
	ck_assert_int_eq(wf_perm_node(&p, ms).mode, 0400);
	/* an index, if any, counts as well */
	m->has_index_st = true;
	m->index_st = (struct stat){.st_uid = 5, .st_gid = 6, .st_mode = S_IFREG | 0000};
	m->parts[1].st.st_mode = S_IFREG | 0644;
	wf_perms_free(&p);
	ck_assert_int_eq(wf_perms_init(&p, t, m, err), WF_OK);
	ck_assert_int_eq(wf_perm_node(&p, tj).mode, 0);
	ck_assert_int_eq(wf_perm_node(&p, t->tensor_node[1]).mode, 0444);
	wf_perms_free(&p);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("perm");
	TCase *tc = tcase_create("perm");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_all_never_widens);
	tcase_add_test(tc, test_all_same_owner);
	tcase_add_test(tc, test_all_folders);
	tcase_add_test(tc, test_all_acl_never_widens);
	tcase_add_test(tc, test_acl_parse);
	tcase_add_test(tc, test_path_folders);
	tcase_add_test(tc, test_node_folders);
	tcase_add_test(tc, test_node_perms);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
