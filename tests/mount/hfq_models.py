"""Small quantized Hugging Face checkpoints built here, with the float32
weights expected from them, computed in numpy from the values the
checkpoint was built from (never by unpacking what was written), for the
mount tests (t_hfq.py) and the Python module tests.

Layouts, as their reference code defines them (docs/quantized.md):
- FP8, DeepSeek-V3 (inference/kernel.py weight_dequant): PREFIX.weight
  F8_E4M3 [out, in], PREFIX.weight_scale_inv F32 [ceil(out/128),
  ceil(in/128)], W = float32(e4m3) * scale_inv of the block; config
  quantization_config {"quant_method": "fp8", "fmt": "e4m3",
  "weight_block_size": [128, 128]}.
- compressed-tensors FP8 (lifecycle/forward.py _dequantize): PREFIX.weight
  F8_E4M3, PREFIX.weight_scale [1] (tensor) or [out, 1] (channel).
- GPTQ v1 (AutoGPTQ qlinear_cuda.py pack; GPTQModel v1 zeros): qweight
  int32 [in*bits/32, out], values down each column as a little-endian bit
  stream; qzeros int32 [G, out*bits/32] along each row, stored as the
  whole words of the zeros minus 0x55555555/0x11111111/0x01010101 for
  2/4/8 bits (a zero of 0 borrows from the field above), field by field
  (z - 1) & 7 for 3 bits; scales [G, out]; g_idx int32 [in].
"""

import json
import struct

import numpy as np

from st_file import st_bytes  # noqa: F401 (the models' writers use it; so do callers)

E4M3_MAX = 448.0


def e4m3_value(b):
    """float64 values of e4m3fn bytes (torch float8_e4m3fn), by definition."""
    b = np.asarray(b, np.uint8).astype(np.int64)
    s = np.where(b & 0x80, -1.0, 1.0)
    e = (b >> 3) & 15
    m = (b & 7).astype(np.float64)
    v = np.where(e == 0, m / 8 * 2.0 ** -6, (1 + m / 8) * np.ldexp(1.0, e - 7))
    v = np.where((b & 0x7F) == 0x7F, np.nan, v)
    return s * v


def e4m3_bytes(rng, shape):
    """Random e4m3fn codes (no NaN), zeros of both signs and the extremes included."""
    b = rng.integers(0, 256, size=shape, dtype=np.uint8)
    b[(b & 0x7F) == 0x7F] = 0x7E
    flat = b.reshape(-1)
    flat[:6] = [0x00, 0x80, 0x7E, 0xFE, 0x01, 0x81]
    return b


def bf16_bytes(x):
    """float32 -> bfloat16 bits, round to nearest even (x has no NaN)."""
    u = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype("<u2")


def bf16_value(bits):
    return (np.asarray(bits, np.uint32) << 16).astype(np.uint32).view(np.float32)


# ------------------------------------------------------------------ FP8

