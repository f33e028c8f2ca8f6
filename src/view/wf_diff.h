/* wf_diff.h - comparing two tensors' values, and pairing tensors across
 * the GGUF and Hugging Face naming conventions.
 *
 * llama.cpp's convert_hf_to_gguf.py renames a Hugging Face checkpoint's
 * tensors (model.layers.N.self_attn.q_proj.weight -> blk.N.attn_q.weight)
 * and, for the llama family proper (LlamaModel: llama, mistral), reorders
 * the rows of q_proj and k_proj (weights and biases) for its rope: with H
 * heads (H = n_head for q, n_head_kv for k) of D rows each, the HF rows of
 * a head are [first halves of the rotary pairs, second halves], the GGUF
 * ones interleave them:
 *     GGUF row h*D + 2*i + j  =  HF row h*D + j*(D/2) + i   (i < D/2, j < 2)
 * (reshape(H, 2, D/2, ...).swapaxes(1, 2)).  Gemma's converter stores
 * 1 + w for every *norm.weight.  Qwen2, Qwen3 and Phi-3 keep rows and
 * values as they are.
 */
#ifndef WF_DIFF_H
#define WF_DIFF_H

#include "base/wf_common.h"
#include "arch/wf_arch.h"
#include "model/wf_model.h"
#include "view/wf_live.h"

#include <stdatomic.h>

/* How B's elements line up with A's. */
struct wf_diff_map {
	uint64_t perm_heads; /* 0: element i of A is element i of B; else rows permuted (above) */
	bool a_is_gguf;      /* with perm_heads: A's rows are in GGUF order, B's in HF order (else the reverse) */
	double a_add, b_add; /* added to every value of A, of B (rounded to float32) before comparing */
};

struct wf_diff {
	uint64_t count;      /* elements */
	uint64_t finite;     /* elements finite in both: the four below are over these */
	double max_abs;      /* largest |a - b| */
	double rmse;         /* sqrt(mean((a - b)^2)) */
	double rel_rmse;     /* rmse / sqrt(mean(a^2)); NaN when that is 0 */
	double cosine;       /* sum(a*b) / sqrt(sum(a^2) * sum(b^2)); NaN when either is 0 */
	uint64_t differ;     /* elements with a != b, counting NaN == NaN (and +0 == -0) */
};

/* Compares tensor ta of la with tb of lb, which must hold as many elements
 * (the caller checks the shapes), over nthreads threads (0: every CPU),
 * in chunks of WF_STATS_CHUNK elements per thread; sums in double,
 * compensated, merged in a fixed order (the result does not depend on
 * nthreads).  *done, when not NULL, grows by A's view bytes as chunks
 * finish.  Fails like wf_stats_tensor, and with WF_ERR_UNSUP when map's
 * permutation does not fit the rows (count not a multiple of 2 * heads). */
enum wf_err wf_diff_tensors(struct wf_live *la, const struct wf_tensor *ta, struct wf_live *lb,
			    const struct wf_tensor *tb, const struct wf_diff_map *map, unsigned nthreads,
			    _Atomic uint64_t *done, struct wf_diff *out, char *err);

#endif
