#!/usr/bin/python3
"""test_module.py - tests of the weightfs Python module (python/weightfs).

    WEIGHTFS_LIB=build/libweightfs.so.0 /usr/bin/python3 tests/python/test_module.py

Every ggml-oracle tensor against its expected float32 (bit for bit), every
st-oracle tensor against its expected bytes, f16/bf16 against numpy's own
rounding of those values, rows= slices, parallel reads of a large tensor
against a single-threaded read and a numpy decode, errors as exceptions
carrying the library's message, a split GGUF opened by either part and as a
folder, a sharded safetensors set with an index, and a file changed under
an open model.  Prints "N passed, M failed"; exits 1 on any failure.
"""
import hashlib
import json
import os
import shutil
import struct
import sys
import tempfile
import threading
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "python"))
import weightfs  # noqa: E402

ORACLE = os.path.join(ROOT, "tests", "data", "ggml-oracle")
ST_ORACLE = os.path.join(ROOT, "tests", "data", "st-oracle")
MALFORMED = os.path.join(ROOT, "tests", "malformed")

passed = 0
failed = 0
TESTS = []


def test(fn):
    TESTS.append(fn)
    return fn


def check(cond, what):
    if not cond:
        raise AssertionError(what)


def same_bits(a, b):
    a = np.ascontiguousarray(a)
    b = np.ascontiguousarray(b)
    return a.shape == b.shape and a.tobytes() == b.tobytes()


def f16_of(f32):
    with np.errstate(over="ignore"):
        return f32.astype(np.float16)


def bf16_of(f32):
    """bfloat16 bits, nearest-even; NaN stays a quiet NaN (as weightfs.h says)."""
    u = f32.view(np.uint32).astype(np.uint64)
    r = ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)
    nan = np.isnan(f32)
    r[nan] = ((u[nan] >> 16) | 0x40).astype(np.uint16)
    return r


# --- the oracles -------------------------------------------------------------

def oracle_manifest():
    with open(os.path.join(ORACLE, "manifest.json")) as f:
        return json.load(f)


@test
def ggml_oracle_every_tensor_f32_f16_bf16():
    """Every tensor of every oracle file, opened by its file, in f32 (bit for
    bit), f16 and bf16 (numpy's rounding of the expected f32), and stored
    (the raw sha256)."""
    man = oracle_manifest()
    by_file = {}
    for t in man["tensors"]:
        by_file.setdefault(t["file"], []).append(t)
    n = 0
    for fname, tensors in sorted(by_file.items()):
        with weightfs.open(os.path.join(ORACLE, fname)) as m:
            for t in tensors:
                name = t["name"]
                shape = tuple(reversed(t["ne"][:t["n_dims"]]))
                stored = m.get(name, dtype="stored")
                check(hashlib.sha256(stored.tobytes()).hexdigest() == t["raw_sha256"],
                      "%s %s: stored bytes differ" % (fname, name))
                info = m.info(name)
                check(info["type"].lower() == t["type"].lower(), "%s: type %s" % (name, info["type"]))
                check(info["nbytes"] == t["nbytes"] and info["offset"] == t["file_offset"],
                      "%s: nbytes/offset" % name)
                if t["expected_f32"] is None:
                    continue
                with open(os.path.join(ORACLE, t["expected_f32"]), "rb") as f:
                    exp = np.frombuffer(f.read(), dtype="<f4").reshape(shape)
                a = m[name]
                check(a.dtype == np.float32 and a.shape == shape, "%s: %s %s" % (name, a.dtype, a.shape))
                check(same_bits(a, exp), "%s %s: f32 differs from ggml" % (fname, name))
                h = m.get(name, dtype="f16")
                check(h.dtype == np.float16 and same_bits(h, f16_of(exp)), "%s: f16 rounding" % name)
                b = m.get(name, dtype="bf16")
                check(b.dtype == np.uint16 and same_bits(b, bf16_of(exp)), "%s: bf16 rounding" % name)
                n += 1
    check(n >= 150, "only %d tensors compared" % n)


@test
def st_oracle_every_tensor():
    with open(os.path.join(ST_ORACLE, "manifest.json")) as f:
        man = json.load(f)
    models = {}
    try:
        for t in man["tensors"]:
            m = models.get(t["file"])
            if m is None:
                m = models[t["file"]] = weightfs.open(os.path.join(ST_ORACLE, t["file"]))
            with open(os.path.join(ST_ORACLE, t["expected"]), "rb") as f:
                exp = f.read()
            a = m[t["name"]]
            check(a.tobytes() == exp, "%s %r: bytes differ" % (t["file"], t["name"]))
            check(a.shape == tuple(t["shape"]), "%r: shape %s" % (t["name"], a.shape))
            check(m.info(t["name"])["dtype"] == t["expected_dtype"], "%r: dtype" % t["name"])
    finally:
        for m in models.values():
            m.close()


