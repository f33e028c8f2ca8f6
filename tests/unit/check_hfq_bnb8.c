/* check_hfq_bnb8.c - the bitsandbytes 8-bit decoder and check
 * (view/wf_hfq_bnb8.c) on byte buffers, without a model.
 *
 * The expected value is computed here from the chosen int8 values and
 * row scales as bitsandbytes' int8_vectorwise_dequant writes it: (w * SCB)
 * rounded to float32, then times float32(1/127) - the two products each
 * through a volatile float, so that no contraction or reordering can
 * touch the reference. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "view/wf_hfq.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

static uint32_t rng_state = 3;

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

static float want(int8_t w, float scb)
{
	volatile float a = (float)w * scb;
	volatile float inv = (float)(1.0 / 127.0);
	return a * inv;
}

#define OUT 37
#define IN 53

static int8_t wv[OUT * IN];
static float sv[OUT];
static uint8_t sbytes[OUT * 4];
static uint8_t fmt = 0;

static struct wf_hfq layer(void)
{
	for (size_t k = 0; k < sizeof wv; k++)
		wv[k] = (int8_t)(rnd(256) - 128);
	wv[0] = -128, wv[1] = 127, wv[2] = 0, wv[3] = -127;
	for (int r = 0; r < OUT; r++) {
		sv[r] = (float)(rnd(1u << 20) + 1) / 65536.0f * (r % 3 ? 1.0f : 1e-3f);
		memcpy(sbytes + 4 * r, &sv[r], 4);
	}
	struct wf_hfq q = {.scheme = WF_HFQ_BNB8, .out = OUT, .in = IN, .bits = 8, .source = "bitsandbytes"};
	q.part[WF_HFQ_BNB8_W] = (struct wf_hfq_part){(const uint8_t *)wv, sizeof wv, 0, WF_T_I8, OUT, IN};
	q.part[WF_HFQ_BNB8_SCB] = (struct wf_hfq_part){sbytes, sizeof sbytes, 0, WF_T_F32, 1, OUT};
	q.part[WF_HFQ_BNB8_FMT] = (struct wf_hfq_part){&fmt, 1, 0, WF_T_U8, 1, 1};
	return q;
}

START_TEST(test_bnb8_rows)
{
	char err[WF_ERRLEN];
	struct wf_hfq q = layer();
	ck_assert_msg(wf_hfq_check(&q, "l", 1, err) == WF_OK, "%s", err);
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(WF_HFQ_BNB8);
	ck_assert_str_eq(sc->name, "BNB8");
	ck_assert_int_eq(sc->type, WF_T_HFQ_BNB8);
	ck_assert_str_eq(wf_type_get(WF_T_HFQ_BNB8)->name, "BNB8");
	float row[IN];
	for (unsigned r = 0; r < OUT; r++) {
		unsigned c0 = r % 5, n = IN - c0 - r % 3;
		sc->decode(&q, r, c0, n, row);
		for (unsigned k = 0; k < n; k++)
			ck_assert_msg(bits_of(row[k]) == bits_of(want(wv[r * IN + c0 + k], sv[r])), "[%u, %u]", r, c0 + k);
	}
	/* the reference's order matters: a division by 127 differs somewhere */
	unsigned differ = 0;
	for (unsigned r = 0; r < OUT; r++) {
		sc->decode(&q, r, 0, IN, row);
		for (unsigned c = 0; c < IN; c++) {
			volatile float a = (float)wv[r * IN + c] * sv[r];
			differ += bits_of(row[c]) != bits_of(a / 127.0f);
		}
	}
	ck_assert_uint_gt(differ, 0);
}
END_TEST

/* The range read of the decoded tensor, f32 and bf16, equals the whole
 * weight decoded and cut. */
START_TEST(test_bnb8_view)
{
	struct wf_hfq q = layer();
	uint64_t shape[2] = {OUT, IN};
	struct wf_tensor t = {.name = (char *)"l.weight", .name_len = 8, .type = WF_T_HFQ_BNB8, .ndim = 2,
			      .shape = shape, .nelems = OUT * IN, .q = &q};
	char err[WF_ERRLEN];
	static float whole[OUT * IN];
	for (unsigned k = 0; k < OUT * IN; k++)
		whole[k] = want(wv[k], sv[k / IN]);
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_F32, err), WF_OK);
	for (int k = 0; k < 200; k++) {
		uint64_t off = rnd((uint32_t)t.size + 4);
		size_t len = rnd(900);
		static uint8_t got[OUT * IN * 4 + 16];
		size_t n = 0;
		ck_assert_int_eq(wf_hfq_view_read(&t, off, len, got, &n), WF_OK);
		size_t exp = off >= t.size ? 0 : len < t.size - off ? len : (size_t)(t.size - off);
		ck_assert_uint_eq(n, exp);
		ck_assert(memcmp(got, (const uint8_t *)whole + off, n) == 0);
	}
}
END_TEST

START_TEST(test_bnb8_refusals)
{
	char err[WF_ERRLEN];
	struct wf_hfq q = layer(), h;
	h = q;
	h.part[WF_HFQ_BNB8_SCB].p = NULL;
	ck_assert_int_eq(wf_hfq_check(&h, "model.fc1", 9, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "'model.fc1'") && strstr(err, "SCB"), "%s", err);
	h = q;
	h.part[WF_HFQ_BNB8_SCB].cols = OUT - 1, h.part[WF_HFQ_BNB8_SCB].nbytes = (OUT - 1) * 4;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "SCB has 36 values"), "%s", err);
	h = q;
	h.part[WF_HFQ_BNB8_SCB].type = WF_T_F16;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	h = q;
	h.part[WF_HFQ_BNB8_W].type = WF_T_U8;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	h = q;
	h.part[WF_HFQ_BNB8_W].nbytes--;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	/* weight_format: 0 (row) or absent only */
	h = q;
	h.part[WF_HFQ_BNB8_FMT].p = NULL;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_OK);
	static const uint8_t turing = 2;
	h = q;
	h.part[WF_HFQ_BNB8_FMT].p = &turing;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_UNSUP);
	ck_assert_msg(strstr(err, "weight_format is not 0"), "%s", err);
	static const uint8_t zero4[4] = {0};
	h = q;
	h.part[WF_HFQ_BNB8_FMT] = (struct wf_hfq_part){zero4, 4, 0, WF_T_F32, 1, 1};
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	h.part[WF_HFQ_BNB8_FMT].type = WF_T_I32; /* an int32 0 is row-major too */
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_OK);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hfq_bnb8");
	TCase *tc = tcase_create("decode");
	tcase_add_test(tc, test_bnb8_rows);
	tcase_add_test(tc, test_bnb8_view);
	tcase_add_test(tc, test_bnb8_refusals);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
