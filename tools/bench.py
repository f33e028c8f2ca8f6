#!/usr/bin/env python3
"""bench.py - the driver behind `make bench` (see docs/performance.md).

Generates its own models (tools/gen_model.c) in a tmpfs directory, then
measures, side by side in one run:
  1. in-process decode throughput vs memcpy (tools/bench.c);
  2. first sequential read through a mount (1 MiB reads, page cache of the
     mount's file dropped before each read) vs an F32 tensor of the same
     output size through the same mount;
  3. re-read (page-cache hit) vs reading the same number of bytes from a
     tmpfs file;
  4. random 4 KiB reads (cold and cached), median and p99 latency, vs the
     same reads from the tmpfs file;
  5. mount time and daemon memory for a 100,000-tensor / 150,000-token
     model, a 64 GiB sparse model, and the benchmark model, plus the
     daemon's memory after the whole benchmark model was read;
  6. when rclone is installed: the benchmark model served with `rclone
     serve http` on 127.0.0.1 and mounted with `rclone mount`; the first
     read of a tensor through weightfs mounted on that vs reading the same
     source bytes straight through the rclone mount.
  7. a first read of a whole tensor into one buffer the way np.fromfile
     does it (one read() of the whole file) vs the same buffer filled by
     1 MiB read()s, through the mount and from a file on a disk
     filesystem (--disk-dir), with numpy itself when it can be imported;
  8. the Python module (python/weightfs, run by tools/bench_module.py under
     a Python with numpy): every tensor of the benchmark model loaded into
     numpy with weightfs.open(MODEL)[name] vs np.fromfile of its file through
     a fresh mount, next to the in-process decode (1 MiB pieces into one
     buffer), the same decode of the whole tensor into fresh memory on one
     thread (malloc + decode, as np.empty + decode), and memcpy;
  9. `weightfs convert` of the benchmark model vs `cp` of the mount's
     model.safetensors (page cache of the mount's file dropped first), both
     writing to the scratch directory; next to them the write floor: the
     same number of bytes written to the same directory by one thread's
     1 MiB pwrite loop from one buffer, nothing read or decoded (writes to
     one file take its inode lock, so no writer of that file is faster);
     floor / cp is the most any converter could reach against cp;
  10. first reads of the f16 and bf16 views (-o dtype=f16 / bf16 mounts)
     against the f32 view of the same tensor (a default mount of the same
     model, all three mounted at once), in elements per second; and
     model.safetensors read whole with 1 MiB reads against reading each
     tensor file of the same mount in turn.
  11. with --prev-weightfs BIN (an older build): F32, F16 and Q4_K first reads, and cold mmap touches of random Q4_K pages
     through a mount by that binary against this one, side by side.
  12. every ggml type with a decoder, in a model of its own (--load-mib MiB
     of float32 per tensor): the in-process decode (1 MiB pieces, scalar
     and SIMD), the Python module's load (weightfs.open(MODEL)[name], all
     cores and one thread) as a ratio to the same load of the F16 tensor
     of the same element count, and the first read through a mount as a
     ratio to the F32 tensor's; ratios are medians of side-by-side pairs.
  13. quantized safetensors checkpoints (tools/bench_hfq.py: FP8, GPTQ,
     AWQ, MLX, bitsandbytes NF4 and 8-bit), each scheme's in-process load through the
     Python module as a ratio to the Q4_K tensor's load in the same run.
  14. with --ggml-src DIR (a ggml or llama.cpp tree; tools/bench_ggml.py):
     every type's single-thread decode against ggml's own to_float, built
     from that tree in the scratch directory, outputs compared bit for bit.
  15-17. model.gguf of a BF16 llama folder (tools/bench_gguf.py; --parts
     gguf, or gguf-read / gguf-llama / gguf-convert): 15 its first read end
     to end vs model.safetensors'; 16 llama.cpp load + first token from the
     mount, cold and warm, vs the same bytes on /dev/shm; 17 `weightfs
     convert FOLDER OUT.gguf` vs part 9's write floor.
  18. N processes (--share-n, default 4) np.memmap()ing the same tensor file
     of one mount and touching all of it: the sum of their Pss against one
     copy of the file, and N np.fromfile() readers as the contrast
     (tools/bench_share.py; --parts share).
  19. `weightfs verify` of a hub cache against `sha256sum` of its blobs, one
     core and all cores, and verify --write (tools/bench_verify.py; --parts
     verify).
  20. each encoder (weightfs_quantize: Q8_0, Q4_K, ...) against ggml's own
     quantizer (ggml_quantize_chunk of the npm libggml-base.so), one thread,
     the same input, the bytes compared too (tools/bench_quant.py; --parts
     quant).
  21-24. on part 15's llama folder (tools/bench_hf.py): 21 a GGUF mount's
     hf/model.safetensors read end to end vs its tensor files; 22
     weightfs.safe_open(names="hf") vs names="model"; 23 model.gguf under -o
     gguf=q4_k_m read end to end vs llama_model_quantize on all cores; 24
     llama.cpp first token from that model.gguf, cold and warm, vs the
     llama-quantize file on /dev/shm (--parts hf, q4, or hf-read, hf-module,
     q4-read, q4-llama).
  25. model.gguf of a BF16 Qwen3-MoE folder, its experts stacked on read:
     part 15's reads, and the daemon's peak memory (tools/bench_gguf.py;
     --parts gguf-moe).
  27. remote sources over a round-trip time (tools/bench_net.py; --parts
     net): a 100-shard hf:// folder's mount, a big tensor's first read vs
     single-stream curl and aria2c -x 8, a cached re-read vs a local mount.
  26. random 4 KiB and 128 KiB reads of a BF16 gpt-oss model.gguf's
     experts (transposed and split on read; gpt-oss-20b's widths), side by
     side with --prev-weightfs when given (tools/bench_gguf.py; --parts
     gguf-oss).
Prints medians of several runs as tables with ratios and writes the same to
--out as JSON.  Needs root only for --drop-caches / --read-ahead-kb; uses no
third-party modules.
"""
import argparse
import json
import os
import platform
import random
import shutil
import statistics
import subprocess
import sys
import time

import bench_ggml
import bench_gguf
import bench_quant
import bench_share
import bench_verify
import bench_net

TYPES = ["F32", "F16", "BF16", "Q4_0", "Q8_0", "Q4_K", "Q6_K", "IQ4_XS", "IQ2_XXS"]
# Part 12: every ggml type with a decoder (F16 is the in-process reference,
# F32 the mount's; Q8_K is ggml's activation type, not a model type).
LOAD_TYPES = ["F16", "BF16", "Q4_0", "Q4_1", "Q5_0", "Q5_1", "Q8_0", "Q2_K", "Q3_K", "Q4_K", "Q5_K",
              "Q6_K", "IQ2_XXS", "IQ2_XS", "IQ2_S", "IQ3_XXS", "IQ3_S", "IQ1_S", "IQ1_M", "IQ4_NL",
              "IQ4_XS", "TQ1_0", "TQ2_0", "MXFP4", "NVFP4", "Q1_0", "Q2_0"]
MiB = 1 << 20


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(v):
    return statistics.median(v) if v else float("nan")


def pct(v, p):
    if not v:
        return float("nan")
    s = sorted(v)
    return s[min(len(s) - 1, int(round(p / 100.0 * (len(s) - 1))))]


# --- mounting ---------------------------------------------------------------

class Mount:
    def __init__(self, args, model, mnt, extra=(), env=None, binary=None):
        self.mnt = mnt
        os.makedirs(mnt, exist_ok=True)
        cmd = [binary or args.weightfs, "-f"] + list(extra) + list(args.mount_opt) + [model, mnt]
        dev0 = os.stat(mnt).st_dev
        t0 = time.perf_counter()
        self.proc = subprocess.Popen(cmd, env=dict(os.environ, **env) if env else None)
        while os.stat(mnt).st_dev == dev0:
            if self.proc.poll() is not None:
                raise SystemExit("bench: %s exited with %d" % (" ".join(cmd), self.proc.returncode))
            time.sleep(0.0002)
        self.mount_s = time.perf_counter() - t0
        self.pid = self.proc.pid
        if args.read_ahead_kb:
            with open(self.bdi("read_ahead_kb"), "w") as f:
                f.write(str(args.read_ahead_kb))

    def bdi(self, name):
        st = os.stat(self.mnt)
        return "/sys/class/bdi/%d:%d/%s" % (os.major(st.st_dev), os.minor(st.st_dev), name)

    def read_ahead_kb(self):
        try:
            with open(self.bdi("read_ahead_kb")) as f:
                return int(f.read())
        except OSError:
            return None

    def memory(self):
        """Daemon memory in KiB: VmRSS, RssAnon, RssFile, RssShmem, VmHWM, smaps Anonymous."""
        out = {}
        with open("/proc/%d/status" % self.pid) as f:
            for line in f:
                k, _, v = line.partition(":")
                if k in ("VmRSS", "RssAnon", "RssFile", "RssShmem", "VmHWM", "VmSize", "Threads"):
                    out[k] = int(v.split()[0])
        try:
            with open("/proc/%d/smaps_rollup" % self.pid) as f:
                for line in f:
                    k, _, v = line.partition(":")
                    if k == "Anonymous":
                        out["Anonymous"] = int(v.split()[0])
        except OSError:
            pass
        return out

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# --- I/O primitives ----------------------------------------------------------

