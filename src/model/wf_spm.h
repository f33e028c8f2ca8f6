/* wf_spm.h - the parts of a SentencePiece tokenizer.model (a serialized
 * ModelProto, google/sentencepiece src/sentencepiece_model.proto) that the
 * GGUF converter reads: the pieces and trainer_spec.model_type. */
#ifndef WF_SPM_H
#define WF_SPM_H

#include "base/wf_common.h"

#include <stddef.h>
#include <stdint.h>

/* SentencePiece.Type (proto enum values, also GGUF's token types). */
enum {
	WF_SPM_NORMAL = 1,
	WF_SPM_UNKNOWN = 2,
	WF_SPM_CONTROL = 3,
	WF_SPM_USER_DEFINED = 4,
	WF_SPM_UNUSED = 5,
	WF_SPM_BYTE = 6,
};

/* TrainerSpec.ModelType */
enum { WF_SPM_UNIGRAM = 1, WF_SPM_BPE = 2, WF_SPM_WORD = 3, WF_SPM_CHAR = 4 };

struct wf_spm_piece {
	const uint8_t *s;  /* into the parsed buffer: valid UTF-8, not empty */
	uint32_t n;
	float score;       /* 0 when absent (the proto default) */
	int32_t type;      /* WF_SPM_NORMAL when absent */
};

struct wf_spm {
	struct wf_spm_piece *p;
	size_t n;
	int32_t model_type; /* WF_SPM_UNIGRAM when absent */
};

/* Parses buf[0..len) as a ModelProto: varints overflow-checked, every
 * length checked against the bytes left, unknown fields skipped by wire
 * type, groups refused; at most max_pieces pieces.  A piece must be valid
 * non-empty UTF-8 with a known type, as SentencePieceProcessor requires
 * to load it (exactly one UNKNOWN piece).  Returns WF_OK (out owns an
 * array pointing into buf), WF_ERR_FORMAT / WF_ERR_UNSUP with err naming
 * "tokenizer.model" and the field, or WF_ERR_NOMEM. */
enum wf_err wf_spm_parse(const uint8_t *buf, size_t len, size_t max_pieces, struct wf_spm *out, char *err);

void wf_spm_free(struct wf_spm *s);

#endif
