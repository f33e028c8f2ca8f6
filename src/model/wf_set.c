/* wf_set.c - MODEL as a user names it: one file, a split GGUF, a
 * safetensors index and its shards, or a model folder (see wf_set.h).
 *
 * Every file is opened and validated on its own by wf_model_open, then the
 * rules that tie the files together are checked here, and the parts are
 * merged into one model: tensors in part order, each naming its part.
 */
#include "model/wf_set.h"
#include "base/wf_buf.h"
#include "base/wf_hash.h"
#include "model/wf_open.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

/* Descriptors kept free for FUSE, the loop's threads and the C library. */
#define FD_RESERVE 64
/* More parts than this in one set is refused: it is no model. */
#define MAX_PARTS 100000
/* Models named in the message for a folder that holds several. */
#define MAX_LISTED 8

struct loader {
	char *dir;            /* folder of the model's files, no trailing '/' */
	char *err;            /* the caller's message buffer */
	size_t fd_budget;     /* parts whose descriptor may stay open */
	size_t fds_kept;
	bool in_snapshot;     /* already went from a hub cache folder to its snapshot */
};

enum form { FORM_SPLIT_GGUF, FORM_INDEX, FORM_ST_SET };

static const char *const form_name[] = {"split GGUF", "safetensors index", "safetensors set"};

static bool ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);
	return n >= k && strcasecmp(s + n - k, suffix) == 0;
}

static char *join(const char *dir, const char *name)
{
	size_t a = strlen(dir), b = strlen(name);
	char *p = malloc(a + b + 2);
	if (p) {
		memcpy(p, dir, a);
		p[a] = '/';
		memcpy(p + a + 1, name, b + 1);
	}
	return p;
}

/* Splits "DIR/NAME" into an absolute dir and a name. */
static enum wf_err split_path(const char *arg, char **dir, char **name, char *err)
{
	const char *slash = strrchr(arg, '/');
	char *d = slash ? strndup(arg, (size_t)(slash - arg) + (slash == arg)) : strdup(".");
	*name = strdup(slash ? slash + 1 : arg);
	*dir = d ? realpath(d, NULL) : NULL;
	int e = errno;
	free(d);
	if (!*name || !*dir) {
		free(*name);
		free(*dir);
		*name = *dir = NULL;
		return e == ENOMEM ? wf_fail(err, WF_ERR_NOMEM, "out of memory")
				   : wf_fail(err, WF_ERR_IO, "cannot resolve its folder: %s", strerror(e));
	}
	return WF_OK;
}

/* How many part descriptors the process can keep open. */
static size_t fd_budget(void)
{
	struct rlimit rl;
	if (getrlimit(RLIMIT_NOFILE, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
		return 1 << 20;
	size_t soft = (size_t)rl.rlim_cur;
	return soft > 2 * FD_RESERVE ? soft - FD_RESERVE : soft / 2;
}

/* Opens file `name` of the model's folder as one part. */
static enum wf_err open_part(struct loader *L, const char *name, struct wf_model **out)
{
	char inner[WF_ERRLEN];
	*out = NULL;
	char *path = join(L->dir, name);
	if (!path)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	struct stat st;
	if (stat(path, &st) != 0 && errno == ENOENT) {
		free(path);
		return wf_fail(L->err, WF_ERR_IO, "%s: missing", name);
	}
	enum wf_err rc = wf_model_open(out, path, inner);
	free(path);
	if (rc != WF_OK)
		return wf_fail(L->err, rc, "%s: %s", name, inner);
	struct wf_part *p = &(*out)->parts[0];
	if (L->fds_kept < L->fd_budget) {
		L->fds_kept++;
	} else {
		close(p->fd); /* the mapping stays; identity is then checked by path */
		p->fd = -1;
	}
	return WF_OK;
}

/* Reads a whole small file of the folder into memory (NUL-terminated). */
static enum wf_err read_small(struct loader *L, const char *name, uint64_t max, char **data, uint64_t *len)
{
	char *path = join(L->dir, name);
	if (!path)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	free(path);
	struct stat st;
	if (fd < 0)
		return wf_fail(L->err, WF_ERR_IO, "%s: %s", name, errno == ENOENT ? "missing" : strerror(errno));
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || (uint64_t)st.st_size > max) {
		int e = errno;
		bool reg = S_ISREG(st.st_mode);
		close(fd);
		if (!reg)
			return wf_fail(L->err, WF_ERR_IO, "%s: not a regular file", name);
		return (uint64_t)st.st_size > max
			       ? wf_fail(L->err, WF_ERR_UNSUP, "%s: %jd bytes, more than the %" PRIu64 " allowed",
					 name, (intmax_t)st.st_size, max)
			       : wf_fail(L->err, WF_ERR_IO, "%s: cannot stat: %s", name, strerror(e));
	}
	char *buf = malloc((size_t)st.st_size + 1);
	if (!buf) {
		close(fd);
		return wf_fail(L->err, WF_ERR_NOMEM, "%s: out of memory", name);
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
			return wf_fail(L->err, WF_ERR_IO, "%s: cannot read: %s", name,
				       r < 0 ? strerror(e) : "file shrank while read");
		}
		got += (uint64_t)r;
	}
	close(fd);
	buf[got] = '\0';
	*data = buf;
	*len = got;
	return WF_OK;
}

