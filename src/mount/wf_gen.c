/* wf_gen.c - generated file contents (see wf_gen.h). */
#include "mount/wf_gen.h"
#include "mount/wf_gen_int.h"
#include "base/wf_buf.h"
#include "base/wf_names.h"
#include "model/wf_gguf_meta.h"
#include "model/wf_meta.h"
#include "view/wf_view.h"
#include "codec/wf_types.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ----------------------------------------------------------------- .npy */

size_t wf_npy_header(const struct wf_tensor *t, char *out)
{
	uint64_t dims[WF_MAX_DIMS];
	uint32_t nd = wf_view_shape(t, dims);
	char dict[WF_NPY_HEADER_MAX];
	int k = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", wf_view_descr(t));
	for (uint32_t d = 0; d < nd; d++)
		k += snprintf(dict + k, sizeof dict - (size_t)k, d ? ", %" PRIu64 : "%" PRIu64, dims[d]);
	k += snprintf(dict + k, sizeof dict - (size_t)k, nd == 1 ? ",), }" : "), }");
	/* magic (6), version (2), header length (2), dict, padding, '\n' */
	size_t total = (10 + (size_t)k + 1 + 63) / 64 * 64;
	memcpy(out, "\x93NUMPY\x01\x00", 8);
	size_t hl = total - 10;
	out[8] = (char)(hl & 0xff);
	out[9] = (char)(hl >> 8);
	memcpy(out + 10, dict, (size_t)k);
	memset(out + 10 + k, ' ', total - 10 - (size_t)k - 1);
	out[total - 1] = '\n';
	return total;
}

/* ---------------------------------------------------- scanning our JSON */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\n' || s[i] == '\t' || s[i] == '\r'))
		i++;
	return i;
}

/* The end (one past the closing quote) of the string at s[i] == '"', or 0. */
static size_t string_end(const char *s, size_t n, size_t i)
{
	for (i++; i < n; i++) {
		if (s[i] == '\\')
			i++;
		else if (s[i] == '"')
			return i + 1;
	}
	return 0;
}

/* The end of the JSON value at s[i], or 0. */
static size_t value_end(const char *s, size_t n, size_t i)
{
	if (i >= n)
		return 0;
	if (s[i] == '"')
		return string_end(s, n, i);
	if (s[i] != '[' && s[i] != '{') {
		while (i < n && !strchr(",}] \n\t\r", s[i]))
			i++;
		return i;
	}
	size_t depth = 0;
	while (i < n) {
		if (s[i] == '"') {
			i = string_end(s, n, i);
			if (!i)
				return 0;
			continue;
		}
		if (s[i] == '[' || s[i] == '{')
			depth++;
		else if ((s[i] == ']' || s[i] == '}') && --depth == 0)
			return i + 1;
		i++;
	}
	return 0;
}

static unsigned hex4(const char *p)
{
	unsigned v = 0;
	for (int k = 0; k < 4; k++) {
		char c = p[k];
		v = v * 16 + (unsigned)(c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
					: c >= 'A' && c <= 'F' ? c - 'A' + 10 : 0);
	}
	return v;
}

static void put_utf8(struct wf_buf *b, unsigned cp)
{
	char u[4];
	size_t k;
	if (cp < 0x80) {
		u[0] = (char)cp, k = 1;
	} else if (cp < 0x800) {
		u[0] = (char)(0xc0 | cp >> 6), u[1] = (char)(0x80 | (cp & 0x3f)), k = 2;
	} else if (cp < 0x10000) {
		u[0] = (char)(0xe0 | cp >> 12), u[1] = (char)(0x80 | ((cp >> 6) & 0x3f));
		u[2] = (char)(0x80 | (cp & 0x3f)), k = 3;
	} else {
		u[0] = (char)(0xf0 | cp >> 18), u[1] = (char)(0x80 | ((cp >> 12) & 0x3f));
		u[2] = (char)(0x80 | ((cp >> 6) & 0x3f)), u[3] = (char)(0x80 | (cp & 0x3f)), k = 4;
	}
	wf_buf_put(b, u, k);
}

