/* check_card.c - unit tests for general.size_label (wf_card.h): gguf-py's
 * parameter count, its rounding, its name parser and README.md's front
 * matter, on the examples of ../shared/docs/moe-and-mla.md section 11. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "arch/wf_card.h"

static void expect_rounded(uint64_t n, const char *want)
{
	char out[40];
	wf_card_rounded(n, out, sizeof out);
	ck_assert_msg(strcmp(out, want) == 0, "%llu: %s, not %s", (unsigned long long)n, out, want);
}

START_TEST(test_rounded)
{
	expect_rounded(9950000000ull, "10B");
	expect_rounded(1000000000ull, "1000M");
	expect_rounded(999999ull, "1000K");
	expect_rounded(67000000ull, "67M");
	expect_rounded(1234567ull, "1.2M");
	expect_rounded(8030261248ull, "8.0B");
	expect_rounded(1000000000000ull, "1000B");
	expect_rounded(1000000000001ull, "1.0T");
	expect_rounded(671026419200ull, "671B");
	/* round() and %.Nf are half to even */
	expect_rounded(1500ull, "1.5K");
	expect_rounded(2500ull, "2.5K");
	expect_rounded(99500ull, "100K");
	expect_rounded(98500ull, "98K");
	expect_rounded(500ull, "0.50K");
	expect_rounded(1ull, "0.00K");
	expect_rounded(1000001ull, "1.0M");
	expect_rounded(UINT64_MAX, "18446744T");
}
END_TEST

static void add(struct wf_card_count *c, const char *name, uint64_t a, uint64_t b, uint64_t e)
{
	uint64_t ne[3] = {a, b, e};
	wf_card_count_add(c, name, ne, e ? 3 : b ? 2 : 1);
}

/* Mixtral-8x7B's tensors as the converter adds them: 46,702,792,704 in
 * all, "8x7.2B" (an expert's share plus the shared tensors). */
START_TEST(test_count_mixtral)
{
	struct wf_card_count c = {0};
	add(&c, "token_embd.weight", 4096, 32000, 0);
	add(&c, "output_norm.weight", 4096, 0, 0);
	add(&c, "output.weight", 4096, 32000, 0);
	for (int l = 0; l < 32; l++) {
		add(&c, "blk.N.attn_norm.weight", 4096, 0, 0);
		add(&c, "blk.N.attn_q.weight", 4096, 4096, 0);
		add(&c, "blk.N.attn_k.weight", 4096, 1024, 0);
		add(&c, "blk.N.attn_v.weight", 4096, 1024, 0);
		add(&c, "blk.N.attn_output.weight", 4096, 4096, 0);
		add(&c, "blk.N.ffn_norm.weight", 4096, 0, 0);
		add(&c, "blk.N.ffn_gate_inp.weight", 4096, 8, 0);
		add(&c, "blk.N.ffn_gate_exps.weight", 4096, 14336, 8);
		add(&c, "blk.N.ffn_up_exps.weight", 4096, 14336, 8);
		add(&c, "blk.N.ffn_down_exps.weight", 14336, 4096, 8);
	}
	ck_assert_uint_eq(c.total, 46702792704ull);
	ck_assert_uint_eq(c.n_expert, 96);
	char out[64];
	wf_card_count_label(&c, out, sizeof out);
	ck_assert_str_eq(out, "8x7.2B");
}
END_TEST

/* What is and is not an expert tensor; a dense model is its total. */
START_TEST(test_count_kinds)
{
	struct wf_card_count c = {0};
	/* 2-D: shared, "_exps." or not (gpt-oss's 2-D expert biases) */
	add(&c, "blk.0.ffn_gate_exps.bias", 100, 4, 0);
	add(&c, "blk.0.ffn_gate_shexp.weight", 64, 100, 0);
	ck_assert_uint_eq(c.shared, 400 + 6400);
	ck_assert_uint_eq(c.n_expert, 0);
	char out[64];
	wf_card_count_label(&c, out, sizeof out);
	ck_assert_str_eq(out, "6.8K");
	/* 3-D: an expert tensor; a bias counts its experts at shape[-2] */
	uint64_t ne[3] = {10, 4, 7};
	wf_card_count_add(&c, "blk.0.ffn_up_exps.bias", ne, 3);
	ck_assert_uint_eq(c.expert, 70);
	ck_assert_uint_eq(c.expert_sum, 4);
	wf_card_count_add(&c, "blk.0.ffn_up_exps.weight", ne, 3);
	ck_assert_uint_eq(c.expert, 70 + 40);
	ck_assert_uint_eq(c.expert_sum, 4 + 7);
	ck_assert_uint_eq(c.total, 6800 + 280 + 280);
	wf_card_count_label(&c, out, sizeof out);
	ck_assert_str_eq(out, "5x6.9K"); /* 11 // 2 experts, 6800 + 110 */
	/* no overflow past 2^64: the count saturates */
	uint64_t big[2] = {UINT64_MAX / 2, 3};
	wf_card_count_add(&c, "x.weight", big, 2);
	ck_assert_uint_eq(c.total, UINT64_MAX);
}
END_TEST