@test
def listing_and_metadata():
    man = oracle_manifest()
    path = os.path.join(ORACLE, "mixed_llama_tiny.gguf")
    with weightfs.open(path) as m:
        want = [t["name"] for t in man["tensors"] if t["file"] == "mixed_llama_tiny.gguf"]
        check(m.keys() == want, "keys(): %s" % m.keys())
        check(len(m) == len(want) and want[0] in m and "nope" not in m, "len / in")
        check(m.metadata["general.architecture"] == "llama", "metadata")
        kv = [f for f in man["files"] if f["file"] == "mixed_llama_tiny.gguf"][0]
        check(isinstance(m.metadata, dict) and len(m.metadata) >= 5, "metadata size")
        check("general.architecture" in json.dumps(kv), "manifest kv")


@test
def rows_slices():
    with weightfs.open(os.path.join(ORACLE, "type_q4_K.gguf")) as m:
        for name in m.keys():
            full = m[name]
            n = full.shape[0]
            for sl in (slice(0, 1), slice(1, n), slice(None, None), slice(-2, None), slice(n // 2, n // 2),
                       slice(5, 2), slice(0, n + 10)):
                part = m.get(name, rows=sl)
                check(same_bits(part, full[sl]), "%s rows=%s" % (name, sl))
                h = m.get(name, rows=sl, dtype="f16")
                check(same_bits(h, f16_of(full[sl])), "%s rows=%s f16" % (name, sl))
            try:
                m.get(name, rows=slice(0, n, 2))
                check(False, "step 2 accepted")
            except ValueError as e:
                check("step 1" in str(e), str(e))
        stored = m.get("q4_K.mat", dtype="stored", rows=slice(1, 3))
        check(same_bits(stored, m.get("q4_K.mat", dtype="stored")[1:3]), "stored rows")


@test
def parallel_read_of_a_large_tensor():
    """A 4096 x 1024 Q8_0 tensor (16 MiB of float32): the parallel read, a
    single-threaded one, pieces at odd offsets, and numpy's decode agree."""
    rows, cols = 4096, 1024
    rng = np.random.default_rng(7)
    nblk = rows * cols // 32
    d = rng.uniform(-1, 1, nblk).astype(np.float16)
    q = rng.integers(-128, 128, (nblk, 32), dtype=np.int8)
    blocks = np.empty(nblk, dtype=[("d", "<f2"), ("q", "i1", 32)])
    blocks["d"], blocks["q"] = d, q
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.gguf")
        write_gguf(path, [("big.q8", [cols, rows], 8, blocks.tobytes())])
        exp = (d.astype(np.float32)[:, None] * q.astype(np.float32)).reshape(rows, cols)
        with weightfs.open(path) as m:
            a = m.get("big.q8")
            check(same_bits(a, exp), "parallel f32 vs numpy")
            check(same_bits(m.get("big.q8", threads=1), exp), "one thread")
            check(same_bits(m.get("big.q8", threads=7), exp), "seven threads")
            check(same_bits(m.get("big.q8", dtype="bf16", threads=3), bf16_of(exp)), "bf16 parallel")
            buf = np.zeros(3 * 1024 * 1024 + 3, dtype=np.uint8)
            got = m.read_into("big.q8", buf, offset=12345)
            check(got == buf.size and buf.tobytes() == exp.tobytes()[12345:12345 + buf.size], "odd offset")
            got = m.read_into("big.q8", buf, offset=a.nbytes - 1000)
            check(got == 1000, "short read at the end: %d" % got)
            # reads from several Python threads at once (ctypes drops the GIL)
            res = [None] * 4

            def reader(k):
                res[k] = m.get("big.q8", rows=slice(k * 1000, k * 1000 + 1000))
            ths = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
            for th in ths:
                th.start()
            for th in ths:
                th.join()
            for k in range(4):
                check(same_bits(res[k], exp[k * 1000:k * 1000 + 1000]), "thread %d" % k)


@test
def split_model_by_either_part_and_as_folder():
    man = oracle_manifest()
    expect = {}
    for t in man["tensors"]:
        if t["file"].startswith("split_llama-"):
            with open(os.path.join(ORACLE, t["expected_f32"]), "rb") as f:
                expect[t["name"]] = (f.read(), t["file"])
    check(len(expect) == 13, "split tensors in the manifest")
    with tempfile.TemporaryDirectory() as tmp:
        for f in ("split_llama-00001-of-00002.gguf", "split_llama-00002-of-00002.gguf"):
            shutil.copy(os.path.join(ORACLE, f), tmp)
        for arg in (os.path.join(ORACLE, "split_llama-00001-of-00002.gguf"),
                    os.path.join(ORACLE, "split_llama-00002-of-00002.gguf"), tmp):
            with weightfs.open(arg) as m:
                check(sorted(m.keys()) == sorted(expect), "%s: keys" % arg)
                for name, (data, fname) in expect.items():
                    check(m[name].tobytes() == data, "%s: %s" % (arg, name))
                    check(m.info(name)["file"] == fname, "%s: %s in %s" % (arg, name, m.info(name)["file"]))


def write_st(path, tensors, meta=None):
    hdr, off, blobs = {}, 0, []
    if meta:
        hdr["__metadata__"] = meta
    for name, arr in tensors:
        b = arr.tobytes()
        hdr[name] = {"dtype": {"float32": "F32", "float16": "F16", "int32": "I32"}[arr.dtype.name],
                     "shape": list(arr.shape), "data_offsets": [off, off + len(b)]}
        off += len(b)
        blobs.append(b)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


@test
def sharded_safetensors_with_index():
    rng = np.random.default_rng(3)
    a = rng.standard_normal((8, 16)).astype(np.float32)
    b = rng.standard_normal((4,)).astype(np.float16)
    c = np.arange(6, dtype=np.int32).reshape(2, 3)
    with tempfile.TemporaryDirectory() as tmp:
        s1, s2 = "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors"
        write_st(os.path.join(tmp, s1), [("a", a), ("b", b)], {"format": "pt"})
        write_st(os.path.join(tmp, s2), [("c", c)], {"format": "pt"})
        with open(os.path.join(tmp, "model.safetensors.index.json"), "w") as f:
            json.dump({"metadata": {}, "weight_map": {"a": s1, "b": s1, "c": s2}}, f)
        with open(os.path.join(tmp, "config.json"), "w") as f:
            f.write("{}")
        for arg in (tmp, os.path.join(tmp, "model.safetensors.index.json"), os.path.join(tmp, s2)):
            with weightfs.open(arg) as m:
                check(sorted(m.keys()) == ["a", "b", "c"], "%s: keys %s" % (arg, m.keys()))
                check(same_bits(m["a"], a), "a")
                check(same_bits(m["b"], b.astype(np.float32)), "b as f32")
                check(same_bits(m.get("b", dtype="stored"), b), "b stored")
                check(same_bits(m.get("b", dtype="f16"), b), "b f16")
                check(same_bits(m["c"], c) and m.get("c", dtype="f16").dtype == np.int32, "c int32")
                check(m.info("c")["file"] == s2, "c's file")
        with weightfs.open(tmp, dtype="f16") as m:
            check(m["a"].dtype == np.float16, "open(dtype=f16) is the default")


# --- errors ------------------------------------------------------------------

@test
def errors_carry_the_library_message():
    with open(os.path.join(MALFORMED, "expect.json")) as f:
        cases = json.load(f)
    for c in cases:
        path = os.path.join(MALFORMED, c["file"])
        try:
            weightfs.open(path)
            check(False, "%s opened" % c["file"])
        except weightfs.WeightfsError as e:
            # expect.json gives a part of each message (as check_model.c reads it)
            check(str(e).startswith(path + ": ") and c["message"] in str(e), "%s: %r" % (c["file"], str(e)))
            check("\n" not in str(e), "one line")
            # weightfs.h's codes are the command's exit codes for these
            check(e.code == c["exit"], "%s: code %d, exit %d" % (c["file"], e.code, c["exit"]))
    try:
        weightfs.open("/nonexistent/model.gguf")
        check(False, "missing file opened")
    except weightfs.WeightfsError as e:
        check(str(e).startswith("/nonexistent/model.gguf: ") and e.code == 2, str(e))
        check(isinstance(e, OSError), "an OSError")
    with weightfs.open(os.path.join(ORACLE, "type_q4_0.gguf")) as m:
        for bad in (lambda: m["nope"], lambda: m.info("nope")):
            try:
                bad()
                check(False, "unknown name accepted")
            except KeyError:
                pass
        try:
            m.get("q4_0.mat", dtype="f64")
            check(False, "dtype f64 accepted")
        except ValueError as e:
            check("f64" in str(e), str(e))
    m.close()
    try:
        m.keys()
        check(False, "closed model read")
    except ValueError:
        pass
    with weightfs.open(os.path.join(ORACLE, "no_to_float.gguf")) as m:
        # Q8_1 (no ggml to_float) decodes as qs * d of ggml's block_q8_1
        name = [k for k in m.keys() if m.info(k)["type"] == "Q8_1"][0]
        check(m.info(name)["readable"], "Q8_1 not readable")
        raw = m.get(name, dtype="stored")
        check(raw.dtype == np.uint8, "Q8_1 stored")
        b = raw.reshape(-1, 36)
        want = b[:, 4:].copy().view(np.int8).astype(np.float32) * b[:, :2].copy().view("<f2").astype(np.float32)
        got = m[name]
        check(got.dtype == np.float32 and got.tobytes() == want.astype("<f4").tobytes(), "Q8_1 values")


@test
def changed_file_fails_the_read():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.gguf")
        shutil.copy(os.path.join(ORACLE, "type_q6_K.gguf"), path)
        with weightfs.open(path) as m:
            before = m["q6_K.mat"]
            st = os.stat(path)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            try:
                m["q6_K.mat"]
                check(False, "read of a changed file succeeded")
            except weightfs.WeightfsError as e:
                check(e.code == 6 and "changed" in str(e) and "q6_K.mat" in str(e), str(e))
            check(before.shape == (m.info("q6_K.mat")["shape"]), "info still works")


@test
def link_write_utime_fails_the_read():
    # issue 17 item 2: linked, rewritten in place, mtime set back
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "m.safetensors")
        a = np.arange(4096, dtype=np.float32)
        write_st(path, [("a", a)])
        with weightfs.open(path) as m:
            check(same_bits(m["a"], a), "before")
            st = os.stat(path)
            os.link(path, path + ".lnk")
            with open(path + ".lnk", "r+b") as f:
                f.seek(-16, 2)
                f.write(b"\xff" * 16)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
            try:
                m["a"]
                check(False, "read of a rewritten file succeeded")
            except weightfs.WeightfsError as e:
                check(e.code == 6, str(e))


