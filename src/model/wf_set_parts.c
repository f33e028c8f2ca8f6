/* wf_set_parts.c - what every form of a model set shares: opening its files
 * as parts, reading small files beside them, llama.cpp's part names, and
 * merging validated parts into one model (wf_set_int.h). */
#include "model/wf_set.h"
#include "model/wf_set_int.h"
#include "base/wf_buf.h"
#include "base/wf_names.h"
#include "model/wf_meta.h"
#include "model/wf_open.h"
#include "model/wf_maps.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <strings.h>

static const char *const form_name[] = {"split GGUF", "safetensors index", "safetensors set"};

bool wf_set_ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

void wf_set_expect(struct wf_set_loader *L, uint64_t n_parts)
{
	L->lazy = n_parts > L->map_cap;
}

/* Dropped mappings unmapped by one call at most (wf_unmap.h). */
#define DROP_BATCH 256

void wf_set_drop_flush(struct wf_set_loader *L)
{
	wf_unmap_flush(&L->drop);
}

/* Drops the mapping of an opened part: mapped again on first read. */
static void drop_map(struct wf_set_loader *L, struct wf_model *pm)
{
	struct wf_part *p = &pm->parts[0];
	if (p->map) {
		L->drop.max = DROP_BATCH;
		if (wf_unmap_add(&L->drop, p->map, p->len))
			wf_set_drop_flush(L);
	}
	p->map = NULL;
	p->data = NULL;
	pm->data = NULL;
}

/* Opens file `name` of the model's folder as one part. */
enum wf_err wf_set_open_part(struct wf_set_loader *L, const char *name, struct wf_model **out)
{
	char inner[WF_ERRLEN], qn[WF_QPATH];
	*out = NULL;
	char *path = wf_path_join(L->dir, name);
	if (!path)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	struct stat st;
	/* L->dir is resolved: unless name is a symlink (a hub snapshot's
	 * are), dir/name is the part's resolved path */
	bool link = lstat(path, &st) != 0 || S_ISLNK(st.st_mode);
	if (link && stat(path, &st) != 0 && errno == ENOENT) {
		free(path);
		return wf_fail(L->err, WF_ERR_IO, "%s: missing", wf_quote_path(qn, sizeof qn, name));
	}
	enum wf_err rc = wf_open_file_at(out, path, !link && !strchr(name, '/'), inner);
	if (rc != WF_OK) {
		free(path);
		return wf_fail(L->err, rc, "%s: %s", wf_quote_path(qn, sizeof qn, name), inner);
	}
	struct wf_part *p = &(*out)->parts[0];
	if (link)
		p->link = path; /* its folders are searched too (mount/wf_perm.h) */
	else
		free(path);
	/* the header is parsed: its pages leave the process (the page cache
	 * keeps them), else 20,000 tiny shards hold 80 MiB of mapped pages.
	 * A part about to be unmapped in a batch of DROP_BATCH needs no madvise
	 * of its own (38 us each, the biggest cost of opening 20,000): the
	 * batch's header pages, a page or so each, stay mapped until then. */
	if (p->map && !L->lazy)
		madvise(p->map, (size_t)p->len, MADV_DONTNEED);
	if (L->fds_kept < L->fd_budget) {
		L->fds_kept++;
	} else {
		close(p->fd); /* the mapping stays; identity is then checked by path */
		p->fd = -1;
	}
	if (L->lazy)
		drop_map(L, *out); /* vm.max_map_count: 65,530 mappings by default */
	return WF_OK;
}

