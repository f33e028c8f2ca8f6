/* wf_pool.c - the caller plus n - 1 threads (wf_pool.h). */
#include "base/wf_pool.h"

#include <pthread.h>
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
