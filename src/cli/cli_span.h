/* cli_span.h - how convert puts a range of model.safetensors into its
 * output file.
 *
 * convert's time is the kernel filling the output's pages (docs/
 * performance.md, "Convert vs cp").  Measured side by side, what made it
 * cheaper: decoding a step at a time into a small buffer (on a huge page
 * where the kernel gives one) that is still in the cache when pwrite copies
 * it, rather than 16 MiB at once; copying the bytes of tensors stored as
 * they are (F32 in a float32 output, stored views) file to file with
 * copy_file_range, which skips the model's mapping and the buffer; and one
 * writer at a time, since the output's inode lock serialises the writes
 * anyway and the kernel's spinning on it only burns the other core.
 * Writing through a shared mapping of the output was 4-8x slower on tmpfs,
 * and one thread that only writes, fed by the decoders, 20-25% slower: its
 * pwrite copies each step out of another core's cache ("Convert and the
 * write floor").
 */
#ifndef CLI_SPAN_H
#define CLI_SPAN_H

#include "cli/cli_int.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Bytes decoded per pwrite, and the buffer that holds them (a huge page). */
#define CLI_SPAN_STEP ((size_t)1 << 20)
#define CLI_SPAN_BUF ((size_t)2 << 20)

/* What the workers of one convert share. */
struct cli_span_out {
	struct cli_session *s;
	uint32_t node;               /* model.safetensors */
	int fd;                      /* the output, open for writing */
	pthread_mutex_t lock;        /* one writer at a time */
	atomic_bool no_copy;         /* copy_file_range refused once: decode everything */
};

/* A buffer of CLI_SPAN_BUF bytes for one worker (free() it), or NULL. */
char *cli_span_buf(void);

/* Writes bytes [off, off + len) of model.safetensors to the same place in
 * o->fd, through buf (from cli_span_buf).  Stored bytes of one part go by
 * copy_file_range (a refusal of it falls back to the guarded read, for
 * good), the part's identity checked after each copy as a read does;
 * everything else through wf_live_read and pwrite.  Returns WF_OK, the
 * read's error (WF_ERR_CHANGED when the model changed), or WF_ERR_IO with
 * *werr the write's errno. */
enum wf_err cli_span_write(struct cli_span_out *o, char *buf, uint64_t off, size_t len, int *werr);

/* For tests (WEIGHTFS_CONVERT_NO_COPY=1 in the environment): never use
 * copy_file_range, so the fallback can be compared with it. */
bool cli_span_copy_off(void);

#endif
