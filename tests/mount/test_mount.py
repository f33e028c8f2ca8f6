#!/usr/bin/env python3
"""Mount tests for weightfs: python3 tests/mount/test_mount.py BINARY

Run through tests/mount/run.sh (which picks a Python with numpy).  Every
check prints `ok - name` or `FAIL - name: reason`; the last line is
`N passed, M failed` and the exit status is 1 if any check failed.

Every daemon that can be run in the foreground is (-f, stderr captured to a
file) so that sanitizer reports of a SANITIZE=1 build fail the check that
started it.  Daemonized runs write sanitizer reports to files through
ASAN_OPTIONS/UBSAN_OPTIONS log_path, which are checked the same way.

Environment:
  WF_TEST_SEED    seed for the random ranges (default 20240601)
  WF_TEST_ONLY    comma-separated substrings: run only checks whose group
                  name contains one of them (groups: data, naming, stat,
                  xattr, errors, cli, unmount, concurrency, truncate,
                  large, many, malformed, remote, bounds, sets, desktop,
                  cmds, views)
  WF_TEST_KEEP    keep the temporary directory
"""

import atexit
import ctypes
import errno
import gc
import glob
import hashlib
import json
import math
import mmap
import os
import random
import re
import shutil
import signal
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
import traceback

import numpy as np

# ---------------------------------------------------------------- setup

if len(sys.argv) != 2:
    sys.stderr.write("usage: test_mount.py BINARY\n")
    sys.exit(2)

BIN = os.path.abspath(sys.argv[1])
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data")
GGML = os.path.join(DATA, "ggml-oracle")
STO = os.path.join(DATA, "st-oracle")
MALFORMED = os.path.join(ROOT, "tests", "malformed")

SEED = int(os.environ.get("WF_TEST_SEED", "20240601"))
ONLY = [s for s in os.environ.get("WF_TEST_ONLY", "").split(",") if s]

with open(BIN, "rb") as _f:
    SANITIZED = b"__asan_init" in _f.read()
SAN_PATTERNS = ("AddressSanitizer", "LeakSanitizer", "runtime error",
                "UndefinedBehaviorSanitizer", "ERROR: ", "SUMMARY: ")

TMP = tempfile.mkdtemp(prefix="wf-mount-test-")
SANLOG = os.path.join(TMP, "sanlog")
os.mkdir(SANLOG)

MOUNT_TIMEOUT = 20.0 if SANITIZED else 10.0
T_START = time.monotonic()

libc = ctypes.CDLL(None, use_errno=True)
# Orphaned daemons (weightfs without -f forks) become our children, so their
# exit status can be collected with waitpid.
PR_SET_CHILD_SUBREAPER = 36
libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)


def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def load_json(path):
    with open(path, "rb") as f:
        return json.loads(f.read().decode("utf-8"))


# ---------------------------------------------------------------- results

RESULTS = []  # (name, ok, reason)


class Fail(Exception):
    pass


class Skip(Exception):
    """Raised by a check that cannot run here: printed as '# skip', not counted."""


def skip_or_fail(why):
    """A prerequisite is missing: skip on a user's machine, fail under CI."""
    if os.environ.get("CI"):
        raise Fail("%s (CI is set: this must run)" % why)
    raise Skip(why)


class Errs:
    """Collects failures of one check; raise_if_any() turns them into Fail."""

    def __init__(self):
        self.items = []
        self.lock = threading.Lock()

    def add(self, msg):
        with self.lock:
            self.items.append(msg)

    def __len__(self):
        return len(self.items)

    def raise_if_any(self):
        if self.items:
            head = "; ".join(self.items[:6])
            more = len(self.items) - 6
            raise Fail(head + (" (+%d more)" % more if more > 0 else ""))


def report(name, ok, reason="", info=""):
    RESULTS.append((name, ok, reason))
    if ok:
        print("ok - %s%s" % (name, (" (" + info + ")") if info else ""), flush=True)
    else:
        reason = reason.replace("\n", " | ")
        if len(reason) > 1500:
            reason = reason[:1500] + "..."
        print("FAIL - %s: %s" % (name, reason), flush=True)


def check(name, fn, *args, **kw):
    """Runs fn; a returned string is extra info for the ok line."""
    try:
        info = fn(*args, **kw)
        report(name, True, info=info if isinstance(info, str) else "")
        return True
    except Skip as e:  # not counted: neither a pass nor a failure
        print("# skip - %s: %s" % (name, e), flush=True)
    except (Fail, AssertionError) as e:
        report(name, False, str(e) or repr(e))
    except Exception as e:  # noqa: BLE001 - a crash in a check is a failure
        tb = traceback.extract_tb(e.__traceback__)
        where = "%s:%d" % (os.path.basename(tb[-1].filename), tb[-1].lineno) if tb else "?"
        report(name, False, "%s: %s (at %s)" % (type(e).__name__, e, where))
    return False


def want(group):
    return not ONLY or any(s in group for s in ONLY)


# ---------------------------------------------------------------- mounts

def mountinfo_points():
    pts = set()
    with open("/proc/self/mountinfo", "rb") as f:
        for line in f:
            mp = line.split(b" ")[4]
            mp = re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m.group(1), 8)]), mp)
            pts.add(mp)
    return pts


def is_mounted(mp):
    return os.path.realpath(mp).encode() in mountinfo_points()


ACTIVE = {}  # mountpoint -> Popen or pid (for emergency cleanup)


def force_unmount(mp):
    for cmd in (["fusermount3", "-u", "-z", mp], ["umount", "-l", mp]):
        if not is_mounted(mp):
            return
        subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=10)


def reset_signals():
    # A shell may start us with SIGINT ignored; libfuse only installs its
    # handlers for signals at their default, so give the daemon defaults.
    for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGPIPE):
        signal.signal(s, signal.SIG_DFL)


def new_dir(prefix="mnt-"):
    return tempfile.mkdtemp(dir=TMP, prefix=prefix)


def san_lines(text):
    return [l for l in text.splitlines() if any(p in l for p in SAN_PATTERNS)]


def sanlog_files():
    return sorted(glob.glob(os.path.join(SANLOG, "*")))


def san_env():
    """Environment for daemonized runs: sanitizer reports go to files."""
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = "log_path=%s/asan" % SANLOG
    env["UBSAN_OPTIONS"] = "log_path=%s/ubsan:print_stacktrace=1" % SANLOG
    return env


class Mount:
    """weightfs -f MODEL MP in a subprocess, stderr captured to a file."""

    def __init__(self, model, opts=(), label=None, target=None, nofile=None):
        """nofile: run the daemon under `ulimit -n nofile`."""
        self.model = model
        self.mp = target or new_dir()
        self.errpath = self.mp + ".stderr"
        self.rc = None
        self.closed = False
        self.argv = [BIN, "-f"] + list(opts) + [model, self.mp]
        if nofile:
            self.argv = ["bash", "-c", "ulimit -n %d; exec \"$@\"" % nofile, "bash"] + self.argv
        with open(self.errpath, "wb") as ef:
            self.proc = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL,
                                         stdout=subprocess.DEVNULL, stderr=ef,
                                         preexec_fn=reset_signals)
        ACTIVE[self.mp] = self.proc
        self.t_ready = None
        t0 = time.monotonic()
        while not is_mounted(self.mp):
            if self.proc.poll() is not None:
                ACTIVE.pop(self.mp, None)
                raise Fail("daemon exited with %s before mounting; stderr: %s"
                           % (self.proc.returncode, self.stderr().strip()[:500]))
            if time.monotonic() - t0 > MOUNT_TIMEOUT:
                self.kill()
                raise Fail("not mounted after %.0f s" % MOUNT_TIMEOUT)
            time.sleep(0.005)
        os.stat(self.mp)  # waits for FUSE_INIT
        self.t_ready = time.monotonic() - t0

    def path(self, rel):
        if isinstance(rel, bytes):
            return os.path.join(self.mp.encode(), rel)
        return os.path.join(self.mp, rel)

    def stderr(self):
        try:
            with open(self.errpath, "rb") as f:
                return f.read().decode("utf-8", "replace")
        except OSError:
            return ""

    def kill(self):
        force_unmount(self.mp)
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        ACTIVE.pop(self.mp, None)
        self.closed = True

    def unmount(self):
        """fusermount3 -u; returns the daemon's exit status."""
        if self.closed:
            return self.rc
        gc.collect()  # drop forgotten mmaps/fds holding the mount busy
        last = None
        for _ in range(50):
            r = subprocess.run(["fusermount3", "-u", self.mp], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=15)
            if r.returncode == 0:
                break
            last = r.stderr.decode(errors="replace").strip()
            if "busy" not in last.lower():
                break
            time.sleep(0.1)
        try:
            self.rc = self.proc.wait(15)
        except subprocess.TimeoutExpired:
            self.kill()
            raise Fail("daemon did not exit within 15 s of fusermount3 -u (%s)" % last)
        ACTIVE.pop(self.mp, None)
        self.closed = True
        if is_mounted(self.mp):
            force_unmount(self.mp)
            raise Fail("still mounted after fusermount3 -u (%s)" % last)
        return self.rc

    def finish(self, expect_rc=0):
        rc = self.unmount()
        problems = []
        if expect_rc is not None and rc != expect_rc:
            problems.append("daemon exit status %s (expected %s)" % (rc, expect_rc))
        san = san_lines(self.stderr())
        if san:
            problems.append("sanitizer output: " + " / ".join(san[:4]))
        if problems:
            raise Fail("; ".join(problems))

    def __enter__(self):
        return self

    def __exit__(self, et, ev, tb):
        if et is None:
            self.finish()
            return False
        # the body failed: still unmount, and add sanitizer output if any
        try:
            self.unmount()
        except Fail:
            self.kill()
        san = san_lines(self.stderr())
        if san and isinstance(ev, (Fail, AssertionError)):
            raise Fail("%s; sanitizer output: %s" % (ev, " / ".join(san[:4]))) from None
        return False


def cleanup():
    for mp, p in list(ACTIVE.items()):
        try:
            force_unmount(mp)
            if isinstance(p, subprocess.Popen):
                if p.poll() is None:
                    p.kill()
                p.wait(5)
            else:
                try:
                    os.kill(p, signal.SIGKILL)
                except ProcessLookupError:
                    pass
        except Exception:  # noqa: BLE001
            pass
    leftover = [m for m in mountinfo_points() if m.startswith(TMP.encode())]
    for m in leftover:
        force_unmount(m.decode(errors="surrogateescape"))
    if not os.environ.get("WF_TEST_KEEP") and not [m for m in mountinfo_points()
                                                   if m.startswith(TMP.encode())]:
        shutil.rmtree(TMP, ignore_errors=True)


atexit.register(cleanup)
signal.signal(signal.SIGTERM, lambda s, f: sys.exit(1))
signal.signal(signal.SIGHUP, lambda s, f: sys.exit(1))


