/* check_look.c - unit tests for looking at values: statistics
 * (wf_stats.c), the pieces of diff (wf_diff.c: q/k rows, GGUF <-> HF
 * names, metrics) and the size of a preview (wf_preview.c). */
#include <check.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wf_arch_int.h"
#include "model/wf_st.h"
#include "mount/wf_preview.h"
#include "view/wf_diff.h"
#include "view/wf_live.h"
#include "view/wf_stats.h"

/* A safetensors buffer of one F32 tensor "t" of shape [rows, cols]. */
static uint8_t *st_buf(const float *v, uint64_t rows, uint64_t cols, uint64_t *len)
{
	char hdr[256];
	uint64_t n = rows * cols * 4;
	int hl = snprintf(hdr, sizeof hdr,
			  "{\"t\":{\"dtype\":\"F32\",\"shape\":[%llu,%llu],\"data_offsets\":[0,%llu]}}",
			  (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)n);
	while (hl % 8)
		hdr[hl++] = ' ';
	*len = 8 + (uint64_t)hl + n;
	uint8_t *b = malloc(*len);
	ck_assert_ptr_nonnull(b);
	for (int i = 0; i < 8; i++)
		b[i] = (uint8_t)((uint64_t)hl >> (8 * i));
	memcpy(b + 8, hdr, (size_t)hl);
	memcpy(b + 8 + hl, v, n);
	return b;
}

START_TEST(pairwise_sum_is_accurate)
{
	/* 1e16 then a million ones: a running double sum loses every one */
	size_t n = 1000001;
	double *v = malloc(n * sizeof *v);
	ck_assert_ptr_nonnull(v);
	v[0] = 1e16;
	for (size_t i = 1; i < n; i++)
		v[i] = 1;
	double naive = 0;
	for (size_t i = 0; i < n; i++)
		naive += v[i];
	ck_assert(naive == 1e16);
	ck_assert(fabs(wf_sum_pairwise(v, n) - (1e16 + 1e6)) <= 64);
	free(v);
}
END_TEST

START_TEST(stats_same_on_any_thread_count)
{
	/* three chunks and a bit, NaN, infinities and zeros among them */
	uint64_t rows = 3 * WF_STATS_CHUNK / 512 + 7, cols = 512, n = rows * cols, len;
	float *v = malloc(n * sizeof *v);
	ck_assert_ptr_nonnull(v);
	double sum = 0;
	uint64_t fin = 0;
	for (uint64_t i = 0; i < n; i++) {
		v[i] = (float)(1e6 + (double)(i % 1000) * 0.001);
		if (i % 100003 == 5)
			v[i] = NAN;
		else if (i % 200003 == 9)
			v[i] = -INFINITY;
		else if (i % 77777 == 3)
			v[i] = 0;
		if (isfinite(v[i])) {
			sum += v[i];
			fin++;
		}
	}
	uint8_t *buf = st_buf(v, rows, cols, &len);
	struct wf_model *m;
	struct wf_live lv;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_st_parse(&m, buf, len, err), WF_OK);
	ck_assert_int_eq(wf_live_init(&lv, m, NULL, NULL, NULL, NULL), WF_OK);
	struct wf_stats a, b, c;
	ck_assert_int_eq(wf_stats_tensor(&lv, &m->tensors[0], 1, NULL, &a, err), WF_OK);
	ck_assert_int_eq(wf_stats_tensor(&lv, &m->tensors[0], 3, NULL, &b, err), WF_OK);
	ck_assert_int_eq(wf_stats_tensor(&lv, &m->tensors[0], 0, NULL, &c, err), WF_OK);
	ck_assert(memcmp(&a, &b, sizeof a) == 0 && memcmp(&a, &c, sizeof a) == 0);
	ck_assert_uint_eq(a.count, n);
	ck_assert_uint_eq(a.finite, fin);
	ck_assert_uint_eq(a.nan + a.inf + a.finite, n);
	ck_assert(a.min == 0 && a.absmax == a.max);
	ck_assert(fabs(a.mean - sum / (double)fin) <= 1e-9 * a.mean);
	wf_live_free(&lv);
	wf_model_free(m);
	free(buf);
	free(v);
}
END_TEST

