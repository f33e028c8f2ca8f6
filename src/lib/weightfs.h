/* weightfs.h - the weightfs library: model weights as decoded tensors.
 *
 * Opens a model in any form the weightfs command accepts (a GGUF or
 * safetensors file, any part of a split GGUF, a safetensors index or one
 * of its shards, a model folder, or one of those remote: hf://ORG/NAME,
 * s3://BUCKET/PREFIX/ or an https:// URL, fetching only the byte ranges
 * read, docs/remote.md), lists its tensors, and reads any byte
 * range of any tensor, decoded to float32, float16, bfloat16 or shown as
 * stored, into the caller's buffer.  Nothing is converted ahead of time:
 * a read decodes only the blocks that cover it, from a read-only mapping.
 *
 *   weightfs_model *m;
 *   char err[256];
 *   if (weightfs_open("model.gguf", WEIGHTFS_F32, &m, err, sizeof err) != 0)
 *           fprintf(stderr, "%s\n", err);
 *
 * Quantized Hugging Face layers (GPTQ, AWQ, FP8, MLX, bitsandbytes; see
 * docs/quantized.md): a model opened in a decoded dtype (WEIGHTFS_F32, F16,
 * BF16) lists each as one tensor PREFIX.weight, float32 [out, in], decoded
 * on read, in place of its stored parts.  The parts stay reachable by name
 * (weightfs_find) at indices from weightfs_n_tensors on, and a read with
 * WEIGHTFS_STORED gives, for every name the model stores, its stored bytes,
 * as `-o dtype=stored` of the mount shows them.  A model opened with
 * WEIGHTFS_STORED lists every stored tensor and no decoded one.
 *
 * Errors: every function that can fail returns 0 or a WEIGHTFS_E* code and
 * writes one line (no newline) into err[0..errlen) when err is not NULL.
 *
 * Threads: a model may be read from any number of threads at once; only
 * weightfs_close must not race anything.
 *
 * Signals: weightfs_open installs a SIGBUS handler (once per process).  A
 * model file that shrinks under a read faults on its mapping; the handler
 * turns that into WEIGHTFS_ECHANGED for the read, and leaves any other
 * SIGBUS to the default action.  A program with its own SIGBUS handler
 * should install it before the first weightfs_open and chain to it itself.
 *
 * Link with -lweightfs (pkg-config --cflags --libs weightfs).  MIT licence.
 */
#ifndef WEIGHTFS_H
#define WEIGHTFS_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) || defined(__clang__)
#define WEIGHTFS_API __attribute__((visibility("default")))
#else
#define WEIGHTFS_API
#endif

#define WEIGHTFS_VERSION "0.1.0"
#define WEIGHTFS_MAX_DIMS 32

typedef struct weightfs_model weightfs_model;

/* Output dtypes.  Integer and bool tensors read as themselves under every
 * one; F32 (and F16, BF16 when asked for as themselves) are their bytes. */
enum weightfs_dtype {
	WEIGHTFS_DEFAULT = -1, /* the dtype given to weightfs_open */
	WEIGHTFS_F32 = 0,      /* float tensors decoded to float32 (bit-exact with ggml) */
	WEIGHTFS_F16,          /* ... rounded to IEEE half, nearest-even */
	WEIGHTFS_BF16,         /* ... rounded to bfloat16 (as uint16 bits), nearest-even */
	WEIGHTFS_STORED,       /* the file's bytes; types packed in blocks as uint8 [..., bytes per row];
				* a decoded layer: the stored tensor of its name (FP8, MLX, bitsandbytes:
				* the packed PREFIX.weight), or WEIGHTFS_EUNSUP when there is none (GPTQ,
				* AWQ store PREFIX.qweight, ...: the message names the parts) */
};

/* Return codes. */
enum weightfs_status {
	WEIGHTFS_OK = 0,
	WEIGHTFS_ENOMEM,   /* out of memory */
	WEIGHTFS_EIO,      /* the OS refused (open, mmap, fstat) */
	WEIGHTFS_EFORMAT,  /* the model is malformed */
	WEIGHTFS_EUNSUP,   /* well-formed, but not something weightfs handles */
	WEIGHTFS_ERANGE,   /* a read that cannot be served (no decoder for the type, bytes gone) */
	WEIGHTFS_ECHANGED, /* a file of the model changed since it was opened */
	WEIGHTFS_EINVAL,   /* a bad argument: tensor index, dtype, NULL pointer */
};

