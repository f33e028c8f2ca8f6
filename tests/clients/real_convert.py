#!/usr/bin/python3
"""Run llama.cpp's own convert_hf_to_gguf.py here, and digest what it writes.

    real_convert.py run HF_FOLDER OUT.gguf [converter options...]
    real_convert.py digest FILE.gguf          (prints the digest as JSON)

The converter is the one in the llama.cpp source bundle that tests/clients/npm.sh clones
($WEIGHTFS_NPM/llama-src, the commit of the pinned node-llama-cpp's binaries). It runs with
Debian's python3-torch and numpy, its own gguf-py, and tests/clients/converter/ first on the
path: a stand-in `transformers` whose tokenizer is Hugging Face's Rust library (npm).
Debian's torch 1.13 predates the float8 and wide unsigned dtypes the converter names in
tables at import time; they are given stand-in values that no tensor of a test model has, so
a checkpoint that did use them would fail, never convert differently.

A digest is what a test needs to compare another GGUF with the converter's without keeping
the file: the key/values in order (type and value; a long array by its type, count and the
sha256 of its canonical JSON) and the tensors in order (name, type, ne, sha256 of the data).
"""
import hashlib
import json
import os
import runpy
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))


def llama_src():
    d = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
    src = os.path.join(d, "llama-src")
    if not os.path.isfile(os.path.join(src, "convert_hf_to_gguf.py")):
        raise SystemExit("real_convert.py: no %s/convert_hf_to_gguf.py (bash tests/clients/npm.sh)" % src)
    return src


def run(argv):
    src = llama_src()
    sys.path[:0] = [os.path.join(HERE, "converter"), os.path.join(src, "gguf-py"), src]
    import torch
    for name in ("float8_e4m3fn", "float8_e5m2", "float8_e8m0fnu", "uint16", "uint32", "uint64"):
        if not hasattr(torch, name):
            setattr(torch, name, type("stand_in_" + name, (), {})())
    sys.argv = [os.path.join(src, "convert_hf_to_gguf.py")] + argv
    runpy.run_path(sys.argv[0], run_name="__main__")


# GGUF value types (gguf.md): 0 u8 1 i8 2 u16 3 i16 4 u32 5 i32 6 f32 7 bool 8 str 9 arr 10 u64 11 i64 12 f64
_FMT = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


def _read(path):
    with open(path, "rb") as f:
        b = f.read()
    pos = [4]

    def take(fmt):
        v = struct.unpack_from(fmt, b, pos[0])
        pos[0] += struct.calcsize(fmt)
        return v[0]

    def string():
        n = take("<Q")
        s = b[pos[0]:pos[0] + n]
        pos[0] += n
        return s.decode("utf-8", "surrogateescape")

    def value(t):
        if t == 8:
            return string()
        if t == 9:
            et, n = take("<I"), take("<Q")
            return [et, [value(et) for _ in range(n)]]
        v = take(_FMT[t])
        # floats by their bits, so -0.0 and NaNs compare exactly
        return struct.unpack("<I", struct.pack("<f", v))[0] if t == 6 else \
            struct.unpack("<Q", struct.pack("<d", v))[0] if t == 12 else v

    if b[:4] != b"GGUF":
        raise ValueError("%s: not a GGUF file" % path)
    take("<I")
    nt, nkv = take("<Q"), take("<Q")
    kvs = []
    align = 32
    for _ in range(nkv):
        k = string()
        t = take("<I")
        v = value(t)
        if k == "general.alignment":
            align = v
        kvs.append([k, t, v])
    infos = []
    for _ in range(nt):
        name = string()
        nd = take("<I")
        ne = [take("<Q") for _ in range(nd)]
        infos.append([name, ne, take("<I"), take("<Q")])
    start = (pos[0] + align - 1) // align * align
    return kvs, infos, b, start


def _nbytes(ne, ty):
    # (block elements, block bytes) of the types a converter writes
    bs = {0: (1, 4), 1: (1, 2), 8: (32, 34), 30: (1, 2), 2: (32, 18), 3: (32, 20), 39: (32, 17)}
    if ty not in bs:
        return None
    n = 1
    for x in ne:
        n *= x
    return n // bs[ty][0] * bs[ty][1]


def digest(path):
    kvs, infos, b, start = _read(path)
    out_kv = []
    for k, t, v in kvs:
        if t == 9 and len(v[1]) > 16:
            h = hashlib.sha256(json.dumps(v[1], ensure_ascii=False).encode("utf-8", "surrogatepass")).hexdigest()
            v = {"array_of": v[0], "count": len(v[1]), "sha256": h}
        out_kv.append([k, t, v])
    ends = sorted(o for _, _, _, o in infos) + [len(b) - start]
    out_t = []
    for name, ne, ty, off in infos:
        n = _nbytes(ne, ty)
        if n is None:  # another type: up to the next tensor, less the alignment padding it cannot tell
            n = ends[ends.index(off) + 1] - off
        out_t.append([name, ty, ne, hashlib.sha256(b[start + off:start + off + n]).hexdigest()])
    return {"kv": out_kv, "tensors": out_t}


if __name__ == "__main__":
    if len(sys.argv) >= 4 and sys.argv[1] == "run":
        run(sys.argv[2:3] + ["--outfile", sys.argv[3]] + sys.argv[4:])
    elif len(sys.argv) == 3 and sys.argv[1] == "digest":
        json.dump(digest(sys.argv[2]), sys.stdout, ensure_ascii=False, indent=0)
        print()
    else:
        sys.exit(__doc__)
