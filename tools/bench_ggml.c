/* bench_ggml.c - weightfs's decoders against ggml's own to_float (part 14 of
 * `make bench`, run only when a ggml or llama.cpp source tree is given:
 * `make bench GGML_SRC=DIR BENCH_ARGS="--parts ggml"`).
 *
 *   bench_ggml [-r REPS] [-n ELEMS[,ELEMS...]] [-t NAME[,NAME...]] [-m MS]
 *
 * Not part of the build or of `make check`: ggml is not a dependency.
 * tools/bench.py compiles this file in its scratch directory against the
 * headers and the libggml-base.a it built from that tree, and libweightfs.a.
 *
 * For every ggml type whose type traits have a to_float and which weightfs
 * decodes (same id, same name, same block geometry: weightfs's ids are
 * ggml's), it fills NBLOCKS random blocks (random bytes, f16 scales random
 * finite values of magnitude 2^-10..1, sane MXFP4/NVFP4/IQ1_M scales) and
 * decodes them on this one thread with ggml's to_float and with the decoder
 * weightfs's read path uses (its SIMD twin when the CPU has one), the two
 * alternating sample by sample (the first side alternating too); a sample
 * is one decoder run enough times to take about MS milliseconds.  Then it
 * decodes once more into buffers filled with different bytes and compares
 * the two outputs with memcmp.  One JSON object per type and size on
 * stdout:
 *   {"type", "elements", "ggml_gbps", "wf_gbps", "ratio", "identical", "wf_simd"}
 * GB/s are 1e9 bytes of float32 output per second (medians of the samples);
 * ratio is the median over samples of ggml's time / weightfs's time (above 1:
 * weightfs is faster).  Rows
 * "memset" and "memcpy" (of the same output size, memcpy from a second
 * buffer of that size) and "store32" (a loop of 32-byte vector stores, what
 * the AVX2 decoders issue) give the store ceiling of the same loop:
 *   {"type": "memset", "elements", "gbps"}
 * Exit status 1 if any output differed or a type did not match.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <immintrin.h>

#include "ggml.h"

#include "codec/wf_blocks.h"
#include "codec/wf_types.h"

#define MAX_REPS 1001
#define MAX_SIZES 8

static uint64_t rng = 0x2545F4914F6CDD1Du;

static uint64_t next(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* A random finite f16 of magnitude 2^-10 .. <1, either sign. */
static uint16_t rand_scale(void)
{
	uint64_t r = next();
	unsigned exp = 5 + (unsigned)(r % 10);
	return (uint16_t)((r >> 8 & 0x8000) | exp << 10 | (r >> 20 & 0x3FF));
}

static void put16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

/* Offsets of a type's f16 scales in its block; -1 ends the list. */
static const int16_t *f16_fields(int type)
{
	static const int16_t none[] = {-1};
	static const int16_t offs[WF_GGML_TYPE_COUNT][3] = {
		[WF_T_Q4_0] = {WF_Q4_0_D, -1}, [WF_T_Q4_1] = {WF_Q4_1_D, WF_Q4_1_M, -1},
		[WF_T_Q5_0] = {WF_Q5_0_D, -1}, [WF_T_Q5_1] = {WF_Q5_1_D, WF_Q5_1_M, -1},
		[WF_T_Q8_0] = {WF_Q8_0_D, -1}, [WF_T_Q8_1] = {WF_Q8_1_D, -1},
		[WF_T_Q2_K] = {WF_Q2_K_D, WF_Q2_K_DMIN, -1}, [WF_T_Q3_K] = {WF_Q3_K_D, -1},
		[WF_T_Q4_K] = {WF_Q4_K_D, WF_Q4_K_DMIN, -1}, [WF_T_Q5_K] = {WF_Q5_K_D, WF_Q5_K_DMIN, -1},
		[WF_T_Q6_K] = {WF_Q6_K_D, -1}, [WF_T_IQ2_XXS] = {WF_IQ2_XXS_D, -1},
		[WF_T_IQ2_XS] = {WF_IQ2_XS_D, -1}, [WF_T_IQ2_S] = {WF_IQ2_S_D, -1},
		[WF_T_IQ3_XXS] = {WF_IQ3_XXS_D, -1}, [WF_T_IQ3_S] = {WF_IQ3_S_D, -1},
		[WF_T_IQ1_S] = {WF_IQ1_S_D, -1}, [WF_T_IQ4_NL] = {WF_IQ4_NL_D, -1},
		[WF_T_IQ4_XS] = {WF_IQ4_XS_D, -1}, [WF_T_TQ1_0] = {WF_TQ1_0_D, -1},
		[WF_T_TQ2_0] = {WF_TQ2_0_D, -1}, [WF_T_Q1_0] = {WF_Q1_0_D, -1},
		[WF_T_Q2_0] = {WF_Q2_0_D, -1},
	};
	if (type <= 0 || type >= WF_GGML_TYPE_COUNT || (offs[type][0] == 0 && offs[type][1] == 0))
		return none;
	return offs[type];
}

