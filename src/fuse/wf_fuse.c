/* wf_fuse.c - FUSE low-level operations over a wf_tree.
 *
 * Inode numbers are node indices + 1 and never change, the tree is
 * immutable, so entries and attributes are cached for a long time,
 * negative lookups too, file contents are kept across opens (keep_cache),
 * and forget has nothing to free.
 */
#include "fuse/wf_fuse.h"
#include "mount/wf_files.h"
#include "mount/wf_attr.h"
#include "base/wf_buf.h"
#include "mount/wf_usage.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/statvfs.h>

#define BLKSIZE (1u << 20) /* st_blksize: invites 1 MiB reads (cat, Python) */
/* st_blksize of a .npy file (-o npy): Python buffers reads in st_blksize
 * units, so np.load(path, mmap_mode="r") reading the 64-byte header would
 * otherwise decode 1 MiB of data it never looks at.  np.load without mmap
 * reads the data in one call, whatever this says. */
#define NPY_BLKSIZE 4096u

static struct wf_fs *fs_of(fuse_req_t req)
{
	return fuse_req_userdata(req);
}

static uint32_t node_of(const struct wf_fs *fs, fuse_ino_t ino)
{
	if (ino == 0 || ino > fs->t->n_nodes)
		return WF_NO_NODE;
	return (uint32_t)(ino - 1);
}

static void fill_stat(const struct wf_fs *fs, uint32_t idx, struct stat *st)
{
	const struct wf_node *nd = &fs->t->nodes[idx];
	memset(st, 0, sizeof *st);
	st->st_ino = (ino_t)idx + 1;
	struct wf_perm pm = {.uid = fs->uid, .gid = fs->gid, .mode = nd->kind == WF_NODE_DIR ? 0555 : 0444};
	if (fs->perms)
		pm = wf_perm_node(fs->perms, idx);
	st->st_uid = pm.uid;
	st->st_gid = pm.gid;
	st->st_blksize = nd->kind == WF_NODE_TENSOR && fs->t->npy ? NPY_BLKSIZE : BLKSIZE;
	/* a tensor shows its own file's times; the rest the first file's */
	const struct stat *src = &fs->m->parts[nd->kind == WF_NODE_TENSOR ? fs->m->tensors[nd->tensor].part : 0].st;
	st->st_atim = src->st_atim;
	st->st_mtim = src->st_mtim;
	st->st_ctim = src->st_ctim;
	if (nd->kind == WF_NODE_DIR) {
		st->st_mode = S_IFDIR | pm.mode;
		st->st_nlink = 2 + nd->n_subdirs;
	} else {
		st->st_mode = S_IFREG | pm.mode;
		st->st_nlink = 1;
	}
	st->st_size = (off_t)wf_usage_size(fs->t, idx);
	st->st_blocks = (blkcnt_t)wf_usage_blocks(fs->t, idx);
}

static void fill_entry(const struct wf_fs *fs, uint32_t idx, struct fuse_entry_param *e)
{
	memset(e, 0, sizeof *e);
	e->ino = (fuse_ino_t)idx + 1;
	e->generation = 1;
	e->attr_timeout = fs->timeout;
	e->entry_timeout = fs->timeout;
	fill_stat(fs, idx, &e->attr);
}

static void op_init(void *userdata, struct fuse_conn_info *conn)
{
	(void)userdata;
	/* Large kernel readahead helps sequential readers; the kernel caps it
	 * at the bdi's read_ahead_kb. */
	conn->max_readahead = 1u << 20;
	/* Splicing replies (vmsplice of our buffers) measured no faster and
	 * sometimes slower than writev here (docs/performance.md). */
	if (conn->capable & FUSE_CAP_SPLICE_WRITE)
		conn->want &= ~(unsigned)FUSE_CAP_SPLICE_WRITE;
	if (conn->capable & FUSE_CAP_EXPORT_SUPPORT)
		conn->want |= FUSE_CAP_EXPORT_SUPPORT;
}

static void op_lookup(fuse_req_t req, fuse_ino_t parent, const char *name)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t dir = node_of(fs, parent);
	if (dir == WF_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	uint32_t n = wf_tree_lookup(fs->t, dir, name, strlen(name));
	struct fuse_entry_param e;
	if (n == WF_NO_NODE) {
		/* ino 0 caches the negative answer as long as a positive one */
		memset(&e, 0, sizeof e);
		e.entry_timeout = fs->timeout;
		fuse_reply_entry(req, &e);
		return;
	}
	fill_entry(fs, n, &e);
	fuse_reply_entry(req, &e);
}

