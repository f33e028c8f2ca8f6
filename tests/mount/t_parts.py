"""Group parts: sets of more parts than a process may map at once
(vm.max_map_count, 65,530 by default): 100,000 shards mounted and every
tensor read; a forced small pool of live mappings (WF_MAX_MAPS) read from
many threads while parts are replaced, rewritten and truncated; and sets
over the 100,000-part limit refused before any file is opened.
"""

import concurrent.futures
import errno
import json
import os
import random
import shutil
import struct
import time

import wf_harness
from wf_harness import check, Errs, Fail, Mount, run_cli, SANITIZED, SEED
from wf_read import changed_lines, o_direct_read


def write_tiny_set(d, n):
    """n shards of one float32 tensor layers.I.w = [i, i + 0.5, -i, 1] and an index."""
    os.makedirs(d)
    wm = {}
    for i in range(n):
        name = "layers.%d.w" % i
        fn = "model-%06d-of-%06d.safetensors" % (i + 1, n)
        h = json.dumps({name: {"dtype": "F32", "shape": [4], "data_offsets": [0, 16]}},
                       separators=(",", ":")).encode()
        h += b" " * (-len(h) % 8)
        fd = os.open(os.path.join(d, fn), os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        try:
            os.write(fd, struct.pack("<Q", len(h)) + h + tiny_values(i))
        finally:
            os.close(fd)
        wm[name] = fn
    with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 16 * n}, "weight_map": wm}, f)


def tiny_values(i, delta=0.0):
    return struct.pack("<4f", i + delta, i + 0.5, -i, 1.0)


