#!/usr/bin/env python3
"""Mount tests for weightfs: python3 tests/mount/test_mount.py BINARY

Run through tests/mount/run.sh (which picks a Python with numpy).  Every
check prints `ok - name` or `FAIL - name: reason`; the last line is
`N passed, M failed` and the exit status is 1 if any check failed.

Every daemon that can be run in the foreground is (-f, stderr captured to a
file) so that sanitizer reports of a SANITIZE=1 build fail the check that
started it.  Daemonized runs write sanitizer reports to files through
ASAN_OPTIONS/UBSAN_OPTIONS log_path, which are checked the same way.

This file is the entry point: it sets the run up (wf_harness.init), runs the
groups in order and prints the tally.  The rest lives next to it:
  wf_harness.py   results (check, Skip, Errs), Mount, mount/unmount helpers,
                  run_cli, cleanup; the shared settings (BIN, TMP, SEED, ...)
  wf_models.py    GGUF writer, oracle manifests and expected values, sets
  wf_naming.py    the naming rule of docs/naming.md, reimplemented
  wf_read.py      reading a tensor every way and checking its bytes
  wf_tree.py      checks of a whole mounted tree (paths, stat, coreutils)
  t_*.py          the groups, one file per feature (see README.md):
                  t_data (data), t_naming (naming), t_stat_xattr (stat,
                  xattr), t_errors_cli (errors, cli), t_unmount_concurrency
                  (unmount, concurrency), t_change (truncate),
                  t_large_many_bounds (large, many, bounds), t_malformed
                  (malformed), t_remote (remote), t_sets (sets), t_parts (parts), t_desktop
                  (desktop), t_cmds (cmds), t_views (views), t_perms (perms),
                  t_stats (stats), t_diff (diff), t_preview (preview),
                  t_memory (memory), t_verify (verify), t_demo (demo)

Environment:
  WF_TEST_SEED    seed for the random ranges (default 20240601)
  WF_TEST_ONLY    comma-separated substrings: run only checks whose group
                  name contains one of them (groups: data, naming, stat,
                  xattr, errors, cli, unmount, concurrency, truncate,
                  large, many, malformed, remote, bounds, sets, desktop,
                  cmds, views, perms, memory)
  WF_TEST_KEEP    keep the temporary directory
"""

import glob
import os
import sys
import time


# ---------------------------------------------------------------- setup

if len(sys.argv) != 2:
    sys.stderr.write("usage: test_mount.py BINARY\n")
    sys.exit(2)

# The test modules sit next to this file; keep the source tree free of
# __pycache__.
sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import wf_harness  # noqa: E402

# Shared state (BIN, TMP, SANITIZED, ...) is set here, once, before the
# test modules import it.
wf_harness.init(sys.argv[1])

from wf_harness import (
    BIN, check, Fail, force_unmount, GGML, mountinfo_points, RESULTS, SANITIZED, sanlog_files,
    SEED, sha256_file, STO, T_START, TMP, want)
from wf_models import TALLY_GGUF, TALLY_ST
from t_data import group_data_floats, group_data_gguf, group_data_st
from t_naming import group_naming
from t_stat_xattr import group_stat, group_xattr
from t_errors_cli import group_cli, group_cli_mountpoint, group_errors
from t_unmount_concurrency import group_concurrency, group_unmount
from t_change import group_truncate
from t_large_many_bounds import group_bounds, group_large, group_many
from t_malformed import group_malformed
from t_sets import group_sets
from t_names import group_names
from t_parts import group_parts
from t_remote import group_remote
from t_desktop import group_desktop
from t_cmds import group_cmds
from t_views import group_views
from t_hfq import group_hfq
from t_perms import group_perms
from t_stats import group_stats
from t_diff import group_diff
from t_preview import group_preview
from t_memory import group_memory
from t_gguf import group_gguf
from t_gguf_more import group_gguf_more
from t_hf import group_hf
from t_gguf_quant import group_gguf_quant
from t_verify import group_verify
from t_hftok import group_hftok
from t_demo import group_demo


# ---------------------------------------------------------------- main

def print_tally():
    for title, table in (("GGUF (ggml-oracle)", TALLY_GGUF), ("safetensors (st-oracle)", TALLY_ST)):
        if not table:
            continue
        print("# per-type results, %s: type matched/total" % title)
        for ty in sorted(table):
            ok, total, note = table[ty]
            print("#   %-12s %3d/%-3d %s" % (ty, ok, total, note if ok == total else
                                           "<-- MISMATCH " + note))


def main():
    print("# weightfs mount tests: %s%s, seed %d, tmp %s" % (
        BIN, " (sanitizer build)" if SANITIZED else "", SEED, TMP), flush=True)
    data_files = sorted(glob.glob(os.path.join(GGML, "*")) + glob.glob(os.path.join(STO, "*")))
    hashes = {p: sha256_file(p) for p in data_files}
    groups = [("data", group_data_gguf), ("data", group_data_st), ("data", group_data_floats),
              ("naming", group_naming),
              ("stat", group_stat), ("xattr", group_xattr), ("errors", group_errors),
              ("cli", group_cli), ("cli", group_cli_mountpoint),
              ("unmount", group_unmount), ("concurrency", group_concurrency),
              ("truncate", group_truncate), ("large", group_large), ("many", group_many),
              ("malformed", group_malformed), ("remote", group_remote)]
    groups.append(("bounds", group_bounds))
    groups.append(("sets", group_sets))
    groups.append(("names", group_names))
    groups.append(("parts", group_parts))
    groups.append(("desktop", group_desktop))
    groups.append(("cmds", group_cmds))
    groups.append(("views", group_views))
    groups.append(("hfq", group_hfq))
    groups.append(("perms", group_perms))
    groups.append(("stats", group_stats))
    groups.append(("diff", group_diff))
    groups.append(("preview", group_preview))
    groups.append(("memory", group_memory))
    groups.append(("gguf", group_gguf))
    groups.append(("gguf_more", group_gguf_more))
    groups.append(("hf", group_hf))
    groups.append(("gguf_quant", group_gguf_quant))
    groups.append(("verify", group_verify))
    groups.append(("hftok", group_hftok))
    groups.append(("demo", group_demo))
    for gname, fn in groups:
        if not want(gname):
            continue
        t0 = time.monotonic()
        check("%s: group ran to completion" % gname, fn)
        print("# group %s: %.1f s" % (gname, time.monotonic() - t0), flush=True)

    def data_unchanged():
        changed = [os.path.basename(p) for p in data_files if sha256_file(p) != hashes[p]]
        if changed:
            raise Fail("changed: %r" % changed)
    check("errors: every test data file's sha256 unchanged after the suite", data_unchanged)

    def no_mounts_left():
        left = [m for m in mountinfo_points() if m.startswith(TMP.encode())]
        if left:
            for m in left:
                force_unmount(m.decode(errors="surrogateescape"))
            raise Fail("mounts left behind: %r" % left)
    check("cleanup: no mount left behind", no_mounts_left)

    def sanlogs():
        files = sanlog_files()
        if files:
            with open(files[0], errors="replace") as f:
                raise Fail("%d sanitizer log files, first: %s" % (len(files), f.read()[:500]))
    check("sanitizer: no reports from daemonized runs", sanlogs)

    print_tally()
    failed = [r for r in RESULTS if not r[1]]
    print("# %.1f s" % (time.monotonic() - T_START))
    print("%d passed, %d failed" % (len(RESULTS) - len(failed), len(failed)))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
