"""Group hftok: the hf/ tokenizer files (src/model/wf_hf_tok*.c, written by
build/<dir>/hftok_dump) against llama.cpp on llama.cpp's own vocab-only GGUFs
(llama-src/models/ggml-vocab-*.gguf): Hugging Face tokenizers (npm
tokenizers@0.23.2, tests/clients/hf_tokenize.js) on the tokenizer.json must
give the ids llama.cpp (tests/clients/llama.py) gives on the GGUF, for every
string of tests/clients/corpus.json with and without the special tokens
added, and for llama.cpp's test vectors (.inp/.out); tokenizer.model must
parse back to the GGUF's pieces and SentencePiece (python3-sentencepiece) must
give llama.cpp's ids with it (special tokens not parsed: SentencePiece has no
such step); vocabularies weightfs does not map are
refused with one line naming the key.
"""

import json
import os
import struct
import subprocess
import sys

from wf_harness import check, Fail, new_dir, skip_or_fail

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(HERE, "..", "clients")
sys.path.insert(0, CLIENTS)
import spm_model  # noqa: E402

NPM = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
MODELS = os.path.join(NPM, "llama-src", "models")
CORPUS = os.path.join(CLIENTS, "corpus.json")
# added to the corpus here: special tokens next to spaces and newlines (Phi-3's
# rstrip, the SentencePiece prefix space after a special token), line breaks
EXTRA = ["<|user|>  Hi", "<|end|>\n x", "<s>  a</s> b", " <|endoftext|>  b", "a\r\nb\n\n c\n",
         "<\uff5cend\u2581of\u2581sentence\uff5c> x", "<|im_start|>user\nhi<|im_end|>\n", "<unk>x <0x0A>",
         "<|begin_of_text|>Hello<|eot_id|>  "]

# vocab -> strings of the corpus (by index) where the ids may differ, and why
SUPPORTED = {
    "llama-spm": {}, "phi-3": {}, "baichuan": {},
    "llama-bpe": {}, "qwen2": {}, "qwen35": {}, "gpt-2": {}, "mpt": {}, "starcoder": {}, "refact": {},
    "command-r": {}, "falcon": {}, "deepseek-llm": {}, "deepseek-coder": {}, "aquila": {}, "gpt-neox": {},
    "gemma-4": {},
}
REFUSED = {  # vocab -> what the one line must say
    "bert-bge": "tokenizer.ggml.model: 'bert'",
    "nomic-bert-moe": "tokenizer.ggml.model: 't5'",
}


def dump_bin():
    import wf_harness
    return os.path.join(os.path.dirname(wf_harness.BIN), "hftok_dump")


def prerequisites():
    if not os.path.exists(dump_bin()):
        skip_or_fail("no %s (make B=... hftok_dump)" % dump_bin())
    if not os.path.isdir(MODELS):
        skip_or_fail("no llama.cpp vocab GGUFs in %s (tests/clients/npm.sh)" % MODELS)
    try:
        subprocess.run(["node", "-e", "require(require.resolve('tokenizers',{paths:[process.argv[1]]}))", NPM],
                       check=True, capture_output=True)
    except (OSError, subprocess.CalledProcessError):
        skip_or_fail("node or the npm tokenizers package is missing (tests/clients/npm.sh)")


def run_json(cmd):
    r = subprocess.run(cmd, capture_output=True, text=True)
    if r.returncode != 0:
        raise Fail("%s: exit %d: %s" % (" ".join(cmd[:3]), r.returncode, r.stderr[-800:]))
    return json.loads(r.stdout)


def hf(tj, corpus, special):
    return run_json(["node", os.path.join(CLIENTS, "hf_tokenize.js"), tj, corpus] + ([] if special else ["--no-special"]))


def ll(gguf, corpus, flags):
    return run_json(["/usr/bin/python3", os.path.join(CLIENTS, "llama.py"), "tokenize", gguf, corpus] + flags)


def dump(vocab):
    out = new_dir("hftok-")
    r = subprocess.run([dump_bin(), os.path.join(MODELS, "ggml-vocab-%s.gguf" % vocab), out],
                       capture_output=True, text=True)
    return r, out


def diff_at(a, b, allowed):
    return [i for i in range(max(len(a), len(b)))
            if i not in allowed and (i >= len(a) or i >= len(b) or a[i] != b[i])]


