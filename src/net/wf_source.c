/* wf_source.c - hf://, s3:// and http(s):// sources staged as folders
 * (wf_source.h). */
#include "net/wf_source.h"
#include "net/wf_cache.h"
#include "net/wf_http.h"
#include "net/wf_s3.h"
#include "net/wf_hubcache.h"
#include "net/wf_offline.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define SMALL_MAX (64u << 20)   /* non-weight files fetched whole up to this */
#define PAGE_MAX (64u << 20)    /* one API answer at most */
#define PAGES_MAX 10000         /* tree pages followed at most */

struct staged {
	dev_t dev;
	ino_t ino;
	char *url;
	int64_t size;
	struct wf_robj *o;
	const char *token;                 /* its source's credentials (kept until cleanup) */
	const struct wf_http_sigv4 *sig;
	char *rel;    /* its path in the staging folder */
	char *blob;   /* its LFS sha256 from the Hub's listing, or NULL */
};

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static struct staged *reg;
static size_t n_reg;

/* A small file the listing named (config, tokenizer): fetched whole by the
 * pinning threads side by side with the weights' probes, rather than one
 * after another while listing (each a round trip or two). */
struct small {
	char *local;    /* its path in the staging folder (noted in listing order) */
	char *rel;      /* the same, relative to the staging folder */
	char *url;
	char *name;     /* the Hub path, or the S3 key: what messages name */
	char *if_match; /* S3: the ETag listed; NULL for the Hub */
	uint64_t size;
};
static struct small *smalls;
static size_t n_smalls;
static pthread_mutex_t small_mu = PTHREAD_MUTEX_INITIALIZER; /* rec and the Hub cache, from the pinning threads */
/* The source being staged (under mu): its folder and credentials.  Once
 * staged they are kept (the kept list) until cleanup, so a process may
 * stage several sources (diff hf://a s3://b/) each with its own. */
static char *root;
static char *token;
static struct wf_http_sigv4 *s3sig; /* an s3:// source's signature: every object's requests */
static struct kept {
	char *root, *token;
	struct wf_http_sigv4 *sig;
} *kept;
static size_t n_kept;

/* Every file staged, with the digest its source published (wf_source_file). */
static struct staged_file {
	char *path;
	enum wf_digest_kind kind;
	char hex[65];
} *files;
static size_t n_files_staged;

/* Notes a file just staged at local path p (copied), no digest yet. */
static bool note_file(const char *p)
{
	struct staged_file *f = realloc(files, (n_files_staged + 1) * sizeof *files);
	if (!f)
		return false;
	files = f;
	files[n_files_staged] = (struct staged_file){.path = strdup(p), .kind = WF_DIGEST_NONE};
	return files[n_files_staged++].path != NULL;
}

enum wf_digest_kind wf_hub_entry_digest(const cJSON *e, char hex[65])
{
	hex[0] = '\0';
	const cJSON *lfs = cJSON_GetObjectItemCaseSensitive(e, "lfs");
	const cJSON *oid = cJSON_GetObjectItemCaseSensitive(lfs ? lfs : e, "oid");
	size_t want = lfs ? 64 : 40;
	if (!cJSON_IsString(oid) || strlen(oid->valuestring) != want ||
	    strspn(oid->valuestring, "0123456789abcdef") != want)
		return WF_DIGEST_NONE;
	memcpy(hex, oid->valuestring, want + 1);
	return lfs ? WF_DIGEST_SHA256 : WF_DIGEST_GIT_SHA1;
}

/* The Hub's listing entry e's digest, for the file noted last. */
static void note_listed_digest(const cJSON *e)
{
	if (n_files_staged) {
		struct staged_file *f = &files[n_files_staged - 1];
		f->kind = wf_hub_entry_digest(e, f->hex);
	}
}

bool wf_source_file(size_t i, const char **path, enum wf_digest_kind *kind, char hex[65])
{
	pthread_mutex_lock(&mu);
	bool ok = i < n_files_staged;
	if (ok) {
		*path = files[i].path;
		*kind = files[i].kind;
		memcpy(hex, files[i].hex, sizeof files[i].hex);
	}
	pthread_mutex_unlock(&mu);
	return ok;
}

static void forget_files(void)
{
	for (size_t i = 0; i < n_files_staged; i++)
		free(files[i].path);
	free(files);
	files = NULL;
	n_files_staged = 0;
}

/* Opens a staged object with its source's credentials, on handle curl
 * (or NULL). */
static enum wf_err open_staged(struct staged *st, void *curl, char *err)
{
	struct wf_robj_how how = {.token = st->sig ? NULL : st->token, .sig = st->sig, .want_size = st->size,
				  .curl = curl};
	return wf_robj_open(&st->o, st->url, &how, err);
}
static struct wf_rec *rec;
static char hub_repo[512], hub_sha[64]; /* the Hub's repository staged, and its commit */  /* what this staging is, for a later offline one (wf_offline.h) */
static char warning[WF_ERRLEN + 64];
static bool offline_env; /* offline since HF_HUB_OFFLINE said so, not -o offline */
static enum wf_err cache_setup(char *err);

bool wf_source_is_remote(const char *name)
{
	return strncmp(name, "hf://", 5) == 0 || strncmp(name, "s3://", 5) == 0 || strncmp(name, "https://", 8) == 0 ||
	       strncmp(name, "http://", 7) == 0;
}

static bool is_weight(const char *path)
{
	size_t n = strlen(path);
	return (n > 12 && strcasecmp(path + n - 12, ".safetensors") == 0) ||
	       (n > 5 && strcasecmp(path + n - 5, ".gguf") == 0);
}