def evict(path, drop_caches):
    if drop_caches:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("1")
        return
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


def seq_read(path, bs=MiB):
    """Reads path start to end in bs pieces.  Returns (GB/s of wall-clock
    time, GB/s of this process's CPU time); the second ignores time the
    reader spent preempted by other load, which on a page-cache hit is all
    it could lose."""
    buf = bytearray(bs)
    mv = memoryview(buf)
    n = 0
    with open(path, "rb", buffering=0) as f:
        c0 = time.process_time()
        t0 = time.perf_counter()
        while True:
            k = f.readinto(mv)
            if not k:
                break
            n += k
        dt = time.perf_counter() - t0
        cpu = time.process_time() - c0
    return n / dt / 1e9, (n / cpu / 1e9 if cpu > 0 else float("nan"))


def daemon_cpu(pid):
    """CPU seconds used so far by all threads of pid (schedstat, ns)."""
    tot = 0
    try:
        for tid in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/schedstat" % (pid, tid)) as f:
                    tot += int(f.read().split()[0])
            except OSError:
                pass
    except OSError:
        pass
    return tot / 1e9


def rand_read(path, offsets, bs=4096):
    """pread of bs bytes at each offset; returns latencies in microseconds."""
    fd = os.open(path, os.O_RDONLY)
    lat = []
    try:
        for off in offsets:
            t0 = time.perf_counter_ns()
            os.pread(fd, bs, off)
            lat.append((time.perf_counter_ns() - t0) / 1000.0)
    finally:
        os.close(fd)
    return lat


def fill_whole(path, piece):
    """Reads path into one buffer of its size: piece=None is a single read()
    of the whole file, as np.fromfile (fread) issues it; otherwise read()s
    of piece bytes.  Returns GB/s."""
    size = os.path.getsize(path)
    buf = bytearray(size)
    mv = memoryview(buf)
    with open(path, "rb", buffering=0) as f:
        t0 = time.perf_counter()
        off = 0
        while off < size:
            k = f.readinto(mv[off:] if piece is None else mv[off:off + piece])
            if not k:
                break
            off += k
        dt = time.perf_counter() - t0
    return size / dt / 1e9


