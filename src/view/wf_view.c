/* wf_view.c - a tensor's view (wf_view.h): which dtype its file holds,
 * the names of that dtype, and range reads over the type table. */
#include "view/wf_view.h"
#include "codec/wf_round.h"
#include "view/wf_hfq.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

/* Blocks decoded per step when the output cannot take them directly:
 * 4096 floats (16 KiB) of scratch, a whole number of blocks of any type. */
#define SCRATCH_FLOATS 4096

unsigned wf_view_elem_size(const struct wf_tensor *t)
{
	return wf_vk_elem_size(wf_type_get(t->type), (enum wf_vk)t->vk);
}

uint64_t wf_view_block_bytes(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	/* a raw view is its bytes: a source block is as long in the view */
	return t->vk == WF_VK_RAW ? ty->bytes : (uint64_t)ty->blck * wf_vk_elem_size(ty, (enum wf_vk)t->vk);
}

void wf_view_span(const struct wf_tensor *t, uint64_t off, uint64_t len, uint64_t *first, uint64_t *count)
{
	uint64_t bsz = wf_view_block_bytes(t);
	*first = off / bsz;
	*count = 0;
	if (off >= t->size || len == 0)
		return;
	uint64_t end = len > t->size - off ? t->size : off + len;
	*count = (end + bsz - 1) / bsz - *first;
}

/* Checks a read of view bytes [off, off+*len) of t against src_len and
 * clips *len to the end of the view (0 at or past it). */
static enum wf_err check_range(const struct wf_tensor *t, const struct wf_type *ty, enum wf_vk vk,
			       uint64_t src_len, uint64_t off, size_t *len)
{
	if (!ty || vk == WF_VK_NONE || (vk != WF_VK_RAW && !ty->decode && ty->vk != WF_VK_RAW) ||
	    t->offset > src_len)
		return WF_ERR_RANGE;
	if (off >= t->size || *len == 0) {
		*len = 0;
		return WF_OK;
	}
	if (*len > t->size - off)
		*len = (size_t)(t->size - off);
	/* Only the source blocks this read needs must be inside src. */
	uint64_t first, count, need_end;
	wf_view_span(t, off, *len, &first, &count);
	if (!wf_mul_ok(first + count, ty->bytes, &need_end) || need_end > t->nbytes ||
	    need_end > src_len - t->offset)
		return WF_ERR_RANGE;
	return WF_OK;
}

/* Decodes n blocks at src into float32 at dst; raw float32 is copied. */
static void to_f32(const struct wf_type *ty, wf_decode_fn decode, const uint8_t *src, float *dst, size_t n)
{
	if (decode)
		decode(src, dst, n);
	else
		memcpy(dst, src, n * ty->bytes); /* F32: one float per block */
}

