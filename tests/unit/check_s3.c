/* check_s3.c - unit tests for the S3 parts that need no server
 * (src/net/wf_s3.c): settings read as the AWS tools read them (the
 * environment over the profile, [profile NAME] in config, endpoints and
 * addressing style), object URLs, and ListObjectsV2 pages, hostile ones
 * included.  The protocol itself is checked against radosgw by
 * tests/mount/t_s3.py. */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "net/wf_s3.h"

static const char *const vars[] = {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN",
				   "AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3",
				   "AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE",
				   "AWS_SHARED_CREDENTIALS_FILE", "AWS_IGNORE_CONFIGURED_ENDPOINT_URLS",
				   "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI", "AWS_CONTAINER_CREDENTIALS_FULL_URI",
				   "AWS_CONTAINER_AUTHORIZATION_TOKEN", "AWS_CONTAINER_AUTHORIZATION_TOKEN_FILE"};
static char dir[64];

static void clean_env(void)
{
	for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++)
		unsetenv(vars[i]);
	snprintf(dir, sizeof dir, "/tmp/check_s3.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
	setenv("HOME", dir, 1);
}

static void write_file(const char *name, const char *text)
{
	char p[128];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
	char v[128];
	snprintf(v, sizeof v, "%s/%s", dir, name);
	setenv(strcmp(name, "config") == 0 ? "AWS_CONFIG_FILE" : "AWS_SHARED_CREDENTIALS_FILE", v, 1);
}

START_TEST(test_env_settings)
{
	clean_env();
	struct wf_s3 s;
	char err[WF_ERRLEN], url[2048];
	/* nothing at all: anonymous, AWS in us-east-1, virtual-hosted */
	ck_assert_int_eq(wf_s3_init(&s, "s3://my-bucket/models/llama/", err), WF_OK);
	ck_assert(s.anonymous);
	ck_assert_ptr_null(wf_s3_sig(&s));
	ck_assert_str_eq(s.region, "us-east-1");
	ck_assert_str_eq(s.key, "models/llama/");
	wf_s3_object_url(&s, "models/a b+c.safetensors", url, sizeof url);
	ck_assert_str_eq(url, "https://my-bucket.s3.us-east-1.amazonaws.com/models/a%20b%2Bc.safetensors");
	/* a dot in the bucket: path-style, so the certificate's wildcard holds */
	ck_assert_int_eq(wf_s3_init(&s, "s3://my.bucket/k", err), WF_OK);
	wf_s3_object_url(&s, "k", url, sizeof url);
	ck_assert_str_eq(url, "https://s3.us-east-1.amazonaws.com/my.bucket/k");
	/* the environment: keys, region, a custom endpoint (path-style) */
	setenv("AWS_ACCESS_KEY_ID", "AK", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "SK", 1);
	setenv("AWS_SESSION_TOKEN", "TOK", 1);
	setenv("AWS_DEFAULT_REGION", "eu-west-3", 1);
	setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9000/", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_OK);
	ck_assert(!s.anonymous);
	ck_assert_str_eq(s.sig.provider, "aws:amz:eu-west-3:s3");
	ck_assert_str_eq(s.sig.key, "AK");
	ck_assert_str_eq(s.sig.secret, "SK");
	ck_assert_str_eq(s.sig.session, "TOK");
	wf_s3_object_url(&s, "x/y", url, sizeof url);
	ck_assert_str_eq(url, "http://127.0.0.1:9000/b/x/y");
	/* AWS_REGION over AWS_DEFAULT_REGION; _S3 over the general endpoint */
	setenv("AWS_REGION", "ap-south-1", 1);
	setenv("AWS_ENDPOINT_URL_S3", "https://s3.example", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_OK);
	ck_assert_str_eq(s.region, "ap-south-1");
	ck_assert_str_eq(s.endpoint, "https://s3.example");
	setenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS", "true", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_OK);
	ck_assert_str_eq(s.endpoint, "https://s3.ap-south-1.amazonaws.com");
	unsetenv("AWS_IGNORE_CONFIGURED_ENDPOINT_URLS");
	/* refusals */
	setenv("AWS_ENDPOINT_URL_S3", "ftp://x", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "not http(s)://HOST[:PORT]"));
	unsetenv("AWS_ENDPOINT_URL_S3");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "AWS_SECRET_ACCESS_KEY is not"));
	const char *bad[] = {"s3://", "s3:///key", "s3://b c/x", "s3://b?x", "hf://a/b"};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(wf_s3_init(&s, bad[i], err) == WF_ERR_IO, "%s accepted", bad[i]);
	setenv("AWS_REGION", "Bad Region", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/", err), WF_ERR_IO);
}
END_TEST

