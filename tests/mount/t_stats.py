"""Group stats: weightfs stats against numpy over every oracle tensor, in
every output dtype that changes the values, its selection, table, JSON,
errors, and the accuracy of its sums on values where float32 sums fail.
"""

import json
import os
import re
import subprocess

import numpy as np

from wf_harness import BIN, check, Errs, Fail, GGML, new_dir, reset_signals, san_lines, STO
from wf_models import GGML_MAN, GGUF_DTYPE, gguf_expected, ST_MAN, write_file

try:
    import torch
except ImportError:  # bf16 rounding then has no reference here
    torch = None


def run(args, timeout=120):
    p = subprocess.run([BIN] + args, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       preexec_fn=reset_signals, timeout=timeout)
    err = p.stderr.decode("utf-8", "replace")
    if san_lines(err):
        raise Fail("weightfs %s: sanitizer output: %s" % (" ".join(args[:2]), san_lines(err)[0]))
    return p.returncode, p.stdout.decode("utf-8", "surrogateescape"), err


def np_stats(a):
    """The statistics as numpy computes them, in float64."""
    x = np.asarray(a).astype(np.float64).ravel()
    fin = x[np.isfinite(x)]
    d = {"count": int(x.size), "zeros": int(np.count_nonzero(x == 0)), "nan": int(np.isnan(x).sum()),
         "inf": int(np.isinf(x).sum())}
    if fin.size:
        d.update(min=float(fin.min()), max=float(fin.max()), mean=float(fin.mean()), std=float(fin.std()),
                 absmax=float(np.abs(fin).max()))
    else:
        d.update(min=None, max=None, mean=None, std=None, absmax=None)
    return d


def compare(got, want, label, errs, rel=1e-12):
    for k in ("count", "zeros", "nan", "inf", "min", "max", "absmax"):
        if got.get(k) != want[k]:
            errs.add("%s: %s = %r, numpy %r" % (label, k, got.get(k), want[k]))
    for k in ("mean", "std"):
        g, w = got.get(k), want[k]
        if (g is None) != (w is None):
            errs.add("%s: %s = %r, numpy %r" % (label, k, g, w))
        elif w is not None:
            # the mean's error is relative to the values' size, not its own
            scale = want["absmax"] if k == "mean" else max(w, want["absmax"] * 1e-6)
            if abs(g - w) > rel * max(scale, 1e-300):
                errs.add("%s: %s = %r, numpy %r" % (label, k, g, w))


def stats_json(path, extra=(), sel=()):
    rc, out, err = run(["stats", "--json"] + list(extra) + [path] + list(sel))
    try:
        doc = json.loads(out)
    except ValueError as e:
        raise Fail("stats --json %s: not JSON (%s): %r" % (path, e, out[:200]))
    return rc, doc, err


def oracle_expected():
    """(file, name, numpy array of the expected values) for every tensor of
    both oracles; None for a tensor with no decoder."""
    for t in GGML_MAN["tensors"]:
        exp = gguf_expected(t)
        ty = t["type"].upper()
        arr = None if exp is None else np.frombuffer(exp, GGUF_DTYPE.get(ty, "<f4"))
        yield os.path.join(GGML, t["file"]), t["name"], arr
    for t in ST_MAN["tensors"]:
        with open(os.path.join(STO, t["expected"]), "rb") as f:
            yield os.path.join(STO, t["file"]), t["name"], np.frombuffer(f.read(), t["expected_dtype"])


def oracle_against_numpy():
    errs, done, by_file = Errs(), 0, {}
    for path, name, arr in oracle_expected():
        by_file.setdefault(path, []).append((name, arr))
    for path, tensors in sorted(by_file.items()):
        rc, doc, err = stats_json(path)
        got = {t["name"]: t for t in doc["tensors"]}
        bad = {e["name"] for e in doc.get("errors", [])}
        want_rc = 4 if any(a is None for _, a in tensors) else 0
        if rc != want_rc:
            errs.add("%s: exit %d, expected %d (%s)" % (os.path.basename(path), rc, want_rc, err.strip()))
        for name, arr in tensors:
            label = "%s %r" % (os.path.basename(path), name)
            if arr is None:
                if name not in bad or name in got:
                    errs.add("%s: no decoder, yet not listed under errors" % label)
                continue
            if name not in got:
                errs.add("%s: missing from the output" % label)
                continue
            compare(got[name], np_stats(arr), label, errs)
            done += 1
    errs.raise_if_any()
    return "%d tensors in %d files" % (done, len(by_file))


