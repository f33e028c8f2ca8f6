/* check_hfq_simd.c - the SIMD twins of the quantized-layer decoders
 * (src/view/wf_hfq_x86.c) against the scalar ones (wf_hfq.c), bit for bit.
 *
 * Layers of every scheme are built here from random bytes (any bit pattern
 * is a valid packed weight or zero), with random act-order g_idx, partial
 * last groups and blocks, row lengths whose tails are not a multiple of 8,
 * and scales in F16, BF16 and F32 of which a share are special (+-0,
 * subnormals, +-Inf, quiet and signalling NaNs with payloads).  Each layer
 * is decoded by both decoders over whole rows and random spans, by the
 * 8-row decoders (GPTQ, AWQ) at every start row, and through
 * wf_hfq_view_read with SIMD off and on (float32, f16, bf16; whole and odd
 * byte ranges), and compared as bytes.  Also: on a CPU with AVX2 and F16C
 * the read path really picks the twins, and wf_simd_set(0) (as
 * WEIGHTFS_NO_SIMD) makes it pick the scalar ones.  Without AVX2/F16C the
 * comparisons are skipped and say so.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "codec/wf_decode.h"
#include "codec/wf_types.h"
#include "view/wf_hfq.h"
#include "view/wf_hfq_simd.h"
#include "view/wf_view.h"

static int have_simd;
static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static uint32_t rnd(uint32_t n)
{
	return (uint32_t)(next() % n);
}

struct layer {
	struct wf_hfq h;
	uint8_t *buf[WF_HFQ_MAX_PARTS];
};

static unsigned type_bytes(int type)
{
	return type == WF_T_F32 || type == WF_T_I32 || type == WF_T_U32 ? 4 : type == WF_T_F16 || type == WF_T_BF16 ? 2 : 1;
}

/* A value of a scale: one in five special, the rest ordinary numbers. */
static uint32_t scale_bits(int type)
{
	static const uint16_t f16[] = {0x0000, 0x8000, 0x0001, 0x83FF, 0x7C00, 0xFC00, 0x7E00, 0x7C01, 0xFE17, 0x7BFF};
	static const uint16_t bf16[] = {0x0000, 0x8000, 0x0001, 0x807F, 0x7F80, 0xFF80, 0x7FC0, 0x7F81, 0xFFC5, 0x7F7F};
	static const uint32_t f32[] = {0, 0x80000000u, 1, 0x807FFFFFu, 0x7F800000u, 0xFF800000u, 0x7FC00000u,
				       0x7F800001u, 0xFFC12345u, 0x7F7FFFFFu};
	bool special = rnd(5) == 0;
	unsigned k = rnd(10);
	uint32_t sign = rnd(2);
	switch (type) {
	case WF_T_F16: return special ? f16[k] : sign << 15 | (0x2000u + rnd(0x2000));
	case WF_T_BF16: return special ? bf16[k] : sign << 15 | (0x3A00u + rnd(0x0800));
	default: return special ? f32[k] : sign << 31 | (0x3A000000u + rnd(0x08000000));
	}
}

static void put(uint8_t *p, int type, uint64_t idx, uint32_t v)
{
	for (unsigned b = 0; b < type_bytes(type); b++)
		p[idx * type_bytes(type) + b] = (uint8_t)(v >> (8 * b));
}

/* Part k: rows x cols of type, random bytes; scales: scale_bits values. */
static uint8_t *part(struct layer *L, int k, int type, uint64_t rows, uint64_t cols, bool scales)
{
	size_t nb = (size_t)(rows * cols) * type_bytes(type);
	uint8_t *p = malloc(nb ? nb : 1);
	ck_assert_ptr_nonnull(p);
	for (size_t i = 0; i < nb; i++)
		p[i] = (uint8_t)next();
	for (uint64_t i = 0; scales && i < rows * cols; i++)
		put(p, type, i, scale_bits(type));
	L->buf[k] = p;
	L->h.part[k] = (struct wf_hfq_part){p, nb, 0, type, rows, cols};
	return p;
}

