#!/usr/bin/env bash
# make demo: install what is missing (with apt, where we can), build, mount
# the small GGUF model that ships in the repo at ./mnt and show it.
set -euo pipefail
cd "$(dirname "$0")/.."

model=tests/data/demo/demo-llama.gguf
mnt=$PWD/mnt
bash tools/deps.sh build

make -s build/weightfs

# A mount left over from an earlier demo would hide the new one.
if mountpoint -q "$mnt" 2>/dev/null; then
	fusermount3 -u "$mnt"
fi
mkdir -p "$mnt"
build/weightfs "$model" "$mnt"

echo
echo "== $model mounted at ./mnt"
echo "   (a small llama made by tools/make_demo_model.py: a byte-level BPE tokenizer and"
echo "   bigram weights taken from weightfs's own docs, in F16, Q8_0, Q4_K and Q6_K; not trained)"
if command -v tree >/dev/null 2>&1; then
	tree --noreport -h mnt | head -40
else
	(cd mnt && find . | sort | head -40)
fi

t=mnt/blk/0/attn_q/weight
echo
echo "== ls -l ./$(dirname "$t")"
ls -l "$(dirname "$t")"
echo
echo "== what tensors.json says about $t"
grep -F "\"name\":\"blk.0.attn_q.weight\"" mnt/tensors.json || true
if command -v getfattr >/dev/null 2>&1; then
	echo
	echo "== xattrs"
	getfattr -d "$t"
fi
echo
echo "== the first 16 float32 values of $t (decoded from its Q4_K blocks)"
od -A d -t f4 -N 64 -w16 "$t"
echo
echo "== weightfs stats $model blk.0."
build/weightfs stats "$model" blk.0.
echo
echo "== ./mnt/hf: the same model as a Hugging Face folder, for transformers"
ls mnt/hf
echo
# The python3 first on PATH (a venv, pyenv, conda) may lack numpy: name one
# that has it, as tests/mount/run.sh picks one.
py=
for cand in python3 /usr/bin/python3; do
	if command -v "$cand" >/dev/null 2>&1 && "$cand" -c 'import numpy' >/dev/null 2>&1; then
		py=$cand
		break
	fi
done
if [ -n "$py" ]; then
	echo "Try:  $py -c 'import numpy as np; print(np.fromfile(\"$PWD/$t\", np.float32)[:8])'"
else
	echo "Try:  od -A d -t f4 -N 32 $PWD/$t"
	echo "      (numpy: apt-get install python3-numpy, then /usr/bin/python3 -c 'import numpy as np; ...')"
fi
echo "Unmount with:  fusermount3 -u ./mnt"