def numpy_whole(np, path, piece):
    """np.fromfile (piece=None), or np.empty filled by piece-sized reads:
    the recipe docs/performance.md gives numpy users.  Returns GB/s."""
    t0 = time.perf_counter()
    if piece is None:
        a = np.fromfile(path, dtype=np.float32)
    else:
        a = np.empty(os.path.getsize(path) // 4, dtype=np.float32)
        mv = memoryview(a).cast("B")
        with open(path, "rb", buffering=0) as f:
            off = 0
            while off < len(mv):
                k = f.readinto(mv[off:off + piece])
                if not k:
                    break
                off += k
    dt = time.perf_counter() - t0
    return a.nbytes / dt / 1e9


# --- the parts -----------------------------------------------------------------

def part_decode(args, model):
    log("bench: in-process decode (%d runs)" % args.runs)
    out = subprocess.run([os.path.join(args.tools, "bench"), model, str(args.runs)],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    rows = [json.loads(line) for line in out.splitlines() if line.strip()]
    res = {}
    for r in rows:
        e = {"out_bytes": r["out_bytes"], "scalar_gbps": r["scalar_gbps"],
             "scalar_median": median(r["scalar_gbps"])}
        if "simd_gbps" in r:
            e["simd_gbps"] = r["simd_gbps"]
            e["simd_median"] = median(r["simd_gbps"])
        res[r["type"]] = e
    return res


def part_mount_io(args, model, ref):
    """Parts 2-4, one mount, and the daemon memory after it read everything."""
    mnt = os.path.join(args.dir, "mnt")
    m = Mount(args, model, mnt)
    res = {"read_ahead_kb": m.read_ahead_kb(), "mem_after_mount_kib": m.memory()}
    paths = {t: os.path.join(mnt, "t", t) for t in TYPES}
    size = os.path.getsize(paths["F32"])
    seq = {t: {"first": [], "first_ratio": [], "first_cpu": [], "reread": [], "reread_ratio": [],
               "reread_cpu_ratio": []} for t in TYPES}
    seq_ref = []
    rnd = {t: {"cold": [], "cached": []} for t in TYPES}
    rnd_ref = []
    rng = random.Random(1)

    def first(t):
        evict(paths[t], args.drop_caches)
        c0 = daemon_cpu(m.pid)
        gbps = seq_read(paths[t])[0]
        seq[t]["first_cpu"].append((daemon_cpu(m.pid) - c0) / size * 1e9)
        return gbps

    log("bench: sequential and random reads through the mount (%d runs)" % args.runs)
    for run in range(args.runs):
        offs = [rng.randrange(size // 4096) * 4096 for _ in range(args.rand_n)]
        for t in TYPES:
            # first reads: each type right next to an F32 first read, in
            # alternating order; the ratio is taken per pair
            if t == "F32":
                g = first(t)
                seq[t]["first"].append(g)
                seq[t]["first_ratio"].append(1.0)
            else:
                if run % 2:
                    g, gf = first(t), first("F32")
                else:
                    gf, g = first("F32"), first(t)
                seq[t]["first"].append(g)
                seq[t]["first_ratio"].append(g / gf)
            # re-read (page-cache hit) next to a read of the tmpfs file
            rw, rc = seq_read(paths[t])
            tw, tc = seq_read(ref)
            seq_ref.append(tw)
            seq[t]["reread"].append(rw)
            seq[t]["reread_ratio"].append(rw / tw)
            seq[t]["reread_cpu_ratio"].append(rc / tc)
        for t in TYPES:
            evict(paths[t], args.drop_caches)
            rnd[t]["cold"] += rand_read(paths[t], offs)
            seq_read(paths[t])
            rnd[t]["cached"] += rand_read(paths[t], offs)
            rnd_ref += rand_read(ref, offs)
        log("bench:   run %d/%d done" % (run + 1, args.runs))
    res["mem_after_reading_all_kib"] = m.memory()
    m.close()
    res["seq"] = {t: {"first_gbps": v["first"], "first_median": median(v["first"]),
                      "first_ratio": v["first_ratio"], "first_ratio_median": median(v["first_ratio"]),
                      "first_daemon_cpu_s_per_gb": v["first_cpu"],
                      "first_daemon_cpu_median": median(v["first_cpu"]),
                      "reread_gbps": v["reread"], "reread_median": median(v["reread"]),
                      "reread_ratio": v["reread_ratio"], "reread_ratio_median": median(v["reread_ratio"]),
                      "reread_cpu_ratio": v["reread_cpu_ratio"],
                      "reread_cpu_ratio_median": median(v["reread_cpu_ratio"])}
                  for t, v in seq.items()}
    res["seq_tmpfs_gbps"] = seq_ref
    res["seq_tmpfs_median"] = median(seq_ref)
    res["rand"] = {t: {k: {"median_us": median(v[k]), "p99_us": pct(v[k], 99), "n": len(v[k])}
                       for k in ("cold", "cached")} for t, v in rnd.items()}
    res["rand_tmpfs"] = {"median_us": median(rnd_ref), "p99_us": pct(rnd_ref, 99), "n": len(rnd_ref)}
    return res


def part_whole(args, model, disk_file):
    """Part 6: whole-tensor first reads, one read() vs 1 MiB read()s."""
    try:
        import numpy as np  # optional: the pure-Python reads issue the same syscalls
    except ImportError:
        np = None
    mnt = os.path.join(args.dir, "mnt")
    m = Mount(args, model, mnt)
    files = [("mount " + t, os.path.join(mnt, "t", t)) for t in ("F32", "Q4_K") if t in TYPES]
    files.append(("disk file (%s)" % fs_type(disk_file), disk_file))
    ways = [("one read()", lambda p: fill_whole(p, None)), ("1 MiB read()s", lambda p: fill_whole(p, MiB))]
    if np is not None:
        ways += [("np.fromfile", lambda p: numpy_whole(np, p, None)),
                 ("np.empty + 1 MiB readinto", lambda p: numpy_whole(np, p, MiB))]
    log("bench: whole-tensor first reads, one read() vs 1 MiB pieces (%d runs)" % args.runs)
    res = {name: {w: [] for w, _ in ways} for name, _ in files}
    try:
        for run in range(args.runs):
            for name, path in files:
                order = ways if run % 2 == 0 else list(reversed(ways))
                for w, fn in order:
                    evict(path, args.drop_caches)
                    res[name][w].append(fn(path))
    finally:
        m.close()
    return {"numpy": np is not None and np.__version__,
            "files": {name: {w: {"gbps": v, "median": median(v)} for w, v in ws.items()}
                      for name, ws in res.items()}}


def numpy_python():
    for cand in ("/usr/bin/python3", "python3", sys.executable):
        try:
            if subprocess.run([cand, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL).returncode == 0:
                return cand
        except OSError:
            pass
    return None


def part_module(args, model):
    """Part 8: the Python module against np.fromfile through a fresh mount."""
    py = numpy_python()
    if not py:
        return {"note": "skipped: no Python 3 with numpy (apt-get install python3-numpy)"}
    lib = os.path.join(os.path.dirname(os.path.abspath(args.weightfs)), "libweightfs.so.0")
    log("bench: Python module vs np.fromfile through a fresh mount (%d runs)" % args.runs)
    out = subprocess.run([os.path.join(args.tools, "bench"), model, str(args.runs), "fresh"],
                         check=True, stdout=subprocess.PIPE, text=True).stdout
    fresh = {}
    for line in out.splitlines():
        if line.strip():
            r = json.loads(line)
            fresh[r["type"]] = r["fresh_gbps"]
    runs = {t: {"fromfile": [], "module": [], "module_1thread": [], "ratio": []} for t in TYPES}
    env = dict(os.environ, WEIGHTFS_LIB=lib)
    mnt = os.path.join(args.dir, "mnt-module")
    for r in range(args.runs):
        m = Mount(args, model, mnt)
        try:
            order = TYPES if r % 2 == 0 else list(reversed(TYPES))
            txt = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_module.py"),
                                  model, mnt] + order, check=True, stdout=subprocess.PIPE, text=True,
                                 env=env).stdout
        finally:
            m.close()
        one = json.loads(txt)
        for t in TYPES:
            for k in ("fromfile", "module", "module_1thread"):
                runs[t][k].append(one[t][k])
            runs[t]["ratio"].append(one[t]["module"] / one[t]["fromfile"])
    res = {"python": py, "threads": os.cpu_count(), "types": {}}
    for t in TYPES:
        e = runs[t]
        e.update({k + "_median": median(e[k]) for k in ("fromfile", "module", "module_1thread", "ratio")})
        e["fresh_gbps"] = fresh.get(t, [])
        e["fresh_median"] = median(e["fresh_gbps"])
        e["vs_fresh"] = e["module_median"] / e["fresh_median"] if e["fresh_gbps"] else float("nan")
        res["types"][t] = e
    return res
def part_hfq(args, model):
    """Part 13: quantized safetensors layers loaded in-process, against Q4_K."""
    py = numpy_python()
    if not py or "Q4_K" not in TYPES:
        return {"note": "skipped: no Python 3 with numpy"}
    lib = os.path.join(os.path.dirname(os.path.abspath(args.weightfs)), "libweightfs.so.0")
    log("bench: quantized safetensors schemes vs Q4_K, in-process (%d runs)" % args.runs)
    d = os.path.join(args.dir, "hfq")
    try:
        txt = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_hfq.py"),
                              model, d, str(args.mib), str(args.runs)], check=True, stdout=subprocess.PIPE,
                             text=True, env=dict(os.environ, WEIGHTFS_LIB=lib)).stdout
    finally:
        shutil.rmtree(d, ignore_errors=True)
    return json.loads(txt)


def report_hfq(r):
    if "schemes" not in r:
        return "\n(13) quantized safetensors: " + r.get("note", "")
    rows = [[k, f2(v["module_median"]), f2(v["ratio_median"]), f2(v["module_1thread_median"]),
             f2(v["ratio_1thread_median"])] for k, v in r["schemes"].items()]
    return table("(13) quantized safetensors layers [%d, %d], loaded in-process (weightfs.open(MODEL)[name]) "
                 "as GB/s of float32, and as a ratio to the Q4_K tensor's load in the same run (goal >= 0.5)"
                 % tuple(r["shape"]),
                 ["scheme", "GB/s", "x Q4_K", "1 thread GB/s", "x Q4_K 1 thread"], rows)


def part_convert(args, model):
    """Part 9: `weightfs convert` (a decoding thread per core) vs `cp` of
    the same bytes from a mount's model.safetensors, and the write floor,
    for the benchmark model and for one of its quantized types only (no
    F32/F16/BF16 tensor: what "a quantized model" means in issue 21)."""
    quant = [t for t in TYPES if t not in ("F32", "F16", "BF16")]
    models = [("benchmark model (%s)" % ", ".join(TYPES), model)]
    if quant:
        qmodel = os.path.join(args.dir, "quant.gguf")
        subprocess.run([os.path.join(args.tools, "gen_model"), "types", qmodel, str(args.mib)] + quant, check=True)
        models.append(("quantized types only (%s)" % ", ".join(quant), qmodel))
    try:
        return {"models": [dict(convert_one(args, path), name=name) for name, path in models]}
    finally:
        if quant:
            os.unlink(qmodel)


def convert_one(args, model):
    """One model of part 9; both sides write a file in the scratch
    directory, which is removed before the next run."""
    mnt = os.path.join(args.dir, "mnt")
    out = os.path.join(args.dir, "convert-out.safetensors")
    m = Mount(args, model, mnt)
    src = os.path.join(mnt, "model.safetensors")
    size = os.stat(src).st_size
    extra = list(args.mount_opt)  # -o dtype=... means the same to both
    log("bench: weightfs convert vs cp of the mount's model.safetensors, %.0f MiB (%d runs)"
        % (size / MiB, args.runs))

    def run_convert():
        t0 = time.perf_counter()
        subprocess.run([args.weightfs, "convert"] + extra + [model, out], check=True)
        return time.perf_counter() - t0

    def run_cp():
        evict(src, args.drop_caches)
        t0 = time.perf_counter()
        subprocess.run(["cp", src, out], check=True)
        with open(out, "rb+") as f:
            os.fsync(f.fileno())  # convert syncs its output: so does this side
        return time.perf_counter() - t0

    step = bytes(range(256)) * 4096  # 1 MiB, as convert's and cp's writes

    def run_floor():
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

    ways = [("convert", run_convert), ("cp", run_cp), ("floor", run_floor)]
    res = {"convert": [], "cp": [], "floor": [], "ratio": [], "of_floor": [], "floor_x_cp": []}
    try:
        for run in range(args.runs):
            pair = {}
            for name, fn in ways[run % 3:] + ways[:run % 3]:  # each way first in turn
                if os.path.exists(out):
                    os.unlink(out)
                pair[name] = size / fn() / 1e9
                res[name].append(pair[name])
            res["ratio"].append(pair["convert"] / pair["cp"])
            res["of_floor"].append(pair["convert"] / pair["floor"])
            res["floor_x_cp"].append(pair["floor"] / pair["cp"])
    finally:
        if os.path.exists(out):
            os.unlink(out)
        m.close()
    return {"bytes": size, "threads": os.cpu_count(),
            "convert_gbps": res["convert"], "cp_gbps": res["cp"], "ratio": res["ratio"],
            "floor_gbps": res["floor"], "of_floor": res["of_floor"], "floor_x_cp": res["floor_x_cp"],
            "convert_median": median(res["convert"]), "cp_median": median(res["cp"]),
            "floor_median": median(res["floor"]), "ratio_median": median(res["ratio"]),
            "of_floor_median": median(res["of_floor"]), "floor_x_cp_median": median(res["floor_x_cp"])}
def part_views(args, model):
    """Part 8: f16/bf16 views vs the f32 view; model.safetensors vs the tensor files."""
    base = os.path.join(args.dir, "mnt-view-")
    mounts = {v: Mount(args, model, base + v, () if v == "f32" else ("-o", "dtype=" + v))
              for v in ("f32", "f16", "bf16")}
    types = [t for t in ("F32", "F16", "BF16", "Q8_0", "Q4_K") if t in TYPES]
    res = {"views": {t: {v: {"eps": [], "ratio": []} for v in ("f16", "bf16")} for t in types}}
    whole, files, ratio = [], [], []
    try:
        def first(v, t):
            p = os.path.join(base + v, "t", t)
            evict(p, args.drop_caches)
            g = seq_read(p)[0]
            return g * 1e9 / (2 if v != "f32" else 4)  # elements per second
        log("bench: f16/bf16 views vs f32, model.safetensors vs tensor files (%d runs)" % args.runs)
        for run in range(args.runs):
            for t in types:
                for v in ("f16", "bf16"):
                    if run % 2:
                        e, ef = first(v, t), first("f32", t)
                    else:
                        ef, e = first("f32", t), first(v, t)
                    res["views"][t][v]["eps"].append(e)
                    res["views"][t][v]["ratio"].append(e / ef)
            mnt = base + "f32"
            st = os.path.join(mnt, "model.safetensors")
            tensors = [os.path.join(mnt, "t", t) for t in TYPES]

            def read_whole():
                evict(st, args.drop_caches)
                t0 = time.perf_counter()
                n = seq_read_bytes(st)
                return n / (time.perf_counter() - t0) / 1e9

            def read_files():
                for p in tensors:
                    evict(p, args.drop_caches)
                t0 = time.perf_counter()
                n = sum(seq_read_bytes(p) for p in tensors)
                return n / (time.perf_counter() - t0) / 1e9
            if run % 2:
                w, f = read_whole(), read_files()
            else:
                f, w = read_files(), read_whole()
            whole.append(w)
            files.append(f)
            ratio.append(w / f)
    finally:
        for m in mounts.values():
            m.close()
    for t in types:
        for v in ("f16", "bf16"):
            e = res["views"][t][v]
            e["eps_median"] = median(e["eps"])
            e["ratio_median"] = median(e["ratio"])
    res["model_st"] = {"whole_gbps": whole, "files_gbps": files, "ratio": ratio,
                       "whole_median": median(whole), "files_median": median(files),
                       "ratio_median": median(ratio)}
    return res


def seq_read_bytes(path, bs=MiB):
    buf = bytearray(bs)
    n = 0
    with open(path, "rb", buffering=0) as f:
        while True:
            k = f.readinto(buf)
            if not k:
                return n
            n += k


def part_prev(args, model):
    """Part 11: first reads and cold mmap touches through a mount by an older
    binary vs this one."""
    base = os.path.join(args.dir, "mnt-bin-")
    res = {}
    prev_args = argparse.Namespace(**vars(args))
    prev_args.weightfs = args.prev_weightfs
    prev_args.mount_opt = []
    mounts = {"this": Mount(args, model, base + "this"), "prev": Mount(prev_args, model, base + "prev")}
    try:
        log("bench: this binary vs %s (%d runs)" % (args.prev_weightfs, args.runs))
        def side_by_side(measure):
            """measure(mount name, run) for both binaries, alternating
            which goes first; the medians and the per-run ratios."""
            r = {"this": [], "prev": [], "ratio": []}
            for run in range(args.runs):
                if run % 2:
                    a, b = measure("this", run), measure("prev", run)
                else:
                    b, a = measure("prev", run), measure("this", run)
                r["this"].append(a)
                r["prev"].append(b)
                r["ratio"].append(a / b)
            out = {k + "_median": median(v) for k, v in r.items()}
            out.update(r)
            return out

        def cold(w, t):
            p = os.path.join(base + w, "t", t)
            evict(p, args.drop_caches)
            return p
        for t in [t for t in ("F32", "F16", "Q4_K") if t in TYPES]:
            res[t] = side_by_side(lambda w, run, t=t: seq_read(cold(w, t))[0])
        # scattered page faults through mmap pay for a larger read-ahead
        # window (the kernel reads the window around each fault)
        if "Q4_K" in TYPES:
            res["Q4_K mmap"] = side_by_side(lambda w, run: mmap_touches(cold(w, "Q4_K"), run))
    finally:
        for m in mounts.values():
            m.close()
    return {"prev": args.prev_weightfs, "types": res}


def mmap_touches(path, seed, n=300):
    """Touches one byte of n random pages of path through mmap, cold.
    Returns thousands of touches per second."""
    import mmap
    with open(path, "rb") as f:
        size = os.fstat(f.fileno()).st_size
        rnd = random.Random(seed)
        offs = [rnd.randrange(0, size // 4096) * 4096 + 100 for _ in range(n)]
        mm = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
        try:
            t0 = time.perf_counter()
            s = 0
            for o in offs:
                s += mm[o]
            dt = time.perf_counter() - t0
        finally:
            mm.close()
    return n / dt / 1e3


def fs_type(path):
    """The filesystem type holding path, from /proc/self/mounts."""
    best, typ = "", "?"
    real = os.path.realpath(path)
    with open("/proc/self/mounts") as f:
        for line in f:
            mp, t = line.split()[1], line.split()[2]
            if (real == mp or real.startswith(mp.rstrip("/") + "/")) and len(mp) >= len(best):
                best, typ = mp, t
    return typ


def part_mount_cost(args, models):
    """Mount time and daemon memory per model; for the many-tensor model
    also after stat-ing every file (a `find -ls` of the mount)."""
    log("bench: mount time and daemon memory (%d runs)" % args.runs)
    mnt = os.path.join(args.dir, "mnt")
    res = {}
    for name, path in models:
        times, mem, mem_walk = [], [], []
        for _ in range(args.runs):
            m = Mount(args, path, mnt)
            times.append(m.mount_s)
            mem.append(m.memory())
            n = 0
            for root, dirs, files in os.walk(mnt):
                for fn in files:
                    os.stat(os.path.join(root, fn))
                    n += 1
            mem_walk.append(m.memory())
            m.close()
        res[name] = {
            "model_bytes": os.path.getsize(path),
            "files": n,
            "mount_s": times, "mount_median_s": median(times),
            "mem_kib": mem, "mem_walk_kib": mem_walk,
            "rss_median_kib": median([x["VmRSS"] for x in mem]),
            "anon_median_kib": median([x.get("Anonymous", x["RssAnon"]) for x in mem]),
            "anon_walk_median_kib": median([x.get("Anonymous", x["RssAnon"]) for x in mem_walk]),
        }
    return res


# --- network storage: weightfs on an rclone mount (docs/performance.md) -------

REMOTE_TYPES = ["F32", "F16", "Q8_0", "Q4_K"]
# rclone mount options of the measured lower mount; --rclone-opt adds more
RCLONE_BASE = ["--read-only", "--vfs-cache-mode", "off"]


def free_port():
    import socket
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(pred, secs, what):
    t0 = time.monotonic()
    while not pred():
        if time.monotonic() - t0 > secs:
            raise SystemExit("bench: %s not ready after %.0f s" % (what, secs))
        time.sleep(0.02)


class Rclone:
    """rclone serve http FOLDER on 127.0.0.1 and rclone mount of it; the
    mount can be remounted (to drop rclone's buffers and the mount's page
    cache) while the server keeps running."""

    def __init__(self, args, folder, probe):
        import socket
        self.args, self.probe = args, probe
        self.mnt = os.path.join(args.dir, "rmnt")
        os.makedirs(self.mnt, exist_ok=True)
        self.log = open(os.path.join(args.dir, "rclone.log"), "ab")
        self.port = free_port()
        self.serve = subprocess.Popen(["rclone", "--config", "/dev/null", "serve", "http", folder,
                                       "--addr", "127.0.0.1:%d" % self.port],
                                      stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)

        def listening():
            if self.serve.poll() is not None:
                raise SystemExit("bench: rclone serve http exited with %d" % self.serve.returncode)
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=1).close()
                return True
            except OSError:
                return False
        wait_for(listening, 20, "rclone serve http")
        self.proc = None

    def mount(self, opts):
        self.opts = RCLONE_BASE + list(opts)
        self.proc = subprocess.Popen(["rclone", "--config", "/dev/null", "mount", ":http:", self.mnt,
                                      "--http-url", "http://127.0.0.1:%d" % self.port] + self.opts,
                                     stdin=subprocess.DEVNULL, stdout=self.log, stderr=self.log)

        def ready():
            if self.proc.poll() is not None:
                raise SystemExit("bench: rclone mount exited with %d" % self.proc.returncode)
            return os.path.ismount(self.mnt) and os.path.exists(os.path.join(self.mnt, self.probe))
        wait_for(ready, 30, "rclone mount")
        if self.args.remote_ra_kb:
            st = os.stat(self.mnt)
            with open("/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(st.st_dev), os.minor(st.st_dev)),
                      "w") as f:
                f.write(str(self.args.remote_ra_kb))

    def read_ahead_kb(self):
        st = os.stat(self.mnt)
        try:
            with open("/sys/class/bdi/%d:%d/read_ahead_kb" % (os.major(st.st_dev), os.minor(st.st_dev))) as f:
                return int(f.read())
        except OSError:
            return None

    def umount(self):
        if self.proc is None:
            return
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            subprocess.run(["fusermount3", "-u", "-z", self.mnt], check=False)
        self.proc = None

    def close(self):
        self.umount()
        if self.serve.poll() is None:
            self.serve.kill()
        self.serve.wait()
        self.log.close()


def cpu_now(pids):
    """(all CPUs' jiffies, idle jiffies, CPU seconds used so far by pids)
    from /proc: the remote part tells a network-bound run from a CPU-bound
    one."""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:9]]
    used = 0
    for pid in pids:
        try:
            with open("/proc/%d/stat" % pid) as f:
                st = f.read().rsplit(")", 1)[1].split()
            used += int(st[11]) + int(st[12])
        except (OSError, IndexError, ValueError):
            pass
    return sum(v), v[3] + v[4], used / os.sysconf("SC_CLK_TCK")


