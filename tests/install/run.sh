#!/usr/bin/env bash
# tests/install/run.sh - make install and make uninstall, from a clean clone
# of what is committed (HEAD of the tree this script is in), built there.
#
#  1. Into scratch DESTDIRs, PREFIX=/usr/local and /usr: every file where
#     it belongs (the Python module where /usr/bin/python3 looks, the bash
#     completion), the module imports from there, no mime database or
#     ldconfig run under DESTDIR, and uninstall leaves the DESTDIR as it
#     was: empty, or with what was there before (a foreign file, an empty
#     folder) untouched; twice installed, once uninstalled.
#  2. Into the system, as root, PREFIX=/usr/local and /usr: from /,
#     `/usr/bin/python3 -c 'import weightfs'` with no PYTHONPATH reads a
#     tensor; docs/example.c built with pkg-config runs without
#     LD_LIBRARY_PATH (ldconfig ran); weightfs is on PATH; the mime database
#     knows the types; then uninstall leaves the touched folders exactly as
#     they were (file names and types).  Refused, not skipped, when
#     weightfs is already installed there; one run at a time (flock).
#     Without root it is not run and says so (a failure when CI is set).
#
#  3. pip install . (pyproject.toml, setup.py), offline (--no-index,
#     --no-build-isolation: Debian's setuptools, wheel and numpy): into a
#     venv made with --system-site-packages and, as root, into the system
#     (--break-system-packages, Debian 12's pip).  From /, with no
#     PYTHONPATH, WEIGHTFS_LIB or LD_LIBRARY_PATH, the module loads the
#     libweightfs.so.0 inside the package; a Q8_0 tensor equals numpy's
#     decode of its blocks and every tensor equals the build tree module's;
#     `python3 -m weightfs` runs the program the package carries (ls says
#     what build/weightfs says; it mounts); the build leaves the clone's
#     files as committed; pip uninstall leaves the venv (the system's
#     module and script folders) exactly as it was.
#
#  4. The mount groups that expect exact modes and a second user (stat,
#     xattr, perms) run from the clean clone, which sits in a folder of
#     mode 0700 as a clone in a private home does.
#
# The bash completion is checked by tests/install/completion.sh.
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
py=/usr/bin/python3
passed=0 failed=0
ok() { passed=$((passed + 1)); }
bad() { failed=$((failed + 1)); echo "install-check: FAIL: $*"; }
check() { # check "what" command...
	local what=$1
	shift
	if "$@" >/dev/null 2>"$tmp/err"; then ok; else bad "$what: $(head -c 600 "$tmp/err")"; fi
}

tmp=$(mktemp -d /tmp/weightfs-install.XXXXXX)
sys_prefix=
sys_pip=
cleanup() {
	# a system install that a failed check left behind goes
	if [ -n "$sys_prefix" ]; then
		make -C "$src" -s uninstall PREFIX="$sys_prefix" >/dev/null 2>&1
	fi
	if [ -n "$sys_pip" ]; then
		env -C / PIP_CONFIG_FILE=/dev/null "$py" -m pip uninstall -q -y --break-system-packages weightfs >/dev/null 2>&1
	fi
	rm -rf "$tmp"
}
trap cleanup EXIT

src=$tmp/src
if ! git clone -q "$root" "$src" 2>"$tmp/err"; then
	echo "install-check: FAIL: git clone $root: $(cat "$tmp/err")"
	exit 1
fi
echo "install-check: building a clean clone of $(git -C "$src" log -1 --format='%h %s' | cut -c1-60)"
if ! make -C "$src" -s -j2 all >"$tmp/build.log" 2>&1; then
	echo "install-check: FAIL: the clean clone does not build:"
	tail -20 "$tmp/build.log"
	exit 1
fi
demo=$src/tests/data/ggml-oracle/mixed_llama_tiny.gguf

# what `make install PREFIX=$1` installs, relative to the root it goes to
installed_files() {
	local p=$1 pydir
	pydir=$("$py" "$src/tools/pydir.py" "$p")
	printf '%s\n' "$p/bin/weightfs" "$p/share/man/man1/weightfs.1" "$p/lib/libweightfs.so.0" \
		"$p/lib/libweightfs.so" "$p/include/weightfs.h" "$p/lib/pkgconfig/weightfs.pc" \
		"$pydir/weightfs/__init__.py" "$pydir/weightfs/__main__.py" "$pydir/weightfs/py.typed" "$p/share/mime/packages/weightfs.xml" \
		"$p/share/bash-completion/completions/weightfs"
}

