#!/usr/bin/python3
"""ctypes binding to the prebuilt llama.cpp that node-llama-cpp ships, for tests.

The libraries come from @node-llama-cpp/linux-x64@3.21.1 (llama.cpp release "v0.4.0" of
node-llama-cpp's build), installed by tests/clients/npm.sh into
${WEIGHTFS_NPM:-$HOME/.cache/weightfs-npm}.  The struct layouts below follow that release's
include/llama.h (the source is node-llama-cpp/llama/gitRelease.bundle); `selfcheck` compiles
the header ($WEIGHTFS_LLAMA_SRC, $WEIGHTFS_NPM/llama-src from npm.sh, or /tmp/llama-src)
when it and gcc are around, and compares every offset with these ctypes layouts.

API (all ids are plain Python ints):
    load(path, vocab_only=False, use_mmap=True) -> Model
    tokenize(model, text, add_special=True, parse_special=True) -> [int]
    token_to_piece(model, id, special=True) -> bytes
    detokenize(model, ids, remove_special=False, unparse_special=True) -> str
    vocab_info(model) -> dict (n_vocab, bos, eos, eot, ..., add_bos, add_eos, type)
    meta(model) -> dict of the GGUF KVs as llama.cpp prints them
    greedy(model, prompt_ids, n_new) -> [int]     (argmax, no sampler)
    logits(model, ids) -> numpy float32 [len(ids), n_vocab] (teacher forced)

CLI (JSON on stdout; llama.cpp's log is silenced unless LLAMA_PY_VERBOSE=1):
    llama.py tokenize MODEL.gguf CORPUS.json [--no-special] [--no-parse-special]
    llama.py greedy MODEL.gguf N_NEW ID...
    llama.py logits MODEL.gguf OUT.npy ID...
    llama.py vocab MODEL.gguf
    llama.py selfcheck
"""
import ctypes as C
import glob
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def npm_dir():
    return os.environ.get("WEIGHTFS_NPM") or os.path.join(
        os.path.expanduser("~"), ".cache", "weightfs-npm")


def lib_dir():
    """The folder holding libllama*.so and the libggml-cpu-*.so backends, or None."""
    env = os.environ.get("WEIGHTFS_LLAMA_LIB")
    cands = [env] if env else []
    cands.append(os.path.join(npm_dir(), "node_modules", "@node-llama-cpp", "linux-x64",
                              "bins", "linux-x64"))
    for d in cands:
        if d and glob.glob(os.path.join(d, "libllama*.so")):
            return d
    return None


# ---------------------------------------------------------------- struct layouts (llama.h)
llama_token = C.c_int32
LOAD_MODE_NONE, LOAD_MODE_MMAP = 0, 1
FLASH_ATTN_DISABLED = 0
GGML_TYPE_F32, GGML_TYPE_F16 = 0, 1


class llama_model_params(C.Structure):
    _fields_ = [
        ("devices", C.c_void_p),
        ("tensor_buft_overrides", C.c_void_p),
        ("n_gpu_layers", C.c_int32),
        ("split_mode", C.c_int),
        ("load_mode", C.c_int),
        ("lazy_mode", C.c_int),
        ("main_gpu", C.c_int32),
        ("tensor_split", C.c_void_p),
        ("progress_callback", C.c_void_p),
        ("progress_callback_user_data", C.c_void_p),
        ("kv_overrides", C.c_void_p),
        ("vocab_only", C.c_bool),
        ("check_tensors", C.c_bool),
        ("use_extra_bufts", C.c_bool),
        ("no_host", C.c_bool),
        ("no_alloc", C.c_bool),
        ("load_mtp", C.c_bool),
    ]


