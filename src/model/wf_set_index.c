/* wf_set_index.c - a safetensors index (*.safetensors.index.json) and the
 * shards its weight_map names, which must agree with it both ways. */
#include "model/wf_set.h"
#include "model/wf_set_int.h"
#include "base/wf_buf.h"
#include "base/wf_names.h"
#include "model/wf_open.h"

#include <cjson/cJSON.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>


void wf_set_index_free(struct wf_set_index *ix)
{
	cJSON_Delete(ix->root);
	free(ix->text);
	free(ix->name);
	free(ix->shards);
	memset(ix, 0, sizeof *ix);
}

static int str_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* A shard name must be a plain file name in the index's folder. */
static const char *bad_shard_name(const char *s)
{
	if (!*s)
		return "is empty";
	if (strchr(s, '/'))
		return "holds a '/': shards must lie in the index's folder";
	if (strcmp(s, ".") == 0 || strcmp(s, "..") == 0)
		return "is not a file name";
	/* no model names a shard so; messages would show it escaped
	 * (wf_quote_path), not as the file it names */
	for (const unsigned char *c = (const unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c == 0x7F)
			return "holds a control character";
	return NULL;
}

/* Reads and checks index `name`: JSON, an object with a weight_map of
 * tensor name to shard file name. */
enum wf_err wf_set_index_load(struct wf_set_loader *L, const char *name, struct wf_set_index *ix)
{
	char q[96], qb[WF_QPATH];
	const char *qn = wf_quote_path(qb, sizeof qb, name); /* for messages */
	uint64_t len;
	memset(ix, 0, sizeof *ix);
	ix->name = strdup(name);
	if (!ix->name)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	enum wf_err rc = wf_set_read_small(L, name, WF_INDEX_MAX, &ix->text, &len, &ix->st);
	if (rc != WF_OK)
		return rc;
	/* cJSON ends strings at a NUL; a name holding one would silently
	 * become another name */
	if (memmem(ix->text, len, "\\u0000", 6) || memchr(ix->text, '\0', len))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: holds a NUL character", qn);
	const char *end = NULL;
	ix->root = cJSON_ParseWithLengthOpts(ix->text, len, &end, false);
	if (!ix->root) {
		const char *at = cJSON_GetErrorPtr();
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: invalid JSON near byte %td", qn,
			       at && at >= ix->text && at <= ix->text + len ? at - ix->text : (ptrdiff_t)0);
	}
	for (const char *p = end; p < ix->text + len; p++)
		if (!isspace((unsigned char)*p))
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: unexpected bytes after the JSON object at byte %td",
				       qn, p - ix->text);
	/* parsed: the tree holds copies of every string, and the bytes would
	 * only add the index's size to the set's peak memory */
	free(ix->text);
	ix->text = NULL;
	if (!cJSON_IsObject(ix->root))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: not a JSON object", qn);
	ix->weight_map = cJSON_GetObjectItemCaseSensitive(ix->root, "weight_map");
	if (!ix->weight_map)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: no weight_map", qn);
	if (!cJSON_IsObject(ix->weight_map))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map is not an object", qn);
	ix->metadata = cJSON_GetObjectItemCaseSensitive(ix->root, "metadata");
	if (ix->metadata && cJSON_IsNull(ix->metadata))
		ix->metadata = NULL;
	if (ix->metadata && !cJSON_IsObject(ix->metadata))
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: metadata is not an object", qn);

	size_t n = (size_t)cJSON_GetArraySize(ix->weight_map);
	struct wf_names shards = {0};
	if (!wf_names_init(&shards, n) || !(ix->shards = calloc(n ? n : 1, sizeof *ix->shards))) {
		wf_names_free(&shards);
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	}
	const cJSON *e;
	cJSON_ArrayForEach(e, ix->weight_map) {
		if (!cJSON_IsString(e))
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: tensor %s: the shard is not a string", qn,
				     wf_quote(q, sizeof q, e->string, strlen(e->string)));
		const char *why = rc == WF_OK ? bad_shard_name(e->valuestring) : NULL;
		if (why)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: shard %s %s", qn,
				     wf_quote(q, sizeof q, e->valuestring, strlen(e->valuestring)), why);
		if (rc != WF_OK)
			break;
		if (wf_names_put(&shards, e->valuestring, strlen(e->valuestring), ix->n_shards) == WF_NAMES_NONE)
			ix->shards[ix->n_shards++] = e->valuestring;
	}
	wf_names_free(&shards);
	if (rc != WF_OK)
		return rc;
	/* before anything is opened */
	if (ix->n_shards > WF_SET_MAX_PARTS)
		return wf_fail(L->err, WF_ERR_UNSUP, "%s: weight_map names %" PRIu32 " shards, more than the %d allowed",
			       qn, ix->n_shards, WF_SET_MAX_PARTS);
	qsort(ix->shards, ix->n_shards, sizeof *ix->shards, str_cmp);
	return WF_OK;
}

