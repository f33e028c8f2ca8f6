#!/usr/bin/env python3
"""memcheck.py - mount hostile and huge models, report the daemon's memory.

    python3 tools/memcheck.py [--weightfs build/weightfs] [--dir DIR] [--scale S] [CASE...]

For each case: generate the model in DIR (default a fresh directory in
/dev/shm, else /tmp), mount it with `weightfs -f`, and report the header's
size, the mount time, the daemon's VmRSS and VmHWM (/proc/PID/status) once
mounted, the bound docs/security.md promises (10 x header + 64 MiB), the
time `find` takes over the mount, and whether every tensor listed in
tensors.json opens and reads (the check that paths fit PATH_MAX).  Cases
(figures in docs/security.md):

  dots1     one safetensors tensor named by 10,000,000 dots (a 10 MB header)
  dots100k  one safetensors tensor named by 100,000 dots (the deep `find`)
  dotsmany  safetensors, 100,000 tensors "k<i>" + 40 dots (the most nodes per header byte)
  many_st   safetensors, 1,000,000 one-byte tensors
  many_gguf GGUF, 1,000,000 one-float tensors
  longname  safetensors, one tensor whose name fills a 100 MB header
  longdots  safetensors, one tensor: 100 MB of 250-byte components joined by dots
  tokens    GGUF with a 10,000,000-string metadata array (tokenizer.ggml.tokens)

--scale divides every count and length (for quick runs).  Needs FUSE; uses
no third-party modules.
"""
import argparse
import json
import os
import random
import shutil
import struct
import subprocess
import sys
import tempfile
import time

MiB = 1 << 20


def st_file(path, entries, data=b""):
    """entries: list of JSON text fragments '"name": {...}' (already encoded bytes)."""
    head = b"{" + b",".join(entries) + b"}"
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)))
        f.write(head)
        f.write(data)
    return len(head) + 8


def st_one(name, begin=0):
    return b'"%s":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}' % (name, begin, begin + 1)


def gstr(b):
    return struct.pack("<Q", len(b)) + b


