/* check_set.c - unit tests for wf_set.c: MODEL as a split GGUF, a
 * safetensors index and its shards, a model folder and a hub cache.
 *
 * Each test builds its files from byte buffers in a fresh temporary
 * folder, opens them with wf_set_open, and checks the merged model or the
 * one-line message (and that it names the file at fault).
 */
#include <check.h>
#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/wf_buf.h"
#include "model/wf_model.h"
#include "model/wf_set.h"
#include "model/wf_meta.h"
#include "mount/wf_mount.h"
#include "mount/wf_tree.h"
#include "view/wf_gguf_file.h"

/* ---- temporary folders and files ---- */

static char tmp[256];

static void tmp_make(void)
{
	snprintf(tmp, sizeof tmp, "/tmp/wf-check-set-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmp));
}

static int rm_one(const char *p, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st, (void)flag, (void)ftw;
	return remove(p);
}

static void tmp_remove(void)
{
	nftw(tmp, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* tmp/rel, in a static ring so a few can be live at once. */
static const char *at(const char *rel)
{
	static char ring[4][512];
	static int k;
	char *p = ring[k++ % 4];
	snprintf(p, sizeof ring[0], "%s/%s", tmp, rel);
	return p;
}

static void write_bytes(const char *rel, const void *data, size_t len)
{
	FILE *f = fopen(at(rel), "wb");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(data, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
}

static void write_str(const char *rel, const char *s)
{
	write_bytes(rel, s, strlen(s));
}

static void write_buf(const char *rel, struct wf_buf *b)
{
	ck_assert(!b->oom);
	write_bytes(rel, b->data, b->len);
	wf_buf_free(b);
}

static void mkdir_rel(const char *rel)
{
	ck_assert_int_eq(mkdir(at(rel), 0755), 0);
}

/* ---- GGUF writer ---- */

static void put_le(struct wf_buf *b, uint64_t v, int n)
{
	uint8_t p[8];
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
	wf_buf_put(b, p, (size_t)n);
}

static void put_gstr(struct wf_buf *b, const char *s)
{
	put_le(b, strlen(s), 8);
	wf_buf_put(b, s, strlen(s));
}

enum { GV_U16 = 2, GV_I32 = 5, GV_STR = 8 };

/* A GGUF part: key/values split.no (if no >= 0), split.count (if count >=
 * 0), split.tensors.count (if total >= 0), general.name = `label`, and
 * one F32 tensor of 4 elements per name, whose values start at `seed`. */
struct gpart {
	int no, count, total;
	const char *label;
	const char *names[4];
	float seed;
};

static void gguf_part(struct wf_buf *b, const struct gpart *g)
{
	size_t nt = 0;
	while (nt < 4 && g->names[nt])
		nt++;
	uint64_t nkv = 1 + (g->no >= 0) + (g->count >= 0) + (g->total >= 0);
	wf_buf_put(b, "GGUF", 4);
	put_le(b, 3, 4);
	put_le(b, nt, 8);
	put_le(b, nkv, 8);
	put_gstr(b, "general.name");
	put_le(b, GV_STR, 4);
	put_gstr(b, g->label);
	if (g->no >= 0) {
		put_gstr(b, "split.no");
		put_le(b, GV_U16, 4);
		put_le(b, (uint64_t)g->no, 2);
	}
	if (g->count >= 0) {
		put_gstr(b, "split.count");
		put_le(b, GV_U16, 4);
		put_le(b, (uint64_t)g->count, 2);
	}
	if (g->total >= 0) {
		put_gstr(b, "split.tensors.count");
		put_le(b, GV_I32, 4);
		put_le(b, (uint64_t)g->total, 4);
	}
	for (size_t i = 0; i < nt; i++) {
		put_gstr(b, g->names[i]);
		put_le(b, 1, 4);   /* n_dims */
		put_le(b, 4, 8);   /* ne[0] */
		put_le(b, 0, 4);   /* F32 */
		put_le(b, 32 * i, 8);
	}
	while (b->len % 32)
		put_le(b, 0, 1);
	for (size_t i = 0; i < nt; i++) {
		for (int k = 0; k < 8; k++) {
			float v = g->seed + (float)(i * 8 + (size_t)k);
			uint32_t u;
			memcpy(&u, &v, 4);
			put_le(b, u, 4);
		}
	}
}

static void write_gguf(const char *rel, const struct gpart *g)
{
	struct wf_buf b = {0};
	gguf_part(&b, g);
	write_buf(rel, &b);
}

/* A good 3-part set split-0000N-of-00003.gguf: 2 + 1 + 2 tensors. */
static struct gpart good_split[3] = {
	{0, 3, 5, "first", {"token_embd.weight", "blk.0.attn_q.weight"}, 0},
	{1, 3, 5, "second", {"blk.0.ffn_up.weight"}, 100},
	{2, 3, 5, "third", {"output_norm.weight", "output.weight"}, 200},
};

static void write_split(const struct gpart *g, int n)
{
	for (int i = 0; i < n; i++) {
		char name[64];
		snprintf(name, sizeof name, "split-%05d-of-%05d.gguf", i + 1, n);
		write_gguf(name, &g[i]);
	}
}

/* ---- safetensors writer ---- */

/* A shard holding F32 tensors of 2 elements named names[0..n), its
 * __metadata__ being `md` (a JSON object text, or NULL for none). */
static void st_shard(const char *rel, const char *const *names, size_t n, const char *md)
{
	struct wf_buf h = {0}, b = {0};
	wf_buf_putc(&h, '{');
	if (md)
		wf_buf_printf(&h, "\"__metadata__\":%s%s", md, n ? "," : "");
	for (size_t i = 0; i < n; i++)
		wf_buf_printf(&h, "%s\"%s\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[%zu,%zu]}", i ? "," : "",
			      names[i], 8 * i, 8 * i + 8);
	wf_buf_putc(&h, '}');
	put_le(&b, h.len, 8);
	wf_buf_put(&b, h.data, h.len);
	for (size_t i = 0; i < 2 * n; i++) {
		float v = (float)i + 0.5f;
		uint32_t u;
		memcpy(&u, &v, 4);
		put_le(&b, u, 4);
	}
	wf_buf_free(&h);
	write_buf(rel, &b);
}

static const char *const shard1[] = {"model.embed.weight", "model.layers.0.q.weight"};
static const char *const shard2[] = {"model.layers.0.k.weight"};
static const char *const shard3[] = {"model.layers.1.q.weight", "lm_head.weight"};
#define SH1 "model-00001-of-00003.safetensors"
#define SH2 "model-00002-of-00003.safetensors"
#define SH3 "model-00003-of-00003.safetensors"
#define INDEX "model.safetensors.index.json"
/* the weight_map of the good set, and the bytes its tensors hold */
#define WMAP                                                                                                     \
	"\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.layers.0.q.weight\":\"" SH1 "\","          \
	"\"model.layers.0.k.weight\":\"" SH2 "\",\"model.layers.1.q.weight\":\"" SH3 "\","                    \
	"\"lm_head.weight\":\"" SH3 "\"}"

static void write_st_set(const char *index_text)
{
	st_shard(SH1, shard1, 2, "{\"format\":\"pt\",\"shard\":\"1\"}");
	st_shard(SH2, shard2, 1, "{\"format\":\"pt\",\"only2\":\"x\"}");
	st_shard(SH3, shard3, 2, NULL);
	if (index_text)
		write_str(INDEX, index_text);
}

/* ---- checks ---- */

static void check_err(const char *err, const char *want1, const char *want2)
{
	ck_assert_msg(strchr(err, '\n') == NULL, "message is not one line: %s", err);
	ck_assert_msg(strstr(err, want1) != NULL, "message %s lacks %s", err, want1);
	if (want2)
		ck_assert_msg(strstr(err, want2) != NULL, "message %s lacks %s", err, want2);
}

static void expect_fail(const char *rel, enum wf_err code, const char *want1, const char *want2)
{
	struct wf_model *m = (struct wf_model *)1;
	char err[WF_ERRLEN] = "";
	enum wf_err rc = wf_set_open(&m, at(rel), err);
	ck_assert_msg(rc == code, "%s: rc %d, expected %d (%s)", rel, rc, code, err);
	ck_assert_ptr_null(m);
	check_err(err, want1, want2);
}

static struct wf_model *expect_open(const char *rel)
{
	struct wf_model *m = NULL;
	char err[WF_ERRLEN] = "";
	enum wf_err rc = wf_set_open(&m, at(rel), err);
	ck_assert_msg(rc == WF_OK, "%s: %s", rel, err);
	ck_assert_ptr_nonnull(m);
	return m;
}

/* metadata.json of m whole (a GGUF's is made on read, never kept:
 * wf_meta_dup); valid until the next call. */
static char *meta_last;
static const char *meta_of(const struct wf_model *m, size_t *len)
{
	size_t n = 0;
	free(meta_last);
	meta_last = NULL;
	ck_assert_int_eq(wf_meta_dup(m, &meta_last, &n, NULL), WF_OK);
	if (len)
		*len = n;
	return meta_last;
}

static cJSON *parse_json(const char *text, size_t len)
{
	cJSON *j = cJSON_ParseWithLength(text, len);
	ck_assert_msg(j != NULL, "not valid JSON: %.*s", (int)(len > 300 ? 300 : len), text);
	return j;
}

static const char *json_str(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	ck_assert_msg(cJSON_IsString(v), "%s is not a string", key);
	return v->valuestring;
}

/* The tree of m builds, and its root entry `name` is a blob of `len` bytes. */
static void check_root_blob(const struct wf_model *m, const char *name, const char *data, size_t len)
{
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN];
	ck_assert_msg(wf_tree_build(&t, m, err) == WF_OK, "%s", err);
	uint32_t n = wf_tree_lookup(t, 0, name, strlen(name));
	ck_assert_msg(n != WF_NO_NODE, "no %s at the root", name);
	ck_assert_int_eq(t->nodes[n].kind, WF_NODE_BLOB);
	ck_assert_uint_eq(t->nodes[n].blob_len, len);
	if (data)
		ck_assert(memcmp(t->nodes[n].blob, data, len) == 0);
	wf_tree_free(t);
}

static bool root_has(const struct wf_model *m, const char *name)
{
	struct wf_tree *t = NULL;
	char err[WF_ERRLEN];
	ck_assert_msg(wf_tree_build(&t, m, err) == WF_OK, "%s", err);
	bool has = wf_tree_lookup(t, 0, name, strlen(name)) != WF_NO_NODE;
	wf_tree_free(t);
	return has;
}

/* ---- split GGUF ---- */

static void check_good_split(struct wf_model *m)
{
	static const char *const order[] = {"token_embd.weight", "blk.0.attn_q.weight", "blk.0.ffn_up.weight",
					    "output_norm.weight", "output.weight"};
	static const uint32_t part[] = {0, 0, 1, 2, 2};
	ck_assert_int_eq(m->format, WF_FMT_GGUF);
	ck_assert_uint_eq(m->n_parts, 3);
	ck_assert_uint_eq(m->n_tensors, 5);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_str_eq(m->tensors[i].name, order[i]);
		ck_assert_uint_eq(m->tensors[i].part, part[i]);
		const struct wf_part *p = &m->parts[part[i]];
		/* the tensor's bytes lie in its own part, and are its own */
		ck_assert_uint_le(m->tensors[i].offset + m->tensors[i].nbytes, p->len);
		float v;
		memcpy(&v, p->data + m->tensors[i].offset, 4);
		ck_assert(v == (float)(part[i] * 100) + (float)(i == 1 || i == 4 ? 8 : 0));
	}
	for (uint32_t i = 0; i < 3; i++) {
		char want[64];
		snprintf(want, sizeof want, "split-%05u-of-00003.gguf", i + 1);
		ck_assert_str_eq(m->parts[i].name, want);
		ck_assert_ptr_nonnull(m->parts[i].path);
		ck_assert_int_eq(wf_model_check(m, i, NULL), WF_OK);
	}
	/* metadata.json: the first part's key/values, made on read */
	ck_assert_ptr_null(m->metadata_json);
	size_t ml;
	const char *mt = meta_of(m, &ml);
	cJSON *md = parse_json(mt, ml);
	ck_assert_str_eq(json_str(md, "general.name"), "first");
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(md, "split.no")->valueint, 0);
	cJSON_Delete(md);
	/* parts.json: every part's own key/values, whole */
	ck_assert_ptr_nonnull(m->parts_json);
	cJSON *pj = parse_json(m->parts_json, m->parts_json_len);
	ck_assert_str_eq(json_str(pj, "form"), "split GGUF");
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(pj, "files");
	ck_assert_int_eq(cJSON_GetArraySize(files), 3);
	static const char *const labels[] = {"first", "second", "third"};
	static const int nts[] = {2, 1, 2};
	for (int i = 0; i < 3; i++) {
		const cJSON *f = cJSON_GetArrayItem(files, i);
		ck_assert_str_eq(json_str(f, "file"), m->parts[i].name);
		ck_assert_str_eq(json_str(f, "format"), "gguf");
		ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(f, "tensors")->valueint, nts[i]);
		ck_assert_int_eq((int64_t)cJSON_GetObjectItemCaseSensitive(f, "size")->valuedouble,
				 (int64_t)m->parts[i].len);
		const cJSON *fmd = cJSON_GetObjectItemCaseSensitive(f, "metadata");
		ck_assert_str_eq(json_str(fmd, "general.name"), labels[i]);
		ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(fmd, "split.no")->valueint, i);
	}
	cJSON_Delete(pj);
	check_root_blob(m, "parts.json", m->parts_json, m->parts_json_len);
}

