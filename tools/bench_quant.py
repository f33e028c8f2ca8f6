#!/usr/bin/python3
"""bench_quant.py - part 20 of make bench (--parts quant): each encoder of weightfs
(weightfs_quantize, src/codec/wf_quant*.c) against ggml's own quantizer for the same type
(ggml_quantize_chunk(imatrix=NULL) of the npm libggml-base.so, tests/clients/quant_oracle.py),
one thread each, on the same float32 input (4 MiB of N(0, 0.02) values, rows of 4096).

Each measurement calls the quantizer on the whole input until 0.1 s of the thread's CPU time
have passed and counts input bytes per CPU second (other load on the machine then matters
less); the two alternate, and each figure is the median over --runs runs
(at least 5) of the per-run ratio weightfs / ggml (goal: >= 1x).  The bytes are compared
too (any difference is reported as a failure of the part, not just a slow figure).

Standalone:  /usr/bin/python3 tools/bench_quant.py LIBWEIGHTFS.so [RUNS]
Needs numpy and the npm clients (WEIGHTFS_NPM, or bash tests/clients/npm.sh); says why and
returns a note otherwise.
"""

import ctypes as C
import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MiB = 1 << 20


def median(v):
    v = sorted(v)
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def rate(fn, nbytes, min_s=0.1):
    """Input bytes per CPU second of fn() (this thread's CPU time: the machine may be shared),
    called until min_s seconds have passed."""
    calls, t0 = 0, time.thread_time()
    while True:
        fn()
        calls += 1
        dt = time.thread_time() - t0
        if dt >= min_s:
            return calls * nbytes / dt


def measure(lib_path, runs):
    import numpy as np
    sys.path.insert(0, os.path.join(ROOT, "tests", "clients"))
    import quant_oracle as qo
    glib, version = qo.ggml_lib()
    if glib is None:
        return {"note": "skipped: %s is not installed (bash tests/clients/npm.sh)" % qo.PACKAGE}
    wlib = qo.wf_lib(lib_path)
    npr = 4096
    x = (np.random.default_rng(20).standard_normal(MiB) * 0.02).astype(np.float32)
    nrows = x.size // npr
    out = C.create_string_buffer(x.nbytes + 64)
    got = C.c_size_t()
    res = {"package": "%s@%s" % (qo.PACKAGE, version), "input_mib": x.nbytes / MiB, "runs": runs,
           "types": {}}
    for tname, tid in qo.TYPES.items():
        if tname == "F32":
            continue
        same = qo.wf_quantize(wlib, tname, x, nrows, npr)[0] == qo.ggml_quantize(glib, tname, x, nrows, npr)

        def g():
            glib.ggml_quantize_chunk(tid, x.ctypes.data, out, 0, nrows, npr, None)

        def w():
            wlib.weightfs_quantize(tid, x.ctypes.data, nrows, npr, out, len(out), C.byref(got), None, 0)

        gs, ws, ratios = [], [], []
        for r in range(runs):
            pair = (g, w) if r % 2 == 0 else (w, g)
            a = {f: rate(f, x.nbytes) for f in pair}
            gs.append(a[g])
            ws.append(a[w])
            ratios.append(a[w] / a[g])
        res["types"][tname] = {"ggml_mbs": median(gs) / 1e6, "weightfs_mbs": median(ws) / 1e6,
                               "ratio": median(ratios), "identical": same}
    return res


def report(res):
    if "note" in res:
        return ["20. encoders against ggml: " + res["note"]]
    lines = ["20. encoders against ggml_quantize_chunk (%s), one thread, %.0f MiB of float32, "
             "median of %d runs" % (res["package"], res["input_mib"], res["runs"]),
             "    %-7s %11s %13s %7s  %s" % ("type", "ggml MB/s", "weightfs MB/s", "ratio", "bytes")]
    for t, r in res["types"].items():
        lines.append("    %-7s %11.0f %13.0f %6.2fx  %s" % (t, r["ggml_mbs"], r["weightfs_mbs"], r["ratio"],
                                                         "identical" if r["identical"] else "DIFFER"))
    return lines


def part_quant(args):
    """For tools/bench.py: builds nothing; runs this file under a Python with numpy."""
    lib = os.path.join(os.path.dirname(os.path.abspath(args.weightfs)), "libweightfs.so.0")
    if not os.path.exists(lib):
        return {"note": "skipped: %s is not built (make lib)" % lib}
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable
    p = subprocess.run([py, os.path.abspath(__file__), "--json", lib, str(max(5, args.runs))],
                       stdout=subprocess.PIPE, text=True)
    if p.returncode != 0:
        return {"note": "failed (exit %d)" % p.returncode}
    import json
    res = json.loads(p.stdout)
    res["text"] = report(res)
    return res


def main(argv):
    js = "--json" in argv
    argv = [a for a in argv if a != "--json"]
    if len(argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    res = measure(argv[1], int(argv[2]) if len(argv) > 2 else 5)
    if js:
        import json
        print(json.dumps(res))
    else:
        print("\n".join(report(res)))
    bad = [t for t, r in res.get("types", {}).items() if not r["identical"]]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
