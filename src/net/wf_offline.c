/* wf_offline.c - the record of a source's last online staging
 * (wf_offline.h). */
#include "net/wf_offline.h"
#include "base/wf_hash.h"
#include "net/wf_cache.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#define REC_MAX (256u << 20) /* a record at most: a listing of ~10^6 files */

struct wf_rec {
	char key[40];
	cJSON *j;      /* the record */
	cJSON *files;  /* its "files" array */
};

/* 128 bits of name from two FNV-1a streams. */
static void name_key(const char *a, const char *b, char *out, size_t cap)
{
	size_t na = strlen(a), nb = strlen(b);
	char *s = malloc(na + nb + 2);
	uint64_t h0 = 0, h1 = 0;
	if (s) {
		memcpy(s, a, na + 1);
		memcpy(s + na + 1, b, nb + 1);
		h0 = wf_fnv1a(s, na + nb + 2);
		s[na] = '\n';
		h1 = wf_fnv1a(s, na + nb + 2) ^ h0 * 0x9e3779b97f4a7c15ull;
		free(s);
	}
	snprintf(out, cap, "%016llx%016llx", (unsigned long long)h0, (unsigned long long)h1);
}

struct wf_rec *wf_rec_new(const char *src, const char *endpoint)
{
	struct wf_rec *r = calloc(1, sizeof *r);
	if (!r)
		return NULL;
	name_key(src, endpoint ? endpoint : "", r->key, sizeof r->key);
	r->j = cJSON_CreateObject();
	r->files = cJSON_CreateArray();
	if (!r->j || !r->files || !cJSON_AddStringToObject(r->j, "source", src) ||
	    !cJSON_AddStringToObject(r->j, "endpoint", endpoint ? endpoint : "") ||
	    !cJSON_AddNumberToObject(r->j, "chunk", (double)wf_remote_conf.chunk)) {
		cJSON_Delete(r->files);
		cJSON_Delete(r->j);
		free(r);
		return NULL;
	}
	cJSON_AddItemToObject(r->j, "files", r->files);
	return r;
}

void wf_rec_free(struct wf_rec *r)
{
	if (!r)
		return;
	cJSON_Delete(r->j);
	free(r);
}

static void set_str(cJSON *o, const char *k, const char *v)
{
	cJSON_DeleteItemFromObjectCaseSensitive(o, k);
	cJSON_AddStringToObject(o, k, v ? v : "");
}

void wf_rec_set(struct wf_rec *r, const char *local_rel, const char *commit)
{
	set_str(r->j, "local", local_rel);
	set_str(r->j, "commit", commit);
}

bool wf_rec_small(struct wf_rec *r, const char *rel, const char *url, const char *etag, const uint8_t *data,
		  size_t len)
{
	char k[40], key[96], sz[32];
	snprintf(sz, sizeof sz, "%zu", len);
	name_key(url, etag ? etag : "", k, sizeof k);
	snprintf(key, sizeof key, "files/%s-%s", k, sz);
	if (!wf_cache_put(wf_remote_conf.cache, key, data, len, wf_remote_conf.cache_size))
		return false;
	cJSON *f = cJSON_CreateObject();
	if (!f || !cJSON_AddStringToObject(f, "rel", rel) || !cJSON_AddNumberToObject(f, "size", (double)len) ||
	    !cJSON_AddStringToObject(f, "key", key)) {
		cJSON_Delete(f);
		return false;
	}
	cJSON_AddItemToArray(r->files, f);
	return true;
}

bool wf_rec_weight(struct wf_rec *r, const char *rel, const char *open_url, const struct wf_robj *o)
{
	cJSON *f = cJSON_CreateObject();
	if (!f || !cJSON_AddStringToObject(f, "rel", rel) ||
	    !cJSON_AddNumberToObject(f, "size", (double)wf_robj_size(o)) ||
	    !cJSON_AddStringToObject(f, "open", open_url) || !cJSON_AddStringToObject(f, "url", wf_robj_url(o)) ||
	    !cJSON_AddStringToObject(f, "etag", wf_robj_etag(o))) {
		cJSON_Delete(f);
		return false;
	}
	cJSON_AddItemToArray(r->files, f);
	return true;
}

static void rec_path(const char *key, char *out, size_t cap)
{
	snprintf(out, cap, "%s/.sources/%s.json", wf_remote_conf.cache, key);
}

