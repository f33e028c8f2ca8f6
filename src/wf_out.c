/* wf_out.c - output dtypes of a tensor's file (see wf_out.h). */
#include "wf_out.h"
#include "wf_buf.h"
#include "wf_hfq.h"
#include "wf_types.h"
#include "wf_view.h"

#include <string.h>

#if defined(__x86_64__) || defined(__i386__)
#include <immintrin.h>
#define HAVE_F16C_PATH 1
#endif

static const struct {
	const char *name;
	enum wf_out out;
} out_names[] = {
	{"f32", WF_OUT_F32}, {"float32", WF_OUT_F32}, {"f16", WF_OUT_F16}, {"float16", WF_OUT_F16},
	{"bf16", WF_OUT_BF16}, {"bfloat16", WF_OUT_BF16}, {"stored", WF_OUT_STORED},
};

bool wf_out_parse(const char *s, enum wf_out *out)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(out_names); i++) {
		if (strcmp(s, out_names[i].name) == 0) {
			*out = out_names[i].out;
			return true;
		}
	}
	return false;
}

const char *wf_out_name(enum wf_out out)
{
	static const char *const names[] = {"f32", "f16", "bf16", "stored"};
	return (unsigned)out < WF_ARRAY_LEN(names) ? names[out] : "?";
}

/* A float type whose elements can be converted: decoded types, and raw F32.
 * A type with no decoder is not: it is served as its stored bytes under
 * every option, so every file of a model reads. */
static bool is_float(const struct wf_type *ty)
{
	return ty->kind == WF_VIEW_DECODE || (ty->kind == WF_VIEW_RAW && strcmp(ty->dtype, "float32") == 0);
}

enum wf_err wf_tensor_set_view(struct wf_tensor *t, enum wf_out out, char *err)
{
	char q[96];
	const struct wf_type *ty = wf_type_get(t->type);
	enum wf_vk vk;
	if (t->q || ty->kind == WF_VIEW_HFQ) {
		/* a decoded layer has no stored form of its own: under stored
		 * the model shows its parts instead (wf_hfq_apply) */
		if (out == WF_OUT_STORED || !t->q)
			return wf_fail(err, WF_ERR_UNSUP,
				       "tensor %s: a decoded %s layer has no stored form; its packed parts show "
				       "when the model is opened with dtype stored",
				       wf_quote(q, sizeof q, t->name, t->name_len), ty->name);
		t->vk = (uint8_t)(out == WF_OUT_F16 ? WF_VK_F16 : out == WF_OUT_BF16 ? WF_VK_BF16 : WF_VK_F32);
		t->size = t->nelems * wf_view_elem_size(t);
		return WF_OK;
	}
	if (!is_float(ty) || out == WF_OUT_STORED)
		vk = WF_VK_RAW;
	else if (out == WF_OUT_F32)
		vk = ty->kind == WF_VIEW_RAW ? WF_VK_RAW : WF_VK_F32;
	else if (out == WF_OUT_F16)
		vk = t->type == WF_T_F16 ? WF_VK_RAW : WF_VK_F16;
	else
		vk = t->type == WF_T_BF16 ? WF_VK_RAW : WF_VK_BF16;
	if (vk == WF_VK_RAW && !ty->stored && ty->blck > 1 && out == WF_OUT_STORED) {
		/* blocks as bytes on request: each row must be whole bytes (a
		 * type with no decoder is shown whole anyway: wf_view_shape) */
		uint64_t inner = t->ndim ? t->shape[t->ndim - 1] : 1;
		if (inner % ty->blck != 0 && ty->kind != WF_VIEW_NONE)
			return wf_fail(err, WF_ERR_UNSUP,
				       "tensor %s: -o dtype=stored: its rows of %" PRIu64 " %s elements are not "
				       "whole blocks of %u, so they cannot be shown as bytes",
				       wf_quote(q, sizeof q, t->name, t->name_len), inner, ty->name, ty->blck);
	}
	t->vk = (uint8_t)vk;
	t->size = vk == WF_VK_RAW ? t->nbytes : t->nelems * wf_view_elem_size(t);
	return WF_OK;
}

