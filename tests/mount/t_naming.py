"""Group naming: hostile tensor names (empty, dots, /, %, invalid UTF-8,
control bytes, long components, collisions) against the naming model.
"""

import json
import math
import os
import subprocess

import numpy as np

from wf_harness import check, Errs, Fail, Mount, TMP
from wf_models import f32_tensor, gguf_bytes, gkv, loads_exact, Num, write_file
from wf_naming import expected_paths, fnv1a64, utf8_len
from wf_tree import check_stat_tree, check_tools, meta_dir, valid_components, walk_files


# ---------------------------------------------------------------- group: naming

HOSTILE_NAMES = [
    b"", b".", b"..", b"a..b", b".a", b"a.", b"a/b", b"a.b", b"a.b.c",
    b"metadata.json", b"tensors.json", b"metadata", b"tensors",
    b"100%", b"%", b"%%.%", b"p/q", b"p%2Fq", b"%2F", b"q.%", b"q.%25",
    b"bad\xffutf8", b"\xff", b"%FF", b"%ff", b"\xfe.\xfe",
    b"\xc0\xaf", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xe2\x82", b"trunc\xf0\x9f\x98",
    b"ctl\x01\x1f\x7f", b"nul\x00byte", b"tab\there", b"new\nline", b"\x00",
    b"caf\xc3\xa9.\xf0\x9f\x98\x80", b"sp ace", b"~tilde", b"-dash", b"a b.c d",
    b'quote".back\\slash', b"x.tensor", b"x", b"y~2", b"y",
    b"L" * 300, b"L" * 200 + b"M" * 100, b"d." + b"L" * 300 + b".leaf",
    b"d." + b"L" * 300 + b".other", b"\xc3\xa9" * 150, b"%" * 300, b"\xff" * 120,
    b"x" * 255, b"y" * 256, b"z" * 85 + b"%" * 57,
    b"k" * 250, b"k" * 250 + b".c",
]

# exact paths from docs/naming.md's examples and rules
HOSTILE_FIXED = {
    b"": b"%.tensor", b".": b"%/%.tensor", b"..": b"%/%/%", b"a..b": b"a/%/b",
    b".a": b"%/a", b"a.": b"a/%.tensor", b"a/b": b"a%2Fb", b"a.b": b"a/b.tensor",
    b"a.b.c": b"a/b/c", b"metadata.json": b"metadata/json", b"tensors.json": b"tensors/json",
    b"metadata": b"metadata.tensor", b"100%": b"100%25", b"p/q": b"p%2Fq",
    b"p%2Fq": b"p%252Fq", b"bad\xffutf8": b"bad%FFutf8", b"\xff": b"%FF", b"%FF": b"%25FF",
    b"ctl\x01\x1f\x7f": b"ctl%01%1F%7F", b"nul\x00byte": b"nul%00byte",
    b"caf\xc3\xa9.\xf0\x9f\x98\x80": b"caf\xc3\xa9/\xf0\x9f\x98\x80",
    b"\xc0\xaf": b"%C0%AF", b"\xed\xa0\x80": b"%ED%A0%80", b"x": b"x.tensor",
    b"x" * 255: b"x" * 255,
    b"y" * 256: b"y" * 200 + b"%%~%016x" % fnv1a64(b"y" * 256),
}


def hostile_model():
    tensors = []
    for i, n in enumerate(HOSTILE_NAMES):
        tensors.append(f32_tensor(n, np.arange(3, dtype=np.float32) + 10 * i))
    kvs = [gkv("general.architecture", "str", "hostile"),
           gkv(b"key.bad\xffutf8", "str", b"value\xfe\x00nul\x01ctl\"q\\b\xe2\x82"),
           gkv("f32.nan", "f32", float("nan")), gkv("f32.inf", "f32", float("-inf")),
           gkv("f32.negzero", "f32", -0.0), gkv("f64.negzero", "f64", -0.0),
           gkv("u64.max", "u64", 2**64 - 1), gkv("i64.min", "i64", -2**63),
           gkv("arr.str", "arr", [b"\xff", b"ok", b""], elem="str"),
           gkv(".", "str", "dot"), gkv("..", "str", "dotdot")]
    return write_file(os.path.join(TMP, "hostile.gguf"), gguf_bytes(tensors, kvs))


