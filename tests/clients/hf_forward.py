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
  - GraniteForCausalLM: Llama's with embeddings times embedding_multiplier, attention scaled by
    attention_multiplier, each sublayer's output times residual_multiplier before it is added,
    logits divided by logits_scaling; head_dim is hidden / heads (GraniteAttention).
  - Olmo2ForCausalLM: no norm before the attention or the MLP, RMSNorm of each one's output
    (post_attention_layernorm, post_feedforward_layernorm) before it is added; q_norm/k_norm
    over the whole projection (as OLMoE).
  - SmolLM3ForCausalLM: Llama's layers, those whose no_rope_layers entry is 0 without RoPE.
  - Phi3ForCausalLM: fused qkv_proj (q, k, v rows) and gate_up_proj (gate, up rows),
    partial_rotary_factor; rope_scaling longrope/su (Phi-4-mini): short_factor (the sequence is
    within original_max_position_embeddings) dividing the frequencies, cos/sin times
    sqrt(1 + ln(max_pos / orig) / ln(orig)) when max_pos > orig.
  - GemmaForCausalLM (modeling_gemma): as Gemma 2 below with Llama's two norms (before the
    attention and before the MLP), attention scaled by head_dim^-0.5, no window or softcaps.
  - Gemma2ForCausalLM / Gemma3ForCausalLM (modeling_gemma2 / modeling_gemma3, text):
    embeddings times sqrt(hidden_size) (in the weights' dtype: exact in float64 for
    hidden 64), Gemma RMSNorm x * rsqrt(mean(x^2) + eps) * (1 + w), pre and post attention
    norms (input_layernorm, post_attention_layernorm) and pre and post feedforward norms,
    MLP down(gelu_tanh(gate(x)) * up(x)), attention scaled by query_pre_attn_scalar^-0.5,
    attention logits softcapped (gemma2: tanh(a / cap) * cap, before the mask), sliding
    window (a query at q sees keys k with q - k < sliding_window on sliding layers: gemma2
    layers 0, 2, ...; gemma3 every layer but each sliding_window_pattern-th), gemma3 q_norm /
    k_norm (Gemma RMSNorm over head_dim, before RoPE) and local / global RoPE bases
    (rope_local_base_freq on sliding layers, rope_theta and rope_scaling on global ones),
    final logits softcapped (final_logit_softcapping), lm_head tied to the embeddings
    (a stored lm_head.weight is ignored, as tie_word_embeddings=True does in HF).
    gelu="ggml" replaces the exact GELU by llama.cpp's CPU one (ggml_vec_geglu_f32 with
    GGML_GELU_FP16: the input rounded to F16, a table of F16 results), for telling a
    weightfs error from that approximation.

  - Gemma3ForConditionalGeneration, Mistral3ForConditionalGeneration (multimodal releases):
    their text model, Gemma3ForCausalLM or MistralForCausalLM
    over text_config's fields and the language model's tensors (language_model.model.* or
    model.language_model.*), the vision tower and projector unused (text-only input).

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
             "Phi3ForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM", "MixtralForCausalLM",
             "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "OlmoeForCausalLM", "SmolLM3ForCausalLM",
             "GraniteForCausalLM", "Olmo2ForCausalLM",
             "GemmaForCausalLM")
GEMMA = ("GemmaForCausalLM", "Gemma2ForCausalLM", "Gemma3ForCausalLM")


# a multimodal release -> the class of its text model
TEXT_OF = {"Gemma3ForConditionalGeneration": "Gemma3ForCausalLM",
           "Mistral3ForConditionalGeneration": "MistralForCausalLM"}


