/* cli_diff.c - weightfs diff A B: tensor by tensor, how far apart two
 * models' values are, across formats and naming conventions
 * (docs/weightfs.1, COMMANDS).
 *
 * Tensors pair by name; when one model names its tensors as llama.cpp
 * does and the other as Hugging Face does, the HF names are mapped to
 * llama.cpp's (wf_hf_to_gguf_name) for the architecture that the GGUF
 * metadata (general.architecture) or config.json (model_type,
 * architectures) names, and q/k rows are lined up again for the
 * architectures whose converter permutes them, with the head counts of
 * either. */
#include "base/wf_names.h"
#include "cli/cli.h"
#include "cli/cli_int.h"
#include "cli/cli_look.h"
#include "model/wf_gguf.h"
#include "model/wf_maps.h"
#include "view/wf_diff.h"
#include "view/wf_view.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define TROUBLE 2
/* config.json beside a model file is read only up to this size. */
#define CONFIG_MAX (16u << 20)

/* What one side knows about itself. */
struct side {
	struct cli_model cm;
	enum wf_naming naming;
	char arch[64];            /* canonical, or "" */
	int64_t heads, heads_kv;  /* 0 when unknown */
	char **canon;             /* [n_tensors]: the name used for pairing (mapped HF names), or NULL */
	char *qk;                 /* [n_tensors]: 'q'/'k' for a mapped q/k tensor */
	bool *norm;               /* [n_tensors]: a mapped norm weight */
};

struct pair {
	size_t a, b;
	struct wf_diff_map map;
	struct wf_diff d;
	enum wf_err rc;
	char *err;
};

struct result {
	struct pair *pairs;
	size_t n_pairs;
	size_t *only_a, *only_b, n_only_a, n_only_b;
	size_t *bad_a, *bad_b, n_bad; /* shape mismatches */
};

/* ---------------------------------------------------------------- what each side is */

static int64_t json_int(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsNumber(v) && v->valuedouble >= 1 && v->valuedouble < 1e6 ? (int64_t)v->valuedouble : 0;
}

static void set_arch(struct side *s, const char *name)
{
	const char *c = wf_arch_canon(name);
	if (c && !s->arch[0])
		snprintf(s->arch, sizeof s->arch, "%s", c);
}

/* from_metadata's keys, through the GGUF's key/value index: a cJSON tree of
 * metadata.json costs about 64 bytes a value (1.3 GB for a
 * 20,000,000-element array, issue 31), the index nothing more. */
static void from_gguf(struct side *s)
{
	char err[WF_ERRLEN], arch[40];
	const struct wf_model *m = s->cm.m;
	const uint8_t *data; /* the key/values are in parts[0], which a set of many parts maps on use */
	if (m->n_parts == 0 || wf_maps_get(m->maps, m->parts, 0, &data, err) != WF_OK)
		return;
	struct wf_gguf_vals v = {m->kvs, data, m->parts[0].len};
	const uint8_t *a;
	uint64_t n;
	bool ok = wf_gguf_str(&v, wf_gguf_find(&v, "general.architecture"), &a, &n) == WF_GGUF_OK &&
		  n < sizeof arch && !memchr(a, 0, (size_t)n);
	int64_t heads = 0, heads_kv = 0;
	if (ok) {
		memcpy(arch, a, (size_t)n);
		arch[n] = 0;
		/* integers in [1, 1e6), else 0, as from_metadata's json_int */
		heads = wf_gguf_arch_int(&v, arch, "attention.head_count", 1, 999999);
		heads_kv = wf_gguf_arch_int(&v, arch, "attention.head_count_kv", 1, 999999);
	}
	wf_maps_put(m->maps, m->parts, 0);
	if (!ok)
		return;
	set_arch(s, arch);
	s->heads = heads;
	/* llama.cpp's default: as many as query heads */
	s->heads_kv = heads_kv ? heads_kv : heads;
}

/* general.architecture and ARCH.attention.head_count(_kv): a GGUF's from its
 * header, a safetensors' from __metadata__ (whose header cJSON parsed
 * already, so its tree costs no more than the parse did). */
