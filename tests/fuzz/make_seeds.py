#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus/ (run from the top of the
tree: python3 tests/fuzz/make_seeds.py).  The other seeds are copies of
small files from tests/data/.  Deterministic: same files every run."""
import json
import os
import random
import struct

HERE = os.path.dirname(os.path.abspath(__file__))
rng = random.Random(1)

# ggml type id -> (block elements, block bytes); enough rows for seeds
GGML = {0: (1, 4), 1: (1, 2), 2: (32, 18), 3: (32, 20), 6: (32, 22), 7: (32, 24), 8: (32, 34),
        9: (32, 36), 10: (256, 84), 11: (256, 110), 12: (256, 144), 13: (256, 176), 14: (256, 210),
        15: (256, 292), 16: (256, 66), 17: (256, 74), 18: (256, 98), 19: (256, 50), 20: (32, 18),
        21: (256, 110), 22: (256, 82), 23: (256, 136), 24: (1, 1), 25: (1, 2), 26: (1, 4), 27: (1, 8),
        28: (1, 8), 29: (256, 56), 30: (1, 2), 34: (256, 54), 35: (256, 66), 39: (32, 17),
        40: (64, 36), 41: (128, 18), 42: (64, 18)}


def write(sub, name, data):
    d = os.path.join(HERE, "corpus", sub)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def gstr(s):
    b = s if isinstance(s, bytes) else s.encode()
    return struct.pack("<Q", len(b)) + b


def gguf(kvs, tensors, version=3, align=32, data_fill=None):
    """kvs: list of (key, vtype, payload bytes); tensors: (name, ne list, type)."""
    out = b"GGUF" + struct.pack("<IQQ", version, len(tensors), len(kvs))
    for k, vt, payload in kvs:
        out += gstr(k) + struct.pack("<I", vt) + payload
    off = 0
    blobs = []
    for name, ne, ty in tensors:
        bl, by = GGML[ty]
        n = 1
        for x in ne:
            n *= x
        nbytes = n // bl * by
        out += gstr(name) + struct.pack("<I", len(ne)) + b"".join(struct.pack("<Q", x) for x in ne)
        out += struct.pack("<IQ", ty, off)
        blobs.append((off, nbytes))
        off += (nbytes + align - 1) // align * align
    pad = (-len(out)) % align
    out += b"\0" * pad
    data = bytearray(off)
    for o, nb in blobs:
        data[o:o + nb] = bytes(rng.randrange(256) for _ in range(nb))
    return out + bytes(data)


def kv_u32(k, v):
    return (k, 4, struct.pack("<I", v))


def kv_str(k, v):
    return (k, 8, gstr(v))


def kv_arr(k, elem, items):
    fmt = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "B", 10: "Q", 11: "q", 12: "d"}
    if elem == 8:
        body = b"".join(gstr(s) for s in items)
    else:
        body = b"".join(struct.pack("<" + fmt[elem], x) for x in items)
    return (k, 9, struct.pack("<IQ", elem, len(items)) + body)


# --- GGUF ---------------------------------------------------------------
llama_kvs = [kv_str("general.architecture", "llama"), kv_str("general.name", "tiny"),
             kv_u32("llama.context_length", 64), kv_u32("llama.embedding_length", 32),
             kv_u32("llama.block_count", 1), (b"llama.rope.freq_base", 6, struct.pack("<f", 10000.0)),
             (b"llama.attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-5)),
             kv_str("tokenizer.ggml.model", "llama"),
             kv_arr("tokenizer.ggml.tokens", 8, ["<s>", "</s>", "a", "\u00e9", "\xff".encode("latin-1")]),
             kv_arr("tokenizer.ggml.scores", 6, [0.0, -1.0, float("nan"), float("inf")]),
             kv_arr("tokenizer.ggml.token_type", 5, [1, 3, 1, -1]),
             (b"general.file_type", 4, struct.pack("<I", 7)), (b"general.flag", 7, b"\x02"),
             (b"general.u64", 10, struct.pack("<Q", 2**64 - 1)), (b"general.f64", 12, struct.pack("<d", -0.0)),
             kv_arr("general.empty", 0, [])]
write("gguf", "hand_llama.gguf", gguf(llama_kvs, [
    ("token_embd.weight", [32, 4], 8), ("blk.0.attn_norm.weight", [32], 0),
    ("blk.0.attn_q.weight", [256, 2], 12), ("blk.0.ffn_up.weight", [64, 1], 40),
    ("output.weight", [32, 2], 2), ("rope_freqs.weight", [4], 1)]))
write("gguf", "hand_align8.gguf", gguf([kv_u32("general.alignment", 8)], [
    ("a", [3], 24), ("a.b", [5], 25), ("a.b.c", [2, 1, 1, 1], 30), ("", [1], 28), ("..", [2], 27),
    ("x/y%z", [0], 0), ("\xff\x00q".encode("latin-1"), [1], 26)], align=8))
write("gguf", "hand_types.gguf", gguf([kv_u32("general.alignment", 1)], [
    ("t%d" % ty, [GGML[ty][0] * 2], ty) for ty in sorted(GGML)], align=1))
write("gguf", "hand_v2_empty.gguf", gguf([], [], version=2))
write("gguf", "hand_scalar.gguf", gguf([], [("s", [], 0), ("z", [0, 7], 12), ("l" * 300, [1], 0)]))

# --- safetensors ----------------------------------------------------------
ST = {"F64": (1, 8), "F32": (1, 4), "F16": (1, 2), "BF16": (1, 2), "I64": (1, 8), "I32": (1, 4),
      "I16": (1, 2), "I8": (1, 1), "U64": (1, 8), "U32": (1, 4), "U16": (1, 2), "U8": (1, 1),
      "BOOL": (1, 1), "F8_E4M3": (1, 1), "F8_E5M2": (1, 1), "F8_E8M0": (1, 1),
      "F8_E4M3FNUZ": (1, 1), "F8_E5M2FNUZ": (1, 1), "F4": (2, 1), "F6_E2M3": (4, 3),
      "F6_E3M2": (4, 3), "C64": (1, 8)}


def st(tensors, meta=None, pad=0):
    hdr = {}
    if meta is not None:
        hdr["__metadata__"] = meta
    off = 0
    for name, dtype, shape in tensors:
        bl, by = ST[dtype]
        n = 1
        for x in shape:
            n *= x
        nb = n // bl * by
        hdr[name] = {"dtype": dtype, "shape": shape, "data_offsets": [off, off + nb]}
        off += nb
    h = json.dumps(hdr, ensure_ascii=False).encode() + b" " * pad
    return struct.pack("<Q", len(h)) + h + bytes(rng.randrange(256) for _ in range(off))


write("st", "hand_all_dtypes.safetensors",
      st([("t." + d.lower(), d, [2, 4]) for d in ST], meta={"format": "pt", "k\u00e9": "v\n"}))
write("st", "hand_names.safetensors",
      st([("a", "F32", [1]), ("a.b", "F16", [3]), ("", "U8", []), ("x/y%z", "F8_E4M3", [0, 3]),
          ("..", "BF16", [2]), ("\u00e9.\u4e2d", "I8", [2]), ("l" * 300, "BOOL", [1])], pad=5))
write("st", "hand_empty.safetensors", struct.pack("<Q", 2) + b"{}")
write("st", "hand_meta_only.safetensors", st([], meta={}))
write("st", "hand_deep.safetensors", st([("model.layers.0.mlp.up_proj.weight", "BF16", [4, 8]),
                                         ("model.layers.0.mlp.up_proj.bias", "F32", [4]),
                                         ("lm_head.weight", "F64", [1, 1, 1, 1, 1, 1, 1, 1, 1, 2])]))

# --- read (layout in fuzz_read.c) ----------------------------------------
type_ids = sorted(GGML) + list(range(64, 78))
for i, tid in enumerate(type_ids):
    ndim = 1 + i % 3
    flags = (i & 1) | (ndim << 1)
    dims = bytes([1 + (i + d) % 3 for d in range(ndim)])
    ranges = b"".join(struct.pack("<IHB", rng.randrange(4096), rng.randrange(1, 600), rng.randrange(2))
                      for _ in range(4))
    src = bytes(rng.randrange(256) for _ in range(rng.randrange(300, 1500)))
    write("read", "type_%02d" % tid, bytes([i, flags, 3]) + struct.pack("<H", 7) + dims + ranges + src)
# out-of-source offset, huge ranges
write("read", "raw_offset", bytes([0, 0x22, 1]) + struct.pack("<H", 5000) + b"\x08" +
      struct.pack("<IHB", 0, 100, 2) + struct.pack("<IHB", 4, 3, 4) + b"\x01" * 64)

# --- tree ----------------------------------------------------------------
write("tree", "names_llama", b"\n".join(b"blk.%d.%s.weight" % (i, p) for i in range(3)
                                        for p in (b"attn_q", b"attn_k", b"ffn_up")) + b"\noutput.weight")
write("tree", "names_awkward", b"a\na.b\na.b.c\n\n.\n..\n...\nx/y\n%41\n\xff\xfe\n\x00\x01\na.b.tensor\n"
      + b"\xc3\xa9\xe4\xb8\xad\n" + b"L" * 300 + b".x\n" + b"\xe4\xb8\xad" * 120 + b"\n" + b"%" * 200)

# --- metadata keys "." and ".." (issue 17 item 13): escaped to %2E, %2E%2E in metadata/
write("st", "hand_meta_dots.safetensors",
      st([("w", "F32", [1])], meta={".": "dot", "..": "dotdot", "...": "three", "": "empty"}))
write("gguf", "hand_meta_dots.gguf",
      gguf([(".", 8, gstr("dot")), ("..", 8, gstr("dotdot")), ("...", 4, struct.pack("<I", 3))],
           [("w", [1], 0)]))
