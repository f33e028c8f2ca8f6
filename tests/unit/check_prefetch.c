/* check_prefetch.c - the read-ahead thread reads exactly a read's source
 * range and the next ones of the same tensor: on a file whose pages were
 * dropped from the page cache (and whose kernel read-ahead is off,
 * POSIX_FADV_RANDOM), the pages of the read's own range are resident
 * (mincore) when wf_prefetch_read returns, those of the next
 * WF_PREFETCH_AHEAD reads once the thread is done, and pages outside
 * (before, past the range, past the tensor) stay out; small reads, mode 0,
 * and a local file in the default mode read nothing.  Needs a filesystem with a page cache
 * that honours POSIX_FADV_DONTNEED (not tmpfs); the directory is the first
 * of $WF_DISK_TMP, /var/tmp and . that is not tmpfs or ramfs, and the test
 * fails when eviction does not work there. */
#include <check.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "codec/wf_blocks.h"
#include "model/wf_model.h"
#include "view/wf_prefetch.h"
#include "codec/wf_types.h"

#define FILE_BYTES ((size_t)4 << 20)
#define DATA_AT 4096u
#define PAGE 4096u

static char path[512];
static int fd = -1;
static uint8_t *map;
/* Q4_0: 18 source bytes, 128 view bytes a block; the tensor ends at 3 MiB */
static struct wf_tensor t;

static void setup(void)
{
	/* the first of $WF_DISK_TMP, /var/tmp, . that is not in memory */
	const char *env = getenv("WF_DISK_TMP"), *dirs[] = {env && *env ? env : "/var/tmp", "/var/tmp", "."};
	const char *d = NULL;
	for (size_t i = 0; i < sizeof dirs / sizeof dirs[0] && !d; i++) {
		struct statfs sf;
		if (statfs(dirs[i], &sf) == 0 && sf.f_type != 0x01021994 /* tmpfs */ &&
		    sf.f_type != (__typeof__(sf.f_type))0x858458f6 /* ramfs */)
			d = dirs[i];
	}
	ck_assert_msg(d != NULL, "no disk filesystem among $WF_DISK_TMP, /var/tmp and .: set WF_DISK_TMP");
	snprintf(path, sizeof path, "%s/wf-check-prefetch-XXXXXX", d);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	uint8_t *buf = malloc(FILE_BYTES);
	ck_assert_ptr_nonnull(buf);
	for (size_t i = 0; i < FILE_BYTES; i++)
		buf[i] = (uint8_t)(i * 131 + 7);
	ck_assert_int_eq(write(fd, buf, FILE_BYTES), (ssize_t)FILE_BYTES);
	free(buf);
	ck_assert_int_eq(fsync(fd), 0);
	map = mmap(NULL, FILE_BYTES, PROT_READ, MAP_SHARED, fd, 0);
	ck_assert_ptr_ne(map, MAP_FAILED);
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_RANDOM), 0);
	wf_prefetch_set(1);
	uint64_t nblocks = ((3u << 20) - DATA_AT) / WF_Q4_0_BYTES;
	t = (struct wf_tensor){.type = WF_T_Q4_0, .nelems = nblocks * WF_Q4_0_BLCK, .offset = DATA_AT,
			       .nbytes = nblocks * WF_Q4_0_BYTES, .size = nblocks * WF_Q4_0_BLCK * 4};
}

static void teardown(void)
{
	wf_prefetch_drain();
	wf_prefetch_set(-1);
	munmap(map, FILE_BYTES);
	close(fd);
	unlink(path);
}

static int resident(size_t page)
{
	unsigned char v = 0;
	ck_assert_int_eq(mincore(map + page * PAGE, PAGE, &v), 0);
	return v & 1;
}

