#!/usr/bin/env bash
# tools/run_checks.sh MAKE TARGET... - what `make check` runs: each check
# target in turn, its output shown as it comes and kept in
# $CHECK_LOGS/TARGET.log (build/check-logs/ unless said), then, for each
# target that failed, the names of its failing tests and its log's path,
# one line per target and one closing line for all of them, "check: N
# passed, M failed".  A run on a loaded machine that fails once must say
# what failed without scrolling back through 20 minutes of output.
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
logs=${CHECK_LOGS:-build/check-logs}
mkdir -p "$logs" || exit 2
logs=$(cd "$logs" && pwd) || exit 2
# at most this many failing tests named per target (the log has them all)
max_named=20

# The lines of log $1 that name a failing test, one per test: Check's
# "file.c:LINE:F:suite:test:..." (E for an error, a crash included), the
# mount tests' "FAIL - name: reason" ("not ok - name" in TAP form), the
# Python tests' "FAIL name", readme/install's "X-check: FAIL: why", the
# fuzzers' "fuzz: X FAILED", a sanitizer's closing "SUMMARY:" line.  Each
# cut to one short line.
failing_tests() {
	grep -aE '^[^ :]+:[0-9]+:[EF]:|^(not ok|FAIL) |^[a-z-]+: FAIL|^fuzz: .* FAILED|^SUMMARY: [A-Za-z]+Sanitizer' "$1" |
		cut -c1-200
}

passed=0 failed=0 lines=() red=()
for target in "$@"; do
	log=$logs/$target.log
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
	[ "$f" -ne 0 ] && red+=("$target")
	passed=$((passed + p))
	failed=$((failed + f))
done
echo
if [ ${#red[@]} -ne 0 ]; then
	echo "make check, what failed:"
	for target in "${red[@]}"; do
		log=$logs/$target.log
		echo "  $target: log $log"
		names=$(failing_tests "$log")
		if [ -z "$names" ]; then
			# nothing names a test (a crash, a build error): its last lines
			echo "    (no failing test named; the log ends:)"
			tail -n 5 "$log" | cut -c1-200 | sed 's/^/      /'
			continue
		fi
		n=$(printf '%s\n' "$names" | wc -l)
		printf '%s\n' "$names" | head -n "$max_named" | sed 's/^/    /'
		[ "$n" -gt "$max_named" ] && echo "    ... and $((n - max_named)) more in the log"
	done
fi
echo "make check, by target:"
printf '%s\n' "${lines[@]}"
echo "check: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