/* One tensor as it reads in one output dtype. */
struct weightfs_tensor_info {
	const char *name;      /* NUL-terminated, but a name may hold NUL bytes: see name_len */
	size_t name_len;
	const char *type;      /* the stored type as its format spells it: "Q4_K", "BF16", "I32" */
	const char *dtype;     /* numpy name of the elements read: "float32", "float16", "bfloat16",
				* "uint8" (stored blocks), "int32", ... */
	uint32_t elem_size;    /* bytes per element read */
	uint32_t ndim;         /* 0 for a scalar */
	uint64_t shape[WEIGHTFS_MAX_DIMS]; /* row-major (numpy order), outermost first */
	uint64_t nelems;       /* product of shape */
	uint64_t size;         /* bytes of the whole tensor in this dtype */
	const char *file;      /* the file its bytes are in (a name in the model's folder) */
	uint64_t offset;       /* absolute offset of its bytes in that file */
	uint64_t nbytes;       /* its bytes in that file */
	int readable;          /* 0 when the type has no decoder: reads fail with WEIGHTFS_ERANGE */
};

/* Opens the model at path and validates all of it.  dtype (not
 * WEIGHTFS_DEFAULT) is what later calls passing WEIGHTFS_DEFAULT get, and
 * says how quantized layers are listed: decoded, or (WEIGHTFS_STORED) as
 * their stored parts.
 * On success *out is a model to pass to weightfs_close; on failure *out is
 * NULL and err names the file and, where there is one, the tensor or field. */
WEIGHTFS_API int weightfs_open(const char *path, int dtype, weightfs_model **out, char *err, size_t errlen);

/* Unmaps and frees m; NULL is ignored.  Pointers into m become invalid. */
WEIGHTFS_API void weightfs_close(weightfs_model *m);

/* The number of tensors listed, in the order the files list them (the parts
 * of a split model in order); the hidden parts of decoded layers are not
 * counted. */
WEIGHTFS_API size_t weightfs_n_tensors(const weightfs_model *m);

/* The index of the tensor named name[0..len), or -1.  A listed tensor's
 * index is below weightfs_n_tensors; a hidden part of a decoded layer
 * (PREFIX.qweight, PREFIX.weight_scale_inv, PREFIX.SCB, ...) gets an index
 * from weightfs_n_tensors on, which every call below takes (a part named as
 * its layer, FP8's PREFIX.weight, is that layer under WEIGHTFS_STORED). */
WEIGHTFS_API int64_t weightfs_find(const weightfs_model *m, const char *name, size_t len);

/* Fills *info for tensor i read in dtype.  WEIGHTFS_EINVAL for a bad index
 * or dtype; WEIGHTFS_EUNSUP when WEIGHTFS_STORED cannot show the tensor as
 * whole rows of bytes, or i is a decoded layer with no stored tensor of its
 * name.  The strings live as long as m. */
WEIGHTFS_API int weightfs_tensor_info(const weightfs_model *m, size_t i, int dtype, struct weightfs_tensor_info *info,
				      char *err, size_t errlen);

/* Copies bytes [offset, offset+len) of tensor i, read in dtype, into buf;
 * *got gets the count, less than len only at the end of the tensor (0 at
 * or past it).  Any offset and length work; a range on element and block
 * boundaries decodes no block twice.  The bytes are checked to come from
 * the files as opened: WEIGHTFS_ECHANGED (and *got 0) when one changed. */
WEIGHTFS_API int weightfs_read(weightfs_model *m, size_t i, int dtype, uint64_t offset, size_t len, void *buf,
			       size_t *got, char *err, size_t errlen);

/* The same, split over nthreads threads (0: one per online CPU) on block
 * boundaries, each decoding straight into its piece of buf.  Ranges under
 * about 1 MiB per thread use fewer threads.  Returns the first failure of
 * any piece, with *got 0. */
WEIGHTFS_API int weightfs_read_parallel(weightfs_model *m, size_t i, int dtype, uint64_t offset, size_t len,
					void *buf, size_t *got, unsigned nthreads, char *err, size_t errlen);