static void from_metadata(struct side *s)
{
	if (s->cm.m->format == WF_FMT_GGUF) { /* its metadata.json is never whole (wf_meta.h) */
		from_gguf(s);
		return;
	}
	cJSON *md = cJSON_ParseWithLength(s->cm.m->metadata_json, s->cm.m->metadata_json_len);
	const cJSON *a = cJSON_GetObjectItemCaseSensitive(md, "general.architecture");
	if (cJSON_IsString(a) && strlen(a->valuestring) < 40) {
		char key[96];
		set_arch(s, a->valuestring);
		snprintf(key, sizeof key, "%s.attention.head_count", a->valuestring);
		s->heads = json_int(md, key);
		snprintf(key, sizeof key, "%s.attention.head_count_kv", a->valuestring);
		s->heads_kv = json_int(md, key);
		if (!s->heads_kv) /* llama.cpp's default: as many as query heads */
			s->heads_kv = s->heads;
	}
	cJSON_Delete(md);
}

/* config.json: a sidecar of a model folder, or the file beside MODEL. */
static char *read_config(const struct side *s, size_t *len)
{
	for (size_t i = 0; i < s->cm.m->n_sidecars; i++) {
		const struct wf_sidecar *sc = &s->cm.m->sidecars[i];
		if (strcmp(sc->name, "config.json") == 0) {
			char *c = malloc(sc->len + 1);
			if (c) {
				memcpy(c, sc->data, sc->len);
				*len = sc->len;
			}
			return c;
		}
	}
	struct stat st;
	if (stat(s->cm.path, &st) != 0 || !S_ISREG(st.st_mode))
		return NULL;
	const char *slash = strrchr(s->cm.path, '/');
	char path[4096];
	snprintf(path, sizeof path, "%.*sconfig.json", slash ? (int)(slash - s->cm.path + 1) : 0, s->cm.path);
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	char *c = NULL;
	if (fd >= 0 && fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_size < CONFIG_MAX &&
	    (c = malloc((size_t)st.st_size + 1))) {
		ssize_t got = read(fd, c, (size_t)st.st_size);
		*len = got > 0 ? (size_t)got : 0;
	}
	if (fd >= 0)
		close(fd);
	return c;
}

static void from_config(struct side *s)
{
	size_t len = 0;
	char *text = read_config(s, &len);
	if (!text)
		return;
	cJSON *cfg = cJSON_ParseWithLength(text, len);
	free(text);
	/* a multimodal config keeps the language model's in text_config */
	const cJSON *tc = cJSON_GetObjectItemCaseSensitive(cfg, "text_config");
	const cJSON *src = cJSON_IsObject(tc) ? tc : cfg;
	const cJSON *mt = cJSON_GetObjectItemCaseSensitive(src, "model_type");
	const cJSON *ar = cJSON_GetObjectItemCaseSensitive(cfg, "architectures");
	if (cJSON_IsString(mt))
		set_arch(s, mt->valuestring);
	if (cJSON_IsArray(ar) && cJSON_IsString(cJSON_GetArrayItem(ar, 0)))
		set_arch(s, cJSON_GetArrayItem(ar, 0)->valuestring);
	if (!s->heads)
		s->heads = json_int(src, "num_attention_heads");
	if (!s->heads_kv)
		s->heads_kv = json_int(src, "num_key_value_heads");
	if (!s->heads_kv)
		s->heads_kv = s->heads;
	cJSON_Delete(cfg);
}

static void classify(struct side *s)
{
	size_t g = 0, h = 0;
	for (size_t i = 0; i < s->cm.m->n_tensors; i++) {
		enum wf_naming n = wf_name_naming(s->cm.m->tensors[i].name, s->cm.m->tensors[i].name_len);
		g += n == WF_NAMES_GGUF;
		h += n == WF_NAMES_HF;
	}
	s->naming = g > h ? WF_NAMES_GGUF : h > g ? WF_NAMES_HF : WF_NAMES_OTHER;
	from_metadata(s);
	from_config(s);
}

