"""Groups large, many and bounds: multi-MiB tensors, 100,000 tensors, and deep
and long names and dot chains (daemon memory within a bound of the header,
every path reachable).
"""

import json
import os
import random
import struct
import subprocess
import time

import numpy as np

from wf_harness import check, Errs, Fail, Mount, SANITIZED, SEED, TMP
from wf_models import f32_tensor, gguf_bytes, gkv, gstr, numpy_checks, q8_0_blocks, write_file
from wf_naming import expected_paths, TREE_DIR_BYTES, TREE_MAX_DIRS
from wf_read import verify_bytes
from wf_tree import n_generated, valid_components


# ---------------------------------------------------------------- group: large

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