/* Files no loader reads: not worth fetching whole. */
static bool is_skipped(const char *path)
{
	static const char *const ext[] = {".bin", ".pt", ".pth", ".h5", ".msgpack", ".onnx", ".onnx_data", ".ot",
					  ".ckpt", ".pkl", ".npz", ".zip", ".tflite", ".mlmodel", ".gitattributes"};
	size_t n = strlen(path);
	for (size_t i = 0; i < sizeof ext / sizeof ext[0]; i++) {
		size_t k = strlen(ext[i]);
		if (n >= k && strcasecmp(path + n - k, ext[i]) == 0)
			return true;
	}
	return false;
}

/* HF_TOKEN, else the token file (huggingface_hub's order, docs/remote.md). */
static char *find_token(void)
{
	const char *e = getenv("HF_TOKEN");
	if (!e || !*e)
		e = getenv("HUGGING_FACE_HUB_TOKEN");
	if (e && *e)
		return strdup(e);
	char path[4096];
	const char *tp = getenv("HF_TOKEN_PATH"), *home = getenv("HF_HOME"), *xdg = getenv("XDG_CACHE_HOME"),
		   *h = getenv("HOME");
	if (tp && *tp)
		snprintf(path, sizeof path, "%s", tp);
	else if (home && *home)
		snprintf(path, sizeof path, "%s/token", home);
	else if (xdg && *xdg)
		snprintf(path, sizeof path, "%s/huggingface/token", xdg);
	else if (h && *h)
		snprintf(path, sizeof path, "%s/.cache/huggingface/token", h);
	else
		return NULL;
	FILE *f = fopen(path, "re");
	if (!f)
		return NULL;
	char buf[1024];
	size_t n = fread(buf, 1, sizeof buf - 1, f);
	fclose(f);
	buf[n] = '\0';
	char *s = buf;
	while (*s && isspace((unsigned char)*s))
		s++;
	size_t k = strlen(s);
	while (k && isspace((unsigned char)s[k - 1]))
		s[--k] = '\0';
	return k ? strdup(s) : NULL;
}

/* The Hub's own words for a refusal (docs/remote.md 1.4). */
static enum wf_err hub_error(const struct wf_http_resp *r, const char *repo, const char *what, char *err)
{
	const char *code = r->error_code;
	if (strcmp(code, "GatedRepo") == 0)
		return wf_fail(err, WF_ERR_IO, "%s is gated: %s", repo,
			       r->status == 401 ? "log in (HF_TOKEN or the token file) with an account granted access"
						: "this token's account is not granted access yet");
	if (strcmp(code, "RepoNotFound") == 0 || (r->status == 401 && !code[0]) || (r->status == 404 && !code[0] &&
										      strcmp(what, "repo") == 0))
		return wf_fail(err, WF_ERR_IO, "no repository %s on the Hub (or it is private and %s)", repo,
			       token ? "this token has no access" : "no token was found: set HF_TOKEN");
	if (strcmp(code, "RevisionNotFound") == 0 || (r->status == 404 && strcmp(what, "revision") == 0))
		return wf_fail(err, WF_ERR_IO, "%s has no revision %s", repo, what);
	if (strcmp(code, "EntryNotFound") == 0 || r->status == 404)
		return wf_fail(err, WF_ERR_IO, "%s has no file %s", repo, what);
	if (r->status == 403)
		return wf_fail(err, WF_ERR_IO, "%s: access refused (HTTP 403)%s%s", repo, r->error_msg[0] ? ": " : "",
			       r->error_msg);
	return wf_fail(err, WF_ERR_IO, "%s: HTTP %ld%s%s", repo, r->status, r->error_msg[0] ? ": " : "", r->error_msg);
}

/* Makes the folders of rel under root and returns root/rel (malloc'd). */
static char *local_path(const char *rel)
{
	size_t n = strlen(root) + strlen(rel) + 2;
	char *p = malloc(n);
	if (!p)
		return NULL;
	snprintf(p, n, "%s/%s", root, rel);
	for (char *s = p + strlen(root) + 1; (s = strchr(s, '/')); s++) {
		*s = '\0';
		mkdir(p, 0755);
		*s = '/';
	}
	return p;
}

static enum wf_err add_placeholder(const char *rel, const char *url, int64_t size, struct wf_robj *o, char *err)
{
	char *p = local_path(rel);
	if (!p)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	struct stat st;
	bool ok = fd >= 0 && ftruncate(fd, size) == 0 && fstat(fd, &st) == 0;
	int e = errno;
	if (fd >= 0)
		close(fd);
	if (ok && !note_file(p))
		ok = false, e = ENOMEM;
	free(p);
	if (!ok)
		return wf_fail(err, WF_ERR_IO, "cannot stage %s: %s", rel, strerror(e));
	struct staged *r = realloc(reg, (n_reg + 1) * sizeof *reg);
	if (!r)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	reg = r;
	reg[n_reg] = (struct staged){.dev = st.st_dev, .ino = st.st_ino, .url = strdup(url), .size = size, .o = o,
				     .token = token, .sig = s3sig, .rel = strdup(rel)};
	if (!reg[n_reg].url || !reg[n_reg].rel)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	n_reg++;
	return WF_OK;
}

/* data as the staged file at path p (made, never replaced). */
static bool write_at(const char *p, const uint8_t *data, size_t len)
{
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0444);
	bool ok = fd >= 0;
	for (size_t done = 0; ok && done < len;) {
		ssize_t w = write(fd, data + done, len - done);
		ok = w > 0;
		done += ok ? (size_t)w : 0;
	}
	int e = errno;
	if (fd >= 0)
		close(fd);
	errno = e;
	return ok;
}

/* A small file to fetch with the pins (struct small), noted now so that
 * the files keep the listing's order. */
