/* check_view.c - unit tests for range reads (wf_view.c): the block span
 * arithmetic, and that any slice of a tensor's file equals the same bytes
 * of the whole file, whatever the offset, length or output alignment.
 */
#include <check.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "model/wf_model.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

static uint64_t rng_state;

static uint64_t rnd64(void)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return rng_state >> 11;
}

static uint64_t rnd(uint64_t n)
{
	return n ? rnd64() % n : 0;
}

/* A one-dimensional tensor of nblocks blocks of type id at offset off. */
static struct wf_tensor tensor_of(int id, uint64_t nblocks, uint64_t off)
{
	const struct wf_type *ty = wf_type_get(id);
	struct wf_tensor t = {0};
	t.name = (char *)"t";
	t.name_len = 1;
	t.type = id;
	t.ndim = 1;
	t.nelems = nblocks * ty->blck;
	t.nbytes = nblocks * ty->bytes;
	t.vk = (uint8_t)ty->vk;
	t.size = ty->vk == WF_VK_RAW ? t.nbytes : t.nelems * wf_vk_elem_size(ty, ty->vk);
	t.offset = off;
	return t;
}

/* ---- wf_view_span ---- */

static void span_case(const struct wf_tensor *t, uint64_t off, uint64_t len)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t bsz = (uint64_t)ty->blck * wf_vk_elem_size(ty, ty->vk);
	uint64_t first = 12345, count = 12345;
	wf_view_span(t, off, len, &first, &count);
	if (len == 0 || off >= t->size) {
		if (count != 0)
			ck_abort_msg("%s off %" PRIu64 " len %" PRIu64 ": count %" PRIu64, ty->name, off, len,
				     count);
		return;
	}
	uint64_t end = len > t->size - off ? t->size : off + len;
	uint64_t want_first = off / bsz, want_last = (end - 1) / bsz;
	if (!(first == want_first && count == want_last - want_first + 1))
		ck_abort_msg("%s size %" PRIu64 " off %" PRIu64 " len %" PRIu64 ": blocks %" PRIu64 "+%" PRIu64
			     ", want %" PRIu64 "+%" PRIu64, ty->name, t->size, off, len, first, count, want_first,
			     want_last - want_first + 1);
	/* the span covers the bytes */
	if (first * bsz > off || (first + count) * bsz < end)
		ck_abort_msg("%s: span does not cover the bytes", ty->name);
}

START_TEST(test_span)
{
	static const int ids[] = {WF_T_I8, WF_T_F32, WF_T_F64, WF_T_Q4_0, WF_T_NVFP4, WF_T_Q1_0, WF_T_Q4_K};
	const struct wf_type *ty = wf_type_get(ids[_i]);
	uint64_t bsz = (uint64_t)ty->blck * wf_vk_elem_size(ty, ty->vk);
	for (uint64_t nb = 0; nb < 4; nb++) {
		struct wf_tensor t = tensor_of(ids[_i], nb, 0);
		uint64_t offs[] = {0, 1, 3, bsz - 1, bsz, bsz + 1, 2 * bsz - 1, 2 * bsz + 5, t.size - 1, t.size,
				   t.size + 1, UINT64_MAX - 1, UINT64_MAX};
		uint64_t lens[] = {0, 1, 2, 3, 4, bsz - 1, bsz, bsz + 1, 2 * bsz, t.size, t.size + 1, UINT64_MAX};
		for (size_t i = 0; i < WF_ARRAY_LEN(offs); i++)
			for (size_t j = 0; j < WF_ARRAY_LEN(lens); j++)
				span_case(&t, offs[i], lens[j]);
	}
	rng_state = 77 + (uint64_t)_i;
	struct wf_tensor t = tensor_of(ids[_i], 1000, 0);
	for (int k = 0; k < 20000; k++)
		span_case(&t, rnd(t.size + 10), rnd(4) ? rnd(3 * bsz) : rnd(t.size + 10));
}
END_TEST

/* ---- wf_view_read ---- */

/* Random source bytes for one tensor; the allocation ends exactly at the
 * tensor's end, so a read past it is an ASan report. */
static uint8_t *random_src(uint64_t len)
{
	uint8_t *p = malloc(len ? len : 1);
	ck_assert_ptr_nonnull(p);
	for (uint64_t i = 0; i < len; i++)
		p[i] = (uint8_t)(rnd64() >> 7);
	return p;
}

/* Reads [off, off+len) into a buffer shifted by mis bytes and checks it
 * against whole[], and that nothing past the result was written. */
