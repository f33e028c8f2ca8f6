/* wf_tree.c - tensor names to a directory tree (rules in wf_tree.h). */
#include "mount/wf_tree.h"
#include "base/wf_hash.h"
#include "view/wf_view.h"
#include "mount/wf_preview.h"
#include "mount/wf_st_stream.h"
#include "mount/wf_tj.h"
#include "view/wf_gguf_file.h"
#include "view/wf_hf_file.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "view/wf_hfq.h"

#include <malloc.h>
#include <stdio.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 255
/* bytes of a long component kept before its "%~" + 16-hex-digit hash */
#define LONG_KEEP 200


/* Shortens the escaped component at out->data[start..] to at most `limit`
 * bytes when it is longer: keep a prefix that ends on a whole character
 * and a whole %XX escape, then "%~" and a hash of the original bytes
 * orig[0..n).  The result is at most LONG_KEEP + 18 bytes. */
static void shorten(struct wf_buf *out, size_t start, const uint8_t *orig, size_t n, size_t limit)
{
	if (out->oom || out->len - start <= limit)
		return;
	size_t keep = LONG_KEEP;
	const uint8_t *e = (const uint8_t *)out->data + start;
	while (keep > 0 && (e[keep] & 0xC0) == 0x80)
		keep--;
	for (size_t back = 1; back <= 2 && back <= keep; back++) {
		if (e[keep - back] == '%') {
			keep -= back;
			break;
		}
	}
	out->len = start + keep;
	wf_buf_printf(out, "%%~%016llx", (unsigned long long)wf_fnv1a(orig, n));
}

static void escape(const uint8_t *s, size_t n, struct wf_buf *out, bool keep_dots);

void wf_escape_component(const uint8_t *s, size_t n, struct wf_buf *out)
{
	escape(s, n, out, false);
}

/* A metadata key is one file name: its dots stay (only '.' and '..' as
 * whole names are escaped). */
static void escape_key(const uint8_t *s, size_t n, struct wf_buf *out)
{
	escape(s, n, out, true);
}

static void escape(const uint8_t *s, size_t n, struct wf_buf *out, bool keep_dots)
{
	if (n == 0) {
		wf_buf_putc(out, '%');
		return;
	}
	if ((n == 1 && s[0] == '.') || (n == 2 && s[0] == '.' && s[1] == '.')) {
		/* cannot happen after splitting on '.', but the rule is general */
		wf_buf_puts(out, n == 1 ? "%2E" : "%2E%2E");
		return;
	}
	size_t start = out->len;
	/* past NAME_MAX the rest only feeds the hash: stop writing there, so
	 * a 100 MB name costs 100 MB of hashing, not 300 MB of escapes */
	for (size_t i = 0; i < n && out->len - start <= NAME_MAX_BYTES;) {
		uint8_t c = s[i];
		size_t l = (c >= 0x80) ? wf_utf8_seq(s + i, n - i) : 1;
		if (c == '%' || c == '/' || (c == '.' && !keep_dots) || c < 0x20 || c == 0x7F || l == 0) {
			wf_buf_printf(out, "%%%02X", c);
			i++;
		} else {
			wf_buf_put(out, s + i, l);
			i += l;
		}
	}
	shorten(out, start, s, n, NAME_MAX_BYTES);
}

/* Node names live in chunks, not one allocation each: a node name is a
 * few bytes, and malloc's overhead per block would double a big tree. */
#define CHUNK_BYTES 65536

struct wf_chunk {
	struct wf_chunk *next;
	size_t used;
	char data[CHUNK_BYTES];
};

/* A NUL-terminated copy of name[0..len) (len <= 300) in t's chunks. */
static char *name_dup(struct wf_tree *t, const char *name, size_t len)
{
	if (!t->names || CHUNK_BYTES - t->names->used < len + 1) {
		struct wf_chunk *c = malloc(sizeof *c);
		if (!c)
			return NULL;
		c->next = t->names;
		c->used = 0;
		t->names = c;
	}
	char *p = t->names->data + t->names->used;
	memcpy(p, name, len);
	p[len] = '\0';
	t->names->used += len + 1;
	return p;
}

static void free_names(struct wf_tree *t)
{
	while (t->names) {
		struct wf_chunk *next = t->names->next;
		free(t->names);
		t->names = next;
	}
}