/* Reads a whole small file of the folder into memory (NUL-terminated). */
enum wf_err wf_set_read_small(struct wf_set_loader *L, const char *name, uint64_t max, char **data, uint64_t *len,
			      struct stat *st_out)
{
	char qb[WF_QPATH];
	const char *qn = wf_quote_path(qb, sizeof qb, name); /* for messages */
	char *path = wf_path_join(L->dir, name);
	if (!path)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	free(path);
	struct stat st;
	if (fd < 0)
		return wf_fail(L->err, WF_ERR_IO, "%s: %s", qn, errno == ENOENT ? "missing" : strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		int e = errno;
		bool reg = S_ISREG(st.st_mode);
		close(fd);
		if (!reg)
			return wf_fail(L->err, WF_ERR_IO, "%s: not a regular file", qn);
		return (uint64_t)st.st_size > max
			       ? wf_fail(L->err, WF_ERR_UNSUP, "%s: %jd bytes, more than the %" PRIu64 " allowed",
					 qn, (intmax_t)st.st_size, max)
			       : wf_fail(L->err, WF_ERR_IO, "%s: cannot stat: %s", qn, strerror(e));
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return wf_fail(L->err, WF_ERR_NOMEM, "%s: out of memory", qn);
	}
	uint64_t got = 0;
	while (got < (uint64_t)st.st_size) {
		ssize_t r = read(fd, buf + got, (size_t)st.st_size - got);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			int e = r < 0 ? errno : EIO;
			free(buf);
			close(fd);
			return wf_fail(L->err, WF_ERR_IO, "%s: cannot read: %s", qn,
				       r < 0 ? strerror(e) : "file shrank while read");
		}
		got += (uint64_t)r;
	}
	close(fd);
	buf[got] = '\0';
	*data = buf;
	*len = got;
	if (st_out)
		*st_out = st;
	return WF_OK;
}

/* Parses NAME as PREFIX-NNNNN-of-MMMMM.gguf (llama.cpp's
 * "%s-%05d-of-%05d.gguf"; more digits for more parts).  *prefix_len is
 * the length of PREFIX. */
bool wf_set_split_name(const char *name, const char *ext, size_t *prefix_len, unsigned long *no,
			    unsigned long *of)
{
	size_t n = strlen(name), e = strlen(ext);
	if (n <= e || strcasecmp(name + n - e, ext) != 0)
		return false;
	size_t end = n - e, i = end;
	while (i > 0 && isdigit((unsigned char)name[i - 1]))
		i--;
	if (end - i < 5 || end - i > 9 || i < 4 || strncmp(name + i - 4, "-of-", 4) != 0)
		return false;
	*of = strtoul(name + i, NULL, 10);
	size_t j = i - 4, k = j;
	while (k > 0 && isdigit((unsigned char)name[k - 1]))
		k--;
	if (j - k < 5 || j - k > 9 || k < 2 || name[k - 1] != '-')
		return false;
	*no = strtoul(name + k, NULL, 10);
	*prefix_len = k - 1;
	return *no >= 1 && *of >= 1 && *no <= *of;
}

char *wf_set_part_name(const char *prefix, size_t prefix_len, unsigned long no, unsigned long of, const char *ext)
{
	size_t len = prefix_len + 32 + strlen(ext);
	char *s = malloc(len);
	if (s)
		snprintf(s, len, "%.*s-%05lu-of-%05lu%s", (int)prefix_len, prefix, no, of, ext);
	return s;
}

/* Appends obj's entries whose keys are not in seen yet, noting them there
 * (a keyed hash table: a set's merge stays linear in its keys). */
static void add_entries(struct wf_meta_json *w, struct wf_names *seen, const cJSON *obj)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, obj) {
		if (w->b.oom)
			return;
		if (wf_names_put(seen, e->string, strlen(e->string), 0) != WF_NAMES_NONE)
			continue;
		char *v = cJSON_PrintUnformatted(e);
		if (!v) {
			w->b.oom = true;
			return;
		}
		wf_meta_json_key(w, e->string, strlen(e->string));
		wf_buf_puts(&w->b, v);
		free(v);
	}
}

/* metadata.json of a safetensors set: the index's metadata, then each
 * shard's __metadata__ entries whose keys are not there yet.  Every
 * shard's own metadata is also kept whole in parts.json.  The shards'
 * trees live until the end: the table of keys points into them. */
