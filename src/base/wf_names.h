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

#endif
