/* wf_usage.c - st_size, st_blocks and statfs figures (wf_usage.h). */
#include "mount/wf_usage.h"
#include "mount/wf_files.h"

/* ext4's on-disk entry: 8 bytes of header, then the name, padded to 4. */
static uint64_t dirent_bytes(uint64_t name_len)
{
	return (8 + name_len + 3) & ~(uint64_t)3;
}

static uint64_t round_fragment(uint64_t n)
{
	return (n + WF_FRAGMENT - 1) / WF_FRAGMENT * WF_FRAGMENT;
}

uint64_t wf_usage_size(const struct wf_tree *t, uint32_t idx)
{
	const struct wf_node *nd = &t->nodes[idx];
	switch (nd->kind) {
	case WF_NODE_DIR:
		break;
	default:
		return wf_files_size(t, idx);
	}
	uint64_t n = dirent_bytes(1) + dirent_bytes(2); /* "." and ".." */
	for (uint32_t i = 0; i < nd->n_children; i++)
		n += dirent_bytes(t->nodes[nd->children[i]].name_len);
	return round_fragment(n);
}

uint64_t wf_usage_blocks(const struct wf_tree *t, uint32_t idx)
{
	return round_fragment(wf_usage_size(t, idx)) / 512;
}

void wf_usage_get(const struct wf_tree *t, struct wf_usage *out)
{
	uint64_t frags = 0;
	for (uint32_t i = 0; i < t->n_nodes; i++)
		frags += round_fragment(wf_usage_size(t, i)) / WF_FRAGMENT;
	out->frsize = WF_FRAGMENT;
	out->blocks = frags;
	out->files = t->n_nodes;
}
