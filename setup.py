"""setup.py - the build step of `pip install .` (pyproject.toml).

The module itself is pure Python over ctypes; what pip has to build is the
C library it loads and the weightfs program `python3 -m weightfs` runs.
Both come from the project's own Makefile, run into a build folder of their
own (build/pip/make: the developer's build/ is left alone), and are copied
into the package as weightfs/libweightfs.so.0 and weightfs/bin/weightfs,
where weightfs/__init__.py and weightfs/__main__.py look first.  The wheel
is therefore specific to the platform (linux_x86_64, ...), not to a Python
version: the module has no compiled Python extension.

Needs what `make` needs (docs/install.md, "What is needed").  MAKE names another make;
WEIGHTFS_MAKE_JOBS the parallel jobs (default: the number of cores).
"""
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # no wheel package: pip then says what is missing
    bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
MAKE_B = os.path.join("build", "pip", "make")


def version():
    """The library's version, LIBVER in the Makefile: one place for both."""
    with open(os.path.join(HERE, "Makefile")) as f:
        m = re.search(r"^LIBVER\s*:?=\s*(\S+)", f.read(), re.M)
    if not m:
        sys.exit("setup.py: no LIBVER in the Makefile")
    return m.group(1)


class BuildWithMake(build_py):
    """build_py, then the C library and the program from the Makefile."""

    def run(self):
        super().run()
        make = os.environ.get("MAKE", "make")
        jobs = os.environ.get("WEIGHTFS_MAKE_JOBS") or str(os.cpu_count() or 1)
        env = dict(os.environ)
        # a pip run from inside make must not inherit that make's flags
        for k in ("MAKEFLAGS", "MFLAGS", "MAKELEVEL"):
            env.pop(k, None)
        cmd = [make, "-C", HERE, "-j" + jobs, "B=" + MAKE_B, "SANITIZE=0", "DEBUG=0",
               MAKE_B + "/weightfs", MAKE_B + "/libweightfs.so.0"]
        self.announce("running " + " ".join(cmd), level=2)
        subprocess.check_call(cmd, env=env)
        pkg = os.path.join(self.build_lib, "weightfs")
        os.makedirs(os.path.join(pkg, "bin"), exist_ok=True)
        for src, dst, mode in ((MAKE_B + "/libweightfs.so.0", "libweightfs.so.0", 0o644),
                               (MAKE_B + "/weightfs", "bin/weightfs", 0o755)):
            out = os.path.join(pkg, dst)
            shutil.copyfile(os.path.join(HERE, src), out)
            os.chmod(out, mode)

    def get_outputs(self, include_bytecode=1):
        pkg = os.path.join(self.build_lib, "weightfs")
        return super().get_outputs(include_bytecode) + [
            os.path.join(pkg, "libweightfs.so.0"), os.path.join(pkg, "bin", "weightfs")]


class BinaryDistribution(Distribution):
    """Not a pure-Python package: installed to platlib, wheel tagged by platform."""

    def has_ext_modules(self):
        return True


cmdclass = {"build_py": BuildWithMake}
if bdist_wheel is not None:
    class PlatformWheel(bdist_wheel):
        """py3-none-PLATFORM: ctypes, so any Python 3 on this platform."""

        def get_tag(self):
            _, _, plat = super().get_tag()
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = PlatformWheel

# setuptools' own build folders and the egg-info go under build/pip too, not
# into the tree's top or python/
os.makedirs(os.path.join(HERE, "build", "pip"), exist_ok=True)
setup(version=version(), cmdclass=cmdclass, distclass=BinaryDistribution,
      options={"build": {"build_base": "build/pip"}, "egg_info": {"egg_base": "build/pip"}})
