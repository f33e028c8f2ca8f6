/* wf_vocab_sp.c - gguf-py's SpecialVocab (vocab.py), step by step: the
 * merges, the special token ids from tokenizer.json + tokenizer_config.json
 * and then config.json, the add_*_token flags from the post_processor and
 * tokenizer_config.json, the chat template and the normalizer flags, then
 * add_to_gguf's write order.  Its "crude" TemplateProcessing parsing is
 * followed as written, comparisons included: a tokenizer_config value
 * that is a dict ({"content": ...}) never equals a token string there. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <stdio.h>
#include <string.h>

/* every special token type SpecialVocab may be asked about */
enum { ST_BOS, ST_EOS, ST_UNK, ST_SEP, ST_PAD, ST_CLS, ST_MASK, ST_EOT, ST_EOM, ST_PREFIX, ST_SUFFIX, ST_MIDDLE, ST_N };
static const char *const st_name[ST_N] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask",
					  "eot", "eom", "prefix", "suffix", "middle"};
/* gguf_writer's add_{typ}_token_id keys; NULL: no handler, skipped */
static const char *const st_id_key[ST_N] = {
	"tokenizer.ggml.bos_token_id", "tokenizer.ggml.eos_token_id", "tokenizer.ggml.unknown_token_id",
	"tokenizer.ggml.seperator_token_id", "tokenizer.ggml.padding_token_id", NULL, "tokenizer.ggml.mask_token_id",
	"tokenizer.ggml.eot_token_id", "tokenizer.ggml.eom_token_id", NULL, NULL, NULL};
/* add_add_{typ}_token keys */
static const char *const st_add_key[ST_N] = {"tokenizer.ggml.add_bos_token", "tokenizer.ggml.add_eos_token", NULL,
					     "tokenizer.ggml.add_sep_token", NULL, NULL, NULL, NULL, NULL, NULL, NULL, NULL};

struct sv {
	struct voc *v;
	int types[ST_N];    /* special_token_types, in order */
	size_t n_types;
	int64_t n_vocab;    /* -1: None */
	int id_ord[ST_N];   /* special_token_ids, a dict: insertion order */
	size_t n_id;
	int64_t id[ST_N];
	bool has_id[ST_N];
	int add_ord[ST_N];  /* add_special_token */
	size_t n_add;
	bool add[ST_N], has_add[ST_N];
	/* tokenizer_config['{typ}_token'] once the converter has assigned it */
	const cJSON *tcv[ST_N];
	bool tc_set[ST_N];
	int lower, strip;   /* normalizer flags: -1 None */
	bool load_merges;
};

static int st_find(const char *name)
{
	for (int i = 0; i < ST_N; i++)
		if (strcmp(st_name[i], name) == 0)
			return i;
	return -1;
}

static bool has_type(const struct sv *s, int t)
{
	for (size_t i = 0; i < s->n_types; i++)
		if (s->types[i] == t)
			return true;
	return false;
}

/* tokenizer_config.get('{typ}_token'), with the converter's assignments */
static const cJSON *tcget(const struct sv *s, int t)
{
	char key[32];
	if (s->tc_set[t])
		return s->tcv[t];
	snprintf(key, sizeof key, "%s_token", st_name[t]);
	return jget(s->v->tc, key);
}

static void tcput(struct sv *s, int t, const cJSON *val)
{
	s->tcv[t] = val;
	s->tc_set[t] = true;
}

static void set_add(struct sv *s, int t, bool b)
{
	if (!s->has_add[t]) {
		s->has_add[t] = true;
		s->add_ord[s->n_add++] = t;
	}
	s->add[t] = b;
}

/* _set_special_token: ints only, negative ones refused (ValueError), the
 * first value kept, ids from n_vocab up skipped.  has: an int was given. */