/* Reads the n tensors idx[0..n), whole and in dtype, into one buffer:
 * tensor idx[k] goes to buf + k * stride, so a [n, *shape] array is filled
 * in place.  Every tensor must have the same shape and element type in
 * dtype and take exactly stride bytes (WEIGHTFS_EINVAL otherwise, naming
 * the first that differs, before anything is read).  The reads run on
 * nthreads threads (0: one per online CPU), whole tensors per thread when
 * there are at least as many tensors as threads, else each tensor split as
 * weightfs_read_parallel splits it.  Returns the first failure of any
 * read, as weightfs_read words it; buf is then partly written. */
WEIGHTFS_API int weightfs_read_stack(weightfs_model *m, const size_t *idx, size_t n, int dtype, void *buf,
				     size_t stride, unsigned nthreads, char *err, size_t errlen);

/* Statistics of one tensor's values as read in one dtype.  min .. absmax
 * are over the finite values, NaN when there is none. */
struct weightfs_stats {
	uint64_t count;    /* elements */
	uint64_t finite;   /* finite elements */
	double min, max;
	double mean, std;  /* std: population (divides by finite) */
	double absmax;     /* largest |x| */
	uint64_t zeros;    /* elements equal to 0 (+0 or -0) */
	uint64_t nan, inf; /* NaN and +-infinity elements */
};

/* Fills *st for tensor i read in dtype, over nthreads threads (0: one per
 * online CPU), reading in chunks of at most a few MiB per thread.  Sums
 * are accumulated in double, pairwise, in an order that does not depend
 * on nthreads, so the result does not either.  WEIGHTFS_EUNSUP for
 * complex values and for blocks read as stored bytes; WEIGHTFS_ERANGE
 * when the type has no decoder; WEIGHTFS_ECHANGED when a file changed. */
WEIGHTFS_API int weightfs_stats(weightfs_model *m, size_t i, int dtype, unsigned nthreads, struct weightfs_stats *st,
				char *err, size_t errlen);

/* The files of the hf/ view of a GGUF model (docs/hf.md): the Hugging
 * Face folder transformers builds from it, made on read as the mount's
 * hf/ is. */
enum weightfs_hf_file {
	WEIGHTFS_HF_SAFETENSORS,        /* model.safetensors: HF names, q/k rows and norms as HF has them */
	WEIGHTFS_HF_CONFIG,             /* config.json */
	WEIGHTFS_HF_GENERATION_CONFIG,  /* generation_config.json */
	WEIGHTFS_HF_TOKENIZER,          /* tokenizer.json */
	WEIGHTFS_HF_TOKENIZER_CONFIG,   /* tokenizer_config.json */
	WEIGHTFS_HF_SPECIAL_TOKENS_MAP, /* special_tokens_map.json */
	WEIGHTFS_HF_TOKENIZER_MODEL,    /* tokenizer.model (SentencePiece vocabularies only) */
	WEIGHTFS_HF_FILES
};

/* The name of hf/ file `file` ("model.safetensors"), or NULL. */
WEIGHTFS_API const char *weightfs_hf_file_name(int file);

/* The size of hf/ file `file` of m, with model.safetensors' tensors in
 * dtype (WEIGHTFS_F32, F16 or BF16; WEIGHTFS_DEFAULT: the one m was
 * opened with, F32 for STORED).  The view is made on the first call and
 * again when dtype changes.  Threads may call it at once; a call in
 * another dtype than reads in flight frees the view they use, so the
 * caller keeps those apart (the Python module does).
 * WEIGHTFS_EUNSUP with the reason in err when m has no such file (not a
 * GGUF, an architecture transformers has no model for, no tokenizer,
 * tokenizer.model of a byte-level vocabulary). */
WEIGHTFS_API int weightfs_hf_size(weightfs_model *m, int dtype, int file, uint64_t *size, char *err,
				  size_t errlen);

/* Reads len bytes at offset of hf/ file `file` (made by weightfs_hf_size
 * first) into buf; *got gets the bytes read (fewer only at the file's
 * end).  Safe from several threads at once.  WEIGHTFS_ECHANGED when a
 * file of the model changed; WEIGHTFS_EINVAL before weightfs_hf_size. */
WEIGHTFS_API int weightfs_hf_read(weightfs_model *m, int file, uint64_t offset, size_t len, void *buf, size_t *got,
				  char *err, size_t errlen);

