/* fuzz_hfq.c - libFuzzer target: a model folder as the mount opens it,
 * with its config.json, quantize_config.json, safetensors index and
 * shards, split GGUF parts: the set loader (src/model/wf_set*.c,
 * wf_open.c) and the quantized-safetensors layer (src/view/wf_hfq*.c:
 * GPTQ, AWQ, FP8, MLX, bitsandbytes 4- and 8-bit) on attacker-made JSON
 * and tensor shapes; with a config.json of an architecture model.gguf is
 * made for, its plan (src/arch/wf_arch.c: experts stacked, the key/values)
 * and model.gguf read at its start and end, as every other file.
 *
 * Input layout (little-endian; missing bytes read as 0):
 *   [0]      flags: bits 0-1 the dtype (f32, f16, bf16, stored);
 *            bits 2-4 what is opened: 0 the folder, 1 model.safetensors,
 *            2 model.safetensors.index.json, 3 the first safetensors
 *            shard, 4 the first GGUF part, 5 the second safetensors
 *            shard, 6-7 the folder; bit 5 -o npy, bit 6 -o suffix
 *   then     records until the end of the input, each
 *              [1]   file id (mod 9), naming one of names[] below
 *              [2]   u16 length (cut to what is left of the input)
 *              [len] the file's bytes
 *            a later record for the same file replaces the earlier one
 *
 * Per input the files are written into a private folder on /dev/shm
 * (made once per process, emptied per input) and opened with
 * wf_mount_open, the mount's and the commands' one entry.  A refusal
 * must be one non-empty line.  A model that opens must keep the tree's
 * promises (fuzz_check_tree) and serve every tensor through the guarded
 * read (wf_live_read_view, as the mount does): n_out = min(len, size -
 * off), nothing written past n_out, every range equal to the same slice
 * of a larger read, and a decoded layer's values equal to its scheme's
 * scalar decoder (so the SIMD twins are held to it; a NaN may differ in
 * payload).  Every other file of the tree (model.safetensors, the JSON
 * files, sidecars) is read at its start and end through wf_files_read.
 * No descriptor may be left open once the model is closed.
 */
#include "fuzz_common.h"

#include "codec/wf_round.h"
#include "mount/wf_files.h"
#include "mount/wf_mount.h"
#include "view/wf_hfq.h"
#include "view/wf_live.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define N_NAMES 9
static const char *const names[N_NAMES] = {
	"config.json",
	"model.safetensors",
	"quantize_config.json",
	"model.safetensors.index.json",
	"model-00001-of-00002.safetensors",
	"model-00002-of-00002.safetensors",
	"m-00001-of-00002.gguf",
	"m-00002-of-00002.gguf",
	"tokenizer.json",
};

/* what bits 2-4 of the flags open: an index into names[], or -1 the folder */
static const int opens[8] = {-1, 1, 3, 4, 6, 5, -1, -1};

/* Most view bytes of one tensor read per input: enough for 8 whole rows
 * of a layer 512 inputs wide, so the 8-row decoders run too. */
#define HFQ_CAP (16u << 10)
/* Most other files read per input. */
#define MAX_FILES 64

static char dir[64];

/* The lowest free descriptor: the same before and after an input, or the
 * library left one open.  (Measured per input: libFuzzer itself opens
 * pipes to a symbolizer now and then.) */
static int free_fd(void)
{
	int fd = dup(0);
	FUZZ_CHECK(fd >= 0, "dup");
	close(fd);
	return fd;
}

static void put_file(const char *name, const uint8_t *p, size_t n)
{
	char path[128];
	snprintf(path, sizeof path, "%s/%s", dir, name);
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	FUZZ_CHECK(fd >= 0, "create %s", path);
	FUZZ_CHECK(n == 0 || write(fd, p, n) == (ssize_t)n, "write %s", path);
	close(fd);
}

static bool is_nan(enum wf_vk vk, uint32_t x)
{
	if (vk == WF_VK_F32)
		return (x & 0x7F800000u) == 0x7F800000u && (x & 0x7FFFFFu);
	if (vk == WF_VK_F16)
		return (x & 0x7C00u) == 0x7C00u && (x & 0x3FFu);
	return (x & 0x7F80u) == 0x7F80u && (x & 0x7Fu);
}

/* Whether views a and b (es-byte floats of view kind vk, both starting at
 * view byte off, which may cut a float) agree but for NaN payloads: which
 * NaN an operation on two NaNs gives is up to the compiler's operand
 * order (docs/types.md), and the SIMD twins and the scalar edges differ
 * there.  A float cut by the range is classified by the whole view
 * (whole[0..whole_n), or NULL: then it must agree bytewise). */