def run_cli(args, timeout=10.0, env=None, cwd=None):
    """Runs weightfs with args; returns (rc, stdout, stderr, seconds)."""
    t0 = time.monotonic()
    p = subprocess.Popen([BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=reset_signals, env=env, cwd=cwd)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        out, err = p.communicate()
        raise Fail("weightfs %s did not finish within %.0f s" % (" ".join(args), timeout))
    return p.returncode, out.decode("utf-8", "replace"), err.decode("utf-8", "replace"), \
        time.monotonic() - t0


def daemon_pid(mp):
    """The pid of the daemonized weightfs serving mp (our orphan child)."""
    r = subprocess.run(["pgrep", "-f", "--", mp], stdout=subprocess.PIPE, timeout=10)
    pids = [int(x) for x in r.stdout.split()]
    pids = [p for p in pids if p != os.getpid()]
    mine = []
    for p in pids:
        try:
            with open("/proc/%d/cmdline" % p, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%d/exe" % p, "rb"):
                pass
        except OSError:
            continue
        if mp.encode() in argv:
            mine.append(p)
    return mine


def wait_pid(pid, timeout):
    """waitpid for an orphan reparented to us; returns exit status or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        try:
            r, st = os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            return "not-our-child"
        if r == pid:
            return os.waitstatus_to_exitcode(st)
        time.sleep(0.01)
    return None


# ---------------------------------------------------------------- GGUF writer

GV = {"u8": (0, "<B"), "i8": (1, "<b"), "u16": (2, "<H"), "i16": (3, "<h"), "u32": (4, "<I"),
      "i32": (5, "<i"), "f32": (6, "<f"), "bool": (7, "<?"), "str": (8, None), "arr": (9, None),
      "u64": (10, "<Q"), "i64": (11, "<q"), "f64": (12, "<d")}


def gstr(b):
    if isinstance(b, str):
        b = b.encode()
    return struct.pack("<Q", len(b)) + b


def gkv(key, vtype, value, elem=None):
    out = gstr(key) + struct.pack("<I", GV[vtype][0])
    if vtype == "str":
        return out + gstr(value)
    if vtype == "arr":
        out += struct.pack("<IQ", GV[elem][0], len(value))
        for v in value:
            out += gstr(v) if elem == "str" else struct.pack(GV[elem][1], v)
        return out
    return out + struct.pack(GV[vtype][1], value)


def gguf_bytes(tensors, kvs=(), alignment=32, version=3):
    """tensors: list of (name bytes, ggml type id, ne list, raw data bytes).
    kvs: list of already-encoded key/value byte strings."""
    out = bytearray(b"GGUF")
    out += struct.pack("<IQQ", version, len(tensors), len(kvs))
    for kv in kvs:
        out += kv
    offs, off = [], 0
    for _, _, _, data in tensors:
        offs.append(off)
        off += len(data)
        off = (off + alignment - 1) // alignment * alignment
    for (name, ty, ne, _), o in zip(tensors, offs):
        out += gstr(name) + struct.pack("<I", len(ne))
        out += b"".join(struct.pack("<Q", n) for n in ne)
        out += struct.pack("<IQ", ty, o)
    out += b"\0" * (-len(out) % alignment)
    data_start = len(out)
    for (_, _, _, data), o in zip(tensors, offs):
        out += b"\0" * (data_start + o - len(out))
        out += data
    return bytes(out)


def f32_tensor(name, arr):
    arr = np.ascontiguousarray(arr, dtype="<f4")
    ne = list(reversed(arr.shape)) or [1]
    return (name, 0, ne, arr.tobytes())


def write_file(path, data):
    with open(path, "wb") as f:
        f.write(data)
    return path


# ---------------------------------------------------------------- naming model
# The mapping of docs/naming.md / src/wf_tree.h, reimplemented.

def utf8_len(s, i):
    """Length of the valid UTF-8 sequence at s[i] (a byte >= 0x80), else 0."""
    c = s[i]
    if 0xC2 <= c <= 0xDF:
        n = 2
    elif 0xE0 <= c <= 0xEF:
        n = 3
    elif 0xF0 <= c <= 0xF4:
        n = 4
    else:
        return 0
    try:
        s[i:i + n].decode("utf-8", "strict")
    except UnicodeDecodeError:
        return 0
    return n if len(s[i:i + n]) == n else 0


def fnv1a64(b):
    h = 1469598103934665603
    for c in b:
        h = ((h ^ c) * 1099511628211) & 0xFFFFFFFFFFFFFFFF
    return h


def escape_component(s, limit=255):
    if s == b"":
        return b"%"
    if s == b".":
        return b"%2E"
    if s == b"..":
        return b"%2E%2E"
    out = bytearray()
    bounds = [0]  # offsets in out where a whole character / escape ends
    i = 0
    while i < len(s) and len(out) <= limit:  # past the limit only the hash matters
        c = s[i]
        n = utf8_len(s, i) if c >= 0x80 else 1
        if c in b"%/." or c < 0x20 or c == 0x7F or n == 0:
            out += b"%%%02X" % c
            i += 1
        else:
            out += s[i:i + n]
            i += n
        bounds.append(len(out))
    if len(out) <= limit:
        return bytes(out)
    keep = max(b for b in bounds if b <= 200)
    return bytes(out[:keep]) + b"%%~%016x" % fnv1a64(s)


# rule 8: deep and long names (src/wf_tree.h)
TREE_MAX_DIRS = 31
TREE_DIR_BYTES = 768
TREE_DIR_FLOOR = 65536
TREE_DIR_HEADER_DIV = 32


def split_name(n, max_dirs):
    """(directory components, file component, raw bytes it was made from)."""
    dirs, frm, used = [], 0, 0
    while len(dirs) < max_dirs:
        dot = n.find(b".", frm)
        if dot < 0:
            break
        e = escape_component(n[frm:dot])
        if used + len(e) + 1 > TREE_DIR_BYTES:
            break
        used += len(e) + 1
        dirs.append(e)
        frm = dot + 1
    return dirs, escape_component(n[frm:]), n[frm:]


def expected_paths(names, header=0):
    """names: list of bytes in model order -> list of path bytes.  header:
    the model's header bytes (data offset), which pays for directories."""
    def all_dirs(max_dirs):
        dirs = set()
        for n in names:
            ds = split_name(n, max_dirs)[0]
            for k in range(1, len(ds) + 1):
                dirs.add(tuple(ds[:k]))
        return dirs
    max_dirs = TREE_MAX_DIRS
    dirs = all_dirs(max_dirs)
    budget = max(TREE_DIR_FLOOR, header // TREE_DIR_HEADER_DIV)
    if len(dirs) > budget:
        per = [0] * (TREE_MAX_DIRS + 2)
        for d in dirs:
            per[len(d)] += 1
        total, max_dirs = 0, 0
        while max_dirs < TREE_MAX_DIRS and total + per[max_dirs + 1] <= budget:
            max_dirs += 1
            total += per[max_dirs]
        dirs = all_dirs(max_dirs)
    taken = {(): set()}
    for d in dirs:
        taken.setdefault(d[:-1], set()).add(d[-1])
    taken.setdefault((), set()).update({b"metadata.json", b"tensors.json"})
    out = []
    for n in names:
        ds, leaf, tail = split_name(n, max_dirs)
        parent = tuple(ds)
        # rule 5: shortened first so that the suffix still fits in 255 bytes
        base = (escape_component(tail, 255 - len(b".tensor")) + b".tensor"
                if parent + (leaf,) in dirs else leaf)
        name, dup = base, 2
        t = taken.setdefault(parent, set())
        while name in t:
            name = base + b"~%d" % dup
            dup += 1
        t.add(name)
        out.append(b"/".join(parent + (name,)))
    return out


# ---------------------------------------------------------------- reading helpers

def ranges_for(size, row, rng, n=20, block=0):
    """~n (offset, length) pairs: unaligned, across rows, past EOF, at EOF."""
    r = [(0, size), (0, 1), (size, 1), (size, 4096), (size + 1, 10), (size + 12345, 7),
         (max(size - 1, 0), 100), (max(size - 3, 0), 3)]
    if row and size > row:
        r.append((row - 3, 7))                 # across a row boundary
        r.append((row + 1, row))               # a row, shifted by one byte
    if block and size > block:
        r.append((block - 5, 10))              # across a block boundary
        r.append((block + 2, 3 * block + 1))
    while len(r) < n:
        off = rng.randrange(0, size + 64) if size else rng.randrange(0, 64)
        ln = rng.choice([1, 2, 3, 5, 7, 13, 63, 129, 4095, 4097,
                         rng.randrange(1, size + 200)])
        r.append((off, ln))
    return r


def o_direct_fd(path):
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return None


def verify_bytes(path, exp, rng, errs, label, row=0, block=0):
    """Reads path every way we know and compares with exp (bytes)."""
    st = os.stat(path)
    size = len(exp)
    if st.st_size != size:
        errs.add("%s: st_size %d, expected %d" % (label, st.st_size, size))
        return False
    bad0 = len(errs)
    rs = ranges_for(size, row, rng, 20, block)
    # 1. O_DIRECT: every pread reaches the daemon with its exact offset and length
    fd = o_direct_fd(path)
    if fd is None:
        errs.add("%s: O_DIRECT open failed" % label)
    else:
        try:
            for off, ln in rs:
                got = os.pread(fd, ln, off)
                if got != exp[off:off + ln]:
                    errs.add("%s: O_DIRECT pread(off=%d, len=%d) gave %d bytes, %s"
                             % (label, off, ln, len(got),
                                "differ" if len(got) == len(exp[off:off + ln]) else
                                "expected %d" % len(exp[off:off + ln])))
                    break
        finally:
            os.close(fd)
    # 2. whole file through the page cache
    with open(path, "rb") as f:
        data = f.read()
    if data != exp:
        errs.add("%s: whole read: %d bytes, sha256 %s, expected %d bytes sha256 %s"
                 % (label, len(data), hashlib.sha256(data).hexdigest()[:16], size,
                    hashlib.sha256(exp).hexdigest()[:16]))
    # 3. cached preads (different random ranges)
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in ranges_for(size, row, rng, 12, block):
            if os.pread(fd, ln, off) != exp[off:off + ln]:
                errs.add("%s: pread(off=%d, len=%d) wrong" % (label, off, ln))
                break
        if os.lseek(fd, 0, os.SEEK_END) != size:
            errs.add("%s: lseek(SEEK_END) != size" % label)
    finally:
        os.close(fd)
    # 4. sequential reads of various chunk sizes, unbuffered and buffered
    for chunk in (1, 3, 7, 511, 4097, 65536):
        if size // chunk > 3000:
            continue
        with open(path, "rb", buffering=0) as f:
            parts = []
            while True:
                b = f.read(chunk)
                if not b:
                    break
                parts.append(b)
        if b"".join(parts) != exp:
            errs.add("%s: unbuffered read(%d) loop wrong" % (label, chunk))
    with open(path, "rb", buffering=rng.choice([1024, 8192, 100000])) as f:
        parts = []
        while True:
            b = f.read(rng.randrange(1, 5000))
            if not b:
                break
            parts.append(b)
        if b"".join(parts) != exp:
            errs.add("%s: buffered random-size read loop wrong" % label)
        f.seek(max(size - 5, 0))
        if f.read(100) != exp[max(size - 5, 0):]:
            errs.add("%s: seek+read at end wrong" % label)
    # 5. mmap
    if size:
        with open(path, "rb") as f:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                if mm[:] != exp:
                    errs.add("%s: mmap contents wrong" % label)
    return len(errs) == bad0


def expect_eio(path, errs, label, size):
    """Every read of path must fail with EIO (type without a decoder)."""
    for flags in (os.O_RDONLY, os.O_RDONLY | os.O_DIRECT):
        fd = os.open(path, flags)
        try:
            for off, ln in ((0, size), (0, 1), (5, 3), (max(size - 1, 0), 10)):
                try:
                    got = os.pread(fd, ln, off)
                    errs.add("%s: pread(%d,%d) returned %d bytes instead of EIO"
                             % (label, off, ln, len(got)))
                    return False
                except OSError as e:
                    if e.errno != errno.EIO:
                        errs.add("%s: pread failed with %s, expected EIO"
                                 % (label, errno.errorcode.get(e.errno, e.errno)))
                        return False
        finally:
            os.close(fd)
    return True


# ---------------------------------------------------------------- group: data

GGML_MAN = load_json(os.path.join(GGML, "manifest.json"))
ST_MAN = load_json(os.path.join(STO, "manifest.json"))
TALLY_GGUF = {}   # type -> [matched, total, note]
TALLY_ST = {}
NO_DECODER = {"Q8_1", "F4", "F6_E2M3", "F6_E3M2"}


def tally(table, ty, ok, note=""):
    t = table.setdefault(ty, [0, 0, note])
    t[1] += 1
    t[0] += 1 if ok else 0


def gguf_expected(t):
    """Expected bytes of a GGUF tensor's file, or None for EIO."""
    ty = t["type"].upper()
    if ty in NO_DECODER:
        return None
    if t["expected_f32"]:
        with open(os.path.join(GGML, t["expected_f32"]), "rb") as f:
            return f.read()
    with open(os.path.join(GGML, t["file"]), "rb") as f:
        f.seek(t["file_offset"])
        raw = f.read(t["nbytes"])
    assert hashlib.sha256(raw).hexdigest() == t["raw_sha256"], "oracle raw bytes mismatch"
    if ty == "F64":
        with np.errstate(over="ignore"):  # out-of-range doubles become +-inf
            return np.frombuffer(raw, "<f8").astype("<f4").tobytes()
    return raw  # integers pass through


GGUF_DTYPE = {"I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64"}


def check_tensors_json_common(m, tj, errs):
    names = [e["name"] for e in tj["tensors"]]
    paths = [e["path"] for e in tj["tensors"]]
    if len(set(paths)) != len(paths):
        errs.add("duplicate paths in tensors.json")
    for e in tj["tensors"]:
        p = m.path(e["path"])
        try:
            st = os.stat(p)
        except OSError as ex:
            errs.add("%r: path %r: %s" % (e["name"], e["path"], ex))
            continue
        if not stat.S_ISREG(st.st_mode):
            errs.add("%r: not a regular file" % e["path"])
        if st.st_size != e["size"]:
            errs.add("%r: size %d != st_size %d" % (e["path"], e["size"], st.st_size))
        n = 1
        for d in e["shape"]:
            n *= d
        if n * np.dtype(e["dtype"]).itemsize != e["size"]:
            errs.add("%r: size %d != prod(shape)*itemsize" % (e["path"], e["size"]))
    return names


def numpy_checks(m, e, exp, errs, label):
    """np.fromfile / np.memmap of the tensor's file equal the expected array."""
    p = m.path(e["path"])
    dt = np.dtype(e["dtype"])
    shape = tuple(e["shape"])
    want = np.frombuffer(exp, dtype=dt).reshape(shape)
    a = np.fromfile(p, dtype=dt).reshape(shape)
    if a.shape != want.shape or a.tobytes() != want.tobytes():
        errs.add("%s: np.fromfile differs" % label)
    if len(exp):
        mm = np.memmap(p, dtype=dt, mode="r")
        try:
            if mm.reshape(shape).tobytes() != exp:
                errs.add("%s: np.memmap differs" % label)
        finally:
            mm._mmap.close()
            del mm


def manifest_mounts(man, root, tally_table, type_of):
    """Mounts each file of an oracle manifest in turn and yields
    (fname, file entry, model path, its tensors, mount); unmounts after the
    caller's checks.  A file that fails to mount counts all its tensors as
    failed."""
    by_file = {}
    for t in man["tensors"]:
        by_file.setdefault(t["file"], []).append(t)
    for fm in man["files"]:
        fname = fm["file"]
        model = os.path.join(root, fname)
        ts = by_file.get(fname, [])
        state = {}

        def mount_it():
            state["m"] = Mount(model)
            return "ready in %.0f ms" % (state["m"].t_ready * 1000)
        if not check("data: mount %s" % fname, mount_it):
            for t in ts:
                tally(tally_table, type_of(t), False)
            continue
        m = state["m"]
        try:
            yield fname, fm, model, ts, m
        finally:
            check("data: unmount %s" % fname, m.finish)


def split_set(man, fm):
    """For a part of a split GGUF (split.count > 1): the manifest entries of
    every part in order, and all their tensors; else ([fm], fm's tensors)."""
    kv = {k["key"]: k["value"] for k in fm.get("kv", [])}
    if kv.get("split.count", 1) <= 1:
        return [fm], [t for t in man["tensors"] if t["file"] == fm["file"]]
    prefix = re.sub(r"-\d{5}-of-\d{5}\.gguf$", "", fm["file"])
    files = sorted((f for f in man["files"]
                    if re.fullmatch(re.escape(prefix) + r"-\d{5}-of-\d{5}\.gguf", f["file"])),
                   key=lambda f: f["file"])
    return files, [t for f in files for t in man["tensors"] if t["file"] == f["file"]]


def group_data_gguf():
    for fname, fm_own, model, ts_own, m in manifest_mounts(GGML_MAN, GGML, TALLY_GGUF,
                                                           lambda t: t["type"].upper()):
        tj = {}
        # a part of a split set mounts the whole set: tensors.json and
        # metadata.json are the set's (the first part's header and
        # key/values); the reads below cover this part's own tensors
        set_files, ts = split_set(GGML_MAN, fm_own)
        fm = set_files[0]

        def tensors_json():
            errs = Errs()
            with open(m.path("tensors.json"), "rb") as f:
                tj.update(json.loads(f.read().decode("utf-8")))
            for k, want_v in (("format", "gguf"), ("version", fm["gguf_version"]),
                              ("alignment", fm["alignment"]),
                              ("data_offset", fm["data_offset"]),
                              ("metadata_count", fm["n_kv"])):
                if tj.get(k) != want_v:
                    errs.add("%s = %r, expected %r" % (k, tj.get(k), want_v))
            if [e["name"] for e in tj["tensors"]] != [t["name"] for t in ts]:
                errs.add("tensor names/order differ from the manifest")
            check_tensors_json_common(m, tj, errs)
            byname = {e["name"]: e for e in tj["tensors"]}
            for t in ts:
                e = byname.get(t["name"])
                if e is None:
                    continue
                ty = t["type"].upper()
                if e["type"] != ty:
                    errs.add("%s: type %r, manifest %r" % (t["name"], e["type"], t["type"]))
                if e["shape"] != list(reversed(t["ne"])):
                    errs.add("%s: shape %r != reversed ne %r" % (t["name"], e["shape"], t["ne"]))
                if e.get("file") != t["file"]:
                    errs.add("%s: file %r, manifest %r" % (t["name"], e.get("file"), t["file"]))
                if e["offset"] != t["file_offset"] or e["nbytes"] != t["nbytes"]:
                    errs.add("%s: offset/nbytes %d/%d, manifest %d/%d" % (
                        t["name"], e["offset"], e["nbytes"], t["file_offset"], t["nbytes"]))
                if e["dtype"] != GGUF_DTYPE.get(ty, "float32"):
                    errs.add("%s: dtype %r" % (t["name"], e["dtype"]))
                exp = gguf_expected(t)
                if exp is not None:
                    numpy_checks(m, e, exp, errs, t["name"])
            errs.raise_if_any()
        check("tensors.json: %s" % fname, tensors_json)

        def metadata():
            errs = Errs()
            check_gguf_metadata(m, fm, errs)
            errs.raise_if_any()
        check("metadata.json: %s" % fname, metadata)

        def reads():
            errs = Errs()
            rng = random.Random("%d/%s" % (SEED, fname))
            byname = {e["name"]: e for e in tj.get("tensors", [])}
            n_ok = 0
            for t in ts_own:
                ty = t["type"].upper()
                e = byname.get(t["name"])
                if e is None:
                    errs.add("%s: not in tensors.json" % t["name"])
                    tally(TALLY_GGUF, ty, False)
                    continue
                p = m.path(e["path"])
                exp = gguf_expected(t)
                if exp is None:
                    n_el = 1
                    for d in t["ne"]:
                        n_el *= d
                    ok = expect_eio(p, errs, t["name"], n_el * 4)
                    if os.stat(p).st_size != n_el * 4:
                        errs.add("%s: st_size %d, expected %d" % (
                            t["name"], os.stat(p).st_size, n_el * 4))
                        ok = False
                    tally(TALLY_GGUF, ty, ok, "EIO as expected (no decoder)")
                    n_ok += ok
                    continue
                itemsize = np.dtype(e["dtype"]).itemsize
                row = t["ne"][0] * itemsize
                block = t["block_size"] * itemsize if t["block_size"] > 1 else 0
                ok = verify_bytes(p, exp, rng, errs, t["name"], row, block)
                tally(TALLY_GGUF, ty, ok)
                n_ok += ok
            errs.raise_if_any()
            return "%d tensors" % n_ok
        check("data: read %s" % fname, reads)
        check("blobs: read metadata.json/tensors.json of %s" % fname, check_blobs, m)


def check_blobs(m):
    errs = Errs()
    rng = random.Random("%d/blobs/%s" % (SEED, m.model))
    for name in ("metadata.json", "tensors.json"):
        with open(m.path(name), "rb") as f:
            exp = f.read()
        json.loads(exp.decode("utf-8"))
        verify_bytes(m.path(name), exp, rng, errs, name)
    errs.raise_if_any()


class Num:
    """A JSON number kept as its text, so -0 and 64-bit integers stay exact."""

    def __init__(self, text):
        self.text = text

    def __repr__(self):
        return "Num(%s)" % self.text


def loads_exact(b):
    return json.loads(b.decode("utf-8"), parse_int=Num, parse_float=Num,
                      parse_constant=lambda c: ("CONSTANT", c),
                      object_pairs_hook=lambda pairs: pairs)


INT_TYPES = {"u8", "i8", "u16", "i16", "u32", "i32", "u64", "i64"}


def kv_value_ok(vtype, want_v, got):
    """Compares one metadata value as weightfs wrote it (parsed exactly)."""
    if vtype in INT_TYPES:
        return isinstance(got, Num) and re.fullmatch(r"-?\d+", got.text) is not None \
            and int(got.text) == want_v
    if vtype == "bool":
        return got is want_v
    if vtype == "str":
        return isinstance(got, str) and got == want_v
    if vtype in ("f32", "f64"):
        bits = int(want_v["bits"], 16)
        if vtype == "f32":
            val = struct.unpack("<f", struct.pack("<I", bits))[0]
        else:
            val = struct.unpack("<d", struct.pack("<Q", bits))[0]
        if math.isnan(val):
            return got == "NaN"
        if math.isinf(val):
            return got == ("Infinity" if val > 0 else "-Infinity")
        if not isinstance(got, Num):
            return False
        if not re.search(r"[.eE]", got.text):
            return False  # a JSON reader would give back an int: -0 -> 0, 10000.0 -> 10000
        x = float(got.text)
        if vtype == "f32":
            # %.9g-style text: must round to exactly the stored float32
            return struct.pack("<f", np.float32(x)) == struct.pack("<I", bits)
        return struct.pack("<d", x) == struct.pack("<Q", bits)
    raise AssertionError("unknown kv type " + vtype)


def check_gguf_metadata(m, fm, errs):
    with open(m.path("metadata.json"), "rb") as f:
        raw = f.read()
    pairs = loads_exact(raw)
    keys = [k for k, _ in pairs]
    if keys != [kv["key"] for kv in fm["kv"]]:
        errs.add("keys differ from the manifest (%d vs %d)" % (len(keys), len(fm["kv"])))
    got = dict(pairs)
    for kv in fm["kv"]:
        if kv["key"] not in got:
            errs.add("missing key %r" % kv["key"])
            continue
        g = got[kv["key"]]
        if kv["type"] == "arr":
            if not isinstance(g, list) or len(g) != len(kv["value"]):
                errs.add("%s: not a list of %d" % (kv["key"], len(kv["value"])))
                continue
            for i, (w, x) in enumerate(zip(kv["value"], g)):
                if not kv_value_ok(kv["elem_type"], w, x):
                    errs.add("%s[%d]: got %r, expected %r" % (kv["key"], i, x, w))
                    break
        elif not kv_value_ok(kv["type"], kv["value"], g):
            errs.add("%s (%s): got %r, expected %r" % (kv["key"], kv["type"], g, kv["value"]))


def group_data_floats():
    # metadata.json: float keys, and floats in arrays, read back with
    # Python's plain json.loads as floats with the same bits.
    f32s = [0.0, -0.0, 10000.0, 1.0, -2.5, 0.1, 1e-5, 1e20, 3.4028234663852886e38,
            1.401298464324817e-45, 16777216.0]
    f64s = [0.0, -0.0, 10000.0, 0.1, 1.0 / 3, 1e16, 123456789012345.0, 5e-324,
            1.7976931348623157e308, -1.5e-7, 9007199254740992.0]
    kvs = [gkv("f32.%d" % i, "f32", v) for i, v in enumerate(f32s)]
    kvs += [gkv("f64.%d" % i, "f64", v) for i, v in enumerate(f64s)]
    kvs += [gkv("arr.f32", "arr", f32s, "f32"), gkv("arr.f64", "arr", f64s, "f64")]
    model = write_file(os.path.join(TMP, "floats.gguf"),
                       gguf_bytes([f32_tensor(b"t", np.zeros(4))], kvs))

    def floats():
        errs = Errs()
        with Mount(model) as m:
            with open(m.path("metadata.json"), "rb") as f:
                raw = f.read()
        meta = json.loads(raw.decode())

        def same(got, want, fmt, what):
            if type(got) is not float:
                errs.add("%s: %r is a %s, not a float" % (what, got, type(got).__name__))
            elif struct.pack(fmt, got if fmt == "<d" else np.float32(got)) != struct.pack(fmt, want):
                errs.add("%s: %r does not have the bits of %r" % (what, got, want))
        for i, v in enumerate(f32s):
            same(meta["f32.%d" % i], v, "<f", "f32.%d" % i)
            same(meta["arr.f32"][i], v, "<f", "arr.f32[%d]" % i)
        for i, v in enumerate(f64s):
            same(meta["f64.%d" % i], v, "<d", "f64.%d" % i)
            same(meta["arr.f64"][i], v, "<d", "arr.f64[%d]" % i)
        for k, want in (("f32.1", "-0.0"), ("f32.2", "10000.0"), ("f64.1", "-0.0"),
                        ("f64.2", "10000.0")):
            if ('"%s": %s' % (k, want)).encode() not in raw:
                errs.add("%s is not written as %s" % (k, want))
        errs.raise_if_any()
    check("data: metadata.json floats read back as floats, same bits (-0.0, 10000.0, arrays)",
          floats)


def st_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n).decode("utf-8"))


def group_data_st():
    for fname, fm, model, ts, m in manifest_mounts(ST_MAN, STO, TALLY_ST, lambda t: t["dtype"]):
        hlen, header = st_header(model)
        tj = {}

        def tensors_json():
            errs = Errs()
            with open(m.path("tensors.json"), "rb") as f:
                tj.update(json.loads(f.read().decode("utf-8")))
            meta = header.get("__metadata__", {})
            for k, want_v in (("format", "safetensors"), ("data_offset", 8 + hlen),
                              ("metadata_count", len(meta))):
                if tj.get(k) != want_v:
                    errs.add("%s = %r, expected %r" % (k, tj.get(k), want_v))
            if sorted(e["name"] for e in tj["tensors"]) != sorted(t["name"] for t in ts):
                errs.add("tensor names differ from the manifest")
            check_tensors_json_common(m, tj, errs)
            byname = {e["name"]: e for e in tj["tensors"]}
            for t in ts:
                e = byname.get(t["name"])
                if e is None:
                    continue
                if e["type"] != t["dtype"]:
                    errs.add("%s: type %r, manifest %r" % (t["name"], e["type"], t["dtype"]))
                if e["dtype"] != t["expected_dtype"]:
                    errs.add("%s: dtype %r, manifest %r" % (t["name"], e["dtype"],
                                                           t["expected_dtype"]))
                if e["shape"] != t["shape"]:
                    errs.add("%s: shape %r, manifest %r" % (t["name"], e["shape"], t["shape"]))
                if e.get("file") != t["file"]:
                    errs.add("%s: file %r, manifest %r" % (t["name"], e.get("file"), t["file"]))
                if e["offset"] != t["file_offset"] or e["nbytes"] != t["nbytes"]:
                    errs.add("%s: offset/nbytes differ" % t["name"])
                with open(os.path.join(STO, t["expected"]), "rb") as f:
                    exp = f.read()
                numpy_checks(m, e, exp, errs, t["name"])
            errs.raise_if_any()
        check("tensors.json: %s" % fname, tensors_json)

        def metadata():
            with open(m.path("metadata.json"), "rb") as f:
                got = json.loads(f.read().decode("utf-8"), object_pairs_hook=dict)
            want_v = header.get("__metadata__", {})
            if got != want_v:
                raise Fail("metadata.json %r != __metadata__ %r" % (got, want_v))
        check("metadata.json: %s" % fname, metadata)

        def reads():
            errs = Errs()
            rng = random.Random("%d/%s" % (SEED, fname))
            byname = {e["name"]: e for e in tj.get("tensors", [])}
            n_ok = 0
            for t in ts:
                e = byname.get(t["name"])
                if e is None:
                    errs.add("%s: not in tensors.json" % t["name"])
                    tally(TALLY_ST, t["dtype"], False)
                    continue
                with open(os.path.join(STO, t["expected"]), "rb") as f:
                    exp = f.read()
                assert hashlib.sha256(exp).hexdigest() == t["expected_sha256"]
                itemsize = np.dtype(e["dtype"]).itemsize
                row = (t["shape"][-1] if t["shape"] else 1) * itemsize
                ok = verify_bytes(m.path(e["path"]), exp, rng, errs, t["name"], row)
                tally(TALLY_ST, t["dtype"], ok)
                n_ok += ok
            errs.raise_if_any()
            return "%d tensors" % n_ok
        check("data: read %s" % fname, reads)
        check("blobs: read metadata.json/tensors.json of %s" % fname, check_blobs, m)
        if fname == "awkward_names.safetensors":
            check("naming: awkward_names.safetensors", check_awkward, m, tj, ts)


# ---------------------------------------------------------------- group: naming

def valid_components(path_b, errs, label):
    for c in path_b.split(b"/"):
        if c in (b"", b".", b"..") or b"\0" in c or len(c) > 255:
            errs.add("%s: bad path component %r (%d bytes)" % (label, c[:40], len(c)))
            return False
    return True


def check_awkward(m, tj, ts):
    errs = Errs()
    names = [e["name"].encode() for e in tj["tensors"]]
    want_paths = expected_paths(names)
    fixed = {"a.b": "a/b.tensor", "a.b.c": "a/b/c", "x..y": "x/%/y", ".lead": "%/lead",
             "trail.": "trail/%", "sp ace/slash": "sp ace%2Fslash", "unicodé.ü": "unicodé/ü",
             "metadata.json": "metadata/json"}
    paths = set()
    for e, wp in zip(tj["tensors"], want_paths):
        pb = e["path"].encode()
        if pb != wp:
            errs.add("%r: path %r, expected %r" % (e["name"], e["path"], wp.decode()))
        if e["name"] in fixed and e["path"] != fixed[e["name"]]:
            errs.add("%r: path %r, expected %r" % (e["name"], e["path"], fixed[e["name"]]))
        valid_components(pb, errs, e["name"])
        paths.add(pb)
        if os.getxattr(m.path(pb), "user.weightfs.name") != e["name"].encode():
            errs.add("%r: xattr name differs" % e["name"])
    if len(paths) != len(tj["tensors"]):
        errs.add("paths not unique")
    found = walk_files(m)
    if found != paths | {b"metadata.json", b"tensors.json"}:
        errs.add("os.walk finds %r" % sorted(found ^ (paths | {b"metadata.json", b"tensors.json"})))
    errs.raise_if_any()


def meta_dir(mp):
    """The metadata folder's name at the root: "metadata", or "metadata.d"
    when a tensor directory took "metadata"."""
    return "metadata.d" if os.path.isdir(os.path.join(mp, "metadata.d")) else "metadata"


def n_generated(m):
    """Files weightfs makes besides the tensors': metadata.json,
    tensors.json, WEIGHTFS.txt, model.safetensors and one per metadata key."""
    with open(m.path("metadata.json"), "rb") as f:
        return 4 + len(json.loads(f.read().decode("utf-8")))


def walk_files(m, extras=False):
    """Relative paths of the files under the mount: the tensors and the
    JSON files, without model.safetensors, WEIGHTFS.txt and the metadata
    folder unless extras is set."""
    root = m.mp.encode()
    skip = {b"model.safetensors", b"WEIGHTFS.txt", meta_dir(m.mp).encode()}
    found = set()
    for d, dirs, files in os.walk(root):
        if d == root and not extras:
            dirs[:] = [x for x in dirs if x not in skip]
            files = [x for x in files if x not in skip]
        for f in files:
            found.add(os.path.relpath(os.path.join(d, f), root))
    return found


HOSTILE_NAMES = [
    b"", b".", b"..", b"a..b", b".a", b"a.", b"a/b", b"a.b", b"a.b.c",
    b"metadata.json", b"tensors.json", b"metadata", b"tensors",
    b"100%", b"%", b"%%.%", b"p/q", b"p%2Fq", b"%2F", b"q.%", b"q.%25",
    b"bad\xffutf8", b"\xff", b"%FF", b"%ff", b"\xfe.\xfe",
    b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"trunc\xf0\x9f\x98",
    b"ctl\x01\x1f\x7f", b"nul\x00byte", b"tab\there", b"new\nline", b"\x00",
    b"caf\xc3\xa9.\xf0\x9f\x98\x80", b"sp ace", b"~tilde", b"-dash", b"a b.c d",
    b'quote".back\\slash', b"x.tensor", b"x", b"y~2", b"y",
    b"L" * 300, b"L" * 200 + b"M" * 100, b"d." + b"L" * 300 + b".leaf",
    b"d." + b"L" * 300 + b".other", b"\xc3\xa9" * 150, b"%" * 300, b"\xff" * 120,
    b"x" * 255, b"y" * 256, b"z" * 85 + b"%" * 57,
    b"k" * 250, b"k" * 250 + b".c",
]

# exact paths from docs/naming.md's examples and rules
HOSTILE_FIXED = {
    b"": b"%.tensor", b".": b"%/%.tensor", b"..": b"%/%/%", b"a..b": b"a/%/b",
    b".a": b"%/a", b"a.": b"a/%.tensor", b"a/b": b"a%2Fb", b"a.b": b"a/b.tensor",
    b"a.b.c": b"a/b/c", b"metadata.json": b"metadata/json", b"tensors.json": b"tensors/json",
    b"metadata": b"metadata.tensor", b"100%": b"100%25", b"p/q": b"p%2Fq",
    b"p%2Fq": b"p%252Fq", b"bad\xffutf8": b"bad%FFutf8", b"\xff": b"%FF", b"%FF": b"%25FF",
    b"ctl\x01\x1f\x7f": b"ctl%01%1F%7F", b"nul\x00byte": b"nul%00byte",
    b"caf\xc3\xa9.\xf0\x9f\x98\x80": b"caf\xc3\xa9/\xf0\x9f\x98\x80",
    b"\xc0\xaf": b"%C0%AF", b"\xed\xa0\x80": b"%ED%A0%80", b"x": b"x.tensor",
    b"x" * 255: b"x" * 255,
    b"y" * 256: b"y" * 200 + b"%%~%016x" % fnv1a64(b"y" * 256),
}


def hostile_model():
    tensors = []
    for i, n in enumerate(HOSTILE_NAMES):
        tensors.append(f32_tensor(n, np.arange(3, dtype=np.float32) + 10 * i))
    kvs = [gkv("general.architecture", "str", "hostile"),
           gkv(b"key.bad\xffutf8", "str", b"value\xfe\x00nul\x01ctl\"q\\b\xe2\x82"),
           gkv("f32.nan", "f32", float("nan")), gkv("f32.inf", "f32", float("-inf")),
           gkv("f32.negzero", "f32", -0.0), gkv("f64.negzero", "f64", -0.0),
           gkv("u64.max", "u64", 2**64 - 1), gkv("i64.min", "i64", -2**63),
           gkv("arr.str", "arr", [b"\xff", b"ok", b""], elem="str")]
    return write_file(os.path.join(TMP, "hostile.gguf"), gguf_bytes(tensors, kvs))


def json_escaped(b):
    """What json.loads gives for weightfs's JSON string of bytes b: valid
    UTF-8 as text, each other byte as the lone surrogate U+DC80 + (byte -
    0x80) (its \\udcXX escape), as Python's surrogateescape decodes it.
    Built by hand from the naming model's UTF-8 check rather than with
    b.decode("utf-8", "surrogateescape"), so the two are compared."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = utf8_len(b, i) if c >= 0x80 else 1
        if n == 0:
            out.append(chr(0xDC00 + c))
            i += 1
        else:
            out.append(b[i:i + n].decode("utf-8"))
            i += n
    s = "".join(out)
    assert s == b.decode("utf-8", "surrogateescape"), b
    return s


def check_invalid_utf8_distinct():
    """Two keys, two string values and two tensor names that differ only in
    a byte that is not UTF-8: with U+FFFD they became one string in the JSON
    files and json.loads kept one key.  Each must now be its own string and
    give back its bytes through surrogateescape."""
    keys, names = [b"k\xff", b"k\xfe"], [b"t\xff", b"t\xfe"]
    tensors = [f32_tensor(n, np.arange(2, dtype=np.float32) + i) for i, n in enumerate(names)]
    kvs = [gkv(k, "str", b"v" + k[1:]) for k in keys]
    model = write_file(os.path.join(TMP, "utf8-distinct.gguf"), gguf_bytes(tensors, kvs))
    errs = Errs()
    with Mount(model) as m:
        with open(m.path("metadata.json"), "rb") as f:
            pairs = json.loads(f.read().decode("utf-8"), object_pairs_hook=lambda p: p)
        got = [(k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape"))
               for k, v in pairs]
        if got != [(k, b"v" + k[1:]) for k in keys]:
            errs.add("metadata.json pairs %r" % (pairs,))
        with open(m.path("tensors.json"), "rb") as f:
            tj = json.loads(f.read().decode("utf-8"))
        got_n = [e["name"].encode("utf-8", "surrogateescape") for e in tj["tensors"]]
        if got_n != names:
            errs.add("tensors.json names %r" % ([e["name"] for e in tj["tensors"]],))
        for e, n in zip(tj["tensors"], names):
            if os.getxattr(m.path(e["path"].encode()), "user.weightfs.name") != n:
                errs.add("%r: path %r is not that tensor" % (n, e["path"]))
    errs.raise_if_any()


def group_naming():
    model = hostile_model()
    with Mount(model) as m:
        tj = {}

        def paths():
            errs = Errs()
            with open(m.path("tensors.json"), "rb") as f:
                tj.update(json.loads(f.read().decode("utf-8")))
            ents = tj["tensors"]
            if len(ents) != len(HOSTILE_NAMES):
                raise Fail("%d tensors listed, %d in the model" % (len(ents), len(HOSTILE_NAMES)))
            want_paths = expected_paths(HOSTILE_NAMES)
            seen = set()
            for i, (raw, e, wp) in enumerate(zip(HOSTILE_NAMES, ents, want_paths)):
                pb = e["path"].encode()
                if e["name"] != json_escaped(raw):
                    errs.add("tensor %d: name %r, expected %r" % (i, e["name"], json_escaped(raw)))
                elif e["name"].encode("utf-8", "surrogateescape") != raw:
                    errs.add("tensor %d: name %r does not round-trip" % (i, e["name"]))
                if pb != wp:
                    errs.add("%r: path %r, expected by the naming rules %r" % (raw[:40], pb[:60], wp[:60]))
                if raw in HOSTILE_FIXED and pb != HOSTILE_FIXED[raw]:
                    errs.add("%r: path %r, expected %r" % (raw[:40], pb[:60], HOSTILE_FIXED[raw][:60]))
                if pb in seen:
                    errs.add("%r: duplicate path %r" % (raw[:40], pb[:60]))
                seen.add(pb)
                valid_components(pb, errs, repr(raw[:40]))
            errs.raise_if_any()
        check("naming: hostile GGUF paths follow the rules, unique, valid", paths)

        def reach():
            errs = Errs()
            for i, (raw, e) in enumerate(zip(HOSTILE_NAMES, tj.get("tensors", []))):
                p = m.path(e["path"].encode())
                exp = (np.arange(3, dtype="<f4") + 10 * i).tobytes()
                try:
                    with open(p, "rb") as f:
                        got = f.read()
                    if got != exp:
                        errs.add("%r: wrong contents" % raw[:40])
                    if os.getxattr(p, "user.weightfs.name") != raw:
                        errs.add("%r: user.weightfs.name %r" % (raw[:40], os.getxattr(
                            p, "user.weightfs.name")[:40]))
                except OSError as ex:
                    errs.add("%r at %r: %s" % (raw[:40], e["path"][:60], ex.strerror))
            found = walk_files(m)
            want_f = {e["path"].encode() for e in tj.get("tensors", [])} | \
                {b"metadata.json", b"tensors.json"}
            if found != want_f:
                errs.add("os.walk: %d extra, %d missing" % (len(found - want_f), len(want_f - found)))
            errs.raise_if_any()
        check("naming: every hostile tensor reachable with its contents and name xattr", reach)

        def meta():
            with open(m.path("metadata.json"), "rb") as f:
                raw = f.read()
            pairs = loads_exact(raw)
            d = dict(pairs)
            errs = Errs()
            k = json_escaped(b"key.bad\xffutf8")
            if d.get(k) != json_escaped(b"value\xfe\x00nul\x01ctl\"q\\b\xe2\x82"):
                errs.add("invalid UTF-8 key/value: %r" % (d.get(k),))
            if d.get("f32.nan") != "NaN" or d.get("f32.inf") != "-Infinity":
                errs.add("nan/inf: %r %r" % (d.get("f32.nan"), d.get("f32.inf")))
            for key in ("f32.negzero", "f64.negzero"):
                v = d.get(key)
                if not isinstance(v, Num) or math.copysign(1.0, float(v.text)) != -1.0:
                    errs.add("%s: %r has lost the sign of zero" % (key, v))
            if not isinstance(d.get("u64.max"), Num) or d["u64.max"].text != str(2**64 - 1):
                errs.add("u64.max: %r" % d.get("u64.max"))
            if not isinstance(d.get("i64.min"), Num) or d["i64.min"].text != str(-2**63):
                errs.add("i64.min: %r" % d.get("i64.min"))
            if d.get("arr.str") != ["\udcff", "ok", ""]:
                errs.add("arr.str: %r" % d.get("arr.str"))
            errs.raise_if_any()
        check("naming: metadata.json of hostile keys/values is valid exact JSON", meta)
        check("stat: tree of the hostile GGUF", check_stat_tree, m, model)
        check("stat: ls/du/find/tree on the hostile GGUF", check_tools, m, len(HOSTILE_NAMES))
    check("naming: keys and names differing only in invalid UTF-8 stay distinct in the JSON files",
          check_invalid_utf8_distinct)


# ---------------------------------------------------------------- group: stat

def check_dir_size(d, st):
    """A directory's size: its entries as ext4 writes them (8 bytes + name,
    padded to 4), rounded up to 4 KiB; never 0."""
    n = 12 + 12 + sum((8 + len(x) + 3) & ~3 for x in os.listdir(d))
    want = (n + 4095) // 4096 * 4096
    if st.st_size != want or st.st_blocks != want // 512:
        return "directory size %d, st_blocks %d, expected %d, %d" % (st.st_size, st.st_blocks,
                                                                     want, want // 512)
    return ""


def check_df(m):
    """statfs agrees with du to the byte, and has nothing free."""
    sv = os.statvfs(m.mp)
    r = subprocess.run(["du", "-s", "-B1", m.mp], stdout=subprocess.PIPE, timeout=60,
                       env=dict(os.environ, LC_ALL="C"))
    du = int(r.stdout.split()[0])
    nodes = sum(1 + len(fs) for _, _, fs in os.walk(m.mp))
    errs = []
    if sv.f_frsize != 4096 or sv.f_bsize != 4096:
        errs.append("f_frsize %d f_bsize %d, expected 4096" % (sv.f_frsize, sv.f_bsize))
    if sv.f_blocks * sv.f_frsize != du:
        errs.append("statfs used %d bytes, du -s -B1 %d" % (sv.f_blocks * sv.f_frsize, du))
    if sv.f_bfree or sv.f_bavail or sv.f_ffree or sv.f_favail:
        errs.append("free space or inodes on a read-only mount: bfree %d bavail %d ffree %d "
                    "favail %d" % (sv.f_bfree, sv.f_bavail, sv.f_ffree, sv.f_favail))
    if sv.f_files != nodes:
        errs.append("f_files %d, expected %d nodes" % (sv.f_files, nodes))
    if not sv.f_flag & os.ST_RDONLY:
        errs.append("ST_RDONLY not set")
    r = subprocess.run(["df", "-B1", "--output=used,avail", m.mp], stdout=subprocess.PIPE,
                       timeout=60, env=dict(os.environ, LC_ALL="C"))
    used, avail = (int(x) for x in r.stdout.split()[-2:])
    if used != du or avail != 0:
        errs.append("df says used %d avail %d; du %d" % (used, avail, du))
    if errs:
        raise Fail("; ".join(errs))
    return "%d bytes used" % du


def check_stat_tree(m, model):
    errs = Errs()
    mst = os.stat(model)
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode("utf-8"))
    root = m.mp.encode()
    inos = {}
    for d, dirs, files in os.walk(root):
        st = os.lstat(d)
        rel = os.path.relpath(d, root)
        if stat.S_IFMT(st.st_mode) != stat.S_IFDIR or stat.S_IMODE(st.st_mode) != 0o555:
            errs.add("%r: mode %o" % (rel, st.st_mode))
        if st.st_nlink != 2 + len(dirs):
            errs.add("%r: st_nlink %d, expected 2 + %d subdirs" % (rel, st.st_nlink, len(dirs)))
        if st.st_mtime_ns != mst.st_mtime_ns:
            errs.add("%r: mtime %d != model's %d" % (rel, st.st_mtime_ns, mst.st_mtime_ns))
        if st.st_uid != os.getuid() or st.st_gid != os.getgid():
            errs.add("%r: owner %d:%d" % (rel, st.st_uid, st.st_gid))
        if check_dir_size(d, st):
            errs.add("%r: %s" % (rel, check_dir_size(d, st)))
        inos.setdefault(st.st_ino, []).append(rel)
        if os.stat(os.path.join(d, b"..")).st_ino != (os.stat(os.path.dirname(d)).st_ino
                                                     if d != root else st.st_ino) and d != root:
            errs.add("%r: '..' has the wrong inode" % rel)
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_IFMT(st.st_mode) != stat.S_IFREG or stat.S_IMODE(st.st_mode) != 0o444:
                errs.add("%r: mode %o" % (rel, st.st_mode))
            if st.st_nlink != 1:
                errs.add("%r: st_nlink %d" % (rel, st.st_nlink))
            # whole 4 KiB fragments, as df counts them; never read as sparse
            if st.st_blocks != (st.st_size + 4095) // 4096 * 8:
                errs.add("%r: st_blocks %d for size %d" % (rel, st.st_blocks, st.st_size))
            if st.st_mtime_ns != mst.st_mtime_ns:
                errs.add("%r: mtime differs from the model's" % rel)
            inos.setdefault(st.st_ino, []).append(rel)
    dup = [v for v in inos.values() if len(v) > 1]
    if dup:
        errs.add("inode numbers shared: %r" % dup[:3])
    # inode numbering of docs/naming.md: root 1, metadata.json 2, tensors.json 3,
    # directories in the order first met, then tensor files in model order
    if os.stat(root).st_ino != 1 or os.stat(m.path("metadata.json")).st_ino != 2 or \
            os.stat(m.path("tensors.json")).st_ino != 3:
        errs.add("root/metadata.json/tensors.json are not inodes 1/2/3")
    dir_order = []
    seen = set()
    for e in tj["tensors"]:
        parts = e["path"].encode().split(b"/")
        for k in range(1, len(parts)):
            dp = b"/".join(parts[:k])
            if dp not in seen:
                seen.add(dp)
                dir_order.append(dp)
    for i, dp in enumerate(dir_order):
        ino = os.stat(os.path.join(root, dp)).st_ino
        if ino != 4 + i:
            errs.add("directory %r: inode %d, expected %d" % (dp[:60], ino, 4 + i))
            break
    for i, e in enumerate(tj["tensors"]):
        try:
            ino = os.stat(m.path(e["path"].encode())).st_ino
        except OSError:
            continue
        if ino != 4 + len(dir_order) + i:
            errs.add("tensor %r: inode %d, expected %d" % (e["path"][:60], ino,
                                                          4 + len(dir_order) + i))
            break
    # listing order is bytewise
    for d, dirs, files in os.walk(root):
        names = os.listdir(d)
        if names != sorted(names):
            errs.add("%r: readdir not sorted bytewise" % os.path.relpath(d, root))
            break
    errs.raise_if_any()


def check_tools(m, n_tensors):
    errs = Errs()
    env = dict(os.environ, LC_ALL="C")
    cmds = [["ls", "-lR", m.mp], ["du", "-s", m.mp], ["find", m.mp]]
    if shutil.which("tree"):
        cmds.append(["tree", "-a", m.mp])
    for cmd in cmds:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=env)
        if r.returncode != 0:
            errs.add("%s exited %d: %s" % (cmd[0] + " " + cmd[1], r.returncode,
                                          r.stderr.decode(errors="replace").strip()[:200]))
    r = subprocess.run(["find", m.mp, "-type", "f"], stdout=subprocess.PIPE, timeout=60)
    nf = len([l for l in r.stdout.split(b"\n") if l])
    if nf != n_tensors + n_generated(m):
        errs.add("find -type f lists %d files, expected %d" % (nf, n_tensors + n_generated(m)))
    r = subprocess.run(["du", "-s", "-B1", "--apparent-size", m.mp], stdout=subprocess.PIPE,
                       timeout=60)
    errs.raise_if_any()


def group_stat():
    for model in (os.path.join(GGML, "mixed_llama_tiny.gguf"),
                  os.path.join(STO, "model_like.safetensors"),
                  os.path.join(STO, "awkward_names.safetensors"),
                  os.path.join(GGML, "meta_only.gguf")):
        with Mount(model) as m:
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode("utf-8"))
            base = os.path.basename(model)
            check("stat: tree of %s" % base, check_stat_tree, m, model)
            check("stat: ls/du/find/tree on %s" % base, check_tools, m, len(tj["tensors"]))
            check("stat: df and statfs agree with du, nothing free, on %s" % base, check_df, m)

            def walk():
                want_f = {e["path"].encode() for e in tj["tensors"]}
                found = walk_files(m) - {b"metadata.json", b"tensors.json"}
                if found != want_f:
                    raise Fail("os.walk: extra %r missing %r" % (sorted(found - want_f)[:5],
                                                                sorted(want_f - found)[:5]))
            check("stat: os.walk finds exactly the tensors of %s" % base, walk)


# ---------------------------------------------------------------- group: xattr

def libc_getxattr(path, name, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    r = libc.getxattr(path.encode() if isinstance(path, str) else path, name.encode(),
                      buf if size else None, ctypes.c_size_t(size))
    return r, ctypes.get_errno() if r < 0 else 0


def libc_listxattr(path, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    r = libc.listxattr(path.encode(), buf if size else None, ctypes.c_size_t(size))
    return r, ctypes.get_errno() if r < 0 else 0


def group_xattr():
    with Mount(os.path.join(GGML, "mixed_llama_tiny.gguf")) as m:
        with open(m.path("tensors.json"), "rb") as f:
            tj = json.loads(f.read().decode("utf-8"))

        def tensors():
            errs = Errs()
            names = {"user.weightfs.shape", "user.weightfs.dtype", "user.weightfs.type",
                     "user.weightfs.name"}
            for e in tj["tensors"]:
                p = m.path(e["path"])
                lst = os.listxattr(p)
                if set(lst) != names or len(lst) != 4:
                    errs.add("%s: listxattr %r" % (e["path"], lst))
                shape = os.getxattr(p, "user.weightfs.shape").decode()
                if shape != "[" + ", ".join(str(d) for d in e["shape"]) + "]":
                    errs.add("%s: shape xattr %r vs %r" % (e["path"], shape, e["shape"]))
                if json.loads(shape) != e["shape"]:
                    errs.add("%s: shape xattr is not the JSON shape" % e["path"])
                if os.getxattr(p, "user.weightfs.dtype").decode() != e["dtype"]:
                    errs.add("%s: dtype xattr" % e["path"])
                if os.getxattr(p, "user.weightfs.type").decode() != e["type"]:
                    errs.add("%s: type xattr" % e["path"])
                if os.getxattr(p, "user.weightfs.name").decode() != e["name"]:
                    errs.add("%s: name xattr" % e["path"])
                for bad in ("user.weightfs.nope", "user.weightfs.", "user.other", "user.weightfs.shapex",
                            "trusted.weightfs.shape", "security.selinux"):
                    try:
                        os.getxattr(p, bad)
                        errs.add("%s: getxattr %s succeeded" % (e["path"], bad))
                    except OSError as ex:
                        if ex.errno not in (errno.ENODATA,) and not (
                                bad.startswith(("trusted", "security")) and
                                ex.errno in (errno.ENOTSUP, errno.EPERM)):
                            errs.add("%s: getxattr %s: %s, expected ENODATA" % (
                                e["path"], bad, errno.errorcode.get(ex.errno)))
            # size probing and a too-small buffer
            p = m.path(tj["tensors"][0]["path"])
            full = os.getxattr(p, "user.weightfs.shape")
            r, e0 = libc_getxattr(p, "user.weightfs.shape", 0)
            if r != len(full):
                errs.add("getxattr(size 0) = %d, expected %d" % (r, len(full)))
            r, e1 = libc_getxattr(p, "user.weightfs.shape", 2)
            if r != -1 or e1 != errno.ERANGE:
                errs.add("getxattr(size 2) = %d errno %s, expected ERANGE" % (r, e1))
            r, e2 = libc_listxattr(p, 0)
            if r != len(b"\0".join(n.encode() for n in names)) + 1:
                errs.add("listxattr(size 0) = %d" % r)
            r, e3 = libc_listxattr(p, 3)
            if r != -1 or e3 != errno.ERANGE:
                errs.add("listxattr(size 3) = %d errno %s, expected ERANGE" % (r, e3))
            errs.raise_if_any()
        check("xattr: tensor files: list, values, ENODATA, ERANGE", tensors)

        def dirs():
            errs = Errs()
            for rel in ("", "blk", "blk/0", "metadata.json", "tensors.json"):
                p = m.path(rel) if rel else m.mp
                try:
                    lst = os.listxattr(p)
                    if lst:
                        errs.add("%r: listxattr %r" % (rel, lst))
                except OSError as ex:
                    errs.add("%r: listxattr failed: %s" % (rel, ex))
                for name in ("user.weightfs.shape", "user.weightfs.name", "user.x"):
                    try:
                        os.getxattr(p, name)
                        errs.add("%r: getxattr %s succeeded" % (rel, name))
                    except OSError as ex:
                        if ex.errno != errno.ENODATA:
                            errs.add("%r: getxattr %s: %s" % (rel, name, errno.errorcode.get(ex.errno)))
            errs.raise_if_any()
        check("xattr: directories and json files have none (ENODATA)", dirs)

        def getfattr():
            if not shutil.which("getfattr"):
                skip_or_fail("getfattr not installed (package attr)")
            e = tj["tensors"][0]
            r = subprocess.run(["getfattr", "-d", "-m", "-", m.path(e["path"])],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            out = r.stdout.decode()
            want_s = 'user.weightfs.shape="[%s]"' % ", ".join(str(d) for d in e["shape"])
            if r.returncode != 0 or want_s not in out or 'user.weightfs.type="%s"' % e["type"] not in out:
                raise Fail("getfattr rc %d output %r" % (r.returncode, out[:300]))
            r = subprocess.run(["getfattr", "-R", "-d", m.mp], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            if r.returncode != 0:
                raise Fail("getfattr -R -d rc %d: %s" % (r.returncode, r.stderr[:200]))
        check("xattr: getfattr -d", getfattr)


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
        # issue 12: refused outright, so an /etc/fstab line cannot promise writes
        mp = new_dir()
        rc, out, err, _ = run_cli(["-o", "rw", model, mp])
        if rc != 1 or len(err.splitlines()) != 1 or "weightfs is read-only: remove rw" not in err \
                or is_mounted(mp):
            force_unmount(mp)
            raise Fail("rc %d, %r" % (rc, err))
    check("errors: -o rw is refused in one line (weightfs is read-only: remove rw)", rw_opt)

    def unchanged():
        if sha256_file(model) != h0 or sha256_file(model) != sha256_file(src):
            raise Fail("the model file changed")
    check("errors: model file sha256 unchanged", unchanged)


# ---------------------------------------------------------------- group: cli

def one_line_error(err, model, errs, what, substr=None):
    lines = err.splitlines()
    prefix = "weightfs: %s: " % model
    if len(lines) != 1 or not lines[0].startswith(prefix) or len(lines[0]) <= len(prefix):
        errs.add("%s: stderr is not one line 'weightfs: %s: ...': %r" % (what, model, err[:300]))
    elif substr and substr not in lines[0]:
        errs.add("%s: stderr %r lacks %r" % (what, lines[0], substr))


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
                    "nonempty", "max_threads", "max_idle_threads", "clone_fd"):
            n = len(re.findall(r"^\s+%s\b" % re.escape(opt), out, re.M))
            if n != 1:
                errs.add("%s listed %d times" % (opt, n))
        errs.raise_if_any()
    check("cli: -h lists each option once (no second libfuse list)", help_once)

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


# ---------------------------------------------------------------- group: unmount

def group_unmount():
    model = os.path.join(GGML, "mixed_llama_tiny.gguf")
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        def by_signal(sig=sig):
            m = Mount(model)
            try:
                with open(m.path("blk/0/attn_k/weight"), "rb") as f:
                    f.read()
                m.proc.send_signal(sig)
                try:
                    rc = m.proc.wait(15)
                except subprocess.TimeoutExpired:
                    raise Fail("daemon still running 15 s after %s" % sig.name)
                t0 = time.monotonic()
                while is_mounted(m.mp) and time.monotonic() - t0 < 5:
                    time.sleep(0.01)
                if is_mounted(m.mp):
                    raise Fail("mount still there after the daemon exited")
                if rc < 0:
                    raise Fail("daemon died of signal %d instead of exiting" % -rc)
                if rc != 0:
                    # weightfs(1): exit 0 = unmounted normally; a signal is a normal stop
                    raise Fail("exit status %d after %s, expected 0" % (rc, sig.name))
                san = san_lines(m.stderr())
                if san:
                    raise Fail("sanitizer output: %s" % " / ".join(san[:4]))
                return "exit status %d" % rc
            finally:
                m.kill()
        check("unmount: %s to a -f daemon: exits, mount gone" % sig.name, by_signal)

    def single():
        errs = Errs()
        ref = None
        with Mount(model) as m0:
            with open(m0.path("tensors.json"), "rb") as f:
                ref = f.read()
        with Mount(model, ["-s"]) as m:
            with open(m.path("tensors.json"), "rb") as f:
                if f.read() != ref:
                    errs.add("tensors.json differs between two mounts of the same file")
            rng = random.Random(SEED)
            for t in GGML_MAN["tensors"]:
                if t["file"] != "mixed_llama_tiny.gguf":
                    continue
                verify_bytes(m.path(t["name"].replace(".", "/")), gguf_expected(t), rng, errs,
                             t["name"], t["ne"][0] * 4)
            errs.raise_if_any()
    check("unmount: -s single-threaded mount serves every tensor; same tree twice", single)

    def debug():
        # -d implies -f: the process stays, prints FUSE traffic, unmounts cleanly
        m = Mount(model, ["-d"])
        with open(m.path("tensors.json"), "rb") as f:
            f.read()
        m.finish()
        if "LOOKUP" not in m.stderr() and "lookup" not in m.stderr():
            raise Fail("no debug output on stderr")
    check("unmount: -d (debug, foreground) mounts, logs, unmounts with exit 0", debug)

    def quiet():
        m = Mount(model)
        with open(m.path("tensors.json"), "rb") as f:
            f.read()
        m.finish()
        if m.stderr().strip():
            raise Fail("a clean -f mount and unmount wrote to stderr: %r" % m.stderr().strip()[:300])
    check("unmount: a clean -f mount/unmount prints nothing on stderr", quiet)


# ---------------------------------------------------------------- group: concurrency

def group_concurrency():
    mounts = []
    try:
        pool = []
        for fname in ("mixed_llama_tiny.gguf", "type_q4_K.gguf", "type_iq2_s.gguf"):
            m = Mount(os.path.join(GGML, fname))
            mounts.append(m)
            for t in GGML_MAN["tensors"]:
                if t["file"] == fname:
                    pool.append((m.path(t["name"].replace(".", "/")), gguf_expected(t)))
        for fname in ("model_like.safetensors", "dtype_bf16.safetensors", "dtype_u16.safetensors"):
            m = Mount(os.path.join(STO, fname))
            mounts.append(m)
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode())
            byname = {e["name"]: e for e in tj["tensors"]}
            for t in ST_MAN["tensors"]:
                if t["file"] == fname and t["nbytes"]:
                    with open(os.path.join(STO, t["expected"]), "rb") as f:
                        pool.append((m.path(byname[t["name"]]["path"]), f.read()))

        def run():
            errs = Errs()
            stop = time.monotonic() + 3.0
            counts = [0] * 8

            def worker(k):
                rng = random.Random("%d/thread%d" % (SEED, k))
                try:
                    while time.monotonic() < stop and len(errs) < 5:
                        path, exp = rng.choice(pool)
                        direct = rng.random() < 0.75
                        fd = os.open(path, os.O_RDONLY | (os.O_DIRECT if direct else 0))
                        try:
                            for _ in range(rng.randrange(1, 20)):
                                off = rng.randrange(0, len(exp) + 8)
                                ln = rng.randrange(1, max(2, len(exp) - off + 16))
                                got = os.pread(fd, ln, off)
                                counts[k] += 1
                                if got != exp[off:off + ln]:
                                    errs.add("thread %d: %s pread(%d, %d) wrong" % (k, path, off, ln))
                                    break
                        finally:
                            os.close(fd)
                        if rng.random() < 0.05:
                            os.listxattr(path)
                            os.stat(os.path.dirname(path))
                except Exception as ex:  # noqa: BLE001
                    errs.add("thread %d: %r" % (k, ex))
            threads = [threading.Thread(target=worker, args=(k,)) for k in range(8)]
            for t in threads:
                t.start()
            for t in threads:
                t.join(30)
                if t.is_alive():
                    errs.add("a reader thread hung")
            errs.raise_if_any()
            return "%d preads over %d tensors in 3 s" % (sum(counts), len(pool))
        check("concurrency: 8 threads of random preads, every byte checked", run)
    finally:
        for m in mounts:
            check("concurrency: unmount %s" % os.path.basename(m.model), m.finish)
    name = ("concurrency: threads cannot be created (pids limit): a few lines on stderr, "
            "not one per request")
    cg = pids_cgroup()
    if cg is not None or os.environ.get("CI"):
        check(name, thread_noise, cg)
    else:
        print("# skip - %s: no writable pids cgroup on this machine (not counted)" % name)


def pids_cgroup():
    """A fresh pids cgroup directory (v1 or v2) we may write, or None."""
    for base, ctl in (("/sys/fs/cgroup/pids", "tasks"), ("/sys/fs/cgroup", "cgroup.threads"),
                      ("/sys/fs/cgroup/unified", "cgroup.threads")):
        if not os.path.exists(os.path.join(base, "tasks" if base.endswith("pids") else
                                           "cgroup.controllers")):
            continue
        if not base.endswith("pids"):
            try:
                with open(os.path.join(base, "cgroup.controllers")) as f:
                    if "pids" not in f.read().split():
                        continue
            except OSError:
                continue
        d = os.path.join(base, "wf-test-%d" % os.getpid())
        try:
            os.mkdir(d)
        except OSError:
            continue
        if os.path.exists(os.path.join(d, "pids.max")):
            return d, base, ctl
        os.rmdir(d)
    return None


def thread_noise(cg):
    """libfuse logs every failed thread creation: once per request when the
    workers are all busy.  Those lines must stay few."""
    if cg is None:
        raise Fail("no writable pids cgroup (v1 or v2) to limit the daemon's threads, and CI is set")
    d, base, ctl = cg
    m = Mount(os.path.join(GGML, "mixed_llama_tiny.gguf"))
    try:
        tasks = os.listdir("/proc/%d/task" % m.proc.pid)
        with open(os.path.join(d, "pids.max"), "w") as f:
            f.write(str(len(tasks)))
        for t in tasks:
            with open(os.path.join(d, ctl if ctl == "tasks" else "cgroup.procs"), "w") as f:
                f.write(t if ctl == "tasks" else str(m.proc.pid))
        path = m.path("output/weight")
        stop = time.monotonic() + 2.0
        n = [0]

        def worker():
            fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
            try:
                while time.monotonic() < stop:
                    os.pread(fd, 16384, 0)
                    n[0] += 1
            finally:
                os.close(fd)
        ths = [threading.Thread(target=worker) for _ in range(6)]
        for th in ths:
            th.start()
        for th in ths:
            th.join()
    finally:
        m.finish()
        # the daemon has exited; the cgroup is empty
        try:
            os.rmdir(d)
        except OSError:
            pass
    lines = m.stderr().splitlines()
    failed = [ln for ln in lines if "creating thread" in ln]
    if not failed:
        raise Fail("no thread creation failed: the limit did not bite (%d reads)" % n[0])
    if len(lines) > 10:
        raise Fail("%d lines on stderr for %d reads, e.g. %r" % (len(lines), n[0], lines[:3]))
    return "%d reads, %d lines on stderr" % (n[0], len(lines))


# ---------------------------------------------------------------- group: truncate

CHANGED_MSG = "since it was mounted"


def o_direct_read(fd, ln, off):
    """pread that returns the bytes, or the errno it failed with."""
    try:
        return os.pread(fd, ln, off)
    except OSError as ex:
        return ex.errno


def changed_lines(m):
    return [ln for ln in m.stderr().splitlines() if CHANGED_MSG in ln]


def group_truncate():
    """The file changes under a live mount: every read fails with EIO or
    gives the bytes of the file as mounted, never anything else."""
    fname = "mixed_llama_tiny.gguf"
    src = os.path.join(GGML, fname)
    ts = [t for t in GGML_MAN["tensors"] if t["file"] == fname and gguf_expected(t) is not None]
    model = os.path.join(TMP, "trunc.gguf")
    shutil.copyfile(src, model)
    size = os.path.getsize(model)
    cut = size // 2
    first = min(ts, key=lambda t: t["file_offset"])
    m = Mount(model)
    try:
        def truncated():
            errs = Errs()
            p0 = m.path(first["name"].replace(".", "/"))
            with open(p0, "rb") as f:
                if f.read() != gguf_expected(first):
                    errs.add("before truncation: %s wrong" % first["name"])
            os.truncate(model, cut)
            # every tensor, wholly inside the cut or not, now fails: the file
            # is not the one mounted (the page cache may still hold pages read
            # before, which are right; O_DIRECT bypasses it)
            for t in ts:
                p = m.path(t["name"].replace(".", "/"))
                fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                try:
                    got = o_direct_read(fd, 64, 0)
                    if got != errno.EIO:
                        errs.add("%s (%s cut at %d): read gave %r, expected EIO" % (
                            t["name"], "inside" if t["file_offset"] + t["nbytes"] <= cut
                            else "past", cut, got if isinstance(got, int) else "%d bytes" % len(got)))
                finally:
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("daemon died (exit %s)" % m.proc.returncode)
            else:
                os.stat(m.mp)
                with open(m.path("tensors.json"), "rb") as f:
                    json.loads(f.read().decode())
            lines = changed_lines(m)
            if len(lines) != 1:
                errs.add("daemon said %d lines about the change, expected 1: %r" % (len(lines), lines[:3]))
            errs.raise_if_any()
            return "%d tensors, cut at byte %d of %d" % (len(ts), cut, size)
        check("truncate: MODEL truncated under the mount: every tensor read fails with EIO, "
              "said once on stderr", truncated)
    finally:
        check("truncate: unmount after truncation", m.finish)

    # shrink by one byte and grow back: same size, last byte now zero
    model3 = os.path.join(TMP, "regrow.gguf")
    shutil.copyfile(src, model3)
    last = max(ts, key=lambda t: t["file_offset"] + t["nbytes"])
    with Mount(model3) as m:
        def regrown():
            os.truncate(model3, size - 1)
            os.truncate(model3, size)
            fd = os.open(m.path(last["name"].replace(".", "/")), os.O_RDONLY | os.O_DIRECT)
            try:
                got = o_direct_read(fd, 1 << 20, 0)
            finally:
                os.close(fd)
            if got != errno.EIO:
                raise Fail("read gave %s, expected EIO" % (
                    "the mounted bytes" if got == gguf_expected(last) else
                    "WRONG bytes" if not isinstance(got, int) else os.strerror(got)))
        check("truncate: MODEL shrunk and grown back to its size: EIO, not zeros", regrown)

    # replace the file by rename: the mount keeps serving the old mapping
    model2 = os.path.join(TMP, "replaced.gguf")
    shutil.copyfile(src, model2)
    m = Mount(model2)
    try:
        def replaced():
            errs = Errs()
            other = os.path.join(TMP, "replacement.tmp")
            shutil.copyfile(os.path.join(GGML, "type_q8_0.gguf"), other)
            os.rename(other, model2)
            for t in ts:
                exp = gguf_expected(t)
                verify_bytes(m.path(t["name"].replace(".", "/")), exp, random.Random(SEED), errs,
                             t["name"], t["ne"][0] * 4)
            if m.proc.poll() is not None:
                errs.add("daemon died")
            errs.raise_if_any()
        check("truncate: MODEL replaced by rename: the mount keeps the old contents", replaced)
    finally:
        check("truncate: unmount after replacement", m.finish)
    race_checks()


RACE_SECONDS = float(os.environ.get("WF_TEST_RACE_SECONDS", "4"))


def race_model(last_type):
    """A GGUF whose last tensor (the one a shrinking writer eats) is F32 or
    Q8_0, about 2 MiB of source each.  Returns (bytes, {path: (offset in
    the file, source bytes per block, view bytes per block, expected view)})."""
    rng_np = np.random.default_rng(SEED)
    f32 = rng_np.standard_normal((512, 1024)).astype("<f4")
    q_raw, q_exp = q8_0_blocks(rng_np, 1 << 16)
    f32_t = f32_tensor(b"race.f32", f32)
    q_t = (b"race.q8_0", 8, [2048, 1024], q_raw)
    order = [q_t, f32_t] if last_type == "F32" else [f32_t, q_t]
    data = gguf_bytes(order)
    info = {}
    for name, ty, _, raw in order:
        off = data.index(raw[:4096]) if raw else 0
        info[name.decode().replace(".", "/")] = (
            off, 4 if ty == 0 else 34, 4 if ty == 0 else 128,
            f32.tobytes() if ty == 0 else q_exp)
    return data, info


def race(label, writer, rounds, per_round, readers=2, expect_eio=True, data=None, info=None):
    """Mounts a fresh copy `rounds` times; in each, `readers` threads read
    random O_DIRECT ranges of the model's tensors (biased to just below the
    writer's current end of file) while writer(path, state, stop) changes
    the file.  Every read must give the mounted bytes or EIO."""
    tally_ = {"ok": 0, "eio": 0, "wrong": 0, "other": 0}
    lock = threading.Lock()
    errs = Errs()
    for rnd in range(rounds):
        model = os.path.join(TMP, "race-%s.gguf" % label.replace(" ", "-"))
        write_file(model, data)
        state = {"size": len(data)}
        stop = threading.Event()
        m = Mount(model)
        try:
            fds = {rel: os.open(m.path(rel), os.O_RDONLY | os.O_DIRECT) for rel in info}

            def reader(seed):
                rng = random.Random(seed)
                rels = list(info)
                while not stop.is_set():
                    rel = rng.choice(rels)
                    off0, sblk, vblk, exp = info[rel]
                    # the view byte the current end of file corresponds to
                    vend = max(0, min(len(exp), (state["size"] - off0) // sblk * vblk))
                    if rng.random() < 0.8 and vend > 0:
                        off = max(0, vend - rng.randrange(1, 16384))
                    else:
                        off = rng.randrange(len(exp))
                    ln = rng.randrange(1, 16384)
                    got = o_direct_read(fds[rel], ln, off)
                    with lock:
                        if isinstance(got, int):
                            tally_["eio" if got == errno.EIO else "other"] += 1
                            if got != errno.EIO:
                                errs.add("%s: pread(%d, %d): %s" % (rel, ln, off, os.strerror(got)))
                        elif got == exp[off:off + ln]:
                            tally_["ok"] += 1
                        else:
                            tally_["wrong"] += 1
                            if tally_["wrong"] <= 3:
                                bad = next(i for i, (a, b) in enumerate(zip(got, exp[off:])) if a != b) \
                                    if len(got) == len(exp[off:off + ln]) else -1
                                errs.add("%s: pread(%d, %d) at file size %d: WRONG bytes (first "
                                         "difference at +%d)" % (rel, ln, off, state["size"], bad))
            ths = [threading.Thread(target=reader, args=(SEED + 100 * rnd + i,)) for i in range(readers)]
            for th in ths:
                th.start()
            time.sleep(0.02)
            try:
                writer(model, state, stop, per_round)
            finally:
                stop.set()
                for th in ths:
                    th.join()
                for fd in fds.values():
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("round %d: daemon died (%s)" % (rnd, m.proc.returncode))
            n = len(changed_lines(m))
            if n != (1 if expect_eio else 0):
                errs.add("round %d: daemon said %d lines about the change" % (rnd, n))
            noise = [ln for ln in m.stderr().splitlines() if CHANGED_MSG not in ln]
            if noise:
                errs.add("round %d: %d other lines on stderr, e.g. %r" % (rnd, len(noise), noise[0]))
        finally:
            m.finish()
    if tally_["wrong"] or tally_["other"]:
        errs.add("%d wrong reads" % tally_["wrong"])
    if not expect_eio and tally_["eio"]:
        errs.add("%d reads failed with EIO; the old file should still be served" % tally_["eio"])
    if tally_["ok"] + tally_["eio"] < 100:
        errs.add("only %d reads in the race" % (tally_["ok"] + tally_["eio"]))
    errs.raise_if_any()
    return "%d rounds, %d reads: %d right, %d EIO, 0 wrong" % (
        rounds, sum(tally_.values()), tally_["ok"], tally_["eio"])


def shrinker(path, state, stop, seconds):
    """Truncates the file in small random steps from its end."""
    rng = random.Random(SEED)
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        new = state["size"] - rng.randrange(1, 300)
        if new < 4096:
            break
        os.truncate(path, new)
        state["size"] = new
        time.sleep(0.0005)


def rewriter(path, state, stop, seconds):
    """Rewrites the tensor data in place, in 64 KiB chunks, with other bytes."""
    rng = random.Random(SEED)
    size = state["size"]
    t_end = time.monotonic() + seconds
    fd = os.open(path, os.O_WRONLY)
    try:
        while time.monotonic() < t_end:
            off = rng.randrange(4096, size - 65536)
            os.pwrite(fd, rng.randbytes(65536), off)
    finally:
        os.close(fd)


def renamer(path, state, stop, seconds):
    """Replaces the file by rename, as download tools do, again and again."""
    rng = random.Random(SEED)
    t_end = time.monotonic() + seconds
    tmp = path + ".tmp"
    while time.monotonic() < t_end:
        write_file(tmp, rng.randbytes(state["size"]))
        os.rename(tmp, path)


def race_checks():
    rounds = 4
    per = RACE_SECONDS / rounds
    for last in ("F32", "Q8_0"):
        data, info = race_model(last)
        check("truncate: race: shrinking writer vs O_DIRECT readers just below the end "
              "(%s tensor last): every read right or EIO" % last,
              race, "shrink " + last, shrinker, rounds, per, data=data, info=info)
    data, info = race_model("F32")
    check("truncate: race: in-place rewriter vs readers of F32 and Q8_0: every read right or EIO",
          race, "rewrite", rewriter, rounds, per, data=data, info=info)
    check("truncate: race: replaced by rename again and again: every read right, none EIO",
          race, "rename", renamer, 2, RACE_SECONDS / 2, expect_eio=False, data=data, info=info)


# ---------------------------------------------------------------- group: large

def q8_0_blocks(rng_np, nblocks):
    d = rng_np.uniform(0.001, 0.1, nblocks).astype("<f2")
    q = rng_np.integers(-128, 128, (nblocks, 32), dtype=np.int8)
    raw = np.zeros(nblocks, dtype=[("d", "<f2"), ("q", "i1", 32)])
    raw["d"] = d
    raw["q"] = q
    exp = (d.astype(np.float32)[:, None] * q.astype(np.float32)).astype("<f4")
    return raw.tobytes(), exp.tobytes()


def group_large():
    rng_np = np.random.default_rng(SEED)
    f16 = rng_np.standard_normal((1024, 1536)).astype("<f2")
    q_raw, q_exp = q8_0_blocks(rng_np, 2048 * 96 // 32)
    f32 = rng_np.standard_normal((3, 333333)).astype("<f4")
    tensors = [("big.f16", 1, [1536, 1024], f16.tobytes()),
               ("big.q8_0", 8, [2048, 96], q_raw),
               f32_tensor("big.f32", f32),
               ("edge.scalar", 0, [], struct.pack("<f", 2.5)),      # n_dims 0
               ("edge.empty", 0, [0, 4], b""),                      # zero elements
               ("edge.i16", 25, [3, 1, 1, 2], b"\x01\x80" * 6)]     # 4-D integers
    model = write_file(os.path.join(TMP, "large.gguf"), gguf_bytes(tensors))
    want = {"big/f16": f16.astype("<f4").tobytes(), "big/q8_0": q_exp, "big/f32": f32.tobytes()}
    edge = {"edge/scalar": (struct.pack("<f", 2.5), [], "float32"),
            "edge/empty": (b"", [4, 0], "float32"),
            "edge/i16": (b"\x01\x80" * 6, [2, 1, 1, 3], "int16")}
    with Mount(model) as m:
        def reads():
            errs = Errs()
            rng = random.Random(SEED)
            for rel, exp in want.items():
                p = m.path(rel)
                verify_bytes(p, exp, rng, errs, rel, 4 * 1536, 128)
                fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                try:
                    # reads larger than FUSE's max request size are split by the kernel
                    for off, ln in ((0, len(exp)), (1, 3 << 20), (12345, 1 << 20),
                                    (max(len(exp) - (1 << 20) - 3, 7), 2 << 20),
                                    ((1 << 19) + 2, 300001)):
                        if os.pread(fd, ln, off) != exp[off:off + ln]:
                            errs.add("%s: large O_DIRECT pread(%d, %d) wrong" % (rel, off, ln))
                finally:
                    os.close(fd)
            errs.raise_if_any()
            return "%.1f MiB of views" % (sum(len(v) for v in want.values()) / 2**20)
        check("large: multi-MiB F16/Q8_0/F32 tensors, reads beyond one FUSE request", reads)

        def edges():
            errs = Errs()
            with open(m.path("tensors.json"), "rb") as f:
                tj = {e["path"]: e for e in json.loads(f.read().decode())["tensors"]}
            for rel, (exp, shape, dt) in edge.items():
                e = tj.get(rel)
                if e is None:
                    errs.add("%s not listed" % rel)
                    continue
                if e["shape"] != shape or e["dtype"] != dt or e["size"] != len(exp):
                    errs.add("%s: listed as %r" % (rel, e))
                if os.getxattr(m.path(rel), "user.weightfs.shape").decode() != json.dumps(shape):
                    errs.add("%s: shape xattr %r" % (rel, os.getxattr(m.path(rel), "user.weightfs.shape")))
                verify_bytes(m.path(rel), exp, random.Random(SEED), errs, rel)
                numpy_checks(m, e, exp, errs, rel)
            errs.raise_if_any()
        check("large: GGUF scalar (n_dims 0), zero-element and 4-D integer tensors", edges)


# ---------------------------------------------------------------- group: many

def group_many():
    n = 100000
    t0 = time.monotonic()
    vals = np.arange(n * 8, dtype="<f4")
    raw = vals.tobytes()
    names = [b"blk.%d.t.%d" % (i // 100, i % 100) for i in range(n)]
    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 1))
    head += gkv("general.architecture", "str", "many")
    info = b"".join(gstr(nm) + struct.pack("<IQIQ", 1, 8, 0, i * 32) for i, nm in enumerate(names))
    head += info
    head += b"\0" * (-len(head) % 32)
    model = write_file(os.path.join(TMP, "many.gguf"), bytes(head) + raw)
    gen = time.monotonic() - t0
    state = {}

    def mount_it():
        state["m"] = Mount(model)
        return "mounted in %.2f s (file generated in %.2f s)" % (state["m"].t_ready, gen)
    if not check("many: a GGUF with 100,000 tensors mounts", mount_it):
        return
    m = state["m"]
    try:
        def listing():
            errs = Errs()
            t1 = time.monotonic()
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode())
            if len(tj["tensors"]) != n:
                errs.add("tensors.json lists %d tensors" % len(tj["tensors"]))
            rng = random.Random(SEED)
            for i in [0, n - 1] + [rng.randrange(n) for _ in range(30)]:
                e = tj["tensors"][i]
                want_p = "blk/%d/t/%d" % (i // 100, i % 100)
                if e["name"] != names[i].decode() or e["path"] != want_p:
                    errs.add("entry %d: %r -> %r" % (i, e["name"], e["path"]))
                with open(m.path(want_p), "rb") as f:
                    if f.read() != raw[i * 32:(i + 1) * 32]:
                        errs.add("%s: wrong contents" % want_p)
            if len(os.listdir(m.path("blk"))) != n // 100:
                errs.add("blk/ has %d entries" % len(os.listdir(m.path("blk"))))
            if sorted(os.listdir(m.path("blk/517/t")), key=int) != [str(k) for k in range(100)]:
                errs.add("blk/517/t listing wrong")
            if os.stat(m.path("blk")).st_nlink != 2 + n // 100:
                errs.add("blk st_nlink %d" % os.stat(m.path("blk")).st_nlink)
            errs.raise_if_any()
            return "tensors.json read+parsed and 32 tensors checked in %.2f s" % (time.monotonic() - t1)
        check("many: tensors.json lists 100,000 entries; random tensors read right", listing)
    finally:
        check("many: unmount", m.finish)


# ---------------------------------------------------------------- group: bounds

def st_bytes(names):
    """A safetensors file of one-byte U8 tensors named names (bytes, valid
    UTF-8); returns (file bytes, header bytes)."""
    ents = [json.dumps(n.decode(), ensure_ascii=False).encode()
            + b':{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}' % (i, i + 1)
            for i, n in enumerate(names)]
    head = b"{" + b",".join(ents) + b"}"
    return struct.pack("<Q", len(head)) + head + bytes(range(256)) * (len(names) // 256) \
        + bytes(range(len(names) % 256)), 8 + len(head)


def daemon_memory(m):
    st = {}
    with open("/proc/%d/status" % m.proc.pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                st[k] = int(v.split()[0]) * 1024
    return st


def memory_bound(m, header, what):
    """docs/security.md: after mounting, VmRSS <= 10 x header + 64 MiB.  A
    sanitizer build's allocator keeps freed memory in quarantine, so there
    the figure is only reported."""
    st = daemon_memory(m)
    bound = 10 * header + 64 * 2**20
    info = "%s: header %.1f MB, mounted in %.2f s, VmRSS %.1f MiB, VmHWM %.1f MiB, bound %.1f MiB" % (
        what, header / 1e6, m.t_ready, st["VmRSS"] / 2**20, st["VmHWM"] / 2**20, bound / 2**20)
    if SANITIZED:
        return info + " (not asserted in a sanitizer build)"
    if st["VmRSS"] > bound:
        raise Fail("over the bound: " + info)
    return info


def group_bounds():
    MiB = 2**20
    # hostile deep and long names: each must be openable, find must be quick
    names = [b"." * 100000, b"." * 31, b"." * 32, b"x." * 40 + b"y",
             b".".join([b"c" * 250] * 400), b".".join([b"d" * 254] * 3) + b".e",
             b"a" * 2000000, b"b." * 30 + b"b" * 300 + b".tail", b"\xc3\xa9." * 50,
             b"%" * 300 + b"." + b"%" * 300, b"q" * 500 + b"." + b"r" * 500,
             b".".join(b"s%d" % i for i in range(200))]
    names += [b"k%d" % i + b"." * 40 for i in range(20)]
    data, header = st_bytes(names)
    model = write_file(os.path.join(TMP, "deep.safetensors"), data)
    want = expected_paths(names, header)
    state = {}

    def mount_it():
        state["m"] = Mount(model)
        return memory_bound(state["m"], header, "deep names")
    if check("bounds: deep and long safetensors names mount within the memory bound", mount_it):
        m = state["m"]
        try:
            def paths():
                errs = Errs()
                with open(m.path("tensors.json"), "rb") as f:
                    tj = json.loads(f.read().decode())
                for i, (e, wp) in enumerate(zip(tj["tensors"], want)):
                    pb = e["path"].encode()
                    if pb != wp:
                        errs.add("tensor %d: path %r..., expected %r..." % (i, pb[:80], wp[:80]))
                    valid_components(pb, errs, "tensor %d" % i)
                    if len(pb) > TREE_DIR_BYTES + 255 or pb.count(b"/") > TREE_MAX_DIRS:
                        errs.add("tensor %d: path of %d bytes, %d components" % (
                            i, len(pb), pb.count(b"/") + 1))
                    # open(2) on the full path under the mount point
                    try:
                        with open(m.path(pb), "rb") as f:
                            if f.read() != bytes([i % 256]):
                                errs.add("tensor %d: wrong contents" % i)
                    except OSError as ex:
                        errs.add("tensor %d: open: %s" % (i, ex.strerror))
                errs.raise_if_any()
                return "%d paths, longest %d bytes" % (len(want), max(len(w) for w in want))
            check("bounds: every deep or long name has its rule-8 path, opens and reads", paths)

            def find():
                t0 = time.monotonic()
                r = subprocess.run(["find", m.mp, "-type", "f"], stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=60)
                secs = time.monotonic() - t0
                n = r.stdout.count(b"\n")
                if r.returncode != 0 or n != len(names) + n_generated(m):
                    raise Fail("find: exit %d, %d files, %r" % (r.returncode, n, r.stderr[:200]))
                if secs > 10:
                    raise Fail("find took %.1f s" % secs)
                return "%.2f s" % secs
            check("bounds: find walks the deep tree quickly and finds every file", find)
        finally:
            check("bounds: deep names unmount", m.finish)

    # memory: the densest directories a header can buy, many tiny tensors,
    # a huge metadata array (full-size figures: tools/memcheck.py)
    def dense_gguf(n):
        head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 0))
        head += b"".join(gstr(b"k%d" % i + b"." * 40) + struct.pack("<IQIQ", 1, 1, 0, i * 32)
                         for i in range(n))
        head += b"\0" * (-len(head) % 32)
        return bytes(head) + b"\0" * (32 * n), len(head)

    def many_gguf(n):
        head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 0))
        head += b"".join(gstr(b"t%d" % i) + struct.pack("<IQIQ", 1, 1, 0, i * 32) for i in range(n))
        head += b"\0" * (-len(head) % 32)
        return bytes(head) + b"\0" * (32 * n), len(head)

    def tokens_gguf(n):
        arr = b"".join(gstr(b"t%d" % i) for i in range(n))
        head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 1, 1))
        head += gstr(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n) + arr
        head += gstr(b"w") + struct.pack("<IQIQ", 1, 8, 0, 0)
        head += b"\0" * (-len(head) % 32)
        return bytes(head) + b"\0" * 32, len(head)

    cases = [("dot chains, GGUF, 30,000 tensors", "dense.gguf", lambda: dense_gguf(30000)),
             ("dot chains, safetensors, 20,000 tensors", "dense.safetensors",
              lambda: st_bytes([b"k%d" % i + b"." * 40 for i in range(20000)])),
             ("tiny tensors, GGUF, 200,000", "tiny.gguf", lambda: many_gguf(200000)),
             ("tiny tensors, safetensors, 200,000", "tiny.safetensors",
              lambda: st_bytes([b"t%d" % i for i in range(200000)])),
             ("1,000,000-string metadata array, GGUF", "tokens.gguf", lambda: tokens_gguf(1000000))]
    for what, fname, gen in cases:
        def one(what=what, fname=fname, gen=gen):
            data, header = gen()
            model = write_file(os.path.join(TMP, fname), data)
            del data
            with Mount(model) as m:
                info = memory_bound(m, header, what)
                with open(m.path("tensors.json"), "rb") as f:
                    json.loads(f.read().decode())
            os.remove(model)
            return info
        check("bounds: %s within 10 x header + 64 MiB" % what, one)


# ---------------------------------------------------------------- group: malformed

# A valid header of 100,000 tensors (6.6 MB of JSON) and an address-space
# limit that holds the binary, its libraries and the mapping of the file but
# not cJSON's tree of it (~70 MB): the parse runs out of memory part way.
# Without the hooks in wf_st.c that was "header: invalid JSON near byte N",
# exit 3.  (Measured: 15-80 MB limits all fail inside cJSON; 40 MB is the
# middle.)
OOM_TENSORS = 100000
OOM_LIMIT_KB = 40000


def check_oom_header():
    if SANITIZED:
        # not a gap: the normal build, which CI runs too, runs this check
        raise Skip("ASan reserves terabytes of shadow memory up front, so no ulimit -v leaves "
                   "room to start the sanitizer build; the normal build runs it")
    import resource
    path = os.path.join(TMP, "oom-header.safetensors")
    hdr = json.dumps({"t%06d" % i: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
                      for i in range(OOM_TENSORS)}, separators=(",", ":")).encode()
    write_file(path, struct.pack("<Q", len(hdr)) + hdr + bytes(OOM_TENSORS))
    mp = new_dir("oom-")

    def limit():
        reset_signals()
        lim = OOM_LIMIT_KB * 1024
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    p = subprocess.Popen([BIN, path, mp], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=limit)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Fail("did not finish within 30 s")
    err = err.decode("utf-8", "replace")
    errs = Errs()
    if is_mounted(mp):
        errs.add("mounted under a %d KB limit (raise OOM_TENSORS)" % OOM_LIMIT_KB)
        force_unmount(mp)
    if p.returncode != 5:
        errs.add("exit %d, expected 5 (out of memory): %r" % (p.returncode, err.strip()[:200]))
    one_line_error(err, path, errs, "ulimit -v %d" % OOM_LIMIT_KB, "out of memory")
    errs.raise_if_any()
    return "%d-byte header under ulimit -v %d: %s" % (len(hdr), OOM_LIMIT_KB, err.strip()[len(path) + 12:])


def group_malformed():
    expect = os.path.join(MALFORMED, "expect.json")
    if not os.path.exists(expect):
        raise Fail("tests/malformed/expect.json does not exist")
    entries = load_json(expect)
    from concurrent.futures import ThreadPoolExecutor

    def one(ent):
        path = os.path.join(MALFORMED, ent["file"])
        mp = new_dir("mal-")
        errs = []
        try:
            rc, out, err, secs = run_cli([path, mp], timeout=10.0, env=san_env())
        except Fail as ex:
            force_unmount(mp)
            return ["%s: %s" % (ent["file"], ex)]
        if rc == 0:
            for p in daemon_pid(mp):
                force_unmount(mp)
                wait_pid(p, 10)
        if rc != ent["exit"]:
            errs.append("%s: exit %d, expected %d (%s)" % (ent["file"], rc, ent["exit"],
                                                           err.strip()[:200]))
        if ent["exit"] != 0:
            lines = err.splitlines()
            prefix = "weightfs: %s: " % path
            if len(lines) != 1 or not lines[0].startswith(prefix):
                errs.append("%s: stderr not one 'weightfs: PATH: ' line: %r" % (ent["file"], err[:300]))
            elif ent.get("message") and ent["message"] not in lines[0]:
                errs.append("%s: %r lacks %r" % (ent["file"], lines[0][len(prefix):][:200],
                                                 ent["message"]))
        if san_lines(err):
            errs.append("%s: sanitizer output" % ent["file"])
        if secs > 10:
            errs.append("%s: took %.1f s" % (ent["file"], secs))
        if is_mounted(mp):
            errs.append("%s: left a mount" % ent["file"])
            force_unmount(mp)
        return errs

    before = sanlog_files()
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(one, entries))
    bad = [e for r in results for e in r]
    new = [f for f in sanlog_files() if f not in before]
    for ent, r in zip(entries, results):
        if r:
            report("malformed: %s" % ent["file"], False, "; ".join(r))
    if new:
        with open(new[0], errors="replace") as f:
            report("malformed: sanitizer logs", False, f.read()[:500])
    n_ok = sum(1 for r in results if not r)
    report("malformed: %d of %d files rejected as expected.json says" % (n_ok, len(entries)),
           not bad, "%d files failed (listed above)" % sum(1 for r in results if r),
           info="%.1f s" % (time.monotonic() - t0))
    check("malformed: out of memory parsing a valid safetensors header is exit 5, one line",
          check_oom_header)


# ---------------------------------------------------------------- group: sets
# MODEL as a whole checkpoint (wf_set.c): a split GGUF, a safetensors index
# and its shards, a model folder, a hub cache.

def st_set_bytes(tensors, md=None):
    """A safetensors file of (name, numpy array) pairs, in that order."""
    hdr, off, data = {}, 0, []
    if md is not None:
        hdr["__metadata__"] = md
    for name, arr in tensors:
        b = np.ascontiguousarray(arr).tobytes()
        dt = {"<f4": "F32", "<f2": "F16", "<i4": "I32"}[arr.dtype.str]
        hdr[name] = {"dtype": dt, "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        data.append(b)
    h = json.dumps(hdr).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(data)


def make_st_set(d, n_shards=3, per_shard=3, prefix="model", index=True, seed=0):
    """n_shards shards PREFIX-0000i-of-0000N.safetensors (and an index) in d.
    Returns {tensor name: (shard file, expected bytes of its mount file)}."""
    os.makedirs(d, exist_ok=True)
    rng = np.random.default_rng(seed)
    exp, wm, total = {}, {}, 0
    for s in range(n_shards):
        fn = "%s-%05d-of-%05d.safetensors" % (prefix, s + 1, n_shards)
        ts = []
        for k in range(per_shard):
            name = "model.layers.%d.mlp.w%d.weight" % (s, k)
            shape = (3 + k, 5) if k % 3 else (7,)
            arr = rng.standard_normal(shape).astype("<f4") if k % 3 != 2 else \
                rng.standard_normal(shape).astype("<f2")
            ts.append((name, arr))
            # F16 shows as float32 in the mount
            exp[name] = (fn, arr.astype("<f4").tobytes())
            wm[name] = fn
            total += arr.nbytes
        write_file(os.path.join(d, fn), st_set_bytes(ts, {"format": "pt", "shard": str(s)}))
    if index:
        with open(os.path.join(d, "%s.safetensors.index.json" % prefix), "w") as f:
            json.dump({"metadata": {"total_size": total}, "weight_map": wm}, f, indent=2)
    return exp


SIDECARS = {
    "config.json": b'{"architectures": ["LlamaForCausalLM"], "model_type": "llama"}\n',
    "generation_config.json": b'{"do_sample": true}\n',
    "tokenizer.json": b'{"version": "1.0", "model": {"type": "BPE", "vocab": {"\xc3\xa9": 0}}}',
    "tokenizer_config.json": b'{"chat_template": "{{ x }}"}',
    "special_tokens_map.json": b'{"bos_token": "<s>"}',
    "merges.txt": b"#version: 0.2\na b\n",
    "README.md": b"---\nlicense: mit\n---\n# tiny\n",
    "chat_template.jinja": b"{% for m in messages %}{{ m }}{% endfor %}",
    "tokenizer.model": bytes(range(256)) * 4,
}


def make_hf_folder(d):
    exp = make_st_set(d)
    for name, b in SIDECARS.items():
        write_file(os.path.join(d, name), b)
    write_file(os.path.join(d, "pytorch_model.bin"), b"PK\3\4" + bytes(100))
    write_file(os.path.join(d, "training_args.pt"), b"PK\3\4" + bytes(10))
    os.makedirs(os.path.join(d, "onnx"), exist_ok=True)
    write_file(os.path.join(d, "onnx", "model.onnx"), b"onnx")
    write_file(os.path.join(d, ".gitattributes"), b"*.bin filter=lfs\n")
    return exp


def make_hub(root, src):
    """A hub cache models--org--tiny of folder src: blobs, refs/main and
    snapshots/<rev>/ symlinks into ../../blobs/.  Returns its path."""
    repo = os.path.join(root, "models--org--tiny")
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = os.path.join(repo, "snapshots", rev)
    for sub in ("blobs", "refs", snap):
        os.makedirs(os.path.join(repo, sub), exist_ok=True)
    write_file(os.path.join(repo, "refs", "main"), rev.encode())
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if os.path.isdir(p):
            continue
        h = sha256_file(p)
        shutil.copyfile(p, os.path.join(repo, "blobs", h))
        os.symlink(os.path.join("..", "..", "blobs", h), os.path.join(snap, name))
    return repo, snap


def check_set_mount(m, exp, errs, label, sidecars=None, n_parts=None):
    """tensors.json names each tensor's file; every tensor reads as exp;
    parts.json is valid JSON listing the parts; the root holds exactly the
    model's entries plus sidecars."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode())
    got = {e["name"]: e for e in tj["tensors"]}
    if set(got) != set(exp):
        errs.add("%s: tensors %r, expected %r" % (label, sorted(got)[:4], sorted(exp)[:4]))
    for name, (fn, b) in exp.items():
        e = got.get(name)
        if e is None:
            continue
        if e.get("file") != fn:
            errs.add("%s: %s: file %r, expected %r" % (label, name, e.get("file"), fn))
        p = m.path(e["path"])
        with open(p, "rb") as f:
            if f.read() != b:
                errs.add("%s: %s: wrong bytes" % (label, name))
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:
            if os.pread(fd, 7, 3) != b[3:10]:
                errs.add("%s: %s: O_DIRECT pread wrong" % (label, name))
        finally:
            os.close(fd)
    with open(m.path("parts.json"), "rb") as f:
        pj = json.loads(f.read().decode())
    files = [x["file"] for x in pj["files"]]
    if n_parts is not None and len(files) != n_parts:
        errs.add("%s: parts.json lists %d files" % (label, len(files)))
    if sorted(set(fn for fn, _ in exp.values())) != sorted(files):
        errs.add("%s: parts.json files %r" % (label, files[:4]))
    tops = {e["path"].split("/")[0] for e in tj["tensors"]}
    want_root = tops | {"metadata.json", "tensors.json", "parts.json", "model.safetensors",
                        "WEIGHTFS.txt", meta_dir(m.mp)} | set(sidecars or {})
    root = set(os.listdir(m.mp))
    if root != want_root:
        errs.add("%s: root holds %r, expected %r" % (label, sorted(root), sorted(want_root)))
    for name, b in (sidecars or {}).items():
        try:
            with open(m.path(name), "rb") as f:
                if f.read() != b:
                    errs.add("%s: sidecar %s differs" % (label, name))
            st = os.stat(m.path(name))
            if st.st_size != len(b) or st.st_mode & 0o222:
                errs.add("%s: sidecar %s: size %d mode %o" % (label, name, st.st_size, st.st_mode))
        except OSError as ex:
            errs.add("%s: sidecar %s: %s" % (label, name, ex))
    return tj, pj


