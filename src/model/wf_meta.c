/* wf_meta.c - metadata.json's framing, and its reading for every format (wf_meta.h). */
#include "model/wf_meta.h"

#include "base/wf_bus.h"
#include "model/wf_gguf_meta.h"
#include "model/wf_maps.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

void wf_meta_json_key(struct wf_meta_json *w, const void *key, size_t n)
{
	wf_buf_puts(&w->b, w->n ? ",\n " : "{\n ");
	wf_buf_json_str(&w->b, key, n);
	wf_buf_puts(&w->b, ": ");
	w->n++;
}

enum wf_err wf_meta_json_finish(struct wf_meta_json *w, struct wf_model *m, char *err)
{
	wf_buf_puts(&w->b, w->n ? "\n}\n" : "{}\n");
	if (!wf_buf_finish(&w->b)) {
		wf_meta_json_free(w);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory writing metadata.json");
	}
	free(m->metadata_json);
	m->metadata_json = w->b.data;
	m->metadata_json_len = w->b.len;
	m->n_kv = w->n;
	*w = (struct wf_meta_json){0};
	return WF_OK;
}

void wf_meta_json_free(struct wf_meta_json *w)
{
	wf_buf_free(&w->b);
	*w = (struct wf_meta_json){0};
}

uint64_t wf_meta_len(const struct wf_model *m)
{
	if (m->meta_gen)
		return wf_gguf_meta_len(m->meta_gen);
	return m->metadata_json ? m->metadata_json_len : 3;
}

/* What a GGUF model reads its text from: part 0, taken from the pool when
 * the model keeps its parts unmapped.  Give it back with wf_maps_put. */
static enum wf_err part0(const struct wf_model *m, const uint8_t **data, char *err)
{
	if (m->n_parts == 0)
		return wf_fail(err, WF_ERR_RANGE, "metadata.json: the model has no file");
	return wf_maps_get(m->maps, m->parts, 0, data, err);
}

static enum wf_err gen_fail(enum wf_err rc, char *err)
{
	if (rc == WF_ERR_CHANGED)
		return wf_fail(err, rc, "metadata.json: the file's key/values changed since it was opened");
	if (rc == WF_ERR_NOMEM)
		return wf_fail(err, rc, "out of memory making metadata.json");
	return rc == WF_OK ? rc : wf_fail(err, rc, "metadata.json: a read past its end");
}

enum wf_err wf_meta_read(const struct wf_model *m, uint64_t off, size_t n, char *buf, char *err)
{
	if (!m->meta_gen) {
		const char *t = m->metadata_json ? m->metadata_json : "{}\n";
		uint64_t len = wf_meta_len(m);
		if (off > len || n > len - off)
			return gen_fail(WF_ERR_RANGE, err);
		memcpy(buf, t + off, n);
		return WF_OK;
	}
	const uint8_t *data;
	enum wf_err rc = part0(m, &data, err);
	if (rc != WF_OK)
		return rc;
	rc = wf_gguf_meta_read(m->meta_gen, data, m->parts[0].len, off, n, buf);
	wf_maps_put(m->maps, m->parts, 0);
	return gen_fail(rc, err);
}

enum wf_err wf_meta_gguf_key_read(const struct wf_model *m, size_t i, uint64_t off, size_t n, char *buf, char *err)
{
	if (!m->meta_gen || i >= wf_gguf_meta_count(m->meta_gen))
		return gen_fail(WF_ERR_RANGE, err);
	const struct wf_gguf_kv *k = wf_gguf_meta_key(m->meta_gen, i);
	if (off > k->key_len || n > k->key_len - off)
		return gen_fail(WF_ERR_RANGE, err);
	const uint8_t *data;
	enum wf_err rc = part0(m, &data, err);
	if (rc != WF_OK)
		return rc;
	/* the key's length before its bytes must still be the one parsed */
	if (k->key < 8 || k->key > m->parts[0].len || k->key_len > m->parts[0].len - k->key ||
	    wf_le64(data + k->key - 8) != k->key_len)
		rc = WF_ERR_CHANGED;
	else
		memcpy(buf, data + k->key + off, n);
	wf_maps_put(m->maps, m->parts, 0);
	return gen_fail(rc, err);
}

