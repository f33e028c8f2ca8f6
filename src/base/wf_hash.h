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

/* Fills key from the kernel's random source (getrandom); falls back to
 * clock and address bits if that fails, which still defeats precomputed
 * collisions. */
void wf_hash_key_init(struct wf_hash_key *key);

/* SipHash-c-d of p[0..n) under key (c compression and d finalization
 * rounds); exposed so the tests can check it against the published
 * SipHash-2-4 vectors. */
uint64_t wf_siphash(const struct wf_hash_key *key, const void *p, size_t n, int c, int d);

/* SipHash-1-3 of p[0..n) under key. */
uint64_t wf_hash(const struct wf_hash_key *key, const void *p, size_t n);

/* A fixed-capacity map from byte strings (not copied: they must outlive
 * it) to uint32_t values, under a random key. */
struct wf_names {
	const uint8_t **s;
	size_t *n;
	uint32_t *val;
	size_t cap;               /* a power of two, more than twice the names it was made for */
	struct wf_hash_key key;
};

#define WF_NAMES_NONE UINT32_MAX

/* Makes room for `count` names; false when out of memory. */
bool wf_names_init(struct wf_names *set, size_t count);

/* Adds s[0..n) with value v and returns WF_NAMES_NONE, or, when s is
 * already there, leaves it and returns its value.  At most the `count`
 * given to wf_names_init may be added. */
uint32_t wf_names_put(struct wf_names *set, const void *s, size_t n, uint32_t v);

/* The value of s[0..n), or WF_NAMES_NONE. */
uint32_t wf_names_get(const struct wf_names *set, const void *s, size_t n);

void wf_names_free(struct wf_names *set);

#endif
