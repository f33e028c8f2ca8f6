"""Group sets: whole checkpoints (split GGUF, safetensors index and shards,
model folders, hub caches), malformed sets and 1,000-part sets.
"""

import errno
import json
import os
import random
import shutil
import time

import numpy as np

from wf_harness import (
    check, Errs, Fail, force_unmount, GGML, is_mounted, load_json, Mount, new_dir,
    one_line_error, run_cli, san_env, san_lines, SANITIZED, SEED, sha256_file, unmount_daemon)
from wf_models import (
    f32_tensor, GGML_MAN, gguf_bytes, gguf_expected, gkv, make_hf_folder, make_st_set,
    SIDECARS, st_set_bytes, write_file)
from wf_read import changed_lines, expect_eio, o_direct_read, verify_bytes
from wf_tree import meta_dir


# ---------------------------------------------------------------- group: sets
# MODEL as a whole checkpoint (wf_set.c): a split GGUF, a safetensors index
# and its shards, a model folder, a hub cache.

def make_hub(root, src):
    """A hub cache models--org--tiny of folder src: blobs, refs/main and
    snapshots/<rev>/ symlinks into ../../blobs/.  Returns its path."""
    repo = os.path.join(root, "models--org--tiny")
    rev = "0123456789abcdef0123456789abcdef01234567"
    snap = os.path.join(repo, "snapshots", rev)
    for sub in ("blobs", "refs", snap):
        os.makedirs(os.path.join(repo, sub), exist_ok=True)
    write_file(os.path.join(repo, "refs", "main"), rev.encode())
    for name in sorted(os.listdir(src)):
        p = os.path.join(src, name)
        if os.path.isdir(p):
            continue
        h = sha256_file(p)
        shutil.copyfile(p, os.path.join(repo, "blobs", h))
        os.symlink(os.path.join("..", "..", "blobs", h), os.path.join(snap, name))
    return repo, snap


def check_set_mount(m, exp, errs, label, sidecars=None, n_parts=None):
    """tensors.json names each tensor's file; every tensor reads as exp;
    parts.json is valid JSON listing the parts; the root holds exactly the
    model's entries plus sidecars."""
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode())
    got = {e["name"]: e for e in tj["tensors"]}
    if set(got) != set(exp):
        errs.add("%s: tensors %r, expected %r" % (label, sorted(got)[:4], sorted(exp)[:4]))
    for name, (fn, b) in exp.items():
        e = got.get(name)
        if e is None:
            continue
        if e.get("file") != fn:
            errs.add("%s: %s: file %r, expected %r" % (label, name, e.get("file"), fn))
        p = m.path(e["path"])
        with open(p, "rb") as f:
            if f.read() != b:
                errs.add("%s: %s: wrong bytes" % (label, name))
        fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
        try:
            if os.pread(fd, 7, 3) != b[3:10]:
                errs.add("%s: %s: O_DIRECT pread wrong" % (label, name))
        finally:
            os.close(fd)
    with open(m.path("parts.json"), "rb") as f:
        pj = json.loads(f.read().decode())
    files = [x["file"] for x in pj["files"]]
    if n_parts is not None and len(files) != n_parts:
        errs.add("%s: parts.json lists %d files" % (label, len(files)))
    if sorted(set(fn for fn, _ in exp.values())) != sorted(files):
        errs.add("%s: parts.json files %r" % (label, files[:4]))
    tops = {e["path"].split("/")[0] for e in tj["tensors"]}
    # a safetensors set has model.gguf too (docs/gguf.md)
    # (or WEIGHTFS.txt says why not: a folder whose config.json or tokenizer it cannot follow)
    gguf = {"model.gguf"} if any(f.endswith(".safetensors") for f in files) else set()
    if gguf and not os.path.exists(m.path("model.gguf")):
        with open(m.path("WEIGHTFS.txt")) as f:
            if "No model.gguf: " not in f.read():
                errs.add("%s: no model.gguf, and WEIGHTFS.txt does not say why" % label)
        gguf = set()
    # a GGUF set has hf/ when transformers has its architecture (docs/hf.md), else
    # WEIGHTFS.txt says why not
    hf = set()
    if any(f.endswith(".gguf") for f in files):
        if os.path.isdir(m.path("hf")):
            hf = {"hf"}
        elif "No hf/: " not in open(m.path("WEIGHTFS.txt")).read():
            errs.add("%s: no hf/, and WEIGHTFS.txt does not say why" % label)
    want_root = tops | {"metadata.json", "tensors.json", "parts.json", "model.safetensors",
                        "WEIGHTFS.txt", meta_dir(m.mp)} | set(sidecars or {}) | gguf | hf
    root = set(os.listdir(m.mp))
    if root != want_root:
        errs.add("%s: root holds %r, expected %r" % (label, sorted(root), sorted(want_root)))
    for name, b in (sidecars or {}).items():
        try:
            with open(m.path(name), "rb") as f:
                if f.read() != b:
                    errs.add("%s: sidecar %s differs" % (label, name))
            st = os.stat(m.path(name))
            if st.st_size != len(b) or st.st_mode & 0o222:
                errs.add("%s: sidecar %s: size %d mode %o" % (label, name, st.st_size, st.st_mode))
        except OSError as ex:
            errs.add("%s: sidecar %s: %s" % (label, name, ex))
    return tj, pj


