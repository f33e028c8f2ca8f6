"""Group perms: with -o allow_other, every node carries the owner, group and
read bits of the file its bytes come from, and the kernel checks them
(default_permissions): another local user reads through the mount exactly
what they could read directly (issue 17, item 1), folders included: search
permission on every folder on the way to each file, a hub snapshot's links
and their blobs (issue 31, item 1).  Needs root, useradd,
groupadd and runuser; two users are made for the run and removed after.
"""

import json
import os
import shutil
import stat
import subprocess

from wf_harness import check, Errs, Fail, Mount, new_dir, skip_or_fail, TMP
from wf_models import make_st_set, SIDECARS, write_file
from t_sets import make_hub

USERS = ("wf17perma", "wf17permb")
GROUP = "wf17permg"

# Run as another user: tries each path, prints {path: "ok <bytes hex>" or "err ERRNO"}.
PROBE = r"""
import json, os, sys
out = {}
for p in sys.argv[1:]:
    try:
        if os.path.isdir(p):
            out[p] = "ok " + json.dumps(sorted(os.listdir(p)))
        else:
            with open(p, "rb") as f:
                out[p] = "ok " + f.read().hex()
    except OSError as e:
        out[p] = "err %d" % e.errno
print(json.dumps(out))
"""


def _users_ready():
    if os.geteuid() != 0:
        return "not root"
    for tool in ("useradd", "groupadd", "runuser", "userdel", "groupdel"):
        if not shutil.which(tool):
            return "no " + tool
    subprocess.run(["groupadd", "-f", GROUP], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    for u in USERS:
        if subprocess.run(["id", u], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode:
            extra = ["-G", GROUP] if u == USERS[1] else []
            r = subprocess.run(["useradd", "-M", "-N", "-s", "/bin/sh"] + extra + [u],
                               stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
            if r.returncode:
                return "useradd %s: %s" % (u, r.stdout.decode(errors="replace").strip())
    return None


def _remove_users():
    for u in USERS:
        subprocess.run(["userdel", u], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    subprocess.run(["groupdel", GROUP], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def probe(user, paths):
    """What `user` gets reading each path through the mount, as that user."""
    r = subprocess.run(["runuser", "-u", user, "--", "/usr/bin/python3", "-c", PROBE] + list(paths),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=30, cwd="/")
    if r.returncode:
        raise Fail("probe as %s failed: %s" % (user, r.stderr.decode(errors="replace").strip()[-300:]))
    return json.loads(r.stdout)


def direct(user, paths):
    """What `user` gets reading the source files directly (the yardstick)."""
    return probe(user, paths)


def _open_dirs(*dirs):
    os.chmod(TMP, 0o755)
    for d in dirs:
        os.chmod(d, 0o755)


def group_perms():
    why = _users_ready()
    if why:
        check("perms: other users (%s)" % why, lambda: skip_or_fail(why))
        return
    try:
        _group_perms()
    finally:
        _remove_users()


def _expect(errs, got, path, want_ok, want_bytes=None, label=""):
    v = got.get(path, "missing")
    if want_ok:
        if not v.startswith("ok "):
            errs.add("%s %s: %s, expected readable" % (label, os.path.basename(path), v))
        elif want_bytes is not None and bytes.fromhex(v[3:]) != want_bytes:
            errs.add("%s %s: wrong bytes" % (label, os.path.basename(path)))
    elif v != "err 13":
        errs.add("%s %s: %s, expected EACCES" % (label, os.path.basename(path), v[:40]))


def _group_perms():
    gid = int(subprocess.run(["getent", "group", GROUP], stdout=subprocess.PIPE).stdout.split(b":")[2])
    ua, ub = USERS

    def single_0600():
        errs = Errs()
        d = new_dir("perm-")
        _open_dirs(d)
        model = os.path.join(d, "m.safetensors")
        make_st_set(d, n_shards=1, index=False)
        os.rename(os.path.join(d, "model-00001-of-00001.safetensors"), model)
        os.chmod(model, 0o600)
        with Mount(model, ["-o", "allow_other"]) as m:
            _open_dirs(os.path.dirname(m.mp))
            tj = json.load(open(m.path("tensors.json")))
            t0 = m.path(tj["tensors"][0]["path"] if "tensors" in tj else list(tj)[0])
            paths = [m.mp, m.path("tensors.json"), m.path("metadata.json"), m.path("model.safetensors"),
                     m.path("WEIGHTFS.txt")]
            # the yardstick: the model itself is unreadable to them
            _expect(errs, direct(ua, [model]), model, False, label="direct")
            got = probe(ua, paths)
            for p in paths:
                _expect(errs, got, p, False, label="mount")
            st = os.stat(m.mp)
            if stat.S_IMODE(st.st_mode) != 0o500 or st.st_uid != 0:
                errs.add("root dir mode %o uid %d, expected 500 uid 0" % (st.st_mode, st.st_uid))
            st = os.stat(m.path("tensors.json"))
            if stat.S_IMODE(st.st_mode) != 0o400:
                errs.add("tensors.json mode %o, expected 400" % st.st_mode)
            del t0
        errs.raise_if_any()
    check("perms: a 0600 model: another user reads nothing through allow_other", single_0600)

    def folder_sidecars():
        errs = Errs()
        d = new_dir("perm-")
        _open_dirs(d)
        exp = make_st_set(d, n_shards=2, index=True)
        secret = os.path.join(TMP, "perm-secret-%d" % os.getpid())
        write_file(secret, b"root only\n")
        os.chmod(secret, 0o600)
        os.symlink(secret, os.path.join(d, "config.json"))
        write_file(os.path.join(d, "README.md"), b"# readme\n")
        write_file(os.path.join(d, "tokenizer.json"), b"{}")
        os.chown(os.path.join(d, "tokenizer.json"), 0, gid)
        os.chmod(os.path.join(d, "tokenizer.json"), 0o640)
        with Mount(d, ["-o", "allow_other"]) as m:
            _open_dirs(os.path.dirname(m.mp))
            tj = json.load(open(m.path("tensors.json")))
            tpaths = {e["name"]: m.path(e["path"]) for e in tj["tensors"]} if "tensors" in tj else \
                {k: m.path(v["path"]) for k, v in tj.items()}
            side = [m.path(n) for n in ("config.json", "README.md", "tokenizer.json")]
            gen = [m.mp, m.path("tensors.json"), m.path("model.safetensors"), m.path("metadata.json")]
            for user, in_group in ((ua, False), (ub, True)):
                got = probe(user, list(tpaths.values()) + side + gen)
                for name, p in tpaths.items():
                    _expect(errs, got, p, True, exp[name][1], user)
                _expect(errs, got, side[0], False, label=user)
                _expect(errs, got, side[1], True, b"# readme\n", user)
                _expect(errs, got, side[2], in_group, b"{}", user)
                for p in gen:
                    _expect(errs, got, p, True, label=user)
                # what they get directly, for the same files
                dgot = direct(user, [secret, os.path.join(d, "tokenizer.json")])
                _expect(errs, dgot, secret, False, label="direct " + user)
                _expect(errs, dgot, os.path.join(d, "tokenizer.json"), in_group, label="direct " + user)
            st = os.stat(side[2])
            if (stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid) != (0o440, 0, gid):
                errs.add("tokenizer.json: %o %d:%d" % (st.st_mode, st.st_uid, st.st_gid))
            st = os.stat(side[0])
            if stat.S_IMODE(st.st_mode) != 0o400:
                errs.add("config.json (symlink to a 0600 file): mode %o" % st.st_mode)
        errs.raise_if_any()
    check("perms: sidecars carry their target's owner and mode (symlink to a root-only file)",
          folder_sidecars)

    def set_strictest():
        errs = Errs()
        d = new_dir("perm-")
        _open_dirs(d)
        exp = make_st_set(d, n_shards=2, index=True)
        s2 = os.path.join(d, "model-00002-of-00002.safetensors")
        os.chown(s2, 0, gid)
        os.chmod(s2, 0o640)
        with Mount(d, ["-o", "allow_other"]) as m:
            _open_dirs(os.path.dirname(m.mp))
            tj = json.load(open(m.path("tensors.json")))
            ents = tj["tensors"] if "tensors" in tj else [dict(v, name=k) for k, v in tj.items()]
            for e in ents:
                st = os.stat(m.path(e["path"]))
                want = (0o440, gid) if e["file"].endswith("00002-of-00002.safetensors") else (0o444, 0)
                if (stat.S_IMODE(st.st_mode), st.st_gid) != want:
                    errs.add("%s: mode %o gid %d, expected %o gid %d"
                             % (e["name"], st.st_mode, st.st_gid, want[0], want[1]))
            st = os.stat(m.mp)
            # the strictest of a 0644 root:root and a 0640 root:GROUP file: the owner and
            # GROUP's members read both (the first by its other bit), others not the second
            if (stat.S_IMODE(st.st_mode), st.st_gid) != (0o550, gid):
                errs.add("root dir mode %o gid %d, expected 550 gid %d" % (st.st_mode, st.st_gid, gid))
            got = probe(ub, [m.mp])
            _expect(errs, got, m.mp, True, label=ub)
            got = probe(ua, [m.mp])
            _expect(errs, got, m.mp, False, label=ua)
        errs.raise_if_any()
    check("perms: generated files and directories take the strictest part's bits", set_strictest)

    def set_group():
        errs = Errs()
        d = new_dir("perm-")
        _open_dirs(d)
        exp = make_st_set(d, n_shards=2, index=True)
        for f in os.listdir(d):
            os.chown(os.path.join(d, f), 0, gid)
            os.chmod(os.path.join(d, f), 0o640)
        with Mount(d, ["-o", "allow_other"]) as m:
            _open_dirs(os.path.dirname(m.mp))
            tj = json.load(open(m.path("tensors.json")))
            ents = tj["tensors"] if "tensors" in tj else [dict(v, name=k) for k, v in tj.items()]
            paths = {e["name"]: m.path(e["path"]) for e in ents}
            gen = [m.mp, m.path("tensors.json"), m.path("model.safetensors")]
            got_b = probe(ub, list(paths.values()) + gen)
            got_a = probe(ua, list(paths.values()) + gen)
            for name, p in paths.items():
                _expect(errs, got_b, p, True, exp[name][1], ub)
                _expect(errs, got_a, p, False, label=ua)
            for p in gen:
                _expect(errs, got_b, p, True, label=ub)
                _expect(errs, got_a, p, False, label=ua)
        errs.raise_if_any()
    check("perms: a set readable by a group: its members read all, others nothing", set_group)
    folders(gid)
    acl_folder(gid)


# ------------------------------------------------ folders (issue 31, item 1)

FOLDER_SIDECARS = ("config.json", "tokenizer.json", "tokenizer_config.json", "README.md")
GENERATED = ("tensors.json", "metadata.json", "model.safetensors", "WEIGHTFS.txt", "parts.json")
# an architecture model.gguf is made for generically, from any tensor names: so the mounts
# have a model.gguf, whose vocabulary and key/values come from the sidecars
CONFIG = json.dumps({"architectures": ["NoSuchForCausalLM"], "model_type": "nosuch"}).encode()


def _sidecar(n):
    return CONFIG if n == "config.json" else SIDECARS[n]


def _model_dir(d, mode, gid=0, sidecars=FOLDER_SIDECARS):
    """A set of 2 shards, its index and sidecars (all 0644) in d, then d made mode, group gid."""
    make_st_set(d, n_shards=2, index=True)
    for n in sidecars:
        write_file(os.path.join(d, n), _sidecar(n))
    os.chown(d, 0, gid)
    os.chmod(d, mode)


def _pairs(m, src_dir):
    """Each file of mount m with the source files reading it needs: a tensor its part, a
    sidecar its file, the generated files every part and the index, model.gguf those and
    every sidecar.  Every file of the mount also lies in the mount's folders, which
    need what the generated files need.  src_dir holds the sources as the model was given
    (a hub snapshot's links)."""
    tj = json.load(open(m.path("tensors.json")))
    ents = tj["tensors"] if "tensors" in tj else [dict(v, name=k) for k, v in tj.items()]
    def src(f):
        return os.path.join(src_dir, f)
    parts = sorted({src(e["file"]) for e in ents})
    names = os.listdir(m.mp)
    index = [os.path.join(src_dir, n) for n in os.listdir(src_dir) if n.endswith(".index.json")]
    gen = parts + index
    side = [n for n in FOLDER_SIDECARS if n in names]
    pairs = [(m.mp, gen)]
    pairs += [(m.path(e["path"]), [src(e["file"])] + gen) for e in ents]
    pairs += [(m.path(n), gen) for n in GENERATED if n in names]
    pairs += [(m.path(n), [os.path.join(src_dir, n)] + gen) for n in side]
    if "model.gguf" in names:
        pairs.append((m.path("model.gguf"), gen + [os.path.join(src_dir, n) for n in side]))
    return pairs, side


def _compare(errs, label, users, pairs, exact=True):
    """Each user reads each mount file iff they read every one of its sources directly
    (exact); or, where the rule must be conservative (ACLs), never more."""
    srcs = sorted({p for _, ss in pairs for p in ss})
    n_ok = 0
    for user in users:
        mounted = probe(user, [mp for mp, _ in pairs])
        direct_ = direct(user, srcs)
        for mp, ss in pairs:
            want = all(direct_[p].startswith("ok ") for p in ss)
            got = mounted.get(mp, "missing")
            rel = os.path.relpath(mp, pairs[0][0]) if mp != pairs[0][0] else "/"
            if got.startswith("ok ") and not want:
                errs.add("%s: %s reads %s through the mount, not directly" % (label, user, rel))
            elif exact and want and not got.startswith("ok "):
                errs.add("%s: %s reads %s directly, not through the mount (%s)" % (label, user, rel, got))
            elif not got.startswith("ok ") and got != "err 13":
                errs.add("%s: %s: %s %s, expected EACCES" % (label, user, rel, got))
            n_ok += got.startswith("ok ")
    return n_ok


def folders(gid):
    ua, ub = USERS

    def mounts(d, model, label, src_dir=None, want_ok=None, gguf=True):
        """Mounts model with allow_other, compares every file for both users; want_ok:
        {user: whether they read the tensors directly} (the setup's premise)."""
        errs = Errs()
        with Mount(model, ["-o", "allow_other"]) as m:
            _open_dirs(os.path.dirname(m.mp))
            pairs, side = _pairs(m, src_dir or model)
            if len(pairs) < 6 or gguf != os.path.exists(m.path("model.gguf")):
                errs.add("%s: %d files, model.gguf %s" % (label, len(pairs), os.path.exists(m.path("model.gguf"))))
            for user, ok in (want_ok or {}).items():
                got = direct(user, [pairs[1][1][0]])
                if got[pairs[1][1][0]].startswith("ok ") != ok:
                    errs.add("%s: premise: %s reads the first part directly: %s" % (label, user, not ok))
            n = _compare(errs, label, USERS, pairs)
        errs.raise_if_any()
        return "%d files, %d sidecars, %d readable (user, file) pairs" % (len(pairs), len(side), n)

    def dir_0700():
        d = new_dir("perm-")
        _open_dirs(d)
        md = os.path.join(d, "m")
        os.makedirs(md)
        _model_dir(md, 0o700)
        r = mounts(d, md, "0700 folder", want_ok={ua: False, ub: False})
        # the same folder's first shard mounted on its own
        one = os.path.join(md, "model-00001-of-00002.safetensors")
        r2 = mounts(d, one, "0700 folder, one file", src_dir=md, want_ok={ua: False, ub: False})
        return r + "; " + r2
    check("perms: a model in a 0700 folder (files 0644): nobody else reads it through the mount",
          dir_0700)

    def lone_files():
        # a lone file in a 0700 folder; a link from an open folder to it; a link in a 0700
        # folder to a file in an open one (the link's folder counts too)
        d = new_dir("perm-")
        _open_dirs(d)
        made = {}
        for sub, mode in (("solo", 0o700), ("open", 0o755), ("closed", 0o700), ("target", 0o755)):
            made[sub] = os.path.join(d, sub)
            os.makedirs(made[sub])
        for sub in ("solo", "target"):
            make_st_set(made[sub], n_shards=1, index=False)
        name = "model-00001-of-00001.safetensors"
        os.symlink(os.path.join("..", "solo", name), os.path.join(made["open"], name))
        os.symlink(os.path.join("..", "target", name), os.path.join(made["closed"], name))
        for sub, mode in (("solo", 0o700), ("open", 0o755), ("closed", 0o700), ("target", 0o755)):
            os.chmod(made[sub], mode)
        out = []
        for sub, label in (("solo", "lone file, 0700 folder"), ("open", "link to it from an open folder"),
                           ("closed", "link in a 0700 folder to an open file"),
                           ("target", "that open file itself")):
            nobody = sub != "target"
            out.append(mounts(d, os.path.join(made[sub], name), label, src_dir=made[sub],
                              want_ok={ua: not nobody, ub: not nobody}))
        return "; ".join(out)
    check("perms: a lone file in a 0700 folder, mounted directly or through links: as its folders allow",
          lone_files)

    def dir_0750():
        d = new_dir("perm-")
        _open_dirs(d)
        md = os.path.join(d, "m")
        os.makedirs(md)
        _model_dir(md, 0o750, gid)
        return mounts(d, md, "0750 folder of GROUP", want_ok={ua: False, ub: True})
    check("perms: a model in a 0750 folder of a group: its members read it all, others nothing",
          dir_0750)

    def sidecar_0700():
        # the model's folder open; config.json links into a 0700 folder, tokenizer.json
        # into a 0750 folder of GROUP
        d = new_dir("perm-")
        _open_dirs(d)
        md = os.path.join(d, "m")
        os.makedirs(md)
        _model_dir(md, 0o755, sidecars=("README.md", "tokenizer_config.json"))
        for sub, mode, g, name in (("priv", 0o700, 0, "config.json"), ("grp", 0o750, gid, "tokenizer.json")):
            p = os.path.join(d, sub)
            os.makedirs(p)
            write_file(os.path.join(p, name), _sidecar(name))
            os.chown(p, 0, g)
            os.chmod(p, mode)
            os.symlink(os.path.join("..", sub, name), os.path.join(md, name))
        return mounts(d, md, "sidecars into closed folders", want_ok={ua: True, ub: True})
    check("perms: sidecars linking into 0700 and 0750 folders: as their folders allow "
          "(model.gguf as the strictest with them)", sidecar_0700)

    def hub(blobs_mode, blobs_gid, snap_mode, label, want_ok):
        def run():
            d = new_dir("perm-")
            _open_dirs(d)
            src = os.path.join(d, "src")
            os.makedirs(src)
            _model_dir(src, 0o755)
            repo, snap = make_hub(d, src)
            for p in (repo, os.path.join(repo, "snapshots"), os.path.join(repo, "refs")):
                os.chmod(p, 0o755)
            blobs = os.path.join(repo, "blobs")
            os.chown(blobs, 0, blobs_gid)
            os.chmod(blobs, blobs_mode)
            os.chmod(snap, snap_mode)
            return mounts(d, repo, label, src_dir=snap, want_ok=want_ok)
        return run
    check("perms: a hub cache whose blobs folder is 0700: its snapshot's links read by nobody else",
          hub(0o700, 0, 0o755, "hub, blobs 0700", {ua: False, ub: False}))
    check("perms: a hub cache whose blobs folder is 0750 of a group: its members only",
          hub(0o750, gid, 0o755, "hub, blobs 0750 GROUP", {ua: False, ub: True}))
    check("perms: a hub cache whose snapshot folder is 0700 (blobs open): nobody else",
          hub(0o755, 0, 0o700, "hub, snapshot 0700", {ua: False, ub: False}))
    check("perms: a hub cache all open: everyone reads everything",
          hub(0o755, 0, 0o755, "hub, open", {ua: True, ub: True}))


def _acl_bytes(uid, perm, group=5, other=5):
    """An access ACL for a folder: user::rwx, user:UID:PERM, group::GROUP, mask::r-x,
    other::OTHER."""
    import struct
    ent = [(1, 7, 0xffffffff), (2, perm, uid), (4, group, 0xffffffff), (0x10, 5, 0xffffffff),
           (0x20, other, 0xffffffff)]
    return struct.pack("<I", 2) + b"".join(struct.pack("<HHI", t, p, i) for t, p, i in ent)


def acl_folder(gid):
    ua, ub = USERS

    def case(label, user, perm, group, other, want):
        """A model folder whose ACL names `user` (PERM for them, GROUP and OTHER for the owning
        group and everyone else); want: {user: reads directly} (the premise)."""
        def run():
            errs = Errs()
            d = new_dir("perm-")
            _open_dirs(d)
            md = os.path.join(d, "m")
            os.makedirs(md)
            _model_dir(md, 0o755)
            uid = int(subprocess.run(["id", "-u", user], stdout=subprocess.PIPE).stdout)
            try:
                os.setxattr(md, "system.posix_acl_access", _acl_bytes(uid, perm, group, other))
            except OSError as e:
                raise Fail("cannot set an ACL on %s: %s" % (md, e))
            with Mount(md, ["-o", "allow_other"]) as m:
                _open_dirs(os.path.dirname(m.mp))
                pairs, _ = _pairs(m, md)
                first = pairs[1][1][0]
                for u, ok in want.items():
                    if direct(u, [first])[first].startswith("ok ") != ok:
                        errs.add("%s: premise: %s reads directly: %s" % (label, u, not ok))
                n = _compare(errs, label, USERS, pairs)
            errs.raise_if_any()
            return "mode %o; %d readable (user, file) pairs of %d" % (
                stat.S_IMODE(os.stat(md).st_mode), n, 2 * len(pairs))
        return run
    # the mode says 0755, yet the ACL refuses ua: shown as ua's, ua's bit clear
    check("perms: a folder whose ACL refuses one user its mode allows: everyone else reads",
          case("ACL user:ua:---", ua, 0, 5, 5, {ua: False, ub: True}))
    # the mode says 0750 of root's group, yet the ACL lets ub through: shown as ub's
    check("perms: a folder whose ACL lets one user through its mode refuses: that user alone",
          case("ACL user:ub:r-x", ub, 5, 0, 0, {ua: False, ub: True}))
