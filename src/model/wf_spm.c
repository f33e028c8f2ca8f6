/* wf_spm.c - a bounds-checked protobuf reader for SentencePiece's
 * ModelProto: only what the converter uses (wf_spm.h). */
#include "model/wf_spm.h"

#include <stdlib.h>
#include <string.h>

/* protobuf wire types */
enum { WT_VARINT = 0, WT_I64 = 1, WT_LEN = 2, WT_SGROUP = 3, WT_EGROUP = 4, WT_I32 = 5 };

struct rd {
	const uint8_t *p, *end;
};

static bool rd_varint(struct rd *r, uint64_t *v)
{
	uint64_t x = 0;
	for (unsigned shift = 0; shift < 64; shift += 7) {
		if (r->p >= r->end)
			return false;
		uint8_t b = *r->p++;
		/* the tenth byte may carry only the top bit */
		if (shift == 63 && (b & 0x7e))
			return false;
		x |= (uint64_t)(b & 0x7f) << shift;
		if (!(b & 0x80)) {
			*v = x;
			return true;
		}
	}
	return false;
}

/* A field's key; false at a malformed one or a group (which proto3 and
 * this schema never use). */
static bool rd_key(struct rd *r, uint64_t *field, unsigned *wt)
{
	uint64_t k;
	if (!rd_varint(r, &k))
		return false;
	*field = k >> 3;
	*wt = (unsigned)(k & 7);
	return *field != 0 && *wt != WT_SGROUP && *wt != WT_EGROUP && *wt <= WT_I32;
}

/* A length-delimited payload, checked against what is left. */
static bool rd_len(struct rd *r, struct rd *sub)
{
	uint64_t n;
	if (!rd_varint(r, &n) || n > (uint64_t)(r->end - r->p))
		return false;
	sub->p = r->p;
	sub->end = r->p + n;
	r->p += n;
	return true;
}

static bool rd_skip(struct rd *r, unsigned wt)
{
	uint64_t v;
	struct rd sub;
	switch (wt) {
	case WT_VARINT:
		return rd_varint(r, &v);
	case WT_I64:
		if (r->end - r->p < 8)
			return false;
		r->p += 8;
		return true;
	case WT_LEN:
		return rd_len(r, &sub);
	case WT_I32:
		if (r->end - r->p < 4)
			return false;
		r->p += 4;
		return true;
	default:
		return false;
	}
}

static enum wf_err bad(char *err, size_t i, const char *what)
{
	return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: pieces[%zu]: %s", i, what);
}

/* One SentencePiece message: piece=1 string, score=2 float, type=3 enum. */
static enum wf_err parse_piece(struct rd r, size_t i, struct wf_spm_piece *pc, char *err)
{
	bool have_piece = false;
	pc->score = 0.0f;
	pc->type = WF_SPM_NORMAL;
	while (r.p < r.end) {
		uint64_t field, v;
		unsigned wt;
		struct rd sub;
		if (!rd_key(&r, &field, &wt))
			return bad(err, i, "malformed field");
		if (field == 1 && wt == WT_LEN) {
			if (!rd_len(&r, &sub) || sub.end - sub.p > UINT32_MAX)
				return bad(err, i, "piece runs past its message");
			pc->s = sub.p;
			pc->n = (uint32_t)(sub.end - sub.p);
			have_piece = true;
		} else if (field == 2 && wt == WT_I32) {
			if (r.end - r.p < 4)
				return bad(err, i, "score runs past its message");
			uint32_t bits = wf_le32(r.p);
			memcpy(&pc->score, &bits, 4);
			r.p += 4;
		} else if (field == 3 && wt == WT_VARINT) {
			if (!rd_varint(&r, &v))
				return bad(err, i, "malformed type");
			if (v < WF_SPM_NORMAL || v > WF_SPM_BYTE)
				return wf_fail(err, WF_ERR_UNSUP, "tokenizer.model: pieces[%zu]: unknown type %" PRIu64, i, v);
			pc->type = (int32_t)v;
		} else if (!rd_skip(&r, wt)) {
			return bad(err, i, "malformed field");
		}
	}
	if (!have_piece || pc->n == 0)
		return bad(err, i, "empty piece");
	for (size_t o = 0; o < pc->n;) {
		size_t k = wf_utf8_seq(pc->s + o, pc->n - o);
		if (!k)
			return bad(err, i, "piece is not valid UTF-8");
		o += k;
	}
	return WF_OK;
}

