/* wf_prefetch.c - the next source range of a tensor, asked for early
 * (wf_prefetch.h). */
#include "wf_prefetch.h"

#include <sys/mman.h>
#include <unistd.h>

#include "wf_types.h"
#include "wf_view.h"

/* The kernel caps one WILLNEED request at the file's read-ahead window
 * (force_page_cache_ra: max(io_pages, ra_pages), 128 KiB on a FUSE mount
 * by default), so a longer range is asked for in pieces of this size. */
#define STEP ((uint64_t)128 << 10)

void wf_prefetch_next(const struct wf_tensor *t, const uint8_t *map, uint64_t map_len, uint64_t off, size_t len)
{
	const struct wf_type *ty = wf_type_get(t->type);
	uint64_t next, ncount;
	long page = sysconf(_SC_PAGESIZE);

	/* a read that ends the view has no next range */
	if (!ty || !map || len < WF_PREFETCH_MIN_READ || page <= 0 || off >= t->size || len >= t->size - off)
		return;
	/* the blocks after this read's, as many as WF_PREFETCH_AHEAD reads of
	 * this length would decode; wf_view_span clips them to the view */
	wf_view_span(t, off + len, (uint64_t)len * WF_PREFETCH_AHEAD, &next, &ncount);
	if (ncount == 0)
		return;
	/* source bytes: block counts times block bytes stay below t->nbytes,
	 * which the model's checks bound by the file size */
	uint64_t start = t->offset + next * ty->bytes;
	uint64_t end = t->offset + (next + ncount) * ty->bytes;
	if (end > t->offset + t->nbytes)
		end = t->offset + t->nbytes;
	if (end > map_len)
		end = map_len;
	start -= start % (uint64_t)page;
	for (uint64_t p = start; p < end; p += STEP) {
		uint64_t n = end - p < STEP ? end - p : STEP;
		(void)madvise((void *)(uintptr_t)(map + p), (size_t)n, MADV_WILLNEED);
	}
}
