/* check_mnt.c - unit tests for the mount point inspection (wf_mnt.c):
 * mountinfo parsing and the states of a directory.  A dead FUSE mount
 * needs a real mount: the mount suite covers it (cli group). */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuse/wf_mnt.h"

static char dir[] = "/tmp/wf-check-mnt-XXXXXX";
static char table[300];

static void setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(table, sizeof table, "%s/mountinfo", dir);
}

static void teardown(void)
{
	char cmd[400];
	snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

static void write_table_at(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void write_table(const char *text)
{
	FILE *f = fopen(table, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static char *sub(const char *name)
{
	static char p[400];
	snprintf(p, sizeof p, "%s/%s", dir, name);
	return p;
}

START_TEST(test_lookup)
{
	write_table("22 1 8:1 / / rw,relatime shared:1 - ext4 /dev/sda1 rw\n"
		    "40 22 0:35 / /mnt/my\\040models rw shared:5 master:2 - fuse.weightfs /m/a\\040b.gguf ro\n"
		    "41 22 0:36 / /mnt/x rw - tmpfs tmpfs rw\n"
		    "42 41 0:37 / /mnt/x ro - fuse.weightfs /m/top.gguf ro\n"
		    "garbage line\n"
		    "43 22 0:38 / /no-separator rw tmpfs tmpfs rw\n");
	struct wf_mnt_info mi;
	bool found;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_mnt_lookup(table, "/", &found, &mi, err), WF_OK);
	ck_assert(found);
	ck_assert_str_eq(mi.fstype, "ext4");
	ck_assert_str_eq(mi.source, "/dev/sda1");
	/* escaped spaces, optional tags before the separator */
	ck_assert_int_eq(wf_mnt_lookup(table, "/mnt/my models", &found, &mi, err), WF_OK);
	ck_assert(found);
	ck_assert_str_eq(mi.fstype, "fuse.weightfs");
	ck_assert_str_eq(mi.source, "/m/a b.gguf");
	/* stacked: the last line is on top; no optional tags at all */
	ck_assert_int_eq(wf_mnt_lookup(table, "/mnt/x", &found, &mi, err), WF_OK);
	ck_assert(found);
	ck_assert_str_eq(mi.source, "/m/top.gguf");
	ck_assert_str_eq(mi.dev, "0:37");
	ck_assert_int_eq(wf_mnt_lookup(table, "/mnt", &found, &mi, err), WF_OK);
	ck_assert(!found);
	ck_assert_int_eq(wf_mnt_lookup(table, "/no-separator", &found, &mi, err), WF_OK);
	ck_assert(!found);
	ck_assert_int_eq(wf_mnt_lookup(sub("nope"), "/", &found, &mi, err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
}
END_TEST

static char *read_text(const char *path)
{
	static char text[64];
	FILE *f = fopen(path, "r");
	ck_assert_ptr_nonnull(f);
	size_t n = fread(text, 1, sizeof text - 1, f);
	text[n] = '\0';
	fclose(f);
	return text;
}

/* The read-ahead goes to the topmost FUSE mount's bdi, in a sysfs given
 * by the caller; anything else is refused with nothing written. */
START_TEST(test_readahead)
{
	char err[WF_ERRLEN];
	write_table("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		    "41 22 0:36 / /mnt/x rw - tmpfs tmpfs rw\n"
		    "42 41 0:37 / /mnt/x ro - fuse.weightfs /m/top.gguf ro\n"
		    "43 22 0:38 / /mnt/t rw - tmpfs tmpfs rw\n"
		    "44 22 ../x / /mnt/odd ro - fuse.weightfs /m/odd.gguf ro\n");
	ck_assert_int_eq(mkdir(sub("class"), 0755), 0);
	ck_assert_int_eq(mkdir(sub("class/bdi"), 0755), 0);
	ck_assert_int_eq(mkdir(sub("class/bdi/0:37"), 0755), 0);
	ck_assert_int_eq(mkdir(sub("class/bdi/0:36"), 0755), 0);
	write_table_at(sub("class/bdi/0:37/read_ahead_kb"), "128\n");
	write_table_at(sub("class/bdi/0:36/read_ahead_kb"), "128\n");

	ck_assert_int_eq(wf_mnt_readahead(table, dir, "/mnt/x", 1024, err), WF_OK);
	ck_assert_str_eq(read_text(sub("class/bdi/0:37/read_ahead_kb")), "1024\n");
	ck_assert_str_eq(read_text(sub("class/bdi/0:36/read_ahead_kb")), "128\n");

	/* not FUSE, not mounted, a device name that is no major:minor */
	ck_assert_int_eq(wf_mnt_readahead(table, dir, "/mnt/t", 64, err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "no FUSE mount on /mnt/t"));
	ck_assert_int_eq(wf_mnt_readahead(table, dir, "/mnt/none", 64, err), WF_ERR_IO);
	ck_assert_int_eq(wf_mnt_readahead(table, dir, "/mnt/odd", 64, err), WF_ERR_IO);
	ck_assert_str_eq(read_text(sub("class/bdi/0:36/read_ahead_kb")), "128\n");

	/* the write's own failure is named with its path */
	write_table("42 1 0:39 / /mnt/y ro - fuse.weightfs /m/y.gguf ro\n");
	ck_assert_int_eq(wf_mnt_readahead(table, dir, "/mnt/y", 64, err), WF_ERR_IO);
	ck_assert_ptr_nonnull(strstr(err, "0:39/read_ahead_kb"));
	ck_assert_ptr_nonnull(strstr(err, strerror(ENOENT)));
}
END_TEST

START_TEST(test_states)
{
	struct wf_mnt_info mi;
	char err[WF_ERRLEN];
	write_table("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	ck_assert_int_eq(mkdir(sub("empty"), 0755), 0);
	ck_assert_int_eq(wf_mnt_inspect(sub("empty"), table, &mi, err), WF_OK);
	ck_assert_int_eq(mi.state, WF_MNT_FREE);

	ck_assert_int_eq(mkdir(sub("full"), 0755), 0);
	FILE *f = fopen(sub("full/weights.bin"), "w");
	ck_assert_ptr_nonnull(f);
	fclose(f);
	ck_assert_int_eq(wf_mnt_inspect(sub("full"), table, &mi, err), WF_OK);
	ck_assert_int_eq(mi.state, WF_MNT_NONEMPTY);
	ck_assert_str_eq(mi.entry, "weights.bin");

	/* the regular file's stat succeeds: the reason must not be a stale errno */
	errno = EINVAL;
	ck_assert_int_eq(wf_mnt_inspect(sub("full/weights.bin"), table, &mi, err), WF_ERR_IO);
	ck_assert_str_eq(err, "not a directory");
	ck_assert_int_eq(wf_mnt_inspect(sub("missing"), table, &mi, err), WF_ERR_IO);
	ck_assert_str_eq(err, strerror(ENOENT));
	ck_assert_int_eq(wf_mnt_inspect(sub("full/weights.bin/x"), table, &mi, err), WF_ERR_IO);
	ck_assert_str_eq(err, strerror(ENOTDIR));

	/* a directory the table lists is a mount point, whatever it holds */
	char line[600];
	snprintf(line, sizeof line, "22 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
		 "50 22 0:40 / %s ro,nosuid - fuse.weightfs /data/m.gguf ro\n", sub("empty"));
	write_table(line);
	ck_assert_int_eq(wf_mnt_inspect(sub("empty"), table, &mi, err), WF_OK);
	ck_assert_int_eq(mi.state, WF_MNT_MOUNTED);
	ck_assert_str_eq(mi.fstype, "fuse.weightfs");
	ck_assert_str_eq(mi.source, "/data/m.gguf");
	/* found through the resolved path */
	char odd[500];
	snprintf(odd, sizeof odd, "%s/full/../empty/", dir);
	ck_assert_int_eq(wf_mnt_inspect(odd, table, &mi, err), WF_OK);
	ck_assert_int_eq(mi.state, WF_MNT_MOUNTED);

	ck_assert_int_eq(wf_mnt_inspect(sub("empty"), sub("no-table"), &mi, err), WF_ERR_IO);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mnt");
	TCase *tc = tcase_create("mountpoint");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_lookup);
	tcase_add_test(tc, test_states);
	tcase_add_test(tc, test_readahead);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_ENV);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