def rounded(arr, dtype):
    x = np.asarray(arr, np.float32)
    if dtype == "f16":
        with np.errstate(over="ignore"):
            return x.astype(np.float16)
    return torch.from_numpy(x.copy()).to(torch.bfloat16).to(torch.float64).numpy()


def other_dtypes():
    """-o dtype=f16 and bf16: the statistics of the rounded values."""
    errs, n = Errs(), 0
    files = ["type_f32.gguf", "type_q4_K.gguf", "type_bf16.gguf", "mixed_llama_tiny.gguf"]
    for dt in ("f16", "bf16") if torch is not None else ("f16",):
        for fname in files:
            path = os.path.join(GGML, fname)
            rc, doc, err = stats_json(path, ["-o", "dtype=" + dt])
            if rc != 0:
                errs.add("%s -o dtype=%s: exit %d: %s" % (fname, dt, rc, err.strip()))
                continue
            got = {t["name"]: t for t in doc["tensors"]}
            for t in GGML_MAN["tensors"]:
                if t["file"] != fname:
                    continue
                want = np_stats(rounded(np.frombuffer(gguf_expected(t), "<f4"), dt))
                compare(got.get(t["name"], {}), want, "%s %s %s" % (fname, dt, t["name"]), errs)
                n += 1
    errs.raise_if_any()
    return "%d tensors" % n


