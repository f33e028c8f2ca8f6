/* wf_vocab_merges.c - SpecialVocab's merges (gguf-py vocab.py): from
 * tokenizer.json's model.merges or from merges.txt, for the BPE paths
 * (wf_vocab_bpe.c) and SpecialVocab itself (wf_vocab_sp.c).  A leaf below
 * both, so they form no cycle. */
#include "model/wf_vocab.h"
#include "model/wf_vocab_int.h"

#include <stdlib.h>
#include <string.h>

/* SpecialVocab's merges from tokenizer.json model.merges (v->big): a
 * list of "a b" strings as they are, or (transformers >= 4.45) of [a, b]
 * pairs, joined with each space inside a part written U+0120. */
enum wf_err voc_merges(struct voc *v)
{
	const cJSON *m = jget(v->tj, "model"), *mg;
	const struct tjbig *b = &v->big;
	if (m && !cJSON_IsObject(m))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model: not an object");
	mg = jget(m, "merges");
	if (!cJSON_IsArray(mg) || !b->merges_on || !b->n_merges)
		return WF_OK;
	bool strs = b->mkind[0] == TJM_STR;
	if (!strs && !(b->mkind[0] != TJM_OTHER && b->m0_len == 2 && b->m0_first_str))
		return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges: unknown format");
	for (size_t i = 0; i < b->n_merges; i++) {
		if (strs && b->mkind[i] != TJM_STR)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a string", i);
		if (!strs && b->mkind[i] == TJM_BADLIST)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a list of strings", i);
		if (!strs && b->mkind[i] != TJM_LIST)
			return wf_fail(v->err, WF_ERR_FORMAT, "tokenizer.json: model.merges[%zu]: not a pair", i);
	}
	v->mg = b->mg;
	v->n_mg = b->n_merges;
	v->mg_src = "tokenizer.json: model.merges";
	return WF_OK;
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
static size_t py_split(const char *s, size_t n, struct wf_tok_str f[3])
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
	if (!wf_utf8_valid(t, len))
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
		struct wf_tok_str f[3];
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
