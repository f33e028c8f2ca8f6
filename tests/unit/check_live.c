/* check_live.c - unit tests for what keeps a live mount honest: the
 * model's identity check (wf_model_check) and the message limiter
 * (wf_limiter.c). */
#include <check.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "view/wf_live.h"
#include "fuse/wf_limiter.h"
#include "model/wf_model.h"
#include "model/wf_meta.h"
#include "model/wf_open.h"
#include "mount/wf_files.h"
#include "model/wf_watch.h"
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
	ck_assert_int_eq(wf_model_watch(m), WF_OK); /* as wf_set_open does */
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
	ck_assert_msg(strstr(err, "written to") != NULL, "%s", err);
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

START_TEST(test_link_write_utime)
{
	/* issue 17 item 2: link it (the link count moves), rewrite bytes in
	 * place, set the mtime back: only the ctime moved, and the link count
	 * with it; the kernel's modification event still tells */
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN], lnk[300];
	snprintf(lnk, sizeof lnk, "%s/other", dir);
	ck_assert_int_eq(link(path, lnk), 0);
	int fd = open(lnk, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\x33", 1, m->parts[0].st.st_size - 1), 1);
	struct timespec ts[2] = {m->parts[0].st.st_atim, m->parts[0].st.st_mtim};
	ck_assert_int_eq(futimens(fd, ts), 0);
	close(fd);
	struct stat now;
	ck_assert_int_eq(stat(path, &now), 0);
	ck_assert_int_eq(now.st_mtim.tv_nsec, m->parts[0].st.st_mtim.tv_nsec); /* the mtime is back */
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	close_copy(m);
}
END_TEST

START_TEST(test_link_write_utime_unlinked)
{
	/* the same on a file whose name is gone (link count down) */
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN];
	int fd = open(path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(unlink(path), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_OK); /* unlinked alone: contents as they were */
	ck_assert_int_eq(pwrite(fd, "\x33", 1, 0), 1);
	struct timespec ts[2] = {m->parts[0].st.st_atim, m->parts[0].st.st_mtim};
	ck_assert_int_eq(futimens(fd, ts), 0);
	close(fd);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
	close_copy(m);
}
END_TEST

START_TEST(test_no_watch_is_strict)
{
	/* without a watch, a moved ctime is a change even with the link count */
	struct wf_model *m = open_copy();
	char err[WF_ERRLEN], lnk[300];
	wf_watch_free(m->watch);
	m->watch = NULL;
	snprintf(lnk, sizeof lnk, "%s/other", dir);
	ck_assert_int_eq(link(path, lnk), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_ERR_CHANGED);
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
	/* metadata.json: a GGUF's made on read from the file (wf_meta.h) */
	uint32_t mj = wf_tree_lookup(t, 0, "metadata.json", 13);
	ck_assert_uint_ne(mj, WF_NO_NODE);
	char *text;
	size_t tl;
	ck_assert_int_eq(wf_meta_dup(m, &text, &tl, NULL), WF_OK);
	char *mb = malloc(tl + 1);
	ck_assert_int_eq(wf_live_read(&lv, mj, 0, tl + 1, mb, &got), WF_OK);
	ck_assert_uint_eq(got, tl);
	ck_assert_int_eq(memcmp(mb, text, tl), 0);
	/* a change: every read of the part fails, and it is said once */
	ck_assert_int_eq(truncate(path, m->parts[0].st.st_size - 1), 0);
	ck_assert_int_eq(wf_live_read(&lv, mj, 0, tl, mb, &got),
			 m->format == WF_FMT_GGUF ? WF_ERR_CHANGED : WF_OK); /* even from the thread's window */
	free(mb);
	free(text);
	ck_assert_int_eq(wf_live_read_view(&lv, &m->tensors[0], 0, sizeof buf, buf, &got), WF_ERR_CHANGED);
	ck_assert_uint_eq(got, 0);
	/* a safetensors model's header is in memory and stays readable; a
	 * GGUF's is made from its key/values in the file (wf_meta.h), which
	 * changed; the tensor's bytes do not either way */
	ck_assert_int_eq(wf_live_read(&lv, st, 0, 8, buf, &got), m->format == WF_FMT_GGUF ? WF_ERR_CHANGED : WF_OK);
	ck_assert_int_eq(wf_live_read(&lv, st, t->st_header_len + t->st_offsets[0], size, buf, &got), WF_ERR_CHANGED);
	ck_assert_int_eq(wf_live_read(&lv, t->tensor_node[0], 0, sizeof buf, buf, &got), WF_ERR_CHANGED);
	ck_assert_int_eq(notices, 1);
	wf_live_free(&lv);
	wf_tree_free(t);
	close_copy(m);
}
END_TEST


