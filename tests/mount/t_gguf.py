"""Group gguf: model.gguf, a Hugging Face checkpoint made on read into the GGUF file
llama.cpp's convert_hf_to_gguf.py writes, checked with the real clients:

- llama.cpp itself (libllama of @node-llama-cpp/linux-x64@3.21.1 through
  tests/clients/llama.py, in a subprocess) loads model.gguf from the mount, and its
  logits at every position match a torch forward pass with Hugging Face semantics over
  the same folder (tests/clients/hf_forward.py); greedy decoding from the mount equals
  decoding from a copy made by `weightfs convert` on /dev/shm;
- llama.cpp's tokenizer on model.gguf gives the ids Hugging Face's tokenizers (Rust,
  npm tokenizers@0.23.2) give on the folder's real tokenizer.json, over
  tests/clients/corpus.json;
- model.gguf equals, key by key and tensor by tensor, what llama.cpp's own
  convert_hf_to_gguf.py wrote from the same test model in the same outtype: the
  digests of tests/data/converter/digests.json (`make converter-digests` runs the real
  converter, tests/clients/real_convert.py; every case of tests/clients/converter_cases.py);
- broken config.json / tokenizer.json leave model.gguf out, the rest of the mount as
  it was, and WEIGHTFS.txt says why naming the file.

Tiny random models (tests/clients/tiny_models.py: 2 layers, n_embd 64) with the real
tokenizer files that npm packages ship (tests/clients/tokenizers.json). The npm folder
is WEIGHTFS_NPM (tests/clients/npm.sh installs it; .ci/run does).
"""

import json
import os
import shutil
import struct
import subprocess
import sys
import unicodedata

import numpy as np

from wf_harness import TMP, Fail, Mount, check, new_dir, run_cli, sha256_file, skip_or_fail

CLIENTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "clients")
sys.path.insert(0, CLIENTS)

# (kind of tiny model, tokenizer key): the architectures and tokenizer routes
CASES = [("llama", "llama3_1"), ("llama_tied", "gpt2"), ("qwen2", "qwen2_5"), ("qwen3", "qwen3"),
         ("phi3", "gpt2")]
# key/values where ref_convert.py (the oracle of the hostile folders below, whose reading is
# json.load's as the converter's) is simpler than convert_hf_to_gguf.py, each checked by hand
# against the converter's source (conversion/base.py, gguf-py vocab.py):
#  - general.name: gguf-py's Metadata.id_to_title of the folder name ("Tiny Llama");
#  - llama's attention.key_length/value_length: LlamaConfig always has head_dim, so the
#    converter always writes them;
#  - add_sep_token/add_eos_token: SpecialVocab reads the TemplateProcessing pair template
#    (add_sep) and writes add_eos only from a single template that ends in a special token.
KV_KNOWN = {"general.name", "llama.attention.key_length", "llama.attention.value_length",
            "tokenizer.ggml.add_sep_token", "tokenizer.ggml.add_eos_token"}


def npm_dir():
    d = os.environ.get("WEIGHTFS_NPM") or os.path.join(os.path.expanduser("~"), ".cache", "weightfs-npm")
    import glob
    lib = os.path.join(d, "node_modules", "@node-llama-cpp", "linux-x64", "bins", "linux-x64", "libllama*.so")
    if not glob.glob(lib):
        skip_or_fail("no llama.cpp from npm in %s (bash tests/clients/npm.sh installs it)" % d)
    os.environ["WEIGHTFS_NPM"] = d
    return d


def llama_version():
    """The pinned llama.cpp the npm packages hold, as their package.json files say."""
    out = []
    for pkg in ("node-llama-cpp", os.path.join("@node-llama-cpp", "linux-x64")):
        try:
            with open(os.path.join(npm_dir(), "node_modules", pkg, "package.json")) as f:
                out.append(json.load(f).get("version", "?"))
        except (OSError, ValueError):
            out.append("?")
    return "-".join(out)


def quantize_cached(args, run):
    """llama.py quantize SRC DST FTYPE [pure] through a cache of llama_model_quantize's files,
    keyed by SRC's sha256, the file type, pure and the pinned llama.cpp: the quantizer is
    deterministic, so its file for the same input is the same bytes, and every run still
    compares weightfs's output with it byte for byte.  The second `make check` (SANITIZE=1)
    and every rerun skip the oracle's 0.5-3 s per file.  WF_ORACLE_CACHE names the folder
    (default ~/.cache/weightfs-test/quantize); "none" turns it off.  A failing quantize is
    never cached."""
    import hashlib
    import shutil
    where = os.environ.get("WF_ORACLE_CACHE") or os.path.join(os.path.expanduser("~"), ".cache",
                                                              "weightfs-test", "quantize")
    if where == "none":
        return run()
    key = "\0".join([sha256_file(args[1])] + args[3:] + [llama_version()])
    hit = os.path.join(where, hashlib.sha256(key.encode()).hexdigest() + ".gguf")
    if os.path.exists(hit):
        shutil.copyfile(hit, args[2])
        return ""
    out = run()
    try:
        os.makedirs(where, exist_ok=True)
        tmp = "%s.%d.tmp" % (hit, os.getpid())
        shutil.copyfile(args[2], tmp)
        os.replace(tmp, hit)  # whole or absent, whatever runs beside it
    except OSError:
        pass
    return out


def client(args, timeout=300):
    if args[:1] == ["quantize"] and len(args) >= 4:
        return quantize_cached(args, lambda: client_run(args, timeout))
    return client_run(args, timeout)


def client_run(args, timeout=300):
    r = subprocess.run([sys.executable, os.path.join(CLIENTS, "llama.py")] + args, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=timeout)
    if r.returncode != 0:
        raise Fail("llama.py %s: exit %d: %s" % (args[0], r.returncode, r.stderr.decode(errors="replace")[-800:]))
    return r.stdout.decode()


def hf_tokenize(tokenizer_json, corpus_path):
    r = subprocess.run(["node", os.path.join(CLIENTS, "hf_tokenize.js"), tokenizer_json, corpus_path],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    if r.returncode != 0:
        raise Fail("hf_tokenize.js: %s" % r.stderr.decode(errors="replace")[-500:])
    return json.loads(r.stdout)


def gguf_read(path):
    """(kvs [(key, type, value)], infos [(name, ne, type, offset)], bytes, data start)"""
    with open(path, "rb") as f:
        b = f.read()
    o = [4]

    def u(fmt):
        v = struct.unpack_from("<" + fmt, b, o[0])
        o[0] += struct.calcsize("<" + fmt)
        return v[0]

    def s():
        n = u("Q")
        v = b[o[0]:o[0] + n]
        o[0] += n
        return v
    fmts = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}

    def val(t):
        if t == 8:
            return s()
        if t == 9:
            et, n = u("I"), u("Q")
            return (et, [val(et) for _ in range(n)])
        return u(fmts[t])
    if b[:4] != b"GGUF" or u("I") != 3:
        raise Fail("%s: not a GGUF v3 file" % path)
    nt, nk = u("Q"), u("Q")
    kvs = []
    for _ in range(nk):
        k = s().decode()
        t = u("I")
        kvs.append((k, t, val(t)))
    infos = []
    for _ in range(nt):
        n = s().decode()
        nd = u("I")
        ne = [u("Q") for _ in range(nd)]
        infos.append((n, ne, u("I"), u("Q")))
    return kvs, infos, b, (o[0] + 31) // 32 * 32


def compare_ref(mnt_gguf, folder, outtype):
    import ref_convert
    ref = os.path.join(TMP, "ref-%s.gguf" % os.path.basename(folder))
    ref_convert.convert(folder, ref, outtype=outtype)
    A, B = gguf_read(mnt_gguf), gguf_read(ref)
    if A[1] != B[1]:
        diff = [(x, y) for x, y in zip(A[1], B[1]) if x != y][:3]
        raise Fail("tensor infos differ from the reference (%d vs %d): %r" % (len(A[1]), len(B[1]), diff))
    for (n, ne, ty, off), (_, _, _, off2) in zip(A[1], B[1]):
        sz = int(np.prod(ne)) * (4 if ty == 0 else 2)
        if A[2][A[3] + off:A[3] + off + sz] != B[2][B[3] + off2:B[3] + off2 + sz]:
            raise Fail("tensor %s: data differs from the reference" % n)
    ka = [(k, t) for k, t, _ in A[0] if k not in KV_KNOWN]
    kb = [(k, t) for k, t, _ in B[0] if k not in KV_KNOWN]
    if ka != kb:
        raise Fail("keys differ: only here %r, only in the reference %r" %
                   ([k for k in ka if k not in kb][:5], [k for k in kb if k not in ka][:5]))
    va = {k: v for k, _, v in A[0]}
    bad = [k for k, _, v in B[0] if k not in KV_KNOWN and va[k] != v]
    if bad:
        raise Fail("values differ: %r" % bad[:5])
    return "%d tensors, %d keys" % (len(A[1]), len(A[0]))


def converter_case(name, digests, variant=None):
    """model.gguf of converter_cases' NAME, in each outtype, against the digests of what
    llama.cpp's own convert_hf_to_gguf.py wrote from the same folder (tests/data/converter);
    variant(folder): the folder mounted instead (an FP8 checkpoint of the dequantized one)."""
    import converter_cases
    import real_convert
    want = digests["cases"].get(name)
    if want is None:
        raise Fail("no digest for %s in tests/data/converter/digests.json: run make converter-digests" % name)
    folder = converter_cases.make(name, new_dir("conv-"))
    got_in = converter_cases.inputs(folder)
    if got_in != want["inputs"]:
        bad = sorted(k for k in set(got_in) | set(want["inputs"]) if got_in.get(k) != want["inputs"].get(k))
        raise Fail("the test model is not the one the digests were made from (%s): run make converter-digests"
                   % ", ".join(bad))
    if variant:
        folder = variant(folder)
    done = []
    for ot, w in want["outtypes"].items():
        m = Mount(folder, ["-o", "gguf=" + ot])
        try:
            if not os.path.exists(m.path("model.gguf")):
                raise Fail("--outtype %s: no model.gguf; WEIGHTFS.txt: %s" % (ot, open(m.path("WEIGHTFS.txt")).read()[-300:]))
            g = real_convert.digest(m.path("model.gguf"))
        finally:
            m.unmount()
        kept = [x for x in w["kv"] if x[0] not in converter_cases.NOT_WRITTEN and
                not x[0].startswith(("general.base_model.", "general.dataset."))]
        left = sorted(set(x[0] for x in w["kv"]) - set(x[0] for x in kept))
        w = dict(w, kv=kept)
        wk, gk = [k for k, _, _ in w["kv"]], [k for k, _, _ in g["kv"]]
        if wk != gk:
            raise Fail("--outtype %s: keys differ: only the converter's %r, only model.gguf's %r, order %s" % (
                ot, [k for k in wk if k not in gk], [k for k in gk if k not in wk],
                "same" if [k for k in wk if k in gk] == [k for k in gk if k in wk] else "differs"))
        bad = [(a, b) for a, b in zip(w["kv"], g["kv"]) if a != b]
        if bad:
            raise Fail("--outtype %s: values differ: %s" % (ot, "; ".join(
                "%s: converter %s, model.gguf %s" % (a[0], json.dumps(a[1:])[:120], json.dumps(b[1:])[:120])
                for a, b in bad[:3])))
        if [t[0] for t in w["tensors"]] != [t[0] for t in g["tensors"]]:
            raise Fail("--outtype %s: tensor names or order differ" % ot)
        bad = [(a, b) for a, b in zip(w["tensors"], g["tensors"]) if a != b]
        if bad:
            raise Fail("--outtype %s: %d tensors differ, e.g. %s: converter type %d ne %r, model.gguf type %d ne %r%s"
                       % (ot, len(bad), bad[0][0][0], bad[0][0][1], bad[0][0][2], bad[0][1][1], bad[0][1][2],
                          " (data)" if bad[0][0][1:3] == bad[0][1][1:3] else ""))
        done.append(ot)
    return "%s: %d tensors, %d keys, byte for byte%s" % (", ".join(done), len(w["tensors"]), len(w["kv"]),
                                                          " (less the card's %s, not written)" % ", ".join(left) if left else "")