def daemon_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def expect_eio_direct(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        return o_direct_read(fd, 64, 0) == errno.EIO
    finally:
        os.close(fd)


def group_sets():
    base = new_dir("sets-")

    # 1. the oracle's split pair, through either part
    for part in ("split_llama-00001-of-00002.gguf", "split_llama-00002-of-00002.gguf"):
        def split_oracle(part=part):
            errs = Errs()
            ts = [t for t in GGML_MAN["tensors"] if t["file"].startswith("split_llama-")]
            with Mount(os.path.join(GGML, part)) as m:
                with open(m.path("tensors.json"), "rb") as f:
                    tj = json.loads(f.read().decode())
                byname = {e["name"]: e for e in tj["tensors"]}
                if [e["name"] for e in tj["tensors"]] != [t["name"] for t in ts]:
                    errs.add("tensor order %r" % [e["name"] for e in tj["tensors"]][:5])
                rng = random.Random(SEED)
                n_ok = 0
                for t in ts:
                    e = byname.get(t["name"])
                    if e is None:
                        errs.add("%s missing" % t["name"])
                        continue
                    if e["file"] != t["file"] or e["offset"] != t["file_offset"] or \
                            e["nbytes"] != t["nbytes"]:
                        errs.add("%s: file/offset/nbytes %r/%d/%d" % (t["name"], e["file"], e["offset"],
                                                                     e["nbytes"]))
                    exp = gguf_expected(t)
                    p = m.path(e["path"])
                    if exp is None:
                        n_ok += expect_eio(p, errs, t["name"], e["size"])
                    else:
                        n_ok += verify_bytes(p, exp, rng, errs, t["name"], t["ne"][0] * 4)
                with open(m.path("parts.json"), "rb") as f:
                    pj = json.loads(f.read().decode())
                if pj["form"] != "split GGUF" or [x["file"] for x in pj["files"]] != \
                        ["split_llama-00001-of-00002.gguf", "split_llama-00002-of-00002.gguf"]:
                    errs.add("parts.json: %r" % pj)
                with open(m.path("metadata.json"), "rb") as f:
                    md = json.loads(f.read().decode())
                if md.get("split.no") != 0:
                    errs.add("metadata.json is not the first part's: split.no %r" % md.get("split.no"))
                for i, x in enumerate(pj["files"]):
                    if x["metadata"].get("split.no") != i:
                        errs.add("parts.json: file %d metadata split.no %r" % (i, x["metadata"].get("split.no")))
                errs.raise_if_any()
            return "%d tensors byte for byte" % n_ok
        check("sets: split GGUF oracle pair mounted via %s: every tensor as the manifest says" % part,
              split_oracle)

    # 2. a 3-shard safetensors set with an index: via the index, a shard, the folder
    d = os.path.join(base, "st3")
    exp3 = make_st_set(d)
    for given in ("model.safetensors.index.json", "model-00002-of-00003.safetensors", ""):
        def st_set(given=given):
            errs = Errs()
            with Mount(os.path.join(d, given) if given else d) as m:
                tj, pj = check_set_mount(m, exp3, errs, given or "folder", n_parts=3)
                md = json.loads(open(m.path("metadata.json"), "rb").read())
                if list(md) != ["total_size", "format", "shard"] or md["shard"] != "0":
                    errs.add("metadata.json %r" % md)
                if pj.get("index", {}).get("file") != "model.safetensors.index.json" or \
                        [x["metadata"]["shard"] for x in pj["files"]] != ["0", "1", "2"]:
                    errs.add("parts.json %r" % pj)
                errs.raise_if_any()
            return "%d tensors" % len(exp3)
        check("sets: safetensors index set mounted via %s" % (given or "its folder"), st_set)

    # 3. an HF folder with sidecars; then the same as a hub cache
    hf = os.path.join(base, "hf")
    exphf = make_hf_folder(hf)

    def hf_folder():
        errs = Errs()
        with Mount(hf) as m:
            check_set_mount(m, exphf, errs, "hf", sidecars=SIDECARS)
            for gone in ("pytorch_model.bin", "training_args.pt", "onnx", ".gitattributes",
                         "model.safetensors.index.json"):
                if os.path.lexists(m.path(gone)):
                    errs.add("%s is shown" % gone)
            errs.raise_if_any()
        return "%d sidecars byte for byte; .bin, .pt, sub-folder left out" % len(SIDECARS)
    check("sets: HF folder: tensors, sidecars byte for byte, .bin/.pt/sub-folder left out", hf_folder)

    hub, snap = make_hub(os.path.join(base, "hub"), hf)
    for given, label in ((snap, "snapshots/<rev>"), (hub, "models--org--tiny")):
        def hub_cache(given=given):
            errs = Errs()
            with Mount(given) as m:
                check_set_mount(m, exphf, errs, "hub", sidecars=SIDECARS)
                errs.raise_if_any()
        check("sets: hub cache (symlinks into blobs/) mounted via %s" % label, hub_cache)

    # 4. one shard truncated under the mount
    def truncated_shard():
        errs = Errs()
        dt = os.path.join(base, "trunc")
        exp = make_st_set(dt, seed=1)
        with Mount(dt) as m:
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode())
            os.truncate(os.path.join(dt, "model-00002-of-00003.safetensors"), 100)
            for e in tj["tensors"]:
                p = m.path(e["path"])
                if e["file"] == "model-00002-of-00003.safetensors":
                    if not expect_eio_direct(p):
                        errs.add("%s: no EIO" % e["name"])
                else:
                    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                    try:
                        if o_direct_read(fd, 1 << 16, 0) != exp[e["name"]][1]:
                            errs.add("%s (another shard): wrong" % e["name"])
                    finally:
                        os.close(fd)
            lines = changed_lines(m)
            if len(lines) != 1 or "model-00002-of-00003.safetensors" not in lines[0]:
                errs.add("daemon said %r" % lines)
            errs.raise_if_any()
    check("sets: a shard truncated under the mount: EIO for its tensors, the others still read",
          truncated_shard)

    sets_malformed(base)
    sets_thousand(base)


