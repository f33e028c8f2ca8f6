#!/usr/bin/python3
"""A small safetensors reader and writer (numpy), for the test references.

    save({"name": array, ...}, path, metadata=None)   # F32, F16, BF16 (as np.uint16 + dtype="BF16")
    load(path) -> {name: np.ndarray float32/float16}   # BF16 widened to float32
"""
import json
import struct

import numpy as np

_DT = {"F32": np.float32, "F16": np.float16, "F64": np.float64, "I64": np.int64,
       "I32": np.int32, "BF16": np.uint16, "U8": np.uint8, "I8": np.int8}


def save(tensors, path, metadata=None, dtypes=None):
    """dtypes: optional {name: "BF16"} for arrays given as float32 to be stored as bfloat16."""
    dtypes = dtypes or {}
    header, blobs, off = {}, [], 0
    for name in sorted(tensors):
        a = np.ascontiguousarray(tensors[name])
        dt = dtypes.get(name)
        if dt == "BF16":
            a = (a.astype(np.float32).view(np.uint32) >> 16).astype(np.uint16)  # truncation
        else:
            dt = {np.dtype(v): k for k, v in _DT.items() if k != "BF16"}[a.dtype]
        b = a.tobytes()
        header[name] = {"dtype": dt, "shape": list(a.shape), "data_offsets": [off, off + len(b)]}
        blobs.append(b)
        off += len(b)
    if metadata:
        header["__metadata__"] = metadata
    h = json.dumps(header, separators=(",", ":")).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


def load(path):
    with open(path, "rb") as f:
        buf = f.read()
    n = struct.unpack_from("<Q", buf)[0]
    header = json.loads(buf[8:8 + n])
    base = 8 + n
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        b, e = info["data_offsets"]
        a = np.frombuffer(buf[base + b:base + e], dtype=_DT[info["dtype"]]).reshape(info["shape"])
        if info["dtype"] == "BF16":
            a = (a.astype(np.uint32) << 16).view(np.float32)
        out[name] = a
    return out
