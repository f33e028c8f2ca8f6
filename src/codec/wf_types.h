/* wf_types.h - the one table of tensor element types.
 *
 * Every tensor type weightfs knows, from either format, is one row: its
 * name as the source format spells it, the numpy dtype of what the mounted
 * file holds, its block geometry, and a block decoder.  The read path
 * (wf_view.c) only ever consults this table; adding a type is adding a row
 * and a decoder.
 *
 * Type ids 0..WF_GGML_TYPE_COUNT-1 are ggml's own ids (enum ggml_type), so a
 * GGUF type id maps to a row without translation.  Types that exist only in
 * safetensors follow from WF_T_ST_FIRST on.
 */
#ifndef WF_TYPES_H
#define WF_TYPES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/wf_common.h"

enum wf_type_id {
	/* ggml ids, identical to enum ggml_type (ggml.h) */
	WF_T_F32 = 0,
	WF_T_F16 = 1,
	WF_T_Q4_0 = 2,
	WF_T_Q4_1 = 3,
	/* 4, 5: removed Q4_2, Q4_3 */
	WF_T_Q5_0 = 6,
	WF_T_Q5_1 = 7,
	WF_T_Q8_0 = 8,
	WF_T_Q8_1 = 9,
	WF_T_Q2_K = 10,
	WF_T_Q3_K = 11,
	WF_T_Q4_K = 12,
	WF_T_Q5_K = 13,
	WF_T_Q6_K = 14,
	WF_T_Q8_K = 15,
	WF_T_IQ2_XXS = 16,
	WF_T_IQ2_XS = 17,
	WF_T_IQ3_XXS = 18,
	WF_T_IQ1_S = 19,
	WF_T_IQ4_NL = 20,
	WF_T_IQ3_S = 21,
	WF_T_IQ2_S = 22,
	WF_T_IQ4_XS = 23,
	WF_T_I8 = 24,
	WF_T_I16 = 25,
	WF_T_I32 = 26,
	WF_T_I64 = 27,
	WF_T_F64 = 28,
	WF_T_IQ1_M = 29,
	WF_T_BF16 = 30,
	/* 31..33: removed Q4_0_4_4, Q4_0_4_8, Q4_0_8_8 */
	WF_T_TQ1_0 = 34,
	WF_T_TQ2_0 = 35,
	/* 36..38: removed IQ4_NL_4_4, IQ4_NL_4_8, IQ4_NL_8_8 */
	WF_T_MXFP4 = 39,
	WF_T_NVFP4 = 40,
	WF_T_Q1_0 = 41,
	WF_T_Q2_0 = 42,
	WF_GGML_TYPE_COUNT = 43,

	/* safetensors-only dtypes */
	WF_T_ST_FIRST = 64,
	WF_T_BOOL = WF_T_ST_FIRST,
	WF_T_U8,
	WF_T_U16,
	WF_T_U32,
	WF_T_U64,
	WF_T_F8_E4M3,     /* float8_e4m3fn (OCP) */
	WF_T_F8_E5M2,
	WF_T_F8_E8M0,     /* float8_e8m0fnu (OCP MX scale) */
	WF_T_F8_E4M3FNUZ,
	WF_T_F8_E5M2FNUZ,
	WF_T_F4,          /* E2M1, two per byte */
	WF_T_F6_E2M3,
	WF_T_F6_E3M2,
	WF_T_C64,

	/* decoded layers made of several stored tensors (wf_hfq.h): never
	 * the dtype of a file */
	WF_T_HFQ_FIRST,
	WF_T_HFQ_FP8 = WF_T_HFQ_FIRST,
	WF_T_HFQ_GPTQ,
	WF_T_HFQ_AWQ,
	WF_T_HFQ_MLX,
	WF_T_HFQ_BNB,
	WF_T_HFQ_BNB8,
	WF_T_HFQ_MXFP4,
	WF_T_COUNT
};

/* Decodes nblocks consecutive blocks at src (nblocks * bytes bytes, no
 * alignment assumed) into nblocks * blck float32 values at dst (aligned for
 * float).  Bit-exact with ggml's to_float for ggml types. */
typedef void (*wf_decode_fn)(const uint8_t *src, float *dst, size_t nblocks);

/* Encodes nblocks * blck float32 values at src (aligned for float) into
 * nblocks consecutive blocks at dst (nblocks * bytes bytes, no alignment
 * assumed), byte-identical with ggml_quantize_chunk(imatrix = NULL); every
 * block depends on its own values only, so any run of whole blocks of a
 * tensor can be encoded on its own.  wf_quantize_rows (wf_quant.h) is the
 * checked, sized entry point. */
typedef void (*wf_quant_fn)(const float *src, uint8_t *dst, size_t nblocks);

/* What a tensor's file holds, made from the tensor's bytes in the model:
 * the one answer for the type table (a type's own view), the mount's
 * -o dtype= option (which view to show) and each tensor (which view it
 * shows). */
enum wf_vk {
	WF_VK_NONE = 0, /* not set (a tensor no parser filled in): reads fail with EIO */
	WF_VK_RAW,      /* the stored bytes, unchanged (F32, integers, BOOL; everything under stored) */
	WF_VK_F32,      /* decoded to float32 */
	WF_VK_F16,      /* decoded to float32, rounded to IEEE half */
	WF_VK_BF16,     /* decoded to float32, rounded to bfloat16 */
};