/* Random bytes made a sane block: finite scales of a plausible size. */
static void fill_block(int type, uint8_t *blk, size_t bytes)
{
	for (size_t i = 0; i < bytes; i++)
		blk[i] = (uint8_t)(next() >> 24);
	switch (type) {
	case WF_T_F16:
		if ((blk[1] & 0x7C) == 0x7C)
			blk[1] &= 0xBF;  /* Inf/NaN -> a finite value */
		return;
	case WF_T_BF16:
		if ((blk[1] & 0x7F) == 0x7F && (blk[0] & 0x80))
			blk[1] &= 0xBF;
		return;
	case WF_T_MXFP4:
		blk[WF_MXFP4_E] = (uint8_t)(118 + next() % 10);
		return;
	case WF_T_NVFP4:
		for (int k = 0; k < WF_NVFP4_D_LEN; k++)  /* ue4m3 2^-4..2^2 */
			blk[WF_NVFP4_D + k] = (uint8_t)((3 + next() % 7) << 3 | (next() & 7));
		return;
	case WF_T_IQ1_M: {
		uint16_t d = rand_scale();
		for (int k = 0; k < 4; k++) {
			uint8_t *p = blk + WF_IQ1_M_SCALES + 2 * k + 1;
			*p = (uint8_t)((*p & 0x0F) | ((d >> (4 * k)) & 0xF) << 4);
		}
		return;
	}
	default:
		break;
	}
	for (const int16_t *o = f16_fields(type); *o >= 0; o++)
		put16(blk + *o, rand_scale());
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return (x > y) - (x < y);
}

