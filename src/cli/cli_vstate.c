/* cli_vstate.c - weightfs verify's lists: the problems found and the
 * digests to make (cli_vstate.h). */
#include "cli/cli_vstate.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

const char *v_strerror(int err_no)
{
	return err_no == V_NOT_FILE	 ? "not a regular file"
	       : err_no == V_NOT_FETCHED ? "could not be fetched from the server"
					 : strerror(err_no);
}

void v_problem(struct v_state *st, enum v_sev sev, const char *kind, const char *file, const char *tensor,
	       size_t tensor_len, const char *fmt, ...)
{
	struct v_prob *np = wf_grow(st->probs, st->n_probs, &st->cap_probs, sizeof *np, 16);
	if (!np) {
		st->oom = true;
		return;
	}
	st->probs = np;
	struct v_prob *p = &st->probs[st->n_probs];
	memset(p, 0, sizeof *p);
	p->sev = sev;
	p->kind = kind;
	char line[WF_ERRLEN];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(line, sizeof line, fmt, ap);
	va_end(ap);
	p->msg = strdup(line);
	p->file = file ? strdup(file) : NULL;
	if (tensor && (p->tensor = malloc(tensor_len + 1))) {
		memcpy(p->tensor, tensor, tensor_len);
		p->tensor[tensor_len] = '\0';
		p->tensor_len = tensor_len;
	}
	if (!p->msg || (file && !p->file) || (tensor && !p->tensor)) {
		free(p->msg);
		free(p->file);
		free(p->tensor);
		st->oom = true;
		return;
	}
	st->n_probs++;
}

size_t v_add_job(struct v_state *st, enum v_job_kind kind, const char *path, int fd, uint64_t off, uint64_t len,
		 size_t ref)
{
	struct v_job *nj = wf_grow(st->jobs, st->n_jobs, &st->cap_jobs, sizeof *nj, 64);
	if (!nj) {
		st->oom = true;
		return SIZE_MAX;
	}
	st->jobs = nj;
	struct v_job *j = &st->jobs[st->n_jobs];
	memset(j, 0, sizeof *j);
	j->kind = kind;
	j->path = path;
	j->fd = fd;
	j->off = off;
	j->len = len;
	j->ref = ref;
	if (kind != V_RANGE_SHA256) { /* its size orders it among the others */
		struct stat s;
		j->len = stat(path, &s) == 0 ? (uint64_t)s.st_size : 0;
	}
	return st->n_jobs++;
}
