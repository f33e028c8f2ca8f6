/* check_tree.c - unit tests for the mount's namespace (wf_tree.c): the
 * naming rules of wf_tree.h, checked both case by case and as invariants
 * over many generated names.
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fixture.h"
#include "json_bytes.h"
#include "tj_text.h"
#include "base/wf_buf.h"
#include "base/wf_hash.h"
#include "model/wf_model.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"

/* ---- models from names ---- */

struct name {
	const char *s;
	size_t n;
};

#define NM(lit) {lit, sizeof(lit) - 1}

static struct wf_model *model_of(const struct name *names, size_t n)
{
	struct wf_model *m = fixture_model(n);
	for (size_t i = 0; i < n; i++)
		fixture_tensor(m, i, names[i].s, names[i].n, WF_T_F32, 1, (const uint64_t[]){1}, 4 * i);
	return m;
}

static struct wf_tree *tree_of(const struct wf_model *m)
{
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN] = "";
	enum wf_err rc = wf_tree_build(&t, m, err);
	ck_assert_msg(rc == WF_OK, "wf_tree_build: %s", err);
	ck_assert_ptr_nonnull(t);
	return t;
}

/* The path of node i as a fresh NUL-terminated string. */
static char *path_of(const struct wf_tree *t, uint32_t i)
{
	struct wf_buf b = {0};
	wf_tree_path(t, i, &b);
	ck_assert(wf_buf_finish(&b));
	return b.data;
}

static char *tensor_path(const struct wf_tree *t, size_t i)
{
	return path_of(t, t->tensor_node[i]);
}

/* Walks a path from the root with wf_tree_lookup. */
static uint32_t walk(const struct wf_tree *t, const char *path)
{
	uint32_t n = 0;
	if (*path == '\0')
		return 0;
	for (;;) {
		const char *slash = strchr(path, '/');
		size_t len = slash ? (size_t)(slash - path) : strlen(path);
		n = wf_tree_lookup(t, n, path, len);
		if (n == WF_NO_NODE || !slash)
			return n;
		path = slash + 1;
	}
}

static bool has_suffix(const char *s, size_t n, const char *suf)
{
	size_t k = strlen(suf);
	return n >= k && memcmp(s + n - k, suf, k) == 0;
}

