/* wf_buf.h - a growable byte buffer and the JSON text writer built on it.
 *
 * Appends never fail at the call site: an allocation failure sets `oom`,
 * later appends are ignored, and the owner checks `oom` once at the end.
 */
#ifndef WF_BUF_H
#define WF_BUF_H

#include "base/wf_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wf_buf {
	char *data;  /* NUL-terminated when len > 0 or after wf_buf_finish */
	size_t len;  /* bytes used, excluding the terminating NUL */
	size_t cap;  /* bytes allocated */
	bool oom;    /* an append failed; data is incomplete */
};

void wf_buf_put(struct wf_buf *b, const void *p, size_t n);

/* A text made a window at a time (metadata.json, model.safetensors'
 * header): p[0..n) is the text's bytes at *pos, which then moves past
 * them; the part inside [lo, hi) is copied to buf + (its offset - lo).
 * With buf NULL it only measures. */
void wf_window_put(char *buf, uint64_t lo, uint64_t hi, uint64_t *pos, const void *p, size_t n);
void wf_buf_puts(struct wf_buf *b, const char *s);
void wf_buf_putc(struct wf_buf *b, char c);
void wf_buf_printf(struct wf_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Appends s[0..n) as a quoted JSON string, valid JSON whatever s holds.
 * Valid UTF-8 is copied; '"', '\\' and control characters are escaped; each
 * byte that is not part of valid UTF-8 (always 0x80-0xFF) becomes the
 * escape \udcXX, a lone low surrogate U+DC80 + (byte - 0x80), as Python's
 * "surrogateescape" error handler does.  The mapping is injective (valid
 * UTF-8 never holds a surrogate), so distinct byte strings stay distinct
 * and the bytes can be recovered exactly; strict parsers that refuse lone
 * surrogates will refuse such strings (docs/naming.md). */
void wf_buf_json_str(struct wf_buf *b, const void *s, size_t n);

/* Appends a float as the shortest JSON number that reads back as the same
 * bits (float: strtof, double: strtod) and that JSON readers still take for
 * a float: it always holds a '.' or an 'e' ("-0.0", "10000.0", "1e+20",
 * "0.1").  NaN and infinities, which JSON cannot spell, become the strings
 * "NaN", "Infinity", "-Infinity". */
void wf_buf_json_f32(struct wf_buf *b, float v);
void wf_buf_json_f64(struct wf_buf *b, double v);

/* Makes data a NUL-terminated string (allocating for an empty buffer) of
 * exactly len + 1 bytes, and returns true; or returns false if any append
 * failed.  Appending afterwards is allowed (the buffer grows again). */
bool wf_buf_finish(struct wf_buf *b);

void wf_buf_free(struct wf_buf *b);


#endif
