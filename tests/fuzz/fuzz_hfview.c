/* fuzz_hfview.c - libFuzzer target: hf/ made from arbitrary GGUF bytes
 * (src/view/wf_hf_file.c, src/arch/wf_arch_hf.c: config.json from the
 * key/values, the tensors' HF names, the q/k rows put back in HF's order).
 *
 * The input is the GGUF file.  When it parses, wf_hf_file_new makes hf/
 * in float32 and bfloat16: a refusal must be one printable line; config.json
 * and generation_config.json must be JSON, model.safetensors' header must
 * be JSON naming tensors within the file, and every byte of it must read
 * through a wf_live (segments tiling the file, reads of the length asked).
 */
#include "fuzz_common.h"
#include "fuzz_made.h"

#include "view/wf_hf_file.h"

#include <inttypes.h>

static void check_json(const char *p, size_t n)
{
	FUZZ_CHECK(p && strlen(p) == n, "text of %zu bytes with a NUL", n);
	cJSON *j = cJSON_ParseWithLength(p, n);
	FUZZ_CHECK(j, "not JSON: %.200s", p);
	cJSON_Delete(j);
}

/* model.safetensors' header: its 8-byte length, then JSON, inside the file. */
static void check_st_header(const struct wf_gguf_file *g)
{
	FUZZ_CHECK(g->header_len >= 8, "header of %zu bytes", g->header_len);
	uint64_t n = wf_le64((const uint8_t *)g->header);
	FUZZ_CHECK(n == g->header_len - 8, "header length %" PRIu64 " of %zu", n, g->header_len);
	cJSON *j = cJSON_ParseWithLength(g->header + 8, (size_t)n);
	FUZZ_CHECK(j, "header not JSON");
	const cJSON *t;
	cJSON_ArrayForEach(t, j)
	{
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(t, "data_offsets");
		if (strcmp(t->string, "__metadata__") == 0)
			continue;
		FUZZ_CHECK(cJSON_GetArraySize(o) == 2, "%s: data_offsets", t->string);
		double lo = cJSON_GetArrayItem(o, 0)->valuedouble, hi = cJSON_GetArrayItem(o, 1)->valuedouble;
		FUZZ_CHECK(lo <= hi && hi <= (double)(g->size - g->header_len), "%s: [%g, %g) of %" PRIu64, t->string,
			   lo, hi, g->size - g->header_len);
	}
	cJSON_Delete(j);
}

static void one(const struct wf_model *m, enum wf_vk vk)
{
	struct wf_hf_file *h = NULL;
	char why[WF_ERRLEN] = "";
	enum wf_err rc = wf_hf_file_new(m, vk, &h, why);
	if (rc != WF_OK) {
		FUZZ_CHECK(!h, "a refusal that made hf/");
		made_why(rc, why);
		return;
	}
	if (h->config_json)
		check_json(h->config_json, h->config_len);
	if (h->gen_json)
		check_json(h->gen_json, h->gen_len);
	if (h->st) {
		check_st_header(h->st);
		made_read_all(m, h->st);
	}
	wf_hf_file_free(h);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	if (wf_gguf_parse(&m, data, size, err) != WF_OK)
		return 0;
	one(m, WF_VK_F32);
	one(m, WF_VK_BF16);
	wf_model_free(m);
	return 0;
}
