"""bench_gguf.py - parts 15, 16 and 17 of make bench: model.gguf (docs/gguf.md, issue 28).

One random llama Hugging Face folder (BF16 weights, Llama 3.1's real tokenizer from the
npm clients of tests/clients/; hidden 1024, 8 layers, vocab 128256: 0.70 GB; with --quick
hidden 512, 4 layers: 0.29 GB) is written to --disk-dir (a disk filesystem, so that its
page cache can be dropped) and measured side by side, each figure the median of per-run
ratios (--runs, at least 5; 3 with --quick):

  15 (gguf-read)    model.gguf read end to end with 1 MiB reads against model.safetensors
                    of a default mount (float32 view) read the same way, each a first read
                    through a fresh mount with the source file in the page cache; model.gguf
                    with the default -o gguf (auto: BF16 kept) and with -o gguf=f16 (every
                    2-D weight rounded on read); next to them model.safetensors of a
                    -o dtype=bf16 mount (the same bytes as model.gguf, no q/k permutation).
  16 (gguf-llama)   llama.cpp (libllama of the npm package, tests/clients/llama.py, a fresh
                    process per measurement) loading the model and making its first token
                    (llama_model_load_from_file with mmap, a context, one decode of a
                    2-token prompt, argmax), timed inside that process (the library itself
                    already loaded), from the mount's model.gguf:
                      cold        a fresh mount (no page of model.gguf cached) and the
                                  source model.safetensors evicted from the page cache with
                                  posix_fadvise(DONTNEED) before the mount (checked with
                                  fincore); config.json and the tokenizer files stay cached,
                                  as do llama.cpp's libraries and Python;
                      cold-cached the same with the source left in the page cache;
                      warm        the same mount again after the cold load and one read of
                                  the whole model.gguf: every page of it cached;
                    each against the same bytes (`weightfs convert`, checked with cmp)
                    in a file on /dev/shm, loaded in the same run.
  17 (gguf-convert) `weightfs convert FOLDER OUT.gguf` (default -o gguf, and -o gguf=f16)
                    into the scratch directory against part 9's write floor: one thread's
                    1 MiB pwrite loop of as many bytes into the same directory, fsynced as
                    convert syncs; beside them `dd bs=1M conv=fsync` of the source file to
                    the same place (nothing converted: the most a program that reads its
                    input reaches); order rotated between runs.

  25 (gguf-moe)     part 15's reads on a BF16 Qwen3-MoE folder (hidden 1024, 8 layers, 32
                    experts of 512, 4 per token, Qwen3's tokenizer: 0.9 GB; --quick: 4
                    layers, 16 experts), whose model.gguf stacks each layer's 96 expert
                    tensors on read into 3, and the daemon's peak memory while reading it
                    (goal >= 0.9x model.safetensors; memory not growing with the experts).

  26 (gguf-oss)     random 4 KiB and 128 KiB reads of model.gguf's expert tensors
                    (ffn_gate_exps, ffn_up_exps: gate_up_proj transposed and split on read;
                    ffn_down_exps: down_proj transposed) on a BF16 gpt-oss folder with
                    gpt-oss-20b's widths (hidden 2880, experts 2880 wide; 4 experts, 1 layer,
                    a 959-token GPT-2 vocabulary: 0.22 GB), -o gguf=f32 and the default (auto:
                    BF16 kept); with --prev-weightfs the same reads through that binary's
                    mount, side by side in each run (order rotated), each figure the median of
                    per-run medians of the reads' times (POSIX_FADV_RANDOM: no readahead, so
                    that a read is one FUSE read of its size).

Selection: --parts gguf (all five) or any of gguf-read, gguf-llama, gguf-convert, gguf-moe,
gguf-oss.
Needs the npm clients (WEIGHTFS_NPM, or bash tests/clients/npm.sh) and a Python with numpy;
says why and returns a note otherwise.
"""

