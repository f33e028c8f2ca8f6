#!/usr/bin/python3
"""bench_module.py - one run of the Python module part of `make bench`.

    bench_module.py MODEL MOUNT TYPE...

Run by tools/bench.py (with a Python that has numpy) right after it
mounted MODEL at MOUNT, so every tensor file's first read is a cold one.
For each tensor t.TYPE (alternating which goes first): np.fromfile of the
tensor's file through the mount, and weightfs.open(MODEL)["t." + TYPE] (all cores)
and .get("t." + TYPE, threads=1).  Prints one JSON object: GB/s of float32 output
per type and way.
"""
import json
import os
import sys

import numpy as np

from bench_timed import timed  # noqa: E402  (also puts python/ on sys.path)
import weightfs  # noqa: E402


def main():
    model, mnt, types = sys.argv[1], sys.argv[2], sys.argv[3:]
    out = {}
    with weightfs.open(model) as m:
        for k, t in enumerate(types):
            path = os.path.join(mnt, "t", t)
            ways = [("fromfile", lambda: np.fromfile(path, dtype=np.float32)),
                    ("module", lambda: m["t." + t]),
                    ("module_1thread", lambda: m.get("t." + t, threads=1))]
            if k % 2:
                ways.reverse()
            out[t] = {name: timed(fn) for name, fn in ways}
    print(json.dumps(out))


if __name__ == "__main__":
    main()
