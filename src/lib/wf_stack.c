/* wf_stack.c - weightfs_read_stack: several same-shaped tensors read into
 * one caller's buffer in parallel (all experts of a layer, a batch of
 * tensors) without an intermediate copy.  Built on the public calls only:
 * every guarantee of weightfs_read holds for each piece. */
#include "lib/weightfs.h"
#include "lib/wf_api_int.h"
#include "base/wf_buf.h"
#include "base/wf_pool.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

/* As in wf_api.c: below this many bytes per thread a thread costs more
 * than the decode it takes over. */
#define STACK_MIN_BYTES (1u << 20)

struct stack_job {
	weightfs_model *m;
	const size_t *idx;
	size_t n;
	int dtype;
	uint8_t *buf;
	size_t stride;
	unsigned per_read; /* threads of each weightfs_read_parallel */
	pthread_mutex_t lock;
	size_t next;       /* the next tensor to take */
	size_t fail_k;     /* the lowest k that failed, n if none */
	int fail_rc;
	char fail_msg[512];
};

static void *stack_worker(void *arg)
{
	struct stack_job *j = arg;
	for (;;) {
		pthread_mutex_lock(&j->lock);
		size_t k = j->next < j->n && j->fail_k == j->n ? j->next++ : j->n;
		pthread_mutex_unlock(&j->lock);
		if (k == j->n)
			return NULL;
		char msg[sizeof j->fail_msg];
		size_t got = 0;
		int rc = weightfs_read_parallel(j->m, j->idx[k], j->dtype, 0, j->stride, j->buf + k * j->stride, &got,
						j->per_read, msg, sizeof msg);
		if (rc == WEIGHTFS_OK && got != j->stride) {
			rc = WEIGHTFS_ERANGE;
			snprintf(msg, sizeof msg, "tensor %zu: read %zu of %zu bytes", j->idx[k], got, j->stride);
		}
		if (rc != WEIGHTFS_OK) {
			pthread_mutex_lock(&j->lock);
			if (k < j->fail_k) {
				j->fail_k = k;
				j->fail_rc = rc;
				memcpy(j->fail_msg, msg, sizeof msg);
			}
			pthread_mutex_unlock(&j->lock);
		}
	}
}

/* Every tensor has the first one's shape and element type and takes
 * stride bytes; checked before any read so that a mismatch writes nothing. */
static int stack_check(weightfs_model *m, const size_t *idx, size_t n, int dtype, size_t stride, char *err,
		       size_t errlen)
{
	struct weightfs_tensor_info first, ti;
	char q[96], q0[96];
	for (size_t k = 0; k < n; k++) {
		int rc = weightfs_tensor_info(m, idx[k], dtype, k ? &ti : &first, err, errlen);
		if (rc != WEIGHTFS_OK)
			return rc;
		const struct weightfs_tensor_info *t = k ? &ti : &first;
		wf_quote(q, sizeof q, t->name, t->name_len);
		if (k && (t->ndim != first.ndim || strcmp(t->dtype, first.dtype) != 0 ||
			  memcmp(t->shape, first.shape, sizeof t->shape[0] * t->ndim) != 0)) {
			wf_quote(q0, sizeof q0, first.name, first.name_len);
			return wf_api_fail(err, errlen, WEIGHTFS_EINVAL,
					  "tensor %s: its shape or dtype differs from tensor %s's", q, q0);
		}
		if (t->size != stride)
			return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "tensor %s: %llu bytes, not the stride %zu", q,
					  (unsigned long long)t->size, stride);
	}
	return WEIGHTFS_OK;
}

WEIGHTFS_API int weightfs_read_stack(weightfs_model *m, const size_t *idx, size_t n, int dtype, void *buf,
				     size_t stride, unsigned nthreads, char *err, size_t errlen)
{
	if (!m || (n && (!idx || !buf)))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_read_stack: m, idx and buf must not be NULL");
	if (n && stride > SIZE_MAX / n)
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_read_stack: %zu tensors of %zu bytes overflow",
				  n, stride);
	int rc = stack_check(m, idx, n, dtype, stride, err, errlen);
	if (rc != WEIGHTFS_OK || n == 0 || stride == 0)
		return rc;
	nthreads = wf_pool_threads(nthreads, n * stride / STACK_MIN_BYTES);
	/* fewer tensors than threads: each of n workers splits its tensor */
	unsigned workers = n < nthreads ? (unsigned)n : nthreads;
	struct stack_job j = {.m = m, .idx = idx, .n = n, .dtype = dtype, .buf = buf, .stride = stride,
			      .per_read = nthreads / workers, .next = 0, .fail_k = n};
	if (pthread_mutex_init(&j.lock, NULL) != 0)
		return wf_api_fail(err, errlen, WEIGHTFS_ENOMEM, "weightfs_read_stack: cannot create a lock");
	/* workers share j: one whose thread cannot start finds nothing left */
	wf_pool_run(workers, stack_worker, &j, 0);
	pthread_mutex_destroy(&j.lock);
	if (j.fail_k < n)
		return wf_api_fail(err, errlen, j.fail_rc, "%s", j.fail_msg);
	return WEIGHTFS_OK;
}
