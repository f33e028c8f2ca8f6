/* tj_text.h - tensors.json of a tree, for the Check suites (header-only).
 *
 * The mount never holds tensors.json whole (mount/wf_tj.h): this reads it
 * through wf_tj_read in pieces of uneven sizes (1 byte, across every
 * group's edge, several groups at once), checks them against wf_tj_text
 * and returns the text, so every test that looks at tensors.json also
 * checks the windows a mount reads give the same bytes.
 */
#ifndef TJ_TEXT_H
#define TJ_TEXT_H

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "base/wf_buf.h"
#include "mount/wf_tj.h"
#include "mount/wf_tree.h"

/* tensors.json of t, NUL-terminated (the caller frees it); *len its bytes. */
static inline char *tj_text(const struct wf_tree *t, size_t *len)
{
	struct wf_buf whole = {0};
	wf_tj_text(t->tj, &whole);
	ck_assert(!whole.oom && wf_buf_finish(&whole));
	ck_assert_uint_eq(whole.len, t->tj_len);
	char *got = calloc(whole.len + 1, 1);
	ck_assert_ptr_nonnull(got);
	static const size_t step[] = {1, 7, 97, 4093, 65537};
	size_t off = 0;
	for (size_t k = 0; off < whole.len; k++) {
		size_t n = step[k % 5] < whole.len - off ? step[k % 5] : whole.len - off;
		ck_assert_int_eq(wf_tj_read(t->tj, off, n, got + off), WF_OK);
		off += n;
	}
	ck_assert_mem_eq(got, whole.data, whole.len);
	char one;
	ck_assert_int_eq(wf_tj_read(t->tj, whole.len, 1, &one), WF_ERR_RANGE); /* past the end */
	*len = whole.len;
	wf_buf_free(&whole);
	return got;
}

#endif
