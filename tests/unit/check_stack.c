/* check_stack.c - unit tests for weightfs_read_stack (weightfs.h): the
 * same bytes as one weightfs_read per tensor at every thread count, and
 * the refusals (shape, dtype, stride, overflow, NULLs, no decoder) before
 * anything is written. */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "lib/weightfs.h"

#define DEMO "tests/data/ggml-oracle/mixed_llama_tiny.gguf"

static weightfs_model *open_ok(const char *path)
{
	weightfs_model *m = NULL;
	char err[256] = "";
	ck_assert_msg(weightfs_open(path, WEIGHTFS_F32, &m, err, sizeof err) == 0, "%s", err);
	return m;
}

static size_t find(weightfs_model *m, const char *name)
{
	int64_t i = weightfs_find(m, name, strlen(name));
	ck_assert_msg(i >= 0, "%s not in the model", name);
	return (size_t)i;
}

/* Three [256, 64] tensors of three types (MXFP4, IQ4_NL, IQ4_NL), one of
 * them twice, in every output dtype and on 0..9 threads. */
START_TEST(test_stack_matches_reads)
{
	weightfs_model *m = open_ok(DEMO);
	const char *names[] = {"blk.0.ffn_up.weight", "blk.1.ffn_up.weight", "blk.0.ffn_gate.weight",
			       "blk.0.ffn_up.weight"};
	size_t idx[4], n = 4, got;
	char err[256] = "";
	for (size_t k = 0; k < n; k++)
		idx[k] = find(m, names[k]);
	for (int dt = WEIGHTFS_F32; dt <= WEIGHTFS_BF16; dt++) {
		struct weightfs_tensor_info ti;
		ck_assert_int_eq(weightfs_tensor_info(m, idx[0], dt, &ti, err, sizeof err), 0);
		size_t stride = (size_t)ti.size;
		uint8_t *want = malloc(n * stride), *buf = malloc(n * stride);
		ck_assert(want && buf);
		for (size_t k = 0; k < n; k++) {
			ck_assert_int_eq(weightfs_read(m, idx[k], dt, 0, stride, want + k * stride, &got, err, sizeof err), 0);
			ck_assert_uint_eq(got, stride);
		}
		for (unsigned th = 0; th <= 9; th++) {
			memset(buf, 0xA5, n * stride);
			ck_assert_msg(weightfs_read_stack(m, idx, n, dt, buf, stride, th, err, sizeof err) == 0, "%s", err);
			ck_assert_msg(memcmp(buf, want, n * stride) == 0, "dtype %d, %u threads", dt, th);
		}
		free(want);
		free(buf);
	}
	/* none at all is fine and writes nothing */
	ck_assert_int_eq(weightfs_read_stack(m, NULL, 0, WEIGHTFS_F32, NULL, 0, 0, err, sizeof err), 0);
	weightfs_close(m);
}
END_TEST

static void refused(weightfs_model *m, const size_t *idx, size_t n, int dtype, size_t stride, int code,
		    const char *says)
{
	char err[256] = "";
	uint8_t buf[4 * 65536];
	memset(buf, 0x5A, sizeof buf);
	/* every accepted call here fits buf; a refused one must not touch it */
	int rc = weightfs_read_stack(m, idx, n, dtype, buf, stride, 2, err, sizeof err);
	ck_assert_msg(rc == code, "rc %d, not %d: %s", rc, code, err);
	ck_assert_msg(strstr(err, says) != NULL && !strchr(err, '\n'), "'%s' does not say '%s'", err, says);
	if (code == WEIGHTFS_EINVAL)
		for (size_t i = 0; i < sizeof buf; i++)
			ck_assert_msg(buf[i] == 0x5A, "byte %zu written by a refused stack", i);
}

START_TEST(test_stack_refusals)
{
	weightfs_model *m = open_ok(DEMO);
	size_t up = find(m, "blk.0.ffn_up.weight"), q = find(m, "blk.0.attn_q.weight");
	size_t down = find(m, "blk.0.ffn_down.weight"); /* [64, 256]: same size, other shape */
	size_t bad_shape[] = {up, down}, bad_size[] = {up, q}, one[] = {up}, bad_index[] = {up, 9999};
	refused(m, bad_shape, 2, WEIGHTFS_F32, 65536, WEIGHTFS_EINVAL, "blk.0.ffn_down.weight");
	refused(m, bad_size, 2, WEIGHTFS_F32, 65536, WEIGHTFS_EINVAL, "differs");
	refused(m, one, 1, WEIGHTFS_F32, 4096, WEIGHTFS_EINVAL, "stride");
	refused(m, one, 1, WEIGHTFS_F16, 65536, WEIGHTFS_EINVAL, "stride");
	refused(m, bad_index, 2, WEIGHTFS_F32, 65536, WEIGHTFS_EINVAL, "9999");
	refused(m, one, 1, 7, 65536, WEIGHTFS_EINVAL, "dtype");
	refused(m, one, SIZE_MAX / 2, WEIGHTFS_F32, 65536, WEIGHTFS_EINVAL, "overflow");
	char err[256] = "";
	ck_assert_int_eq(weightfs_read_stack(m, NULL, 1, WEIGHTFS_F32, err, 1, 0, err, sizeof err), WEIGHTFS_EINVAL);
	ck_assert_int_eq(weightfs_read_stack(NULL, one, 1, WEIGHTFS_F32, err, 1, 0, err, sizeof err), WEIGHTFS_EINVAL);
	weightfs_close(m);

	/* Q8_1, which ggml cannot convert, stacks like any type (d * q) */
	m = open_ok("tests/data/ggml-oracle/no_to_float.gguf");
	size_t q81[] = {find(m, "raw.q8_1"), find(m, "raw.q8_1")};
	static float two[2][128], q81_read[128]; /* [2, 64] float32 each */
	size_t got = 0;
	ck_assert_int_eq(weightfs_read_stack(m, q81, 2, WEIGHTFS_F32, two, sizeof two[0], 0, err, sizeof err), 0);
	/* each slot is what weightfs_read gives (whose Q8_1 decoding check_subbyte
	 * holds to the block's definition), and not all zero */
	ck_assert_int_eq(weightfs_read(m, q81[0], WEIGHTFS_F32, 0, sizeof q81_read, q81_read, &got, err, sizeof err), 0);
	ck_assert_uint_eq(got, sizeof q81_read);
	ck_assert(memcmp(two[0], q81_read, sizeof q81_read) == 0 && memcmp(two[1], q81_read, sizeof q81_read) == 0);
	size_t nonzero = 0;
	for (size_t k = 0; k < 128; k++)
		nonzero += q81_read[k] != 0.0f;
	ck_assert_uint_gt(nonzero, 0);
	weightfs_close(m);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("stack");
	TCase *tc = tcase_create("stack");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_stack_matches_reads);
	tcase_add_test(tc, test_stack_refusals);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
