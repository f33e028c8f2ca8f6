/* wf_live.h - serving a model that may change under us.
 *
 * The mount (and any in-process reader) serves the files as they were when
 * opened.  A read copies or decodes its bytes, then checks that every file
 * it touched is still that file (wf_model_check); a change makes that read
 * and every later read of the changed file fail, and is reported once.  A
 * page of the mapping that vanished (the file shrank) raises SIGBUS, which
 * wf_live_catch_sigbus turns into a failed read on the reading thread.
 */
#ifndef WF_LIVE_H
#define WF_LIVE_H

#include "base/wf_common.h"
#include "model/wf_model.h"

#include <stdatomic.h>

/* Every file a reader serves is a list of segments, each either bytes in
 * memory or a range of one tensor's view.  Whoever owns the files (the
 * mount's tree) says which segment holds a given byte; this layer only
 * walks them, so it never calls up into its owner. */
enum wf_seg_kind {
	WF_SEG_NONE,     /* past the end of the file, or not a file */
	WF_SEG_BYTES,
	WF_SEG_VIEW,
	WF_SEG_NOMEM,    /* the bytes could not be made (out of memory) */
	WF_SEG_CHANGED,  /* the bytes could not be made: the file they are made from changed */
};

/* A tensor of a file made from another model's tensor (model.gguf): the
 * view `t` (a model tensor, or a copy of one whose view was set for the
 * output dtype), its view set to vk, its rows reordered and its values
 * changed on the way. */
struct wf_xform {
	const struct wf_tensor *t;  /* the tensor read */
	uint64_t perm_heads;        /* 0; else the rows (t->shape[0]) are in llama.cpp's q/k order with this
				     * many heads: output row r is view row wf_qk_row(r, rows, heads, true) */
	bool perm_to_hf;            /* the rows are put back from llama.cpp's order into HF's instead: output
				     * row r is view row wf_qk_row(r, rows, heads, false) (hf/) */
	uint8_t add;                /* 0; 1: + 1 in float32; 2: + 1 in half, widened; 3: - 1 in float32
				     * (a float32 view) */
	bool quiet_bf16;            /* a bfloat16 view whose NaNs get the quiet bit, as gguf-py's rounding does */
	bool validate;              /* what is made must pass ggml_validate_row_data (wf_blocks_valid): else EIO */
	uint8_t quant;              /* 0; else a float32 view (after the rows and fix-ups above) encoded into this
				     * ggml type, whole blocks at a time (wf_types.h's quantize column) */
	uint8_t vk;                 /* 0: t's view; else t read through this view (enum wf_vk), set on a copy
				     * of t for each read (wf_tensor_set_view): a plan keeps no copy of
				     * each tensor */
	uint8_t hs;                 /* 0; else a slice of each head's rows (DeepSeek's kv_b_proj split,
				     * moe-and-mla.md 6.1): t (2-D, a float view) is hs_heads heads of
				     * D = rows / hs_heads rows, and the output is rows [hs_off, hs_off +
				     * hs_n) of each head, in head order (WF_HS_ROWS, wf_arch.h), or each head's
				     * slice transposed, n x cols -> cols x n (WF_HS_T) */
	uint32_t hs_heads, hs_off, hs_n;
	const struct wf_tensor *t2; /* WF_HS_KVB: kv_b_proj put back together (hf/): t is attn_k_b
				     * [heads, kv_lora_rank, nope], t2 attn_v_b [heads, v, kv_lora_rank];
				     * the output's head h is k_b[h] transposed (nope rows) then v_b[h];
				     * gather T_PAIR / PAIR: the second source, t's shape, read in t's view */
	uint8_t gather;             /* enum wf_gather (arch/wf_arch.h): the elements of another layout */
};


/* The tensor xf reads: xf->t, or with vk set a copy of it in *tmp with
 * that view (a plan keeps no copy).  NULL if the view cannot be set,
 * which the plan ruled out when it was made. */
