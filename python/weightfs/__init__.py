"""weightfs - model weights (GGUF, safetensors) as numpy arrays.

    import weightfs
    m = weightfs.open("model.gguf")      # or a folder, an index, a split part
    m.keys(); m.metadata; m.info("blk.0.attn_q.weight")
    a = m["blk.0.attn_q.weight"]         # float32 array with the tensor's shape
    b = m.get("blk.0.attn_q.weight", dtype="f16", rows=slice(0, 128))
    e = m.stack(["blk.0.ffn_up.weight", "blk.1.ffn_up.weight"])   # [2, *shape]

    with weightfs.safe_open("model.gguf", framework="pt") as f:   # as safetensors'
        t = f.get_tensor("blk.0.attn_q.weight")                  # a torch tensor
        r = f.get_slice("token_embd.weight")[0:16, 0:8]          # reads 16 rows

See docs/python.md.

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

The library is found at $WEIGHTFS_LIB, else beside this file (where
`pip install .` puts it), else in the build/ directory of the source tree
this module sits in, else by the dynamic loader (libweightfs.so.0).
Opening a model installs a SIGBUS handler in the process (see weightfs.h):
a model file that shrinks under a read makes that read fail instead of
killing the process.

MIT licence.
"""
from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import json
import operator
import os
import threading
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

__all__ = ["open", "safe_open", "quantize", "dequantize", "Model", "SafeOpen", "Slice", "WeightfsError",
           "DTYPES"]

# what a dtype= argument may be: a DTYPES name, or None for the default
DType = Optional[str]
PathLike = Union[str, bytes, "os.PathLike[str]", "os.PathLike[bytes]"]

MAX_DIMS = 32
DTYPES = {"f32": 0, "float32": 0, "f16": 1, "float16": 1, "bf16": 2, "bfloat16": 2, "stored": 3}
_DEFAULT = -1
_ERRLEN = 512

# error codes (weightfs.h enum weightfs_status)
_ENOMEM, _EIO, _EFORMAT, _EUNSUP, _ERANGE, _ECHANGED, _EINVAL = range(1, 8)
_HF_SAFETENSORS = 0  # weightfs.h WEIGHTFS_HF_SAFETENSORS, Model.HF_FILES[0]


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
    here = os.path.dirname(os.path.abspath(__file__))
    # pip install . puts the library inside the package
    own = os.path.join(here, "libweightfs.so.0")
    if os.path.exists(own):
        yield own
    # a source tree: python/weightfs/__init__.py beside build/
    root = os.path.dirname(os.path.dirname(here))
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
    lib.weightfs_read_stack.argtypes = [P, ctypes.POINTER(S), S, ctypes.c_int, P, S, ctypes.c_uint, ERR, S]
    lib.weightfs_read_stack.restype = ctypes.c_int
    lib.weightfs_stats.argtypes = [P, S, ctypes.c_int, ctypes.c_uint, ctypes.POINTER(_Stats), ERR, S]
    lib.weightfs_stats.restype = ctypes.c_int
    lib.weightfs_metadata_json.argtypes = [P, ctypes.POINTER(S)]
    lib.weightfs_metadata_json.restype = ctypes.c_void_p
    lib.weightfs_hf_size.argtypes = [P, ctypes.c_int, ctypes.c_int, ctypes.POINTER(U64), ERR, S]
    lib.weightfs_hf_size.restype = ctypes.c_int
    lib.weightfs_hf_read.argtypes = [P, ctypes.c_int, U64, S, P, ctypes.POINTER(S), ERR, S]
    lib.weightfs_hf_read.restype = ctypes.c_int
    lib.weightfs_hf_read_parallel.argtypes = [P, ctypes.c_int, U64, S, P, ctypes.POINTER(S), ctypes.c_uint, ERR, S]
    lib.weightfs_hf_read_parallel.restype = ctypes.c_int
    lib.weightfs_version.argtypes = []
    lib.weightfs_version.restype = ctypes.c_char_p
    lib.weightfs_type_parse.argtypes = [ctypes.c_char_p]
    lib.weightfs_type_parse.restype = ctypes.c_int
    I = ctypes.POINTER(ctypes.c_int)
    U32 = ctypes.POINTER(ctypes.c_uint32)
    lib.weightfs_type_info.argtypes = [ctypes.c_int, U32, U32, I, I]
    lib.weightfs_type_info.restype = ctypes.c_int
    lib.weightfs_quantize.argtypes = [ctypes.c_int, P, S, S, P, S, ctypes.POINTER(S), ERR, S]
    lib.weightfs_quantize.restype = ctypes.c_int
    lib.weightfs_dequantize.argtypes = [ctypes.c_int, P, S, P, S, ERR, S]
    lib.weightfs_dequantize.restype = ctypes.c_int
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
    if isinstance(name, bytes):
        return name
    if isinstance(name, str):
        return name.encode("utf-8", "surrogateescape")
    raise TypeError("weightfs: a tensor name is str or bytes, not %s" % type(name).__name__)


