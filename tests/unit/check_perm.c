/* check_perm.c - unit tests for the owner, group and mode of each node
 * (wf_perm.c): a node never lets a user read what the files behind it
 * would not, and shows a single file's bits as they are. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

START_TEST(test_strictest_never_widens)
{
	unsigned granted = 0;
	for (int iter = 0; iter < 200000; iter++) {
		struct stat st[3];
		const struct stat *sp[3];
		size_t n = 1 + rnd(3);
		for (size_t i = 0; i < n; i++) {
			memset(&st[i], 0, sizeof st[i]);
			st[i].st_uid = 1 + rnd(NU - 1);
			st[i].st_gid = 1 + rnd(NG - 1);
			st[i].st_mode = S_IFREG | rnd(01000);
			sp[i] = &st[i];
		}
		struct wf_perm p = wf_perm_strictest(sp, n);
		ck_assert_int_eq(p.mode & ~(mode_t)0444, 0);
		for (unsigned u = 1; u < NU; u++) {
			bool all = true;
			for (size_t i = 0; i < n; i++)
				all = all && can_read(u, st[i].st_uid, st[i].st_gid, st[i].st_mode);
			bool gets = can_read(u, p.uid, p.gid, p.mode);
			if (gets && !all)
				ck_abort_msg("iter %d: user %u reads the result (%o %u:%u) but not every file", iter, u,
					     (unsigned)p.mode, (unsigned)p.uid, (unsigned)p.gid);
			granted += gets;
		}
		if (n == 1) /* one file: its own bits, unchanged */
			ck_assert_int_eq(p.mode, st[0].st_mode & 0444);
	}
	ck_assert_uint_gt(granted, 10000); /* not a rule that denies everyone */
}
END_TEST

START_TEST(test_strictest_same_owner)
{
	struct stat a = {.st_uid = 7, .st_gid = 8, .st_mode = S_IFREG | 0644};
	struct stat b = {.st_uid = 7, .st_gid = 8, .st_mode = S_IFREG | 0640};
	const struct stat *sp[] = {&a, &b};
	struct wf_perm p = wf_perm_strictest(sp, 2);
	ck_assert_int_eq(p.uid, 7);
	ck_assert_int_eq(p.gid, 8);
	ck_assert_int_eq(p.mode, 0440);
	struct stat c = {.st_uid = 7, .st_gid = 9, .st_mode = S_IFREG | 0640};
	sp[1] = &c;
	ck_assert_int_eq(wf_perm_strictest(sp, 2).mode, 0400);
}
END_TEST

/* Two parts with different modes, a sidecar: each node's bits. */
START_TEST(test_node_perms)
{
	struct wf_model *m = wf_model_new(WF_FMT_SAFETENSORS, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->metadata_json = strdup("{}\n");
	m->metadata_json_len = 3;
	m->parts = realloc(m->parts, 2 * sizeof *m->parts);
	memset(&m->parts[1], 0, sizeof m->parts[1]);
	m->parts[1].fd = -1;
	m->n_parts = 2;
	m->parts[0].st = (struct stat){.st_uid = 5, .st_gid = 6, .st_mode = S_IFREG | 0644};
	m->parts[1].st = (struct stat){.st_uid = 5, .st_gid = 6, .st_mode = S_IFREG | 0600};
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
	m->sidecars[0].st = (struct stat){.st_uid = 9, .st_gid = 10, .st_mode = S_IFREG | 0604};
	m->n_sidecars = 1;
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
	tcase_add_test(tc, test_strictest_never_widens);
	tcase_add_test(tc, test_strictest_same_owner);
	tcase_add_test(tc, test_node_perms);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
