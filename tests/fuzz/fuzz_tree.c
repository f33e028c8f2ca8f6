/* fuzz_tree.c - libFuzzer target: the naming rules (wf_tree_build) over
 * arbitrary tensor names.  The input is split at '\n' bytes into up to 64
 * distinct names (NULs and invalid UTF-8 included; repeats are dropped, as
 * the parsers refuse them); each becomes a 1-element F32 tensor.  See
 * tests/fuzz/README.md. */
#include "fuzz_common.h"

#define MAX_NAMES 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const uint8_t src[4] = {0, 0, 0x80, 0x3F};
	static uint64_t one = 1;
	struct wf_tensor *ts = calloc(MAX_NAMES, sizeof *ts);
	FUZZ_CHECK(ts, "malloc");
	size_t n = 0, from = 0;
	for (size_t i = 0; i <= size && n < MAX_NAMES; i++) {
		if (i < size && data[i] != '\n')
			continue;
		/* Both parsers refuse duplicate names; the tree may assume them
		 * unique (its "~N" rule is for hash collisions of long names). */
		bool dup = false;
		for (size_t k = 0; k < n && !dup; k++)
			dup = ts[k].name_len == i - from && memcmp(ts[k].name, data + from, i - from) == 0;
		if (dup) {
			from = i + 1;
			continue;
		}
		struct wf_tensor *t = &ts[n++];
		t->name_len = i - from;
		t->name = malloc(t->name_len + 1);
		FUZZ_CHECK(t->name, "malloc");
		memcpy(t->name, data + from, t->name_len);
		t->name[t->name_len] = '\0';
		t->type = WF_T_F32;
		t->ndim = 1;
		t->shape = &one;
		t->offset = 0;
		t->part = 0;
		FUZZ_CHECK(wf_tensor_sizes(t, true, NULL) == WF_OK, "sizes");
		from = i + 1;
	}
	/* one part, from a buffer: tensors.json gives no "file" */
	struct wf_part part = {.data = src, .len = sizeof src, .fd = -1};
	struct wf_model m = {.format = (size & 1) ? WF_FMT_GGUF : WF_FMT_SAFETENSORS,
			     .data = src, .data_len = sizeof src, .version = 3, .alignment = 1,
			     .tensors = ts, .n_tensors = n, .metadata_json = (char *)"{}\n",
			     .metadata_json_len = 3, .parts = &part, .n_parts = 1};
	struct wf_tree *tr;
	char err[WF_ERRLEN];
	if (wf_tree_build(&tr, &m, err) == WF_OK) {
		fuzz_check_tree(&m, tr);
		/* every tensor's path leads back to it, one component at a time */
		struct wf_buf path = {0};
		for (size_t i = 0; i < n; i++) {
			path.len = 0;
			wf_tree_path(tr, tr->tensor_node[i], &path);
			FUZZ_CHECK(!path.oom, "oom");
			uint32_t dir = 0;
			size_t s = 0;
			for (size_t j = 0; j <= path.len; j++) {
				if (j < path.len && path.data[j] != '/')
					continue;
				dir = wf_tree_lookup(tr, dir, path.data + s, j - s);
				FUZZ_CHECK(dir != WF_NO_NODE, "tensor %zu: path '%s' does not resolve", i, path.data);
				s = j + 1;
			}
			FUZZ_CHECK(dir == tr->tensor_node[i], "tensor %zu: path '%s' resolves elsewhere", i,
				   path.data);
			/* rule 8: openable whatever the name (few components, short path) */
			size_t comps = 1;
			for (size_t j = 0; j < path.len; j++)
				comps += path.data[j] == '/';
			FUZZ_CHECK(comps <= tr->max_dirs + 1 && tr->max_dirs <= WF_TREE_MAX_DIRS &&
					   path.len <= WF_TREE_DIR_BYTES + 255,
				   "tensor %zu: path of %zu bytes and %zu components", i, path.len, comps);
		}
		wf_buf_free(&path);
		wf_tree_free(tr);
	}
	for (size_t i = 0; i < n; i++)
		free(ts[i].name);
	free(ts);
	return 0;
}
