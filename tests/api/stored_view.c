/* stored_view.c - WEIGHTFS_STORED on a model opened decoded, through the
 * shared library and its public header only (make api-check).
 *
 * For three small quantized checkpoints written here (DeepSeek FP8 with a
 * plain F16 tensor beside it, GPTQ v1, bitsandbytes 8-bit with no config)
 * it holds the library to weightfs.h's promise: every name the model
 * stores (as a model opened with WEIGHTFS_STORED lists it) is found in the
 * model opened decoded, and reads there with WEIGHTFS_STORED as the same
 * bytes, the bytes of the file; the hidden parts sit at indices from
 * weightfs_n_tensors on and read in every dtype; a GPTQ layer, which is no
 * stored tensor, refuses WEIGHTFS_STORED with one line naming its parts.
 *
 *   stored_view            (exit 0 when every check passed)
 */
#include <weightfs.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int failures;

#define CHECK(cond, ...)                                                                 \
	do {                                                                             \
		if (!(cond)) {                                                           \
			fprintf(stderr, "api-check: stored_view: %s:%d: ", __FILE__, __LINE__); \
			fprintf(stderr, __VA_ARGS__);                                    \
			fputc('\n', stderr);                                             \
			failures++;                                                      \
		}                                                                        \
	} while (0)

static uint32_t rng = 12345;

static uint8_t rnd8(void)
{
	rng = rng * 1103515245u + 12345u;
	return (uint8_t)(rng >> 16);
}

/* One tensor of a safetensors file to write. */
struct st_tensor {
	const char *name, *dtype;
	uint64_t shape[2];
	int ndim;
	uint8_t *data;
	size_t len;
};

static void write_file(const char *dir, const char *name, const void *data, size_t len)
{
	char path[512];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(data, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "api-check: stored_view: cannot write %s\n", path);
		exit(1);
	}
}

static void write_st(const char *dir, const char *name, const struct st_tensor *t, int n)
{
	char hdr[4096];
	size_t hl = 0, off = 0;
	hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "{");
	for (int k = 0; k < n; k++) {
		hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "%s\"%s\":{\"dtype\":\"%s\",\"shape\":[", k ? "," : "",
				       t[k].name, t[k].dtype);
		for (int d = 0; d < t[k].ndim; d++)
			hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, d ? ",%" PRIu64 : "%" PRIu64, t[k].shape[d]);
		hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "],\"data_offsets\":[%zu,%zu]}", off, off + t[k].len);
		off += t[k].len;
	}
	hl += (size_t)snprintf(hdr + hl, sizeof hdr - hl, "}");
	while (hl % 8)
		hdr[hl++] = ' ';
	size_t total = 8 + hl + off;
	uint8_t *buf = malloc(total);
	if (!buf)
		exit(1);
	for (int b = 0; b < 8; b++)
		buf[b] = (uint8_t)((uint64_t)hl >> (8 * b));
	memcpy(buf + 8, hdr, hl);
	size_t at = 8 + hl;
	for (int k = 0; k < n; k++) {
		memcpy(buf + at, t[k].data, t[k].len);
		at += t[k].len;
	}
	write_file(dir, name, buf, total);
	free(buf);
}

static uint8_t *random_bytes(size_t n)
{
	uint8_t *p = malloc(n ? n : 1);
	if (!p)
		exit(1);
	for (size_t i = 0; i < n; i++)
		p[i] = rnd8();
	return p;
}

static void *read_all(weightfs_model *m, size_t i, int dtype, size_t *len, int *rc, char *err, size_t errlen)
{
	struct weightfs_tensor_info ti;
	*rc = weightfs_tensor_info(m, i, dtype, &ti, err, errlen);
	if (*rc != WEIGHTFS_OK)
		return NULL;
	void *buf = malloc(ti.size ? ti.size : 1);
	size_t got = 0;
	*rc = weightfs_read(m, i, dtype, 0, ti.size, buf, &got, err, errlen);
	if (*rc == WEIGHTFS_OK && got != ti.size)
		*rc = WEIGHTFS_ERANGE;
	*len = got;
	return buf;
}

/* The checks of one model folder; `opaque` names the decoded layer that is
 * no stored tensor (NULL if none) and `parts` the parts its refusal names. */
