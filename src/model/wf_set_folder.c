/* wf_set_folder.c - a model folder (a Hugging Face snapshot, a hub
 * cache's models--ORG--NAME) holding exactly one model, and its sidecars. */
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
#include <dirent.h>
#include <limits.h>

/* Models named in the message for a folder that holds several. */
#define MAX_LISTED 8

enum kind { K_SKIP, K_GGUF, K_ST, K_INDEX, K_SIDE, K_BIG };

struct entry {
	char *name;
	enum kind kind;
	uint64_t size;
	int model;           /* which model found in the folder claims it, or -1 */
};

struct folder {
	struct entry *e;
	size_t n;
};

static void folder_free(struct folder *f)
{
	for (size_t i = 0; i < f->n; i++)
		free(f->e[i].name);
	free(f->e);
}

static int entry_cmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->name, ((const struct entry *)b)->name);
}

/* What a folder entry is to us.  Weights of other formats (pickles,
 * ONNX, ...) are not shown, nor big files (K_BIG: left out, and said so). */
static enum kind classify(const char *name, const struct stat *st)
{
	static const char *const other_weights[] = {".bin", ".pt", ".pth", ".onnx", ".ckpt", ".h5",
						    ".msgpack", ".pkl", ".npz", ".tflite", ".ot"};
	if (!S_ISREG(st->st_mode) || name[0] == '.')
		return K_SKIP;
	if (wf_set_ends_with(name, ".gguf"))
		return K_GGUF;
	if (wf_set_ends_with(name, ".safetensors"))
		return K_ST;
	if (wf_set_ends_with(name, ".safetensors.index.json"))
		return K_INDEX;
	for (size_t i = 0; i < WF_ARRAY_LEN(other_weights); i++)
		if (wf_set_ends_with(name, other_weights[i]))
			return K_SKIP;
	return (uint64_t)st->st_size <= WF_SIDECAR_MAX ? K_SIDE : K_BIG;
}

static enum wf_err scan(struct wf_set_loader *L, struct folder *f)
{
	DIR *d = opendir(L->dir);
	if (!d)
		return wf_fail(L->err, WF_ERR_IO, "cannot list the folder: %s", strerror(errno));
	size_t cap = 0;
	struct dirent *de;
	enum wf_err rc = WF_OK;
	while ((de = readdir(d)) != NULL) {
		if (strcmp(de->d_name, ".") == 0 || strcmp(de->d_name, "..") == 0)
			continue;
		struct stat st;
		/* follow symlinks: a hub snapshot's entries point into blobs/ */
		if (fstatat(dirfd(d), de->d_name, &st, 0) != 0)
			continue;
		struct entry *ne = wf_grow(f->e, f->n, &cap, sizeof *ne, 64);
		if (!ne) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory listing the folder");
			break;
		}
		f->e = ne;
		struct entry *e = &f->e[f->n];
		e->name = strdup(de->d_name);
		if (!e->name) {
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory listing the folder");
			break;
		}
		e->kind = classify(de->d_name, &st);
		e->size = (uint64_t)st.st_size;
		e->model = -1;
		f->n++;
	}
	closedir(d);
	if (rc == WF_OK && f->n)
		qsort(f->e, f->n, sizeof *f->e, entry_cmp);
	return rc;
}

/* A model found in a folder: its first file, what it is, and how to say it. */
struct found {
	size_t first;        /* entry index of its index or first file */
	enum kind kind;
	char label[160];
};

/* The entry named name (entries are sorted by entry_cmp), or NULL. */
static struct entry *entry_find(const struct folder *f, const char *name)
{
	const struct entry key = {.name = (char *)name};
	return f->n ? bsearch(&key, f->e, f->n, sizeof *f->e, entry_cmp) : NULL;
}

/* A split-named weight file: its entry, kind, prefix length and count. */
struct split_key {
	size_t idx;
	enum kind kind;
	size_t plen;
	unsigned long of;
	const char *name;
};