/* Everything wf_tree.h promises, for any model. */
static void check_invariants(const struct wf_tree *t, const struct wf_model *m)
{
	ck_assert_uint_ge(t->n_nodes, 3);
	const struct wf_node *root = &t->nodes[0];
	ck_assert_int_eq(root->kind, WF_NODE_DIR);
	ck_assert_uint_eq(root->name_len, 0);
	ck_assert_uint_eq(root->parent, 0);
	ck_assert_uint_eq(wf_tree_lookup(t, 0, "metadata.json", 13), 1);
	ck_assert_uint_eq(wf_tree_lookup(t, 0, "tensors.json", 12), 2);
	ck_assert_int_eq(t->nodes[1].kind, WF_NODE_BLOB);
	ck_assert_int_eq(t->nodes[2].kind, WF_NODE_TJSON);
	ck_assert_ptr_eq(t->nodes[1].blob, m->metadata_json);
	ck_assert_uint_eq(wf_tree_lookup(t, 1, "x", 1), WF_NO_NODE);       /* not a directory */
	ck_assert_uint_eq(wf_tree_lookup(t, t->n_nodes, "x", 1), WF_NO_NODE); /* no such node */

	uint32_t *kids = calloc(t->n_nodes, sizeof *kids);
	uint32_t *subdirs = calloc(t->n_nodes, sizeof *subdirs);
	uint8_t *seen = calloc(m->n_tensors + 1, 1);
	ck_assert(kids && subdirs && seen);
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		const struct wf_node *nd = &t->nodes[i];
		ck_assert_uint_lt(nd->parent, t->n_nodes);
		ck_assert_int_eq(t->nodes[nd->parent].kind, WF_NODE_DIR);
		kids[nd->parent]++;
		subdirs[nd->parent] += nd->kind == WF_NODE_DIR;
		/* a usable file name */
		ck_assert_uint_ge(nd->name_len, 1);
		ck_assert_uint_le(nd->name_len, 255);
		ck_assert_uint_eq(strlen(nd->name), nd->name_len); /* no NUL inside */
		ck_assert_ptr_null(memchr(nd->name, '/', nd->name_len));
		ck_assert_str_ne(nd->name, ".");
		ck_assert_str_ne(nd->name, "..");
		/* plain loops: every ck_assert costs Check a write */
		for (uint32_t k = 0; k < nd->name_len; k++)
			if ((uint8_t)nd->name[k] < 0x20 || nd->name[k] == 0x7F)
				ck_abort_msg("control byte in %s", nd->name);
		for (size_t k = 0, l; k < nd->name_len; k += l)
			if ((l = wf_utf8_seq((const uint8_t *)nd->name + k, nd->name_len - k)) == 0)
				ck_abort_msg("invalid UTF-8 in %s", nd->name);
		ck_assert_uint_eq(wf_tree_lookup(t, nd->parent, nd->name, nd->name_len), i);
		/* a '.' only in our own names */
		const char *dot = memchr(nd->name, '.', nd->name_len);
		uint32_t meta = wf_tree_lookup(t, 0, "metadata.d", 10); /* when a tensor directory took "metadata" */
		if (meta == WF_NO_NODE)
			meta = wf_tree_lookup(t, 0, "metadata", 8);
		if (i == meta || (nd->parent == meta && nd->kind == WF_NODE_BLOB)) {
			/* the metadata folder: one file per key, dots kept */
			ck_assert_uint_ne(meta, WF_NO_NODE);
		} else if (nd->kind == WF_NODE_DIR) {
			ck_assert_msg(dot == NULL, "directory %s has a '.'", nd->name);
		} else if (nd->kind == WF_NODE_TENSOR) {
			ck_assert_uint_lt(nd->tensor, m->n_tensors);
			ck_assert_uint_eq(t->tensor_node[nd->tensor], i);
			ck_assert(!seen[nd->tensor]);
			seen[nd->tensor] = 1;
			if (dot) {
				ck_assert_msg(strstr(nd->name, ".tensor") == dot, "tensor file %s", nd->name);
				ck_assert_ptr_null(memchr(dot + 1, '.', nd->name_len - (size_t)(dot + 1 - nd->name)));
				/* a ".tensor" file sits beside the directory of the same stem */
				uint32_t d = wf_tree_lookup(t, nd->parent, nd->name, (size_t)(dot - nd->name));
				ck_assert_uint_ne(d, WF_NO_NODE);
				ck_assert_int_eq(t->nodes[d].kind, WF_NODE_DIR);
			}
		} else if (nd->kind == WF_NODE_MODEL_ST) {
			ck_assert_uint_eq(nd->parent, 0);
			ck_assert_str_eq(nd->name, "model.safetensors");
		} else if (nd->kind == WF_NODE_MODEL_GGUF) {
			ck_assert_uint_eq(nd->parent, 0);
			ck_assert_str_eq(nd->name, "model.gguf");
		} else {
			ck_assert_uint_eq(nd->parent, 0);
			ck_assert_msg(i == 1 || i == 2 || strcmp(nd->name, "parts.json") == 0 ||
				      strcmp(nd->name, "WEIGHTFS.txt") == 0, "blob %s", nd->name);
		}
		/* the path walks back to the node */
		char *p = path_of(t, i);
		ck_assert_msg(walk(t, p) == i, "path %s does not walk back to node %u", p, i);
		ck_assert(p[0] != '/' && !has_suffix(p, strlen(p), "/"));
		ck_assert_ptr_null(strstr(p, "//"));
		/* openable: few components, far below PATH_MAX (docs/naming.md rule 8) */
		size_t depth = 1;
		for (const char *q = p; (q = strchr(q, '/')); q++)
			depth++;
		ck_assert_uint_le(depth, t->max_dirs + 1);
		ck_assert_uint_le(strlen(p), WF_TREE_DIR_BYTES + 255);
		free(p);
	}
	for (size_t i = 0; i < m->n_tensors; i++)
		ck_assert_msg(seen[i], "tensor %zu has no node", i);
	/* children: all of them, sorted and unique, directories counted */
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		const struct wf_node *nd = &t->nodes[i];
		if (nd->kind != WF_NODE_DIR)
			continue; /* n_children shares its place with tensor and blob_len */
		ck_assert_uint_eq(nd->n_children, kids[i]);
		ck_assert_uint_eq(nd->n_subdirs, subdirs[i]);
		for (uint32_t k = 0; k < nd->n_children; k++) {
			ck_assert_uint_eq(t->nodes[nd->children[k]].parent, i);
			if (k)
				ck_assert_int_lt(strcmp(t->nodes[nd->children[k - 1]].name,
							t->nodes[nd->children[k]].name), 0);
		}
	}
	/* the root is in the table as its own child "" (no FUSE lookup has
	 * an empty name); nothing else answers to "" */
	uint32_t r = wf_tree_lookup(t, 0, "", 0);
	ck_assert(r == 0 || r == WF_NO_NODE);
	char *rp = path_of(t, 0);
	ck_assert_str_eq(rp, "");
	free(rp);

	/* tensors.json is JSON and names each tensor's path */
	size_t tj_len;
	char *tj = tj_text(t, &tj_len);
	cJSON *j = json_bytes_parse(tj, tj_len);
	free(tj);
	ck_assert_msg(j != NULL, "tensors.json is not JSON");
	const cJSON *ts = cJSON_GetObjectItemCaseSensitive(j, "tensors");
	ck_assert_int_eq(cJSON_GetArraySize(ts), (int)m->n_tensors);
	size_t i = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, ts) {
		const cJSON *path = cJSON_GetObjectItemCaseSensitive(e, "path");
		ck_assert(cJSON_IsString(path));
		/* the name round-trips through the \udcXX escapes (cJSON's C
		 * strings end at a NUL, so compare up to the first) */
		const cJSON *nm = cJSON_GetObjectItemCaseSensitive(e, "name");
		ck_assert(cJSON_IsString(nm));
		const struct wf_tensor *tn = &m->tensors[i];
		size_t nl = strlen(nm->valuestring);
		ck_assert_msg(nl <= tn->name_len && memcmp(nm->valuestring, tn->name, nl) == 0 &&
				      (nl == tn->name_len || tn->name[nl] == '\0'),
			      "tensor %zu: name does not round-trip through tensors.json", i);
		char *p = tensor_path(t, i);
		ck_assert_str_eq(path->valuestring, p);
		free(p);
		i++;
	}
	cJSON_Delete(j);
	free(kids);
	free(subdirs);
	free(seen);
}

