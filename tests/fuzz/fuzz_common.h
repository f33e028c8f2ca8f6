/* fuzz_common.h - checks shared by the libFuzzer targets (header-only,
 * included once per target).
 *
 * exercise_model() takes a model that parsed and does what a mount does
 * with it: builds the tree, renders every node's path, looks every node up
 * again, reads ranges of every tensor's view.  Any broken promise of the
 * library's headers is turned into an abort() so libFuzzer reports it.
 */
#ifndef FUZZ_COMMON_H
#define FUZZ_COMMON_H

#include "base/wf_common.h"
#include "base/wf_buf.h"
#include "model/wf_gguf.h"
#include "model/wf_model.h"
#include "model/wf_meta.h"
#include "model/wf_st.h"
#include "mount/wf_tj.h"
#include "mount/wf_tree.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

#include "../unit/json_bytes.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Most view bytes of one tensor a target reads per input: keeps each
 * execution fast whatever sizes a header claims (fuzz_read.c covers the
 * read path in depth). */
#define FUZZ_READ_CAP 1024u

#define FUZZ_CHECK(cond, ...)                                                    \
	do {                                                                     \
		if (!(cond)) {                                                   \
			fprintf(stderr, "fuzz check failed: %s (%s:%d)\n  ", #cond, \
				__FILE__, __LINE__);                             \
			fprintf(stderr, __VA_ARGS__);                            \
			fputc('\n', stderr);                                     \
			abort();                                                 \
		}                                                                \
	} while (0)

/* Whether view bytes a[0..n) and b[0..n), both starting at view byte
 * `off`, hold the same values.  Raw views compare bytewise.  Float views
 * compare bytewise too, except that where the float b's bytes belong to is
 * a NaN, a different NaN in a is accepted: when an operation meets two NaNs
 * (a NaN scale times a NaN minimum, say), which payload comes out is up to
 * the compiler's operand order, not something the decoders can promise.
 * b_whole, when not NULL, is the whole view b is a slice of (so a float cut
 * by the range can still be classified). */
static inline bool fuzz_same_view(const struct wf_type *ty, const uint8_t *a, const uint8_t *b,
				  size_t n, uint64_t off, const uint8_t *b_whole)
{
	if (memcmp(a, b, n) == 0)
		return true;
	if (!ty->decode)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (a[i] == b[i])
			continue;
		uint64_t pos = off + i, f0 = pos - pos % 4;
		uint32_t bits;
		if (b_whole) {
			memcpy(&bits, b_whole + f0, 4);
		} else if (f0 >= off && f0 + 4 <= off + n) {
			memcpy(&bits, b + (f0 - off), 4);
		} else {
			return false;
		}
		if ((bits & 0x7F800000u) != 0x7F800000u || (bits & 0x007FFFFFu) == 0)
			return false; /* not a NaN */
		/* a must hold a NaN there too, where it has the whole float */
		if (f0 >= off && f0 + 4 <= off + n) {
			uint32_t abits;
			memcpy(&abits, a + (f0 - off), 4);
			if ((abits & 0x7F800000u) != 0x7F800000u || (abits & 0x007FFFFFu) == 0)
				return false;
		}
	}
	return true;
}

static inline uint64_t fuzz_rng(uint64_t *s)
{
	/* splitmix64 */
	uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
	z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
	z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
	return z ^ (z >> 31);
}

/* Generated files promise valid JSON whatever the model holds (with
 * \udcXX escapes for bytes that are not UTF-8, which cJSON alone would
 * refuse as lone surrogates). */
static inline void fuzz_check_json(const char *what, const char *s, size_t n)
{
	FUZZ_CHECK(s != NULL, "%s is NULL", what);
	FUZZ_CHECK(strlen(s) == n, "%s: length %zu but strlen %zu", what, n, strlen(s));
	cJSON *j = json_bytes_parse(s, n);
	FUZZ_CHECK(j != NULL, "%s is not valid JSON:\n%.*s", what, (int)(n > 2000 ? 2000 : n), s);
	cJSON_Delete(j);
}

