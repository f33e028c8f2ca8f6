/* wf_unmap.c - mappings given up together, unmapped by runs (wf_unmap.h). */
#include "base/wf_unmap.h"

#include <sys/mman.h>
#include <unistd.h>

bool wf_unmap_add(struct wf_unmap *u, const void *map, uint64_t len)
{
	long ps = sysconf(_SC_PAGESIZE);
	uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
	uintptr_t lo = (uintptr_t)map, hi = lo + (uintptr_t)((len + page - 1) & ~(uint64_t)(page - 1));
	uint32_t i = 0;
	while (i < u->n_run && hi != u->run[i].lo && lo != u->run[i].hi)
		i++;
	if (i == u->n_run) {
		u->run[i].lo = lo;
		u->run[i].hi = hi;
		u->n_run++;
	} else {
		if (hi == u->run[i].lo)
			u->run[i].lo = lo;
		else
			u->run[i].hi = hi;
		/* it may close the gap between two runs (mappings given up a
		 * little out of order, by several threads): they become one */
		for (uint32_t j = 0; j < u->n_run; j++) {
			if (j == i || (u->run[j].hi != u->run[i].lo && u->run[j].lo != u->run[i].hi))
				continue;
			if (u->run[j].hi == u->run[i].lo)
				u->run[i].lo = u->run[j].lo;
			else
				u->run[i].hi = u->run[j].hi;
			u->run[j] = u->run[--u->n_run];
			break;
		}
	}
	u->n++;
	return u->n_run == WF_UNMAP_RUNS || u->n >= (u->max ? u->max : WF_UNMAP_RUNS);
}

void wf_unmap_flush(struct wf_unmap *u)
{
	for (uint32_t i = 0; i < u->n_run; i++)
		munmap((void *)u->run[i].lo, u->run[i].hi - u->run[i].lo);
	u->n_run = u->n = 0;
}
