/* check_maps.c - unit tests for wf_maps.c: a set of more parts than live
 * mappings, each part mapped on first read from a bounded pool.
 *
 * The pool is forced small (WF_MAX_MAPS) so a set of a few dozen shards
 * takes the path a set of 100,000 takes under the default.  Threads read
 * random ranges of random tensors and check every byte; parts replaced,
 * rewritten or truncated on disk must fail the read, never give other
 * bytes; and sets over the part limit are refused before a file is opened.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/wf_buf.h"
#include "base/wf_unmap.h"
#include "model/wf_maps.h"
#include "model/wf_model.h"
#include "model/wf_set.h"
#include "model/wf_watch.h"
#include "view/wf_live.h"

static char tmp[256];

static void tmp_make(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/wf-check-maps-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void tmp_remove(void)
{
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

static const char *at(const char *rel)
{
	static char ring[4][512];
	static int k;
	char *p = ring[k++ % 4];
	snprintf(p, sizeof ring[0], "%s/%s", tmp, rel);
	return p;
}

static void write_bytes(const char *path, const void *data, size_t len)
{
	FILE *f = fopen(path, "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

/* Shard s holds two float32 tensors: "t.S.a" of (s % 7 + 1) * 300 values
 * and "t.S.b" of 5; value k of tensor j of shard s is s * 1e5 + j * 1e4 + k. */
#define NSHARD 48
static uint64_t n_of(int s, int j)
{
	return j == 0 ? (uint64_t)(s % 7 + 1) * 300 : 5;
}

static float value(int s, int j, uint64_t k)
{
	return (float)s * 1e5f + (float)j * 1e4f + (float)k;
}

static void shard_name(char *out, size_t n, int s, int of)
{
	snprintf(out, n, "model-%05d-of-%05d.safetensors", s + 1, of);
}

/* Shard s's bytes, with every value plus `delta`. */
static void shard_bytes(struct wf_buf *b, int s, float delta)
{
	struct wf_buf h = {0};
	uint64_t na = n_of(s, 0), nb = n_of(s, 1);
	wf_buf_printf(&h, "{\"t.%d.a\":{\"dtype\":\"F32\",\"shape\":[%" PRIu64 "],\"data_offsets\":[0,%" PRIu64 "]},"
		      "\"t.%d.b\":{\"dtype\":\"F32\",\"shape\":[%" PRIu64 "],\"data_offsets\":[%" PRIu64 ",%" PRIu64 "]}}",
		      s, na, 4 * na, s, nb, 4 * na, 4 * (na + nb));
	uint64_t len = h.len;
	for (int i = 0; i < 8; i++)
		wf_buf_putc(b, (char)(len >> (8 * i)));
	wf_buf_put(b, h.data, h.len);
	for (int j = 0; j < 2; j++)
		for (uint64_t k = 0; k < n_of(s, j); k++) {
			float v = value(s, j, k) + delta;
			wf_buf_put(b, &v, 4);
		}
	wf_buf_free(&h);
	ck_assert(!b->oom);
}

static void write_set(int n)
{
	struct wf_buf ix = {0};
	wf_buf_puts(&ix, "{\"weight_map\":{");
	for (int s = 0; s < n; s++) {
		char name[64];
		shard_name(name, sizeof name, s, n);
		struct wf_buf b = {0};
		shard_bytes(&b, s, 0);
		write_bytes(at(name), b.data, b.len);
		wf_buf_free(&b);
		wf_buf_printf(&ix, "%s\"t.%d.a\":\"%s\",\"t.%d.b\":\"%s\"", s ? "," : "", s, name, s, name);
	}
	wf_buf_puts(&ix, "}}");
	ck_assert(!ix.oom);
	write_bytes(at("model.safetensors.index.json"), ix.data, ix.len);
	wf_buf_free(&ix);
}

