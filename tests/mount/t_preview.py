"""Group preview: -o preview's NAME.png files, read back with a PNG reader
written here (signature, chunk layout and CRCs, the zlib stream's stored
blocks and Adler-32, IHDR), their pixels against a numpy rendering of the
rule in src/mount/wf_preview.h, st_size before any read, weightfs cat -o
preview, and EIO once the model changed.
"""

import json
import os
import shutil
import struct

import numpy as np

from wf_harness import check, Errs, Fail, GGML, Mount, new_dir, STO
from wf_models import GGML_MAN, gguf_expected, GGUF_DTYPE, ST_MAN
from t_stats import run

MAXPX, STRIP = 1024, 16


def _crc_table():
    t = []
    for n in range(256):
        c = n
        for _ in range(8):
            c = (0xEDB88320 ^ (c >> 1)) if c & 1 else c >> 1
        t.append(c)
    return t


CRC = _crc_table()


def crc32(b):
    c = 0xFFFFFFFF
    for x in b:
        c = CRC[(c ^ x) & 0xFF] ^ (c >> 8)
    return c ^ 0xFFFFFFFF


def adler32(b):
    a = np.frombuffer(b, np.uint8).astype(np.int64)
    s1 = (1 + int(a.sum())) % 65521
    # s2 = sum over i of (1 + a[0] + ... + a[i]) mod 65521
    n = len(a)
    s2 = (n + int((a * np.arange(n, 0, -1, dtype=np.int64)).sum())) % 65521
    return (s2 << 16) | s1


def read_png(data):
    """(width, height, uint8 array [h, w, 3]) from an 8-bit RGB PNG whose
    IDAT holds stored deflate blocks; raises Fail on any defect."""
    if data[:8] != b"\x89PNG\r\n\x1a\n":
        raise Fail("bad signature %r" % data[:8])
    p, chunks = 8, []
    while p < len(data):
        if p + 12 > len(data):
            raise Fail("truncated chunk at %d" % p)
        n = struct.unpack(">I", data[p:p + 4])[0]
        ty, body = data[p + 4:p + 8], data[p + 8:p + 8 + n]
        crc = struct.unpack(">I", data[p + 8 + n:p + 12 + n])[0]
        if crc != crc32(ty + body):
            raise Fail("chunk %r: CRC %08x, computed %08x" % (ty, crc, crc32(ty + body)))
        chunks.append((ty, body))
        p += 12 + n
    if p != len(data) or [c[0] for c in chunks] != [b"IHDR", b"IDAT", b"IEND"] or chunks[2][1]:
        raise Fail("chunks %r" % [c[0] for c in chunks])
    w, h, depth, ctype, comp, filt, inter = struct.unpack(">IIBBBBB", chunks[0][1])
    if not (w and h) or (depth, ctype, comp, filt, inter) != (8, 2, 0, 0, 0):
        raise Fail("IHDR %r" % ((w, h, depth, ctype, comp, filt, inter),))
    z = chunks[1][1]
    if (z[0] & 0x0F) != 8 or ((z[0] << 8) | z[1]) % 31 or z[1] & 0x20:
        raise Fail("zlib header %02x %02x" % (z[0], z[1]))
    q, raw, final = 2, bytearray(), False
    while not final:
        hdr = z[q]
        final, btype = hdr & 1, (hdr >> 1) & 3
        if btype != 0:
            raise Fail("block type %d, expected stored" % btype)
        ln, nln = struct.unpack("<HH", z[q + 1:q + 5])
        if ln ^ nln != 0xFFFF:
            raise Fail("stored block LEN/NLEN %d/%d" % (ln, nln))
        raw += z[q + 5:q + 5 + ln]
        q += 5 + ln
    if q + 4 != len(z) or struct.unpack(">I", z[q:q + 4])[0] != adler32(bytes(raw)):
        raise Fail("Adler-32 or trailing bytes")
    if len(raw) != h * (1 + 3 * w):
        raise Fail("%d bytes of scanlines for %dx%d" % (len(raw), w, h))
    rows = np.frombuffer(bytes(raw), np.uint8).reshape(h, 1 + 3 * w)
    if rows[:, 0].any():
        raise Fail("a scanline uses a filter")
    return w, h, rows[:, 1:].reshape(h, w, 3)


