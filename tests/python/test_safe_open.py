#!/usr/bin/python3
"""test_safe_open.py - weightfs.safe_open, get_slice, stack and the typing
of the Python module, checked against Model.get (m[name], itself checked
bit for bit against the oracles by test_module.py) and against torch.

    WEIGHTFS_LIB=build/libweightfs.so.0 /usr/bin/python3 tests/python/test_safe_open.py

torch tests fail without torch unless WEIGHTFS_NO_TORCH=1 says it is known
to be missing: they are then skipped, said so, and not counted as passed.  Prints "N passed, M failed"; exits 1 on failure.
"""
import os
import sys
import tempfile
import typing

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import test_module as tm  # noqa: E402  (its helpers, and weightfs from python/)
from test_module import check, same_bits, write_gguf, write_st  # noqa: E402

weightfs = tm.weightfs
ORACLE, ST_ORACLE = tm.ORACLE, tm.ST_ORACLE
DEMO = os.path.join(ORACLE, "mixed_llama_tiny.gguf")
HF_DEMO = os.path.join(tm.ROOT, "tests", "data", "demo", "demo-llama.gguf")  # hf/ has a config.json
TESTS = []
TORCH_TESTS = set()


def test(fn):
    TESTS.append(fn)
    return fn


def needs_torch(fn):
    TORCH_TESTS.add(fn.__name__)
    return fn


def torch_or_none():
    try:
        import torch
        return torch
    except ImportError:
        if os.environ.get("WEIGHTFS_NO_TORCH") == "1":
            return None
        raise


def models():
    """The demo model and every st-oracle file: every stored type."""
    yield DEMO
    for f in sorted(os.listdir(ST_ORACLE)):
        if f.endswith(".safetensors"):
            yield os.path.join(ST_ORACLE, f)


# numpy dtype safe_open gives by default, by stored type
NP_DEFAULT = {"F16": "float16", "F64": "float64", "BF16": "float32"}


@test
def np_default_dtypes_match_model_get():
    n = 0
    for path in models():
        with weightfs.open(path) as m, weightfs.safe_open(path, framework="np") as f:
            check(f.keys() == m.keys(), "%s: keys" % path)
            for name in m.keys():
                info = m.info(name)
                if not info["readable"]:
                    continue
                a = f.get_tensor(name)
                want = {"F16": "f16", "F64": "stored"}.get(info["type"], "f32")
                check(same_bits(a, m.get(name, dtype=want)), "%s: %s" % (path, name))
                if info["type"] in NP_DEFAULT:
                    check(a.dtype == np.dtype(NP_DEFAULT[info["type"]]), "%s: %s dtype %s" % (path, name, a.dtype))
                elif info["dtype"] in ("float32",):
                    check(a.dtype == np.float32, "%s: %s is %s" % (path, name, a.dtype))
                check(list(a.shape) == list(info["shape"]), "%s: %s shape" % (path, name))
                n += 1
    check(n > 100, "tensors compared: %d" % n)


@test
def np_explicit_dtypes():
    with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO, framework="np", dtype="bf16") as f:
        for name in m.keys():
            a = f.get_tensor(name)
            check(a.dtype == np.uint16 and same_bits(a, m.get(name, dtype="bf16")), "bf16 bits: " + name)
    with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO, dtype=np.float16) as f:
        for name in m.keys():
            check(same_bits(f.get_tensor(name), m.get(name, dtype="f16")), "np.float16: " + name)
    for bad in ("f8", np.int32, 3):
        try:
            weightfs.safe_open(DEMO, dtype=bad)
            check(False, "dtype %r accepted" % (bad,))
        except ValueError as e:
            check("unknown dtype" in str(e), str(e))