static void check_slice(const struct wf_tensor *t, const uint8_t *src, uint64_t src_len, const uint8_t *whole,
			uint64_t off, size_t len, size_t mis)
{
	size_t cap = len < t->size + 64 ? len : (size_t)t->size + 64;
	uint8_t *buf = malloc(cap + mis + 1);
	ck_assert_ptr_nonnull(buf);
	memset(buf, 0xCD, cap + mis + 1);
	size_t n = 99;
	enum wf_err rc = wf_view_read(t, src, src_len, off, len, buf + mis, &n);
	ck_assert_int_eq(rc, WF_OK);
	uint64_t want = off >= t->size ? 0 : (len < t->size - off ? len : t->size - off);
	ck_assert_msg(n == want, "%s off %" PRIu64 " len %zu: got %zu bytes, want %" PRIu64,
		      wf_type_get(t->type)->name, off, len, n, want);
	if (n)
		ck_assert_msg(memcmp(buf + mis, whole + off, n) == 0, "%s off %" PRIu64 " len %zu mis %zu differs",
			      wf_type_get(t->type)->name, off, len, mis);
	/* plain loops: every ck_assert costs Check a write */
	size_t k = 0;
	while (k < mis && buf[k] == 0xCD)
		k++;
	ck_assert_msg(k == mis, "%s: byte before the output written", wf_type_get(t->type)->name);
	for (k = mis + n; k < cap + mis + 1 && buf[k] == 0xCD; k++)
		;
	ck_assert_msg(k == cap + mis + 1, "%s: byte %zu past the result written", wf_type_get(t->type)->name,
		      k - mis);
	free(buf);
}

/* Every type with a decoder (or raw bytes), loop index = type id. */
START_TEST(test_read_type)
{
	const struct wf_type *ty = wf_type_get(_i);
	if (!ty || ty->layer) /* a layer reads its parts: check_hfq */
		return;
	rng_state = 1000 + (uint64_t)_i;
	/* more than the 4096-float scratch buffer, and not a multiple of it */
	uint64_t nblocks = 5000 / ty->blck + 3;
	uint64_t pre = 13; /* an odd offset inside the mapping */
	struct wf_tensor t = tensor_of(_i, nblocks, pre);
	uint64_t src_len = pre + t.nbytes;
	uint8_t *src = random_src(src_len);

	/* the whole view, read once into aligned memory */
	uint8_t *whole = malloc(t.size);
	ck_assert_ptr_nonnull(whole);
	size_t n = 0;
	ck_assert_int_eq(wf_view_read(&t, src, src_len, 0, t.size, whole, &n), WF_OK);
	ck_assert_uint_eq(n, t.size);

	/* ... and equal to the decoder (or the bytes) applied directly */
	if (ty->vk == WF_VK_RAW) {
		ck_assert_uint_eq(t.size, t.nbytes);
		ck_assert(memcmp(whole, src + pre, t.nbytes) == 0);
	} else {
		float *ref = malloc(t.size);
		uint8_t *copy = malloc(t.nbytes);
		ck_assert(ref && copy);
		memcpy(copy, src + pre, t.nbytes);
		ty->decode(copy, ref, nblocks);
		ck_assert(memcmp(whole, ref, t.size) == 0);
		free(ref);
		free(copy);
	}

	/* slices at and around block and scratch boundaries */
	uint64_t bsz = (uint64_t)ty->blck * wf_vk_elem_size(ty, ty->vk);
	uint64_t marks[] = {0, 1, 2, 3, 4, 5, bsz - 1, bsz, bsz + 1, 16384 - 1, 16384, 16384 + 3, t.size / 2,
			    t.size - bsz, t.size - 5, t.size - 1, t.size, t.size + 1, t.size + 4096};
	size_t lens[] = {0, 1, 2, 3, 5, 7, (size_t)bsz - 1, (size_t)bsz, (size_t)bsz + 1, 16384, 16385, 40000,
			 (size_t)t.size};
	for (size_t i = 0; i < WF_ARRAY_LEN(marks); i++)
		for (size_t j = 0; j < WF_ARRAY_LEN(lens); j++)
			check_slice(&t, src, src_len, whole, marks[i], lens[j], (i + j) % 4);
	/* random slices, many small, some large, odd offsets, misaligned output */
	for (int k = 0; k < 400; k++) {
		uint64_t off = rnd(t.size + 8);
		size_t len = (size_t)(rnd(3) ? rnd(2 * bsz + 9) : rnd(t.size + 8));
		check_slice(&t, src, src_len, whole, off, len, (size_t)rnd(8));
	}
	/* a length larger than anything: clipped at the end of the view */
	check_slice(&t, src, src_len, whole, t.size - 3, SIZE_MAX, 1);
	free(whole);
	free(src);
}
END_TEST

/* wf_view_pread gives wf_view_read's bytes for every type, in every
 * output dtype it has, through bounce buffers of one block up to many,
 * at random offsets and lengths; a file that ends early is WF_ERR_CHANGED
 * and a bounce buffer smaller than a block WF_ERR_RANGE. */