/* metadata.json (a GGUF's made on read, wf_meta.h): valid JSON whole, and
 * the same bytes read in windows of a prime size from any start. */
static inline void fuzz_check_meta(const struct wf_model *m)
{
	char *text;
	size_t n;
	FUZZ_CHECK(wf_meta_dup(m, &text, &n, NULL) == WF_OK, "metadata.json cannot be made");
	fuzz_check_json("metadata.json", text, n);
	FUZZ_CHECK(wf_meta_len(m) == n, "metadata.json: length %zu, made %zu", (size_t)wf_meta_len(m), n);
	char win[257];
	for (size_t off = n / 3; off < n; off += sizeof win) {
		size_t k = n - off < sizeof win ? n - off : sizeof win;
		FUZZ_CHECK(wf_meta_read(m, off, k, win, NULL) == WF_OK && memcmp(win, text + off, k) == 0,
			   "metadata.json: window [%zu, +%zu) differs from the whole", off, k);
	}
	free(text);
}

/* A refusal's message is one line a terminal shows as it is: non-empty,
 * NUL-terminated within WF_ERRLEN, and every character one that
 * wf_printable_seq lets through (no control byte: a newline would make it
 * two lines, an ESC a terminal command; no C1, bidirectional control or
 * line separator, which valid UTF-8 can carry). */
static inline void fuzz_check_one_line(enum wf_err rc, const char *err)
{
	const char *end = memchr(err, '\0', WF_ERRLEN);
	FUZZ_CHECK(end != NULL && end > err, "refusal (%d) without a message", (int)rc);
	const uint8_t *u = (const uint8_t *)err;
	for (size_t i = 0, n = (size_t)(end - err), l; i < n; i += l) {
		l = wf_printable_seq(u + i, n - i);
		FUZZ_CHECK(l != 0, "refusal (%d) holds a character shown as a control at byte %zu (0x%02x): %s", (int)rc,
			   i, u[i], err);
	}
}

/* A refused file: no model left behind, a parser's error code, and a
 * one-line message. */
static inline void fuzz_check_refusal(enum wf_err rc, const struct wf_model *m, const char *err)
{
	FUZZ_CHECK(m == NULL, "failed parse left a model");
	FUZZ_CHECK(rc == WF_ERR_FORMAT || rc == WF_ERR_UNSUP || rc == WF_ERR_NOMEM,
		   "unexpected error %d", (int)rc);
	fuzz_check_one_line(rc, err);
}

/* What wf_model.h promises of a model that parsed. */
static inline void fuzz_check_model(const struct wf_model *m)
{
	FUZZ_CHECK(m->data_offset <= m->data_len, "data_offset %llu past %llu",
		   (unsigned long long)m->data_offset, (unsigned long long)m->data_len);
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		const struct wf_type *ty = wf_type_get(t->type);
		FUZZ_CHECK(ty != NULL, "tensor %zu: type %d has no row", i, t->type);
		FUZZ_CHECK(t->name != NULL && t->name[t->name_len] == '\0', "tensor %zu: name", i);
		FUZZ_CHECK(t->offset <= m->data_len && t->nbytes <= m->data_len - t->offset,
			   "tensor %zu: bytes [%llu, +%llu) outside the %llu-byte file", i,
			   (unsigned long long)t->offset, (unsigned long long)t->nbytes,
			   (unsigned long long)m->data_len);
		FUZZ_CHECK(t->offset >= m->data_offset, "tensor %zu: offset before data section", i);
		uint64_t n = 1;
		for (uint32_t d = 0; d < t->ndim; d++)
			n *= t->shape[d];
		FUZZ_CHECK(n == t->nelems && t->nelems % ty->blck == 0 &&
				   t->nbytes == t->nelems / ty->blck * ty->bytes &&
				   t->size == (ty->vk == WF_VK_RAW ? t->nbytes : t->nelems * wf_vk_elem_size(ty, ty->vk)) &&
				   t->size <= INT64_MAX,
			   "tensor %zu: sizes inconsistent", i);
	}
	fuzz_check_meta(m);
}

