/* gen_model.c - writes synthetic GGUF files for the benchmark (tools/bench.mk).
 *
 *   gen_model types  OUT MIB TYPE...   one tensor per TYPE (ggml names: F32, F16,
 *                                      BF16, Q4_0, Q8_0, Q4_K, Q6_K, IQ4_XS, ...),
 *                                      each MIB MiB of float32 output, random
 *                                      valid blocks
 *   gen_model many   OUT NTENSORS NVOCAB  NTENSORS small F32 tensors in 100-tensor
 *                                      directories, plus a NVOCAB-string
 *                                      tokenizer.ggml.tokens array
 *   gen_model sparse OUT GIB           a GIB GiB sparse file (ftruncate) with four
 *                                      big tensors whose data are holes
 *
 * Scale fields (f16 d, dmin) are random finite values of magnitude
 * 2^-10..1; every other byte is random, which is valid for every type here.
 * F16 and BF16 elements are random finite numbers.  Fast: one xorshift per
 * 8 bytes, a few stores per block.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codec/wf_types.h"

static uint64_t rng = 0x9E3779B97F4A7C15u;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static void fill_random(uint8_t *p, size_t n)
{
	size_t i = 0;
	for (; i + 8 <= n; i += 8) {
		uint64_t v = next();
		memcpy(p + i, &v, 8);
	}
	for (; i < n; i++)
		p[i] = (uint8_t)next();
}

/* A random finite f16 of magnitude 2^-10 .. <1, either sign. */
static uint16_t rand_scale(void)
{
	uint64_t r = next();
	unsigned exp = 5 + (unsigned)(r % 10);           /* 2^(exp-15) */
	return (uint16_t)((r >> 8 & 0x8000) | exp << 10 | (r >> 20 & 0x3FF));
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Where each type keeps its f16 scales inside a block (-1 ends the list). */
static void fix_scales(int type, uint8_t *blk)
{
	static const int8_t offs[WF_GGML_TYPE_COUNT][3] = {
		[WF_T_Q4_0] = {0, -1}, [WF_T_Q4_1] = {0, 2, -1}, [WF_T_Q5_0] = {0, -1},
		[WF_T_Q5_1] = {0, 2, -1}, [WF_T_Q8_0] = {0, -1}, [WF_T_Q4_K] = {0, 2, -1},
		[WF_T_Q5_K] = {0, 2, -1}, [WF_T_IQ2_XXS] = {0, -1}, [WF_T_IQ2_XS] = {0, -1},
		[WF_T_IQ2_S] = {0, -1}, [WF_T_IQ3_XXS] = {0, -1}, [WF_T_IQ3_S] = {0, -1},
		[WF_T_IQ1_S] = {0, -1}, [WF_T_IQ4_NL] = {0, -1}, [WF_T_IQ4_XS] = {0, -1},
		[WF_T_Q1_0] = {0, -1}, [WF_T_Q2_0] = {0, -1},
	};
	switch (type) {
	case WF_T_F16: {
		uint16_t h = (uint16_t)(blk[0] | blk[1] << 8);
		if ((h & 0x7C00) == 0x7C00)  /* Inf/NaN -> a finite value */
			put16(blk, h & 0xBFFF);
		return;
	}
	case WF_T_BF16:
		if ((blk[1] & 0x7F) == 0x7F && (blk[0] & 0x80))
			blk[1] &= 0xBF;
		return;
	case WF_T_Q2_K: put16(blk + 80, rand_scale()); put16(blk + 82, rand_scale()); return;
	case WF_T_Q3_K: put16(blk + 108, rand_scale()); return;
	case WF_T_Q6_K: put16(blk + 208, rand_scale()); return;
	case WF_T_TQ1_0: put16(blk + 52, rand_scale()); return;
	case WF_T_TQ2_0: put16(blk + 64, rand_scale()); return;
	case WF_T_MXFP4: blk[0] = (uint8_t)(118 + next() % 10); return;
	case WF_T_IQ1_M: {
		uint16_t d = rand_scale();
		for (int k = 0; k < 4; k++) {
			blk[48 + 2 * k + 1] = (uint8_t)((blk[48 + 2 * k + 1] & 0x0F) | ((d >> (4 * k)) & 0xF) << 4);
		}
		return;
	}
	default:
		break;
	}
	if (type >= 0 && type < WF_GGML_TYPE_COUNT)
		for (int i = 0; i < 3 && offs[type][i] >= 0; i++)
			put16(blk + offs[type][i], rand_scale());
}

/* --- a tiny GGUF writer into a growable buffer --------------------------- */

struct out {
	uint8_t *p;
	size_t len, cap;
};

static void put(struct out *o, const void *s, size_t n)
{
	if (o->len + n > o->cap) {
		size_t c = o->cap ? o->cap : 4096;
		while (c < o->len + n)
			c *= 2;
		o->p = realloc(o->p, c);
		if (!o->p) {
			perror("gen_model");
			exit(1);
		}
		o->cap = c;
	}
	memcpy(o->p + o->len, s, n);
	o->len += n;
}

static void u32(struct out *o, uint32_t v) { uint8_t b[4] = {(uint8_t)v, (uint8_t)(v >> 8), (uint8_t)(v >> 16), (uint8_t)(v >> 24)}; put(o, b, 4); }
static void u64(struct out *o, uint64_t v) { u32(o, (uint32_t)v); u32(o, (uint32_t)(v >> 32)); }
static void str(struct out *o, const char *s) { u64(o, strlen(s)); put(o, s, strlen(s)); }

struct tspec {
	char name[64];
	int type;
	uint64_t ne0, ne1;
	uint64_t off, nbytes;
};

#define ALIGN 32u

/* Header, key/values (a string kv and an optional vocab), tensor infos,
 * padding; assigns offsets.  Returns the data section's start. */
static uint64_t header(struct out *o, struct tspec *ts, size_t nt, uint64_t nvocab)
{
	put(o, "GGUF", 4);
	u32(o, 3);
	u64(o, nt);
	u64(o, nvocab ? 2 : 1);
	str(o, "general.architecture");
	u32(o, 8);
	str(o, "bench");
	if (nvocab) {
		str(o, "tokenizer.ggml.tokens");
		u32(o, 9);
		u32(o, 8);
		u64(o, nvocab);
		char tok[32];
		for (uint64_t i = 0; i < nvocab; i++) {
			snprintf(tok, sizeof tok, "tok_%" PRIu64 "_%x", i, (unsigned)(next() & 0xFFFF));
			str(o, tok);
		}
	}
	uint64_t off = 0;
	for (size_t i = 0; i < nt; i++) {
		const struct wf_type *ty = wf_type_get(ts[i].type);
		ts[i].nbytes = ts[i].ne0 * ts[i].ne1 / ty->blck * ty->bytes;
		ts[i].off = off;
		off += (ts[i].nbytes + ALIGN - 1) / ALIGN * ALIGN;
		str(o, ts[i].name);
		u32(o, 2);
		u64(o, ts[i].ne0);
		u64(o, ts[i].ne1);
		u32(o, (uint32_t)ts[i].type);
		u64(o, ts[i].off);
	}
	static const uint8_t zero[ALIGN];
	put(o, zero, (ALIGN - o->len % ALIGN) % ALIGN);
	return o->len;
}

static int type_by_name(const char *s)
{
	for (int id = 0; id < WF_GGML_TYPE_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty && strcmp(ty->name, s) == 0)
			return id;
	}
	return -1;
}

