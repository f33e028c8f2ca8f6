/* wf_hash.c - SipHash-1-3 (Aumasson and Bernstein), keyed per table. */
#include "base/wf_hash.h"
#include "base/wf_common.h"

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

void wf_hash_key_init(struct wf_hash_key *key)
{
	if (getrandom(key, sizeof *key, GRND_NONBLOCK) == (ssize_t)sizeof *key)
		return;
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	key->k0 = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ULL ^ (uint64_t)(uintptr_t)key;
	key->k1 = (uint64_t)ts.tv_sec * 0xC2B2AE3D27D4EB4FULL ^ (uint64_t)(uintptr_t)&ts;
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
