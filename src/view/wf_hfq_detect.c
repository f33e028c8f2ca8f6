/* wf_hfq_detect.c - finding a model's quantized layers and putting one
 * decoded tensor in place of each layer's parts (wf_hfq_apply, wf_hfq.h).
 *
 * The scheme comes from the model's own config (config.json
 * `quantization_config`, or GPTQ's quantize_config.json), shown as a
 * sidecar or lying beside a single-file model:
 *   quant_method "fp8" (DeepSeek-V3 README_WEIGHTS.md): fmt "e4m3",
 *     weight_block_size [bh, bw]; parts PREFIX.weight (F8_E4M3 [out, in])
 *     and PREFIX.weight_scale_inv ([ceil(out/bh), ceil(in/bw)]).
 *   quant_method "compressed-tensors", format "float-quantized"
 *     (compressed-tensors quant_config.py / quant_scheme.py): 8-bit float
 *     weights with strategy tensor, channel or block; parts PREFIX.weight
 *     and PREFIX.weight_scale.
 *   quant_method "gptq", checkpoint_format "gptq" or absent (AutoGPTQ
 *     BaseQuantizeConfig): bits, group_size; parts PREFIX.qweight, qzeros,
 *     scales and g_idx (optional).
 *   quant_method "awq", version "gemm", bits 4, zero_point true (AutoAWQ
 *     AwqConfig): parts PREFIX.qweight, qzeros, scales.
 *   MLX: config.json `quantization` {"group_size", "bits", "mode":
 *     "affine" or absent}, with per-module overrides keyed by the module's
 *     path (mlx-lm utils.py load_model); a module is quantized iff
 *     PATH.scales exists; parts PATH.weight, scales, biases.
 *   bitsandbytes 4-bit (quant_method "bitsandbytes", or with no config):
 *     each weight's own W.quant_state.bitsandbytes__nf4 (or __fp4) tensor,
 *     UTF-8 JSON (bitsandbytes functional.py QuantState.as_dict), gives
 *     quant_type, blocksize, shape and the nested parameters; parts W,
 *     W.absmax, W.quant_map, W.nested_absmax, W.nested_quant_map.
 *   bitsandbytes 8-bit (quant_method "bitsandbytes" with load_in_8bit, or
 *     with no quantization config at all): each PREFIX.SCB (float32 [out],
 *     bitsandbytes nn/modules.py Linear8bitLt._save_to_state_dict) makes
 *     a layer of PREFIX.weight (int8 [out, in]), SCB and the optional
 *     PREFIX.weight_format (wf_hfq_bnb8.c).
 *   quant_method "mxfp4" (transformers integrations/mxfp4.py, gpt-oss):
 *     each X_blocks (uint8 [E, R, G, 16]) with its X_scales (uint8
 *     [E, R, G]) makes a layer X, shown as transformers dequantizes it:
 *     float32 [E, 32 G, R] (wf_hfq_mxfp4.c).
 * Other methods are not decoded: their models mount as before, every part
 * shown as stored.
 */
#include "view/wf_hfq.h"
#include "base/wf_buf.h"
#include "codec/wf_types.h"
#include "model/wf_maps.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* A config beside a single file is read only up to this size. */
#define CONFIG_MAX (16u << 20)

/* What the config says, for every layer of the model. */
struct plan {
	int scheme;           /* enum wf_hfq_scheme_id */
	const char *source;   /* quant_method */
	const char *scale;    /* FP8: suffix of the scale part: "weight_scale_inv", "weight_scale" */
	int strategy;         /* FP8: 'b' block, 't' tensor, 'c' channel */
	uint64_t bh, bw;      /* FP8 blocks */
	uint32_t bits, group; /* GPTQ; group 0 = the config said -1 (one group) */
	const cJSON *mlx;     /* MLX: the `quantization` object, for per-module overrides */
};

/* ------------------------------------------------------------ config */

/* The text of file `name` of the model: a sidecar, else the file beside
 * the model's first part.  NULL (and *own = NULL) when there is none. */
static const char *config_text(const struct wf_model *m, const char *name, size_t *len, char **own)
{
	*own = NULL;
	for (size_t i = 0; i < m->n_sidecars; i++)
		if (strcmp(m->sidecars[i].name, name) == 0) {
			*len = (size_t)m->sidecars[i].len;
			return m->sidecars[i].data;
		}
	if (m->n_sidecars || m->n_parts == 0 || !m->parts[0].path)
		return NULL; /* a folder shows its config as a sidecar, or has none */
	const char *path = m->parts[0].path, *slash = strrchr(path, '/');
	size_t dl = slash ? (size_t)(slash - path) + 1 : 0;
	char *p = malloc(dl + strlen(name) + 1);
	if (!p)
		return NULL;
	memcpy(p, path, dl);
	strcpy(p + dl, name);
	/* never wait on a FIFO or a device: a regular file or nothing */
	int fd = open(p, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	free(p);
	struct stat st;
	if (fd < 0)
		return NULL;
	if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > CONFIG_MAX || !(*own = malloc((size_t)st.st_size + 1))) {
		close(fd);
		return NULL;
	}
	ssize_t got = read(fd, *own, (size_t)st.st_size);
	close(fd);
	if (got != st.st_size) {
		free(*own);
		*own = NULL;
		return NULL;
	}
	*len = (size_t)got;
	return *own;
}

static cJSON *config_json(const struct wf_model *m, const char *name)
{
	size_t len = 0;
	char *own;
	const char *text = config_text(m, name, &len, &own);
	cJSON *j = text ? cJSON_ParseWithLength(text, len) : NULL;
	free(own);
	if (j && !cJSON_IsObject(j)) {
		cJSON_Delete(j);
		j = NULL;
	}
	return j;
}

static const char *jstr(const cJSON *o, const char *key)
{
	const cJSON *v = cJSON_GetObjectItemCaseSensitive(o, key);
	return cJSON_IsString(v) ? v->valuestring : NULL;
}

/* An integer-valued number of o[key] in [lo, hi] into *v; false if absent or not one. */
static bool jint(const cJSON *o, const char *key, double lo, double hi, double *v)
{
	const cJSON *x = cJSON_GetObjectItemCaseSensitive(o, key);
	if (!cJSON_IsNumber(x) || x->valuedouble != (double)(long long)x->valuedouble || x->valuedouble < lo ||
	    x->valuedouble > hi)
		return false;
	*v = x->valuedouble;
	return true;
}

