/* cli_int.h - what the command files share (cli.c, cli_read.c,
 * cli_show.c, cli_convert.c, cli_stats.c); private to src/cli. */
#ifndef CLI_INT_H
#define CLI_INT_H

#include "cli/cli_opt.h"
#include "mount/wf_files.h"
#include "mount/wf_mount.h"
#include "view/wf_live.h"

#include <stdbool.h>
#include <stdint.h>

/* Bytes one read or one worker's piece of convert covers: large enough
 * that taking a piece costs little per byte (convert writes each piece
 * in 1 MiB steps, cli_span.h). */
#define CLI_PIECE (16u << 20)

/* What -o gave a command: the mount's options that change what the files
 * hold (cli_o_list); the strings lie in argv. */
struct cli_o {
	const char *dtype;    /* -o dtype=T, or NULL */
	const char *gguf;     /* -o gguf=T, or NULL */
	bool npy, preview;
};

/* What -o accepts besides dtype= (a -o option's `data`). */
enum {
	CLI_O_GGUF = 1 << 0,     /* gguf=T */
	CLI_O_NPY = 1 << 1,      /* npy */
	CLI_O_PREVIEW = 1 << 2,  /* preview */
	CLI_O_VIEWS = 1 << 3,    /* npy, suffix and preview taken and ignored: they change no value */
	CLI_O_ANY = 1 << 4,      /* every other option taken and ignored: the output is the same under it */
};

/* The -o option's callback: a comma-separated list into the struct cli_o
 * at the option's `off`. */
int cli_o_list(const struct cli_opt *opt, char *arg, void *vals, char *msg, size_t len);

/* ls, info, cat and convert's values. */
struct cli_opts {
	const char *pos[2];   /* MODEL, then TENSOR or OUT */
	bool json, force;
	struct cli_o o;
	uint64_t offset, length; /* cat's range; length UINT64_MAX: to the end */
};

/* The model as a mount would serve it, and the mount's read path. */
struct cli_session {
	struct wf_mount mt;
	struct wf_live lv;
	bool live;
};

/* Parses argv by c's table into a struct cli_opts, opens MODEL as a mount
 * would serve it, runs fn and closes; returns the exit code. */
int cli_session_main(const struct cli_cmd *c, int argc, char **argv,
		     int (*fn)(struct cli_session *s, const struct cli_opts *o));

/* The commands, each declared beside its code and listed in cli.c's
 * commands[]: weightfs stats (cli_stats.c) returns 0, or the code of the
 * first failure, every selected tensor that could be summarised printed
 * first; diff (cli_diff.c) 0 when A and B are the same and fully paired,
 * 1 when they differ, 2 on trouble, as diff(1); verify (cli_verify.c) 0
 * when MODEL is intact, 1 when something differs from what it should
 * be, 2 when it could not be checked, as cmp(1). */
extern const struct cli_cmd cli_cmd_ls, cli_cmd_info, cli_cmd_cat, cli_cmd_convert, cli_cmd_stats, cli_cmd_diff,
	cli_cmd_verify, cli_cmd_fetch;

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
