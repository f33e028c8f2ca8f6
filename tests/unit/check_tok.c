/* check_tok.c - unit tests for the token model both tokenizer directions
 * share (src/model/wf_tok.c) and base's UTF-8 check: the text rule on
 * every kind of bad byte sequence, and the pre-tokenizer table read by
 * name (GGUF -> HF) and by shape (HF -> GGUF) agreeing with itself. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_common.h"
#include "model/wf_tok.h"

/* wf_utf8_valid's reference: one wf_utf8_seq after another */
static bool slow_valid(const uint8_t *p, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = wf_utf8_seq(p + i, n - i);
		if (!k)
			return false;
		i += k;
	}
	return true;
}

START_TEST(test_utf8_valid)
{
	static const char *const bad[] = {"\x80", "\xc0\xaf", "\xe0\x80\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
					  "\xf8\x88\x80\x80\x80", "\xc3", "\xe2\x82", "\xff"};
	static const char *const good[] = {"", "a", "\xc4\xa0", "\xe2\x82\xac", "\xf0\x9f\x98\x80", "\xef\xbf\xbf",
					   "\xf4\x8f\xbf\xbf"};
	for (size_t i = 0; i < WF_ARRAY_LEN(bad); i++)
		ck_assert_msg(!wf_utf8_valid(bad[i], strlen(bad[i])), "bad[%zu] taken", i);
	for (size_t i = 0; i < WF_ARRAY_LEN(good); i++)
		ck_assert_msg(wf_utf8_valid(good[i], strlen(good[i])), "good[%zu] refused", i);
	/* a bad byte at every place around the 8-byte ASCII steps, in runs of every length */
	uint8_t buf[40];
	for (size_t len = 1; len <= sizeof buf; len++)
		for (size_t at = 0; at < len; at++) {
			memset(buf, 'x', len);
			buf[at] = 0x80;
			ck_assert(!wf_utf8_valid(buf, len));
			buf[at] = 0;
			ck_assert(wf_utf8_valid(buf, len)); /* U+0000 is valid UTF-8 */
		}
	/* random bytes: the fast path agrees with the reference */
	srand(41);
	for (int t = 0; t < 20000; t++) {
		size_t len = (size_t)(rand() % 24);
		for (size_t i = 0; i < len; i++) {
			int r = rand() % 8;
			buf[i] = (uint8_t)(r < 4 ? 'a' + r : r == 4 ? 0x80 + rand() % 64 : r == 5 ? 0xc2 + rand() % 30
							  : r == 6 ? 0xe0 + rand() % 16 : 0xf0 + rand() % 8);
		}
		ck_assert_msg(wf_utf8_valid(buf, len) == slow_valid(buf, len), "case %d", t);
	}
}
END_TEST

START_TEST(test_text_bad)
{
	ck_assert_ptr_null(wf_tok_text_bad("", 0));
	ck_assert_ptr_null(wf_tok_text_bad(NULL, 0));
	ck_assert_ptr_null(wf_tok_text_bad("\xc4\xa0hello", 7));
	ck_assert_str_eq(wf_tok_text_bad("a\xff", 2), "not valid UTF-8");
	ck_assert_str_eq(wf_tok_text_bad("a\0b", 3), "holds U+0000 (valid UTF-8, but a NUL is refused)");
	/* whichever comes first is named */
	ck_assert_str_eq(wf_tok_text_bad("\xff\0", 2), "not valid UTF-8");
	ck_assert_str_eq(wf_tok_text_bad("\0\xff", 2), "holds U+0000 (valid UTF-8, but a NUL is refused)");
	/* a sequence cut by a NUL is invalid, as a scan from the start sees it */
	ck_assert_str_eq(wf_tok_text_bad("\xe2\x82\0", 3), "not valid UTF-8");
}
END_TEST

/* Every name of every row finds its row; a part of a name, or a name
 * with more, finds none. */
START_TEST(test_pre_names)
{
	static const char *const names[] = {"llama-bpe", "llama3", "smaug-bpe", "qwen2", "gpt-2", "default",
					    "deepseek-coder", "jina-v2-de", "command-r", "falcon"};
	for (size_t i = 0; i < WF_ARRAY_LEN(names); i++) {
		const struct wf_tok_pre *r = wf_tok_pre_by_name(names[i], strlen(names[i]));
		ck_assert_msg(r != NULL, "%s unknown", names[i]);
		ck_assert_ptr_nonnull(r->regex);
		ck_assert_ptr_nonnull(r->regex[0]);
	}
	ck_assert_ptr_null(wf_tok_pre_by_name("llama", 5));
	ck_assert_ptr_null(wf_tok_pre_by_name("llama-bpe2", 10));
	ck_assert_ptr_null(wf_tok_pre_by_name("", 0));
	ck_assert_ptr_null(wf_tok_pre_by_name("qwen2|gpt-2", 11));
	/* "falcon" and "falcon3" are different rows */
	ck_assert_ptr_ne(wf_tok_pre_by_name("falcon", 6), wf_tok_pre_by_name("falcon3", 7));
}
END_TEST

/* The two directions agree: the name HF -> GGUF writes for a shape is one
 * GGUF -> HF reads back to the same row, with the same ignore_merges. */
START_TEST(test_pre_round_trip)
{
	static const char *const hf_names[] = {"llama-bpe", "smaug-bpe", "qwen2", "gpt-2"};
	for (size_t i = 0; i < WF_ARRAY_LEN(hf_names); i++) {
		const struct wf_tok_pre *r = wf_tok_pre_by_name(hf_names[i], strlen(hf_names[i]));
		ck_assert_ptr_nonnull(r);
		ck_assert_str_eq(r->hf_name, hf_names[i]);
		ck_assert_ptr_eq(wf_tok_pre_by_shape(r->hf_split, r->ignore_merges), r);
		ck_assert_ptr_eq(wf_tok_pre_by_name(r->hf_name, strlen(r->hf_name)), r);
	}
	const struct wf_tok_pre *l3 = wf_tok_pre_by_name("llama-bpe", 9), *sm = wf_tok_pre_by_name("smaug-bpe", 9);
	/* one regex, two names, told apart by ignore_merges alone */
	ck_assert_str_eq(l3->hf_split, sm->hf_split);
	ck_assert(l3->ignore_merges && !sm->ignore_merges);
	/* shapes no converter hash names */
	ck_assert_ptr_null(wf_tok_pre_by_shape(NULL, true));
	ck_assert_ptr_null(wf_tok_pre_by_shape(wf_tok_pre_by_name("qwen2", 5)->hf_split, true));
	ck_assert_ptr_null(wf_tok_pre_by_shape("\\p{L}+", false));
	ck_assert(wf_tok_pre_by_name("qwen2", 5)->hf_nfc && !l3->hf_nfc);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("tok");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_utf8_valid);
	tcase_add_test(tc, test_text_bad);
	tcase_add_test(tc, test_pre_names);
	tcase_add_test(tc, test_pre_round_trip);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
