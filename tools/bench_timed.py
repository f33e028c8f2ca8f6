"""bench_timed.py - what the in-process benchmark scripts share.

Importing it puts this checkout's python/ first on sys.path, so
`import weightfs` afterwards loads the module of the tree being measured
(with the libweightfs it finds through WEIGHTFS_LIB or beside it).
"""
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))


def timed(fn):
    """GB/s of the array fn() returns: its bytes over the time fn took."""
    t0 = time.perf_counter()
    a = fn()
    dt = time.perf_counter() - t0
    n = a.nbytes
    del a
    return n / dt / 1e9