/* Orders by the set a file names: kind, prefix, count.  0: one set. */
static int set_cmp(const struct split_key *x, const struct split_key *y)
{
	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	int c = memcmp(x->name, y->name, x->plen < y->plen ? x->plen : y->plen);
	if (c != 0)
		return c;
	if (x->plen != y->plen)
		return x->plen < y->plen ? -1 : 1;
	return x->of < y->of ? -1 : x->of > y->of;
}

/* set_cmp, then the entry order: a set's files stay in folder order. */
static int split_cmp(const void *a, const void *b)
{
	const struct split_key *x = a, *y = b;
	int c = set_cmp(x, y);
	return c ? c : x->idx < y->idx ? -1 : x->idx > y->idx;
}

/* Sorts the unclaimed split-named files by (kind, prefix, count), so the
 * files of one set are one run of *keys, and sets run[entry] to the
 * index of its run's first key (SIZE_MAX for other entries).  A sort, not
 * a pairwise scan: a folder of many one-file "sets" took 48 s for 40,000
 * files that way. */
static enum wf_err split_runs(struct wf_set_loader *L, struct folder *f, struct split_key **keys, size_t **run,
			      size_t *nkeys)
{
	size_t k = 0;
	*nkeys = 0;
	*keys = malloc((f->n ? f->n : 1) * sizeof **keys);
	*run = malloc((f->n ? f->n : 1) * sizeof **run);
	if (!*keys || !*run)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory grouping the folder's files");
	for (size_t i = 0; i < f->n; i++) {
		struct entry *e = &f->e[i];
		unsigned long no;
		(*run)[i] = SIZE_MAX;
		if ((e->kind != K_GGUF && e->kind != K_ST) || e->model >= 0)
			continue;
		struct split_key *sk = &(*keys)[k];
		if (wf_set_split_name(e->name, e->kind == K_GGUF ? ".gguf" : ".safetensors", &sk->plen, &no, &sk->of)) {
			sk->idx = i, sk->kind = e->kind, sk->name = e->name;
			k++;
		}
	}
	if (k)
		qsort(*keys, k, sizeof **keys, split_cmp);
	for (size_t a = 0, b; a < k; a = b) {
		for (b = a + 1; b < k && set_cmp(&(*keys)[a], &(*keys)[b]) == 0; b++)
			;
		for (size_t j = a; j < b; j++)
			(*run)[(*keys)[j].idx] = a;
	}
	*nkeys = k;
	return WF_OK;
}

/* Notes model *n at models[*n] (when there is room) and counts it. */
static void add_model(struct found *models, size_t max, size_t *n, size_t first, enum kind kind, const char *label)
{
	if (*n < max) {
		models[*n].first = first;
		models[*n].kind = kind;
		snprintf(models[*n].label, sizeof models[*n].label, "%s", label);
	}
	(*n)++;
}

/* Each index claims the shards it names (a lookup per shard name). */
static enum wf_err claim_indexed(struct wf_set_loader *L, struct folder *f, struct found *models, size_t max, size_t *n)
{
	for (size_t i = 0; i < f->n; i++) {
		if (f->e[i].kind != K_INDEX)
			continue;
		struct wf_set_index ix;
		enum wf_err rc = wf_set_index_load(L, f->e[i].name, &ix);
		if (rc != WF_OK) {
			wf_set_index_free(&ix);
			return rc;
		}
		for (uint32_t s = 0; s < ix.n_shards; s++) {
			struct entry *e = entry_find(f, ix.shards[s]);
			if (e && e->kind == K_ST && e->model < 0)
				e->model = (int)*n;
		}
		wf_set_index_free(&ix);
		f->e[i].model = (int)*n;
		add_model(models, max, n, i, K_INDEX, f->e[i].name);
	}
	return WF_OK;
}

/* Groups the folder's weight files into models: indexes with the shards
 * they name, then split sets by name, then single files, numbered in the
 * order of their first file. */
