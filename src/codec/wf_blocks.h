/* wf_blocks.h - the byte layout of every ggml block type, described once.
 *
 * For each block type T: WF_T_BLCK weights per block, WF_T_BYTES bytes per
 * block (ggml's blck_size and type_size), and for each field F its byte
 * offset WF_T_F and length WF_T_F_LEN, in the order ggml's struct block_<t>
 * (ggml/src/ggml-common.h, ggml 0.21.0) declares them.  The one-line comment
 * above each block is its layout; lengths are written as ggml writes them
 * (QK_K/2 and so on), and a _Static_assert per block checks that the fields
 * start at 0, follow each other without gaps and end at WF_T_BYTES, as
 * ggml's static_assert(sizeof(block_<t>) == ...) does.
 *
 * These are named offsets, not packed structs, on purpose: a block is read
 * straight from the model file's bytes, which have no alignment (GGUF blocks
 * have odd sizes, safetensors data is not aligned), so multi-byte fields are
 * assembled with wf_le16/wf_le32 (wf_common.h) at src + WF_T_F, independent
 * of the host's alignment rules and byte order.
 *
 * The type table (wf_types.c) takes its blck/bytes columns from here, the
 * decoders (wf_decode.c, wf_decode_x86.c) their field offsets, and
 * tests/unit/check_types.c holds both to ggml's numbers.  "f16" is an IEEE
 * half, "e8m0"/"ue4m3" the FP4 types' scale bytes; arrays are of bytes
 * unless an element type is given.
 */
#ifndef WF_BLOCKS_H
#define WF_BLOCKS_H

/* Weights per k-quant / i-quant super-block (ggml's QK_K). */
#define WF_QK_K 256

/* Fields A, B, ... of block T tile it: A at 0, each next one where the one
 * before ends, the last ending at WF_T_BYTES. */
