/* wf_gen.h - the bytes of the files the mount makes up: .npy headers, the
 * header of the virtual model.safetensors, and one text per metadata key.
 *
 * Each is a pure function of the model (and its views, wf_view.h), so the
 * tree can hold them as byte segments in front of, or between, tensor
 * views (wf_tree.h), and the one read path serves them all.
 */
#ifndef WF_GEN_H
#define WF_GEN_H

#include "base/wf_common.h"
#include "model/wf_model.h"

struct wf_buf;

/* Longest .npy header wf_npy_header writes (32 dims of 20 digits fit). */
#define WF_NPY_HEADER_MAX 1024

/* Writes the .npy header of t's view into out (at least WF_NPY_HEADER_MAX
 * bytes): format version 1.0, descr, fortran_order False and the shape in
 * numpy order, padded with spaces and a newline so the data starts at a
 * multiple of 64 bytes.  Returns its length. */
size_t wf_npy_header(const struct wf_tensor *t, char *out);

/* Builds the header of model.safetensors, the whole model as one
 * safetensors file: the 8-byte length, then JSON with __metadata__
 * ("format": "pt", each of the model's key/values as a string: strings as
 * they are, other values as their JSON text; under -o dtype=stored the
 * ggml types of tensors shown as U8 blocks, in "weightfs.stored_types")
 * and every tensor in model order with its view's dtype, shape and
 * data_offsets, padded with spaces to a multiple of 8 bytes.  Names that
 * are not valid UTF-8 (which safetensors cannot hold) have each stray byte
 * written as the character U+00XX, and "~N" added should that make two
 * names equal.  *offsets gets n_tensors + 1 entries: where each tensor's
 * data starts after the header, and the end.  m must keep its text
 * (m->metadata_json: a safetensors model, or a test's oracle; the mount
 * makes a GGUF's header a window at a time, wf_st_stream.h).  Returns
 * WF_OK, WF_ERR_NOMEM, or WF_ERR_FORMAT when there is no text. */
enum wf_err wf_st_header(const struct wf_model *m, char **hdr, uint64_t *hdr_len, uint64_t **offsets);

/* One metadata key as a file: name is the key's bytes, data its text. */
struct wf_meta_file {
	char *name;
	size_t name_len;
	const char *data;    /* into metadata.json, or into the owner's text buffer; NULL for a GGUF's
			      * (made on read: wf_meta_gguf_value with the file's number) */
	size_t len;
	bool json;           /* the value is JSON text (number, bool, array, object), not a string */
};

/* Splits metadata.json (our own output: one object) into a file per key:
 * strings become their text (JSON escapes undone, \udcXX back to the byte
 * it stood for), numbers and booleans their JSON text, arrays and objects
 * their JSON text.  *text owns the decoded strings and names; files point
 * into it or into json.  Returns WF_OK, WF_ERR_NOMEM, or WF_ERR_FORMAT if
 * json is not an object (a bug). */
enum wf_err wf_meta_files(const char *json, size_t json_len, struct wf_meta_file **files, size_t *n,
			  char **text);

/* The same for a GGUF model (m->meta_gen), whose text is never whole: file
 * i is key i, named by the key's bytes; data is NULL and len the length
 * of what wf_meta_gguf_value makes (a string's raw bytes, which are what
 * wf_meta_files decoded from the text, or any other value's JSON text).
 * Returns WF_OK, WF_ERR_NOMEM, or WF_ERR_CHANGED (the file changed). */
enum wf_err wf_meta_files_gguf(const struct wf_model *m, struct wf_meta_file **files, size_t *n);

#endif