# --- issue 17: closing under readers, cut headers, FIFOs, misuse -------------

def run_child(code, timeout=60):
    """Runs code in a fresh interpreter with this module; returns (rc, out, err)."""
    import subprocess
    env = dict(os.environ)
    env["PYTHONPATH"] = os.path.join(ROOT, "python")
    r = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=timeout, env=env)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


CLOSE_RACE = r"""
import sys, threading, time, numpy as np, weightfs
m = weightfs.open(sys.argv[1] if len(sys.argv) > 1 else %r)
stop = False
res = {"ok": 0, "closed": 0, "other": []}
def reader():
    while not stop:
        try:
            a = m.get("w", dtype="f16")
            assert a.shape == (2048, 4096)
            res["ok"] += 1
        except ValueError as e:
            if "closed" not in str(e):
                res["other"].append(repr(e))
            res["closed"] += 1
            return
        except Exception as e:
            res["other"].append(repr(e))
            return
ts = [threading.Thread(target=reader) for _ in range(4)]
for t in ts: t.start()
time.sleep(0.3)
m.close()
time.sleep(0.2)
stop = True
for t in ts: t.join()
try:
    m.get("w")
    print("READ AFTER CLOSE")
except ValueError as e:
    print("after:", e)
print("ok", res["ok"], "closed", res["closed"], "other", res["other"])
"""


