#!/usr/bin/env python3
"""Generates the malformed-model corpus in tests/malformed and the valid
edge cases in tests/valid.

    python3 tools/gen_malformed.py          # (re)write the files
    python3 tools/gen_malformed.py --check  # verify the committed files match

Every malformed file is small (< 64 KiB) and must be refused by weightfs
with the exit code and message substring recorded in
tests/malformed/expect.json (exit 3: malformed, WF_ERR_FORMAT; exit 4:
unsupported, WF_ERR_UNSUP; see src/main.c).  The messages are chosen so
that each file proves its own check fired.  Output is deterministic.
"""
import json
import os
import struct
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAL_DIR = os.path.join(ROOT, "tests", "malformed")
VALID_DIR = os.path.join(ROOT, "tests", "valid")
MAX_FILE = 64 * 1024

FORMAT, UNSUP = 3, 4

# GGUF value types
U8, I8, U16, I16, U32, I32, F32, BOOL, STR, ARR, U64, I64, F64 = range(13)
# ggml type ids
T_F32, T_F16, T_Q4_0, T_Q8_0, T_I8, T_I32 = 0, 1, 2, 8, 24, 26


def u32(v):
    return struct.pack("<I", v)


def u64(v):
    return struct.pack("<Q", v)


def gstr(s):
    b = s.encode() if isinstance(s, str) else s
    return u64(len(b)) + b


def head(n_tensors, n_kv, version=3, magic=b"GGUF"):
    return magic + u32(version) + u64(n_tensors) + u64(n_kv)


def kv(key, vtype, payload):
    return gstr(key) + u32(vtype) + payload


def kv_u32(key, v):
    return kv(key, U32, u32(v))


def kv_str(key, s):
    return kv(key, STR, gstr(s))


def tinfo(name, ne, gtype, off):
    out = gstr(name) + u32(len(ne))
    for n in ne:
        out += u64(n)
    return out + u32(gtype) + u64(off)


def pad(b, a=32):
    return b + b"\0" * (-len(b) % a)


def fill(n, seed=1):
    return bytes((seed + 7 * i) & 0xFF for i in range(n))


def one_tensor(name="w", ne=(8,), gtype=T_F32, off=0, data=32):
    """tensor info + padding + data for a single tensor."""
    return tinfo(name, ne, gtype, off), fill(data)


def gguf_with(kvs, infos, data, n_tensors=None, n_kv=None, version=3, align=32):
    b = head(len(infos) if n_tensors is None else n_tensors,
             len(kvs) if n_kv is None else n_kv, version)
    b += b"".join(kvs) + b"".join(infos)
    return pad(b, align) + data


def st(json_text, data=b"", hlen=None):
    h = json_text.encode() if isinstance(json_text, str) else json_text
    return u64(len(h) if hlen is None else hlen) + h + data


def T(dtype="F32", shape=(1,), offs=(0, 4)):
    return {"dtype": dtype, "shape": list(shape), "data_offsets": list(offs)}


def stj(obj, data=b""):
    return st(json.dumps(obj, separators=(",", ":")), data)


# ---- the reference valid GGUF whose every structural boundary is cut ----

