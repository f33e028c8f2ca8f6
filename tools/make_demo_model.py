#!/usr/bin/python3
"""Make the demo model: a small llama-shaped GGUF that looks like a real one.

    PYTHONPATH=python WEIGHTFS_LIB=build/libweightfs.so.0 \\
        /usr/bin/python3 tools/make_demo_model.py [OUT.gguf]

Writes tests/data/demo/demo-llama.gguf (or OUT.gguf) from tests/data/demo/corpus.txt, a
snapshot of README.md and docs/*.md kept in the tree so that the output never changes
(`--corpus` remakes the snapshot from the current docs first).  Deterministic: a fixed
seed, no time stamps; tests/mount checks that a rerun gives the same tensors.

What is in it, so that `weightfs stats`, previews, hf/ and llama.cpp show something sensible
(the synthetic tests/data/ggml-oracle/mixed_llama_tiny.gguf reaches float32's extremes):
- a byte-level BPE tokenizer ("gpt2", pre "gpt-2") trained here on the corpus: 256 byte
  tokens, 510 merges, <|begin_of_text|> and <|end_of_text|>; 768 tokens;
- n_embd 256, 2 layers, 4 heads of 64 (2 KV heads), n_ff 512;
- token_embd (Q4_K) and output (Q6_K) a rank-256 factoring of the corpus's bigram
  log-probabilities, so greedy decoding continues text the way the docs do;
- attention and FFN weights normal with the usual init scales (std 0.02, output
  projections 0.02/sqrt(2 n_layer)), in F16, Q8_0, Q4_K and Q6_K, quantized by weightfs's
  own encoders (weightfs.quantize); norms F32 near 1, with a few outlier channels.
"""
import glob
import math
import os
import re
import struct
import sys
from collections import Counter

import numpy as np

import weightfs

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..")
DEMO = os.path.join(ROOT, "tests", "data", "demo")
SEED = 20261203
N_MERGES = 510
E, L, H, KV, FF = 256, 2, 4, 2, 512
OUTLIERS = (17, 101, 230)          # residual channels with a large embedding scale
BOS, EOS = "<|begin_of_text|>", "<|end_of_text|>"

# GGUF value types and the ggml types used here
U32, I32, F32, BOOL, STRING, ARRAY = 4, 5, 6, 7, 8, 9
GGML = {"f32": 0, "f16": 1, "q8_0": 8, "q4_k": 12, "q6_k": 14}

# Per tensor of each layer: a mix of types, as a Q4_K_M file mixes them.
LAYER_TYPES = [
    {"attn_q": "q4_k", "attn_k": "f16", "attn_v": "q6_k", "attn_output": "q8_0",
     "ffn_gate": "q4_k", "ffn_up": "q4_k", "ffn_down": "q6_k"},
    {"attn_q": "q8_0", "attn_k": "q4_k", "attn_v": "f16", "attn_output": "q4_k",
     "ffn_gate": "q6_k", "ffn_up": "q8_0", "ffn_down": "q4_k"},
]


def make_corpus():
    """The snapshot: README.md then docs/*.md in name order, at most 160 KB."""
    parts = [os.path.join(ROOT, "README.md")] + sorted(glob.glob(os.path.join(ROOT, "docs", "*.md")))
    text = "\n\n".join(open(p, encoding="utf-8").read() for p in parts)
    text = text[:160000]
    with open(os.path.join(DEMO, "corpus.txt"), "w", encoding="utf-8") as f:
        f.write(text)


# ---------------------------------------------------------------- byte-level BPE
def bytes_to_unicode():
    """GPT-2's map of the 256 bytes to printable characters."""
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, map(chr, cs)))


# GPT-2's pre-tokenizer, with [^\W\d_] for \p{L} and \d for \p{N} (python's re has no \p)
PRE = re.compile(r"""'s|'t|'re|'ve|'m|'ll|'d| ?[^\W\d_]+| ?\d+| ?[^\s\w]+|\s+(?!\S)|\s+""")


def words_of(text):
    b2u = bytes_to_unicode()
    return ["".join(b2u[b] for b in w.encode("utf-8")) for w in PRE.findall(text)]


