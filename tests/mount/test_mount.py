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
                  large, many, malformed, bounds)
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

    def __init__(self, model, opts=(), label=None):
        self.model = model
        self.mp = new_dir()
        self.errpath = self.mp + ".stderr"
        self.rc = None
        self.closed = False
        self.argv = [BIN, "-f"] + list(opts) + [model, self.mp]
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


def group_data_gguf():
    for fname, fm, model, ts, m in manifest_mounts(GGML_MAN, GGML, TALLY_GGUF,
                                                   lambda t: t["type"].upper()):
        tj = {}

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
            for t in ts:
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


def walk_files(m):
    root = m.mp.encode()
    found = set()
    for d, dirs, files in os.walk(root):
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


def json_replacing(b):
    """What weightfs's JSON writer makes of bytes b: each bad byte -> U+FFFD."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = utf8_len(b, i) if c >= 0x80 else 1
        if n == 0:
            out.append("\ufffd")
            i += 1
        else:
            out.append(b[i:i + n].decode("utf-8"))
            i += n
    return "".join(out)


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
                if e["name"] != json_replacing(raw):
                    errs.add("tensor %d: name %r, expected %r" % (i, e["name"], json_replacing(raw)))
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
            k = json_replacing(b"key.bad\xffutf8")
            if d.get(k) != json_replacing(b"value\xfe\x00nul\x01ctl\"q\\b\xe2\x82"):
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
            if d.get("arr.str") != ["\ufffd", "ok", ""]:
                errs.add("arr.str: %r" % d.get("arr.str"))
            errs.raise_if_any()
        check("naming: metadata.json of hostile keys/values is valid exact JSON", meta)
        check("stat: tree of the hostile GGUF", check_stat_tree, m, model)
        check("stat: ls/du/find/tree on the hostile GGUF", check_tools, m, len(HOSTILE_NAMES))


# ---------------------------------------------------------------- group: stat

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
            if st.st_blocks != (st.st_size + 511) // 512:
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
    if nf != n_tensors + 2:
        errs.add("find -type f lists %d files, expected %d" % (nf, n_tensors + 2))
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
                return "getfattr not installed; skipped"
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
        with Mount(model, ["-o", "rw"]) as m2:
            errs = Errs()
            write_ops(m2, "blk/1/ffn_up/weight", errs)
            errs.raise_if_any()
    check("errors: -o rw is overridden; still read-only with EROFS", rw_opt)

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
        for path, substr in ((d, "not a regular file"), (fifo, "not a regular file"),
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
        mp = new_dir()
        with open(os.path.join(mp, "existing"), "w") as f:
            f.write("x")
        rc, out, err, _ = run_cli([model, mp], env=san_env())
        if rc < 0:
            raise Fail("weightfs killed by signal %d" % -rc)
        if rc == 0:
            pids = daemon_pid(mp)
            for p in pids:
                ACTIVE[mp] = p
            if not is_mounted(mp):
                raise Fail("exit 0 but not mounted")
            ok = os.path.exists(os.path.join(mp, "tensors.json"))
            r = subprocess.run(["fusermount3", "-u", mp], timeout=15)
            for p in pids:
                wait_pid(p, 10)
            ACTIVE.pop(mp, None)
            if not ok or r.returncode != 0 or is_mounted(mp):
                raise Fail("mount over a non-empty directory misbehaved")
            if not os.path.exists(os.path.join(mp, "existing")):
                raise Fail("the directory's file is gone after unmounting")
            return "libfuse mounts over it (exit 0)"
        if is_mounted(mp):
            force_unmount(mp)
            raise Fail("exit %d but mounted" % rc)
        return "refused with exit %d: %s" % (rc, err.strip()[:100])
    check("cli: non-empty mount point handled without a crash", nonempty)

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


# ---------------------------------------------------------------- group: truncate

def group_truncate():
    fname = "mixed_llama_tiny.gguf"
    src = os.path.join(GGML, fname)
    ts = [t for t in GGML_MAN["tensors"] if t["file"] == fname]
    model = os.path.join(TMP, "trunc.gguf")
    shutil.copyfile(src, model)
    size = os.path.getsize(model)
    cut = size // 2
    first = min(ts, key=lambda t: t["file_offset"])
    inside = [t for t in ts if t["file_offset"] + t["nbytes"] <= cut and t is not first]
    gone = [t for t in ts if t["file_offset"] >= cut]
    straddle = [t for t in ts if t["file_offset"] < cut < t["file_offset"] + t["nbytes"]]
    m = Mount(model)
    try:
        def truncated():
            errs = Errs()
            p0 = m.path(first["name"].replace(".", "/"))
            with open(p0, "rb") as f:
                if f.read() != gguf_expected(first):
                    errs.add("before truncation: %s wrong" % first["name"])
            os.truncate(model, cut)
            # the page cache may keep already-read pages (keep_cache); only
            # assert on tensors never read before the truncation
            for t in gone:
                p = m.path(t["name"].replace(".", "/"))
                fd = os.open(p, os.O_RDONLY)
                try:
                    try:
                        got = os.pread(fd, 64, 8)
                        errs.add("%s (wholly cut off): pread gave %d bytes, expected EIO"
                                 % (t["name"], len(got)))
                    except OSError as ex:
                        if ex.errno != errno.EIO:
                            errs.add("%s: %s, expected EIO" % (t["name"], ex))
                finally:
                    os.close(fd)
            for t in inside:
                exp = gguf_expected(t)
                p = m.path(t["name"].replace(".", "/"))
                fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                try:
                    if os.pread(fd, len(exp), 0) != exp:
                        errs.add("%s (still inside the file): wrong bytes" % t["name"])
                except OSError as ex:
                    errs.add("%s (still inside the file): %s" % (t["name"], ex))
                finally:
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("daemon died (exit %s)" % m.proc.returncode)
            else:
                os.stat(m.mp)
                with open(m.path("tensors.json"), "rb") as f:
                    json.loads(f.read().decode())
            errs.raise_if_any()
            return "%d tensors cut off, %d inside, %d straddling byte %d" % (
                len(gone), len(inside), len(straddle), cut)
        check("truncate: MODEL truncated under the mount: EIO for lost tensors, rest intact",
              truncated)

        def straddling():
            # a tensor cut in the middle: ranges whose source bytes are all
            # before the cut read fine; ranges needing bytes after it must
            # fail with EIO, not come back as zeros from the mapping's last page
            errs = Errs()
            for t in straddle:
                exp = gguf_expected(t)
                ty = t["type"].upper()
                blk_out = t["block_size"] * 4
                blk_in = t["nbytes"] // (t["n_elements"] // t["block_size"])
                ok_blocks = (cut - t["file_offset"]) // blk_in
                p = m.path(t["name"].replace(".", "/"))
                fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                try:
                    if ok_blocks:
                        ln = ok_blocks * blk_out
                        try:
                            if os.pread(fd, ln, 0) != exp[:ln]:
                                errs.add("%s: bytes before the cut wrong" % t["name"])
                        except OSError as ex:
                            errs.add("%s: bytes before the cut: %s" % (t["name"], ex))
                    off = (ok_blocks + 1) * blk_out  # first block wholly after the cut
                    if off < len(exp):
                        try:
                            got = os.pread(fd, blk_out, off)
                            errs.add("%s (%s): block %d (source bytes %d.. past the new end %d) "
                                     "read %d bytes (%s) instead of EIO" % (
                                         t["name"], ty, ok_blocks + 1,
                                         t["file_offset"] + (ok_blocks + 1) * blk_in, cut,
                                         len(got), "zeros" if not any(got) else "data"))
                        except OSError as ex:
                            if ex.errno != errno.EIO:
                                errs.add("%s: %s, expected EIO" % (t["name"], ex))
                finally:
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("daemon died")
            errs.raise_if_any()
            return "%d straddling tensors" % len(straddle)
        if straddle:
            check("truncate: a tensor cut in the middle: EIO past the cut, not zeros", straddling)
    finally:
        check("truncate: unmount after truncation", m.finish)

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
                if r.returncode != 0 or n != len(names) + 2:
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

def group_malformed():
    expect = os.path.join(MALFORMED, "expect.json")
    if not os.path.exists(expect):
        report("malformed: tests/malformed/expect.json", True,
               info="skipped: tests/malformed/expect.json does not exist")
        return
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
    groups = [("data", group_data_gguf), ("data", group_data_st), ("naming", group_naming),
              ("stat", group_stat), ("xattr", group_xattr), ("errors", group_errors),
              ("cli", group_cli), ("unmount", group_unmount), ("concurrency", group_concurrency),
              ("truncate", group_truncate), ("large", group_large), ("many", group_many),
              ("malformed", group_malformed)]
    groups.append(("bounds", group_bounds))
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
