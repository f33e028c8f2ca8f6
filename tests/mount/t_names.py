"""Group names: file names and paths that hold a newline or an ESC (a model
folder's entries, MODEL and the mount point as given) still give a refusal of
one stderr line that names the file escaped ('a\\x0ab.gguf'), or mount when the
files are fine; tensor names with code points that reorder or break a line
on screen (bidirectional controls, U+2028, C1) are escaped where shown.
"""

import os

import numpy as np

from wf_harness import (
    check, Errs, force_unmount, is_mounted, new_dir, run_cli, san_env, san_lines, unmount_daemon)
from wf_models import f32_tensor, gguf_bytes, gkv, write_file


def one_terminal_line(err, errs, label, substr):
    """err is exactly one line ending in '\\n', with no other control
    character (C0, DEL, C1) in it, and it holds substr."""
    body = err[:-1] if err.endswith("\n") else None
    bad = [c for c in (body or "") if ord(c) < 0x20 or 0x7F <= ord(c) < 0xA0]
    if body is None or "\n" in body or not body:
        errs.add("%s: stderr is not one line: %r" % (label, err[:300]))
    elif bad:
        errs.add("%s: stderr holds control characters %r: %r" % (label, bad[:4], err[:300]))
    elif substr not in body:
        errs.add("%s: stderr %r lacks %r" % (label, body, substr))


def split_part(no, count):
    kvs = [gkv("split.no", "u16", no), gkv("split.count", "u16", count), gkv("split.tensors.count", "i32", count)]
    return gguf_bytes([f32_tensor(b"blk.%d.w" % no, np.full(4, no, "<f4"))], kvs)