def unwrap(cfg, w):
    """The text model of a multimodal release: config.json's text_config over its root (as
    its text model is built from it), the language model's tensors under their text model
    names (language_model.X -> X, model.language_model.X -> model.X), nothing else."""
    arch = (cfg.get("architectures") or ["?"])[0]
    if arch not in TEXT_OF:
        return cfg, w
    c = {k: v for k, v in cfg.items() if k not in ("text_config", "vision_config")}
    c.update(cfg.get("text_config") or {})
    c["architectures"] = [TEXT_OF[arch]]
    t = {}
    for n, a in w.items():
        if n.startswith("language_model."):
            t[n[len("language_model."):]] = a
        elif n.startswith("model.language_model."):
            t["model." + n[len("model.language_model."):]] = a
        elif n == "lm_head.weight":
            t[n] = a
    return c, t


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
    elif rtype in ("longrope", "su"):   # short sequences only (within the original context)
        inv = inv / torch.tensor(rs["short_factor"], dtype=torch.float64)
    elif rtype not in ("default",):
        raise NotImplementedError("rope type %s" % rtype)
    return inv, pos_scale


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def rms(x, w, eps):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + eps) * w


def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x.pow(3))))


_GELU_TABLE = []


def gelu_table():
    """ggml_table_gelu_f16 as ggml-cpu.c fills it: for every F16 value f, the F16 of
    ggml_gelu_f32(f) = 0.5f*f*(1.0f + tanhf(SQRT_2_OVER_PI*f*(1.0f + GELU_COEF_A*f*f))), in
    float32 with the C library's tanhf (through ctypes: numpy's and torch's float32 tanh
    differ from it by an ulp now and then, which moves a few F16 results)."""
    if not _GELU_TABLE:
        import ctypes
        import ctypes.util
        m = ctypes.CDLL(ctypes.util.find_library("m"))
        m.tanhf.restype = ctypes.c_float
        m.tanhf.argtypes = [ctypes.c_float]
        f = np.arange(65536, dtype=np.uint32).astype(np.uint16).view(np.float16).astype(np.float32)
        c, a, half, one = np.float32(0.79788456080286535587989211986876), np.float32(0.044715), \
            np.float32(0.5), np.float32(1.0)
        with np.errstate(all="ignore"):
            inner = c * f * (one + a * f * f)
            t = np.array([m.tanhf(float(v)) for v in inner], np.float32)
            out = (half * f * (one + t)).astype(np.float16)
        _GELU_TABLE.append(torch.from_numpy(out.astype(np.float64)))
    return _GELU_TABLE[0]


def gelu_ggml(x):
    """llama.cpp CPU (ggml_vec_geglu_f32, GGML_GELU_FP16): x <= -10 -> 0, x >= 10 -> x,
    else the table entry of x rounded to F16."""
    idx = torch.from_numpy(x.to(torch.float32).to(torch.float16).numpy().view(np.uint16).astype(np.int64))
    g = gelu_table()[idx].to(x.dtype)
    return torch.where(x <= -10, torch.zeros_like(x), torch.where(x >= 10, x, g))


