"""Second references in torch for the hfq tests: the stored parts of a
GPTQ v1 / AWQ GEMM layer unpacked and dequantized the way the reference
loaders do it (GPTQModel's v1 load: whole-word + K on qzeros, then shifts;
AutoAWQ packing_utils.py unpack_awq + reverse_awq_order +
dequantize_gemm), in float32 with no final cast.  Unlike hfq_models.py's
expectations, these read the bytes that were written.  None when torch is
missing.
"""
import numpy as np

try:
    import torch
except ImportError:  # the numpy references still run
    torch = None

V1_K = {2: 0x55555555, 4: 0x11111111, 8: 0x01010101}


def _i32(raw, shape):
    return torch.from_numpy(np.frombuffer(raw, "<i4").reshape(shape).astype(np.int64) & 0xFFFFFFFF)


def _floats(dt, raw, shape):
    if dt == "BF16":
        u = np.frombuffer(raw, "<u2").astype(np.uint32) << 16
        return torch.from_numpy(u.view(np.float32).reshape(shape).copy())
    return torch.from_numpy(np.frombuffer(raw, "<f2").astype(np.float32).reshape(shape))


def gptq_torch(parts, bits):
    """float32 [out, in] from GPTQ v1 parts (2/4/8 bits), or None."""
    if torch is None or bits not in V1_K:
        return None
    dq, sq, rq = parts["qweight"]
    qweight = _i32(rq, sq)
    qzeros = (_i32(parts["qzeros"][2], parts["qzeros"][1]) + V1_K[bits]) & 0xFFFFFFFF
    scales = _floats(parts["scales"][0], parts["scales"][2], parts["scales"][1])
    g_idx = torch.from_numpy(np.frombuffer(parts["g_idx"][2], "<i4").astype(np.int64))
    shifts = torch.arange(0, 32, bits)
    mask = (1 << bits) - 1
    w = ((qweight[:, None, :] >> shifts[None, :, None]) & mask).reshape(-1, qweight.shape[1])
    z = ((qzeros[:, :, None] >> shifts[None, None, :]) & mask).reshape(qzeros.shape[0], -1)
    out = scales[g_idx] * (w - z[g_idx]).to(torch.float32)
    return out.t().contiguous().numpy()


def awq_torch(parts, group):
    """float32 [out, in] from AWQ GEMM parts, or None."""
    if torch is None:
        return None
    qweight = _i32(parts["qweight"][2], parts["qweight"][1])
    qzeros = _i32(parts["qzeros"][2], parts["qzeros"][1])
    scales = _floats(parts["scales"][0], parts["scales"][2], parts["scales"][1])
    shifts = torch.arange(0, 32, 4)
    iw = ((qweight[:, :, None] >> shifts[None, None, :]) & 15).reshape(qweight.shape[0], -1)
    iz = ((qzeros[:, :, None] >> shifts[None, None, :]) & 15).reshape(qzeros.shape[0], -1)
    order = torch.arange(iz.shape[-1]).reshape(-1, 8)[:, [0, 4, 1, 5, 2, 6, 3, 7]].reshape(-1)
    iw, iz = iw[:, order], iz[:, order]
    out = (iw - iz.repeat_interleave(group, dim=0)).to(torch.float32) * scales.repeat_interleave(group, dim=0)
    return out.t().contiguous().numpy()


def bnb8_torch(parts, out, inp):
    """float32 [out, in] from bnb 8-bit parts, as bitsandbytes' default
    int8_vectorwise_dequant computes it (an int8 tensor times the float32
    SCB column, times the Python float 1/127), or None."""
    if torch is None:
        return None
    a = torch.from_numpy(np.frombuffer(parts[".weight"][2], np.int8).reshape(out, inp).copy())
    stats = torch.from_numpy(np.frombuffer(parts[".SCB"][2], "<f4").copy())
    return (a * stats.view(-1, 1) * 7.874015718698502e-3).contiguous().numpy()


# transformers integrations/mxfp4.py, transcribed: FP4_VALUES and
# convert_moe_packed_tensors (lut[lo] at even, lut[hi] at odd columns,
# torch.ldexp by scale - 127, transpose(1, 2)); float32 instead of its
# default bfloat16 (every value it makes is exact in both).
FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_torch(parts):
    """float32 [E, C, R] from "_blocks"/"_scales" parts, or None."""
    if torch is None:
        return None
    blocks = torch.from_numpy(np.frombuffer(parts["_blocks"][2], np.uint8).reshape(parts["_blocks"][1]).copy())
    scales = torch.from_numpy(np.frombuffer(parts["_scales"][2], np.uint8).reshape(parts["_scales"][1]).copy())
    scales = scales.to(torch.int32) - 127
    lut = torch.tensor(FP4_VALUES, dtype=torch.float32)
    *prefix, g, b = blocks.shape
    rows = int(np.prod(prefix)) * g
    blocks = blocks.reshape(rows, b)
    scales = scales.reshape(rows, 1)
    out = torch.empty(rows, b * 2, dtype=torch.float32)
    out[:, 0::2] = lut[(blocks & 0x0F).to(torch.long)]
    out[:, 1::2] = lut[(blocks >> 4).to(torch.long)]
    torch.ldexp(out, scales, out=out)
    out = out.reshape(*prefix, g, b * 2).view(*prefix, g * b * 2)
    return out.transpose(1, 2).contiguous().numpy()