START_TEST(test_profiles)
{
	clean_env();
	write_file("credentials", "[default]\naws_access_key_id = D\naws_secret_access_key = DS\n"
				  "; a comment\n[dev]\n  aws_access_key_id=V  \naws_secret_access_key= VS:with=signs\n"
				  "aws_session_token = VT\n[half]\naws_access_key_id = H\n");
	write_file("config", "[default]\nregion = eu-north-1\n[profile dev]\nregion = ca-central-1\n"
			     "endpoint_url = http://10.0.0.1:7480\n[dev]\nregion = wrong-section\n");
	struct wf_s3 s;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_OK);
	ck_assert_str_eq(s.sig.key, "D");
	ck_assert_str_eq(s.region, "eu-north-1");
	ck_assert_str_eq(s.endpoint, "https://s3.eu-north-1.amazonaws.com");
	/* config's sections are "profile NAME"; [default] is not inherited */
	setenv("AWS_PROFILE", "dev", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_OK);
	ck_assert_str_eq(s.sig.key, "V");
	ck_assert_str_eq(s.sig.secret, "VS:with=signs");
	ck_assert_str_eq(s.sig.session, "VT");
	ck_assert_str_eq(s.region, "ca-central-1");
	ck_assert_str_eq(s.endpoint, "http://10.0.0.1:7480");
	ck_assert(s.path_style);
	/* the environment's keys win over the profile's */
	setenv("AWS_ACCESS_KEY_ID", "E", 1);
	setenv("AWS_SECRET_ACCESS_KEY", "ES", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_OK);
	ck_assert_str_eq(s.sig.key, "E");
	ck_assert_str_eq(s.sig.session, "");
	unsetenv("AWS_ACCESS_KEY_ID");
	unsetenv("AWS_SECRET_ACCESS_KEY");
	setenv("AWS_PROFILE", "half", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "profile half"));
	setenv("AWS_PROFILE", "nosuch", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "nosuch"));
}
END_TEST

/* credential_process: run without a shell, words split as a POSIX shell
 * splits them; its JSON read as the CLI reads it; failures one line. */