static void check_model(const char *dir, const struct st_tensor *file, int nfile, const char *opaque,
			const char *const *parts)
{
	char err[512];
	weightfs_model *s, *d;
	if (weightfs_open(dir, WEIGHTFS_STORED, &s, err, sizeof err) != WEIGHTFS_OK ||
	    weightfs_open(dir, WEIGHTFS_F32, &d, err, sizeof err) != WEIGHTFS_OK) {
		CHECK(0, "%s: %s", dir, err);
		return;
	}
	size_t ns = weightfs_n_tensors(s), nd = weightfs_n_tensors(d);
	CHECK(ns == (size_t)nfile, "%s: stored lists %zu tensors, the file has %d", dir, ns, nfile);
	CHECK(nd < ns, "%s: decoded lists %zu tensors, stored %zu", dir, nd, ns);
	for (int k = 0; k < nfile; k++) {
		const struct st_tensor *t = &file[k];
		int64_t is = weightfs_find(s, t->name, strlen(t->name)), id = weightfs_find(d, t->name, strlen(t->name));
		CHECK(is >= 0 && id >= 0, "%s: %s not found (%" PRId64 ", %" PRId64 ")", dir, t->name, is, id);
		if (is < 0 || id < 0)
			continue;
		struct weightfs_tensor_info a, b;
		int ra = weightfs_tensor_info(s, (size_t)is, WEIGHTFS_STORED, &a, err, sizeof err);
		int rb = weightfs_tensor_info(d, (size_t)id, WEIGHTFS_STORED, &b, err, sizeof err);
		CHECK(ra == WEIGHTFS_OK && rb == WEIGHTFS_OK, "%s: %s: info: %s", dir, t->name, err);
		if (ra != WEIGHTFS_OK || rb != WEIGHTFS_OK)
			continue;
		CHECK(!strcmp(a.type, b.type) && !strcmp(a.dtype, b.dtype) && a.ndim == b.ndim && a.size == b.size &&
			      a.offset == b.offset && a.nbytes == b.nbytes && a.name_len == b.name_len &&
			      !memcmp(a.name, b.name, a.name_len),
		      "%s: %s: stored info differs (%s %s %" PRIu64 " vs %s %s %" PRIu64 ")", dir, t->name, a.type, a.dtype,
		      a.size, b.type, b.dtype, b.size);
		size_t la, lb;
		int rca, rcb;
		void *x = read_all(s, (size_t)is, WEIGHTFS_STORED, &la, &rca, err, sizeof err);
		void *y = read_all(d, (size_t)id, WEIGHTFS_STORED, &lb, &rcb, err, sizeof err);
		CHECK(rca == WEIGHTFS_OK && rcb == WEIGHTFS_OK && la == t->len && lb == t->len &&
			      !memcmp(x, t->data, la) && !memcmp(y, t->data, lb),
		      "%s: %s: stored bytes differ from the file's (%d %d, %zu %zu of %zu): %s", dir, t->name, rca, rcb,
		      la, lb, t->len, err);
		free(x);
		free(y);
		/* a part that is not its layer's name: hidden, and read in f32 too */
		if ((size_t)id >= nd) {
			void *z = read_all(d, (size_t)id, WEIGHTFS_F32, &la, &rca, err, sizeof err);
			CHECK(rca == WEIGHTFS_OK, "%s: hidden part %s in f32: %s", dir, t->name, err);
			free(z);
		}
	}
	/* decoded layers read in f32 and, where the name is stored, as stored;
	 * the one that is not refuses with its parts named */
	for (size_t i = 0; i < nd; i++) {
		struct weightfs_tensor_info ti;
		weightfs_tensor_info(d, i, WEIGHTFS_F32, &ti, NULL, 0);
		size_t len;
		int rc;
		void *x = read_all(d, i, WEIGHTFS_F32, &len, &rc, err, sizeof err);
		CHECK(rc == WEIGHTFS_OK && len == ti.nelems * 4, "%s: %s in f32: %s", dir, ti.name, err);
		free(x);
		if (!opaque || strcmp(ti.name, opaque) != 0)
			continue;
		struct weightfs_tensor_info si;
		err[0] = '\0';
		rc = weightfs_tensor_info(d, i, WEIGHTFS_STORED, &si, err, sizeof err);
		CHECK(rc == WEIGHTFS_EUNSUP && strstr(err, opaque) && !strchr(err, '\n'), "%s: %s stored: %d %s", dir,
		      opaque, rc, err);
		for (int p = 0; parts[p]; p++)
			CHECK(strstr(err, parts[p]) != NULL, "%s: the refusal does not name %s: %s", dir, parts[p], err);
		size_t got = 7;
		char buf[16];
		rc = weightfs_read(d, i, WEIGHTFS_STORED, 0, sizeof buf, buf, &got, err, sizeof err);
		CHECK(rc == WEIGHTFS_EUNSUP && got == 0, "%s: %s read stored: %d", dir, opaque, rc);
	}
	/* past the hidden parts: a bad index */
	struct weightfs_tensor_info ti;
	CHECK(weightfs_tensor_info(d, ns + 1, WEIGHTFS_F32, &ti, NULL, 0) == WEIGHTFS_EINVAL,
	      "%s: index past the hidden parts accepted", dir);
	weightfs_close(s);
	weightfs_close(d);
}

