/* wf_names.h - a map from byte strings to indices, for the names a model
 * file fills (tensor names, keys): keyed hashing (wf_hash.h), so no file
 * can make its lookups quadratic. */
#ifndef WF_NAMES_H
#define WF_NAMES_H

#include "base/wf_hash.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* A fixed-capacity map from byte strings (not copied: they must outlive
 * it) to uint32_t values, under a random key. */
struct wf_name_slot {
	const uint8_t *s;         /* NULL: empty */
	size_t n;
	uint32_t val;
	uint32_t tag;             /* high bits of the name's hash: most probes of another name stop here */
};

struct wf_names {
	struct wf_name_slot *slot; /* [cap], one cache line or two per probe rather than three arrays */
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

/* A set of strings that live in an array of the caller's, by index: a
 * slot is 8 bytes (the index and 32 bits of the hash), so a tokenizer's
 * 128,256 tokens take a 2 MiB table rather than wf_names' 6 MiB, and a
 * probe of another string stops at the tag without reading it.  str(ctx,
 * i, &n) gives string i (it must not change while in the set). */
typedef const void *(*wf_idset_str_fn)(const void *ctx, uint32_t i, size_t *n);

struct wf_idset_slot {
	uint32_t idx1;            /* index + 1; 0: empty */
	uint32_t tag;             /* high bits of the string's hash */
};

struct wf_idset {
	struct wf_idset_slot *slot; /* [cap] */
	size_t cap;               /* a power of two, more than twice the strings it was made for */
	struct wf_hash_key key;
	wf_idset_str_fn str;
	const void *ctx;
};

/* Makes room for `count` strings (indices below UINT32_MAX - 1); false
 * when out of memory. */
bool wf_idset_init(struct wf_idset *set, size_t count, wf_idset_str_fn str, const void *ctx);

/* Adds index i, whose string is s[0..n), and returns WF_NAMES_NONE; or,
 * when an equal string is there, leaves it and returns its index.  At
 * most the `count` given to wf_idset_init may be added. */
uint32_t wf_idset_put(struct wf_idset *set, const void *s, size_t n, uint32_t i);

/* The index of a string equal to s[0..n), or WF_NAMES_NONE. */
uint32_t wf_idset_get(const struct wf_idset *set, const void *s, size_t n);

/* For a caller with many lookups to make: the hash of s[0..n), with its
 * slot's cache line fetched ahead, for wf_idset_get_h to take later (a
 * few lookups in flight hide the table's cache misses). */
uint64_t wf_idset_hash(const struct wf_idset *set, const void *s, size_t n);
/* wf_idset_put, h being s's wf_idset_hash. */
uint32_t wf_idset_put_h(struct wf_idset *set, const void *s, size_t n, uint32_t i, uint64_t h);
/* wf_idset_get, h being s's wf_idset_hash. */
uint32_t wf_idset_get_h(const struct wf_idset *set, const void *s, size_t n, uint64_t h);

void wf_idset_free(struct wf_idset *set);

#endif