enum wf_err wf_rec_save(struct wf_rec *r, char *err)
{
	if (!wf_remote_conf.cache)
		return WF_OK;
	char *text = cJSON_PrintUnformatted(r->j), path[4200], tmp[4300];
	if (!text)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	snprintf(path, sizeof path, "%s/.sources", wf_remote_conf.cache);
	mkdir(path, 0755);
	rec_path(r->key, path, sizeof path);
	snprintf(tmp, sizeof tmp, "%s.tmp.%d.%ld", path, (int)getpid(), (long)syscall(SYS_gettid));
	int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	size_t n = strlen(text);
	bool ok = fd >= 0 && write(fd, text, n) == (ssize_t)n;
	ok = (fd >= 0 && close(fd) == 0) && ok && rename(tmp, path) == 0;
	int e = errno;
	free(text);
	if (!ok) {
		unlink(tmp);
		return wf_fail(err, WF_ERR_IO, "cannot keep the source's record in the cache: %s", strerror(e));
	}
	return WF_OK;
}

static const char *str_of(const cJSON *o, const char *k)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

static bool num_of(const cJSON *o, const char *k, uint64_t *out)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, k);
	if (!cJSON_IsNumber(v) || v->valuedouble < 0 || v->valuedouble > 9e15)
		return false;
	*out = (uint64_t)v->valuedouble;
	return true;
}

/* Every entry well formed, no path leaving the staging folder. */
static bool rec_valid(const struct wf_rec *r)
{
	const char *local = str_of(r->j, "local");
	uint64_t chunk;
	if (!local || !str_of(r->j, "commit") || !num_of(r->j, "chunk", &chunk) || !cJSON_IsArray(r->files))
		return false;
	struct wf_rec_file f;
	for (size_t i = 0; i < wf_rec_count(r); i++)
		if (!wf_rec_file(r, i, &f) || strstr(f.rel, "..") || f.rel[0] == '/' || !*f.rel ||
		    (!f.weight && (strstr(f.key, "..") || strncmp(f.key, "files/", 6) != 0)))
			return false;
	return !strstr(local, "..") && local[0] != '/';
}

enum wf_err wf_rec_load(const char *src, const char *endpoint, struct wf_rec **out, char *err)
{
	*out = NULL;
	struct wf_rec *r = calloc(1, sizeof *r);
	if (!r)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	name_key(src, endpoint ? endpoint : "", r->key, sizeof r->key);
	char path[4200];
	rec_path(r->key, path, sizeof path);
	FILE *f = wf_remote_conf.cache ? fopen(path, "re") : NULL;
	char *text = NULL;
	size_t n = 0;
	if (f) {
		struct stat st;
		if (fstat(fileno(f), &st) == 0 && st.st_size > 0 && (uint64_t)st.st_size <= REC_MAX &&
		    (text = malloc((size_t)st.st_size)))
			n = fread(text, 1, (size_t)st.st_size, f);
		fclose(f);
	}
	if (!text) {
		free(r);
		return wf_fail(err, WF_ERR_IO, "offline (-o offline, or HF_HUB_OFFLINE for hf://): the cache%s%s "
			       "has nothing of this source (mount it online once, or weightfs fetch it)",
			       wf_remote_conf.cache ? " " : "", wf_remote_conf.cache ? wf_remote_conf.cache : " is off");
	}
	r->j = cJSON_ParseWithLength(text, n);
	free(text);
	r->files = cJSON_GetObjectItemCaseSensitive(r->j, "files");
	if (!r->j || !rec_valid(r)) {
		wf_rec_free(r);
		return wf_fail(err, WF_ERR_FORMAT, "-o offline: the cache's record of this source (%s) is damaged",
			       path);
	}
	*out = r;
	return WF_OK;
}

const char *wf_rec_local(const struct wf_rec *r)
{
	return str_of(r->j, "local");
}

const char *wf_rec_commit(const struct wf_rec *r)
{
	return str_of(r->j, "commit");
}

uint64_t wf_rec_chunk(const struct wf_rec *r)
{
	uint64_t c = 0;
	num_of(r->j, "chunk", &c);
	return c;
}

size_t wf_rec_count(const struct wf_rec *r)
{
	return (size_t)cJSON_GetArraySize(r->files);
}

bool wf_rec_file(const struct wf_rec *r, size_t i, struct wf_rec_file *f)
{
	const cJSON *e = cJSON_GetArrayItem(r->files, (int)i);
	memset(f, 0, sizeof *f);
	if (!e || !(f->rel = str_of(e, "rel")) || !num_of(e, "size", &f->size))
		return false;
	f->key = str_of(e, "key");
	f->open_url = str_of(e, "open");
	f->url = str_of(e, "url");
	f->etag = str_of(e, "etag");
	f->weight = !f->key;
	return f->weight ? f->open_url && f->url && f->etag : true;
}

uint8_t *wf_rec_small_data(const struct wf_rec_file *f)
{
	uint8_t *b = malloc(f->size ? (size_t)f->size : 1);
	if (b && !wf_cache_get(wf_remote_conf.cache, f->key, b, f->size)) {
		free(b);
		return NULL;
	}
	return b;
}