/* ---- wf_escape_component ---- */

struct esc_case {
	struct name in;
	const char *out;
};

static const struct esc_case esc_cases[] = {
	{NM("abc"), "abc"},
	{NM(""), "%"},
	{NM("."), "%2E"},
	{NM(".."), "%2E%2E"},
	{NM("..."), "%2E%2E%2E"},
	{NM("a.b"), "a%2Eb"},
	{NM("100%"), "100%25"},
	{NM("%41"), "%2541"},
	{NM("a/b"), "a%2Fb"},
	{NM("tab\there"), "tab%09here"},
	{NM("nul\0x"), "nul%00x"},
	{NM("\x1f\x7f"), "%1F%7F"},
	{NM(" ~-_+=!'\"\\"), " ~-_+=!'\"\\"},
	{NM("caf\xc3\xa9"), "caf\xc3\xa9"},
	{NM("\xf0\x9f\x98\x80"), "\xf0\x9f\x98\x80"},
	{NM("\xff"), "%FF"},
	{NM("a\xc3"), "a%C3"},
	{NM("\xc3(b"), "%C3(b"},
	{NM("\xc0\xaf"), "%C0%AF"},
	{NM("\xed\xa0\x80"), "%ED%A0%80"},
	{NM("\xf4\x90\x80\x80"), "%F4%90%80%80"},
	{NM("\xe2\x82"), "%E2%82"},
};

START_TEST(test_escape)
{
	const struct esc_case *c = &esc_cases[_i];
	struct wf_buf b = {0};
	wf_buf_puts(&b, "pre"); /* appends, leaving what was there */
	wf_escape_component((const uint8_t *)c->in.s, c->in.n, &b);
	ck_assert(wf_buf_finish(&b));
	ck_assert_str_eq(b.data + 3, c->out);
	ck_assert_mem_eq(b.data, "pre", 3);
	wf_buf_free(&b);
}
END_TEST

/* Long components: cut on a character and escape boundary, then "%~" and
 * 16 hex digits; never more than 255 bytes. */