static bool same_floats(enum wf_vk vk, const uint8_t *a, const uint8_t *b, size_t n, uint64_t off,
			const uint8_t *whole, size_t whole_n)
{
	if (memcmp(a, b, n) == 0)
		return true;
	unsigned es = vk == WF_VK_F32 ? 4 : 2;
	for (size_t i = 0; i < n; i++) {
		if (a[i] == b[i])
			continue;
		uint64_t pos = off + i, f0 = pos - pos % es;
		uint32_t x = 0, y = 0;
		if (f0 < off || f0 + es > off + n) {
			/* cut: the whole view says whether it is a NaN */
			if (!whole || f0 + es > whole_n)
				return false;
			memcpy(&y, whole + f0, es);
			if (!is_nan(vk, y))
				return false;
			continue;
		}
		memcpy(&x, a + (f0 - off), es);
		memcpy(&y, b + (f0 - off), es);
		if (!is_nan(vk, x) || !is_nan(vk, y))
			return false;
	}
	return true;
}

/* a and b = whole + off (whole: the view's first whole_n bytes) */
static bool same_view(const struct wf_tensor *t, const uint8_t *a, const uint8_t *b, size_t n, uint64_t off,
		      const uint8_t *whole, size_t whole_n)
{
	if (t->vk == WF_VK_RAW && !t->q)
		return fuzz_same_view(wf_type_get(t->type), a, b, n, off, whole);
	return same_floats((enum wf_vk)t->vk, a, b, n, off, whole, whole_n);
}

/* Reads [off, off+len) of t's view into a buffer of len bytes (+1 when
 * odd, to write at an odd address) filled with a canary; checks the count
 * and that nothing past it changed.  Returns the bytes (caller frees). */
static uint8_t *read_view(struct wf_live *lv, const struct wf_tensor *t, uint64_t off, size_t len, bool odd,
			  size_t *got)
{
	size_t expect = off >= t->size ? 0 : (len < t->size - off ? len : (size_t)(t->size - off));
	uint8_t *raw = malloc(len + 1);
	FUZZ_CHECK(raw != NULL, "malloc");
	memset(raw, 0xA5, len + 1);
	uint8_t *out = raw + (odd ? 1 : 0);
	enum wf_err rc = wf_live_read_view(lv, t, off, len, out, got);
	FUZZ_CHECK(rc == WF_OK, "read of '%s' [%llu, +%zu) of %llu bytes failed: %d", t->name,
		   (unsigned long long)off, len, (unsigned long long)t->size, (int)rc);
	FUZZ_CHECK(*got == expect, "read of '%s' [%llu, +%zu) of %llu bytes: %zu bytes, expected %zu", t->name,
		   (unsigned long long)off, len, (unsigned long long)t->size, *got, expect);
	for (size_t i = *got; i < len; i++)
		FUZZ_CHECK(out[i] == 0xA5, "read of '%s' [%llu, +%zu) wrote byte %zu past its %zu", t->name,
			   (unsigned long long)off, len, i, *got);
	if (odd)
		memmove(raw, out, *got);
	return raw;
}

/* A copy of decoded layer t whose parts are heap copies of exactly
 * their bytes: a decoder that reads past a part (into the next tensor of
 * the file, or past its end inside the mapping's last page, which no
 * sanitizer sees) reads past a heap block there, which ASan reports. */
struct heap_layer {
	struct wf_hfq q;
	struct wf_tensor t;
	void *own[WF_HFQ_MAX_PARTS];
};

static void heap_layer_make(struct heap_layer *h, const struct wf_tensor *t)
{
	h->q = *t->q;
	h->t = *t;
	h->t.q = &h->q;
	for (int k = 0; k < WF_HFQ_MAX_PARTS; k++) {
		struct wf_hfq_part *p = &h->q.part[k];
		h->own[k] = NULL;
		if (!p->p)
			continue;
		h->own[k] = malloc(p->nbytes ? (size_t)p->nbytes : 1);
		FUZZ_CHECK(h->own[k], "malloc");
		memcpy(h->own[k], p->p, (size_t)p->nbytes);
		p->p = h->own[k];
	}
}

static void heap_layer_free(struct heap_layer *h)
{
	for (int k = 0; k < WF_HFQ_MAX_PARTS; k++)
		free(h->own[k]);
}

/* The first `n` view bytes of decoded layer h, made by its scheme's
 * scalar decoder row by row, as its view dtype. */