def cpu_since(c0, pids, secs):
    """(share of all CPUs idle, CPUs pids used on average) since c0."""
    c1 = cpu_now(pids)
    idle = (c1[1] - c0[1]) / (c1[0] - c0[0]) if c1[0] > c0[0] else float("nan")
    return idle, (c1[2] - c0[2]) / secs


def drop_all(args):
    """Drops the page cache when root (the rclone mount's pages go with its
    unmount anyway)."""
    if os.geteuid() == 0:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")


def part_remote(args, model):
    """First read of a tensor through weightfs mounted on an rclone mount
    (served over http on 127.0.0.1 from the benchmark folder) vs a
    sequential read of the same source bytes through the same rclone
    mount.  Every measurement on a fresh rclone mount, page cache dropped."""
    srv = os.path.join(args.dir, "remote-srv")
    os.makedirs(srv, exist_ok=True)
    name = os.path.basename(model)
    try:
        os.link(model, os.path.join(srv, name))
    except OSError:
        shutil.copyfile(model, os.path.join(srv, name))
    rc = Rclone(args, srv, name)

    def rpids():
        return [rc.serve.pid] + ([rc.proc.pid] if rc.proc else [])
    wmnt = os.path.join(args.dir, "wmnt")
    res = {"rclone_opts": None, "types": {}}
    try:
        # where each tensor's bytes are in the file: tensors.json
        rc.mount(args.rclone_opt)
        m = Mount(args, os.path.join(rc.mnt, name), wmnt)
        with open(os.path.join(wmnt, "tensors.json")) as f:
            tj = json.load(f)
        m.close()
        rc.umount()
        ents = {e["name"]: e for e in tj["tensors"]}
        types = [t for t in REMOTE_TYPES if "t." + t in ents or t in ents]
        res["rclone_opts"] = " ".join(rc.opts)
        log("bench: weightfs on rclone mount (%s), %d runs" % (res["rclone_opts"], args.runs))
        for t in types:
            e = ents.get("t." + t) or ents[t]
            res["types"][t] = {"src_bytes": e["nbytes"], "out_bytes": e["size"],
                               "wf_s": [], "cat_s": [], "ratio": [], "wf0_s": [], "ratio0": [],
                               "wfp_s": [], "ratiop": [], "cat_idle": [], "cat_rclone_cpus": [],
                               "wf_idle": [], "cat_spare_cpu_s": [], "wf_cpu_s": []}
        for run in range(args.runs):
            for t in types:
                e = ents.get("t." + t) or ents[t]
                v = res["types"][t]
                pair = {}
                # wf0: weightfs with its read-ahead thread off (the A/B)
                # wfp: the --prev-weightfs binary, when given (before/after)
                sides = ("wf", "cat", "wf0") + (("wfp",) if args.prev_weightfs else ())
                sides = sides if run % 2 == 0 else sides[::-1]
                for side in sides:
                    rc.mount(args.rclone_opt)
                    if side in ("wf", "wf0", "wfp"):
                        m = Mount(args, os.path.join(rc.mnt, name), wmnt,
                                  env={"WEIGHTFS_NO_READAHEAD": "1"} if side == "wf0" else None,
                                  binary=args.prev_weightfs if side == "wfp" else None)
                        time.sleep(0.5)
                        drop_all(args)
                        c0, d0, p0 = cpu_now(rpids()), cpu_now([m.pid]), time.process_time()
                        t0 = time.perf_counter()
                        n = 0
                        with open(os.path.join(wmnt, e["path"]), "rb", buffering=0) as f:
                            buf = bytearray(MiB)
                            while True:
                                k = f.readinto(buf)
                                if not k:
                                    break
                                n += k
                        pair[side] = time.perf_counter() - t0
                        if side == "wf":
                            # what weightfs's read costs: its daemon, and
                            # this process's read() copies of the output
                            wf_cpu = cpu_now([m.pid])[2] - d0[2] + time.process_time() - p0
                            v["wf_idle"].append(cpu_since(c0, rpids(), pair[side])[0])
                        assert n == e["size"], (n, e["size"])
                        m.close()
                    else:
                        # as weightfs does: one descriptor, the header read
                        # at open, then the tensor's bytes in order
                        fd = os.open(os.path.join(rc.mnt, name), os.O_RDONLY)
                        try:
                            os.pread(fd, 4096, 0)
                            time.sleep(0.5)
                            drop_all(args)
                            c0, p0 = cpu_now(rpids()), time.process_time()
                            t0 = time.perf_counter()
                            off, end = e["offset"], e["offset"] + e["nbytes"]
                            while off < end:
                                b = os.pread(fd, min(MiB, end - off), off)
                                if not b:
                                    raise SystemExit("bench: short read of the model through rclone")
                                off += len(b)
                            pair[side] = time.perf_counter() - t0
                            cat_cpu = time.process_time() - p0
                            idle, cpus = cpu_since(c0, rpids(), pair[side])
                            v["cat_idle"].append(idle)
                            v["cat_rclone_cpus"].append(cpus)
                            v["cat_spare_cpu_s"].append(idle * os.cpu_count() * pair[side])
                        finally:
                            os.close(fd)
                    rc.umount()
                v["wf_s"].append(pair["wf"])
                v["wf0_s"].append(pair["wf0"])
                v["cat_s"].append(pair["cat"])
                v["ratio"].append(pair["cat"] / pair["wf"])
                v["ratio0"].append(pair["cat"] / pair["wf0"])
                # beyond what the plain read's own reading costs
                v["wf_cpu_s"].append(wf_cpu - cat_cpu)
                if "wfp" in pair:
                    v["wfp_s"].append(pair["wfp"])
                    v["ratiop"].append(pair["cat"] / pair["wfp"])
            log("bench:   run %d/%d done" % (run + 1, args.runs))
        for t, v in res["types"].items():
            v["wf_src_gbps_median"] = v["src_bytes"] / median(v["wf_s"]) / 1e9
            v["wf_out_gbps_median"] = v["out_bytes"] / median(v["wf_s"]) / 1e9
            v["cat_gbps_median"] = v["src_bytes"] / median(v["cat_s"]) / 1e9
            v["ratio_median"] = median(v["ratio"])
            v["ratio0_median"] = median(v["ratio0"])
            v["cat_idle_median"] = median(v["cat_idle"])
            v["cat_rclone_cpus_median"] = median(v["cat_rclone_cpus"])
            v["wf_idle_median"] = median(v["wf_idle"])
            v["cat_spare_cpu_s_median"] = median(v["cat_spare_cpu_s"])
            v["wf_cpu_s_median"] = median(v["wf_cpu_s"])
            if v["ratiop"]:
                v["ratiop_median"] = median(v["ratiop"])
        rc.mount(args.rclone_opt)
        res["read_ahead_kb"] = rc.read_ahead_kb()
        rc.umount()
    finally:
        rc.close()
        if not args.keep:
            os.unlink(os.path.join(args.dir, "rclone.log"))
        os.unlink(os.path.join(srv, name))
        os.rmdir(srv)
        for d in (rc.mnt, wmnt):
            if os.path.isdir(d) and not os.path.ismount(d):
                os.rmdir(d)
    return res