def fp8_layer(rng, out, inp, bh, bw, scale_dtype="F32"):
    """(parts, expected float32 [out, in]) of a weight with a scale grid of
    ceil(out/bh) x ceil(in/bw) (a block grid, or [1, 1] / [out, 1])."""
    w = e4m3_bytes(rng, (out, inp))
    gr, gc = -(-out // bh), -(-inp // bw)
    s32 = (rng.random((gr, gc)) * 0.02 + 1e-4).astype(np.float32)
    s32.reshape(-1)[0] = np.float32(3.0e-3)
    if scale_dtype == "BF16":
        sbits = bf16_bytes(s32)
        s = bf16_value(sbits)
        sraw = sbits.tobytes()
    else:
        s = s32
        sraw = s32.astype("<f4").tobytes()
    full = np.repeat(np.repeat(s, bh, axis=0), bw, axis=1)[:out, :inp]
    exp = (e4m3_value(w).astype(np.float32) * full).astype(np.float32)
    return w.tobytes(), (s, sraw), exp


# ----------------------------------------------------------------- GPTQ

def pack_stream(vals, bits, axis):
    """Packs ints (0 <= v < 2**bits) along `axis` into uint32 words, as one
    little-endian bit stream per line (value k at bits k*bits..)."""
    v = np.moveaxis(np.asarray(vals, np.uint64), axis, -1)
    n = v.shape[-1]
    assert n * bits % 32 == 0
    words = np.zeros(v.shape[:-1] + (n * bits // 32,), np.uint64)
    for k in range(n):
        bit = k * bits
        w, sh = bit // 32, bit % 32
        words[..., w] |= (v[..., k] << sh) & 0xFFFFFFFF
        if sh + bits > 32:
            words[..., w + 1] |= v[..., k] >> (32 - sh)
    return np.moveaxis(words.astype(np.uint32), -1, axis)


V1_K = {2: 0x55555555, 4: 0x11111111, 8: 0x01010101}


def gptq_layer(rng, out, inp, bits, group, act_order=True, scale_dtype="F16", zeros=None):
    """(tensors {suffix: (dtype, shape, bytes)}, expected float32 [out, in])."""
    g = group if group > 0 else inp
    ng = -(-inp // g)
    q = rng.integers(0, 2 ** bits, size=(inp, out))
    z = rng.integers(0, 2 ** bits, size=(ng, out)) if zeros is None else zeros
    z[0, :3] = 0                     # zeros of 0: the stored field borrows
    z[0, 3] = 2 ** bits - 1
    s = (rng.random((ng, out)) * 0.02 - 0.01).astype(np.float32)
    if scale_dtype == "BF16":
        sbits = bf16_bytes(s)
        s = bf16_value(sbits)
        sraw, sdt = sbits.tobytes(), "BF16"
    else:
        s = s.astype(np.float16).astype(np.float32)
        sraw, sdt = s.astype("<f2").tobytes(), "F16"
    gidx = np.arange(inp) // g
    if act_order:
        gidx = gidx[rng.permutation(inp)]
    qweight = pack_stream(q, bits, axis=0)
    if bits == 3:
        qzeros = pack_stream((z - 1) & 7, 3, axis=1)
    else:
        qzeros = ((pack_stream(z, bits, axis=1).astype(np.int64) - V1_K[bits]) & 0xFFFFFFFF).astype(np.uint32)
    exp = ((q - z[gidx, :]).astype(np.float32) * s[gidx, :]).T.astype(np.float32)
    parts = {
        "qweight": ("I32", qweight.shape, qweight.astype("<u4").tobytes()),
        "qzeros": ("I32", qzeros.shape, qzeros.astype("<u4").tobytes()),
        "scales": (sdt, s.shape, sraw),
        "g_idx": ("I32", (inp,), gidx.astype("<i4").tobytes()),
        "bias": ("F16", (out,), rng.random(out).astype("<f2").tobytes()),
    }
    return parts, np.ascontiguousarray(exp)


def gptq_config(bits, group, desc_act=True):
    return {"architectures": ["LlamaForCausalLM"], "torch_dtype": "float16",
            "quantization_config": {"quant_method": "gptq", "bits": bits, "group_size": group,
                                    "desc_act": desc_act, "sym": False, "checkpoint_format": "gptq"}}


def fp8_config():
    return {"architectures": ["DeepseekV3ForCausalLM"], "torch_dtype": "bfloat16",
            "quantization_config": {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                    "weight_block_size": [128, 128]}}


def ct_config(strategy, block=None):
    """compressed-tensors float-quantized; block: block_structure [bh, bw]
    (the FP8_BLOCK preset's [128, 128]) for strategy "block"."""
    return {"quantization_config": {
        "quant_method": "compressed-tensors", "format": "float-quantized", "quantization_status": "compressed",
        "config_groups": {"group_0": {"targets": ["Linear"], "weights": {
            "num_bits": 8, "type": "float", "strategy": strategy, "symmetric": True, "dynamic": False,
            "block_structure": block, "observer": "minmax"},
            "input_activations": {"num_bits": 8, "type": "float", "strategy": "group", "group_size": 128,
                                  "dynamic": True, "symmetric": True}}},
        "ignore": ["lm_head"]}}


# ------------------------------------------------------------------ AWQ

AWQ_ORDER = [0, 2, 4, 6, 1, 3, 5, 7]  # nibble i of a word holds column 8w + AWQ_ORDER[i]


def awq_pack(vals):
    """AutoAWQ WQLinear_GEMM.from_linear: [rows, out] 4-bit ints -> [rows, out/8] int32."""
    v = np.asarray(vals, np.uint64)
    words = np.zeros((v.shape[0], v.shape[1] // 8), np.uint64)
    for i in range(8):
        words |= v[:, AWQ_ORDER[i]::8] << (4 * i)
    return words.astype(np.uint32)


def awq_layer(rng, out, inp, group, scale_dtype="F16"):
    ng = inp // group
    q = rng.integers(0, 16, size=(inp, out))
    z = rng.integers(0, 16, size=(ng, out))
    s = (rng.random((ng, out)) * 0.02 - 0.005).astype(np.float32)
    if scale_dtype == "BF16":
        sbits = bf16_bytes(s)
        s, sraw = bf16_value(sbits), sbits.tobytes()
    else:
        s = s.astype(np.float16).astype(np.float32)
        sraw = s.astype("<f2").tobytes()
    gi = np.arange(inp) // group
    exp = ((q - z[gi, :]).astype(np.float32) * s[gi, :]).T
    qw, qz = awq_pack(q), awq_pack(z)
    return {"qweight": ("I32", qw.shape, qw.astype("<u4").tobytes()),
            "qzeros": ("I32", qz.shape, qz.astype("<u4").tobytes()),
            "scales": (scale_dtype, s.shape, sraw)}, np.ascontiguousarray(exp.astype(np.float32))


def awq_config(group):
    return {"quantization_config": {"quant_method": "awq", "zero_point": True, "group_size": group, "bits": 4,
                                    "version": "gemm", "modules_to_not_convert": None}}


# ------------------------------------------------------------------ MLX

def mlx_layer(rng, out, inp, bits, group, scale_dtype="BF16"):
    """mlx affine: weight uint32 [out, in*bits/32] (row streams), scales and
    biases [out, in/group]; W = q * s + b in float32, two roundings."""
    ng = inp // group
    q = rng.integers(0, 2 ** bits, size=(out, inp))
    s = (rng.random((out, ng)) * 0.02 - 0.01).astype(np.float32)
    b = (rng.random((out, ng)) * 0.2 - 0.1).astype(np.float32)
    raws = []
    vals = []
    for x in (s, b):
        if scale_dtype == "BF16":
            xb = bf16_bytes(x)
            vals.append(bf16_value(xb))
            raws.append(xb.tobytes())
        else:
            xv = x.astype(np.float16).astype(np.float32)
            vals.append(xv)
            raws.append(xv.astype("<f2").tobytes())
    s, b = vals
    gi = np.arange(inp) // group
    exp = (q.astype(np.float32) * s[:, gi]).astype(np.float32) + b[:, gi]
    w = pack_stream(q, bits, axis=1)
    return {"weight": ("U32", w.shape, w.astype("<u4").tobytes()),
            "scales": (scale_dtype, s.shape, raws[0]), "biases": (scale_dtype, b.shape, raws[1])}, \
        np.ascontiguousarray(exp.astype(np.float32))


# ----------------------------------------------------------- bitsandbytes

# bitsandbytes functional.py get_4bit_type: the NF4 code (index order) and
# FP4's [0, 0.0625, 8, 12, 4, 6, 2, 3, -0, -0.0625, -8, -12, -4, -6, -2, -3] / 12.
NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634, 0.33791524171829224,
                0.44070982933044434, 0.5626170039176941, 0.7229568362236023, 1.0], np.float32)
FP4 = (np.array([0, 0.0625, 8, 12, 4, 6, 2, 3, 0, -0.0625, -8, -12, -4, -6, -2, -3], np.float32)
       / np.float32(12)).astype(np.float32)


def bnb_layer(rng, out, inp, blocksize=64, quant_type="nf4", nested=False):
    """bitsandbytes Linear4bit state dict entries (suffixes of W) and W as float32."""
    n = out * inp
    nb = -(-n // blocksize)
    code = NF4 if quant_type == "nf4" else FP4
    codes = rng.integers(0, 16, size=n)
    padded = np.concatenate([codes, np.zeros(n % 2, np.int64)])
    packed = ((padded[0::2] << 4) | padded[1::2]).astype(np.uint8)   # first element in the high nibble
    parts = {"": ("U8", [len(packed), 1], packed.tobytes()),
             ".quant_map": ("F32", [16], code.astype("<f4").tobytes())}
    state = {"quant_type": quant_type, "blocksize": blocksize, "dtype": "bfloat16", "shape": [out, inp]}
    if nested:
        code2 = np.linspace(-1, 1, 256).astype(np.float32)
        a8 = rng.integers(0, 256, size=nb).astype(np.uint8)
        nabs = (rng.random(-(-nb // 256)) * 0.1 + 0.01).astype(np.float32)
        offset = np.float32(rng.random() * 0.05)
        absmax = (code2[a8] * nabs[np.arange(nb) // 256]).astype(np.float32) + offset   # two roundings
        parts[".absmax"] = ("U8", [nb], a8.tobytes())
        parts[".nested_absmax"] = ("F32", [len(nabs)], nabs.astype("<f4").tobytes())
        parts[".nested_quant_map"] = ("F32", [256], code2.astype("<f4").tobytes())
        state.update({"nested_blocksize": 256, "nested_dtype": "float32", "nested_offset": float(offset)})
    else:
        absmax = (rng.random(nb) * 2).astype(np.float32)
        parts[".absmax"] = ("F32", [nb], absmax.astype("<f4").tobytes())
    js = json.dumps(state).encode()
    parts[".quant_state.bitsandbytes__" + quant_type] = ("U8", [len(js)], js)
    exp = (code[codes] * absmax[np.arange(n) // blocksize]).astype(np.float32).reshape(out, inp)
    return parts, exp


# bitsandbytes 8-bit (LLM.int8): Linear8bitLt._save_to_state_dict writes
# PREFIX.weight int8 [out, in] (row-major), PREFIX.SCB float32 [out] and a
# 0-d uint8 PREFIX.weight_format of 0 ("row"); bitsandbytes/_ops.py
# int8_vectorwise_dequant: A * stats.view(-1, 1) * 7.874015718698502e-3,
# float32, left to right (two roundings).
BNB8_INV127 = np.float32(7.874015718698502e-3)


def bnb8_layer(rng, out, inp, weight_format=True):
    """(parts {suffix: (dtype, shape, bytes)}, expected float32 [out, in])."""
    w = rng.integers(-127, 128, size=(out, inp)).astype(np.int8)
    w.reshape(-1)[:4] = [-128, -127, 0, 127]
    scb = (rng.random(out) * 3 + 0.01).astype(np.float32)
    scb[0] = np.float32(1.0)
    exp = ((w.astype(np.float32) * scb[:, None]).astype(np.float32) * BNB8_INV127).astype(np.float32)
    parts = {".weight": ("I8", [out, inp], w.tobytes()), ".SCB": ("F32", [out], scb.astype("<f4").tobytes())}
    if weight_format:
        parts[".weight_format"] = ("U8", [], b"\0")
    return parts, np.ascontiguousarray(exp)


def bnb8_config():
    return {"architectures": ["OPTForCausalLM"], "torch_dtype": "float16",
            "quantization_config": {"quant_method": "bitsandbytes", "_load_in_8bit": True, "load_in_8bit": True,
                                    "load_in_4bit": False, "llm_int8_threshold": 6.0,
                                    "llm_int8_skip_modules": None, "llm_int8_has_fp16_weight": False}}


# MXFP4 experts (transformers integrations/mxfp4.py, gpt-oss): X_blocks
# uint8 [E, R, G, 16] (byte i of a block: value 2i low nibble, 2i+1 high)
# and X_scales uint8 [E, R, G] (E8M0); dequantized to [E, 32 G, R] (the last
# two axes swapped, convert_moe_packed_tensors' transpose(1, 2)).
def e2m1_value(code):
    """float64 values of FP4 e2m1 codes, from the OCP MX bit fields (code 8: -0)."""
    c = np.asarray(code, np.int64)
    ex, m = (c >> 1) & 3, (c & 1).astype(np.float64)
    v = np.where(ex == 0, m * 0.5, (1 + m / 2) * np.ldexp(1.0, np.maximum(ex, 1) - 1))
    return np.where(c & 8, -v, v)


def e8m0_f32(s):
    """float32 2^(s - 127) as torch.ldexp takes it (pow(2.0, s - 127) in float32: 255 is +inf)."""
    s = np.asarray(s, np.int64)
    with np.errstate(over="ignore"):
        return np.ldexp(np.float32(1.0), s - 127).astype(np.float32)


def mxfp4_layer(rng, experts, rows, cols, corners=True):
    """(parts {"_blocks"/"_scales": (dtype, shape, bytes)}, expected float32 [E, cols, rows])."""
    g = cols // 32
    codes = rng.integers(0, 16, size=(experts, rows, cols), dtype=np.uint8)
    scales = rng.integers(110, 135, size=(experts, rows, g), dtype=np.uint8)
    if corners:  # subnormal 2^-127, 2^127 (4 x 2^127 overflows), 255 (+inf, 0 x inf NaN)
        scales.reshape(-1)[:4] = [0, 1, 254, 255]
    codes.reshape(-1)[:16] = np.arange(16)
    blocks = (codes[..., 0::2] | (codes[..., 1::2] << 4)).reshape(experts, rows, g, 16)
    with np.errstate(invalid="ignore", over="ignore"):
        vals = e2m1_value(codes).astype(np.float32) * np.repeat(e8m0_f32(scales), 32, axis=2)
    exp = np.ascontiguousarray(vals.astype(np.float32).transpose(0, 2, 1))
    parts = {"_blocks": ("U8", [experts, rows, g, 16], blocks.tobytes()),
             "_scales": ("U8", [experts, rows, g], scales.tobytes())}
    return parts, exp


def mxfp4_config(layers, experts, hidden, inter):
    return {"architectures": ["GptOssForCausalLM"], "model_type": "gpt_oss", "hidden_size": hidden,
            "intermediate_size": inter, "num_local_experts": experts, "num_hidden_layers": layers,
            "torch_dtype": "bfloat16",
            "quantization_config": {"modules_to_not_convert": ["model.layers.*.self_attn", "model.layers.*.mlp.router",
                                                               "model.embed_tokens", "lm_head"],
                                    "quant_method": "mxfp4"}}
