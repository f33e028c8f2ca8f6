/* wf_s3.c - S3-compatible stores: settings, listing, refusals (wf_s3.h). */
#include "net/wf_s3.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define INI_MAX (1u << 20)     /* a config or credentials file read at most */
#define PAGE_MAX (16u << 20)   /* one listing page at most (1,000 keys are ~0.5 MB) */
#define KEY_MAX 1024           /* S3's own limit on a key's bytes */

static const char *env(const char *name)
{
	const char *v = getenv(name);
	return v && *v ? v : NULL;
}

static char *trim(char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strlen(s);
	while (n && (s[n - 1] == ' ' || s[n - 1] == '\t' || s[n - 1] == '\r' || s[n - 1] == '\n'))
		s[--n] = '\0';
	return s;
}

/* The value of key in [section] of an INI file (the AWS shared files'
 * format: '#' or ';' comments, `name = value`).  *had_section: the
 * section exists.  False when the file, the section or the key is absent. */
static bool ini_get(const char *path, const char *section, const char *key, char *out, size_t cap,
		    bool *had_section)
{
	FILE *f = path ? fopen(path, "re") : NULL;
	if (!f)
		return false;
	char line[8192];
	bool in = false, found = false;
	size_t total = 0;
	while (!found && fgets(line, sizeof line, f) && (total += strlen(line)) <= INI_MAX) {
		char *s = trim(line);
		if (*s == '#' || *s == ';' || !*s)
			continue;
		if (*s == '[') {
			char *e = strrchr(s, ']');
			if (e)
				*e = '\0';
			in = strcmp(trim(s + 1), section) == 0;
			if (in && had_section)
				*had_section = true;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!in || !eq)
			continue;
		*eq = '\0';
		if (strcmp(trim(s), key) == 0 && strlen(trim(eq + 1)) < cap) {
			snprintf(out, cap, "%s", trim(eq + 1));
			found = true;
		}
	}
	fclose(f);
	return found;
}

struct files {
	char config[4096], creds[4096];
	char profile[256], config_section[270];
	bool profile_named; /* AWS_PROFILE named it: it must exist */
};

static void find_files(struct files *fl)
{
	const char *home = env("HOME"), *c = env("AWS_CONFIG_FILE"), *k = env("AWS_SHARED_CREDENTIALS_FILE");
	snprintf(fl->config, sizeof fl->config, "%s%s", c ? c : home ? home : "", c ? "" : home ? "/.aws/config" : "");
	snprintf(fl->creds, sizeof fl->creds, "%s%s", k ? k : home ? home : "",
		 k ? "" : home ? "/.aws/credentials" : "");
	const char *p = env("AWS_PROFILE");
	if (!p)
		p = env("AWS_DEFAULT_PROFILE");
	fl->profile_named = p != NULL;
	snprintf(fl->profile, sizeof fl->profile, "%s", p ? p : "default");
	/* config names its sections "profile NAME", except [default] */
	snprintf(fl->config_section, sizeof fl->config_section, "%s%s", strcmp(fl->profile, "default") ? "profile " : "",
		 fl->profile);
}

/* The profile's value of key: the credentials file first for the secrets,
 * the config file for the rest (both are read for both, as the CLI does). */
static bool profile_get(const struct files *fl, const char *key, char *out, size_t cap, bool *had)
{
	return ini_get(fl->creds[0] ? fl->creds : NULL, fl->profile, key, out, cap, had) ||
	       ini_get(fl->config[0] ? fl->config : NULL, fl->config_section, key, out, cap, had);
}

