/* cli.c - the weightfs commands besides mounting: what a mount of MODEL
 * would show, without mounting it.
 *
 * One table names every command (as git's commands[]); each entry is the
 * command's descriptor, declared beside its code with its option table
 * (cli_opt.h), from which its parsing, usage line, -h and the bash
 * completion's options all come.  Every command opens MODEL exactly as
 * the mount does and reads through the mount's one read path
 * (wf_live_read), so its bytes are the bytes of the mount's files and its
 * messages and exit codes for a bad MODEL are the mount's.  Part of the
 * command-line program: it prints and picks exit codes; the library never
 * does. */
#include "cli/cli.h"
#include "cli/cli_int.h"

#include <stdio.h>
#include <string.h>

static const struct cli_cmd *const commands[] = {
	&cli_cmd_ls, &cli_cmd_info, &cli_cmd_cat, &cli_cmd_convert, &cli_cmd_stats, &cli_cmd_diff, &cli_cmd_verify,
	&cli_cmd_fetch,
};

static const struct cli_cmd *cmd_of(const char *name)
{
	for (size_t i = 0; name && i < WF_ARRAY_LEN(commands); i++)
		if (strcmp(name, commands[i]->name) == 0)
			return commands[i];
	return NULL;
}

bool cli_is_command(const char *arg)
{
	return cmd_of(arg) != NULL;
}

void cli_usage(FILE *f, const char *prog)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(commands); i++) {
		fprintf(f, "       %s %s ", prog, commands[i]->name);
		cli_opt_usage(f, commands[i]);
		fputc('\n', f);
	}
}

void cli_command_names(FILE *f)
{
	for (size_t i = 0; i < WF_ARRAY_LEN(commands); i++)
		fprintf(f, "%s%s", i ? ", " : "", commands[i]->name);
}

int cli_list_options(FILE *f, const char *cmd)
{
	const struct cli_cmd *c = cmd_of(cmd);
	if (!c)
		return -1;
	cli_opt_list(f, c);
	return 0;
}

int cli_main(int argc, char **argv)
{
	const struct cli_cmd *c = cmd_of(argv[1]);
	return c->run(c, argc, argv);
}
