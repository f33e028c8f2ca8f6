/* check_api.c - unit tests for the public library (weightfs.h) over the
 * ggml oracle (tests/data/ggml-oracle): every tensor in f32 against ggml's
 * output, other dtypes per call, parallel reads at odd ranges, errors. */
#include <check.h>
#include <fcntl.h>
#include <math.h>
#include <pthread.h>
#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "lib/weightfs.h"
#include "codec/wf_round.h"
#include "view/wf_view.h"

#define ORACLE "tests/data/ggml-oracle"

static void *slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	if (!f)
		return NULL;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	void *buf = malloc(n > 0 ? (size_t)n : 1);
	if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
		free(buf);
		buf = NULL;
	}
	fclose(f);
	*len = (size_t)n;
	return buf;
}

static cJSON *manifest(void)
{
	size_t len;
	char *text = slurp(ORACLE "/manifest.json", &len);
	ck_assert_msg(text != NULL, "cannot read " ORACLE "/manifest.json (run from the repo root)");
	cJSON *j = cJSON_ParseWithLength(text, len);
	free(text);
	ck_assert_ptr_nonnull(j);
	return j;
}

static weightfs_model *open_ok(const char *path)
{
	weightfs_model *m;
	char err[256];
	int rc = weightfs_open(path, WEIGHTFS_F32, &m, err, sizeof err);
	ck_assert_msg(rc == WEIGHTFS_OK, "%s: %s", path, err);
	return m;
}

/* Every tensor with expected floats: info matches the manifest, the whole
 * tensor reads bit for bit, f16 per call is the rounding of those floats,
 * and a parallel read of odd pieces gives the same bytes. */
START_TEST(test_oracle_every_tensor)
{
	cJSON *man = manifest();
	const cJSON *t;
	int n = 0;
	cJSON_ArrayForEach(t, cJSON_GetObjectItem(man, "tensors")) {
		const char *file = cJSON_GetObjectItem(t, "file")->valuestring;
		const char *name = cJSON_GetObjectItem(t, "name")->valuestring;
		const cJSON *exp = cJSON_GetObjectItem(t, "expected_f32");
		char path[512];
		snprintf(path, sizeof path, ORACLE "/%s", file);
		weightfs_model *m = open_ok(path);
		int64_t k = weightfs_find(m, name, strlen(name));
		ck_assert_msg(k >= 0, "%s: %s not found", file, name);
		struct weightfs_tensor_info ti;
		char err[256];
		ck_assert_int_eq(weightfs_tensor_info(m, (size_t)k, WEIGHTFS_STORED, &ti, err, sizeof err), 0);
		ck_assert_uint_eq(ti.nbytes, (uint64_t)cJSON_GetObjectItem(t, "nbytes")->valuedouble);
		ck_assert_uint_eq(ti.offset, (uint64_t)cJSON_GetObjectItem(t, "file_offset")->valuedouble);
		ck_assert_str_eq(ti.file, file);
		if (!cJSON_IsString(exp)) {
			weightfs_close(m);
			continue;
		}
		ck_assert_int_eq(weightfs_tensor_info(m, (size_t)k, WEIGHTFS_DEFAULT, &ti, err, sizeof err), 0);
		ck_assert_str_eq(ti.name, name);
		ck_assert_str_eq(ti.dtype, "float32");
		ck_assert(ti.readable);
		const cJSON *ne = cJSON_GetObjectItem(t, "ne");
		int nd = cJSON_GetObjectItem(t, "n_dims")->valueint;
		ck_assert_uint_eq(ti.ndim, (uint32_t)nd);
		for (int d = 0; d < nd; d++)
			ck_assert_uint_eq(ti.shape[d], (uint64_t)cJSON_GetArrayItem(ne, nd - 1 - d)->valuedouble);

		snprintf(path, sizeof path, ORACLE "/%s", exp->valuestring);
		size_t elen;
		float *want = slurp(path, &elen);
		ck_assert_ptr_nonnull(want);
		ck_assert_uint_eq(ti.size, elen);
		uint8_t *got = malloc(elen + 8);
		size_t n_got;
		ck_assert_int_eq(weightfs_read(m, (size_t)k, WEIGHTFS_DEFAULT, 0, elen + 8, got, &n_got, err, sizeof err),
				 0);
		ck_assert_uint_eq(n_got, elen);
		ck_assert_msg(memcmp(got, want, elen) == 0, "%s %s: f32 differs", file, name);

		/* odd pieces, in parallel, land where they belong */
		memset(got, 0xAB, elen);
		uint64_t off = elen > 7 ? 7 : 0;
		ck_assert_int_eq(weightfs_read_parallel(m, (size_t)k, WEIGHTFS_F32, off, elen, got + off, &n_got, 3, err,
							sizeof err), 0);
		ck_assert_uint_eq(n_got, elen - off);
		ck_assert(memcmp(got + off, (uint8_t *)want + off, elen - off) == 0);

		/* f16 per call, from the same model */
		size_t ne_ = elen / 4;
		uint16_t *h = malloc(ne_ * 2 + 2), *hw = malloc(ne_ * 2 + 2);
		wf_f32_to_f16_n(want, hw, ne_);
		ck_assert_int_eq(weightfs_read(m, (size_t)k, WEIGHTFS_F16, 0, ne_ * 2, h, &n_got, err, sizeof err), 0);
		ck_assert_uint_eq(n_got, ne_ * 2);
		ck_assert_msg(memcmp(h, hw, ne_ * 2) == 0, "%s %s: f16 differs", file, name);
		free(h);
		free(hw);
		free(got);
		free(want);
		weightfs_close(m);
		n++;
	}
	ck_assert_int_ge(n, 150);
	cJSON_Delete(man);
}
END_TEST

