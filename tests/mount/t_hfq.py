"""Group hfq: quantized Hugging Face checkpoints (FP8 block / channel /
tensor scales, GPTQ v1 2/3/4/8 bits) built by hfq_models.py, mounted, and
every decoded weight compared bit for bit with the numpy reference, in
every view (float32, f16, bf16, model.safetensors, convert, ranges);
-o dtype=stored shows every part as stored; corrupt layers are refused
with one line naming the layer.
"""

import json
import os
import random
import struct

import numpy as np

from hfq_models import (awq_config, awq_layer, bf16_bytes, bnb8_config, bnb8_layer, bnb_layer, ct_config, e4m3_value,
                        fp8_config, fp8_layer, gptq_config, gptq_layer, mlx_layer, mxfp4_config, mxfp4_layer, st_bytes)
from hfq_torch import awq_torch, bnb8_torch, gptq_torch, mxfp4_torch
from wf_harness import check, Errs, Fail, force_unmount, is_mounted, load_json, Mount, new_dir, run_cli, TMP
from wf_models import write_file
from t_sets import make_hub

try:
    import torch
except ImportError:  # the numpy references still run
    torch = None


def folder(name, files):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    for fn, data in files.items():
        write_file(os.path.join(d, fn), data if isinstance(data, bytes) else json.dumps(data).encode())
    return d


def read_all(path):
    with open(path, "rb") as f:
        return f.read()


def st_tensors(raw):
    """{name: (dtype, shape, bytes)} of a safetensors file's bytes."""
    n = struct.unpack("<Q", raw[:8])[0]
    h = json.loads(raw[8:8 + n])
    h.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], raw[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]])
            for k, v in h.items()}


def f16_bits(exp):
    with np.errstate(over="ignore"):
        return exp.astype("<f2").tobytes()


def check_decoded(model, expected, errs, scheme, extra_hidden=()):
    """Every view of model: the decoded weights equal `expected` {name: f32}."""
    rng = random.Random(model)
    for opt in ("f32", "f16", "bf16"):
        with Mount(model, ["-o", "dtype=" + opt]) as m:
            tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
            for hidden in extra_hidden:
                if hidden in tj:
                    errs.add("%s %s: part %s still listed" % (model, opt, hidden))
            for name, exp in expected.items():
                want = {"f32": exp.astype("<f4").tobytes(), "f16": f16_bits(exp),
                        "bf16": bf16_bytes(exp).tobytes()}[opt]
                e = tj.get(name)
                if e is None:
                    errs.add("%s %s: %s not listed" % (model, opt, name))
                    continue
                if e["type"] != scheme or e["shape"] != list(exp.shape) or e.get("quant", {}).get("scheme") != scheme:
                    errs.add("%s %s: %s entry %r" % (model, opt, name, e))
                p = m.path(e["path"])
                got = read_all(p)
                if got != want:
                    bad = next(i for i in range(min(len(got), len(want))) if got[i] != want[i]) \
                        if len(got) == len(want) else -1
                    errs.add("%s %s: %s differs (%d vs %d bytes, first at %d)" % (model, opt, name, len(got),
                                                                                 len(want), bad))
                    continue
                if os.getxattr(p, "user.weightfs.type") != scheme.encode() or \
                        json.loads(os.getxattr(p, "user.weightfs.quant")) != e["quant"] or \
                        "user.weightfs.quant" not in os.listxattr(p):
                    errs.add("%s: %s xattrs type / quant" % (model, name))
                fd = os.open(p, os.O_RDONLY)
                try:
                    for _ in range(40):
                        off = rng.randrange(0, len(want))
                        ln = rng.randrange(1, 3 * exp.shape[1] + 9)
                        if os.pread(fd, ln, off) != want[off:off + ln]:
                            errs.add("%s %s: %s pread(%d, %d) differs" % (model, opt, name, off, ln))
                            break
                finally:
                    os.close(fd)
            if opt == "f32":
                st = st_tensors(read_all(m.path("model.safetensors")))
                for name, exp in expected.items():
                    if st.get(name) != ("F32", list(exp.shape), exp.astype("<f4").tobytes()):
                        errs.add("%s: model.safetensors %s differs" % (model, name))
                for hidden in extra_hidden:
                    if hidden in st:
                        errs.add("%s: model.safetensors has part %s" % (model, hidden))


def check_stored(model, parts, errs):
    """-o dtype=stored: every part exactly as stored, no decoded tensor."""
    with Mount(model, ["-o", "dtype=stored"]) as m:
        tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
        for name, raw in parts.items():
            e = tj.get(name)
            if e is None or read_all(m.path(e["path"])) != raw or "quant" in e:
                errs.add("%s stored: %s not as stored" % (model, name))


def refused(model, substr, errs, label):
    mp = new_dir()
    rc, _, err, _ = run_cli(["-f", model, mp])
    err = err.strip()
    if rc == 0 or is_mounted(mp):
        errs.add("%s: mounted" % label)
        force_unmount(mp)
    elif len(err.splitlines()) != 1 or substr not in err or not err.startswith("weightfs:"):
        errs.add("%s: message %r (wanted %r)" % (label, err, substr))