/* Drops the file's pages; the test means nothing if that did not work. */
static void evict(void)
{
	ck_assert_int_eq(posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED), 0);
	for (size_t p = 0; p < FILE_BYTES / PAGE; p++)
		ck_assert_msg(!resident(p), "%s: page %zu still cached after POSIX_FADV_DONTNEED: "
			      "set WF_DISK_TMP to a directory on a disk filesystem", path, p);
}

/* Waits for the thread, then wants every page in [a, b) read in. */
static void want_resident(size_t a, size_t b)
{
	wf_prefetch_drain();
	for (size_t p = a; p < b; p++)
		ck_assert_msg(resident(p), "page %zu of the next range was not read (range %zu..%zu)", p, a, b);
}

/* Pages wholly inside source bytes [a, b). */
static size_t page_in(uint64_t a) { return (size_t)((a + PAGE - 1) / PAGE); }
static size_t page_out(uint64_t b) { return (size_t)(b / PAGE); }

static void want_now(size_t a, size_t b)
{
	for (size_t p = a; p < b; p++)
		ck_assert_msg(resident(p), "page %zu of the read's own range was not read (range %zu..%zu)", p, a, b);
}

START_TEST(test_next_range)
{
	evict();
	/* view bytes [1 MiB, 2 MiB) are blocks 8192..16383, the next 4 MiB
	 * of view blocks 16384..49151 */
	wf_prefetch_read(&t, fd, 1u << 20, 1u << 20);
	uint64_t a = DATA_AT + 8192u * WF_Q4_0_BYTES, own = DATA_AT + 16384u * WF_Q4_0_BYTES;
	uint64_t b = DATA_AT + 49152u * WF_Q4_0_BYTES;
	if (b - a < WF_PREFETCH_WINDOW) /* the next reads' share is less than the window */
		b = a + WF_PREFETCH_WINDOW;
	ck_assert_uint_lt(b, t.offset + t.nbytes); /* else "past the range" below means nothing */
	want_now(page_in(a), page_out(own));
	want_resident(page_in(own), page_out(b));
	for (size_t p = 0; p < page_out(a); p++)
		ck_assert_msg(!resident(p), "page %zu before the read's range was read", p);
	for (size_t p = page_in(b) + 1; p < FILE_BYTES / PAGE; p++)
		ck_assert_msg(!resident(p), "page %zu past the next range was read", p);
	/* the next read continues the stream: its range is there at once */
	wf_prefetch_read(&t, fd, 2u << 20, 1u << 20);
	want_now(page_in(own), page_out(DATA_AT + 24576u * WF_Q4_0_BYTES));
}
END_TEST

START_TEST(test_clipped_to_tensor)
{
	evict();
	/* the next range runs past the view's end: it stops at the data's end */
	uint64_t off = t.size - (t.size % 128) - (1u << 20) - (1u << 19);
	wf_prefetch_read(&t, fd, off, 1u << 20);
	uint64_t a = DATA_AT + off / 128 * WF_Q4_0_BYTES, b = t.offset + t.nbytes;
	want_resident(page_in(a), page_out(b));
	for (size_t p = page_in(b) + 1; p < FILE_BYTES / PAGE; p++)
		ck_assert_msg(!resident(p), "page %zu past the tensor was read", p);
}
END_TEST

/* A read as long as size_t allows (the library's whole-tensor reads are
 * long): the whole tensor, nothing past it, no overflow. */
START_TEST(test_huge_len)
{
	evict();
	wf_prefetch_read(&t, fd, 0, SIZE_MAX);
	want_now(page_in(DATA_AT), page_out(t.offset + t.nbytes));
	wf_prefetch_drain();
	for (size_t p = page_in(t.offset + t.nbytes) + 1; p < FILE_BYTES / PAGE; p++)
		ck_assert_msg(!resident(p), "page %zu past the tensor was read", p);
}
END_TEST

/* Two readers at two places of one file get a stream each: the second
 * does not end the first, whose next read goes on from where it was. */
