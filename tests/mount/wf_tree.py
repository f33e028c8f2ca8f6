"""Checks of a mounted tree shared by several groups: valid path components,
the awkward-names model, the metadata folder, walking the files, stat of
every node (modes, sizes, inodes, readdir order) and the coreutils view.
"""

import json
import os
import shutil
import stat
import subprocess

from wf_harness import Errs
from wf_naming import expected_paths


# ---------------------------------------------------------------- paths and walks

def valid_components(path_b, errs, label):
    for c in path_b.split(b"/"):
        if c in (b"", b".", b"..") or b"\0" in c or len(c) > 255:
            errs.add("%s: bad path component %r (%d bytes)" % (label, c[:40], len(c)))
            return False
    return True


def check_awkward(m, tj, ts):
    errs = Errs()
    names = [e["name"].encode() for e in tj["tensors"]]
    want_paths = expected_paths(names)
    fixed = {"a.b": "a/b.tensor", "a.b.c": "a/b/c", "x..y": "x/%/y", ".lead": "%/lead",
             "trail.": "trail/%", "sp ace/slash": "sp ace%2Fslash", "unicodé.ü": "unicodé/ü",
             "metadata.json": "metadata/json"}
    paths = set()
    for e, wp in zip(tj["tensors"], want_paths):
        pb = e["path"].encode()
        if pb != wp:
            errs.add("%r: path %r, expected %r" % (e["name"], e["path"], wp.decode()))
        if e["name"] in fixed and e["path"] != fixed[e["name"]]:
            errs.add("%r: path %r, expected %r" % (e["name"], e["path"], fixed[e["name"]]))
        valid_components(pb, errs, e["name"])
        paths.add(pb)
        if os.getxattr(m.path(pb), "user.weightfs.name") != e["name"].encode():
            errs.add("%r: xattr name differs" % e["name"])
    if len(paths) != len(tj["tensors"]):
        errs.add("paths not unique")
    found = walk_files(m)
    if found != paths | {b"metadata.json", b"tensors.json"}:
        errs.add("os.walk finds %r" % sorted(found ^ (paths | {b"metadata.json", b"tensors.json"})))
    errs.raise_if_any()


def meta_dir(mp):
    """The metadata folder's name at the root: "metadata", or "metadata.d"
    when a tensor directory took "metadata"."""
    return "metadata.d" if os.path.isdir(os.path.join(mp, "metadata.d")) else "metadata"


def n_generated(m):
    """Files weightfs makes besides the tensors': metadata.json,
    tensors.json, WEIGHTFS.txt, model.safetensors, model.gguf for a
    safetensors model (docs/gguf.md) and one per metadata key."""
    with open(m.path("metadata.json"), "rb") as f:
        n = 4 + len(json.loads(f.read().decode("utf-8")))
    # model.gguf is left out of a model GGUF cannot hold (names of 64 bytes or more), and a
    # GGUF model's hf/ (docs/hf.md) of one of no architecture or tokenizer transformers has:
    # their own tests say when they must be there
    hf = m.path("hf")
    return n + (1 if os.path.exists(m.path("model.gguf")) else 0) + (len(os.listdir(hf)) if os.path.isdir(hf) else 0)


def walk_files(m, extras=False):
    """Relative paths of the files under the mount: the tensors and the
    JSON files, without model.safetensors, model.gguf, hf/, WEIGHTFS.txt and the
    metadata folder unless extras is set."""
    root = m.mp.encode()
    skip = {b"model.safetensors", b"model.gguf", b"hf", b"WEIGHTFS.txt", meta_dir(m.mp).encode()}
    found = set()
    for d, dirs, files in os.walk(root):
        if d == root and not extras:
            dirs[:] = [x for x in dirs if x not in skip]
            files = [x for x in files if x not in skip]
        for f in files:
            found.add(os.path.relpath(os.path.join(d, f), root))
    return found


# ---------------------------------------------------------------- stat of the tree

