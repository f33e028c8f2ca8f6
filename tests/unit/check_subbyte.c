/* check_subbyte.c - the decoders added so that no file of a healthy model
 * fails: ggml's Q8_1 and safetensors' F4 (torch float4_e2m1fn_x2).
 *
 * Expected values are computed here from the formats' definitions (ldexpf
 * on the fields), not from the decoders' tables: block_q8_1 (ggml-common.h)
 * is d f16, s f16, qs[32] int8 with weight j = qs[j] * d; F4 is E2M1 (OCP
 * MX v1.0 5.3.3: sign, 2 exponent bits with bias 1, 1 mantissa bit) with
 * element 2k in the low nibble of byte k (pytorch
 * torch/headeronly/util/Float4_e2m1fn_x2.h).  Compared as bits, so the
 * sign of zero counts.
 */
#include <check.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "model/wf_model.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

static uint32_t bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

static float e2m1(unsigned c)
{
	unsigned e = (c >> 1) & 3, m = c & 1;
	float v = e ? ldexpf(1.0f + 0.5f * (float)m, (int)e - 1) : 0.5f * (float)m;
	return (c & 8) ? -v : v;
}

static float half(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
	return (h & 0x8000) ? -v : v;
}

/* Every byte: both elements, low nibble first. */
START_TEST(test_f4_every_byte)
{
	const struct wf_type *ty = wf_type_get(WF_T_F4);
	ck_assert_int_eq(ty->vk, WF_VK_F32);
	uint8_t in[257];
	float out[512];
	for (int b = 0; b < 256; b++)
		in[b + 1] = (uint8_t)b; /* at an odd address */
	ty->decode(in + 1, out, 256);
	for (unsigned b = 0; b < 256; b++) {
		ck_assert_msg(bits(out[2 * b]) == bits(e2m1(b & 15)), "byte %02x low", b);
		ck_assert_msg(bits(out[2 * b + 1]) == bits(e2m1(b >> 4)), "byte %02x high", b);
	}
	/* the table's ends, spelled out: 0x8 is -0, 0x7 is 6, 0xF is -6 */
	ck_assert_uint_eq(bits(out[2 * 0x08]), 0x80000000u);
	ck_assert_uint_eq(bits(out[2 * 0x07]), bits(6.0f));
	ck_assert_uint_eq(bits(out[2 * 0xF0 + 1]), bits(-6.0f));
	ck_assert_uint_eq(bits(out[2 * 0x01]), bits(0.5f));
}
END_TEST

/* Random blocks with special scales: qs[j] * d, -0 where q is 0 and d < 0. */
START_TEST(test_q8_1_blocks)
{
	const struct wf_type *ty = wf_type_get(WF_T_Q8_1);
	ck_assert_int_eq(ty->vk, WF_VK_F32);
	ck_assert_uint_eq(ty->bytes, 36);
	static const uint16_t ds[] = {0x3C00, 0xBC00, 0x0001, 0x8001, 0x7BFF, 0x0000, 0x8000, 0x3555, 0x2E66};
	enum { NB = sizeof ds / sizeof ds[0] };
	uint8_t in[NB * 36 + 1];
	float out[NB * 32];
	uint32_t r = 12345;
	for (int b = 0; b < NB; b++) {
		uint8_t *blk = in + 1 + 36 * b;
		blk[0] = (uint8_t)ds[b];
		blk[1] = (uint8_t)(ds[b] >> 8);
		blk[2] = 0xFF; /* s: not read */
		blk[3] = 0x7C;
		for (int j = 0; j < 32; j++) {
			r = r * 1103515245u + 12345u;
			blk[4 + j] = j == 3 ? 0 : j == 4 ? 0x80 : j == 5 ? 0x7F : (uint8_t)(r >> 16);
		}
	}
	ty->decode(in + 1, out, NB);
	for (int b = 0; b < NB; b++) {
		const uint8_t *blk = in + 1 + 36 * b;
		for (int j = 0; j < 32; j++) {
			/* one rounding of an exact double product */
			float want = (float)((double)(int8_t)blk[4 + j] * (double)half(ds[b]));
			ck_assert_msg(bits(out[32 * b + j]) == bits(want), "block %d elem %d: %08x vs %08x", b, j,
				      bits(out[32 * b + j]), bits(want));
		}
	}
	ck_assert_uint_eq(bits(out[32 + 3]), 0x80000000u); /* 0 * -1 */
}
END_TEST

/* F4 through the read path: ranges at odd offsets, and the f16 view. */
START_TEST(test_f4_view)
{
	uint64_t shape[2] = {3, 10};
	struct wf_tensor t = {0};
	char err[WF_ERRLEN];
	t.name = (char *)"w";
	t.name_len = 1;
	t.type = WF_T_F4;
	t.ndim = 2;
	t.shape = shape;
	ck_assert_int_eq(wf_tensor_sizes(&t, false, err), WF_OK);
	ck_assert_uint_eq(t.nbytes, 15);
	ck_assert_uint_eq(t.size, 120);
	uint8_t src[15];
	for (int k = 0; k < 15; k++)
		src[k] = (uint8_t)(k * 29 + 3);
	for (uint64_t off = 0; off < 120; off += 3) {
		uint8_t got[120];
		size_t n;
		ck_assert_int_eq(wf_view_read(&t, src, sizeof src, off, 7, got, &n), WF_OK);
		for (size_t k = 0; k < n; k++) {
			uint64_t e = (off + k) / 4;
			float v = e2m1(e % 2 ? src[e / 2] >> 4 : src[e / 2] & 15);
			ck_assert_uint_eq(got[k], ((const uint8_t *)&v)[(off + k) % 4]);
		}
	}
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_F16, err), WF_OK);
	ck_assert_uint_eq(t.size, 60);
	uint16_t h[30];
	size_t n;
	ck_assert_int_eq(wf_view_read(&t, src, sizeof src, 0, 60, h, &n), WF_OK);
	for (int e = 0; e < 30; e++)
		ck_assert_uint_eq(bits(half(h[e])), bits(e2m1(e % 2 ? src[e / 2] >> 4 : src[e / 2] & 15)));
	/* stored: the bytes, rows of 5 */
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_RAW, err), WF_OK);
	uint64_t dims[WF_MAX_DIMS];
	ck_assert_uint_eq(wf_view_shape(&t, dims), 2);
	ck_assert_uint_eq(dims[1], 5);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("subbyte");
	TCase *tc = tcase_create("decode");
	tcase_add_test(tc, test_f4_every_byte);
	tcase_add_test(tc, test_q8_1_blocks);
	tcase_add_test(tc, test_f4_view);
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