/* A string of the config as a message shows it: quoted, control bytes
 * escaped, so that a refusal stays one line whatever the config holds. */
static const char *qs(char *buf, size_t n, const char *s)
{
	return wf_quote(buf, n, s, strlen(s));
}

static enum wf_err plan_fp8(const cJSON *qc, struct plan *pl, char *err)
{
	const char *fmt = jstr(qc, "fmt");
	char q[96];
	if (fmt && strcmp(fmt, "e4m3") != 0)
		return wf_fail(err, WF_ERR_UNSUP, "config.json: quantization_config fmt %s (weightfs decodes e4m3)",
			       qs(q, sizeof q, fmt));
	const cJSON *bs = cJSON_GetObjectItemCaseSensitive(qc, "weight_block_size");
	const cJSON *b0 = cJSON_GetArrayItem(bs, 0), *b1 = cJSON_GetArrayItem(bs, 1);
	if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2 || !cJSON_IsNumber(b0) || !cJSON_IsNumber(b1) ||
	    b0->valuedouble < 1 || b1->valuedouble < 1 || b0->valuedouble > 1e9 || b1->valuedouble > 1e9 ||
	    b0->valuedouble != (double)(long long)b0->valuedouble || b1->valuedouble != (double)(long long)b1->valuedouble)
		return wf_fail(err, WF_ERR_UNSUP,
			       "config.json: quant_method fp8 without a weight_block_size of two positive integers");
	*pl = (struct plan){.scheme = WF_HFQ_FP8, .source = "fp8", .scale = "weight_scale_inv", .strategy = 'b',
			    .bh = (uint64_t)b0->valuedouble, .bw = (uint64_t)b1->valuedouble};
	return WF_OK;
}

/* compressed-tensors' block_structure: [bh, bw], or the "BHxBW" string its
 * QuantizationArgs validator also takes (quant_args.py); each in [1, 1e9]. */
static bool block_pair(const cJSON *bs, uint64_t *bh, uint64_t *bw)
{
	double v[2];
	if (cJSON_IsString(bs)) {
		unsigned long long a, b;
		int end = 0;
		if (sscanf(bs->valuestring, "%llu x %llu%n", &a, &b, &end) != 2 || bs->valuestring[end] != '\0' ||
		    !strchr(bs->valuestring, 'x') || strchr(bs->valuestring, '-'))
			return false;
		v[0] = (double)a;
		v[1] = (double)b;
	} else {
		if (!cJSON_IsArray(bs) || cJSON_GetArraySize(bs) != 2)
			return false;
		for (int k = 0; k < 2; k++) {
			const cJSON *x = cJSON_GetArrayItem(bs, k);
			if (!cJSON_IsNumber(x) || x->valuedouble != (double)(long long)x->valuedouble)
				return false;
			v[k] = x->valuedouble;
		}
	}
	if (v[0] < 1 || v[1] < 1 || v[0] > 1e9 || v[1] > 1e9)
		return false;
	*bh = (uint64_t)v[0];
	*bw = (uint64_t)v[1];
	return true;
}

/* compressed-tensors: every config group's weights must be the same 8-bit
 * float scheme (the layers do not say which group they belong to). */
static enum wf_err plan_ct(const cJSON *qc, struct plan *pl, char *err)
{
	const char *fmt = jstr(qc, "format");
	char q[96];
	if (!fmt || strcmp(fmt, "float-quantized") != 0)
		return wf_fail(err, WF_ERR_UNSUP, "config.json: compressed-tensors format %s (weightfs decodes "
			       "float-quantized)", qs(q, sizeof q, fmt ? fmt : ""));
	const cJSON *groups = cJSON_GetObjectItemCaseSensitive(qc, "config_groups"), *g;
	*pl = (struct plan){.scheme = WF_HFQ_FP8, .source = "compressed-tensors", .scale = "weight_scale"};
	cJSON_ArrayForEach(g, groups) {
		const cJSON *w = cJSON_GetObjectItemCaseSensitive(g, "weights");
		const char *type = jstr(w, "type"), *strat = jstr(w, "strategy");
		double nb;
		int s = !strat ? 0 : !strcmp(strat, "tensor") ? 't' : !strcmp(strat, "channel") ? 'c'
								  : !strcmp(strat, "block") ? 'b' : 0;
		if (!jint(w, "num_bits", 8, 8, &nb) || !type || strcmp(type, "float") != 0 || !s)
			return wf_fail(err, WF_ERR_UNSUP, "config.json: compressed-tensors group %s: weights other than "
				       "8-bit float per tensor, channel or block", qs(q, sizeof q, g->string ? g->string : "?"));
		uint64_t bh = 0, bw = 0;
		if (s == 'b') {
			if (!block_pair(cJSON_GetObjectItemCaseSensitive(w, "block_structure"), &bh, &bw))
				return wf_fail(err, WF_ERR_UNSUP, "config.json: compressed-tensors group %s: block "
					       "strategy without a block_structure of two positive integers",
					       qs(q, sizeof q, g->string ? g->string : "?"));
		}
		if (pl->strategy && (pl->strategy != s || pl->bh != bh || pl->bw != bw))
			return wf_fail(err, WF_ERR_UNSUP, "config.json: compressed-tensors groups with different schemes");
		pl->strategy = s;
		pl->bh = bh;
		pl->bw = bw;
	}
	if (!pl->strategy)
		return wf_fail(err, WF_ERR_UNSUP, "config.json: compressed-tensors without config_groups");
	return WF_OK;
}

static enum wf_err plan_gptq(const cJSON *qc, struct plan *pl, char *err)
{
	const char *cf = jstr(qc, "checkpoint_format");
	const cJSON *marlin = cJSON_GetObjectItemCaseSensitive(qc, "is_marlin_format");
	char q[96];
	if ((cf && strcmp(cf, "gptq") != 0) || cJSON_IsTrue(marlin))
		return wf_fail(err, WF_ERR_UNSUP, "GPTQ checkpoint_format %s (weightfs decodes gptq v1)",
			       qs(q, sizeof q, cf ? cf : "marlin"));
	double bits, group;
	if (!jint(qc, "bits", 0, 64, &bits))
		return wf_fail(err, WF_ERR_FORMAT, "GPTQ config without bits");
	if (!jint(qc, "group_size", -1, 1 << 30, &group) || group == 0)
		return wf_fail(err, WF_ERR_FORMAT, "GPTQ config without a group_size (-1 or positive)");
	*pl = (struct plan){.scheme = WF_HFQ_GPTQ, .source = "gptq", .bits = (uint32_t)bits,
			    .group = group < 0 ? 0 : (uint32_t)group};
	if (pl->bits != 2 && pl->bits != 3 && pl->bits != 4 && pl->bits != 8)
		return wf_fail(err, WF_ERR_UNSUP, "GPTQ with %u bits (weightfs decodes 2, 3, 4 and 8)", pl->bits);
	return WF_OK;
}