/* Reads [off, off+len) of t into a buffer of exactly the bytes it may
 * write (at an odd address when `odd`), checks the count and returns the
 * bytes (malloc'd, caller frees) or NULL when nothing was read. */
static inline uint8_t *fuzz_read(const struct wf_model *m, const struct wf_tensor *t,
				 uint64_t off, size_t len, bool odd, size_t *n_out)
{
	const struct wf_type *ty = wf_type_get(t->type);
	size_t expect = off >= t->size ? 0 : (len < t->size - off ? len : (size_t)(t->size - off));
	uint8_t *raw = malloc(expect + 1);
	FUZZ_CHECK(raw != NULL, "malloc");
	uint8_t *out = raw + (odd ? 1 : 0);
	enum wf_err rc = wf_view_read(t, m->data, m->data_len, off, len, out, n_out);
	FUZZ_CHECK(rc == WF_OK, "read %s [%llu, +%zu) failed: %d", ty->name,
		   (unsigned long long)off, len, (int)rc);
	FUZZ_CHECK(*n_out == expect && *n_out <= len, "read [%llu, +%zu) of %llu bytes: n_out %zu, expected %zu",
		   (unsigned long long)off, len, (unsigned long long)t->size, *n_out, expect);

	/* the blocks wf_view_span names cover exactly what was read */
	uint64_t first, count;
	wf_view_span(t, off, len, &first, &count);
	uint64_t bsz = wf_view_block_bytes(t);
	if (expect == 0) {
		FUZZ_CHECK(count == 0, "span of an empty read has %llu blocks", (unsigned long long)count);
	} else {
		FUZZ_CHECK(first == off / bsz && (first + count) * bsz >= off + expect &&
				   (first + count - 1) * bsz < off + expect,
			   "span [%llu, +%llu) does not cover [%llu, +%zu)", (unsigned long long)first,
			   (unsigned long long)count, (unsigned long long)off, expect);
	}
	if (*n_out == 0) {
		free(raw);
		return NULL;
	}
	if (odd)
		memmove(raw, out, *n_out);
	return raw;
}

static inline void fuzz_read_tensor(const struct wf_model *m, const struct wf_tensor *t, uint64_t seed)
{
	size_t whole_len = t->size < FUZZ_READ_CAP ? (size_t)t->size : FUZZ_READ_CAP;
	size_t whole_n;
	uint8_t *whole = fuzz_read(m, t, 0, whole_len ? whole_len : 1, false, &whole_n);
	uint64_t s = seed ^ t->size;
	for (int k = 0; k < 4; k++) {
		uint64_t r = fuzz_rng(&s);
		uint64_t off;
		size_t len;
		switch (k) {
		case 0: off = 0; len = 1; break;
		case 1: off = t->size ? t->size - 1 : 0; len = 9; break;
		case 2: off = t->size; len = 4; break;           /* at the end */
		case 3: off = UINT64_MAX - (r & 7); len = 8; break; /* far past it */
		default:
			off = t->size ? r % (t->size + 16) : r % 16;
			len = (size_t)((r >> 40) % 300) + 1;
			break;
		}
		size_t n;
		uint8_t *part = fuzz_read(m, t, off, len, (r >> 20) & 1, &n);
		if (part && whole && off + n <= whole_n)
			FUZZ_CHECK(fuzz_same_view(wf_type_get(t->type), part, whole + off, n, off, whole),
				   "read [%llu, +%zu) differs from the same bytes of a whole read",
				   (unsigned long long)off, len);
		free(part);
	}
	free(whole);
}

