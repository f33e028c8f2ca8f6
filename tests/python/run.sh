#!/usr/bin/env bash
# Python module tests: bash tests/python/run.sh LIBRARY
#
# Runs tests/python/test_module.py, test_safe_open.py and test_quant.py against LIBRARY (libweightfs.so.0) with a
# Python 3 that has numpy: Debian's /usr/bin/python3 first.  Without one the
# suite is skipped (exit 0), unless CI is set: then that is a failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
if [ $# -ne 1 ] || [ ! -f "$1" ]; then
	echo "usage: $0 LIBRARY" >&2
	exit 1
fi
lib=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")

py=
for cand in /usr/bin/python3 python3 python3.11; do
	if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -z "$py" ]; then
	if [ -n "${CI+set}" ]; then
		echo "python-check: FAIL (CI is set): no Python 3 with numpy (tried /usr/bin/python3, python3, python3.11)" >&2
		exit 1
	fi
	echo "python-check: skipped: no Python 3 with numpy (tried /usr/bin/python3, python3, python3.11)"
	exit 0
fi

# A library built with AddressSanitizer needs its runtime loaded first, and
# Python itself leaks by design: preload the runtime, leave leaks alone.
preload=
if nm -D "$lib" 2>/dev/null | grep -q ' U __asan_init'; then
	preload=$(${CC:-cc} -print-file-name=libasan.so)
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
fi
# torch is part of `make check`'s packages: without it the torch tests
# fail, unless the caller says it is known to be missing (WEIGHTFS_NO_TORCH=1,
# as a Debian package build without python3-torch does).
fail=0
for t in test_module.py test_safe_open.py test_quant.py; do
	WEIGHTFS_LIB=$lib LD_PRELOAD=$preload "$py" "$here/$t" || fail=1
done
exit $fail
