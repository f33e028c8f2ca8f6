/* wf_pool.c - the caller plus n - 1 threads (wf_pool.h). */
#include "base/wf_pool.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <unistd.h>

unsigned wf_pool_threads(unsigned asked, unsigned long long units)
{
	unsigned n = asked;
	if (n == 0) {
		long c = sysconf(_SC_NPROCESSORS_ONLN);
		n = c > 0 ? (unsigned)(c < WF_POOL_MAX ? c : WF_POOL_MAX) : 1;
	}
	if (n > WF_POOL_MAX)
		n = WF_POOL_MAX;
	if (n > units)
		n = (unsigned)units;
	return n ? n : 1;
}

void wf_pool_run(unsigned n, void *(*fn)(void *), void *args, size_t stride)
{
	pthread_t tid[WF_POOL_MAX];
	bool started[WF_POOL_MAX] = {false};
	if (n > WF_POOL_MAX)
		n = WF_POOL_MAX;
	for (unsigned k = 1; k < n; k++)
		started[k] = pthread_create(&tid[k], NULL, fn, (char *)args + k * stride) == 0;
	if (n)
		fn(args);
	for (unsigned k = 1; k < n; k++) {
		if (started[k])
			pthread_join(tid[k], NULL);
		else
			fn((char *)args + k * stride);
	}
}

struct chunk_run {
	const struct wf_chunks *job;
	_Atomic uint64_t next;
	_Atomic int rc; /* the first failure, WF_OK while none */
};

static void fail_once(struct chunk_run *r, enum wf_err rc)
{
	int ok = WF_OK;
	atomic_compare_exchange_strong(&r->rc, &ok, (int)rc);
}

static void *chunk_worker(void *arg)
{
	struct chunk_run *r = arg;
	const struct wf_chunks *j = r->job;
	void *scratch = j->scratch ? j->scratch(j->ctx) : NULL;
	if (j->scratch && !scratch)
		fail_once(r, WF_ERR_NOMEM);
	while (atomic_load(&r->rc) == WF_OK) {
		uint64_t c = atomic_fetch_add(&r->next, 1);
		if (c >= j->n)
			break;
		enum wf_err rc = j->chunk(j->ctx, c, (char *)j->parts + c * j->part_size, scratch);
		if (rc != WF_OK)
			fail_once(r, rc);
	}
	if (scratch && j->scratch_free)
		j->scratch_free(scratch);
	return NULL;
}

enum wf_err wf_pool_chunks(unsigned nthreads, const struct wf_chunks *job)
{
	struct chunk_run r = {.job = job};
	atomic_init(&r.next, 0);
	atomic_init(&r.rc, WF_OK);
	if (job->n == 0)
		return WF_OK;
	wf_pool_run(wf_pool_threads(nthreads, job->n), chunk_worker, &r, 0);
	enum wf_err rc = (enum wf_err)atomic_load(&r.rc);
	if (rc != WF_OK)
		return rc;
	char *p = job->parts;
	for (uint64_t w = 1; w < job->n; w *= 2)
		for (uint64_t i = 0; i + w < job->n; i += 2 * w)
			job->merge(p + i * job->part_size, p + (i + w) * job->part_size);
	return WF_OK;
}