static inline void fuzz_check_tree(const struct wf_model *m, const struct wf_tree *tr)
{
	FUZZ_CHECK(tr->n_nodes >= 3 && tr->nodes[0].kind == WF_NODE_DIR && tr->nodes[0].parent == 0,
		   "root");
	struct wf_buf tj = {0};
	wf_tj_text(tr->tj, &tj); /* the text the mount makes a window at a time */
	if (!tj.oom) {
		FUZZ_CHECK(tj.len == tr->tj_len, "tensors.json: %zu bytes made, %llu measured", tj.len,
			   (unsigned long long)tr->tj_len);
		fuzz_check_json("tensors.json", tj.data, tj.len);
	}
	wf_buf_free(&tj);
	struct wf_buf path = {0};
	uint32_t seen_children = 0;
	for (uint32_t i = 0; i < tr->n_nodes; i++) {
		const struct wf_node *nd = &tr->nodes[i];
		if (nd->kind == WF_NODE_DIR) {
			for (uint32_t c = 0; c < nd->n_children; c++) {
				FUZZ_CHECK(tr->nodes[nd->children[c]].parent == i, "child link");
				if (c)
					FUZZ_CHECK(strcmp(tr->nodes[nd->children[c - 1]].name,
							  tr->nodes[nd->children[c]].name) < 0,
						   "dir %u: children not sorted and unique", i);
			}
			seen_children += nd->n_children;
		}
		if (i == 0) {
			wf_tree_path(tr, 0, &path);
			FUZZ_CHECK(path.len == 0, "root path not empty");
			continue;
		}
		FUZZ_CHECK(nd->parent < tr->n_nodes && tr->nodes[nd->parent].kind == WF_NODE_DIR,
			   "node %u: parent %u", i, nd->parent);
		FUZZ_CHECK(nd->name_len > 0 && nd->name_len <= 255 && strlen(nd->name) == nd->name_len &&
				   memchr(nd->name, '/', nd->name_len) == NULL &&
				   strcmp(nd->name, ".") != 0 && strcmp(nd->name, "..") != 0,
			   "node %u: bad name '%s'", i, nd->name);
		FUZZ_CHECK(wf_tree_lookup(tr, nd->parent, nd->name, nd->name_len) == i,
			   "node %u '%s' not found by lookup", i, nd->name);
		/* Every node's path in small trees; in big ones files only (a
		 * directory's path is a prefix of theirs, and rendering every
		 * directory's of a deep tree would make this check quadratic). */
		if (nd->kind == WF_NODE_DIR && tr->n_nodes > 128)
			continue;
		path.len = 0;
		wf_tree_path(tr, i, &path);
		FUZZ_CHECK(!path.oom, "path oom");
		/* the path ends in the name, after a '/' unless at top level */
		FUZZ_CHECK(path.len >= nd->name_len &&
				   memcmp(path.data + path.len - nd->name_len, nd->name, nd->name_len) == 0,
			   "node %u: path '%s' does not end in '%s'", i, path.data, nd->name);
		if (nd->kind == WF_NODE_TENSOR)
			FUZZ_CHECK(nd->tensor < m->n_tensors && tr->tensor_node[nd->tensor] == i,
				   "node %u: tensor link", i);
	}
	FUZZ_CHECK(seen_children == tr->n_nodes - 1, "children %u of %u nodes", seen_children, tr->n_nodes);
	wf_buf_free(&path);
}

/* Everything a mount does with a model that parsed. */
static inline void exercise_model(const struct wf_model *m, uint64_t seed)
{
	fuzz_check_model(m);
	struct wf_tree *tr;
	char err[WF_ERRLEN];
	if (wf_tree_build(&tr, m, err) != WF_OK)
		return; /* out of memory or too many components: a clean refusal */
	fuzz_check_tree(m, tr);
	for (size_t i = 0; i < m->n_tensors; i++)
		fuzz_read_tensor(m, &m->tensors[i], seed + i);
	wf_tree_free(tr);
}

static inline uint64_t fuzz_seed(const uint8_t *data, size_t size)
{
	uint64_t h = 1469598103934665603ULL ^ size;
	for (size_t i = 0; i < size && i < 64; i++)
		h = (h ^ data[i]) * 1099511628211ULL;
	return h;
}

#endif