static double med(double *v, int n)
{
	qsort(v, (size_t)n, sizeof *v, cmp_double);
	return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* One side of the comparison: a decoder and how to call it. */
struct side {
	ggml_to_float_t ggml;  /* ggml's to_float, or NULL */
	wf_decode_fn wf;       /* weightfs's decoder, or NULL */
	int op;                /* neither: 1 memset, 2 memcpy, 3 32-byte stores */
};

/* The output written with plain 32-byte vector stores of a register (what
 * the AVX2 decoders issue), where glibc's memset may choose `rep stosb`.
 * Four per iteration: with one, the loop's own branch limits it to one
 * store a cycle, half of what the core takes into L2. */
__attribute__((target("avx"))) static void store32(float *dst, size_t n)
{
	__m256 v = _mm256_set1_ps(1.0f);
	for (size_t i = 0; i + 32 <= n; i += 32) {
		__asm__("" : "+x"(v));  /* not a memset idiom */
		_mm256_storeu_ps(dst + i, v);
		_mm256_storeu_ps(dst + i + 8, v);
		_mm256_storeu_ps(dst + i + 16, v);
		_mm256_storeu_ps(dst + i + 24, v);
	}
}

static double run(const struct side *s, const void *src, float *dst, size_t n, size_t nblocks, long k)
{
	double t0 = now();
	for (long i = 0; i < k; i++) {
		if (s->ggml)
			s->ggml(src, dst, (int64_t)n);
		else if (s->wf)
			s->wf(src, dst, nblocks);
		else if (s->op == 3)
			store32(dst, n);
		else if (s->op == 1)
			memset(dst, (int)i & 0x7F, n * sizeof(float));
		else
			memcpy(dst, src, n * sizeof(float));
		__asm__ volatile("" ::"r"(dst) : "memory");
	}
	return now() - t0;
}

/* Repetitions that make one sample about ms milliseconds. */
static long calibrate(const struct side *s, const void *src, float *dst, size_t n, size_t nb, double ms)
{
	long k = 1;
	run(s, src, dst, n, nb, 1);
	for (;;) {
		double t = run(s, src, dst, n, nb, k);
		if (t * 1e3 >= ms || k > (1L << 24))
			return k;
		k = t * 1e3 < ms / 16 ? k * 8 : (long)(k * (ms / (t * 1e3)) + 1);
	}
}

struct opts {
	int reps;
	int nsizes;
	size_t sizes[MAX_SIZES];
	const char *types;
	double ms;
};

/* Times a against b (b may be NULL) over o->reps interleaved samples. */
static void compare(const struct opts *o, const struct side *a, const struct side *b, const void *src,
		    float *ya, float *yb, size_t n, size_t nb, double *ga, double *gb, double *ratio)
{
	static double ta[MAX_REPS], tb[MAX_REPS], r[MAX_REPS];
	long k = calibrate(a, src, ya, n, nb, o->ms);
	double bytes = (double)n * sizeof(float) * (double)k;

	if (b)
		run(b, src, yb, n, nb, 1);
	for (int i = 0; i < o->reps; i++) {
		if (b && i % 2) {
			tb[i] = run(b, src, yb, n, nb, k);
			ta[i] = run(a, src, ya, n, nb, k);
		} else {
			ta[i] = run(a, src, ya, n, nb, k);
			tb[i] = b ? run(b, src, yb, n, nb, k) : 1;
		}
		r[i] = tb[i] / ta[i];
		ta[i] = bytes / ta[i] / 1e9;
		tb[i] = bytes / tb[i] / 1e9;
	}
	*ga = med(ta, o->reps);
	*gb = b ? med(tb, o->reps) : 0;
	*ratio = b ? med(r, o->reps) : 0;
}

static int wanted(const struct opts *o, const char *name)
{
	if (!o->types)
		return 1;
	size_t len = strlen(name);
	for (const char *p = o->types; *p;) {
		const char *e = strchr(p, ',');
		size_t l = e ? (size_t)(e - p) : strlen(p);
		if (l == len && strncasecmp(p, name, l) == 0)
			return 1;
		p += l + (e != NULL);
	}
	return 0;
}

/* The weightfs row for ggml type t, or NULL with *why set. */
static const struct wf_type *match(int t, const char **why)
{
	const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
	const struct wf_type *ty = t < WF_GGML_TYPE_COUNT ? wf_type_get(t) : NULL;

	*why = NULL;
	if (!ty || !ty->decode) {
		*why = "weightfs has no decoder for this id";
		return NULL;
	}
	if (strcasecmp(ty->name, tr->type_name) != 0 || (int64_t)ty->blck != tr->blck_size ||
	    ty->bytes != tr->type_size) {
		*why = "id names a different type in weightfs (name or block size differs)";
		return NULL;
	}
	return ty;
}

static int bench_type(const struct opts *o, int t, uint8_t *src, float *ya, float *yb)
{
	const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
	const char *why;
	const struct wf_type *ty = match(t, &why);
	int bad = 0;

	if (!ty) {
		printf("{\"type\": \"%s\", \"id\": %d, \"skipped\": \"%s\"}\n", tr->type_name, t, why);
		return why[0] == 'i';
	}
	const struct side g = {.ggml = tr->to_float}, w = {.wf = wf_type_decoder(ty)};
	for (int si = 0; si < o->nsizes; si++) {
		size_t n = o->sizes[si], nb = n / ty->blck;
		double gg, gw, ratio;

		for (size_t i = 0; i < nb; i++)
			fill_block(t, src + i * ty->bytes, ty->bytes);
		compare(o, &w, &g, src, ya, yb, n, nb, &gw, &gg, &ratio);
		memset(ya, 0x55, n * sizeof(float));
		memset(yb, 0xAA, n * sizeof(float));
		w.wf(src, ya, nb);
		g.ggml(src, yb, (int64_t)n);
		int same = memcmp(ya, yb, n * sizeof(float)) == 0;
		bad |= !same;
		printf("{\"type\": \"%s\", \"id\": %d, \"elements\": %zu, \"ggml_gbps\": %.3f, "
		       "\"wf_gbps\": %.3f, \"ratio\": %.4f, \"identical\": %s, \"wf_simd\": %s}\n",
		       ty->name, t, n, gg, gw, ratio, same ? "true" : "false",
		       w.wf == ty->decode_simd ? "true" : "false");
		fflush(stdout);
	}
	return bad;
}

static void bench_ceiling(const struct opts *o, uint8_t *src, float *ya)
{
	static const struct side ops[3] = {{.op = 1}, {.op = 2}, {.op = 3}};
	static const char *names[3] = {"memset", "memcpy", "store32"};

	for (int j = 0; j < 3; j++) {
		if (!wanted(o, names[j]))
			continue;
		for (int si = 0; si < o->nsizes; si++) {
			double gbps, unused, ratio;
			compare(o, &ops[j], NULL, src, ya, NULL, o->sizes[si], 0, &gbps, &unused, &ratio);
			printf("{\"type\": \"%s\", \"elements\": %zu, \"gbps\": %.3f}\n", names[j], o->sizes[si], gbps);
			fflush(stdout);
		}
	}
}

static int parse(int argc, char **argv, struct opts *o)
{
	*o = (struct opts){.reps = 31, .nsizes = 2, .sizes = {1 << 16, 1 << 20}, .ms = 2.0};
	for (int i = 1; i < argc; i += 2) {
		const char *v = argv[i + 1];
		if (i + 1 >= argc)
			return -1;
		if (strcmp(argv[i], "-r") == 0) {
			o->reps = atoi(v);
		} else if (strcmp(argv[i], "-t") == 0) {
			o->types = v;
		} else if (strcmp(argv[i], "-m") == 0) {
			o->ms = atof(v);
		} else if (strcmp(argv[i], "-n") == 0) {
			o->nsizes = 0;
			for (const char *p = v; *p && o->nsizes < MAX_SIZES;) {
				char *e;
				unsigned long long n = strtoull(p, &e, 10);
				if (e == p || n == 0 || n % 256 || n > (1ULL << 28))
					return -1;
				o->sizes[o->nsizes++] = (size_t)n;
				p = *e == ',' ? e + 1 : e;
			}
		} else {
			return -1;
		}
	}
	return o->reps < 1 || o->reps > MAX_REPS || o->nsizes == 0 || !(o->ms > 0) ? -1 : 0;
}

int main(int argc, char **argv)
{
	struct opts o;
	if (parse(argc, argv, &o) != 0) {
		fprintf(stderr, "usage: bench_ggml [-r REPS] [-n ELEMS[,ELEMS...]] (multiples of 256) "
				"[-t NAME[,NAME...]] [-m MS per sample]\n");
		return 2;
	}
	/* Older ggml filled its f16 tables here; current ggml needs nothing. */
	struct ggml_init_params ip = {.mem_size = 1 << 16, .mem_buffer = NULL, .no_alloc = true};
	ggml_free(ggml_init(ip));

	size_t maxn = 0;
	for (int i = 0; i < o.nsizes; i++)
		maxn = o.sizes[i] > maxn ? o.sizes[i] : maxn;
	/* The largest block is at most 4 bytes per element (F32-like). */
	uint8_t *src = aligned_alloc(64, maxn * sizeof(float));
	float *ya = aligned_alloc(64, maxn * sizeof(float)), *yb = aligned_alloc(64, maxn * sizeof(float));
	if (!src || !ya || !yb) {
		fprintf(stderr, "bench_ggml: out of memory\n");
		return 1;
	}
	memset(src, 0, maxn * sizeof(float));
	int bad = 0;
	for (int t = 0; t < GGML_TYPE_COUNT; t++) {
		const struct ggml_type_traits *tr = ggml_get_type_traits((enum ggml_type)t);
		if (tr->to_float && tr->type_name && wanted(&o, tr->type_name))
			bad |= bench_type(&o, t, src, ya, yb);
	}
	bench_ceiling(&o, src, ya);
	free(src);
	free(ya);
	free(yb);
	return bad;
}
