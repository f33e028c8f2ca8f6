/* check_cache.c - the cache folder's pure parts (src/net/wf_cache.h) on a
 * temporary folder, no network: size parsing, checked files, least
 * recently used evicted first, the limit kept, temporary files spared. */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "net/wf_cache.h"

START_TEST(test_size_parse)
{
	uint64_t x;
	ck_assert(wf_size_parse("0", &x) && x == 0);
	ck_assert(wf_size_parse("123", &x) && x == 123);
	ck_assert(wf_size_parse("64K", &x) && x == 65536);
	ck_assert(wf_size_parse("4m", &x) && x == 4u << 20);
	ck_assert(wf_size_parse("10G", &x) && x == 10ull << 30);
	ck_assert(wf_size_parse("2T", &x) && x == 2ull << 40);
	ck_assert(wf_size_parse("1GiB", &x) && x == 1ull << 30);
	ck_assert(wf_size_parse("3KB", &x) && x == 3072);
	ck_assert(wf_size_parse("18446744073709551615", &x) && x == UINT64_MAX);
	static const char *const bad[] = {"", "K", "-1", "1.5G", "10 G", "10X", "1Gb", "1GiBx", "0x10",
					  "18446744073709551616", "16777216T", " 1", NULL};
	for (int i = 0; bad[i]; i++)
		ck_assert_msg(!wf_size_parse(bad[i], &x), "\"%s\" parsed", bad[i]);
	ck_assert(!wf_size_parse(NULL, &x));
}
END_TEST

static char dir[64];

static void fresh(void)
{
	snprintf(dir, sizeof dir, "/tmp/check-cache-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void rm_dir(void)
{
	char cmd[128];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* the file's mtime set t seconds in the past */
static void age(const char *rel, int t)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	struct timespec ts[2];
	clock_gettime(CLOCK_REALTIME, &ts[0]);
	ts[0].tv_sec -= t;
	ts[1] = ts[0];
	ck_assert_int_eq(utimensat(AT_FDCWD, p, ts, 0), 0);
}

static bool present(const char *rel)
{
	char p[256];
	snprintf(p, sizeof p, "%s/%s", dir, rel);
	return access(p, F_OK) == 0;
}

START_TEST(test_get_put)
{
	fresh();
	uint8_t a[1000], b[1000];
	for (int i = 0; i < 1000; i++)
		a[i] = (uint8_t)(i * 7);
	ck_assert(wf_cache_put(dir, "k1/0", a, sizeof a, 0));
	ck_assert(wf_cache_get(dir, "k1/0", b, sizeof b));
	ck_assert_mem_eq(a, b, sizeof a);
	ck_assert(!wf_cache_get(dir, "k1/0", b, 999)); /* another length: not this file */
	ck_assert(!wf_cache_get(dir, "k1/1", b, sizeof b));
	/* torn: shorter, or one byte changed */
	char p[256];
	snprintf(p, sizeof p, "%s/k1/0", dir);
	int fd = open(p, O_RDWR);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "x", 1, 500), 1);
	close(fd);
	ck_assert(!wf_cache_get(dir, "k1/0", b, sizeof b));
	ck_assert(wf_cache_put(dir, "k1/0", a, sizeof a, 0));
	ck_assert_int_eq(truncate(p, 600), 0);
	ck_assert(!wf_cache_get(dir, "k1/0", b, sizeof b));
	rm_dir();
}
END_TEST

START_TEST(test_evict_lru)
{
	fresh();
	uint8_t buf[1016] = {0}; /* 1024 bytes a file with its sum */
	const char *names[] = {"a/0", "a/1", "b/0", "b/1", "c/0"};
	for (int i = 0; i < 5; i++)
		ck_assert(wf_cache_put(dir, names[i], buf, sizeof buf, 0));
	/* ages: a/1 the oldest, then b/0, c/0, a/0, b/1 the newest */
	age("a/1", 50), age("b/0", 40), age("c/0", 30), age("a/0", 20), age("b/1", 10);
	/* a hit makes b/0 the newest */
	uint8_t got[1016];
	ck_assert(wf_cache_get(dir, "b/0", got, sizeof got));
	/* a temporary file (another process's, being written) is never touched */
	char p[256];
	snprintf(p, sizeof p, "%s/c/0.tmp.1.1", dir);
	FILE *f = fopen(p, "w");
	ck_assert_ptr_nonnull(f);
	fputs("partial", f);
	fclose(f);
	uint64_t total = 0;
	ck_assert_int_eq(wf_cache_evict(dir, 3 * 1024, 0, &total), WF_OK);
	ck_assert_uint_eq(total, 3 * 1024);
	ck_assert(!present("a/1") && !present("c/0"));
	ck_assert(present("b/0") && present("a/0") && present("b/1"));
	ck_assert(present("c/0.tmp.1.1"));
	/* room for 1024 more under 3072: the oldest left (a/0) goes */
	ck_assert_int_eq(wf_cache_evict(dir, 3 * 1024, 1024, &total), WF_OK);
	ck_assert(!present("a/0") && present("b/1") && present("b/0"));
	/* a stale temporary file (a crash an hour ago) is removed */
	snprintf(p, sizeof p, "c/0.tmp.1.1");
	age(p, 7200);
	ck_assert_int_eq(wf_cache_evict(dir, 1u << 20, 0, &total), WF_OK);
	ck_assert(!present("c/0.tmp.1.1"));
	rm_dir();
}
END_TEST

START_TEST(test_put_limit)
{
	fresh();
	uint8_t buf[1016] = {0};
	char rel[32];
	/* 16 KiB limit, 1 KiB files: the folder never goes over it */
	for (int i = 0; i < 64; i++) {
		snprintf(rel, sizeof rel, "k/%d", i);
		ck_assert(wf_cache_put(dir, rel, buf, sizeof buf, 16 * 1024));
		uint64_t total;
		ck_assert_int_eq(wf_cache_evict(dir, UINT64_MAX, 0, &total), WF_OK);
		ck_assert_uint_le(total, 16 * 1024);
		ck_assert(present(rel));
	}
	/* a file bigger than 7/8 of the limit is not kept at all */
	uint8_t big[15 * 1024] = {0};
	ck_assert(!wf_cache_put(dir, "k/big", big, sizeof big, 16 * 1024));
	ck_assert(!present("k/big"));
	rm_dir();
}
END_TEST

START_TEST(test_default_dir)
{
	char out[256], err[WF_ERRLEN];
	setenv("XDG_CACHE_HOME", "/x/cache", 1);
	ck_assert_int_eq(wf_cache_default(out, sizeof out, err), WF_OK);
	ck_assert_str_eq(out, "/x/cache/weightfs");
	setenv("XDG_CACHE_HOME", "relative", 1); /* invalid for the XDG spec: ignored */
	setenv("HOME", "/home/u", 1);
	ck_assert_int_eq(wf_cache_default(out, sizeof out, err), WF_OK);
	ck_assert_str_eq(out, "/home/u/.cache/weightfs");
	unsetenv("XDG_CACHE_HOME");
	unsetenv("HOME");
	ck_assert_int_ne(wf_cache_default(out, sizeof out, err), WF_OK);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cache");
	TCase *tc = tcase_create("cache");
	tcase_add_test(tc, test_size_parse);
	tcase_add_test(tc, test_get_put);
	tcase_add_test(tc, test_evict_lru);
	tcase_add_test(tc, test_put_limit);
	tcase_add_test(tc, test_default_dir);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