static void expect_name(const char *id, uint64_t total, const char *want)
{
	struct wf_buf b = {0};
	bool got = wf_card_name_label(id, strlen(id), total, &b);
	wf_buf_finish(&b);
	if (!want)
		ck_assert_msg(!got, "%s: %s, not none", id, b.data);
	else
		ck_assert_msg(got && strcmp(b.data, want) == 0, "%s (%llu): %s, not %s", id, (unsigned long long)total,
			      got ? b.data : "none", want);
	wf_buf_free(&b);
}

START_TEST(test_names)
{
	/* section 11.2's table, with realistic totals */
	expect_name("mistralai/Mixtral-8x7B-Instruct-v0.1", 46702792704ull, "8x7B");
	expect_name("Qwen/Qwen3-30B-A3B", 30532122624ull, "30B-A3B");
	expect_name("allenai/OLMoE-1B-7B-0924", 6919161856ull, "1B-7B");
	expect_name("openai/gpt-oss-20b", 20914757184ull, "20B");
	expect_name("Qwen/Qwen1.5-MoE-A2.7B", 14315784192ull, "A2.7B");
	expect_name("google/gemma-3-4b-it", 4300079472ull, "4B");
	expect_name("mistralai/Mistral-Small-3.1-24B-Instruct-2503", 24011361280ull, "24B");
	expect_name("deepseek-ai/DeepSeek-V3", 671026419200ull, NULL);
	expect_name("DeepSeek-V2-Lite", 15706484224ull, NULL);
	expect_name("GLM-4.5-Air", 110468824832ull, NULL);
	expect_name("0123456789abcdef0123456789abcdef01234567", 1000000, NULL);
	/* "1B" survives while |1e9 - total| <= 7 * total // 8 */
	expect_name("OLMoE-1B-7B-0924", 8000000000ull, "1B-7B");
	expect_name("OLMoE-1B-7B-0924", 8000000008ull, "7B");
	/* context lengths go, unless there is no count */
	expect_name("Llama-3-8B-32k", 8030261248ull, "8B");
	expect_name("Llama-3-8B-32k", 0, "8B-32K");
	/* a tiny model under a big name: what cannot be a number stays */
	expect_name("Qwen3-30B-A3B", 1000000, "A3B");
	expect_name("tiny-8x7B", 1000000, "8x7B");
	/* normalizing: bloom's 7b1, '_' for '.', suffixes upper-cased */
	expect_name("bloom-7b1", 7069016064ull, "7.1B");
	expect_name("Foo-1_5b", 1500000000ull, "1.5B");
	expect_name("Foo-8X7b", 46702792704ull, "8X7B");
	expect_name("Foo-a3b", 1000000, "a3B");
	expect_name("Foo-1.5.1b", 1000000, NULL);
	/* words, and words beside numbers */
	expect_name("Foo-Small", 1000000, "Small");
	expect_name("Foo-small-xl-mini", 1000000, "small-xl-mini");
	expect_name("Foo-small-7B", 7000000000ull, "7B");
	/* the first part is never a size; empty parts are dropped; once each */
	expect_name("7B-Foo", 7000000000ull, NULL);
	expect_name("Foo--7B", 7000000000ull, "7B");
	expect_name("-7B", 7000000000ull, NULL);
	expect_name("Foo-7B-7b", 7000000000ull, "7B");
	/* a sentence is no id; an org is split off at the first '/' */
	expect_name("Foo 7B", 7000000000ull, NULL);
	expect_name("org/Foo-7B", 7000000000ull, "7B");
	expect_name("org/7B", 7000000000ull, NULL);
	/* not sizes: no suffix, two suffixes, a letter after */
	expect_name("Foo-7", 7, NULL);
	expect_name("Foo-7BB", 7, NULL);
	expect_name("Foo-7Bx", 7, NULL);
	expect_name("Foo-x7B", 7, NULL);
	expect_name("Foo-7B12", 7, NULL);
	expect_name("", 7, NULL);
	/* many digits: read whole, as float() reads them */
	expect_name("Foo-7.0000000000000000000000000000000000000000000000000000000000000000000000001B",
		    7000000000ull, "7.0000000000000000000000000000000000000000000000000000000000000000000000001B");
	/* more digits than a double holds: infinitely far from any count */
	expect_name("Foo-1000000000000000000000000000000000000000000000000000000000000000000000000000000B", 7, NULL);
}
END_TEST