START_TEST(test_pread_type)
{
	const struct wf_type *ty = wf_type_get(_i);
	if (!ty || ty->layer)
		return;
	rng_state = 3000 + (uint64_t)_i;
	uint64_t nblocks = 3000 / ty->blck + 5, pre = 13;
	struct wf_tensor t0 = tensor_of(_i, nblocks, pre);
	uint64_t shape0 = t0.nelems;
	t0.shape = &shape0; /* wf_tensor_set_view reads it */
	uint64_t src_len = pre + t0.nbytes;
	uint8_t *src = random_src(src_len);
	char path[] = "/tmp/check_view_XXXXXX";
	int fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, src, src_len), (ssize_t)src_len);
	static const enum wf_vk vks[] = {WF_VK_F32, WF_VK_F16, WF_VK_BF16, WF_VK_RAW};
	char err[WF_ERRLEN];
	for (size_t v = 0; v < WF_ARRAY_LEN(vks); v++) {
		struct wf_tensor t = t0;
		if (wf_tensor_set_view(&t, vks[v], err) != WF_OK)
			continue;
		uint8_t *a = malloc(t.size + 1), *b = malloc(t.size + 1), *bounce = malloc(64 * ty->bytes);
		ck_assert(a && b && bounce);
		size_t caps[] = {ty->bytes, 3 * ty->bytes + 1, 64 * ty->bytes};
		for (int k = 0; k < 300; k++) {
			uint64_t off = rnd(t.size + 4);
			size_t len = (size_t)(rnd(2) ? rnd(3 * ty->bytes + 40) : rnd(t.size + 4)), na = 7, nb = 9;
			ck_assert_int_eq(wf_view_read(&t, src, src_len, off, len, a, &na), WF_OK);
			ck_assert_int_eq(wf_view_pread(&t, fd, src_len, off, len, b, &nb, bounce, caps[k % 3]), WF_OK);
			ck_assert_msg(na == nb && memcmp(a, b, na) == 0, "%s vk %d off %" PRIu64 " len %zu", ty->name,
				      (int)vks[v], off, len);
		}
		size_t n = 5;
		if (ty->bytes > 1 && t.vk != WF_VK_RAW)
			ck_assert_int_eq(wf_view_pread(&t, fd, src_len, 0, t.size, b, &n, bounce, ty->bytes - 1),
					 WF_ERR_RANGE);
		/* the file shorter than when it was opened: the bytes past its end are refused */
		ck_assert_int_eq(ftruncate(fd, (off_t)(src_len - 1)), 0);
		ck_assert_int_eq(wf_view_pread(&t, fd, src_len, 0, t.size, b, &n, bounce, 64 * ty->bytes),
				 WF_ERR_CHANGED);
		ck_assert_int_eq(pwrite(fd, src + src_len - 1, 1, (off_t)(src_len - 1)), 1);
		/* past what the caller says the file holds: refused before any read */
		ck_assert_int_eq(wf_view_pread(&t, fd, src_len - 1, 0, t.size, b, &n, bounce, 64 * ty->bytes),
				 WF_ERR_RANGE);
		free(a);
		free(b);
		free(bounce);
	}
	close(fd);
	unlink(path);
	free(src);
}
END_TEST

/* Types without a decoder are served as their stored bytes, whole, under
 * every output dtype, so that every file of a healthy model reads. */
START_TEST(test_read_nodecoder)
{
	int n_none = 0;
	for (int id = 0; id < WF_T_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (!ty || ty->vk != WF_VK_RAW || ty->stored) /* no decoder: bytes, not elements */
			continue;
		n_none++;
		uint64_t shape[2] = {2, 6}; /* rows of 6: not whole 3-byte blocks of 4 */
		static const enum wf_vk wants[] = {WF_VK_F32, WF_VK_F16, WF_VK_BF16, WF_VK_RAW};
		for (size_t w = 0; w < WF_ARRAY_LEN(wants); w++) {
			char err[WF_ERRLEN];
			struct wf_tensor t = tensor_of(id, 3, 5);
			t.ndim = 2;
			t.shape = shape;
			ck_assert_int_eq(wf_tensor_set_view(&t, wants[w], err), WF_OK);
			ck_assert_int_eq(t.vk, WF_VK_RAW);
			ck_assert_uint_eq(t.size, 9);
			ck_assert_str_eq(wf_view_dtype(&t), "uint8");
			uint64_t dims[WF_MAX_DIMS];
			ck_assert_uint_eq(wf_view_shape(&t, dims), 1);
			ck_assert_uint_eq(dims[0], 9);
			uint8_t src[5 + 9], got[16];
			for (size_t k = 0; k < sizeof src; k++)
				src[k] = (uint8_t)(k * 37 + 11);
			memset(got, 0xCD, sizeof got);
			size_t n = 99;
			ck_assert_int_eq(wf_view_read(&t, src, sizeof src, 2, sizeof got, got, &n), WF_OK);
			ck_assert_uint_eq(n, 7);
			ck_assert(memcmp(got, src + 5 + 2, 7) == 0);
			ck_assert_uint_eq(got[7], 0xCD);
			/* a truncated source is still refused */
			ck_assert_int_eq(wf_view_read(&t, src, sizeof src - 1, 0, 9, got, &n), WF_ERR_RANGE);
		}
	}
	ck_assert_int_ge(n_none, 2); /* F6_E2M3, F6_E3M2 */
}
END_TEST

