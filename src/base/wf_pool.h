/* wf_pool.h - spreading one job over threads.
 *
 * Every parallel loop in weightfs (statistics, diffs, ranged reads and
 * stacks in the library) has the same shape: the caller's thread works
 * too, n - 1 threads are started beside it, and a thread that cannot be
 * started must not lose its share.  This is that shape, once.
 */
#ifndef WF_POOL_H
#define WF_POOL_H

#include <stddef.h>

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

#endif