_U64_MAX = (1 << 64) - 1


def _offset(offset):
    """A byte offset as the library takes it: an int in [0, 2**64)."""
    try:
        offset = operator.index(offset)
    except TypeError:
        raise TypeError("weightfs: offset must be an int, not %s" % type(offset).__name__) from None
    if offset < 0:
        raise ValueError("weightfs: offset %d is negative" % offset)
    if offset > _U64_MAX:
        raise OverflowError("weightfs: offset %d does not fit in 64 bits" % offset)
    return offset


def _length(length):
    """A byte count: an int in [0, 2**64)."""
    try:
        length = operator.index(length)
    except TypeError:
        raise TypeError("weightfs: length must be an int or None, not %s" % type(length).__name__) from None
    if length < 0:
        raise ValueError("weightfs: length %d is negative" % length)
    if length > _U64_MAX:
        raise OverflowError("weightfs: length %d does not fit in 64 bits" % length)
    return length


def _threads(threads):
    try:
        threads = operator.index(threads)
    except TypeError:
        raise TypeError("weightfs: threads must be an int, not %s" % type(threads).__name__) from None
    if threads < 0 or threads > 0xFFFFFFFF:
        raise ValueError("weightfs: threads %d is not in [0, 2**32)" % threads)
    return threads


def _path(path):
    raw = os.fsencode(path)
    if b"\0" in raw:
        raise ValueError("weightfs: the path holds a NUL byte: %r" % (path,))
    return raw


