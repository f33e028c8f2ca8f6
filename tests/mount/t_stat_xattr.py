"""Groups stat and xattr: modes, sizes, inodes, statfs/df, readdir and the
coreutils; the user.weightfs.* extended attributes.
"""

import ctypes
import errno
import json
import os
import shutil
import subprocess

from wf_harness import check, Errs, Fail, GGML, libc, Mount, skip_or_fail, STO
from wf_tree import check_stat_tree, check_tools, walk_files


# ---------------------------------------------------------------- group: stat

def check_df(m):
    """statfs agrees with du to the byte, and has nothing free."""
    sv = os.statvfs(m.mp)
    r = subprocess.run(["du", "-s", "-B1", m.mp], stdout=subprocess.PIPE, timeout=60,
                       env=dict(os.environ, LC_ALL="C"))
    du = int(r.stdout.split()[0])
    nodes = sum(1 + len(fs) for _, _, fs in os.walk(m.mp))
    errs = []
    if sv.f_frsize != 4096 or sv.f_bsize != 4096:
        errs.append("f_frsize %d f_bsize %d, expected 4096" % (sv.f_frsize, sv.f_bsize))
    if sv.f_blocks * sv.f_frsize != du:
        errs.append("statfs used %d bytes, du -s -B1 %d" % (sv.f_blocks * sv.f_frsize, du))
    if sv.f_bfree or sv.f_bavail or sv.f_ffree or sv.f_favail:
        errs.append("free space or inodes on a read-only mount: bfree %d bavail %d ffree %d "
                    "favail %d" % (sv.f_bfree, sv.f_bavail, sv.f_ffree, sv.f_favail))
    if sv.f_files != nodes:
        errs.append("f_files %d, expected %d nodes" % (sv.f_files, nodes))
    if not sv.f_flag & os.ST_RDONLY:
        errs.append("ST_RDONLY not set")
    r = subprocess.run(["df", "-B1", "--output=used,avail", m.mp], stdout=subprocess.PIPE,
                       timeout=60, env=dict(os.environ, LC_ALL="C"))
    used, avail = (int(x) for x in r.stdout.split()[-2:])
    if used != du or avail != 0:
        errs.append("df says used %d avail %d; du %d" % (used, avail, du))
    if errs:
        raise Fail("; ".join(errs))
    return "%d bytes used" % du


def group_stat():
    for model in (os.path.join(GGML, "mixed_llama_tiny.gguf"),
                  os.path.join(STO, "model_like.safetensors"),
                  os.path.join(STO, "awkward_names.safetensors"),
                  os.path.join(GGML, "meta_only.gguf")):
        with Mount(model) as m:
            with open(m.path("tensors.json"), "rb") as f:
                tj = json.loads(f.read().decode("utf-8"))
            base = os.path.basename(model)
            check("stat: tree of %s" % base, check_stat_tree, m, model)
            check("stat: ls/du/find/tree on %s" % base, check_tools, m, len(tj["tensors"]))
            check("stat: df and statfs agree with du, nothing free, on %s" % base, check_df, m)

            def walk():
                want_f = {e["path"].encode() for e in tj["tensors"]}
                found = walk_files(m) - {b"metadata.json", b"tensors.json"}
                if found != want_f:
                    raise Fail("os.walk: extra %r missing %r" % (sorted(found - want_f)[:5],
                                                                sorted(want_f - found)[:5]))
            check("stat: os.walk finds exactly the tensors of %s" % base, walk)


# ---------------------------------------------------------------- group: xattr

