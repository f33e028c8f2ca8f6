#!/usr/bin/env python3
"""Writes the hand-made seeds of tests/fuzz/corpus/ (run from the top of the
tree: python3 tests/fuzz/make_seeds.py).  The other seeds are copies of
small files from tests/data/.  Deterministic: same files every run."""
import json
import os
import random
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "mount"))
from st_file import st_bytes  # noqa: E402
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

# --- hfq (layout in fuzz_hfq.c): model folders of quantized layers --------
# Layouts as tests/mount/hfq_models.py writes them (docs/quantized.md), with
# random values: a seed only has to open, so that the fuzzer starts there.
hrng = random.Random(2)
HFQ_NAMES = ["config.json", "model.safetensors", "quantize_config.json", "model.safetensors.index.json",
             "model-00001-of-00002.safetensors", "model-00002-of-00002.safetensors",
             "m-00001-of-00002.gguf", "m-00002-of-00002.gguf", "tokenizer.json"]


def hbytes(n):
    return bytes(hrng.randrange(256) for _ in range(n))


def hf16(n, lo=-0.01, hi=0.01):
    return b"".join(struct.pack("<e", hrng.uniform(lo, hi)) for _ in range(n))


def hf32(vals):
    return b"".join(struct.pack("<f", v) for v in vals)


def hi32(vals):
    return b"".join(struct.pack("<i", v) for v in vals)


def hst(tensors):
    """safetensors bytes of {name: (dtype, shape, raw)}."""
    return st_bytes(tensors)


def hfq_input(files, flags=0):
    """The container: flags, then [id, u16 len, bytes] per file."""
    out = bytes([flags])
    for name, data in files:
        if not isinstance(data, bytes):
            data = json.dumps(data).encode()
        assert len(data) < 65536
        out += bytes([HFQ_NAMES.index(name)]) + struct.pack("<H", len(data)) + data
    return out


