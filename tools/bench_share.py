"""bench_share.py - part 18 of make bench (--parts share): one tensor file of a mount
mapped by N processes at once shares its pages (issue 32).

The benchmark model's Q4_K tensor (F32 when Q4_K is not measured) is mounted once
(the float32 view: --mib MiB, 256 by default) and its page cache dropped; then N
processes (--share-n, default 4; each a Python with numpy) start together, each
np.memmap()s the file read-only and touches every page of it (one byte per 4 KiB
page, summed), and all stay alive while their memory is read:

  Pss of the mapping   /proc/PID/smaps, the mapping of the tensor file: each shared
                       page counts 1/N in each process, so the sum over the N is the
                       memory the N cost together; about one copy (goal <= 1.05 copies)
  Pss (smaps_rollup)   /proc/PID/smaps_rollup's Pss after touching minus before
                       mapping (numpy imported): all memory the mapping cost, summed
  time to touch        the first process faults the pages in through FUSE (decoded on
                       read); the others, started after it finished, map the cached pages

and, as the contrast, the same N processes reading the file with np.fromfile (a private
copy each: N copies).  Runs --runs times (at least 3); figures are medians.
"""

import os
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20

# The child: imports numpy, says its Pss, waits for "go", maps or reads the file,
# touches every page, says how long that took, waits for "exit".
CHILD = r"""
import sys, time
import numpy as np
path, how = sys.argv[1], sys.argv[2]
print("ready", flush=True)
sys.stdin.readline()
t0 = time.perf_counter()
if how == "memmap":
    a = np.memmap(path, dtype=np.uint8, mode="r")
    s = int(a[::4096].sum())
else:
    a = np.fromfile(path, dtype=np.uint8)
    s = int(a[::4096].sum())
print("touched %.6f %d" % (time.perf_counter() - t0, a.size), flush=True)
sys.stdin.readline()
"""


def log(*a):
    print(*a, file=sys.stderr, flush=True)


def median(v):
    v = sorted(v)
    if not v:
        return float("nan")
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def numpy_python():
    for py in (sys.executable, "/usr/bin/python3"):
        if subprocess.run([py, "-c", "import numpy"], stdout=subprocess.DEVNULL,
                          stderr=subprocess.DEVNULL).returncode == 0:
            return py
    return None


def rollup_pss(pid):
    """Pss of the whole process in bytes (/proc/PID/smaps_rollup)."""
    with open("/proc/%d/smaps_rollup" % pid) as f:
        for line in f:
            if line.startswith("Pss:"):
                return int(line.split()[1]) * 1024
    raise OSError("no Pss in /proc/%d/smaps_rollup" % pid)


def mapping_pss(pid, path):
    """(Pss, Rss) in bytes of the mappings of path in process pid (/proc/PID/smaps)."""
    pss = rss = 0
    inside = False
    with open("/proc/%d/smaps" % pid) as f:
        for line in f:
            head = line.split(None, 5)
            if len(head) >= 5 and "-" in head[0] and not head[0].endswith(":"):
                inside = len(head) == 6 and head[5].rstrip("\n") == path
            elif inside and line.startswith("Pss:"):
                pss += int(line.split()[1]) * 1024
            elif inside and line.startswith("Rss:"):
                rss += int(line.split()[1]) * 1024
    return pss, rss


def evict(path):
    fd = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(fd)


