/* wf_st_stream.h - model.safetensors' header made a window at a time.
 *
 * The header wf_st_header builds (wf_gen.h) can be several times the size
 * of the model's own header (a GGUF bool array of 20 M elements becomes
 * 110 MB of JSON text), so the mount does not keep it: one pass at build
 * time measures it and keeps a checkpoint every 64 KiB or so of output;
 * a read makes the bytes it needs again from the checkpoint before them.
 * The bytes are exactly wf_st_header's.
 */
#ifndef WF_ST_STREAM_H
#define WF_ST_STREAM_H

#include "base/wf_common.h"
#include "model/wf_model.h"

struct wf_st_stream;

/* Measures model.safetensors' header for m (which must outlive the
 * stream): *len gets its bytes (the 8-byte length included), *offsets
 * (malloc'd, n_tensors + 1 entries) where each tensor's data starts after
 * the header and the end, as wf_st_header gives them.  Keeps renamed names
 * and the checkpoints, not the header.  Returns WF_OK, WF_ERR_NOMEM,
 * WF_ERR_FORMAT (metadata.json is not an object) or WF_ERR_CHANGED (a
 * GGUF's file changed). */
enum wf_err wf_st_stream_new(const struct wf_model *m, struct wf_st_stream **out, uint64_t *len,
			     uint64_t **offsets);

void wf_st_stream_free(struct wf_st_stream *s);

/* A number no other stream of this process has: tells windows apart. */
uint64_t wf_st_stream_id(const struct wf_st_stream *s);

/* Fills buf with header bytes [off, off + n), which must lie inside the
 * header.  Safe to call from several threads at once.  Returns WF_OK,
 * WF_ERR_NOMEM, or for a GGUF (whose metadata is read from its file,
 * wf_meta.h) WF_ERR_CHANGED when the file changed. */
enum wf_err wf_st_stream_read(const struct wf_st_stream *s, uint64_t off, size_t n, char *buf);

#endif
