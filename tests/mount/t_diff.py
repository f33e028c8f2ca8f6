"""Group diff: weightfs diff against numpy on converted copies of the
oracle files (f32, f16, bf16), on Hugging Face-named copies the test builds
itself (llama's q/k rows permuted back as transformers has them, with and
without config.json; qwen2 without a permutation; gemma's 1 + w norms), the
table and verdict, and exit codes 0/1/2 as diff(1).
"""

import json
import os
import struct

import numpy as np

from wf_harness import check, Errs, Fail, GGML, new_dir
from wf_models import f32_tensor, gguf_bytes, gkv, write_file
from t_stats import run

LLAMA = os.path.join(GGML, "mixed_llama_tiny.gguf")
LLAMA_HEADS, LLAMA_KV = 4, 2   # its llama.attention.head_count(_kv)
FLOAT_FILES = ["type_f32.gguf", "type_f16.gguf", "type_bf16.gguf", "type_q4_K.gguf", "type_q8_0.gguf",
               "type_iq2_xs.gguf", "mixed_llama_tiny.gguf"]


def diff_json(a, b):
    rc, out, err = run(["diff", "--json", a, b])
    try:
        return rc, json.loads(out), err
    except ValueError:
        raise Fail("diff --json %s %s: exit %d, not JSON: %r %r" % (a, b, rc, out[:200], err))


def st_read(path):
    """name -> float64 array of a safetensors file (F32, F16, BF16), read
    here without weightfs."""
    with open(path, "rb") as f:
        data = f.read()
    n = struct.unpack("<Q", data[:8])[0]
    head = json.loads(data[8:8 + n])
    out = {}
    for name, e in head.items():
        if name == "__metadata__":
            continue
        raw = data[8 + n + e["data_offsets"][0]:8 + n + e["data_offsets"][1]]
        if e["dtype"] == "BF16":
            a = (np.frombuffer(raw, "<u2").astype(np.uint32) << 16).view(np.float32)
        else:
            a = np.frombuffer(raw, {"F32": "<f4", "F16": "<f2"}[e["dtype"]])
        out[name] = a.astype(np.float64).reshape(e["shape"])
    return out


def st_write(path, tensors):
    hdr, off, blobs = {}, 0, []
    for name, a in tensors:
        raw = np.ascontiguousarray(a, "<f4").tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(np.shape(a)), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(hdr).encode()
    write_file(path, struct.pack("<Q", len(h)) + h + b"".join(blobs))


def np_metrics(a, b):
    a, b = np.asarray(a, np.float64).ravel(), np.asarray(b, np.float64).ravel()
    both = np.isfinite(a) & np.isfinite(b)
    x, y = a[both], b[both]
    d = {"differ": int(np.count_nonzero(~((a == b) | (np.isnan(a) & np.isnan(b)))))}
    if x.size:
        rmse = float(np.sqrt(np.mean((x - y) ** 2)))
        rms = float(np.sqrt(np.mean(x * x)))
        d.update(max_abs=float(np.abs(x - y).max()), rmse=rmse, rel_rmse=rmse / rms if rms else None)
        na, nb = float(np.sqrt((x * x).sum())), float(np.sqrt((y * y).sum()))
        d["cosine"] = float((x * y).sum()) / na / nb if na and nb else None
    else:
        d.update(max_abs=None, rmse=None, rel_rmse=None, cosine=None)
    return d


def compare(got, want, label, errs):
    if got["differ"] != want["differ"] or got["max_abs"] != want["max_abs"]:
        errs.add("%s: differ %r max_abs %r, numpy %r %r" % (label, got["differ"], got["max_abs"], want["differ"],
                                                              want["max_abs"]))
    for k in ("rmse", "rel_rmse", "cosine"):
        g, w = got[k], want[k]
        if (g is None) != (w is None) or (w is not None and abs(g - w) > 1e-9 * max(abs(w), 1e-300)):
            errs.add("%s: %s = %r, numpy %r" % (label, k, g, w))


