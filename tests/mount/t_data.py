"""Group data: every oracle GGUF and safetensors file mounted, each tensor's
bytes, tensors.json and metadata.json against the manifests.
"""

import hashlib
import json
import os
import random
import stat
import struct

import numpy as np

from wf_harness import check, Errs, Fail, GGML, Mount, SEED, STO, TMP
from wf_models import (
    f32_tensor, GGML_MAN, gguf_bytes, GGUF_DTYPE, gguf_expected, gkv, kv_value_ok, loads_exact,
    numpy_checks, split_set, st_header, ST_MAN, tally, TALLY_GGUF, TALLY_ST, write_file)
from wf_read import expect_eio, verify_bytes
from wf_tree import check_awkward


# ---------------------------------------------------------------- group: data

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
