#!/usr/bin/env bash
# tools/run_checks.sh MAKE TARGET... - what `make check` runs: each check
# target in turn, its output shown as it comes, then one line per target
# and one closing line for all of them, "check: N passed, M failed".
#
# A target's count is what its own runners say, summed: Check's "Checks: N,
# Failures: F, Errors: E" lines and "N passed, M failed" lines (the mount
# suite, each Python test file, readme-check, install-check).  A target that prints neither
# (layers-check, api-check, the fuzzers, the bench tools) counts as one
# check, passed when it exits 0.  A target that fails without a failure in
# its count adds one, so the closing line never hides a red target.
set -u
make=$1
shift
log=$(mktemp)
trap 'rm -f "$log"' EXIT
passed=0 failed=0 lines=()
for target in "$@"; do
	$make --no-print-directory "$target" 2>&1 | tee "$log"
	rc=${PIPESTATUS[0]}
	p=0 f=0 counted=
	while read -r n fl er; do
		p=$((p + n - fl - er))
		f=$((f + fl + er))
		counted=1
	done < <(sed -nE 's/.*Checks: ([0-9]+), Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2 \3/p' "$log")
	# the last such line of each runner that prints one (the Python checks
	# print one per file, so every line after a Check summary counts once)
	while read -r n fl; do
		p=$((p + n))
		f=$((f + fl))
		counted=1
	done < <(sed -nE 's/(^|.*[^0-9])([0-9]+) passed, ([0-9]+) failed.*/\2 \3/p' "$log")
	if [ -z "$counted" ]; then
		if [ "$rc" -eq 0 ]; then p=1; else f=1; fi
	elif [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		f=1
	fi
	lines+=("$(printf '  %-14s %6d passed, %d failed%s' "$target" "$p" "$f" "$([ "$rc" -ne 0 ] && echo " (exit $rc)")")")
	passed=$((passed + p))
	failed=$((failed + f))
done
echo
echo "make check, by target:"
printf '%s\n' "${lines[@]}"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
