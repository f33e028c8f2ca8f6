"""Group hf: the hf/ folder of a GGUF mount (docs/hf.md), checked with the real clients.

Each tiny random Hugging Face model of tests/clients/tiny_models.py (llama with Llama 3 rope
scaling, llama with attention biases and tied embeddings, qwen2, qwen3, phi3, gemma2, gemma3)
goes HF folder -> model.gguf (weightfs convert -o gguf=f32) -> a mount of that GGUF -> hf/:

- hf/config.json gives back the original config's fields (the hparams, head_dim, tied
  embeddings, biases, Llama 3's rope_scaling read back from rope_freqs.weight, Gemma's soft
  caps, sliding window, query scale and local rope base, Phi-3's partial rotary factor);
- hf/model.safetensors holds every original tensor under its own name with its own bytes
  (q/k rows put back; Gemma's norms (1 + w) - 1 in float32), and nothing else;
- a forward pass in torch (tests/clients/hf_forward.py) over hf/ gives llama.cpp's logits on
  the GGUF, with a negative control for each model's own features;
- -o dtype=bf16 and f16: model.safetensors and torch_dtype in that dtype;
- a GGUF of an architecture transformers has no model for here: no hf/, WEIGHTFS.txt says why.
"""

import json
import os
import struct
import sys
import time

import numpy as np

from wf_harness import TMP, Fail, Mount, check, new_dir, run_cli, skip_or_fail
from t_gguf import CLIENTS, client, npm_dir

KINDS = ("llama", "llama_tied", "qwen2", "qwen3", "phi3", "gemma2", "gemma3")
CFG_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
            "num_key_value_heads", "max_position_embeddings", "vocab_size", "rope_theta", "rms_norm_eps",
            "bos_token_id", "eos_token_id")


