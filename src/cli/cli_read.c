/* cli_read.c - what the commands share to read MODEL's files: the guarded
 * read of a file to stdout, and the message for a read that failed. */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "view/wf_gguf_file.h"

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

/* The first segment of node's bytes [off, off+len) whose bytes fail alone
 * with WF_ERR_RANGE: *seg, true; false when none does (reread in pieces
 * of at most 1 MiB). */
static bool failing_seg(struct cli_session *s, uint32_t node, uint64_t off, uint64_t len, struct wf_seg *seg)
{
	size_t cap = len < ((size_t)1 << 20) ? (size_t)len : (size_t)1 << 20, got;
	char *buf = malloc(cap ? cap : 1);
	for (uint64_t at = off, end = off + len; buf && at < end;) {
		wf_files_seg(s->mt.t, node, at, seg);
		if (seg->kind == WF_SEG_NONE || seg->start + seg->len <= at)
			break;
		uint64_t stop = seg->start + seg->len < end ? seg->start + seg->len : end;
		for (; at < stop; at += got) {
			size_t n = stop - at < cap ? (size_t)(stop - at) : cap;
			if (wf_files_read(s->mt.t, &s->lv, node, at, n, buf, &got) == WF_ERR_RANGE) {
				free(buf);
				return seg->kind == WF_SEG_VIEW;
			}
			if (got == 0)
				break;
		}
		at = stop;
	}
	free(buf);
	return false;
}

int cli_read_failed(struct cli_session *s, const char *model, const char *what, uint32_t node, uint64_t off,
		    uint64_t len, enum wf_err rc)
{
	struct wf_seg seg;
	char q[96];
	if (rc == WF_ERR_RANGE && s && failing_seg(s, node, off, len, &seg) && seg.xf &&
	    (seg.xf->validate || seg.xf->quant)) {
		/* model.gguf's block that llama-quantize would not write; its source decodes */
		const struct wf_gguf_file *g = s->mt.t->gguf;
		const struct wf_tensor *t = &s->mt.m->tensors[seg.tensor];
		bool ours = g && seg.xf >= g->xf && seg.xf < g->xf + g->plan.n;
		const char *name = ours ? g->plan.t[seg.xf - g->xf].name : t->name;
		fprintf(stderr, "weightfs: %s: %s: tensor %s: cannot be made: llama-quantize refuses what it makes of "
			"it (a block whose scale, or a value, is infinite or NaN: weights near float32's range)\n",
			cli_path(model), cli_path(what), wf_quote(q, sizeof q, name, strlen(name)));
		return cli_exit_code(rc);
	}
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
			ret = cli_read_failed(s, model, what, node, off, n, rc);
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