def train_bpe(words):
    """Merges, most frequent pair first (ties: the smaller pair), over word counts."""
    counts = Counter(words)
    split = {w: list(w) for w in counts}
    merges = []
    for _ in range(N_MERGES):
        pairs = Counter()
        for w, c in counts.items():
            s = split[w]
            for a, b in zip(s, s[1:]):
                pairs[a, b] += c
        if not pairs:
            break
        best = min(pairs, key=lambda p: (-pairs[p], p))
        merges.append(best)
        for w in counts:
            s = split[w]
            i, out = 0, []
            while i < len(s):
                if i + 1 < len(s) and (s[i], s[i + 1]) == best:
                    out.append(s[i] + s[i + 1])
                    i += 2
                else:
                    out.append(s[i])
                    i += 1
            split[w] = out
    return merges


def encode_word(w, ranks):
    s = list(w)
    while len(s) > 1:
        r = [(ranks.get((a, b), 1 << 30), i) for i, (a, b) in enumerate(zip(s, s[1:]))]
        best, i = min(r)
        if best == 1 << 30:
            break
        s[i:i + 2] = [s[i] + s[i + 1]]
    return s


# ---------------------------------------------------------------- weights
def bigram_factors(text, tokens, merges, rng):
    """token_embd and output rows whose products are the corpus's bigram log-probs."""
    ranks = {m: i for i, m in enumerate(merges)}
    tid = {t: i for i, t in enumerate(tokens)}
    V = len(tokens)
    cnt = np.zeros((V, V), np.float64)
    for para in re.split(r"\n\s*\n", text):
        if not para.strip():
            continue
        ids = [tid[BOS]] + [tid[p] for w in words_of(para) for p in encode_word(w, ranks)] + [tid[EOS]]
        np.add.at(cnt, (ids[:-1], ids[1:]), 1)
    logp = np.log((cnt + 0.01) / (cnt + 0.01).sum(1, keepdims=True))
    logp -= logp.mean(1, keepdims=True)
    u, s, vt = np.linalg.svd(logp)
    u, s, vt = u[:, :E], s[:E], vt[:E]
    sign = np.sign(u[np.abs(u).argmax(0), np.arange(E)])   # SVD's signs are arbitrary: fix them
    u, vt = u * sign, vt * sign[:, None]
    emb = u * np.sqrt(s)
    out = vt.T * np.sqrt(s)
    # the final norm divides each row by its rms: give output the scale that undoes it
    out *= np.median(np.sqrt((emb ** 2).mean(1)))
    emb *= 0.05 / emb.std()             # a real model's embedding scale
    emb[:, list(OUTLIERS)] *= 6.0
    # a little noise, as training leaves
    emb += rng.standard_normal(emb.shape) * 0.004
    return emb.astype(np.float32), out.astype(np.float32)


def layer_weights(rng):
    std, std_o = 0.02, 0.02 / math.sqrt(2 * L)
    hd = E // H

    def n(*shape, s=std):
        return (rng.standard_normal(shape) * s).astype(np.float32)

    def norm():
        w = 1.0 + n(E, s=0.05)
        w[list(OUTLIERS)] = 1.0 / 6.0 + n(len(OUTLIERS), s=0.01)   # norms damp the big channels
        return w
    return {"attn_norm": norm(), "attn_q": n(H * hd, E), "attn_k": n(KV * hd, E),
            "attn_v": n(KV * hd, E), "attn_output": n(E, H * hd, s=std_o), "ffn_norm": norm(),
            "ffn_gate": n(FF, E), "ffn_up": n(FF, E), "ffn_down": n(E, FF, s=std_o)}


# ---------------------------------------------------------------- GGUF
def _s(x):
    b = x.encode("utf-8")
    return struct.pack("<Q", len(b)) + b


def _kv(key, t, v, et=None):
    out = _s(key) + struct.pack("<I", t)
    if t == ARRAY:
        out += struct.pack("<IQ", et, len(v))
        if et == STRING:
            return out + b"".join(_s(x) for x in v)
        return out + np.asarray(v, {I32: "<i4", F32: "<f4"}[et]).tobytes()
    if t == STRING:
        return out + _s(v)
    return out + struct.pack({U32: "<I", I32: "<i", F32: "<f", BOOL: "<?"}[t], v)


