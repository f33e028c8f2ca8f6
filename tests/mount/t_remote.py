"""Group remote: weightfs over an rclone mount of a local HTTP server (split
GGUF, safetensors shards), and the server dying mid-read.
"""

import errno
import json
import os
import random
import shutil
import struct
import subprocess
import threading
import time

import numpy as np

from wf_harness import (
    ACTIVE, check, Errs, Fail, force_unmount, GGML, is_mounted, load_json, Mount,
    free_port, MOUNT_TIMEOUT, mountinfo_points, new_dir, reset_signals, SEED, Skip, TMP)
from wf_models import GGML_MAN, gguf_expected, split_set, write_file
from wf_read import verify_bytes


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
