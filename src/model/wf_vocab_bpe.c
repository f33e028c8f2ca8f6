/* wf_vocab_bpe.c - the tokenizer.json paths: GPT-2 byte-level BPE
 * (TextModel.get_vocab_base + _set_vocab_gpt2), its pre-tokenizer name
 * (hf-to-gguf.md 7.5), its merges (SpecialVocab, and merges.txt), and
 * the Llama-2 style byte_fallback tokenizer.json (LlamaHfVocab). */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <stdlib.h>
#include <string.h>

#include "base/wf_names.h"

/* The tokenizer.json vocabulary by id: model.vocab plus added_tokens, as
 * AutoTokenizer's get_vocab() holds them. */
struct hfv {
	struct wf_tok_str *s;       /* by id, .s NULL where no token has that id */
	const struct tjadd **added; /* by id: the added_tokens entry, or NULL */
	bool *base;           /* by id: given in model.vocab */
	size_t n;             /* largest id + 1 */
	size_t n_base;        /* entries in model.vocab */
	struct wf_idset names;/* every string -> id; v->ts once loaded */
	bool names_ok;
};

static void hfv_free(struct hfv *h)
{
	free(h->added);
	if (h->names_ok)
		wf_idset_free(&h->names);
}

/* x: an id, or TJ_NOT_INT */
static enum wf_err id_of(struct voc *v, int64_t x, const char *what, size_t i, size_t *id)
{
	if (x == TJ_NOT_INT)
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: %s[%zu]: id not an integer", what, i);
	if (x < 0 || x >= WF_VOCAB_MAX_TOKENS)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: %s[%zu]: id %" PRId64 " out of range (0 to %" PRId64 ")",
			       what, i, x, WF_VOCAB_MAX_TOKENS - 1);
	*id = (size_t)x;
	return WF_OK;
}

/* An added token's id as id_of takes it */
static int64_t added_id(const struct tjadd *a)
{
	return a->id_ok && !a->id_bool ? a->id : TJ_NOT_INT;
}

/* First pass: the largest id, so the tables can be made once. */
static enum wf_err hfv_size(struct voc *v, struct hfv *h)
{
	const struct tjbig *b = &v->big;
	size_t i = 0, id = 0, bytes = 0;
	enum wf_err rc = WF_OK;
	for (; i < b->n_vocab && rc == WF_OK; i++) {
		rc = id_of(v, b->vid[i], "model.vocab", i, &id);
		h->n = id + 1 > h->n ? id + 1 : h->n;
		bytes += b->vkey[i].n;
	}
	h->n_base = i;
	i = 0;
	for (; i < b->n_add && rc == WF_OK; i++) {
		const struct tjadd *c = &b->add[i];
		if (!c->is_obj || !c->content)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens[%zu]: no content", i);
		rc = id_of(v, added_id(c), "added_tokens", i, &id);
		h->n = id + 1 > h->n ? id + 1 : h->n;
		bytes += strlen(c->content);
	}
	if (rc != WF_OK)
		return rc;
	if (bytes > UINT32_MAX)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: model.vocab: more than 4 GiB of tokens");
	/* each string put goes to the pool once: bytes bounds them all */
	v->tsp = (struct vpool){voc_alloc(v, bytes), voc_alloc(v, h->n * 2 * sizeof(uint32_t) + 1), 0, bytes};
	if (!v->tsp.s || !v->tsp.pos)
		return voc_nomem(v);
	/* in the arena: v->ts indexes these strings until the end */
	h->s = voc_alloc(v, (h->n ? h->n : 1) * sizeof *h->s);
	h->base = voc_alloc(v, (h->n ? h->n : 1) * sizeof *h->base);
	h->added = calloc(h->n ? h->n : 1, sizeof *h->added);
	if (!h->s || !h->base || !h->added)
		return voc_nomem(v);
	memset(h->s, 0, (h->n ? h->n : 1) * sizeof *h->s);
	memset(h->base, 0, (h->n ? h->n : 1) * sizeof *h->base);
	h->names_ok = wf_idset_init(&h->names, h->n_base + i + 1, voc_pool_at, &v->tsp);
	return h->names_ok ? WF_OK : voc_nomem(v);
}

/* One string with its id; two ids for a string or two strings for an id
 * would make the converter's id -> token map depend on dict order. */
