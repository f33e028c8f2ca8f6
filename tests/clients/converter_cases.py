#!/usr/bin/python3
"""The test models that llama.cpp's own converter is run on, once, to make the digests in
tests/data/converter/digests.json (tools/converter_digests.py, `make converter-digests`),
and that the gguf group mounts to compare model.gguf with those digests.

Each case is a tiny random checkpoint of tests/clients/tiny_models.py with a real tokenizer
(npm), its config.json holding every field the converter reads: the converter runs with a
stand-in transformers whose AutoConfig refuses (tests/clients/converter/), so it reads
config.json as written, without the class defaults AutoConfig would add. Hence head_dim is
written for the families whose transformers config always has one.

    CASES: {name: (kind, tokenizer key, make() options and "files": {name: text}, outtypes)}
    make(name, parent) -> the case's folder, parent/NAME (the folder name is general.name's
                          and size_label's source, so it is the same wherever it is made)
    inputs(folder) -> {file: sha256} of the folder's files
"""
import hashlib
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import real_tokenizers  # noqa: E402
import tiny_models  # noqa: E402

OUTTYPES = ["f32", "f16", "bf16"]
# The descriptive keys the converter guesses from a model card and a model's name, which
# weightfs does not write (docs/gguf.md, "What differs from the converter"): a digest's keys
# of these names are left out of the comparison, every other key is compared in order.
NOT_WRITTEN = {"general.author", "general.organization", "general.basename", "general.finetune",
               "general.version", "general.description", "general.quantized_by", "general.license",
               "general.license.name", "general.license.link", "general.url", "general.doi", "general.uuid",
               "general.repo_url", "general.source.url", "general.source.doi", "general.source.uuid",
               "general.source.repo_url", "general.base_model.count", "general.dataset.count", "general.tags",
               "general.languages"}


def _second_shard(n):
    """shard 1: layer 1 and lm_head; shard 2: the embeddings, layer 0 and the final norm (the
    converter's order is shards sorted, names sorted within each)"""
    return 0 if n.startswith("model.layers.1.") or n == "lm_head.weight" else 1


