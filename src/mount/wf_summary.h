/* wf_summary.h - WEIGHTFS.txt: what a mount holds, for a person.
 *
 * A file manager shows names and sizes, never a tensor's shape or dtype,
 * and nothing says the files are raw numbers.  The summary at the mount's
 * root says so in plain text: the model's name and architecture, its
 * parameter count, each type with its tensors, parameters and bytes (in
 * the model and in the mount), what the files hold and where shapes are,
 * and a compact table of the layers.
 *
 * The name: no tensor's top-level entry holds a '.' other than our own
 * suffixes (.tensor, .npy, -o suffix's), so only a model folder's own
 * file could be named WEIGHTFS.txt; the tree then leaves that file out,
 * as it does for every folder file whose name weightfs gives.
 */
#ifndef WF_SUMMARY_H
#define WF_SUMMARY_H

#include "base/wf_common.h"
#include "mount/wf_tree.h"

#define WF_SUMMARY_NAME WF_TREE_SUMMARY_NAME

/* Bounds that keep the text small (well under 1 MiB) whatever the model:
 * layer stacks shown (blk.N, model.layers.N, vision_model.layers.N, ...),
 * columns (tensor kinds) per stack, rows per stack (runs of alike layers
 * share a row), and tensors outside layers listed one per line. */
#define WF_SUMMARY_STACKS 6
#define WF_SUMMARY_KINDS 20
#define WF_SUMMARY_ROWS 40
#define WF_SUMMARY_OTHERS 32

/* Writes the summary of tree t (its model, views and file names) into a
 * new NUL-terminated *text of *len bytes, which the caller frees.
 * meta_dir is the name of the metadata folder ("metadata" or
 * "metadata.d").  Work is linear in the tensors' names plus a sort of the
 * tensors in layers.  Returns WF_OK or WF_ERR_NOMEM (err says so). */
enum wf_err wf_summary(const struct wf_tree *t, const char *meta_dir, char **text, size_t *len, char *err);

#endif