static void layer_free(struct layer *L)
{
	for (int k = 0; k < WF_HFQ_MAX_PARTS; k++)
		free(L->buf[k]);
}

static const int scale_types[3] = {WF_T_F16, WF_T_BF16, WF_T_F32};

static void build_gptq(struct layer *L, unsigned bits, unsigned in, unsigned out, unsigned group, bool act, int st)
{
	uint64_t groups = (in + group - 1) / group;
	L->h = (struct wf_hfq){.scheme = WF_HFQ_GPTQ, .out = out, .in = in, .bits = bits, .group = group,
			       .groups = groups, .source = "gptq"};
	part(L, WF_HFQ_GPTQ_QW, WF_T_I32, (uint64_t)in * bits / 32, out, false);
	part(L, WF_HFQ_GPTQ_QZ, WF_T_I32, groups, (uint64_t)out * bits / 32, false);
	part(L, WF_HFQ_GPTQ_SC, st, groups, out, true);
	if (act) {
		uint8_t *gi = part(L, WF_HFQ_GPTQ_GI, WF_T_I32, 1, in, false);
		for (unsigned i = 0; i < in; i++)
			put(gi, WF_T_I32, i, rnd((uint32_t)groups));
	}
}

static void build_awq(struct layer *L, unsigned in, unsigned out, unsigned group, int st)
{
	L->h = (struct wf_hfq){.scheme = WF_HFQ_AWQ, .out = out, .in = in, .bits = 4, .group = group, .source = "awq"};
	part(L, WF_HFQ_AWQ_QW, WF_T_I32, in, out / 8, false);
	part(L, WF_HFQ_AWQ_QZ, WF_T_I32, in / group, out / 8, false);
	part(L, WF_HFQ_AWQ_SC, st, in / group, out, true);
}

static void build_mlx(struct layer *L, unsigned bits, unsigned in, unsigned out, unsigned group, int st)
{
	L->h = (struct wf_hfq){.scheme = WF_HFQ_MLX, .out = out, .in = in, .bits = bits, .group = group, .source = "mlx"};
	part(L, WF_HFQ_MLX_W, WF_T_U32, out, (uint64_t)in * bits / 32, false);
	part(L, WF_HFQ_MLX_S, st, out, in / group, true);
	part(L, WF_HFQ_MLX_B, st, out, in / group, true);
}

static void build_bnb(struct layer *L, unsigned in, unsigned out, unsigned block, unsigned nblock)
{
	uint64_t n = (uint64_t)in * out, nb = (n + block - 1) / block;
	L->h = (struct wf_hfq){.scheme = WF_HFQ_BNB, .out = out, .in = in, .block = block, .nblock = nblock,
			       .noffset = nblock ? 0.03125f + (float)rnd(100) / 64 : 0, .qtype = rnd(2) ? "nf4" : "fp4",
			       .source = "bitsandbytes"};
	part(L, WF_HFQ_BNB_W, WF_T_U8, 1, n / 2 + n % 2, false);
	part(L, WF_HFQ_BNB_MAP, WF_T_F32, 1, 16, true);
	if (!nblock) {
		part(L, WF_HFQ_BNB_ABS, WF_T_F32, 1, nb, true);
		return;
	}
	part(L, WF_HFQ_BNB_ABS, WF_T_U8, 1, nb, false);
	part(L, WF_HFQ_BNB_NABS, WF_T_F32, 1, (nb + nblock - 1) / nblock, true);
	part(L, WF_HFQ_BNB_NMAP, WF_T_F32, 1, 256, true);
}

static void build_bnb8(struct layer *L, unsigned in, unsigned out)
{
	L->h = (struct wf_hfq){.scheme = WF_HFQ_BNB8, .out = out, .in = in, .source = "bitsandbytes"};
	uint8_t *w = part(L, WF_HFQ_BNB8_W, WF_T_I8, out, in, false);
	w[0] = 0x80, w[1] = 0x7F, w[2] = 0, w[3] = 0xFF; /* -128, 127, 0, -1 */
	part(L, WF_HFQ_BNB8_SCB, WF_T_F32, 1, out, true);
}

