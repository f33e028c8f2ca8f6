/* main.c - weightfs command line: validate the model completely, then
 * mount it.  Only this file prints and chooses exit codes. */
#include "cli/cli.h"
#include "fuse/wf_fuse.h"
#include "fuse/wf_limiter.h"
#include "fuse/wf_mnt.h"
#include "model/wf_model.h"
#include "arch/wf_arch.h"
#include "view/wf_prefetch.h"
#include "view/wf_view.h"
#include "model/wf_set.h"
#include "net/wf_source.h"
#include "mount/wf_attr.h"
#include "mount/wf_files.h"
#include "mount/wf_tree.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <time.h>
#include <unistd.h>

#ifndef WF_VERSION
#define WF_VERSION "0.1.0"
#endif

/* Exit codes: cli.h (documented in docs/weightfs.1). */

struct opts {
	char *model;       /* first non-option argument */
	char *mountpoint;  /* second, as typed (libfuse parses it too, after our checks) */
	int nonempty;      /* -o nonempty: mount over a directory's files (libfuse 3 has no such option) */
	int npy;           /* -o npy: tensor files are NAME.npy */
	int suffix;        /* -o suffix: tensor files are NAME.f32, NAME.i64, ... */
	int preview;       /* -o preview: NAME.png beside every tensor file */
	int help, version;
	int json;          /* --json: the commands' option, given to a mount by mistake */
	char *dtype;       /* -o dtype=f32|f16|bf16|stored */
	char *gguf;        /* -o gguf=auto|f32|f16|bf16: model.gguf's type */
	long ra_kb;        /* -o read_ahead_kb=N; -1: not given */
};

/* The mount's read-ahead unless -o read_ahead_kb= says otherwise.  The
 * kernel caps a FUSE mount's at 128 KiB, which makes every sequential
 * read a 128 KiB request.  At 512 KiB first reads measured 1.3-1.5x
 * faster, as fast as at 1 MiB; but an mmap fault reads the whole window
 * around it, so random page touches through np.memmap cost 1.5x (512)
 * and 1.8x (1 MiB) what they did at 128 (docs/performance.md).  Only
 * root can set it. */
#define RA_DEFAULT_KB 512
#define RA_MAX_KB 65536

enum { KEY_NONEMPTY = 1, KEY_DISCARD, KEY_DTYPE, KEY_RA, KEY_GGUF, KEY_REMOTE };

#define OPT(t, p) {t, offsetof(struct opts, p), 1}
static const struct fuse_opt wf_opts[] = {
	/* a key, not a template: a template would swallow the option */
	FUSE_OPT_KEY("dtype=", KEY_DTYPE),
	FUSE_OPT_KEY("read_ahead_kb=", KEY_RA),
	FUSE_OPT_KEY("gguf=", KEY_GGUF),
	FUSE_OPT_KEY("remote_chunk=", KEY_REMOTE),
	FUSE_OPT_KEY("remote_streams=", KEY_REMOTE),
	FUSE_OPT_KEY("remote_mem=", KEY_REMOTE),
	FUSE_OPT_KEY("cache=", KEY_REMOTE),
	FUSE_OPT_KEY("cache_size=", KEY_REMOTE),
	FUSE_OPT_KEY("offline", KEY_REMOTE),
	OPT("npy", npy),
	OPT("suffix", suffix),
	OPT("preview", preview),
	FUSE_OPT_KEY("nonempty", KEY_NONEMPTY),
	/* mount(8) passes rw unless an fstab line says ro: the mount is
	 * read-only whatever it is given (-o ro is always added), so rw is
	 * taken and means nothing */
	FUSE_OPT_KEY("rw", KEY_DISCARD),
	OPT("--json", json),
	/* mount(8)'s own options, which an /etc/fstab line may hold and
	 * mount.fuse3 may pass on: they mean nothing to a FUSE daemon, and
	 * libfuse would refuse them as unknown */
	FUSE_OPT_KEY("defaults", KEY_DISCARD),
	FUSE_OPT_KEY("auto", KEY_DISCARD),
	FUSE_OPT_KEY("noauto", KEY_DISCARD),
	FUSE_OPT_KEY("user", KEY_DISCARD),
	FUSE_OPT_KEY("nouser", KEY_DISCARD),
	FUSE_OPT_KEY("users", KEY_DISCARD),
	FUSE_OPT_KEY("owner", KEY_DISCARD),
	FUSE_OPT_KEY("group", KEY_DISCARD),
	FUSE_OPT_KEY("_netdev", KEY_DISCARD),
	FUSE_OPT_KEY("nofail", KEY_DISCARD),
	FUSE_OPT_KEY("comment=", KEY_DISCARD),
	OPT("-h", help),
	OPT("--help", help),
	OPT("-V", version),
	OPT("--version", version),
	FUSE_OPT_END
};