class llama_context_params(C.Structure):
    _fields_ = [
        ("n_ctx", C.c_uint32),
        ("n_batch", C.c_uint32),
        ("n_ubatch", C.c_uint32),
        ("n_seq_max", C.c_uint32),
        ("n_rs_seq", C.c_uint32),
        ("n_outputs_max", C.c_uint32),
        ("n_outputs_max_per_seq", C.c_uint32),
        ("n_threads", C.c_int32),
        ("n_threads_batch", C.c_int32),
        ("ctx_type", C.c_int),
        ("rope_scaling_type", C.c_int),
        ("pooling_type", C.c_int),
        ("attention_type", C.c_int),
        ("flash_attn_type", C.c_int),
        ("rope_freq_base", C.c_float),
        ("rope_freq_scale", C.c_float),
        ("yarn_ext_factor", C.c_float),
        ("yarn_attn_factor", C.c_float),
        ("yarn_beta_fast", C.c_float),
        ("yarn_beta_slow", C.c_float),
        ("yarn_orig_ctx", C.c_uint32),
        ("defrag_thold", C.c_float),
        ("cb_eval", C.c_void_p),
        ("cb_eval_user_data", C.c_void_p),
        ("type_k", C.c_int),
        ("type_v", C.c_int),
        ("abort_callback", C.c_void_p),
        ("abort_callback_data", C.c_void_p),
        ("embeddings", C.c_bool),
        ("offload_kqv", C.c_bool),
        ("no_perf", C.c_bool),
        ("op_offload", C.c_bool),
        ("swa_full", C.c_bool),
        ("kv_unified", C.c_bool),
        ("samplers", C.c_void_p),
        ("n_samplers", C.c_size_t),
        ("ctx_other", C.c_void_p),
    ]


class llama_model_quantize_params(C.Structure):
    _fields_ = [
        ("nthread", C.c_int32),
        ("ftype", C.c_int),
        ("output_tensor_type", C.c_int),
        ("token_embedding_type", C.c_int),
        ("allow_requantize", C.c_bool),
        ("quantize_output_tensor", C.c_bool),
        ("only_copy", C.c_bool),
        ("pure", C.c_bool),
        ("keep_split", C.c_bool),
        ("dry_run", C.c_bool),
        ("imatrix", C.c_void_p),
        ("kv_overrides", C.c_void_p),
        ("tt_overrides", C.c_void_p),
        ("prune_layers", C.c_void_p),
        ("max_buf_size", C.c_size_t),
    ]


class llama_batch(C.Structure):
    _fields_ = [
        ("n_tokens", C.c_int32),
        ("token", C.POINTER(llama_token)),
        ("embd", C.POINTER(C.c_float)),
        ("pos", C.POINTER(C.c_int32)),
        ("n_seq_id", C.POINTER(C.c_int32)),
        ("seq_id", C.POINTER(C.POINTER(C.c_int32))),
        ("logits", C.POINTER(C.c_int8)),
    ]


LOG_CB = C.CFUNCTYPE(None, C.c_int, C.c_char_p, C.c_void_p)

_lib = None
_log_cb = None  # kept alive for the process


def _verbose_log(level, text, ud):
    sys.stderr.write(text.decode("utf-8", "replace"))