struct wf_type {
	const char *name;     /* as the source format spells it: "Q4_K", "BF16", "F8_E4M3"; NULL for a hole */
	const char *dtype;    /* numpy name of the view's elements: "float32", "int16", "bool" */
	uint32_t blck;        /* elements per block (1 for plain arrays) */
	uint32_t bytes;       /* bytes per block in the model file */
	enum wf_vk vk;        /* the type's own view: WF_VK_F32 (decoded), or WF_VK_RAW (its bytes:
			       * plain arrays, and types with no decoder, shown as uint8) */
	bool layer;           /* a layer of several stored tensors, decoded by its scheme
			       * (wf_hfq.h): never the dtype of a file */
	bool floats;          /* its elements are real numbers float32 serves: F32 as stored, or
			       * decoded to float32 (F16, BF16, F64, the float8s, every quantized
			       * block).  False for integers, bool, complex, the types with no
			       * decoder, and layers (whose floats are the tensor's scheme's,
			       * wf_tensor.q, not the type's).  What may be converted to
			       * float16/bfloat16, retyped, or quantized from. */
	wf_decode_fn decode;  /* set iff vk == WF_VK_F32; portable C, the reference */
	wf_decode_fn decode_simd; /* optional AVX2 twin, bit-identical to decode; NULL if none */
	wf_quant_fn quantize; /* float32 -> this type as ggml_quantize_chunk writes it (wf_quant.h);
			       * NULL where weightfs has no encoder */
	wf_quant_fn quantize_simd; /* optional AVX2 twin, byte-identical to quantize; NULL if none */
	const char *stored;   /* numpy (or ml_dtypes) name of one stored element, for -o dtype=stored;
			       * NULL when elements are packed in blocks (served as uint8 bytes) */
};

/* Returns the row for id, or NULL when id is out of range or names no type
 * (the removed ggml ids, the gap before WF_T_ST_FIRST). */
const struct wf_type *wf_type_get(int id);

/* Whether type id's row has floats (struct wf_type.floats); false for
 * an id that names no type. */
bool wf_type_floats(int id);

/* Bytes per element of a file that shows a tensor of type ty as vk: the
 * stored element (1 for types packed in blocks, shown as bytes) for
 * WF_VK_RAW, 2 for half and bfloat16, 4 for float32 (and WF_VK_NONE,
 * listed as float32).  The one place a view's element size is decided;
 * ty is read for WF_VK_RAW only (NULL will do for the float views). */
unsigned wf_vk_elem_size(const struct wf_type *ty, enum wf_vk vk);

/* The decoder to call for ty (vk WF_VK_F32): its SIMD twin when it
 * has one and SIMD is on (wf_simd_active), else the scalar one. */
wf_decode_fn wf_type_decoder(const struct wf_type *ty);

/* The encoder to call for ty (NULL when it has none): its AVX2 twin when
 * it has one and SIMD is on, else the scalar one; both give the same
 * bytes.  For encoding a run of whole blocks (a page of a quantized file)
 * without wf_quantize_rows' checks. */
wf_quant_fn wf_type_quantizer(const struct wf_type *ty);

/* SIMD is on when the CPU has AVX2 and F16C and the environment variable
 * WEIGHTFS_NO_SIMD is unset, empty or "0"; decided on first use.
 * wf_simd_set overrides that for the whole process (tests, benchmarks):
 * enable = 0 forces the scalar decoders, 1 asks for SIMD, which is granted
 * only on a capable CPU.  Both return whether SIMD is now on. */
int wf_simd_active(void);
int wf_simd_set(int enable);

/* Maps a GGUF tensor type id to a row id; -1 for ids ggml rejects (>= 43,
 * the removed ids). */
int wf_type_from_gguf(uint32_t gguf_type);

/* Maps a safetensors dtype string (exact, case-sensitive, len bytes) to a
 * row id; -1 when the string names no safetensors dtype. */
int wf_type_from_st(const char *s, size_t len);

/* Encodes nrows rows of n_per_row float32 values at src as ggml type
 * `type` (a wf_type_id with a quantize column) into dst (dst_len bytes),
 * exactly as ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL)
 * does, and sets *written to nrows * row size (with the type's AVX2 twin
 * when it has one and wf_simd_active()).  Fails with WF_ERR_UNSUP for
 * a type without an encoder or n_per_row not a multiple of the block, and
 * WF_ERR_RANGE when dst_len is too small or the sizes overflow; dst is
 * untouched then.  Every float value is accepted: infinities, NaNs and
 * subnormals give the bytes ggml's x86-64 build gives (whose NaN-to-int
 * casts C leaves undefined; see wf_quant.c). */
enum wf_err wf_quantize_rows(int type, const float *src, size_t nrows, size_t n_per_row,
			     void *dst, size_t dst_len, size_t *written, char *err);

/* Whether whole blocks data[0..nbytes) of ggml type `type` pass ggml's
 * ggml_validate_row_data, as llama-quantize checks what it wrote: no
 * infinity or NaN among F32, F16 and BF16 values, nor in the half-float
 * scales (d, and dmin or m) of the quantized blocks weightfs encodes.
 * Other types are taken as valid. */
bool wf_blocks_valid(int type, const uint8_t *data, size_t nbytes);

#endif