# a mixture of experts of converter_cases, and the down projection of an expert (%d) of layer 1
MOE_CASES = {"Tiny-Mixtral": "model.layers.1.block_sparse_moe.experts.%d.w2.weight",
             "Tiny-Qwen2-MoE": "model.layers.1.mlp.experts.%d.down_proj.weight",
             "Tiny-Qwen3-MoE": "model.layers.1.mlp.experts.%d.down_proj.weight",
             "Tiny-OLMoE": "model.layers.1.mlp.experts.%d.down_proj.weight",
             # V3 only: llama.cpp takes a deepseek2 of no q_lora_rank for V2-Lite only at 26 or 27
             # layers (src/models/deepseek2.cpp is_lite)
             "Tiny-DeepSeek-V3": "model.layers.1.mlp.experts.%d.down_proj.weight",
             "Tiny-GLM4-MoE": "model.layers.1.mlp.experts.%d.down_proj.weight"}


def moe_case(name):
    """A mixture of experts (4 experts, top-2; Mixtral's over two shards; Qwen2-MoE with a
    shared expert; GLM-4.5's sigmoid routing with a bias, a dense first layer, partial rotary
    and its MTP block, which neither runs): llama.cpp runs model.gguf, whose ffn_*_exps are stacked on read, and its
    logits equal a torch forward over the HF experts; with two experts swapped in the
    reference they must not."""
    import converter_cases
    import hf_forward
    folder = converter_cases.make(name, new_dir("moe-"))
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        if not os.path.exists(g):
            raise Fail("no model.gguf; WEIGHTFS.txt: %s" % open(m.path("WEIGHTFS.txt")).read()[-300:])
        ids = [1, 415, 2936, 9060, 285, 1142, 28705, 13, 1014, 4300, 378, 1010, 264, 5565, 28723, 2]
        out = os.path.join(TMP, "logits-moe.npy")
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
        cfg, w = hf_forward.load_folder(folder)
        b = np.asarray(hf_forward.forward(cfg, w, ids))
        rel = float(np.abs(a - b).max() / np.abs(b).max())
        if rel > 1e-4 or (a.argmax(-1) != b.argmax(-1)).any():
            raise Fail("llama.cpp's logits against the torch forward: relative error %.2g" % rel)
        q = MOE_CASES[name]
        w[q % 0], w[q % 3] = w[q % 3], w[q % 0]
        c = np.asarray(hf_forward.forward(cfg, w, ids))
        rel_swapped = float(np.abs(a - c).max() / np.abs(c).max())
        if rel_swapped < 1e-3:
            raise Fail("with experts 0 and 3 of layer 1 swapped the reference still matches (%.2g)" % rel_swapped)
        return "rel %.1e over %d positions (experts swapped: %.1e)" % (rel, len(ids), rel_swapped)
    finally:
        m.unmount()


# the dense form's bytes are the converter's (converter_case) and llama-quantize's (gguf_quant):
# llama.cpp runs the MXFP4 one, whose experts take the other path
GPTOSS_CASES = ("Tiny-GptOss-MXFP4",)


def gptoss_case(name):
    """gpt-oss (4 experts, top-2; sinks, sliding window on even layers, YaRN, biases; experts
    MXFP4 or dense): llama.cpp runs model.gguf (the MXFP4 experts re-laid on read, the dense
    ones transposed and de-interleaved) and its logits equal hf_forward's torch forward over
    the checkpoint; with experts 0 and 3 of layer 1's down projection swapped they must not.
    Two runtime differences the reference follows, so that what is left is weightfs's: YaRN's
    correction dims rounded (ggml_rope_yarn_corr_dims floors / ceils them, transformers does not
    when rope_scaling.truncate is false, as gpt-oss's config has it: about 1e-2 apart), and for
    MXFP4 the experts' inputs rounded to Q8_0 (ggml's CPU MXFP4 product takes Q8_0 operands)."""
    import converter_cases
    import hf_forward
    folder = converter_cases.make(name, new_dir("oss-"))
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        if not os.path.exists(g):
            raise Fail("no model.gguf; WEIGHTFS.txt: %s" % open(m.path("WEIGHTFS.txt")).read()[-300:])
        ids = [1, 415, 2936, 9060, 285, 1142, 28705, 13, 1014, 4300, 378, 1010, 264, 5565, 28723, 2]
        out = os.path.join(TMP, "logits-oss.npy")
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
        cfg, w = hf_forward.load_folder(folder)
        hf = np.asarray(hf_forward.forward(cfg, w, ids))
        rel_hf = float(np.abs(a - hf).max() / np.abs(hf).max())
        cfg["rope_scaling"] = dict(cfg["rope_scaling"], truncate=True)
        mx = "q8_act" if any(k.endswith("_blocks") for k in w) else "exact"
        b = np.asarray(hf_forward.forward(cfg, w, ids, gelu=mx))
        rel = float(np.abs(a - b).max() / np.abs(b).max())
        if rel > 1e-4 or (a.argmax(-1) != b.argmax(-1)).any():
            raise Fail("llama.cpp's logits against the torch forward: relative error %.2g" % rel)
        for k in [k for k in w if k.startswith("model.layers.1.mlp.experts.down_proj")]:
            w[k] = w[k].copy()
            w[k][[0, 3]] = w[k][[3, 0]]
        c = np.asarray(hf_forward.forward(cfg, w, ids, gelu=mx))
        rel_swapped = float(np.abs(a - c).max() / np.abs(c).max())
        if rel_swapped < 1e-3:
            raise Fail("with experts 0 and 3 of layer 1 swapped the reference still matches (%.2g)" % rel_swapped)
        return "rel %.1e over %d positions (experts swapped: %.1e; transformers' own rounding%s: %.1e)" % (
            rel, len(ids), rel_swapped, " and float activations" if mx != "exact" else "", rel_hf)
    finally:
        m.unmount()




def moe_roundtrip_case(name):
    """HF folder -> model.gguf (weightfs convert) -> that GGUF's hf/: the same tensors under the
    same names, bit for bit (q/k rows put back), and the config fields a mixture of experts
    needs, as the folder has them."""
    import converter_cases
    import st_io
    d = new_dir("moert-")
    folder = converter_cases.make(name, d)
    g = os.path.join(d, "m.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", folder, g], timeout=120)
    if rc != 0:
        raise Fail("convert: exit %d: %s" % (rc, err.strip()))
    with open(os.path.join(folder, "config.json")) as f:
        want_cfg = json.load(f)
    want = {}
    for fn in sorted(os.listdir(folder)):
        if fn.endswith(".safetensors"):
            want.update(st_io.load(os.path.join(folder, fn)))
    # DeepSeek's MTP layer (model.layers.{num_hidden_layers}.*) is not converted (GLM's is, and
    # hf/ gives it back)
    ds = want_cfg["architectures"][0].startswith("Deepseek")
    mtp = "model.layers.%d." % want_cfg["num_hidden_layers"] if ds else "\0"
    want = {k: v for k, v in want.items() if not k.endswith("rotary_emb.inv_freq") and not k.startswith(mtp)}
    m = Mount(g, [])
    try:
        if not os.path.exists(m.path("hf/model.safetensors")):
            raise Fail("no hf/model.safetensors: %s" % [ln for ln in open(m.path("WEIGHTFS.txt")) if "hf/" in ln])
        got = st_io.load(m.path("hf/model.safetensors"))
        with open(m.path("hf/config.json")) as f:
            cfg = json.load(f)
    finally:
        m.unmount()
    if set(got) != set(want):
        raise Fail("names: only hf/'s %r, only the folder's %r" % (sorted(set(got) - set(want))[:4],
                                                                   sorted(set(want) - set(got))[:4]))
    bad = [k for k in want if got[k].shape != want[k].shape or
           got[k].astype(np.float32).tobytes() != want[k].astype(np.float32).tobytes()]
    if bad:
        raise Fail("%d tensors differ from the folder's, e.g. %s" % (len(bad), bad[0]))
    keys = ["architectures", "model_type", "num_local_experts", "num_experts", "num_experts_per_tok",
            "moe_intermediate_size", "shared_expert_intermediate_size", "intermediate_size", "hidden_size",
            "num_hidden_layers", "num_attention_heads", "num_key_value_heads", "norm_topk_prob",
            # DeepSeek's
            "n_routed_experts", "n_shared_experts", "first_k_dense_replace", "kv_lora_rank", "q_lora_rank",
            "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim", "routed_scaling_factor", "n_group", "topk_group",
            "scoring_func", "topk_method",
            # GLM-4.5's
            "head_dim", "partial_rotary_factor", "use_qk_norm", "attention_bias", "num_nextn_predict_layers"]
    if ds:  # hf/ says 0: the MTP layer is not there
        keys.remove("num_nextn_predict_layers")
    off = [(k, want_cfg[k], cfg.get(k)) for k in keys if k in want_cfg and cfg.get(k) != want_cfg[k]]
    if off:
        raise Fail("config.json: %r" % off)
    return "%d tensors bit for bit, %s" % (len(got), ", ".join("%s=%s" % (k, cfg[k]) for k in keys[2:7] if k in cfg))


def fuse_experts(src, dst, suffix="", router=False):
    """dst: folder src (one model.safetensors, per-expert tensors) with each layer's experts in
    transformers 5's fused form: model.layers.L.mlp.experts.gate_up_proj [E, 2F, H] (gate rows,
    then up) and .down_proj [E, H, F] (each + suffix); router: Mixtral's block_sparse_moe.gate
    as transformers 5 names it, mlp.gate."""
    import re
    import st_io
    shutil.copytree(src, dst)
    w = st_io.load(os.path.join(src, "model.safetensors"))
    alias = {"w1": "gate_proj", "w3": "up_proj", "w2": "down_proj"}
    per = {}
    for k in list(w):
        mm = re.fullmatch(r"model\.layers\.(\d+)\.(?:mlp|block_sparse_moe)\.experts\.(\d+)\.(\w+)\.weight", k)
        if mm:
            per.setdefault(int(mm.group(1)), {}).setdefault(alias.get(mm.group(3), mm.group(3)), {})[int(mm.group(2))] = w.pop(k)
    for layer, d in per.items():
        st = {x: np.stack([d[x][e] for e in sorted(d[x])]) for x in ("gate_proj", "up_proj", "down_proj")}
        p = "model.layers.%d.mlp.experts." % layer
        w[p + "gate_up_proj" + suffix] = np.concatenate([st["gate_proj"], st["up_proj"]], axis=1)
        w[p + "down_proj" + suffix] = st["down_proj"]
    if router:
        w = {k.replace("block_sparse_moe.gate.", "mlp.gate."): v for k, v in w.items()}
    st_io.save(w, os.path.join(dst, "model.safetensors"), metadata={"format": "pt"})
    return dst


def info_last(folder):
    rc, out, err, _ = run_cli(["info", folder], timeout=60)
    return rc, (out.rstrip("\n").splitlines()[-1] if out else "")


