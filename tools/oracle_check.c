/* oracle_check.c - decode every oracle tensor through the type table and
 * compare bit-for-bit with the expected output.
 *
 * Not built by the Makefile.  Build and run from the top of the tree:
 *
 *   gcc -std=c11 -D_GNU_SOURCE -O2 -Wall -Wextra -Isrc $(pkg-config --cflags libcjson) \
 *       tools/oracle_check.c src/wf_types.c src/wf_decode.c src/wf_iq_tables.c \
 *       $(pkg-config --libs libcjson) -o /tmp/oracle_check
 *   /tmp/oracle_check ../shared/testdata
 *
 * It reads <dir>/ggml-oracle/manifest.json (tensors with expected_f32 set)
 * and <dir>/st-oracle/manifest.json, takes nbytes at file_offset from each
 * model file, and decodes them with the row's decoder (raw rows are compared
 * unchanged).  It prints matched/total per type and exits 1 on any mismatch.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cJSON.h>

#include "wf_types.h"

struct tally {
	int matched, total;
};

static struct tally tallies[2][WF_T_COUNT];  /* [0] GGUF, [1] safetensors */
static int failures;

static unsigned char *slurp(const char *dir, const char *name, size_t *len)
{
	char path[4096];
	FILE *f;
	unsigned char *buf = NULL;
	long n;

	snprintf(path, sizeof path, "%s/%s", dir, name);
	f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "oracle_check: %s: %s\n", path, strerror(errno));
		return NULL;
	}
	if (fseek(f, 0, SEEK_END) == 0 && (n = ftell(f)) >= 0 && fseek(f, 0, SEEK_SET) == 0) {
		buf = malloc((size_t)n + 1);
		if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
			free(buf);
			buf = NULL;
		}
		*len = (size_t)n;
	}
	fclose(f);
	if (!buf)
		fprintf(stderr, "oracle_check: %s: read failed\n", path);
	return buf;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static double jnum(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);

	return cJSON_IsNumber(v) ? v->valuedouble : -1;
}

/* Produces the view bytes of one tensor and compares them to `expected`. */
static void check_one(int fmt, const char *dir, const char *file, const char *tname,
		      int id, size_t off, size_t nbytes, const char *expected)
{
	const struct wf_type *t = wf_type_get(id);
	unsigned char *model = NULL, *want = NULL, *got = NULL;
	size_t mlen = 0, wlen = 0, glen = 0, nblocks;

	if (!t) {
		fprintf(stderr, "FAIL %s:%s: no row for type id %d\n", file, tname, id);
		failures++;
		return;
	}
	tallies[fmt][id].total++;
	if (t->kind == WF_VIEW_NONE || nbytes % t->bytes) {
		fprintf(stderr, "FAIL %s:%s: %s cannot be viewed (%zu bytes)\n", file, tname,
			t->name, nbytes);
		goto fail;
	}
	model = slurp(dir, file, &mlen);
	want = slurp(dir, expected, &wlen);
	if (!model || !want || off > mlen || nbytes > mlen - off)
		goto fail;
	nblocks = nbytes / t->bytes;
	glen = nblocks * t->blck * t->out_size;
	got = malloc(glen ? glen : 1);
	if (!got)
		goto fail;
	if (t->kind == WF_VIEW_RAW)
		memcpy(got, model + off, nbytes);
	else
		t->decode(model + off, (float *)(void *)got, nblocks);
	if (glen != wlen || memcmp(got, want, glen) != 0) {
		size_t i = 0;

		while (i < glen && i < wlen && got[i] == want[i])
			i++;
		fprintf(stderr, "FAIL %s:%s (%s): %zu vs %zu bytes, first difference at byte %zu\n",
			file, tname, t->name, glen, wlen, i);
		goto fail;
	}
	tallies[fmt][id].matched++;
	goto out;
fail:
	failures++;
out:
	free(model);
	free(want);
	free(got);
}

static cJSON *load_manifest(const char *dir)
{
	size_t len;
	unsigned char *text = slurp(dir, "manifest.json", &len);
	cJSON *root;

	if (!text)
		return NULL;
	root = cJSON_ParseWithLength((const char *)text, len);
	free(text);
	if (!root)
		fprintf(stderr, "oracle_check: %s/manifest.json: bad JSON\n", dir);
	return root;
}

int main(int argc, char **argv)
{
	const char *base = argc > 1 ? argv[1] : "../shared/testdata";
	char gdir[4096], sdir[4096];
	cJSON *g, *s;
	const cJSON *t;
	int skipped = 0;

	snprintf(gdir, sizeof gdir, "%s/ggml-oracle", base);
	snprintf(sdir, sizeof sdir, "%s/st-oracle", base);
	g = load_manifest(gdir);
	s = load_manifest(sdir);
	if (!g || !s)
		return 2;

	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(g, "tensors")) {
		const char *exp = jstr(t, "expected_f32");
		int id = wf_type_from_gguf((uint32_t)jnum(t, "type_id"));

		if (!exp) {
			skipped++;  /* I8..I64, F64, Q8_1: ggml has no float output */
			continue;
		}
		check_one(0, gdir, jstr(t, "file"), jstr(t, "name"), id,
			  (size_t)jnum(t, "file_offset"), (size_t)jnum(t, "nbytes"), exp);
	}
	cJSON_ArrayForEach(t, cJSON_GetObjectItemCaseSensitive(s, "tensors")) {
		const char *dt = jstr(t, "dtype");
		int id = dt ? wf_type_from_st(dt, strlen(dt)) : -1;

		check_one(1, sdir, jstr(t, "file"), jstr(t, "name"), id,
			  (size_t)jnum(t, "file_offset"), (size_t)jnum(t, "nbytes"),
			  jstr(t, "expected"));
	}

	printf("%-8s %-12s %s\n", "format", "type", "matched/total");
	for (int fmt = 0; fmt < 2; fmt++)
		for (int id = 0; id < WF_T_COUNT; id++)
			if (tallies[fmt][id].total)
				printf("%-8s %-12s %d/%d\n", fmt ? "st" : "gguf",
				       wf_type_get(id)->name, tallies[fmt][id].matched,
				       tallies[fmt][id].total);
	printf("ggml tensors without expected output (skipped): %d\n", skipped);
	printf("%s: %d failure(s)\n", failures ? "FAILED" : "OK", failures);
	cJSON_Delete(g);
	cJSON_Delete(s);
	return failures ? 1 : 0;
}
