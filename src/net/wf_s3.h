/* wf_s3.h - S3-compatible object stores: where a bucket is, who signs, and
 * what a prefix holds (docs/remote.md, "s3://").
 *
 * Settings are read as the AWS SDKs and CLI read them: the environment
 * first (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN,
 * AWS_REGION / AWS_DEFAULT_REGION, AWS_ENDPOINT_URL_S3 / AWS_ENDPOINT_URL,
 * AWS_PROFILE), then the profile's section of the shared credentials file
 * (keys), its credential_process, then the config file (keys), then a
 * container's credentials endpoint (AWS_CONTAINER_CREDENTIALS_*_URI).  With no credentials at all, requests go unsigned
 * (a public bucket).  Requests are signed by libcurl (CURLOPT_AWS_SIGV4);
 * what libcurl 7.88 leaves out of SigV4 (the payload hash header, a
 * canonical query, an encoded path, the session token) is done here.
 */
#ifndef WF_S3_H
#define WF_S3_H

#include "base/wf_common.h"
#include "net/wf_http.h"

#include <stdbool.h>
#include <stdint.h>

struct wf_s3 {
	char endpoint[1024];  /* scheme://host[:port], no trailing slash */
	bool path_style;      /* endpoint/bucket/key, else bucket.host/key */
	char region[64];
	bool anonymous;       /* no credentials found: unsigned requests */
	struct wf_http_sigv4 sig;
	char bucket[256];     /* from the source name */
	char key[1024];       /* the object or prefix, no leading slash */
	char cred_from[300];  /* where the credentials came from, for messages */
};

/* Parses src (s3://BUCKET[/KEY]) and reads the settings above into *s.
 * err: one line (a malformed source, an unreadable profile, a key id
 * without a secret). */
enum wf_err wf_s3_init(struct wf_s3 *s, const char *src, char *err);

/* Runs an AWS profile's credential_process cmd (split into words as a
 * POSIX shell would, run without one, given 60 s) and reads its answer
 * (JSON: Version 1, AccessKeyId, SecretAccessKey, SessionToken) into
 * sig's key, secret and session.  err: one line naming profile (the
 * command's last stderr line when it fails). */
enum wf_err wf_s3_process(const char *cmd, const char *profile, struct wf_http_sigv4 *sig, char *err);

/* Whether AWS_CONTAINER_CREDENTIALS_RELATIVE_URI or _FULL_URI is set (an
 * ECS task, an EKS pod with Pod Identity). */
bool wf_s3_container_set(void);

/* The container's credentials (AccessKeyId, SecretAccessKey, Token) from
 * the agent the variables above name, with the Authorization value of
 * AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE or _TOKEN; a full URI over http
 * only to a loopback address or the agents' (as the SDKs allow).  err: one
 * line. */
enum wf_err wf_s3_container(struct wf_http_sigv4 *sig, char *err);

/* The URL of object key (percent-encoded once, '/' kept) in out. */
void wf_s3_object_url(const struct wf_s3 *s, const char *key, char *out, size_t cap);

/* The request's signature, or NULL for an anonymous source. */
const struct wf_http_sigv4 *wf_s3_sig(const struct wf_s3 *s);

/* One object of a listing: key decoded, size, ETag as the server quotes
 * it ("..." included). */
struct wf_s3_obj {
	const char *key;
	uint64_t size;
	const char *etag;
};

/* Calls fn for every object whose key starts with prefix (ListObjectsV2,
 * continuation followed, at most max_keys in all: more is refused rather
 * than half-listed).  fn's non-WF_OK return stops the walk and is
 * returned.  err: one line in the store's own words (NoSuchBucket,
 * AccessDenied, SignatureDoesNotMatch, ...). */
enum wf_err wf_s3_list(const struct wf_s3 *s, const char *prefix, uint64_t max_keys,
		       enum wf_err (*fn)(void *u, const struct wf_s3_obj *o, char *err), void *u, char *err);

/* A refusal of a request to the store, in one line (err), from the
 * answer's status and its XML error code. */
enum wf_err wf_s3_refusal(const struct wf_s3 *s, const struct wf_http_resp *r, const char *what, char *err);

/* Parses one ListObjectsV2 page (body, n bytes): fn per <Contents>, *next
 * the continuation token when truncated (empty else).  Exposed for the
 * unit tests, which feed it hostile pages. */
enum wf_err wf_s3_parse_page(const char *body, size_t n, char *next, size_t next_cap, uint64_t *count,
			     uint64_t max_keys, enum wf_err (*fn)(void *u, const struct wf_s3_obj *o, char *err),
			     void *u, char *err);

#endif
