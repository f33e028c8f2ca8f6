/* wf_names.c - open addressing over keyed SipHash-1-3 (wf_names.h). */
#include "base/wf_names.h"
#include "base/wf_common.h"

#include <stdlib.h>
#include <string.h>

bool wf_names_init(struct wf_names *set, size_t count)
{
	size_t cap = 16;
	while (cap < count * 2 + 1)
		cap *= 2;
	set->slot = calloc(cap, sizeof *set->slot);
	set->cap = cap;
	wf_hash_key_init(&set->key);
	return set->slot != NULL;
}

static size_t names_slot(const struct wf_names *set, const void *s, size_t n, uint32_t *tag)
{
	uint64_t h = wf_hash(&set->key, s, n);
	size_t i = (size_t)h & (set->cap - 1);
	*tag = (uint32_t)(h >> 32);
	for (const struct wf_name_slot *e = &set->slot[i]; e->s; e = &set->slot[i]) {
		if (e->tag == *tag && e->n == n && memcmp(e->s, s, n) == 0)
			break;
		i = (i + 1) & (set->cap - 1);
	}
	return i;
}

uint32_t wf_names_put(struct wf_names *set, const void *s, size_t n, uint32_t v)
{
	uint32_t tag;
	struct wf_name_slot *e = &set->slot[names_slot(set, s, n, &tag)];
	if (e->s)
		return e->val;
	*e = (struct wf_name_slot){.s = s, .n = n, .val = v, .tag = tag};
	return WF_NAMES_NONE;
}

uint32_t wf_names_get(const struct wf_names *set, const void *s, size_t n)
{
	uint32_t tag;
	const struct wf_name_slot *e = &set->slot[names_slot(set, s, n, &tag)];
	return e->s ? e->val : WF_NAMES_NONE;
}

void wf_names_free(struct wf_names *set)
{
	free(set->slot);
	set->slot = NULL;
}

bool wf_idset_init(struct wf_idset *set, size_t count, wf_idset_str_fn str, const void *ctx)
{
	size_t cap = 16;
	while (cap < count * 2 + 1)
		cap *= 2;
	set->slot = calloc(cap, sizeof *set->slot);
	set->cap = cap;
	set->str = str;
	set->ctx = ctx;
	wf_hash_key_init(&set->key);
	return set->slot != NULL;
}

/* The slot holding a string equal to s[0..n) (hash h), or the empty one
 * where it would go; linear probing, the table at most half full. */
static size_t idset_slot(const struct wf_idset *set, const void *s, size_t n, uint64_t h)
{
	size_t i = (size_t)h & (set->cap - 1), m;
	uint32_t tag = (uint32_t)(h >> 32);
	for (const struct wf_idset_slot *e = &set->slot[i]; e->idx1; e = &set->slot[i]) {
		if (e->tag == tag) {
			const void *o = set->str(set->ctx, e->idx1 - 1, &m);
			if (m == n && memcmp(o, s, n) == 0)
				break;
		}
		i = (i + 1) & (set->cap - 1);
	}
	return i;
}

uint64_t wf_idset_hash(const struct wf_idset *set, const void *s, size_t n)
{
	uint64_t h = wf_hash(&set->key, s, n);
	__builtin_prefetch(&set->slot[(size_t)h & (set->cap - 1)]);
	return h;
}

uint32_t wf_idset_get_h(const struct wf_idset *set, const void *s, size_t n, uint64_t h)
{
	const struct wf_idset_slot *e = &set->slot[idset_slot(set, s, n, h)];
	return e->idx1 ? e->idx1 - 1 : WF_NAMES_NONE;
}

uint32_t wf_idset_put(struct wf_idset *set, const void *s, size_t n, uint32_t i)
{
	return wf_idset_put_h(set, s, n, i, wf_hash(&set->key, s, n));
}

uint32_t wf_idset_put_h(struct wf_idset *set, const void *s, size_t n, uint32_t i, uint64_t h)
{
	struct wf_idset_slot *e = &set->slot[idset_slot(set, s, n, h)];
	if (e->idx1)
		return e->idx1 - 1;
	*e = (struct wf_idset_slot){.idx1 = i + 1, .tag = (uint32_t)(h >> 32)};
	return WF_NAMES_NONE;
}

uint32_t wf_idset_get(const struct wf_idset *set, const void *s, size_t n)
{
	return wf_idset_get_h(set, s, n, wf_hash(&set->key, s, n));
}

void wf_idset_free(struct wf_idset *set)
{
	free(set->slot);
	set->slot = NULL;
}
