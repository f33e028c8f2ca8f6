/* check_attr.c - unit tests for the extended attributes (wf_attr.c): the
 * names a tensor's file lists, each one's value, and that every other name
 * or node has none. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mount/wf_attr.h"
#include "base/wf_buf.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"

/* Appends tensor `name` of type `type` and shape dims[0..ndim) to m; only
 * the tree is built, so no bytes back it. */
static void add_tensor(struct wf_model *m, const char *name, size_t name_len, int type, const uint64_t *dims,
		       uint32_t ndim)
{
	char err[WF_ERRLEN] = "";
	struct wf_tensor *t = &m->tensors[m->n_tensors];
	t->name = malloc(name_len + 1);
	t->shape = calloc(ndim ? ndim : 1, sizeof *t->shape);
	ck_assert(t->name && t->shape);
	memcpy(t->name, name, name_len + 1);
	t->name_len = name_len;
	m->n_tensors++;
	t->type = type;
	t->ndim = ndim;
	if (ndim)
		memcpy(t->shape, dims, ndim * sizeof *dims);
	ck_assert_msg(wf_tensor_sizes(t, false, err) == WF_OK, "%s", err);
}

static struct wf_model *model(void)
{
	struct wf_model *m = wf_model_new(WF_FMT_SAFETENSORS, NULL, 0);
	ck_assert_ptr_nonnull(m);
	m->tensors = calloc(3, sizeof *m->tensors);
	m->metadata_json = strdup("{}\n");
	ck_assert(m->tensors && m->metadata_json);
	m->metadata_json_len = 3;
	add_tensor(m, "blk.0.w", 7, WF_T_Q4_0, (const uint64_t[]){2, 64}, 2);
	add_tensor(m, "bias", 4, WF_T_I32, (const uint64_t[]){3}, 1);
	add_tensor(m, "odd\xff/\0x", 7, WF_T_BF16, NULL, 0); /* bytes the path must escape */
	return m;
}

/* The value of name on node idx, which must exist; the caller frees it. */
static char *get(const struct wf_tree *t, uint32_t idx, const char *name, size_t *len)
{
	struct wf_buf b = {0};
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_xattr_get(t, idx, name, &b, err) == WF_OK, "%s: %s", name, err);
	ck_assert(wf_buf_finish(&b));
	*len = b.len;
	return b.data;
}

static void expect(const struct wf_tree *t, uint32_t idx, const char *name, const char *want, size_t want_len)
{
	size_t len;
	char *v = get(t, idx, name, &len);
	ck_assert_msg(len == want_len && memcmp(v, want, len) == 0, "%s: got '%.*s'", name, (int)len, v);
	free(v);
}

static void expect_none(const struct wf_tree *t, uint32_t idx, const char *name)
{
	struct wf_buf b = {0};
	char err[WF_ERRLEN] = "";
	ck_assert_int_eq(wf_xattr_get(t, idx, name, &b, err), WF_ERR_RANGE);
	ck_assert_msg(err[0] != '\0', "%s: no message", name);
	ck_assert_uint_eq(b.len, 0);
	wf_buf_free(&b);
}

START_TEST(test_values)
{
	struct wf_model *m = model();
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_tree_build(&t, m, err) == WF_OK, "%s", err);
	uint32_t q = t->tensor_node[0], b = t->tensor_node[1], o = t->tensor_node[2];

	expect(t, q, "user.weightfs.shape", "[2, 64]", 7);
	expect(t, q, "user.weightfs.dtype", "float32", 7); /* decoded */
	expect(t, q, "user.weightfs.type", "Q4_0", 4);
	expect(t, q, "user.weightfs.name", "blk.0.w", 7);
	expect(t, b, "user.weightfs.shape", "[3]", 3);
	expect(t, b, "user.weightfs.dtype", "int32", 5); /* raw */
	expect(t, b, "user.weightfs.type", "I32", 3);
	expect(t, o, "user.weightfs.shape", "[]", 2);   /* a scalar */
	expect(t, o, "user.weightfs.type", "BF16", 4);
	expect(t, o, "user.weightfs.name", "odd\xff/\0x", 7); /* as stored, NUL and all */

	static const char *const bad[] = {"user.weightfs.nope", "user.weightfs.", "user.weightfs.shapex",
					  "user.weightfs.Shape", "user.other", "trusted.weightfs.shape",
					  "user.weightfs", "shape", ""};
	for (size_t i = 0; i < WF_ARRAY_LEN(bad); i++)
		expect_none(t, q, bad[i]);
	/* directories, generated files and no node at all have none */
	uint32_t mj = wf_tree_lookup(t, 0, "metadata.json", 13);
	ck_assert_uint_ne(mj, WF_NO_NODE);
	expect_none(t, 0, "user.weightfs.shape");
	expect_none(t, mj, "user.weightfs.name");
	expect_none(t, t->n_nodes, "user.weightfs.shape");
	expect_none(t, WF_NO_NODE, "user.weightfs.shape");
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* listxattr: the five names, each NUL-terminated, and every one of them
 * but sha256 (wf_xattr_sha256, which reads the tensor's bytes) answered
 * by wf_xattr_get; nothing for other nodes. */
START_TEST(test_list)
{
	struct wf_model *m = model();
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_tree_build(&t, m, err) == WF_OK, "%s", err);
	static const char want[] = "user.weightfs.shape\0user.weightfs.dtype\0user.weightfs.type\0"
				   "user.weightfs.name\0user.weightfs.sha256";
	size_t len = 99;
	const char *names = wf_xattr_list(t, t->tensor_node[1], &len);
	ck_assert_uint_eq(len, sizeof want);
	ck_assert_int_eq(memcmp(names, want, len), 0);
	for (const char *p = names; p < names + len; p += strlen(p) + 1) {
		size_t n;
		if (strcmp(p, "user.weightfs.sha256") != 0)
			free(get(t, t->tensor_node[1], p, &n));
	}
	ck_assert_uint_eq(len, sizeof want);
	wf_xattr_list(t, 0, &len);
	ck_assert_uint_eq(len, 0);
	wf_xattr_list(t, wf_tree_lookup(t, 0, "tensors.json", 12), &len);
	ck_assert_uint_eq(len, 0);
	wf_xattr_list(t, WF_NO_NODE, &len);
	ck_assert_uint_eq(len, 0);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* A value that cannot be held is WF_ERR_NOMEM, which FUSE turns into
 * ENOMEM rather than a short or missing attribute. */
START_TEST(test_nomem)
{
	struct wf_model *m = model();
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	ck_assert_msg(wf_tree_build(&t, m, err) == WF_OK, "%s", err);
	struct wf_buf b = {.oom = true}; /* as after a failed allocation */
	ck_assert_int_eq(wf_xattr_get(t, t->tensor_node[0], "user.weightfs.shape", &b, err), WF_ERR_NOMEM);
	wf_buf_free(&b);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

static Suite *attr_suite(void)
{
	Suite *s = suite_create("attr");
	TCase *tc = tcase_create("xattr");
	tcase_add_test(tc, test_values);
	tcase_add_test(tc, test_list);
	tcase_add_test(tc, test_nomem);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(attr_suite());
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
