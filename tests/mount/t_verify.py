"""Group verify: weightfs verify MODEL on intact models of every kind (a
GGUF, a split GGUF, a safetensors file, shards with an index, a model folder, a hub cache
and one of its snapshots, a GGUF weightfs convert wrote), damaged copies (a
flipped byte in a tensor of a GGUF, of a safetensors file, of an LFS blob
and of a small git blob of a hub cache; a truncated file; a dangling
snapshot link; a refs/main naming no snapshot; nonzero GGUF padding),
--write then --against on a modified copy naming exactly the changed
tensors, --json, exit codes 0/1/2, and the mount's user.weightfs.sha256
against hashlib over the stored bytes read straight from the file.
"""

import hashlib
import json
import os
import shutil
import struct
import subprocess
import time

import numpy as np

from wf_harness import check, Errs, Fail, GGML, Mount, new_dir, STO
from wf_models import GGML_MAN, make_hf_folder, make_st_set, SIDECARS, st_set_bytes, write_file
from t_sets import write_gguf_split
from t_stats import run

LLAMA = os.path.join(GGML, "mixed_llama_tiny.gguf")
REV = "89abcdef0123456789abcdef0123456789abcdef"


def verify(*args, timeout=120):
    return run(["verify"] + list(args), timeout=timeout)


def verify_json(*args):
    rc, out, err = verify("--json", *args)
    try:
        return rc, json.loads(out), err
    except ValueError:
        raise Fail("verify --json %s: exit %d, not JSON: %r %r" % (" ".join(args), rc, out[:300], err[:300]))


def git_blob_id(data):
    return hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()


def make_hub(root, src):
    """models--org--tiny of folder src as huggingface_hub lays it out: a
    .safetensors file (LFS) in blobs/ under its SHA-256, any other file
    under its git blob id, snapshots/REV/NAME links to ../../blobs/ID."""
    repo = os.path.join(root, "models--org--tiny")
    snap = os.path.join(repo, "snapshots", REV)
    os.makedirs(snap)
    os.makedirs(os.path.join(repo, "blobs"))
    os.makedirs(os.path.join(repo, "refs"))
    write_file(os.path.join(repo, "refs", "main"), REV.encode())
    ids = {}
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if not os.path.isfile(p):
            continue
        data = open(p, "rb").read()
        lfs = name.endswith(".safetensors")
        bid = hashlib.sha256(data).hexdigest() if lfs else git_blob_id(data)
        write_file(os.path.join(repo, "blobs", bid), data)
        os.symlink(os.path.join("..", "..", "blobs", bid), os.path.join(snap, name))
        ids[name] = bid
    return repo, snap, ids


def flip(path, off):
    with open(path, "r+b") as f:
        f.seek(off)
        b = f.read(1)
        f.seek(off)
        f.write(bytes([b[0] ^ 0x20]))


def st_offsets(path):
    """name -> (absolute offset, nbytes) of a safetensors file's tensors."""
    data = open(path, "rb").read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    return {k: (8 + n + v["data_offsets"][0], v["data_offsets"][1] - v["data_offsets"][0])
            for k, v in head.items() if k != "__metadata__"}


def llama_tensors():
    return [t for t in GGML_MAN["tensors"] if t["file"] == "mixed_llama_tiny.gguf"]


def expect(rc_want, args, errs, label, must=()):
    """Runs verify with args; the exit code must be rc_want (a set or an int)
    and stdout + stderr must hold every string of must."""
    rc, out, err = verify(*args)
    want = rc_want if isinstance(rc_want, (set, tuple)) else {rc_want}
    if rc not in want:
        errs.add("%s: exit %d, expected %s; out %r err %r" % (label, rc, sorted(want), out[-300:], err[-300:]))
    for s in must:
        if s not in out + err:
            errs.add("%s: %r not said; out %r err %r" % (label, s, out[-300:], err[-300:]))
    return rc, out, err