static enum wf_err set_special_id(struct sv *s, int t, bool has, int64_t id, const char *src)
{
	if (!has)
		return WF_OK;
	if (id < 0)
		return wf_fail(s->v->err, WF_ERR_FORMAT, "%s: %s token id %" PRId64 " is negative", src, st_name[t], id);
	if (s->n_vocab >= 0 && id >= s->n_vocab)
		return WF_OK;
	if (s->has_id[t])
		return WF_OK;
	if (id > (int64_t)UINT32_MAX)
		return wf_fail(s->v->err, WF_ERR_FORMAT, "%s: %s token id %" PRId64 " does not fit a u32", src, st_name[t], id);
	s->has_id[t] = true;
	s->id[t] = id;
	s->id_ord[s->n_id++] = t;
	return WF_OK;
}

static enum wf_err set_special(struct sv *s, int t, const cJSON *j, const char *src)
{
	int64_t id = 0;
	bool has = j && jint(j, &id);
	return set_special_id(s, t, has, id, src);
}

/* a == b where a is a token string (from a template) and b any value */
static bool same(const cJSON *a, const cJSON *b)
{
	return cJSON_IsString(a) && cJSON_IsString(b) && strcmp(a->valuestring, b->valuestring) == 0;
}

/* item.get(key, {}).get('id'): NULL for None; an item or key value that
 * is not an object makes the converter fail, and an id that is neither
 * None nor a string is refused as something it would compare oddly. */
static enum wf_err tmpl_id(struct sv *s, const cJSON *item, const char *key, const cJSON **out)
{
	const cJSON *k = jget(item, key), *id;
	*out = NULL;
	if (!cJSON_IsObject(item) || (k && !cJSON_IsObject(k)))
		return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor: template item not an object");
	id = jget(k, "id");
	if (id && !cJSON_IsNull(id) && !cJSON_IsString(id))
		return wf_fail(s->v->err, WF_ERR_UNSUP, "tokenizer.json: post_processor: template %s id not a string", key);
	*out = cJSON_IsNull(id) ? NULL : id;
	return WF_OK;
}

/* SpecialVocab's locals special_bos, _cls, _eos, _sep while it reads the
 * post_processor (NULL: None), and special_first / special_last. */
struct loc {
	const cJSON *bos, *cls, *eos, *sep, *first, *last;
	bool tc;            /* tokenizer_config is truthy */
};

static enum wf_err roberta(struct sv *s, struct loc *l, const cJSON *proc)
{
	static const int ty[3] = {ST_BOS, ST_EOS, ST_SEP};
	for (int i = 0; i < 3; i++)
		set_add(s, ty[i], true);
	for (int i = 0; i < 2; i++) {
		const cJSON **dst = i ? &l->sep : &l->cls;
		const cJSON *c = jget(proc, i ? "sep" : "cls");
		if (jtruthy(*dst) || !l->tc)
			continue;
		if (c && (!cJSON_IsArray(c) || !c->child))
			return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor: RobertaProcessing %s not a list",
				       i ? "sep" : "cls");
		*dst = c ? c->child : (i ? l->eos : l->bos);
		tcput(s, i ? ST_SEP : ST_CLS, *dst);
	}
	return WF_OK;
}

static enum wf_err tmpl_single(struct sv *s, struct loc *l, const cJSON *single)
{
	enum wf_err rc = tmpl_id(s, cJSON_GetArrayItem(single, 0), "SpecialToken", &l->first);
	if (rc == WF_OK && jtruthy(l->first)) {
		if (!l->tc) {
			l->bos = l->first;
		} else if (!same(l->first, l->bos) && !same(l->first, l->cls)) {
			if (!jtruthy(l->bos))
				tcput(s, ST_BOS, l->bos = l->first);
			if (!jtruthy(l->cls))
				tcput(s, ST_CLS, l->cls = l->first);
		}
		set_add(s, ST_BOS, same(l->first, l->bos) || same(l->first, l->cls));
	}
	if (rc == WF_OK)
		rc = tmpl_id(s, cJSON_GetArrayItem(single, cJSON_GetArraySize(single) - 1), "SpecialToken", &l->last);
	if (rc != WF_OK || !jtruthy(l->last))
		return rc;
	if (!l->tc) {
		l->eos = l->last;
	} else if (!same(l->last, l->eos)) {
		/* the old eos becomes an eot (or eom) type */
		if (!has_type(s, ST_EOT)) {
			s->types[s->n_types++] = ST_EOT;
			tcput(s, ST_EOT, l->eos);
		} else if (!has_type(s, ST_EOM)) {
			s->types[s->n_types++] = ST_EOM;
			tcput(s, ST_EOM, l->eos);
		}
		tcput(s, ST_EOS, l->eos = l->last);
	}
	set_add(s, ST_EOS, same(l->last, l->eos));
	return WF_OK;
}