@test
@needs_torch
def pt_dtypes_and_values_against_torch():
    torch = torch_or_none()
    check(torch is not None, "torch")
    seen = set()
    for path in models():
        with weightfs.open(path) as m, weightfs.safe_open(path, framework="pt") as f:
            for name in m.keys():
                info = m.info(name)
                if not info["readable"] or info["dtype"] in ("uint16", "uint32", "uint64"):
                    continue
                t = f.get_tensor(name)
                check(isinstance(t, torch.Tensor), "%s: a torch tensor" % name)
                check(list(t.shape) == list(info["shape"]), "%s: shape" % name)
                ty = info["type"]
                seen.add(ty)
                f32 = m[name]
                if ty == "BF16":
                    check(t.dtype == torch.bfloat16, "%s: %s" % (name, t.dtype))
                    # bfloat16 -> float32 is exact: torch's widening must give the decode
                    check(same_bits(t.float().numpy(), f32), "%s: bf16 values" % name)
                elif ty == "F16":
                    check(t.dtype == torch.float16, "%s: %s" % (name, t.dtype))
                    check(same_bits(t.float().numpy(), f32), "%s: f16 values" % name)
                elif ty == "F64":
                    check(t.dtype == torch.float64, "%s: %s" % (name, t.dtype))
                    check(same_bits(t.numpy(), m.get(name, dtype="stored")), "%s: f64" % name)
                elif info["dtype"] == "float32":
                    check(t.dtype == torch.float32, "%s: %s" % (name, t.dtype))
                    check(same_bits(t.numpy(), f32), "%s: f32 values" % name)
                else:
                    check(same_bits(t.numpy(), f32), "%s: %s values" % (name, info["dtype"]))
    check({"BF16", "F16", "F32", "F64", "Q4_K", "Q8_0", "BOOL", "I64"} <= seen, "types seen: %s" % sorted(seen))


@test
@needs_torch
def pt_explicit_dtype_rounds_as_torch():
    torch = torch_or_none()
    check(torch is not None, "torch")
    for dt, name in ((torch.bfloat16, "bf16"), ("bf16", "bf16"), (torch.float16, "f16")):
        with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO, framework="pt", dtype=dt) as f:
            for n in m.keys():
                t = f.get_tensor(n)
                ref = torch.from_numpy(m[n]).to(torch.bfloat16 if name == "bf16" else torch.float16)
                check(t.dtype == ref.dtype, "%s: %s" % (n, t.dtype))
                nan = torch.isnan(ref)
                check(torch.equal(torch.isnan(t), nan), "%s: NaN positions" % n)
                # torch gives every NaN one payload; weightfs keeps the sign and top bits
                check(torch.equal(t[~nan], ref[~nan]), "%s: %s values as torch rounds them" % (n, name))


@test
def get_slice_reads_only_its_rows():
    calls = []
    real = weightfs._lib

    class Spy:
        def __getattr__(self, attr):
            fn = getattr(real, attr)
            if attr != "weightfs_read_parallel":
                return fn

            def spy(*args):
                calls.append((args[3], args[4]))
                return fn(*args)
            return spy
    with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO) as f:
        full = m["token_embd.weight"]
        row = full[0].nbytes
        s = f.get_slice("token_embd.weight")
        check(s.get_shape() == [320, 64] and s.get_dtype() == "Q8_0" and len(s) == 320, repr(s))
        weightfs._lib = Spy()
        try:
            for key, rows in (((slice(10, 20)), (10, 20)), ((slice(10, 20), slice(3, 9)), (10, 20)),
                              (5, (5, 6)), (-1, (319, 320)), ((slice(-4, None), 7), (316, 320)),
                              ((slice(30, 10, -5)), (15, 31)), (slice(7, 7), (7, 7))):
                del calls[:]
                got = s[key]
                check(same_bits(got, full[key]), "[%s]" % (key,))
                want = [(rows[0] * row, (rows[1] - rows[0]) * row)] if rows[1] > rows[0] else []
                check(calls == want, "[%s] read %s, not %s" % (key, calls, want))
        finally:
            weightfs._lib = real
        for key in (Ellipsis, (Ellipsis, slice(2, 5)), slice(None), [1, 3]):
            check(same_bits(s[key], full[key]), "[%s]" % (key,))
        for bad in (320, -321):
            try:
                s[bad]
                check(False, "index %d accepted" % bad)
            except IndexError:
                pass
        scalar_free = f.get_slice("rope_freqs.weight")
        check(same_bits(scalar_free[2:5], m["rope_freqs.weight"][2:5]), "1-d slice")
        try:
            f.get_slice("no.such.tensor")
            check(False, "unknown name accepted")
        except KeyError:
            pass


