"""Group net: hf:// and http(s):// sources (src/net/, docs/remote.md) against a
real HTTP server on loopback: the test Hub of wf_hub.py (Debian's nginx serving
a hub-shaped tree from a test folder), a fault proxy in front of its CDN.
"""

import json
import os
import shutil
import socket
import subprocess
import sys
import time

import numpy as np

import wf_harness
from wf_harness import Fail, Mount, check, expect_eio, expect_eio_after_change, free_port, new_dir, sha256_file as sha256, skip_or_fail
from st_file import st_bytes
from wf_hub import COMMIT, NGINX, TOKEN, Hub, is_lfs

CLIENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clients")
STAGE = [None]  # the TMPDIR the daemons stage sources in: empty once they are gone


class FaultProxy:
    """A proxy in front of the CDN that answers as told (self.mode): "ok"
    passes through; "range" shifts Content-Range by one byte; "short" sends
    half the body and closes; "200" answers 200 with the whole file to a
    range; "503" answers 503 with Retry-After: 1 to the next self.left
    requests; "reset" closes the next self.left connections unanswered."""

    def __init__(self, port):
        import http.server
        import threading
        proxy = self
        self.mode, self.left, self.port, self.seen = "ok", 0, free_port(), []
        self.passes = 0  # requests passed through before the mode applies
        lock = threading.Lock()

        class H(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.0"

            def log_message(self, *a):
                pass

            def do_GET(self):
                import http.client
                mode = proxy.mode
                with lock:
                    if proxy.passes > 0:
                        proxy.passes -= 1
                        mode = "ok"
                if mode in ("503", "reset"):
                    if proxy.left > 0:
                        proxy.left -= 1
                        proxy.seen.append(mode)
                        if mode == "reset":
                            self.connection.shutdown(socket.SHUT_RDWR)
                            self.close_connection = True
                            return
                        self.send_response(503)
                        self.send_header("Retry-After", "1")
                        self.send_header("Content-Length", "0")
                        self.end_headers()
                        return
                    mode = "ok"
                hd = {k: v for k, v in self.headers.items() if k.lower() in ("range", "if-match")}
                if mode == "200":
                    hd.pop("Range", None)
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", self.path, headers=hd)
                r = c.getresponse()
                body = r.read()
                c.close()
                self.send_response(r.status)
                for k, v in r.getheaders():
                    if k.lower() in ("etag", "content-range", "last-modified", "content-type"):
                        if k.lower() == "content-range" and mode == "range":
                            a, b = v.split(" ")[1].split("/")[0].split("-")
                            v = "bytes %d-%d/%s" % (int(a) + 1, int(b) + 1, v.split("/")[1])
                        self.send_header(k, v)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body[:len(body) // 2] if mode == "short" else body)
                if mode == "short":
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                    self.close_connection = True

        class Quiet(http.server.ThreadingHTTPServer):
            def handle_error(self, request, client_address):
                pass  # weightfs hanging up on a short body is the point

        self.srv = Quiet(("127.0.0.1", self.port), H)
        self.srv.daemon_threads = True
        self.thr = threading.Thread(target=self.srv.serve_forever, daemon=True)
        self.thr.start()

    def stop(self):
        self.srv.shutdown()
        self.srv.server_close()


def cdn_lines(hub, part):
    """The CDN's access-log lines (port, method, URI, status, bytes) for URIs with part."""
    with open(os.path.join(hub.dir, "access.log")) as f:
        return [w for w in (ln.split() for ln in f) if len(w) >= 5 and w[0] == str(hub.cdn_port) and part in w[2]]


def walk_files(mp):
    out = {}
    for root, dirs, names in os.walk(mp):
        dirs.sort()
        for n in names:
            p = os.path.join(root, n)
            out[os.path.relpath(p, mp)] = p
    return out


def same_trees(local_mp, remote_mp):
    a, b = walk_files(local_mp), walk_files(remote_mp)
    if sorted(a) != sorted(b):
        raise Fail("file lists differ: only local %s, only remote %s"
                   % (sorted(set(a) - set(b))[:5], sorted(set(b) - set(a))[:5]))
    bad = []
    for rel in sorted(a):
        with open(a[rel], "rb") as f:
            x = f.read()
        with open(b[rel], "rb") as f:
            y = f.read()
        if x != y:
            bad.append(rel)
    if bad:
        raise Fail("%d of %d files differ: %s" % (len(bad), len(a), bad[:5]))
    return "%d files identical" % len(a)


def env_hub(hub):
    os.environ["HF_ENDPOINT"] = hub.url() + "/"
    for k in ("HF_TOKEN", "HF_HUB_OFFLINE", "HUGGING_FACE_HUB_TOKEN"):
        os.environ.pop(k, None)
    os.environ["HF_TOKEN_PATH"] = "/nonexistent/token"
    os.environ["TMPDIR"] = STAGE[0] = new_dir("stage-")
    # the default cache folders (weightfs's and the Hub's): the test's own
    os.environ["XDG_CACHE_HOME"] = new_dir("xdg-")
    os.environ["HF_HOME"] = new_dir("hfhome-")


def refused(src, want):
    mp = new_dir()
    r = subprocess.run([wf_harness.BIN, "-f", src, mp], stdin=subprocess.DEVNULL,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    err = r.stderr.decode(errors="replace")
    lines = [l for l in err.splitlines() if l.strip()]
    if r.returncode == 0:
        raise Fail("%s mounted (exit 0)" % src)
    if len(lines) != 1 or want not in lines[0]:
        raise Fail("%s: want one line with %r, got %r" % (src, want, err[:400]))
    with open("/proc/self/mountinfo") as f:
        if mp in f.read():
            raise Fail("%s: something is mounted at %s" % (src, mp))
    return lines[0]


def make_models(base):
    sys.path.insert(0, CLIENTS)
    import tiny_models
    import real_tokenizers
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    tiny = tiny_models.make(os.path.join(base, "Tiny-Llama"), "llama", tdir, shards=2)
    gg = os.path.join(base, "gg")
    os.makedirs(gg)
    src = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "demo",
                       "demo-llama.gguf")
    shutil.copyfile(src, os.path.join(gg, "demo-llama.gguf"))
    # a large file with one small tensor: what one small read fetches
    big = os.path.join(base, "big")
    os.makedirs(big)
    rng = np.random.default_rng(7)
    t = {"a.big": ("F32", (1024, 4096), rng.standard_normal((1024, 4096), dtype=np.float32).tobytes()),
         "b.small": ("F32", (16,), np.arange(16, dtype=np.float32).tobytes()),
         "c.big": ("F32", (1024, 4096), rng.standard_normal((1024, 4096), dtype=np.float32).tobytes())}
    with open(os.path.join(big, "model.safetensors"), "wb") as f:
        f.write(st_bytes(t))
    chg = os.path.join(base, "chg")
    os.makedirs(chg)
    t = {"t%02d" % i: ("F32", (256, 1024), rng.standard_normal((256, 1024), dtype=np.float32).tobytes())
         for i in range(8)}
    with open(os.path.join(chg, "model.safetensors"), "wb") as f:
        f.write(st_bytes(t))
    return tiny, gg, big, chg


def group_net():
    if not os.path.exists(NGINX):
        skip_or_fail("no nginx (apt-get install nginx)")
    base = new_dir("netmodels-")
    models = {}

    def build():
        models["tiny"], models["gg"], models["big"], models["chg"] = make_models(base)
    if not check("net: test models made", build):
        return
    hub = Hub()
    hub.add("org/Tiny-Llama", models["tiny"])
    hub.add("org/gg", models["gg"])
    hub.add("org/big", models["big"])
    hub.add("org/chg", models["chg"])
    hub.add("org/gated", models["gg"], gated=True)
    hub.add("org/broken", models["gg"], missing=("config.json",))
    hub.add("org/private", models["tiny"], private=True)
    hub.add("org/wrongsum", models["gg"], wrong_oid=("demo-llama.gguf",))
    try:
        if not check("net: nginx started", hub.start):
            return
        env_hub(hub)
        run_checks(hub, models)
    finally:
        hub.stop()
        for k in ("HF_ENDPOINT", "HF_TOKEN_PATH", "TMPDIR", "XDG_CACHE_HOME", "HF_HOME"):
            os.environ.pop(k, None)

    def staged_gone():
        left = os.listdir(STAGE[0]) if STAGE[0] else []
        if left:
            raise Fail("staging folders left behind: %s" % left[:5])
    check("net: every daemon removed its staging folder", staged_gone)

    def stopped():
        if hub.proc is not None or os.path.exists(os.path.join(hub.dir, "nginx.pid")):
            raise Fail("nginx left behind (pid file %s)" % os.path.join(hub.dir, "nginx.pid"))
    check("net: nginx stopped, nothing left", stopped)


def wf_run(args, timeout=120):
    r = subprocess.run([wf_harness.BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    return r.returncode, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def run_verify(hub, models):
    def intact():
        code, out, err = wf_run(["verify", "hf://org/Tiny-Llama"])
        if code != 0:
            raise Fail("exit %d: %s %s" % (code, out[-300:], err[-300:]))
        meta = hub.repos["org/Tiny-Llama"]
        for rel in meta:
            want = "%s: matches the %s the Hub lists" % (rel, "SHA-256" if is_lfs(rel) else "git blob id")
            if rel.endswith(".json") and want not in out:
                raise Fail("no line %r in %r" % (want, out[:600]))
            if is_lfs(rel) and want not in out:
                raise Fail("no line %r in %r" % (want, out[:600]))
        n_lfs = sum(1 for rel in meta if is_lfs(rel))
        code, js, err = wf_run(["verify", "--json", "hf://org/Tiny-Llama"])
        j = json.loads(js)
        if code != 0 or j["model"] != "hf://org/Tiny-Llama" or j["verdict"] != "intact":
            raise Fail("--json: exit %d, model %r, verdict %r" % (code, j.get("model"), j.get("verdict")))
        if STAGE[0] in js:
            raise Fail("--json names the staging folder %s" % STAGE[0])
        lfs = [f for f in j["source"]["files"] if f["digest"] == "sha256"]
        if len(lfs) != n_lfs or any(f["verdict"] != "intact" or f["listed"] != meta[f["name"]][1] for f in lfs):
            raise Fail("--json source files: %r" % j["source"]["files"][:4])
        for f in j["files"]:
            if f["path"] != "hf://org/Tiny-Llama/" + f["name"]:
                raise Fail("--json names %s by %r, not by its path in the source" % (f["name"], f["path"]))
            if f["sha256"] != meta[f["name"]][1]:
                raise Fail("%s: sha256 %s, the file's is %s" % (f["name"], f["sha256"], meta[f["name"]][1]))
        return "exit 0, %d LFS files matched their sha256, %d files their git blob id" % (
            n_lfs, len(j["source"]["files"]) - n_lfs)
    check("net: verify hf:// of an intact repo: every LFS file against its listed sha256, exit 0", intact)

    def wrong():
        code, out, err = wf_run(["verify", "hf://org/wrongsum"])
        lines = [l for l in out.splitlines() if "demo-llama.gguf" in l and "the Hub lists" in l]
        if code != 1 or len(lines) != 1 or "matches" in lines[0]:
            raise Fail("exit %d, want 1 naming demo-llama.gguf: %r %r" % (code, out[-400:], err[-300:]))
        code, js, err = wf_run(["verify", "--json", "hf://org/wrongsum"])
        j = json.loads(js)
        bad = [f["name"] for f in j["source"]["files"] if f["verdict"] != "intact"]
        if code != 1 or j["verdict"] != "differs" or bad != ["demo-llama.gguf"]:
            raise Fail("--json: exit %d, verdict %r, files not intact %r" % (code, j["verdict"], bad))
        return lines[0][:120]
    check("net: verify hf:// whose LFS file differs from the listed sha256: exit 1 naming it", wrong)

    def failing():
        px = FaultProxy(hub.cdn_port)
        url = "http://127.0.0.1:%d/org/big/%s/model.safetensors" % (px.port, COMMIT)
        try:
            # the pinning request and the header's chunk pass, then every
            # connection is reset: the hashing meets a dead server
            px.mode, px.left, px.passes = "reset", 10 ** 6, 2
            t0 = time.monotonic()
            code, out, err = wf_run(["verify", url], timeout=300)
            took = time.monotonic() - t0
        finally:
            px.stop()
        mine = [l for l in err.splitlines() if l.strip() and "reads fail with EIO until it answers" not in l]
        if code != 2 or "intact" in out or "DIFFERS" in out:
            raise Fail("exit %d, want 2: %r %r" % (code, out[-300:], err[-300:]))
        if len(mine) != 1 or "model.safetensors: cannot be read" not in mine[0]:
            raise Fail("want one line naming model.safetensors as unread (after its header), got %r" % mine)
        if px.passes:
            raise Fail("the header was not read (%d passes left)" % px.passes)
        return "exit 2 after %.1f s: %s" % (took, mine[0][:100])
    check("net: verify of a server failing mid-verify: exit 2, one line, never a verdict", failing)

    def one_url():
        code, out, err = wf_run(["verify", hub.cdn_url("org/gg", "demo-llama.gguf")])
        want = sha256(os.path.join(models["gg"], "demo-llama.gguf"))
        if code != 0 or "%s  demo-llama.gguf" % want not in out:
            raise Fail("exit %d: %r %r" % (code, out[-300:], err[-300:]))
        if "demo-llama.gguf: no digest published" not in out:
            raise Fail("does not say demo-llama.gguf had no digest to check against: %r" % out[-300:])
        return "exit 0, sha256 as sha256sum's, no digest published said"
    check("net: verify of an http:// single file: exit 0", one_url)

    def manifests():
        d = new_dir("manifest-")
        man = os.path.join(d, "remote.json")
        code, out, err = wf_run(["verify", "--write", man, "hf://org/Tiny-Llama"])
        if code != 0:
            raise Fail("--write on hf://: exit %d: %r" % (code, err[-300:]))
        code, out, err = wf_run(["verify", "--against", man, models["tiny"]])
        if code != 0:
            raise Fail("--against on the local folder: exit %d: %r %r" % (code, out[-300:], err[-300:]))
        loc = os.path.join(d, "local.json")
        code, _, err = wf_run(["verify", "--write", loc, models["tiny"]])
        if code != 0 or sha256(loc) != sha256(man):
            raise Fail("the local folder's manifest differs from the hf:// one (exit %d)" % code)
        code, out, err = wf_run(["verify", "--against", loc, "hf://org/Tiny-Llama"])
        if code != 0:
            raise Fail("--against on hf://: exit %d: %r" % (code, out[-300:]))
        return "hf:// and the local folder write byte-identical manifests; each verifies against the other"
    check("net: verify --write on hf://, --against on the local folder (and back) agree", manifests)


def run_checks(hub, models):
    def folder():
        with Mount(models["tiny"]) as lm, Mount("hf://org/Tiny-Llama") as rm:
            return same_trees(lm.mp, rm.mp)
    check("net: hf:// sharded safetensors folder = the local mount, every file", folder)

    def daemonized():
        # no -f: the daemon forks after the header was fetched; the fetch
        # threads are made again in the child (wf_remote_after_fork)
        mp = new_dir()
        r = subprocess.run([wf_harness.BIN, "hf://org/Tiny-Llama", mp], stdin=subprocess.DEVNULL,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise Fail("exit %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[:300]))
        try:
            with Mount(models["tiny"]) as lm:
                info = same_trees(lm.mp, mp)
        finally:
            pids = wf_harness.daemon_pid(mp)
            subprocess.run(["fusermount3", "-u", mp], timeout=30)
            t0 = time.monotonic()
            while any(os.path.exists("/proc/%d" % p) for p in pids) and time.monotonic() - t0 < 10:
                for p in pids:
                    wf_harness.wait_pid(p, 0.05)
        return info
    check("net: hf:// mounted as a daemon (forked) = the local mount", daemonized)

    def gguf_repo():
        with Mount(models["gg"]) as lm, Mount("hf://org/gg@main") as rm:
            return same_trees(lm.mp, rm.mp)
    check("net: hf:// GGUF repo = the local mount, every file", gguf_repo)

    def commands():
        out = []
        for cmd in (["ls"], ["info"], ["cat", "output_norm.weight"], ["stats", "output_norm.weight"]):
            got = {}
            for src in ("hf://org/gg", models["gg"]):
                r = subprocess.run([wf_harness.BIN, cmd[0], src] + cmd[1:], stdin=subprocess.DEVNULL,
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
                if r.returncode != 0:
                    raise Fail("weightfs %s %s: exit %d: %s" % (cmd[0], src, r.returncode, r.stderr[:300]))
                got[src] = r.stdout
            if got["hf://org/gg"] != got[models["gg"]] or not got[models["gg"]]:
                raise Fail("weightfs %s: hf:// and the local folder print different things" % cmd[0])
            out.append(cmd[0])
        conv = {}
        for src in ("hf://org/gg", models["gg"]):
            dst = os.path.join(new_dir("conv-"), "out.gguf")
            r = subprocess.run([wf_harness.BIN, "convert", "-o", "gguf=q8_0", src, dst], stdin=subprocess.DEVNULL,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
            if r.returncode != 0:
                raise Fail("weightfs convert %s: exit %d: %s" % (src, r.returncode, r.stderr[:300]))
            conv[src] = sha256(dst)
        if conv["hf://org/gg"] != conv[models["gg"]]:
            raise Fail("weightfs convert: hf:// and the local folder give different files")
        out.append("convert")
        return ", ".join(out) + " identical"
    check("net: commands take hf:// (ls, info, cat, stats, convert = the local folder's)", commands)

    run_verify(hub, models)

    def single_url():
        f = os.path.join(models["gg"], "demo-llama.gguf")
        with Mount(f) as lm, Mount(hub.cdn_url("org/gg", "demo-llama.gguf")) as rm:
            return same_trees(lm.mp, rm.mp)
    check("net: http:// single GGUF file = the local mount, every file", single_url)

    def ranges():
        before = hub.sent(uri_part="/org/big/")
        with Mount("hf://org/big", opts=["-o", "remote_chunk=64K"]) as rm:
            with open(rm.path("b/small"), "rb") as f:
                got = np.frombuffer(f.read(), dtype=np.float32)
            if not np.array_equal(got, np.arange(16, dtype=np.float32)):
                raise Fail("b/small read %r" % got[:4])
        sent = hub.sent(uri_part="/org/big/") - before
        size = os.path.getsize(os.path.join(models["big"], "model.safetensors"))
        if sent > 4 * 65536:
            raise Fail("the server sent %d bytes of a %d-byte file for a header and a 64-byte tensor"
                       % (sent, size))
        return "%d of %d bytes fetched (%.2f%%)" % (sent, size, 100.0 * sent / size)
    check("net: one small tensor of a 32 MiB file fetches only its ranges", ranges)

    def one_request_per_shard():
        # the probe that pins a weight file brings its first chunk: one CDN
        # request per shard at mount (not a 1-byte probe, then the header),
        # and the listings made from the headers need no other
        before = len(cdn_lines(hub, "/org/Tiny-Llama/"))
        shards = sorted(n for n in os.listdir(models["tiny"]) if n.endswith(".safetensors"))
        with Mount("hf://org/Tiny-Llama", opts=["-o", "cache=none"]) as rm:
            at_mount = cdn_lines(hub, "/org/Tiny-Llama/")[before:]
            # every file's size and the listings parsed from the headers
            for name, path in walk_files(rm.mp).items():
                os.stat(path)
            for name in ("tensors.json", "metadata.json"):
                with open(rm.path(name), "rb") as f:
                    f.read()
            after = cdn_lines(hub, "/org/Tiny-Llama/")[before:]
        per = {n: [w for w in at_mount if w[2].endswith("/" + n)] for n in shards}
        bad = {n: len(v) for n, v in per.items() if len(v) != 1}
        if bad:
            raise Fail("CDN requests per shard at mount: %r (want 1 each)" % bad)
        for n, v in per.items():
            size = os.path.getsize(os.path.join(models["tiny"], n))
            if int(v[0][4]) != min(size, 4 << 20):
                raise Fail("%s: the probe brought %s bytes, want the first chunk (%d)"
                           % (n, v[0][4], min(size, 4 << 20)))
        if len(after) != len(at_mount):
            raise Fail("reading the listings made %d more CDN requests: %r"
                       % (len(after) - len(at_mount), after[len(at_mount):]))
        return "%d shards, %d CDN requests at mount, none after" % (len(shards), len(at_mount))
    check("net: mounting fetches each shard's first chunk in the pinning request, nothing twice",
          one_request_per_shard)

    def heads_past_remote_mem():
        # first chunks past remote_mem: the probe brings a 256 KiB head of the
        # shard (most headers fit), placed as whole pages; a read past it
        # fetches chunk 0 whole, and every byte is the local mount's
        before = len(cdn_lines(hub, "/org/Tiny-Llama/"))
        opts = ["-o", "cache=none,remote_chunk=4M,remote_mem=4M"]
        with Mount(models["tiny"]) as lm, Mount("hf://org/Tiny-Llama", opts=opts) as rm:
            sizes = sorted(int(w[4]) for w in cdn_lines(hub, "/org/Tiny-Llama/")[before:])
            if sizes != [256 << 10, 4 << 20]:
                raise Fail("bytes of the probes at mount: %r (want a 256 KiB head and a 4 MiB chunk)" % sizes)
            return same_trees(lm.mp, rm.mp)
    check("net: first chunks past remote_mem: a head of each, the rest fetched when read", heads_past_remote_mem)

    def cache():
        cdir = os.path.join(new_dir("cache-"), "c")
        opts = ["-o", "remote_chunk=64K,cache=" + cdir]

        def read_small():
            before = hub.sent(uri_part="/org/big/")
            with Mount("hf://org/big", opts=opts) as rm:
                with open(rm.path("b/small"), "rb") as f:
                    got = np.frombuffer(f.read(), dtype=np.float32)
            if not np.array_equal(got, np.arange(16, dtype=np.float32)):
                raise Fail("b/small read %r" % got[:4])
            return hub.sent(uri_part="/org/big/") - before
        first = read_small()
        second = read_small()
        if first < 65536 or second > 16:
            raise Fail("first mount fetched %d bytes, the second %d (want only the pinning byte)"
                       % (first, second))
        # a torn chunk (a crash while it was written, a full disk) is fetched again, never served
        files = [os.path.join(r, n) for r, _, ns in os.walk(cdir) for n in ns]
        for p in files:
            with open(p, "r+b") as f:
                f.truncate(os.path.getsize(p) // 2)
        third = read_small()
        if third < 65536:
            raise Fail("torn cache chunks were not fetched again (%d bytes fetched)" % third)
        return "fetched %d, then %d bytes; %d after tearing %d chunk files" % (first, second, third, len(files))
    check("net: -o cache=DIR: a second mount reads from disk; torn chunks fetched again", cache)

    check("net: missing repo: one line, no mount", refused, "hf://org/nope", "no repository org/nope")
    check("net: missing revision: one line, no mount", refused, "hf://org/gg@v9", "has no revision v9")
    check("net: gated repo, anonymous: one line, no mount", refused, "hf://org/gated", "gated: log in")

    def gated_token():
        os.environ["HF_TOKEN"] = "hf_not_approved"
        try:
            return refused("hf://org/gated", "not granted access")
        finally:
            os.environ.pop("HF_TOKEN")
    check("net: gated repo, token not approved (403): one line, no mount", gated_token)
    check("net: missing file: one line, no mount", refused, "hf://org/broken", "has no file config.json")
    check("net: missing subfolder: one line, no mount", refused, "hf://org/gg/nosub", "no model files")

    check("net: private repo without a token: one line, no mount", refused, "hf://org/private",
          "no repository org/private")

    def private():
        # the token file as huggingface_hub writes it, blanks around; kept off the CDN's host
        tok = os.path.join(new_dir("tok-"), "token")
        with open(tok, "w") as f:
            f.write("  %s\n" % TOKEN)
        os.environ["HF_TOKEN_PATH"] = tok
        try:
            # a folder named as the repo: model.gguf's general.name comes from it
            local = os.path.join(new_dir("priv-"), "private")
            shutil.copytree(models["tiny"], local)
            with Mount(local) as lm, Mount("hf://org/private") as rm:
                return same_trees(lm.mp, rm.mp)
        finally:
            os.environ["HF_TOKEN_PATH"] = "/nonexistent/token"
    check("net: private repo with the token file = the local mount (no token sent to the CDN)", private)

    def offline():
        # a repository never mounted online: nothing in the cache to serve
        os.environ["HF_HUB_OFFLINE"] = "1"
        try:
            return refused("hf://org/nope", "has nothing of this source")
        finally:
            os.environ.pop("HF_HUB_OFFLINE")
    check("net: HF_HUB_OFFLINE, a source never mounted online: one line, no mount", offline)

    def changed():
        path = os.path.join(hub.cdn, "org/chg", COMMIT, "model.safetensors")
        with Mount("hf://org/chg", opts=["-o", "remote_chunk=64K"]) as rm:
            def replace(data):
                with open(path + ".new", "wb") as f:
                    f.write(data)
                os.utime(path + ".new", (time.time() + 5, time.time() + 5))
                os.rename(path + ".new", path)
            expect_eio_after_change(rm, path, replace, "a file changed on the server")
            os.listdir(rm.mp)
        return "EIO and one notice"
    check("net: a file changed on the server: EIO, never other bytes", changed)

    def faults():
        px = FaultProxy(hub.cdn_port)
        url = "http://127.0.0.1:%d/org/big/%s/model.safetensors" % (px.port, COMMIT)
        out = []
        try:
            with Mount(models["big"]) as lm, Mount(url, opts=["-o", "remote_chunk=64K"]) as rm:
                lf, rf = os.open(lm.path("a/big"), os.O_RDONLY), os.open(rm.path("a/big"), os.O_RDONLY)
                try:
                    for i, (mode, left, want_ok) in enumerate(
                            [("range", 0, False), ("short", 0, False), ("200", 0, False),
                             ("503", 2, True), ("reset", 2, True), ("ok", 0, True)]):
                        px.mode, px.left = mode, left
                        off = (i + 1) * (2 << 20)
                        try:
                            got = os.pread(rf, 4096, off)
                        except OSError as e:
                            if want_ok or e.errno != 5:
                                raise Fail("%s: %s" % (mode, e))
                            out.append("%s EIO" % mode)
                            continue
                        if not want_ok:
                            raise Fail("%s: read %d bytes, want EIO" % (mode, len(got)))
                        if got != os.pread(lf, 4096, off):
                            raise Fail("%s: other bytes than the local mount's" % mode)
                        if left and px.left:
                            raise Fail("%s: the faults were not met (%d left)" % (mode, px.left))
                        out.append("%s ok" % mode)
                    px.mode = "ok"
                    whole = os.pread(rf, 1 << 20, 3 << 20)
                    if whole != os.pread(lf, 1 << 20, 3 << 20):
                        raise Fail("after the faults, a range reads other bytes than the local mount's")
                finally:
                    os.close(lf)
                    os.close(rf)
        finally:
            px.stop()
        return ", ".join(out)
    check("net: faults from a proxy (wrong Content-Range, short body, 200 to a range: EIO; "
          "503 + Retry-After, resets: retried, right bytes)", faults)

    def dead_server():
        f = os.path.join(models["big"], "model.safetensors")
        with Mount(hub.cdn_url("org/big", "model.safetensors"), opts=["-o", "remote_chunk=64K"]) as rm:
            with open(rm.path("b/small"), "rb") as fh:
                fh.read()
            hub.stop()
            t0 = time.monotonic()
            expect_eio(rm.path("c/big"), "c/big with the server down")
            waited = time.monotonic() - t0
            if not os.listdir(rm.mp):
                raise Fail("the mount lists nothing while the server is down")
            hub.start()
            with open(rm.path("c/big"), "rb") as fh:
                got = fh.read()
        with Mount(f) as lm, open(lm.path("c/big"), "rb") as fh:
            if fh.read() != got:
                raise Fail("c/big read after the server came back differs from the local mount")
        return "EIO after %.1f s, then served again" % waited
    check("net: a dead server: EIO, the mount stays up and serves again", dead_server)
