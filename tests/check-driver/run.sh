#!/usr/bin/env bash
# tests/check-driver/run.sh [DRIVER] - make driver-check: tools/run_checks.sh
# (what `make check` runs) driven by a fake make whose targets pass, fail
# the way each real suite fails (Check, the mount tests, a Python test,
# a crash that prints no count), and the driver must end by naming every
# failing test and the path of its target's log, just before its summary,
# keep each target's output in that log, and keep its counts and exit
# status.  Prints "check-driver: N passed, M failed".
set -u
here=$(cd "$(dirname "$0")" && pwd)
driver=${1:-$here/../../tools/run_checks.sh}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
passed=0 failed=0
ok() { passed=$((passed + 1)); echo "ok - $*"; }
bad() { failed=$((failed + 1)); echo "check-driver: FAIL: $*"; }

# The fake make: `fake --no-print-directory TARGET` prints TARGET's canned
# output and exits with its status.
cat > "$tmp/fake" <<'FAKE'
#!/usr/bin/env bash
case $2 in
good-check)
	echo "layers fine"; echo "good-check: 3 passed, 0 failed"; exit 0 ;;
unit-fake)
	echo "Running suite(s): perm"
	echo "SUMMARY: AddressSanitizer: heap-use-after-free wf_zz.c:12 in zz_free"
	echo "66%: Checks: 3, Failures: 1, Errors: 0"
	echo "tests/unit/check_perm.c:120:F:perm:test_zz_dir_bits:0: Assertion 'r.mode == 0400' failed: r.mode == 292"
	exit 1 ;;
mount-fake)
	echo "ok - sets: two shards"
	echo "FAIL - perms: a model in a 0700 folder: wfpa mnt/a.w: ok, expected EACCES"
	echo "# skip - desktop: no gio"
	echo "1 passed, 1 failed"
	exit 1 ;;
py-fake)
	echo "FAIL test_threads_minus_one"
	echo "python-check: weightfs 1.0: 9 passed, 1 failed"
	exit 1 ;;
crash-fake)
	echo "building"; echo "zzcrash: Segmentation fault (core dumped)"
	echo "make[1]: *** [Makefile:9: crash-fake] Error 139"
	exit 2 ;;
esac
echo "fake make: no target $2" >&2
exit 2
FAKE
chmod +x "$tmp/fake"

# 1. failing targets among passing ones
CHECK_LOGS=$tmp/logs bash "$driver" "$tmp/fake" good-check unit-fake mount-fake py-fake crash-fake \
	> "$tmp/out" 2>&1
rc=$?
[ "$rc" -ne 0 ] && ok "a failing run exits non-zero" || bad "a failing run exits 0"
last=$(tail -n 1 "$tmp/out")
[ "$last" = "check: 15 passed, 4 failed" ] && ok "the closing line counts as before" ||
	bad "closing line: '${last//,/;}', expected 'check: 15 passed; 4 failed'" # no count the outer driver reads
# what comes after the last line of any target's own output
tail_part=$(sed -n '/^make[[:space:]]*\[1\]: \*\*\* \[Makefile:9: crash-fake\]/,$p' "$tmp/out" | sed 1d)
before=$(printf '%s\n' "$tail_part" | sed '/^make check, by target:/,$d')
for want in "unit-fake: log $tmp/logs/unit-fake.log" "test_zz_dir_bits" "heap-use-after-free wf_zz.c:12" \
	"mount-fake: log $tmp/logs/mount-fake.log" "FAIL - perms: a model in a 0700 folder" \
	"py-fake: log $tmp/logs/py-fake.log" "FAIL test_threads_minus_one" \
	"crash-fake: log $tmp/logs/crash-fake.log" "zzcrash: Segmentation fault"; do
	if printf '%s\n' "$before" | grep -qF -- "$want"; then
		ok "named at the end, before the summary: $want"
	else
		bad "not in the lines before the summary: $want"
	fi
done
if printf '%s\n' "$before" | grep -qF "good-check: log"; then
	bad "a passing target is listed among the failures"
else
	ok "a passing target is not listed among the failures"
fi
if printf '%s\n' "$before" | grep -qF "sets: two shards"; then
	bad "a passing test of a failing target is named"
else
	ok "passing tests of a failing target are not named"
fi
# the output still streams (each target's lines come before the end), and
# each target's log holds it
grep -qx "layers fine" "$tmp/out" && ok "a target's output is still shown" || bad "a target's output is not shown"
for t in good-check unit-fake mount-fake py-fake crash-fake; do
	if [ -f "$tmp/logs/$t.log" ] && "$tmp/fake" x "$t" 2>&1 | cmp -s - "$tmp/logs/$t.log"; then
		ok "$t.log holds the target's output"
	else
		bad "$t.log missing or not the target's output"
	fi
done

# 2. every target passing: exit 0, no failure section
CHECK_LOGS=$tmp/logs2 bash "$driver" "$tmp/fake" good-check good-check > "$tmp/out2" 2>&1
rc=$?
[ "$rc" -eq 0 ] && ok "a passing run exits 0" || bad "a passing run exits $rc"
[ "$(tail -n 1 "$tmp/out2")" = "check: 6 passed, 0 failed" ] && ok "a passing run's closing line" ||
	bad "a passing run's closing line: $(tail -n 1 "$tmp/out2" | tr , ';')"
grep -q "what failed" "$tmp/out2" && bad "a passing run lists failures" || ok "a passing run lists no failures"

echo "check-driver: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