static enum wf_err defer_small(const char *rel, const char *url, const char *name, const char *if_match,
			       uint64_t size, char *err)
{
	struct small *v = realloc(smalls, (n_smalls + 1) * sizeof *smalls);
	if (!v)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	smalls = v;
	struct small *sm = &smalls[n_smalls];
	*sm = (struct small){.local = local_path(rel), .rel = strdup(rel), .url = strdup(url), .name = strdup(name),
			     .if_match = if_match ? strdup(if_match) : NULL, .size = size};
	n_smalls++;
	if (!sm->local || !sm->rel || !sm->url || !sm->name || (if_match && !sm->if_match) || !note_file(sm->local))
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	return WF_OK;
}

static void forget_smalls(void)
{
	for (size_t i = 0; i < n_smalls; i++)
		free(smalls[i].local), free(smalls[i].rel), free(smalls[i].url), free(smalls[i].name), free(smalls[i].if_match);
	free(smalls);
	smalls = NULL;
	n_smalls = 0;
}

static enum wf_err write_file(const char *rel, const uint8_t *data, size_t len, char *err)
{
	char *p = local_path(rel);
	if (!p)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	bool ok = write_at(p, data, len);
	int e = errno;
	if (ok && !note_file(p))
		ok = false, e = ENOMEM;
	free(p);
	return ok ? WF_OK : wf_fail(err, WF_ERR_IO, "cannot stage %s: %s", rel, strerror(e));
}

static enum wf_err make_root(char *err)
{
	const char *t = getenv("TMPDIR");
	char tmpl[4096];
	snprintf(tmpl, sizeof tmpl, "%s/weightfs-remote-XXXXXX", t && *t ? t : "/tmp");
	if (!mkdtemp(tmpl))
		return wf_fail(err, WF_ERR_IO, "cannot make a staging folder in %s: %s", t && *t ? t : "/tmp",
			       strerror(errno));
	chmod(tmpl, 0755);
	root = realpath(tmpl, NULL);
	return root ? WF_OK : wf_fail(err, WF_ERR_NOMEM, "out of memory");
}

/* ---- https:// ---- */

static enum wf_err stage_offline(const char *src, const char *endpoint, char **local, char *err);
static void save_record(const char *local_rel, const char *commit);

static enum wf_err stage_url(const char *src, char **local, char *err)
{
	if (wf_remote_conf.offline)
		return stage_offline(src, NULL, local, err);
	struct wf_robj *o;
	struct wf_robj_how how = {.want_size = -1};
	enum wf_err rc = wf_robj_open(&o, src, &how, err);
	if (rc != WF_OK)
		return rc;
	const char *end = src + strcspn(src, "?#"), *b = end;
	while (b > src && b[-1] != '/')
		b--;
	char name[256];
	size_t n = (size_t)(end - b);
	if (n == 0 || n >= sizeof name || memchr(b, '%', n))
		snprintf(name, sizeof name, "model%s", n > 5 && strncasecmp(end - 5, ".gguf", 5) == 0 ? ".gguf"
							: ".safetensors");
	else
		memcpy(name, b, n), name[n] = '\0';
	if ((rc = make_root(err)) != WF_OK || (rc = add_placeholder(name, wf_robj_url(o), (int64_t)wf_robj_size(o), o,
								   err)) != WF_OK)
		return rc;
	*local = local_path(name);
	if (!*local)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	rec = wf_remote_conf.cache ? wf_rec_new(src, NULL) : NULL;
	save_record(name, "");
	return WF_OK;
}

/* ---- hf:// ---- */

struct hub {
	char ep[1024], repo[512], rev[256], sub[1024], sha[64];
};

static enum wf_err parse_hf(struct hub *h, const char *src, char *err)
{
	const char *e = getenv("HF_ENDPOINT");
	snprintf(h->ep, sizeof h->ep, "%s", e && *e ? e : "https://huggingface.co");
	size_t k = strlen(h->ep);
	while (k && h->ep[k - 1] == '/')
		h->ep[--k] = '\0';
	const char *s = src + 5, *slash = strchr(s, '/');
	if (!slash || slash == s)
		return wf_fail(err, WF_ERR_IO, "not a Hub source: hf://ORG/NAME[@REVISION][/SUBFOLDER]");
	const char *name = slash + 1, *end = name + strcspn(name, "@/");
	if (end == name || (size_t)(end - s) >= sizeof h->repo)
		return wf_fail(err, WF_ERR_IO, "not a Hub source: hf://ORG/NAME[@REVISION][/SUBFOLDER]");
	memcpy(h->repo, s, (size_t)(end - s));
	h->repo[end - s] = '\0';
	snprintf(h->rev, sizeof h->rev, "main");
	const char *rest = end;
	if (*rest == '@') {
		const char *r = rest + 1, *re = r + strcspn(r, "/");
		/* refs/pr/N holds slashes: a revision runs to the end unless a subfolder follows it */
		if (strncmp(r, "refs/", 5) == 0)
			re = r + strlen(r);
		if (re == r || (size_t)(re - r) >= sizeof h->rev)
			return wf_fail(err, WF_ERR_IO, "an empty or too long revision after @");
		memcpy(h->rev, r, (size_t)(re - r));
		h->rev[re - r] = '\0';
		rest = re;
	}
	snprintf(h->sub, sizeof h->sub, "%s", *rest == '/' ? rest + 1 : "");
	k = strlen(h->sub);
	while (k && h->sub[k - 1] == '/')
		h->sub[--k] = '\0';
	if (strstr(h->sub, "..") || strstr(h->repo, ".."))
		return wf_fail(err, WF_ERR_IO, "a source with \"..\" in it");
	return WF_OK;
}

static void *api_h; /* the Hub's API calls of one staging, on one connection */

