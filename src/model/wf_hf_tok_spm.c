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

/* llama.cpp's SentencePiece tokenizer merges, at each step, the adjacent
 * pair whose join is the token of highest score: the same as BPE over every
 * split (L, R) of every token T into two tokens, ranked by score(T). */
enum wf_err ht_spm_merges(struct ht_in *in, char *why)
{
	size_t n_c = 0, cap = 0;
	struct cand *c = NULL;
	for (size_t i = 0; i < in->n; i++) {
		const struct ht_str *t = &in->tok[i];
		if (ht_lookup(in, t->p, t->n) != (int64_t)i)
			continue; /* its text belongs to a later id */
		for (uint32_t k = 1; k < t->n; k++) {
			if ((t->p[k] & 0xC0) == 0x80)
				continue; /* inside a character */
			int64_t l = ht_lookup(in, t->p, k), r = ht_lookup(in, t->p + k, t->n - k);
			if (l < 0 || r < 0)
				continue;
			if (n_c == cap) {
				size_t nc = cap ? cap * 2 : 1024;
				struct cand *g = realloc(c, nc * sizeof *c);
				if (!g) {
					free(c);
					return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.scores: out of memory for the merges");
				}
				c = g, cap = nc;
			}
			c[n_c++] = (struct cand){in->score[i], in->score[l], in->score[r], (uint32_t)l, (uint32_t)r, (uint32_t)i, k};
		}
	}
	if (n_c)
		qsort(c, n_c, sizeof *c, cand_cmp);
	in->merge = malloc((n_c ? n_c : 1) * sizeof *in->merge);
	if (!in->merge) {
		free(c);
		return wf_fail(why, WF_ERR_NOMEM, "tokenizer.ggml.scores: out of memory for the merges");
	}
	for (size_t i = 0; i < n_c; i++) {
		in->merge[i][0] = c[i].l;
		in->merge[i][1] = c[i].r;
	}
	in->n_merge = n_c;
	free(c);
	return WF_OK;
}

static bool is_byte_piece(const struct ht_str *t)
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
		if (in->type[i] < HT_NORMAL || in->type[i] > HT_BYTE)
			return false;
		if (in->type[i] == HT_BYTE && !is_byte_piece(&in->tok[i]))
			return false;
		n_unk += in->type[i] == HT_UNKNOWN;
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
	const struct ht_str *t = &in->tok[i];
	size_t inner = 1 + varint_len(t->n) + t->n + 5 + (in->type[i] != HT_NORMAL ? 2 : 0);
	varint(b, 1 << 3 | 2);
	varint(b, inner);
	sfield(b, 1, t->p, t->n);
	varint(b, 2 << 3 | 5);
	wf_buf_put(b, &in->score[i], 4); /* little-endian float, as the fixed32 wire type */
	if (in->type[i] != HT_NORMAL)
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
		bytes |= in->type[i] == HT_BYTE;
	}
	int64_t unk = 0;
	for (size_t i = 0; i < in->n; i++)
		if (in->type[i] == HT_UNKNOWN)
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
