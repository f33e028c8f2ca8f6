#!/usr/bin/python3
"""A real SentencePiece tokenizer.model (ModelProto) rebuilt from a llama.cpp vocab GGUF.

No npm package ships a tokenizer.model, but llama.cpp ships vocab-only GGUFs whose
tokens/scores/token types are a SentencePiece model's pieces as the converter read them
(ggml-vocab-llama-spm.gguf is Llama 2's: BPE, byte_fallback, 32000 pieces). This writes
them back as the protobuf sentencepiece_model.proto describes (google/sentencepiece
src/sentencepiece_model.proto):

  ModelProto      { repeated SentencePiece pieces = 1; TrainerSpec trainer_spec = 2;
                    NormalizerSpec normalizer_spec = 3; }
  SentencePiece   { string piece = 1; float score = 2; Type type = 3 [default NORMAL]; }
                    Type: NORMAL 1, UNKNOWN 2, CONTROL 3, USER_DEFINED 4, BYTE 6, UNUSED 5
                    (the same numbers as GGUF's token types)
  TrainerSpec     { model_type = 3 (UNIGRAM 1, BPE 2, WORD 3, CHAR 4); vocab_size = 4;
                    byte_fallback = 35; unk_id 40, bos_id 41, eos_id 42, pad_id 43 (int32) }
  NormalizerSpec  { name = 1; precompiled_charsmap = 2; add_dummy_prefix = 3;
                    remove_extra_whitespaces = 4; escape_whitespaces = 5 }

As sentencepiece serialises it: NORMAL pieces carry no type field (proto2 default), the
others do; every piece carries its score. Llama 2's trainer_spec has pad_id -1 (a 10-byte
varint) and string fields, which a reader must skip.

    read_gguf_vocab(path) -> (kv dict, tokens [bytes], scores [float], types [int])
    model_proto(tokens, scores, types, model_type=2) -> bytes
    parse(bytes) -> (pieces [(bytes, float, int)], model_type)      # for self-checks
    from_vocab_gguf(gguf_path, out_path) -> (tokens, scores, types)

CLI: spm_model.py VOCAB.gguf OUT/tokenizer.model
"""
import struct
import sys


# ---------------------------------------------------------------- GGUF (vocab only)
def read_gguf_vocab(path):
    with open(path, "rb") as f:
        b = f.read()
    o = [8]

    def u(fmt):
        v = struct.unpack_from("<" + fmt, b, o[0])[0]
        o[0] += struct.calcsize("<" + fmt)
        return v

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
            return [val(et) for _ in range(n)]
        return u(fmts[t])
    if b[:4] != b"GGUF":
        raise ValueError("%s: not GGUF" % path)
    u("Q")  # tensor count
    nk = u("Q")
    kv = {}
    for _ in range(nk):
        k = s().decode()
        kv[k] = val(u("I"))
    return kv, kv["tokenizer.ggml.tokens"], kv["tokenizer.ggml.scores"], kv["tokenizer.ggml.token_type"]


# ---------------------------------------------------------------- protobuf writer
def _varint(v):
    if v < 0:
        v += 1 << 64          # int32/int64 negatives: 10-byte two's complement
    out = bytearray()
    while True:
        b = v & 0x7F
        v >>= 7
        if v:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _key(field, wt):
    return _varint(field << 3 | wt)


def _len(field, payload):
    return _key(field, 2) + _varint(len(payload)) + payload


def _vint(field, v):
    return _key(field, 0) + _varint(v)


def _f32(field, v):
    return _key(field, 5) + struct.pack("<f", v)


def model_proto(tokens, scores, types, model_type=2):
    out = bytearray()
    for t, sc, ty in zip(tokens, scores, types):
        p = _len(1, t) + _f32(2, sc)
        if ty != 1:
            p += _vint(3, ty)
        out += _len(1, p)
    trainer = (_len(1, b"/large_experiment/tok/llama/data/shard.txt") + _len(2, b"spm_model_32k")
               + _vint(3, model_type) + _vint(4, len(tokens)) + _f32(10, 0.99995) + _vint(35, 1)
               + _vint(40, 0) + _vint(41, 1) + _vint(42, 2) + _vint(43, -1)
               + _len(44, b"<unk>"))
    normalizer = _len(1, b"identity") + _len(2, b"") + _vint(3, 1) + _vint(4, 0) + _vint(5, 1)
    out += _len(2, trainer) + _len(3, normalizer)
    return bytes(out)


# ---------------------------------------------------------------- protobuf reader
def _rv(b, o):
    v = sh = 0
    while True:
        c = b[o]
        o += 1
        v |= (c & 0x7F) << sh
        sh += 7
        if not c & 0x80:
            return v, o


def _fields(b):
    o = 0
    while o < len(b):
        k, o = _rv(b, o)
        f, wt = k >> 3, k & 7
        if wt == 0:
            v, o = _rv(b, o)
        elif wt == 5:
            v, o = b[o:o + 4], o + 4
        elif wt == 1:
            v, o = b[o:o + 8], o + 8
        elif wt == 2:
            n, o = _rv(b, o)
            v, o = b[o:o + n], o + n
        else:
            raise ValueError("wire type %d" % wt)
        yield f, wt, v


def parse(b):
    pieces, model_type = [], 1
    for f, wt, v in _fields(b):
        if f == 1:
            piece, score, ty = None, 0.0, 1
            for f2, _, v2 in _fields(v):
                if f2 == 1:
                    piece = v2
                elif f2 == 2:
                    score = struct.unpack("<f", v2)[0]
                elif f2 == 3:
                    ty = v2
            pieces.append((piece, score, ty))
        elif f == 2:
            for f2, wt2, v2 in _fields(v):
                if f2 == 3 and wt2 == 0:
                    model_type = v2
    return pieces, model_type


def from_vocab_gguf(gguf_path, out_path, model_type=2):
    _, tokens, scores, types = read_gguf_vocab(gguf_path)
    with open(out_path, "wb") as f:
        f.write(model_proto(tokens, scores, types, model_type))
    return tokens, scores, types


if __name__ == "__main__":
    if len(sys.argv) != 3:
        print(__doc__)
        sys.exit(2)
    from_vocab_gguf(sys.argv[1], sys.argv[2])
