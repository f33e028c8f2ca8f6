/* wf_json_scan.c - the top-level entries of a JSON object (wf_json_scan.h). */
#include "model/wf_json_scan.h"

#include <stdbool.h>

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

int wf_json_next(const uint8_t *s, uint64_t n, uint64_t *pos, struct wf_json_entry *e)
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
	e->val1 = value_end(s, n, i);
	if (e->val1 > n || e->val1 == e->val0) {
		*pos = e->val1 > n ? n : e->val1;
		return -1;
	}
	i = skip_ws(s, n, e->val1);
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
