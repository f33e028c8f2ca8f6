/* wf_hfq_simd.h - the decoder a read of a quantized layer uses: a SIMD twin
 * of its scheme's scalar decoder (wf_hfq_x86.c) when the CPU has one and
 * SIMD is on, else the scalar one (wf_hfq.c, the reference).
 *
 * A twin writes exactly what the scalar decoder writes, bit for bit, for
 * every (row, col, n) the scalar one accepts; tests/unit/check_hfq_simd.c
 * holds them to that.
 */
#ifndef WF_HFQ_SIMD_H
#define WF_HFQ_SIMD_H

#include <stddef.h>
#include <stdint.h>

struct wf_hfq; /* wf_hfq.h */

typedef void (*wf_hfq_decode_fn)(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst);

/* The SIMD twin of q's decoder for q's scheme and parameters, or NULL when
 * there is none (other CPU, a scheme or bit width without one).  It does
 * not look at wf_simd_active(): tests call it to compare both paths. */
wf_hfq_decode_fn wf_hfq_simd_decoder(const struct wf_hfq *q);

/* The decoder reads of q use: wf_hfq_simd_decoder(q) when wf_simd_active()
 * (WEIGHTFS_NO_SIMD, wf_simd_set) and it is not NULL, else the scheme
 * table's scalar decoder.  q's scheme must be valid. */
wf_hfq_decode_fn wf_hfq_decoder(const struct wf_hfq *q);

/* Rows [row, row+8) x inputs [col, col+n) of q, row r to dst + r * ld:
 * for the schemes whose packed words run across the outputs (GPTQ, AWQ),
 * where one load serves 8 rows.  Same values as 8 calls of the decoder. */
typedef void (*wf_hfq_rows8_fn)(const struct wf_hfq *q, uint64_t row, uint64_t col, size_t n, float *dst,
				size_t ld);

/* The 8-row decoder for rows [row, row+8) of q, or NULL: SIMD off or
 * absent, a scheme without one, fewer than 8 rows left, or (AWQ) row not
 * at the start of a word column. */
wf_hfq_rows8_fn wf_hfq_rows8_decoder(const struct wf_hfq *q, uint64_t row);

/* Decodes whole rows from row (at most nrows of them) as float32 into
 * dst (row-major, q->in per row) with the 8-row decoders, in the order
 * that reads qweight's cache lines fewest times (AWQ: bands of up to 64
 * rows, walked 256 inputs at a time); returns the rows done, a multiple
 * of 8, or 0 when it has no 8-row decoder there (then decode otherwise). */
uint64_t wf_hfq_rows_f32(const struct wf_hfq *q, uint64_t row, uint64_t nrows, float *dst);

#endif
