/* cli.h - the commands of the weightfs program besides mounting: ls, info,
 * cat, convert, stats, diff and verify (docs/weightfs.1, COMMANDS).  Part of the command-line
 * program, not of the library: these print and choose exit codes. */
#ifndef CLI_H
#define CLI_H

#include "base/wf_common.h"
#include "cli/cli_opt.h"
#include "mount/wf_mount.h"

#include <stdbool.h>
#include <stdio.h>

/* True if arg is the name of a command ("ls", "info", "cat", ...):
 * only an exact match counts, so a model file named like one is mounted
 * as ./ls. */
bool cli_is_command(const char *arg);

/* Writes each command's usage line ("       PROG ls [--json] ... MODEL\n"),
 * for the program's -h. */
void cli_usage(FILE *f, const char *prog);

/* Writes the commands' names, comma-separated, for messages. */
void cli_command_names(FILE *f);

/* Writes command cmd's options, one spelling a line with " ARG" after one
 * that takes a value (weightfs --list-options CMD, which the bash
 * completion reads); -1 when cmd is no command, else 0. */
int cli_list_options(FILE *f, const char *cmd);

/* Reads -o dtype=`dtype` (NULL: f32) into *want; on an unknown name says
 * so in one line and returns EXIT_USAGE, else 0. */
int cli_dtype(const char *dtype, enum wf_vk *want);

/* Opens MODEL as the mount shows it (wf_mount_open) under -o dtype=`dtype`
 * (NULL: f32) and the tree options; on failure says why in one line
 * ("weightfs: MODEL: ...") and returns the exit code, else 0. */
int cli_open(struct wf_mount *mt, const char *model, const char *dtype, const struct wf_tree_opts *opts);

/* Runs the command argv[1] with its arguments; returns the exit code. */
int cli_main(int argc, char **argv);

/* One of the remote sources' -o options (remote_chunk=, remote_streams=,
 * remote_mem=, cache=, cache_size=, offline; docs/remote.md), the mount's
 * and every command's: 1 when taken (wf_remote_conf set), 0 when arg is
 * none of them, -1 with one line in msg when its value is wrong. */
int cli_remote_opt(const char *arg, char *msg, size_t len);

/* Puts the staged Hub source's weight files into the Hugging Face cache
 * layout (docs/remote.md), each put together from the chunk cache and
 * checked against its sha256: every one when all is false (weightfs
 * fetch), else only those wholly in the chunk cache (a mount's end).
 * Returns how many blobs are there now; failures only leave a file out. */
size_t cli_hub_keep(bool all);

#endif