START_TEST(test_split_ok)
{
	/* any part opens the whole set */
	tmp_make();
	write_split(good_split, 3);
	for (int i = 1; i <= 3; i++) {
		char name[64];
		snprintf(name, sizeof name, "split-%05d-of-00003.gguf", i);
		struct wf_model *m = expect_open(name);
		check_good_split(m);
		wf_model_free(m);
	}
	/* and so does the folder, which shows no sidecars here */
	struct wf_model *m = expect_open(".");
	check_good_split(m);
	ck_assert_uint_eq(m->n_sidecars, 0);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

START_TEST(test_split_without_total)
{
	/* split.tensors.count is optional; when no part states it, nothing to check */
	tmp_make();
	struct gpart g[2] = {{0, 2, -1, "a", {"x.weight"}, 0}, {1, 2, -1, "b", {"y.weight"}, 0}};
	write_split(g, 2);
	struct wf_model *m = expect_open("split-00002-of-00002.gguf");
	ck_assert_uint_eq(m->n_tensors, 2);
	ck_assert_str_eq(m->tensors[0].name, "x.weight");
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* A broken split set: case i changes the good one. */
struct bad_split {
	const char *what;
	const char *open;        /* which file to give */
	enum wf_err code;
	const char *want1, *want2;
};

static const struct bad_split bad_splits[] = {
	{"missing part", "split-00001-of-00003.gguf", WF_ERR_IO, "split-00002-of-00003.gguf: missing", NULL},
	{"split.count differs", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "split-00002-of-00003.gguf: belongs to another split set",
	 "split.count is 4"},
	{"split.no wrong", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "split-00003-of-00003.gguf: split.no is 1, expected 2",
	 NULL},
	{"part of another set", "split-00001-of-00003.gguf", WF_ERR_FORMAT,
	 "split-00002-of-00003.gguf: belongs to another split set: split.tensors.count is 9", NULL},
	{"total wrong", "split-00002-of-00003.gguf", WF_ERR_FORMAT, "split.tensors.count is 6, but the 3 parts hold 5",
	 "split-00001-of-00003.gguf"},
	{"duplicate tensor", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "tensor 'blk.0.attn_q.weight'",
	 "in both split-00001-of-00003.gguf and split-00003-of-00003.gguf"},
	{"no split keys in a part", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "split-00003-of-00003.gguf: has no split.count",
	 NULL},
	{"name does not say which part", "renamed.gguf", WF_ERR_FORMAT, "renamed.gguf: split.count is 3",
	 "PREFIX-%05d-of-%05d.gguf"},
	{"name and split.no disagree", "split-00003-of-00003.gguf", WF_ERR_FORMAT, "the name says part 3 of 3",
	 "split.no is 0"},
	{"split.no missing", "split-00002-of-00003.gguf", WF_ERR_FORMAT, "split-00002-of-00003.gguf: split.count is 3",
	 "split.no is missing"},
	{"part not a GGUF", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "split-00003-of-00003.gguf: not a GGUF file",
	 NULL},
	{"part malformed", "split-00001-of-00003.gguf", WF_ERR_FORMAT, "split-00002-of-00003.gguf: ", NULL},
};

START_TEST(test_split_bad)
{
	const struct bad_split *c = &bad_splits[_i];
	struct gpart g[3];
	memcpy(g, good_split, sizeof g);
	tmp_make();
	switch (_i) {
	case 0: write_split(g, 3); unlink(at("split-00002-of-00003.gguf")); break;
	case 1: g[1].count = 4; write_split(g, 3); break;
	case 2: g[2].no = 1; write_split(g, 3); break;
	case 3: g[1].total = 9; write_split(g, 3); break;
	case 4: g[0].total = g[1].total = g[2].total = 6; write_split(g, 3); break;
	case 5: g[2].names[1] = "blk.0.attn_q.weight"; write_split(g, 3); break;
	case 6: g[2].no = g[2].count = g[2].total = -1; write_split(g, 3); break;
	case 7: write_split(g, 3); ck_assert_int_eq(rename(at("split-00001-of-00003.gguf"), at("renamed.gguf")), 0); break;
	case 8: write_split(g, 3); write_gguf("split-00003-of-00003.gguf", &g[0]); break;
	case 9: g[1].no = -1; write_split(g, 3); break;
	case 10: {
		write_split(g, 3);
		st_shard("split-00003-of-00003.gguf", shard2, 1, NULL);
		break;
	}
	case 11: write_split(g, 3); truncate(at("split-00002-of-00003.gguf"), 40); break;
	default: ck_abort();
	}
	expect_fail(c->open, c->code, c->want1, c->want2);
	tmp_remove();
}
END_TEST

/* ---- safetensors index ---- */

static void check_good_index(struct wf_model *m)
{
	static const char *const order[] = {"model.embed.weight", "model.layers.0.q.weight",
					    "model.layers.0.k.weight", "model.layers.1.q.weight", "lm_head.weight"};
	static const uint32_t part[] = {0, 0, 1, 2, 2};
	ck_assert_int_eq(m->format, WF_FMT_SAFETENSORS);
	ck_assert_uint_eq(m->n_parts, 3);
	ck_assert_uint_eq(m->n_tensors, 5);
	for (size_t i = 0; i < 5; i++) {
		ck_assert_str_eq(m->tensors[i].name, order[i]);
		ck_assert_uint_eq(m->tensors[i].part, part[i]);
		ck_assert_uint_le(m->tensors[i].offset + m->tensors[i].nbytes, m->parts[part[i]].len);
	}
	ck_assert_str_eq(m->parts[0].name, SH1);
	ck_assert_str_eq(m->parts[2].name, SH3);
	/* metadata.json: the index's metadata, then keys the shards add */
	cJSON *md = parse_json(m->metadata_json, m->metadata_json_len);
	ck_assert_int_eq(cJSON_GetArraySize(md), 4);
	ck_assert_str_eq(cJSON_GetArrayItem(md, 0)->string, "total_size");
	ck_assert_int_eq(cJSON_GetArrayItem(md, 0)->valueint, 40);
	ck_assert_str_eq(json_str(md, "format"), "pt");
	ck_assert_str_eq(json_str(md, "shard"), "1");    /* the first shard's, not overwritten */
	ck_assert_str_eq(json_str(md, "only2"), "x");
	ck_assert_uint_eq(m->n_kv, 4);
	cJSON_Delete(md);
	/* parts.json: the index's metadata and each shard's, whole */
	cJSON *pj = parse_json(m->parts_json, m->parts_json_len);
	ck_assert_str_eq(json_str(pj, "form"), "safetensors index");
	const cJSON *ix = cJSON_GetObjectItemCaseSensitive(pj, "index");
	ck_assert_str_eq(json_str(ix, "file"), INDEX);
	ck_assert_int_eq(cJSON_GetObjectItemCaseSensitive(cJSON_GetObjectItemCaseSensitive(ix, "metadata"),
							  "total_size")->valueint, 40);
	const cJSON *files = cJSON_GetObjectItemCaseSensitive(pj, "files");
	ck_assert_int_eq(cJSON_GetArraySize(files), 3);
	ck_assert_str_eq(json_str(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 0), "metadata"), "shard"), "1");
	ck_assert_str_eq(json_str(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 1), "metadata"), "only2"), "x");
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(files, 2), "metadata")), 0);
	ck_assert_str_eq(json_str(cJSON_GetArrayItem(files, 1), "format"), "safetensors");
	cJSON_Delete(pj);
}

