/* wf_common.c - the few functions every layer uses (wf_common.h):
 * failing with a message, quoting a name for one, and UTF-8. */
#include "base/wf_common.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum wf_err wf_fail(char *err, enum wf_err code, const char *fmt, ...)
{
	if (err) {
		va_list ap;
		va_start(ap, fmt);
		vsnprintf(err, WF_ERRLEN, fmt, ap);
		va_end(ap);
	}
	return code;
}

size_t wf_utf8_seq(const uint8_t *s, size_t n)
{
	if (n == 0)
		return 0;
	uint8_t c = s[0];
	if (c < 0x80)
		return 1;
	size_t len;
	uint32_t cp, min;
	if ((c & 0xE0) == 0xC0) {
		len = 2, cp = c & 0x1F, min = 0x80;
	} else if ((c & 0xF0) == 0xE0) {
		len = 3, cp = c & 0x0F, min = 0x800;
	} else if ((c & 0xF8) == 0xF0) {
		len = 4, cp = c & 0x07, min = 0x10000;
	} else {
		return 0;
	}
	if (n < len)
		return 0;
	for (size_t i = 1; i < len; i++) {
		if ((s[i] & 0xC0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3F);
	}
	if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF))
		return 0;
	return len;
}

bool wf_utf8_valid(const void *s, size_t n)
{
	const uint8_t *p = s;
	size_t o = 0;
	while (o < n) {
		uint64_t w;
		if (p[o] < 0x80) {
			/* an ASCII run, 8 bytes at a time where it is long */
			while (o + 8 <= n && (memcpy(&w, p + o, 8), (w & 0x8080808080808080ull) == 0))
				o += 8;
			while (o < n && p[o] < 0x80)
				o++;
			continue;
		}
		/* the two-byte forms (Llama 3's "\u0120") without a call */
		if (p[o] >= 0xc2 && p[o] <= 0xdf && o + 1 < n && (p[o + 1] & 0xc0) == 0x80) {
			o += 2;
			continue;
		}
		size_t k = wf_utf8_seq(p + o, n - o);
		if (!k)
			return false;
		o += k;
	}
	return true;
}

/* Code points that are valid UTF-8 yet change how a line reads: the C1
 * controls (U+0080-U+009F; U+009B is a one-byte CSI to some terminals),
 * the bidirectional marks, embeddings, overrides and isolates (U+061C,
 * U+200E-U+200F, U+202A-U+202E, U+2066-U+2069), which reorder what
 * follows them on screen ("Trojan Source"), and the line and paragraph
 * separators U+2028-U+2029, which some editors and tools break lines at. */
static bool reads_as_control(uint32_t cp)
{
	return (cp >= 0x80 && cp <= 0x9F) || cp == 0x061C || cp == 0x200E || cp == 0x200F ||
	       (cp >= 0x2028 && cp <= 0x202E) || (cp >= 0x2066 && cp <= 0x2069);
}

size_t wf_printable_seq(const uint8_t *s, size_t n)
{
	if (n == 0)
		return 0;
	if (s[0] < 0x80)
		return s[0] >= 0x20 && s[0] < 0x7F;
	size_t l = wf_utf8_seq(s, n);
	if (l == 0)
		return 0;
	/* wf_utf8_seq checked the lead and continuation bytes */
	uint32_t cp = l == 2 ? (uint32_t)(s[0] & 0x1F) << 6 | (s[1] & 0x3F)
		    : l == 3 ? (uint32_t)(s[0] & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F)
			     : 0x10000; /* four bytes: past every code point above */
	return reads_as_control(cp) ? 0 : l;
}

const char *wf_quote_path(char *out, size_t outlen, const char *path)
{
	if (!path)
		return "";
	size_t n = strlen(path);
	bool clean = path[0] != '\'';
	for (size_t i = 0, l; clean && i < n; i += l)
		clean = (l = wf_printable_seq((const uint8_t *)path + i, n - i)) != 0;
	return clean ? path : wf_quote(out, outlen, path, n);
}

const char *wf_quote(char *out, size_t outlen, const void *name, size_t n)
{
	const uint8_t *s = name;
	size_t o = 0;
	if (outlen < 16) {
		if (outlen)
			out[0] = '\0';
		return out;
	}
	out[o++] = '\'';
	for (size_t i = 0; i < n; i++) {
		if (o + 8 >= outlen) {
			memcpy(out + o, "...", 3);
			o += 3;
			break;
		}
		uint8_t c = s[i];
		if (c >= 0x20 && c < 0x7F && c != '\\' && c != '\'') {
			out[o++] = (char)c;
		} else {
			size_t l = c >= 0x80 ? wf_printable_seq(s + i, n - i) : 0;
			if (l > 1 && o + l + 8 < outlen) {
				memcpy(out + o, s + i, l);
				o += l;
				i += l - 1;
			} else {
				o += (size_t)snprintf(out + o, outlen - o, "\\x%02x", c);
			}
		}
	}
	out[o++] = '\'';
	out[o] = '\0';
	return out;
}

void *wf_grow(void *p, size_t n, size_t *cap, size_t size, size_t first)
{
	if (n < *cap)
		return p;
	size_t nc = first ? first : 1, bytes;
	if ((*cap && __builtin_mul_overflow(*cap, (size_t)2, &nc)) || __builtin_mul_overflow(nc, size, &bytes))
		return NULL;
	void *np = realloc(p, bytes ? bytes : 1);
	if (np)
		*cap = nc;
	return np;
}

char *wf_path_join(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	char *p = malloc(la + lb + 2);
	if (p) {
		memcpy(p, a, la);
		p[la] = '/';
		memcpy(p + la + 1, b, lb + 1);
	}
	return p;
}
