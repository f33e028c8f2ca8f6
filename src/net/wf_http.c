/* wf_http.c - one request through libcurl (wf_http.h). */
#include "net/wf_http.h"

#include <curl/curl.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

struct wf_http_conf wf_http_conf = {.attempts = 4, .stall_s = 10, .connect_s = 10};

/* libcurl, loaded on first use (dlopen): linked, it and the 28 libraries
 * it pulls in cost every run of the program ~50 ms at start-up (measured
 * with `weightfs ls` side by side), remote source or not. */
static struct {
	CURLcode (*global_init)(long);
	CURL *(*easy_init)(void);
	void (*easy_cleanup)(CURL *);
	CURLcode (*easy_setopt)(CURL *, CURLoption, ...);
	CURLcode (*easy_perform)(CURL *);
	CURLcode (*easy_getinfo)(CURL *, CURLINFO, ...);
	void (*easy_reset)(CURL *);
	const char *(*easy_strerror)(CURLcode);
	struct curl_slist *(*slist_append)(struct curl_slist *, const char *);
	void (*slist_free_all)(struct curl_slist *);
	CURLSH *(*share_init)(void);
	CURLSHcode (*share_setopt)(CURLSH *, CURLSHoption, ...);
} cu;
static const char *load_err;

static bool load(void)
{
	void *h = dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		load_err = dlerror();
		return false;
	}
	void **slot[] = {(void **)&cu.global_init, (void **)&cu.easy_init, (void **)&cu.easy_cleanup,
			 (void **)&cu.easy_setopt, (void **)&cu.easy_perform, (void **)&cu.easy_getinfo,
			 (void **)&cu.easy_reset, (void **)&cu.easy_strerror, (void **)&cu.slist_append,
			 (void **)&cu.slist_free_all, (void **)&cu.share_init, (void **)&cu.share_setopt};
	static const char *const name[] = {"curl_global_init", "curl_easy_init", "curl_easy_cleanup",
					   "curl_easy_setopt", "curl_easy_perform", "curl_easy_getinfo",
					   "curl_easy_reset", "curl_easy_strerror", "curl_slist_append",
					   "curl_slist_free_all", "curl_share_init", "curl_share_setopt"};
	for (size_t i = 0; i < sizeof name / sizeof name[0]; i++)
		if (!(*slot[i] = dlsym(h, name[i]))) {
			load_err = "libcurl.so.4 lacks a function weightfs uses";
			return false;
		}
	return true;
}

static pthread_once_t once = PTHREAD_ONCE_INIT;
static CURLcode global_rc;
static bool loaded;
static CURLSH *share;
static pthread_mutex_t share_mu[CURL_LOCK_DATA_LAST];

static void share_lock(CURL *h, curl_lock_data d, curl_lock_access a, void *u)
{
	(void)h, (void)a, (void)u;
	pthread_mutex_lock(&share_mu[d]);
}

static void share_unlock(CURL *h, curl_lock_data d, void *u)
{
	(void)h, (void)u;
	pthread_mutex_unlock(&share_mu[d]);
}

static void global_init(void)
{
	if (!(loaded = load()))
		return;
	global_rc = cu.global_init(CURL_GLOBAL_DEFAULT);
	if (global_rc != CURLE_OK)
		return;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&share_mu[i], NULL);
	/* DNS and TLS sessions only: sharing connections is not thread-safe
	 * in libcurl (KNOWN_BUGS 11.11); each handle keeps its own */
	share = cu.share_init();
	if (share) {
		cu.share_setopt(share, CURLSHOPT_LOCKFUNC, share_lock);
		cu.share_setopt(share, CURLSHOPT_UNLOCKFUNC, share_unlock);
		cu.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
		cu.share_setopt(share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	}
}

enum wf_err wf_http_global(char *err)
{
	pthread_once(&once, global_init);
	if (!loaded)
		return wf_fail(err, WF_ERR_IO, "libcurl is needed for remote sources (Debian: libcurl4): %s",
			       load_err ? load_err : "cannot load libcurl.so.4");
	if (global_rc != CURLE_OK)
		return wf_fail(err, WF_ERR_IO, "libcurl: %s", cu.easy_strerror(global_rc));
	return WF_OK;
}