static const char good_index[] = "{\"metadata\":{\"total_size\":40}," WMAP "}";

START_TEST(test_index_ok)
{
	tmp_make();
	write_st_set(good_index);
	static const char *const given[] = {INDEX, SH1, SH2, SH3, "."};
	for (size_t i = 0; i < WF_ARRAY_LEN(given); i++) {
		struct wf_model *m = expect_open(given[i]);
		check_good_index(m);
		ck_assert_uint_eq(m->n_sidecars, 0);
		check_root_blob(m, "parts.json", m->parts_json, m->parts_json_len);
		wf_model_free(m);
	}
	tmp_remove();
}
END_TEST

START_TEST(test_index_key_order)
{
	/* shards are opened in name order whatever order weight_map lists them in,
	 * and an index without metadata is fine */
	tmp_make();
	write_st_set("{\"weight_map\":{\"lm_head.weight\":\"" SH3 "\",\"model.layers.1.q.weight\":\"" SH3
		     "\",\"model.layers.0.k.weight\":\"" SH2 "\",\"model.layers.0.q.weight\":\"" SH1
		     "\",\"model.embed.weight\":\"" SH1 "\"}}\n");
	struct wf_model *m = expect_open(INDEX);
	ck_assert_str_eq(m->tensors[0].name, "model.embed.weight");
	ck_assert_uint_eq(m->tensors[4].part, 2);
	cJSON *pj = parse_json(m->parts_json, m->parts_json_len);
	ck_assert_int_eq(cJSON_GetArraySize(cJSON_GetObjectItemCaseSensitive(
				 cJSON_GetObjectItemCaseSensitive(pj, "index"), "metadata")), 0);
	cJSON_Delete(pj);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

struct bad_index {
	const char *index;       /* the index's text */
	enum wf_err code;
	const char *want1, *want2;
};

static const struct bad_index bad_indexes[] = {
	{"{\"weight_map\": {", WF_ERR_FORMAT, INDEX ": invalid JSON", NULL},
	{"{\"metadata\": {}}", WF_ERR_FORMAT, INDEX ": no weight_map", NULL},
	{"{\"weight_map\": []}", WF_ERR_FORMAT, INDEX ": weight_map is not an object", NULL},
	{"[]", WF_ERR_FORMAT, INDEX ": not a JSON object", NULL},
	{"{\"weight_map\": {}}", WF_ERR_FORMAT, INDEX ": weight_map is empty", NULL},
	{"{\"weight_map\": {\"a\": \"../" SH1 "\"}}", WF_ERR_FORMAT, "holds a '/'", INDEX},
	{"{\"weight_map\": {\"a\": \"sub/" SH1 "\"}}", WF_ERR_FORMAT, "holds a '/'", INDEX},
	{"{\"weight_map\": {\"a\": \"..\"}}", WF_ERR_FORMAT, "shard '..' is not a file name", INDEX},
	{"{\"weight_map\": {\"a\": \"x\\u0000.safetensors\"}}", WF_ERR_FORMAT, INDEX ": holds a NUL", NULL},
	{"{\"weight_map\": {\"a\": 7}}", WF_ERR_FORMAT, "the shard is not a string", INDEX},
	{"{\"weight_map\": {\"a\": \"\"}}", WF_ERR_FORMAT, "is empty", INDEX},
	{"{\"metadata\": 3, " WMAP "}", WF_ERR_FORMAT, INDEX ": metadata is not an object", NULL},
	{"{\"metadata\": {\"total_size\": 41}, " WMAP "}", WF_ERR_FORMAT, INDEX ": metadata.total_size is 41",
	 "hold 40 bytes"},
	{"{\"metadata\": {\"total_size\": \"40\"}, " WMAP "}", WF_ERR_FORMAT, "metadata.total_size is \"40\"", NULL},
	{"{\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.layers.0.q.weight\":\"" SH1 "\","
	 "\"model.layers.0.k.weight\":\"" SH2 "\",\"model.layers.1.q.weight\":\"" SH3 "\"}}",
	 WF_ERR_FORMAT, SH3 ": tensor 'lm_head.weight' is not in the weight_map of " INDEX, NULL},
	{"{\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.layers.0.q.weight\":\"" SH1 "\","
	 "\"model.layers.0.k.weight\":\"" SH2 "\",\"model.layers.1.q.weight\":\"" SH3 "\","
	 "\"lm_head.weight\":\"" SH2 "\"}}",
	 WF_ERR_FORMAT, SH3 ": tensor 'lm_head.weight' is here, but " INDEX " puts it in " SH2, NULL},
	{"{\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.layers.0.q.weight\":\"" SH1 "\","
	 "\"model.layers.0.k.weight\":\"" SH2 "\",\"model.layers.1.q.weight\":\"" SH3 "\","
	 "\"lm_head.weight\":\"" SH3 "\",\"ghost.weight\":\"" SH2 "\"}}",
	 WF_ERR_FORMAT, SH2 ": tensor 'ghost.weight': " INDEX " puts it here, but it is not there", NULL},
	{"{\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.embed.weight\":\"" SH1 "\"}}",
	 WF_ERR_FORMAT, INDEX ": weight_map: tensor 'model.embed.weight' is listed twice", NULL},
	{"{\"weight_map\":{\"model.embed.weight\":\"" SH1 "\",\"model.layers.0.q.weight\":\"" SH1 "\","
	 "\"x\":\"model-00004-of-00003.safetensors\"}}",
	 WF_ERR_IO, "model-00004-of-00003.safetensors: missing", NULL},
	{"{\"weight_map\":{\"a\":\"b\"}} trailing", WF_ERR_FORMAT, INDEX ": unexpected bytes after the JSON object", NULL},
	/* caught by fuzz_hfq's one-line check: the shard name went raw into "NAME: missing",
	 * a refusal of two lines (corpus/hfq/bad_index_shard_newline) */
	{"{\"weight_map\": {\"a\": \"x\\ny.safetensors\"}}", WF_ERR_FORMAT,
	 "shard 'x\\x0ay.safetensors' holds a control character", INDEX},
	{"{\"weight_map\": {\"a\": \"\\u001b[2J.safetensors\"}}", WF_ERR_FORMAT, "holds a control character", INDEX},
};

/* A folder whose index leaves shards unclaimed sees them as a model of
 * their own, and says so first. */
static bool leaves_shards(int i)
{
	return i == 4 || i == 17 || i == 18;
}

START_TEST(test_index_bad)
{
	const struct bad_index *c = &bad_indexes[_i];
	tmp_make();
	write_st_set(c->index);
	/* the same message through the index, through a shard beside it
	 * (for an index that names SH1) and through the folder */
	expect_fail(INDEX, c->code, c->want1, c->want2);
	if (leaves_shards(_i))
		expect_fail(".", WF_ERR_IO, "the folder holds 2 models: " INDEX ", model-*-of-00003.safetensors", NULL);
	else
		expect_fail(".", c->code, c->want1, c->want2);
	if (strstr(c->index, "\"" SH1 "\"") && !strstr(c->index, "listed twice"))
		expect_fail(SH1, c->code, c->want1, c->want2);
	tmp_remove();
}
END_TEST

START_TEST(test_index_bad_shards)
{
	/* a shard that is not safetensors, and one that is malformed */
	tmp_make();
	write_st_set(good_index);
	write_gguf(SH2, &good_split[1]);
	expect_fail(INDEX, WF_ERR_FORMAT, SH2 ": not a safetensors file", NULL);
	write_st_set(good_index);
	truncate(at(SH3), 20);
	expect_fail(INDEX, WF_ERR_FORMAT, SH3 ": ", NULL);
	expect_fail(SH1, WF_ERR_FORMAT, SH3 ": ", NULL);
	/* the same tensor in two shards: the index can put it in one only */
	write_st_set(good_index);
	static const char *const dup[] = {"model.layers.0.k.weight", "model.embed.weight"};
	st_shard(SH2, dup, 2, NULL);
	expect_fail(INDEX, WF_ERR_FORMAT, "tensor 'model.embed.weight' is here, but " INDEX " puts it in " SH1, NULL);
	tmp_remove();
}
END_TEST

/* ---- folders ---- */

START_TEST(test_folder_sidecars)
{
	tmp_make();
	write_st_set(good_index);
	write_str("config.json", "{\"model_type\": \"llama\"}\n");
	write_str("tokenizer.json", "{\"version\": \"1.0\"}");
	write_str("README.md", "# a model\n");
	write_str("chat_template.jinja", "{{ messages }}");
	write_str("pytorch_model.bin", "PK\3\4 not shown");
	write_str("model.onnx", "not shown");
	write_str(".gitattributes", "hidden");
	write_str("metadata.json", "{\"the folder's own\": 1}");
	mkdir_rel("sub");
	write_str("sub/inner.json", "{}");
	struct wf_model *m = expect_open(".");
	check_good_index(m);
	static const char *const shown[] = {"README.md", "chat_template.jinja", "config.json", "metadata.json",
					    "tokenizer.json"};
	ck_assert_uint_eq(m->n_sidecars, WF_ARRAY_LEN(shown));
	for (size_t i = 0; i < m->n_sidecars; i++)
		ck_assert_str_eq(m->sidecars[i].name, shown[i]);
	check_root_blob(m, "config.json", "{\"model_type\": \"llama\"}\n", 24);
	check_root_blob(m, "chat_template.jinja", "{{ messages }}", 14);
	/* the folder's metadata.json gives way to the mount's own */
	check_root_blob(m, "metadata.json", m->metadata_json, m->metadata_json_len);
	ck_assert(!root_has(m, "pytorch_model.bin"));
	ck_assert(!root_has(m, "model.onnx"));
	ck_assert(!root_has(m, "sub"));
	ck_assert(!root_has(m, ".gitattributes"));
	ck_assert(!root_has(m, INDEX));
	wf_model_free(m);
	/* a file of the folder (it holds config.json) is the folder's model:
	 * the files model.gguf reads, kept to itself, none shown */
	static const char *const given[] = {INDEX, SH2};
	static const char *const read[] = {"README.md", "chat_template.jinja", "config.json", "tokenizer.json"};
	for (size_t g = 0; g < WF_ARRAY_LEN(given); g++) {
		m = expect_open(given[g]);
		check_good_index(m);
		ck_assert(m->sidecars_beside);
		ck_assert_uint_eq(m->n_sidecars, WF_ARRAY_LEN(read));
		for (size_t i = 0; i < m->n_sidecars; i++)
			ck_assert_str_eq(m->sidecars[i].name, read[i]);
		ck_assert_uint_eq(m->sidecars[2].len, 24);
		ck_assert(memcmp(m->sidecars[2].data, "{\"model_type\": \"llama\"}\n", 24) == 0);
		for (size_t i = 0; i < WF_ARRAY_LEN(shown); i++)
			ck_assert_msg(!root_has(m, shown[i]) || strcmp(shown[i], "metadata.json") == 0, "%s shown",
				      shown[i]);
		wf_model_free(m);
	}
	/* without config.json no folder's model: the file alone */
	ck_assert_int_eq(unlink(at("config.json")), 0);
	m = expect_open(INDEX);
	ck_assert_uint_eq(m->n_sidecars, 0);
	ck_assert(!m->sidecars_beside);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* A file of the folder that is no part of the model and cannot be read
 * (issue 17 item 9: another user's 0600 stray.lock) is left out, and
 * WEIGHTFS.txt says so; the model opens. */
START_TEST(test_folder_unreadable_stray)
{
	tmp_make();
	write_st_set(good_index);
	write_str("config.json", "{\"model_type\": \"llama\"}\n");
	write_str("stray.lock", "held");
	ck_assert_int_eq(chmod(at("stray.lock"), 0), 0);
	bool root = geteuid() == 0;
	if (root) {
		/* root reads anything: read as nobody (keeping root as the saved
		 * ids, to clean up after) */
		ck_assert_int_eq(chmod(tmp, 0755), 0);
		ck_assert_int_eq(setresgid(65534, 65534, 0), 0);
		ck_assert_int_eq(setresuid(65534, 65534, 0), 0);
	}
	int fd = open(at("stray.lock"), O_RDONLY);
	ck_assert_msg(fd < 0 && errno == EACCES, "stray.lock is readable: the test tests nothing");
	struct wf_model *m = expect_open(".");
	check_good_index(m);
	ck_assert_uint_eq(m->n_sidecars, 1);
	ck_assert_str_eq(m->sidecars[0].name, "config.json");
	ck_assert_ptr_nonnull(m->left_out);
	ck_assert_msg(strstr(m->left_out, "stray.lock: Permission denied\n") != NULL, "%s", m->left_out);
	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_mount_tree(&t, m, NULL, err), WF_OK);
	ck_assert_msg(strstr(t->summary, "Left out of the model's folder") != NULL &&
		      strstr(t->summary, "    stray.lock: Permission denied\n") != NULL, "%s", t->summary);
	ck_assert(!root_has(m, "stray.lock"));
	wf_tree_free(t);
	wf_model_free(m);
	if (root) {
		ck_assert_int_eq(setresuid(0, 0, 0), 0);
		ck_assert_int_eq(setresgid(0, 0, 0), 0);
	}
	/* nothing is left out in a folder without such a file: no line */
	ck_assert_int_eq(unlink(at("stray.lock")), 0);
	m = expect_open(".");
	ck_assert_ptr_null(m->left_out);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* ---- model.gguf of a folder: its sidecars read as the converter reads them ---- */

static const char *const llama_names[] = {"model.embed_tokens.weight", "model.layers.0.self_attn.q_proj.weight",
					  "model.layers.0.self_attn.k_proj.weight", "model.norm.weight"};
#define LLAMA_CFG(extra)                                                                                       \
	"{" extra "\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", "                     \
	"\"num_hidden_layers\": 1, \"hidden_size\": 2, \"intermediate_size\": 4, \"num_attention_heads\": 1, " \
	"\"num_key_value_heads\": 1, \"vocab_size\": 3, \"rms_norm_eps\": 1e-5}"

/* One more file for llama_tree to write, when side_name is set. */
static const char *side_name, *side_text;

/* A tiny llama folder with config.json `cfg` (length n), a byte-level
 * tokenizer.json, opened and its tree made: model.gguf or why not. */
static struct wf_tree *llama_tree(const char *cfg, size_t n, struct wf_model **m)
{
	tmp_make();
	st_shard("model.safetensors", llama_names, WF_ARRAY_LEN(llama_names), NULL);
	write_bytes("config.json", cfg, n);
	if (side_name)
		write_str(side_name, side_text);
	write_str("tokenizer.json", "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0,\"b\":1,\"ab\":2},"
		  "\"merges\":[\"a b\"]},\"decoder\":{\"type\":\"ByteLevel\"},\"pre_tokenizer\":{\"type\":"
		  "\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true}}");
	*m = expect_open(".");
	struct wf_tree *t;
	char err[WF_ERRLEN];
	ck_assert_int_eq(wf_mount_tree(&t, *m, NULL, err), WF_OK);
	return t;
}

static void llama_done(struct wf_tree *t, struct wf_model *m)
{
	wf_tree_free(t);
	wf_model_free(m);
	tmp_remove();
}

/* The converter's reading of config.json, and cJSON's, differ: model.gguf
 * left out, WEIGHTFS.txt's reason naming the file and the key. */
static const struct {
	const char *cfg;
	const char *why;
} llama_refused[] = {
	/* json.load keeps the last: 2 heads, and a llama; cJSON the first */
	{LLAMA_CFG("\"num_attention_heads\": 2, "), "config.json: key 'num_attention_heads' given twice"},
	{LLAMA_CFG("\"architectures\": [\"NoSuchForCausalLM\"], "), "config.json: key 'architectures' given twice"},
	{LLAMA_CFG("\"rope_scaling\": {\"rope_type\": \"llama3\", \"factor\": 8.0, \"factor\": 4.0}, "),
	 "config.json: 'rope_scaling': key 'factor' given twice"},
	/* json.load refuses it; cJSON skips it */
	{"\xef\xbb\xbf" LLAMA_CFG(""), "config.json: begins with a UTF-8 byte order mark"},
	/* the converter's permutation of k divides by it */
	{LLAMA_CFG("\"n_kv_heads\": 0, "), "config.json: n_kv_heads: 0"},
	/* cJSON would read the key as "num_attention_heads" */
	{LLAMA_CFG("\"num_attention_heads\\u0000x\": 2, "), "config.json: a string holds \\u0000"},
};

START_TEST(test_gguf_config_refused)
{
	struct wf_model *m;
	struct wf_tree *t = llama_tree(LLAMA_CFG(""), strlen(LLAMA_CFG("")), &m);
	ck_assert_msg(t->gguf != NULL, "the tiny llama has no model.gguf (%s): the test tests nothing", t->gguf_why);
	llama_done(t, m);
	t = llama_tree(llama_refused[_i].cfg, strlen(llama_refused[_i].cfg), &m);
	ck_assert_msg(t->gguf == NULL && t->gguf_why && strstr(t->gguf_why, llama_refused[_i].why),
		      "case %d: model.gguf %s, why %s", _i, t->gguf ? "made" : "left out", t->gguf_why);
	ck_assert_ptr_null(strchr(t->gguf_why, '\n'));
	ck_assert_msg(strstr(t->summary, llama_refused[_i].why), "WEIGHTFS.txt does not say why");
	llama_done(t, m);
}
END_TEST

/* num_key_value_heads 0, and Llama 3 rope with an odd head_dim: the
 * converter's torch.arange(0, 7, 2) gives 4 frequencies. */
START_TEST(test_gguf_config_heads)
{
	struct wf_model *m;
	const char *kv0 = "{\"architectures\": [\"Qwen2ForCausalLM\"], \"model_type\": \"qwen2\", "
			  "\"num_hidden_layers\": 1, \"hidden_size\": 2, \"num_attention_heads\": 1, "
			  "\"num_key_value_heads\": 0, \"vocab_size\": 3}";
	struct wf_tree *t = llama_tree(kv0, strlen(kv0), &m);
	ck_assert_msg(t->gguf == NULL && t->gguf_why && strstr(t->gguf_why, "config.json: num_key_value_heads: 0"),
		      "model.gguf %s, why %s", t->gguf ? "made" : "left out", t->gguf_why);
	llama_done(t, m);
	for (int hd = 6; hd <= 7; hd++) {
		char cfg[1024];
		snprintf(cfg, sizeof cfg, LLAMA_CFG("\"head_dim\": %d, \"rope_scaling\": {\"rope_type\": \"llama3\"}, "), hd);
		t = llama_tree(cfg, strlen(cfg), &m);
		ck_assert_msg(t->gguf != NULL, "head_dim %d: %s", hd, t->gguf_why);
		const struct wf_arch_tensor *r = &t->gguf->plan.t[0];
		ck_assert_str_eq(r->name, "rope_freqs.weight");
		ck_assert_uint_eq(r->ne[0], (uint64_t)(hd + 1) / 2);
		llama_done(t, m);
	}
}
END_TEST

/* generation_config.json as gguf-py's Metadata.load_generation_config
 * reads it: a file json.load refuses (a byte order mark, bytes after the
 * value) gives no sampling keys; a key given twice (json.load keeps the
 * last) leaves model.gguf out. */
START_TEST(test_gguf_generation_config)
{
	static const struct {
		const char *text;
		int top_k; /* the general.sampling.top_k written; 0: none; -1: no model.gguf */
	} cases[] = {
		{"{\"top_k\": 20}", 20},
		{"\xef\xbb\xbf{\"top_k\": 20}", 0},
		{"{\"top_k\": 20} x", 0},
		{"{\"top_k\": 20, \"top_k\": 30}", -1},
	};
	const char *cfg = LLAMA_CFG("");
	for (size_t i = 0; i < WF_ARRAY_LEN(cases); i++) {
		struct wf_model *m;
		side_name = "generation_config.json";
		side_text = cases[i].text;
		struct wf_tree *t = llama_tree(cfg, strlen(cfg), &m);
		side_name = NULL;
		if (cases[i].top_k < 0) {
			ck_assert_msg(t->gguf == NULL && t->gguf_why &&
				      strstr(t->gguf_why, "generation_config.json: key 'top_k' given twice"),
				      "case %zu: %s", i, t->gguf_why);
		} else {
			ck_assert_msg(t->gguf != NULL, "case %zu: %s", i, t->gguf_why);
			const char key[] = "general.sampling.top_k";
			const char *k = memmem(t->gguf->header, t->gguf->header_len, key, sizeof key - 1);
			ck_assert_msg((k != NULL) == (cases[i].top_k > 0), "case %zu: top_k %s", i, k ? "written" : "not written");
			int32_t v = 0;
			if (k)
				memcpy(&v, k + sizeof key - 1 + 4, 4); /* after the type */
			ck_assert_int_eq(v, cases[i].top_k);
		}
		llama_done(t, m);
	}
}
END_TEST

/* A config.json over the 64 MiB a folder's small file may have is left
 * out, and said so: model.gguf too, for that reason (it was "config.json:
 * missing", and a model.gguf made as if there were none). */
START_TEST(test_gguf_config_too_big)
{
	size_t n = (size_t)WF_SIDECAR_MAX + 1;
	char *big = malloc(n);
	ck_assert_ptr_nonnull(big);
	const char *cfg = LLAMA_CFG("");
	memset(big, ' ', n);
	memcpy(big, cfg, strlen(cfg));
	struct wf_model *m;
	struct wf_tree *t = llama_tree(big, n, &m);
	free(big);
	char want[128];
	snprintf(want, sizeof want, "config.json: %zu bytes, more than the %u", n, WF_SIDECAR_MAX);
	ck_assert_msg(m->left_out && strstr(m->left_out, want), "left out: %s", m->left_out);
	ck_assert_msg(t->gguf == NULL && t->gguf_why && strstr(t->gguf_why, want), "model.gguf %s, why %s",
		      t->gguf ? "made" : "left out", t->gguf_why);
	ck_assert(!root_has(m, "config.json"));
	llama_done(t, m);
}
END_TEST

START_TEST(test_folder_single)
{
	/* a folder with one model.safetensors, or one GGUF: no parts.json */
	tmp_make();
	st_shard("model.safetensors", shard1, 2, NULL);
	write_str("config.json", "{}");
	struct wf_model *m = expect_open(".");
	ck_assert_uint_eq(m->n_parts, 1);
	ck_assert_ptr_null(m->parts_json);
	ck_assert_str_eq(m->parts[0].name, "model.safetensors");
	ck_assert_uint_eq(m->n_sidecars, 1);
	ck_assert(!root_has(m, "parts.json"));
	wf_model_free(m);
	unlink(at("model.safetensors"));
	write_gguf("tiny.gguf", &(struct gpart){-1, -1, -1, "one", {"a.weight"}, 0});
	m = expect_open(".");
	ck_assert_int_eq(m->format, WF_FMT_GGUF);
	ck_assert_uint_eq(m->n_sidecars, 1);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

START_TEST(test_folder_st_set)
{
	/* diffusers-style unindexed PREFIX-0000N-of-0000M.safetensors */
	tmp_make();
	st_shard("diffusion_pytorch_model-00001-of-00002.safetensors", shard1, 2, NULL);
	st_shard("diffusion_pytorch_model-00002-of-00002.safetensors", shard2, 1, NULL);
	struct wf_model *m = expect_open(".");
	ck_assert_uint_eq(m->n_parts, 2);
	ck_assert_uint_eq(m->n_tensors, 3);
	ck_assert_uint_eq(m->tensors[2].part, 1);
	cJSON *pj = parse_json(m->parts_json, m->parts_json_len);
	ck_assert_str_eq(json_str(pj, "form"), "safetensors set");
	cJSON_Delete(pj);
	wf_model_free(m);
	unlink(at("diffusion_pytorch_model-00002-of-00002.safetensors"));
	expect_fail(".", WF_ERR_IO, "diffusion_pytorch_model-00002-of-00002.safetensors: missing", NULL);
	tmp_remove();
}
END_TEST

START_TEST(test_folder_bad)
{
	tmp_make();
	/* none: the message lists what is there */
	write_str("config.json", "{}");
	write_str("pytorch_model.bin", "PK\3\4");
	expect_fail(".", WF_ERR_IO, "no GGUF or safetensors model in the folder", "config.json, pytorch_model.bin");
	/* two models */
	st_shard("model.safetensors", shard1, 2, NULL);
	write_gguf("model-q4.gguf", &(struct gpart){-1, -1, -1, "q4", {"a.weight"}, 0});
	expect_fail(".", WF_ERR_IO, "the folder holds 2 models", "model-q4.gguf, model.safetensors");
	unlink(at("model-q4.gguf"));
	/* an index and a shard it does not name */
	write_st_set(good_index);
	expect_fail(".", WF_ERR_IO, "the folder holds 2 models", INDEX ", model.safetensors");
	unlink(at("model.safetensors"));
	/* two GGUF split sets */
	write_split(good_split, 3);
	expect_fail(".", WF_ERR_IO, "the folder holds 2 models", "split-*-of-00003.gguf");
	tmp_remove();
	/* split-named GGUFs that are no split set */
	tmp_make();
	write_gguf("m-00001-of-00002.gguf", &(struct gpart){-1, -1, -1, "a", {"a.weight"}, 0});
	write_gguf("m-00002-of-00002.gguf", &(struct gpart){-1, -1, -1, "b", {"b.weight"}, 0});
	expect_fail(".", WF_ERR_FORMAT, "m-00001-of-00002.gguf: named as a part of m-*-of-00002.gguf",
		    "no split.count");
	tmp_remove();
}
END_TEST

/* Models in a folder are grouped by (kind, prefix, count), numbered in
 * the order of their first file; a folder of many one-file "sets" is
 * grouped by one sort (a pairwise scan took 48 s for 40,000 files, past
 * the 30 s this test is given; the sort takes 0.2 s). */
START_TEST(test_folder_grouping)
{
	tmp_make();
	static const char *const names[] = {"a-00002-of-00002.gguf", "a-00001-of-00002.gguf",
					    "a-00001-of-00003.gguf", "a-00001-of-00002.safetensors",
					    "a.gguf", "ab-00001-of-00002.gguf", "b.safetensors"};
	for (size_t i = 0; i < WF_ARRAY_LEN(names); i++)
		write_str(names[i], "");
	expect_fail(".", WF_ERR_IO,
		    "the folder holds 6 models: a-*-of-00002.gguf, a-*-of-00002.safetensors, a-*-of-00003.gguf, "
		    "a.gguf, ab-*-of-00002.gguf, b.safetensors;",
		    NULL);
	tmp_remove();

	tmp_make();
	char name[64];
	for (int i = 0; i < 20000; i++) {
		snprintf(name, sizeof name, "m%05d-00001-of-00002.gguf", i);
		write_str(name, "");
		snprintf(name, sizeof name, "x-00001-of-%05d.safetensors", i + 2);
		write_str(name, "");
	}
	expect_fail(".", WF_ERR_IO, "the folder holds 40000 models: m00000-*-of-00002.gguf, m00001-*-of-00002.gguf",
		    "and 39992 more");
	tmp_remove();
}
END_TEST

/* A hub cache models--org--name with one snapshot whose entries are
 * symlinks into blobs/. */
static void write_hub(bool refs)
{
	mkdir_rel("models--org--name");
	mkdir_rel("models--org--name/blobs");
	mkdir_rel("models--org--name/refs");
	mkdir_rel("models--org--name/snapshots");
	mkdir_rel("models--org--name/snapshots/0123abcd");
	if (refs)
		write_str("models--org--name/refs/main", "0123abcd");
	static const char *const files[] = {SH1, SH2, SH3, INDEX, "config.json"};
	write_st_set(good_index);
	write_str("config.json", "{\"hub\": true}");
	for (size_t i = 0; i < WF_ARRAY_LEN(files); i++) {
		char blob[64], link[256], target[128];
		snprintf(blob, sizeof blob, "models--org--name/blobs/b%zu", i);
		ck_assert_int_eq(rename(at(files[i]), at(blob)), 0);
		snprintf(link, sizeof link, "models--org--name/snapshots/0123abcd/%s", files[i]);
		snprintf(target, sizeof target, "../../blobs/b%zu", i);
		ck_assert_int_eq(symlink(target, at(link)), 0);
	}
}

START_TEST(test_hub_cache)
{
	tmp_make();
	write_hub(true);
	static const char *const given[] = {"models--org--name", "models--org--name/snapshots/0123abcd",
					    "models--org--name/snapshots/0123abcd/" INDEX,
					    "models--org--name/snapshots/0123abcd/" SH2};
	for (size_t i = 0; i < WF_ARRAY_LEN(given); i++) {
		struct wf_model *m = expect_open(given[i]);
		check_good_index(m);
		/* names as the snapshot gives them; paths to the blobs */
		ck_assert_str_eq(m->parts[1].name, SH2);
		ck_assert_msg(strstr(m->parts[1].path, "/blobs/b1") != NULL, "%s", m->parts[1].path);
		/* the folder's config.json: shown for the folder, read for a file of it */
		ck_assert_uint_eq(m->n_sidecars, 1);
		ck_assert(m->sidecars_beside == (i >= 2));
		ck_assert_uint_eq(m->sidecars[0].len, 13);
		ck_assert(memcmp(m->sidecars[0].data, "{\"hub\": true}", 13) == 0);
		if (i < 2)
			check_root_blob(m, "config.json", "{\"hub\": true}", 13);
		else
			ck_assert(!root_has(m, "config.json"));
		wf_model_free(m);
	}
	/* a blob gone: the dangling link is a missing shard */
	unlink(at("models--org--name/blobs/b2"));
	expect_fail("models--org--name", WF_ERR_IO, SH3 ": missing", NULL);
	tmp_remove();
}
END_TEST

START_TEST(test_hub_cache_no_refs)
{
	/* no refs/main: the one snapshot; two: refused; a loop: no recursion */
	tmp_make();
	write_hub(false);
	struct wf_model *m = expect_open("models--org--name");
	check_good_index(m);
	wf_model_free(m);
	mkdir_rel("models--org--name/snapshots/4567");
	expect_fail("models--org--name", WF_ERR_IO, "no GGUF or safetensors model in the folder", "blobs");
	tmp_remove();
	tmp_make();
	mkdir_rel("loop");
	mkdir_rel("loop/refs");
	mkdir_rel("loop/snapshots");
	write_str("loop/refs/main", "r");
	ck_assert_int_eq(symlink("..", at("loop/snapshots/r")), 0);
	expect_fail("loop", WF_ERR_IO, "no GGUF or safetensors model in the folder", NULL);
	/* refs/main that names nothing usable says so, not "no model" */
	ck_assert_int_eq(unlink(at("loop/snapshots/r")), 0);
	expect_fail("loop", WF_ERR_IO, "refs/main names revision 'r', which has no folder in snapshots/", NULL);
	write_str("loop/refs/main", "\n");
	expect_fail("loop", WF_ERR_IO, "refs/main names no revision", NULL);
	write_str("loop/refs/main", "../x");
	expect_fail("loop", WF_ERR_IO, "refs/main names no revision", NULL);
	ck_assert_int_eq(unlink(at("loop/refs/main")), 0);
	ck_assert_int_eq(mkfifo(at("loop/refs/main"), 0600), 0);
	expect_fail("loop", WF_ERR_IO, "refs/main is not a regular file", NULL);
	tmp_remove();
}
END_TEST

/* ---- descriptors ---- */

/* Descriptors open in this process. */
static unsigned count_fds(void)
{
	unsigned n = 0;
	for (int fd = 0; fd < 4096; fd++)
		n += fcntl(fd, F_GETFD) != -1;
	return n;
}

/* s-NNNNN-of-N.safetensors shards of one tensor t.I each, and their
 * index, in a fresh tmp folder's files. */
static void write_index_set(int n)
{
	struct wf_buf wm = {0};
	wf_buf_puts(&wm, "{\"weight_map\": {");
	for (int i = 0; i < n; i++) {
		char shard[64], tn[32];
		snprintf(shard, sizeof shard, "s-%05d-of-%05d.safetensors", i + 1, n);
		snprintf(tn, sizeof tn, "t.%d", i);
		const char *names[] = {tn};
		st_shard(shard, names, 1, NULL);
		wf_buf_printf(&wm, "%s\"%s\": \"%s\"", i ? "," : "", tn, shard);
	}
	wf_buf_puts(&wm, "}}");
	write_buf("s.safetensors.index.json", &wm);
}

/* Two sets open at once share the limit: the second keeps part of what
 * the first left, and the process can still open files.  (Each set once
 * took soft limit - 64 for itself, so the second ran out of descriptors.) */
START_TEST(test_fd_budget_two_sets)
{
	enum { N = 60 };
	tmp_make();
	write_index_set(N);
	struct rlimit rl, saved;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &saved), 0);
	rl = saved;
	rl.rlim_cur = 100;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	struct wf_model *a = expect_open("."), *b = expect_open(".");
	for (uint32_t i = 0; i < N; i++) {
		ck_assert_int_eq(wf_model_check(a, i, NULL), WF_OK);
		ck_assert_int_eq(wf_model_check(b, i, NULL), WF_OK);
	}
	unsigned used = count_fds();
	ck_assert_msg(used <= 100 - 16, "%u of 100 descriptors in use after two sets", used);
	int fds[16];
	for (int i = 0; i < 16; i++)
		ck_assert_int_ge(fds[i] = open("/dev/null", O_RDONLY), 0);
	for (int i = 0; i < 16; i++)
		close(fds[i]);
	wf_model_free(a);
	wf_model_free(b);
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &saved), 0);
	tmp_remove();
}
END_TEST

