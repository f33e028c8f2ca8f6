#!/usr/bin/env bash
# tools/deps.sh build|test|deb - install the Debian/Ubuntu packages weightfs
# needs that are missing, with apt-get (as root, or through sudo when that
# needs no password).  Quiet and quick when nothing is missing; when it
# cannot install, it prints the apt-get line and fails.
set -u
what=${1:-build}

missing=()
need_cmd() { command -v "$1" >/dev/null 2>&1 || missing+=("$2"); }
need_pc() { pkg-config --exists "$1" 2>/dev/null || missing+=("$2"); }

need_cmd cc build-essential
need_cmd make build-essential
need_cmd pkg-config pkg-config
need_cmd fusermount3 fuse3
need_pc fuse3 libfuse3-dev
need_pc libcjson libcjson-dev
need_pc zlib zlib1g-dev
need_pc libcrypto libssl-dev
need_pc libcurl libcurl4-openssl-dev
if [ "$what" = test ]; then
	need_pc check check
	need_cmd getfattr attr
	need_cmd rclone rclone
	# the net mount tests: a hub-shaped server on loopback (tests/mount/wf_hub.py)
	[ -x /usr/sbin/nginx ] || missing+=(nginx)
	# the s3 mount tests: Ceph's RADOS Gateway on loopback (tests/mount/wf_rgw.py)
	need_cmd ceph-mon ceph-mon
	need_cmd ceph-osd ceph-osd
	need_cmd radosgw radosgw
	# which write path convert took (copy_file_range or its fallback)
	need_cmd strace strace
	# the desktop mount tests: content types as a file manager sees them
	need_cmd gio libglib2.0-bin
	need_cmd update-mime-database shared-mime-info
	need_cmd clang clang
	# the model.gguf tests' real clients come from npm (tests/clients/npm.sh)
	need_cmd node nodejs
	need_cmd npm npm
	py_ok=
	for py in /usr/bin/python3 python3; do
		"$py" -c 'import numpy' >/dev/null 2>&1 && py_ok=1 && break
	done
	[ -n "$py_ok" ] || missing+=(python3-numpy)
	# the install group's pip install . in a venv, offline (pyproject.toml)
	/usr/bin/python3 -c 'import setuptools' >/dev/null 2>&1 || missing+=(python3-setuptools)
	/usr/bin/python3 -c 'import wheel' >/dev/null 2>&1 || missing+=(python3-wheel)
	/usr/bin/python3 -c 'import ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
	/usr/bin/python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
	# the mount suite's bfloat16 oracle (views group); without it a numpy
	# reimplementation of the rounding stands in
	/usr/bin/python3 -c 'import torch' >/dev/null 2>&1 || missing+=(python3-torch)
	# SentencePiece loads the hf/ tokenizer.model (hftok group)
	/usr/bin/python3 -c 'import sentencepiece' >/dev/null 2>&1 || missing+=(python3-sentencepiece)
	# llama.cpp's own converter (tests/clients/real_convert.py) imports both
	/usr/bin/python3 -c 'import tqdm, yaml' >/dev/null 2>&1 || missing+=(python3-tqdm python3-yaml)
	# libFuzzer's runtime ships apart from clang
	if command -v clang >/dev/null 2>&1; then
		echo 'int LLVMFuzzerTestOneInput(const char *d, unsigned long n){(void)d;(void)n;return 0;}' |
			clang -x c -fsanitize=fuzzer -o /dev/null - >/dev/null 2>&1 || missing+=(libclang-rt-dev)
	else
		missing+=(libclang-rt-dev)
	fi
fi
if [ "$what" = deb ]; then
	# packaging/debian/control's Build-Depends, and dpkg-buildpackage itself
	need_pc check check
	need_cmd python3 python3
	/usr/bin/python3 -c "import numpy" >/dev/null 2>&1 || missing+=(python3-numpy)
	need_cmd dh debhelper
	need_cmd dpkg-buildpackage dpkg-dev
fi
[ ${#missing[@]} -eq 0 ] && exit 0

pkgs=$(printf '%s\n' "${missing[@]}" | sort -u | tr '\n' ' ')
if [ "$(id -u)" -eq 0 ]; then
	sudo=
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
	sudo=sudo
else
	echo "weightfs: missing packages; install them with:  sudo apt-get install $pkgs" >&2
	exit 1
fi
echo "weightfs: installing $pkgs"
$sudo apt-get update -qq &&
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $pkgs >/dev/null ||
	{ echo "weightfs: apt-get install $pkgs failed" >&2; exit 1; }