/* Appends the bytes the JSON string s[i..end) stands for: escapes undone,
 * \udcXX (our stand-in for a byte that is not UTF-8) back to that byte. */
static void decode_string(const char *s, size_t i, size_t end, struct wf_buf *b)
{
	for (i++, end--; i < end; i++) {
		if (s[i] != '\\') {
			wf_buf_putc(b, s[i]);
			continue;
		}
		char c = s[++i];
		switch (c) {
		case 'n': wf_buf_putc(b, '\n'); break;
		case 't': wf_buf_putc(b, '\t'); break;
		case 'r': wf_buf_putc(b, '\r'); break;
		case 'b': wf_buf_putc(b, '\b'); break;
		case 'f': wf_buf_putc(b, '\f'); break;
		case 'u': {
			if (i + 4 >= end)
				return;
			unsigned cp = hex4(s + i + 1);
			i += 4;
			if (cp >= 0xd800 && cp < 0xdc00 && i + 6 < end && s[i + 1] == '\\' && s[i + 2] == 'u') {
				unsigned lo = hex4(s + i + 3);
				if (lo >= 0xdc00 && lo < 0xe000) {
					put_utf8(b, 0x10000 + ((cp - 0xd800) << 10) + (lo - 0xdc00));
					i += 6;
					break;
				}
			}
			if (cp >= 0xdc80 && cp <= 0xdcff)
				wf_buf_putc(b, (char)(cp & 0xff));
			else
				put_utf8(b, cp);
			break;
		}
		default: wf_buf_putc(b, c); break; /* \" \\ \/ */
		}
	}
}

/* Appends s[0..n) as a JSON string that is valid UTF-8 throughout, as
 * safetensors readers require: a byte that is not part of valid UTF-8
 * becomes the character U+00XX. */
static void json_str_utf8(struct wf_buf *b, const char *s, size_t n)
{
	size_t i = 0, from = 0;
	struct wf_buf tmp = {0};
	bool clean = true;
	while (i < n) {
		uint8_t c = (uint8_t)s[i];
		size_t l = c < 0x80 ? 1 : wf_utf8_seq((const uint8_t *)s + i, n - i);
		if (l == 0) {
			if (clean) {
				clean = false;
				wf_buf_put(&tmp, s, i);
			} else {
				wf_buf_put(&tmp, s + from, i - from);
			}
			put_utf8(&tmp, c);
			from = ++i;
			continue;
		}
		i += l;
	}
	if (clean) {
		wf_buf_json_str(b, s, n);
		return;
	}
	wf_buf_put(&tmp, s + from, n - from);
	if (tmp.oom)
		b->oom = true;
	else
		wf_buf_json_str(b, tmp.data, tmp.len);
	wf_buf_free(&tmp);
}

/* Calls fn for each key/value of the top-level object in json. */
typedef void (*kv_fn)(void *ctx, const char *json, size_t k0, size_t k1, size_t v0, size_t v1);

static enum wf_err each_kv(const char *s, size_t n, kv_fn fn, void *ctx)
{
	size_t i = skip_ws(s, n, 0), k0, k1, v0, v1;
	if (i >= n || s[i] != '{')
		return WF_ERR_FORMAT;
	i = skip_ws(s, n, i + 1);
	while (i < n && s[i] != '}') {
		if (!wf_gen_kv_at(s, n, i, &k0, &k1, &v0, &v1, &i))
			return WF_ERR_FORMAT;
		fn(ctx, s, k0, k1, v0, v1);
		i = skip_ws(s, n, i);
		if (i < n && s[i] == ',')
			i = skip_ws(s, n, i + 1);
	}
	return WF_OK;
}

/* ------------------------------------------------------ metadata files */

