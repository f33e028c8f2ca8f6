/* wf_hf_tok_int.h - shared by wf_hf_tok*.c: the GGUF tokenizer key/values,
 * read and checked, and the token table built from them. */
#ifndef WF_HF_TOK_INT_H
#define WF_HF_TOK_INT_H

#include "base/wf_buf.h"
#include "base/wf_common.h"
#include "base/wf_names.h"
#include "model/wf_gguf_kv.h"
#include "model/wf_tok.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* one key/value: its entry in the GGUF's index (wf_gguf_kv.h) */
struct ht_raw {
	bool set;
	int64_t id;     /* -1 when absent */
	uint32_t type;  /* enum wf_gtype */
};

/* the named chat templates (tokenizer.chat_template.NAME) */
#define HT_MAX_TEMPLATES 16

struct ht_in {
	struct wf_gguf_vals v;    /* the GGUF's key/values */
	/* the ones read */
	struct ht_raw model, pre, tokens, scores, types, merges, bos_kv, eos_kv, unk_kv, pad_kv,
		add_bos_kv, add_eos_kv, add_space, rm_ws, chat, name;
	struct wf_tok_str tpl_name[HT_MAX_TEMPLATES];
	struct ht_raw tpl[HT_MAX_TEMPLATES];
	size_t n_tpl;
	/* decoded */
	bool spm;                 /* tokenizer.ggml.model "llama" */
	bool gemma4;              /* "gemma4": BPE with merges over raw UTF-8, spaces as U+2581 (else "gpt2") */
	struct wf_tok_str pre_s;      /* tokenizer.ggml.pre, or empty */
	size_t n;                 /* tokens */
	struct wf_tok_str *tok;       /* [n] token texts (valid UTF-8, "[EMPTY_i]" for empty ones as llama.cpp) */
	char *empty_buf;          /* owns the "[EMPTY_i]" texts */
	float *score;             /* [n] or NULL */
	int32_t *type;            /* [n] (WF_TOK_NORMAL when the key is absent) */
	uint8_t *added;           /* [n]: 0 none, 1 added non-special, 2 added special */
	uint8_t *rstrip;          /* [n]: llama.cpp's RSTRIP attribute (Phi-3) */
	int64_t bos, eos, unk, pad; /* -1 when none */
	bool add_bos, add_eos, add_space_prefix, clean_spaces, ignore_merges;
	const char *const *regex; /* NULL-terminated split regexes (byte-level only) */
	struct wf_tok_str chat_s;
	/* text -> id (the last id with that text, as llama.cpp's token_to_id) */
	struct wf_idset ids;
	/* byte-level merges: pairs of ids */
	uint32_t (*merge)[2];
	size_t n_merge;
};

/* wf_hf_tok_kv.c */
enum wf_err ht_read(const struct wf_gguf_vals *v, struct ht_in *in, char *why);
/* the flags read after the pre-tokenizer set their defaults */
enum wf_err ht_read_flags(struct ht_in *in, char *why);
void ht_in_free(struct ht_in *in);
int64_t ht_lookup(const struct ht_in *in, const uint8_t *p, size_t n);
/* the strings of the string array r (at most want, or MAX_MERGES when 0),
 * each valid UTF-8 without NUL, into *out (malloc'd, *n of them) */
bool ht_arr_strs(const struct ht_in *in, const struct ht_raw *r, const char *key, size_t want, struct wf_tok_str **out,
		 size_t *n, char *why);
/* r's string (any bytes), or false when r is absent or no string */
bool ht_str_of(const struct ht_in *in, const struct ht_raw *r, struct wf_tok_str *out);

/* wf_hf_tok_spm.c */
enum wf_err ht_spm_merges(struct ht_in *in, char *why);
void ht_spm_model(const struct ht_in *in, struct wf_buf *b);
bool ht_spm_loadable(const struct ht_in *in);

#endif