def forward_gemma(cfg, T, ids, dtype, gelu="exact"):
    arch = cfg["architectures"][0]
    g3 = arch == "Gemma3ForCausalLM"
    g1 = arch == "GemmaForCausalLM"
    E = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or 256
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    L = cfg["num_hidden_layers"]
    n = len(ids)
    scale = float(hd if g1 else cfg.get("query_pre_attn_scalar", 256)) ** -0.5
    attn_cap = cfg.get("attn_logit_softcapping") if not (g3 or g1) else None
    final_cap = cfg.get("final_logit_softcapping")
    window = cfg.get("sliding_window") or 4096
    if g1:
        types = ["full_attention"] * L
        final_cap = None
    elif g3:
        pattern = cfg.get("sliding_window_pattern", 6)
        types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % pattern else "full_attention"
                                           for i in range(L)]
    else:
        types = cfg.get("layer_types") or ["sliding_attention" if (i + 1) % 2 else "full_attention"
                                           for i in range(L)]

    def norm(x, wname):
        return rms(x, 1.0 + T[wname], eps)

    def rope_tables(theta, rs):
        c = dict(cfg, rope_theta=theta, rope_scaling=rs, rope_parameters=None)
        inv, pos_scale = rope_inv_freq(c, hd)
        pos = torch.arange(n, dtype=torch.float64) * pos_scale
        emb = torch.cat((torch.outer(pos, inv.double()),) * 2, dim=-1)
        return emb.cos().to(dtype)[:, None, :], emb.sin().to(dtype)[:, None, :]
    glob = rope_tables(float(cfg.get("rope_theta", 10000.0)), cfg.get("rope_scaling"))
    local = rope_tables(float(cfg.get("rope_local_base_freq", 10000.0)), None) if g3 else glob
    qi = torch.arange(n)[:, None]
    ki = torch.arange(n)[None, :]
    causal = torch.where(ki <= qi, 0.0, float("-inf")).to(dtype)
    sliding = torch.where((ki <= qi) & (qi - ki < window), 0.0, float("-inf")).to(dtype)
    act = gelu_ggml if gelu == "ggml" else gelu_tanh
    x = T["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)]
    x = x * torch.tensor(E ** 0.5, dtype=dtype)
    for i in range(L):
        p = "model.layers.%d." % i
        slide = types[i] == "sliding_attention"
        cos, sin = local if slide else glob
        h = norm(x, p + "input_layernorm.weight")
        q = (h @ T[p + "self_attn.q_proj.weight"].T).view(n, H, hd)
        k = (h @ T[p + "self_attn.k_proj.weight"].T).view(n, KV, hd)
        v = (h @ T[p + "self_attn.v_proj.weight"].T).view(n, KV, hd)
        if g3:
            q = norm(q, p + "self_attn.q_norm.weight")
            k = norm(k, p + "self_attn.k_norm.weight")
        q = q * cos + rotate_half(q) * sin
        k = k * cos + rotate_half(k) * sin
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)
        v = v.repeat_interleave(rep, dim=1)
        att = torch.einsum("qhd,khd->hqk", q, k) * scale
        if attn_cap:
            att = torch.tanh(att / attn_cap) * attn_cap
        att = torch.softmax(att + (sliding if slide else causal), dim=-1)
        o = torch.einsum("hqk,khd->qhd", att, v).reshape(n, H * hd)
        o = o @ T[p + "self_attn.o_proj.weight"].T
        if g1:
            x = x + o
            h = norm(x, p + "post_attention_layernorm.weight")
            m = act(h @ T[p + "mlp.gate_proj.weight"].T) * (h @ T[p + "mlp.up_proj.weight"].T)
            x = x + m @ T[p + "mlp.down_proj.weight"].T
            continue
        x = x + norm(o, p + "post_attention_layernorm.weight")
        h = norm(x, p + "pre_feedforward_layernorm.weight")
        m = act(h @ T[p + "mlp.gate_proj.weight"].T) * (h @ T[p + "mlp.up_proj.weight"].T)
        m = m @ T[p + "mlp.down_proj.weight"].T
        x = x + norm(m, p + "post_feedforward_layernorm.weight")
    x = norm(x, "model.norm.weight")
    out = x @ T["model.embed_tokens.weight"].T
    if final_cap:
        out = torch.tanh(out / final_cap) * final_cap
    return out.numpy()


def moe_mixtral(cfg, T, p, h, lin):
    """Mixtral's sparse block (transformers MixtralSparseMoeBlock / MixtralTopKRouter): the
    router's softmax over the experts in float32, the top num_experts_per_tok, their weights
    divided by their sum; each chosen expert is w2(silu(w1 h) * w3 h)."""
    E, k = cfg["num_local_experts"], cfg["num_experts_per_tok"]
    probs = torch.softmax(lin(h, p + "gate").float(), dim=-1)
    top, idx = torch.topk(probs, k, dim=-1)
    top = (top / top.sum(-1, keepdim=True)).to(h.dtype)
    out = torch.zeros_like(h)
    for x in range(E):
        q = p + "experts.%d." % x
        y = lin(torch.nn.functional.silu(lin(h, q + "w1")) * lin(h, q + "w3"), q + "w2")
        wgt = (top * (idx == x)).sum(-1, keepdim=True)
        out = out + wgt * y
    return out


