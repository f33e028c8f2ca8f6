/* wf_gguf_meta.h - a GGUF's metadata.json made a window at a time.
 *
 * metadata.json holds every key/value of a GGUF header as one object
 * (wf_meta.h's framing), and its text can be many times the header: a
 * 20,000,000-element bool array is 20 MB in the file and 130 MB as text.
 * So it is never kept: one pass when the model opens formats every value
 * once (a piece at a time, into a small scratch buffer) to learn the
 * text's length, keeps per key where it is in the file and where its entry
 * and value are in the text, and keeps a checkpoint (where the walk is in
 * the file and in the text) every WF_GGUF_META_STEP bytes of text or so.
 * A read walks again from the last checkpoint before it.  Memory is
 * O(keys + text / step); the bytes are exactly those the whole text had.
 *
 * The generator keeps no pointer to the file: every call is given the
 * part's bytes (the mapping may come and go: wf_maps.h).  Every position
 * it reads is checked against the value's extent found at open; bytes
 * that no longer agree with what was measured (a file rewritten in place)
 * give WF_ERR_CHANGED, never other bytes.  A file that shrank under its
 * mapping raises SIGBUS: callers read under the SIGBUS guard (wf_bus.h).
 * No FUSE here: the mount serves these bytes through wf_meta.h.
 */
#ifndef WF_GGUF_META_H
#define WF_GGUF_META_H

#include "base/wf_common.h"
#include "model/wf_gguf_kv.h" /* enum wf_gtype */

#include <stddef.h>
#include <stdint.h>

/* Text bytes between checkpoints, at least (a read makes at most about
 * this many bytes more than it returns). */
#define WF_GGUF_META_STEP (64u << 10)

/* Where key i's entry lands in the text (filled by wf_gguf_meta_new). */
struct wf_gguf_meta_text {
	uint64_t t0;           /* where the entry starts (its separator) */
	uint64_t v0, v1;       /* the value's JSON text [v0, v1) */
};

struct wf_gguf_meta;

/* Measures metadata.json for the key/values of the GGUF file data[0..len)
 * that the parser checked and indexed (ix, in file order), and makes the
 * generator, which reads ix's entries from then on: ix must outlive it
 * (a model owns both, wf_model.h).  Returns WF_OK, WF_ERR_NOMEM, or
 * WF_ERR_CHANGED if the bytes no longer agree with ix. */
enum wf_err wf_gguf_meta_new(const uint8_t *data, uint64_t len, const struct wf_gguf_kvs *ix,
			     struct wf_gguf_meta **out);

/* Frees g; safe on NULL. */
void wf_gguf_meta_free(struct wf_gguf_meta *g);

/* metadata.json's length in bytes. */
uint64_t wf_gguf_meta_len(const struct wf_gguf_meta *g);

/* The keys, key i (i < the count: its index entry) and where it is in the text. */
size_t wf_gguf_meta_count(const struct wf_gguf_meta *g);
const struct wf_gguf_kv *wf_gguf_meta_key(const struct wf_gguf_meta *g, size_t i);
const struct wf_gguf_meta_text *wf_gguf_meta_text(const struct wf_gguf_meta *g, size_t i);

/* Fills buf with bytes [off, off + n) of metadata.json, made from the
 * file's bytes data[0..len) (the file g was measured on).  Safe from
 * several threads at once.  Returns WF_OK; WF_ERR_RANGE when the range
 * passes the end; WF_ERR_CHANGED when the file's bytes no longer make the
 * text measured (buf's contents are then undefined); WF_ERR_NOMEM. */
enum wf_err wf_gguf_meta_read(const struct wf_gguf_meta *g, const uint8_t *data, uint64_t len, uint64_t off,
			      size_t n, char *buf);

/* Key i's own file in metadata/: a string's raw bytes, any other value its
 * JSON text.  _value_len gives its length; _value fills buf with bytes
 * [off, off + n) of it, returning as wf_gguf_meta_read does. */
uint64_t wf_gguf_meta_value_len(const struct wf_gguf_meta *g, size_t i);
enum wf_err wf_gguf_meta_value(const struct wf_gguf_meta *g, const uint8_t *data, uint64_t len, size_t i,
			       uint64_t off, size_t n, char *buf);

#endif