def one_vocab(vocab):
    g = os.path.join(MODELS, "ggml-vocab-%s.gguf" % vocab)
    if not os.path.exists(g):
        skip_or_fail("%s missing" % g)
    r, out = dump(vocab)
    if r.returncode != 0:
        raise Fail("hftok_dump exit %d: %s" % (r.returncode, r.stderr.strip()))
    tj = os.path.join(out, "tokenizer.json")
    json.load(open(tj, encoding="utf-8"))
    for name in ("tokenizer_config.json", "special_tokens_map.json"):
        json.load(open(os.path.join(out, name), encoding="utf-8"))
    allowed = SUPPORTED[vocab]
    corpus = json.load(open(CORPUS, encoding="utf-8")) + EXTRA
    cj = os.path.join(out, "corpus.json")
    json.dump(corpus, open(cj, "w", encoding="utf-8"))
    notes = []
    for special, flags in ((True, []), (False, ["--no-special"])):
        a, b = hf(tj, cj, special), ll(g, cj, flags)
        bad = diff_at(a, b, allowed)
        if bad:
            i = bad[0]
            raise Fail("%d of %d strings differ (add_special=%s), first %d %r: HF %s llama.cpp %s" % (
                len(bad), len(corpus), special, i, corpus[i][:60], a[i][:24], b[i][:24]))
    if os.path.exists(g + ".inp"):
        inp = open(g + ".inp", "rb").read().decode("utf-8").split("\n__ggml_vocab_test__\n")
        outl = open(g + ".out", encoding="utf-8").read().split("\n")[:len(inp)]
        vj = os.path.join(out, "vectors.json")
        json.dump(inp, open(vj, "w", encoding="utf-8"))
        got = hf(tj, vj, False)
        bad = [i for i, o in enumerate(outl) if got[i] != [int(x) for x in o.split()]]
        if bad:
            raise Fail("llama.cpp test vectors: %d of %d differ, first %r: HF %s want %s" % (
                len(bad), len(inp), inp[bad[0]][:60], got[bad[0]][:24], outl[bad[0]][:80]))
        notes.append("%d vectors" % len(inp))
    tm = os.path.join(out, "tokenizer.model")
    if os.path.exists(tm):
        kv, toks, scores, types = spm_model.read_gguf_vocab(g)
        pieces, mtype = spm_model.parse(open(tm, "rb").read())
        want = [(t, struct.unpack("<f", struct.pack("<f", s))[0], ty) for t, s, ty in zip(toks, scores, types)]
        if mtype != 2 or [(p, struct.unpack("<f", struct.pack("<f", s))[0], ty) for p, s, ty in pieces] != want:
            raise Fail("tokenizer.model: model_type %s, pieces differ from the GGUF's" % mtype)
        try:
            import sentencepiece
        except ImportError:
            skip_or_fail("no python3-sentencepiece to load tokenizer.model")
        sp = sentencepiece.SentencePieceProcessor(model_file=tm)
        plain = ll(g, cj, ["--no-special", "--no-parse-special"])
        bad = [i for i, s in enumerate(corpus) if sp.encode(s) != plain[i]]
        if bad or (sp.bos_id(), sp.eos_id(), sp.unk_id()) != (kv["tokenizer.ggml.bos_token_id"],
                                                          kv["tokenizer.ggml.eos_token_id"], types.index(2)):
            raise Fail("SentencePiece on tokenizer.model: %d strings differ from llama.cpp (parse_special off), "
                       "first %r; bos/eos/unk %s" % (len(bad), corpus[bad[0]][:40] if bad else None,
                                                     (sp.bos_id(), sp.eos_id(), sp.unk_id())))
        notes.append("tokenizer.model %d pieces, SentencePiece ids == llama.cpp's" % len(pieces))
    return "%d strings x2%s" % (len(corpus), "; " + ", ".join(notes) if notes else "")


def refused(vocab, what):
    g = os.path.join(MODELS, "ggml-vocab-%s.gguf" % vocab)
    if not os.path.exists(g):
        skip_or_fail("%s missing" % g)
    r, out = dump(vocab)
    lines = r.stderr.strip().splitlines()
    if r.returncode != 3 or len(lines) != 1 or what not in lines[0] or os.listdir(out):
        raise Fail("exit %d, stderr %r, files %r" % (r.returncode, r.stderr, os.listdir(out)))
    return lines[0].split(": ", 1)[1]


def group_hftok():
    if not check("hftok: prerequisites (hftok_dump, vocab GGUFs, node tokenizers)", prerequisites):
        return
    for vocab in sorted(SUPPORTED):
        check("hftok: %s: HF tokenizers on tokenizer.json == llama.cpp on the GGUF" % vocab, one_vocab, vocab)
    for vocab, what in sorted(REFUSED.items()):
        check("hftok: %s refused with one line" % vocab, refused, vocab, what)