START_TEST(test_two_streams)
{
	evict();
	/* view [0, 1 MiB): source from DATA_AT, window WF_PREFETCH_WINDOW */
	wf_prefetch_read(&t, fd, 0, 1u << 20);
	uint64_t end1, end2;
	ck_assert_uint_eq(wf_prefetch_streams(fd, DATA_AT, &end1), 1);
	ck_assert_uint_eq(end1, DATA_AT + WF_PREFETCH_WINDOW);
	/* the last MiB of the view lies past the first stream's end */
	uint64_t off2 = (t.size - (1u << 20)) / 128 * 128, a2 = DATA_AT + off2 / 128 * WF_Q4_0_BYTES;
	ck_assert_uint_gt(a2, end1);
	wf_prefetch_read(&t, fd, off2, 1u << 20);
	ck_assert_uint_eq(wf_prefetch_streams(fd, a2, &end2), 2);
	ck_assert_uint_eq(end2, t.offset + t.nbytes);
	/* the first reader goes on: same stream, longer */
	wf_prefetch_read(&t, fd, 1u << 20, 1u << 20);
	uint64_t a3 = DATA_AT + 8192u * WF_Q4_0_BYTES;
	ck_assert_uint_eq(wf_prefetch_streams(fd, DATA_AT, &end1), 2);
	ck_assert_uint_eq(end1, a3 + WF_PREFETCH_WINDOW);
	want_now(page_in(a3), page_out(DATA_AT + 16384u * WF_Q4_0_BYTES));
	want_resident(page_in(a2), page_out(t.offset + t.nbytes));
	want_resident(page_in(DATA_AT), page_out(a3 + WF_PREFETCH_WINDOW));
}
END_TEST

/* A child forked after the thread started reads ahead with a thread of
 * its own instead of waiting for one fork did not copy. */
START_TEST(test_fork)
{
	evict();
	wf_prefetch_read(&t, fd, 0, 1u << 20);
	wf_prefetch_drain();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		wf_prefetch_read(&t, fd, 2u << 20, 1u << 20);
		_exit(resident(page_in(DATA_AT + 16384u * WF_Q4_0_BYTES)) ? 0 : 3);
	}
	int st;
	ck_assert_int_eq(waitpid(pid, &st, 0), pid);
	ck_assert_msg(WIFEXITED(st) && WEXITSTATUS(st) == 0, "child: status %d", st);
}
END_TEST

static void want_none_read(void)
{
	wf_prefetch_drain();
	for (size_t p = 0; p < FILE_BYTES / PAGE; p++)
		ck_assert_msg(!resident(p), "page %zu was read", p);
}

/* Small reads (random access), a read past the view, no descriptor:
 * nothing is read. */
START_TEST(test_nothing_posted)
{
	evict();
	wf_prefetch_read(&t, fd, 0, 4096);
	wf_prefetch_read(&t, fd, 0, WF_PREFETCH_MIN_READ - 1);
	wf_prefetch_read(&t, fd, t.size, 1u << 20);
	wf_prefetch_read(&t, fd, UINT64_MAX - 10, 1u << 20);
	wf_prefetch_read(&t, -1, 0, 1u << 20);
	want_none_read();
}
END_TEST

/* Mode 0 never posts; the default mode does not for a local file. */
START_TEST(test_modes)
{
	evict();
	wf_prefetch_set(0);
	wf_prefetch_read(&t, fd, 0, 1u << 20);
	want_none_read();
	wf_prefetch_set(-1);
	wf_prefetch_read(&t, fd, 0, 1u << 20);
	want_none_read();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("prefetch");
	TCase *tc = tcase_create("prefetch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_next_range);
	tcase_add_test(tc, test_clipped_to_tensor);
	tcase_add_test(tc, test_nothing_posted);
	tcase_add_test(tc, test_modes);
	tcase_add_test(tc, test_fork);
	tcase_add_test(tc, test_two_streams);
	tcase_add_test(tc, test_huge_len);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
