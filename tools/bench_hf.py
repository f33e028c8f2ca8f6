"""bench_hf.py - parts 21-24 of make bench: hf/ of a GGUF (issue 29) and model.gguf
quantized on read (issue 30), on the random BF16 llama folder of tools/bench_gguf.py
(which drives these parts: same folder, same helpers), medians of per-run ratios:

  21 (hf-read)     a GGUF mount's hf/model.safetensors read end to end with 1 MiB reads
                   against the same mount's tensor files read in turn (the same float32
                   values: no q/k row order undone there), each a first read through a fresh
                   mount; sources on the scratch tmpfs (cached): the folder's GGUF as
                   `weightfs convert` makes it (BF16) and its -o gguf=q8_0 GGUF.
  22 (hf-module)   the Python module in-process: weightfs.safe_open(GGUF, framework="np",
                   names="hf").get_tensor of every tensor against safe_open(names="model")
                   .get_tensor of every tensor (float32 both: np.empty arrays, each dropped
                   before the next), the same two sources, at least 9 runs; in a child that
                   first touches and frees --touch-mem GiB (as bench.py does) and reads each
                   way once untimed.  A run opens both (fresh mappings; timed apart) and
                   reads the tensors in pairs of one size, one of each way, the pair's order
                   alternating, so that the machine's load lands on both; the figure: each
                   way's sum of its tensors' median times (and the median of per-run ratios).
                   Then one whole pass of each way in turn, as a user sees it (noisier).
  23 (q4-read)     model.gguf of a fresh -o gguf=q4_k_m mount of the folder read end to
                   end (quantized on read), by one reader (as part 15) and by one reader per
                   core (each a contiguous share of the file), against llama.cpp's
                   llama_model_quantize(F32 GGUF on the tmpfs -> tmpfs, Q4_K_M, nthread =
                   every core) of the same model, timed in-process; the bytes are compared.
  24 (q4-llama)    llama.cpp load + first token (as part 16) from that q4_k_m model.gguf on
                   the mount, cold (a fresh mount, the source evicted) and warm (after one
                   whole read: model.gguf's pages cached, nothing quantized again) against
                   llama_model_quantize's file on /dev/shm.
"""

import json
import os
import subprocess
import sys
import threading
import time

import bench_gguf as G

HERE = os.path.dirname(os.path.abspath(__file__))
PYDIR = os.path.join(os.path.dirname(HERE), "python")
PARTS = ("hf-read", "hf-module", "q4-read", "q4-llama")
Q4_K_M = 15  # llama_ftype LLAMA_FTYPE_MOSTLY_Q4_K_M


def _tensor_files(mnt):
    """The tensor files of a GGUF mount: every file under a folder but hf/ and metadata/."""
    out = []
    for d, subs, files in os.walk(mnt):
        if d == mnt:
            subs[:] = sorted(s for s in subs if s not in ("hf", "metadata"))
            continue
        subs.sort()
        out += [os.path.join(d, f) for f in sorted(files)]
    return out


def _read_files(paths):
    n, t = 0, 0.0
    for p in paths:
        r, k = G._read(p)
        n += k
        t += k / r / 1e9
    return n / t / 1e9, n


