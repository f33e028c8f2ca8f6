/* wf_sha.h - SHA-256 and SHA-1 through OpenSSL's libcrypto (EVP), which
 * picks the CPU's SHA extensions (SHA-NI) when it has them.
 *
 * It sits in the mount layer, not in base, because base goes into
 * libweightfs.so and the library links no more than cJSON, libm and
 * pthreads: digests serve only the program (verify, and the mount's
 * user.weightfs.sha256 attribute), which links libcrypto as it links
 * zlib for the previews.
 */
#ifndef WF_SHA_H
#define WF_SHA_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WF_SHA256_LEN 32
#define WF_SHA1_LEN 20

enum wf_sha_kind {
	WF_SHA256,
	WF_SHA1,   /* git's blob ids (a hub cache's small files) */
};

struct wf_sha;

/* A fresh digest of kind k; NULL when out of memory. */
struct wf_sha *wf_sha_new(enum wf_sha_kind k);

/* Adds n bytes at p; false when libcrypto fails (it does not, short of
 * memory). */
bool wf_sha_update(struct wf_sha *s, const void *p, size_t n);

/* Writes the digest (WF_SHA256_LEN or WF_SHA1_LEN bytes) into out and
 * starts s over for another message of the same kind; false on failure. */
bool wf_sha_final(struct wf_sha *s, uint8_t *out);

/* Frees s; safe on NULL. */
void wf_sha_free(struct wf_sha *s);

/* n digest bytes as 2n lowercase hex digits and a NUL into out. */
void wf_sha_hex(const uint8_t *d, size_t n, char *out);

/* Reads 2n hex digits (either case) of hex into d; false if any is none. */
bool wf_sha_unhex(const char *hex, size_t n, uint8_t *d);

#endif
