#!/usr/bin/python3
"""ggml's own quantizers as the oracle for weightfs's encoders (src/codec/wf_quant*.c).

The inputs are deterministic: a splitmix64 generator turned into float32 values by integer
arithmetic and exact power-of-two scaling only, so tests/unit/check_quant.c regenerates every
bit of them in C (keep the two `case_bits` implementations in step).  The oracle is
ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, imatrix=NULL) of libggml-base.so from
@node-llama-cpp/linux-x64 (tests/clients/npm.sh installs it into $WEIGHTFS_NPM, default
~/.cache/weightfs-npm).

Commands:
    quant_oracle.py write [OUT.json]     expected SHA-256 of ggml's output per (type, case);
                                         default tests/data/quant-oracle/digests.json
    quant_oracle.py verify [FILE.json]   the committed digests against the library (same bytes)
    quant_oracle.py live LIBWEIGHTFS.so  random inputs (a fixed seed and a fresh one), every
                                         type, ggml against weightfs_quantize, byte for byte;
                                         plus every deterministic case
Without the npm library: exit 77 (skip), or 1 when $CI is set.
"""
import ctypes as C
import glob
import hashlib
import json
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
DIGESTS = os.path.join(ROOT, "tests", "data", "quant-oracle", "digests.json")
PACKAGE = "@node-llama-cpp/linux-x64"

# ggml type ids (enum ggml_type) of the types weightfs encodes.
TYPES = {"F32": 0, "F16": 1, "Q4_0": 2, "Q4_1": 3, "Q5_0": 6, "Q5_1": 7, "Q8_0": 8,
         "Q2_K": 10, "Q3_K": 11, "Q4_K": 12, "Q5_K": 13, "Q6_K": 14, "IQ4_NL": 20,
         "IQ4_XS": 23, "BF16": 30}

M64 = (1 << 64) - 1


class Rng:
    """splitmix64."""

    def __init__(self, seed):
        self.s = seed & M64

    def next(self):
        self.s = (self.s + 0x9E3779B97F4A7C15) & M64
        z = self.s
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
        return z ^ (z >> 31)

    def gauss(self):
        """A bell-shaped integer in [-2^23, 2^23]: four 22-bit draws summed."""
        return sum(self.next() >> 42 for _ in range(4)) - (1 << 23)


def f32_bits(v, k):
    """The bits of v * 2^k as float32 (exact: |v| < 2^24 and no underflow by construction)."""
    return struct.unpack("<I", struct.pack("<f", float(v) * 2.0 ** k))[0]


SIGN = 0x80000000
PINF, NINF, QNAN = 0x7F800000, 0xFF800000, 0x7FC00000

# name -> (nrows, n_per_row); every n_per_row is a multiple of 256, so all types take all cases.
CASES = [
    ("normal", 4, 1024), ("small", 4, 1024), ("tiny", 4, 1024), ("tiny_eps", 4, 1024),
    ("f16_subnormal", 4, 1024), ("huge", 4, 1024), ("huge_max", 4, 1024),
    ("subnormal", 4, 1024), ("zeros", 2, 512), ("signed_zeros", 2, 512), ("halves", 4, 1024),
    ("quarters", 4, 1024), ("ints", 4, 1024), ("constant", 4, 1024), ("constant256", 4, 1024),
    ("sparse", 4, 1024), ("one_hot", 4, 1024), ("blockscale", 4, 1024), ("bits", 4, 1024),
    ("positive", 4, 1024), ("negative", 4, 1024), ("rows_3x768", 3, 768),
    ("one_row", 1, 4096), ("outliers", 4, 1024), ("nonfinite", 4, 1024),
    ("nonfinite_rare", 4, 1024), ("nan_block", 2, 512), ("zeros_one_sign", 4, 1024),
]