class Mount:
    def __init__(self, wfs, model, mnt, extra=()):
        os.makedirs(mnt, exist_ok=True)
        self.mnt = mnt
        self.p = subprocess.Popen([wfs, "-f"] + list(extra) + [model, mnt], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        t0 = time.monotonic()
        while not os.path.ismount(mnt):
            if self.p.poll() is not None or time.monotonic() - t0 > 60:
                raise SystemExit("bench: weightfs did not mount %s: %s" % (model, self.p.stderr.read()[:300]))
            time.sleep(0.001)

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mnt], check=False)
        try:
            self.p.wait(30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def one_run(py, path, n, how):
    """N children reading path by how (memmap or fromfile), the first one alone.
    Returns the sums of their Pss and per-child touch times."""
    kids = [subprocess.Popen([py, "-c", CHILD, path, how], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             text=True) for _ in range(n)]
    try:
        for k in kids:
            if k.stdout.readline().strip() != "ready":
                raise SystemExit("bench: part 18: a child did not start")
        base = [rollup_pss(k.pid) for k in kids]
        times = []
        size = 0
        # the first alone (it faults the pages in), then the others at once
        for group in (kids[:1], kids[1:]):
            for k in group:
                k.stdin.write("go\n")
                k.stdin.flush()
            for k in group:
                word, secs, nbytes = k.stdout.readline().split()
                if word != "touched":
                    raise SystemExit("bench: part 18: a child failed")
                times.append(float(secs))
                size = int(nbytes)
        out = {"size": size, "first_s": times[0], "others_s": times[1:],
               "rollup_delta": sum(rollup_pss(k.pid) - b for k, b in zip(kids, base))}
        if how == "memmap":
            per = [mapping_pss(k.pid, path) for k in kids]
            out["map_pss"] = sum(p for p, _ in per)
            out["map_rss"] = [r for _, r in per]
        return out
    finally:
        for k in kids:
            try:
                k.stdin.write("exit\n")
                k.stdin.close()
            except (BrokenPipeError, ValueError):
                pass
        for k in kids:
            try:
                k.wait(30)
            except subprocess.TimeoutExpired:
                k.kill()
                k.wait()


def part_share(args, model, types):
    """Part 18: the result dict, with "text" lines for the report (or a "note")."""
    py = numpy_python()
    if not py:
        return {"note": "skipped: no Python with numpy"}
    n = max(2, args.share_n)
    t = "Q4_K" if "Q4_K" in types else "F32"
    runs = max(3, args.runs)
    mnt = os.path.join(args.dir, "mnt-share")
    res = {"n": n, "type": t, "runs": runs, "memmap": [], "fromfile": []}
    log("bench: part 18, %d processes mapping one %s tensor file of a mount (%d runs)" % (n, t, runs))
    m = Mount(args.weightfs, model, mnt, args.mount_opt)
    try:
        path = os.path.realpath(os.path.join(mnt, "t", t))
        for _ in range(runs):
            for how in ("memmap", "fromfile"):
                evict(path)
                res[how].append(one_run(py, path, n, how))
    finally:
        m.close()
        if os.path.isdir(mnt) and not os.path.ismount(mnt):
            os.rmdir(mnt)
    size = res["memmap"][0]["size"]
    res["size"] = size
    res["median"] = {
        "map_pss_copies": median([r["map_pss"] / size for r in res["memmap"]]),
        "map_rss_each": median([min(r["map_rss"]) / size for r in res["memmap"]]),
        "memmap_rollup_copies": median([r["rollup_delta"] / size for r in res["memmap"]]),
        "fromfile_rollup_copies": median([r["rollup_delta"] / size for r in res["fromfile"]]),
        "memmap_first_s": median([r["first_s"] for r in res["memmap"]]),
        "memmap_others_s": median([median(r["others_s"]) for r in res["memmap"]]),
        "fromfile_first_s": median([r["first_s"] for r in res["fromfile"]]),
        "fromfile_others_s": median([median(r["others_s"]) for r in res["fromfile"]]),
    }
    res["text"] = report(res)
    return res


def report(res):
    r = res["median"]
    size = res["size"]
    return [
        "Part 18: %d processes at once, each touching every page of one %s tensor file of a mount "
        "(%.0f MiB float32), medians of %d runs (goal: np.memmap's Pss sum <= 1.05 copies)" % (
            res["n"], res["type"], size / MiB, res["runs"]),
        "  np.memmap, Pss of the mapping, sum of the %d   %.3f copies (%.0f MiB; each maps %.2f of the file)" % (
            res["n"], r["map_pss_copies"], r["map_pss_copies"] * size / MiB, r["map_rss_each"]),
        "  np.memmap, smaps_rollup Pss growth, sum        %.3f copies" % r["memmap_rollup_copies"],
        "  np.fromfile (private copies), Pss growth, sum  %.3f copies" % r["fromfile_rollup_copies"],
        "  time to touch it: memmap first %.3f s, the others %.3f s each; fromfile first %.3f s, others %.3f s" % (
            r["memmap_first_s"], r["memmap_others_s"], r["fromfile_first_s"], r["fromfile_others_s"]),
    ]


def add_args(ap):
    ap.add_argument("--share-n", type=int, default=4, help="part 18: processes mapping the tensor file (default 4)")
