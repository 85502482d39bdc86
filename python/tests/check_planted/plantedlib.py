"""plantedlib: a small throwaway tensor library with DLPack in pure Python (NumPy + ctypes), and
bugs that can be planted in it, for the tests of `dlbridge check` (python/tests/
test_check_planted.py).

A `Tensor` holds a NumPy array in memory of its own. Its `__dlpack__` builds the managed
tensor with ctypes (the structs of `dlbridge.check.abi`) as the array API standard asks:
a legacy `dltensor` capsule without `max_version`, a `dltensor_versioned` one (version 1.3)
with it; read-only data flagged READ_ONLY on the versioned path and refused (BufferError) on
the legacy one; `copy=True` a copy flagged IS_COPIED; strides always present. `from_dlpack(x,
copy=None)` consumes a producer's capsule itself: it reads the DLTensor, copies the elements
out (shape, strides, byte_offset, dtype) into a new tensor, renames the capsule `used_*` and
calls the producer's deleter once.

Bugs (`ALL_BUGS`), each a mistake a framework author makes, planted where asked: a tensor
has the bugs it is made with (`Tensor(values, bugs={...})`), `from_dlpack` those of its
`bugs=` (none by default):

- "null-strides" (producer): NULL strides for contiguous data, also in a version 1.3 capsule;
- "read-only-unflagged" (producer): read-only data exported versioned without READ_ONLY, and
  legacy without refusal;
- "copy-ignored" (producer): copy=True shares the tensor's memory, without IS_COPIED;
- "no-rename" (consumer): the capsule is not renamed `used_*` before the deleter is called
  (its destructor then calls the deleter a second time);
- "ignores-byte-offset" (consumer): byte_offset is not added to data;
- "narrows-int64" (consumer): int64 (and uint64) come in as 32-bit integers, wrapped.

Nothing is freed twice even with a buggy consumer: each export lives in a table until its
deleter first runs, and a second call finds nothing there (`STATS["double_deletes"]`). The
capsules have no destructor (a ctypes one could not keep a consumer's exception: see
`_sweep`); an unconsumed capsule's deleter runs once the table alone holds it.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from ctypes import POINTER, c_int64, c_void_p

import numpy as np

from dlbridge.check import capi
from dlbridge.check.abi import (
    DELETER,
    DTYPES,
    FLAG_IS_COPIED,
    FLAG_READ_ONLY,
    HOST_DEVICES,
    NAME_LEGACY,
    NAME_USED_LEGACY,
    NAME_USED_VERSIONED,
    NAME_VERSIONED,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    compact_strides,
    kDLCPU,
)

__version__ = "0.1.0"

#: The bugs that can be planted, with what each one does.
ALL_BUGS = {
    "null-strides": "producer: NULL strides for contiguous data in a version 1.3 capsule",
    "read-only-unflagged": "producer: read-only data exported without READ_ONLY, legacy too",
    "copy-ignored": "producer: copy=True shares memory, without IS_COPIED",
    "no-rename": "consumer: the capsule is not renamed used_* before the deleter runs",
    "ignores-byte-offset": "consumer: byte_offset is not added to data",
    "narrows-int64": "consumer: int64 and uint64 are read as 32-bit integers (values wrap)",
}

#: The version this library writes into versioned capsules.
VERSION = (1, 3)

#: Counters: exports made, deleted, and deleter calls that found their export gone already.
STATS = {"exported": 0, "deleted": 0, "double_deletes": 0, "lost_exceptions": 0}


def parse_bugs(bugs) -> frozenset:
    """A set of bug names from an iterable or a comma-separated string (ValueError for a
    name that is not one of `ALL_BUGS`)."""
    if isinstance(bugs, str):
        bugs = [name.strip() for name in bugs.split(",")]
    chosen = frozenset(name for name in bugs if name)
    unknown = sorted(chosen - set(ALL_BUGS))
    if unknown:
        raise ValueError(f"unknown plantedlib bug(s) {unknown}: known are {sorted(ALL_BUGS)}")
    return chosen


def _bugs(bugs) -> frozenset:
    return frozenset() if bugs is None else parse_bugs(bugs)


# ---- exporting: managed tensors built with ctypes ---------------------------------------------
#
# The Python specification's capsule destructor calls the deleter of a capsule nobody consumed.
# Written in Python (a ctypes callback) it cannot do so while an exception is set, and CPython
# releases a refused capsule exactly then (the argument of a `from_dlpack` that raised): the
# callback would have to clear the consumer's exception, which then returns SystemError
# instead of its refusal. So plantedlib's capsules have no destructor: each export keeps its
# capsule in a table, and `_sweep` (at every export and after every garbage collection) calls
# the deleter of those that only the table still holds and that nobody consumed (still named
# `dltensor*`), as the destructor would have, only a little later.


class _Export:
    """One managed tensor handed out, with everything it points to, until its deleter runs."""

    __slots__ = ("array", "capsule", "managed", "shape", "strides")


#: address of a managed tensor handed out -> its `_Export`.
_LIVE: dict = {}


def _delete(address):
    """The deleter of every managed tensor plantedlib hands out."""
    capi.fetch_error(*_ERROR_REFS)  # a ctypes callback must not run with an exception set
    if _ERROR_SLOTS[0].value:
        STATS["lost_exceptions"] += 1  # a consumer's, which a callback cannot put back
    for slot in _ERROR_SLOTS:
        slot.value = None
    if _LIVE.pop(address, None) is None:
        STATS["double_deletes"] += 1  # a consumer's second call: nothing left to free
    else:
        STATS["deleted"] += 1


_ERROR_SLOTS = (c_void_p(), c_void_p(), c_void_p())
_ERROR_REFS = tuple(ctypes.byref(slot) for slot in _ERROR_SLOTS)
_DELETER = capi.immortal(DELETER(capi.immortal(_delete)))


def _sweep() -> None:
    """Releases the exports whose capsule only `_LIVE` still holds: unconsumed, the deleter
    is called (what a capsule destructor does); consumed (renamed `used_*`), the capsule is
    let go and its consumer calls the deleter."""
    for address, export in list(_LIVE.items()):
        if export.capsule is None or sys.getrefcount(export.capsule) > 2:
            continue  # someone else holds the capsule still
        unconsumed = capi.PyCapsule_GetName(export.capsule) in (NAME_LEGACY, NAME_VERSIONED)
        export.capsule = None  # first, so that a sweep run meanwhile (by a collection) skips it
        if unconsumed:
            export.managed.deleter(address)


gc.callbacks.append(lambda phase, info: _sweep() if phase == "stop" else None)

#: DLPack (code, bits, lanes) -> NumPy dtype, for the dtypes both have.
_FROM_DLPACK = {
    triple: np.dtype(name)
    for name, triple in DTYPES.items()
    if not name.startswith(("bfloat", "float8", "bcomplex"))  # NumPy has none
}
_TO_DLPACK = {dtype: triple for triple, dtype in _FROM_DLPACK.items()}


def _int64_array(values):
    return (c_int64 * max(1, len(values)))(*values)


def _asked(array: np.ndarray, bugs: frozenset, *, stream, max_version, dl_device, copy):
    """(the array to export, versioned, flags) for a `__dlpack__` call, or the error a
    producer raises for it."""
    if stream is not None:
        raise ValueError(f"plantedlib tensors are in host memory: stream must be None: {stream!r}")
    if dl_device is not None and tuple(int(v) for v in dl_device) != (kDLCPU, 0):
        raise BufferError(f"plantedlib tensors are on the CPU: cannot export to {dl_device}")
    if copy is not None and not isinstance(copy, bool):
        raise ValueError(f"copy must be True, False or None, not {copy!r}")
    versioned = max_version is not None and int(max_version[0]) >= 1
    read_only = not array.flags.writeable
    copied = False
    if copy and "copy-ignored" not in bugs:
        array = np.array(array, copy=True, order="K")
        copied, read_only = True, False
    if read_only and not versioned and "read-only-unflagged" not in bugs:
        raise BufferError(
            "read-only data cannot be exported as a legacy capsule (it cannot carry READ_ONLY): "
            "ask with max_version=(1, 3)"
        )
    flags = FLAG_IS_COPIED if copied else 0
    if read_only and "read-only-unflagged" not in bugs:
        flags |= FLAG_READ_ONLY
    return array, versioned, flags


def _export(array: np.ndarray, bugs: frozenset, **asked):
    """A DLPack capsule of `array` for `__dlpack__(**asked)` (see the module's docstring), or
    the error a producer raises."""
    array, versioned, flags = _asked(array, bugs, **asked)
    dtype = array.dtype
    if not dtype.isnative:
        raise BufferError(f"plantedlib exports native byte order only, not {dtype}")
    triple = _TO_DLPACK.get(dtype)
    if triple is None:
        raise BufferError(f"DLPack has no dtype for {dtype}")
    itemsize = dtype.itemsize
    if any(stride % itemsize for stride in array.strides):
        raise BufferError(f"strides {array.strides} are not whole elements of {itemsize} bytes")
    shape = _int64_array(array.shape)
    strides = _int64_array([stride // itemsize for stride in array.strides])
    if "null-strides" in bugs and array.ndim > 0 and array.flags.c_contiguous:
        strides = None  # "contiguous needs no strides": true of legacy, not of 1.2 and later

    managed = DLManagedTensorVersioned() if versioned else DLManagedTensor()
    address = ctypes.addressof(managed)
    tensor = managed.dl_tensor
    tensor.data = array.__array_interface__["data"][0] or None
    tensor.device = DLDevice(kDLCPU, 0)
    tensor.ndim = array.ndim
    tensor.dtype = DLDataType(*triple)
    tensor.shape = ctypes.cast(shape, POINTER(c_int64))
    tensor.strides = ctypes.cast(strides, POINTER(c_int64)) if strides is not None else None
    tensor.byte_offset = 0
    managed.manager_ctx = address
    managed.deleter = _DELETER
    if versioned:
        managed.version = DLPackVersion(*VERSION)
        managed.flags = flags
    _sweep()
    name = NAME_VERSIONED if versioned else NAME_LEGACY
    capsule = capi.PyCapsule_New(address, capi.static_name(name), None)
    export = _Export()
    export.managed, export.shape, export.strides, export.array = managed, shape, strides, array
    export.capsule = capsule
    _LIVE[address] = export
    STATS["exported"] += 1
    return capsule


# ---- tensors ----------------------------------------------------------------------------------


class Tensor:
    """A plantedlib tensor: a NumPy array in memory of its own (views share it)."""

    def __init__(self, values, dtype=None, *, read_only: bool = False, bugs=None):
        array = np.array(values, dtype=dtype, copy=True)
        if read_only:
            array.flags.writeable = False
        self._array = array
        self.bugs = _bugs(bugs)

    @classmethod
    def _over(cls, array: np.ndarray, bugs: frozenset) -> Tensor:
        """A tensor over `array` itself (a view, or an import's own copy)."""
        tensor = cls.__new__(cls)
        tensor._array = array
        tensor.bugs = bugs
        return tensor

    @property
    def shape(self) -> tuple:
        return self._array.shape

    @property
    def dtype(self) -> np.dtype:
        return self._array.dtype

    @property
    def ndim(self) -> int:
        return self._array.ndim

    @property
    def readonly(self) -> bool:
        """Whether the tensor's data may not be written."""
        return not self._array.flags.writeable

    @property
    def T(self) -> Tensor:
        return Tensor._over(self._array.T, self.bugs)

    def __getitem__(self, key) -> Tensor:
        view = self._array[key]
        if not isinstance(view, np.ndarray):
            view = np.asarray(view)  # one element: a 0-d copy
        return Tensor._over(view, self.bugs)

    def numpy(self) -> np.ndarray:
        """A NumPy copy of the values."""
        return np.array(self._array, copy=True)

    def __repr__(self) -> str:
        flags = ", read-only" if self.readonly else ""
        return f"plantedlib.Tensor({self._array.tolist()!r}, dtype={self.dtype}{flags})"

    def __dlpack_device__(self) -> tuple:
        return (kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _export(
            self._array,
            self.bugs,
            stream=stream,
            max_version=max_version,
            dl_device=dl_device,
            copy=copy,
        )


class FrozenBytes(bytes):
    """A plantedlib tensor over immutable bytes (uint8, one dimension): its buffer is
    read-only (`memoryview(t).readonly`), and so is its data."""

    def __new__(cls, data: bytes, bugs=None):
        self = super().__new__(cls, data)
        self.bugs = _bugs(bugs)
        return self

    def numpy(self) -> np.ndarray:
        return np.frombuffer(self, dtype=np.uint8).copy()

    def __dlpack_device__(self) -> tuple:
        return (kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return _export(
            np.frombuffer(self, dtype=np.uint8),
            self.bugs,
            stream=stream,
            max_version=max_version,
            dl_device=dl_device,
            copy=copy,
        )


def tensor(values, dtype=None, *, read_only: bool = False) -> Tensor:
    return Tensor(values, dtype, read_only=read_only)


def arange(n: int, dtype="float32") -> Tensor:
    return Tensor(np.arange(n, dtype=dtype))


def zeros(shape, dtype="float32") -> Tensor:
    return Tensor(np.zeros(shape, dtype=dtype))


# ---- importing: from_dlpack -------------------------------------------------------------------


def from_dlpack(x, copy=None, *, bugs=None) -> Tensor:
    """A new tensor holding the values of the DLPack producer `x` (always a copy: plantedlib
    keeps its tensors in memory of its own). `copy=False` cannot be honoured (BufferError);
    `copy=True` and None both copy. The producer is asked for a versioned capsule, and for a
    legacy one where it takes no `max_version` (an old producer)."""
    bugs = _bugs(bugs)
    if copy is False:
        raise BufferError("plantedlib copies every import into memory of its own: not copy=False")
    try:
        capsule = x.__dlpack__(max_version=VERSION)
    except TypeError:
        capsule = x.__dlpack__()  # an old producer, without max_version
    return Tensor._over(_import_capsule(capsule, bugs), bugs)


def _import_capsule(capsule, bugs: frozenset) -> np.ndarray:
    """The values of an unconsumed capsule, copied out; the capsule is consumed (renamed
    `used_*`) and its deleter called once, also where its tensor is refused."""
    if type(capsule).__name__ != "PyCapsule":
        raise TypeError(f"__dlpack__ returned a {type(capsule).__name__}, not a PyCapsule")
    name = capi.PyCapsule_GetName(capsule)
    if name == NAME_VERSIONED:
        layout, used = DLManagedTensorVersioned, NAME_USED_VERSIONED
    elif name == NAME_LEGACY:
        layout, used = DLManagedTensor, NAME_USED_LEGACY
    else:
        raise BufferError(f"not an unconsumed DLPack capsule: {name!r}")
    pointer = capi.PyCapsule_GetPointer(capsule, name)
    managed = layout.from_address(pointer)
    deleter = managed.deleter
    if "no-rename" not in bugs and capi.PyCapsule_SetName(capsule, capi.static_name(used)) != 0:
        raise RuntimeError("PyCapsule_SetName failed")
    try:
        if name == NAME_VERSIONED and managed.version.major != 1:
            version = managed.version
            raise BufferError(
                f"DLPack {version.major}.{version.minor}: plantedlib reads major version 1"
            )
        return _copy_out(managed.dl_tensor, bugs)
    finally:
        if deleter:
            deleter(pointer)


def _copy_out(t, bugs: frozenset) -> np.ndarray:
    """The elements a DLTensor describes, copied into a new C-ordered NumPy array."""
    if t.device.device_type not in HOST_DEVICES:
        raise BufferError(f"device type {t.device.device_type}: plantedlib reads host memory")
    triple = (t.dtype.code, t.dtype.bits, t.dtype.lanes)
    dtype = _FROM_DLPACK.get(triple)
    if dtype is None:
        raise BufferError(f"DLPack dtype {triple} has no plantedlib dtype")
    ndim = t.ndim
    if ndim < 0 or (ndim > 0 and not t.shape):
        raise BufferError(f"ndim {ndim} with {'a NULL' if ndim > 0 else 'no'} shape")
    shape = tuple(t.shape[i] for i in range(ndim))
    if any(extent < 0 for extent in shape):
        raise BufferError(f"negative extent in shape {shape}")
    strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else compact_strides(shape)
    if any(extent == 0 for extent in shape):
        return np.empty(shape, dtype)
    if not t.data:
        raise BufferError(f"NULL data for {shape} elements")
    first = t.data if "ignores-byte-offset" in bugs else t.data + t.byte_offset
    itemsize = dtype.itemsize
    low = sum(min(0, (extent - 1) * stride) for extent, stride in zip(shape, strides)) * itemsize
    high = sum(max(0, (extent - 1) * stride) for extent, stride in zip(shape, strides)) * itemsize
    raw = (ctypes.c_char * (high - low + itemsize)).from_address(first + low)
    view = np.ndarray(
        shape,
        dtype,
        buffer=raw,
        offset=-low,
        strides=tuple(stride * itemsize for stride in strides),
    )
    array = np.array(view, copy=True, order="C")
    if "narrows-int64" in bugs and array.dtype in (np.int64, np.uint64):
        array = array.astype(np.int32 if array.dtype == np.int64 else np.uint32)
    return array
