#!/usr/bin/env bash
# tests/install/completion.sh COMPLETION WEIGHTFS
#
# Loads the bash completion file COMPLETION into this shell and completes
# command lines as bash would (COMP_WORDS, COMP_CWORD, then the function
# `complete -p weightfs` names), with WEIGHTFS as the program on PATH:
# commands, options, -o values, MODEL files, mount points, tensor names.
set -u
comp=$(cd "$(dirname "$1")" && pwd)/$(basename "$1") prog=$(cd "$(dirname "$2")" && pwd)/$(basename "$2")
root=$(cd "$(dirname "$0")/../.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/bin" "$tmp/work/models dir" "$tmp/work/mnt"
ln -s "$prog" "$tmp/bin/weightfs"
cp "$root/tests/data/ggml-oracle/mixed_llama_tiny.gguf" "$tmp/work/demo.gguf"
: > "$tmp/work/notes.txt"
: > "$tmp/work/w.safetensors"
export PATH=$tmp/bin:$PATH
cd "$tmp/work"
# shellcheck source=/dev/null
. "$comp"
fn=$(complete -p weightfs | sed -n 's/.*-F \([^ ]*\) .*/\1/p')
[ -n "$fn" ] || { echo "completion: FAIL: $comp does not register a completion for weightfs"; exit 1; }
passed=0 failed=0

# complete "LINE" -> sorted COMPREPLY, one per line (the word being completed
# is the last of LINE, empty when LINE ends in a space)
complete_line() {
	local line=$1
	read -r -a COMP_WORDS <<< "$line"
	[[ $line == *' ' ]] && COMP_WORDS+=('')
	COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
	COMP_LINE=$line COMP_POINT=${#line}
	COMPREPLY=()
	"$fn" weightfs "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]:-}"
	printf '%s\n' ${COMPREPLY[@]+"${COMPREPLY[@]}"} | sort
}

# expect "LINE" "WORD..." : every WORD is offered; "!WORD": WORD is not
expect() {
	local line=$1 got w ok=1
	shift
	got=$(complete_line "$line")
	for w in "$@"; do
		if [[ $w == '!'* ]]; then
			grep -qxF -- "${w#!}" <<< "$got" && ok=0
		else
			grep -qxF -- "$w" <<< "$got" || ok=0
		fi
	done
	if [ $ok = 1 ]; then
		passed=$((passed + 1))
	else
		failed=$((failed + 1))
		echo "completion: FAIL: '$line' offered [$(tr '\n' ' ' <<< "$got")], expected $*"
	fi
}

expect "weightfs " ls info cat convert demo.gguf w.safetensors "models dir" mnt '!notes.txt'
expect "weightfs l" ls '!info'
expect "weightfs c" cat convert
expect "weightfs -" -f -s -d -o -h -V --help --version
expect "weightfs -o " dtype=f32 dtype=f16 dtype=bf16 dtype=stored npy suffix allow_other auto_unmount
expect "weightfs -o dtype=b" dtype=bf16 '!dtype=f16'
expect "weightfs -o npy,dt" npy,dtype=f32 npy,dtype=stored '!dtype=f32'
expect "weightfs -o npy,s" npy,suffix
expect "weightfs demo.gguf " mnt "models dir" '!demo.gguf' '!ls'
expect "weightfs -o npy demo.gguf m" mnt "models dir"
expect "weightfs demo.gguf mnt " '!mnt' '!demo.gguf'
expect "weightfs d" demo.gguf '!mnt'
expect "weightfs ls " demo.gguf w.safetensors '!notes.txt' '!ls'
expect "weightfs ls --" --json '!--force'
expect "weightfs ls -o " dtype=bf16 npy '!allow_other'
expect "weightfs info -" --json
expect "weightfs cat -" --offset --length -o
expect "weightfs cat demo.gguf blk.0.attn_q" blk.0.attn_q.weight '!blk.0.attn_k.weight'
expect "weightfs cat --offset 4 demo.gguf out" output.weight output_norm.weight
expect "weightfs cat -o dtype=f16 demo.gguf tok" token_embd.weight
expect "weightfs convert -" --force -o
expect "weightfs convert -o " dtype=bf16 '!npy'
expect "weightfs convert demo.gguf " w.safetensors "models dir" '!demo.gguf'
expect "weightfs verify -" --json --write --against '!--force'
expect "weightfs verify " demo.gguf "models dir" '!verify'
expect "weightfs verify --write " notes.txt demo.gguf
expect "weightfs verify --write m.json " demo.gguf "models dir" '!notes.txt'
expect "weightfs stats -" --json -o -h --help
expect "weightfs diff -" --json '!--force'
expect "weightfs cat --length 8 --offset 4 demo.gguf out" output.weight
# every option of every command, as its table has it (weightfs --list-options), is offered
for c in ls info cat convert stats diff verify; do
	opts=$(weightfs --list-options "$c" | awk '{print $1}')
	[ -n "$opts" ] || { failed=$((failed + 1)); echo "completion: FAIL: weightfs --list-options $c says nothing"; }
	# shellcheck disable=SC2086
	expect "weightfs $c -" $opts
done
# every command `weightfs -h` lists completes
for c in $(weightfs -h 2>&1 | sed -n -E 's/^(usage:)?[[:space:]]+[^[:space:]]*weightfs[[:space:]]+([a-z][a-z0-9-]*)([[:space:]].*)?$/\2/p'); do
	expect "weightfs ${c:0:1}" "$c"
done
echo "completion: $passed passed, $failed failed"
[ $failed = 0 ]
