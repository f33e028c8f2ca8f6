"""Group gguf_quant: model.gguf quantized on read (-o gguf=q4_k_m and the other llama-quantize
file types; docs/gguf.md "Quantized types"), byte for byte what llama.cpp's own
llama_model_quantize writes (libllama of the npm package, tests/clients/llama.py quantize):

- a Hugging Face folder (a random llama of hidden 256 and 8 layers, so that the K types need
  no fallback and use_more_bits picks some layers, with a SentencePiece vocab of 32000) with
  -o gguf=TYPE for every file type = llama_model_quantize(the F32 GGUF weightfs convert writes
  of it, TYPE); the pure forms (-o gguf=q4_k, TYPE-pure) = --pure;
- the same with the tiny 64-wide models (llama, qwen2, gemma2: every K type's shape fallback);
- a GGUF source: the F32 GGUF itself, and a Q8_0 GGUF requantized (--allow-requantize);
- weightfs convert MODEL OUT.gguf -o gguf=q4_k_m = the view; llama.cpp runs the Q4_K_M file
  from the mount and makes the same tokens as from the llama-quantize file.
"""

import os
import sys

import wf_harness
from wf_harness import Fail, Mount, check, new_dir, run_cli, skip_or_fail
from t_gguf import CLIENTS, client, npm_dir

# -o gguf= name -> llama_ftype
FTYPES = {"q8_0": 7, "q6_k": 18, "q5_k_m": 17, "q5_k_s": 16, "q4_k_m": 15, "q4_k_s": 14, "q3_k_m": 12,
          "q3_k_l": 13, "q3_k_s": 11, "q2_k": 10, "q4_0": 2, "q4_1": 3, "q5_0": 8, "q5_1": 9, "iq4_nl": 25,
          "iq4_xs": 30}


def first_diff(a, b):
    n = min(len(a), len(b))
    return next((i for i in range(n) if a[i] != b[i]), n)


def same_as_llama(model, f32_gguf, name, ftype, pure=False, d=None):
    """model.gguf of a mount of model with -o gguf=name against llama_model_quantize."""
    ref = os.path.join(d or new_dir("qref-"), "ref-%s.gguf" % name)
    client(["quantize", f32_gguf, ref, str(ftype)] + (["pure"] if pure else []))
    m = Mount(model, ["-o", "gguf=" + name])
    try:
        p = m.path("model.gguf")
        if not os.path.exists(p):
            raise Fail("-o gguf=%s: no model.gguf: %s" % (name, [ln for ln in open(m.path("WEIGHTFS.txt"))
                                                              if "gguf" in ln]))
        with open(p, "rb") as f:
            got = f.read()
    finally:
        m.unmount()
    with open(ref, "rb") as f:
        want = f.read()
    if got != want:
        raise Fail("-o gguf=%s: model.gguf (%d bytes) differs from llama_model_quantize's (%d bytes) at byte %d"
                   % (name, len(got), len(want), first_diff(got, want)))
    return ref


def make_f32(folder, d):
    g = os.path.join(d, "f32.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=f32", folder, g], timeout=300)
    if rc != 0:
        raise Fail("convert -o gguf=f32: exit %d: %s" % (rc, err[-300:]))
    return g


def wide_case(state):
    import tiny_models
    from t_gguf_more import tok_dir
    d = new_dir("qwide-")
    folder = tiny_models.make(os.path.join(d, "wide-llama"), "llama", tok_dir("plain"), dims=(256, 8, 2, 512, 8),
                              config={"bos_token_id": 1, "eos_token_id": 2})
    g = make_f32(folder, d)
    state["wide"] = (folder, g, d)
    for name, ft in FTYPES.items():
        same_as_llama(folder, g, name, ft, d=d)
    for name, ft in (("q4_k", 15), ("q8_0-pure", 7), ("q3_k_l-pure", 13)):
        same_as_llama(folder, g, name, ft, pure=True, d=d)
    return "%d file types and 3 pure forms byte-identical" % len(FTYPES)


