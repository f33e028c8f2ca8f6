/* check_sha.c - unit tests for the digests (mount/wf_sha.c): FIPS 180's
 * test vectors for SHA-256 and SHA-1, a message fed in pieces against the
 * same message at once, a digest reused after final, git's blob id of a
 * known file, and the hex round trip. */
#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "mount/wf_sha.h"

static void hex_of(enum wf_sha_kind k, const void *p, size_t n, char *hex)
{
	uint8_t d[WF_SHA256_LEN];
	struct wf_sha *s = wf_sha_new(k);
	ck_assert_ptr_nonnull(s);
	ck_assert(wf_sha_update(s, p, n));
	ck_assert(wf_sha_final(s, d));
	wf_sha_hex(d, k == WF_SHA1 ? WF_SHA1_LEN : WF_SHA256_LEN, hex);
	wf_sha_free(s);
}

START_TEST(test_vectors)
{
	char hex[2 * WF_SHA256_LEN + 1];
	hex_of(WF_SHA256, "abc", 3, hex);
	ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	hex_of(WF_SHA256, "", 0, hex);
	ck_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	hex_of(WF_SHA1, "abc", 3, hex);
	ck_assert_str_eq(hex, "a9993e364706816aba3e25717850c26c9cd0d89d");
	/* `git hash-object` of a file holding "hello\n" */
	hex_of(WF_SHA1, "blob 6\0hello\n", 13, hex);
	ck_assert_str_eq(hex, "ce013625030ba8dba906f756967f9e9ca394464a");
}
END_TEST

/* A million 'a's, fed 1 to 1000 bytes at a time, then again on the same
 * digest after final (which starts it over). */
START_TEST(test_pieces)
{
	static char a[1000000];
	memset(a, 'a', sizeof a);
	struct wf_sha *s = wf_sha_new(WF_SHA256);
	ck_assert_ptr_nonnull(s);
	for (int round = 0; round < 2; round++) {
		size_t off = 0, step = 1;
		while (off < sizeof a) {
			size_t n = step < sizeof a - off ? step : sizeof a - off;
			ck_assert(wf_sha_update(s, a + off, n));
			off += n;
			step = step % 1000 + 7;
		}
		uint8_t d[WF_SHA256_LEN];
		char hex[2 * WF_SHA256_LEN + 1];
		ck_assert(wf_sha_final(s, d));
		wf_sha_hex(d, sizeof d, hex);
		ck_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
	}
	wf_sha_free(s);
	wf_sha_free(NULL);
}
END_TEST

START_TEST(test_unhex)
{
	uint8_t d[4];
	ck_assert(wf_sha_unhex("00fFa9B1", 4, d));
	ck_assert(d[0] == 0x00 && d[1] == 0xff && d[2] == 0xa9 && d[3] == 0xb1);
	char hex[9];
	wf_sha_hex(d, 4, hex);
	ck_assert_str_eq(hex, "00ffa9b1");
	ck_assert(!wf_sha_unhex("00fg", 2, d));
	ck_assert(!wf_sha_unhex("0 00", 2, d));
	ck_assert(!wf_sha_unhex("0", 1, d)); /* the NUL is no digit */
}
END_TEST

static Suite *sha_suite(void)
{
	Suite *s = suite_create("sha");
	TCase *tc = tcase_create("digests");
	tcase_add_test(tc, test_vectors);
	tcase_add_test(tc, test_pieces);
	tcase_add_test(tc, test_unhex);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(sha_suite());
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
