"""Group truncate: a model truncated, rewritten or renamed under a live mount
(EIO or the bytes as mounted, never anything else), and the read races.
"""

import errno
import json
import os
import random
import shutil
import threading
import time

import numpy as np

from wf_harness import check, Errs, Fail, GGML, Mount, SEED, TMP
from wf_models import f32_tensor, GGML_MAN, gguf_bytes, gguf_expected, q8_0_blocks, write_file
from wf_read import changed_lines, CHANGED_MSG, o_direct_read, verify_bytes


# ---------------------------------------------------------------- group: truncate

def group_truncate():
    """The file changes under a live mount: every read fails with EIO or
    gives the bytes of the file as mounted, never anything else."""
    fname = "mixed_llama_tiny.gguf"
    src = os.path.join(GGML, fname)
    ts = [t for t in GGML_MAN["tensors"] if t["file"] == fname and gguf_expected(t) is not None]
    model = os.path.join(TMP, "trunc.gguf")
    shutil.copyfile(src, model)
    size = os.path.getsize(model)
    cut = size // 2
    first = min(ts, key=lambda t: t["file_offset"])
    m = Mount(model)
    try:
        def truncated():
            errs = Errs()
            p0 = m.path(first["name"].replace(".", "/"))
            with open(p0, "rb") as f:
                if f.read() != gguf_expected(first):
                    errs.add("before truncation: %s wrong" % first["name"])
            os.truncate(model, cut)
            # every tensor, wholly inside the cut or not, now fails: the file
            # is not the one mounted (the page cache may still hold pages read
            # before, which are right; O_DIRECT bypasses it)
            for t in ts:
                p = m.path(t["name"].replace(".", "/"))
                fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                try:
                    got = o_direct_read(fd, 64, 0)
                    if got != errno.EIO:
                        errs.add("%s (%s cut at %d): read gave %r, expected EIO" % (
                            t["name"], "inside" if t["file_offset"] + t["nbytes"] <= cut
                            else "past", cut, got if isinstance(got, int) else "%d bytes" % len(got)))
                finally:
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("daemon died (exit %s)" % m.proc.returncode)
            else:
                os.stat(m.mp)
                with open(m.path("tensors.json"), "rb") as f:
                    json.loads(f.read().decode())
            lines = changed_lines(m)
            if len(lines) != 1:
                errs.add("daemon said %d lines about the change, expected 1: %r" % (len(lines), lines[:3]))
            errs.raise_if_any()
            return "%d tensors, cut at byte %d of %d" % (len(ts), cut, size)
        check("truncate: MODEL truncated under the mount: every tensor read fails with EIO, "
              "said once on stderr", truncated)
    finally:
        check("truncate: unmount after truncation", m.finish)

    # shrink by one byte and grow back: same size, last byte now zero
    model3 = os.path.join(TMP, "regrow.gguf")
    shutil.copyfile(src, model3)
    last = max(ts, key=lambda t: t["file_offset"] + t["nbytes"])
    with Mount(model3) as m:
        def regrown():
            os.truncate(model3, size - 1)
            os.truncate(model3, size)
            fd = os.open(m.path(last["name"].replace(".", "/")), os.O_RDONLY | os.O_DIRECT)
            try:
                got = o_direct_read(fd, 1 << 20, 0)
            finally:
                os.close(fd)
            if got != errno.EIO:
                raise Fail("read gave %s, expected EIO" % (
                    "the mounted bytes" if got == gguf_expected(last) else
                    "WRONG bytes" if not isinstance(got, int) else os.strerror(got)))
        check("truncate: MODEL shrunk and grown back to its size: EIO, not zeros", regrown)

    # replace the file by rename: the mount keeps serving the old mapping
    model2 = os.path.join(TMP, "replaced.gguf")
    shutil.copyfile(src, model2)
    m = Mount(model2)
    try:
        def replaced():
            errs = Errs()
            other = os.path.join(TMP, "replacement.tmp")
            shutil.copyfile(os.path.join(GGML, "type_q8_0.gguf"), other)
            os.rename(other, model2)
            for t in ts:
                exp = gguf_expected(t)
                verify_bytes(m.path(t["name"].replace(".", "/")), exp, random.Random(SEED), errs,
                             t["name"], t["ne"][0] * 4)
            if m.proc.poll() is not None:
                errs.add("daemon died")
            errs.raise_if_any()
        check("truncate: MODEL replaced by rename: the mount keeps the old contents", replaced)
    finally:
        check("truncate: unmount after replacement", m.finish)
    # issue 17 item 2: link it, rewrite bytes in place, set the mtime back
    model4 = os.path.join(TMP, "linked.gguf")
    shutil.copyfile(src, model4)
    with Mount(model4) as m:
        def link_write_utime():
            errs = Errs()
            p0 = m.path(first["name"].replace(".", "/"))
            fd = os.open(p0, os.O_RDONLY | os.O_DIRECT)
            try:
                if o_direct_read(fd, 4096, 0) != gguf_expected(first)[:4096]:
                    errs.add("before: wrong bytes")
                st = os.stat(model4)
                lnk = model4 + ".lnk"
                os.link(model4, lnk)
                with open(lnk, "r+b") as f:
                    f.seek(first["file_offset"])
                    old = f.read(16)
                    f.seek(first["file_offset"])
                    f.write(bytes(b ^ 0xFF for b in old))
                os.utime(model4, ns=(st.st_atime_ns, st.st_mtime_ns))
                if os.stat(model4).st_mtime_ns != st.st_mtime_ns:
                    errs.add("the mtime was not set back")
                got = o_direct_read(fd, 4096, 0)
                if got != errno.EIO:
                    errs.add("after link + in-place write + utime: %s, expected EIO" % (
                        "WRONG bytes" if not isinstance(got, int) else os.strerror(got)))
                os.unlink(lnk)
            finally:
                os.close(fd)
            errs.raise_if_any()
        check("truncate: MODEL linked, rewritten in place, mtime set back: EIO, not the new bytes",
              link_write_utime)
    race_checks()
    header_cut_checks()