/* The pair template: A [sep] [eos] B decides add_sep. */
static enum wf_err tmpl_pair(struct sv *s, struct loc *l, const cJSON *pair)
{
	int n = cJSON_GetArraySize(pair), lo = 0, hi = n;
	const cJSON *id, *a, *b;
	enum wf_err rc = tmpl_id(s, cJSON_GetArrayItem(pair, 0), "SpecialToken", &id);
	if (rc == WF_OK && jtruthy(l->first) && same(id, l->first))
		lo = 1;
	if (rc == WF_OK)
		rc = tmpl_id(s, cJSON_GetArrayItem(pair, n - 1), "SpecialToken", &id);
	if (rc == WF_OK && jtruthy(l->last) && same(id, l->last))
		hi = n - 1;
	if (rc != WF_OK || hi <= lo)
		return rc;
	rc = tmpl_id(s, cJSON_GetArrayItem(pair, lo), "Sequence", &a);
	if (rc == WF_OK)
		rc = tmpl_id(s, cJSON_GetArrayItem(pair, hi - 1), "Sequence", &b);
	if (rc != WF_OK || !jstr_is(a, "A") || !jstr_is(b, "B") || hi - lo <= 2)
		return rc;
	lo++, hi--;
	bool add_sep = false;
	rc = tmpl_id(s, cJSON_GetArrayItem(pair, lo), "SpecialToken", &id);
	if (rc == WF_OK && jtruthy(id) && (same(id, l->sep) || same(id, l->eos)) && !jtruthy(l->last))
		add_sep = true;
	if (rc == WF_OK && hi - lo == 2) {
		rc = tmpl_id(s, cJSON_GetArrayItem(pair, lo + 1), "SpecialToken", &id);
		if (rc == WF_OK && jtruthy(id) && (same(id, l->sep) || same(id, l->eos)))
			add_sep = true;
	}
	if (rc != WF_OK)
		return rc;
	set_add(s, ST_SEP, add_sep);
	if (add_sep && !jtruthy(l->sep) && l->tc)
		tcput(s, ST_SEP, l->eos);
	return WF_OK;
}

static enum wf_err post_processor(struct sv *s, struct loc *l)
{
	const cJSON *pp = jget(s->v->tj, "post_processor"), *procs;
	enum wf_err rc = WF_OK;
	if (!jtruthy(pp))
		return WF_OK;
	if (!cJSON_IsObject(pp))
		return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor: not an object");
	procs = jget(pp, "processors");
	if (procs && !cJSON_IsArray(procs))
		return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor.processors: not a list");
	for (const cJSON *p = procs ? procs->child : pp; p && rc == WF_OK; p = procs ? p->next : NULL) {
		const cJSON *single, *pair;
		if (!cJSON_IsObject(p))
			return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor: a processor is not an object");
		if (jstr_is(jget(p, "type"), "RobertaProcessing")) {
			rc = roberta(s, l, p);
			continue;
		}
		if (!jstr_is(jget(p, "type"), "TemplateProcessing"))
			continue;
		single = jget(p, "single");
		pair = jget(p, "pair");
		if ((single && !cJSON_IsArray(single)) || (pair && !cJSON_IsArray(pair)))
			return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: post_processor: template not a list");
		l->first = l->last = NULL;
		if (cJSON_GetArraySize(single) > 1)
			rc = tmpl_single(s, l, single);
		if (rc == WF_OK && jtruthy(pair))
			rc = tmpl_pair(s, l, pair);
	}
	return rc;
}

/* _parse_normalizer; depth-limited (cJSON's own limit is 1000 levels, the
 * real files nest two). */
