/* wf_card.c - general.size_label (wf_card.h). */
#include "arch/wf_card.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------------------------------------------------------------- counting */

static uint64_t sat_add(uint64_t a, uint64_t b)
{
	uint64_t r;
	return wf_add_ok(a, b, &r) ? r : UINT64_MAX;
}

void wf_card_count_add(struct wf_card_count *c, const char *name, const uint64_t *ne, uint32_t ndim)
{
	uint64_t size = 1;
	for (uint32_t i = 0; i < ndim; i++)
		if (!wf_mul_ok(size, ne[i], &size))
			size = UINT64_MAX;
	size_t nl = strlen(name);
	if (strstr(name, "_exps.") && ndim >= 3) {
		/* numpy shape[-3] is ggml ne[2], shape[-2] ne[1] */
		bool bias = nl >= 5 && strcmp(name + nl - 5, ".bias") == 0;
		uint64_t count = bias ? ne[1] : ne[2];
		/* a count of 0 has a size of 0: nothing to add (Python would
		 * divide by zero) */
		c->expert = sat_add(c->expert, count ? size / count : 0);
		c->expert_sum = sat_add(c->expert_sum, count);
		c->n_expert++;
	} else {
		c->shared = sat_add(c->shared, size);
	}
	c->total = sat_add(c->total, size);
}

void wf_card_rounded(uint64_t n, char *out, size_t outlen)
{
	/* Python compares the int with the float exactly: these floats are
	 * integers, so an integer comparison is the same one; it scales by
	 * multiplying float(n), not dividing */
	double scaled;
	char suffix;
	if (n > 1000000000000ull)
		scaled = (double)n * 1e-12, suffix = 'T';
	else if (n > 1000000000ull)
		scaled = (double)n * 1e-9, suffix = 'B';
	else if (n > 1000000ull)
		scaled = (double)n * 1e-6, suffix = 'M';
	else
		scaled = (double)n * 1e-3, suffix = 'K';
	/* len(str(round(scaled)).lstrip('0')): round() is half to even, as
	 * nearbyint in the default rounding mode */
	double r = nearbyint(scaled);
	int digits = 0;
	for (; r >= 1.0; r = floor(r / 10.0))
		digits++;
	int fix = digits < 2 ? 2 - digits : 0;
	snprintf(out, outlen, "%.*f%c", fix, scaled, suffix);
}

void wf_card_count_label(const struct wf_card_count *c, char *out, size_t outlen)
{
	uint64_t count = c->n_expert ? c->expert_sum / c->n_expert : 0;
	char n[40];
	if (count > 0) {
		wf_card_rounded(sat_add(c->shared, c->expert), n, sizeof n);
		snprintf(out, outlen, "%" PRIu64 "x%s", count, n);
	} else {
		wf_card_rounded(c->total, out, outlen);
	}
}

/* ---------------------------------------------------------------- names */

static bool digit(char ch)
{
	return ch >= '0' && ch <= '9';
}

static bool ieq(const char *s, size_t n, const char *lit)
{
	if (strlen(lit) != n)
		return false;
	for (size_t i = 0; i < n; i++) {
		char a = s[i] >= 'A' && s[i] <= 'Z' ? (char)(s[i] | 0x20) : s[i];
		if (a != lit[i])
			return false;
	}
	return true;
}

/* (A|\d+x)?\d+([._]\d+)?[KMBT]\d? in full, ignoring case */
static bool size_numeric(const char *s, size_t n)
{
	size_t i = 0, j = 0;
	if (n && (s[0] == 'A' || s[0] == 'a')) {
		i = 1;
	} else {
		while (j < n && digit(s[j]))
			j++;
		if (j > 0 && j < n && (s[j] == 'x' || s[j] == 'X'))
			i = j + 1;
	}
	j = i;
	while (j < n && digit(s[j]))
		j++;
	if (j == i)
		return false;
	if (j < n && (s[j] == '.' || s[j] == '_') && j + 1 < n && digit(s[j + 1]))
		for (j++; j < n && digit(s[j]); j++)
			;
	if (j >= n || !strchr("KMBTkmbt", s[j]))
		return false;
	j++;
	if (j < n && digit(s[j]))
		j++;
	return j == n;
}

static bool size_word(const char *s, size_t n)
{
	static const char *const w[] = {"small", "mini", "medium", "large", "xl", "xxl"};
	for (size_t i = 0; i < WF_ARRAY_LEN(w); i++)
		if (ieq(s, n, w[i]))
			return true;
	return false;
}