static void expect_front(const char *text, const char *key, enum wf_card_val want, const char *want_s)
{
	struct wf_buf b = {0};
	wf_buf_puts(&b, "<"); /* appended to, never replaced */
	enum wf_card_val got = wf_card_front(text, strlen(text), key, &b);
	wf_buf_finish(&b);
	ck_assert_msg(got == want, "%s: %d, not %d", text, got, want);
	if (want == WF_CARD_STR)
		ck_assert_msg(strncmp(b.data, "<", 1) == 0 && strcmp(b.data + 1, want_s) == 0, "%s: [%s], not [%s]",
			      text, b.data + 1, want_s);
	else
		ck_assert_str_eq(b.data, "<");
	wf_buf_free(&b);
}

START_TEST(test_front_matter)
{
	const char *k = "size_label";
	expect_front("---\nsize_label: 7B\n---\n# Title\n", k, WF_CARD_STR, "7B");
	expect_front("---\nlicense: mit\nsize_label:   30B-A3B   \ntags:\n- a\n---\n", k, WF_CARD_STR, "30B-A3B");
	expect_front("---\nsize_label: 7B # a comment\n---\n", k, WF_CARD_STR, "7B");
	expect_front("---\nsize_label: 7B#not a comment\n---\n", k, WF_CARD_STR, "7B#not a comment");
	expect_front("---\nsize_label: '7B'\n---\n", k, WF_CARD_STR, "7B");
	expect_front("---\nsize_label: 'it''s'\n---\n", k, WF_CARD_STR, "it's");
	expect_front("---\nsize_label: \"\\u0037B\\x21\"  # c\n---\n", k, WF_CARD_STR, "7B!");
	expect_front("---\nsize_label: \"\\u00e9\\U0001F600\"\n---\n", k, WF_CARD_STR, "\xc3\xa9\xf0\x9f\x98\x80");
	expect_front("---\nsize_label: ''\n---\n", k, WF_CARD_STR, "");
	expect_front("---\r\nsize_label: 7B\r\n---\r\n", k, WF_CARD_STR, "7B");
	expect_front("---\rsize_label: 7B\r---\r", k, WF_CARD_STR, "7B");
	expect_front("---\nsize_label:\t7B\n", k, WF_CARD_STR, "7B"); /* no closing line: to the end */
	expect_front("---\nsize_label : 7B\n---\n", k, WF_CARD_STR, "7B");
	expect_front("---\n\"size_label\": 7B\n---\n", k, WF_CARD_STR, "7B");
	expect_front("---\nsize_label: 1B\nsize_label: 2B\n---\n", k, WF_CARD_STR, "2B");
	expect_front("---\nsize_label: 8x7B\n\n# c\nother: 1\n---\n", k, WF_CARD_STR, "8x7B");
	/* null: the next source decides */
	expect_front("---\nsize_label:\n---\n", k, WF_CARD_NULL, NULL);
	expect_front("---\nsize_label: ~\nname: x\n---\n", k, WF_CARD_NULL, NULL);
	expect_front("---\nsize_label: null # c\n---\n", k, WF_CARD_NULL, NULL);
	/* not a string on one line */
	expect_front("---\nsize_label: 7\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: 1.5\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: 0x1F\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: true\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: 2024-01-01\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: [7B]\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: |\n  7B\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label:\n  - 7B\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label:\n- 7B\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: 7B\n  more\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: \"7B\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: \"\\q\"\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: \"\\ud800\"\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: 'a' b\n---\n", k, WF_CARD_OTHER, NULL);
	expect_front("---\nsize_label: a: b\n---\n", k, WF_CARD_OTHER, NULL);
	/* strings YAML does not read as numbers */
	expect_front("---\nsize_label: 08\n---\n", k, WF_CARD_STR, "08");
	expect_front("---\nsize_label: 1.2.3\n---\n", k, WF_CARD_STR, "1.2.3");
	/* no such key at the top level of a front matter */
	expect_front("# Title\nsize_label: 7B\n", k, WF_CARD_ABSENT, NULL);
	expect_front("\xef\xbb\xbf---\nsize_label: 7B\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front(" ---\nsize_label: 7B\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front("---\nname: x\n---\nsize_label: 7B\n", k, WF_CARD_ABSENT, NULL);
	expect_front("---\nmodel:\n  size_label: 7B\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front("---\nsize_label:7B\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front("---\nmodel_size_label: 7B\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front("---\nsize_label: 7B\xff\n---\n", k, WF_CARD_ABSENT, NULL);
	expect_front("", k, WF_CARD_ABSENT, NULL);
	expect_front("---", k, WF_CARD_ABSENT, NULL);
}
END_TEST

static void expect_label(const char *readme, const char *np, const char *dir, uint64_t total, const char *want)
{
	struct wf_card_count c = {.total = total, .shared = total};
	struct wf_card_in in = {.readme = readme, .readme_len = readme ? strlen(readme) : 0, .name_or_path = np,
				.dir = dir};
	struct wf_buf b = {0};
	bool got = wf_card_size_label(&in, &c, &b);
	wf_buf_finish(&b);
	if (!want)
		ck_assert_msg(!got, "%s: not none", b.data);
	else
		ck_assert_msg(got && strcmp(b.data, want) == 0, "%s, not %s", got ? b.data : "none", want);
	wf_buf_free(&b);
}

START_TEST(test_precedence)
{
	const char *both = "---\nmodel_size_label: M1\nsize_label: S1\n---\n";
	expect_label(both, "org/Foo-7B", "Bar-9B", 7000000000ull, "S1");
	expect_label("---\nmodel_size_label: M1\n---\n", "org/Foo-7B", "Bar-9B", 7000000000ull, "M1");
	expect_label("---\nsize_label: null\nmodel_size_label: M1\n---\n", NULL, NULL, 7, "M1");
	expect_label("---\nlicense: mit\n---\n", "org/Foo-7B", "Bar-9B", 7000000000ull, "7B");
	expect_label(NULL, "org/Foo-7B", "Bar-9B", 7000000000ull, "7B");
	/* _name_or_path with more than one '/' is a path: the folder's name */
	expect_label(NULL, "/home/u/Foo-7B", "Bar-9B", 9000000000ull, "9B");
	expect_label(NULL, "Foo-8B", "Bar-9B", 9000000000ull, "8B");
	expect_label(NULL, "org/Foo", "Bar-9B", 9000000000ull, "9B");
	/* nothing named: counted */
	expect_label(NULL, "org/Foo", "tiny-llama", 8388608ull, "8.4M");
	expect_label(NULL, NULL, NULL, 999999ull, "1000K");
	/* a name only of context lengths gives none: counted */
	expect_label(NULL, NULL, "Foo-128k", 8388608ull, "8.4M");
	/* the card's label ends the search, even empty or no string */
	expect_label("---\nsize_label: ''\n---\n", "org/Foo-7B", NULL, 7000000000ull, NULL);
	expect_label("---\nsize_label: 7\n---\n", "org/Foo-7B", NULL, 7000000000ull, NULL);
	/* no parameter and no name: none */
	expect_label(NULL, NULL, "tiny", 0, NULL);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("card");
	TCase *tc = tcase_create("size_label");
	tcase_add_test(tc, test_rounded);
	tcase_add_test(tc, test_count_mixtral);
	tcase_add_test(tc, test_count_kinds);
	tcase_add_test(tc, test_names);
	tcase_add_test(tc, test_front_matter);
	tcase_add_test(tc, test_precedence);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