static enum wf_err plan_awq(const cJSON *qc, struct plan *pl, char *err)
{
	const char *ver = jstr(qc, "version");
	double bits, group;
	char q[96];
	if (!ver || strcasecmp(ver, "gemm") != 0)
		return wf_fail(err, WF_ERR_UNSUP, "AWQ version %s (weightfs decodes gemm)", qs(q, sizeof q, ver ? ver : ""));
	if (cJSON_IsFalse(cJSON_GetObjectItemCaseSensitive(qc, "zero_point")))
		return wf_fail(err, WF_ERR_UNSUP, "AWQ without zero points (weightfs decodes zero_point true)");
	if (!jint(qc, "bits", 0, 64, &bits) || !jint(qc, "group_size", 1, 1 << 30, &group))
		return wf_fail(err, WF_ERR_FORMAT, "AWQ config without bits or a positive group_size");
	if (bits != 4)
		return wf_fail(err, WF_ERR_UNSUP, "AWQ with %g bits (weightfs decodes 4)", bits);
	*pl = (struct plan){.scheme = WF_HFQ_AWQ, .source = "awq", .bits = 4, .group = (uint32_t)group};
	return WF_OK;
}

/* MLX's bits and group size from object o (the defaults, or an override). */
static enum wf_err mlx_params(const cJSON *o, uint32_t *bits, uint32_t *group, const char *who, char *err)
{
	double b, g;
	const char *mode = jstr(o, "mode");
	char q[96];
	if (mode && strcmp(mode, "affine") != 0)
		return wf_fail(err, WF_ERR_UNSUP, "%s: MLX mode %s (weightfs decodes affine)", who, qs(q, sizeof q, mode));
	if (!jint(o, "bits", 1, 64, &b) || !jint(o, "group_size", 1, 1 << 30, &g))
		return wf_fail(err, WF_ERR_FORMAT, "%s: MLX quantization without bits and group_size", who);
	*bits = (uint32_t)b;
	*group = (uint32_t)g;
	return WF_OK;
}

/* Reads the plan from the model's config; *found = false when it says of
 * no scheme weightfs decodes (the model is then left as it is).  *cfgp
 * keeps the config (MLX's overrides point into it): free with cJSON_Delete. */
static enum wf_err read_plan(const struct wf_model *m, struct plan *pl, bool *found, cJSON **cfgp, char *err)
{
	*found = false;
	cJSON *cfg = *cfgp = config_json(m, "config.json");
	cJSON *qc = cJSON_GetObjectItemCaseSensitive(cfg, "quantization_config");
	cJSON *mq = cJSON_GetObjectItemCaseSensitive(cfg, "quantization");
	if (cJSON_IsObject(mq) && !jstr(qc, "quant_method")) {
		/* mlx-lm writes `quantization` (and a copy as quantization_config) */
		*pl = (struct plan){.scheme = WF_HFQ_MLX, .source = "mlx", .mlx = mq};
		*found = true;
		return mlx_params(mq, &pl->bits, &pl->group, "config.json", err);
	}
	cJSON *own = NULL;
	if (!cJSON_IsObject(qc))
		qc = own = config_json(m, "quantize_config.json"); /* older GPTQ models */
	const char *method = jstr(qc, "quant_method");
	if (!method && own && cJSON_GetObjectItemCaseSensitive(qc, "bits"))
		method = "gptq"; /* quantize_config.json predates quant_method */
	enum wf_err rc = WF_OK;
	if (method && strcmp(method, "fp8") == 0)
		rc = plan_fp8(qc, pl, err), *found = true;
	else if (method && strcmp(method, "compressed-tensors") == 0)
		rc = plan_ct(qc, pl, err), *found = true;
	else if (method && strcmp(method, "gptq") == 0)
		rc = plan_gptq(qc, pl, err), *found = true;
	else if (method && strcmp(method, "awq") == 0)
		rc = plan_awq(qc, pl, err), *found = true;
	else if (method && strcmp(method, "mxfp4") == 0)
		*pl = (struct plan){.scheme = WF_HFQ_MXFP4, .source = "mxfp4"}, *found = true;
	else if (method && strcmp(method, "bitsandbytes") == 0 &&
		 cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(qc, "load_in_4bit")))
		*pl = (struct plan){.scheme = WF_HFQ_BNB, .source = "bitsandbytes"}, *found = true;
	else if (method && strcmp(method, "bitsandbytes") == 0 &&
		 (cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(qc, "load_in_8bit")) ||
		  cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(qc, "_load_in_8bit"))))
		*pl = (struct plan){.scheme = WF_HFQ_BNB8, .source = "bitsandbytes"}, *found = true;
	cJSON_Delete(own);
	return rc;
}

/* ------------------------------------------------------------ names */

/* Tensor indices sorted by name, to find a layer's parts. */
struct names {
	const struct wf_model *m;
	uint32_t *idx;
};

static int name_cmp(const struct wf_model *m, const char *s, size_t n, uint32_t i)
{
	const struct wf_tensor *t = &m->tensors[i];
	size_t k = n < t->name_len ? n : t->name_len;
	int c = memcmp(s, t->name, k);
	return c ? c : (n > t->name_len) - (n < t->name_len);
}

static int idx_cmp(const void *a, const void *b, void *ctx)
{
	const struct wf_model *m = ctx;
	const struct wf_tensor *x = &m->tensors[*(const uint32_t *)a];
	return name_cmp(m, x->name, x->name_len, *(const uint32_t *)b);
}

