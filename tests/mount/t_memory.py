"""Group memory: peak memory (VmHWM) of the daemon, `weightfs ls`,
`ls --json` and `convert` against the bound of docs/security.md, through
tools/memcheck.py --hwm on scaled-down models (issue 17 item 7).

The models are a tenth or a fifth of memcheck's full size, so the bound is
10 x header + 16 MiB instead of + 64 MiB: what a run costs besides the
header (the program, the workers' buffers) fits 16 MiB, while a header made
or kept whole (model.safetensors' header of a 4,000,000-element bool array
is 22 MB) does not.  Reading model.safetensors whole may raise the daemon's
VmHWM by 16 MiB at most.  The bytes read are compared before and after in
docs/security.md by their sha256, which memcheck prints.
"""

import os
import subprocess
import sys

from wf_harness import BIN, check, Fail, ROOT, SANITIZED, TMP

MEMCHECK = os.path.join(ROOT, "tools", "memcheck.py")

# (case, scale): full size / scale
CASES = [("boolarr", 5), ("many_gguf", 10), ("shards", 10)]


def group_memory():
    for case, scale in CASES:
        def one(case=case, scale=scale):
            cmd = [sys.executable, MEMCHECK, "--hwm", "--weightfs", BIN, "--dir", TMP,
                   "--scale", str(scale), "--slack", "16", "--read-growth", "16", case]
            if not SANITIZED:  # ASan's quarantine keeps freed memory: figures only
                cmd.insert(2, "--check")
            r = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
            out = r.stdout.decode(errors="replace").strip()
            err = r.stderr.decode(errors="replace").strip()
            if r.returncode != 0 or not out.startswith(case):
                raise Fail("exit %d: %s %s" % (r.returncode, out, err))
            return " ".join(out.split()) + (" (not asserted in a sanitizer build)" if SANITIZED else "")
        check("memory: %s / %d within 10 x header + 16 MiB (daemon, ls, ls --json, convert)" % (case, scale),
              one)
