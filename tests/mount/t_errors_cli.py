"""Groups errors and cli: ENOENT/ENOTDIR/EROFS for every change; the command
line, usage errors, bad models and mount points, daemonized starts.
"""

import errno
import json
import os
import random
import re
import shutil
import stat
import subprocess
import time

from wf_harness import (
    ACTIVE, BIN, check, daemon_pid, Errs, Fail, force_unmount, GGML, is_mounted, Mount,
    MOUNT_TIMEOUT, new_dir, one_line_error, reset_signals, run_cli, san_env, san_lines,
    sanlog_files, SEED, sha256_file, skip_or_fail, TMP, wait_pid)
from wf_models import GGML_MAN, gguf_expected
from wf_read import verify_bytes


# ---------------------------------------------------------------- group: errors

def expect_errno(errs, what, fn, accept=(errno.EROFS,)):
    try:
        fn()
        errs.add("%s succeeded" % what)
    except OSError as ex:
        if ex.errno not in accept:
            errs.add("%s: %s, expected %s" % (what, errno.errorcode.get(ex.errno, ex.errno),
                                              "/".join(errno.errorcode[a] for a in accept)))


def write_ops(m, tensor_rel, errs):
    """Every change must fail; EROFS is what the kernel answers on a read-only
    mount (and what weightfs answers if asked), so only EROFS is accepted,
    apart from the few cases where POSIX mandates another error first."""
    f = m.path(tensor_rel)
    d = os.path.dirname(f)
    new = os.path.join(d, "newfile")
    expect_errno(errs, "open O_WRONLY", lambda: os.close(os.open(f, os.O_WRONLY)))
    expect_errno(errs, "open O_RDWR", lambda: os.close(os.open(f, os.O_RDWR)))
    expect_errno(errs, "open O_RDONLY|O_TRUNC", lambda: os.close(os.open(f, os.O_RDONLY | os.O_TRUNC)))
    expect_errno(errs, "open O_WRONLY|O_APPEND", lambda: os.close(os.open(f, os.O_WRONLY | os.O_APPEND)))
    expect_errno(errs, "create", lambda: os.close(os.open(new, os.O_WRONLY | os.O_CREAT, 0o644)))
    expect_errno(errs, "create in root", lambda: os.close(os.open(m.path("x"), os.O_RDONLY | os.O_CREAT, 0o644)))
    expect_errno(errs, "mkdir", lambda: os.mkdir(os.path.join(d, "newdir")))
    expect_errno(errs, "rmdir", lambda: os.rmdir(d))
    expect_errno(errs, "unlink", lambda: os.unlink(f))
    expect_errno(errs, "unlink metadata.json", lambda: os.unlink(m.path("metadata.json")))
    expect_errno(errs, "rename", lambda: os.rename(f, f + "2"))
    expect_errno(errs, "rename dir", lambda: os.rename(d, d + "2"))
    expect_errno(errs, "chmod", lambda: os.chmod(f, 0o644))
    expect_errno(errs, "chmod dir", lambda: os.chmod(d, 0o755))
    expect_errno(errs, "chown", lambda: os.chown(f, 1, 1))
    expect_errno(errs, "truncate", lambda: os.truncate(f, 0))
    expect_errno(errs, "setxattr", lambda: os.setxattr(f, "user.weightfs.shape", b"[1]"))
    expect_errno(errs, "setxattr new", lambda: os.setxattr(f, "user.new", b"x"))
    expect_errno(errs, "removexattr", lambda: os.removexattr(f, "user.weightfs.shape"))
    expect_errno(errs, "symlink", lambda: os.symlink("/etc/passwd", os.path.join(d, "ln")))
    expect_errno(errs, "link", lambda: os.link(f, os.path.join(d, "hard")))
    expect_errno(errs, "mkfifo", lambda: os.mkfifo(os.path.join(d, "fifo")))
    expect_errno(errs, "mknod", lambda: os.mknod(os.path.join(d, "node"), 0o600 | stat.S_IFREG))
    expect_errno(errs, "utime", lambda: os.utime(f, (1, 1)))
    expect_errno(errs, "utime now", lambda: os.utime(f, None))
    if os.access(f, os.W_OK):
        errs.add("access(W_OK) is true")
    if not os.access(f, os.R_OK):
        errs.add("access(R_OK) is false")
    fd = os.open(f, os.O_RDONLY)
    try:
        expect_errno(errs, "write on O_RDONLY fd", lambda: os.write(fd, b"x"), accept=(errno.EBADF,))
        expect_errno(errs, "ftruncate on O_RDONLY fd", lambda: os.ftruncate(fd, 0),
                     accept=(errno.EINVAL, errno.EBADF))
        try:
            os.posix_fallocate(fd, 0, 10)
            errs.add("posix_fallocate succeeded")
        except OSError as ex:
            if ex.errno not in (errno.EBADF, errno.EROFS):
                errs.add("posix_fallocate: %s" % errno.errorcode.get(ex.errno))
    finally:
        os.close(fd)
    sv = os.statvfs(m.mp)
    if not sv.f_flag & os.ST_RDONLY:
        errs.add("statvfs lacks ST_RDONLY (f_flag %#x)" % sv.f_flag)


