/* wf_pool.h - spreading one job over threads.
 *
 * Every parallel loop in weightfs (statistics, diffs, ranged reads and
 * stacks in the library) has the same shape: the caller's thread works
 * too, n - 1 threads are started beside it, and a thread that cannot be
 * started must not lose its share.  This is that shape, once.
 */
#ifndef WF_POOL_H
#define WF_POOL_H

#include "base/wf_common.h"

#include <stddef.h>
#include <stdint.h>

/* The most threads one job uses. */
#define WF_POOL_MAX 256

/* How many threads a job of `units` independent units uses when `asked`
 * were asked for (0: one per online CPU): at least 1, at most
 * WF_POOL_MAX and at most `units`. */
unsigned wf_pool_threads(unsigned asked, unsigned long long units);

/* Runs fn(arg_k) for k in [0, n), n <= WF_POOL_MAX, where arg_k is
 * (char *)args + k * stride (stride 0: every call gets args).  arg_0 runs
 * on the caller's thread, the others on threads of their own; an arg whose
 * thread could not be started runs on the caller's thread after arg_0.
 * Returns when every call has returned. */
void wf_pool_run(unsigned n, void *(*fn)(void *), void *args, size_t stride);

/* A job of n chunks each giving a partial result, merged in a fixed
 * pairwise tree (part 0 with 1, 2 with 3, then 0 with 2, ...) so that the
 * total is the same whatever thread ran which chunk (statistics and diffs
 * of floating-point sums).  Each worker gets scratch buffers of its own
 * from scratch(ctx) (NULL: out of memory), freed by scratch_free. */
struct wf_chunks {
	uint64_t n;                                     /* chunks */
	void *parts;                                    /* n partial results of part_size bytes, zeroed or set up by the caller */
	size_t part_size;
	void *ctx;
	void *(*scratch)(void *ctx);
	void (*scratch_free)(void *scratch);
	enum wf_err (*chunk)(void *ctx, uint64_t c, void *part, void *scratch);
	void (*merge)(void *into, const void *from);
};

/* Runs chunk(ctx, c, part c, scratch) for every c in [0, n) on
 * wf_pool_threads(nthreads, n) threads, stopping at the first failure,
 * then merges every part into part 0.  Returns the first failure (parts
 * then unmerged), WF_ERR_NOMEM when a worker's scratch could not be
 * made, else WF_OK. */
enum wf_err wf_pool_chunks(unsigned nthreads, const struct wf_chunks *job);

#endif