/* Where file i's name and text are in meta_ctx.text: offsets, until the
 * text stops moving. */
struct meta_at {
	size_t name, data;
	bool in_text; /* the value is a string, decoded into text */
};

struct meta_ctx {
	struct wf_buf text;
	struct wf_meta_file *files;
	struct meta_at *at; /* [n], beside files */
	size_t n, cap;
	bool oom;
};

static void meta_kv(void *vctx, const char *s, size_t k0, size_t k1, size_t v0, size_t v1)
{
	struct meta_ctx *c = vctx;
	if (c->n == c->cap) {
		size_t cap = c->cap ? 2 * c->cap : 64;
		struct wf_meta_file *f = realloc(c->files, cap * sizeof *f);
		if (f)
			c->files = f;
		struct meta_at *at = f ? realloc(c->at, cap * sizeof *at) : NULL;
		if (at)
			c->at = at;
		if (!at) {
			c->oom = true;
			return;
		}
		c->cap = cap;
	}
	struct wf_meta_file *f = &c->files[c->n];
	struct meta_at *at = &c->at[c->n];
	at->name = c->text.len;
	decode_string(s, k0, k1, &c->text);
	f->name_len = c->text.len - at->name;
	at->in_text = s[v0] == '"';
	if (at->in_text) {
		at->data = c->text.len;
		decode_string(s, v0, v1, &c->text);
		f->len = c->text.len - at->data;
	} else {
		f->data = s + v0;
		f->len = v1 - v0;
	}
	c->n++;
}

enum wf_err wf_meta_files(const char *json, size_t json_len, struct wf_meta_file **files, size_t *n,
			  char **text)
{
	struct meta_ctx c = {0};
	*files = NULL;
	*n = 0;
	*text = NULL;
	enum wf_err rc = each_kv(json, json_len, meta_kv, &c);
	if (rc == WF_OK && (c.oom || c.text.oom || !wf_buf_finish(&c.text)))
		rc = WF_ERR_NOMEM;
	if (rc == WF_OK) {
		for (size_t i = 0; i < c.n; i++) {
			/* names are copied: a file name must be NUL-terminated */
			c.files[i].name = malloc(c.files[i].name_len + 1);
			if (!c.files[i].name) {
				for (size_t j = 0; j < i; j++)
					free(c.files[j].name);
				rc = WF_ERR_NOMEM;
				break;
			}
			memcpy(c.files[i].name, c.text.data + c.at[i].name, c.files[i].name_len);
			c.files[i].name[c.files[i].name_len] = '\0';
			if (c.at[i].in_text)
				c.files[i].data = c.text.data + c.at[i].data;
			c.files[i].json = !c.at[i].in_text;
		}
	}
	free(c.at);
	if (rc != WF_OK) {
		free(c.files);
		wf_buf_free(&c.text);
		return rc;
	}
	*files = c.files;
	*n = c.n;
	*text = c.text.data;
	return WF_OK;
}

/* A GGUF's keys, each its raw bytes, from the file: decode_string of the
 * key's JSON text gives back exactly those bytes (wf_buf_json_str's
 * escapes and \udcXX stand-ins are undone), so the names are today's. */
enum wf_err wf_meta_files_gguf(const struct wf_model *m, struct wf_meta_file **files, size_t *n)
{
	size_t nk = wf_gguf_meta_count(m->meta_gen);
	struct wf_meta_file *f = calloc(nk ? nk : 1, sizeof *f);
	struct wf_buf key = {0};
	enum wf_err rc = f ? WF_OK : WF_ERR_NOMEM;
	size_t i = 0;
	for (; i < nk && rc == WF_OK; i++) {
		key.len = 0;
		if ((rc = wf_meta_gguf_key(m, i, &key, NULL)) == WF_OK && (key.oom || !(f[i].name = malloc(key.len + 1))))
			rc = WF_ERR_NOMEM;
		if (rc != WF_OK)
			break;
		memcpy(f[i].name, key.data ? key.data : "", key.len);
		f[i].name[key.len] = '\0';
		f[i].name_len = key.len;
		f[i].len = (size_t)wf_gguf_meta_value_len(m->meta_gen, i);
		f[i].json = wf_gguf_meta_key(m->meta_gen, i)->type != WF_GT_STRING;
	}
	wf_buf_free(&key);
	*files = NULL;
	*n = 0;
	if (rc != WF_OK) {
		for (size_t j = 0; f && j < i; j++)
			free(f[j].name);
		free(f);
		return rc;
	}
	*files = f;
	*n = nk;
	return WF_OK;
}

