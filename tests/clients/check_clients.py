#!/usr/bin/python3
"""Checks of the test clients themselves (not of weightfs): run after tests/clients/npm.sh.

    WEIGHTFS_NPM=... /usr/bin/python3 tests/clients/check_clients.py [TMPDIR]

1. llama.py's ctypes layouts against llama.h (needs the llama.cpp source: $WEIGHTFS_LLAMA_SRC,
   $WEIGHTFS_NPM/llama-src that npm.sh clones from node-llama-cpp/llama/gitRelease.bundle, or
   /tmp/llama-src; else skipped).
2. Tokenizers: llama.cpp on the vocab-only GGUFs of that source (models/ggml-vocab-*.gguf)
   against HF tokenizers (hf_tokenize.js) on the real tokenizer.json of the same family.
3. Tiny random models (tiny_models.py) with real vocabularies, converted by ref_convert.py:
   llama.cpp's logits against hf_forward.py's (float64), determinism, greedy against the
   reference's greedy, F16 output, llama.cpp tokenization of the converted vocab against HF,
   and negative controls (no q/k permutation, no rope_freqs) that must disagree.
4. The CLIs in a subprocess, with nothing on stderr.
Prints "ok - ..." / "FAIL - ..." / "skip - ..." lines and "N passed, M failed"; exit 1 on failure.
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import hf_forward  # noqa: E402
import llama  # noqa: E402
import real_tokenizers  # noqa: E402
import ref_convert  # noqa: E402
import tiny_models  # noqa: E402

PY = sys.executable
CORPUS = os.path.join(HERE, "corpus.json")
RESULTS = {"ok": 0, "FAIL": 0, "skip": 0}


def check(name, cond, detail=""):
    tag = "ok" if cond else "FAIL"
    RESULTS[tag] += 1
    print("%s - %s%s" % (tag, name, (": " + detail) if detail and not cond else
                         ("  (" + detail + ")" if detail else "")))
    sys.stdout.flush()


def skip(name, why):
    RESULTS["skip"] += 1
    print("skip - %s: %s" % (name, why))


def hf_tok(tokenizer_json, *flags):
    r = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.js"), tokenizer_json, CORPUS] +
                       list(flags), capture_output=True, text=True, check=True)
    return json.loads(r.stdout)


def ll_tok(gguf):
    r = subprocess.run([PY, os.path.join(HERE, "llama.py"), "tokenize", gguf, CORPUS],
                       capture_output=True, text=True, check=True)
    return json.loads(r.stdout), r.stderr


def ref_greedy(folder, ids, n):
    cfg, w = hf_forward.load_folder(folder)
    ids = list(ids)
    out = []
    for _ in range(n):
        t = int(np.argmax(hf_forward.forward(cfg, w, ids)[-1]))
        out.append(t)
        ids.append(t)
    return out


# Strings where llama.cpp and HF tokenizers are known to differ for the qwen2 vocab:
# HF applies the NFC normalizer of Qwen's tokenizer.json (llama.cpp does not), and
# llama.cpp finds end-of-generation tokens by their text ("</s>" among them) and turns the
# plain Qwen token "</s>" (id 128247) into a control token, so parse_special matches it.
QWEN2_KNOWN = lambda s: ("</s>" in s) or any(0x300 <= ord(c) <= 0x36f for c in s)  # noqa: E731


def main():
    tmp = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="wf-clients-")
    os.makedirs(tmp, exist_ok=True)
    corpus = json.load(open(CORPUS, encoding="utf-8"))

    ok, msg = llama.selfcheck()
    if ok is None:
        skip("llama.h struct layouts", msg)
    else:
        check("llama.h struct layouts match ctypes", ok, msg)

    src = llama.header_dir()
    # llama.cpp's own tokenizer test vectors (tests/test-tokenizer-0.cpp's format): a check
    # of llama.py's tokenize binding, add_special=False, parse_special=False
    for vocab in ("llama-bpe", "qwen2", "gpt-2", "llama-spm", "phi-3", "starcoder"):
        g = src and os.path.join(src, "models", "ggml-vocab-%s.gguf" % vocab)
        if not g or not os.path.exists(g + ".inp"):
            skip("llama.cpp test vectors %s" % vocab, "not in the llama.cpp source")
            continue
        raw = open(g + ".inp", "rb").read().decode("utf-8")
        inp = raw.split("\n__ggml_vocab_test__\n")
        outl = open(g + ".out", encoding="utf-8").read().split("\n")[:len(inp)]
        with llama.load(g, vocab_only=True) as m:
            bad = [i for i, (t, o) in enumerate(zip(inp, outl))
                   if llama.tokenize(m, t, False, False) != [int(x) for x in o.split()]]
        check("llama.py tokenize == llama.cpp test vectors of %s (%d)" % (vocab, len(inp)),
              not bad, "differ at %s" % bad[:5])
    # hf_tokenize.js against the same vectors (convert_hf_to_gguf_update.py made them with HF)
    for vocab, key in (("llama-bpe", "llama3_1"), ("qwen2", "qwen2_5"), ("gpt-2", "gpt2")):
        g = src and os.path.join(src, "models", "ggml-vocab-%s.gguf" % vocab)
        tj = real_tokenizers.path(key)
        if not g or not os.path.exists(g + ".inp") or tj is None:
            skip("HF %s on llama.cpp test vectors" % key, "vectors or tokenizer.json missing")
            continue
        inp = open(g + ".inp", "rb").read().decode("utf-8").split("\n__ggml_vocab_test__\n")
        outl = open(g + ".out", encoding="utf-8").read().split("\n")[:len(inp)]
        cj = os.path.join(tmp, "vectors.json")
        with open(cj, "w", encoding="utf-8") as fh:
            json.dump(inp, fh)
        r = subprocess.run(["node", os.path.join(HERE, "hf_tokenize.js"), tj, cj, "--no-special"],
                           capture_output=True, text=True, check=True)
        got = json.loads(r.stdout)
        bad = [i for i, o in enumerate(outl) if got[i] != [int(x) for x in o.split()]]
        check("hf_tokenize.js %s == llama.cpp test vectors of %s (%d)" % (key, vocab, len(inp)),
              not bad, "differ at %s" % bad[:5])

    pairs = [("llama-bpe", "llama3_1", None), ("qwen2", "qwen2_5", QWEN2_KNOWN),
             ("gpt-2", "gpt2", None)]
    for vocab, key, known in pairs:
        g = src and os.path.join(src, "models", "ggml-vocab-%s.gguf" % vocab)
        tj = real_tokenizers.path(key)
        if not g or not os.path.exists(g) or tj is None:
            skip("tokenize %s vs %s" % (vocab, key), "vocab GGUF or tokenizer.json missing")
            continue
        a, err = ll_tok(g)
        b = hf_tok(tj)
        bad = [i for i in range(len(corpus)) if a[i] != b[i]]
        unexpected = [i for i in bad if not (known and known(corpus[i]))]
        check("llama.cpp ggml-vocab-%s.gguf == HF %s on %d strings" % (vocab, key, len(corpus)),
              not unexpected, "%d differ (%d known): %s" % (
                  len(bad), len(bad) - len(unexpected),
                  "; ".join(repr(corpus[i])[:40] for i in unexpected[:3])))
        check("llama.py tokenize is quiet (%s)" % vocab, err == "", err[:200])

    # the Llama 3 tokenizer.json without TemplateProcessing: the same but for the BOS
    g = src and os.path.join(src, "models", "ggml-vocab-llama-bpe.gguf")
    if g and os.path.exists(g) and real_tokenizers.path("llama3"):
        a, _ = ll_tok(g)
        b = hf_tok(real_tokenizers.path("llama3"))
        check("HF llama3 (no post-processor BOS) == llama.cpp minus its BOS",
              all(x[1:] == y and x[:1] == [128000] for x, y in zip(a, b)))

    ids = [15496, 11, 995, 0, 318, 257, 1332, 286, 262, 1080, 13, 198, 464, 2068, 7586, 21831,
           18045, 625, 262, 16931, 3290, 13, 314, 1101, 1310, 329, 597, 40, 35, 1234, 77, 5, 300,
           42, 4242, 11111, 222, 1000, 1, 2]   # 40 positions: past original_max_position 32
    gpt2 = real_tokenizers.folder("gpt2")
    if gpt2 is None:
        skip("tiny models", "gpt2 tokenizer files missing (run npm.sh)")
    else:
        for kind in ("llama", "llama_tied", "qwen2", "qwen3", "phi3"):
            f = tiny_models.make(os.path.join(tmp, kind), kind, gpt2)
            # llama.cpp sets phi-3 token attributes when general.name contains "phi3" and
            # then needs Phi-3's own special tokens: name the tiny model otherwise
            nm = "tiny-" + kind.replace("phi3", "p3")
            g = ref_convert.convert(f, os.path.join(tmp, kind + ".gguf"), name=nm)
            ref = hf_forward.logits(f, ids)
            with llama.load(g) as m:
                lg = llama.logits(m, ids)
                rel = float(np.abs(lg - ref).max() / np.abs(ref).max())
                check("%s: llama.cpp logits == hf_forward (all %d positions)" % (kind, len(ids)),
                      rel < 1e-4, "max rel err %.2e" % rel)
                check("%s: logits deterministic" % kind, np.array_equal(lg, llama.logits(m, ids)))
                g1 = llama.greedy(m, ids[:6], 10)
                check("%s: greedy deterministic" % kind, g1 == llama.greedy(m, ids[:6], 10))
                rg = ref_greedy(f, ids[:6], 10)
                check("%s: greedy == reference greedy" % kind, g1 == rg, "%s vs %s" % (g1, rg))
            g16 = ref_convert.convert(f, os.path.join(tmp, kind + "-f16.gguf"), "f16", nm)
            with llama.load(g16, use_mmap=False) as m:
                rel = float(np.abs(llama.logits(m, ids) - ref).max() / np.abs(ref).max())
                check("%s: F16 GGUF loads (no mmap), logits close" % kind, rel < 2e-2,
                      "max rel err %.2e" % rel)
            os.remove(g16)
            if kind == "llama":
                # negative controls: the comparison must notice a missing permutation/rope_freqs
                import ref_convert as rc
                perm = rc.permute
                rc.permute = lambda w, n: w
                try:
                    bad = rc.convert(f, os.path.join(tmp, "noperm.gguf"))
                finally:
                    rc.permute = perm
                with llama.load(bad) as m:
                    rel = float(np.abs(llama.logits(m, ids) - ref).max() / np.abs(ref).max())
                check("negative control: no q/k permutation disagrees", rel > 1e-2, "%.2e" % rel)
                cfg = json.load(open(os.path.join(f, "config.json")))
                cfg2 = dict(cfg)
                del cfg2["rope_scaling"]
                w = hf_forward.load_folder(f)[1]
                rel = float(np.abs(hf_forward.forward(cfg2, w, ids) - ref).max() /
                            np.abs(ref).max())
                check("negative control: llama3 rope scaling changes the reference", rel > 1e-3,
                      "%.2e" % rel)
                os.remove(bad)
            shutil.rmtree(f)

    # converted vocabularies: llama.cpp on ref_convert's GGUF against HF on the tokenizer.json
    for key, known in (("gpt2", None), ("llama3_1", None), ("qwen2_5", QWEN2_KNOWN),
                       ("qwen3", QWEN2_KNOWN)):
        td = real_tokenizers.folder(key)
        if td is None:
            skip("converted vocab %s" % key, "tokenizer files missing")
            continue
        f = tiny_models.make(os.path.join(tmp, "v-" + key), "qwen2", td)  # tied: one matrix
        g = ref_convert.convert(f, os.path.join(tmp, "v-%s.gguf" % key))
        a, _ = ll_tok(g)
        b = hf_tok(os.path.join(f, "tokenizer.json"))
        bad = [i for i in range(len(corpus)) if a[i] != b[i]]
        unexpected = [i for i in bad if not (known and known(corpus[i]))]
        check("converted %s vocab: llama.cpp == HF on %d strings" % (key, len(corpus)),
              not unexpected, "%d differ (%d known): %s" % (
                  len(bad), len(bad) - len(unexpected),
                  "; ".join("%r %s %s" % (corpus[i][:30], a[i][:8], b[i][:8])
                            for i in unexpected[:3])))
        shutil.rmtree(f)
        os.remove(g)

    # the CLI in a subprocess
    if gpt2 is not None:
        f = tiny_models.make(os.path.join(tmp, "cli"), "llama", gpt2)
        g = ref_convert.convert(f, os.path.join(tmp, "cli.gguf"))
        r = subprocess.run([PY, os.path.join(HERE, "llama.py"), "greedy", g, "5"] +
                           [str(i) for i in ids[:6]], capture_output=True, text=True)
        with llama.load(g) as m:
            want = llama.greedy(m, ids[:6], 5)
        check("llama.py greedy CLI", r.returncode == 0 and json.loads(r.stdout) == want
              and r.stderr == "", r.stdout.strip() + r.stderr[:300])
        shutil.rmtree(f)
        os.remove(g)

    print("%d passed, %d failed, %d skipped" % (RESULTS["ok"], RESULTS["FAIL"], RESULTS["skip"]))
    return 1 if RESULTS["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
