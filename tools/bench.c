/* bench.c - in-process decode throughput (part 1 of `make bench`).
 *
 *   bench MODEL RUNS [CHUNK_KIB]
 *   bench MODEL RUNS fresh
 *
 * Reads every tensor of MODEL through wf_view_read in CHUNK_KIB pieces
 * (default 1024, what a 1 MiB FUSE read asks for) into one reused buffer,
 * RUNS times, and prints one JSON object per tensor on stdout:
 *   {"tensor": ..., "type": ..., "out_bytes": N, "scalar_gbps": [...], "simd_gbps": [...]}
 * GB/s are 1e9 bytes of float32 output per second.  A RAW tensor (F32) is a
 * plain memcpy of the same output size, the reference for the others.
 * "simd_gbps" is present when the library has SIMD decoders for the CPU
 * (wf_simd_set); the scalar and SIMD passes alternate inside each run, so
 * both see the same machine noise.
 *
 * `fresh` instead decodes each whole tensor, on one thread, into newly
 * allocated memory (page faults included, as np.empty plus a decode pays
 * them), freed after each run: {"tensor", "type", "out_bytes", "fresh_gbps"}.
 * The reference for the Python module's whole-tensor loads.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "model/wf_model.h"
#include "model/wf_open.h"
#include "codec/wf_types.h"
#include "view/wf_view.h"

/* Weak, so this tool also builds against a library without SIMD. */
extern int wf_simd_set(int enable) __attribute__((weak));

static double now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double pass(const struct wf_model *m, const struct wf_tensor *t, uint8_t *buf, size_t chunk)
{
	double t0 = now();
	for (uint64_t off = 0; off < t->size; off += chunk) {
		size_t got;
		if (wf_view_read(t, m->data, m->data_len, off, chunk, buf, &got) != WF_OK) {
			fprintf(stderr, "bench: read failed\n");
			exit(1);
		}
	}
	double dt = now() - t0;
	return (double)t->size / dt / 1e9;
}

static double fresh_pass(const struct wf_model *m, const struct wf_tensor *t)
{
	double t0 = now();
	uint8_t *buf = malloc(t->size ? t->size : 1);
	size_t got;
	if (!buf || wf_view_read(t, m->data, m->data_len, 0, t->size, buf, &got) != WF_OK) {
		fprintf(stderr, "bench: fresh read failed\n");
		exit(1);
	}
	double dt = now() - t0;
	free(buf);
	return (double)t->size / dt / 1e9;
}

static void print_list(const char *key, const double *v, int n)
{
	printf(", \"%s\": [", key);
	for (int i = 0; i < n; i++)
		printf(i ? ", %.4f" : "%.4f", v[i]);
	printf("]");
}

int main(int argc, char **argv)
{
	if (argc < 3) {
		fprintf(stderr, "usage: bench MODEL RUNS [CHUNK_KIB]\n");
		return 2;
	}
	char err[WF_ERRLEN];
	struct wf_model *m;
	if (wf_open_file(&m, argv[1], err) != WF_OK) {
		fprintf(stderr, "bench: %s: %s\n", argv[1], err);
		return 1;
	}
	int runs = atoi(argv[2]);
	if (argc > 3 && strcmp(argv[3], "fresh") == 0) {
		double *v = calloc((size_t)runs, sizeof *v);
		if (wf_simd_set)
			wf_simd_set(1);
		for (size_t i = 0; i < m->n_tensors; i++) {
			const struct wf_tensor *t = &m->tensors[i];
			fresh_pass(m, t); /* warm-up: fault the source pages in */
			for (int r = 0; r < runs; r++)
				v[r] = fresh_pass(m, t);
			printf("{\"tensor\": \"%s\", \"type\": \"%s\", \"out_bytes\": %" PRIu64, t->name,
			       wf_type_get(t->type)->name, t->size);
			print_list("fresh_gbps", v, runs);
			printf("}\n");
			fflush(stdout);
		}
		free(v);
		wf_model_free(m);
		return 0;
	}
	size_t chunk = (argc > 3 ? (size_t)atoi(argv[3]) : 1024) << 10;
	uint8_t *buf = aligned_alloc(4096, chunk);
	double *sc = calloc((size_t)runs, sizeof *sc), *si = calloc((size_t)runs, sizeof *si);
	int have_simd = wf_simd_set && wf_simd_set(1);

	for (size_t i = 0; i < m->n_tensors; i++) {
		const struct wf_tensor *t = &m->tensors[i];
		const struct wf_type *ty = wf_type_get(t->type);
		/* warm-up: fault the source pages in, settle the clocks */
		if (have_simd)
			wf_simd_set(0);
		pass(m, t, buf, chunk);
		for (int r = 0; r < runs; r++) {
			if (have_simd)
				wf_simd_set(0);
			sc[r] = pass(m, t, buf, chunk);
			if (have_simd) {
				wf_simd_set(1);
				si[r] = pass(m, t, buf, chunk);
			}
		}
		printf("{\"tensor\": \"%s\", \"type\": \"%s\", \"kind\": \"%s\", \"out_bytes\": %" PRIu64,
		       t->name, ty->name, ty->vk == WF_VK_RAW ? "raw" : "decode", t->size);
		print_list("scalar_gbps", sc, runs);
		if (have_simd && ty->decode)
			print_list("simd_gbps", si, runs);
		printf("}\n");
		fflush(stdout);
	}
	free(sc);
	free(si);
	free(buf);
	wf_model_free(m);
	return 0;
}
