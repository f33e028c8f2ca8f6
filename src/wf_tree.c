/* wf_tree.c - tensor names to a directory tree (rules in wf_tree.h). */
#include "wf_tree.h"
#include "wf_buf.h"
#include "wf_types.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NAME_MAX_BYTES 255
/* bytes of a long component kept before its "%~" + 16-hex-digit hash */
#define LONG_KEEP 200

static uint64_t fnv1a(const void *p, size_t n, uint64_t h)
{
	const uint8_t *s = p;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}

#define FNV_SEED 1469598103934665603ULL

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
	wf_buf_printf(out, "%%~%016llx", (unsigned long long)fnv1a(orig, n, FNV_SEED));
}

void wf_escape_component(const uint8_t *s, size_t n, struct wf_buf *out)
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
	for (size_t i = 0; i < n;) {
		uint8_t c = s[i];
		size_t l = (c >= 0x80) ? wf_utf8_seq(s + i, n - i) : 1;
		if (c == '%' || c == '/' || c == '.' || c < 0x20 || c == 0x7F || l == 0) {
			wf_buf_printf(out, "%%%02X", c);
			i++;
		} else {
			wf_buf_put(out, s + i, l);
			i += l;
		}
	}
	shorten(out, start, s, n, NAME_MAX_BYTES);
}

struct builder {
	struct wf_tree *t;
	const struct wf_model *m;
	uint32_t cap;        /* nodes allocated */
	char *err;
};

static size_t slot_of(const struct wf_tree *t, uint32_t parent, const char *name, size_t len)
{
	uint64_t h = wf_hash(&t->key, name, len) ^ (uint64_t)parent * 0x9E3779B97F4A7C15ULL;
	return (size_t)(h ^ h >> 32) & (t->n_slots - 1);
}

uint32_t wf_tree_lookup(const struct wf_tree *t, uint32_t dir, const char *name, size_t len)
{
	if (dir >= t->n_nodes || t->nodes[dir].kind != WF_NODE_DIR)
		return WF_NO_NODE;
	for (size_t i = slot_of(t, dir, name, len);; i = (i + 1) & (t->n_slots - 1)) {
		uint32_t n = t->slots[i];
		if (n == WF_NO_NODE)
			return WF_NO_NODE;
		const struct wf_node *nd = &t->nodes[n];
		if (nd->parent == dir && nd->name_len == len && memcmp(nd->name, name, len) == 0)
			return n;
	}
}

/* Adds a node named name under parent (caller checked it is free). */
static uint32_t add_node(struct builder *b, uint32_t parent, const char *name, size_t len,
			 enum wf_node_kind kind)
{
	struct wf_tree *t = b->t;
	if (t->n_nodes >= b->cap)
		return WF_NO_NODE; /* cannot happen: cap is an upper bound */
	uint32_t idx = t->n_nodes;
	struct wf_node *nd = &t->nodes[idx];
	nd->name = malloc(len + 1);
	if (!nd->name)
		return WF_NO_NODE;
	memcpy(nd->name, name, len);
	nd->name[len] = '\0';
	nd->name_len = (uint32_t)len;
	nd->parent = parent;
	nd->kind = kind;
	t->n_nodes++;
	size_t i = slot_of(t, parent, name, len);
	while (t->slots[i] != WF_NO_NODE)
		i = (i + 1) & (t->n_slots - 1);
	t->slots[i] = idx;
	return idx;
}

/* Calls fn for each escaped component of a tensor name; returns the
 * number of components.  `comp` is reused across calls. */
static size_t split_name(const struct wf_tensor *tn, struct wf_buf *comp, size_t *ends, size_t max)
{
	size_t k = 0, from = 0;
	comp->len = 0;
	for (size_t i = 0; i <= tn->name_len; i++) {
		if (i == tn->name_len || tn->name[i] == '.') {
			wf_escape_component((const uint8_t *)tn->name + from, i - from, comp);
			if (k < max)
				ends[k] = comp->len;
			k++;
			from = i + 1;
		}
	}
	return k;
}

static int child_cmp(const void *a, const void *b, void *ctx)
{
	const struct wf_node *nodes = ctx;
	return strcmp(nodes[*(const uint32_t *)a].name, nodes[*(const uint32_t *)b].name);
}

