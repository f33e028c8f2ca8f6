"""Groups unmount and concurrency: signals and fusermount3 -u end the daemon
cleanly; many threads reading many mounts at once; thread creation failing.
"""

import json
import os
import random
import signal
import subprocess
import threading
import time

from wf_harness import check, Errs, Fail, GGML, is_mounted, Mount, san_lines, SEED, STO
from wf_models import GGML_MAN, gguf_expected, ST_MAN
from wf_read import verify_bytes


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
