/* wf_common.h - error codes and small helpers shared by the library.
 *
 * Library functions return an enum wf_err and, on failure, may fill a
 * caller-owned message buffer of WF_ERRLEN bytes.  Only main() prints.
 */
#ifndef WF_COMMON_H
#define WF_COMMON_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <inttypes.h>
#include <stdint.h>

#define WF_ERRLEN 512
#define WF_ARRAY_LEN(a) (sizeof(a) / sizeof((a)[0]))

enum wf_err {
	WF_OK = 0,
	WF_ERR_NOMEM,   /* allocation failed */
	WF_ERR_IO,      /* the OS refused (open, mmap, fstat) */
	WF_ERR_FORMAT,  /* the model file is malformed or hostile */
	WF_ERR_UNSUP,   /* well-formed, but something weightfs does not handle */
	WF_ERR_RANGE,   /* a read that cannot be served (bytes gone, no decoder) */
	WF_ERR_CHANGED, /* the model file is no longer the one that was opened */
};

/* Formats msg into err (WF_ERRLEN bytes) when err is not NULL and returns
 * code, so a failing path reads `return wf_fail(err, WF_ERR_FORMAT, ...)`. */
enum wf_err wf_fail(char *err, enum wf_err code, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* a*b and a+b on uint64_t; return false on overflow and leave *r undefined. */
static inline bool wf_mul_ok(uint64_t a, uint64_t b, uint64_t *r)
{
	return !__builtin_mul_overflow(a, b, r);
}

static inline bool wf_add_ok(uint64_t a, uint64_t b, uint64_t *r)
{
	return !__builtin_add_overflow(a, b, r);
}

/* Little-endian loads from unaligned bytes. */
/* Length of the valid UTF-8 sequence starting at s[0] (1..4), or 0 if the
 * bytes there (at most n) are not one: overlong forms, surrogates and code
 * points past U+10FFFF are invalid. */
size_t wf_utf8_seq(const uint8_t *s, size_t n);

/* Whether p[0..n) is valid UTF-8 (U+0000 included) by wf_utf8_seq's rules;
 * ASCII runs are checked 8 bytes at a time (a tokenizer's 9 MB of text). */
bool wf_utf8_valid(const void *p, size_t n);

/* Length of the character at s[0] (at most n bytes) when it is safe to
 * show as it is on one line of a terminal: 1 for printable ASCII, the
 * sequence's length for valid UTF-8 other than the C1 controls, the
 * bidirectional controls and the line/paragraph separators; 0 for
 * anything else (a control byte, DEL, invalid UTF-8, one of those code
 * points), which a display escapes. */
size_t wf_printable_seq(const uint8_t *s, size_t n);

/* Writes a printable, quoted, length-limited rendering of a name from a
 * model file into out (for error messages): non-printable bytes as \xNN,
 * long names cut with "...". Returns out. */
const char *wf_quote(char *out, size_t outlen, const void *name, size_t n);

/* Room for wf_quote_path's escaped form: a file name's 255 bytes need up
 * to 1,020 escaped, but a message is WF_ERRLEN bytes anyway. */
#define WF_QPATH 320

/* A file name or path (from a folder listing, the command line) for a
 * message: returned as it is when every byte of it is printable (ASCII or
 * valid UTF-8 past the C1 controls) and it does not begin with a quote;
 * otherwise wf_quote's quoted, escaped form written into out (WF_QPATH
 * bytes), so a name holding a newline or an escape still makes one line.
 * path may be NULL (returns ""). */
const char *wf_quote_path(char *out, size_t outlen, const char *path);

static inline uint16_t wf_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t wf_le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t wf_le64(const uint8_t *p)
{
	return (uint64_t)wf_le32(p) | (uint64_t)wf_le32(p + 4) << 32;
}

/* The one grow-by-doubling: p, an array of cap elements of `size` bytes of
 * which n are used, with room for at least one more.  Returns p when
 * n < *cap; else p reallocated to 2 * *cap elements (`first` when *cap is
 * 0), *cap updated; NULL, p and *cap untouched, when memory or size_t run
 * out.  Use: `T *np = wf_grow(arr, n, &cap, sizeof *arr, 16); if (!np)
 * ...; arr = np;`. */
void *wf_grow(void *p, size_t n, size_t *cap, size_t size, size_t first);

/* "a/b", malloc'd; NULL when out of memory. */
char *wf_path_join(const char *a, const char *b);

#endif