CASES = {
    "Tiny-Llama": ("llama", "llama3_1", {"config": {"head_dim": 16}}, OUTTYPES),
    "Tiny-Llama-Tied": ("llama_tied", "gpt2", {"config": {"head_dim": 16}}, OUTTYPES),
    "Tiny-Qwen2": ("qwen2", "qwen2_5", {}, OUTTYPES),
    "Tiny-Qwen3": ("qwen3", "qwen3", {}, OUTTYPES),
    "Tiny-Phi3": ("phi3", "gpt2", {}, OUTTYPES),
    "Tiny-Llama-BF16": ("llama", "llama3_1", {"config": {"head_dim": 16}, "dtype": "BF16"}, ["auto", "f16"]),
    "Tiny-Llama-Shards": ("llama", "gpt2", {"config": {"head_dim": 16}, "shards": 2, "shard_of": _second_shard},
                          ["f32"]),
    # experts dealt out round-robin over two shards: a layer's experts sit in both
    "Tiny-Mixtral": ("mixtral", "llama2", {"shards": 2}, ["f32", "f16"]),
    "Tiny-Qwen2-MoE": ("qwen2moe", "qwen2_5", {}, ["f32", "bf16"]),
    "Tiny-Qwen3-MoE": ("qwen3moe", "qwen3", {}, ["f32", "f16"]),
    # the same experts in transformers 5's fused form (mlp.experts.gate_up_proj, down_proj),
    # which Qwen2MoeModel.modify_tensors splits and takes as they are
    "Tiny-Qwen3-MoE-Fused": ("qwen3moe", "qwen3", {"fused": ""}, ["f32"]),
    # MLA (kv_b_proj split, k_b transposed), 8 experts in 4 groups, a leading dense layer, an MTP
    # layer the converter skips; V2-Lite: q_proj (no q_lora_rank), softmax routing
    "Tiny-DeepSeek-V3": ("deepseek_v3", "gpt2", {}, ["f32", "bf16"]),
    "Tiny-DeepSeek-V2-Lite": ("deepseek_v2", "gpt2", {}, ["f32", "bf16"]),
    # the oracle of an FP8 checkpoint (torch 1.13 has no float8, so the converter cannot read
    # one here): the folder with its FP8 layers dequantized as the converter's
    # the text model of a multimodal release (vision tower and projector left out), in the names
    # transformers saved before 4.52 and, over two shards, in those it saves since
    "Tiny-Gemma3-VL": ("gemma3", "spm", {"wrap": "old"}, ["f32", "bf16"]),
    "Tiny-Gemma3-VL-New": ("gemma3", "spm", {"wrap": "new", "shards": 2}, ["f32"]),
    "Tiny-Mistral3-VL": ("mistral", "llama2", {"wrap": "old"}, ["f32", "bf16"]),
    "Tiny-Mistral3-VL-New": ("mistral", "llama2", {"wrap": "new", "shards": 2}, ["f32"]),
    "Tiny-SmolLM3": ("smollm3", "gpt2", {}, ["f32", "bf16"]),
    "Tiny-Granite": ("granite", "gpt2", {}, ["f32", "f16"]),
    "Tiny-OLMo2": ("olmo2", "gpt2", {}, ["f32", "bf16"]),
    "Tiny-Gemma": ("gemma", "spm", {}, ["f32", "bf16"]),
    # Phi-4 and Phi-4-mini say Phi3ForCausalLM: Phi-4 full rotary, no window, untied; Phi-4-mini a
    # partial rotary of 0.75, tied (no lm_head.weight), a sliding window and longrope factors
    "Tiny-Phi4": ("phi3", "gpt2", {"config": {"partial_rotary_factor": 1.0, "rope_theta": 250000.0}}, ["f32"]),
    "Tiny-Phi4-Mini": ("phi3", "gpt2", {"config": {
        "partial_rotary_factor": 0.75, "tie_word_embeddings": True, "sliding_window": 262144,
        "max_position_embeddings": 4096, "original_max_position_embeddings": 256,
        "rope_scaling": {"type": "longrope", "long_factor": [1.0, 1.5, 2.0, 4.0, 8.0, 16.0],
                         "short_factor": [1.0, 1.25, 1.5, 2.0, 3.0, 5.0]}}}, ["f32", "bf16"]),
    # ModelBase.dequant_model does (float32(e4m3) x the block's scale, one rounding); the test
    # mounts the FP8 folder of the same name (fp8_folder) against these digests
    "Tiny-DeepSeek-V3-FP8": ("deepseek_v3", "gpt2", {"fp8": True}, ["f32", "bf16"]),
    "Tiny-OLMoE": ("olmoe", "gpt2", {}, ["f32", "bf16"]),
    # GLM-4.5's layout (a dense first layer, sigmoid routing with a bias, shared experts, the
    # MTP block kept); GPT-2's vocabulary with GLM's special tokens added (glm_folder)
    "Tiny-GLM4-MoE": ("glm4moe", "glm", {"config": {"eos_token_id": [50256, 50263, 50265], "pad_token_id": 50256}},
                      ["f32", "bf16"]),
    # general.size_label from a model card's front matter, and from config.json's _name_or_path
    "Tiny-Qwen3-Card": ("qwen3", "qwen3", {"files": {"README.md": "---\nlicense: mit\nsize_label: Tiny-7B\n---\n# A card\n"}},
                        ["f32"]),
    "Tiny-Qwen3-Named": ("qwen3", "qwen3", {"config": {"_name_or_path": "Qwen/Qwen3-30B-A3B"}}, ["f32"]),
    "Tiny-Llama2": ("llama", "llama2", {"config": {"head_dim": 16}}, ["f32"]),
    "Tiny-Gemma2": ("gemma2", "spm", {}, ["f32", "bf16"]),
    "Tiny-Gemma3": ("gemma3", "spm", {}, ["f32", "bf16"]),
    # Gemma 3's embedding cut to its tokenizer's vocabulary (Gemma3Model.modify_tensors): 64 rows
    # more than the SentencePiece model's 32000 pieces, as Gemma 3's 262208 for 262144 tokens
    "Tiny-Gemma3-Cut": ("gemma3", "spm", {"embd_rows": 32064}, ["f32", "bf16"]),
    # gpt-oss: no o200k tokenizer among the npm ones; Llama 3's byte-level BPE is the closest the
    # converter accepts (its pre-tokenizer "llama-bpe" instead of "gpt-4o"). MXFP4 experts
    # (written as ggml MXFP4 whatever the outtype) and the dense BF16 form
    "Tiny-GptOss-MXFP4": ("gptoss_mxfp4", "llama3_1", {"dtype": "BF16"}, ["auto"]),
    "Tiny-GptOss-BF16": ("gptoss", "llama3_1", {"dtype": "BF16"}, ["auto"]),
}


