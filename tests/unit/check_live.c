/* check_live.c - unit tests for what keeps a live mount honest: the
 * model's identity check (wf_model_check) and the message limiter
 * (wf_log.c). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "view/wf_live.h"
#include "fuse/wf_log.h"
#include "model/wf_model.h"
#include "model/wf_open.h"
#include "mount/wf_files.h"
#include "mount/wf_tree.h"

#ifndef DATA_DIR
#define DATA_DIR "tests/valid"
#endif

/* ---------------------------------------------------------------- identity */

static char dir[] = "/tmp/wf-check-live-XXXXXX";
static char path[256];

/* Copies tests/valid/scalar.gguf to a fresh file and opens it as a model. */
static struct wf_model *open_copy(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/model.gguf", dir);
	FILE *in = fopen(DATA_DIR "/scalar.gguf", "rb");
	ck_assert_ptr_nonnull(in);
	FILE *out = fopen(path, "wb");
	ck_assert_ptr_nonnull(out);
	char buf[4096];
	size_t n;
	while ((n = fread(buf, 1, sizeof buf, in)) > 0)
		ck_assert_uint_eq(fwrite(buf, 1, n, out), n);
	fclose(in);
	ck_assert_int_eq(fclose(out), 0);
	struct wf_model *m;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_open_file(&m, path, err), WF_OK);
	/* timestamps tick coarsely: let a clock tick pass so a change shows */
	nanosleep(&(struct timespec){0, 30 * 1000 * 1000}, NULL);
	return m;
}

static void close_copy(struct wf_model *m)
{
	wf_model_free(m);
	char p[300];
	snprintf(p, sizeof p, "%s/other", dir);
	unlink(p);
	unlink(path);
	rmdir(dir);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

START_TEST(test_unchanged)
{
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_OK);
	/* reading and re-stating by name change nothing */
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_OK);
	close_copy(m);
}
END_TEST

START_TEST(test_truncated)
{
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN];
	ck_assert_int_eq(truncate(path, m->parts[0].st.st_size - 1), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "size changed") != NULL, "%s", err);
	/* growing back to the same size does not make it the same file */
	ck_assert_int_eq(truncate(path, m->parts[0].st.st_size), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	close_copy(m);
}
END_TEST

START_TEST(test_rewritten)
{
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN];
	int fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\0", 1, m->parts[0].st.st_size - 1), 1);
	close(fd);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "modified") != NULL, "%s", err);
	close_copy(m);
}
END_TEST

START_TEST(test_mtime_restored)
{
	/* rewritten, then its modification time set back (cp -p, rsync -t):
	 * the change time still tells */
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN];
	int fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\0", 1, m->parts[0].st.st_size - 1), 1);
	struct timespec ts[2] = {m->parts[0].st.st_atim, m->parts[0].st.st_mtim};
	ck_assert_int_eq(futimens(fd, ts), 0);
	close(fd);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "ctime") != NULL, "%s", err);
	close_copy(m);
}
END_TEST

START_TEST(test_replaced_by_rename)
{
	/* download tools replace a file by rename: the open file is unchanged */
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN], other[300];
	snprintf(other, sizeof other, "%s/other", dir);
	FILE *f = fopen(other, "wb");
	ck_assert_ptr_nonnull(f);
	fputs("something else", f);
	fclose(f);
	ck_assert_int_eq(rename(other, path), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_OK);
	close_copy(m);
}
END_TEST

START_TEST(test_buffer_model)
{
	static const uint8_t buf[] = "GGUF";
	struct wf_model *m = wf_model_new(WF_FMT_GGUF, buf, 4);
	ck_assert_ptr_nonnull(m);
	ck_assert_int_eq(wf_model_check(m, 0, NULL), WF_OK);
	wf_model_free(m);
}
END_TEST

/* Reads through wf_live: a tensor and the tree's files are served while
 * the file is as opened; after a change, they fail, and the notice
 * comes once. */
static int notices;
static void count_notice(void *ctx, const char *part, const char *why)
{
	(void)ctx, (void)part, (void)why;
	notices++;
}

