/* wf_vocab_int.h - what wf_vocab.c, wf_vocab_sp.c (SpecialVocab),
 * wf_vocab_bpe.c (the tokenizer.json paths) and wf_vocab_spm.c (the
 * SentencePiece paths) share; not part of the library's interface. */
#ifndef WF_VOCAB_INT_H
#define WF_VOCAB_INT_H

#include "base/wf_common.h"
#include "base/wf_names.h"
#include "model/wf_tok.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct wf_vocab_files;

/* One entry of tokenizer.ggml.tokens / scores / token_type.  s == NULL is
 * the converter's "[PAD{i}]" filler, made when written. */
struct vtok {
	const char *s;
	uint32_t n;
	int32_t type;
	float score;
};

/* tokenizer.json's two big members, model.vocab and model.merges, read
 * by wf_vocab_tj.c without a cJSON tree (v->tj holds {} and [] in their
 * place), or copied from the tree when it has them.  Strings point into
 * tokenizer.json where they hold no escape, else into the arena; none is
 * NUL-terminated. */
#define TJ_NOT_INT INT64_MIN
enum { TJM_STR, TJM_LIST, TJM_BADLIST, TJM_OTHER };
struct tjbig {
	bool vocab_on, merges_on; /* the members below stand for model.vocab / model.merges */
	struct wf_tok_str *vkey;        /* model.vocab's keys, in the file's order */
	int64_t *vid;             /* their ids: TJ_NOT_INT where jint() would refuse, or a boolean */
	size_t n_vocab;
	bool vocab_unique;        /* its keys were found each once (by hfv_load, or voc_vocab_unique) */
	struct wf_tok_str *mg;          /* each merge: a string as it is, a list of strings joined as the converter does */
	uint8_t *mkind;           /* TJM_*: a string, a list of strings, a list of something else, anything else */
	size_t n_merges;
	size_t m0_len;            /* the first merge's list length, and whether its first item is a string */
	bool m0_first_str;
	/* added_tokens when the last one is a list: each entry parsed alone and
	 * kept as what its readers ask of it (cJSON's tree of a million entries
	 * is about 10 times their text) */
	bool add_on;
	struct tjadd *add;
	size_t n_add;
};

/* One added_tokens entry as jget() and the tests below see it. */
struct tjadd {
	const char *content;      /* a string "content" (NUL-terminated), or NULL */
	int64_t id;               /* jint() of "id", when id_ok */
	bool is_obj, id_ok, id_bool;
	bool special_true, special_truthy, normalized_true; /* cJSON_IsTrue, jtruthy, cJSON_IsTrue */
};

/* Strings packed one after another, string i at s[pos[2i], + pos[2i+1]):
 * a lookup's compare reads 2.2 MB for Llama 3's tokens rather than the
 * 9 MB file they lie scattered in. */
struct vpool {
	char *s;
	uint32_t *pos;
	size_t used, cap;
};

/* A key/value as gguf-py's writer holds it: a dict, so setting a key
 * again keeps its place and takes the new value (GGUFWriter.add_key_value). */
enum vkv_kind { VKV_U32, VKV_BOOL, VKV_STR, VKV_TOKENS, VKV_SCORES, VKV_TYPES, VKV_MERGES, VKV_TPLNAMES };
struct vkv {
	const char *key;  /* static or in the arena */
	enum vkv_kind kind;
	uint32_t u;
	bool b;
	struct wf_tok_str s;
};

#define VKV_MAX 64

struct voc {
	const struct wf_vocab_files *f;
	cJSON *tj, *tc, *cfg;   /* tokenizer.json, tokenizer_config.json, config.json (NULL when absent) */
	cJSON *added;           /* added_tokens.json */
	cJSON *ctj;             /* chat_template.json, parsed when needed */
	int ct_kind;            /* the chat template found: 0 none, 1 the text ct, 2 the list ct_list */
	bool no_chat_template;  /* voc_special leaves the chat template out (GemmaModel's second SpecialVocab) */
	struct wf_tok_str ct;
	const cJSON *ct_list;
	const char *ct_src;
	int64_t vocab_size;     /* the hparams' (-1 absent) */
	struct vtok *tok;
	size_t n_tok;
	bool from_spm;          /* tok came from tokenizer.model (a SentencePiece path) */
	struct wf_tok_str *mg;        /* merges, "left right" */
	const char *mg_src;     /* where they came from, for messages */
	size_t n_mg;
	struct wf_tok_str *tpl;       /* tokenizer.chat_templates */
	size_t n_tpl;
	struct vkv kv[VKV_MAX];
	size_t n_kv;
	struct tjbig big;
	struct wf_idset ts;     /* tokenizer.json's strings by id (hfv_load), when ts_on */
	bool ts_on;
	const struct wf_tok_str *ts_s;/* the strings ts stands for: ts_n of them, .s NULL where no id */
	size_t ts_n;
	const bool *ts_base;    /* by id: a string of model.vocab (HF's BPE model knows no other), ts_n of them */
	struct vpool tsp;       /* the same strings packed, which ts compares with */
	void **blk;             /* the arena's blocks */
	size_t n_blk, cap_blk;
	char *err;
};