def json_escaped(b):
    """What json.loads gives for weightfs's JSON string of bytes b: valid
    UTF-8 as text, each other byte as the lone surrogate U+DC80 + (byte -
    0x80) (its \\udcXX escape), as Python's surrogateescape decodes it.
    Built by hand from the naming model's UTF-8 check rather than with
    b.decode("utf-8", "surrogateescape"), so the two are compared."""
    out, i = [], 0
    while i < len(b):
        c = b[i]
        n = utf8_len(b, i) if c >= 0x80 else 1
        if n == 0:
            out.append(chr(0xDC00 + c))
            i += 1
        else:
            out.append(b[i:i + n].decode("utf-8"))
            i += n
    s = "".join(out)
    assert s == b.decode("utf-8", "surrogateescape"), b
    return s


def check_invalid_utf8_distinct():
    """Two keys, two string values and two tensor names that differ only in
    a byte that is not UTF-8: with U+FFFD they became one string in the JSON
    files and json.loads kept one key.  Each must now be its own string and
    give back its bytes through surrogateescape."""
    keys, names = [b"k\xff", b"k\xfe"], [b"t\xff", b"t\xfe"]
    tensors = [f32_tensor(n, np.arange(2, dtype=np.float32) + i) for i, n in enumerate(names)]
    kvs = [gkv(k, "str", b"v" + k[1:]) for k in keys]
    model = write_file(os.path.join(TMP, "utf8-distinct.gguf"), gguf_bytes(tensors, kvs))
    errs = Errs()
    with Mount(model) as m:
        with open(m.path("metadata.json"), "rb") as f:
            pairs = json.loads(f.read().decode("utf-8"), object_pairs_hook=lambda p: p)
        got = [(k.encode("utf-8", "surrogateescape"), v.encode("utf-8", "surrogateescape"))
               for k, v in pairs]
        if got != [(k, b"v" + k[1:]) for k in keys]:
            errs.add("metadata.json pairs %r" % (pairs,))
        with open(m.path("tensors.json"), "rb") as f:
            tj = json.loads(f.read().decode("utf-8"))
        got_n = [e["name"].encode("utf-8", "surrogateescape") for e in tj["tensors"]]
        if got_n != names:
            errs.add("tensors.json names %r" % ([e["name"] for e in tj["tensors"]],))
        for e, n in zip(tj["tensors"], names):
            if os.getxattr(m.path(e["path"].encode()), "user.weightfs.name") != n:
                errs.add("%r: path %r is not that tensor" % (n, e["path"]))
    errs.raise_if_any()