def status_kb(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return -1


def maps_under(pid, d):
    with open("/proc/%d/maps" % pid) as f:
        return sum(1 for line in f if d in line)


def paths_of(m):
    """Tensor layers.I.w's path in the mount, by I, from tensors.json (with
    over 65,536 directories the tree folds names: docs/naming.md rule 8)."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode())
    return {int(e["name"].split(".")[1]): e["path"] for e in tj["tensors"]}


def read_all(m, idx, threads, errs, expect=None):
    """Reads tensor layers.I.w for every I in idx from `threads` threads; each
    must read as tiny_values(I), or fail with EIO when expect(I) says so."""
    paths = paths_of(m)

    def one(i):
        p = m.path(paths[i])
        try:
            fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        except OSError as ex:
            return "%s: open: %s" % (paths[i], ex)
        try:
            got = o_direct_read(fd, 4096, 0)
        finally:
            os.close(fd)
        want_eio = expect(i) if expect else False
        if want_eio:
            return None if got == errno.EIO else "%s: read %r, not EIO" % (paths[i], got)
        return None if got == tiny_values(i) else "%s: read %r" % (paths[i], got)
    with concurrent.futures.ThreadPoolExecutor(threads) as ex:
        for bad in ex.map(one, idx, chunksize=256):
            if bad:
                errs.add(bad)


def group_parts():
    # 100,000 small files take a page each: 400 MB of /dev/shm (a container's
    # may be 64 MB), else the suite's own folder
    base = wf_harness.TMP
    if os.path.isdir("/dev/shm"):
        sv = os.statvfs("/dev/shm")
        if sv.f_bavail * sv.f_frsize > (1 << 30) and sv.f_favail > 200000:
            base = "/dev/shm"
    root = os.path.join(base, "wf-parts-%d" % os.getpid())
    os.makedirs(root)
    try:
        parts_100k(root)
        parts_small_pool(root)
        parts_over_limit(root)
    finally:
        shutil.rmtree(root, ignore_errors=True)


def parts_100k(root):
    n = 100000
    d = os.path.join(root, "s100k")
    t0 = time.monotonic()
    write_tiny_set(d, n)
    gen = time.monotonic() - t0

    def hundred_thousand():
        errs = Errs()
        was = wf_harness.MOUNT_TIMEOUT
        wf_harness.MOUNT_TIMEOUT = 600.0 if SANITIZED else 240.0
        try:
            m = Mount(d)
        finally:
            wf_harness.MOUNT_TIMEOUT = was
        try:
            pid = m.proc.pid
            hwm_mounted = status_kb(pid, "VmHWM")
            t1 = time.monotonic()
            order = list(range(n))
            random.Random(SEED).shuffle(order)
            read_all(m, order, 4, errs)
            t_read = time.monotonic() - t1
            live = maps_under(pid, d)
            hwm = status_kb(pid, "VmHWM")
            nfd = len(os.listdir("/proc/%d/fd" % pid))
            # 4096 idle mappings at most, plus one per reading thread, plus
            # evicted ones waiting to be unmapped with their batch
            # (WF_MAPS_DROP: 64, so at most 63 of them)
            if live > 4096 + 16 + 63:
                errs.add("%d mappings of the shards live after reading them all" % live)
            with open(m.path("parts.json"), "rb") as f:
                if len(json.loads(f.read().decode())["files"]) != n:
                    errs.add("parts.json does not list %d files" % n)
        finally:
            try:
                m.finish()
            except Fail as ex:
                errs.add(str(ex))
        errs.raise_if_any()
        return ("mounted in %.1f s (set written in %.1f s), VmHWM %d KB after mounting, %d KB after "
                "reading all %d tensors in %.1f s; %d shard mappings live, %d descriptors" % (
                    m.t_ready, gen, hwm_mounted, hwm, n, t_read, live, nfd))
    check("parts: a 100,000-shard safetensors index mounts under vm.max_map_count and every "
          "tensor reads right", hundred_thousand)
    shutil.rmtree(d, ignore_errors=True)


def parts_small_pool(root):
    n = 300
    d = os.path.join(root, "s300")
    write_tiny_set(d, n)

    def small_pool():
        errs = Errs()
        os.environ["WF_MAX_MAPS"] = "4"
        try:
            m = Mount(d, nofile=128)  # parts from about 60 on have no descriptor: reopened by path
        finally:
            del os.environ["WF_MAX_MAPS"]
        try:
            pid = m.proc.pid
            order = list(range(n)) * 3
            random.Random(SEED).shuffle(order)
            read_all(m, order, 8, errs)
            if maps_under(pid, d) > 4:
                errs.add("%d mappings live, pool of 4" % maps_under(pid, d))
            shard = lambda i: os.path.join(d, "model-%06d-of-%06d.safetensors" % (i + 1, n))
            # 250: replaced by rename with other values; 260: rewritten in
            # place, its mtime set back; 270: truncated; 280: removed;
            # 10 (it kept its descriptor): rewritten in place
            for i in (250, 10):
                st = os.stat(shard(i))
                with open(shard(i), "r+b") as f:
                    f.seek(st.st_size - 16)
                    f.write(tiny_values(i, 0.25))
                os.utime(shard(i), ns=(st.st_atime_ns, st.st_mtime_ns))
            with open(shard(260) + ".new", "wb") as f:
                with open(shard(260), "rb") as g:
                    f.write(g.read()[:-16] + tiny_values(260, 0.25))
            os.rename(shard(260) + ".new", shard(260))
            os.truncate(shard(270), 40)
            os.unlink(shard(280))
            gone = {10, 250, 260, 270, 280}
            read_all(m, order, 8, errs, expect=lambda i: i in gone)
            lines = changed_lines(m)
            if len(lines) != len(gone):
                errs.add("daemon said %r" % lines)
        finally:
            try:
                m.finish()
            except Fail as ex:
                errs.add(str(ex))
        errs.raise_if_any()
        return "%d reads from 8 threads twice, %d parts changed" % (len(order), len(gone))
    check("parts: 300 shards through a pool of 4 mappings (WF_MAX_MAPS=4, ulimit -n 128), 8 threads; "
          "parts replaced, rewritten with the mtime set back, truncated and removed give EIO", small_pool)


def parts_over_limit(root):
    def over_limit():
        errs = Errs()
        cases = [("m-00001-of-150000.gguf", True), ("m-00001-of-150000.safetensors", False)]
        for name, as_file in cases:
            d = os.path.join(root, "over-" + name)
            os.makedirs(d)
            # no model at all: opening it would give another message
            with open(os.path.join(d, name), "wb") as f:
                f.write(b"GGUF\x03\x00\x00\x00 truncated")
            for model in [d] + ([os.path.join(d, name)] if as_file else []):
                rc, out, err, secs = run_cli(["ls", model], timeout=30)
                if rc != 4 or "150000" not in err or "100000" not in err or name not in err:
                    errs.add("%s: rc %d, %r" % (model, rc, err.strip()))
        errs.raise_if_any()
    check("parts: a split GGUF and an unindexed safetensors set named over the 100,000-part limit "
          "are refused before any file is opened", over_limit)