/* metadata.py's normalization of a size part, in place in p[0..*n)
 * (room for one byte more): '_' -> '.', bloom's "7b1" -> "7.1b", the
 * suffix after a digit upper-cased. */
static void normalize(char *p, size_t *n)
{
	for (size_t i = 0; i < *n; i++)
		if (p[i] == '_')
			p[i] = '.';
	if (*n >= 2 && digit(p[*n - 1])) {
		char d = p[*n - 1], s = p[*n - 2];
		p[*n - 2] = '.', p[*n - 1] = d, p[*n] = s;
		(*n)++;
	}
	if (*n > 1 && digit(p[*n - 2]) && strchr("kmbt", p[*n - 1]) && p[*n - 1])
		p[*n - 1] = (char)(p[*n - 1] & ~0x20);
}

/* Whether p[0..n) (normalized) is a number of parameters too far from
 * total to be the model's size: float(p[:-1]) * 1000^k, dropped when
 * |label - total| > 7 * total // 8.  float() fails (the part is kept) on
 * "8x7", "A3", "1.5.1" and words. */
static bool context_length(char *p, size_t n, uint64_t total)
{
	if (total == 0 || n < 2)
		return false;
	size_t i = 0;
	while (i < n - 1 && digit(p[i]))
		i++;
	if (i == 0)
		return false;
	if (i < n - 1 && p[i] == '.') {
		size_t f = ++i;
		while (i < n - 1 && digit(p[i]))
			i++;
		if (i == f)
			return false;
	}
	if (i != n - 1)
		return false;
	const char *at = strchr(" KMBT", p[n - 1]);
	if (!at || !p[n - 1])
		return false;
	static const double scale[] = {1.0, 1e3, 1e6, 1e9, 1e12};
	/* p is NUL-terminated at p[n]: cut the suffix off for strtod, which
	 * rounds correctly as Python's float() does, however many digits */
	char suffix = p[n - 1];
	p[n - 1] = '\0';
	double label = strtod(p, NULL) * scale[at - " KMBT"];
	p[n - 1] = suffix;
	uint64_t lim = total / 8 * 7 + total % 8 * 7 / 8;
	return fabs(label - (double)total) > (double)lim;
}

struct part {
	const char *s;
	size_t n;
};

/* The kept size parts of name[0..n) into lab[] (normalized copies, owned)
 * and their number; marks in *numeric whether one holds a digit. */
static size_t size_parts(const char *name, size_t n, uint64_t total, char **lab, size_t *lab_n, size_t max,
			 bool *numeric)
{
	size_t k = 0, idx = 0;
	*numeric = false;
	for (size_t a = 0; a <= n && k < max;) {
		size_t b = a;
		while (b < n && name[b] != '-')
			b++;
		if (b > a) {
			const char *s = name + a;
			size_t len = b - a;
			bool num = size_numeric(s, len);
			if (idx > 0 && (num || size_word(s, len))) {
				char *p = malloc(len + 2);
				if (!p)
					return k; /* out of memory: the parts found so far */
				memcpy(p, s, len);
				p[len] = p[len + 1] = '\0';
				normalize(p, &len);
				if (context_length(p, len, total)) {
					free(p);
				} else {
					lab[k] = p, lab_n[k++] = len;
					*numeric |= num;
				}
			}
			idx++;
		}
		a = b + 1;
	}
	return k;
}

/* Parts of a name looked at for sizes: more are left out. */
#define MAX_SIZE_PARTS 64

bool wf_card_name_label(const char *id, size_t n, uint64_t total, struct wf_buf *out)
{
	if (memchr(id, ' ', n))
		return false; /* a sentence, not an id */
	const char *slash = memchr(id, '/', n);
	const char *name = slash ? slash + 1 : id;
	size_t len = n - (size_t)(name - id);
	char *lab[MAX_SIZE_PARTS];
	size_t lab_n[MAX_SIZE_PARTS];
	bool numeric;
	size_t k = size_parts(name, len, total, lab, lab_n, MAX_SIZE_PARTS, &numeric);
	size_t put = 0;
	for (size_t i = 0; i < k; i++) {
		bool word = true, dup = false;
		for (size_t j = 0; j < lab_n[i]; j++)
			word &= !digit(lab[i][j]) && lab[i][j] != '.';
		/* word sizes go when a number gives one; each label once */
		for (size_t j = 0; j < i && !dup; j++)
			dup = lab_n[j] == lab_n[i] && memcmp(lab[j], lab[i], lab_n[i]) == 0;
		if (!(numeric && word) && !dup) {
			if (put++)
				wf_buf_putc(out, '-');
			wf_buf_put(out, lab[i], lab_n[i]);
		}
	}
	for (size_t i = 0; i < k; i++)
		free(lab[i]);
	return put > 0;
}

