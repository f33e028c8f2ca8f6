/* check_grow.c - unit tests for base's wf_grow (the one grow-by-doubling)
 * and wf_path_join. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_common.h"

START_TEST(grows_by_doubling)
{
	int *a = NULL;
	size_t n = 0, cap = 0, caps[8], k = 0;
	for (int i = 0; i < 100; i++) {
		int *na = wf_grow(a, n, &cap, sizeof *a, 16);
		ck_assert_ptr_nonnull(na);
		if (k == 0 || caps[k - 1] != cap)
			caps[k++] = cap;
		a = na;
		a[n++] = i; /* room for one more, always */
		ck_assert_uint_le(n, cap);
	}
	ck_assert_uint_eq(k, 4);
	ck_assert_uint_eq(caps[0], 16);
	ck_assert_uint_eq(caps[1], 32);
	ck_assert_uint_eq(caps[2], 64);
	ck_assert_uint_eq(caps[3], 128);
	for (int i = 0; i < 100; i++)
		ck_assert_int_eq(a[i], i);
	/* room left: the same pointer, cap unchanged */
	ck_assert_ptr_eq(wf_grow(a, n, &cap, sizeof *a, 16), a);
	ck_assert_uint_eq(cap, 128);
	free(a);
}
END_TEST

START_TEST(refuses_overflow)
{
	char *p = malloc(8);
	ck_assert_ptr_nonnull(p);
	size_t cap = SIZE_MAX / 2 + 1;
	ck_assert_ptr_null(wf_grow(p, cap, &cap, 1, 16));
	ck_assert_uint_eq(cap, SIZE_MAX / 2 + 1); /* untouched */
	cap = 8;
	ck_assert_ptr_null(wf_grow(p, 8, &cap, SIZE_MAX / 8, 16));
	ck_assert_uint_eq(cap, 8);
	free(p);
}
END_TEST

START_TEST(path_join)
{
	char *p = wf_path_join("/a/b", "c d");
	ck_assert_str_eq(p, "/a/b/c d");
	free(p);
	p = wf_path_join("", "x");
	ck_assert_str_eq(p, "/x");
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("base");
	tcase_add_test(tc, grows_by_doubling);
	tcase_add_test(tc, refuses_overflow);
	tcase_add_test(tc, path_join);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
