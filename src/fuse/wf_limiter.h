/* wf_limiter.h - keeping a daemon's messages few.
 *
 * A mount can meet the same failure once per request: a thread that
 * cannot be created, a reply the kernel refuses.  Printed each time, that
 * is tens of thousands of lines a second.  The limiter decides which
 * messages are worth a line; the caller's emit function prints them.
 */
#ifndef WF_LIMITER_H
#define WF_LIMITER_H

#include <pthread.h>
#include <stdint.h>

#define WF_LOG_LINE 512          /* longest message kept whole; longer ones are cut */
#define WF_LOG_WINDOW 60         /* seconds */
#define WF_LOG_WINDOW_LINES 20   /* lines emitted per window at most */

typedef void (*wf_emit_fn)(void *ctx, const char *line);

struct wf_limiter {
	pthread_mutex_t mu;
	char last[WF_LOG_LINE];   /* the latest distinct message */
	uint64_t last_count;      /* times in a row it came */
	uint64_t last_said;       /* last_count when a line last spoke of it */
	uint64_t window_start;    /* seconds, on the caller's clock */
	unsigned window_lines;    /* lines emitted in this window */
	uint64_t suppressed;      /* lines held back in this window */
};

/* Initialises l; returns 0 or an errno value. */
int wf_limiter_init(struct wf_limiter *l);
void wf_limiter_destroy(struct wf_limiter *l);

/* Passes msg (one line; a trailing newline is dropped) through l at time
 * now (seconds on any monotonic clock), calling emit(ctx, line) for each
 * line to print, from under l's lock, so emit must not log through l.
 * A message equal to the one before is repeated only as "MSG (repeated
 * N times)" when N reaches 10, 100, 1000, ...; when a different message
 * follows, a count of the unsaid repeats comes first.  At most
 * WF_LOG_WINDOW_LINES lines go out per WF_LOG_WINDOW seconds; the first
 * line of the next window counts those held back.  Thread-safe. */
void wf_limiter_log(struct wf_limiter *l, uint64_t now, const char *msg, wf_emit_fn emit, void *ctx);

#endif
