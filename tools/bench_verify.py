"""bench_verify.py - part 19 of make bench (--parts verify): `weightfs verify` against
`sha256sum` of the same files (issue 31).

A hub cache models--bench--verify is written to the scratch directory (tmpfs when there is
room: every file stays in the page cache): --verify-files safetensors files (default 4) of
--mib MiB each (256 by default; 32 with --quick; each one F32 tensor of random bytes) as LFS
blobs named by their SHA-256, a config.json as a git blob, snapshots/REV/ links and
refs/main.  Measured side by side in each run, the order alternating between runs, each
figure the median of per-run ratios (--runs, at least 3):

  one core     `taskset -c C weightfs verify REPO` against `taskset -c C sha256sum BLOBS`:
               the same bytes hashed once each on one core (goal: >= 0.9x)
  all cores    `weightfs verify REPO` on every core against the same one-core sha256sum:
               the wall-clock speedup, and per core (speedup / cores)
  --write      `weightfs verify --write M FILE` of one blob's snapshot file (each byte hashed
               twice: the file's digest and its tensor's) against `sha256sum FILE`, one core

Speed is bytes hashed per second of wall time; the tools' own start-up is included.
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import sys
import time

MiB = 1 << 20
REV = "0123456789abcdef0123456789abcdef01234567"


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(v):
    v = sorted(v)
    if not v:
        return float("nan")
    n = len(v)
    return v[n // 2] if n % 2 else (v[n // 2 - 1] + v[n // 2]) / 2


def make_hub(root, n_files, size):
    """The hub cache; returns (repo, [blob paths], [snapshot file paths])."""
    repo = os.path.join(root, "models--bench--verify")
    snap = os.path.join(repo, "snapshots", REV)
    for d in (snap, os.path.join(repo, "blobs"), os.path.join(repo, "refs")):
        os.makedirs(d, exist_ok=True)
    with open(os.path.join(repo, "refs", "main"), "w") as f:
        f.write(REV)
    blobs, links = [], []
    n_el = size // 4
    for i in range(n_files):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, n_files)
        head = json.dumps({"w%d" % i: {"dtype": "F32", "shape": [n_el], "data_offsets": [0, n_el * 4]}}).encode()
        head += b" " * (-len(head) % 8)
        h = hashlib.sha256()
        tmp = os.path.join(repo, "blobs", "tmp")
        with open(tmp, "wb") as f:
            for chunk in (struct.pack("<Q", len(head)) + head,):
                f.write(chunk)
                h.update(chunk)
            left = n_el * 4
            while left:
                b = os.urandom(min(left, 16 * MiB))
                f.write(b)
                h.update(b)
                left -= len(b)
        blob = os.path.join(repo, "blobs", h.hexdigest())
        os.rename(tmp, blob)
        link = os.path.join(snap, name)
        os.symlink(os.path.join("..", "..", "blobs", h.hexdigest()), link)
        blobs.append(blob)
        links.append(link)
    cfg = b'{"architectures": ["LlamaForCausalLM"]}\n'
    gid = hashlib.sha1(b"blob %d\0" % len(cfg) + cfg).hexdigest()
    with open(os.path.join(repo, "blobs", gid), "wb") as f:
        f.write(cfg)
    os.symlink(os.path.join("..", "..", "blobs", gid), os.path.join(snap, "config.json"))
    return repo, blobs, links


def timed(argv):
    t0 = time.perf_counter()
    p = subprocess.run(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    dt = time.perf_counter() - t0
    if p.returncode != 0:
        raise RuntimeError("%s: exit %d: %s" % (" ".join(argv[:4]), p.returncode, p.stderr.decode()[-300:]))
    return dt


def part_verify(args):
    """Part 19: the result dict, with "text" lines for the report (or a "note")."""
    if not shutil.which("sha256sum") or not shutil.which("taskset"):
        return {"note": "skipped: no sha256sum or taskset"}
    n_files = max(1, args.verify_files)
    size = args.mib * MiB
    runs = max(3, args.runs)
    cores = os.cpu_count() or 1
    cpu = sorted(os.sched_getaffinity(0))[-1]
    one = ["taskset", "-c", str(cpu)]
    root = os.path.join(args.dir, "verify-hub")
    log("bench: part 19, weightfs verify of a hub cache (%d x %d MiB) vs sha256sum, %d runs"
        % (n_files, args.mib, runs))
    repo, blobs, links = make_hub(root, n_files, size)
    total = sum(os.path.getsize(b) for b in blobs)
    man = os.path.join(root, "m.json")
    res = {"files": n_files, "bytes": total, "cores": cores, "runs": runs,
           "sha1": [], "ver1": [], "verall": [], "sha_one_file": [], "write1": []}
    try:
        timed([args.weightfs, "verify", repo])  # a first run: every page cached
        for r in range(runs):
            pairs = [("sha1", one + ["sha256sum"] + blobs), ("ver1", one + [args.weightfs, "verify", repo]),
                     ("verall", [args.weightfs, "verify", repo]),
                     ("sha_one_file", one + ["sha256sum", blobs[0]]),
                     ("write1", one + [args.weightfs, "verify", "--write", man, links[0]])]
            for key, argv in (pairs if r % 2 == 0 else pairs[::-1]):
                res[key].append(timed(argv))
    finally:
        if not args.keep:
            shutil.rmtree(root, ignore_errors=True)
    one_size = size
    m = {
        "sha256sum_mb_s": total / median(res["sha1"]) / 1e6,
        "verify_one_core_mb_s": total / median(res["ver1"]) / 1e6,
        "one_core_ratio": median([s / v for s, v in zip(res["sha1"], res["ver1"])]),
        "all_cores_speedup": median([s / v for s, v in zip(res["sha1"], res["verall"])]),
        "write_ratio": median([s / v for s, v in zip(res["sha_one_file"], res["write1"])]),
        "write_mb_s": one_size / median(res["write1"]) / 1e6,
    }
    m["all_cores_per_core"] = m["all_cores_speedup"] / min(cores, n_files)
    res["median"] = m
    res["text"] = report(res)
    return res


def report(res):
    m = res["median"]
    used = min(res["cores"], res["files"])
    return [
        "Part 19: weightfs verify of a hub cache, %d LFS blobs of %.0f MiB (page cache), against sha256sum of the "
        "same files, medians of %d runs (goal: >= 0.9x per core)" % (res["files"], res["bytes"] / res["files"] / MiB,
                                                                      res["runs"]),
        "  sha256sum, one core                         %8.0f MB/s" % m["sha256sum_mb_s"],
        "  weightfs verify, one core                   %8.0f MB/s   %.2fx sha256sum" % (
            m["verify_one_core_mb_s"], m["one_core_ratio"]),
        "  weightfs verify, all cores (%d used)         %8s        %.2fx wall, %.2fx per core" % (
            used, "", m["all_cores_speedup"], m["all_cores_per_core"]),
        "  verify --write of one file, one core        %8.0f MB/s   %.2fx sha256sum of it (every byte hashed twice)"
        % (m["write_mb_s"], m["write_ratio"]),
    ]


def add_args(ap):
    ap.add_argument("--verify-files", type=int, default=4,
                    help="part 19: LFS blobs in the hub cache verify checks (default 4, each --mib MiB)")
