"""Shared scaffolding of the mount tests (tests/mount/test_mount.py runs them).

Paths and settings, the results (report/check/Skip/skip_or_fail/Errs), Mount
and the mount/unmount helpers, run_cli, daemon pids, sanitizer logs and the
atexit cleanup.  BIN, SANITIZED, TMP, SANLOG, MOUNT_TIMEOUT and T_START are
set once by init(BINARY), which the entry point calls before it imports any
other test module; those modules take them with `from wf_harness import ...`.
"""

import atexit
import ctypes
import gc
import glob
import hashlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import traceback


# ---------------------------------------------------------------- setup

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DATA = os.path.join(ROOT, "tests", "data")
GGML = os.path.join(DATA, "ggml-oracle")
STO = os.path.join(DATA, "st-oracle")
MALFORMED = os.path.join(ROOT, "tests", "malformed")

SEED = int(os.environ.get("WF_TEST_SEED", "20240601"))
ONLY = [s for s in os.environ.get("WF_TEST_ONLY", "").split(",") if s]

SAN_PATTERNS = ("AddressSanitizer", "LeakSanitizer", "runtime error",
                "UndefinedBehaviorSanitizer", "ERROR: ", "SUMMARY: ")

# Set by init(), once, before any other test module is imported.
BIN = None          # the weightfs binary under test (absolute path)
SANITIZED = None    # whether BIN is a sanitizer build
TMP = None          # the one temporary directory every mount lives under
SANLOG = None       # where daemonized runs write sanitizer reports
MOUNT_TIMEOUT = None
T_START = None

libc = ctypes.CDLL(None, use_errno=True)
# Orphaned daemons (weightfs without -f forks) become our children, so their
# exit status can be collected with waitpid.
PR_SET_CHILD_SUBREAPER = 36


def init(bin_path):
    """Sets up the run for the binary bin_path: the shared settings above,
    the temporary directory, the child subreaper and the exit cleanup."""
    global BIN, SANITIZED, TMP, SANLOG, MOUNT_TIMEOUT, T_START
    if BIN is not None:
        raise RuntimeError("wf_harness.init() called twice")
    BIN = os.path.abspath(bin_path)
    with open(BIN, "rb") as f:
        SANITIZED = b"__asan_init" in f.read()
    TMP = tempfile.mkdtemp(prefix="wf-mount-test-")
    # searchable by all, as a model's folder usually is: a mount's modes follow its
    # folders' (wf_perm.h), and most groups expect a 0644 file to show as 0444
    os.chmod(TMP, 0o755)
    SANLOG = os.path.join(TMP, "sanlog")
    os.mkdir(SANLOG)
    share_data()
    MOUNT_TIMEOUT = 20.0 if SANITIZED else 10.0
    T_START = time.monotonic()
    libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    atexit.register(cleanup)
    signal.signal(signal.SIGTERM, lambda s, f: sys.exit(1))
    signal.signal(signal.SIGHUP, lambda s, f: sys.exit(1))


def reachable_by_all(path):
    """Whether every folder from / down to path is searchable by others."""
    path = os.path.abspath(path)
    while True:
        if not os.stat(path).st_mode & 0o001:
            return False
        up = os.path.dirname(path)
        if up == path:
            return True
        path = up


def share_data():
    """A clone in a private folder (a home of mode 0700 or 0750) shows its
    models with the modes of that folder (wf_perm.h: others cannot reach
    them), and a second user cannot read them at all; the groups expect a
    model as most are kept, in folders all may search.  Then the test data
    is copied under TMP (mode 0755) and DATA, GGML, STO and MALFORMED point
    there; a test of the private case makes its own folders."""
    global DATA, GGML, STO, MALFORMED
    if reachable_by_all(DATA) and reachable_by_all(MALFORMED):
        return
    shutil.copytree(DATA, os.path.join(TMP, "data"))
    shutil.copytree(MALFORMED, os.path.join(TMP, "malformed"))
    for top in ("data", "malformed"):
        for d, subs, files in os.walk(os.path.join(TMP, top)):
            os.chmod(d, 0o755)
            for f in files:
                os.chmod(os.path.join(d, f), os.stat(os.path.join(d, f)).st_mode | 0o444)
    DATA = os.path.join(TMP, "data")
    GGML = os.path.join(DATA, "ggml-oracle")
    STO = os.path.join(DATA, "st-oracle")
    MALFORMED = os.path.join(TMP, "malformed")


# ---------------------------------------------------------------- setup

def sha256_file(path):
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def free_port():
    """A TCP port on 127.0.0.1 nothing listens on now, for a server a test starts."""
    import socket
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


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


def unmount_daemon(mp, timeout=10):
    """Unmounts mp if a daemonized weightfs serves it (a case that was
    expected to be refused but mounted), and reaps that daemon."""
    for pid in daemon_pid(mp):
        force_unmount(mp)
        wait_pid(pid, timeout)


# ---------------------------------------------------------------- one-line errors

def one_line_error(err, model, errs, what, substr=None):
    lines = err.splitlines()
    prefix = "weightfs: %s: " % model
    if len(lines) != 1 or not lines[0].startswith(prefix) or len(lines[0]) <= len(prefix):
        errs.add("%s: stderr is not one line 'weightfs: %s: ...': %r" % (what, model, err[:300]))
    elif substr and substr not in lines[0]:
        errs.add("%s: stderr %r lacks %r" % (what, lines[0], substr))


# ---------------------------------------------------------------- reads that must fail

def expect_eio(path, what):
    """Reads all of path; raises Fail unless the read fails with EIO (what
    names the read in the message)."""
    try:
        with open(path, "rb") as f:
            f.read()
    except OSError as e:
        if e.errno != 5:
            raise Fail("%s: %s, want EIO" % (what, e))
    else:
        raise Fail("%s read without an error" % what)


def expect_eio_after_change(rm, original, replace, what):
    """The promise of a remote source changed under the mount (net, s3): rm
    mounts a model whose t00 holds 256 Ki float32 and whose later tensors lie
    in the last 4 MB of the file at `original`.  Reads t00, then calls
    replace(data) with that file's bytes, the last 4 MB flipped, to put them
    where the server serves them; a read of t07 (not fetched before) must then
    fail with EIO and stderr carry the notice "changed on the server", never
    give other bytes.  `what` names the change in the failure message.
    Returns t00's first bytes for a caller that reads it again."""
    with open(rm.path("t00"), "rb") as f:
        first = f.read()
    if len(first) != 256 * 1024 * 4:
        raise Fail("t00 read %d floats" % (len(first) // 4))
    with open(original, "rb") as f:
        data = bytearray(f.read())
    for i in range(len(data) - 1, len(data) - 4000000, -1):
        data[i] ^= 0x55
    replace(bytes(data))
    expect_eio(rm.path("t07"), "t07 of " + what)
    if "changed on the server" not in rm.stderr():
        raise Fail("no notice on stderr: %r" % rm.stderr()[-300:])
    return first