static struct wf_model *open_set(const char *cap)
{
	char err[WF_ERRLEN] = "";
	struct wf_model *m = NULL;
	setenv("WF_MAX_MAPS", cap, 1);
	enum wf_err rc = wf_set_open(&m, tmp, err);
	unsetenv("WF_MAX_MAPS");
	ck_assert_msg(rc == WF_OK, "%s", err);
	return m;
}

/* Tensor "t.S.J" of m, by shard and index. */
static const struct wf_tensor *tensor_of(const struct wf_model *m, int s, int j)
{
	char name[32];
	snprintf(name, sizeof name, "t.%d.%c", s, j ? 'b' : 'a');
	for (size_t i = 0; i < m->n_tensors; i++)
		if (strcmp(m->tensors[i].name, name) == 0)
			return &m->tensors[i];
	ck_abort_msg("no tensor %s", name);
	return NULL;
}

/* Whether bytes [off, off+len) of tensor (s, j) read as they should. */
static bool bytes_ok(const uint8_t *got, int s, int j, uint64_t off, size_t len)
{
	for (size_t i = 0; i < len; i++) {
		uint64_t at_byte = off + i;
		float v = value(s, j, at_byte / 4);
		if (got[i] != ((const uint8_t *)&v)[at_byte % 4])
			return false;
	}
	return true;
}

/* A model of at most cap parts keeps every part mapped, with no pool:
 * reads go as they always went. */
START_TEST(test_small_set_unpooled)
{
	tmp_make();
	write_set(4);
	struct wf_model *m = open_set("4");
	ck_assert_ptr_null(m->maps);
	for (uint32_t i = 0; i < m->n_parts; i++)
		ck_assert_ptr_nonnull(m->parts[i].data);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

struct reader {
	struct wf_live *lv;
	unsigned seed;
	int bad, reads;
	uint32_t most_live;
};

static void *read_random(void *arg)
{
	struct reader *r = arg;
	const struct wf_model *m = r->lv->m;
	uint8_t buf[4096];
	for (int i = 0; i < 1500; i++) {
		int s = (int)(rand_r(&r->seed) % NSHARD), j = (int)(rand_r(&r->seed) % 2);
		const struct wf_tensor *t = tensor_of(m, s, j);
		uint64_t off = rand_r(&r->seed) % t->size;
		size_t len = 1 + rand_r(&r->seed) % sizeof buf, got = 0;
		if (wf_live_read_view(r->lv, t, off, len, buf, &got) != WF_OK ||
		    got != (off + len > t->size ? t->size - off : len) || !bytes_ok(buf, s, j, off, got))
			r->bad++;
		uint32_t live = wf_maps_live(m->maps);
		if (live > r->most_live)
			r->most_live = live;
		r->reads++;
	}
	return NULL;
}

/* Count of this process's mappings of files in tmp. */
static int maps_of_tmp(void)
{
	FILE *f = fopen("/proc/self/maps", "r");
	ck_assert_ptr_nonnull(f);
	char line[1024];
	int n = 0;
	while (fgets(line, sizeof line, f))
		n += strstr(line, tmp) != NULL;
	fclose(f);
	return n;
}

/* Descriptors open in this process. */
static unsigned count_fds(void)
{
	unsigned n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* 48 shards, a pool of 4, 8 threads reading random ranges of random
 * tensors: every byte right, never more than 4 idle mappings plus one per
 * reading thread, and 4 at most once they are done. */
START_TEST(test_pool_threads)
{
	tmp_make();
	write_set(NSHARD);
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	/* a set keeps half of what the limit leaves free: parts 0..19 keep
	 * their descriptor; 20.. are opened again by path */
	rl.rlim_cur = 40 + count_fds();
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct wf_model *m = open_set("4");
	ck_assert_ptr_nonnull(m->maps);
	ck_assert(m->parts[19].fd >= 0 && m->parts[20].fd < 0);
	for (uint32_t i = 0; i < m->n_parts; i++)
		ck_assert_ptr_null(m->parts[i].data);
	ck_assert_int_eq(maps_of_tmp(), 0); /* nothing mapped once the headers are parsed */
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, NULL, NULL, NULL, NULL), WF_OK);
	enum { NT = 8 };
	pthread_t th[NT];
	struct reader r[NT];
	for (int i = 0; i < NT; i++) {
		r[i] = (struct reader){.lv = &lv, .seed = 1234u + (unsigned)i};
		ck_assert_int_eq(pthread_create(&th[i], NULL, read_random, &r[i]), 0);
	}
	uint32_t most = 0;
	for (int i = 0; i < NT; i++) {
		pthread_join(th[i], NULL);
		ck_assert_int_eq(r[i].bad, 0);
		ck_assert_int_eq(r[i].reads, 1500);
		most = r[i].most_live > most ? r[i].most_live : most;
	}
	ck_assert_uint_le(most, 4 + NT);
	ck_assert_uint_ge(most, 1);
	ck_assert_uint_le(wf_maps_live(m->maps), 4);
	ck_assert_int_le(maps_of_tmp(), 4);
	/* every part readable in turn, 12 times round the pool */
	for (int s = 0; s < NSHARD; s++) {
		uint8_t buf[20];
		size_t got;
		const struct wf_tensor *t = tensor_of(m, s, 1);
		ck_assert_int_eq(wf_live_read_view(&lv, t, 0, sizeof buf, buf, &got), WF_OK);
		ck_assert(got == 20 && bytes_ok(buf, s, 1, 0, 20));
	}
	ck_assert_uint_le(wf_maps_live(m->maps), 4);
	wf_live_free(&lv);
	wf_model_free(m);
	ck_assert_int_eq(maps_of_tmp(), 0);
	tmp_remove();
}
END_TEST

