#!/usr/bin/python3
"""A minimal GGUF v3 writer for tests: typed KVs and F32/F16 tensors (numpy arrays).

    w = GGUFWriter()
    w.kv("general.architecture", "llama")            # str -> STRING
    w.kv("llama.block_count", 2, U32)                # explicit type
    w.kv("tokenizer.ggml.tokens", ["a", "b"])        # list of str -> ARRAY of STRING
    w.kv("tokenizer.ggml.token_type", [1, 1], I32)   # list of int, element type I32
    w.tensor("token_embd.weight", np.zeros((10, 4), np.float32))   # numpy (rows, cols)
    w.write("out.gguf")

Layout as docs/hf-to-gguf.md section 6 (and ggml's gguf.cpp): little endian, version 3,
ne innermost first (numpy's last axis is ne[0]), alignment 32 (or general.alignment), each
tensor's data padded to the alignment, offsets the running padded sum.
"""
import struct

import numpy as np

U8, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64 = range(13)
_PACK = {U8: "<B", I8: "<b", U16: "<H", I16: "<h", U32: "<I", I32: "<i", F32: "<f",
         BOOL: "<?", U64: "<Q", I64: "<q", F64: "<d"}
GGML_F32, GGML_F16 = 0, 1


def _str(s):
    b = s.encode("utf-8") if isinstance(s, str) else bytes(s)
    return struct.pack("<Q", len(b)) + b


def _val(t, v):
    if t == STRING:
        return _str(v)
    return struct.pack(_PACK[t], v)


class GGUFWriter:
    def __init__(self, alignment=32):
        self.kvs = []       # (key, type, value, elem_type)
        self.tensors = []   # (name, array, ggml_type)
        self.alignment = alignment

    def kv(self, key, value, typ=None):
        """Add a KV. typ is the scalar type, or the element type for a list."""
        if any(k == key for k, *_ in self.kvs):
            raise ValueError("duplicate key " + key)
        if isinstance(value, (list, tuple)):
            if not value:
                raise ValueError("empty array for " + key)
            et = typ
            if et is None:
                v0 = value[0]
                et = (STRING if isinstance(v0, (str, bytes)) else BOOL if isinstance(v0, bool)
                      else F32 if isinstance(v0, float) else I32)
            self.kvs.append((key, ARRAY, list(value), et))
        else:
            t = typ
            if t is None:
                t = (STRING if isinstance(value, (str, bytes)) else BOOL if isinstance(value, bool)
                     else F32 if isinstance(value, float) else U32)
            self.kvs.append((key, t, value, None))
        if key == "general.alignment":
            self.alignment = int(value)

    def set(self, key, value):
        """Replace the value of a scalar KV already added, keeping its position and type."""
        for i, (k, t, v, et) in enumerate(self.kvs):
            if k == key:
                self.kvs[i] = (k, t, value, et)
                return
        raise KeyError(key)

    def tensor(self, name, arr, ggml_type=None):
        arr = np.ascontiguousarray(arr)
        if ggml_type is None:
            ggml_type = GGML_F16 if arr.dtype == np.float16 else GGML_F32
        want = np.float16 if ggml_type == GGML_F16 else np.float32
        if ggml_type not in (GGML_F32, GGML_F16):
            raise ValueError("only F32/F16")
        if len(name.encode()) >= 64:
            raise ValueError("tensor name too long: " + name)
        self.tensors.append((name, arr.astype(want, copy=False), ggml_type))

    def _pad(self, n):
        a = self.alignment
        return (n + a - 1) // a * a

    def to_bytes(self):
        out = [b"GGUF", struct.pack("<IQQ", 3, len(self.tensors), len(self.kvs))]
        for key, t, v, et in self.kvs:
            out.append(_str(key) + struct.pack("<I", t))
            if t == ARRAY:
                out.append(struct.pack("<IQ", et, len(v)))
                if et == STRING:
                    out.append(b"".join(_str(x) for x in v))
                else:
                    out.append(np.asarray(v, dtype=np.dtype(_PACK[et])).tobytes())
            else:
                out.append(_val(t, v))
        off = 0
        for name, arr, gt in self.tensors:
            shape = arr.shape if arr.ndim else (1,)
            out.append(_str(name) + struct.pack("<I", len(shape)))
            out.append(b"".join(struct.pack("<Q", d) for d in reversed(shape)))
            out.append(struct.pack("<IQ", gt, off))
            off += self._pad(arr.nbytes)
        head = b"".join(out)
        data = [head, b"\0" * (self._pad(len(head)) - len(head))]
        for name, arr, gt in self.tensors:
            b = arr.tobytes()
            data.append(b + b"\0" * (self._pad(len(b)) - len(b)))
        return b"".join(data)

    def write(self, path):
        with open(path, "wb") as f:
            f.write(self.to_bytes())
