#!/usr/bin/env bash
# tests/api/exports.sh LIBRARY HEADER
#
# The shared library's dynamic symbols are exactly the WEIGHTFS_API
# functions of the header: nothing internal (wf_*, cJSON, tables) leaks,
# and nothing the header promises is missing.  Also checks the soname.
set -u
lib=$1 hdr=$2
fail=0
soname=$(objdump -p "$lib" | awk '$1 == "SONAME" {print $2}')
if [ "$soname" != "libweightfs.so.0" ]; then
	echo "api-check: FAIL: $lib has soname '$soname', not libweightfs.so.0"
	fail=1
fi
exported=$(nm -D --defined-only "$lib" | awk 'NF == 3 {print $3}' | sort -u)
declared=$(grep -v '^#' "$hdr" | grep -o 'WEIGHTFS_API [^(]*(' | sed -e 's/($//' -e 's/.*[ *]//' | sort -u)
extra=$(comm -23 <(echo "$exported") <(echo "$declared"))
missing=$(comm -13 <(echo "$exported") <(echo "$declared"))
if [ -n "$extra" ]; then
	echo "api-check: FAIL: exported but not in $hdr:" $extra
	fail=1
fi
if [ -n "$missing" ]; then
	echo "api-check: FAIL: declared in $hdr but not exported:" $missing
	fail=1
fi
n=$(echo "$exported" | grep -c .)
if [ $fail = 0 ]; then
	echo "api-check: $n symbols exported, all weightfs_*, soname $soname: passed"
fi
exit $fail