static int remote_opt(const char *arg)
{
	char msg[WF_ERRLEN];
	if (cli_remote_opt(arg, msg, sizeof msg) == 1)
		return 0;
	fprintf(stderr, "weightfs: %s\n", msg);
	return -1;
}

static int opt_proc(void *data, const char *arg, int key, struct fuse_args *outargs)
{
	(void)outargs;
	struct opts *o = data;
	if (key == KEY_NONEMPTY) {
		o->nonempty = 1;
		return 0; /* ours alone: libfuse 3 would refuse it as unknown */
	}
	if (key == KEY_DTYPE) {
		/* given twice, the values must agree: a mount whose files are
		 * not what one of its options says would be a trap */
		const char *v = arg + strlen("dtype=");
		if (o->dtype && strcmp(o->dtype, v) != 0) {
			fprintf(stderr, "weightfs: -o dtype=%s and dtype=%s contradict each other\n", o->dtype, v);
			return -1;
		}
		free(o->dtype);
		o->dtype = strdup(v);
		return o->dtype ? 0 : -1;
	}
	if (key == KEY_GGUF) {
		const char *v = arg + strlen("gguf=");
		uint32_t ft;
		if (!wf_arch_parse_ftype(v, &ft)) {
			fprintf(stderr, "weightfs: -o gguf=%s: not a type model.gguf is made in (auto, f32, f16, bf16, or a llama-quantize type: q8_0, q4_k_m, ...)\n",
				cli_path(v));
			return -1;
		}
		if (o->gguf && strcmp(o->gguf, v) != 0) {
			fprintf(stderr, "weightfs: -o gguf=%s and gguf=%s contradict each other\n", o->gguf, cli_path(v));
			return -1;
		}
		free(o->gguf);
		o->gguf = strdup(v);
		return o->gguf ? 0 : -1;
	}
	if (key == KEY_REMOTE)
		return remote_opt(arg);
	if (key == KEY_RA) {
		const char *v = arg + strlen("read_ahead_kb="), *end = v;
		errno = 0;
		long kb = *v >= '0' && *v <= '9' ? strtol(v, (char **)&end, 10) : -1;
		if (errno || *end || kb < 0 || kb > RA_MAX_KB) {
			fprintf(stderr, "weightfs: -o read_ahead_kb=%s: not a number of KiB from 0 to %d\n", cli_path(v),
				RA_MAX_KB);
			return -1;
		}
		o->ra_kb = kb;
		return 0;
	}
	/* x-systemd.automount and other x-* options are for mount(8) and systemd */
	if (key == KEY_DISCARD || (key == FUSE_OPT_KEY_OPT && strncmp(arg, "x-", 2) == 0))
		return 0;
	if (key == FUSE_OPT_KEY_NONOPT && !o->model) {
		o->model = strdup(arg);
		return o->model ? 0 : -1;
	}
	if (key == FUSE_OPT_KEY_NONOPT && !o->mountpoint) {
		o->mountpoint = strdup(arg);
		if (!o->mountpoint)
			return -1;
	}
	/* the mount point is noted, and still reaches FUSE, as do allow_other
	 * and libfuse's other options */
	return 1;
}

