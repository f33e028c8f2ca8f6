/* check_arch.c - unit tests for the architecture registry (src/arch/,
 * wf_arch_int.h): the engine that makes model.gguf, hf/ and diff's pairs
 * is driven by descriptors, so every registered row must be one the
 * lookups reach, and the name map walked both ways must give back each
 * of its row's parts. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

/* the row config.json's class cls selects: the first that lists it */
static const struct wf_arch *first_with_class(const char *cls, size_t *at)
{
	for (size_t i = 0; i < wf_arch_n_rows; i++)
		for (size_t k = 0; k < WF_ARRAY_LEN(wf_arch_rows[i]->hf) && wf_arch_rows[i]->hf[k]; k++)
			if (strcmp(wf_arch_rows[i]->hf[k], cls) == 0) {
				*at = i;
				return wf_arch_rows[i];
			}
	return NULL;
}

START_TEST(test_rows)
{
	ck_assert_uint_ge(wf_arch_n_rows, 18);
	ck_assert_uint_le(wf_arch_n_rows, WF_ARCH_ROWS_MAX);
	for (size_t i = 0; i < wf_arch_n_rows; i++) {
		const struct wf_arch *a = wf_arch_rows[i];
		ck_assert_msg(a->hf[0] && a->gguf && a->kvs && a->parts && a->parts[0], "row %zu incomplete", i);
		for (size_t j = 0; j < i; j++)
			ck_assert_msg(wf_arch_rows[j] != a, "%s registered twice", a->hf[0]);
		/* every class a config.json can name selects this row, but for
		 * hf[0] when it is only the class hf/ writes (Mistral3's
		 * MistralForCausalLM, which selects Llama's row) */
		for (size_t k = 0; k < WF_ARRAY_LEN(a->hf) && a->hf[k]; k++) {
			size_t at = 0;
			const struct wf_arch *b = first_with_class(a->hf[k], &at);
			ck_assert_msg(b == a || (k == 0 && at < i), "%s: class %s selects row %s", a->hf[0], a->hf[k],
				      b ? b->hf[0] : "none");
		}
		/* hf/ finds the row by its class */
		ck_assert_msg(wf_arch_row_of(a->hf[0], a->experts != NULL) == a, "%s: wf_arch_row_of", a->hf[0]);
		/* every alias resolves, to this row's name */
		for (size_t k = 0; k < WF_ARRAY_LEN(a->names) && a->names[k]; k++) {
			ck_assert_msg(a->canon != NULL, "%s: names without canon", a->hf[0]);
			ck_assert_msg(wf_arch_canon(a->names[k]) && strcmp(wf_arch_canon(a->names[k]), a->canon) == 0,
				      "%s: alias %s", a->hf[0], a->names[k]);
			ck_assert(wf_arch_permutes_qk(a->names[k]) == a->permute_qk);
			ck_assert(wf_arch_norm_plus_one(a->names[k]) == a->norm_plus_one);
		}
		/* config classes: one row per model_type */
		for (size_t k = 0; k < a->n_configs; k++)
			for (size_t j = 0; j < wf_arch_n_rows; j++)
				for (size_t l = 0; l < wf_arch_rows[j]->n_configs; l++)
					ck_assert_msg((j == i && l == k) || strcmp(a->configs[k].model_type,
										  wf_arch_rows[j]->configs[l].model_type) != 0,
						      "model_type %s twice", a->configs[k].model_type);
	}
	ck_assert_ptr_null(wf_arch_canon("gpt2"));
	ck_assert_ptr_null(wf_arch_canon(NULL));
}
END_TEST

/* GGUF part p of layer 3 -> HF -> GGUF under row a. */
static void round_trip(const struct wf_arch *a, const char *g)
{
	char hf[160], back[160], qk, qk2;
	bool norm, norm2;
	ck_assert_msg(wf_gguf_to_hf_name(a->hf[0], g, hf, sizeof hf, &qk, &norm), "%s: %s has no HF name", a->hf[0], g);
	ck_assert_msg(wf_hf_to_gguf_name(a->gguf, hf, strlen(hf), back, sizeof back, &qk2, &norm2),
		      "%s: %s (from %s) has no GGUF name", a->hf[0], hf, g);
	ck_assert_msg(strcmp(back, g) == 0, "%s: %s -> %s -> %s", a->hf[0], g, hf, back);
	ck_assert_msg(norm == norm2 || !a->norm_plus_one, "%s: %s: norm differs", a->hf[0], g);
	if (a->permute_qk)
		ck_assert_msg(qk == qk2, "%s: %s: q/k differs", a->hf[0], g);
}

START_TEST(test_name_map_inverse)
{
	static const char *const global[] = {"token_embd.weight", "output_norm.weight"};
	size_t n = 0;
	for (size_t i = 0; i < wf_arch_n_rows; i++) {
		const struct wf_arch *a = wf_arch_rows[i];
		for (size_t k = 0; k < WF_ARRAY_LEN(global); k++)
			round_trip(a, global[k]);
		if (!a->drop_lm_head)
			round_trip(a, "output.weight");
		for (const char *const *p = a->parts; *p; p++, n++) {
			char g[96];
			snprintf(g, sizeof g, "blk.3.%s.%s", *p, strcmp(*p, "exp_probs_b") == 0 ? "bias" : "weight");
			round_trip(a, g);
		}
	}
	ck_assert_uint_gt(n, 150);
}
END_TEST

/* The hooks and row fields hf/ and model.gguf are driven by agree with
 * each other, and diff's pairing is the registry's. */
START_TEST(test_hooks)
{
	size_t said = 0;
	for (size_t i = 0; i < wf_arch_n_rows; i++) {
		const struct wf_arch *a = wf_arch_rows[i];
		/* config.json says only tensors the converter generates */
		for (const char *const *s = a->hf_said; s && *s; s++, said++)
			ck_assert_msg(a->gen != NULL, "%s: says %s in config.json, but generates nothing", a->hf[0], *s);
		/* a row that writes its own rope_scaling has a config hook */
		ck_assert_msg(!a->hf_said || a->config, "%s: hf_said without a config hook to say it", a->hf[0]);
	}
	ck_assert_uint_eq(said, 4); /* rope_freqs twice (Llama, Mixtral), Phi-3's two factors */
	const char *g = "llama", *h = "mistral", *q = "qwen2";
	ck_assert_ptr_eq(wf_arch_pair_arch(g, h), h); /* a Mistral GGUF says llama */
	ck_assert_ptr_eq(wf_arch_pair_arch(g, g), g);
	ck_assert_ptr_eq(wf_arch_pair_arch(q, h), q); /* qwen2's row converts no Mistral */
	ck_assert_ptr_eq(wf_arch_pair_arch(g, NULL), g);
	ck_assert_ptr_eq(wf_arch_pair_arch(g, "gpt2"), g);
	const char *g3 = "gemma3";
	ck_assert_ptr_eq(wf_arch_pair_arch(g3, "gemma3_text"), g3); /* one row: the GGUF's name */
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arch");
	TCase *tc = tcase_create("registry");
	tcase_add_test(tc, test_rows);
	tcase_add_test(tc, test_name_map_inverse);
	tcase_add_test(tc, test_hooks);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