def reference_gguf():
    """A small valid v3 file and the cuts at its structural boundaries:
    [(label, cut length, expected message)].  A long first key/value and a
    long first tensor name keep the count checks (n_kv * 14 and
    n_tensors * 25 bytes must be left) from firing before the field
    checks each cut is about."""
    cuts = []

    def trunc(label, field_at, cut, what):
        cuts.append((label, cut, "%s: truncated at byte %d (file is %d bytes)" % (what, field_at, cut)))

    def strpast(label, field_at, n, cut, what):
        cuts.append((label, cut, "%s: string length %d at byte %d runs past end of file" % (what, n, field_at)))

    b = b"GGUF"
    cuts.append(("magic", 2, "header: not a GGUF file (bad magic)"))
    b += u32(3)
    trunc("version", 4, 6, "header")
    b += u64(4)
    trunc("n_tensors", 8, 12, "header")
    b += u64(4)
    trunc("n_kv", 16, 20, "header")
    b += kv_str("general.description", "x" * 64)
    # kv 1: a string
    at = len(b)
    b += kv_str("general.architecture", "llama")
    k1 = "metadata key 'general.architecture'"
    trunc("kv1_key_len", at, at + 3, "metadata key 1")
    strpast("kv1_key", at, 20, at + 8 + 10, "metadata key 1")
    trunc("kv1_type", at + 28, at + 28 + 2, k1)
    trunc("kv1_str_len", at + 32, at + 32 + 5, k1)
    strpast("kv1_str", at + 32, 5, at + 40 + 2, k1)
    # kv 2: a u32
    at = len(b)
    b += kv_u32("general.alignment", 32)
    trunc("kv2_value", at + 29, at + 29 + 2, "metadata key 'general.alignment'")
    # kv 3: an array of strings
    at = len(b)
    b += kv("tokenizer.tokens", ARR, u32(STR) + u64(2) + gstr("a") + gstr("bc"))
    k3, el = "metadata key 'tokenizer.tokens'", at + 8 + 16 + 4
    trunc("kv3_type", at + 24, at + 24 + 1, k3)
    trunc("kv3_arr_type", el, el + 1, k3)
    trunc("kv3_arr_count", el + 4, el + 4 + 3, k3)
    cuts.append(("kv3_strings_fit", el + 12 + 5, k3 + ": array of 2 strings cannot fit in the 5 bytes left"))
    trunc("kv3_elem_len", el + 12 + 9, el + 12 + 9 + 7, k3)
    strpast("kv3_elem", el + 12 + 9, 2, el + 12 + 9 + 8 + 1, k3)
    # tensors
    b += tinfo("padding.tensor.with.a.rather.long.name.to.keep.the.count.check.happy.0123456789", (8,), T_F32, 0)
    at = len(b)
    b += tinfo("tok.weight", (4, 2), T_F32, 32)
    t1 = "tensor 'tok.weight'"
    trunc("t1_name_len", at, at + 4, "tensor 1")
    strpast("t1_name", at, 10, at + 8 + 5, "tensor 1")
    trunc("t1_n_dims", at + 18, at + 18 + 2, t1)
    trunc("t1_ne1", at + 22 + 8, at + 22 + 12, t1)
    trunc("t1_type", at + 38, at + 38 + 3, t1)
    trunc("t1_offset", at + 42, at + 42 + 7, t1)
    at = len(b)
    b += tinfo("out.weight", (32,), T_Q8_0, 64)
    trunc("t2_offset", at + 34, len(b) - 1, "tensor 'out.weight'")
    b += tinfo("norm", (), T_F32, 128)
    end_infos = len(b)
    data_start = end_infos + (-end_infos % 32)
    cuts.append(("infos_end", end_infos, "header: data section would start at byte %d, past end of file (%d bytes)"
                 % (data_start, end_infos)))
    cuts.append(("padding", data_start - 1, "header: data section would start at byte %d, past end of file (%d bytes)"
                  % (data_start, data_start - 1)))
    b = pad(b)
    b += fill(32, 3) + fill(32, 5) + fill(34, 9) + b"\0" * 30 + fill(4, 1)
    cuts.append(("t0_data", data_start + 16, "tensor 'padding.tensor.with.a.rather.long.name.to.keep.the.count.check.happy.0123456789': "
                 "data [0, +32) at offset 0 in the data section runs past end of file (%d bytes)" % (data_start + 16)))
    cuts.append(("t2_data", data_start + 64 + 33, "tensor 'out.weight': data [64, +34)"))
    cuts.append(("t3_data", len(b) - 1, "tensor 'norm': data [128, +4) at offset 128 in the data section runs past end "
                 "of file (%d bytes)" % (len(b) - 1)))
    return b, cuts


def reference_st():
    obj = {"__metadata__": {"format": "pt"}, "a": T("F32", (2,), (0, 8)), "b": T("I8", (3,), (8, 11))}
    text = json.dumps(obj, separators=(",", ":"))
    b = st(text, fill(11))
    return b, len(text)


