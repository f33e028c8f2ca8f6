/* wf_set_split.c - a split GGUF: PREFIX-NNNNN-of-MMMMM.gguf parts found by
 * llama.cpp's naming, each validated alone, then the split keys checked
 * across them (wf_set.h). */
#include "model/wf_set.h"
#include "model/wf_set_int.h"
#include "base/wf_buf.h"
#include "model/wf_open.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum wf_err wf_set_split_limit(struct wf_set_loader *L, const char *name, const char *ext)
{
	size_t plen;
	unsigned long no, of;
	char qn[WF_QPATH];
	if (wf_set_split_name(name, ext, &plen, &no, &of) && of > WF_SET_MAX_PARTS)
		return wf_fail(L->err, WF_ERR_UNSUP, "%s: the name says part %lu of %lu, more than the %d parts "
			       "weightfs takes", wf_quote_path(qn, sizeof qn, name), no, of, WF_SET_MAX_PARTS);
	return WF_OK;
}

/* `given` (named `name`) has split.count > 1: open the whole set. */
/* The part's name must say where it is, as its split keys do: that is
 * how the other parts are found. */
static enum wf_err check_split_name(struct wf_set_loader *L, const struct wf_model *given, const char *name, size_t *plen,
				    unsigned long *no, unsigned long *of)
{
	uint64_t count = (uint64_t)given->split_count;
	char qb[WF_QPATH];
	const char *qn = wf_quote_path(qb, sizeof qb, name);
	if (!wf_set_split_name(name, ".gguf", plen, no, of))
		return wf_fail(L->err, WF_ERR_FORMAT,
			       "%s: split.count is %" PRIu64 ", but the name does not follow PREFIX-%%05d-of-%%05d.gguf, "
			       "so the other parts cannot be found", qn, count);
	if (count > WF_SET_MAX_PARTS)
		return wf_fail(L->err, WF_ERR_UNSUP, "%s: split.count is %" PRIu64 ", more than the %d parts weightfs takes",
			       qn, count, WF_SET_MAX_PARTS);
	if (given->split_no < 0)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: split.count is %" PRIu64 ", but split.no is missing", qn, count);
	if (*of != count || *no != (uint64_t)given->split_no + 1)
		return wf_fail(L->err, WF_ERR_FORMAT,
			       "%s: the name says part %lu of %lu, but split.no is %" PRId64 " and split.count %" PRIu64
			       " (split.no counts from 0)", qn, *no, *of, given->split_no, count);
	return WF_OK;
}

/* Part i of count, opened from file pn, is a GGUF of this set; the name
 * is quoted only for a refusal, since every part of a large set passes. */
static enum wf_err check_part(struct wf_set_loader *L, const struct wf_model *p, const char *pn, uint64_t i,
			      uint64_t count)
{
	char q[WF_QPATH];
	if (p->format != WF_FMT_GGUF)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: not a GGUF file", wf_quote_path(q, sizeof q, pn));
	if (p->split_count < 0)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: has no split.count, so it is no part of this set of %" PRIu64,
			       wf_quote_path(q, sizeof q, pn), count);
	if (p->split_count != (int64_t)count)
		return wf_fail(L->err, WF_ERR_FORMAT,
			       "%s: belongs to another split set: split.count is %" PRId64 ", not %" PRIu64,
			       wf_quote_path(q, sizeof q, pn), p->split_count, count);
	if (p->split_no != (int64_t)i)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: split.no is %" PRId64 ", expected %" PRIu64,
			       wf_quote_path(q, sizeof q, pn), p->split_no, i);
	return WF_OK;
}

enum wf_err wf_set_load_split(struct wf_set_loader *L, struct wf_model *given, const char *name, struct wf_model **out)
{
	size_t plen;
	unsigned long no, of;
	*out = NULL;
	uint64_t count = (uint64_t)given->split_count;
	char qn[WF_QPATH], qs[WF_QPATH];
	enum wf_err rc = check_split_name(L, given, name, &plen, &no, &of);
	if (rc != WF_OK) {
		wf_model_free(given);
		return rc;
	}
	struct wf_model **parts = calloc(count, sizeof *parts);
	if (!parts) {
		wf_model_free(given);
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory for %" PRIu64 " parts", count);
	}
	parts[no - 1] = given;
	wf_set_expect(L, count);
	for (uint64_t i = 0; i < count && rc == WF_OK; i++) {
		if (parts[i])
			continue;
		char *pn = wf_set_part_name(name, plen, (unsigned long)i + 1, of, name + strlen(name) - 5);
		if (!pn) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
			break;
		}
		rc = wf_set_open_part(L, pn, &parts[i]);
		if (rc == WF_OK)
			rc = check_part(L, parts[i], pn, i, count);
		free(pn);
	}
	/* gguf-split writes the set's split.tensors.count into every part: a
	 * part that states another number comes from another set, which says
	 * more than a total that does not add up */
	const struct wf_model *stated = NULL;
	for (uint64_t i = 0; i < count && rc == WF_OK; i++) {
		if (parts[i]->split_tensors < 0)
			continue;
		if (!stated)
			stated = parts[i];
		else if (parts[i]->split_tensors != stated->split_tensors)
			rc = wf_fail(L->err, WF_ERR_FORMAT,
				     "%s: belongs to another split set: split.tensors.count is %" PRId64 ", but %" PRId64
				     " in %s", wf_quote_path(qn, sizeof qn, parts[i]->parts[0].name), parts[i]->split_tensors,
				     stated->split_tensors, wf_quote_path(qs, sizeof qs, stated->parts[0].name));
	}
	size_t total = 0;
	for (uint64_t i = 0; i < count && rc == WF_OK; i++)
		total += parts[i]->n_tensors;
	if (rc == WF_OK && stated && (uint64_t)stated->split_tensors != total)
		rc = wf_fail(L->err, WF_ERR_FORMAT,
			     "%s: split.tensors.count is %" PRId64 ", but the %" PRIu64 " parts hold %zu tensors",
			     wf_quote_path(qs, sizeof qs, stated->parts[0].name), stated->split_tensors, count, total);
	if (rc != WF_OK) {
		for (uint64_t i = 0; i < count; i++)
			wf_model_free(parts[i]);
		free(parts);
		return rc;
	}
	rc = wf_set_merge(L, parts, (uint32_t)count, WF_FORM_SPLIT_GGUF, NULL, NULL, out);
	free(parts);
	return rc;
}
