"""Group netcache: the local cache of remote sources (src/net/wf_cache.c,
wf_offline.c, wf_hubcache.c, src/cli/cli_fetch.c; docs/remote.md) against the
same nginx hub (wf_hub.py) t_net uses: the default cache folder, cache=none, the size
limit and its least-recently-used eviction, two mounts sharing one folder,
-o offline (with nginx stopped), the Hugging Face cache layout, and
`weightfs fetch` (whole, and one tensor's chunks only, counted from nginx's
access log).
"""

import json
import os
import pty
import struct
import subprocess
import threading
import time

import wf_harness
from wf_harness import Fail, Mount, check, expect_eio, new_dir, sha256_file as sha256, skip_or_fail
import t_net
from t_net import make_models, same_trees
from wf_hub import COMMIT, NGINX, Hub, git_blob_id, is_lfs

CHUNK = 65536


def sum64(b):
    """src/net/wf_cache.c's sum64: FNV-1a's step over 64-bit little-endian
    words, the tail bytewise, seeded with the length, folded at the end."""
    m, prime = 0xFFFFFFFFFFFFFFFF, 0x100000001b3
    h = 0xcbf29ce484222325 ^ len(b)
    n8 = len(b) // 8
    for w in struct.unpack("<%dQ" % n8, b[:n8 * 8]):
        h = ((h ^ w) * prime) & m
    for x in b[n8 * 8:]:
        h = ((h ^ x) * prime) & m
    return h ^ (h >> 29)


def cache_files(cdir):
    """Every cache file (chunks and small files), path -> (size, mtime_ns);
    not the bookkeeping (.lock, .sources) nor temporary files."""
    out = {}
    for sub in sorted(os.listdir(cdir)) if os.path.isdir(cdir) else []:
        d = os.path.join(cdir, sub)
        if sub.startswith(".") or not os.path.isdir(d):
            continue
        for n in os.listdir(d):
            if ".tmp." in n:
                continue
            st = os.stat(os.path.join(d, n))
            out[os.path.join(sub, n)] = (st.st_size, st.st_mtime_ns)
    return out


def check_whole(cdir):
    """Every cache file whole: its bytes, then their checksum."""
    bad = []
    for rel in cache_files(cdir):
        with open(os.path.join(cdir, rel), "rb") as f:
            b = f.read()
        if len(b) < 8 or struct.unpack("<Q", b[-8:])[0] != sum64(b[:-8]):
            bad.append(rel)
    if bad:
        raise Fail("%d torn cache files: %s" % (len(bad), bad[:3]))
    return len(cache_files(cdir))