listing() { # the names and types of everything under the given paths
	local p
	for p in "$@"; do
		[ -e "$p" ] && find "$p" -xdev -printf '%y %p\n' 2>/dev/null
	done | LC_ALL=C sort
}

# --- 1. DESTDIR ---------------------------------------------------------------
destdir_round() { # PREFIX
	local p=$1 d=$tmp/dest pydir f
	pydir=$("$py" "$src/tools/pydir.py" "$p")
	check "PREFIX=$p: $py searches $pydir" "$py" -c "import sys; sys.exit('$pydir' not in sys.path)"
	rm -rf "$d" && mkdir -p "$d"
	check "install DESTDIR PREFIX=$p" make -C "$src" -s install DESTDIR="$d" PREFIX="$p"
	while read -r f; do
		check "PREFIX=$p: $f installed" test -f "$d$f"
	done < <(installed_files "$p")
	check "PREFIX=$p: no mime database made under DESTDIR" test ! -e "$d$p/share/mime/mime.cache"
	check "PREFIX=$p: the module imports from DESTDIR and reads" env -C / PYTHONPATH="$d$pydir" \
		WEIGHTFS_LIB="$d$p/lib/libweightfs.so.0" "$py" -c "
import weightfs
assert weightfs.__file__.startswith('$d$pydir/'), weightfs.__file__
with weightfs.safe_open('$demo') as f:
    assert f.get_tensor('output.weight').shape == (320, 64)"
	check "PREFIX=$p: the installed completion completes the installed program" \
		bash "$here/completion.sh" "$d$p/share/bash-completion/completions/weightfs" "$d$p/bin/weightfs"
	check "uninstall DESTDIR PREFIX=$p" make -C "$src" -s uninstall DESTDIR="$d" PREFIX="$p"
	check "PREFIX=$p: DESTDIR empty after uninstall (left: $(find "$d" -mindepth 1 | head -5 | tr '\n' ' '))" \
		test -z "$(find "$d" -mindepth 1)"

	# what was there before stays, empty folders included; two installs, one uninstall
	mkdir -p "$d$p/bin" "$d$p/include" "$d$p/share/mime/packages" "$d$p/lib/pkgconfig"
	echo other > "$d$p/bin/other-tool"
	echo '<mime-info/>' > "$d$p/share/mime/packages/other.xml"
	local before after
	before=$(listing "$d")
	check "install twice PREFIX=$p" make -C "$src" -s install DESTDIR="$d" PREFIX="$p"
	check "install twice PREFIX=$p (2)" make -C "$src" -s install DESTDIR="$d" PREFIX="$p"
	check "uninstall PREFIX=$p with other files" make -C "$src" -s uninstall DESTDIR="$d" PREFIX="$p"
	after=$(listing "$d")
	check "PREFIX=$p: uninstall left what was there and nothing else: $(diff <(echo "$before") <(echo "$after") | head -5 | tr '\n' ' ')" \
		test "$before" = "$after"
	check "PREFIX=$p: foreign file intact" grep -qx other "$d$p/bin/other-tool"
	rm -rf "$d"
}
destdir_round /usr/local
destdir_round /usr