static enum wf_err api_get(const char *url, struct wf_http_resp *r, char *err)
{
	struct wf_http_req rq = {.url = url, .token = token, .follow = true, .cap = PAGE_MAX};
	return wf_http_do(api_h, &rq, r, err);
}

static enum wf_err resolve_rev(struct hub *h, char *err)
{
	if (strlen(h->rev) == 40 && strspn(h->rev, "0123456789abcdef") == 40) {
		snprintf(h->sha, sizeof h->sha, "%s", h->rev); /* a commit already */
	}
	char *rv = wf_http_escape(h->rev, false), url[4096];
	if (!rv)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	snprintf(url, sizeof url, "%s/api/models/%s/revision/%s", h->ep, h->repo, rv);
	free(rv);
	struct wf_http_resp r;
	enum wf_err rc = api_get(url, &r, err);
	if (rc != WF_OK)
		return rc;
	if (r.status != 200) {
		rc = hub_error(&r, h->repo, strcmp(r.error_code, "RevisionNotFound") == 0 ? h->rev : "repo", err);
		if (strcmp(r.error_code, "RevisionNotFound") == 0)
			rc = wf_fail(err, WF_ERR_IO, "%s has no revision %s", h->repo, h->rev);
		free(r.body);
		return rc;
	}
	cJSON *j = cJSON_ParseWithLength((const char *)r.body, r.body_len);
	free(r.body);
	const cJSON *sha = cJSON_GetObjectItemCaseSensitive(j, "sha");
	bool ok = cJSON_IsString(sha) && strlen(sha->valuestring) == 40 &&
		  strspn(sha->valuestring, "0123456789abcdef") == 40;
	if (ok)
		snprintf(h->sha, sizeof h->sha, "%s", sha->valuestring);
	cJSON_Delete(j);
	return ok ? WF_OK : wf_fail(err, WF_ERR_FORMAT, "%s: the revision API gave no commit (sha)", h->repo);
}

/* A weight file's placeholder, with its LFS sha256 when the listing gives
 * one: the name of its blob in the Hugging Face cache. */
static enum wf_err add_weight(const char *rel, const char *url, int64_t size, const cJSON *lfs, char *err)
{
	enum wf_err rc = add_placeholder(rel, url, size, NULL, err);
	const cJSON *oid = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "oid") : NULL;
	if (rc == WF_OK && cJSON_IsString(oid) && strlen(oid->valuestring) == 64 &&
	    strspn(oid->valuestring, "0123456789abcdef") == 64)
		reg[n_reg - 1].blob = strdup(oid->valuestring);
	return rc;
}

/* A small file fetched whole: into the record for offline stagings, and
 * into the Hugging Face cache layout (wf_hubcache.h); both best effort. */
static void keep_small(const struct hub *h, const char *path, const char *rel, const char *url,
		       const struct wf_http_resp *r)
{
	const char *etag = r->linked_etag[0] ? r->linked_etag : r->etag;
	const uint8_t *data = r->body ? r->body : (const uint8_t *)"";
	if (rec && !wf_rec_small(rec, rel, url, etag, data, r->body_len)) {
		wf_rec_free(rec); /* a record missing a file would stage a folder missing it */
		rec = NULL;
	}
	if (h && !wf_remote_conf.cache_off && etag[0])
		wf_hubc_put(h->repo, h->sha, path, etag, data, r->body_len);
}

static enum wf_err stage_entry(const struct hub *h, const cJSON *e, size_t *n_files, char *err)
{
	const cJSON *type = cJSON_GetObjectItemCaseSensitive(e, "type"), *path = cJSON_GetObjectItemCaseSensitive(e, "path"),
		    *size = cJSON_GetObjectItemCaseSensitive(e, "size"), *lfs = cJSON_GetObjectItemCaseSensitive(e, "lfs");
	if (!cJSON_IsString(type) || strcmp(type->valuestring, "file") != 0 || !cJSON_IsString(path))
		return WF_OK;
	const cJSON *ls = lfs ? cJSON_GetObjectItemCaseSensitive(lfs, "size") : NULL;
	double sz = cJSON_IsNumber(ls) ? ls->valuedouble : cJSON_IsNumber(size) ? size->valuedouble : -1;
	const char *p = path->valuestring;
	size_t sl = strlen(h->sub);
	if (sl && (strncmp(p, h->sub, sl) != 0 || p[sl] != '/'))
		return WF_OK;
	if (strstr(p, "..") || p[0] == '/' || sz < 0 || sz > 9e15)
		return wf_fail(err, WF_ERR_FORMAT, "%s: the listing has a bad entry", h->repo);
	bool weight = is_weight(p);
	if (!weight && (is_skipped(p) || sz > SMALL_MAX))
		return WF_OK;
	char *ep = wf_http_escape(p, true), url[8192];
	if (!ep)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	snprintf(url, sizeof url, "%s/%s/resolve/%s/%s", h->ep, h->repo, h->sha, ep);
	free(ep);
	char rel[4096];
	snprintf(rel, sizeof rel, "%s/%s", strrchr(h->repo, '/') + 1, p);
	(*n_files)++;
	if (weight) { /* pinned once the listing is done (pin_all) */
		enum wf_err prc = add_weight(rel, url, (int64_t)sz, lfs, err);
		if (prc == WF_OK)
			note_listed_digest(e);
		return prc;
	}
	enum wf_err rc = defer_small(rel, url, p, NULL, (uint64_t)sz, err);
	if (rc == WF_OK)
		note_listed_digest(e);
	return rc;
}