/* Maps every HF name of s to llama.cpp's under arch. */
static bool map_names(struct side *s, const char *arch)
{
	size_t n = s->cm.m->n_tensors;
	s->canon = calloc(n + 1, sizeof *s->canon);
	s->qk = calloc(n + 1, 1);
	s->norm = calloc(n + 1, sizeof *s->norm);
	if (!s->canon || !s->qk || !s->norm)
		return false;
	for (size_t i = 0; i < n; i++) {
		const struct wf_tensor *t = &s->cm.m->tensors[i];
		char buf[512];
		if (wf_hf_to_gguf_name(arch, t->name, t->name_len, buf, sizeof buf, &s->qk[i], &s->norm[i]) &&
		    !(s->canon[i] = strdup(buf)))
			return false;
	}
	return true;
}

static void side_free(struct side *s)
{
	for (size_t i = 0; s->canon && s->cm.m && i < s->cm.m->n_tensors; i++)
		free(s->canon[i]);
	free(s->canon);
	free(s->qk);
	free(s->norm);
	cli_model_close(&s->cm);
}

static const char *pair_name(const struct side *s, size_t i, size_t *len)
{
	if (s->canon && s->canon[i]) {
		*len = strlen(s->canon[i]);
		return s->canon[i];
	}
	*len = s->cm.m->tensors[i].name_len;
	return s->cm.m->tensors[i].name;
}

/* ---------------------------------------------------------------- pairing */

static bool same_shape(const struct wf_tensor *a, const struct wf_tensor *b)
{
	uint64_t da[WF_MAX_DIMS], db[WF_MAX_DIMS];
	uint32_t na = wf_view_shape(a, da), nb = wf_view_shape(b, db);
	return na == nb && memcmp(da, db, na * sizeof *da) == 0;
}

/* How B's values line up with A's for pair (i, j); false (with the
 * reason printed) when q/k rows must be put back but no head count is
 * known. */
static bool pair_map(const struct side *sa, const struct side *sb, const char *arch, size_t i, size_t j,
		     struct wf_diff_map *map)
{
	const struct side *hf = sa->canon ? sa : sb->canon ? sb : NULL;
	size_t k = hf == sa ? i : j;
	memset(map, 0, sizeof *map);
	if (!hf || !hf->canon[k])
		return true;
	if (hf->norm[k] && wf_arch_norm_plus_one(arch)) {
		/* llama.cpp stores Gemma's norms as 1 + w */
		if (hf == sa)
			map->a_add = 1;
		else
			map->b_add = 1;
	}
	if (!hf->qk[k] || !wf_arch_permutes_qk(arch))
		return true;
	int64_t heads = hf->qk[k] == 'q' ? (sa->heads ? sa->heads : sb->heads)
					 : (sa->heads_kv ? sa->heads_kv : sb->heads_kv);
	if (heads <= 0) {
		fprintf(stderr, "weightfs: %s: the head counts are unknown (neither GGUF metadata nor config.json "
			"gives them), so llama.cpp's q/k row order cannot be undone\n", cli_path(hf->cm.path));
		return false;
	}
	map->perm_heads = (uint64_t)heads;
	map->a_is_gguf = hf == sb;
	return true;
}