def daemon_rss_kb(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def expect_eio_direct(path):
    fd = os.open(path, os.O_RDONLY | os.O_DIRECT)
    try:
        return o_direct_read(fd, 64, 0) == errno.EIO
    finally:
        os.close(fd)


def group_sets():
    base = new_dir("sets-")

    # 1. the oracle's split pair, through either part
    for part in ("split_llama-00001-of-00002.gguf", "split_llama-00002-of-00002.gguf"):
        def split_oracle(part=part):
            errs = Errs()
            ts = [t for t in GGML_MAN["tensors"] if t["file"].startswith("split_llama-")]
            with Mount(os.path.join(GGML, part)) as m:
                with open(m.path("tensors.json"), "rb") as f:
                    tj = json.loads(f.read().decode())
                byname = {e["name"]: e for e in tj["tensors"]}
                if [e["name"] for e in tj["tensors"]] != [t["name"] for t in ts]:
                    errs.add("tensor order %r" % [e["name"] for e in tj["tensors"]][:5])
                rng = random.Random(SEED)
                n_ok = 0
                for t in ts:
                    e = byname.get(t["name"])
                    if e is None:
                        errs.add("%s missing" % t["name"])
                        continue
                    if e["file"] != t["file"] or e["offset"] != t["file_offset"] or \
                            e["nbytes"] != t["nbytes"]:
                        errs.add("%s: file/offset/nbytes %r/%d/%d" % (t["name"], e["file"], e["offset"],
                                                                     e["nbytes"]))
                    exp = gguf_expected(t)
                    p = m.path(e["path"])
                    if exp is None:
                        n_ok += expect_eio(p, errs, t["name"], e["size"])
                    else:
                        n_ok += verify_bytes(p, exp, rng, errs, t["name"], t["ne"][0] * 4)
                with open(m.path("parts.json"), "rb") as f:
                    pj = json.loads(f.read().decode())
                if pj["form"] != "split GGUF" or [x["file"] for x in pj["files"]] != \
                        ["split_llama-00001-of-00002.gguf", "split_llama-00002-of-00002.gguf"]:
                    errs.add("parts.json: %r" % pj)
                with open(m.path("metadata.json"), "rb") as f:
                    md = json.loads(f.read().decode())
                if md.get("split.no") != 0:
                    errs.add("metadata.json is not the first part's: split.no %r" % md.get("split.no"))
                for i, x in enumerate(pj["files"]):
                    if x["metadata"].get("split.no") != i:
                        errs.add("parts.json: file %d metadata split.no %r" % (i, x["metadata"].get("split.no")))
                errs.raise_if_any()
            return "%d tensors byte for byte" % n_ok
        check("sets: split GGUF oracle pair mounted via %s: every tensor as the manifest says" % part,
              split_oracle)

    # 2. a 3-shard safetensors set with an index: via the index, a shard, the folder
    d = os.path.join(base, "st3")
    exp3 = make_st_set(d)
    for given in ("model.safetensors.index.json", "model-00002-of-00003.safetensors", ""):
        def st_set(given=given):
            errs = Errs()
            with Mount(os.path.join(d, given) if given else d) as m:
                tj, pj = check_set_mount(m, exp3, errs, given or "folder", n_parts=3)
                md = json.loads(open(m.path("metadata.json"), "rb").read())
                if list(md) != ["total_size", "format", "shard"] or md["shard"] != "0":
                    errs.add("metadata.json %r" % md)
                if pj.get("index", {}).get("file") != "model.safetensors.index.json" or \
                        [x["metadata"]["shard"] for x in pj["files"]] != ["0", "1", "2"]:
                    errs.add("parts.json %r" % pj)
                errs.raise_if_any()
            return "%d tensors" % len(exp3)
        check("sets: safetensors index set mounted via %s" % (given or "its folder"), st_set)

    # 3. an HF folder with sidecars; then the same as a hub cache
    hf = os.path.join(base, "hf")
    exphf = make_hf_folder(hf)

    def hf_folder():
        errs = Errs()
        with Mount(hf) as m:
            check_set_mount(m, exphf, errs, "hf", sidecars=SIDECARS)
            for gone in ("pytorch_model.bin", "training_args.pt", "onnx", ".gitattributes",
                         "model.safetensors.index.json"):
                if os.path.lexists(m.path(gone)):
                    errs.add("%s is shown" % gone)
            errs.raise_if_any()
        return "%d sidecars byte for byte; .bin, .pt, sub-folder left out" % len(SIDECARS)
    check("sets: HF folder: tensors, sidecars byte for byte, .bin/.pt/sub-folder left out", hf_folder)

    hub, snap = make_hub(os.path.join(base, "hub"), hf)
    for given, label in ((snap, "snapshots/<rev>"), (hub, "models--org--tiny")):
        def hub_cache(given=given):
            errs = Errs()
            with Mount(given) as m:
                check_set_mount(m, exphf, errs, "hub", sidecars=SIDECARS)
                errs.raise_if_any()
        check("sets: hub cache (symlinks into blobs/) mounted via %s" % label, hub_cache)

    def hub_fifo():
        # refs/main a FIFO, a FIFO named like a sidecar and like an index:
        # nothing blocks; the FIFOs are left out or refused with one line
        errs = Errs()
        hub2, snap2 = make_hub(os.path.join(base, "hubfifo"), hf)
        refs = os.path.join(hub2, "refs", "main")
        os.unlink(refs)
        os.mkfifo(refs)
        os.mkfifo(os.path.join(snap2, "vocab.txt"))
        os.mkfifo(os.path.join(snap2, "other.safetensors.index.json"))
        for cmd in (["ls"], ["info"]):
            try:
                rc, _, err, _ = run_cli(cmd + [hub2], timeout=20)
            except Fail as e:  # it hung
                errs.add("%s on a hub whose refs/main is a FIFO: %s" % (cmd[0], e))
                continue
            lines = err.strip().splitlines()
            if rc == 0 or len(lines) != 1 or "refs/main is not a regular file" not in lines[0]:
                errs.add("%s: exit %d, stderr %r" % (cmd[0], rc, lines[:3]))
        rc, _, err, _ = run_cli(["ls", snap2], timeout=20)
        if rc != 0:
            errs.add("ls of the snapshot holding FIFOs: exit %d, %r" % (rc, err[-200:]))
        with Mount(snap2) as m:
            check_set_mount(m, exphf, errs, "hub fifo", sidecars=SIDECARS)
            for gone in ("vocab.txt", "other.safetensors.index.json"):
                if os.path.lexists(m.path(gone)):
                    errs.add("FIFO %s is shown" % gone)
        errs.raise_if_any()
    check("sets: FIFOs (refs/main, a sidecar, an index) never block: refused or left out", hub_fifo)

    def linear_merge():
        # issue 17 item 6: merging shards' metadata and matching a folder's files
        # against an index's shards were quadratic (29 s for 80,000 keys)
        errs = Errs()
        times = {}
        for n in (10000, 80000):
            d = os.path.join(base, "mdkeys%d" % n)
            os.makedirs(d)
            write_file(os.path.join(d, "m-00001-of-00002.safetensors"),
                       st_set_bytes([("a", np.ones(1, np.float32))], {"k%d" % i: "v" for i in range(n)}))
            write_file(os.path.join(d, "m-00002-of-00002.safetensors"),
                       st_set_bytes([("b", np.ones(1, np.float32))], {"format": "pt"}))
            t0 = time.monotonic()
            rc, out, err, _ = run_cli(["info", "--json", d], timeout=120)
            times[n] = time.monotonic() - t0
            if rc != 0 or len(json.loads(out)) != n + 1:
                errs.add("%d keys: rc %d, %s" % (n, rc, err[-200:]))
        # 8 times the keys: linear work takes about 8 times as long, quadratic 64
        if times[80000] > 24 * max(times[10000], 0.05):
            errs.add("80,000 keys took %.2f s, 10,000 %.2f s: not linear" % (times[80000], times[10000]))
        d = os.path.join(base, "idx150k")
        os.makedirs(d)
        with open(os.path.join(d, "model.safetensors.index.json"), "w") as f:
            json.dump({"weight_map": {"t%d" % i: "s-%06d.safetensors" % i for i in range(150000)}}, f)
        rc, out, err, secs = run_cli(["ls", d], timeout=60)
        if rc != 4 or "150000 shards, more than the 100000 allowed" not in err or secs > 20:
            errs.add("150,000-shard index: rc %d in %.1f s, %r" % (rc, secs, err.strip()))
        errs.raise_if_any()
        return "10,000 keys %.2f s, 80,000 keys %.2f s; 150,000-shard index refused in %.1f s" % (
            times[10000], times[80000], secs)
    check("sets: metadata of shards merged in linear time; an index over the part limit refused at once",
          linear_merge)

    # 4. one shard truncated under the mount
    def truncated_shard():
        errs = Errs()
        dt = os.path.join(base, "trunc")
        exp = make_st_set(dt, seed=1)
        with Mount(dt) as m:
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode())
            os.truncate(os.path.join(dt, "model-00002-of-00003.safetensors"), 100)
            for e in tj["tensors"]:
                p = m.path(e["path"])
                if e["file"] == "model-00002-of-00003.safetensors":
                    if not expect_eio_direct(p):
                        errs.add("%s: no EIO" % e["name"])
                else:
                    fd = os.open(p, os.O_RDONLY | os.O_DIRECT)
                    try:
                        if o_direct_read(fd, 1 << 16, 0) != exp[e["name"]][1]:
                            errs.add("%s (another shard): wrong" % e["name"])
                    finally:
                        os.close(fd)
            lines = changed_lines(m)
            if len(lines) != 1 or "model-00002-of-00003.safetensors" not in lines[0]:
                errs.add("daemon said %r" % lines)
            errs.raise_if_any()
    check("sets: a shard truncated under the mount: EIO for its tensors, the others still read",
          truncated_shard)

    sets_malformed(base)
    sets_thousand(base)


