"""weightfs - model weights (GGUF, safetensors) as numpy arrays.

    import weightfs
    m = weightfs.open("model.gguf")      # or a folder, an index, a split part
    m.keys(); m.metadata; m.info("blk.0.attn_q.weight")
    a = m["blk.0.attn_q.weight"]         # float32 array with the tensor's shape
    b = m.get("blk.0.attn_q.weight", dtype="f16", rows=slice(0, 128))

Pure Python over ctypes and libweightfs.so.0 (weightfs.h); numpy only.
A read decodes only the blocks it needs, in parallel on every core for
large ranges, straight into the returned array's memory (ctypes releases
the GIL during the call).

Output dtypes: "f32" (default), "f16", "bf16", "stored".  bfloat16 comes
back as uint16 arrays of its bits (numpy has no bfloat16); "stored" gives
float and integer tensors as their own dtype and tensors packed in blocks
(Q4_K, ...) as uint8 with shape [..., bytes per row]; float8 types stored
come back as uint8.  Integer and bool tensors are themselves under every
dtype.

Errors are WeightfsError (an OSError for a model that cannot be opened or
that changed) carrying the library's one-line message; an unknown tensor
name raises KeyError.

The library is found at $WEIGHTFS_LIB, else in the build/ directory of the
source tree this module sits in, else by the dynamic loader
(libweightfs.so.0).  Opening a model installs a SIGBUS handler in the
process (see weightfs.h): a model file that shrinks under a read makes that
read fail instead of killing the process.

MIT licence.
"""
import ctypes
import ctypes.util
import json
import os

import numpy as np

__all__ = ["open", "Model", "WeightfsError", "DTYPES"]

MAX_DIMS = 32
DTYPES = {"f32": 0, "float32": 0, "f16": 1, "float16": 1, "bf16": 2, "bfloat16": 2, "stored": 3}
_DEFAULT = -1
_ERRLEN = 512

# error codes (weightfs.h enum weightfs_status)
_ENOMEM, _EIO, _EFORMAT, _EUNSUP, _ERANGE, _ECHANGED, _EINVAL = range(1, 8)


class WeightfsError(OSError):
    """A failure of the weightfs library; .code is its WEIGHTFS_E* code and
    str() its one-line message."""

    def __init__(self, code, message):
        super().__init__(message)
        self.code = code
        self.message = message

    def __str__(self):
        return self.message


class _Info(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_void_p),
        ("name_len", ctypes.c_size_t),
        ("type", ctypes.c_char_p),
        ("dtype", ctypes.c_char_p),
        ("elem_size", ctypes.c_uint32),
        ("ndim", ctypes.c_uint32),
        ("shape", ctypes.c_uint64 * MAX_DIMS),
        ("nelems", ctypes.c_uint64),
        ("size", ctypes.c_uint64),
        ("file", ctypes.c_char_p),
        ("offset", ctypes.c_uint64),
        ("nbytes", ctypes.c_uint64),
        ("readable", ctypes.c_int),
    ]


class _Stats(ctypes.Structure):
    _fields_ = [(k, ctypes.c_uint64) for k in ("count", "finite")] + \
        [(k, ctypes.c_double) for k in ("min", "max", "mean", "std", "absmax")] + \
        [(k, ctypes.c_uint64) for k in ("zeros", "nan", "inf")]


def _candidates():
    env = os.environ.get("WEIGHTFS_LIB")
    if env:
        yield env
        return
    # a source tree: python/weightfs/__init__.py beside build/
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    for sub in ("build", os.path.join("build", "san")):
        p = os.path.join(root, sub, "libweightfs.so.0")
        if os.path.exists(p):
            yield p
    yield "libweightfs.so.0"
    found = ctypes.util.find_library("weightfs")
    if found:
        yield found