def case_bits(index, name, n):
    """The n float32 bit patterns of case `name` (CASES[index]); check_quant.c mirrors this."""
    r = Rng(0x5157414E54000000 + index)  # "QUANT" + index
    out = []
    blk = 0  # per-block parameter, drawn when i % 32 == 0 (i % 256 for constant256)
    for i in range(n):
        if i % 32 == 0:
            if name == "constant":
                blk = r.gauss()
            elif name == "one_hot":
                blk = r.next() % 32
            elif name == "blockscale":
                blk = int(r.next() % 61) - 30
        if name == "constant256" and i % 256 == 0:
            blk = r.gauss()
        if name == "normal":
            b = f32_bits(r.gauss(), -21)
        elif name == "small":
            b = f32_bits(r.gauss(), -28)
        elif name == "tiny":
            b = f32_bits(r.gauss(), -81)
        elif name == "tiny_eps":
            b = f32_bits(r.gauss(), -71)
        elif name == "f16_subnormal":
            b = f32_bits(r.gauss(), -38)
        elif name == "huge":
            b = f32_bits(r.gauss(), 79)
        elif name == "huge_max":
            b = f32_bits(r.gauss(), 104)
        elif name == "subnormal":
            z = r.next()
            b = (z & 0x7FFFFF) | (SIGN if z >> 63 else 0)
        elif name == "zeros":
            b = 0
        elif name == "signed_zeros":
            b = SIGN if r.next() >> 63 else 0
        elif name == "halves":
            b = f32_bits(int(r.next() % 33) - 16, -1)
        elif name == "quarters":
            b = f32_bits(int(r.next() % 65) - 32, -2)
        elif name == "ints":
            b = f32_bits(int(r.next() % 255) - 127, 0)
        elif name in ("constant", "constant256"):
            b = f32_bits(blk, -21)
        elif name == "sparse":
            z = r.next()
            b = f32_bits(r.gauss(), -21) if z % 32 == 0 else 0
        elif name == "one_hot":
            b = f32_bits(r.gauss(), -21) if i % 32 == blk else 0
        elif name == "blockscale":
            b = f32_bits(r.gauss(), -21 + blk)
        elif name == "bits":
            z = r.next()
            e = 127 - 24 + int((z >> 32) % 49)
            b = (SIGN if z >> 63 else 0) | e << 23 | (z & 0x7FFFFF)
        elif name == "positive":
            b = f32_bits(abs(r.gauss()), -21)
        elif name == "negative":
            b = f32_bits(-abs(r.gauss()), -21)
        elif name in ("rows_3x768", "one_row"):
            b = f32_bits(r.gauss(), -21)
        elif name == "outliers":
            z = r.next()
            b = f32_bits(r.gauss(), -11 if z % 100 == 0 else -21)
        elif name == "nonfinite":
            z = r.next()
            b = (PINF, NINF, QNAN, QNAN | SIGN)[z % 4] if z % 64 < 4 else f32_bits(r.gauss(), -21)
        elif name == "nonfinite_rare":
            z = r.next()
            b = (PINF, NINF, QNAN, QNAN | SIGN)[z % 4] if z % 1024 < 2 else f32_bits(r.gauss(), -21)
        elif name == "zeros_one_sign":
            # blocks of one sign with +-0 among them: which zero is the min or max
            z = r.next()
            if z % 5 == 0:
                b = SIGN if z >> 63 else 0
            else:
                v = abs(r.gauss())
                b = f32_bits(-v if (i // 32) % 2 else v, -21)
        elif name == "nan_block":
            b = QNAN if (i // 32) % 2 == 0 else f32_bits(r.gauss(), -21)
        else:
            raise ValueError(name)
        out.append(b)
    return out


def case_floats(index):
    import numpy as np
    name, nrows, npr = CASES[index]
    return np.array(case_bits(index, name, nrows * npr), dtype=np.uint32).view(np.float32)


def npm_dir():
    return os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache",
                                                          "weightfs-npm")


def ggml_lib():
    """(libggml-base, package version) or (None, None)."""
    base = os.path.join(npm_dir(), "node_modules", *PACKAGE.split("/"))
    libs = glob.glob(os.path.join(base, "bins", "linux-x64", "libggml-base.so"))
    if not libs:
        return None, None
    lib = C.CDLL(libs[0])
    lib.ggml_quantize_chunk.argtypes = [C.c_int, C.c_void_p, C.c_void_p, C.c_int64, C.c_int64,
                                        C.c_int64, C.c_void_p]
    lib.ggml_quantize_chunk.restype = C.c_size_t
    lib.ggml_row_size.argtypes = [C.c_int, C.c_int64]
    lib.ggml_row_size.restype = C.c_size_t
    lib.ggml_quantize_init.argtypes = [C.c_int]
    with open(os.path.join(base, "package.json")) as f:
        version = json.load(f)["version"]
    return lib, version


def ggml_quantize(lib, tname, x, nrows, npr):
    import numpy as np
    t = TYPES[tname]
    x = np.ascontiguousarray(x, dtype=np.float32)
    size = lib.ggml_row_size(t, npr) * nrows
    out = C.create_string_buffer(size)
    lib.ggml_quantize_init(t)
    got = lib.ggml_quantize_chunk(t, x.ctypes.data, out, 0, nrows, npr, None)
    if got != size:
        raise RuntimeError("ggml_quantize_chunk(%s) returned %d, not %d" % (tname, got, size))
    return out.raw


def digests(lib):
    res = {}
    for tname in TYPES:
        row = {}
        for idx, (name, nrows, npr) in enumerate(CASES):
            row[name] = hashlib.sha256(ggml_quantize(lib, tname, case_floats(idx), nrows,
                                                     npr)).hexdigest()
        res[tname] = row
    return res


def no_library():
    msg = "quant_oracle: %s not installed under %s (tests/clients/npm.sh)" % (PACKAGE, npm_dir())
    print(msg, file=sys.stderr)
    return 1 if os.environ.get("CI") else 77


def cmd_write(path):
    lib, version = ggml_lib()
    if lib is None:
        return no_library()
    doc = {"about": "SHA-256 of ggml_quantize_chunk(type, src, dst, 0, nrows, n_per_row, NULL) "
                    "for each deterministic case of tests/clients/quant_oracle.py",
           "package": "%s@%s" % (PACKAGE, version),
           "cases": [{"name": n, "nrows": r, "n_per_row": p} for n, r, p in CASES],
           "inputs": {n: hashlib.sha256(case_floats(i).tobytes()).hexdigest()
                      for i, (n, _, _) in enumerate(CASES)},
           "digests": digests(lib)}
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(doc, f, indent=1, sort_keys=True)
        f.write("\n")
    print("wrote %s (%s)" % (path, doc["package"]))
    return 0


def cmd_verify(path):
    lib, version = ggml_lib()
    if lib is None:
        return no_library()
    with open(path) as f:
        want = json.load(f)["digests"]
    have = digests(lib)
    bad = [(t, c) for t in have for c in have[t] if want.get(t, {}).get(c) != have[t][c]]
    for t, c in bad:
        print("quant_oracle: %s %s: ggml gives %s, %s holds %s" % (
            t, c, have[t][c], path, want.get(t, {}).get(c)), file=sys.stderr)
    print("quant_oracle verify: %d digests, %d differ (%s@%s)" % (
        sum(len(v) for v in have.values()), len(bad), PACKAGE, version))
    return 1 if bad else 0


def wf_lib(path):
    lib = C.CDLL(path)
    lib.weightfs_quantize.argtypes = [C.c_int, C.c_void_p, C.c_size_t, C.c_size_t, C.c_void_p,
                                      C.c_size_t, C.POINTER(C.c_size_t), C.c_char_p, C.c_size_t]
    lib.weightfs_quantize.restype = C.c_int
    return lib


def wf_quantize(lib, tname, x, nrows, npr):
    import numpy as np
    x = np.ascontiguousarray(x, dtype=np.float32)
    cap = x.size * 4 + 1024
    out = C.create_string_buffer(cap)
    n = C.c_size_t(0)
    err = C.create_string_buffer(512)
    rc = lib.weightfs_quantize(TYPES[tname], x.ctypes.data, nrows, npr, out, cap, C.byref(n),
                               err, 512)
    if rc != 0:
        return None, err.value.decode()
    return out.raw[:n.value], None


def random_inputs(seed):
    """Random float32 rows of several shapes and scales (numpy's generator)."""
    import numpy as np
    g = np.random.default_rng(seed)
    yield "gauss", (g.standard_normal(8 * 4096) * 0.02).astype(np.float32), 8, 4096
    yield "laplace", g.laplace(size=16 * 512).astype(np.float32), 16, 512
    x = g.standard_normal(4 * 2048).astype(np.float32)
    x *= np.repeat(np.exp2(g.integers(-40, 40, size=x.size // 32)), 32).astype(np.float32)
    yield "scaled", x, 4, 2048
    bf = (g.standard_normal(4 * 1024).astype(np.float32).view(np.uint32) & 0xFFFF0000)
    yield "bf16", bf.view(np.float32), 4, 1024
    yield "f16", g.standard_normal(2 * 1024).astype(np.float16).astype(np.float32), 2, 1024


def cmd_live(path):
    glib, version = ggml_lib()
    if glib is None:
        return no_library()
    wlib = wf_lib(path)
    seeds = [20261203, int.from_bytes(os.urandom(4), "little")]
    checked = bad = 0
    for tname in TYPES:
        inputs = [(n, x, r, p) for s in seeds for n, x, r, p in random_inputs(s)]
        inputs += [(c[0], case_floats(i), c[1], c[2]) for i, c in enumerate(CASES)]
        for name, x, nrows, npr in inputs:
            mine, err = wf_quantize(wlib, tname, x, nrows, npr)
            checked += 1
            want = ggml_quantize(glib, tname, x, nrows, npr)
            if mine != want:
                bad += 1
                print("quant_oracle live: %s %s (seeds %s): %s" % (
                    tname, name, seeds, err or "bytes differ"), file=sys.stderr)
    print("quant_oracle live: %d comparisons, %d failed (%s@%s)" % (checked, bad, PACKAGE, version))
    return 1 if bad else 0


def main(argv):
    if len(argv) >= 2 and argv[1] == "write":
        return cmd_write(argv[2] if len(argv) > 2 else DIGESTS)
    if len(argv) >= 2 and argv[1] == "verify":
        return cmd_verify(argv[2] if len(argv) > 2 else DIGESTS)
    if len(argv) == 3 and argv[1] == "live":
        return cmd_live(argv[2])
    print(__doc__, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