/* Whether index ix names shard `name`. */
bool wf_set_index_names(const struct wf_set_index *ix, const char *name)
{
	/* shards are sorted: a folder of many files meets an index of many
	 * shards in O(files log shards) */
	uint32_t lo = 0, hi = ix->n_shards;
	while (lo < hi) {
		uint32_t mid = lo + (hi - lo) / 2;
		int c = strcmp(ix->shards[mid], name);
		if (c == 0)
			return true;
		if (c < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	return false;
}

/* The index's weight_map as a name -> entry map; a name listed twice is
 * refused, since JSON readers keep one of two equal keys: the index would
 * lie. */
static enum wf_err index_map(struct wf_set_loader *L, const struct wf_set_index *ix, struct wf_names *map, const cJSON **entry)
{
	char q[96], qi[WF_QPATH];
	uint32_t k = 0;
	const cJSON *e;
	cJSON_ArrayForEach(e, ix->weight_map) {
		entry[k] = e;
		if (wf_names_put(map, e->string, strlen(e->string), k) != WF_NAMES_NONE)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map: tensor %s is listed twice",
				       wf_quote_path(qi, sizeof qi, ix->name),
				       wf_quote(q, sizeof q, e->string, strlen(e->string)));
		k++;
	}
	return WF_OK;
}

/* Every tensor of shard `shard` (opened as p) must be in the map, put in
 * this very shard; found[] notes the entries seen. */
static enum wf_err check_shard(struct wf_set_loader *L, const struct wf_set_index *ix, const char *shard, const struct wf_model *p,
			       const struct wf_names *map, const cJSON **entry, uint8_t *found)
{
	/* names are quoted only for a refusal: every shard of a set passes here */
	char q[96], qs[WF_QPATH], qi[WF_QPATH], qe[WF_QPATH];
	if (p->format != WF_FMT_SAFETENSORS)
		return wf_fail(L->err, WF_ERR_FORMAT, "%s: not a safetensors file", wf_quote_path(qs, sizeof qs, shard));
	for (size_t t = 0; t < p->n_tensors; t++) {
		const struct wf_tensor *tn = &p->tensors[t];
		uint32_t k = memchr(tn->name, '\0', tn->name_len) ? WF_NAMES_NONE
				: wf_names_get(map, tn->name, tn->name_len);
		if (k == WF_NAMES_NONE)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s is not in the weight_map of %s",
				       wf_quote_path(qs, sizeof qs, shard),
				       wf_quote(q, sizeof q, tn->name, tn->name_len), wf_quote_path(qi, sizeof qi, ix->name));
		if (strcmp(entry[k]->valuestring, shard) != 0)
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s is here, but %s puts it in %s",
				       wf_quote_path(qs, sizeof qs, shard),
				       wf_quote(q, sizeof q, tn->name, tn->name_len), wf_quote_path(qi, sizeof qi, ix->name),
				       wf_quote_path(qe, sizeof qe, entry[k]->valuestring));
		found[k] = 1;
	}
	return WF_OK;
}

/* What the index states and the shards can confirm: every entry found,
 * and total_size (as transformers writes it: the tensors' bytes). */