def _load():
    errors = []
    for cand in _candidates():
        try:
            lib = ctypes.CDLL(cand)
            break
        except OSError as e:
            errors.append(str(e))
    else:
        raise ImportError("weightfs: cannot load libweightfs.so.0 (set WEIGHTFS_LIB): " + "; ".join(errors))
    P, S, U64 = ctypes.c_void_p, ctypes.c_size_t, ctypes.c_uint64
    ERR = ctypes.c_char_p
    lib.weightfs_open.argtypes = [ctypes.c_char_p, ctypes.c_int, ctypes.POINTER(P), ERR, S]
    lib.weightfs_open.restype = ctypes.c_int
    lib.weightfs_close.argtypes = [P]
    lib.weightfs_close.restype = None
    lib.weightfs_n_tensors.argtypes = [P]
    lib.weightfs_n_tensors.restype = S
    lib.weightfs_find.argtypes = [P, ctypes.c_char_p, S]
    lib.weightfs_find.restype = ctypes.c_int64
    lib.weightfs_tensor_info.argtypes = [P, S, ctypes.c_int, ctypes.POINTER(_Info), ERR, S]
    lib.weightfs_tensor_info.restype = ctypes.c_int
    lib.weightfs_read.argtypes = [P, S, ctypes.c_int, U64, S, P, ctypes.POINTER(S), ERR, S]
    lib.weightfs_read.restype = ctypes.c_int
    lib.weightfs_read_parallel.argtypes = [P, S, ctypes.c_int, U64, S, P, ctypes.POINTER(S),
                                           ctypes.c_uint, ERR, S]
    lib.weightfs_read_parallel.restype = ctypes.c_int
    lib.weightfs_stats.argtypes = [P, S, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_Stats), ERR, S]
    lib.weightfs_stats.restype = ctypes.c_int
    lib.weightfs_metadata_json.argtypes = [P, ctypes.POINTER(S)]
    lib.weightfs_metadata_json.restype = ctypes.c_void_p
    lib.weightfs_version.argtypes = []
    lib.weightfs_version.restype = ctypes.c_char_p
    return lib


_lib = _load()
__version__ = _lib.weightfs_version().decode()


def _raise(code, buf):
    raise WeightfsError(code, buf.value.decode("utf-8", "replace"))


def _dtype_code(dtype):
    if dtype is None:
        return _DEFAULT
    try:
        return DTYPES[dtype]
    except (KeyError, TypeError):
        raise ValueError("weightfs: unknown dtype %r (f32, f16, bf16 or stored)" % (dtype,)) from None


def _np_dtype(name, elem_size):
    if name == "bfloat16":
        return np.dtype(np.uint16)
    if name.startswith("float8"):
        return np.dtype(np.uint8)
    try:
        return np.dtype(name)
    except TypeError:
        return np.dtype("u%d" % elem_size)


def _encode(name):
    return name if isinstance(name, bytes) else name.encode("utf-8", "surrogateescape")


