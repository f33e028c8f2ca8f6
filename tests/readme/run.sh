#!/usr/bin/env bash
# tests/readme/run.sh FILE.md... - every shell block of each FILE runs as
# written.
#
# A block is a fenced ```sh (or ```bash, ```shell) block; ```python blocks
# run with /usr/bin/python3.  A block right after a line
# `<!-- not run: REASON -->` is left out (make demo, an install, an fstab
# line); fences with no language are output and are not run.  The blocks
# of one FILE run in order in one bash (set -e), so a mount made in one
# block is there in the next, from a scratch copy of the source tree's top
# (symbolic links to its files: the README's relative paths work, and
# what the blocks write lands in the scratch folder).  `weightfs` on PATH
# is build/weightfs, as after `make install`; PYTHONPATH names python/, as
# an installed module would be found.  A failing block is named by its
# first line number; a mount a failed block left is unmounted.
#
# Needs FUSE for the mounts; without /dev/fuse and fusermount3 the check
# is skipped and says so, except when CI is set (then it fails).
# WEIGHTFS_README_VERBOSE=1 prints what the blocks printed.  Also checks the
# README's shape (length, the two commands first) and every FILE's relative
# links.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
if [ $# -eq 0 ]; then
	echo "usage: $0 FILE.md..." >&2
	exit 2
fi
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null 2>&1; then
	if [ -n "${CI+set}" ]; then
		echo "readme-check: FAIL (CI is set): no /dev/fuse or fusermount3"
		exit 1
	fi
	echo "readme-check: skipped: no /dev/fuse or fusermount3"
	exit 0
fi
if [ ! -x "$root/build/weightfs" ]; then
	echo "readme-check: FAIL: build/weightfs is not built (make)"
	exit 1
fi

# blocks FILE: "LINE<TAB>LANG" lines, each block's text in $tmp/block.LINE
extract() {
	awk -v dir="$tmp" '
		/^<!-- not run/ { skip = 1; next }
		!inb && /^```/ {
			lang = substr($0, 4); inb = 1; start = NR + 1
			run = !skip && (lang == "sh" || lang == "bash" || lang == "shell" || lang == "python")
			skip = 0
			if (run) { out = dir "/block." start; printf "" > out; print start "\t" lang }
			next
		}
		inb && /^```/ { inb = 0; if (run) close(out); next }
		inb { if (run) print >> out; next }
		NF { skip = 0 }
	' "$1"
}

passed=0 failed=0

# The README's shape (issue 20): at most 300 lines, make demo and make check
# in its first 15; in every FILE, relative links name files that exist.
shape() {
	local f=$1 dir link bad=0
	if [ "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" = "$root/README.md" ]; then
		if [ "$(wc -l < "$f")" -gt 300 ]; then
			echo "readme-check: FAIL: $f has $(wc -l < "$f") lines (at most 300)"
			bad=1
		fi
		for c in 'make demo' 'make check'; do
			if ! head -15 "$f" | grep -q "^$c"; then
				echo "readme-check: FAIL: $f: no line starting '$c' in its first 15 lines"
				bad=1
			fi
		done
	fi
	dir=$(dirname "$f")
	while IFS= read -r link; do
		link=${link%%#*}
		[ -z "$link" ] || [ -e "$dir/$link" ] && continue
		echo "readme-check: FAIL: $f links to $link, which does not exist"
		bad=1
	done < <(grep -o '](\([^)]*\))' "$f" | sed 's/^](\(.*\))$/\1/' | grep -v '^[a-z]*:')
	return $bad
}
for f in "$@"; do
	if shape "$f"; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done

for f in "$@"; do
	file=$(cd "$(dirname "$f")" && pwd)/$(basename "$f")
	tmp=$(mktemp -d /tmp/weightfs-readme.XXXXXX)
	farm=$tmp/tree
	mkdir -p "$farm" "$tmp/bin"
	for e in "$root"/* "$root"/.[!.]*; do
		case $(basename "$e") in
		mnt | m | v | .git) ;;
		*) [ -e "$e" ] && ln -s "$e" "$farm/$(basename "$e")" ;;
		esac
	done
	ln -s "$root/build/weightfs" "$tmp/bin/weightfs"
	script=$tmp/script.sh
	{
		echo "set -e"
		echo "cd '$farm'"
	} > "$script"
	n=0
	while IFS=$'\t' read -r line lang; do
		n=$((n + 1))
		echo "echo '@@ $(basename "$f"):$line' >&2" >> "$script"
		if [ "$lang" = python ]; then
			printf '/usr/bin/python3 - <<'"'"'WEIGHTFS_README_EOF'"'"'\n' >> "$script"
			cat "$tmp/block.$line" >> "$script"
			echo "WEIGHTFS_README_EOF" >> "$script"
		else
			cat "$tmp/block.$line" >> "$script"
		fi
	done < <(extract "$file")
	echo "echo '@@ end' >&2" >> "$script"
	if [ $n -eq 0 ]; then
		echo "readme-check: FAIL: $f: no shell blocks found"
		failed=$((failed + 1))
		rm -rf "$tmp"
		continue
	fi
	PATH=$tmp/bin:$PATH PYTHONPATH=$root/python bash "$script" > "$tmp/out" 2> "$tmp/err"
	rc=$?
	[ -z "${WEIGHTFS_README_VERBOSE:-}" ] || cat "$tmp/out"
	last=$(grep '^@@ ' "$tmp/err" | tail -1 | cut -c4-)
	if [ $rc -eq 0 ] && [ "$last" = end ]; then
		passed=$((passed + 1))
		echo "readme-check: $(basename "$f"): $n blocks ran"
	else
		failed=$((failed + 1))
		echo "readme-check: FAIL: $f: the block at line ${last#*:} failed (exit $rc):"
		awk '/^@@ /{buf = ""; next} {buf = buf $0 "\n"} END {printf "%s", buf}' "$tmp/err" | tail -15 | sed 's/^/    /'
	fi
	# whatever a failed block left mounted
	for d in "$farm"/*; do
		if [ -d "$d" ] && [ ! -L "$d" ] && mountpoint -q "$d" 2>/dev/null; then
			fusermount3 -u "$d" 2>/dev/null || fusermount3 -uz "$d"
		fi
	done
	rm -rf "$tmp"
done
echo "readme-check: $passed passed, $failed failed"
[ $failed -eq 0 ]