START_TEST(test_credential_process)
{
	struct wf_http_sigv4 sig;
	char err[WF_ERRLEN];
	memset(&sig, 0, sizeof sig);
	ck_assert_int_eq(wf_s3_process("sh -c 'printf \"%s\" \"{\\\"Version\\\": 1, \\\"AccessKeyId\\\": \\\"PK\\\", "
				       "\\\"SecretAccessKey\\\": \\\"PS\\\", \\\"SessionToken\\\": \\\"PT\\\"}\"'",
				       "p", &sig, err),
			 WF_OK);
	ck_assert_str_eq(sig.key, "PK");
	ck_assert_str_eq(sig.secret, "PS");
	ck_assert_str_eq(sig.session, "PT");
	/* no session token: none kept from before */
	ck_assert_int_eq(wf_s3_process("printf {\\\"Version\\\":1,\\\"AccessKeyId\\\":\\\"A\\\",\\\"SecretAccessKey\\\":\\\"S\\\"}",
				       "p", &sig, err),
			 WF_OK);
	ck_assert_str_eq(sig.key, "A");
	ck_assert_str_eq(sig.session, "");
	static const struct {
		const char *cmd, *want;
	} bad[] = {
		{"sh -c 'echo first >&2; echo token expired, run aws sso login >&2; exit 3'",
		 "profile p exited 3: token expired, run aws sso login"},
		{"printf {\\\"Version\\\":2,\\\"AccessKeyId\\\":\\\"A\\\",\\\"SecretAccessKey\\\":\\\"S\\\"}", "Version other, not 1"},
		{"printf {\\\"Version\\\":1,\\\"AccessKeyId\\\":\\\"A\\\"}", "no AccessKeyId and SecretAccessKey"},
		{"echo not json", "did not print a JSON object"},
		{"/nonexistent/helper --x", "cannot run /nonexistent/helper"},
		{"helper 'open quote", "is not a command line"},
		{"   ", "is not a command line"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		ck_assert_int_eq(wf_s3_process(bad[i].cmd, "p", &sig, err), WF_ERR_IO);
		ck_assert_msg(strstr(err, bad[i].want) && !strchr(err, '\n'), "%s: %s", bad[i].cmd, err);
	}
	/* from a profile: the credentials file's keys first, then the process */
	clean_env();
	write_file("config", "[profile pr]\ncredential_process = printf {\\\"Version\\\":1,\\\"AccessKeyId\\\":\\\"FROMP\\\","
			     "\\\"SecretAccessKey\\\":\\\"S\\\"}\n");
	write_file("credentials", "[pr]\nregion = x\n[both]\naws_access_key_id = FILE\naws_secret_access_key = FS\n");
	setenv("AWS_PROFILE", "pr", 1);
	struct wf_s3 s;
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_OK);
	ck_assert_str_eq(s.sig.key, "FROMP");
	ck_assert(!s.anonymous);
	write_file("config", "[profile both]\ncredential_process = false\n");
	setenv("AWS_PROFILE", "both", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_OK);
	ck_assert_str_eq(s.sig.key, "FILE");
	write_file("config", "[profile pr]\ncredential_process = false\n");
	setenv("AWS_PROFILE", "pr", 1);
	ck_assert_int_eq(wf_s3_init(&s, "s3://b/p", err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "credential_process of profile pr exited 1"));
}
END_TEST

/* A container's full URI: https anywhere, http only to a loopback or the
 * agents' addresses (refused before any request); a token with a line
 * break refused. */
START_TEST(test_container_uri)
{
	clean_env();
	struct wf_http_sigv4 sig;
	char err[WF_ERRLEN];
	ck_assert(!wf_s3_container_set());
	static const char *const refused[] = {"http://10.0.0.5/creds", "http://169.254.169.254/x", "ftp://127.0.0.1/",
					      "http://127.0.0.1.evil.example/", "http://localhost.evil/"};
	for (size_t i = 0; i < sizeof refused / sizeof refused[0]; i++) {
		setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", refused[i], 1);
		ck_assert(wf_s3_container_set());
		ck_assert_int_eq(wf_s3_container(&sig, err), WF_ERR_IO);
		ck_assert_msg(strstr(err, "http only to a loopback"), "%s: %s", refused[i], err);
	}
	/* allowed ones get as far as the request: a closed port on a loopback */
	setenv("AWS_CONTAINER_CREDENTIALS_FULL_URI", "http://127.0.0.9:1/creds", 1);
	setenv("AWS_CONTAINER_AUTHORIZATION_TOKEN", "a\nb", 1);
	ck_assert_int_eq(wf_s3_container(&sig, err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "line break"));
	clean_env();
}
END_TEST

struct seen {
	int n;
	char keys[8][256];
	uint64_t sizes[8];
	char etags[8][64];
};

static enum wf_err take(void *u, const struct wf_s3_obj *o, char *err)
{
	struct seen *s = u;
	if (s->n == 8)
		return wf_fail(err, WF_ERR_IO, "stop");
	snprintf(s->keys[s->n], sizeof s->keys[0], "%s", o->key);
	snprintf(s->etags[s->n], sizeof s->etags[0], "%s", o->etag);
	s->sizes[s->n++] = o->size;
	return WF_OK;
}

static enum wf_err parse(const char *page, struct seen *s, char *next, uint64_t max, char *err)
{
	uint64_t count = 0;
	memset(s, 0, sizeof *s);
	return wf_s3_parse_page(page, strlen(page), next, 256, &count, max, take, s, err);
}

