"""bench_ggml.py - part 14 of `make bench`: weightfs's decoders against ggml's
own to_float, single-threaded (tools/bench_ggml.c), imported by tools/bench.py.

Runs only when a ggml or llama.cpp source tree is given (`make bench
GGML_SRC=DIR`, or `tools/bench.py --ggml-src DIR`); otherwise the part is a
one-line note.  ggml is not a dependency of weightfs and nothing of it is
kept: its base library (libggml-base.a: ggml-quants.c's dequantize_row_*
and the type traits) is configured and built with cmake into the bench's
scratch directory, once with `-O3 -march=native` (CMAKE_C_FLAGS: ggml's
GGML_NATIVE only reaches the CPU backend, which is not built) and with
--ggml-o3 also with plain -O3; the flags ggml-quants.c was really compiled
with are read back from compile_commands.json and reported.  The harness is
compiled there too, against those headers, that library and the
libweightfs.a next to the weightfs binary (and, with --ggml-prev-lib, once
more against an older libweightfs.a, for a before/after in the same run).
The harness binaries run one after the other, --runs rounds; each run's
figures are medians of interleaved samples, the report gives the medians
over the rounds.
"""
import json
import os
import shutil
import statistics
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)


def log(*a):
    import sys
    print(*a, file=sys.stderr, flush=True)


def ggml_root(src):
    """The ggml project directory of a ggml or llama.cpp tree, or None."""
    for d in (src, os.path.join(src, "ggml")):
        if all(os.path.isfile(os.path.join(d, p))
               for p in ("CMakeLists.txt", "src/ggml-quants.c", "include/ggml.h")):
            return d
    return None


def tree_commit(src):
    try:
        return subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], check=True, text=True,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return None


def quants_command(build):
    """ggml-quants.c's compile command from compile_commands.json."""
    with open(os.path.join(build, "compile_commands.json")) as f:
        for e in json.load(f):
            if e["file"].endswith("ggml-quants.c"):
                return e.get("command") or " ".join(e.get("arguments", []))
    return None


def build_ggml(root, build, cflags, jobs):
    """Configures and builds libggml-base.a; returns (library, compile command)."""
    cfg = ["cmake", "-S", root, "-B", build, "-DCMAKE_BUILD_TYPE=Release",
           "-DCMAKE_C_FLAGS=" + cflags, "-DCMAKE_CXX_FLAGS=" + cflags, "-DBUILD_SHARED_LIBS=OFF",
           "-DGGML_OPENMP=OFF", "-DGGML_CPU=OFF", "-DGGML_BUILD_TESTS=OFF", "-DGGML_BUILD_EXAMPLES=OFF",
           "-DCMAKE_EXPORT_COMPILE_COMMANDS=ON"]
    with open(os.path.join(os.path.dirname(build), os.path.basename(build) + ".log"), "w") as logf:
        subprocess.run(cfg, check=True, stdout=logf, stderr=subprocess.STDOUT)
        subprocess.run(["cmake", "--build", build, "--target", "ggml-base", "-j", str(jobs)], check=True,
                       stdout=logf, stderr=subprocess.STDOUT)
    lib = None
    for d, _, files in os.walk(build):
        if "libggml-base.a" in files:
            lib = os.path.join(d, "libggml-base.a")
    cmd = quants_command(build)
    if not lib or not cmd:
        raise RuntimeError("no libggml-base.a or no compile command for ggml-quants.c in " + build)
    want = ["-O3"] + cflags.split()
    missing = [w for w in want if w not in cmd.split()]
    if missing:
        raise RuntimeError("ggml-quants.c was not compiled with %s: %s" % (" ".join(missing), cmd))
    return lib, cmd


