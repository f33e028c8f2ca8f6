#!/usr/bin/python3
"""Reference forward pass in torch (CPU, float64 by default) with Hugging Face semantics.

    logits = hf_forward.logits("HF_FOLDER", ids)   # numpy [len(ids), vocab], every position

Reads config.json and model.safetensors (or model.safetensors.index.json shards) with
st_io. Written from transformers' modeling_llama / modeling_qwen2 / modeling_qwen3:
  - LlamaForCausalLM / MistralForCausalLM: RMSNorm (x * rsqrt(mean(x^2) + eps) * w),
    rotate_half RoPE with rope_theta (inv_freq = 1 / theta^(arange(0, d, 2)/d), cos/sin of
    cat(freqs, freqs)), rope_scaling 'llama3' (frequency adjustment of
    _compute_llama3_parameters) and 'linear' (positions / factor), GQA (repeat_kv), causal
    softmax attention scaled by head_dim^-0.5, SwiGLU MLP, attention_bias (q/k/v/o biases),
    mlp_bias, head_dim from config, tied embeddings when lm_head.weight is absent.
  - Qwen2ForCausalLM: the same with q/k/v biases (and no o bias).
  - Qwen3ForCausalLM: per-head RMSNorm q_norm/k_norm on q and k before RoPE, no biases
    (unless attention_bias), head_dim from config.
  - Phi3ForCausalLM: fused qkv_proj (q, k, v rows) and gate_up_proj (gate, up rows),
    partial_rotary_factor; rope_scaling longrope/su not implemented.
Gemma2/3 are not implemented (NotImplementedError).

CLI: hf_forward.py HF_FOLDER OUT.npy ID...
"""
import json
import math
import os
import sys

import numpy as np
import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

SUPPORTED = ("LlamaForCausalLM", "MistralForCausalLM", "Qwen2ForCausalLM", "Qwen3ForCausalLM",
             "Phi3ForCausalLM")


def load_folder(folder):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    idx = os.path.join(folder, "model.safetensors.index.json")
    w = {}
    if os.path.exists(idx):
        with open(idx) as f:
            for shard in sorted(set(json.load(f)["weight_map"].values())):
                w.update(st_io.load(os.path.join(folder, shard)))
    else:
        w = st_io.load(os.path.join(folder, "model.safetensors"))
    return cfg, w


def rope_inv_freq(cfg, head_dim):
    theta = float(cfg.get("rope_theta", 10000.0))
    rs = cfg.get("rope_scaling") or cfg.get("rope_parameters") or {}
    rtype = (rs.get("rope_type") or rs.get("type") or "default").lower()
    theta = float(rs.get("rope_theta", theta))
    inv = 1.0 / (theta ** (torch.arange(0, head_dim, 2, dtype=torch.int64).double() / head_dim))
    pos_scale = 1.0
    if rtype == "llama3":
        factor = rs.get("factor", 8.0)
        lo, hi = rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
        old = rs.get("original_max_position_embeddings", 8192)
        low_wl, high_wl = old / lo, old / hi
        wavelen = 2 * math.pi / inv
        inv_l = torch.where(wavelen > low_wl, inv / factor, inv)
        smooth = (old / wavelen - lo) / (hi - lo)
        smoothed = (1 - smooth) * inv_l / factor + smooth * inv_l
        medium = ~(wavelen < high_wl) * ~(wavelen > low_wl)
        inv = torch.where(medium, smoothed, inv_l)
    elif rtype == "linear":
        pos_scale = 1.0 / float(rs["factor"])
    elif rtype not in ("default",):
        raise NotImplementedError("rope type %s" % rtype)
    return inv, pos_scale


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def forward(cfg, w, ids, dtype=torch.float64):
    arch = (cfg.get("architectures") or ["?"])[0]
    if arch not in SUPPORTED:
        raise NotImplementedError(arch)
    T = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for k, v in w.items()}
    n_embd = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or n_embd // H
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    qwen3 = arch == "Qwen3ForCausalLM"
    n = len(ids)
    x = T["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)]
    rd = int(hd * cfg.get("partial_rotary_factor", 1.0))   # Phi3's partial rotary
    inv, pos_scale = rope_inv_freq(cfg, rd)
    pos = torch.arange(n, dtype=torch.float64) * pos_scale
    freqs = torch.outer(pos, inv.double())
    emb = torch.cat((freqs, freqs), dim=-1)
    cos, sin = emb.cos().to(dtype)[:, None, :], emb.sin().to(dtype)[:, None, :]
    mask = torch.full((n, n), float("-inf"), dtype=dtype).triu(1)

    def lin(inp, name):
        y = inp @ T[name + ".weight"].T
        b = T.get(name + ".bias")
        return y + b if b is not None else y

    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms(x, T[p + "input_layernorm.weight"], eps)
        if (p + "self_attn.qkv_proj.weight") in T:   # Phi3: fused q, k, v rows
            qkv = lin(h, p + "self_attn.qkv_proj")
            q = qkv[:, :H * hd].reshape(n, H, hd)
            k = qkv[:, H * hd:(H + KV) * hd].reshape(n, KV, hd)
            v = qkv[:, (H + KV) * hd:].reshape(n, KV, hd)
        else:
            q = lin(h, p + "self_attn.q_proj").view(n, H, hd)
            k = lin(h, p + "self_attn.k_proj").view(n, KV, hd)
            v = lin(h, p + "self_attn.v_proj").view(n, KV, hd)
        if qwen3 or (p + "self_attn.q_norm.weight") in T:
            q = rms(q, T[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, T[p + "self_attn.k_norm.weight"], eps)
        q = torch.cat((q[..., :rd] * cos + rotate_half(q[..., :rd]) * sin, q[..., rd:]), -1)
        k = torch.cat((k[..., :rd] * cos + rotate_half(k[..., :rd]) * sin, k[..., rd:]), -1)
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)   # repeat_kv: kv head j serves q heads j*rep..
        v = v.repeat_interleave(rep, dim=1)
        att = torch.einsum("qhd,khd->hqk", q, k) * (hd ** -0.5) + mask
        att = torch.softmax(att, dim=-1)
        o = torch.einsum("hqk,khd->qhd", att, v).reshape(n, H * hd)
        x = x + lin(o, p + "self_attn.o_proj")
        h = rms(x, T[p + "post_attention_layernorm.weight"], eps)
        if (p + "mlp.gate_up_proj.weight") in T:    # Phi3: gate rows, then up rows
            g, u = lin(h, p + "mlp.gate_up_proj").chunk(2, dim=-1)
        else:
            g = lin(h, p + "mlp.gate_proj")
            u = lin(h, p + "mlp.up_proj")
        x = x + lin(torch.nn.functional.silu(g) * u, p + "mlp.down_proj")
    x = rms(x, T["model.norm.weight"], eps)
    head = T.get("lm_head.weight", T["model.embed_tokens.weight"])
    return (x @ head.T).numpy()


def logits(folder, ids, dtype=torch.float64):
    cfg, w = load_folder(folder)
    return forward(cfg, w, list(ids), dtype)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    np.save(sys.argv[2], logits(sys.argv[1], [int(a) for a in sys.argv[3:]]))
