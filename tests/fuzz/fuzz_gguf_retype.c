/* fuzz_gguf_retype.c - libFuzzer target: model.gguf of a GGUF retyped or
 * quantized on read (src/view/wf_gguf_file.c, src/arch/wf_arch_gguf.c,
 * wf_arch_quant.c, the quant pieces of src/view/wf_live.c).
 *
 * The input is the GGUF file.  When it parses, wf_gguf_file_new makes
 * model.gguf for one file type chosen by the input's last byte (f16, bf16,
 * f32, q8_0, q4_k_m, q6_k, q2_k, iq4_xs, q4_0-pure): a refusal must be one
 * printable line; a made file must start with a GGUF header that parses
 * again and must read whole through a wf_live (fuzz_made.h).
 */
#include "fuzz_common.h"
#include "fuzz_made.h"

#include "arch/wf_arch.h"

#include <inttypes.h>

static const char *const types[] = {"f16", "bf16", "f32", "q8_0", "q4_k_m", "q6_k", "q2_k", "iq4_xs", "q4_0-pure"};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	if (!size || wf_gguf_parse(&m, data, size, err) != WF_OK)
		return 0;
	uint32_t ftype;
	const char *name = types[data[size - 1] % WF_ARRAY_LEN(types)];
	FUZZ_CHECK(wf_arch_parse_ftype(name, &ftype), "%s does not parse", name);
	struct wf_gguf_file *g = NULL;
	char why[WF_ERRLEN] = "";
	enum wf_err rc = wf_gguf_file_new(m, ftype, &g, why);
	if (rc != WF_OK) {
		FUZZ_CHECK(!g, "a refusal that made model.gguf");
		made_why(rc, why);
	} else {
		FUZZ_CHECK(g->header_len >= 24 && memcmp(g->header, "GGUF", 4) == 0, "header of %zu bytes",
			   g->header_len);
		made_read_all(m, g);
		wf_gguf_file_free(g);
	}
	wf_model_free(m);
	return 0;
}