static void build_fp8(struct layer *L, unsigned in, unsigned out, unsigned bh, unsigned bw, int st)
{
	L->h = (struct wf_hfq){.scheme = WF_HFQ_FP8, .out = out, .in = in, .bh = bh, .bw = bw, .source = "fp8"};
	uint8_t *w = part(L, WF_HFQ_FP8_W, WF_T_F8_E4M3, out, in, false);
	for (unsigned c = 0; c < 256 && c < (uint64_t)in * out; c++) /* every code at least once */
		w[c] = (uint8_t)c;
	part(L, WF_HFQ_FP8_S, st, (out + bh - 1) / bh, (in + bw - 1) / bw, true);
}

/* Where two float operands meet (FP8 code x scale, NF4 code x absmax,
 * MLX q * scale + bias), both may be NaN, and which payload comes out is
 * the operand order the compiler picked for a commutative * or + (x86
 * returns the first source's), which no C code fixes: two builds of the
 * scalar decoder may differ there too.  For those schemes two NaNs count
 * as equal; everything else must match bit for bit. */
static bool nan_order_free(int scheme)
{
	return scheme == WF_HFQ_FP8 || scheme == WF_HFQ_BNB || scheme == WF_HFQ_MLX;
}

/* Element at p (4 bytes float32, 2 bytes f16 or bf16) is a NaN. */
static bool is_nan(const uint8_t *p, enum wf_vk vk)
{
	if (vk == WF_VK_F32) {
		uint32_t x;
		memcpy(&x, p, 4);
		return (x & 0x7F800000u) == 0x7F800000u && (x & 0x007FFFFFu);
	}
	uint16_t h = (uint16_t)(p[0] | p[1] << 8);
	return vk == WF_VK_F16 ? (h & 0x7C00) == 0x7C00 && (h & 0x3FF) : (h & 0x7F80) == 0x7F80 && (h & 0x7F);
}

static bool same_float(int scheme, const float *a, const float *b)
{
	return memcmp(a, b, 4) == 0 ||
	       (nan_order_free(scheme) && is_nan((const uint8_t *)a, WF_VK_F32) && is_nan((const uint8_t *)b, WF_VK_F32));
}

/* Both decoders over [col, col+n) of row. */
static void same_span(const struct layer *L, wf_hfq_decode_fn simd, uint64_t row, uint64_t col, size_t n,
		      const char *what)
{
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(L->h.scheme);
	float *a = malloc(n * 4 + 4), *b = malloc(n * 4 + 4);
	ck_assert(a && b);
	memset(a, 0xA5, n * 4 + 4), memset(b, 0x5A, n * 4 + 4);
	sc->decode(&L->h, row, col, n, a);
	simd(&L->h, row, col, n, b);
	for (size_t k = 0; k < n; k++)
		ck_assert_msg(same_float(L->h.scheme, a + k, b + k), "%s: [%llu, %llu] scalar %08x simd %08x", what,
			      (unsigned long long)row, (unsigned long long)(col + k), *(uint32_t *)(void *)(a + k),
			      *(uint32_t *)(void *)(b + k));
	ck_assert_msg(((uint8_t *)b)[n * 4] == 0x5A, "%s: wrote past the span", what);
	free(a), free(b);
}