def libc_getxattr(path, name, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    r = libc.getxattr(path.encode() if isinstance(path, str) else path, name.encode(),
                      buf if size else None, ctypes.c_size_t(size))
    return r, ctypes.get_errno() if r < 0 else 0


def libc_listxattr(path, size):
    buf = ctypes.create_string_buffer(max(size, 1))
    r = libc.listxattr(path.encode(), buf if size else None, ctypes.c_size_t(size))
    return r, ctypes.get_errno() if r < 0 else 0


def group_xattr():
    with Mount(os.path.join(GGML, "mixed_llama_tiny.gguf")) as m:
        with open(m.path("tensors.json"), "rb") as f:
            tj = json.loads(f.read().decode("utf-8"))

        def tensors():
            errs = Errs()
            names = {"user.weightfs.shape", "user.weightfs.dtype", "user.weightfs.type",
                     "user.weightfs.name", "user.weightfs.sha256"}
            for e in tj["tensors"]:
                p = m.path(e["path"])
                lst = os.listxattr(p)
                if set(lst) != names or len(lst) != 5:
                    errs.add("%s: listxattr %r" % (e["path"], lst))
                shape = os.getxattr(p, "user.weightfs.shape").decode()
                if shape != "[" + ", ".join(str(d) for d in e["shape"]) + "]":
                    errs.add("%s: shape xattr %r vs %r" % (e["path"], shape, e["shape"]))
                if json.loads(shape) != e["shape"]:
                    errs.add("%s: shape xattr is not the JSON shape" % e["path"])
                if os.getxattr(p, "user.weightfs.dtype").decode() != e["dtype"]:
                    errs.add("%s: dtype xattr" % e["path"])
                if os.getxattr(p, "user.weightfs.type").decode() != e["type"]:
                    errs.add("%s: type xattr" % e["path"])
                if os.getxattr(p, "user.weightfs.name").decode() != e["name"]:
                    errs.add("%s: name xattr" % e["path"])
                for bad in ("user.weightfs.nope", "user.weightfs.", "user.other", "user.weightfs.shapex",
                            "trusted.weightfs.shape", "security.selinux"):
                    try:
                        os.getxattr(p, bad)
                        errs.add("%s: getxattr %s succeeded" % (e["path"], bad))
                    except OSError as ex:
                        if ex.errno not in (errno.ENODATA,) and not (
                                bad.startswith(("trusted", "security")) and
                                ex.errno in (errno.ENOTSUP, errno.EPERM)):
                            errs.add("%s: getxattr %s: %s, expected ENODATA" % (
                                e["path"], bad, errno.errorcode.get(ex.errno)))
            # size probing and a too-small buffer
            p = m.path(tj["tensors"][0]["path"])
            full = os.getxattr(p, "user.weightfs.shape")
            r, e0 = libc_getxattr(p, "user.weightfs.shape", 0)
            if r != len(full):
                errs.add("getxattr(size 0) = %d, expected %d" % (r, len(full)))
            r, e1 = libc_getxattr(p, "user.weightfs.shape", 2)
            if r != -1 or e1 != errno.ERANGE:
                errs.add("getxattr(size 2) = %d errno %s, expected ERANGE" % (r, e1))
            r, e2 = libc_listxattr(p, 0)
            if r != len(b"\0".join(n.encode() for n in names)) + 1:
                errs.add("listxattr(size 0) = %d" % r)
            r, e3 = libc_listxattr(p, 3)
            if r != -1 or e3 != errno.ERANGE:
                errs.add("listxattr(size 3) = %d errno %s, expected ERANGE" % (r, e3))
            errs.raise_if_any()
        check("xattr: tensor files: list, values, ENODATA, ERANGE", tensors)

        def dirs():
            errs = Errs()
            for rel in ("", "blk", "blk/0", "metadata.json", "tensors.json"):
                p = m.path(rel) if rel else m.mp
                try:
                    lst = os.listxattr(p)
                    if lst:
                        errs.add("%r: listxattr %r" % (rel, lst))
                except OSError as ex:
                    errs.add("%r: listxattr failed: %s" % (rel, ex))
                for name in ("user.weightfs.shape", "user.weightfs.name", "user.x"):
                    try:
                        os.getxattr(p, name)
                        errs.add("%r: getxattr %s succeeded" % (rel, name))
                    except OSError as ex:
                        if ex.errno != errno.ENODATA:
                            errs.add("%r: getxattr %s: %s" % (rel, name, errno.errorcode.get(ex.errno)))
            errs.raise_if_any()
        check("xattr: directories and json files have none (ENODATA)", dirs)

        def getfattr():
            if not shutil.which("getfattr"):
                skip_or_fail("getfattr not installed (package attr)")
            e = tj["tensors"][0]
            r = subprocess.run(["getfattr", "-d", "-m", "-", m.path(e["path"])],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=10)
            out = r.stdout.decode()
            want_s = 'user.weightfs.shape="[%s]"' % ", ".join(str(d) for d in e["shape"])
            if r.returncode != 0 or want_s not in out or 'user.weightfs.type="%s"' % e["type"] not in out:
                raise Fail("getfattr rc %d output %r" % (r.returncode, out[:300]))
            r = subprocess.run(["getfattr", "-R", "-d", m.mp], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, timeout=30)
            if r.returncode != 0:
                raise Fail("getfattr -R -d rc %d: %s" % (r.returncode, r.stderr[:200]))
        check("xattr: getfattr -d", getfattr)
