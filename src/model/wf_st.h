/* wf_st.h - the safetensors parser. */
#ifndef WF_ST_H
#define WF_ST_H

#include "base/wf_common.h"
#include "model/wf_model.h"

/* Parses buf[0..len) as a safetensors file, enforcing the reference
 * loader's rules.  On success *out owns the descriptors but not buf, which
 * must outlive it.  On failure returns WF_ERR_FORMAT or WF_ERR_UNSUP with
 * one line in err naming the field or tensor, or WF_ERR_NOMEM ("out of
 * memory ...") when an allocation fails, including cJSON's, which would
 * otherwise look like a syntax error. */
enum wf_err wf_st_parse(struct wf_model **out, const uint8_t *buf, uint64_t len, char *err);

/* Test hook: on the calling thread, the JSON parser's allocations fail
 * after n more succeed (and keep failing); n < 0 turns this off (the
 * default).  Lets tests prove an allocation failure inside cJSON is
 * reported as WF_ERR_NOMEM. */
void wf_json_fail_after(long n);

#endif
