/* check_grow.c - unit tests for wf_grow (base/wf_buf.h), the one
 * grow-by-doubling every growing array uses: room is made only when
 * needed, doubling from the first size, and a size that would overflow
 * is refused with the array left to its owner. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/wf_buf.h"

START_TEST(test_grow_doubles)
{
	int *a = NULL;
	size_t cap = 0, grows = 0;
	for (size_t n = 0; n < 5000; n++) {
		size_t before = cap;
		int *g = wf_grow(a, &cap, n, sizeof *a, 16);
		ck_assert_ptr_nonnull(g);
		a = g;
		ck_assert_uint_gt(cap, n);
		if (cap != before) {
			grows++;
			ck_assert_uint_eq(cap, before ? 2 * before : 16);
		}
		a[n] = (int)n;
	}
	for (size_t n = 0; n < 5000; n++)
		ck_assert_int_eq(a[n], (int)n);
	ck_assert_uint_eq(cap, 8192);
	ck_assert_uint_eq(grows, 10); /* 16 .. 8192 */
	free(a);
}
END_TEST

START_TEST(test_grow_overflow)
{
	char *p = malloc(8);
	ck_assert_ptr_nonnull(p);
	/* elements so big that doubling overflows the byte count: refused, cap kept */
	size_t cap = 8;
	ck_assert_ptr_null(wf_grow(p, &cap, 8, SIZE_MAX / 8, 1));
	ck_assert_uint_eq(cap, 8);
	/* a capacity past half of SIZE_MAX cannot double */
	cap = SIZE_MAX / 2 + 1;
	ck_assert_ptr_null(wf_grow(p, &cap, SIZE_MAX / 2 + 1, 1, 1));
	ck_assert_uint_eq(cap, SIZE_MAX / 2 + 1);
	/* room already there: the same array, nothing done */
	cap = 8;
	ck_assert_ptr_eq(wf_grow(p, &cap, 7, 1, 1), p);
	ck_assert_uint_eq(cap, 8);
	/* a first size of 0 still makes room */
	size_t c0 = 0;
	char *q = wf_grow(NULL, &c0, 0, 1, 0);
	ck_assert_ptr_nonnull(q);
	ck_assert_uint_ge(c0, 1);
	free(q);
	free(p);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_grow_doubles);
	tcase_add_test(tc, test_grow_overflow);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
