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
    "Tiny-OLMoE": ("olmoe", "gpt2", {}, ["f32", "bf16"]),
    # general.size_label from a model card's front matter, and from config.json's _name_or_path
    "Tiny-Qwen3-Card": ("qwen3", "qwen3", {"files": {"README.md": "---\nlicense: mit\nsize_label: Tiny-7B\n---\n# A card\n"}},
                        ["f32"]),
    "Tiny-Qwen3-Named": ("qwen3", "qwen3", {"config": {"_name_or_path": "Qwen/Qwen3-30B-A3B"}}, ["f32"]),
    "Tiny-Llama2": ("llama", "llama2", {"config": {"head_dim": 16}}, ["f32"]),
    "Tiny-Gemma2": ("gemma2", "spm", {}, ["f32", "bf16"]),
    "Tiny-Gemma3": ("gemma3", "spm", {}, ["f32", "bf16"]),
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


def make(name, parent):
    kind, key, opts, _ = CASES[name]
    tdir = spm_folder(parent) if key == "spm" else real_tokenizers.folder(key)
    if not tdir:
        raise FileNotFoundError("tokenizer %s not installed (tests/clients/npm.sh)" % key)
    opts = dict(opts)
    files = opts.pop("files", {})
    folder = tiny_models.make(os.path.join(parent, name), kind, tdir, **opts)
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
