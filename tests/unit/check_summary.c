/* check_summary.c - unit tests for what a desktop sees: WEIGHTFS.txt
 * (wf_summary.c) and the dtype suffixes of -o suffix (wf_view_suffix and
 * their names in wf_tree.c), against the mime XML that types them.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "base/wf_buf.h"
#include "model/wf_model.h"
#include "model/wf_open.h"
#include "view/wf_view.h"
#include "fixture.h"
#include "mount/wf_mount.h"
#include "mount/wf_summary.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"

#ifndef DEMO_MODEL
#define DEMO_MODEL "tests/data/ggml-oracle/mixed_llama_tiny.gguf"
#endif
#ifndef MIME_XML
#define MIME_XML "packaging/weightfs-mime.xml"
#endif

/* A model of n tensors: name i from names(i), type from types(i), shape
 * [2, 256] (whole blocks of every type), views set for `out`. */
struct spec {
	const char *name;
	int type;
};

static struct wf_model *model_of(const struct spec *sp, size_t n, enum wf_vk out)
{
	struct wf_model *m = fixture_model(n);
	char err[WF_ERRLEN];
	for (size_t i = 0; i < n; i++) {
		struct wf_tensor *t = fixture_tensor(m, i, sp[i].name, strlen(sp[i].name), sp[i].type, 2,
						     (const uint64_t[]){2, 256}, 0);
		ck_assert_int_eq(wf_tensor_set_view(t, out, err), WF_OK);
	}
	return m;
}

static struct wf_tree *tree_of(const struct wf_model *m, bool suffix)
{
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	enum wf_err rc = wf_mount_tree(&t, m, &(struct wf_tree_opts){.suffix = suffix}, err);
	ck_assert_msg(rc == WF_OK, "wf_mount_tree: %s", err);
	return t;
}

/* The summary as the tree serves it, NUL-terminated (the tree's copy is). */
static const char *summary_of(const struct wf_tree *t)
{
	uint32_t n = wf_tree_lookup(t, 0, WF_SUMMARY_NAME, strlen(WF_SUMMARY_NAME));
	ck_assert_uint_ne(n, WF_NO_NODE);
	ck_assert_int_eq(t->nodes[n].kind, WF_NODE_BLOB);
	ck_assert_uint_eq(t->nodes[n].blob_len, strlen(t->nodes[n].blob));
	return t->nodes[n].blob;
}

static void has(const char *text, const char *want)
{
	ck_assert_msg(strstr(text, want) != NULL, "summary lacks \"%s\":\n%.2500s", want, text);
}

static char *path_of(const struct wf_tree *t, size_t tensor)
{
	struct wf_buf b = {0};
	wf_tree_path(t, t->tensor_node[tensor], &b);
	ck_assert(wf_buf_finish(&b));
	return b.data;
}

/* ---- the summary ---- */

