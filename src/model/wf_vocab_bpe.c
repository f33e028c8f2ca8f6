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
	const char **s;       /* by id, NULL where no token has that id */
	const cJSON **added;  /* by id: the added_tokens entry, or NULL */
	size_t n;             /* largest id + 1 */
	size_t n_base;        /* entries in model.vocab */
	struct wf_names names;/* every string -> id */
	bool names_ok;
};

static void hfv_free(struct hfv *h)
{
	free(h->s);
	free(h->added);
	if (h->names_ok)
		wf_names_free(&h->names);
}

static enum wf_err id_of(struct voc *v, const cJSON *j, const char *what, size_t i, size_t *id)
{
	int64_t x;
	if (!jint(j, &x) || cJSON_IsBool(j))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: %s[%zu]: id not an integer", what, i);
	if (x < 0 || x >= WF_VOCAB_MAX_TOKENS)
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: %s[%zu]: id %" PRId64 " out of range (0 to %" PRId64 ")",
			       what, i, x, WF_VOCAB_MAX_TOKENS - 1);
	*id = (size_t)x;
	return WF_OK;
}

/* First pass: the largest id, so the tables can be made once. */
static enum wf_err hfv_size(struct voc *v, const cJSON *vocab, const cJSON *added, struct hfv *h)
{
	size_t i = 0, id;
	enum wf_err rc = WF_OK;
	for (const cJSON *c = vocab->child; c && rc == WF_OK; c = c->next, i++) {
		rc = id_of(v, c, "model.vocab", i, &id);
		h->n = id + 1 > h->n ? id + 1 : h->n;
	}
	h->n_base = i;
	i = 0;
	for (const cJSON *c = added ? added->child : NULL; c && rc == WF_OK; c = c->next, i++) {
		if (!cJSON_IsObject(c) || !cJSON_IsString(jget(c, "content")))
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens[%zu]: no content", i);
		rc = id_of(v, jget(c, "id"), "added_tokens", i, &id);
		h->n = id + 1 > h->n ? id + 1 : h->n;
	}
	if (rc != WF_OK)
		return rc;
	h->s = calloc(h->n ? h->n : 1, sizeof *h->s);
	h->added = calloc(h->n ? h->n : 1, sizeof *h->added);
	h->names_ok = wf_names_init(&h->names, h->n_base + i + 1);
	if (!h->s || !h->added || !h->names_ok)
		return voc_nomem(v);
	return WF_OK;
}

/* One string with its id; two ids for a string or two strings for an id
 * would make the converter's id -> token map depend on dict order. */
static enum wf_err hfv_put(struct voc *v, struct hfv *h, const char *s, size_t id, const cJSON *added)
{
	char q[96];
	size_t n = strlen(s);
	uint32_t o = wf_names_put(&h->names, s, n, (uint32_t)id);
	if (!utf8_ok(s, n))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: token %zu: not valid UTF-8", id);
	if ((o != WF_NAMES_NONE && o != id) || (h->s[id] && strcmp(h->s[id], s) != 0) || (added && h->added[id]))
		return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: token %zu %s: its id or its text is given twice", id,
			       wf_quote(q, sizeof q, s, n));
	if (o != WF_NAMES_NONE && !added && h->s[id])
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: %s given twice", wf_quote(q, sizeof q, s, n));
	h->s[id] = s;
	if (added)
		h->added[id] = added;
	return WF_OK;
}

static enum wf_err hfv_load(struct voc *v, struct hfv *h)
{
	const cJSON *model = jget(v->tj, "model"), *vocab = jget(model, "vocab"), *added = jget(v->tj, "added_tokens");
	enum wf_err rc;
	memset(h, 0, sizeof *h);
	if (!cJSON_IsObject(vocab))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: not an object");
	if (added && !cJSON_IsArray(added))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: added_tokens: not a list");
	rc = hfv_size(v, vocab, added, h);
	for (const cJSON *c = vocab->child; c && rc == WF_OK; c = c->next)
		rc = hfv_put(v, h, c->string, (size_t)c->valuedouble, NULL);
	for (const cJSON *c = added ? added->child : NULL; c && rc == WF_OK; c = c->next)
		rc = hfv_put(v, h, jget(c, "content")->valuestring, (size_t)jget(c, "id")->valuedouble, c);
	return rc;
}

