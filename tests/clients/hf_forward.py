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
  - Glm4MoeForCausalLM (modeling_glm4_moe): q/k/v biases, per-head q_norm/k_norm, partial
    rotary (rotate_half on the first head_dim x partial_rotary_factor dims of each head, the
    rest passed through), a dense MLP in the first first_k_dense_replace layers and moe_glm's
    sigmoid-routed experts with shared experts after; the MTP block is not run.
  - GptOssForCausalLM (modeling_gpt_oss): forward_gptoss; MXFP4 experts dequantized as
    transformers' convert_moe_packed_tensors does. gelu="q8_act" rounds the experts' inputs
    to Q8_0 as llama.cpp's CPU product with MXFP4 weights does.

  - DeepseekV3ForCausalLM / DeepseekV2ForCausalLM (modeling_deepseek_v3 / _v2): MLA attention
    (q = q_b(rmsnorm(q_a x)) or q_proj x, split per head into [nope | rope]; kv_a x = [c_kv |
    k_rope (one head)]; kv_b(rmsnorm(c_kv)) = per head [k_nope | v]); rope on adjacent pairs
    (V3 rope_interleave, V2's complex rotation), yarn inv_freq (beta_fast/beta_slow ramp,
    attention factor mscale / mscale_all_dim) and the softmax scale (nope + rope)^-0.5 times
    (0.1 mscale_all_dim ln(factor) + 1)^2; dense MLP below first_k_dense_replace; above it the
    router: V3 sigmoid, + e_score_correction_bias for the choice, groups scored by their top-2
    sum, all but topk_group groups masked to 0.0, top-k, the unbiased sigmoid renormalised
    (+1e-20) when norm_topk_prob, times routed_scaling_factor; V2 softmax, top-k (greedy, or
    group_limited_greedy by each group's max), times routed_scaling_factor; plus the shared
    experts.

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
             "Qwen2MoeForCausalLM", "Qwen3MoeForCausalLM", "OlmoeForCausalLM", "DeepseekV3ForCausalLM",
             "DeepseekV2ForCausalLM", "GptOssForCausalLM", "Glm4MoeForCausalLM", "SmolLM3ForCausalLM",
             "GraniteForCausalLM", "Olmo2ForCausalLM", "GemmaForCausalLM")
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