def gguf_split_part(no, count, total, tensors, extra_kvs=()):
    kvs = [gkv("general.architecture", "str", "llama"), gkv("split.no", "u16", no),
           gkv("split.count", "u16", count), gkv("split.tensors.count", "i32", total)] + list(extra_kvs)
    return gguf_bytes(tensors, kvs)


def write_gguf_split(d, prefix, n, per=1, total=None, fix=None):
    """n parts PREFIX-0000i-of-0000N.gguf of `per` F32 tensors each; fix(i,
    kwargs) may change a part.  Returns the part paths."""
    os.makedirs(d, exist_ok=True)
    paths = []
    for i in range(n):
        a = dict(no=i, count=n, total=n * per if total is None else total,
                 tensors=[f32_tensor(b"blk.%d.w%d" % (i, k), np.full(4, i * 10 + k, "<f4"))
                          for k in range(per)])
        if fix:
            fix(i, a)
        p = os.path.join(d, "%s-%05d-of-%05d.gguf" % (prefix, i + 1, n))
        write_file(p, gguf_split_part(a["no"], a["count"], a["total"], a["tensors"]))
        paths.append(p)
    return paths


def sets_malformed(base):
    """Malformed sets: each refused with its exit code, one line naming the
    file and the problem, and no mount."""
    cases = []  # (label, model path, exit, substring)
    n = [0]

    def fresh():
        n[0] += 1
        return os.path.join(base, "bad%02d" % n[0])

    d = fresh()
    p = write_gguf_split(d, "split_llama", 3)
    os.unlink(p[1])
    cases.append(("split: a missing part", p[0], 2, "split_llama-00002-of-00003.gguf: missing"))
    d = fresh()
    p = write_gguf_split(d, "s", 3)
    write_gguf_split(os.path.join(d, "other"), "s", 3, total=5)
    shutil.copyfile(os.path.join(d, "other", "s-00002-of-00003.gguf"), p[1])
    cases.append(("split: a part of another set", p[0], 3,
                  "s-00002-of-00003.gguf: belongs to another split set: split.tensors.count is 5"))
    d = fresh()
    p = write_gguf_split(d, "s", 3, fix=lambda i, a: a.update(count=4) if i == 2 else None)
    cases.append(("split: split.count differs", p[0], 3, "s-00003-of-00003.gguf: belongs to another split set: "
                                                        "split.count is 4"))
    d = fresh()
    p = write_gguf_split(d, "s", 3, fix=lambda i, a: a.update(no=0) if i == 1 else None)
    cases.append(("split: split.no out of place", p[0], 3, "s-00002-of-00003.gguf: split.no is 0, expected 1"))
    d = fresh()
    p = write_gguf_split(d, "s", 2, fix=lambda i, a: a.update(
        tensors=[f32_tensor(b"blk.0.w0", np.zeros(4, "<f4"))]))
    cases.append(("split: a tensor in two parts", p[1], 3,
                  "tensor 'blk.0.w0': in both s-00001-of-00002.gguf and s-00002-of-00002.gguf"))
    d = fresh()
    p = write_gguf_split(d, "s", 2, total=3)
    cases.append(("split: split.tensors.count wrong", p[0], 3, "split.tensors.count is 3, but the 2 parts hold 2"))
    d = fresh()
    p = write_gguf_split(d, "s", 2)
    os.rename(p[0], os.path.join(d, "model.gguf"))
    cases.append(("split: a part renamed", os.path.join(d, "model.gguf"), 3,
                  "model.gguf: split.count is 2, but the name does not follow PREFIX-%05d-of-%05d.gguf"))

    def st_case(label, exit_code, substr, index=None, mutate=None, given="model.safetensors.index.json"):
        dd = fresh()
        make_st_set(dd)
        ip = os.path.join(dd, "model.safetensors.index.json")
        if index is not None:
            with open(ip, "w") as f:
                f.write(index if isinstance(index, str) else json.dumps(index))
        if mutate:
            mutate(dd)
        cases.append((label, os.path.join(dd, given), exit_code, substr))

    good = load_json(os.path.join(base, "st3", "model.safetensors.index.json"))
    S1, S2, S3 = ("model-%05d-of-00003.safetensors" % i for i in (1, 2, 3))
    st_case("index: a shard it names does not exist", 2, S2 + ": missing",
            mutate=lambda dd: os.unlink(os.path.join(dd, S2)))
    st_case("index: not valid JSON", 3, "model.safetensors.index.json: invalid JSON", index='{"weight_map": {')
    st_case("index: no weight_map", 3, "model.safetensors.index.json: no weight_map",
            index={"metadata": {"total_size": 1}})
    st_case("index: a shard name with '/'", 3, "holds a '/'",
            index={"weight_map": {"a": "../st3/" + S1}})
    st_case("index: a shard name '..'", 3, "shard '..' is not a file name", index={"weight_map": {"a": ".."}})
    st_case("index: a shard name with NUL", 3, "model.safetensors.index.json: holds a NUL character",
            index='{"weight_map": {"a": "x\\u0000y.safetensors"}}')
    wm = dict(good["weight_map"])
    wm["model.layers.0.mlp.w0.weight"] = S2
    st_case("index: a tensor in another shard than it says", 3,
            S1 + ": tensor 'model.layers.0.mlp.w0.weight' is here, but model.safetensors.index.json puts it in "
            + S2, index={"weight_map": wm})
    wm = dict(good["weight_map"])
    del wm["model.layers.2.mlp.w1.weight"]
    st_case("index: a shard holds a tensor it does not list", 3,
            S3 + ": tensor 'model.layers.2.mlp.w1.weight' is not in the weight_map", index={"weight_map": wm})
    wm = dict(good["weight_map"])
    wm["ghost.weight"] = S2
    st_case("index: lists a tensor no shard holds", 3,
            S2 + ": tensor 'ghost.weight': model.safetensors.index.json puts it here, but it is not there",
            index={"weight_map": wm})
    st_case("index: metadata.total_size wrong", 3, "model.safetensors.index.json: metadata.total_size is 7",
            index={"metadata": {"total_size": 7}, "weight_map": good["weight_map"]})
    st_case("index: a tensor listed twice", 3, "weight_map: tensor 'model.layers.0.mlp.w0.weight' is listed twice",
            index='{"weight_map": {"model.layers.0.mlp.w0.weight": "%s", "model.layers.0.mlp.w0.weight": "%s"}}'
            % (S1, S1))

    def dup_tensor(dd):
        # shard 3 also holds shard 1's first tensor
        write_file(os.path.join(dd, S3), st_set_bytes([("model.layers.0.mlp.w0.weight", np.zeros(7, "<f4")),
                                                   ("model.layers.2.mlp.w0.weight", np.zeros(7, "<f4"))]))
    wm = {k: v for k, v in good["weight_map"].items() if v != S3}
    wm["model.layers.2.mlp.w0.weight"] = S3
    st_case("index: a tensor in two shards", 3, S3 + ": tensor 'model.layers.0.mlp.w0.weight' is here, but "
            "model.safetensors.index.json puts it in " + S1, index={"weight_map": wm}, mutate=dup_tensor)
    st_case("index: a shard that is not safetensors", 3, S2 + ": not a safetensors file",
            mutate=lambda dd: write_file(os.path.join(dd, S2), gguf_bytes([f32_tensor(b"x", np.zeros(4))])))
    st_case("index: a malformed shard, given a shard", 3, S3 + ": header: length",
            mutate=lambda dd: os.truncate(os.path.join(dd, S3), 30), given=S1)
    st_case("folder: two models", 2, "the folder holds 2 models: model-*-of-00003.safetensors, other.gguf",
            index=None, mutate=lambda dd: (os.unlink(os.path.join(dd, "model.safetensors.index.json")),
                                           write_file(os.path.join(dd, "other.gguf"),
                                                      gguf_bytes([f32_tensor(b"x", np.zeros(4))]))), given="")
    dd = fresh()
    os.makedirs(dd)
    write_file(os.path.join(dd, "config.json"), b"{}")
    write_file(os.path.join(dd, "pytorch_model.bin"), b"PK\3\4")
    cases.append(("folder: no model", dd, 2,
                  "no GGUF or safetensors model in the folder (it holds 2 entries: config.json, pytorch_model.bin)"))
    for name, data, what in (("README.md", b"# model card\n", "(it is text)"),
                             ("pytorch_model.bin", b"PK\3\4\x14\0\0\0\x08\0" + bytes(40), "(it is a zip archive"),
                             ("model.pkl", b"\x80\x04\x95\x10\0\0\0\0\0\0\0}", "(it is a Python pickle)")):
        pth = write_file(os.path.join(base, name), data)
        cases.append(("given directly: %s" % name, pth, 3, "not a GGUF or safetensors file " + what))

    def run_cases():
        errs = Errs()
        seen = set()
        for label, model, want_rc, substr in cases:
            mp = new_dir("bad-")
            rc, out, err, secs = run_cli([model, mp], env=san_env())
            if rc == 0:
                for pid in daemon_pid(mp):
                    force_unmount(mp)
                    wait_pid(pid, 10)
            if rc != want_rc:
                errs.add("%s: exit %d, expected %d (%s)" % (label, rc, want_rc, err.strip()[:200]))
            one_line_error(err, model, errs, label, substr)
            line = err.strip()
            if line in seen:
                errs.add("%s: the same message as another case: %r" % (label, line))
            seen.add(line)
            if is_mounted(mp):
                errs.add("%s: left a mount" % label)
                force_unmount(mp)
            if san_lines(err):
                errs.add("%s: sanitizer output" % label)
        errs.raise_if_any()
        return "%d malformed sets" % len(cases)
    check("sets: malformed sets refused: exit code, one line naming the file and the problem, no mount",
          run_cases)
    for label, model, want_rc, substr in cases:
        print("#   %-45s exit %d  %s" % (label, want_rc, substr))