def group_errors():
    src = os.path.join(GGML, "mixed_llama_tiny.gguf")
    model = os.path.join(TMP, "errors_copy.gguf")
    shutil.copyfile(src, model)
    os.chmod(model, 0o644)
    h0 = sha256_file(model)
    with Mount(model) as m:
        def missing():
            errs = Errs()
            for rel, want_e in (("nope", errno.ENOENT), ("blk/nope", errno.ENOENT),
                                ("blk/0/nope/x", errno.ENOENT), ("blk/99", errno.ENOENT),
                                ("metadata.json/x", errno.ENOTDIR),
                                ("blk/0/attn_k/weight/x", errno.ENOTDIR),
                                ("a" * 300, (errno.ENOENT, errno.ENAMETOOLONG))):
                # FUSE allows 1024-byte names, so a 300-byte one reaches the
                # daemon and is simply not found
                acc = want_e if isinstance(want_e, tuple) else (want_e,)
                expect_errno(errs, "stat %s" % rel[:20], lambda: os.stat(m.path(rel)), accept=acc)
                expect_errno(errs, "open %s" % rel[:20],
                             lambda: os.close(os.open(m.path(rel), os.O_RDONLY)), accept=acc)
            # twice: the negative entry is cached, the answer must not change
            expect_errno(errs, "stat nope again", lambda: os.stat(m.path("nope")), accept=(errno.ENOENT,))
            fd = os.open(m.path("blk"), os.O_RDONLY | os.O_DIRECTORY)
            try:
                expect_errno(errs, "read on a directory", lambda: os.read(fd, 10), accept=(errno.EISDIR,))
            finally:
                os.close(fd)
            expect_errno(errs, "O_DIRECTORY on a file", lambda: os.close(os.open(
                m.path("blk/0/attn_k/weight"), os.O_RDONLY | os.O_DIRECTORY)), accept=(errno.ENOTDIR,))
            expect_errno(errs, "open dir O_WRONLY", lambda: os.close(os.open(m.path("blk"), os.O_WRONLY)),
                         accept=(errno.EISDIR,))
            errs.raise_if_any()
        check("errors: missing paths give ENOENT/ENOTDIR", missing)

        def writes():
            errs = Errs()
            write_ops(m, "blk/0/attn_k/weight", errs)
            errs.raise_if_any()
        check("errors: every change fails with EROFS; statvfs has ST_RDONLY", writes)

        def still_right():
            errs = Errs()
            t = [t for t in GGML_MAN["tensors"] if t["file"] == "mixed_llama_tiny.gguf"
                 and t["name"] == "blk.0.attn_k.weight"][0]
            verify_bytes(m.path("blk/0/attn_k/weight"), gguf_expected(t), random.Random(SEED),
                         errs, t["name"], t["ne"][0] * 4, 128)
            errs.raise_if_any()
        check("errors: contents unchanged after the write attempts", still_right)

    def rw_opt():
        # mount(8) passes rw for an fstab line without ro: taken, and the
        # mount stays read-only (issue 20)
        with Mount(model, ["-o", "rw"]) as m:
            opts = [l.split()[5] for l in open("/proc/self/mountinfo") if l.split()[4] == m.mp]
            if not opts or not opts[0].startswith("ro"):
                raise Fail("mount options %r" % opts)
            try:
                open(m.path("x"), "w")
                raise Fail("a file was created")
            except OSError as e:
                if e.errno != errno.EROFS:
                    raise Fail("create: %s" % e)
    check("errors: -o rw mounts read-only (create fails with EROFS)", rw_opt)

    def cli_words():
        # issue 20: an unknown command, a mount's unknown -o option and --json
        # given to a mount each get one line that names them
        mp = new_dir()
        for args, want in ((["frobnicate", model], "unknown command 'frobnicate' (ls, info, cat, convert, stats, diff, verify, fetch)"),
                           (["-o", "foo,bar", model, mp], "-o foo,bar: unknown option"),
                           (["--json", model, mp], "--json: an option of the commands"),
                           ([mp, model], "arguments swapped?")):
            rc, out, err, _ = run_cli(args)
            if rc == 0 or len(err.splitlines()) != 1 or want not in err or is_mounted(mp):
                force_unmount(mp)
                raise Fail("%s: rc %d, %r" % (" ".join(args), rc, err))
    check("errors: unknown command, unknown -o option, --json and swapped arguments: one line each",
          cli_words)

    def cat_tty():
        # issue 20: binary to a terminal is refused (as gzip does) unless forced
        import pty
        master, slave = pty.openpty()
        try:
            for extra, want_rc in (([], 1), (["--force"], 0)):
                p = subprocess.run([BIN, "cat"] + extra + [model, "blk.0.attn_k.weight"], stdout=slave,
                                   stderr=subprocess.PIPE, stdin=subprocess.DEVNULL, timeout=30)
                err = p.stderr.decode(errors="replace")
                if p.returncode != want_rc or (want_rc and "binary data to a terminal" not in err):
                    raise Fail("cat %s to a tty: rc %d, %r" % (extra, p.returncode, err))
        finally:
            os.close(master)
            os.close(slave)
    check("errors: weightfs cat refuses a terminal without --force", cat_tty)

    def unchanged():
        if sha256_file(model) != h0 or sha256_file(model) != sha256_file(src):
            raise Fail("the model file changed")
    check("errors: model file sha256 unchanged", unchanged)


