/* check_hfq.c - the quantized-layer decoders (wf_hfq.c) as pure functions
 * on byte buffers, without a model or FUSE.
 *
 * Each case builds its parts here from chosen values (q, zeros, scales,
 * group of each input) with its own bit-stream writer, and expects
 * (q - z) * s computed from those values, compared as bits; the corrupt
 * cases expect wf_hfq_check to refuse with a message naming the layer.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "view/wf_hfq.h"
#include "codec/wf_round.h"
#include "model/wf_st.h"
#include "view/wf_view.h"
#include "codec/wf_types.h"

static uint32_t rng_state = 1;

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

/* Writes value v (bits wide) at stream position k of the little-endian
 * stream whose 32-bit word w sits at words[w * stride]. */
static void put_field(uint32_t *words, size_t stride, size_t k, unsigned bits, uint32_t v)
{
	for (unsigned b = 0; b < bits; b++) {
		size_t bit = k * bits + b;
		if (v >> b & 1)
			words[(bit / 32) * stride] |= 1u << (bit % 32);
	}
}

static void le32_out(uint8_t *dst, const uint32_t *w, size_t n)
{
	for (size_t i = 0; i < n; i++)
		for (int b = 0; b < 4; b++)
			dst[4 * i + b] = (uint8_t)(w[i] >> (8 * b));
}

/* A GPTQ v1 layer: in inputs, out outputs, one of the 2/3/4/8 bit widths. */
struct gptq {
	unsigned bits, group, in, out, groups;
	uint8_t *qw, *qz, *sc, *gi;
	int32_t *q, *z;
	float *s;
	uint32_t *g;
	struct wf_hfq h;
};

static void gptq_build(struct gptq *L, unsigned bits, unsigned in, unsigned out, unsigned group)
{
	memset(L, 0, sizeof *L);
	L->bits = bits, L->in = in, L->out = out, L->group = group, L->groups = (in + group - 1) / group;
	size_t qwn = (size_t)in * bits / 32 * out, qzn = (size_t)L->groups * out * bits / 32;
	uint32_t *qw = calloc(qwn, 4), *qz = calloc(qzn, 4);
	L->q = malloc(sizeof(int32_t) * in * out);
	L->z = malloc(sizeof(int32_t) * L->groups * out);
	L->s = malloc(sizeof(float) * L->groups * out);
	L->g = malloc(sizeof(uint32_t) * in);
	L->qw = malloc(qwn * 4), L->qz = malloc(qzn * 4), L->sc = malloc((size_t)L->groups * out * 2),
	L->gi = malloc((size_t)in * 4);
	ck_assert(qw && qz && L->q && L->z && L->s && L->g && L->qw && L->qz && L->sc && L->gi);
	uint32_t mask = (1u << bits) - 1;
	for (unsigned i = 0; i < in; i++)
		L->g[i] = i / group;
	for (unsigned i = in - 1; i > 0; i--) { /* act-order: a permutation of the groups */
		unsigned j = rnd(i + 1);
		uint32_t t = L->g[i];
		L->g[i] = L->g[j], L->g[j] = t;
	}
	for (unsigned i = 0; i < in; i++)
		for (unsigned o = 0; o < out; o++) {
			L->q[i * out + o] = (int32_t)rnd(mask + 1);
			put_field(qw + o, out, i, bits, (uint32_t)L->q[i * out + o]);
		}
	for (unsigned g = 0; g < L->groups; g++)
		for (unsigned o = 0; o < out; o++) {
			int32_t z = o < 2 ? 0 : (int32_t)rnd(mask + 1); /* zeros of 0: borrows */
			L->z[g * out + o] = z;
			/* v1: 3 bits store (z - 1) & 7 per field; 2/4/8 store z in the
			 * words, which then lose K as whole words (below) */
			put_field(qz + (size_t)g * out * bits / 32, 1, o, bits, bits == 3 ? (uint32_t)(z - 1) & 7 : (uint32_t)z);
			uint16_t h = (uint16_t)(0x2000 + rnd(0x1800)) | (rnd(2) ? 0x8000 : 0);
			L->sc[2 * (g * out + o)] = (uint8_t)h, L->sc[2 * (g * out + o) + 1] = (uint8_t)(h >> 8);
			/* the half's value by its definition: normal, exponent e */
			int e = (h >> 10) & 31;
			float v = (float)(1024 + (h & 1023));
			for (int k = e - 25; k < 0; k++)
				v *= 0.5f;
			L->s[g * out + o] = (h & 0x8000) ? -v : v;
		}
	static const uint32_t K[9] = {[2] = 0x55555555u, [4] = 0x11111111u, [8] = 0x01010101u};
	for (size_t w = 0; bits != 3 && w < qzn; w++)
		qz[w] -= K[bits];
	le32_out(L->qw, qw, qwn);
	le32_out(L->qz, qz, qzn);
	le32_out(L->gi, L->g, in);
	free(qw);
	free(qz);
	L->h = (struct wf_hfq){.scheme = WF_HFQ_GPTQ, .out = out, .in = in, .bits = bits, .group = group,
			       .groups = L->groups, .source = "gptq"};
	L->h.part[WF_HFQ_GPTQ_QW] = (struct wf_hfq_part){L->qw, qwn * 4, 0, WF_T_I32, (uint64_t)in * bits / 32, out};
	L->h.part[WF_HFQ_GPTQ_QZ] = (struct wf_hfq_part){L->qz, qzn * 4, 0, WF_T_I32, L->groups, (uint64_t)out * bits / 32};
	L->h.part[WF_HFQ_GPTQ_SC] = (struct wf_hfq_part){L->sc, (uint64_t)L->groups * out * 2, 0, WF_T_F16, L->groups, out};
	L->h.part[WF_HFQ_GPTQ_GI] = (struct wf_hfq_part){L->gi, (uint64_t)in * 4, 0, WF_T_I32, 1, in};
}