def moe_fused_case():
    """Transformers 5's fused experts (mlp.experts.gate_up_proj [E, 2F, H], down_proj [E, H, F]),
    which the converter accepts for Qwen2-MoE and Qwen3-MoE (Qwen2MoeModel.modify_tensors): the
    same random checkpoint in the per-expert form and in the fused one (with and without
    .weight) makes byte-identical model.gguf files in every outtype the digests have and in
    q4_k_m, and llama.cpp runs the fused one (logits = the torch forward over the experts).
    Fused experts that do not add up, and the fused form of the families the converter stacks
    only per expert (OLMoE, GLM-4.5, DeepSeek, Mixtral: it stalls on them), leave model.gguf
    out with one line naming the tensor or layer."""
    import converter_cases
    import hf_forward
    import st_io
    said = []
    for name, suffix in (("Tiny-Qwen2-MoE", ""), ("Tiny-Qwen3-MoE", ".weight")):
        d = new_dir("fused-")
        os.makedirs(os.path.join(d, "per"))
        per = converter_cases.make(name, os.path.join(d, "per"))
        fused = fuse_experts(per, os.path.join(d, "fused", name), suffix)
        for ot in converter_cases.CASES[name][3] + ["q4_k_m"]:
            shas = []
            for f in (per, fused):
                m = Mount(f, ["-o", "gguf=" + ot])
                try:
                    if not os.path.exists(m.path("model.gguf")):
                        raise Fail("%s %s: no model.gguf; WEIGHTFS.txt: %s" % (f, ot, open(m.path("WEIGHTFS.txt")).read()[-300:]))
                    shas.append(sha256_file(m.path("model.gguf")))
                finally:
                    m.unmount()
            if shas[0] != shas[1]:
                raise Fail("%s -o gguf=%s: model.gguf of the fused form differs from the per-expert form's" % (name, ot))
        m = Mount(fused, ["-o", "gguf=f32"])
        try:
            ids = [1, 415, 2936, 9060, 285, 1142, 28705, 13, 1014, 4300, 378, 1010, 264, 5565, 28723, 2]
            out = os.path.join(TMP, "logits-fused.npy")
            client(["logits", m.path("model.gguf"), out] + [str(i) for i in ids])
            a = np.load(out)
        finally:
            m.unmount()
        cfg, w = hf_forward.load_folder(per)
        b = np.asarray(hf_forward.forward(cfg, w, ids))
        rel = float(np.abs(a - b).max() / np.abs(b).max())
        if rel > 1e-4:
            raise Fail("%s fused: llama.cpp's logits against the torch forward: relative error %.2g" % (name, rel))
        said.append("%s: %d outtypes equal, logits rel %.1e" % (name, len(converter_cases.CASES[name][3]) + 1, rel))
    # fused experts that do not add up (Qwen3-MoE: 4 experts of 32, hidden 64)
    base = converter_cases.make("Tiny-Qwen3-MoE", new_dir("fusedbad-"))
    fz = fuse_experts(base, os.path.join(new_dir("fusedbad-"), "Tiny-Qwen3-MoE"))
    fw = st_io.load(os.path.join(fz, "model.safetensors"))
    pw = st_io.load(os.path.join(base, "model.safetensors"))
    gu, dn = "model.layers.1.mlp.experts.gate_up_proj", "model.layers.1.mlp.experts.down_proj"
    bad = {
        "odd rows": (dict(fw, **{gu: fw[gu][:, :63]}), "%s': not [4 experts, 2 F" % gu),
        "3 experts": (dict(fw, **{gu: fw[gu][:3], dn: fw[dn][:3]}), "not [4 experts"),
        "F apart": (dict(fw, **{dn: fw[dn][:, :, :16]}), "does not match its layer's"),
        "no down_proj": ({k: v for k, v in fw.items() if k != dn}, "layer 1: mlp.experts.gate_up_proj without"),
        "given twice": (dict(fw, **{dn + ".weight": fw[dn]}), "given twice"),
        "both forms": (dict(fw, **{k: v for k, v in pw.items() if k.startswith("model.layers.1.mlp.experts.0.")}),
                       "layer 1: transformers 5's fused experts and per-expert tensors both"),
    }
    for what, (tensors, want) in bad.items():
        st_io.save(tensors, os.path.join(fz, "model.safetensors"), metadata={"format": "pt"})
        rc, last = info_last(fz)
        if rc != 0 or not last.startswith("model.gguf: none: ") or want not in last:
            raise Fail("fused experts, %s: weightfs info exit %d, last line %r (want %r)" % (what, rc, last[:240], want))
    said.append("%d broken fused forms refused" % len(bad))
    for name in ("Tiny-OLMoE", "Tiny-GLM4-MoE", "Tiny-DeepSeek-V3", "Tiny-Mixtral-One"):
        d = new_dir("fusedother-")
        os.makedirs(os.path.join(d, "per"))
        if name == "Tiny-Mixtral-One":   # one file: fuse_experts reads model.safetensors
            import real_tokenizers
            import tiny_models
            src = tiny_models.make(os.path.join(d, "per", name), "mixtral", real_tokenizers.folder("llama2"))
        else:
            src = converter_cases.make(name, os.path.join(d, "per"))
        f = fuse_experts(src, os.path.join(d, "fused", name), router=name == "Tiny-Mixtral-One")
        rc, last = info_last(f)
        if rc != 0 or not last.startswith("model.gguf: none: tensor 'model.layers.") or \
                "mlp.experts." not in last or "transformers 5's fused experts" not in last:
            raise Fail("%s in the fused form: weightfs info exit %d, last line %r" % (name, rc, last[:240]))
    said.append("OLMoE, GLM-4.5, DeepSeek V3, Mixtral fused: refused, naming the tensor")
    return "; ".join(said)


def mixtral_bad_case():
    """Experts that do not add up: model.gguf left out, `weightfs info` saying why in one line
    naming the field or tensor; never a crash or a file made anyway."""
    import real_tokenizers
    import tiny_models
    tdir = real_tokenizers.folder("llama2")
    if not tdir:
        skip_or_fail("tokenizer llama2 not installed (tests/clients/npm.sh)")
    base = tiny_models.make(os.path.join(new_dir("moebad-"), "Tiny-Mixtral"), "mixtral", tdir)
    x0 = "model.layers.0.block_sparse_moe.experts.%d.%s.weight"

    def drop(w):
        del w[x0 % (2, "w3")]

    def reshape(w):
        w[x0 % (1, "w1")] = w[x0 % (1, "w1")][:-1]

    def misname(w):
        w[x0.replace("%d", "02") % "w1"] = w.pop(x0 % (2, "w1"))
    cases = [({"num_local_experts": 5}, None, "layer 0: 12 of its 15 expert tensors"),
             ({"num_local_experts": 3}, None, "expert 3, past config.json's num_local_experts (3)"),
             ({"num_experts_per_tok": 0}, None, "num_experts_per_tok: not from 1 to the 4 experts"),
             ({"num_experts_per_tok": 5}, None, "num_experts_per_tok: not from 1 to the 4 experts"),
             ({"num_local_experts": 1 << 20}, None, "num_local_experts: not a count of experts"),
             ({"num_hidden_layers": 100000}, None, "more than the checkpoint's"),
             ({}, drop, "layer 0: 11 of its 12 expert tensors"),
             ({}, reshape, "experts.1.w1.weight': not 2-D of expert 0's shape"),
             ({}, misname, "experts.02.w1.weight': no GGUF name")]
    return refused_folders(base, cases)


def refused_folders(base, cases):
    """Each case (config.json changes, an edit of the tensors or None, the text expected) made
    from folder base: `weightfs info` must end with model.gguf: none and that text."""
    import st_io
    for cfg, edit, says in cases:
        d = new_dir("moebad-")
        for f in os.listdir(base):
            shutil.copy(os.path.join(base, f), d)
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        c.update(cfg)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        if edit:
            w = st_io.load(os.path.join(d, "model.safetensors"))
            edit(w)
            st_io.save(w, os.path.join(d, "model.safetensors"))
        rc, out, err, _ = run_cli(["info", d], timeout=60)
        last = out.rstrip("\n").splitlines()[-1] if out else ""
        if rc != 0 or not last.startswith("model.gguf: none: ") or says not in last:
            raise Fail("%r: weightfs info exit %d, last line %r, want %r" % (cfg or edit.__name__, rc, last[:200], says))
    return "%d folders refused, each naming why" % len(cases)


def deepseek_ranges_case():
    """DeepSeek's attn_k_b and attn_v_b, read from kv_b_proj on demand: in F32 equal to the
    numpy split and per-head transpose of the folder's kv_b_proj; in F32 and BF16, any range
    (cut elements, across heads) equal to the same bytes of a whole read; hf/ of a Q8_0 GGUF
    puts kv_b_proj back from the decoded blocks."""
    import random
    import converter_cases
    import st_io
    folder = converter_cases.make("Tiny-DeepSeek-V3", new_dir("dsrange-"))
    w = st_io.load(os.path.join(folder, "model.safetensors"))
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    H, nope, vd = cfg["num_key_value_heads"], cfg["qk_nope_head_dim"], cfg["v_head_dim"]
    n = 0
    for ot in ("f32", "bf16"):
        m = Mount(folder, ["-o", "gguf=" + ot])
        try:
            p = m.path("model.gguf")
            _, infos, whole, start = gguf_read(p)
            rnd = random.Random(38)
            fd = os.open(p, os.O_RDONLY)
            try:
                for name, ne, ty, off in infos:
                    if not name.endswith(("attn_k_b.weight", "attn_v_b.weight")):
                        continue
                    es = 4 if ty == 0 else 2
                    a0, size = start + off, int(np.prod(ne)) * es
                    if ot == "f32":
                        got = np.frombuffer(whole[a0:a0 + size], "<f4").reshape(ne[::-1])
                        kv = w[name.replace("blk.", "model.layers.").replace(
                            name.split(".")[2], "self_attn.kv_b_proj")].reshape(H, nope + vd, -1)
                        want = kv[:, :nope].transpose(0, 2, 1) if "k_b" in name else kv[:, nope:]
                        if got.shape != want.shape or got.tobytes() != np.ascontiguousarray(want).tobytes():
                            raise Fail("%s: not kv_b_proj's split (and transpose) of the folder's" % name)
                    for _ in range(60):
                        a = a0 + rnd.randrange(size)
                        k = rnd.choice([1, 3, es * 7 + 1, 4097, 33000])
                        if os.pread(fd, k, a) != whole[a:a + k]:
                            raise Fail("-o gguf=%s: %s: %d bytes at %d differ from a whole read" % (ot, name, k, a))
                        n += 1
            finally:
                os.close(fd)
        finally:
            m.unmount()
    # hf/ of a Q8_0 GGUF (attn_v_b Q8_0, attn_k_b F16 by the fallback): kv_b_proj put back from
    # decoded blocks, within Q8_0's error of the folder's (a wrong layout is off by the values)
    g = os.path.join(new_dir("dsq8-"), "q8.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=q8_0", folder, g], timeout=120)
    if rc != 0:
        raise Fail("convert -o gguf=q8_0: exit %d: %s" % (rc, err.strip()[-300:]))
    m = Mount(g, [])
    try:
        got = st_io.load(m.path("hf/model.safetensors"))
    finally:
        m.unmount()
    worst = 0.0
    for k in w:
        if k.endswith("kv_b_proj.weight") and not k.startswith("model.layers.%d." % cfg["num_hidden_layers"]):
            worst = max(worst, float(np.abs(got[k] - w[k]).max() / np.abs(w[k]).max()))
    if not worst or worst > 0.01:
        raise Fail("hf/ of a Q8_0 GGUF: kv_b_proj off the folder's by %.3g of its largest value" % worst)
    return "values = numpy's split; %d ranges = a whole read; hf/ of Q8_0: kv_b_proj within %.1e" % (n, worst)


