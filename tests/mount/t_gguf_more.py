"""Group gguf_more: what group gguf (t_gguf.py) leaves out of model.gguf, checked with the
real clients (tests/clients/):

- the SentencePiece path: a real tokenizer.model (ModelProto, BPE, byte_fallback) rebuilt
  from llama.cpp's ggml-vocab-llama-spm.gguf (Llama 2's vocab) by tests/clients/spm_model.py,
  in a tiny random llama with no tokenizer.json: llama.cpp's tokens on the mount's
  model.gguf equal its tokens on the original vocab GGUF (corpus.json, and the .inp test
  strings, which also equal the .out ids); tokens, scores and token types equal the
  original's exactly with a plain tokenizer_config.json, and with added_tokens.json,
  added_tokens_decoder and a larger vocab_size differ exactly as the converter's
  _create_vocab_sentencepiece (conversion/base.py) makes them; llama.cpp's logits = HF;
- the Llama 2 / Mistral style tokenizer.json (BPE + byte_fallback, no tokenizer.model):
  tokenizer.ggml.model "llama", every score -1000, <0xXX> BYTE, the special tokens
  CONTROL, as gguf-py's LlamaHfVocab; llama.cpp loads and runs it;
- Gemma 2 and Gemma 3 (text) with that tokenizer.model: llama.cpp's logits = an HF
  forward pass (tests/clients/hf_forward.py), norms stored as 1 + w, gemma2's lm_head
  dropped, softcapping / sliding window / local rope base keys;
- sharded checkpoints (tensor order: part files by name, names sorted within each, as
  ref_convert.py), and BF16 and F16 checkpoints under -o gguf=auto (BF16 and F16 kept
  as stored, q/k rows permuted).
"""

import json
import os
import re
import struct
import subprocess
import sys

import numpy as np

from wf_harness import TMP, Fail, Mount, check, new_dir, run_cli, skip_or_fail
from t_gguf import CLIENTS, client, gguf_read, npm_dir

NORMAL, UNKNOWN, CONTROL, USER_DEFINED, UNUSED, BYTE = 1, 2, 3, 4, 5, 6


def f32bits(xs):
    return np.asarray(xs, np.float32).view(np.uint32)


def kvmap(path):
    kvs, infos, b, ds = gguf_read(path)
    return {k: v for k, _, v in kvs}, infos, b, ds


def gguf_read_header(path):
    """gguf_read, but reading only the header (model.gguf's data may fail with EIO)."""
    head = b""
    fd = os.open(path, os.O_RDONLY)
    try:
        while True:  # up to the first block that fails
            try:
                c = os.pread(fd, 1 << 16, len(head))
            except OSError:
                break
            if not c:
                break
            head += c
    finally:
        os.close(fd)
    tmp = os.path.join(TMP, "hdr-only.gguf")
    with open(tmp, "wb") as f:
        f.write(head)
    return gguf_read(tmp)


def arr(kv, key):
    v = kv.get(key)
    return v[1] if isinstance(v, tuple) else None


def spm_vocab_gguf():
    d = npm_dir()
    g = os.path.join(d, "llama-src", "models", "ggml-vocab-llama-spm.gguf")
    if not os.path.exists(g) or not os.path.exists(g + ".inp"):
        skip_or_fail("no %s (tests/clients/npm.sh clones the llama.cpp source)" % g)
    return g


def tok_dir(kind):
    """A tokenizer folder around the rebuilt tokenizer.model. plain: tokenizer_config.json
    with the Llama 2 bos/eos/unk strings and add flags only. added: Llama 2's real
    added_tokens_decoder (<unk>, <s>, </s> special) plus added tokens past the pieces."""
    import spm_model
    d = os.path.join(TMP, "spm-tok-" + kind)
    if os.path.isdir(d):
        return d
    os.makedirs(d)
    _, tokens, scores, types = spm_model.read_gguf_vocab(spm_vocab_gguf())
    model_type = 2                      # BPE, as Llama 2's
    if kind == "added":
        # a USER_DEFINED piece (the converter makes it NORMAL) and trainer_spec UNIGRAM
        types = list(types)
        types[300] = USER_DEFINED
        model_type = 1
    with open(os.path.join(d, "tokenizer.model"), "wb") as f:
        f.write(spm_model.model_proto(tokens, scores, types, model_type))
    tc = {"add_bos_token": True, "add_eos_token": False, "bos_token": "<s>", "eos_token": "</s>",
          "unk_token": "<unk>", "legacy": True, "tokenizer_class": "LlamaTokenizer"}
    if kind == "added":
        dec = {str(i): {"content": c, "lstrip": False, "normalized": False, "rstrip": False,
                        "single_word": False, "special": True} for i, c in enumerate(("<unk>", "<s>", "</s>"))}
        dec["32000"] = {"content": "<pad>", "special": False}            # looks special -> CONTROL
        dec["32001"] = {"content": "\u2581hello\u2581wfs", "special": False}  # U+2581 -> space, USER_DEFINED
        dec["40000"] = {"content": "<far>", "special": True}              # past vocab_size: ignored
        tc["added_tokens_decoder"] = dec
        with open(os.path.join(d, "added_tokens.json"), "w") as f:
            json.dump({"<pad>": 32000, "<extra>": 32001, "<far2>": 50000}, f)
    with open(os.path.join(d, "tokenizer_config.json"), "w") as f:
        json.dump(tc, f)
    return d


def expected_spm(tokens, scores, types, vocab_size, added_json, decoder):
    """_create_vocab_sentencepiece (conversion/base.py), restated: [PADi] -10000 UNUSED
    everywhere, the pieces over them (SentencePiece's USER_DEFINED becomes NORMAL; none
    here), added_tokens.json ids below vocab_size USER_DEFINED -1000, then
    added_tokens_decoder ids below vocab_size: CONTROL when special or looking special
    (<pad>, <|...|>, ...), else USER_DEFINED with U+2581 -> space, score -1000."""
    T = [b"[PAD%d]" % i for i in range(vocab_size)]
    S = [-10000.0] * vocab_size
    Y = [UNUSED] * vocab_size
    for i, (t, s, y) in enumerate(zip(tokens, scores, types)):
        if i < vocab_size:
            T[i], S[i], Y[i] = t, s, (NORMAL if y == USER_DEFINED else y)
    for k, i in (added_json or {}).items():
        if i < vocab_size:
            T[i], S[i], Y[i] = k.encode(), -1000.0, USER_DEFINED
    for i, e in (decoder or {}).items():
        i = int(i)
        if i >= vocab_size:
            continue
        c = e["content"]
        special = e.get("special") or c in ("<pad>", "<mask>", "<2mass>", "[@BOS@]") or \
            (c.startswith("<|") and c.endswith("|>"))
        if not special:
            c = c.replace("\u2581", " ")
        T[i], S[i], Y[i] = c.encode(), -1000.0, CONTROL if special else USER_DEFINED
    return T, S, Y