/* ------------------------------------------------- model.safetensors */

/* One JSON string of the header (a key of __metadata__ or a tensor name,
 * quotes included) in the text of its list (st_keys, st_names). */
struct st_entry {
	size_t at, len;  /* where it is in the text, and its length (the variant's, when renamed) */
	char *renamed;   /* the "~N" variant when it met another, else NULL */
	bool skip;       /* a key: the model's "format" (written first) */
};

static void st_entries_free(struct st_entry *e, size_t n)
{
	for (size_t i = 0; e && i < n; i++)
		free(e[i].renamed);
	free(e);
}

/* The keys of model.safetensors' __metadata__, made unique: the model's
 * keys can meet ours ("format", "weightfs.stored_types") or each other
 * once stray bytes are written as characters (json_str_utf8), and a JSON
 * reader keeps only one of two equal keys.  A key that meets an earlier
 * one gets "~N". */
struct st_keys {
	struct wf_buf text;   /* every key, back to back */
	struct st_entry *e;   /* [n] */
	size_t n, cap;
	bool oom;
};

static void st_keys_free(struct st_keys *k)
{
	wf_buf_free(&k->text);
	st_entries_free(k->e, k->n);
}

struct st_ctx {
	struct wf_buf *b;
	struct wf_buf tmp;
	size_t count;
	struct st_keys *keys;
};

/* Adds the decoded key in d (the next key) to k. */
static void st_key_add(struct st_keys *k, const struct wf_buf *d)
{
	struct st_entry *e = &k->e[k->n++];
	e->skip = d->len == 6 && memcmp(d->data, "format", 6) == 0;
	e->at = k->text.len;
	json_str_utf8(&k->text, d->data ? d->data : "", d->len);
	e->len = k->text.len - e->at;
	e->renamed = NULL;
}

/* Room in k for one more key; false (k->oom) when out of memory. */
static bool st_key_room(struct st_keys *k)
{
	if (k->oom)
		return false;
	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 64;
		struct st_entry *e = realloc(k->e, cap * sizeof *e);
		if (!e) {
			k->oom = true;
			return false;
		}
		k->e = e;
		k->cap = cap;
	}
	return true;
}

static void st_key_collect(void *vctx, const char *s, size_t k0, size_t k1, size_t v0, size_t v1)
{
	(void)v0, (void)v1;
	struct st_ctx *c = vctx;
	if (!st_key_room(c->keys))
		return;
	c->tmp.len = 0;
	decode_string(s, k0, k1, &c->tmp);
	st_key_add(c->keys, &c->tmp);
}

/* A GGUF's keys, from the file (wf_meta.h): their raw bytes are what
 * st_key_collect decodes from the text. */
static enum wf_err st_keys_gguf(const struct wf_model *m, struct st_ctx *c)
{
	size_t n = wf_gguf_meta_count(m->meta_gen);
	for (size_t i = 0; i < n && !c->keys->oom; i++) {
		c->tmp.len = 0;
		enum wf_err rc = wf_meta_gguf_key(m, i, &c->tmp, NULL);
		if (rc != WF_OK)
			return rc;
		if (st_key_room(c->keys))
			st_key_add(c->keys, &c->tmp);
	}
	return WF_OK;
}