import json
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.join(os.path.dirname(HERE), "tests", "clients")
MiB = 1 << 20
PARTS = ("gguf-read", "gguf-llama", "gguf-convert", "gguf-moe", "gguf-oss")
# parts 21-24 (tools/bench_hf.py) run on the same folder
MORE = {"hf": ("hf-read", "hf-module"), "q4": ("q4-read", "q4-llama")}
# hidden, layers, ffn, heads, kv heads (vocab: Llama 3.1's 128256)
SHAPE = {"full": (1024, 8, 2816, 16, 4), "quick": (512, 4, 1408, 8, 4)}
PROMPT = [128000, 9906]  # <|begin_of_text|> "Hello"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(v):
    v = sorted(v)
    if not v:
        return float("nan")
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def selected(parts):
    """The parts of this file and of bench_hf.py asked for in the set of --parts names."""
    out = set(PARTS) if "gguf" in parts else set(parts) & set(PARTS)
    for group, names in MORE.items():
        out |= set(names) if group in parts else set(parts) & set(names)
    return out


def all_names():
    """Every --parts name this file answers (groups too)."""
    return set(PARTS) | {"gguf"} | set(MORE) | {n for v in MORE.values() for n in v}


# --- the model (run in a Python with numpy) -------------------------------------

def _make(folder, shape):
    sys.path.insert(0, CLIENTS)
    import numpy as np
    import real_tokenizers
    import st_io
    tdir = real_tokenizers.folder("llama3_1")
    if not tdir:
        return False
    os.makedirs(folder, exist_ok=True)
    for f in ("tokenizer.json", "tokenizer_config.json"):
        with open(os.path.join(tdir, f), "rb") as a, open(os.path.join(folder, f), "wb") as b:
            b.write(a.read())
    H, L, FF, NH, KV = SHAPE[shape]
    V = 128256
    cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": H,
           "intermediate_size": FF, "num_hidden_layers": L, "num_attention_heads": NH,
           "num_key_value_heads": KV, "vocab_size": V, "max_position_embeddings": 4096,
           "rms_norm_eps": 1e-5, "rope_theta": 500000.0, "bos_token_id": 128000, "eos_token_id": 128001,
           "torch_dtype": "bfloat16"}
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)
    rng = np.random.default_rng(1)
    hd = H // NH

    def rnd(shape, scale):
        a = rng.standard_normal(shape, np.float32)
        a *= scale
        return a

    w = {"model.embed_tokens.weight": rnd((V, H), 0.02), "lm_head.weight": rnd((V, H), 0.02),
         "model.norm.weight": np.ones(H, np.float32)}
    for i in range(L):
        p = "model.layers.%d." % i
        for n, shp in (("self_attn.q_proj", (NH * hd, H)), ("self_attn.k_proj", (KV * hd, H)),
                       ("self_attn.v_proj", (KV * hd, H)), ("self_attn.o_proj", (H, NH * hd)),
                       ("mlp.gate_proj", (FF, H)), ("mlp.up_proj", (FF, H)), ("mlp.down_proj", (H, FF))):
            w[p + n + ".weight"] = rnd(shp, 0.05)
        w[p + "input_layernorm.weight"] = np.ones(H, np.float32)
        w[p + "post_attention_layernorm.weight"] = np.ones(H, np.float32)
    st_io.save(w, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"},
               dtypes={k: "BF16" for k in w})
    with open(os.path.join(folder, "bench-shape"), "w") as f:
        f.write(shape)
    return True


def _make_moe(folder, shape):
    sys.path.insert(0, CLIENTS)
    import real_tokenizers
    import tiny_models
    tdir = real_tokenizers.folder("qwen3")
    if not tdir:
        return False
    L, E = (8, 32) if shape == "full" else (4, 16)
    tiny_models.make(folder, "qwen3moe", tdir, dims=(1024, 16, 4, 2816, L), dtype="BF16",
                     config={"num_experts": E, "moe_intermediate_size": 512, "num_experts_per_tok": 4})
    with open(os.path.join(folder, "bench-shape"), "w") as f:
        f.write(shape)
    return True


def _make_oss(folder):
    sys.path.insert(0, CLIENTS)
    import converter_cases
    import tiny_models
    tdir = converter_cases.glm_folder(os.path.dirname(folder), merges=700)
    if not tdir:
        return False
    tiny_models.make(folder, "gptoss", tdir, dtype="BF16", dims=(2880, 64, 8, 2880, 1),
                     config={"num_local_experts": 4, "intermediate_size": 2880})
    with open(os.path.join(folder, "bench-shape"), "w") as f:
        f.write("oss")
    return True