def narrow_case(kind):
    import real_tokenizers
    import tiny_models
    tdir = real_tokenizers.folder("gpt2")
    if kind.startswith("gemma"):
        from t_gguf_more import tok_dir
        tdir = tok_dir("plain")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    d = new_dir("qnarrow-")
    folder = tiny_models.make(os.path.join(d, "tiny-" + kind), kind, tdir)
    g = make_f32(folder, d)
    names = ("q8_0", "q4_k_m", "q6_k", "q2_k", "iq4_xs", "q5_1")
    for name in names:
        same_as_llama(folder, g, name, FTYPES[name], d=d)
    return "%s: %s byte-identical (every K type through its shape fallback)" % (kind, ", ".join(names))


def moe_case(kind):
    """Mixtral with 8 experts (llama-quantize's n_expert == 8 rules: attn_v and attn_k Q8_0,
    attn_output Q5_K) and Qwen3-MoE with 4 (ffn_down_exps' more bits by the layer its name
    says), 256 wide: the experts stacked on read and quantized slab by slab. gpt-oss (dense
    F32): its experts transposed and split on read, then quantized; its F32 file made by
    `weightfs convert`, whose stored-bytes shortcut must not skip the gather."""
    import tiny_models
    from t_gguf_more import tok_dir
    d = new_dir("qmoe-")
    cfg = {"num_local_experts": 8} if kind == "mixtral" else {} if kind == "gptoss" else \
        {"num_experts": 4, "moe_intermediate_size": 256}
    cfg.update(bos_token_id=1, eos_token_id=2)
    if kind == "gptoss":  # a byte-level BPE tokenizer: gpt-oss's vocab is GPT-2's routine
        import real_tokenizers
        tdir = real_tokenizers.folder("gpt2")
        if not tdir:
            skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    else:
        tdir = tok_dir("plain")
    folder = tiny_models.make(os.path.join(d, "moe-" + kind), kind, tdir, dims=(256, 8, 2, 256, 3), config=cfg)
    g = make_f32(folder, d)
    # Mixtral's n_expert == 8 rules touch every mixture; Qwen3-MoE's differ only in the layer
    # ffn_down_exps' more bits are read from: three types keep the suite's time
    names = ("q4_k_m", "q2_k", "q3_k_m", "q8_0", "iq4_xs", "q5_k_s") if kind == "mixtral" else \
        ("q4_k_m",) if kind == "gptoss" else ("q4_k_m", "q3_k_m", "iq4_xs")
    for name in names:
        same_as_llama(folder, g, name, FTYPES[name], d=d)
    return "%s byte-identical" % ", ".join(names)


def deepseek_case():
    """DeepSeek V3 (MLA, 8 experts in groups, a dense layer, an MTP layer skipped):
    attn_k_b (each head of kv_b_proj transposed, 16 wide: the F16 fallback) and attn_v_b
    (256 wide: K blocks) quantized on read from the head slices, the experts slab by slab."""
    import real_tokenizers
    import tiny_models
    tdir = real_tokenizers.folder("gpt2")
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    d = new_dir("qds-")
    # 64 wide (the embeddings of GPT-2's 50257 tokens dominate the time); the latent, q_a and
    # the experts 256 wide, so that attn_v_b, attn_q_b and ffn_down_exps get K blocks
    folder = tiny_models.make(os.path.join(d, "moe-deepseek"), "deepseek_v3", tdir,
                              config={"kv_lora_rank": 256, "q_lora_rank": 256, "moe_intermediate_size": 256})
    g = make_f32(folder, d)
    same_as_llama(folder, g, "q4_k_m", FTYPES["q4_k_m"], d=d)
    return "q4_k_m byte-identical"


def glm_case():
    """GLM-4.5 (4 experts, 256 wide, 4 layers and the MTP block; the first layer dense, shared
    experts, the router bias, nextn.eh_proj) with -o gguf=q4_k_m = llama_model_quantize's:
    ffn_down*'s more bits by the layer its name says among the 5 blocks, MTP block included."""
    import converter_cases
    import tiny_models
    d = new_dir("qglm-")
    tdir = converter_cases.glm_folder(d, merges=1000)
    if not tdir:
        skip_or_fail("tokenizer gpt2 not installed (tests/clients/npm.sh)")
    folder = tiny_models.make(os.path.join(d, "moe-glm4moe"), "glm4moe", tdir, dims=(256, 8, 2, 256, 4),
                              config={"moe_intermediate_size": 256})
    g = make_f32(folder, d)
    same_as_llama(folder, g, "q4_k_m", FTYPES["q4_k_m"], d=d)
    return "q4_k_m byte-identical"


