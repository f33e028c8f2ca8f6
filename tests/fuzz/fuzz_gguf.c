/* fuzz_gguf.c - libFuzzer target: the GGUF parser, then the tree and range
 * reads over whatever parsed.  See tests/fuzz/README.md. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wf_model *m;
	char err[WF_ERRLEN];
	err[0] = '\0';
	enum wf_err rc = wf_gguf_parse(&m, data, size, err);
	if (rc != WF_OK) {
		fuzz_check_refusal(rc, m, err);
		return 0;
	}
	FUZZ_CHECK(m && m->format == WF_FMT_GGUF && (m->version == 2 || m->version == 3) &&
			   m->alignment && (m->alignment & (m->alignment - 1)) == 0,
		   "header fields");
	for (size_t i = 0; i < m->n_tensors; i++)
		FUZZ_CHECK(m->tensors[i].ndim <= 4 && (m->tensors[i].offset - m->data_offset) % m->alignment == 0,
			   "tensor %zu: ndim or alignment", i);
	exercise_model(m, fuzz_seed(data, size));
	wf_model_free(m);
	return 0;
}