static void tensors_json(struct wf_tree *t, const struct wf_model *m, struct wf_buf *b)
{
	if (m->format == WF_FMT_GGUF)
		wf_buf_printf(b, "{\"format\": \"gguf\", \"version\": %u, \"alignment\": %u, \"data_offset\": %" PRIu64
			      ", \"metadata_count\": %" PRIu64 ",\n \"tensors\": [",
			      m->version, m->alignment, m->data_offset, m->n_kv);
	else
		wf_buf_printf(b, "{\"format\": \"safetensors\", \"data_offset\": %" PRIu64
			      ", \"metadata_count\": %" PRIu64 ",\n \"tensors\": [",
			      m->data_offset, m->n_kv);
	for (size_t i = 0; i < m->n_tensors && !b->oom; i++) {
		const struct wf_tensor *tn = &m->tensors[i];
		const struct wf_type *ty = wf_type_get(tn->type);
		wf_buf_puts(b, i ? ",\n  {\"name\": " : "\n  {\"name\": ");
		wf_buf_json_str(b, tn->name, tn->name_len);
		wf_buf_puts(b, ", \"path\": \"");
		size_t at = b->len;
		wf_tree_path(t, t->tensor_node[i], b);
		/* paths are ASCII-safe except '"' and '\\', which need escaping */
		if (!b->oom && memchr(b->data + at, '"', b->len - at) == NULL &&
		    memchr(b->data + at, '\\', b->len - at) == NULL) {
			wf_buf_putc(b, '"');
		} else if (!b->oom) {
			struct wf_buf p = {0};
			wf_buf_put(&p, b->data + at, b->len - at);
			b->len = at - 1;
			wf_buf_json_str(b, p.data, p.len);
			wf_buf_free(&p);
		}
		wf_buf_printf(b, ", \"type\": \"%s\", \"dtype\": \"%s\", \"shape\": [", ty->name, ty->dtype);
		for (uint32_t d = 0; d < tn->ndim; d++)
			wf_buf_printf(b, d ? ", %" PRIu64 : "%" PRIu64, tn->shape[d]);
		wf_buf_printf(b, "], \"size\": %" PRIu64 ", ", tn->size);
		const char *file = m->parts[tn->part].name;
		if (file) {
			wf_buf_puts(b, "\"file\": ");
			wf_buf_json_str(b, file, strlen(file));
			wf_buf_puts(b, ", ");
		}
		wf_buf_printf(b, "\"offset\": %" PRIu64 ", \"nbytes\": %" PRIu64 "}", tn->offset, tn->nbytes);
	}
	wf_buf_puts(b, m->n_tensors ? "\n ]}\n" : "]}\n");
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

enum wf_err wf_tree_build(struct wf_tree **out, const struct wf_model *m, char *err)
{
	*out = NULL;
	struct wf_tree *t = calloc(1, sizeof *t);
	if (!t)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	struct builder b = {.t = t, .m = m, .err = err};
	struct wf_buf comp = {0}, name = {0}, json = {0};
	size_t *ends = NULL;
	size_t max_comps = 1;
	enum wf_err rc = WF_OK;

	/* Upper bound on nodes: root, two blobs, and per tensor one node per
	 * component (its directories and its file). */
	uint64_t cap = 4 + m->n_sidecars;
	for (size_t i = 0; i < m->n_tensors; i++) {
		size_t k = 1;
		for (size_t j = 0; j < m->tensors[i].name_len; j++)
			k += m->tensors[i].name[j] == '.';
		cap += k;
		if (k > max_comps)
			max_comps = k;
	}
	if (cap > (1u << 30)) {
		rc = wf_fail(err, WF_ERR_UNSUP, "tensor names make %" PRIu64 " path components, more than weightfs allows (2^30)", cap);
		goto fail;
	}
	b.cap = (uint32_t)cap;
	t->n_slots = 16;
	while (t->n_slots < cap * 2)
		t->n_slots *= 2;
	t->nodes = calloc(cap, sizeof *t->nodes);
	t->slots = malloc(t->n_slots * sizeof *t->slots);
	t->tensor_node = calloc(m->n_tensors ? m->n_tensors : 1, sizeof *t->tensor_node);
	ends = malloc(max_comps * sizeof *ends);
	if (!t->nodes || !t->slots || !t->tensor_node || !ends)
		goto nomem;
	memset(t->slots, 0xFF, t->n_slots * sizeof *t->slots);
	wf_hash_key_init(&t->key);

	if (add_node(&b, 0, "", 0, WF_NODE_DIR) != 0 ||
	    add_node(&b, 0, "metadata.json", 13, WF_NODE_BLOB) == WF_NO_NODE ||
	    add_node(&b, 0, "tensors.json", 12, WF_NODE_BLOB) == WF_NO_NODE)
		goto nomem;
	t->nodes[1].blob = m->metadata_json;
	t->nodes[1].blob_len = m->metadata_json_len;

	/* Pass 1: every directory, so that pass 2 knows which leaves clash. */
	for (size_t i = 0; i < m->n_tensors; i++) {
		size_t k = split_name(&m->tensors[i], &comp, ends, max_comps);
		if (comp.oom)
			goto nomem;
		uint32_t dir = 0;
		for (size_t c = 0; c + 1 < k; c++) {
			size_t from = c ? ends[c - 1] : 0;
			uint32_t n = wf_tree_lookup(t, dir, comp.data + from, ends[c] - from);
			if (n == WF_NO_NODE && (n = add_node(&b, dir, comp.data + from, ends[c] - from, WF_NODE_DIR)) == WF_NO_NODE)
				goto nomem;
			dir = n;
		}
	}
	/* Pass 2: the tensor files. */
	for (size_t i = 0; i < m->n_tensors; i++) {
		size_t k = split_name(&m->tensors[i], &comp, ends, max_comps);
		if (comp.oom)
			goto nomem;
		uint32_t dir = 0;
		for (size_t c = 0; c + 1 < k; c++) {
			size_t from = c ? ends[c - 1] : 0;
			dir = wf_tree_lookup(t, dir, comp.data + from, ends[c] - from);
		}
		size_t from = k > 1 ? ends[k - 2] : 0;
		name.len = 0;
		wf_buf_put(&name, comp.data + from, ends[k - 1] - from);
		size_t base = name.len;
		uint32_t clash = wf_tree_lookup(t, dir, name.data, name.len);
		if (clash != WF_NO_NODE && t->nodes[clash].kind == WF_NODE_DIR) {
			/* the suffix must not push the component past NAME_MAX */
			const struct wf_tensor *tn = &m->tensors[i];
			const char *dot = memrchr(tn->name, '.', tn->name_len);
			size_t last = dot ? (size_t)(dot - tn->name) + 1 : 0;
			shorten(&name, 0, (const uint8_t *)tn->name + last, tn->name_len - last,
				NAME_MAX_BYTES - (sizeof ".tensor" - 1));
			wf_buf_puts(&name, ".tensor");
			base = name.len;
		}
		for (unsigned dup = 2; !name.oom && wf_tree_lookup(t, dir, name.data, name.len) != WF_NO_NODE; dup++) {
			name.len = base;
			wf_buf_printf(&name, "~%u", dup);
		}
		if (name.oom)
			goto nomem;
		uint32_t n = add_node(&b, dir, name.data, name.len, WF_NODE_TENSOR);
		if (n == WF_NO_NODE)
			goto nomem;
		t->nodes[n].tensor = (uint32_t)i;
		t->tensor_node[i] = n;
	}

	/* A model of several files: parts.json.  A model folder: its small
	 * files, under their own names.  A file of the folder whose name the
	 * tree already gives (metadata.json, tensors.json, parts.json, or a
	 * tensor's top-level entry) is left out: what weightfs makes of the
	 * model comes first, and one stray file must not stop the mount. */
	if (m->parts_json) {
		if (wf_tree_lookup(t, 0, "parts.json", 10) != WF_NO_NODE) {
			rc = wf_fail(err, WF_ERR_UNSUP, "parts.json: the mount already has an entry of that name");
			goto fail;
		}
		uint32_t n = add_node(&b, 0, "parts.json", 10, WF_NODE_BLOB);
		if (n == WF_NO_NODE)
			goto nomem;
		t->nodes[n].blob = m->parts_json;
		t->nodes[n].blob_len = m->parts_json_len;
	}
	for (size_t i = 0; i < m->n_sidecars; i++) {
		const struct wf_sidecar *sc = &m->sidecars[i];
		if (wf_tree_lookup(t, 0, sc->name, strlen(sc->name)) != WF_NO_NODE)
			continue;
		uint32_t n = add_node(&b, 0, sc->name, strlen(sc->name), WF_NODE_BLOB);
		if (n == WF_NO_NODE)
			goto nomem;
		t->nodes[n].blob = sc->data;
		t->nodes[n].blob_len = sc->len;
	}

	/* Children lists, sorted so readdir is stable and ordered. */
	t->child_pool = malloc((t->n_nodes ? t->n_nodes : 1) * sizeof *t->child_pool);
	if (!t->child_pool)
		goto nomem;
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		struct wf_node *p = &t->nodes[t->nodes[i].parent];
		p->n_children++;
		p->n_subdirs += t->nodes[i].kind == WF_NODE_DIR;
	}
	uint32_t at = 0;
	for (uint32_t i = 0; i < t->n_nodes; i++) {
		t->nodes[i].children = t->child_pool + at;
		at += t->nodes[i].n_children;
		t->nodes[i].n_children = 0;
	}
	for (uint32_t i = 1; i < t->n_nodes; i++) {
		struct wf_node *p = &t->nodes[t->nodes[i].parent];
		p->children[p->n_children++] = i;
	}
	for (uint32_t i = 0; i < t->n_nodes; i++)
		if (t->nodes[i].n_children > 1)
			qsort_r(t->nodes[i].children, t->nodes[i].n_children, sizeof(uint32_t), child_cmp, t->nodes);

	tensors_json(t, m, &json);
	if (!wf_buf_finish(&json))
		goto nomem;
	t->tensors_json = json.data;
	t->tensors_json_len = json.len;
	t->nodes[2].blob = t->tensors_json;
	t->nodes[2].blob_len = t->tensors_json_len;
	wf_buf_free(&comp);
	wf_buf_free(&name);
	free(ends);
	*out = t;
	return WF_OK;

nomem:
	rc = wf_fail(err, WF_ERR_NOMEM, "out of memory building the tree");
fail:
	wf_buf_free(&comp);
	wf_buf_free(&name);
	wf_buf_free(&json);
	free(ends);
	wf_tree_free(t);
	return rc;
}

void wf_tree_free(struct wf_tree *t)
{
	if (!t)
		return;
	for (uint32_t i = 0; i < t->n_nodes; i++)
		free(t->nodes[i].name);
	free(t->nodes);
	free(t->slots);
	free(t->child_pool);
	free(t->tensor_node);
	free(t->tensors_json);
	free(t);
}
