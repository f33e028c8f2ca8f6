/* wf_card.h - general.size_label as llama.cpp's convert_hf_to_gguf.py
 * writes it (gguf-py metadata.py and utility.py; the rules and their
 * sources are in ../shared/docs/moe-and-mla.md section 11).
 *
 * The first of these that gives one wins: README.md's YAML front matter
 * `size_label`, then `model_size_label`; config.json's `_name_or_path`
 * when it holds at most one '/'; the model folder's name; the label
 * computed from the parameter count.  A name gives the parts of it that
 * look like sizes ("Qwen3-30B-A3B" gives "30B-A3B"), less those too far
 * from the parameter count to be one (a context length: "Llama-3-8B-32k"),
 * so the count is needed even when a name gives the label.
 */
#ifndef WF_CARD_H
#define WF_CARD_H

#include "base/wf_buf.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The parameter count of GGUFWriter.get_total_parameter_count. */
struct wf_card_count {
	uint64_t total;          /* every tensor's elements (saturating) */
	uint64_t shared;         /* of the tensors that are not expert tensors */
	uint64_t expert;         /* one expert's share of each expert tensor, summed */
	uint64_t expert_sum;     /* the expert counts of the expert tensors, summed */
	uint64_t n_expert;       /* expert tensors */
};

/* Counts tensor `name` of ne[0..ndim) (ggml order) into *c: an expert
 * tensor (the name holds "_exps." and it has 3 dims or more) counts as
 * its size over its expert count (numpy shape[-3], shape[-2] for a name
 * ending in ".bias"), anything else as shared. */
void wf_card_count_add(struct wf_card_count *c, const char *name, const uint64_t *ne, uint32_t ndim);

/* utility.py model_weight_count_rounded_notation(n, 2): "67M", "1.2B",
 * "10B" (9.95e9), "1000M" (1e9), "1000K" (999999).  out holds 40 bytes. */
void wf_card_rounded(uint64_t n, char *out, size_t outlen);

/* utility.py size_label: "NxM" with experts ("8x7.2B"), else the rounded
 * total.  out holds 64 bytes. */
void wf_card_count_label(const struct wf_card_count *c, char *out, size_t outlen);

/* The size label metadata.py's get_model_id_components finds in model id
 * id[0..n) ("ORG/NAME" or "NAME") with `total` parameters (0: none
 * dropped as a context length), appended to out; false when it finds
 * none.  Digits and letters are ASCII ones. */
bool wf_card_name_label(const char *id, size_t n, uint64_t total, struct wf_buf *out);

/* What the YAML front matter of a model card says of a key. */
enum wf_card_val {
	WF_CARD_ABSENT = 0,  /* no front matter, or no such top-level key */
	WF_CARD_NULL,        /* the key with a null value (empty, ~, null) */
	WF_CARD_STR,         /* a string on one line: plain, '...' or "..." */
	WF_CARD_OTHER,       /* anything else: a number, a bool, a list, a block or multi-line scalar */
};

/* Looks up top-level `key` of the front matter of README.md text[0..len)
 * (the lines between a first line "---" and the next line "---", as
 * metadata.py's load_model_card cuts them); WF_CARD_STR appends the
 * string to val.  A text that is not UTF-8 has none. */
enum wf_card_val wf_card_front(const char *text, size_t len, const char *key, struct wf_buf *val);

/* Where the label may come from. */
struct wf_card_in {
	const char *readme;      /* README.md's bytes, or NULL */
	size_t readme_len;
	const char *name_or_path; /* config.json's top-level _name_or_path (NUL-terminated), or NULL */
	const char *dir;         /* the model folder's name, or NULL */
};

/* general.size_label by the rules above, appended to out; false when the
 * converter writes none (a front matter label that is empty or not a
 * string, no name giving one and no parameter). */
bool wf_card_size_label(const struct wf_card_in *in, const struct wf_card_count *c, struct wf_buf *out);

#endif