@test
def close_while_other_threads_read():
    # four threads read a 16 MiB tensor; the main thread closes after 0.3 s
    # (5 of 5 runs segfaulted before): reads finish or raise "closed"
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "w.safetensors")
        write_st(path, [("w", np.ones((2048, 4096), np.float16) * 0.5)])
        for _ in range(3):
            rc, out, err = run_child(CLOSE_RACE % path)
            check(rc == 0, "child died: rc %d, %s" % (rc, err[-400:]))
            check("after: weightfs: model is closed" in out, out)
            check("other []" in out, out)
            check(" closed 4 " in out, "every reader saw the close: %s" % out)
            check(err.strip() == "", "stderr: %s" % err[-300:])


@test
def header_cut_while_opened():
    # a 13 MB header truncated while weightfs.open parses it: WeightfsError
    # (the interpreter died of SIGBUS before)
    import subprocess
    import time
    with tempfile.TemporaryDirectory() as tmp:
        n = 200000
        parts = ['"t%d":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}' % (i, i, i + 1) for i in range(n)]
        h = ("{" + ",".join(parts) + "}").encode()
        src = os.path.join(tmp, "src.safetensors")
        with open(src, "wb") as f:
            f.write(struct.pack("<Q", len(h)) + h + bytes(n))
        code = ("import sys, weightfs\n"
                "print('ready', flush=True); sys.stdin.readline()\n"
                "try:\n    m = weightfs.open(sys.argv[1]); print('opened', len(m))\n"
                "except weightfs.WeightfsError as e:\n    print('error', e)\n")
        cut = 0
        for delay in (0.05, 0.15, 0.3):
            path = os.path.join(tmp, "m.safetensors")
            shutil.copy(src, path)
            env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
            p = subprocess.Popen([sys.executable, "-c", code, path], stdin=subprocess.PIPE,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
            check(p.stdout.readline() == b"ready\n", "child did not start")
            p.stdin.write(b"go\n")
            p.stdin.flush()
            time.sleep(delay)
            os.truncate(path, 4096)
            out, err = p.communicate(timeout=120)
            out = out.decode(errors="replace")
            check(p.returncode == 0, "delay %.2f: rc %d %s" % (delay, p.returncode, err.decode()[-300:]))
            check(out.startswith("opened") or out.startswith("error " + path + ": "), out)
            cut += "cut short while its header was read" in out
        check(cut > 0, "no run was cut while parsing")


@test
def fifo_refs_main_does_not_block():
    with tempfile.TemporaryDirectory() as tmp:
        repo = os.path.join(tmp, "models--org--x")
        os.makedirs(os.path.join(repo, "refs"))
        os.makedirs(os.path.join(repo, "snapshots", "abc"))
        write_st(os.path.join(repo, "snapshots", "abc", "model.safetensors"), [("a", np.ones(3, np.float32))])
        os.mkfifo(os.path.join(repo, "refs", "main"))
        os.mkfifo(os.path.join(repo, "snapshots", "abc", "config.json"))
        rc, out, err = run_child("import weightfs\ntry:\n    weightfs.open(%r)\n    print('opened')\n"
                                 "except weightfs.WeightfsError as e:\n    print('error', e)\n" % repo,
                                 timeout=30)
        check(rc == 0 and out.startswith("error ") and "refs/main is not a regular file" in out,
              "%d %s %s" % (rc, out, err))
        with weightfs.open(os.path.join(repo, "snapshots", "abc")) as m:
            check(m.keys() == ["a"], "the snapshot opens, its FIFO left out")


@test
def every_count_argument_checked():
    """threads=, offset=, length=, rows=, dtype= and shape= misuse raises a
    ValueError (a value out of range), TypeError (not an int) or
    OverflowError (past 64 bits) before the library is called, on every
    call that takes one (issue 31 item 5; stack() passed threads=-1 on as
    2**32-1, hf_read() clamped a negative offset or length to 0)."""
    def raises(exc, what, call):
        try:
            call()
        except exc as e:
            check(str(e).startswith("weightfs: "), "%s: message %r" % (what, str(e)))
            return
        except Exception as e:  # noqa: BLE001 - the wrong kind is the failure
            check(False, "%s raised %s (%s), not %s" % (what, type(e).__name__, e, exc.__name__))
            return
        check(False, "%s accepted" % what)

    with weightfs.open(os.path.join(ORACLE, "type_q4_0.gguf")) as m:
        n = m.keys()[0]
        for th, exc in ((-1, ValueError), (2**32, ValueError), (1.5, TypeError), ("2", TypeError)):
            raises(exc, "get threads=%r" % (th,), lambda: m.get(n, threads=th))
            raises(exc, "stack threads=%r" % (th,), lambda: m.stack([n], threads=th))
            raises(exc, "read_into threads=%r" % (th,), lambda: m.read_into(n, bytearray(4), threads=th))
            raises(exc, "stats threads=%r" % (th,), lambda: m.stats(n, threads=th))
        for d in ("f64", "F32", ""):
            for what, call in (("get", lambda: m.get(n, dtype=d)), ("info", lambda: m.info(n, dtype=d)),
                               ("stack", lambda: m.stack([n], dtype=d)), ("stats", lambda: m.stats(n, dtype=d)),
                               ("read_into", lambda: m.read_into(n, bytearray(4), dtype=d))):
                raises(ValueError, "%s dtype=%r" % (what, d), call)
        raises(ValueError, "rows step 2", lambda: m.get(n, rows=slice(0, 4, 2)))
        raises(TypeError, "rows a list", lambda: m.get(n, rows=[0, 1]))
        raises(ValueError, "stack of none", lambda: m.stack([]))
        for call in (lambda: m.get("nope"), lambda: m.stack([n, "nope"]), lambda: m.info("nope")):
            try:
                call()
                check(False, "a missing tensor read")
            except KeyError:
                pass
        check(m.stack([n], threads=1).shape[0] == 1, "threads=1 reads")
    with weightfs.open(os.path.join(ROOT, "tests", "data", "demo", "demo-llama.gguf")) as m:
        size = m.hf_size("config.json")
        for kw, exc in (({"offset": -1}, ValueError), ({"length": -1}, ValueError), ({"offset": 1.5}, TypeError),
                        ({"length": "3"}, TypeError), ({"offset": 2**64}, OverflowError)):
            raises(exc, "hf_read %r" % (kw,), lambda: m.hf_read("config.json", **kw))
        check(len(m.hf_read("config.json", offset=size + 5)) == 0, "hf_read past the end reads nothing")
        check(len(m.hf_read("config.json", offset=1, length=2**64 - 1)) == size - 1, "hf_read's length is cut")
        raises(ValueError, "hf_size of no such file", lambda: m.hf_size("vocab.txt"))
        raises(ValueError, "hf_size dtype stored", lambda: m.hf_size("config.json", dtype="stored"))
    raises(ValueError, "dequantize shape=-1", lambda: weightfs.dequantize(b"\0" * 34, "q8_0", shape=-1))
    raises(ValueError, "dequantize 33 bytes", lambda: weightfs.dequantize(b"\0" * 33, "q8_0"))
    raises(ValueError, "quantize q9", lambda: weightfs.quantize(np.zeros(32), "q9"))
    raises(ValueError, "open dtype f64", lambda: weightfs.open(os.path.join(ORACLE, "type_q4_0.gguf"), dtype="f64"))
    try:
        weightfs.open("/nonexistent.gguf")
        check(False, "a missing file opened")
    except weightfs.WeightfsError as e:
        check("No such file" in str(e), str(e))


@test
def misuse_raises_clear_errors():
    path = os.path.join(ORACLE, "type_q4_0.gguf")
    with weightfs.open(path) as m:
        name = m.keys()[0]
        size = m.info(name)["size"]
        buf = bytearray(32)
        want = bytearray(32)
        m.read_into(name, want, offset=0)
        for off, exc in ((2**64, OverflowError), (2**64 + 5, OverflowError), (-(2**64) + 32, ValueError),
                         (-1, ValueError), (1.0, TypeError), ("0", TypeError)):
            try:
                m.read_into(name, buf, offset=off)
                check(False, "offset %r accepted" % (off,))
            except exc:
                pass
        check(m.read_into(name, buf, offset=2**64 - 1) == 0, "offset 2**64-1 is past the end")
        check(m.read_into(name, buf, offset=size) == 0, "offset at the end reads nothing")
        for bad, exc in ((None, TypeError), (3, TypeError), (1.5, TypeError)):
            for call in (lambda: m.get(bad), lambda: m.info(bad), lambda: m[bad]):
                try:
                    call()
                    check(False, "name %r accepted" % (bad,))
                except exc:
                    pass
        for th in (-1, 2**32):
            try:
                m.get(name, threads=th)
                check(False, "threads %d accepted" % th)
            except ValueError:
                pass
    try:
        weightfs.open(path + "\0junk")
        check(False, "a path with a NUL opened")
    except ValueError as e:
        check("NUL" in str(e), str(e))
    # a failed open prints nothing (no "Exception ignored in __del__")
    rc, out, err = run_child("import weightfs, gc\n"
                             "for a in (('/nonexistent.gguf',), (%r, 'f64'), (%r + '\\0x',)):\n"
                             "    try:\n        weightfs.Model(*a)\n    except Exception as e:\n"
                             "        print(type(e).__name__)\n"
                             "gc.collect()\n" % (path, path))
    check(rc == 0 and out.split() == ["WeightfsError", "ValueError", "ValueError"], out + err)
    check(err == "", "stderr: %r" % err)


def stats_against_numpy_threads_and_changes():
    """m.stats: a 4096 x 1024 Q8_0 tensor (16 chunks) against numpy in
    float64, the same bits on 1, 3 and every thread; the oracle's f16 file
    in f32 and bf16; a file changed under the model fails it."""
    def np_stats(a):
        x = a.astype(np.float64).ravel()
        f = x[np.isfinite(x)]
        return {"count": x.size, "min": f.min(), "max": f.max(), "mean": f.mean(), "std": f.std(),
                "absmax": np.abs(f).max(), "zeros": int((x == 0).sum()), "nan": int(np.isnan(x).sum()),
                "inf": int(np.isinf(x).sum())}

    def close(got, want, what):
        for k in ("count", "min", "max", "absmax", "zeros", "nan", "inf"):
            check(got[k] == want[k], "%s: %s %r != numpy %r" % (what, k, got[k], want[k]))
        for k in ("mean", "std"):
            check(abs(got[k] - want[k]) <= 1e-12 * want["absmax"], "%s: %s %r != numpy %r"
                  % (what, k, got[k], want[k]))

    rows, cols = 4096, 1024
    rng = np.random.default_rng(19)
    nblk = rows * cols // 32
    blocks = np.empty(nblk, dtype=[("d", "<f2"), ("q", "i1", 32)])
    blocks["d"] = rng.uniform(-1, 1, nblk).astype(np.float16)
    blocks["q"] = rng.integers(-128, 128, (nblk, 32), dtype=np.int8)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.gguf")
        write_gguf(path, [("big.q8", [cols, rows], 8, blocks.tobytes())])
        exp = blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)
        with weightfs.open(path) as m:
            s0 = m.stats("big.q8")
            close(s0, np_stats(exp), "Q8_0")
            check(s0["type"] == "Q8_0" and s0["shape"] == (rows, cols), repr(s0))
            for th in (1, 3):
                check(m.stats("big.q8", threads=th) == s0, "%d threads differ from every core" % th)
            bf = m.stats("big.q8", dtype="bf16")
            close(bf, np_stats((bf16_of(exp).astype(np.uint32) << 16).view(np.float32)), "bf16")
            st = os.stat(path)
            os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
            try:
                m.stats("big.q8")
                check(False, "stats of a changed file succeeded")
            except weightfs.WeightfsError as e:
                check(e.code == 6 and "changed" in str(e), str(e))
    with weightfs.open(os.path.join(ORACLE, "type_f16.gguf")) as m:
        for name in m.keys():
            close(m.stats(name), np_stats(m[name]), name)
    with weightfs.open(os.path.join(ORACLE, "no_to_float.gguf")) as m:
        try:
            m.stats("raw.q8_1")
            check(False, "stats of a tensor with no decoder succeeded")
        except weightfs.WeightfsError as e:
            check(e.code == 5 and "raw.q8_1" in str(e), str(e))


