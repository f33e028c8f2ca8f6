#!/usr/bin/python3
"""bench_hfq.py - the quantized-checkpoint part of `make bench` (part 12).

    bench_hfq.py GGUF DIR MIB RUNS

GGUF is the benchmark model (tools/gen_model.c), whose t.Q4_K tensor is the
yardstick.  Builds in DIR one checkpoint per scheme weightfs decodes on the
safetensors side (tests/mount/hfq_models.py: FP8 128x128 blocks, GPTQ 4-bit
act-order g128, AWQ g128, MLX 4-bit g64, bitsandbytes NF4 nested and 8-bit), each one
layer of about MIB MiB of float32 output, and times the in-process load
(the Python module over the C library: weightfs.open(MODEL)[name], all
cores, and .get(name, threads=1)) of each against t.Q4_K's, alternating
the order, RUNS times.  Prints one JSON object: GB/s of float32 output
(medians) and the ratio to Q4_K in the same run.
"""
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "tests", "mount"))
import weightfs  # noqa: E402
from hfq_models import (awq_config, awq_layer, bnb8_config, bnb8_layer, bnb_layer, fp8_config,  # noqa: E402
                        fp8_layer, gptq_config, gptq_layer, mlx_layer, st_bytes)


def write(d, files):
    os.makedirs(d, exist_ok=True)
    for fn, data in files.items():
        with open(os.path.join(d, fn), "wb") as f:
            f.write(data if isinstance(data, bytes) else json.dumps(data).encode())
    return d


def build(dirname, mib):
    """{scheme: (model folder, tensor name)}, each [out, in] ~ mib MiB of float32."""
    inp = 4096
    out = max(128, (mib << 20) // 4 // inp // 128 * 128)
    rng = np.random.default_rng(1)
    name = "model.layers.0.mlp.down_proj"
    models = {}
    w, (s, sraw), _ = fp8_layer(rng, out, inp, 128, 128)
    models["FP8"] = write(os.path.join(dirname, "fp8"), {"config.json": fp8_config(), "model.safetensors": st_bytes({
        name + ".weight": ("F8_E4M3", [out, inp], w), name + ".weight_scale_inv": ("F32", list(s.shape), sraw)})})
    parts, _ = gptq_layer(rng, out, inp, 4, 128, True)
    models["GPTQ"] = write(os.path.join(dirname, "gptq"), {"config.json": gptq_config(4, 128),
                                                          "model.safetensors": st_bytes(
                                                              {name + "." + k: v for k, v in parts.items()})})
    parts, _ = awq_layer(rng, out, inp, 128)
    models["AWQ"] = write(os.path.join(dirname, "awq"), {"config.json": awq_config(128),
                                                        "model.safetensors": st_bytes(
                                                            {name + "." + k: v for k, v in parts.items()})})
    parts, _ = mlx_layer(rng, out, inp, 4, 64)
    q = {"group_size": 64, "bits": 4}
    models["MLX"] = write(os.path.join(dirname, "mlx"), {"config.json": {"quantization": q},
                                                        "model.safetensors": st_bytes(
                                                            {name + "." + k: v for k, v in parts.items()})})
    parts, _ = bnb_layer(rng, out, inp, 64, "nf4", True)
    models["BNB4"] = write(os.path.join(dirname, "bnb"), {"model.safetensors": st_bytes(
        {name + ".weight" + k: v for k, v in parts.items()})})
    parts, _ = bnb8_layer(rng, out, inp)
    models["BNB8"] = write(os.path.join(dirname, "bnb8"), {"config.json": bnb8_config(), "model.safetensors": st_bytes(
        {name + k: v for k, v in parts.items()})})
    return {k: (v, name + ".weight") for k, v in models.items()}, [out, inp]


def timed(fn):
    t0 = time.perf_counter()
    a = fn()
    dt = time.perf_counter() - t0
    return a.nbytes / dt / 1e9


def main():
    gguf, dirname, mib, runs = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
    models, shape = build(dirname, mib)
    opened = {"Q4_K": (weightfs.open(gguf), "t.Q4_K")}
    opened.update({k: (weightfs.open(p), n) for k, (p, n) in models.items()})
    res = {k: {"module": [], "module_1thread": [], "ratio": [], "ratio_1thread": []} for k in models}
    for r in range(runs):
        order = list(opened) if r % 2 == 0 else list(reversed(list(opened)))
        got = {}
        for k in order:
            m, n = opened[k]
            got[k] = (timed(lambda: m[n]), timed(lambda: m.get(n, threads=1)))
        for k in models:
            res[k]["module"].append(got[k][0])
            res[k]["module_1thread"].append(got[k][1])
            res[k]["ratio"].append(got[k][0] / got["Q4_K"][0])
            res[k]["ratio_1thread"].append(got[k][1] / got["Q4_K"][1])
    for k, v in res.items():
        for key in list(v):
            v[key + "_median"] = statistics.median(v[key])
    for m, _ in opened.values():
        m.close()
    print(json.dumps({"shape": shape, "schemes": res}))


if __name__ == "__main__":
    main()
