#!/usr/bin/python3
"""Tiny Hugging Face model folders with random weights, for the test references.

    make(folder, kind, tokenizer_dir, seed=0) -> folder
kinds: "llama" (GQA 4/2 heads, Llama-3 rope_scaling, untied lm_head), "llama_tied"
(no lm_head.weight, attention_bias), "qwen2" (q/k/v biases, tied), "qwen3" (q_norm/k_norm,
explicit head_dim 32 != n_embd/n_head), "phi3" (fused qkv_proj and gate_up_proj, partial
rotary 0.5, GQA), "gemma2" (pre/post attention and feedforward norms stored as w for
1 + w, head_dim 16 = query_pre_attn_scalar, attention and final logit softcapping 2.0 and
3.0 so that they matter, sliding_window 16, tied, with a redundant lm_head.weight the
converter must drop), "gemma3" (gemma3_text: the same norms plus q_norm/k_norm, 6 layers so
that llama.cpp's default pattern of 6 gives 5 local layers (rope_local_base_freq 10000) and
one global (rope_theta 1e6), sliding_window 16, tied, no softcapping), "mixtral" (Llama's
attention, 4 experts per layer (block_sparse_moe.experts.X.w1/w2/w3) and the router
block_sparse_moe.gate, top-2; the counts can be changed with config=), "qwen2moe" (Qwen2's
attention, 4 experts of 32 (mlp.experts.X.*_proj), top-2 without renormalising, a shared
expert of 48 and its gate), "qwen3moe" (Qwen3's attention, 4 experts of 32, top-2 renormalised),
"olmoe" (multi-head attention with q_norm/k_norm over the whole projection, 4 experts of
intermediate_size, top-2 not renormalised), "glm4moe" (GLM-4.5: q/k/v biases, q_norm/k_norm,
head_dim 32 != n_embd/n_head with partial rotary 0.5, layer 0 a dense MLP
(first_k_dense_replace 1), then 4 experts of 32 routed by sigmoid + e_score_correction_bias,
top-2 renormalised and scaled by routed_scaling_factor 2.5, one shared expert; and its MTP
block as layer num_hidden_layers: a MoE layer plus eh_proj, enorm, hnorm and
shared_head.norm). 2 layers (gemma3: 6; glm4moe: 2 and the MTP block),
n_embd 64, n_ff 128. The vocab is the real tokenizer.json in tokenizer_dir (copied with
tokenizer_config.json); vocab_size is its size. A tokenizer_dir with tokenizer.model and no
tokenizer.json (tests/clients/spm_model.py) gives a SentencePiece folder: tokenizer.model,
tokenizer_config.json and added_tokens.json are copied, vocab_size is the number of pieces
unless given.

"mistral" (MistralForCausalLM: Llama's layers, head_dim 32 apart from n_embd / n_head,
no sliding window, untied), "smollm3" (SmolLM3ForCausalLM: 4 layers, the 4th without rope
(no_rope_layers), tied), "granite" (GraniteForCausalLM: embedding, attention, residual and
logits multipliers, a head_dim, tied), "olmo2" (Olmo2ForCausalLM: norms after each sublayer
only, q_norm/k_norm over the whole projection, multi-head), "gemma" (GemmaForCausalLM: Llama's
layout, norms stored as w for 1 + w, GELU, head_dim 16, tied with a redundant lm_head.weight
the converter drops). wrap="old" or "new" (gemma3, mistral): the text model inside its multimodal release's checkpoint
(Gemma3ForConditionalGeneration: config.json's text_config, a small SigLIP vision tower and
the projector; Mistral3ForConditionalGeneration: a Pixtral tower and Mistral 3's projector), named as transformers saved it before 4.52 (language_model.model.*,
vision_tower.*, multi_modal_projector.*) or since (model.language_model.*,
model.vision_tower.*, model.multi_modal_projector.*).

Options of make(): vocab_size= (config and embedding rows), embd_rows= (the embedding's rows
instead, more than the vocabulary as Gemma 3's 262208 for 262144 tokens), fused= "" or ".weight"
(qwen2moe, qwen3moe: each layer's experts written in transformers 5's fused form,
mlp.experts.gate_up_proj [E, 2F, H] (gate rows, then up) and mlp.experts.down_proj [E, H, F],
with that suffix; the same values as the per-expert form), dtype= "F32" (default), "F16"
or "BF16" (every tensor stored so; BF16 by truncation of the float32 draw), dims=(n_embd,
n_head, n_head_kv, n_ff, n_layer) in place of the defaults, shards=N
(model-0000i-of-0000N.safetensors plus model.safetensors.index.json, tensors dealt out
by shard_of(name) or round-robin over the sorted names), config= {extra config.json keys}.
"""
import json
import os
import shutil
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402

