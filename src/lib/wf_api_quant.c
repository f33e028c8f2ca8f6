/* wf_api_quant.c - the codec calls of weightfs.h: ggml type names and
 * geometry, quantize (codec/wf_quant*.c through the type table) and
 * dequantize (the decoders the views use).  No model is involved. */
#include "lib/weightfs.h"
#include "lib/wf_api_int.h"
#include "codec/wf_types.h"

#include <stdint.h>
#include <string.h>
#include <strings.h>

_Static_assert((int)WEIGHTFS_EUNSUP == (int)WF_ERR_UNSUP, "weightfs.h codes must match enum wf_err");

/* A ggml type's row (ids below WF_GGML_TYPE_COUNT only: the rest of the
 * table is safetensors-only and not a ggml type). */
static const struct wf_type *ggml_type(int type)
{
	if (type < 0 || type >= WF_GGML_TYPE_COUNT)
		return NULL;
	return wf_type_get(type);
}

WEIGHTFS_API int weightfs_type_parse(const char *name)
{
	if (!name)
		return -1;
	for (int id = 0; id < WF_GGML_TYPE_COUNT; id++) {
		const struct wf_type *ty = wf_type_get(id);
		if (ty && strcasecmp(ty->name, name) == 0)
			return id;
	}
	return -1;
}

WEIGHTFS_API int weightfs_type_info(int type, uint32_t *blck, uint32_t *bytes, int *can_encode, int *can_decode)
{
	const struct wf_type *ty = ggml_type(type);

	if (!ty)
		return WEIGHTFS_EINVAL;
	if (blck)
		*blck = ty->blck;
	if (bytes)
		*bytes = ty->bytes;
	if (can_encode)
		*can_encode = ty->quantize != NULL;
	if (can_decode)
		*can_decode = ty->decode != NULL || type == WF_T_F32;
	return WEIGHTFS_OK;
}

WEIGHTFS_API int weightfs_quantize(int type, const float *src, size_t nrows, size_t n_per_row, void *dst,
				   size_t dst_len, size_t *written, char *err, size_t errlen)
{
	char msg[WF_ERRLEN];
	size_t n = 0;

	if (!written || (!src && nrows && n_per_row) || (!dst && dst_len))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_quantize: NULL pointer");
	if (!ggml_type(type))
		return wf_api_fail(err, errlen, WEIGHTFS_EUNSUP, "weightfs_quantize: %d is no ggml type", type);
	enum wf_err rc = wf_quantize_rows(type, src, nrows, n_per_row, dst, dst_len, &n, msg);
	if (rc != WF_OK)
		return wf_api_fail(err, errlen, (int)rc, "%s", msg);
	*written = n;
	return WEIGHTFS_OK;
}

WEIGHTFS_API int weightfs_dequantize(int type, const void *src, size_t src_len, float *dst, size_t n,
				     char *err, size_t errlen)
{
	const struct wf_type *ty = ggml_type(type);

	if ((!src && src_len) || (!dst && n))
		return wf_api_fail(err, errlen, WEIGHTFS_EINVAL, "weightfs_dequantize: NULL pointer");
	if (!ty || (!ty->decode && type != WF_T_F32))
		return wf_api_fail(err, errlen, WEIGHTFS_EUNSUP, "weightfs_dequantize: no decoder for type %d (%s)",
				   type, ty ? ty->name : "unknown");
	if (n % ty->blck)
		return wf_api_fail(err, errlen, WEIGHTFS_EUNSUP, "%s: %zu values are not whole %u-value blocks",
				   ty->name, n, (unsigned)ty->blck);
	if (n / ty->blck > src_len / ty->bytes)
		return wf_api_fail(err, errlen, WEIGHTFS_ERANGE, "%s: %zu values need %llu bytes, %zu given",
				   ty->name, n, (unsigned long long)(n / ty->blck) * ty->bytes, src_len);
	if (n == 0)
		return WEIGHTFS_OK;
	if (type == WF_T_F32)
		memcpy(dst, src, n * sizeof *dst);
	else
		wf_type_decoder(ty)(src, dst, n / ty->blck);
	return WEIGHTFS_OK;
}