/* Build-time state.  The (parent, name) table only lives while the tree
 * is built; afterwards lookups search the sorted children. */
struct builder {
	struct wf_tree *t;
	const struct wf_model *m;
	uint32_t cap;        /* nodes allocated */
	uint32_t gguf;       /* model.gguf's type (WF_FTYPE_*) */
	bool gguf_set;       /* -o gguf= was given (a GGUF source has model.gguf only then) */
	uint32_t *slots;     /* open addressing, WF_NO_NODE when empty */
	size_t n_slots;      /* a power of two, at least twice cap */
	struct wf_hash_key key; /* random per build: names cannot be chosen to collide */
};

static size_t slot_of(const struct builder *b, uint32_t parent, const char *name, size_t len)
{
	uint64_t h = wf_hash(&b->key, name, len) ^ (uint64_t)parent * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h ^ h >> 32) & (b->n_slots - 1);
}

/* The node named name[0..len) under parent while building, or WF_NO_NODE. */
static uint32_t find(const struct builder *b, uint32_t parent, const char *name, size_t len)
{
	const struct wf_tree *t = b->t;
	for (size_t i = slot_of(b, parent, name, len);; i = (i + 1) & (b->n_slots - 1)) {
		uint32_t n = b->slots[i];
		if (n == WF_NO_NODE)
			return WF_NO_NODE;
		const struct wf_node *nd = &t->nodes[n];
		if (nd->parent == parent && nd->name_len == len && memcmp(nd->name, name, len) == 0)
			return n;
	}
}

/* Bytewise order, a shorter name before every longer one it begins. */
static int name_order(const char *a, size_t alen, const char *b, size_t blen)
{
	int c = memcmp(a, b, alen < blen ? alen : blen);
	return c ? c : (alen > blen) - (alen < blen);
}

uint32_t wf_tree_lookup(const struct wf_tree *t, uint32_t dir, const char *name, size_t len)
{
	if (dir >= t->n_nodes || t->nodes[dir].kind != WF_NODE_DIR)
		return WF_NO_NODE;
	const struct wf_node *d = &t->nodes[dir];
	size_t lo = 0, hi = d->n_children;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		const struct wf_node *c = &t->nodes[d->children[mid]];
		int r = name_order(c->name, c->name_len, name, len);
		if (r == 0)
			return d->children[mid];
		if (r < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return WF_NO_NODE;
}

/* Adds a node named name under parent (caller checked it is free). */
static uint32_t add_node(struct builder *b, uint32_t parent, const char *name, size_t len,
			 enum wf_node_kind kind)
{
	struct wf_tree *t = b->t;
	if (t->n_nodes >= b->cap || len > UINT16_MAX)
		return WF_NO_NODE; /* cannot happen: cap is an upper bound, names are short */
	uint32_t idx = t->n_nodes;
	struct wf_node *nd = &t->nodes[idx];
	memset(nd, 0, sizeof *nd);
	nd->name = name_dup(t, name, len);
	if (!nd->name)
		return WF_NO_NODE;
	nd->name_len = (uint16_t)len;
	nd->parent = parent;
	nd->kind = (uint8_t)kind;
	t->n_nodes++;
	size_t i = slot_of(b, parent, name, len);
	while (b->slots[i] != WF_NO_NODE)
		i = (i + 1) & (b->n_slots - 1);
	b->slots[i] = idx;
	return idx;
}

/* Splits a tensor's name into escaped components in comp, ends[k] being
 * where component k ends; returns their number (at most max_dirs + 1).
 * Leading components are directories while there are at most max_dirs of
 * them and they take at most WF_TREE_DIR_BYTES with their '/'; the rest of
 * the name from *tail on, dots and all, is escaped as the last one.  Only
 * the name's own bytes decide, so two names with the same leading
 * components get the same directories. */
static size_t split_name(const struct wf_tensor *tn, unsigned max_dirs, struct wf_buf *comp,
			 size_t ends[WF_TREE_MAX_DIRS + 1], size_t *tail)
{
	const uint8_t *s = (const uint8_t *)tn->name;
	size_t n = tn->name_len, k = 0, from = 0, dir_bytes = 0;
	comp->len = 0;
	while (k < max_dirs) {
		const uint8_t *dot = memchr(s + from, '.', n - from);
		if (!dot)
			break;
		size_t at = comp->len;
		wf_escape_component(s + from, (size_t)(dot - s) - from, comp);
		if (dir_bytes + (comp->len - at) + 1 > WF_TREE_DIR_BYTES) {
			comp->len = at;
			break;
		}
		dir_bytes += comp->len - at + 1;
		ends[k++] = comp->len;
		from = (size_t)(dot - s) + 1;
	}
	wf_escape_component(s + from, n - from, comp);
	ends[k++] = comp->len;
	*tail = from;
	return k;
}

/* Adds every directory the names make under the limit max_dirs, and
 * counts them by depth in per_depth[1..WF_TREE_MAX_DIRS]. */
static bool add_dirs(struct builder *b, unsigned max_dirs, struct wf_buf *comp, uint64_t *per_depth)
{
	size_t ends[WF_TREE_MAX_DIRS + 1], tail;
	for (size_t i = 0; i < b->m->n_tensors; i++) {
		size_t k = split_name(&b->m->tensors[i], max_dirs, comp, ends, &tail);
		if (comp->oom)
			return false;
		uint32_t dir = 0;
		for (size_t c = 0; c + 1 < k; c++) {
			size_t from = c ? ends[c - 1] : 0;
			uint32_t n = find(b, dir, comp->data + from, ends[c] - from);
			if (n == WF_NO_NODE) {
				n = add_node(b, dir, comp->data + from, ends[c] - from, WF_NODE_DIR);
				if (n == WF_NO_NODE)
					return false;
				per_depth[c + 1]++;
			}
			dir = n;
		}
	}
	return true;
}

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct wf_node *x = &((const struct wf_node *)ctx)[*(const uint32_t *)a];
	const struct wf_node *y = &((const struct wf_node *)ctx)[*(const uint32_t *)b];
	return name_order(x->name, x->name_len, y->name, y->name_len);
}

