/* fuzz_st.c - libFuzzer target: the safetensors parser (and cJSON under
 * it), then the tree and range reads over whatever parsed.  See
 * tests/fuzz/README.md. */
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wf_model *m;
	char err[WF_ERRLEN];
	err[0] = '\0';
	enum wf_err rc = wf_st_parse(&m, data, size, err);
	if (rc != WF_OK) {
		fuzz_check_refusal(rc, m, err);
		return 0;
	}
	FUZZ_CHECK(m && m->format == WF_FMT_SAFETENSORS && m->alignment == 1 && m->data_offset >= 8,
		   "header fields");
	/* the reference loader's layout: tensors tile the data section exactly */
	uint64_t total = 0;
	for (size_t i = 0; i < m->n_tensors; i++) {
		FUZZ_CHECK(m->tensors[i].ndim <= WF_MAX_DIMS, "ndim");
		total += m->tensors[i].nbytes;
	}
	FUZZ_CHECK(m->data_offset + total == m->data_len, "tensors cover %llu of %llu data bytes",
		   (unsigned long long)total, (unsigned long long)(m->data_len - m->data_offset));
	exercise_model(m, fuzz_seed(data, size));
	wf_model_free(m);
	return 0;
}