# --- 2. the system ------------------------------------------------------------
system_round() { # PREFIX, then the folders install touches
	local p=$1 pydir f before after exe=$tmp/example
	shift
	pydir=$("$py" "$src/tools/pydir.py" "$p")
	while read -r f; do
		if [ -e "$f" ]; then
			bad "PREFIX=$p: $f already exists: not installing over it (remove the installed weightfs first)"
			return
		fi
	done < <(installed_files "$p")
	before=$(listing "$@" "$pydir")
	sys_prefix=$p
	check "system install PREFIX=$p" make -C "$src" -s install PREFIX="$p"
	check "PREFIX=$p: from /, $py imports weightfs with no PYTHONPATH and reads a tensor" \
		env -C / -u PYTHONPATH -u WEIGHTFS_LIB "$py" -c "
import weightfs
assert weightfs.__file__ == '$pydir/weightfs/__init__.py', weightfs.__file__
assert weightfs._lib._name == 'libweightfs.so.0', weightfs._lib._name
m = weightfs.open('$demo')
assert m['output.weight'].shape == (320, 64)"
	# /usr/lib is one of the loader's own folders; /usr/local/lib is found
	# through ldconfig's cache only
	if [ "$p" != /usr ]; then
		check "PREFIX=$p: ldconfig ran: the loader knows libweightfs.so.0" \
			bash -c "PATH=\$PATH:/sbin ldconfig -p | grep -qF '$p/lib/libweightfs.so.0'"
	fi
	check "PREFIX=$p: docs/example.c builds with pkg-config and runs without LD_LIBRARY_PATH" \
		bash -c "cc -o '$exe' '$src/docs/example.c' \$(pkg-config --cflags --libs weightfs) && \
			pkg-config --variable=prefix weightfs | grep -qx '$p' && env -u LD_LIBRARY_PATH '$exe' '$demo'"
	check "PREFIX=$p: weightfs on PATH is the installed one" \
		bash -c "[ \"\$(PATH=$p/bin:\$PATH command -v weightfs)\" = '$p/bin/weightfs' ] && weightfs -V"
	check "PREFIX=$p: $py -m weightfs runs the installed program" \
		env -C / PATH="$p/bin:$PATH" "$py" -c "
import weightfs.__main__ as m
assert m.program() == '$p/bin/weightfs', m.program()"
	if command -v update-mime-database >/dev/null 2>&1; then
		check "PREFIX=$p: the mime database names the types" \
			grep -q 'application/x-weightfs-f32' "$p/share/mime/globs2"
	fi
	check "system uninstall PREFIX=$p" make -C "$src" -s uninstall PREFIX="$p"
	sys_prefix=
	after=$(listing "$@" "$pydir")
	check "PREFIX=$p: uninstall left the system as it was: $(diff <(echo "$before") <(echo "$after") | head -8 | tr '\n' ' ')" \
		test "$before" = "$after"
	check "PREFIX=$p: the loader forgot libweightfs.so.0" \
		bash -c "! (PATH=\$PATH:/sbin ldconfig -p | grep -qF '$p/lib/libweightfs.so.0')"
	rm -f "$exe"
}
# --- 3. pip install . ----------------------------------------------------------
# what every tensor of the demo model reads as, from the clone's build tree
dump_tensors='
import hashlib, sys, weightfs
m = weightfs.open(sys.argv[1])
for k in m.keys():
    print(k, hashlib.sha256(m[k].tobytes()).hexdigest())'
if ! env -C / PYTHONPATH="$src/python" WEIGHTFS_LIB="$src/build/libweightfs.so.0" \
	"$py" -c "$dump_tensors" "$demo" >"$tmp/tensors.ref" 2>"$tmp/err"; then
	bad "the build tree module reads the demo model: $(head -c 600 "$tmp/err")"
fi

# the module a pip install put in SITE: where it is loaded from, what it reads
pip_checks() { # WHAT PYTHON SITE
	local what=$1 vpy=$2 site=$3 mnt=$tmp/pipmnt
	check "$what: from /, the module imports with no PYTHONPATH, WEIGHTFS_LIB or LD_LIBRARY_PATH and reads as numpy decodes" \
		env -C / -u PYTHONPATH -u WEIGHTFS_LIB -u LD_LIBRARY_PATH "$vpy" -c "
import numpy as np, weightfs
assert weightfs.__file__ == '$site/weightfs/__init__.py', weightfs.__file__
assert weightfs._lib._name == '$site/weightfs/libweightfs.so.0', weightfs._lib._name
m = weightfs.open('$demo')
i = m.info('token_embd.weight')
assert i['type'] == 'Q8_0', i
blocks = np.fromfile('$demo', dtype=np.uint8, count=i['nbytes'], offset=i['offset']).reshape(-1, 34)
d = blocks[:, :2].copy().view(np.float16).astype(np.float32)
q = blocks[:, 2:].copy().view(np.int8).astype(np.float32)
got = m['token_embd.weight']
assert got.dtype == np.float32 and np.array_equal(got, (d * q).reshape(i['shape']))"
	check "$what: every tensor reads as from the build tree module" \
		bash -c 'cmp <(env -C / -u PYTHONPATH -u WEIGHTFS_LIB "$1" -c "$2" "$3") "$4"' _ \
		"$vpy" "$dump_tensors" "$demo" "$tmp/tensors.ref"
	check "$what: python3 -m weightfs runs the program in the package" env -C / "$vpy" -c "
import weightfs.__main__ as m
assert m.program() == '$site/weightfs/bin/weightfs', m.program()"
	check "$what: python3 -m weightfs ls says what build/weightfs ls says" \
		bash -c "cmp <(env -C / -u LD_LIBRARY_PATH PATH=/usr/bin:/bin '$vpy' -m weightfs ls '$demo') \
			<('$src/build/weightfs' ls '$demo')"
	if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null 2>&1; then
		mkdir -p "$mnt"
		check "$what: python3 -m weightfs MODEL DIR mounts" env -C / "$vpy" -m weightfs "$demo" "$mnt"
		check "$what: the mount reads as weightfs cat" \
			bash -c "cmp '$mnt/output/weight' <('$src/build/weightfs' cat '$demo' output.weight)"
		fusermount3 -u "$mnt" 2>/dev/null
		rmdir "$mnt"
	fi
}