void wf_tree_path(const struct wf_tree *t, uint32_t idx, struct wf_buf *out)
{
	size_t depth = 0;
	for (uint32_t n = idx; n != 0; n = t->nodes[n].parent)
		depth++;
	if (depth == 0)
		return;
	/* write components right to left into space reserved up front */
	size_t total = depth - 1;
	for (uint32_t n = idx; n != 0; n = t->nodes[n].parent)
		total += t->nodes[n].name_len;
	size_t at = out->len;
	for (size_t i = 0; i < total; i++)
		wf_buf_putc(out, '/');
	if (out->oom)
		return;
	size_t end = at + total;
	for (uint32_t n = idx; n != 0; n = t->nodes[n].parent) {
		end -= t->nodes[n].name_len;
		memcpy(out->data + end, t->nodes[n].name, t->nodes[n].name_len);
		if (end > at)
			end--; /* the '/' already there */
	}
}

/* A root entry named fname, or an error naming it when the tree already
 * has one. */
static enum wf_err add_root_file(struct builder *b, const char *fname, enum wf_node_kind kind, uint32_t *n,
				 char *err)
{
	if (find(b, 0, fname, strlen(fname)) != WF_NO_NODE) {
		char q[96];
		return wf_fail(err, WF_ERR_UNSUP, "%s: the mount already has an entry of that name",
			       wf_quote(q, sizeof q, fname, strlen(fname)));
	}
	*n = add_node(b, 0, fname, strlen(fname), kind);
	return *n == WF_NO_NODE ? wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree") : WF_OK;
}

/* model.gguf, for a Hugging Face checkpoint (and for a GGUF model with
 * -o gguf=, retyped): made here, or left out with the reason kept for
 * WEIGHTFS.txt.  Only running out of memory fails the
 * tree: a model llama.cpp cannot run is still a model to read. */
static enum wf_err add_model_gguf(struct builder *b, char *err)
{
	struct wf_tree *t = b->t;
	if (b->m->format != WF_FMT_SAFETENSORS && !b->gguf_set)
		return WF_OK;
	char why[WF_ERRLEN] = "";
	enum wf_err rc = wf_gguf_file_new(b->m, b->gguf, &t->gguf, why);
	if (rc == WF_ERR_NOMEM)
		return wf_fail(err, rc, "model.gguf: out of memory");
	if (rc == WF_OK && find(b, 0, "model.gguf", 10) == WF_NO_NODE) {
		uint32_t n;
		return add_root_file(b, "model.gguf", WF_NODE_MODEL_GGUF, &n, err);
	}
	if (rc == WF_OK) {
		wf_gguf_file_free(t->gguf);
		t->gguf = NULL;
		snprintf(why, sizeof why, "the model's folder has a file of that name");
	}
	return (t->gguf_why = strdup(why)) ? WF_OK : wf_fail(err, WF_ERR_NOMEM, "out of memory");
}