def part_load(args):
    """Part 12: every decoded ggml type against F16 (in process) and F32
    (first read through a mount), in a model of its own."""
    types = ["F16"] + [t for t in LOAD_TYPES if t != "F16" and (not args.load_types or t in args.load_types)]
    model = os.path.join(args.dir, "load.gguf")
    mnt = os.path.join(args.dir, "mnt-load")
    log("bench: load of %d types, %d MiB of float32 each (%d runs)" % (len(types), args.load_mib, args.runs))
    subprocess.run([os.path.join(args.tools, "gen_model"), "types", model, str(args.load_mib), "F32"] + types,
                   check=True)
    res = {"mib": args.load_mib, "types": {t: {} for t in types}}
    try:
        out = subprocess.run([os.path.join(args.tools, "bench"), model, str(args.runs)],
                             check=True, stdout=subprocess.PIPE, text=True).stdout
        for line in out.splitlines():
            r = json.loads(line) if line.strip() else None
            if r and r["type"] in res["types"]:
                e = res["types"][r["type"]]
                e["decode_scalar_median"] = median(r["scalar_gbps"])
                e["decode_simd_median"] = median(r.get("simd_gbps", []))
        py = numpy_python()
        if py:
            lib = os.path.join(os.path.dirname(os.path.abspath(args.weightfs)), "libweightfs.so.0")
            txt = subprocess.run([py, os.path.join(os.path.dirname(os.path.abspath(__file__)), "bench_load.py"),
                                  model, str(args.runs)] + types[1:], check=True, stdout=subprocess.PIPE,
                                 text=True, env=dict(os.environ, WEIGHTFS_LIB=lib)).stdout
            for t, v in json.loads(txt).items():
                res["types"][t]["module"] = v
                res["types"][t].update({k + "_median": median(v[k]) for k in v})
        else:
            res["module_note"] = "skipped: no Python 3 with numpy (apt-get install python3-numpy)"
        m = Mount(args, model, mnt)
        try:
            paths = {t: os.path.join(mnt, "t", t) for t in ["F32"] + types}

            def first(t):
                evict(paths[t], args.drop_caches)
                return seq_read(paths[t])[0]
            for t in types:
                res["types"][t]["first"] = []
                res["types"][t]["first_ratio"] = []
            for run in range(args.runs):
                for k, t in enumerate(types):
                    if (run + k) % 2:
                        g, gf = first(t), first("F32")
                    else:
                        gf, g = first("F32"), first(t)
                    res["types"][t]["first"].append(g)
                    res["types"][t]["first_ratio"].append(g / gf)
                log("bench:   run %d/%d done" % (run + 1, args.runs))
        finally:
            m.close()
        for e in res["types"].values():
            e["first_median"] = median(e["first"])
            e["first_ratio_median"] = median(e["first_ratio"])
    finally:
        if not args.keep and os.path.exists(model):
            os.unlink(model)
        if os.path.isdir(mnt) and not os.path.ismount(mnt):
            os.rmdir(mnt)
    return res


