/* cli_int.h - what the command files share (cli.c, cli_read.c,
 * cli_show.c, cli_convert.c); private to src/cli. */
#ifndef CLI_INT_H
#define CLI_INT_H

#include "mount/wf_files.h"
#include "mount/wf_mount.h"
#include "view/wf_live.h"

#include <stdbool.h>
#include <stdint.h>

/* Bytes one read or one worker's piece of convert covers: large enough
 * that taking a piece costs little per byte (convert writes each piece
 * in 1 MiB steps, cli_span.h). */
#define CLI_PIECE (16u << 20)

/* A command's parsed arguments. */
struct cli_opts {
	const char *cmd;
	const char *pos[2];   /* MODEL, then TENSOR or OUT */
	int n_pos;
	bool json, force, npy, preview;
	char *dtype;          /* -o dtype=T; owned */
	char *gguf;           /* -o gguf=T (convert); owned */
	uint64_t offset, length;
	bool have_length;
};

/* The model as a mount would serve it, and the mount's read path. */
struct cli_session {
	struct wf_mount mt;
	struct wf_live lv;
	bool live;
};

/* The commands: each returns its exit code (cli.h). */
int cli_ls(struct cli_session *s, const struct cli_opts *o);
int cli_info(struct cli_session *s, const struct cli_opts *o);
int cli_cat(struct cli_session *s, const struct cli_opts *o);
int cli_convert(struct cli_session *s, const struct cli_opts *o);

/* Commands that parse their own arguments (argv[1] is the command's
 * name): weightfs stats [--json] [-o dtype=T] MODEL [NAME|PREFIX ...]
 * (cli_stats.c) and weightfs diff [--json] A B (cli_diff.c).  cli_stats
 * returns 0, or the code of the first failure, every selected tensor that
 * could be summarised printed first; cli_diff returns 0 when A and B are
 * the same and fully paired, 1 when they differ, 2 on trouble, as
 * diff(1). */
int cli_stats(int argc, char **argv);
int cli_diff(int argc, char **argv);
/* weightfs verify [--json] [--write FILE] [--against FILE] MODEL
 * (cli_verify.c): 0 when MODEL is intact, 1 when something differs from
 * what it should be, 2 when it could not be checked, as cmp(1). */
int cli_verify(int argc, char **argv);

/* Says "weightfs CMD: MESSAGE (usage: ...)" on stderr; returns EXIT_USAGE. */
__attribute__((format(printf, 2, 3)))
int cli_usage_error(const char *cmd, const char *fmt, ...);

/* A wf_notice_fn: keeps the first change a read ran into, which
 * cli_read_failed then names. */
void cli_notice(void *ctx, const char *part, const char *why);

/* Says why a read of bytes [off, off+len) of node (`what`) in MODEL
 * failed; returns the exit code.  A WF_ERR_RANGE is looked into (s not
 * NULL): the piece is read again a segment at a time, so a block of
 * model.gguf that llama-quantize would refuse is named as such rather
 * than as a type with no decoder. */
int cli_read_failed(struct cli_session *s, const char *model, const char *what, uint32_t node, uint64_t off,
		    uint64_t len, enum wf_err rc);

/* write(2) of all n bytes, again after EINTR; 0, or -1 with errno. */
int cli_write_all(int fd, const void *p, size_t n);

/* Writes bytes [off, off+len) of file node `node` to stdout through the
 * guarded read; returns the exit code. */
int cli_dump_node(struct cli_session *s, const char *model, const char *what, uint32_t node, uint64_t off,
		  uint64_t len);

/* The same for the whole root file `name` (tensors.json, metadata.json),
 * flushing stdout. */
int cli_dump_root_file(struct cli_session *s, const char *model, const char *name);

#endif
