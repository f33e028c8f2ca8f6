"""Group perms: with -o allow_other, every node carries the owner, group and
read bits of the file its bytes come from, and the kernel checks them
(default_permissions): another local user reads through the mount exactly
what they could read directly (issue 17, item 1).  Needs root, useradd,
groupadd and runuser; two users are made for the run and removed after.
"""

import json
import os
import shutil
import stat
import subprocess

from wf_harness import check, Errs, Fail, Mount, new_dir, skip_or_fail, TMP
from wf_models import make_st_set, write_file

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
            # the strictest of a 0644 root:root and a 0640 root:GROUP file: only the owner
            # is sure to read both
            if stat.S_IMODE(st.st_mode) != 0o500:
                errs.add("root dir mode %o, expected 500" % st.st_mode)
            names = [m.path(e["path"]) for e in ents]
            got = probe(ub, [m.mp] + names)
            _expect(errs, got, m.mp, False, label=ub)
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