def _ranges_equal(path, what):
    """Random ranges of path (cut elements, across rows, past 64 rows) equal to the same bytes
    of a whole read; how many were read."""
    import random
    with open(path, "rb") as f:
        whole = f.read()
    rnd = random.Random(38)
    fd = os.open(path, os.O_RDONLY)
    try:
        for k in [1, 3, 29, 4097, 33000, 70001] * 20:
            a = rnd.randrange(len(whole))
            if os.pread(fd, k, a) != whole[a:a + k]:
                raise Fail("%s: %d bytes at %d of %s differ from a whole read" % (what, k, a, path))
    finally:
        os.close(fd)
    return 120


def gptoss_hf_case(name):
    """hf/ of a gpt-oss GGUF (GptOssForCausalLM, transformers' layout): from the F32 and BF16
    files `weightfs convert` makes of a BF16 folder, every tensor of the folder back bit for bit
    (gate_up_proj made on read from ffn_gate_exps and ffn_up_exps transposed and interleaved,
    down_proj transposed, the sinks) and config.json's fields as the folder's; from the MXFP4
    file of an MXFP4 folder, the experts equal to transformers' dequantization of the
    folder's blocks (as values: ggml decodes MXFP4's -0 as +0). A torch forward over hf/ (its
    config.json as written) equals llama.cpp's logits on the F32 GGUF (MXFP4 experts kept);
    with experts 0 and 3 of layer 1 swapped in hf/'s tensors it must not."""
    import converter_cases
    import hf_forward
    import st_io
    d = new_dir("osshf-")
    folder = converter_cases.make(name, d)
    cfg0, w0 = hf_forward.load_folder(folder)
    mx = any(k.endswith("_blocks") for k in w0)
    want = {}
    for k, v in w0.items():
        if k.endswith("_blocks"):
            want[k[:-len("_blocks")]] = hf_forward.mxfp4_dequant(v, w0[k[:-7] + "_scales"]).numpy().astype(np.float32)
        elif not k.endswith("_scales"):
            want[k] = v
    ids = [1, 415, 2936, 9060, 285, 1142, 28705, 13, 1014, 4300, 378, 1010, 264, 5565, 28723, 2]
    keys = ("architectures", "model_type", "hidden_size", "intermediate_size", "num_hidden_layers",
            "num_attention_heads", "num_key_value_heads", "head_dim", "num_local_experts", "num_experts_per_tok",
            "experts_per_token", "sliding_window", "layer_types", "attention_bias", "swiglu_limit", "rms_norm_eps",
            "rope_theta", "vocab_size", "tie_word_embeddings", "max_position_embeddings")
    said = []
    # -o gguf=f32 (MXFP4 experts stay MXFP4) for the forward: llama.cpp rounds the activations
    # of a BF16 weight's product to BF16 (about 3e-2 off a float64 forward)
    for ot in (["f32"] if mx else ["f32", "bf16"]):
        g = os.path.join(d, "m-%s.gguf" % ot)
        rc, _, err, _ = run_cli(["convert", "-o", "gguf=" + ot, folder, g], timeout=120)
        if rc != 0:
            raise Fail("convert -o gguf=%s: exit %d: %s" % (ot, rc, err.strip()[-300:]))
        m = Mount(g, [])
        try:
            if not os.path.exists(m.path("hf/model.safetensors")):
                raise Fail("%s: no hf/model.safetensors: %s" % (ot, [ln for ln in open(m.path("WEIGHTFS.txt"))
                                                                  if "hf/" in ln]))
            got = st_io.load(m.path("hf/model.safetensors"))
            with open(m.path("hf/config.json")) as f:
                cfg = json.load(f)
            ranges = _ranges_equal(m.path("hf/model.safetensors"), ot)
        finally:
            m.unmount()
        if set(got) != set(want):
            raise Fail("%s: names: only hf/'s %r, only the folder's %r" % (
                ot, sorted(set(got) - set(want))[:4], sorted(set(want) - set(got))[:4]))
        # MXFP4's code 8 is -0 to transformers, +0 to ggml's decoder (int8 values): the dequantized
        # experts are compared as values, every other tensor as bits
        bad = [k for k in want if got[k].shape != want[k].shape or
               (got[k].astype(np.float32).tobytes() != want[k].astype(np.float32).tobytes() if k in w0 else
                not np.array_equal(got[k].astype(np.float32), want[k]))]
        if bad:
            raise Fail("%s: %d tensors differ from the folder's, e.g. %s" % (ot, len(bad), bad[0]))
        off = [(k, cfg0.get(k), cfg.get(k)) for k in keys if cfg.get(k) != cfg0.get(k)]
        rs, rs0 = cfg.get("rope_scaling") or {}, cfg0["rope_scaling"]
        off += [("rope_scaling." + k, rs0[k], rs.get(k)) for k in rs0 if k != "truncate" and rs.get(k) != rs0[k]]
        if off or rs.get("truncate") is not True:
            raise Fail("%s: config.json: %r (truncate %r)" % (ot, off, rs.get("truncate")))
        if ot == "bf16":
            said.append("%s: %d tensors bit for bit, %d ranges" % (ot, len(got), ranges))
            continue
        out = os.path.join(TMP, "logits-osshf.npy")
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
        act = "q8_act" if mx else "exact"
        b = np.asarray(hf_forward.forward(cfg, got, ids, gelu=act))
        rel = float(np.abs(a - b).max() / np.abs(b).max())
        if rel > 1e-4 or (a.argmax(-1) != b.argmax(-1)).any():
            raise Fail("%s: llama.cpp's logits against the torch forward over hf/: relative error %.2g" % (ot, rel))
        sw = dict(got)
        for k in ("model.layers.1.mlp.experts.down_proj", "model.layers.1.mlp.experts.gate_up_proj"):
            sw[k] = sw[k].copy()
            sw[k][[0, 3]] = sw[k][[3, 0]]
        c = np.asarray(hf_forward.forward(cfg, sw, ids, gelu=act))
        rel_sw = float(np.abs(a - c).max() / np.abs(c).max())
        if rel_sw < 1e-3:
            raise Fail("%s: with experts 0 and 3 of layer 1 swapped the forward over hf/ still matches (%.2g)" %
                       (ot, rel_sw))
        said.append("%s: %d tensors as the folder's%s, %d ranges, logits rel %.1e (swapped %.1e)" % (
            ot, len(got), " (MXFP4 experts dequantized)" if mx else "", ranges, rel, rel_sw))
    return "; ".join(said)


def gptoss_ranges_case():
    """gpt-oss's experts read from gate_up_proj and down_proj on demand (each a transpose, gate
    and up the even and odd columns; the biases split): in F32 equal to numpy's; in F32 and
    BF16, any range (cut elements, within a row, across rows and past a tile of 64 rows) equal
    to the same bytes of a whole read."""
    import random
    import converter_cases
    import st_io
    folder = converter_cases.make("Tiny-GptOss-BF16", new_dir("ossrange-"))
    w = st_io.load(os.path.join(folder, "model.safetensors"))
    n = 0
    for ot in ("f32", "bf16"):
        m = Mount(folder, ["-o", "gguf=" + ot])
        try:
            p = m.path("model.gguf")
            _, infos, whole, start = gguf_read(p)
            rnd = random.Random(38)
            fd = os.open(p, os.O_RDONLY)
            seen = set()
            try:
                for name, ne, ty, off in infos:
                    if "_exps." not in name:
                        continue
                    es = 4 if ty == 0 else 2
                    a0, size, rowb = start + off, int(np.prod(ne)) * es, ne[0] * es
                    part = name.split(".")[2]
                    seen.add(part + "." + name.split(".")[-1])
                    if ot == "f32":
                        got = np.frombuffer(whole[a0:a0 + size], "<f4").reshape(ne[::-1])
                        x = "model.layers.%s.mlp.experts." % name.split(".")[1]
                        src = w[x + ("down_proj" if "down" in part else "gate_up_proj")
                                + ("_bias" if name.endswith("bias") else "")]
                        if "down" not in part:
                            src = src[..., 0::2] if "gate" in part else src[..., 1::2]
                        want = src if name.endswith("bias") else src.transpose(0, 2, 1)
                        if got.shape != want.shape or got.tobytes() != np.ascontiguousarray(want).tobytes():
                            raise Fail("%s: not numpy's split and transpose of the folder's" % name)
                    for k in (1, 3, es * 7 + 1, rowb - 1, rowb + es + 1, 4097, 64 * rowb + 5, 33000):
                        for _ in range(8):
                            a = a0 + rnd.randrange(size)
                            if os.pread(fd, k, a) != whole[a:a + k]:
                                raise Fail("-o gguf=%s: %s: %d bytes at %d differ from a whole read" % (ot, name, k, a))
                            n += 1
            finally:
                os.close(fd)
            if len(seen) != 6:
                raise Fail("-o gguf=%s: expert tensors %s, want gate/up/down weight and bias" % (ot, sorted(seen)))
        finally:
            m.unmount()
    return "values = numpy's split and transpose; %d ranges = a whole read" % n


def deepseek_bad_case():
    """A DeepSeek V3 checkpoint whose experts or MLA shapes do not add up: model.gguf left out,
    `weightfs info` saying why in one line naming the field or tensor."""
    import real_tokenizers
    import st_io
    import tiny_models
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    base = tiny_models.make(os.path.join(new_dir("dsbad-"), "Tiny-DeepSeek-V3"), "deepseek_v3", tdir)
    x1 = "model.layers.1.mlp.experts.%d.%s.weight"

    def drop(w):
        del w[x1 % (5, "up_proj")]

    def dup(w):  # expert 2 given twice, once as 02
        w[x1.replace("%d", "02") % "gate_proj"] = w[x1 % (2, "gate_proj")]

    def kv_cols(w):
        k = "model.layers.2.self_attn.kv_b_proj.weight"
        w[k] = w[k][:, :-1]
    cases = [({"n_routed_experts": 9}, None, "layer 1: 24 of its 27 expert tensors"),
             ({"n_routed_experts": 7}, None, "expert 7, past config.json's n_routed_experts (7)"),
             ({"num_experts_per_tok": 0}, None, "num_experts_per_tok: not from 1 to the 8 experts"),
             ({"num_experts_per_tok": 9}, None, "num_experts_per_tok: not from 1 to the 8 experts"),
             ({"qk_nope_head_dim": 15}, None, "kv_b_proj.weight': 128 rows, not config.json's num_key_value_heads "
              "(4) x (qk_nope_head_dim + v_head_dim) (31)"),
             ({"num_key_value_heads": 3}, None, "kv_b_proj.weight': 128 rows, not config.json's num_key_value_heads (3)"),
             ({"v_head_dim": 0}, None, "config.json: v_head_dim: not an integer from 1 to 65535"),
             ({"kv_lora_rank": 31}, None, "kv_b_proj.weight': 32 columns, not config.json's kv_lora_rank"),
             ({"n_group": 3}, None, "n_group: 3 groups do not divide n_routed_experts (8)"),
             ({"topk_group": 5}, None, "topk_group: 5, more than n_group (4)"),
             ({"scoring_func": "relu"}, None, "scoring_func: not sigmoid, softmax or sqrtsoftplus"),
             ({}, drop, "layer 1: 23 of its 24 expert tensors"),
             ({}, dup, "experts.02.gate_proj.weight': no GGUF name"),
             ({}, kv_cols, "layers.2.self_attn.kv_b_proj.weight': 31 columns"),
             ({"first_k_dense_replace": 2}, None, "layer 1: 24 expert tensors, but config.json's first_k_dense_replace 2")]
    for cfg, edit, says in cases:
        d = new_dir("dsbad-")
        for f in os.listdir(base):  # links: the 26 MB of weights are not copied 14 times
            if f != "config.json" and not (edit and f == "model.safetensors"):
                os.symlink(os.path.join(base, f), os.path.join(d, f))
        with open(os.path.join(base, "config.json")) as f:
            c = json.load(f)
        c.update(cfg)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        if edit:
            w = st_io.load(os.path.join(base, "model.safetensors"))
            edit(w)
            st_io.save(w, os.path.join(d, "model.safetensors"))
        rc, out, err, _ = run_cli(["info", d], timeout=60)
        last = out.rstrip("\n").splitlines()[-1] if out else ""
        if rc != 0 or not last.startswith("model.gguf: none: ") or says not in last:
            raise Fail("%r: weightfs info exit %d, last line %r, want %r" % (cfg or edit.__name__, rc, last[:200], says))
    # and made: 2 of 3 layers dense, 32 experts: 3 x 3 x 32 expert slots are more than the
    # folder's tensors, only the MoE layer's 96 count
    d = tiny_models.make(os.path.join(new_dir("dsdense-"), "Tiny-DeepSeek-V3"), "deepseek_v3", tdir,
                         config={"n_routed_experts": 32, "first_k_dense_replace": 2})
    rc, out, err, _ = run_cli(["info", d], timeout=60)
    last = out.rstrip("\n").splitlines()[-1] if out else ""
    if rc != 0 or not last.startswith("model.gguf: deepseek2"):
        raise Fail("2 dense layers of 3, 32 experts: weightfs info exit %d, last line %r" % (rc, last[:200]))
    return "%d folders refused, each naming why; one mostly dense made" % len(cases)