/* ------------------------------------------------------------------ merge */

static void put_metadata_entry(struct wf_buf *b, size_t *n, const char *key, const char *json_value)
{
	wf_buf_puts(b, *n ? ",\n " : "\n ");
	wf_buf_json_str(b, key, strlen(key));
	wf_buf_puts(b, ": ");
	wf_buf_puts(b, json_value);
	(*n)++;
}

/* Appends obj's entries whose keys are not in seen yet, noting them there. */
static void add_entries(struct wf_buf *b, size_t *count, cJSON *seen, const cJSON *obj)
{
	const cJSON *e;
	cJSON_ArrayForEach(e, obj) {
		if (b->oom)
			return;
		if (cJSON_GetObjectItemCaseSensitive(seen, e->string))
			continue;
		char *v = cJSON_PrintUnformatted(e);
		if (!v || !cJSON_AddTrueToObject(seen, e->string)) {
			free(v);
			b->oom = true;
			return;
		}
		put_metadata_entry(b, count, e->string, v);
		free(v);
	}
}

/* metadata.json of a safetensors set: the index's metadata, then each
 * shard's __metadata__ entries whose keys are not there yet.  Every
 * shard's own metadata is also kept whole in parts.json. */
static enum wf_err st_metadata(struct loader *L, struct wf_model *m, struct wf_model **parts, uint32_t n,
			       const cJSON *index_md)
{
	struct wf_buf b = {0};
	cJSON *seen = cJSON_CreateObject();
	size_t count = 0;
	if (!seen)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	wf_buf_putc(&b, '{');
	add_entries(&b, &count, seen, index_md);
	for (uint32_t i = 0; i < n && !b.oom; i++) {
		cJSON *md = cJSON_ParseWithLength(parts[i]->metadata_json, parts[i]->metadata_json_len);
		if (!md) {
			b.oom = true; /* our own output: only memory can make it fail */
			break;
		}
		add_entries(&b, &count, seen, md);
		cJSON_Delete(md);
	}
	wf_buf_puts(&b, count ? "\n}\n" : "}\n");
	cJSON_Delete(seen);
	if (!wf_buf_finish(&b)) {
		wf_buf_free(&b);
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory for metadata.json");
	}
	m->metadata_json = b.data;
	m->metadata_json_len = b.len;
	m->n_kv = count;
	return WF_OK;
}

/* parts.json: what each file is and holds, with its own metadata whole. */
static void parts_json(struct wf_buf *b, struct wf_model **parts, uint32_t n, enum form form,
		       const char *index_name, const cJSON *index_md)
{
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
		const struct wf_model *p = parts[i];
		wf_buf_puts(b, i ? ",\n  {\"file\": " : "\n  {\"file\": ");
		wf_buf_json_str(b, p->parts[0].name, strlen(p->parts[0].name));
		wf_buf_printf(b, ", \"size\": %" PRIu64 ", \"format\": \"%s\"", p->parts[0].len,
			      p->format == WF_FMT_GGUF ? "gguf" : "safetensors");
		if (p->format == WF_FMT_GGUF)
			wf_buf_printf(b, ", \"version\": %u, \"alignment\": %u", p->version, p->alignment);
		wf_buf_printf(b, ", \"data_offset\": %" PRIu64 ", \"tensors\": %zu, \"metadata_count\": %" PRIu64
			      ", \"metadata\": ", p->data_offset, p->n_tensors, p->n_kv);
		/* metadata.json ends in a newline; keep each file on its own lines */
		size_t len = p->metadata_json_len;
		while (len && p->metadata_json[len - 1] == '\n')
			len--;
		wf_buf_put(b, p->metadata_json, len);
		wf_buf_putc(b, '}');
	}
	wf_buf_puts(b, "\n ]\n}\n");
}

/* Tensor names must be unique across the parts: a name in two would be
 * two tensors at one path. */
static enum wf_err unique_names(struct loader *L, struct wf_model **parts, uint32_t n, struct wf_names *names)
{
	char q[96];
	for (uint32_t i = 0; i < n; i++) {
		for (size_t k = 0; k < parts[i]->n_tensors; k++) {
			const struct wf_tensor *t = &parts[i]->tensors[k];
			uint32_t had = wf_names_put(names, t->name, t->name_len, i);
			if (had != WF_NAMES_NONE)
				return wf_fail(L->err, WF_ERR_FORMAT, "tensor %s: in both %s and %s",
					       wf_quote(q, sizeof q, t->name, t->name_len), parts[had]->parts[0].name,
					       parts[i]->parts[0].name);
		}
	}
	return WF_OK;
}

/* Merges the opened parts (taking them over, even on failure) into one
 * model.  Tensor names must be unique across parts. */
