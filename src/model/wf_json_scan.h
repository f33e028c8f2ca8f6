/* wf_json_scan.h - the top-level entries of a JSON object, one at a time.
 *
 * A safetensors header of a million tiny tensors is 68 MB of JSON, and
 * cJSON's tree of it about 13 times that.  This scanner finds where each
 * top-level entry's key and value lie without building anything, so the
 * parser can hand one entry at a time to cJSON: the peak is one entry's
 * tree.  It checks the object's own structure (braces, colons, commas);
 * each value's grammar is left to cJSON.
 */
#ifndef WF_JSON_SCAN_H
#define WF_JSON_SCAN_H

#include <stdint.h>

/* One entry: key s[key0, key1) (with its quotes), value s[val0, val1). */
struct wf_json_entry {
	uint64_t key0, key1, val0, val1;
};

/* Starts at *pos (just after the object's '{', or after the previous
 * entry); returns 1 with *e filled and *pos after it, 0 at the object's
 * '}' (*pos after it), or -1 with *pos at the first byte that breaks the
 * object's structure.  Work is linear in the bytes walked; nothing is
 * allocated. */
int wf_json_next(const uint8_t *s, uint64_t n, uint64_t *pos, struct wf_json_entry *e);

#endif
