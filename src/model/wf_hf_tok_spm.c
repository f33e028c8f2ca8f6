/* wf_hf_tok_spm.c - a SentencePiece vocabulary (tokenizer.ggml.model
 * "llama") for HF tokenizers: BPE merges rebuilt from the scores, and the
 * tokenizer.model protobuf (google/sentencepiece sentencepiece_model.proto)
 * that SentencePiece itself loads. */
#include "model/wf_hf_tok_int.h"

#include <stdlib.h>
#include <string.h>

struct cand {
	float st, sl, sr;    /* the scores of t, l, r (qsort has no context argument) */
	uint32_t l, r, t, k; /* left, right, merged token; k the split offset */
};

/* transformers' order (GGUFTokenizerSkeleton): the merged token's score
 * descending, ties in vocabulary order, then each token's splits by the
 * halves' scores descending, ties left to right. */
static int cand_cmp(const void *pa, const void *pb)
{
	const struct cand *a = pa, *b = pb;
	if (a->st != b->st)
		return a->st > b->st ? -1 : 1;
	if (a->t != b->t)
		return a->t < b->t ? -1 : 1;
	if (a->sl != b->sl)
		return a->sl > b->sl ? -1 : 1;
	if (a->sr != b->sr)
		return a->sr > b->sr ? -1 : 1;
	return a->k < b->k ? -1 : a->k > b->k;
}

/* ------------------------------------------------------------- affixes
 * Every split (L, R) of a token T with L and R tokens: hashing both halves
 * at each split of each token is quadratic in a token's length (a 1 MB
 * token: minutes). The tokens that are prefixes of T are instead found as
 * a chain: sorted, the tokens of which P is a prefix follow P, so a stack
 * walk gives each token its longest proper prefix among the tokens, and
 * following those links from T lists every prefix of T that is a token,
 * longest first (at most one per length: the chains of all tokens together
 * are no longer than their bytes). Suffixes the same way on the texts
 * read backwards. Sorting by merging costs at most bytes x log2(tokens):
 * a comparison reads no more than the shorter text, charged to the one it
 * moves. */

#define NO_TOK UINT32_MAX

static int text_cmp(const struct wf_tok_str *a, const struct wf_tok_str *b, bool rev)
{
	size_t n = a->n < b->n ? a->n : b->n;
	for (size_t j = 0; j < n; j++) {
		uint8_t x = rev ? a->p[a->n - 1 - j] : a->p[j], y = rev ? b->p[b->n - 1 - j] : b->p[j];
		if (x != y)
			return x < y ? -1 : 1;
	}
	return a->n < b->n ? -1 : a->n > b->n;
}

/* Bottom-up merge sort of the ids v[0..m) by text (read backwards when
 * rev); tmp has room for m. */
static void sort_texts(const struct ht_in *in, uint32_t *v, uint32_t *tmp, size_t m, bool rev)
{
	for (size_t w = 1; w < m; w *= 2) {
		for (size_t lo = 0; lo < m; lo += 2 * w) {
			size_t mid = lo + w < m ? lo + w : m, hi = lo + 2 * w < m ? lo + 2 * w : m;
			size_t i = lo, j = mid, o = lo;
			while (i < mid && j < hi)
				tmp[o++] = text_cmp(&in->tok[v[j]], &in->tok[v[i]], rev) < 0 ? v[j++] : v[i++];
			while (i < mid)
				tmp[o++] = v[i++];
			while (j < hi)
				tmp[o++] = v[j++];
		}
		memcpy(v, tmp, m * sizeof *v);
	}
}

/* Whether p is a proper prefix (suffix when rev) of t. */
static bool affix_of(const struct wf_tok_str *p, const struct wf_tok_str *t, bool rev)
{
	return p->n < t->n && memcmp(p->p, rev ? t->p + t->n - p->n : t->p, p->n) == 0;
}

/* up[id]: the longest token that is a proper prefix (suffix) of id's
 * text, or NO_TOK; ids v[0..m) sorted by sort_texts, distinct texts. */
static void affix_links(const struct ht_in *in, const uint32_t *v, size_t m, bool rev, uint32_t *up,
			uint32_t *stack)
{
	size_t top = 0;
	for (size_t i = 0; i < m; i++) {
		const struct wf_tok_str *t = &in->tok[v[i]];
		while (top && !affix_of(&in->tok[stack[top - 1]], t, rev))
			top--; /* each id is popped once: its test is charged to it */
		up[v[i]] = top ? stack[top - 1] : NO_TOK;
		stack[top++] = v[i];
	}
}

struct affix {
	uint32_t *pre, *suf; /* [n] links (affix_links) */
	uint32_t *scratch;   /* [n] */
};

/* The links of every token whose text is its own (ht_lookup gives it:
 * the last id of that text, as the halves are looked up). */