/* The dtype of hf/model.safetensors: the mount's, when it is one
 * safetensors has and transformers loads (F16, BF16), else float32. */
static enum wf_vk hf_dtype(const struct wf_model *m)
{
	for (size_t i = 0; i < m->n_tensors; i++)
		if (m->tensors[i].vk == WF_VK_F16 || m->tensors[i].vk == WF_VK_BF16)
			return (enum wf_vk)m->tensors[i].vk;
	return WF_VK_F32;
}

static enum wf_err add_hf_blob(struct builder *b, uint32_t dir, const char *name, const char *data, size_t len,
			       char *err)
{
	uint32_t n = add_node(b, dir, name, strlen(name), WF_NODE_BLOB);
	if (n == WF_NO_NODE)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree");
	b->t->nodes[n].blob = data;
	b->t->nodes[n].blob_len = len;
	return WF_OK;
}

/* hf/, for a GGUF model: the folder transformers builds from it
 * (wf_hf_file.h), or the reason there is none, kept for WEIGHTFS.txt.  As
 * with model.gguf, only running out of memory fails the tree. */
static enum wf_err add_hf(struct builder *b, char *err)
{
	struct wf_tree *t = b->t;
	if (b->m->format != WF_FMT_GGUF)
		return WF_OK;
	char why[WF_ERRLEN] = "";
	enum wf_err rc = wf_hf_file_new(b->m, hf_dtype(b->m), &t->hf, why);
	if (rc == WF_ERR_NOMEM)
		return wf_fail(err, rc, "hf/: out of memory");
	if (rc == WF_OK && find(b, 0, "hf", 2) != WF_NO_NODE) {
		wf_hf_file_free(t->hf);
		t->hf = NULL;
		snprintf(why, sizeof why, "the model has a tensor named hf");
	}
	if (!t->hf)
		return (t->hf_why = strdup(why)) ? WF_OK : wf_fail(err, WF_ERR_NOMEM, "out of memory");
	uint32_t dir;
	const struct wf_hf_file *h = t->hf;
	if ((rc = add_root_file(b, "hf", WF_NODE_DIR, &dir, err)) != WF_OK)
		return rc;
	if (h->st && ((rc = add_hf_blob(b, dir, "config.json", h->config_json, h->config_len, err)) != WF_OK ||
		      (rc = add_hf_blob(b, dir, "generation_config.json", h->gen_json, h->gen_len, err)) != WF_OK))
		return rc;
	if (h->st && add_node(b, dir, "model.safetensors", 17, WF_NODE_HF_ST) == WF_NO_NODE)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree");
	const struct wf_hf_tok *k = &h->tok;
	if (h->has_tok &&
	    ((rc = add_hf_blob(b, dir, "tokenizer.json", k->tokenizer_json, k->tokenizer_json_len, err)) != WF_OK ||
	     (rc = add_hf_blob(b, dir, "tokenizer_config.json", k->tokenizer_config_json, k->tokenizer_config_json_len,
			       err)) != WF_OK ||
	     (rc = add_hf_blob(b, dir, "special_tokens_map.json", k->special_tokens_map_json,
			       k->special_tokens_map_json_len, err)) != WF_OK ||
	     (k->tokenizer_model &&
	      (rc = add_hf_blob(b, dir, "tokenizer.model", k->tokenizer_model, k->tokenizer_model_len, err)) != WF_OK)))
		return rc;
	return WF_OK;
}

/* Adds the tensor files' neighbours at the root: parts.json, the summary,
 * the model folder's own files, model.safetensors and the metadata
 * folder. */