static int pair_up(struct side *sa, struct side *sb, const char *arch, struct result *r)
{
	size_t na = sa->cm.m->n_tensors, nb = sb->cm.m->n_tensors;
	struct wf_names idx;
	bool *used = calloc(nb + 1, sizeof *used);
	r->pairs = calloc(na + 1, sizeof *r->pairs);
	r->only_a = calloc(na + 1, sizeof(size_t));
	r->bad_a = calloc(na + 1, sizeof(size_t));
	r->bad_b = calloc(na + 1, sizeof(size_t));
	r->only_b = calloc(nb + 1, sizeof(size_t));
	if (!used || !r->pairs || !r->only_a || !r->only_b || !r->bad_a || !r->bad_b || !wf_names_init(&idx, nb)) {
		free(used);
		fprintf(stderr, "weightfs: out of memory\n");
		return EXIT_NOMEM;
	}
	for (size_t j = 0; j < nb; j++) {
		size_t len;
		const char *nm = pair_name(sb, j, &len);
		wf_names_put(&idx, nm, len, (uint32_t)j); /* a name mapped twice keeps its first */
	}
	int ret = 0;
	for (size_t i = 0; i < na && !ret; i++) {
		size_t len;
		const char *nm = pair_name(sa, i, &len);
		uint32_t j = nb ? wf_names_get(&idx, nm, len) : WF_NAMES_NONE;
		if (j == WF_NAMES_NONE || used[j]) {
			r->only_a[r->n_only_a++] = i;
			continue;
		}
		used[j] = true;
		if (!same_shape(&sa->cm.m->tensors[i], &sb->cm.m->tensors[j])) {
			r->bad_a[r->n_bad] = i;
			r->bad_b[r->n_bad++] = j;
			continue;
		}
		struct pair *p = &r->pairs[r->n_pairs++];
		p->a = i;
		p->b = j;
		if (!pair_map(sa, sb, arch, i, j, &p->map))
			ret = TROUBLE;
	}
	for (size_t j = 0; j < nb; j++)
		if (!used[j])
			r->only_b[r->n_only_b++] = j;
	wf_names_free(&idx);
	free(used);
	return ret;
}

static int compute(struct side *sa, struct side *sb, struct result *r)
{
	struct cli_meter mt;
	uint64_t total = 0;
	for (size_t k = 0; k < r->n_pairs; k++)
		total += sa->cm.m->tensors[r->pairs[k].a].size;
	cli_meter_start(&mt, "diff", total);
	int ret = 0;
	for (size_t k = 0; k < r->n_pairs && !ret; k++) {
		struct pair *p = &r->pairs[k];
		char err[WF_ERRLEN];
		p->rc = wf_diff_tensors(&sa->cm.lv, &sa->cm.m->tensors[p->a], &sb->cm.lv, &sb->cm.m->tensors[p->b],
					&p->map, 0, &mt.done, &p->d, err);
		if (p->rc == WF_ERR_CHANGED || p->rc == WF_ERR_NOMEM) {
			cli_meter_stop(&mt);
			/* which side changed: the first that fails its check */
			bool a_bad = false;
			for (uint32_t q = 0; q < sa->cm.m->n_parts; q++)
				a_bad |= wf_model_check(sa->cm.m, q, NULL) != WF_OK;
			cli_model_read_failed(a_bad ? &sa->cm : &sb->cm, p->rc, err);
			ret = TROUBLE;
		} else if (p->rc != WF_OK && !(p->err = strdup(err))) {
			ret = TROUBLE;
		}
	}
	cli_meter_stop(&mt);
	return ret;
}

/* ---------------------------------------------------------------- output */

/* Worst first: by rel_rmse (a tensor of zeros against anything else
 * counts as infinitely far), then by elements that differ. */
static double badness(const struct pair *p)
{
	if (p->rc != WF_OK)
		return INFINITY;
	if (isnan(p->d.rel_rmse))
		return p->d.differ ? INFINITY : 0;
	return p->d.rel_rmse;
}

static int worst_first(const void *x, const void *y)
{
	const struct pair *a = x, *b = y;
	double ba = badness(a), bb = badness(b);
	if (ba != bb)
		return ba > bb ? -1 : 1;
	if (a->d.differ != b->d.differ)
		return a->d.differ > b->d.differ ? -1 : 1;
	return a->a < b->a ? -1 : a->a > b->a;
}

static void json_names(struct wf_buf *b, const char *key, const struct side *s, const size_t *idx, size_t n)
{
	wf_buf_printf(b, ", \"%s\": [", key);
	for (size_t k = 0; k < n; k++) {
		const struct wf_tensor *t = &s->cm.m->tensors[idx[k]];
		if (k)
			wf_buf_puts(b, ", ");
		wf_buf_json_str(b, t->name, t->name_len);
	}
	wf_buf_putc(b, ']');
}