START_TEST(test_fd_budget)
{
	/* with a soft limit of 40, 20 descriptors are kept; the other parts
	 * are closed after mapping and checked by path */
	enum { N = 30 };
	tmp_make();
	write_index_set(N);
	struct rlimit rl;
	ck_assert_int_eq(getrlimit(RLIMIT_NOFILE, &rl), 0);
	rl.rlim_cur = 40;
	ck_assert_int_eq(setrlimit(RLIMIT_NOFILE, &rl), 0);
	unsigned before = count_fds();
	struct wf_model *m = expect_open(".");
	ck_assert_uint_eq(m->n_parts, N);
	uint32_t open_fds = 0;
	for (uint32_t i = 0; i < N; i++) {
		open_fds += m->parts[i].fd >= 0;
		ck_assert_int_eq(wf_model_check(m, i, NULL), WF_OK);
		ck_assert_ptr_nonnull(m->parts[i].data);
	}
	/* half of what the limit left free, which was 40 less those open */
	ck_assert_uint_eq(open_fds, (40 - before) / 2);
	ck_assert_int_lt(m->parts[N - 1].fd, 0);
	/* a closed part that is truncated, or replaced by rename, is a change */
	char err[WF_ERRLEN];
	ck_assert_int_eq(truncate(m->parts[N - 1].path, 10), 0);
	ck_assert_int_eq(wf_model_check(m, N - 1, err), WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "size changed") != NULL, "%s", err);
	st_shard("other", (const char *const[]){"t.0"}, 1, NULL);
	ck_assert_int_eq(rename(at("other"), m->parts[N - 2].path), 0);
	ck_assert_int_eq(wf_model_check(m, N - 2, err), WF_ERR_CHANGED);
	ck_assert_msg(strstr(err, "another file") != NULL, "%s", err);
	/* an open one replaced by rename is still the file mounted */
	st_shard("other", (const char *const[]){"t.0"}, 1, NULL);
	ck_assert_int_eq(rename(at("other"), m->parts[0].path), 0);
	ck_assert_int_eq(wf_model_check(m, 0, err), WF_OK);
	wf_model_free(m);
	tmp_remove();
}
END_TEST