@test
@needs_torch
def get_slice_in_torch():
    torch = torch_or_none()
    check(torch is not None, "torch")
    with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO, framework="pt") as f:
        t = f.get_slice("blk.1.attn_q.weight")[8:16, 0:32]   # BF16: stays bfloat16
        check(t.dtype == torch.bfloat16 and tuple(t.shape) == (8, 32), "%s %s" % (t.dtype, t.shape))
        check(same_bits(t.float().numpy(), m["blk.1.attn_q.weight"][8:16, 0:32]), "bf16 slice values")
        t = f.get_slice("output.weight")[1:3]
        check(t.dtype == torch.float32 and same_bits(t.numpy(), m["output.weight"][1:3]), "q8_0 rows")


def write_experts(path, n, rows, cols):
    """n Q8_0 tensors [rows, cols] and one of another shape; returns their f32."""
    rng = np.random.default_rng(11)
    tensors, exp = [], []
    nblk = rows * cols // 32
    for k in range(n):
        blocks = np.empty(nblk, dtype=[("d", "<f2"), ("q", "i1", 32)])
        blocks["d"] = rng.uniform(-1, 1, nblk).astype(np.float16)
        blocks["q"] = rng.integers(-128, 128, (nblk, 32), dtype=np.int8)
        tensors.append(("blk.0.ffn_up_exps.%d" % k, [cols, rows], 8, blocks.tobytes()))
        exp.append((blocks["d"].astype(np.float32)[:, None] * blocks["q"].astype(np.float32)).reshape(rows, cols))
    tensors.append(("other", [32, 2], 8, tensors[0][3][:2 * 34]))
    write_gguf(path, tensors)
    return exp


@test
def stack_decodes_into_one_array():
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "experts.gguf")
        # 6 experts of 1 MiB of float32 each: more tensors than threads,
        # and fewer (2 of them on 4 threads: each split)
        exp = write_experts(path, 6, 512, 512)
        names = ["blk.0.ffn_up_exps.%d" % k for k in range(6)]
        with weightfs.open(path) as m:
            want = np.stack(exp)
            for threads in (0, 1, 2, 4, 9):
                a = m.stack(names, threads=threads)
                check(a.shape == (6, 512, 512) and a.dtype == np.float32, "shape %s" % (a.shape,))
                check(same_bits(a, want), "stack threads=%d" % threads)
            check(same_bits(m.stack(names[4:], threads=4), want[4:]), "2 tensors on 4 threads")
            check(same_bits(m.stack(names[::-1], dtype="f16"), tm.f16_of(want[::-1])), "f16, reversed")
            check(same_bits(m.stack([names[2]] * 3), np.stack([exp[2]] * 3)), "one tensor thrice")
            for bad, what in (([names[0], "other"], ValueError), ([], ValueError), (["nope"], KeyError)):
                try:
                    m.stack(bad)
                    check(False, "%s accepted" % bad)
                except what as e:
                    check(not isinstance(e, ValueError) or "differs" in str(e) or "no tensors" in str(e), str(e))
            torch = torch_or_none()
            with weightfs.safe_open(path, framework="pt" if torch else "np") as f:
                t = f.stack(names[:3])
                check(same_bits(np.asarray(t), want[:3]), "safe_open stack")
    with weightfs.open(DEMO) as m, weightfs.safe_open(DEMO) as f:
        ns = ["blk.0.ffn_up.weight", "blk.1.ffn_up.weight", "blk.0.ffn_gate.weight"]  # MXFP4, IQ4_NL, IQ4_NL
        check(same_bits(m.stack(ns), np.stack([m[n] for n in ns])), "demo model stack")
        check(same_bits(f.stack(ns), np.stack([m[n] for n in ns])), "safe_open np stack")
        try:
            f.stack(["blk.1.attn_q.weight", "blk.1.attn_output.weight"])   # F32-read BF16 + Q2_0: fine
            f.stack(["blk.1.attn_k.weight", "blk.0.attn_k.weight"])        # F16 and Q4_1: differ
            check(False, "F16 and Q4_1 stacked without dtype=")
        except ValueError as e:
            check("dtype=" in str(e), str(e))