enum wf_err wf_view_read(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len,
			 uint64_t off, size_t len, void *outv, size_t *n_out)
{
	uint8_t *out = outv;
	const struct wf_type *ty = wf_type_get(t->type);
	*n_out = 0;
	if (t->q) /* a layer of several stored tensors: its parts hold the bytes */
		return wf_hfq_view_read(t, off, len, outv, n_out);
	if (!ty)
		return WF_ERR_RANGE;
	enum wf_vk vk = (enum wf_vk)t->vk;
	enum wf_err rc = check_range(t, ty, vk, src_len, off, &len);
	if (rc != WF_OK || len == 0)
		return rc;
	const uint8_t *base = src + t->offset;

	if (vk == WF_VK_RAW) {
		memcpy(out, base + off, len);
		*n_out = len;
		return WF_OK;
	}

	/* float32 elements per block in, 2 or 4 bytes per element out */
	wf_decode_fn decode = ty->vk == WF_VK_F32 ? wf_type_decoder(ty) : NULL;
	uint64_t bsz = wf_view_block_bytes(t);
	uint64_t blk = off / bsz;
	uint64_t end = off + len;
	size_t done = 0;
	float scratch[SCRATCH_FLOATS];
	uint16_t half[SCRATCH_FLOATS];
	size_t per_step = SCRATCH_FLOATS / ty->blck;
	while (off + done < end) {
		uint64_t pos = off + done;            /* view byte we are at */
		uint64_t blk_start = blk * bsz;       /* view byte where blk starts */
		uint64_t skip = pos - blk_start;      /* bytes of blk before pos */
		uint64_t want = end - pos;
		uint8_t *dst = out + done;
		/* Whole float32 blocks land straight in the caller's buffer when
		 * it is aligned for floats there. */
		if (vk == WF_VK_F32 && skip == 0 && want >= bsz && ((uintptr_t)dst % _Alignof(float)) == 0) {
			uint64_t n = want / bsz;
			to_f32(ty, decode, base + blk * ty->bytes, (float *)dst, (size_t)n);
			blk += n;
			done += (size_t)(n * bsz);
			continue;
		}
		uint64_t n = (skip + want + bsz - 1) / bsz;
		if (n > per_step)
			n = per_step;
		to_f32(ty, decode, base + blk * ty->bytes, scratch, (size_t)n);
		const uint8_t *from = (const uint8_t *)scratch;
		if (vk != WF_VK_F32) {
			size_t ne = (size_t)(n * ty->blck);
			if (vk == WF_VK_F16)
				wf_f32_to_f16_n(scratch, half, ne);
			else
				wf_f32_to_bf16_n(scratch, half, ne);
			from = (const uint8_t *)half;
		}
		uint64_t avail = n * bsz - skip;
		uint64_t take = want < avail ? want : avail;
		memcpy(dst, from + skip, (size_t)take);
		done += (size_t)take;
		blk += n;
	}
	*n_out = done;
	return WF_OK;
}

/* n bytes of the file at fd from pos, all of them: WF_ERR_CHANGED when the
 * file ends first (it shrank since it was opened), WF_ERR_IO when the OS
 * refuses. */
static enum wf_err pread_all(int fd, uint8_t *to, size_t n, uint64_t pos)
{
	while (n) {
		ssize_t k = pread(fd, to, n, (off_t)pos);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return WF_ERR_IO;
		if (k == 0)
			return WF_ERR_CHANGED;
		to += k;
		n -= (size_t)k;
		pos += (uint64_t)k;
	}
	return WF_OK;
}

enum wf_err wf_view_pread(const struct wf_tensor *t, int fd, uint64_t src_len, uint64_t off, size_t len,
			  void *outv, size_t *n_out, uint8_t *bounce, size_t cap)
{
	uint8_t *out = outv;
	const struct wf_type *ty = wf_type_get(t->type);
	*n_out = 0;
	if (t->q || !ty)
		return WF_ERR_RANGE;
	enum wf_err rc = check_range(t, ty, (enum wf_vk)t->vk, src_len, off, &len);
	if (rc != WF_OK || len == 0)
		return rc;
	if (t->vk == WF_VK_RAW) {
		rc = pread_all(fd, out, len, t->offset + off);
		*n_out = rc == WF_OK ? len : 0;
		return rc;
	}
	/* a run of whole source blocks into the bounce buffer, then viewed
	 * as a tensor of those blocks alone: views are block by block */
	uint64_t bsz = wf_view_block_bytes(t), per = cap / ty->bytes, done = 0;
	if (!per)
		return WF_ERR_RANGE;
	while (done < len) {
		uint64_t pos = off + done, b0 = pos / bsz, nb = (pos - b0 * bsz + (len - done) + bsz - 1) / bsz;
		if (nb > per)
			nb = per;
		struct wf_tensor run = *t;
		run.offset = 0;
		run.nbytes = nb * ty->bytes;
		run.nelems = nb * ty->blck;
		run.size = nb * bsz;
		run.ndim = 1;
		run.shape = &run.nelems;
		size_t want = len - done, got = 0;
		rc = pread_all(fd, bounce, (size_t)run.nbytes, t->offset + b0 * ty->bytes);
		if (rc == WF_OK)
			rc = wf_view_read(&run, bounce, run.nbytes, pos - b0 * bsz, want, out + done, &got);
		if (rc != WF_OK)
			return rc;
		if (!got)
			return WF_ERR_RANGE;
		done += got;
	}
	*n_out = (size_t)done;
	return WF_OK;
}

