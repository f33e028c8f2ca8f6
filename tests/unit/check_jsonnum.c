/* check_jsonnum.c - unit tests for the JSON float writer
 * (wf_buf_json_f32/f64): metadata.json must give back every float key
 * with its bits, the sign of zero included, and as a float, never as an
 * integer. */
#include <check.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_buf.h"

/* JSON readers (Python's json, cJSON's number type aside) take a number
 * for a float only when its text has a fraction or an exponent. */
static bool looks_float(const char *s)
{
	return strpbrk(s, ".eE") != NULL;
}

static void expect_f32(float v, const char *want)
{
	struct wf_buf b = {0};
	wf_buf_json_f32(&b, v);
	ck_assert(wf_buf_finish(&b));
	if (want)
		ck_assert_str_eq(b.data, want);
	if (isfinite(v)) {
		float got = strtof(b.data, NULL);
		ck_assert_msg(memcmp(&got, &v, sizeof v) == 0, "%s does not read back as %a", b.data, (double)v);
		ck_assert_msg(looks_float(b.data), "%s reads as an integer", b.data);
	}
	wf_buf_free(&b);
}

static void expect_f64(double v, const char *want)
{
	struct wf_buf b = {0};
	wf_buf_json_f64(&b, v);
	ck_assert(wf_buf_finish(&b));
	if (want)
		ck_assert_str_eq(b.data, want);
	if (isfinite(v)) {
		double got = strtod(b.data, NULL);
		ck_assert_msg(memcmp(&got, &v, sizeof v) == 0, "%s does not read back as %a", b.data, v);
		ck_assert_msg(looks_float(b.data), "%s reads as an integer", b.data);
	}
	wf_buf_free(&b);
}

START_TEST(test_f32_known)
{
	expect_f32(0.0f, "0.0");
	expect_f32(-0.0f, "-0.0");
	expect_f32(10000.0f, "10000.0");
	expect_f32(1.0f, "1.0");
	expect_f32(-2.5f, "-2.5");
	expect_f32(0.1f, "0.1");
	expect_f32(1e-5f, "1e-05");
	expect_f32(0.0001f, "0.0001");
	expect_f32(1.0f / 3.0f, "0.33333334");
	expect_f32(16777216.0f, "16777216.0");
	expect_f32(1e20f, "1e+20");
	expect_f32(FLT_MAX, "3.4028235e+38");
	expect_f32(FLT_MIN, "1.1754944e-38");
	expect_f32(FLT_TRUE_MIN, "1e-45");
	expect_f32(NAN, "\"NaN\"");
	expect_f32(INFINITY, "\"Infinity\"");
	expect_f32(-INFINITY, "\"-Infinity\"");
}
END_TEST

START_TEST(test_f64_known)
{
	expect_f64(0.0, "0.0");
	expect_f64(-0.0, "-0.0");
	expect_f64(10000.0, "10000.0");
	expect_f64(0.1, "0.1");
	expect_f64(1.0 / 3.0, "0.3333333333333333");
	expect_f64(123456789012345.0, "123456789012345.0");
	expect_f64(1e16, "1e+16");
	expect_f64(9007199254740993.0, "9007199254740992.0");
	expect_f64(1e-300, "1e-300");
	expect_f64(DBL_MAX, "1.7976931348623157e+308");
	expect_f64(DBL_TRUE_MIN, "5e-324");
	expect_f64(-1.5e-7, "-1.5e-07");
	expect_f64(NAN, "\"NaN\"");
	expect_f64(-INFINITY, "\"-Infinity\"");
}
END_TEST

/* xorshift64: a fixed sequence of arbitrary bit patterns */
static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

START_TEST(test_random_bits)
{
	uint64_t s = 0x9E3779B97F4A7C15u;
	for (int i = 0; i < 200000; i++) {
		uint64_t r = next(&s);
		uint32_t u32 = (uint32_t)r;
		float f;
		double d;
		memcpy(&f, &u32, sizeof f);
		memcpy(&d, &r, sizeof d);
		expect_f32(f, NULL);
		expect_f64(d, NULL);
	}
}
END_TEST

/* The text is the shortest: one digit fewer never reads back. */
START_TEST(test_shortest)
{
	static const double vals[] = {0.1, 0.3, 2.0 / 3.0, 1e23, 5e-324, 123.456, 6.02214076e23};
	for (size_t i = 0; i < sizeof vals / sizeof vals[0]; i++) {
		struct wf_buf b = {0};
		wf_buf_json_f64(&b, vals[i]);
		ck_assert(wf_buf_finish(&b));
		char e[64];
		/* count significant digits: from the first non-zero one */
		int sig = 0;
		bool started = false;
		for (const char *p = b.data; *p && *p != 'e'; p++) {
			if (*p >= '1' && *p <= '9')
				started = true;
			if (started && *p >= '0' && *p <= '9')
				sig++;
		}
		if (sig > 1) {
			snprintf(e, sizeof e, "%.*e", sig - 2, vals[i]);
			ck_assert_msg(strtod(e, NULL) != vals[i], "%s is not the shortest (%s)", b.data, e);
		}
		wf_buf_free(&b);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("jsonnum");
	TCase *tc = tcase_create("floats");
	tcase_add_test(tc, test_f32_known);
	tcase_add_test(tc, test_f64_known);
	tcase_add_test(tc, test_random_bits);
	tcase_add_test(tc, test_shortest);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