enum wf_err wf_meta_gguf_key(const struct wf_model *m, size_t i, struct wf_buf *out, char *err)
{
	if (!m->meta_gen || i >= wf_gguf_meta_count(m->meta_gen))
		return gen_fail(WF_ERR_RANGE, err);
	uint64_t n = wf_gguf_meta_key(m->meta_gen, i)->key_len;
	size_t at = out->len;
	wf_buf_put(out, "", 0);
	for (uint64_t k = 0; k < n && !out->oom; k++)
		wf_buf_putc(out, '\0'); /* room, filled below */
	if (out->oom)
		return gen_fail(WF_ERR_NOMEM, err);
	enum wf_err rc = wf_meta_gguf_key_read(m, i, 0, (size_t)n, out->data + at, err);
	if (rc != WF_OK)
		out->len = at;
	return rc;
}

enum wf_err wf_meta_gguf_value(const struct wf_model *m, size_t i, uint64_t off, size_t n, char *buf, char *err)
{
	if (!m->meta_gen)
		return gen_fail(WF_ERR_RANGE, err);
	const uint8_t *data;
	enum wf_err rc = part0(m, &data, err);
	if (rc != WF_OK)
		return rc;
	rc = wf_gguf_meta_value(m->meta_gen, data, m->parts[0].len, i, off, n, buf);
	wf_maps_put(m->maps, m->parts, 0);
	return gen_fail(rc, err);
}

#define CHUNK ((size_t)64 << 10)

/* Appends a GGUF's whole text to out a window at a time under a SIGBUS
 * window over parts[0], then checks the part. */
static enum wf_err gen_append(const struct wf_model *m, struct wf_buf *out, char *err)
{
	uint64_t n = wf_gguf_meta_len(m->meta_gen), at = out->len;
	if (wf_bus_catch() != 0)
		return wf_fail(err, WF_ERR_IO, "cannot install the SIGBUS handler");
	const uint8_t *data;
	enum wf_err rc = part0(m, &data, err);
	if (rc != WF_OK)
		return rc;
	/* a part cut short reads as zeros in the window: the generator's own
	 * checks, the fault seen and the part's check refuse what it made */
	char *chunk = malloc(CHUNK);
	if (!chunk)
		out->oom = true;
	wf_bus_window(data, (size_t)m->parts[0].len);
	for (uint64_t off = 0; chunk && off < n && rc == WF_OK && !out->oom;) {
		size_t k = n - off < CHUNK ? (size_t)(n - off) : CHUNK;
		if ((rc = wf_gguf_meta_read(m->meta_gen, data, m->parts[0].len, off, k, chunk)) == WF_OK)
			wf_buf_put(out, chunk, k);
		off += k;
	}
	bool hit = wf_bus_window_end();
	free(chunk);
	wf_maps_put(m->maps, m->parts, 0);
	rc = gen_fail(hit ? WF_ERR_CHANGED : out->oom ? WF_ERR_NOMEM : rc, err);
	if (rc == WF_OK)
		rc = wf_model_check(m, 0, err);
	if (rc != WF_OK)
		out->len = at;
	return rc;
}

enum wf_err wf_meta_append(const struct wf_model *m, struct wf_buf *out, char *err)
{
	if (m->meta_gen)
		return gen_append(m, out, err);
	if (m->metadata_json)
		wf_buf_put(out, m->metadata_json, m->metadata_json_len);
	else
		wf_buf_puts(out, "{}\n");
	return out->oom ? wf_fail(err, WF_ERR_NOMEM, "out of memory for metadata.json") : WF_OK;
}

enum wf_err wf_meta_dup(const struct wf_model *m, char **text, size_t *len, char *err)
{
	struct wf_buf b = {0};
	*text = NULL;
	*len = 0;
	enum wf_err rc = wf_meta_append(m, &b, err);
	if (rc == WF_OK && !wf_buf_finish(&b))
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory for metadata.json");
	if (rc != WF_OK) {
		wf_buf_free(&b);
		return rc;
	}
	*text = b.data;
	*len = b.len;
	return WF_OK;
}
