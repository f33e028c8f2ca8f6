"""python3 -m weightfs ARGS... - runs the weightfs program with ARGS.

Every command (ls, info, cat, stats, diff, convert) and the mount itself:
`python3 -m weightfs MODEL DIR` mounts as `weightfs MODEL DIR` does.  The
program is the one `pip install .` put in the package (weightfs/bin/),
else build/weightfs of the source tree this module sits in, else
`weightfs` on the PATH (make install, the Debian package).  It replaces
this process (exec), so its exit status and signals are the program's own.
"""
import os
import shutil
import sys


def program():
    """The path of the weightfs program this module runs, or None."""
    here = os.path.dirname(os.path.abspath(__file__))
    tree = os.path.join(os.path.dirname(os.path.dirname(here)), "build", "weightfs")
    for p in (os.path.join(here, "bin", "weightfs"), tree):
        if os.path.isfile(p) and os.access(p, os.X_OK):
            return p
    return shutil.which("weightfs")


def main():
    exe = program()
    if exe is None:
        sys.exit("weightfs: the weightfs program is not in this package, the source tree "
                 "or the PATH (pip install . from the source tree ships it)")
    os.execv(exe, ["weightfs"] + sys.argv[1:])


if __name__ == "__main__":
    main()
