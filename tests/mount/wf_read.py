"""Reading a mounted tensor and checking its bytes: random O_DIRECT and cached
preads, chunked read loops and mmap (verify_bytes), expected EIO, and the
"changed since it was mounted" messages of a model changed under the mount.
"""

import errno
import hashlib
import mmap
import os


# ---------------------------------------------------------------- reading helpers

def ranges_for(size, row, rng, n=20, block=0):
    """~n (offset, length) pairs: unaligned, across rows, past EOF, at EOF."""
    r = [(0, size), (0, 1), (size, 1), (size, 4096), (size + 1, 10), (size + 12345, 7),
         (max(size - 1, 0), 100), (max(size - 3, 0), 3)]
    if row and size > row:
        r.append((row - 3, 7))                 # across a row boundary
        r.append((row + 1, row))               # a row, shifted by one byte
    if block and size > block:
        r.append((block - 5, 10))              # across a block boundary
        r.append((block + 2, 3 * block + 1))
    while len(r) < n:
        off = rng.randrange(0, size + 64) if size else rng.randrange(0, 64)
        ln = rng.choice([1, 2, 3, 5, 7, 13, 63, 129, 4095, 4097,
                         rng.randrange(1, size + 200)])
        r.append((off, ln))
    return r


def o_direct_fd(path):
    try:
        return os.open(path, os.O_RDONLY | os.O_DIRECT)
    except OSError:
        return None


def verify_bytes(path, exp, rng, errs, label, row=0, block=0):
    """Reads path every way we know and compares with exp (bytes)."""
    st = os.stat(path)
    size = len(exp)
    if st.st_size != size:
        errs.add("%s: st_size %d, expected %d" % (label, st.st_size, size))
        return False
    bad0 = len(errs)
    rs = ranges_for(size, row, rng, 20, block)
    # 1. O_DIRECT: every pread reaches the daemon with its exact offset and length
    fd = o_direct_fd(path)
    if fd is None:
        errs.add("%s: O_DIRECT open failed" % label)
    else:
        try:
            for off, ln in rs:
                got = os.pread(fd, ln, off)
                if got != exp[off:off + ln]:
                    errs.add("%s: O_DIRECT pread(off=%d, len=%d) gave %d bytes, %s"
                             % (label, off, ln, len(got),
                                "differ" if len(got) == len(exp[off:off + ln]) else
                                "expected %d" % len(exp[off:off + ln])))
                    break
        finally:
            os.close(fd)
    # 2. whole file through the page cache
    with open(path, "rb") as f:
        data = f.read()
    if data != exp:
        errs.add("%s: whole read: %d bytes, sha256 %s, expected %d bytes sha256 %s"
                 % (label, len(data), hashlib.sha256(data).hexdigest()[:16], size,
                    hashlib.sha256(exp).hexdigest()[:16]))
    # 3. cached preads (different random ranges)
    fd = os.open(path, os.O_RDONLY)
    try:
        for off, ln in ranges_for(size, row, rng, 12, block):
            if os.pread(fd, ln, off) != exp[off:off + ln]:
                errs.add("%s: pread(off=%d, len=%d) wrong" % (label, off, ln))
                break
        if os.lseek(fd, 0, os.SEEK_END) != size:
            errs.add("%s: lseek(SEEK_END) != size" % label)
    finally:
        os.close(fd)
    # 4. sequential reads of various chunk sizes, unbuffered and buffered
    for chunk in (1, 3, 7, 511, 4097, 65536):
        if size // chunk > 3000:
            continue
        with open(path, "rb", buffering=0) as f:
            parts = []
            while True:
                b = f.read(chunk)
                if not b:
                    break
                parts.append(b)
        if b"".join(parts) != exp:
            errs.add("%s: unbuffered read(%d) loop wrong" % (label, chunk))
    with open(path, "rb", buffering=rng.choice([1024, 8192, 100000])) as f:
        parts = []
        while True:
            b = f.read(rng.randrange(1, 5000))
            if not b:
                break
            parts.append(b)
        if b"".join(parts) != exp:
            errs.add("%s: buffered random-size read loop wrong" % label)
        f.seek(max(size - 5, 0))
        if f.read(100) != exp[max(size - 5, 0):]:
            errs.add("%s: seek+read at end wrong" % label)
    # 5. mmap
    if size:
        with open(path, "rb") as f:
            with mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                if mm[:] != exp:
                    errs.add("%s: mmap contents wrong" % label)
    return len(errs) == bad0


def expect_eio(path, errs, label, size):
    """Every read of path must fail with EIO (type without a decoder)."""
    for flags in (os.O_RDONLY, os.O_RDONLY | os.O_DIRECT):
        fd = os.open(path, flags)
        try:
            for off, ln in ((0, size), (0, 1), (5, 3), (max(size - 1, 0), 10)):
                try:
                    got = os.pread(fd, ln, off)
                    errs.add("%s: pread(%d,%d) returned %d bytes instead of EIO"
                             % (label, off, ln, len(got)))
                    return False
                except OSError as e:
                    if e.errno != errno.EIO:
                        errs.add("%s: pread failed with %s, expected EIO"
                                 % (label, errno.errorcode.get(e.errno, e.errno)))
                        return False
        finally:
            os.close(fd)
    return True


# ---------------------------------------------------------------- changed models

CHANGED_MSG = "since it was mounted"


def o_direct_read(fd, ln, off):
    """pread that returns the bytes, or the errno it failed with."""
    try:
        return os.pread(fd, ln, off)
    except OSError as ex:
        return ex.errno


def changed_lines(m):
    return [ln for ln in m.stderr().splitlines() if CHANGED_MSG in ln]
