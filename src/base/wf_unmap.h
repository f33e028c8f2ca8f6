/* wf_unmap.h - mappings given up together, unmapped by runs.
 *
 * Every munmap flushes the TLB of each CPU the process ran on: an
 * interprocessor interrupt, about 270 us a call on a 2-vCPU VM.  Unmapping
 * 20,000 small shards one call each was 40% of opening them; reading every
 * tensor of 100,000 evicted one mapping per read.  The kernel places successive
 * mappings side by side (top down), so mappings given up in the order they
 * were made form runs with nothing else between them; each run goes in one
 * call.
 */
#ifndef WF_UNMAP_H
#define WF_UNMAP_H

#include <stdbool.h>
#include <stdint.h>

/* Separate runs a batch keeps; one more that joins none fills it. */
#define WF_UNMAP_RUNS 16

struct wf_unmap {
	/* [lo, hi) of each run, page-aligned, disjoint */
	struct { uintptr_t lo, hi; } run[WF_UNMAP_RUNS];
	uint32_t n_run; /* runs in use */
	uint32_t n;     /* mappings added since the last flush */
	uint32_t max;   /* mappings a batch holds at most (0: WF_UNMAP_RUNS) */
};

/* Adds the mapping [map, map + len) (len > 0, as given to mmap) to u,
 * joining the run it touches at an edge.  The caller must not use it
 * again.  Returns true when u is full (u->max mappings, or every run in
 * use): the caller then calls wf_unmap_flush before the next add. */
bool wf_unmap_add(struct wf_unmap *u, const void *map, uint64_t len);

/* Unmaps every run of u and empties it (max stays). */
void wf_unmap_flush(struct wf_unmap *u);

#endif