/* A 2-part split, opened by its second part. */
START_TEST(test_split)
{
	weightfs_model *m = open_ok(ORACLE "/split_llama-00002-of-00002.gguf");
	ck_assert_uint_eq(weightfs_n_tensors(m), 13);
	const char *name = "token_embd.weight";
	int64_t k = weightfs_find(m, name, strlen(name));
	ck_assert_int_ge(k, 0);
	struct weightfs_tensor_info ti;
	ck_assert_int_eq(weightfs_tensor_info(m, (size_t)k, WEIGHTFS_DEFAULT, &ti, NULL, 0), 0);
	ck_assert_str_eq(ti.file, "split_llama-00001-of-00002.gguf");
	size_t len;
	const char *meta = weightfs_metadata_json(m, &len);
	cJSON *j = cJSON_ParseWithLength(meta, len);
	ck_assert(cJSON_IsObject(j));
	ck_assert_str_eq(cJSON_GetObjectItem(j, "general.architecture")->valuestring, "llama");
	cJSON_Delete(j);
	weightfs_close(m);
}
END_TEST

START_TEST(test_ranges_and_dtypes)
{
	weightfs_model *m;
	char err[256];
	ck_assert_int_eq(weightfs_open(ORACLE "/type_q4_K.gguf", WEIGHTFS_BF16, &m, err, sizeof err), 0);
	struct weightfs_tensor_info ti;
	int64_t k = weightfs_find(m, "q4_K.mat", 8);
	ck_assert_int_ge(k, 0);
	ck_assert_int_eq(weightfs_find(m, "q4_K.mat", 7), -1);
	ck_assert_int_eq(weightfs_find(m, "nope", 4), -1);
	ck_assert_int_eq(weightfs_tensor_info(m, (size_t)k, WEIGHTFS_DEFAULT, &ti, err, sizeof err), 0);
	ck_assert_str_eq(ti.dtype, "bfloat16");
	ck_assert_uint_eq(ti.elem_size, 2);
	ck_assert_uint_eq(ti.size, ti.nelems * 2);
	uint64_t rows = ti.shape[0], cols = ti.shape[1];
	ck_assert_int_eq(weightfs_tensor_info(m, (size_t)k, WEIGHTFS_STORED, &ti, err, sizeof err), 0);
	ck_assert_str_eq(ti.dtype, "uint8");
	ck_assert_str_eq(ti.type, "Q4_K");
	ck_assert_uint_eq(ti.shape[0], rows);
	ck_assert_uint_eq(ti.shape[1], cols / 256 * 144);
	ck_assert_uint_eq(ti.size, ti.nbytes);
	uint8_t buf[64];
	size_t got = 99;
	/* at and past the end: nothing, and no error */
	ck_assert_int_eq(weightfs_read(m, (size_t)k, WEIGHTFS_STORED, ti.size, 16, buf, &got, err, sizeof err), 0);
	ck_assert_uint_eq(got, 0);
	ck_assert_int_eq(weightfs_read(m, (size_t)k, WEIGHTFS_STORED, ti.size - 5, 16, buf, &got, err, sizeof err), 0);
	ck_assert_uint_eq(got, 5);
	ck_assert_int_eq(weightfs_read_parallel(m, (size_t)k, WEIGHTFS_STORED, UINT64_MAX, 16, buf, &got, 2, err,
						sizeof err), 0);
	ck_assert_uint_eq(got, 0);
	ck_assert_int_eq(weightfs_dtype_parse("bf16"), WEIGHTFS_BF16);
	ck_assert_int_eq(weightfs_dtype_parse("float16"), WEIGHTFS_F16);
	ck_assert_int_eq(weightfs_dtype_parse("f64"), -1);
	ck_assert_str_eq(weightfs_version(), WEIGHTFS_VERSION);
	weightfs_close(m);
}
END_TEST