def intact():
    d = new_dir("verify-")
    errs = Errs()
    st_one = os.path.join(STO, sorted(f for f in os.listdir(STO) if f.endswith(".safetensors"))[0])
    shards = os.path.join(d, "shards")
    make_st_set(shards)
    folder = os.path.join(d, "folder")
    make_hf_folder(folder)
    repo, snap, _ = make_hub(d, folder)
    conv_st = os.path.join(d, "conv.safetensors")
    conv = os.path.join(d, "conv.gguf")
    for a, b in ((LLAMA, conv_st), (conv_st, conv)):
        rc, _, err = run(["convert", a, b])
        if rc != 0:
            raise Fail("convert %s %s: exit %d: %s" % (a, b, rc, err))
    split = write_gguf_split(os.path.join(d, "split"), "m", 3, per=3)[1]
    models = [LLAMA, os.path.join(GGML, "align_64.gguf"), split, st_one, shards,
              os.path.join(shards, "model.safetensors.index.json"), folder, repo, snap, conv, conv_st]
    for m in models:
        rc, out, err = expect(0, [m], errs, os.path.basename(m), ("intact",))
        if err:  # no progress meter when stderr is no terminal, and nothing else to say
            errs.add("%s: stderr %r" % (m, err[:200]))
        rc, j, err = verify_json(m)
        if j.get("verdict") != "intact" or j.get("exit") != 0 or j.get("problems"):
            errs.add("%s: --json %r" % (m, {k: j.get(k) for k in ("verdict", "exit", "problems")}))
    # each file's sha256 is the file's, as sha256sum says
    rc, j, _ = verify_json(shards)
    for f in j["files"]:
        if f["sha256"] != hashlib.sha256(open(f["path"], "rb").read()).hexdigest():
            errs.add("%s: sha256 %s is not the file's" % (f["name"], f["sha256"]))
    if len(j["files"]) != 3:
        errs.add("shards: %d files listed, expected 3" % len(j["files"]))
    rc, j, _ = verify_json(repo)
    if not j["hub"] or j["hub"]["blobs"] != len(os.listdir(os.path.join(repo, "blobs"))):
        errs.add("hub: %r, expected every blob" % j["hub"])
    errs.raise_if_any()
    return "%d models" % len(models)