static enum wf_err hfv_put(struct voc *v, struct hfv *h, const char *s, size_t n, size_t id, const struct tjadd *added,
			   uint64_t hash)
{
	char q[96];
	struct vpool *p = &v->tsp;
	uint32_t o = wf_idset_put_h(&h->names, s, n, (uint32_t)id, hash);
	if (o == WF_NAMES_NONE) {
		if (n > p->cap - p->used)
			return wf_fail(v->err, WF_ERR_RANGE, "tokenizer.json: token %zu: past the token bytes counted", id);
		memcpy(p->s + p->used, s, n);
		p->pos[2 * id] = (uint32_t)p->used;
		p->pos[2 * id + 1] = (uint32_t)n;
		p->used += n;
	}
	if (!wf_utf8_valid(s, n))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: token %zu: not valid UTF-8", id);
	if ((o != WF_NAMES_NONE && o != id) || (h->s[id].s && (h->s[id].n != n || memcmp(h->s[id].s, s, n) != 0)) || (added && h->added[id]))
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: token %zu %s: its id or its text is given twice", id,
			       wf_quote(q, sizeof q, s, n));
	if (o != WF_NAMES_NONE && !added && h->s[id].s)
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: %s given twice", wf_quote(q, sizeof q, s, n));
	h->s[id] = (struct wf_tok_str){.s = s, .n = n};
	if (added)
		h->added[id] = added;
	else
		h->base[id] = true;
	return WF_OK;
}

#define HFV_AHEAD 8
static enum wf_err hfv_load(struct voc *v, struct hfv *h)
{
	const cJSON *model = jget(v->tj, "model"), *vocab = jget(model, "vocab"), *added = jget(v->tj, "added_tokens");
	enum wf_err rc;
	memset(h, 0, sizeof *h);
	if (!cJSON_IsObject(vocab) || !v->big.vocab_on)
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: not an object");
	if (added && !cJSON_IsArray(added))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens: not a list");
	rc = hfv_size(v, h);
	/* in order, each hashed HFV_AHEAD entries before (its slot fetched meanwhile) */
	const struct wf_tok_str *k = v->big.vkey;
	uint64_t hh[HFV_AHEAD];
	for (size_t i = 0; i < v->big.n_vocab + HFV_AHEAD && rc == WF_OK; i++) {
		/* entry j = i - HFV_AHEAD is put before entry i takes its place in hh */
		if (i >= HFV_AHEAD) {
			size_t j = i - HFV_AHEAD;
			rc = hfv_put(v, h, k[j].s, k[j].n, (size_t)v->big.vid[j], NULL, hh[j % HFV_AHEAD]);
		}
		if (i < v->big.n_vocab)
			hh[i % HFV_AHEAD] = wf_idset_hash(&h->names, k[i].s, k[i].n);
	}
	for (size_t i = 0; i < v->big.n_add && rc == WF_OK; i++) {
		const struct tjadd *c = &v->big.add[i];
		rc = hfv_put(v, h, c->content, strlen(c->content), (size_t)added_id(c), c,
			     wf_idset_hash(&h->names, c->content, strlen(c->content)));
	}
	if (rc == WF_OK) {
		v->big.vocab_unique = true; /* hfv_put refused any key given twice */
		/* each string once, by id: the token set check_merges and
		 * check_unique use while the tokens are these strings */
		if (v->ts_on)
			wf_idset_free(&v->ts);
		v->ts = h->names;
		v->ts_on = true;
		v->ts_s = h->s;
		v->ts_n = h->n;
		v->ts_base = h->base;
		h->names_ok = false;
	}
	return rc;
}

static bool jfalse_or_absent(const cJSON *j)
{
	return !j || cJSON_IsFalse(j) || cJSON_IsNull(j);
}

/* ByteLevel{add_prefix_space: false, use_regex: want_regex (absent is true)} */
static bool is_bytelevel(const cJSON *p, bool want_regex)
{
	const cJSON *re = jget(p, "use_regex");
	bool uses = !re || cJSON_IsTrue(re);
	return jstr_is(jget(p, "type"), "ByteLevel") && jfalse_or_absent(jget(p, "add_prefix_space")) &&
	       (re == NULL || cJSON_IsBool(re)) && uses == want_regex;
}