def _gguf_tensors(path):
    """{name: (absolute offset, bytes)} of a GGUF's tensors, from its header (read in one go)."""
    import struct
    with open(path, "rb") as f:
        b = f.read(64 * MiB)
    at = [24]
    n_t, n_kv = struct.unpack_from("<QQ", b, 8)
    sizes = {0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 10: 8, 11: 8, 12: 8}

    def u(fmt):
        v = struct.unpack_from(fmt, b, at[0])
        at[0] += struct.calcsize(fmt)
        return v[0]

    def s():
        n = u("<Q")
        at[0] += n
        return b[at[0] - n:at[0]].decode()

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            et, n = u("<I"), u("<Q")
            return [val(et) for _ in range(n)] if et in (8, 9) else at.__setitem__(0, at[0] + n * sizes[et])
        v = b[at[0]:at[0] + sizes[t]]
        at[0] += sizes[t]
        return v
    align = 32
    for _ in range(n_kv):
        k = s()
        v = val(u("<I"))
        if k == "general.alignment":
            align = struct.unpack("<I", v)[0]
    info = {}
    for _ in range(n_t):
        name = s()
        ne = [u("<Q") for _ in range(u("<I"))]
        ty, off = u("<I"), u("<Q")
        n = 1
        for x in ne:
            n *= x
        info[name] = (off, n * {0: 4, 1: 2, 30: 2}[ty] if ty in (0, 1, 30) else None)
    start = (at[0] + align - 1) // align * align
    return {k: (start + o, n) for k, (o, n) in info.items()}


def part_oss(args, runs):
    """Part 26: random reads of a gpt-oss model.gguf's gathered experts, this binary and
    --prev-weightfs side by side."""
    import random
    py = _numpy_python()
    folder = os.path.join(os.path.abspath(args.disk_dir), "gguf-gptoss")
    if not os.path.exists(os.path.join(folder, "bench-shape")):
        log("bench: writing the BF16 gpt-oss folder for part 26 in %s" % folder)
        if subprocess.run([py, os.path.abspath(__file__), "make-oss", folder]).returncode != 0:
            return {"note": "skipped: the npm clients are not installed (bash tests/clients/npm.sh)"}
    _read(os.path.join(folder, "model.safetensors"))  # the source in the page cache
    bins = [("new", args.weightfs)] + ([("prev", args.prev_weightfs)] if args.prev_weightfs else [])
    res = {"runs": runs, "sizes": {}, "src_bytes": os.path.getsize(os.path.join(folder, "model.safetensors"))}
    n_reads = 40 if args.quick else 100
    try:
        for ot in ("f32", "auto"):
            mounts = {}
            try:
                for name, wfs in bins:
                    mounts[name] = _Mount(wfs, folder, os.path.join(args.dir, "mnt-oss-" + name),
                                          ("-o", "gguf=" + ot))
                g = {k: os.path.join(m.mnt, "model.gguf") for k, m in mounts.items()}
                tens = [v for k, v in _gguf_tensors(g["new"]).items() if "_exps.weight" in k]
                for size in (4096, 128 << 10):
                    rnd = random.Random(26)
                    key = "%s_%dk" % (ot, size >> 10)
                    per = {k: [] for k in mounts}
                    first = {}  # the first read of the size (4 KiB: a fresh mount's first read)
                    for run in range(runs):
                        offs = []
                        for _ in range(n_reads):
                            a, n = rnd.choice(tens)
                            offs.append(a + rnd.randrange(n - size))
                        for k, _ in _rotate(bins, run):
                            fd = os.open(g[k], os.O_RDONLY)
                            try:
                                # no readahead: a 4 KiB read is a 4 KiB FUSE read, not 128 KiB or more
                                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_RANDOM)
                                ts = []
                                for a in offs:
                                    t0 = time.perf_counter()
                                    if len(os.pread(fd, size, a)) != size:
                                        raise SystemExit("bench: short read of %s" % g[k])
                                    ts.append(time.perf_counter() - t0)
                            finally:
                                os.close(fd)
                            per[k].append(median(ts))
                            if run == 0:
                                first[k] = ts[0]
                    res["sizes"][key] = {k: median(v) for k, v in per.items()}
                    res["sizes"][key].update({"first_" + k: v for k, v in first.items()})
                    if "prev" in per:
                        res["sizes"][key]["x_prev"] = median([p / n for p, n in zip(per["prev"], per["new"])])
                    log("bench: part 26 %s: %s" % (key, res["sizes"][key]))
            finally:
                for m in mounts.values():
                    m.close()
                    if os.path.isdir(m.mnt) and not os.path.ismount(m.mnt):
                        os.rmdir(m.mnt)
    finally:
        if not args.keep and os.path.isdir(folder):
            for f in os.listdir(folder):
                os.unlink(os.path.join(folder, f))
            os.rmdir(folder)
    return res