START_TEST(test_escape_long)
{
	char in[1024];
	struct wf_buf b = {0};
	for (size_t n = 250; n <= 300; n++) {
		memset(in, 'a', n);
		b.len = 0;
		wf_escape_component((const uint8_t *)in, n, &b);
		if (n <= 255) {
			ck_assert_uint_eq(b.len, n);
			continue;
		}
		ck_assert_uint_eq(b.len, 218);
		ck_assert_mem_eq(b.data + 200, "%~", 2);
		for (int k = 202; k < 218; k++)
			ck_assert(strchr("0123456789abcdef", b.data[k]) != NULL);
	}
	/* 255 after escaping stays; 256 after escaping is hashed */
	memset(in, 'a', 252);
	in[252] = '%';
	b.len = 0;
	wf_escape_component((const uint8_t *)in, 253, &b);
	ck_assert_uint_eq(b.len, 255);
	b.len = 0;
	in[253] = 'a';
	wf_escape_component((const uint8_t *)in, 254, &b);
	ck_assert_uint_lt(b.len, 256);
	ck_assert_ptr_nonnull(strstr(b.data, "%~"));

	/* two-byte characters: the prefix keeps whole ones */
	for (size_t lead = 0; lead < 4; lead++) {
		size_t n = 0;
		for (; n < lead; n++)
			in[n] = 'x';
		for (int k = 0; k < 150; k++) {
			in[n++] = (char)0xC3;
			in[n++] = (char)0xA9;
		}
		b.len = 0;
		wf_escape_component((const uint8_t *)in, n, &b);
		ck_assert_uint_le(b.len, 255);
		const char *h = strstr(b.data, "%~");
		ck_assert_ptr_nonnull(h);
		size_t keep = (size_t)(h - b.data);
		ck_assert_uint_ge(keep, 190);
		for (size_t k = 0; k < keep;) {
			size_t l = wf_utf8_seq((const uint8_t *)b.data + k, keep - k);
			ck_assert_msg(l != 0, "prefix cuts a character at %zu (lead %zu)", k, lead);
			k += l;
		}
	}
	/* escapes: the prefix keeps whole %XX */
	for (size_t lead = 0; lead < 3; lead++) {
		size_t n = 0;
		for (; n < lead; n++)
			in[n] = 'y';
		for (int k = 0; k < 120; k++)
			in[n++] = (k % 2) ? '%' : (char)0xFF;
		b.len = 0;
		wf_escape_component((const uint8_t *)in, n, &b);
		ck_assert_uint_le(b.len, 255);
		const char *h = strstr(b.data, "%~");
		ck_assert_ptr_nonnull(h);
		size_t keep = (size_t)(h - b.data);
		ck_assert_uint_eq((keep - lead) % 3, 0);
		for (size_t k = lead; k < keep; k += 3)
			ck_assert(b.data[k] == '%');
	}
	/* the hash covers the whole component, not the kept prefix */
	memset(in, 'q', 600);
	struct wf_buf c = {0};
	b.len = 0;
	wf_escape_component((const uint8_t *)in, 600, &b);
	in[599] = 'r';
	wf_escape_component((const uint8_t *)in, 600, &c);
	ck_assert(wf_buf_finish(&b) && wf_buf_finish(&c));
	ck_assert_str_ne(b.data, c.data);
	ck_assert_uint_eq(b.len, c.len);
	wf_buf_free(&b);
	wf_buf_free(&c);
}
END_TEST

/* ---- names to paths ---- */

struct path_case {
	struct name names[6];
	const char *paths[6];
	size_t n;
};

static const struct path_case path_cases[] = {
	{{NM("a.b.c")}, {"a/b/c"}, 1},
	{{NM("a..b"), NM(".x"), NM("x."), NM(""), NM("."), NM("..")},
	 {"a/%/b", "%/x", "x/%", "%.tensor", "%/%.tensor", "%/%/%"}, 6},
	{{NM("a.b"), NM("a.b.c")}, {"a/b.tensor", "a/b/c"}, 2},
	{{NM("a.b.c"), NM("a.b")}, {"a/b/c", "a/b.tensor"}, 2},
	{{NM("a"), NM("a.b.c"), NM("a.b")}, {"a.tensor", "a/b/c", "a/b.tensor"}, 3},
	{{NM("metadata.json"), NM("tensors.json"), NM("metadata")},
	 {"metadata/json", "tensors/json", "metadata.tensor"}, 3},
	{{NM("x.tensor"), NM("x")}, {"x/tensor", "x.tensor"}, 2},
	{{NM("100%.a/b"), NM("t\tab.nul\0"), NM("\xff.caf\xc3\xa9")},
	 {"100%25/a%2Fb", "t%09ab/nul%00", "%FF/caf\xc3\xa9"}, 3},
	{{NM("x.%2E"), NM("x.."), NM("x.%")}, {"x/%252E", "x/%/%", "x/%25"}, 3},
	{{NM("blk.0.attn_q.weight"), NM("blk.0.attn_q.bias"), NM("blk.10.ffn.weight")},
	 {"blk/0/attn_q/weight", "blk/0/attn_q/bias", "blk/10/ffn/weight"}, 3},
	{{NM("a~2"), NM("a")}, {"a~2", "a"}, 2},
};