def spm_folder(parent):
    """parent/spm-tok: tokenizer.model rebuilt from llama.cpp's ggml-vocab-llama-spm.gguf (the
    Llama 2 SentencePiece vocabulary) with a plain tokenizer_config.json."""
    import json
    import spm_model
    d = os.path.join(parent, "spm-tok")
    if os.path.isdir(d):
        return d
    npm = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
    g = os.path.join(npm, "llama-src", "models", "ggml-vocab-llama-spm.gguf")
    if not os.path.isfile(g):
        return None
    _, tokens, scores, types = spm_model.read_gguf_vocab(g)
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.model"), "wb") as f:
        f.write(spm_model.model_proto(tokens, scores, types, 2))
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
                   "unk_token": "<unk>", "legacy": True, "tokenizer_class": "LlamaTokenizer"}, f)
    return d


FP8_BLOCK = (32, 32)


def fp8_layers(w):
    """{name: (e4m3 codes, (scale, scale bytes), dequantized float32)} for the linear weights of
    a DeepSeek checkpoint's layers as DeepSeek-V3 stores them in FP8 (every *_proj and
    kv_a_proj_with_mqa, the MTP layer's too; not the router, embeddings or norms), blocks of
    FP8_BLOCK (partial at the edges), drawn from a fixed seed in name order."""
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "mount"))
    import hfq_models
    rng = np.random.default_rng(38)
    out = {}
    for k in sorted(w):
        if k.startswith("model.layers.") and k.endswith(("_proj.weight", "_mqa.weight")) and np.ndim(w[k]) == 2:
            out[k] = hfq_models.fp8_layer(rng, w[k].shape[0], w[k].shape[1], *FP8_BLOCK)
    return out


def fp8_folder(folder, parent):
    """parent/NAME: folder (a case made with fp8) as the FP8 checkpoint it was dequantized
    from: quantization_config fp8 with weight_block_size FP8_BLOCK, each FP8 layer's weight
    F8_E4M3 and its weight_scale_inv F32."""
    import json
    import shutil
    import st_io
    from st_file import st_bytes
    d = os.path.join(parent, os.path.basename(folder))
    os.makedirs(d)
    for fn in os.listdir(folder):
        if fn not in ("config.json", "model.safetensors"):
            shutil.copy(os.path.join(folder, fn), d)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {"quant_method": "fp8", "fmt": "e4m3", "activation_scheme": "dynamic",
                                  "weight_block_size": list(FP8_BLOCK)}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f, indent=1)
    w = st_io.load(os.path.join(folder, "model.safetensors"))
    q = fp8_layers(w)
    st = {}
    for k, a in w.items():
        if k in q:
            codes, (s, sraw), _ = q[k]
            st[k] = ("F8_E4M3", list(a.shape), codes)
            st[k + "_scale_inv"] = ("F32", list(s.shape), sraw)
        else:
            st[k] = ("F32", list(a.shape), np.asarray(a, "<f4").tobytes())
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st_bytes(st))
    return d


