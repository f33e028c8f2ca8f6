"""bench_gguf.py - part 15 of make bench: model.gguf (docs/gguf.md).

A random llama folder (BF16 weights, Llama 3.1's real tokenizer from the npm
clients of tests/clients/, hidden 512, 4 layers: about 0.3 GB) is mounted, and
side by side in one run, each measurement a median:

  read      model.gguf end to end against model.safetensors end to end, both
            first reads through a fresh mount (the source in the page cache),
            with the default -o gguf (auto: BF16 passed through) and -o gguf=f16
            (every weight rounded on read);
  llama     llama.cpp (libllama of the npm package, tests/clients/llama.py in a
            fresh process) loading the model and making its first token: from the
            mount's model.gguf cold (a fresh mount: nothing of model.gguf in the
            page cache, the source in it) and warm (the same mount again), against
            the same bytes copied to /dev/shm by `weightfs convert`.

Needs the npm clients (WEIGHTFS_NPM, or bash tests/clients/npm.sh) and a Python
with numpy; says why and returns a note otherwise.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(os.path.dirname(HERE), "tests", "clients")
MiB = 1 << 20


def median(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2 if v else float("nan")


def _make(folder):
    sys.path.insert(0, CLIENTS)
    import json
    import numpy as np
    import real_tokenizers
    import st_io
    tdir = real_tokenizers.folder("llama3_1")
    if not tdir:
        return None
    os.makedirs(folder, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tdir, f), "rb") as a, open(os.path.join(folder, f), "wb") as b:
            b.write(a.read())
    H, L, FF, NH, KV, V = 512, 4, 1408, 8, 4, 128256
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
           "intermediate_size": FF, "num_hidden_layers": L, "num_attention_heads": NH,
           "num_key_value_heads": KV, "vocab_size": V, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "bos_token_id": 128000, "eos_token_id": 128001,
           "torch_dtype": "bfloat16"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    rng = np.random.default_rng(1)
    hd = H // NH
    w = {"model.embed_tokens.weight": rng.standard_normal((V, H), np.float32) * 0.02,
         "lm_head.weight": rng.standard_normal((V, H), np.float32) * 0.02,
         "model.norm.weight": np.ones(H, np.float32)}
    for i in range(L):
        p = "model.layers.%d." % i
        for n, shape in (("self_attn.q_proj", (NH * hd, H)), ("self_attn.k_proj", (KV * hd, H)),
                         ("self_attn.v_proj", (KV * hd, H)), ("self_attn.o_proj", (H, NH * hd)),
                         ("mlp.gate_proj", (FF, H)), ("mlp.up_proj", (FF, H)), ("mlp.down_proj", (H, FF))):
            w[p + n + ".weight"] = rng.standard_normal(shape, np.float32) * 0.05
        w[p + "input_layernorm.weight"] = np.ones(H, np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(H, np.float32)
    st_io.save(w, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"},
               dtypes={k: "BF16" for k in w})
    return folder


class _Mount:
    def __init__(self, wfs, model, mnt, opts=()):
        os.makedirs(mnt, exist_ok=True)
        self.mnt = mnt
        self.p = subprocess.Popen([wfs, "-f"] + list(opts) + [model, mnt], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        while not os.path.ismount(mnt):
            if self.p.poll() is not None or time.monotonic() - t0 > 60:
                raise SystemExit("bench: weightfs did not mount %s: %s" % (model, self.p.stderr.read()[:300]))
            time.sleep(0.01)
        os.stat(mnt)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        self.p.wait(30)


def _read(path):
    t0 = time.monotonic()
    n = 0
    with open(path, "rb", buffering=0) as f:
        buf = bytearray(MiB)
        while True:
            k = f.readinto(buf)
            if not k:
                break
            n += k
    return n / (time.monotonic() - t0) / 1e9


def _numpy_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def _first_token(model):
    """Seconds for a fresh process to load model with llama.cpp and make one token."""
    t0 = time.monotonic()
    subprocess.run([_numpy_python(), os.path.join(CLIENTS, "llama.py"), "greedy", model, "1", "128000", "9906"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.monotonic() - t0


def part_gguf(args):
    """Returns the result dict, with "text" lines for the report (or a "note")."""
    d = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
    os.environ["WEIGHTFS_NPM"] = d
    folder = os.path.join(args.dir, "gguf-llama")
    py = _numpy_python()
    if not py:
        return {"note": "skipped: no Python with numpy"}
    if subprocess.run([py, os.path.abspath(__file__), "make", folder]).returncode != 0:
        return {"note": "skipped: the npm clients are not installed (bash tests/clients/npm.sh)"}
    mnt = os.path.join(args.dir, "mnt-gguf")
    runs = max(3, args.runs)
    res = {"runs": runs}
    st, gg, g16 = [], [], []
    for _ in range(runs):
        for opts, out, name in (((), st, "model.safetensors"), ((), gg, "model.gguf"),
                                (("-o", "gguf=f16"), g16, "model.gguf")):
            m = _Mount(args.weightfs, folder, mnt, opts)
            try:
                out.append(_read(os.path.join(mnt, name)))
            finally:
                m.close()
    res["read"] = {"st_gbps": median(st), "gguf_gbps": median(gg), "gguf_f16_gbps": median(g16)}
    shm = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else args.dir, "bench-gguf-%d.gguf" % os.getpid())
    subprocess.run([args.weightfs, "convert", "--force", folder, shm], check=True)
    cold, warm, ref = [], [], []
    try:
        for _ in range(runs):
            m = _Mount(args.weightfs, folder, mnt)
            try:
                cold.append(_first_token(os.path.join(mnt, "model.gguf")))
                warm.append(_first_token(os.path.join(mnt, "model.gguf")))
            finally:
                m.close()
            ref.append(_first_token(shm))
    finally:
        os.unlink(shm)
    res["llama"] = {"cold_s": median(cold), "warm_s": median(warm), "tmpfs_s": median(ref)}
    r, l = res["read"], res["llama"]
    res["text"] = [
        "Part 15: model.gguf of a BF16 llama (%.0f MB, Llama 3.1 tokenizer), medians of %d" % (
            os.path.getsize(os.path.join(folder, "model.safetensors")) / 1e6, runs),
        "  first read end to end: model.safetensors %.2f GB/s, model.gguf %.2f GB/s (%.2fx), "
        "-o gguf=f16 %.2f GB/s (%.2fx)" % (r["st_gbps"], r["gguf_gbps"], r["gguf_gbps"] / r["st_gbps"],
                                           r["gguf_f16_gbps"], r["gguf_f16_gbps"] / r["st_gbps"]),
        "  llama.cpp load + first token: tmpfs %.2f s, mount cold %.2f s (%.2fx), warm %.2f s (%.2fx)" % (
            l["tmpfs_s"], l["cold_s"], l["cold_s"] / l["tmpfs_s"], l["warm_s"], l["warm_s"] / l["tmpfs_s"]),
    ]
    return res


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "make":
        sys.exit(0 if _make(sys.argv[2]) else 1)
    sys.exit(2)
