"""st_file.py - the bytes of a safetensors file, for the test writers that
build models by hand (hfq_models.py with numpy, tests/fuzz/make_seeds.py
without it)."""
import json
import struct


def st_bytes(tensors, metadata=None):
    """safetensors file bytes: tensors = {name: (dtype, shape, raw bytes)}."""
    hdr, off, data = {}, 0, []
    if metadata:
        hdr["__metadata__"] = metadata
    for name in sorted(tensors):
        dt, shape, raw = tensors[name]
        hdr[name] = {"dtype": dt, "shape": list(shape), "data_offsets": [off, off + len(raw)]}
        off += len(raw)
        data.append(raw)
    h = json.dumps(hdr).encode()
    h += b" " * (-len(h) % 8)
    return struct.pack("<Q", len(h)) + h + b"".join(data)
