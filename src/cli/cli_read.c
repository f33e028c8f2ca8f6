/* cli_read.c - what the commands share to read MODEL's files: opening it as
 * the mount does, -o's list, the guarded read of a file to stdout, and the
 * message for a read that failed. */
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "arch/wf_arch.h"
#include "net/wf_cache.h"
#include "net/wf_source.h"
#include "view/wf_gguf_file.h"
#include "view/wf_view.h"

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

/* ---------------------------------------------------------------- opening MODEL */

int cli_dtype(const char *dtype, enum wf_vk *want)
{
	*want = WF_VK_F32;
	if (dtype && !wf_view_parse(dtype, want)) {
		fprintf(stderr, "weightfs: -o dtype=%s: unknown output type (f32, f16, bf16 or stored)\n",
			cli_path(dtype));
		return EXIT_USAGE;
	}
	return 0;
}

int cli_open(struct wf_mount *mt, const char *model, const char *dtype, const struct wf_tree_opts *opts)
{
	char err[WF_ERRLEN];
	enum wf_vk want;
	memset(mt, 0, sizeof *mt);
	if (cli_dtype(dtype, &want) != 0)
		return EXIT_USAGE;
	/* hf:// and https:// (net/wf_source.h): staged as a folder the loaders
	 * read as any, the mount and every command alike */
	char *staged = NULL;
	enum wf_err rc = wf_source_is_remote(model) ? wf_source_stage(model, &staged, err) : WF_OK;
	if (rc == WF_OK && wf_source_warning())
		fprintf(stderr, "weightfs: %s\n", wf_source_warning());
	if (rc == WF_OK)
		rc = wf_mount_open(mt, staged ? staged : model, want, opts, err);
	free(staged);
	if (rc != WF_OK) {
		fprintf(stderr, "weightfs: %s: %s\n", cli_path(model), err);
		return cli_exit_code(rc);
	}
	return 0;
}

static int open_session(const struct cli_opts *o, struct cli_session *s)
{
	memset(s, 0, sizeof *s);
	uint32_t ft = WF_FTYPE_AUTO;
	if (o->o.gguf)
		wf_arch_parse_ftype(o->o.gguf, &ft);
	int ret = cli_open(&s->mt, o->pos[0], o->o.dtype,
			   &(struct wf_tree_opts){.npy = o->o.npy, .preview = o->o.preview, .gguf_set = o->o.gguf != NULL,
						  .gguf = ft});
	if (ret != 0)
		return ret;
	if (wf_live_init(&s->lv, s->mt.m, wf_files_seg, s->mt.t, cli_notice, NULL) != WF_OK) {
		fprintf(stderr, "weightfs: %s: out of memory\n", cli_path(o->pos[0]));
		return EXIT_NOMEM;
	}
	s->live = true;
	return 0;
}

int cli_session_main(const struct cli_cmd *c, int argc, char **argv,
		     int (*fn)(struct cli_session *s, const struct cli_opts *o))
{
	struct cli_opts o = {.length = UINT64_MAX};
	struct cli_session s = {0};
	int n_pos = 0, ret = cli_parse(c, argc, argv, &o, &n_pos);
	if (ret != 0)
		return ret == CLI_HELP ? 0 : ret;
	for (int k = 0; k < n_pos; k++)
		o.pos[k] = argv[2 + k];
	if ((ret = open_session(&o, &s)) == 0)
		ret = fn(&s, &o);
	if (s.live)
		wf_live_free(&s.lv);
	wf_mount_close(&s.mt);
	return ret;
}

/* ---------------------------------------------------------------- -o */