/* Split{pattern: {Regex}, behavior: Isolated, invert: false}: its regex */
static const char *split_regex(const cJSON *p)
{
	const cJSON *re = jget(jget(p, "pattern"), "Regex");
	if (!jstr_is(jget(p, "type"), "Split") || !jstr_is(jget(p, "behavior"), "Isolated") ||
	    !jfalse_or_absent(jget(p, "invert")) || !cJSON_IsString(re) || cJSON_GetArraySize(jget(p, "pattern")) != 1)
		return NULL;
	return re->valuestring;
}

/* The pre-tokenizer name the converter's hash would give, from the
 * tokenizer.json shapes llama.cpp reproduces (wf_tok.h's table); NULL
 * (and err) otherwise.  The normalizer must be absent, or NFC where the
 * row allows it. */
static const char *detect_pre(struct voc *v)
{
	const cJSON *pt = jget(v->tj, "pre_tokenizer"), *m = jget(v->tj, "model"), *nz = jget(v->tj, "normalizer");
	const cJSON *seq = jget(pt, "pretokenizers");
	bool im = cJSON_IsTrue(jget(m, "ignore_merges")), nfc = jstr_is(jget(nz, "type"), "NFC") && cJSON_GetArraySize(nz) == 1;
	const struct wf_tok_pre *row = NULL;
	const char *re;
	if (!jfalse_or_absent(jget(m, "ignore_merges")) && !cJSON_IsTrue(jget(m, "ignore_merges")))
		row = NULL;
	else if (is_bytelevel(pt, true))
		row = wf_tok_pre_by_shape(NULL, im);
	else if (jstr_is(jget(pt, "type"), "Sequence") && cJSON_GetArraySize(seq) == 2 && is_bytelevel(seq->child->next, false) &&
		 (re = split_regex(seq->child)))
		row = wf_tok_pre_by_shape(re, im);
	const char *name = row ? row->hf_name : NULL;
	if (!name) {
		wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: pre_tokenizer: not one llama.cpp is known to reproduce");
		return NULL;
	}
	if (nz && !cJSON_IsNull(nz) && !(nfc && row->hf_nfc)) {
		wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: normalizer: not reproduced by llama.cpp's %s pre-tokenizer", name);
		return NULL;
	}
	return name;
}

/* The BPE model's options llama.cpp's byte-level BPE has no counterpart
 * for, and the decoder it assumes. */
static enum wf_err check_bpe_model(struct voc *v)
{
	const cJSON *m = jget(v->tj, "model");
	static const char *const off[] = {"dropout", "continuing_subword_prefix", "end_of_word_suffix", "byte_fallback"};
	if (!jstr_is(jget(m, "type"), "BPE"))
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: model.type: not BPE");
	for (size_t i = 0; i < WF_ARRAY_LEN(off); i++) {
		const cJSON *x = jget(m, off[i]);
		if (!jfalse_or_absent(x) && !jstr_is(x, ""))
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: model.%s: not supported", off[i]);
	}
	if (!jstr_is(jget(jget(v->tj, "decoder"), "type"), "ByteLevel"))
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: decoder: not ByteLevel");
	return WF_OK;
}

/* A non-normalized added token goes through decode(encode(text)).  With a
 * ByteLevel decoder that is the text itself when some character is not
 * one of the 256 byte characters (the token's bytes are then kept) or all
 * are printable ASCII without a space; transformers' clean-up of spaces
 * before punctuation could change it too.  Anything else is refused. */
static bool decode_is_identity(const char *s, size_t n)
{
	bool all_mapped = true, all_ascii = true;
	static const char *const cleanup[] = {" .", " ?", " !", " ,", " '", " n't"};
	for (size_t i = 0; i < WF_ARRAY_LEN(cleanup); i++)
		if (memmem(s, n, cleanup[i], strlen(cleanup[i])))
			return false;
	for (size_t i = 0; i < n;) {
		const uint8_t *p = (const uint8_t *)s + i;
		size_t k = wf_utf8_seq(p, n - i);
		uint32_t cp = k == 1 ? p[0] : k == 2 ? (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f) : 0x10000;
		bool mapped = (cp >= 0x21 && cp <= 0x7e) || (cp >= 0xa1 && cp <= 0xac) || (cp >= 0xae && cp <= 0x143);
		all_mapped &= mapped;
		all_ascii &= cp >= 0x21 && cp <= 0x7e;
		i += k ? k : 1;
	}
	return !all_mapped || all_ascii;
}

