/* wf_open.c - opening and mapping one model file; format dispatch. */
#include "model/wf_open.h"
#include "model/wf_gguf.h"
#include "model/wf_st.h"
#include "base/wf_bus.h"
#include "net/wf_source.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a file that is neither format seems to be, for the message. */
static const char *looks_like(const uint8_t *buf, uint64_t len)
{
	if (len >= 4 && memcmp(buf, "PK\3\4", 4) == 0)
		return " (it is a zip archive, as PyTorch .bin and .pt files are)";
	if (len >= 2 && buf[0] == 0x80 && buf[1] >= 2 && buf[1] <= 5)
		return " (it is a Python pickle)";
	if (len == 0)
		return " (it is empty)";
	uint64_t n = len < 512 ? len : 512, text = 0;
	for (uint64_t i = 0; i < n; i++)
		text += (buf[i] >= 0x20 && buf[i] < 0x7F) || buf[i] == '\n' || buf[i] == '\r' || buf[i] == '\t' ||
			buf[i] >= 0x80;
	return text == n ? " (it is text)" : "";
}

enum wf_err wf_open_parse(struct wf_model **out, const uint8_t *buf, uint64_t len,
			   const char *hint, char *err)
{
	*out = NULL;
	bool gguf_magic = wf_gguf_magic(buf, len);
	size_t hl = hint ? strlen(hint) : 0;
	bool gguf_name = hl >= 5 && strcasecmp(hint + hl - 5, ".gguf") == 0;
	if (gguf_magic || (gguf_name && !(len >= 9 && (buf[8] == '{' || buf[8] == ' '))))
		return wf_gguf_parse(out, buf, len, err);
	bool st_name = hl >= 12 && strcasecmp(hint + hl - 12, ".safetensors") == 0;
	if (!st_name && (len < 9 || buf[8] != '{'))
		return wf_fail(err, WF_ERR_FORMAT, "not a GGUF or safetensors file%s", looks_like(buf, len));
	return wf_st_parse(out, buf, len, err);
}

void (*wf_open_test_hook)(int fd);

/* Parses the mapping of fd with a SIGBUS window over it: a file cut short
 * while its header is read is refused, not a crash; and one that changed
 * while it was parsed is refused too, since the parser may have read some
 * of its bytes before the change and some after. */
static enum wf_err parse_guarded(struct wf_model **m, int fd, const struct stat *st, const uint8_t *buf,
				 const char *path, char *err)
{
	wf_bus_window(buf, (size_t)st->st_size);
	if (wf_open_test_hook)
		wf_open_test_hook(fd);
	enum wf_err rc = wf_open_parse(m, buf, (uint64_t)st->st_size, path, err);
	bool hit = wf_bus_window_end();
	struct stat now;
	bool same = fstat(fd, &now) == 0 && now.st_size == st->st_size &&
		    now.st_mtim.tv_sec == st->st_mtim.tv_sec && now.st_mtim.tv_nsec == st->st_mtim.tv_nsec;
	if (!hit && same)
		return rc;
	wf_model_free(*m);
	*m = NULL;
	if (hit)
		return wf_fail(err, WF_ERR_CHANGED, "was cut short while its header was read (%jd bytes when opened)",
			       (intmax_t)st->st_size);
	return wf_fail(err, WF_ERR_CHANGED, "changed while its header was read");
}

enum wf_err wf_open_file(struct wf_model **out, const char *path, char *err)
{
	return wf_open_file_at(out, path, false, err);
}

/* A staged remote file (net/wf_source.h): parsed from its remote memory,
 * each chunk the parser touches fetched then.  A fetch that fails while
 * the header is read is a SIGBUS in the window: refused, never zeros. */
static enum wf_err open_remote(struct wf_model **out, const char *path, struct wf_robj *ro, char *err)
{
	const uint8_t *buf = wf_robj_data(ro, err);
	if (!buf)
		return WF_ERR_IO;
	uint64_t len = wf_robj_size(ro);
	if (wf_bus_catch() != 0)
		return wf_fail(err, WF_ERR_IO, "cannot install the SIGBUS handler: %s", strerror(errno));
	struct wf_model *m;
	wf_bus_window(buf, (size_t)len);
	enum wf_err rc = wf_open_parse(&m, buf, len, path, err);
	bool hit = wf_bus_window_end();
	if (hit) {
		wf_model_free(m);
		return wf_fail(err, WF_ERR_IO, "could not be fetched while its header was read (%s)", wf_robj_url(ro));
	}
	if (rc != WF_OK)
		return rc;
	struct wf_part *p = &m->parts[0];
	const char *base = strrchr(path, '/');
	p->name = strdup(base ? base + 1 : path);
	p->path = realpath(path, NULL);
	if (!p->name || !p->path || stat(path, &p->st) != 0) {
		wf_model_free(m);
		return wf_fail(err, WF_ERR_NOMEM, "out of memory");
	}
	p->remote = ro;
	*out = m;
	return WF_OK;
}

enum wf_err wf_open_file_at(struct wf_model **out, const char *path, bool canonical, char *err)
{
	*out = NULL;
	struct wf_robj *ro;
	enum wf_err rrc = wf_source_open(path, &ro, err);
	if (rrc != WF_OK)
		return rrc;
	if (ro)
		return open_remote(out, path, ro, err);
	int fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return wf_fail(err, WF_ERR_IO, "cannot open: %s", strerror(errno));
	struct stat st;
	if (fstat(fd, &st) != 0) {
		int e = errno;
		close(fd);
		return wf_fail(err, WF_ERR_IO, "cannot stat: %s", strerror(e));
	}
	if (!S_ISREG(st.st_mode)) {
		close(fd);
		return wf_fail(err, WF_ERR_IO, "not a regular file");
	}
	void *map = NULL;
	/* before mapping: a fault must never find no handler */
	if (st.st_size > 0 && wf_bus_catch() != 0) {
		int e = errno;
		close(fd);
		return wf_fail(err, WF_ERR_IO, "cannot install the SIGBUS handler: %s", strerror(e));
	}
	if (st.st_size > 0) {
		map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_SHARED, fd, 0);
		if (map == MAP_FAILED) {
			int e = errno;
			close(fd);
			return wf_fail(err, WF_ERR_IO, "cannot map: %s", strerror(e));
		}
	}
	static const uint8_t empty[1];
	const uint8_t *buf = map ? map : empty;
	struct wf_model *m;
	enum wf_err rc = parse_guarded(&m, fd, &st, buf, path, err);
	if (rc != WF_OK) {
		if (map)
			munmap(map, (size_t)st.st_size);
		close(fd);
		return rc;
	}
	struct wf_part *p = &m->parts[0];
	const char *base = strrchr(path, '/');
	p->name = strdup(base ? base + 1 : path);
	p->path = canonical ? strdup(path) : realpath(path, NULL);
	if (!p->name || !p->path) {
		int e = errno;
		if (map)
			munmap(map, (size_t)st.st_size);
		close(fd);
		wf_model_free(m);
		return e == ENOMEM ? wf_fail(err, WF_ERR_NOMEM, "out of memory")
				   : wf_fail(err, WF_ERR_IO, "cannot resolve its path: %s", strerror(e));
	}
	p->fd = fd;
	p->st = st;
	p->map = map;
	*out = m;
	return WF_OK;
}