def group_naming():
    model = hostile_model()
    with Mount(model) as m:
        tj = {}

        def paths():
            errs = Errs()
            with open(m.path("tensors.json"), "rb") as f:
                tj.update(json.loads(f.read().decode("utf-8")))
            ents = tj["tensors"]
            if len(ents) != len(HOSTILE_NAMES):
                raise Fail("%d tensors listed, %d in the model" % (len(ents), len(HOSTILE_NAMES)))
            want_paths = expected_paths(HOSTILE_NAMES)
            seen = set()
            for i, (raw, e, wp) in enumerate(zip(HOSTILE_NAMES, ents, want_paths)):
                pb = e["path"].encode()
                if e["name"] != json_escaped(raw):
                    errs.add("tensor %d: name %r, expected %r" % (i, e["name"], json_escaped(raw)))
                elif e["name"].encode("utf-8", "surrogateescape") != raw:
                    errs.add("tensor %d: name %r does not round-trip" % (i, e["name"]))
                if pb != wp:
                    errs.add("%r: path %r, expected by the naming rules %r" % (raw[:40], pb[:60], wp[:60]))
                if raw in HOSTILE_FIXED and pb != HOSTILE_FIXED[raw]:
                    errs.add("%r: path %r, expected %r" % (raw[:40], pb[:60], HOSTILE_FIXED[raw][:60]))
                if pb in seen:
                    errs.add("%r: duplicate path %r" % (raw[:40], pb[:60]))
                seen.add(pb)
                valid_components(pb, errs, repr(raw[:40]))
            errs.raise_if_any()
        check("naming: hostile GGUF paths follow the rules, unique, valid", paths)

        def reach():
            errs = Errs()
            for i, (raw, e) in enumerate(zip(HOSTILE_NAMES, tj.get("tensors", []))):
                p = m.path(e["path"].encode())
                exp = (np.arange(3, dtype="<f4") + 10 * i).tobytes()
                try:
                    with open(p, "rb") as f:
                        got = f.read()
                    if got != exp:
                        errs.add("%r: wrong contents" % raw[:40])
                    if os.getxattr(p, "user.weightfs.name") != raw:
                        errs.add("%r: user.weightfs.name %r" % (raw[:40], os.getxattr(
                            p, "user.weightfs.name")[:40]))
                except OSError as ex:
                    errs.add("%r at %r: %s" % (raw[:40], e["path"][:60], ex.strerror))
            found = walk_files(m)
            want_f = {e["path"].encode() for e in tj.get("tensors", [])} | \
                {b"metadata.json", b"tensors.json"}
            if found != want_f:
                errs.add("os.walk: %d extra, %d missing" % (len(found - want_f), len(want_f - found)))
            errs.raise_if_any()
        check("naming: every hostile tensor reachable with its contents and name xattr", reach)

        def meta():
            with open(m.path("metadata.json"), "rb") as f:
                raw = f.read()
            pairs = loads_exact(raw)
            d = dict(pairs)
            errs = Errs()
            k = json_escaped(b"key.bad\xffutf8")
            if d.get(k) != json_escaped(b"value\xfe\x00nul\x01ctl\"q\\b\xe2\x82"):
                errs.add("invalid UTF-8 key/value: %r" % (d.get(k),))
            if d.get("f32.nan") != "NaN" or d.get("f32.inf") != "-Infinity":
                errs.add("nan/inf: %r %r" % (d.get("f32.nan"), d.get("f32.inf")))
            for key in ("f32.negzero", "f64.negzero"):
                v = d.get(key)
                if not isinstance(v, Num) or math.copysign(1.0, float(v.text)) != -1.0:
                    errs.add("%s: %r has lost the sign of zero" % (key, v))
            if not isinstance(d.get("u64.max"), Num) or d["u64.max"].text != str(2**64 - 1):
                errs.add("u64.max: %r" % d.get("u64.max"))
            if not isinstance(d.get("i64.min"), Num) or d["i64.min"].text != str(-2**63):
                errs.add("i64.min: %r" % d.get("i64.min"))
            if d.get("arr.str") != ["\udcff", "ok", ""]:
                errs.add("arr.str: %r" % d.get("arr.str"))
            errs.raise_if_any()
        check("naming: metadata.json of hostile keys/values is valid exact JSON", meta)

        def meta_dots():
            # keys "." and ".." are files %2E and %2E%2E of the metadata folder;
            # unescaped, the folder would list "." and ".." twice and they
            # could not be read (issue 17 item 13)
            errs = Errs()
            md = m.path(meta_dir(m.mp))
            names = os.listdir(md)
            if names.count("%2E") != 1 or names.count("%2E%2E") != 1:
                errs.add("metadata/ lists %r" % sorted(n for n in names if "2E" in n or n.startswith(".")))
            ents = subprocess.run(["ls", "-a1", md], stdout=subprocess.PIPE).stdout.split(b"\n")
            if ents.count(b".") != 1 or ents.count(b"..") != 1:
                errs.add("ls -a lists . %d times and .. %d times" % (ents.count(b"."), ents.count(b"..")))
            for name, want in (("%2E", b'"dot"'), ("%2E%2E", b'"dotdot"')):
                try:
                    with open(os.path.join(md, name), "rb") as f:
                        got = f.read()
                    if got.strip() not in (want, want.strip(b'"')):
                        errs.add("%s holds %r" % (name, got))
                except OSError as e:
                    errs.add("%s: %s" % (name, e))
            errs.raise_if_any()
        check("naming: metadata keys '.' and '..' are the files %2E and %2E%2E", meta_dots)
        check("stat: tree of the hostile GGUF", check_stat_tree, m, model)
        check("stat: ls/du/find/tree on the hostile GGUF", check_tools, m, len(HOSTILE_NAMES))
    check("naming: keys and names differing only in invalid UTF-8 stay distinct in the JSON files",
          check_invalid_utf8_distinct)