def make_folder(kind, tdir, prefix, **kw):
    import tiny_models
    return tiny_models.make(os.path.join(new_dir(prefix), "tiny-" + kind), kind, tdir, **kw)


def inp_strings(g):
    raw = open(g + ".inp", "rb").read().decode("utf-8")
    inp = raw.split("\n__ggml_vocab_test__\n")
    out = open(g + ".out", encoding="utf-8").read().split("\n")[:len(inp)]
    return inp, [[int(x) for x in o.split()] for o in out]


def tokenize_all(model, corpus_path, *flags):
    return json.loads(client(["tokenize", model, corpus_path] + list(flags)))


def logits_rel(g, folder, ids, gelu="exact", config=None):
    import hf_forward
    out = os.path.join(TMP, "lg-more.npy")
    client(["logits", g, out] + [str(i) for i in ids])
    a = np.load(out)
    b = np.asarray(hf_forward.logits(folder, ids, gelu=gelu, config=config))
    return float(np.abs(a - b).max() / np.abs(b).max()), float((a.argmax(-1) == b.argmax(-1)).mean()), a


def need_gguf(m):
    g = m.path("model.gguf")
    if not os.path.exists(g):
        raise Fail("no model.gguf; WEIGHTFS.txt: %s" % open(m.path("WEIGHTFS.txt")).read()[-400:])
    return g


# ---------------------------------------------------------------- 1. tokenizer.model
def spm_plain_case(state):
    orig = spm_vocab_gguf()
    import spm_model
    _, tokens, scores, types = spm_model.read_gguf_vocab(orig)
    folder = make_folder("llama", tok_dir("plain"), "hfspm-", config={"bos_token_id": 1, "eos_token_id": 2})
    state["spm_folder"] = folder
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = need_gguf(m)
        kv, _, _, _ = kvmap(g)

        def arrays():
            T, S, Y = arr(kv, "tokenizer.ggml.tokens"), arr(kv, "tokenizer.ggml.scores"), \
                arr(kv, "tokenizer.ggml.token_type")
            if kv.get("tokenizer.ggml.model") != b"llama" or kv.get("tokenizer.ggml.pre") != b"default":
                raise Fail("model %r pre %r" % (kv.get("tokenizer.ggml.model"), kv.get("tokenizer.ggml.pre")))
            if T != tokens:
                bad = [i for i, (a, b) in enumerate(zip(T, tokens)) if a != b][:5]
                raise Fail("tokens differ (%d vs %d) at %r" % (len(T), len(tokens), bad))
            if not np.array_equal(f32bits(S), f32bits(scores)):
                bad = np.nonzero(f32bits(S) != f32bits(scores))[0][:5]
                raise Fail("scores differ at %r: %r vs %r" % (bad, [S[i] for i in bad], [scores[i] for i in bad]))
            if Y != types:
                bad = [i for i, (a, b) in enumerate(zip(Y, types)) if a != b][:5]
                raise Fail("token types differ at %r: %r vs %r" % (bad, [Y[i] for i in bad], [types[i] for i in bad]))
            want = {"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
                    "tokenizer.ggml.add_bos_token": True, "tokenizer.ggml.add_eos_token": False}
            got = {k: kv.get(k) for k in want}
            if got != want or "tokenizer.ggml.merges" in kv:
                raise Fail("special key/values %r, merges %r" % (got, "tokenizer.ggml.merges" in kv))
            return "%d tokens, scores and types as ggml-vocab-llama-spm.gguf's" % len(T)
        check("gguf_more: tokenizer.model: tokens, scores, token types = the original vocab GGUF's", arrays)

        def corpus():
            cp = os.path.join(CLIENTS, "corpus.json")
            n = 0
            for flags in ((), ("--no-special", "--no-parse-special")):
                a, b = tokenize_all(g, cp, *flags), tokenize_all(orig, cp, *flags)
                bad = [i for i, (x, y) in enumerate(zip(a, b)) if x != y]
                if bad or len(a) != len(b):
                    raise Fail("%s: %d strings differ, e.g. #%r: %r vs %r" % (
                        flags, len(bad), bad[:3], a[bad[0]][:12] if bad else None, b[bad[0]][:12] if bad else None))
                n += len(a)
            return "%d tokenizations" % n
        check("gguf_more: tokenizer.model: llama.cpp's tokens on model.gguf = on ggml-vocab-llama-spm.gguf (corpus)",
              corpus)

        def vectors():
            inp, want = inp_strings(orig)
            p = os.path.join(TMP, "spm-inp.json")
            with open(p, "w", encoding="utf-8") as f:
                json.dump(inp, f)
            a = tokenize_all(g, p, "--no-special", "--no-parse-special")
            b = tokenize_all(orig, p, "--no-special", "--no-parse-special")
            bad = [i for i in range(len(inp)) if not (a[i] == b[i] == want[i])]
            if bad:
                i = bad[0]
                raise Fail("%d of %d differ; #%d %r: mount %r, original %r, .out %r" % (
                    len(bad), len(inp), i, inp[i][:30], a[i][:10], b[i][:10], want[i][:10]))
            return "%d strings = .out" % len(inp)
        check("gguf_more: tokenizer.model: llama.cpp test vectors (.inp/.out) on model.gguf", vectors)

        def logits():
            cp = os.path.join(CLIENTS, "corpus.json")
            ids = max(tokenize_all(g, cp), key=len)[:24]
            rel, top, _ = logits_rel(g, folder, ids)
            if rel > 1e-4 or top < 1:
                raise Fail("relative error %.2g, top-1 agreement %.2f" % (rel, top))
            return "rel %.1e over %d positions" % (rel, len(ids))
        check("gguf_more: tokenizer.model llama: llama.cpp's logits = HF forward pass (-o gguf=f32)", logits)
    finally:
        m.unmount()