# ---------------------------------------------------------------- group: cli

def group_cli():
    model = os.path.join(GGML, "type_q4_0.gguf")

    def version_help():
        errs = Errs()
        for a in (["-V"], ["--version"]):
            rc, out, err, _ = run_cli(a)
            if rc != 0 or "weightfs" not in out or san_lines(err):
                errs.add("%s: rc %d out %r err %r" % (a, rc, out[:80], err[:200]))
        for a in (["-h"], ["--help"]):
            rc, out, err, _ = run_cli(a)
            if rc != 0 or "usage" not in (out + err).lower() or "MOUNTPOINT" not in out or san_lines(err):
                errs.add("%s: rc %d out %r" % (a, rc, out[:80]))
        errs.raise_if_any()
    check("cli: -V, --version, -h, --help exit 0 with output", version_help)

    def dtype_twice():
        errs = Errs()
        mp = new_dir()
        for opts in (["-o", "dtype=f16,dtype=bf16"], ["-o", "dtype=f16", "-o", "dtype=stored"]):
            rc, out, err, _ = run_cli(opts + [model, mp])
            if rc != 1 or "contradict" not in err or len(err.strip().splitlines()) != 1 or is_mounted(mp):
                errs.add("%s: rc %d, %r" % (opts, rc, err[:200]))
            if is_mounted(mp):
                force_unmount(mp)
        rc, out, err, _ = run_cli(["ls", "-o", "dtype=bf16,dtype=f32", model])
        if rc != 1 or "contradict" not in err:
            errs.add("ls: rc %d, %r" % (rc, err[:200]))
        # the same value twice is no contradiction
        with Mount(model, ["-o", "dtype=f16", "-o", "dtype=f16"]) as m:
            with open(m.path("tensors.json"), "rb") as f:
                if '"dtype":"float16"' not in f.read().decode():
                    errs.add("dtype=f16 given twice: not an f16 mount")
        errs.raise_if_any()
    check("cli: contradictory -o dtype= options are refused before mounting, one line", dtype_twice)

    def usage():
        errs = Errs()
        mp = new_dir()
        for a in ([], [model], ["-f"], ["-f", model]):
            rc, out, err, _ = run_cli(a)
            if rc != 1 or not err.strip() or san_lines(err):
                errs.add("%r: rc %d, stderr %r" % (a, rc, err[:200]))
        if is_mounted(mp):
            errs.add("something got mounted")
        errs.raise_if_any()
    check("cli: missing arguments exit 1 with a message", usage)

    def bad_model():
        errs = Errs()
        mp = new_dir()
        d = new_dir("dir-")
        fifo = os.path.join(TMP, "fifo")
        if not os.path.exists(fifo):
            os.mkfifo(fifo)
        missing = os.path.join(TMP, "does-not-exist.gguf")
        for path, substr in ((d, "no GGUF or safetensors model in the folder"), (fifo, "not a regular file"),
                             (missing, "cannot open"), ("/dev/null", "not a regular file")):
            for fg in ([], ["-f"]):
                rc, out, err, secs = run_cli(fg + [path, mp])
                if rc != 2:
                    errs.add("%s %s: exit %d, expected 2" % (fg, path, rc))
                one_line_error(err, path, errs, path, substr)
                if is_mounted(mp):
                    errs.add("%s: left a mount" % path)
                    force_unmount(mp)
        errs.raise_if_any()
    check("cli: MODEL a directory, FIFO, device or missing: exit 2, one line", bad_model)

    def inside():
        errs = Errs()
        mp = new_dir()
        sub = os.path.join(mp, "sub")
        os.mkdir(sub)
        inner = shutil.copyfile(model, os.path.join(sub, "m.gguf"))
        cases = [(inner, mp), (inner, sub), (os.path.join(mp, "sub", "..", "sub", "m.gguf"), mp)]
        link = os.path.join(TMP, "link-to-inner.gguf")
        if not os.path.lexists(link):
            os.symlink(inner, link)
        cases.append((link, mp))
        for mdl, mpt in cases:
            rc, out, err, _ = run_cli([mdl, mpt])
            if rc != 2:
                errs.add("%s in %s: exit %d, expected 2" % (mdl, mpt, rc))
            one_line_error(err, mdl, errs, mdl, "inside the mount point")
            if is_mounted(mpt):
                errs.add("left a mount on %s" % mpt)
                force_unmount(mpt)
        # relative paths, from inside the mount point
        rc, out, err, _ = run_cli(["sub/m.gguf", "."], cwd=mp)
        if rc != 2:
            errs.add("relative: exit %d, expected 2" % rc)
        one_line_error(err, "sub/m.gguf", errs, "relative", "inside the mount point")
        if is_mounted(mp):
            errs.add("left a mount on %s" % mp)
            force_unmount(mp)
        errs.raise_if_any()
    check("cli: MODEL inside the mount point: exit 2, one line, no mount", inside)

    def bad_mountpoint():
        errs = Errs()
        regular = shutil.copyfile(model, os.path.join(TMP, "regular-file"))
        for mpt in (os.path.join(TMP, "no-such-dir"), regular):
            rc, out, err, _ = run_cli([model, mpt])
            if rc != 1:
                errs.add("mountpoint %s: exit %d, expected 1 (stderr %r)" % (mpt, rc, err[:200]))
            if not err.strip() or san_lines(err):
                errs.add("mountpoint %s: stderr %r" % (mpt, err[:200]))
            if is_mounted(mpt):
                errs.add("left a mount")
                force_unmount(mpt)
        mp = new_dir()
        for opts in (["-o", "no_such_option_xyz"], ["--no-such-flag"]):
            rc, out, err, _ = run_cli(opts + [model, mp])
            if rc != 1:
                errs.add("%s: exit %d, expected 1" % (opts, rc))
            if san_lines(err):
                errs.add("%s: sanitizer output" % opts)
            if is_mounted(mp):
                errs.add("%s: left a mount" % opts)
                force_unmount(mp)
        errs.raise_if_any()
    check("cli: bad mount point or option: exit 1, nothing mounted", bad_mountpoint)

    def nonempty():
        # libfuse 3 mounts over a directory's files and hides them: refused
        # unless -o nonempty, which libfuse 3 itself no longer knows
        errs = Errs()
        mp = new_dir()
        with open(os.path.join(mp, "existing"), "w") as f:
            f.write("x")
        for fg in ([], ["-f"]):
            rc, out, err, _ = run_cli(fg + [model, mp], env=san_env())
            want = ("weightfs: %s: mount point: not empty (it holds 'existing'); mounting would hide "
                    "its files: use an empty directory, or -o nonempty to mount over them" % mp)
            if rc != 1 or err.strip() != want:
                errs.add("%s: exit %d, stderr %r" % (fg, rc, err.strip()[:300]))
            if is_mounted(mp):
                force_unmount(mp)
                errs.add("%s: mounted over the files" % fg)
        errs.raise_if_any()
        # nonempty among other -o options; it must not reach libfuse
        for opts in (["-o", "nonempty"], ["-o", "ro,nonempty,max_threads=4"]):
            m = Mount(model, opts, target=mp)
            try:
                if not os.path.exists(m.path("tensors.json")) or os.path.exists(m.path("existing")):
                    raise Fail("%s: the mount does not cover the directory" % opts)
            finally:
                m.finish()
            if not os.path.exists(os.path.join(mp, "existing")):
                raise Fail("the directory's file is gone after unmounting")
        return "refused; -o nonempty mounts over it"
    check("cli: non-empty mount point refused with a message; -o nonempty mounts over it",
          nonempty)

    def odd_paths():
        # relative MODEL and MOUNTPOINT (the daemon changes directory to /
        # after daemonizing), and a model file name with ',' and '\\' (which
        # fuse_opt would split on inside -o fsname=...)
        errs = Errs()
        d = new_dir("odd-")
        odd = shutil.copyfile(model, os.path.join(d, "we,ird\\name .gguf"))
        os.mkdir(os.path.join(d, "mnt"))
        for args in ([os.path.basename(odd), "mnt"], ["-f", os.path.basename(odd), "mnt"]):
            mp = os.path.join(d, "mnt")
            if "-f" in args:
                m = Mount(odd, [])  # same file, foreground, absolute paths
                try:
                    with open(m.path("q4_0/vec"), "rb") as f:
                        if len(f.read()) != 512 * 4:
                            errs.add("-f: q4_0/vec has the wrong size")
                finally:
                    m.finish()
                continue
            rc, out, err, _ = run_cli(args, cwd=d, env=san_env())
            if rc != 0:
                errs.add("%r: exit %d: %s" % (args, rc, err.strip()[:200]))
                continue
            pids = daemon_pid("mnt")
            ACTIVE[mp] = pids[0] if pids else 0
            try:
                with open(os.path.join(mp, "q4_0", "vec"), "rb") as f:
                    if len(f.read()) != 512 * 4:
                        errs.add("relative: q4_0/vec has the wrong size")
            finally:
                subprocess.run(["fusermount3", "-u", mp], timeout=15)
                for p in pids:
                    wait_pid(p, 10)
                ACTIVE.pop(mp, None)
            if is_mounted(mp):
                force_unmount(mp)
                errs.add("still mounted")
        errs.raise_if_any()
    check("cli: relative paths; model name with ',' and '\\'", odd_paths)

    def allow_other():
        # weightfs(1): allow_other lets other users read the mount
        errs = Errs()
        with Mount(model, ["-o", "allow_other"]) as m:
            with open("/proc/self/mountinfo") as f:
                line = [l for l in f if " %s " % m.mp in l][0]
            if "allow_other" not in line or "default_permissions" not in line:
                errs.add("mountinfo options lack allow_other/default_permissions: %s"
                         % line.split(" - ")[-1].strip())
            if shutil.which("setpriv") and os.geteuid() == 0:
                os.chmod(TMP, 0o755)
                os.chmod(os.path.dirname(m.mp), 0o755)
                r = subprocess.run(["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups",
                                    "cat", m.path("q4_0/vec")], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=10)
                with open(m.path("q4_0/vec"), "rb") as f:
                    mine = f.read()
                if r.returncode != 0 or r.stdout != mine:
                    errs.add("another user (uid 65534) cannot read: %s"
                             % r.stderr.decode(errors="replace").strip())
        errs.raise_if_any()
    check("cli: -o allow_other lets another user read; default_permissions on", allow_other)

    def daemonized():
        before = sanlog_files()
        mp = new_dir()
        rc, out, err, secs = run_cli([model, mp], env=san_env())
        if rc != 0:
            raise Fail("exit %d: %s" % (rc, err.strip()[:300]))
        pids = daemon_pid(mp)
        for p in pids:
            ACTIVE[mp] = p
        try:
            # no polling: the mount must be usable as soon as weightfs returns
            if not is_mounted(mp):
                raise Fail("weightfs returned 0 but the mount is not there yet")
            with open(os.path.join(mp, "tensors.json"), "rb") as f:
                json.loads(f.read().decode())
            if len(pids) != 1:
                raise Fail("found %d daemon processes for the mount point" % len(pids))
            if out.strip() or err.strip():
                raise Fail("daemon start printed output: %r %r" % (out[:200], err[:200]))
        finally:
            r = subprocess.run(["fusermount3", "-u", mp], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=15)
            codes = [wait_pid(p, 15) for p in pids]
            ACTIVE.pop(mp, None)
        if r.returncode != 0 or is_mounted(mp):
            force_unmount(mp)
            raise Fail("fusermount3 -u failed: %r" % r.stderr)
        if codes != [0]:
            raise Fail("daemon exit status %r after fusermount3 -u, expected 0" % codes)
        new = [f for f in sanlog_files() if f not in before]
        if new:
            with open(new[0], errors="replace") as f:
                raise Fail("sanitizer report from the daemon: %s" % f.read()[:500])
        return "start took %.0f ms" % (secs * 1000)
    check("cli/unmount: daemonized start is ready on return; fusermount3 -u -> daemon exits 0",
          daemonized)

    # Started with descriptor 0, 1 or 2 closed (systemd units, cron, nohup
    # ... <&-), the daemon must not end up serving /dev/null.
    tiny = os.path.join(GGML, "mixed_llama_tiny.gguf")
    tiny_t = [t for t in GGML_MAN["tensors"] if t["file"] == "mixed_llama_tiny.gguf"
              and t["name"] == "token_embd.weight"][0]
    for fd_closed, redir in ((0, "0<&-"), (1, "1>&-"), (2, "2>&-")):
        for fg in (False, True):
            def closed_fd(redir=redir, fg=fg):
                mp = new_dir()
                argv = [BIN] + (["-f"] if fg else []) + [tiny, mp]
                cmd = "exec " + " ".join("'%s'" % a for a in argv) + " " + redir
                p = subprocess.Popen(["bash", "-c", cmd], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                     preexec_fn=reset_signals, env=san_env())
                pids = []
                try:
                    if fg:
                        pids = [p.pid]
                        t0 = time.monotonic()
                        while not is_mounted(mp):
                            if p.poll() is not None or time.monotonic() - t0 > MOUNT_TIMEOUT:
                                raise Fail("not mounted (exit %s)" % p.poll())
                            time.sleep(0.01)
                    else:
                        rc = p.wait(MOUNT_TIMEOUT)
                        if rc != 0:
                            raise Fail("exit %d" % rc)
                        pids = daemon_pid(mp)
                    ACTIVE[mp] = p
                    with open(os.path.join(mp, "token_embd", "weight"), "rb") as f:
                        got = f.read()
                    if got != gguf_expected(tiny_t):
                        raise Fail("token_embd.weight read back %d wrong bytes" % len(got))
                    # the model must not sit on a standard descriptor, where a
                    # message or a library would take it for stdin/stdout/stderr
                    for q in pids:
                        for d in (0, 1, 2):
                            try:
                                tgt = os.readlink("/proc/%d/fd/%d" % (q, d))
                            except OSError:
                                raise Fail("descriptor %d of the daemon is closed" % d)
                            if tgt == os.path.realpath(tiny):
                                raise Fail("the model is the daemon's descriptor %d" % d)
                finally:
                    r = subprocess.run(["fusermount3", "-u", mp], stdout=subprocess.PIPE,
                                       stderr=subprocess.PIPE, timeout=15)
                    codes = [p.wait(15)] if fg else [wait_pid(q, 15) for q in pids]
                    ACTIVE.pop(mp, None)
                if r.returncode != 0 or is_mounted(mp):
                    force_unmount(mp)
                    raise Fail("fusermount3 -u failed: %r" % r.stderr)
                if codes != [0]:
                    raise Fail("daemon exit status %r after fusermount3 -u" % codes)
            check("cli: started with descriptor %d closed (%s), %s: serves the model" % (
                fd_closed, redir, "-f" if fg else "daemonized"), closed_fd)

    def quant_refused():
        """convert -o gguf=q8_0 of a weight whose Q8_0 scale overflows half precision: the
        mount gives EIO for that block (llama-quantize refuses it); convert names the tensor
        and that cause, not a type with no decoder (its source is F32)."""
        import numpy as np
        from wf_models import f32_tensor, gguf_bytes, gkv, write_file
        d = new_dir("qref-")
        w = np.ones((4, 64), np.float32)
        w[2, 5] = 1e38
        src = os.path.join(d, "big.gguf")
        write_file(src, gguf_bytes([f32_tensor(b"blk.0.ffn_up.weight", w),
                                    f32_tensor(b"output_norm.weight", np.ones(64, np.float32))],
                                   [gkv("general.architecture", "str", "llama"), gkv("llama.block_count", "u32", 1),
                                    gkv("llama.attention.head_count", "u32", 1)]))
        out = os.path.join(d, "out.gguf")
        rc, _, err, _ = run_cli(["convert", "-o", "gguf=q8_0", src, out], timeout=60)
        lines = err.strip().splitlines()
        if rc == 0 or len(lines) != 1 or "no decoder" in err or "blk.0.ffn_up.weight" not in err or \
                "llama-quantize refuses" not in err or "model.gguf" not in err or os.path.exists(out):
            raise Fail("exit %d: %r" % (rc, err[-400:]))
        return lines[0]
    check("cli: convert -o gguf=q8_0 of a block llama-quantize refuses: says so, naming the tensor", quant_refused)


