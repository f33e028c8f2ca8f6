/* wf_set_int.h - what the files of wf_set share: the loader's state and
 * each form's entry point.  Private to src/model/wf_set*.c; the one public
 * entry is wf_set_open (wf_set.h).
 *
 *   wf_set.c         what MODEL names: a file, a part, an index, a folder
 *   wf_set_parts.c   opening parts, small files, part names, merging
 *   wf_set_split.c   split GGUF
 *   wf_set_index.c   safetensors index and shards
 *   wf_set_folder.c  model folders and the hub cache, sidecars
 */
#ifndef WF_SET_INT_H
#define WF_SET_INT_H

#include "base/wf_unmap.h"
#include "model/wf_model.h"

#include <cjson/cJSON.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

/* More parts than this in one set is refused: it is no model. */
#define WF_SET_MAX_PARTS 100000

struct wf_set_loader {
	char *dir;            /* folder of the model's files, no trailing '/' */
	char *err;            /* the caller's message buffer */
	size_t fd_budget;     /* parts whose descriptor may stay open */
	size_t fds_kept;
	uint32_t map_cap;     /* a set of more parts maps them on first read (wf_maps.h) */
	bool lazy;            /* the set being opened is one: drop each mapping once parsed */
	struct wf_unmap drop; /* dropped mappings, unmapped by runs */
	bool in_snapshot;     /* already went from a hub cache folder to its snapshot */
};

/* How the parts of a set were found; parts.json names it. */
enum wf_set_form { WF_FORM_SPLIT_GGUF, WF_FORM_INDEX, WF_FORM_ST_SET };

/* A loaded safetensors index. */
struct wf_set_index {
	char *name;           /* the index file's name */
	char *text;           /* its bytes */
	cJSON *root;
	const cJSON *metadata;  /* "metadata", or NULL */
	const cJSON *weight_map;
	char **shards;        /* distinct shard names, sorted */
	uint32_t n_shards;
	struct stat st;       /* of the index file: its owner and mode */
};

/* wf_set_parts.c */

/* Whether s ends in suffix, ignoring ASCII case. */
bool wf_set_ends_with(const char *s, const char *suffix);

/* Says how many parts the set being opened has, before any is opened:
 * over the loader's map_cap, each part's mapping is dropped once its
 * header is parsed (wf_maps.h). */
void wf_set_expect(struct wf_set_loader *L, uint64_t n_parts);

/* Unmaps the mappings dropped so far (wf_set_open_part); before the
 * loader is done with. */
void wf_set_drop_flush(struct wf_set_loader *L);

/* Opens file `name` of the model's folder as one part; beyond the
 * loader's descriptor budget its descriptor is closed once mapped, and
 * in a set of more parts than map_cap its mapping once parsed. */
enum wf_err wf_set_open_part(struct wf_set_loader *L, const char *name, struct wf_model **out);

/* Reads a whole small regular file of the folder (at most max bytes) into
 * memory, NUL-terminated; *st (may be NULL) gets the file's stat. */
enum wf_err wf_set_read_small(struct wf_set_loader *L, const char *name, uint64_t max, char **data,
			      uint64_t *len, struct stat *st);

/* Parses NAME as PREFIX-NNNNN-of-MMMMM<ext> (llama.cpp's
 * "%s-%05d-of-%05d.gguf"; more digits for more parts).  *prefix_len is
 * the length of PREFIX. */
bool wf_set_split_name(const char *name, const char *ext, size_t *prefix_len, unsigned long *no,
		       unsigned long *of);

/* The name of part `no` of `of` with that prefix and extension, in a new
 * string; NULL when out of memory. */
char *wf_set_part_name(const char *prefix, size_t prefix_len, unsigned long no, unsigned long of, const char *ext);

/* Merges the opened parts (taking them over, even on failure) into one
 * model.  Tensor names must be unique across parts. */
enum wf_err wf_set_merge(struct wf_set_loader *L, struct wf_model **parts, uint32_t n, enum wf_set_form form,
			 const char *index_name, const cJSON *index_md, struct wf_model **out);

/* wf_set_split.c */

/* A file named as part of a split set of more parts than weightfs takes
 * (PREFIX-NNNNN-of-MMMMM<ext>, MMMMM over WF_SET_MAX_PARTS) is refused by
 * its name, before it or any other file is opened. */
enum wf_err wf_set_split_limit(struct wf_set_loader *L, const char *name, const char *ext);

/* Finds and opens every part of the split GGUF that `given` (already
 * open, named `name`; taken over) belongs to, checks the split rules and
 * merges them. */
enum wf_err wf_set_load_split(struct wf_set_loader *L, struct wf_model *given, const char *name,
			      struct wf_model **out);

/* wf_set_index.c */

void wf_set_index_free(struct wf_set_index *ix);

/* Reads and checks index `name`: JSON, an object with a weight_map of
 * tensor name to shard file name. */
enum wf_err wf_set_index_load(struct wf_set_loader *L, const char *name, struct wf_set_index *ix);

/* Whether index ix names shard `name`. */
bool wf_set_index_names(const struct wf_set_index *ix, const char *name);

/* Opens the shards of a loaded index and checks them against it; `given`
 * (may be NULL) is a shard already open, named given_name. */
enum wf_err wf_set_load_index(struct wf_set_loader *L, struct wf_set_index *ix, struct wf_model *given,
			      const char *given_name, struct wf_model **out);

/* wf_set_folder.c */

/* Loads the one model of folder L->dir (following a hub cache to its
 * snapshot) with its sidecars. */
enum wf_err wf_set_load_folder(struct wf_set_loader *L, struct wf_model **out);

/* A safetensors file or index named as MODEL whose folder holds
 * config.json is that folder's model: the folder's files model.gguf and
 * WEIGHTFS.txt read (config, tokenizer, generation_config.json, README.md,
 * quantize_config.json) become m's sidecars, marked sidecars_beside (not
 * shown).  None for a folder without config.json. */
enum wf_err wf_set_beside(struct wf_set_loader *L, struct wf_model *m);

/* For safetensors file `shard`: the index beside it that names it, if
 * any (*found); two such indexes are an error. */
enum wf_err wf_set_index_beside(struct wf_set_loader *L, const char *shard, struct wf_set_index *ix, bool *found);

#endif