def group_names():
    base = new_dir("names-")
    cases = []  # (label, MODEL, MOUNTPOINT or None, expected exit, substring)

    def fresh(name):
        d = os.path.join(base, name)
        os.makedirs(d)
        return d

    d = fresh("broken")
    write_file(os.path.join(d, "a\nb.safetensors"), b"junk junk junk")
    cases.append(("a broken file named with a newline", d, None, 3, d + ": 'a\\x0ab.safetensors': header:"))
    d = fresh("split")
    write_file(os.path.join(d, "m\x1b[31m-00001-of-00002.gguf"), split_part(0, 2))
    cases.append(("a split GGUF named with an ESC, a part missing", d, None, 2,
                  "'m\\x1b[31m-00002-of-00002.gguf': missing"))
    cases.append(("the same, its first part given", os.path.join(d, "m\x1b[31m-00001-of-00002.gguf"), None, 2,
                  "'m\\x1b[31m-00002-of-00002.gguf': missing"))
    d = fresh("none")
    write_file(os.path.join(d, "read\nme"), b"x")
    cases.append(("no model, an entry named with a newline", d, None, 2, "(it holds 1 entry: 'read\\x0ame')"))
    d = fresh("x\ny")
    write_file(os.path.join(d, "model.gguf"), b"not a model at all")
    cases.append(("MODEL's own path with a newline", d, None, 3,
                  "weightfs: '%s': model.gguf: header: not a GGUF" % d.replace("\n", "\\x0a")))
    mp_file = write_file(os.path.join(base, "mp\x1b]0;x\x07"), b"")
    good = fresh("good")
    write_file(os.path.join(good, "model.gguf"), gguf_bytes([f32_tensor(b"w", np.zeros(4, "<f4"))]))
    cases.append(("a mount point path with an ESC and a BEL", good, mp_file, 1,
                  "weightfs: '%s': mount point:" % mp_file.replace("\x1b", "\\x1b").replace("\x07", "\\x07")))

    def run_cases():
        errs = Errs()
        for label, model, mp, want_rc, substr in cases:
            mp = mp or new_dir("names-mp-")
            rc, _, err, _ = run_cli([model, mp], env=san_env())
            if rc == 0:
                unmount_daemon(mp)
            if rc != want_rc:
                errs.add("%s: exit %d, expected %d (%r)" % (label, rc, want_rc, err[:200]))
            one_terminal_line(err, errs, label, substr)
            if os.path.isdir(mp) and is_mounted(mp):
                errs.add("%s: left a mount" % label)
                force_unmount(mp)
            if san_lines(err):
                errs.add("%s: sanitizer output" % label)
        # the commands say it the same way
        rc, _, err, _ = run_cli(["ls", cases[0][1]], env=san_env())
        if rc != 3:
            errs.add("ls: exit %d, expected 3 (%r)" % (rc, err[:200]))
        one_terminal_line(err, errs, "ls", cases[0][4])
        errs.raise_if_any()
        return "%d refusals and ls" % len(cases)
    check("names: file names and paths with a newline or an ESC: exit code, one stderr line naming the "
          "file escaped, no mount", run_cases)

    def served():
        # a fine model whose folder entries hold a newline (in a folder
        # named with an ESC): mounted, its tensor and its sidecar read
        d = fresh("ser\x1bved")
        write_file(os.path.join(d, "mo\ndel.gguf"), gguf_bytes([f32_tensor(b"w", np.arange(4, dtype="<f4"))]))
        write_file(os.path.join(d, "note\n.txt"), b"hi")
        mp = new_dir("names-mp-")
        rc, _, err, _ = run_cli([d, mp], env=san_env())
        try:
            if rc != 0 or not is_mounted(mp):
                raise AssertionError("exit %d, stderr %r" % (rc, err[:300]))
            with open(os.path.join(mp, "w"), "rb") as f:
                got = np.frombuffer(f.read(), "<f4")
            if not np.array_equal(got, np.arange(4, dtype="<f4")):
                raise AssertionError("tensor w reads %r" % got)
            names = os.listdir(mp)
            side = [n for n in names if n.startswith("note")]
            if len(side) != 1:
                raise AssertionError("no sidecar note*.txt in %r" % names)
            with open(os.path.join(mp, side[0]), "rb") as f:
                if f.read() != b"hi":
                    raise AssertionError("sidecar %r reads wrong" % side[0])
            if err:
                raise AssertionError("stderr %r" % err[:300])
            # a second mount there is refused naming the first one's source
            # (its MODEL path, with the ESC) escaped
            errs = Errs()
            rc2, _, err2, _ = run_cli([d, mp], env=san_env())
            if rc2 != 1:
                errs.add("second mount: exit %d, expected 1 (%r)" % (rc2, err2[:200]))
            one_terminal_line(err2, errs, "second mount", "already a mount point (fuse.weightfs of '%s')"
                              % os.path.realpath(d).replace("\x1b", "\\x1b"))
            errs.raise_if_any()
        finally:
            unmount_daemon(mp)
        return "mounted"
    check("names: a fine model in entries named with a newline is mounted; a second mount there is refused in one "
          "line", served)

    def shown():
        # tensor names that are valid UTF-8 yet reorder or break a line on
        # screen (U+202E, U+2028, U+2066, U+061C, the C1 CSI U+009B) are
        # escaped where weightfs prints them, and never reach WEIGHTFS.txt
        controls = ["\u202e", "\u2028", "\u2066", "\u061c", "\u009b"]
        names = ["w%sexe.txt" % c for c in controls] + ["caf\u00e9", "pct\u2030"]
        d = fresh("shown")
        model = os.path.join(d, "m.gguf")
        write_file(model, gguf_bytes([f32_tensor(n.encode(), np.zeros(4, "<f4")) for n in names]))
        errs = Errs()
        rc, out, err, _ = run_cli(["ls", model], env=san_env())
        if rc != 0:
            raise AssertionError("ls: exit %d (%r)" % (rc, err[:200]))
        for c in controls:
            if c in out:
                errs.add("ls prints U+%04X as it is" % ord(c))
            esc = "".join("\\x%02X" % b for b in c.encode())
            if "w%sexe.txt" % esc not in out:
                errs.add("ls lacks %r: %r" % ("w%sexe.txt" % esc, out[:400]))
        for n in names[-2:]:  # printable: shown as they are
            if n not in out:
                errs.add("ls lacks %r" % n)
        mp = new_dir("names-mp-")
        rc, _, err, _ = run_cli([model, mp], env=san_env())
        try:
            if rc != 0 or not is_mounted(mp):
                raise AssertionError("mount: exit %d, stderr %r" % (rc, err[:300]))
            with open(os.path.join(mp, "WEIGHTFS.txt"), encoding="utf-8") as f:
                text = f.read()
            bad = sorted({"U+%04X" % ord(c) for c in text if ord(c) in (0x61C, 0x200E, 0x200F) or
                          0x80 <= ord(c) < 0xA0 or 0x2028 <= ord(c) <= 0x202E or 0x2066 <= ord(c) <= 0x2069})
            if bad:
                errs.add("WEIGHTFS.txt holds %s" % ", ".join(bad))
            if "w???exe.txt" not in text or "caf\u00e9" not in text:
                errs.add("WEIGHTFS.txt does not list the names as expected: %r" % text[:600])
        finally:
            unmount_daemon(mp)
        errs.raise_if_any()
        return "%d names" % len(names)
    check("names: bidirectional, line-separator and C1 controls in tensor names are escaped by ls and left out of "
          "WEIGHTFS.txt", shown)

    def options():
        # option values the user typed are escaped the same way
        model = os.path.join(fresh("opts"), "m.gguf")
        write_file(model, gguf_bytes([f32_tensor(b"w", np.zeros(4, "<f4"))]))
        errs = Errs()
        for label, argv, substr in (
                ("an unknown mount option", ["-o", "bogus\x1bopt", model, new_dir("names-mp-")],
                 "weightfs: '-o bogus\\x1bopt': unknown option"),
                ("a mount's -o dtype=", ["-o", "dtype=f\x1b[2J", model, new_dir("names-mp-")],
                 "-o dtype='f\\x1b[2J': unknown output type"),
                ("a mount's -o read_ahead_kb=", ["-o", "read_ahead_kb=1\n2", model, new_dir("names-mp-")],
                 "-o read_ahead_kb='1\\x0a2': not a number"),
                ("an unknown option of ls", ["ls", "--x\x1by", model], "weightfs ls: '--x\\x1by': unknown option"),
                ("ls -o dtype=", ["ls", "-o", "dtype=f\x07", model], "-o dtype='f\\x07': unknown output type")):
            rc, _, err, _ = run_cli(argv, env=san_env())
            if rc == 0:
                errs.add("%s: exit 0" % label)
                mp = argv[-1]
                unmount_daemon(mp)
            one_terminal_line(err, errs, label, substr)
        errs.raise_if_any()
        return "5 command lines"
    check("names: option values with an ESC or a newline are refused in one line, escaped", options)