static enum wf_err stage_tree(const struct hub *h, size_t *n_files, char *err)
{
	char url[4096];
	snprintf(url, sizeof url, "%s/api/models/%s/tree/%s?recursive=true&expand=false", h->ep, h->repo, h->sha);
	enum wf_err rc = WF_OK;
	for (unsigned page_n = 0; rc == WF_OK && url[0]; page_n++) {
		if (page_n == PAGES_MAX)
			return wf_fail(err, WF_ERR_FORMAT, "%s: more than %d listing pages", h->repo, PAGES_MAX);
		struct wf_http_resp r;
		if ((rc = api_get(url, &r, err)) != WF_OK)
			return rc;
		if (r.status != 200) {
			rc = hub_error(&r, h->repo, "repo", err);
			free(r.body);
			return rc;
		}
		cJSON *j = cJSON_ParseWithLength((const char *)r.body, r.body_len);
		free(r.body);
		if (!cJSON_IsArray(j)) {
			cJSON_Delete(j);
			return wf_fail(err, WF_ERR_FORMAT, "%s: the tree API did not answer a JSON list", h->repo);
		}
		const cJSON *e;
		cJSON_ArrayForEach(e, j)
		{
			if ((rc = stage_entry(h, e, n_files, err)) != WF_OK)
				break;
		}
		cJSON_Delete(j);
		snprintf(url, sizeof url, "%s", r.next);
	}
	return rc;
}

/* The source being pinned (pin_all's callers): what a small file's
 * failure is worded by, and the Hub's cache layout is named by. */
static const struct hub *pin_hub;
static const struct wf_s3 *pin_s3;

/* Small file sm fetched whole and staged, on handle curl. */
static enum wf_err fetch_small(const struct small *sm, void *curl, char *err)
{
	struct wf_http_req rq = {.url = sm->url, .token = pin_s3 ? NULL : token, .sigv4 = pin_s3 ? s3sig : NULL,
				 .if_match = sm->if_match, .follow = !pin_s3, .cap = SMALL_MAX};
	struct wf_http_resp r;
	enum wf_err rc = wf_http_do(curl, &rq, &r, err);
	const char *label = pin_hub ? pin_hub->repo : "";
	if (rc == WF_OK && r.status != 200)
		rc = !pin_s3 ? hub_error(&r, label, sm->name, err)
		     : r.status == 412 ? wf_fail(err, WF_ERR_IO, "%s changed while it was listed", sm->name)
				       : wf_s3_refusal(pin_s3, &r, sm->name, err);
	else if (rc == WF_OK && r.body_len != sm->size)
		rc = wf_fail(err, WF_ERR_IO, "%s%s%s came %zu bytes, listed %llu", label, label[0] ? ": " : "", sm->name,
			     r.body_len, (unsigned long long)sm->size);
	if (rc == WF_OK && !write_at(sm->local, r.body ? r.body : (const uint8_t *)"", r.body_len))
		rc = wf_fail(err, WF_ERR_IO, "cannot stage %s: %s", sm->rel, strerror(errno));
	if (rc == WF_OK) {
		pthread_mutex_lock(&small_mu);
		keep_small(pin_hub, sm->name, sm->rel, sm->url, &r);
		pthread_mutex_unlock(&small_mu);
	}
	free(r.body);
	return rc;
}

/* Pinning: every weight file opened and every small file fetched side by
 * side, at most PIN_THREADS at once, each thread on one handle (its
 * connections kept alive from one file to the next): a folder of 100
 * shards costs a few round trips, not 100. */
#define PIN_THREADS 32

struct pin {
	size_t next;
	pthread_mutex_t mu;
	char (*why)[WF_ERRLEN]; /* per small file, then per entry: empty, or why it failed */
};

static void *pin_loop(void *u)
{
	struct pin *pn = u;
	void *curl = wf_http_new();
	for (;;) {
		pthread_mutex_lock(&pn->mu);
		size_t i = pn->next++;
		pthread_mutex_unlock(&pn->mu);
		if (i >= n_smalls + n_reg)
			break;
		char *why = pn->why[i];
		if (i < n_smalls) {
			if (fetch_small(&smalls[i], curl, why) == WF_OK)
				why[0] = '\0';
			continue;
		}
		struct staged *st = &reg[i - n_smalls];
		if (!st->o && open_staged(st, curl, why) != WF_OK) {
			st->o = NULL;
		} else {
			why[0] = '\0';
			/* when the probe did not bring the header's chunk: now, side by
			 * side, so the parse that follows needs no round trip per file */
			wf_robj_prefetch_head(st->o, curl);
		}
	}
	wf_http_free(curl);
	return NULL;
}

/* Pins what the listing staged and fetches its small files; a gated or
 * missing file refuses the mount (the first in listing order says why,
 * small files first). */