static void gptq_free(struct gptq *L)
{
	free(L->qw), free(L->qz), free(L->sc), free(L->gi), free(L->q), free(L->z), free(L->s), free(L->g);
}

static float gptq_want(const struct gptq *L, unsigned o, unsigned i)
{
	uint32_t g = L->g[i];
	return (float)(L->q[i * L->out + o] - L->z[g * L->out + o]) * L->s[g * L->out + o];
}

START_TEST(test_gptq_rows)
{
	static const unsigned bits[] = {2, 3, 4, 8};
	char err[WF_ERRLEN];
	struct gptq L;
	rng_state = 7 + (uint32_t)_i;
	gptq_build(&L, bits[_i], 96, 64, 40); /* 3 groups, the last one partial */
	ck_assert_msg(wf_hfq_check(&L.h, "l", 1, err) == WF_OK, "%s", err);
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(WF_HFQ_GPTQ);
	float row[96];
	for (unsigned o = 0; o < L.out; o++) {
		unsigned c0 = o % 7, n = L.in - c0 - o % 5; /* odd spans of the row */
		sc->decode(&L.h, o, c0, n, row);
		for (unsigned k = 0; k < n; k++)
			ck_assert_msg(bits_of(row[k]) == bits_of(gptq_want(&L, o, c0 + k)), "%u bits: [%u, %u]", bits[_i],
				      o, c0 + k);
	}
	gptq_free(&L);
}
END_TEST

/* The view of a layer: any byte range, f32 and f16, the same as decoding
 * the whole weight and rounding it. */
