"""Group demo: the demo model tests/data/demo/demo-llama.gguf (tools/make_demo_model.py) stays
what `make demo` and the README promise: the script remakes it, its statistics are finite and
plausible, the mount shows hf/ and previews, llama.cpp loads it, tokenizes as HF tokenizers
does on hf/tokenizer.json, and predicts the docs' next tokens far better than chance.
"""

import json
import os
import subprocess
import sys

import numpy as np

from wf_harness import BIN, DATA, ROOT, Fail, Mount, check, new_dir, run_cli, skip_or_fail

DEMO = os.path.join(DATA, "demo", "demo-llama.gguf")
CLIENTS = os.path.join(ROOT, "tests", "clients")
N_VOCAB, BOS, EOS = 768, 766, 767


def module_env():
    lib = os.path.join(os.path.dirname(os.path.abspath(BIN)), "libweightfs.so.0")
    if not os.path.exists(lib):
        skip_or_fail("no %s beside the binary (the Python module needs it)" % lib)
    env = dict(os.environ, WEIGHTFS_LIB=lib, PYTHONPATH=os.path.join(ROOT, "python"),
               PYTHONDONTWRITEBYTECODE="1")
    with open(lib, "rb") as f:
        asan = b"__asan_init" in f.read()
    if asan:
        # as tests/python/run.sh: the runtime first; Python leaks by design
        cc = os.environ.get("CC", "cc")
        env["LD_PRELOAD"] = subprocess.run([cc, "-print-file-name=libasan.so"], capture_output=True,
                                           text=True).stdout.strip()
        env["ASAN_OPTIONS"] = (env.get("ASAN_OPTIONS", "") + ":detect_leaks=0").lstrip(":")
    return env


def regenerates():
    """The script remakes the committed file: byte for byte, or (where another LAPACK's
    SVD rounds differently) the same KVs, types and shapes and values within 1e-3 of absmax."""
    env = module_env()
    out = os.path.join(new_dir("demo-"), "demo-llama.gguf")
    r = subprocess.run(["/usr/bin/python3", os.path.join(ROOT, "tools", "make_demo_model.py"), out],
                       env=env, capture_output=True, text=True, timeout=300)
    if r.returncode != 0:
        raise Fail("make_demo_model.py: exit %d: %s" % (r.returncode, r.stderr[-600:]))
    a, b = open(DEMO, "rb").read(), open(out, "rb").read()
    if a == b:
        return "byte-identical, %d bytes" % len(a)
    code = ("import sys, json, numpy as np, weightfs\n"
            "x, y = weightfs.open(sys.argv[1]), weightfs.open(sys.argv[2])\n"
            "bad = [] if x.metadata == y.metadata else ['metadata']\n"
            "bad += [] if x.keys() == y.keys() else ['names']\n"
            "for k in x.keys():\n"
            "    i, j = x.info(k), y.info(k)\n"
            "    if (i['type'], i['shape']) != (j['type'], j['shape']): bad.append(k + ' type/shape')\n"
            "    elif np.abs(x[k] - y[k]).max() > 1e-3 * np.abs(x[k]).max(): bad.append(k)\n"
            "print(json.dumps(bad))\n")
    r = subprocess.run(["/usr/bin/python3", "-c", code, DEMO, out], env=env, capture_output=True, text=True,
                       timeout=120)
    if r.returncode != 0:
        raise Fail("comparing: %s" % r.stderr[-600:])
    bad = json.loads(r.stdout)
    if bad:
        raise Fail("the script's output differs from %s in %r" % (DEMO, bad[:6]))
    return "not byte-identical (%d vs %d bytes) but the same tensors within 1e-3" % (len(a), len(b))


def sane_stats():
    rc, out, err, _ = run_cli(["stats", "--json", DEMO], timeout=60)
    if rc != 0:
        raise Fail("stats: exit %d: %s" % (rc, err[-300:]))
    ts = json.loads(out)["tensors"]
    types = {t["type"] for t in ts}
    if not {"F32", "F16", "Q8_0", "Q4_K", "Q6_K"} <= types or len(ts) != 21:
        raise Fail("%d tensors in types %r" % (len(ts), sorted(types)))
    for t in ts:
        n, std, mean = t["name"], t["std"], t["mean"]
        if t["nan"] or t["inf"] or not np.isfinite([t["min"], t["max"], mean, std]).all():
            raise Fail("%s: not finite: %r" % (n, t))
        if "norm" in n:
            ok = 0.9 < mean < 1.1 and t["max"] < 1.5 and t["min"] > 0.1
        elif n in ("token_embd.weight", "output.weight"):
            ok = 0.01 < std < 0.2 and t["absmax"] < 10 and abs(mean) < 0.01
        else:
            ok = 0.005 < std < 0.03 and t["absmax"] < 0.2 and abs(mean) < 0.001
        if not ok:
            raise Fail("%s: implausible: mean %g std %g min %g max %g" % (n, mean, std, t["min"], t["max"]))
    return "%d tensors, %s, all finite" % (len(ts), " ".join(sorted(types)))