static enum wf_err pin_all(const char *label, char *err)
{
	size_t n_all = n_smalls + n_reg;
	struct pin pn = {.next = 0, .why = calloc(n_all ? n_all : 1, WF_ERRLEN)};
	if (!pn.why)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	for (size_t i = 0; i < n_smalls; i++)
		snprintf(pn.why[i], WF_ERRLEN, "not fetched");
	pthread_mutex_init(&pn.mu, NULL);
	pthread_t t[PIN_THREADS];
	unsigned n = 0;
	for (; n < PIN_THREADS && n + 1 < n_all; n++)
		if (pthread_create(&t[n], NULL, pin_loop, &pn) != 0)
			break;
	pin_loop(&pn);
	for (unsigned i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	pthread_mutex_destroy(&pn.mu);
	enum wf_err rc = WF_OK;
	for (size_t i = 0; i < n_smalls && rc == WF_OK; i++)
		if (pn.why[i][0])
			rc = wf_fail(err, WF_ERR_IO, "%s", pn.why[i]);
	for (size_t i = 0; i < n_reg && rc == WF_OK; i++)
		if (!reg[i].o) {
			const char *rel = strstr(reg[i].url, "/resolve/");
			rel = rel ? strchr(rel + 9, '/') : NULL;
			rc = wf_fail(err, WF_ERR_IO, "%s: %s: %s", label, rel ? rel + 1 : reg[i].url, pn.why[n_smalls + i]);
		}
	free(pn.why);
	forget_smalls();
	return rc;
}

/* The record of what was staged, pins and all, into the cache (for a
 * later -o offline); a failure costs only that. */
static void save_record(const char *local_rel, const char *commit)
{
	if (!rec)
		return;
	char e[WF_ERRLEN];
	wf_rec_set(rec, local_rel, commit);
	bool ok = true;
	for (size_t i = 0; ok && i < n_reg; i++)
		ok = !reg[i].o || wf_rec_weight(rec, reg[i].rel, reg[i].url, reg[i].o);
	if (ok)
		wf_rec_save(rec, e);
	wf_rec_free(rec);
	rec = NULL;
}

static enum wf_err stage_hf(const char *src, char **local, char *err)
{
	struct hub h;
	memset(&h, 0, sizeof h);
	size_t n = 0;
	enum wf_err rc = parse_hf(&h, src, err);
	if (rc != WF_OK)
		return rc;
	snprintf(hub_repo, sizeof hub_repo, "%s", h.repo);
	/* the record's name: hf://org/name and hf://org/name@main are one source */
	char canon[2048];
	snprintf(canon, sizeof canon, "hf://%s@%s/%s", h.repo, h.rev, h.sub);
	if (wf_remote_conf.offline || wf_truthy(getenv("HF_HUB_OFFLINE")) || wf_truthy(getenv("TRANSFORMERS_OFFLINE")))
		return stage_offline(canon, h.ep, local, err);
	token = find_token();
	api_h = wf_http_new();
	if ((rc = resolve_rev(&h, err)) == WF_OK && (rc = make_root(err)) == WF_OK) {
		rec = wf_remote_conf.cache ? wf_rec_new(canon, h.ep) : NULL;
		rc = stage_tree(&h, &n, err);
	}
	wf_http_free(api_h);
	api_h = NULL;
	pin_hub = &h;
	if (rc == WF_OK)
		rc = pin_all(h.repo, err);
	pin_hub = NULL;
	if (rc != WF_OK)
		return rc;
	if (n == 0)
		return wf_fail(err, WF_ERR_IO, "%s has no model files%s%s at %s", h.repo, h.sub[0] ? " under " : "",
			       h.sub, h.rev);
	char rel[4096];
	snprintf(rel, sizeof rel, "%s%s%s", strrchr(h.repo, '/') + 1, h.sub[0] ? "/" : "", h.sub);
	save_record(rel, h.sha);
	if (!wf_remote_conf.cache_off && strcmp(h.rev, h.sha) != 0)
		wf_hubc_ref(h.repo, h.rev, h.sha);
	snprintf(hub_sha, sizeof hub_sha, "%s", h.sha);
	size_t k = strlen(root) + strlen(rel) + 2;
	*local = malloc(k);
	if (!*local)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	snprintf(*local, k, "%s/%s", root, rel);
	return WF_OK;
}

/* ---- s3:// ---- */

#define S3_KEYS_MAX 100000 /* objects listed under one prefix at most */

struct s3_walk {
	const struct wf_s3 *s3;
	const char *prefix; /* the folder's, ending in '/' */
	const char *dir;    /* the staged folder's name */
	size_t n_files, n_seen;
};

/* One object of the prefix's listing: a weight file becomes a
 * placeholder (pinned after the listing), a small file is fetched whole
 * at the ETag listed, anything else is left out as for the Hub. */
static enum wf_err stage_obj(void *u, const struct wf_s3_obj *ob, char *err)
{
	struct s3_walk *w = u;
	size_t pl = strlen(w->prefix);
	const char *rel = ob->key + pl;
	w->n_seen++;
	if (strncmp(ob->key, w->prefix, pl) != 0 || !*rel || rel[strlen(rel) - 1] == '/')
		return WF_OK; /* a folder marker, or outside the prefix */
	if (rel[0] == '/' || strstr(rel, "//") || strcmp(rel, "..") == 0 || strncmp(rel, "../", 3) == 0 ||
	    strstr(rel, "/../") || (strlen(rel) >= 3 && strcmp(rel + strlen(rel) - 3, "/..") == 0))
		return wf_fail(err, WF_ERR_FORMAT, "the key %s is no path inside the folder", ob->key);
	bool weight = is_weight(rel);
	if (!weight && (is_skipped(rel) || ob->size > SMALL_MAX))
		return WF_OK;
	char url[8192], lrel[4096];
	wf_s3_object_url(w->s3, ob->key, url, sizeof url);
	snprintf(lrel, sizeof lrel, "%s/%s", w->dir, rel);
	w->n_files++;
	if (weight)
		return add_placeholder(lrel, url, (int64_t)ob->size, NULL, err);
	return defer_small(lrel, url, ob->key, ob->etag[0] ? ob->etag : NULL, ob->size, err);
}

/* s3://BUCKET/KEY: one object, named as its key's last part. */
static enum wf_err stage_s3_object(const struct wf_s3 *s3, char **local, char *err)
{
	char url[8192];
	wf_s3_object_url(s3, s3->key, url, sizeof url);
	struct wf_robj *o;
	struct wf_robj_how how = {.sig = s3sig, .want_size = -1};
	enum wf_err rc = wf_robj_open(&o, url, &how, err);
	if (rc != WF_OK)
		return rc;
	const char *b = strrchr(s3->key, '/');
	b = b ? b + 1 : s3->key;
	if ((!root && (rc = make_root(err)) != WF_OK) ||
	    (rc = add_placeholder(b, url, (int64_t)wf_robj_size(o), o, err)) != WF_OK)
		return rc;
	*local = local_path(b);
	if (!*local)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	char canon[1400];
	snprintf(canon, sizeof canon, "s3://%s/%s", s3->bucket, s3->key);
	wf_rec_free(rec);
	rec = wf_remote_conf.cache ? wf_rec_new(canon, s3->endpoint) : NULL;
	save_record(b, "");
	return WF_OK;
}

/* -o offline: an s3:// source staged again from the record an online
 * staging left (no request sent): as one object when it was one, else
 * as the folder, which a KEY without its slash also names. */
static enum wf_err stage_s3_offline(const struct wf_s3 *s3, char **local, char *err)
{
	char a[1400];
	size_t kl = strlen(s3->key);
	bool slash = kl && s3->key[kl - 1] == '/';
	if (kl && !slash) {
		snprintf(a, sizeof a, "s3://%s/%s", s3->bucket, s3->key);
		char e[WF_ERRLEN];
		if (stage_offline(a, s3->endpoint, local, e) == WF_OK)
			return WF_OK;
	}
	snprintf(a, sizeof a, "s3://%s/%s%s", s3->bucket, s3->key, kl && !slash ? "/" : "");
	return stage_offline(a, s3->endpoint, local, err);
}

/* s3://BUCKET[/PREFIX[/]]: the objects under PREFIX/ as a folder; a KEY
 * with nothing under KEY/ is one object. */
static enum wf_err stage_s3(const char *src, char **local, char *err)
{
	struct wf_s3 s3;
	enum wf_err rc = wf_s3_init(&s3, src, err);
	if (rc != WF_OK)
		return rc;
	if (!s3.anonymous && !(s3sig = malloc(sizeof *s3sig)))
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	if (s3sig)
		*s3sig = s3.sig;
	if (wf_remote_conf.offline)
		return stage_s3_offline(&s3, local, err);
	char prefix[1100], dir[1100];
	size_t kl = strlen(s3.key);
	snprintf(prefix, sizeof prefix, "%s%s", s3.key, kl && s3.key[kl - 1] != '/' ? "/" : "");
	/* the folder's name: the prefix's last part, else the bucket's */
	snprintf(dir, sizeof dir, "%s", prefix);
	size_t dl = strlen(dir);
	while (dl && dir[dl - 1] == '/')
		dir[--dl] = '\0';
	const char *name = strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dl ? dir : s3.bucket;
	char dname[300];
	snprintf(dname, sizeof dname, "%s", name);
	if ((rc = make_root(err)) != WF_OK)
		return rc;
	char canon[1400];
	snprintf(canon, sizeof canon, "s3://%s/%s", s3.bucket, prefix);
	rec = wf_remote_conf.cache ? wf_rec_new(canon, s3.endpoint) : NULL;
	struct s3_walk w = {.s3 = &s3, .prefix = prefix, .dir = dname};
	if ((rc = wf_s3_list(&s3, prefix, S3_KEYS_MAX, stage_obj, &w, err)) != WF_OK)
		return rc;
	if (w.n_seen == 0 && kl && s3.key[kl - 1] != '/')
		return stage_s3_object(&s3, local, err);
	if (w.n_files == 0)
		return wf_fail(err, WF_ERR_IO, "no model files under %s%s", prefix[0] ? prefix : "the bucket",
			       w.n_seen ? "" : " (no objects at all)");
	char label[1400];
	snprintf(label, sizeof label, "s3://%s/%s", s3.bucket, prefix);
	pin_s3 = &s3;
	rc = pin_all(label, err);
	pin_s3 = NULL;
	if (rc != WF_OK)
		return rc;
	save_record(dname, "");
	size_t k = strlen(root) + strlen(dname) + 2;
	if (!(*local = malloc(k)))
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	snprintf(*local, k, "%s/%s", root, dname);
	return WF_OK;
}

/* ---- -o offline: staged again from the cache's record ---- */

static enum wf_err stage_offline_file(const struct wf_rec_file *f, char *err)
{
	if (!f->weight) {
		uint8_t *data = wf_rec_small_data(f);
		if (!data)
			return wf_fail(err, WF_ERR_IO, "-o offline: %s is no longer in the cache", f->rel);
		enum wf_err rc = write_file(f->rel, data, (size_t)f->size, err);
		free(data);
		return rc;
	}
	struct wf_robj *o;
	enum wf_err rc = wf_robj_pinned(&o, f->open_url, f->url, f->etag, f->size, NULL, err);
	return rc == WF_OK ? add_placeholder(f->rel, f->open_url, (int64_t)f->size, o, err) : rc;
}

static enum wf_err stage_offline(const char *src, const char *endpoint, char **local, char *err)
{
	struct wf_rec *r;
	if (!wf_remote_conf.offline) {
		/* HF_HUB_OFFLINE: no network for the reads either, while staged */
		wf_remote_conf.offline = offline_env = true;
		char e[WF_ERRLEN];
		enum wf_err rc = cache_setup(e);
		if (rc != WF_OK || !wf_remote_conf.cache)
			return wf_fail(err, WF_ERR_IO, "HF_HUB_OFFLINE is set: %s", rc != WF_OK ? e : "no cache");
	}
	enum wf_err rc = wf_rec_load(src, endpoint, &r, err);
	if (rc != WF_OK)
		return rc;
	/* the chunks were cached at the recorded size */
	uint64_t chunk = wf_rec_chunk(r);
	if (chunk >= (64u << 10) && chunk <= (256u << 20) && chunk % 4096 == 0)
		wf_remote_conf.chunk = chunk;
	rc = make_root(err);
	struct wf_rec_file f;
	for (size_t i = 0; rc == WF_OK && i < wf_rec_count(r); i++)
		if (wf_rec_file(r, i, &f))
			rc = stage_offline_file(&f, err);
	if (rc == WF_OK && !(*local = local_path(wf_rec_local(r))))
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
	if (rc == WF_OK && strncmp(src, "hf://", 5) == 0) {
		snprintf(hub_sha, sizeof hub_sha, "%s", wf_rec_commit(r));
	}
	wf_rec_free(r);
	return rc;
}

/* The cache folder for this staging: -o cache=DIR as named (a failure
 * refuses), else the default one (a failure is a warning: uncached). */
static enum wf_err cache_setup(char *err)
{
	warning[0] = '\0';
	if (wf_remote_conf.cache_off)
		return wf_remote_conf.offline ? wf_fail(err, WF_ERR_IO, "-o offline needs the cache: not with "
							"cache=none") : WF_OK;
	char dir[4096], *real = NULL, e[WF_ERRLEN];
	bool named = wf_remote_conf.cache != NULL;
	enum wf_err rc = named ? WF_OK : wf_cache_default(dir, sizeof dir, e);
	const char *want = named ? wf_remote_conf.cache : dir;
	if (rc == WF_OK && wf_remote_conf.offline)
		/* only read: a read-only cache serves offline too */
		rc = (real = realpath(want, NULL)) ? WF_OK
			: wf_fail(e, WF_ERR_IO, "offline (-o offline, or HF_HUB_OFFLINE for hf://): there is no cache "
				  "folder %s, so it has nothing of this source (mount it online once, or weightfs fetch "
				  "it)", want);
	else if (rc == WF_OK)
		rc = wf_cache_ready(want, &real, e);
	if (rc != WF_OK) {
		if (wf_remote_conf.offline)
			return wf_fail(err, WF_ERR_IO, "%s", e);
		if (named)
			return wf_fail(err, WF_ERR_IO, "-o cache: %s", e);
		snprintf(warning, sizeof warning, "%s; going on without a cache", e);
		return WF_OK;
	}
	static char keep[4096];
	snprintf(keep, sizeof keep, "%s", real);
	free(real);
	wf_remote_conf.cache = keep;
	return WF_OK;
}

const char *wf_source_warning(void)
{
	return warning[0] ? warning : NULL;
}

bool wf_source_weight(size_t i, struct wf_source_weight *w)
{
	memset(w, 0, sizeof *w);
	if (i >= n_reg)
		return false;
	w->o = reg[i].o;
	w->blob = reg[i].blob;
	/* the path in the repository: the staging path less the repository's name */
	const char *slash = hub_repo[0] ? strchr(reg[i].rel, '/') : NULL;
	w->path = slash ? slash + 1 : reg[i].rel;
	return true;
}

const char *wf_source_hub(const char **commit)
{
	*commit = hub_sha;
	return hub_repo[0] && hub_sha[0] ? hub_repo : NULL;
}

enum wf_err wf_source_stage(const char *src, char **local, char *err)
{
	*local = NULL;
	enum wf_err rc = wf_remote_conf.offline ? WF_OK : wf_http_global(err);
	if (rc != WF_OK)
		return rc;
	pthread_mutex_lock(&mu);
	struct kept *k = realloc(kept, (n_kept + 1) * sizeof *kept);
	if (!k) {
		pthread_mutex_unlock(&mu);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	kept = k;
	rc = cache_setup(err);
	if (rc == WF_OK)
		rc = strncmp(src, "hf://", 5) == 0   ? stage_hf(src, local, err)
		     : strncmp(src, "s3://", 5) == 0 ? stage_s3(src, local, err)
						     : stage_url(src, local, err);
	/* this source's folder and credentials stay for its objects; the next
	 * source gets its own */
	kept[n_kept++] = (struct kept){.root = root, .token = token, .sig = s3sig};
	root = token = NULL;
	s3sig = NULL;
	pthread_mutex_unlock(&mu);
	/* gone at exit, whoever exits: a command, or the mount's daemon (the
	 * parent of its fork leaves by _exit, which runs no handler) */
	static bool once;
	if (!once)
		once = atexit(wf_source_cleanup) == 0;
	return rc;
}

enum wf_err wf_source_open(const char *path, struct wf_robj **out, char *err)
{
	*out = NULL;
	if (!n_reg)
		return WF_OK;
	struct stat st;
	if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
		return WF_OK;
	enum wf_err rc = WF_OK;
	pthread_mutex_lock(&mu);
	for (size_t i = 0; i < n_reg; i++) {
		struct staged *s = &reg[i];
		if (s->dev != st.st_dev || s->ino != st.st_ino)
			continue;
		if (!s->o)
			rc = open_staged(s, NULL, err);
		*out = s->o;
		break;
	}
	pthread_mutex_unlock(&mu);
	return rc;
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *f)
{
	(void)st, (void)f;
	return flag == FTW_DP ? rmdir(p) : unlink(p);
}

/* The staging folder, ours alone: files and folders, no links followed. */
static void rm_tree(const char *p)
{
	nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void wf_source_cleanup(void)
{
	for (size_t i = 0; i < n_kept; i++) {
		if (kept[i].root)
			rm_tree(kept[i].root);
		free(kept[i].root), free(kept[i].token), free(kept[i].sig);
	}
	free(kept);
	kept = NULL;
	n_kept = 0;
	forget_files();
	forget_smalls();
	for (size_t i = 0; i < n_reg; i++)
		free(reg[i].url), free(reg[i].rel), free(reg[i].blob);
	wf_rec_free(rec);
	rec = NULL;
	free(reg);
	reg = NULL;
	n_reg = 0;
	hub_repo[0] = hub_sha[0] = '\0';
	free(token);
	token = NULL;
	if (offline_env)
		wf_remote_conf.offline = offline_env = false;
}