def st_load(path):
    """{name: (dtype, shape, bytes)} of a safetensors file."""
    with open(path, "rb") as f:
        b = f.read()
    n = struct.unpack_from("<Q", b)[0]
    h = json.loads(b[8:8 + n])
    return {k: (v["dtype"], v["shape"], b[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}, h


def tokenizer_for(kind):
    import real_tokenizers
    if kind.startswith("gemma"):
        from t_gguf_more import tok_dir
        return tok_dir("plain")
    d = real_tokenizers.folder("gpt2")
    if not d:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    return d


def make_gguf(kind, state):
    import tiny_models
    # not "phi3" in the folder's name (general.name): llama.cpp then wants Phi-3's own tokens
    # (llama-vocab.cpp, _set_token_attr("</s>")) and the gpt2 vocab has none
    folder = tiny_models.make(os.path.join(new_dir("hfsrc-"), "tiny-" + kind.replace("phi3", "phi-mini")), kind,
                              tokenizer_for(kind))
    g = os.path.join(new_dir("hfgguf-"), kind + ".gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", folder, g], timeout=120)
    if rc != 0:
        raise Fail("convert %s to GGUF: exit %d: %s" % (kind, rc, err[-300:]))
    state[kind] = (folder, g)
    return folder, g


def same(a, b):
    if isinstance(a, float) or isinstance(b, float):
        return a is not None and b is not None and np.float32(a) == np.float32(b)
    return a == b


def config_case(kind, state):
    folder, g = make_gguf(kind, state)
    with open(os.path.join(folder, "config.json")) as f:
        orig = json.load(f)
    m = Mount(g)
    try:
        with open(m.path("hf/config.json")) as f:
            cfg = json.load(f)
    finally:
        m.unmount()
    keys = list(CFG_KEYS) + ["architectures", "model_type"]
    keys += {"llama": ["rope_scaling", "attention_bias"], "llama_tied": ["tie_word_embeddings", "attention_bias"],
             "qwen2": ["tie_word_embeddings"], "qwen3": ["head_dim"], "phi3": ["partial_rotary_factor", "original_max_position_embeddings"],
             "gemma2": ["head_dim", "query_pre_attn_scalar", "attn_logit_softcapping", "final_logit_softcapping",
                        "sliding_window"],
             "gemma3": ["head_dim", "query_pre_attn_scalar", "sliding_window", "rope_local_base_freq",
                        "sliding_window_pattern"]}[kind]
    bad = []
    for k in keys:
        want = orig.get(k)
        if k == "rope_scaling":
            got = {kk: cfg.get(k, {}).get(kk) for kk in ("rope_type", "factor", "low_freq_factor", "high_freq_factor",
                                                          "original_max_position_embeddings")}
            want = {kk: (orig[k] or {}).get(kk) for kk in got}
            if any(not same(got[kk], want[kk]) for kk in got):
                bad.append((k, got, want))
            continue
        if k == "model_type" and kind == "gemma3":
            want = "gemma3_text"
        if k in ("bos_token_id", "eos_token_id", "head_dim") and k not in orig:
            continue  # the tokenizer's ids (gguf-py's SpecialVocab), and head_dim from the shapes
        if k == "attention_bias" and want is None:
            want = False  # LlamaConfig's default
        if not same(cfg.get(k), want):
            bad.append((k, cfg.get(k), want))
    if bad:
        raise Fail("%s: hf/config.json differs from the original: %r" % (kind, bad[:4]))
    return "%d fields equal" % len(keys)


def tensors_case(kind, state):
    import st_io
    folder, g = state[kind]
    orig = st_io.load(os.path.join(folder, "model.safetensors"))
    want = {k: v for k, v in orig.items() if not k.endswith("rotary_emb.inv_freq")
            and not (kind == "gemma2" and k == "lm_head.weight")}
    m = Mount(g)
    try:
        got, hdr = st_load(m.path("hf/model.safetensors"))
    finally:
        m.unmount()
    if sorted(got) != sorted(want):
        raise Fail("%s: names %r, want %r" % (kind, sorted(set(got) ^ set(want))[:4], []))
    gemma = kind.startswith("gemma")
    nperm = 0
    for k, a in want.items():
        dt, shape, b = got[k]
        a = np.asarray(a, np.float32)
        if dt != "F32" or list(shape) != list(a.shape):
            raise Fail("%s: %s %s, want F32 %s" % (k, dt, shape, list(a.shape)))
        x = np.frombuffer(b, "<f4").reshape(a.shape)
        exp = (np.float32(1) + a) - np.float32(1) if gemma and k.endswith("norm.weight") else a
        if not np.array_equal(x.view(np.uint32), exp.view(np.uint32)):
            raise Fail("%s: %s differs from the original" % (kind, k))
        nperm += ("q_proj" in k or "k_proj" in k) and kind.startswith("llama")
    return "%d tensors equal bit for bit (%d q/k put back)" % (len(want), nperm)


def forward_case(kind, state):
    import hf_forward
    folder, g = state[kind]
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    ids = [1] + [int(x) for x in np.random.default_rng(11).integers(3, cfg["vocab_size"], 23)]
    out = os.path.join(TMP, "hf-lg.npy")
    client(["logits", g, out] + [str(i) for i in ids])
    a = np.load(out)
    gelu = "ggml" if kind.startswith("gemma") else "exact"
    m = Mount(g)
    try:
        b = np.asarray(hf_forward.logits(m.path("hf"), ids, gelu=gelu))
        ctl = {"llama": {"rope_scaling": None}, "llama_tied": {"rms_norm_eps": 0.1},
               "qwen2": {"rope_theta": 10000.0}, "qwen3": {"rope_theta": 1000.0},
               "phi3": {"partial_rotary_factor": 1.0}, "gemma2": {"final_logit_softcapping": None},
               "gemma3": {"rope_local_base_freq": 1000000.0}}[kind]
        c = np.asarray(hf_forward.logits(m.path("hf"), ids, gelu=gelu, config=ctl))
    finally:
        m.unmount()
    rel = float(np.abs(a - b).max() / np.abs(b).max())
    top = float((a.argmax(-1) == b.argmax(-1)).mean())
    rel_ctl = float(np.abs(a - c).max() / np.abs(c).max())
    if rel > 1e-4 or top < 1:
        raise Fail("%s: logits over hf/ against llama.cpp's: rel %.2g, top-1 %.2f" % (kind, rel, top))
    if rel_ctl < 100 * max(rel, 1e-6):
        raise Fail("%s: the control %r is as close (%.2g)" % (kind, ctl, rel_ctl))
    return "rel %.1e, top-1 %.2f over %d positions; control %s %.1e" % (rel, top, len(ids), ",".join(ctl), rel_ctl)


def tokenizer_case(kind, state):
    """hf/tokenizer.json under HF tokenizers = llama.cpp on the GGUF, over corpus.json, with
    and without the special tokens; the tokenizer files parse as JSON."""
    from t_hftok import hf as hf_ids, ll as ll_ids
    folder, g = state[kind]
    corpus = os.path.join(CLIENTS, "corpus.json")
    m = Mount(g)
    try:
        names = sorted(os.listdir(m.path("hf")))
        for n in ("tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"):
            if n not in names:
                raise Fail("%s: no hf/%s (%r); WEIGHTFS.txt: %r" % (kind, n, names, [
                    ln for ln in open(m.path("WEIGHTFS.txt")).read().splitlines() if "hf/" in ln or "okenizer" in ln]))
            json.load(open(m.path("hf/" + n), encoding="utf-8"))
        tj = os.path.join(new_dir("hftj-"), "tokenizer.json")
        with open(m.path("hf/tokenizer.json"), "rb") as f, open(tj, "wb") as o:
            o.write(f.read())
    finally:
        m.unmount()
    texts = json.load(open(corpus, encoding="utf-8"))
    for special, flags in ((True, []), (False, ["--no-special"])):
        a, b = hf_ids(tj, corpus, special), ll_ids(g, corpus, flags)
        bad = [i for i in range(len(texts)) if a[i] != b[i]]
        if bad:
            raise Fail("%s: %d of %d strings differ (special %s), first %r: HF %s llama.cpp %s" % (
                kind, len(bad), len(texts), special, texts[bad[0]][:40], a[bad[0]][:12], b[bad[0]][:12]))
    return "%d strings x2 equal; %s" % (len(texts), ", ".join(names))


def vocab_only_case(state):
    """A GGUF with a tokenizer and no weights (llama.cpp's vocab files): hf/ holds the
    tokenizer files only, and WEIGHTFS.txt says why there is no config.json."""
    g = os.path.join(npm_dir(), "llama-src", "models", "ggml-vocab-llama-bpe.gguf")
    if not os.path.exists(g):
        skip_or_fail("%s missing (tests/clients/npm.sh)" % g)
    m = Mount(g)
    try:
        names = sorted(os.listdir(m.path("hf")))
        line = [ln for ln in open(m.path("WEIGHTFS.txt")).read().splitlines() if "hf/" in ln or "model.safetensors:" in ln]
    finally:
        m.unmount()
    if names != ["special_tokens_map.json", "tokenizer.json", "tokenizer_config.json"]:
        raise Fail("hf/ of a vocab-only GGUF holds %r" % names)
    if not any("tokenizer files only" in ln for ln in line):
        raise Fail("WEIGHTFS.txt: %r" % line)
    return "; ".join(names) + " | " + " ".join(ln.strip() for ln in line)[:160]


def quant_case(state, kind, ftype, label):
    """A quantized GGUF (llama.cpp's own llama_model_quantize of the F32 one): hf/ holds
    the decoded weights; a torch forward pass over them agrees with llama.cpp on the
    quantized GGUF (which also quantizes its activations: close, not equal)."""
    import hf_forward
    folder, g = state[kind]
    q = os.path.join(new_dir("hfq-"), "%s-%s.gguf" % (kind, label))
    client(["quantize", g, q, str(ftype)])
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    ids = [1] + [int(x) for x in np.random.default_rng(5).integers(3, cfg["vocab_size"], 23)]
    out = os.path.join(TMP, "hfq-lg.npy")
    client(["logits", q, out] + [str(i) for i in ids])
    a = np.load(out)
    m = Mount(q)
    try:
        got, _ = st_load(m.path("hf/model.safetensors"))
        b = np.asarray(hf_forward.logits(m.path("hf"), ids))
    finally:
        m.unmount()
    orig = np.asarray(hf_forward.logits(folder, ids))
    rel = float(np.abs(a - b).max() / np.abs(b).max())
    rel_orig = float(np.abs(a - orig).max() / np.abs(orig).max())
    top = float((a.argmax(-1) == b.argmax(-1)).mean())
    if rel > 0.05 or top < 0.9 or rel >= rel_orig:
        raise Fail("%s %s: logits over hf/ vs llama.cpp on the quantized GGUF: rel %.2g (the F32 original: %.2g), "
                   "top-1 %.2f" % (kind, label, rel, rel_orig, top))
    return "rel %.1e (against the unquantized weights %.1e), top-1 %.2f, %d tensors" % (rel, rel_orig, top, len(got))


def bad_case(state):
    """Hostile or inconsistent key/values: hf/ loses its model part (tokenizer files stay when
    they map) and WEIGHTFS.txt names the key; never a crash, never a wrong tensor."""
    from gguf_write import GGUFWriter, U32, F32, STRING
    V, E = 260, 64
    rng = np.random.default_rng(3)
    base = [("general.architecture", "llama", None), ("llama.block_count", 1, U32),
            ("llama.embedding_length", E, U32), ("llama.feed_forward_length", 128, U32),
            ("llama.attention.head_count", 4, U32), ("llama.attention.head_count_kv", 2, U32),
            ("llama.attention.layer_norm_rms_epsilon", 1e-5, F32), ("llama.context_length", 256, U32),
            ("tokenizer.ggml.model", "gpt2", None), ("tokenizer.ggml.pre", "gpt-2", None),
            ("tokenizer.ggml.tokens", ["t%d" % i for i in range(V)], None)]
    cases = {
        "embedding_length a string": ("llama.embedding_length", "sixty-four", STRING, "embedding_length"),
        "head_count_kv 3 of 4 heads": ("llama.attention.head_count_kv", 3, U32, "head_count_kv"),
        "head_count 0": ("llama.attention.head_count", 0, U32, "head_count"),
        "block_count 2^31": ("llama.block_count", 1 << 31, U32, "block_count"),
        "epsilon missing": ("llama.attention.layer_norm_rms_epsilon", None, None, "layer_norm_rms_epsilon"),
    }
    d = new_dir("hfbad-")
    done = []
    for label, (key, val, typ, says) in cases.items():
        w = GGUFWriter()
        for k, v, t in base:
            if k == key:
                if val is not None:
                    w.kv(k, val, typ)
            else:
                w.kv(k, v, t) if t is not None else w.kv(k, v)
        w.tensor("token_embd.weight", rng.standard_normal((V, E)).astype(np.float32))
        w.tensor("blk.0.attn_q.weight", rng.standard_normal((E, E)).astype(np.float32))
        w.tensor("blk.0.attn_k.weight", rng.standard_normal((E // 2, E)).astype(np.float32))
        g = os.path.join(d, "bad%d.gguf" % len(done))
        w.write(g)
        m = Mount(g)
        try:
            txt = open(m.path("WEIGHTFS.txt")).read()
            names = sorted(os.listdir(m.path("hf"))) if os.path.isdir(m.path("hf")) else []
        finally:
            m.unmount()
        if "model.safetensors" in names or "config.json" in names:
            raise Fail("%s: hf/ still has the model's files: %r" % (label, names))
        line = [ln for ln in txt.splitlines() if "hf/" in ln or "model.safetensors:" in ln]
        if not any(says in ln for ln in line):
            raise Fail("%s: WEIGHTFS.txt does not name %s: %r" % (label, says, line))
        done.append(label)
    return "%d cases: no model files, the key named" % len(done)


def moe_case(state):
    """A Mixtral GGUF (general.architecture llama, llama.expert_count, a router and 3-D expert
    tensors in each layer): hf/ is MixtralForCausalLM with each expert its own tensor, a slab
    of the stacked one, bit for bit.  What transformers would build without some weights stays
    out, naming the tensor, with the tokenizer files kept: a router in a GGUF that says no
    experts (LlamaForCausalLM has no name for it), and an expert_count with no expert tensors.
    The same GGUF with a dense MLP gets LlamaForCausalLM (the control)."""
    import st_io
    from gguf_write import GGUFWriter, U32, F32
    V, E, F, X = 260, 64, 128, 4
    rng = np.random.default_rng(8)
    d = new_dir("hfmoe-")

    def mk(kind):
        w = GGUFWriter()
        moe_kv = kind in ("moe", "no_experts")
        for k, v, t in (("general.architecture", "llama", None), ("llama.block_count", 1, U32),
                        ("llama.context_length", 256, U32), ("llama.embedding_length", E, U32),
                        ("llama.feed_forward_length", F, U32), ("llama.attention.head_count", 4, U32),
                        ("llama.attention.head_count_kv", 2, U32),
                        ("llama.attention.layer_norm_rms_epsilon", 1e-5, F32)) + (
                (("llama.expert_count", X, U32), ("llama.expert_used_count", 2, U32)) if moe_kv else ()) + (
                ("tokenizer.ggml.model", "gpt2", None), ("tokenizer.ggml.pre", "gpt-2", None),
                ("tokenizer.ggml.tokens", ["t%d" % i for i in range(V)], None),
                ("tokenizer.ggml.merges", ["t 1"], None)):
            w.kv(k, v, t) if t is not None else w.kv(k, v)
        f32 = lambda *shape: rng.standard_normal(shape).astype(np.float32)
        w.tensor("token_embd.weight", f32(V, E))
        w.tensor("blk.0.attn_norm.weight", f32(E))
        w.tensor("blk.0.attn_q.weight", f32(E, E))
        w.tensor("blk.0.attn_k.weight", f32(E // 2, E))
        w.tensor("blk.0.attn_v.weight", f32(E // 2, E))
        w.tensor("blk.0.attn_output.weight", f32(E, E))
        w.tensor("blk.0.ffn_norm.weight", f32(E))
        exps = {}
        if kind != "dense":
            w.tensor("blk.0.ffn_gate_inp.weight", f32(X, E))
        if kind in ("moe", "router_only"):
            for n, shape in (("gate", (X, F, E)), ("up", (X, F, E)), ("down", (X, E, F))):
                exps[n] = f32(*shape)
                w.tensor("blk.0.ffn_%s_exps.weight" % n, exps[n])
        if kind in ("dense", "router_only"):
            w.tensor("blk.0.ffn_gate.weight", f32(F, E))
            w.tensor("blk.0.ffn_up.weight", f32(F, E))
            w.tensor("blk.0.ffn_down.weight", f32(E, F))
        w.tensor("output_norm.weight", f32(E))
        w.tensor("output.weight", f32(V, E))
        g = os.path.join(d, kind + ".gguf")
        w.write(g)
        m = Mount(g)
        try:
            names = sorted(os.listdir(m.path("hf"))) if os.path.isdir(m.path("hf")) else []
            lines = [ln for ln in open(m.path("WEIGHTFS.txt")).read().splitlines()
                     if "hf/" in ln or "model.safetensors:" in ln]
            cfg = json.load(open(m.path("hf/config.json"))) if "config.json" in names else {}
            st = st_io.load(m.path("hf/model.safetensors")) if "model.safetensors" in names else {}
        finally:
            m.unmount()
        return names, lines, cfg, st, exps

    names, lines, cfg, st, _ = mk("dense")
    if cfg.get("architectures") != ["LlamaForCausalLM"] or "model.safetensors" not in names:
        raise Fail("the dense control: hf/ holds %r, %r; WEIGHTFS.txt %r" % (names, cfg.get("architectures"), lines))
    names, lines, cfg, st, exps = mk("moe")
    if cfg.get("architectures") != ["MixtralForCausalLM"] or cfg.get("num_local_experts") != X or \
            cfg.get("num_experts_per_tok") != 2:
        raise Fail("hf/ of a Mixtral GGUF: %r; config %r; WEIGHTFS.txt %r" % (names, cfg, lines))
    for n, w in (("w1", "gate"), ("w2", "down"), ("w3", "up")):
        for x in range(X):
            k = "model.layers.0.block_sparse_moe.experts.%d.%s.weight" % (x, n)
            if k not in st or st[k].tobytes() != exps[w][x].tobytes():
                raise Fail("%s: not ffn_%s_exps' slab %d" % (k, w, x))
    if "model.layers.0.block_sparse_moe.gate.weight" not in st:
        raise Fail("no router in hf/model.safetensors: %r" % sorted(st)[:8])
    for kind, says in (("router_only", "tensor 'blk.0.ffn_gate_inp.weight': LlamaForCausalLM has no HF name for it"),
                       ("no_experts", "llama.expert_count 4, but layer 0 has 0 of its 3 stacked expert tensors")):
        names, lines, _, _, _ = mk(kind)
        if {"config.json", "generation_config.json", "model.safetensors"} & set(names) or "tokenizer.json" not in names:
            raise Fail("%s: hf/ holds %r" % (kind, names))
        if not any(says in ln for ln in lines):
            raise Fail("%s: WEIGHTFS.txt does not say %r: %r" % (kind, says, lines))
    return "Mixtral: %d tensors, %d experts each a slab; router without experts and experts missing left out" % (
        len(st), X)


def dtype_case(state):
    folder, g = state["qwen2"]
    res = []
    for dt, st, torch_dt in (("bf16", "BF16", "bfloat16"), ("f16", "F16", "float16")):
        m = Mount(g, ["-o", "dtype=" + dt])
        try:
            got, _ = st_load(m.path("hf/model.safetensors"))
            cfg = json.load(open(m.path("hf/config.json")))
            tf = m.path("model/embed_tokens/weight") if os.path.exists(m.path("model")) else None
            emb = got["model.embed_tokens.weight"]
            with open(m.path("token_embd/weight"), "rb") as f:
                direct = f.read()
        finally:
            m.unmount()
        if {v[0] for v in got.values()} != {st} or cfg.get("torch_dtype") != torch_dt:
            raise Fail("-o dtype=%s: dtypes %r, torch_dtype %r" % (dt, {v[0] for v in got.values()},
                                                                 cfg.get("torch_dtype")))
        if emb[2] != direct:
            raise Fail("-o dtype=%s: model.embed_tokens.weight differs from the mount's token_embd/weight" % dt)
        res.append(dt)
    return "%s: every tensor in that dtype, = the tensor files" % ", ".join(res)


def unknown_case(state):
    """An architecture transformers has no model for here: no hf/, WEIGHTFS.txt says why."""
    src = os.path.join(os.path.dirname(__file__), "..", "data", "ggml-oracle", "type_q8_0.gguf")
    m = Mount(os.path.abspath(src))
    try:
        if os.path.exists(m.path("hf")):
            raise Fail("hf/ for general.architecture 'oracle'")
        txt = open(m.path("WEIGHTFS.txt")).read()
        line = [ln for ln in txt.splitlines() if "No hf/" in ln]
        if not line or "oracle" not in line[0]:
            raise Fail("WEIGHTFS.txt: %r" % line)
    finally:
        m.unmount()
    return line[0].strip()[:100]


def spm_long_token():
    """Issue 40 item 5: hf/'s merges of a SentencePiece vocabulary hashed both halves at every
    split of every token, quadratic in a token's length (a token of 20k / 40k / 80k bytes:
    `ls` 0.10 / 0.30 / 1.39 s; 1,000,000 bytes: over 30 s), and they are made before the
    mount exists. One token of N and of 4N bytes, timed in the same run (median of 3): within
    5 times; and a 1,000,000-byte token in a few seconds."""
    sys.path.insert(0, CLIENTS)
    from gguf_write import GGUFWriter, F32, I32
    d = new_dir("hfspm-")

    def make(n):
        toks = ["<unk>", "<s>", "</s>", "a", "b", "ab", "\u2581", "a" * n, "b" + "a" * n]
        w = GGUFWriter()
        w.kv("general.architecture", "llama")
        w.kv("tokenizer.ggml.model", "llama")
        w.kv("tokenizer.ggml.tokens", toks)
        w.kv("tokenizer.ggml.scores", [-float(i) for i in range(len(toks))], F32)
        w.kv("tokenizer.ggml.token_type", [2, 3, 3] + [1] * (len(toks) - 3), I32)
        g = os.path.join(d, "long%d.gguf" % n)
        w.write(g)
        return g

    def ls_time(g, runs):
        ts = []
        for _ in range(runs):
            rc, out, err, secs = run_cli(["ls", g], timeout=60)
            if rc != 0:
                raise Fail("ls %s: exit %d: %s" % (os.path.basename(g), rc, err[-300:]))
            ts.append(secs)
        return sorted(ts)[len(ts) // 2]

    n = 40000
    t1, t4 = ls_time(make(n), 3), ls_time(make(4 * n), 3)
    if t4 > 5 * max(t1, 0.05):
        raise Fail("a token of %d bytes: ls %.2f s, of %d bytes %.2f s: not linear" % (4 * n, t4, n, t1))
    big = ls_time(make(1000000), 1)
    if big > 10:
        raise Fail("a token of 1,000,000 bytes: ls %.1f s" % big)
    return "ls with a token of %d bytes %.2f s, %d bytes %.2f s, 1,000,000 bytes %.2f s" % (n, t1, 4 * n, t4, big)


def group_hf():
    check("hf: a SentencePiece token of N and 4N bytes: hf/'s merges within 5 times the time", spm_long_token)
    npm_dir()
    sys.path.insert(0, CLIENTS)
    state = {}
    for kind in KINDS:
        check("hf: %s: hf/config.json gives back the original config" % kind, config_case, kind, state)
        if kind not in state:
            continue
        check("hf: %s: hf/model.safetensors = the original tensors, bit for bit" % kind, tensors_case, kind, state)
        check("hf: %s: a torch forward pass over hf/ = llama.cpp's logits on the GGUF" % kind, forward_case, kind,
              state)
        check("hf: %s: HF tokenizers on hf/tokenizer.json = llama.cpp on the GGUF" % kind, tokenizer_case, kind,
              state)
    for kind, ftype, label in (("llama", 7, "Q8_0"), ("qwen2", 15, "Q4_K_M")):
        if kind in state:
            check("hf: %s quantized to %s by llama.cpp: torch over hf/ agrees with llama.cpp" % (kind, label),
                  quant_case, state, kind, ftype, label)
    if "qwen2" in state:
        check("hf: -o dtype=bf16 and f16: hf/model.safetensors and torch_dtype follow", dtype_case, state)
    check("hf: key/values of the wrong type, inconsistent head counts: no model files, WEIGHTFS.txt says which",
          bad_case, state)
    check("hf: a Mixtral GGUF: MixtralForCausalLM, each expert a slab; unknown or missing expert tensors: "
          "no config.json or model.safetensors, WEIGHTFS.txt names the tensor", moe_case, state)
    check("hf: a vocab-only GGUF: hf/ holds the tokenizer files only, WEIGHTFS.txt says why", vocab_only_case, state)
    check("hf: a GGUF of no architecture transformers has here: no hf/, WEIGHTFS.txt says why", unknown_case, state)