def spm_added_case():
    """added_tokens.json, added_tokens_decoder and vocab_size past the pieces (and a
    USER_DEFINED piece, trainer_spec UNIGRAM): the arrays differ from the original exactly
    as _create_vocab_sentencepiece makes them: the special <unk>, <s>, </s> of
    added_tokens_decoder become CONTROL with score -1000 (the converter's override of the
    pieces' UNKNOWN/CONTROL with score 0), the USER_DEFINED piece 300 stays NORMAL (only
    IsUnknown/IsControl/IsUnused/IsByte change the type)."""
    orig = spm_vocab_gguf()
    import spm_model
    _, tokens, scores, types = spm_model.read_gguf_vocab(orig)
    td = tok_dir("added")
    V = 32003
    folder = make_folder("llama", td, "hfspm2-", vocab_size=V, config={"bos_token_id": 1, "eos_token_id": 2})
    with open(os.path.join(td, "tokenizer_config.json")) as f:
        dec = json.load(f)["added_tokens_decoder"]
    with open(os.path.join(td, "added_tokens.json")) as f:
        added = json.load(f)
    src_types = list(types)
    src_types[300] = USER_DEFINED       # as tok_dir("added") wrote it
    T, S, Y = expected_spm(tokens, scores, src_types, V, added, dec)
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = need_gguf(m)
        kv, _, _, _ = kvmap(g)
        gT, gS, gY = arr(kv, "tokenizer.ggml.tokens"), arr(kv, "tokenizer.ggml.scores"), \
            arr(kv, "tokenizer.ggml.token_type")
        for what, a, b in (("tokens", gT, T), ("types", gY, Y)):
            if a != b:
                bad = [i for i, (x, y) in enumerate(zip(a, b)) if x != y][:5]
                raise Fail("%s: %d vs %d, differ at %r: %r vs expected %r" % (
                    what, len(a), len(b), bad, [a[i] for i in bad], [b[i] for i in bad]))
        if not np.array_equal(f32bits(gS), f32bits(S)):
            bad = np.nonzero(f32bits(gS) != f32bits(S))[0][:5]
            raise Fail("scores differ at %r: %r vs expected %r" % (bad, [gS[i] for i in bad], [S[i] for i in bad]))
        diff = [i for i in range(len(tokens)) if (gT[i], gS[i], gY[i]) != (tokens[i], scores[i], types[i])]
        if diff != [0, 1, 2]:
            raise Fail("differences from the original at %r, expected [0, 1, 2]" % diff[:10])
        # llama.cpp loads it and runs it; the user-defined token is matched in text
        ids = json.loads(client(["greedy", g, "3", "1", "450", "4996"]))
        p = os.path.join(TMP, "spm-added.json")
        with open(p, "w", encoding="utf-8") as f:
            json.dump(["say hello wfs now", "Hello world"], f)
        a = tokenize_all(g, p, "--no-special", "--no-parse-special")
        b = tokenize_all(orig, p, "--no-special", "--no-parse-special")
        if 32001 not in a[0] or a[1] != b[1]:
            raise Fail("tokens %r (want 32001, user-defined ' hello wfs'), %r vs original %r" % (a[0], a[1], b[1]))
        return "ids 0-2 CONTROL -1000, piece 300 USER_DEFINED -> NORMAL, 32000 <pad> CONTROL, 32001 ' hello wfs' USER_DEFINED, 32002 [PAD32002]; " \
            "greedy %r" % ids
    finally:
        m.unmount()