def yarn_inv_freq(cfg, dim):
    """transformers' _compute_yarn_parameters: the inv_freq blend and the attention factor"""
    rs = cfg.get("rope_scaling") or {}
    base = float(cfg.get("rope_theta", 10000.0))
    pos = base ** (torch.arange(0, dim, 2, dtype=torch.int64).double() / dim)
    if (rs.get("rope_type") or rs.get("type")) != "yarn":
        return 1.0 / pos, 1.0
    factor = float(rs["factor"])
    orig = rs["original_max_position_embeddings"]
    if "original_max_position_embeddings" in rs:
        factor = cfg["max_position_embeddings"] / orig

    def get_mscale(scale, m=1.0):
        return 1.0 if scale <= 1 else 0.1 * m * math.log(scale) + 1.0
    ms, msa = rs.get("mscale"), rs.get("mscale_all_dim")
    att = rs.get("attention_factor")
    if att is None:
        att = get_mscale(factor, ms) / get_mscale(factor, msa) if ms and msa else get_mscale(factor)
    bf, bs = rs.get("beta_fast") or 32, rs.get("beta_slow") or 1

    def corr(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
    lo, hi = max(math.floor(corr(bf)), 0), min(math.ceil(corr(bs)), dim - 1)
    if lo == hi:
        hi += 0.001
    ramp = ((torch.arange(dim // 2, dtype=torch.float64) - lo) / (hi - lo)).clamp(0, 1)
    extra = 1 - ramp
    inv = (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra
    return inv, att


def rope_pairs(x, cos, sin):
    """rotation of adjacent pairs (2i, 2i+1) by frequency i"""
    a, b = x[..., 0::2], x[..., 1::2]
    return torch.stack((a * cos - b * sin, b * cos + a * sin), dim=-1).flatten(-2)


def forward_deepseek(cfg, T, ids, dtype):
    v3 = cfg["architectures"][0] == "DeepseekV3ForCausalLM"
    E, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    nope, rd, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kvr, qr = cfg["kv_lora_rank"], cfg.get("q_lora_rank")
    eps = float(cfg.get("rms_norm_eps", 1e-6))
    n = len(ids)
    inv, att_factor = yarn_inv_freq(cfg, rd)
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    cos, sin = (freqs.cos() * att_factor).to(dtype)[:, None, :], (freqs.sin() * att_factor).to(dtype)[:, None, :]
    scale = (nope + rd) ** -0.5
    rs = cfg.get("rope_scaling") or {}
    if rs.get("mscale_all_dim"):
        f = float(rs["factor"])
        m = 0.1 * rs["mscale_all_dim"] * math.log(f) + 1.0 if f > 1 else 1.0
        scale = scale * m * m
    mask = torch.full((n, n), float("-inf"), dtype=dtype).triu(1)

    def lin(inp, name):
        return inp @ T[name + ".weight"].T

    def mlp(h, q):
        return lin(torch.nn.functional.silu(lin(h, q + "gate_proj")) * lin(h, q + "up_proj"), q + "down_proj")

    x = T["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)]
    for i in range(L):
        p = "model.layers.%d." % i
        h = rms(x, T[p + "input_layernorm.weight"], eps)
        if qr:
            q = lin(rms(lin(h, p + "self_attn.q_a_proj"), T[p + "self_attn.q_a_layernorm.weight"], eps),
                    p + "self_attn.q_b_proj")
        else:
            q = lin(h, p + "self_attn.q_proj")
        q = q.view(n, H, nope + rd)
        ckv = lin(h, p + "self_attn.kv_a_proj_with_mqa")
        c, kr = ckv[:, :kvr], ckv[:, kvr:].view(n, 1, rd)
        kv = lin(rms(c, T[p + "self_attn.kv_a_layernorm.weight"], eps), p + "self_attn.kv_b_proj").view(n, H, nope + vd)
        kn, v = kv[..., :nope], kv[..., nope:]
        qf = torch.cat((q[..., :nope], rope_pairs(q[..., nope:], cos, sin)), -1)
        kf = torch.cat((kn, rope_pairs(kr, cos, sin).expand(n, H, rd)), -1)
        att = torch.softmax(torch.einsum("qhd,khd->hqk", qf, kf) * scale + mask, dim=-1)
        x = x + lin(torch.einsum("hqk,khd->qhd", att, v).reshape(n, H * vd), p + "self_attn.o_proj")
        h = rms(x, T[p + "post_attention_layernorm.weight"], eps)
        if (p + "mlp.gate.weight") not in T:
            x = x + mlp(h, p + "mlp.")
            continue
        X, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
        G, TG = cfg.get("n_group") or 1, cfg.get("topk_group") or 1
        logit = lin(h, p + "mlp.gate")
        if v3:
            scores = torch.sigmoid(logit)
            choice = scores + T[p + "mlp.gate.e_score_correction_bias"]
            gs = choice.view(n, G, X // G).topk(2, dim=-1)[0].sum(-1)
        else:
            scores = torch.softmax(logit, dim=-1)
            choice = scores
            gs = choice.view(n, G, X // G).max(dim=-1).values
        keep = torch.zeros(n, G, dtype=torch.bool)
        keep.scatter_(1, gs.topk(TG, dim=-1)[1], True)
        choice = choice.masked_fill(~keep[:, :, None].expand(n, G, X // G).reshape(n, X), 0.0)
        idx = choice.topk(k, dim=-1)[1]
        wgt = scores.gather(1, idx)
        if cfg.get("norm_topk_prob"):
            wgt = wgt / (wgt.sum(-1, keepdim=True) + 1e-20)
        wgt = wgt * cfg.get("routed_scaling_factor", 1.0)
        out = torch.zeros_like(h)
        for e in range(X):
            out = out + (wgt * (idx == e)).sum(-1, keepdim=True) * mlp(h, p + "mlp.experts.%d." % e)
        x = x + out + mlp(h, p + "mlp.shared_experts.")
    x = rms(x, T["model.norm.weight"], eps)
    head = T.get("lm_head.weight", T["model.embed_tokens.weight"])
    return (x @ head.T).numpy()


FP4_VALUES = [+0.0, +0.5, +1.0, +1.5, +2.0, +3.0, +4.0, +6.0, -0.0, -0.5, -1.0, -1.5, -2.0, -3.0, -4.0, -6.0]


def mxfp4_dequant(blocks, scales):
    """transformers integrations/mxfp4.py convert_moe_packed_tensors, in float64: blocks
    [E, R, G, 16] and scales [E, R, G] (uint8) -> [E, 32 G, R]: value 2i of a block in byte i's
    low nibble, 2i+1 in its high one, times 2^(scale - 127), the last two axes swapped."""
    b = torch.from_numpy(np.asarray(blocks, np.uint8).astype(np.int64))
    e = torch.from_numpy(np.asarray(scales, np.uint8).astype(np.int64)) - 127
    lut = torch.tensor(FP4_VALUES, dtype=torch.float64)
    out = torch.stack((lut[b & 15], lut[b >> 4]), dim=-1).reshape(*b.shape[:-1], 32)
    out = out * torch.pow(2.0, e.double())[..., None]
    return out.reshape(b.shape[0], b.shape[1], -1).transpose(1, 2).contiguous()


def yarn_inv_freq_oss(cfg, dim):
    """transformers modeling_rope_utils _compute_yarn_parameters: the blend of interpolated
    and extrapolated frequencies over a linear ramp between the correction dims of beta_fast
    and beta_slow (not rounded when rope_scaling.truncate is false), and the attention factor
    0.1 ln(factor) + 1 that scales cos and sin."""
    rs = cfg["rope_scaling"]
    base, factor = float(cfg["rope_theta"]), float(rs["factor"])
    orig = rs["original_max_position_embeddings"]
    att = rs.get("attention_factor") or 0.1 * math.log(factor) + 1.0

    def corr(rot):
        return (dim * math.log(orig / (rot * 2 * math.pi))) / (2 * math.log(base))
    lo, hi = corr(rs.get("beta_fast", 32)), corr(rs.get("beta_slow", 1))
    if rs.get("truncate", True):
        lo, hi = math.floor(lo), math.ceil(hi)
    lo, hi = max(lo, 0), min(hi, dim - 1)
    if lo == hi:
        hi += 0.001
    pos = base ** (torch.arange(0, dim, 2, dtype=torch.int64).double() / dim)
    ramp = torch.clamp((torch.arange(dim // 2, dtype=torch.float64) - lo) / (hi - lo), 0, 1)
    extra = 1 - ramp
    return (1.0 / (factor * pos)) * (1 - extra) + (1.0 / pos) * extra, att


def q8_0(x):
    """x as ggml's CPU backend hands it to a matrix product with MXFP4 weights (their vec_dot
    takes Q8_0: quantize_row_q8_0_ref over blocks of 32 of each row): d = amax / 127 stored as
    F16, q = roundf(x / d) (half away from zero), x' = q * d; float32 steps."""
    f = x.float().reshape(*x.shape[:-1], -1, 32)
    amax = f.abs().amax(-1, keepdim=True)
    d = amax / 127
    idv = torch.where(d != 0, 1.0 / d, torch.zeros_like(d))
    v = f * idv
    q = torch.sign(v) * torch.floor(v.abs() + 0.5)
    return (q.double() * d.half().double()).reshape(x.shape).to(x.dtype)


def forward_gptoss(cfg, w, ids, dtype=torch.float64, q8_act=False):
    """GptOssForCausalLM (transformers modeling_gpt_oss): attention with q/k/v/o biases, a
    learned sink logit per head appended to every softmax row and dropped after it, the
    sliding window on layer_types' sliding_attention layers (even ones), YaRN RoPE on the two
    halves of each head; the router's logits (with its bias) -> top experts_per_token -> their
    softmax; each expert's gate_up = h @ W + b split even (gate, clamped <= limit) / odd (up,
    clamped to [-limit, limit]), ((up + 1) * gate * sigmoid(1.702 gate)) @ down + b. MXFP4
    experts are dequantized first (mxfp4_dequant). q8_act: the experts' inputs rounded as
    llama.cpp's CPU backend rounds them for MXFP4 weights (q8_0), to tell its arithmetic from
    a wrong weight."""
    T = {}
    for k, v in w.items():
        if k.endswith("_blocks"):
            T[k[:-len("_blocks")]] = mxfp4_dequant(v, w[k[:-len("_blocks")] + "_scales"]).to(dtype)
        elif not k.endswith("_scales"):
            T[k] = torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype)
    E, H, KV, hd = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"]
    eps, k_top, limit = float(cfg["rms_norm_eps"]), cfg["num_experts_per_tok"], cfg.get("swiglu_limit", 7.0)
    n = len(ids)
    inv, att = yarn_inv_freq_oss(cfg, hd)
    freqs = torch.outer(torch.arange(n, dtype=torch.float64), inv)
    cos, sin = (freqs.cos() * att).to(dtype)[:, None, :], (freqs.sin() * att).to(dtype)[:, None, :]
    qpos, kpos = torch.arange(n)[:, None], torch.arange(n)[None, :]
    full = torch.where(kpos > qpos, float("-inf"), 0.0).to(dtype)
    slide = torch.where((kpos > qpos) | (qpos - kpos >= cfg["sliding_window"]), float("-inf"), 0.0).to(dtype)
    types = cfg.get("layer_types") or ["sliding_attention" if i % 2 == 0 else "full_attention"
                                       for i in range(cfg["num_hidden_layers"])]

    def lin(inp, name):
        return inp @ T[name + ".weight"].T + T[name + ".bias"]

    def rot(x):
        a, b = x.chunk(2, dim=-1)
        return torch.cat((a * cos - b * sin, b * cos + a * sin), dim=-1)

    x = T["model.embed_tokens.weight"][torch.tensor(ids, dtype=torch.long)]
    for i in range(cfg["num_hidden_layers"]):
        p = "model.layers.%d." % i
        h = rms(x, T[p + "input_layernorm.weight"], eps)
        q = rot(lin(h, p + "self_attn.q_proj").view(n, H, hd))
        k = rot(lin(h, p + "self_attn.k_proj").view(n, KV, hd)).repeat_interleave(H // KV, dim=1)
        v = lin(h, p + "self_attn.v_proj").view(n, KV, hd).repeat_interleave(H // KV, dim=1)
        a = torch.einsum("qhd,khd->hqk", q, k) * (hd ** -0.5)
        a = a + (slide if types[i] == "sliding_attention" else full)
        a = torch.cat((a, T[p + "self_attn.sinks"].view(H, 1, 1).expand(H, n, 1)), dim=-1)
        a = torch.softmax(a - a.max(-1, keepdim=True).values, dim=-1)[..., :-1]
        x = x + lin(torch.einsum("hqk,khd->qhd", a, v).reshape(n, H * hd), p + "self_attn.o_proj")
        h = rms(x, T[p + "post_attention_layernorm.weight"], eps)
        top, idx = torch.topk(lin(h, p + "mlp.router"), k_top, dim=-1)
        top = torch.softmax(top, dim=-1)
        out = torch.zeros_like(h)
        for e in range(cfg["num_local_experts"]):
            q_ = p + "mlp.experts."
            hq = q8_0(h) if q8_act else h
            gu = hq @ T[q_ + "gate_up_proj"][e] + T[q_ + "gate_up_proj_bias"][e]
            g, u = gu[:, ::2].clamp(max=limit), gu[:, 1::2].clamp(min=-limit, max=limit)
            act = (u + 1) * (g * torch.sigmoid(g * 1.702))
            if q8_act:
                act = q8_0(act)
            y = act @ T[q_ + "down_proj"][e] + T[q_ + "down_proj_bias"][e]
            out = out + (top * (idx == e)).sum(-1, keepdim=True) * y
        x = x + out
    x = rms(x, T["model.norm.weight"], eps)
    return (x @ T["lm_head.weight"].T).numpy()


def moe_glm(cfg, T, p, h, lin):
    """GLM-4.5's MoE block (transformers Glm4MoeMoE, its router Glm4MoeTopkRouter = DeepSeek-V3's):
    the sigmoid of the router's float32 logits; experts chosen by sigmoid + e_score_correction_bias
    (n_group groups scored by the sum of their top 2, the best topk_group kept, the others 0),
    the top num_experts_per_tok; their weights the unbiased sigmoids, divided by their sum (+1e-20)
    when norm_topk_prob, times routed_scaling_factor; each expert down(silu(gate h) * up h); plus
    the shared experts' MLP (mlp.shared_experts.*). The MTP block (layer num_hidden_layers) is
    not used."""
    E, k = cfg["n_routed_experts"], cfg["num_experts_per_tok"]
    ng, tg = cfg.get("n_group", 1), cfg.get("topk_group", 1)
    n = h.shape[0]
    scores = (h.float() @ T[p + "gate.weight"].float().T).sigmoid()
    choice = scores + T[p + "gate.e_score_correction_bias"].float()
    group = choice.view(n, ng, E // ng).topk(2, dim=-1)[0].sum(-1)
    keep = torch.zeros_like(group).scatter_(1, torch.topk(group, tg, dim=-1)[1], 1)
    keep = keep.unsqueeze(-1).expand(n, ng, E // ng).reshape(n, E)
    idx = torch.topk(choice.masked_fill(~keep.bool(), 0.0), k, dim=-1)[1]
    top = scores.gather(1, idx)
    if cfg.get("norm_topk_prob", True):
        top = top / (top.sum(-1, keepdim=True) + 1e-20)
    top = (top * cfg.get("routed_scaling_factor", 1.0)).to(h.dtype)
    out = torch.zeros_like(h)
    for x in range(E):
        q = p + "experts.%d." % x
        y = lin(torch.nn.functional.silu(lin(h, q + "gate_proj")) * lin(h, q + "up_proj"), q + "down_proj")
        out = out + (top * (idx == x)).sum(-1, keepdim=True) * y
    q = p + "shared_experts."
    return out + lin(torch.nn.functional.silu(lin(h, q + "gate_proj")) * lin(h, q + "up_proj"), q + "down_proj")


def forward(cfg, w, ids, dtype=torch.float64, gelu="exact"):
    cfg, w = unwrap(cfg, w)
    arch = (cfg.get("architectures") or ["?"])[0]
    if arch not in SUPPORTED:
        raise NotImplementedError(arch)
    if arch == "GptOssForCausalLM":
        return forward_gptoss(cfg, w, ids, dtype, q8_act=gelu == "q8_act")
    if arch in GEMMA:
        T = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for k, v in w.items()}
        return forward_gemma(cfg, T, ids, dtype, gelu)
    if arch.startswith("Deepseek"):
        T = {k: torch.from_numpy(np.asarray(v, dtype=np.float64)).to(dtype) for k, v in w.items()}
        return forward_deepseek(cfg, T, ids, dtype)
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
        if (p + "mlp.gate.weight") in T and arch == "Glm4MoeForCausalLM":
            x = x + moe_glm(cfg, T, p + "mlp.", h, lin)
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