/* ---------------------------------------------------------------- changes at set moments */

/* Writes len bytes to a fresh file `path` in a fresh `dir`. */
static void write_model(const void *bytes, size_t len, const char *name)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *out = fopen(path, "wb");
	ck_assert_ptr_nonnull(out);
	ck_assert_uint_eq(fwrite(bytes, 1, len, out), len);
	ck_assert_int_eq(fclose(out), 0);
}

/* A safetensors file whose header spans many pages: n one-byte tensors. */
static char *big_st(size_t n, size_t *len)
{
	size_t cap = 64 + n * 80, hl = 1;
	char *b = malloc(cap + n);
	ck_assert_ptr_nonnull(b);
	char *h = b + 8;
	h[0] = '{';
	for (size_t i = 0; i < n; i++)
		hl += (size_t)sprintf(h + hl, "%s\"t%zu\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[%zu,%zu]}",
				     i ? "," : "", i, i, i + 1);
	h[hl++] = '}';
	for (int i = 0; i < 8; i++)
		b[i] = (char)((uint64_t)hl >> (8 * i));
	memset(h + hl, 7, n);
	*len = 8 + hl + n;
	return b;
}

static void cut_to_100(int fd)
{
	(void)fd;
	ck_assert_int_eq(truncate(path, 100), 0);
}

static void touch_later(int fd)
{
	struct stat st;
	if ((fcntl(fd, F_GETFL) & O_ACCMODE) == O_RDONLY)
		fd = -1; /* the model's own descriptor: change it by name */
	if (fd < 0) {
		ck_assert_int_eq(stat(path, &st), 0);
		st.st_mtim.tv_sec += 5;
		struct timespec ts[2] = {st.st_atim, st.st_mtim};
		ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
		return;
	}
	ck_assert_int_eq(fstat(fd, &st), 0);
	st.st_mtim.tv_sec += 5;
	struct timespec ts[2] = {st.st_atim, st.st_mtim};
	ck_assert_int_eq(futimens(fd, ts), 0);
}

static void remove_model(void)
{
	unlink(path);
	rmdir(dir);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

START_TEST(test_parse_cut_short)
{
	/* the file loses its header's pages between mapping and parsing: a
	 * refusal, where the parser used to die of SIGBUS */
	size_t len;
	char *b = big_st(2000, &len);
	write_model(b, len, "m.safetensors");
	free(b);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	wf_open_test_hook = cut_to_100;
	enum wf_err rc = wf_open_file(&m, path, err);
	wf_open_test_hook = NULL;
	ck_assert_int_eq(rc, WF_ERR_CHANGED);
	ck_assert_ptr_null(m);
	ck_assert_msg(strstr(err, "cut short while its header was read") != NULL, "%s", err);
	remove_model();
}
END_TEST

START_TEST(test_parse_cut_short_gguf)
{
	/* GGUF: one key whose 20,000-byte string the parser copies */
	size_t vlen = 20000, len = 4 + 4 + 8 + 8 + 8 + 3 + 4 + 8 + vlen;
	uint8_t *b = calloc(1, len), *p = b;
	ck_assert_ptr_nonnull(b);
	memcpy(p, "GGUF", 4), p += 4;
	*p = 3, p += 4;       /* version */
	p += 8;               /* tensors: 0 */
	*p = 1, p += 8;       /* key/values: 1 */
	*p = 3, p += 8;       /* key length */
	memcpy(p, "k.s", 3), p += 3;
	*p = 8, p += 4;       /* string */
	p[0] = (uint8_t)(vlen & 0xff), p[1] = (uint8_t)(vlen >> 8), p += 8;
	memset(p, 'a', vlen);
	write_model(b, len, "m.gguf");
	free(b);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_open_file(&m, path, err), WF_OK); /* whole, it parses */
	wf_model_free(m);
	wf_open_test_hook = cut_to_100;
	enum wf_err rc = wf_open_file(&m, path, err);
	wf_open_test_hook = NULL;
	ck_assert_int_eq(rc, WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "cut short") != NULL, "%s", err);
	remove_model();
}
END_TEST