ARCHS = {"llama": "LlamaForCausalLM", "llama_tied": "LlamaForCausalLM",
         "qwen2": "Qwen2ForCausalLM", "qwen3": "Qwen3ForCausalLM", "phi3": "Phi3ForCausalLM",
         "gemma2": "Gemma2ForCausalLM", "gemma3": "Gemma3ForCausalLM", "mixtral": "MixtralForCausalLM",
         "qwen2moe": "Qwen2MoeForCausalLM", "qwen3moe": "Qwen3MoeForCausalLM", "olmoe": "OlmoeForCausalLM",
         "deepseek_v3": "DeepseekV3ForCausalLM", "deepseek_v2": "DeepseekV2ForCausalLM",
         "gptoss": "GptOssForCausalLM", "gptoss_mxfp4": "GptOssForCausalLM", "glm4moe": "Glm4MoeForCausalLM",
         "mistral": "MistralForCausalLM", "smollm3": "SmolLM3ForCausalLM",
         "granite": "GraniteForCausalLM", "olmo2": "Olmo2ForCausalLM",
         "gemma": "GemmaForCausalLM"}


def n_vocab_of(tokenizer_dir):
    if not os.path.exists(os.path.join(tokenizer_dir, "tokenizer.json")):
        import spm_model
        with open(os.path.join(tokenizer_dir, "tokenizer.model"), "rb") as f:
            return len(spm_model.parse(f.read())[0])
    with open(os.path.join(tokenizer_dir, "tokenizer.json"), encoding="utf-8") as f:
        t = json.load(f)
    ids = list(t["model"]["vocab"].values()) + [a["id"] for a in t.get("added_tokens", [])]
    return max(ids) + 1


def _deepseek_cfg(kind, cfg):
    """DeepSeek V3: 3 layers (layer 0 dense, first_k_dense_replace 1) and an MTP layer 3 the
    converter skips; MLA with q_lora_rank 32, kv_lora_rank 32, nope 16, rope 8, v 16; 8 routed
    experts of 32 in 4 groups, 2 groups kept, top-3 by sigmoid + e_score_correction_bias,
    renormalised and scaled by 2.5; one shared expert; yarn rope (factor 4, mscale_all_dim 1).
    The bias is positive, so every kept score is above transformers' 0.0 mask of the groups
    it drops (llama.cpp masks with -inf): both pick the same experts. DeepSeek V2-Lite: no
    q_lora_rank (q_proj), 4 experts of 32, top-2 softmax (greedy, one group), no renorm,
    2 shared experts, no yarn. head_dim = qk_rope_head_dim, as transformers' config sets it."""
    v3 = kind == "deepseek_v3"
    cfg.update(model_type=kind, num_hidden_layers=3 if v3 else 2, num_key_value_heads=cfg["num_attention_heads"],
               kv_lora_rank=32, q_lora_rank=32 if v3 else None, qk_nope_head_dim=16, qk_rope_head_dim=8,
               v_head_dim=16, head_dim=8, moe_intermediate_size=32, n_shared_experts=1 if v3 else 2,
               n_routed_experts=8 if v3 else 4, num_experts_per_tok=3 if v3 else 2, first_k_dense_replace=1,
               n_group=4 if v3 else 1, topk_group=2 if v3 else 1, norm_topk_prob=v3,
               routed_scaling_factor=2.5 if v3 else 1.0, scoring_func="sigmoid" if v3 else "softmax",
               topk_method="noaux_tc" if v3 else "greedy", tie_word_embeddings=False, attention_bias=False,
               rms_norm_eps=1e-6)
    if v3:
        cfg.update(num_nextn_predict_layers=1, rope_interleave=True,
                   rope_scaling={"type": "yarn", "factor": 4.0, "original_max_position_embeddings": 64,
                                 "beta_fast": 32, "beta_slow": 1, "mscale": 1.0, "mscale_all_dim": 1.0})
    else:
        cfg.update(rope_scaling=None)


def _routed_and_shared(w, p, r, n_exp, E, Fm, Fs):
    """DeepSeek's and GLM-4.5's experts of layer prefix p: n_exp routed experts of width Fm, then
    the shared experts of width Fs, drawn in this order (the test models' bytes depend on it)"""
    for x in range(n_exp):
        w[p + "mlp.experts.%d.gate_proj.weight" % x] = r(Fm, E)
        w[p + "mlp.experts.%d.up_proj.weight" % x] = r(Fm, E)
        w[p + "mlp.experts.%d.down_proj.weight" % x] = r(E, Fm)
    w[p + "mlp.shared_experts.gate_proj.weight"] = r(Fs, E)
    w[p + "mlp.shared_experts.up_proj.weight"] = r(Fs, E)
    w[p + "mlp.shared_experts.down_proj.weight"] = r(E, Fs)


