/* wf_http.h - one HTTP request through libcurl, with the checks and the
 * bounded retries every remote read needs (docs/remote.md).
 *
 * No hand-written HTTP: libcurl speaks it.  A handle (CURL *) is one
 * thread's; handles share DNS and TLS sessions through one share handle,
 * and each keeps its own connections alive between requests.
 */
#ifndef WF_HTTP_H
#define WF_HTTP_H

#include "base/wf_common.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Tunables for every request (set once, before the first). */
struct wf_http_conf {
	unsigned attempts;      /* tries per request, 1..10 (default 4) */
	unsigned stall_s;       /* a transfer under 1 KiB/s this long is a stall (default 10) */
	unsigned connect_s;     /* connect timeout (default 10) */
};
extern struct wf_http_conf wf_http_conf;

/* AWS Signature V4 (S3): libcurl signs each request with these. */
struct wf_http_sigv4 {
	char provider[96];      /* "aws:amz:REGION:s3" */
	char key[256], secret[256];
	char session[4096];     /* x-amz-security-token, empty for none */
};

struct wf_http_req {
	const char *url;
	const struct wf_http_sigv4 *sigv4; /* sign (and never follow redirects); NULL for none */
	const char *token;      /* a bearer token, sent only to the URL's own host; NULL for none */
	const char *auth;       /* an Authorization header's value as it is (a container's credentials
				 * endpoint), NULL for none; never with token */
	const char *if_match;   /* pinned ETag, quoted as the server gave it; NULL for none */
	bool has_range;         /* Range: bytes=off-(off+len-1) */
	uint64_t off, len;
	bool follow;            /* follow redirects (at most 10; Authorization kept off other hosts) */
	uint8_t *out;           /* body into out[0..cap) (a range), else into a malloc'd buffer up to cap */
	size_t cap;
};

struct wf_http_resp {
	long status;
	uint8_t *body;          /* malloc'd when req.out was NULL; the caller frees */
	size_t body_len;
	bool body_over;         /* the body was longer than cap */
	int64_t content_length; /* -1 when absent */
	bool has_cr;            /* Content-Range: bytes a-b/total */
	uint64_t cr_a, cr_b, cr_total;
	char etag[160];
	char error_code[64];    /* X-Error-Code (the Hub), else an XML error body's <Code> (S3) */
	char error_msg[256];    /* X-Error-Message, else <Message> */
	char region[64];        /* x-amz-bucket-region (S3) */
	char repo_commit[64];   /* X-Repo-Commit */
	char linked_etag[160];  /* X-Linked-Etag */
	int64_t linked_size;    /* X-Linked-Size, -1 when absent */
	char next[2048];        /* Link: <...>; rel="next" */
	char url[2048];         /* the URL that answered (after redirects) */
	long retry_after;       /* seconds, -1 when absent */
};

/* curl_global_init once; WF_ERR_IO with a message when libcurl fails. */
enum wf_err wf_http_global(char *err);

/* A handle for this thread (NULL when out of memory); free with
 * wf_http_free. */
void *wf_http_new(void);
void wf_http_free(void *h);

/* Sends req on handle h (NULL: a handle made and freed for this call),
 * retrying connection failures, stalls, 429 and 5xx with backoff and
 * jitter, at most wf_http_conf.attempts times.  WF_OK means an answer
 * came (any status: the caller judges it; resp->status), WF_ERR_IO that
 * none did (err says why).  The caller frees resp->body. */
enum wf_err wf_http_do(void *h, const struct wf_http_req *req, struct wf_http_resp *resp, char *err);

/* s percent-encoded as RFC 3986 and SigV4 want it (malloc'd; NULL when
 * out of memory): only A-Z a-z 0-9 - _ . ~ stay bare, and '/' when
 * keep_slash (a path, not one segment or a query value). */
char *wf_http_escape(const char *s, bool keep_slash);

/* Whether an environment value switches a setting on: 1, true, yes or
 * on in any case (as huggingface_hub and the AWS CLI read their flags);
 * NULL, empty and anything else is off. */
bool wf_truthy(const char *v);

/* The host[:port] of url in out (empty when it has none). */
void wf_http_host(const char *url, char *out, size_t cap);

#endif