START_TEST(test_parse_changed)
{
	size_t len;
	char *b = big_st(10, &len);
	write_model(b, len, "m.safetensors");
	free(b);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	wf_open_test_hook = touch_later;
	enum wf_err rc = wf_open_file(&m, path, err);
	wf_open_test_hook = NULL;
	ck_assert_int_eq(rc, WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "changed while its header was read") != NULL, "%s", err);
	remove_model();
}
END_TEST

/* Rewrites the part's file in place in the middle of a read (after its
 * bytes were copied, before the read returns), keeping its size. */
static int hook_calls;
static void rewrite_in_read(const struct wf_live *lv, uint32_t part)
{
	hook_calls++;
	int fd = open(lv->m->parts[part].path, O_WRONLY);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, "\x55", 1, lv->m->parts[part].st.st_size - 1), 1);
	touch_later(fd);
	close(fd);
}

START_TEST(test_change_during_read)
{
	/* The order "copy, then check identity": a change in the middle of a
	 * read fails that read.  Checking before the copy would pass it. */
	struct wf_model *m = open_copy();
	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tree_build(&t, m, err), WF_OK);
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, wf_files_seg, t, count_notice, NULL), WF_OK);
	uint8_t buf[64];
	size_t got;
	hook_calls = 0;
	wf_live_test_hook = rewrite_in_read;
	enum wf_err rc = wf_live_read_view(&lv, &m->tensors[0], 0, sizeof buf, buf, &got);
	wf_live_test_hook = NULL;
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_int_eq(rc, WF_ERR_CHANGED);
	ck_assert_uint_eq(got, 0);
	wf_live_free(&lv);
	wf_tree_free(t);
	close_copy(m);
}
END_TEST

START_TEST(test_change_during_file_read)
{
	/* the same through a file of the tree (wf_live_read) */
	struct wf_model *m = open_copy();
	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_tree_build(&t, m, err), WF_OK);
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, wf_files_seg, t, count_notice, NULL), WF_OK);
	uint8_t buf[64];
	size_t got;
	hook_calls = 0;
	wf_live_test_hook = rewrite_in_read;
	enum wf_err rc = wf_live_read(&lv, t->tensor_node[0], 0, sizeof buf, buf, &got);
	wf_live_test_hook = NULL;
	ck_assert_int_eq(hook_calls, 1);
	ck_assert_int_eq(rc, WF_ERR_CHANGED);
	/* and a read after it fails too, with no hook */
	ck_assert_int_eq(wf_live_read(&lv, t->tensor_node[0], 0, sizeof buf, buf, &got), WF_ERR_CHANGED);
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

/* ------------------------------------------------------ permuted q/k rows */

/* One file, the tensor whose rows xform_piece permutes: a segment that
 * is the whole tensor read through perm_xf. */
static struct wf_xform perm_xf;

static void perm_seg(const void *files, uint32_t file, uint64_t off, struct wf_seg *seg)
{
	(void)files;
	memset(seg, 0, sizeof *seg);
	seg->kind = WF_SEG_NONE;
	if (file != 0 || off >= perm_xf.t->size)
		return;
	seg->kind = WF_SEG_VIEW;
	seg->len = perm_xf.t->size;
	seg->xf = &perm_xf;
}

/* Source row of output row r, written from llama.cpp's permute
 * (reshape(heads, 2, d/2, cols).swapaxes(1, 2)) rather than wf_qk_row. */
static uint64_t perm_src(uint64_t r, uint64_t rows, uint64_t heads, bool to_hf)
{
	uint64_t d = rows / heads, half = d / 2, h = r / d, j = r % d;
	if (!to_hf)
		return h * d + (j % 2) * half + j / 2; /* GGUF row j = 2i + k holds HF row k * half + i */
	return h * d + (j < half ? 2 * j : 2 * (j - half) + 1);
}

/* A safetensors file of one float32 tensor [rows, cols] whose element i
 * is i, opened as a model. */
static struct wf_model *open_rows(uint64_t rows, uint64_t cols)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/model.safetensors", dir);
	char hdr[256];
	uint64_t n = rows * cols;
	int hl = snprintf(hdr, sizeof hdr,
			  "{\"q\":{\"dtype\":\"F32\",\"shape\":[%llu,%llu],\"data_offsets\":[0,%llu]}}",
			  (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)(n * 4));
	while (hl % 8)
		hdr[hl++] = ' ';
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	uint64_t len = (uint64_t)hl;
	uint8_t le[8];
	for (int i = 0; i < 8; i++)
		le[i] = (uint8_t)(len >> (8 * i));
	ck_assert_uint_eq(fwrite(le, 1, 8, f), 8);
	ck_assert_uint_eq(fwrite(hdr, 1, (size_t)hl, f), (size_t)hl);
	for (uint64_t i = 0; i < n; i++) {
		float v = (float)i;
		ck_assert_uint_eq(fwrite(&v, 4, 1, f), 1);
	}
	ck_assert_int_eq(fclose(f), 0);
	struct wf_model *m;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_open_file(&m, path, err), WF_OK);
	ck_assert_uint_eq(m->n_tensors, 1);
	return m;
}

