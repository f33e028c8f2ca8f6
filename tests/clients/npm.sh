#!/usr/bin/env bash
# Install the npm packages the test clients use into a cache folder outside the tree:
#   ${WEIGHTFS_NPM:-$HOME/.cache/weightfs-npm}
# The pinned list is tests/clients/tokenizers.json ("npm_packages"); the tokenizer files it
# lists are checked by sha256. Does nothing when every package is there at its version and
# every file matches; also clones the llama.cpp source bundle to $dir/llama-src. Prints the folder on stdout (messages go to stderr); exit 1 on failure.
# Install scripts are not run (--ignore-scripts): node-llama-cpp's postinstall would try to
# download or build llama.cpp; only its prebuilt @node-llama-cpp/linux-x64 binaries are used.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
manifest=$here/tokenizers.json
dir=${WEIGHTFS_NPM:-$HOME/.cache/weightfs-npm}

command -v node >/dev/null || { echo "npm.sh: node is missing (Node 20: apt-get install nodejs npm)" >&2; exit 1; }
command -v npm >/dev/null || { echo "npm.sh: npm is missing (apt-get install npm)" >&2; exit 1; }

# Prints the pinned specs one a line; with "check DIR", prints what is missing or wrong.
manifest_js='
const fs = require("fs"), path = require("path"), crypto = require("crypto");
const [mode, manifest, dir] = process.argv.slice(1);
const m = JSON.parse(fs.readFileSync(manifest, "utf8"));
const specs = m.npm_packages.map((p) => p.spec);
if (mode === "specs") { console.log(specs.join("\n")); process.exit(0); }
const bad = [];
for (const s of specs) {
  const at = s.lastIndexOf("@"), name = s.slice(0, at), ver = s.slice(at + 1);
  const pj = path.join(dir, "node_modules", name, "package.json");
  let v = null;
  try { v = JSON.parse(fs.readFileSync(pj, "utf8")).version; } catch (e) {}
  if (v !== ver) bad.push(s + " (found " + v + ")");
}
for (const [key, t] of Object.entries(m.tokenizers)) {
  for (const [fn, f] of Object.entries(t.files)) {
    const p = path.join(dir, "node_modules", t.package, f.path);
    let h = null;
    try { h = crypto.createHash("sha256").update(fs.readFileSync(p)).digest("hex"); } catch (e) {}
    if (h !== f.sha256) bad.push(key + " " + fn + " sha256 " + h + " != " + f.sha256);
  }
}
const lib = path.join(dir, "node_modules/@node-llama-cpp/linux-x64/bins/linux-x64");
try {
  if (!fs.readdirSync(lib).some((f) => /^libllama.*\.so$/.test(f))) bad.push("no libllama in " + lib);
} catch (e) { bad.push("no " + lib); }
if (!bad.length) {
  try { require(require.resolve("tokenizers", { paths: [dir] })); }
  catch (e) { bad.push("tokenizers does not load: " + e.message.split("\n")[0]); }
}
if (bad.length) { console.log(bad.join("\n")); process.exit(1); }
'
check() { node -e "$manifest_js" check "$manifest" "$dir"; }

# The llama.cpp source of the prebuilt binaries (llama.h, models/ggml-vocab-*.gguf and their
# test vectors) ships inside node-llama-cpp as a git bundle: clone it once to $dir/llama-src.
llama_src() {
    local b=$dir/node_modules/node-llama-cpp/llama/gitRelease.bundle
    [ -f "$dir/llama-src/include/llama.h" ] && return 0
    [ -f "$b" ] || return 0
    command -v git >/dev/null || { echo "npm.sh: git missing: no $dir/llama-src" >&2; return 0; }
    rm -rf "$dir/llama-src.tmp"
    git -c advice.detachedHead=false clone -q "$b" "$dir/llama-src.tmp" >&2 &&
        mv "$dir/llama-src.tmp" "$dir/llama-src"
}

if problems=$(check 2>&1); then
    llama_src
    echo "$dir"
    exit 0
fi
echo "npm.sh: installing into $dir:" >&2
printf '%s\n' "$problems" | sed 's/^/  /' >&2
mkdir -p "$dir"
[ -f "$dir/package.json" ] || echo '{"name":"weightfs-test-clients","private":true}' >"$dir/package.json"
mapfile -t specs < <(node -e "$manifest_js" specs "$manifest")
(cd "$dir" && npm i -E --omit=optional --ignore-scripts --no-audit --no-fund \
    --loglevel=error "${specs[@]}") >&2
if ! problems=$(check 2>&1); then
    echo "npm.sh: still wrong after npm install in $dir:" >&2
    printf '%s\n' "$problems" | sed 's/^/  /' >&2
    exit 1
fi
llama_src
echo "$dir"