def dense_case(name):
    """A dense family of converter_cases (a multimodal checkpoint: its text model) at q4_k_m =
    llama_model_quantize of its F32 GGUF."""
    import converter_cases
    d = new_dir("qdense-")
    folder = converter_cases.make(name, d)
    g = make_f32(folder, d)
    same_as_llama(folder, g, "q4_k_m", FTYPES["q4_k_m"], d=d)
    return "q4_k_m byte-identical"


def gguf_source_case(state):
    folder, g, _ = state["wide"]
    d = new_dir("qsrc-")  # refs of its own: convert_run_case compares with the folder's
    for name in ("q4_k_m", "q8_0", "iq4_xs"):
        same_as_llama(g, g, name, FTYPES[name], d=d)
    # requantize: a Q8_0 GGUF made by llama.cpp, to Q4_K_M and Q6_K
    q8 = os.path.join(d, "q8.gguf")
    client(["quantize", g, q8, "7"])
    for name in ("q4_k_m", "q6_k"):
        same_as_llama(q8, q8, name, FTYPES[name], d=d)
    return "F32 GGUF -> q4_k_m, q8_0, iq4_xs; Q8_0 GGUF -> q4_k_m, q6_k: byte-identical"


def convert_run_case(state):
    folder, g, d = state["wide"]
    out = os.path.join(d, "conv-q4km.gguf")
    rc, _, err, _ = run_cli(["convert", "-o", "gguf=q4_k_m", folder, out], timeout=300)
    if rc != 0:
        raise Fail("convert -o gguf=q4_k_m: exit %d: %s" % (rc, err[-300:]))
    ref = os.path.join(d, "ref-q4_k_m.gguf")
    with open(out, "rb") as a, open(ref, "rb") as b:
        if a.read() != b.read():
            raise Fail("weightfs convert -o gguf=q4_k_m differs from llama_model_quantize's file")
    m = Mount(folder, ["-o", "gguf=q4_k_m"])
    try:
        toks = client(["greedy", m.path("model.gguf"), "6", "1", "450", "4996"]).split()
    finally:
        m.unmount()
    want = client(["greedy", ref, "6", "1", "450", "4996"]).split()
    if toks != want or len(toks) < 6:
        raise Fail("greedy tokens from the mount %r, from llama-quantize's file %r" % (toks, want))
    return "convert = llama-quantize's bytes; llama.cpp from the mount: %s" % " ".join(toks)


