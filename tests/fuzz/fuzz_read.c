/* fuzz_read.c - libFuzzer target: wf_view_read over random tensor
 * descriptors and byte ranges.
 *
 * Input layout (all little-endian; missing bytes read as 0):
 *   [0]      type: index into the rows of the type table
 *   [1]      flags: bit 0 GGUF shape rule (innermost dim) instead of
 *            safetensors' (element count); bits 1-3 ndim (0..7);
 *            bit 4 dims are raw u16 (may be refused by wf_tensor_sizes);
 *            bit 5 offset is raw (may put the bytes outside the source)
 *   [2]      number of ranges - 1 (mod 8)
 *   [3..4]   offset of the tensor's bytes in the source
 *   then     ndim dims, 1 byte each (2 with bit 4)
 *   then     ranges, 7 bytes each: u32 off, u16 len, u8 flags
 *            (bit 0 odd output address, bit 1 off counts down from
 *            UINT64_MAX, bit 2 len counts down from SIZE_MAX; else len
 *            is taken mod 4096)
 *   rest     the source bytes (the "model file")
 *
 * Checks: the descriptor is valid per wf_tensor_sizes; a read succeeds
 * exactly when wf_view.h says (the source blocks it needs
 * inside the source, which may cut the tensor short as a truncated file
 * does) and then writes n_out = min(len, size - off) bytes (none past it,
 * none outside the buffer, none at all when it fails); the bytes equal the
 * type's scalar decoder run over all blocks at once (so SIMD decoders are
 * held to the scalar ones; a NaN may differ in payload, see
 * fuzz_same_view), for every range and for a whole-view read;
 * wf_view_span names exactly the blocks holding the bytes read.
 */
#include "fuzz_common.h"

#define VIEW_CAP (1u << 20)

struct in {
	const uint8_t *p;
	size_t n, pos;
};

static uint64_t take(struct in *in, unsigned bytes)
{
	uint64_t v = 0;
	for (unsigned i = 0; i < bytes; i++) {
		uint64_t b = in->pos < in->n ? in->p[in->pos] : 0;
		in->pos++;
		v |= b << (8 * i);
	}
	return v;
}