def _read_parallel(path, k):
    """GB/s of k threads each reading a contiguous share of path with 1 MiB preads."""
    size = os.path.getsize(path)
    share = -(-size // k // G.MiB) * G.MiB
    fd = os.open(path, os.O_RDONLY)
    got = [0] * k

    def one(i):
        buf = bytearray(G.MiB)
        off, end = i * share, min(size, (i + 1) * share)
        while off < end:
            n = os.preadv(fd, [memoryview(buf)[:min(G.MiB, end - off)]], off)
            if n <= 0:
                break
            off += n
            got[i] += n

    th = [threading.Thread(target=one, args=(i,)) for i in range(k)]
    try:
        t0 = time.perf_counter()
        for t in th:
            t.start()
        for t in th:
            t.join()
        dt = time.perf_counter() - t0
    finally:
        os.close(fd)
    if sum(got) != size:
        raise SystemExit("bench: short read of %s: %d of %d bytes" % (path, sum(got), size))
    return size / dt / 1e9


def _child(py, args, *argv):
    env = dict(os.environ, WEIGHTFS_LIB=os.path.join(os.path.dirname(os.path.abspath(args.weightfs)),
                                                     "libweightfs.so.0"))
    out = subprocess.run([py, os.path.abspath(__file__)] + [str(a) for a in argv], check=True, env=env,
                         stdout=subprocess.PIPE, text=True).stdout
    return json.loads(out)


def _sources(args, folder):
    """The folder's BF16 GGUF and its Q8_0 GGUF on the scratch tmpfs."""
    out = {}
    for label, opts in (("bf16", []), ("q8_0", ["-o", "gguf=q8_0"])):
        p = os.path.join(args.dir, "bench-hf-%s.gguf" % label)
        if not os.path.exists(p):
            subprocess.run([args.weightfs, "convert", "--force"] + opts + [folder, p], check=True)
        out[label] = p
    return out


def part_hf_read(args, srcs, mnt, runs):
    """Part 21."""
    res = {}
    log_ = "bench: part 21, hf/model.safetensors vs the tensor files of a GGUF mount (%d runs)" % runs
    G.log(log_)
    for label, src in srcs.items():
        r = {"hf": [], "tensors": [], "x_tensors": [], "bytes": {}}
        m = G._Mount(args.weightfs, src, mnt)
        try:
            files = [os.path.relpath(p, mnt) for p in _tensor_files(mnt)]
        finally:
            m.close()

        def hf():
            return G._read(os.path.join(mnt, "hf", "model.safetensors"))

        def tensors():
            return _read_files([os.path.join(mnt, f) for f in files])

        for run in range(runs):
            pair = {}
            for name, fn in G._rotate([("hf", hf), ("tensors", tensors)], run):
                m = G._Mount(args.weightfs, src, mnt)
                try:
                    pair[name], r["bytes"][name] = fn()
                finally:
                    m.close()
                r[name].append(pair[name])
            r["x_tensors"].append(pair["hf"] / pair["tensors"])
        r["files"] = len(files)
        r["median"] = {k: G.median(r[k]) for k in ("hf", "tensors", "x_tensors")}
        res[label] = r
    return res


def part_hf_module(args, srcs, runs, py):
    """Part 22."""
    runs = max(9, runs)
    G.log("bench: part 22, safe_open(names=\"hf\") vs names=\"model\", every tensor (%d runs)" % runs)
    return {label: _child(py, args, "module", src, runs, getattr(args, "touch_mem", 4))
            for label, src in srcs.items()}


def _touch(gib):
    """bench.py's --touch-mem in this process: GiB allocated, filled and freed, so that
    neither way is the first to take memory from the kernel."""
    if gib > 0:
        b = bytearray(gib << 30)
        for i in range(0, len(b), G.MiB):
            b[i:i + 1] = b"\xa5"
        del b


def _pairs(hf_keys, hf_size, model_keys, model_size):
    """The two ways' tensors in pairs of one size (each the same float32 array), in
    hf/'s order; a tensor without a partner is paired with None."""
    spare = {}
    for k in model_keys:
        spare.setdefault(model_size(k), []).append(k)
    out = [(k, spare.get(hf_size(k), [None]).pop(0) if spare.get(hf_size(k)) else None) for k in hf_keys]
    return out + [(None, k) for ks in spare.values() for k in ks]


def _module_child(src, runs, touch_gib):
    sys.path.insert(0, PYDIR)
    import weightfs
    _touch(touch_gib)
    r = {"hf": [], "model": [], "x_model": [], "open_s": {"hf": [], "model": []}, "x_model_open": [],
         "pass": {"hf": [], "model": [], "x_model": []}, "bytes": {}, "loadavg_start": os.getloadavg()}

    def opened(names):
        t0 = time.perf_counter()
        f = weightfs.safe_open(src, framework="np", names=names)
        return f, time.perf_counter() - t0

    def whole(names):
        """get_tensor s of one pass of every tensor, each result dropped at once."""
        with weightfs.safe_open(src, framework="np", names=names) as f:
            t0 = time.perf_counter()
            for k in f.keys():
                f.get_tensor(k)
            return time.perf_counter() - t0

    for names in ("hf", "model"):
        whole(names)
    per = {}  # (way, tensor): its get_tensor s in each run
    for run in range(runs):
        # the two ways tensor by tensor, the pair's order alternating: a change of load
        # (other work on the machine) lands on both
        fo = {}
        for name in G._rotate(["hf", "model"], run):
            fo[name] = opened(name)
            r["open_s"][name].append(fo[name][1])
        f = {k: v[0] for k, v in fo.items()}
        hfh = f["hf"]._hf["tensors"]
        pairs = _pairs(f["hf"].keys(), lambda k: hfh[k]["data_offsets"][1] - hfh[k]["data_offsets"][0],
                       f["model"].keys(), lambda k: f["model"].model.info(k)["size"])
        t = {"hf": 0.0, "model": 0.0}
        n = {"hf": 0, "model": 0}
        for i, pair in enumerate(pairs):
            for name, k in (zip(("hf", "model"), pair) if (run + i) % 2 == 0 else zip(("model", "hf"), pair[::-1])):
                if k is None:
                    continue
                t0 = time.perf_counter()
                n[name] += f[name].get_tensor(k).nbytes
                dt = time.perf_counter() - t0
                t[name] += dt
                per.setdefault((name, k), []).append(dt)
        for v in f.values():
            v.close()
        r["bytes"] = n
        for name in t:
            r[name].append(n[name] / t[name] / 1e9)
        r["x_model"].append(t["model"] / t["hf"])
        r["x_model_open"].append((t["model"] + r["open_s"]["model"][-1]) / (t["hf"] + r["open_s"]["hf"][-1]))
        # and as a user sees it: one way's whole pass, then the other's
        w = {name: whole(name) for name in G._rotate(["hf", "model"], run)}
        for name in w:
            r["pass"][name].append(n[name] / w[name] / 1e9)
        r["pass"]["x_model"].append(w["model"] / w["hf"])
    r["median"] = {k: G.median(r[k]) for k in ("x_model", "x_model_open")}
    # each way's pass as the sum of its tensors' median times: one run's burst of load
    # on one big tensor moves it no more than it moves that tensor's median
    tm = {name: sum(G.median(v) for (w, _), v in per.items() if w == name) for name in ("hf", "model")}
    r["median"].update({name: r["bytes"][name] / tm[name] / 1e9 for name in tm})
    r["median"]["x_model_sum"] = tm["model"] / tm["hf"]
    r["median"].update({"open_" + k: G.median(v) for k, v in r["open_s"].items()})
    r["median"].update({"pass_" + k: G.median(v) for k, v in r["pass"].items()})
    r["loadavg_end"] = os.getloadavg()
    print(json.dumps(r))


def _quantize_child(src, dst, nthread):
    sys.path.insert(0, G.CLIENTS)
    import llama
    llama.lib()
    t0 = time.perf_counter()
    llama.quantize(src, dst, Q4_K_M, nthread=nthread)
    print(json.dumps({"s": time.perf_counter() - t0}))


def part_q4_read(args, folder, mnt, runs, py, f32, ref):
    """Part 23."""
    cores = os.cpu_count() or 1
    res = {"cores": cores, "quantize": [], "read1": [], "readN": [], "x1": [], "xN": []}
    G.log("bench: part 23, model.gguf -o gguf=q4_k_m read vs llama_model_quantize, %d cores (%d runs)"
          % (cores, runs))
    opt = ("-o", "gguf=q4_k_m")
    m = G._Mount(args.weightfs, folder, mnt, opt)
    try:
        res["same_bytes"] = subprocess.run(["cmp", "-s", ref, os.path.join(mnt, "model.gguf")]).returncode == 0
    finally:
        m.close()
    if not res["same_bytes"]:
        raise SystemExit("bench: model.gguf -o gguf=q4_k_m and llama_model_quantize's file differ")
    size = os.path.getsize(ref)
    tmp = ref + ".run"

    def quantize():
        s = _child(py, args, "quantize", f32, tmp, cores)["s"]
        os.unlink(tmp)
        return size / s / 1e9

    def mounted(fn):
        def go():
            mm = G._Mount(args.weightfs, folder, mnt, opt)
            try:
                return fn(os.path.join(mnt, "model.gguf"))
            finally:
                mm.close()
        return go

    ways = [("quantize", quantize), ("read1", mounted(lambda p: G._read(p)[0])),
            ("readN", mounted(lambda p: _read_parallel(p, cores)))]
    for run in range(runs):
        pair = {}
        for name, fn in G._rotate(ways, run):
            pair[name] = fn()
            res[name].append(pair[name])
        res["x1"].append(pair["read1"] / pair["quantize"])
        res["xN"].append(pair["readN"] / pair["quantize"])
    res["bytes"] = size
    res["median"] = {k: G.median(res[k]) for k in ("quantize", "read1", "readN", "x1", "xN")}
    return res


def part_q4_llama(args, folder, mnt, runs, py, ref):
    """Part 24."""
    src = os.path.join(folder, "model.safetensors")
    opt = ("-o", "gguf=q4_k_m")
    res = {"cold": [], "warm": [], "tmpfs": [], "x_cold": [], "x_warm": [], "tokens": set(),
           "src_resident_cold": []}
    G.log("bench: part 24, llama.cpp load + first token, q4_k_m model.gguf on the mount vs /dev/shm (%d runs)" % runs)
    for run in range(runs):
        t = {}

        def tmpfs():
            t["tmpfs"] = G._first_token(py, ref)

        def cold():
            G._evict(src)
            res["src_resident_cold"].append(G._resident(src))
            mm = G._Mount(args.weightfs, folder, mnt, opt)
            try:
                t["cold"] = G._first_token(py, os.path.join(mnt, "model.gguf"))
                G._read(os.path.join(mnt, "model.gguf"))
                t["warm"] = G._first_token(py, os.path.join(mnt, "model.gguf"))
            finally:
                mm.close()

        for fn in G._rotate([tmpfs, cold], run):
            fn()
        for k in ("cold", "warm", "tmpfs"):
            res[k].append(t[k])
            res["tokens"].add(t[k]["token"])
        for k in ("cold", "warm"):
            res["x_" + k].append(t[k]["total_s"] / t["tmpfs"]["total_s"])
    res["tokens"] = sorted(res["tokens"])
    res["median"] = {k: G.median([x["total_s"] for x in res[k]]) for k in ("cold", "warm", "tmpfs")}
    res["median_load"] = {k: G.median([x["load_s"] for x in res[k]]) for k in ("cold", "warm", "tmpfs")}
    res["median"].update({k: G.median(res[k]) for k in ("x_cold", "x_warm")})
    return res


def run_parts(args, parts, folder, mnt, runs, py):
    """Parts 21-24 (those of PARTS in parts) into a dict of results."""
    res = {}
    made = []
    try:
        if parts & {"hf-read", "hf-module"}:
            srcs = _sources(args, folder)
            made += srcs.values()
            if "hf-read" in parts:
                res["hf_read"] = part_hf_read(args, srcs, mnt, runs)
            if "hf-module" in parts:
                res["hf_module"] = part_hf_module(args, srcs, runs, py)
        if parts & {"q4-read", "q4-llama"}:
            qruns = max(3, min(runs, 5))
            f32 = os.path.join(args.dir, "bench-q4-f32.gguf")
            ref = "/dev/shm/bench-q4-%d.gguf" % os.getpid() if os.path.isdir("/dev/shm") else \
                os.path.join(args.dir, "bench-q4-ref.gguf")
            made += [f32, ref]
            subprocess.run([args.weightfs, "convert", "--force", "-o", "gguf=f32", folder, f32], check=True)
            _child(py, args, "quantize", f32, ref, os.cpu_count() or 1)
            if "q4-read" in parts:
                res["q4_read"] = part_q4_read(args, folder, mnt, qruns, py, f32, ref)
            if "q4-llama" in parts:
                res["q4_llama"] = part_q4_llama(args, folder, mnt, qruns, py, ref)
    finally:
        for p in made:
            if os.path.exists(p):
                os.unlink(p)
    return res


def report(res):
    out = []
    if "hf_read" in res:
        out.append("(21) GGUF mount: hf/model.safetensors end to end vs its tensor files in turn, first reads (goal >= 0.95x)")
        for label, r in res["hf_read"].items():
            m = r["median"]
            out.append("  %-5s hf %.0f MB %5.2f GB/s  tensors (%d files) %.0f MB %5.2f GB/s  %.2fx" % (
                label, r["bytes"]["hf"] / 1e6, m["hf"], r["files"], r["bytes"]["tensors"] / 1e6, m["tensors"],
                m["x_tensors"]))
    if "hf_module" in res:
        out.append("(22) safe_open(names=\"hf\") vs names=\"model\", get_tensor of every tensor, in pairs "
                   "(goal: same rate); open apart; whole passes in turn")
        for label, r in res["hf_module"].items():
            m = r["median"]
            out.append("  %-5s hf %5.2f GB/s  model %5.2f GB/s (sums of per-tensor medians)  %.2fx; per-run pairs %.2fx "
                       "(%.2f-%.2f, %d runs, load %.1f-%.1f); open %.3f / %.3f s, with it %.2fx; whole passes %.2fx "
                       "(%.2f-%.2f)" % (
                           label, m["hf"], m["model"], m["x_model_sum"], m["x_model"], min(r["x_model"]), max(r["x_model"]),
                           len(r["x_model"]), r["loadavg_start"][0], r["loadavg_end"][0], m["open_hf"],
                           m["open_model"], m["x_model_open"], m["pass_x_model"], min(r["pass"]["x_model"]),
                           max(r["pass"]["x_model"])))
    if "q4_read" in res:
        r = res["q4_read"]
        m = r["median"]
        out += ["(23) model.gguf -o gguf=q4_k_m (%.0f MB, same bytes: %s) read end to end vs llama_model_quantize, "
                "%d cores (goal >= 1x)" % (r["bytes"] / 1e6, r["same_bytes"], r["cores"]),
                "  llama_model_quantize F32 -> Q4_K_M, nthread %d   %5.3f GB/s out" % (r["cores"], m["quantize"]),
                "  mount, one reader                       %5.3f GB/s  %.2fx" % (m["read1"], m["x1"]),
                "  mount, %d readers                        %5.3f GB/s  %.2fx" % (r["cores"], m["readN"], m["xN"])]
    if "q4_llama" in res:
        l = res["q4_llama"]
        r, ld = l["median"], l["median_load"]
        out += ["(24) llama.cpp load + first token, q4_k_m: mount vs llama_model_quantize's file on /dev/shm",
                "  /dev/shm   %.3f s (load %.3f)" % (r["tmpfs"], ld["tmpfs"]),
                "  mount cold %.3f s (load %.3f)  %.2fx" % (r["cold"], ld["cold"], r["x_cold"]),
                "  mount warm %.3f s (load %.3f)  %.2fx" % (r["warm"], ld["warm"], r["x_warm"]),
                "  first tokens seen: %s" % l["tokens"]]
    return out


if __name__ == "__main__":
    if len(sys.argv) == 5 and sys.argv[1] == "module":
        _module_child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]))
        sys.exit(0)
    if len(sys.argv) == 5 and sys.argv[1] == "quantize":
        _quantize_child(sys.argv[2], sys.argv[3], int(sys.argv[4]))
        sys.exit(0)
    sys.exit(2)
