/* check_usage.c - unit tests for the sizes the mount reports (wf_usage.c):
 * du (the sum of st_blocks) and df (statfs) must agree, directories have a
 * size, and nothing reads as sparse. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"
#include "mount/wf_mount.h"
#include "mount/wf_usage.h"

/* A safetensors-shaped model whose tensors have the given names and view
 * sizes (the sizes need not match a real file: only the tree is built). */
static struct wf_model *model_of(const char *const *names, const uint64_t *sizes, size_t n)
{
	struct wf_model *m = fixture_model(n);
	for (size_t i = 0; i < n; i++)
		fixture_tensor(m, i, names[i], strlen(names[i]), WF_T_F32, 1, (const uint64_t[]){sizes[i] / 4}, 0);
	return m;
}

static struct wf_tree *tree_of(const struct wf_model *m)
{
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_mount_tree(&t, m, NULL, err) == WF_OK, "wf_mount_tree: %s", err);
	return t;
}

static uint32_t node(const struct wf_tree *t, const char *a, const char *b)
{
	uint32_t n = wf_tree_lookup(t, 0, a, strlen(a));
	if (b && n != WF_NO_NODE)
		n = wf_tree_lookup(t, n, b, strlen(b));
	ck_assert_uint_ne(n, WF_NO_NODE);
	return n;
}

START_TEST(test_file_sizes)
{
	const char *names[] = {"a.empty", "a.one", "a.page", "a.page1", "big"};
	const uint64_t sizes[] = {0, 4, 4096, 4100, (uint64_t)3 << 30};
	struct wf_model *m = model_of(names, sizes, 5);
	struct wf_tree *t = tree_of(m);
	for (size_t i = 0; i < 5; i++) {
		uint32_t n = t->tensor_node[i];
		ck_assert_uint_eq(wf_usage_size(t, n), sizes[i]);
		uint64_t blocks = wf_usage_blocks(t, n);
		ck_assert_uint_eq(blocks % 8, 0);                  /* whole 4 KiB fragments */
		ck_assert_uint_ge(blocks * 512, sizes[i]);          /* never sparse */
		ck_assert_uint_lt(blocks * 512, sizes[i] + 4096);   /* and no more than one fragment over */
	}
	ck_assert_uint_eq(wf_usage_blocks(t, t->tensor_node[0]), 0);
	ck_assert_uint_eq(wf_usage_blocks(t, t->tensor_node[1]), 8);
	ck_assert_uint_eq(wf_usage_blocks(t, t->tensor_node[2]), 8);
	ck_assert_uint_eq(wf_usage_blocks(t, t->tensor_node[3]), 16);
	/* the generated files have their length */
	uint32_t mj = node(t, "metadata.json", NULL);
	ck_assert_uint_eq(wf_usage_size(t, mj), 3);
	ck_assert_uint_eq(wf_usage_blocks(t, mj), 8);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

START_TEST(test_dir_sizes)
{
	/* a small directory is one fragment; one with 300 long names is more,
	 * growing with its entries as ext4's does */
	enum { N = 300 };
	const char *names[N + 1];
	uint64_t sizes[N + 1];
	static char buf[N][64];
	for (int i = 0; i < N; i++) {
		snprintf(buf[i], sizeof buf[i], "wide.%040d", i);
		names[i] = buf[i];
		sizes[i] = 4;
	}
	names[N] = "small.x";
	sizes[N] = 4;
	struct wf_model *m = model_of(names, sizes, N + 1);
	struct wf_tree *t = tree_of(m);
	uint32_t small = node(t, "small", NULL), wide = node(t, "wide", NULL);
	ck_assert_uint_eq(wf_usage_size(t, 0), 4096);
	ck_assert_uint_eq(wf_usage_size(t, small), 4096);
	ck_assert_uint_eq(wf_usage_blocks(t, small), 8);
	/* 300 entries of 8 + 40 bytes, plus "." and "..": 14424 -> 16384 */
	ck_assert_uint_eq(wf_usage_size(t, wide), 16384);
	ck_assert_uint_eq(wf_usage_blocks(t, wide), 32);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

START_TEST(test_usage_is_du)
{
	const char *names[] = {"blk.0.q", "blk.0.k", "blk.1.q", "out", "x"};
	const uint64_t sizes[] = {4, 8192, 1 << 20, 12, 0};
	struct wf_model *m = model_of(names, sizes, 5);
	struct wf_tree *t = tree_of(m);
	uint64_t du = 0; /* what `du -s -B1` adds up */
	for (uint32_t i = 0; i < t->n_nodes; i++)
		du += wf_usage_blocks(t, i) * 512;
	struct wf_usage u;
	wf_usage_get(t, &u);
	ck_assert_uint_eq(u.frsize, 4096);
	ck_assert_uint_eq(u.files, t->n_nodes);
	ck_assert_uint_eq(u.blocks * u.frsize, du);
	/* root, blk, blk/0, blk/1: 4 directories of 4 KiB; files 4 + 8 + 1024 + 4
	 * KiB + 0; metadata.json and tensors.json one fragment each */
	uint32_t st = node(t, "model.safetensors", NULL);
	ck_assert_uint_ne(st, WF_NO_NODE);
	/* and the metadata folder (one fragment), WEIGHTFS.txt (one, it is
	 * small) and model.safetensors, which holds every tensor again behind
	 * its header */
	ck_assert_uint_lt(wf_usage_size(t, node(t, "WEIGHTFS.txt", NULL)), 4096);
	/* and model.gguf (every tensor as stored: no config.json names an architecture) */
	uint32_t gg = node(t, "model.gguf", NULL);
	ck_assert_uint_ne(gg, WF_NO_NODE);
	ck_assert_uint_eq(u.blocks, 4 + 1 + 2 + 256 + 1 + 0 + 2 + 1 + 1 + wf_usage_blocks(t, st) / 8 +
					    wf_usage_blocks(t, gg) / 8);
	ck_assert_uint_ge(wf_usage_size(t, st), 4 + 8192 + (1 << 20) + 12);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("usage");
	TCase *tc = tcase_create("sizes");
	tcase_add_test(tc, test_file_sizes);
	tcase_add_test(tc, test_dir_sizes);
	tcase_add_test(tc, test_usage_is_du);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