/* ---- files that are no model ---- */

START_TEST(test_not_a_model)
{
	tmp_make();
	write_str("README.md", "# Model card\n\nSome text.\n");
	write_bytes("pytorch_model.bin", "PK\3\4\24\0\0\0\10\0", 10);
	write_bytes("model.pkl", "\x80\x04\x95\x10\0\0\0", 7);
	write_str("config.json", "{\"model_type\": \"bert\"}");
	expect_fail("README.md", WF_ERR_FORMAT, "not a GGUF or safetensors file", "text");
	expect_fail("pytorch_model.bin", WF_ERR_FORMAT, "not a GGUF or safetensors file", "zip");
	expect_fail("model.pkl", WF_ERR_FORMAT, "not a GGUF or safetensors file", "pickle");
	expect_fail("config.json", WF_ERR_FORMAT, "not a GGUF or safetensors file", NULL);
	tmp_remove();
}
END_TEST

/* ---- file names that hold control characters ---- */

/* A message a terminal shows as one line: no control byte at all (a
 * newline would make two lines, an ESC a terminal command). */
static void check_one_line(const char *err)
{
	for (const unsigned char *c = (const unsigned char *)err; *c; c++)
		ck_assert_msg(*c >= 0x20 && *c != 0x7F, "control byte 0x%02x at %td of: %s", *c,
			      (const char *)c - err, err);
}