def report_load(r):
    def g(e, k):
        v = e.get(k)
        return "-" if v is None or v != v else f2(v)
    rows = []
    for t, e in r["types"].items():
        ref = t == "F16"
        rows.append([t, g(e, "decode_scalar_median"), g(e, "decode_simd_median"),
                     "-" if ref else g(e, "all_median"), "1.00" if ref else g(e, "all_ratio_median"),
                     "-" if ref else g(e, "one_median"), "1.00" if ref else g(e, "one_ratio_median"),
                     g(e, "first_median"), g(e, "first_ratio_median")])
    note = ("; Python module " + r["module_note"]) if r.get("module_note") else ""
    return table("(12) every decoded ggml type, %d MiB of float32 each, GB/s of float32 output (medians): "
                 "in-process decode (1 MiB pieces), load with the Python module m[name] (all cores, then one "
                 "thread) and its ratio to loading the F16 tensor, first read through a mount and its ratio "
                 "to the F32 tensor's; ratios are medians of side-by-side pairs%s" % (r["mib"], note),
                 ["type", "decode scalar", "decode SIMD", "load", "x F16", "load 1 thr", "x F16",
                  "mount first", "x F32"], rows)


def report_remote(r):
    def share(v, k):
        return "%.0f%%" % (100 * v[k]) if v.get(k) == v.get(k) and k in v else "-"
    rows = [[t, "%.1f" % (v["src_bytes"] / MiB), f2(v["cat_gbps_median"]), f2(v["wf_src_gbps_median"]),
             f2(v["wf_out_gbps_median"]), f2(v["ratio_median"]),
             f2(v["ratio0_median"]) if "ratio0_median" in v else "-",
             f2(v["ratiop_median"]) if "ratiop_median" in v else "-",
             share(v, "cat_idle_median"),
             f2(v["cat_rclone_cpus_median"]) if "cat_rclone_cpus_median" in v else "-",
             share(v, "wf_idle_median"),
             f2(v["cat_spare_cpu_s_median"]) if "cat_spare_cpu_s_median" in v else "-",
             f2(v["wf_cpu_s_median"]) if "wf_cpu_s_median" in v else "-",
             f2(v["cat_spare_cpu_s_median"] / v["wf_cpu_s_median"])
             if v.get("wf_cpu_s_median", 0) > 0 else "-"]
            for t, v in r["types"].items()]
    return table("(6) network storage: first read of a tensor through weightfs on an rclone mount "
                 "(rclone serve http on 127.0.0.1; %s; lower mount read_ahead_kb=%s) vs reading the "
                 "same source bytes through the same rclone mount; fresh rclone mount and dropped "
                 "page cache before each; ratio = median of side-by-side pairs, 1.00 = decode hidden; "
                 "then weightfs with WEIGHTFS_NO_READAHEAD=1, and the --prev-weightfs binary, in the same runs; "
                 "idle = share of all %d CPUs idle during the plain read and during weightfs's read, "
                 "rclone CPUs = what rclone's server and mount used during the plain read; spare CPU-s = "
                 "the idle CPU time of the plain read; weightfs CPU-s = what weightfs's read costs (daemon "
                 "and the reader's copies) beyond the plain read's own; headroom = spare / weightfs CPU-s "
                 "(decoding can only hide in idle CPU: near 1 it has almost none to hide in)"
                 % (r["rclone_opts"], r["read_ahead_kb"], os.cpu_count()),
                 ["type", "source MiB", "rclone read GB/s", "weightfs src GB/s", "weightfs out GB/s",
                  "x rclone read", "no read-ahead", "prev binary", "idle rclone read", "rclone CPUs",
                  "idle weightfs", "spare CPU-s", "weightfs CPU-s", "headroom"], rows)


def touch_memory(gib):
    """Allocates and fills gib GiB, then frees it: the benchmark then runs
    on memory the kernel has already handed out once (page cache and
    allocations are not slowed by first-touch reclaim)."""
    if gib <= 0:
        return
    t0 = time.perf_counter()
    chunk = b"\xa5" * MiB
    b = bytearray(gib << 30)
    for i in range(0, len(b), MiB):
        b[i:i + MiB] = chunk
    del b
    log("bench: touched and freed %d GiB of memory in %.1f s" % (gib, time.perf_counter() - t0))


# --- report --------------------------------------------------------------------

def table(title, head, rows):
    lines = ["", title]
    w = [max(len(str(h)), *(len(str(r[i])) for r in rows)) for i, h in enumerate(head)]
    lines.append("  ".join(str(h).rjust(w[i]) if i else str(h).ljust(w[i]) for i, h in enumerate(head)))
    lines.append("  ".join("-" * x for x in w))
    for r in rows:
        lines.append("  ".join(str(c).rjust(w[i]) if i else str(c).ljust(w[i]) for i, c in enumerate(r)))
    return "\n".join(lines)


def f2(x):
    return "%.2f" % x