def gptoss_bad_case():
    """gpt-oss whose experts do not add up: model.gguf left out, `weightfs info` saying why in
    one line naming the tensor and the field (expert counts that disagree with config.json, or
    between a layer's tensors); blocks and scales that disagree are refused at mount (group
    hfq)."""
    import converter_cases
    import st_io
    base = converter_cases.make("Tiny-GptOss-MXFP4", new_dir("ossbad-"))
    x = "model.layers.1.mlp.experts."

    def fewer_bias(w):  # layer 1's down bias with 3 experts
        w[x + "down_proj_bias"] = w[x + "down_proj_bias"][:3]

    def fewer_dense(w):  # layer 1's gate_up dense, of 3 experts
        w[x + "gate_up_proj"] = np.zeros((3, 64, 128), np.float32)
        del w[x + "gate_up_proj_blocks"], w[x + "gate_up_proj_scales"]
    cases = [(base, {"num_local_experts": 5}, None, "experts.down_proj': 4 experts, config.json's num_local_experts says 5"),
             (base, {"num_local_experts": 0}, None, "num_local_experts: not a count of experts"),
             (base, {}, fewer_bias, "experts.down_proj_bias': 3 experts, config.json's num_local_experts says 4"),
             (base, {}, fewer_dense, "layers.1.mlp.experts.gate_up_proj': 3 experts")]
    for src, cfg, edit, says in cases:
        d = new_dir("ossbad-")
        for f in os.listdir(src):
            shutil.copy(os.path.join(src, f), d)
        with open(os.path.join(d, "config.json")) as f:
            c = json.load(f)
        c.update(cfg)
        with open(os.path.join(d, "config.json"), "w") as f:
            json.dump(c, f)
        if edit:
            w = st_io.load(os.path.join(d, "model.safetensors"))
            edit(w)
            st_io.save(w, os.path.join(d, "model.safetensors"), dtypes={k: "BF16" for k, v in w.items()
                                                                        if v.dtype == np.float32})
        rc, out, err, _ = run_cli(["info", d], timeout=60)
        last = out.rstrip("\n").splitlines()[-1] if out else ""
        if rc != 0 or not last.startswith("model.gguf: none: ") or says not in last:
            raise Fail("%r: weightfs info exit %d, last line %r, want %r" % (cfg or edit.__name__, rc, last[:200], says))
    return "%d folders refused, each naming why" % len(cases)