static enum wf_err merge(struct loader *L, struct wf_model **parts, uint32_t n, enum form form,
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
	parts_json(&pj, parts, n, form, index_name, index_md);
	if (!wf_buf_finish(&pj)) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for parts.json");
		goto out;
	}
	if (m->format == WF_FMT_GGUF) {
		/* llama.cpp reads a split model's key/values from its first part */
		m->metadata_json = parts[0]->metadata_json;
		m->metadata_json_len = parts[0]->metadata_json_len;
		m->n_kv = parts[0]->n_kv;
		parts[0]->metadata_json = NULL;
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

/* ------------------------------------------------------------ split GGUF */

/* Parses NAME as PREFIX-NNNNN-of-MMMMM.gguf (llama.cpp's
 * "%s-%05d-of-%05d.gguf"; more digits for more parts).  *prefix_len is
 * the length of PREFIX. */
static bool split_gguf_name(const char *name, const char *ext, size_t *prefix_len, unsigned long *no,
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

static char *part_name(const char *prefix, size_t prefix_len, unsigned long no, unsigned long of, const char *ext)
{
	size_t len = prefix_len + 32 + strlen(ext);
	char *s = malloc(len);
	if (s)
		snprintf(s, len, "%.*s-%05lu-of-%05lu%s", (int)prefix_len, prefix, no, of, ext);
	return s;
}

/* `given` (named `name`) has split.count > 1: open the whole set. */
/* The part's name must say where it is, as its split keys do: that is
 * how the other parts are found. */
static enum wf_err check_split_name(struct loader *L, const struct wf_model *given, const char *name, size_t *plen,
				    unsigned long *no, unsigned long *of)
{
	uint64_t count = (uint64_t)given->split_count;
	if (!split_gguf_name(name, ".gguf", plen, no, of))
		return wf_fail(L->err, WF_ERR_FORMAT,
			       "%s: split.count is %" PRIu64 ", but the name does not follow PREFIX-%%05d-of-%%05d.gguf, "
			       "so the other parts cannot be found", name, count);
	if (count > MAX_PARTS)
		return wf_fail(L->err, WF_ERR_UNSUP, "%s: split.count is %" PRIu64 ", more than the %d parts weightfs takes",
			       name, count, MAX_PARTS);
	if (given->split_no < 0)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: split.count is %" PRIu64 ", but split.no is missing", name, count);
	if (*of != count || *no != (uint64_t)given->split_no + 1)
		return wf_fail(L->err, WF_ERR_FORMAT,
			       "%s: the name says part %lu of %lu, but split.no is %" PRId64 " and split.count %" PRIu64
			       " (split.no counts from 0)", name, *no, *of, given->split_no, count);
	return WF_OK;
}

static enum wf_err load_split(struct loader *L, struct wf_model *given, const char *name, struct wf_model **out)
{
	size_t plen;
	unsigned long no, of;
	*out = NULL;
	uint64_t count = (uint64_t)given->split_count;
	enum wf_err rc = check_split_name(L, given, name, &plen, &no, &of);
	if (rc != WF_OK) {
		wf_model_free(given);
		return rc;
	}
	struct wf_model **parts = calloc(count, sizeof *parts);
	if (!parts) {
		wf_model_free(given);
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory for %" PRIu64 " parts", count);
	}
	parts[no - 1] = given;
	for (uint64_t i = 0; i < count && rc == WF_OK; i++) {
		if (parts[i])
			continue;
		char *pn = part_name(name, plen, (unsigned long)i + 1, of, name + strlen(name) - 5);
		if (!pn) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
			break;
		}
		rc = open_part(L, pn, &parts[i]);
		if (rc == WF_OK && parts[i]->format != WF_FMT_GGUF)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: not a GGUF file", pn);
		else if (rc == WF_OK && parts[i]->split_count < 0)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: has no split.count, so it is no part of this set of %" PRIu64,
				     pn, count);
		else if (rc == WF_OK && parts[i]->split_count != (int64_t)count)
			rc = wf_fail(L->err, WF_ERR_FORMAT,
				     "%s: belongs to another split set: split.count is %" PRId64 ", not %" PRIu64,
				     pn, parts[i]->split_count, count);
		else if (rc == WF_OK && parts[i]->split_no != (int64_t)i)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: split.no is %" PRId64 ", expected %" PRIu64,
				     pn, parts[i]->split_no, i);
		free(pn);
	}
	/* gguf-split writes the set's split.tensors.count into every part: a
	 * part that states another number comes from another set, which says
	 * more than a total that does not add up */
	const struct wf_model *stated = NULL;
	for (uint64_t i = 0; i < count && rc == WF_OK; i++) {
		if (parts[i]->split_tensors < 0)
			continue;
		if (!stated)
			stated = parts[i];
		else if (parts[i]->split_tensors != stated->split_tensors)
			rc = wf_fail(L->err, WF_ERR_FORMAT,
				     "%s: belongs to another split set: split.tensors.count is %" PRId64 ", but %" PRId64
				     " in %s", parts[i]->parts[0].name, parts[i]->split_tensors, stated->split_tensors,
				     stated->parts[0].name);
	}
	size_t total = 0;
	for (uint64_t i = 0; i < count && rc == WF_OK; i++)
		total += parts[i]->n_tensors;
	if (rc == WF_OK && stated && (uint64_t)stated->split_tensors != total)
		rc = wf_fail(L->err, WF_ERR_FORMAT,
			     "%s: split.tensors.count is %" PRId64 ", but the %" PRIu64 " parts hold %zu tensors",
			     stated->parts[0].name, stated->split_tensors, count, total);
	if (rc != WF_OK) {
		for (uint64_t i = 0; i < count; i++)
			wf_model_free(parts[i]);
		free(parts);
		return rc;
	}
	rc = merge(L, parts, (uint32_t)count, FORM_SPLIT_GGUF, NULL, NULL, out);
	free(parts);
	return rc;
}