def hard_sums(d):
    """A tensor over several chunks of 2^18 elements whose float32 sum
    would be far off: a large offset, small noise, and NaN, infinities and
    zeros sprinkled in; also a tensor of NaN only and an empty one."""
    rng = np.random.default_rng(19)
    n = 3 * (1 << 18) + 12345
    a = (1e7 + rng.standard_normal(n)).astype(np.float32)
    a[rng.integers(0, n, 50)] = np.nan
    a[rng.integers(0, n, 20)] = np.inf
    a[rng.integers(0, n, 20)] = -np.inf
    a[rng.integers(0, n, 70)] = 0.0
    b = rng.standard_normal((700, 1000)).astype(np.float32) * np.float32(1e-3)
    tensors = [("offset", a), ("noise", b), ("nans", np.full(5, np.nan, np.float32)),
               ("empty", np.zeros((0, 3), np.float32))]
    head, off, blobs = {}, 0, []
    for name, arr in tensors:
        raw = arr.tobytes()
        head[name] = {"dtype": "F32", "shape": list(arr.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(head).encode()
    path = os.path.join(d, "hard.safetensors")
    write_file(path, len(h).to_bytes(8, "little") + h + b"".join(blobs))
    return path, dict(tensors)


def accuracy():
    errs = Errs()
    path, arrs = hard_sums(new_dir("stats-"))
    rc, doc, err = stats_json(path)
    if rc != 0:
        raise Fail("exit %d: %s" % (rc, err.strip()))
    got = {t["name"]: t for t in doc["tensors"]}
    for name, arr in arrs.items():
        compare(got[name], np_stats(arr), name, errs, rel=1e-13)
    naive = float(np.sum(arrs["offset"][np.isfinite(arrs["offset"])], dtype=np.float32)) / \
        np.isfinite(arrs["offset"]).sum()
    if abs(naive - np_stats(arrs["offset"])["mean"]) < 1e-3:
        errs.add("the test is too easy: a float32 sum gets the mean right")
    if got["nans"]["min"] is not None or got["nans"]["nan"] != 5 or got["empty"]["count"] != 0:
        errs.add("all-NaN or empty tensor: %r %r" % (got["nans"], got["empty"]))
    errs.raise_if_any()


TABLE_HEAD = ["NAME", "TYPE", "SHAPE", "COUNT", "MIN", "MAX", "MEAN", "STD", "ABSMAX", "ZEROS", "NAN", "INF"]


def table():
    """The text table: a header, one row per tensor, columns aligned
    (names and types left, numbers right), values those of --json."""
    errs = Errs()
    path = os.path.join(GGML, "mixed_llama_tiny.gguf")
    rc, out, err = run(["stats", path])
    _, doc, _ = stats_json(path)
    if rc != 0 or err:
        raise Fail("exit %d, stderr %r" % (rc, err))
    lines = out.splitlines()
    head = [(m.start(), m.end()) for m in re.finditer(r"\S+", lines[0])]
    if lines[0].split() != TABLE_HEAD:
        errs.add("header %r" % lines[0])
    if len(lines) != 1 + len(doc["tensors"]):
        errs.add("%d lines for %d tensors" % (len(lines), len(doc["tensors"])))
    for line, t in zip(lines[1:], doc["tensors"]):
        cells = [(m.start(), m.end(), m.group()) for m in re.finditer(r"\S+", line.replace(", ", ",_"))]
        if len(cells) != 12:
            errs.add("row %r: %d cells" % (line, len(cells)))
            continue
        for k, (s, e, _) in enumerate(cells):
            if (k < 3 and s != head[k][0]) or (k >= 3 and e != head[k][1]):
                errs.add("row %r: column %s not aligned" % (t["name"], TABLE_HEAD[k]))
        want = [t["name"], t["type"], json.dumps(t["shape"]).replace(", ", ",_"), str(t["count"])] + \
            ["%.6g" % t[k] for k in ("min", "max", "mean", "std", "absmax")] + \
            [str(t[k]) for k in ("zeros", "nan", "inf")]
        got = [c[2] for c in cells]
        if got != want:
            errs.add("row %r, expected %r" % (got, want))
    errs.raise_if_any()


def selection():
    errs = Errs()
    path = os.path.join(GGML, "mixed_llama_tiny.gguf")
    _, alldoc, _ = stats_json(path)
    names = [t["name"] for t in alldoc["tensors"]]
    for sel in (["blk.0."], ["blk.1.attn_q.weight"], ["output", "token_embd.weight"], ["blk."]):
        rc, doc, err = stats_json(path, sel=sel)
        want = [n for n in names if any(n.startswith(s) for s in sel)]
        got = [t["name"] for t in doc["tensors"]]
        if rc != 0 or got != want:
            errs.add("%r: exit %d, %r, expected %r" % (sel, rc, got, want))
        if doc["tensors"] and doc["tensors"][0] != alldoc["tensors"][names.index(got[0])]:
            errs.add("%r: values differ from the whole run" % sel)
    rc, out, err = run(["stats", path, "blk.9"])
    if rc != 1 or out or len(err.splitlines()) != 1 or "blk.9" not in err:
        errs.add("no match: exit %d, stdout %r, stderr %r" % (rc, out[:80], err))
    for args, code in ((["stats"], 1), (["stats", "--bogus", path], 1), (["stats", "-o", "dtype=f8", path], 1),
                       (["stats", os.path.join(GGML, "nonexistent.gguf")], 2)):
        rc, out, err = run(args)
        if rc != code or out or len(err.splitlines()) != 1:
            errs.add("%r: exit %d (expected %d), stdout %r, stderr %r" % (args[1:], rc, code, out[:80], err))
    rc, out, err = run(["stats", "-o", "dtype=stored", os.path.join(GGML, "type_q4_0.gguf")])
    if rc != 4 or "blocks" not in err:
        errs.add("stored blocks: exit %d, stderr %r" % (rc, err))
    errs.raise_if_any()


def group_stats():
    check("stats: every oracle tensor (GGUF and safetensors) against numpy", oracle_against_numpy)
    check("stats: -o dtype=f16/bf16 are the statistics of the rounded values", other_dtypes)
    check("stats: several chunks, a 1e7 offset, NaN/inf/zeros: mean and std to 1e-13", accuracy)
    check("stats: the text table is aligned and holds the JSON's values", table)
    check("stats: NAME and PREFIX selection, usage and open errors", selection)
