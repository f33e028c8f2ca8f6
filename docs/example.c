/* example.c - list a model's tensors and print the first values of one.
 *
 *   cc -o example example.c $(pkg-config --cflags --libs weightfs)
 *   ./example model.gguf [TENSOR]
 *
 * Public domain in spirit; MIT like the rest of weightfs. */
#include <weightfs.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int main(int argc, char **argv)
{
	char err[512];
	weightfs_model *m;
	if (argc < 2) {
		fprintf(stderr, "usage: %s MODEL [TENSOR]\n", argv[0]);
		return 2;
	}
	if (weightfs_open(argv[1], WEIGHTFS_F32, &m, err, sizeof err) != WEIGHTFS_OK) {
		fprintf(stderr, "example: %s\n", err);
		return 1;
	}

	size_t n = weightfs_n_tensors(m);
	for (size_t i = 0; i < n; i++) {
		struct weightfs_tensor_info ti;
		if (weightfs_tensor_info(m, i, WEIGHTFS_DEFAULT, &ti, err, sizeof err) != WEIGHTFS_OK) {
			fprintf(stderr, "example: %s\n", err);
			continue;
		}
		printf("%-40s %-8s %-8s [", ti.name, ti.type, ti.dtype);
		for (uint32_t d = 0; d < ti.ndim; d++)
			printf(d ? ", %" PRIu64 : "%" PRIu64, ti.shape[d]);
		printf("] %" PRIu64 " bytes\n", ti.size);
	}

	/* the named tensor, or the first one, as float32 */
	int64_t k = argc > 2 ? weightfs_find(m, argv[2], strlen(argv[2])) : (n ? 0 : -1);
	if (k < 0) {
		fprintf(stderr, "example: no such tensor\n");
		weightfs_close(m);
		return 1;
	}
	struct weightfs_tensor_info ti;
	int rc = weightfs_tensor_info(m, (size_t)k, WEIGHTFS_F32, &ti, err, sizeof err);
	float *v = rc == WEIGHTFS_OK ? malloc(ti.size ? ti.size : 1) : NULL;
	size_t got = 0;
	if (v)
		rc = weightfs_read_parallel(m, (size_t)k, WEIGHTFS_F32, 0, ti.size, v, &got, 0, err, sizeof err);
	if (rc != WEIGHTFS_OK || !v) {
		fprintf(stderr, "example: %s\n", v ? err : "out of memory");
		free(v);
		weightfs_close(m);
		return 1;
	}
	printf("%s:", ti.name);
	for (size_t i = 0; i < got / sizeof *v && i < 8; i++)
		printf(" %g", v[i]);
	printf("\n");

	size_t mlen;
	const char *meta = weightfs_metadata_json(m, &mlen);
	printf("metadata: %zu bytes of JSON, starting %.40s\n", mlen, meta);
	free(v);
	weightfs_close(m);
	return 0;
}
