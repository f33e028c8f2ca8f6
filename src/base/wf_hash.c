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

bool wf_names_init(struct wf_names *set, size_t count)
{
	size_t cap = 16;
	while (cap < count * 2 + 1)
		cap *= 2;
	set->s = calloc(cap, sizeof *set->s);
	set->n = calloc(cap, sizeof *set->n);
	set->val = calloc(cap, sizeof *set->val);
	set->cap = cap;
	wf_hash_key_init(&set->key);
	return set->s && set->n && set->val;
}

static size_t names_slot(const struct wf_names *set, const void *s, size_t n)
{
	size_t i = (size_t)wf_hash(&set->key, s, n) & (set->cap - 1);
	while (set->s[i] && !(set->n[i] == n && memcmp(set->s[i], s, n) == 0))
		i = (i + 1) & (set->cap - 1);
	return i;
}

uint32_t wf_names_put(struct wf_names *set, const void *s, size_t n, uint32_t v)
{
	size_t i = names_slot(set, s, n);
	if (set->s[i])
		return set->val[i];
	set->s[i] = s;
	set->n[i] = n;
	set->val[i] = v;
	return WF_NAMES_NONE;
}

uint32_t wf_names_get(const struct wf_names *set, const void *s, size_t n)
{
	size_t i = names_slot(set, s, n);
	return set->s[i] ? set->val[i] : WF_NAMES_NONE;
}

void wf_names_free(struct wf_names *set)
{
	free(set->s);
	free(set->n);
	free(set->val);
	set->s = NULL;
	set->n = NULL;
	set->val = NULL;
}
