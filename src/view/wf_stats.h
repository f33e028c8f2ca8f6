/* wf_stats.h - summary statistics of a tensor's values.
 *
 * Over the values a tensor's file holds (its view: float32 decoded by
 * default, half or bfloat16 under -o dtype=f16/bf16, the stored elements
 * under stored), read through the guarded path (wf_live_read_view) in
 * bounded chunks, so a model that changes under the reader fails the
 * statistics rather than giving wrong ones.  Sums are kept in double:
 * pairwise within a chunk, chunks merged by Chan's update in a fixed tree,
 * so the result is the same whatever the number of threads.
 */
#ifndef WF_STATS_H
#define WF_STATS_H

#include "base/wf_common.h"
#include "model/wf_model.h"
#include "view/wf_live.h"

#include <stdatomic.h>

struct wf_stats {
	uint64_t count;     /* elements */
	uint64_t finite;    /* finite elements: min .. absmax are over these */
	double min, max;    /* NaN when there is no finite element */
	double mean, std;   /* std is the population one (divides by finite) */
	double absmax;
	uint64_t zeros;     /* elements equal to 0 (either sign) */
	uint64_t nan, inf;  /* NaN and +-infinity elements */
};

/* Elements per chunk: one chunk is read, converted to double and reduced
 * at a time per thread (a few MiB of buffers each).  A multiple of every
 * block size, so no block is decoded twice. */
#define WF_STATS_CHUNK (1u << 18)

/* Whether t's view elements can be summarised: floats, integers and bool
 * (every view but complex64). */
bool wf_stats_supported(const struct wf_tensor *t);

/* Converts n view elements of t at raw into doubles at out (the exact
 * value of every float and of every integer up to 2^53). */
void wf_stats_to_double(const struct wf_tensor *t, const void *raw, size_t n, double *out);

/* Statistics of tensor t of lv->m (or a copy of one with another view,
 * wf_tensor_set_view) into *st, over nthreads threads (0: one per online
 * CPU).  *done, when not NULL, is increased by the view bytes each chunk
 * covers as it finishes (a progress meter may read it from another
 * thread).  Fails with WF_ERR_UNSUP (complex views), WF_ERR_RANGE (no
 * decoder, bytes not in the file), WF_ERR_CHANGED (a file changed) or
 * WF_ERR_NOMEM, with one line in err naming the tensor. */
enum wf_err wf_stats_tensor(struct wf_live *lv, const struct wf_tensor *t, unsigned nthreads,
			    _Atomic uint64_t *done, struct wf_stats *st, char *err);

/* Sum of v[0..n) by pairwise summation: the error grows as log n, not n. */
double wf_sum_pairwise(const double *v, size_t n);

#endif