def build_harness(root, out, ggml_lib, wf_lib, cmd):
    cc = os.environ.get("CC", "cc")
    extra = ["-fopenmp"] if "-fopenmp" in cmd.split() else []
    subprocess.run([cc, "-O2", "-std=c11", "-D_GNU_SOURCE", "-Wall", "-Wextra",
                    "-I" + os.path.join(REPO, "src"), "-I" + os.path.join(root, "include"),
                    "-o", out, os.path.join(HERE, "bench_ggml.c"), wf_lib, ggml_lib,
                    "-lstdc++", "-lm", "-lpthread"] + extra, check=True)


def run_harness(binary, args):
    cmd = [binary, "-r", str(args.ggml_reps), "-n", args.ggml_sizes]
    if args.ggml_types:
        cmd += ["-t", args.ggml_types + ",memset,memcpy,store32"]
    p = subprocess.run(cmd, stdout=subprocess.PIPE, text=True)
    rows = [json.loads(l) for l in p.stdout.splitlines() if l.strip()]
    if p.returncode not in (0, 1) or not rows:
        raise RuntimeError("%s exited with %d" % (binary, p.returncode))
    return rows


def part_ggml(args):
    """Part 14: returns the result dict (a "note" when it did not run)."""
    if not args.ggml_src:
        return {"note": "skipped: no ggml tree given (make bench GGML_SRC=DIR, a ggml or llama.cpp "
                        "checkout; or tools/bench.py --ggml-src DIR)"}
    root = ggml_root(args.ggml_src)
    if not root:
        return {"note": "skipped: %s is not a ggml or llama.cpp tree (no CMakeLists.txt, "
                        "src/ggml-quants.c, include/ggml.h in it or in its ggml/)" % args.ggml_src}
    if not shutil.which("cmake"):
        return {"note": "skipped: cmake is not installed"}
    wf_lib = os.path.join(os.path.dirname(os.path.abspath(args.weightfs)), "libweightfs.a")
    work = os.path.join(args.dir, "ggml")
    os.makedirs(work, exist_ok=True)
    res = {"ggml_src": os.path.abspath(args.ggml_src), "ggml_commit": tree_commit(root),
           "runs": args.runs, "reps": args.ggml_reps, "flags": {}, "bins": [], "types": {}, "ceiling": {}}
    try:
        flavours = [("native", "-march=native")] + ([("O3", "")] if args.ggml_o3 else [])
        libs = [("this", wf_lib)] + ([("prev", args.ggml_prev_lib)] if args.ggml_prev_lib else [])
        bins = []
        for name, cflags in flavours:
            log("bench: building ggml-base from %s with -O3 %s (in %s)" % (root, cflags, work))
            lib, cmd = build_ggml(root, os.path.join(work, "build-" + name), cflags, args.ggml_jobs)
            res["flags"][name] = cmd
            for wname, wl in libs:
                b = os.path.join(work, "bench_ggml-%s-%s" % (name, wname))
                build_harness(root, b, lib, wl, cmd)
                bins.append((name, wname, b))
        res["bins"] = [[n, w] for n, w, _ in bins]
        samples = {}
        for r in range(args.runs):
            log("bench: ggml comparison, run %d of %d" % (r + 1, args.runs))
            for name, wname, b in (bins if r % 2 == 0 else bins[::-1]):
                for row in run_harness(b, args):
                    samples.setdefault((name, wname), []).append(row)
        collect(res, samples)
    except (OSError, RuntimeError, subprocess.CalledProcessError) as e:
        res["note"] = "failed: %s" % e
        log("bench: ggml comparison " + res["note"])
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return res