def glm_bad_case():
    """GLM-4.5's experts, dense layers and MTP block that do not add up: model.gguf left out,
    `weightfs info` naming the field or tensor in one line; an expert given in two shards
    refuses the folder, naming it."""
    import converter_cases
    import st_io
    import tiny_models
    # the case's folder with 512 embedding rows (the tensors are planned before the vocabulary)
    d = new_dir("glmbad-")
    tdir = converter_cases.glm_folder(d)
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    base = tiny_models.make(os.path.join(d, "Tiny-GLM4-MoE"), "glm4moe", tdir, vocab_size=512,
                            config=converter_cases.CASES["Tiny-GLM4-MoE"][2]["config"])
    x = "model.layers.%d.mlp.experts.%d.%s.weight"

    def drop_mtp(w):
        del w[x % (2, 2, "up_proj")]

    def mtp_no_experts(w):  # the rest of the MTP block kept: llama.cpp would want its experts
        for k in [k for k in w if k.startswith("model.layers.2.mlp.experts.")]:
            del w[k]

    def reshape(w):
        w[x % (1, 1, "gate_proj")] = w[x % (1, 1, "gate_proj")][:-1]

    def misname(w):
        w["model.layers.1.mlp.experts.02.down_proj.weight"] = w.pop(x % (1, 2, "down_proj"))

    def dense_experts(w):
        for k in range(4):
            for p in ("gate_proj", "up_proj", "down_proj"):
                w[x % (0, k, p)] = w[x % (1, k, p)]
    cases = [({"n_routed_experts": 5}, None, "layer 1: 12 of its 15 expert tensors"),
             ({"n_routed_experts": 3}, None, "expert 3, past config.json's n_routed_experts (3)"),
             ({"num_experts_per_tok": 0}, None, "num_experts_per_tok: not from 1 to the 4 experts"),
             ({"num_experts_per_tok": 5}, None, "num_experts_per_tok: not from 1 to the 4 experts"),
             ({"first_k_dense_replace": 0}, None, "layer 0: 0 of its 12 expert tensors"),
             ({"first_k_dense_replace": 2}, None,
              "layer 1: 12 expert tensors, but config.json's first_k_dense_replace 2"),
             ({}, dense_experts, "layer 0: 12 expert tensors, but config.json's first_k_dense_replace 1"),
             ({"num_nextn_predict_layers": 0}, None, "layer 2, past config.json's num_hidden_layers (2)"),
             ({"num_nextn_predict_layers": None}, None, "num_nextn_predict_layers: not a count of MTP blocks"),
             ({}, drop_mtp, "layer 2: 11 of its 12 expert tensors"),
             ({}, mtp_no_experts, "layer 2: 0 of its 12 expert tensors"),
             ({}, reshape, "experts.1.gate_proj.weight': not 2-D of expert 0's shape"),
             ({}, misname, "experts.02.down_proj.weight': no GGUF name")]
    said = refused_folders(base, cases)
    # the same expert in both shards: the folder is refused whole, naming it
    d = new_dir("glmbad-")
    for f in os.listdir(base):
        if not f.endswith(".safetensors"):
            shutil.copy(os.path.join(base, f), d)
    w = st_io.load(os.path.join(base, "model.safetensors"))
    names = sorted(w)
    dup = x % (1, 2, "gate_proj")
    for i, half in enumerate((names[:len(names) // 2] + [dup], names[len(names) // 2:] + [dup])):
        st_io.save({n: w[n] for n in half}, os.path.join(d, "model-%05d-of-00002.safetensors" % (i + 1)))
    rc, out, err, _ = run_cli(["info", d], timeout=60)
    if rc == 0 or dup not in err or len(err.strip().splitlines()) != 1:
        raise Fail("an expert in both shards: weightfs info exit %d, %r" % (rc, err[-300:]))
    return said + ", and an expert in two shards"


# dense families of converter_cases (the multimodal releases: their text model is
# converted), and a config.json change the reference must notice (the negative control)
DENSE_CASES = {"Tiny-Gemma3-VL": {"rope_local_base_freq": 1000000.0}, "Tiny-Mistral3-VL": {"rope_theta": 10000.0},
               "Tiny-SmolLM3": {"no_rope_layers": [1, 1, 1, 1]}, "Tiny-Granite": {"residual_multiplier": 0.25},
               "Tiny-OLMo2": {"rms_norm_eps": 0.1}, "Tiny-Gemma": {"rope_theta": 100.0},
               "Tiny-Phi4-Mini": {"rope_scaling": None}}


def dense_case(name):
    """A dense family's checkpoint (of a multimodal release: its vision tower and projector
    beside the language model): model.gguf is its (text) model, WEIGHTFS.txt counts the
    tensors left out, llama.cpp runs it and its logits equal a torch forward over the text
    model (with the control's config change they must not); its hf/ (through `weightfs
    convert`) is the text model's class with its tensors under their text model names and
    its config fields."""
    import converter_cases
    import hf_forward
    d = new_dir("wrap-")
    folder = converter_cases.make(name, d)
    cfg, w = hf_forward.load_folder(folder)
    tcfg, tw = hf_forward.unwrap(cfg, w)
    n_vis = len([n for n in w if "vision_tower." in n or "multi_modal_projector." in n])
    gemma = tcfg["architectures"][0].startswith("Gemma")
    gelu = "ggml" if gemma else "exact"
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        says = open(m.path("WEIGHTFS.txt")).read()
        if not os.path.exists(g):
            raise Fail("no model.gguf; WEIGHTFS.txt: %s" % says[-300:])
        if n_vis and "the %d tensors of the vision tower and projector" % n_vis not in says:
            raise Fail("WEIGHTFS.txt does not say the %d vision tensors are left out" % n_vis)
        ids = [1] + [int(x) for x in np.random.default_rng(7).integers(3, tcfg["vocab_size"], 23)]
        out = os.path.join(TMP, "logits-wrap.npy")
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
    finally:
        m.unmount()
    b = np.asarray(hf_forward.logits(folder, ids, gelu=gelu))
    rel = float(np.abs(a - b).max() / np.abs(b).max())
    if rel > 1e-4 or (a.argmax(-1) != b.argmax(-1)).any():
        raise Fail("llama.cpp's logits against the torch forward: relative error %.2g" % rel)
    c = np.asarray(hf_forward.logits(folder, ids, gelu=gelu, config=DENSE_CASES[name]))
    rel_ctl = float(np.abs(a - c).max() / np.abs(c).max())
    if rel_ctl < 100 * max(rel, 1e-6):
        raise Fail("the reference with %r is as close (%.2g): the check would not see it" % (DENSE_CASES[name], rel_ctl))
    gg = os.path.join(d, "m.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", folder, gg], timeout=120)
    if rc != 0:
        raise Fail("convert: exit %d: %s" % (rc, err.strip()))
    m = Mount(gg, [])
    try:
        if not os.path.exists(m.path("hf/model.safetensors")):
            raise Fail("no hf/model.safetensors: %s" % [ln for ln in open(m.path("WEIGHTFS.txt")) if "hf/" in ln])
        import st_io
        got = st_io.load(m.path("hf/model.safetensors"))
        with open(m.path("hf/config.json")) as f:
            hcfg = json.load(f)
    finally:
        m.unmount()
    # a tied model's stored lm_head.weight (Gemma's) is one transformers ignores and the converter drops
    want = {k: v for k, v in tw.items() if not k.endswith("rotary_emb.inv_freq") and
            not (k == "lm_head.weight" and tcfg.get("tie_word_embeddings"))}
    if set(got) != set(want):
        raise Fail("hf/ names: only hf/'s %r, only the text model's %r" % (sorted(set(got) - set(want))[:4],
                                                                        sorted(set(want) - set(got))[:4]))
    bad = [k for k, v in want.items() if got[k].shape != v.shape or not np.array_equal(
        got[k].view(np.uint32), ((np.float32(1) + v) - np.float32(1) if gemma and k.endswith("norm.weight") else v).view(np.uint32))]
    if bad:
        raise Fail("%d hf/ tensors differ from the text model's, e.g. %s" % (len(bad), bad[0]))
    keys = ["hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads", "num_key_value_heads",
            "head_dim", "vocab_size", "rms_norm_eps", "rope_theta", "rope_local_base_freq", "sliding_window",
            "sliding_window_pattern", "query_pre_attn_scalar", "model_type", "tie_word_embeddings", "no_rope_layers",
            "embedding_multiplier", "attention_multiplier", "residual_multiplier", "logits_scaling",
            "partial_rotary_factor", "original_max_position_embeddings"]
    off = [(k, tcfg[k], hcfg.get(k)) for k in keys if k in tcfg and hcfg.get(k) != tcfg[k] and not (
        isinstance(tcfg[k], float) and hcfg.get(k) is not None and np.float32(hcfg[k]) == np.float32(tcfg[k]))]
    rs, hrs = tcfg.get("rope_scaling") or {}, hcfg.get("rope_scaling") or {}
    for f in ("long_factor", "short_factor"):   # Phi-3's longrope, read back from its rope factor tensors
        if f in rs and (len(hrs.get(f) or []) != len(rs[f]) or
                        any(np.float32(a) != np.float32(b) for a, b in zip(rs[f], hrs[f]))):
            off.append(("rope_scaling." + f, rs[f], hrs.get(f)))
    if hcfg.get("architectures") != tcfg["architectures"] or off:
        raise Fail("hf/config.json: architectures %r (want %r), %r" % (hcfg.get("architectures"),
                                                                     tcfg["architectures"], off))
    return "%slogits rel %.1e over %d positions (control %.1e); hf/ %s: %d tensors, %d fields" % (
        "%d vision tensors left out; " % n_vis if n_vis else "", rel, len(ids), rel_ctl, hcfg["architectures"][0],
        len(got), len(keys))


def gemma3_cut_case():
    """Gemma 3's embedding cut to its tokenizer's vocabulary (Gemma3Model.modify_tensors; the
    bytes are the converter's: digests): llama.cpp loads model.gguf (token_embd of the 32000
    tokens, the tied output too) and its logits are the torch forward's over the first 32000
    rows; the same checkpoint with a tokenizer.json and no tokenizer.model, whose cut (its
    len(model.vocab) + len(added_tokens)) is not its token count, has no model.gguf, naming why
    (the converter's file llama.cpp would refuse)."""
    import converter_cases
    import real_tokenizers
    import tiny_models
    folder = converter_cases.make("Tiny-Gemma3-Cut", new_dir("cut-"))
    ids = [1] + [int(x) for x in np.random.default_rng(7).integers(3, 32000, 23)]
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        if not os.path.exists(g):
            raise Fail("no model.gguf; WEIGHTFS.txt: %s" % open(m.path("WEIGHTFS.txt")).read()[-300:])
        import real_convert
        t = {x[0]: x for x in real_convert.digest(g)["tensors"]}
        if t["token_embd.weight"][2] != [64, 32000] or "output.weight" in t:
            raise Fail("token_embd.weight ne %r (want [64, 32000], tied)" % (t["token_embd.weight"][2],))
        out = os.path.join(TMP, "logits-cut.npy")
        client(["logits", g, out] + [str(i) for i in ids])
        a = np.load(out)
    finally:
        m.unmount()
    import hf_forward
    b = np.asarray(hf_forward.logits(folder, ids, gelu="ggml"))
    if a.shape[-1] != 32000 or b.shape[-1] != 32064:
        raise Fail("logits of %d (llama.cpp) and %d (torch) columns" % (a.shape[-1], b.shape[-1]))
    b = b[..., :32000]
    rel = float(np.abs(a - b).max() / np.abs(b).max())
    if rel > 1e-4 or (a.argmax(-1) != b.argmax(-1)).any():
        raise Fail("llama.cpp's logits against the torch forward: relative error %.2g" % rel)
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    bad = tiny_models.make(os.path.join(new_dir("cut2-"), "Tiny-Gemma3-Cut-BPE"), "gemma3", tdir, embd_rows=50300)
    rc, o, err, _ = run_cli(["info", bad], timeout=60)
    last = o.rstrip("\n").splitlines()[-1] if o else ""
    if rc != 0 or not last.startswith("model.gguf: none: tensor model.embed_tokens.weight: cut from 50300 to 50258 rows") \
            or "50257 tokens" not in last:
        raise Fail("tokenizer.json folder: weightfs info exit %d, last line %r" % (rc, last[:240]))
    return "logits rel %.1e over %d positions of 32000 tokens; %s" % (rel, len(ids), last[18:120])


LLAMA3_ROPE = {"rope_type": "llama3", "factor": 8.0, "low_freq_factor": 1.0, "high_freq_factor": 4.0,
               "original_max_position_embeddings": 700}


def llama3_roundtrip_case(kind):
    """A LlamaModel row other than llama's (SmolLM3, Granite, Mistral 3's text model) with Llama
    3's rope scaling: model.gguf has the converter's rope_freqs.weight, and its hf/ (through
    `weightfs convert`) says it as rope_scaling (rope_type llama3, factor, low/high_freq_factor,
    original_max_position_embeddings read back from the tensor as for Llama), with the text
    model's tensors and no rope_freqs; the same GGUF with one rope_freqs value that no llama3
    scaling gives has no hf/config.json, WEIGHTFS.txt naming the tensor."""
    import hf_forward
    import real_tokenizers
    import st_io
    import tiny_models
    key = "llama2" if kind == "mistral" else "gpt2"
    tdir = real_tokenizers.folder(key)
    if not tdir:
        skip_or_fail("tokenizer %s not installed (tests/clients/npm.sh)" % key)
    d = new_dir("l3rt-")
    folder = tiny_models.make(os.path.join(d, "Tiny-%s-L3" % kind), kind, tdir, wrap="old" if kind == "mistral" else None,
                              config={"rope_scaling": dict(LLAMA3_ROPE), "rope_theta": 10000.0})
    tcfg, tw = hf_forward.unwrap(*hf_forward.load_folder(folder))
    g = os.path.join(d, "m.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", folder, g], timeout=120)
    if rc != 0:
        raise Fail("convert: exit %d: %s" % (rc, err.strip()))
    kvs, infos, b, off = gguf_read(g)
    if not infos or infos[0][0] != "rope_freqs.weight":
        raise Fail("model.gguf's first tensor is %r, not rope_freqs.weight" % (infos[0][0] if infos else None))
    m = Mount(g, [])
    try:
        if not os.path.exists(m.path("hf/config.json")):
            raise Fail("no hf/config.json: %s" % [ln for ln in open(m.path("WEIGHTFS.txt")) if "hf/" in ln or ":" in ln][-2:])
        with open(m.path("hf/config.json")) as f:
            hcfg = json.load(f)
        got = st_io.load(m.path("hf/model.safetensors"))
    finally:
        m.unmount()
    want = {k for k in tw if not k.endswith("rotary_emb.inv_freq") and
            not (k == "lm_head.weight" and tcfg.get("tie_word_embeddings"))}
    if set(got) != want:
        raise Fail("hf/ names: only hf/'s %r, only the text model's %r" % (sorted(set(got) - want)[:4], sorted(want - set(got))[:4]))
    rs = hcfg.get("rope_scaling") or {}
    off_ = [(k, v, rs.get(k)) for k, v in LLAMA3_ROPE.items() if rs.get(k) != v]
    if off_ or hcfg.get("rope_theta") != 10000.0 or hcfg.get("architectures") != tcfg["architectures"]:
        raise Fail("hf/config.json: %s, rope_scaling %r, rope_theta %r" % (hcfg.get("architectures"), off_, hcfg.get("rope_theta")))
    # one value of rope_freqs no llama3 scaling gives: hf/ leaves config.json out, naming it
    o = off + infos[0][3]   # value 0 (1: the shortest wavelength is never scaled) as 0.5
    bb = bytearray(b)
    bb[o:o + 4] = struct.pack("<f", 0.5)
    g2 = os.path.join(d, "bad.gguf")
    with open(g2, "wb") as f:
        f.write(bytes(bb))
    m = Mount(g2, [])
    try:
        says = open(m.path("WEIGHTFS.txt")).read()
        if os.path.exists(m.path("hf/config.json")) or "rope_freqs.weight" not in says:
            raise Fail("a rope_freqs of no llama3 scaling: hf/config.json %s; WEIGHTFS.txt %s" % (
                os.path.exists(m.path("hf/config.json")), "names it" if "rope_freqs.weight" in says else "does not name it"))
    finally:
        m.unmount()
    return "%s: rope_scaling %s; %d tensors; a changed value refused" % (hcfg["architectures"][0], json.dumps(rs), len(got))


def wrapper_twice_case():
    """A multimodal checkpoint with a tensor in both layouts (language_model.model.X and
    model.language_model.X, one name once "language_model." is out): no model.gguf, naming it."""
    import converter_cases
    import st_io
    folder = converter_cases.make("Tiny-Gemma3-VL", new_dir("wrap2-"))
    p = os.path.join(folder, "model.safetensors")
    w = st_io.load(p)
    w["model.language_model.norm.weight"] = w["language_model.model.norm.weight"]
    st_io.save(w, p)
    rc, out, err, _ = run_cli(["info", folder], timeout=60)
    last = out.rstrip("\n").splitlines()[-1] if out else ""
    if rc != 0 or not last.startswith("model.gguf: none: ") or "output_norm.weight" not in last:
        raise Fail("weightfs info exit %d, last line %r" % (rc, last[:200]))
    return last[:120]


def logits_match(mp_gguf, folder, ids):
    import hf_forward
    out = os.path.join(TMP, "logits.npy")
    client(["logits", mp_gguf, out] + [str(i) for i in ids])
    a = np.load(out)
    b = np.asarray(hf_forward.logits(folder, ids))
    rel = float(np.abs(a - b).max() / np.abs(b).max())
    top = float((a.argmax(-1) == b.argmax(-1)).mean())
    return rel, top


def tok_match(mp_gguf, tok_json, key):
    corpus = os.path.join(CLIENTS, "corpus.json")
    with open(corpus, encoding="utf-8") as f:
        texts = json.load(f)
    mine = json.loads(client(["tokenize", mp_gguf, corpus]))
    hf = hf_tokenize(tok_json, corpus)
    bad = []
    for s, a, b in zip(texts, mine, hf):
        # llama.cpp applies no NFC normalizer (Qwen's tokenizer.json has one), and it
        # makes any token spelled </s> a control token: both llama.cpp's, not the file's
        if a != b and not (key.startswith("qwen") and (unicodedata.normalize("NFC", s) != s or "</s>" in s)):
            bad.append(s)
    if bad:
        raise Fail("%d of %d strings tokenize differently, e.g. %r" % (len(bad), len(texts), bad[:3]))
    return "%d strings" % len(texts)


def one_case(kind, key, folders):
    import real_tokenizers
    import tiny_models
    tdir = real_tokenizers.folder(key)
    if not tdir:
        skip_or_fail("tokenizer %s not installed (tests/clients/npm.sh)" % key)
    folder = tiny_models.make(os.path.join(new_dir("hf-"), "tiny-" + kind.replace("phi3", "p3")), kind, tdir)
    folders[kind] = folder
    m = Mount(folder, ["-o", "gguf=f32"])
    try:
        g = m.path("model.gguf")
        if not os.path.exists(g):
            raise Fail("no model.gguf; WEIGHTFS.txt: %s" % open(m.path("WEIGHTFS.txt")).read()[-400:])
        ids = max(json.loads(client(["tokenize", g, os.path.join(CLIENTS, "corpus.json")])), key=len)[:24]

        def logits():
            rel, top = logits_match(g, folder, ids)
            if rel > 1e-4 or top < 1:
                raise Fail("llama.cpp's logits against HF's: relative error %.2g, top-1 agreement %.2f" % (rel, top))
            return "rel %.1e over %d positions" % (rel, len(ids))
        check("gguf: %s: llama.cpp loads model.gguf from the mount; logits = HF forward pass" % kind, logits)
        check("gguf: %s: llama.cpp's tokens on model.gguf = HF tokenizers' on tokenizer.json" % kind, tok_match, g,
              os.path.join(folder, "tokenizer.json"), key)

        def convert_same():
            out = os.path.join("/dev/shm" if os.path.isdir("/dev/shm") else TMP,
                               "wf-%d-%s.gguf" % (os.getpid(), kind))  # runs side by side each have their own
            rc, _, err, _ = run_cli(["convert", "--force", "-o", "gguf=f32", folder, out], timeout=120)
            try:
                if rc != 0:
                    raise Fail("convert: exit %d: %s" % (rc, err.strip()))
                with open(out, "rb") as f1, open(g, "rb") as f2:
                    if f1.read() != f2.read():
                        raise Fail("convert's OUT.gguf differs from the mount's model.gguf")
                a = client(["greedy", g, "8"] + [str(i) for i in ids[:6]])
                b = client(["greedy", out, "8"] + [str(i) for i in ids[:6]])
                if a != b:
                    raise Fail("greedy from the mount %s, from /dev/shm %s" % (a.strip(), b.strip()))
                return "greedy %s" % a.strip()
            finally:
                if os.path.exists(out):
                    os.unlink(out)
        check("gguf: %s: convert OUT.gguf = model.gguf; greedy decoding from both the same" % kind, convert_same)
    finally:
        m.unmount()


def types_case(folder):
    """-o gguf=f16 and bf16: llama.cpp runs them; logits near the F32 ones."""
    import hf_forward
    ids = [1, 5, 9, 200, 7]
    b = np.asarray(hf_forward.logits(folder, ids))
    for t, tol in (("f16", 2e-2), ("bf16", 1e-1), ("auto", 2e-2)):
        m = Mount(folder, ["-o", "gguf=" + t])
        try:
            out = os.path.join(TMP, "lt.npy")
            client(["logits", m.path("model.gguf"), out] + [str(i) for i in ids])
            rel = float(np.abs(np.load(out) - b).max() / np.abs(b).max())
            kv = {k: v for k, _, v in gguf_read(m.path("model.gguf"))[0]}
            want = {"f16": 1, "bf16": 32, "auto": 1}[t]  # the tiny models are F32: auto is F16
            if kv.get("general.file_type") != want or rel > tol:
                raise Fail("-o gguf=%s: file_type %r, relative error %.2g" % (t, kv.get("general.file_type"), rel))
        finally:
            m.unmount()
    return "f16, bf16, auto"


def broken_case(folder):
    """model.gguf left out, with the reason in WEIGHTFS.txt; the rest mounts as before."""
    cases = [("config.json", b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": "two"', "config.json"),
             ("config.json", b'{"architectures": ["LlamaForCausalLM"], "num_hidden_layers": -2}', "config.json"),
             ("tokenizer.json", b'{"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}', "tokenizer.json"),
             ("tokenizer.json", b"[" * 100000, "tokenizer.json")]
    for name, text, says in cases:
        d = new_dir("hfbad-")
        for f in os.listdir(folder):
            shutil.copy(os.path.join(folder, f), d)
        with open(os.path.join(d, name), "wb") as f:
            f.write(text)
        m = Mount(d, [])
        try:
            if os.path.exists(m.path("model.gguf")):
                raise Fail("%s broken (%r...): model.gguf is still there" % (name, text[:40]))
            summary = open(m.path("WEIGHTFS.txt")).read()
            line = [ln for ln in summary.splitlines() if "No model.gguf" in ln]
            if not line or says not in line[0]:
                raise Fail("%s broken: WEIGHTFS.txt says %r" % (name, line))
            if not os.path.exists(m.path("model.safetensors")) or not os.listdir(m.path("model")):
                raise Fail("the rest of the mount is missing")
        finally:
            m.unmount()
        rc, out, err, _ = run_cli(["info", d], timeout=60)
        last = out.rstrip("\n").splitlines()[-1] if out else ""
        if rc != 0 or not last.startswith("model.gguf: none: ") or says not in last:
            raise Fail("%s broken: weightfs info exit %d, last line %r" % (name, rc, last[:200]))
    return "%d broken folders; weightfs info's last line says why" % len(cases)


def unknown_tensor_case(folder):
    """A Llama folder with a tensor the llama row has no GGUF name for (a Mixtral expert's):
    no model.gguf (the converter refuses it too), WEIGHTFS.txt names the tensor; the rotary
    inv_freq buffer the converter skips stays skipped (model.gguf made without it)."""
    import st_io
    res = []
    for name, made in (("model.layers.0.mlp.experts.0.w1.weight", False),
                       ("model.layers.0.self_attn.rotary_emb.inv_freq", True)):
        d = new_dir("hfxt-")
        for f in os.listdir(folder):
            shutil.copy(os.path.join(folder, f), d)
        st = st_io.load(os.path.join(d, "model.safetensors"))
        st[name] = np.ones((4, 8) if not made else (4,), np.float32)
        st_io.save(st, os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        m = Mount(d, [])
        try:
            summary = open(m.path("WEIGHTFS.txt")).read()
            line = [ln for ln in summary.splitlines() if "No model.gguf" in ln]
            if made:
                kvs, infos, b, ds = gguf_read(m.path("model.gguf"))
                if any("inv_freq" in n or "rotary" in n for n, _, _, _ in infos):
                    raise Fail("%s written to model.gguf" % name)
                res.append("%s skipped" % name)
                continue
            if os.path.exists(m.path("model.gguf")):
                raise Fail("%s: model.gguf is there (the tensor dropped)" % name)
            if not line or "tensor '%s': no GGUF name for llama" % name not in line[0]:
                raise Fail("WEIGHTFS.txt says %r" % line)
            res.append(line[0].strip()[:120])
        finally:
            m.unmount()
    return "; ".join(res)


def hostile_variants(folder):
    """(label, file, bytes, what the refusal must name) of folders the converter reads
    otherwise than cJSON would (docs/security.md): keys given twice (json.load keeps the
    last), a UTF-8 byte order mark (json.load refuses it), num_key_value_heads 0 (its q/k
    permutation divides by it), a config.json over the 64 MiB a small file may have."""
    with open(os.path.join(folder, "config.json"), "rb") as f:
        cfg = f.read()
    with open(os.path.join(folder, "tokenizer.json"), "rb") as f:
        tok = f.read()
    with open(os.path.join(folder, "tokenizer_config.json"), "rb") as f:
        tcfg = f.read()
    c = json.loads(cfg)
    heads = c["num_attention_heads"]
    assert cfg.lstrip().startswith(b"{") and tok.lstrip().startswith(b"{") and b'"rope_type"' in cfg

    def first(text, extra):  # extra entries before the file's own: theirs come last
        i = text.index(b"{") + 1
        return text[:i] + extra + b", " + text[i:]
    kv0 = dict(c, num_key_value_heads=0)
    tc = json.loads(tcfg)
    tkey = "add_bos_token" if "add_bos_token" in tc else "bos_token" if "bos_token" in tc else next(iter(tc))
    tother = (not tc[tkey]) if isinstance(tc[tkey], bool) else "<not-%s>" % tkey
    return [
        ("config.json: num_attention_heads given twice", "config.json",
         first(cfg, b'"num_attention_heads": %d' % (heads * 2)), "num_attention_heads"),
        ("config.json: architectures NoSuch, then Llama", "config.json",
         first(cfg, b'"architectures": ["NoSuchForCausalLM"]'), "architectures"),
        ("config.json: rope_scaling's rope_type given twice", "config.json",
         cfg.replace(b'"rope_type"', b'"rope_type": "linear", "rope_type"', 1), "rope_type"),
        ("tokenizer.json: added_tokens given twice", "tokenizer.json", first(tok, b'"added_tokens": []'),
         "added_tokens"),
        ("tokenizer_config.json: %s given twice" % tkey, "tokenizer_config.json",
         first(tcfg, b'"%s": %s' % (tkey.encode(), json.dumps(tother).encode())), tkey),
        ("config.json begins with a UTF-8 BOM", "config.json", b"\xef\xbb\xbf" + cfg, "byte order mark"),
        ("tokenizer.json begins with a UTF-8 BOM", "tokenizer.json", b"\xef\xbb\xbf" + tok, "byte order mark"),
        ("config.json: num_key_value_heads 0", "config.json", json.dumps(kv0).encode(), "num_key_value_heads"),
        ("config.json of 65 MiB", "config.json", cfg + b" " * (65 << 20), "bytes, more than"),
    ]


def converter_reads_case(folder):
    """Each hostile variant against the converter's own reading of it (ref_convert.py reads
    config.json and the tokenizer files with json.load): model.gguf (weightfs convert's copy)
    is the converter's file, or there is none and the reason names the file and what is wrong;
    never a file made from other values than the converter reads."""
    import ref_convert
    done = []
    for label, name, text, says in hostile_variants(folder):
        d = new_dir("hfread-")
        for f in os.listdir(folder):
            shutil.copy(os.path.join(folder, f), d)
        with open(os.path.join(d, name), "wb") as f:
            f.write(text)
        ref = os.path.join(d, "..", os.path.basename(d) + "-ref.gguf")
        try:
            ref_convert.convert(d, ref, outtype="f32")
            want = open(ref, "rb").read()
        except (ValueError, KeyError, ZeroDivisionError, TypeError):  # json.JSONDecodeError is a ValueError
            want = None
        out = os.path.join(d, "..", os.path.basename(d) + "-wf.gguf")
        rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", d, out], timeout=120)
        if rc == 0:
            got = open(out, "rb").read()
            if want is None:
                raise Fail("%s: the converter fails, weightfs makes model.gguf" % label)
            if got != want:
                a, b = gguf_read(out), gguf_read(ref)
                ka, kb = dict((k, v) for k, _, v in a[0]), dict((k, v) for k, _, v in b[0])
                diff = [k for k in kb if k not in KV_KNOWN and ka.get(k) != kb[k]][:4]
                if diff or a[1] != b[1]:
                    raise Fail("%s: model.gguf is made from other values than the converter reads: keys %r, "
                               "tensors %r" % (label, diff, [x for x in a[1] if x not in b[1]][:2]))
            done.append(label + ": the converter's")
            continue
        line = err.strip().splitlines()[-1] if err.strip() else ""
        if len(err.strip().splitlines()) != 1 or name not in line or says not in line or "missing" in line:
            raise Fail("%s: convert exit %d, says %r" % (label, rc, err.strip()[-300:]))
        rc, out_info, _, _ = run_cli(["info", d], timeout=120)
        last = out_info.rstrip("\n").splitlines()[-1] if out_info else ""
        if not last.startswith("model.gguf: none: ") or says not in last:
            raise Fail("%s: weightfs info's last line %r" % (label, last[:200]))
        done.append(label)
        shutil.rmtree(d)
    return "; ".join(done)


def rope_odd_case(folder):
    """Llama 3 rope_scaling with an odd head_dim (7): torch.arange(0, 7, 2) gives the
    converter 4 frequencies; rope_freqs.weight as ref_convert.py computes it."""
    d = new_dir("hfrope-")
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), d)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    if (cfg.get("rope_scaling") or {}).get("rope_type") != "llama3":
        raise Fail("the tiny llama has no Llama 3 rope_scaling: the case tests nothing")
    cfg["head_dim"] = 7
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    out = os.path.join(d, "..", os.path.basename(d) + "-wf.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", d, out], timeout=120)
    if rc != 0:
        raise Fail("convert: exit %d: %s" % (rc, err.strip()))
    _, infos, _, _ = gguf_read(out)
    if infos[0][0] != "rope_freqs.weight" or infos[0][1] != [4]:
        raise Fail("rope_freqs.weight: %r, want 4 frequencies" % (infos[0][:2],))
    return compare_ref(out, d, "f32")