def gptq_parts(out, inp, bits, group, g_idx):
    ng = -(-inp // (group if group > 0 else inp))
    p = {"qweight": ("I32", [inp * bits // 32, out], hbytes(inp * bits // 32 * out * 4)),
         "qzeros": ("I32", [ng, out * bits // 32], hbytes(ng * out * bits // 32 * 4)),
         "scales": ("F16", [ng, out], hf16(ng * out)),
         "bias": ("F16", [out], hf16(out))}
    if g_idx:
        g = group if group > 0 else inp
        gi = [i // g for i in range(inp)]
        hrng.shuffle(gi)
        p["g_idx"] = ("I32", [inp], hi32(gi))
    return p


def gptq_cfg(bits, group, desc_act):
    return {"architectures": ["LlamaForCausalLM"], "quantization_config": {
        "quant_method": "gptq", "bits": bits, "group_size": group, "desc_act": desc_act, "sym": False,
        "checkpoint_format": "gptq"}}


L = "model.layers.0.mlp.down_proj"


def layer(prefix, parts, sep="."):
    return {prefix + sep + k if k else prefix: v for k, v in parts.items()}


for bits in (2, 3, 4, 8):
    for gi in (False, True):
        out, inp = 32, 64
        m = layer(L, gptq_parts(out, inp, bits, 32, gi))
        m["model.norm.weight"] = ("BF16", [8], hbytes(16))
        write("hfq", "gptq%d%s" % (bits, "_gidx" if gi else ""),
              hfq_input([("config.json", gptq_cfg(bits, 32, gi)), ("model.safetensors", hst(m))],
                        flags=3 if (bits, gi) == (8, True) else {2: 2, 3: 1, 4: 0, 8: 1}[bits]))
# group -1 (one group), and an old quantize_config.json without quant_method
write("hfq", "gptq4_group_all", hfq_input([("config.json", gptq_cfg(4, -1, False)), ("model.safetensors", hst(
    layer(L, gptq_parts(16, 64, 4, -1, False))))]))
write("hfq", "gptq4_quantize_config", hfq_input([("quantize_config.json", {"bits": 4, "group_size": 32,
                                                                          "desc_act": True}),
                                                 ("model.safetensors", hst(layer(L, gptq_parts(16, 64, 4, 32, True))))],
                                                flags=1 << 2))
# AWQ gemm 4-bit: qweight [in, out/8], qzeros [in/g, out/8], scales [in/g, out]
out, inp, g = 16, 64, 32
write("hfq", "awq4", hfq_input([("config.json", {"quantization_config": {
    "quant_method": "awq", "zero_point": True, "group_size": g, "bits": 4, "version": "gemm"}}),
    ("model.safetensors", hst(layer(L, {"qweight": ("I32", [inp, out // 8], hbytes(inp * out // 8 * 4)),
                                        "qzeros": ("I32", [inp // g, out // 8], hbytes(inp // g * out // 8 * 4)),
                                        "scales": ("F16", [inp // g, out], hf16(inp // g * out))})))]))


def e4m3(n):
    return bytes(b if (b & 0x7F) != 0x7F else 0x7E for b in hbytes(n))


# FP8 (DeepSeek): weight F8_E4M3 [out, in], weight_scale_inv F32 [ceil(out/bh), ceil(in/bw)]
out, inp, bh, bw = 24, 40, 16, 16
write("hfq", "fp8_block", hfq_input([("config.json", {"quantization_config": {
    "quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic", "weight_block_size": [bh, bw]}}),
    ("model.safetensors", hst(layer(L, {"weight": ("F8_E4M3", [out, inp], e4m3(out * inp)),
                                        "weight_scale_inv": ("F32", [2, 3], hf32([0.001 * i for i in range(1, 7)])),
                                        })))]))


def ct_cfg(strategy, block=None):
    return {"quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": strategy, "symmetric": True, "dynamic": False,
            "block_structure": block}}}, "ignore": ["lm_head"]}}


out, inp = 16, 32
for strat, sshape, block in (("tensor", [1], None), ("channel", [out, 1], None), ("block", [2, 1], [8, 32]),
                             ("block", [1, 2], "16x16")):
    n = sshape[0] * (sshape[1] if len(sshape) > 1 else 1)
    write("hfq", "ct_fp8_%s%s" % (strat, "_str" if isinstance(block, str) else ""), hfq_input([
        ("config.json", ct_cfg(strat, block)),
        ("model.safetensors", hst(layer(L, {"weight": ("F8_E4M3", [out, inp], e4m3(out * inp)),
                                            "weight_scale": ("BF16", sshape, hbytes(2 * n)),
                                            "input_scale": ("F32", [1], hf32([1.0]))})))], flags=2))


# MLX affine: weight U32 [out, in*bits/32], scales/biases [out, in/g]
def mlx_parts(out, inp, bits, g):
    ng = inp // g
    return {"weight": ("U32", [out, inp * bits // 32], hbytes(out * inp * bits // 32 * 4)),
            "scales": ("BF16", [out, ng], hbytes(2 * out * ng)), "biases": ("F16", [out, ng], hf16(out * ng))}


for bits in (2, 3, 4, 6, 8):
    m = layer(L, mlx_parts(16, 64, bits, 32))
    m["model.embed_tokens.weight"] = ("F16", [4, 8], hf16(32))
    # a per-module override: another layer with its own bits
    m.update(layer("model.layers.0.mlp.up_proj", mlx_parts(8, 64, 8, 64)))
    write("hfq", "mlx%d" % bits, hfq_input([("config.json", {"quantization": {
        "group_size": 32, "bits": bits, "model.layers.0.mlp.up_proj": {"group_size": 64, "bits": 8}}}),
        ("model.safetensors", hst(m))], flags={2: 2, 3: 1, 4: 0, 6: 3, 8: 1}[bits]))

# bitsandbytes 4-bit: W U8 [n/2, 1], absmax, quant_map [16], quant_state JSON (nested or not)
NF4 = [-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453, -0.28444138169288635,
       -0.18477343022823334, -0.09105003625154495, 0.0, 0.07958029955625534, 0.16093020141124725,
       0.24611230194568634, 0.33791524171829224, 0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0]
FP4 = [x / 12 for x in [0, 0.0625, 8, 12, 4, 6, 2, 3, 0, -0.0625, -8, -12, -4, -6, -2, -3]]


def bnb_parts(out, inp, block, qt, nested):
    n = out * inp
    nb = -(-n // block)
    p = {"": ("U8", [(n + 1) // 2, 1], hbytes((n + 1) // 2)),
         ".quant_map": ("F32", [16], hf32(NF4 if qt == "nf4" else FP4))}
    st_ = {"quant_type": qt, "blocksize": block, "dtype": "bfloat16", "shape": [out, inp]}
    if nested:
        nn = -(-nb // 4)
        p[".absmax"] = ("U8", [nb], hbytes(nb))
        p[".nested_absmax"] = ("F32", [nn], hf32([0.01 * (i + 1) for i in range(nn)]))
        p[".nested_quant_map"] = ("F32", [256], hf32([-1 + 2 * i / 255 for i in range(256)]))
        st_.update({"nested_blocksize": 4, "nested_dtype": "float32", "nested_offset": 0.03125})
    else:
        p[".absmax"] = ("F32", [nb], hf32([hrng.uniform(0, 2) for _ in range(nb)]))
    js = json.dumps(st_).encode()
    p[".quant_state.bitsandbytes__" + qt] = ("U8", [len(js)], js)
    return p


bnb4_cfg = {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                    "bnb_4bit_quant_type": "nf4", "bnb_4bit_use_double_quant": True}}
for qt in ("nf4", "fp4"):
    for nested in (False, True):
        files = [("model.safetensors", hst(layer(L + ".weight", bnb_parts(16, 33, 64, qt, nested), sep="")))]
        if nested:
            files.insert(0, ("config.json", bnb4_cfg))
        write("hfq", "bnb4_%s%s" % (qt, "_nested" if nested else ""), hfq_input(files, flags=1 if nested else 0))

# bitsandbytes 8-bit: weight I8 [out, in], SCB F32 [out], weight_format U8 []
out, inp = 16, 40
bnb8 = {L + ".weight": ("I8", [out, inp], hbytes(out * inp)),
        L + ".SCB": ("F32", [out], hf32([hrng.uniform(0.01, 3) for _ in range(out)])),
        L + ".weight_format": ("U8", [], b"\0")}
write("hfq", "bnb8", hfq_input([("config.json", {"quantization_config": {
    "quant_method": "bitsandbytes", "load_in_8bit": True, "_load_in_8bit": True, "load_in_4bit": False}}),
    ("model.safetensors", hst(bnb8))]))
del bnb8[L + ".weight_format"]
write("hfq", "bnb8_noconfig", hfq_input([("model.safetensors", hst(bnb8))], flags=2))

# a sharded set: index json plus two shards, the parts of a GPTQ layer split
# across them (opened as the folder, the index, and a shard)
parts = layer(L, gptq_parts(16, 64, 4, 32, True))
parts["lm_head.weight"] = ("F16", [4, 16], hf16(64))
names = sorted(parts)
shard = {n: HFQ_NAMES[4 + (i % 2)] for i, n in enumerate(names)}
s1 = hst({n: parts[n] for n in names if shard[n] == HFQ_NAMES[4]})
s2 = hst({n: parts[n] for n in names if shard[n] == HFQ_NAMES[5]})
index = {"metadata": {"total_size": sum(len(v[2]) for v in parts.values())}, "weight_map": shard}
for what, flags in (("folder", 0), ("index", 2 << 2), ("shard", 3 << 2)):
    write("hfq", "sharded_gptq_" + what, hfq_input([("config.json", gptq_cfg(4, 32, True)),
                                                    ("model.safetensors.index.json", index),
                                                    (HFQ_NAMES[4], s1), (HFQ_NAMES[5], s2)], flags=flags))
# an unindexed set of shards, with an FP8 layer split across them
fw = {L + ".weight": ("F8_E4M3", [8, 16], e4m3(128))}
fs = {L + ".weight_scale_inv": ("F32", [1, 1], hf32([0.5]))}
write("hfq", "shards_fp8_noindex", hfq_input([("config.json", {"quantization_config": {
    "quant_method": "fp8", "fmt": "e4m3", "weight_block_size": [128, 128]}}),
    (HFQ_NAMES[4], hst(fw)), (HFQ_NAMES[5], hst(fs))]))


# a split GGUF: two parts with split.no / split.count / split.tensors.count
def split_kvs(no):
    return [("split.no", 2, struct.pack("<H", no)), ("split.count", 2, struct.pack("<H", 2)),
            ("split.tensors.count", 5, struct.pack("<i", 3))]


g1 = gguf(split_kvs(0) + [kv_str("general.architecture", "llama")], [("a", [32, 2], 8), ("b", [4], 0)])
g2 = gguf(split_kvs(1), [("c", [256], 12)])
write("hfq", "split_gguf_folder", hfq_input([("config.json", {"architectures": ["LlamaForCausalLM"]}),
                                             (HFQ_NAMES[6], g1), (HFQ_NAMES[7], g2)]))
write("hfq", "split_gguf_part", hfq_input([(HFQ_NAMES[6], g1), (HFQ_NAMES[7], g2)], flags=(4 << 2) | 32))


# --- hfview and gguf_retype: GGUFs an architecture's rules apply to -------
def tiny_arch(arch, emb=32, ff=64, heads=4, kv=2, vocab=8, ty=0, extra_kvs=(), extra_t=(), ffn=True):
    kvs = [kv_str("general.architecture", arch), kv_u32(arch + ".context_length", 64),
           kv_u32(arch + ".embedding_length", emb), kv_u32(arch + ".feed_forward_length", ff),
           kv_u32(arch + ".block_count", 1), kv_u32(arch + ".attention.head_count", heads),
           kv_u32(arch + ".attention.head_count_kv", kv), kv_u32(arch + ".rope.dimension_count", emb // heads),
           (arch + ".rope.freq_base", 6, struct.pack("<f", 10000.0)),
           (arch + ".attention.layer_norm_rms_epsilon", 6, struct.pack("<f", 1e-6)),
           kv_str("tokenizer.ggml.model", "llama"),
           kv_arr("tokenizer.ggml.tokens", 8, ["<unk>", "<s>", "</s>"] + ["t%d" % i for i in range(vocab - 3)]),
           kv_arr("tokenizer.ggml.scores", 6, [0.0] * vocab), kv_arr("tokenizer.ggml.token_type", 5, [2, 3, 3] + [1] * (vocab - 3)),
           kv_u32("tokenizer.ggml.bos_token_id", 1), kv_u32("tokenizer.ggml.eos_token_id", 2)] + list(extra_kvs)
    hd = emb // heads
    t = [("token_embd.weight", [emb, vocab], ty), ("output_norm.weight", [emb], 0),
         ("output.weight", [emb, vocab], ty), ("blk.0.attn_norm.weight", [emb], 0),
         ("blk.0.attn_q.weight", [emb, emb], ty), ("blk.0.attn_k.weight", [emb, kv * hd], ty),
         ("blk.0.attn_v.weight", [emb, kv * hd], ty), ("blk.0.attn_output.weight", [emb, emb], ty),
         ("blk.0.ffn_norm.weight", [emb], 0)] + ([("blk.0.ffn_gate.weight", [emb, ff], ty),
         ("blk.0.ffn_up.weight", [emb, ff], ty), ("blk.0.ffn_down.weight", [ff, emb], ty)] if ffn else []) + list(extra_t)
    return gguf(kvs, t)


for sub in ("hfview", "gguf_retype"):
    write(sub, "llama_f32.gguf", tiny_arch("llama", emb=16, ff=32, heads=2, kv=1))
    write(sub, "llama_q8_0.gguf", tiny_arch("llama", ty=8))
    write(sub, "llama_f16_mqa.gguf", tiny_arch("llama", heads=4, kv=1, ty=1))
    write(sub, "qwen2_bias.gguf", tiny_arch("qwen2", emb=16, ff=32, heads=2, kv=1,
                                            extra_t=[("blk.0.attn_q.bias", [16], 0), ("blk.0.attn_k.bias", [8], 0),
                                                     ("blk.0.attn_v.bias", [8], 0)]))
    write(sub, "gemma2_f16.gguf", tiny_arch("gemma2", ty=1, extra_kvs=[kv_u32("gemma2.attention.key_length", 8),
                                                                      kv_u32("gemma2.attention.value_length", 8)]))


def finite_f32(b, data_bytes):
    """b with its last data_bytes (an all-F32 model's data) replaced by finite
    values in [-1, 1), so that quantizing them is not refused for a NaN."""
    vals = b"".join(struct.pack("<f", rng.uniform(-1, 1)) for _ in range(data_bytes // 4))
    return b[:len(b) - data_bytes] + vals


f32_llama = tiny_arch("llama", emb=16, ff=32, heads=2, kv=1)
f32_data = 4 * (16 * 8 * 2 + 16 * 3 + 16 * 16 * 2 + 16 * 8 * 2 + 16 * 32 * 3)
write("gguf_retype", "llama_f32_finite.gguf", finite_f32(f32_llama, f32_data))
write("hfview", "llama_f32_finite.gguf", finite_f32(f32_llama, f32_data))
# rows of 256: the K-quants and IQ4_XS encode them instead of falling back
w256 = gguf([kv_str("general.architecture", "llama"), kv_u32("llama.block_count", 1),
             kv_u32("llama.attention.head_count", 1), kv_u32("llama.embedding_length", 256)],
            [("token_embd.weight", [256, 2], 0), ("blk.0.attn_q.weight", [256, 2], 0),
             ("blk.0.ffn_down.weight", [256, 2], 0), ("blk.0.attn_norm.weight", [256], 0)])
write("gguf_retype", "rows256_finite.gguf", finite_f32(w256, 4 * (512 * 3 + 256)))


# --- hfq: mixtures of experts, whose model.gguf stacks the experts on read ---
# (src/arch/wf_arch.c struct moe); a byte-level tokenizer.json so that model.gguf is made
mrng = random.Random(5)
MOE_TOK = {"version": "1.0", "added_tokens": [], "normalizer": None, "post_processor": None,
           "pre_tokenizer": {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": True},
           "decoder": {"type": "ByteLevel"},
           "model": {"type": "BPE", "dropout": None, "unk_token": None, "continuing_subword_prefix": None,
                     "end_of_word_suffix": None, "fuse_unk": False, "byte_fallback": False,
                     "vocab": {"a": 0, "b": 1, "ab": 2, "c": 3}, "merges": ["a b"]}}


def moe_folder(kind, n_exp=2, drop=None):
    """config.json and the tensors of a one-layer MoE of width 8 ({name: (dtype, shape, raw)})."""
    H, F, V = 8, 8, 4
    cfg = {"architectures": [{"mixtral": "MixtralForCausalLM", "qwen2moe": "Qwen2MoeForCausalLM",
                              "qwen3moe": "Qwen3MoeForCausalLM"}[kind]],
           "hidden_size": H, "intermediate_size": F, "num_hidden_layers": 1, "num_attention_heads": 2,
           "num_key_value_heads": 1, "vocab_size": V, "num_experts_per_tok": 1, "rms_norm_eps": 1e-5,
           "max_position_embeddings": 32, "moe_intermediate_size": F, "shared_expert_intermediate_size": F}
    cfg["num_local_experts" if kind == "mixtral" else "num_experts"] = n_exp
    t = {}

    def f32(name, *shape):
        n = 1
        for d in shape:
            n *= d
        t[name] = ("F32", list(shape), b"".join(struct.pack("<f", mrng.uniform(-1, 1)) for _ in range(n)))
    f32("model.embed_tokens.weight", V, H)
    f32("model.norm.weight", H)
    f32("lm_head.weight", V, H)
    p = "model.layers.0."
    for n, sh in (("input_layernorm", (H,)), ("post_attention_layernorm", (H,)), ("self_attn.q_proj", (H, H)),
                  ("self_attn.k_proj", (4, H)), ("self_attn.v_proj", (4, H)), ("self_attn.o_proj", (H, H))):
        f32(p + n + ".weight", *sh)
    moe, projs = (("block_sparse_moe.", ("w1", "w2", "w3")) if kind == "mixtral"
                  else ("mlp.", ("gate_proj", "down_proj", "up_proj")))
    f32(p + moe + "gate.weight", n_exp, H)
    for x in range(n_exp):
        for k, sh in zip(projs, ((F, H), (H, F), (F, H))):
            f32(p + moe + "experts.%d.%s.weight" % (x, k), *sh)
    if kind == "qwen2moe":
        for k, sh in zip(projs, ((F, H), (H, F), (F, H))):
            f32(p + "mlp.shared_expert.%s.weight" % k, *sh)
        f32(p + "mlp.shared_expert_gate.weight", 1, H)
    if kind == "qwen3moe":
        f32(p + "self_attn.q_norm.weight", 4)
        f32(p + "self_attn.k_norm.weight", 4)
    if drop:
        del t[drop]
    return cfg, t


for kind in ("mixtral", "qwen2moe", "qwen3moe"):
    cfg, t = moe_folder(kind)
    write("hfq", "moe_" + kind, hfq_input([("config.json", cfg), ("model.safetensors", hst(t)),
                                           ("tokenizer.json", MOE_TOK)]))
# the experts dealt over two shards of an index
cfg, t = moe_folder("mixtral", n_exp=3)
names = sorted(t)
shard = {n: "model-%05d-of-00002.safetensors" % (1 + i % 2) for i, n in enumerate(names)}
write("hfq", "moe_mixtral_shards", hfq_input(
    [("config.json", cfg), ("tokenizer.json", MOE_TOK),
     ("model.safetensors.index.json", {"metadata": {}, "weight_map": shard}),
     ("model-00001-of-00002.safetensors", hst({n: t[n] for n in names if shard[n].startswith("model-00001")})),
     ("model-00002-of-00002.safetensors", hst({n: t[n] for n in names if shard[n].startswith("model-00002")}))]))
# an expert missing: refused
cfg, t = moe_folder("qwen3moe", drop="model.layers.0.mlp.experts.1.up_proj.weight")
write("hfq", "moe_qwen3moe_missing", hfq_input([("config.json", cfg), ("model.safetensors", hst(t)),
                                                ("tokenizer.json", MOE_TOK)]))


# GLM-4.5: a dense layer 0, layer 1 with experts, the router bias and shared experts, and the MTP
# block (layer 2: its experts, eh_proj, enorm, hnorm, shared_head.norm); GLM's special tokens
# added to the byte-level vocabulary (its own draws: the seeds above stay as they are)
def glm_folder():
    g = random.Random(6)
    H, F, V, hd = 8, 8, 8, 4
    cfg = {"architectures": ["Glm4MoeForCausalLM"], "model_type": "glm4_moe", "hidden_size": H,
           "intermediate_size": F, "num_hidden_layers": 2, "num_attention_heads": 2, "num_key_value_heads": 1,
           "head_dim": hd, "partial_rotary_factor": 0.5, "vocab_size": V, "n_routed_experts": 2,
           "num_experts_per_tok": 1, "moe_intermediate_size": F, "n_shared_experts": 1, "first_k_dense_replace": 1,
           "num_nextn_predict_layers": 1, "routed_scaling_factor": 2.5, "norm_topk_prob": True, "n_group": 1,
           "topk_group": 1, "rms_norm_eps": 1e-5, "max_position_embeddings": 32, "attention_bias": True,
           "use_qk_norm": True}
    t = {}

    def f32(name, *shape):
        n = 1
        for d in shape:
            n *= d
        t[name] = ("F32", list(shape), b"".join(struct.pack("<f", g.uniform(-1, 1)) for _ in range(n)))
    f32("model.embed_tokens.weight", V, H)
    f32("model.norm.weight", H)
    f32("lm_head.weight", V, H)
    for i in range(3):
        p = "model.layers.%d." % i
        for n, sh in (("input_layernorm.weight", (H,)), ("post_attention_layernorm.weight", (H,)),
                      ("self_attn.q_proj.weight", (2 * hd, H)), ("self_attn.q_proj.bias", (2 * hd,)),
                      ("self_attn.k_proj.weight", (hd, H)), ("self_attn.k_proj.bias", (hd,)),
                      ("self_attn.v_proj.weight", (hd, H)), ("self_attn.v_proj.bias", (hd,)),
                      ("self_attn.o_proj.weight", (H, 2 * hd)), ("self_attn.q_norm.weight", (hd,)),
                      ("self_attn.k_norm.weight", (hd,))):
            f32(p + n, *sh)
        if i == 0:
            for k, sh in (("gate_proj", (F, H)), ("up_proj", (F, H)), ("down_proj", (H, F))):
                f32(p + "mlp.%s.weight" % k, *sh)
            continue
        f32(p + "mlp.gate.weight", 2, H)
        f32(p + "mlp.gate.e_score_correction_bias", 2)
        for x in range(2):
            for k, sh in (("gate_proj", (F, H)), ("up_proj", (F, H)), ("down_proj", (H, F))):
                f32(p + "mlp.experts.%d.%s.weight" % (x, k), *sh)
        for k, sh in (("gate_proj", (F, H)), ("up_proj", (F, H)), ("down_proj", (H, F))):
            f32(p + "mlp.shared_experts.%s.weight" % k, *sh)
        if i == 2:
            f32(p + "eh_proj.weight", H, 2 * H)
            for n in ("enorm", "hnorm", "shared_head.norm"):
                f32(p + n + ".weight", H)
    tok = json.loads(json.dumps(MOE_TOK))
    tok["added_tokens"] = [{"id": 4 + i, "content": c, "single_word": False, "lstrip": False, "rstrip": False,
                            "normalized": False, "special": True}
                           for i, c in enumerate(("<|endoftext|>", "[gMASK]", "<|user|>", "<|observation|>"))]
    return cfg, t, tok


cfg, t, tok = glm_folder()
write("hfq", "moe_glm4moe", hfq_input([("config.json", cfg), ("model.safetensors", hst(t)), ("tokenizer.json", tok)]))


# --- hfview, gguf_retype: mixtures of experts (hf/ splits the stacked experts back) ---
def moe_t(emb, ff, n_exp, ty):
    return [("blk.0.ffn_gate_inp.weight", [emb, n_exp], 0), ("blk.0.ffn_gate_exps.weight", [emb, ff, n_exp], ty),
            ("blk.0.ffn_up_exps.weight", [emb, ff, n_exp], ty), ("blk.0.ffn_down_exps.weight", [ff, emb, n_exp], ty)]


for sub in ("hfview", "gguf_retype"):
    for arch, ty in (("llama", 0), ("llama", 8), ("qwen3moe", 1), ("qwen2moe", 0)):
        kvs = [kv_u32(arch + ".expert_count", 2), kv_u32(arch + ".expert_used_count", 1),
               kv_u32(arch + ".expert_feed_forward_length", 32)]
        write(sub, "moe_%s_%d.gguf" % (arch, ty), tiny_arch(arch, ty=ty, ffn=False, extra_kvs=kvs,
                                                          extra_t=moe_t(32, 32, 2, ty)))
