#!/usr/bin/python3
"""Local paths of the real Hugging Face tokenizer files listed in tokenizers.json.

    import real_tokenizers
    real_tokenizers.path("qwen2_5")                    # .../tokenizer.json, or None
    real_tokenizers.path("qwen2_5", "tokenizer_config.json")
    real_tokenizers.folder("llama3_1")                 # folder holding both files, or None
    real_tokenizers.entries()                          # {key: manifest entry}

A file is returned only when it is there and its sha256 is the manifest's (a changed file
gives None, as a missing one: run tests/clients/npm.sh). The npm folder is
$WEIGHTFS_NPM, default ~/.cache/weightfs-npm.

CLI: real_tokenizers.py            prints {key: path or null} as JSON
     real_tokenizers.py KEY [FILE] prints the path, exit 1 when absent
"""
import hashlib
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
MANIFEST = os.path.join(HERE, "tokenizers.json")
_checked = {}


def npm_dir():
    return os.environ.get("WEIGHTFS_NPM") or os.path.join(
        os.path.expanduser("~"), ".cache", "weightfs-npm")


def manifest():
    with open(MANIFEST, encoding="utf-8") as f:
        return json.load(f)


def entries():
    return manifest()["tokenizers"]


def _sha256(p):
    h = hashlib.sha256()
    with open(p, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def path(key, name="tokenizer.json"):
    e = entries().get(key)
    if e is None:
        raise KeyError("no tokenizer %r in %s" % (key, MANIFEST))
    f = e["files"].get(name)
    if f is None:
        return None
    p = os.path.join(npm_dir(), "node_modules", e["package"], f["path"])
    ck = (p, f["sha256"])
    if ck not in _checked:
        _checked[ck] = os.path.isfile(p) and _sha256(p) == f["sha256"]
    return p if _checked[ck] else None


def folder(key):
    """The folder with the tokenizer files, when all of them are present and match."""
    e = entries()[key]
    ps = [path(key, n) for n in e["files"]]
    if not all(ps):
        return None
    return os.path.dirname(ps[0])


if __name__ == "__main__":
    if len(sys.argv) > 1:
        p = path(sys.argv[1], *(sys.argv[2:3]))
        if p is None:
            sys.exit(1)
        print(p)
    else:
        print(json.dumps({k: path(k) for k in entries()}, indent=1))