static enum wf_err st_metadata(struct wf_set_loader *L, struct wf_model *m, struct wf_model **parts, uint32_t n,
			       const cJSON *index_md)
{
	struct wf_meta_json w = {0};
	struct wf_names seen = {0};
	cJSON **mds = calloc(n ? n : 1, sizeof *mds);
	size_t total = index_md ? (size_t)cJSON_GetArraySize(index_md) : 0;
	bool ok = mds != NULL;
	for (uint32_t i = 0; ok && i < n; i++) {
		mds[i] = cJSON_ParseWithLength(parts[i]->metadata_json, parts[i]->metadata_json_len);
		ok = mds[i] != NULL; /* our own output: only memory can make it fail */
		total += ok ? (size_t)cJSON_GetArraySize(mds[i]) : 0;
	}
	if (ok && wf_names_init(&seen, total + 1)) {
		add_entries(&w, &seen, index_md);
		for (uint32_t i = 0; i < n && !w.b.oom; i++)
			add_entries(&w, &seen, mds[i]);
	} else {
		w.b.oom = true;
	}
	wf_names_free(&seen);
	for (uint32_t i = 0; mds && i < n; i++)
		cJSON_Delete(mds[i]);
	free(mds);
	return wf_meta_json_finish(&w, m, L->err);
}

/* Appends part p's metadata.json to b.  A GGUF part's is made from its
 * file (wf_meta.h), which a set of many parts has unmapped by now
 * (drop_map): it is mapped for the while through a pool of its own. */
static enum wf_err part_metadata(struct wf_model *p, struct wf_buf *b, char *err)
{
	if (!p->meta_gen || p->parts[0].data)
		return wf_meta_append(p, b, err);
	if (!(p->maps = wf_maps_new(1, 1)))
		return wf_fail(err, WF_ERR_NOMEM, "out of memory for parts.json");
	enum wf_err rc = wf_meta_append(p, b, err);
	wf_maps_free(p->maps, p->parts);
	p->maps = NULL;
	return rc;
}

/* parts.json: what each file is and holds, with its own metadata whole. */
static enum wf_err parts_json(struct wf_buf *b, struct wf_model **parts, uint32_t n, enum wf_set_form form,
			      const char *index_name, const cJSON *index_md, char *err)
{
	enum wf_err rc;
	wf_buf_printf(b, "{\"form\": \"%s\",", form_name[form]);
	if (index_name) {
		wf_buf_puts(b, "\n \"index\": {\"file\": ");
		wf_buf_json_str(b, index_name, strlen(index_name));
		char *md = index_md ? cJSON_PrintUnformatted(index_md) : NULL;
		if (index_md && !md)
			b->oom = true;
		wf_buf_printf(b, ", \"metadata\": %s},", md ? md : "{}");
		free(md);
	}
	wf_buf_puts(b, "\n \"files\": [");
	for (uint32_t i = 0; i < n && !b->oom; i++) {
		struct wf_model *p = parts[i];
		wf_buf_puts(b, i ? ",\n  {\"file\": " : "\n  {\"file\": ");
		wf_buf_json_str(b, p->parts[0].name, strlen(p->parts[0].name));
		wf_buf_printf(b, ", \"size\": %" PRIu64 ", \"format\": \"%s\"", p->parts[0].len,
			      p->format == WF_FMT_GGUF ? "gguf" : "safetensors");
		if (p->format == WF_FMT_GGUF)
			wf_buf_printf(b, ", \"version\": %u, \"alignment\": %u", p->version, p->alignment);
		wf_buf_printf(b, ", \"data_offset\": %" PRIu64 ", \"tensors\": %zu, \"metadata_count\": %" PRIu64
			      ", \"metadata\": ", p->data_offset, p->n_tensors, p->n_kv);
		if ((rc = part_metadata(p, b, err)) != WF_OK)
			return rc;
		/* metadata.json ends in a newline; keep each file on its own lines */
		while (b->len && b->data[b->len - 1] == '\n')
			b->len--;
		wf_buf_putc(b, '}');
	}
	wf_buf_puts(b, "\n ]\n}\n");
	return b->oom ? wf_fail(err, WF_ERR_NOMEM, "out of memory for parts.json") : WF_OK;
}

/* Tensor names must be unique across the parts: a name in two would be
 * two tensors at one path. */
