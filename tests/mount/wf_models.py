"""Models for the mount tests: the GGUF writer, the oracle manifests of
tests/data (ggml-oracle, st-oracle) and the values expected from them, the
per-type tally, exact metadata JSON comparison, Q8_0 blocks and safetensors
sets / model folders.
"""

import hashlib
import json
import math
import os
import re
import struct

import numpy as np

from wf_harness import GGML, load_json, STO


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


# ---------------------------------------------------------------- oracle manifests

GGML_MAN = load_json(os.path.join(GGML, "manifest.json"))
ST_MAN = load_json(os.path.join(STO, "manifest.json"))
TALLY_GGUF = {}   # type -> [matched, total, note]
TALLY_ST = {}
# Safetensors dtypes with no decoder: served as their stored bytes (uint8).
NO_DECODER = {"F6_E2M3", "F6_E3M2"}


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
    if ty == "Q8_1":
        return q8_1_f32(raw)
    if ty == "F64":
        with np.errstate(over="ignore"):  # out-of-range doubles become +-inf
            return np.frombuffer(raw, "<f8").astype("<f4").tobytes()
    return raw  # integers pass through


def q8_1_f32(raw):
    """ggml's block_q8_1 (ggml-common.h: d f16, s f16, qs[32] int8), which
    ggml has no to_float for: weight j = qs[j] * d, one float32 rounding
    (numpy: the product of float32s is float32)."""
    b = np.frombuffer(raw, np.uint8).reshape(-1, 36)
    d = b[:, 0:2].copy().view("<f2").astype(np.float32)
    q = b[:, 4:36].copy().view(np.int8).astype(np.float32)
    return (q * d).astype("<f4").tobytes()


GGUF_DTYPE = {"I8": "int8", "I16": "int16", "I32": "int32", "I64": "int64"}


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


def st_header(path):
    with open(path, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        return n, json.loads(f.read(n).decode("utf-8"))


# ---------------------------------------------------------------- Q8_0 blocks

def q8_0_blocks(rng_np, nblocks):
    d = rng_np.uniform(0.001, 0.1, nblocks).astype("<f2")
    q = rng_np.integers(-128, 128, (nblocks, 32), dtype=np.int8)
    raw = np.zeros(nblocks, dtype=[("d", "<f2"), ("q", "i1", 32)])
    raw["d"] = d
    raw["q"] = q
    exp = (d.astype(np.float32)[:, None] * q.astype(np.float32)).astype("<f4")
    return raw.tobytes(), exp.tobytes()


# ---------------------------------------------------------------- safetensors sets

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
