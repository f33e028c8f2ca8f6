/* wf_arch_reg.c - the registry: every architecture model.gguf and hf/ are
 * made for (wf_arch_int.h).  Adding one is adding its file and a line
 * here (docs/gguf.md, "Adding an architecture"). */
#include "arch/wf_arch.h"
#include "arch/wf_arch_int.h"

/* conversion/__init__.py's registrations in scope, in the order they are
 * looked up: a dense row before the mixture of experts of the same
 * general.architecture (Mixtral's "llama" is read back as Llama). */
const struct wf_arch *const wf_arch_rows[] = {
	&wf_arch_llama, &wf_arch_mistral3, &wf_arch_smollm3, &wf_arch_granite, &wf_arch_olmo2,
	&wf_arch_qwen2, &wf_arch_qwen3, &wf_arch_gemma, &wf_arch_gemma2, &wf_arch_gemma3,
	&wf_arch_phi3, &wf_arch_mixtral, &wf_arch_qwen2moe, &wf_arch_qwen3moe, &wf_arch_olmoe,
	&wf_arch_deepseek2, &wf_arch_gptoss, &wf_arch_glm4moe,
};
const size_t wf_arch_n_rows = WF_ARRAY_LEN(wf_arch_rows);

_Static_assert(WF_ARRAY_LEN(wf_arch_rows) <= WF_ARCH_ROWS_MAX, "WF_ARCH_ROWS_MAX");