static void usage(const char *prog)
{
	printf("usage: %s [options] MODEL MOUNTPOINT\n", prog);
	cli_usage(stdout, prog);
	printf("\n"
	       "Mounts a GGUF or safetensors model read-only: every tensor is a file of\n"
	       "little-endian numbers (float32 for float and quantized types), decoded\n"
	       "on read.  See weightfs(1).\n\n"
	       "options:\n"
	       "    -h, --help             print this help and exit\n"
	       "    -V, --version          print the version and exit\n"
	       "    -f                     stay in the foreground\n"
	       "    -d, -o debug           debug output (implies -f)\n"
	       "    -s                     single-threaded\n"
	       "    -o opt[,opt...]        mount options:\n"
	       "       allow_other         let other users read the mount (non-root users\n"
	       "                           need user_allow_other in /etc/fuse.conf)\n"
	       "       allow_root          let root read the mount\n"
	       "       auto_unmount        unmount when the daemon ends, even if killed\n"
	       "       nonempty            mount over a directory that has files (hiding them)\n"
	       "       dtype=T             what float and quantized tensors' files hold: f32\n"
	       "                           (default), f16, bf16, or stored (the model's bytes)\n"
	       "       gguf=T              model.gguf's type: auto (default: the converter's), f32,\n"
	       "                           f16, bf16, or llama-quantize's q8_0, q4_k_m, q6_k, ...\n"
	       "                           (TYPE-pure: --pure); a GGUF model has one only with it\n"
	       "       npy                 tensor files are NAME.npy (a .npy header, then the values,\n"
	       "                           for np.load)\n"
	       "       suffix              tensor files end in their dtype: NAME.f32, NAME.i64, ...\n"
	       "       preview             NAME.png beside every tensor file: a heatmap of its values\n"
	       "                           (desktops then show their type; see weightfs(1))\n"
	       "       read_ahead_kb=N     the kernel's read-ahead on the mount, in KiB (default 512\n"
	       "                           when run as root; 0 keeps the kernel's own, 128)\n"
	       "       remote_chunk=N      hf://, s3:// and https:// models: bytes per ranged GET (4M)\n"
	       "       remote_streams=N    ranged GETs in flight (4)\n"
	       "       remote_mem=N        fetched bytes kept in memory at most (256M)\n"
	       "       cache=DIR           keep fetched chunks in DIR across mounts (default\n"
	       "                           $XDG_CACHE_HOME/weightfs, else ~/.cache/weightfs; none: off)\n"
	       "       cache_size=N        the cache folder's limit, least recently used evicted (10G)\n"
	       "       offline             no network: serve what the cache holds (docs/remote.md)\n"
	       "       max_threads=N       at most N worker threads (default 10)\n"
	       "       max_idle_threads=N  at most N idle worker threads\n"
	       "       clone_fd            one /dev/fuse descriptor per thread\n"
	       "       other FUSE mount options: see mount.fuse3(8)\n\n"
	       "MOUNTPOINT must be an empty directory that is not already a mount point.\n"
	       "Unmount with: fusermount3 -u MOUNTPOINT\n");
}

/* Opens /dev/null on whichever of descriptors 0, 1 and 2 is closed.  A
 * daemon started with one closed (systemd units, cron, `nohup ... <&-`)
 * would otherwise get the model as that descriptor, and fuse_daemonize,
 * which points 0 to 2 at /dev/null, would then replace the model under
 * the mount. */
static int open_std_fds(void)
{
	for (int fd = 0; fd < 3; fd++) {
		if (fcntl(fd, F_GETFD) != -1 || errno != EBADF)
			continue;
		int n = open("/dev/null", O_RDWR);
		if (n < 0)
			return -1;
		if (n != fd) { /* the lowest free descriptor is fd; anything else is a bug */
			close(n);
			errno = EBADF;
			return -1;
		}
	}
	return 0;
}

/* Messages of the serving daemon: to stderr in the foreground, to syslog
 * once daemonized (stderr is /dev/null then), and through a limiter so a
 * failure met by every request is a few lines, not thousands a second. */
static struct wf_limiter log_limiter;
static bool log_ready, log_syslog;

static void emit_line(void *ctx, const char *line)
{
	(void)ctx;
	if (log_syslog)
		syslog(LOG_ERR, "%s", line);
	else
		fprintf(stderr, "%s\n", line);
}

static uint64_t now_seconds(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec;
}

static void say(const char *msg)
{
	if (log_ready)
		wf_limiter_log(&log_limiter, now_seconds(), msg, emit_line, NULL);
	else
		emit_line(NULL, msg);
}

/* libfuse says "fuse: unknown option(s): `" and then each option in a log
 * call of its own, the last ending in "'\n": gathered here into one line
 * that names them.  Only the mount's start (one thread) gets here.
 * Returns true while the message is being gathered (say nothing yet). */
