"""Group desktop: what file managers and desktop tools see (-o suffix file
names, MIME types through gio, WEIGHTFS.txt summaries).
"""

import json
import math
import os
import re
import shutil
import struct
import subprocess
import time

import numpy as np

from wf_harness import check, Errs, Fail, GGML, load_json, Mount, new_dir, ROOT, Skip, TMP
from wf_models import write_file
from wf_tree import walk_files


# ---------------------------------------------------------------- group: desktop

# wf_dtype_suffix (src/view/wf_view.c): a file's dtype to its -o suffix suffix
DESK_SUFFIX = {
    "float32": "f32", "float16": "f16", "bfloat16": "bf16", "float64": "f64",
    "int8": "i8", "int16": "i16", "int32": "i32", "int64": "i64",
    "uint8": "u8", "uint16": "u16", "uint32": "u32", "uint64": "u64",
    "bool": "bool", "complex64": "c64", "float8_e4m3fn": "f8e4m3", "float8_e5m2": "f8e5m2",
    "float8_e8m0fnu": "f8e8m0", "float8_e4m3fnuz": "f8e4m3fnuz", "float8_e5m2fnuz": "f8e5m2fnuz",
}
DESK_TEXT = b"The quick brown fox jumps over the lazy dog.\n" * 8


def desktop_st_bytes():
    """A safetensors file of every plain dtype, in layers and not: an
    all-true BOOL tensor (a TGA image to a sniffer) and a U8 tensor of text
    (text/plain to one) among them."""
    rng = np.random.default_rng(7)
    f32 = lambda *s: rng.standard_normal(s).astype("<f4")  # noqa: E731
    ts = [
        ("model.layers.0.self_attn.q_proj.weight", "F32", [8, 8], f32(8, 8).tobytes()),
        ("model.layers.0.mlp.up_proj.weight", "F16", [16, 8], f32(16, 8).astype("<f2").tobytes()),
        ("model.layers.1.self_attn.q_proj.weight", "BF16", [8, 8],
         (f32(8, 8).view("<u4") >> 16).astype("<u2").tobytes()),
        ("model.layers.1.mlp.up_proj.weight", "F64", [16, 8], f32(16, 8).astype("<f8").tobytes()),
        ("model.embed_tokens.weight", "F8_E4M3", [32, 8], bytes(range(256))),
        ("mask.all_true", "BOOL", [64, 64], b"\x01" * 4096),
        ("text.bytes", "U8", [len(DESK_TEXT)], DESK_TEXT),
        ("ids.i8", "I8", [4], bytes(4)), ("ids.i16", "I16", [4], bytes(8)),
        ("ids.i32", "I32", [4], bytes(16)), ("ids.i64", "I64", [4], bytes(32)),
        ("ids.u16", "U16", [4], bytes(8)), ("ids.u32", "U32", [4], bytes(16)),
        ("ids.u64", "U64", [4], bytes(32)), ("cplx", "C64", [2], bytes(16)),
        ("clash.a", "F32", [1], bytes(4)), ("clash.a.b", "F32", [1], bytes(4)),
        ("L" * 300, "I32", [1], bytes(4)),
    ]
    hdr, off, data = {"__metadata__": {"format": "pt"}}, 0, []
    for name, dt, shape, b in ts:
        hdr[name] = {"dtype": dt, "shape": shape, "data_offsets": [off, off + len(b)]}
        off += len(b)
        data.append(b)
    h = json.dumps(hdr).encode()
    return struct.pack("<Q", len(h)) + h + b"".join(data)