def report_oss(r):
    if "note" in r:
        return ["(26) %s" % r["note"]]
    out = ["(26) random reads of a BF16 gpt-oss model.gguf's experts (hidden 2880, experts 2880 wide, "
           "model.safetensors %.0f MB), median of %d runs' median read time" % (r["src_bytes"] / 1e6, r["runs"])]
    for key, v in r["sizes"].items():
        line = "  -o gguf=%-10s this build %8.1f us  %6.1f MB/s" % (
            key.replace("_", ", ") + " reads", v["new"] * 1e6, int(key.split("_")[1][:-1]) * 1024 / v["new"] / 1e6)
        if "prev" in v:
            line += "   --prev-weightfs %8.1f us  %6.1f MB/s   %.2fx faster" % (
                v["prev"] * 1e6, int(key.split("_")[1][:-1]) * 1024 / v["prev"] / 1e6, v["x_prev"])
        out.append(line)
        out.append("  %-34s first read: this build %.1f us%s" % (
            "", v["first_new"] * 1e6, "   --prev-weightfs %.1f us" % (v["first_prev"] * 1e6) if "prev" in v else ""))
    return out


def _hwm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith("VmHWM:"):
                return int(ln.split()[1])
    return None


def part_moe(args, py, runs):
    """Part 25: part 15's reads on a MoE folder, and the daemon's VmHWM after reading model.gguf."""
    shape = "quick" if args.quick else "full"
    folder = os.path.join(os.path.abspath(args.disk_dir), "gguf-qwen3moe-" + shape)
    if not os.path.exists(os.path.join(folder, "bench-shape")):
        log("bench: writing the %s BF16 Qwen3-MoE folder for part 25 in %s" % (shape, folder))
        if subprocess.run([py, os.path.abspath(__file__), "make-moe", folder, shape]).returncode != 0:
            return {"note": "skipped: the npm clients are not installed (bash tests/clients/npm.sh)"}
    mnt = os.path.join(args.dir, "mnt-moe")
    try:
        res = part_read(args, folder, mnt, runs)
        res["src_bytes"] = os.path.getsize(os.path.join(folder, "model.safetensors"))
        m = _Mount(args.weightfs, folder, mnt)
        try:
            res["hwm_mounted_kib"] = _hwm_kib(m.p.pid)
            _read(os.path.join(mnt, "model.gguf"))
            res["hwm_read_kib"] = _hwm_kib(m.p.pid)
        finally:
            m.close()
    finally:
        if not args.keep and os.path.isdir(folder):
            for f in os.listdir(folder):
                os.unlink(os.path.join(folder, f))
            os.rmdir(folder)
        if os.path.isdir(mnt) and not os.path.ismount(mnt):
            os.rmdir(mnt)
    return res


def _first_token_child(path):
    """In the child: seconds for llama.cpp to load path and make one token."""
    sys.path.insert(0, CLIENTS)
    import llama
    llama.lib()  # the library and its backends: not part of the measure
    t0 = time.perf_counter()
    m = llama.load(path)
    t1 = time.perf_counter()
    tok = llama.greedy(m, PROMPT, 1)
    t2 = time.perf_counter()
    print(json.dumps({"load_s": t1 - t0, "total_s": t2 - t0, "token": tok[0]}))