def lib():
    """Load libllama once, silence its log, load the best CPU backend for this machine."""
    global _lib, _log_cb
    if _lib is not None:
        return _lib
    d = lib_dir()
    if d is None:
        raise OSError("libllama not found: run tests/clients/npm.sh (WEIGHTFS_NPM=%s)" % npm_dir())
    mode = C.RTLD_GLOBAL
    # libllama's RUNPATH is $ORIGIN, so its libggml*.so are found next to it.
    ggml = C.CDLL(glob.glob(os.path.join(d, "libggml.v*.so"))[0] if glob.glob(
        os.path.join(d, "libggml.v*.so")) else os.path.join(d, "libggml.so"), mode=mode)
    L = C.CDLL(sorted(glob.glob(os.path.join(d, "libllama.v*.so")) or
                      glob.glob(os.path.join(d, "libllama.so")))[0], mode=mode)
    P, I32, B = C.c_void_p, C.c_int32, C.c_bool

    def f(name, res, *args, lib=L):
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = list(args)
        return fn

    f("llama_log_set", None, LOG_CB, P)
    f("ggml_backend_load_all_from_path", None, C.c_char_p, lib=ggml)
    f("ggml_backend_reg_count", C.c_size_t, lib=ggml)
    f("ggml_backend_dev_count", C.c_size_t, lib=ggml)
    f("llama_backend_init", None)
    f("llama_model_default_params", llama_model_params)
    f("llama_context_default_params", llama_context_params)
    f("llama_model_load_from_file", P, C.c_char_p, llama_model_params)
    f("llama_model_free", None, P)
    f("llama_init_from_model", P, P, llama_context_params)
    f("llama_free", None, P)
    f("llama_model_get_vocab", P, P)
    f("llama_model_n_embd", I32, P)
    f("llama_model_n_ctx_train", I32, P)
    f("llama_model_desc", I32, P, C.c_char_p, C.c_size_t)
    f("llama_model_meta_count", I32, P)
    f("llama_model_meta_key_by_index", I32, P, I32, C.c_char_p, C.c_size_t)
    f("llama_model_meta_val_str_by_index", I32, P, I32, C.c_char_p, C.c_size_t)
    f("llama_vocab_n_tokens", I32, P)
    f("llama_vocab_type", C.c_int, P)
    for n in ("bos", "eos", "eot", "sep", "nl", "pad"):
        f("llama_vocab_" + n, llama_token, P)
    f("llama_vocab_get_add_bos", B, P)
    f("llama_vocab_get_add_eos", B, P)
    f("llama_vocab_get_text", C.c_char_p, P, llama_token)
    f("llama_vocab_get_attr", C.c_int, P, llama_token)
    f("llama_vocab_is_eog", B, P, llama_token)
    f("llama_tokenize", I32, P, C.c_char_p, I32, C.POINTER(llama_token), I32, B, B)
    f("llama_token_to_piece", I32, P, llama_token, C.c_char_p, I32, I32, B)
    f("llama_detokenize", I32, P, C.POINTER(llama_token), I32, C.c_char_p, I32, B, B)
    f("llama_batch_init", llama_batch, I32, I32, I32)
    f("llama_batch_free", None, llama_batch)
    f("llama_decode", I32, P, llama_batch)
    f("llama_get_logits_ith", C.POINTER(C.c_float), P, I32)
    f("llama_get_memory", P, P)
    f("llama_model_quantize_default_params", llama_model_quantize_params)
    f("llama_model_quantize", C.c_uint32, C.c_char_p, C.c_char_p, C.POINTER(llama_model_quantize_params))
    f("llama_memory_clear", None, P, B)

    if os.environ.get("LLAMA_PY_VERBOSE"):
        _log_cb = LOG_CB(_verbose_log)
    else:
        _log_cb = LOG_CB(lambda level, text, ud: None)
    L.llama_log_set(_log_cb, None)
    # As node-llama-cpp's addon does: register every backend found in the folder; for the CPU
    # ggml scores each libggml-cpu-<variant>.so against the host's features and keeps the best.
    L.ggml_backend_load_all_from_path(d.encode())
    L.llama_backend_init()
    if L.ggml_backend_dev_count() == 0:
        raise OSError("no ggml backend could be loaded from %s" % d)
    _lib = L
    return L


class Model:
    def __init__(self, ptr, path):
        self.ptr, self.path = ptr, path
        self.vocab = lib().llama_model_get_vocab(ptr)
        self.n_vocab = lib().llama_vocab_n_tokens(self.vocab)

    def close(self):
        if self.ptr:
            lib().llama_model_free(self.ptr)
            self.ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *a):
        self.close()

    def __del__(self):
        try:
            self.close()
        except Exception:
            pass


def load(path, vocab_only=False, use_mmap=True):
    L = lib()
    p = L.llama_model_default_params()
    p.n_gpu_layers = 0
    p.vocab_only = bool(vocab_only)
    p.load_mode = LOAD_MODE_MMAP if use_mmap else LOAD_MODE_NONE
    p.use_extra_bufts = False  # no weight repacking: plain ggml CPU kernels
    ptr = L.llama_model_load_from_file(os.fsencode(path), p)
    if not ptr:
        raise RuntimeError("llama.cpp could not load %s" % path)
    return Model(ptr, path)


def tokenize(model, text, add_special=True, parse_special=True):
    L = lib()
    b = text.encode("utf-8") if isinstance(text, str) else bytes(text)
    cap = len(b) + 16
    while True:
        buf = (llama_token * cap)()
        n = L.llama_tokenize(model.vocab, b, len(b), buf, cap, add_special, parse_special)
        if n >= 0:
            return list(buf[:n])
        if n == -(2 ** 31):
            raise RuntimeError("tokenize overflow")
        cap = -n


def token_to_piece(model, tok, special=True):
    L = lib()
    cap = 64
    while True:
        buf = C.create_string_buffer(cap)
        n = L.llama_token_to_piece(model.vocab, tok, buf, cap, 0, special)
        if n >= 0:
            return buf.raw[:n]
        cap = -n


def detokenize(model, ids, remove_special=False, unparse_special=True):
    L = lib()
    arr = (llama_token * max(1, len(ids)))(*ids)
    cap = 16 + 8 * len(ids)
    while True:
        buf = C.create_string_buffer(cap)
        n = L.llama_detokenize(model.vocab, arr, len(ids), buf, cap, remove_special,
                               unparse_special)
        if n >= 0:
            return buf.raw[:n].decode("utf-8", "replace")
        cap = -n


