/* check_hfq_mxfp4.c - the MXFP4 decoder and check (view/wf_hfq_mxfp4.c)
 * on byte buffers, without a model.
 *
 * The expected values are computed here from the OCP MX spec, not from
 * a table: an e2m1 code is sign, 2-bit exponent, 1-bit mantissa (exponent
 * 0: m * 0.5; else (1 + m / 2) * 2^(exp - 1)); the E8M0 scale s is 2^(s -
 * 127), which transformers' ldexp takes as float32 (so s = 255 is +inf).
 * The layout is convert_moe_packed_tensors': element (e, c, r) of the
 * decoded [E, 32 G, R] is nibble c % 2 (low first) of byte (c % 32) / 2 of
 * block (e, r, c / 32). */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "view/wf_hfq.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

static uint32_t rng_state = 7;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 1103515245u + 12345u;
	return (rng_state >> 8) % n;
}

static uint32_t bits_of(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

/* e2m1 code c from its bit fields, in double (exact) */
static double e2m1(unsigned c)
{
	unsigned sign = c >> 3, ex = (c >> 1) & 3, m = c & 1;
	double v = ex == 0 ? m * 0.5 : (1.0 + m / 2.0) * ldexp(1.0, (int)ex - 1);
	return sign ? -v : v;
}

/* the value transformers computes: float32(code) * float32(2^(s-127)) */
static float want(unsigned code, unsigned s)
{
	volatile float sc = s == 255 ? INFINITY : (float)ldexp(1.0, (int)s - 127);
	volatile float v = (float)e2m1(code);
	return v * sc;
}

static bool same(float a, float b)
{
	return bits_of(a) == bits_of(b) || (isnan(a) && isnan(b));
}

START_TEST(test_mxfp4_values)
{
	/* every code under every scale */
	for (unsigned c = 0; c < 16; c++) {
		ck_assert(bits_of(wf_hfq_mxfp4_code(c)) == bits_of((float)e2m1(c)));
		for (unsigned s = 0; s < 256; s++)
			ck_assert_msg(same(wf_hfq_mxfp4_code(c) * wf_hfq_mxfp4_scale(s), want(c, s)), "code %u scale %u",
				      c, s);
	}
	/* the corners the docs name: code 8 is -0; 2^-127 a subnormal; s = 255 +inf, 0 x inf NaN */
	ck_assert_uint_eq(bits_of(wf_hfq_mxfp4_code(8)), 0x80000000u);
	ck_assert_uint_eq(bits_of(wf_hfq_mxfp4_scale(0)), 0x00400000u);
	ck_assert(isinf(wf_hfq_mxfp4_scale(255)));
	ck_assert(isnan(wf_hfq_mxfp4_code(0) * wf_hfq_mxfp4_scale(255)));
	/* 4 x 2^127 overflows float32 (as the reference's product does) */
	ck_assert(isinf(wf_hfq_mxfp4_code(6) * wf_hfq_mxfp4_scale(254)));
}
END_TEST

#define E 3
#define R 5
#define G 2
#define C (32 * G)

static uint8_t blocks[E * R * G * 16];
static uint8_t scales[E * R * G];

static struct wf_hfq layer(void)
{
	for (size_t k = 0; k < sizeof blocks; k++)
		blocks[k] = (uint8_t)rnd(256);
	for (size_t k = 0; k < sizeof scales; k++)
		scales[k] = (uint8_t)(100 + rnd(60));
	scales[0] = 0, scales[1] = 1, scales[2] = 254, scales[3] = 255; /* the corners, too */
	struct wf_hfq q = {.scheme = WF_HFQ_MXFP4, .out = E * C, .in = R, .bits = 4, .group = 32, .experts = E,
			   .source = "mxfp4"};
	q.part[WF_HFQ_MXFP4_B] = (struct wf_hfq_part){blocks, sizeof blocks, 0, WF_T_U8, E * R * G, 16};
	q.part[WF_HFQ_MXFP4_S] = (struct wf_hfq_part){scales, sizeof scales, 0, WF_T_U8, E * R, G};
	return q;
}

static float elem(unsigned e, unsigned c, unsigned r)
{
	size_t blk = ((size_t)e * R + r) * G + c / 32;
	uint8_t byte = blocks[blk * 16 + (c % 32) / 2];
	return want(c % 2 ? byte >> 4 : byte & 15, scales[blk]);
}

START_TEST(test_mxfp4_layout)
{
	char err[WF_ERRLEN];
	struct wf_hfq q = layer();
	ck_assert_msg(wf_hfq_check(&q, "l", 1, err) == WF_OK, "%s", err);
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(WF_HFQ_MXFP4);
	ck_assert_str_eq(sc->name, "MXFP4");
	ck_assert_int_eq(sc->type, WF_T_HFQ_MXFP4);
	ck_assert_str_eq(wf_type_get(WF_T_HFQ_MXFP4)->name, "MXFP4");
	float row[R];
	for (unsigned e = 0; e < E; e++)
		for (unsigned c = 0; c < C; c++) {
			unsigned c0 = c % 3 < R ? c % 3 : 0, n = R - c0 - (c % 2);
			sc->decode(&q, (uint64_t)e * C + c, c0, n, row);
			for (unsigned k = 0; k < n; k++)
				ck_assert_msg(same(row[k], elem(e, c, c0 + k)), "[%u, %u, %u]", e, c, c0 + k);
		}
}
END_TEST

/* a read of the layer as a tensor: f32 and bf16, ragged ranges */
START_TEST(test_mxfp4_view_read)
{
	struct wf_hfq q = layer();
	uint64_t shape[3] = {E, C, R};
	struct wf_tensor t = {.name = (char *)"x", .name_len = 1, .shape = shape, .ndim = 3, .nelems = E * C * R,
			      .size = (uint64_t)E * C * R * 4, .type = WF_T_HFQ_MXFP4, .vk = WF_VK_F32, .q = &q};
	static float all[E * C * R];
	size_t got;
	ck_assert_int_eq(wf_hfq_view_read(&t, 0, sizeof all, all, &got), WF_OK);
	ck_assert_uint_eq(got, sizeof all);
	for (unsigned e = 0; e < E; e++)
		for (unsigned c = 0; c < C; c++)
			for (unsigned r = 0; r < R; r++)
				ck_assert(same(all[((size_t)e * C + c) * R + r], elem(e, c, r)));
	uint8_t part[101];
	for (uint64_t off = 0; off + sizeof part <= t.size; off += 37) {
		ck_assert_int_eq(wf_hfq_view_read(&t, off, sizeof part, part, &got), WF_OK);
		ck_assert(memcmp(part, (uint8_t *)all + off, got) == 0);
	}
}
END_TEST

START_TEST(test_mxfp4_refused)
{
	char err[WF_ERRLEN];
	struct wf_hfq q = layer();
	q.part[WF_HFQ_MXFP4_S].p = NULL;
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(err, "without their scales"));
	q = layer();
	q.part[WF_HFQ_MXFP4_S].rows = E * R - 1; /* a row of scales short */
	q.part[WF_HFQ_MXFP4_S].nbytes -= G;
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	ck_assert_ptr_nonnull(strstr(err, "'l'"));
	q = layer();
	q.part[WF_HFQ_MXFP4_B].nbytes--; /* bytes short of the shape */
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	q = layer();
	q.part[WF_HFQ_MXFP4_S].type = WF_T_F32;
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	q = layer();
	q.out += 32; /* one group more than the scales hold */
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	q = layer();
	q.experts = 0;
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
	q = layer();
	q.part[WF_HFQ_MXFP4_B].cols = 8, q.part[WF_HFQ_MXFP4_B].rows *= 2; /* half blocks */
	ck_assert_int_eq(wf_hfq_check(&q, "l", 1, err), WF_ERR_FORMAT);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("hfq_mxfp4");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_mxfp4_values);
	tcase_add_test(tc, test_mxfp4_layout);
	tcase_add_test(tc, test_mxfp4_view_read);
	tcase_add_test(tc, test_mxfp4_refused);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
