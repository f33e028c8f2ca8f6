/* wf_json_scan.c - the top-level entries of a JSON object (wf_json_scan.h). */
#include "model/wf_json_scan.h"
#include "base/wf_common.h"
#include "base/wf_names.h"

#include <cjson/cJSON.h>

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

static bool ws(uint8_t c)
{
	return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static uint64_t skip_ws(const uint8_t *s, uint64_t n, uint64_t i)
{
	while (i < n && ws(s[i]))
		i++;
	return i;
}

/* The end of the string starting at s[i] == '"' (after its closing
 * quote), or n + 1 if it does not end. */
static uint64_t string_end(const uint8_t *s, uint64_t n, uint64_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return n + 1;
}

/* The end of the value starting at s[i], or n + 1 if its brackets do not
 * close.  Nested values are walked with a depth count, strings skipped
 * whole; a scalar ends at the first byte that cannot continue it. */
static uint64_t value_end(const uint8_t *s, uint64_t n, uint64_t i)
{
	if (s[i] == '"')
		return string_end(s, n, i);
	if (s[i] != '{' && s[i] != '[') {
		while (i < n && !ws(s[i]) && s[i] != ',' && s[i] != '}' && s[i] != ']')
			i++;
		return i;
	}
	uint64_t depth = 0;
	while (i < n) {
		uint8_t c = s[i];
		if (c == '"') {
			i = string_end(s, n, i);
			continue;
		}
		if (c == '{' || c == '[')
			depth++;
		else if ((c == '}' || c == ']') && --depth == 0)
			return i + 1;
		i++;
	}
	return n + 1;
}

uint64_t wf_json_value_end(const uint8_t *s, uint64_t n, uint64_t i)
{
	return i < n ? value_end(s, n, i) : n + 1;
}

int wf_json_key(const uint8_t *s, uint64_t n, uint64_t *pos, struct wf_json_entry *e)
{
	uint64_t i = skip_ws(s, n, *pos);
	if (i < n && s[i] == '}') {
		*pos = i + 1;
		return 0;
	}
	/* after an entry *pos is at its ',' (the first call's is after the
	 * '{', so "{," does not pass) */
	if (*pos < n && s[*pos] == ',' && *pos > 0 && s[*pos - 1] != '{')
		i = skip_ws(s, n, *pos + 1);
	if (i >= n || s[i] != '"') {
		*pos = i;
		return -1;
	}
	e->key0 = i;
	e->key1 = string_end(s, n, i);
	if (e->key1 > n) {
		*pos = n;
		return -1;
	}
	i = skip_ws(s, n, e->key1);
	if (i >= n || s[i] != ':') {
		*pos = i;
		return -1;
	}
	i = skip_ws(s, n, i + 1);
	if (i >= n) {
		*pos = i;
		return -1;
	}
	e->val0 = i;
	*pos = i;
	return 1;
}

int wf_json_end(const uint8_t *s, uint64_t n, uint64_t *pos, const struct wf_json_entry *e)
{
	if (e->val1 > n || e->val1 == e->val0) {
		*pos = e->val1 > n ? n : e->val1;
		return -1;
	}
	uint64_t i = skip_ws(s, n, e->val1);
	/* what follows must be ',' and another entry, or the closing '}' */
	if (i >= n || (s[i] != ',' && s[i] != '}')) {
		*pos = i;
		return -1;
	}
	if (s[i] == ',') {
		uint64_t j = skip_ws(s, n, i + 1);
		if (j >= n || s[j] != '"') {
			*pos = j;
			return -1;
		}
	}
	*pos = i;
	return 1;
}

int wf_json_next(const uint8_t *s, uint64_t n, uint64_t *pos, struct wf_json_entry *e)
{
	int r = wf_json_key(s, n, pos, e);
	if (r != 1)
		return r;
	e->val1 = value_end(s, n, e->val0);
	return wf_json_end(s, n, pos, e);
}

/* ---- whole values (wf_jcur) */

static bool jfail(struct wf_jcur *c, const char *why)
{
	c->why = why;
	return false;
}

void wf_jcur_ws(struct wf_jcur *c)
{
	while (c->pos < c->n && c->s[c->pos] <= ' ')
		c->pos++;
}

static int hexval(uint8_t c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c |= 0x20;
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* The 4 hex digits at s[i]; -1 unless all 4 lie before n and are hex. */
static int32_t hex4(const uint8_t *s, uint64_t n, uint64_t i)
{
	int32_t v = 0;
	if (i + 4 > n)
		return -1;
	for (int k = 0; k < 4; k++) {
		int h = hexval(s[i + k]);
		if (h < 0)
			return -1;
		v = v << 4 | h;
	}
	return v;
}

/* The \u escape at s[c->pos] ('\\'), with its low surrogate: appended to
 * out (when not NULL) as UTF-8 at *k; c->pos moves past it. */
static bool unicode_escape(struct wf_jcur *c, uint8_t *out, uint64_t *k)
{
	int32_t cp = hex4(c->s, c->n, c->pos + 2), lo;
	uint8_t u[4];
	int len;
	if (cp < 0)
		return jfail(c, "a \\u escape without 4 hex digits");
	if (cp == 0)
		return jfail(c, "\\u0000 in a string");
	if (cp >= 0xdc00 && cp <= 0xdfff)
		return jfail(c, "a lone low surrogate");
	c->pos += 6;
	if (cp >= 0xd800 && cp <= 0xdbff) {
		if (c->pos + 1 >= c->n || c->s[c->pos] != '\\' || c->s[c->pos + 1] != 'u' ||
		    (lo = hex4(c->s, c->n, c->pos + 2)) < 0xdc00 || lo > 0xdfff)
			return jfail(c, "a high surrogate without a low one");
		cp = 0x10000 + ((cp & 0x3ff) << 10 | (lo & 0x3ff));
		c->pos += 6;
	}
	if (cp < 0x80) {
		u[0] = (uint8_t)cp, len = 1;
	} else if (cp < 0x800) {
		u[0] = (uint8_t)(0xc0 | cp >> 6), u[1] = (uint8_t)(0x80 | (cp & 0x3f)), len = 2;
	} else if (cp < 0x10000) {
		u[0] = (uint8_t)(0xe0 | cp >> 12), u[1] = (uint8_t)(0x80 | (cp >> 6 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp & 0x3f)), len = 3;
	} else {
		u[0] = (uint8_t)(0xf0 | cp >> 18), u[1] = (uint8_t)(0x80 | (cp >> 12 & 0x3f));
		u[2] = (uint8_t)(0x80 | (cp >> 6 & 0x3f)), u[3] = (uint8_t)(0x80 | (cp & 0x3f)), len = 4;
	}
	for (int i = 0; i < len; i++, (*k)++)
		if (out)
			out[*k] = u[i];
	return true;
}

/* One escape at s[c->pos] == '\\'. */
static bool escape(struct wf_jcur *c, uint8_t *out, uint64_t *k)
{
	static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
	if (c->pos + 1 >= c->n)
		return jfail(c, "a string without its closing quote");
	uint8_t e = c->s[c->pos + 1];
	if (e == 'u')
		return unicode_escape(c, out, k);
	for (int i = 0; from[i]; i++)
		if (e == (uint8_t)from[i]) {
			if (out)
				out[*k] = (uint8_t)to[i];
			(*k)++;
			c->pos += 2;
			return true;
		}
	return jfail(c, "an unknown escape");
}

int wf_json_string(struct wf_jcur *c, uint8_t *out, uint64_t *len)
{
	const uint8_t *s = c->s;
	uint64_t i = c->pos + 1, j = i, k = 0;
	while (j < c->n && s[j] != '"' && s[j] != '\\' && s[j] != 0)
		j++;
	if (j < c->n && s[j] == '"') {
		*len = j - i;
		c->pos = j + 1;
		return 1;
	}
	if (out)
		memcpy(out, s + i, j - i);
	k = j - i;
	for (c->pos = j;;) {
		if (c->pos >= c->n)
			return jfail(c, "a string without its closing quote"), -1;
		uint8_t b = s[c->pos];
		if (b == '"')
			break;
		if (b == 0)
			return jfail(c, "a NUL byte in a string"), -1;
		if (b == '\\') {
			if (!escape(c, out, &k))
				return -1;
			continue;
		}
		if (out)
			out[k] = b;
		k++;
		c->pos++;
	}
	c->pos++;
	*len = k;
	return 2;
}

bool wf_json_number(struct wf_jcur *c, double *out)
{
	char buf[64];
	uint64_t k = 0, v = 0;
	bool plain = true;
	while (k < sizeof buf - 1 && c->pos + k < c->n) {
		uint8_t b = c->s[c->pos + k];
		if (!((b >= '0' && b <= '9') || b == '+' || b == '-' || b == 'e' || b == 'E' || b == '.'))
			break;
		plain &= (b >= '0' && b <= '9') || (b == '-' && k == 0);
		buf[k++] = (char)b;
	}
	buf[k] = 0;
	/* [-]digits, at most 15 of them: exact as an integer, as strtod gives it */
	if (plain && k > (buf[0] == '-') && k - (buf[0] == '-') <= 15) {
		for (uint64_t i = buf[0] == '-'; i < k; i++)
			v = v * 10 + (uint64_t)(buf[i] - '0');
		*out = buf[0] == '-' ? -(double)v : (double)v;
		c->pos += k;
		return true;
	}
	char *end;
	*out = strtod(buf, &end);
	if (end == buf)
		return jfail(c, "not a number");
	c->pos += (uint64_t)(end - buf);
	return true;
}

static bool skip_container(struct wf_jcur *c, unsigned depth)
{
	bool obj = c->s[c->pos] == '{';
	uint8_t close = obj ? '}' : ']';
	uint64_t len;
	if (depth >= WF_JSON_DEPTH)
		return jfail(c, "nested too deeply");
	c->pos++;
	wf_jcur_ws(c);
	if (c->pos < c->n && c->s[c->pos] == close) {
		c->pos++;
		return true;
	}
	for (;;) {
		wf_jcur_ws(c);
		if (obj) {
			if (c->pos >= c->n || c->s[c->pos] != '"')
				return jfail(c, "a key is not a string");
			if (wf_json_string(c, NULL, &len) < 0)
				return false;
			wf_jcur_ws(c);
			if (c->pos >= c->n || c->s[c->pos] != ':')
				return jfail(c, "no ':' after a key");
			c->pos++;
			wf_jcur_ws(c);
		}
		if (!wf_json_skip(c, depth + 1))
			return false;
		wf_jcur_ws(c);
		if (c->pos < c->n && c->s[c->pos] == ',') {
			c->pos++;
			continue;
		}
		if (c->pos < c->n && c->s[c->pos] == close) {
			c->pos++;
			return true;
		}
		return jfail(c, obj ? "no ',' or '}' after a value" : "no ',' or ']' after a value");
	}
}

bool wf_json_skip(struct wf_jcur *c, unsigned depth)
{
	static const char *const lit[] = {"null", "true", "false"};
	uint64_t len;
	double d;
	if (c->pos >= c->n)
		return jfail(c, "a value is missing");
	uint8_t b = c->s[c->pos];
	if (b == '"')
		return wf_json_string(c, NULL, &len) >= 0;
	if (b == '-' || (b >= '0' && b <= '9'))
		return wf_json_number(c, &d);
	if (b == '{' || b == '[')
		return skip_container(c, depth);
	for (int i = 0; i < 3; i++) {
		size_t l = strlen(lit[i]);
		if (c->n - c->pos >= l && memcmp(c->s + c->pos, lit[i], l) == 0) {
			c->pos += l;
			return true;
		}
	}
	return jfail(c, "not a JSON value");
}

cJSON *wf_json_parse_whole(const char *t, size_t n)
{
	const char *end = NULL;
	cJSON *j = t ? cJSON_ParseWithLengthOpts(t, n, &end, false) : NULL;
	while (j && end < t + n && ws((uint8_t)*end))
		end++;
	if (j && end != t + n) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

bool wf_json_nul_escape(const char *t, size_t n)
{
	for (const char *p = t, *e = t + n; (p = memchr(p, '\\', (size_t)(e - p))) && p + 1 < e; p += 2)
		if (p[1] == 'u' && e - p >= 6 && memcmp(p + 2, "0000", 4) == 0)
			return true;
	return false;
}

bool wf_json_bom(const char *t, size_t n)
{
	return t && n >= 3 && memcmp(t, "\xef\xbb\xbf", 3) == 0;
}

/* Objects of at most this many keys are compared pairwise: no table. */
#define DUP_PAIRWISE 8

/* The second entry of a key given twice among obj's own keys, or NULL;
 * *oom when the table could not be made. */
static const cJSON *dup_in(const cJSON *obj, bool *oom)
{
	size_t n = 0;
	for (const cJSON *c = obj->child; c; c = c->next)
		n++;
	if (n <= DUP_PAIRWISE) {
		for (const cJSON *a = obj->child; a; a = a->next)
			for (const cJSON *b = a->next; b; b = b->next)
				if (a->string && b->string && strcmp(a->string, b->string) == 0)
					return b;
		return NULL;
	}
	struct wf_names set;
	if (!wf_names_init(&set, n)) {
		*oom = true;
		return NULL;
	}
	const cJSON *hit = NULL;
	for (const cJSON *c = obj->child; c && !hit; c = c->next)
		if (c->string && wf_names_put(&set, c->string, strlen(c->string), 0) != WF_NAMES_NONE)
			hit = c;
	wf_names_free(&set);
	return hit;
}

static const cJSON *dup_walk(const cJSON *j, const char *key, const char **in, bool *oom, unsigned depth)
{
	if (depth > WF_JSON_DEPTH + 1 || !(cJSON_IsObject(j) || cJSON_IsArray(j)))
		return NULL;
	const cJSON *hit = cJSON_IsObject(j) ? dup_in(j, oom) : NULL;
	if (hit || *oom) {
		*in = key;
		return hit;
	}
	for (const cJSON *c = j->child; c && !*oom; c = c->next)
		if ((hit = dup_walk(c, cJSON_IsObject(j) ? c->string : NULL, in, oom, depth + 1)))
			return hit;
	return NULL;
}

bool wf_json_dup_key(const cJSON *j, const cJSON **dup, const char **in)
{
	bool oom = false;
	*in = NULL;
	*dup = dup_walk(j, NULL, in, &oom, 0);
	if (oom)
		*dup = NULL;
	return !oom;
}

enum wf_err wf_json_strict(const char *name, const char *t, size_t n, const cJSON *j, char *why)
{
	const cJSON *dup;
	const char *in;
	char qk[96], qi[96];
	if (wf_json_bom(t, n))
		return wf_fail(why, WF_ERR_FORMAT, "%s: begins with a UTF-8 byte order mark, which Python's json refuses",
			       name);
	if (t && wf_json_nul_escape(t, n))
		return wf_fail(why, WF_ERR_UNSUP, "%s: a string holds \\u0000", name);
	if (!wf_json_dup_key(j, &dup, &in))
		return wf_fail(why, WF_ERR_NOMEM, "%s: out of memory", name);
	if (!dup)
		return WF_OK;
	wf_quote(qk, sizeof qk, dup->string, strlen(dup->string));
	if (in)
		wf_quote(qi, sizeof qi, in, strlen(in));
	return wf_fail(why, WF_ERR_FORMAT, "%s: %s%skey %s given twice in one object (Python's json keeps the last, "
		       "cJSON the first)", name, in ? qi : "", in ? ": " : "", qk);
}