def sets_thousand(base):
    n = 1000
    dg = os.path.join(base, "g1000")
    t0 = time.monotonic()
    paths = write_gguf_split(dg, "big", n)
    ds = os.path.join(base, "s1000")
    os.makedirs(ds)
    wm = {}
    for i in range(n):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        write_file(os.path.join(ds, fn), st_set_bytes([("layers.%d.w" % i, np.full(4, i, "<f4"))]))
        wm["layers.%d.w" % i] = fn
    with open(os.path.join(ds, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 16 * n}, "weight_map": wm}, f)
    gen = time.monotonic() - t0
    FIGURES.clear()
    for label, model, name_of, path_of in (
            ("GGUF split", paths[n // 2], lambda i: "blk/%d/w0" % i, lambda i: paths[i]),
            ("safetensors index", ds, lambda i: "layers/%d/w" % i,
             lambda i: os.path.join(ds, "model-%05d-of-%05d.safetensors" % (i + 1, n)))):
        for nofile in (64, 1024, 0):
            def thousand(label=label, model=model, name_of=name_of, path_of=path_of, nofile=nofile):
                errs = Errs()
                m = Mount(model, nofile=nofile)
                try:
                    rss = daemon_rss_kb(m.proc.pid)
                    with open("/proc/%d/limits" % m.proc.pid) as f:
                        lim = [l for l in f if l.startswith("Max open files")][0].split()[3]
                    nfd = len(os.listdir("/proc/%d/fd" % m.proc.pid))
                    for i in (0, 1, n // 2, n - 2, n - 1):
                        with open(m.path(name_of(i)), "rb") as f:
                            got = np.frombuffer(f.read(), "<f4")
                        want = i * 10 if label == "GGUF split" else i
                        if got.tolist() != [want] * 4:
                            errs.add("part %d: read %r" % (i, got.tolist()))
                    with open(m.path("parts.json"), "rb") as f:
                        if len(json.loads(f.read().decode())["files"]) != n:
                            errs.add("parts.json does not list %d files" % n)
                    # the last part's descriptor was closed under ulimit -n 64:
                    # its truncation is seen through its path
                    victim = path_of(n - 1)
                    keep = open(victim, "rb").read()
                    try:
                        os.truncate(victim, 40)
                        if not expect_eio_direct(m.path(name_of(n - 1))):
                            errs.add("truncated last part: no EIO")
                        fd = os.open(m.path(name_of(n - 2)), os.O_RDONLY | os.O_DIRECT)
                        try:
                            if len(o_direct_read(fd, 16, 0)) != 16:
                                errs.add("part %d after truncating the last: no read" % (n - 2))
                        finally:
                            os.close(fd)
                    finally:
                        write_file(victim, keep)
                    rss2 = daemon_rss_kb(m.proc.pid)
                finally:
                    try:
                        m.finish()
                    except Fail as ex:
                        errs.add(str(ex))
                errs.raise_if_any()
                info = "mounted in %.0f ms, daemon RSS %d KB (after reads %d KB), %s descriptors open " \
                       "(limit %s)" % (m.t_ready * 1000, rss, rss2, nfd, lim)
                FIGURES.append("%s, %d parts, ulimit -n %s: %s" % (label, n, nofile or "default", info))
                if m.t_ready > (5.0 if SANITIZED else 1.0):
                    raise Fail("took %.2f s to mount" % m.t_ready)
                return info
            check("sets: %d-part %s under ulimit -n %s: mounts, reads first/middle/last parts, "
                  "truncating the last part is EIO" % (n, label, nofile or "default"), thousand)
    for f in FIGURES:
        print("# %s" % f)
    print("# (1,000-part sets generated in %.1f s)" % gen)


FIGURES = []


# ---------------------------------------------------------------- group: remote
#
# weightfs on top of network storage it does not know about: a folder served
# by `rclone serve http` on 127.0.0.1 and mounted with `rclone mount`.  The
# lower mount's options (RCLONE_MOUNT_OPTS) are chosen here:
#   --vfs-cache-mode off  weightfs maps the model read-only and shared, which
#                         rclone serves without its cache (the cache is only
#                         needed for writes); off streams ranges from the
#                         server, keeps no second copy on local disk (the
#                         model outgrew it) and lets a dead server show as
#                         errors instead of stale cached bytes.  minimal and
#                         full mmap-read just as well (full copies the file
#                         into --cache-dir).
#   --read-only           weightfs never writes.
#   --buffer-size 1M --vfs-read-chunk-size 1M
#                         small read-ahead, so that tensors not yet read are
#                         not already buffered when the server is stopped.
#   --low-level-retries 2 --retries 1 --contimeout 2s --timeout 10s
#                         a read against a dead server fails in seconds.

RCLONE_MOUNT_OPTS = ["--read-only", "--vfs-cache-mode", "off", "--buffer-size", "1M",
                     "--vfs-read-chunk-size", "1M", "--low-level-retries", "2",
                     "--retries", "1", "--contimeout", "2s", "--timeout", "10s"]


def free_port():
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rclone_argv(*args):
    # config-less: on-the-fly :http: backend, no rclone.conf read or written
    return ["rclone", "--config", "/dev/null"] + list(args)


class RcloneServe:
    """rclone serve http DIR on 127.0.0.1:PORT."""

    def __init__(self, folder):
        self.folder = folder
        self.log = os.path.join(TMP, "rclone-serve.log")
        for _ in range(5):
            self.port = free_port()
            with open(self.log, "ab") as lf:
                self.proc = subprocess.Popen(
                    rclone_argv("serve", "http", folder, "--addr", "127.0.0.1:%d" % self.port),
                    stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, preexec_fn=reset_signals)
            ACTIVE["rclone-serve:%d" % self.port] = self.proc
            t0 = time.monotonic()
            while time.monotonic() - t0 < MOUNT_TIMEOUT and self.proc.poll() is None:
                import socket
                try:
                    socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                    return
                except OSError:
                    time.sleep(0.05)
            self.stop()  # port taken meanwhile, or too slow: another port
        raise Fail("rclone serve http did not listen; log: %s" % self.log_tail())

    def url(self):
        return "http://127.0.0.1:%d" % self.port

    def log_tail(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace")[-500:].strip()
        except OSError:
            return ""

    def stop(self):
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            pass
        ACTIVE.pop("rclone-serve:%d" % self.port, None)


class RcloneMount:
    """rclone mount :http: MNT --http-url URL; ready once `probe` is listed."""

    def __init__(self, url, probe):
        self.mp = new_dir("rclone-")
        self.log = self.mp + ".log"
        with open(self.log, "wb") as lf:
            self.proc = subprocess.Popen(
                rclone_argv("mount", ":http:", self.mp, "--http-url", url) + RCLONE_MOUNT_OPTS,
                stdin=subprocess.DEVNULL, stdout=lf, stderr=lf, preexec_fn=reset_signals)
        ACTIVE[self.mp] = self.proc
        t0 = time.monotonic()
        while True:
            if self.proc.poll() is not None:
                ACTIVE.pop(self.mp, None)
                raise Fail("rclone mount exited with %s; log: %s" % (self.proc.returncode,
                                                                    self.log_tail()))
            try:
                if is_mounted(self.mp) and os.path.exists(os.path.join(self.mp, probe)):
                    return
            except OSError:
                pass
            if time.monotonic() - t0 > 3 * MOUNT_TIMEOUT:
                self.close()
                raise Fail("rclone mount not ready after %.0f s; log: %s"
                           % (3 * MOUNT_TIMEOUT, self.log_tail()))
            time.sleep(0.05)

    def path(self, rel):
        return os.path.join(self.mp, rel)

    def log_tail(self):
        try:
            with open(self.log, "rb") as f:
                return f.read().decode(errors="replace")[-500:].strip()
        except OSError:
            return ""

    def close(self):
        """fusermount3 -u, then the rclone process must exit; raises Fail if
        either needed force."""
        problems = []
        if is_mounted(self.mp):
            r = subprocess.run(["fusermount3", "-u", self.mp], stdout=subprocess.PIPE,
                               stderr=subprocess.STDOUT, timeout=15)
            if r.returncode != 0:
                problems.append("fusermount3 -u: %s" % r.stdout.decode(errors="replace").strip())
        try:
            self.proc.wait(15)
        except subprocess.TimeoutExpired:
            problems.append("rclone mount did not exit within 15 s of the unmount")
            self.proc.kill()
            self.proc.wait(10)
        if is_mounted(self.mp):
            force_unmount(self.mp)
            problems.append("still mounted")
        ACTIVE.pop(self.mp, None)
        if problems:
            raise Fail("rclone mount %s: %s" % (self.mp, "; ".join(problems)))


def remote_st_set(folder, rng_np):
    """A 3-shard safetensors set with an index in folder; returns
    [(name, shard, expected float32 bytes)] in tensors.json's order."""
    os.makedirs(folder)
    nsh, per, rows, cols = 3, 4, 1024, 256
    weight_map, out, total = {}, [], 0
    for s in range(nsh):
        shard = "model-%05d-of-%05d.safetensors" % (s + 1, nsh)
        header, blobs, off = {}, [], 0
        for i in range(per):
            name = "model.layers.%d.mlp.w%d" % (s, i)
            dt = ("F32", "F16", "BF16", "F16")[i]
            a = rng_np.standard_normal((rows, cols)).astype(np.float32)
            if dt == "F16":
                h = a.astype("<f2")
                raw, exp = h.tobytes(), h.astype("<f4").tobytes()
            elif dt == "BF16":
                u = (a.view("<u4") >> 16).astype("<u2")
                raw, exp = u.tobytes(), (u.astype("<u4") << 16).view("<f4").tobytes()
            else:
                raw = exp = a.astype("<f4").tobytes()
            header[name] = {"dtype": dt, "shape": [rows, cols],
                            "data_offsets": [off, off + len(raw)]}
            blobs.append(raw)
            off += len(raw)
            total += len(raw)
            weight_map[name] = shard
            out.append((name, shard, exp))
        hb = json.dumps(header).encode()
        hb += b" " * (-len(hb) % 8)
        write_file(os.path.join(folder, shard), struct.pack("<Q", len(hb)) + hb + b"".join(blobs))
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": total},
                   "weight_map": weight_map}, f)
    return out


def read_all_direct(path, chunk=1 << 20):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        parts, off = [], 0
        while True:
            b = os.pread(fd, chunk, off)
            if not b:
                return b"".join(parts)
            parts.append(b)
            off += len(b)
    finally:
        os.close(fd)


def group_remote():
    if not shutil.which("rclone"):
        if os.environ.get("CI"):
            raise Fail("rclone not installed (apt-get install rclone)")
        raise Skip("rclone not installed")
    srv = os.path.join(TMP, "remote-srv")
    os.makedirs(srv)
    man_first = [f for f in GGML_MAN["files"] if f["file"] == "split_llama-00001-of-00002.gguf"]
    if not man_first:
        raise Fail("split_llama-00001-of-00002.gguf not in the oracle manifest")
    split_files, split_ts = split_set(GGML_MAN, man_first[0])
    for f in split_files:
        shutil.copyfile(os.path.join(GGML, f["file"]), os.path.join(srv, f["file"]))
    st = remote_st_set(os.path.join(srv, "st"), np.random.default_rng(SEED))
    index = "st/model.safetensors.index.json"

    server = RcloneServe(srv)
    lower = None
    try:
        lower = RcloneMount(server.url(), index)

        def split_gguf():
            errs = Errs()
            rng = random.Random("%d/remote" % SEED)
            with Mount(lower.path(split_files[0]["file"])) as m:
                tj = load_json(m.path("tensors.json"))
                if [e["name"] for e in tj["tensors"]] != [t["name"] for t in split_ts]:
                    errs.add("tensors.json names differ from the manifest's split set")
                byname = {e["name"]: e for e in tj["tensors"]}
                n = 0
                for t in split_ts:
                    e, exp = byname.get(t["name"]), gguf_expected(t)
                    if e is None or exp is None:
                        continue
                    if e["file"] != t["file"]:
                        errs.add("%s: file %r" % (t["name"], e["file"]))
                    itemsize = np.dtype(e["dtype"]).itemsize
                    block = t["block_size"] * itemsize if t["block_size"] > 1 else 0
                    n += verify_bytes(m.path(e["path"]), exp, rng, errs, t["name"],
                                      t["ne"][0] * itemsize, block)
                errs.raise_if_any()
            return "%d tensors of 2 parts byte for byte" % n
        check("remote: split GGUF through rclone mount", split_gguf)

        def sharded(model, label):
            errs = Errs()
            with Mount(lower.path(model)) as m:
                tj = load_json(m.path("tensors.json"))
                byname = {e["name"]: e for e in tj["tensors"]}
                if sorted(byname) != sorted(n for n, _, _ in st):
                    errs.add("tensors.json names differ from the index")
                n = 0
                for name, shard, exp in st:
                    e = byname.get(name)
                    if e is None:
                        continue
                    if e["file"] != shard:
                        errs.add("%s: file %r, expected %r" % (name, e["file"], shard))
                    p = m.path(e["path"])
                    if read_all_direct(p) != exp:
                        errs.add("%s: O_DIRECT read differs" % name)
                    with open(p, "rb") as f:
                        if f.read() != exp:
                            errs.add("%s: buffered read differs" % name)
                    n += 1
                errs.raise_if_any()
            return "%d tensors of 3 shards byte for byte (%s)" % (n, label)
        check("remote: sharded safetensors (index) through rclone mount",
              sharded, index, "index")
        check("remote: sharded safetensors (a shard) through rclone mount",
              sharded, "st/model-00002-of-00003.safetensors", "shard")
        check("remote: sharded safetensors (folder) through rclone mount",
              sharded, "st", "folder")
        # a fresh lower mount: nothing of the shards in its page cache
        lower.close()
        lower = None
        lower = RcloneMount(server.url(), index)

        def server_stopped():
            errs = Errs()
            m = Mount(lower.path(index))
            try:
                tj = load_json(m.path("tensors.json"))
                byname = {e["name"]: e for e in tj["tensors"]}
                results = []  # (name, "ok" | "WRONG" | errno name, seconds, after_kill)
                killed = threading.Event()
                started = threading.Event()

                def reader():
                    for i, (name, _, exp) in enumerate(st):
                        if i == 2:
                            started.set()
                            killed.wait(30)
                        after = killed.is_set()
                        t0 = time.monotonic()
                        try:
                            got = read_all_direct(m.path(byname[name]["path"]), 256 << 10)
                            r = "ok" if got == exp else "WRONG"
                        except OSError as ex:
                            r = errno.errorcode.get(ex.errno, str(ex.errno))
                        results.append((name, r, time.monotonic() - t0, after))
                    started.set()

                th = threading.Thread(target=reader, daemon=True)
                th.start()
                if not started.wait(60):
                    raise Fail("the first two tensors took over 60 s to read")
                server.stop()  # SIGKILL: the server is gone mid-read
                killed.set()
                th.join(120)
                if th.is_alive():
                    raise Fail("reads still hang 120 s after the server was stopped")
                before = [r for r in results if not r[3]]
                after = [r for r in results if r[3]]
                if [r for r in before if r[1] != "ok"]:
                    errs.add("reads before the stop: %r" % [r[:2] for r in before])
                wrong = [r[0] for r in results if r[1] == "WRONG"]
                if wrong:
                    errs.add("wrong bytes, not an error: %r" % wrong)
                failed = [r for r in after if r[1] != "ok"]
                if not failed:
                    errs.add("no read failed after the server was stopped")
                not_eio = sorted({r[1] for r in failed if r[1] not in ("EIO", "WRONG")})
                if not_eio:
                    errs.add("reads failed with %s, expected EIO" % not_eio)
                # the daemon keeps running and serving what needs no server
                if m.proc.poll() is not None:
                    errs.add("weightfs exited with %s" % m.proc.returncode)
                os.stat(m.mp)
                if load_json(m.path("tensors.json")) != tj:
                    errs.add("tensors.json changed")
                os.listdir(m.path("model"))
                errs.raise_if_any()
            except BaseException:
                m.kill()
                raise
            m.finish()  # fusermount3 -u, exit status 0, no sanitizer output
            slow = max((r[2] for r in failed), default=0.0)
            return "after the stop: %d reads ok (already fetched), %d failed with EIO, " \
                   "slowest failure %.2f s; daemon alive, unmounted cleanly" % (
                       len(after) - len(failed), len(failed), slow)
        check("remote: server stopped mid-read: EIO, never wrong bytes; daemon keeps running",
              server_stopped)

        def unmount_lower():
            nonlocal lower
            lw, lower = lower, None
            lw.close()
            left = [p for p in mountinfo_points() if p.startswith(TMP.encode())]
            if left:
                raise Fail("mounts left: %r" % left)
        check("remote: rclone mount unmounts cleanly after the server died", unmount_lower)
    finally:
        if lower is not None:
            try:
                lower.close()
            except Fail:
                pass
        server.stop()


# ---------------------------------------------------------------- desktop

# wf_dtype_suffix (src/wf_out.c): a file's dtype to its -o suffix suffix
DESK_SUFFIX = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "complex64": "c64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
    "float8_e8m0fnu": "f8e8m0", "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
}
DESK_TEXT = b"The quick brown fox jumps over the lazy dog.\n" * 8


def desktop_st_bytes():
    """A safetensors file of every plain dtype, in layers and not: an
    all-true BOOL tensor (a TGA image to a sniffer) and a U8 tensor of text
    (text/plain to one) among them."""
    rng = np.random.default_rng(7)
    f32 = lambda *s: rng.standard_normal(s).astype("<f4")  # noqa: E731
    ts = [
        ("model.layers.0.self_attn.q_proj.weight", "F32", [8, 8], f32(8, 8).tobytes()),
        ("model.layers.0.mlp.up_proj.weight", "F16", [16, 8], f32(16, 8).astype("<f2").tobytes()),
        ("model.layers.1.self_attn.q_proj.weight", "BF16", [8, 8],
         (f32(8, 8).view("<u4") >> 16).astype("<u2").tobytes()),
        ("model.layers.1.mlp.up_proj.weight", "F64", [16, 8], f32(16, 8).astype("<f8").tobytes()),
        ("model.embed_tokens.weight", "F8_E4M3", [32, 8], bytes(range(256))),
        ("mask.all_true", "BOOL", [64, 64], b"\x01" * 4096),
        ("text.bytes", "U8", [len(DESK_TEXT)], DESK_TEXT),
        ("ids.i8", "I8", [4], bytes(4)), ("ids.i16", "I16", [4], bytes(8)),
        ("ids.i32", "I32", [4], bytes(16)), ("ids.i64", "I64", [4], bytes(32)),
        ("ids.u16", "U16", [4], bytes(8)), ("ids.u32", "U32", [4], bytes(16)),
        ("ids.u64", "U64", [4], bytes(32)), ("cplx", "C64", [2], bytes(16)),
        ("clash.a", "F32", [1], bytes(4)), ("clash.a.b", "F32", [1], bytes(4)),
        ("L" * 300, "I32", [1], bytes(4)),
    ]
    hdr, off, data = {"__metadata__": {"format": "pt"}}, 0, []
    for name, dt, shape, b in ts:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        data.append(b)
    h = json.dumps(hdr).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(data)


def desktop_mime_env():
    """gio's environment with the mime XML installed in a private
    XDG_DATA_HOME (the system's database is left alone); None when gio or
    update-mime-database is missing, which fails under CI."""
    if not (shutil.which("gio") and shutil.which("update-mime-database")):
        if os.environ.get("CI"):
            raise Fail("gio or update-mime-database missing (apt-get install libglib2.0-bin "
                       "shared-mime-info)")
        raise Skip("gio or update-mime-database not installed")
    home = os.path.join(TMP, "xdg")
    pk = os.path.join(home, "mime", "packages")
    if not os.path.isdir(pk):
        os.makedirs(pk)
        shutil.copy(os.path.join(ROOT, "packaging", "weightfs-mime.xml"), os.path.join(pk, "weightfs.xml"))
        r = subprocess.run(["update-mime-database", os.path.join(home, "mime")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise Fail("update-mime-database: %s" % r.stderr.decode(errors="replace")[:300])
    env = dict(os.environ, XDG_DATA_HOME=home, LC_ALL="C")
    env.pop("XDG_DATA_DIRS", None)  # the default, /usr/local/share:/usr/share
    env.pop("DISPLAY", None)
    return env


def gio_types(paths, env):
    """{path: content type} from one `gio info` over paths."""
    r = subprocess.run(["gio", "info", "-a", "standard::content-type"] + list(paths),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    if r.returncode != 0:
        raise Fail("gio info exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[:300]))
    out, cur = {}, None
    for line in r.stdout.decode(errors="replace").splitlines():
        if line.startswith("local path: "):
            cur = line[len("local path: "):]
        elif "standard::content-type:" in line and cur is not None:
            out[cur] = line.split(":", 3)[-1].strip()
    return out


def fuse_opens(m):
    """OPEN requests the daemon (run with -d) has logged so far."""
    return m.stderr().count("opcode: OPEN (")


def group_desktop():
    model = os.path.join(new_dir("desk-"), "desk.safetensors")
    write_file(model, desktop_st_bytes())
    demo = os.path.join(GGML, "mixed_llama_tiny.gguf")

    def names(opts, label, expect):
        errs = Errs()
        with Mount(model, ["-o", opts]) as m:
            tj = load_json(m.path("tensors.json"))
            for e in tj["tensors"]:
                sfx = DESK_SUFFIX[e["dtype"]]
                p = e["path"]
                base = p.rsplit("/", 1)[-1]
                if not base.endswith("." + sfx) or base.count(".") != 1:
                    errs.add("%s: %s is not NAME.%s" % (label, p[:80], sfx))
                if len(base.encode()) > 255:
                    errs.add("%s: %d-byte name" % (label, len(base.encode())))
                try:
                    got = os.getxattr(m.path(p), "user.weightfs.dtype").decode()
                    if got != e["dtype"]:
                        errs.add("%s: %s xattr dtype %r" % (label, p[:60], got))
                    if os.stat(m.path(p)).st_size != e["size"]:
                        errs.add("%s: %s size" % (label, p[:60]))
                except OSError as ex:
                    errs.add("%s: %s: %s" % (label, p[:60], ex.strerror))
            paths = {e["name"]: e["path"] for e in tj["tensors"]}
            for name, sfx in expect.items():
                if not paths[name].endswith("." + sfx):
                    errs.add("%s: %s is %s, expected .%s" % (label, name, paths[name][:60], sfx))
            if paths["clash.a"] != "clash/a.f32" or not os.path.isdir(m.path("clash/a")):
                errs.add("%s: clash.a is %r (expected clash/a.f32 beside the folder clash/a)"
                         % (label, paths["clash.a"]))
            with open(m.path(paths["text.bytes"]), "rb") as f:
                if f.read() != DESK_TEXT:
                    errs.add("%s: text.bytes reads back wrong" % label)
            found = walk_files(m)
            want_f = {p.encode() for p in paths.values()} | {b"metadata.json", b"tensors.json"}
            if found != want_f:
                errs.add("%s: os.walk: %r" % (label, sorted(found ^ want_f)[:4]))
        errs.raise_if_any()
        return "%d tensors" % len(paths)
    common = {"mask.all_true": "bool", "text.bytes": "u8", "ids.i8": "i8", "ids.i16": "i16",
              "ids.i32": "i32", "ids.i64": "i64", "ids.u16": "u16", "ids.u32": "u32", "ids.u64": "u64",
              "cplx": "c64"}
    floats = ("model.layers.0.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight",
              "model.layers.1.mlp.up_proj.weight", "model.embed_tokens.weight")
    check("desktop: -o suffix names every tensor file NAME.<dtype suffix> (f32 view)", names,
          "suffix", "suffix", dict(common, **{n: "f32" for n in floats}))
    check("desktop: -o suffix with dtype=stored: f16, bf16, f64, f8e4m3 kept", names,
          "suffix,dtype=stored", "stored", dict(common, **dict(zip(floats, ("f16", "bf16", "f64", "f8e4m3")))))

    def npy_wins():
        with Mount(model, ["-o", "suffix,npy"]) as m:
            tj = load_json(m.path("tensors.json"))
            bad = [e["path"] for e in tj["tensors"] if not e["path"].endswith(".npy")]
            if bad:
                raise Fail("not .npy under -o npy,suffix: %r" % bad[:3])
    check("desktop: -o npy keeps NAME.npy when suffix is given too", npy_wins)

    def gio_suffix():
        env = desktop_mime_env()
        with Mount(model, ["-d", "-o", "suffix"]) as m:
            tj = load_json(m.path("tensors.json"))
            want = {m.path(e["path"]): "application/x-weightfs-" + DESK_SUFFIX[e["dtype"]]
                    for e in tj["tensors"]}
            want[m.path("WEIGHTFS.txt")] = "text/plain"
            time.sleep(0.2)
            opens = fuse_opens(m)
            got = gio_types(sorted(want), env)
            after = fuse_opens(m)
            errs = Errs()
            for p, ty in sorted(want.items()):
                if got.get(p) != ty:
                    errs.add("%s: %r, expected %s" % (os.path.relpath(p, m.mp)[:60], got.get(p), ty))
            if "opcode: LOOKUP (" not in m.stderr():
                errs.add("no debug output from -d: cannot tell whether gio opened files")
            if after != opens:
                errs.add("gio opened files %d times to type them (the type must come from the name)"
                         % (after - opens))
            bool_p = m.path(next(e["path"] for e in tj["tensors"] if e["name"] == "mask.all_true"))
            if got.get(bool_p, "").startswith("image/"):
                errs.add("the all-true BOOL tensor is typed %s" % got[bool_p])
            errs.raise_if_any()
        return "%d files" % len(want)
    check("desktop: gio info types every -o suffix file by name (installed XML), without opening it",
          gio_suffix)

    def gio_without():
        env = desktop_mime_env()
        with Mount(model) as m:
            tj = load_json(m.path("tensors.json"))
            p = {e["name"]: m.path(e["path"]) for e in tj["tensors"]}
            got = gio_types([p["mask.all_true"], p["text.bytes"]], env)
        # what issue 13 saw: sniffed types; informational, as they depend on
        # the shared-mime-info release
        return "without -o suffix: all-true BOOL %s, text U8 %s" % (
            got.get(p["mask.all_true"]), got.get(p["text.bytes"]))
    check("desktop: gio info without -o suffix (sniffed types, for reference)", gio_without)

    def gio_npy():
        env = desktop_mime_env()
        with Mount(model, ["-o", "npy"]) as m:
            tj = load_json(m.path("tensors.json"))
            ps = [m.path(e["path"]) for e in tj["tensors"]]
            got = gio_types(ps, env)
            bad = [(os.path.relpath(p, m.mp)[:40], got.get(p)) for p in ps if got.get(p) != "application/x-npy"]
            if bad:
                raise Fail("not application/x-npy: %r" % bad[:4])
    check("desktop: gio info types -o npy files application/x-npy", gio_npy)

    def summary_demo():
        errs = Errs()
        with Mount(demo, ["-o", "suffix"]) as m:
            tj = load_json(m.path("tensors.json"))
            st = os.stat(m.path("WEIGHTFS.txt"))
            with open(m.path("WEIGHTFS.txt"), "rb") as f:
                raw = f.read()
            if len(raw) != st.st_size:
                errs.add("read %d bytes, st_size %d" % (len(raw), st.st_size))
            text = raw.decode("utf-8")
            ts = tj["tensors"]
            params = sum(math.prod(e["shape"]) for e in ts)
            for want in ("Model:        Oracle Tiny Llama\n", "Architecture: llama\n",
                         "Parameters:   {:,} (".format(params), "in %d tensors\n" % len(ts),
                         "Source:       GGUF v3, mixed_llama_tiny.gguf",
                         "raw little-endian", "tensors.json", "user.weightfs.shape",
                         "token_embd.weight is token_embd/weight.f32",
                         "A file's suffix names its dtype: .f32 float32.",
                         "Layers blk.N: 2 layers, 18 tensors"):
                if want not in text:
                    errs.add("no %r" % want)
            lines = text.splitlines()
            # the types table: each type with its tensor count, in the model's bytes order
            counts = {}
            for e in ts:
                counts[e["type"]] = counts.get(e["type"], 0) + 1
            for ty, n in counts.items():
                if not any(re.match(r"  %s +%d +\S+ +\S+ \S+ +float32 " % (re.escape(ty), n), l) for l in lines):
                    errs.add("types table: no line for %s x%d" % (ty, n))
            # the layer table: one row per layer, the types in the model's order
            head = next((l for l in lines if l.startswith("  layer ")), "")
            cols = head.split()[1:-1]
            for layer in (0, 1):
                row = next((l.split() for l in lines if l.startswith("  %d " % layer)), None)
                want_row = [next(e["type"] for e in ts if e["name"] == "blk.%d.%s.weight" % (layer, c))
                            for c in cols]
                if row is None or row[1:-1] != want_row:
                    errs.add("layer %d row %r, expected %r" % (layer, row, want_row))
            if cols[:3] != ["attn_norm", "attn_q", "attn_k"]:
                errs.add("layer columns %r" % cols)
            for e in ts:
                if not e["name"].startswith("blk.") and e["name"] not in text:
                    errs.add("other tensor %s not listed" % e["name"])
        errs.raise_if_any()
        return "%d bytes" % len(raw)
    check("desktop: WEIGHTFS.txt of the demo model: name, architecture, parameters, types, layers",
          summary_demo)

    def summary_folder():
        d = new_dir("desk-hf-")
        write_file(os.path.join(d, "model.safetensors"), desktop_st_bytes())
        write_file(os.path.join(d, "config.json"),
                   b'{"architectures": ["LlamaForCausalLM"], "_name_or_path": "org/tiny-desk"}')
        write_file(os.path.join(d, "WEIGHTFS.txt"), b"the folder's own\n")
        with Mount(d) as m:
            text = open(m.path("WEIGHTFS.txt"), "rb").read().decode()
            errs = Errs()
            for want in ("Model:        org/tiny-desk\n", "Architecture: LlamaForCausalLM\n",
                         "Layers model.layers.N: 2 layers, 4 tensors", "BOOL"):
                if want not in text:
                    errs.add("no %r" % want)
            if "the folder's own" in text:
                errs.add("the folder's WEIGHTFS.txt is shown instead of the summary")
            if os.listdir(m.mp).count("WEIGHTFS.txt") != 1:
                errs.add("root lists WEIGHTFS.txt %d times" % os.listdir(m.mp).count("WEIGHTFS.txt"))
            errs.raise_if_any()
    check("desktop: a model folder's summary takes config.json's name and architecture, "
          "and its own WEIGHTFS.txt is left out", summary_folder)


# ---------------------------------------------------------------- cmds

def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def cmd_run(args, timeout=60.0, cwd=None):
    """weightfs COMMAND ...; returns (rc, stdout bytes, stderr text)."""
    p = subprocess.run([BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=reset_signals, timeout=timeout, cwd=cwd)
    err = p.stderr.decode("utf-8", "replace")
    if san_lines(err):
        raise Fail("weightfs %s: sanitizer output: %s" % (" ".join(args[:2]), " / ".join(san_lines(err)[:4])))
    return p.returncode, p.stdout, err


def o_args(opts):
    return ["-o", ",".join(opts)] if opts else []


LS_LINE = re.compile(r"^(\S+) +(\S+) +(\S+) +(\[[0-9, ]*\]) +([0-9]+)$")


def sparse_st(path, nbytes):
    """A safetensors file of one F32 tensor of nbytes zero bytes, sparse on
    disk: a big model that costs no disk until converted."""
    head = json.dumps({"w": {"dtype": "F32", "shape": [nbytes // 4],
                             "data_offsets": [0, nbytes]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        f.truncate(8 + len(head) + nbytes)
    return path


def temps_in(d):
    return [n for n in os.listdir(d) if n.endswith(".tmp") and ".weightfs-" in n]


def group_cmds():
    tiny = os.path.join(GGML, "mixed_llama_tiny.gguf")
    split1 = os.path.join(GGML, "split_llama-00001-of-00002.gguf")
    folder = new_dir("cmds-folder-")
    make_hf_folder(folder)
    models = [tiny, split1, os.path.join(STO, "model_like.safetensors"),
              os.path.join(STO, "awkward_names.safetensors"), folder,
              os.path.join(folder, "model.safetensors.index.json")]
    option_sets = [(), ("dtype=f16",), ("dtype=stored",), ("npy",), ("dtype=bf16", "npy")]

    def ls_and_json():
        errs = Errs()
        n = 0
        for model in models:
            for opts in option_sets:
                with Mount(model, o_args(list(opts))) as m:
                    tj_bytes = read_bytes(m.path("tensors.json"))
                    meta = read_bytes(m.path("metadata.json"))
                rc, out, err = cmd_run(["ls", "--json"] + o_args(opts) + [model])
                if rc != 0 or out != tj_bytes or err:
                    errs.add("%s %s: ls --json: rc %d, %s, stderr %r" % (
                        os.path.basename(model), opts, rc, "equal" if out == tj_bytes else "differs", err[:100]))
                rc, out, err = cmd_run(["info", "--json"] + o_args(opts) + [model])
                if rc != 0 or out != meta or err:
                    errs.add("%s %s: info --json: rc %d, %s" % (os.path.basename(model), opts, rc,
                                                                "equal" if out == meta else "differs"))
                # the plain listing: one aligned line per tensor, as tensors.json says
                tj = json.loads(tj_bytes.decode())
                rc, out, err = cmd_run(["ls"] + o_args(opts) + [model])
                lines = out.decode("utf-8", "replace").splitlines()
                if rc != 0 or len(lines) != len(tj["tensors"]):
                    errs.add("%s %s: ls: rc %d, %d lines for %d tensors" % (
                        os.path.basename(model), opts, rc, len(lines), len(tj["tensors"])))
                    continue
                plain = all(re.fullmatch(r"[!-~]+", e["name"]) for e in tj["tensors"])
                starts = set()
                for line, e in zip(lines, tj["tensors"]):
                    if not plain:
                        if not line.endswith(" %d" % e["size"]):
                            errs.add("%s: %r lacks size %d" % (os.path.basename(model), line, e["size"]))
                        continue
                    mt = LS_LINE.match(line)
                    want = (e["name"], e["type"], e["dtype"], json.dumps(e["shape"]), str(e["size"]))
                    if not mt or mt.groups() != want:
                        errs.add("%s %s: %r, expected %r" % (os.path.basename(model), opts, line, want))
                        continue
                    starts.add((line.index(" " + e["type"] + " ", len(e["name"])),
                                len(line)))
                if plain and len({s[0] for s in starts}) > 1 or len({s[1] for s in starts}) > 1:
                    errs.add("%s: columns not aligned: %r" % (os.path.basename(model), lines[:3]))
                n += 1
        errs.raise_if_any()
        return "%d model/option pairs: ls --json == tensors.json, info --json == metadata.json, " \
               "ls lines match" % n
    check("cmds: ls --json and info --json equal the mount's tensors.json and metadata.json; "
          "ls lines aligned, one per tensor", ls_and_json)

    def info_plain():
        rc, out, err = cmd_run(["info", tiny])
        lines = out.decode().splitlines()
        keys = [l.split()[0] for l in lines]
        want = list(json.loads(read_bytes_meta(tiny)).keys())
        if rc != 0 or keys != want:
            raise Fail("rc %d, keys %r, expected %r" % (rc, keys[:5], want[:5]))
        if any(len(l) > 200 for l in lines):
            raise Fail("a line longer than 200 characters")
        return "%d keys" % len(keys)

    def read_bytes_meta(model):
        rc, out, err = cmd_run(["info", "--json", model])
        return out.decode()
    check("cmds: info prints one line per metadata key, long values cut", info_plain)

    def cat_all():
        errs = Errs()
        rng = random.Random(SEED)
        n = 0
        for model in (tiny, split1, os.path.join(STO, "awkward_names.safetensors"), folder):
            for opts in option_sets:
                with Mount(model, o_args(list(opts))) as m:
                    tj = load_json(m.path("tensors.json"))
                    files = {}
                    for e in tj["tensors"]:
                        try:
                            files[e["name"]] = read_bytes(m.path(e["path"]))
                        except OSError as ex:
                            files[e["name"]] = ex.errno
                for i, e in enumerate(tj["tensors"]):
                    exp = files[e["name"]]
                    name = e["name"] if "\0" not in e["name"] and \
                        not re.search(r"[\udc80-\udcff]", e["name"]) else None
                    for arg in ([name] if name else []) + [e["path"]]:
                        rc, out, err = cmd_run(["cat"] + o_args(opts) + [model, arg])
                        if isinstance(exp, int):
                            if rc != 4 or out or len(err.splitlines()) != 1:
                                errs.add("%s: no decoder: rc %d, %d bytes, %r" % (arg, rc, len(out), err))
                        elif rc != 0 or out != exp:
                            errs.add("%s %s %r: rc %d, %d bytes of %d, %s" % (
                                os.path.basename(model), opts, arg, rc, len(out), len(exp), err[:100]))
                        n += 1
                    if isinstance(exp, int) or i % 3:
                        continue
                    off = rng.randrange(0, len(exp) + 2)
                    ln = rng.randrange(0, len(exp) + 2)
                    rc, out, err = cmd_run(["cat", "--offset", str(off), "--length=%d" % ln] + o_args(opts)
                                           + [model, e["path"]])
                    if rc != 0 or out != exp[off:off + ln]:
                        errs.add("%s --offset %d --length %d: rc %d, %d bytes" % (e["path"], off, ln, rc,
                                                                                  len(out)))
                    n += 1
        errs.raise_if_any()
        return "%d cats equal the mount's files" % n
    check("cmds: cat of every tensor (by name and by path; dtype=f16/stored/bf16, npy, "
          "--offset/--length) equals the mount's file", cat_all)

    def cat_errors():
        errs = Errs()
        for args, rc_want, what in ((["cat", tiny, "no.such.tensor"], 1, "no tensor"),
                                    (["cat", tiny, "blk/0"], 1, "no tensor"),
                                    (["cat", "--offset", "-1", tiny, "output.weight"], 1, "--offset -1"),
                                    (["cat", tiny], 1, "MODEL and TENSOR"),
                                    (["ls", "--bogus", tiny], 1, "unknown option"),
                                    (["ls", "-o", "dtype=f64", tiny], 1, "unknown output type"),
                                    (["convert", "-o", "npy", tiny, "/nonexistent/x"], 1, "not an option"),
                                    (["ls", "-o", "nope", tiny], 1, "not an option")):
            rc, out, err = cmd_run(args)
            if rc != rc_want or len(err.splitlines()) != 1 or what not in err or out:
                errs.add("%r: rc %d, stderr %r" % (args, rc, err))
        rc, out, err = cmd_run(["ls", "--help"])
        if rc != 0 or b"usage: weightfs ls" not in out:
            errs.add("ls --help: rc %d, %r" % (rc, out[:100]))
        errs.raise_if_any()
    check("cmds: bad command lines: one line, exit 1", cat_errors)

    def same_as_mount():
        errs = Errs()
        entries = load_json(os.path.join(MALFORMED, "expect.json"))
        gone = os.path.join(TMP, "no-such-model.gguf")
        entries.append({"file": gone, "exit": 2, "message": "No such file"})
        entries.append({"file": TMP, "exit": None, "message": None})
        outd = new_dir("cmds-mal-")
        from concurrent.futures import ThreadPoolExecutor

        def one(ent):
            path = os.path.join(MALFORMED, ent["file"])
            mp = new_dir("mal-")
            bad = []
            rc_m, _, err_m, _ = run_cli([path, mp], timeout=20.0, env=san_env())
            if rc_m == 0:
                for p in daemon_pid(mp):
                    force_unmount(mp)
                    wait_pid(p, 10)
                return []  # mounts: nothing to compare
            for args in (["ls", path], ["ls", "--json", path], ["info", path], ["cat", path, "x"],
                         ["convert", path, os.path.join(outd, "x.safetensors")]):
                rc, out, err = cmd_run(args)
                if rc != rc_m or err != err_m or out:
                    bad.append("%s %s: exit %d, stderr %r; the mount: exit %d, %r" % (
                        args[0], ent["file"], rc, err[:160], rc_m, err_m[:160]))
            return bad
        with ThreadPoolExecutor(4) as ex:
            for bad in ex.map(one, entries):
                for b in bad:
                    errs.add(b)
        if os.listdir(outd):
            errs.add("convert left %r" % os.listdir(outd))
        errs.raise_if_any()
        return "%d bad models x 5 commands" % len(entries)
    check("cmds: every malformed model (tests/malformed): each command's message and exit code "
          "are the mount's", same_as_mount)

    # convert
    def round_trip():
        errs = Errs()
        outd = new_dir("cmds-conv-")
        n_models = n_tensors = 0
        cases = [(p, ()) for p in sorted(glob.glob(os.path.join(GGML, "*.gguf")))]
        cases += [(tiny, ("dtype=bf16",)), (tiny, ("dtype=stored",)), (tiny, ("dtype=f16",)),
                  (split1, ("dtype=bf16",)), (folder, ()), (os.path.join(GGML, "no_to_float.gguf"),
                                                             ("dtype=stored",))]
        for k, (model, opts) in enumerate(cases):
            out = os.path.join(outd, "out%d.safetensors" % k)
            rc, so, err = cmd_run(["convert"] + o_args(opts) + [model, out])
            with Mount(model, o_args(list(opts))) as m:
                try:
                    st_bytes_mount = read_bytes(m.path("model.safetensors"))
                except OSError as ex:
                    st_bytes_mount = ex.errno
                if isinstance(st_bytes_mount, int):
                    # no decoder for some tensor: cp fails, and so must convert, leaving nothing
                    if rc != 4 or os.path.exists(out) or temps_in(outd) or len(err.splitlines()) != 1:
                        errs.add("%s: cp fails with errno %d, convert: rc %d, %r, files %r" % (
                            os.path.basename(model), st_bytes_mount, rc, err, os.listdir(outd)))
                    continue
                if rc != 0 or err or so:
                    errs.add("%s %s: rc %d, %r" % (os.path.basename(model), opts, rc, err[:200]))
                    continue
                if read_bytes(out) != st_bytes_mount:
                    errs.add("%s %s: differs from cp of model.safetensors" % (os.path.basename(model), opts))
                    continue
                if stat.S_IMODE(os.stat(out).st_mode) != 0o644 & ~os.umask(os.umask(0)):
                    errs.add("%s: mode %o" % (out, os.stat(out).st_mode))
                src = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
                # the output, read back by weightfs' own safetensors parser
                with Mount(out, o_args(list(opts))) as m2:
                    dst = {e["name"]: e for e in load_json(m2.path("tensors.json"))["tensors"]}
                    if sorted(dst) != sorted(src):
                        errs.add("%s: names %r vs %r" % (os.path.basename(model), sorted(dst)[:3],
                                                         sorted(src)[:3]))
                        continue
                    for name, e in src.items():
                        a = read_bytes(m.path(e["path"]))
                        b = read_bytes(m2.path(dst[name]["path"]))
                        if a != b or e["shape"] != dst[name]["shape"] or e["dtype"] != dst[name]["dtype"]:
                            errs.add("%s %s: %s differs" % (os.path.basename(model), opts, name))
                        n_tensors += 1
            n_models += 1
            os.unlink(out)
        if temps_in(outd):
            errs.add("temporary files left: %r" % temps_in(outd))
        errs.raise_if_any()
        return "%d conversions, %d tensors byte-identical after a round trip" % (n_models, n_tensors)
    check("cmds: convert == cp of the mount's model.safetensors, and its tensors read back "
          "byte-identical (every ggml-oracle GGUF, split set, folder, dtype options)", round_trip)

    def overwrite():
        errs = Errs()
        d = new_dir("cmds-ow-")
        out = os.path.join(d, "x.safetensors")
        write_file(out, b"keep me")
        rc, so, err = cmd_run(["convert", tiny, out])
        if rc != 1 or read_bytes(out) != b"keep me" or "--force" not in err or len(err.splitlines()) != 1:
            errs.add("without --force: rc %d, %r" % (rc, err))
        rc, so, err = cmd_run(["convert", "--force", tiny, out])
        with Mount(tiny) as m:
            want = read_bytes(m.path("model.safetensors"))
        if rc != 0 or read_bytes(out) != want:
            errs.add("--force: rc %d, %r" % (rc, err))
        if sorted(os.listdir(d)) != ["x.safetensors"]:
            errs.add("files left: %r" % os.listdir(d))
        errs.raise_if_any()
    check("cmds: convert refuses to overwrite OUT without --force; --force replaces it", overwrite)

    def failures():
        errs = Errs()
        # OUT's folder does not exist
        rc, so, err = cmd_run(["convert", tiny, os.path.join(TMP, "no-such-dir", "x.safetensors")])
        if rc != 1 or len(err.splitlines()) != 1:
            errs.add("missing folder: rc %d, %r" % (rc, err))
        # a full filesystem: a tmpfs too small for the output
        small = new_dir("cmds-full-")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small],
                           stderr=subprocess.PIPE)
        if r.returncode != 0:
            skip_or_fail("cannot mount a tmpfs: %s" % r.stderr.decode().strip())
        try:
            rc, so, err = cmd_run(["convert", tiny, os.path.join(small, "x.safetensors")])
            if rc != 1 or os.listdir(small) or "No space" not in err or len(err.splitlines()) != 1:
                errs.add("full disk: rc %d, %r, files %r" % (rc, err, os.listdir(small)))
        finally:
            subprocess.run(["umount", small])
        errs.raise_if_any()
    check("cmds: convert to a missing folder or a full disk fails in one line and leaves no file",
          failures)

    big = os.path.join(new_dir("cmds-big-"), "big.safetensors")
    big_bytes = 1 << 30

    def interrupted(how):
        errs = Errs()
        sparse_st(big, big_bytes)
        d = new_dir("cmds-int-")
        out = os.path.join(d, "x.safetensors")
        p = subprocess.Popen([BIN, "convert", "-o", "dtype=f16", big, out], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=reset_signals)
        t0 = time.monotonic()
        while not temps_in(d) and p.poll() is None and time.monotonic() - t0 < 20:
            time.sleep(0.002)
        time.sleep(0.05)
        if p.poll() is not None:
            raise Fail("convert ended (rc %s) before it could be interrupted" % p.returncode)
        if how == "SIGINT":
            p.send_signal(signal.SIGINT)
        else:
            os.truncate(big, big_bytes // 2)
        so, err = p.communicate(timeout=120)
        err = err.decode(errors="replace")
        want_rc = 130 if how == "SIGINT" else 2
        if p.returncode != want_rc or len(err.splitlines()) != 1:
            errs.add("rc %d (expected %d), stderr %r" % (p.returncode, want_rc, err))
        if san_lines(err):
            errs.add("sanitizer output")
        if os.listdir(d):
            errs.add("files left: %r" % os.listdir(d))
        errs.raise_if_any()
        return err.strip()
    check("cmds: convert interrupted by SIGINT: exit 130, no OUT, no temporary file",
          interrupted, "SIGINT")
    check("cmds: model truncated mid-convert: exit 2, one line, no OUT, no temporary file",
          interrupted, "truncate")

    def progress_tty():
        import pty
        d = new_dir("cmds-tty-")
        out = os.path.join(d, "x.safetensors")
        mfd, sfd = pty.openpty()
        p = subprocess.Popen([BIN, "convert", tiny, out], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=sfd, preexec_fn=reset_signals)
        os.close(sfd)
        text = b""
        while True:
            try:
                b = os.read(mfd, 4096)
            except OSError:
                break
            if not b:
                break
            text += b
        os.close(mfd)
        rc = p.wait(60)
        t = text.decode(errors="replace")
        if rc != 0 or "MB/s" not in t or not os.path.exists(out):
            raise Fail("rc %d, stderr %r" % (rc, t))
        return t.strip().replace("\r", "\\r").replace("\x1b[K", "")[-80:]
    check("cmds: convert draws progress (rate) on a terminal, nothing otherwise", progress_tty)

    def named_like_command():
        d = new_dir("cmds-ls-")
        shutil.copy(tiny, os.path.join(d, "ls"))
        mp = new_dir()
        rc, out, err, _ = run_cli(["./ls", mp], cwd=d, env=san_env())
        try:
            if rc != 0 or not os.path.exists(os.path.join(mp, "tensors.json")):
                raise Fail("weightfs ./ls MNT: rc %d, %r" % (rc, err))
        finally:
            for p in daemon_pid(mp):
                force_unmount(mp)
                wait_pid(p, 10)
            force_unmount(mp)
    check("cmds: a model file named ls mounts as ./ls", named_like_command)

    def fstab():
        if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
            skip_or_fail("needs root, unshare and mount")
        # mount(8) runs mount.fuse3 with PATH reset to the system's, so the
        # binary is put where that PATH looks, inside a private mount
        # namespace that nothing else sees.
        mp = new_dir()
        tab = os.path.join(TMP, "fstab")
        with open(tab, "w") as f:
            f.write("%s %s fuse.weightfs ro,allow_other,dtype=bf16 0 0\n" % (tiny, mp))
        with Mount(tiny, ["-o", "dtype=bf16"]) as m:
            want = hashlib.sha256(read_bytes(m.path("blk/1/ffn_up/weight"))).hexdigest()
        script = r"""
set -u
mount -t tmpfs tmpfs /usr/local/sbin || exit 90
ln -s "$BIN" /usr/local/sbin/weightfs
mount -T "$TAB" "$MP" || exit 91
grep -q " $MP ro,.* - fuse.weightfs " /proc/self/mountinfo || exit 92
test "$(sha256sum < "$MP/blk/1/ffn_up/weight" | cut -d' ' -f1)" = "$WANT" || exit 93
grep -q '"dtype":"bfloat16"' "$MP/tensors.json" || exit 94
umount "$MP" || exit 95
mount -t fuse.weightfs -o ro "$MODEL" "$MP" || exit 96
test -s "$MP/tensors.json" || exit 97
umount "$MP" || exit 98
# mount(8) passes rw unless told ro, so no options is rw too
for o in "-o rw" "-o ro,rw" ""; do
	out=$(mount -t fuse.weightfs $o "$MODEL" "$MP" 2>&1) && exit 99
	case $out in *"weightfs is read-only: remove rw"*) ;; *) echo "$o: $out"; exit 100;; esac
	grep -q " $MP " /proc/self/mountinfo && exit 101
done
exit 0
"""
        env = dict(os.environ, BIN=BIN, TAB=tab, MP=mp, WANT=want, MODEL=tiny)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode == 90:
            skip_or_fail("cannot mount a tmpfs in a private namespace")
        if r.returncode != 0:
            raise Fail("step %d failed: %r" % (r.returncode, r.stdout.decode(errors="replace")[-300:]))
        rc, out, err, _ = run_cli(["-o", "rw", tiny, mp])
        if rc != 1 or "weightfs is read-only: remove rw" not in err or is_mounted(mp):
            raise Fail("weightfs -o rw: rc %d, %r" % (rc, err))
        return "an /etc/fstab line mounts through mount(8) and mount.fuse3; rw refused"
    check("cmds: /etc/fstab line (fuse.weightfs, ro,allow_other,dtype=bf16) mounts with mount -T "
          "and umount; rw (explicit, or mount(8)'s default) refused", fstab)


# ---------------------------------------------------------------- group: views
#
# Issue 11: every tensor in each output dtype (-o dtype=f32|f16|bf16|stored),
# .npy files (-o npy), the virtual model.safetensors and the metadata folder.
# Expected values come from the oracles' float32 and numpy's (or torch's) own
# conversions, never from weightfs.

try:
    import torch  # noqa: E402 - optional: the bf16 oracle where it imports
except Exception:  # noqa: BLE001
    torch = None

VIEW_OPTS = ("f32", "f16", "bf16", "stored")
# numpy name of a type's stored elements (tensors.json "dtype" under stored)
STORED_DTYPE = {"F32": "float32", "F16": "float16", "BF16": "bfloat16", "F64": "float64",
                "I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64",
                "U8": "uint8", "U16": "uint16", "U32": "uint32", "U64": "uint64",
                "BOOL": "bool", "F8_E4M3": "float8_e4m3fn", "F8_E5M2": "float8_e5m2"}
INT_TYPES_ST = {"I8", "I16", "I32", "I64", "U8", "U16", "U32", "U64", "BOOL"}
# .npy descr of each view dtype; bfloat16 has no numpy type: raw <u2 bits
NPY_DESCR = {"float32": "<f4", "float16": "<f2", "bfloat16": "<u2", "float64": "<f8",
             "int8": "|i1", "int16": "<i2", "int32": "<i4", "int64": "<i8", "uint8": "|u1",
             "uint16": "<u2", "uint32": "<u4", "uint64": "<u8", "bool": "|b1",
             "float8_e4m3fn": "|u1", "float8_e5m2": "|u1"}
VIEW_ST = {"float32": "F32", "float16": "F16", "bfloat16": "BF16"}
ST_ITEM = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1,
           "U64": 8, "U32": 4, "U16": 2, "U8": 1, "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1}


def f16_expect(f32b):
    """numpy's astype(np.float16) of float32 bytes, as uint16 bits, with the
    documented NaN bits (docs/weightfs.1): sign | 0x7E00 | payload >> 13."""
    a = np.frombuffer(f32b, "<f4")
    u = a.view("<u4")
    with np.errstate(over="ignore", invalid="ignore"):
        h = a.astype("<f2").view("<u2").copy()
    nan = np.isnan(a)
    h[nan] = (((u[nan] >> 16) & 0x8000) | 0x7E00 | ((u[nan] >> 13) & 0x3FF)).astype("<u2")
    return h


def bf16_rne_numpy(f32b):
    """Round-to-nearest-even float32 -> bfloat16 bits, for when torch is
    missing; NaN: the documented (bits >> 16) | 0x0040."""
    u = np.frombuffer(f32b, "<u4").astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")
    nan = (u & 0x7FFFFFFF) > 0x7F800000
    r[nan] = ((u[nan] >> 16) | 0x40).astype("<u2")
    return r


def bf16_expect(f32b):
    if torch is None:
        return bf16_rne_numpy(f32b)
    a = np.frombuffer(f32b, "<f4").copy()
    b = torch.from_numpy(a).to(torch.bfloat16).view(torch.int16).numpy().view("<u2").copy()
    u = a.view("<u4")
    nan = np.isnan(a)  # torch gives one canonical NaN; ours keeps sign and payload
    b[nan] = ((u[nan] >> 16) | 0x40).astype("<u2")
    return b


def half_nan_ok(got, exp, kind, label, errs):
    """got/exp uint16 bits: NaN positions must be NaN and quiet, and equal to
    the documented bits; others equal.  Returns True if all match."""
    if kind == "f16":
        isnan = lambda v: ((v & 0x7C00) == 0x7C00) & ((v & 0x3FF) != 0)  # noqa: E731
        quiet = 0x200
    else:
        isnan = lambda v: ((v & 0x7F80) == 0x7F80) & ((v & 0x7F) != 0)  # noqa: E731
        quiet = 0x40
    if got.shape != exp.shape:
        errs.add("%s: %d elements, expected %d" % (label, got.size, exp.size))
        return False
    en = isnan(exp)
    if not np.array_equal(isnan(got), en):
        errs.add("%s: NaN positions differ" % label)
        return False
    if np.any((got[en] & quiet) == 0):
        errs.add("%s: a NaN is not quiet" % label)
        return False
    bad = np.nonzero(got != exp)[0]
    if len(bad):
        i = bad[0]
        errs.add("%s: %d elements differ, first [%d] 0x%04x, expected 0x%04x"
                 % (label, len(bad), i, got[i], exp[i]))
        return False
    return True


class ViewT:
    """One oracle tensor, as the views group sees it."""

    def __init__(self, name, ty, shape, raw, f32, quant_row=None, integer=False):
        self.name, self.ty, self.shape = name, ty, list(shape)
        self.raw = raw          # the file's bytes
        self.f32 = f32          # expected float32 bytes, or None (no decoder)
        self.quant_row = quant_row  # bytes per row of a block type (stored view)
        self.integer = integer

    def view(self, opt):
        """(dtype, shape, bytes or None for EIO, element bits for f16/bf16 or None)."""
        n = 1
        for d in self.shape:
            n *= d
        if self.integer:
            return STORED_DTYPE[self.ty], self.shape, self.raw, None
        if opt == "stored":
            if self.quant_row is not None:
                shape = list(self.shape[:-1]) + [self.quant_row] if self.shape else [len(self.raw)]
                return "uint8", shape, self.raw, None
            return STORED_DTYPE[self.ty], self.shape, self.raw, None
        if opt == "f32":
            if self.ty == "F32":
                return "float32", self.shape, self.raw, None
            return "float32", self.shape, self.f32, None
        same = {"f16": "F16", "bf16": "BF16"}[opt]
        dt = {"f16": "float16", "bf16": "bfloat16"}[opt]
        if self.ty == same:
            return dt, self.shape, self.raw, None
        if self.f32 is None:
            return dt, self.shape, None, None
        bits = f16_expect(self.f32) if opt == "f16" else bf16_expect(self.f32)
        return dt, self.shape, bits.tobytes(), bits


def view_size(t, opt):
    dt, shape, data, _ = t.view(opt)
    if data is not None:
        return len(data)
    n = 1
    for d in shape:
        n *= d
    return n * (2 if opt in ("f16", "bf16") else 4)


def views_gguf_tensors(ts):
    out = []
    for t in ts:
        with open(os.path.join(GGML, t["file"]), "rb") as f:
            f.seek(t["file_offset"])
            raw = f.read(t["nbytes"])
        ty = t["type"].upper()
        shape = list(reversed(t["ne"]))
        integer = ty in GGUF_DTYPE
        f32 = None if integer else gguf_expected(t)
        qrow = None
        if t["block_size"] > 1:
            qrow = t["ne"][0] // t["block_size"] * t["type_size"]
        out.append(ViewT(t["name"], ty, shape, raw, f32, qrow, integer))
    return out


def views_st_tensors(ts):
    out = []
    for t in ts:
        with open(os.path.join(STO, t["file"]), "rb") as f:
            f.seek(t["file_offset"])
            raw = f.read(t["nbytes"])
        with open(os.path.join(STO, t["expected"]), "rb") as f:
            exp = f.read()
        integer = t["dtype"] in INT_TYPES_ST
        out.append(ViewT(t["name"], t["dtype"], t["shape"], raw, None if integer else exp,
                         None, integer))
    return out


def parse_npy(b):
    """An independent .npy reader: (version, header dict, data offset)."""
    if b[:6] != b"\x93NUMPY":
        raise Fail("no .npy magic")
    ver = (b[6], b[7])
    if ver == (1, 0):
        hl, at = struct.unpack("<H", b[8:10])[0], 10
    elif ver in ((2, 0), (3, 0)):
        hl, at = struct.unpack("<I", b[8:12])[0], 12
    else:
        raise Fail("unknown .npy version %r" % (ver,))
    text = b[at:at + hl].decode("latin1")
    if not text.endswith("\n"):
        raise Fail(".npy header does not end in a newline")
    import ast
    d = ast.literal_eval(text)
    return ver, d, at + hl


def st_parse(path):
    """An independent safetensors reader written from the format's rules
    (huggingface/safetensors, not our parser): 8-byte little-endian header
    length N, N bytes of UTF-8 JSON that starts with '{' (trailing spaces
    allowed), an object of tensors and an optional "__metadata__" map of
    string to string; each tensor has a known dtype, a shape of
    non-negative integers and data_offsets [begin, end] relative to the
    byte after the header; the tensors cover the data exactly, without
    holes or overlaps, and each is prod(shape) * dtype size bytes.
    Returns (N, metadata, [(name, dtype, shape, begin, end)] in data
    order, file size)."""
    size = os.stat(path).st_size
    # O_DIRECT: a read through the page cache reads ahead, into tensors
    # that may have no decoder (EIO)
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        n = struct.unpack("<Q", os.pread(fd, 8, 0))[0]
        if n > 100_000_000 or 8 + n > size:
            raise Fail("header length %d too large (file %d)" % (n, size))
        raw = os.pread(fd, n, 8)
    finally:
        os.close(fd)
    if not raw.startswith(b"{"):
        raise Fail("header does not start with '{'")
    text = raw.decode("utf-8")  # must be valid UTF-8

    def no_dups(pairs):
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            raise Fail("duplicate keys in the header")
        return dict(pairs)
    hdr = json.loads(text, object_pairs_hook=no_dups)
    if not isinstance(hdr, dict):
        raise Fail("header is not an object")
    meta = hdr.pop("__metadata__", None)
    if meta is not None:
        if not isinstance(meta, dict) or not all(isinstance(v, str) for v in meta.values()):
            raise Fail("__metadata__ is not a map of strings")
    ents = []
    for name, e in hdr.items():
        if not isinstance(e, dict) or set(e) != {"dtype", "shape", "data_offsets"}:
            raise Fail("%r: bad entry %r" % (name, e))
        if e["dtype"] not in ST_ITEM:
            raise Fail("%r: unknown dtype %r" % (name, e["dtype"]))
        shp = e["shape"]
        if not isinstance(shp, list) or not all(isinstance(d, int) and d >= 0 for d in shp):
            raise Fail("%r: bad shape" % name)
        b, en = e["data_offsets"]
        if not (isinstance(b, int) and isinstance(en, int) and 0 <= b <= en):
            raise Fail("%r: bad data_offsets" % name)
        nel = 1
        for d in shp:
            nel *= d
        if nel * ST_ITEM[e["dtype"]] != en - b:
            raise Fail("%r: %d bytes for %d elements of %s" % (name, en - b, nel, e["dtype"]))
        ents.append((name, e["dtype"], shp, b, en))
    ents.sort(key=lambda x: (x[3], x[4]))
    pos = 0
    for name, _, _, b, en in ents:
        if b != pos:
            raise Fail("%r: starts at %d, expected %d (hole or overlap)" % (name, b, pos))
        pos = en
    if 8 + n + pos != size:
        raise Fail("data ends at %d, file is %d bytes" % (8 + n + pos, size))
    return n, meta or {}, ents, size


def read_chunks(path, chunk=1 << 20):
    parts = []
    with open(path, "rb", buffering=0) as f:
        while True:
            b = f.read(chunk)
            if not b:
                break
            parts.append(b)
    return b"".join(parts)


def gguf_meta_text(kv):
    """What metadata/KEY holds for a GGUF key/value, as a checker."""
    def ok(text):
        if kv["type"] == "str":
            return text == kv["value"].encode("utf-8")
        s = text.decode("utf-8")
        try:
            v = loads_exact(text)
        except ValueError:
            v = s  # a NaN or an infinity is its JSON string's text
        if kv["type"] == "arr":
            return isinstance(v, list) and len(v) == len(kv["value"]) and all(
                kv_value_ok(kv["elem_type"], w, x) for w, x in zip(kv["value"], v))
        return kv_value_ok(kv["type"], kv["value"], v)
    return ok


def check_view_mount(m, vts, opt, errs, label, st_meta_exp=None, rng=None):
    """tensors.json, xattrs, sizes and bytes of every tensor in view opt;
    returns tensors.json."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode("utf-8"))
    byname = {e["name"]: e for e in tj["tensors"]}
    for t in vts:
        e = byname.get(t.name)
        lab = "%s %s [%s]" % (label, t.name, opt)
        if e is None:
            errs.add("%s: not in tensors.json" % lab)
            continue
        dt, shape, data, bits = t.view(opt)
        if e["dtype"] != dt or e["shape"] != shape:
            errs.add("%s: tensors.json dtype/shape %s %r, expected %s %r"
                     % (lab, e["dtype"], e["shape"], dt, shape))
        p = m.path(e["path"])
        size = view_size(t, opt)
        if e["size"] != size or os.stat(p).st_size != size:
            errs.add("%s: size %d / st_size %d, expected %d" % (lab, e["size"],
                                                                os.stat(p).st_size, size))
            continue
        try:
            xs = json.loads(os.getxattr(p, "user.weightfs.shape").decode())
            xd = os.getxattr(p, "user.weightfs.dtype").decode()
            if xs != shape or xd != dt:
                errs.add("%s: xattrs %r %r, expected %r %r" % (lab, xs, xd, shape, dt))
        except OSError as ex:
            errs.add("%s: getxattr: %s" % (lab, ex))
        if data is None:
            expect_eio(p, errs, lab, size)
            continue
        got = read_chunks(p)
        if bits is not None:
            half_nan_ok(np.frombuffer(got, "<u2"), bits, opt, lab, errs)
        elif got != data:
            errs.add("%s: bytes differ" % lab)
        if rng is not None and opt in ("f16", "bf16"):
            # ranges at odd offsets, across rows and blocks, through every read path
            row = (shape[-1] if shape else 1) * np.dtype(NPY_DESCR[dt]).itemsize
            verify_bytes(p, got if bits is not None else data, rng, errs, lab, row if row > 3 else 0)
    return tj


def check_model_st(m, vts, opt, errs, label, kvs_ok, rng, order):
    """model.safetensors read by st_parse: dtypes, shapes, bytes, metadata;
    the tensors in model order (tensors.json's)."""
    p = m.path("model.safetensors")
    byname = {t.name: t for t in vts}
    vts = [byname[nm] for nm in order if nm in byname]
    n, meta, ents, size = st_parse(p)
    if n % 8:
        errs.add("%s: header length %d is not a multiple of 8" % (label, n))
    if meta.get("format") != "pt" and "format" not in kvs_ok:
        errs.add("%s: __metadata__ format %r" % (label, meta.get("format")))
    for k, ok in kvs_ok.items():
        if k not in meta:
            errs.add("%s: __metadata__ lacks %r" % (label, k))
        elif not ok(meta[k].encode("utf-8")):
            errs.add("%s: __metadata__[%r] = %r" % (label, k, meta[k][:80]))
    names = [e[0] for e in ents]
    if names != [t.name for t in vts]:
        errs.add("%s: tensors %r..., expected %r... in model order"
                 % (label, names[:3], [t.name for t in vts][:3]))
        return
    stored_types = json.loads(meta["weightfs.stored_types"]) if "weightfs.stored_types" in meta else {}
    want_types = {t.name: t.ty for t in vts if opt == "stored" and t.quant_row is not None}
    if stored_types != want_types:
        errs.add("%s: weightfs.stored_types %r, expected %r" % (label, stored_types, want_types))
    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
    try:
        whole = bytearray(os.pread(fd, 8 + n, 0))
    finally:
        os.close(fd)
    readable = True
    for (name, sdt, shp, b, en), t in zip(ents, vts):
        dt, shape, data, bits = t.view(opt)
        want_st = VIEW_ST.get(dt, "U8" if t.quant_row is not None and opt == "stored" else t.ty)
        if sdt != want_st or shp != shape:
            errs.add("%s: %s is %s %r, expected %s %r" % (label, name, sdt, shp, want_st, shape))
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:
            if data is None:
                readable = False
                try:
                    os.pread(fd, max(en - b, 1), 8 + n + b)
                    errs.add("%s: %s: read without a decoder did not fail" % (label, name))
                except OSError as ex:
                    if ex.errno != errno.EIO:
                        errs.add("%s: %s: %s, expected EIO" % (label, name, ex))
                whole += b"\0" * (en - b)
                continue
        finally:
            os.close(fd)
        whole += data
    if not readable:
        return
    got = read_chunks(p)
    if len(got) != size or got[:8 + n] != whole[:8 + n]:
        errs.add("%s: model.safetensors header read back differs" % label)
    for (name, sdt, shp, b, en), t in zip(ents, vts):
        dt, shape, data, bits = t.view(opt)
        piece = got[8 + n + b:8 + n + en]
        if bits is not None:
            half_nan_ok(np.frombuffer(piece, "<u2"), bits, opt, "%s: %s" % (label, name), errs)
        elif piece != data:
            errs.add("%s: %s: bytes in model.safetensors differ" % (label, name))
    # ranges across tensor boundaries, against what the whole read gave
    # (NaN payload rules are checked above; here every read path must agree)
    verify_bytes(p, got, rng, errs, label + " model.safetensors", 0, 0)
    return got


def roundtrip_st(m, vts, opt, data, errs, label):
    """cp model.safetensors out.safetensors, mount that: the same tensors,
    byte for byte."""
    out = os.path.join(TMP, "roundtrip.safetensors")
    write_file(out, data)
    try:
        with Mount(out, ["-o", "dtype=%s" % opt] if opt != "f32" else []) as m2:
            with open(m2.path("tensors.json"), "rb") as f:
                tj2 = json.loads(f.read().decode("utf-8"))
            with open(m.path("tensors.json"), "rb") as f:
                tj1 = json.loads(f.read().decode("utf-8"))
            e1 = {e["name"]: e for e in tj1["tensors"]}
            for e in tj2["tensors"]:
                a = e1.get(e["name"])
                if a is None:
                    errs.add("%s: round trip: %r not in the original" % (label, e["name"]))
                    continue
                if (a["dtype"], a["shape"]) != (e["dtype"], e["shape"]):
                    errs.add("%s: round trip: %s is %s %r, was %s %r" % (
                        label, e["name"], e["dtype"], e["shape"], a["dtype"], a["shape"]))
                if read_chunks(m2.path(e["path"])) != read_chunks(m.path(a["path"])):
                    errs.add("%s: round trip: %s bytes differ" % (label, e["name"]))
            if len(tj2["tensors"]) != len(vts):
                errs.add("%s: round trip: %d tensors, expected %d" % (label, len(tj2["tensors"]),
                                                                     len(vts)))
    finally:
        os.unlink(out)


def check_npy_mount(m, vts, opt, errs, label, big=None):
    """-o npy: each tensor's NAME.npy through an independent header reader,
    np.load and np.load(mmap_mode="r")."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode("utf-8"))
    byname = {e["name"]: e for e in tj["tensors"]}
    for t in vts:
        e = byname.get(t.name)
        lab = "%s %s [npy,%s]" % (label, t.name, opt)
        if e is None:
            errs.add("%s: not in tensors.json" % lab)
            continue
        if not e["path"].endswith(".npy"):
            errs.add("%s: path %r does not end in .npy" % (lab, e["path"]))
        dt, shape, data, bits = t.view(opt)
        p = m.path(e["path"])
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:  # exactly the header: a tensor without a decoder fails past it
            pre = os.pread(fd, 12, 0)
            hl = struct.unpack("<H", pre[8:10])[0] if pre[6:7] == b"\x01" else \
                struct.unpack("<I", pre[8:12])[0] + 2
            head = os.pread(fd, 10 + hl, 0)
        finally:
            os.close(fd)
        ver, d, at = parse_npy(head)
        if ver != (1, 0) or at % 64:
            errs.add("%s: version %r, data at %d" % (lab, ver, at))
        want = {"descr": NPY_DESCR[dt], "fortran_order": False, "shape": tuple(shape)}
        if d != want:
            errs.add("%s: header %r, expected %r" % (lab, d, want))
        if os.stat(p).st_size != at + view_size(t, opt):
            errs.add("%s: st_size %d, expected %d" % (lab, os.stat(p).st_size, at + view_size(t, opt)))
        if data is None:
            try:
                np.load(p)
                errs.add("%s: np.load without a decoder did not fail" % lab)
            except OSError as ex:
                if ex.errno != errno.EIO:
                    errs.add("%s: np.load: %s" % (lab, ex))
            except ValueError:
                pass  # numpy reports a short read as ValueError
            continue
        want_b = bits.tobytes() if bits is not None else data
        a = np.load(p)
        if a.dtype != np.dtype(NPY_DESCR[dt]) or a.shape != tuple(shape):
            errs.add("%s: np.load gave %s %r" % (lab, a.dtype, a.shape))
        elif bits is not None:
            half_nan_ok(a.reshape(-1).view("<u2"), bits, opt, lab + " np.load", errs)
        elif a.tobytes() != want_b:
            errs.add("%s: np.load data differs" % lab)
        if len(want_b):
            mm = np.load(p, mmap_mode="r")
            try:
                if not isinstance(mm, np.memmap) or mm.shape != tuple(shape):
                    errs.add("%s: np.load(mmap_mode='r') gave %r" % (lab, type(mm)))
                elif bits is not None:
                    half_nan_ok(np.asarray(mm).reshape(-1).view("<u2"), bits, opt, lab + " mmap", errs)
                elif mm.tobytes() != want_b:
                    errs.add("%s: np.load(mmap_mode='r') data differs" % lab)
            finally:
                mm._mmap.close()
                del mm


def meta_folder(m):
    """"metadata", or "metadata.d" when a tensor (or a file of the model's
    folder) already has that name at the root."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode("utf-8"))
    taken = any(e["path"].split("/")[0] == "metadata" for e in tj["tensors"])
    return "metadata.d" if taken else "metadata"


def views_for_file(label, model, vts, kvs_ok, rng, roundtrip=True, extra_opts=()):
    """Every check of the group for one model, in every dtype, plain and npy."""
    n_checked = 0
    for opt in VIEW_OPTS:
        def plain():
            errs = Errs()
            with Mount(model, ["-o", "dtype=%s" % opt] + list(extra_opts)) as m:
                tj = check_view_mount(m, vts, opt, errs, label, rng=rng)
                order = [e["name"] for e in tj["tensors"]]
                data = check_model_st(m, vts, opt, errs, label, kvs_ok, rng, order)
                if roundtrip and data is not None and not len(errs):
                    roundtrip_st(m, vts, opt, data, errs, label)
            errs.raise_if_any()
            return "%d tensors" % len(vts)
        check("views: %s -o dtype=%s: tensors, xattrs, model.safetensors%s" % (
            label, opt, ", round trip" if roundtrip else ""), plain)

        def npy():
            errs = Errs()
            with Mount(model, ["-o", "npy,dtype=%s" % opt] + list(extra_opts)) as m:
                check_npy_mount(m, vts, opt, errs, label)
            errs.raise_if_any()
        check("views: %s -o npy,dtype=%s: np.load with and without mmap_mode" % (label, opt), npy)
        n_checked += len(vts)
    return n_checked


def edge_values():
    """float32 values at the edges of half and bfloat16 rounding, and random bits."""
    v = []
    # f16: ties (to even), around the largest half and the overflow point
    v += [1.0 + 2**-11, 1.0 + 3 * 2**-11, 1.0 + 2**-11 + 2**-23, 2048.0 + 1, 2048.0 + 3,
          65504.0, 65519.0, 65519.996, 65520.0, 65520.004, 65536.0, 1e6, 3.4028235e38]
    # f16 subnormals: smallest (2^-24), ties at half of it, the normal boundary
    v += [2**-24, 2**-25, 2**-25 * 1.0000001, 3 * 2**-25, 5 * 2**-25, 2**-14, 2**-14 - 2**-25,
          2**-14 - 2**-24, 2**-26, 1e-8, 6e-8, 1e-45, 2**-149]
    # bf16: ties (0x8000 in the dropped bits), overflow, float32 subnormals
    for bits in (0x3F808000, 0x3F818000, 0x3F808001, 0x7F7F8000, 0x7F7F7FFF, 0x7F7FFFFF,
                 0x00008000, 0x00018000, 0x00000001, 0x007FFFFF, 0x80008000):
        v.append(struct.unpack("<f", struct.pack("<I", bits))[0])
    v += [0.0, -0.0, float("inf"), float("-inf")]
    a = np.array(v, "<f4")
    a = np.concatenate([a, -a])
    nans = np.array([0x7FC00000, 0xFFC00000, 0x7F800001, 0xFF800001, 0x7FA00000, 0x7FFFFFFF,
                     0x7F802000, 0x7F801FFF, 0x7FBFFFFF, 0xFFFFE000, 0x7F810000], "<u4").view("<f4")
    rnd = np.random.default_rng(SEED).integers(0, 2**32, size=1 << 18, dtype=np.uint64)
    rnd = rnd.astype("<u4").view("<f4")
    return np.concatenate([a, nans, rnd]).astype("<f4")


def edge_model():
    """A GGUF of F32 edge values, every F16 and every BF16 bit pattern, and
    a 4 MiB F32 tensor (for the mmap check)."""
    f32 = edge_values()
    all16 = np.arange(65536, dtype="<u2")
    big = np.random.default_rng(SEED + 1).standard_normal(1 << 20).astype("<f4")
    tensors = [(b"edge.f32", 0, [f32.size], f32.tobytes()),
               (b"edge.f16", 1, [256, 256], all16.tobytes()),
               (b"edge.bf16", 30, [256, 256], all16.tobytes()),
               (b"edge.big", 0, [1024, 1024], big.tobytes())]
    template = ("{% for m in messages %}<|{{ m['role'] }}|>\n{{ m[\"content\"] }}\\n"
                "{% endfor %}\t\u00e9\u4e2d\U0001F600 \"quoted\"\n")
    kvs = [gkv("general.architecture", "str", "llama"),
           gkv("tokenizer.chat_template", "str", template),
           gkv("llama.context_length", "u32", 4096),
           gkv("llama.rope.freq_base", "f32", 10000.0),
           gkv("tokenizer.ggml.tokens", "arr", ["<s>", "a\"b", "\u00e9"], "str"),
           gkv("tokenizer.ggml.scores", "arr", [0.0, -1.5, 2.25], "f32"),
           gkv("odd/key", "str", "slash"), gkv(b"odd\xffbyte", "str", "byte"),
           gkv("k" * 300, "u8", 7), gkv("flag", "bool", True)]
    path = write_file(os.path.join(TMP, "edge.gguf"), gguf_bytes(tensors, kvs))
    return path, f32, all16, big, template


def group_views():
    rng = random.Random("%d/views" % SEED)
    total = 0
    for fm in GGML_MAN["files"]:
        fname = fm["file"]
        set_files, ts = split_set(GGML_MAN, fm)
        if set_files[0]["file"] != fname:
            continue  # a later part of a split set: the first part mounts it all
        vts = views_gguf_tensors(ts)
        kvs_ok = {kv["key"]: gguf_meta_text(kv) for kv in set_files[0]["kv"]}
        total += views_for_file(fname, os.path.join(GGML, fname), vts, kvs_ok, rng)
    for fm in ST_MAN["files"]:
        fname = fm["file"]
        ts = [t for t in ST_MAN["tensors"] if t["file"] == fname]
        _, header = st_header(os.path.join(STO, fname))
        md = header.get("__metadata__", {})
        kvs_ok = {k: (lambda v: lambda text: text == v.encode("utf-8"))(v) for k, v in md.items()}
        total += views_for_file(fname, os.path.join(STO, fname), views_st_tensors(ts), kvs_ok, rng)

    # edge values of the rounding, through F32, F16 and BF16 sources
    path, f32, all16, big, template = edge_model()

    def edges():
        errs = Errs()
        f16src = all16.view("<f2").astype("<f4")  # exact: every half is a float32
        bf16src = (all16.astype("<u4") << 16).view("<f4")
        if torch is not None:
            # the numpy reimplementation agrees with torch off NaN
            a = bf16_rne_numpy(f32.tobytes())
            t = bf16_expect(f32.tobytes())
            if not np.array_equal(a, t):
                errs.add("numpy RNE and torch disagree on %d values" % int(np.sum(a != t)))
        with Mount(path) as m:
            got16 = np.frombuffer(read_chunks(m.path("edge/f16")), "<f4")
            gotb = np.frombuffer(read_chunks(m.path("edge/bf16")), "<f4")
        # the f32 views of F16/BF16 sources are exact; NaNs stay NaN
        for got, want, what in ((got16, f16src, "F16"), (gotb, bf16src, "BF16")):
            wn = np.isnan(want)
            if not np.array_equal(np.isnan(got), wn) or \
                    got[~wn].tobytes() != want[~wn].tobytes():
                errs.add("f32 view of every %s pattern differs" % what)
        vts = [ViewT("edge.f32", "F32", [f32.size], f32.tobytes(), f32.tobytes()),
               ViewT("edge.f16", "F16", [256, 256], all16.tobytes(), got16.tobytes()),
               ViewT("edge.bf16", "BF16", [256, 256], all16.tobytes(), gotb.tobytes()),
               ViewT("edge.big", "F32", [1024, 1024], big.tobytes(), big.tobytes())]
        for opt in ("f16", "bf16"):
            with Mount(path, ["-o", "dtype=%s" % opt]) as m:
                check_view_mount(m, vts, opt, errs, "edge", rng=rng)
        errs.raise_if_any()
        return "%d float32 values, %d half and %d bfloat16 patterns; bf16 oracle: %s" % (
            f32.size, 65536, 65536, "torch " + torch.__version__ if torch else "numpy RNE")
    check("views: f16/bf16 rounding at the edges (ties, overflow, subnormals, NaN bits)", edges)

    def npy_no_read():
        # np.load(mmap_mode="r") reads only the header: /proc/self/io's rchar
        errs = Errs()
        with Mount(path, ["-o", "npy,dtype=bf16"]) as m:
            p = m.path("edge/big.npy")

            def rchar():
                with open("/proc/self/io") as f:
                    return int(next(l for l in f if l.startswith("rchar:")).split()[1])
            r0 = rchar()
            mm = np.load(p, mmap_mode="r")
            r1 = rchar()
            try:
                if r1 - r0 > 64 * 1024:
                    errs.add("np.load(mmap_mode='r') read %d bytes of a 2 MiB tensor" % (r1 - r0))
                if mm.dtype != np.dtype("<u2") or mm.shape != (1024, 1024):
                    errs.add("gave %s %r" % (mm.dtype, mm.shape))
                # bf16 as <u2: the bits, which ml_dtypes or torch can view
                want = bf16_expect(big.tobytes()).reshape(1024, 1024)
                if not np.array_equal(np.asarray(mm), want):
                    errs.add("data differs")
                if torch is not None:
                    tt = torch.from_numpy(np.array(mm).view(np.int16)).view(torch.bfloat16)
                    if not torch.equal(tt, torch.from_numpy(big.reshape(1024, 1024)).to(torch.bfloat16)):
                        errs.add("torch view of the <u2 bits differs")
            finally:
                mm._mmap.close()
                del mm
        errs.raise_if_any()
        return "header read: %d bytes" % (r1 - r0)
    check("views: -o npy,dtype=bf16: np.load(mmap_mode='r') reads only the header; <u2 bits", npy_no_read)

    def meta_files():
        errs = Errs()
        with Mount(path) as m:
            d = m.path("metadata")
            names = sorted(os.listdir(d))
            want = {"general.architecture": b"llama", "tokenizer.chat_template": template.encode(),
                    "llama.context_length": b"4096", "odd%2Fkey": b"slash",
                    "odd%FFbyte": b"byte", "flag": b"true"}
            for k, v in want.items():
                try:
                    with open(os.path.join(d, k), "rb") as f:
                        got = f.read()
                except OSError as ex:
                    errs.add("%s: %s (have %r)" % (k, ex, names))
                    continue
                if got != v:
                    errs.add("%s: %r, expected %r" % (k, got[:100], v[:100]))
            with open(os.path.join(d, "llama.rope.freq_base"), "rb") as f:
                if float(f.read()) != 10000.0:
                    errs.add("llama.rope.freq_base")
            with open(os.path.join(d, "tokenizer.ggml.tokens"), "rb") as f:
                if json.loads(f.read()) != ["<s>", "a\"b", "\u00e9"]:
                    errs.add("tokenizer.ggml.tokens")
            with open(os.path.join(d, "tokenizer.ggml.scores"), "rb") as f:
                if json.loads(f.read()) != [0.0, -1.5, 2.25]:
                    errs.add("tokenizer.ggml.scores")
            longs = [n for n in names if n.startswith("kkkk")]
            if len(longs) != 1 or len(longs[0].encode()) > 255 or \
                    not re.search(r"%~[0-9a-f]{16}$", longs[0]):
                errs.add("300-byte key: %r" % longs)
            else:
                with open(os.path.join(d, longs[0]), "rb") as f:
                    if f.read() != b"7":
                        errs.add("300-byte key's value")
            if len(names) != 10:
                errs.add("%d files, expected 10: %r" % (len(names), names))
            for n in names:
                if os.stat(os.path.join(d, n)).st_mode & 0o222:
                    errs.add("%s is writable" % n)
            # metadata.json stays
            json.loads(open(m.path("metadata.json"), "rb").read())
        errs.raise_if_any()
    check("views: metadata folder: chat template as text, numbers, arrays, odd and long keys",
          meta_files)

    def metadata_manifest():
        # every oracle GGUF's keys as files, against the manifest
        errs = Errs()
        n = 0
        for fm in GGML_MAN["files"]:
            if split_set(GGML_MAN, fm)[0][0]["file"] != fm["file"]:
                continue
            with Mount(os.path.join(GGML, fm["file"])) as m:
                d = m.path(meta_folder(m))
                if len(os.listdir(d)) != len(fm["kv"]):
                    errs.add("%s: %d files for %d keys" % (fm["file"], len(os.listdir(d)), len(fm["kv"])))
                for kv in fm["kv"]:
                    with open(os.path.join(d, kv["key"]), "rb") as f:
                        if not gguf_meta_text(kv)(f.read()):
                            errs.add("%s: %s" % (fm["file"], kv["key"]))
                    n += 1
        for fm in ST_MAN["files"]:
            _, header = st_header(os.path.join(STO, fm["file"]))
            md = header.get("__metadata__", {})
            with Mount(os.path.join(STO, fm["file"])) as m:
                d = m.path(meta_folder(m))
                if sorted(os.listdir(d)) != sorted(md):
                    errs.add("%s: files %r, keys %r" % (fm["file"], os.listdir(d), list(md)))
                for k, v in md.items():
                    with open(os.path.join(d, k), "rb") as f:
                        if f.read() != v.encode():
                            errs.add("%s: %s" % (fm["file"], k))
                    n += 1
        errs.raise_if_any()
        return "%d keys" % n
    check("views: metadata folder of every oracle file against the manifests", metadata_manifest)

    def refusals():
        errs = Errs()
        f4 = os.path.join(TMP, "f4_odd.safetensors")
        hdr = json.dumps({"w": {"dtype": "F4", "shape": [2, 3], "data_offsets": [0, 3]}}).encode()
        write_file(f4, struct.pack("<Q", len(hdr)) + hdr + b"\x12\x34\x56")
        f6 = os.path.join(TMP, "f6_odd.safetensors")  # 12 elements, rows of 6
        hdr = json.dumps({"w": {"dtype": "F6_E2M3", "shape": [2, 6], "data_offsets": [0, 9]}}).encode()
        write_file(f6, struct.pack("<Q", len(hdr)) + hdr + bytes(range(9)))
        for model, opts, substr in ((path, ["-o", "dtype=f8"], "dtype=f8"),
                                    (path, ["-o", "dtype="], "dtype"),
                                    (path, ["-o", "dtype=F16x"], "dtype"),
                                    (f4, ["-o", "dtype=stored"], "stored"),
                                    (f6, ["-o", "dtype=stored"], "stored")):
            mp = new_dir()
            rc, _, err, _ = run_cli(["-f"] + opts + [model, mp])
            err = err.strip()
            if rc == 0 or is_mounted(mp):
                errs.add("%s %s: mounted" % (" ".join(opts), os.path.basename(model)))
                force_unmount(mp)
            elif len(err.splitlines()) != 1 or substr not in err or not err.startswith("weightfs:"):
                errs.add("%s %s: message %r" % (" ".join(opts), os.path.basename(model), err))
        # an even row of F4 is whole bytes: stored works there
        f4e = os.path.join(TMP, "f4_even.safetensors")
        hdr = json.dumps({"w": {"dtype": "F4", "shape": [2, 4], "data_offsets": [0, 4]}}).encode()
        write_file(f4e, struct.pack("<Q", len(hdr)) + hdr + b"\x12\x34\x56\x78")
        with Mount(f4e, ["-o", "dtype=stored"]) as m:
            if open(m.path("w"), "rb").read() != b"\x12\x34\x56\x78" or \
                    os.getxattr(m.path("w"), "user.weightfs.shape") != b"[2, 2]":
                errs.add("F4 [2, 4] under stored: not its 4 bytes as [2, 2]")
        errs.raise_if_any()
    check("views: -o dtype=f8 and -o dtype=stored on odd F4/F6 rows refused before mounting", refusals)
    return "%d tensor views" % total


# ---------------------------------------------------------------- main

def print_tally():
    for title, table in (("GGUF (ggml-oracle)", TALLY_GGUF), ("safetensors (st-oracle)", TALLY_ST)):
        if not table:
            continue
        print("# per-type results, %s: type matched/total" % title)
        for ty in sorted(table):
            ok, total, note = table[ty]
            print("#   %-12s %3d/%-3d %s" % (ty, ok, total, note if ok == total else
                                           "<-- MISMATCH " + note))


def main():
    print("# weightfs mount tests: %s%s, seed %d, tmp %s" % (
        BIN, " (sanitizer build)" if SANITIZED else "", SEED, TMP), flush=True)
    data_files = sorted(glob.glob(os.path.join(GGML, "*")) + glob.glob(os.path.join(STO, "*")))
    hashes = {p: sha256_file(p) for p in data_files}
    groups = [("data", group_data_gguf), ("data", group_data_st), ("data", group_data_floats),
              ("naming", group_naming),
              ("stat", group_stat), ("xattr", group_xattr), ("errors", group_errors),
              ("cli", group_cli), ("cli", group_cli_mountpoint),
              ("unmount", group_unmount), ("concurrency", group_concurrency),
              ("truncate", group_truncate), ("large", group_large), ("many", group_many),
              ("malformed", group_malformed), ("remote", group_remote)]
    groups.append(("bounds", group_bounds))
    groups.append(("sets", group_sets))
    groups.append(("desktop", group_desktop))
    groups.append(("cmds", group_cmds))
    groups.append(("views", group_views))
    for gname, fn in groups:
        if not want(gname):
            continue
        t0 = time.monotonic()
        check("%s: group ran to completion" % gname, fn)
        print("# group %s: %.1f s" % (gname, time.monotonic() - t0), flush=True)

    def data_unchanged():
        changed = [os.path.basename(p) for p in data_files if sha256_file(p) != hashes[p]]
        if changed:
            raise Fail("changed: %r" % changed)
    check("errors: every test data file's sha256 unchanged after the suite", data_unchanged)

    def no_mounts_left():
        left = [m for m in mountinfo_points() if m.startswith(TMP.encode())]
        if left:
            for m in left:
                force_unmount(m.decode(errors="surrogateescape"))
            raise Fail("mounts left behind: %r" % left)
    check("cleanup: no mount left behind", no_mounts_left)

    def sanlogs():
        files = sanlog_files()
        if files:
            with open(files[0], errors="replace") as f:
                raise Fail("%d sanitizer log files, first: %s" % (len(files), f.read()[:500]))
    check("sanitizer: no reports from daemonized runs", sanlogs)

    print_tally()
    failed = [r for r in RESULTS if not r[1]]
    print("# %.1f s" % (time.monotonic() - T_START))
    print("%d passed, %d failed" % (len(RESULTS) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
