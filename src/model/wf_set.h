/* wf_set.h - MODEL as a user names it.
 *
 * A model rarely comes as one file: Hugging Face shards checkpoints over
 * about 5 GB (model-00001-of-00004.safetensors plus an index), llama.cpp's
 * gguf-split cuts big GGUFs into PREFIX-00001-of-00003.gguf parts, and a
 * downloaded model folder holds config.json and friends beside the
 * weights.  wf_set_open turns any of these into one wf_model whose parts[]
 * are the files and whose tensors name the part their data is in.
 */
#ifndef WF_SET_H
#define WF_SET_H

#include "model/wf_model.h"

/* Files of a model folder larger than this are not shown at the root. */
#define WF_SIDECAR_MAX (64u << 20)
/* ... nor once the shown files add up to this. */
#define WF_SIDECARS_TOTAL_MAX (256u << 20)
/* A safetensors index larger than this is refused. */
#define WF_INDEX_MAX (64u << 20)

/* Opens MODEL `arg`, which is one of:
 *  - a GGUF or safetensors file on its own;
 *  - any part of a split GGUF (split.count > 1): the parts are found beside
 *    it by llama.cpp's naming, PREFIX-%05d-of-%05d.gguf, and every part must
 *    agree (split.count, split.no matching its place, tensor names unique
 *    across parts, their number equal to split.tensors.count);
 *  - a *.safetensors.index.json, or a safetensors shard named by the
 *    weight_map of an index beside it: every shard the index names, which
 *    must hold exactly the tensors the index gives it;
 *  - a folder (a Hugging Face snapshot, symlinks into a hub cache's blobs
 *    included, or the hub cache's models--ORG--NAME folder itself) holding
 *    exactly one model in any of the forms above, or one unindexed set of
 *    PREFIX-%05d-of-%05d.safetensors shards; its other small regular files
 *    become m->sidecars.
 * Descriptors: parts beyond what the process's soft RLIMIT_NOFILE leaves
 * (less a reserve for FUSE) are closed once mapped and checked by path
 * (wf_model_check).  On failure returns the error of the first problem,
 * with one line in err that names the file and, where there is one, the
 * tensor or field. */
enum wf_err wf_set_open(struct wf_model **out, const char *arg, char *err);

#endif