@test
def container_protocol_metadata_and_closing():
    with weightfs.open(DEMO) as m:
        meta, names = m.metadata, m.keys()
    f = weightfs.safe_open(DEMO)
    with f:
        check(len(f) == len(names) == 22, "len")
        check(list(f) == names and f.offset_keys() == names, "iteration")
        check("output.weight" in f and "output" not in f and 3 not in f, "in")
        check(f.metadata() == meta and meta["general.architecture"] == "llama", "metadata")
        r = repr(f)
        check("mixed_llama_tiny.gguf" in r and "22 tensors" in r and "'np'" in r, r)
    check("closed" in repr(f), repr(f))
    try:
        f.keys()
        check(False, "closed model read")
    except ValueError as e:
        check("closed" in str(e), str(e))
    # any MODEL form: a safetensors index set, through a folder
    with tempfile.TemporaryDirectory() as tmp:
        a = np.arange(12, dtype=np.float32).reshape(3, 4)
        write_st(os.path.join(tmp, "model.safetensors"), [("a", a)], {"format": "pt"})
        with weightfs.safe_open(tmp) as g:
            check(g.metadata() == {"format": "pt"} and same_bits(g.get_tensor("a"), a), "folder")
    for bad in ("tf", "jax"):
        try:
            weightfs.safe_open(DEMO, framework=bad)
            check(False, "framework %s accepted" % bad)
        except ValueError as e:
            check("framework" in str(e), str(e))
    try:
        weightfs.safe_open(os.path.join(tm.MALFORMED, "gguf_bad_magic.gguf"))
        check(False, "malformed file opened")
    except weightfs.WeightfsError as e:
        check("gguf_bad_magic.gguf" in str(e), str(e))


@test
def pt_without_torch_is_a_clear_error():
    saved = sys.modules.get("torch")
    sys.modules["torch"] = None   # what `import torch` meets when it is not installed
    try:
        weightfs.safe_open(DEMO, framework="pt")
        check(False, "pt opened without torch")
    except ImportError as e:
        check("python3-torch" in str(e), str(e))
    finally:
        if saved is None:
            del sys.modules["torch"]
        else:
            sys.modules["torch"] = saved


@test
def typed_for_editors():
    pkg = os.path.dirname(weightfs.__file__)
    check(os.path.isfile(os.path.join(pkg, "py.typed")), "py.typed beside the module")
    for fn in (weightfs.safe_open, weightfs.open, weightfs.SafeOpen.get_tensor, weightfs.SafeOpen.get_slice,
               weightfs.SafeOpen.keys, weightfs.SafeOpen.metadata, weightfs.Model.stack, weightfs.Model.get,
               weightfs.Model.keys, weightfs.Slice.__getitem__, weightfs.Slice.get_shape):
        hints = typing.get_type_hints(fn)   # fails on an annotation that does not resolve
        check("return" in hints, "%s has no return annotation" % fn.__qualname__)
    check(typing.get_type_hints(weightfs.safe_open)["return"] is weightfs.SafeOpen, "safe_open -> SafeOpen")


