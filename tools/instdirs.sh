#!/usr/bin/env bash
# tools/instdirs.sh make LIST DIR... | remove LIST
#
# `make install` creates its folders with `make`, which writes each folder it
# had to create (DIR or a missing parent, without $DESTDIR) to the list LIST
# (a path under $DESTDIR), keeping what an earlier install wrote there.
# `make uninstall`, once it has removed its files, calls `remove`: the list
# goes, then each folder on it, deepest first, if it is empty.  So an
# uninstall leaves no folder that the install created and removes none that
# was there before it (/usr/local/include on a fresh Debian) or that another
# program has since put files in.
set -eu
mode=${1:-} list=${2:-}
[ -n "$list" ] || { echo "usage: $0 make LIST DIR... | remove LIST" >&2; exit 2; }
shift 2
dest=${DESTDIR:-}
case $mode in
make)
	created=()
	[ -z "$dest" ] || mkdir -p "$dest"
	for d in "$@"; do
		missing=()
		p=$d
		while [ ! -d "$dest$p" ] && [ "$p" != / ] && [ "$p" != . ]; do
			missing=("$p" ${missing[@]+"${missing[@]}"})
			p=$(dirname "$p")
		done
		for m in ${missing[@]+"${missing[@]}"}; do
			mkdir -m 0755 "$dest$m"
			created+=("$m")
		done
	done
	mkdir -p "$(dirname "$dest$list")"
	{
		[ ! -f "$dest$list" ] || cat "$dest$list"
		[ ${#created[@]} -eq 0 ] || printf '%s\n' "${created[@]}"
	} | awk '!seen[$0]++' > "$dest$list.tmp"
	mv "$dest$list.tmp" "$dest$list"
	chmod 0644 "$dest$list"
	;;
remove)
	[ -f "$dest$list" ] || exit 0
	mapfile -t dirs < "$dest$list"
	rm -f "$dest$list"
	# deepest first: a longer path can only be inside a shorter one
	printf '%s\n' ${dirs[@]+"${dirs[@]}"} | awk '{ print length($0) "\t" $0 }' | sort -rn | cut -f2- |
		while IFS= read -r d; do
			[ -z "$d" ] || rmdir "$dest$d" 2>/dev/null || true
		done
	;;
*)
	echo "usage: $0 make LIST DIR... | remove LIST" >&2
	exit 2
	;;
esac
