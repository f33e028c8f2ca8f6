#!/usr/bin/python3
"""Run llama.cpp's own convert_hf_to_gguf.py on every case of tests/clients/converter_cases.py,
in every outtype listed there, and write what it wrote, as digests, to
tests/data/converter/digests.json (`make converter-digests`).

The gguf group of the mount tests compares each model.gguf with these digests, so that
`make check` holds weightfs to the real converter without running it (it takes ~10 s a run
with torch). Rerun this when the pinned node-llama-cpp (tests/clients/tokenizers.json), a
case or tiny_models.py changes: the test refuses a digest whose recorded inputs differ
from the folder it made.

    tools/converter_digests.py [--out FILE] [CASE ...]
"""
import argparse
import json
import os
import subprocess
import sys
import tempfile

TOP = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CLIENTS = os.path.join(TOP, "tests", "clients")
sys.path.insert(0, CLIENTS)
import converter_cases  # noqa: E402
import real_convert  # noqa: E402

PY = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=os.path.join(TOP, "tests", "data", "converter", "digests.json"))
    ap.add_argument("cases", nargs="*")
    a = ap.parse_args()
    src = real_convert.llama_src()
    commit = subprocess.run(["git", "-C", src, "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True,
                            check=True).stdout.strip()
    old = {}
    if a.cases and os.path.exists(a.out):
        with open(a.out, encoding="utf-8") as f:
            old = json.load(f)["cases"]
    out = {"llama_cpp": commit, "command": "make converter-digests", "cases": old}
    with tempfile.TemporaryDirectory(prefix="wf-conv-") as tmp:
        for name in a.cases or list(converter_cases.CASES):
            folder = converter_cases.make(name, tmp)
            case = {"inputs": converter_cases.inputs(folder), "outtypes": {}}
            for ot in converter_cases.CASES[name][3]:
                g = os.path.join(tmp, "%s-%s.gguf" % (name, ot))
                r = subprocess.run([PY, os.path.join(CLIENTS, "real_convert.py"), "run", folder, g, "--outtype", ot],
                                   stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                if r.returncode != 0:
                    sys.exit("converter_digests: %s --outtype %s: %s" % (name, ot, r.stderr[-2000:]))
                case["outtypes"][ot] = real_convert.digest(g)
                os.unlink(g)
                print("%s --outtype %s: %d tensors, %d key/values" % (
                    name, ot, len(case["outtypes"][ot]["tensors"]), len(case["outtypes"][ot]["kv"])), flush=True)
            out["cases"][name] = case
    with open(a.out + ".tmp", "w", encoding="utf-8") as f:
        json.dump(out, f, ensure_ascii=False, indent=1, sort_keys=False)
        f.write("\n")
    os.replace(a.out + ".tmp", a.out)


if __name__ == "__main__":
    main()