static bool one_line_options(char *line)
{
	static const char head[] = "fuse: unknown option(s): `";
	static char opts[WF_LOG_LINE];
	static bool gathering;
	if (!gathering && strncmp(line, head, sizeof head - 1) != 0)
		return false;
	const char *p = gathering ? line : line + sizeof head - 1;
	gathering = true;
	size_t n = strlen(opts);
	bool last = false;
	for (; *p && n + 1 < sizeof opts; p++) {
		if (*p == '\'' && p[1] == '\n') {
			last = true;
			break;
		}
		char ch = *p == '\n' ? ' ' : *p;
		if (ch == ' ' && (n == 0 || opts[n - 1] == ' '))
			continue;
		opts[n++] = ch;
	}
	opts[n] = '\0';
	if (!last)
		return true;
	while (n && opts[n - 1] == ' ')
		opts[--n] = '\0';
	gathering = false;
	char q[WF_QPATH];
	snprintf(line, WF_LOG_LINE, "weightfs: %.400s: unknown option (weightfs -h lists them)\n",
		 wf_quote_path(q, sizeof q, opts));
	opts[0] = '\0';
	return false;
}

/* libfuse's own messages: debug output (-d) passes untouched. */
static void fuse_log_to_say(enum fuse_log_level level, const char *fmt, va_list ap)
{
	char line[WF_LOG_LINE];
	if (level == FUSE_LOG_DEBUG) {
		if (log_syslog)
			vsyslog(LOG_DEBUG, fmt, ap);
		else
			vfprintf(stderr, fmt, ap);
		return;
	}
	vsnprintf(line, sizeof line, fmt, ap);
	if (!one_line_options(line))
		say(line);
}

static const char *model_name; /* for messages while serving */

static void on_model_changed(void *ctx, const char *part, const char *why)
{
	(void)ctx;
	char line[WF_LOG_LINE];
	snprintf(line, sizeof line,
		 "weightfs: %s: %s%s%s since it was mounted; every read of its tensors now fails with EIO "
		 "(remount to serve the new contents)", cli_path(model_name), part ? cli_path(part) : "", part ? ": " : "",
		 why);
	say(line);
}

/* True if path lies inside (or is) dir, both resolved. */
static bool inside(const char *path, const char *dir)
{
	char rp[PATH_MAX], rd[PATH_MAX];
	if (!realpath(path, rp) || !realpath(dir, rd))
		return false;
	size_t n = strlen(rd);
	if (strcmp(rd, "/") == 0)
		return true;
	return strncmp(rp, rd, n) == 0 && (rp[n] == '/' || rp[n] == '\0');
}

/* Refuses (with one line on stderr) a mount point on which mounting would
 * stack a second mount, which then takes several unmounts to clear, or
 * hide a directory's files.  The checks run before libfuse resolves the
 * path, which may fail on a dead mount with a less helpful message. */
static bool mountpoint_ok(const char *mp, const char *model, bool nonempty)
{
	struct wf_mnt_info mi;
	char err[WF_ERRLEN], q[WF_QPATH];
	if (wf_mnt_inspect(mp, "/proc/self/mountinfo", &mi, err) != WF_OK) {
		struct stat st;
		bool swapped = stat(mp, &st) == 0 && S_ISREG(st.st_mode) && stat(model, &st) == 0 &&
			       S_ISDIR(st.st_mode);
		fprintf(stderr, "weightfs: %s: mount point: %s%s%s%s%s\n", cli_path(mp), err,
			swapped ? "; arguments swapped? the model comes first: weightfs " : "", swapped ? cli_path(mp) : "",
			swapped ? " " : "", swapped ? cli_path(model) : "");
		return false;
	}
	switch (mi.state) {
	case WF_MNT_FREE:
		return true;
	case WF_MNT_NONEMPTY:
		/* a model inside the mount point gets its own, sharper refusal */
		if (nonempty || inside(model, mp))
			return true;
		fprintf(stderr, "weightfs: %s: mount point: not empty (it holds %s); mounting would hide "
			"its files: use an empty directory, or -o nonempty to mount over them\n", cli_path(mp),
			wf_quote(q, sizeof q, mi.entry, strlen(mi.entry)));
		return false;
	case WF_MNT_DEAD:
		fprintf(stderr, "weightfs: %s: mount point: a dead FUSE mount is there (%s%s%s%sTransport "
			"endpoint is not connected: its daemon is gone); clear it with: fusermount3 -u %s\n", cli_path(mp),
			cli_path(mi.fstype), *mi.source ? " of " : "", cli_path(mi.source), *mi.fstype ? ": " : "",
			cli_path(mp));
		return false;
	case WF_MNT_MOUNTED:
		if (strncmp(mi.fstype, "fuse", 4) == 0)
			fprintf(stderr, "weightfs: %s: mount point: already a mount point (%s%s%s); unmount it "
				"first (fusermount3 -u %s) or choose another directory\n", cli_path(mp),
				cli_path(mi.fstype), *mi.source ? " of " : "", cli_path(mi.source), cli_path(mp));
		else
			fprintf(stderr, "weightfs: %s: mount point: already a mount point (%s%s%s); choose "
				"another directory\n", cli_path(mp), cli_path(mi.fstype), *mi.source ? " of " : "",
				cli_path(mi.source));
		return false;
	}
	return false;
}