static void op_getattr(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	(void)fi;
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	if (n == WF_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	struct stat st;
	fill_stat(fs, n, &st);
	fuse_reply_attr(req, &st, fs->timeout);
}

static void op_opendir(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	if (n == WF_NO_NODE)
		fuse_reply_err(req, ENOENT);
	else if (fs->t->nodes[n].kind != WF_NODE_DIR)
		fuse_reply_err(req, ENOTDIR);
	else {
		fi->cache_readdir = 1;
		fi->keep_cache = 1;
		fuse_reply_open(req, fi);
	}
}

/* Offsets: 1 is ".", 2 is "..", 3 + i is child i; an entry's offset is
 * the offset of the entry after it. */
static void do_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, bool plus)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	if (n == WF_NO_NODE || fs->t->nodes[n].kind != WF_NODE_DIR) {
		fuse_reply_err(req, ENOTDIR);
		return;
	}
	const struct wf_node *dir = &fs->t->nodes[n];
	char *buf = malloc(size);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t used = 0;
	uint64_t total = 2 + (uint64_t)dir->n_children;
	for (uint64_t i = off < 0 ? 0 : (uint64_t)off; i < total; i++) {
		uint32_t idx;
		const char *name;
		if (i == 0)
			idx = n, name = ".";
		else if (i == 1)
			idx = dir->parent, name = "..";
		else
			idx = dir->children[i - 2], name = fs->t->nodes[idx].name;
		size_t got;
		if (plus) {
			struct fuse_entry_param e;
			fill_entry(fs, idx, &e);
			got = fuse_add_direntry_plus(req, buf + used, size - used, name, &e, (off_t)i + 1);
		} else {
			struct stat st = {.st_ino = (ino_t)idx + 1,
					  .st_mode = fs->t->nodes[idx].kind == WF_NODE_DIR ? S_IFDIR : S_IFREG};
			got = fuse_add_direntry(req, buf + used, size - used, name, &st, (off_t)i + 1);
		}
		if (got > size - used)
			break;
		used += got;
	}
	fuse_reply_buf(req, buf, used);
	free(buf);
}

static void op_readdir(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, false);
}

static void op_readdirplus(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	do_readdir(req, ino, size, off, true);
}

static void op_open(fuse_req_t req, fuse_ino_t ino, struct fuse_file_info *fi)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	if (n == WF_NO_NODE) {
		fuse_reply_err(req, ENOENT);
		return;
	}
	if (fs->t->nodes[n].kind == WF_NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if ((fi->flags & O_ACCMODE) != O_RDONLY || (fi->flags & O_TRUNC)) {
		fuse_reply_err(req, EROFS);
		return;
	}
	fi->keep_cache = 1; /* contents never change while mounted */
	fi->noflush = 1;
	fuse_reply_open(req, fi);
}

/* Each worker thread's reply buffer, kept between requests: a fresh
 * malloc of a 1 MiB request is an mmap, 256 page faults and an munmap
 * every time.  Freed when libfuse ends an idle worker. */
static pthread_key_t buf_key;
static pthread_once_t buf_once = PTHREAD_ONCE_INIT;
static bool buf_key_ok;

struct read_buf {
	size_t cap;
	char bytes[];
};

static void buf_key_init(void)
{
	buf_key_ok = pthread_key_create(&buf_key, free) == 0;
}

/* A buffer of at least size bytes for this thread, or NULL. */
static char *thread_buf(size_t size)
{
	pthread_once(&buf_once, buf_key_init);
	if (!buf_key_ok)
		return NULL;
	struct read_buf *b = pthread_getspecific(buf_key);
	if (b && b->cap >= size)
		return b->bytes;
	struct read_buf *nb = malloc(sizeof *nb + size);
	if (!nb || pthread_setspecific(buf_key, nb) != 0) {
		free(nb);
		return NULL;
	}
	free(b);
	nb->cap = size;
	return nb->bytes;
}

static void op_read(fuse_req_t req, fuse_ino_t ino, size_t size, off_t off, struct fuse_file_info *fi)
{
	(void)fi;
	struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	if (n == WF_NO_NODE || off < 0) {
		fuse_reply_err(req, n == WF_NO_NODE ? ENOENT : EINVAL);
		return;
	}
	const struct wf_node *nd = &fs->t->nodes[n];
	if (nd->kind == WF_NODE_DIR) {
		fuse_reply_err(req, EISDIR);
		return;
	}
	if (nd->kind == WF_NODE_BLOB) { /* bytes in memory: no copy, nothing to check */
		uint64_t o = (uint64_t)off;
		size_t len = o >= nd->blob_len ? 0 : (size_t)(nd->blob_len - o < size ? nd->blob_len - o : size);
		fuse_reply_buf(req, len ? nd->blob + o : NULL, len);
		return;
	}
	/* Every byte is copied, raw views too: a reply straight from the
	 * mapping would go out before the file could be checked. */
	char *buf = thread_buf(size ? size : 1);
	if (!buf) {
		fuse_reply_err(req, ENOMEM);
		return;
	}
	size_t got = 0;
	if (wf_files_read(fs->t, fs->live, n, (uint64_t)off, size, buf, &got) != WF_OK)
		fuse_reply_err(req, EIO);
	else
		fuse_reply_buf(req, buf, got);
}

static void op_statfs(fuse_req_t req, fuse_ino_t ino)
{
	(void)ino;
	const struct wf_fs *fs = fs_of(req);
	struct wf_usage u;
	wf_usage_get(fs->t, &u);
	struct statvfs sv;
	memset(&sv, 0, sizeof sv); /* nothing free: f_bfree, f_bavail, f_ffree, f_favail 0 */
	sv.f_bsize = u.frsize;
	sv.f_frsize = u.frsize;
	sv.f_blocks = u.blocks;
	sv.f_files = u.files;
	sv.f_namemax = 255;
	sv.f_flag = ST_RDONLY | ST_NOSUID | ST_NODEV;
	fuse_reply_statfs(req, &sv);
}