static bool affix_make(const struct ht_in *in, struct affix *a)
{
	size_t n = in->n ? in->n : 1, m = 0;
	uint32_t *v = malloc(n * sizeof *v), *tmp = malloc(n * sizeof *tmp);
	a->pre = malloc(n * sizeof *a->pre);
	a->suf = malloc(n * sizeof *a->suf);
	a->scratch = malloc(n * sizeof *a->scratch);
	bool ok = v && tmp && a->pre && a->suf && a->scratch;
	for (size_t i = 0; ok && i < in->n; i++) {
		a->pre[i] = a->suf[i] = NO_TOK;
		if (ht_lookup(in, in->tok[i].p, in->tok[i].n) == (int64_t)i)
			v[m++] = (uint32_t)i;
	}
	for (int rev = 0; ok && rev < 2; rev++) {
		sort_texts(in, v, tmp, m, rev);
		affix_links(in, v, m, rev, rev ? a->suf : a->pre, tmp);
	}
	free(v);
	free(tmp);
	return ok;
}

static void affix_free(struct affix *a)
{
	free(a->pre);
	free(a->suf);
	free(a->scratch);
}

/* The merges are bounded by the tokens: each costs its joined token's
 * bytes plus MERGE_COST (its pair in memory, its JSON punctuation), at most
 * MERGES_PER_BYTE times the tokens' bytes with the same per token cost, plus
 * MERGES_SLACK. Real vocabularies take 1 to 2 times (Llama 2, Phi-3,
 * Baichuan, Aquila); tokens a, aa, ..., a^m would take m^3 / 6 bytes of
 * tokenizer.json from a file of m^2 / 2 (a 0.5 MB GGUF, 170 MB). */
#define MERGE_COST 32
#define MERGES_PER_BYTE 8
#define MERGES_SLACK ((uint64_t)16 << 20)

struct cands {
	struct cand *c;
	size_t n, cap;
	uint64_t left; /* of the budget */
};

enum { ADD_OK, ADD_NOMEM, ADD_OVER };

static int cand_add(struct cands *cs, struct cand c, size_t len)
{
	if (len + MERGE_COST > cs->left)
		return ADD_OVER;
	cs->left -= len + MERGE_COST;
	struct cand *g = wf_grow(cs->c, cs->n, &cs->cap, sizeof *g, 1024);
	if (!g)
		return ADD_NOMEM;
	cs->c = g;
	cs->c[cs->n++] = c;
	return ADD_OK;
}

/* Token i's splits into two tokens, left half's length ascending: its
 * prefixes (longest first, so kept and read backwards) against its
 * suffixes (longest first: the split offset ascending). */
static int token_splits(const struct ht_in *in, struct affix *a, uint32_t i, struct cands *cs)
{
	const struct wf_tok_str *t = &in->tok[i];
	size_t np = 0;
	for (uint32_t p = a->pre[i]; p != NO_TOK; p = a->pre[p])
		a->scratch[np++] = p;
	uint32_t s = a->suf[i];
	while (np && s != NO_TOK) {
		uint32_t l = a->scratch[np - 1];
		size_t k = in->tok[l].n, ks = t->n - in->tok[s].n;
		if (k < ks) {
			np--;
			continue;
		}
		if (k > ks) {
			s = a->suf[s];
			continue;
		}
		int e = (t->p[k] & 0xC0) == 0x80 ? ADD_OK /* inside a character */
			: cand_add(cs, (struct cand){in->score[i], in->score[l], in->score[s], l, s, i, (uint32_t)k}, t->n);
		if (e != ADD_OK)
			return e;
		np--;
		s = a->suf[s];
	}
	return ADD_OK;
}

/* llama.cpp's SentencePiece tokenizer merges, at each step, the adjacent
 * pair whose join is the token of highest score: the same as BPE over every
 * split (L, R) of every token T into two tokens, ranked by score(T). */
enum wf_err ht_spm_merges(struct ht_in *in, char *why)
{
	struct cands cs = {.left = MERGES_SLACK};
	struct affix a = {0};
	for (size_t i = 0; i < in->n; i++)
		cs.left += MERGES_PER_BYTE * ((uint64_t)in->tok[i].n + MERGE_COST);
	uint64_t budget = cs.left;
	int e = affix_make(in, &a) ? ADD_OK : ADD_NOMEM;
	for (size_t i = 0; e == ADD_OK && i < in->n; i++)
		if (ht_lookup(in, in->tok[i].p, in->tok[i].n) == (int64_t)i) /* else its text belongs to a later id */
			e = token_splits(in, &a, (uint32_t)i, &cs);
	affix_free(&a);
	if (e == ADD_OK && cs.n)
		qsort(cs.c, cs.n, sizeof *cs.c, cand_cmp);
	in->merge = e == ADD_OK ? malloc((cs.n ? cs.n : 1) * sizeof *in->merge) : NULL;
	if (!in->merge) {
		free(cs.c);
		if (e == ADD_OVER)
			return wf_fail(why, WF_ERR_UNSUP,
				       "tokenizer.ggml.tokens: the merges made from the scores would take more than %llu "
				       "bytes (%d times the tokens' + 16 MiB): too many tokens are made of other tokens",
				       (unsigned long long)budget, MERGES_PER_BYTE);
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.scores: out of memory for the merges");
	}
	for (size_t i = 0; i < cs.n; i++) {
		in->merge[i][0] = cs.c[i].l;
		in->merge[i][1] = cs.c[i].r;
	}
	in->n_merge = cs.n;
	free(cs.c);
	return WF_OK;
}