/* ------------------------------------------------------ safetensors index */

struct index {
	char *name;           /* the index file's name */
	char *text;           /* its bytes */
	cJSON *root;
	const cJSON *metadata;  /* "metadata", or NULL */
	const cJSON *weight_map;
	char **shards;        /* distinct shard names, sorted */
	uint32_t n_shards;
};

static void index_free(struct index *ix)
{
	cJSON_Delete(ix->root);
	free(ix->text);
	free(ix->name);
	free(ix->shards);
	memset(ix, 0, sizeof *ix);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A shard name must be a plain file name in the index's folder. */
static const char *bad_shard_name(const char *s)
{
	if (!*s)
		return "is empty";
	if (strchr(s, '/'))
		return "holds a '/': shards must lie in the index's folder";
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return "is not a file name";
	return NULL;
}

/* Reads and checks index `name`: JSON, an object with a weight_map of
 * tensor name to shard file name. */
static enum wf_err index_load(struct loader *L, const char *name, struct index *ix)
{
	char q[96];
	uint64_t len;
	memset(ix, 0, sizeof *ix);
	ix->name = strdup(name);
	if (!ix->name)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	enum wf_err rc = read_small(L, name, WF_INDEX_MAX, &ix->text, &len);
	if (rc != WF_OK)
		return rc;
	/* cJSON ends strings at a NUL; a name holding one would silently
	 * become another name */
	if (memmem(ix->text, len, "\\u0000", 6) || memchr(ix->text, '\0', len))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: holds a NUL character", name);
	const char *end = NULL;
	ix->root = cJSON_ParseWithLengthOpts(ix->text, len, &end, false);
	if (!ix->root) {
		const char *at = cJSON_GetErrorPtr();
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: invalid JSON near byte %td", name,
			       at && at >= ix->text && at <= ix->text + len ? at - ix->text : (ptrdiff_t)0);
	}
	for (const char *p = end; p < ix->text + len; p++)
		if (!isspace((unsigned char)*p))
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: unexpected bytes after the JSON object at byte %td",
				       name, p - ix->text);
	if (!cJSON_IsObject(ix->root))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: not a JSON object", name);
	ix->weight_map = cJSON_GetObjectItemCaseSensitive(ix->root, "weight_map");
	if (!ix->weight_map)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: no weight_map", name);
	if (!cJSON_IsObject(ix->weight_map))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map is not an object", name);
	ix->metadata = cJSON_GetObjectItemCaseSensitive(ix->root, "metadata");
	if (ix->metadata && cJSON_IsNull(ix->metadata))
		ix->metadata = NULL;
	if (ix->metadata && !cJSON_IsObject(ix->metadata))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: metadata is not an object", name);

	size_t n = (size_t)cJSON_GetArraySize(ix->weight_map);
	struct wf_names shards = {0};
	if (!wf_names_init(&shards, n) || !(ix->shards = calloc(n ? n : 1, sizeof *ix->shards))) {
		wf_names_free(&shards);
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	}
	const cJSON *e;
	cJSON_ArrayForEach(e, ix->weight_map) {
		if (!cJSON_IsString(e))
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: tensor %s: the shard is not a string", name,
				     wf_quote(q, sizeof q, e->string, strlen(e->string)));
		const char *why = rc == WF_OK ? bad_shard_name(e->valuestring) : NULL;
		if (why)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: shard %s %s", name,
				     wf_quote(q, sizeof q, e->valuestring, strlen(e->valuestring)), why);
		if (rc != WF_OK)
			break;
		if (wf_names_put(&shards, e->valuestring, strlen(e->valuestring), ix->n_shards) == WF_NAMES_NONE)
			ix->shards[ix->n_shards++] = e->valuestring;
	}
	wf_names_free(&shards);
	if (rc != WF_OK)
		return rc;
	qsort(ix->shards, ix->n_shards, sizeof *ix->shards, str_cmp);
	return WF_OK;
}

/* Whether index ix names shard `name`. */
static bool index_names(const struct index *ix, const char *name)
{
	for (uint32_t i = 0; i < ix->n_shards; i++)
		if (strcmp(ix->shards[i], name) == 0)
			return true;
	return false;
}

/* The index's weight_map as a name -> entry map; a name listed twice is
 * refused, since JSON readers keep one of two equal keys: the index would
 * lie. */