# --- a GGUF writer for the large tensor -------------------------------------

def write_gguf(path, tensors):
    """tensors: (name, ne in GGUF order, ggml type id, data bytes)."""
    def s(x):
        b = x.encode()
        return struct.pack("<Q", len(b)) + b
    out = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), 0)]
    off = 0
    for name, ne, ty, data in tensors:
        out.append(s(name) + struct.pack("<I", len(ne)) + struct.pack("<%dQ" % len(ne), *ne)
                   + struct.pack("<IQ", ty, off))
        off += len(data) + (-len(data) % 32)
    head = b"".join(out)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head)
        for _, _, _, data in tensors:
            f.write(data + b"\0" * (-len(data) % 32))


@test
def quantized_layers():
    # the C library decodes GPTQ / FP8 layers as the mount does (the
    # builders and numpy references are the mount tests' hfq_models.py)
    sys.path.insert(0, os.path.join(ROOT, "tests", "mount"))
    from hfq_models import fp8_config, fp8_layer, gptq_config, gptq_layer, st_bytes
    rng = np.random.default_rng(11)
    with tempfile.TemporaryDirectory() as tmp:
        parts, exp = gptq_layer(rng, 64, 160, 4, 64, True)
        os.makedirs(os.path.join(tmp, "g"))
        with open(os.path.join(tmp, "g", "config.json"), "w") as f:
            json.dump(gptq_config(4, 64), f)
        with open(os.path.join(tmp, "g", "model.safetensors"), "wb") as f:
            f.write(st_bytes({"l." + k: v for k, v in parts.items()}))
        with weightfs.open(os.path.join(tmp, "g")) as m:
            check("l.qweight" not in m and m.info("l.weight")["type"] == "GPTQ", "GPTQ listing")
            check(same_bits(m["l.weight"], exp), "GPTQ values")
            check(same_bits(m.get("l.weight", rows=slice(3, 9)), exp[3:9]), "GPTQ rows")
            check(same_bits(m.get("l.weight", dtype="f16"), f16_of(exp)), "GPTQ f16")
            # GPTQ's l.weight is no stored tensor: stored names its parts
            try:
                m.get("l.weight", dtype="stored")
                check(False, "stored view of a decoded GPTQ layer")
            except weightfs.WeightfsError as e:
                check(e.code == 4 and "l.weight" in str(e) and all("'l.%s'" % p in str(e) for p in
                                                                    ("qweight", "qzeros", "scales", "g_idx")), str(e))
            # the parts: not listed, but read by name, stored or decoded
            check(m.info("l.qweight")["type"] == "I32" and m.info("l.scales", dtype="stored")["type"] == "F16",
                  "hidden parts' info")
            for k in ("qweight", "qzeros", "scales", "g_idx", "bias"):
                check(m.get("l." + k, dtype="stored").tobytes() == parts[k][2], "stored bytes of l." + k)
            check(same_bits(m.get("l.scales"), np.frombuffer(parts["scales"][2], "<f2").astype(np.float32)
                            .reshape(parts["scales"][1])), "l.scales in f32")
            check(m.get("l.qweight").dtype == np.int32, "qweight reads as int32")
        with weightfs.open(os.path.join(tmp, "g"), dtype="stored") as m:
            check("l.weight" not in m and m.get("l.qweight").tobytes() == parts["qweight"][2], "stored parts")
        w, (sc, sraw), exp = fp8_layer(rng, 200, 300, 128, 128)
        path = os.path.join(tmp, "model.safetensors")
        with open(path, "wb") as f:
            f.write(st_bytes({"fc.weight": ("F8_E4M3", [200, 300], w),
                              "fc.weight_scale_inv": ("F32", list(sc.shape), sraw)}))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(fp8_config(), f)
        with weightfs.open(path) as m:
            check(same_bits(m["fc.weight"], exp), "FP8 values")
            # FP8's fc.weight is stored (its e4m3 codes): stored gives them
            check(m.info("fc.weight", dtype="stored")["type"] == "F8_E4M3", "FP8 stored info")
            check(m.get("fc.weight", dtype="stored").tobytes() == w, "FP8 stored bytes")
            check(m.get("fc.weight", dtype="stored", rows=slice(5, 7)).tobytes() == w[5 * 300:7 * 300],
                  "FP8 stored rows")
            check(m.get("fc.weight_scale_inv").tobytes() == sraw and "fc.weight_scale_inv" not in m,
                  "FP8 scale by name")
        with weightfs.safe_open(path, framework="np", dtype="stored") as f:
            check(f.get_tensor("fc.weight").tobytes() == w, "safe_open stored of a decoded model")