class Model:
    """An open model.  Use weightfs.open(); close() (or a with block)
    unmaps it.  A Model may be read from several threads at once, and
    closed from any thread: reads in flight finish first, later calls raise
    ValueError("weightfs: model is closed")."""

    # class defaults: __del__ of a Model whose __init__ failed finds them
    _h = None
    _cv = None

    def __init__(self, path: PathLike, dtype: str = "f32") -> None:
        code = _dtype_code(dtype)
        if code == _DEFAULT:
            code = 0
        raw = _path(path)
        err = ctypes.create_string_buffer(_ERRLEN)
        h = ctypes.c_void_p()
        rc = _lib.weightfs_open(raw, code, ctypes.byref(h), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        self._cv = threading.Condition(threading.Lock())
        self._busy = 0      # library calls in flight on the handle
        self._h = h
        self.path = os.fspath(path)
        self.dtype = dtype
        self._names = None
        self._metadata = None
        # hf/: the library remakes the view when the dtype changes, which frees the one
        # a read in flight uses; calls in one dtype run together, another waits
        self._hf_cv = threading.Condition(threading.Lock())
        self._hf_code = None  # the dtype of the calls in flight
        self._hf_calls = 0

    # -- lifetime --
    def close(self) -> None:
        """Unmaps the model once the calls in flight (other threads') are
        done; safe to call again, from any thread."""
        cv = self._cv
        if cv is None:
            return
        with cv:
            h, self._h = self._h, None
            while self._busy:
                cv.wait()
        if h is not None:
            _lib.weightfs_close(h)

    def __enter__(self) -> "Model":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __del__(self):
        if self._h is not None:
            self.close()

    @contextlib.contextmanager
    def _handle(self):
        """The library handle, held open for the with block."""
        cv = self._cv
        if cv is None:
            raise ValueError("weightfs: model is closed")
        with cv:
            if self._h is None:
                raise ValueError("weightfs: model is closed")
            self._busy += 1
            h = self._h
        try:
            yield h
        finally:
            with cv:
                self._busy -= 1
                if not self._busy:
                    cv.notify_all()

    @contextlib.contextmanager
    def _hf_handle(self, code: int):
        """The library handle for hf/ calls in dtype code: held with other calls in the
        same dtype, never while one in another dtype is in flight (weightfs_hf_size)."""
        cv = self._hf_cv
        with cv:
            while self._hf_calls and self._hf_code != code:
                cv.wait()
            self._hf_code = code
            self._hf_calls += 1
        try:
            with self._handle() as h:
                yield h
        finally:
            with cv:
                self._hf_calls -= 1
                if not self._hf_calls:
                    cv.notify_all()

    # -- the hf/ view of a GGUF model --
    HF_FILES = ("model.safetensors", "config.json", "generation_config.json", "tokenizer.json",
                "tokenizer_config.json", "special_tokens_map.json", "tokenizer.model")

    def _hf_file(self, name: str, dtype: str) -> Tuple[int, int]:
        """(file index, DTYPES code) of hf/ file `name` read in dtype."""
        if name not in self.HF_FILES:
            raise ValueError("weightfs: hf/ has no file %r (%s)" % (name, ", ".join(self.HF_FILES)))
        if dtype not in ("f32", "f16", "bf16"):
            raise ValueError("weightfs: hf/ dtype %r: f32, f16 or bf16" % (dtype,))
        return self.HF_FILES.index(name), DTYPES[dtype]

    def hf_size(self, name: str, dtype: str = "f32") -> int:
        """Bytes of file `name` of the model's hf/ view (a GGUF model as the Hugging
        Face folder transformers builds from it: docs/hf.md), model.safetensors'
        tensors in dtype ("f32", "f16", "bf16").  WeightfsError when there is none."""
        file, code = self._hf_file(name, dtype)
        size = ctypes.c_uint64()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._hf_handle(code) as h:
            rc = _lib.weightfs_hf_size(h, code, file, ctypes.byref(size), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        return size.value

    def _hf_into(self, file: int, code: int, offset: int, n: int, addr: int, threads: int) -> int:
        """Reads n bytes at offset of hf/ file `file` (index) in dtype code to address addr
        on `threads` threads: the view made (or kept) and read under one hold of the
        handle, one library call each, so a caller reading many tensors pays no more per
        call than get() does.  Returns the bytes read."""
        size = ctypes.c_uint64()
        got = ctypes.c_size_t()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._hf_handle(code) as h:
            rc = _lib.weightfs_hf_size(h, code, file, ctypes.byref(size), err, _ERRLEN)
            if rc == 0:
                rc = _lib.weightfs_hf_read_parallel(h, file, offset, n, addr, ctypes.byref(got), threads, err,
                                                    _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        return got.value

    def hf_read(self, name: str, offset: int = 0, length: Optional[int] = None, dtype: str = "f32",
                out: Optional[Any] = None, threads: int = 0) -> Any:
        """Bytes [offset, offset + length) of hf/ file `name` (all of it from offset when
        length is None), or into the writable buffer out (returned).  threads=0 decodes
        on every core (each a share of whole MiBs), 1 on the calling thread only."""
        offset = _offset(offset)
        if length is not None:
            length = _length(length)
        threads = _threads(threads)
        file, code = self._hf_file(name, dtype)
        size = self.hf_size(name, dtype)
        offset = min(offset, size)
        n = size - offset if length is None else min(length, size - offset)
        buf = out if out is not None else bytearray(n)
        view = memoryview(buf).cast("B")
        if view.nbytes < n or view.readonly:
            raise ValueError("weightfs: hf_read: out is read-only or smaller than %d bytes" % n)
        got = 0
        if n:
            c = (ctypes.c_char * view.nbytes).from_buffer(view)
            got = self._hf_into(file, code, offset, n, ctypes.addressof(c), threads)
            del c
        return bytes(buf[:got]) if out is None else buf

    # -- listing --
    def _info(self, i, code):
        info = _Info()
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._handle() as h:
            rc = _lib.weightfs_tensor_info(h, i, code, ctypes.byref(info), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        return info

    def keys(self) -> List[str]:
        """Tensor names in the order the model's files list them."""
        if self._names is None:
            names = []
            info = _Info()
            with self._handle() as h:
                for i in range(_lib.weightfs_n_tensors(h)):
                    # dtype f32 always has a view: info cannot fail on a good index
                    _lib.weightfs_tensor_info(h, i, 0, ctypes.byref(info), None, 0)
                    raw = ctypes.string_at(info.name, info.name_len)
                    names.append(raw.decode("utf-8", "surrogateescape"))
            self._names = names
        return list(self._names)

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __len__(self) -> int:
        with self._handle() as h:
            return _lib.weightfs_n_tensors(h)

    def _index(self, name):
        raw = _encode(name)
        with self._handle() as h:
            i = _lib.weightfs_find(h, raw, len(raw))
        if i < 0:
            raise KeyError(name)
        return i

    def __contains__(self, name: object) -> bool:
        """Whether name is one of keys(): the hidden parts of a decoded
        quantized layer (PREFIX.qweight, ...) are not, though get() and
        info() reach them by name."""
        if not isinstance(name, (str, bytes)):
            return False
        try:
            i = self._index(name)
        except KeyError:
            return False
        with self._handle() as h:
            return i < _lib.weightfs_n_tensors(h)

    @property
    def metadata(self) -> Dict[str, Any]:
        """The model's metadata (GGUF key/values or safetensors __metadata__) as a dict."""
        if self._metadata is None:
            n = ctypes.c_size_t()
            with self._handle() as h:
                p = _lib.weightfs_metadata_json(h, ctypes.byref(n))
                if not p:  # a GGUF's text is made on first use: the file changed, or no memory
                    raise WeightfsError(_ECHANGED, "%s: cannot make metadata.json (the file changed, "
                                        "or out of memory)" % self.path)
                text = ctypes.string_at(p, n.value)
            self._metadata = json.loads(text.decode("utf-8", "surrogateescape"))
        return self._metadata

    def info(self, name: str, dtype: DType = None) -> Dict[str, Any]:
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
    def __getitem__(self, name: str) -> np.ndarray:
        return self.get(name)

    def get(self, name: str, dtype: DType = None, rows: Optional[slice] = None,
            threads: int = 0) -> np.ndarray:
        """Tensor `name` as a new numpy array in dtype (default: the one
        given to open).  rows=slice(a, b) reads only rows a..b-1 of the
        outermost dim (step 1; negative and open ends as in numpy).
        threads=0 decodes on every core, 1 on the calling thread only."""
        threads = _threads(threads)
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
        with self._handle() as h:
            rc = _lib.weightfs_read_parallel(h, i, code, off, size, a.ctypes.data,
                                             ctypes.byref(got), threads, err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        if got.value != size:
            raise WeightfsError(_ERANGE, "weightfs: %s: read %d of %d bytes" % (name, got.value, size))
        return a

    def read_into(self, name: str, buf: Any, offset: int = 0, dtype: DType = None,
                  threads: int = 0) -> int:
        """Reads bytes [offset, offset+len(buf)) of tensor `name` in dtype
        into the writable buffer buf (a numpy array, bytearray, ...);
        returns the number of bytes read (less at the end of the tensor)."""
        offset = _offset(offset)
        threads = _threads(threads)
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
        with self._handle() as h:
            rc = _lib.weightfs_read_parallel(h, i, code, offset, n, ctypes.addressof(c),
                                             ctypes.byref(got), threads, err, _ERRLEN)
        del c
        if rc != 0:
            _raise(rc, err)
        return got.value

    def stack(self, names: Sequence[str], dtype: DType = None, threads: int = 0) -> np.ndarray:
        """Tensors `names`, all of one shape and dtype, as one new array of
        shape [len(names), *shape], each decoded straight into its slot in
        parallel (weightfs_read_stack): the experts of a layer, or a batch
        of same-shaped tensors, with no copy.  A ValueError when the shapes
        or dtypes differ; threads as in get()."""
        names = list(names)
        threads = _threads(threads)
        code = _dtype_code(dtype if dtype is not None else self.dtype)
        idx = (ctypes.c_size_t * max(1, len(names)))(*[self._index(n) for n in names])
        if not names:
            raise ValueError("weightfs: stack of no tensors")
        inf = self._info(idx[0], code)
        shape = tuple(inf.shape[d] for d in range(inf.ndim))
        a = np.empty((len(names),) + shape, dtype=_np_dtype(inf.dtype.decode(), inf.elem_size))
        if a.nbytes != len(names) * inf.size:
            raise WeightfsError(_ERANGE, "weightfs: %s: %d bytes do not make an array of %s %s"
                                % (names[0], inf.size, shape, a.dtype))
        err = ctypes.create_string_buffer(_ERRLEN)
        with self._handle() as h:
            rc = _lib.weightfs_read_stack(h, idx, len(names), code, a.ctypes.data, inf.size,
                                          threads, err, _ERRLEN)
        if rc == _EINVAL:
            raise ValueError(err.value.decode("utf-8", "replace"))
        if rc != 0:
            _raise(rc, err)
        return a

    def stats(self, name: str, dtype: DType = None, threads: int = 0) -> Dict[str, Any]:
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
        threads = _threads(threads)
        with self._handle() as h:
            rc = _lib.weightfs_stats(h, i, code, threads, ctypes.byref(st), err, _ERRLEN)
        if rc != 0:
            _raise(rc, err)
        out = {"name": name, "type": inf.type.decode(), "shape": tuple(inf.shape[d] for d in range(inf.ndim))}
        for k, _ in _Stats._fields_:
            if k != "finite":
                out[k] = getattr(st, k)
        return out

    def __repr__(self) -> str:
        return "<weightfs.Model %r, %d tensors>" % (self.path, len(self) if self._h is not None else 0)


def open(path: PathLike, dtype: str = "f32") -> Model:  # noqa: A001 - the module's verb, like gzip.open
    """Opens the model at path (a GGUF or safetensors file, a split GGUF
    part, a safetensors index or shard, or a model folder); dtype is the
    default output dtype of its reads."""
    return Model(path, dtype)


# --- the codec: float32 <-> ggml blocks -------------------------------------

def _ggml_type(type):
    """(id, name, values per block, bytes per block, can encode, can decode) of a ggml type
    named as ggml spells it, in any case ("q4_k", "Q8_0", "iq4_xs", "bf16")."""
    if not isinstance(type, str):
        raise TypeError("weightfs: a type is a name such as \"q4_k\", not %s" % _builtin_type(type).__name__)
    if "\0" in type:  # C would read the name up to it: "q4_0\0junk" as q4_0
        raise ValueError("weightfs: the type holds a NUL byte: %r" % (type,))
    tid = _lib.weightfs_type_parse(type.encode("ascii", "replace"))
    blck, nbytes, enc, dec = ctypes.c_uint32(), ctypes.c_uint32(), ctypes.c_int(), ctypes.c_int()
    if tid < 0 or _lib.weightfs_type_info(tid, ctypes.byref(blck), ctypes.byref(nbytes), ctypes.byref(enc),
                                          ctypes.byref(dec)) != 0:
        raise ValueError("weightfs: unknown ggml type %r" % (type,))
    return tid, type.upper(), blck.value, nbytes.value, bool(enc.value), bool(dec.value)


_builtin_type = type


def quantize(array: Any, type: str) -> bytes:
    """The bytes ggml writes for array quantized as `type` ("q8_0", "q4_k", "q6_k", "iq4_xs",
    "f16", ...): exactly ggml_quantize_chunk(type, ..., imatrix=NULL), i.e. what llama-quantize
    writes without an imatrix.  array is converted to float32 (numpy's astype); its last
    dimension is the row (a multiple of the type's block: 32 values, 256 for K-quants and
    IQ4_XS), every other dimension counts rows.  Types: f32, f16, bf16, q4_0, q4_1, q5_0,
    q5_1, q8_0, q2_k, q3_k, q4_k, q5_k, q6_k, iq4_nl, iq4_xs."""
    tid, name, blck, nbytes, enc, _ = _ggml_type(type)
    if not enc:
        raise ValueError("weightfs: no encoder for %s" % name)
    a = np.ascontiguousarray(array, dtype=np.float32)
    if a.ndim == 0:
        raise ValueError("weightfs: quantize takes an array of rows, not a scalar")
    npr = a.shape[-1]
    nrows = a.size // npr if npr else 0
    size = nrows * (npr // blck) * nbytes
    out = ctypes.create_string_buffer(max(size, 1))
    got = ctypes.c_size_t()
    err = ctypes.create_string_buffer(_ERRLEN)
    rc = _lib.weightfs_quantize(tid, a.ctypes.data, nrows, npr, out, size, ctypes.byref(got), err, _ERRLEN)
    if rc != 0:
        if rc == _EUNSUP:
            raise ValueError(err.value.decode("utf-8", "replace"))
        _raise(rc, err)
    return out.raw[:got.value]


def dequantize(data: Any, type: str, shape: Any = None) -> np.ndarray:
    """float32 values of ggml `type` blocks in data (bytes or any buffer), decoded as ggml's
    to_float does, bit for bit; any type weightfs reads (all of ggml's but the removed
    ones).  shape (an int or a tuple) is the array's; None: every value data holds, 1-D."""
    tid, name, blck, nbytes, _, dec = _ggml_type(type)
    if not dec:
        raise ValueError("weightfs: no decoder for %s" % name)
    buf = np.frombuffer(data, dtype=np.uint8)
    if shape is None:
        if buf.size % nbytes:
            raise ValueError("weightfs: %d bytes are not whole %s blocks of %d bytes" % (buf.size, name, nbytes))
        shape = (buf.size // nbytes * blck,)
    elif not isinstance(shape, tuple):
        shape = (operator.index(shape),)
    n = 1
    for d in shape:
        if operator.index(d) < 0:
            raise ValueError("weightfs: shape %r has a negative dimension" % (shape,))
        n *= operator.index(d)
    # the library's checks, before the array is made: shape=(2**40,) of 18 bytes would
    # first allocate 4 TiB
    if n % blck:
        raise ValueError("weightfs: %s: %d values are not whole %d-value blocks" % (name, n, blck))
    if n // blck > buf.size // nbytes:
        raise ValueError("weightfs: %s: %d values need %d bytes, %d given" % (name, n, n // blck * nbytes,
                                                                          buf.size))
    out = np.empty(shape, dtype=np.float32)
    err = ctypes.create_string_buffer(_ERRLEN)
    rc = _lib.weightfs_dequantize(tid, buf.ctypes.data, buf.size, out.ctypes.data, n, err, _ERRLEN)
    if rc != 0:
        if rc in (_EUNSUP, _ERANGE):
            raise ValueError(err.value.decode("utf-8", "replace"))
        _raise(rc, err)
    return out


# --- safetensors' safe_open ------------------------------------------------

FRAMEWORKS = ("np", "numpy", "pt", "torch")


def _torch():
    try:
        import torch  # noqa: PLC0415 - only framework="pt" needs it
    except ImportError as e:
        raise ImportError("weightfs: framework=\"pt\" needs torch (Debian: apt-get install python3-torch): %s"
                          % e) from None
    return torch


def _dtype_arg(dtype: Any) -> Optional[str]:
    """dtype= of safe_open as a DTYPES name: the names themselves, or the
    numpy or torch float dtypes they stand for."""
    if dtype is None or isinstance(dtype, str):
        if dtype is not None:
            _dtype_code(dtype)
        return dtype
    text = str(dtype)
    for name, code in (("float32", "f32"), ("float16", "f16"), ("bfloat16", "bf16")):
        if text in (name, "torch." + name):
            return code
    try:
        return {np.dtype(np.float32): "f32", np.dtype(np.float16): "f16"}[np.dtype(dtype)]
    except (KeyError, TypeError):
        raise ValueError("weightfs: unknown dtype %r (f32, f16, bf16, stored, or a float dtype)"
                         % (dtype,)) from None


class SafeOpen:
    """A model opened the way safetensors' safe_open opens a file: use
    weightfs.safe_open().  Tensors come back as numpy arrays
    (framework="np") or torch tensors (framework="pt")."""

    def __init__(self, path: PathLike, framework: str = "np", dtype: Any = None,
                 device: str = "cpu", names: str = "model") -> None:
        self._model: Optional[Model] = None
        if names not in ("model", "hf"):
            raise ValueError("weightfs: names=%r: \"model\" (the model's own) or \"hf\"" % (names,))
        self.names = names
        self._hf: Optional[Dict[str, Any]] = None
        if framework not in FRAMEWORKS:
            raise ValueError("weightfs: unknown framework %r (np or pt)" % (framework,))
        self.framework = "pt" if framework in ("pt", "torch") else "np"
        if self.framework == "pt":
            _torch()
        elif device != "cpu":
            raise ValueError("weightfs: framework=\"np\" has no device %r" % (device,))
        self.dtype = _dtype_arg(dtype)
        self.device = device
        self._model = Model(path)
        self.path = self._model.path
        if names == "hf":
            self._hf_open()

    def _hf_open(self) -> None:
        """names="hf": the tensors of the hf/ view's model.safetensors, read from its
        header (made by the library: HF names, q/k rows as HF has them)."""
        d = self.dtype or "f32"
        if d not in ("f32", "f16", "bf16"):
            raise ValueError("weightfs: names=\"hf\" reads f32, f16 or bf16, not %r" % (d,))
        m = self._model
        head = m.hf_read("model.safetensors", 0, 8, dtype=d)
        n = int.from_bytes(head, "little")
        hdr = json.loads(m.hf_read("model.safetensors", 8, n, dtype=d))
        hdr.pop("__metadata__", None)
        self._hf = {"dtype": d, "base": 8 + n, "tensors": hdr,
                    "order": sorted(hdr, key=lambda k: hdr[k]["data_offsets"][0])}

    # -- lifetime --
    def close(self) -> None:
        if self._model is not None:
            self._model.close()
            self._model = None
        self._hf = None  # names="hf" listed from it: later calls go to self.model, which raises

    def __enter__(self) -> "SafeOpen":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @property
    def model(self) -> Model:
        """The underlying weightfs.Model (its get(), info(), read_into())."""
        if self._model is None:
            raise ValueError("weightfs: %s is closed" % self.path)
        return self._model

    # -- listing --
    def keys(self) -> List[str]:
        """Tensor names in the order the model's files list them (names="hf": the hf/
        view's model.safetensors)."""
        return list(self._hf["order"]) if self._hf else self.model.keys()

    def offset_keys(self) -> List[str]:
        """The same (safetensors lists them in file order under this name)."""
        return self.keys()

    def metadata(self) -> Dict[str, Any]:
        """The model's metadata: the safetensors __metadata__ (strings) or
        the GGUF key/values (their JSON types)."""
        return self.model.metadata

    def __len__(self) -> int:
        return len(self._hf["order"]) if self._hf else len(self.model)

    def __contains__(self, name: object) -> bool:
        return name in self._hf["tensors"] if self._hf else name in self.model

    def __iter__(self) -> Iterator[str]:
        return iter(self.keys())

    def __repr__(self) -> str:
        n = len(self._model) if self._model is not None else 0
        return "<weightfs.safe_open %r framework=%r%s, %d tensors%s>" % (
            self.path, self.framework, "" if self.dtype is None else " dtype=%r" % self.dtype, n,
            "" if self._model is not None else ", closed")

    # -- reading --
    def _read_dtype(self, name: str) -> str:
        """What a tensor reads as: dtype= if given, else floats stored as
        F16 (and BF16 under pt) and F64 as themselves, the rest as f32."""
        if self.dtype is not None:
            return self.dtype
        stored = self.model.info(name)["type"]
        if stored == "F16":
            return "f16"
        if stored == "BF16" and self.framework == "pt":
            return "bf16"
        if stored == "F64":
            return "stored"
        return "f32"

    def _convert(self, name: str, a: np.ndarray, read_dtype: str) -> Any:
        if self.framework == "np":
            return a
        torch = _torch()
        if self.model.info(name, dtype=read_dtype)["dtype"] == "bfloat16":
            t = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16)
        else:
            try:
                t = torch.from_numpy(a)
            except TypeError as e:
                raise TypeError("weightfs: %s: this torch has no %s tensors (%s); use framework=\"np\""
                                % (name, a.dtype, e)) from None
        return t if self.device == "cpu" else t.to(self.device)

    def _hf_tensor(self, name: str) -> Any:
        hf = self._hf
        t = hf["tensors"].get(name)
        if t is None:
            raise KeyError("weightfs: hf/model.safetensors has no tensor %r" % (name,))
        lo, hi = t["data_offsets"]
        np_dt = {"F32": np.float32, "F16": np.float16, "BF16": np.uint16}[t["dtype"]]
        a = np.empty(t["shape"], dtype=np_dt)
        if a.nbytes != hi - lo:
            raise WeightfsError(_EFORMAT, "weightfs: hf/ %s: %d bytes for shape %r" % (name, hi - lo,
                                                                                         t["shape"]))
        if hi > lo:
            self._hf_read_whole(name, hf["base"] + lo, hi - lo, a)
        if self.framework == "np":
            return a
        torch = _torch()
        x = torch.from_numpy(a.view(np.int16)).view(torch.bfloat16) if t["dtype"] == "BF16" else torch.from_numpy(a)
        return x if self.device == "cpu" else x.to(self.device)

    def _hf_read_whole(self, name: str, off: int, n: int, a: np.ndarray) -> None:
        """n bytes at off of hf/model.safetensors into the new array a, on every core in
        the library (weightfs_hf_read_parallel, as get() reads with
        weightfs_read_parallel): one call, no Python thread."""
        got = self.model._hf_into(_HF_SAFETENSORS, DTYPES[self._hf["dtype"]], off, n, a.ctypes.data, 0)
        if got != n:
            raise WeightfsError(_ERANGE, "weightfs: hf/ %s: read %d of %d bytes" % (name, got, n))

    def hf_file(self, name: str) -> bytes:
        """A file of the hf/ view (config.json, tokenizer.json, ...), whole."""
        return self.model.hf_read(name, dtype=self._hf["dtype"] if self._hf else "f32")

    def get_tensor(self, name: str) -> Any:
        """Tensor `name` whole, as a numpy array or torch tensor."""
        if self._hf:
            return self._hf_tensor(name)
        d = self._read_dtype(name)
        return self._convert(name, self.model.get(name, dtype=d), d)

    def get_slice(self, name: str) -> "Slice":
        """A handle on tensor `name` that reads only the rows an index
        asks for: f.get_slice(n)[a:b], [a:b, c:d], [i], [..., c:d]."""
        self.model._index(name)
        return Slice(self, name)

    def stack(self, names: Sequence[str], threads: int = 0) -> Any:
        """Same-shaped tensors `names` as one [len(names), *shape] array or
        tensor, decoded in parallel straight into it (Model.stack)."""
        names = list(names)
        if not names:
            raise ValueError("weightfs: stack of no tensors")
        dts = {self._read_dtype(n) for n in names}
        if len(dts) > 1:
            raise ValueError("weightfs: stack: the tensors are stored in different types (%s); pass dtype="
                             % ", ".join(sorted(dts)))
        d = dts.pop()
        return self._convert(names[0], self.model.stack(names, dtype=d, threads=threads), d)


class Slice:
    """One tensor of a SafeOpen, indexed without reading all of it: the
    first index picks the rows to read, the rest slice what was read."""

    def __init__(self, owner: SafeOpen, name: str) -> None:
        self._owner = owner
        self.name = name

    def get_shape(self) -> List[int]:
        return list(self._owner.model.info(self.name, dtype=self._owner._read_dtype(self.name))["shape"])

    def get_dtype(self) -> str:
        """The stored type as the model spells it: "F16", "BF16", "Q4_K"."""
        return self._owner.model.info(self.name)["type"]

    def __len__(self) -> int:
        shape = self.get_shape()
        if not shape:
            raise TypeError("weightfs: %s is a scalar" % self.name)
        return shape[0]

    def __repr__(self) -> str:
        return "<weightfs.Slice %r %s %s>" % (self.name, self.get_dtype(), self.get_shape())

    def __getitem__(self, key: Any) -> Any:
        own = self._owner
        d = own._read_dtype(self.name)
        key = key if isinstance(key, tuple) else (key,)
        shape = self.get_shape()
        first, rest = (key[0], key[1:]) if key else (Ellipsis, ())
        if first is Ellipsis or not shape:
            a, rest = own.model.get(self.name, dtype=d), key
        elif isinstance(first, (int, np.integer)) and not isinstance(first, bool):
            i = int(first)
            if not -shape[0] <= i < shape[0]:
                raise IndexError("weightfs: %s: index %d out of range for %d rows" % (self.name, i, shape[0]))
            i %= shape[0]
            a = own.model.get(self.name, dtype=d, rows=slice(i, i + 1))[0]
        elif isinstance(first, slice):
            r = range(*first.indices(shape[0]))
            if len(r) == 0 or r.step == 1:
                lo = r.start if len(r) else 0
                a = own.model.get(self.name, dtype=d, rows=slice(lo, lo + len(r)))
            else:
                lo, hi = min(r[0], r[-1]), max(r[0], r[-1])
                a = own.model.get(self.name, dtype=d, rows=slice(lo, hi + 1))[np.asarray(r) - lo]
            rest = (slice(None),) + rest
        else:
            a, rest = own.model.get(self.name, dtype=d), key
        if rest:
            a = a[rest]
        return own._convert(self.name, np.ascontiguousarray(a), d)


def safe_open(path: PathLike, framework: str = "np", dtype: Any = None, device: str = "cpu",
              names: str = "model") -> SafeOpen:
    """Opens a model as safetensors' safe_open does a file, for code that
    already loads weights that way; any MODEL form (GGUF, safetensors, a
    split GGUF part, an index, a folder).  framework "np" (numpy arrays)
    or "pt" (torch tensors; torch must be installed).  With dtype=None,
    floats stored as F16, F32 and F64 come back as themselves, BF16 as
    torch.bfloat16 under "pt" and float32 under "np", quantized and other
    float types decoded to float32; dtype= ("f32", "f16", "bf16",
    "stored", or torch.float16 and the like) picks one for all of them
    ("bf16" under "np" gives uint16 arrays of the bits).  Integer and bool
    tensors are always themselves.  device= (pt only) moves each tensor
    there after reading.  names="hf" (a GGUF model): the names and tensors
    of the hf/ view's model.safetensors (docs/hf.md), so that
    model.load_state_dict({k: f.get_tensor(k) for k in f.keys()}) works;
    dtype f32 (default), f16 or bf16; f.hf_file("config.json") gives that
    view's other files."""
    return SafeOpen(path, framework, dtype, device, names)