/* The 8-row decoder (when q has one at row) against 8 scalar rows. */
static void same_rows8(const struct layer *L, uint64_t row, uint64_t col, size_t n, const char *what)
{
	wf_hfq_rows8_fn f = wf_hfq_rows8_decoder(&L->h, row);
	if (!f)
		return;
	size_t ld = n + 3;
	float *a = malloc(n * 4 + 4), *b = malloc((8 * ld) * 4);
	ck_assert(a && b);
	memset(b, 0x5A, 8 * ld * 4);
	f(&L->h, row, col, n, b, ld);
	for (unsigned r = 0; r < 8; r++) {
		wf_hfq_scheme(L->h.scheme)->decode(&L->h, row + r, col, n, a);
		for (size_t k = 0; k < n; k++)
			ck_assert_msg(same_float(L->h.scheme, a + k, b + r * ld + k),
				      "%s: 8 rows from %llu, row +%u, col %llu", what, (unsigned long long)row, r,
				      (unsigned long long)(col + k));
		ck_assert_msg(((uint8_t *)(b + r * ld))[n * 4] == 0x5A, "%s: 8 rows wrote past the span", what);
	}
	free(a), free(b);
}

/* Bytes got of the view from byte off (scalar or SIMD) against the
 * whole view read by the scalar path, NaNs as nan_order_free says. */
static void same_bytes(const struct layer *L, enum wf_vk vk, const uint8_t *whole, uint64_t off, const uint8_t *got,
		       size_t n, const char *what)
{
	unsigned es = vk == WF_VK_F32 ? 4 : 2;
	for (size_t k = 0; k < n; k++) {
		uint64_t e = (off + k) / es;
		if (got[k] != whole[off + k])
			ck_assert_msg(nan_order_free(L->h.scheme) && is_nan(whole + e * es, vk),
				      "%s: view %d byte %llu", what, (int)vk, (unsigned long long)(off + k));
	}
}

/* wf_hfq_view_read of the whole layer and of odd ranges, SIMD off and on. */
static void same_views(const struct layer *L, const char *what)
{
	uint64_t shape[2] = {L->h.out, L->h.in};
	struct wf_tensor t = {.name = (char *)"l.weight", .name_len = 8, .type = wf_hfq_scheme(L->h.scheme)->type,
			      .ndim = 2, .shape = shape, .nelems = L->h.out * L->h.in, .q = &L->h};
	char err[WF_ERRLEN];
	for (enum wf_vk vk = WF_VK_F32; vk <= WF_VK_BF16; vk++) {
		ck_assert_int_eq(wf_tensor_set_view(&t, vk, err), WF_OK);
		size_t size = (size_t)t.size, n = 0;
		uint8_t *whole = malloc(size), *b = malloc(size + 8);
		ck_assert(whole && b);
		ck_assert_int_eq(wf_simd_set(0), 0);
		ck_assert_int_eq(wf_hfq_view_read(&t, 0, size, whole, &n), WF_OK);
		ck_assert_uint_eq(n, size);
		for (int k = 0; k < 16; k++) {
			uint64_t off = k < 2 ? 0 : rnd((uint32_t)size);
			size_t len = k < 2 ? size : 1 + rnd((uint32_t)(size - off));
			size_t shift = k < 4 ? 0 : (size_t)rnd(4); /* odd destination alignment too */
			if (k == 2) { /* whole rows from a row: the in-place path */
				size_t rowb = size / L->h.out, r0 = rnd((uint32_t)L->h.out);
				off = r0 * rowb, len = (1 + rnd((uint32_t)(L->h.out - r0))) * rowb;
			}
			wf_simd_set(k % 2 == 0);       /* k 0: the whole view with SIMD */
			ck_assert_int_eq(wf_hfq_view_read(&t, off, len, b + shift, &n), WF_OK);
			ck_assert_uint_eq(n, len);
			same_bytes(L, vk, whole, off, b + shift, n, what);
		}
		free(whole), free(b);
	}
}