def encode(arr, typ):
    if typ == "f32":
        return arr.astype("<f4").tobytes()
    if typ == "f16":
        return arr.astype("<f2").tobytes()
    return weightfs.quantize(arr, typ)


def write_gguf(path, kvs, tensors, align=32):
    head = [b"GGUF", struct.pack("<IQQ", 3, len(tensors), len(kvs))]
    head += [_kv(*kv) for kv in kvs]
    blobs, off = [], 0
    for name, arr, typ in tensors:
        data = encode(arr, typ)
        head.append(_s(name) + struct.pack("<I", arr.ndim) +
                    b"".join(struct.pack("<Q", d) for d in reversed(arr.shape)) +
                    struct.pack("<IQ", GGML[typ], off))
        pad = -len(data) % align
        blobs.append(data + b"\0" * pad)
        off += len(data) + pad
    h = b"".join(head)
    with open(path, "wb") as f:
        f.write(h + b"\0" * (-len(h) % align) + b"".join(blobs))


def build(out_path):
    text = open(os.path.join(DEMO, "corpus.txt"), encoding="utf-8").read()
    merges = train_bpe(words_of(text))
    b2u = bytes_to_unicode()
    tokens = [b2u[b] for b in range(256)] + [a + b for a, b in merges] + [BOS, EOS]
    ttype = [1] * (len(tokens) - 2) + [3, 3]
    V = len(tokens)
    rng = np.random.default_rng(SEED)
    emb, out = bigram_factors(text, tokens, merges, rng)
    tensors = [("token_embd.weight", emb, "q4_k")]
    for i in range(L):
        w = layer_weights(rng)
        for k in ("attn_norm", "attn_q", "attn_k", "attn_v", "attn_output", "ffn_norm",
                  "ffn_gate", "ffn_up", "ffn_down"):
            tensors.append(("blk.%d.%s.weight" % (i, k), w[k], LAYER_TYPES[i].get(k, "f32")))
    onorm = (1.0 + rng.standard_normal(E) * 0.05).astype(np.float32)
    onorm[list(OUTLIERS)] = 1.0 / 6.0
    tensors += [("output_norm.weight", onorm, "f32"), ("output.weight", out, "q6_k")]
    kvs = [("general.architecture", STRING, "llama"),
           ("general.name", STRING, "weightfs demo llama"),
           ("general.description", STRING, "made by tools/make_demo_model.py: a bigram model of "
            "weightfs's docs in a llama's shape, not a trained model"),
           ("general.file_type", U32, 15),                    # LLAMA_FTYPE_MOSTLY_Q4_K_M
           ("general.quantization_version", U32, 2),
           ("llama.vocab_size", U32, V),
           ("llama.context_length", U32, 512),
           ("llama.embedding_length", U32, E),
           ("llama.block_count", U32, L),
           ("llama.feed_forward_length", U32, FF),
           ("llama.rope.dimension_count", U32, E // H),
           ("llama.attention.head_count", U32, H),
           ("llama.attention.head_count_kv", U32, KV),
           ("llama.attention.layer_norm_rms_epsilon", F32, 1e-5),
           ("llama.rope.freq_base", F32, 10000.0),
           ("tokenizer.ggml.model", STRING, "gpt2"),
           ("tokenizer.ggml.pre", STRING, "gpt-2"),
           ("tokenizer.ggml.tokens", ARRAY, tokens, STRING),
           ("tokenizer.ggml.token_type", ARRAY, ttype, I32),
           ("tokenizer.ggml.merges", ARRAY, ["%s %s" % m for m in merges], STRING),
           ("tokenizer.ggml.bos_token_id", U32, V - 2),
           ("tokenizer.ggml.eos_token_id", U32, V - 1),
           ("tokenizer.ggml.add_bos_token", BOOL, True),
           ("tokenizer.ggml.add_eos_token", BOOL, False)]
    write_gguf(out_path, kvs, tensors)


def main(argv):
    if argv[:1] == ["--corpus"]:
        make_corpus()
        argv = argv[1:]
    out = argv[0] if argv else os.path.join(DEMO, "demo-llama.gguf")
    build(out)
    print("wrote %s (%d bytes)" % (out, os.path.getsize(out)))


if __name__ == "__main__":
    main(sys.argv[1:])