/* The Split regexes of tokenizer.json (JSON-unescaped), as llama.cpp's
 * llm_tokenizer_bpe quotes them for its LLAMA3/SMAUG and QWEN2 types. */
static const char RE_LLAMA3[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| "
				"?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
static const char RE_QWEN2[] = "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| "
			       "?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

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
 * tokenizer.json shapes llama.cpp reproduces; NULL (and err) otherwise.
 * The normalizer must be absent, except Qwen2's NFC (which the converter's
 * qwen2 entry was hashed with; llama.cpp does not apply it, like the
 * converter's own output). */
static const char *detect_pre(struct voc *v)
{
	const cJSON *pt = jget(v->tj, "pre_tokenizer"), *m = jget(v->tj, "model"), *nz = jget(v->tj, "normalizer");
	const cJSON *seq = jget(pt, "pretokenizers");
	bool im = cJSON_IsTrue(jget(m, "ignore_merges")), nfc = jstr_is(jget(nz, "type"), "NFC") && cJSON_GetArraySize(nz) == 1;
	const char *name = NULL, *re;
	if (!jfalse_or_absent(jget(m, "ignore_merges")) && !cJSON_IsTrue(jget(m, "ignore_merges")))
		name = NULL;
	else if (is_bytelevel(pt, true) && !im)
		name = "gpt-2";
	else if (jstr_is(jget(pt, "type"), "Sequence") && cJSON_GetArraySize(seq) == 2 && is_bytelevel(seq->child->next, false) &&
		 (re = split_regex(seq->child)))
		name = strcmp(re, RE_LLAMA3) == 0 ? (im ? "llama-bpe" : "smaug-bpe")
		       : strcmp(re, RE_QWEN2) == 0 && !im ? "qwen2" : NULL;
	if (!name) {
		wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: pre_tokenizer: not one llama.cpp is known to reproduce");
		return NULL;
	}
	if (nz && !cJSON_IsNull(nz) && !(nfc && strcmp(name, "qwen2") == 0)) {
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
		const cJSON *a = i < h->n ? h->added[i] : NULL;
		if (i >= h->n || !h->s[i]) {
			t->type = TT_UNUSED;
			continue;
		}
		t->s = h->s[i];
		size_t n = strlen(t->s);
		t->type = TT_NORMAL;
		if (a) {
			if (!cJSON_IsTrue(jget(a, "normalized")) && !decode_is_identity(t->s, n))
				return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: added_tokens: %s: decode(encode()) not reproduced",
					       wf_quote(q, sizeof q, t->s, n));
			if (cJSON_IsTrue(jget(a, "special")) || looks_special(t->s, n)) {
				t->type = TT_CONTROL;
			} else {
				t->type = TT_USER_DEFINED;
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

/* Each merge "a b": a, b and ab tokens of the vocabulary, as HF's BPE
 * model requires to load; llama.cpp splits at the first space from index 1. */
static enum wf_err check_merges(struct voc *v)
{
	struct wf_names set;
	enum wf_err rc = WF_OK;
	char q[96];
	if (!v->n_mg)
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges: none (llama.cpp needs them)");
	if (!wf_names_init(&set, v->n_tok))
		return voc_nomem(v);
	for (size_t i = 0; i < v->n_tok; i++)
		if (v->tok[i].s)
			wf_names_put(&set, v->tok[i].s, v->tok[i].n, (uint32_t)i);
	char *ab = NULL; /* the joined pair, one buffer for every merge */
	size_t cap = 0;
	for (size_t i = 0; i < v->n_mg && rc == WF_OK; i++) {
		const char *s = v->mg[i].s, *sp = v->mg[i].n > 1 ? memchr(s + 1, ' ', v->mg[i].n - 1) : NULL;
		size_t n = v->mg[i].n, a = sp ? (size_t)(sp - s) : 0;
		if (sp && n > cap) {
			char *g = realloc(ab, n * 2);
			if (!g) {
				rc = voc_nomem(v);
				break;
			}
			ab = g;
			cap = n * 2;
		}
		if (sp) {
			memcpy(ab, s, a);
			memcpy(ab + a, sp + 1, n - a - 1);
		}
		if (!sp || a + 1 == n || memchr(sp + 1, ' ', n - a - 1) ||
		    wf_names_get(&set, s, a) == WF_NAMES_NONE || wf_names_get(&set, sp + 1, n - a - 1) == WF_NAMES_NONE ||
		    wf_names_get(&set, ab, n - 1) == WF_NAMES_NONE)
			rc = wf_fail(v->err, WF_ERR_FORMAT, "%s[%zu]: %s is not two tokens whose join is one", v->mg_src, i,
				     wf_quote(q, sizeof q, s, n));
	}
	free(ab);
	wf_names_free(&set);
	return rc;
}

enum wf_err voc_gpt2(struct voc *v)
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
			distinct += h.s[i] != NULL;
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
		rc = voc_special(v, true, NULL, 0, -1, NULL, 0);
	if (rc == WF_OK)
		rc = check_merges(v);
	return rc;
}

/* ' '.join(parts), every space inside a part written U+0120 */
static enum wf_err merge_pair(struct voc *v, const cJSON *pair, size_t i, struct vstr *out)
{
	size_t n = 0, k = 0;
	for (const cJSON *p = cJSON_IsArray(pair) ? pair->child : NULL; p; p = p->next) {
		if (!cJSON_IsString(p))
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a list of strings", i);
		n += strlen(p->valuestring) * 2 + 1;
	}
	if (!cJSON_IsArray(pair))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a pair", i);
	char *o = voc_alloc(v, n + 1);
	if (!o)
		return voc_nomem(v);
	for (const cJSON *p = pair->child; p; p = p->next) {
		if (p != pair->child)
			o[k++] = ' ';
		for (const char *c = p->valuestring; *c; c++) {
			if (*c == ' ') {
				o[k++] = (char)0xc4;
				o[k++] = (char)0xa0;
			} else {
				o[k++] = *c;
			}
		}
	}
	o[k] = 0;
	out->s = o;
	out->n = k;
	return WF_OK;
}

/* SpecialVocab's merges from tokenizer.json model.merges: a list of
 * "a b" strings as they are, or (transformers >= 4.45) of [a, b] pairs. */
enum wf_err voc_merges(struct voc *v)
{
	const cJSON *m = jget(v->tj, "model"), *mg;
	size_t n, i = 0;
	enum wf_err rc = WF_OK;
	if (m && !cJSON_IsObject(m))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model: not an object");
	mg = jget(m, "merges");
	if (!cJSON_IsArray(mg) || !mg->child)
		return WF_OK;
	bool strs = cJSON_IsString(mg->child);
	if (!strs && !(cJSON_IsArray(mg->child) && cJSON_GetArraySize(mg->child) == 2 && cJSON_IsString(mg->child->child)))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges: unknown format");
	n = (size_t)cJSON_GetArraySize(mg);
	v->mg = voc_alloc(v, n * sizeof *v->mg);
	if (!v->mg)
		return voc_nomem(v);
	for (const cJSON *c = mg->child; c && rc == WF_OK; c = c->next, i++) {
		if (!strs) {
			rc = merge_pair(v, c, i, &v->mg[i]);
		} else if (!cJSON_IsString(c)) {
			rc = wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a string", i);
		} else {
			v->mg[i].s = c->valuestring;
			v->mg[i].n = strlen(c->valuestring);
		}
	}
	v->n_mg = rc == WF_OK ? n : 0;
	v->mg_src = "tokenizer.json: model.merges";
	return rc;
}

/* Python's str.isspace() for one code point */
static bool py_space(uint32_t c)
{
	return (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x20) || c == 0x85 || c == 0xa0 || c == 0x1680 ||
	       (c >= 0x2000 && c <= 0x200a) || c == 0x2028 || c == 0x2029 || c == 0x202f || c == 0x205f || c == 0x3000;
}

/* The length of the code point at s (valid UTF-8) and whether it is a space. */
static size_t cp_at(const char *s, size_t n, bool *space)
{
	const uint8_t *p = (const uint8_t *)s;
	size_t k = wf_utf8_seq(p, n);
	uint32_t c = p[0];
	if (k == 2)
		c = (uint32_t)(p[0] & 0x1f) << 6 | (p[1] & 0x3f);
	else if (k == 3)
		c = (uint32_t)(p[0] & 0x0f) << 12 | (uint32_t)(p[1] & 0x3f) << 6 | (p[2] & 0x3f);
	else if (k == 4)
		c = 0x10000;
	*space = py_space(c);
	return k ? k : 1;
}

/* line.split(): up to 3 fields' bounds; returns how many (capped at 3) */
static size_t py_split(const char *s, size_t n, struct vstr f[3])
{
	size_t nf = 0;
	bool sp;
	for (size_t i = 0; i < n && nf < 3;) {
		size_t k = cp_at(s + i, n - i, &sp);
		if (sp) {
			i += k;
			continue;
		}
		size_t st = i;
		while (i < n && (k = cp_at(s + i, n - i, &sp), !sp))
			i += k;
		f[nf].s = s + st;
		f[nf++].n = i - st;
	}
	return nf;
}

/* SpecialVocab._try_load_merges_txt: a first line starting with '#' (once
 * stripped) skipped, then every line of exactly two whitespace-separated
 * fields kept as "a b"; others dropped.  Universal newlines. */
enum wf_err voc_merges_txt(struct voc *v)
{
	const char *t = v->f->merges_txt;
	size_t len = v->f->merges_txt_len, lines = 1, k = 0, at = 0;
	char *buf;
	if (!utf8_ok(t, len))
		return wf_fail(v->err, WF_ERR_FORMAT, "merges.txt: not valid UTF-8");
	for (size_t i = 0; i < len; i++)
		lines += t[i] == '\n' || t[i] == '\r';
	v->mg = voc_alloc(v, lines * sizeof *v->mg);
	buf = voc_alloc(v, len + 1);
	if (!v->mg || !buf)
		return voc_nomem(v);
	v->n_mg = 0;
	v->mg_src = "merges.txt: merges";
	for (size_t ln = 0; at < len || (ln == 0 && len == 0); ln++) {
		size_t e = at;
		struct vstr f[3];
		while (e < len && t[e] != '\n' && t[e] != '\r')
			e++;
		size_t nf = py_split(t + at, e - at, f);
		bool skip = ln == 0 && nf > 0 && f[0].s[0] == '#';
		if (!skip && nf == 2) {
			v->mg[v->n_mg].s = buf + k;
			memcpy(buf + k, f[0].s, f[0].n);
			k += f[0].n;
			buf[k++] = ' ';
			memcpy(buf + k, f[1].s, f[1].n);
			k += f[1].n;
			v->mg[v->n_mg].n = f[0].n + 1 + f[1].n;
			v->n_mg++;
		}
		at = e + (e < len && t[e] == '\r' && e + 1 < len && t[e + 1] == '\n' ? 2 : 1);
		if (len == 0)
			break;
	}
	return WF_OK;
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
			if (cJSON_IsString(s) && h->s[id] && strcmp(s->valuestring, h->s[id]) == 0)
				return true;
		}
	}
	return false;
}

/* "<0x[0-9A-Fa-f]{2}>" */
static bool byte_token(const char *s)
{
	static const char hex[] = "0123456789abcdefABCDEF";
	return strlen(s) == 6 && memcmp(s, "<0x", 3) == 0 && s[5] == '>' && strchr(hex, s[3]) && strchr(hex, s[4]);
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
		if (!h->s[i])
			return wf_fail(v->err, WF_ERR_UNSUP, "tokenizer.json: added_tokens: id %zu missing (ids must follow the vocab)", i);
	enum wf_err rc = voc_tokens(v, h->n > n ? h->n : n);
	for (size_t i = 0; i < v->n_tok && rc == WF_OK; i++) {
		struct vtok *t = &v->tok[i];
		if (i >= h->n || !h->s[i])
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.vocab: id %zu missing", i);
		t->s = h->s[i];
		t->n = (uint32_t)strlen(t->s);
		t->score = -1000.0f;
		if (i >= n)
			t->type = is_special_id(v, h, i) ? TT_CONTROL : TT_USER_DEFINED;
		else if (byte_token(t->s))
			t->type = TT_BYTE;
		else
			t->type = is_special_id(v, h, i) ? TT_CONTROL : TT_NORMAL;
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
	if (rc == WF_OK)
		rc = voc_write_llama(v);
	return rc;
}