def moe_qwen(cfg, T, p, h, lin):
    """Qwen2-MoE's and Qwen3-MoE's sparse block (transformers Qwen2MoeSparseMoeBlock and
    Qwen3MoeSparseMoeBlock): the router's float32 softmax, the top num_experts_per_tok, divided
    by their sum when norm_topk_prob; each expert down(silu(gate h) * up h); Qwen2-MoE adds
    sigmoid(shared_expert_gate h) * shared_expert(h)."""
    E, k = cfg["num_experts"], cfg["num_experts_per_tok"]
    probs = torch.softmax(lin(h, p + "gate").float(), dim=-1)
    top, idx = torch.topk(probs, k, dim=-1)
    if cfg.get("norm_topk_prob"):
        top = top / top.sum(-1, keepdim=True)
    top = top.to(h.dtype)
    out = torch.zeros_like(h)
    for x in range(E):
        q = p + "experts.%d." % x
        y = lin(torch.nn.functional.silu(lin(h, q + "gate_proj")) * lin(h, q + "up_proj"), q + "down_proj")
        out = out + (top * (idx == x)).sum(-1, keepdim=True) * y
    if (p + "shared_expert_gate.weight") in T:
        q = p + "shared_expert."
        y = lin(torch.nn.functional.silu(lin(h, q + "gate_proj")) * lin(h, q + "up_proj"), q + "down_proj")
        out = out + torch.sigmoid(lin(h, p + "shared_expert_gate")) * y
    return out