def vocab_info(model):
    L, v = lib(), model.vocab
    info = {"n_vocab": model.n_vocab, "type": L.llama_vocab_type(v)}
    for n in ("bos", "eos", "eot", "sep", "nl", "pad"):
        info[n] = getattr(L, "llama_vocab_" + n)(v)
    info["add_bos"] = bool(L.llama_vocab_get_add_bos(v))
    info["add_eos"] = bool(L.llama_vocab_get_add_eos(v))
    return info


def meta(model):
    L = lib()
    out = {}
    for i in range(L.llama_model_meta_count(model.ptr)):
        vals = []
        for fn in (L.llama_model_meta_key_by_index, L.llama_model_meta_val_str_by_index):
            cap = 256
            while True:
                buf = C.create_string_buffer(cap)
                n = fn(model.ptr, i, buf, cap)
                if n < cap:
                    break
                cap = n + 1
            vals.append(buf.value.decode("utf-8", "replace"))
        out[vals[0]] = vals[1]
    return out


def describe(model):
    buf = C.create_string_buffer(256)
    lib().llama_model_desc(model.ptr, buf, 256)
    return buf.value.decode()


def _context(model, n_ctx, n_batch, n_threads, kv_f32):
    L = lib()
    p = L.llama_context_default_params()
    p.n_ctx = max(16, n_ctx)
    p.n_batch = p.n_ubatch = max(16, n_batch)
    p.n_seq_max = 1
    p.n_outputs_max = 0
    p.n_outputs_max_per_seq = 0  # the default is 1: only the last position would have logits
    p.n_threads = p.n_threads_batch = n_threads
    p.flash_attn_type = FLASH_ATTN_DISABLED
    if kv_f32:
        p.type_k = p.type_v = GGML_TYPE_F32
    p.offload_kqv = False
    p.op_offload = False
    p.no_perf = True
    ctx = L.llama_init_from_model(model.ptr, p)
    if not ctx:
        raise RuntimeError("llama_init_from_model failed")
    return ctx


def _decode(ctx, ids, pos0, want_all):
    L = lib()
    n = len(ids)
    b = L.llama_batch_init(n, 0, 1)
    try:
        b.n_tokens = n
        for i, t in enumerate(ids):
            b.token[i] = t
            b.pos[i] = pos0 + i
            b.n_seq_id[i] = 1
            b.seq_id[i][0] = 0
            b.logits[i] = 1 if (want_all or i == n - 1) else 0
        rc = L.llama_decode(ctx, b)
        if rc != 0:
            raise RuntimeError("llama_decode returned %d" % rc)
    finally:
        L.llama_batch_free(b)


def _row(ctx, i, n_vocab):
    import numpy as np
    p = lib().llama_get_logits_ith(ctx, i)
    if not p:
        raise RuntimeError("no logits for output %d" % i)
    return np.ctypeslib.as_array(p, shape=(n_vocab,)).copy()


def logits(model, ids, n_threads=2, kv_f32=True):
    """Teacher-forced logits for every position: float32 [len(ids), n_vocab]."""
    import numpy as np
    if not ids:
        return np.zeros((0, model.n_vocab), np.float32)
    ctx = _context(model, len(ids), len(ids), n_threads, kv_f32)
    try:
        _decode(ctx, list(ids), 0, True)
        return np.stack([_row(ctx, i, model.n_vocab) for i in range(len(ids))])
    finally:
        lib().llama_free(ctx)


def greedy(model, prompt_ids, n_new, n_threads=2, kv_f32=True):
    """Argmax decoding of n_new tokens after prompt_ids (not stopping at EOS)."""
    import numpy as np
    if not prompt_ids:
        raise ValueError("empty prompt")
    ctx = _context(model, len(prompt_ids) + n_new, len(prompt_ids), n_threads, kv_f32)
    try:
        out = []
        _decode(ctx, list(prompt_ids), 0, False)
        pos = len(prompt_ids)
        for _ in range(n_new):
            t = int(np.argmax(_row(ctx, -1, model.n_vocab)))
            out.append(t)
            if len(out) == n_new:
                break
            _decode(ctx, [t], pos, False)
            pos += 1
        return out
    finally:
        lib().llama_free(ctx)