static void reference(const struct heap_layer *h, uint8_t *ref, size_t n)
{
	const struct wf_hfq *q = &h->q;
	const struct wf_hfq_scheme *sc = wf_hfq_scheme(q->scheme);
	unsigned es = h->t.vk == WF_VK_F32 ? 4 : 2;
	size_t elems = (n + es - 1) / es;
	float *f = malloc(elems * sizeof *f + 4);
	uint16_t *hb = malloc(elems * sizeof *hb + 2);
	FUZZ_CHECK(f && hb, "malloc");
	for (size_t e = 0; e < elems;) {
		uint64_t row = e / q->in, col = e % q->in;
		size_t k = q->in - col < elems - e ? (size_t)(q->in - col) : elems - e;
		sc->decode(q, row, col, k, f + e);
		e += k;
	}
	if (h->t.vk == WF_VK_F32) {
		memcpy(ref, f, n);
	} else {
		if (h->t.vk == WF_VK_F16)
			wf_f32_to_f16_n(f, hb, elems);
		else
			wf_f32_to_bf16_n(f, hb, elems);
		memcpy(ref, hb, n);
	}
	free(f);
	free(hb);
}

/* The same range of the heap copy, through wf_hfq_view_read (the SIMD
 * twins and the tiled rows included), equal to what the mount read. */
static void heap_read(const struct heap_layer *h, uint64_t off, size_t len, const uint8_t *want, size_t want_n,
		      const uint8_t *whole, size_t whole_n)
{
	uint8_t *buf = malloc(len ? len : 1);
	FUZZ_CHECK(buf, "malloc");
	size_t n;
	FUZZ_CHECK(wf_hfq_view_read(&h->t, off, len, buf, &n) == WF_OK && n == want_n,
		   "layer '%s': heap read [%llu, +%zu) gave %zu bytes, not %zu", h->t.name,
		   (unsigned long long)off, len, n, want_n);
	FUZZ_CHECK(same_floats((enum wf_vk)h->t.vk, buf, want, n, off, whole, whole_n),
		   "layer '%s': read [%llu, +%zu) differs between the mapping and a heap copy", h->t.name,
		   (unsigned long long)off, len);
	free(buf);
}

static void read_tensor(struct wf_live *lv, const struct wf_tensor *t, uint64_t seed)
{
	size_t whole_len = t->size < HFQ_CAP ? (size_t)t->size : HFQ_CAP, whole_n;
	uint8_t *whole = read_view(lv, t, 0, whole_len ? whole_len : 1, false, &whole_n);
	struct heap_layer h;
	if (t->q)
		heap_layer_make(&h, t);
	if (t->q && whole_n) {
		FUZZ_CHECK(t->q->out && t->q->in && t->nelems / t->q->out == t->q->in, "layer '%s' shape", t->name);
		uint8_t *ref = malloc(whole_n);
		FUZZ_CHECK(ref, "malloc");
		reference(&h, ref, whole_n);
		FUZZ_CHECK(same_floats((enum wf_vk)t->vk, whole, ref, whole_n, 0, NULL, 0),
			   "layer '%s' (%s): read differs from the scalar decoder", t->name,
			   wf_hfq_scheme(t->q->scheme)->name);
		free(ref);
		heap_read(&h, 0, whole_n, whole, whole_n, NULL, 0);
	}
	uint64_t s = seed ^ t->size;
	uint64_t row = t->q ? t->q->in * (t->vk == WF_VK_F32 ? 4 : 2) : 0;
	for (int k = 0; k < 8; k++) {
		uint64_t r = fuzz_rng(&s), off;
		size_t len;
		switch (k) {
		case 0: off = 0; len = 1; break;
		case 1: off = t->size ? t->size - 1 : 0; len = 9; break;
		case 2: off = t->size; len = 4; break;
		case 3: off = UINT64_MAX - (r & 7); len = 8; break;
		case 4: /* whole rows from a row start: the tiled decoders */
			off = row && whole_n > row ? row * (r % (whole_n / row)) : 0;
			len = row ? (size_t)(row * ((r >> 32) % 9 + 1)) : 64;
			break;
		default:
			off = whole_n ? r % whole_n : 0;
			len = (size_t)((r >> 40) % 1200) + 1;
			break;
		}
		if (len > HFQ_CAP)
			len = HFQ_CAP;
		size_t n;
		uint8_t *part = read_view(lv, t, off, len, (r >> 20) & 1, &n);
		if (off + n <= whole_n)
			FUZZ_CHECK(same_view(t, part, whole + off, n, off, whole, whole_n),
				   "read of '%s' [%llu, +%zu) differs from the same bytes of a larger read", t->name,
				   (unsigned long long)off, len);
		if (t->q)
			heap_read(&h, off, len, part, n, whole, whole_n);
		free(part);
	}
	if (t->q)
		heap_layer_free(&h);
	free(whole);
}

/* Start and end of every file but the tensors (read above) and the
 * pictures (not asked for). */
