"""Group cmds: the weightfs commands (ls, info, cat, convert), their options
and errors, against what the mount shows.
"""

import glob
import hashlib
import json
import os
import random
import re
import shlex
import shutil
import signal
import stat
import struct
import subprocess
import tempfile
import time

from wf_harness import (
    BIN, check, daemon_pid, Errs, Fail, force_unmount, GGML, is_mounted, load_json, MALFORMED,
    Mount, new_dir, reset_signals, run_cli, san_env, san_lines, SEED, skip_or_fail, STO, TMP,
    wait_pid)
from wf_models import make_hf_folder, write_file


# ---------------------------------------------------------------- group: cmds

def read_bytes(path):
    with open(path, "rb") as f:
        return f.read()


def cmd_run(args, timeout=60.0, cwd=None):
    """weightfs COMMAND ...; returns (rc, stdout bytes, stderr text)."""
    p = subprocess.run([BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, preexec_fn=reset_signals, timeout=timeout, cwd=cwd)
    err = p.stderr.decode("utf-8", "replace")
    if san_lines(err):
        raise Fail("weightfs %s: sanitizer output: %s" % (" ".join(args[:2]), " / ".join(san_lines(err)[:4])))
    return p.returncode, p.stdout, err


def o_args(opts):
    return ["-o", ",".join(opts)] if opts else []


LS_LINE = re.compile(r"^(\S+) +(\S+) +(\S+) +(\[[0-9, ]*\]) +([0-9]+)$")


def sparse_st(path, nbytes):
    """A safetensors file of one F32 tensor of nbytes zero bytes, sparse on
    disk: a big model that costs no disk until converted."""
    head = json.dumps({"w": {"dtype": "F32", "shape": [nbytes // 4],
                             "data_offsets": [0, nbytes]}}).encode()
    head += b" " * (-len(head) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(head)) + head)
        f.truncate(8 + len(head) + nbytes)
    return path


def temps_in(d):
    return [n for n in os.listdir(d) if n.endswith(".tmp") and ".weightfs-" in n]


def writing_in(pid, d):
    """Whether process pid has a file of folder d open: a named temporary
    file, or an unnamed one (O_TMPFILE: "d/#123 (deleted)")."""
    try:
        fds = os.listdir("/proc/%d/fd" % pid)
    except OSError:
        return False
    for fd in fds:
        try:
            if os.readlink("/proc/%d/fd/%s" % (pid, fd)).startswith(d + "/"):
                return True
        except OSError:
            pass
    return False


def group_cmds():
    tiny = os.path.join(GGML, "mixed_llama_tiny.gguf")
    split1 = os.path.join(GGML, "split_llama-00001-of-00002.gguf")
    folder = new_dir("cmds-folder-")
    make_hf_folder(folder)
    models = [tiny, split1, os.path.join(STO, "model_like.safetensors"),
              os.path.join(STO, "awkward_names.safetensors"), folder,
              os.path.join(folder, "model.safetensors.index.json")]
    option_sets = [(), ("dtype=f16",), ("dtype=stored",), ("npy",), ("dtype=bf16", "npy")]

    def ls_and_json():
        errs = Errs()
        n = 0
        for model in models:
            for opts in option_sets:
                with Mount(model, o_args(list(opts))) as m:
                    tj_bytes = read_bytes(m.path("tensors.json"))
                    meta = read_bytes(m.path("metadata.json"))
                rc, out, err = cmd_run(["ls", "--json"] + o_args(opts) + [model])
                if rc != 0 or out != tj_bytes or err:
                    errs.add("%s %s: ls --json: rc %d, %s, stderr %r" % (
                        os.path.basename(model), opts, rc, "equal" if out == tj_bytes else "differs", err[:100]))
                rc, out, err = cmd_run(["info", "--json"] + o_args(opts) + [model])
                if rc != 0 or out != meta or err:
                    errs.add("%s %s: info --json: rc %d, %s" % (os.path.basename(model), opts, rc,
                                                                "equal" if out == meta else "differs"))
                # the plain listing: one aligned line per tensor, as tensors.json says
                tj = json.loads(tj_bytes.decode())
                rc, out, err = cmd_run(["ls"] + o_args(opts) + [model])
                lines = out.decode("utf-8", "replace").splitlines()
                if rc != 0 or len(lines) != len(tj["tensors"]):
                    errs.add("%s %s: ls: rc %d, %d lines for %d tensors" % (
                        os.path.basename(model), opts, rc, len(lines), len(tj["tensors"])))
                    continue
                plain = all(re.fullmatch(r"[!-~]+", e["name"]) for e in tj["tensors"])
                starts = set()
                for line, e in zip(lines, tj["tensors"]):
                    if not plain:
                        if not line.endswith(" %d" % e["size"]):
                            errs.add("%s: %r lacks size %d" % (os.path.basename(model), line, e["size"]))
                        continue
                    mt = LS_LINE.match(line)
                    want = (e["name"], e["type"], e["dtype"], json.dumps(e["shape"]), str(e["size"]))
                    if not mt or mt.groups() != want:
                        errs.add("%s %s: %r, expected %r" % (os.path.basename(model), opts, line, want))
                        continue
                    starts.add((line.index(" " + e["type"] + " ", len(e["name"])),
                                len(line)))
                if plain and len({s[0] for s in starts}) > 1 or len({s[1] for s in starts}) > 1:
                    errs.add("%s: columns not aligned: %r" % (os.path.basename(model), lines[:3]))
                n += 1
        errs.raise_if_any()
        return "%d model/option pairs: ls --json == tensors.json, info --json == metadata.json, " \
               "ls lines match" % n
    check("cmds: ls --json and info --json equal the mount's tensors.json and metadata.json; "
          "ls lines aligned, one per tensor", ls_and_json)

    def info_plain():
        rc, out, err = cmd_run(["info", tiny])
        lines = out.decode().splitlines()
        keys = [l.split()[0] for l in lines]
        want = list(json.loads(read_bytes_meta(tiny)).keys())
        if rc != 0 or keys != want:
            raise Fail("rc %d, keys %r, expected %r" % (rc, keys[:5], want[:5]))
        if any(len(l) > 200 for l in lines):
            raise Fail("a line longer than 200 characters")
        return "%d keys" % len(keys)

    def read_bytes_meta(model):
        rc, out, err = cmd_run(["info", "--json", model])
        return out.decode()
    check("cmds: info prints one line per metadata key, long values cut", info_plain)

    def cat_all():
        errs = Errs()
        rng = random.Random(SEED)
        n = 0
        for model in (tiny, split1, os.path.join(STO, "awkward_names.safetensors"), folder):
            for opts in option_sets:
                with Mount(model, o_args(list(opts))) as m:
                    tj = load_json(m.path("tensors.json"))
                    files = {}
                    for e in tj["tensors"]:
                        try:
                            files[e["name"]] = read_bytes(m.path(e["path"]))
                        except OSError as ex:
                            files[e["name"]] = ex.errno
                for i, e in enumerate(tj["tensors"]):
                    exp = files[e["name"]]
                    name = e["name"] if "\0" not in e["name"] and \
                        not re.search(r"[\udc80-\udcff]", e["name"]) else None
                    for arg in ([name] if name else []) + [e["path"]]:
                        rc, out, err = cmd_run(["cat"] + o_args(opts) + [model, arg])
                        if isinstance(exp, int):
                            if rc != 4 or out or len(err.splitlines()) != 1:
                                errs.add("%s: no decoder: rc %d, %d bytes, %r" % (arg, rc, len(out), err))
                        elif rc != 0 or out != exp:
                            errs.add("%s %s %r: rc %d, %d bytes of %d, %s" % (
                                os.path.basename(model), opts, arg, rc, len(out), len(exp), err[:100]))
                        n += 1
                    if isinstance(exp, int) or i % 3:
                        continue
                    off = rng.randrange(0, len(exp) + 2)
                    ln = rng.randrange(0, len(exp) + 2)
                    rc, out, err = cmd_run(["cat", "--offset", str(off), "--length=%d" % ln] + o_args(opts)
                                           + [model, e["path"]])
                    if rc != 0 or out != exp[off:off + ln]:
                        errs.add("%s --offset %d --length %d: rc %d, %d bytes" % (e["path"], off, ln, rc,
                                                                                  len(out)))
                    n += 1
        errs.raise_if_any()
        return "%d cats equal the mount's files" % n
    check("cmds: cat of every tensor (by name and by path; dtype=f16/stored/bf16, npy, "
          "--offset/--length) equals the mount's file", cat_all)

    def cat_errors():
        errs = Errs()
        for args, rc_want, what in ((["cat", tiny, "no.such.tensor"], 1, "no tensor"),
                                    (["cat", tiny, "blk/0"], 1, "no tensor"),
                                    (["cat", "--offset", "-1", tiny, "output.weight"], 1, "--offset -1"),
                                    (["cat", tiny], 1, "MODEL and TENSOR"),
                                    (["ls", "--bogus", tiny], 1, "unknown option"),
                                    (["ls", "-o", "dtype=f64", tiny], 1, "unknown output type"),
                                    (["convert", "-o", "npy", tiny, "/nonexistent/x"], 1, "not an option"),
                                    (["ls", "-o", "nope", tiny], 1, "not an option")):
            rc, out, err = cmd_run(args)
            if rc != rc_want or len(err.splitlines()) != 1 or what not in err or out:
                errs.add("%r: rc %d, stderr %r" % (args, rc, err))
        rc, out, err = cmd_run(["ls", "--help"])
        if rc != 0 or b"usage: weightfs ls" not in out:
            errs.add("ls --help: rc %d, %r" % (rc, out[:100]))
        errs.raise_if_any()
    check("cmds: bad command lines: one line, exit 1", cat_errors)

    # what each command's table gives, checked from outside: the exit code
    # of its bad command lines (diff and verify answer as diff(1) and cmp(1))
    usage_exit = {"ls": 1, "info": 1, "cat": 1, "convert": 1, "stats": 1, "diff": 2, "verify": 2, "fetch": 1}

    def tables():
        errs = Errs()
        rc, top, _ = cmd_run(["-h"])
        usage = {}
        for line in top.decode().splitlines():
            m = re.match(r"^\s+\S*weightfs (\w+) (.*)$", line)
            if m:
                usage[m.group(1)] = m.group(2)
        if sorted(usage) != sorted(usage_exit):
            errs.add("weightfs -h lists %r" % sorted(usage))
        for c, code in usage_exit.items():
            rc, lst, err = cmd_run(["--list-options", c])
            spell = [ln.split(" ", 1) for ln in lst.decode().splitlines()]
            if rc != 0 or err or ["-h"] not in spell or ["--help"] not in spell:
                errs.add("--list-options %s: rc %d %r %r" % (c, rc, lst, err))
                continue
            for flag in ("-h", "--help"):
                rc, out, err = cmd_run([c, flag])
                text = out.decode()
                first = text.splitlines()[0] if text else ""
                # the help's usage line is the one weightfs -h shows
                if rc != 0 or err or first != "usage: weightfs %s %s" % (c, usage.get(c)):
                    errs.add("%s %s: rc %d, %r" % (c, flag, rc, first))
                # every spelling of every option in the table has its help line
                for sp in spell:
                    if not re.search(r"^    .*%s%s(,|\s)" % (re.escape(sp[0]), re.escape(" " + sp[1]) if len(sp) > 1 else ""),
                                     text, re.M):
                        errs.add("%s %s: no help line for %s" % (c, flag, " ".join(sp)))
            # a bad option, a value-taking option with no value, a flag given one
            bad = [([c, "--no-such-option", tiny], "--no-such-option: unknown option"),
                   ([c, "-Z", tiny], "-Z: unknown option")]
            for sp in spell:
                if sp[0] in ("-h", "--help"):
                    continue
                if len(sp) > 1:
                    bad.append(([c, tiny, sp[0]], "%s: needs a value (%s)" % (sp[0], sp[1])))
                elif sp[0].startswith("--"):
                    bad.append(([c, sp[0] + "=1", tiny], "%s=1: %s takes no value" % (sp[0], sp[0])))
            for args, what in bad:
                rc, out, err = cmd_run(args)
                e = err
                if (rc != code or out or len(e.splitlines()) != 1 or what not in e or
                        not e.startswith("weightfs %s: " % c) or
                        "(usage: weightfs %s %s)" % (c, usage.get(c)) not in e):
                    errs.add("%r: rc %d (expected %d), stdout %r, stderr %r" % (args[:3], rc, code, out[:60], e))
        errs.raise_if_any()
    check("cmds: every command's -h and usage line come from its option table (weightfs --list-options); "
          "a bad option, a missing value, a flag given one: one line naming the command and the option, "
          "the command's usage exit code", tables)

    def man_synopsis():
        # docs/weightfs.1's SYNOPSIS shows each command as its table does
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "docs", "weightfs.1")) as f:
            man = f.read()
        a = man.index(".SH SYNOPSIS")
        syn = man[a:man.index("\n.SH", a + 3)]
        shown = {}
        for block in syn.split("\n.br\n"):
            words = []
            for line in block.splitlines():
                m = re.match(r"^\.(B|I|RB|RI|BR|IR|BI|IB)\s+(.*)$", line)
                if m:
                    args = shlex.split(m.group(2).replace("\\", "\\\\"))
                    w = (" " if m.group(1) in ("B", "I") else "").join(args)
                    words.append(re.sub(r"\\f[RIB]", "", w.replace("\\-", "-")))
            m = re.match(r"^weightfs (\w+) (.*)$", " ".join(words))
            if m:
                shown[m.group(1)] = m.group(2)
        errs = Errs()
        for c in usage_exit:
            out = cmd_run([c, "-h"])[1].decode().splitlines()[0]
            if "usage: weightfs %s %s" % (c, shown.get(c)) != out:
                errs.add("weightfs.1 shows %s as %r, its -h as %r" % (c, shown.get(c), out))
        errs.raise_if_any()
    check("cmds: weightfs.1's SYNOPSIS shows every command as its option table does", man_synopsis)

    def spellings():
        # every spelling the commands took before their tables still works
        errs = Errs()
        want = cmd_run(["cat", tiny, "output.weight"])[1]
        for args in (["cat", "--offset", "4", "--length", "8", tiny, "output.weight"],
                     ["cat", "--offset=4", "--length=8", tiny, "output.weight"],
                     ["cat", tiny, "--length", "8", "output.weight", "--offset=4"],
                     ["cat", "--offset", "4", "--length", "8", "--", tiny, "output.weight"]):
            rc, out, err = cmd_run(args)
            if rc != 0 or out != want[4:12]:
                errs.add("%r: rc %d, %d bytes %r" % (args, rc, len(out), err))
        base = cmd_run(["ls", "-o", "dtype=f16,npy", tiny])[1]
        for args in (["ls", "-odtype=f16,npy", tiny], ["ls", "-o", "dtype=f16", "-o", "npy", tiny],
                     ["ls", tiny, "-o", "npy,dtype=f16"], ["ls", "-o", "dtype=f16,npy", "--", tiny]):
            rc, out, err = cmd_run(args)
            if rc != 0 or out != base:
                errs.add("%r: rc %d %r" % (args, rc, err))
        for args, code in ((["info", "--json", "-o", "gguf=q8_0,npy,allow_other", tiny], 0),
                           (["info", "-o", "gguf=nope", tiny], 1),
                           (["stats", "-o", "dtype=f16,npy,suffix,preview", "--json", tiny, "output"], 0),
                           (["stats", "-o", "allow_other", tiny], 1),
                           (["stats", "-o", "dtype=f16", "-o", "dtype=bf16", tiny], 1),
                           (["diff", "--json", "--", tiny, tiny], 0),
                           (["verify", "--json", tiny], 0)):
            rc, out, err = cmd_run(args)
            if rc != code:
                errs.add("%r: rc %d (expected %d) %r" % (args, rc, code, err[:200]))
        errs.raise_if_any()
    check("cmds: every spelling the commands took still works (--opt=V and --opt V, -oLIST, options after "
          "arguments, --)", spellings)

    def same_as_mount():
        errs = Errs()
        entries = load_json(os.path.join(MALFORMED, "expect.json"))
        gone = os.path.join(TMP, "no-such-model.gguf")
        entries.append({"file": gone, "exit": 2, "message": "No such file"})
        entries.append({"file": TMP, "exit": None, "message": None})
        outd = new_dir("cmds-mal-")
        from concurrent.futures import ThreadPoolExecutor

        def one(ent):
            path = os.path.join(MALFORMED, ent["file"])
            mp = new_dir("mal-")
            bad = []
            rc_m, _, err_m, _ = run_cli([path, mp], timeout=20.0, env=san_env())
            if rc_m == 0:
                for p in daemon_pid(mp):
                    force_unmount(mp)
                    wait_pid(p, 10)
                return []  # mounts: nothing to compare
            for args in (["ls", path], ["ls", "--json", path], ["info", path], ["cat", path, "x"],
                         ["convert", path, os.path.join(outd, "x.safetensors")]):
                rc, out, err = cmd_run(args)
                if rc != rc_m or err != err_m or out:
                    bad.append("%s %s: exit %d, stderr %r; the mount: exit %d, %r" % (
                        args[0], ent["file"], rc, err[:160], rc_m, err_m[:160]))
            return bad
        with ThreadPoolExecutor(4) as ex:
            for bad in ex.map(one, entries):
                for b in bad:
                    errs.add(b)
        if os.listdir(outd):
            errs.add("convert left %r" % os.listdir(outd))
        errs.raise_if_any()
        return "%d bad models x 5 commands" % len(entries)
    check("cmds: every malformed model (tests/malformed): each command's message and exit code "
          "are the mount's", same_as_mount)

    # convert
    def round_trip():
        errs = Errs()
        outd = new_dir("cmds-conv-")
        n_models = n_tensors = 0
        cases = [(p, ()) for p in sorted(glob.glob(os.path.join(GGML, "*.gguf")))]
        cases += [(tiny, ("dtype=bf16",)), (tiny, ("dtype=stored",)), (tiny, ("dtype=f16",)),
                  (split1, ("dtype=bf16",)), (folder, ()), (os.path.join(GGML, "no_to_float.gguf"),
                                                             ("dtype=stored",))]
        for k, (model, opts) in enumerate(cases):
            out = os.path.join(outd, "out%d.safetensors" % k)
            rc, so, err = cmd_run(["convert"] + o_args(opts) + [model, out])
            with Mount(model, o_args(list(opts))) as m:
                try:
                    st_bytes_mount = read_bytes(m.path("model.safetensors"))
                except OSError as ex:
                    st_bytes_mount = ex.errno
                if isinstance(st_bytes_mount, int):
                    # no decoder for some tensor: cp fails, and so must convert, leaving nothing
                    if rc != 4 or os.path.exists(out) or temps_in(outd) or len(err.splitlines()) != 1:
                        errs.add("%s: cp fails with errno %d, convert: rc %d, %r, files %r" % (
                            os.path.basename(model), st_bytes_mount, rc, err, os.listdir(outd)))
                    continue
                if rc != 0 or err or so:
                    errs.add("%s %s: rc %d, %r" % (os.path.basename(model), opts, rc, err[:200]))
                    continue
                if read_bytes(out) != st_bytes_mount:
                    errs.add("%s %s: differs from cp of model.safetensors" % (os.path.basename(model), opts))
                    continue
                if stat.S_IMODE(os.stat(out).st_mode) != 0o644 & ~os.umask(os.umask(0)):
                    errs.add("%s: mode %o" % (out, os.stat(out).st_mode))
                src = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
                # the output, read back by weightfs' own safetensors parser
                with Mount(out, o_args(list(opts))) as m2:
                    dst = {e["name"]: e for e in load_json(m2.path("tensors.json"))["tensors"]}
                    if sorted(dst) != sorted(src):
                        errs.add("%s: names %r vs %r" % (os.path.basename(model), sorted(dst)[:3],
                                                         sorted(src)[:3]))
                        continue
                    for name, e in src.items():
                        a = read_bytes(m.path(e["path"]))
                        b = read_bytes(m2.path(dst[name]["path"]))
                        if a != b or e["shape"] != dst[name]["shape"] or e["dtype"] != dst[name]["dtype"]:
                            errs.add("%s %s: %s differs" % (os.path.basename(model), opts, name))
                        n_tensors += 1
            n_models += 1
            os.unlink(out)
        if temps_in(outd):
            errs.add("temporary files left: %r" % temps_in(outd))
        errs.raise_if_any()
        return "%d conversions, %d tensors byte-identical after a round trip" % (n_models, n_tensors)
    check("cmds: convert == cp of the mount's model.safetensors, and its tensors read back "
          "byte-identical (every ggml-oracle GGUF, split set, folder, dtype options)", round_trip)

    def write_paths():
        # convert writes stored bytes (F32 in a float32 output) with
        # copy_file_range where the kernel copies between the two files,
        # and falls back to decoding and pwrite where it does not (EXDEV:
        # another filesystem) or when told not to; all three must give the
        # mount's model.safetensors byte for byte, on a disk filesystem
        # (O_TMPFILE) and on tmpfs.
        import numpy as np
        from wf_models import f32_tensor, gguf_bytes, q8_0_blocks
        strace = shutil.which("strace")
        shm = "/dev/shm"
        if not strace or not os.path.isdir(shm) or \
                subprocess.run(["stat", "-f", "-c", "%T", shm], stdout=subprocess.PIPE,
                               text=True).stdout.strip() != "tmpfs":
            skip_or_fail("needs strace and a tmpfs at /dev/shm")
        rng = np.random.default_rng(SEED)
        tensors = [f32_tensor(b"a.weight", rng.standard_normal((4608, 1024))),  # 18 MiB: two pieces
                   (b"b.weight", 8, [256, 64], q8_0_blocks(rng, 512)[0]),
                   f32_tensor(b"c.weight", rng.standard_normal((1000, 333))),   # odd size
                   (b"d.weight", 1, [512, 512], rng.standard_normal(512 * 512).astype("<f2").tobytes())]
        data = gguf_bytes(tensors)
        disk, mem = new_dir("cmds-paths-"), tempfile.mkdtemp(dir=shm, prefix="wf-cmds-paths-")
        errs = Errs()
        try:
            for d in (disk, mem):
                write_file(os.path.join(d, "m.gguf"), data)
            with Mount(os.path.join(disk, "m.gguf")) as m:
                want = read_bytes(m.path("model.safetensors"))
            cases = [(disk, disk, "", "copied"), (mem, mem, "", "copied"),
                     (mem, disk, "", "refused"), (disk, disk, "1", "none")]
            for k, (src, dst, no_copy, how) in enumerate(cases):
                out, log = os.path.join(dst, "o%d.safetensors" % k), os.path.join(disk, "strace%d" % k)
                env = dict(san_env(), WEIGHTFS_CONVERT_NO_COPY=no_copy)
                # LeakSanitizer cannot run under ptrace (a sanitizer build
                # would end in its fatal error); the other checks still run
                env["ASAN_OPTIONS"] += ":detect_leaks=0"
                r = subprocess.run([strace, "-f", "-qq", "-e", "trace=copy_file_range", "-o", log, BIN,
                                    "convert", os.path.join(src, "m.gguf"), out], env=env,
                                   stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                   timeout=120)
                calls = [ln for ln in open(log) if "copy_file_range(" in ln]
                good = [ln for ln in calls if re.search(r"= [1-9][0-9]*$", ln.strip())]
                label = "%s -> %s%s" % (os.path.basename(src), os.path.basename(dst),
                                        " (no copy)" if no_copy else "")
                if r.returncode != 0:
                    errs.add("%s: rc %d, %r" % (label, r.returncode, r.stderr[:200]))
                elif read_bytes(out) != want:
                    errs.add("%s: differs from the mount's model.safetensors" % label)
                elif how == "copied" and not good:
                    errs.add("%s: no copy_file_range copied bytes: %r" % (label, calls[:2]))
                elif how == "refused" and (good or not calls):
                    errs.add("%s: copy_file_range not refused once: %r" % (label, calls[:2]))
                elif how == "none" and calls:
                    errs.add("%s: copy_file_range called: %r" % (label, calls[:2]))
                if os.path.exists(out):
                    os.unlink(out)
        finally:
            shutil.rmtree(mem, ignore_errors=True)
        errs.raise_if_any()
        return "copy_file_range on ext4-like disk and tmpfs, EXDEV fallback, forced fallback: same bytes"
    check("cmds: convert's stored bytes by copy_file_range (disk, tmpfs), its fallback across "
          "filesystems and when turned off: all == the mount's model.safetensors", write_paths)

    def overwrite():
        errs = Errs()
        d = new_dir("cmds-ow-")
        out = os.path.join(d, "x.safetensors")
        write_file(out, b"keep me")
        rc, so, err = cmd_run(["convert", tiny, out])
        if rc != 1 or read_bytes(out) != b"keep me" or "--force" not in err or len(err.splitlines()) != 1:
            errs.add("without --force: rc %d, %r" % (rc, err))
        rc, so, err = cmd_run(["convert", "--force", tiny, out])
        with Mount(tiny) as m:
            want = read_bytes(m.path("model.safetensors"))
        if rc != 0 or read_bytes(out) != want:
            errs.add("--force: rc %d, %r" % (rc, err))
        if sorted(os.listdir(d)) != ["x.safetensors"]:
            errs.add("files left: %r" % os.listdir(d))
        errs.raise_if_any()
    check("cmds: convert refuses to overwrite OUT without --force; --force replaces it", overwrite)

    def failures():
        errs = Errs()
        # OUT's folder does not exist
        rc, so, err = cmd_run(["convert", tiny, os.path.join(TMP, "no-such-dir", "x.safetensors")])
        if rc != 1 or len(err.splitlines()) != 1:
            errs.add("missing folder: rc %d, %r" % (rc, err))
        # a full filesystem: a tmpfs too small for the output
        small = new_dir("cmds-full-")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", small],
                           stderr=subprocess.PIPE)
        if r.returncode != 0:
            skip_or_fail("cannot mount a tmpfs: %s" % r.stderr.decode().strip())
        try:
            rc, so, err = cmd_run(["convert", tiny, os.path.join(small, "x.safetensors")])
            if rc != 1 or os.listdir(small) or "No space" not in err or len(err.splitlines()) != 1:
                errs.add("full disk: rc %d, %r, files %r" % (rc, err, os.listdir(small)))
        finally:
            subprocess.run(["umount", small])
        errs.raise_if_any()
    check("cmds: convert to a missing folder or a full disk fails in one line and leaves no file",
          failures)

    big = os.path.join(new_dir("cmds-big-"), "big.safetensors")
    big_bytes = 1 << 30

    def interrupted(how):
        errs = Errs()
        sparse_st(big, big_bytes)
        d = new_dir("cmds-int-")
        out = os.path.join(d, "x.safetensors")
        p = subprocess.Popen([BIN, "convert", "-o", "dtype=f16", big, out], stdin=subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, preexec_fn=reset_signals)
        t0 = time.monotonic()
        while not writing_in(p.pid, d) and p.poll() is None and time.monotonic() - t0 < 20:
            time.sleep(0.002)
        time.sleep(0.05)
        if p.poll() is not None:
            raise Fail("convert ended (rc %s) before it could be interrupted" % p.returncode)
        if how == "SIGINT":
            p.send_signal(signal.SIGINT)
        elif how == "SIGKILL":
            p.kill()
        else:
            os.truncate(big, big_bytes // 2)
        so, err = p.communicate(timeout=120)
        err = err.decode(errors="replace")
        want_rc = {"SIGINT": 130, "SIGKILL": -9}.get(how, 2)
        if p.returncode != want_rc or len(err.splitlines()) != (0 if how == "SIGKILL" else 1):
            errs.add("rc %d (expected %d), stderr %r" % (p.returncode, want_rc, err))
        if san_lines(err):
            errs.add("sanitizer output")
        if os.listdir(d):
            errs.add("files left: %r" % os.listdir(d))
        errs.raise_if_any()
        return err.strip()
    check("cmds: convert interrupted by SIGINT: exit 130, no OUT, no temporary file",
          interrupted, "SIGINT")
    check("cmds: model truncated mid-convert: exit 2, one line, no OUT, no temporary file",
          interrupted, "truncate")
    check("cmds: convert killed by SIGKILL leaves no file (unnamed temporary file, O_TMPFILE)",
          interrupted, "SIGKILL")

    def out_mode():
        # the output takes the model's permission bits, less the umask, as cp does
        errs = Errs()
        d = new_dir("cmds-mode-")
        for mode, umask, want in ((0o600, 0o022, 0o600), (0o644, 0o022, 0o644), (0o644, 0o077, 0o600),
                                  (0o640, 0o002, 0o640)):
            model = os.path.join(d, "m.gguf")
            shutil.copyfile(tiny, model)
            os.chmod(model, mode)
            out = os.path.join(d, "x.safetensors")
            p = subprocess.run([BIN, "convert", model, out], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=60,
                               preexec_fn=lambda um=umask: (reset_signals(), os.umask(um)))
            got = stat.S_IMODE(os.stat(out).st_mode) if os.path.exists(out) else None
            cp = os.path.join(d, "cp.out")
            subprocess.run(["sh", "-c", "umask %03o; cp %s %s" % (umask, model, cp)], check=True)
            if p.returncode != 0 or got != want or stat.S_IMODE(os.stat(cp).st_mode) != want:
                errs.add("model %o, umask %03o: rc %d, output %s, cp %o, expected %o" % (
                    mode, umask, p.returncode, "%o" % got if got is not None else "missing",
                    stat.S_IMODE(os.stat(cp).st_mode), want))
            for f in (out, cp, model):
                os.unlink(f)
        if os.listdir(d):
            errs.add("files left: %r" % os.listdir(d))
        errs.raise_if_any()
    check("cmds: convert's output takes the model's permission bits less the umask, as cp does", out_mode)

    def progress_tty():
        import pty
        d = new_dir("cmds-tty-")
        out = os.path.join(d, "x.safetensors")
        mfd, sfd = pty.openpty()
        p = subprocess.Popen([BIN, "convert", tiny, out], stdin=subprocess.DEVNULL,
                             stdout=subprocess.DEVNULL, stderr=sfd, preexec_fn=reset_signals)
        os.close(sfd)
        text = b""
        while True:
            try:
                b = os.read(mfd, 4096)
            except OSError:
                break
            if not b:
                break
            text += b
        os.close(mfd)
        rc = p.wait(60)
        t = text.decode(errors="replace")
        if rc != 0 or "MB/s" not in t or not os.path.exists(out):
            raise Fail("rc %d, stderr %r" % (rc, t))
        return t.strip().replace("\r", "\\r").replace("\x1b[K", "")[-80:]
    check("cmds: convert draws progress (rate) on a terminal, nothing otherwise", progress_tty)

    def named_like_command():
        d = new_dir("cmds-ls-")
        shutil.copy(tiny, os.path.join(d, "ls"))
        mp = new_dir()
        rc, out, err, _ = run_cli(["./ls", mp], cwd=d, env=san_env())
        try:
            if rc != 0 or not os.path.exists(os.path.join(mp, "tensors.json")):
                raise Fail("weightfs ./ls MNT: rc %d, %r" % (rc, err))
        finally:
            for p in daemon_pid(mp):
                force_unmount(mp)
                wait_pid(p, 10)
            force_unmount(mp)
    check("cmds: a model file named ls mounts as ./ls", named_like_command)

    def fstab():
        if os.geteuid() != 0 or not shutil.which("unshare") or not shutil.which("mount"):
            skip_or_fail("needs root, unshare and mount")
        # mount(8) runs mount.fuse3 with PATH reset to the system's, so the
        # binary is put where that PATH looks, inside a private mount
        # namespace that nothing else sees.
        mp = new_dir()
        tab = os.path.join(TMP, "fstab")
        with open(tab, "w") as f:
            f.write("%s %s fuse.weightfs ro,allow_other,dtype=bf16 0 0\n" % (tiny, mp))
        with Mount(tiny, ["-o", "dtype=bf16"]) as m:
            want = hashlib.sha256(read_bytes(m.path("blk/1/ffn_up/weight"))).hexdigest()
        script = r"""
set -u
mount -t tmpfs tmpfs /usr/local/sbin || exit 90
ln -s "$BIN" /usr/local/sbin/weightfs
mount -T "$TAB" "$MP" || exit 91
grep -q " $MP ro,.* - fuse.weightfs " /proc/self/mountinfo || exit 92
test "$(sha256sum < "$MP/blk/1/ffn_up/weight" | cut -d' ' -f1)" = "$WANT" || exit 93
grep -q '"dtype":"bfloat16"' "$MP/tensors.json" || exit 94
umount "$MP" || exit 95
mount -t fuse.weightfs -o ro "$MODEL" "$MP" || exit 96
test -s "$MP/tensors.json" || exit 97
umount "$MP" || exit 98
# mount(8) passes rw unless told ro, so no options is rw too: taken, and
# the mount is read-only all the same
for o in "-o rw" "-o ro,rw" ""; do
	out=$(mount -t fuse.weightfs $o "$MODEL" "$MP" 2>&1) || { echo "$o: $out"; exit 99; }
	grep -q " $MP ro,.* - fuse.weightfs " /proc/self/mountinfo || exit 100
	touch "$MP/x" 2>/dev/null && exit 101
	umount "$MP" || exit 102
done
exit 0
"""
        env = dict(os.environ, BIN=BIN, TAB=tab, MP=mp, WANT=want, MODEL=tiny)
        r = subprocess.run(["unshare", "--mount", "--propagation", "private", "sh", "-c", script],
                           env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=60)
        if r.returncode == 90:
            skip_or_fail("cannot mount a tmpfs in a private namespace")
        if r.returncode != 0:
            raise Fail("step %d failed: %r" % (r.returncode, r.stdout.decode(errors="replace")[-300:]))
        return "an /etc/fstab line mounts through mount(8) and mount.fuse3; rw mounts read-only"
    check("cmds: /etc/fstab line (fuse.weightfs, ro,allow_other,dtype=bf16) mounts with mount -T "
          "and umount; rw (explicit, or mount(8)'s default) mounts read-only", fstab)