static void compare(struct layer *L, const char *what)
{
	char err[WF_ERRLEN];
	ck_assert_msg(wf_hfq_check(&L->h, "l", 1, err) == WF_OK, "%s: %s", what, err);
	wf_hfq_decode_fn simd = wf_hfq_simd_decoder(&L->h);
	if (!have_simd) {
		printf("check_hfq_simd: %s: no AVX2/F16C on this CPU, comparison skipped\n", what);
		layer_free(L);
		return;
	}
	ck_assert_msg(simd != NULL, "%s: no SIMD decoder", what);
	uint64_t in = L->h.in, out = L->h.out;
	for (uint64_t row = 0; row < out; row++) {
		same_span(L, simd, row, 0, (size_t)in, what);
		for (int k = 0; k < 4; k++) {
			uint64_t col = rnd((uint32_t)in);
			same_span(L, simd, row, col, 1 + rnd((uint32_t)(in - col)), what);
		}
	}
	wf_simd_set(1);
	for (uint64_t row = 0; row + 8 <= out; row++) {
		uint64_t col = row % 3 ? rnd((uint32_t)in) : 0;
		same_rows8(L, row, col, (size_t)(row % 3 ? 1 + rnd((uint32_t)(in - col)) : in - col), what);
	}
	same_views(L, what);
	wf_simd_set(1);
	layer_free(L);
}

START_TEST(test_gptq)
{
	static const unsigned bits[] = {2, 3, 4, 8};
	/* group 40: a partial last group and groups not a multiple of 8 */
	static const unsigned groups[] = {32, 40, 128, 0};
	char what[96];
	for (int b = 0; b < 4; b++)
		for (int g = 0; g < 4; g++)
			for (int act = 0; act < 2; act++) {
				unsigned in = bits[b] == 8 ? 196 : bits[b] == 4 ? 168 : 160; /* tails of 4, 8 and 0 */
				unsigned out = bits[b] == 3 ? 32 * (1 + rnd(2)) : 16 * (1 + rnd(3)) + (bits[b] == 8 ? 4 : 0);
				unsigned group = groups[g] ? groups[g] : in;
				struct layer L = {0};
				build_gptq(&L, bits[b], in, out, group, act, scale_types[(b + g + act) % 3]);
				snprintf(what, sizeof what, "GPTQ %u bits g%u%s", bits[b], group, act ? " act-order" : "");
				compare(&L, what);
			}
}
END_TEST

START_TEST(test_awq)
{
	static const unsigned groups[] = {8, 20, 32, 64};
	char what[96];
	for (int g = 0; g < 4; g++)
		for (int s = 0; s < 3; s++) {
			struct layer L = {0};
			build_awq(&L, groups[g] * (2 + rnd(3)), 8 * (2 + rnd(4)), groups[g], scale_types[s]);
			snprintf(what, sizeof what, "AWQ g%u scale type %d", groups[g], scale_types[s]);
			compare(&L, what);
		}
	/* wider than a band's column block (256) and taller than a band (64 rows) */
	struct layer L = {0};
	build_awq(&L, 320, 72, 64, WF_T_F16);
	compare(&L, "AWQ [72, 320] g64");
}
END_TEST

START_TEST(test_mlx)
{
	static const unsigned bits[] = {2, 3, 4, 5, 6, 8};
	char what[96];
	for (int b = 0; b < 6; b++)
		for (int s = 0; s < 3; s++) {
			unsigned group = s == 1 ? 64 : 32, in = group * (1 + rnd(4));
			struct layer L = {0};
			build_mlx(&L, bits[b], in, 5 + rnd(7), group, scale_types[s]);
			snprintf(what, sizeof what, "MLX %u bits g%u in %u", bits[b], group, in);
			compare(&L, what);
		}
}
END_TEST

START_TEST(test_bnb)
{
	static const unsigned blocks[] = {64, 24, 20, 4096};
	char what[96];
	for (int b = 0; b < 4; b++)
		for (int nested = 0; nested < 2; nested++) {
			unsigned in = 37 + rnd(100), out = 3 + rnd(9); /* odd rows: elements straddle bytes */
			struct layer L = {0};
			build_bnb(&L, in, out, blocks[b], nested ? 3 + rnd(5) : 0);
			snprintf(what, sizeof what, "BNB4 %s block %u%s", L.h.qtype, blocks[b], nested ? " nested" : "");
			compare(&L, what);
		}
}
END_TEST

