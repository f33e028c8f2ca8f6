/* cli_stats.h - weightfs stats [--json] [-o dtype=T] MODEL [NAME|PREFIX ...] */
#ifndef CLI_STATS_H
#define CLI_STATS_H

/* Runs the stats command (argv[1] is "stats"); returns the exit code:
 * 0, or the code of the first failure (cli.h), every selected tensor
 * that could be summarised printed first. */
int cli_stats(int argc, char **argv);

#endif