static enum wf_err find_models(struct wf_set_loader *L, struct folder *f, struct found *models, size_t max, size_t *n)
{
	struct split_key *keys = NULL;
	size_t *run = NULL, nkeys = 0;
	*n = 0;
	enum wf_err rc = claim_indexed(L, f, models, max, n);
	if (rc == WF_OK)
		rc = split_runs(L, f, &keys, &run, &nkeys);
	for (size_t i = 0; rc == WF_OK && i < f->n; i++) {
		struct entry *e = &f->e[i];
		if ((e->kind != K_GGUF && e->kind != K_ST) || e->model >= 0)
			continue;
		char label[160];
		const char *ext = e->kind == K_GGUF ? ".gguf" : ".safetensors";
		if (run[i] == SIZE_MAX) {
			snprintf(label, sizeof label, "%s", e->name);
		} else {
			const struct split_key *a = &keys[run[i]];
			for (const struct split_key *k = a; k < keys + nkeys && set_cmp(k, a) == 0; k++)
				f->e[k->idx].model = (int)*n;
			snprintf(label, sizeof label, "%.*s-*-of-%05lu%s", (int)a->plen, e->name, a->of, ext);
		}
		e->model = (int)*n;
		add_model(models, max, n, i, e->kind, label);
	}
	free(keys);
	free(run);
	return rc;
}

/* Loads an unindexed PREFIX-NNNNN-of-MMMMM.safetensors set whose first
 * file found is entry `first`. */
static enum wf_err load_st_set(struct wf_set_loader *L, struct folder *f, size_t first, struct wf_model **out)
{
	size_t plen;
	unsigned long no, of;
	const char *name = f->e[first].name;
	*out = NULL;
	if (!wf_set_split_name(name, ".safetensors", &plen, &no, &of))
		return wf_set_open_part(L, name, out);
	enum wf_err rc0 = wf_set_split_limit(L, name, ".safetensors");
	if (rc0 != WF_OK)
		return rc0;
	struct wf_model **parts = calloc(of, sizeof *parts);
	if (!parts)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	wf_set_expect(L, of);
	enum wf_err rc = WF_OK;
	char qn[WF_QPATH];
	for (unsigned long i = 0; i < of && rc == WF_OK; i++) {
		char *pn = wf_set_part_name(name, plen, i + 1, of, name + strlen(name) - strlen(".safetensors"));
		rc = pn ? wf_set_open_part(L, pn, &parts[i]) : wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
		if (rc == WF_OK && parts[i]->format != WF_FMT_SAFETENSORS)
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: not a safetensors file", wf_quote_path(qn, sizeof qn, pn));
		free(pn);
	}
	if (rc == WF_OK)
		rc = wf_set_merge(L, parts, (uint32_t)of, WF_FORM_ST_SET, NULL, NULL, out);
	else
		for (unsigned long i = 0; i < of; i++)
			wf_model_free(parts[i]);
	free(parts);
	return rc;
}

/* Notes file `name` as left out, with why (a message "name: why"). */
static enum wf_err leave_out(struct wf_buf *left, const char *why)
{
	wf_buf_printf(left, "%s\n", why);
	return left->oom ? WF_ERR_NOMEM : WF_OK;
}

/* Whether entry e is a small file too big to hold (with `total` bytes
 * held so far): why[WF_ERRLEN] then says so.  Not shown, and said so:
 * a config.json left out without a word would read as missing. */
static bool too_big(const struct entry *e, uint64_t total, char *why)
{
	char q[WF_QPATH];
	if (e->kind == K_BIG)
		return snprintf(why, WF_ERRLEN, "%s: %" PRIu64 " bytes, more than the %u a folder's small file may have",
				wf_quote_path(q, sizeof q, e->name), e->size, WF_SIDECAR_MAX) > 0;
	if (e->kind == K_SIDE && total + e->size > WF_SIDECARS_TOTAL_MAX)
		return snprintf(why, WF_ERRLEN, "%s: past the %u bytes the folder's small files may add up to",
				wf_quote_path(q, sizeof q, e->name), WF_SIDECARS_TOTAL_MAX) > 0;
	return false;
}