static enum wf_err index_map(struct loader *L, const struct index *ix, struct wf_names *map, const cJSON **entry)
{
	char q[96];
	uint32_t k = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, ix->weight_map) {
		entry[k] = e;
		if (wf_names_put(map, e->string, strlen(e->string), k) != WF_NAMES_NONE)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: tensor %s is listed twice", ix->name,
				       wf_quote(q, sizeof q, e->string, strlen(e->string)));
		k++;
	}
	return WF_OK;
}

/* Every tensor of shard `shard` (opened as p) must be in the map, put in
 * this very shard; found[] notes the entries seen. */
static enum wf_err check_shard(struct loader *L, const struct index *ix, const char *shard, const struct wf_model *p,
			       const struct wf_names *map, const cJSON **entry, uint8_t *found)
{
	char q[96];
	if (p->format != WF_FMT_SAFETENSORS)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: not a safetensors file", shard);
	for (size_t t = 0; t < p->n_tensors; t++) {
		const struct wf_tensor *tn = &p->tensors[t];
		uint32_t k = memchr(tn->name, '\0', tn->name_len) ? WF_NAMES_NONE
				: wf_names_get(map, tn->name, tn->name_len);
		if (k == WF_NAMES_NONE)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s is not in the weight_map of %s", shard,
				       wf_quote(q, sizeof q, tn->name, tn->name_len), ix->name);
		if (strcmp(entry[k]->valuestring, shard) != 0)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s is here, but %s puts it in %s", shard,
				       wf_quote(q, sizeof q, tn->name, tn->name_len), ix->name, entry[k]->valuestring);
		found[k] = 1;
	}
	return WF_OK;
}

/* What the index states and the shards can confirm: every entry found,
 * and total_size (as transformers writes it: the tensors' bytes). */
static enum wf_err check_index_claims(struct loader *L, const struct index *ix, struct wf_model **parts,
				      const cJSON **entry, const uint8_t *found, size_t n_map)
{
	char q[96];
	for (size_t k = 0; k < n_map; k++)
		if (!found[k])
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s: %s puts it here, but it is not there",
				       entry[k]->valuestring,
				       wf_quote(q, sizeof q, entry[k]->string, strlen(entry[k]->string)), ix->name);
	const cJSON *ts = ix->metadata ? cJSON_GetObjectItemCaseSensitive(ix->metadata, "total_size") : NULL;
	if (!ts)
		return WF_OK;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < ix->n_shards; i++)
		for (size_t t = 0; t < parts[i]->n_tensors; t++)
			sum += parts[i]->tensors[t].nbytes;
	if (cJSON_IsNumber(ts) && ts->valuedouble >= 0 && ts->valuedouble == (double)sum)
		return WF_OK;
	char *v = cJSON_PrintUnformatted(ts);
	enum wf_err rc = wf_fail(L->err, WF_ERR_FORMAT,
				 "%s: metadata.total_size is %s, but the shards' tensors hold %" PRIu64 " bytes",
				 ix->name, v ? v : "?", sum);
	free(v);
	return rc;
}

/* Opens the shards of a loaded index and checks them against it; `given`
 * (may be NULL) is a shard already open, named given_name. */
static enum wf_err load_index(struct loader *L, struct index *ix, struct wf_model *given, const char *given_name,
			      struct wf_model **out)
{
	enum wf_err rc = WF_OK;
	*out = NULL;
	size_t n_map = (size_t)cJSON_GetArraySize(ix->weight_map);
	struct wf_model **parts = calloc(ix->n_shards ? ix->n_shards : 1, sizeof *parts);
	struct wf_names map = {0};
	uint8_t *found = calloc(n_map ? n_map : 1, 1);
	const cJSON **entry = calloc(n_map ? n_map : 1, sizeof *entry);
	if (!parts || !found || !entry || !wf_names_init(&map, n_map)) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for the index");
		goto out;
	}
	if (ix->n_shards == 0) {
		rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map is empty", ix->name);
		goto out;
	}
	if ((rc = index_map(L, ix, &map, entry)) != WF_OK)
		goto out;
	for (uint32_t i = 0; i < ix->n_shards; i++) {
		if (given && strcmp(ix->shards[i], given_name) == 0) {
			parts[i] = given;
			given = NULL;
		} else if ((rc = open_part(L, ix->shards[i], &parts[i])) != WF_OK) {
			goto out;
		}
		if ((rc = check_shard(L, ix, ix->shards[i], parts[i], &map, entry, found)) != WF_OK)
			goto out;
	}
	if ((rc = check_index_claims(L, ix, parts, entry, found, n_map)) != WF_OK)
		goto out;
	rc = merge(L, parts, ix->n_shards, FORM_INDEX, ix->name, ix->metadata, out);
	memset(parts, 0, ix->n_shards * sizeof *parts); /* merge took them */
out:
	if (parts)
		for (uint32_t i = 0; i < ix->n_shards; i++)
			wf_model_free(parts[i]);
	wf_model_free(given);
	free(parts);
	free(found);
	free(entry);
	wf_names_free(&map);
	return rc;
}

/* ----------------------------------------------------------------- folder */

enum kind { K_SKIP, K_GGUF, K_ST, K_INDEX, K_SIDE };