static void json_pair(struct wf_buf *b, const struct side *sa, const struct side *sb, const struct pair *p)
{
	const struct wf_tensor *ta = &sa->cm.m->tensors[p->a], *tb = &sb->cm.m->tensors[p->b];
	wf_buf_puts(b, "{\"a\": ");
	wf_buf_json_str(b, ta->name, ta->name_len);
	wf_buf_puts(b, ", \"b\": ");
	wf_buf_json_str(b, tb->name, tb->name_len);
	wf_buf_puts(b, ", \"shape\": ");
	wf_view_shape_json(ta, b);
	const char *keys[] = {"max_abs", "rmse", "rel_rmse", "cosine"};
	const double v[] = {p->d.max_abs, p->d.rmse, p->d.rel_rmse, p->d.cosine};
	for (size_t k = 0; k < 4; k++) {
		wf_buf_printf(b, ", \"%s\": ", keys[k]);
		cli_json_num(b, v[k]);
	}
	wf_buf_printf(b, ", \"differ\": %" PRIu64 ", \"count\": %" PRIu64 ", \"permuted\": %s", p->d.differ,
		      p->d.count, p->map.perm_heads ? "true" : "false");
	if (p->rc != WF_OK) {
		wf_buf_puts(b, ", \"error\": ");
		wf_buf_json_str(b, p->err, strlen(p->err));
	}
	wf_buf_putc(b, '}');
}

static void print_json(const struct side *sa, const struct side *sb, const struct result *r, bool same,
		       struct wf_buf *b)
{
	wf_buf_puts(b, "{\"tensors\": [");
	for (size_t k = 0; k < r->n_pairs; k++) {
		wf_buf_puts(b, k ? ",\n  " : "\n  ");
		json_pair(b, sa, sb, &r->pairs[k]);
	}
	wf_buf_puts(b, r->n_pairs ? "\n]" : "]");
	json_names(b, "only_a", sa, r->only_a, r->n_only_a);
	json_names(b, "only_b", sb, r->only_b, r->n_only_b);
	wf_buf_puts(b, ", \"shape_mismatch\": [");
	for (size_t k = 0; k < r->n_bad; k++) {
		const struct wf_tensor *ta = &sa->cm.m->tensors[r->bad_a[k]], *tb = &sb->cm.m->tensors[r->bad_b[k]];
		wf_buf_puts(b, k ? ", {\"a\": " : "{\"a\": ");
		wf_buf_json_str(b, ta->name, ta->name_len);
		wf_buf_puts(b, ", \"b\": ");
		wf_buf_json_str(b, tb->name, tb->name_len);
		wf_buf_puts(b, ", \"shape_a\": ");
		wf_view_shape_json(ta, b);
		wf_buf_puts(b, ", \"shape_b\": ");
		wf_view_shape_json(tb, b);
		wf_buf_putc(b, '}');
	}
	wf_buf_printf(b, "], \"identical\": %s}\n", same ? "true" : "false");
}

static bool print_table(const struct side *sa, const struct side *sb, const struct result *r)
{
	bool names_differ = false;
	for (size_t k = 0; k < r->n_pairs; k++) {
		const struct wf_tensor *ta = &sa->cm.m->tensors[r->pairs[k].a], *tb = &sb->cm.m->tensors[r->pairs[k].b];
		names_differ |= ta->name_len != tb->name_len || memcmp(ta->name, tb->name, ta->name_len) != 0;
	}
	unsigned nc = names_differ ? 8 : 7;
	struct cli_table tb;
	cli_table_init(&tb, nc, names_differ ? ~7u : ~3u);
	const char *head[] = {"A", "B", "SHAPE", "MAX_ABS", "RMSE", "REL_RMSE", "COSINE", "DIFFER"};
	for (unsigned k = 0; k < 8; k++)
		if (k != 1 || names_differ)
			cli_table_cell(&tb, "%s", k == 0 && !names_differ ? "NAME" : head[k]);
	for (size_t k = 0; k < r->n_pairs; k++) {
		const struct pair *p = &r->pairs[k];
		const struct wf_tensor *ta = &sa->cm.m->tensors[p->a], *tbn = &sb->cm.m->tensors[p->b];
		struct wf_buf shape = {0};
		wf_view_shape_json(ta, &shape);
		cli_table_name(&tb, ta->name, ta->name_len);
		if (names_differ)
			cli_table_name(&tb, tbn->name, tbn->name_len);
		cli_table_cell(&tb, "%s", shape.oom ? "?" : shape.data);
		wf_buf_free(&shape);
		if (p->rc != WF_OK) {
			for (int c = 0; c < 4; c++)
				cli_table_cell(&tb, "?");
			cli_table_cell(&tb, "?");
			continue;
		}
		cli_table_num(&tb, p->d.max_abs);
		cli_table_num(&tb, p->d.rmse);
		cli_table_num(&tb, p->d.rel_rmse);
		cli_table_num(&tb, p->d.cosine);
		cli_table_cell(&tb, "%" PRIu64, p->d.differ);
	}
	bool ok = cli_table_print(&tb);
	cli_table_free(&tb);
	return ok;
}