static void read_files(const struct wf_tree *tr, struct wf_live *lv)
{
	unsigned done = 0;
	for (uint32_t i = 0; i < tr->n_nodes && done < MAX_FILES; i++) {
		enum wf_node_kind kind = tr->nodes[i].kind;
		if (kind != WF_NODE_BLOB && kind != WF_NODE_MODEL_ST)
			continue;
		done++;
		uint64_t size = wf_files_size(tr, i);
		uint64_t offs[2] = {0, size > 700 ? size - 700 : 0};
		for (int k = 0; k < 2; k++) {
			size_t len = 1024, got;
			size_t expect = offs[k] >= size ? 0 : (len < size - offs[k] ? len : (size_t)(size - offs[k]));
			uint8_t *buf = malloc(len);
			FUZZ_CHECK(buf, "malloc");
			memset(buf, 0xA5, len);
			enum wf_err rc = wf_files_read(tr, lv, i, offs[k], len, buf, &got);
			FUZZ_CHECK(rc == WF_OK && got == expect, "file '%s' [%llu, +%zu) of %llu: rc %d, %zu bytes",
				   tr->nodes[i].name, (unsigned long long)offs[k], len, (unsigned long long)size, (int)rc,
				   got);
			for (size_t j = got; j < len; j++)
				FUZZ_CHECK(buf[j] == 0xA5, "file '%s': byte %zu written past %zu", tr->nodes[i].name, j, got);
			free(buf);
		}
	}
}

static void check_refusal(enum wf_err rc, const char *err)
{
	FUZZ_CHECK(rc != WF_OK, "refused with WF_OK");
	fuzz_check_one_line(rc, err);
}

static void empty_dir(void)
{
	for (int i = 0; i < N_NAMES; i++) {
		char path[128];
		snprintf(path, sizeof path, "%s/%s", dir, names[i]);
		unlink(path);
	}
}

/* at a normal exit (the end of a timed run); a crash leaves the folder
 * with the input's files, which can help */
static void remove_dir(void)
{
	empty_dir();
	rmdir(dir);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!dir[0]) {
		snprintf(dir, sizeof dir, "/dev/shm/wf-fuzz-hfq-%ld", (long)getpid());
		FUZZ_CHECK(mkdir(dir, 0700) == 0 || errno == EEXIST, "mkdir %s", dir);
		atexit(remove_dir);
	}
	empty_dir();
	unsigned flags = size ? data[0] : 0;
	for (size_t pos = 1; pos + 3 <= size;) {
		unsigned id = data[pos] % N_NAMES;
		size_t len = (size_t)data[pos + 1] | (size_t)data[pos + 2] << 8;
		pos += 3;
		if (len > size - pos)
			len = size - pos;
		put_file(names[id], data + pos, len);
		pos += len;
	}
	static const enum wf_vk dts[4] = {WF_VK_F32, WF_VK_F16, WF_VK_BF16, WF_VK_RAW};
	char path[128];
	int which = opens[(flags >> 2) & 7];
	snprintf(path, sizeof path, "%s%s%s", dir, which < 0 ? "" : "/", which < 0 ? "" : names[which]);
	struct wf_tree_opts opts = {.npy = flags & 32, .suffix = flags & 64};
	int fd_before = free_fd();
	struct wf_mount mt;
	char err[WF_ERRLEN];
	memset(err, 0, sizeof err);
	enum wf_err rc = wf_mount_open(&mt, path, dts[flags & 3], &opts, err);
	static int verbose = -1;
	if (verbose < 0)
		verbose = getenv("FUZZ_HFQ_VERBOSE") != NULL;
	if (verbose && rc == WF_OK)
		fprintf(stderr, "opened: %zu tensors, %zu decoded layers\n", mt.m->n_tensors, mt.m->n_hfq);
	else if (verbose)
		fprintf(stderr, "refused: %s\n", err);
	if (rc != WF_OK) {
		check_refusal(rc, err);
	} else {
		fuzz_check_tree(mt.m, mt.t);
		struct wf_live lv;
		FUZZ_CHECK(wf_live_init(&lv, mt.m, wf_files_seg, mt.t, NULL, NULL) == WF_OK, "live");
		uint64_t seed = fuzz_seed(data, size);
		for (size_t i = 0; i < mt.m->n_tensors; i++)
			read_tensor(&lv, &mt.m->tensors[i], seed + i);
		read_files(mt.t, &lv);
		wf_live_free(&lv);
		wf_mount_close(&mt);
	}
	int fd_after = free_fd();
	FUZZ_CHECK(fd_after == fd_before, "descriptor %d left open", fd_before);
	return 0;
}