static enum wf_err add_extras(struct builder *b, const struct wf_model *m, struct wf_buf *name, char *err)
{
	struct wf_tree *t = b->t;
	uint32_t n;
	enum wf_err rc;
	/* A model of several files: parts.json.  A model folder: its small
	 * files, under their own names.  A file of the folder whose name the
	 * tree already gives (metadata.json, tensors.json, parts.json, or a
	 * tensor's top-level entry) is left out: what weightfs makes of the
	 * model comes first, and one stray file must not stop the mount. */
	if (m->parts_json) {
		if ((rc = add_root_file(b, "parts.json", WF_NODE_BLOB, &n, err)) != WF_OK)
			return rc;
		t->nodes[n].blob = m->parts_json;
		t->nodes[n].blob_len = m->parts_json_len;
	}
	/* the summary before the folder's files: a WEIGHTFS.txt of the model's
	 * own is left out like any file whose name the tree gives */
	if ((rc = add_root_file(b, WF_TREE_SUMMARY_NAME, WF_NODE_BLOB, &t->summary_node, err)) != WF_OK)
		return rc;
	/* a file of a folder keeps the folder's files to itself (model.gguf's) */
	for (size_t i = 0; !m->sidecars_beside && i < m->n_sidecars; i++) {
		const struct wf_sidecar *sc = &m->sidecars[i];
		if (find(b, 0, sc->name, strlen(sc->name)) != WF_NO_NODE)
			continue;
		if ((rc = add_root_file(b, sc->name, WF_NODE_BLOB, &n, err)) != WF_OK)
			return rc;
		t->nodes[n].blob = sc->data;
		t->nodes[n].blob_len = sc->len;
	}

	/* model.safetensors: the header here, the tensors' views behind it */
	rc = wf_st_stream_new(m, &t->st_stream, &t->st_header_len, &t->st_offsets);
	if (rc != WF_OK)
		return wf_fail(err, rc, "model.safetensors: %s", rc == WF_ERR_NOMEM ? "out of memory" : "cannot build its header");
	if ((rc = add_root_file(b, "model.safetensors", WF_NODE_MODEL_ST, &n, err)) != WF_OK)
		return rc;
	if ((rc = add_model_gguf(b, err)) != WF_OK || (rc = add_hf(b, err)) != WF_OK)
		return rc;

	/* one file per metadata key, in a folder of its own */
	const char *dname = find(b, 0, "metadata", 8) == WF_NO_NODE ? "metadata" : "metadata.d";
	uint32_t dir;
	if ((rc = add_root_file(b, dname, WF_NODE_DIR, &dir, err)) != WF_OK)
		return rc;
	for (size_t i = 0; i < t->n_meta; i++) {
		const struct wf_meta_file *f = &t->meta[i];
		name->len = 0;
		escape_key((const uint8_t *)f->name, f->name_len, name);
		/* -o suffix: a desktop takes the type from the name, not from
		 * sniffing a few bytes ("model" is no Modelica file) */
		const char *sfx = !t->suffix ? "" : f->json ? ".json" : ".txt";
		if (*sfx && name->len > NAME_MAX_BYTES - 5 - 4)
			shorten(name, 0, (const uint8_t *)f->name, f->name_len, NAME_MAX_BYTES - 5 - 4);
		size_t base = name->len;
		wf_buf_puts(name, sfx);
		for (unsigned dup = 2; !name->oom && find(b, dir, name->data, name->len) != WF_NO_NODE; dup++) {
			name->len = base;
			wf_buf_printf(name, "~%u%s", dup, sfx);
		}
		if (name->oom || (n = add_node(b, dir, name->data, name->len, f->data ? WF_NODE_BLOB : WF_NODE_MVAL)) ==
				     WF_NO_NODE)
			return wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree");
		if (f->data)
			t->nodes[n].blob = f->data;
		else
			t->nodes[n].meta_key = i; /* a GGUF's: made on read */
		t->nodes[n].blob_len = f->len;
	}
	t->meta_node = dir;
	return WF_OK;
}

enum wf_err wf_tree_build(struct wf_tree **out, const struct wf_model *m, char *err)
{
	return wf_tree_build_opts(out, m, NULL, err);
}

/* Upper bound on nodes: root, the blobs (JSON files, parts.json, the
 * summary, model.safetensors, sidecars), the metadata folder and its
 * files, and per tensor its file and one directory per '.' up to the limit. */
