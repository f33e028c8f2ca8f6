/* json_bytes.h - reading weightfs's JSON files back with cJSON in tests
 * (header-only; used by the Check suites and the fuzz targets).
 *
 * weightfs writes each byte of a name, key or string value that is not
 * valid UTF-8 as the escape \udcXX (a lone low surrogate, Python's
 * surrogateescape).  cJSON refuses lone surrogates, as strict parsers may,
 * but keeps raw bytes inside strings as they are.  json_bytes_parse()
 * therefore turns every \udcXX back into the byte 0xXX before handing the
 * text to cJSON, so the tree it returns holds the original byte strings:
 * the tests can check both that the text is valid JSON and that the
 * escape round-trips.
 */
#ifndef JSON_BYTES_H
#define JSON_BYTES_H

#include <cjson/cJSON.h>
#include <stdlib.h>
#include <string.h>

static inline int json_bytes_hex(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

/* Parses JSON text s[0..n) written by weightfs, undoing its \udcXX escapes
 * (XX in 80..ff).  Returns NULL when the text is not valid JSON, or holds
 * a surrogate escape weightfs never writes (a high surrogate, or a low one
 * below U+DC80); the caller owns the result (cJSON_Delete). */
static inline cJSON *json_bytes_parse(const char *s, size_t n)
{
	char *t = malloc(n + 1);
	if (!t)
		return NULL;
	size_t o = 0;
	for (size_t i = 0; i < n;) {
		if (s[i] != '\\' || i + 1 >= n) {
			t[o++] = s[i++];
			continue;
		}
		/* a backslash only occurs inside strings, starting an escape */
		if (s[i + 1] != 'u' || i + 6 > n) {
			t[o++] = s[i++];
			t[o++] = s[i++];
			continue;
		}
		int cp = 0;
		for (int k = 2; k < 6; k++) {
			int h = json_bytes_hex(s[i + k]);
			cp = h < 0 || cp < 0 ? -1 : cp << 4 | h;
		}
		if (cp >= 0xD800 && cp <= 0xDFFF) {
			if (cp < 0xDC80 || cp > 0xDCFF) {
				free(t);
				return NULL;
			}
			t[o++] = (char)(cp - 0xDC00);
		} else {
			memcpy(t + o, s + i, 6);
			o += 6;
		}
		i += 6;
	}
	cJSON *j = cJSON_ParseWithLength(t, o);
	free(t);
	return j;
}

#endif