/* A key or name (quotes included) that met another: "key~N" for the
 * first N >= 2 not yet in seen, put there; NULL when out of memory. */
static char *variant(const char *key, size_t len, struct wf_names *seen, size_t *out_len)
{
	for (unsigned v = 2;; v++) {
		size_t cap = len + 16;
		char *r = malloc(cap);
		if (!r)
			return NULL;
		int w = snprintf(r, cap, "%.*s~%u\"", (int)len - 1, key, v);
		if (wf_names_get(seen, r, (size_t)w) == WF_NAMES_NONE) {
			wf_names_put(seen, r, (size_t)w, 1);
			*out_len = (size_t)w;
			return r;
		}
		free(r);
	}
}

/* Collects the model's keys and makes them unique among themselves and
 * the keys weightfs writes (ours first: they must keep their names). */
static enum wf_err st_keys_make(const struct wf_model *m, bool stored_types, struct st_keys *k)
{
	struct st_ctx c = {.keys = k};
	enum wf_err rc = m->meta_gen ? st_keys_gguf(m, &c)
				     : each_kv(m->metadata_json, m->metadata_json_len, st_key_collect, &c);
	wf_buf_free(&c.tmp);
	if (rc != WF_OK)
		return m->meta_gen ? rc : WF_ERR_FORMAT;
	if (k->oom || k->text.oom || c.tmp.oom)
		return WF_ERR_NOMEM;
	struct wf_names seen = {0};
	if (!wf_names_init(&seen, 2 * k->n + 2)) {
		wf_names_free(&seen);
		return WF_ERR_NOMEM;
	}
	wf_names_put(&seen, "\"format\"", 8, 0);
	if (stored_types)
		wf_names_put(&seen, "\"weightfs.stored_types\"", 23, 0);
	rc = WF_OK;
	for (size_t i = 0; i < k->n && rc == WF_OK; i++) {
		struct st_entry *e = &k->e[i];
		const char *key = k->text.data + e->at;
		if (e->skip || wf_names_put(&seen, key, e->len, 1) == WF_NAMES_NONE)
			continue;
		if (!(e->renamed = variant(key, e->len, &seen, &e->len)))
			rc = WF_ERR_NOMEM;
	}
	wf_names_free(&seen);
	return rc;
}

static void st_meta_kv(void *vctx, const char *s, size_t k0, size_t k1, size_t v0, size_t v1)
{
	(void)k0, (void)k1;
	struct st_ctx *c = vctx;
	size_t i = c->count++;
	const struct st_keys *k = c->keys;
	if (i >= k->n || k->e[i].skip)
		return; /* "format" is written first, from this very entry (see wf_st_header) */
	wf_buf_putc(c->b, ',');
	wf_buf_put(c->b, k->e[i].renamed ? k->e[i].renamed : k->text.data + k->e[i].at, k->e[i].len);
	wf_buf_putc(c->b, ':');
	if (s[v0] == '"') {
		c->tmp.len = 0;
		decode_string(s, v0, v1, &c->tmp);
		json_str_utf8(c->b, c->tmp.data ? c->tmp.data : "", c->tmp.len);
	} else {
		wf_buf_json_str(c->b, s + v0, v1 - v0); /* numbers and arrays as their JSON text */
	}
}

/* The model's own "format" value, if it has one, decoded into out. */
static void find_format(void *vctx, const char *s, size_t k0, size_t k1, size_t v0, size_t v1)
{
	struct wf_buf *out = vctx;
	if (k1 - k0 == 8 && memcmp(s + k0, "\"format\"", 8) == 0 && s[v0] == '"') {
		out->len = 0;
		decode_string(s, v0, v1, out);
		wf_buf_putc(out, '\0');
	}
}

/* Tensor names as safetensors can hold them (valid UTF-8 JSON strings,
 * quotes included), made unique. */
