/* check_pool.c - unit tests for wf_pool_chunks (base/wf_pool.h), the
 * parallel chunked reduce of statistics and diffs: every chunk once, a
 * fixed merge tree whatever thread ran what, the first failure returned. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "base/wf_pool.h"

#include <stdatomic.h>

/* A part is a run of chunks [lo, hi) with the number of chunks seen;
 * merging checks the runs are adjacent, as the fixed tree makes them. */
struct run {
	uint64_t lo, hi, seen;
	bool bad;
};

struct ctx {
	_Atomic uint64_t calls, scratches;
	uint64_t fail_at;
	bool no_scratch;
};

static void *mk_scratch(void *c)
{
	struct ctx *x = c;
	atomic_fetch_add(&x->scratches, 1);
	return x->no_scratch ? NULL : malloc(64);
}

static enum wf_err one(void *c, uint64_t i, void *part, void *scratch)
{
	struct ctx *x = c;
	struct run *r = part;
	ck_assert_ptr_nonnull(scratch);
	atomic_fetch_add(&x->calls, 1);
	if (i == x->fail_at)
		return WF_ERR_IO;
	r->lo = i, r->hi = i + 1, r->seen++;
	return WF_OK;
}

static void join_runs(void *into, const void *from)
{
	struct run *a = into;
	const struct run *b = from;
	a->bad |= b->bad || a->hi != b->lo || b->seen != b->hi - b->lo;
	a->hi = b->hi;
	a->seen += b->seen;
}

START_TEST(test_chunks)
{
	static const uint64_t counts[] = {1, 2, 3, 7, 64, 1000};
	for (size_t k = 0; k < sizeof counts / sizeof counts[0]; k++)
		for (unsigned th = 1; th <= 4; th++) {
			uint64_t n = counts[k];
			struct run *parts = calloc(n, sizeof *parts);
			struct ctx x = {.fail_at = UINT64_MAX};
			struct wf_chunks job = {.n = n, .parts = parts, .part_size = sizeof *parts, .ctx = &x,
						.scratch = mk_scratch, .scratch_free = free, .chunk = one, .merge = join_runs};
			ck_assert_int_eq(wf_pool_chunks(th, &job), WF_OK);
			ck_assert_uint_eq(atomic_load(&x.calls), n);
			ck_assert(!parts[0].bad);
			ck_assert_uint_eq(parts[0].lo, 0);
			ck_assert_uint_eq(parts[0].hi, n);
			ck_assert_uint_eq(parts[0].seen, n);
			ck_assert_uint_le(atomic_load(&x.scratches), th);
			free(parts);
		}
}
END_TEST

START_TEST(test_chunks_fail)
{
	struct run parts[200] = {{0}};
	struct ctx x = {.fail_at = 37};
	struct wf_chunks job = {.n = 200, .parts = parts, .part_size = sizeof parts[0], .ctx = &x,
				.scratch = mk_scratch, .scratch_free = free, .chunk = one, .merge = join_runs};
	ck_assert_int_eq(wf_pool_chunks(3, &job), WF_ERR_IO);
	/* out of memory for a worker's buffers: no chunk is lost silently */
	struct ctx y = {.fail_at = UINT64_MAX, .no_scratch = true};
	job.ctx = &y;
	ck_assert_int_eq(wf_pool_chunks(2, &job), WF_ERR_NOMEM);
	/* nothing to do */
	job.n = 0;
	ck_assert_int_eq(wf_pool_chunks(2, &job), WF_OK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("pool");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_chunks);
	tcase_add_test(tc, test_chunks_fail);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