@test
def bnb8_layers():
    # bitsandbytes 8-bit through the library: values bit for bit against
    # numpy and bitsandbytes' own expression in torch; SCB and
    # weight_format hidden but readable; stored gives the int8 weight
    sys.path.insert(0, os.path.join(ROOT, "tests", "mount"))
    from hfq_models import bnb8_config, bnb8_layer, st_bytes
    from hfq_torch import bnb8_torch
    rng = np.random.default_rng(12)
    with tempfile.TemporaryDirectory() as tmp:
        pa, ea = bnb8_layer(rng, 48, 80, True)
        pb, eb = bnb8_layer(rng, 5, 7, False)
        tensors = {"fc1" + k: v for k, v in pa.items()}
        tensors.update({"fc2" + k: v for k, v in pb.items()})
        with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
            f.write(st_bytes(tensors))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(bnb8_config(), f)
        t = bnb8_torch(pa, 48, 80)
        check(t is None or same_bits(t, ea), "torch reference agrees with numpy's")
        with weightfs.open(tmp) as m:
            check(sorted(m.keys()) == ["fc1.weight", "fc2.weight"], "listing %r" % m.keys())
            check(m.info("fc1.weight")["type"] == "BNB8", "type")
            check(same_bits(m["fc1.weight"], ea) and same_bits(m["fc2.weight"], eb), "values")
            check(same_bits(m.get("fc1.weight", rows=slice(7, 30)), ea[7:30]), "rows")
            check(same_bits(m.get("fc1.weight", dtype="f16"), f16_of(ea)), "f16")
            check(m.get("fc1.weight", dtype="stored").tobytes() == pa[".weight"][2], "stored int8 weight")
            check(m.get("fc1.SCB").tobytes() == pa[".SCB"][2] and "fc1.SCB" not in m, "SCB by name")
            check(m.get("fc1.weight_format", dtype="stored").tobytes() == b"\0", "weight_format by name")
            check(same_bits(m.stack(["fc1.weight", "fc1.weight"])[1], ea), "stack")
        if t is not None:  # torch is there
            with weightfs.safe_open(tmp, framework="pt") as f:
                check(f.get_tensor("fc1.weight").numpy().tobytes() == ea.tobytes(), "safe_open pt")