void *wf_http_new(void)
{
	if (wf_http_global(NULL) != WF_OK)
		return NULL;
	return cu.easy_init();
}

void wf_http_free(void *h)
{
	if (h)
		cu.easy_cleanup(h);
}

void wf_http_host(const char *url, char *out, size_t cap)
{
	out[0] = '\0';
	const char *p = strstr(url, "://");
	if (!p || cap == 0)
		return;
	p += 3;
	size_t n = strcspn(p, "/?#");
	const char *at = memchr(p, '@', n);
	if (at) {
		n -= (size_t)(at + 1 - p);
		p = at + 1;
	}
	if (n >= cap)
		n = cap - 1;
	memcpy(out, p, n);
	out[n] = '\0';
}

char *wf_http_escape(const char *s, bool keep_slash)
{
	size_t n = strlen(s);
	char *out = malloc(n * 3 + 1), *o = out;
	if (!out)
		return NULL;
	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
		    c == '_' || c == '.' || c == '~' || (c == '/' && keep_slash))
			*o++ = (char)c;
		else
			o += sprintf(o, "%%%02X", c);
	}
	*o = '\0';
	return out;
}

bool wf_truthy(const char *v)
{
	return v && (strcasecmp(v, "1") == 0 || strcasecmp(v, "true") == 0 || strcasecmp(v, "yes") == 0 ||
		     strcasecmp(v, "on") == 0);
}

/* What a write callback fills. */
struct sink {
	const struct wf_http_req *req;
	struct wf_http_resp *resp;
	size_t cap;
};

static size_t on_body(char *data, size_t size, size_t n, void *u)
{
	struct sink *s = u;
	struct wf_http_resp *r = s->resp;
	size_t len = size * n;
	if (r->body_len + len > s->cap || r->body_len + len < r->body_len) {
		r->body_over = true;
		return 0; /* aborts the transfer: a body longer than asked is never taken */
	}
	uint8_t *dst = s->req->out;
	if (!dst) {
		size_t want = r->body_len + len, have = r->body ? r->body_len : 0;
		(void)have;
		uint8_t *nb = realloc(r->body, want ? want : 1);
		if (!nb)
			return 0;
		r->body = dst = nb;
	}
	memcpy(dst + r->body_len, data, len);
	r->body_len += len;
	return len;
}

/* Copies a header's value (trimmed) into out. */
static void hvalue(const char *v, size_t n, char *out, size_t cap)
{
	while (n && (*v == ' ' || *v == '\t'))
		v++, n--;
	while (n && (v[n - 1] == '\r' || v[n - 1] == '\n' || v[n - 1] == ' '))
		n--;
	if (n >= cap)
		n = cap - 1;
	memcpy(out, v, n);
	out[n] = '\0';
}

static bool hname(const char *line, size_t n, const char *name, const char **val, size_t *vn)
{
	size_t k = strlen(name);
	if (n <= k || strncasecmp(line, name, k) != 0 || line[k] != ':')
		return false;
	*val = line + k + 1;
	*vn = n - k - 1;
	return true;
}

static void parse_range(struct wf_http_resp *r, const char *v)
{
	unsigned long long a, b, t;
	if (sscanf(v, "bytes %llu-%llu/%llu", &a, &b, &t) == 3) {
		r->has_cr = true;
		r->cr_a = a, r->cr_b = b, r->cr_total = t;
	}
}

/* Link: <url>; rel="next" (one of several comma-separated links). */
static void parse_link(struct wf_http_resp *r, const char *v)
{
	for (const char *p = v; (p = strchr(p, '<')) != NULL;) {
		const char *e = strchr(p, '>');
		if (!e)
			return;
		const char *end = strchr(e, ',');
		const char *rel = strstr(e, "rel=\"next\"");
		if (rel && (!end || rel < end)) {
			hvalue(p + 1, (size_t)(e - p - 1), r->next, sizeof r->next);
			return;
		}
		p = e;
	}
}

