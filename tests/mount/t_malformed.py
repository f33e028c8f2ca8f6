"""Group malformed: every file of tests/malformed refused with its exit code
and one-line message, and a header that runs the parser out of memory.
"""

import json
import os
import struct
import subprocess
import time

from wf_harness import (
    BIN, check, daemon_pid, Errs, Fail, force_unmount, is_mounted, load_json, MALFORMED,
    new_dir, one_line_error, report, reset_signals, run_cli, san_env, san_lines, SANITIZED,
    sanlog_files, Skip, TMP, wait_pid)
from wf_models import write_file


# ---------------------------------------------------------------- group: malformed

# A valid header of 100,000 tensors (6.6 MB of JSON) and an address-space
# limit that holds the binary, its libraries and the mapping of the file but
# not cJSON's tree of it (~70 MB): the parse runs out of memory part way.
# Without the hooks in wf_st.c that was "header: invalid JSON near byte N",
# exit 3.  (Measured: 15-80 MB limits all fail inside cJSON; 40 MB is the
# middle.)
OOM_TENSORS = 100000
OOM_LIMIT_KB = 40000


def check_oom_header():
    if SANITIZED:
        # not a gap: the normal build, which CI runs too, runs this check
        raise Skip("ASan reserves terabytes of shadow memory up front, so no ulimit -v leaves "
                   "room to start the sanitizer build; the normal build runs it")
    import resource
    path = os.path.join(TMP, "oom-header.safetensors")
    hdr = json.dumps({"t%06d" % i: {"dtype": "U8", "shape": [1], "data_offsets": [i, i + 1]}
                      for i in range(OOM_TENSORS)}, separators=(",", ":")).encode()
    write_file(path, struct.pack("<Q", len(hdr)) + hdr + bytes(OOM_TENSORS))
    mp = new_dir("oom-")

    def limit():
        reset_signals()
        lim = OOM_LIMIT_KB * 1024
        resource.setrlimit(resource.RLIMIT_AS, (lim, lim))

    p = subprocess.Popen([BIN, path, mp], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, preexec_fn=limit)
    try:
        _, err = p.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.communicate()
        raise Fail("did not finish within 30 s")
    err = err.decode("utf-8", "replace")
    errs = Errs()
    if is_mounted(mp):
        errs.add("mounted under a %d KB limit (raise OOM_TENSORS)" % OOM_LIMIT_KB)
        force_unmount(mp)
    if p.returncode != 5:
        errs.add("exit %d, expected 5 (out of memory): %r" % (p.returncode, err.strip()[:200]))
    one_line_error(err, path, errs, "ulimit -v %d" % OOM_LIMIT_KB, "out of memory")
    errs.raise_if_any()
    return "%d-byte header under ulimit -v %d: %s" % (len(hdr), OOM_LIMIT_KB, err.strip()[len(path) + 12:])


def group_malformed():
    expect = os.path.join(MALFORMED, "expect.json")
    if not os.path.exists(expect):
        raise Fail("tests/malformed/expect.json does not exist")
    entries = load_json(expect)
    from concurrent.futures import ThreadPoolExecutor

    def one(ent):
        path = os.path.join(MALFORMED, ent["file"])
        mp = new_dir("mal-")
        errs = []
        try:
            rc, out, err, secs = run_cli([path, mp], timeout=10.0, env=san_env())
        except Fail as ex:
            force_unmount(mp)
            return ["%s: %s" % (ent["file"], ex)]
        if rc == 0:
            for p in daemon_pid(mp):
                force_unmount(mp)
                wait_pid(p, 10)
        if rc != ent["exit"]:
            errs.append("%s: exit %d, expected %d (%s)" % (ent["file"], rc, ent["exit"],
                                                           err.strip()[:200]))
        if ent["exit"] != 0:
            lines = err.splitlines()
            prefix = "weightfs: %s: " % path
            if len(lines) != 1 or not lines[0].startswith(prefix):
                errs.append("%s: stderr not one 'weightfs: PATH: ' line: %r" % (ent["file"], err[:300]))
            elif ent.get("message") and ent["message"] not in lines[0]:
                errs.append("%s: %r lacks %r" % (ent["file"], lines[0][len(prefix):][:200],
                                                 ent["message"]))
        if san_lines(err):
            errs.append("%s: sanitizer output" % ent["file"])
        if secs > 10:
            errs.append("%s: took %.1f s" % (ent["file"], secs))
        if is_mounted(mp):
            errs.append("%s: left a mount" % ent["file"])
            force_unmount(mp)
        return errs

    before = sanlog_files()
    t0 = time.monotonic()
    with ThreadPoolExecutor(max_workers=4) as ex:
        results = list(ex.map(one, entries))
    bad = [e for r in results for e in r]
    new = [f for f in sanlog_files() if f not in before]
    for ent, r in zip(entries, results):
        if r:
            report("malformed: %s" % ent["file"], False, "; ".join(r))
    if new:
        with open(new[0], errors="replace") as f:
            report("malformed: sanitizer logs", False, f.read()[:500])
    n_ok = sum(1 for r in results if not r)
    report("malformed: %d of %d files rejected as expected.json says" % (n_ok, len(entries)),
           not bad, "%d files failed (listed above)" % sum(1 for r in results if r),
           info="%.1f s" % (time.monotonic() - t0))
    check("malformed: out of memory parsing a valid safetensors header is exit 5, one line",
          check_oom_header)