def check_dir_size(d, st):
    """A directory's size: its entries as ext4 writes them (8 bytes + name,
    padded to 4), rounded up to 4 KiB; never 0."""
    n = 12 + 12 + sum((8 + len(x) + 3) & ~3 for x in os.listdir(d))
    want = (n + 4095) // 4096 * 4096
    if st.st_size != want or st.st_blocks != want // 512:
        return "directory size %d, st_blocks %d, expected %d, %d" % (st.st_size, st.st_blocks,
                                                                     want, want // 512)
    return ""


def check_stat_tree(m, model):
    errs = Errs()
    mst = os.stat(model)
    with open(m.path("tensors.json"), "rb") as f:
        tj = json.loads(f.read().decode("utf-8"))
    root = m.mp.encode()
    inos = {}
    for d, dirs, files in os.walk(root):
        st = os.lstat(d)
        rel = os.path.relpath(d, root)
        if stat.S_IFMT(st.st_mode) != stat.S_IFDIR or stat.S_IMODE(st.st_mode) != 0o555:
            errs.add("%r: mode %o" % (rel, st.st_mode))
        if st.st_nlink != 2 + len(dirs):
            errs.add("%r: st_nlink %d, expected 2 + %d subdirs" % (rel, st.st_nlink, len(dirs)))
        if st.st_mtime_ns != mst.st_mtime_ns:
            errs.add("%r: mtime %d != model's %d" % (rel, st.st_mtime_ns, mst.st_mtime_ns))
        if st.st_uid != os.getuid() or st.st_gid != os.getgid():
            errs.add("%r: owner %d:%d" % (rel, st.st_uid, st.st_gid))
        if check_dir_size(d, st):
            errs.add("%r: %s" % (rel, check_dir_size(d, st)))
        inos.setdefault(st.st_ino, []).append(rel)
        if os.stat(os.path.join(d, b"..")).st_ino != (os.stat(os.path.dirname(d)).st_ino
                                                     if d != root else st.st_ino) and d != root:
            errs.add("%r: '..' has the wrong inode" % rel)
        for f in files:
            p = os.path.join(d, f)
            st = os.lstat(p)
            rel = os.path.relpath(p, root)
            if stat.S_IFMT(st.st_mode) != stat.S_IFREG or stat.S_IMODE(st.st_mode) != 0o444:
                errs.add("%r: mode %o" % (rel, st.st_mode))
            if st.st_nlink != 1:
                errs.add("%r: st_nlink %d" % (rel, st.st_nlink))
            # whole 4 KiB fragments, as df counts them; never read as sparse
            if st.st_blocks != (st.st_size + 4095) // 4096 * 8:
                errs.add("%r: st_blocks %d for size %d" % (rel, st.st_blocks, st.st_size))
            if st.st_mtime_ns != mst.st_mtime_ns:
                errs.add("%r: mtime differs from the model's" % rel)
            inos.setdefault(st.st_ino, []).append(rel)
    dup = [v for v in inos.values() if len(v) > 1]
    if dup:
        errs.add("inode numbers shared: %r" % dup[:3])
    # inode numbering of docs/naming.md: root 1, metadata.json 2, tensors.json 3,
    # directories in the order first met, then tensor files in model order
    if os.stat(root).st_ino != 1 or os.stat(m.path("metadata.json")).st_ino != 2 or \
            os.stat(m.path("tensors.json")).st_ino != 3:
        errs.add("root/metadata.json/tensors.json are not inodes 1/2/3")
    dir_order = []
    seen = set()
    for e in tj["tensors"]:
        parts = e["path"].encode().split(b"/")
        for k in range(1, len(parts)):
            dp = b"/".join(parts[:k])
            if dp not in seen:
                seen.add(dp)
                dir_order.append(dp)
    for i, dp in enumerate(dir_order):
        ino = os.stat(os.path.join(root, dp)).st_ino
        if ino != 4 + i:
            errs.add("directory %r: inode %d, expected %d" % (dp[:60], ino, 4 + i))
            break
    for i, e in enumerate(tj["tensors"]):
        try:
            ino = os.stat(m.path(e["path"].encode())).st_ino
        except OSError:
            continue
        if ino != 4 + len(dir_order) + i:
            errs.add("tensor %r: inode %d, expected %d" % (e["path"][:60], ino,
                                                          4 + len(dir_order) + i))
            break
    # listing order is bytewise
    for d, dirs, files in os.walk(root):
        names = os.listdir(d)
        if names != sorted(names):
            errs.add("%r: readdir not sorted bytewise" % os.path.relpath(d, root))
            break
    errs.raise_if_any()


def check_tools(m, n_tensors):
    errs = Errs()
    env = dict(os.environ, LC_ALL="C")
    cmds = [["ls", "-lR", m.mp], ["du", "-s", m.mp], ["find", m.mp]]
    if shutil.which("tree"):
        cmds.append(["tree", "-a", m.mp])
    for cmd in cmds:
        r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60, env=env)
        if r.returncode != 0:
            errs.add("%s exited %d: %s" % (cmd[0] + " " + cmd[1], r.returncode,
                                          r.stderr.decode(errors="replace").strip()[:200]))
    r = subprocess.run(["find", m.mp, "-type", "f"], stdout=subprocess.PIPE, timeout=60)
    nf = len([l for l in r.stdout.split(b"\n") if l])
    if nf != n_tensors + n_generated(m):
        errs.add("find -type f lists %d files, expected %d" % (nf, n_tensors + n_generated(m)))
    r = subprocess.run(["du", "-s", "-B1", "--apparent-size", m.mp], stdout=subprocess.PIPE,
                       timeout=60)
    errs.raise_if_any()
