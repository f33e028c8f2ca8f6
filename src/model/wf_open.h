/* wf_open.h - opening one model file and picking its parser.
 *
 * The only code that knows both formats: it looks at a file's first bytes
 * (and its name) and hands it to wf_gguf_parse or wf_st_parse.  The parsers
 * depend on wf_model.h alone, so nothing calls back into this file.
 */
#ifndef WF_OPEN_H
#define WF_OPEN_H

#include "base/wf_common.h"
#include "model/wf_model.h"

/* Parses buf as whichever format it holds: GGUF by its magic, else
 * safetensors.  `hint` (a file name, may be NULL) only picks which
 * format's message to give for a file that is neither.  On success *out
 * owns the descriptors but not buf, which must outlive it. */
enum wf_err wf_open_parse(struct wf_model **out, const uint8_t *buf, uint64_t len,
			   const char *hint, char *err);

/* Opens path read-only, checks it is a regular file, maps it and parses
 * it; the model's one part is the file.  err gets one line without the
 * file name; the caller adds it. */
enum wf_err wf_open_file(struct wf_model **out, const char *path, char *err);

/* wf_open_file for a path already absolute and resolved (canonical): the
 * part keeps it as its path without realpath(3), which costs a readlink
 * per component (a set of 20,000 shards: 80,000 calls). */
enum wf_err wf_open_file_at(struct wf_model **out, const char *path, bool canonical, char *err);

/* For tests only: when set, called by wf_open_file with the file's
 * descriptor once it is mapped and before it is parsed, so a test can
 * change the file exactly there. */
extern void (*wf_open_test_hook)(int fd);

#endif