static int notices;
static void count_notice(void *ctx, const char *part, const char *why)
{
	(void)ctx, (void)part, (void)why;
	notices++;
}

/* Reads tensor (s, 0) whole: WF_OK with the right bytes, or an error;
 * never other bytes. */
static enum wf_err read_whole(struct wf_live *lv, int s)
{
	const struct wf_tensor *t = tensor_of(lv->m, s, 0);
	uint8_t *buf = malloc(t->size);
	size_t got = 0;
	ck_assert_ptr_nonnull(buf);
	enum wf_err rc = wf_live_read_view(lv, t, 0, t->size, buf, &got);
	if (rc == WF_OK)
		ck_assert(got == t->size && bytes_ok(buf, s, 0, 0, got));
	free(buf);
	return rc;
}

/* Shard s of a set of n rewritten with values + delta: by rename, or in
 * place with its times set back. */
static void rewrite(int s, int n, float delta, bool by_rename)
{
	char name[64], tmpname[80];
	struct wf_buf b = {0};
	shard_bytes(&b, s, delta);
	shard_name(name, sizeof name, s, n);
	if (by_rename) {
		snprintf(tmpname, sizeof tmpname, "%s.new", name);
		write_bytes(at(tmpname), b.data, b.len);
		ck_assert_int_eq(rename(at(tmpname), at(name)), 0);
	} else {
		struct stat st;
		ck_assert_int_eq(stat(at(name), &st), 0);
		int fd = open(at(name), O_WRONLY);
		ck_assert_int_ge(fd, 0);
		ck_assert_int_eq(pwrite(fd, b.data, b.len, 0), (ssize_t)b.len);
		struct timespec times[2] = {st.st_atim, st.st_mtim};
		ck_assert_int_eq(futimens(fd, times), 0);
		close(fd);
	}
	wf_buf_free(&b);
}

/* Parts changed on disk, with a descriptor or without (closed for want of
 * descriptors: mapped again through the path), mapped in the pool (idle)
 * or not: a part without a descriptor that was replaced by rename,
 * rewritten in place with its mtime set back, truncated or removed fails
 * its reads, and says so once; one with a descriptor rewritten in place
 * too, while one replaced by rename or removed is still the file opened
 * and reads as it was.  The others read on. */