START_TEST(test_pages)
{
	struct seen s;
	char next[256], err[WF_ERRLEN];
	/* AWS's form: a namespace, entities, url-encoded keys, continuation */
	const char *p1 = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<ListBucketResult xmlns=\"http://s3.amazonaws.com/"
			 "doc/2006-03-01/\"><Name>b</Name><Prefix>m/</Prefix><KeyCount>2</KeyCount><MaxKeys>2</MaxKeys>"
			 "<EncodingType>url</EncodingType><IsTruncated>true</IsTruncated><Contents><Key>m%2Fa%20%26%2B.json"
			 "</Key><LastModified>x</LastModified><ETag>&quot;abc&quot;</ETag><Size>12</Size></Contents>"
			 "<Contents><Key>m%2Fw.safetensors</Key><Size>1125899906842624</Size><ETag>\"d-2\"</ETag>"
			 "</Contents><NextContinuationToken>1/2&amp;3=</NextContinuationToken></ListBucketResult>";
	ck_assert_int_eq(parse(p1, &s, next, 100, err), WF_OK);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.keys[0], "m/a &+.json");
	ck_assert_str_eq(s.etags[0], "\"abc\"");
	ck_assert_int_eq(s.sizes[0], 12);
	ck_assert_str_eq(s.keys[1], "m/w.safetensors");
	ck_assert_uint_eq(s.sizes[1], 1ull << 50);
	ck_assert_str_eq(next, "1/2&3=");
	/* no EncodingType: keys as written (a '%' is a '%'); the last page */
	const char *p2 = "<ListBucketResult><IsTruncated>false</IsTruncated><Contents><Key>100%25 &lt;ok&gt;</Key>"
			 "<Size>0</Size></Contents></ListBucketResult>";
	ck_assert_int_eq(parse(p2, &s, next, 100, err), WF_OK);
	ck_assert_str_eq(s.keys[0], "100%25 <ok>");
	ck_assert_str_eq(next, "");
	/* the bound on objects listed */
	ck_assert_int_eq(parse(p1, &s, next, 1, err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "more than 1 objects"));
	/* hostile pages: refused, never read past their end */
	const char *bad[] = {
		"<html><body>not a listing</body></html>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1</Size>",
		"<ListBucketResult><Contents><Key>a</Key></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>-1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>1e3</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a</Key><Size>99999999999999999999999</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key></Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a<b/></Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&#0;b</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&#x1F600;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><Contents><Key>a&bogus;</Key><Size>1</Size></Contents></ListBucketResult>",
		"<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%2</Key><Size>1</Size></Contents>"
		"</ListBucketResult>",
		"<ListBucketResult><EncodingType>url</EncodingType><Contents><Key>a%00b</Key><Size>1</Size></Contents>"
		"</ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated></ListBucketResult>",
		"<ListBucketResult><IsTruncated>true</IsTruncated><NextContinuationToken></NextContinuationToken>"
		"</ListBucketResult>",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
		ck_assert_msg(parse(bad[i], &s, next, 100, err) != WF_OK, "page %zu accepted", i);
	/* a key over S3's 1,024 bytes */
	char big[4096];
	int n = snprintf(big, sizeof big, "<ListBucketResult><Contents><Key>");
	memset(big + n, 'k', 1100);
	snprintf(big + n + 1100, sizeof big - (size_t)n - 1100, "</Key><Size>1</Size></Contents></ListBucketResult>");
	ck_assert_int_ne(parse(big, &s, next, 100, err), WF_OK);
	/* every truncation of a good page: an error or fewer objects, no crash
	 * (ASan sees any read past the end) */
	size_t len = strlen(p1);
	for (size_t k = 0; k < len; k++) {
		char *cut = malloc(k ? k : 1);
		memcpy(cut, p1, k);
		uint64_t count = 0;
		memset(&s, 0, sizeof s);
		enum wf_err rc = wf_s3_parse_page(cut, k, next, sizeof next, &count, 100, take, &s, err);
		ck_assert(rc != WF_OK || s.n <= 2);
		free(cut);
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("s3");
	TCase *tc = tcase_create("core");
	tcase_add_test(tc, test_env_settings);
	tcase_add_test(tc, test_profiles);
	tcase_add_test(tc, test_credential_process);
	tcase_add_test(tc, test_container_uri);
	tcase_add_test(tc, test_pages);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
