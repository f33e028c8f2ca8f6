/* wf_hash.c - SipHash-1-3 (Aumasson and Bernstein), keyed per table. */
#include "base/wf_hash.h"
#include "base/wf_common.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>

#define ROTL(x, b) (((x) << (b)) | ((x) >> (64 - (b))))

#define SIPROUND                                                        \
	do {                                                            \
		v0 += v1; v1 = ROTL(v1, 13); v1 ^= v0; v0 = ROTL(v0, 32); \
		v2 += v3; v3 = ROTL(v3, 16); v3 ^= v2;                  \
		v0 += v3; v3 = ROTL(v3, 21); v3 ^= v0;                  \
		v2 += v1; v1 = ROTL(v1, 17); v1 ^= v2; v2 = ROTL(v2, 32); \
	} while (0)

/* One secret per process, from the kernel; each table's key is SipHash of
 * a counter under it.  A getrandom() per table cost 18 us, which was a
 * fifth of opening a shard of a 20,000-shard set. */
static struct wf_hash_key master;
static pthread_once_t master_once = PTHREAD_ONCE_INIT;
static atomic_uint_fast64_t tables;

static void master_init(void)
{
	if (getrandom(&master, sizeof master, GRND_NONBLOCK) == (ssize_t)sizeof master)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	master.k0 = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)&master;
	master.k1 = (uint64_t)ts.tv_sec * 0xC2B2AE3D27D4EB4FULL ^ (uint64_t)(uintptr_t)&ts;
}

void wf_hash_key_init(struct wf_hash_key *key)
{
	pthread_once(&master_once, master_init);
	uint64_t in[2] = {atomic_fetch_add(&tables, 1), 0};
	key->k0 = wf_siphash(&master, in, sizeof in, 2, 4);
	in[1] = 1;
	key->k1 = wf_siphash(&master, in, sizeof in, 2, 4);
}

uint64_t wf_siphash(const struct wf_hash_key *key, const void *p, size_t n, int c, int d)
{
	const uint8_t *s = p;
	uint64_t v0 = key->k0 ^ 0x736f6d6570736575ULL;
	uint64_t v1 = key->k1 ^ 0x646f72616e646f6dULL;
	uint64_t v2 = key->k0 ^ 0x6c7967656e657261ULL;
	uint64_t v3 = key->k1 ^ 0x7465646279746573ULL;
	size_t i = 0;

	for (; i + 8 <= n; i += 8) {
		uint64_t m = wf_le64(s + i);
		v3 ^= m;
		for (int r = 0; r < c; r++)
			SIPROUND;
		v0 ^= m;
	}
	uint64_t b = (uint64_t)n << 56;
	for (size_t j = 0; i + j < n; j++)
		b |= (uint64_t)s[i + j] << (8 * j);
	v3 ^= b;
	for (int r = 0; r < c; r++)
		SIPROUND;
	v0 ^= b;
	v2 ^= 0xff;
	for (int r = 0; r < d; r++)
		SIPROUND;
	return v0 ^ v1 ^ v2 ^ v3;
}

uint64_t wf_hash(const struct wf_hash_key *key, const void *p, size_t n)
{
	return wf_siphash(key, p, n, 1, 3);
}

uint64_t wf_fnv1a(const void *p, size_t n)
{
	const uint8_t *s = p;
	uint64_t h = 1469598103934665603ULL;
	for (size_t i = 0; i < n; i++)
		h = (h ^ s[i]) * 1099511628211ULL;
	return h;
}