START_TEST(qk_rows_follow_llama_cpp)
{
	/* 2 heads of 4 rows: llama.cpp's reshape(2, 2, 2).swapaxes(1, 2)
	 * makes GGUF rows [0, 2, 1, 3, 4, 6, 5, 7] of the HF ones */
	static const uint64_t hf_of_gguf[8] = {0, 2, 1, 3, 4, 6, 5, 7};
	for (uint64_t g = 0; g < 8; g++) {
		ck_assert_uint_eq(wf_qk_row(g, 8, 2, true), hf_of_gguf[g]);
		ck_assert_uint_eq(wf_qk_row(hf_of_gguf[g], 8, 2, false), g);
	}
	/* a bijection for a larger head, and each way undoes the other */
	bool seen[128] = {false};
	for (uint64_t r = 0; r < 128; r++) {
		uint64_t h = wf_qk_row(r, 128, 4, true);
		ck_assert(h < 128 && !seen[h]);
		seen[h] = true;
		ck_assert_uint_eq(wf_qk_row(h, 128, 4, false), r);
	}
}
END_TEST

START_TEST(hf_names_map_to_gguf)
{
	static const struct {
		const char *arch, *hf, *gguf;
		char qk;
		bool norm;
	} ok[] = {
		{"llama", "model.embed_tokens.weight", "token_embd.weight", 0, false},
		{"llama", "lm_head.weight", "output.weight", 0, false},
		{"llama", "model.norm.weight", "output_norm.weight", 0, true},
		{"llama", "model.layers.0.self_attn.q_proj.weight", "blk.0.attn_q.weight", 'q', false},
		{"qwen2", "model.layers.17.self_attn.k_proj.bias", "blk.17.attn_k.bias", 'k', false},
		{"qwen3", "model.layers.3.self_attn.q_norm.weight", "blk.3.attn_q_norm.weight", 0, true},
		{"phi3", "model.layers.2.self_attn.qkv_proj.weight", "blk.2.attn_qkv.weight", 0, false},
		{"phi3", "model.layers.2.mlp.gate_up_proj.weight", "blk.2.ffn_up.weight", 0, false},
		{"gemma", "model.layers.1.post_attention_layernorm.weight", "blk.1.ffn_norm.weight", 0, true},
		{"gemma2", "model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight", 0,
		 true},
		{"gemma3", "model.layers.1.pre_feedforward_layernorm.weight", "blk.1.ffn_norm.weight", 0, true},
		{"olmo2", "model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight", 0, true},
		{"olmo2", "model.layers.1.post_feedforward_layernorm.weight", "blk.1.post_ffw_norm.weight", 0, true},
		{"granite", "model.layers.0.self_attn.k_proj.weight", "blk.0.attn_k.weight", 'k', false},
		{NULL, "model.layers.9.mlp.down_proj.weight", "blk.9.ffn_down.weight", 0, false},
		/* GLM-4.5's own names, the router bias renamed as filter_tensors does, the MTP block's */
		{"glm4moe", "model.layers.1.post_attention_layernorm.weight", "blk.1.post_attention_norm.weight", 0, true},
		{"glm4moe", "model.layers.1.mlp.gate.e_score_correction_bias", "blk.1.exp_probs_b.bias", 0, false},
		{"glm4moe", "model.layers.3.mlp.shared_experts.down_proj.weight", "blk.3.ffn_down_shexp.weight", 0, false},
		{"glm4moe", "model.layers.46.eh_proj.weight", "blk.46.nextn.eh_proj.weight", 0, false},
		{"glm4moe", "model.layers.46.shared_head.norm.weight", "blk.46.nextn.shared_head_norm.weight", 0, true},
		{"glm4moe", "model.layers.46.shared_head.head.weight", "blk.46.nextn.shared_head_head.weight", 0, false},
	};
	char out[128], qk;
	bool norm;
	for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
		ck_assert_msg(wf_hf_to_gguf_name(ok[i].arch, ok[i].hf, strlen(ok[i].hf), out, sizeof out, &qk, &norm),
			      "%s", ok[i].hf);
		ck_assert_str_eq(out, ok[i].gguf);
		ck_assert_int_eq(qk, ok[i].qk);
		ck_assert_int_eq(norm, ok[i].norm);
		/* and back, for the rows hf/ reads (the bias's name put back) */
		if (ok[i].arch && strcmp(ok[i].arch, "glm4moe") == 0) {
			ck_assert_msg(wf_gguf_to_hf_name("glm4moe", ok[i].gguf, out, sizeof out, &qk, &norm), "%s", ok[i].gguf);
			ck_assert_str_eq(out, ok[i].hf);
		}
	}
	static const char *const bad[] = {
		"model.layers.01.mlp.up_proj.weight", "model.layers.x.mlp.up_proj.weight", "model.layers.1.mlp.up_proj",
		"model.layers.1.mlp.nothing.weight", "model.layers..mlp.up_proj.weight", "blk.0.attn_q.weight", "",
		"model.layers.1.mlp.gate.e_score_correction_bias", "model.layers.1.e_score_correction_bias",
		"e_score_correction_bias", "model.layers.46.eh_proj.weight",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(!wf_hf_to_gguf_name("llama", bad[i], strlen(bad[i]), out, sizeof out, &qk, &norm), "%s",
			      bad[i]);
	/* too small an output is a refusal, not a cut name */
	ck_assert(!wf_hf_to_gguf_name("llama", ok[3].hf, strlen(ok[3].hf), out, 8, &qk, &norm));
	ck_assert_str_eq(wf_arch_canon("MistralForCausalLM"), "mistral");
	ck_assert_str_eq(wf_arch_canon("gemma3_text"), "gemma3");
	ck_assert_ptr_null(wf_arch_canon("gpt2"));
	ck_assert(wf_arch_permutes_qk("mistral") && !wf_arch_permutes_qk("qwen2") && !wf_arch_permutes_qk(NULL));
	/* the rows that permute (LlamaModel's subclasses), by general.architecture */
	ck_assert(wf_arch_permutes_qk("granite") && wf_arch_permutes_qk("smollm3") && wf_arch_permutes_qk("mistral3") &&
		  !wf_arch_permutes_qk("olmo2") && !wf_arch_permutes_qk("gemma"));
	ck_assert_str_eq(wf_arch_row_of("mistral3", false)->hf[0], "MistralForCausalLM");
	ck_assert_str_eq(wf_arch_row_of("mistral3", false)->hf_model_type, "mistral");
	ck_assert_str_eq(wf_arch_row_of("gemma3", false)->hf[0], "Gemma3ForCausalLM");
	ck_assert(wf_arch_norm_plus_one("gemma2") && !wf_arch_norm_plus_one("llama"));
	ck_assert_int_eq(wf_name_naming("blk.0.x", 7), WF_NAMES_GGUF);
	ck_assert_int_eq(wf_name_naming("lm_head.weight", 14), WF_NAMES_HF);
	ck_assert_int_eq(wf_name_naming("encoder.w", 9), WF_NAMES_OTHER);
}
END_TEST

