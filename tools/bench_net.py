"""Part 27 of `make bench` (--parts net): remote sources over a path with
round-trip time (docs/remote.md, docs/performance.md).

A hub-shaped nginx on loopback (tests/mount/wf_hub.py's Hub) sits behind a
delaying proxy of ours, one for the Hub's API and one for its "CDN": each
direction of each connection holds data back RTT/2, and a stream carries at
most WINDOW bytes per round trip, as a TCP window caps one stream on a real
long path (this kernel has no netem).  At each RTT (0, 20 and 100 ms):
  a. mounting a 100-shard safetensors folder (hf://), in round trips;
  b. a first read of one big tensor through the mount (1 MiB reads) against
     a single-stream `curl` of the same bytes and `aria2c -x 8` of the file
     whole (when aria2 is installed), all through the same proxy;
  c. the same read again from -o cache=DIR in a new mount, against a local
     mount of the same file, page cache dropped for both.
Medians of --runs runs, the sides alternated.
"""
import os
import shutil
import socket
import subprocess
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1 << 20
WINDOW = 4 * MiB


class DelayProxy:
    """127.0.0.1:port -> 127.0.0.1:upstream, RTT/2 each way, WINDOW bytes a round trip per stream,
    and a new connection's first RTT spent before any byte passes (TCP's handshake: on loopback
    connect() returns at once, so a client that opens a connection per request would pay nothing
    for it here, where it pays a round trip on a real path).

    One asyncio loop in a thread of its own: a thread per connection and
    direction made the proxy itself the bottleneck (the GIL's 5 ms switch
    interval times the threads runnable) once 16 connections were open."""

    def __init__(self, upstream, rtt):
        import asyncio
        self.upstream, self.delay = upstream, rtt / 2.0
        self.cap = WINDOW // 2  # bytes held back per direction: WINDOW per RTT
        self.loop = asyncio.new_event_loop()
        ready = threading.Event()

        def run():
            asyncio.set_event_loop(self.loop)
            self.srv = self.loop.run_until_complete(asyncio.start_server(self._conn, "127.0.0.1", 0, backlog=512))
            self.port = self.srv.sockets[0].getsockname()[1]
            ready.set()
            self.loop.run_forever()
        self.thr = threading.Thread(target=run, daemon=True)
        self.thr.start()
        ready.wait(10)

    async def _conn(self, cr, cw):
        import asyncio
        await asyncio.sleep(2 * self.delay)  # the handshake's round trip
        try:
            ur, uw = await asyncio.open_connection("127.0.0.1", self.upstream)
        except OSError:
            cw.close()
            return
        for w in (cw, uw):
            sock = w.get_extra_info("socket")
            if sock is not None:
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        await asyncio.gather(self._pipe(cr, uw), self._pipe(ur, cw), return_exceptions=True)
        for w in (cw, uw):
            w.close()

    async def _pipe(self, r, w):
        import asyncio
        q = asyncio.Queue()
        held = [0]
        room = asyncio.Event()
        room.set()

        async def reader():
            while True:
                await room.wait()
                try:
                    b = await r.read(256 << 10)
                except (OSError, asyncio.IncompleteReadError):
                    b = b""
                held[0] += len(b)
                if held[0] >= self.cap:
                    room.clear()
                await q.put((self.loop.time() + self.delay, b))
                if not b:
                    return

        async def writer():
            while True:
                due, b = await q.get()
                wait = due - self.loop.time()
                if wait > 0:
                    await asyncio.sleep(wait)
                held[0] -= len(b)
                if held[0] < self.cap:
                    room.set()
                try:
                    if not b:
                        if w.can_write_eof():
                            w.write_eof()
                        return
                    w.write(b)
                    await w.drain()
                except OSError:
                    return
        await asyncio.gather(reader(), writer(), return_exceptions=True)

    def stop(self):
        import asyncio

        async def end():
            self.srv.close()
            me = asyncio.current_task()
            tasks = [t for t in asyncio.all_tasks() if t is not me]
            for t in tasks:
                t.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        asyncio.run_coroutine_threadsafe(end(), self.loop).result(10)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thr.join(10)
        self.loop.close()


def st_file(path, tensors):
    """A safetensors file of F32 tensors {name: n_floats}, values made cheaply."""
    import json
    hdr, off = {}, 0
    for name, n in tensors.items():
        hdr[name] = {"dtype": "F32", "shape": [n], "data_offsets": [off, off + 4 * n]}
        off += 4 * n
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(len(h).to_bytes(8, "little") + h)
        for name, n in tensors.items():
            piece = (bytes(range(256)) * 4096)[: 4 * min(n, 1 << 18)]
            left = 4 * n
            while left:
                k = min(left, len(piece))
                f.write(piece[:k])
                left -= k