static enum wf_err unique_names(struct wf_set_loader *L, struct wf_model **parts, uint32_t n, struct wf_names *names)
{
	char q[96], qa[WF_QPATH], qb[WF_QPATH];
	for (uint32_t i = 0; i < n; i++) {
		for (size_t k = 0; k < parts[i]->n_tensors; k++) {
			const struct wf_tensor *t = &parts[i]->tensors[k];
			uint32_t had = wf_names_put(names, t->name, t->name_len, i);
			if (had != WF_NAMES_NONE)
				return wf_fail(L->err, WF_ERR_FORMAT, "tensor %s: in both %s and %s",
					       wf_quote(q, sizeof q, t->name, t->name_len),
					       wf_quote_path(qa, sizeof qa, parts[had]->parts[0].name),
					       wf_quote_path(qb, sizeof qb, parts[i]->parts[0].name));
		}
	}
	return WF_OK;
}

/* Merges the opened parts (taking them over, even on failure) into one
 * model.  Tensor names must be unique across parts. */
enum wf_err wf_set_merge(struct wf_set_loader *L, struct wf_model **parts, uint32_t n, enum wf_set_form form,
			 const char *index_name, const cJSON *index_md, struct wf_model **out)
{
	enum wf_err rc = WF_OK;
	struct wf_model *m = NULL;
	struct wf_names names = {0};
	struct wf_buf pj = {0};
	size_t total = 0;
	for (uint32_t i = 0; i < n; i++)
		total += parts[i]->n_tensors;

	m = wf_model_new(parts[0]->format, parts[0]->data, parts[0]->data_len);
	if (!m || !wf_names_init(&names, total)) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for %zu tensors", total);
		goto out;
	}
	m->version = parts[0]->version;
	m->alignment = parts[0]->alignment;
	m->data_offset = parts[0]->data_offset;
	free(m->parts);
	m->parts = calloc(n, sizeof *m->parts);
	m->n_parts = 0;
	m->tensors = calloc(total ? total : 1, sizeof *m->tensors);
	if (!m->parts || !m->tensors) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for %u files", n);
		goto out;
	}
	if ((rc = unique_names(L, parts, n, &names)) != WF_OK)
		goto out;
	if (n > L->map_cap) {
		for (uint32_t i = 0; i < n; i++)
			drop_map(L, parts[i]); /* the part given, opened before the count was known */
		wf_set_drop_flush(L);
		if (!(m->maps = wf_maps_new(n, L->map_cap))) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for %u files", n);
			goto out;
		}
	}
	if ((rc = parts_json(&pj, parts, n, form, index_name, index_md, L->err)) != WF_OK)
		goto out;
	if (!wf_buf_finish(&pj)) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for parts.json");
		goto out;
	}
	if (m->format == WF_FMT_GGUF) {
		/* llama.cpp reads a split model's key/values from its first part,
		 * which becomes the set's parts[0] below */
		m->meta_gen = parts[0]->meta_gen;
		m->kvs = parts[0]->kvs;
		m->n_kv = parts[0]->n_kv;
		parts[0]->meta_gen = NULL;
		parts[0]->kvs = NULL;
	} else if ((rc = st_metadata(L, m, parts, n, index_md)) != WF_OK) {
		goto out;
	}
	m->parts_json = pj.data;
	m->parts_json_len = pj.len;
	pj.data = NULL;
	/* take over each part's file and tensors */
	for (uint32_t i = 0; i < n; i++) {
		struct wf_model *p = parts[i];
		m->parts[i] = p->parts[0];
		memset(&p->parts[0], 0, sizeof p->parts[0]);
		p->parts[0].fd = -1;
		m->n_parts++;
		for (size_t k = 0; k < p->n_tensors; k++) {
			m->tensors[m->n_tensors] = p->tensors[k];
			m->tensors[m->n_tensors].part = i;
			m->n_tensors++;
		}
		p->n_tensors = 0;
	}
	m->data = m->parts[0].data;
	m->data_len = m->parts[0].len;
out:
	wf_names_free(&names);
	wf_buf_free(&pj);
	for (uint32_t i = 0; i < n; i++)
		wf_model_free(parts[i]);
	if (rc != WF_OK) {
		wf_model_free(m);
		m = NULL;
	}
	*out = m;
	return rc;
}
