#!/usr/bin/python3
"""Reference HF -> GGUF converter for tests (llama/mistral, qwen2, qwen3; byte-level BPE vocab).

This implements the rules of /work/shared/docs/hf-to-gguf.md (what llama.cpp's
convert_hf_to_gguf.py does) INDEPENDENTLY of weightfs' C code, so that tests can compare
the C side's virtual model.gguf with it and load both in llama.cpp. It is a test
reference, not a product: it covers what the tiny test models need.

  - names: section 2.1 map; rotary_emb.inv_freq skipped; lm_head absent -> no output.weight
  - order: generated rope_freqs.weight first, then checkpoint names sorted (section 2.4);
    shards (model.safetensors.index.json): the part files sorted by name, the names
    sorted within each part
  - data: llama q/k row permutation (3.1: out row h*hd+2i+j = in row h*hd+j*hd/2+i, for
    weights and biases; k with n_head_kv); types (3.4): 1-D and *_norm.weight F32, other
    tensors F32 or F16 (outtype); general.file_type 0 (f32) or 1 (f16)
  - Llama 3 rope_freqs.weight (section 4, float32 arithmetic)
  - KVs in the order of 5.3/5.5/5.7 (general.name = folder name, or --name)
  - general.size_label after general.name, by moe-and-mla.md section 11: README.md's front
    matter size_label / model_size_label (PyYAML), config.json's _name_or_path (at most one
    '/'), the folder's name, else the parameter count of the tensors written
  - tokenizer: GPT-2 byte-level BPE path (7.3) from tokenizer.json; tokenizer.ggml.pre
    picked by the pre_tokenizer regex (7.5 table); special ids and add flags (7.6) from
    tokenizer_config.json, added_tokens, TemplateProcessing and config.json ids;
    chat_template from tokenizer_config.json.
Not covered: SentencePiece tokenizer.model,
general.* metadata heuristics other than name and size_label, gemma/phi3, BF16/Q8_0 output.

CLI: ref_convert.py HF_FOLDER OUT.gguf [--outtype f32|f16] [--name NAME]
"""
import json
import math
import os
import re
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import st_io  # noqa: E402
from gguf_write import (BOOL, F32, I32, STRING, U32, GGML_F16, GGML_F32,  # noqa: E402
                        GGUFWriter)

ARCH = {"LlamaForCausalLM": "llama", "MistralForCausalLM": "llama",
        "Qwen2ForCausalLM": "qwen2", "Qwen3ForCausalLM": "qwen3", "Phi3ForCausalLM": "phi3"}
LAYER_MAP = {
    "input_layernorm": "attn_norm", "self_attn.q_proj": "attn_q", "self_attn.k_proj": "attn_k",
    "self_attn.v_proj": "attn_v", "self_attn.o_proj": "attn_output",
    "self_attn.qkv_proj": "attn_qkv", "mlp.gate_up_proj": "ffn_up",
    "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm",
    "post_attention_layernorm": "ffn_norm", "mlp.gate_proj": "ffn_gate",
    "mlp.up_proj": "ffn_up", "mlp.down_proj": "ffn_down",
}
TOP_MAP = {"model.embed_tokens": "token_embd", "lm_head": "output", "model.norm": "output_norm"}
NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6

LLAMA3_RE = ("(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+"
             "[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+")
QWEN2_RE = LLAMA3_RE.replace("\\p{N}{1,3}", "\\p{N}")


def gguf_name(hf):
    if hf.endswith(".rotary_emb.inv_freq"):
        return None
    for suf in (".weight", ".bias"):
        if hf.endswith(suf):
            base = hf[:-len(suf)]
            break
    else:
        raise ValueError("Can not map tensor %r" % hf)
    if base in TOP_MAP:
        return TOP_MAP[base] + suf
    parts = base.split(".", 3)
    if len(parts) == 4 and parts[0] == "model" and parts[1] == "layers" and parts[3] in LAYER_MAP:
        return "blk.%s.%s%s" % (parts[2], LAYER_MAP[parts[3]], suf)
    raise ValueError("Can not map tensor %r" % hf)