/* ---------------------------------------------------------------- front matter */

/* The length of the line break at p (at most n bytes) as Python's
 * str.splitlines knows them, or 0. */
static size_t line_break(const char *p, size_t n)
{
	unsigned char c = (unsigned char)p[0];
	if (c == '\r')
		return n > 1 && p[1] == '\n' ? 2 : 1;
	if (c == '\n' || c == '\v' || c == '\f' || (c >= 0x1c && c <= 0x1e))
		return 1;
	if (c == 0xc2 && n > 1 && (unsigned char)p[1] == 0x85)
		return 2;
	if (c == 0xe2 && n > 2 && (unsigned char)p[1] == 0x80 && ((unsigned char)p[2] & 0xfe) == 0xa8)
		return 3;
	return 0;
}

/* The next line of text[*at..len): its start and length; false at the end. */
static bool next_line(const char *text, size_t len, size_t *at, struct part *line)
{
	if (*at >= len)
		return false;
	size_t i = *at, br = 0;
	while (i < len && !(br = line_break(text + i, len - i)))
		i++;
	*line = (struct part){text + *at, i - *at};
	*at = i + br;
	return true;
}

static bool blank(char ch)
{
	return ch == ' ' || ch == '\t';
}

static bool is_word(const struct part *v, const char *const *words, size_t nw)
{
	for (size_t i = 0; i < nw; i++)
		if (strlen(words[i]) == v->n && memcmp(v->s, words[i], v->n) == 0)
			return true;
	return false;
}

/* Whether YAML 1.1 (PyYAML's resolver) reads plain scalar v as a number
 * or a date rather than a string (close to its patterns: what either
 * way is no size label). */
static bool yaml_number(const struct part *v)
{
	static const char *const special[] = {".inf", ".Inf", ".INF", "+.inf", "+.Inf", "+.INF", "-.inf",
					      "-.Inf", "-.INF", ".nan", ".NaN", ".NAN"};
	if (is_word(v, special, WF_ARRAY_LEN(special)))
		return true;
	const char *s = v->s;
	size_t n = v->n, i = n && (s[0] == '+' || s[0] == '-') ? 1 : 0;
	if (n >= 6 && digit(s[0]) && digit(s[1]) && digit(s[2]) && digit(s[3]) && s[4] == '-' && digit(s[5]))
		return true; /* a timestamp */
	if (n - i > 2 && s[i] == '0' && (s[i + 1] == 'x' || s[i + 1] == 'b')) {
		const char *ok = s[i + 1] == 'x' ? "0123456789abcdefABCDEF_" : "01_";
		for (i += 2; i < n && s[i] && strchr(ok, s[i]); i++)
			;
		return i == n;
	}
	size_t j = i, dots = 0;
	bool dig = false, colon = false;
	for (; j < n && (digit(s[j]) || s[j] == '_' || s[j] == '.' || s[j] == ':'); j++) {
		dig |= digit(s[j]);
		dots += s[j] == '.';
		colon |= s[j] == ':';
	}
	if (!dig || dots > 1 || !(digit(s[i]) || s[i] == '.'))
		return false;
	if (dots && j + 2 < n && (s[j] == 'e' || s[j] == 'E') && (s[j + 1] == '+' || s[j + 1] == '-'))
		for (j += 2; j < n && digit(s[j]); j++)
			;
	if (j != n)
		return false;
	if (dots || colon)
		return true;
	/* an int: 0, [1-9][0-9_]*, or octal 0[0-7_]+ ("08" is a string) */
	for (j = i + 1; s[i] == '0' && j < n; j++)
		if (s[j] == '8' || s[j] == '9')
			return false;
	return true;
}

/* A plain scalar's type: null, a string, or something else. */
static enum wf_card_val plain_type(const struct part *v)
{
	static const char *const nulls[] = {"", "~", "null", "Null", "NULL"};
	static const char *const bools[] = {"yes", "Yes", "YES", "no", "No", "NO", "true", "True", "TRUE",
					    "false", "False", "FALSE", "on", "On", "ON", "off", "Off", "OFF"};
	if (is_word(v, nulls, WF_ARRAY_LEN(nulls)))
		return WF_CARD_NULL;
	if (is_word(v, bools, WF_ARRAY_LEN(bools)) || yaml_number(v))
		return WF_CARD_OTHER;
	/* "a: b" inside a plain scalar is a YAML error; so is a reserved indicator */
	for (size_t i = 0; i + 1 < v->n; i++)
		if (v->s[i] == ':' && blank(v->s[i + 1]))
			return WF_CARD_OTHER;
	return strchr("|>[]{}&*!%@`,?", v->s[0]) ? WF_CARD_OTHER : WF_CARD_STR;
}

