/* wf_maps.h - a bounded pool of live mappings, for models of many parts.
 *
 * A process may hold at most vm.max_map_count mappings (65,530 by
 * default), and every part mapped for the model's life would spend one
 * each: a set of 70,000 shards could not open.  A model of more parts
 * than the pool holds (wf_maps_cap) therefore keeps none mapped once its
 * headers are parsed; a read maps its part on first use (wf_maps_get),
 * through the descriptor the part kept, or by reopening its path and
 * requiring the very file that was opened (device, inode, size, mtime,
 * ctime: a replaced or changed file is refused, never read), and gives it
 * back when its bytes are copied (wf_maps_put).  Idle mappings stay until
 * the pool is full, then the least recently used goes.  A mapping in use
 * is never unmapped: when every live mapping is in use the pool maps one
 * more rather than wait, so it holds at most cap plus the reads in flight.
 * Evicted mappings are unmapped in batches of cap / 64 (1 to
 * WF_MAPS_DROP), by runs of adjacent ones (wf_unmap.h): one munmap (a TLB
 * flush on every CPU) per eviction is the price of reading many parts.  Up to a batch
 * less one stays mapped, unused, until the batch fills or the model closes.
 * A model of at most cap parts never gets a pool: every part stays mapped
 * from open to close, and reads pay nothing for this file.
 */
#ifndef WF_MAPS_H
#define WF_MAPS_H

#include "base/wf_common.h"
#include "model/wf_part.h"

#include <stdint.h>

/* Live mappings a model keeps at most: WF_MAX_MAPS from the environment
 * (1 to 1,000,000, for tests), else WF_MAPS_DEFAULT or a quarter of
 * vm.max_map_count if that is less. */
#define WF_MAPS_DEFAULT 4096
/* Evicted mappings unmapped together at most (wf_maps.c). */
#define WF_MAPS_DROP 64
uint32_t wf_maps_cap(void);

struct wf_maps;

/* A pool over parts[0..n_parts) (whose mappings the caller has dropped:
 * data NULL) keeping at most cap idle mappings; NULL when out of memory. */
struct wf_maps *wf_maps_new(uint32_t n_parts, uint32_t cap);

/* The bytes of part `part` (parts[part].len of them) in *data, held until
 * wf_maps_put.  A part with data of its own (mapped for good, or a
 * buffer) is given as it is, and its put does nothing.  WF_ERR_CHANGED
 * when the file by that path is no longer the one opened, WF_ERR_IO or
 * WF_ERR_NOMEM when it cannot be opened or mapped now; err (may be NULL)
 * says which.  Safe from any thread; mp may be NULL (no pool). */
enum wf_err wf_maps_get(struct wf_maps *mp, const struct wf_part *parts, uint32_t part, const uint8_t **data,
			char *err);

/* Gives back what wf_maps_get gave. */
void wf_maps_put(struct wf_maps *mp, const struct wf_part *parts, uint32_t part);

/* Maps part p for the model's life (p->data, p->map), for the decoders
 * that keep pointers into its bytes (wf_hfq); nothing when it is mapped. */
enum wf_err wf_maps_pin(struct wf_part *p, char *err);

/* Mappings the pool holds now (in use and idle), for tests. */
uint32_t wf_maps_live(struct wf_maps *mp);

/* Unmaps what the pool holds; safe on NULL.  No read may be in flight. */
void wf_maps_free(struct wf_maps *mp, const struct wf_part *parts);

#endif