const struct wf_tensor *wf_xform_tensor(const struct wf_xform *xf, struct wf_tensor *tmp);

struct wf_seg {
	enum wf_seg_kind kind;
	uint64_t start;      /* where the segment starts in its file */
	uint64_t len;        /* its bytes */
	const char *bytes;   /* WF_SEG_BYTES: its contents */
	bool of_part0;       /* WF_SEG_BYTES made from the model's first file (a GGUF's metadata.json,
			      * wf_meta.h): that file is checked after the copy, as a tensor's is */
	uint32_t tensor;     /* WF_SEG_VIEW: the tensor (index into the model) ... */
	uint64_t from;       /* ... and where in its view the segment starts */
	const struct wf_xform *xf; /* WF_SEG_VIEW: when not NULL, what is read instead of tensor's view */
};

/* Fills *seg with the segment of file `file` of `files` that holds byte
 * off (kind WF_SEG_NONE at or past the end).  Called from reading threads
 * at once: it must be safe to call concurrently. */
typedef void (*wf_seg_fn)(const void *files, uint32_t file, uint64_t off, struct wf_seg *seg);

/* Called once per changed part, from the reading thread: part names it when
 * the model has several files (else NULL), why says what changed. */
typedef void (*wf_notice_fn)(void *ctx, const char *part, const char *why);

struct wf_live {
	const struct wf_model *m;
	wf_seg_fn seg;             /* for wf_live_read: the files' segments; may be NULL */
	const void *files;         /* what seg is asked about */
	atomic_bool *changed;      /* [m->n_parts]: the part changed since it was opened */
	wf_notice_fn notice;       /* may be NULL */
	void *ctx;
};

/* Sets up lv over m, with the files of `files` described by seg (both
 * NULL for a reader of tensors alone); returns WF_ERR_NOMEM or WF_OK. */
enum wf_err wf_live_init(struct wf_live *lv, const struct wf_model *m, wf_seg_fn seg, const void *files,
			 wf_notice_fn notice, void *ctx);
void wf_live_free(struct wf_live *lv);

/* Installs the process's SIGBUS handler: a fault on a mapping inside a
 * wf_live read ends that read with WF_ERR_CHANGED; any other SIGBUS keeps
 * its default action.  Returns 0, or -1 with errno set. */
int wf_live_catch_sigbus(void);

/* How reads get a file-backed tensor's source bytes: by pread() (1, the
 * default) or through the model's mapping (0; also the default when
 * WEIGHTFS_NO_PREAD is set to anything but "" or "0").  A layer of several
 * stored tensors, a caller's buffer and a part mapped from the pool are
 * always read through the mapping.  For tests and benchmarks. */
void wf_live_set_pread(int on);

/* For tests only: when set, called by every read on the reading thread
 * right after it copied bytes of part `part` and before it checks that
 * part, so a test can change the file in the middle of a read. */
extern void (*wf_live_test_hook)(const struct wf_live *lv, uint32_t part);

/* Copies bytes [off, off+len) of file `file` (any file lv->seg knows: a
 * tensor, an .npy, model.safetensors, a JSON text) into out; *got gets the
 * count (less at the end of the file).  WF_ERR_RANGE when a tensor the
 * range covers cannot be read (no decoder); WF_ERR_CHANGED when a file it
 * touched changed. */
enum wf_err wf_live_read(struct wf_live *lv, uint32_t file, uint64_t off, size_t len, void *out, size_t *got);

/* The same for view bytes [off, off+len) of tensor descriptor t of lv->m:
 * one of m->tensors, or a copy of one whose view was set for another
 * output dtype (wf_tensor_set_view), so that one model serves every dtype
 * per call. */
enum wf_err wf_live_read_view(struct wf_live *lv, const struct wf_tensor *t, uint64_t off, size_t len, void *out,
			      size_t *got);

#endif