struct entry {
	char *name;
	enum kind kind;
	uint64_t size;
	int model;           /* which model found in the folder claims it, or -1 */
};

struct folder {
	struct entry *e;
	size_t n;
};

static void folder_free(struct folder *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->e[i].name);
	free(f->e);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* What a folder entry is to us.  Weights of other formats (pickles,
 * ONNX, ...) and big files are not shown. */
static enum kind classify(const char *name, const struct stat *st)
{
	static const char *const other_weights[] = {".bin", ".pt", ".pth", ".onnx", ".ckpt", ".h5",
						    ".msgpack", ".pkl", ".npz", ".tflite", ".ot"};
	if (!S_ISREG(st->st_mode) || name[0] == '.')
		return K_SKIP;
	if (ends_with(name, ".gguf"))
		return K_GGUF;
	if (ends_with(name, ".safetensors"))
		return K_ST;
	if (ends_with(name, ".safetensors.index.json"))
		return K_INDEX;
	for (size_t i = 0; i < WF_ARRAY_LEN(other_weights); i++)
		if (ends_with(name, other_weights[i]))
			return K_SKIP;
	return (uint64_t)st->st_size <= WF_SIDECAR_MAX ? K_SIDE : K_SKIP;
}

static enum wf_err scan(struct loader *L, struct folder *f)
{
	DIR *d = opendir(L->dir);
	if (!d)
		return wf_fail(L->err, WF_ERR_IO, "cannot list the folder: %s", strerror(errno));
	size_t cap = 0;
	struct dirent *de;
	enum wf_err rc = WF_OK;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		/* follow symlinks: a hub snapshot's entries point into blobs/ */
		if (fstatat(dirfd(d), de->d_name, &st, 0) != 0)
			continue;
		if (f->n == cap) {
			cap = cap ? 2 * cap : 64;
			struct entry *ne = realloc(f->e, cap * sizeof *ne);
			if (!ne) {
				rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory listing the folder");
				break;
			}
			f->e = ne;
		}
		struct entry *e = &f->e[f->n];
		e->name = strdup(de->d_name);
		if (!e->name) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory listing the folder");
			break;
		}
		e->kind = classify(de->d_name, &st);
		e->size = (uint64_t)st.st_size;
		e->model = -1;
		f->n++;
	}
	closedir(d);
	if (rc == WF_OK && f->n)
		qsort(f->e, f->n, sizeof *f->e, entry_cmp);
	return rc;
}

/* A model found in a folder: its first file, what it is, and how to say it. */
struct found {
	size_t first;        /* entry index of its index or first file */
	enum kind kind;
	char label[160];
};

/* Groups the folder's weight files into models. */
static enum wf_err find_models(struct loader *L, struct folder *f, struct found *models, size_t max, size_t *n)
{
	*n = 0;
	/* an index claims the shards it names */
	for (size_t i = 0; i < f->n; i++) {
		if (f->e[i].kind != K_INDEX)
			continue;
		struct index ix;
		enum wf_err rc = index_load(L, f->e[i].name, &ix);
		if (rc != WF_OK) {
			index_free(&ix);
			return rc;
		}
		for (size_t j = 0; j < f->n; j++)
			if (f->e[j].kind == K_ST && f->e[j].model < 0 && index_names(&ix, f->e[j].name))
				f->e[j].model = (int)*n;
		index_free(&ix);
		if (*n < max) {
			models[*n].first = i;
			models[*n].kind = K_INDEX;
			snprintf(models[*n].label, sizeof models[*n].label, "%s", f->e[i].name);
		}
		f->e[i].model = (int)(*n)++;
	}
	/* the rest: split sets by name, else single files */
	for (size_t i = 0; i < f->n; i++) {
		struct entry *e = &f->e[i];
		if ((e->kind != K_GGUF && e->kind != K_ST) || e->model >= 0)
			continue;
		const char *ext = e->kind == K_GGUF ? ".gguf" : ".safetensors";
		size_t plen;
		unsigned long no, of;
		bool split = split_gguf_name(e->name, ext, &plen, &no, &of);
		for (size_t j = i; split && j < f->n; j++) {
			size_t pl2;
			unsigned long no2, of2;
			if (f->e[j].kind == e->kind && f->e[j].model < 0 &&
			    split_gguf_name(f->e[j].name, ext, &pl2, &no2, &of2) && pl2 == plen &&
			    of2 == of && strncmp(f->e[j].name, e->name, plen) == 0)
				f->e[j].model = (int)*n;
		}
		e->model = (int)*n;
		if (*n < max) {
			models[*n].first = i;
			models[*n].kind = e->kind;
			if (split)
				snprintf(models[*n].label, sizeof models[*n].label, "%.*s-*-of-%05lu%s", (int)plen,
					 e->name, of, ext);
			else
				snprintf(models[*n].label, sizeof models[*n].label, "%s", e->name);
		}
		(*n)++;
	}
	return WF_OK;
}

/* Loads an unindexed PREFIX-NNNNN-of-MMMMM.safetensors set whose first
 * file found is entry `first`. */