/* A read whose source blocks are not inside src is refused, never read;
 * blocks that are inside are served (a truncated file keeps its head). */
START_TEST(test_read_outside)
{
	static const int ids[] = {WF_T_F32, WF_T_Q4_0, WF_T_Q6_K, WF_T_U8};
	const int id = ids[_i];
	struct wf_tensor t = tensor_of(id, 3, 0);
	const struct wf_type *ty = wf_type_get(id);
	uint64_t src_len = t.nbytes + 10;
	uint8_t *src = calloc(1, src_len);
	uint8_t *out = malloc(t.size);
	size_t n;
	ck_assert_ptr_nonnull(src);
	ck_assert_ptr_nonnull(out);
	uint64_t bad[] = {11, 12, src_len, src_len + 1, UINT64_MAX - t.nbytes + 1, UINT64_MAX};
	for (size_t i = 0; i < WF_ARRAY_LEN(bad); i++) {
		t.offset = bad[i];
		n = 99;
		ck_assert_int_eq(wf_view_read(&t, src, src_len, 0, t.size, out, &n), WF_ERR_RANGE);
		ck_assert_uint_eq(n, 0);
	}
	/* the last offset that fits is fine */
	t.offset = 10;
	ck_assert_int_eq(wf_view_read(&t, src, src_len, 0, t.size, out, &n), WF_OK);
	ck_assert_uint_eq(n, t.size);
	/* src one byte short of the tensor: the first block is still served,
	 * the last one (which needs the missing byte) is not */
	t.offset = 0;
	uint64_t vblk = (uint64_t)ty->blck * wf_vk_elem_size(ty, ty->vk); /* view bytes per block */
	ck_assert_int_eq(wf_view_read(&t, src, t.nbytes - 1, 0, (size_t)vblk, out, &n), WF_OK);
	ck_assert_uint_eq(n, vblk);
	ck_assert_int_eq(wf_view_read(&t, src, t.nbytes - 1, t.size - 1, 1, out, &n), WF_ERR_RANGE);
	ck_assert_int_eq(wf_view_read(&t, src, t.nbytes - 1, 0, t.size, out, &n), WF_ERR_RANGE);
	free(out);
	free(src);
}
END_TEST

/* Reads at or after the end, of length 0, and of an empty tensor. */
START_TEST(test_read_end)
{
	static const int ids[] = {WF_T_F32, WF_T_F16, WF_T_Q4_K, WF_T_I64};
	struct wf_tensor t = tensor_of(ids[_i], 2, 0);
	uint8_t *src = calloc(1, t.nbytes);
	uint8_t out[16];
	size_t n;
	ck_assert_ptr_nonnull(src);
	uint64_t offs[] = {t.size, t.size + 1, t.size + 4096, UINT64_MAX};
	for (size_t i = 0; i < WF_ARRAY_LEN(offs); i++) {
		n = 99;
		ck_assert_int_eq(wf_view_read(&t, src, t.nbytes, offs[i], sizeof out, out, &n), WF_OK);
		ck_assert_uint_eq(n, 0);
	}
	n = 99;
	ck_assert_int_eq(wf_view_read(&t, src, t.nbytes, 0, 0, out, &n), WF_OK);
	ck_assert_uint_eq(n, 0);
	struct wf_tensor e = tensor_of(ids[_i], 0, 0);
	n = 99;
	ck_assert_int_eq(wf_view_read(&e, src, 0, 0, sizeof out, out, &n), WF_OK);
	ck_assert_uint_eq(n, 0);
	free(src);
}
END_TEST

static Suite *view_suite(void)
{
	Suite *s = suite_create("view");
	TCase *tc;

	tc = tcase_create("span");
	tcase_add_loop_test(tc, test_span, 0, 7);
	suite_add_tcase(s, tc);

	tc = tcase_create("read");
	tcase_add_loop_test(tc, test_read_type, 0, WF_T_COUNT);
	tcase_add_test(tc, test_read_nodecoder);
	tcase_add_loop_test(tc, test_pread_type, 0, WF_T_COUNT);
	tcase_add_loop_test(tc, test_read_outside, 0, 4);
	tcase_add_loop_test(tc, test_read_end, 0, 4);
	tcase_set_timeout(tc, 120);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(view_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
