/* wf_api_int.h - what the library's own files (wf_api.c, wf_stack.c) share;
 * nothing here is exported (weightfs.h is the API). */
#ifndef WF_API_INT_H
#define WF_API_INT_H

#include <stddef.h>

/* Writes the message fmt into err[0..errlen) (when err and errlen are
 * given) and returns code: the one way a weightfs_* call fails. */
int wf_api_fail(char *err, size_t errlen, int code, const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
