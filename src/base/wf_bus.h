/* wf_bus.h - SIGBUS from a mapping of a file that shrank.
 *
 * Models are read through read-only mappings of their files, and a file
 * that shrinks under a mapping makes every access past its new end raise
 * SIGBUS.  One process-wide handler (wf_bus_catch) serves two kinds of
 * code, per thread:
 *  - a parser reading a header sets a window over the mapping
 *    (wf_bus_window): a fault inside it maps zero pages over the rest of
 *    the window and returns, so the parser runs to its end on zeros (which
 *    it must take as it takes any bytes), and the caller, seeing
 *    wf_bus_window_end() report the fault, refuses the file;
 *  - a read sets wf_bus_jmp: a fault jumps back to it (wf_live.c).
 * Any other SIGBUS gets the default action.
 */
#ifndef WF_BUS_H
#define WF_BUS_H

#include <setjmp.h>
#include <stdbool.h>
#include <stddef.h>

/* Where a fault on this thread jumps to, or NULL. */
extern __thread sigjmp_buf *wf_bus_jmp;

/* Installs the handler, once per process; later calls return the first
 * one's result.  Returns 0, or -1 with errno set. */
int wf_bus_catch(void);

/* Starts a window over [p, p + len) of a read-only mapping, for this
 * thread; the handler must be installed. */
void wf_bus_window(const void *p, size_t len);

/* Ends this thread's window; true when a fault hit it (the window's pages
 * past the fault now read as zeros, not as the file). */
bool wf_bus_window_end(void);

#endif
