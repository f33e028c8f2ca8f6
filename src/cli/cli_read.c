/* cli_read.c - what the commands share to read MODEL's files: the guarded
 * read of a file to stdout, and the message for a read that failed. */
#include "cli/cli.h"
#include "cli/cli_int.h"

#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The first change a read ran into, for cli_read_failed's message. */
static pthread_mutex_t notice_lock = PTHREAD_MUTEX_INITIALIZER;
static char notice_msg[WF_ERRLEN];

void cli_notice(void *ctx, const char *part, const char *why)
{
	(void)ctx;
	pthread_mutex_lock(&notice_lock);
	if (!notice_msg[0])
		snprintf(notice_msg, sizeof notice_msg, "%s%s%s", part ? cli_path(part) : "", part ? ": " : "", why);
	pthread_mutex_unlock(&notice_lock);
}

int cli_read_failed(const char *model, const char *what, enum wf_err rc)
{
	if (rc == WF_ERR_CHANGED)
		fprintf(stderr, "weightfs: %s: %s since it was opened\n", cli_path(model),
			notice_msg[0] ? notice_msg : "a file of the model changed");
	else if (rc == WF_ERR_RANGE)
		fprintf(stderr, "weightfs: %s: %s: cannot be read: weightfs has no decoder for its type "
			"(-o dtype=stored shows its bytes)\n", cli_path(model), cli_path(what));
	else
		fprintf(stderr, "weightfs: %s: %s: read failed\n", cli_path(model), cli_path(what));
	return cli_exit_code(rc);
}

int cli_write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	while (n) {
		ssize_t w = write(fd, c, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

int cli_dump_node(struct cli_session *s, const char *model, const char *what, uint32_t node, uint64_t off,
		     uint64_t len)
{
	uint64_t size = wf_files_size(s->mt.t, node);
	if (off >= size)
		return 0;
	if (len > size - off)
		len = size - off;
	/* a generated file is made into the buffer: 1 MiB is plenty, and
	 * ls --json then costs no 16 MiB more than ls (peak memory) */
	size_t piece = s->mt.t->nodes[node].kind == WF_NODE_TENSOR ? CLI_PIECE : (size_t)1 << 20;
	size_t cap = len < piece ? (size_t)len : piece;
	char *buf = malloc(cap ? cap : 1);
	if (!buf) {
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	int ret = 0;
	while (len) {
		size_t n = len < cap ? (size_t)len : cap, got;
		enum wf_err rc = wf_files_read(s->mt.t, &s->lv, node, off, n, buf, &got);
		if (rc != WF_OK) {
			ret = cli_read_failed(model, what, rc);
			break;
		}
		if (got == 0)
			break;
		if (cli_write_all(STDOUT_FILENO, buf, got) != 0) {
			fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
			ret = EXIT_USAGE;
			break;
		}
		off += got;
		len -= got;
	}
	free(buf);
	return ret;
}

int cli_dump_root_file(struct cli_session *s, const char *model, const char *name)
{
	uint32_t node = wf_tree_lookup(s->mt.t, 0, name, strlen(name));
	if (node == WF_NO_NODE) { /* every tree has both; a bug */
		fprintf(stderr, "weightfs: %s: %s: missing\n", cli_path(model), cli_path(name));
		return EXIT_USAGE;
	}
	int ret = cli_dump_node(s, model, name, node, 0, UINT64_MAX);
	if (ret == 0 && fflush(stdout) != 0)
		ret = EXIT_USAGE;
	return ret;
}
