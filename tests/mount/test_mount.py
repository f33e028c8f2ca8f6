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
  WF_TEST_JOBS    how many runners run groups side by side (default: one
                  per CPU, at most 4; 1 runs every group in this process).
                  Each runner is this file with WF_TEST_CTL set to the pipe
                  it reads its next group from, and has its own temporary
                  directory; a group's lines are printed together when it
                  ends, the longest groups are handed out first.

A clone in a private folder (a home of mode 0700) has its test data copied
under the temporary directory first (wf_harness.share_data), so that modes
and a second user's reads are those of a model kept where others may look.
"""

import glob
import os
import re
import subprocess
import sys
import threading
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
    BIN, check, report, Fail, force_unmount, GGML, mountinfo_points, RESULTS, SANITIZED, sanlog_files,
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
from t_scale import group_scale
from t_hf import group_hf
from t_gguf_quant import group_gguf_quant
from t_verify import group_verify
from t_hftok import group_hftok
from t_demo import group_demo
from t_net import group_net
from t_s3 import group_s3
from t_netcache import group_netcache


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


# Seconds each group took in a plain run on 2 cores (the `# group` lines):
# the longest start first, so that runners side by side end together.
EST = {"gguf_quant": 200, "gguf": 145, "views": 130, "cmds": 95, "memory": 90, "hftok": 65, "hf": 35,
       "parts": 33, "gguf_more": 29, "hfq": 28, "truncate": 28, "preview": 15, "bounds": 12, "perms": 10,
       "data": 10, "malformed": 8, "sets": 8, "demo": 7, "concurrency": 6, "net": 50, "s3": 40,
       "netcache": 40, "scale": 30}


def all_groups():
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
    groups.append(("scale", group_scale))
    groups.append(("hf", group_hf))
    groups.append(("gguf_quant", group_gguf_quant))
    groups.append(("verify", group_verify))
    groups.append(("hftok", group_hftok))
    groups.append(("demo", group_demo))
    groups.append(("net", group_net))
    groups.append(("s3", group_s3))
    groups.append(("netcache", group_netcache))
    return groups


def run_group(gname, fn):
    t0 = time.monotonic()
    check("%s: group ran to completion" % gname, fn)
    print("# group %s: %.1f s" % (gname, time.monotonic() - t0), flush=True)


def final_checks():
    """What every runner checks once its groups are done: its mounts gone, no
    sanitizer reports from its daemons."""
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


def worker(ctl_fd):
    """A runner started by side_by_side(): reads the index of its next group
    from ctl_fd, one per line, until the other end closes."""
    groups = all_groups()
    with os.fdopen(ctl_fd, "r") as ctl:
        for line in ctl:
            gname, fn = groups[int(line)]
            run_group(gname, fn)
    final_checks()
    print_tally()
    failed = [r for r in RESULTS if not r[1]]
    print("%d passed, %d failed" % (len(RESULTS) - len(failed), len(failed)), flush=True)
    return 1 if failed else 0


GROUP_DONE = re.compile(r"^# group \S+: [0-9.]+ s$")
SUMMARY = re.compile(r"^([0-9]+) passed, ([0-9]+) failed$")


def side_by_side(todo, jobs):
    """Runs the groups of indexes todo in jobs runner processes (this file
    with WF_TEST_CTL set), each with its own temporary directory, handing
    out the longest first to whichever runner is free.  A group's lines are
    printed together when it ends, so the log reads group by group.
    Returns (passed, failed) over all runners."""
    groups = all_groups()
    queue = sorted(todo, key=lambda i: (-EST.get(groups[i][0], 3), i))
    lock = threading.Lock()
    totals = [0, 0]

    def take():
        with lock:
            return queue.pop(0) if queue else None

    def run(k):
        r, w = os.pipe()
        env = dict(os.environ, WF_TEST_CTL=str(r), PYTHONUNBUFFERED="1")
        p = subprocess.Popen([sys.executable, os.path.abspath(__file__), BIN], env=env, pass_fds=(r,),
                             stdout=subprocess.PIPE, text=True, errors="replace")
        os.close(r)
        ctl = os.fdopen(w, "w")
        block, summary, ran = [], None, []

        def feed():
            i = take()
            if i is None:
                ctl.close()
            else:
                ran.append(groups[i][0])
                ctl.write("%d\n" % i)
                ctl.flush()
        try:
            feed()
            for line in p.stdout:
                line = line.rstrip("\n")
                m = SUMMARY.match(line)
                if m:
                    summary = (int(m.group(1)), int(m.group(2)))
                    continue
                block.append(line)
                if GROUP_DONE.match(line):
                    with lock:
                        print("\n".join(block), flush=True)
                    block = []
                    if not ctl.closed:
                        feed()
        finally:
            if not ctl.closed:
                ctl.close()
            rc = p.wait()
        with lock:
            if block:
                print("\n".join(block), flush=True)
            if summary is None or (rc != 0 and summary[1] == 0):
                report("runner %d (groups %s): exit %d%s" % (k, ",".join(ran), rc,
                                                           "" if summary else ", no summary line"), False,
                       "the runner died or failed outside a check")
            if summary:
                totals[0] += summary[0]
                totals[1] += summary[1]

    threads = [threading.Thread(target=run, args=(k,)) for k in range(min(jobs, len(todo)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return totals


def jobs_wanted():
    """WF_TEST_JOBS runners side by side; by default one per CPU, at most 4."""
    v = os.environ.get("WF_TEST_JOBS", "")
    if v:
        return max(1, int(v))
    return max(1, min(4, len(os.sched_getaffinity(0))))


def main():
    ctl = os.environ.get("WF_TEST_CTL")
    if ctl:
        return worker(int(ctl))
    print("# weightfs mount tests: %s%s, seed %d, tmp %s" % (
        BIN, " (sanitizer build)" if SANITIZED else "", SEED, TMP), flush=True)
    data_files = sorted(glob.glob(os.path.join(GGML, "*")) + glob.glob(os.path.join(STO, "*")))
    hashes = {p: sha256_file(p) for p in data_files}
    groups = all_groups()
    todo = [i for i, (gname, _) in enumerate(groups) if want(gname)]
    jobs = jobs_wanted()
    more = [0, 0]
    if jobs > 1 and len(todo) > 1:
        print("# %d runners side by side (WF_TEST_JOBS)" % min(jobs, len(todo)), flush=True)
        more = side_by_side(todo, jobs)
    else:
        for i in todo:
            run_group(*groups[i])

    def data_unchanged():
        changed = [os.path.basename(p) for p in data_files if sha256_file(p) != hashes[p]]
        if changed:
            raise Fail("changed: %r" % changed)
    check("errors: every test data file's sha256 unchanged after the suite", data_unchanged)
    final_checks()
    print_tally()
    failed = [r for r in RESULTS if not r[1]]
    print("# %.1f s" % (time.monotonic() - T_START))
    print("%d passed, %d failed" % (len(RESULTS) - len(failed) + more[0], len(failed) + more[1]))
    return 1 if failed or more[1] else 0


if __name__ == "__main__":
    sys.exit(main())
