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