def png_size(w, h):
    raw = h * (1 + 3 * w)
    return 8 + 25 + 12 + 2 + raw + 5 * ((raw + 65534) // 65535) + 4 + 12


def expected_image(values, shape):
    """The picture wf_preview.h describes, from the float32 values."""
    a = np.asarray(values, np.float64).ravel()
    if a.size == 0:
        return np.array([[[128, 128, 128]]], np.uint8)
    cols = shape[-1] if shape else 1
    rows = a.size // cols
    strip = len(shape) < 2
    W = min(cols, MAXPX)
    H = 1 if strip else min(rows, MAXPX)
    r = np.arange(a.size) // cols
    c = np.arange(a.size) % cols
    pix = (r * H // rows) * W + c * W // cols
    npx = W * H
    isnan, isinf = np.isnan(a), np.isinf(a)
    anynan = np.bincount(pix, weights=isnan, minlength=npx) > 0
    # the first infinity met in each pixel
    order = np.nonzero(isinf)[0]
    firstinf = np.zeros(npx)
    pinf = pix[order]
    _, first = np.unique(pinf, return_index=True)
    firstinf[pinf[first]] = a[order[first]]
    anyinf = np.zeros(npx, bool)
    anyinf[pinf] = True
    fin = ~(isnan | isinf)
    idx = np.nonzero(fin)[0]
    # largest magnitude, the first met on a tie
    o = np.lexsort((idx, -np.abs(a[idx]), pix[idx]))
    sel = idx[o]
    _, first = np.unique(pix[sel], return_index=True)
    val = np.zeros(npx)
    hasval = np.zeros(npx, bool)
    val[pix[sel[first]]] = a[sel[first]]
    hasval[pix[sel[first]]] = True
    kind = np.where(anynan, 2, np.where(anyinf, 3, np.where(hasval, 1, 0)))
    m = np.sort(np.abs(val[kind == 1]).astype(np.float32))
    s = float(m[(m.size - 1) * 99 // 100]) if m.size else 0.0
    if s == 0 and m.size:
        s = float(m[-1])
    if s == 0:
        s = 1.0
    t = np.clip(val.astype(np.float32).astype(np.float64) / s, -1, 1)
    k = np.floor(255.0 * (1.0 - np.abs(t)) + 0.5).astype(np.uint8)
    img = np.stack([np.where(t >= 0, 255, k), k, np.where(t >= 0, k, 255)], -1).astype(np.uint8)
    img[kind == 2] = (255, 0, 255)
    img[(kind == 3) & (firstinf > 0)] = (255, 255, 0)
    img[(kind == 3) & (firstinf < 0)] = (0, 255, 255)
    img = img.reshape(H, W, 3)
    return np.repeat(img, STRIP, 0) if strip else img


def oracle_values():
    """(model file, tensor name, shape, float values or None) for every
    tensor of both oracles."""
    for t in GGML_MAN["tensors"]:
        exp = gguf_expected(t)
        arr = None if exp is None else np.frombuffer(exp, GGUF_DTYPE.get(t["type"].upper(), "<f4"))
        yield t["file"], GGML, t["name"], list(reversed(t["ne"])), arr
    for t in ST_MAN["tensors"]:
        with open(os.path.join(STO, t["expected"]), "rb") as f:
            yield t["file"], STO, t["name"], t["shape"], np.frombuffer(f.read(), t["expected_dtype"])


def every_oracle_preview():
    errs, n, by_file = Errs(), 0, {}
    for fname, root, name, shape, arr in oracle_values():
        by_file.setdefault((root, fname), []).append((name, shape, arr))
    for (root, fname), tensors in sorted(by_file.items()):
        if fname.startswith("split_") and "00001" not in fname:
            continue  # the set mounts through its first part
        with Mount(os.path.join(root, fname), ["-o", "preview"]) as m:
            with open(m.path("tensors.json")) as f:
                paths = {e["name"]: e["path"] for e in json.load(f)["tensors"]}
            for name, shape, arr in tensors:
                label = "%s %r" % (fname, name)
                png = m.path(paths[name] + ".png") if not paths[name].endswith(".tensor") else \
                    m.path(paths[name][:-7] + ".png")
                size = os.stat(png).st_size  # before any read
                if arr is None:
                    try:
                        open(png, "rb").read()
                        errs.add("%s: no decoder, yet its preview read" % label)
                    except OSError as e:
                        if e.errno != 5:
                            errs.add("%s: %s, expected EIO" % (label, e))
                    continue
                with open(png, "rb") as f:
                    data = f.read()
                try:
                    w, h, img = read_png(data)
                except Fail as e:
                    errs.add("%s: %s" % (label, e))
                    continue
                if size != len(data) or size != png_size(w, h):
                    errs.add("%s: st_size %d, read %d, formula %d" % (label, size, len(data), png_size(w, h)))
                want = expected_image(arr, shape)
                if img.shape != want.shape or not np.array_equal(img, want):
                    bad = int((img != want).any(-1).sum()) if img.shape == want.shape else -1
                    errs.add("%s: %s pixels, %d differ from numpy's" % (label, img.shape, bad))
                n += 1
    errs.raise_if_any()
    return "%d previews" % n


def big_and_special():
    """Tensors over 1024 a side (folded 3-D, a long strip), NaN, both
    infinities and zeros; cat -o preview gives the mount's bytes; a changed
    model gives EIO, also for a preview already rendered."""
    errs = Errs()
    rng = np.random.default_rng(23)
    a = rng.standard_normal((3, 700, 1300)).astype(np.float32)
    a[0, 5, :40] = np.nan
    a[1, 100:110, 300] = np.inf
    a[2, 7, 9] = -np.inf
    a[2, 600:, :] = 0
    b = (rng.standard_normal(3000) * 10).astype(np.float32)
    b[17] = np.nan
    c = np.zeros((4, 5), np.float32)
    tensors = [("big.fold", a), ("big.strip", b), ("zeros", c), ("empty", np.zeros((0, 4), np.float32))]
    d = new_dir("preview-")
    path = os.path.join(d, "p.safetensors")
    hdr, off, blobs = {}, 0, []
    for name, x in tensors:
        raw = x.tobytes()
        hdr[name] = {"dtype": "F32", "shape": list(x.shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        blobs.append(raw)
    h = json.dumps(hdr).encode()
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))
    files = {"big.fold": "big/fold.png", "big.strip": "big/strip.png", "zeros": "zeros.png", "empty": "empty.png"}
    with Mount(path, ["-o", "preview,suffix"]) as m:
        for name, x in tensors:
            p = m.path(files[name])
            size = os.stat(p).st_size
            with open(p, "rb") as f:
                data = f.read()
            w, hh, img = read_png(data)
            if size != len(data):
                errs.add("%s: st_size %d, read %d" % (name, size, len(data)))
            want = expected_image(x, list(x.shape))
            if not np.array_equal(img, want):
                errs.add("%s: %dx%d, %s pixels differ" % (name, w, hh, int((img != want).any(-1).sum())
                                                          if img.shape == want.shape else "all"))
            rc, out, err = run(["cat", "-o", "preview", path, name + ".png"])
            rc2, out2, err2 = run(["cat", "-o", "preview", path, files[name]])
            if rc or rc2 or out.encode("utf-8", "surrogateescape") != data or out2 != out:
                errs.add("%s: cat -o preview differs from the mount (%d %d %s)" % (name, rc, rc2, err + err2))
        if os.path.exists(m.path("big/fold.f32.png")) or not os.path.exists(m.path("big/fold.f32")):
            errs.add("with suffix: the picture is NAME.png beside NAME.f32")
    # a model changed under the mount: EIO, for a cached preview too
    d2 = new_dir("preview-chg-")
    model = shutil.copy(os.path.join(GGML, "mixed_llama_tiny.gguf"), os.path.join(d2, "m.gguf"))
    with Mount(model, ["-o", "preview"]) as m:
        p = m.path("blk/0/attn_q/weight.png")
        with open(p, "rb") as f:
            f.read()
        st = os.stat(model)
        os.utime(model, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
        for q in (p, m.path("blk/1/ffn_up/weight.png")):
            try:
                fd = os.open(q, os.O_RDONLY | os.O_DIRECT)
                try:
                    os.pread(fd, 4096, 0)
                finally:
                    os.close(fd)
                errs.add("%s read after the model changed" % os.path.basename(q))
            except OSError as e:
                if e.errno != 5:
                    errs.add("%s: %s, expected EIO" % (q, e))
    errs.raise_if_any()


def file_types():
    """The mime XML types GGUF and safetensors files by name and by magic
    (copies without their extension), a mount's model.safetensors, the
    metadata folder's .txt/.json files under -o suffix (chosen by the JSON
    value's kind) and the previews (image/png)."""
    from t_desktop import desktop_mime_env, gio_types
    errs = Errs()
    env = desktop_mime_env()
    d = new_dir("types-")
    plain = {os.path.join(d, "g"): os.path.join(GGML, "type_f32.gguf"),
             os.path.join(d, "s"): os.path.join(STO, "dtype_f32.safetensors")}
    for dst, src in plain.items():
        shutil.copy(src, dst)
    model = os.path.join(GGML, "mixed_llama_tiny.gguf")
    with Mount(model, ["-o", "preview,suffix"]) as m:
        with open(m.path("metadata.json")) as f:
            md = json.load(f)
        files = sorted(os.listdir(m.path("metadata")))
        want = sorted(k + (".txt" if isinstance(v, str) else ".json") for k, v in md.items())
        if files != want:
            errs.add("metadata/ under -o suffix: %r..., expected %r..." % (files[:5], want[:5]))
        with open(m.path("metadata/general.type.txt"), "rb") as f:
            if f.read() != b"model":
                errs.add("metadata/general.type.txt does not hold the value")
        want_t = {os.path.join(GGML, "type_f32.gguf"): "application/x-gguf",
                  os.path.join(STO, "dtype_f32.safetensors"): "application/x-safetensors",
                  os.path.join(d, "g"): "application/x-gguf", os.path.join(d, "s"): "application/x-safetensors",
                  m.path("model.safetensors"): "application/x-safetensors",
                  m.path("metadata/general.type.txt"): "text/plain",
                  m.path("metadata/llama.block_count.json"): "application/json",
                  m.path("blk/0/attn_q/weight.png"): "image/png"}
        got = gio_types(sorted(want_t), env)
        for p_, t in want_t.items():
            if got.get(p_) != t:
                errs.add("%s: %s, expected %s" % (p_.replace(m.mp, "MNT"), got.get(p_), t))
    with Mount(model) as m:
        if "general.type" not in os.listdir(m.path("metadata")):
            errs.add("without -o suffix the metadata files keep their bare names")
    errs.raise_if_any()


def group_preview():
    check("preview: every oracle tensor's NAME.png: PNG read here, st_size, pixels against numpy",
          every_oracle_preview)
    check("preview: folded and strip tensors over 1024, NaN/inf/zeros/empty, cat -o preview, EIO on change",
          big_and_special)
    check("preview: file types: GGUF/safetensors by glob and magic, metadata .txt/.json, NAME.png", file_types)