START_TEST(test_view_ranges)
{
	struct gptq L;
	rng_state = 99;
	gptq_build(&L, 4, 64, 32, 16);
	uint64_t shape[2] = {32, 64};
	struct wf_tensor t = {.name = (char *)"l.weight", .name_len = 8, .type = WF_T_HFQ_GPTQ, .ndim = 2,
			      .shape = shape, .nelems = 32 * 64, .q = &L.h};
	char err[WF_ERRLEN];
	static float whole[32 * 64];
	static uint16_t halfs[32 * 64];
	for (unsigned o = 0; o < 32; o++)
		for (unsigned i = 0; i < 64; i++)
			whole[o * 64 + i] = gptq_want(&L, o, i);
	wf_f32_to_f16_n(whole, halfs, 32 * 64);
	for (enum wf_vk out = WF_VK_F32; out <= WF_VK_F16; out++) {
		ck_assert_int_eq(wf_tensor_set_view(&t, out, err), WF_OK);
		const uint8_t *ref = out == WF_VK_F32 ? (const uint8_t *)whole : (const uint8_t *)halfs;
		ck_assert_uint_eq(t.size, 32 * 64 * (out == WF_VK_F32 ? 4u : 2u));
		for (int k = 0; k < 300; k++) {
			uint64_t off = rnd((uint32_t)t.size + 4);
			size_t len = k % 3 ? rnd(700) : rnd((uint32_t)t.size + 9);
			static uint8_t got[32 * 64 * 4 + 16];
			size_t n = 99;
			ck_assert_int_eq(wf_hfq_view_read(&t, off, len, got, &n), WF_OK);
			size_t want = off >= t.size ? 0 : len < t.size - off ? len : (size_t)(t.size - off);
			ck_assert_uint_eq(n, want);
			ck_assert(memcmp(got, ref + off, n) == 0);
		}
	}
	/* a decoded layer has no stored form */
	ck_assert_int_eq(wf_tensor_set_view(&t, WF_VK_RAW, err), WF_ERR_UNSUP);
	gptq_free(&L);
}
END_TEST

/* Corrupt parts are refused with the layer's name, before any decode. */
START_TEST(test_refusals)
{
	char err[WF_ERRLEN];
	struct gptq L;
	rng_state = 5;
	gptq_build(&L, 4, 64, 32, 16);
	struct wf_hfq h = L.h;
	uint32_t bad = 4; /* 4 groups: outside [0, 4) */
	memcpy(L.gi + 4 * 9, &bad, 4);
	ck_assert_int_eq(wf_hfq_check(&h, "model.q_proj", 12, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "model.q_proj") && strstr(err, "g_idx[9]"), "%s", err);
	memset(L.gi + 4 * 9, 0, 4);
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_OK);
	h.part[WF_HFQ_GPTQ_SC].rows = 3; /* scales of 3 groups, bytes of 4 */
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	h = L.h;
	h.bits = 5;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_UNSUP);
	h = L.h;
	h.part[WF_HFQ_GPTQ_QZ].p = NULL;
	ck_assert_int_eq(wf_hfq_check(&h, "l", 1, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "qzeros"), "%s", err);
	gptq_free(&L);

	/* FP8: a scale grid too small for its weight */
	static uint8_t w[300 * 260];
	static uint8_t s[3 * 3 * 4];
	struct wf_hfq f = {.scheme = WF_HFQ_FP8, .out = 300, .in = 260, .bh = 128, .bw = 128};
	f.part[WF_HFQ_FP8_W] = (struct wf_hfq_part){w, sizeof w, 0, WF_T_F8_E4M3, 300, 260};
	f.part[WF_HFQ_FP8_S] = (struct wf_hfq_part){s, sizeof s, 0, WF_T_F32, 3, 3};
	ck_assert_int_eq(wf_hfq_check(&f, "fc", 2, err), WF_OK);
	f.part[WF_HFQ_FP8_S] = (struct wf_hfq_part){s, 16, 0, WF_T_F32, 2, 2};
	ck_assert_int_eq(wf_hfq_check(&f, "fc", 2, err), WF_ERR_FORMAT);
	ck_assert_msg(strstr(err, "'fc'") && strstr(err, "scale grid"), "%s", err);
}
END_TEST