enum wf_err wf_model_set_view(struct wf_model *m, enum wf_out out, char *err)
{
	enum wf_err hrc = wf_hfq_apply(m, out, err);
	if (hrc != WF_OK)
		return hrc;
	for (size_t i = 0; i < m->n_tensors; i++) {
		enum wf_err rc = wf_tensor_set_view(&m->tensors[i], out, err);
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

const char *wf_view_dtype(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	switch (wf_view_kind(t)) {
	case WF_VK_RAW: return ty->stored ? ty->stored : "uint8";
	case WF_VK_F16: return "float16";
	case WF_VK_BF16: return "bfloat16";
	default: return "float32";
	}
}

const char *wf_view_descr(const struct wf_tensor *t)
{
	static const struct {
		const char *dtype, *descr;
	} map[] = {
		{"float32", "<f4"}, {"float16", "<f2"}, {"float64", "<f8"}, {"bfloat16", "<u2"},
		{"int8", "|i1"}, {"int16", "<i2"}, {"int32", "<i4"}, {"int64", "<i8"},
		{"uint8", "|u1"}, {"uint16", "<u2"}, {"uint32", "<u4"}, {"uint64", "<u8"},
		{"bool", "|b1"}, {"complex64", "<c8"},
	};
	const char *dt = wf_view_dtype(t);
	for (size_t i = 0; i < WF_ARRAY_LEN(map); i++)
		if (strcmp(dt, map[i].dtype) == 0)
			return map[i].descr;
	return "|u1"; /* float8 variants: one byte each, for ml_dtypes to view */
}

const char *wf_view_st_dtype(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	switch (wf_view_kind(t)) {
	case WF_VK_RAW: return ty->stored ? ty->name : "U8";
	case WF_VK_F16: return "F16";
	case WF_VK_BF16: return "BF16";
	default: return "F32";
	}
}

/* One row per view dtype: the suffix is what a desktop sees, so it must
 * stay stable (the mime XML lists the same). */
static const struct {
	const char *dtype, *suffix;
} suffixes[] = {
	{"float32", "f32"}, {"float16", "f16"}, {"bfloat16", "bf16"}, {"float64", "f64"},
	{"int8", "i8"}, {"int16", "i16"}, {"int32", "i32"}, {"int64", "i64"},
	{"uint8", "u8"}, {"uint16", "u16"}, {"uint32", "u32"}, {"uint64", "u64"},
	{"bool", "bool"}, {"complex64", "c64"},
	{"float8_e4m3fn", "f8e4m3"}, {"float8_e5m2", "f8e5m2"}, {"float8_e8m0fnu", "f8e8m0"},
	{"float8_e4m3fnuz", "f8e4m3fnuz"}, {"float8_e5m2fnuz", "f8e5m2fnuz"},
};

const char *wf_dtype_suffix(const char *dtype)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(suffixes); i++)
		if (strcmp(dtype, suffixes[i].dtype) == 0)
			return suffixes[i].suffix;
	return NULL;
}

const char *wf_view_suffix(const struct wf_tensor *t)
{
	const char *s = wf_dtype_suffix(wf_view_dtype(t));
	/* every dtype of the type table is above; bytes are the safe reading */
	return s ? s : "u8";
}

uint32_t wf_view_shape(const struct wf_tensor *t, uint64_t *dims)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint32_t n = t->ndim;
	memcpy(dims, t->shape, n * sizeof *dims);
	if (wf_view_kind(t) == WF_VK_RAW && !ty->stored && ty->blck > 1) {
		/* rows that are no whole bytes (only a type with no decoder gets
		 * here with them) are shown as one row of all the bytes */
		if (n == 0 || dims[n - 1] % ty->blck != 0)
			dims[(n = 1) - 1] = t->nbytes;
		else
			dims[n - 1] = dims[n - 1] / ty->blck * ty->bytes;
	}
	return n;
}

void wf_view_shape_json(const struct wf_tensor *t, struct wf_buf *b)
{
	uint64_t dims[WF_MAX_DIMS];
	uint32_t n = wf_view_shape(t, dims);
	wf_buf_putc(b, '[');
	for (uint32_t d = 0; d < n; d++)
		wf_buf_printf(b, d ? ", %" PRIu64 : "%" PRIu64, dims[d]);
	wf_buf_putc(b, ']');
}

/* ------------------------------------------------------------ rounding */

static uint32_t f32_bits(float f)
{
	uint32_t u;
	memcpy(&u, &f, 4);
	return u;
}