def gguf_split_part(no, count, total, tensors, extra_kvs=()):
    kvs = [gkv("general.architecture", "str", "llama"), gkv("split.no", "u16", no),
           gkv("split.count", "u16", count), gkv("split.tensors.count", "i32", total)] + list(extra_kvs)
    return gguf_bytes(tensors, kvs)


def write_gguf_split(d, prefix, n, per=1, total=None, fix=None):
    """n parts PREFIX-0000i-of-0000N.gguf of `per` F32 tensors each; fix(i,
    kwargs) may change a part.  Returns the part paths."""
    os.makedirs(d, exist_ok=True)
    paths = []
    for i in range(n):
        a = dict(no=i, count=n, total=n * per if total is None else total,
                 tensors=[f32_tensor(b"blk.%d.w%d" % (i, k), np.full(4, i * 10 + k, "<f4"))
                          for k in range(per)])
        if fix:
            fix(i, a)
        p = os.path.join(d, "%s-%05d-of-%05d.gguf" % (prefix, i + 1, n))
        write_file(p, gguf_split_part(a["no"], a["count"], a["total"], a["tensors"]))
        paths.append(p)
    return paths


def sets_malformed(base):
    """Malformed sets: each refused with its exit code, one line naming the
    file and the problem, and no mount."""
    cases = []  # (label, model path, exit, substring)
    n = [0]

    def fresh():
        n[0] += 1
        return os.path.join(base, "bad%02d" % n[0])

    d = fresh()
    p = write_gguf_split(d, "split_llama", 3)
    os.unlink(p[1])
    cases.append(("split: a missing part", p[0], 2, "split_llama-00002-of-00003.gguf: missing"))
    d = fresh()
    p = write_gguf_split(d, "s", 3)
    write_gguf_split(os.path.join(d, "other"), "s", 3, total=5)
    shutil.copyfile(os.path.join(d, "other", "s-00002-of-00003.gguf"), p[1])
    cases.append(("split: a part of another set", p[0], 3,
                  "s-00002-of-00003.gguf: belongs to another split set: split.tensors.count is 5"))
    d = fresh()
    p = write_gguf_split(d, "s", 3, fix=lambda i, a: a.update(count=4) if i == 2 else None)
    cases.append(("split: split.count differs", p[0], 3, "s-00003-of-00003.gguf: belongs to another split set: "
                                                        "split.count is 4"))
    d = fresh()
    p = write_gguf_split(d, "s", 3, fix=lambda i, a: a.update(no=0) if i == 1 else None)
    cases.append(("split: split.no out of place", p[0], 3, "s-00002-of-00003.gguf: split.no is 0, expected 1"))
    d = fresh()
    p = write_gguf_split(d, "s", 2, fix=lambda i, a: a.update(
        tensors=[f32_tensor(b"blk.0.w0", np.zeros(4, "<f4"))]))
    cases.append(("split: a tensor in two parts", p[1], 3,
                  "tensor 'blk.0.w0': in both s-00001-of-00002.gguf and s-00002-of-00002.gguf"))
    d = fresh()
    p = write_gguf_split(d, "s", 2, total=3)
    cases.append(("split: split.tensors.count wrong", p[0], 3, "split.tensors.count is 3, but the 2 parts hold 2"))
    d = fresh()
    p = write_gguf_split(d, "s", 2)
    os.rename(p[0], os.path.join(d, "model.gguf"))
    cases.append(("split: a part renamed", os.path.join(d, "model.gguf"), 3,
                  "model.gguf: split.count is 2, but the name does not follow PREFIX-%05d-of-%05d.gguf"))

    def st_case(label, exit_code, substr, index=None, mutate=None, given="model.safetensors.index.json"):
        dd = fresh()
        make_st_set(dd)
        ip = os.path.join(dd, "model.safetensors.index.json")
        if index is not None:
            with open(ip, "w") as f:
                f.write(index if isinstance(index, str) else json.dumps(index))
        if mutate:
            mutate(dd)
        cases.append((label, os.path.join(dd, given), exit_code, substr))

    good = load_json(os.path.join(base, "st3", "model.safetensors.index.json"))
    S1, S2, S3 = ("model-%05d-of-00003.safetensors" % i for i in (1, 2, 3))
    st_case("index: a shard it names does not exist", 2, S2 + ": missing",
            mutate=lambda dd: os.unlink(os.path.join(dd, S2)))
    st_case("index: not valid JSON", 3, "model.safetensors.index.json: invalid JSON", index='{"weight_map": {')
    st_case("index: no weight_map", 3, "model.safetensors.index.json: no weight_map",
            index={"metadata": {"total_size": 1}})
    st_case("index: a shard name with '/'", 3, "holds a '/'",
            index={"weight_map": {"a": "../st3/" + S1}})
    st_case("index: a shard name '..'", 3, "shard '..' is not a file name", index={"weight_map": {"a": ".."}})
    st_case("index: a shard name with NUL", 3, "model.safetensors.index.json: holds a NUL character",
            index='{"weight_map": {"a": "x\\u0000y.safetensors"}}')
    wm = dict(good["weight_map"])
    wm["model.layers.0.mlp.w0.weight"] = S2
    st_case("index: a tensor in another shard than it says", 3,
            S1 + ": tensor 'model.layers.0.mlp.w0.weight' is here, but model.safetensors.index.json puts it in "
            + S2, index={"weight_map": wm})
    wm = dict(good["weight_map"])
    del wm["model.layers.2.mlp.w1.weight"]
    st_case("index: a shard holds a tensor it does not list", 3,
            S3 + ": tensor 'model.layers.2.mlp.w1.weight' is not in the weight_map", index={"weight_map": wm})
    wm = dict(good["weight_map"])
    wm["ghost.weight"] = S2
    st_case("index: lists a tensor no shard holds", 3,
            S2 + ": tensor 'ghost.weight': model.safetensors.index.json puts it here, but it is not there",
            index={"weight_map": wm})
    st_case("index: metadata.total_size wrong", 3, "model.safetensors.index.json: metadata.total_size is 7",
            index={"metadata": {"total_size": 7}, "weight_map": good["weight_map"]})
    st_case("index: a tensor listed twice", 3, "weight_map: tensor 'model.layers.0.mlp.w0.weight' is listed twice",
            index='{"weight_map": {"model.layers.0.mlp.w0.weight": "%s", "model.layers.0.mlp.w0.weight": "%s"}}'
            % (S1, S1))

    def dup_tensor(dd):
        # shard 3 also holds shard 1's first tensor
        write_file(os.path.join(dd, S3), st_set_bytes([("model.layers.0.mlp.w0.weight", np.zeros(7, "<f4")),
                                                   ("model.layers.2.mlp.w0.weight", np.zeros(7, "<f4"))]))
    wm = {k: v for k, v in good["weight_map"].items() if v != S3}
    wm["model.layers.2.mlp.w0.weight"] = S3
    st_case("index: a tensor in two shards", 3, S3 + ": tensor 'model.layers.0.mlp.w0.weight' is here, but "
            "model.safetensors.index.json puts it in " + S1, index={"weight_map": wm}, mutate=dup_tensor)
    st_case("index: a shard that is not safetensors", 3, S2 + ": not a safetensors file",
            mutate=lambda dd: write_file(os.path.join(dd, S2), gguf_bytes([f32_tensor(b"x", np.zeros(4))])))
    st_case("index: a malformed shard, given a shard", 3, S3 + ": header: length",
            mutate=lambda dd: os.truncate(os.path.join(dd, S3), 30), given=S1)
    st_case("folder: two models", 2, "the folder holds 2 models: model-*-of-00003.safetensors, other.gguf",
            index=None, mutate=lambda dd: (os.unlink(os.path.join(dd, "model.safetensors.index.json")),
                                           write_file(os.path.join(dd, "other.gguf"),
                                                      gguf_bytes([f32_tensor(b"x", np.zeros(4))]))), given="")
    dd = fresh()
    os.makedirs(dd)
    write_file(os.path.join(dd, "config.json"), b"{}")
    write_file(os.path.join(dd, "pytorch_model.bin"), b"PK\3\4")
    cases.append(("folder: no model", dd, 2,
                  "no GGUF or safetensors model in the folder (it holds 2 entries: config.json, pytorch_model.bin)"))
    for name, data, what in (("README.md", b"# model card\n", "(it is text)"),
                             ("pytorch_model.bin", b"PK\3\4\x14\0\0\0\x08\0" + bytes(40), "(it is a zip archive"),
                             ("model.pkl", b"\x80\x04\x95\x10\0\0\0\0\0\0\0}", "(it is a Python pickle)")):
        pth = write_file(os.path.join(base, name), data)
        cases.append(("given directly: %s" % name, pth, 3, "not a GGUF or safetensors file " + what))

    def run_cases():
        errs = Errs()
        seen = set()
        for label, model, want_rc, substr in cases:
            mp = new_dir("bad-")
            rc, out, err, secs = run_cli([model, mp], env=san_env())
            if rc == 0:
                unmount_daemon(mp)
            if rc != want_rc:
                errs.add("%s: exit %d, expected %d (%s)" % (label, rc, want_rc, err.strip()[:200]))
            one_line_error(err, model, errs, label, substr)
            line = err.strip()
            if line in seen:
                errs.add("%s: the same message as another case: %r" % (label, line))
            seen.add(line)
            if is_mounted(mp):
                errs.add("%s: left a mount" % label)
                force_unmount(mp)
            if san_lines(err):
                errs.add("%s: sanitizer output" % label)
        errs.raise_if_any()
        return "%d malformed sets" % len(cases)
    check("sets: malformed sets refused: exit code, one line naming the file and the problem, no mount",
          run_cases)
    for label, model, want_rc, substr in cases:
        print("#   %-45s exit %d  %s" % (label, want_rc, substr))