static enum wf_err credentials(struct wf_s3 *s, const struct files *fl, bool *had, char *err)
{
	const char *k = env("AWS_ACCESS_KEY_ID"), *sec = env("AWS_SECRET_ACCESS_KEY"), *tok = env("AWS_SESSION_TOKEN");
	if (k || sec) {
		if (!k || !sec)
			return wf_fail(err, WF_ERR_IO, "%s is set but %s is not", k ? "AWS_ACCESS_KEY_ID" : "AWS_SECRET_ACCESS_KEY",
				       k ? "AWS_SECRET_ACCESS_KEY" : "AWS_ACCESS_KEY_ID");
		if (strlen(k) >= sizeof s->sig.key || strlen(sec) >= sizeof s->sig.secret ||
		    (tok && strlen(tok) >= sizeof s->sig.session))
			return wf_fail(err, WF_ERR_IO, "AWS credentials in the environment are too long");
		snprintf(s->sig.key, sizeof s->sig.key, "%s", k);
		snprintf(s->sig.secret, sizeof s->sig.secret, "%s", sec);
		snprintf(s->sig.session, sizeof s->sig.session, "%s", tok ? tok : "");
		snprintf(s->cred_from, sizeof s->cred_from, "the environment (AWS_ACCESS_KEY_ID)");
		return WF_OK;
	}
	/* the CLI's order: the credentials file's keys, then the profile's
	 * credential_process, then the config file's keys */
	const char *cf = fl->creds[0] ? fl->creds : NULL;
	bool ck = ini_get(cf, fl->profile, "aws_access_key_id", s->sig.key, sizeof s->sig.key, had);
	bool cs = ini_get(cf, fl->profile, "aws_secret_access_key", s->sig.secret, sizeof s->sig.secret, had);
	char cmd[4096];
	if (!ck && !cs && profile_get(fl, "credential_process", cmd, sizeof cmd, had)) {
		enum wf_err rc = wf_s3_process(cmd, fl->profile, &s->sig, err);
		if (rc == WF_OK)
			snprintf(s->cred_from, sizeof s->cred_from, "the credential_process of profile %s", fl->profile);
		return rc;
	}
	bool hk = profile_get(fl, "aws_access_key_id", s->sig.key, sizeof s->sig.key, had);
	bool hs = profile_get(fl, "aws_secret_access_key", s->sig.secret, sizeof s->sig.secret, had);
	if (hk != hs)
		return wf_fail(err, WF_ERR_IO, "profile %s has %s but not %s", fl->profile,
			       hk ? "aws_access_key_id" : "aws_secret_access_key",
			       hk ? "aws_secret_access_key" : "aws_access_key_id");
	if (!hk && wf_s3_container_set()) {
		enum wf_err rc = wf_s3_container(&s->sig, err);
		if (rc == WF_OK)
			snprintf(s->cred_from, sizeof s->cred_from, "the container's credentials endpoint");
		return rc;
	}
	if (!hk) {
		s->anonymous = true;
		snprintf(s->cred_from, sizeof s->cred_from, "nowhere: requests go unsigned");
		return WF_OK;
	}
	profile_get(fl, "aws_session_token", s->sig.session, sizeof s->sig.session, had);
	snprintf(s->cred_from, sizeof s->cred_from, "profile %s", fl->profile);
	return WF_OK;
}