START_TEST(test_pool_changed_parts)
{
	enum { N = 16 };
	tmp_make();
	write_set(N);
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 20 + count_fds(); /* 10 descriptors for parts: 0..9 keep theirs */
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct wf_model *m = open_set("2");
	ck_assert_ptr_nonnull(m->maps);
	ck_assert(m->parts[9].fd >= 0 && m->parts[10].fd < 0);
	/* watches only where a descriptor is kept: found by its path a part
	 * has a link, and the strict rule sees every write */
	bool modified;
	ck_assert(wf_watch_part(m->watch, 9, &modified));
	ck_assert(!wf_watch_part(m->watch, 10, &modified));
	struct wf_live lv;
	notices = 0;
	ck_assert_int_eq(wf_live_init(&lv, m, NULL, NULL, count_notice, NULL), WF_OK);
	for (int s = 0; s < N; s++)
		ck_assert_int_eq(read_whole(&lv, s), WF_OK);
	ck_assert_uint_eq(wf_maps_live(m->maps), 2); /* 14 and 15 */
	rewrite(11, N, 0.25f, true);
	rewrite(12, N, 0.5f, false);
	char name[64];
	shard_name(name, sizeof name, 15, N);
	ck_assert_int_eq(truncate(at(name), 100), 0);
	shard_name(name, sizeof name, 13, N);
	ck_assert_int_eq(unlink(at(name)), 0);
	rewrite(3, N, 0.75f, false);
	rewrite(2, N, 1.0f, true);
	shard_name(name, sizeof name, 7, N);
	ck_assert_int_eq(unlink(at(name)), 0);
	static const int gone[] = {11, 12, 15, 13, 3};
	for (int k = 0; k < 2; k++) /* and every later read */
		for (size_t i = 0; i < sizeof gone / sizeof *gone; i++)
			ck_assert_msg(read_whole(&lv, gone[i]) == WF_ERR_CHANGED, "part %d", gone[i]);
	ck_assert_int_eq(notices, 5);
	for (int s = 0; s < N; s++)
		if (s != 11 && s != 12 && s != 15 && s != 13 && s != 3)
			ck_assert_msg(read_whole(&lv, s) == WF_OK, "part %d", s);
	ck_assert_uint_le(wf_maps_live(m->maps), 2);
	wf_live_free(&lv);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* The file changes between the copy and the check (test hook): the read
 * fails, for a pooled part too. */
static void grow_part(const struct wf_live *lv, uint32_t part)
{
	int fd = open(lv->m->parts[part].path, O_WRONLY | O_APPEND);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "x", 1), 1);
	close(fd);
}

START_TEST(test_pool_change_mid_read)
{
	tmp_make();
	write_set(6);
	struct wf_model *m = open_set("2");
	struct wf_live lv;
	ck_assert_int_eq(wf_live_init(&lv, m, NULL, NULL, NULL, NULL), WF_OK);
	ck_assert_int_eq(read_whole(&lv, 4), WF_OK);
	wf_live_test_hook = grow_part;
	ck_assert_int_eq(read_whole(&lv, 4), WF_ERR_CHANGED);
	ck_assert_int_eq(read_whole(&lv, 2), WF_ERR_CHANGED);
	wf_live_test_hook = NULL;
	ck_assert_int_eq(read_whole(&lv, 1), WF_OK);
	ck_assert_int_eq(read_whole(&lv, 4), WF_ERR_CHANGED);
	wf_live_free(&lv);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* Whether page i of base is mapped (mincore fails with ENOMEM where not). */
static bool page_mapped(uint8_t *base, size_t page, int i)
{
	unsigned char v;
	return mincore(base + (size_t)i * page, page, &v) == 0;
}

/* wf_unmap: mappings given up out of order join into runs, a mapping that
 * closes the gap between two runs makes them one, and only what was added
 * is unmapped: neighbours left out stay mapped with their bytes. */
START_TEST(test_unmap_runs)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	/* eight one-page "mappings" side by side: one reservation, cut */
	uint8_t *base = mmap(NULL, 8 * page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	memset(base, 7, 8 * page);
	struct wf_unmap u = {.max = 8};
	static const int order[] = {2, 0, 5, 1, 6, 4}; /* 3 and 7 are kept */
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++)
		ck_assert(!wf_unmap_add(&u, base + (size_t)order[i] * page, page - 100)); /* lengths round up */
	ck_assert_uint_eq(u.n_run, 2); /* pages 0-2 and 4-6 */
	ck_assert_uint_eq(u.n, 6);
	wf_unmap_flush(&u);
	ck_assert_uint_eq(u.n_run, 0);
	ck_assert_uint_eq(u.n, 0);
	ck_assert_uint_eq(u.max, 8);
	for (int i = 0; i < 8; i++)
		ck_assert_int_eq(page_mapped(base, page, i), i == 3 || i == 7);
	ck_assert_int_eq(base[3 * page], 7);
	ck_assert_int_eq(base[8 * page - 1], 7);
	munmap(base + 3 * page, page);
	munmap(base + 7 * page, page);
}
END_TEST