/* IEEE half to float by its definition (no NaN/inf in the oracle's d). */
static float half_to_float(uint16_t h)
{
	int e = (h >> 10) & 31, m = h & 1023;
	float v = e ? ldexpf((float)(1024 + m), e - 25) : ldexpf((float)m, -24);
	return (h & 0x8000) ? -v : v;
}

START_TEST(test_errors)
{
	weightfs_model *m = (weightfs_model *)1;
	char err[256] = "";
	ck_assert_int_eq(weightfs_open("/nonexistent/x.gguf", WEIGHTFS_F32, &m, err, sizeof err), WEIGHTFS_EIO);
	ck_assert_ptr_null(m);
	ck_assert_msg(strncmp(err, "/nonexistent/x.gguf: ", 21) == 0 && !strchr(err, '\n'), "%s", err);
	ck_assert_int_eq(weightfs_open(ORACLE "/type_q4_0.gguf", 9, &m, err, sizeof err), WEIGHTFS_EINVAL);
	ck_assert_int_eq(weightfs_open("tests/malformed/gguf_bad_magic.gguf", WEIGHTFS_F32, &m, err, sizeof err),
			 WEIGHTFS_EFORMAT);
	ck_assert_msg(strstr(err, "bad magic") != NULL, "%s", err);
	/* a short buffer still gets a terminated prefix */
	char tiny[8];
	ck_assert_int_eq(weightfs_open("/nonexistent", WEIGHTFS_F32, &m, tiny, sizeof tiny), WEIGHTFS_EIO);
	ck_assert_uint_eq(strlen(tiny), 7);

	m = open_ok(ORACLE "/no_to_float.gguf");
	struct weightfs_tensor_info ti;
	size_t n = weightfs_n_tensors(m), got;
	ck_assert_int_eq(weightfs_tensor_info(m, n, WEIGHTFS_F32, &ti, err, sizeof err), WEIGHTFS_EINVAL);
	ck_assert_int_eq(weightfs_tensor_info(m, 0, 7, &ti, err, sizeof err), WEIGHTFS_EINVAL);
	uint8_t buf[16];
	ck_assert_int_eq(weightfs_read(m, n, WEIGHTFS_F32, 0, 4, buf, &got, err, sizeof err), WEIGHTFS_EINVAL);
	int found = 0;
	for (size_t i = 0; i < n; i++) {
		ck_assert_int_eq(weightfs_tensor_info(m, i, WEIGHTFS_F32, &ti, err, sizeof err), 0);
		if (strcmp(ti.type, "Q8_1") != 0)
			continue;
		found = 1;
		/* Q8_1 decodes: qs[0] * d of the first block, as its bytes say */
		ck_assert(ti.readable);
		uint8_t raw[36];
		ck_assert_int_eq(weightfs_read(m, i, WEIGHTFS_STORED, 0, 36, raw, &got, err, sizeof err), 0);
		ck_assert_uint_eq(got, 36);
		ck_assert_int_eq(weightfs_read(m, i, WEIGHTFS_F32, 4, 4, buf, &got, err, sizeof err), 0);
		ck_assert_uint_eq(got, 4);
		float want = (float)(int8_t)raw[5] * half_to_float((uint16_t)(raw[0] | raw[1] << 8)), have;
		memcpy(&have, buf, 4);
		ck_assert(memcmp(&have, &want, 4) == 0);
	}
	ck_assert(found);
	weightfs_close(m);
	weightfs_close(NULL);
}
END_TEST