START_TEST(test_bnb8)
{
	char what[96];
	for (int k = 0; k < 8; k++) {
		unsigned in = k < 2 ? 8 * (1 + (unsigned)k) : 1 + rnd(200), out = 1 + rnd(40); /* all tails */
		struct layer L = {0};
		build_bnb8(&L, in, out);
		snprintf(what, sizeof what, "BNB8 [%u, %u]", out, in);
		compare(&L, what);
	}
}
END_TEST

START_TEST(test_fp8)
{
	static const unsigned blk[][2] = {{128, 128}, {3, 8}, {2, 5}, {1, 1000}};
	char what[96];
	for (int b = 0; b < 4; b++)
		for (int s = 0; s < 3; s++) {
			struct layer L = {0};
			build_fp8(&L, 61 + rnd(140), 5 + rnd(20), blk[b][0], blk[b][1], scale_types[s]);
			snprintf(what, sizeof what, "FP8 %ux%u scale type %d", blk[b][0], blk[b][1], scale_types[s]);
			compare(&L, what);
		}
}
END_TEST

/* The read path picks the twins when SIMD is on, the scalar ones when off. */
START_TEST(test_dispatch)
{
	struct layer L[6];
	memset(L, 0, sizeof L);
	build_fp8(&L[0], 64, 8, 128, 128, WF_T_F32);
	build_gptq(&L[1], 4, 64, 16, 32, true, WF_T_F16);
	build_awq(&L[2], 64, 16, 32, WF_T_F16);
	build_mlx(&L[3], 4, 64, 8, 32, WF_T_BF16);
	build_bnb(&L[4], 64, 8, 64, 0);
	build_bnb8(&L[5], 64, 8);
	for (int k = 0; k < 6; k++) {
		const struct wf_hfq *q = &L[k].h;
		wf_hfq_decode_fn scalar = wf_hfq_scheme(q->scheme)->decode, simd = wf_hfq_simd_decoder(q);
		ck_assert_int_eq(wf_simd_set(0), 0);
		ck_assert_ptr_eq((void *)wf_hfq_decoder(q), (void *)scalar);
		ck_assert_ptr_null((void *)wf_hfq_rows8_decoder(q, 0));
		ck_assert_int_eq(wf_simd_set(1), have_simd);
		if (!have_simd) {
			ck_assert_ptr_eq((void *)wf_hfq_decoder(q), (void *)scalar);
			continue;
		}
		ck_assert_ptr_nonnull((void *)simd);
		ck_assert_ptr_ne((void *)simd, (void *)scalar);
		ck_assert_ptr_eq((void *)wf_hfq_decoder(q), (void *)simd);
		bool across = q->scheme == WF_HFQ_GPTQ || q->scheme == WF_HFQ_AWQ;
		ck_assert_int_eq(wf_hfq_rows8_decoder(q, 0) != NULL, across);
	}
	/* AWQ's 8 rows start at a word column; GPTQ's anywhere with 8 left */
	ck_assert_int_eq(wf_hfq_rows8_decoder(&L[2].h, 1) == NULL, 1);
	ck_assert_int_eq(wf_hfq_rows8_decoder(&L[1].h, 3) != NULL, have_simd);
	ck_assert_int_eq(wf_hfq_rows8_decoder(&L[1].h, 9) == NULL, 1);
	for (int k = 0; k < 6; k++)
		layer_free(&L[k]);
}
END_TEST

int main(void)
{
#ifdef WF_HAVE_X86_SIMD
	have_simd = wf_cpu_has_simd();
#endif
	Suite *s = suite_create("hfq_simd");
	TCase *tc = tcase_create("core");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dispatch);
	tcase_add_test(tc, test_gptq);
	tcase_add_test(tc, test_awq);
	tcase_add_test(tc, test_mlx);
	tcase_add_test(tc, test_bnb);
	tcase_add_test(tc, test_bnb8);
	tcase_add_test(tc, test_fp8);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