/* weightfs_hf_read on nthreads threads at once (0: one per online CPU;
 * fewer when each would get less than 1 MiB), each a contiguous share of
 * whole MiBs from offset, so a read of a whole tensor of
 * model.safetensors decodes no block twice.  Same results as
 * weightfs_hf_read; returns when every share is read. */
WEIGHTFS_API int weightfs_hf_read_parallel(weightfs_model *m, int file, uint64_t offset, size_t len, void *buf,
					   size_t *got, unsigned nthreads, char *err, size_t errlen);

/* The model's metadata as a JSON object (GGUF key/values, or the
 * safetensors __metadata__), *len bytes, NUL-terminated; lives as long as m
 * (freed by weightfs_close).  A safetensors model's text is kept from open.
 * A GGUF's is not (it can be many times the header: a 20,000,000-element
 * bool array is 130 MB of text): the first call makes it from the file and
 * keeps it in m; later calls return that copy.  Safe to call from several
 * threads at once.  Returns NULL (with *len 0) when the text cannot be
 * made: out of memory, or the file changed or shrank since it was opened. */
WEIGHTFS_API const char *weightfs_metadata_json(const weightfs_model *m, size_t *len);

/* "f32", "f16", "bf16", "stored" (also "float32", "float16", "bfloat16")
 * to a WEIGHTFS_F32.. value; -1 for anything else. */
WEIGHTFS_API int weightfs_dtype_parse(const char *name);

/* Tensor types for the codec calls below are ggml's type ids (enum
 * ggml_type: 0 F32, 1 F16, 2 Q4_0, 8 Q8_0, 12 Q4_K, 30 BF16, ...).
 * weightfs_type_parse maps a name as ggml spells it, in any case ("Q4_K",
 * "q4_k", "iq4_xs", "bf16"), to its id; -1 for anything else. */
WEIGHTFS_API int weightfs_type_parse(const char *name);

/* The geometry of ggml type `type`: *blck values per block, *bytes bytes
 * per block (a row of n values takes n / blck * bytes bytes); *can_encode
 * is 1 when weightfs_quantize takes the type, *can_decode when
 * weightfs_dequantize does (any pointer may be NULL).  WEIGHTFS_EINVAL for
 * an unknown or removed id. */
WEIGHTFS_API int weightfs_type_info(int type, uint32_t *blck, uint32_t *bytes, int *can_encode, int *can_decode);

/* Quantizes nrows rows of n_per_row float32 values at src as ggml type
 * `type` into dst[0..dst_len), byte for byte what ggml's
 * ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL) writes
 * (llama-quantize without an imatrix), and sets *written to the bytes
 * written (nrows * n_per_row / blck * bytes).  Types: F32, F16, BF16,
 * Q4_0, Q4_1, Q5_0, Q5_1, Q8_0, Q2_K, Q3_K, Q4_K, Q5_K, Q6_K, IQ4_NL,
 * IQ4_XS.  Any float value is taken (infinities and NaNs give ggml's
 * x86-64 bytes).  Blocks are independent: rows can be quantized in any
 * pieces of whole rows, from any threads.  WEIGHTFS_EUNSUP for a type
 * without an encoder or n_per_row not a multiple of its block;
 * WEIGHTFS_ERANGE when dst_len is short; WEIGHTFS_EINVAL for NULL
 * pointers.  Nothing is written on failure. */
WEIGHTFS_API int weightfs_quantize(int type, const float *src, size_t nrows, size_t n_per_row, void *dst,
				   size_t dst_len, size_t *written, char *err, size_t errlen);

/* Decodes n values (a multiple of the type's block) of ggml type `type`
 * from src[0..src_len) into dst, as ggml's to_float does, bit for bit
 * (every type weightfs reads, not only those it encodes).
 * WEIGHTFS_EUNSUP for a type without a decoder or n not whole blocks,
 * WEIGHTFS_ERANGE when src_len holds fewer than n values,
 * WEIGHTFS_EINVAL for NULL pointers. */
WEIGHTFS_API int weightfs_dequantize(int type, const void *src, size_t src_len, float *dst, size_t n,
				     char *err, size_t errlen);

/* The library's version, WEIGHTFS_VERSION when it was built. */
WEIGHTFS_API const char *weightfs_version(void);

#ifdef __cplusplus
}
#endif

#endif