static enum wf_err normalizer(struct sv *s, const cJSON *n, int depth)
{
	const cJSON *t = jget(n, "type"), *x;
	if (!cJSON_IsObject(n) || depth > 32)
		return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: normalizer: not an object (or nested too deeply)");
	if (jstr_is(t, "Lowercase")) {
		s->lower = 1;
	} else if (jstr_is(t, "StripAccents")) {
		s->strip = 1;
	} else if (jstr_is(t, "BertNormalizer")) {
		for (int i = 0; i < 2; i++) {
			int *dst = i ? &s->strip : &s->lower;
			if (!(x = jget(n, i ? "strip_accents" : "lowercase")))
				continue;
			if (!cJSON_IsBool(x) && !cJSON_IsNull(x))
				return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: normalizer: BertNormalizer flag not a boolean");
			*dst = cJSON_IsNull(x) ? -1 : cJSON_IsTrue(x);
		}
	} else if (jstr_is(t, "Sequence")) {
		x = jget(n, "normalizers");
		if (x && !cJSON_IsArray(x))
			return wf_fail(s->v->err, WF_ERR_FORMAT, "tokenizer.json: normalizer.normalizers: not a list");
		for (const cJSON *c = x ? x->child : NULL; c; c = c->next) {
			enum wf_err rc = normalizer(s, c, depth + 1);
			if (rc != WF_OK)
				return rc;
		}
	}
	return WF_OK;
}

/* The first tokenizer.json added_tokens entry whose content is exactly
 * `content`, or NULL. */
static const struct tjadd *added_entry(const struct sv *s, const char *content)
{
	const struct tjbig *b = &s->v->big;
	for (size_t i = 0; i < b->n_add; i++)
		if (b->add[i].content && strcmp(b->add[i].content, content) == 0)
			return &b->add[i];
	return NULL;
}