START_TEST(test_paths)
{
	const struct path_case *c = &path_cases[_i];
	struct wf_model *m = model_of(c->names, c->n);
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	for (size_t i = 0; i < c->n; i++) {
		char *p = tensor_path(t, i);
		ck_assert_str_eq(p, c->paths[i]);
		ck_assert_uint_eq(walk(t, c->paths[i]), t->tensor_node[i]);
		free(p);
	}
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

START_TEST(test_empty_model)
{
	struct wf_model *m = model_of(NULL, 0);
	struct wf_tree *t = tree_of(m);
	/* metadata.json, tensors.json, WEIGHTFS.txt, model.safetensors, model.gguf
	 * (a safetensors model of no architecture: its tensors as stored), metadata/ */
	ck_assert_uint_eq(t->n_nodes, 7);
	ck_assert_uint_eq(t->nodes[0].n_children, 6);
	ck_assert_uint_eq(t->nodes[0].n_subdirs, 1);
	check_invariants(t, m);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Long components in a tree: a long name next to a longer one with the
 * same prefix, and a long one that is also a directory. */
START_TEST(test_long_names)
{
	static char a[300], b[300], c[310];
	memset(a, 'L', sizeof a);
	memcpy(b, a, sizeof b);
	b[299] = 'M';
	memcpy(c, a, 300);
	memcpy(c + 300, ".child.xx", 9);
	struct name names[] = {{a, 300}, {b, 300}, {c, 309}, {a, 255}, {a, 256}};
	struct wf_model *m = model_of(names, WF_ARRAY_LEN(names));
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	char *pa = tensor_path(t, 0), *pb = tensor_path(t, 1), *pc = tensor_path(t, 2);
	char *p255 = tensor_path(t, 3), *p256 = tensor_path(t, 4);
	ck_assert_str_ne(pa, pb);
	ck_assert(has_suffix(pa, strlen(pa), ".tensor")); /* a is also c's directory */
	ck_assert_uint_eq(strncmp(pc, pa, strlen(pa) - 7), 0);
	ck_assert(has_suffix(pc, strlen(pc), "/child/xx"));
	ck_assert_uint_eq(strlen(p255), 255);
	ck_assert_ptr_nonnull(strstr(p256, "%~"));
	free(pa);
	free(pb);
	free(pc);
	free(p255);
	free(p256);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* ---- deep and long names (docs/naming.md rule 8) ---- */

static uint64_t fnv(const char *s, size_t n)
{
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ (uint8_t)s[i]) * 1099511628211ULL;
	return h;
}

/* A name of dots only used to be a directory chain as deep as the name is
 * long, and its path longer than PATH_MAX: now 31 directories "%", then
 * the rest of the dots as one shortened file name. */
START_TEST(test_dot_names)
{
	static char dots[100000];
	memset(dots, '.', sizeof dots);
	struct name names[] = {{dots, sizeof dots}, {dots, 31}, {dots, 32}, {dots, 40}};
	struct wf_model *m = model_of(names, WF_ARRAY_LEN(names));
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	ck_assert_uint_eq(t->max_dirs, WF_TREE_MAX_DIRS);
	/* 31 '%' directories, shared by all four */
	ck_assert_uint_le(t->n_nodes, 6 + 31 + 4); /* 6: root and its own entries */
	char want[1024], *p = tensor_path(t, 0);
	size_t w = 0;
	for (int k = 0; k < 31; k++)
		w += (size_t)sprintf(want + w, "%%/");
	size_t tail = sizeof dots - 31;
	for (int k = 0; k < 66; k++) /* 198 bytes: the 200 kept, cut back to a whole escape */
		w += (size_t)sprintf(want + w, "%%2E");
	sprintf(want + w, "%%~%016llx", (unsigned long long)fnv(dots, tail));
	ck_assert_str_eq(p, want);
	free(p);
	/* 31 dots: 32 empty components, exactly the limit: no folding */
	p = tensor_path(t, 1);
	want[62] = '\0';
	ck_assert_str_eq(p, strcat(want, "%"));
	free(p);
	/* 32 dots: the last two empty components fold into "%2E" */
	p = tensor_path(t, 2);
	want[62] = '\0';
	ck_assert_str_eq(p, strcat(want, "%2E"));
	free(p);
	p = tensor_path(t, 3);
	want[62] = '\0';
	strcat(want, "%2E%2E%2E%2E%2E%2E%2E%2E%2E");
	ck_assert_str_eq(p, want);
	free(p);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* The directories' bytes: three 250-byte components (753 bytes with their
 * '/') stay, a fourth would pass 768, so it and the rest fold. */
START_TEST(test_dir_bytes)
{
	static char a[1100], b[80];
	size_t n = 0;
	for (int k = 0; k < 4; k++) {
		memset(a + n, 'c' + k, 250);
		n += 250;
		a[n++] = '.';
	}
	memcpy(a + n, "leaf", 4);
	n += 4;
	/* and the 31-directory limit with one-byte components */
	size_t m2 = 0;
	for (int k = 0; k < 33; k++, m2 += 2)
		memcpy(b + m2, "x.", 2);
	m2--; /* 33 components "x" */
	struct name names[] = {{a, n}, {a, 753 + 250}, {b, m2}, {b, m2 - 2}};
	struct wf_model *m = model_of(names, WF_ARRAY_LEN(names));
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	char *p = tensor_path(t, 0);
	ck_assert_uint_eq(strspn(p, "c"), 250);
	ck_assert_uint_eq(strspn(p + 251, "d"), 250);
	ck_assert_uint_eq(strspn(p + 502, "e"), 250);
	ck_assert_int_eq(p[753], 'f');
	ck_assert_ptr_null(strchr(p + 753, '/'));
	/* "fff...f.leaf" is 250 + 3 + 4 bytes escaped: shortened, hash of the raw tail */
	char h[32];
	sprintf(h, "%%~%016llx", (unsigned long long)fnv(a + 753, n - 753));
	ck_assert_str_eq(p + 753 + 200, h);
	free(p);
	/* without ".leaf" the last component is 250 bytes, a plain file name:
	 * it is a file here, and a directory of name 0 only if kept as one */
	p = tensor_path(t, 1);
	ck_assert_uint_eq(strlen(p), 753 + 250);
	free(p);
	/* 33 components: 31 directories, then "x.x" as "x%2Ex" */
	p = tensor_path(t, 2);
	ck_assert_uint_eq(strlen(p), 31 * 2 + 5);
	ck_assert_str_eq(p + 62, "x%2Ex");
	free(p);
	/* 32 components: 31 directories and the file "x", which is also a
	 * directory of nothing (name 2 folded it), so no ".tensor" */
	p = tensor_path(t, 3);
	ck_assert_str_eq(p + 62, "x");
	free(p);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Too many directories for the header: the limit drops for the whole
 * model.  3000 tensors of 41 components make 3000 directories at each of
 * depths 1..31 (93,000); with a tiny header the budget is the floor,
 * 65,536, and 21 levels (63,000) fit. */
START_TEST(test_dir_budget)
{
	enum { N = 3000 };
	struct name *names = calloc(N, sizeof *names);
	ck_assert_ptr_nonnull(names);
	for (size_t i = 0; i < N; i++) {
		char *s = malloc(64);
		ck_assert_ptr_nonnull(s);
		int l = sprintf(s, "k%zu", i);
		memset(s + l, '.', 40);
		names[i].s = s;
		names[i].n = (size_t)l + 40;
	}
	struct wf_model *m = model_of(names, N);
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	ck_assert_uint_eq(t->max_dirs, 21);
	ck_assert_uint_eq(t->n_nodes, 7 + 21 * N + N); /* the root, its five files (model.gguf too) and metadata/ */
	char *p = tensor_path(t, 7);
	ck_assert_str_eq(p, "k7/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/%/"
			    "%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E%2E");
	free(p);
	wf_tree_free(t);
	/* a header that pays for them: the full limit */
	m->data_offset = 93000ULL * WF_TREE_DIR_HEADER_DIV;
	t = tree_of(m);
	ck_assert_uint_eq(t->max_dirs, WF_TREE_MAX_DIRS);
	check_invariants(t, m);
	wf_tree_free(t);
	wf_model_free(m);
	for (size_t i = 0; i < N; i++)
		free((char *)names[i].s);
	free(names);
}
END_TEST

/* ---- generated names: invariants and determinism ---- */

static uint64_t rng_state;

static uint32_t rnd(uint32_t n)
{
	rng_state = rng_state * 6364136223846793005ULL + 1442695040888963407ULL;
	return (uint32_t)(rng_state >> 33) % n;
}

static const struct name pieces[] = {
	NM("a"), NM("b"), NM("blk"), NM("0"), NM("."), NM("."), NM("."), NM("%"), NM("/"), NM("\0"),
	NM("\xff"), NM("\xc3\xa9"), NM("\xc3"), NM("~2"), NM("tensor"), NM("json"), NM("metadata"),
	NM("\n"), NM(" "), NM("\x7f"), NM("%2E"), NM("\xed\xa0\x80"),
};

static int name_cmp(const void *x, const void *y)
{
	const struct name *a = x, *b = y;
	size_t n = a->n < b->n ? a->n : b->n;
	int c = memcmp(a->s, b->s, n);
	return c ? c : (a->n > b->n) - (a->n < b->n);
}

/* Up to n distinct random names; returns how many (sorted, unique). */
static size_t random_names(struct name *out, size_t n, uint64_t seed)
{
	rng_state = seed;
	for (size_t i = 0; i < n; i++) {
		char *s = malloc(1024);
		size_t len = 0;
		size_t k = 1 + rnd(8);
		ck_assert_ptr_nonnull(s);
		for (size_t j = 0; j < k; j++) {
			if (rnd(40) == 0) {
				size_t run = 240 + rnd(40);
				memset(s + len, 'z', run);
				len += run;
				continue;
			}
			const struct name *p = &pieces[rnd(WF_ARRAY_LEN(pieces))];
			memcpy(s + len, p->s, p->n);
			len += p->n;
		}
		out[i].s = s;
		out[i].n = len;
	}
	qsort(out, n, sizeof *out, name_cmp);
	size_t u = 0;
	for (size_t i = 0; i < n; i++) {
		if (u && name_cmp(&out[u - 1], &out[i]) == 0) {
			free((char *)out[i].s);
			continue;
		}
		out[u++] = out[i];
	}
	return u;
}

#define N_RANDOM 400

START_TEST(test_random_names)
{
	struct name names[N_RANDOM], perm[N_RANDOM];
	size_t n = random_names(names, N_RANDOM, 0x5eed0000u + (uint64_t)_i);
	struct wf_model *m = model_of(names, n);
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);

	/* all tensor paths unique */
	char **paths = calloc(n, sizeof *paths);
	ck_assert_ptr_nonnull(paths);
	for (size_t i = 0; i < n; i++)
		paths[i] = tensor_path(t, i);
	for (size_t i = 0; i < n; i++)
		for (size_t j = i + 1; j < n; j++)
			ck_assert_str_ne(paths[i], paths[j]);

	/* the same model again: the same tree */
	struct wf_tree *t2 = tree_of(m);
	ck_assert_uint_eq(t2->n_nodes, t->n_nodes);
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		ck_assert_str_eq(t->nodes[i].name, t2->nodes[i].name);
		ck_assert_uint_eq(t->nodes[i].parent, t2->nodes[i].parent);
	}
	size_t l1, l2;
	char *j1 = tj_text(t, &l1), *j2 = tj_text(t2, &l2);
	ck_assert_uint_eq(l1, l2);
	ck_assert_mem_eq(j1, j2, l1);
	free(j1);
	free(j2);
	wf_tree_free(t2);

	/* the names in another order: each keeps its path (only hash
	 * collisions, which need ~N, depend on the order) */
	size_t *idx = malloc(n * sizeof *idx);
	ck_assert_ptr_nonnull(idx);
	for (size_t i = 0; i < n; i++)
		idx[i] = i;
	for (size_t i = n; i > 1; i--) {
		size_t j = rnd((uint32_t)i), tmp = idx[i - 1];
		idx[i - 1] = idx[j];
		idx[j] = tmp;
	}
	for (size_t i = 0; i < n; i++)
		perm[i] = names[idx[i]];
	struct wf_model *m3 = model_of(perm, n);
	struct wf_tree *t3 = tree_of(m3);
	check_invariants(t3, m3);
	ck_assert_uint_eq(t3->n_nodes, t->n_nodes);
	for (size_t i = 0; i < n; i++) {
		char *p = tensor_path(t3, i);
		ck_assert_str_eq(p, paths[idx[i]]);
		free(p);
	}
	wf_tree_free(t3);
	wf_model_free(m3);

	for (size_t i = 0; i < n; i++) {
		free(paths[i]);
		free((char *)names[i].s);
	}
	free(paths);
	free(idx);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* Paths in tensors.json that need JSON escaping ('"' and '\\'). */
START_TEST(test_tensors_json_quotes)
{
	struct name names[] = {NM("q\"uote.back\\slash"), NM("plain")};
	struct wf_model *m = model_of(names, 2);
	struct wf_tree *t = tree_of(m);
	check_invariants(t, m);
	size_t len;
	char *tj = tj_text(t, &len);
	ck_assert_ptr_nonnull(strstr(tj, "\"path\":\"q\\\"uote/back\\\\slash\""));
	ck_assert_ptr_nonnull(strstr(tj, "\"path\":\"plain\""));
	free(tj);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

/* The keyed hash behind the lookup tables: the published SipHash-2-4
 * vectors (key 00..0f, message 00..n-1) pin the round function and the
 * length padding that wf_hash (SipHash-1-3) shares. */
START_TEST(test_siphash)
{
	struct wf_hash_key key = {0x0706050403020100ULL, 0x0f0e0d0c0b0a0908ULL};
	uint8_t msg[64];
	for (int i = 0; i < 64; i++)
		msg[i] = (uint8_t)i;
	ck_assert_uint_eq(wf_siphash(&key, msg, 0, 2, 4), 0x726fdb47dd0e0e31ULL);
	ck_assert_uint_eq(wf_siphash(&key, msg, 15, 2, 4), 0xa129ca6149be45e5ULL);
	ck_assert_uint_eq(wf_hash(&key, msg, 15), wf_siphash(&key, msg, 15, 1, 3));

	/* per-table random keys: same name, different slots */
	struct wf_hash_key k1, k2;
	wf_hash_key_init(&k1);
	wf_hash_key_init(&k2);
	ck_assert(k1.k0 != k2.k0 || k1.k1 != k2.k1);
	ck_assert_uint_ne(wf_hash(&k1, "blk", 3), wf_hash(&k2, "blk", 3));
}
END_TEST

/* Metadata keys "." and ".." become the files %2E and %2E%2E of the
 * metadata folder (issue 17 item 13): a folder entry named "." or ".."
 * would shadow the folder and its parent, and could never be read. */
START_TEST(test_meta_dot_keys)
{
	static const struct name names[] = {NM("w")};
	struct wf_model *m = model_of(names, 1);
	free(m->metadata_json);
	m->metadata_json = strdup("{\".\": \"dot\", \"..\": \"dotdot\", \"...\": \"three\", \"a.\": \"x\"}\n");
	m->metadata_json_len = strlen(m->metadata_json);
	struct wf_tree *t = tree_of(m);
	uint32_t md = wf_tree_lookup(t, 0, "metadata", 8);
	ck_assert_uint_ne(md, WF_NO_NODE);
	const struct wf_node *dir = &t->nodes[md];
	ck_assert_uint_eq(dir->n_children, 4);
	for (uint32_t i = 0; i < dir->n_children; i++) {
		const char *nm = t->nodes[dir->children[i]].name;
		ck_assert_msg(strcmp(nm, ".") != 0 && strcmp(nm, "..") != 0, "metadata/ holds '%s'", nm);
	}
	const char *want[][2] = {{"%2E", "dot"}, {"%2E%2E", "dotdot"}, {"...", "three"}, {"a.", "x"}};
	for (size_t i = 0; i < 4; i++) {
		uint32_t n = wf_tree_lookup(t, md, want[i][0], strlen(want[i][0]));
		ck_assert_msg(n != WF_NO_NODE, "no metadata/%s", want[i][0]);
		ck_assert_uint_eq(t->nodes[n].kind, WF_NODE_BLOB);
		ck_assert_msg(t->nodes[n].blob_len >= strlen(want[i][1]) &&
			      memmem(t->nodes[n].blob, t->nodes[n].blob_len, want[i][1], strlen(want[i][1])),
			      "metadata/%s holds %.*s", want[i][0], (int)t->nodes[n].blob_len, t->nodes[n].blob);
	}
	ck_assert_uint_eq(wf_tree_lookup(t, md, ".", 1), WF_NO_NODE);
	ck_assert_uint_eq(wf_tree_lookup(t, md, "..", 2), WF_NO_NODE);
	wf_tree_free(t);
	wf_model_free(m);
}
END_TEST

static Suite *tree_suite(void)
{
	Suite *s = suite_create("tree");
	TCase *tc;

	tc = tcase_create("escape");
	tcase_add_loop_test(tc, test_escape, 0, WF_ARRAY_LEN(esc_cases));
	tcase_add_test(tc, test_escape_long);
	tcase_add_test(tc, test_siphash);
	suite_add_tcase(s, tc);

	tc = tcase_create("paths");
	tcase_add_loop_test(tc, test_paths, 0, WF_ARRAY_LEN(path_cases));
	tcase_add_test(tc, test_empty_model);
	tcase_add_test(tc, test_long_names);
	tcase_add_test(tc, test_tensors_json_quotes);
	tcase_add_test(tc, test_dot_names);
	tcase_add_test(tc, test_meta_dot_keys);
	tcase_add_test(tc, test_dir_bytes);
	tcase_add_test(tc, test_dir_budget);
	tcase_add_loop_test(tc, test_random_names, 0, 8);
	tcase_set_timeout(tc, 60);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(tree_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