def run(args, env=None, timeout=120):
    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([wf_harness.BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, timeout=timeout, env=e)


def refused_line(argv, want):
    mp = new_dir()
    r = run(["-f"] + argv + [mp], timeout=60)
    err = r.stderr.decode(errors="replace")
    lines = [l for l in err.splitlines() if l.strip()]
    if r.returncode == 0:
        raise Fail("%s mounted" % argv)
    if len(lines) != 1 or want not in lines[0]:
        raise Fail("want one line with %r, got %r" % (want, err[:400]))
    return lines[0]


def pread_all(path, offs, n=4):
    fd = os.open(path, os.O_RDONLY)
    try:
        return [os.pread(fd, n, o) for o in offs]
    finally:
        os.close(fd)


def group_netcache():
    if not os.path.exists(NGINX):
        skip_or_fail("no nginx (apt-get install nginx)")
    base = new_dir("cachemodels-")
    models = {}

    def build():
        models["tiny"], models["gg"], models["big"], models["chg"] = make_models(base)
    if not check("netcache: test models made", build):
        return
    hub = Hub()
    hub.add("org/Tiny-Llama", models["tiny"])
    hub.add("org/big", models["big"])
    hub.add("org/chg", models["chg"])
    hub.add("org/gg", models["gg"])
    saved = {k: os.environ.get(k) for k in ("XDG_CACHE_HOME", "HF_HOME", "HF_HUB_CACHE", "HF_HUB_OFFLINE")}
    try:
        if not check("netcache: nginx started", hub.start):
            return
        t_net.env_hub(hub)
        run_checks(hub, models)
    finally:
        hub.stop()
        for k in ("HF_ENDPOINT", "HF_TOKEN_PATH", "TMPDIR"):
            os.environ.pop(k, None)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def fresh_home():
    """XDG_CACHE_HOME and HF_HOME in new folders; returns (weightfs cache, hub cache)."""
    x, h = new_dir("xdg-"), new_dir("hfhome-")
    os.environ["XDG_CACHE_HOME"], os.environ["HF_HOME"] = x, h
    os.environ.pop("HF_HUB_CACHE", None)
    return os.path.join(x, "weightfs"), os.path.join(h, "hub")


def run_checks(hub, models):
    def default_dir():
        cdir, hdir = fresh_home()
        with Mount("hf://org/big", opts=["-o", "remote_chunk=64K"]) as rm:
            with open(rm.path("b/small"), "rb") as f:
                f.read()
        n = check_whole(cdir)
        recs = os.listdir(os.path.join(cdir, ".sources"))
        if n < 1 or len(recs) != 1:
            raise Fail("%s: %d cache files, records %s" % (cdir, n, recs))
        with open(os.path.join(cdir, "CACHEDIR.TAG")) as f:
            if not f.read().startswith("Signature: 8a477f597d28d172789f06886806bc55"):
                raise Fail("CACHEDIR.TAG without its signature")
        return "%d chunk files and 1 record under $XDG_CACHE_HOME/weightfs" % n
    check("netcache: the default cache is $XDG_CACHE_HOME/weightfs", default_dir)

    def home_dir():
        cdir, _ = fresh_home()
        home = new_dir("home-")
        os.environ.pop("XDG_CACHE_HOME")
        old = os.environ.get("HOME")
        os.environ["HOME"] = home
        try:
            with Mount("hf://org/big", opts=["-o", "remote_chunk=64K"]) as rm:
                with open(rm.path("b/small"), "rb") as f:
                    f.read()
        finally:
            os.environ["HOME"] = old
        return "%d files under ~/.cache/weightfs" % check_whole(os.path.join(home, ".cache", "weightfs"))
    check("netcache: without XDG_CACHE_HOME, ~/.cache/weightfs", home_dir)

    def none():
        cdir, hdir = fresh_home()
        with Mount("hf://org/Tiny-Llama", opts=["-o", "cache=none"]) as rm, Mount(models["tiny"]) as lm:
            info = same_trees(lm.mp, rm.mp)
        left = [os.path.join(r, n) for d in (os.environ["XDG_CACHE_HOME"], os.environ["HF_HOME"])
                for r, _, ns in os.walk(d) for n in ns]
        if left or os.path.exists(cdir):
            raise Fail("cache=none wrote %s" % left[:3])
        return info + ", nothing written"
    check("netcache: -o cache=none writes nothing (neither cache)", none)

    def unwritable():
        fresh_home()
        os.environ["XDG_CACHE_HOME"] = "/proc/nowhere"
        with Mount("hf://org/big", opts=["-o", "remote_chunk=64K"]) as rm:
            with open(rm.path("b/small"), "rb") as f:
                f.read()
            lines = [l for l in rm.stderr().splitlines() if l.strip()]
        if len(lines) != 1 or "without a cache" not in lines[0]:
            raise Fail("want one warning line, got %r" % lines)
        named = refused_line(["-o", "cache=/proc/nowhere/c", "hf://org/big"], "cache")
        return "warned: %s; named: refused: %s" % (lines[0][:60], named[:60])
    check("netcache: a default cache that cannot be made: one warning, mounted uncached; "
          "a named one: refused", unwritable)

    def hf_layout():
        cdir, hdir = fresh_home()
        with Mount("hf://org/Tiny-Llama") as rm:
            os.listdir(rm.mp)
        repo = os.path.join(hdir, "models--org--Tiny-Llama")
        with open(os.path.join(repo, "refs", "main")) as f:
            if f.read() != COMMIT:
                raise Fail("refs/main does not hold the commit")
        snap = os.path.join(repo, "snapshots", COMMIT)
        small = [rel for rel in hub.repos["org/Tiny-Llama"] if not is_lfs(rel)]
        for rel in small:
            p = os.path.join(snap, rel)
            if not os.path.islink(p):
                raise Fail("snapshots/COMMIT/%s is not a symlink" % rel)
            tgt = os.readlink(p)
            want = "../" * rel.count("/") + "../../blobs/"
            if not tgt.startswith(want) or "/" in tgt[len(want):]:
                raise Fail("%s -> %s, want %sBLOB" % (rel, tgt, want))
            if sha256(p) != hub.repos["org/Tiny-Llama"][rel][1]:
                raise Fail("%s: other bytes than the repo's" % rel)
            if tgt[len(want):] != git_blob_id(p):
                raise Fail("%s: blob %s, not its ETag (git blob id)" % (rel, tgt[len(want):]))
        blobs = os.listdir(os.path.join(repo, "blobs"))
        if any(b.endswith(".incomplete") or '"' in b for b in blobs):
            raise Fail("blobs: %s" % blobs)
        return "%d small files linked, refs/main = commit" % len(small)
    check("netcache: Hub small files in the Hugging Face cache layout (blobs, relative snapshot "
          "links, refs/main)", hf_layout)

    def offline_after_online():
        cdir, _ = fresh_home()
        with Mount(models["tiny"]) as lm:
            with Mount("hf://org/Tiny-Llama") as rm:
                same_trees(lm.mp, rm.mp)
            hub.stop()
            try:
                with Mount("hf://org/Tiny-Llama", opts=["-o", "offline"]) as om:
                    a = same_trees(lm.mp, om.mp)
                os.environ["HF_HUB_OFFLINE"] = "1"
                try:
                    with Mount("hf://org/Tiny-Llama") as om:
                        same_trees(lm.mp, om.mp)
                finally:
                    os.environ.pop("HF_HUB_OFFLINE")
            finally:
                hub.start()
        return a + " offline, nginx stopped (-o offline and HF_HUB_OFFLINE=1)"
    check("netcache: offline after an online mount = the same bytes, nginx stopped", offline_after_online)

    def offline_never():
        fresh_home()
        a = refused_line(["-o", "offline", "hf://org/gg"], "has nothing of this source")
        b = refused_line(["-o", "offline", hub.cdn_url("org/gg", "demo-llama.gguf")], "has nothing of this source")
        return a
    check("netcache: offline, never mounted online: one line, no mount", offline_never)

    def offline_eio():
        fresh_home()
        with Mount("hf://org/big", opts=["-o", "remote_chunk=64K"]) as rm:
            with open(rm.path("b/small"), "rb") as f:
                want = f.read()
        before = len(open(os.path.join(hub.dir, "access.log")).read())
        with Mount("hf://org/big", opts=["-o", "offline"]) as om:
            with open(om.path("b/small"), "rb") as f:
                if f.read() != want:
                    raise Fail("b/small offline: other bytes")
            t0 = time.monotonic()
            expect_eio(om.path("c/big"), "c/big, never fetched, offline")
            waited = time.monotonic() - t0
        if len(open(os.path.join(hub.dir, "access.log")).read()) != before:
            raise Fail("the offline mount sent requests")
        if waited > 5:
            raise Fail("EIO after %.1f s" % waited)
        return "cached tensor read, uncached one EIO after %.2f s, no request sent" % waited
    check("netcache: offline, a chunk not cached: EIO at once, no request", offline_eio)

    def limit_lru():
        cdir = os.path.join(new_dir("lru-"), "c")
        # room for 9 chunk files (64 KiB and their sum): a put of a 10th evicts
        # down to 7/8 of the limit, 2 files at a time
        limit = 640 << 10
        opts = ["-o", "remote_chunk=64K,cache=%s,cache_size=640K,read_ahead_kb=0" % cdir]

        def reading(offs):
            with Mount("hf://org/big", opts=opts) as rm:
                pread_all(rm.path("a/big"), offs)
            total = sum(s for s, _ in cache_files(cdir).values())
            if total > limit:
                raise Fail("the cache holds %d bytes, over the %d limit" % (total, limit))
            return total
        a = [i * 4 * CHUNK for i in range(4)]             # a/big's first chunks, spread
        b = [(8 << 20) + i * 4 * CHUNK for i in range(4)]  # its middle
        reading(a)
        after_a = set(cache_files(cdir))
        time.sleep(0.05)
        reading(b)
        time.sleep(0.05)
        reading(a)  # A used again: B is now the least recently used
        before = cache_files(cdir)
        only_b = set(before) - after_a
        time.sleep(0.05)
        reading([(4 << 20) + i * CHUNK * 4 for i in range(4)])  # enough to go over, not to clear all
        after = cache_files(cdir)
        gone = set(before) - set(after)
        if not gone:
            raise Fail("nothing was evicted (%d files)" % len(after))
        kept = set(before) & set(after)
        newest_gone = max(before[g][1] for g in gone)
        if kept and newest_gone > min(before[k][1] for k in kept):
            raise Fail("a file used more recently was evicted before an older one")
        if not (gone & only_b) or (gone & after_a and only_b - gone):
            raise Fail("B's chunks (least recently used) were not evicted first")
        return "%d evicted (%d of B's %d, %d of A's), all older than the %d kept; <= %d bytes" % (
            len(gone), len(gone & only_b), len(only_b), len(gone & after_a), len(kept), limit)
    check("netcache: cache_size keeps the folder under the limit, least recently used evicted first",
          limit_lru)

    def shared():
        cdir = os.path.join(new_dir("shared-"), "c")
        opts = ["-o", "remote_chunk=64K,cache=%s,cache_size=3M" % cdir]
        errs = []
        with Mount(models["big"]) as lb, Mount(models["chg"]) as lc, \
                Mount("hf://org/big", opts=opts) as rb, Mount("hf://org/chg", opts=opts) as rc:
            def reader(local, remote, names):
                try:
                    for n in names:
                        with open(local.path(n), "rb") as f:
                            x = f.read()
                        with open(remote.path(n), "rb") as f:
                            y = f.read()
                        if x != y:
                            errs.append("%s differs" % n)
                except Exception as e:  # noqa: BLE001 - reported below
                    errs.append(repr(e))
            th = [threading.Thread(target=reader, args=(lb, rb, ["a/big", "c/big"])),
                  threading.Thread(target=reader, args=(lc, rc, ["t%02d" % i for i in range(8)]))]
            for t in th:
                t.start()
            for t in th:
                t.join(300)
        if errs:
            raise Fail("; ".join(errs[:3]))
        n = check_whole(cdir)
        total = sum(s for s, _ in cache_files(cdir).values())
        if total > 3 << 20:
            raise Fail("%d bytes in the cache, over 3M" % total)
        # a third mount of each reads through what is left: the right bytes
        with Mount(models["big"]) as lb, Mount("hf://org/big", opts=opts) as rb:
            with open(lb.path("c/big"), "rb") as f, open(rb.path("c/big"), "rb") as g:
                if f.read() != g.read():
                    raise Fail("c/big read again through the shared cache differs")
        return "both read right, %d whole cache files, %d bytes <= 3M" % (n, total)
    check("netcache: two mounts of different models share one cache folder (small limit): "
          "right bytes, no torn file, under the limit", shared)

    def fetch_whole():
        cdir, hdir = fresh_home()
        r = run(["fetch", "hf://org/Tiny-Llama"])
        if r.returncode != 0 or r.stderr or len(r.stdout.splitlines()) != 1:
            raise Fail("exit %d, stdout %r, stderr %r" % (r.returncode, r.stdout[:200], r.stderr[:300]))
        repo = os.path.join(hdir, "models--org--Tiny-Llama")
        for rel, (size, digest) in hub.repos["org/Tiny-Llama"].items():
            if not is_lfs(rel):
                continue
            p = os.path.join(repo, "snapshots", COMMIT, rel)
            if os.readlink(p) != "../" * rel.count("/") + "../../blobs/" + digest or sha256(p) != digest:
                raise Fail("%s: not its sha256 blob in the hub cache" % rel)
        # weightfs verify checks a hub cache as huggingface_hub lays it out:
        # blobs named by their digests, snapshot links, refs/main
        v = run(["verify", repo])
        if v.returncode != 0:
            raise Fail("weightfs verify of the hub cache: exit %d: %s" % (v.returncode, (v.stdout + v.stderr)[-400:]))
        with Mount(models["tiny"]) as lm:
            hub.stop()
            try:
                with Mount("hf://org/Tiny-Llama", opts=["-o", "offline"]) as om:
                    info = same_trees(lm.mp, om.mp)
            finally:
                hub.start()
        return "%s; hub cache verified; offline: %s" % (r.stdout.decode().strip()[:90], info)
    check("netcache: weightfs fetch fills the cache: an offline mount (nginx stopped) reads every file; "
          "weight files in the hub cache as sha256 blobs; weightfs verify passes the hub cache", fetch_whole)

    def mount_read_whole():
        # a mount that reads a Hub weight file whole leaves it in the Hugging
        # Face cache at its end, as weightfs fetch does; one read in part does not
        cdir, hdir = fresh_home()
        repo = os.path.join(hdir, "models--org--Tiny-Llama")
        lfs = sorted(rel for rel in hub.repos["org/Tiny-Llama"] if is_lfs(rel))
        with Mount("hf://org/Tiny-Llama") as rm:
            with open(rm.path("tensors.json")) as f:
                names = [t["path"] for t in json.load(f)["tensors"]]
            with open(rm.path(names[0]), "rb") as f:
                f.read(4)
        linked = [rel for rel in lfs if os.path.lexists(os.path.join(repo, "snapshots", COMMIT, rel))]
        if linked:
            raise Fail("after a mount that read 4 bytes, in the hub cache: %s" % linked)
        with Mount("hf://org/Tiny-Llama") as rm:
            for name in names:
                with open(rm.path(name), "rb") as f:
                    f.read()
        for rel in lfs:
            size, digest = hub.repos["org/Tiny-Llama"][rel]
            p = os.path.join(repo, "snapshots", COMMIT, rel)
            if not os.path.islink(p) or os.readlink(p) != "../" * rel.count("/") + "../../blobs/" + digest \
                    or sha256(p) != digest:
                raise Fail("%s: not its sha256 blob in the hub cache after a mount read it whole" % rel)
        blobs = os.listdir(os.path.join(repo, "blobs"))
        if any(b.endswith(".incomplete") for b in blobs):
            raise Fail("blobs: %s" % blobs)
        v = run(["verify", repo])
        if v.returncode != 0:
            raise Fail("weightfs verify of the hub cache: exit %d: %s" % (v.returncode, (v.stdout + v.stderr)[-400:]))
        return "%d weight files in the hub cache after one whole read, none after a partial one" % len(lfs)
    check("netcache: a mount that reads a Hub weight file whole puts it in the Hugging Face cache at its end",
          mount_read_whole)

    def fetch_tensor():
        cdir = os.path.join(new_dir("ft-"), "c")
        o = "remote_chunk=64K,cache=" + cdir
        before = hub.sent(uri_part="/org/big/")
        r = run(["fetch", "-o", o, "hf://org/big", "b.small"])
        if r.returncode != 0:
            raise Fail("exit %d: %s" % (r.returncode, r.stderr[:300]))
        small = hub.sent(uri_part="/org/big/") - before
        r = run(["fetch", "-o", o, "hf://org/big", "a.big"])
        if r.returncode != 0:
            raise Fail("exit %d: %s" % (r.returncode, r.stderr[:300]))
        big = hub.sent(uri_part="/org/big/") - before - small
        # a.big's first chunk holds the header too: cached by the first fetch
        if small > 3 * CHUNK or big < (16 << 20) - 2 * CHUNK or big > (16 << 20) + 3 * CHUNK:
            raise Fail("b.small fetched %d bytes, a.big %d" % (small, big))
        with Mount(models["big"]) as lm, Mount("hf://org/big", opts=["-o", "offline,cache=" + cdir]) as om:
            for n in ("a/big", "b/small"):
                with open(lm.path(n), "rb") as f, open(om.path(n), "rb") as g:
                    if f.read() != g.read():
                        raise Fail("%s offline differs" % n)
            try:
                with open(om.path("c/big"), "rb") as f:
                    f.read()
                raise Fail("c/big read offline, never fetched")
            except OSError as e:
                if e.errno != 5:
                    raise Fail("c/big: %s" % e)
        return "b.small: %d bytes fetched, a.big: %d (16 MiB of data); offline: both read, c/big EIO" % (
            small, big)
    check("netcache: weightfs fetch SOURCE TENSOR fetches only that tensor's chunks", fetch_tensor)

    def fetch_tty():
        cdir = os.path.join(new_dir("tty-"), "c")
        m, s = pty.openpty()
        p = subprocess.Popen([wf_harness.BIN, "fetch", "-o", "remote_chunk=64K,remote_streams=2,cache=" + cdir,
                              "hf://org/chg"], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=s)
        os.close(s)
        out = p.communicate(timeout=120)[0]
        err = b""
        while True:
            try:
                chunk = os.read(m, 65536)
            except OSError:
                break
            if not chunk:
                break
            err += chunk
        os.close(m)
        if p.returncode != 0 or b"\r" not in err or b"/s" not in err or b" / " not in err:
            raise Fail("exit %d; terminal got %r" % (p.returncode, err[:200]))
        return "progress redrawn in place (%d bytes to the terminal), summary: %s" % (
            len(err), out.decode().strip()[:60])
    check("netcache: weightfs fetch on a terminal draws a progress line in place", fetch_tty)

    def fetch_fail():
        r = run(["fetch", "hf://org/big", "no.such"])
        r2 = run(["fetch", "hf://org/nope"])
        r3 = run(["fetch", models["big"]])
        for x in (r, r2, r3):
            if x.returncode == 0 or len(x.stderr.splitlines()) != 1:
                raise Fail("exit %d, stderr %r" % (x.returncode, x.stderr[:300]))
        return "; ".join(x.stderr.decode().strip()[:50] for x in (r, r2, r3))
    check("netcache: weightfs fetch failures: one line, non-zero exit", fetch_fail)