static enum wf_err endpoint(struct wf_s3 *s, const struct files *fl, char *err)
{
	char ep[1024] = "";
	if (!wf_truthy(getenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS"))) {
		const char *e = env("AWS_ENDPOINT_URL_S3");
		if (!e)
			e = env("AWS_ENDPOINT_URL");
		if (e && strlen(e) < sizeof ep)
			snprintf(ep, sizeof ep, "%s", e);
		else if (!e)
			profile_get(fl, "endpoint_url", ep, sizeof ep, NULL);
	}
	if (!ep[0]) {
		/* AWS itself: virtual-hosted, unless a dot in the bucket's name
		 * would break the certificate's wildcard */
		s->path_style = strchr(s->bucket, '.') != NULL;
		snprintf(s->endpoint, sizeof s->endpoint, "https://s3.%s.amazonaws.com", s->region);
		return WF_OK;
	}
	size_t n = strlen(ep);
	while (n && ep[n - 1] == '/')
		ep[--n] = '\0';
	if ((strncmp(ep, "http://", 7) != 0 && strncmp(ep, "https://", 8) != 0) || strchr(strstr(ep, "//") + 2, '/') ||
	    strpbrk(ep, "?# "))
		return wf_fail(err, WF_ERR_IO, "the S3 endpoint %s is not http(s)://HOST[:PORT]", ep);
	snprintf(s->endpoint, sizeof s->endpoint, "%s", ep);
	s->path_style = true; /* custom stores (Ceph, MinIO, R2) answer path-style */
	return WF_OK;
}

static enum wf_err parse_src(struct wf_s3 *s, const char *src, char *err)
{
	const char *b = src + 5, *slash = strchr(b, '/');
	size_t bn = slash ? (size_t)(slash - b) : strlen(b);
	if (strncmp(src, "s3://", 5) != 0 || bn == 0 || bn >= sizeof s->bucket)
		return wf_fail(err, WF_ERR_IO, "not an S3 source: s3://BUCKET[/PREFIX/ or /KEY]");
	for (size_t i = 0; i < bn; i++)
		if (!((b[i] >= 'a' && b[i] <= 'z') || (b[i] >= 'A' && b[i] <= 'Z') || (b[i] >= '0' && b[i] <= '9') ||
		      b[i] == '-' || b[i] == '.' || b[i] == '_'))
			return wf_fail(err, WF_ERR_IO, "not an S3 bucket name: %.*s", (int)bn, b);
	memcpy(s->bucket, b, bn);
	s->bucket[bn] = '\0';
	const char *k = slash ? slash + 1 : "";
	if (strlen(k) >= sizeof s->key)
		return wf_fail(err, WF_ERR_IO, "an S3 key longer than %d bytes", KEY_MAX);
	for (const char *p = k; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			return wf_fail(err, WF_ERR_IO, "an S3 key with a control character");
	snprintf(s->key, sizeof s->key, "%s", k);
	return WF_OK;
}

enum wf_err wf_s3_init(struct wf_s3 *s, const char *src, char *err)
{
	memset(s, 0, sizeof *s);
	enum wf_err rc = parse_src(s, src, err);
	if (rc != WF_OK)
		return rc;
	struct files fl;
	find_files(&fl);
	bool had = false;
	if ((rc = credentials(s, &fl, &had, err)) != WF_OK)
		return rc;
	const char *r = env("AWS_REGION");
	if (!r)
		r = env("AWS_DEFAULT_REGION");
	if (r && strlen(r) < sizeof s->region)
		snprintf(s->region, sizeof s->region, "%s", r);
	else if (!profile_get(&fl, "region", s->region, sizeof s->region, &had))
		snprintf(s->region, sizeof s->region, "us-east-1");
	if (strspn(s->region, "abcdefghijklmnopqrstuvwxyz0123456789-") != strlen(s->region) || !s->region[0])
		return wf_fail(err, WF_ERR_IO, "not an AWS region name: %s", s->region);
	if (fl.profile_named && !had && !env("AWS_ACCESS_KEY_ID"))
		return wf_fail(err, WF_ERR_IO, "the AWS profile %s is in neither %s nor %s", fl.profile, fl.creds,
			       fl.config);
	if ((rc = endpoint(s, &fl, err)) != WF_OK)
		return rc;
	/* every field given: libcurl 7.88 would guess region and service from
	 * the host's name, which fails for an address (docs/remote.md) */
	snprintf(s->sig.provider, sizeof s->sig.provider, "aws:amz:%s:s3", s->region);
	return WF_OK;
}

const struct wf_http_sigv4 *wf_s3_sig(const struct wf_s3 *s)
{
	return s->anonymous ? NULL : &s->sig;
}

/* The bucket's URL (no trailing slash) in out. */
static void bucket_url(const struct wf_s3 *s, char *out, size_t cap)
{
	if (s->path_style) {
		snprintf(out, cap, "%s/%s", s->endpoint, s->bucket);
		return;
	}
	const char *host = strstr(s->endpoint, "://") + 3;
	snprintf(out, cap, "%.*s%s.%s", (int)(host - s->endpoint), s->endpoint, s->bucket, host);
}

void wf_s3_object_url(const struct wf_s3 *s, const char *key, char *out, size_t cap)
{
	char b[1400];
	bucket_url(s, b, sizeof b);
	char *k = wf_http_escape(key, true);
	snprintf(out, cap, "%s/%s", b, k ? k : "");
	free(k);
}

/* ---- one listing page ---- */

/* The text of the first <name>...</name> in [p, e), entities decoded
 * into out; false when absent or longer than cap - 1. */
static bool xml_text(const char *p, const char *e, const char *name, char *out, size_t cap)
{
	char open[48], close[48];
	size_t on = (size_t)snprintf(open, sizeof open, "<%s>", name), cn = (size_t)snprintf(close, sizeof close, "</%s>", name);
	const char *s = NULL;
	for (const char *q = p; q + on <= e; q++)
		if (*q == '<' && memcmp(q, open, on) == 0) {
			s = q + on;
			break;
		}
	if (!s)
		return false;
	const char *t = NULL;
	for (const char *q = s; q + cn <= e; q++)
		if (*q == '<') {
			if (memcmp(q, close, cn) != 0)
				return false; /* markup inside a text field: not a page we read */
			t = q;
			break;
		}
	if (!t)
		return false;
	size_t n = 0;
	for (const char *q = s; q < t; n++) {
		if (n + 4 >= cap)
			return false;
		if (*q != '&') {
			out[n] = *q++;
			continue;
		}
		static const struct { const char *ent; char c; } ents[] = {
			{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}, {"&apos;", '\''}};
		size_t i = 0;
		for (; i < sizeof ents / sizeof ents[0]; i++) {
			size_t k = strlen(ents[i].ent);
			if ((size_t)(t - q) >= k && memcmp(q, ents[i].ent, k) == 0) {
				out[n] = ents[i].c;
				q += k;
				break;
			}
		}
		if (i < sizeof ents / sizeof ents[0])
			continue;
		/* &#N; and &#xN;: ASCII only; a key's other characters come UTF-8 */
		char *end;
		unsigned long v = q + 2 < t && q[1] == '#' ? strtoul(q + 2 + (q[2] == 'x'), &end, q[2] == 'x' ? 16 : 10) : 0;
		if (!v || v > 0x7f || end >= t || *end != ';')
			return false;
		out[n] = (char)v;
		q = end + 1;
	}
	out[n] = '\0';
	return true;
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* encoding-type=url: keys come percent-encoded. */
static bool unescape(char *s)
{
	char *o = s;
	for (const char *p = s; *p; p++) {
		if (*p != '%') {
			*o++ = *p == '+' ? ' ' : *p;
			continue;
		}
		int a = hexval(p[1]), b = a >= 0 ? hexval(p[2]) : -1;
		if (b < 0 || (a == 0 && b == 0))
			return false;
		*o++ = (char)(a * 16 + b);
		p += 2;
	}
	*o = '\0';
	return true;
}

static enum wf_err one_object(const char *p, const char *e, bool url_keys, uint64_t *count, uint64_t max_keys,
			      enum wf_err (*fn)(void *, const struct wf_s3_obj *, char *), void *u, char *err)
{
	char key[KEY_MAX * 3 + 8], size[32], etag[160];
	if (!xml_text(p, e, "Key", key, sizeof key) || !xml_text(p, e, "Size", size, sizeof size))
		return wf_fail(err, WF_ERR_FORMAT, "a listing entry without a readable Key and Size");
	if (url_keys && !unescape(key))
		return wf_fail(err, WF_ERR_FORMAT, "a listing entry's Key is not percent-encoded right");
	if (!key[0] || strlen(key) > KEY_MAX)
		return wf_fail(err, WF_ERR_FORMAT, "a listing entry's Key is empty or over %d bytes", KEY_MAX);
	if (!xml_text(p, e, "ETag", etag, sizeof etag))
		etag[0] = '\0';
	char *end;
	errno = 0;
	unsigned long long sz = strtoull(size, &end, 10);
	if (errno || end == size || *end || size[0] == '-' || sz > (1ull << 50))
		return wf_fail(err, WF_ERR_FORMAT, "the listing gives %s a size of %s", key, size);
	if (++*count > max_keys)
		return wf_fail(err, WF_ERR_IO, "more than %llu objects under the prefix: name a narrower one",
			       (unsigned long long)max_keys);
	struct wf_s3_obj o = {.key = key, .size = sz, .etag = etag};
	return fn(u, &o, err);
}

enum wf_err wf_s3_parse_page(const char *body, size_t n, char *next, size_t next_cap, uint64_t *count,
			     uint64_t max_keys, enum wf_err (*fn)(void *u, const struct wf_s3_obj *o, char *err),
			     void *u, char *err)
{
	next[0] = '\0';
	const char *e = body + n;
	const char *root = NULL;
	for (const char *q = body; q + 17 <= e && !root; q++)
		if (*q == '<' && memcmp(q, "<ListBucketResult", 17) == 0)
			root = q;
	if (!root)
		return wf_fail(err, WF_ERR_FORMAT, "the listing is not a ListBucketResult");
	char enc[16], trunc[16];
	bool url_keys = false, more = false;
	/* top-level fields come before or after the Contents; look outside them */
	const char *first = NULL;
	for (const char *q = root; q + 10 <= e && !first; q++)
		if (*q == '<' && memcmp(q, "<Contents>", 10) == 0)
			first = q;
	if (xml_text(root, first ? first : e, "EncodingType", enc, sizeof enc) ||
	    xml_text(root, e, "EncodingType", enc, sizeof enc))
		url_keys = strcmp(enc, "url") == 0;
	if (xml_text(root, e, "IsTruncated", trunc, sizeof trunc))
		more = strcmp(trunc, "true") == 0;
	for (const char *q = root; q + 10 <= e;) {
		if (*q != '<' || memcmp(q, "<Contents>", 10) != 0) {
			q++;
			continue;
		}
		const char *c = q + 10, *ce = NULL;
		for (const char *r = c; r + 11 <= e && !ce; r++)
			if (*r == '<' && memcmp(r, "</Contents>", 11) == 0)
				ce = r;
		if (!ce)
			return wf_fail(err, WF_ERR_FORMAT, "the listing ends inside an entry");
		enum wf_err rc = one_object(c, ce, url_keys, count, max_keys, fn, u, err);
		if (rc != WF_OK)
			return rc;
		q = ce + 11;
	}
	if (more && !xml_text(root, e, "NextContinuationToken", next, next_cap))
		return wf_fail(err, WF_ERR_FORMAT, "the listing is truncated but gives no NextContinuationToken");
	if (more && !next[0])
		return wf_fail(err, WF_ERR_FORMAT, "the listing is truncated but its NextContinuationToken is empty");
	return WF_OK;
}

enum wf_err wf_s3_refusal(const struct wf_s3 *s, const struct wf_http_resp *r, const char *what, char *err)
{
	const char *code = r->error_code;
	char msg[300] = "", obj[1100] = "";
	if (r->error_msg[0])
		snprintf(msg, sizeof msg, ": %s", r->error_msg);
	if (what[0])
		snprintf(obj, sizeof obj, " to %s", what);
	if (strcmp(code, "NoSuchBucket") == 0 || (r->status == 404 && !what[0]))
		return wf_fail(err, WF_ERR_IO, "no bucket %s at %s", s->bucket, s->endpoint);
	if (strcmp(code, "NoSuchKey") == 0 || r->status == 404)
		return wf_fail(err, WF_ERR_IO, "no object %s in bucket %s", what, s->bucket);
	if (strcmp(code, "InvalidAccessKeyId") == 0)
		return wf_fail(err, WF_ERR_IO, "the store does not know the access key id from %s", s->cred_from);
	if (strcmp(code, "SignatureDoesNotMatch") == 0)
		return wf_fail(err, WF_ERR_IO, "the store refused the signature (SignatureDoesNotMatch): "
			       "check the secret key from %s", s->cred_from);
	if (r->status == 301 || r->status == 307 || strcmp(code, "PermanentRedirect") == 0 ||
	    strcmp(code, "AuthorizationHeaderMalformed") == 0)
		return wf_fail(err, WF_ERR_IO, "bucket %s is not in region %s%s%s: set AWS_REGION", s->bucket, s->region,
			       r->region[0] ? " but in " : "", r->region);
	if ((r->status == 401 || r->status == 403) && s->anonymous)
		return wf_fail(err, WF_ERR_IO, "access refused%s (HTTP %ld%s%s): no AWS credentials were found "
			       "(AWS_ACCESS_KEY_ID, ~/.aws/credentials), so the request went unsigned", obj, r->status,
			       code[0] ? " " : "", code);
	if (r->status == 401 || r->status == 403)
		return wf_fail(err, WF_ERR_IO, "access refused%s (HTTP %ld%s%s%s) to the credentials from %s", obj,
			       r->status, code[0] ? " " : "", code, msg, s->cred_from);
	return wf_fail(err, WF_ERR_IO, "HTTP %ld%s%s%s%s", r->status, code[0] ? " " : "", code, msg, obj);
}

enum wf_err wf_s3_list(const struct wf_s3 *s, const char *prefix, uint64_t max_keys,
		       enum wf_err (*fn)(void *u, const struct wf_s3_obj *o, char *err), void *u, char *err)
{
	char base[1400], next[2048] = "", url[8192];
	bucket_url(s, base, sizeof base);
	char *pf = wf_http_escape(prefix, false);
	if (!pf)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	uint64_t count = 0;
	enum wf_err rc = WF_OK;
	/* 1,000 keys a page: max_keys bounds the pages too */
	for (uint64_t page = 0; rc == WF_OK; page++) {
		if (page > max_keys / 1000 + 1) {
			rc = wf_fail(err, WF_ERR_IO, "the listing does not end");
			break;
		}
		/* the query pre-sorted and encoded: libcurl 7.88 signs it as written */
		char *ct = wf_http_escape(next, false);
		if (!ct) {
			rc = wf_fail(err, WF_ERR_NOMEM, "out of memory");
			break;
		}
		snprintf(url, sizeof url, "%s?%s%s%sencoding-type=url&list-type=2&max-keys=1000&prefix=%s", base,
			 next[0] ? "continuation-token=" : "", ct, next[0] ? "&" : "", pf);
		free(ct);
		struct wf_http_req rq = {.url = url, .sigv4 = wf_s3_sig(s), .cap = PAGE_MAX};
		struct wf_http_resp r;
		if ((rc = wf_http_do(NULL, &rq, &r, err)) != WF_OK)
			break;
		if (r.status != 200)
			rc = wf_s3_refusal(s, &r, "", err);
		else if (r.body_len == 0)
			rc = wf_fail(err, WF_ERR_FORMAT, "an empty listing page");
		else {
			char why[WF_ERRLEN];
			rc = wf_s3_parse_page((const char *)r.body, r.body_len, next, sizeof next, &count, max_keys, fn, u,
					      why);
			if (rc == WF_ERR_FORMAT)
				wf_fail(err, rc, "the listing of %s: %s", prefix[0] ? prefix : "the bucket", why);
			else if (rc != WF_OK)
				wf_fail(err, rc, "%s", why);
		}
		free(r.body);
		if (rc != WF_OK || !next[0])
			break;
	}
	free(pf);
	return rc;
}