static void expect_fail_one_line(const char *rel, enum wf_err code, const char *want1, const char *want2)
{
	char err[WF_ERRLEN] = "";
	struct wf_model *m = (struct wf_model *)1;
	enum wf_err rc = wf_set_open(&m, at(rel), err);
	ck_assert_msg(rc == code, "%s: rc %d, expected %d (%s)", rel, rc, code, err);
	ck_assert_ptr_null(m);
	check_one_line(err);
	check_err(err, want1, want2);
}

START_TEST(test_quote_path)
{
	char q[WF_QPATH];
	/* printable names come back as they are, the very pointer */
	static const char *const clean[] = {"/tmp/model.gguf", "a b\\c'd.gguf", "mod\xc3\xa8le.gguf", "\xe2\x82\xac",
					    "",
					    /* the neighbours of the code points refused below */
					    "nbsp\xc2\xa0", "\xd8\x9b\xd8\x9d", "\xe2\x80\x8d\xe2\x80\x90", "\xe2\x80\xa7",
					    "\xe2\x80\xaf", "\xe2\x81\xa5\xe2\x81\xaa", "\xf0\x9f\x98\x80"};
	for (size_t i = 0; i < WF_ARRAY_LEN(clean); i++)
		ck_assert_ptr_eq(wf_quote_path(q, sizeof q, clean[i]), clean[i]);
	ck_assert_str_eq(wf_quote_path(q, sizeof q, NULL), "");
	/* anything else is quoted, with every byte that is not printable escaped */
	static const char *const dirty[][2] = {
		{"a\nb.safetensors", "'a\\x0ab.safetensors'"},
		{"/m/x\x1b[2Jy.gguf", "'/m/x\\x1b[2Jy.gguf'"},
		{"del\x7f", "'del\\x7f'"},
		{"bad\xff.gguf", "'bad\\xff.gguf'"},
		{"c1\xc2\x9b" "31m", "'c1\\xc2\\x9b31m'"},          /* U+009B, the one-byte CSI */
		{"t\tab\\x'q", "'t\\x09ab\\x5cx\\x27q'"},          /* then \ and ' are escaped too */
		{"'quoted'", "'\\x27quoted\\x27'"},               /* a clean name never starts with ' */
		/* valid UTF-8 that reorders or breaks a line on screen */
		{"a\xe2\x80\xae" "b", "'a\\xe2\\x80\\xaeb'"},          /* U+202E right-to-left override */
		{"a\xe2\x80\xaa" "b", "'a\\xe2\\x80\\xaab'"},          /* U+202A, the first embedding */
		{"a\xe2\x80\xa8" "b", "'a\\xe2\\x80\\xa8b'"},          /* U+2028 line separator */
		{"a\xe2\x80\xa9" "b", "'a\\xe2\\x80\\xa9b'"},          /* U+2029 paragraph separator */
		{"a\xe2\x80\x8e" "b", "'a\\xe2\\x80\\x8eb'"},          /* U+200E left-to-right mark */
		{"a\xe2\x80\x8f" "b", "'a\\xe2\\x80\\x8fb'"},          /* U+200F */
		{"a\xe2\x81\xa6" "b", "'a\\xe2\\x81\\xa6b'"},          /* U+2066, the first isolate */
		{"a\xe2\x81\xa9" "b", "'a\\xe2\\x81\\xa9b'"},          /* U+2069, the last */
		{"a\xd8\x9c" "b", "'a\\xd8\\x9cb'"},                   /* U+061C Arabic letter mark */
		{"a\xc2\x80" "b", "'a\\xc2\\x80b'"},                   /* U+0080, the first C1 */
		{"a\xc2\x9f" "b", "'a\\xc2\\x9fb'"},                   /* U+009F, the last */
	};
	for (size_t i = 0; i < WF_ARRAY_LEN(dirty); i++) {
		const char *r = wf_quote_path(q, sizeof q, dirty[i][0]);
		ck_assert_ptr_eq(r, q);
		ck_assert_str_eq(r, dirty[i][1]);
	}
	/* a long one is cut, still one line */
	char longname[600];
	memset(longname, '\n', sizeof longname - 1);
	longname[sizeof longname - 1] = '\0';
	const char *r = wf_quote_path(q, sizeof q, longname);
	ck_assert_uint_lt(strlen(r), sizeof q);
	ck_assert_ptr_nonnull(strstr(r, "..."));
	check_one_line(r);
}
END_TEST