# GLM-4.5's added tokens after <|endoftext|>, in its order ([MASK] 151330 ... <|observation|>
# 151338 there)
GLM_ADDED = ["[MASK]", "[gMASK]", "[sMASK]", "<sop>", "<eop>", "<|system|>", "<|user|>", "<|assistant|>",
             "<|observation|>"]


def glm_folder(parent, merges=None):
    """parent/glm-tok: GPT-2's tokenizer.json (npm) with GLM-4.5's special tokens added after its
    <|endoftext|> (ids 50257..50265), which the converter's GLM vocabulary routine looks up
    ([gMASK] as bos, <|user|> as eot, <|endoftext|> as unk, <|observation|> as eom), and a
    tokenizer_config.json as GLM-4.5's: eos and pad <|endoftext|>, no bos or unk. No npm package
    ships GLM's own tokenizer; the pre-tokenizer stays GPT-2's (the converter's hash says
    gpt-2, not glm4). merges=N keeps GPT-2's first N merges and the 256 + N tokens they make
    (parent/glm-tok-N: a small vocabulary, for tests of the tensors)."""
    import json
    d = os.path.join(parent, "glm-tok" + ("-%d" % merges if merges is not None else ""))
    if os.path.isdir(d):
        return d
    src = real_tokenizers.folder("gpt2")
    if not src:
        return None
    with open(os.path.join(src, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    if merges is not None:
        m = tj["model"]
        m["merges"] = m["merges"][:merges]
        m["vocab"] = {t: i for t, i in m["vocab"].items() if i < 256 + merges}
        for i, a in enumerate(tj["added_tokens"]):
            a["id"] = 256 + merges + i
    base = max(a["id"] for a in tj["added_tokens"]) + 1
    dec = {}
    for i, t in enumerate(GLM_ADDED):
        a = {"id": base + i, "content": t, "single_word": False, "lstrip": False, "rstrip": False,
             "normalized": False, "special": True}
        tj["added_tokens"].append(a)
        dec[str(base + i)] = {k: v for k, v in a.items() if k != "id"}
    os.makedirs(d)
    with open(os.path.join(d, "tokenizer.json"), "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump({"added_tokens_decoder": dec, "clean_up_tokenization_spaces": False, "do_lower_case": False,
                   "eos_token": "<|endoftext|>", "pad_token": "<|endoftext|>", "model_max_length": 128000,
                   "padding_side": "left", "remove_space": False, "tokenizer_class": "PreTrainedTokenizer"}, f,
                  indent=1)
    return d


def make(name, parent):
    kind, key, opts, _ = CASES[name]
    tdir = spm_folder(parent) if key == "spm" else glm_folder(parent) if key == "glm" else real_tokenizers.folder(key)
    if not tdir:
        raise FileNotFoundError("tokenizer %s not installed (tests/clients/npm.sh)" % key)
    opts = dict(opts)
    files = opts.pop("files", {})
    fp8 = opts.pop("fp8", False)
    folder = tiny_models.make(os.path.join(parent, name), kind, tdir, **opts)
    if fp8:
        import st_io
        w = st_io.load(os.path.join(folder, "model.safetensors"))
        w.update({k: v[2] for k, v in fp8_layers(w).items()})
        st_io.save(w, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    for fn, text in files.items():
        with open(os.path.join(folder, fn), "w", encoding="utf-8") as f:
            f.write(text)
    return folder


def inputs(folder):
    out = {}
    for fn in sorted(os.listdir(folder)):
        with open(os.path.join(folder, fn), "rb") as f:
            out[fn] = hashlib.sha256(f.read()).hexdigest()
    return out