# --- helpers ----------------------------------------------------------------------

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
            time.sleep(0.001)
        os.stat(mnt)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def _read(path):
    """GB/s of one 1 MiB read() loop over path, and the bytes read."""
    n = 0
    buf = bytearray(MiB)
    with open(path, "rb", buffering=0) as f:
        t0 = time.perf_counter()
        while True:
            k = f.readinto(buf)
            if not k:
                break
            n += k
        dt = time.perf_counter() - t0
    return n / dt / 1e9, n


def _evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fdatasync(fd)  # dirty pages (a freshly written model) are not dropped
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def _resident(path):
    """Bytes of path in the page cache (util-linux fincore), or None."""
    try:
        out = subprocess.run(["fincore", "--bytes", "--noheadings", "--output", "RES", path],
                             capture_output=True, text=True, check=True).stdout
        return int(out.split()[0])
    except (OSError, subprocess.CalledProcessError, ValueError, IndexError):
        return None


def _numpy_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def _first_token(py, path):
    t0 = time.perf_counter()
    out = subprocess.run([py, os.path.abspath(__file__), "first-token", path], check=True,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True).stdout
    r = json.loads(out)
    r["process_s"] = time.perf_counter() - t0
    return r


def _floor(out, size):
    """Part 9's write floor: one thread's 1 MiB pwrite loop of size bytes to out, fsynced."""
    step = bytes(range(256)) * 4096
    t0 = time.perf_counter()
    fd = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
    try:
        for off in range(0, size, len(step)):
            n = min(len(step), size - off)
            if os.pwrite(fd, step if n == len(step) else step[:n], off) != n:
                raise OSError("short write to %s" % out)
        os.fsync(fd)
    finally:
        os.close(fd)
    return time.perf_counter() - t0


def _rotate(ways, run):
    k = run % len(ways)
    return ways[k:] + ways[:k]


# --- the parts ----------------------------------------------------------------------

def part_read(args, folder, mnt, runs):
    """Part 15."""
    src = os.path.join(folder, "model.safetensors")
    _read(src)  # the source in the page cache
    ways = [("st", (), "model.safetensors"), ("st_bf16", ("-o", "dtype=bf16"), "model.safetensors"),
            ("gguf", (), "model.gguf"), ("gguf_f16", ("-o", "gguf=f16"), "model.gguf")]
    res = {k: [] for k, _, _ in ways}
    res.update({"x_st": [], "f16_x_st": [], "x_st_bf16": [], "bytes": {}, "src_resident": []})
    log("bench: part 15, first reads of model.gguf and model.safetensors (%d runs)" % runs)
    for run in range(runs):
        res["src_resident"].append(_resident(src))
        pair = {}
        for name, opts, f in _rotate(ways, run):
            m = _Mount(args.weightfs, folder, mnt, opts)
            try:
                pair[name], res["bytes"][name] = _read(os.path.join(mnt, f))
            finally:
                m.close()
            res[name].append(pair[name])
        res["x_st"].append(pair["gguf"] / pair["st"])
        res["f16_x_st"].append(pair["gguf_f16"] / pair["st"])
        res["x_st_bf16"].append(pair["gguf"] / pair["st_bf16"])
    res["median"] = {k: median(res[k]) for k in ("st", "st_bf16", "gguf", "gguf_f16", "x_st", "f16_x_st",
                                                   "x_st_bf16")}
    return res