def desktop_mime_env():
    """gio's environment with the mime XML installed in a private
    XDG_DATA_HOME (the system's database is left alone); None when gio or
    update-mime-database is missing, which fails under CI."""
    if not (shutil.which("gio") and shutil.which("update-mime-database")):
        if os.environ.get("CI"):
            raise Fail("gio or update-mime-database missing (apt-get install libglib2.0-bin "
                       "shared-mime-info)")
        raise Skip("gio or update-mime-database not installed")
    home = os.path.join(TMP, "xdg")
    pk = os.path.join(home, "mime", "packages")
    if not os.path.isdir(pk):
        os.makedirs(pk)
        shutil.copy(os.path.join(ROOT, "packaging", "weightfs-mime.xml"), os.path.join(pk, "weightfs.xml"))
        r = subprocess.run(["update-mime-database", os.path.join(home, "mime")], stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, timeout=60)
        if r.returncode != 0:
            raise Fail("update-mime-database: %s" % r.stderr.decode(errors="replace")[:300])
    env = dict(os.environ, XDG_DATA_HOME=home, LC_ALL="C")
    env.pop("XDG_DATA_DIRS", None)  # the default, /usr/local/share:/usr/share
    env.pop("DISPLAY", None)
    return env


def gio_types(paths, env):
    """{path: content type} from one `gio info` over paths."""
    r = subprocess.run(["gio", "info", "-a", "standard::content-type"] + list(paths),
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env, timeout=60)
    if r.returncode != 0:
        raise Fail("gio info exited %d: %s" % (r.returncode, r.stderr.decode(errors="replace")[:300]))
    out, cur = {}, None
    for line in r.stdout.decode(errors="replace").splitlines():
        if line.startswith("local path: "):
            cur = line[len("local path: "):]
        elif "standard::content-type:" in line and cur is not None:
            out[cur] = line.split(":", 3)[-1].strip()
    return out


def fuse_opens(m):
    """OPEN requests the daemon (run with -d) has logged so far."""
    return m.stderr().count("opcode: OPEN (")