struct st_names {
	struct wf_buf text;  /* every name, back to back */
	struct st_entry *e;  /* [n] (skip unused) */
	size_t n;
};

static void st_names_free(struct st_names *sn)
{
	wf_buf_free(&sn->text);
	st_entries_free(sn->e, sn->n);
}

static const char *st_name(const struct st_names *sn, size_t i)
{
	return sn->e[i].renamed ? sn->e[i].renamed : sn->text.data + sn->e[i].at;
}

static enum wf_err st_names_make(const struct wf_model *m, struct st_names *sn)
{
	struct wf_names seen = {0};
	size_t nt = m->n_tensors;
	enum wf_err rc = WF_ERR_NOMEM;
	sn->n = nt;
	sn->e = calloc(nt + 1, sizeof *sn->e);
	if (!sn->e || !wf_names_init(&seen, nt * 2 + 1))
		goto out;
	for (size_t i = 0; i < nt; i++) {
		sn->e[i].at = sn->text.len;
		json_str_utf8(&sn->text, m->tensors[i].name, m->tensors[i].name_len);
		sn->e[i].len = sn->text.len - sn->e[i].at;
	}
	if (sn->text.oom)
		goto out;
	wf_names_put(&seen, "\"__metadata__\"", 14, 0);
	/* a name equal to another once its stray bytes were mapped (rare) gets the first free "~N" */
	for (size_t i = 0; i < nt; i++) {
		struct st_entry *e = &sn->e[i];
		const char *nm = sn->text.data + e->at;
		if (wf_names_put(&seen, nm, e->len, 1) != WF_NAMES_NONE && !(e->renamed = variant(nm, e->len, &seen, &e->len)))
			goto out;
	}
	rc = WF_OK;
out:
	wf_names_free(&seen);
	return rc;
}

/* "__metadata__": the model's "format" if it has one, else "pt", first;
 * then every key/value as a string; then the ggml types of tensors shown as
 * U8 blocks, so they can be decoded. */
static enum wf_err put_st_metadata(struct wf_buf *b, const struct wf_model *m, const struct st_names *sn)
{
	struct wf_buf fmt = {0}, types = {0};
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		if (strcmp(wf_view_st_dtype(t), "U8") != 0 || t->type == WF_T_U8)
			continue;
		wf_buf_puts(&types, types.len ? "," : "{");
		wf_buf_put(&types, st_name(sn, i), sn->e[i].len);
		wf_buf_printf(&types, ":\"%s\"", wf_type_get(t->type)->name);
	}
	struct st_keys keys = {0};
	enum wf_err rc = st_keys_make(m, types.len > 0, &keys);
	if (rc != WF_OK) {
		wf_buf_free(&types);
		st_keys_free(&keys);
		return rc;
	}
	each_kv(m->metadata_json, m->metadata_json_len, find_format, &fmt);
	wf_buf_puts(b, "{\"__metadata__\":{\"format\":");
	if (fmt.len && !fmt.oom)
		json_str_utf8(b, fmt.data, fmt.len - 1);
	else
		wf_buf_puts(b, "\"pt\"");
	wf_buf_free(&fmt);
	struct st_ctx c = {.b = b, .keys = &keys};
	rc = each_kv(m->metadata_json, m->metadata_json_len, st_meta_kv, &c);
	if (c.tmp.oom)
		b->oom = true;
	wf_buf_free(&c.tmp);
	st_keys_free(&keys);
	if (rc != WF_OK) {
		wf_buf_free(&types);
		return WF_ERR_FORMAT;
	}
	if (types.len) {
		wf_buf_putc(&types, '}');
		wf_buf_puts(b, ",\"weightfs.stored_types\":");
		if (types.oom)
			b->oom = true;
		else
			wf_buf_json_str(b, types.data, types.len);
	}
	wf_buf_free(&types);
	wf_buf_putc(b, '}');
	return WF_OK;
}