/* TrainerSpec: model_type=3; everything else is skipped. */
static enum wf_err parse_trainer(struct rd r, int32_t *model_type, char *err)
{
	while (r.p < r.end) {
		uint64_t field, v;
		unsigned wt;
		if (!rd_key(&r, &field, &wt))
			return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: trainer_spec: malformed field");
		if (field == 3 && wt == WT_VARINT) {
			if (!rd_varint(&r, &v))
				return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: trainer_spec.model_type: malformed");
			*model_type = v > 100 ? 0 : (int32_t)v;
		} else if (!rd_skip(&r, wt)) {
			return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: trainer_spec: malformed field");
		}
	}
	return WF_OK;
}

static enum wf_err add_piece(struct wf_spm *s, size_t *cap, size_t max_pieces, struct rd sub, char *err)
{
	if (s->n >= max_pieces)
		return wf_fail(err, WF_ERR_UNSUP, "tokenizer.model: pieces: more than %zu", max_pieces);
	struct wf_spm_piece *np = wf_grow(s->p, s->n, cap, sizeof *np, 1024);
	if (!np)
		return wf_fail(err, WF_ERR_NOMEM, "tokenizer.model: out of memory");
	s->p = np;
	enum wf_err rc = parse_piece(sub, s->n, &s->p[s->n], err);
	if (rc == WF_OK)
		s->n++;
	return rc;
}

static enum wf_err check_model(const struct wf_spm *s, char *err)
{
	size_t unk = 0;
	if (s->n == 0)
		return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: pieces: none");
	/* llama.cpp's SPM tokenizer merges by score, which is what BPE and
	 * (approximately, as the converter accepts) UNIGRAM models mean; WORD
	 * and CHAR models it would tokenize differently. */
	if (s->model_type != WF_SPM_UNIGRAM && s->model_type != WF_SPM_BPE)
		return wf_fail(err, WF_ERR_UNSUP, "tokenizer.model: trainer_spec.model_type: %d is not BPE or UNIGRAM",
			       (int)s->model_type);
	for (size_t i = 0; i < s->n; i++)
		unk += s->p[i].type == WF_SPM_UNKNOWN;
	if (unk != 1)
		return wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: pieces: %zu UNKNOWN pieces, not one", unk);
	return WF_OK;
}

enum wf_err wf_spm_parse(const uint8_t *buf, size_t len, size_t max_pieces, struct wf_spm *out, char *err)
{
	struct rd r = {buf, buf + len};
	size_t cap = 0;
	enum wf_err rc = WF_OK;
	memset(out, 0, sizeof *out);
	out->model_type = WF_SPM_UNIGRAM;
	while (rc == WF_OK && r.p < r.end) {
		uint64_t field;
		unsigned wt;
		struct rd sub;
		if (!rd_key(&r, &field, &wt)) {
			rc = wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: malformed field at byte %zu", (size_t)(r.p - buf));
		} else if ((field == 1 || field == 2) && wt == WT_LEN) {
			if (!rd_len(&r, &sub))
				rc = wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: field %" PRIu64 " runs past the file", field);
			else if (field == 1)
				rc = add_piece(out, &cap, max_pieces, sub, err);
			else
				rc = parse_trainer(sub, &out->model_type, err);
		} else if (!rd_skip(&r, wt)) {
			rc = wf_fail(err, WF_ERR_FORMAT, "tokenizer.model: field %" PRIu64 " runs past the file", field);
		}
	}
	if (rc == WF_OK)
		rc = check_model(out, err);
	if (rc != WF_OK)
		wf_spm_free(out);
	return rc;
}

void wf_spm_free(struct wf_spm *s)
{
	free(s->p);
	s->p = NULL;
	s->n = 0;
}