static void reply_sized(fuse_req_t req, const char *data, size_t len, size_t size)
{
	if (size == 0)
		fuse_reply_xattr(req, len);
	else if (size < len)
		fuse_reply_err(req, ERANGE);
	else
		fuse_reply_buf(req, data, len);
}

static void op_getxattr(fuse_req_t req, fuse_ino_t ino, const char *name, size_t size)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	struct wf_buf b = {0};
	enum wf_err rc = n == WF_NO_NODE ? WF_ERR_RANGE
			 : strcmp(name, WF_XATTR_PREFIX "sha256") == 0 ? wf_xattr_sha256(fs->sums, fs->live, fs->t, n, &b, NULL)
			 : wf_xattr_get(fs->t, n, name, &b, NULL);
	if (rc == WF_OK)
		reply_sized(req, b.data ? b.data : "", b.len, size);
	else
		fuse_reply_err(req, rc == WF_ERR_NOMEM ? ENOMEM : rc == WF_ERR_RANGE ? ENODATA : EIO);
	wf_buf_free(&b);
}

static void op_listxattr(fuse_req_t req, fuse_ino_t ino, size_t size)
{
	const struct wf_fs *fs = fs_of(req);
	uint32_t n = node_of(fs, ino);
	size_t len = 0;
	const char *names = n == WF_NO_NODE ? "" : wf_xattr_list(fs->t, n, &len);
	reply_sized(req, names, len, size);
}

static void op_access(fuse_req_t req, fuse_ino_t ino, int mask)
{
	(void)ino;
	fuse_reply_err(req, (mask & W_OK) ? EROFS : 0);
}

/* Every change fails with EROFS, whatever the kernel lets through. */
static void op_setattr(fuse_req_t req, fuse_ino_t ino, struct stat *attr, int to_set, struct fuse_file_info *fi)
{
	(void)ino, (void)attr, (void)to_set, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_mknod(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode, dev_t rdev)
{
	(void)p, (void)name, (void)mode, (void)rdev;
	fuse_reply_err(req, EROFS);
}

static void op_mkdir(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode)
{
	(void)p, (void)name, (void)mode;
	fuse_reply_err(req, EROFS);
}

static void op_unlink(fuse_req_t req, fuse_ino_t p, const char *name)
{
	(void)p, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_symlink(fuse_req_t req, const char *link, fuse_ino_t p, const char *name)
{
	(void)link, (void)p, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_rename(fuse_req_t req, fuse_ino_t p, const char *name, fuse_ino_t np, const char *nn,
		      unsigned int flags)
{
	(void)p, (void)name, (void)np, (void)nn, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_link(fuse_req_t req, fuse_ino_t ino, fuse_ino_t np, const char *nn)
{
	(void)ino, (void)np, (void)nn;
	fuse_reply_err(req, EROFS);
}

static void op_write(fuse_req_t req, fuse_ino_t ino, const char *buf, size_t size, off_t off,
		     struct fuse_file_info *fi)
{
	(void)ino, (void)buf, (void)size, (void)off, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_create(fuse_req_t req, fuse_ino_t p, const char *name, mode_t mode, struct fuse_file_info *fi)
{
	(void)p, (void)name, (void)mode, (void)fi;
	fuse_reply_err(req, EROFS);
}

static void op_setxattr(fuse_req_t req, fuse_ino_t ino, const char *name, const char *value, size_t size,
			int flags)
{
	(void)ino, (void)name, (void)value, (void)size, (void)flags;
	fuse_reply_err(req, EROFS);
}

static void op_removexattr(fuse_req_t req, fuse_ino_t ino, const char *name)
{
	(void)ino, (void)name;
	fuse_reply_err(req, EROFS);
}

static void op_fallocate(fuse_req_t req, fuse_ino_t ino, int mode, off_t off, off_t len, struct fuse_file_info *fi)
{
	(void)ino, (void)mode, (void)off, (void)len, (void)fi;
	fuse_reply_err(req, EROFS);
}

const struct fuse_lowlevel_ops wf_fuse_ops = {
	.init = op_init,
	.lookup = op_lookup,
	.getattr = op_getattr,
	.opendir = op_opendir,
	.readdir = op_readdir,
	.readdirplus = op_readdirplus,
	.open = op_open,
	.read = op_read,
	.statfs = op_statfs,
	.getxattr = op_getxattr,
	.listxattr = op_listxattr,
	.access = op_access,
	.setattr = op_setattr,
	.mknod = op_mknod,
	.mkdir = op_mkdir,
	.unlink = op_unlink,
	.rmdir = op_unlink,
	.symlink = op_symlink,
	.rename = op_rename,
	.link = op_link,
	.write = op_write,
	.create = op_create,
	.setxattr = op_setxattr,
	.removexattr = op_removexattr,
	.fallocate = op_fallocate,
};