def generic_case(folder):
    """An architecture llama.cpp has none of: model.gguf holds every tensor under its own
    name as stored, config.json and __metadata__ as key/values; WEIGHTFS.txt says so."""
    import st_io
    d = new_dir("hfany-")
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), d)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["NoSuchForCausalLM"]
    cfg["model_type"] = "nosuch"
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    m = Mount(d, [])
    try:
        summary = open(m.path("WEIGHTFS.txt")).read()
        if "every tensor under its own name" not in summary or "NoSuchForCausalLM" not in summary:
            raise Fail("WEIGHTFS.txt: %r" % [ln for ln in summary.splitlines() if "gguf" in ln])
        kvs, infos, b, ds = gguf_read(m.path("model.gguf"))
        kv = {k: v for k, _, v in kvs}
        if kv.get("general.architecture") != b"nosuch" or kv.get("hf.config.num_hidden_layers") != 2 or \
                kv.get("hf.config.architectures") != b'["NoSuchForCausalLM"]' or "tokenizer.ggml.tokens" not in kv:
            raise Fail("key/values: %r" % {k: v for k, v in kv.items() if not k.startswith("tokenizer")})
        src = st_io.load(os.path.join(d, "model.safetensors"))
        if sorted(n for n, _, _, _ in infos) != sorted(src):
            raise Fail("tensors: %r" % [n for n, _, _, _ in infos][:5])
        for n, ne, ty, off in infos:
            a = src[n]
            got = np.frombuffer(b, a.dtype, a.size, ds + off).reshape(a.shape)
            if ty != 0 or list(ne) != list(a.shape[::-1]) or not np.array_equal(got.view(np.uint32), a.view(np.uint32)):
                raise Fail("tensor %s: type %d, ne %r, or bytes differ" % (n, ty, ne))
        return "%d tensors, %d keys" % (len(infos), len(kvs))
    finally:
        m.unmount()


