/* cli_vstate.h - what weightfs verify found and is to hash: its list of
 * problems and of digest jobs (cli_vstate.c), which the command
 * (cli_verify.c) and its look at a hub cache (cli_hub.c) both add to.
 * Private to src/cli. */
#ifndef CLI_VSTATE_H
#define CLI_VSTATE_H

#include "base/wf_buf.h"
#include "mount/wf_sha.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* How bad a problem is: the exit code it leads to (as cmp and
 * sha256sum -c): the bytes differ from what they should be, or they could
 * not be checked. */
enum v_sev {
	V_NOTE = 0,     /* said, but nothing wrong */
	V_DIFFERS = 1,
	V_TROUBLE = 2,
};

/* One thing found wrong, for the report. */
struct v_prob {
	enum v_sev sev;
	const char *kind;     /* static: "blob", "link", "refs", "open", "padding", "file", "tensor", ... */
	char *file;           /* the file it is in, or NULL; owned */
	char *tensor;         /* the tensor it is in, or NULL; owned (name_len bytes, may hold NUL) */
	size_t tensor_len;
	char *msg;            /* one line, printable; owned */
};

/* One digest to make: of a whole file, or of bytes [off, off+len) of one. */
enum v_job_kind {
	V_FILE_SHA256,  /* the whole file as it is now, however long */
	V_FILE_GIT,     /* git's blob id: SHA-1 of "blob SIZE\0" and the file */
	V_RANGE_SHA256, /* [off, off+len): a tensor's stored bytes */
};

struct v_job {
	enum v_job_kind kind;
	const char *path;     /* what to open (not owned) */
	int fd;               /* an open descriptor of it to pread, or -1 */
	const uint8_t *mem;   /* or its bytes: a remote object's memory (net/wf_remote.h), read with
			       * SIGBUS caught; NULL for a file read by pread */
	uint64_t mem_len;
	uint64_t off, len;    /* V_RANGE_SHA256; len also orders jobs, biggest first */
	size_t ref;           /* the owner's index: a blob, a part or a tensor */
	/* results */
	uint8_t sum[WF_SHA256_LEN];
	uint64_t size;        /* bytes hashed (a file's size) */
	int err_no;           /* 0, or why it could not be read (EIO, ENODATA: ends early, V_NOT_FILE) */
	bool done;
};

/* A job's err_no when what it opened is not a regular file (a FIFO or a
 * device, through a link: /dev/zero would be hashed forever). */
#define V_NOT_FILE (-1)
/* A job's err_no when a chunk of a remote object could not be fetched. */
#define V_NOT_FETCHED (-2)

/* strerror of a job's err_no, V_NOT_FILE's and V_NOT_FETCHED's too. */
const char *v_strerror(int err_no);

/* The problems found so far and the digests asked for. */
struct v_state {
	struct v_prob *probs;
	size_t n_probs, cap_probs;
	struct v_job *jobs;
	size_t n_jobs, cap_jobs;
	bool oom;
};

/* Adds a problem (file and tensor may be NULL); the message as printf
 * formats it.  A failed allocation sets st->oom. */
__attribute__((format(printf, 7, 8)))
void v_problem(struct v_state *st, enum v_sev sev, const char *kind, const char *file, const char *tensor,
	       size_t tensor_len, const char *fmt, ...);

/* Adds a job and returns its index, or SIZE_MAX when out of memory. */
size_t v_add_job(struct v_state *st, enum v_job_kind kind, const char *path, int fd, uint64_t off, uint64_t len,
		 size_t ref);

#endif
