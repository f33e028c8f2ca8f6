/* cli_diff.c - weightfs diff (placeholder until written). */
#include "cli/cli_diff.h"
#include "cli/cli.h"

#include <stdio.h>

int cli_diff(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "weightfs diff: not yet\n");
	return 2;
}