/* Appends code point cp as UTF-8; false for a surrogate or past U+10FFFF
 * (gguf-py could not encode the string). */
static bool put_cp(struct wf_buf *b, uint32_t cp)
{
	if ((cp >= 0xd800 && cp <= 0xdfff) || cp > 0x10ffff)
		return false;
	char u[4];
	size_t n = 0;
	if (cp < 0x80) {
		u[n++] = (char)cp;
	} else if (cp < 0x800) {
		u[n++] = (char)(0xc0 | cp >> 6);
		u[n++] = (char)(0x80 | (cp & 0x3f));
	} else if (cp < 0x10000) {
		u[n++] = (char)(0xe0 | cp >> 12);
		u[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[n++] = (char)(0x80 | (cp & 0x3f));
	} else {
		u[n++] = (char)(0xf0 | cp >> 18);
		u[n++] = (char)(0x80 | (cp >> 12 & 0x3f));
		u[n++] = (char)(0x80 | (cp >> 6 & 0x3f));
		u[n++] = (char)(0x80 | (cp & 0x3f));
	}
	wf_buf_put(b, u, n);
	return true;
}

/* The escape of a double-quoted scalar at s[*i] (past the '\\'). */
static bool dq_escape(const char *s, size_t n, size_t *i, struct wf_buf *out)
{
	static const char from[] = "0abtnvfre \"/\\\tN_LP";
	static const uint32_t to[] = {0, 7, 8, 9, 10, 11, 12, 13, 27, ' ', '"', '/', '\\', 9, 0x85, 0xa0, 0x2028, 0x2029};
	char e = s[(*i)++];
	const char *f = e ? strchr(from, e) : NULL;
	if (f)
		return put_cp(out, to[f - from]);
	size_t digits = e == 'x' ? 2 : e == 'u' ? 4 : e == 'U' ? 8 : 0;
	if (!digits || n - *i < digits)
		return false;
	uint32_t cp = 0;
	for (size_t k = 0; k < digits; k++) {
		char h = s[(*i)++];
		int d = digit(h) ? h - '0' : (h | 0x20) >= 'a' && (h | 0x20) <= 'f' ? (h | 0x20) - 'a' + 10 : -1;
		if (d < 0 || cp > 0x10ffff)
			return false;
		cp = cp << 4 | (uint32_t)d;
	}
	return put_cp(out, cp);
}

/* A quoted scalar at s[0] ('"' or '\''), closed on this line, into out;
 * *end gets the index past the closing quote.  False when it does not
 * close or holds an escape YAML refuses. */
static bool quoted(const char *s, size_t n, size_t *end, struct wf_buf *out)
{
	char q = s[0];
	for (size_t i = 1; i < n;) {
		if (s[i] == q && q == '\'' && i + 1 < n && s[i + 1] == '\'') {
			wf_buf_putc(out, '\'');
			i += 2;
		} else if (s[i] == q) {
			*end = i + 1;
			return true;
		} else if (s[i] == '\\' && q == '"') {
			if (++i >= n || !dq_escape(s, n, &i, out))
				return false;
		} else {
			wf_buf_putc(out, s[i++]);
		}
	}
	return false;
}

static struct part trim(struct part v)
{
	while (v.n && blank(v.s[0]))
		v.s++, v.n--;
	while (v.n && blank(v.s[v.n - 1]))
		v.n--;
	return v;
}

/* The value v (the rest of a key's line after ':') of a top-level key;
 * more: lines below belong to it (indented, or a list). */
static enum wf_card_val value_of(struct part v, bool more, struct wf_buf *val)
{
	v = trim(v);
	if (v.n == 0 || v.s[0] == '#')
		return more ? WF_CARD_OTHER : WF_CARD_NULL;
	if (more)
		return WF_CARD_OTHER; /* a block or multi-line value */
	if (v.s[0] == '"' || v.s[0] == '\'') {
		size_t end = 0;
		if (!quoted(v.s, v.n, &end, val))
			return WF_CARD_OTHER;
		struct part rest = {v.s + end, v.n - end};
		/* after it: nothing, or a comment after a blank */
		bool ok = rest.n == 0 || (blank(rest.s[0]) && (trim(rest).n == 0 || trim(rest).s[0] == '#'));
		return ok ? WF_CARD_STR : WF_CARD_OTHER;
	}
	for (size_t i = 1; i < v.n; i++)
		if (v.s[i] == '#' && blank(v.s[i - 1]))
			v.n = i;
	v = trim(v);
	enum wf_card_val t = plain_type(&v);
	if (t == WF_CARD_STR)
		wf_buf_put(val, v.s, v.n);
	return t;
}

static bool is_marker(const struct part *l)
{
	return l->n == 3 && memcmp(l->s, "---", 3) == 0;
}

/* Whether the lines from text[at] on, up to the closing marker, start
 * with one that belongs to the key above (indented, or a list item),
 * blank lines and comments aside. */
static bool continues(const char *text, size_t len, size_t at)
{
	struct part l;
	while (next_line(text, len, &at, &l) && !is_marker(&l)) {
		struct part t = trim(l);
		if (t.n == 0 || t.s[0] == '#')
			continue;
		return blank(l.s[0]) || (l.s[0] == '-' && (l.n == 1 || blank(l.s[1])));
	}
	return false;
}

/* Whether line l is "KEY: ..." at the top level for key; *v gets what
 * follows the ':'. */
static bool key_line(const struct part *l, const char *key, struct part *v)
{
	if (!l->n || strchr(" \t#-?", l->s[0]))
		return false;
	size_t k = 0;
	struct wf_buf qk = {0};
	struct part name;
	if (l->s[0] == '"' || l->s[0] == '\'') {
		bool ok = quoted(l->s, l->n, &k, &qk);
		name = (struct part){qk.data ? qk.data : "", ok && !qk.oom ? qk.len : (size_t)-1};
		while (k < l->n && blank(l->s[k]))
			k++;
		if (k >= l->n || l->s[k] != ':')
			name.n = (size_t)-1;
	} else {
		while (k < l->n && !(l->s[k] == ':' && (k + 1 == l->n || blank(l->s[k + 1]))))
			k++;
		name = trim((struct part){l->s, k});
	}
	bool hit = k < l->n && (k + 1 == l->n || blank(l->s[k + 1])) && name.n == strlen(key) &&
		   memcmp(name.s, key, name.n) == 0;
	wf_buf_free(&qk);
	*v = hit ? (struct part){l->s + k + 1, l->n - k - 1} : (struct part){NULL, 0};
	return hit;
}

enum wf_card_val wf_card_front(const char *text, size_t len, const char *key, struct wf_buf *val)
{
	/* the converter reads README.md as UTF-8 or fails */
	for (size_t i = 0, k; i < len; i += k)
		if (!(k = wf_utf8_seq((const uint8_t *)text + i, len - i)))
			return WF_CARD_ABSENT;
	size_t at = 0, base = val->len;
	struct part l;
	if (!next_line(text, len, &at, &l) || !is_marker(&l))
		return WF_CARD_ABSENT;
	enum wf_card_val r = WF_CARD_ABSENT;
	while (next_line(text, len, &at, &l) && !is_marker(&l)) {
		struct part v;
		if (!key_line(&l, key, &v))
			continue;
		/* a key given twice: YAML keeps the last */
		val->len = base;
		r = value_of(v, continues(text, len, at), val);
	}
	if (r != WF_CARD_STR)
		val->len = base;
	return r;
}

bool wf_card_size_label(const struct wf_card_in *in, const struct wf_card_count *c, struct wf_buf *out)
{
	static const char *const keys[] = {"size_label", "model_size_label"};
	size_t base = out->len;
	for (size_t i = 0; in->readme && i < WF_ARRAY_LEN(keys); i++) {
		enum wf_card_val v = wf_card_front(in->readme, in->readme_len, keys[i], out);
		/* a label that is empty or no string stops the search: the
		 * converter writes none (or fails) */
		if (v == WF_CARD_STR || v == WF_CARD_OTHER)
			return v == WF_CARD_STR && out->len > base;
	}
	const char *np = in->name_or_path;
	const char *s1 = np ? strchr(np, '/') : NULL;
	if (np && !(s1 && strchr(s1 + 1, '/')) && wf_card_name_label(np, strlen(np), c->total, out))
		return true;
	if (in->dir && wf_card_name_label(in->dir, strlen(in->dir), c->total, out))
		return true;
	if (c->total == 0)
		return false;
	char lab[64];
	wf_card_count_label(c, lab, sizeof lab);
	wf_buf_puts(out, lab);
	return true;
}
