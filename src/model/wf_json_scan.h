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

#include "base/wf_common.h"

#include <stdbool.h>
#include <stddef.h>
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

/* wf_json_next in two halves, for a caller that finds a value's end
 * itself: wf_json_key fills e's key and val0 (*pos there) and returns 1,
 * or 0 / -1 as wf_json_next; wf_json_end, given e->val1, checks what
 * follows and returns 1 (*pos as wf_json_next leaves it) or -1. */
int wf_json_key(const uint8_t *s, uint64_t n, uint64_t *pos, struct wf_json_entry *e);
/* The end of the value at s[i] as wf_json_next finds it (no check of its
 * grammar), or n + 1 when its brackets or quotes do not close. */
uint64_t wf_json_value_end(const uint8_t *s, uint64_t n, uint64_t i);
int wf_json_end(const uint8_t *s, uint64_t n, uint64_t *pos, const struct wf_json_entry *e);

/* A cursor for reading JSON values whole, with cJSON 1.7's grammar and
 * string semantics (tokenizer.json's big members are read this way
 * instead of through a cJSON tree: wf_vocab_tj.c). */
struct wf_jcur {
	const uint8_t *s;
	uint64_t n, pos;  /* the next byte to read */
	const char *why;  /* after a failure: what was wrong (pos is there) */
};

/* cJSON's CJSON_NESTING_LIMIT: a container opened with this many others
 * open around it is refused. */
#define WF_JSON_DEPTH 1000

/* Moves c->pos past JSON whitespace. */
void wf_jcur_ws(struct wf_jcur *c);
/* (cJSON's whitespace is every byte up to ' ', as here; wf_json_next's
 * is JSON's four, so it refuses some files cJSON reads: its callers fall
 * back to cJSON then.) */

/* Reads the string at c->pos (which must be '"'), decoded as cJSON does:
 * the escapes \" \\ \/ \b \f \n \r \t and \uXXXX, a high surrogate
 * only with a low one after it.  Returns 1 when it holds no escape (its
 * bytes are s[start + 1, + *len), start the old c->pos), 2 when decoded
 * into out[0..*len) (out needs room for the string's raw length; NULL
 * only checks it), -1 on a failure (why set): no closing quote, an
 * unknown escape, bad hex, a lone surrogate, or a NUL (raw or \u0000,
 * which cJSON's NUL-terminated strings would cut short).  c->pos ends
 * after the closing quote.  Linear in the bytes read. */
int wf_json_string(struct wf_jcur *c, uint8_t *out, uint64_t *len);

/* Reads the number at c->pos as cJSON does (at most 63 of the bytes
 * [0-9+-eE.], then strtod); false (why set) when none is read. */
bool wf_json_number(struct wf_jcur *c, double *out);

/* Checks and skips the value at c->pos (no leading whitespace), inside
 * `depth` open containers: false (why set) where cJSON would refuse it.
 * Recursion is bounded by WF_JSON_DEPTH. */
bool wf_json_skip(struct wf_jcur *c, unsigned depth);

/* ---- a file read as Python's json.load reads it ----
 *
 * The converter reads config.json and the tokenizer files with json.load
 * (and Hugging Face's tokenizers with serde_json), cJSON otherwise: where
 * the two would read one file differently, weightfs refuses the file
 * rather than make model.gguf from other values than the converter reads
 * (docs/security.md). */

struct cJSON;

/* Whether t[0..n) holds the escape \u0000: cJSON keeps strings
 * NUL-terminated, so one would silently cut a string (or a key) short
 * where json.load keeps it whole.  Backslashes occur only inside strings
 * in valid JSON, each escaping the next character. */
bool wf_json_nul_escape(const char *t, size_t n);

/* Whether t[0..n) begins with a UTF-8 byte order mark: cJSON skips it,
 * json.loads and serde_json refuse the file. */
bool wf_json_bom(const char *t, size_t n);

/* The first key given twice in one object of the tree j (depth first, in
 * file order): its second entry, or NULL when every object's keys are
 * unique.  *in is set to the key of the object holding it (NULL for the
 * top level or an array item).  Python's json keeps a repeated key's last
 * value, cJSON_GetObjectItem its first.  Time linear in the tree (a hash
 * set for objects of many keys); recursion bounded by cJSON's nesting
 * limit (WF_JSON_DEPTH).  false when out of memory (*dup NULL then). */
bool wf_json_dup_key(const struct cJSON *j, const struct cJSON **dup, const char **in);

/* t[0..n) parsed by cJSON as one value with only JSON whitespace after it
 * (cJSON_ParseWithLength takes trailing bytes, json.load refuses them);
 * NULL when it is not. */
struct cJSON *wf_json_parse_whole(const char *t, size_t n);

/* Checks file `name`, whose text t[0..n) cJSON parsed into j, for what
 * json.load reads otherwise: a byte order mark, a \u0000 in a string
 * (WF_ERR_UNSUP), a key given twice (t may be NULL: the tree alone).
 * Returns WF_OK, or WF_ERR_FORMAT (WF_ERR_UNSUP, WF_ERR_NOMEM) with one line in
 * why[WF_ERRLEN] naming the file, and the key and the object it is in. */
enum wf_err wf_json_strict(const char *name, const char *t, size_t n, const struct cJSON *j, char *why);

#endif
