"""Small utilities shared by the dlbridge test files."""

from __future__ import annotations

import ctypes
import gc
import os
import subprocess
import sys
import threading

import numpy as np

from dlbridge.check.abi import DELETER, NAME_VERSIONED, DLManagedTensor, DLManagedTensorVersioned
from dlbridge.check.capi import Py_DecRef
from dlbridge.check.capsules import capsule_table, read_capsule, table_member
from dlbridge.check.records import make_managed

# Shapes every interop file covers (the last is 32 dimensions of extent 1).
SHAPES = [(), (0,), (3, 0), (1,), (2, 3), (2, 1, 4), (1,) * 32]
SHAPE_IDS = ["scalar", "empty", "3x0", "one", "2x3", "2x1x4", "32dims"]

IS_COPIED = 1 << 1
READ_ONLY = 1 << 0

# bytes per element for every dtype name dlbridge reports that these tests use.
ITEMSIZE = {
    "bool": 1,
    "int8": 1,
    "uint8": 1,
    "int16": 2,
    "uint16": 2,
    "int32": 4,
    "uint32": 4,
    "int64": 8,
    "uint64": 8,
    "float16": 2,
    "bfloat16": 2,
    "float32": 4,
    "float64": 8,
    "complex32": 4,
    "complex64": 8,
    "complex128": 16,
    "float8_e3m4": 1,
    "float8_e4m3": 1,
    "float8_e4m3b11fnuz": 1,
    "float8_e4m3fn": 1,
    "float8_e4m3fnuz": 1,
    "float8_e5m2": 1,
    "float8_e5m2fnuz": 1,
    "float8_e8m0fnu": 1,
}

# dtype names by family, from which the test files make their lists.
INTEGER_DTYPES = [f"{sign}int{bits}" for bits in (8, 16, 32, 64) for sign in ("", "u")]
FLOAT_DTYPES = ["float16", "float32", "float64"]
COMPLEX_DTYPES = ["complex64", "complex128"]
FLOAT8_DTYPES = [name for name in ITEMSIZE if name.startswith("float8_")]

# numpy-representable dtype names.
NUMPY_DTYPES = ["bool", *INTEGER_DTYPES, *FLOAT_DTYPES, *COMPLEX_DTYPES]


def size_of(shape) -> int:
    n = 1
    for extent in shape:
        n *= extent
    return n


def row_major_strides(shape) -> tuple:
    strides, acc = [], 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= max(extent, 1)
    return tuple(reversed(strides))


def pattern_bytes(dtype: str, count: int) -> bytes:
    """A deterministic byte pattern valid for `count` elements of `dtype` (bools are 0/1)."""
    size = ITEMSIZE[dtype] * count
    if dtype == "bool":
        return bytes(i % 2 for i in range(size))
    return bytes((i * 37 + 11) % 251 for i in range(size))


def read_bytes(address, nbytes: int) -> bytes:
    """Raw bytes at an address (for compact host memory)."""
    if nbytes == 0:
        return b""
    return ctypes.string_at(address, nbytes)


def write_bytes(address, data: bytes) -> None:
    if data:
        ctypes.memmove(address, data, len(data))


def rust_tensor_with_bytes(dlbridge, shape, dtype, data: bytes | None = None):
    """A Rust-owned dlbridge tensor holding `data` (default: the dtype's pattern)."""
    t = dlbridge.zeros(shape, dtype=dtype)
    if data is None:
        data = pattern_bytes(dtype, size_of(shape))
    assert t.nbytes == len(data)
    write_bytes(t.data_ptr, data)
    return t


def aligned_empty(shape, dtype, align: int = 256) -> np.ndarray:
    """A writable numpy array whose data is aligned to `align` bytes (JAX copies otherwise)."""
    dt = np.dtype(dtype)
    n = size_of(shape)
    raw = np.zeros(n * dt.itemsize + align, dtype=np.uint8)
    offset = (-raw.ctypes.data) % align
    return raw[offset : offset + n * dt.itemsize].view(dt).reshape(shape)


def np_address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def collect():
    for _ in range(3):
        if gc.collect() == 0:
            break


def rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        resident_pages = int(f.read().split()[1])
    return resident_pages * os.sysconf("SC_PAGE_SIZE")