def mount_views():
    m = Mount(DEMO, opts=["-o", "preview"])
    try:
        names = sorted(os.listdir(m.path("hf")))
        for n in ("config.json", "model.safetensors", "tokenizer.json", "tokenizer_config.json"):
            if n not in names:
                raise Fail("no hf/%s: %r" % (n, names))
        cfg = json.load(open(m.path("hf/config.json")))
        want = {"architectures": ["LlamaForCausalLM"], "hidden_size": 256, "num_hidden_layers": 2,
                "vocab_size": N_VOCAB, "bos_token_id": BOS, "eos_token_id": EOS}
        diff = {k: cfg.get(k) for k in want if cfg.get(k) != want[k]}
        if diff:
            raise Fail("hf/config.json: %r" % diff)
        hf = new_dir("demohf-")
        for n in ("tokenizer.json", "config.json", "model.safetensors"):
            with open(m.path("hf/" + n), "rb") as f, open(os.path.join(hf, n), "wb") as o:
                o.write(f.read())
        png = open(m.path("token_embd/weight.png"), "rb").read()
        if png[:8] != b"\x89PNG\r\n\x1a\n":
            raise Fail("token_embd/weight.png: not a PNG: %r" % png[:8])
    finally:
        m.unmount()
    return hf, "hf/: %s; token_embd/weight.png %d bytes" % (" ".join(names), len(png))


def llama_json(args, timeout=300):
    r = subprocess.run(["/usr/bin/python3", os.path.join(CLIENTS, "llama.py")] + args, capture_output=True,
                       text=True, timeout=timeout)
    if r.returncode != 0:
        raise Fail("llama.py %s: exit %d: %s" % (args[0], r.returncode, r.stderr[-600:]))
    return json.loads(r.stdout) if args[0] != "logits" else None


def llama_runs(hf):
    tj = os.path.join(hf, "tokenizer.json")
    sys.path.insert(0, CLIENTS)
    from t_gguf import npm_dir
    npm_dir()
    v = llama_json(["vocab", DEMO])
    if (v["n_vocab"], v["bos"], v["eos"], v["type"]) != (N_VOCAB, BOS, EOS, 2):
        raise Fail("vocab: %r" % v)
    # llama.cpp's tokenizer (pre "gpt-2") = HF tokenizers on the mount's tokenizer.json
    texts = ["weightfs mounts a GGUF file as a folder of tensors.",
             "Unmount with:  fusermount3 -u ./mnt", "\u00e9t\u00e9 \U0001f600 x=1+2;\n\n  done"]
    texts += json.load(open(os.path.join(CLIENTS, "corpus.json"), encoding="utf-8"))
    corpus = os.path.join(new_dir("democ-"), "corpus.json")
    json.dump(texts, open(corpus, "w"))
    from t_hftok import hf as hf_ids
    a, b = hf_ids(tj, corpus, True), llama_json(["tokenize", DEMO, corpus])
    if a != b:
        raise Fail("HF tokenizers %r, llama.cpp %r" % (a, b))
    # next-token accuracy over a paragraph of the docs: the bigram weights must survive
    # quantization and the layers (chance: 1/768)
    text = open(os.path.join(DATA, "demo", "corpus.txt"), encoding="utf-8").read()[20000:21500]
    json.dump([text], open(corpus, "w"))
    ids = llama_json(["tokenize", DEMO, corpus])[0][:256]
    npy = corpus + ".npy"
    llama_json(["logits", DEMO, npy] + [str(i) for i in ids])
    lg = np.load(npy)
    if not np.isfinite(lg).all():
        raise Fail("logits not finite")
    acc = float((lg.argmax(1)[:-1] == np.array(ids[1:])).mean())
    if acc < 0.06:
        raise Fail("next-token accuracy %.3f over %d tokens" % (acc, len(ids)))
    g = llama_json(["greedy", DEMO, "8", str(BOS)])
    if len(g) != 8 or not all(0 <= t < N_VOCAB for t in g):
        raise Fail("greedy: %r" % g)
    torch_info = torch_agrees(hf, ids[:64], lg[:64])
    return "tokenizers agree on %d strings; next-token accuracy %.2f over %d tokens; greedy %r; %s" % (
        len(texts), acc, len(ids), g, torch_info)


def torch_agrees(hf, ids, want):
    """A torch forward pass over the mount's hf/ gives llama.cpp's logits on the GGUF (the
    same weights, decoded; llama.cpp's own rounding of activations aside)."""
    try:
        import hf_forward
    except ImportError as e:
        skip_or_fail("no torch for tests/clients/hf_forward.py: %s" % e)
    got = np.asarray(hf_forward.logits(hf, ids))
    rel = float(np.linalg.norm(got - want) / np.linalg.norm(want))
    top = float((got.argmax(1) == want.argmax(1)).mean())
    if rel > 0.05 or top < 0.9:
        raise Fail("torch over hf/ against llama.cpp: rel %.2g, top-1 %.2f" % (rel, top))
    return "torch over hf/: rel %.1e, top-1 %.2f" % (rel, top)


def group_demo():
    check("demo: tools/make_demo_model.py remakes tests/data/demo/demo-llama.gguf", regenerates)
    check("demo: weightfs stats: every tensor finite, plausible scales, five types", sane_stats)
    got = {}

    def views():
        got["hf"], info = mount_views()
        return info
    if check("demo: the mount shows hf/ (config.json, tokenizer, model.safetensors) and previews", views):
        check("demo: llama.cpp loads it, tokenizes as HF does on hf/, predicts the docs, torch on hf/ agrees",
              llama_runs, got["hf"])