def part_llama(args, folder, mnt, runs, py):
    """Part 16."""
    src = os.path.join(folder, "model.safetensors")
    shm_dir = "/dev/shm" if os.path.isdir("/dev/shm") else args.dir
    shm = os.path.join(shm_dir, "bench-gguf-%d.gguf" % os.getpid())
    subprocess.run([args.weightfs, "convert", "--force", folder, shm], check=True)
    res = {"tmpfs_file": shm, "cold": [], "cold_cached": [], "warm": [], "tmpfs": [],
           "x_cold": [], "x_cold_cached": [], "x_warm": [], "src_resident_cold": [], "tokens": set()}
    log("bench: part 16, llama.cpp load + first token, model.gguf on the mount vs /dev/shm (%d runs)" % runs)
    try:
        m = _Mount(args.weightfs, folder, mnt)
        try:
            res["same_bytes"] = subprocess.run(["cmp", "-s", shm, os.path.join(mnt, "model.gguf")]).returncode == 0
        finally:
            m.close()
        if not res["same_bytes"]:
            raise SystemExit("bench: the mount's model.gguf and weightfs convert's output differ")
        for run in range(runs):
            t = {}

            def tmpfs():
                t["tmpfs"] = _first_token(py, shm)

            def cold():
                _evict(src)
                res["src_resident_cold"].append(_resident(src))
                mm = _Mount(args.weightfs, folder, mnt)
                try:
                    t["cold"] = _first_token(py, os.path.join(mnt, "model.gguf"))
                    _read(os.path.join(mnt, "model.gguf"))
                    t["warm"] = _first_token(py, os.path.join(mnt, "model.gguf"))
                finally:
                    mm.close()

            def cold_cached():
                _read(src)
                mm = _Mount(args.weightfs, folder, mnt)
                try:
                    t["cold_cached"] = _first_token(py, os.path.join(mnt, "model.gguf"))
                finally:
                    mm.close()

            for fn in _rotate([tmpfs, cold, cold_cached], run):
                fn()
            for k in ("cold", "cold_cached", "warm", "tmpfs"):
                res[k].append(t[k])
                res["tokens"].add(t[k]["token"])
            for k in ("cold", "cold_cached", "warm"):
                res["x_" + k].append(t[k]["total_s"] / t["tmpfs"]["total_s"])
    finally:
        if os.path.exists(shm):
            os.unlink(shm)
    res["tokens"] = sorted(res["tokens"])
    res["median"] = {k: median([x["total_s"] for x in res[k]]) for k in ("cold", "cold_cached", "warm", "tmpfs")}
    res["median_load"] = {k: median([x["load_s"] for x in res[k]]) for k in ("cold", "cold_cached", "warm", "tmpfs")}
    res["median"].update({k: median(res[k]) for k in ("x_cold", "x_cold_cached", "x_warm")})
    return res


def part_convert(args, folder, runs):
    """Part 17."""
    out = os.path.join(args.dir, "bench-convert-out.gguf")
    _read(os.path.join(folder, "model.safetensors"))
    res = {"dir": args.dir, "sides": {}}
    log("bench: part 17, weightfs convert FOLDER OUT.gguf vs the write floor (%d runs)" % runs)
    try:
        for label, opts in (("auto", []), ("f16", ["-o", "gguf=f16"])):
            r = {"convert": [], "floor": [], "x_floor": [], "cp": [], "cp_x_floor": []}
            size = [0]
            src = os.path.join(folder, "model.safetensors")
            src_size = os.path.getsize(src)

            def cp():
                # the same source bytes copied, nothing converted: what a program that reads
                # its input (page cache to user memory to the output) reaches here
                t0 = time.perf_counter()
                subprocess.run(["dd", "if=" + src, "of=" + out, "bs=1M", "conv=fsync", "status=none"], check=True)
                return time.perf_counter() - t0

            def conv():
                t0 = time.perf_counter()
                subprocess.run([args.weightfs, "convert"] + opts + [folder, out], check=True)
                dt = time.perf_counter() - t0
                size[0] = os.path.getsize(out)
                return dt

            if os.path.exists(out):
                os.unlink(out)
            conv()  # the size, and a first run not counted
            for run in range(runs):
                pair = {}
                for name, fn in _rotate([("convert", conv), ("floor", lambda: _floor(out, size[0])), ("cp", cp)], run):
                    if os.path.exists(out):
                        os.unlink(out)
                    pair[name] = (src_size if name == "cp" else size[0]) / fn() / 1e9
                    r[name].append(pair[name])
                r["x_floor"].append(pair["convert"] / pair["floor"])
                r["cp_x_floor"].append(pair["cp"] / pair["floor"])
            r["bytes"] = size[0]
            r["median"] = {k: median(r[k]) for k in ("convert", "floor", "x_floor", "cp", "cp_x_floor")}
            res["sides"][label] = r
    finally:
        if os.path.exists(out):
            os.unlink(out)
    return res