/* Reads the folder's small files into m->sidecars.  One that cannot be
 * read (another user's 0600 file, one that is no longer a regular file,
 * one grown past its size when listed) or is too big to hold is no part
 * of the model: it is left out, and m->left_out says which and why
 * (WEIGHTFS.txt shows it; model.gguf is left out when it is one the
 * converter reads). */
static enum wf_err add_sidecars(struct wf_set_loader *L, struct folder *f, struct wf_model *m)
{
	uint64_t total = 0;
	struct wf_buf left = {0};
	m->sidecars = calloc(f->n ? f->n : 1, sizeof *m->sidecars);
	if (!m->sidecars)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	char *outer = L->err, why[WF_ERRLEN];
	enum wf_err rc = WF_OK;
	for (size_t i = 0; i < f->n && rc == WF_OK; i++) {
		if (too_big(&f->e[i], total, why)) {
			rc = leave_out(&left, why);
			continue;
		}
		if (f->e[i].kind != K_SIDE)
			continue;
		struct wf_sidecar *s = &m->sidecars[m->n_sidecars];
		/* held to its size when listed: the total stays what was counted */
		L->err = why;
		rc = wf_set_read_small(L, f->e[i].name, f->e[i].size, &s->data, &s->len, &s->st);
		L->err = outer;
		if (rc == WF_ERR_IO || rc == WF_ERR_UNSUP) {
			rc = leave_out(&left, why);
			continue;
		}
		if (rc != WF_OK)
			return wf_fail(L->err, rc, "%s", why);
		s->name = strdup(f->e[i].name);
		s->path = wf_path_join(L->dir, f->e[i].name);
		m->n_sidecars++;
		if (!s->name || !s->path)
			rc = WF_ERR_NOMEM;
		total += s->len;
	}
	if (rc == WF_OK && left.len && wf_buf_finish(&left)) {
		m->left_out = left.data;
		return WF_OK;
	}
	bool oom = rc != WF_OK || left.len; /* left.len here: finishing it failed */
	wf_buf_free(&left);
	return oom ? wf_fail(L->err, WF_ERR_NOMEM, "out of memory") : WF_OK;
}

/* The files of a model folder model.gguf and WEIGHTFS.txt read: the
 * config, the tokenizer's, the model card, and quantize_config.json for
 * the quantized views. */
static const char *const beside_names[] = {
	"README.md", "added_tokens.json", "chat_template.jinja", "chat_template.json", "config.json",
	"generation_config.json", "merges.txt", "quantize_config.json", "special_tokens_map.json", "tekken.json",
	"tokenizer.json", "tokenizer.model", "tokenizer_config.json",
};