static size_t on_header(char *line, size_t size, size_t n, void *u)
{
	struct sink *s = u;
	struct wf_http_resp *r = s->resp;
	size_t len = size * n;
	const char *v;
	size_t vn;
	char buf[2048];
	if (len >= 5 && strncmp(line, "HTTP/", 5) == 0) {
		/* a new response (after a redirect): only the last one's headers count,
		 * but the Hub's own headers of the first hop are kept */
		r->content_length = -1;
		r->has_cr = false;
		r->etag[0] = r->next[0] = '\0';
		r->retry_after = -1;
		return len;
	}
	if (hname(line, len, "ETag", &v, &vn))
		hvalue(v, vn, r->etag, sizeof r->etag);
	else if (hname(line, len, "Content-Range", &v, &vn)) {
		hvalue(v, vn, buf, sizeof buf);
		parse_range(r, buf);
	} else if (hname(line, len, "Content-Length", &v, &vn)) {
		hvalue(v, vn, buf, sizeof buf);
		char *end;
		errno = 0;
		long long x = strtoll(buf, &end, 10);
		r->content_length = errno || *end || x < 0 ? -1 : x;
	} else if (hname(line, len, "X-Error-Code", &v, &vn))
		hvalue(v, vn, r->error_code, sizeof r->error_code);
	else if (hname(line, len, "X-Error-Message", &v, &vn))
		hvalue(v, vn, r->error_msg, sizeof r->error_msg);
	else if (hname(line, len, "x-amz-bucket-region", &v, &vn))
		hvalue(v, vn, r->region, sizeof r->region);
	else if (hname(line, len, "X-Repo-Commit", &v, &vn))
		hvalue(v, vn, r->repo_commit, sizeof r->repo_commit);
	else if (hname(line, len, "X-Linked-Etag", &v, &vn))
		hvalue(v, vn, r->linked_etag, sizeof r->linked_etag);
	else if (hname(line, len, "X-Linked-Size", &v, &vn)) {
		hvalue(v, vn, buf, sizeof buf);
		r->linked_size = strtoll(buf, NULL, 10);
	} else if (hname(line, len, "Link", &v, &vn)) {
		hvalue(v, vn, buf, sizeof buf);
		parse_link(r, buf);
	} else if (hname(line, len, "Retry-After", &v, &vn)) {
		hvalue(v, vn, buf, sizeof buf);
		char *end;
		long x = strtol(buf, &end, 10);
		r->retry_after = *buf && !*end && x >= 0 ? x : -1;
	}
	return len;
}

static void reset_resp(struct wf_http_resp *r)
{
	free(r->body);
	memset(r, 0, sizeof *r);
	r->content_length = r->linked_size = r->retry_after = -1;
}