def group_hfq():
    def fp8_deepseek():
        rng = np.random.default_rng(18)
        errs = Errs()
        a = "model.layers.0.mlp.down_proj"
        b = "model.layers.0.self_attn.q_proj"
        wa, (sa, sa_raw), ea = fp8_layer(rng, 300, 260, 128, 128)   # partial blocks at both edges
        wb, (sb, sb_raw), eb = fp8_layer(rng, 128, 256, 128, 128)
        norm = rng.random(260).astype(np.float32)
        s1 = {a + ".weight": ("F8_E4M3", [300, 260], wa), "model.norm.weight": ("F32", [260], norm.tobytes())}
        s2 = {a + ".weight_scale_inv": ("F32", list(sa.shape), sa_raw),
              b + ".weight": ("F8_E4M3", [128, 256], wb), b + ".weight_scale_inv": ("F32", list(sb.shape), sb_raw)}
        wm = {k: "model-00001-of-00002.safetensors" for k in s1}
        wm.update({k: "model-00002-of-00002.safetensors" for k in s2})
        d = folder("fp8_ds", {"config.json": fp8_config(),
                              "model-00001-of-00002.safetensors": st_bytes(s1),
                              "model-00002-of-00002.safetensors": st_bytes(s2),
                              "model.safetensors.index.json": {"metadata": {}, "weight_map": wm}})
        # an independent second computation: float64 product of the exact values, rounded once
        ref = (e4m3_value(np.frombuffer(wa, np.uint8).reshape(300, 260)) *
               np.repeat(np.repeat(sa.astype(np.float64), 128, 0), 128, 1)[:300, :260]).astype(np.float32)
        if ref.tobytes() != ea.tobytes():
            errs.add("the two references disagree")
        check_decoded(d, {a + ".weight": ea, b + ".weight": eb}, errs, "FP8",
                      (a + ".weight_scale_inv", b + ".weight_scale_inv"))
        check_stored(d, {a + ".weight": wa, a + ".weight_scale_inv": sa_raw, b + ".weight": wb}, errs)
        # convert writes the plain float checkpoint
        out = os.path.join(TMP, "fp8_ds_out.safetensors")
        rc, _, err, _ = run_cli(["convert", d, out], timeout=60)
        st = st_tensors(read_all(out)) if rc == 0 else {}
        if rc != 0 or st.get(a + ".weight", (0, 0, b""))[2] != ea.tobytes() or a + ".weight_scale_inv" in st:
            errs.add("convert: rc %d %s" % (rc, err.strip()[:200]))
        errs.raise_if_any()
        return "2 layers, blocks of 128 with partial edges, across 2 shards"
    check("hfq: DeepSeek FP8 (128x128 weight_scale_inv) in every view, stored, convert", fp8_deepseek)

    def fp8_ct():
        rng = np.random.default_rng(19)
        errs = Errs()
        for strategy, bh, bw, sdt in (("channel", 1, 96, "BF16"), ("tensor", 40, 96, "F32")):
            w, (s, sraw), exp = fp8_layer(rng, 40, 96, bh, bw, sdt)
            name = "model.layers.3.mlp.up_proj"
            sshape = [40, 1] if strategy == "channel" else [1]
            d = os.path.join(TMP, "fp8_ct_" + strategy)
            os.makedirs(d, exist_ok=True)
            path = write_file(os.path.join(d, "model.safetensors"), st_bytes({
                name + ".weight": ("F8_E4M3", [40, 96], w), name + ".weight_scale": (sdt, sshape, sraw),
                name + ".input_scale": ("F32", [1], np.float32(0.5).tobytes()),
                "lm_head.weight": ("F32", [8, 96], np.ones((8, 96), np.float32).tobytes())}))
            write_file(os.path.join(d, "config.json"), json.dumps(ct_config(strategy)).encode())
            # the file on its own, its config beside it
            check_decoded(path, {name + ".weight": exp}, errs, "FP8",
                          (name + ".weight_scale", name + ".input_scale"))
        errs.raise_if_any()
        return "per channel (bf16 [out, 1]) and per tensor (f32 [1])"
    check("hfq: compressed-tensors FP8 per channel / per tensor, single file with its config beside", fp8_ct)

    def fp8_ct_block():
        # compressed-tensors FP8_BLOCK: weight_scale of the block grid
        # [ceil(out/bh), ceil(in/bw)], partial blocks at both edges; two
        # layers in two shards, a square and a non-square block
        errs = Errs()
        rng = np.random.default_rng(21)
        for (bh, bw), sdt, blk in (((128, 128), "BF16", [128, 128]), ((64, 32), "F32", "64x32")):
            a, b = "model.layers.0.mlp.gate_proj", "model.layers.1.self_attn.o_proj"
            wa, (sa, sa_raw), ea = fp8_layer(rng, 300, 260, bh, bw, sdt)
            wb, (sb, sb_raw), eb = fp8_layer(rng, 2 * bh, 3 * bw, bh, bw, sdt)   # whole blocks only
            if torch is not None and sdt == "BF16":
                # compressed-tensors' own expression: x_q.to(scale.dtype) * scale, in bf16
                xq = torch.from_numpy(e4m3_value(np.frombuffer(wa, np.uint8).reshape(300, 260)).astype(np.float32))
                sc = torch.from_numpy(sa.copy()).to(torch.bfloat16)
                full = sc.repeat_interleave(bh, 0).repeat_interleave(bw, 1)[:300, :260]
                ref = (xq.to(torch.bfloat16) * full).view(torch.int16).numpy().astype("<i2").tobytes()
                if ref != bf16_bytes(ea).tobytes():
                    errs.add("block %dx%d: torch's bf16 product is not our float32 rounded once" % (bh, bw))
            s1 = {a + ".weight": ("F8_E4M3", [300, 260], wa), b + ".weight_scale": (sdt, list(sb.shape), sb_raw),
                  "lm_head.weight": ("BF16", [4, 260], np.zeros((4, 260), np.uint16).tobytes())}
            s2 = {a + ".weight_scale": (sdt, list(sa.shape), sa_raw),
                  b + ".weight": ("F8_E4M3", [2 * bh, 3 * bw], wb)}
            wm = {k: "model-00001-of-00002.safetensors" for k in s1}
            wm.update({k: "model-00002-of-00002.safetensors" for k in s2})
            d = folder("fp8_ct_block_%d_%d" % (bh, bw), {
                "config.json": ct_config("block", blk),   # "64x32": the string form the validator takes
                "model-00001-of-00002.safetensors": st_bytes(s1), "model-00002-of-00002.safetensors": st_bytes(s2),
                "model.safetensors.index.json": {"metadata": {}, "weight_map": wm}})
            check_decoded(d, {a + ".weight": ea, b + ".weight": eb}, errs, "FP8", (a + ".weight_scale",
                                                                              b + ".weight_scale"))
            check_stored(d, {k: v[2] for k, v in list(s1.items()) + list(s2.items())}, errs)
            with Mount(d) as m:
                tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
                q = tj[a + ".weight"]["quant"]
                if q.get("block") != [bh, bw] or q.get("source") != "compressed-tensors":
                    errs.add("%s: quant %r" % (d, q))
        # a grid of the wrong size, a block strategy without block_structure
        w, (s, sraw), _ = fp8_layer(rng, 300, 260, 128, 128, "BF16")
        d = folder("bad_ct_block_grid", {"config.json": ct_config("block", [128, 128]), "model.safetensors": st_bytes({
            "l.weight": ("F8_E4M3", [300, 260], w), "l.weight_scale": ("BF16", [2, 3], sraw[:12])})})
        refused(d, "layer 'l': scale grid [2, 3]", errs, "ct block grid")
        d = folder("bad_ct_block_none", {"config.json": ct_config("block"), "model.safetensors": st_bytes({
            "l.weight": ("F8_E4M3", [300, 260], w), "l.weight_scale": ("BF16", [3, 3], sraw)})})
        refused(d, "block_structure", errs, "ct block without block_structure")
        errs.raise_if_any()
        return "blocks 128x128 (bf16 scales) and \"64x32\" (f32), partial edges, 2 shards, torch's bf16 product"
    check("hfq: compressed-tensors FP8 block strategy (weight_scale of the block grid)", fp8_ct_block)

    def hub_cache():
        # a GPTQ and a DeepSeek FP8 checkpoint as Hugging Face hub caches
        # (models--ORG--NAME/{blobs, refs/main, snapshots/REV/ symlinks into
        # blobs}), mounted through the repo folder and through the snapshot
        errs = Errs()
        rng = np.random.default_rng(22)
        gp, ge = gptq_layer(rng, 64, 160, 4, 64, True)
        g2, g2e = gptq_layer(rng, 32, 64, 4, 64, True)
        s1 = {"model.layers.0.mlp.down_proj." + k: v for k, v in gp.items()}
        s2 = {"model.layers.1.mlp.down_proj." + k: v for k, v in g2.items()}
        wm = {k: "model-00001-of-00002.safetensors" for k in s1}
        wm.update({k: "model-00002-of-00002.safetensors" for k in s2})
        gsrc = folder("hub_src_gptq", {"config.json": gptq_config(4, 64), "quantize_config.json": {"bits": 4,
                                                                                                   "group_size": 64},
                                       "model-00001-of-00002.safetensors": st_bytes(s1),
                                       "model-00002-of-00002.safetensors": st_bytes(s2),
                                       "model.safetensors.index.json": {"metadata": {}, "weight_map": wm}})
        w, (sc, sraw), fe = fp8_layer(rng, 300, 260, 128, 128)
        fsrc = folder("hub_src_fp8", {"config.json": fp8_config(), "model.safetensors": st_bytes({
            "model.layers.0.mlp.up_proj.weight": ("F8_E4M3", [300, 260], w),
            "model.layers.0.mlp.up_proj.weight_scale_inv": ("F32", list(sc.shape), sraw)})})
        cases = ((gsrc, "GPTQ", {"model.layers.0.mlp.down_proj.weight": ge, "model.layers.1.mlp.down_proj.weight": g2e},
                  [k for k in list(s1) + list(s2) if not k.endswith(".bias")]),
                 (fsrc, "FP8", {"model.layers.0.mlp.up_proj.weight": fe},
                  ["model.layers.0.mlp.up_proj.weight_scale_inv"]))
        for src, scheme, exp, hidden in cases:
            repo, snap = make_hub(new_dir(), src)
            if not os.path.islink(os.path.join(snap, "config.json")):
                errs.add("the hub's snapshot holds no symlinks")
            for given in (repo, snap):
                check_decoded(given, exp, errs, scheme, hidden)
            with Mount(repo) as m:
                names = os.listdir(m.mp)
                if "quantization_config" in json.loads(read_all(m.path("config.json"))) or \
                        "quantize_config.json" in names:
                    errs.add("%s hub: quantization sidecars still say quantized: %r" % (scheme, names))
        errs.raise_if_any()
        return "GPTQ (index and 2 shards) and FP8, via models--org--tiny and snapshots/<rev>"
    check("hfq: quantized checkpoints as a hub cache, detected and decoded", hub_cache)

    def gptq():
        errs = Errs()
        n = 0
        for bits, inp, out, group, act, sdt in ((4, 160, 64, 64, True, "F16"), (3, 96, 32, 32, True, "BF16"),
                                                (2, 64, 48, -1, False, "F16"), (8, 64, 40, 32, True, "F16"),
                                                (4, 256, 32, 128, False, "BF16")):
            rng = np.random.default_rng(100 + bits + inp)
            tensors, exp = {}, {}
            for layer in ("model.layers.0.self_attn.q_proj", "model.layers.1.mlp.down_proj"):
                parts, e = gptq_layer(rng, out, inp, bits, group, act, sdt)
                t = gptq_torch(parts, bits)  # GPTQModel's v1 reading of the stored words, in torch
                if t is not None and t.tobytes() != e.tobytes():
                    errs.add("%d bits: the torch reference disagrees with numpy's" % bits)
                tensors.update({layer + "." + k: v for k, v in parts.items()})
                exp[layer + ".weight"] = e
            tensors["model.embed_tokens.weight"] = ("F16", [10, inp], np.zeros((10, inp), np.float16).tobytes())
            d = folder("gptq_%d_%d" % (bits, inp), {"config.json": gptq_config(bits, group, act),
                                                    "model.safetensors": st_bytes(tensors)})
            hidden = [k for k in tensors if k.rsplit(".", 1)[1] in ("qweight", "qzeros", "scales", "g_idx")]
            check_decoded(d, exp, errs, "GPTQ", hidden)
            check_stored(d, {k: v[2] for k, v in tensors.items()}, errs)
            n += 1
        errs.raise_if_any()
        return "%d checkpoints: 2/3/4/8 bits, act-order, partial last group, f16/bf16 scales, zeros of 0" % n
    check("hfq: GPTQ v1 in every view and stored", gptq)

    def quantize_config_json():
        errs = Errs()
        rng = np.random.default_rng(7)
        parts, e = gptq_layer(rng, 32, 64, 4, 32, True)
        tensors = {"l.q." + k: v for k, v in parts.items()}
        d = folder("gptq_qc", {"config.json": {"architectures": ["X"]},
                               "quantize_config.json": {"bits": 4, "group_size": 32, "desc_act": True},
                               "model.safetensors": st_bytes(tensors)})
        check_decoded(d, {"l.q.weight": e}, errs, "GPTQ")
        errs.raise_if_any()
    check("hfq: GPTQ from quantize_config.json alone", quantize_config_json)

    def awq():
        errs = Errs()
        for group, sdt in ((32, "F16"), (64, "BF16")):
            rng = np.random.default_rng(group)
            tensors, exp = {}, {}
            for layer in ("model.layers.0.mlp.up_proj", "model.layers.0.self_attn.o_proj"):
                parts, e = awq_layer(rng, 48, 128, group, sdt)
                t = awq_torch(parts, group)  # AutoAWQ's dequantize_gemm, in torch
                if t is not None and t.tobytes() != e.tobytes():
                    errs.add("group %d: the torch reference disagrees with numpy's" % group)
                tensors.update({layer + "." + k: v for k, v in parts.items()})
                exp[layer + ".weight"] = e
            d = folder("awq_%d" % group, {"config.json": awq_config(group), "model.safetensors": st_bytes(tensors)})
            check_decoded(d, exp, errs, "AWQ", [k for k in tensors])
            check_stored(d, {k: v[2] for k, v in tensors.items()}, errs)
        errs.raise_if_any()
        return "nibble order 0,2,4,6,1,3,5,7; f16 and bf16 scales"
    check("hfq: AWQ GEMM in every view and stored", awq)

    def mlx():
        errs = Errs()
        n = 0
        for bits in (2, 3, 4, 5, 6, 8):
            rng = np.random.default_rng(200 + bits)
            tensors, exp = {}, {}
            override = "model.layers.0.mlp.down_proj"
            for layer, b, g, sdt in (("model.embed_tokens", bits, 64, "BF16"),
                                     ("model.layers.0.self_attn.q_proj", bits, 64, "F16"),
                                     (override, 8 if bits != 8 else 4, 32, "BF16")):
                parts, e = mlx_layer(rng, 24, 128, b, g, sdt)
                tensors.update({layer + "." + k: v for k, v in parts.items()})
                exp[layer + ".weight"] = e
            tensors["model.norm.weight"] = ("BF16", [128], np.zeros(128, np.uint16).tobytes())
            q = {"group_size": 64, "bits": bits, override: {"group_size": 32, "bits": 8 if bits != 8 else 4}}
            d = folder("mlx_%d" % bits, {"config.json": {"quantization": q, "quantization_config": q},
                                         "model.safetensors": st_bytes(tensors)})
            check_decoded(d, exp, errs, "MLX", [k for k in tensors if k.endswith((".scales", ".biases"))])
            n += 1
        errs.raise_if_any()
        return "%d checkpoints: bits 2-6 and 8, a per-module override, a quantized embedding" % n
    check("hfq: MLX affine in every view, per-module overrides", mlx)

    def bnb():
        errs = Errs()
        n = 0
        for qt, nested, out, inp, bs in (("nf4", True, 120, 160, 64), ("fp4", False, 5, 13, 64),
                                         ("nf4", False, 24, 40, 128), ("fp4", True, 40, 500, 32)):
            rng = np.random.default_rng(300 + n)
            tensors, exp = {}, {}
            for layer in ("model.layers.0.mlp.down_proj.weight", "model.layers.0.self_attn.k_proj.weight"):
                parts, e = bnb_layer(rng, out, inp, bs, qt, nested)
                tensors.update({layer + k: v for k, v in parts.items()})
                exp[layer] = e
            tensors["model.layers.0.mlp.down_proj.bias"] = ("F32", [out], np.zeros(out, np.float32).tobytes())
            cfg = {"quantization_config": {"quant_method": "bitsandbytes", "load_in_4bit": True,
                                           "bnb_4bit_quant_type": qt, "bnb_4bit_use_double_quant": nested}}
            files = {"model.safetensors": st_bytes(tensors)}
            if n % 2 == 0:
                files["config.json"] = cfg   # the quant_state alone is enough
            d = folder("bnb_%d" % n, files)
            check_decoded(d, exp, errs, "BNB4", [k for k in tensors if ".weight." in k])
            check_stored(d, {k: v[2] for k, v in tensors.items()}, errs)
            n += 1
        errs.raise_if_any()
        return "%d checkpoints: nf4/fp4, nested absmax over 2 nested blocks, odd element count, partial blocks" % n
    check("hfq: bitsandbytes NF4/FP4 in every view and stored", bnb)

    def bnb8():
        # LLM.int8: two layers in two shards (one layer's weight and SCB in
        # different shards), a skipped fp16 module, with and without the
        # config (the SCB alone says it), with and without weight_format
        errs = Errs()
        n = 0
        for out, inp, with_cfg, fmt in ((96, 160, True, True), (7, 13, False, False), (40, 64, True, False)):
            rng = np.random.default_rng(400 + n)
            a, b = "model.decoder.layers.0.fc1", "model.decoder.layers.0.self_attn.k_proj"
            pa, ea = bnb8_layer(rng, out, inp, fmt)
            pb, eb = bnb8_layer(rng, inp, out, fmt)
            for parts, e, o, i in ((pa, ea, out, inp), (pb, eb, inp, out)):
                t = bnb8_torch(parts, o, i)  # bitsandbytes' own expression, in torch
                if t is not None and t.tobytes() != e.tobytes():
                    errs.add("%dx%d: the torch reference disagrees with numpy's" % (o, i))
            s1 = {a + ".weight": pa[".weight"]}
            s1.update({b + k: v for k, v in pb.items()})
            s1["lm_head.weight"] = ("F16", [4, inp], np.ones((4, inp), np.float16).tobytes())
            s2 = {a + k: v for k, v in pa.items() if k != ".weight"}
            s2[a + ".bias"] = ("F16", [out], np.zeros(out, np.float16).tobytes())
            wm = {k: "model-00001-of-00002.safetensors" for k in s1}
            wm.update({k: "model-00002-of-00002.safetensors" for k in s2})
            files = {"model-00001-of-00002.safetensors": st_bytes(s1),
                     "model-00002-of-00002.safetensors": st_bytes(s2),
                     "model.safetensors.index.json": {"metadata": {}, "weight_map": wm}}
            if with_cfg:
                files["config.json"] = bnb8_config()
            d = folder("bnb8_%d" % n, files)
            hidden = [k for k in list(s1) + list(s2) if k.endswith((".SCB", ".weight_format"))]
            check_decoded(d, {a + ".weight": ea, b + ".weight": eb}, errs, "BNB8", hidden)
            stored = {k: v[2] for k, v in list(s1.items()) + list(s2.items())}
            check_stored(d, stored, errs)
            with Mount(d) as m:
                tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
                q = tj[a + ".weight"]["quant"]
                if q != {"scheme": "BNB8", "source": "bitsandbytes", "bits": 8, "scale_dtype": "F32",
                         "weight_format": "row"} or tj["lm_head.weight"]["type"] != "F16":
                    errs.add("%s: quant %r" % (d, q))
                if with_cfg and "quantization_config" in json.loads(read_all(m.path("config.json"))):
                    errs.add("%s: config.json keeps quantization_config" % d)
            n += 1
        errs.raise_if_any()
        return "%d checkpoints: sharded layers, config or SCB alone, weight_format or not, -128 codes" % n
    check("hfq: bitsandbytes 8-bit (LLM.int8) in every view and stored", bnb8)

    def bnb8_corrupt():
        errs = Errs()
        rng = np.random.default_rng(6)
        layer = "model.layers.1.mlp.up_proj"

        def case(label, substr, mutate, cfg=True):
            parts, _ = bnb8_layer(rng, 24, 40, True)
            parts = dict(parts)
            mutate(parts)
            files = {"model.safetensors": st_bytes({layer + k: v for k, v in parts.items()})}
            if cfg:
                files["config.json"] = bnb8_config()
            refused(folder("bad_bnb8_" + label, files), substr, errs, "bnb8 " + label)

        def scb_len(p):
            p[".SCB"] = ("F32", [23], p[".SCB"][2][:92])
        def scb_2d(p):
            p[".SCB"] = ("F32", [24, 1], p[".SCB"][2])
        def scb_f16(p):
            p[".SCB"] = ("F16", [24], np.ones(24, np.float16).tobytes())
        def w_u8(p):
            p[".weight"] = ("U8", [24, 40], p[".weight"][2])
        def fmt_turing(p):
            p[".weight_format"] = ("U8", [], b"\x02")
        def fmt_float(p):
            p[".weight_format"] = ("F32", [], b"\0\0\0\0")
        case("no_scb", "'%s': I8 weight without its SCB" % layer, lambda p: p.pop(".SCB"))
        case("scb_len", "'%s': SCB has 23 values" % layer, scb_len)
        case("scb_len_nocfg", "'%s': SCB has 23 values" % layer, scb_len, cfg=False)
        case("scb_2d", layer, scb_2d)
        case("scb_f16", "'%s'" % layer, scb_f16)
        case("w_u8", "'%s'" % layer, w_u8)
        case("fmt_turing", "'%s': weight_format is not 0" % layer, fmt_turing)
        case("fmt_float", "'%s': weight_format" % layer, fmt_float)
        case("no_weight", "'%s': SCB without a weight" % layer, lambda p: p.pop(".weight"))
        errs.raise_if_any()
        return "9 corrupt layers"
    check("hfq: corrupt bitsandbytes 8-bit layers refused with one line naming the layer", bnb8_corrupt)

    def mxfp4():
        # gpt-oss experts: two layers' gate_up / down in two shards (one
        # layer's blocks and scales in different shards), bf16 tensors
        # beside them; the corner scales 0, 1, 254, 255 (NaN, inf) included
        errs = Errs()
        rng = np.random.default_rng(39)
        E, H, F = 4, 64, 96
        s1, s2, exp, hidden = {}, {}, {}, []
        for layer in range(2):
            pre = "model.layers.%d.mlp.experts." % layer
            for name, rows, cols in (("gate_up_proj", 2 * F, H), ("down_proj", H, F)):
                parts, e = mxfp4_layer(rng, E, rows, cols)
                t = mxfp4_torch(parts)  # transformers' convert_moe_packed_tensors, in torch
                if t is not None and t.tobytes() != e.tobytes():
                    errs.add("%s: the torch reference disagrees with numpy's" % name)
                exp[pre + name] = e
                s1[pre + name + "_blocks"] = parts["_blocks"]
                (s2 if layer else s1)[pre + name + "_scales"] = parts["_scales"]
                hidden += [pre + name + "_blocks", pre + name + "_scales"]
                s1[pre + name + "_bias"] = ("F32", [E, rows], np.zeros((E, rows), np.float32).tobytes())
        s2["model.norm.weight"] = ("BF16", [H], bf16_bytes(np.ones(H, np.float32)).tobytes())
        wm = {k: "model-00001-of-00002.safetensors" for k in s1}
        wm.update({k: "model-00002-of-00002.safetensors" for k in s2})
        d = folder("mxfp4", {"config.json": mxfp4_config(2, E, H, F),
                             "model-00001-of-00002.safetensors": st_bytes(s1),
                             "model-00002-of-00002.safetensors": st_bytes(s2),
                             "model.safetensors.index.json": {"metadata": {}, "weight_map": wm}})
        check_decoded(d, exp, errs, "MXFP4", hidden)
        check_stored(d, {k: v[2] for k, v in list(s1.items()) + list(s2.items())}, errs)
        with Mount(d) as m:
            tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
            q = tj["model.layers.0.mlp.experts.down_proj"]["quant"]
            if q != {"scheme": "MXFP4", "source": "mxfp4", "bits": 4, "group_size": 32, "experts": E,
                     "scale_dtype": "E8M0"} or tj["model.norm.weight"]["type"] != "BF16":
                errs.add("quant %r" % q)
            if "quantization_config" in json.loads(read_all(m.path("config.json"))):
                errs.add("config.json keeps quantization_config")
        errs.raise_if_any()
        return "2 layers x gate_up [4, 64, 192] + down [4, 96, 64], 2 shards, the numpy and torch references agree"
    check("hfq: MXFP4 experts (gpt-oss) in every view and stored, shaped as transformers dequantizes them", mxfp4)

    def mxfp4_ggml():
        # the value table against ggml's own MXFP4 decoding: every MXFP4
        # tensor of the ggml oracle, its blocks re-laid as HF blocks/scales
        # (ggml qs[j]: element j low, j + 16 high; HF byte i: 2i low, 2i + 1
        # high), mounted, and compared with ggml's float32 output.  They
        # differ where the docs say: code 8 is -0 here, +0 in ggml; scale
        # 255 is +inf here, 2^127 in ggml (none in the oracle's data).
        errs = Errs()
        base = os.path.join(os.path.dirname(__file__), "..", "data", "ggml-oracle")
        man = load_json(os.path.join(base, "manifest.json"))
        tensors, exp, n_zero8 = {}, {}, 0
        for t in man["tensors"]:
            if t["type"] != "mxfp4":
                continue
            with open(os.path.join(base, t["file"]), "rb") as f:
                f.seek(t["file_offset"])
                raw = np.frombuffer(f.read(t["nbytes"]), np.uint8).reshape(-1, 17)
            want = np.fromfile(os.path.join(base, t["expected_f32"]), "<f4")
            ne0 = t["ne"][0]
            rows = t["n_elements"] // ne0
            e, qs = raw[:, 0], raw[:, 1:]
            el = np.concatenate([qs & 15, qs >> 4], axis=1)          # ggml element order
            hf = (el[:, 0::2] | (el[:, 1::2] << 4)).astype(np.uint8)   # HF nibble order
            if (e == 255).any():
                errs.add("%s: scale 255 in the oracle (the references differ there)" % t["name"])
            zero8 = el.reshape(-1) == 8
            n_zero8 += int(zero8.sum())
            w = want.copy()
            w[zero8] = -0.0  # transformers' FP4_VALUES[8]
            name = "%s.%s" % (t["file"].split(".")[0], t["name"])
            tensors[name + "_blocks"] = ("U8", [1, rows, ne0 // 32, 16], hf.tobytes())
            tensors[name + "_scales"] = ("U8", [1, rows, ne0 // 32], e.tobytes())
            exp[name] = np.ascontiguousarray(w.reshape(1, rows, ne0).transpose(0, 2, 1))
        if n_zero8 == 0 or len(exp) < 5:
            errs.add("the oracle has %d MXFP4 tensors, %d codes 8" % (len(exp), n_zero8))
        d = folder("mxfp4_ggml", {"config.json": mxfp4_config(1, 1, 32, 32), "model.safetensors": st_bytes(tensors)})
        with Mount(d) as m:
            tj = {e["name"]: e for e in load_json(m.path("tensors.json"))["tensors"]}
            for name, w in exp.items():
                got = read_all(m.path(tj[name]["path"])) if name in tj else b""
                if got != w.astype("<f4").tobytes():
                    errs.add("%s: differs from ggml's decoding" % name)
        errs.raise_if_any()
        return "%d ggml MXFP4 tensors, %d values, bit for bit (code 8: -0 vs ggml's +0, %d times)" % (
            len(exp), sum(v.size for v in exp.values()), n_zero8)
    check("hfq: MXFP4 values equal ggml's own MXFP4 decoding (ggml oracle), but for the sign of code 8", mxfp4_ggml)

    def mxfp4_corrupt():
        errs = Errs()
        rng = np.random.default_rng(7)
        layer = "model.layers.0.mlp.experts.down_proj"

        def case(label, substr, mutate):
            parts, _ = mxfp4_layer(rng, 2, 32, 64)
            parts = dict(parts)
            mutate(parts)
            files = {"config.json": mxfp4_config(1, 2, 32, 64),
                     "model.safetensors": st_bytes({layer + k: v for k, v in parts.items()})}
            refused(folder("bad_mxfp4_" + label, files), substr, errs, "mxfp4 " + label)

        def scales_rows(p):  # scales for 31 rows, blocks for 32
            p["_scales"] = ("U8", [2, 31, 2], p["_scales"][2][:124])
        def scales_experts(p):  # expert counts that disagree
            p["_scales"] = ("U8", [1, 32, 4], p["_scales"][2])
        def half_blocks(p):
            p["_blocks"] = ("U8", [2, 32, 4, 8], p["_blocks"][2])
        def blocks_3d(p):
            p["_blocks"] = ("U8", [2, 32, 32], p["_blocks"][2])
        def scales_f32(p):
            p["_scales"] = ("F32", [2, 32, 2], p["_scales"][2] * 4)
        def no_blocks(p):
            p.pop("_blocks")
            p[".weight"] = ("F32", [1], b"\0\0\0\0")
        case("no_scales", "'%s': MXFP4 blocks without their scales" % layer, lambda p: p.pop("_scales"))
        case("scales_rows", "'%s': MXFP4 blocks [2, 32, 2, 16] and scales [2, 31, 2]" % layer, scales_rows)
        case("scales_experts", "'%s': MXFP4 blocks" % layer, scales_experts)
        case("half_blocks", "'%s'" % layer, half_blocks)
        case("blocks_3d", "'%s'" % layer, blocks_3d)
        case("scales_f32", "'%s': MXFP4 needs uint8" % layer, scales_f32)
        case("no_blocks", "'%s': MXFP4 scales without their blocks" % layer, no_blocks)
        errs.raise_if_any()
        return "7 corrupt layers"
    check("hfq: corrupt MXFP4 layers refused with one line naming the layer", mxfp4_corrupt)

    def sidecars():
        # decoded: config.json without its quantization entry (every other
        # byte kept), quantize_config.json left out; stored: both as they are
        errs = Errs()
        rng = np.random.default_rng(8)
        parts, _ = gptq_layer(rng, 32, 64, 4, 32, True)
        cfg_text = ('{\n  "architectures": ["LlamaForCausalLM"],\n  "rope_theta": 10000.0,\n'
                    '  "quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 32,'
                    ' "desc_act": true, "x": [1, {"y": "}"}]},\n  "vocab_size": 32000\n}\n')
        qc = b'{"bits": 4, "group_size": 32}'
        d = folder("gptq_sidecars", {"config.json": cfg_text.encode(), "quantize_config.json": qc,
                                     "tokenizer.json": b"{}",
                                     "model.safetensors": st_bytes({"l." + k: v for k, v in parts.items()})})
        want = json.loads(cfg_text)
        del want["quantization_config"]
        for opt in ("f32", "bf16", "stored"):
            with Mount(d, ["-o", "dtype=" + opt]) as m:
                got = read_all(m.path("config.json"))
                names = os.listdir(m.mp)
                if opt == "stored":
                    if got != cfg_text.encode() or "quantize_config.json" not in names or \
                            read_all(m.path("quantize_config.json")) != qc:
                        errs.add("stored: sidecars changed")
                    continue
                if json.loads(got) != want or b"10000.0" not in got or "quantize_config.json" in names or \
                        "tokenizer.json" not in names:
                    errs.add("%s: config.json %r, files %r" % (opt, got, names))
        q = {"group_size": 64, "bits": 4}
        parts, _ = mlx_layer(rng, 8, 64, 4, 64)
        d = folder("mlx_sidecars", {"config.json": {"model_type": "llama", "quantization": q, "quantization_config": q},
                                    "model.safetensors": st_bytes({"l." + k: v for k, v in parts.items()})})
        with Mount(d) as m:
            if json.loads(read_all(m.path("config.json"))) != {"model_type": "llama"}:
                errs.add("mlx: config.json %r" % read_all(m.path("config.json")))
        errs.raise_if_any()
    check("hfq: config.json drops its quantization entry where weights are decoded; stored keeps it", sidecars)

    def corrupt():
        errs = Errs()
        rng = np.random.default_rng(5)
        layer = "model.layers.2.mlp.gate_proj"

        def gptq_case(label, substr, mutate, bits=4, cfg=None):
            parts, _ = gptq_layer(rng, 32, 64, bits if bits in (2, 3, 4, 8) else 4, 32, True)
            parts = dict(parts)
            mutate(parts)
            d = folder("bad_" + label, {"config.json": cfg or gptq_config(bits, 32),
                                        "model.safetensors": st_bytes({layer + "." + k: v for k, v in parts.items()})})
            refused(d, substr, errs, label)

        def bad_gidx(p):
            g = np.frombuffer(p["g_idx"][2], "<i4").copy()
            g[5] = 2  # 2 groups: 2 is outside [0, 2)
            p["g_idx"] = ("I32", (64,), g.tobytes())
        gptq_case("gidx_range", layer, bad_gidx)
        gptq_case("no_scales", layer, lambda p: p.pop("scales"))
        gptq_case("no_qzeros", layer, lambda p: p.pop("qzeros"))
        gptq_case("bits5", "5 bits", lambda p: None, bits=5)
        gptq_case("marlin", "marlin", lambda p: None,
                  cfg={"quantization_config": {"quant_method": "gptq", "bits": 4, "group_size": 32,
                                               "checkpoint_format": "marlin"}})

        def short_scales(p):
            dt, shape, raw = p["scales"]
            p["scales"] = (dt, (1, shape[1]), raw[:len(raw) // 2])
        gptq_case("scales_shape", layer, short_scales)

        def gidx_len(p):
            p["g_idx"] = ("I32", (32,), p["g_idx"][2][:128])
        gptq_case("gidx_len", layer, gidx_len)
        # FP8: a scale grid too small, a weight without its scale
        w, (s, sraw), _ = fp8_layer(rng, 300, 260, 128, 128)
        d = folder("bad_fp8_grid", {"config.json": fp8_config(), "model.safetensors": st_bytes({
            layer + ".weight": ("F8_E4M3", [300, 260], w),
            layer + ".weight_scale_inv": ("F32", [2, 2], np.ones((2, 2), np.float32).tobytes())})})
        refused(d, "scale grid", errs, "fp8 grid")
        d = folder("bad_fp8_noscale", {"config.json": fp8_config(), "model.safetensors": st_bytes({
            layer + ".weight": ("F8_E4M3", [300, 260], w), layer + ".weight_scale_inv": ("F32", [3, 3], sraw),
            "x.weight": ("F8_E4M3", [2, 2], b"\x01\x02\x03\x04")})})
        refused(d, "layer 'x'", errs, "fp8 without scale")
        parts, _ = awq_layer(rng, 48, 128, 32)
        parts.pop("qzeros")
        d = folder("bad_awq", {"config.json": awq_config(32), "model.safetensors": st_bytes(
            {layer + "." + k: v for k, v in parts.items()})})
        refused(d, layer, errs, "awq without qzeros")
        cfg = awq_config(32)
        cfg["quantization_config"]["version"] = "gemv"
        d = folder("bad_awq_gemv", {"config.json": cfg, "model.safetensors": st_bytes(
            {"a.weight": ("F32", [1], b"\0\0\0\0")})})
        refused(d, "gemv", errs, "awq gemv")
        parts, _ = mlx_layer(rng, 24, 128, 4, 64)
        d = folder("bad_mlx_mode", {"config.json": {"quantization": {"group_size": 64, "bits": 4, "mode": "mxfp4"}},
                                    "model.safetensors": st_bytes({layer + "." + k: v for k, v in parts.items()})})
        refused(d, "mxfp4", errs, "mlx mxfp4")
        parts.pop("biases")
        d = folder("bad_mlx_nobias", {"config.json": {"quantization": {"group_size": 64, "bits": 4}},
                                      "model.safetensors": st_bytes({layer + "." + k: v for k, v in parts.items()})})
        refused(d, layer, errs, "mlx without biases")
        parts, _ = bnb_layer(rng, 24, 40, 64, "nf4", True)
        st = json.loads(parts[".quant_state.bitsandbytes__nf4"][2])
        st["shape"] = [24, 42]   # more elements than the packed bytes hold
        js = json.dumps(st).encode()
        parts[".quant_state.bitsandbytes__nf4"] = ("U8", [len(js)], js)
        d = folder("bad_bnb_shape", {"model.safetensors": st_bytes({layer + ".weight" + k: v
                                                                      for k, v in parts.items()})})
        refused(d, layer, errs, "bnb quant_state shape")
        errs.raise_if_any()
    check("hfq: corrupt layers refused before mounting, one line naming the layer", corrupt)