static void write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t w = write(fd, p, n);
		if (w < 0) {
			if (errno == EINTR)
				continue;
			perror("gen_model: write");
			exit(1);
		}
		p += w;
		n -= (size_t)w;
	}
}

static int create(const char *path)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	if (fd < 0) {
		fprintf(stderr, "gen_model: %s: %s\n", path, strerror(errno));
		exit(1);
	}
	return fd;
}

static int gen_types(const char *path, uint64_t mib, char **names, int n)
{
	struct tspec *ts = calloc((size_t)n, sizeof *ts);
	uint64_t elems = mib << 18;  /* MiB of float32 */
	for (int i = 0; i < n; i++) {
		ts[i].type = type_by_name(names[i]);
		if (ts[i].type < 0) {
			fprintf(stderr, "gen_model: unknown type %s\n", names[i]);
			return 1;
		}
		snprintf(ts[i].name, sizeof ts[i].name, "t.%s", names[i]);
		ts[i].ne0 = 4096;
		ts[i].ne1 = elems / 4096;
	}
	struct out o = {0};
	uint64_t data = header(&o, ts, (size_t)n, 0);
	int fd = create(path);
	write_all(fd, o.p, o.len);
	size_t chunk_cap = 8u << 20;
	uint8_t *chunk = malloc(chunk_cap + 4096);
	for (int i = 0; i < n; i++) {
		const struct wf_type *ty = wf_type_get(ts[i].type);
		if (lseek(fd, (off_t)(data + ts[i].off), SEEK_SET) < 0) {
			perror("gen_model: lseek");
			return 1;
		}
		size_t per = chunk_cap / ty->bytes;  /* blocks per chunk */
		uint64_t left = ts[i].nbytes / ty->bytes;
		while (left) {
			size_t nb = left < per ? (size_t)left : per;
			size_t bytes = nb * ty->bytes;
			fill_random(chunk, bytes);
			for (size_t b = 0; b < nb; b++)
				fix_scales(ts[i].type, chunk + b * ty->bytes);
			write_all(fd, chunk, bytes);
			left -= nb;
		}
		static const uint8_t zero[ALIGN];
		write_all(fd, zero, (ALIGN - ts[i].nbytes % ALIGN) % ALIGN);
	}
	free(chunk);
	free(o.p);
	free(ts);
	return close(fd) != 0;
}