def converted_copies():
    """Each float oracle file against its f32, f16 and bf16 conversions."""
    errs, d, n = Errs(), new_dir("diff-"), 0
    for fname in FLOAT_FILES:
        src = os.path.join(GGML, fname)
        ref = None
        for dt in ("f32", "f16", "bf16"):
            out = os.path.join(d, "%s.%s.safetensors" % (fname, dt))
            rc, _, err = run(["convert", "-o", "dtype=" + dt, src, out])
            if rc != 0:
                errs.add("convert %s %s: %d %s" % (fname, dt, rc, err))
                continue
            if dt == "f32":
                ref = st_read(out)
            rc, doc, err = diff_json(src, out)
            vals = st_read(out)
            want_rc = 0 if all(np.array_equal(ref[k], vals[k], equal_nan=True) for k in ref) else 1
            if rc != want_rc or doc["only_a"] or doc["only_b"] or doc["shape_mismatch"]:
                errs.add("%s vs %s copy: exit %d (expected %d), %r" % (fname, dt, rc, want_rc, err))
            for t in doc["tensors"]:
                compare(t, np_metrics(ref[t["a"]], vals[t["b"]]), "%s %s %s" % (fname, dt, t["a"]), errs)
                n += 1
    errs.raise_if_any()
    return "%d pairs" % n


GGUF_TO_HF = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
              "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj",
              "ffn_norm": "post_attention_layernorm", "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj",
              "ffn_down": "mlp.down_proj", "attn_q_norm": "self_attn.q_norm", "attn_k_norm": "self_attn.k_norm"}
GLOBAL = {"token_embd.weight": "model.embed_tokens.weight", "output_norm.weight": "model.norm.weight",
          "output.weight": "lm_head.weight"}


def hf_name(g):
    if g in GLOBAL:
        return GLOBAL[g]
    _, n, part, sfx = g.split(".")
    return "model.layers.%s.%s.%s" % (n, GGUF_TO_HF[part], sfx)