/* Every tensor's entry, in model order; offs[i] gets where its data
 * starts after the header, offs[n] the end. */
static void put_st_tensors(struct wf_buf *b, const struct wf_model *m, const struct st_names *sn, uint64_t *offs)
{
	uint64_t pos = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		wf_buf_putc(b, ',');
		wf_buf_put(b, st_name(sn, i), sn->e[i].len);
		wf_buf_printf(b, ":{\"dtype\":\"%s\",\"shape\":", wf_view_st_dtype(t));
		uint64_t dims[WF_MAX_DIMS];
		uint32_t nd = wf_view_shape(t, dims);
		wf_buf_putc(b, '[');
		for (uint32_t d = 0; d < nd; d++)
			wf_buf_printf(b, d ? ",%" PRIu64 : "%" PRIu64, dims[d]);
		offs[i] = pos;
		pos += t->size;
		wf_buf_printf(b, "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}", offs[i], pos);
	}
	offs[m->n_tensors] = pos;
	wf_buf_putc(b, '}');
}

enum wf_err wf_st_header(const struct wf_model *m, char **hdr, uint64_t *hdr_len, uint64_t **offsets)
{
	struct wf_buf b = {0}, full = {0};
	struct st_names sn = {0};
	uint64_t *offs = malloc((m->n_tensors + 1) * sizeof *offs);
	enum wf_err rc = offs ? st_names_make(m, &sn) : WF_ERR_NOMEM;
	*hdr = NULL;
	if (rc == WF_OK)
		rc = put_st_metadata(&b, m, &sn);
	if (rc != WF_OK)
		goto out;
	put_st_tensors(&b, m, &sn, offs);
	/* spaces to a multiple of 8, so the data is aligned as the format allows */
	while (!b.oom && b.len % 8 != 0)
		wf_buf_putc(&b, ' ');
	/* the 8-byte length goes in front */
	uint8_t le[8];
	for (int k = 0; k < 8; k++)
		le[k] = (uint8_t)((uint64_t)b.len >> (8 * k));
	wf_buf_put(&full, le, 8);
	wf_buf_put(&full, b.data, b.len);
	rc = WF_ERR_NOMEM;
	if (b.oom || !wf_buf_finish(&full))
		goto out;
	*hdr = full.data;
	*hdr_len = full.len;
	*offsets = offs;
	full.data = NULL;
	offs = NULL;
	rc = WF_OK;
out:
	wf_buf_free(&b);
	wf_buf_free(&full);
	st_names_free(&sn);
	free(offs);
	return rc;
}

/* ------------------------------------- shared with wf_st_stream.c */

void wf_gen_decode_string(const char *s, size_t i, size_t end, struct wf_buf *b)
{
	decode_string(s, i, end, b);
}

void wf_gen_json_str_utf8(struct wf_buf *b, const char *s, size_t n)
{
	json_str_utf8(b, s, n);
}

bool wf_gen_kv_at(const char *s, size_t n, size_t i, size_t *k0, size_t *k1, size_t *v0, size_t *v1, size_t *next)
{
	/* one key and its value (each_kv walks an object with it) */
	i = skip_ws(s, n, i);
	if (i < n && s[i] == ',')
		i = skip_ws(s, n, i + 1);
	if (i >= n || s[i] != '"')
		return false;
	size_t e = string_end(s, n, i);
	if (!e)
		return false;
	size_t c = skip_ws(s, n, e);
	if (c >= n || s[c] != ':')
		return false;
	size_t a = skip_ws(s, n, c + 1), b = value_end(s, n, a);
	if (!b)
		return false;
	*k0 = i, *k1 = e, *v0 = a, *v1 = b, *next = b;
	return true;
}

bool wf_st_has_types(const struct wf_model *m)
{
	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		if (strcmp(wf_view_st_dtype(t), "U8") == 0 && t->type != WF_T_U8)
			return true;
	}
	return false;
}

