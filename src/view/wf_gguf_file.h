/* wf_gguf_file.h - model.gguf: a Hugging Face checkpoint as the GGUF file
 * llama.cpp's convert_hf_to_gguf.py would write from it, made on read.
 *
 * The header (key/values, tokenizer, tensor infos) is made once, when the
 * model is opened, and kept: it is about the size of the folder's
 * tokenizer files, which are in memory already.  The data is never kept:
 * each tensor is a wf_xform over a source tensor's view (its dtype the
 * output type, q/k rows put in llama.cpp's order, Gemma's norms + 1), so a
 * read converts only what covers its range.  Generated tensors (Llama 3's
 * rope_freqs) are a few hundred bytes, kept.
 */
#ifndef WF_GGUF_FILE_H
#define WF_GGUF_FILE_H

#include "base/wf_common.h"
#include "arch/wf_arch.h"
#include "model/wf_model.h"
#include "view/wf_live.h"

struct wf_gguf_file {
	char *header;              /* the header, data section alignment included */
	size_t header_len;
	struct wf_arch_plan plan;  /* the tensors, in file order */
	struct wf_xform *xf;       /* [plan.n]: how each is read: its source tensor, the view set for its
				    * output type on each read (a copy of each tensor kept was 80 bytes
				    * a tensor of a model's memory) */
	struct wf_xform *xs;       /* [plan.n_stacks]: the slabs of stacked tensors, at their stack's place */
	uint64_t *start;           /* [plan.n + 1]: where each tensor's data starts in the file; the file's size last */
	uint64_t size;             /* bytes of model.gguf */
};

/* Makes model.gguf for m with -o gguf=`ftype` (WF_FTYPE_*; WF_FTYPE_AUTO
 * is the converter's default), from m's tensors and the sidecars of its
 * folder (config.json, generation_config.json, the tokenizer files).
 * Returns WF_OK with *out set; WF_ERR_UNSUP or WF_ERR_FORMAT with one line
 * in why (naming the file and field, or the tensor) when model.gguf cannot
 * be what the converter writes, so it is left out; WF_ERR_NOMEM. */
enum wf_err wf_gguf_file_new(const struct wf_model *m, uint32_t ftype, struct wf_gguf_file **out, char *why);

void wf_gguf_file_free(struct wf_gguf_file *g);

/* Sets up g's tensors from g->plan, after a header of g->header_len
 * bytes: each one's view of its source tensor and transform, and where its
 * data starts, each padded to a multiple of align (WF_GGUF_ALIGN for GGUF,
 * 1 for safetensors, which has no gaps).  For the files made like
 * model.gguf (hf/model.safetensors, wf_hf_file.h).  Returns WF_OK, or an
 * error with one line in why. */
enum wf_err wf_made_lay_out(const struct wf_model *m, struct wf_gguf_file *g, unsigned align, char *why);

/* The segment of model.gguf holding byte off (wf_live.h's wf_seg). */
void wf_gguf_file_seg(const struct wf_gguf_file *g, uint64_t off, struct wf_seg *seg);

#endif