/* Says what to do when mounting failed because /dev/fuse cannot be opened
 * (libfuse only says that it could not): no FUSE in the kernel or the
 * container, or a device mode that shuts out non-root users. */
static void dev_fuse_hint(void)
{
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	if (fd >= 0) {
		close(fd);
		return;
	}
	if (errno == ENOENT || errno == ENODEV || errno == ENXIO)
		fprintf(stderr, "weightfs: /dev/fuse: %s: load the fuse module (modprobe fuse); in a "
			"container, pass the device in (docker run --device /dev/fuse --cap-add SYS_ADMIN)\n",
			strerror(errno));
	else if (errno == EACCES || errno == EPERM)
		fprintf(stderr, "weightfs: /dev/fuse: %s: you need read and write access to it; it is "
			"mode 0666 on Debian and Ubuntu (sudo chmod 0666 /dev/fuse; see docs/options.md, Non-root use)\n",
			strerror(errno));
	else
		fprintf(stderr, "weightfs: /dev/fuse: %s\n", strerror(errno));
}

/* Adds "-o fsname=<model>" with the commas and backslashes fuse_opt
 * would split on escaped. */
static int add_fsname(struct fuse_args *args, const char *typed)
{
	/* df and mount show the fsname: give the absolute path, which says
	 * which file it is from any directory */
	char *abs = realpath(typed, NULL);
	const char *model = abs ? abs : typed;
	size_t n = strlen(model);
	char *s = malloc(2 * n + 16);
	if (!s) {
		free(abs);
		return -1;
	}
	char *p = stpcpy(s, "-ofsname=");
	for (size_t i = 0; i < n; i++) {
		if (model[i] == ',' || model[i] == '\\')
			*p++ = '\\';
		*p++ = model[i];
	}
	*p = '\0';
	int rc = fuse_opt_add_arg(args, s);
	free(s);
	free(abs);
	return rc;
}

/* Parses the mount's command line into o and co.  Returns -1 to go on,
 * or the exit status when there is nothing to mount (-h, -V, a mistake). */
static int parse_mount_args(struct fuse_args *args, struct opts *o, struct fuse_cmdline_opts *co,
			    const char *prog)
{
	if (fuse_opt_parse(args, o, wf_opts, opt_proc) != 0)
		return EXIT_USAGE;
	if (o->help) {
		usage(prog);
		return 0;
	}
	if (o->version) {
		printf("weightfs %s (libfuse %s)\n", WF_VERSION, fuse_pkgversion());
		return 0;
	}
	if (o->json) {
		fprintf(stderr, "weightfs: --json: an option of the commands (weightfs ls --json MODEL), not of "
			"a mount\n");
		return EXIT_USAGE;
	}
	if (!o->model || !o->mountpoint) {
		fprintf(stderr, "usage: %s [options] MODEL MOUNTPOINT  (-h for help)\n", prog);
		return EXIT_USAGE;
	}
	/* libfuse mounts over a regular file, a live or dead mount, and a
	 * directory's files; each is a mistake */
	if (!mountpoint_ok(o->mountpoint, o->model, o->nonempty))
		return EXIT_USAGE;
	if (fuse_parse_cmdline(args, co) != 0)
		return EXIT_USAGE;
	if (!co->mountpoint) {
		fprintf(stderr, "usage: %s [options] MODEL MOUNTPOINT  (-h for help)\n", prog);
		return EXIT_USAGE;
	}
	return -1;
}

/* Opens and checks MODEL and builds its tree, all before anything is
 * mounted.  Returns 0, or the exit status after saying what is wrong. */