static void print_lists(const struct side *sa, const struct side *sb, const struct result *r)
{
	struct wf_buf b = {0};
	for (size_t k = 0; k < r->n_only_a; k++) {
		const struct wf_tensor *t = &sa->cm.m->tensors[r->only_a[k]];
		wf_buf_puts(&b, "only in A: ");
		cli_name(&b, t->name, t->name_len);
		wf_buf_putc(&b, '\n');
	}
	for (size_t k = 0; k < r->n_only_b; k++) {
		const struct wf_tensor *t = &sb->cm.m->tensors[r->only_b[k]];
		wf_buf_puts(&b, "only in B: ");
		cli_name(&b, t->name, t->name_len);
		wf_buf_putc(&b, '\n');
	}
	for (size_t k = 0; k < r->n_bad; k++) {
		const struct wf_tensor *ta = &sa->cm.m->tensors[r->bad_a[k]], *tb = &sb->cm.m->tensors[r->bad_b[k]];
		wf_buf_puts(&b, "other shapes: ");
		cli_name(&b, ta->name, ta->name_len);
		wf_buf_putc(&b, ' ');
		wf_view_shape_json(ta, &b);
		wf_buf_puts(&b, " vs ");
		cli_name(&b, tb->name, tb->name_len);
		wf_buf_putc(&b, ' ');
		wf_view_shape_json(tb, &b);
		wf_buf_putc(&b, '\n');
	}
	if (!b.oom && b.len)
		fwrite(b.data, 1, b.len, stdout);
	wf_buf_free(&b);
}

static void verdict(const struct side *sa, const struct side *sb, const struct result *r, size_t differ)
{
	if (!differ && !r->n_only_a && !r->n_only_b && !r->n_bad) {
		printf("identical: all %zu tensors pair and hold the same values\n", r->n_pairs);
		return;
	}
	printf("different: %zu of %zu paired tensors differ", differ, r->n_pairs);
	if (differ) {
		const struct pair *w = &r->pairs[0];
		struct wf_buf b = {0};
		cli_name(&b, sa->cm.m->tensors[w->a].name, sa->cm.m->tensors[w->a].name_len);
		printf(" (worst %s: rel_rmse %.3g, cosine %.6f)", b.oom ? "?" : b.data, w->d.rel_rmse, w->d.cosine);
		wf_buf_free(&b);
	}
	(void)sb;
	printf("; %zu only in A, %zu only in B, %zu with other shapes\n", r->n_only_a, r->n_only_b, r->n_bad);
}

static void result_free(struct result *r)
{
	for (size_t k = 0; r->pairs && k < r->n_pairs; k++)
		free(r->pairs[k].err);
	free(r->pairs);
	free(r->only_a);
	free(r->only_b);
	free(r->bad_a);
	free(r->bad_b);
}

/* ---------------------------------------------------------------- the command */