static bool is_byte_piece(const struct wf_tok_str *t)
{
	static const char hex[] = "0123456789ABCDEF";
	return t->n == 6 && !memcmp(t->p, "<0x", 3) && t->p[5] == '>' && memchr(hex, t->p[3], 16) &&
	       memchr(hex, t->p[4], 16);
}

/* Whether SentencePieceProcessor would load the pieces: token types given,
 * each a SentencePiece type, exactly one UNKNOWN, pieces distinct, byte
 * pieces spelled <0xXX>. */
bool ht_spm_loadable(const struct ht_in *in)
{
	size_t n_unk = 0;
	if (!in->types.set)
		return false;
	for (size_t i = 0; i < in->n; i++) {
		if (in->type[i] < WF_TOK_NORMAL || in->type[i] > WF_TOK_BYTE)
			return false;
		if (in->type[i] == WF_TOK_BYTE && !is_byte_piece(&in->tok[i]))
			return false;
		n_unk += in->type[i] == WF_TOK_UNKNOWN;
		if (ht_lookup(in, in->tok[i].p, in->tok[i].n) != (int64_t)i)
			return false;
	}
	return n_unk == 1;
}

static void varint(struct wf_buf *b, uint64_t v)
{
	do {
		uint8_t c = v & 0x7F;
		v >>= 7;
		wf_buf_putc(b, (char)(v ? c | 0x80 : c));
	} while (v);
}

static void vfield(struct wf_buf *b, unsigned field, int64_t v)
{
	varint(b, (uint64_t)field << 3);
	varint(b, (uint64_t)v); /* negative int32: ten bytes, as protobuf writes them */
}

static void sfield(struct wf_buf *b, unsigned field, const void *p, size_t n)
{
	varint(b, (uint64_t)field << 3 | 2);
	varint(b, n);
	wf_buf_put(b, p, n);
}

static size_t varint_len(uint64_t v)
{
	size_t n = 1;
	while (v >>= 7)
		n++;
	return n;
}

static void piece(struct wf_buf *b, const struct ht_in *in, size_t i)
{
	const struct wf_tok_str *t = &in->tok[i];
	size_t inner = 1 + varint_len(t->n) + t->n + 5 + (in->type[i] != WF_TOK_NORMAL ? 2 : 0);
	varint(b, 1 << 3 | 2);
	varint(b, inner);
	sfield(b, 1, t->p, t->n);
	varint(b, 2 << 3 | 5);
	wf_buf_put(b, &in->score[i], 4); /* little-endian float, as the fixed32 wire type */
	if (in->type[i] != WF_TOK_NORMAL)
		vfield(b, 3, in->type[i]);
}

/* ModelProto { pieces = 1; trainer_spec = 2 { model_type BPE, vocab_size,
 * byte_fallback, unk/bos/eos/pad ids }; normalizer_spec = 3 { identity,
 * add_dummy_prefix, escape_whitespaces } }. */
void ht_spm_model(const struct ht_in *in, struct wf_buf *b)
{
	struct wf_buf ts = {0}, ns = {0};
	bool bytes = false;
	for (size_t i = 0; i < in->n; i++) {
		piece(b, in, i);
		bytes |= in->type[i] == WF_TOK_BYTE;
	}
	int64_t unk = 0;
	for (size_t i = 0; i < in->n; i++)
		if (in->type[i] == WF_TOK_UNKNOWN)
			unk = (int64_t)i;
	vfield(&ts, 3, 2);
	vfield(&ts, 4, (int64_t)in->n);
	vfield(&ts, 35, bytes);
	vfield(&ts, 40, unk);
	vfield(&ts, 41, in->bos);
	vfield(&ts, 42, in->eos);
	vfield(&ts, 43, in->pad);
	sfield(&ns, 1, "identity", 8);
	vfield(&ns, 3, in->add_space_prefix);
	vfield(&ns, 4, 0);
	vfield(&ns, 5, 1);
	if (ts.oom || ns.oom)
		b->oom = true; /* the caller's wf_buf_finish reports it */
	else {
		sfield(b, 2, ts.data, ts.len);
		sfield(b, 3, ns.data, ns.len);
	}
	wf_buf_free(&ts);
	wf_buf_free(&ns);
}