/* The index of the tensor named prefix + suffix, or -1. */
static long find(const struct names *nm, const char *prefix, size_t plen, const char *suffix)
{
	char buf[4096];
	size_t sl = strlen(suffix);
	if (plen + sl > sizeof buf)
		return -1;
	memcpy(buf, prefix, plen);
	memcpy(buf + plen, suffix, sl);
	size_t lo = 0, hi = nm->m->n_tensors;
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = name_cmp(nm->m, buf, plen + sl, nm->idx[mid]);
		if (c == 0)
			return nm->idx[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

static bool ends_with(const struct wf_tensor *t, const char *suffix, size_t *plen)
{
	size_t sl = strlen(suffix);
	if (t->name_len < sl || memcmp(t->name + t->name_len - sl, suffix, sl) != 0)
		return false;
	*plen = t->name_len - sl;
	return true;
}

/* ---------------------------------------------------------- sidecars */

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\n' || s[i] == '\r'))
		i++;
	return i;
}

/* The end of the JSON string starting at s[i] == '"'. */
static size_t skip_str(const char *s, size_t n, size_t i)
{
	for (i++; i < n && s[i] != '"'; i++)
		if (s[i] == '\\')
			i++;
	return i < n ? i + 1 : n;
}

/* The end of the JSON value starting at s[i] (the text parsed as JSON). */
static size_t skip_value(const char *s, size_t n, size_t i)
{
	if (i < n && s[i] == '"')
		return skip_str(s, n, i);
	if (i < n && (s[i] == '{' || s[i] == '[')) {
		size_t depth = 0;
		for (; i < n; i++) {
			if (s[i] == '"')
				i = skip_str(s, n, i) - 1;
			else if (s[i] == '{' || s[i] == '[')
				depth++;
			else if ((s[i] == '}' || s[i] == ']') && --depth == 0)
				return i + 1;
		}
		return n;
	}
	/* a number, true, false or null */
	while (i < n && !strchr(",}] \t\r\n", s[i]))
		i++;
	return i;
}

/* Removes the top-level member `key` of the JSON object text s[0..*n)
 * in place, keeping every other byte (numbers stay as written). */
static void drop_member(char *s, size_t *n, const char *key)
{
	size_t kl = strlen(key), i = skip_ws(s, *n, 0), prev_end = 0;
	if (i >= *n || s[i] != '{')
		return;
	i = skip_ws(s, *n, i + 1);
	while (i < *n && s[i] == '"') {
		size_t start = i, kend = skip_str(s, *n, i);
		size_t v = skip_ws(s, *n, kend);
		if (v >= *n || s[v] != ':')
			return;
		size_t end = skip_ws(s, *n, skip_value(s, *n, skip_ws(s, *n, v + 1)));
		bool more = end < *n && s[end] == ',';
		size_t next = more ? skip_ws(s, *n, end + 1) : end;
		if (kend - start == kl + 2 && memcmp(s + start + 1, key, kl) == 0) {
			/* with the comma after it, or for the last one, the comma before */
			size_t from = more || !prev_end ? start : prev_end, to = more ? next : end;
			memmove(s + from, s + to, *n - to);
			*n -= to - from;
			return;
		}
		if (!more)
			return;
		prev_end = end;
		i = next;
	}
}

/* Where the weights are served decoded, the mount's config.json no longer
 * says they are quantized and quantize_config.json is left out, so a copy
 * of the mount loads as an ordinary float model. */
static void plain_sidecars(struct wf_model *m, const struct plan *pl)
{
	for (size_t i = 0; i < m->n_sidecars; i++) {
		struct wf_sidecar *sc = &m->sidecars[i];
		if (strcmp(sc->name, "quantize_config.json") == 0) {
			free(sc->name);
			free(sc->data);
			free(sc->path);
			m->sidecars[i--] = m->sidecars[--m->n_sidecars];
			continue;
		}
		if (strcmp(sc->name, "config.json") != 0)
			continue;
		cJSON *j = cJSON_ParseWithLength(sc->data, (size_t)sc->len);
		if (!cJSON_IsObject(j)) {
			cJSON_Delete(j);
			continue;
		}
		cJSON_Delete(j);
		size_t n = (size_t)sc->len;
		drop_member(sc->data, &n, "quantization_config");
		if (pl->scheme == WF_HFQ_MLX)
			drop_member(sc->data, &n, "quantization");
		sc->len = n;
	}
}

/* ------------------------------------------------------------ layers */

enum role { R_KEEP = 0, R_MAIN, R_DROP };

struct work {
	struct wf_model *m;
	struct names nm;
	const struct plan *pl;
	uint8_t *role;     /* [n_tensors] */
	size_t *layer_of;  /* [n_tensors]: for R_MAIN, the layer's index in m->hfq */
	char *err;
};

/* Fills p from tensor i (nothing when i < 0), of any number of dims: as
 * 2-D, its last dim the columns and all others the rows. */
static enum wf_err take_part_nd(struct work *w, long i, struct wf_hfq_part *p)
{
	memset(p, 0, sizeof *p);
	if (i < 0)
		return WF_OK;
	const struct wf_tensor *t = &w->m->tensors[i];
	char q[96];
	struct wf_part *file = &w->m->parts[t->part];
	char why[WF_ERRLEN];
	/* a part of a many-part model is mapped on first read (wf_maps.h), but
	 * the decoders keep pointers into it: it stays mapped */
	if (w->m->maps && wf_maps_pin(file, why) != WF_OK)
		return wf_fail(w->err, WF_ERR_IO, "tensor %s: %s: %s", wf_quote(q, sizeof q, t->name, t->name_len),
			       file->name ? file->name : "?", why);
	p->p = file->data + t->offset;
	p->nbytes = t->nbytes;
	p->file = t->part;
	p->type = t->type;
	p->rows = 1;
	for (unsigned d = 0; d + 1 < t->ndim; d++)
		if (!wf_mul_ok(p->rows, t->shape[d], &p->rows))
			return wf_fail(w->err, WF_ERR_FORMAT, "tensor %s: shape too large",
				       wf_quote(q, sizeof q, t->name, t->name_len));
	p->cols = t->ndim ? t->shape[t->ndim - 1] : 1;
	return WF_OK;
}

/* Fills p from tensor i (nothing when i < 0), of at most 2 dims. */
static enum wf_err take_part(struct work *w, long i, struct wf_hfq_part *p)
{
	memset(p, 0, sizeof *p);
	if (i < 0)
		return WF_OK;
	const struct wf_tensor *t = &w->m->tensors[i];
	char q[96];
	if (t->ndim > 2)
		return wf_fail(w->err, WF_ERR_FORMAT, "tensor %s: %u dims, where a part of a quantized layer has at "
			       "most 2", wf_quote(q, sizeof q, t->name, t->name_len), t->ndim);
	return take_part_nd(w, i, p);
}

static void mark(struct work *w, long i, enum role r)
{
	if (i >= 0)
		w->role[i] = (uint8_t)r;
}

/* The FP8 layer whose scale is tensor i (named prefix + "." + scale). */
static enum wf_err fp8_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const char *pre = w->m->tensors[i].name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	long wi = find(&w->nm, pre, plen, ".weight");
	if (wi < 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: %s without a weight", who, w->pl->scale);
	const struct wf_tensor *wt = &w->m->tensors[wi];
	if (wt->ndim != 2)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: FP8 weight with %u dims (needs [out, in])", who, wt->ndim);
	enum wf_err rc = take_part(w, wi, &q->part[WF_HFQ_FP8_W]);
	if (rc == WF_OK)
		rc = take_part(w, (long)i, &q->part[WF_HFQ_FP8_S]);
	if (rc != WF_OK)
		return rc;
	q->scheme = WF_HFQ_FP8;
	q->out = wt->shape[0];
	q->in = wt->shape[1];
	/* a tensor scale covers it all, a channel scale one row, else blocks */
	int st = w->pl->strategy;
	q->bh = st == 'b' ? w->pl->bh : st == 't' && q->out ? q->out : 1;
	q->bw = st == 'b' ? w->pl->bw : q->in ? q->in : 1;
	struct wf_hfq_part *s = &q->part[WF_HFQ_FP8_S];
	if (w->pl->strategy == 'c' && w->m->tensors[i].ndim == 1) { /* [out] for [out, 1] */
		s->rows = s->cols;
		s->cols = 1;
	}
	mark(w, wi, R_MAIN);
	mark(w, (long)i, R_DROP);
	mark(w, find(&w->nm, pre, plen, ".input_scale"), R_DROP); /* activations' scale: not the weight's */
	w->layer_of[wi] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* The GPTQ layer whose qweight is tensor i (named prefix + ".qweight"). */
static enum wf_err gptq_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const char *pre = w->m->tensors[i].name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	if (find(&w->nm, pre, plen, ".weight") >= 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: both a weight and a qweight", who);
	long qz = find(&w->nm, pre, plen, ".qzeros"), sc = find(&w->nm, pre, plen, ".scales");
	long gi = find(&w->nm, pre, plen, ".g_idx");
	enum wf_err rc = take_part(w, (long)i, &q->part[WF_HFQ_GPTQ_QW]);
	if (rc == WF_OK)
		rc = take_part(w, qz, &q->part[WF_HFQ_GPTQ_QZ]);
	if (rc == WF_OK)
		rc = take_part(w, sc, &q->part[WF_HFQ_GPTQ_SC]);
	if (rc == WF_OK)
		rc = take_part(w, gi, &q->part[WF_HFQ_GPTQ_GI]);
	if (rc != WF_OK)
		return rc;
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_GPTQ_QW];
	q->scheme = WF_HFQ_GPTQ;
	q->bits = w->pl->bits;
	q->out = qw->cols;
	if (qw->rows > UINT64_MAX / 32 || qw->rows * 32 % q->bits)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: qweight has %" PRIu64 " rows, not whole %u-bit inputs",
			       who, qw->rows, q->bits);
	q->in = qw->rows * 32 / q->bits;
	uint64_t n;
	if (q->in > UINT32_MAX || !wf_mul_ok(q->in, q->out, &n) || n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: [%" PRIu64 ", %" PRIu64 "] is too large", who,
			       q->out, q->in);
	q->group = w->pl->group ? w->pl->group : (uint32_t)q->in;
	q->groups = q->part[WF_HFQ_GPTQ_SC].rows;
	mark(w, (long)i, R_MAIN);
	mark(w, qz, R_DROP);
	mark(w, sc, R_DROP);
	mark(w, gi, R_DROP);
	w->layer_of[i] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* The AWQ layer whose qweight is tensor i (named prefix + ".qweight"). */
static enum wf_err awq_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const char *pre = w->m->tensors[i].name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	if (find(&w->nm, pre, plen, ".weight") >= 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: both a weight and a qweight", who);
	long qz = find(&w->nm, pre, plen, ".qzeros"), sc = find(&w->nm, pre, plen, ".scales");
	enum wf_err rc = take_part(w, (long)i, &q->part[WF_HFQ_AWQ_QW]);
	if (rc == WF_OK)
		rc = take_part(w, qz, &q->part[WF_HFQ_AWQ_QZ]);
	if (rc == WF_OK)
		rc = take_part(w, sc, &q->part[WF_HFQ_AWQ_SC]);
	if (rc != WF_OK)
		return rc;
	const struct wf_hfq_part *qw = &q->part[WF_HFQ_AWQ_QW];
	q->scheme = WF_HFQ_AWQ;
	q->bits = 4;
	q->group = w->pl->group;
	q->in = qw->rows;
	uint64_t n;
	if (qw->cols > UINT64_MAX / 8 || !wf_mul_ok(q->in, qw->cols * 8, &n) || n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: qweight is too large", who);
	q->out = qw->cols * 8;
	mark(w, (long)i, R_MAIN);
	mark(w, qz, R_DROP);
	mark(w, sc, R_DROP);
	w->layer_of[i] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* The MLX layer whose scales are tensor i (named prefix + ".scales"). */
static enum wf_err mlx_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const char *pre = w->m->tensors[i].name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	long wi = find(&w->nm, pre, plen, ".weight"), bi = find(&w->nm, pre, plen, ".biases");
	if (wi < 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: MLX scales without a weight", who);
	q->scheme = WF_HFQ_MLX;
	q->bits = w->pl->bits;
	q->group = w->pl->group;
	/* a per-module override: config["quantization"][path] */
	char path[1024];
	if (plen < sizeof path && !memchr(pre, '\0', plen)) {
		memcpy(path, pre, plen);
		path[plen] = '\0';
		const cJSON *o = cJSON_GetObjectItemCaseSensitive(w->pl->mlx, path);
		enum wf_err rc = cJSON_IsObject(o) ? mlx_params(o, &q->bits, &q->group, who, w->err) : WF_OK;
		if (rc != WF_OK)
			return rc;
	}
	enum wf_err rc = take_part(w, wi, &q->part[WF_HFQ_MLX_W]);
	if (rc == WF_OK)
		rc = take_part(w, (long)i, &q->part[WF_HFQ_MLX_S]);
	if (rc == WF_OK)
		rc = take_part(w, bi, &q->part[WF_HFQ_MLX_B]);
	if (rc != WF_OK)
		return rc;
	const struct wf_hfq_part *wp = &q->part[WF_HFQ_MLX_W];
	uint64_t n;
	if (wp->cols > UINT64_MAX / 32 || wp->cols * 32 % q->bits)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: weight of %" PRIu64 " words is not whole %u-bit values",
			       who, wp->cols, q->bits);
	q->out = wp->rows;
	q->in = wp->cols * 32 / q->bits;
	if (!wf_mul_ok(q->in, q->out, &n) || n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: weight is too large", who);
	mark(w, wi, R_MAIN);
	mark(w, (long)i, R_DROP);
	mark(w, bi, R_DROP);
	w->layer_of[wi] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

#define BNB_STATE ".quant_state.bitsandbytes__"

/* A bnb 4-bit quant_state tensor. */
static bool bnb_named(const struct wf_tensor *t)
{
	size_t plen;
	return ends_with(t, BNB_STATE "nf4", &plen) || ends_with(t, BNB_STATE "fp4", &plen);
}

/* bnb's quant_state JSON of layer q into q's parameters. */
static enum wf_err bnb_state(struct work *w, struct wf_hfq *q, const char *who, const char *kind)
{
	const struct wf_hfq_part *st = &q->part[WF_HFQ_BNB_STATE];
	cJSON *j = st->type == WF_T_U8 ? cJSON_ParseWithLength((const char *)st->p, (size_t)st->nbytes) : NULL;
	const char *qt = jstr(j, "quant_type");
	const cJSON *shape = cJSON_GetObjectItemCaseSensitive(j, "shape");
	double bs, d0, d1, nbs;
	const cJSON *s0 = cJSON_GetArrayItem(shape, 0), *s1 = cJSON_GetArrayItem(shape, 1);
	bool ok = qt && !strcmp(qt, kind) && jint(j, "blocksize", 1, 1 << 20, &bs) && cJSON_GetArraySize(shape) == 2 &&
		  cJSON_IsNumber(s0) && cJSON_IsNumber(s1);
	if (ok) {
		d0 = s0->valuedouble;
		d1 = s1->valuedouble;
		ok = d0 >= 0 && d1 >= 0 && d0 <= 9e15 && d1 <= 9e15 && d0 == (double)(uint64_t)d0 && d1 == (double)(uint64_t)d1;
	}
	const cJSON *off = cJSON_GetObjectItemCaseSensitive(j, "nested_offset");
	bool nested = cJSON_GetObjectItemCaseSensitive(j, "nested_blocksize") != NULL;
	if (ok && nested)
		ok = jint(j, "nested_blocksize", 1, 1 << 20, &nbs) && cJSON_IsNumber(off) &&
		     (double)(float)off->valuedouble == off->valuedouble;
	if (ok) {
		q->qtype = !strcmp(kind, "nf4") ? "nf4" : "fp4";
		q->block = (uint64_t)bs;
		q->out = (uint64_t)d0;
		q->in = (uint64_t)d1;
		q->nblock = nested ? (uint64_t)nbs : 0;
		q->noffset = nested ? (float)off->valuedouble : 0.0f;
	}
	cJSON_Delete(j);
	return ok ? WF_OK : wf_fail(w->err, WF_ERR_FORMAT, "layer %s: quant_state is not bitsandbytes' JSON "
				    "(quant_type %s, blocksize, shape [out, in], nested parameters)", who, kind);
}

/* The bnb layer whose quant_state is tensor i (named W + BNB_STATE + kind). */
static enum wf_err bnb_layer(struct work *w, size_t i, struct wf_hfq *q)
{
	const struct wf_tensor *t = &w->m->tensors[i];
	const char *kind = NULL;
	size_t plen = 0;
	if (ends_with(t, BNB_STATE "nf4", &plen))
		kind = "nf4";
	else if (ends_with(t, BNB_STATE "fp4", &plen))
		kind = "fp4";
	else
		return WF_OK;
	const char *pre = t->name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	long wi = find(&w->nm, pre, plen, ""), ab = find(&w->nm, pre, plen, ".absmax");
	long map = find(&w->nm, pre, plen, ".quant_map"), na = find(&w->nm, pre, plen, ".nested_absmax");
	long nm = find(&w->nm, pre, plen, ".nested_quant_map");
	if (wi < 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: quant_state without its weight", who);
	long idx[WF_HFQ_MAX_PARTS] = {wi, ab, map, na, nm, (long)i};
	for (int k = 0; k < WF_HFQ_MAX_PARTS; k++) {
		enum wf_err rc = take_part(w, idx[k], &q->part[k]);
		if (rc != WF_OK)
			return rc;
		mark(w, idx[k], k == WF_HFQ_BNB_W ? R_MAIN : R_DROP);
	}
	q->scheme = WF_HFQ_BNB;
	enum wf_err rc = bnb_state(w, q, who, kind);
	if (rc != WF_OK)
		return rc;
	uint64_t n;
	if (!wf_mul_ok(q->out, q->in, &n) || n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: shape is too large", who);
	w->layer_of[wi] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* The bnb 8-bit layer whose SCB is tensor i (named prefix + ".SCB"). */
static enum wf_err bnb8_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const char *pre = w->m->tensors[i].name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	long wi = find(&w->nm, pre, plen, ".weight"), fmt = find(&w->nm, pre, plen, ".weight_format");
	if (wi < 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: SCB without a weight", who);
	const struct wf_tensor *wt = &w->m->tensors[wi];
	if (wt->ndim != 2 || w->m->tensors[i].ndim != 1)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: bitsandbytes 8-bit needs a weight [out, in] and an SCB "
			       "[out] (they have %u and %u dims)", who, wt->ndim, w->m->tensors[i].ndim);
	enum wf_err rc = take_part(w, wi, &q->part[WF_HFQ_BNB8_W]);
	if (rc == WF_OK)
		rc = take_part(w, (long)i, &q->part[WF_HFQ_BNB8_SCB]);
	if (rc == WF_OK)
		rc = take_part(w, fmt, &q->part[WF_HFQ_BNB8_FMT]);
	if (rc != WF_OK)
		return rc;
	q->scheme = WF_HFQ_BNB8;
	q->bits = 8;
	q->out = wt->shape[0];
	q->in = wt->shape[1];
	uint64_t n;
	if (!wf_mul_ok(q->out, q->in, &n) || n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: weight is too large", who);
	mark(w, wi, R_MAIN);
	mark(w, (long)i, R_DROP);
	mark(w, fmt, R_DROP);
	w->layer_of[wi] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* "[a, b, ...]" of a tensor's shape into buf (cut at n bytes). */
static const char *shape_str(char *buf, size_t n, const uint64_t *shape, unsigned ndim)
{
	size_t k = (size_t)snprintf(buf, n, "[");
	for (unsigned d = 0; d < ndim && k < n; d++)
		k += (size_t)snprintf(buf + k, n - k, "%s%" PRIu64, d ? ", " : "", shape[d]);
	if (k < n)
		snprintf(buf + k, n - k, "]");
	return buf;
}

/* The MXFP4 layer whose blocks are tensor i (named prefix + "_blocks"). */
static enum wf_err mxfp4_layer(struct work *w, size_t i, size_t plen, struct wf_hfq *q)
{
	const struct wf_tensor *bt = &w->m->tensors[i];
	const char *pre = bt->name;
	char who[96];
	wf_quote(who, sizeof who, pre, plen);
	if (find(&w->nm, pre, plen, "") >= 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: both the tensor and its MXFP4 blocks", who);
	long si = find(&w->nm, pre, plen, "_scales");
	if (si < 0)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: MXFP4 blocks without their scales", who);
	const struct wf_tensor *st = &w->m->tensors[si];
	if (bt->ndim != 4 || bt->shape[3] != 16 || st->ndim != 3 || st->shape[0] != bt->shape[0] ||
	    st->shape[1] != bt->shape[1] || st->shape[2] != bt->shape[2]) {
		char bs[96], ss[96];
		shape_str(bs, sizeof bs, bt->shape, bt->ndim);
		shape_str(ss, sizeof ss, st->shape, st->ndim);
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: MXFP4 blocks %s and scales %s are not [E, R, G, 16] "
			       "and [E, R, G]", who, bs, ss);
	}
	enum wf_err rc = take_part_nd(w, (long)i, &q->part[WF_HFQ_MXFP4_B]);
	if (rc == WF_OK)
		rc = take_part_nd(w, si, &q->part[WF_HFQ_MXFP4_S]);
	if (rc != WF_OK)
		return rc;
	q->scheme = WF_HFQ_MXFP4;
	q->bits = 4;
	q->group = 32;
	q->experts = bt->shape[0];
	q->in = bt->shape[1];
	uint64_t c, n;
	if (!wf_mul_ok(bt->shape[2], 32, &c) || !wf_mul_ok(q->experts, c, &q->out) || !wf_mul_ok(q->out, q->in, &n) ||
	    n > INT64_MAX / 4)
		return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: MXFP4 blocks are too large", who);
	mark(w, (long)i, R_MAIN);
	mark(w, si, R_DROP);
	w->layer_of[i] = (size_t)(q - w->m->hfq);
	return wf_hfq_check(q, pre, plen, w->err);
}

/* MXFP4 scales left without their blocks would read as stored bytes
 * next to a decoded model: refused as a broken layer. */
static enum wf_err lone_scales(struct work *w)
{
	size_t plen;
	for (size_t i = 0; w->pl->scheme == WF_HFQ_MXFP4 && i < w->m->n_tensors; i++) {
		const struct wf_tensor *t = &w->m->tensors[i];
		char q[96];
		if (w->role[i] == R_KEEP && ends_with(t, "_scales", &plen) && t->type == WF_T_U8)
			return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: MXFP4 scales without their blocks",
				       wf_quote(q, sizeof q, t->name, plen));
	}
	return WF_OK;
}

/* A weight left without its scale would read as its stored integers or
 * e4m3 codes, unscaled: wrong.  FP8: an F8_E4M3 weight; bnb 8-bit: an
 * int8 one. */
static enum wf_err unscaled_weights(struct work *w)
{
	int sch = w->pl->scheme, type = sch == WF_HFQ_FP8 ? WF_T_F8_E4M3 : WF_T_I8;
	const char *what = sch == WF_HFQ_FP8 ? w->pl->scale : "SCB";
	size_t plen;
	for (size_t i = 0; (sch == WF_HFQ_FP8 || sch == WF_HFQ_BNB8) && i < w->m->n_tensors; i++) {
		const struct wf_tensor *t = &w->m->tensors[i];
		char q[96];
		if (w->role[i] == R_KEEP && t->type == type && ends_with(t, ".weight", &plen))
			return wf_fail(w->err, WF_ERR_FORMAT, "layer %s: %s weight without its %s",
				       wf_quote(q, sizeof q, t->name, plen), wf_type_get(type)->name, what);
	}
	return WF_OK;
}

/* Finds and checks every layer of the plan into m->hfq. */
static enum wf_err find_layers(struct work *w)
{
	struct wf_model *m = w->m;
	int sch = w->pl->scheme;
	const char *suffix = sch == WF_HFQ_FP8 ? w->pl->scale : sch == WF_HFQ_MLX ? "scales"
			     : sch == WF_HFQ_BNB ? "quant_state.bitsandbytes__" : sch == WF_HFQ_BNB8 ? "SCB"
			     : sch == WF_HFQ_MXFP4 ? "blocks" : "qweight";
	char dot[64];
	snprintf(dot, sizeof dot, "%c%s", sch == WF_HFQ_MXFP4 ? '_' : '.', suffix);
	size_t n = 0, plen;
	for (size_t i = 0; i < m->n_tensors; i++)
		n += sch == WF_HFQ_BNB ? bnb_named(&m->tensors[i]) : ends_with(&m->tensors[i], dot, &plen);
	m->hfq = calloc(n ? n : 1, sizeof *m->hfq);
	if (!m->hfq)
		return wf_fail(w->err, WF_ERR_NOMEM, "out of memory for %zu quantized layers", n);
	for (size_t i = 0; i < m->n_tensors; i++) {
		if (sch == WF_HFQ_BNB ? !bnb_named(&m->tensors[i]) : !ends_with(&m->tensors[i], dot, &plen))
			continue;
		struct wf_hfq *q = &m->hfq[m->n_hfq++];
		q->source = w->pl->source;
		enum wf_err rc = sch == WF_HFQ_FP8    ? fp8_layer(w, i, plen, q)
				 : sch == WF_HFQ_GPTQ ? gptq_layer(w, i, plen, q)
				 : sch == WF_HFQ_AWQ  ? awq_layer(w, i, plen, q)
				 : sch == WF_HFQ_MLX  ? mlx_layer(w, i, plen, q)
				 : sch == WF_HFQ_BNB8 ? bnb8_layer(w, i, plen, q)
				 : sch == WF_HFQ_MXFP4 ? mxfp4_layer(w, i, plen, q)
						      : bnb_layer(w, i, q);
		if (rc != WF_OK)
			return rc;
	}
	enum wf_err rc = unscaled_weights(w);
	return rc == WF_OK ? lone_scales(w) : rc;
}

/* Puts each layer's decoded tensor where its main part was and takes its
 * parts out of the list, into m->hidden (in list order). */
static enum wf_err replace_parts(struct work *w)
{
	struct wf_model *m = w->m;
	size_t k = 0, n_hide = 0;
	for (size_t i = 0; i < m->n_tensors; i++)
		n_hide += w->role[i] != R_KEEP;
	m->hidden = calloc(n_hide ? n_hide : 1, sizeof *m->hidden);
	if (!m->hidden)
		return wf_fail(w->err, WF_ERR_NOMEM, "out of memory for %zu parts of quantized layers", n_hide);
	for (size_t i = 0; i < m->n_tensors; i++) {
		struct wf_tensor t = m->tensors[i];
		if (w->role[i] == R_DROP) {
			m->hidden[m->n_hidden++] = t;
			continue;
		}
		if (w->role[i] == R_MAIN) {
			const struct wf_hfq *q = &m->hfq[w->layer_of[i]];
			uint64_t n, size;
			uint64_t *shape = malloc(3 * sizeof *shape);
			bool packed = q->scheme == WF_HFQ_GPTQ || q->scheme == WF_HFQ_AWQ; /* named .qweight */
			bool as_is = q->scheme == WF_HFQ_BNB; /* bnb's weight keeps its own name */
			bool mx = q->scheme == WF_HFQ_MXFP4;  /* X_blocks is shown as X, [E, C, R] */
			size_t plen = t.name_len - (as_is ? 0 : packed ? strlen(".qweight") : mx ? strlen("_blocks")
								      : strlen(".weight"));
			char *name = malloc(plen + sizeof ".weight");
			if (!shape || !name || !wf_mul_ok(q->out, q->in, &n) || !wf_mul_ok(n, 4, &size) ||
			    size > INT64_MAX) {
				free(shape);
				free(name);
				/* keep the list whole for the model's free */
				memmove(&m->tensors[k], &m->tensors[i], (m->n_tensors - i) * sizeof *m->tensors);
				m->n_tensors = k + (m->n_tensors - i);
				return wf_fail(w->err, shape && name ? WF_ERR_FORMAT : WF_ERR_NOMEM,
					       "a quantized layer's [%" PRIu64 ", %" PRIu64 "] weight does not fit",
					       q->out, q->in);
			}
			memcpy(name, t.name, plen);
			memcpy(name + plen, as_is || mx ? "" : ".weight", as_is || mx ? 1 : sizeof ".weight");
			m->hidden[m->n_hidden++] = t; /* the main part keeps its stored name and shape */
			shape[0] = q->out;
			shape[1] = q->in;
			if (mx) {
				shape[0] = q->experts;
				shape[1] = q->out / q->experts;
				shape[2] = q->in;
			}
			t.name = name;
			t.name_len = plen + (as_is || mx ? 0 : strlen(".weight"));
			t.shape = shape;
			t.ndim = mx ? 3 : 2;
			t.nelems = n;
			t.size = size;
			t.type = wf_hfq_scheme(q->scheme)->type;
			t.vk = WF_VK_F32;
			t.q = q;
		}
		m->tensors[k++] = t;
	}
	m->n_tensors = k;
	return WF_OK;
}

enum wf_err wf_hfq_apply(struct wf_model *m, enum wf_vk want, char *err)
{
	if (m->hfq_done)
		return WF_OK;
	m->hfq_done = true;
	struct plan pl;
	bool found;
	cJSON *cfg = NULL;
	enum wf_err rc = read_plan(m, &pl, &found, &cfg, err);
	for (size_t i = 0; rc == WF_OK && !found && i < m->n_tensors; i++)
		if (bnb_named(&m->tensors[i])) /* bnb's quant_state needs no config */
			pl = (struct plan){.scheme = WF_HFQ_BNB, .source = "bitsandbytes"}, found = true;
	size_t plen;
	for (size_t i = 0; rc == WF_OK && !found && i < m->n_tensors; i++)
		if (ends_with(&m->tensors[i], ".SCB", &plen)) /* nor does bnb 8-bit's SCB */
			pl = (struct plan){.scheme = WF_HFQ_BNB8, .source = "bitsandbytes"}, found = true;
	if (rc != WF_OK || !found || m->n_tensors == 0) {
		cJSON_Delete(cfg);
		return rc;
	}
	struct work w = {.m = m, .pl = &pl, .err = err, .nm = {.m = m}};
	w.nm.idx = malloc(m->n_tensors * sizeof *w.nm.idx);
	w.role = calloc(m->n_tensors, 1);
	w.layer_of = calloc(m->n_tensors, sizeof *w.layer_of);
	if (!w.nm.idx || !w.role || !w.layer_of) {
		rc = wf_fail(err, WF_ERR_NOMEM, "out of memory for the quantized layers");
	} else {
		for (size_t i = 0; i < m->n_tensors; i++)
			w.nm.idx[i] = (uint32_t)i;
		qsort_r(w.nm.idx, m->n_tensors, sizeof *w.nm.idx, idx_cmp, m);
		rc = find_layers(&w);
		if (rc == WF_OK && want != WF_VK_RAW)
			rc = replace_parts(&w);
		if (rc == WF_OK && want != WF_VK_RAW)
			plain_sidecars(m, &pl);
	}
	free(w.nm.idx);
	free(w.role);
	free(w.layer_of);
	cJSON_Delete(cfg);
	return rc;
}