def phi3_long_case(folder):
    """Phi-3 with long-context rope: rope_factors_long/short first, the config's values as
    float32, phi3.rope.scaling.attn_factor right after general.architecture; llama.cpp loads it."""
    import math
    d = new_dir("hfphi-")
    for f in os.listdir(folder):
        shutil.copy(os.path.join(folder, f), d)
    with open(os.path.join(folder, "config.json")) as f:
        cfg = json.load(f)
    half = int(cfg.get("partial_rotary_factor", 1.0) * cfg["hidden_size"]) // cfg["num_attention_heads"] // 2
    cfg["max_position_embeddings"] = 131072
    cfg["original_max_position_embeddings"] = 4096
    cfg["rope_scaling"] = {"type": "longrope", "long_factor": [1.0 + 0.37 * i for i in range(half)],
                           "short_factor": [1.0 + 0.011 * i for i in range(half)]}
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    m = Mount(d, ["-o", "gguf=f32"])
    try:
        kvs, infos, b, ds = gguf_read(m.path("model.gguf"))
        if [k for k, _, _ in kvs[:2]] != ["general.architecture", "phi3.rope.scaling.attn_factor"]:
            raise Fail("first keys: %r" % [k for k, _, _ in kvs[:3]])
        want = np.float32(math.sqrt(1 + math.log(131072 / 4096) / math.log(4096)))
        if np.float32(kvs[1][2]) != want:
            raise Fail("attn_factor %r, want %r" % (kvs[1][2], want))
        for (n, ne, ty, off), key in zip(infos[:2], ("long_factor", "short_factor")):
            got = np.frombuffer(b, "<f4", half, ds + off)
            if n != "rope_factors_%s.weight" % key.split("_")[0] or ty != 0 or \
                    not np.array_equal(got, np.array(cfg["rope_scaling"][key], np.float32)):
                raise Fail("%s: %r %r" % (n, ne, got[:4]))
        client(["greedy", m.path("model.gguf"), "4", "1", "2", "3"])
        return "attn_factor %.6f, %d factors each" % (want, half)
    finally:
        m.unmount()


def bf16_case(folder):
    """A BF16 checkpoint: auto keeps BF16; each 2-D weight is its stored bits (q/k rows
    permuted), but for NaNs, which get gguf-py's quiet bit (BF16.quantize_blocks)."""
    import st_io
    d = new_dir("hfbf16-")
    for f in os.listdir(folder):
        if f != "model.safetensors":
            shutil.copy(os.path.join(folder, f), d)
    w = st_io.load(os.path.join(folder, "model.safetensors"))
    name = "model.layers.0.mlp.down_proj.weight"
    bits = (w[name].view(np.uint32) >> 16).astype(np.uint16).reshape(-1)
    # signalling and quiet NaNs of both signs, infinities, -0 and a subnormal, in every lane
    special = np.array([0x7F81, 0xFF81, 0x7FC0, 0xFFFF, 0x7F80, 0xFF80, 0x8000, 0x0001, 0x7F8F, 0x3F80], np.uint16)
    bits[:len(special)] = special
    bits[1001:1001 + len(special)] = special
    w[name] = (bits.astype(np.uint32) << 16).view(np.float32).reshape(w[name].shape)
    st_io.save(w, os.path.join(d, "model.safetensors"), dtypes={k: "BF16" for k in w})
    m = Mount(d, [])
    try:
        kvs, infos, b, ds = gguf_read(m.path("model.gguf"))
        kv = {k: v for k, _, v in kvs}
        if kv.get("general.file_type") != 32:
            raise Fail("general.file_type %r, want 32 (auto from BF16)" % kv.get("general.file_type"))
        info = {n: (ne, ty, off) for n, ne, ty, off in infos}
        ne, ty, off = info["blk.0.ffn_down.weight"]
        got = np.frombuffer(b, "<u2", bits.size, ds + off)
        nan = ((bits & 0x7F80) == 0x7F80) & ((bits & 0x7F) != 0)
        want = np.where(nan, bits | 0x40, bits)
        if ty != 30 or not np.array_equal(got, want):
            bad = np.nonzero(got != want)[0][:5]
            raise Fail("ffn_down: type %d; differs at %r: %r vs %r" % (ty, bad, got[bad], want[bad]))
        return "%d NaNs quieted, the rest as stored" % int(nan.sum())
    finally:
        m.unmount()


def group_gguf():
    npm_dir()
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "converter",
                           "digests.json"), encoding="utf-8") as f:
        digests = json.load(f)
    import converter_cases
    for name in digests["cases"]:
        if converter_cases.CASES.get(name, (0, 0, {}))[2].get("fp8"):
            check("gguf: %s: model.gguf of the FP8 checkpoint = the converter's file of it dequantized "
                  "(digests)" % name, converter_case, name, digests,
                  lambda f: converter_cases.fp8_folder(f, new_dir("fp8-")))
            continue
        check("gguf: %s: model.gguf = llama.cpp's convert_hf_to_gguf.py's file (digests)" % name,
              converter_case, name, digests)
    for name in DENSE_CASES:
        check("gguf: %s: llama.cpp's logits on model.gguf = torch forward; HF -> model.gguf -> hf/ the same "
              "(text) model" % name, dense_case, name)
    check("gguf: a multimodal checkpoint with a tensor in both layouts: no model.gguf, naming it", wrapper_twice_case)
    for kind in ("smollm3", "granite", "mistral"):
        check("gguf: %s with Llama 3 rope scaling: HF -> model.gguf (rope_freqs) -> hf/: rope_scaling llama3 back, "
              "no rope_freqs tensor; a rope_freqs of no llama3 scaling: no config.json" % kind, llama3_roundtrip_case, kind)
    check("gguf: Gemma 3's embedding cut to its tokenizer: llama.cpp loads it, logits = torch forward's; a cut "
          "llama.cpp would refuse leaves model.gguf out", gemma3_cut_case)
    for name in MOE_CASES:
        check("gguf: %s: llama.cpp runs model.gguf (experts stacked on read); logits = torch forward" % name,
              moe_case, name)
    for name in MOE_CASES:
        check("gguf: %s: HF folder -> model.gguf -> its hf/: the same tensors and expert fields" % name,
              moe_roundtrip_case, name)
    for name in GPTOSS_CASES:
        check("gguf: %s: llama.cpp runs model.gguf (sinks, SWA, YaRN, SWIGLU-OAI); logits = torch forward" % name,
              gptoss_case, name)
    check("gguf: gpt-oss: expert counts that disagree leave model.gguf out, naming the tensor and field",
          gptoss_bad_case)
    check("gguf: gpt-oss: experts read transposed and split from gate_up_proj/down_proj: numpy's; any range",
          gptoss_ranges_case)
    for name in ("Tiny-GptOss-BF16", "Tiny-GptOss-MXFP4"):
        check("gguf: %s: HF folder -> model.gguf -> its hf/ (GptOssForCausalLM): the same tensors and config; "
              "a torch forward over hf/ = llama.cpp's logits" % name, gptoss_hf_case, name)
    check("gguf: Qwen2/3-MoE in transformers 5's fused form: model.gguf byte for byte the per-expert form's, "
          "llama.cpp runs it; a broken fused form, and other families' (the converter stalls), no model.gguf",
          moe_fused_case)
    check("gguf: Mixtral: experts that do not add up leave model.gguf out, naming why", mixtral_bad_case)
    check("gguf: GLM-4.5: experts, dense layers and MTP block that do not add up leave model.gguf out, naming why",
          glm_bad_case)
    check("gguf: DeepSeek: experts or MLA shapes that do not add up leave model.gguf out, naming why",
          deepseek_bad_case)
    check("gguf: DeepSeek: attn_k_b/attn_v_b read from kv_b_proj: numpy's split and transpose; any range; "
          "kv_b_proj back from a Q8_0 GGUF",
          deepseek_ranges_case)
    folders = {}
    for kind, key in CASES:
        check("gguf: %s with the %s tokenizer: mounted and checked" % (kind, key), one_case, kind, key, folders)
    if "llama" in folders:
        check("gguf: -o gguf=f16/bf16/auto: llama.cpp runs them", types_case, folders["llama"])
        check("gguf: broken config.json or tokenizer.json: no model.gguf, WEIGHTFS.txt says why", broken_case,
              folders["llama"])
        check("gguf: a tensor the architecture's row does not know: no model.gguf, WEIGHTFS.txt names it",
              unknown_tensor_case, folders["llama"])
        check("gguf: an architecture llama.cpp has none of: every tensor as stored, config.json as keys",
              generic_case, folders["llama"])
        check("gguf: keys given twice, a byte order mark, no kv heads, a 65 MiB config.json: the converter's "
              "file or none, never one made from other values", converter_reads_case, folders["llama"])
        check("gguf: Llama 3 rope with an odd head_dim: as many frequencies as torch.arange gives",
              rope_odd_case, folders["llama"])
        check("gguf: a BF16 checkpoint: BF16 kept, NaNs quieted as gguf-py does", bf16_case, folders["llama"])
    if "phi3" in folders:
        check("gguf: phi3 long-context rope: rope_factors and attn_factor", phi3_long_case, folders["phi3"])

    def not_for_gguf():
        from wf_harness import GGML
        m = Mount(os.path.join(GGML, "mixed_llama_tiny.gguf"), [])
        try:
            if os.path.exists(m.path("model.gguf")):
                raise Fail("a GGUF source shows model.gguf")
        finally:
            m.unmount()
    check("gguf: a GGUF source has no model.gguf", not_for_gguf)