def permute(w, n_head):
    r = w.shape[0]
    hd = r // n_head
    return (w.reshape(n_head, 2, hd // 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape))


def llama3_rope_freqs(cfg, rs):
    f32 = np.float32
    base = f32(rs.get("rope_theta", cfg.get("rope_theta", 10000.0)))
    dim = cfg.get("head_dim") or cfg["hidden_size"] // cfg["num_attention_heads"]
    factor = rs.get("factor", 8.0)
    lo, hi = rs.get("low_freq_factor", 1.0), rs.get("high_freq_factor", 4.0)
    old = rs.get("original_max_position_embeddings", 8192)
    freqs = (f32(1) / (base ** (np.arange(0, dim, 2, dtype=np.float32) / f32(dim)))).astype(f32)
    low_wl, high_wl = old / lo, old / hi
    out = []
    for fq in freqs:
        wl = f32(2 * math.pi) / fq
        if wl < high_wl:
            out.append(1.0)
        elif wl > low_wl:
            out.append(factor)
        else:
            smooth = (f32(old) / wl - f32(lo)) / f32(hi - lo)
            out.append(f32(1) / ((f32(1) - smooth) / f32(factor) + smooth))
    return np.array(out, dtype=np.float32)


def pre_name(tok):
    pt = tok.get("pre_tokenizer") or {}
    if pt.get("type") == "ByteLevel" and pt.get("use_regex", True):
        return "gpt-2"
    if pt.get("type") == "Sequence":
        for p in pt.get("pretokenizers", []):
            if p.get("type") == "Split":
                rx = (p.get("pattern") or {}).get("Regex")
                if rx == LLAMA3_RE:
                    return "llama-bpe"
                if rx == QWEN2_RE:
                    return "qwen2"
    return "default"


def looks_special(t):
    """gguf-py's does_token_look_special (conversion/base.py)."""
    return (t in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or (t.startswith("<|") and t.endswith("|>"))
            or (t.startswith("<\uff5c") and t.endswith("\uff5c>")) or (t.startswith("<unused") and t.endswith(">")))


def add_vocab(w, folder, cfg, arch=None):
    with open(os.path.join(folder, "tokenizer.json"), encoding="utf-8") as f:
        tok = json.load(f)
    tcfg = {}
    p = os.path.join(folder, "tokenizer_config.json")
    if os.path.exists(p):
        with open(p, encoding="utf-8") as f:
            tcfg = json.load(f)
    if arch == "llama" and tcfg.get("add_prefix_space") is not None:
        w.kv("tokenizer.ggml.add_space_prefix", bool(tcfg["add_prefix_space"]), BOOL)  # L:126-131
    vocab = tok["model"]["vocab"]
    added = {a["id"]: a for a in tok.get("added_tokens", [])}
    n = cfg.get("vocab_size") or (max(list(vocab.values()) + list(added)) + 1)
    inv = {i: s for s, i in vocab.items()}
    tokens, types = [], []
    for i in range(n):
        if i in added:
            a = added[i]
            sp = a.get("special") or looks_special(a["content"])
            tokens.append(a["content"] if sp else a["content"].replace("\u2581", " "))
            types.append(CONTROL if sp else USER_DEFINED)
        elif i in inv:
            tokens.append(inv[i])
            types.append(NORMAL)
        else:
            tokens.append("[PAD%d]" % i)
            types.append(UNUSED)
    w.kv("tokenizer.ggml.model", "gpt2")
    w.kv("tokenizer.ggml.pre", pre_name(tok))
    w.kv("tokenizer.ggml.tokens", tokens, STRING)
    w.kv("tokenizer.ggml.token_type", types, I32)
    merges = tok["model"].get("merges") or []
    if merges and not isinstance(merges[0], str):
        merges = [a.replace(" ", "\u0120") + " " + b.replace(" ", "\u0120") for a, b in merges]
    w.kv("tokenizer.ggml.merges", list(merges), STRING)
    # special ids: tokenizer_config {type}_token -> first added token with that content
    ids, flags = {}, {}
    by_content = {}
    for a in tok.get("added_tokens", []):
        by_content.setdefault(a["content"], a["id"])
    for typ in ("bos", "eos", "unk", "sep", "pad"):
        t = tcfg.get(typ + "_token")
        if isinstance(t, dict):
            t = t.get("content")
        if isinstance(t, str) and t in by_content:
            ids[typ] = by_content[t]
    pp = tok.get("post_processor") or {}
    procs = pp.get("processors", []) if pp.get("type") == "Sequence" else [pp]
    for pr in procs:
        if pr.get("type") == "TemplateProcessing":
            single = pr.get("single") or []
            first = single[0].get("SpecialToken", {}).get("id") if single else None
            last = single[-1].get("SpecialToken", {}).get("id") if single else None
            bos_c = [c for c, i in by_content.items() if i == ids.get("bos")]
            eos_c = [c for c, i in by_content.items() if i == ids.get("eos")]
            flags["bos"] = bool(first and first in bos_c)
            flags["eos"] = bool(last and last in eos_c)
        elif pr.get("type") == "RobertaProcessing":
            flags.update(bos=True, eos=True, sep=True)
    for typ in ("bos", "eos", "sep"):
        if isinstance(tcfg.get("add_%s_token" % typ), bool):
            flags[typ] = tcfg["add_%s_token" % typ]
    for typ in ("bos", "eos", "unk", "sep", "pad"):
        v = cfg.get(typ + "_token_id")
        if typ not in ids and isinstance(v, int):
            ids[typ] = v
    keyname = {"bos": "bos_token_id", "eos": "eos_token_id", "unk": "unknown_token_id",
               "sep": "seperator_token_id", "pad": "padding_token_id"}
    for typ in ("bos", "eos", "unk", "sep", "pad"):
        if typ in ids:
            w.kv("tokenizer.ggml." + keyname[typ], ids[typ], U32)
    for typ in ("bos", "eos", "sep"):
        if typ in flags:
            w.kv("tokenizer.ggml.add_%s_token" % typ, flags[typ], BOOL)
    if isinstance(tcfg.get("chat_template"), str) and tcfg["chat_template"]:
        w.kv("tokenizer.chat_template", tcfg["chat_template"])


def convert(folder, out, outtype="f32", name=None):
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    hf_arch = cfg["architectures"][0]
    a = ARCH[hf_arch]
    idx = os.path.join(folder, "model.safetensors.index.json")
    if os.path.exists(idx):
        with open(idx) as f:
            parts = sorted(set(json.load(f)["weight_map"].values()))
    else:
        parts = ["model.safetensors"]
    order, weights = [], {}
    for part in parts:
        pw = st_io.load(os.path.join(folder, part))
        order += sorted(pw)
        weights.update(pw)
    H = cfg["num_attention_heads"]
    KV = cfg.get("num_key_value_heads")
    KV = H if KV is None else KV  # LlamaModel.permute then divides by it: 0 fails
    w = GGUFWriter()
    w.kv("general.architecture", a)
    w.kv("general.type", "model")
    w.kv("general.name", name or os.path.basename(os.path.abspath(folder)))
    if a == "phi3":
        phi3_kvs(w, cfg)
    else:
        generic_kvs(w, cfg, a, H, KV)
    add_vocab(w, folder, cfg, a)
    rs = cfg.get("rope_scaling") or {}
    rtype = (rs.get("rope_type") or rs.get("type") or "").lower()
    if a == "llama" and rtype == "llama3":
        w.tensor("rope_freqs.weight", llama3_rope_freqs(cfg, rs), GGML_F32)
    for hf in order:
        g = gguf_name(hf)
        if g is None:
            continue
        t = np.asarray(weights[hf])
        if a == "llama":
            if ".self_attn.q_proj." in hf:
                t = permute(t, H)
            elif ".self_attn.k_proj." in hf:
                t = permute(t, KV)
        if t.ndim <= 1 or g.endswith("_norm.weight") or outtype == "f32":
            w.tensor(g, t.astype(np.float32), GGML_F32)
        else:
            w.tensor(g, t.astype(np.float16), GGML_F16)
    w.set("general.file_type", 0 if outtype == "f32" else 1)
    label = size_label(folder, cfg, [(n, a.shape) for n, a, _ in w.tensors])
    if label:
        at = [k for k, *_ in w.kvs].index("general.name") + 1
        w.kvs.insert(at, ("general.size_label", STRING, label, None))
    w.write(out)
    return out


def rounded(n):
    """11.4: scale with a strict '>', by multiplying; round half to even; 2 significant digits."""
    for lim, mul, suf in ((10 ** 12, 1e-12, "T"), (10 ** 9, 1e-9, "B"), (10 ** 6, 1e-6, "M"), (-1, 1e-3, "K")):
        if n > lim:
            x = n * mul
            digits = len(str(round(x))) if round(x) else 0
            return "%.*f%s" % (max(2 - digits, 0), x, suf)


def count_params(shapes):
    """11.3 over (GGUF name, numpy shape): (total, shared + one expert's share, expert count)."""
    total = shared = expert = esum = n = 0
    for name, shape in shapes:
        size = int(np.prod(shape, dtype=object)) if len(shape) else 1
        total += size
        if "_exps." in name and len(shape) >= 3:
            cnt = shape[-2] if name.endswith(".bias") else shape[-3]
            expert += size // cnt
            esum += cnt
            n += 1
        else:
            shared += size
    return total, shared + expert, (esum // n if n else 0)


SIZE_RE = re.compile(r"(?:A|[0-9]+x)?[0-9]+(?:[._][0-9]+)?[KMBT][0-9]?", re.I)
WORD_RE = re.compile(r"small|mini|medium|large|x?xl", re.I)


def name_size(model_id, total):
    """11.2: the size parts of a model id, less context lengths; None when there are none."""
    if " " in model_id:
        return None
    parts = [p for p in model_id.split("/", 1)[-1].split("-") if p]
    kept = []
    for i, p in enumerate(parts):
        numeric = SIZE_RE.fullmatch(p) is not None
        if i == 0 or not (numeric or WORD_RE.fullmatch(p)):
            continue
        p = p.replace("_", ".")
        if p[-1] in "0123456789":
            p = p[:-2] + "." + p[-1] + p[-2]
        if len(p) > 1 and p[-2] in "0123456789" and p[-1] in "kmbt":
            p = p[:-1] + p[-1].upper()
        if total and re.fullmatch(r"[0-9]+(\.[0-9]+)?[KMBT]", p):
            value = float(p[:-1]) * 1000 ** " KMBT".index(p[-1])
            if abs(value - total) > 7 * total // 8:
                continue
        kept.append((p, numeric))
    if any(num for _, num in kept):
        kept = [(p, num) for p, num in kept if num]
    labels = list(dict.fromkeys(p for p, _ in kept))
    return "-".join(labels) or None


def front_matter(folder):
    """README.md's YAML between a first line '---' and the next '---', as a dict."""
    try:
        with open(os.path.join(folder, "README.md"), encoding="utf-8") as f:
            lines = f.read().splitlines()
    except (OSError, UnicodeDecodeError):
        return {}
    if not lines or lines[0] != "---":
        return {}
    body = []
    for line in lines[1:]:
        if line == "---":
            break
        body.append(line)
    import yaml
    d = yaml.safe_load("\n".join(body) + "\n")
    return d if isinstance(d, dict) else {}


def size_label(folder, cfg, shapes):
    """11.1: the first source that gives a label wins."""
    total, active, experts = count_params(shapes)
    card = front_matter(folder)
    for key in ("size_label", "model_size_label"):
        if card.get(key) is not None:
            return card[key] if isinstance(card[key], str) and card[key] else None
    np_ = cfg.get("_name_or_path")
    ids = ([np_] if isinstance(np_, str) and np_.count("/") <= 1 else []) + [os.path.basename(os.path.abspath(folder))]
    for i in ids:
        got = name_size(i, total)
        if got:
            return got
    if total <= 0:
        return None
    return "%dx%s" % (experts, rounded(active)) if experts else rounded(total)


def phi3_kvs(w, cfg):
    """Section 5.5 phi3 order (longrope rope_factors_* not covered)."""
    a = "phi3"
    w.kv(a + ".context_length", cfg.get("n_positions", cfg.get("max_position_embeddings")), U32)
    w.kv(a + ".rope.scaling.original_context_length", cfg["original_max_position_embeddings"], U32)
    w.kv(a + ".embedding_length", cfg["hidden_size"], U32)
    w.kv(a + ".feed_forward_length", cfg["intermediate_size"], U32)
    w.kv(a + ".block_count", cfg["num_hidden_layers"], U32)
    w.kv(a + ".attention.head_count", cfg["num_attention_heads"], U32)
    w.kv(a + ".attention.head_count_kv", cfg["num_key_value_heads"], U32)
    w.kv(a + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"]), F32)
    w.kv(a + ".rope.dimension_count", int(cfg.get("partial_rotary_factor", 1.0) * cfg["hidden_size"])
         // cfg["num_attention_heads"], U32)
    w.kv(a + ".rope.freq_base", float(cfg["rope_theta"]), F32)
    w.kv("general.file_type", 0, U32)   # fixed up by convert()
    w.kv(a + ".attention.sliding_window", cfg.get("sliding_window") or 0, U32)
    w.kv("general.quantization_version", 2, U32)


def generic_kvs(w, cfg, a, H, KV):
    w.kv(a + ".block_count", cfg["num_hidden_layers"], U32)
    if "max_position_embeddings" in cfg:
        w.kv(a + ".context_length", cfg["max_position_embeddings"], U32)
    w.kv(a + ".embedding_length", cfg["hidden_size"], U32)
    w.kv(a + ".feed_forward_length", cfg["intermediate_size"], U32)
    w.kv(a + ".attention.head_count", H, U32)
    if cfg.get("num_key_value_heads") is not None:
        w.kv(a + ".attention.head_count_kv", KV, U32)
    rs = cfg.get("rope_scaling") or {}
    rtype = (rs.get("rope_type") or rs.get("type") or "").lower()
    if rtype == "linear" and "factor" in rs:
        w.kv(a + ".rope.scaling.type", "linear")
        w.kv(a + ".rope.scaling.factor", float(rs["factor"]), F32)
    if "rope_theta" in cfg:
        w.kv(a + ".rope.freq_base", float(cfg["rope_theta"]), F32)
    if "rms_norm_eps" in cfg:
        w.kv(a + ".attention.layer_norm_rms_epsilon", float(cfg["rms_norm_eps"]), F32)
    if "head_dim" in cfg:
        w.kv(a + ".attention.key_length", cfg["head_dim"], U32)
        w.kv(a + ".attention.value_length", cfg["head_dim"], U32)
    w.kv("general.file_type", 0, U32)   # fixed up by convert()
    if a == "llama":
        w.kv("llama.vocab_size", cfg["vocab_size"], U32)
        w.kv("llama.rope.dimension_count", cfg.get("head_dim") or cfg["hidden_size"] // H, U32)
    w.kv("general.quantization_version", 2, U32)


if __name__ == "__main__":
    args = sys.argv[1:]
    opts = {"--outtype": "f32", "--name": None}
    pos = []
    while args:
        x = args.pop(0)
        if x in opts:
            opts[x] = args.pop(0)
        else:
            pos.append(x)
    if len(pos) != 2:
        print(__doc__)
        sys.exit(2)
    convert(pos[0], pos[1], opts["--outtype"], opts["--name"])