static uint64_t node_cap(const struct wf_tree *t, const struct wf_model *m)
{
	uint64_t cap = 8 + 12 /* hf/ */ + m->n_sidecars + t->n_meta + (t->preview_node ? m->n_tensors : 0);
	for (size_t i = 0; i < m->n_tensors; i++) {
		const char *s = m->tensors[i].name, *e = s + m->tensors[i].name_len;
		cap++;
		for (unsigned k = 0; k < WF_TREE_MAX_DIRS && (s = memchr(s, '.', (size_t)(e - s))); k++, s++)
			cap++;
	}
	return cap;
}

/* Pass 1: the root, the JSON files and every directory, so that pass 2
 * knows which leaves clash.  If the names make too many directories, count
 * them by depth, and do it again with the deepest limit that keeps within
 * the budget (*max_dirs gets the limit).  False when out of memory. */
static bool add_all_dirs(struct builder *b, struct wf_buf *comp, unsigned *max_dirs)
{
	struct wf_tree *t = b->t;
	uint64_t per_depth[WF_TREE_MAX_DIRS + 1];
	uint64_t budget = b->m->data_offset / WF_TREE_DIR_HEADER_DIV;
	if (budget < WF_TREE_DIR_FLOOR)
		budget = WF_TREE_DIR_FLOOR;
	*max_dirs = WF_TREE_MAX_DIRS;
	for (int round = 0; round < 2; round++) {
		t->n_nodes = 0;
		free_names(t);
		memset(per_depth, 0, sizeof per_depth);
		memset(b->slots, 0xFF, b->n_slots * sizeof *b->slots);
		if (add_node(b, 0, "", 0, WF_NODE_DIR) != 0 ||
		    add_node(b, 0, "metadata.json", 13, WF_NODE_BLOB) == WF_NO_NODE ||
		    add_node(b, 0, "tensors.json", 12, WF_NODE_TJSON) == WF_NO_NODE)
			return false;
		if (!add_dirs(b, *max_dirs, comp, per_depth))
			return false;
		uint64_t total = 0;
		unsigned d = 0;
		while (d < WF_TREE_MAX_DIRS && total + per_depth[d + 1] <= budget)
			total += per_depth[++d];
		if (round > 0 || d == WF_TREE_MAX_DIRS)
			break;
		*max_dirs = d;
	}
	return true;
}

/* Pass 2: tensor i's file in its directory, named by the rules (a
 * .tensor suffix beside a directory of the same name, or the -o npy /
 * -o suffix suffix; "~N" on a collision).  False when out of memory. */
static bool add_preview_file(struct builder *b, size_t i, uint32_t dir, const char *comp, size_t len, size_t tail,
			     struct wf_buf *name);

static bool add_tensor_file(struct builder *b, size_t i, unsigned max_dirs, struct wf_buf *comp,
			    struct wf_buf *name)
{
	struct wf_tree *t = b->t;
	const struct wf_tensor *tn = &b->m->tensors[i];
	size_t ends[WF_TREE_MAX_DIRS + 1];
	size_t tail, k = split_name(tn, max_dirs, comp, ends, &tail);
	if (comp->oom)
		return false;
	uint32_t dir = 0;
	for (size_t c = 0; c + 1 < k; c++) {
		size_t from = c ? ends[c - 1] : 0;
		dir = find(b, dir, comp->data + from, ends[c] - from);
	}
	size_t from = k > 1 ? ends[k - 2] : 0;
	name->len = 0;
	wf_buf_put(name, comp->data + from, ends[k - 1] - from);
	size_t base = name->len;
	const char *suffix = "";
	char sfx[WF_SUFFIX_MAX + 2];
	uint32_t clash = name->oom ? WF_NO_NODE : find(b, dir, name->data, name->len);
	if (t->npy || t->suffix) {
		/* NAME.npy and NAME.f32 never meet a directory: generated
		 * components hold no '.' */
		snprintf(sfx, sizeof sfx, ".%s", t->npy ? "npy" : wf_view_suffix(tn));
		/* room for the suffix and a "~N" of up to 4 bytes */
		shorten(name, 0, (const uint8_t *)tn->name + tail, tn->name_len - tail,
			NAME_MAX_BYTES - 4 - strlen(sfx));
		base = name->len;
		suffix = sfx;
		wf_buf_puts(name, suffix);
	} else if (clash != WF_NO_NODE && t->nodes[clash].kind == WF_NODE_DIR) {
		/* the suffix must not push the component past NAME_MAX */
		shorten(name, 0, (const uint8_t *)tn->name + tail, tn->name_len - tail,
			NAME_MAX_BYTES - (sizeof ".tensor" - 1));
		wf_buf_puts(name, ".tensor");
		base = name->len;
	}
	for (unsigned dup = 2; !name->oom && find(b, dir, name->data, name->len) != WF_NO_NODE; dup++) {
		name->len = base;
		wf_buf_printf(name, "~%u%s", dup, suffix);
	}
	if (name->oom)
		return false;
	uint32_t n = add_node(b, dir, name->data, name->len, WF_NODE_TENSOR);
	if (n == WF_NO_NODE)
		return false;
	t->nodes[n].tensor = (uint32_t)i;
	if (t->npy) {
		char h[WF_NPY_HEADER_MAX];
		t->nodes[n].npy_len = (uint16_t)wf_npy_header(tn, h);
	}
	t->tensor_node[i] = n;
	return !t->preview_node || add_preview_file(b, i, dir, comp->data + from, ends[k - 1] - from, tail, name);
}

