/* fuzz_made.h - shared by fuzz_hfview.c and fuzz_gguf_retype.c: reads all of
 * a made file (model.gguf, hf/model.safetensors: wf_gguf_file.h) through a
 * wf_live, checking that its segments tile it.  Header-only, included once
 * per target after fuzz_common.h. */
#ifndef FUZZ_MADE_H
#define FUZZ_MADE_H

#include "view/wf_gguf_file.h"
#include "view/wf_live.h"

/* Most bytes of one made file read per input (the rest of each segment
 * past it is only looked up): keeps an execution fast when a tiny input
 * claims large tensors.  Segment starts and ends are always read. */
#define FUZZ_MADE_CAP (1u << 20)

static void made_seg(const void *files, uint32_t file, uint64_t off, struct wf_seg *seg)
{
	memset(seg, 0, sizeof *seg);
	seg->kind = WF_SEG_NONE;
	if (file == 0)
		wf_gguf_file_seg(files, off, seg);
}

/* Reads [off, off + n) of g and checks what came back. */
static void made_read(struct wf_live *lv, const struct wf_gguf_file *g, uint64_t off, size_t n, uint8_t *buf)
{
	size_t got = 0;
	enum wf_err rc = wf_live_read(lv, 0, off, n, buf, &got);
	uint64_t want = off >= g->size ? 0 : g->size - off < n ? g->size - off : n;
	/* EIO-like refusals (no decoder, values llama-quantize refuses) are
	 * answers; a short read that is not one is a bug */
	FUZZ_CHECK(rc != WF_OK || got == want, "read of %zu at %" PRIu64 " of %" PRIu64 " got %zu", n, off, g->size,
		   got);
	FUZZ_CHECK(rc != WF_ERR_CHANGED, "a buffer the fuzzer owns changed");
}

/* Walks g's segments from 0 to its size, checking each covers the byte it
 * was asked for and that the next starts where it ends, and reads them. */
static void made_read_all(const struct wf_model *m, const struct wf_gguf_file *g)
{
	struct wf_live lv;
	if (wf_live_init(&lv, m, made_seg, g, NULL, NULL) != WF_OK)
		return;
	FUZZ_CHECK(g->size >= g->header_len, "size %" PRIu64 " below the header's %zu", g->size, g->header_len);
	uint8_t *buf = malloc(FUZZ_READ_CAP);
	uint64_t off = 0, read = 0;
	while (buf && off < g->size) {
		struct wf_seg s;
		made_seg(g, 0, off, &s);
		if (s.kind == WF_SEG_NOMEM)
			break;
		FUZZ_CHECK(s.kind != WF_SEG_NONE && s.len > 0 && s.start <= off && off - s.start < s.len &&
				   s.start + s.len <= g->size,
			   "byte %" PRIu64 " of %" PRIu64 ": segment kind %d [%" PRIu64 ", +%" PRIu64 ")", off, g->size,
			   (int)s.kind, s.start, s.len);
		FUZZ_CHECK(s.kind != WF_SEG_VIEW || s.xf || s.tensor < m->n_tensors, "segment of tensor %u of %zu",
			   s.tensor, m->n_tensors);
		uint64_t end = s.start + s.len;
		for (uint64_t at = off; at < end && read < FUZZ_MADE_CAP;) {
			size_t n = end - at < FUZZ_READ_CAP ? (size_t)(end - at) : FUZZ_READ_CAP;
			made_read(&lv, g, at, n, buf);
			read += n;
			at += n;
		}
		if (end - off > FUZZ_READ_CAP) /* the segment's last bytes, and across into the next */
			made_read(&lv, g, end - FUZZ_READ_CAP / 2, FUZZ_READ_CAP, buf);
		off = end;
	}
	if (buf) {
		struct wf_seg s;
		made_seg(g, 0, g->size, &s);
		FUZZ_CHECK(s.kind == WF_SEG_NONE, "a segment past the end (%" PRIu64 ")", g->size);
		made_read(&lv, g, g->size, 16, buf);
	}
	free(buf);
	wf_live_free(&lv);
}

/* A refusal's message: one printable line. */
static void made_why(enum wf_err rc, const char *why)
{
	FUZZ_CHECK(rc == WF_ERR_UNSUP || rc == WF_ERR_FORMAT || rc == WF_ERR_NOMEM, "refused with %d", (int)rc);
	FUZZ_CHECK(why[0], "a refusal (%d) without a message", (int)rc);
	for (const char *p = why; *p; p++)
		FUZZ_CHECK((unsigned char)*p >= 0x20, "a control byte in %s", why);
}

#endif