/* FP8 blocks with partial edges: each element is e4m3 * its block's scale. */
START_TEST(test_fp8_blocks)
{
	static uint8_t w[130 * 131];
	static float sv[2 * 2];
	static uint8_t s[2 * 2 * 4];
	for (size_t k = 0; k < sizeof w; k++)
		w[k] = (uint8_t)(k * 131 + 7);
	for (int k = 0; k < 4; k++) {
		sv[k] = 0.001f * (float)(k + 1);
		memcpy(s + 4 * k, &sv[k], 4);
	}
	struct wf_hfq f = {.scheme = WF_HFQ_FP8, .out = 130, .in = 131, .bh = 128, .bw = 128};
	f.part[WF_HFQ_FP8_W] = (struct wf_hfq_part){w, sizeof w, 0, WF_T_F8_E4M3, 130, 131};
	f.part[WF_HFQ_FP8_S] = (struct wf_hfq_part){s, sizeof s, 0, WF_T_F32, 2, 2};
	char err[WF_ERRLEN];
	ck_assert_msg(wf_hfq_check(&f, "fc", 2, err) == WF_OK, "%s", err);
	const struct wf_type *e4 = wf_type_get(WF_T_F8_E4M3);
	float row[131], one;
	for (unsigned r = 0; r < 130; r++) {
		wf_hfq_scheme(WF_HFQ_FP8)->decode(&f, r, 0, 131, row);
		for (unsigned c = 0; c < 131; c++) {
			e4->decode(&w[r * 131 + c], &one, 1);
			float want = one * sv[(r / 128) * 2 + c / 128];
			ck_assert_msg(bits_of(row[c]) == bits_of(want), "[%u, %u]", r, c);
		}
	}
}
END_TEST

/* A config string that is refused goes into the message quoted and
 * escaped: a refusal stays one line whatever config.json holds (found by
 * fuzz_hfq's one-line check; corpus/hfq/bad_config_newline_*). */
static const char *const newline_configs[] = {
	"{\"quantization_config\": {\"quant_method\": \"fp8\", \"fmt\": \"a\\nb\"}}",
	"{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": \"a\\nb\"}}",
	"{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", "
	"\"config_groups\": {\"a\\nb\": {\"weights\": {}}}}}",
	"{\"quantization_config\": {\"quant_method\": \"compressed-tensors\", \"format\": \"float-quantized\", "
	"\"config_groups\": {\"a\\nb\": {\"weights\": {\"num_bits\": 8, \"type\": \"float\", \"strategy\": \"block\"}}}}}",
	"{\"quantization_config\": {\"quant_method\": \"gptq\", \"checkpoint_format\": \"a\\nb\"}}",
	"{\"quantization_config\": {\"quant_method\": \"awq\", \"version\": \"a\\nb\"}}",
	"{\"quantization\": {\"mode\": \"a\\nb\", \"bits\": 4, \"group_size\": 32}}",
};

START_TEST(test_config_one_line)
{
	/* one F32 tensor "w" = 1.0, and the config as the model's sidecar */
	static const char hdr[] = "{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}";
	static uint8_t buf[8 + sizeof hdr - 1 + 4];
	uint64_t hl = sizeof hdr - 1;
	for (int k = 0; k < 8; k++)
		buf[k] = (uint8_t)(hl >> (8 * k));
	memcpy(buf + 8, hdr, hl);
	memcpy(buf + 8 + hl, "\0\0\x80\x3f", 4);
	struct wf_model *m;
	char err[WF_ERRLEN];
	ck_assert_msg(wf_st_parse(&m, buf, sizeof buf, err) == WF_OK, "%s", err);
	m->sidecars = calloc(1, sizeof *m->sidecars);
	ck_assert_ptr_nonnull(m->sidecars);
	m->n_sidecars = 1;
	m->sidecars[0].name = strdup("config.json");
	m->sidecars[0].data = strdup(newline_configs[_i]);
	m->sidecars[0].len = strlen(newline_configs[_i]);
	err[0] = '\0';
	ck_assert_int_eq(wf_hfq_apply(m, WF_VK_F32, err), WF_ERR_UNSUP);
	ck_assert_msg(err[0] && !strchr(err, '\n') && strstr(err, "'a\\x0ab'"), "%s", err);
	wf_model_free(m);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hfq");
	TCase *tc = tcase_create("decode");
	tcase_add_loop_test(tc, test_gptq_rows, 0, 4);
	tcase_add_test(tc, test_view_ranges);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_fp8_blocks);
	tcase_add_loop_test(tc, test_config_one_line, 0, (int)(sizeof newline_configs / sizeof *newline_configs));
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
