#!/usr/bin/env node
// Tokenize a corpus with Hugging Face's own tokenizers (the Rust library, npm `tokenizers`).
//
//   node hf_tokenize.js TOKENIZER.json CORPUS.json [--no-special]
//
// CORPUS.json is a JSON list of strings; prints a JSON list of id lists, one per string,
// encoded with add_special_tokens=true (the HF default; --no-special turns it off).
// The package is looked up in $WEIGHTFS_NPM (default ~/.cache/weightfs-npm, filled by
// tests/clients/npm.sh), then in the usual node resolution paths.
'use strict';
const fs = require('fs');

const { loadTokenizers } = require('./tokenizers_npm.js');

async function main() {
  const args = process.argv.slice(2);
  const flags = args.filter((a) => a.startsWith('--'));
  const pos = args.filter((a) => !a.startsWith('--'));
  if (pos.length !== 2) {
    process.stderr.write('usage: node hf_tokenize.js TOKENIZER.json CORPUS.json [--no-special]\n');
    process.exit(2);
  }
  const { Tokenizer } = loadTokenizers();
  const tok = Tokenizer.fromFile(pos[0]);
  const corpus = JSON.parse(fs.readFileSync(pos[1], 'utf8'));
  const addSpecialTokens = !flags.includes('--no-special');
  const out = [];
  for (const s of corpus) {
    const enc = await tok.encode(s, null, { addSpecialTokens });
    out.push(Array.from(enc.getIds()));
  }
  process.stdout.write(JSON.stringify(out) + '\n');
}

main().catch((e) => {
  process.stderr.write(String(e && e.stack ? e.stack : e) + '\n');
  process.exit(1);
});