/* wf_vocab_base.c */
void *voc_alloc(struct voc *v, size_t n);
enum wf_err voc_nomem(struct voc *v);
enum wf_err voc_kv(struct voc *v, const char *key, enum vkv_kind kind, uint32_t u, bool b, const char *s, size_t n);
enum wf_err voc_tokens(struct voc *v, size_t n);
const cJSON *jget(const cJSON *obj, const char *key);
bool jtruthy(const cJSON *j);
bool jstr_is(const cJSON *j, const char *s);
bool jint(const cJSON *j, int64_t *out);
/* wf_idset's string function over a struct vpool (ctx) */
const void *voc_pool_at(const void *ctx, uint32_t i, size_t *n);
/* wf_idset's string function over an array of struct vtok (ctx) */
const void *voc_tok_at(const void *ctx, uint32_t i, size_t *n);
/* Whether v->ts is the set of v->tok's strings, each at its token's
 * index (so it answers for them without another table) */
bool voc_ts_exact(const struct voc *v);
/* A set of v->tok's strings (at the first index of each); false when out
 * of memory (set freed). */
bool voc_tok_idset(const struct voc *v, struct wf_idset *set);
bool looks_special(const char *s, size_t n);
const char *replace_u2581(struct voc *v, const char *s, size_t n, size_t *out_n);
enum wf_err voc_chat_template_load(struct voc *v);
enum wf_err voc_chat_template_write(struct voc *v);
enum wf_err voc_parse_json(struct voc *v, const char *name, const char *t, size_t n, cJSON **out);
/* json.load's checks before any parsing: valid UTF-8, no \u0000 */
enum wf_err voc_json_ok(struct voc *v, const char *name, const char *t, size_t n);

/* wf_vocab_tj.c: tokenizer.json into v->tj and v->big */
enum wf_err voc_parse_tj(struct voc *v, const char *t, size_t n);
/* ' '.join(parts) as the converter writes a merge given as a list: each
 * space inside a part written U+0120.  Appends part p[0..n) to o (2n bytes
 * at most), returns the bytes written. */
size_t voc_merge_part(char *o, const char *p, size_t n);

/* wf_vocab_tj.c: model.vocab's keys each once, unless a route's reading
 * of them found so already (v->big.vocab_unique): json.load would keep a
 * repeated key's last id. */
enum wf_err voc_vocab_unique(struct voc *v);

/* wf_vocab_sp.c: gguf.SpecialVocab(dir, load_merges, types, n_vocab).add_to_gguf; ids_preset are set
 * after loading (llama's CodeLlama ids), n_preset of them */
enum wf_err voc_special(struct voc *v, bool load_merges, const char *const *types, size_t n_types, int64_t n_vocab,
			const int64_t *preset, size_t n_preset);
/* The same with the preset ids' own types: preset[i] is of type ptypes[i]
 * ("bos", "eot", ...) whatever types holds (NULL: the default types). */
enum wf_err voc_special_set(struct voc *v, bool load_merges, const char *const *types, size_t n_types, int64_t n_vocab,
			    const char *const *ptypes, const int64_t *preset, size_t n_preset);

/* wf_vocab_bpe.c */
enum wf_err voc_gpt2(struct voc *v);
/* _set_vocab_glm: GPT-2 BPE, then bos, eot, unk and eom set to the ids of
 * the added tokens [gMASK], <|user|>, <|endoftext|> and <|observation|>
 * (a KeyError in the converter when one is missing: refused) */
enum wf_err voc_glm(struct voc *v);
/* WF_OK when written, WF_ERR_RANGE when the converter would fall through to GPT-2 BPE */
enum wf_err voc_llama_hf(struct voc *v);

/* wf_vocab_merges.c: SpecialVocab's merges, from tokenizer.json or merges.txt */
enum wf_err voc_merges(struct voc *v);
enum wf_err voc_merges_txt(struct voc *v);

/* wf_vocab_spm.c: WF_ERR_RANGE when tokenizer.model is absent */
enum wf_err voc_sentencepiece(struct voc *v);
/* The key/values of a vocabulary llama.cpp tokenizes as SentencePiece
 * ("llama", pre "default"): tokens, scores and types as v holds them, then
 * SpecialVocab bounded to the token count (both SentencePiece paths and
 * Llama-2-style tokenizer.json). */
enum wf_err voc_write_llama(struct voc *v);
enum wf_err voc_phi3_spm(struct voc *v);

#endif