START_TEST(test_summary_demo)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_msg(wf_open_file(&m, DEMO_MODEL, err) == WF_OK, "%s: %s", DEMO_MODEL, err);
	ck_assert_int_eq(wf_model_set_view(m, WF_VK_F32, err), WF_OK);
	struct wf_tree *t = tree_of(m, true);
	const char *s = summary_of(t);
	has(s, "Model:        Oracle Tiny Llama\n");
	has(s, "Architecture: llama\n");
	has(s, "Source:       GGUF v3, ");
	has(s, "Parameters:   164,168 (164.2K) in 22 tensors\n");
	has(s, "raw little-endian");
	has(s, "token_embd.weight is token_embd/weight.f32.");
	has(s, "A file's suffix names its dtype: .f32 float32.\n");
	has(s, "user.weightfs.shape");
	has(s, "  Q8_0                3        57.3K     59.5 KiB  float32             224.0 KiB\n");
	has(s, "Layers blk.N: 2 layers, 18 tensors\n");
	has(s, "  layer  attn_norm  attn_q  attn_k  attn_v  attn_output  ffn_norm  ffn_gate  ffn_up  ffn_down  params\n");
	has(s, "  0      F32        Q4_0    Q4_1    Q5_0    Q5_1         F32       IQ4_NL    MXFP4   Q4_K       61.6K\n");
	has(s, "  1      F32        BF16    F16     NVFP4   Q2_0         F32       Q8_0      IQ4_NL  Q6_K       61.6K\n");
	has(s, "  output.weight       Q8_0     [320, 64]       output/weight.f32\n");
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Alike layers share a row; experts are one column "kind.*" with a count. */
START_TEST(test_summary_rows_merge)
{
	enum { L = 32, E = 8 };
	struct spec sp[L * (2 + E)];
	char names[L * (2 + E)][48];
	size_t n = 0;
	for (int l = 0; l < L; l++) {
		snprintf(names[n], sizeof names[n], "model.layers.%d.q.weight", l);
		sp[n] = (struct spec){names[n], l < 30 ? WF_T_Q8_0 : WF_T_F16};
		n++;
		snprintf(names[n], sizeof names[n], "model.layers.%d.norm.bias", l);
		sp[n] = (struct spec){names[n], WF_T_F32};
		n++;
		for (int e = 0; e < E; e++) {
			snprintf(names[n], sizeof names[n], "model.layers.%d.experts.%d.up.weight", l, e);
			sp[n] = (struct spec){names[n], WF_T_Q4_K};
			n++;
		}
	}
	struct wf_model *m = model_of(sp, n, WF_VK_F32);
	struct wf_tree *t = tree_of(m, false);
	const char *s = summary_of(t);
	has(s, "Layers model.layers.N: 32 layers, 320 tensors\n");
	has(s, "  layer  q     norm.bias  experts.*.up  params\n");
	has(s, "  0-29   Q8_0  F32        8xQ4_K          5.1K\n");
	has(s, "  30-31  F16   F32        8xQ4_K          5.1K\n");
	ck_assert_ptr_null(strstr(s, "Other tensors"));
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* 100,000 tensors in layers that never merge: the table stops after
 * WF_SUMMARY_ROWS rows, the text stays small and quick. */
START_TEST(test_summary_bounded)
{
	enum { N = 100000 };
	struct spec *sp = malloc(N * sizeof *sp);
	char(*names)[24] = malloc(N * sizeof *names);
	ck_assert(sp && names);
	for (size_t i = 0; i < N; i++) {
		snprintf(names[i], sizeof names[i], "blk.%zu.w", i);
		sp[i] = (struct spec){names[i], i % 2 ? WF_T_F16 : WF_T_F32};
	}
	struct wf_model *m = model_of(sp, N, WF_VK_F32);
	struct wf_tree *t = tree_of(m, true);
	struct timespec a, b;
	char *text;
	size_t len;
	char err[WF_ERRLEN];
	clock_gettime(CLOCK_MONOTONIC, &a);
	ck_assert_int_eq(wf_summary(t, "metadata", &text, &len, err), WF_OK);
	clock_gettime(CLOCK_MONOTONIC, &b);
	double secs = (double)(b.tv_sec - a.tv_sec) + (double)(b.tv_nsec - a.tv_nsec) / 1e9;
	ck_assert_msg(secs < 5.0, "summary of %d tensors took %.2f s", N, secs);
	ck_assert_uint_lt(len, 16384);
	has(text, "Layers blk.N: 100000 layers, 100000 tensors\n");
	has(text, "  ... 99960 more layers (40-99999): see tensors.json\n");
	has(text, "Parameters:   51,200,000 (51.2M) in 100000 tensors\n");
	has(text, "A file's suffix names its dtype: .f32 float32.\n");
	free(text);
	wf_tree_free(t);
	wf_model_free(m);
	free(sp);
	free(names);
}
END_TEST

/* More stacks and kinds than the table shows, and names a text file
 * cannot hold as they are: the summary stays valid, printable UTF-8. */
START_TEST(test_summary_limits)
{
	enum { S = WF_SUMMARY_STACKS + 3, K = WF_SUMMARY_KINDS + 5, O = WF_SUMMARY_OTHERS + 4 };
	struct spec sp[S + K + O + 4];
	char names[S + K + O + 3][32];
	size_t n = 0;
	/* first, so that its stack gets a table */
	sp[n++] = (struct spec){"bad\xff\x01\n.3.k\x7f", WF_T_BOOL};
	sp[n++] = (struct spec){"caf\xc3\xa9", WF_T_F32};
	/* valid UTF-8 that reorders a line (U+202E) or is a C1 CSI (U+009B) */
	sp[n++] = (struct spec){"rtl\xe2\x80\xae" "exe.\xc2\x9b" "31m", WF_T_F32};
	for (int i = 0; i < S; i++, n++) {
		snprintf(names[n], sizeof names[n], "stack%d.0.w", i);
		sp[n] = (struct spec){names[n], WF_T_F32};
	}
	for (int i = 0; i < K; i++, n++) {
		snprintf(names[n], sizeof names[n], "stack0.1.kind%d", i);
		sp[n] = (struct spec){names[n], WF_T_I8};
	}
	for (int i = 0; i < O; i++, n++) {
		snprintf(names[n], sizeof names[n], "loose%d", i);
		sp[n] = (struct spec){names[n], WF_T_U8};
	}
	sp[n++] = (struct spec){"", WF_T_F32};
	struct wf_model *m = model_of(sp, n, WF_VK_F32);
	struct wf_tree *t = tree_of(m, true);
	const char *s = summary_of(t);
	has(s, "  more");
	has(s, "(more: tensors of kinds without a column of their own)");
	has(s, "more: see tensors.json\n");
	has(s, "Layers bad???.N: 1 layer, 1 tensor\n");
	has(s, "  k?  ");
	has(s, "  caf\xc3\xa9 ");
	has(s, "rtl???exe.??31m");
	has(s, ".bool bool");
	/* lines of printable characters (wf_printable_seq: no C1 or bidi control) */
	size_t len = strlen(s);
	for (size_t i = 0; i < len;) {
		size_t l = s[i] == '\n' ? 1 : wf_printable_seq((const uint8_t *)s + i, len - i);
		ck_assert_msg(l != 0, "byte 0x%02x at %zu", (unsigned char)s[i], i);
		i += l;
	}
	/* stacks past the limit list their tensors among the others */
	int stacks = 0;
	for (const char *p = s; (p = strstr(p, "\nLayers ")); p++)
		stacks++;
	ck_assert_int_eq(stacks, WF_SUMMARY_STACKS);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

START_TEST(test_summary_empty)
{
	struct wf_model *m = model_of(NULL, 0, WF_VK_F32);
	struct wf_tree *t = tree_of(m, true);
	const char *s = summary_of(t);
	has(s, "Parameters:   0 (0) in 0 tensors\n");
	has(s, "Architecture: (not stated)\n");
	ck_assert_ptr_null(strstr(s, "Layers "));
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* A model folder's own WEIGHTFS.txt is left out; config.json names it. */
START_TEST(test_summary_sidecars)
{
	struct spec sp[] = {{"w", WF_T_F32}};
	struct wf_model *m = model_of(sp, 1, WF_VK_F32);
	m->sidecars = calloc(2, sizeof *m->sidecars);
	ck_assert_ptr_nonnull(m->sidecars);
	m->sidecars[0].name = strdup(WF_SUMMARY_NAME);
	m->sidecars[0].data = strdup("theirs");
	m->sidecars[0].len = 6;
	m->sidecars[1].name = strdup("config.json");
	m->sidecars[1].data = strdup("{\"model_type\": \"mistral\", \"_name_or_path\": \"org/m\"}");
	m->sidecars[1].len = strlen(m->sidecars[1].data);
	m->n_sidecars = 2;
	struct wf_tree *t = tree_of(m, false);
	const char *s = summary_of(t);
	has(s, "Model:        org/m\n");
	has(s, "Architecture: mistral\n");
	ck_assert_ptr_null(strstr(s, "theirs"));
	ck_assert_uint_ne(wf_tree_lookup(t, 0, "config.json", 11), WF_NO_NODE);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* ---- -o suffix ---- */

START_TEST(test_suffix_names)
{
	struct spec sp[] = {
		{"blk.0.attn_q.weight", WF_T_Q4_0}, {"blk.0.norm", WF_T_F16}, {"ids", WF_T_I64},
		{"mask", WF_T_BOOL}, {"a.b", WF_T_F32}, {"a.b.c", WF_T_U16}, {"c", WF_T_C64},
		{"e4", WF_T_F8_E4M3}, {"bf", WF_T_BF16},
	};
	static const char *const f32[] = {"blk/0/attn_q/weight.f32", "blk/0/norm.f32", "ids.i64", "mask.bool",
					  "a/b.f32", "a/b/c.u16", "c.c64", "e4.f32", "bf.f32"};
	static const char *const stored[] = {"blk/0/attn_q/weight.u8", "blk/0/norm.f16", "ids.i64",
					     "mask.bool", "a/b.f32", "a/b/c.u16", "c.c64", "e4.f8e4m3", "bf.bf16"};
	for (int pass = 0; pass < 2; pass++) {
		struct wf_model *m = model_of(sp, WF_ARRAY_LEN(sp), pass ? WF_VK_RAW : WF_VK_F32);
		struct wf_tree *t = tree_of(m, true);
		for (size_t i = 0; i < WF_ARRAY_LEN(sp); i++) {
			char *p = path_of(t, i);
			ck_assert_str_eq(p, pass ? stored[i] : f32[i]);
			free(p);
		}
		/* a.b is a file beside the folder a/b: no ".tensor" needed */
		uint32_t a = wf_tree_lookup(t, 0, "a", 1);
		ck_assert_int_eq(t->nodes[wf_tree_lookup(t, a, "b", 1)].kind, WF_NODE_DIR);
		wf_tree_free(t);
		wf_model_free(m);
	}
	/* -o npy wins over -o suffix */
	struct wf_model *m = model_of(sp, 1, WF_VK_F32);
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tree_build_opts(&t, m, &(struct wf_tree_opts){.npy = true, .suffix = true}, err), WF_OK);
	char *p = path_of(t, 0);
	ck_assert_str_eq(p, "blk/0/attn_q/weight.npy");
	free(p);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Long names keep NAME_MAX with the longest suffix and a "~N". */
START_TEST(test_suffix_long)
{
	static char a[301], b[301], c[256];
	memset(a, 'L', 300);
	memset(b, 'L', 300);
	b[299] = 'M';
	memset(c, 'x', 255);
	struct spec sp[] = {{a, WF_T_F8_E4M3FNUZ}, {b, WF_T_F8_E4M3FNUZ}, {c, WF_T_F32}};
	struct wf_model *m = model_of(sp, 3, WF_VK_RAW);
	struct wf_tree *t = tree_of(m, true);
	char *pa = path_of(t, 0), *pb = path_of(t, 1), *pc = path_of(t, 2);
	ck_assert_uint_le(strlen(pa), 255);
	ck_assert_uint_le(strlen(pc), 255);
	ck_assert_str_ne(pa, pb);
	ck_assert_ptr_nonnull(strstr(pa, "%~"));
	ck_assert_str_eq(pa + strlen(pa) - strlen(".f8e4m3fnuz"), ".f8e4m3fnuz");
	ck_assert_str_eq(pc + strlen(pc) - 4, ".f32");
	ck_assert_ptr_nonnull(strstr(pc, "%~")); /* 255 + 4 bytes did not fit */
	free(pa);
	free(pb);
	free(pc);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Every view of every type has a suffix, no two dtypes share one, none is
 * longer than WF_SUFFIX_MAX, and the mime XML has a glob for each. */
START_TEST(test_suffix_table)
{
	FILE *f = fopen(MIME_XML, "rb");
	ck_assert_msg(f != NULL, "%s", MIME_XML);
	static char xml[65536];
	size_t xl = fread(xml, 1, sizeof xml - 1, f);
	fclose(f);
	xml[xl] = '\0';
	const char *seen_dt[64], *seen_sx[64];
	size_t n_seen = 0;
	for (int id = 0; id < WF_T_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (!ty || ty->layer) /* decoded layers: float32, f16 or bf16 (check_hfq) */
			continue;
		static const enum wf_vk wants[] = {WF_VK_F32, WF_VK_F16, WF_VK_BF16, WF_VK_RAW};
		static const char *const want_names[] = {"f32", "f16", "bf16", "stored"};
		for (size_t w = 0; w < WF_ARRAY_LEN(wants); w++) {
			uint64_t shape[1] = {ty->blck * 4};
			struct wf_tensor t = {.name = (char *)"t", .name_len = 1, .type = id, .ndim = 1, .shape = shape};
			char err[WF_ERRLEN];
			ck_assert_int_eq(wf_tensor_sizes(&t, false, err), WF_OK);
			ck_assert_int_eq(wf_tensor_set_view(&t, wants[w], err), WF_OK);
			const char *dt = wf_view_dtype(&t);
			const char *sx = wf_dtype_suffix(dt);
			ck_assert_msg(sx != NULL, "%s (%s): no suffix for %s", ty->name, want_names[w], dt);
			ck_assert_str_eq(wf_view_suffix(&t), sx);
			ck_assert_uint_le(strlen(sx), WF_SUFFIX_MAX);
			char glob[64];
			snprintf(glob, sizeof glob, "<glob pattern=\"*.%s\"", sx);
			ck_assert_msg(strstr(xml, glob) != NULL, "%s has no %s", MIME_XML, glob);
			snprintf(glob, sizeof glob, "type=\"application/x-weightfs-%s\"", sx);
			ck_assert_msg(strstr(xml, glob) != NULL, "%s has no %s", MIME_XML, glob);
			size_t k = 0;
			while (k < n_seen && strcmp(seen_dt[k], dt) != 0) {
				ck_assert_msg(strcmp(seen_sx[k], sx) != 0, "%s and %s share .%s", seen_dt[k], dt, sx);
				k++;
			}
			if (k == n_seen && n_seen < WF_ARRAY_LEN(seen_dt)) {
				seen_dt[n_seen] = dt;
				seen_sx[n_seen++] = sx;
			}
		}
	}
	ck_assert_uint_ge(n_seen, 19);
	ck_assert(strstr(xml, "type=\"application/x-npy\"") && strstr(xml, "<glob pattern=\"*.npy\""));
}
END_TEST

static Suite *summary_suite(void)
{
	Suite *s = suite_create("summary");
	TCase *tc = tcase_create("summary");
	tcase_add_test(tc, test_summary_demo);
	tcase_add_test(tc, test_summary_rows_merge);
	tcase_add_test(tc, test_summary_bounded);
	tcase_add_test(tc, test_summary_limits);
	tcase_add_test(tc, test_summary_empty);
	tcase_add_test(tc, test_summary_sidecars);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	tc = tcase_create("suffix");
	tcase_add_test(tc, test_suffix_names);
	tcase_add_test(tc, test_suffix_long);
	tcase_add_test(tc, test_suffix_table);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(summary_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
