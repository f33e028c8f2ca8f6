"""A stand-in for the part of Hugging Face `transformers` that llama.cpp's converter touches.

tests/clients/real_convert.py puts this folder first on sys.path when it runs llama.cpp's own
convert_hf_to_gguf.py, so that the real converter runs here without transformers (not in
Debian, and PyPI is out of reach):

- AutoConfig.from_pretrained raises, so the converter reads config.json as written (its own
  fallback, conversion/base.py load_hparams). Test models therefore write every field the
  converter reads.
- AutoTokenizer.from_pretrained gives a fast tokenizer backed by Hugging Face's own Rust
  tokenizers (npm `tokenizers`, run by tests/clients/hf_tok_serve.js): vocab, added tokens,
  encode and decode come from the real library, not from a re-implementation.
- convert_slow_tokenizer.bytes_to_unicode is GPT-2's byte table (qwen.py imports it).

Anything else the converter asks for raises, naming what is missing, so a new need shows up
as an error and never as a silently different file.
"""
import json
import os
import subprocess

HERE = os.path.dirname(os.path.abspath(__file__))
CLIENTS = os.path.dirname(os.path.dirname(HERE))


class AutoConfig:
    @staticmethod
    def from_pretrained(path, **kw):
        raise OSError("stand-in transformers: config.json is read as written")


class AddedToken:
    def __init__(self, d):
        self.content = d["content"]
        self.special = bool(d.get("special", False))
        self.normalized = bool(d.get("normalized", not self.special))
        self.lstrip = bool(d.get("lstrip", False))
        self.rstrip = bool(d.get("rstrip", False))
        self.single_word = bool(d.get("single_word", False))

    def __str__(self):
        return self.content

    def __repr__(self):
        return "AddedToken(%r, special=%r)" % (self.content, self.special)


# PreTrainedTokenizerBase.clean_up_tokenization
_CLEANUP = [(" .", "."), (" ?", "?"), (" !", "!"), (" ,", ","), (" ' ", "'"), (" n't", "n't"),
            (" 'm", "'m"), (" 's", "'s"), (" 've", "'ve"), (" 're", "'re")]


class _Fast:
    """PreTrainedTokenizerFast's answers, from tokenizer.json through the Rust library."""

    def __init__(self, folder):
        tj = os.path.join(folder, "tokenizer.json")
        if not os.path.isfile(tj):
            raise OSError("stand-in transformers: %s: no tokenizer.json" % folder)
        with open(tj, encoding="utf-8") as f:
            doc = json.load(f)
        cfg = {}
        tc = os.path.join(folder, "tokenizer_config.json")
        if os.path.isfile(tc):
            with open(tc, encoding="utf-8") as f:
                cfg = json.load(f)
        self._cleanup = bool(cfg.get("clean_up_tokenization_spaces", False))
        self.added_tokens_decoder = {}
        for a in doc.get("added_tokens") or []:
            self.added_tokens_decoder[int(a["id"])] = AddedToken(a)
        for k, a in (cfg.get("added_tokens_decoder") or {}).items():
            self.added_tokens_decoder.setdefault(int(k), AddedToken(a))
        self.added_tokens_decoder = dict(sorted(self.added_tokens_decoder.items()))
        self.chat_template = cfg.get("chat_template")
        self._p = subprocess.Popen(["node", os.path.join(CLIENTS, "hf_tok_serve.js"), tj],
                                   stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, encoding="utf-8")
        hello = json.loads(self._p.stdout.readline() or '{"error": "no answer"}')
        if "error" in hello:
            raise OSError("tokenizers refused %s: %s" % (tj, hello["error"]))
        v = self._ask({"op": "vocab"})
        self._vocab, self.vocab_size = v["vocab"], v["base_size"]
        # special_tokens_map_extended: the named special tokens, then the additional ones
        stm = {}
        sm = os.path.join(folder, "special_tokens_map.json")
        if os.path.isfile(sm):
            with open(sm, encoding="utf-8") as f:
                stm = json.load(f)
        self.all_special_tokens = []
        for k in ("bos_token", "eos_token", "unk_token", "sep_token", "pad_token", "cls_token", "mask_token",
                  "additional_special_tokens"):
            v = cfg.get(k, stm.get(k))
            for t in (v if isinstance(v, list) else [v]):
                t = t.get("content") if isinstance(t, dict) else t
                if isinstance(t, str) and t not in self.all_special_tokens:
                    self.all_special_tokens.append(t)
        self.all_special_ids = [self._vocab[t] for t in self.all_special_tokens if t in self._vocab]
        self.is_fast = True

    def _ask(self, req):
        self._p.stdin.write(json.dumps(req) + "\n")
        self._p.stdin.flush()
        out = json.loads(self._p.stdout.readline() or '{"error": "tokenizers ended"}')
        if "error" in out:
            raise ValueError("tokenizers: %s" % out["error"])
        return out

    @property
    def vocab(self):
        return dict(self._vocab)

    def get_vocab(self):
        return dict(self._vocab)

    def get_added_vocab(self):
        return {t.content: i for i, t in self.added_tokens_decoder.items()}

    def __len__(self):
        return len(self._vocab)

    def encode(self, text, add_special_tokens=True, **kw):
        if kw:
            raise NotImplementedError("stand-in transformers: encode(%s)" % ", ".join(kw))
        return self._ask({"op": "encode", "text": text, "special": add_special_tokens})["ids"]

    def decode(self, ids, skip_special_tokens=False, clean_up_tokenization_spaces=None, **kw):
        if kw:
            raise NotImplementedError("stand-in transformers: decode(%s)" % ", ".join(kw))
        if isinstance(ids, int):
            ids = [ids]
        s = self._ask({"op": "decode", "ids": list(ids), "skip": skip_special_tokens})["text"]
        clean = self._cleanup if clean_up_tokenization_spaces is None else clean_up_tokenization_spaces
        if clean:
            for a, b in _CLEANUP:
                s = s.replace(a, b)
        return s

    def __getattr__(self, name):
        raise AttributeError("stand-in transformers: tokenizer.%s is not provided" % name)


class AutoTokenizer:
    @staticmethod
    def from_pretrained(path, **kw):
        return _Fast(str(path))