/* get_vocab_base's token list over ids 0..V-1 */
static enum wf_err gpt2_tokens(struct voc *v, const struct hfv *h)
{
	char q[96];
	for (size_t i = 0; i < v->n_tok; i++) {
		struct vtok *t = &v->tok[i];
		const struct tjadd *a = i < h->n ? h->added[i] : NULL;
		if (i >= h->n || !h->s[i].s) {
			t->type = WF_TOK_UNUSED;
			continue;
		}
		t->s = h->s[i].s;
		size_t n = h->s[i].n;
		t->type = WF_TOK_NORMAL;
		if (a) {
			if (!a->normalized_true && !decode_is_identity(t->s, n))
				return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: added_tokens: %s: decode(encode()) not reproduced",
					       wf_quote(q, sizeof q, t->s, n));
			if (a->special_true || looks_special(t->s, n)) {
				t->type = WF_TOK_CONTROL;
			} else {
				t->type = WF_TOK_USER;
				t->s = replace_u2581(v, t->s, n, &n);
				if (!t->s)
					return voc_nomem(v);
			}
		}
		if (n > UINT32_MAX)
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: token %zu too long", i);
		t->n = (uint32_t)n;
	}
	return WF_OK;
}

/* A merge's three lookups (a, b and their join), hashed ahead. */
#define MG_AHEAD 8
struct mg_look {
	const char *s[3];
	size_t n[3];
	uint64_t h[3];
	bool ok;              /* "a b" with one space, both sides non-empty */
};

/* Splits merge i at the first space from index 1 (as llama.cpp does),
 * joins it into ab and hashes the three strings. */
static void mg_prepare(const struct voc *v, const struct wf_idset *set, size_t i, char *ab, struct mg_look *l)
{
	const char *s = v->mg[i].s, *sp = v->mg[i].n > 1 ? memchr(s + 1, ' ', v->mg[i].n - 1) : NULL;
	size_t n = v->mg[i].n, a = sp ? (size_t)(sp - s) : 0;
	l->ok = sp && a + 1 != n && !memchr(sp + 1, ' ', n - a - 1);
	if (!l->ok)
		return;
	memcpy(ab, s, a);
	memcpy(ab + a, sp + 1, n - a - 1);
	l->s[0] = s, l->n[0] = a;
	l->s[1] = sp + 1, l->n[1] = n - a - 1;
	l->s[2] = ab, l->n[2] = n - 1;
	for (int k = 0; k < 3; k++)
		l->h[k] = wf_idset_hash(set, l->s[k], l->n[k]);
}

/* Merge j's failure: which of its three strings is no token (HF's BPE
 * builder names it in MergeTokenOutOfVocabulary), or that it is no pair. */
static enum wf_err merge_refused(struct voc *v, size_t j, const struct mg_look *l, int k)
{
	char q[96], t[96];
	if (!l->ok)
		return wf_fail(v->err, WF_ERR_FORMAT, "%s[%zu]: %s is not two tokens whose join is one", v->mg_src, j,
			       wf_quote(q, sizeof q, v->mg[j].s, v->mg[j].n));
	return wf_fail(v->err, WF_ERR_FORMAT, "%s[%zu]: %s is not two tokens whose join is one: %s%s is not in model.vocab "
		       "(HF tokenizers refuses to load it)", v->mg_src, j, wf_quote(q, sizeof q, v->mg[j].s, v->mg[j].n),
		       k == 2 ? "the join " : "", wf_quote(t, sizeof t, l->s[k], l->n[k]));
}

/* Whether id (a lookup's answer, by tokenizer.json id) is a token of
 * model.vocab: an added token alone is no merge's part for HF's BPE. */
static bool in_base(const struct voc *v, uint32_t id)
{
	return id != WF_NAMES_NONE && (!v->ts_base || (id < v->ts_n && v->ts_base[id]));
}

/* Whether a Llama-2 style merge's failed string k may still be one HF
 * finds: a merge given as a pair had each space in its parts made U+0120
 * by the converter's join, which such a vocabulary (unlike a byte-level
 * one) does not spell its spaces with; the pair's own text is not kept. */