# ---------------------------------------------------------------- 2. Llama 2 tokenizer.json
def llama_hf_case():
    import real_tokenizers
    tdir = real_tokenizers.folder("llama2")
    if not tdir:
        skip_or_fail("tokenizer llama2 not installed (tests/clients/npm.sh)")
    folder = make_folder("llama", tdir, "hfl2-")
    with open(os.path.join(tdir, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    with open(os.path.join(tdir, "tokenizer_config.json"), encoding="utf-8") as f:
        tc = json.load(f)
    rev = {i: t for t, i in tj["model"]["vocab"].items()}
    n = len(rev)
    # LlamaHfVocab: the base vocab by id, BYTE for <0xXX>, CONTROL for the ids of
    # all_special_tokens (bos/eos/unk of tokenizer_config: <s>, </s>, <unk>), score -1000;
    # added tokens past the base vocab appended (none: <unk>, <s>, </s> are ids 0-2)
    specials = {tj["model"]["vocab"][tc[k]] for k in ("bos_token", "eos_token", "unk_token")}
    T = [rev[i].encode() for i in range(n)]
    Y = [BYTE if re.fullmatch(br"<0x[0-9A-Fa-f]{2}>", t) else CONTROL if i in specials else NORMAL
         for i, t in enumerate(T)]
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = need_gguf(m)
        kv, _, _, _ = kvmap(g)
        gT, gS, gY = arr(kv, "tokenizer.ggml.tokens"), arr(kv, "tokenizer.ggml.scores"), \
            arr(kv, "tokenizer.ggml.token_type")
        if kv.get("tokenizer.ggml.model") != b"llama" or kv.get("tokenizer.ggml.pre") != b"default":
            raise Fail("model %r, pre %r" % (kv.get("tokenizer.ggml.model"), kv.get("tokenizer.ggml.pre")))
        if gT != T:
            bad = [i for i, (a, b) in enumerate(zip(gT, T)) if a != b][:5]
            raise Fail("tokens: %d vs %d, differ at %r" % (len(gT), len(T), bad))
        if set(gS) != {-1000.0}:
            raise Fail("scores not all -1000: %r" % sorted(set(gS))[:5])
        if gY != Y:
            bad = [i for i, (a, b) in enumerate(zip(gY, Y)) if a != b][:5]
            raise Fail("types differ at %r: %r vs %r" % (bad, [gY[i] for i in bad], [Y[i] for i in bad]))
        if "tokenizer.ggml.merges" in kv:
            raise Fail("merges written (LlamaHfVocab writes none)")
        want = {"tokenizer.ggml.bos_token_id": 1, "tokenizer.ggml.eos_token_id": 2,
                "tokenizer.ggml.unknown_token_id": 0, "tokenizer.ggml.add_bos_token": True,
                "tokenizer.ggml.add_eos_token": False}
        got = {k: kv.get(k) for k in want}
        if got != want:
            raise Fail("special key/values %r" % got)
        cp = os.path.join(CLIENTS, "corpus.json")
        ids = max(tokenize_all(g, cp), key=len)[:24]
        rel, top, _ = logits_rel(g, folder, ids)
        if rel > 1e-4 or top < 1:
            raise Fail("llama.cpp's logits against HF's: relative error %.2g, top-1 %.2f" % (rel, top))
        nbyte = Y.count(BYTE)
        return "%d tokens, %d BYTE, CONTROL %r, all -1000; logits rel %.1e" % (n, nbyte, sorted(specials), rel)
    finally:
        m.unmount()


def llama_hf_bad_merge_case():
    """The Llama 2 tokenizer.json with its token 'er' renamed (same id): merges now name a
    token model.vocab lacks, which HF tokenizers refuses to load (and so the converter's
    AutoTokenizer): model.gguf left out, WEIGHTFS.txt naming the merge and the token."""
    import real_tokenizers
    tdir = real_tokenizers.folder("llama2")
    if not tdir:
        skip_or_fail("tokenizer llama2 not installed (tests/clients/npm.sh)")
    folder = make_folder("llama", tdir, "hfl2bad-")
    tpath = os.path.join(folder, "tokenizer.json")
    with open(tpath, encoding="utf-8") as f:
        tj = json.load(f)
    vocab = tj["model"]["vocab"]
    vocab["\u2581er-renamed"] = vocab.pop("er")
    # the first merge HF's BPE builder stops at: a side, then the join, not in model.vocab
    first = None
    for i, mg in enumerate(tj["model"]["merges"]):
        a, b = mg.split(" ") if isinstance(mg, str) else mg
        gone = [(k, t) for k, t in enumerate((a, b, a + b)) if t not in vocab]
        if gone:
            first = (i, "%s %s" % (a, b)) + gone[0]
            break
    with open(tpath, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    hf = subprocess.run(["node", os.path.join(CLIENTS, "hf_tokenize.js"), tpath, os.path.join(CLIENTS, "corpus.json")],
                        capture_output=True, timeout=120)
    if hf.returncode == 0 or b"out of vocabulary" not in hf.stderr:
        raise Fail("HF tokenizers loaded the file (exit %d): %r" % (hf.returncode, hf.stderr[-200:]))
    m = Mount(folder, [])
    try:
        if os.path.exists(m.path("model.gguf")):
            raise Fail("model.gguf is there")
        line = [ln for ln in open(m.path("WEIGHTFS.txt"), encoding="utf-8").read().splitlines() if "No model.gguf" in ln]
        want = "model.merges[%d]: '%s' is not two tokens whose join is one: %s'%s' is not in model.vocab" % (
            first[0], first[1], "the join " if first[2] == 2 else "", first[3])
        if not line or want not in line[0]:
            raise Fail("WEIGHTFS.txt says %r, not %r" % (line, want))
        if not os.path.exists(m.path("model.safetensors")):
            raise Fail("the rest of the mount is missing")
    finally:
        m.unmount()
    return "HF tokenizers refuses it too; WEIGHTFS.txt: %s" % line[0][line[0].index("model.merges"):][:90]


# ---------------------------------------------------------------- 3. Gemma 2 / 3
GEMMA_NAMES = {"input_layernorm": "attn_norm", "post_attention_layernorm": "post_attention_norm",
               "pre_feedforward_layernorm": "ffn_norm", "post_feedforward_layernorm": "post_ffw_norm",
               "self_attn.q_norm": "attn_q_norm", "self_attn.k_norm": "attn_k_norm"}


def gemma_case(kind):
    import st_io
    folder = make_folder(kind, tok_dir("plain"), "hf%s-" % kind)
    src = st_io.load(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = need_gguf(m)
        kv, infos, b, ds = kvmap(g)
        names = [n for n, _, _, _ in infos]
        if kv.get("general.architecture") != kind.encode():
            raise Fail("general.architecture %r" % kv.get("general.architecture"))
        if "output.weight" in names:
            raise Fail("output.weight written (%s: lm_head.weight %s)" % (
                kind, "must be dropped" if kind == "gemma2" else "absent"))
        # norms as 1 + w (float32 add), every *norm.weight
        info = {n: (ne, ty, off) for n, ne, ty, off in infos}
        nnorm = 0
        for hf, a in src.items():
            if not hf.endswith("norm.weight"):
                continue
            if hf == "model.norm.weight":
                gn = "output_norm.weight"
            else:
                i, rest = hf[len("model.layers."):].split(".", 1)
                gn = "blk.%s.%s.weight" % (i, GEMMA_NAMES[rest[:-len(".weight")]])
            ne, ty, off = info[gn]
            got = np.frombuffer(b, "<f4", a.size, ds + off)
            if ty != 0 or not np.array_equal(got.view(np.uint32), (np.float32(1) + a).view(np.uint32)):
                raise Fail("%s (%s): type %d, not 1 + w" % (gn, hf, ty))
            nnorm += 1
        want = {"gemma2": {"gemma2.attn_logit_softcapping": 2.0, "gemma2.final_logit_softcapping": 3.0,
                           "gemma2.attention.sliding_window": 16, "gemma2.attention.key_length": 16,
                           "tokenizer.ggml.add_space_prefix": False},
                "gemma3": {"gemma3.attention.sliding_window": 16, "gemma3.rope.freq_base": 1000000.0,
                           "gemma3.rope.freq_base_swa": 10000.0, "gemma3.attention.key_length": 16,
                           "tokenizer.ggml.add_space_prefix": False}}[kind]
        got = {k: kv.get(k) for k in want}
        if got != want:
            raise Fail("key/values %r, want %r" % (got, want))
        # llama.cpp's logits against HF's; 24 tokens reach past the sliding window of 16
        ids = [1] + [int(x) for x in np.random.default_rng(7).integers(3, cfg["vocab_size"], 23)]
        rel, top, a = logits_rel(g, folder, ids, gelu="ggml")
        rel_exact, _, _ = logits_rel(g, folder, ids)
        import torch
        import hf_forward
        f32 = np.asarray(hf_forward.logits(folder, ids, gelu="ggml", dtype=torch.float32))
        f64 = np.asarray(hf_forward.logits(folder, ids, gelu="ggml"))
        rel_f32 = float(np.abs(f32 - f64).max() / np.abs(f64).max())
        if rel > 1e-4 or top < 1:
            raise Fail("logits against HF (with llama.cpp's F16-table GELU): rel %.2g, top-1 %.2f "
                       "(exact GELU: %.2g)" % (rel, top, rel_exact))
        # negative controls: the reference without what the file must carry
        ctl = {"gemma2": {"attn_logit_softcapping": None, "final_logit_softcapping": None},
               "gemma3": {"rope_local_base_freq": 1000000.0}}[kind]
        bb = np.asarray(hf_forward.logits(folder, ids, gelu="ggml", config=ctl))
        rel_ctl = float(np.abs(a - bb).max() / np.abs(bb).max())
        if rel_ctl < 100 * max(rel, 1e-6):
            raise Fail("the reference without %r is as close (%.2g): the check would not see it" % (ctl, rel_ctl))
        return "%d norms 1 + w; logits rel %.1e over %d positions (the reference itself in float32: %.1e; " \
            "exact GELU %.1e; without %s %.1e)" % (nnorm, rel, len(ids), rel_f32, rel_exact, ",".join(ctl), rel_ctl)
    finally:
        m.unmount()


def gemma_dtype_case(dtype):
    """Gemma 2 from an F16 (BF16) checkpoint, -o gguf=auto: the converter adds 1 to the
    norms after its cast (conversion/base.py: F16 stays F16, BF16 becomes float32), so an
    F16 norm is f16(1 + w) widened to F32 and a BF16 one float32(1 + w); the 2-D weights
    stay F16 (BF16) as stored; llama.cpp runs it."""
    import st_io
    folder = make_folder("gemma2", tok_dir("plain"), "hfg2%s-" % dtype.lower(), dtype=dtype)
    src = st_io.load(os.path.join(folder, "model.safetensors"))
    m = Mount(folder, [])
    try:
        g = need_gguf(m)
        kv, infos, b, ds = kvmap(g)
        if kv.get("general.file_type") != {"F16": 1, "BF16": 32}[dtype]:
            raise Fail("general.file_type %r" % kv.get("general.file_type"))
        info = {n: (ne, ty, off) for n, ne, ty, off in infos}
        n = 0
        for hf, a in src.items():
            if not hf.endswith("norm.weight"):
                continue
            gn = "output_norm.weight" if hf == "model.norm.weight" else "blk.%s.%s.weight" % (
                hf.split(".")[2], GEMMA_NAMES[hf.split(".", 3)[3][:-len(".weight")]])
            want = (np.float16(1) + a).astype(np.float32) if dtype == "F16" else np.float32(1) + a
            ne, ty, off = info[gn]
            got = np.frombuffer(b, "<f4", a.size, ds + off)
            if ty != 0 or not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                d32 = float(np.abs(got - (np.float32(1) + a.astype(np.float32))).max())
                raise Fail("%s: type %d, not %s (off float32(1 + w) by %.3g)" % (
                    gn, ty, "f16(1 + w)" if dtype == "F16" else "float32(1 + w)", d32))
            n += 1
        ne, ty, off = info["blk.0.ffn_down.weight"]
        if ty != {"F16": 1, "BF16": 30}[dtype]:
            raise Fail("ffn_down type %d" % ty)
        client(["greedy", g, "3", "1", "450", "4996"])
        return "%d norms" % n
    finally:
        m.unmount()


# ---------------------------------------------------------------- 4. shards, BF16, F16
def shard_case():
    import real_tokenizers
    import ref_convert
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")

    # shard 1: layer 1 and lm_head; shard 2: the embeddings, layer 0 and the final norm
    def shard_of(n):
        return 0 if n.startswith("model.layers.1.") or n == "lm_head.weight" else 1
    folder = make_folder("llama", tdir, "hfshard-", shards=2, shard_of=shard_of)
    one = make_folder("llama", tdir, "hfone-")
    with open(os.path.join(folder, "model.safetensors.index.json")) as f:
        wm = json.load(f)["weight_map"]
    m = Mount(folder, ["-o", "gguf=f32"])
    m1 = Mount(one, ["-o", "gguf=f32"])
    try:
        g, g1 = need_gguf(m), need_gguf(m1)
        _, infos, b, ds = kvmap(g)
        _, infos1, b1, ds1 = kvmap(g1)
        order = ["rope_freqs.weight"]
        for part in sorted(set(wm.values())):
            order += [ref_convert.gguf_name(n) for n in sorted(n for n in wm if wm[n] == part)]
        order = [n for n in order if n]
        names = [n for n, _, _, _ in infos]
        if names != order:
            raise Fail("tensor order %r, want %r" % (names[:6], order[:6]))
        if names == [n for n, _, _, _ in infos1]:
            raise Fail("the order is the unsharded one: the case does not test it")
        one_data = {n: b1[ds1 + off:ds1 + off + int(np.prod(ne)) * 4] for n, ne, _, off in infos1}
        for n, ne, ty, off in infos:
            if b[ds + off:ds + off + int(np.prod(ne)) * 4] != one_data[n]:
                raise Fail("%s: data differs from the unsharded checkpoint's" % n)
        client(["greedy", g, "3", "1", "2", "3"])
        return "%d tensors in shard order; = unsharded data" % len(names)
    finally:
        m.unmount()
        m1.unmount()


# ---------------------------------------------------------------- a file of a model folder
def kv_of(g, key):
    v = next((v for k, _, v in gguf_read(g)[0] if k == key), None)
    return v.decode() if isinstance(v, bytes) else v


SIDE_NAMES = {"config.json", "tokenizer.json", "tokenizer_config.json", "README.md"}


def file_of_folder_case():
    """MODEL = FOLDER/model.safetensors, its index or a shard: model.gguf = FOLDER's, byte for
    byte, the tree as the file's alone (the folder's files not shown); general.size_label from
    README.md's front matter and from _name_or_path, as the reference converter finds them."""
    import hashlib
    import real_tokenizers
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    one = make_folder("llama", tdir, "hffile-")
    with open(os.path.join(one, "README.md"), "w") as f:
        f.write("---\nlicense: mit\nsize_label: 'Tiny-7B'   # the card's\ntags:\n- x\n---\n# tiny\n")

    def shard_of(n):
        return 0 if n.startswith("model.layers.1.") or n == "lm_head.weight" else 1
    sharded = make_folder("llama", tdir, "hffile2-", shards=2, shard_of=shard_of,
                          config={"_name_or_path": "org/Tiny-Llama-30B-A3B"})
    shard1 = sorted(n for n in os.listdir(sharded) if n.endswith(".safetensors"))[0]
    models = [(one, os.path.join(one, "model.safetensors"), "Tiny-7B"),
              (sharded, os.path.join(sharded, "model.safetensors.index.json"), "A3B"),
              (sharded, os.path.join(sharded, shard1), "A3B")]
    said = []
    for folder, model, label in models:
        md, mf = Mount(folder, ["-o", "gguf=f32"]), Mount(model, ["-o", "gguf=f32"])
        try:
            gd, gf = need_gguf(md), mf.path("model.gguf")
            if not os.path.exists(gf):
                raise Fail("%s: no model.gguf; WEIGHTFS.txt: %s" % (model, open(mf.path("WEIGHTFS.txt")).read()[-300:]))
            hd, hf = [hashlib.sha256(open(g, "rb").read()).hexdigest() for g in (gd, gf)]
            if hd != hf:
                raise Fail("%s: model.gguf differs from the folder's (architecture %r, size_label %r)"
                           % (os.path.basename(model), kv_of(gf, "general.architecture"), kv_of(gf, "general.size_label")))
            if kv_of(gf, "general.size_label") != label:
                raise Fail("%s: general.size_label %r, want %r" % (model, kv_of(gf, "general.size_label"), label))
            shown = set(os.listdir(mf.mp))
            if shown & SIDE_NAMES:
                raise Fail("%s: the folder's files shown at the root: %r" % (model, sorted(shown & SIDE_NAMES)))
            side = {n for n in os.listdir(folder) if not n.endswith((".safetensors", ".index.json"))}
            if shown != set(os.listdir(md.mp)) - side:
                raise Fail("%s: root %r, want the folder mount's less its files" % (model, sorted(shown)))
            if open(mf.path("tensors.json"), "rb").read() != open(md.path("tensors.json"), "rb").read():
                raise Fail("%s: tensors.json differs from the folder mount's" % model)
            if "convert_hf_to_gguf.py writes it (llama" not in open(mf.path("WEIGHTFS.txt")).read():
                raise Fail("%s: WEIGHTFS.txt does not say model.gguf is the converter's" % model)
        finally:
            md.unmount()
            mf.unmount()
        said.append("%s: %s" % (os.path.basename(model), label))
    # (the real converter's labels from README.md and _name_or_path: the gguf group's
    # Tiny-Qwen3-Card and Tiny-Qwen3-Named digests)
    # one shard of a set no index names is no model of the folder: the file alone, as ever
    lone = new_dir("hffile3-")
    for n in os.listdir(sharded):
        if n != "model.safetensors.index.json":
            os.symlink(os.path.join(sharded, n), os.path.join(lone, n))
    m = Mount(os.path.join(lone, shard1), ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        arch = kv_of(g, "general.architecture") if os.path.exists(g) else None
        if arch == "llama" or SIDE_NAMES & set(os.listdir(m.mp)):
            raise Fail("a lone shard of an unindexed set took the folder's config (architecture %r)" % arch)
    finally:
        m.unmount()
    return "model.gguf = the folder's (%s); a lone unindexed shard keeps its own" % "; ".join(said)


def permuted(a, n_head):
    r = a.shape[0]
    hd = r // n_head
    return a.reshape(n_head, 2, hd // 2, *a.shape[1:]).swapaxes(1, 2).reshape(a.shape)


def stored_case(dtype):
    """-o gguf=auto over a BF16 (F16) checkpoint: file_type 32 (1); every 2-D weight kept
    in its stored type, its bytes the stored ones (q rows permuted with n_head, k rows with
    n_head_kv); 1-D tensors F32, widened exactly; llama.cpp runs it."""
    import real_tokenizers
    import ref_convert
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    folder = make_folder("llama", tdir, "hf%s-" % dtype.lower(), dtype=dtype)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    raw = st_raw(os.path.join(folder, "model.safetensors"))
    m = Mount(folder, [])
    try:
        g = need_gguf(m)
        kv, infos, b, ds = kvmap(g)
        ft, gty = {"BF16": (32, 30), "F16": (1, 1)}[dtype]
        if kv.get("general.file_type") != ft:
            raise Fail("general.file_type %r, want %d" % (kv.get("general.file_type"), ft))
        info = {n: (ne, ty, off) for n, ne, ty, off in infos}
        n2 = 0
        for hf, (st_dt, shape, data) in raw.items():
            gn = ref_convert.gguf_name(hf)
            if gn is None:
                continue
            ne, ty, off = info[gn]
            a = np.frombuffer(data, "<u2").reshape(shape)
            if len(shape) == 2:
                if ".self_attn.q_proj." in hf:
                    a = permuted(a, cfg["num_attention_heads"])
                elif ".self_attn.k_proj." in hf:
                    a = permuted(a, cfg["num_key_value_heads"])
                got = np.frombuffer(b, "<u2", a.size, ds + off)
                if ty != gty or not np.array_equal(got, a.reshape(-1)):
                    raise Fail("%s: type %d, or bytes not the stored %s ones" % (gn, ty, dtype))
                n2 += 1
            else:
                want = (a.astype(np.uint32) << 16).view(np.float32) if dtype == "BF16" else \
                    a.view(np.float16).astype(np.float32)
                got = np.frombuffer(b, "<f4", a.size, ds + off)
                if ty != 0 or not np.array_equal(got.view(np.uint32), want.view(np.uint32)):
                    raise Fail("%s: type %d, or not the stored values widened to F32" % (gn, ty))
        import hf_forward
        ids = [1, 5, 9, 200, 7, 1000]
        out = os.path.join(TMP, "lg-%s.npy" % dtype)
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
        ref = np.asarray(hf_forward.logits(folder, ids))
        rel = float(np.abs(a - ref).max() / np.abs(ref).max())
        if rel > 2e-2:
            raise Fail("llama.cpp's logits against HF's on the stored %s weights: rel %.2g" % (dtype, rel))
        return "%d 2-D weights as stored (q/k permuted), 1-D widened; logits rel %.1e" % (n2, rel)
    finally:
        m.unmount()


def st_raw(path):
    """{name: (dtype, shape, raw bytes)} of a safetensors file"""
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack_from("<Q", buf)[0]
    h = json.loads(buf[8:8 + n])
    return {k: (v["dtype"], v["shape"], buf[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items() if k != "__metadata__"}


# ---------------------------------------------------------------- 6. a GGUF retyped
FTYPES = {"f32": 0, "f16": 1, "bf16": 32}


def retype_case(state):
    """-o gguf=T over a GGUF model: model.gguf byte for byte what llama.cpp's own
    llama_model_quantize (llama-quantize --allow-requantize) writes for T, for F32, F16 and
    BF16 sources (GGUFs written by weightfs convert from a tiny llama with attention biases,
    so that 1-D tensors stay as stored) and every target type; llama.cpp runs it."""
    import real_tokenizers
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    folder = make_folder("llama_tied", tdir, "hfretype-")
    d = new_dir("retype-")
    srcs = {}
    for st in ("f32", "f16", "bf16"):
        srcs[st] = os.path.join(d, "src-%s.gguf" % st)
        rc, _, err, _ = run_cli(["convert", "-o", "gguf=" + st, folder, srcs[st]], timeout=120)
        if rc != 0:
            raise Fail("convert -o gguf=%s: exit %d: %s" % (st, rc, err[-300:]))
    done = []
    for st, src in srcs.items():
        for tt, ft in FTYPES.items():
            ref = os.path.join(d, "ref-%s-%s.gguf" % (st, tt))
            client(["quantize", src, ref, str(ft)])
            m = Mount(src, ["-o", "gguf=" + tt])
            try:
                g = need_gguf(m)
                with open(g, "rb") as f:
                    got = f.read()
            finally:
                m.unmount()
            with open(ref, "rb") as f:
                want = f.read()
            if got != want:
                at = next((i for i in range(min(len(got), len(want))) if got[i] != want[i]), min(len(got), len(want)))
                raise Fail("%s -> %s: model.gguf (%d bytes) differs from llama_model_quantize's (%d bytes) at byte %d"
                           % (st, tt, len(got), len(want), at))
            done.append("%s->%s" % (st, tt))
    kv, infos, _, _ = kvmap(ref)
    names = [n for n, _, _, _ in infos]
    if not names[0].startswith(("output", "token_embd")) or kv.get("general.file_type") is None:
        raise Fail("the reference's order or keys are not what the case expects: %r" % names[:3])
    state["retype_src"] = srcs["f32"]
    # llama-quantize refuses a tensor whose result holds an infinity or NaN
    # (ggml_validate_row_data): reads of those bytes fail with EIO, the rest is served
    nan_src = os.path.join(d, "nan-f32.gguf")
    _, infos32, b32, ds32 = kvmap(srcs["f32"])
    off = next(o for n, _, _, o in infos32 if n == "blk.0.attn_q.weight")
    buf = bytearray(b32)
    struct.pack_into("<III", buf, ds32 + off, 0xFFC12345, 0x7F800001, 0x7FBFFFFF)
    struct.pack_into("<f", buf, ds32 + off + 4 * 40, 1e6)  # over 65504: an infinity in F16
    with open(nan_src, "wb") as f:
        f.write(buf)
    m = Mount(nan_src, ["-o", "gguf=f16"])
    try:
        g16 = need_gguf(m)
        _, infos16, _, ds16 = gguf_read_header(g16)
        o16 = next(o for n, _, _, o in infos16 if n == "blk.0.attn_q.weight")
        fd = os.open(g16, os.O_RDONLY)
        try:
            for at in (ds16 + o16, ds16 + o16 + 80):
                try:
                    os.pread(fd, 2, at)
                    raise Fail("F16 of a NaN (or of 1e6) read at %d: llama-quantize writes no such file" % at)
                except OSError as e:
                    if e.errno != 5:
                        raise
            o_ok = next(o for n, _, _, o in infos16 if n == "blk.1.attn_q.weight")
            if len(os.pread(fd, 64, ds16 + o_ok)) != 64:
                raise Fail("another tensor of the file cannot be read")
        finally:
            os.close(fd)
    finally:
        m.unmount()
    client(["greedy", ref, "3", "1", "2", "3"])
    return "%d pairs byte-identical (%s); %d tensors, non-blk first" % (len(done), ", ".join(done), len(names))


def retype_none_case(state):
    """A GGUF model without -o gguf= has no model.gguf; with it, WEIGHTFS.txt says what it is."""
    src = state.get("retype_src")
    if not src:
        raise Fail("the retype case made no source")
    m = Mount(src)
    try:
        if os.path.exists(m.path("model.gguf")):
            raise Fail("model.gguf without -o gguf=")
    finally:
        m.unmount()
    m = Mount(src, ["-o", "gguf=bf16"])
    try:
        txt = open(m.path("WEIGHTFS.txt")).read()
        if "retyped to BF16" not in txt:
            raise Fail("WEIGHTFS.txt does not say model.gguf is retyped: %r" % txt[-300:])
    finally:
        m.unmount()
    out = os.path.join(new_dir("retype-cv-"), "out.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f16", src, out], timeout=120)
    if rc != 0:
        raise Fail("convert -o gguf=f16 of a GGUF: exit %d: %s" % (rc, err[-300:]))
    m = Mount(src, ["-o", "gguf=f16"])
    try:
        with open(m.path("model.gguf"), "rb") as f, open(out, "rb") as g:
            if f.read() != g.read():
                raise Fail("weightfs convert's OUT.gguf differs from the mount's model.gguf")
    finally:
        m.unmount()
    rc, info, err, _ = run_cli(["info", "-o", "gguf=bf16", src], timeout=60)
    if rc != 0 or not info.rstrip().endswith("model.gguf: this model retyped to BF16 (as llama-quantize --allow-requantize)"):
        raise Fail("weightfs info -o gguf=bf16: exit %d, ends %r" % (rc, info[-120:]))
    rc, info, err, _ = run_cli(["info", src], timeout=60)
    if rc != 0 or "model.gguf" in info:
        raise Fail("weightfs info of a GGUF without -o gguf= mentions model.gguf: %r" % info[-120:])
    rc, _, err, _ = run_cli(["convert", src, out + "2.gguf"], timeout=120)
    if rc == 0 or "-o gguf=" not in err:
        raise Fail("convert GGUF OUT.gguf without -o gguf=: exit %d, %r" % (rc, err[-200:]))
    return "none without -o gguf=; WEIGHTFS.txt and info say what it is; convert = the view; without -o: %s" % \
        err.strip()[-80:]


def gptq_case():
    """A GPTQ checkpoint (4-bit, group 32: every linear of a tiny llama replaced by GPTQ
    parts, tests/mount/hfq_models.py): model.gguf holds the decoded weights (q/k rows
    permuted), and llama.cpp's logits on it equal an HF forward pass over the same decoded
    weights; -o gguf=q8_0 of it runs too."""
    import real_tokenizers
    import st_io
    from hfq_models import gptq_layer, st_bytes
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    plain = make_folder("llama", tdir, "hfgptq-ref-")
    w = st_io.load(os.path.join(plain, "model.safetensors"))
    rng = np.random.default_rng(29)
    st, dec = {}, {}
    for k, a in w.items():
        a = np.asarray(a, np.float32)
        lin = k.startswith("model.layers.") and k.endswith("_proj.weight") and a.ndim == 2
        if not lin:
            st[k] = ("F32", list(a.shape), a.astype("<f4").tobytes())
            dec[k] = a
            continue
        parts, exp = gptq_layer(rng, a.shape[0], a.shape[1], 4, 32, act_order=False)
        parts.pop("bias")
        for suf, (dt, shape, raw) in parts.items():
            st[k[:-len("weight")] + suf] = (dt, list(shape), raw)
        dec[k] = exp
    d = new_dir("hfgptq-")
    for f in os.listdir(plain):
        if f not in ("model.safetensors", "config.json"):
            with open(os.path.join(plain, f), "rb") as a, open(os.path.join(d, f), "wb") as b:
                b.write(a.read())
    with open(os.path.join(plain, "config.json")) as f:
        cfg = json.load(f)
    cfg["quantization_config"] = {"quant_method": "gptq", "bits": 4, "group_size": 32, "desc_act": False,
                                  "sym": False, "checkpoint_format": "gptq"}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with open(os.path.join(d, "model.safetensors"), "wb") as f:
        f.write(st_bytes(st))
    ref = new_dir("hfgptq-dec-")
    for f in os.listdir(plain):
        if f != "model.safetensors":
            with open(os.path.join(plain, f), "rb") as a, open(os.path.join(ref, f), "wb") as b:
                b.write(a.read())
    st_io.save(dec, os.path.join(ref, "model.safetensors"), metadata={"format": "pt"})
    m = Mount(d, ["-o", "gguf=f32"])
    try:
        g = need_gguf(m)
        ids = [1] + [int(x) for x in np.random.default_rng(4).integers(3, cfg["vocab_size"], 15)]
        rel, top, _ = logits_rel(g, ref, ids)
    finally:
        m.unmount()
    if rel > 1e-4 or top < 1:
        raise Fail("GPTQ model.gguf: logits against HF over the decoded weights: rel %.2g, top-1 %.2f" % (rel, top))
    m = Mount(d, ["-o", "gguf=q8_0"])
    try:
        toks = client(["greedy", need_gguf(m), "4", "1", "2", "3"]).split()
    finally:
        m.unmount()
    return "%d GPTQ layers decoded into model.gguf: logits rel %.1e, top-1 %.2f; q8_0 of it runs (%s)" % (
        sum(1 for k in st if k.endswith(".qweight")), rel, top, " ".join(toks))


def group_gguf_more():
    npm_dir()
    sys.path.insert(0, CLIENTS)
    state = {}
    check("gguf_more: tokenizer.model (rebuilt from ggml-vocab-llama-spm.gguf) in a tiny llama", spm_plain_case,
          state)
    check("gguf_more: tokenizer.model with added_tokens.json, added_tokens_decoder, vocab_size past the pieces: "
          "the converter's overrides", spm_added_case)
    check("gguf_more: Llama 2 style tokenizer.json (byte_fallback BPE): LlamaHfVocab's tokens, -1000, BYTE; runs",
          llama_hf_case)
    check("gguf_more: Llama 2 style tokenizer.json whose merges name a token model.vocab lacks: no model.gguf, "
          "WEIGHTFS.txt names the merge (HF tokenizers refuses it too)", llama_hf_bad_merge_case)
    check("gguf_more: gemma2 (tokenizer.model): norms 1 + w, lm_head dropped, softcaps; logits = HF", gemma_case,
          "gemma2")
    check("gguf_more: gemma3 text (tokenizer.model): norms and q/k norms 1 + w, local/global rope; logits = HF",
          gemma_case, "gemma3")
    for dt in ("F16", "BF16"):
        check("gguf_more: gemma2 %s checkpoint: norms 1 + w in the converter's precision" % dt, gemma_dtype_case, dt)
    check("gguf_more: sharded checkpoint: parts by name, names sorted within each; data = unsharded", shard_case)
    check("gguf_more: FOLDER/model.safetensors, its index, a shard: model.gguf = FOLDER's; size_label",
          file_of_folder_case)
    check("gguf_more: BF16 checkpoint, -o gguf=auto: BF16 as stored (q/k permuted)", stored_case, "BF16")
    check("gguf_more: F16 checkpoint, -o gguf=auto: F16 as stored (q/k permuted)", stored_case, "F16")
    check("gguf_more: a GPTQ checkpoint: model.gguf holds its decoded layers, llama.cpp = HF on them", gptq_case)
    check("gguf_more: GGUF -o gguf=T: model.gguf = llama_model_quantize's file, F32/F16/BF16 to each", retype_case,
          state)
    check("gguf_more: GGUF source: no model.gguf without -o gguf=; convert OUT.gguf = the view", retype_none_case,
          state)