class Model:
    """An open model.  Use weightfs.open(); close() (or a with block)
    unmaps it.  A Model may be read from several threads at once."""

    def __init__(self, path, dtype="f32"):
        code = _dtype_code(dtype)
        if code == _DEFAULT:
            code = 0
        self._h = None
        err = ctypes.create_string_buffer(_ERRLEN)
        h = ctypes.c_void_p()
        rc = _lib.weightfs_open(os.fsencode(path), code, ctypes.byref(h), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        self._h = h
        self.path = os.fspath(path)
        self.dtype = dtype
        self._names = None
        self._metadata = None

    # -- lifetime --
    def close(self):
        if self._h is not None:
            _lib.weightfs_close(self._h)
            self._h = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()

    def _handle(self):
        if self._h is None:
            raise ValueError("weightfs: model is closed")
        return self._h

    # -- listing --
    def _info(self, i, code):
        info = _Info()
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = _lib.weightfs_tensor_info(self._handle(), i, code, ctypes.byref(info), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        return info

    def keys(self):
        """Tensor names in the order the model's files list them."""
        if self._names is None:
            h = self._handle()
            names = []
            info = _Info()
            for i in range(_lib.weightfs_n_tensors(h)):
                # dtype f32 always has a view: info cannot fail on a good index
                _lib.weightfs_tensor_info(h, i, 0, ctypes.byref(info), None, 0)
                raw = ctypes.string_at(info.name, info.name_len)
                names.append(raw.decode("utf-8", "surrogateescape"))
            self._names = names
        return list(self._names)

    def __iter__(self):
        return iter(self.keys())

    def __len__(self):
        return _lib.weightfs_n_tensors(self._handle())

    def _index(self, name):
        raw = _encode(name)
        i = _lib.weightfs_find(self._handle(), raw, len(raw))
        if i < 0:
            raise KeyError(name)
        return i

    def __contains__(self, name):
        try:
            self._index(name)
            return True
        except KeyError:
            return False

    @property
    def metadata(self):
        """The model's metadata (GGUF key/values or safetensors __metadata__) as a dict."""
        if self._metadata is None:
            n = ctypes.c_size_t()
            p = _lib.weightfs_metadata_json(self._handle(), ctypes.byref(n))
            self._metadata = json.loads(ctypes.string_at(p, n.value).decode("utf-8", "surrogateescape"))
        return self._metadata

    def info(self, name, dtype=None):
        """A dict describing tensor `name` as it reads in dtype: name, type
        (stored, e.g. "Q4_K"), dtype (numpy name), shape, size (bytes),
        file, offset, nbytes (stored bytes), readable."""
        inf = self._info(self._index(name), _dtype_code(dtype if dtype is not None else self.dtype))
        return {
            "name": name,
            "type": inf.type.decode(),
            "dtype": inf.dtype.decode(),
            "shape": tuple(inf.shape[d] for d in range(inf.ndim)),
            "size": inf.size,
            "file": inf.file.decode("utf-8", "surrogateescape"),
            "offset": inf.offset,
            "nbytes": inf.nbytes,
            "readable": bool(inf.readable),
        }

    # -- reading --
    def __getitem__(self, name):
        return self.get(name)

    def get(self, name, dtype=None, rows=None, threads=0):
        """Tensor `name` as a new numpy array in dtype (default: the one
        given to open).  rows=slice(a, b) reads only rows a..b-1 of the
        outermost dim (step 1; negative and open ends as in numpy).
        threads=0 decodes on every core, 1 on the calling thread only."""
        i = self._index(name)
        code = _dtype_code(dtype if dtype is not None else self.dtype)
        inf = self._info(i, code)
        shape = tuple(inf.shape[d] for d in range(inf.ndim))
        off, size = 0, inf.size
        if rows is not None:
            if not isinstance(rows, slice):
                raise TypeError("weightfs: rows must be a slice")
            if not shape:
                raise ValueError("weightfs: %s is a scalar: it has no rows" % name)
            start, stop, step = rows.indices(shape[0])
            if step != 1:
                raise ValueError("weightfs: rows must be a contiguous slice (step 1)")
            stop = max(start, stop)
            row_bytes = inf.size // shape[0] if shape[0] else 0
            shape = (stop - start,) + shape[1:]
            off, size = start * row_bytes, (stop - start) * row_bytes
        a = np.empty(shape, dtype=_np_dtype(inf.dtype.decode(), inf.elem_size))
        if a.nbytes != size:
            raise WeightfsError(_ERANGE, "weightfs: %s: %d bytes do not make an array of %s %s"
                                % (name, size, shape, a.dtype))
        if size == 0:
            return a
        got = ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = _lib.weightfs_read_parallel(self._handle(), i, code, off, size, a.ctypes.data,
                                         ctypes.byref(got), threads, err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        if got.value != size:
            raise WeightfsError(_ERANGE, "weightfs: %s: read %d of %d bytes" % (name, got.value, size))
        return a

    def read_into(self, name, buf, offset=0, dtype=None, threads=0):
        """Reads bytes [offset, offset+len(buf)) of tensor `name` in dtype
        into the writable buffer buf (a numpy array, bytearray, ...);
        returns the number of bytes read (less at the end of the tensor)."""
        i = self._index(name)
        code = _dtype_code(dtype if dtype is not None else self.dtype)
        mv = memoryview(buf).cast("B")
        if mv.readonly:
            raise TypeError("weightfs: read_into needs a writable buffer")
        n = len(mv)
        if n == 0:
            return 0
        c = (ctypes.c_char * n).from_buffer(mv)
        got = ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = _lib.weightfs_read_parallel(self._handle(), i, code, offset, n, ctypes.addressof(c),
                                         ctypes.byref(got), threads, err, _ERRLEN)
        del c
        if rc != 0:
            _raise(rc, err)
        return got.value

    def stats(self, name, dtype=None, threads=0):
        """Statistics of tensor `name`'s values as read in dtype: a dict of
        count (elements), min, max, mean, std (population), absmax (these
        five over the finite values, nan when there is none), zeros, nan and
        inf (counts), plus name, type and shape.  Computed in the library in
        bounded chunks on `threads` threads (0: every core), summed in
        double; nothing of the tensor is held in Python."""
        i = self._index(name)
        code = _dtype_code(dtype if dtype is not None else self.dtype)
        inf = self._info(i, code)
        st = _Stats()
        err = ctypes.create_string_buffer(_ERRLEN)
        rc = _lib.weightfs_stats(self._handle(), i, code, threads, ctypes.byref(st), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        out = {"name": name, "type": inf.type.decode(), "shape": tuple(inf.shape[d] for d in range(inf.ndim))}
        for k, _ in _Stats._fields_:
            if k != "finite":
                out[k] = getattr(st, k)
        return out

    def __repr__(self):
        return "<weightfs.Model %r, %d tensors>" % (self.path, len(self) if self._h is not None else 0)


def open(path, dtype="f32"):  # noqa: A001 - the module's verb, like gzip.open
    """Opens the model at path (a GGUF or safetensors file, a split GGUF
    part, a safetensors index or shard, or a model folder); dtype is the
    default output dtype of its reads."""
    return Model(path, dtype)
