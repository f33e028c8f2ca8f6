#!/usr/bin/env node
// Hugging Face's own tokenizers (the Rust library, npm `tokenizers`) as a line server, for the
// stand-in `transformers` of tests/clients/converter/ that llama.cpp's converter runs with.
//
//   node hf_tok_serve.js TOKENIZER.json
//
// Reads one JSON request a line on stdin, writes one JSON answer a line on stdout:
//   {"op": "vocab"}                                  -> {"vocab": {token: id}} (added tokens too),
//                                                       "base_size": the model's own vocabulary size}
//   {"op": "encode", "text": S, "special": bool}     -> {"ids": [...]}
//   {"op": "decode", "ids": [...], "skip": bool}     -> {"text": S}
// An error is {"error": message}. It ends at the end of its input.
'use strict';
const readline = require('readline');

const { loadTokenizers } = require('./tokenizers_npm.js');

async function answer(tok, req) {
  switch (req.op) {
    case 'vocab':
      return { vocab: tok.getVocab(true), base_size: tok.getVocabSize(false) };
    case 'encode': {
      const enc = await tok.encode(req.text, null, { addSpecialTokens: !!req.special });
      return { ids: Array.from(enc.getIds()) };
    }
    case 'decode':
      return { text: await tok.decode(req.ids, !!req.skip) };
    default:
      return { error: 'unknown op ' + JSON.stringify(req.op) };
  }
}

async function main() {
  if (process.argv.length !== 3) {
    process.stderr.write('usage: node hf_tok_serve.js TOKENIZER.json\n');
    process.exit(2);
  }
  const { Tokenizer } = loadTokenizers();
  let tok;
  try {
    tok = Tokenizer.fromFile(process.argv[2]);
  } catch (e) {
    process.stdout.write(JSON.stringify({ error: String(e && e.message ? e.message : e) }) + '\n');
    process.exit(1);
  }
  process.stdout.write(JSON.stringify({ ready: true }) + '\n');
  const rl = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
  for await (const line of rl) {
    let out;
    try {
      out = await answer(tok, JSON.parse(line));
    } catch (e) {
      out = { error: String(e && e.message ? e.message : e) };
    }
    process.stdout.write(JSON.stringify(out) + '\n');
  }
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
