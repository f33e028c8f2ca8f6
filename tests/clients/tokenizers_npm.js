// Hugging Face's Rust tokenizers (npm `tokenizers`), looked up in $WEIGHTFS_NPM (default
// ~/.cache/weightfs-npm, filled by tests/clients/npm.sh), then in the usual node paths.
'use strict';
const path = require('path');
const os = require('os');

function loadTokenizers() {
  const base = process.env.WEIGHTFS_NPM || path.join(os.homedir(), '.cache', 'weightfs-npm');
  try {
    return require(require.resolve('tokenizers', { paths: [base] }));
  } catch (e) {
    return require('tokenizers');
  }
}

module.exports = { loadTokenizers };