HF_NAMES = {"token_embd": "model.embed_tokens", "output_norm": "model.norm", "output": "lm_head"}
HF_LAYER = {"attn_norm": "input_layernorm", "attn_q": "self_attn.q_proj", "attn_k": "self_attn.k_proj",
            "attn_v": "self_attn.v_proj", "attn_output": "self_attn.o_proj", "ffn_norm": "post_attention_layernorm",
            "ffn_gate": "mlp.gate_proj", "ffn_up": "mlp.up_proj", "ffn_down": "mlp.down_proj"}


def hf_name(g):
    stem, sfx = g.rsplit(".", 1)
    if stem in HF_NAMES:
        return HF_NAMES[stem] + "." + sfx
    if stem.startswith("blk."):
        _, n, part = stem.split(".", 2)
        return "model.layers.%s.%s.%s" % (n, HF_LAYER[part], sfx) if part in HF_LAYER else None
    return None


@test
@needs_torch
def test_safe_open_names_hf():
    """names="hf" over the shipped demo llama GGUF: transformers' names (written out here
    independently of the library's table), q/k rows put back from llama.cpp's order with
    numpy (head h, pair i, half j), every tensor float32 and bit-equal to Model.get's
    decode; rope_freqs.weight left out; bf16 reads are the rounding of those; config.json
    from hf_file; a safetensors model has no hf/ (WeightfsError), nor does the oracle's
    mixed llama, whose rope_freqs.weight is no Llama 3 rope scaling transformers could
    express (the error names it); names= other values fail."""
    import json
    torch = torch_or_none()
    m = weightfs.open(HF_DEMO)
    meta = m.metadata
    H, KV = meta["llama.attention.head_count"], meta["llama.attention.head_count_kv"]
    want = {}
    for g in m.keys():
        h = hf_name(g)
        if h is None:
            continue
        a = m.get(g, dtype="f32")
        if ".attn_q." in g or ".attn_k." in g:
            heads = H if ".attn_q." in g else KV
            r = a.shape[0]
            a = a.reshape(heads, r // heads // 2, 2, *a.shape[1:]).swapaxes(1, 2).reshape(a.shape)
        want[h] = a
    with weightfs.safe_open(HF_DEMO, framework="pt", names="hf") as f:
        check(sorted(f.keys()) == sorted(want), "keys %r, want %r" % (sorted(set(f.keys()) ^ set(want)), []))
        check(len(f) == len(want) and "lm_head.weight" in f and "rope_freqs.weight" not in f, "len / contains")
        for k, a in want.items():
            t = f.get_tensor(k)
            check(t.dtype == torch.float32 and list(t.shape) == list(a.shape), "%s: %s %s" % (k, t.dtype, t.shape))
            check(same_bits(t.numpy(), a), "%s differs from the decode with q/k rows put back" % k)
        cfg = json.loads(f.hf_file("config.json"))
        check(cfg["architectures"] == ["LlamaForCausalLM"] and cfg["num_key_value_heads"] == KV, "config %r" % cfg)
    # issue 40 item 10: after close(), names="hf" still listed its tensors
    for call, what in ((lambda: f.keys(), "keys()"), (lambda: len(f), "len()"), (lambda: "lm_head.weight" in f, "in"),
                       (lambda: list(f), "iteration"), (lambda: f.offset_keys(), "offset_keys()"),
                       (lambda: f.get_tensor("lm_head.weight"), "get_tensor()"),
                       (lambda: f.hf_file("config.json"), "hf_file()")):
        try:
            call()
            check(False, "names=\"hf\": %s answered after close()" % what)
        except ValueError as e:
            check("closed" in str(e), "%s after close(): %s" % (what, e))
    with weightfs.safe_open(HF_DEMO, framework="pt", names="hf", dtype="bf16") as f:
        t = f.get_tensor("lm_head.weight")
        ref = torch.from_numpy(want["lm_head.weight"]).to(torch.bfloat16)
        check(t.dtype == torch.bfloat16 and torch.equal(t.view(torch.int16), ref.view(torch.int16))
              or bool(torch.isnan(ref).any()), "bf16 is not the rounding of the float32 decode")
    st = os.path.join(ST_ORACLE, sorted(x for x in os.listdir(ST_ORACLE) if x.endswith(".safetensors"))[0])
    try:
        weightfs.safe_open(st, names="hf")
        check(False, "names=\"hf\" of a safetensors model did not fail")
    except weightfs.WeightfsError as e:
        check("hf/" in str(e), "message %r" % str(e))
    try:
        weightfs.safe_open(DEMO, names="hf")
        check(False, "names=\"hf\" of a GGUF whose rope_freqs hf/ cannot express did not fail")
    except weightfs.WeightfsError as e:
        check("rope_freqs.weight" in str(e), "message %r" % str(e))
    try:
        weightfs.safe_open(DEMO, names="gguf")
        check(False, "names=\"gguf\" accepted")
    except ValueError:
        pass


def big_llama_gguf(path, rng):
    """A one-layer llama GGUF (no tokenizer) of Q8_0 tensors whose hf/model.safetensors
    is 19 MiB: q (8 heads of 128 rows of 4 KiB, 4 MiB as float32) and k big enough
    that reads of them are cut in shares and whole heads.  Returns the GGUF's heads."""
    sys.path.insert(0, os.path.join(tm.ROOT, "tests", "mount"))
    from wf_models import f32_tensor, gguf_bytes, gkv
    H, FF, NH, KV, V = 1024, 256, 8, 4, 520
    kvs = [gkv("general.architecture", "str", "llama"), gkv("llama.block_count", "u32", 1),
           gkv("llama.context_length", "u32", 2048), gkv("llama.embedding_length", "u32", H),
           gkv("llama.feed_forward_length", "u32", FF), gkv("llama.attention.head_count", "u32", NH),
           gkv("llama.attention.head_count_kv", "u32", KV), gkv("llama.rope.freq_base", "f32", 10000.0),
           gkv("llama.attention.layer_norm_rms_epsilon", "f32", 1e-5), gkv("llama.vocab_size", "u32", V)]

    def q8(name, rows, cols):
        a = rng.standard_normal((rows, cols)).astype(np.float32)
        return (name.encode(), 8, [cols, rows], weightfs.quantize(a, "q8_0"))

    t = [q8("token_embd.weight", V, H), f32_tensor(b"output_norm.weight", rng.standard_normal(H)),
         f32_tensor(b"blk.0.attn_norm.weight", rng.standard_normal(H)), q8("blk.0.attn_q.weight", H, H),
         q8("blk.0.attn_k.weight", H // NH * KV, H), q8("blk.0.attn_v.weight", H // NH * KV, H),
         q8("blk.0.attn_output.weight", H, H), f32_tensor(b"blk.0.ffn_norm.weight", rng.standard_normal(H)),
         q8("blk.0.ffn_gate.weight", FF, H), q8("blk.0.ffn_up.weight", FF, H), q8("blk.0.ffn_down.weight", H, FF),
         q8("output.weight", V, H)]
    with open(path, "wb") as f:
        f.write(gguf_bytes(t, kvs))
    return NH, KV


@test
def hf_reads_in_shares():
    """names="hf" reads cut in shares on several threads (weightfs_hf_read_parallel) and
    q/k heads read a source row at a time: get_tensor of a 19 MiB hf/ view is bit-equal to
    Model.get's decode with the q/k rows put back by numpy; hf_read of the whole file on 2,
    3 and 5 threads, and of ranges starting and ending inside heads, rows and elements,
    equal the one-thread read; f16 and bf16 the same."""
    rng = np.random.default_rng(29)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.gguf")
        NH, KV = big_llama_gguf(path, rng)
        m = weightfs.open(path)
        with weightfs.safe_open(path, names="hf") as f:
            for g in m.keys():
                a = m.get(g)
                if ".attn_q." in g or ".attn_k." in g:
                    heads = NH if ".attn_q." in g else KV
                    a = a.reshape(heads, a.shape[0] // heads // 2, 2, -1).swapaxes(1, 2).reshape(a.shape)
                t = f.get_tensor(hf_name(g))
                check(t.shape == a.shape and same_bits(t, a), "%s differs from the numpy reference" % g)
            hf = f._hf
            q = hf["base"] + hf["tensors"]["model.layers.0.self_attn.q_proj.weight"]["data_offsets"][0]
        for dt in ("f32", "f16", "bf16"):
            whole = m.hf_read("model.safetensors", dtype=dt, threads=1)
            check(len(whole) == m.hf_size("model.safetensors", dtype=dt), "%s: size" % dt)
            for th in (2, 3, 5):
                check(m.hf_read("model.safetensors", dtype=dt, threads=th) == whole, "%s: %d threads" % (dt, th))
        whole = m.hf_read("model.safetensors", threads=1)
        ranges = [(q + 4096 * 100 + 6, (3 << 20) + 1234), (q + 1, 4 << 20), (q - 7, (2 << 20) + 3),
                  (q + (512 << 10), 1 << 20), (3, len(whole)), (len(whole) - (2 << 20) - 5, 4 << 20)]
        for _ in range(6):
            lo = int(rng.integers(0, len(whole)))
            ranges.append((lo, int(rng.integers(0, 5 << 20))))
        for lo, n in ranges:
            for th in (1, 2, 4):
                got = m.hf_read("model.safetensors", lo, n, threads=th)
                check(got == whole[lo:lo + n], "hf_read(%d, %d, threads=%d)" % (lo, n, th))
        buf = np.zeros(5 << 20, dtype=np.uint8)
        m.hf_read("model.safetensors", q, 4 << 20, out=buf)
        check(bytes(buf[:4 << 20]) == whole[q:q + (4 << 20)] and not buf[4 << 20:].any(), "hf_read into out")
        m.close()


@test
def hf_dtypes_from_threads():
    """Threads reading hf/model.safetensors of one Model in different dtypes at once: the
    library remakes the view when the dtype changes (freeing the one a read in flight
    uses), so calls in another dtype wait for those in flight: every read equals the
    one-thread read of its dtype."""
    import threading
    rng = np.random.default_rng(31)
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "big.gguf")
        big_llama_gguf(path, rng)
        m = weightfs.open(path)
        whole = {dt: m.hf_read("model.safetensors", dtype=dt, threads=1) for dt in ("f32", "f16", "bf16")}
        bad = []

        def reader(k):
            r = np.random.default_rng(k)
            for i in range(12):
                dt = ("f32", "f16", "bf16")[(k + i) % 3]
                lo = int(r.integers(0, len(whole[dt])))
                n = int(r.integers(1, 3 << 20))
                if m.hf_read("model.safetensors", lo, n, dtype=dt, threads=1 + i % 2) != whole[dt][lo:lo + n]:
                    bad.append((k, i, dt, lo, n))

        ts = [threading.Thread(target=reader, args=(k,)) for k in range(4)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
        m.close()
        check(not bad, "reads in mixed dtypes differ: %r" % bad[:3])


def main():
    passed = failed = skipped = 0
    no_torch = torch_or_none() is None
    for fn in TESTS:
        if sys.argv[1:] and fn.__name__ not in sys.argv[1:]:
            continue
        if no_torch and fn.__name__ in TORCH_TESTS:
            skipped += 1
            print("skip %s (WEIGHTFS_NO_TORCH=1: no torch)" % fn.__name__)
            continue
        try:
            fn()
            passed += 1
            print("ok   %s" % fn.__name__)
        except Exception:
            failed += 1
            print("FAIL %s" % fn.__name__)
            tm.traceback.print_exc(file=sys.stdout)
    print("python-check: safe_open, %s: %d passed, %d failed%s"
          % (weightfs._lib._name, passed, failed, ", %d skipped (no torch)" % skipped if skipped else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