START_TEST(preview_size_from_shape)
{
	uint64_t shape[3] = {64, 64, 0};
	struct wf_tensor t = {.ndim = 2, .shape = shape, .nelems = 64 * 64};
	uint32_t w, h;
	/* 64 rows of a filter byte and 64 RGB pixels in one stored block */
	ck_assert_uint_eq(wf_preview_dims(&t, &w, &h), 8 + 25 + 12 + 2 + 64 * 193 + 5 + 4 + 12);
	ck_assert(w == 64 && h == 64);
	uint64_t big[3] = {3, 700, 1300};
	t = (struct wf_tensor){.ndim = 3, .shape = big, .nelems = 3 * 700 * 1300};
	uint64_t raw = 1024 * (1 + 3 * 1024);
	ck_assert_uint_eq(wf_preview_dims(&t, &w, &h), 8 + 25 + 12 + 2 + raw + 5 * ((raw + 65534) / 65535) + 4 + 12);
	ck_assert(w == 1024 && h == 1024);
	uint64_t strip[1] = {3000};
	t = (struct wf_tensor){.ndim = 1, .shape = strip, .nelems = 3000};
	wf_preview_dims(&t, &w, &h);
	ck_assert(w == 1024 && h == WF_PREVIEW_STRIP);
	uint64_t empty[2] = {0, 4};
	t = (struct wf_tensor){.ndim = 2, .shape = empty, .nelems = 0};
	wf_preview_dims(&t, &w, &h);
	ck_assert(w == 1 && h == 1);
	t = (struct wf_tensor){.ndim = 0, .shape = NULL, .nelems = 1};
	wf_preview_dims(&t, &w, &h);
	ck_assert(w == 1 && h == WF_PREVIEW_STRIP);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("look");
	TCase *tc = tcase_create("look");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, pairwise_sum_is_accurate);
	tcase_add_test(tc, stats_same_on_any_thread_count);
	tcase_add_test(tc, qk_rows_follow_llama_cpp);
	tcase_add_test(tc, hf_names_map_to_gguf);
	tcase_add_test(tc, preview_size_from_shape);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
