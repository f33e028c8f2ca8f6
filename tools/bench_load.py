#!/usr/bin/python3
"""bench_load.py - the in-process half of the load part of `make bench`.

    bench_load.py MODEL RUNS TYPE...

Run by tools/bench.py (with a Python that has numpy).  MODEL holds one
tensor t.TYPE per type, all of the same element count, and t.F16.  Each run
loads every t.TYPE with weightfs.open(MODEL)[name] (all cores) and with
.get(name, threads=1), each right next to the same load of t.F16 (which
goes first alternates), so the ratio of a pair sees the same machine load.
Prints one JSON object: per type, GB/s of float32 output and the ratios to
F16, per run.
"""
import json
import sys

import numpy as np  # noqa: F401  (the module returns numpy arrays)

from bench_timed import timed  # noqa: E402  (also puts python/ on sys.path)
import weightfs  # noqa: E402


def main():
    model, runs, types = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
    out = {t: {k: [] for k in ("all", "all_f16", "all_ratio", "one", "one_f16", "one_ratio")} for t in types}
    with weightfs.open(model) as m:
        timed(lambda: m["t.F16"])  # warm-up: the file's pages, the thread pool
        for r in range(runs):
            for k, t in enumerate(types):
                for key, load in (("all", lambda n: m[n]), ("one", lambda n: m.get(n, threads=1))):
                    pair = [("t." + t, key), ("t.F16", key + "_f16")]
                    if (r + k) % 2:
                        pair.reverse()
                    got = {}
                    for name, slot in pair:
                        got[slot] = timed(lambda: load(name))
                        out[t][slot].append(got[slot])
                    out[t][key + "_ratio"].append(got[key] / got[key + "_f16"])
    print(json.dumps(out))


if __name__ == "__main__":
    main()