def report(res):
    out = []
    cfg = res["config"]
    out.append("weightfs benchmark: %s, %d runs (medians), %d MiB of float32 output per tensor, "
               "read_ahead_kb=%s, mount opts %s; %s GiB of memory touched and freed first"
               % (cfg["host"], cfg["runs"], cfg["mib"], res.get("mount_io", {}).get("read_ahead_kb"),
                  cfg["mount_opt"] or "(default)", cfg.get("touched_mem_gib", 0)))
    if "loadavg_start" in cfg:
        out.append("load average (1, 5, 15 min) at the start %s, at the end %s: other processes share "
                   "the CPUs when these exceed 0" % tuple("%.2f/%.2f/%.2f" % tuple(cfg[k])
                                                         for k in ("loadavg_start", "loadavg_end")))
    if "decode" in res:
        d = res["decode"]
        ref = d["F32"]["scalar_median"]
        simd = any("simd_median" in v for v in d.values())
        rows = []
        for t in TYPES:
            if t not in d:
                continue
            v = d[t]
            r = [t, f2(v["scalar_median"]), f2(v["scalar_median"] / ref)]
            if simd:
                s = v.get("simd_median")
                r += [f2(s) if s else "-", f2(s / ref) if s else "-"]
            rows.append(r)
        head = ["type", "scalar GB/s", "x memcpy"] + (["SIMD GB/s", "x memcpy"] if simd else [])
        out.append(table("(1) in-process decode, 1 MiB wf_view_read calls (F32 row = memcpy)", head, rows))
    if "mount_io" in res:
        io = res["mount_io"]
        s = io["seq"]
        tmp = io["seq_tmpfs_median"]
        rows = [[t, f2(s[t]["first_median"]), f2(s[t]["first_ratio_median"]),
                 f2(s[t]["first_daemon_cpu_median"]),
                 f2(s[t]["reread_median"]), f2(s[t]["reread_ratio_median"]),
                 f2(s[t]["reread_cpu_ratio_median"])] for t in TYPES]
        out.append(table("(2) first read / (3) re-read through the mount, 1 MiB reads; ratios are medians of "
                         "side-by-side pairs (tmpfs file: %.2f GB/s)" % tmp,
                         ["type", "first GB/s", "x F32 first", "daemon CPU s/GB",
                          "re-read GB/s", "x tmpfs", "x tmpfs (CPU time)"], rows))
        r = io["rand"]
        rt = io["rand_tmpfs"]
        rows = [[t, "%.1f" % r[t]["cold"]["median_us"], "%.1f" % r[t]["cold"]["p99_us"],
                 "%.1f" % r[t]["cached"]["median_us"], "%.1f" % r[t]["cached"]["p99_us"],
                 f2(r[t]["cached"]["median_us"] / rt["median_us"])] for t in TYPES]
        rows.append(["tmpfs", "-", "-", "%.1f" % rt["median_us"], "%.1f" % rt["p99_us"], "1.00"])
        out.append(table("(4) random 4 KiB pread latency, microseconds (cold = mount's cache dropped)",
                         ["type", "cold p50", "cold p99", "cached p50", "cached p99", "cached p50 x tmpfs"],
                         rows))
    if "remote" in res:
        out.append(report_remote(res["remote"]))
    elif res.get("remote_note"):
        out.append("\n(6) network storage: " + res["remote_note"])
    if "mount_cost" in res:
        mc = res["mount_cost"]
        rows = []
        for name, v in mc.items():
            rows.append([name, "%.1f" % (v["model_bytes"] / MiB), str(v["files"]),
                         "%.1f" % (v["mount_median_s"] * 1000), "%.1f" % (v["rss_median_kib"] / 1024),
                         "%.1f" % (v["anon_median_kib"] / 1024), "%.1f" % (v["anon_walk_median_kib"] / 1024)])
        out.append(table("(5) mount time and daemon memory (MiB; anon = smaps_rollup Anonymous)",
                         ["model", "file MiB", "files", "mount ms", "RSS", "anon", "anon after stat all"],
                         rows))
    if "whole" in res:
        wh = res["whole"]
        ways = list(next(iter(wh["files"].values())).keys())
        rows = [[name] + ["%.2f" % v[w]["median"] for w in ways] for name, v in wh["files"].items()]
        out.append(table("(7) first read of a whole %d MiB tensor into one buffer, GB/s (median)%s"
                         % (cfg["mib"], "" if wh["numpy"] else "; numpy not importable"),
                         ["file"] + ways, rows))
    if "module" in res:
        md = res["module"]
        if "types" not in md:
            out.append("\n(8) Python module: " + md["note"])
        else:
            dec = res.get("decode", {})
            memcpy = dec.get("F32", {}).get("scalar_median", float("nan"))
            rows = []
            for t in TYPES:
                e = md["types"][t]
                d = dec.get(t, {})
                dm = d.get("simd_median", d.get("scalar_median", float("nan")))
                rows.append([t, "%.2f" % e["module_median"], "%.2f" % e["module_1thread_median"],
                             "%.2f" % e["fromfile_median"], f2(e["ratio_median"]),
                             "%.2f" % e["fresh_median"], f2(e["vs_fresh"]), "%.2f" % dm, "%.2f" % memcpy])
            out.append(table("(8) every tensor into numpy: weightfs module (%d threads) vs np.fromfile through a "
                             "fresh mount, GB/s (median)" % md["threads"],
                             ["type", "module", "module 1 thr", "np.fromfile", "x fromfile",
                              "decode fresh mem", "module x fresh", "decode 1 MiB", "memcpy"], rows))
    if "convert" in res:
        for c in res["convert"]["models"]:
            out.append(table("(9) %s to one safetensors file, %.0f MiB, GB/s (median; ratios: medians of "
                             "side-by-side runs; the write floor is one thread's 1 MiB pwrite loop of as many "
                             "bytes to the same directory, nothing decoded)" % (c["name"], c["bytes"] / MiB),
                             ["way", "GB/s", "x cp", "x write floor"],
                             [["weightfs convert (%d threads)" % c["threads"], f2(c["convert_median"]),
                               f2(c["ratio_median"]), f2(c["of_floor_median"])],
                              ["cp MNT/model.safetensors", f2(c["cp_median"]), "1.00", ""],
                              ["write floor (pwrite loop)", f2(c["floor_median"]), f2(c["floor_x_cp_median"]),
                               "1.00"]]))
    if "hfq" in res:
        out.append(report_hfq(res["hfq"]))
    if "views" in res:
        vw = res["views"]
        rows = []
        for t, e in vw["views"].items():
            rows.append([t, "%.0f" % (e["f16"]["eps_median"] / 1e6), f2(e["f16"]["ratio_median"]),
                         "%.0f" % (e["bf16"]["eps_median"] / 1e6), f2(e["bf16"]["ratio_median"])])
        out.append(table("(10a) first reads of the f16 / bf16 views vs the f32 view of the same tensor, "
                         "million elements/s (ratios: medians of side-by-side pairs)",
                         ["source type", "f16 Melem/s", "x f32", "bf16 Melem/s", "x f32"], rows))
        ms = vw["model_st"]
        out.append(table("(10b) model.safetensors read whole (1 MiB reads) vs each tensor file in turn, "
                         "first reads, GB/s", ["read", "GB/s", "x tensor files"],
                         [["model.safetensors", f2(ms["whole_median"]), f2(ms["ratio_median"])],
                          ["tensor files in turn", f2(ms["files_median"]), "1.00"]]))
    if "prev" in res:
        pv = res["prev"]
        rows = [[t, f2(e["prev_median"]), f2(e["this_median"]), f2(e["ratio_median"])]
                for t, e in pv["types"].items()]
        out.append(table("(11) first reads through the mount, GB/s (Q4_K mmap: thousands of cold "
                         "single-byte touches of random pages per second): %s vs this binary" % pv["prev"],
                         ["type", "previous", "this", "x previous"], rows))
    if "load" in res:
        out.append(report_load(res["load"]))
    if "ggml" in res:
        out.append(bench_ggml.report_ggml(res["ggml"], table, f2))
    if "mount_io" in res:
        io = res["mount_io"]
        a, b = io["mem_after_mount_kib"], io["mem_after_reading_all_kib"]
        out.append("\n    daemon after mounting the benchmark model: RSS %.1f MiB, anon %.1f MiB; "
                   "after reading every tensor (%d runs): RSS %.1f MiB (file/shmem %.1f), anon %.1f MiB, "
                   "peak RSS %.1f MiB" % (a["VmRSS"] / 1024, a.get("Anonymous", a["RssAnon"]) / 1024,
                                          cfg["runs"], b["VmRSS"] / 1024,
                                          (b["RssFile"] + b["RssShmem"]) / 1024,
                                          b.get("Anonymous", b["RssAnon"]) / 1024, b["VmHWM"] / 1024))
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--weightfs", default="build/weightfs")
    ap.add_argument("--tools", default="build/bench")
    ap.add_argument("--out", default="build/bench/results.json")
    ap.add_argument("--dir", help="scratch directory (default: under /dev/shm, else /tmp)")
    ap.add_argument("--quick", action="store_true", help="32 MiB tensors, 3 runs, smaller metadata model")
    ap.add_argument("--runs", type=int)
    ap.add_argument("--mib", type=int, help="MiB of float32 output per tensor (default 256)")
    ap.add_argument("--rand-n", type=int, default=500, help="random reads per tensor per run")
    ap.add_argument("--parts", default="decode,io,mount,whole,module,remote,convert,views,load,hfq,ggml,gguf,share,verify,quant,hf,q4",
                    help="comma list of decode, io, mount, whole, module (a Python with numpy), remote "
                         "(needs rclone), convert, views, load, prev (needs --prev-weightfs), "
                         "ggml (needs --ggml-src), gguf (parts 15-17, model.gguf; needs the npm clients; "
                         "or one of gguf-read, gguf-llama, gguf-convert, gguf-moe, gguf-oss), share (part 18), verify (part 19), quant (part 20), "
                         "hf (parts 21-22: hf-read, hf-module), q4 (parts 23-24: q4-read, q4-llama)")
    ap.add_argument("--load-mib", type=int,
                    help="MiB of float32 output per tensor in the load part (default 128, quick 32)")
    ap.add_argument("--load-types", help="comma list of types for the load part (default: all; F16 always)")
    ap.add_argument("--prev-weightfs", help="an older weightfs binary to compare first reads (part 11) and "
                         "gpt-oss expert reads (part 26) with")
    ap.add_argument("--disk-dir", default="build/bench",
                    help="directory on a disk filesystem for the whole-read part's reference file")
    ap.add_argument("--drop-caches", action="store_true",
                    help="evict with /proc/sys/vm/drop_caches (root) instead of posix_fadvise")
    ap.add_argument("--read-ahead-kb", type=int, help="set the mount's bdi read_ahead_kb (root)")
    ap.add_argument("--mount-opt", action="append", default=[], help="extra weightfs argument")
    ap.add_argument("--types", help="comma list of tensor types to measure (default: all; F32 always)")
    ap.add_argument("--keep", action="store_true", help="keep the generated models")
    ap.add_argument("--rclone-opt", action="append", default=[],
                    help="extra rclone mount argument for the remote part (e.g. --buffer-size=64M)")
    ap.add_argument("--remote-ra-kb", type=int, help="set the rclone mount's bdi read_ahead_kb (root)")
    ap.add_argument("--touch-mem", type=int, default=4, metavar="GIB",
                    help="allocate, fill and free GIB GiB before measuring (default 4; 0: don't)")
    bench_ggml.add_args(ap)
    bench_share.add_args(ap)
    bench_verify.add_args(ap)
    args = ap.parse_args()
    if args.types:
        TYPES[:] = ["F32"] + [t for t in args.types.split(",") if t != "F32"]
    args.runs = args.runs or (3 if args.quick else 5)
    args.mib = args.mib or (32 if args.quick else 256)
    args.load_mib = args.load_mib or (32 if args.quick else 128)
    args.load_types = set(args.load_types.split(",")) if args.load_types else None
    n_tensors, n_vocab = (20000, 30000) if args.quick else (100000, 150000)
    parts = set(args.parts.split(","))
    # the benchmark model is for every part but load and ggml (their own inputs)
    gguf_parts = bench_gguf.selected(parts)
    need_model = bool(parts - {"load", "ggml", "gguf", "verify", "quant", "net"} - bench_gguf.all_names()) or \
        bool(args.prev_weightfs and parts - bench_gguf.all_names())

    # the model, the tmpfs reference, and convert's output (the whole model)
    need = (args.mib * MiB * 4 if need_model else 0) + 64 * MiB \
        + (args.mib * MiB * (len(TYPES) + 2) if "convert" in parts else 0) \
        + (args.load_mib * MiB * 6 if "load" in parts else 0) \
        + (256 * MiB if "ggml" in parts and args.ggml_src else 0) \
        + (2048 * MiB if gguf_parts else 0) \
        + (3584 * MiB if gguf_parts - set(bench_gguf.PARTS) else 0) \
        + (args.mib * MiB * (args.verify_files + 1) if "verify" in parts else 0)
    if not args.dir:
        base = "/dev/shm" if os.path.isdir("/dev/shm") and shutil.disk_usage("/dev/shm").free > need else "/tmp"
        args.dir = os.path.join(base, "weightfs-bench-%d" % os.getpid())
    os.makedirs(args.dir, exist_ok=True)
    free = shutil.disk_usage(args.dir).free
    if free < need:
        raise SystemExit("bench: %s has %.0f MiB free, needs %.0f MiB" % (args.dir, free / MiB, need / MiB))

    gen = os.path.join(args.tools, "gen_model")
    model = os.path.join(args.dir, "types.gguf")
    many = os.path.join(args.dir, "many.gguf")
    sparse = os.path.join(args.dir, "sparse.gguf")
    ref = os.path.join(args.dir, "ref.f32")
    try:
        if need_model:
            log("bench: generating models in %s" % args.dir)
            subprocess.run([gen, "types", model, str(args.mib)] + TYPES, check=True)
        if "mount" in parts:
            subprocess.run([gen, "many", many, str(n_tensors), str(n_vocab)], check=True)
            subprocess.run([gen, "sparse", sparse, "64"], check=True)
        cpu = ""
        try:
            with open("/proc/cpuinfo") as f:
                cpu = next((l.split(":", 1)[1].strip() for l in f if l.startswith("model name")), "")
        except OSError:
            pass
        res = {"config": {"host": "%s, %d CPUs, kernel %s" % (cpu, os.cpu_count(), platform.release()),
                          "runs": args.runs, "mib": args.mib, "rand_n": args.rand_n,
                          "mount_opt": " ".join(args.mount_opt), "dir": args.dir,
                          "evict": "drop_caches" if args.drop_caches else "posix_fadvise DONTNEED",
                          "read_ahead_kb_set": args.read_ahead_kb,
                          "no_simd_env": os.environ.get("WEIGHTFS_NO_SIMD", "")}}
        res["config"]["touched_mem_gib"] = args.touch_mem
        res["config"]["loadavg_start"] = os.getloadavg()
        touch_memory(args.touch_mem)
        if "decode" in parts:
            res["decode"] = part_decode(args, model)
        if "io" in parts:
            # the tmpfs reference: the F32 tensor's bytes in a plain tmpfs file
            with open(model, "rb") as src, open(ref, "wb") as dst:
                src.seek(4096)
                dst.write(src.read(args.mib * MiB))
            res["mount_io"] = part_mount_io(args, model, ref)
        if "remote" in parts:
            if shutil.which("rclone"):
                res["remote"] = part_remote(args, model)
            else:
                res["remote_note"] = "skipped: rclone is not installed (apt-get install rclone)"
                log("bench: " + res["remote_note"])
        if "whole" in parts:
            os.makedirs(args.disk_dir, exist_ok=True)
            disk = os.path.join(args.disk_dir, "whole-ref.f32")
            with open(model, "rb") as src, open(disk, "wb") as dst:
                src.seek(4096)
                dst.write(src.read(args.mib * MiB))
                dst.flush()
                os.fsync(dst.fileno())
            try:
                res["whole"] = part_whole(args, model, disk)
            finally:
                os.unlink(disk)
        if "module" in parts:
            res["module"] = part_module(args, model)
        if "hfq" in parts:
            res["hfq"] = part_hfq(args, model)
        if "convert" in parts:
            res["convert"] = part_convert(args, model)
        if "views" in parts:
            res["views"] = part_views(args, model)
        if args.prev_weightfs and need_model:
            res["prev"] = part_prev(args, model)
        if "load" in parts:
            res["load"] = part_load(args)
        if "ggml" in parts:
            res["ggml"] = bench_ggml.part_ggml(args)
            if "note" in res["ggml"]:
                log("bench: ggml comparison " + res["ggml"]["note"])
        if gguf_parts:
            res["gguf"] = bench_gguf.part_gguf(args, gguf_parts)
            if "note" in res["gguf"]:
                log("bench: model.gguf part " + res["gguf"]["note"])
        if "share" in parts:
            res["share"] = bench_share.part_share(args, model, TYPES)
            if "note" in res["share"]:
                log("bench: part 18 " + res["share"]["note"])
        if "verify" in parts:
            res["verify"] = bench_verify.part_verify(args)
            if "note" in res["verify"]:
                log("bench: part 19 " + res["verify"]["note"])
        if "net" in parts:
            res["net"] = bench_net.part_net(args)
            if "note" in res["net"]:
                log("bench: part 27 " + res["net"]["note"])
        if "quant" in parts:
            res["quant"] = bench_quant.part_quant(args)
            if "note" in res["quant"]:
                log("bench: part 20 " + res["quant"]["note"])
        if "mount" in parts:
            res["mount_cost"] = part_mount_cost(args, [
                ("%d tensors, %d tokens" % (n_tensors, n_vocab), many),
                ("64 GiB sparse, 4 tensors", sparse),
                ("benchmark model, %d tensors" % len(TYPES), model)])
        res["config"]["loadavg_end"] = os.getloadavg()
        text = report(res)
        if "text" in res.get("gguf", {}):
            text += "\n" + "\n".join(res["gguf"]["text"]) + "\n"
        if "text" in res.get("share", {}):
            text += "\n" + "\n".join(res["share"]["text"]) + "\n"
        if "text" in res.get("verify", {}):
            text += "\n" + "\n".join(res["verify"]["text"]) + "\n"
        if "text" in res.get("net", {}):
            text += "\n" + "\n".join(res["net"]["text"]) + "\n"
        if "text" in res.get("quant", {}):
            text += "\n" + "\n".join(res["quant"]["text"]) + "\n"
        print(text)
        res["table"] = text
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as f:
            json.dump(res, f, indent=1)
        log("bench: wrote %s" % args.out)
    finally:
        if not args.keep:
            for p in (model, many, sparse, ref):
                if os.path.exists(p):
                    os.unlink(p)
            for name in ("mnt", "mnt-view-f32", "mnt-view-f16", "mnt-view-bf16", "mnt-bin-this", "mnt-bin-prev"):
                mnt = os.path.join(args.dir, name)
                if os.path.isdir(mnt) and not os.path.ismount(mnt):
                    os.rmdir(mnt)
            if not os.listdir(args.dir):
                os.rmdir(args.dir)


if __name__ == "__main__":
    main()