def part_gguf(args, parts):
    """Parts 15-17 (those in parts).  Returns the result dict, with "text" lines for the
    report (or a "note")."""
    d = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
    os.environ["WEIGHTFS_NPM"] = d
    py = _numpy_python()
    if not py:
        return {"note": "skipped: no Python with numpy"}
    oss = part_oss(args, max(3 if args.quick else 5, args.runs)) if "gguf-oss" in parts else None
    if oss is not None and not (set(parts) - {"gguf-oss"}):
        return {"oss": oss, "text": report_oss(oss)}  # no llama folder needed
    shape = "quick" if args.quick else "full"
    os.makedirs(args.disk_dir, exist_ok=True)
    folder = os.path.join(os.path.abspath(args.disk_dir), "gguf-llama-" + shape)
    src = os.path.join(folder, "model.safetensors")
    stamp = os.path.join(folder, "bench-shape")
    if not os.path.exists(stamp):
        log("bench: writing the %s BF16 llama folder for parts 15-17 in %s" % (shape, folder))
        t0 = time.perf_counter()
        if subprocess.run([py, os.path.abspath(__file__), "make", folder, shape]).returncode != 0:
            return {"note": "skipped: the npm clients are not installed (bash tests/clients/npm.sh)"}
        with open(src, "rb") as f:
            os.fsync(f.fileno())
        log("bench: written in %.1f s" % (time.perf_counter() - t0))
    mnt = os.path.join(args.dir, "mnt-gguf")
    runs = max(3 if args.quick else 5, args.runs)
    H, L, FF, NH, KV = SHAPE[shape]
    res = {"runs": runs, "folder": folder, "src_bytes": os.path.getsize(src),
           "shape": {"hidden": H, "layers": L, "ffn": FF, "heads": NH, "kv_heads": KV, "vocab": 128256},
           "fs": subprocess.run(["stat", "-f", "-c", "%T", folder], capture_output=True, text=True).stdout.strip(),
           "loadavg_start": os.getloadavg()}
    try:
        if "gguf-read" in parts:
            res["read"] = part_read(args, folder, mnt, runs)
        if "gguf-llama" in parts:
            res["llama"] = part_llama(args, folder, mnt, runs, py)
        if "gguf-convert" in parts:
            res["convert"] = part_convert(args, folder, runs)
        if "gguf-moe" in parts:
            res["moe"] = part_moe(args, py, runs)
        import bench_hf
        res.update(bench_hf.run_parts(args, parts, folder, mnt, runs, py))
    finally:
        if not args.keep:
            for f in os.listdir(folder):
                os.unlink(os.path.join(folder, f))
            os.rmdir(folder)
        if os.path.isdir(mnt) and not os.path.ismount(mnt):
            os.rmdir(mnt)
    res["loadavg_end"] = os.getloadavg()
    res["text"] = report(res)
    if oss is not None:
        res["oss"] = oss
        res["text"] += report_oss(oss)
    return res