int cli_remote_opt(const char *arg, char *msg, size_t len)
{
	const char *v = strchr(arg, '=');
	v = v ? v + 1 : "";
	uint64_t x = 0;
	bool sized = wf_size_parse(v, &x) && x > 0;
	if (strcmp(arg, "offline") == 0) {
		wf_remote_conf.offline = true;
	} else if (strncmp(arg, "cache=", 6) == 0) {
		if (!*v) {
			snprintf(msg, len, "-o cache=: give a folder, or none");
			return -1;
		}
		/* kept for the daemon, which changes to / once mounted: wf_source_stage
		 * makes it absolute before then */
		static char dir[4096];
		snprintf(dir, sizeof dir, "%s", v);
		wf_remote_conf.cache_off = strcmp(v, "none") == 0;
		wf_remote_conf.cache = wf_remote_conf.cache_off ? NULL : dir;
	} else if (strncmp(arg, "cache_size=", 11) == 0) {
		if (!sized) {
			snprintf(msg, len, "-o %s: a size in bytes, K, M, G or T (10G by default)", cli_path(arg));
			return -1;
		}
		wf_remote_conf.cache_size = x;
	} else if (strncmp(arg, "remote_streams=", 15) == 0 || strncmp(arg, "remote_chunk=", 13) == 0 ||
		   strncmp(arg, "remote_mem=", 11) == 0) {
		if (sized && arg[7] == 's' && x <= 64)
			wf_remote_conf.streams = (unsigned)x;
		else if (sized && arg[7] == 'c' && x >= (64u << 10) && x <= (256u << 20) && x % 4096 == 0)
			wf_remote_conf.chunk = x;
		else if (sized && arg[7] == 'm' && x <= (1ull << 40))
			wf_remote_conf.mem = x;
		else {
			snprintf(msg, len, "-o %s: remote_chunk= takes 64K to 256M in whole 4K pages, "
				 "remote_streams= 1 to 64, remote_mem= a size", cli_path(arg));
			return -1;
		}
	} else {
		return 0;
	}
	return 1;
}

/* One item of -o's list; 0, or EXIT_USAGE with msg filled. */
static int o_item(struct cli_o *o, unsigned takes, char *opt, char *msg, size_t len)
{
	int r = cli_remote_opt(opt, msg, len);
	if (r != 0)
		return r < 0 ? EXIT_USAGE : 0;
	if (strncmp(opt, "dtype=", 6) == 0) {
		if (o->dtype && strcmp(o->dtype, opt + 6) != 0) {
			snprintf(msg, len, "-o dtype=%s and dtype=%s contradict each other", cli_path(o->dtype),
				 cli_path(opt + 6));
			return EXIT_USAGE;
		}
		o->dtype = opt + 6;
	} else if (strncmp(opt, "gguf=", 5) == 0 && (takes & CLI_O_GGUF)) {
		uint32_t ft;
		if (!wf_arch_parse_ftype(opt + 5, &ft) || (o->gguf && strcmp(o->gguf, opt + 5) != 0)) {
			snprintf(msg, len, "-o gguf=%s: not a type model.gguf is made in (auto, f32, f16, bf16, or a "
				 "llama-quantize type: q8_0, q4_k_m, ...)%s", cli_path(opt + 5),
				 o->gguf ? ", or it contradicts another" : "");
			return EXIT_USAGE;
		}
		o->gguf = opt + 5;
	} else if (strcmp(opt, "npy") == 0 && (takes & CLI_O_NPY)) {
		o->npy = true;
	} else if (strcmp(opt, "preview") == 0 && (takes & CLI_O_PREVIEW)) {
		o->preview = true;
	} else if ((takes & CLI_O_VIEWS) &&
		   (strcmp(opt, "npy") == 0 || strcmp(opt, "suffix") == 0 || strcmp(opt, "preview") == 0)) {
		/* a view of the same values */
	} else if (!(takes & CLI_O_ANY)) {
		snprintf(msg, len, "-o %s: not an option of this command", cli_path(opt));
		return EXIT_USAGE;
	}
	return 0;
}

int cli_o_list(const struct cli_opt *opt, char *arg, void *vals, char *msg, size_t len)
{
	struct cli_o *o = (struct cli_o *)((char *)vals + opt->off);
	char *save = NULL;
	for (char *item = strtok_r(arg, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
		int rc = o_item(o, opt->data, item, msg, len);
		if (rc != 0)
			return rc;
	}
	return 0;
}
