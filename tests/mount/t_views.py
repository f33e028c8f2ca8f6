"""Group views: every oracle tensor in every output dtype (-o dtype=...), .npy
files, the model.safetensors round trip and the metadata folder.
"""

import errno
import json
import os
import random
import re
import struct

import numpy as np

from wf_harness import (
    check, Errs, Fail, force_unmount, GGML, is_mounted, Mount, new_dir, run_cli, SEED, STO, TMP)
from wf_models import (
    GGML_MAN, gguf_bytes, GGUF_DTYPE, gguf_expected, gkv, kv_value_ok, loads_exact, split_set,
    load_json, st_header, ST_MAN, write_file)
from wf_read import expect_eio, verify_bytes


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
                                    (f4, ["-o", "dtype=stored"], "stored")):
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
    check("views: -o dtype=f8 and -o dtype=stored on odd F4 rows refused before mounting", refusals)

    def no_eio():
        # F4 decodes as torch's float4_e2m1fn_x2 (element 2k in the low
        # nibble of byte k: pytorch torch/headeronly/util/Float4_e2m1fn_x2.h);
        # F6, with no packing any reference fixes, is served as its stored
        # bytes (uint8, one row of them when rows are not whole bytes) under
        # every option, so every file reads and model.safetensors copies.
        errs = Errs()
        e2m1 = np.array([0, .5, 1, 1.5, 2, 3, 4, 6, -0., -.5, -1, -1.5, -2, -3, -4, -6], np.float32)
        f4b = bytes([0x12, 0x8F, 0x70, 0xA9, 0x34, 0x56])
        f6b = bytes(range(200, 209))
        path = os.path.join(TMP, "f4_f6.safetensors")
        hdr = json.dumps({"f4": {"dtype": "F4", "shape": [2, 6], "data_offsets": [0, 6]},
                          "f6": {"dtype": "F6_E3M2", "shape": [2, 6], "data_offsets": [6, 15]}}).encode()
        write_file(path, struct.pack("<Q", len(hdr)) + hdr + f4b + f6b)
        nib = np.frombuffer(f4b, np.uint8)
        codes = np.stack([nib & 15, nib >> 4], axis=1).reshape(-1)
        want4 = e2m1[codes]
        for opt in ("f32", "f16", "bf16", "stored"):
            with Mount(path, ["-o", "dtype=" + opt]) as m:
                tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
                got6 = read_chunks(m.path("f6"))
                e6 = tj["f6"]
                if got6 != f6b or e6["dtype"] != "uint8" or e6["shape"] != [9] or e6["type"] != "F6_E3M2" or \
                        os.getxattr(m.path("f6"), "user.weightfs.type") != b"F6_E3M2":
                    errs.add("%s: F6 file %r, entry %r" % (opt, got6, e6))
                got4 = read_chunks(m.path("f4"))
                exp4 = {"f32": want4.astype("<f4").tobytes(), "f16": want4.astype("<f2").tobytes(),
                        "bf16": (want4.view("<u4") >> 16).astype("<u2").tobytes(), "stored": f4b}[opt]
                if got4 != exp4:
                    errs.add("%s: F4 bytes %r, expected %r" % (opt, got4, exp4))
                st = read_chunks(m.path("model.safetensors"))
                n = struct.unpack("<Q", st[:8])[0]
                h = json.loads(st[8:8 + n])
                if st[8 + n + h["f6"]["data_offsets"][0]:8 + n + h["f6"]["data_offsets"][1]] != f6b or \
                        h["f6"]["dtype"] != "U8":
                    errs.add("%s: model.safetensors F6 %r" % (opt, h["f6"]))
        if [bits for bits in want4.view("<u4")[:4]] != [0x3F800000, 0x3F000000, 0xC0C00000, 0x80000000]:
            errs.add("F4 table: %r" % want4[:4])
        errs.raise_if_any()
    check("views: F4 decoded (low nibble first), F6 served as stored bytes in every -o dtype", no_eio)
    return "%d tensor views" % total