def report(res):
    out = ["Parts 15-17, 21-24: model.gguf and hf/ of a random BF16 llama folder (hidden %d, %d layers, vocab %d: "
           "model.safetensors %.0f MB on %s), medians of %d runs, ratios medians of per-run pairs; "
           "load average %.1f at the start, %.1f at the end" % (
               res["shape"]["hidden"], res["shape"]["layers"], res["shape"]["vocab"], res["src_bytes"] / 1e6,
               res["fs"], res["runs"], res["loadavg_start"][0], res["loadavg_end"][0])]
    if "read" in res:
        r = res["read"]["median"]
        b = res["read"]["bytes"]
        out += ["(15) first read end to end, 1 MiB reads, a fresh mount each, source in the page cache (goal >= 0.9x)",
                "  model.safetensors (float32 view, %.0f MB)   %5.2f GB/s" % (b["st"] / 1e6, r["st"]),
                "  model.safetensors -o dtype=bf16 (%.0f MB)   %5.2f GB/s" % (b["st_bf16"] / 1e6, r["st_bf16"]),
                "  model.gguf (auto: BF16, %.0f MB)           %5.2f GB/s  %.2fx model.safetensors, %.2fx the bf16 view"
                % (b["gguf"] / 1e6, r["gguf"], r["x_st"], r["x_st_bf16"]),
                "  model.gguf -o gguf=f16 (%.0f MB)           %5.2f GB/s  %.2fx model.safetensors"
                % (b["gguf_f16"] / 1e6, r["gguf_f16"], r["f16_x_st"])]
    if "llama" in res:
        l = res["llama"]
        r, ld = l["median"], l["median_load"]
        res_c = [x for x in l["src_resident_cold"] if x is not None]
        out += ["(16) llama.cpp load + first token (mmap; timed in a fresh process), seconds (goal cold <= 1.5x, warm <= 1.1x)",
                "  /dev/shm copy of the same bytes      %.3f s (load %.3f)" % (r["tmpfs"], ld["tmpfs"]),
                "  mount, cold (source evicted: %s B cached)  %.3f s (load %.3f)  %.2fx" % (
                    max(res_c) if res_c else "?", r["cold"], ld["cold"], r["x_cold"]),
                "  mount, cold, source in page cache    %.3f s (load %.3f)  %.2fx" % (
                    r["cold_cached"], ld["cold_cached"], r["x_cold_cached"]),
                "  mount, warm (model.gguf cached)      %.3f s (load %.3f)  %.2fx" % (r["warm"], ld["warm"], r["x_warm"]),
                "  first tokens seen: %s" % l["tokens"]]
    if "convert" in res:
        out.append("(17) weightfs convert FOLDER OUT.gguf vs the write floor (1 MiB pwrite loop, same bytes, %s; "
                   "goal >= 0.9x)" % res["convert"]["dir"])
        for label, s in res["convert"]["sides"].items():
            r = s["median"]
            out.append("  -o gguf=%-4s  %.0f MB  convert %.2f GB/s  floor %.2f GB/s  %.2fx floor;"
                       "  dd of the source (nothing converted) %.2f GB/s, %.2fx floor" % (
                           label, s["bytes"] / 1e6, r["convert"], r["floor"], r["x_floor"], r["cp"],
                           r["cp_x_floor"]))
    if "moe" in res and "median" in res["moe"]:
        r, b, mo = res["moe"]["median"], res["moe"]["bytes"], res["moe"]
        out += ["(25) a BF16 Qwen3-MoE folder (model.safetensors %.0f MB): part 15's reads (goal >= 0.9x)"
                % (mo["src_bytes"] / 1e6),
                "  model.safetensors (float32 view, %.0f MB)   %5.2f GB/s" % (b["st"] / 1e6, r["st"]),
                "  model.safetensors -o dtype=bf16 (%.0f MB)   %5.2f GB/s" % (b["st_bf16"] / 1e6, r["st_bf16"]),
                "  model.gguf (auto: BF16, experts stacked, %.0f MB)  %5.2f GB/s  %.2fx model.safetensors, "
                "%.2fx the bf16 view" % (b["gguf"] / 1e6, r["gguf"], r["x_st"], r["x_st_bf16"]),
                "  model.gguf -o gguf=f16 (%.0f MB)           %5.2f GB/s  %.2fx model.safetensors"
                % (b["gguf_f16"] / 1e6, r["gguf_f16"], r["f16_x_st"]),
                "  the daemon's VmHWM: %s KiB mounted, %s KiB after reading model.gguf whole"
                % (mo.get("hwm_mounted_kib"), mo.get("hwm_read_kib"))]
    elif "moe" in res:
        out.append("(25) %s" % res["moe"].get("note"))
    import bench_hf
    return out + bench_hf.report(res)


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "make":
        sys.exit(0 if _make(sys.argv[2], sys.argv[3]) else 1)
    if len(sys.argv) == 4 and sys.argv[1] == "make-moe":
        sys.exit(0 if _make_moe(sys.argv[2], sys.argv[3]) else 1)
    if len(sys.argv) == 3 and sys.argv[1] == "make-oss":
        sys.exit(0 if _make_oss(sys.argv[2]) else 1)
    if len(sys.argv) == 3 and sys.argv[1] == "first-token":
        _first_token_child(sys.argv[2])
        sys.exit(0)
    sys.exit(2)