# ---------------------------------------------------------------- selfcheck
def quantize(src, dst, ftype, allow_requantize=True, pure=False, nthread=1):
    """llama-quantize: llama_model_quantize(src, dst) with the default parameters but
    ftype (a llama_ftype number), allow_requantize, pure and nthread; raises on failure."""
    L = lib()
    p = L.llama_model_quantize_default_params()
    p.ftype, p.allow_requantize, p.pure, p.nthread = ftype, allow_requantize, pure, nthread
    rc = L.llama_model_quantize(src.encode(), dst.encode(), C.byref(p))
    if rc != 0:
        raise RuntimeError("llama_model_quantize(%s) failed: %d" % (src, rc))


def header_dir():
    """include/ of the llama.cpp source matching the binaries, when around."""
    for d in (os.environ.get("WEIGHTFS_LLAMA_SRC"), os.path.join(npm_dir(), "llama-src"),
              "/tmp/llama-src"):
        if d and os.path.exists(os.path.join(d, "include", "llama.h")):
            return d
    return None


def selfcheck():
    """Compare sizeof/offsetof of the three structs in llama.h with the ctypes layouts."""
    src = header_dir()
    if src is None:
        return None, "llama.h not found (set WEIGHTFS_LLAMA_SRC)"
    structs = [("llama_model_params", llama_model_params),
               ("llama_context_params", llama_context_params),
               ("llama_batch", llama_batch)]
    lines = ["#include <stdio.h>", "#include <stddef.h>", '#include "llama.h"', "int main(void){"]
    for cname, cls in structs:
        lines.append('printf("%s sizeof %%zu\\n", sizeof(struct %s));' % (cname, cname))
        for fname, _ in cls._fields_:
            lines.append('printf("%s %s %%zu\\n", offsetof(struct %s, %s));'
                         % (cname, fname, cname, fname))
    lines.append("return 0;}")
    with tempfile.TemporaryDirectory() as t:
        c = os.path.join(t, "o.c")
        with open(c, "w") as fh:
            fh.write("\n".join(lines))
        exe = os.path.join(t, "o")
        r = subprocess.run(["gcc", "-o", exe, c, "-I", os.path.join(src, "include"),
                            "-I", os.path.join(src, "ggml", "include")],
                           capture_output=True, text=True)
        if r.returncode:
            return False, r.stderr
        got = subprocess.run([exe], capture_output=True, text=True, check=True).stdout
    want = {}
    for cname, cls in structs:
        want["%s sizeof" % cname] = C.sizeof(cls)
        for fname, _ in cls._fields_:
            want["%s %s" % (cname, fname)] = getattr(cls, fname).offset
    bad = []
    for line in got.splitlines():
        k, v = line.rsplit(" ", 1)
        if want.get(k) != int(v):
            bad.append("%s: C %s ctypes %s" % (k, v, want.get(k)))
    return not bad, "\n".join(bad) or "%d offsets match" % len(want)


# ---------------------------------------------------------------- CLI
def main(argv):
    if not argv:
        print(__doc__)
        return 2
    cmd = argv[0]
    if cmd == "selfcheck":
        ok, msg = selfcheck()
        print(msg)
        return 0 if ok else 1
    if cmd == "tokenize":
        flags = [a for a in argv[1:] if a.startswith("--")]
        pos = [a for a in argv[1:] if not a.startswith("--")]
        with open(pos[1], encoding="utf-8") as fh:
            corpus = json.load(fh)
        m = load(pos[0], vocab_only=True)
        out = [tokenize(m, s, "--no-special" not in flags, "--no-parse-special" not in flags)
               for s in corpus]
        print(json.dumps(out))
        return 0
    if cmd == "vocab":
        m = load(argv[1], vocab_only=True)
        print(json.dumps(vocab_info(m)))
        return 0
    if cmd == "quantize":
        # quantize SRC DST FTYPE [pure] [nthread=N] (N = 0: every core)
        opts = argv[4:]
        nthread = [int(a.split("=", 1)[1]) for a in opts if a.startswith("nthread=")]
        nthread = (nthread[-1] or os.cpu_count() or 1) if nthread else 1
        quantize(argv[1], argv[2], int(argv[3]), pure="pure" in opts, nthread=nthread)
        return 0
    if cmd == "greedy":
        m = load(argv[1])
        print(json.dumps(greedy(m, [int(x) for x in argv[3:]], int(argv[2]))))
        return 0
    if cmd == "logits":
        import numpy as np
        m = load(argv[1])
        np.save(argv[2], logits(m, [int(x) for x in argv[3:]]))
        return 0
    print("unknown command %r" % cmd, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