/* Every range kind a reader makes (one byte, cut rows, inside a head,
 * across heads, the whole tensor) of the permuted tensor, in both
 * directions, by pread and through the mapping, against perm_src. */
START_TEST(test_perm_rows)
{
	static const uint64_t shapes[][3] = {
		{64, 8, 4},      /* rows of 32 bytes, heads of 16 rows */
		{48, 100, 3},    /* rows of 400 bytes: 163 to a run */
		{8, 16384, 2},   /* rows of 64 KiB: each row straight to out */
		{256, 96, 1},    /* one head of 256 rows */
	};
	uint64_t rows = shapes[_i][0], cols = shapes[_i][1], heads = shapes[_i][2];
	struct wf_model *m = open_rows(rows, cols);
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, perm_seg, NULL, count_notice, NULL), WF_OK);
	uint64_t rb = cols * 4, size = rows * rb;
	float *want = malloc(size), *got = malloc(size + 64);
	ck_assert_ptr_nonnull(want);
	ck_assert_ptr_nonnull(got);
	unsigned seed = 7;
	for (int to_hf = 0; to_hf < 2; to_hf++) {
		memset(&perm_xf, 0, sizeof perm_xf);
		perm_xf.t = &m->tensors[0];
		perm_xf.perm_heads = heads;
		perm_xf.perm_to_hf = to_hf;
		for (uint64_t r = 0; r < rows; r++)
			for (uint64_t c = 0; c < cols; c++)
				want[r * cols + c] = (float)(perm_src(r, rows, heads, to_hf) * cols + c);
		for (int pr = 0; pr < 2; pr++) {
			wf_live_set_pread(pr);
			for (int k = 0; k < 400; k++) {
				uint64_t off, len;
				if (k == 0) {
					off = 0, len = size;
				} else if (k < 40) { /* from a row or head boundary, give or take */
					uint64_t at = (uint64_t)(rand_r(&seed) % rows) * (k % 2 ? rb : rb * (rows / heads) / 2);
					off = (at % size + (uint64_t)(k % 3) - 1) % size;
					len = (uint64_t)(k % 5 == 0 ? rb * (rows / heads) : rb * (uint64_t)(1 + rand_r(&seed) % 5));
				} else {
					off = (uint64_t)rand_r(&seed) % size;
					len = k % 4 == 0 ? 1 : 1 + (uint64_t)rand_r(&seed) % (size - off + 16);
				}
				size_t g = 0;
				memset(got, 0xa5, size + 64);
				ck_assert_int_eq(wf_live_read(&lv, 0, off, (size_t)len, got, &g), WF_OK);
				uint64_t exp = size - off < len ? size - off : len;
				ck_assert_uint_eq(g, exp);
				ck_assert_msg(memcmp(got, (uint8_t *)want + off, (size_t)exp) == 0,
					      "rows %llu cols %llu heads %llu to_hf %d pread %d: [%llu, +%llu) differs",
					      (unsigned long long)rows, (unsigned long long)cols, (unsigned long long)heads,
					      to_hf, pr, (unsigned long long)off, (unsigned long long)len);
			}
		}
	}
	wf_live_set_pread(1);
	free(want);
	free(got);
	wf_live_free(&lv);
	close_copy(m);
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
	tcase_add_test(tc, test_link_write_utime);
	tcase_add_test(tc, test_link_write_utime_unlinked);
	tcase_add_test(tc, test_no_watch_is_strict);
	tcase_add_test(tc, test_live_reads);
	tcase_add_loop_test(tc, test_perm_rows, 0, 4);
	suite_add_tcase(s, tc);
	tc = tcase_create("moments");
	tcase_add_test(tc, test_parse_cut_short);
	tcase_add_test(tc, test_parse_cut_short_gguf);
	tcase_add_test(tc, test_parse_changed);
	tcase_add_test(tc, test_change_during_read);
	tcase_add_test(tc, test_change_during_file_read);
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