enum wf_err wf_set_beside(struct wf_set_loader *L, struct wf_model *m)
{
	struct folder f = {0};
	f.e = calloc(WF_ARRAY_LEN(beside_names), sizeof *f.e);
	if (!f.e)
		return wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	int dfd = open(L->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	bool config = false;
	enum wf_err rc = WF_OK;
	for (size_t i = 0; dfd >= 0 && i < WF_ARRAY_LEN(beside_names) && rc == WF_OK; i++) {
		struct stat st;
		/* as a folder's scan sees them: symlinks followed */
		if (fstatat(dfd, beside_names[i], &st, 0) != 0 || classify(beside_names[i], &st) != K_SIDE)
			continue;
		config |= strcmp(beside_names[i], "config.json") == 0;
		f.e[f.n] = (struct entry){.name = strdup(beside_names[i]), .kind = K_SIDE, .size = (uint64_t)st.st_size,
					  .model = -1};
		if (!f.e[f.n++].name)
			rc = wf_fail(L->err, WF_ERR_NOMEM, "out of memory");
	}
	if (dfd >= 0)
		close(dfd);
	/* no config.json: no model folder, the file on its own as ever */
	if (rc == WF_OK && config) {
		rc = add_sidecars(L, &f, m);
		m->sidecars_beside = true;
	}
	folder_free(&f);
	return rc;
}

/* A hub cache's models--ORG--NAME folder: the snapshot refs/main names,
 * or, with no refs/main (a cache filled by revision), the only snapshot.
 * NULL if dir is no hub cache folder or the choice is not clear; when
 * refs/main exists but names no snapshot, why[WF_ERRLEN] says what is
 * wrong with it (else it is left empty). */
static char *hub_snapshot(const char *dir, char *why)
{
	char *refs = wf_path_join(dir, "refs/main"), *snap = NULL;
	/* never blocks (a FIFO), and only a regular file is read */
	int fd = refs ? open(refs, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK) : -1;
	struct stat rst;
	bool had_refs = fd >= 0;
	*why = '\0';
	if (fd >= 0 && (fstat(fd, &rst) != 0 || !S_ISREG(rst.st_mode))) {
		snprintf(why, WF_ERRLEN, "refs/main is not a regular file");
		close(fd);
		fd = -1;
	}
	FILE *fp = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (fd >= 0 && !fp)
		close(fd);
	char rev[128];
	if (fp && fgets(rev, sizeof rev, fp)) {
		rev[strcspn(rev, "\r\n")] = '\0';
		if (*rev && !strchr(rev, '/') && strcmp(rev, "..") != 0 && strcmp(rev, ".") != 0) {
			char rel[160];
			snprintf(rel, sizeof rel, "snapshots/%s", rev);
			snap = wf_path_join(dir, rel);
		}
	}
	if (fp && !snap)
		snprintf(why, WF_ERRLEN, "refs/main names no revision (a snapshot folder's name on its first line)");
	if (fp)
		fclose(fp);
	free(refs);
	if (had_refs) /* refs/main decides, even when it names nothing usable */
		return snap;
	char *snaps = wf_path_join(dir, "snapshots");
	DIR *d = snaps ? opendir(snaps) : NULL;
	struct dirent *de;
	char *only = NULL;
	bool several = false;
	while (d && (de = readdir(d)) != NULL) {
		if (de->d_name[0] == '.')
			continue;
		several = only != NULL;
		free(only);
		only = several ? NULL : wf_path_join(snaps, de->d_name);
		if (several)
			break;
	}
	if (d)
		closedir(d);
	free(snaps);
	return only;
}

/* A folder with no model, or several: the refusal lists what it found. */
static enum wf_err say_found(struct wf_set_loader *L, const struct folder *f, const struct found *models, size_t n)
{
	struct wf_buf b = {0};
	enum wf_err rc;
	char q[WF_QPATH];
	if (n == 0) {
		size_t shown = 0;
		for (size_t i = 0; i < f->n && shown < 6; i++, shown++)
			wf_buf_printf(&b, "%s%s", shown ? ", " : "", wf_quote_path(q, sizeof q, f->e[i].name));
		if (f->n > shown)
			wf_buf_printf(&b, ", and %zu more", f->n - shown);
		rc = wf_fail(L->err, WF_ERR_IO, "no GGUF or safetensors model in the folder (it holds %zu %s%s%s)",
			     f->n, f->n == 1 ? "entry" : "entries", f->n ? ": " : "", b.data && !b.oom ? b.data : "");
	} else {
		for (size_t i = 0; i < n && i < MAX_LISTED; i++)
			wf_buf_printf(&b, "%s%s", i ? ", " : "", wf_quote_path(q, sizeof q, models[i].label));
		if (n > MAX_LISTED)
			wf_buf_printf(&b, ", and %zu more", n - MAX_LISTED);
		rc = wf_fail(L->err, WF_ERR_IO, "the folder holds %zu models: %s; give one of them as MODEL", n,
			     b.data && !b.oom ? b.data : "?");
	}
	wf_buf_free(&b);
	return rc;
}

enum wf_err wf_set_load_folder(struct wf_set_loader *L, struct wf_model **out)
{
	struct folder f = {0};
	struct found models[MAX_LISTED];
	size_t n;
	*out = NULL;
	enum wf_err rc = scan(L, &f);
	if (rc == WF_OK)
		rc = find_models(L, &f, models, WF_ARRAY_LEN(models), &n);
	if (rc != WF_OK)
		goto out;
	if (n == 0) {
		/* once only: a snapshot that leads back to its cache folder is a loop */
		char why[WF_ERRLEN] = "";
		char *snap = L->in_snapshot ? NULL : hub_snapshot(L->dir, why);
		struct stat st;
		bool is_dir = snap && stat(snap, &st) == 0 && S_ISDIR(st.st_mode);
		if (snap && !is_dir) {
			char q[96];
			const char *rev = strrchr(snap, '/') + 1;
			snprintf(why, sizeof why, "refs/main names revision %s, which has no folder in snapshots/",
				 wf_quote(q, sizeof q, rev, strlen(rev)));
		}
		if (is_dir) {
			L->in_snapshot = true;
			folder_free(&f);
			free(L->dir);
			L->dir = realpath(snap, NULL);
			free(snap);
			if (!L->dir)
				return wf_fail(L->err, WF_ERR_IO, "cannot resolve the hub snapshot: %s", strerror(errno));
			return wf_set_load_folder(L, out);
		}
		free(snap);
		rc = *why ? wf_fail(L->err, WF_ERR_IO, "a Hugging Face hub cache folder, but %s", why)
			  : say_found(L, &f, models, n);
		goto out;
	}
	if (n > 1) {
		rc = say_found(L, &f, models, n);
		goto out;
	}
	const char *first = f.e[models[0].first].name;
	if (models[0].kind == K_INDEX) {
		struct wf_set_index ix;
		rc = wf_set_index_load(L, first, &ix);
		if (rc == WF_OK)
			rc = wf_set_load_index(L, &ix, NULL, NULL, out);
		wf_set_index_free(&ix);
	} else if (models[0].kind == K_ST) {
		rc = load_st_set(L, &f, models[0].first, out);
	} else {
		struct wf_model *m;
		size_t named = 0; /* files whose names put them in this set */
		for (size_t i = 0; i < f.n; i++)
			named += f.e[i].model == 0;
		rc = wf_set_split_limit(L, first, ".gguf");
		if (rc == WF_OK)
			rc = wf_set_open_part(L, first, &m);
		if (rc == WF_OK && m->split_count <= 1 && named > 1) {
			/* the others would be left out without a word */
			wf_model_free(m);
			char qf[WF_QPATH], ql[WF_QPATH];
			rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: named as a part of %s, but has no split.count > 1",
				     wf_quote_path(qf, sizeof qf, first), wf_quote_path(ql, sizeof ql, models[0].label));
		} else if (rc == WF_OK) {
			rc = m->split_count > 1 ? wf_set_load_split(L, m, first, out) : (*out = m, WF_OK);
		}
	}
	if (rc == WF_OK)
		rc = add_sidecars(L, &f, *out);
	if (rc != WF_OK) {
		wf_model_free(*out);
		*out = NULL;
	}
out:
	folder_free(&f);
	return rc;
}