static enum wf_err check_index_claims(struct wf_set_loader *L, const struct wf_set_index *ix, struct wf_model **parts,
				      const cJSON **entry, const uint8_t *found, size_t n_map)
{
	char q[96], qe[WF_QPATH], qi[WF_QPATH];
	for (size_t k = 0; k < n_map; k++)
		if (!found[k])
			return wf_fail(L->err, WF_ERR_FORMAT, "%s: tensor %s: %s puts it here, but it is not there",
				       wf_quote_path(qe, sizeof qe, entry[k]->valuestring),
				       wf_quote(q, sizeof q, entry[k]->string, strlen(entry[k]->string)),
				       wf_quote_path(qi, sizeof qi, ix->name));
	const cJSON *ts = ix->metadata ? cJSON_GetObjectItemCaseSensitive(ix->metadata, "total_size") : NULL;
	if (!ts)
		return WF_OK;
	uint64_t sum = 0;
	for (uint32_t i = 0; i < ix->n_shards; i++)
		for (size_t t = 0; t < parts[i]->n_tensors; t++)
			sum += parts[i]->tensors[t].nbytes;
	if (cJSON_IsNumber(ts) && ts->valuedouble >= 0 && ts->valuedouble == (double)sum)
		return WF_OK;
	char *v = cJSON_PrintUnformatted(ts);
	enum wf_err rc = wf_fail(L->err, WF_ERR_FORMAT,
				 "%s: metadata.total_size is %s, but the shards' tensors hold %" PRIu64 " bytes",
				 wf_quote_path(qi, sizeof qi, ix->name), v ? v : "?", sum);
	free(v);
	return rc;
}

/* Opens the shards of a loaded index and checks them against it; `given`
 * (may be NULL) is a shard already open, named given_name. */
enum wf_err wf_set_load_index(struct wf_set_loader *L, struct wf_set_index *ix, struct wf_model *given, const char *given_name,
			      struct wf_model **out)
{
	enum wf_err rc = WF_OK;
	*out = NULL;
	size_t n_map = (size_t)cJSON_GetArraySize(ix->weight_map);
	struct wf_model **parts = calloc(ix->n_shards ? ix->n_shards : 1, sizeof *parts);
	struct wf_names map = {0};
	uint8_t *found = calloc(n_map ? n_map : 1, 1);
	const cJSON **entry = calloc(n_map ? n_map : 1, sizeof *entry);
	if (!parts || !found || !entry || !wf_names_init(&map, n_map)) {
		rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory for the index");
		goto out;
	}
	if (ix->n_shards == 0) {
		char qi[WF_QPATH];
		rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: weight_map is empty", wf_quote_path(qi, sizeof qi, ix->name));
		goto out;
	}
	if ((rc = index_map(L, ix, &map, entry)) != WF_OK)
		goto out;
	wf_set_expect(L, ix->n_shards);
	for (uint32_t i = 0; i < ix->n_shards; i++) {
		if (given && strcmp(ix->shards[i], given_name) == 0) {
			parts[i] = given;
			given = NULL;
		} else if ((rc = wf_set_open_part(L, ix->shards[i], &parts[i])) != WF_OK) {
			goto out;
		}
		if ((rc = check_shard(L, ix, ix->shards[i], parts[i], &map, entry, found)) != WF_OK)
			goto out;
	}
	if ((rc = check_index_claims(L, ix, parts, entry, found, n_map)) != WF_OK)
		goto out;
	/* every claim is checked: the lookups and weight_map (whose strings
	 * ix->shards points into) go before the merge adds its arrays, so the
	 * peak holds one copy of the names, not two (100,000 shards: 15 MiB) */
	free(found);
	free(entry);
	found = NULL;
	entry = NULL;
	wf_names_free(&map);
	free(ix->shards);
	ix->shards = NULL;
	cJSON_Delete(cJSON_DetachItemViaPointer(ix->root, (cJSON *)ix->weight_map));
	ix->weight_map = NULL;
	rc = wf_set_merge(L, parts, ix->n_shards, WF_FORM_INDEX, ix->name, ix->metadata, out);
	memset(parts, 0, ix->n_shards * sizeof *parts); /* merge took them */
	if (rc == WF_OK) {
		(*out)->has_index_st = true;
		(*out)->index_st = ix->st;
		if (!((*out)->index_path = wf_path_join(L->dir, ix->name))) {
			wf_model_free(*out);
			*out = NULL;
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
		}
	}
out:
	if (parts)
		for (uint32_t i = 0; i < ix->n_shards; i++)
			wf_model_free(parts[i]);
	wf_model_free(given);
	free(parts);
	free(found);
	free(entry);
	wf_names_free(&map);
	return rc;
}
