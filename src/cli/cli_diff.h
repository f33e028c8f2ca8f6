/* cli_diff.h - weightfs diff [--json] [-o dtype=T] A B */
#ifndef CLI_DIFF_H
#define CLI_DIFF_H

/* Runs the diff command (argv[1] is "diff"); returns diff(1)'s status:
 * 0 when every tensor pairs and the pairs hold the same values, 1 when
 * they differ, 2 (or another non-zero code of cli.h) on trouble. */
int cli_diff(int argc, char **argv);

#endif