static const struct {
	const char *name;
	enum wf_vk want;
} dtype_names[] = {
	{"f32", WF_VK_F32}, {"float32", WF_VK_F32}, {"f16", WF_VK_F16}, {"float16", WF_VK_F16},
	{"bf16", WF_VK_BF16}, {"bfloat16", WF_VK_BF16}, {"stored", WF_VK_RAW},
};

bool wf_view_parse(const char *s, enum wf_vk *want)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(dtype_names); i++) {
		if (strcmp(s, dtype_names[i].name) == 0) {
			*want = dtype_names[i].want;
			return true;
		}
	}
	return false;
}

enum wf_err wf_tensor_set_view(struct wf_tensor *t, enum wf_vk want, char *err)
{
	char q[96];
	const struct wf_type *ty = wf_type_get(t->type);
	enum wf_vk vk;
	if (!ty || (want != WF_VK_F32 && want != WF_VK_F16 && want != WF_VK_BF16 && want != WF_VK_RAW))
		return wf_fail(err, WF_ERR_RANGE, "tensor %s: no such view", wf_quote(q, sizeof q, t->name, t->name_len));
	if (t->q || ty->layer) {
		/* a decoded layer has no stored form of its own: under stored
		 * the model shows its parts instead (wf_hfq_apply) */
		if (want == WF_VK_RAW || !t->q)
			return wf_fail(err, WF_ERR_UNSUP,
				       "tensor %s: a decoded %s layer has no stored form; its packed parts show "
				       "when the model is opened with dtype stored",
				       wf_quote(q, sizeof q, t->name, t->name_len), ty->name);
		t->vk = (uint8_t)want;
		t->size = t->nelems * wf_view_elem_size(t);
		return WF_OK;
	}
	/* a type with no floats (integers, a type with no decoder) is served
	 * as its stored bytes under every option, so every file of a model reads */
	if (!ty->floats || want == WF_VK_RAW)
		vk = WF_VK_RAW;
	else if (want == WF_VK_F32)
		vk = ty->vk;
	else if (want == WF_VK_F16)
		vk = t->type == WF_T_F16 ? WF_VK_RAW : WF_VK_F16;
	else
		vk = t->type == WF_T_BF16 ? WF_VK_RAW : WF_VK_BF16;
	if (vk == WF_VK_RAW && !ty->stored && ty->blck > 1 && ty->vk == WF_VK_F32) {
		/* a decodable block type as bytes, on request: each row must be
		 * whole blocks (a type with no decoder is shown whole anyway:
		 * wf_view_shape) */
		uint64_t inner = t->ndim ? t->shape[t->ndim - 1] : 1;
		if (inner % ty->blck != 0)
			return wf_fail(err, WF_ERR_UNSUP,
				       "tensor %s: -o dtype=stored: its rows of %" PRIu64 " %s elements are not "
				       "whole blocks of %u, so they cannot be shown as bytes",
				       wf_quote(q, sizeof q, t->name, t->name_len), inner, ty->name, ty->blck);
	}
	t->vk = (uint8_t)vk;
	t->size = vk == WF_VK_RAW ? t->nbytes : t->nelems * wf_view_elem_size(t);
	return WF_OK;
}

enum wf_err wf_model_set_view(struct wf_model *m, enum wf_vk want, char *err)
{
	enum wf_err hrc = wf_hfq_apply(m, want, err);
	if (hrc != WF_OK)
		return hrc;
	for (size_t i = 0; i < m->n_tensors; i++) {
		enum wf_err rc = wf_tensor_set_view(&m->tensors[i], want, err);
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

const char *wf_view_dtype(const struct wf_tensor *t)
{
	const struct wf_type *ty = wf_type_get(t->type);
	switch ((enum wf_vk)t->vk) {
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
	switch ((enum wf_vk)t->vk) {
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
	if (t->vk == WF_VK_RAW && !ty->stored && ty->blck > 1) {
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