def group_desktop():
    model = os.path.join(new_dir("desk-"), "desk.safetensors")
    write_file(model, desktop_st_bytes())
    demo = os.path.join(GGML, "mixed_llama_tiny.gguf")

    def names(opts, label, expect):
        errs = Errs()
        with Mount(model, ["-o", opts]) as m:
            tj = load_json(m.path("tensors.json"))
            for e in tj["tensors"]:
                sfx = DESK_SUFFIX[e["dtype"]]
                p = e["path"]
                base = p.rsplit("/", 1)[-1]
                if not base.endswith("." + sfx) or base.count(".") != 1:
                    errs.add("%s: %s is not NAME.%s" % (label, p[:80], sfx))
                if len(base.encode()) > 255:
                    errs.add("%s: %d-byte name" % (label, len(base.encode())))
                try:
                    got = os.getxattr(m.path(p), "user.weightfs.dtype").decode()
                    if got != e["dtype"]:
                        errs.add("%s: %s xattr dtype %r" % (label, p[:60], got))
                    if os.stat(m.path(p)).st_size != e["size"]:
                        errs.add("%s: %s size" % (label, p[:60]))
                except OSError as ex:
                    errs.add("%s: %s: %s" % (label, p[:60], ex.strerror))
            paths = {e["name"]: e["path"] for e in tj["tensors"]}
            for name, sfx in expect.items():
                if not paths[name].endswith("." + sfx):
                    errs.add("%s: %s is %s, expected .%s" % (label, name, paths[name][:60], sfx))
            if paths["clash.a"] != "clash/a.f32" or not os.path.isdir(m.path("clash/a")):
                errs.add("%s: clash.a is %r (expected clash/a.f32 beside the folder clash/a)"
                         % (label, paths["clash.a"]))
            with open(m.path(paths["text.bytes"]), "rb") as f:
                if f.read() != DESK_TEXT:
                    errs.add("%s: text.bytes reads back wrong" % label)
            found = walk_files(m)
            want_f = {p.encode() for p in paths.values()} | {b"metadata.json", b"tensors.json"}
            if found != want_f:
                errs.add("%s: os.walk: %r" % (label, sorted(found ^ want_f)[:4]))
        errs.raise_if_any()
        return "%d tensors" % len(paths)
    common = {"mask.all_true": "bool", "text.bytes": "u8", "ids.i8": "i8", "ids.i16": "i16",
              "ids.i32": "i32", "ids.i64": "i64", "ids.u16": "u16", "ids.u32": "u32", "ids.u64": "u64",
              "cplx": "c64"}
    floats = ("model.layers.0.mlp.up_proj.weight", "model.layers.1.self_attn.q_proj.weight",
              "model.layers.1.mlp.up_proj.weight", "model.embed_tokens.weight")
    check("desktop: -o suffix names every tensor file NAME.<dtype suffix> (f32 view)", names,
          "suffix", "suffix", dict(common, **{n: "f32" for n in floats}))
    check("desktop: -o suffix with dtype=stored: f16, bf16, f64, f8e4m3 kept", names,
          "suffix,dtype=stored", "stored", dict(common, **dict(zip(floats, ("f16", "bf16", "f64", "f8e4m3")))))

    def npy_wins():
        with Mount(model, ["-o", "suffix,npy"]) as m:
            tj = load_json(m.path("tensors.json"))
            bad = [e["path"] for e in tj["tensors"] if not e["path"].endswith(".npy")]
            if bad:
                raise Fail("not .npy under -o npy,suffix: %r" % bad[:3])
    check("desktop: -o npy keeps NAME.npy when suffix is given too", npy_wins)

    def gio_suffix():
        env = desktop_mime_env()
        with Mount(model, ["-d", "-o", "suffix"]) as m:
            tj = load_json(m.path("tensors.json"))
            want = {m.path(e["path"]): "application/x-weightfs-" + DESK_SUFFIX[e["dtype"]]
                    for e in tj["tensors"]}
            want[m.path("WEIGHTFS.txt")] = "text/plain"
            time.sleep(0.2)
            opens = fuse_opens(m)
            got = gio_types(sorted(want), env)
            after = fuse_opens(m)
            errs = Errs()
            for p, ty in sorted(want.items()):
                if got.get(p) != ty:
                    errs.add("%s: %r, expected %s" % (os.path.relpath(p, m.mp)[:60], got.get(p), ty))
            if "opcode: LOOKUP (" not in m.stderr():
                errs.add("no debug output from -d: cannot tell whether gio opened files")
            if after != opens:
                errs.add("gio opened files %d times to type them (the type must come from the name)"
                         % (after - opens))
            bool_p = m.path(next(e["path"] for e in tj["tensors"] if e["name"] == "mask.all_true"))
            if got.get(bool_p, "").startswith("image/"):
                errs.add("the all-true BOOL tensor is typed %s" % got[bool_p])
            errs.raise_if_any()
        return "%d files" % len(want)
    check("desktop: gio info types every -o suffix file by name (installed XML), without opening it",
          gio_suffix)

    def gio_without():
        env = desktop_mime_env()
        with Mount(model) as m:
            tj = load_json(m.path("tensors.json"))
            p = {e["name"]: m.path(e["path"]) for e in tj["tensors"]}
            got = gio_types([p["mask.all_true"], p["text.bytes"]], env)
        # what issue 13 saw: sniffed types; informational, as they depend on
        # the shared-mime-info release
        return "without -o suffix: all-true BOOL %s, text U8 %s" % (
            got.get(p["mask.all_true"]), got.get(p["text.bytes"]))
    check("desktop: gio info without -o suffix (sniffed types, for reference)", gio_without)

    def gio_npy():
        env = desktop_mime_env()
        with Mount(model, ["-o", "npy"]) as m:
            tj = load_json(m.path("tensors.json"))
            ps = [m.path(e["path"]) for e in tj["tensors"]]
            got = gio_types(ps, env)
            bad = [(os.path.relpath(p, m.mp)[:40], got.get(p)) for p in ps if got.get(p) != "application/x-npy"]
            if bad:
                raise Fail("not application/x-npy: %r" % bad[:4])
    check("desktop: gio info types -o npy files application/x-npy", gio_npy)

    def summary_demo():
        errs = Errs()
        with Mount(demo, ["-o", "suffix"]) as m:
            tj = load_json(m.path("tensors.json"))
            st = os.stat(m.path("WEIGHTFS.txt"))
            with open(m.path("WEIGHTFS.txt"), "rb") as f:
                raw = f.read()
            if len(raw) != st.st_size:
                errs.add("read %d bytes, st_size %d" % (len(raw), st.st_size))
            text = raw.decode("utf-8")
            ts = tj["tensors"]
            params = sum(math.prod(e["shape"]) for e in ts)
            for want in ("Model:        Oracle Tiny Llama\n", "Architecture: llama\n",
                         "Parameters:   {:,} (".format(params), "in %d tensors\n" % len(ts),
                         "Source:       GGUF v3, mixed_llama_tiny.gguf",
                         "raw little-endian", "tensors.json", "user.weightfs.shape",
                         "token_embd.weight is token_embd/weight.f32",
                         "A file's suffix names its dtype: .f32 float32.",
                         "Layers blk.N: 2 layers, 18 tensors"):
                if want not in text:
                    errs.add("no %r" % want)
            lines = text.splitlines()
            # the types table: each type with its tensor count, in the model's bytes order
            counts = {}
            for e in ts:
                counts[e["type"]] = counts.get(e["type"], 0) + 1
            for ty, n in counts.items():
                if not any(re.match(r"  %s +%d +\S+ +\S+ \S+ +float32 " % (re.escape(ty), n), l) for l in lines):
                    errs.add("types table: no line for %s x%d" % (ty, n))
            # the layer table: one row per layer, the types in the model's order
            head = next((l for l in lines if l.startswith("  layer ")), "")
            cols = head.split()[1:-1]
            for layer in (0, 1):
                row = next((l.split() for l in lines if l.startswith("  %d " % layer)), None)
                want_row = [next(e["type"] for e in ts if e["name"] == "blk.%d.%s.weight" % (layer, c))
                            for c in cols]
                if row is None or row[1:-1] != want_row:
                    errs.add("layer %d row %r, expected %r" % (layer, row, want_row))
            if cols[:3] != ["attn_norm", "attn_q", "attn_k"]:
                errs.add("layer columns %r" % cols)
            for e in ts:
                if not e["name"].startswith("blk.") and e["name"] not in text:
                    errs.add("other tensor %s not listed" % e["name"])
        errs.raise_if_any()
        return "%d bytes" % len(raw)
    check("desktop: WEIGHTFS.txt of the demo model: name, architecture, parameters, types, layers",
          summary_demo)

    def summary_folder():
        d = new_dir("desk-hf-")
        write_file(os.path.join(d, "model.safetensors"), desktop_st_bytes())
        write_file(os.path.join(d, "config.json"),
                   b'{"architectures": ["LlamaForCausalLM"], "_name_or_path": "org/tiny-desk"}')
        write_file(os.path.join(d, "WEIGHTFS.txt"), b"the folder's own\n")
        with Mount(d) as m:
            text = open(m.path("WEIGHTFS.txt"), "rb").read().decode()
            errs = Errs()
            for want in ("Model:        org/tiny-desk\n", "Architecture: LlamaForCausalLM\n",
                         "Layers model.layers.N: 2 layers, 4 tensors", "BOOL"):
                if want not in text:
                    errs.add("no %r" % want)
            if "the folder's own" in text:
                errs.add("the folder's WEIGHTFS.txt is shown instead of the summary")
            if os.listdir(m.mp).count("WEIGHTFS.txt") != 1:
                errs.add("root lists WEIGHTFS.txt %d times" % os.listdir(m.mp).count("WEIGHTFS.txt"))
            errs.raise_if_any()
    check("desktop: a model folder's summary takes config.json's name and architecture, "
          "and its own WEIGHTFS.txt is left out", summary_folder)