static int load_model(const struct opts *o, const char *mountpoint, struct wf_mount *mt)
{
	if (inside(o->model, mountpoint)) {
		fprintf(stderr, "weightfs: %s: lies inside the mount point %s\n", cli_path(o->model), cli_path(mountpoint));
		return EXIT_OPEN;
	}
	uint32_t ft = WF_FTYPE_AUTO;
	if (o->gguf)
		wf_arch_parse_ftype(o->gguf, &ft);
	return cli_open(mt, o->model, o->dtype, &(struct wf_tree_opts){.npy = o->npy, .suffix = o->suffix,
								     .preview = o->preview, .gguf_set = o->gguf != NULL, .gguf = ft});
}

/* Serves the mounted session until it is unmounted or signalled; returns
 * the exit status. */
static int serve(struct fuse_session *se, const struct fuse_cmdline_opts *co)
{
	int ret;
	if (co->singlethread) {
		ret = fuse_session_loop(se);
	} else {
		struct fuse_loop_config *lc = fuse_loop_cfg_create();
		if (!lc)
			return EXIT_NOMEM;
		fuse_loop_cfg_set_clone_fd(lc, co->clone_fd);
		/* libfuse leaves these at -1 unless -o max_threads= / max_idle_threads= were given */
		if (co->max_threads != UINT_MAX && co->max_threads > 0)
			fuse_loop_cfg_set_max_threads(lc, co->max_threads);
		if (co->max_idle_threads != UINT_MAX)
			fuse_loop_cfg_set_idle_threads(lc, co->max_idle_threads);
		ret = fuse_session_loop_mt(se, lc);
		fuse_loop_cfg_destroy(lc);
	}
	/* The loops return the number of the signal that ended them (SIGTERM,
	 * SIGINT, SIGHUP: a clean unmount) or -errno when serving failed. */
	return ret < 0 ? EXIT_USAGE : 0;
}

/* Raises the new mount's read-ahead (RA_DEFAULT_KB, or ra_kb when given;
 * 0 leaves the kernel's).  real is the mount point resolved before
 * mounting: resolving it now would ask this daemon, which does not serve
 * yet.  Only a value the user gave is worth a warning when it cannot be
 * set: without root the default quietly stays the kernel's. */
static void set_readahead(const char *real, long ra_kb)
{
	char err[WF_ERRLEN];
	/* without the in-order reader, large requests on several threads fault
	 * a network model's pages out of order: F32 over rclone fell to 0.13x
	 * the plain read (docs/performance.md) */
	if ((ra_kb < 0 && wf_prefetch_env_off()) || ra_kb == 0 || !*real)
		return;
	unsigned kb = ra_kb < 0 ? RA_DEFAULT_KB : (unsigned)ra_kb;
	if (wf_mnt_readahead("/proc/self/mountinfo", "/sys", real, kb, err) != WF_OK && ra_kb > 0)
		fprintf(stderr, "weightfs: -o read_ahead_kb=%ld not set (%s); mounted with the kernel's\n",
			ra_kb, err);
}

/* Mounts, daemonizes unless -f, serves until unmounted, unmounts;
 * returns the exit status. */
static int run_session(struct fuse_args *args, struct wf_fs *fs, const struct fuse_cmdline_opts *co,
		       long ra_kb)
{
	int ret = EXIT_USAGE;
	char real[PATH_MAX] = "";
	if (!realpath(co->mountpoint, real))
		real[0] = '\0';
	struct fuse_session *se = fuse_session_new(args, &wf_fuse_ops, sizeof wf_fuse_ops, fs);
	if (!se)
		return ret;
	if (fuse_set_signal_handlers(se) != 0)
		goto out_session;
	if (wf_live_catch_sigbus() != 0) {
		perror("weightfs: sigaction");
		goto out_signals;
	}
	if (fuse_session_mount(se, co->mountpoint) != 0) {
		dev_fuse_hint();
		goto out_signals;
	}
	set_readahead(real, ra_kb);
	/* The mount exists now: the parent returns only after this point, so
	 * a script can use the mount on its next line. */
	if (!co->foreground) {
		openlog("weightfs", LOG_PID, LOG_DAEMON);
		log_syslog = true;
	}
	fuse_daemonize(co->foreground);
	char rerr[WF_ERRLEN];
	/* a fork: a remote model's fetch threads are the parent's */
	if (!co->foreground && wf_remote_after_fork(rerr) != WF_OK) {
		char line[WF_ERRLEN + 64];
		snprintf(line, sizeof line, "weightfs: remote reads: %s", rerr);
		say(line);
		goto out_unmount;
	}
	ret = serve(se, co);
	/* a Hub file this mount read whole: into the Hugging Face cache too */
	if (!wf_remote_conf.cache_off)
		cli_hub_keep(false);
out_unmount:
	fuse_session_unmount(se);
out_signals:
	fuse_remove_signal_handlers(se);
out_session:
	fuse_session_destroy(se);
	return ret;
}

