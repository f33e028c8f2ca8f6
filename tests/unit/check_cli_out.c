/* check_cli_out.c - unit tests for convert's output file (cli_out.c): it
 * appears whole or not at all, with the mode asked for less the umask, and
 * temporary files of dead runs are removed. */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cli/cli_out.h"

static char dir[] = "/tmp/wf-check-out-XXXXXX";
static char out[300];

static void setup(void)
{
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(out, sizeof out, "%s/m.safetensors", dir);
}

static int entries(void)
{
	DIR *d = opendir(dir);
	ck_assert_ptr_nonnull(d);
	int n = 0;
	struct dirent *de;
	while ((de = readdir(d)) != NULL)
		n += strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0;
	closedir(d);
	return n;
}

static void teardown(void)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	while (d && (de = readdir(d)) != NULL)
		if (strcmp(de->d_name, ".") != 0 && strcmp(de->d_name, "..") != 0)
			unlinkat(dirfd(d), de->d_name, 0);
	if (d)
		closedir(d);
	rmdir(dir);
}

static void touch(const char *name)
{
	char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0600);
	ck_assert_int_ge(fd, 0);
	close(fd);
}

static bool exists(const char *name)
{
	char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return access(p, F_OK) == 0;
}

START_TEST(test_whole_with_mode)
{
	setup();
	mode_t old = umask(022);
	struct cli_out o;
	ck_assert_int_eq(cli_out_open(&o, out, 0600), 0);
	ck_assert_int_eq(pwrite(o.fd, "abcd", 4, 0), 4);
	ck_assert_int_eq(entries(), o.tmp ? 1 : 0); /* unnamed until committed, with O_TMPFILE */
	ck_assert(!exists("m.safetensors"));
	ck_assert_int_eq(cli_out_commit(&o, false), 0);
	cli_out_abort(&o);
	struct stat st;
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0600);
	ck_assert_int_eq(st.st_size, 4);
	ck_assert_int_eq(entries(), 1);
	/* 0644 asked, umask 027: 0640 */
	umask(027);
	ck_assert_int_eq(cli_out_open(&o, out, 0644), 0);
	ck_assert_int_eq(cli_out_commit(&o, false), -1); /* out exists, no force */
	ck_assert_int_eq(errno, EEXIST);
	cli_out_abort(&o);
	ck_assert_int_eq(entries(), 1);
	ck_assert_int_eq(cli_out_open(&o, out, 0644), 0);
	ck_assert_int_eq(cli_out_commit(&o, true), 0);
	cli_out_abort(&o);
	ck_assert_int_eq(stat(out, &st), 0);
	ck_assert_int_eq(st.st_mode & 0777, 0640);
	ck_assert_int_eq(st.st_size, 0);
	ck_assert_int_eq(entries(), 1);
	umask(old);
	teardown();
}
END_TEST

START_TEST(test_abort_leaves_nothing)
{
	setup();
	struct cli_out o;
	ck_assert_int_eq(cli_out_open(&o, out, 0644), 0);
	ck_assert_int_eq(pwrite(o.fd, "abcd", 4, 0), 4);
	cli_out_abort(&o);
	ck_assert_int_eq(entries(), 0);
	teardown();
}
END_TEST

START_TEST(test_killed_leaves_nothing)
{
	/* SIGKILL after writing: with O_TMPFILE nothing is left to clean */
	setup();
	pid_t pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct cli_out o;
		if (cli_out_open(&o, out, 0644) != 0)
			_exit(3);
		if (o.tmp)
			_exit(4); /* no O_TMPFILE here: nothing to test */
		if (pwrite(o.fd, "abcd", 4, 0) != 4)
			_exit(5);
		raise(SIGKILL);
		_exit(6);
	}
	int status;
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL, "child status %d", status);
	ck_assert_int_eq(entries(), 0);
	teardown();
}
END_TEST

START_TEST(test_stale_cleaned)
{
	setup();
	pid_t dead = fork();
	ck_assert_int_ge(dead, 0);
	if (dead == 0)
		_exit(0);
	ck_assert_int_eq(waitpid(dead, NULL, 0), dead); /* reaped: its pid names no process */
	char name[200];
	snprintf(name, sizeof name, ".m.safetensors.weightfs-%ld-0.tmp", (long)dead);
	touch(name);
	touch(".m.safetensors.weightfs-1-0.tmp");          /* pid 1 lives */
	touch(".other.weightfs-999999999-0.tmp");         /* another output's */
	touch(".m.safetensors.weightfs-x-0.tmp");          /* not ours */
	ck_assert_int_eq(cli_out_clean_stale(out), 1);
	ck_assert(!exists(name));
	ck_assert(exists(".m.safetensors.weightfs-1-0.tmp"));
	ck_assert(exists(".other.weightfs-999999999-0.tmp"));
	ck_assert(exists(".m.safetensors.weightfs-x-0.tmp"));
	teardown();
}
END_TEST

int main(void)
{
	Suite *s = suite_create("cli_out");
	TCase *tc = tcase_create("out");
	tcase_add_test(tc, test_whole_with_mode);
	tcase_add_test(tc, test_abort_leaves_nothing);
	tcase_add_test(tc, test_killed_leaves_nothing);
	tcase_add_test(tc, test_stale_cleaned);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