def hub_damage():
    errs = Errs()
    d = new_dir("verify-")
    folder = os.path.join(d, "folder")
    make_hf_folder(folder)
    # an LFS blob with a flipped byte inside a tensor
    repo, snap, ids = make_hub(os.path.join(d, "a"), folder)
    shard = "model-00002-of-00003.safetensors"
    blob = os.path.join(repo, "blobs", ids[shard])
    name, (off, n) = sorted(st_offsets(blob).items())[0]
    flip(blob, off + n // 2)
    rc, out, err = expect(1, [repo], errs, "lfs flip", (shard, "SHA-256", ids[shard]))
    rc, j, _ = verify_json(repo)
    files = {p["file"] for p in j["problems"]}
    if rc != 1 or not any(shard in (f or "") for f in files):
        errs.add("lfs flip --json: problems %r" % j["problems"])
    # the snapshot alone, given as MODEL; the index in it, and the shard itself
    expect(1, [snap], errs, "lfs flip, snapshot", (shard,))
    expect(1, [os.path.join(snap, "model.safetensors.index.json")], errs, "lfs flip, index", (shard, "SHA-256"))
    expect(1, [os.path.join(snap, shard)], errs, "lfs flip, the shard", (shard, "SHA-256"))
    # another shard opens the whole set (the index beside it): the damaged shard is found
    expect(1, [os.path.join(snap, "model-00001-of-00003.safetensors")], errs, "another shard of the set", (shard,))
    # a small file (git blob id) changed
    repo, snap, ids = make_hub(os.path.join(d, "b"), folder)
    blob = os.path.join(repo, "blobs", ids["config.json"])
    flip(blob, 3)
    expect(1, [repo], errs, "git blob flip", ("config.json", "git blob id"))
    # a dangling link
    repo, snap, ids = make_hub(os.path.join(d, "c"), folder)
    os.unlink(os.path.join(repo, "blobs", ids["tokenizer.json"]))
    expect(1, [repo], errs, "dangling link", ("tokenizer.json", "dangling"))
    # a dangling link to a shard: the model cannot open either, and that is damage
    repo, snap, ids = make_hub(os.path.join(d, "d"), folder)
    os.unlink(os.path.join(repo, "blobs", ids[shard]))
    expect(1, [repo], errs, "dangling shard link", (shard, "dangling"))
    # refs/main naming no snapshot
    repo, snap, ids = make_hub(os.path.join(d, "e"), folder)
    write_file(os.path.join(repo, "refs", "main"), b"0" * 40)
    expect({1}, [repo], errs, "refs/main", ("refs/main",))
    # a hub cache of a checkpoint weightfs does not read: intact by its blobs alone, then damaged
    pt = os.path.join(d, "pt-src")
    os.makedirs(pt)
    write_file(os.path.join(pt, "pytorch_model.bin"), b"PK\3\4" + bytes(4000))
    write_file(os.path.join(pt, "config.json"), SIDECARS["config.json"])
    repo, snap, ids = make_hub(os.path.join(d, "pt"), pt)
    rc, out, err = expect(0, [repo], errs, "hub of a PyTorch checkpoint", ("intact", "note:"))
    flip(os.path.join(repo, "blobs", ids["pytorch_model.bin"]), 100)
    expect(1, [repo], errs, "hub of a PyTorch checkpoint, damaged", ("pytorch_model.bin", "git blob id"))
    # a truncated LFS blob
    repo, snap, ids = make_hub(os.path.join(d, "f"), folder)
    blob = os.path.join(repo, "blobs", ids[shard])
    os.truncate(blob, os.path.getsize(blob) - 7)
    expect(1, [repo], errs, "truncated blob", (shard,))
    errs.raise_if_any()


def hub_special():
    """Issue 40 item 8: a blob that is a link (named by 64 hex digits) to /dev/zero was hashed
    forever, and a refs/main that is a FIFO blocked; both are refused as not regular files."""
    errs = Errs()
    d = new_dir("verify-")
    folder = os.path.join(d, "folder")
    make_hf_folder(folder)
    repo, snap, ids = make_hub(os.path.join(d, "z"), folder)
    os.symlink("/dev/zero", os.path.join(repo, "blobs", "ab" * 32))
    os.mkfifo(os.path.join(repo, "blobs", "cd" * 20))
    t0 = time.monotonic()
    try:
        rc, out, err = verify(repo, timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail("verify of a hub whose blobs/ holds /dev/zero and a FIFO: no answer in 30 s")
    if rc != 2 or (out + err).count("not a regular file") != 2 or "abababababab" not in out + err:
        errs.add("/dev/zero and a FIFO in blobs/: exit %d, %r %r" % (rc, out[-400:], err[-300:]))
    os.unlink(os.path.join(repo, "refs", "main"))
    os.mkfifo(os.path.join(repo, "refs", "main"))
    try:
        rc, out, err = verify(repo, timeout=30)
    except subprocess.TimeoutExpired:
        raise Fail("verify of a hub whose refs/main is a FIFO: no answer in 30 s")
    if rc == 0 or "refs/main: not a regular file" not in out + err:
        errs.add("refs/main a FIFO: exit %d, %r %r" % (rc, out[-400:], err[-300:]))
    errs.raise_if_any()
    return "answered in %.1f s" % (time.monotonic() - t0)


def damaged_files():
    """No manifest: a truncated file, nonzero padding and trailing bytes
    after a GGUF's last tensor are still found."""
    errs = Errs()
    d = new_dir("verify-")
    data = open(LLAMA, "rb").read()
    cut = write_file(os.path.join(d, "cut.gguf"), data[:len(data) - 1000])
    expect({1, 2}, [cut], errs, "truncated gguf", ("cut.gguf", "past end of file"))
    st = os.path.join(d, "cut.safetensors")
    st_full = st_set_bytes([("a", np.arange(64, dtype=np.float32)), ("b", np.ones(32, np.float32))])
    write_file(st, st_full[:-5])
    expect({1, 2}, [st], errs, "truncated safetensors", ("cut.safetensors", "truncated"))
    write_file(os.path.join(d, "long.safetensors"), st_full + b"\0" * 8)
    expect(1, [os.path.join(d, "long.safetensors")], errs, "safetensors with trailing bytes", ("trailing bytes",))
    sh = os.path.join(d, "shards")
    make_st_set(sh)
    ix = os.path.join(sh, "model.safetensors.index.json")
    j = json.load(open(ix))
    j["metadata"]["total_size"] += 1
    write_file(ix, json.dumps(j).encode())
    expect(1, [sh], errs, "index total_size", ("total_size",))
    last = max(llama_tensors(), key=lambda t: t["file_offset"])
    end = last["file_offset"] + last["nbytes"]
    if end % 32 == 0:
        tail = write_file(os.path.join(d, "tail.gguf"), data + b"\0" * 5)
        _, out, _ = expect(0, [tail], errs, "zero padding after the last tensor")
        bad = write_file(os.path.join(d, "pad.gguf"), data + b"\0\0\1")
        expect(1, [bad], errs, "nonzero padding", ("padding", last["name"], "not zeros"))
        long = write_file(os.path.join(d, "long.gguf"), data + b"\0" * 32)
        expect(1, [long], errs, "32 bytes after the last tensor", ("more than the padding",))
    else:
        errs.add("the last tensor of %s does not end aligned: the padding cases need another file" % LLAMA)
    # padding between two tensors of a part of a split GGUF (16-byte tensors, alignment 32)
    parts = write_gguf_split(os.path.join(d, "split"), "m", 2, per=3)
    man = os.path.join(d, "split.json")
    verify("--write", man, parts[0])
    ts = sorted((t for t in json.load(open(man))["tensors"] if t["file"] == os.path.basename(parts[1])),
                key=lambda t: t["offset"])
    if len(ts) != 3 or ts[1]["offset"] - ts[0]["offset"] - ts[0]["nbytes"] != 16:
        errs.add("split part: not three tensors 16 bytes apart: %r" % ts)
    else:
        with open(parts[1], "r+b") as f:
            f.seek(ts[0]["offset"] + ts[0]["nbytes"] + 3)
            f.write(b"\x01")
        expect(1, [parts[0]], errs, "nonzero padding between tensors",
               (os.path.basename(parts[1]), ts[0]["name"], "not zeros"))
    expect(2, [os.path.join(d, "missing.gguf")], errs, "missing file")
    expect(2, [], errs, "no MODEL")
    errs.raise_if_any()


def manifests():
    """--write then --against on copies with some tensors changed: exactly
    those are named, for a GGUF, a safetensors file and shards."""
    errs = Errs()
    d = new_dir("verify-")
    man = os.path.join(d, "m.json")
    rc, out, err = verify("--write", man, LLAMA)
    if rc != 0:
        raise Fail("--write: exit %d %s" % (rc, err))
    m = json.load(open(man))
    data = open(LLAMA, "rb").read()
    want = {t["name"]: hashlib.sha256(data[t["file_offset"]:t["file_offset"] + t["nbytes"]]).hexdigest()
            for t in llama_tensors()}
    got = {t["name"]: t["sha256"] for t in m["tensors"]}
    if got != want:
        errs.add("manifest tensor digests differ from hashlib's: %r" % sorted(k for k in want if got.get(k) != want[k]))
    if m["files"][0]["sha256"] != hashlib.sha256(data).hexdigest():
        errs.add("manifest file digest is not the file's")
    expect(0, ["--against", man, LLAMA], errs, "against itself", ("intact",))
    changed = ["blk.0.attn_q.weight", "output.weight"]
    copy = os.path.join(d, "copy.gguf")
    shutil.copyfile(LLAMA, copy)
    for t in llama_tensors():
        if t["name"] in changed:
            flip(copy, t["file_offset"] + t["nbytes"] - 1)
    rc, j, _ = verify_json("--against", man, copy)
    named = {p["tensor"] for p in j["problems"] if p["kind"] == "tensor"}
    if rc != 1 or named != set(changed):
        errs.add("gguf: exit %d, tensors named %r, expected %r" % (rc, sorted(named), changed))
    rc, out, _ = verify("--against", man, copy)
    for c in changed:
        if c not in out:
            errs.add("gguf text: %s not named: %r" % (c, out))
    # safetensors shards: one tensor of one shard
    sh = os.path.join(d, "shards")
    make_st_set(sh)
    man2 = os.path.join(d, "s.json")
    if verify("--write", man2, sh)[0] != 0:
        raise Fail("--write shards failed")
    sh2 = os.path.join(d, "shards2")
    shutil.copytree(sh, sh2)
    shard = os.path.join(sh2, "model-00003-of-00003.safetensors")
    name, (off, n) = sorted(st_offsets(shard).items())[-1]
    flip(shard, off)
    rc, j, _ = verify_json("--against", man2, sh2)
    named = {p["tensor"] for p in j["problems"] if p["kind"] == "tensor"}
    files = {p["file"] for p in j["problems"] if p["kind"] == "file"}
    if rc != 1 or named != {name} or files != {"model-00003-of-00003.safetensors"}:
        errs.add("shards: exit %d, tensors %r files %r, expected %r in shard 3" % (rc, named, files, name))
    # a model folder: its small files are in the manifest too
    fo = os.path.join(d, "folder")
    make_hf_folder(fo)
    man4 = os.path.join(d, "f.json")
    if verify("--write", man4, fo)[0] != 0:
        raise Fail("--write folder failed")
    side = {f["name"] for f in json.load(open(man4))["files"] if f.get("sidecar")}
    if "config.json" not in side:
        errs.add("folder manifest: sidecars %r, no config.json" % sorted(side))
    fo2 = os.path.join(d, "folder2")
    shutil.copytree(fo, fo2)
    write_file(os.path.join(fo2, "config.json"), b'{"model_type": "other"}\n')
    rc, j, _ = verify_json("--against", man4, fo2)
    files = {p["file"] for p in j["problems"]}
    if rc != 1 or files != {"config.json"}:
        errs.add("folder: exit %d, problems in %r, expected config.json alone" % (rc, files))
    expect(0, ["--against", man4, fo], errs, "folder against its manifest")
    # one safetensors file, renamed in the copy: one tensor changed
    st_one = os.path.join(STO, "dtype_bf16.safetensors")
    man3 = os.path.join(d, "st.json")
    if verify("--write", man3, st_one)[0] != 0:
        raise Fail("--write safetensors failed")
    st_copy = os.path.join(d, "renamed.safetensors")
    shutil.copyfile(st_one, st_copy)
    name, (off, n) = sorted(st_offsets(st_copy).items())[0]
    flip(st_copy, off + n - 1)
    rc, j, _ = verify_json("--against", man3, st_copy)
    named = {p["tensor"] for p in j["problems"] if p["kind"] == "tensor"}
    if rc != 1 or named != {name}:
        errs.add("safetensors: exit %d, tensors named %r, expected %r" % (rc, sorted(named), name))
    # a manifest that is no manifest, or none
    bad = write_file(os.path.join(d, "bad.json"), b'{"format": "other"}')
    expect(2, ["--against", bad, LLAMA], errs, "not a manifest", ("not a manifest",))
    expect(2, ["--against", os.path.join(d, "none.json"), LLAMA], errs, "no manifest")
    # --write of a model that does not open writes nothing
    cut = write_file(os.path.join(d, "cut.gguf"), data[:5000])
    out_man = os.path.join(d, "never.json")
    verify("--write", out_man, cut)
    if os.path.exists(out_man):
        errs.add("--write of a damaged model wrote %s" % out_man)
    errs.raise_if_any()


def xattr_sha256():
    """user.weightfs.sha256 of every tensor file is hashlib's SHA-256 of its
    stored bytes read from the model file (not of the decoded view), under
    the default dtype and -o dtype=f16; listxattr names it; asked twice the
    same."""
    errs = Errs()
    data = open(LLAMA, "rb").read()
    want = {t["name"]: hashlib.sha256(data[t["file_offset"]:t["file_offset"] + t["nbytes"]]).hexdigest()
            for t in llama_tensors()}
    st_one = os.path.join(STO, sorted(f for f in os.listdir(STO) if f.endswith(".safetensors"))[0])
    st_data = open(st_one, "rb").read()
    st_want = {k: hashlib.sha256(st_data[o:o + n]).hexdigest() for k, (o, n) in st_offsets(st_one).items()}
    n = 0
    for model, w, opts in ((LLAMA, want, ()), (LLAMA, want, ("-o", "dtype=f16")), (st_one, st_want, ())):
        with Mount(model, opts) as mt:
            tj = json.load(open(mt.path("tensors.json")))
            for e in tj["tensors"]:
                p = mt.path(e["path"])
                if "user.weightfs.sha256" not in os.listxattr(p):
                    errs.add("%s: listxattr %r" % (e["name"], os.listxattr(p)))
                got = os.getxattr(p, "user.weightfs.sha256").decode()
                if got != w.get(e["name"]):
                    errs.add("%s %s: sha256 %s, hashlib %s" % (os.path.basename(model), e["name"], got,
                                                               w.get(e["name"])))
                if os.getxattr(p, "user.weightfs.sha256").decode() != got:
                    errs.add("%s: a second ask differs" % e["name"])
                n += 1
            for other in ("tensors.json", "WEIGHTFS.txt"):
                try:
                    os.getxattr(mt.path(other), "user.weightfs.sha256")
                    errs.add("%s has user.weightfs.sha256" % other)
                except OSError:
                    pass
    errs.raise_if_any()
    return "%d tensor files" % n


def linear_against():
    """Issue 40 item 6: --against looked each manifest entry up by walking
    cJSON's list from its start (10k / 20k / 40k entries: 0.20 / 1.08 /
    6.53 s). N and 4N entries not in the model, files and tensors, timed in
    the same run (median of 3): 4 times the entries within 5 times the time."""
    d = new_dir("verify-")
    man = os.path.join(d, "m.json")
    rc, out, err = verify("--write", man, LLAMA)
    if rc != 0:
        raise Fail("--write: exit %d %s" % (rc, err))
    m = json.load(open(man))
    times = {}
    for n in (10000, 40000):
        big = dict(m, files=m["files"] + [{"name": "f%d.gguf" % i, "sha256": "0" * 64} for i in range(n)],
                   tensors=m["tensors"] + [{"name": "x%d" % i, "nbytes": 4, "sha256": "0" * 64} for i in range(n)])
        p = os.path.join(d, "m%d.json" % n)
        with open(p, "w") as f:
            json.dump(big, f)
        runs = []
        for _ in range(3):
            t0 = time.monotonic()
            rc, out, err = verify("--against", p, LLAMA)
            runs.append(time.monotonic() - t0)
            if rc != 1 or out.count("in the manifest, not in the model") != 2 * n:
                raise Fail("%d entries: exit %d, %d lines named, %r" % (
                    n, rc, out.count("in the manifest, not in the model"), err[-200:]))
        times[n] = sorted(runs)[1]
    if times[40000] > 5 * times[10000]:
        raise Fail("40,000 entries took %.2f s, 10,000 %.2f s: not linear" % (times[40000], times[10000]))
    return "10,000 entries %.2f s, 40,000 entries %.2f s" % (times[10000], times[40000])


def group_verify():
    check("verify: intact models of every kind exit 0 (GGUF, split GGUF, safetensors, shards, index, folder, "
          "hub cache, snapshot, convert's output)", intact)
    check("verify: hub cache damage (LFS and git blobs changed, dangling links, refs/main, truncated blob) "
          "exits 1 naming the file", hub_damage)
    check("verify: a blob linked to /dev/zero, a FIFO blob and a FIFO refs/main are refused, never hashed "
          "or waited on", hub_special)
    check("verify: truncated files, trailing bytes, an index's total_size, GGUF padding, a missing MODEL "
          "(exit 1 or 2, a clear line)", damaged_files)
    check("verify: --write then --against names exactly the changed tensors (GGUF, shards)", manifests)
    check("verify: --against a manifest of N and 4N entries takes at most 5 times as long", linear_against)
    check("verify: user.weightfs.sha256 is hashlib's SHA-256 of the stored bytes", xattr_sha256)