def cases():
    """Yields (file name, bytes, exit code, message substring)."""
    ref, cuts = reference_gguf()
    for label, n, msg in cuts:
        assert 0 < n < len(ref), label
        yield "gguf_trunc_%s.gguf" % label, ref[:n], FORMAT, msg
    # the count checks, before anything is allocated
    yield "gguf_n_kv_cannot_fit.gguf", ref[:40], FORMAT, "header: n_kv 4 cannot fit in a 40-byte file"
    yield "gguf_n_tensors_cannot_fit.gguf", head(3, 0) + fill(74), FORMAT, \
        "header: n_tensors 3 cannot fit in a 98-byte file"
    # a header-length cut on a v2 file too
    yield "gguf_v2_trunc_n_kv.gguf", head(0, 1, version=2)[:22], FORMAT, "header: truncated at byte 16 (file is 22 bytes)"

    # header
    yield "gguf_bad_magic.gguf", b"GGUX" + ref[4:], FORMAT, "not a GGUF file (bad magic)"
    yield "gguf_version1.gguf", head(0, 0, version=1), UNSUP, "GGUF version 1 is obsolete"
    yield "gguf_version4.gguf", head(0, 0, version=4), UNSUP, "unsupported GGUF version 4"
    yield "gguf_big_endian.gguf", b"GGUF" + struct.pack(">I", 3) + struct.pack(">QQ", 0, 0), UNSUP, \
        "big-endian GGUF files are not supported"
    yield "gguf_big_endian_fugg.gguf", b"FUGG" + struct.pack(">I", 3) + struct.pack(">QQ", 0, 0), UNSUP, \
        "big-endian"

    # counts and lengths near 2^64
    yield "gguf_n_kv_max.gguf", head(0, 2**64 - 1) + fill(64), FORMAT, "n_kv 18446744073709551615 cannot fit"
    yield "gguf_n_kv_2pow63.gguf", head(0, 2**63), FORMAT, "n_kv 9223372036854775808 cannot fit"
    yield "gguf_n_tensors_max.gguf", head(2**64 - 1, 0) + fill(64), FORMAT, \
        "n_tensors 18446744073709551615 cannot fit"
    yield "gguf_key_len_max.gguf", head(0, 1) + u64(2**64 - 1) + fill(16), FORMAT, \
        "metadata key 0: string length 18446744073709551615"
    yield "gguf_str_len_wraps.gguf", head(0, 1) + kv("k", STR, u64(2**64 - 8)) + fill(16), FORMAT, \
        "metadata key 'k': string length 18446744073709551608"
    yield "gguf_arr_count_max.gguf", head(0, 1) + kv("arr", ARR, u32(U8) + u64(2**64 - 1)) + fill(8), FORMAT, \
        "array of 18446744073709551615 u8 values"
    yield "gguf_arr_bytes_wrap.gguf", head(0, 1) + kv("arr", ARR, u32(U64) + u64(2**61)) + fill(8), FORMAT, \
        "array of 2305843009213693952 u64 values runs past end"
    yield "gguf_arr_strings_count.gguf", head(0, 1) + kv("toks", ARR, u32(STR) + u64(2**60)) + fill(40), FORMAT, \
        "array of 1152921504606846976 strings cannot fit"
    yield "gguf_arr_string_len_max.gguf", head(0, 1) + kv("toks", ARR, u32(STR) + u64(2) + gstr("ok") + u64(2**64 - 1)) \
        + fill(8), FORMAT, "metadata key 'toks': string length 18446744073709551615"

    # metadata types and keys
    yield "gguf_arr_nested.gguf", head(0, 1) + kv("nest", ARR, u32(ARR) + u64(1) + u32(U8) + u64(1) + b"\0"), UNSUP, \
        "arrays of arrays are not supported"
    yield "gguf_kv_type_13.gguf", head(0, 1) + kv("k", 13, u32(0)), FORMAT, "unknown value type 13"
    yield "gguf_kv_type_max.gguf", head(0, 1) + kv("k", 2**32 - 1, u32(0)), FORMAT, "unknown value type 4294967295"
    yield "gguf_arr_elem_type_99.gguf", head(0, 1) + kv("a", ARR, u32(99) + u64(1) + u32(0)), FORMAT, \
        "unknown array element type 99"
    yield "gguf_dup_key.gguf", head(0, 2) + kv_u32("general.file_type", 1) + kv_u32("general.file_type", 2), FORMAT, \
        "metadata key 'general.file_type': duplicate key"
    yield "gguf_empty_key.gguf", head(0, 1) + kv_u32("", 1), FORMAT, "metadata key 0: empty key"

    # alignment
    info, data = one_tensor()
    yield "gguf_align_0.gguf", gguf_with([kv_u32("general.alignment", 0)], [info], data), FORMAT, \
        "general.alignment': 0 is not a power of two"
    yield "gguf_align_48.gguf", gguf_with([kv_u32("general.alignment", 48)], [info], data), FORMAT, \
        "general.alignment': 48 is not a power of two"
    yield "gguf_align_u64.gguf", gguf_with([kv("general.alignment", U64, u64(32))], [info], data), FORMAT, \
        "general.alignment': must be of type u32, not u64"
    yield "gguf_align_str.gguf", gguf_with([kv_str("general.alignment", "32")], [info], data), FORMAT, \
        "must be of type u32, not str"
    yield "gguf_align_2pow31.gguf", gguf_with([kv_u32("general.alignment", 2**31)], [info], data), FORMAT, \
        "data section would start at byte 2147483648"

    # tensor infos
    f = lambda infos, data=fill(64), **kw: gguf_with([], infos, data, **kw)
    yield "gguf_dup_tensor.gguf", f([tinfo("blk.0.w", (8,), T_F32, 0), tinfo("blk.0.w", (8,), T_F32, 32)]), FORMAT, \
        "tensor 'blk.0.w': duplicate tensor name"
    yield "gguf_ndims_5.gguf", f([tinfo("five", (1, 1, 1, 1, 1), T_F32, 0)]), FORMAT, "tensor 'five': n_dims 5 exceeds"
    yield "gguf_ndims_max.gguf", head(1, 0) + gstr("nd") + u32(2**32 - 1) + fill(64), FORMAT, \
        "tensor 'nd': n_dims 4294967295 exceeds"
    yield "gguf_ne_negative.gguf", f([tinfo("neg", (2**63,), T_I8, 0)]), FORMAT, \
        "tensor 'neg': ne[0] = 9223372036854775808 is negative"
    yield "gguf_ne_last_negative.gguf", f([tinfo("neg2", (2, 3, 2**64 - 1), T_I8, 0)]), FORMAT, \
        "tensor 'neg2': ne[2] = 18446744073709551615"
    yield "gguf_ne_product_overflow.gguf", f([tinfo("prod", (2**32, 2**32), T_I8, 0)]), FORMAT, \
        "tensor 'prod': element count overflows"
    yield "gguf_ne_product_overflow4.gguf", f([tinfo("prod4", (2**16, 2**16, 2**16, 2**16), T_I8, 0)]), FORMAT, \
        "tensor 'prod4': element count overflows"
    yield "gguf_nbytes_overflow.gguf", f([tinfo("big", (2**62,), T_F32, 0)]), FORMAT, "tensor 'big': byte size overflows"
    yield "gguf_q4_0_ne0_33.gguf", f([tinfo("q", (33, 2), T_Q4_0, 0)]), FORMAT, \
        "tensor 'q': innermost dimension 33 is not a multiple of the Q4_0 block size 32"
    for tid in (4, 5, 31, 33, 36, 38, 43, 2**32 - 1):
        yield "gguf_type_%d.gguf" % tid, f([tinfo("t", (256,), tid, 0)], fill(1024)), FORMAT, \
            "tensor 't': unknown or removed ggml type id %d" % tid

    # tensor data placement
    yield "gguf_offset_misaligned.gguf", f([tinfo("w", (8,), T_F32, 4)]), FORMAT, \
        "tensor 'w': offset 4 is not a multiple of the alignment 32"
    yield "gguf_offset_past_eof.gguf", f([tinfo("w", (8,), T_F32, 1024)]), FORMAT, \
        "tensor 'w': data [1024, +32)"
    yield "gguf_offset_wraps.gguf", f([tinfo("w", (8,), T_F32, 2**64 - 32)]), FORMAT, \
        "tensor 'w': data [18446744073709551584, +32)"
    yield "gguf_data_short_by_one.gguf", f([tinfo("w", (16,), T_F32, 0)], fill(63)), FORMAT, \
        "tensor 'w': data [0, +64) at offset 0 in the data section runs past end of file (127 bytes)"
    yield "gguf_second_tensor_past_eof.gguf", f([tinfo("a", (8,), T_F32, 0), tinfo("b", (8,), T_F32, 32)], fill(40)), \
        FORMAT, "tensor 'b': data [32, +32)"
    # overlapping tensor data: a small file presenting many times its size
    yield "gguf_overlap_1000_at_0.gguf", f([tinfo("t%03d" % i, (1024,), T_F32, 0) for i in range(1000)], fill(4096)), \
        FORMAT, "tensor 't001': data [0, +4096) overlaps tensor 't000' [0, +4096) in the data section"
    yield "gguf_overlap_partial.gguf", f([tinfo("a", (16,), T_F32, 0), tinfo("b", (16,), T_F32, 32)], fill(96)), \
        FORMAT, "tensor 'b': data [32, +64) overlaps tensor 'a' [0, +64) in the data section"
    # listed in the other order, one inside the other, beyond a harmless zero-size tensor
    yield "gguf_overlap_contained.gguf", f([tinfo("inner", (8,), T_F32, 64), tinfo("empty", (0,), T_F32, 64),
                                            tinfo("outer", (32,), T_F32, 0)], fill(128)), \
        FORMAT, "tensor 'inner': data [64, +32) overlaps tensor 'outer' [0, +128) in the data section"

    # ---- safetensors ----
    sref, hl = reference_st()
    for label, n in (("len_0", 0), ("len_4", 4), ("len_8", 8), ("json_half", 8 + hl // 2),
                     ("json_end", 8 + hl), ("data_half", 8 + hl + 5), ("data_last", len(sref) - 1)):
        msg = {
            "len_0": "file is 0 bytes, too short",
            "len_4": "file is 4 bytes, too short",
            "len_8": "header: length %d runs past end of file (8 bytes)" % hl,
            "json_half": "runs past end of file (%d bytes)" % (8 + hl // 2),
            "json_end": "tensors cover 11 bytes but the file holds 0 after the header (file truncated)",
            "data_half": "tensors cover 11 bytes but the file holds 5 after the header",
            "data_last": "tensors cover 11 bytes but the file holds 10 after the header",
        }[label]
        yield "st_trunc_%s.safetensors" % label, sref[:n], FORMAT, msg

    yield "st_header_len_past_eof.safetensors", st("{}", hlen=1000), FORMAT, "header: length 1000 runs past end of file (10 bytes)"
    yield "st_header_len_100MB_plus_1.safetensors", st("{}", hlen=100000001), FORMAT, \
        "length 100000001 exceeds the 100 MB limit"
    yield "st_header_len_100MB.safetensors", st("{}", hlen=100000000), FORMAT, \
        "length 100000000 runs past end of file"
    yield "st_header_len_max.safetensors", st("{}", hlen=2**64 - 1), FORMAT, \
        "length 18446744073709551615 exceeds the 100 MB limit"
    yield "st_header_len_2pow63.safetensors", st("{}", hlen=2**63), FORMAT, "length 9223372036854775808 exceeds"
    hdr = json.dumps({"a": T()}, separators=(",", ":"))
    yield "st_header_len_short.safetensors", st(hdr, fill(4), hlen=len(hdr) - 3), FORMAT, "invalid JSON"
    yield "st_header_len_long.safetensors", st(hdr, b"    ", hlen=len(hdr) + 4), FORMAT, \
        "tensors cover 4 bytes but the file holds 0 after the header"

    # JSON and UTF-8
    yield "st_not_json.safetensors", st("{abc}"), FORMAT, "header: invalid JSON"
    yield "st_not_object.safetensors", st("[1, 2]"), FORMAT, "does not start with '{'"
    yield "st_empty_header.safetensors", st(""), FORMAT, "does not start with '{' (not a safetensors file?)"
    yield "st_invalid_utf8.safetensors", st(b'{"a\xff":1}'), FORMAT, "invalid UTF-8 at byte 11"
    yield "st_overlong_utf8.safetensors", st(b'{"\xc0\xaf":1}'), FORMAT, "invalid UTF-8 at byte 10"
    yield "st_surrogate_utf8.safetensors", st(b'{"x": "\xed\xa0\x80"}'), FORMAT, "invalid UTF-8 at byte 15"
    yield "st_trailing_garbage.safetensors", st("{} x"), FORMAT, "unexpected bytes after the JSON object at byte 10"
    yield "st_two_objects.safetensors", st(" {}{}"), FORMAT, "unexpected bytes after the JSON object at byte 11"
    yield "st_deep_arrays.safetensors", st('{"a":' + "[" * 60000), FORMAT, "invalid JSON near byte"
    yield "st_deep_objects.safetensors", st('{"a":' * 3000 + "1" + "}" * 3000), FORMAT, "invalid JSON near byte"
    yield "st_trailing_comma.safetensors", st('{"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},}', fill(4)), \
        FORMAT, "invalid JSON near byte"
    yield "st_control_whitespace.safetensors", st(b'{\x01"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', fill(4)), \
        FORMAT, "invalid JSON token at byte 9"
    yield "st_control_in_string.safetensors", st(b'{"a\x1f":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}', fill(4)), \
        FORMAT, "invalid JSON token at byte 11"
    yield "st_leading_zero.safetensors", st('{"a":{"dtype":"F32","shape":[01],"data_offsets":[0,4]}}', fill(4)), \
        FORMAT, "invalid JSON token at byte 37"
    yield "st_nul_escape.safetensors", st('{"a\\u0000b":{"dtype":"U8","shape":[1],"data_offsets":[0,1]}}', fill(1)), \
        UNSUP, "holds \\u0000"

    # __metadata__
    yield "st_metadata_number.safetensors", stj({"__metadata__": {"format": "pt", "n": 1}}), FORMAT, \
        "__metadata__ key 'n': value is not a string"
    yield "st_metadata_not_object.safetensors", stj({"__metadata__": ["pt"]}), FORMAT, "__metadata__ is not an object"
    yield "st_metadata_dup.safetensors", st('{"__metadata__":{},"__metadata__":{"a":"b"}}'), FORMAT, \
        "duplicate key '__metadata__'"

    # tensor entries
    yield "st_entry_not_object.safetensors", stj({"w": [1, 2]}), FORMAT, "tensor 'w': entry is not an object"
    yield "st_missing_dtype.safetensors", stj({"w": {"shape": [1], "data_offsets": [0, 4]}}, fill(4)), FORMAT, \
        "tensor 'w': dtype missing"
    yield "st_missing_shape.safetensors", stj({"w": {"dtype": "F32", "data_offsets": [0, 4]}}, fill(4)), FORMAT, \
        "tensor 'w': shape missing"
    yield "st_missing_offsets.safetensors", stj({"w": {"dtype": "F32", "shape": [1]}}, fill(4)), FORMAT, \
        "tensor 'w': data_offsets missing"
    yield "st_offsets_three.safetensors", stj({"w": T(offs=(0, 4, 8))}, fill(4)), FORMAT, \
        "data_offsets missing or not an array of two integers"
    yield "st_shape_negative.safetensors", stj({"w": T(shape=(-1,))}, fill(4)), FORMAT, \
        "tensor 'w': shape[0] is not a non-negative integer"
    yield "st_shape_fraction.safetensors", stj({"w": T(shape=(2, 0.5))}, fill(4)), FORMAT, "tensor 'w': shape[1]"
    yield "st_shape_huge.safetensors", st('{"w":{"dtype":"F32","shape":[1,1,1e20],"data_offsets":[0,4]}}', fill(4)), \
        FORMAT, "tensor 'w': shape[2]"
    yield "st_shape_2pow53.safetensors", stj({"w": T(shape=(2**53,))}, fill(4)), FORMAT, "below 2^53"
    yield "st_shape_string.safetensors", stj({"w": T(shape=("1",))}, fill(4)), FORMAT, "tensor 'w': shape[0]"
    yield "st_offsets_negative.safetensors", stj({"w": T(offs=(-4, 0))}, fill(4)), FORMAT, \
        "tensor 'w': data_offsets are not non-negative integers"
    yield "st_offsets_huge.safetensors", stj({"w": T(offs=(0, 2**64 - 1))}, fill(4)), FORMAT, \
        "tensor 'w': data_offsets are not"
    yield "st_offsets_inverted.safetensors", stj({"w": T(offs=(4, 0))}, fill(4)), FORMAT, \
        "data_offsets [4, 0] end before they begin"
    yield "st_unknown_dtype.safetensors", stj({"w": T(dtype="F31")}, fill(4)), FORMAT, "unknown dtype 'F31'"
    yield "st_dtype_lowercase.safetensors", stj({"w": T(dtype="f32")}, fill(4)), FORMAT, "unknown dtype 'f32'"
    yield "st_dtype_gguf_only.safetensors", stj({"w": T(dtype="Q4_0", shape=(32,), offs=(0, 18))}, fill(18)), FORMAT, \
        "unknown dtype 'Q4_0'"
    yield "st_too_many_dims.safetensors", stj({"w": T(dtype="U8", shape=(1,) * 33, offs=(0, 1))}, fill(1)), UNSUP, \
        "33 dimensions, more than numpy's 32"
    yield "st_elem_overflow.safetensors", stj({"w": T(dtype="U8", shape=(2**52, 2**52), offs=(0, 1))}, fill(1)), FORMAT, \
        "tensor 'w': element count overflows"
    yield "st_f4_odd.safetensors", stj({"w": T(dtype="F4", shape=(3,), offs=(0, 2))}, fill(2)), FORMAT, \
        "element count 3 is not a multiple of the F4 block size 2"
    yield "st_nbytes_mismatch.safetensors", stj({"w": T(shape=(2,), offs=(0, 4))}, fill(4)), FORMAT, \
        "data_offsets span 4 bytes but 2 elements of F32 take 8"

    # layout of the byte buffer
    yield "st_gap.safetensors", stj({"a": T(), "b": T(offs=(8, 12))}, fill(12)), FORMAT, \
        "tensor 'b': data_offsets begin at 8 but the tensor before ends at 4 (gap)"
    yield "st_overlap.safetensors", stj({"a": T("F64", offs=(0, 8)), "b": T("F64", offs=(4, 12))}, fill(12)), FORMAT, \
        "tensor 'b': data_offsets begin at 4 but the tensor before ends at 8 (overlap)"
    yield "st_not_from_zero.safetensors", stj({"a": T(offs=(4, 8))}, fill(8)), FORMAT, \
        "tensor 'a': data_offsets begin at 4 but the tensor before ends at 0 (gap)"
    yield "st_trailing_data.safetensors", stj({"a": T()}, fill(9)), FORMAT, \
        "tensors cover 4 bytes but the file holds 9 after the header (trailing bytes)"
    yield "st_dup_tensor.safetensors", st('{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]},'
                                          '"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}', fill(8)), FORMAT, \
        "tensor 'w': duplicate tensor name"


def valid_cases():
    yield "zero_tensors.gguf", head(0, 1) + kv_str("general.architecture", "none")
    yield "zero_size_tensor.gguf", pad(head(1, 0) + tinfo("empty", (0, 4), T_F32, 0))
    yield "scalar.gguf", pad(head(1, 0) + tinfo("s", (), T_F32, 0)) + struct.pack("<f", 1.5)
    # gaps, tensors out of order, zero-size tensors anywhere: accepted (only overlaps are refused)
    yield "gaps_any_order.gguf", pad(head(4, 0) + tinfo("b", (8,), T_F32, 96) + tinfo("a", (8,), T_F32, 0)
                                     + tinfo("e0", (0,), T_F32, 0) + tinfo("e1", (0, 8), T_F32, 96)) + fill(128)
    yield "zero_tensors.safetensors", st("{}      ")
    yield "zero_size_tensor.safetensors", stj({"__metadata__": {"format": "pt"}, "empty": T("F32", (2, 0), (0, 0))})
    yield "scalar.safetensors", stj({"s": T("I32", (), (0, 4))}, struct.pack("<i", -7))


def build():
    mal, expect, seen = {}, [], set()
    for name, data, code, msg in cases():
        assert name not in seen, name
        seen.add(name)
        assert len(data) < MAX_FILE, (name, len(data))
        mal[name] = data
        expect.append({"file": name, "exit": code, "message": msg})
    text = "[\n" + ",\n".join("  " + json.dumps(e, ensure_ascii=True) for e in expect) + "\n]\n"
    mal["expect.json"] = text.encode()
    return mal, dict(valid_cases())


def main():
    check = "--check" in sys.argv[1:]
    mal, valid = build()
    bad = 0
    for d, files in ((MAL_DIR, mal), (VALID_DIR, valid)):
        if check:
            have = set(os.listdir(d)) if os.path.isdir(d) else set()
            for name in sorted(have - set(files)):
                print("gen_malformed: %s: not generated by this script" % os.path.join(d, name))
                bad = 1
            for name, data in sorted(files.items()):
                p = os.path.join(d, name)
                try:
                    with open(p, "rb") as f:
                        same = f.read() == data
                except OSError:
                    same = False
                if not same:
                    print("gen_malformed: %s: missing or differs; run tools/gen_malformed.py" % p)
                    bad = 1
        else:
            os.makedirs(d, exist_ok=True)
            for name in sorted(set(os.listdir(d)) - set(files)):
                os.remove(os.path.join(d, name))  # the directory is ours; drop stale cases
            for name, data in sorted(files.items()):
                with open(os.path.join(d, name), "wb") as f:
                    f.write(data)
    if not check:
        print("gen_malformed: %d malformed files, %d valid files" % (len(mal) - 1, len(valid)))
    return bad


if __name__ == "__main__":
    sys.exit(main())