uint16_t wf_f32_to_f16(float f)
{
	uint32_t u = f32_bits(f);
	uint16_t sign = (uint16_t)((u >> 16) & 0x8000);
	uint32_t a = u & 0x7fffffff;
	if (a > 0x7f800000)
		return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));
	if (a >= 0x477ff000) /* 65520 and up round to infinity (65520 is a tie, to even) */
		return (uint16_t)(sign | 0x7c00);
	if (a >= 0x38800000) { /* a normal half: rebias the exponent, round the 13 dropped bits */
		uint32_t r = a - 0x38000000;
		r += 0xfff + ((r >> 13) & 1);
		return (uint16_t)(sign | (r >> 13));
	}
	if (a <= 0x33000000) /* at most 2^-25, half the smallest subnormal: to zero */
		return sign;
	/* a subnormal half: units of 2^-24 */
	uint32_t e = a >> 23, m = (a & 0x7fffff) | 0x800000, sh = 126 - e;
	uint32_t qv = m >> sh, rem = m & ((1u << sh) - 1), half = 1u << (sh - 1);
	if (rem > half || (rem == half && (qv & 1)))
		qv++;
	return (uint16_t)(sign | qv);
}

uint16_t wf_f32_to_bf16(float f)
{
	uint32_t u = f32_bits(f);
	if ((u & 0x7fffffff) > 0x7f800000)
		return (uint16_t)((u >> 16) | 0x0040);
	return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

#ifdef HAVE_F16C_PATH
__attribute__((target("avx2,f16c")))
static void f16_n_f16c(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		__m256 v = _mm256_loadu_ps(src + i);
		__m128i h = _mm256_cvtps_ph(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
		_mm_storeu_si128((__m128i *)(dst + i), h);
	}
	for (; i < n; i++)
		dst[i] = wf_f32_to_f16(src[i]);
}
#endif

void wf_f32_to_f16_n(const float *src, uint16_t *dst, size_t n)
{
#ifdef HAVE_F16C_PATH
	if (wf_simd_active()) {
		f16_n_f16c(src, dst, n);
		return;
	}
#endif
	for (size_t i = 0; i < n; i++)
		dst[i] = wf_f32_to_f16(src[i]);
}

#ifdef HAVE_F16C_PATH
/* The scalar rounding below, eight at a time: -O2 does not vectorize it,
 * and the scalar loop made bf16 views slower per element than f32 ones. */
__attribute__((target("avx2")))
static size_t bf16_n_avx2(const float *src, uint16_t *dst, size_t n)
{
	const __m256i bias = _mm256_set1_epi32(0x7fff), one = _mm256_set1_epi32(1);
	const __m256i abs = _mm256_set1_epi32(0x7fffffff), inf = _mm256_set1_epi32(0x7f800000);
	const __m256i quiet = _mm256_set1_epi32(0x0040);
	size_t i = 0;
	for (; i + 16 <= n; i += 16) {
		__m256i r[2];
		for (int k = 0; k < 2; k++) {
			__m256i u = _mm256_loadu_si256((const __m256i *)(src + i + 8 * k));
			__m256i odd = _mm256_and_si256(_mm256_srli_epi32(u, 16), one);
			__m256i rne = _mm256_srli_epi32(_mm256_add_epi32(_mm256_add_epi32(u, bias), odd), 16);
			__m256i qn = _mm256_or_si256(_mm256_srli_epi32(u, 16), quiet);
			/* a NaN: |u| > inf, as signed 32-bit numbers (|u| < 2^31) */
			__m256i nan = _mm256_cmpgt_epi32(_mm256_and_si256(u, abs), inf);
			r[k] = _mm256_blendv_epi8(rne, qn, nan);
		}
		/* every lane is below 2^16: packus keeps it; it packs per 128-bit
		 * lane, so put the four quarters back in order */
		__m256i p = _mm256_packus_epi32(r[0], r[1]);
		p = _mm256_permute4x64_epi64(p, 0xd8);
		_mm256_storeu_si256((__m256i *)(dst + i), p);
	}
	return i;
}
#endif

void wf_f32_to_bf16_n(const float *src, uint16_t *dst, size_t n)
{
	size_t i = 0;
#ifdef HAVE_F16C_PATH
	if (wf_simd_active())
		i = bf16_n_avx2(src, dst, n);
#endif
	for (; i < n; i++) {
		uint32_t u = f32_bits(src[i]);
		uint16_t r = (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
		uint16_t qn = (uint16_t)((u >> 16) | 0x0040);
		dst[i] = (u & 0x7fffffff) > 0x7f800000 ? qn : r;
	}
}