static bool maybe_spaced(const struct voc *v, size_t j, const struct mg_look *l, int k)
{
	return l->ok && v->mg == v->big.mg && j < v->big.n_merges && v->big.mkind[j] == TJM_LIST &&
	       memmem(l->s[k], l->n[k], "\xc4\xa0", 2);
}

/* Each merge "a b": a, b and ab tokens of the vocabulary, as HF's BPE
 * model requires to load; llama.cpp splits at the first space from index
 * 1.  840,000 lookups for Llama 3, MG_AHEAD merges in flight.  llama_hf:
 * LlamaHfVocab's file, whose merges the converter does not write: none at
 * all is not refused (HF's BPE loads an empty list; byte-level llama.cpp
 * needs them), nor a pair whose parts may have held spaces. */
static enum wf_err check_merges(struct voc *v, bool llama_hf)
{
	struct wf_idset own;
	struct mg_look look[MG_AHEAD];
	enum wf_err rc = WF_OK;
	size_t maxn = 1;
	if (!v->n_mg)
		return llama_hf ? WF_OK : wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges: none (llama.cpp needs them)");
	for (size_t i = 0; i < v->n_mg; i++)
		maxn = v->mg[i].n > maxn ? v->mg[i].n : maxn;
	/* tokenizer.json's set when the tokens are its strings (a user-defined
	 * token's U+2581 made ' ' is not), else one of v->tok's */
	bool exact = voc_ts_exact(v);
	const struct wf_idset *set = exact ? &v->ts : &own;
	char *ab = maxn <= SIZE_MAX / MG_AHEAD ? malloc(maxn * MG_AHEAD) : NULL; /* the joins in flight */
	if (!ab || (!exact && !voc_tok_idset(v, &own))) {
		free(ab);
		return voc_nomem(v);
	}
	for (size_t i = 0; i < v->n_mg + MG_AHEAD && rc == WF_OK; i++) {
		/* merge j = i - MG_AHEAD is checked before merge i takes its place in look and ab */
		if (i >= MG_AHEAD) {
			size_t j = i - MG_AHEAD;
			const struct mg_look *l = &look[j % MG_AHEAD];
			int k = 0;
			while (l->ok && k < 3 && in_base(v, wf_idset_get_h(set, l->s[k], l->n[k], l->h[k])))
				k++;
			if ((!l->ok || k < 3) && !(llama_hf && maybe_spaced(v, j, l, k)))
				rc = merge_refused(v, j, l, k);
		}
		if (i < v->n_mg)
			mg_prepare(v, set, i, ab + i % MG_AHEAD * maxn, &look[i % MG_AHEAD]);
	}
	free(ab);
	if (!exact)
		wf_idset_free(&own);
	return rc;
}

/* _set_vocab_gpt2's steps; the n_preset ids are SpecialVocab's
 * _set_special_token calls after loading (_set_vocab_glm's). */
static enum wf_err gpt2_route(struct voc *v, const char *const *ptypes, const int64_t *preset, size_t n_preset)
{
	struct hfv h;
	const char *pre;
	enum wf_err rc;
	if (!v->tj)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: missing (a slow tokenizer is not supported)");
	rc = check_bpe_model(v);
	if (rc != WF_OK)
		return rc;
	if (!(pre = detect_pre(v)))
		return WF_ERR_UNSUP;
	rc = hfv_load(v, &h);
	if (rc == WF_OK && v->vocab_size >= 0 && (size_t)v->vocab_size < h.n)
		rc = wf_fail(v->err, WF_ERR_FORMAT, "config.json: vocab_size %" PRId64 " is not above the largest token id %zu",
			     v->vocab_size, h.n - 1);
	if (rc == WF_OK) {
		size_t distinct = 0;
		for (size_t i = 0; i < h.n; i++)
			distinct += h.s[i].s != NULL;
		rc = voc_tokens(v, v->vocab_size >= 0 ? (size_t)v->vocab_size : distinct);
	}
	if (rc == WF_OK && v->vocab_size < 0 && v->n_tok < h.n)
		rc = wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: token ids have gaps and config.json has no vocab_size");
	if (rc == WF_OK)
		rc = gpt2_tokens(v, &h);
	hfv_free(&h);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.model", VKV_STR, 0, false, "gpt2", 4);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.pre", VKV_STR, 0, false, pre, strlen(pre));
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.tokens", VKV_TOKENS, 0, false, NULL, 0);
	if (rc == WF_OK)
		rc = voc_kv(v, "tokenizer.ggml.token_type", VKV_TYPES, 0, false, NULL, 0);
	if (rc == WF_OK)
		rc = voc_special_set(v, true, NULL, 0, -1, ptypes, preset, n_preset);
	if (rc == WF_OK)
		rc = check_merges(v, false);
	return rc;
}