void wf_st_sparse_free(struct wf_st_sparse *s)
{
	for (size_t k = 0; k < s->n; k++)
		free(s->e[k].text);
	free(s->e);
	memset(s, 0, sizeof *s);
}

/* Moves the renamed ones of e[0..n) into *out. */
static bool sparse_take(struct st_entry *e, size_t n, struct wf_st_sparse *out)
{
	size_t c = 0;
	for (size_t i = 0; i < n; i++)
		c += e[i].renamed != NULL;
	out->n = 0;
	if (!(out->e = malloc((c ? c : 1) * sizeof *out->e)))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (!e[i].renamed)
			continue;
		out->e[out->n++] = (struct wf_st_rename){.idx = i, .text = e[i].renamed, .len = e[i].len};
		e[i].renamed = NULL;
	}
	return true;
}

static const struct wf_model *cmp_model;

static int cmp_names(const void *a, const void *b)
{
	const struct wf_tensor *x = &cmp_model->tensors[*(const size_t *)a];
	const struct wf_tensor *y = &cmp_model->tensors[*(const size_t *)b];
	size_t n = x->name_len < y->name_len ? x->name_len : y->name_len;
	int c = memcmp(x->name, y->name, n);
	return c ? c : (x->name_len > y->name_len) - (x->name_len < y->name_len);
}

/* Whether no tensor name can be renamed: all valid UTF-8 (their JSON is
 * then one-to-one), none "__metadata__", none twice.  Sorting an index
 * costs 8 bytes a tensor, where st_names_make's set and copies cost about
 * 130 (1,000,000 tensors: 8 MB instead of 130 MB at the mount's peak). */
static bool names_plain(const struct wf_model *m)
{
	size_t nt = m->n_tensors;
	for (size_t i = 0; i < nt; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		if (t->name_len == 12 && memcmp(t->name, "__metadata__", 12) == 0)
			return false;
		for (size_t j = 0; j < t->name_len;) {
			size_t l = (uint8_t)t->name[j] < 0x80 ? 1 : wf_utf8_seq((const uint8_t *)t->name + j,
										t->name_len - j);
			if (!l)
				return false;
			j += l;
		}
	}
	size_t *ix = malloc((nt ? nt : 1) * sizeof *ix);
	if (!ix)
		return false;
	for (size_t i = 0; i < nt; i++)
		ix[i] = i;
	/* qsort has no context argument: the lock guards the one it reads */
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
	pthread_mutex_lock(&lock);
	cmp_model = m;
	qsort(ix, nt, sizeof *ix, cmp_names);
	bool ok = true;
	for (size_t i = 1; i < nt && ok; i++)
		ok = cmp_names(&ix[i - 1], &ix[i]) != 0;
	pthread_mutex_unlock(&lock);
	free(ix);
	return ok;
}

enum wf_err wf_st_renames(const struct wf_model *m, struct wf_st_sparse *names, struct wf_st_sparse *keys)
{
	struct st_names sn = {0};
	struct st_keys k = {0};
	memset(names, 0, sizeof *names);
	memset(keys, 0, sizeof *keys);
	enum wf_err rc = WF_OK;
	if (names_plain(m)) {
		/* nothing to rename: an empty list */
		if (!(names->e = malloc(sizeof *names->e)))
			rc = WF_ERR_NOMEM;
	} else if ((rc = st_names_make(m, &sn)) == WF_OK && !sparse_take(sn.e, sn.n, names)) {
		rc = WF_ERR_NOMEM;
	}
	if (rc == WF_OK)
		rc = st_keys_make(m, wf_st_has_types(m), &k);
	if (rc == WF_OK && !sparse_take(k.e, k.n, keys))
		rc = WF_ERR_NOMEM;
	st_names_free(&sn);
	st_keys_free(&k);
	if (rc != WF_OK) {
		wf_st_sparse_free(names);
		wf_st_sparse_free(keys);
	}
	return rc;
}
