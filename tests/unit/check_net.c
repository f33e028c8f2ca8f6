/* check_net.c - unit tests for the net layer's pure parts (src/net/):
 * host extraction, source names, and the refusals that need no server
 * (malformed hf:// names, HF_HUB_OFFLINE, a closed port).  The protocol
 * itself is checked against nginx by tests/mount/t_net.py. */
#include <check.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "net/wf_http.h"
#include "net/wf_source.h"

static void expect_host(const char *url, const char *want)
{
	char out[64];
	wf_http_host(url, out, sizeof out);
	ck_assert_msg(strcmp(out, want) == 0, "%s: %s, not %s", url, out, want);
}

START_TEST(test_host)
{
	expect_host("https://huggingface.co/org/name/resolve/x/y", "huggingface.co");
	expect_host("http://127.0.0.1:8080/a?b=c", "127.0.0.1:8080");
	expect_host("https://user:pw@cdn.example:443", "cdn.example:443");
	expect_host("https://h?q=/x", "h");
	expect_host("no scheme here", "");
	char small[4];
	wf_http_host("https://abcdefgh/", small, sizeof small);
	ck_assert_str_eq(small, "abc");
}
END_TEST

START_TEST(test_is_remote)
{
	ck_assert(wf_source_is_remote("hf://org/name"));
	ck_assert(wf_source_is_remote("https://h/m.gguf"));
	ck_assert(wf_source_is_remote("http://h/m.gguf"));
	ck_assert(!wf_source_is_remote("hf:/org/name"));
	ck_assert(!wf_source_is_remote("./hf://x"));
	ck_assert(!wf_source_is_remote("model.gguf"));
	ck_assert(!wf_source_is_remote("ftp://h/m.gguf"));
}
END_TEST

static void expect_refused(const char *src, const char *substr)
{
	char err[WF_ERRLEN] = "", *local = NULL;
	ck_assert_msg(wf_source_stage(src, &local, err) != WF_OK, "%s: staged", src);
	ck_assert_ptr_null(local);
	ck_assert_msg(strstr(err, substr) != NULL, "%s: \"%s\" lacks \"%s\"", src, err, substr);
	wf_source_cleanup();
}

START_TEST(test_refusals)
{
	setenv("HF_ENDPOINT", "http://127.0.0.1:1", 1);
	char cache[] = "/tmp/check-net-XXXXXX";
	ck_assert_ptr_nonnull(mkdtemp(cache));
	setenv("XDG_CACHE_HOME", cache, 1); /* the default cache folder: not the user's */
	setenv("HF_HOME", cache, 1);
	wf_http_conf.attempts = 1;
	expect_refused("hf://", "not a Hub source");
	expect_refused("hf://org", "not a Hub source");
	expect_refused("hf:///name", "not a Hub source");
	expect_refused("hf://org/", "not a Hub source");
	expect_refused("hf://org/name@", "revision");
	expect_refused("hf://org/name/../x", "\"..\"");
	/* nothing listens on port 1: one line naming the URL, no retry loop */
	expect_refused("hf://org/name", "127.0.0.1:1");
	expect_refused("http://127.0.0.1:1/m.gguf", "127.0.0.1:1");
	setenv("HF_HUB_OFFLINE", "YES", 1);
	/* offline: never staged online, so nothing in the cache */
	expect_refused("hf://org/name", "HF_HUB_OFFLINE");
	expect_refused("hf://org/name", "has nothing of this source");
	unsetenv("HF_HUB_OFFLINE");
	char rm[256];
	snprintf(rm, sizeof rm, "rm -rf '%s'", cache);
	ck_assert_int_eq(system(rm), 0);
	unsetenv("HF_ENDPOINT");
}
END_TEST

/* The digest a listing entry gives: lfs.oid for an LFS file (never its
 * pointer's oid), oid for another; anything malformed gives none. */
static enum wf_digest_kind entry_digest(const char *json, char *hex)
{
	cJSON *e = cJSON_Parse(json);
	ck_assert_ptr_nonnull(e);
	enum wf_digest_kind k = wf_hub_entry_digest(e, hex);
	cJSON_Delete(e);
	return k;
}

START_TEST(test_entry_digest)
{
	char hex[65];
	const char *sha = "2f01223a3630cc4c8397f847a110f07cdb7148c39eef6998ad8871b03bbf8e16";
	const char *git = "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391";
	char buf[512];
	snprintf(buf, sizeof buf, "{\"type\":\"file\",\"oid\":\"%s\",\"lfs\":{\"oid\":\"%s\",\"size\":3}}", git, sha);
	ck_assert_int_eq(entry_digest(buf, hex), WF_DIGEST_SHA256);
	ck_assert_str_eq(hex, sha);
	snprintf(buf, sizeof buf, "{\"type\":\"file\",\"oid\":\"%s\",\"size\":0}", git);
	ck_assert_int_eq(entry_digest(buf, hex), WF_DIGEST_GIT_SHA1);
	ck_assert_str_eq(hex, git);
	/* an LFS entry without its own oid: none, never the pointer's */
	snprintf(buf, sizeof buf, "{\"oid\":\"%s\",\"lfs\":{\"size\":3}}", git);
	ck_assert_int_eq(entry_digest(buf, hex), WF_DIGEST_NONE);
	ck_assert_str_eq(hex, "");
	snprintf(buf, sizeof buf, "{\"oid\":\"%s\",\"lfs\":\"%s\"}", git, sha);
	ck_assert_int_eq(entry_digest(buf, hex), WF_DIGEST_NONE);
	static const char *const bad[] = {
		"{}", "{\"oid\":40}", "{\"oid\":null}", "{\"oid\":\"\"}",
		"{\"oid\":\"E69DE29BB2D1D6434B8B29AE775AD8C2E48C5391\"}",   /* upper case */
		"{\"oid\":\"e69de29bb2d1d6434b8b29ae775ad8c2e48c539\"}",    /* 39 digits */
		"{\"oid\":\"e69de29bb2d1d6434b8b29ae775ad8c2e48c53911\"}",  /* 41 */
		"{\"oid\":\"e69de29bb2d1d6434b8b29ae775ad8c2e48c539g\"}",   /* not hex */
		"{\"lfs\":{\"oid\":\"e69de29bb2d1d6434b8b29ae775ad8c2e48c5391\"}}", /* a SHA-1 as lfs.oid */
		"{\"lfs\":{\"oid\":\"sha256:2f01223a3630cc4c8397f847a110f07cdb7148c39eef6998ad8871b03bbf8e16\"}}",
		"[1,2]", "\"oid\"",
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		strcpy(hex, "x");
		ck_assert_msg(entry_digest(bad[i], hex) == WF_DIGEST_NONE, "%s", bad[i]);
		ck_assert_str_eq(hex, "");
	}
}
END_TEST

int main(void)
{
	Suite *s = suite_create("net");
	TCase *tc = tcase_create("net");
	tcase_add_test(tc, test_host);
	tcase_add_test(tc, test_is_remote);
	tcase_add_test(tc, test_refusals);
	tcase_add_test(tc, test_entry_digest);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