def to_hf_rows(w, heads):
    """Undoes llama.cpp's permute (reshape(h, 2, d/2, ...).swapaxes(1, 2)):
    GGUF rows back to the order transformers keeps them in."""
    d = w.shape[0] // heads
    return w.reshape(heads, d // 2, 2, *w.shape[1:]).swapaxes(1, 2).reshape(w.shape)


def hf_copy(d, permute_back=True, config=True, noise=False):
    """The tiny llama oracle with Hugging Face names, q/k in HF row order
    (unless permute_back is False); with noise, one head's rows of layer 1's
    q_proj are changed.  Returns (folder, {hf name: values}, GGUF values)."""
    ref = st_read(convert_f32(LLAMA))
    tensors, vals = [], {}
    for g, a in ref.items():
        if g == "rope_freqs.weight":
            continue
        a = a.astype(np.float32)
        part = g.split(".")[2] if g.startswith("blk.") else ""
        if permute_back and part in ("attn_q", "attn_k"):
            a = to_hf_rows(a, LLAMA_HEADS if part == "attn_q" else LLAMA_KV)
        if noise and g == "blk.1.attn_q.weight":
            a = a.copy()
            a[16:32] += np.float32(0.5) * np.abs(a[16:32]).max()
        tensors.append((hf_name(g), a))
        vals[hf_name(g)] = a
    os.makedirs(d, exist_ok=True)
    st_write(os.path.join(d, "model.safetensors"), tensors)
    if config:
        write_file(os.path.join(d, "config.json"), json.dumps(
            {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_attention_heads": LLAMA_HEADS,
             "num_key_value_heads": LLAMA_KV}).encode())
    return d, vals, ref


_F32_COPIES = {}


def convert_f32(src):
    if src not in _F32_COPIES:
        out = os.path.join(new_dir("diff-"), "f32.safetensors")
        rc, _, err = run(["convert", src, out])
        if rc != 0:
            raise Fail("convert %s: %s" % (src, err))
        _F32_COPIES[src] = out
    return _F32_COPIES[src]


def hf_named_llama():
    errs = Errs()
    base = new_dir("diff-hf-")
    for config in (True, False):
        d, vals, ref = hf_copy(os.path.join(base, "cfg%d" % config), config=config)
        for a, b, gguf_is_a in ((LLAMA, d, True), (os.path.join(d, "model.safetensors"), LLAMA, False)):
            rc, doc, err = diff_json(a, b)
            label = "%s config.json, %s first" % ("with" if config else "without", "GGUF" if gguf_is_a else "HF")
            want_only = ["rope_freqs.weight"]
            if rc != 1 or doc[("only_a" if gguf_is_a else "only_b")] != want_only or doc["shape_mismatch"]:
                errs.add("%s: exit %d, only_a %r only_b %r, %s" % (label, rc, doc["only_a"], doc["only_b"], err))
            if len(doc["tensors"]) != len(vals):
                errs.add("%s: %d pairs, expected %d" % (label, len(doc["tensors"]), len(vals)))
            for t in doc["tensors"]:
                g, h = (t["a"], t["b"]) if gguf_is_a else (t["b"], t["a"])
                if hf_name(g) != h:
                    errs.add("%s: paired %r with %r" % (label, g, h))
                qk = ".attn_q." in g or ".attn_k." in g
                if t["differ"] != 0 or t["permuted"] != qk or t["cosine"] != 1.0:
                    errs.add("%s: %s: differ %d permuted %r cosine %r" % (label, g, t["differ"], t["permuted"],
                                                                          t["cosine"]))
    # without the permutation undone by the test, q/k no longer match
    d, vals, ref = hf_copy(os.path.join(base, "raw"), permute_back=False)
    rc, doc, err = diff_json(LLAMA, d)
    bad = sorted(t["a"] for t in doc["tensors"] if t["differ"])
    want = sorted(g for g in ref if ".attn_q." in g or ".attn_k." in g)
    if bad != want:
        errs.add("q/k left in GGUF order under HF names: differing %r, expected %r" % (bad, want))
    # one head changed: the metrics are numpy's over the pair in HF order
    d, vals, ref = hf_copy(os.path.join(base, "noise"), noise=True)
    rc, doc, err = diff_json(d, LLAMA)
    got = {t["a"]: t for t in doc["tensors"]}
    h = "model.layers.1.self_attn.q_proj.weight"
    compare(got[h], np_metrics(vals[h], to_hf_rows(ref["blk.1.attn_q.weight"], LLAMA_HEADS)), "noise", errs)
    if got[h]["differ"] != 16 * 64 or rc != 1:
        errs.add("noise: differ %d (expected %d), exit %d" % (got[h]["differ"], 16 * 64, rc))
    rc, out, err = run(["diff", d, LLAMA])
    first = out.splitlines()[1].split() if len(out.splitlines()) > 1 else []
    if not first or first[0] != h or not out.splitlines()[-1].startswith("different: 1 of 21"):
        errs.add("table: worst first should be %s, verdict 'different: 1 of 21': %r" % (h, out[-300:]))
    errs.raise_if_any()


def other_archs():
    """qwen2 keeps q/k rows (biases too) as they are; gemma stores norms as
    1 + w.  Both GGUFs are generated here, their HF twins beside them."""
    errs = Errs()
    rng = np.random.default_rng(5)
    d = new_dir("diff-arch-")
    for arch in ("qwen2", "gemma"):
        g = {"token_embd.weight": rng.standard_normal((40, 16)), "blk.0.attn_q.weight": rng.standard_normal((16, 16)),
             "blk.0.attn_q.bias": rng.standard_normal(16), "blk.0.attn_k.weight": rng.standard_normal((8, 16)),
             "blk.0.attn_norm.weight": rng.standard_normal(16), "output_norm.weight": rng.standard_normal(16)}
        g = {k: v.astype(np.float32) for k, v in g.items()}
        kvs = [gkv("general.architecture", "str", arch), gkv(arch + ".attention.head_count", "u32", 2),
               gkv(arch + ".attention.head_count_kv", "u32", 1)]
        path = write_file(os.path.join(d, arch + ".gguf"),
                          gguf_bytes([f32_tensor(k.encode(), v) for k, v in g.items()], kvs))
        plus = 1 if arch == "gemma" else 0
        hf = [(hf_name(k), v - np.float32(plus) if k.endswith("norm.weight") else v) for k, v in g.items()]
        os.makedirs(os.path.join(d, arch), exist_ok=True)
        st_write(os.path.join(d, arch, "model.safetensors"), hf)
        write_file(os.path.join(d, arch, "config.json"), json.dumps({"model_type": arch}).encode())
        rc, doc, err = diff_json(path, os.path.join(d, arch))
        hfv = dict(hf)
        for t in doc["tensors"]:
            want = np_metrics(g[t["a"]], hfv[t["b"]].astype(np.float32) + np.float32(plus)
                              if t["a"].endswith("norm.weight") else hfv[t["b"]])
            compare(t, want, "%s %s" % (arch, t["a"]), errs)
            if t["permuted"]:
                errs.add("%s: %s permuted" % (arch, t["a"]))
        if rc != (0 if all(t["differ"] == 0 for t in doc["tensors"]) else 1) or len(doc["tensors"]) != len(g):
            errs.add("%s: exit %d, %d pairs: %s" % (arch, rc, len(doc["tensors"]), err))
    errs.raise_if_any()


def exits_and_lists():
    errs = Errs()
    d = new_dir("diff-x-")
    a = os.path.join(d, "a.safetensors")
    b = os.path.join(d, "b.safetensors")
    st_write(a, [("x", np.arange(6, dtype=np.float32).reshape(2, 3)), ("y", np.ones(4, np.float32))])
    st_write(b, [("x", np.arange(6, dtype=np.float32).reshape(3, 2)), ("z", np.ones(4, np.float32))])
    rc, doc, err = diff_json(a, b)
    if rc != 1 or doc["only_a"] != ["y"] or doc["only_b"] != ["z"] or len(doc["shape_mismatch"]) != 1 \
            or doc["shape_mismatch"][0]["shape_b"] != [3, 2] or doc["identical"]:
        errs.add("lists: exit %d %r" % (rc, doc))
    rc, out, err = run(["diff", a, b])
    for want in ("only in A: y", "only in B: z", "other shapes: x [2, 3] vs x [3, 2]", "different: 0 of 0"):
        if want not in out:
            errs.add("text lacks %r: %r" % (want, out))
    rc, out, err = run(["diff", a, a])
    if rc != 0 or not out.splitlines()[-1].startswith("identical: all 2 tensors"):
        errs.add("a file against itself: exit %d %r" % (rc, out))
    nan = os.path.join(d, "nan.safetensors")
    st_write(nan, [("x", np.array([[np.nan, 0, 1], [2, 3, 4]], np.float32)), ("y", np.ones(4, np.float32))])
    rc, doc, err = diff_json(nan, nan)
    if rc != 0:
        errs.add("NaN equals NaN: exit %d %r" % (rc, doc))
    for args in (["diff", a], ["diff", a, b, a], ["diff", "--bogus", a, b], ["diff", a, os.path.join(d, "none")]):
        rc, out, err = run(args)
        if rc != 2 or len(err.splitlines()) != 1:
            errs.add("%r: exit %d (expected 2), stderr %r" % (args[1:], rc, err))
    errs.raise_if_any()


def group_diff():
    check("diff: every float oracle file against its f32/f16/bf16 conversions, metrics against numpy",
          converted_copies)
    check("diff: a Hugging Face-named llama copy with q/k in HF row order pairs and matches", hf_named_llama)
    check("diff: qwen2 (no permutation, biases) and gemma (1 + w norms) against HF-named twins", other_archs)
    check("diff: only-in-A/B, other shapes, NaN, exit codes 0/1/2", exits_and_lists)