/* A first word that is no command and no file, and reads like a command
 * (no '/' or '.', not an option): "weightfs stats m.gguf" means a command
 * weightfs lacks, not a model named stats. */
static bool unknown_command(const char *word)
{
	struct stat st;
	if (word[0] == '-' || strpbrk(word, "/.") || stat(word, &st) == 0 || errno != ENOENT)
		return false;
	char q[256];
	fprintf(stderr, "weightfs: unknown command %s (", wf_quote(q, sizeof q, word, strlen(word)));
	cli_command_names(stderr);
	fprintf(stderr, "); to mount a model: weightfs MODEL MOUNTPOINT\n");
	return true;
}

int main(int argc, char *argv[])
{
	/* Not in -h: what the bash completion asks, a command's options as its
	 * table has them, one spelling a line */
	if (argc == 3 && strcmp(argv[1], "--list-options") == 0) {
		if (cli_list_options(stdout, argv[2]) == 0)
			return fflush(stdout) == 0 ? 0 : EXIT_USAGE;
		fprintf(stderr, "weightfs: --list-options %s: no such command (", cli_path(argv[2]));
		cli_command_names(stderr);
		fprintf(stderr, ")\n");
		return EXIT_USAGE;
	}
	/* A command is argv[1] exactly; a model file of that name mounts as ./ls */
	if (argc > 1 && cli_is_command(argv[1])) {
		if (open_std_fds() != 0) {
			perror("weightfs: /dev/null");
			return EXIT_USAGE;
		}
		return cli_main(argc, argv);
	}
	if (argc > 1 && unknown_command(argv[1]))
		return EXIT_USAGE;
	struct fuse_args args = FUSE_ARGS_INIT(argc, argv);
	struct opts o = {.ra_kb = -1};
	struct fuse_cmdline_opts co = {0};
	struct wf_mount mt = {0};
	struct wf_live live = {0};
	struct wf_perms perms = {0};
	struct wf_sums *sums = NULL;
	int ret = EXIT_USAGE;

	if (open_std_fds() != 0) {
		/* nowhere to print to, probably; try anyway */
		perror("weightfs: /dev/null");
		goto out_args;
	}
	if (wf_limiter_init(&log_limiter) == 0)
		log_ready = true;
	fuse_set_log_func(fuse_log_to_say);

	if ((ret = parse_mount_args(&args, &o, &co, argv[0])) >= 0)
		goto out_args;
	if ((ret = load_model(&o, co.mountpoint, &mt)) != 0)
		goto out_model;
	ret = EXIT_NOMEM;
	struct wf_fs fs = {
		.m = mt.m, .t = mt.t, .uid = getuid(), .gid = getgid(), .timeout = 86400.0 * 365,
		.live = &live, .perms = &perms, .sums = (sums = wf_sums_new(mt.m->n_tensors)),
	};
	char perr[WF_ERRLEN];
	if (!fs.sums || wf_live_init(&live, mt.m, wf_files_seg, mt.t, on_model_changed, NULL) != WF_OK ||
	    wf_perms_init(&perms, mt.t, mt.m, perr) != WF_OK)
		goto out_model;
	model_name = o.model;
	/* read-only at the VFS too, so writes fail with EROFS before reaching
	 * us; default_permissions always: the modes are the policy, allow_other
	 * or not */
	if (fuse_opt_add_arg(&args, "-oro,subtype=weightfs,default_permissions") != 0 ||
	    add_fsname(&args, o.model) != 0)
		goto out_model;

	ret = run_session(&args, &fs, &co, o.ra_kb);
out_model:
	wf_sums_free(sums);
	wf_perms_free(&perms);
	wf_live_free(&live);
	wf_mount_close(&mt);
	wf_remote_shutdown();
	wf_source_cleanup();
out_args:
	free(co.mountpoint);
	free(o.mountpoint);
	free(o.model);
	free(o.dtype);
	free(o.gguf);
	fuse_opt_free_args(&args);
	if (log_ready)
		wf_limiter_destroy(&log_limiter);
	return ret;
}