/* The loop over special_token_types at the end of _try_load_from_tokenizer_json. */
static enum wf_err tc_types(struct sv *s)
{
	char key[32];
	for (size_t i = 0; i < s->n_types; i++) {
		int t = s->types[i];
		const cJSON *e = tcget(s, t), *add;
		snprintf(key, sizeof key, "add_%s_token", st_name[t]);
		add = jget(s->v->tc, key);
		if (cJSON_IsBool(add))
			set_add(s, t, cJSON_IsTrue(add));
		if (cJSON_IsObject(e))
			e = jget(e, "content");
		if (!cJSON_IsString(e))
			continue;
		const struct tjadd *a = added_entry(s, e->valuestring);
		enum wf_err rc = set_special_id(s, t, a && a->id_ok, a ? a->id : 0, "tokenizer.json");
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

static enum wf_err from_tokenizer_json(struct sv *s)
{
	struct voc *v = s->v;
	const cJSON *at = jget(v->tj, "added_tokens"), *nz = jget(v->tj, "normalizer");
	struct loc l = {.tc = jtruthy(v->tc)};
	enum wf_err rc = WF_OK;
	if (v->tj && s->load_merges)
		rc = voc_merges(v);
	if (rc == WF_OK && jtruthy(nz))
		rc = normalizer(s, nz, 0);
	if (rc != WF_OK)
		return rc;
	if (at && !cJSON_IsArray(at) && !(cJSON_IsObject(at) && !at->child))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens: not a list");
	for (size_t i = 0; i < v->big.n_add; i++)
		if (!v->big.add[i].is_obj)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens: an entry is not an object");
	if (jtruthy(v->tj)) {
		l.bos = jget(v->tc, "bos_token");
		l.cls = jget(v->tc, "cls_token");
		l.eos = jget(v->tc, "eos_token");
		l.sep = jget(v->tc, "sep_token");
		if (!jtruthy(l.bos) && jtruthy(l.cls) && l.tc)
			tcput(s, ST_BOS, l.bos = l.cls);
		if (!jtruthy(l.eos) && jtruthy(l.sep) && l.tc)
			tcput(s, ST_EOS, l.eos = l.sep);
		rc = post_processor(s, &l);
	}
	if (rc != WF_OK || !l.tc)
		return rc;
	rc = voc_chat_template_load(v);
	if (rc == WF_OK)
		rc = tc_types(s);
	return rc;
}

static enum wf_err from_config_json(struct sv *s)
{
	const cJSON *tcfg = jget(s->v->cfg, "text_config");
	char key[32];
	if (!s->v->cfg)
		return WF_OK;
	for (size_t i = 0; i < s->n_types; i++) {
		int t = s->types[i];
		snprintf(key, sizeof key, "%s_token_id", st_name[t]);
		const cJSON *id = jget(s->v->cfg, key);
		if ((!id || cJSON_IsNull(id)) && tcfg) {
			if (!cJSON_IsObject(tcfg))
				return wf_fail(s->v->err, WF_ERR_FORMAT, "config.json: text_config: not an object");
			id = jget(tcfg, key);
		}
		enum wf_err rc = set_special(s, t, id, "config.json");
		if (rc != WF_OK)
			return rc;
	}
	return WF_OK;
}

/* add_to_gguf: merges, ids, add flags, chat template, normalizer flags */
static enum wf_err write_kv(struct sv *s)
{
	struct voc *v = s->v;
	enum wf_err rc = WF_OK;
	if (s->load_merges && v->n_mg)
		rc = voc_kv(v, "tokenizer.ggml.merges", VKV_MERGES, 0, false, NULL, 0);
	for (size_t i = 0; i < s->n_id && rc == WF_OK; i++)
		if (st_id_key[s->id_ord[i]])
			rc = voc_kv(v, st_id_key[s->id_ord[i]], VKV_U32, (uint32_t)s->id[s->id_ord[i]], false, NULL, 0);
	for (size_t i = 0; i < s->n_add && rc == WF_OK; i++)
		if (st_add_key[s->add_ord[i]])
			rc = voc_kv(v, st_add_key[s->add_ord[i]], VKV_BOOL, 0, s->add[s->add_ord[i]], NULL, 0);
	if (rc == WF_OK && v->ct_kind)
		rc = voc_chat_template_write(v);
	if (rc == WF_OK && s->lower >= 0)
		rc = voc_kv(v, "tokenizer.ggml.normalizer.lowercase", VKV_BOOL, 0, s->lower, NULL, 0);
	if (rc == WF_OK && s->strip >= 0)
		rc = voc_kv(v, "tokenizer.ggml.normalizer.strip_accents", VKV_BOOL, 0, s->strip, NULL, 0);
	return rc;
}

enum wf_err voc_special(struct voc *v, bool load_merges, const char *const *types, size_t n_types, int64_t n_vocab,
			const int64_t *preset, size_t n_preset)
{
	return voc_special_set(v, load_merges, types, n_types, n_vocab, types, preset, n_preset);
}

enum wf_err voc_special_set(struct voc *v, bool load_merges, const char *const *types, size_t n_types, int64_t n_vocab,
			    const char *const *ptypes, const int64_t *preset, size_t n_preset)
{
	static const char *const dflt[] = {"bos", "eos", "unk", "sep", "pad", "cls", "mask"};
	struct sv s = {.v = v, .n_vocab = n_vocab, .lower = -1, .strip = -1, .load_merges = load_merges};
	enum wf_err rc;
	if (!types) {
		types = dflt;
		n_types = WF_ARRAY_LEN(dflt);
	}
	for (size_t i = 0; i < n_types && i < ST_N - 2; i++)
		if ((s.types[s.n_types] = st_find(types[i])) >= 0)
			s.n_types++;
	v->ct_kind = 0;
	if (load_merges)
		v->n_mg = 0;
	rc = from_tokenizer_json(&s);
	if (rc == WF_OK)
		rc = from_config_json(&s);
	if (rc == WF_OK && load_merges && !v->n_mg && v->f->merges_txt)
		rc = voc_merges_txt(v);
	for (size_t i = 0; i < n_preset && rc == WF_OK; i++) {
		cJSON num = {.type = cJSON_Number, .valuedouble = (double)preset[i]};
		if (st_find(ptypes[i]) >= 0) /* a type without a writer handler (Gemma's fsep) is never written */
			rc = set_special(&s, st_find(ptypes[i]), &num, "config.json");
	}
	if (v->no_chat_template) /* GemmaModel: special_vocab.chat_template = None */
		v->ct_kind = 0;
	if (rc == WF_OK)
		rc = write_kv(&s);
	return rc;
}
