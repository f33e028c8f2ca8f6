/* fuzz_vocab.c - libFuzzer target: a model folder's tokenizer files
 * turned into GGUF tokenizer key/values (src/model/wf_vocab*.c, wf_spm.c).
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   [0]      the route (mod 8: llama, qwen, gemma2, gemma3, phi3, gpt2, glm, gemma)
 *   [1..2]   vocab_size: a u16, 0xffff meaning absent (-1)
 *   then     records until the end of the input, each
 *              [1]   file id (mod 9), naming one field of wf_vocab_files
 *              [2]   u16 length (cut to what is left of the input)
 *              [len] the file's bytes
 *            a later record for the same file replaces the earlier one
 *
 * A refusal must be FORMAT, UNSUP or NOMEM with one printable line; a
 * success must finish into a header the writer accepts.
 */
#include "fuzz_common.h"

#include "model/wf_gguf_w.h"
#include "model/wf_vocab.h"

#define N_FILES 9

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *p[N_FILES] = {0};
	size_t n[N_FILES] = {0};
	size_t at = 3;
	if (size < 3)
		return 0;
	while (at + 3 <= size) {
		unsigned id = data[at] % N_FILES;
		size_t len = (size_t)data[at + 1] | (size_t)data[at + 2] << 8;
		at += 3;
		if (len > size - at)
			len = size - at;
		p[id] = data + at;
		n[id] = len;
		at += len;
	}
	struct wf_vocab_files f = {
		.tokenizer_json = (const char *)p[0], .tokenizer_json_len = n[0],
		.tokenizer_config_json = (const char *)p[1], .tokenizer_config_json_len = n[1],
		.tokenizer_model = p[2], .tokenizer_model_len = n[2],
		.config_json = (const char *)p[3], .config_json_len = n[3],
		.added_tokens_json = (const char *)p[4], .added_tokens_json_len = n[4],
		.special_tokens_map_json = (const char *)p[5], .special_tokens_map_json_len = n[5],
		.merges_txt = (const char *)p[6], .merges_txt_len = n[6],
		.chat_template_jinja = (const char *)p[7], .chat_template_jinja_len = n[7],
		.chat_template_json = (const char *)p[8], .chat_template_json_len = n[8],
	};
	unsigned vs16 = (unsigned)data[1] | (unsigned)data[2] << 8;
	int64_t vs = vs16 == 0xffff ? -1 : (int64_t)vs16;
	struct wf_gguf_w w;
	char err[WF_ERRLEN];
	wf_gguf_w_init(&w);
	enum wf_err rc = wf_vocab_write(&f, (enum wf_vocab_route)(data[0] % 8), vs, &w, err);
	if (rc != WF_OK) {
		FUZZ_CHECK(rc == WF_ERR_FORMAT || rc == WF_ERR_UNSUP || rc == WF_ERR_NOMEM, "unexpected error %d", (int)rc);
		fuzz_check_one_line(rc, err);
	} else {
		char *hdr = NULL;
		size_t len = 0;
		rc = wf_gguf_w_finish(&w, &hdr, &len, err);
		FUZZ_CHECK(rc == WF_OK, "writer refused what wf_vocab wrote: %s", err);
		FUZZ_CHECK(len >= 24 && memcmp(hdr, "GGUF", 4) == 0, "header");
		free(hdr);
	}
	wf_gguf_w_free(&w);
	return 0;
}