int main(void)
{
	char dir[] = "/tmp/weightfs-api-stored-XXXXXX";
	if (!mkdtemp(dir))
		return 1;
	char sub[3][64];
	const char *names[3] = {"fp8", "gptq", "bnb8"};
	for (int k = 0; k < 3; k++) {
		snprintf(sub[k], sizeof sub[k], "%s/%s", dir, names[k]);
		mkdir(sub[k], 0755);
	}
	/* FP8 (DeepSeek): [130, 200] in blocks of 128, a grid of [2, 2] */
	float sc[4] = {0.5f, 0.25f, 2.0f, 1e-3f};
	struct st_tensor fp8[3] = {
		{"l.weight", "F8_E4M3", {130, 200}, 2, random_bytes(130 * 200), 130 * 200},
		{"l.weight_scale_inv", "F32", {2, 2}, 2, malloc(16), 16},
		{"norm.weight", "F16", {200}, 1, random_bytes(400), 400},
	};
	memcpy(fp8[1].data, sc, 16);
	for (size_t i = 0; i < fp8[0].len; i++)
		if ((fp8[0].data[i] & 0x7F) == 0x7F)
			fp8[0].data[i] = 0x10; /* no NaN codes */
	write_st(sub[0], "model.safetensors", fp8, 3);
	const char *fp8_cfg = "{\"quantization_config\":{\"quant_method\":\"fp8\",\"fmt\":\"e4m3\","
			      "\"weight_block_size\":[128,128]}}";
	write_file(sub[0], "config.json", fp8_cfg, strlen(fp8_cfg));
	check_model(sub[0], fp8, 3, NULL, NULL);

	/* GPTQ v1 4-bit: in 64, out 32, groups of 32 */
	struct st_tensor gq[5] = {
		{"l.qweight", "I32", {8, 32}, 2, random_bytes(8 * 32 * 4), 8 * 32 * 4},
		{"l.qzeros", "I32", {2, 4}, 2, random_bytes(2 * 4 * 4), 2 * 4 * 4},
		{"l.scales", "F16", {2, 32}, 2, malloc(2 * 32 * 2), 2 * 32 * 2},
		{"l.g_idx", "I32", {64}, 1, malloc(64 * 4), 64 * 4},
		{"l.bias", "F16", {32}, 1, random_bytes(64), 64},
	};
	for (int i = 0; i < 64; i++) {
		gq[2].data[2 * i] = rnd8(), gq[2].data[2 * i + 1] = 0x20; /* small normal halves */
		uint32_t g = (uint32_t)((i * 7) % 64) / 32;
		memcpy(gq[3].data + 4 * i, &g, 4);
	}
	write_st(sub[1], "model.safetensors", gq, 5);
	const char *gptq_cfg = "{\"quantization_config\":{\"quant_method\":\"gptq\",\"bits\":4,\"group_size\":32,"
			       "\"desc_act\":true}}";
	write_file(sub[1], "config.json", gptq_cfg, strlen(gptq_cfg));
	const char *gparts[] = {"'l.qweight'", "'l.qzeros'", "'l.scales'", "'l.g_idx'", NULL};
	check_model(sub[1], gq, 5, "l.weight", gparts);

	/* bitsandbytes 8-bit, no config: the SCB says it */
	float scb[24];
	for (int i = 0; i < 24; i++)
		scb[i] = 0.1f * (float)(i + 1);
	struct st_tensor b8[3] = {
		{"fc.weight", "I8", {24, 40}, 2, random_bytes(24 * 40), 24 * 40},
		{"fc.SCB", "F32", {24}, 1, malloc(sizeof scb), sizeof scb},
		{"fc.weight_format", "U8", {0}, 0, calloc(1, 1), 1},
	};
	memcpy(b8[1].data, scb, sizeof scb);
	write_st(sub[2], "model.safetensors", b8, 3);
	check_model(sub[2], b8, 3, NULL, NULL);

	for (int k = 0; k < 3; k++)
		free(fp8[k].data), free(b8[k].data);
	for (int k = 0; k < 5; k++)
		free(gq[k].data);
	for (int k = 0; k < 3; k++) {
		char p[256];
		snprintf(p, sizeof p, "%s/model.safetensors", sub[k]);
		unlink(p);
		snprintf(p, sizeof p, "%s/config.json", sub[k]);
		unlink(p);
		rmdir(sub[k]);
	}
	rmdir(dir);
	if (failures) {
		fprintf(stderr, "api-check: stored_view: %d checks failed\n", failures);
		return 1;
	}
	printf("api-check: stored_view: WEIGHTFS_STORED on decoded FP8, GPTQ and bnb 8-bit models: passed\n");
	return 0;
}