def refuse_case(state):
    """A weight whose Q8_0 scale overflows half precision (|w| = 1e38): llama_model_quantize
    refuses the file (ggml_validate_row_data), and the mount's reads of that block fail with EIO
    while the rest is served."""
    import struct
    from t_gguf_more import gguf_read_header
    _, g, _ = state["wide"]
    d = new_dir("qbad-")
    _, infos, _, ds = gguf_read_header(g)
    off = next(o for n, _, _, o in infos if n == "blk.3.ffn_up.weight")
    with open(g, "rb") as f:
        buf = bytearray(f.read())
    struct.pack_into("<f", buf, ds + off + 4 * 5, 1e38)
    bad = os.path.join(d, "bad.gguf")
    with open(bad, "wb") as f:
        f.write(buf)
    try:
        client(["quantize", bad, os.path.join(d, "ref.gguf"), "7"])
        raise Fail("llama_model_quantize wrote a Q8_0 file with an infinite scale: the case tests nothing")
    except Fail as e:
        if "failed" not in str(e):
            raise
    m = Mount(bad, ["-o", "gguf=q8_0"])
    try:
        _, q8, _, qds = gguf_read_header(m.path("model.gguf"))
        qo = next(o for n, _, _, o in q8 if n == "blk.3.ffn_up.weight")
        fd = os.open(m.path("model.gguf"), os.O_RDONLY)
        try:
            try:
                os.pread(fd, 34, qds + qo)
                raise Fail("the block with the infinite scale was served")
            except OSError as e:
                if e.errno != 5:
                    raise
            # a later page (reads are by page: the bad block's page fails as a whole)
            ok = os.pread(fd, 34, (qds + qo) // 4096 * 4096 + 8192)
        finally:
            os.close(fd)
    finally:
        m.unmount()
    if len(ok) != 34:
        raise Fail("a later page could not be read")
    return "llama_model_quantize refuses; the block's read fails with EIO, later pages are served"


def status_kib(pid, key):
    with open("/proc/%d/status" % pid) as f:
        for ln in f:
            if ln.startswith(key + ":"):
                return int(ln.split()[1])
    return 0


def memory_case(state):
    """The daemon holds no quantized tensor beyond one read: reading the whole q4_k_m
    model.gguf (and again) grows its anonymous memory (RssAnon: not the source's mapped
    pages, which are the page cache's) by far less than the file's size."""
    folder, _, _ = state["wide"]
    saved = os.environ.get("ASAN_OPTIONS")
    if wf_harness.SANITIZED:
        # ASan keeps freed blocks in a quarantine (256 MB by default): every buffer a read frees
        # would count as growth, so that daemon runs without one
        os.environ["ASAN_OPTIONS"] = ((saved + ":") if saved else "") + \
            "quarantine_size_mb=0:thread_local_quarantine_size_kb=0"
    try:
        m = Mount(folder, ["-o", "gguf=q4_k_m"])
    finally:
        if saved is None:
            os.environ.pop("ASAN_OPTIONS", None)
        else:
            os.environ["ASAN_OPTIONS"] = saved
    try:
        pid = m.proc.pid
        size = os.path.getsize(m.path("model.gguf"))
        before = status_kib(pid, "RssAnon")
        for _ in range(2):
            with open(m.path("model.gguf"), "rb", buffering=0) as f:
                while f.read(1 << 20):
                    pass
        grew = status_kib(pid, "RssAnon") - before
    finally:
        m.unmount()
    # a daemon that kept the quantized tensors would grow by the file's size
    if grew * 1024 > size * 3 // 4:
        raise Fail("RssAnon grew by %d KiB reading a %d-byte model.gguf" % (grew, size))
    return "model.gguf %.1f MB read twice: RssAnon +%d KiB" % (size / 1e6, grew)


def group_gguf_quant():
    npm_dir()
    sys.path.insert(0, CLIENTS)
    state = {}
    check("gguf_quant: HF folder -o gguf=TYPE = llama_model_quantize of its F32 GGUF, every file type", wide_case,
          state)
    for kind in ("llama", "qwen2", "gemma2"):
        check("gguf_quant: tiny %s (64 wide): model.gguf = llama_model_quantize's" % kind, narrow_case, kind)
    for kind in ("mixtral", "qwen3moe", "gptoss"):
        check("gguf_quant: %s: model.gguf = llama_model_quantize's (the expert rules)" % kind, moe_case, kind)
    for name in ("Tiny-Gemma3-VL", "Tiny-Mistral3-VL", "Tiny-OLMo2", "Tiny-Granite", "Tiny-SmolLM3", "Tiny-Gemma"):
        check("gguf_quant: %s: -o gguf=q4_k_m = llama_model_quantize's" % name, dense_case, name)
    check("gguf_quant: GLM-4.5 (dense first layer, shared experts, MTP block): model.gguf = "
          "llama_model_quantize's", glm_case)
    check("gguf_quant: deepseek2: model.gguf = llama_model_quantize's (attn_k_b, attn_v_b quantized from head "
          "slices of kv_b_proj)", deepseek_case)
    if "wide" in state:
        check("gguf_quant: GGUF source, and requantizing a Q8_0 GGUF: = llama_model_quantize's", gguf_source_case,
              state)
        check("gguf_quant: convert OUT.gguf -o gguf=q4_k_m = the view; llama.cpp runs it from the mount",
              convert_run_case, state)
        check("gguf_quant: reading a q4_k_m model.gguf: the daemon's memory does not grow with it", memory_case,
              state)
        check("gguf_quant: a block llama-quantize refuses (infinite scale) reads as EIO", refuse_case, state)