def mount_count(mp):
    target = os.path.realpath(mp).encode()
    n = 0
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            p = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), line.split(b" ")[4])
            n += p == target
    return n


def mountinfo_line(mp):
    with open("/proc/self/mountinfo") as f:
        return [l for l in f if l.split(" ")[4] == mp][-1]


def group_cli_mountpoint():
    """Mount points that would stack a mount or are no directory; -h; the
    fsname; auto_unmount; the /dev/fuse hint."""
    model = os.path.join(GGML, "type_q4_0.gguf")

    def not_a_dir():
        errs = Errs()
        regular = shutil.copyfile(model, os.path.join(TMP, "regular-mp"))
        for mpt, reason in ((regular, "not a directory"),
                            (os.path.join(TMP, "no-such-dir"), os.strerror(errno.ENOENT)),
                            (os.path.join(regular, "sub"), os.strerror(errno.ENOTDIR))):
            for fg in ([], ["-f"]):
                rc, out, err, _ = run_cli(fg + [model, mpt])
                want = "weightfs: %s: mount point: %s" % (mpt, reason)
                if rc != 1 or err.strip() != want:
                    errs.add("%s %s: exit %d, stderr %r, expected %r" % (fg, mpt, rc, err.strip(), want))
                if is_mounted(mpt):
                    force_unmount(mpt)
                    errs.add("%s: mounted" % mpt)
        errs.raise_if_any()
    check("cli: mount point a regular file / missing / under a file: exit 1, the real reason",
          not_a_dir)

    def on_live_mount():
        errs = Errs()
        with Mount(model) as m:
            for fg in ([], ["-f"]):
                rc, out, err, _ = run_cli(fg + [model, m.mp])
                line = err.strip()
                if rc != 1 or len(err.splitlines()) != 1:
                    errs.add("%s: exit %d, stderr %r" % (fg, rc, err[:300]))
                for part in ("weightfs: %s: mount point: already a mount point" % m.mp, "fuse.weightfs",
                             os.path.realpath(model), "fusermount3 -u %s" % m.mp):
                    if part not in line:
                        errs.add("%s: %r lacks %r" % (fg, line, part))
                if mount_count(m.mp) != 1:
                    errs.add("%s: %d mounts stacked on the mount point" % (fg, mount_count(m.mp)))
            with open(m.path("tensors.json"), "rb") as f:
                json.loads(f.read().decode())
        errs.raise_if_any()
    check("cli: mount point already a live weightfs mount: refused, says what is there, no stacking",
          on_live_mount)

    def on_dead_mount():
        errs = Errs()
        m = Mount(model)
        try:
            os.stat(m.mp)
            m.proc.kill()
            m.proc.wait(10)
            try:
                os.stat(m.mp)
                cached = "stat still passes"
            except OSError as e:
                cached = "stat fails: %s" % e.strerror
            rc, out, err, _ = run_cli([model, m.mp])
            line = err.strip()
            if rc != 1 or len(err.splitlines()) != 1:
                errs.add("exit %d, stderr %r" % (rc, err[:300]))
            for part in ("weightfs: %s: mount point: a dead FUSE mount is there" % m.mp,
                         "Transport endpoint is not connected", "clear it with: fusermount3 -u %s" % m.mp):
                if part not in line:
                    errs.add("%r lacks %r" % (line, part))
            if mount_count(m.mp) != 1:
                errs.add("%d mounts on the mount point, expected the dead one only" % mount_count(m.mp))
            # the one command the message gives clears it
            r = subprocess.run(["fusermount3", "-u", m.mp], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=15)
            if r.returncode != 0 or is_mounted(m.mp):
                errs.add("fusermount3 -u did not clear it: %r" % r.stderr)
            # and then the directory can be mounted again
            m2 = Mount(model, target=m.mp)
            m2.finish()
        finally:
            m.kill()
        errs.raise_if_any()
        return cached
    check("cli: mount point a dead weightfs mount (SIGKILL): refused, 'fusermount3 -u MNT' clears it",
          on_dead_mount)

    def auto_unmount():
        m = Mount(model, ["-o", "auto_unmount"])
        try:
            with open(m.path("tensors.json"), "rb") as f:
                f.read()
            m.proc.kill()
            m.proc.wait(10)
            t0 = time.monotonic()
            while is_mounted(m.mp) and time.monotonic() - t0 < 30:
                time.sleep(0.02)
            if is_mounted(m.mp):
                raise Fail("still mounted 30 s after the daemon was killed")
            return "gone %.0f ms after SIGKILL" % ((time.monotonic() - t0) * 1000)
        finally:
            m.kill()
    check("cli: -o auto_unmount: the mount goes away when the daemon is killed", auto_unmount)

    def help_once():
        rc, out, err, _ = run_cli(["-h"])
        errs = Errs()
        if rc != 0 or err.strip():
            errs.add("exit %d, stderr %r" % (rc, err[:200]))
        for opt in ("-h", "-V", "-d", "-f", "-s", "-o", "allow_other", "allow_root", "auto_unmount",
                    "nonempty", "read_ahead_kb", "max_threads", "max_idle_threads", "clone_fd"):
            n = len(re.findall(r"^\s+%s\b" % re.escape(opt), out, re.M))
            if n != 1:
                errs.add("%s listed %d times" % (opt, n))
        errs.raise_if_any()
    check("cli: -h lists each option once (no second libfuse list)", help_once)

    def read_ahead():
        if os.geteuid() != 0:
            skip_or_fail("needs root (only root may set a mount's read-ahead)")

        def ra_kb(mp):
            st = os.stat(mp)
            with open("/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(st.st_dev), os.minor(st.st_dev))) as f:
                return int(f.read())
        errs = Errs()
        got = {}
        for opts, want in (([], 512), (["-o", "read_ahead_kb=256"], 256), (["-o", "read_ahead_kb=0"], None)):
            with Mount(model, opts) as m:
                got[tuple(opts)] = kb = ra_kb(m.mp)
                if want is not None and kb != want:
                    errs.add("%s: read_ahead_kb %d, expected %d" % (opts, kb, want))
                if want is None and kb == 512:
                    errs.add("read_ahead_kb=0 still set it to 512")
                if m.stderr().strip():
                    errs.add("%s: stderr %r" % (opts, m.stderr()[:200]))
        # without the in-order reader the kernel's stays, unless asked for
        os.environ["WEIGHTFS_NO_READAHEAD"] = "1"
        try:
            for opts, want in (([], got[("-o", "read_ahead_kb=0")]), (["-o", "read_ahead_kb=256"], 256)):
                with Mount(model, opts) as m:
                    if ra_kb(m.mp) != want:
                        errs.add("WEIGHTFS_NO_READAHEAD=1 %s: read_ahead_kb %d, expected %d"
                                 % (opts, ra_kb(m.mp), want))
        finally:
            del os.environ["WEIGHTFS_NO_READAHEAD"]
        mp = new_dir()
        for v in ("x", "99999", "-1", "", "12k"):
            rc, out, err, _ = run_cli(["-o", "read_ahead_kb=" + v, model, mp])
            if rc != 1 or "read_ahead_kb" not in err or len(err.strip().splitlines()) != 1 or is_mounted(mp):
                errs.add("read_ahead_kb=%r: rc %d, %r" % (v, rc, err[:200]))
            if is_mounted(mp):
                force_unmount(mp)
        errs.raise_if_any()
        return "kernel's own %d KiB" % got[("-o", "read_ahead_kb=0")]
    check("cli: the mount's read-ahead is 512 KiB as root, -o read_ahead_kb=N sets it, 0 and "
          "WEIGHTFS_NO_READAHEAD keep the kernel's, a bad value is refused before mounting", read_ahead)

    def fsname():
        d = new_dir("fsname-")
        shutil.copyfile(model, os.path.join(d, "m.gguf"))
        mp = os.path.join(d, "mnt")
        os.mkdir(mp)
        rc, out, err, _ = run_cli(["m.gguf", "mnt"], cwd=d, env=san_env())
        if rc != 0:
            raise Fail("exit %d: %s" % (rc, err.strip()))
        pids = daemon_pid("mnt")
        ACTIVE[mp] = pids[0] if pids else 0
        try:
            src = mountinfo_line(mp).split(" - ")[1].split(" ")[1]
            r = subprocess.run(["df", "--output=source", mp], stdout=subprocess.PIPE, timeout=30)
            df_src = r.stdout.decode().split("\n")[1].strip()
        finally:
            subprocess.run(["fusermount3", "-u", mp], timeout=15)
            for p in pids:
                wait_pid(p, 10)
            ACTIVE.pop(mp, None)
        want = os.path.join(d, "m.gguf")
        if src != want or df_src != want:
            raise Fail("mountinfo source %r, df %r, expected %r" % (src, df_src, want))
    check("cli: df/mount show MODEL's absolute path when it was given relative", fsname)

    def dev_fuse_hint():
        if os.geteuid() != 0 or not shutil.which("unshare"):
            skip_or_fail("needs root and unshare")
        errs = Errs()
        mp = new_dir()
        # no /dev/fuse at all (a container without the device)
        script = "mount -t tmpfs tmpfs /dev && exec %s -f %s %s" % (BIN, model, mp)
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                           preexec_fn=reset_signals)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 1 or "weightfs: /dev/fuse: %s: load the fuse module (modprobe fuse)" % \
                os.strerror(errno.ENOENT) not in err:
            errs.add("no device: exit %d, stderr %r" % (r.returncode, err[:400]))
        # a device only root may open, mounted by another user
        os.chmod(TMP, 0o755)
        os.chmod(mp, 0o777)
        pub = shutil.copyfile(model, os.path.join(TMP, "public.gguf"))
        os.chmod(pub, 0o644)
        script = ("mount -t tmpfs tmpfs /dev && mknod -m 0600 /dev/fuse c 10 229 && "
                  "mknod -m 0666 /dev/null c 1 3 && exec setpriv --reuid=65534 --regid=65534 "
                  "--clear-groups %s -f %s %s" % (BIN, pub, mp))
        r = subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30,
                           preexec_fn=reset_signals)
        err = r.stderr.decode(errors="replace")
        if r.returncode != 1 or "weightfs: /dev/fuse: %s: you need read and write access" % \
                os.strerror(errno.EACCES) not in err:
            errs.add("mode 0600: exit %d, stderr %r" % (r.returncode, err[:400]))
        if is_mounted(mp):
            force_unmount(mp)
            errs.add("something got mounted")
        errs.raise_if_any()
    check("cli: /dev/fuse missing or not openable: a hint that says what to do", dev_fuse_hint)