RACE_SECONDS = float(os.environ.get("WF_TEST_RACE_SECONDS", "4"))


def race_model(last_type):
    """A GGUF whose last tensor (the one a shrinking writer eats) is F32 or
    Q8_0, about 2 MiB of source each.  Returns (bytes, {path: (offset in
    the file, source bytes per block, view bytes per block, expected view)})."""
    rng_np = np.random.default_rng(SEED)
    f32 = rng_np.standard_normal((512, 1024)).astype("<f4")
    q_raw, q_exp = q8_0_blocks(rng_np, 1 << 16)
    f32_t = f32_tensor(b"race.f32", f32)
    q_t = (b"race.q8_0", 8, [2048, 1024], q_raw)
    order = [q_t, f32_t] if last_type == "F32" else [f32_t, q_t]
    data = gguf_bytes(order)
    info = {}
    for name, ty, _, raw in order:
        off = data.index(raw[:4096]) if raw else 0
        info[name.decode().replace(".", "/")] = (
            off, 4 if ty == 0 else 34, 4 if ty == 0 else 128,
            f32.tobytes() if ty == 0 else q_exp)
    return data, info


def race(label, writer, rounds, per_round, readers=2, expect_eio=True, data=None, info=None):
    """Mounts a fresh copy `rounds` times; in each, `readers` threads read
    random O_DIRECT ranges of the model's tensors (biased to just below the
    writer's current end of file) while writer(path, state, stop) changes
    the file.  Every read must give the mounted bytes or EIO."""
    tally_ = {"ok": 0, "eio": 0, "wrong": 0, "other": 0}
    lock = threading.Lock()
    errs = Errs()
    for rnd in range(rounds):
        model = os.path.join(TMP, "race-%s.gguf" % label.replace(" ", "-"))
        write_file(model, data)
        state = {"size": len(data)}
        stop = threading.Event()
        m = Mount(model)
        try:
            fds = {rel: os.open(m.path(rel), os.O_RDONLY | os.O_DIRECT) for rel in info}

            def reader(seed):
                rng = random.Random(seed)
                rels = list(info)
                while not stop.is_set():
                    rel = rng.choice(rels)
                    off0, sblk, vblk, exp = info[rel]
                    # the view byte the current end of file corresponds to
                    vend = max(0, min(len(exp), (state["size"] - off0) // sblk * vblk))
                    if rng.random() < 0.8 and vend > 0:
                        off = max(0, vend - rng.randrange(1, 16384))
                    else:
                        off = rng.randrange(len(exp))
                    ln = rng.randrange(1, 16384)
                    got = o_direct_read(fds[rel], ln, off)
                    with lock:
                        if isinstance(got, int):
                            tally_["eio" if got == errno.EIO else "other"] += 1
                            if got != errno.EIO:
                                errs.add("%s: pread(%d, %d): %s" % (rel, ln, off, os.strerror(got)))
                        elif got == exp[off:off + ln]:
                            tally_["ok"] += 1
                        else:
                            tally_["wrong"] += 1
                            if tally_["wrong"] <= 3:
                                bad = next(i for i, (a, b) in enumerate(zip(got, exp[off:])) if a != b) \
                                    if len(got) == len(exp[off:off + ln]) else -1
                                errs.add("%s: pread(%d, %d) at file size %d: WRONG bytes (first "
                                         "difference at +%d)" % (rel, ln, off, state["size"], bad))
            ths = [threading.Thread(target=reader, args=(SEED + 100 * rnd + i,)) for i in range(readers)]
            for th in ths:
                th.start()
            time.sleep(0.02)
            try:
                writer(model, state, stop, per_round)
                # a writer that changed nothing would make the race pass vacuously
                if not state.get("changes"):
                    errs.add("round %d: the writer made no change" % rnd)
            finally:
                stop.set()
                for th in ths:
                    th.join()
                for fd in fds.values():
                    os.close(fd)
            if m.proc.poll() is not None:
                errs.add("round %d: daemon died (%s)" % (rnd, m.proc.returncode))
            n = len(changed_lines(m))
            if n != (1 if expect_eio else 0):
                errs.add("round %d: daemon said %d lines about the change" % (rnd, n))
            noise = [ln for ln in m.stderr().splitlines() if CHANGED_MSG not in ln]
            if noise:
                errs.add("round %d: %d other lines on stderr, e.g. %r" % (rnd, len(noise), noise[0]))
        finally:
            m.finish()
    if tally_["wrong"] or tally_["other"]:
        errs.add("%d wrong reads" % tally_["wrong"])
    if not expect_eio and tally_["eio"]:
        errs.add("%d reads failed with EIO; the old file should still be served" % tally_["eio"])
    if tally_["ok"] + tally_["eio"] < 100:
        errs.add("only %d reads in the race" % (tally_["ok"] + tally_["eio"]))
    errs.raise_if_any()
    return "%d rounds, %d reads: %d right, %d EIO, 0 wrong" % (
        rounds, sum(tally_.values()), tally_["ok"], tally_["eio"])


def shrinker(path, state, stop, seconds):
    """Truncates the file in small random steps from its end."""
    rng = random.Random(SEED)
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        new = state["size"] - rng.randrange(1, 300)
        if new < 4096:
            break
        os.truncate(path, new)
        state["size"] = new
        state["changes"] = state.get("changes", 0) + 1
        time.sleep(0.0005)


def rewriter(path, state, stop, seconds):
    """Rewrites the tensor data in place, in 64 KiB chunks, with other bytes."""
    rng = random.Random(SEED)
    size = state["size"]
    t_end = time.monotonic() + seconds
    fd = os.open(path, os.O_WRONLY)
    try:
        while time.monotonic() < t_end:
            off = rng.randrange(4096, size - 65536)
            os.pwrite(fd, rng.randbytes(65536), off)
            state["changes"] = state.get("changes", 0) + 1
    finally:
        os.close(fd)


def renamer(path, state, stop, seconds):
    """Replaces the file by rename, as download tools do, again and again."""
    rng = random.Random(SEED)
    t_end = time.monotonic() + seconds
    tmp = path + ".tmp"
    while time.monotonic() < t_end:
        write_file(tmp, rng.randbytes(state["size"]))
        os.rename(tmp, path)
        state["changes"] = state.get("changes", 0) + 1


def link_rewriter(path, state, stop, seconds):
    """Links the file, rewrites its data in place through the link, sets
    the mtime back and removes the link, again and again (issue 17 item 2)."""
    rng = random.Random(SEED)
    size = state["size"]
    st = os.stat(path)
    lnk = path + ".lnk"
    t_end = time.monotonic() + seconds
    while time.monotonic() < t_end:
        os.link(path, lnk)
        fd = os.open(lnk, os.O_WRONLY)
        try:
            os.pwrite(fd, rng.randbytes(65536), rng.randrange(4096, size - 65536))
        finally:
            os.close(fd)
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        os.unlink(lnk)
        state["changes"] = state.get("changes", 0) + 1


def race_checks():
    rounds = 4
    per = RACE_SECONDS / rounds
    for last in ("F32", "Q8_0"):
        data, info = race_model(last)
        check("truncate: race: shrinking writer vs O_DIRECT readers just below the end "
              "(%s tensor last): every read right or EIO" % last,
              race, "shrink " + last, shrinker, rounds, per, data=data, info=info)
    data, info = race_model("F32")
    check("truncate: race: in-place rewriter vs readers of F32 and Q8_0: every read right or EIO",
          race, "rewrite", rewriter, rounds, per, data=data, info=info)
    check("truncate: race: linked, rewritten in place, mtime set back, again and again: every "
          "read right or EIO", race, "link-rewrite", link_rewriter, rounds, per, data=data, info=info)
    check("truncate: race: replaced by rename again and again: every read right, none EIO",
          race, "rename", renamer, 2, RACE_SECONDS / 2, expect_eio=False, data=data, info=info)


# ---------------------------------------------------------------- header cut while parsed

def big_header_st(path, n):
    """A safetensors file of n one-byte tensors: a header of about 67 bytes each."""
    parts = ['"t%d":{"dtype":"U8","shape":[1],"data_offsets":[%d,%d]}' % (i, i, i + 1) for i in range(n)]
    h = ("{" + ",".join(parts) + "}").encode()
    write_file(path, len(h).to_bytes(8, "little") + h + bytes(n))


def header_cut_checks():
    """A model truncated while its header is parsed (issue 17, item 4): a
    one-line refusal with an exit code, never SIGBUS, for `ls` and the mount."""
    from wf_harness import BIN, new_dir, is_mounted, force_unmount
    import subprocess
    src = os.path.join(TMP, "bighdr.safetensors")
    big_header_st(src, 200000)

    def one(argv_of, label):
        errs = Errs()
        cut_during = 0
        for delay in (0.05, 0.15, 0.3):
            model = os.path.join(TMP, "bighdr-cut.safetensors")
            shutil.copyfile(src, model)
            mp = new_dir()
            p = subprocess.Popen(argv_of(model, mp), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
            time.sleep(delay)
            os.truncate(model, 4096)
            t0 = time.monotonic()
            while p.poll() is None and not is_mounted(mp) and time.monotonic() - t0 < 60:
                time.sleep(0.01)
            if is_mounted(mp):
                subprocess.run(["fusermount3", "-u", mp], timeout=15)
            try:
                _, err = p.communicate(timeout=60)
            except subprocess.TimeoutExpired:
                p.kill()
                force_unmount(mp)
                errs.add("%s, cut after %.2f s: still running after 60 s" % (label, delay))
                continue
            lines = err.decode(errors="replace").strip().splitlines()
            if p.returncode < 0:
                errs.add("%s, cut after %.2f s: killed by signal %d" % (label, delay, -p.returncode))
            elif p.returncode != 0:
                if len(lines) != 1 or not lines[0].startswith("weightfs: "):
                    errs.add("%s, cut after %.2f s: exit %d, stderr %r" % (label, delay, p.returncode, lines[:3]))
                cut_during += "cut short while its header was read" in lines[0] if lines else 0
        if cut_during == 0:
            errs.add("%s: no run was cut while parsing (the machine was too fast or too slow)" % label)
        errs.raise_if_any()
    check("truncate: header cut while `weightfs ls` parses it: one line, exit 2, no SIGBUS",
          one, lambda model, mp: [BIN, "ls", model], "ls")
    check("truncate: header cut while the mount parses it: one line, no SIGBUS, no mount",
          one, lambda model, mp: [BIN, "-f", model, mp], "mount")
