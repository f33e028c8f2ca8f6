#!/usr/bin/python3
"""The sha256 of what the bridge makes of every converter test model: model.gguf and
WEIGHTFS.txt of each folder of tests/clients/converter_cases.py mounted in each of its
outtypes and q8_0 and q4_k_m, and every file under hf/ (and WEIGHTFS.txt) of the f32, auto
and q4_k_m model.gguf mounted back.  A refactoring of src/arch/ must leave them all equal:

    /usr/bin/python3 tools/arch_digests.py . OLD_BINARY old.json
    /usr/bin/python3 tools/arch_digests.py . build/weightfs new.json
    cmp old.json new.json

The models are made once under /dev/shm/h-arch-sha/models (real tokenizers from
tests/clients/npm.sh) and kept; WEIGHTFS.txt is hashed with the run's tag (OUT's name,
which it names through the copy's path) replaced by TAG."""
import hashlib, json, os, shutil, subprocess, sys, time
root = sys.argv[1]; binp = os.path.abspath(sys.argv[2]); out = sys.argv[3]
sys.path.insert(0, os.path.join(root, "tests/clients"))
import converter_cases
data = "/dev/shm/h-arch-sha"
TAG = os.path.basename(out).replace(".json", "")
os.makedirs(data, exist_ok=True)
def sha(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        while True:
            b = f.read(1 << 20)
            if not b: break
            h.update(b)
    return h.hexdigest()
def mount(src, opts):
    mp = os.path.join(data, "mnt-" + TAG); os.makedirs(mp, exist_ok=True)
    subprocess.run([binp] + opts + [src, mp], check=True, timeout=60)
    return mp
def umount(mp):
    subprocess.run(["fusermount3", "-u", mp], check=True)
    time.sleep(0.05)
def walk(mp, res, pre):
    if os.path.exists(os.path.join(mp, "model.gguf")):
        res[pre + "model.gguf"] = sha(os.path.join(mp, "model.gguf"))
    for fn in ("WEIGHTFS.txt",):
        if os.path.exists(os.path.join(mp, fn)):
            # the text names the mounted file, whose name carries this run's tag
            t = open(os.path.join(mp, fn), "rb").read().replace(TAG.encode(), b"TAG")
            res[pre + fn] = hashlib.sha256(t).hexdigest()
    h = os.path.join(mp, "hf")
    if os.path.isdir(h):
        for dp, _, fns in os.walk(h):
            for f in sorted(fns):
                p = os.path.join(dp, f)
                res[pre + os.path.relpath(p, mp)] = sha(p)
res = {}
for name, (kind, key, opts, outtypes) in sorted(converter_cases.CASES.items()):
    folder = os.path.join(data, "models", name)
    if not os.path.isdir(folder):
        os.makedirs(os.path.join(data, "models"), exist_ok=True)
        converter_cases.make(name, os.path.join(data, "models"))
    for ot in list(outtypes) + ["q8_0", "q4_k_m"]:
        mp = mount(folder, ["-o", "gguf=" + ot])
        try:
            walk(mp, res, "%s/%s/" % (name, ot))
            g = os.path.join(mp, "model.gguf")
            cp = os.path.join(data, "copy-" + TAG + ".gguf")
            if ot in ("f32", "auto", "q4_k_m") and os.path.exists(g):
                shutil.copy(g, cp)
            else:
                cp = None
        finally:
            umount(mp)
        if cp:
            mp = mount(cp, [])
            try:
                walk(mp, res, "%s/%s/gguf-mounted/" % (name, ot))
            finally:
                umount(mp)
    print(name, len(res), flush=True)
json.dump(res, open(out, "w"), indent=0, sort_keys=True)
print("files", len(res))
