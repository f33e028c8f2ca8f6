/* wf_watch.h - kernel change notification on a model's parts.
 *
 * The identity check (wf_model_check) compares stat fields, and one
 * sequence beat it: link the file (the link count moves), rewrite bytes
 * in place, set the modification time back: only the change time moved,
 * and a moved link count explains that.  So each part also carries an
 * inotify watch for IN_MODIFY, which every write and truncation through
 * any descriptor raises, whatever the times say afterwards.  A part with
 * no watch (inotify unavailable, or out of watches) gets the strict rule:
 * any change time that moved is a change.  Only parts that kept their
 * descriptor are watched, at most WF_WATCH_MAX and a quarter of the
 * user's fs.inotify.max_user_watches: one whose descriptor was closed is
 * checked through its path, which always finds a linked file, so the
 * strict rule misses nothing there; and a model of 100,000 parts must
 * not take every watch the user has.
 */
#ifndef WF_WATCH_H
#define WF_WATCH_H

#include "base/wf_common.h"
#include "model/wf_part.h"

#include <stdbool.h>
#include <stdint.h>

struct wf_watch;

/* Watches one model takes at most. */
#define WF_WATCH_MAX 4096

/* Watches each of parts[0..n_parts) that has a file (best effort: a part
 * that cannot be watched is left without, and wf_watch_part says so).
 * NULL when out of memory. */
struct wf_watch *wf_watch_new(const struct wf_part *parts, uint32_t n_parts);

/* Whether part `part` has a watch; *modified gets whether the kernel has
 * reported a write to it since it was watched.  Safe from any thread. */
bool wf_watch_part(struct wf_watch *w, uint32_t part, bool *modified);

void wf_watch_free(struct wf_watch *w);

#endif