def sets_thousand(base):
    n = 1000
    dg = os.path.join(base, "g1000")
    t0 = time.monotonic()
    paths = write_gguf_split(dg, "big", n)
    ds = os.path.join(base, "s1000")
    os.makedirs(ds)
    wm = {}
    for i in range(n):
        fn = "model-%05d-of-%05d.safetensors" % (i + 1, n)
        write_file(os.path.join(ds, fn), st_set_bytes([("layers.%d.w" % i, np.full(4, i, "<f4"))]))
        wm["layers.%d.w" % i] = fn
    with open(os.path.join(ds, "model.safetensors.index.json"), "w") as f:
        json.dump({"metadata": {"total_size": 16 * n}, "weight_map": wm}, f)
    gen = time.monotonic() - t0
    FIGURES.clear()
    for label, model, name_of, path_of in (
            ("GGUF split", paths[n // 2], lambda i: "blk/%d/w0" % i, lambda i: paths[i]),
            ("safetensors index", ds, lambda i: "layers/%d/w" % i,
             lambda i: os.path.join(ds, "model-%05d-of-%05d.safetensors" % (i + 1, n)))):
        for nofile in (64, 1024, 0):
            def thousand(label=label, model=model, name_of=name_of, path_of=path_of, nofile=nofile):
                errs = Errs()
                m = Mount(model, nofile=nofile)
                try:
                    rss = daemon_rss_kb(m.proc.pid)
                    with open("/proc/%d/limits" % m.proc.pid) as f:
                        lim = [l for l in f if l.startswith("Max open files")][0].split()[3]
                    nfd = len(os.listdir("/proc/%d/fd" % m.proc.pid))
                    for i in (0, 1, n // 2, n - 2, n - 1):
                        with open(m.path(name_of(i)), "rb") as f:
                            got = np.frombuffer(f.read(), "<f4")
                        want = i * 10 if label == "GGUF split" else i
                        if got.tolist() != [want] * 4:
                            errs.add("part %d: read %r" % (i, got.tolist()))
                    with open(m.path("parts.json"), "rb") as f:
                        if len(json.loads(f.read().decode())["files"]) != n:
                            errs.add("parts.json does not list %d files" % n)
                    # the last part's descriptor was closed under ulimit -n 64:
                    # its truncation is seen through its path
                    victim = path_of(n - 1)
                    keep = open(victim, "rb").read()
                    try:
                        os.truncate(victim, 40)
                        if not expect_eio_direct(m.path(name_of(n - 1))):
                            errs.add("truncated last part: no EIO")
                        fd = os.open(m.path(name_of(n - 2)), os.O_RDONLY | os.O_DIRECT)
                        try:
                            if len(o_direct_read(fd, 16, 0)) != 16:
                                errs.add("part %d after truncating the last: no read" % (n - 2))
                        finally:
                            os.close(fd)
                    finally:
                        write_file(victim, keep)
                    rss2 = daemon_rss_kb(m.proc.pid)
                finally:
                    try:
                        m.finish()
                    except Fail as ex:
                        errs.add(str(ex))
                errs.raise_if_any()
                info = "mounted in %.0f ms, daemon RSS %d KB (after reads %d KB), %s descriptors open " \
                       "(limit %s)" % (m.t_ready * 1000, rss, rss2, nfd, lim)
                FIGURES.append("%s, %d parts, ulimit -n %s: %s" % (label, n, nofile or "default", info))
                if m.t_ready > (5.0 if SANITIZED else 1.0):
                    raise Fail("took %.2f s to mount" % m.t_ready)
                return info
            check("sets: %d-part %s under ulimit -n %s: mounts, reads first/middle/last parts, "
                  "truncating the last part is EIO" % (n, label, nofile or "default"), thousand)
    for f in FIGURES:
        print("# %s" % f)
    print("# (1,000-part sets generated in %.1f s)" % gen)


FIGURES = []