def collect(res, samples):
    """Medians over the runs, per type, size and harness."""
    by = {}
    for (name, wname), rows in samples.items():
        for row in rows:
            key = (row["type"], row.get("elements"))
            by.setdefault(key, {}).setdefault((name, wname), []).append(row)
    for (t, n), per in by.items():
        if t in ("memset", "memcpy", "store32"):
            v = [r["gbps"] for rows in per.values() for r in rows]
            res["ceiling"].setdefault(t, {})[str(n)] = {"gbps_median": statistics.median(v)}
            continue
        e = res["types"].setdefault(t, {})
        for (name, wname), rows in per.items():
            if "skipped" in rows[0]:
                e["skipped"] = rows[0]["skipped"]
                continue
            e.setdefault(str(n), {})["%s/%s" % (name, wname)] = {
                "ggml_gbps_median": statistics.median(r["ggml_gbps"] for r in rows),
                "wf_gbps_median": statistics.median(r["wf_gbps"] for r in rows),
                "ratio_median": statistics.median(r["ratio"] for r in rows),
                "ratios": [r["ratio"] for r in rows],
                "identical": all(r["identical"] for r in rows),
                "wf_simd": all(r["wf_simd"] for r in rows)}


def report_ggml(r, table, f2):
    if "types" not in r or not r["types"]:
        return "\n(14) against ggml's to_float: " + r.get("note", "")
    keys = []
    for t in r["types"].values():
        for n, per in t.items():
            if n != "skipped":
                keys += [k for k in per if k not in keys]
    sizes = sorted({int(n) for t in r["types"].values() for n in t if n != "skipped"})
    flags = "; ".join("%s: %s" % (k, " ".join(w for w in v.split() if w.startswith(("-O", "-m", "-f"))))
                      for k, v in r["flags"].items())
    out = ["\n(14) single-thread decode against ggml's own to_float (ggml %s, %s; ggml-quants.c compiled "
           "with %s), GB/s of float32 output, medians over %d runs of medians of %d interleaved samples; "
           "x ggml = ggml's time / weightfs's time (> 1: weightfs faster); '/prev': the harness linked with "
           "--ggml-prev-lib; memset, memcpy, store32 (32-byte vector stores): the same loop writing the "
           "same output size%s" % ((r.get("ggml_commit") or "?")[:12], r["ggml_src"], flags, r["runs"],
                                    r["reps"], (" " + r["note"]) if r.get("note") else "")]
    for n in sizes:
        head = ["type"]
        for k in keys:
            head += ["%s ggml" % k.replace("/this", ""), "wf", "x ggml"]
        rows = []
        for t, per in r["types"].items():
            if "skipped" in per:
                rows.append([t] + ["-"] * (len(head) - 1) + [per["skipped"]])
                continue
            row, same = [t], True
            for k in keys:
                e = per.get(str(n), {}).get(k)
                if not e:
                    row += ["-"] * 3
                    continue
                row += [f2(e["ggml_gbps_median"]), f2(e["wf_gbps_median"]), f2(e["ratio_median"])]
                same &= e["identical"]
            rows.append(row + ["yes" if same else "NO"])
        for t, per in r["ceiling"].items():
            g = per.get(str(n), {}).get("gbps_median")
            rows.append([t, "-", f2(g) if g is not None else "-", "-"] + ["-"] * (len(head) - 4) + ["-"])
        out.append(table("%d elements (%d KiB of output)" % (n, n * 4 >> 10), head + ["identical"], rows))
    return "\n".join(out)


def add_args(ap):
    ap.add_argument("--ggml-src", help="a ggml or llama.cpp source tree: part 14 builds its libggml-base "
                                       "in the scratch directory and compares decoders (make bench GGML_SRC=DIR)")
    ap.add_argument("--ggml-o3", action="store_true", help="part 14: also build ggml with plain -O3")
    ap.add_argument("--ggml-prev-lib", help="part 14: also run the harness linked with this (older) libweightfs.a")
    ap.add_argument("--ggml-reps", type=int, default=31, help="part 14: interleaved samples per type (default 31)")
    ap.add_argument("--ggml-sizes", default="65536,1048576",
                    help="part 14: element counts (default 65536,1048576: output in L2, past L2)")
    ap.add_argument("--ggml-types", help="part 14: comma list of types (default: every shared one)")
    ap.add_argument("--ggml-jobs", type=int, default=2, help="part 14: parallel jobs building ggml (default 2)")