def forward(cfg, w, ids, dtype=torch.float64, gelu="exact"):
    cfg, w = unwrap(cfg, w)
    arch = (cfg.get("architectures") or ["?"])[0]
    if arch not in SUPPORTED:
        raise NotImplementedError(arch)
    if arch in GEMMA:
        T = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for k, v in w.items()}
        return forward_gemma(cfg, T, ids, dtype, gelu)
    T = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for k, v in w.items()}
    n_embd = cfg["hidden_size"]
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads") or H
    hd = cfg.get("head_dim") or n_embd // H
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    qwen3 = arch == "Qwen3ForCausalLM"
    granite = arch == "GraniteForCausalLM"
    if granite:
        hd = n_embd // H
    att_scale = cfg.get("attention_multiplier", hd ** -0.5) if granite else hd ** -0.5
    res = cfg.get("residual_multiplier", 1.0) if granite else 1.0
    n = len(ids)
    x = T["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)]
    if granite:
        x = x * cfg.get("embedding_multiplier", 1.0)
    rd = int(hd * cfg.get("partial_rotary_factor", 1.0))   # Phi3's partial rotary
    inv, pos_scale = rope_inv_freq(cfg, rd)
    pos = torch.arange(n, dtype=torch.float64) * pos_scale
    freqs = torch.outer(pos, inv.double())
    emb = torch.cat((freqs, freqs), dim=-1)
    rs = cfg.get("rope_scaling") or {}
    if (rs.get("rope_type") or rs.get("type")) in ("longrope", "su"):
        orig = cfg["original_max_position_embeddings"]
        f = cfg["max_position_embeddings"] / orig
        emb_scale = math.sqrt(1 + math.log(f) / math.log(orig)) if f > 1 else 1.0
    else:
        emb_scale = 1.0
    cos, sin = (emb.cos() * emb_scale).to(dtype)[:, None, :], (emb.sin() * emb_scale).to(dtype)[:, None, :]
    mask = torch.full((n, n), float("-inf"), dtype=dtype).triu(1)

    def lin(inp, name):
        y = inp @ T[name + ".weight"].T
        b = T.get(name + ".bias")
        return y + b if b is not None else y

    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        olmo2 = arch == "Olmo2ForCausalLM"
        h = x if olmo2 else rms(x, T[p + "input_layernorm.weight"], eps)
        if (p + "self_attn.qkv_proj.weight") in T:   # Phi3: fused q, k, v rows
            qkv = lin(h, p + "self_attn.qkv_proj")
            q = qkv[:, :H * hd].reshape(n, H, hd)
            k = qkv[:, H * hd:(H + KV) * hd].reshape(n, KV, hd)
            v = qkv[:, (H + KV) * hd:].reshape(n, KV, hd)
        else:
            q = lin(h, p + "self_attn.q_proj").view(n, H, hd)
            k = lin(h, p + "self_attn.k_proj").view(n, KV, hd)
            v = lin(h, p + "self_attn.v_proj").view(n, KV, hd)
        if (p + "self_attn.q_norm.weight") in T and T[p + "self_attn.q_norm.weight"].shape[0] == H * hd:
            # OLMoE: over the whole projection, before the head split
            q = rms(q.reshape(n, H * hd), T[p + "self_attn.q_norm.weight"], eps).view(n, H, hd)
            k = rms(k.reshape(n, KV * hd), T[p + "self_attn.k_norm.weight"], eps).view(n, KV, hd)
        elif qwen3 or (p + "self_attn.q_norm.weight") in T:
            q = rms(q, T[p + "self_attn.q_norm.weight"], eps)
            k = rms(k, T[p + "self_attn.k_norm.weight"], eps)
        nope = cfg.get("no_rope_layers")   # SmolLM3: 0 for a layer without rope
        if not (nope and not nope[i]):
            q = torch.cat((q[..., :rd] * cos + rotate_half(q[..., :rd]) * sin, q[..., rd:]), -1)
            k = torch.cat((k[..., :rd] * cos + rotate_half(k[..., :rd]) * sin, k[..., rd:]), -1)
        rep = H // KV
        k = k.repeat_interleave(rep, dim=1)   # repeat_kv: kv head j serves q heads j*rep..
        v = v.repeat_interleave(rep, dim=1)
        att = torch.einsum("qhd,khd->hqk", q, k) * att_scale + mask
        att = torch.softmax(att, dim=-1)
        o = torch.einsum("hqk,khd->qhd", att, v).reshape(n, H * hd)
        o = lin(o, p + "self_attn.o_proj")
        if olmo2:
            x = x + rms(o, T[p + "post_attention_layernorm.weight"], eps)
            g, u = lin(x, p + "mlp.gate_proj"), lin(x, p + "mlp.up_proj")
            m = lin(torch.nn.functional.silu(g) * u, p + "mlp.down_proj")
            x = x + rms(m, T[p + "post_feedforward_layernorm.weight"], eps)
            continue
        x = x + o * res
        h = rms(x, T[p + "post_attention_layernorm.weight"], eps)
        if (p + "block_sparse_moe.gate.weight") in T:
            x = x + moe_mixtral(cfg, T, p + "block_sparse_moe.", h, lin)
            continue
        if (p + "mlp.gate.weight") in T:
            x = x + moe_qwen(cfg, T, p + "mlp.", h, lin)
            continue
        if (p + "mlp.gate_up_proj.weight") in T:    # Phi3: gate rows, then up rows
            g, u = lin(h, p + "mlp.gate_up_proj").chunk(2, dim=-1)
        else:
            g = lin(h, p + "mlp.gate_proj")
            u = lin(h, p + "mlp.up_proj")
        x = x + lin(torch.nn.functional.silu(g) * u, p + "mlp.down_proj") * res
    x = rms(x, T["model.norm.weight"], eps)
    head = T.get("lm_head.weight", T["model.embed_tokens.weight"])
    out = x @ head.T
    if granite:
        out = out / cfg.get("logits_scaling", 1.0)
    return out.numpy()


def logits(folder, ids, dtype=torch.float64, gelu="exact", config=None):
    """config: keys to override in config.json (for negative controls)"""
    cfg, w = unwrap(*load_folder(folder))
    cfg.update(config or {})
    return forward(cfg, w, list(ids), dtype, gelu)


if __name__ == "__main__":
    if len(sys.argv) < 4:
        print(__doc__)
        sys.exit(2)
    np.save(sys.argv[2], logits(sys.argv[1], [int(a) for a in sys.argv[3:]]))