@test
def mxfp4_experts():
    # gpt-oss's MXFP4 experts through the library: the pair X_blocks / X_scales listed as X,
    # float32 [E, 32 G, R] as transformers dequantizes it (NaN and inf of scale 255 included),
    # the parts hidden but readable by name, X itself no stored tensor (its parts are named)
    sys.path.insert(0, os.path.join(ROOT, "tests", "mount"))
    from hfq_models import mxfp4_config, mxfp4_layer, st_bytes
    rng = np.random.default_rng(39)
    with tempfile.TemporaryDirectory() as tmp:
        parts, e = mxfp4_layer(rng, 3, 40, 64)
        x = "model.layers.0.mlp.experts.down_proj"
        with open(os.path.join(tmp, "model.safetensors"), "wb") as f:
            f.write(st_bytes({x + k: v for k, v in parts.items()}))
        with open(os.path.join(tmp, "config.json"), "w") as f:
            json.dump(mxfp4_config(1, 3, 40, 64), f)
        with weightfs.open(tmp) as m:
            check(list(m.keys()) == [x], "listing %r" % m.keys())
            info = m.info(x)
            check(info["type"] == "MXFP4" and tuple(info["shape"]) == (3, 64, 40), "info %r" % info)
            check(same_bits(m[x], e), "values")
            check(same_bits(m.get(x, rows=slice(1, 2)), e[1:2]), "rows")
            check(m.get(x + "_blocks").tobytes() == parts["_blocks"][2] and x + "_blocks" not in m, "blocks by name")
            check(m.get(x + "_scales").tobytes() == parts["_scales"][2], "scales by name")
            try:
                m.get(x, dtype="stored")
                check(False, "stored form of a decoded MXFP4 layer")
            except weightfs.WeightfsError as err:
                check("_blocks" in str(err) and "_scales" in str(err), "message %s" % err)


def main():
    global passed, failed
    only = sys.argv[1:]
    for fn in TESTS:
        if only and fn.__name__ not in only:
            continue
        try:
            fn()
            passed += 1
            print("ok   %s" % fn.__name__)
        except Exception:
            failed += 1
            print("FAIL %s" % fn.__name__)
            traceback.print_exc(file=sys.stdout)
    print("python-check: weightfs %s from %s: %d passed, %d failed"
          % (weightfs.__version__, weightfs._lib._name, passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