enum wf_err voc_gpt2(struct voc *v)
{
	return gpt2_route(v, NULL, NULL, 0);
}

/* tokenizer.get_added_vocab()[content]: the id of tokenizer.json's added
 * token of that text.  tokenizer_config.json's added_tokens_decoder giving
 * the text another id would make it depend on which the tokenizer keeps:
 * refused, as is a token it alone adds (not in the token list written). */
static enum wf_err added_vocab_id(struct voc *v, const char *content, int64_t *id)
{
	char q[96];
	bool found = false;
	for (size_t i = 0; i < v->big.n_add; i++) {
		const struct tjadd *a = &v->big.add[i];
		if (a->is_obj && a->content && strcmp(a->content, content) == 0 && added_id(a) != TJ_NOT_INT) {
			*id = a->id;
			found = true;
		}
	}
	if (!found)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: added_tokens: no %s (GLM's vocabulary names it)",
			       wf_quote(q, sizeof q, content, strlen(content)));
	const cJSON *dec = jget(v->tc, "added_tokens_decoder");
	for (const cJSON *e = cJSON_IsObject(dec) ? dec->child : NULL; e; e = e->next) {
		const cJSON *c = jget(e, "content");
		char *end = NULL;
		long long k = e->string ? strtoll(e->string, &end, 10) : -1;
		if (jstr_is(c, content) && (!end || *end || k != *id))
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer_config.json: added_tokens_decoder: %s under id %s, "
				       "not tokenizer.json's %" PRId64, wf_quote(q, sizeof q, content, strlen(content)),
				       e->string ? e->string : "?", *id);
	}
	return WF_OK;
}

enum wf_err voc_glm(struct voc *v)
{
	static const char *const types[] = {"bos", "eot", "unk", "eom"};
	static const char *const toks[] = {"[gMASK]", "<|user|>", "<|endoftext|>", "<|observation|>"};
	int64_t ids[WF_ARRAY_LEN(toks)];
	enum wf_err rc = WF_OK;
	if (!v->tj)
		return voc_gpt2(v); /* which says why there is none */
	for (size_t i = 0; i < WF_ARRAY_LEN(toks) && rc == WF_OK; i++)
		rc = added_vocab_id(v, toks[i], &ids[i]);
	if (rc == WF_OK)
		rc = gpt2_route(v, types, ids, WF_ARRAY_LEN(toks));
	/* The converter names the pre-tokenizer by a hash of the tokens it
	 * makes, and GLM-4.5's own vocabulary (GLM's special tokens, Llama 3's
	 * split) hashes to glm4, which llama.cpp runs as CHATGLM4 with no bos
	 * [unverified: no GLM tokenizer here; docs/gguf.md] */
	for (size_t i = 0; i < v->n_kv && rc == WF_OK; i++) {
		const struct vkv *e = &v->kv[i];
		if (strcmp(e->key, "tokenizer.ggml.pre") == 0 &&
		    ((e->s.n == 9 && memcmp(e->s.s, "llama-bpe", 9) == 0) || (e->s.n == 9 && memcmp(e->s.s, "smaug-bpe", 9) == 0)))
			return voc_kv(v, "tokenizer.ggml.pre", VKV_STR, 0, false, "glm4", 4);
	}
	return rc;
}

/* The ids of tokenizer_config.json's special tokens (bos ... mask and
 * additional_special_tokens), standing for transformers' all_special_ids:
 * [not determined] for tokens that special_tokens_map.json names alone
 * or that transformers adds by other means. */