def _deepseek_tensors(cfg, w, r):
    """A DeepSeek checkpoint's tensors in place of the Llama ones make() drew (then its MTP
    layer, for V3: a full layer at index num_hidden_layers plus eh_proj and its norms)."""
    E, H, L = cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_hidden_layers"]
    nope, rope, vd = cfg["qk_nope_head_dim"], cfg["qk_rope_head_dim"], cfg["v_head_dim"]
    kvr, qr, Fm = cfg["kv_lora_rank"], cfg["q_lora_rank"], cfg["moe_intermediate_size"]
    X, Fs = cfg["n_routed_experts"], cfg["moe_intermediate_size"] * cfg["n_shared_experts"]
    v3 = cfg["model_type"] == "deepseek_v3"
    for i in range(L + (1 if v3 else 0)):
        p = "model.layers.%d." % i
        for x in ("q", "k", "v", "o"):
            w.pop(p + "self_attn.%s_proj.weight" % x, None)
        w[p + "input_layernorm.weight"] = 1 + r(E, s=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + r(E, s=0.1)
        if qr:
            w[p + "self_attn.q_a_proj.weight"] = r(qr, E)
            w[p + "self_attn.q_a_layernorm.weight"] = 1 + r(qr, s=0.1)
            w[p + "self_attn.q_b_proj.weight"] = r(H * (nope + rope), qr)
        else:
            w[p + "self_attn.q_proj.weight"] = r(H * (nope + rope), E)
        w[p + "self_attn.kv_a_proj_with_mqa.weight"] = r(kvr + rope, E)
        w[p + "self_attn.kv_a_layernorm.weight"] = 1 + r(kvr, s=0.1)
        w[p + "self_attn.kv_b_proj.weight"] = r(H * (nope + vd), kvr)
        w[p + "self_attn.o_proj.weight"] = r(E, H * vd)
        if i < cfg["first_k_dense_replace"]:
            continue
        for x in ("gate", "up", "down"):
            w.pop(p + "mlp.%s_proj.weight" % x, None)
        w[p + "mlp.gate.weight"] = r(X, E, s=0.5)
        if v3:
            w[p + "mlp.gate.e_score_correction_bias"] = np.abs(r(X, s=0.1))
        _routed_and_shared(w, p, r, X, E, Fm, Fs)
        if i == L:
            w[p + "eh_proj.weight"] = r(E, 2 * E)
            w[p + "enorm.weight"] = 1 + r(E, s=0.1)
            w[p + "hnorm.weight"] = 1 + r(E, s=0.1)
            w[p + "shared_head.norm.weight"] = 1 + r(E, s=0.1)


# the multimodal releases: text kind -> (class, root model_type, vision_config)
WRAPS = {"gemma3": ("Gemma3ForConditionalGeneration", "gemma3",
                    {"model_type": "siglip_vision_model", "hidden_size": 32, "intermediate_size": 48,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "image_size": 16, "patch_size": 4,
                     "layer_norm_eps": 1e-6, "vision_use_head": False}),
         "mistral": ("Mistral3ForConditionalGeneration", "mistral3",
                     {"model_type": "pixtral", "hidden_size": 32, "intermediate_size": 48, "num_hidden_layers": 1,
                      "num_attention_heads": 2, "head_dim": 16, "image_size": 16, "patch_size": 4,
                      "num_channels": 3, "rope_theta": 10000.0, "hidden_act": "silu"})}


def _wrap(kind, how, cfg, w, rng):
    """cfg, w of the text model -> those of its multimodal release (module docstring)"""
    cls, mt, vc = WRAPS[kind]
    text = {k: v for k, v in cfg.items() if k != "architectures"}
    out = {"architectures": [cls], "model_type": mt, "text_config": text, "vision_config": dict(vc),
           "mm_tokens_per_image": 4, "boi_token_index": 3, "eoi_token_index": 4, "image_token_index": 5,
           "initializer_range": 0.02, "torch_dtype": cfg["torch_dtype"]}
    D, F, P = vc["hidden_size"], vc["intermediate_size"], vc["patch_size"]
    npatch = (vc["image_size"] // P) ** 2

    def r(*shape):
        return (rng.standard_normal(shape) * 0.1).astype(np.float32)
    if kind == "mistral":   # Pixtral's tower, Mistral 3's projector (its patch merger and norm)
        out.update(image_token_index=10, projector_hidden_act="gelu", spatial_merge_size=2,
                   multimodal_projector_bias=False, vision_feature_layer=-1)
        for k in ("mm_tokens_per_image", "boi_token_index", "eoi_token_index"):
            out.pop(k)
        vis = {"patch_conv.weight": r(D, 3, P, P), "ln_pre.weight": r(D)}
        for i in range(vc["num_hidden_layers"]):
            q = "transformer.layers.%d." % i
            vis[q + "attention_norm.weight"], vis[q + "ffn_norm.weight"] = r(D), r(D)
            for n in ("q_proj", "k_proj", "v_proj", "o_proj"):
                vis[q + "attention." + n + ".weight"] = r(D, D)
            for n, sh in (("gate_proj", (F, D)), ("up_proj", (F, D)), ("down_proj", (D, F))):
                vis[q + "feed_forward." + n + ".weight"] = r(*sh)
        proj = {"norm.weight": r(D), "patch_merger.merging_layer.weight": r(D, 4 * D),
                "linear_1.weight": r(cfg["hidden_size"], D), "linear_2.weight": r(cfg["hidden_size"], cfg["hidden_size"])}
        vpre = "vision_tower."
    else:
        vis = {"embeddings.patch_embedding.weight": r(D, 3, P, P), "embeddings.patch_embedding.bias": r(D),
               "embeddings.position_embedding.weight": r(npatch, D), "post_layernorm.weight": r(D),
               "post_layernorm.bias": r(D)}
        vpre = "vision_tower.vision_model."
    for i in range(vc["num_hidden_layers"] if kind != "mistral" else 0):
        q = "encoder.layers.%d." % i
        for n in ("layer_norm1", "layer_norm2"):
            vis[q + n + ".weight"], vis[q + n + ".bias"] = r(D), r(D)
        for n in ("q_proj", "k_proj", "v_proj", "out_proj"):
            vis[q + "self_attn." + n + ".weight"], vis[q + "self_attn." + n + ".bias"] = r(D, D), r(D)
        vis[q + "mlp.fc1.weight"], vis[q + "mlp.fc1.bias"] = r(F, D), r(F)
        vis[q + "mlp.fc2.weight"], vis[q + "mlp.fc2.bias"] = r(D, F), r(D)
    if kind != "mistral":
        proj = {"mm_input_projection_weight": r(D, cfg["hidden_size"]), "mm_soft_emb_norm.weight": r(D)}
    top = "" if how == "old" else "model."
    ww = {}
    for n, a in w.items():
        if how == "old":
            ww["language_model." + n] = a
        else:
            ww["model.language_model." + n[len("model."):] if n.startswith("model.") else n] = a
    ww.update({top + vpre + n: a for n, a in vis.items()})
    ww.update({top + "multi_modal_projector." + n: a for n, a in proj.items()})
    return out, ww


def make(folder, kind, tokenizer_dir, seed=0, vocab_size=None, dtype="F32", shards=None, shard_of=None,
         config=None, dims=None, wrap=None, embd_rows=None, fused=None):
    os.makedirs(folder, exist_ok=True)
    for fn in ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "added_tokens.json"):
        if os.path.exists(os.path.join(tokenizer_dir, fn)):
            shutil.copy(os.path.join(tokenizer_dir, fn), os.path.join(folder, fn))
    V = vocab_size or n_vocab_of(tokenizer_dir)
    E, H, KV, FF, L = dims or (64, 4, 2, 128, {"gemma3": 6, "smollm3": 4}.get(kind, 2))
    if kind in ("olmoe", "olmo2"):
        KV = H  # llama.cpp's OLMoE is multi-head only; OLMo 2 as released
    hd = 32 if kind in ("qwen3", "qwen3moe", "glm4moe", "mistral") else E // H
    cfg = {"architectures": [ARCHS[kind]], "model_type": ARCHS[kind][:-len("ForCausalLM")].lower(),
           "hidden_size": E, "intermediate_size": FF, "num_hidden_layers": L,
           "num_attention_heads": H, "num_key_value_heads": KV, "vocab_size": V,
           "max_position_embeddings": 256, "rms_norm_eps": 1e-5, "rope_theta": 10000.0,
           "hidden_act": "silu", "torch_dtype": "float32"}
    if kind == "llama":
        cfg["rope_scaling"] = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0,
                               "high_freq_factor": 4.0, "original_max_position_embeddings": 32}
        cfg["tie_word_embeddings"] = False
    if kind == "llama_tied":
        cfg["attention_bias"] = True
        cfg["tie_word_embeddings"] = True
    if kind == "qwen2":
        cfg["tie_word_embeddings"] = True
        cfg["rope_theta"] = 1000000.0
    if kind == "mixtral":
        cfg.update(model_type="mixtral", num_local_experts=4, num_experts_per_tok=2, router_jitter_noise=0.0,
                   sliding_window=None, tie_word_embeddings=False)
    if kind == "qwen2moe":
        cfg.update(model_type="qwen2_moe", num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   shared_expert_intermediate_size=48, norm_topk_prob=False, decoder_sparse_step=1,
                   mlp_only_layers=[], tie_word_embeddings=False, rope_theta=1000000.0)
    if kind == "olmoe":
        cfg.update(model_type="olmoe", num_experts=4, num_experts_per_tok=2,
                   norm_topk_prob=False, clip_qkv=None, tie_word_embeddings=False, rms_norm_eps=1e-5)
    if kind == "qwen3moe":
        cfg.update(model_type="qwen3_moe", head_dim=hd, num_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   norm_topk_prob=True, decoder_sparse_step=1, mlp_only_layers=[], tie_word_embeddings=False,
                   rope_theta=1000000.0)
    if kind == "mistral":   # Mistral Small 3.1's text model: head_dim apart from hidden / heads
        cfg.update(head_dim=hd, sliding_window=None, tie_word_embeddings=False, rope_theta=1000000.0)
    if kind == "smollm3":   # every 4th layer without rope (NoPE), as SmolLM3-3B; tied
        cfg.update(no_rope_layer_interval=4, no_rope_layers=[int((i + 1) % 4 != 0) for i in range(L)],
                   use_sliding_window=False, sliding_window=None, tie_word_embeddings=True,
                   attention_bias=False, mlp_bias=False, rope_theta=2000000.0)
    if kind == "granite":   # Granite 3's multipliers (of its 2B), a head_dim the converter ignores; tied
        cfg.update(embedding_multiplier=12.0, attention_multiplier=0.015625, residual_multiplier=0.22,
                   logits_scaling=8.0, head_dim=hd, tie_word_embeddings=True, attention_bias=False, mlp_bias=False)
    if kind == "glm4moe":
        # every field the converter reads (AutoConfig's defaults are not there, see
        # converter_cases), with eos/pad ids as GLM-4.5's config.json has them
        cfg.update(model_type="glm4_moe", head_dim=hd, partial_rotary_factor=0.5, attention_bias=True,
                   use_qk_norm=True, n_routed_experts=4, num_experts_per_tok=2, moe_intermediate_size=32,
                   n_shared_experts=1, first_k_dense_replace=1, routed_scaling_factor=2.5, n_group=1,
                   topk_group=1, norm_topk_prob=True, num_nextn_predict_layers=1, tie_word_embeddings=False,
                   rope_theta=1000000.0)
    gptoss = kind.startswith("gptoss")
    if gptoss:
        # every field GptOssConfig has (AutoConfig is a stand-in: config.json is read as written);
        # even layers slide (layer_types), yarn as the published checkpoints have it
        hd = 16
        cfg.update(model_type="gpt_oss", head_dim=hd, num_local_experts=4, num_experts_per_tok=2,
                   experts_per_token=2, intermediate_size=64, sliding_window=8, attention_bias=True,
                   attention_dropout=0.0, rope_theta=150000.0, swiglu_limit=7.0, router_aux_loss_coef=0.9,
                   output_router_logits=False, tie_word_embeddings=False, initial_context_length=4096,
                   max_position_embeddings=131072, use_cache=True,
                   layer_types=["sliding_attention" if i % 2 == 0 else "full_attention" for i in range(L)],
                   rope_scaling={"beta_fast": 32.0, "beta_slow": 1.0, "factor": 32.0,
                                 "original_max_position_embeddings": 4096, "rope_type": "yarn",
                                 "truncate": False})
        FF = cfg["intermediate_size"]
        if kind == "gptoss_mxfp4":
            cfg["quantization_config"] = {"modules_to_not_convert": ["model.layers.*.self_attn",
                                                                     "model.layers.*.mlp.router",
                                                                     "model.embed_tokens", "lm_head"],
                                          "quant_method": "mxfp4"}
    if kind == "qwen3":
        cfg["head_dim"] = hd
        cfg["tie_word_embeddings"] = False
    if kind == "phi3":
        cfg.update(original_max_position_embeddings=256, partial_rotary_factor=0.5,
                   sliding_window=None, tie_word_embeddings=False)
    gemma = kind.startswith("gemma")
    if kind == "gemma":     # Gemma 1: Llama's layout with Gemma's norms, GELU, embedding scale
        cfg.update(model_type="gemma", head_dim=hd, hidden_act="gelu_pytorch_tanh",
                   hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, tie_word_embeddings=True,
                   bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if kind == "gemma2":
        cfg.update(model_type="gemma2", head_dim=hd, query_pre_attn_scalar=hd, attn_logit_softcapping=2.0,
                   final_logit_softcapping=3.0, sliding_window=16, hidden_act="gelu_pytorch_tanh",
                   hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, tie_word_embeddings=True,
                   bos_token_id=1, eos_token_id=2, pad_token_id=0)
    if kind == "gemma3":
        cfg.update(model_type="gemma3_text", head_dim=hd, query_pre_attn_scalar=hd, sliding_window=16,
                   sliding_window_pattern=6, rope_theta=1000000.0, rope_local_base_freq=10000.0,
                   rope_scaling=None, final_logit_softcapping=None, attn_logit_softcapping=None,
                   hidden_activation="gelu_pytorch_tanh", rms_norm_eps=1e-6, tie_word_embeddings=True,
                   bos_token_id=1, eos_token_id=2, pad_token_id=0)
        cfg.pop("hidden_act")
    if gemma:
        cfg["torch_dtype"] = "float32"
    if kind.startswith("deepseek"):
        _deepseek_cfg(kind, cfg)
    if dtype != "F32":
        cfg["torch_dtype"] = {"F16": "float16", "BF16": "bfloat16"}[dtype]
    cfg.update(config or {})
    if gptoss:  # config= may widen the experts
        FF = cfg["intermediate_size"]
    rng = np.random.default_rng(seed)

    def r(*shape, s=0.15):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    w = {"model.embed_tokens.weight": r(embd_rows or V, E, s=0.5),
         "model.norm.weight": (1 + r(E, s=0.1))}
    if kind in ("gemma2", "gemma"):
        w["model.norm.weight"] = r(E, s=0.1)        # Gemma: the stored w of (1 + w)
        w["lm_head.weight"] = r(V, E, s=0.3)         # tied in HF; the converter drops it
    elif not cfg.get("tie_word_embeddings"):
        w["lm_head.weight"] = r(V, E, s=0.3)
    if kind == "gemma3":
        w["model.norm.weight"] = r(E, s=0.1)
    for i in range(L):
        p = "model.layers.%d." % i
        w[p + "input_layernorm.weight"] = 1 + r(E, s=0.1)
        w[p + "post_attention_layernorm.weight"] = 1 + r(E, s=0.1)
        w[p + "self_attn.q_proj.weight"] = r(H * hd, E)
        w[p + "self_attn.k_proj.weight"] = r(KV * hd, E)
        w[p + "self_attn.v_proj.weight"] = r(KV * hd, E)
        w[p + "self_attn.o_proj.weight"] = r(E, H * hd)
        w[p + "mlp.gate_proj.weight"] = r(FF, E)
        w[p + "mlp.up_proj.weight"] = r(FF, E)
        w[p + "mlp.down_proj.weight"] = r(E, FF)
        if kind in ("qwen2", "llama_tied", "qwen2moe", "glm4moe"):
            w[p + "self_attn.q_proj.bias"] = r(H * hd, s=0.5)
            w[p + "self_attn.k_proj.bias"] = r(KV * hd, s=0.5)
            w[p + "self_attn.v_proj.bias"] = r(KV * hd, s=0.5)
        if kind == "llama_tied":
            w[p + "self_attn.o_proj.bias"] = r(E, s=0.5)
        if kind in ("qwen3", "qwen3moe", "glm4moe"):
            w[p + "self_attn.q_norm.weight"] = 1 + r(hd, s=0.2)
            w[p + "self_attn.k_norm.weight"] = 1 + r(hd, s=0.2)
        if kind == "gemma":
            w[p + "input_layernorm.weight"] = r(E, s=0.1)
            w[p + "post_attention_layernorm.weight"] = r(E, s=0.1)
        elif gemma:
            w[p + "input_layernorm.weight"] = r(E, s=0.1)
            w[p + "post_attention_layernorm.weight"] = r(E, s=0.1)
            w[p + "pre_feedforward_layernorm.weight"] = r(E, s=0.1)
            w[p + "post_feedforward_layernorm.weight"] = r(E, s=0.1)
        if kind == "gemma3":
            w[p + "self_attn.q_norm.weight"] = r(hd, s=0.2)
            w[p + "self_attn.k_norm.weight"] = r(hd, s=0.2)
    if kind == "olmo2":
        # OLMo 2: no norm before either sublayer, one after each (post_attention_layernorm,
        # post_feedforward_layernorm); its q_norm/k_norm as OLMoE's below
        cfg.update(model_type="olmo2", tie_word_embeddings=False, attention_bias=False, rms_norm_eps=1e-6)
        for i in range(L):
            p = "model.layers.%d." % i
            del w[p + "input_layernorm.weight"]
            w[p + "post_feedforward_layernorm.weight"] = 1 + r(E, s=0.1)
    if kind in ("olmoe", "olmo2"):
        # q_norm and k_norm over the whole projection, before the head split
        for i in range(L):
            p = "model.layers.%d." % i
            w[p + "self_attn.q_norm.weight"] = 1 + r(H * hd, s=0.2)
            w[p + "self_attn.k_norm.weight"] = 1 + r(cfg["num_key_value_heads"] * hd, s=0.2)
    if kind in ("mixtral", "qwen2moe", "qwen3moe", "olmoe"):
        # the router and per-expert tensors in place of the mlp: Mixtral's
        # block_sparse_moe.experts.X.w1 (gate), w2 (down), w3 (up); the others'
        # mlp.experts.X.{gate,up,down}_proj of moe_intermediate_size (OLMoE: intermediate_size);
        # Qwen2-MoE adds a shared expert and its gate
        Fm = cfg.get("moe_intermediate_size", FF)
        mix = kind == "mixtral"
        moe, n_exp = ("block_sparse_moe.", cfg["num_local_experts"]) if mix else ("mlp.", cfg["num_experts"])
        parts = ((("w1", (Fm, E)), ("w2", (E, Fm)), ("w3", (Fm, E))) if mix else
                 (("gate_proj", (Fm, E)), ("up_proj", (Fm, E)), ("down_proj", (E, Fm))))
        for i in range(L):
            p = "model.layers.%d." % i
            for x in ("gate", "up", "down"):
                w.pop(p + "mlp.%s_proj.weight" % x)
            w[p + moe + "gate.weight"] = r(n_exp, E, s=0.5)
            for x in range(n_exp):
                for name, shape in parts:
                    w[p + moe + "experts.%d.%s.weight" % (x, name)] = r(*shape)
            if kind == "qwen2moe":
                Fs = cfg["shared_expert_intermediate_size"]
                w[p + "mlp.shared_expert.gate_proj.weight"] = r(Fs, E)
                w[p + "mlp.shared_expert.up_proj.weight"] = r(Fs, E)
                w[p + "mlp.shared_expert.down_proj.weight"] = r(E, Fs)
                w[p + "mlp.shared_expert_gate.weight"] = r(1, E, s=0.5)
    if kind == "glm4moe":
        # layers from first_k_dense_replace on, and the MTP block (layer L), are MoE: the
        # router mlp.gate and its e_score_correction_bias (F32), routed experts
        # mlp.experts.X.*_proj, shared experts mlp.shared_experts.* of n_shared_experts x
        # moe_intermediate_size; the MTP block adds eh_proj [E, 2E], enorm, hnorm, shared_head.norm
        Fm, n_exp = cfg["moe_intermediate_size"], cfg["n_routed_experts"]
        Fs = Fm * cfg["n_shared_experts"]
        for i in range(L + cfg["num_nextn_predict_layers"]):
            p = "model.layers.%d." % i
            if i >= L:
                w[p + "input_layernorm.weight"] = 1 + r(E, s=0.1)
                w[p + "post_attention_layernorm.weight"] = 1 + r(E, s=0.1)
                for x, rows in (("q", H), ("k", KV), ("v", KV)):
                    w[p + "self_attn.%s_proj.weight" % x] = r(rows * hd, E)
                    w[p + "self_attn.%s_proj.bias" % x] = r(rows * hd, s=0.5)
                w[p + "self_attn.o_proj.weight"] = r(E, H * hd)
                w[p + "self_attn.q_norm.weight"] = 1 + r(hd, s=0.2)
                w[p + "self_attn.k_norm.weight"] = 1 + r(hd, s=0.2)
                w[p + "eh_proj.weight"] = r(E, 2 * E)
                for x in ("enorm", "hnorm", "shared_head.norm"):
                    w[p + x + ".weight"] = 1 + r(E, s=0.1)
            if i < cfg["first_k_dense_replace"]:
                continue
            for x in ("gate", "up", "down"):
                w.pop(p + "mlp.%s_proj.weight" % x, None)
            w[p + "mlp.gate.weight"] = r(n_exp, E, s=0.5)
            w[p + "mlp.gate.e_score_correction_bias"] = r(n_exp, s=0.3)
            _routed_and_shared(w, p, r, n_exp, E, Fm, Fs)
    u8 = {}
    if gptoss:
        # attention with biases and a sink logit per head; a router with a bias; the experts
        # as one tensor per projection: dense gate_up_proj [E, H, 2F] (x @ W, gate/up
        # interleaved in the columns) and down_proj [E, F, H], or their MXFP4 blocks and
        # scales [E, 2F, H/32, 16] + [E, 2F, H/32] and [E, H, F/32, 16] + [E, H, F/32]
        n_exp = cfg["num_local_experts"]
        for i in range(L):
            p = "model.layers.%d." % i
            for x in ("gate", "up", "down"):
                w.pop(p + "mlp.%s_proj.weight" % x)
            for x, n in (("q", H * hd), ("k", KV * hd), ("v", KV * hd), ("o", E)):
                w[p + "self_attn.%s_proj.bias" % x] = r(n, s=0.5)
            w[p + "self_attn.sinks"] = r(H, s=1.0)
            w[p + "mlp.router.weight"] = r(n_exp, E, s=0.5)
            w[p + "mlp.router.bias"] = r(n_exp, s=0.5)
            w[p + "mlp.experts.gate_up_proj_bias"] = r(n_exp, 2 * FF, s=0.3)
            w[p + "mlp.experts.down_proj_bias"] = r(n_exp, E, s=0.3)
            if kind == "gptoss":
                w[p + "mlp.experts.gate_up_proj"] = r(n_exp, E, 2 * FF)
                w[p + "mlp.experts.down_proj"] = r(n_exp, FF, E)
                continue
            for x, rows, cols in (("gate_up_proj", 2 * FF, E), ("down_proj", E, FF)):
                codes = rng.integers(0, 16, size=(n_exp, rows, cols), dtype=np.uint8)
                u8[p + "mlp.experts.%s_blocks" % x] = (codes[..., 0::2] | (codes[..., 1::2] << 4)).reshape(
                    n_exp, rows, cols // 32, 16)
                u8[p + "mlp.experts.%s_scales" % x] = rng.integers(120, 126, size=(n_exp, rows, cols // 32),
                                                                   dtype=np.uint8)
    if kind == "phi3":
        for i in range(L):
            p = "model.layers.%d." % i
            w[p + "self_attn.qkv_proj.weight"] = np.concatenate(
                [w.pop(p + "self_attn.%s_proj.weight" % x) for x in "qkv"])
            w[p + "mlp.gate_up_proj.weight"] = np.concatenate(
                [w.pop(p + "mlp.gate_proj.weight"), w.pop(p + "mlp.up_proj.weight")])
    if kind.startswith("deepseek"):
        _deepseek_tensors(cfg, w, r)
    # a non-persistent buffer some old checkpoints carry; the converter must skip it
    if not gptoss:
        w["model.layers.0.self_attn.rotary_emb.inv_freq"] = np.ones(hd // 2, np.float32)
    if fused is not None:
        # transformers 5's fused experts, from the values drawn above
        for i in range(L):
            p = "model.layers.%d.mlp.experts." % i
            n_exp = cfg["num_experts"]
            st = {x: np.stack([w.pop(p + "%d.%s_proj.weight" % (e, x)) for e in range(n_exp)]) for x in ("gate", "up", "down")}
            w[p + "gate_up_proj" + fused] = np.concatenate([st["gate"], st["up"]], axis=1)
            w[p + "down_proj" + fused] = st["down"]
    if wrap:
        cfg, w = _wrap(kind, wrap, cfg, w, rng)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    dts = {}
    if dtype == "F16":
        w = {k: v.astype(np.float16) for k, v in w.items()}
    elif dtype == "BF16":
        dts = {k: "BF16" for k in w}
    w.update(u8)
    if not shards:
        st_io.save(w, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"}, dtypes=dts)
        return folder
    files = ["model-%05d-of-%05d.safetensors" % (i + 1, shards) for i in range(shards)]
    where = {n: files[shard_of(n) if shard_of else i % shards] for i, n in enumerate(sorted(w))}
    for fn in files:
        part = {n: a for n, a in w.items() if where[n] == fn}
        st_io.save(part, os.path.join(folder, fn), metadata={"format": "pt"},
                   dtypes={n: d for n, d in dts.items() if n in part})
    size = sum(a.nbytes for a in w.values())
    with open(os.path.join(folder, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": size}, "weight_map": where}, f, indent=1)
    return folder