/* Folder entries and parts named with a newline or an ESC: every refusal
 * is one line and names the file, escaped. */
START_TEST(test_names_one_line)
{
	/* a broken single file */
	tmp_make();
	write_str("a\nb.safetensors", "junk junk junk");
	expect_fail_one_line(".", WF_ERR_FORMAT, "'a\\x0ab.safetensors': ", NULL);
	tmp_remove();
	/* a split GGUF whose prefix holds a newline, one part missing: the
	 * name of a part that is not there comes from the one that is */
	tmp_make();
	write_gguf("m\n-00001-of-00002.gguf", &(struct gpart){0, 2, -1, "a", {"a.weight"}, 0});
	expect_fail_one_line(".", WF_ERR_IO, "'m\\x0a-00002-of-00002.gguf': missing", NULL);
	expect_fail_one_line("m\n-00001-of-00002.gguf", WF_ERR_IO, "'m\\x0a-00002-of-00002.gguf': missing", NULL);
	/* ... and with a part that is not a GGUF */
	st_shard("m\n-00002-of-00002.gguf", shard2, 1, NULL);
	expect_fail_one_line(".", WF_ERR_FORMAT, "'m\\x0a-00002-of-00002.gguf': not a GGUF file", NULL);
	tmp_remove();
	/* an unindexed safetensors set named with an ESC, one shard missing */
	tmp_make();
	st_shard("x\x1b[2J-00001-of-00002.safetensors", shard1, 2, NULL);
	expect_fail_one_line(".", WF_ERR_IO, "'x\\x1b[2J-00002-of-00002.safetensors': missing", NULL);
	/* two models: both listed, the ESC one escaped */
	write_gguf("q\x1b]0;t\x07.gguf", &(struct gpart){-1, -1, -1, "q", {"a.weight"}, 0});
	expect_fail_one_line(".", WF_ERR_IO, "the folder holds 2 models: ",
			     "'q\\x1b]0;t\\x07.gguf', 'x\\x1b[2J-*-of-00002.safetensors'");
	tmp_remove();
	/* no model: the entries listed are escaped */
	tmp_make();
	write_str("read\nme", "x");
	write_str("config.json", "{}");
	expect_fail_one_line(".", WF_ERR_IO, "no GGUF or safetensors model", "config.json, 'read\\x0ame'");
	tmp_remove();
	/* an index named with a newline, broken, and one whose shard is not there */
	tmp_make();
	write_str("i\n.safetensors.index.json", "{");
	expect_fail_one_line(".", WF_ERR_FORMAT, "'i\\x0a.safetensors.index.json': invalid JSON", NULL);
	expect_fail_one_line("i\n.safetensors.index.json", WF_ERR_FORMAT, "'i\\x0a.safetensors.index.json': invalid JSON",
			     NULL);
	write_st_set(NULL);
	write_str("i\n.safetensors.index.json", "{" WMAP "}");
	unlink(at(SH2));
	expect_fail_one_line(".", WF_ERR_IO, SH2 ": missing", NULL);
	write_st_set(NULL);
	write_str("i\n.safetensors.index.json", "{\"metadata\":{\"total_size\":41}," WMAP "}");
	expect_fail_one_line(".", WF_ERR_FORMAT, "'i\\x0a.safetensors.index.json': metadata.total_size is 41", NULL);
	tmp_remove();
}
END_TEST