static bool is_special_id(const struct voc *v, const struct hfv *h, size_t id)
{
	static const char *const keys[] = {"bos_token", "eos_token", "unk_token", "sep_token",
					   "pad_token", "cls_token", "mask_token"};
	const cJSON *extra = jget(v->tc, "additional_special_tokens");
	for (size_t i = 0; i <= WF_ARRAY_LEN(keys); i++) {
		const cJSON *e = i < WF_ARRAY_LEN(keys) ? jget(v->tc, keys[i]) : NULL;
		for (const cJSON *c = i < WF_ARRAY_LEN(keys) ? e : (cJSON_IsArray(extra) ? extra->child : NULL); c;
		     c = i < WF_ARRAY_LEN(keys) ? NULL : c->next) {
			const cJSON *s = cJSON_IsObject(c) ? jget(c, "content") : c;
			if (cJSON_IsString(s) && h->s[id].s && strlen(s->valuestring) == h->s[id].n &&
			    memcmp(s->valuestring, h->s[id].s, h->s[id].n) == 0)
				return true;
		}
	}
	return false;
}

/* "<0x[0-9A-Fa-f]{2}>" */
static bool byte_token(const char *s, size_t n)
{
	static const char hex[] = "0123456789abcdefABCDEF";
	return n == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && strchr(hex, s[3]) && strchr(hex, s[4]);
}

/* LlamaHfVocab's qualification test: WF_ERR_RANGE when the converter
 * falls through to GPT-2 BPE (FileNotFoundError or TypeError). */
static enum wf_err llama_hf_qualifies(struct voc *v)
{
	const cJSON *m = jget(v->tj, "model"), *bf, *im, *dec;
	if (!v->tj)
		return WF_ERR_RANGE;
	if (!cJSON_IsObject(m) || !jget(m, "type"))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.type: missing");
	bf = jget(m, "byte_fallback");
	im = jget(m, "ignore_merges");
	if (jstr_is(jget(m, "type"), "BPE") && jtruthy(im) && !(bf ? jtruthy(bf) : true))
		return WF_ERR_RANGE;
	if (!jstr_is(jget(m, "type"), "BPE") || !jtruthy(bf))
		return WF_ERR_RANGE;
	dec = jget(v->tj, "decoder");
	if (!dec)
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: decoder: missing");
	/* None['type'] is a TypeError: GPT-2 BPE too */
	if (!cJSON_IsObject(dec) || !jstr_is(jget(dec, "type"), "Sequence"))
		return cJSON_IsObject(dec) || cJSON_IsNull(dec) ? WF_ERR_RANGE
		       : wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: decoder: not an object");
	return WF_OK;
}

static enum wf_err llama_hf_tokens(struct voc *v, const struct hfv *h)
{
	size_t n = h->n_base;
	for (size_t i = n; i < h->n; i++)
		if (!h->s[i].s)
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: added_tokens: id %zu missing (ids must follow the vocab)", i);
	enum wf_err rc = voc_tokens(v, h->n > n ? h->n : n);
	for (size_t i = 0; i < v->n_tok && rc == WF_OK; i++) {
		struct vtok *t = &v->tok[i];
		if (i >= h->n || !h->s[i].s)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: id %zu missing", i);
		t->s = h->s[i].s;
		t->n = (uint32_t)h->s[i].n;
		t->score = -1000.0f;
		if (i >= n)
			t->type = is_special_id(v, h, i) ? WF_TOK_CONTROL : WF_TOK_USER;
		else if (byte_token(t->s, t->n))
			t->type = WF_TOK_BYTE;
		else
			t->type = is_special_id(v, h, i) ? WF_TOK_CONTROL : WF_TOK_NORMAL;
	}
	return rc;
}

enum wf_err voc_llama_hf(struct voc *v)
{
	struct hfv h;
	enum wf_err rc = llama_hf_qualifies(v);
	if (rc != WF_OK)
		return rc;
	rc = hfv_load(v, &h);
	if (rc == WF_OK)
		rc = llama_hf_tokens(v, &h);
	hfv_free(&h);
	/* the converter writes no merges, but its AutoTokenizer loads them:
	 * a file HF's BPE refuses has no model.gguf (as for byte-level) */
	if (rc == WF_OK)
		rc = voc_merges(v);
	if (rc == WF_OK)
		rc = check_merges(v, true);
	if (rc == WF_OK)
		rc = voc_write_llama(v);
	return rc;
}