/* A batch is full at max mappings, and when every run is taken. */
START_TEST(test_unmap_full)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	const int n = 2 * WF_UNMAP_RUNS + 8, last = 4 + 2 * (WF_UNMAP_RUNS - 1);
	uint8_t *base = mmap(NULL, (size_t)n * page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	ck_assert_ptr_ne(base, MAP_FAILED);
	struct wf_unmap u = {.max = 3};
	ck_assert(!wf_unmap_add(&u, base, page));
	ck_assert(!wf_unmap_add(&u, base + page, page)); /* one run, two mappings */
	ck_assert(wf_unmap_add(&u, base + 2 * page, page));
	wf_unmap_flush(&u);
	/* pages 4, 6, ..., last: separate runs, full at the last one */
	u.max = 0;
	for (int i = 4; i <= last; i += 2)
		ck_assert_int_eq(wf_unmap_add(&u, base + (size_t)i * page, page), i == last);
	ck_assert_uint_eq(u.n_run, WF_UNMAP_RUNS);
	wf_unmap_flush(&u);
	for (int i = 0; i < n; i++)
		ck_assert_msg(page_mapped(base, page, i) == (i == 3 || (i > 3 && (i % 2 == 1 || i > last))), "page %d", i);
	munmap(base, (size_t)n * page);
}
END_TEST

/* Sets over the part limit are refused by name, before any file is
 * opened: the files named here are not even models. */
START_TEST(test_over_limit_refused_unopened)
{
	static const char *const names[] = {"m-00001-of-150000.gguf", "m-00001-of-150000.safetensors"};
	for (size_t i = 0; i < 2; i++) {
		char err[WF_ERRLEN] = "";
		struct wf_model *m = NULL;
		tmp_make();
		write_bytes(at(names[i]), "not a model at all", 18);
		write_bytes(at("config.json"), "{}", 2);
		/* the folder, and for the GGUF the file itself */
		for (int how = 0; how < (i == 0 ? 2 : 1); how++) {
			enum wf_err rc = wf_set_open(&m, how ? at(names[i]) : tmp, err);
			ck_assert_int_eq(rc, WF_ERR_UNSUP);
			ck_assert_ptr_null(m);
			ck_assert_msg(strstr(err, names[i]) && strstr(err, "150000") && strstr(err, "100000"), "%s", err);
		}
		tmp_remove();
	}
}
END_TEST

static Suite *maps_suite(void)
{
	Suite *s = suite_create("maps");
	TCase *tc = tcase_create("pool");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_small_set_unpooled);
	tcase_add_test(tc, test_pool_threads);
	tcase_add_test(tc, test_pool_changed_parts);
	tcase_add_test(tc, test_pool_change_mid_read);
	tcase_add_test(tc, test_over_limit_refused_unopened);
	tcase_add_test(tc, test_unmap_runs);
	tcase_add_test(tc, test_unmap_full);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(maps_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
