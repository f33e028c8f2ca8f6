/* fuzz_hftok.c - libFuzzer target: the hf/ tokenizer files made from
 * arbitrary GGUF bytes (src/model/wf_hf_tok*.c).
 *
 * The input is the GGUF file.  wf_hf_tok_make runs on wf_gguf_parse's model
 * when the file parses (the tokenizer reads the key/values through the
 * parser's index, wf_gguf_kv.h, whose getters check every position again),
 * and on a model holding only the bytes and no index, which it must refuse.
 * A refusal must be UNSUP or NOMEM with one printable line and no file; a
 * success must give three JSON files cJSON reads.
 */
#include "fuzz_common.h"

#include "model/wf_hf_tok.h"

static void check_json(const char *p, size_t n)
{
	if (!p || strlen(p) != n)
		abort();
	cJSON *j = cJSON_ParseWithLength(p, n);
	if (!j)
		abort();
	cJSON_Delete(j);
}

static void one(const struct wf_model *m)
{
	struct wf_hf_tok t;
	char why[WF_ERRLEN] = "";
	enum wf_err e = wf_hf_tok_make(m, &t, why);
	if (e != WF_OK) {
		if ((e != WF_ERR_UNSUP && e != WF_ERR_NOMEM) || !why[0] || t.tokenizer_json || t.tokenizer_model)
			abort();
		for (const char *p = why; *p; p++)
			if ((unsigned char)*p < 0x20)
				abort();
		return;
	}
	check_json(t.tokenizer_json, t.tokenizer_json_len);
	check_json(t.tokenizer_config_json, t.tokenizer_config_json_len);
	check_json(t.special_tokens_map_json, t.special_tokens_map_json_len);
	wf_hf_tok_free(&t);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct wf_model raw = {.format = WF_FMT_GGUF, .data = data, .data_len = size};
	one(&raw);
	struct wf_model *m = NULL;
	char err[WF_ERRLEN];
	if (wf_gguf_parse(&m, data, size, err) == WF_OK) {
		one(m);
		wf_model_free(m);
	}
	return 0;
}