def make_repos(base, big_mib, shards):
    import json
    sh = os.path.join(base, "shards")
    os.makedirs(sh)
    index = {"metadata": {"total_size": 0}, "weight_map": {}}
    for i in range(shards):
        name = "model-%05d-of-%05d.safetensors" % (i + 1, shards)
        st_file(os.path.join(sh, name), {"layers.%d.weight" % i: 64 << 10})
        index["weight_map"]["layers.%d.weight" % i] = name
        index["metadata"]["total_size"] += 4 * (64 << 10)
    with open(os.path.join(sh, "model.safetensors.index.json"), "w") as f:
        json.dump(index, f)
    big = os.path.join(base, "big")
    os.makedirs(big)
    st_file(os.path.join(big, "model.safetensors"), {"w": big_mib * MiB // 4})
    return sh, big


def drop_caches():
    if os.geteuid() == 0:
        os.sync()
        with open("/proc/sys/vm/drop_caches", "w") as f:
            f.write("3")


class WfMount:
    def __init__(self, binary, src, mp, opts=()):
        self.mp = mp
        os.makedirs(mp, exist_ok=True)
        self.err = open(mp + ".err", "wb")
        t0 = time.perf_counter()
        self.p = subprocess.Popen([binary, "-f"] + list(opts) + [src, mp], stdin=subprocess.DEVNULL,
                                  stdout=subprocess.DEVNULL, stderr=self.err)
        while not os.path.ismount(mp):
            if self.p.poll() is not None:
                self.err.close()
                raise SystemExit("bench: weightfs %s exited: %s" % (src, open(mp + ".err").read()[-400:]))
            if time.perf_counter() - t0 > 300:
                raise SystemExit("bench: %s not mounted after 300 s" % src)
            time.sleep(0.002)
        os.stat(mp)
        self.t = time.perf_counter() - t0

    def close(self):
        subprocess.run(["fusermount3", "-u", self.mp], check=False)
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
        self.err.close()


def read_all(path):
    t0 = time.perf_counter()
    n = 0
    buf = bytearray(MiB)
    with open(path, "rb", buffering=0) as f:
        while True:
            k = f.readinto(buf)
            if not k:
                break
            n += k
    return time.perf_counter() - t0, n


def med(v):
    v = sorted(v)
    return v[len(v) // 2] if len(v) % 2 else (v[len(v) // 2 - 1] + v[len(v) // 2]) / 2


def part_net(args):
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests", "mount"))
    import wf_harness
    wf_harness.TMP = args.dir
    from wf_hub import Hub, COMMIT, NGINX
    if not os.path.exists(NGINX):
        return {"note": "skipped: nginx is not installed"}
    quick = args.quick
    big_mib, shards = (64, 100) if quick else (256, 100)
    rtts = (0.0, 0.02) if quick else (0.0, 0.02, 0.1)
    runs = 1 if quick else max(3, args.runs)
    base = os.path.join(args.dir, "net")
    os.makedirs(base, exist_ok=True)
    sh, big = make_repos(base, big_mib, shards)
    hub = Hub()
    hub.add("org/shards", sh)
    hub.add("org/big", big)
    aria = shutil.which("aria2c")
    res = {"window_mib": WINDOW // MiB, "big_mib": big_mib, "shards": shards, "runs": runs, "rtt": {}}
    bigfile = os.path.join(big, "model.safetensors")
    hdr = int.from_bytes(open(bigfile, "rb").read(8), "little") + 8
    size = os.path.getsize(bigfile)
    try:
        for rtt in rtts:
            hp, cp = DelayProxy(hub.port, rtt), DelayProxy(hub.cdn_port, rtt)
            hub.stop()
            hub.cdn_public = cp.port
            hub.start()
            env_saved = {k: os.environ.get(k) for k in ("HF_ENDPOINT", "HF_TOKEN_PATH", "TMPDIR")}
            os.environ["HF_ENDPOINT"] = "http://127.0.0.1:%d" % hp.port
            os.environ["HF_TOKEN_PATH"] = "/nonexistent"
            os.environ["TMPDIR"] = base
            r = {"mount_s": [], "mount_requests": [], "wf_s": [], "curl_s": [], "aria_s": [], "cached_s": [],
                 "local_s": []}
            try:
                for run in range(runs):
                    # a. the 100-shard folder's mount
                    with open(os.path.join(hub.dir, "access.log")) as f:
                        before = sum(1 for _ in f)
                    m = WfMount(args.weightfs, "hf://org/shards", os.path.join(base, "m1"), ["-o", "cache=none"])
                    r["mount_s"].append(m.t)
                    m.close()
                    with open(os.path.join(hub.dir, "access.log")) as f:
                        r["mount_requests"].append(sum(1 for _ in f) - before)
                    # b. the big tensor, three ways, alternated
                    url = "http://127.0.0.1:%d/org/big/%s/model.safetensors" % (cp.port, COMMIT)
                    sides = ["wf", "curl"] + (["aria"] if aria else [])
                    for side in (sides if run % 2 == 0 else sides[::-1]):
                        if side == "wf":
                            m = WfMount(args.weightfs, "hf://org/big", os.path.join(base, "m2"),
                                        ["-o", "cache=none"])
                            t, n = read_all(os.path.join(m.mp, "w"))
                            m.close()
                            assert n == size - hdr, (n, size - hdr)
                        elif side == "curl":
                            t0 = time.perf_counter()
                            subprocess.run(["curl", "-sf", "-o", "/dev/null", "-r", "%d-%d" % (hdr, size - 1), url],
                                           check=True)
                            t = time.perf_counter() - t0
                        else:
                            out = os.path.join(base, "aria")
                            shutil.rmtree(out, ignore_errors=True)
                            t0 = time.perf_counter()
                            subprocess.run([aria, "-q", "-x", "8", "-s", "8", "-k", "1M", "--file-allocation=none",
                                            "--dir", out, "-o", "f", url], check=True)
                            t = time.perf_counter() - t0
                            shutil.rmtree(out, ignore_errors=True)
                        r[side + "_s"].append(t)
                    # c. a cached re-read against a local mount
                    cache = os.path.join(base, "cache")
                    shutil.rmtree(cache, ignore_errors=True)
                    m = WfMount(args.weightfs, "hf://org/big", os.path.join(base, "m3"), ["-o", "cache=" + cache])
                    read_all(os.path.join(m.mp, "w"))
                    m.close()
                    for side in (("cached", "local") if run % 2 == 0 else ("local", "cached")):
                        src = "hf://org/big" if side == "cached" else bigfile
                        opts = ["-o", "cache=" + cache] if side == "cached" else []
                        m = WfMount(args.weightfs, src, os.path.join(base, "m4"), opts)
                        drop_caches()
                        t, n = read_all(os.path.join(m.mp, "w"))
                        m.close()
                        r[side + "_s"].append(t)
                    shutil.rmtree(cache, ignore_errors=True)
            finally:
                hp.stop()
                cp.stop()
                for k, v in env_saved.items():
                    if v is None:
                        os.environ.pop(k, None)
                    else:
                        os.environ[k] = v
            v = {k: med(x) for k, x in r.items() if x}
            v["mount_rtts"] = v["mount_s"] / rtt if rtt else None
            v["vs_curl"] = v["curl_s"] / v["wf_s"]
            v["vs_aria"] = v["aria_s"] / v["wf_s"] if "aria_s" in v else None
            v["cached_vs_local"] = v["local_s"] / v["cached_s"]
            res["rtt"]["%d" % round(rtt * 1000)] = v
    finally:
        hub.stop()
        shutil.rmtree(base, ignore_errors=True)
    res["text"] = report(res, bool(aria))
    return res


def report(res, aria):
    mb = res["big_mib"] * MiB / 1e6
    out = ["", "27. remote sources (hf:// on nginx behind a delaying proxy: RTT as given, %d MiB a round trip "
           "per stream; medians of %d runs)" % (res["window_mib"], res["runs"]),
           "  RTT ms | mount %d shards: s (RTTs, requests) | %d MiB first read: weightfs MB/s, curl x1 MB/s, "
           "ratio%s | cached re-read MB/s vs local mount, ratio" % (res["shards"], res["big_mib"],
                                                                   ", aria2c -x8 MB/s, ratio" if aria else "")]
    for rtt, v in res["rtt"].items():
        line = "  %6s | %.2f s (%s, %d) | %.0f, %.0f, %.2fx" % (
            rtt, v["mount_s"], "%.0f RTT" % v["mount_rtts"] if v["mount_rtts"] else "-", v["mount_requests"],
            mb / v["wf_s"], mb / v["curl_s"], v["vs_curl"])
        if aria:
            line += ", %.0f, %.2fx" % (mb / v["aria_s"], v["vs_aria"])
        line += " | %.0f vs %.0f, %.2fx" % (mb / v["cached_s"], mb / v["local_s"], v["cached_vs_local"])
        out.append(line)
    return out
