/* wf_sha.c - digests through libcrypto's EVP interface (wf_sha.h). */
#include "mount/wf_sha.h"

#include <openssl/evp.h>
#include <stdlib.h>

struct wf_sha {
	EVP_MD_CTX *ctx;
	const EVP_MD *md;
};

struct wf_sha *wf_sha_new(enum wf_sha_kind k)
{
	struct wf_sha *s = calloc(1, sizeof *s);
	if (!s)
		return NULL;
	s->md = k == WF_SHA1 ? EVP_sha1() : EVP_sha256();
	s->ctx = EVP_MD_CTX_new();
	if (!s->ctx || EVP_DigestInit_ex(s->ctx, s->md, NULL) != 1) {
		wf_sha_free(s);
		return NULL;
	}
	return s;
}

bool wf_sha_update(struct wf_sha *s, const void *p, size_t n)
{
	return n == 0 || EVP_DigestUpdate(s->ctx, p, n) == 1;
}

bool wf_sha_final(struct wf_sha *s, uint8_t *out)
{
	unsigned int len = 0;
	bool ok = EVP_DigestFinal_ex(s->ctx, out, &len) == 1;
	return EVP_DigestInit_ex(s->ctx, s->md, NULL) == 1 && ok;
}

void wf_sha_free(struct wf_sha *s)
{
	if (!s)
		return;
	EVP_MD_CTX_free(s->ctx);
	free(s);
}

void wf_sha_hex(const uint8_t *d, size_t n, char *out)
{
	static const char digits[] = "0123456789abcdef";
	for (size_t i = 0; i < n; i++) {
		out[2 * i] = digits[d[i] >> 4];
		out[2 * i + 1] = digits[d[i] & 15];
	}
	out[2 * n] = '\0';
}

static int nibble(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

bool wf_sha_unhex(const char *hex, size_t n, uint8_t *d)
{
	for (size_t i = 0; i < n; i++) {
		int hi = nibble(hex[2 * i]), lo = hi < 0 ? -1 : nibble(hex[2 * i + 1]);
		if (lo < 0)
			return false;
		d[i] = (uint8_t)(hi << 4 | lo);
	}
	return true;
}