static int type_ids[WF_T_COUNT];
static int n_type_ids;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!n_type_ids)
		for (int id = 0; id < WF_T_COUNT; id++)
			if (wf_type_get(id))
				type_ids[n_type_ids++] = id;

	struct in in = {data, size, 0};
	int type = type_ids[take(&in, 1) % (uint64_t)n_type_ids];
	unsigned flags = (unsigned)take(&in, 1);
	unsigned n_ranges = (unsigned)take(&in, 1) % 8 + 1;
	uint64_t offset = take(&in, 2);
	const struct wf_type *ty = wf_type_get(type);

	uint64_t shape[8];
	struct wf_tensor t = {.name = (char *)"fuzz", .name_len = 4, .type = type,
			      .ndim = (flags >> 1) & 7, .shape = shape};
	bool inner_only = flags & 1;
	for (uint32_t d = 0; d < t.ndim; d++) {
		if (flags & 16) {
			shape[d] = take(&in, 2);
		} else {
			shape[d] = take(&in, 1);
			/* whole blocks: the innermost dim (GGUF) or the outermost (so
			 * the element count is a multiple, safetensors) */
			if (d == (inner_only ? t.ndim - 1 : 0))
				shape[d] *= ty->blck;
		}
	}
	if (!t.ndim && ty->blck != 1)
		inner_only = false; /* a scalar of a block type: refused below */

	struct {
		uint64_t off;
		size_t len;
		unsigned fl;
	} r[8];
	for (unsigned i = 0; i < n_ranges; i++) {
		r[i].off = take(&in, 4);
		r[i].len = (size_t)take(&in, 2);
		r[i].fl = (unsigned)take(&in, 1);
	}
	const uint8_t *src = in.pos < size ? data + in.pos : data + size;
	uint64_t src_len = in.pos < size ? size - in.pos : 0;

	if (wf_tensor_sizes(&t, inner_only, NULL) != WF_OK)
		return 0;
	if (ty->layer)
		return 0; /* a layer of several tensors: wf_hfq reads it, not one buffer */
	/* a type with no decoder is served as its stored bytes */
	bool stored = ty->vk == WF_VK_RAW;
	FUZZ_CHECK(t.nelems % ty->blck == 0 && t.nbytes == t.nelems / ty->blck * ty->bytes &&
			   t.size == (stored ? t.nbytes : t.nelems * wf_vk_elem_size(ty, ty->vk)),
		   "wf_tensor_sizes accepted inconsistent sizes");
	if (!(flags & 32))
		offset = src_len >= t.nbytes ? offset % (src_len - t.nbytes + 1) : offset;
	t.offset = offset;
	if (t.size > VIEW_CAP)
		return 0;
	bool inside = t.offset <= src_len && t.nbytes <= src_len - t.offset;
	bool has_dec = true; /* every type reads: no decoder means its bytes */
	uint64_t vb = stored ? ty->bytes : (uint64_t)ty->blck * wf_vk_elem_size(ty, ty->vk); /* view bytes per block */
	/* the whole blocks of the tensor that lie inside the source (all of
	 * them unless the offset or the source cut the tensor short) */
	uint64_t have_blk = 0;
	if (t.offset <= src_len) {
		have_blk = (src_len - t.offset) / ty->bytes;
		if (have_blk > t.nelems / ty->blck)
			have_blk = t.nelems / ty->blck;
	}

	/* the reference: those blocks straight from the scalar decoder */
	uint8_t *ref = NULL;
	if (has_dec && have_blk) {
		ref = malloc((size_t)(have_blk * vb));
		FUZZ_CHECK(ref, "malloc");
		if (ty->vk == WF_VK_RAW)
			memcpy(ref, src + t.offset, (size_t)(have_blk * vb));
		else
			ty->decode(src + t.offset, (float *)(void *)ref, (size_t)have_blk);
	}
	/* the whole view through the read path, when all of it is there */
	if (has_dec && inside && t.size) {
		uint8_t *whole = malloc((size_t)t.size);
		FUZZ_CHECK(whole, "malloc");
		size_t n;
		FUZZ_CHECK(wf_view_read(&t, src, src_len, 0, (size_t)t.size, whole, &n) == WF_OK &&
				   n == t.size,
			   "whole read of %s: n %zu of %llu", ty->name, n, (unsigned long long)t.size);
		FUZZ_CHECK(have_blk * vb == t.size && fuzz_same_view(ty, whole, ref, (size_t)t.size, 0, NULL),
			   "whole read of %s differs from its scalar decoder", ty->name);
		free(whole);
	}

	for (unsigned i = 0; i < n_ranges; i++) {
		uint64_t off = r[i].fl & 2 ? UINT64_MAX - r[i].off : r[i].off % (t.size + 64);
		size_t len = r[i].fl & 4 ? SIZE_MAX - r[i].len : r[i].len % 4096;
		bool odd = r[i].fl & 1;
		/* what the read must do (wf_view.h): refuse without a decoder or
		 * with the tensor's start past the source; serve nothing past the
		 * view's end; else serve min(len, size - off) bytes if the blocks
		 * holding them are inside the source, or refuse */
		size_t clipped = 0;
		if (off < t.size && len)
			clipped = len < t.size - off ? len : (size_t)(t.size - off);
		bool ok;
		if (!has_dec || t.offset > src_len)
			ok = false;
		else if (clipped == 0)
			ok = true;
		else
			ok = (off + clipped - 1) / vb < have_blk;
		size_t expect = ok ? clipped : 0;
		/* room for what may be written, plus a canary up to len when
		 * len is small */
		size_t room = r[i].fl & 4 ? expect : len;
		uint8_t *raw = malloc(room + 1);
		FUZZ_CHECK(raw, "malloc");
		memset(raw, 0xA5, room + 1);
		uint8_t *out = raw + (odd ? 1 : 0);
		size_t n = 12345;
		enum wf_err rc = wf_view_read(&t, src, src_len, off, len, out, &n);
		FUZZ_CHECK((rc == WF_OK) == ok && (rc == WF_OK || rc == WF_ERR_RANGE) && n == expect && n <= len,
			   "%s [%llu, +%zu) of %llu (offset %llu, %llu of %llu blocks in a %llu-byte source): "
			   "rc %d n %zu, expected %s n %zu",
			   ty->name, (unsigned long long)off, len, (unsigned long long)t.size,
			   (unsigned long long)t.offset, (unsigned long long)have_blk,
			   (unsigned long long)(t.nelems / ty->blck), (unsigned long long)src_len, (int)rc, n,
			   ok ? "OK" : "RANGE", expect);
		if (n)
			FUZZ_CHECK(fuzz_same_view(ty, out, ref + off, n, off, ref),
				   "%s [%llu, +%zu): bytes differ from the scalar decoder's", ty->name,
				   (unsigned long long)off, len);
		static uint8_t canary[4096];
		if (!canary[0])
			memset(canary, 0xA5, sizeof canary);
		FUZZ_CHECK(room - n <= sizeof canary && memcmp(out + n, canary, room - n) == 0,
			   "%s [%llu, +%zu): bytes written past n_out %zu", ty->name,
			   (unsigned long long)off, len, n);

		uint64_t first, count;
		wf_view_span(&t, off, len, &first, &count);
		FUZZ_CHECK(first == off / vb, "span first");
		if (clipped == 0)
			FUZZ_CHECK(count == 0, "span of nothing has %llu blocks", (unsigned long long)count);
		else
			FUZZ_CHECK(first + count == (off + clipped - 1) / vb + 1,
				   "span [%llu, +%llu) vs bytes [%llu, +%zu)", (unsigned long long)first,
				   (unsigned long long)count, (unsigned long long)off, clipped);
		free(raw);
	}
	free(ref);
	return 0;
}
