/* wf_buf.c - growable buffer, JSON text output, UTF-8 checks. */
#include "base/wf_buf.h"
#include "base/wf_common.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static bool grow(struct wf_buf *b, size_t extra)
{
	if (b->oom)
		return false;
	if (b->len + extra + 1 <= b->cap)
		return true;
	size_t cap = b->cap ? b->cap : 256;
	while (cap < b->len + extra + 1) {
		if (cap > SIZE_MAX / 2) {
			b->oom = true;
			return false;
		}
		cap *= 2;
	}
	char *p = realloc(b->data, cap);
	if (!p) {
		b->oom = true;
		return false;
	}
	b->data = p;
	b->cap = cap;
	return true;
}

void wf_buf_put(struct wf_buf *b, const void *p, size_t n)
{
	if (n == 0 || !grow(b, n))
		return;
	memcpy(b->data + b->len, p, n);
	b->len += n;
	b->data[b->len] = '\0';
}

void wf_buf_puts(struct wf_buf *b, const char *s)
{
	wf_buf_put(b, s, strlen(s));
}

void wf_buf_putc(struct wf_buf *b, char c)
{
	wf_buf_put(b, &c, 1);
}

void wf_buf_printf(struct wf_buf *b, const char *fmt, ...)
{
	char small[128];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(small, sizeof small, fmt, ap);
	va_end(ap);
	if (n < 0) {
		b->oom = true;
		return;
	}
	if ((size_t)n < sizeof small) {
		wf_buf_put(b, small, (size_t)n);
		return;
	}
	if (!grow(b, (size_t)n))
		return;
	va_start(ap, fmt);
	vsnprintf(b->data + b->len, (size_t)n + 1, fmt, ap);
	va_end(ap);
	b->len += (size_t)n;
}

void wf_buf_json_str(struct wf_buf *b, const void *sv, size_t n)
{
	const uint8_t *s = sv;
	wf_buf_putc(b, '"');
	size_t i = 0;
	while (i < n) {
		size_t run = i;
		/* copy runs of plain printable ASCII in one go */
		while (run < n && s[run] >= 0x20 && s[run] < 0x80 && s[run] != '"' && s[run] != '\\')
			run++;
		wf_buf_put(b, s + i, run - i);
		i = run;
		if (i >= n)
			break;
		uint8_t c = s[i];
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			wf_buf_put(b, e, 2);
			i++;
		} else if (c < 0x20) {
			switch (c) {
			case '\n': wf_buf_puts(b, "\\n"); break;
			case '\t': wf_buf_puts(b, "\\t"); break;
			case '\r': wf_buf_puts(b, "\\r"); break;
			default: wf_buf_printf(b, "\\u%04x", c); break;
			}
			i++;
		} else {
			size_t l = wf_utf8_seq(s + i, n - i);
			if (l == 0) {
				/* A lone low surrogate U+DC80 + (byte - 0x80), as
				 * Python's surrogateescape: valid UTF-8 never encodes
				 * a surrogate, so unlike U+FFFD this keeps distinct
				 * byte strings distinct, and it can be undone. */
				wf_buf_printf(b, "\\udc%02x", c);
				i++;
			} else {
				wf_buf_put(b, s + i, l);
				i += l;
			}
		}
	}
	wf_buf_putc(b, '"');
}

static void json_nonfinite(struct wf_buf *b, double v)
{
	wf_buf_puts(b, isnan(v) ? "\"NaN\"" : v > 0 ? "\"Infinity\"" : "\"-Infinity\"");
}

/* True if text s reads back (strtof or strtod) as exactly the bits of v:
 * bitwise, so -0.0 is not taken for 0.0. */
static bool reads_back(const char *s, double v, bool single)
{
	if (single) {
		float got = strtof(s, NULL), want = (float)v;
		return memcmp(&got, &want, sizeof got) == 0;
	}
	double got = strtod(s, NULL);
	return memcmp(&got, &v, sizeof got) == 0;
}

/* JSON has one number type, and readers decide int or float from the text:
 * "-0" and "10000" come back as integers (the sign of zero lost), so the
 * text must always hold a '.' or an 'e'.  Writes the fewest significant
 * digits that read back as the same bits, in fixed notation where Python's
 * repr would use it (exponent -4..15), else in exponent notation. */
static void json_float(struct wf_buf *b, double v, bool single)
{
	char e[48], f[64];
	int maxp = single ? 9 : 17, p;
	for (p = 1; p < maxp; p++) {
		snprintf(e, sizeof e, "%.*e", p - 1, v);
		if (reads_back(e, v, single))
			break;
	}
	if (p == maxp)
		snprintf(e, sizeof e, "%.*e", p - 1, v);
	/* the exponent after rounding to p digits (9.99 -> 1.0e+01) */
	int x = atoi(strchr(e, 'e') + 1);
	if (x >= -4 && x < 16) {
		int decimals = p - 1 - x < 1 ? 1 : p - 1 - x;
		snprintf(f, sizeof f, "%.*f", decimals, v);
		if (reads_back(f, v, single)) {
			wf_buf_puts(b, f);
			return;
		}
	}
	wf_buf_puts(b, e);
}

void wf_buf_json_f32(struct wf_buf *b, float v)
{
	if (!isfinite(v))
		json_nonfinite(b, v);
	else
		json_float(b, v, true);
}

void wf_buf_json_f64(struct wf_buf *b, double v)
{
	if (!isfinite(v))
		json_nonfinite(b, v);
	else
		json_float(b, v, false);
}

bool wf_buf_finish(struct wf_buf *b)
{
	if (!grow(b, 0))
		return false;
	b->data[b->len] = '\0';
	/* a finished text is usually kept (one per part of a set, or a
	 * generated file): give back what doubling left unused */
	if (b->cap > b->len + 1) {
		char *p = realloc(b->data, b->len + 1);
		if (p) {
			b->data = p;
			b->cap = b->len + 1;
		}
	}
	return true;
}

void wf_buf_free(struct wf_buf *b)
{
	free(b->data);
	*b = (struct wf_buf){0};
}


void wf_window_put(char *buf, uint64_t lo, uint64_t hi, uint64_t *pos, const void *p, size_t n)
{
	uint64_t a = *pos, b = *pos + n;
	*pos = b;
	if (!buf || b <= lo || a >= hi)
		return;
	uint64_t from = a > lo ? a : lo, to = b < hi ? b : hi;
	memcpy(buf + (from - lo), (const char *)p + (from - a), (size_t)(to - from));
}