/* -o preview: "<component>.png" beside tensor i's file (shortened as a
 * suffix is, "~N.png" on a collision).  False when out of memory. */
static bool add_preview_file(struct builder *b, size_t i, uint32_t dir, const char *comp, size_t len, size_t tail,
			     struct wf_buf *name)
{
	const struct wf_tensor *tn = &b->m->tensors[i];
	name->len = 0;
	wf_buf_put(name, comp, len);
	shorten(name, 0, (const uint8_t *)tn->name + tail, tn->name_len - tail, NAME_MAX_BYTES - 4 - 4);
	size_t base = name->len;
	wf_buf_puts(name, ".png");
	for (unsigned dup = 2; !name->oom && find(b, dir, name->data, name->len) != WF_NO_NODE; dup++) {
		name->len = base;
		wf_buf_printf(name, "~%u.png", dup);
	}
	if (name->oom)
		return false;
	uint32_t n = add_node(b, dir, name->data, name->len, WF_NODE_PREVIEW);
	if (n == WF_NO_NODE)
		return false;
	b->t->nodes[n].tensor = (uint32_t)i;
	b->t->preview_node[i] = n;
	return true;
}

/* Every directory's children, sorted so readdir is stable and lookups can
 * search.  False when out of memory. */
static bool link_children(struct wf_tree *t)
{
	t->child_pool = malloc((t->n_nodes ? t->n_nodes : 1) * sizeof *t->child_pool);
	if (!t->child_pool)
		return false;
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		struct wf_node *p = &t->nodes[t->nodes[i].parent];
		p->n_children++;
		p->n_subdirs += t->nodes[i].kind == WF_NODE_DIR;
	}
	uint32_t at = 0;
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		struct wf_node *nd = &t->nodes[i];
		if (nd->kind != WF_NODE_DIR)
			continue;
		nd->children = t->child_pool + at;
		at += nd->n_children;
		nd->n_children = 0;
	}
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		struct wf_node *p = &t->nodes[t->nodes[i].parent];
		p->children[p->n_children++] = i;
	}
	for (uint32_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].kind == WF_NODE_DIR && t->nodes[i].n_children > 1)
			qsort_r(t->nodes[i].children, t->nodes[i].n_children, sizeof(uint32_t), child_cmp, t->nodes);
	return true;
}

/* tensors.json, measured once the paths are known (made on read,
 * wf_tj.h); false when out of memory. */
static void tensor_path(const void *tree, size_t i, struct wf_buf *out)
{
	const struct wf_tree *t = tree;
	wf_tree_path(t, t->tensor_node[i], out);
}

static bool set_tensors_json(struct wf_tree *t)
{
	return wf_tj_new(t->m, tensor_path, t, &t->tj, &t->tj_len) == WF_OK;
}