static Suite *set_suite(void)
{
	Suite *s = suite_create("set");
	TCase *tc = tcase_create("split");
	tcase_add_test(tc, test_split_ok);
	tcase_add_test(tc, test_split_without_total);
	tcase_add_loop_test(tc, test_split_bad, 0, (int)WF_ARRAY_LEN(bad_splits));
	suite_add_tcase(s, tc);
	tc = tcase_create("index");
	tcase_add_test(tc, test_index_ok);
	tcase_add_test(tc, test_index_key_order);
	tcase_add_loop_test(tc, test_index_bad, 0, (int)WF_ARRAY_LEN(bad_indexes));
	tcase_add_test(tc, test_index_bad_shards);
	suite_add_tcase(s, tc);
	tc = tcase_create("folder");
	tcase_add_test(tc, test_folder_sidecars);
	tcase_add_test(tc, test_folder_unreadable_stray);
	tcase_add_loop_test(tc, test_gguf_config_refused, 0, (int)WF_ARRAY_LEN(llama_refused));
	tcase_add_test(tc, test_gguf_config_heads);
	tcase_add_test(tc, test_gguf_config_too_big);
	tcase_add_test(tc, test_gguf_generation_config);
	tcase_add_test(tc, test_folder_single);
	tcase_add_test(tc, test_folder_st_set);
	tcase_add_test(tc, test_folder_bad);
	tcase_add_test(tc, test_hub_cache);
	tcase_add_test(tc, test_hub_cache_no_refs);
	tcase_add_test(tc, test_fd_budget);
	tcase_add_test(tc, test_fd_budget_two_sets);
	tcase_add_test(tc, test_not_a_model);
	suite_add_tcase(s, tc);
	tc = tcase_create("names");
	tcase_add_test(tc, test_quote_path);
	tcase_add_test(tc, test_names_one_line);
	suite_add_tcase(s, tc);
	tc = tcase_create("folder_many");
	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, test_folder_grouping);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	SRunner *sr = srunner_create(set_suite());
	srunner_run_all(sr, CK_NORMAL);
	int failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}