static int gen_many(const char *path, uint64_t nt, uint64_t nvocab)
{
	struct tspec *ts = calloc(nt, sizeof *ts);
	for (uint64_t i = 0; i < nt; i++) {
		snprintf(ts[i].name, sizeof ts[i].name, "blk.%" PRIu64 ".t%" PRIu64 ".weight", i / 100, i % 100);
		ts[i].type = WF_T_F32;
		ts[i].ne0 = 16;
		ts[i].ne1 = 1;
	}
	struct out o = {0};
	uint64_t data = header(&o, ts, nt, nvocab);
	uint64_t total = data + ts[nt - 1].off + (ts[nt - 1].nbytes + ALIGN - 1) / ALIGN * ALIGN;
	int fd = create(path);
	write_all(fd, o.p, o.len);
	/* tensor data: small random floats */
	uint8_t *d = calloc(1, (size_t)(total - data));
	for (uint64_t i = 0; i < nt; i++)
		for (int k = 0; k < 16; k++) {
			float f = (float)(next() % 2000) / 1000.0f - 1.0f;
			memcpy(d + ts[i].off + 4 * k, &f, 4);
		}
	write_all(fd, d, (size_t)(total - data));
	free(d);
	free(o.p);
	free(ts);
	return close(fd) != 0;
}

static int gen_sparse(const char *path, uint64_t gib)
{
	/* four tensors of (gib/4) GiB each: Q4_K, Q6_K, Q8_0, F16 */
	static const int types[4] = {WF_T_Q4_K, WF_T_Q6_K, WF_T_Q8_0, WF_T_F16};
	struct tspec ts[4];
	memset(ts, 0, sizeof ts);
	uint64_t per = (gib << 30) / 4;
	for (int i = 0; i < 4; i++) {
		const struct wf_type *ty = wf_type_get(types[i]);
		uint64_t rows = per / ty->bytes * ty->blck / 4096;
		ts[i].type = types[i];
		ts[i].ne0 = 4096;
		ts[i].ne1 = rows;
		snprintf(ts[i].name, sizeof ts[i].name, "big.%s", ty->name);
	}
	struct out o = {0};
	uint64_t data = header(&o, ts, 4, 0);
	uint64_t total = data + ts[3].off + (ts[3].nbytes + ALIGN - 1) / ALIGN * ALIGN;
	int fd = create(path);
	write_all(fd, o.p, o.len);
	if (ftruncate(fd, (off_t)total) != 0) {
		perror("gen_model: ftruncate");
		return 1;
	}
	free(o.p);
	return close(fd) != 0;
}

int main(int argc, char **argv)
{
	if (argc >= 5 && strcmp(argv[1], "types") == 0)
		return gen_types(argv[2], strtoull(argv[3], NULL, 10), argv + 4, argc - 4);
	if (argc == 5 && strcmp(argv[1], "many") == 0)
		return gen_many(argv[2], strtoull(argv[3], NULL, 10), strtoull(argv[4], NULL, 10));
	if (argc == 4 && strcmp(argv[1], "sparse") == 0)
		return gen_sparse(argv[2], strtoull(argv[3], NULL, 10));
	fprintf(stderr, "usage: gen_model types OUT MIB TYPE... | many OUT NTENSORS NVOCAB | sparse OUT GIB\n");
	return 2;
}