/* A safetensors file with an index beside it that names it: the index. */
enum wf_err wf_set_index_beside(struct wf_set_loader *L, const char *shard, struct wf_set_index *ix, bool *found)
{
	struct folder f = {0};
	*found = false;
	enum wf_err rc = scan(L, &f);
	for (size_t i = 0; rc == WF_OK && i < f.n; i++) {
		if (f.e[i].kind != K_INDEX)
			continue;
		struct wf_set_index cand;
		rc = wf_set_index_load(L, f.e[i].name, &cand);
		if (rc == WF_OK && wf_set_index_names(&cand, shard)) {
			if (*found) {
				char qs[WF_QPATH], qa[WF_QPATH], qb[WF_QPATH];
				rc = wf_fail(L->err, WF_ERR_FORMAT, "%s: named by two indexes, %s and %s",
					     wf_quote_path(qs, sizeof qs, shard), wf_quote_path(qa, sizeof qa, ix->name),
					     wf_quote_path(qb, sizeof qb, cand.name));
				wf_set_index_free(&cand);
				break;
			}
			*ix = cand;
			*found = true;
			continue;
		}
		wf_set_index_free(&cand);
	}
	folder_free(&f);
	if (rc != WF_OK && *found) {
		wf_set_index_free(ix);
		*found = false;
	}
	return rc;
}