enum wf_err wf_tree_build_opts(struct wf_tree **out, const struct wf_model *m, const struct wf_tree_opts *opts,
			       char *err)
{
	*out = NULL;
	struct wf_tree *t = calloc(1, sizeof *t);
	if (!t)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	t->m = m;
	t->npy = opts && opts->npy;
	t->suffix = opts && opts->suffix && !t->npy;
	if (opts && opts->preview &&
	    (!(t->previews = wf_previews_new()) ||
	     !(t->preview_node = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *t->preview_node)))) {
		wf_tree_free(t);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	static const char empty[] = "{}";
	static atomic_uint_fast64_t meta_ids;
	t->meta_id = atomic_fetch_add(&meta_ids, 1) + 1;
	bool have = m->metadata_json && m->metadata_json_len;
	enum wf_err rc = m->meta_gen ? wf_meta_files_gguf(m, &t->meta, &t->n_meta)
				     : wf_meta_files(have ? m->metadata_json : empty, have ? m->metadata_json_len : 2,
						     &t->meta, &t->n_meta, &t->meta_text);
	if (rc != WF_OK) {
		wf_tree_free(t);
		return wf_fail(err, rc, "metadata.json: cannot split it into files");
	}
	struct builder b = {.t = t, .m = m, .gguf = opts && opts->gguf_set ? opts->gguf : WF_FTYPE_AUTO,
			    .gguf_set = opts && opts->gguf_set};
	struct wf_buf comp = {0}, name = {0};
	uint64_t cap = node_cap(t, m);
	if (cap > (1u << 30)) {
		rc = wf_fail(err, WF_ERR_UNSUP, "tensor names make %" PRIu64 " path components, more than weightfs allows (2^30)", cap);
		goto fail;
	}
	b.cap = (uint32_t)cap;
	b.n_slots = 16;
	while (b.n_slots < cap * 2)
		b.n_slots *= 2;
	t->nodes = malloc(cap * sizeof *t->nodes);
	b.slots = malloc(b.n_slots * sizeof *b.slots);
	t->tensor_node = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *t->tensor_node);
	if (!t->nodes || !b.slots || !t->tensor_node)
		goto nomem;
	wf_hash_key_init(&b.key);

	if (!add_all_dirs(&b, &comp, &t->max_dirs))
		goto nomem;
	if (m->meta_gen) { /* a GGUF's text is made on read, never kept (wf_meta.h) */
		t->nodes[1].kind = WF_NODE_MJSON;
	} else {
		t->nodes[1].blob = m->metadata_json;
		t->nodes[1].blob_len = m->metadata_json_len;
	}
	for (size_t i = 0; i < m->n_tensors; i++)
		if (!add_tensor_file(&b, i, t->max_dirs, &comp, &name))
			goto nomem;
	if ((rc = add_extras(&b, m, &name, err)) != WF_OK)
		goto fail;
	free(b.slots);
	b.slots = NULL;
	wf_buf_free(&comp);
	wf_buf_free(&name);
	if (t->n_nodes < b.cap) {
		/* give back what the upper bound over-reserved */
		struct wf_node *shrunk = realloc(t->nodes, t->n_nodes * sizeof *t->nodes);
		if (shrunk)
			t->nodes = shrunk;
	}
	if (!link_children(t))
		goto nomem;

	if (!set_tensors_json(t))
		goto nomem;
#ifdef __GLIBC__
	/* Parsing and building freed far more than the tree keeps (cJSON's
	 * tree, the build table); glibc keeps freed heap pages resident
	 * unless asked.  The daemon's memory is promised in docs/security.md. */
	malloc_trim(0);
#endif
	*out = t;
	return WF_OK;

nomem:
	rc = wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree");
fail:
	wf_buf_free(&comp);
	wf_buf_free(&name);
	free(b.slots);
	wf_tree_free(t);
	return rc;
}

void wf_tree_set_summary(struct wf_tree *t, char *text, size_t len)
{
	free(t->summary);
	t->summary = text;
	t->nodes[t->summary_node].blob = text;
	t->nodes[t->summary_node].blob_len = len;
}

void wf_tree_free(struct wf_tree *t)
{
	if (!t)
		return;
	free_names(t);
	free(t->nodes);
	free(t->child_pool);
	free(t->tensor_node);
	wf_previews_free(t->previews);
	free(t->preview_node);
	wf_tj_free(t->tj);
	wf_st_stream_free(t->st_stream);
	wf_gguf_file_free(t->gguf);
	free(t->gguf_why);
	wf_hf_file_free(t->hf);
	free(t->hf_why);
	free(t->st_offsets);
	free(t->summary);
	for (size_t i = 0; i < t->n_meta; i++)
		free(t->meta[i].name);
	free(t->meta);
	free(t->meta_text);
	free(t);
}