static enum wf_err load_st_set(struct loader *L, struct folder *f, size_t first, struct wf_model **out)
{
	size_t plen;
	unsigned long no, of;
	const char *name = f->e[first].name;
	*out = NULL;
	if (!split_gguf_name(name, ".safetensors", &plen, &no, &of))
		return open_part(L, name, out);
	if (of > MAX_PARTS)
		return wf_fail(L->err, WF_ERR_UNSUP, "%s: more than %d shards", name, MAX_PARTS);
	struct wf_model **parts = calloc(of, sizeof *parts);
	if (!parts)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	enum wf_err rc = WF_OK;
	for (unsigned long i = 0; i < of && rc == WF_OK; i++) {
		char *pn = part_name(name, plen, i + 1, of, name + strlen(name) - strlen(".safetensors"));
		rc = pn ? open_part(L, pn, &parts[i]) : wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
		if (rc == WF_OK && parts[i]->format != WF_FMT_SAFETENSORS)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: not a safetensors file", pn);
		free(pn);
	}
	if (rc == WF_OK)
		rc = merge(L, parts, (uint32_t)of, FORM_ST_SET, NULL, NULL, out);
	else
		for (unsigned long i = 0; i < of; i++)
			wf_model_free(parts[i]);
	free(parts);
	return rc;
}

/* Reads the folder's small files into m->sidecars. */
static enum wf_err add_sidecars(struct loader *L, struct folder *f, struct wf_model *m)
{
	uint64_t total = 0;
	m->sidecars = calloc(f->n ? f->n : 1, sizeof *m->sidecars);
	if (!m->sidecars)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < f->n; i++) {
		if (f->e[i].kind != K_SIDE || total + f->e[i].size > WF_SIDECARS_TOTAL_MAX)
			continue;
		struct wf_sidecar *s = &m->sidecars[m->n_sidecars];
		enum wf_err rc = read_small(L, f->e[i].name, WF_SIDECAR_MAX, &s->data, &s->len);
		if (rc != WF_OK)
			return rc;
		s->name = strdup(f->e[i].name);
		m->n_sidecars++;
		if (!s->name)
			return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
		total += s->len;
	}
	return WF_OK;
}

/* A hub cache's models--ORG--NAME folder: the snapshot refs/main names,
 * or, with no refs/main (a cache filled by revision), the only snapshot.
 * NULL if dir is no hub cache folder or the choice is not clear. */
static char *hub_snapshot(const char *dir)
{
	char *refs = join(dir, "refs/main"), *snap = NULL;
	FILE *fp = refs ? fopen(refs, "re") : NULL;
	char rev[128];
	bool had_refs = fp != NULL;
	if (fp && fgets(rev, sizeof rev, fp)) {
		rev[strcspn(rev, "\r\n")] = '\0';
		if (*rev && !strchr(rev, '/') && strcmp(rev, "..") != 0 && strcmp(rev, ".") != 0) {
			char rel[160];
			snprintf(rel, sizeof rel, "snapshots/%s", rev);
			snap = join(dir, rel);
		}
	}
	if (fp)
		fclose(fp);
	free(refs);
	if (had_refs) /* refs/main decides, even when it names nothing usable */
		return snap;
	char *snaps = join(dir, "snapshots");
	DIR *d = snaps ? opendir(snaps) : NULL;
	struct dirent *de;
	char *only = NULL;
	bool several = false;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		several = only != NULL;
		free(only);
		only = several ? NULL : join(snaps, de->d_name);
		if (several)
			break;
	}
	if (d)
		closedir(d);
	free(snaps);
	return only;
}

/* A folder with no model, or several: the refusal lists what it found. */
static enum wf_err say_found(struct loader *L, const struct folder *f, const struct found *models, size_t n)
{
	struct wf_buf b = {0};
	enum wf_err rc;
	if (n == 0) {
		size_t shown = 0;
		for (size_t i = 0; i < f->n && shown < 6; i++, shown++)
			wf_buf_printf(&b, "%s%s", shown ? ", " : "", f->e[i].name);
		if (f->n > shown)
			wf_buf_printf(&b, ", and %zu more", f->n - shown);
		rc = wf_fail(L->err, WF_ERR_IO, "no GGUF or safetensors model in the folder (it holds %zu %s%s%s)",
			     f->n, f->n == 1 ? "entry" : "entries", f->n ? ": " : "", b.data && !b.oom ? b.data : "");
	} else {
		for (size_t i = 0; i < n && i < MAX_LISTED; i++)
			wf_buf_printf(&b, "%s%s", i ? ", " : "", models[i].label);
		if (n > MAX_LISTED)
			wf_buf_printf(&b, ", and %zu more", n - MAX_LISTED);
		rc = wf_fail(L->err, WF_ERR_IO, "the folder holds %zu models: %s; give one of them as MODEL", n,
			     b.data && !b.oom ? b.data : "?");
	}
	wf_buf_free(&b);
	return rc;
}