/* One attempt.  Returns the curl code; resp filled. */
static CURLcode attempt(CURL *h, const struct wf_http_req *req, struct wf_http_resp *resp, char *cerr)
{
	struct sink s = {.req = req, .resp = resp, .cap = req->cap};
	cu.easy_reset(h);
	cu.easy_setopt(h, CURLOPT_URL, req->url);
	cu.easy_setopt(h, CURLOPT_NOSIGNAL, 1L);
	if (share)
		cu.easy_setopt(h, CURLOPT_SHARE, share);
	cu.easy_setopt(h, CURLOPT_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(h, CURLOPT_REDIR_PROTOCOLS_STR, "http,https");
	cu.easy_setopt(h, CURLOPT_FOLLOWLOCATION, req->follow ? 1L : 0L);
	cu.easy_setopt(h, CURLOPT_MAXREDIRS, 10L);
	cu.easy_setopt(h, CURLOPT_CONNECTTIMEOUT, (long)wf_http_conf.connect_s);
	cu.easy_setopt(h, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	cu.easy_setopt(h, CURLOPT_LOW_SPEED_TIME, (long)wf_http_conf.stall_s);
	cu.easy_setopt(h, CURLOPT_TCP_KEEPALIVE, 1L);
	cu.easy_setopt(h, CURLOPT_USERAGENT, "weightfs");
	cu.easy_setopt(h, CURLOPT_WRITEFUNCTION, on_body);
	cu.easy_setopt(h, CURLOPT_WRITEDATA, &s);
	cu.easy_setopt(h, CURLOPT_HEADERFUNCTION, on_header);
	cu.easy_setopt(h, CURLOPT_HEADERDATA, &s);
	/* no Accept-Encoding: a CDN may then drop Range (docs/remote.md) */
	struct curl_slist *hd = NULL, *t;
	char line[4200];
	if (req->sigv4) {
		/* libcurl 7.88 neither sends the payload hash S3 requires nor
		 * knows session tokens; both go in as headers, so they are
		 * signed too (docs/remote.md) */
		cu.easy_setopt(h, CURLOPT_AWS_SIGV4, req->sigv4->provider);
		cu.easy_setopt(h, CURLOPT_USERNAME, req->sigv4->key);
		cu.easy_setopt(h, CURLOPT_PASSWORD, req->sigv4->secret);
		cu.easy_setopt(h, CURLOPT_FOLLOWLOCATION, 0L);
		if ((t = cu.slist_append(hd, "x-amz-content-sha256: UNSIGNED-PAYLOAD")))
			hd = t;
		if (req->sigv4->session[0]) {
			snprintf(line, sizeof line, "x-amz-security-token: %s", req->sigv4->session);
			if ((t = cu.slist_append(hd, line)))
				hd = t;
		}
	}
	if ((req->token && *req->token) || (req->auth && *req->auth)) {
		if (req->token && *req->token)
			snprintf(line, sizeof line, "Authorization: Bearer %s", req->token);
		else
			snprintf(line, sizeof line, "Authorization: %s", req->auth);
		if ((t = cu.slist_append(hd, line)))
			hd = t;
	}
	if (req->if_match && *req->if_match) {
		snprintf(line, sizeof line, "If-Match: %s", req->if_match);
		if ((t = cu.slist_append(hd, line)))
			hd = t;
	}
	cu.easy_setopt(h, CURLOPT_HTTPHEADER, hd);
	char range[64];
	if (req->has_range) {
		snprintf(range, sizeof range, "%llu-%llu", (unsigned long long)req->off,
			 (unsigned long long)(req->off + req->len - 1));
		cu.easy_setopt(h, CURLOPT_RANGE, range);
	}
	/* libcurl's own words ("Rejected 1048576 bytes header"), not just its code's */
	cerr[0] = '\0';
	cu.easy_setopt(h, CURLOPT_ERRORBUFFER, cerr);
	CURLcode rc = cu.easy_perform(h);
	cu.easy_setopt(h, CURLOPT_ERRORBUFFER, NULL);
	cu.easy_getinfo(h, CURLINFO_RESPONSE_CODE, &resp->status);
	char *eff = NULL;
	if (cu.easy_getinfo(h, CURLINFO_EFFECTIVE_URL, &eff) == CURLE_OK && eff)
		snprintf(resp->url, sizeof resp->url, "%s", eff);
	cu.easy_setopt(h, CURLOPT_HTTPHEADER, NULL);
	cu.slist_free_all(hd);
	return rc;
}

static bool transient(CURLcode rc, long status)
{
	if (rc == CURLE_OK)
		return status == 408 || status == 429 || (status >= 500 && status <= 599);
	switch (rc) {
	case CURLE_COULDNT_CONNECT:
	case CURLE_COULDNT_RESOLVE_HOST:
	case CURLE_OPERATION_TIMEDOUT:
	case CURLE_RECV_ERROR:
	case CURLE_SEND_ERROR:
	case CURLE_PARTIAL_FILE:
	case CURLE_GOT_NOTHING:
	case CURLE_HTTP2:
	case CURLE_HTTP2_STREAM:
	case CURLE_SSL_CONNECT_ERROR:
		return true;
	default:
		return false;
	}
}

/* Backoff before try n (1-based): 0.25 s doubling, capped at 4 s, times
 * a jitter in [0.5, 1); or the server's Retry-After, capped at 8 s. */
static void backoff(unsigned n, long retry_after)
{
	static __thread unsigned seed;
	if (!seed)
		seed = (unsigned)time(NULL) ^ (unsigned)(uintptr_t)&seed;
	double s = 0.25 * (double)(1u << (n < 5 ? n - 1 : 4));
	if (s > 4)
		s = 4;
	s *= 0.5 + 0.5 * (double)(rand_r(&seed) % 1000) / 1000.0;
	if (retry_after >= 0)
		s = retry_after > 8 ? 8 : (double)retry_after;
	struct timespec ts = {(time_t)s, (long)((s - (double)(time_t)s) * 1e9)};
	while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
		;
}

/* An XML error body's <NAME>text</NAME> into out (S3's <Error>). */
static void xml_field(const uint8_t *b, size_t n, const char *name, char *out, size_t cap)
{
	char open[32];
	int k = snprintf(open, sizeof open, "<%s>", name);
	if (!b || n == 0 || n > (1u << 20))
		return;
	for (size_t i = 0; i + (size_t)k <= n; i++) {
		if (memcmp(b + i, open, (size_t)k) != 0)
			continue;
		size_t s = i + (size_t)k, e = s;
		while (e < n && b[e] != '<')
			e++;
		size_t m = e - s < cap - 1 ? e - s : cap - 1;
		for (size_t j = 0; j < m; j++)
			out[j] = b[s + j] >= 0x20 && b[s + j] < 0x7f ? (char)b[s + j] : '?';
		out[m] = '\0';
		return;
	}
}

enum wf_err wf_http_do(void *hv, const struct wf_http_req *req, struct wf_http_resp *resp, char *err)
{
	memset(resp, 0, sizeof *resp);
	reset_resp(resp);
	enum wf_err g = wf_http_global(err);
	if (g != WF_OK)
		return g;
	CURL *h = hv ? hv : cu.easy_init();
	if (!h)
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	unsigned tries = wf_http_conf.attempts < 1 ? 1 : wf_http_conf.attempts > 10 ? 10 : wf_http_conf.attempts;
	CURLcode rc = CURLE_OK;
	char cerr[CURL_ERROR_SIZE] = "";
	for (unsigned n = 1; n <= tries; n++) {
		reset_resp(resp);
		rc = attempt(h, req, resp, cerr);
		if (rc == CURLE_WRITE_ERROR && resp->body_over)
			break; /* longer than asked: not worth another try */
		if (!transient(rc, resp->status) || n == tries)
			break;
		backoff(n, rc == CURLE_OK ? resp->retry_after : -1);
	}
	if (!hv)
		cu.easy_cleanup(h);
	if (rc == CURLE_OK && resp->status >= 300 && !resp->error_code[0]) {
		const uint8_t *b = resp->body ? resp->body : req->out;
		xml_field(b, resp->body_len, "Code", resp->error_code, sizeof resp->error_code);
		if (!resp->error_msg[0])
			xml_field(b, resp->body_len, "Message", resp->error_msg, sizeof resp->error_msg);
	}
	if (rc == CURLE_OK)
		return WF_OK;
	char q[256];
	wf_quote(q, sizeof q, req->url, strlen(req->url));
	if (resp->body_over)
		return wf_fail(err, WF_ERR_IO, "%s: the answer is longer than %zu bytes", q, req->cap);
	if (rc == CURLE_OUT_OF_MEMORY && !cerr[0]) /* what libcurl 7.88 says of a header over its 100 KB */
		return wf_fail(err, WF_ERR_IO, "%s: the answer could not be taken (a header longer than libcurl's "
			       "100 KB, or out of memory)", q);
	return wf_fail(err, WF_ERR_IO, "%s: %s", q, cerr[0] ? cerr : cu.easy_strerror(rc));
}