#define WF_BLK_END(T, F) (WF_##T##_##F + WF_##T##_##F##_LEN)
#define WF_BLK_MSG(T) #T ": fields must tile the block"
#define WF_BLOCK2(T, A, B) \
	_Static_assert(WF_##T##_##A == 0 && WF_BLK_END(T, A) == WF_##T##_##B && \
		       WF_BLK_END(T, B) == WF_##T##_BYTES, WF_BLK_MSG(T))
#define WF_BLOCK3(T, A, B, C) \
	_Static_assert(WF_##T##_##A == 0 && WF_BLK_END(T, A) == WF_##T##_##B && \
		       WF_BLK_END(T, B) == WF_##T##_##C && \
		       WF_BLK_END(T, C) == WF_##T##_BYTES, WF_BLK_MSG(T))
#define WF_BLOCK4(T, A, B, C, D) \
	_Static_assert(WF_##T##_##A == 0 && WF_BLK_END(T, A) == WF_##T##_##B && \
		       WF_BLK_END(T, B) == WF_##T##_##C && WF_BLK_END(T, C) == WF_##T##_##D && \
		       WF_BLK_END(T, D) == WF_##T##_BYTES, WF_BLK_MSG(T))
#define WF_BLOCK5(T, A, B, C, D, E) \
	_Static_assert(WF_##T##_##A == 0 && WF_BLK_END(T, A) == WF_##T##_##B && \
		       WF_BLK_END(T, B) == WF_##T##_##C && WF_BLK_END(T, C) == WF_##T##_##D && \
		       WF_BLK_END(T, D) == WF_##T##_##E && \
		       WF_BLK_END(T, E) == WF_##T##_BYTES, WF_BLK_MSG(T))

/* --- legacy 32-weight quants -------------------------------------------- */

/* Q4_0: d f16 | qs[16] (nibbles: low = weight j, high = j + 16): 32 weights */
#define WF_Q4_0_BLCK       32
#define WF_Q4_0_BYTES      18
#define WF_Q4_0_D          0
#define WF_Q4_0_D_LEN      2
#define WF_Q4_0_QS         2
#define WF_Q4_0_QS_LEN     (WF_Q4_0_BLCK / 2)
WF_BLOCK2(Q4_0, D, QS);

/* Q4_1: d f16 | m f16 | qs[16]: 32 weights */
#define WF_Q4_1_BLCK       32
#define WF_Q4_1_BYTES      20
#define WF_Q4_1_D          0
#define WF_Q4_1_D_LEN      2
#define WF_Q4_1_M          2
#define WF_Q4_1_M_LEN      2
#define WF_Q4_1_QS         4
#define WF_Q4_1_QS_LEN     (WF_Q4_1_BLCK / 2)
WF_BLOCK3(Q4_1, D, M, QS);

/* Q5_0: d f16 | qh[4] (u32 le, 5th bits) | qs[16]: 32 weights */
#define WF_Q5_0_BLCK       32
#define WF_Q5_0_BYTES      22
#define WF_Q5_0_D          0
#define WF_Q5_0_D_LEN      2
#define WF_Q5_0_QH         2
#define WF_Q5_0_QH_LEN     4
#define WF_Q5_0_QS         6
#define WF_Q5_0_QS_LEN     (WF_Q5_0_BLCK / 2)
WF_BLOCK3(Q5_0, D, QH, QS);

/* Q5_1: d f16 | m f16 | qh[4] (u32 le) | qs[16]: 32 weights */
#define WF_Q5_1_BLCK       32
#define WF_Q5_1_BYTES      24
#define WF_Q5_1_D          0
#define WF_Q5_1_D_LEN      2
#define WF_Q5_1_M          2
#define WF_Q5_1_M_LEN      2
#define WF_Q5_1_QH         4
#define WF_Q5_1_QH_LEN     4
#define WF_Q5_1_QS         8
#define WF_Q5_1_QS_LEN     (WF_Q5_1_BLCK / 2)
WF_BLOCK4(Q5_1, D, M, QH, QS);

/* Q8_0: d f16 | qs[32] int8: 32 weights */
#define WF_Q8_0_BLCK       32
#define WF_Q8_0_BYTES      34
#define WF_Q8_0_D          0
#define WF_Q8_0_D_LEN      2
#define WF_Q8_0_QS         2
#define WF_Q8_0_QS_LEN     WF_Q8_0_BLCK
WF_BLOCK2(Q8_0, D, QS);

/* Q8_1: d f16 | s f16 (d * sum(qs)) | qs[32] int8: 32 weights */
#define WF_Q8_1_BLCK       32
#define WF_Q8_1_BYTES      36
#define WF_Q8_1_D          0
#define WF_Q8_1_D_LEN      2
#define WF_Q8_1_S          2
#define WF_Q8_1_S_LEN      2
#define WF_Q8_1_QS         4
#define WF_Q8_1_QS_LEN     WF_Q8_1_BLCK
WF_BLOCK3(Q8_1, D, S, QS);

/* --- k-quants (256-weight super-blocks) ---------------------------------- */

/* Q2_K: scales[16] (4-bit scale | 4-bit min) | qs[64] | d f16 | dmin f16: 256 weights */
#define WF_Q2_K_BLCK       WF_QK_K
#define WF_Q2_K_BYTES      84
#define WF_Q2_K_SCALES     0
#define WF_Q2_K_SCALES_LEN (WF_QK_K / 16)
#define WF_Q2_K_QS         16
#define WF_Q2_K_QS_LEN     (WF_QK_K / 4)
#define WF_Q2_K_D          80
#define WF_Q2_K_D_LEN      2
#define WF_Q2_K_DMIN       82
#define WF_Q2_K_DMIN_LEN   2
WF_BLOCK4(Q2_K, SCALES, QS, D, DMIN);

/* Q3_K: hmask[32] | qs[64] | scales[12] (16 x 6 bits) | d f16: 256 weights */
#define WF_Q3_K_BLCK       WF_QK_K
#define WF_Q3_K_BYTES      110
#define WF_Q3_K_HMASK      0
#define WF_Q3_K_HMASK_LEN  (WF_QK_K / 8)
#define WF_Q3_K_QS         32
#define WF_Q3_K_QS_LEN     (WF_QK_K / 4)
#define WF_Q3_K_SCALES     96
#define WF_Q3_K_SCALES_LEN 12
#define WF_Q3_K_D          108
#define WF_Q3_K_D_LEN      2
WF_BLOCK4(Q3_K, HMASK, QS, SCALES, D);

/* Q4_K: d f16 | dmin f16 | scales[12] (8 x 6-bit scale and min) | qs[128]: 256 weights */
#define WF_Q4_K_BLCK       WF_QK_K
#define WF_Q4_K_BYTES      144
#define WF_Q4_K_D          0
#define WF_Q4_K_D_LEN      2
#define WF_Q4_K_DMIN       2
#define WF_Q4_K_DMIN_LEN   2
#define WF_Q4_K_SCALES     4
#define WF_Q4_K_SCALES_LEN 12
#define WF_Q4_K_QS         16
#define WF_Q4_K_QS_LEN     (WF_QK_K / 2)
WF_BLOCK4(Q4_K, D, DMIN, SCALES, QS);

/* Q5_K: d f16 | dmin f16 | scales[12] | qh[32] | qs[128]: 256 weights */
#define WF_Q5_K_BLCK       WF_QK_K
#define WF_Q5_K_BYTES      176
#define WF_Q5_K_D          0
#define WF_Q5_K_D_LEN      2
#define WF_Q5_K_DMIN       2
#define WF_Q5_K_DMIN_LEN   2
#define WF_Q5_K_SCALES     4
#define WF_Q5_K_SCALES_LEN 12
#define WF_Q5_K_QH         16
#define WF_Q5_K_QH_LEN     (WF_QK_K / 8)
#define WF_Q5_K_QS         48
#define WF_Q5_K_QS_LEN     (WF_QK_K / 2)
WF_BLOCK5(Q5_K, D, DMIN, SCALES, QH, QS);

/* Q6_K: ql[128] (low 4 bits) | qh[64] (high 2 bits) | scales[16] int8 | d f16: 256 weights */
#define WF_Q6_K_BLCK       WF_QK_K
#define WF_Q6_K_BYTES      210
#define WF_Q6_K_QL         0
#define WF_Q6_K_QL_LEN     (WF_QK_K / 2)
#define WF_Q6_K_QH         128
#define WF_Q6_K_QH_LEN     (WF_QK_K / 4)
#define WF_Q6_K_SCALES     192
#define WF_Q6_K_SCALES_LEN (WF_QK_K / 16)
#define WF_Q6_K_D          208
#define WF_Q6_K_D_LEN      2
WF_BLOCK4(Q6_K, QL, QH, SCALES, D);

/* Q8_K: d f32 | qs[256] int8 | bsums[16] int16 (unused here): 256 weights */
#define WF_Q8_K_BLCK       WF_QK_K
#define WF_Q8_K_BYTES      292
#define WF_Q8_K_D          0
#define WF_Q8_K_D_LEN      4
#define WF_Q8_K_QS         4
#define WF_Q8_K_QS_LEN     WF_QK_K
#define WF_Q8_K_BSUMS      260
#define WF_Q8_K_BSUMS_LEN  (WF_QK_K / 16 * 2)
WF_BLOCK3(Q8_K, D, QS, BSUMS);

/* --- i-quants (256 weights, 8 sub-blocks of 32) --------------------------- */

/* IQ2_XXS: d f16 | qs[64] (8 x: 4 grid bytes, u32 le 4 x 7 sign bits | scale): 256 weights */
#define WF_IQ2_XXS_BLCK    WF_QK_K
#define WF_IQ2_XXS_BYTES   66
#define WF_IQ2_XXS_D       0
#define WF_IQ2_XXS_D_LEN   2
#define WF_IQ2_XXS_QS      2
#define WF_IQ2_XXS_QS_LEN  (WF_QK_K / 8 * 2)
WF_BLOCK2(IQ2_XXS, D, QS);

/* IQ2_XS: d f16 | qs[32] u16 le (9-bit grid | 7 sign bits) | scales[8]: 256 weights */
#define WF_IQ2_XS_BLCK       WF_QK_K
#define WF_IQ2_XS_BYTES      74
#define WF_IQ2_XS_D          0
#define WF_IQ2_XS_D_LEN      2
#define WF_IQ2_XS_QS         2
#define WF_IQ2_XS_QS_LEN     (WF_QK_K / 8 * 2)
#define WF_IQ2_XS_SCALES     66
#define WF_IQ2_XS_SCALES_LEN (WF_QK_K / 32)
WF_BLOCK3(IQ2_XS, D, QS, SCALES);

/* IQ2_S: d f16 | qs[32] (grid low bits) | signs[32] | qh[8] | scales[8]: 256 weights
 * (ggml's qs[QK_K/4] holds both qs and signs) */
#define WF_IQ2_S_BLCK        WF_QK_K
#define WF_IQ2_S_BYTES       82
#define WF_IQ2_S_D           0
#define WF_IQ2_S_D_LEN       2
#define WF_IQ2_S_QS          2
#define WF_IQ2_S_QS_LEN      (WF_QK_K / 8)
#define WF_IQ2_S_SIGNS       34
#define WF_IQ2_S_SIGNS_LEN   (WF_QK_K / 8)
#define WF_IQ2_S_QH          66
#define WF_IQ2_S_QH_LEN      (WF_QK_K / 32)
#define WF_IQ2_S_SCALES      74
#define WF_IQ2_S_SCALES_LEN  (WF_QK_K / 32)
WF_BLOCK5(IQ2_S, D, QS, SIGNS, QH, SCALES);

/* IQ3_XXS: d f16 | qs[64] (grid) | sas[32] (8 u32 le: 4 x 7 sign bits | scale): 256 weights
 * (ggml's qs[3*QK_K/8] holds both qs and sas) */
#define WF_IQ3_XXS_BLCK      WF_QK_K
#define WF_IQ3_XXS_BYTES     98
#define WF_IQ3_XXS_D         0
#define WF_IQ3_XXS_D_LEN     2
#define WF_IQ3_XXS_QS        2
#define WF_IQ3_XXS_QS_LEN    (WF_QK_K / 4)
#define WF_IQ3_XXS_SAS       66
#define WF_IQ3_XXS_SAS_LEN   (WF_QK_K / 8)
WF_BLOCK3(IQ3_XXS, D, QS, SAS);

/* IQ3_S: d f16 | qs[64] | qh[8] | signs[32] | scales[4] (two 4-bit): 256 weights */
#define WF_IQ3_S_BLCK        WF_QK_K
#define WF_IQ3_S_BYTES       110
#define WF_IQ3_S_D           0
#define WF_IQ3_S_D_LEN       2
#define WF_IQ3_S_QS          2
#define WF_IQ3_S_QS_LEN      (WF_QK_K / 4)
#define WF_IQ3_S_QH          66
#define WF_IQ3_S_QH_LEN      (WF_QK_K / 32)
#define WF_IQ3_S_SIGNS       74
#define WF_IQ3_S_SIGNS_LEN   (WF_QK_K / 8)
#define WF_IQ3_S_SCALES      106
#define WF_IQ3_S_SCALES_LEN  (WF_QK_K / 64)
WF_BLOCK5(IQ3_S, D, QS, QH, SIGNS, SCALES);

/* IQ1_S: d f16 | qs[32] | qh[8] u16 le (grid high bits, scale, delta sign): 256 weights */
#define WF_IQ1_S_BLCK        WF_QK_K
#define WF_IQ1_S_BYTES       50
#define WF_IQ1_S_D           0
#define WF_IQ1_S_D_LEN       2
#define WF_IQ1_S_QS          2
#define WF_IQ1_S_QS_LEN      (WF_QK_K / 8)
#define WF_IQ1_S_QH          34
#define WF_IQ1_S_QH_LEN      (WF_QK_K / 32 * 2)
WF_BLOCK3(IQ1_S, D, QS, QH);

/* IQ1_M: qs[32] | qh[16] | scales[8] (4 u16 le; their top nibbles are d f16): 256 weights */
#define WF_IQ1_M_BLCK        WF_QK_K
#define WF_IQ1_M_BYTES       56
#define WF_IQ1_M_QS          0
#define WF_IQ1_M_QS_LEN      (WF_QK_K / 8)
#define WF_IQ1_M_QH          32
#define WF_IQ1_M_QH_LEN      (WF_QK_K / 16)
#define WF_IQ1_M_SCALES      48
#define WF_IQ1_M_SCALES_LEN  (WF_QK_K / 32)
WF_BLOCK3(IQ1_M, QS, QH, SCALES);

/* IQ4_NL: d f16 | qs[16] (nibbles index kvalues_iq4nl): 32 weights */
#define WF_IQ4_NL_BLCK       32
#define WF_IQ4_NL_BYTES      18
#define WF_IQ4_NL_D          0
#define WF_IQ4_NL_D_LEN      2
#define WF_IQ4_NL_QS         2
#define WF_IQ4_NL_QS_LEN     (WF_IQ4_NL_BLCK / 2)
WF_BLOCK2(IQ4_NL, D, QS);

/* IQ4_XS: d f16 | scales_h u16 le | scales_l[4] | qs[128]: 256 weights */
#define WF_IQ4_XS_BLCK         WF_QK_K
#define WF_IQ4_XS_BYTES        136
#define WF_IQ4_XS_D            0
#define WF_IQ4_XS_D_LEN        2
#define WF_IQ4_XS_SCALES_H     2
#define WF_IQ4_XS_SCALES_H_LEN 2
#define WF_IQ4_XS_SCALES_L     4
#define WF_IQ4_XS_SCALES_L_LEN (WF_QK_K / 64)
#define WF_IQ4_XS_QS           8
#define WF_IQ4_XS_QS_LEN       (WF_QK_K / 2)
WF_BLOCK4(IQ4_XS, D, SCALES_H, SCALES_L, QS);

/* --- ternary, FP4, 1- and 2-bit ------------------------------------------ */

/* TQ1_0: qs[48] (5 trits a byte) | qh[4] (4 trits a byte) | d f16: 256 weights */
#define WF_TQ1_0_BLCK        WF_QK_K
#define WF_TQ1_0_BYTES       54
#define WF_TQ1_0_QS          0
#define WF_TQ1_0_QS_LEN      ((WF_QK_K - 4 * WF_QK_K / 64) / 5)
#define WF_TQ1_0_QH          48
#define WF_TQ1_0_QH_LEN      (WF_QK_K / 64)
#define WF_TQ1_0_D           52
#define WF_TQ1_0_D_LEN       2
WF_BLOCK3(TQ1_0, QS, QH, D);

/* TQ2_0: qs[64] (2 bits a weight) | d f16: 256 weights */
#define WF_TQ2_0_BLCK        WF_QK_K
#define WF_TQ2_0_BYTES       66
#define WF_TQ2_0_QS          0
#define WF_TQ2_0_QS_LEN      (WF_QK_K / 4)
#define WF_TQ2_0_D           64
#define WF_TQ2_0_D_LEN       2
WF_BLOCK2(TQ2_0, QS, D);

/* MXFP4: e e8m0 | qs[16] (fp4 nibbles): 32 weights */
#define WF_MXFP4_BLCK        32
#define WF_MXFP4_BYTES       17
#define WF_MXFP4_E           0
#define WF_MXFP4_E_LEN       1
#define WF_MXFP4_QS          1
#define WF_MXFP4_QS_LEN      (WF_MXFP4_BLCK / 2)
WF_BLOCK2(MXFP4, E, QS);

/* NVFP4: d[4] ue4m3 (one per 16 weights) | qs[32] (fp4 nibbles): 64 weights */
#define WF_NVFP4_BLCK        64
#define WF_NVFP4_BYTES       36
#define WF_NVFP4_D           0
#define WF_NVFP4_D_LEN       (WF_NVFP4_BLCK / 16)
#define WF_NVFP4_QS          4
#define WF_NVFP4_QS_LEN      (WF_NVFP4_BLCK / 2)
WF_BLOCK2(NVFP4, D, QS);

/* Q1_0: d f16 | qs[16] (1 bit a weight): 128 weights */
#define WF_Q1_0_BLCK         128
#define WF_Q1_0_BYTES        18
#define WF_Q1_0_D            0
#define WF_Q1_0_D_LEN        2
#define WF_Q1_0_QS           2
#define WF_Q1_0_QS_LEN       (WF_Q1_0_BLCK / 8)
WF_BLOCK2(Q1_0, D, QS);

/* Q2_0: d f16 | qs[16] (2 bits a weight): 64 weights */
#define WF_Q2_0_BLCK         64
#define WF_Q2_0_BYTES        18
#define WF_Q2_0_D            0
#define WF_Q2_0_D_LEN        2
#define WF_Q2_0_QS           2
#define WF_Q2_0_QS_LEN       (WF_Q2_0_BLCK / 4)
WF_BLOCK2(Q2_0, D, QS);

#endif