static enum wf_err load_folder(struct loader *L, struct wf_model **out)
{
	struct folder f = {0};
	struct found models[MAX_LISTED];
	size_t n;
	*out = NULL;
	enum wf_err rc = scan(L, &f);
	if (rc == WF_OK)
		rc = find_models(L, &f, models, WF_ARRAY_LEN(models), &n);
	if (rc != WF_OK)
		goto out;
	if (n == 0) {
		/* once only: a snapshot that leads back to its cache folder is a loop */
		char *snap = L->in_snapshot ? NULL : hub_snapshot(L->dir);
		struct stat st;
		if (snap && stat(snap, &st) == 0 && S_ISDIR(st.st_mode)) {
			L->in_snapshot = true;
			folder_free(&f);
			free(L->dir);
			L->dir = realpath(snap, NULL);
			free(snap);
			if (!L->dir)
				return wf_fail(L->err, WF_ERR_IO, "cannot resolve the hub snapshot: %s", strerror(errno));
			return load_folder(L, out);
		}
		free(snap);
		rc = say_found(L, &f, models, n);
		goto out;
	}
	if (n > 1) {
		rc = say_found(L, &f, models, n);
		goto out;
	}
	const char *first = f.e[models[0].first].name;
	if (models[0].kind == K_INDEX) {
		struct index ix;
		rc = index_load(L, first, &ix);
		if (rc == WF_OK)
			rc = load_index(L, &ix, NULL, NULL, out);
		index_free(&ix);
	} else if (models[0].kind == K_ST) {
		rc = load_st_set(L, &f, models[0].first, out);
	} else {
		struct wf_model *m;
		size_t named = 0; /* files whose names put them in this set */
		for (size_t i = 0; i < f.n; i++)
			named += f.e[i].model == 0;
		rc = open_part(L, first, &m);
		if (rc == WF_OK && m->split_count <= 1 && named > 1) {
			/* the others would be left out without a word */
			wf_model_free(m);
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: named as a part of %s, but has no split.count > 1", first,
				     models[0].label);
		} else if (rc == WF_OK) {
			rc = m->split_count > 1 ? load_split(L, m, first, out) : (*out = m, WF_OK);
		}
	}
	if (rc == WF_OK)
		rc = add_sidecars(L, &f, *out);
	if (rc != WF_OK) {
		wf_model_free(*out);
		*out = NULL;
	}
out:
	folder_free(&f);
	return rc;
}

/* A safetensors file with an index beside it that names it: the index. */
static enum wf_err index_beside(struct loader *L, const char *shard, struct index *ix, bool *found)
{
	struct folder f = {0};
	*found = false;
	enum wf_err rc = scan(L, &f);
	for (size_t i = 0; rc == WF_OK && i < f.n; i++) {
		if (f.e[i].kind != K_INDEX)
			continue;
		struct index cand;
		rc = index_load(L, f.e[i].name, &cand);
		if (rc == WF_OK && index_names(&cand, shard)) {
			if (*found) {
				rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: named by two indexes, %s and %s", shard, ix->name,
					     cand.name);
				index_free(&cand);
				break;
			}
			*ix = cand;
			*found = true;
			continue;
		}
		index_free(&cand);
	}
	folder_free(&f);
	if (rc != WF_OK && *found) {
		index_free(ix);
		*found = false;
	}
	return rc;
}

enum wf_err wf_set_open(struct wf_model **out, const char *arg, char *err)
{
	struct loader L = {.err = err, .fd_budget = fd_budget()};
	char *name = NULL;
	enum wf_err rc;
	*out = NULL;
	struct stat st;
	if (stat(arg, &st) != 0)
		return wf_fail(err, WF_ERR_IO, "cannot open: %s", strerror(errno));
	if (S_ISDIR(st.st_mode)) {
		L.dir = realpath(arg, NULL);
		if (!L.dir)
			return wf_fail(err, WF_ERR_IO, "cannot resolve: %s", strerror(errno));
		rc = load_folder(&L, out);
		free(L.dir);
		return rc;
	}
	if (!S_ISREG(st.st_mode))
		return wf_fail(err, WF_ERR_IO, "not a regular file or a folder");
	if ((rc = split_path(arg, &L.dir, &name, err)) != WF_OK)
		return rc;
	if (ends_with(name, ".index.json")) {
		struct index ix;
		rc = index_load(&L, name, &ix);
		if (rc == WF_OK)
			rc = load_index(&L, &ix, NULL, NULL, out);
		index_free(&ix);
		goto done;
	}
	/* a file on its own keeps the messages it always had: no file name */
	struct wf_model *m;
	rc = wf_model_open(&m, arg, err);
	if (rc != WF_OK)
		goto done;
	L.fds_kept = 1;
	if (m->format == WF_FMT_GGUF && m->split_count > 1) {
		rc = load_split(&L, m, name, out);
	} else if (m->format == WF_FMT_SAFETENSORS) {
		struct index ix;
		bool found;
		rc = index_beside(&L, name, &ix, &found);
		if (rc == WF_OK && found)
			rc = load_index(&L, &ix, m, name, out);
		else if (rc == WF_OK)
			*out = m;
		else
			wf_model_free(m);
		if (found)
			index_free(&ix);
	} else {
		*out = m;
	}
done:
	free(name);
	free(L.dir);
	return rc;
}
