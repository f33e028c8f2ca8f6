#!/usr/bin/python3
"""tools/pydir.py PREFIX - the folder under PREFIX where the Python that
runs this script looks for modules: `make install` puts the weightfs module
there.

Asks the interpreter itself (sysconfig), so that every distribution's
layout is right: Debian's python3 searches /usr/local/lib/python3.X/
dist-packages (scheme posix_local) and /usr/lib/python3/dist-packages
(deb_system), others PREFIX/lib/python3.X/site-packages (posix_prefix).
Of the module folders its schemes name for PREFIX, the first one on
sys.path wins.  A PREFIX the interpreter does not search (/opt/x) gets
posix_prefix's folder and a note on stderr that PYTHONPATH must name it.
"""
import os
import sys
import sysconfig


def candidates(prefix):
    for scheme in sysconfig.get_scheme_names():
        if scheme.startswith(("nt", "osx")) or scheme.endswith("_user"):
            continue
        for vars_ in (None, {"base": prefix, "platbase": prefix, "installed_base": prefix}):
            try:
                yield os.path.normpath(sysconfig.get_path("purelib", scheme, vars=vars_))
            except KeyError:
                pass


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: pydir.py PREFIX")
    prefix = os.path.normpath(os.path.abspath(sys.argv[1]))
    # PREFIX/lib/..., so that /usr does not take /usr/local/lib/... for its own
    libs = tuple(os.path.join(prefix, d) + os.sep for d in ("lib", "lib64"))
    cands = {c for c in candidates(prefix) if c.startswith(libs)}
    for p in sys.path:
        if p and os.path.normpath(p) in cands:
            print(os.path.normpath(p))
            return
    p = os.path.normpath(sysconfig.get_path("purelib", "posix_prefix",
                                            vars={"base": prefix, "platbase": prefix}))
    print("pydir.py: %s does not search %s: add it to PYTHONPATH" % (sys.executable, p), file=sys.stderr)
    print(p)


if __name__ == "__main__":
    main()
