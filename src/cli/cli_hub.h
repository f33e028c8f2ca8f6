/* cli_hub.h - a Hugging Face hub cache as weightfs verify sees it
 * (cli_hub.c): its blobs, the snapshot links to them, refs/main.  Called
 * by verify (cli_verify.c), never calling it: what it finds goes into
 * verify's lists (cli_vstate.h).  Private to src/cli. */
#ifndef CLI_HUB_H
#define CLI_HUB_H

#include "cli/cli_vstate.h"

#include <stdbool.h>
#include <stddef.h>

/* A hub cache: its blobs and what links to them. */
struct v_blob {
	char *name;           /* the blob's file name: 64 hex digits (LFS, SHA-256) or 40 (git SHA-1) */
	char *path;           /* root/blobs/name, resolved */
	char *link;           /* the first snapshot link to it, "REV/PATH", or NULL */
	size_t job;           /* its digest's job, or SIZE_MAX (no name a digest can be checked against) */
	enum v_sev verdict;   /* after v_hub_judge: V_NOTE (matches), V_DIFFERS or V_TROUBLE (unread) */
};

struct v_hub {
	char *root;           /* the models--ORG--NAME folder, resolved */
	char *snap;           /* the one snapshot checked (MODEL was a snapshot folder), or NULL: all */
	struct v_blob *blobs;
	size_t n_blobs, cap_blobs;
	size_t n_links;       /* snapshot links seen */
	size_t n_unfinished;  /* *.incomplete blobs: downloads that did not finish */
	/* Not a cache but a remote source's files, each "blob" named by the
	 * digest the source's listing gives it (v_hub_listed), link its name
	 * in the source: who lists them ("the Hub"), else NULL. */
	const char *listed;
};

/* Whether MODEL `path` is a hub cache's models--ORG--NAME folder (with
 * blobs/ and snapshots/ in it) or one of its snapshots/REV folders; if so
 * fills h (root, snap) and returns true. */
bool v_hub_detect(const char *path, struct v_hub *h);

/* Walks the snapshot links (every snapshot, or h->snap's), noting a link
 * that leads nowhere or out of blobs/ and a refs/main naming no snapshot,
 * and adds a digest job for every blob (all of blobs/ for the whole cache,
 * the linked ones for a snapshot).  Returns false when out of memory. */
bool v_hub_scan(struct v_hub *h, struct v_state *st);

/* A file of a remote source (h->listed set): at path, named rel in the
 * source, listed with digest hex (64 hex digits: SHA-256; 40: git blob
 * id), hashed by job (of that kind).  False when out of memory. */
bool v_hub_listed(struct v_hub *h, const char *rel, const char *path, const char *hex, size_t job);

/* After the jobs ran: each blob's digest against its name (each file's
 * against its listed digest), its verdict set. */
void v_hub_judge(struct v_hub *h, struct v_state *st);

/* The blob whose resolved path is `path`, or NULL. */
const struct v_blob *v_hub_blob(const struct v_hub *h, const char *path);

void v_hub_free(struct v_hub *h);

#endif
