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
#include "base/wf_buf.h"
#include "model/wf_st.h"

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
		/* ... and a row that generates tensors says them (hf/ would refuse its own model.gguf) */
		ck_assert_msg(!a->gen || a->hf_said, "%s: generates tensors config.json does not say", a->hf[0]);
	}
	/* rope_freqs five times (Llama, Mistral 3, SmolLM3, Granite, Mixtral), Phi-3's two factors */
	ck_assert_uint_eq(said, 7);
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

/* One BF16 tensor of shape [r] (c 0) or [r, c] in a safetensors header. */
static void st_put(struct wf_buf *b, uint64_t *off, const char *name, uint64_t r, uint64_t c)
{
	uint64_t n = 2 * r * (c ? c : 1);
	wf_buf_printf(b, "%s\"%s\":{\"dtype\":\"BF16\",\"shape\":[%llu", *off ? "," : "{", name, (unsigned long long)r);
	if (c)
		wf_buf_printf(b, ",%llu", (unsigned long long)c);
	wf_buf_printf(b, "],\"data_offsets\":[%llu,%llu]}", (unsigned long long)*off, (unsigned long long)(*off + n));
	*off += n;
}

/* Qwen3-30B-A3B's shape (48 layers of 128 experts, tiny widths: 18,867
 * tensors): model.gguf's plan has the converter's 579 tensors, each
 * stacked one a single 88-byte entry and a slot a slab, so the plan stays
 * within docs/security.md's 88 bytes a source tensor, with room to spare. */
START_TEST(test_plan_scale)
{
	enum { H = 16, MI = 8, V = 64, E = 128, L = 48, HD = 8 };
	struct wf_buf b = {0};
	uint64_t off = 0;
	char name[96];
	st_put(&b, &off, "model.embed_tokens.weight", V, H);
	for (int l = 0; l < L; l++) {
		static const char *const norms[] = {"input_layernorm", "post_attention_layernorm", "self_attn.q_norm",
						    "self_attn.k_norm"};
		static const char *const attn[] = {"q_proj", "k_proj", "v_proj", "o_proj"};
		for (int k = 0; k < 4; k++) {
			snprintf(name, sizeof name, "model.layers.%d.%s.weight", l, norms[k]);
			st_put(&b, &off, name, k < 2 ? H : HD, 0);
			snprintf(name, sizeof name, "model.layers.%d.self_attn.%s.weight", l, attn[k]);
			st_put(&b, &off, name, k == 1 || k == 2 ? HD : 2 * HD, k == 3 ? 2 * HD : H);
		}
		snprintf(name, sizeof name, "model.layers.%d.mlp.gate.weight", l);
		st_put(&b, &off, name, E, H);
		for (int x = 0; x < E; x++)
			for (int k = 0; k < 3; k++) {
				static const char *const p[] = {"gate_proj", "up_proj", "down_proj"};
				snprintf(name, sizeof name, "model.layers.%d.mlp.experts.%d.%s.weight", l, x, p[k]);
				st_put(&b, &off, name, k == 2 ? H : MI, k == 2 ? MI : H);
			}
	}
	st_put(&b, &off, "model.norm.weight", H, 0);
	st_put(&b, &off, "lm_head.weight", V, H);
	wf_buf_putc(&b, '}');
	while (b.len % 8)
		wf_buf_putc(&b, ' ');
	ck_assert(!b.oom);
	uint64_t len = 8 + b.len + off;
	uint8_t *file = calloc(1, len);
	ck_assert_ptr_nonnull(file);
	for (int i = 0; i < 8; i++)
		file[i] = (uint8_t)((uint64_t)b.len >> (8 * i));
	memcpy(file + 8, b.data, b.len);
	struct wf_model *m = NULL;
	char why[WF_ERRLEN] = "";
	ck_assert_msg(wf_st_parse(&m, file, len, why) == WF_OK, "%s", why);
	ck_assert_uint_eq(m->n_tensors, 3 + L * (9 + 3 * E));
	static const char cfg[] = "{\"architectures\": [\"Qwen3MoeForCausalLM\"], \"model_type\": \"qwen3_moe\", "
				  "\"hidden_size\": 16, \"intermediate_size\": 32, \"moe_intermediate_size\": 8, "
				  "\"num_hidden_layers\": 48, \"num_attention_heads\": 2, \"num_key_value_heads\": 1, "
				  "\"head_dim\": 8, \"vocab_size\": 64, \"max_position_embeddings\": 4096, "
				  "\"rms_norm_eps\": 1e-6, \"rope_theta\": 1000000.0, \"num_experts\": 128, "
				  "\"num_experts_per_tok\": 8, \"norm_topk_prob\": true, \"tie_word_embeddings\": false}";
	struct wf_arch_in in = {.config = cfg, .config_len = sizeof cfg - 1};
	struct wf_gguf_w w;
	wf_gguf_w_init(&w);
	struct wf_arch_plan pl;
	memset(&pl, 0, sizeof pl);
	ck_assert_msg(wf_arch_plan(m, &in, WF_FTYPE_AUTO, &w, &pl, why) == WF_OK, "%s", why);
	ck_assert_uint_eq(pl.n, 3 + L * 12); /* 2 norms, q, k, v, o, q/k norms, router, 3 stacked */
	ck_assert_uint_ge(pl.n_stacks, (size_t)L * 3 * E);
	ck_assert_uint_eq(sizeof(struct wf_arch_tensor), 88);
	size_t bytes = pl.n * sizeof *pl.t + pl.n_stacks * sizeof *pl.stacks;
	ck_assert_msg(bytes <= m->n_tensors * 88, "plan: %zu bytes for %zu tensors", bytes, m->n_tensors);
	wf_arch_plan_free(&pl);
	wf_gguf_w_free(&w);
	wf_model_free(m);
	free(file);
	wf_buf_free(&b);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("arch");
	TCase *tc = tcase_create("registry");
	tcase_add_test(tc, test_rows);
	tcase_add_test(tc, test_name_map_inverse);
	tcase_add_test(tc, test_hooks);
	tcase_add_test(tc, test_plan_scale);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