def case_dots1(path, s):
    return st_file(path, [st_one(b"." * (10_000_000 // s))], b"\0")


def case_dots100k(path, s):
    return st_file(path, [st_one(b"." * (100_000 // s))], b"\0")


def case_dotsmany(path, s):
    n = 100_000 // s
    return st_file(path, [st_one(b"k%d" % i + b"." * 40, i) for i in range(n)], b"\0" * n)


def case_many_st(path, s):
    n = 1_000_000 // s
    return st_file(path, [st_one(b"t%d" % i, i) for i in range(n)], b"\0" * n)


def case_many_gguf(path, s):
    n = 1_000_000 // s
    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, n, 0))
    head += b"".join(gstr(b"t%d" % i) + struct.pack("<IQIQ", 1, 1, 0, i * 32) for i in range(n))
    head += b"\0" * (-len(head) % 32)
    hl = len(head)
    with open(path, "wb") as f:
        f.write(head)
        f.truncate(hl + 32 * n)
    return hl


def case_longname(path, s):
    n = (100_000_000 - 100) // s
    return st_file(path, [st_one(b"a" * n)], b"\0")


def case_longdots(path, s):
    n = (100_000_000 - 100) // s // 251
    return st_file(path, [st_one(b".".join([b"c" * 250] * n))], b"\0")


def case_tokens(path, s):
    n = 10_000_000 // s
    arr = b"".join(gstr(b"t%d" % i) for i in range(n))
    kv = gstr(b"tokenizer.ggml.tokens") + struct.pack("<IIQ", 9, 8, n) + arr
    head = bytearray(b"GGUF" + struct.pack("<IQQ", 3, 1, 1)) + kv
    head += gstr(b"w") + struct.pack("<IQIQ", 1, 8, 0, 0)
    head += b"\0" * (-len(head) % 32)
    with open(path, "wb") as f:
        f.write(head)
        f.write(b"\0" * 32)
    return len(head)


CASES = {
    "dots1": (case_dots1, "st"), "dots100k": (case_dots100k, "st"),
    "dotsmany": (case_dotsmany, "st"), "many_st": (case_many_st, "st"),
    "many_gguf": (case_many_gguf, "gguf"), "longname": (case_longname, "st"),
    "longdots": (case_longdots, "st"), "tokens": (case_tokens, "gguf"),
}


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                out[k] = int(v.split()[0]) * 1024
    return out


def is_mounted(mp):
    real = os.path.realpath(mp).encode()
    with open("/proc/self/mountinfo", "rb") as f:
        return any(line.split(b" ")[4] == real for line in f)


def run_case(args, name, d):
    gen, ext = CASES[name]
    model = os.path.join(d, "%s.%s" % (name, "gguf" if ext == "gguf" else "safetensors"))
    t0 = time.monotonic()
    header = gen(model, args.scale)
    tgen = time.monotonic() - t0
    mp = os.path.join(d, "mnt-" + name)
    os.makedirs(mp, exist_ok=True)
    t0 = time.monotonic()
    p = subprocess.Popen([args.weightfs, "-f", model, mp], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE)
    res = {"case": name, "header": header, "gen_s": round(tgen, 2)}
    try:
        while not is_mounted(mp):
            if p.poll() is not None:
                res["error"] = p.stderr.read().decode(errors="replace").strip()
                return res
            time.sleep(0.005)
        os.stat(mp)
        res["mount_s"] = round(time.monotonic() - t0, 2)
        st = proc_status(p.pid)
        res["rss"] = st["VmRSS"]
        res["hwm"] = st["VmHWM"]
        res["bound"] = 10 * header + 64 * MiB
        t0 = time.monotonic()
        # one byte per entry: the paths of a deep chain would sum to gigabytes
        fr = subprocess.run(["timeout", str(args.find_timeout), "find", mp, "-printf", "."],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        res["find_s"] = round(time.monotonic() - t0, 2)
        res["find_lines"] = len(fr.stdout)
        if fr.returncode == 124:
            res["find_s"] = "> %d" % args.find_timeout
        res["find_errors"] = fr.stderr.decode(errors="replace")[:200]
        with open(os.path.join(mp, "tensors.json"), "rb") as f:
            tj = json.loads(f.read())
        bad = 0
        paths = [e["path"].encode() for e in tj["tensors"]]
        longest = max((len(r) for r in paths), default=0)
        deepest = max((r.count(b"/") + 1 for r in paths), default=0)
        if len(paths) > 4000:  # the longest and deepest, and a sample
            rng = random.Random(1)
            paths = sorted(paths, key=len)[-2000:] + rng.sample(paths, 2000)
        res["opened"] = len(paths)
        for rel in paths:
            try:
                with open(os.path.join(mp.encode(), rel), "rb") as f:
                    f.read(16)
            except OSError:
                bad += 1
        res["unopenable"] = bad
        res["longest_path"] = longest
        res["deepest"] = deepest
        res["rss_after_walk"] = proc_status(p.pid)["VmRSS"]
    finally:
        for cmd in (["fusermount3", "-u", mp], ["fusermount3", "-u", "-z", mp]):
            if is_mounted(mp):
                subprocess.run(cmd)
        try:
            p.wait(60)
        except subprocess.TimeoutExpired:
            p.kill()
        if is_mounted(mp):
            raise SystemExit("%s: still mounted; leaving %s in place" % (mp, d))
    return res


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--weightfs", default="build/weightfs")
    ap.add_argument("--dir")
    ap.add_argument("--scale", type=int, default=1)
    ap.add_argument("--find-timeout", type=int, default=120)
    ap.add_argument("cases", nargs="*")
    args = ap.parse_args()
    args.weightfs = os.path.abspath(args.weightfs)
    base = args.dir or ("/dev/shm" if os.path.isdir("/dev/shm") else "/tmp")
    d = tempfile.mkdtemp(prefix="wf-memcheck-", dir=base)
    try:
        for name in args.cases or list(CASES):
            r = run_case(args, name, d)
            if "error" in r:
                print("%-10s header %6.1f MB  refused: %s" % (name, r["header"] / 1e6, r["error"]),
                      flush=True)
                continue
            print("%-10s header %6.1f MB  mount %6.2f s  VmRSS %7.1f MiB  VmHWM %7.1f MiB  "
                  "bound %7.1f MiB %s  find %s s (%d entries%s)  longest path %d, depth %d, "
                  "unopenable %d of %d" % (
                      name, r["header"] / 1e6, r["mount_s"], r["rss"] / MiB, r["hwm"] / MiB,
                      r["bound"] / MiB, "ok" if r["rss"] <= r["bound"] else "OVER",
                      str(r["find_s"]), r["find_lines"], ", errors" if r["find_errors"] else "",
                      r["longest_path"], r["deepest"], r["unopenable"], r["opened"]), flush=True)
            os.remove(os.path.join(d, [f for f in os.listdir(d) if f.startswith(name + ".")][0]))
    finally:
        with open("/proc/self/mountinfo", "rb") as f:
            busy = any(line.split(b" ")[4].startswith(d.encode()) for line in f)
        if not busy:  # never walk into a mount that would not go
            shutil.rmtree(d, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