START_TEST(test_live_reads)
{
	struct wf_model *m = open_copy();
	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tree_build(&t, m, err), WF_OK);
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, wf_files_seg, t, count_notice, NULL), WF_OK);
	ck_assert_int_eq(wf_live_catch_sigbus(), 0);
	ck_assert_uint_ge(m->n_tensors, 1);
	uint8_t buf[64], whole[64];
	size_t got;
	uint64_t size = m->tensors[0].size < sizeof buf ? m->tensors[0].size : sizeof buf;
	ck_assert_int_eq(wf_live_read_view(&lv, &m->tensors[0], 0, sizeof buf, whole, &got), WF_OK);
	ck_assert_uint_eq(got, size);
	/* the same bytes through the tensor's file and through model.safetensors */
	ck_assert_int_eq(wf_live_read(&lv, t->tensor_node[0], 0, sizeof buf, buf, &got), WF_OK);
	ck_assert_uint_eq(got, size);
	ck_assert_int_eq(memcmp(buf, whole, size), 0);
	uint32_t st = wf_tree_lookup(t, 0, "model.safetensors", 17);
	ck_assert_uint_ne(st, WF_NO_NODE);
	ck_assert_int_eq(wf_live_read(&lv, st, t->st_header_len + t->st_offsets[0], size, buf, &got), WF_OK);
	ck_assert_uint_eq(got, size);
	ck_assert_int_eq(memcmp(buf, whole, size), 0);
	/* a file the tree does not have */
	ck_assert_int_eq(wf_live_read(&lv, t->n_nodes, 0, 4, buf, &got), WF_OK);
	ck_assert_uint_eq(got, 0);
	/* a change: every read of the part fails, and it is said once */
	ck_assert_int_eq(truncate(path, m->parts[0].st.st_size - 1), 0);
	ck_assert_int_eq(wf_live_read_view(&lv, &m->tensors[0], 0, sizeof buf, buf, &got), WF_ERR_CHANGED);
	ck_assert_uint_eq(got, 0);
	/* the header is in memory and stays readable; the tensor's bytes do not */
	ck_assert_int_eq(wf_live_read(&lv, st, 0, 8, buf, &got), WF_OK);
	ck_assert_int_eq(wf_live_read(&lv, st, t->st_header_len + t->st_offsets[0], size, buf, &got), WF_ERR_CHANGED);
	ck_assert_int_eq(wf_live_read(&lv, t->tensor_node[0], 0, sizeof buf, buf, &got), WF_ERR_CHANGED);
	ck_assert_int_eq(notices, 1);
	wf_live_free(&lv);
	wf_tree_free(t);
	close_copy(m);
}
END_TEST

/* ---------------------------------------------------------------- limiter */

struct sink {
	int lines;
	char last[WF_LOG_LINE + 64];
};

static void collect(void *ctx, const char *line)
{
	struct sink *s = ctx;
	s->lines++;
	snprintf(s->last, sizeof s->last, "%s", line);
}

START_TEST(test_repeats)
{
	/* the thread-creation failure that printed 90,000 lines */
	struct wf_limiter l;
	struct sink s = {0};
	ck_assert_int_eq(wf_limiter_init(&l), 0);
	for (int i = 0; i < 90000; i++)
		wf_limiter_log(&l, 5, "fuse: error creating thread: Resource temporarily unavailable\n",
			       collect, &s);
	/* the first, then at 10, 100, 1000, 10000 */
	ck_assert_int_eq(s.lines, 5);
	ck_assert_str_eq(s.last, "fuse: error creating thread: Resource temporarily unavailable "
				 "(repeated 10000 times)");
	wf_limiter_log(&l, 6, "another", collect, &s);
	ck_assert_int_eq(s.lines, 7);
	ck_assert_str_eq(s.last, "another");
	wf_limiter_destroy(&l);
}
END_TEST

START_TEST(test_rate)
{
	/* distinct messages: at most WF_LOG_WINDOW_LINES per window, then a count */
	struct wf_limiter l;
	struct sink s = {0};
	char msg[32];
	ck_assert_int_eq(wf_limiter_init(&l), 0);
	for (int i = 0; i < 1000; i++) {
		snprintf(msg, sizeof msg, "message %d", i);
		wf_limiter_log(&l, 100 + i / 100, msg, collect, &s);
	}
	ck_assert_int_eq(s.lines, WF_LOG_WINDOW_LINES);
	wf_limiter_log(&l, 100 + WF_LOG_WINDOW, "later", collect, &s);
	ck_assert_int_eq(s.lines, WF_LOG_WINDOW_LINES + 2);
	ck_assert_str_eq(s.last, "later");
	wf_limiter_destroy(&l);
}
END_TEST

START_TEST(test_long_line)
{
	struct wf_limiter l;
	struct sink s = {0};
	char msg[2000];
	memset(msg, 'x', sizeof msg - 1);
	msg[sizeof msg - 1] = '\0';
	ck_assert_int_eq(wf_limiter_init(&l), 0);
	wf_limiter_log(&l, 0, msg, collect, &s);
	ck_assert_int_eq(s.lines, 1);
	ck_assert_uint_eq(strlen(s.last), WF_LOG_LINE - 1);
	wf_limiter_destroy(&l);
}
END_TEST

static Suite *live_suite(void)
{
	Suite *s = suite_create("live");
	TCase *tc = tcase_create("identity");
	tcase_add_test(tc, test_unchanged);
	tcase_add_test(tc, test_truncated);
	tcase_add_test(tc, test_rewritten);
	tcase_add_test(tc, test_mtime_restored);
	tcase_add_test(tc, test_replaced_by_rename);
	tcase_add_test(tc, test_buffer_model);
	tcase_add_test(tc, test_live_reads);
	suite_add_tcase(s, tc);
	tc = tcase_create("limiter");
	tcase_add_test(tc, test_repeats);
	tcase_add_test(tc, test_rate);
	tcase_add_test(tc, test_long_line);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(live_suite());
	int failed;

	srunner_run_all(sr, CK_ENV);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