/* Opens both sides and decides the names to pair by. */
static int prepare(struct side *sa, struct side *sb, const char *pa, const char *pb, char *arch, size_t archlen)
{
	if (cli_model_open(&sa->cm, pa, NULL) != 0 || cli_model_open(&sb->cm, pb, NULL) != 0)
		return TROUBLE;
	classify(sa);
	classify(sb);
	snprintf(arch, archlen, "%s", sa->arch[0] ? sa->arch : sb->arch);
	if (sa->naming == sb->naming || sa->naming == WF_NAMES_OTHER || sb->naming == WF_NAMES_OTHER)
		return 0;
	struct side *hf = sa->naming == WF_NAMES_HF ? sa : sb;
	/* the GGUF side's architecture is the one llama.cpp converted with,
	 * unless the registry knows the HF side's better (wf_arch_pair_arch) */
	const struct side *gg = hf == sa ? sb : sa;
	if (gg->arch[0] && wf_arch_pair_arch(gg->arch, hf->arch) == gg->arch)
		snprintf(arch, archlen, "%s", gg->arch);
	else if (hf->arch[0])
		snprintf(arch, archlen, "%s", hf->arch);
	if (!arch[0])
		fprintf(stderr, "weightfs: %s: architecture unknown (no general.architecture, no config.json): "
			"pairing by llama's names, q/k rows as they are\n", cli_path(hf->cm.path));
	if (!map_names(hf, arch[0] ? arch : NULL)) {
		fprintf(stderr, "weightfs: out of memory\n");
		return TROUBLE;
	}
	return 0;
}

static int report(const struct side *sa, const struct side *sb, struct result *r, bool json)
{
	size_t differ = 0, failed = 0;
	for (size_t k = 0; k < r->n_pairs; k++) {
		differ += r->pairs[k].rc == WF_OK && r->pairs[k].d.differ > 0;
		failed += r->pairs[k].rc != WF_OK;
	}
	bool same = !differ && !failed && !r->n_only_a && !r->n_only_b && !r->n_bad;
	if (json) {
		struct wf_buf b = {0};
		print_json(sa, sb, r, same, &b);
		bool ok = !b.oom && fwrite(b.data, 1, b.len, stdout) == b.len;
		wf_buf_free(&b);
		if (!ok)
			return TROUBLE;
	} else {
		qsort(r->pairs, r->n_pairs, sizeof *r->pairs, worst_first);
		if (r->n_pairs && !print_table(sa, sb, r))
			return TROUBLE;
		print_lists(sa, sb, r);
		verdict(sa, sb, r, differ);
	}
	for (size_t k = 0; k < r->n_pairs; k++)
		if (r->pairs[k].rc != WF_OK)
			fprintf(stderr, "weightfs: %s\n", r->pairs[k].err);
	if (fflush(stdout) != 0) {
		fprintf(stderr, "weightfs: stdout: %s\n", strerror(errno));
		return TROUBLE;
	}
	return failed ? TROUBLE : same ? 0 : 1;
}

static int diff_main(const struct cli_cmd *c, int argc, char **argv)
{
	bool json = false;
	int n_pos = 0, ret = cli_parse(c, argc, argv, &json, &n_pos);
	if (ret != 0)
		return ret == CLI_HELP ? 0 : ret;
	const char *pos[2] = {argv[2], argv[3]};
	struct side sa = {0}, sb = {0};
	struct result r = {0};
	char arch[64] = "";
	if ((ret = prepare(&sa, &sb, pos[0], pos[1], arch, sizeof arch)) == 0 &&
	    (ret = pair_up(&sa, &sb, arch[0] ? arch : NULL, &r)) == 0 && (ret = compute(&sa, &sb, &r)) == 0)
		ret = report(&sa, &sb, &r, json);
	else if (ret != TROUBLE)
		ret = TROUBLE;
	result_free(&r);
	side_free(&sa);
	side_free(&sb);
	return ret;
}

static const struct cli_opt diff_opts[] = {
	CLI_FLAG(0, "json", 0, "print JSON: the pairs, the tensors of one side only, the verdict"),
	CLI_END,
};

const struct cli_cmd cli_cmd_diff = {
	.name = "diff", .args = "A B", .min_pos = 2, .max_pos = 2, .missing = "A and B are needed", .opts = diff_opts,
	.usage_exit = TROUBLE, .run = diff_main,
	.summary = "Tensor by tensor, how far apart two models' values are, across formats and naming conventions "
		   "(exit 0: the same, 1: they differ, 2: trouble).",
};
