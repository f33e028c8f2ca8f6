/* wf_hash.h - keyed hashing for the tables a model file fills.
 *
 * Names in a model file are chosen by whoever wrote it.  With a fixed,
 * public hash they could all be made to land in one slot of an
 * open-addressing table, turning a linear parse into a quadratic one.
 * SipHash-1-3 with a key drawn per table at random keeps slots
 * unpredictable; nothing visible depends on the key (lookups only).
 */
#ifndef WF_HASH_H
#define WF_HASH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wf_hash_key {
	uint64_t k0, k1;
};

/* Fills key with a key of its own, derived from a secret the process
 * draws once from the kernel's random source (getrandom); that falls back
 * to clock and address bits if it fails, which still defeats precomputed
 * collisions.  Thread-safe. */
void wf_hash_key_init(struct wf_hash_key *key);

/* SipHash-c-d of p[0..n) under key (c compression and d finalization
 * rounds); exposed so the tests can check it against the published
 * SipHash-2-4 vectors. */
uint64_t wf_siphash(const struct wf_hash_key *key, const void *p, size_t n, int c, int d);

/* SipHash-1-3 of p[0..n) under key. */
uint64_t wf_hash(const struct wf_hash_key *key, const void *p, size_t n);

/* 64-bit FNV-1a of p[0..n): unkeyed and fixed, for what must be the same
 * in every run (the hash in a shortened file name) or where no input can
 * aim at it (the summary's few dozen buckets, compared in full). */
uint64_t wf_fnv1a(const void *p, size_t n);

#endif