def python_without_exchange_api(*arguments: str) -> str:
    """Runs `python ARGUMENTS...` in a process of its own with `DLBRIDGE_NO_EXCHANGE_API=1`
    (read once per process, so the switch cannot be flipped inside the test's process), and
    returns its standard output; a failing process fails the test with its standard error."""
    env = dict(os.environ, DLBRIDGE_NO_EXCHANGE_API="1")
    result = subprocess.run(
        [sys.executable, *arguments],
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return result.stdout


def refcount(obj) -> int:
    return sys.getrefcount(obj) - 1


def under_address_sanitizer() -> bool:
    """True when AddressSanitizer's runtime is in the process (`make sanitize` preloads it):
    its allocator keeps freed memory in quarantine, so resident memory says nothing about
    leaks there (LeakSanitizer reports them at exit instead)."""
    return hasattr(ctypes.CDLL(None), "__asan_init")


class CountingDeleters:
    """Puts a counting deleter in front of the real one of managed tensors, so a test can tell
    that every tensor a producer handed out was released exactly once, whoever released it.

    `interpose(address)` (or `interpose_capsule(capsule)`, for an unconsumed capsule) swaps
    the tensor's deleter for this object's, which counts the call, forgets the tensor and then
    calls the tensor's own deleter. A call for a tensor that was never interposed, or a second
    call for one, lands in `unexpected` instead of reaching any deleter. `outstanding` is the
    number of interposed tensors whose deleter has not run yet.
    """

    def __init__(self):
        self.calls = 0
        self.unexpected: list[int] = []
        self._originals: dict[int, object] = {}
        lock = threading.Lock()
        originals, unexpected = self._originals, self.unexpected

        def counting_deleter(address):
            original = originals.pop(address, None)
            if original is None:
                unexpected.append(address)
                return
            with lock:
                self.calls += 1
            original(address)

        # Kept for the process: a tensor released during interpreter shutdown, after this
        # object is gone, must still find the function it points to.
        self._callback = DELETER(counting_deleter)
        _KEPT_CALLBACKS.append(self._callback)

    def interpose(self, address: int, *, versioned: bool = True) -> int:
        managed = (DLManagedTensorVersioned if versioned else DLManagedTensor).from_address(address)
        # A function-pointer field read through ctypes shares the structure's memory: take the
        # pointer's value before the field is overwritten.
        original = ctypes.cast(managed.deleter, ctypes.c_void_p).value
        assert original, "the producer handed out a tensor without a deleter"
        if original not in _DELETERS:
            _DELETERS[original] = DELETER(original)
        self._originals[address] = _DELETERS[original]
        managed.deleter = self._callback
        return address

    def interpose_capsule(self, capsule):
        description = read_capsule(capsule)
        self.interpose(description["address"], versioned=description["name"] == NAME_VERSIONED)
        return capsule

    @property
    def outstanding(self) -> int:
        return len(self._originals)


_KEPT_CALLBACKS: list = []
_DELETERS: dict = {}  # callable deleters by address: the few producers' functions, made once


def exchange_function(owner_type, member: str):
    """A callable for one member of the C exchange table a type publishes (ctypes, GIL kept)."""
    call = table_member(capsule_table(owner_type.__dlpack_c_exchange_api__), member)
    assert call is not None, f"{owner_type.__name__}'s {member} is NULL"
    return call


def through_exchange_tables(producer_type, consumer_type):
    """`pass_(source, counting)`: `source` leaves through its producer's C exchange table
    (`managed_tensor_from_py_object_no_sync`), gets a counting deleter (`counting`, a
    `CountingDeleters`), and enters the consumer's (`managed_tensor_to_py_object_no_sync`);
    it returns the consumer's new object."""
    export = exchange_function(producer_type, "managed_tensor_from_py_object_no_sync")
    wrap = exchange_function(consumer_type, "managed_tensor_to_py_object_no_sync")

    def pass_(source, counting):
        managed = ctypes.POINTER(DLManagedTensorVersioned)()
        made = ctypes.c_void_p()
        assert export(id(source), ctypes.byref(managed)) == 0
        counting.interpose(ctypes.addressof(managed.contents))
        assert wrap(managed, ctypes.byref(made)) == 0
        obj = ctypes.cast(made, ctypes.py_object).value
        Py_DecRef(obj)  # the call's new reference
        return obj

    return pass_


class DlpackOnly:
    """A producer with the protocol's two methods over an array's, and nothing else (no buffer
    protocol, no exchange table): what a user's own tensor type looks like to a consumer."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


class HandsOver:
    """A producer whose `__dlpack__` hands over one capsule made beforehand (whatever the
    keywords), so that a consumer takes a tensor whose deleter a test has interposed."""

    def __init__(self, capsule, device=(1, 0)):
        self._capsule = capsule
        self._device = device

    def __dlpack_device__(self):
        return self._device

    def __dlpack__(self, **_keywords):
        capsule, self._capsule = self._capsule, None
        return capsule


class FakeDeviceTensor:
    """A float32 tensor said to be on `device`, over host memory never dereferenced; records
    the keywords of every `__dlpack__` call. `legacy=True` always hands out a legacy capsule."""

    def __init__(self, shape=(4,), *, device=(2, 0), dtype="float32", flags=0, legacy=False):
        self.shape = shape
        self.device = device
        self.dtype = dtype
        self.flags = flags
        self.legacy = legacy
        self.calls: list[dict] = []
        self.records = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        max_version = kwargs.get("max_version")
        versioned = not self.legacy and max_version is not None and max_version[0] >= 1
        record = make_managed(
            self.shape,
            self.dtype,
            versioned=versioned,
            device=self.device,
            flags=self.flags if versioned else 0,
        )
        self.records.append(record)
        return record.capsule()


class CallsDuringExtraction:
    """A producer whose `__dlpack__` first calls `inner` (a kernel, on memory that the outer
    call extracting this object as an argument already holds), keeps the message of the
    `ValueError` it raised (`error`, None when it was not refused), then exports `tensor`."""

    def __init__(self, tensor, inner):
        self.tensor, self.inner, self.error = tensor, inner, None

    def __dlpack_device__(self):
        return self.tensor.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        try:
            self.inner()
        except ValueError as error:
            self.error = str(error)
        return self.tensor.__dlpack__(**kwargs)