venv_round() {
	local v=$tmp/venv site before after
	if ! "$py" -m venv --system-site-packages "$v" 2>"$tmp/err"; then
		bad "$py -m venv --system-site-packages (python3-venv): $(head -c 600 "$tmp/err")"
		return
	fi
	site=$("$v/bin/python" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
	before=$(listing "$v")
	check "venv: pip install --no-build-isolation --no-index ." env -C "$src" PIP_CONFIG_FILE=/dev/null \
		"$v/bin/pip" install -q --no-cache-dir --no-build-isolation --no-index .
	check "venv: the build left the clone's files as committed: $(git -C "$src" status --porcelain | head -5 | tr '\n' ' ')" \
		test -z "$(git -C "$src" status --porcelain)"
	pip_checks venv "$v/bin/python" "$site"
	check "venv: pip uninstall weightfs" env -C / PIP_CONFIG_FILE=/dev/null "$v/bin/pip" uninstall -q -y weightfs
	after=$(listing "$v")
	check "venv: pip uninstall left the venv as it was: $(diff <(echo "$before") <(echo "$after") | head -8 | tr '\n' ' ')" \
		test "$before" = "$after"
	rm -rf "$v"
}
venv_round

# as root, into the system: where Debian's pip puts it (/usr/local/lib/python3.X/dist-packages)
system_pip_round() {
	local site bindir before after
	site=$("$py" -c 'import sysconfig; print(sysconfig.get_path("platlib"))')
	bindir=$("$py" -c 'import sysconfig; print(sysconfig.get_path("scripts"))')
	if env -C / -u PYTHONPATH "$py" -c 'import weightfs' 2>/dev/null; then
		bad "pip, system: $py already imports weightfs: not installing over it (remove it first)"
		return
	fi
	before=$(listing "$site" "$bindir")
	sys_pip=1
	check "pip, system: pip install --break-system-packages --no-build-isolation --no-index ." env -C "$src" \
		PIP_CONFIG_FILE=/dev/null "$py" -m pip install -q --no-cache-dir --break-system-packages \
		--no-build-isolation --no-index .
	pip_checks "pip, system" "$py" "$site"
	check "pip, system: pip uninstall weightfs" env -C / PIP_CONFIG_FILE=/dev/null \
		"$py" -m pip uninstall -q -y --break-system-packages weightfs
	sys_pip=
	after=$(listing "$site" "$bindir")
	check "pip, system: pip uninstall left $site and $bindir as they were: $(diff <(echo "$before") <(echo "$after") | head -8 | tr '\n' ' ')" \
		test "$before" = "$after"
}

if [ "$(id -u)" -eq 0 ]; then
	exec 9>/tmp/weightfs-install-check.lock
	flock 9
	system_pip_round
	system_round /usr/local /usr/local
	# /usr: only the folders install writes to (the rest of /usr is others')
	system_round /usr /usr/bin/weightfs /usr/lib/libweightfs.so.0 /usr/lib/libweightfs.so /usr/lib/pkgconfig \
		/usr/include/weightfs.h /usr/share/man/man1/weightfs.1 /usr/share/mime \
		/usr/share/bash-completion/completions/weightfs /usr/share/weightfs /usr/share/bash-completion
	flock -u 9
elif [ -n "${CI+set}" ]; then
	bad "CI is set but not root: the system install is not tested"
else
	echo "install-check: system install not tested: not root (the DESTDIR installs were)"
fi

# 4. make check from a clone in a private folder ($tmp is 0700, as a home
# directory often is): the mount groups that expect exact modes and a
# second user's reads pass there too (wf_harness.share_data).
chmod 700 "$tmp"
if CI=1 WF_TEST_JOBS=1 WF_TEST_ONLY=stat,xattr,perms bash "$src/tests/mount/run.sh" "$src/build/weightfs" \
	>"$tmp/private.log" 2>&1; then
	ok
else
	bad "mount groups stat, xattr, perms from a clone in a 0700 folder: $(grep -aE '^FAIL|mount-check' "$tmp/private.log" | head -3 | cut -c1-200 | tr '\n' ' ')"
fi

echo "install-check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