/* A file whose modification time moves is no longer the model opened. */
START_TEST(test_changed)
{
	char dir[] = "/tmp/wf-check-api-XXXXXX", path[256];
	ck_assert_ptr_nonnull(mkdtemp(dir));
	snprintf(path, sizeof path, "%s/m.gguf", dir);
	size_t len;
	void *data = slurp(ORACLE "/type_q8_0.gguf", &len);
	FILE *f = fopen(path, "wb");
	ck_assert(data && f && fwrite(data, 1, len, f) == len);
	ck_assert_int_eq(fclose(f), 0);
	free(data);
	weightfs_model *m = open_ok(path);
	float buf[64];
	size_t got;
	char err[256];
	ck_assert_int_eq(weightfs_read(m, 0, WEIGHTFS_F32, 0, sizeof buf, buf, &got, err, sizeof err), 0);
	struct stat st;
	ck_assert_int_eq(stat(path, &st), 0);
	struct timespec ts[2] = {st.st_atim, {st.st_mtim.tv_sec + 1, st.st_mtim.tv_nsec}};
	ck_assert_int_eq(utimensat(AT_FDCWD, path, ts, 0), 0);
	ck_assert_int_eq(weightfs_read(m, 0, WEIGHTFS_F32, 0, sizeof buf, buf, &got, err, sizeof err),
			 WEIGHTFS_ECHANGED);
	ck_assert_uint_eq(got, 0);
	ck_assert_msg(strstr(err, "changed") != NULL, "%s", err);
	weightfs_close(m);
	unlink(path);
	rmdir(dir);
}
END_TEST

/* Threads asking for the hf/ view at once, in the same dtype each round
 * and another dtype the next (as the Python module lets them): the view
 * is made or remade once, never twice or freed twice, and every answer is
 * the size of that dtype's model.safetensors. */
struct hf_round {
	weightfs_model *m;
	pthread_barrier_t *bar;
	uint64_t want[3];
	int bad;
};

static const int hf_dt[3] = {WEIGHTFS_F32, WEIGHTFS_F16, WEIGHTFS_BF16};

static void *hf_asker(void *arg)
{
	struct hf_round *r = arg;
	for (int i = 0; i < 60; i++) {
		pthread_barrier_wait(r->bar);
		uint64_t size = 0;
		char err[256];
		if (weightfs_hf_size(r->m, hf_dt[i % 3], WEIGHTFS_HF_SAFETENSORS, &size, err, sizeof err) != WEIGHTFS_OK ||
		    size != r->want[i % 3])
			__atomic_add_fetch(&r->bad, 1, __ATOMIC_RELAXED);
		pthread_barrier_wait(r->bar);
	}
	return NULL;
}

START_TEST(test_hf_size_from_threads)
{
	const char *path = "tests/data/demo/demo-llama.gguf";
	struct hf_round r = {0};
	char err[256];
	for (int d = 0; d < 3; d++) {
		weightfs_model *one = open_ok(path);
		ck_assert_msg(weightfs_hf_size(one, hf_dt[d], WEIGHTFS_HF_SAFETENSORS, &r.want[d], err, sizeof err) ==
				      WEIGHTFS_OK, "%s", err);
		weightfs_close(one);
	}
	ck_assert(r.want[0] > r.want[1]);
	enum { N = 6 };
	pthread_barrier_t bar;
	pthread_barrier_init(&bar, NULL, N);
	r.m = open_ok(path);
	r.bar = &bar;
	pthread_t th[N];
	for (int k = 0; k < N; k++)
		ck_assert_int_eq(pthread_create(&th[k], NULL, hf_asker, &r), 0);
	for (int k = 0; k < N; k++)
		pthread_join(th[k], NULL);
	pthread_barrier_destroy(&bar);
	weightfs_close(r.m);
	ck_assert_int_eq(r.bad, 0);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("api");
	TCase *tc = tcase_create("api");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_oracle_every_tensor);
	tcase_add_test(tc, test_split);
	tcase_add_test(tc, test_ranges_and_dtypes);
	tcase_add_test(tc, test_errors);
	tcase_add_test(tc, test_changed);
	tcase_add_test(tc, test_hf_size_from_threads);
	suite_add_tcase(s, tc);
	SRunner *sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
