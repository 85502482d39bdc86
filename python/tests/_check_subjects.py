"""Producers for the checker's tests: one well-behaved producer, and variants that each
break one rule of the standard. Importable as `module:factory` by the checker's worker
processes (the tests put this folder on PYTHONPATH)."""

from __future__ import annotations

import ctypes
import threading

import numpy as np

import dlbridge
from dlbridge.check import CapsuleOnly
from dlbridge.check.abi import (
    EXCHANGE_PROTOTYPES,
    FLAG_READ_ONLY,
    NAME_EXCHANGE_API,
    NAME_USED_LEGACY,
    NAME_USED_VERSIONED,
    NAME_VERSIONED,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackExchangeAPI,
)
from dlbridge.check.capi import (
    PyCapsule_GetPointer,
    PyCapsule_New,
    PyCapsule_SetName,
    static_name,
)
from dlbridge.check.capsules import capsule_name, capsule_table, release
from dlbridge.check.records import make_from_numpy

BASE = np.arange(6, dtype=np.float32).reshape(2, 3)


class Good:
    """A conforming producer: every call forwarded to a dlbridge tensor over its values."""

    def __init__(self, array=BASE, read_only: bool = False):
        array = np.array(array, copy=True)
        if read_only:
            array.flags.writeable = False
        self.array = array
        self.inner = dlbridge.from_dlpack(array)

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return self.inner.__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )


def _record(array, *, versioned=True, **fields):
    record = make_from_numpy(np.ascontiguousarray(array), versioned=versioned, **fields)
    _KEEP.append(record)
    return record


_KEEP: list = []


class PositionalArguments(Good):
    def __dlpack__(self, stream=None, max_version=None, dl_device=None, copy=None):
        return super().__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )


class MissingKeywords(Good):
    def __dlpack__(self, *, stream=None, max_version=None):  # no dl_device, no copy
        return super().__dlpack__(stream=stream, max_version=max_version)


class AlwaysVersioned(Good):
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return super().__dlpack__(stream=stream, max_version=(1, 3), dl_device=dl_device, copy=copy)


class AlwaysLegacy(Good):
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        return super().__dlpack__(stream=stream, max_version=None, dl_device=dl_device, copy=copy)


class VersionTwo(Good):
    def __dlpack__(self, **kwargs):
        if (kwargs.get("max_version") or (0,))[0] >= 1:
            return _record(self.array, version=(2, 0)).capsule()
        return super().__dlpack__(**kwargs)


class NullStridesIn13(Good):
    def __dlpack__(self, **kwargs):
        if (kwargs.get("max_version") or (0,))[0] >= 1:
            return _record(self.array, strides=None).capsule()
        return super().__dlpack__(**kwargs)


class WrongValues(Good):
    def __dlpack__(self, **kwargs):
        return Good(np.zeros_like(self.array)).__dlpack__(**kwargs)


class ReadOnlyUnflagged(Good):
    """Read-only data exported versioned without READ_ONLY, and legacy without refusal."""

    def __dlpack__(self, **kwargs):
        versioned = (kwargs.get("max_version") or (0,))[0] >= 1
        return _record(self.array, versioned=versioned).capsule()


class CopyIgnored(Good):
    def __dlpack__(self, *, copy=None, **kwargs):
        return super().__dlpack__(**kwargs)


class CopyFalseCopies(Good):
    def __dlpack__(self, *, copy=None, **kwargs):
        return super().__dlpack__(copy=True if copy is False else copy, **kwargs)


class ZeroSizeRefused(Good):
    def __init__(self, array=BASE, read_only=False):
        super().__init__(array, read_only)
        self.empty = array.size == 0

    def __dlpack__(self, **kwargs):
        if self.empty:
            raise BufferError("no elements, no export")
        return super().__dlpack__(**kwargs)


class DeviceList(Good):
    def __dlpack_device__(self):
        return [1, 0]


class DeviceIdNone(Good):
    def __dlpack_device__(self):
        return (1, None)


class DeviceMismatch(Good):
    def __dlpack_device__(self):
        return (3, 0)  # CUDAHost, while the capsule says CPU


class StreamIgnored(Good):
    def __dlpack__(self, *, stream=None, **kwargs):
        return super().__dlpack__(**kwargs)


class StreamRuntimeError(Good):
    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None:
            raise RuntimeError("no streams here")
        return super().__dlpack__(**kwargs)


class StreamTypeError(Good):
    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None:
            raise TypeError("stream is not supported")
        return super().__dlpack__(**kwargs)


class DeviceIgnored(Good):
    def __dlpack__(self, *, dl_device=None, **kwargs):
        return super().__dlpack__(**kwargs)


class SameCapsule(Good):
    def __dlpack__(self, **kwargs):
        key = repr(sorted(kwargs.items()))
        cache = self.__dict__.setdefault("cache", {})
        if key not in cache:
            cache[key] = super().__dlpack__(**kwargs)
        return cache[key]


class Leaky(Good):
    def __dlpack__(self, **kwargs):
        self.__dict__.setdefault("held", []).append(self)
        return super().__dlpack__(**kwargs)


# ---- producers publishing a C exchange table ---------------------------------------------------
#
# A table is dlbridge's, copied, with members replaced by Python callbacks where given.
# dlbridge's own functions refuse anything but a dlbridge.Tensor (TypeError); a callback cannot
# leave a Python error set (ctypes clears it), so one that refuses returns -1 without one.


def _publish(**members):
    """A `dlpack_exchange_api` capsule over a copy of dlbridge's table, each member given as
    a Python function replaced by a callback of its prototype."""
    table = DLPackExchangeAPI()
    ctypes.memmove(
        ctypes.addressof(table),
        ctypes.addressof(capsule_table(dlbridge.Tensor.__dlpack_c_exchange_api__)),
        ctypes.sizeof(table),
    )
    for member, function in members.items():
        callback = EXCHANGE_PROTOTYPES[member](function)
        _KEEP.append(callback)
        setattr(table, member, ctypes.cast(callback, ctypes.c_void_p).value)
    _KEEP.append(table)
    return PyCapsule_New(ctypes.addressof(table), static_name(NAME_EXCHANGE_API), None)


def _owner(address):
    return ctypes.cast(ctypes.c_void_p(address), ctypes.py_object).value


def _table_record(address, read_only_flag: bool):
    array = _owner(address).array
    flags = FLAG_READ_ONLY if read_only_flag and not array.flags.writeable else 0
    return _record(array, flags=flags)


def _exporter(read_only_flag: bool = True):
    """managed_tensor_from_py_object_no_sync over the object's array, READ_ONLY as its
    memory is (unless `read_only_flag` is False), whatever __dlpack__ says."""

    def export(address, out):
        record = _table_record(address, read_only_flag)
        out[0] = ctypes.cast(record.address, ctypes.POINTER(DLManagedTensorVersioned))
        return 0

    return export


def _describer(address, out):
    """dltensor_from_py_object_no_sync over the object's array."""
    out[0] = _table_record(address, False).struct.dl_tensor
    return 0


class TableAgrees(Good):
    """Read-only data; its table exports what __dlpack__ exports, READ_ONLY included."""

    __dlpack_c_exchange_api__ = _publish(
        managed_tensor_from_py_object_no_sync=_exporter(),
        dltensor_from_py_object_no_sync=_describer,
    )

    def __init__(self, array=BASE, read_only: bool = True):
        super().__init__(array, read_only=True)


class TableDropsReadOnly(TableAgrees):
    """Read-only data; its table's export lacks READ_ONLY."""

    __dlpack_c_exchange_api__ = _publish(
        managed_tensor_from_py_object_no_sync=_exporter(read_only_flag=False),
        dltensor_from_py_object_no_sync=_describer,
    )


class TableExportsRefused(Good):
    """__dlpack__ refuses (as PyTorch does a tensor that requires grad); the table exports."""

    __dlpack_c_exchange_api__ = _publish(
        managed_tensor_from_py_object_no_sync=_exporter(),
        dltensor_from_py_object_no_sync=_describer,
    )

    def __dlpack__(self, **kwargs):
        raise BufferError("this tensor requires grad")


class TableRaisesTypeError(Good):
    """__dlpack__ refuses with BufferError; the table refuses too, with TypeError."""

    __dlpack_c_exchange_api__ = _publish()

    def __dlpack__(self, **kwargs):
        raise BufferError("this tensor requires grad")


class TableRefusesAlike(TableRaisesTypeError):
    """__dlpack__ and the table both refuse with TypeError."""

    def __dlpack__(self, **kwargs):
        raise TypeError("not a dlbridge.Tensor")


def _no_allocation(prototype, out, error_ctx, set_error):
    return -1


class TableAllocatorFails(Good):
    __dlpack_c_exchange_api__ = _publish(managed_tensor_allocator=_no_allocation)


class Crashes(Good):
    """Dereferences NULL when asked for a stream: the worker process dies."""

    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None:
            ctypes.string_at(0)
        return super().__dlpack__(**kwargs)


class Hangs(Good):
    """Blocks forever when asked for a stream: it waits on an event that nothing sets, until
    the checker kills its worker."""

    def __dlpack__(self, *, stream=None, **kwargs):
        if stream is not None:
            threading.Event().wait()
        return super().__dlpack__(**kwargs)


def good():
    return Good()


def crashes():
    return Crashes()


def hangs():
    return Hangs()


def leaky():
    return Leaky()


# ---- factories for the interop matrix ----------------------------------------------------------

#: Values unlike the checker's own (arange(12) in float32 and the other matrix dtypes).
OTHER_VALUES = np.array([[7, -3, 9, 1], [2, 8, -5, 4]], dtype=np.float32)


def other_values():
    """A tensor of values, dtype and shape the checker does not make itself."""
    return Good(OTHER_VALUES)


def sub_byte():
    """float4 elements (two per byte): the checker's reader cannot read them as values."""
    return dlbridge.zeros((2, 4), "float4_e2m1fn")


# ---- a capsule-only framework: DLPack functions, no __dlpack__ -----------------------------------
#
# Its tensors are NumPy arrays in a box without `__dlpack__`; `to_capsule` hands out a legacy
# capsule (NumPy's, asked without max_version) and `from_capsule` imports one through dlbridge
# into a new box, as MXNet's `to_dlpack_for_read` / `from_dlpack` do.


class Boxed:
    """A tensor of the capsule-only framework: no `__dlpack__`, no `__dlpack_device__`."""

    def __init__(self, array):
        self.array = array


def box_to_capsule(box: Boxed):
    return box.array.__dlpack__()


def box_from_capsule(capsule) -> Boxed:
    return Boxed(np.from_dlpack(dlbridge.from_dlpack(capsule)))


def boxed():
    """The factory of a capsule-only subject: its tensor with its DLPack functions."""
    return CapsuleOnly(
        Boxed(np.array(OTHER_VALUES, copy=True)),
        to_capsule=box_to_capsule,
        from_capsule=box_from_capsule,
        to_numpy=lambda box: box.array,
    )


def boxed_export_only():
    """A capsule-only subject without an import function: a producer only."""
    return CapsuleOnly(Boxed(np.array(BASE, copy=True)), to_capsule=box_to_capsule)


def box_from_capsule_corrupting(capsule) -> Boxed:
    """An import function that gets the values wrong (every element doubled)."""
    return Boxed(box_from_capsule(capsule).array * 2)


# ---- a consumer written with ctypes that can leave the capsule's name alone ------------------


def capsule_consumer(*, rename: bool = True):
    """A `from_dlpack` written with ctypes (the elements copied out): it asks for a versioned
    capsule (again without max_version on TypeError), refuses a major version other than 1,
    copies the elements (NULL strides read as row-major), then calls the deleter once.

    With `rename=False` it never renames the capsule `used_dltensor[_versioned]`: the
    capsule's destructor, seeing the old name, then calls the deleter a second time (the bug
    `consumer.renames-capsule` reports, and the cause of the deleter counts other consumer
    rules see)."""

    def consume(obj):
        try:
            capsule = obj.__dlpack__(max_version=(1, 3))
        except TypeError:
            capsule = obj.__dlpack__()
        name = capsule_name(capsule)
        pointer = PyCapsule_GetPointer(capsule, name)  # raises for any other name
        layout = DLManagedTensorVersioned if name == NAME_VERSIONED else DLManagedTensor
        managed = layout.from_address(pointer)
        deleter = managed.deleter
        if name == NAME_VERSIONED and managed.version.major != 1:
            if rename:
                PyCapsule_SetName(capsule, static_name(NAME_USED_VERSIONED))
            release(pointer, deleter)
            raise BufferError(f"DLPack major version {managed.version.major} is not supported")
        if rename:
            used = NAME_USED_VERSIONED if name == NAME_VERSIONED else NAME_USED_LEGACY
            PyCapsule_SetName(capsule, static_name(used))
        try:
            return _copy_elements(managed.dl_tensor)
        finally:
            release(pointer, deleter)

    return consume


#: DLPack (code, bits) -> NumPy dtype, for the dtypes `capsule_consumer` imports (lanes 1).
_DTYPES = {
    (0, 8): np.int8,
    (0, 16): np.int16,
    (0, 32): np.int32,
    (0, 64): np.int64,
    (1, 8): np.uint8,
    (1, 16): np.uint16,
    (1, 32): np.uint32,
    (1, 64): np.uint64,
    (2, 16): np.float16,
    (2, 32): np.float32,
    (2, 64): np.float64,
    (5, 64): np.complex64,
    (5, 128): np.complex128,
    (6, 8): np.bool_,
}


def _copy_elements(tensor) -> np.ndarray:
    """The elements a DLTensor describes, copied into a new array of its dtype (BufferError
    for a dtype NumPy cannot hold)."""
    dtype = _DTYPES.get((tensor.dtype.code, tensor.dtype.bits))
    if dtype is None or tensor.dtype.lanes != 1:
        raise BufferError(f"dtype {tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes}")
    itemsize = np.dtype(dtype).itemsize
    shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
    if tensor.strides:
        strides = tuple(tensor.strides[i] for i in range(tensor.ndim))
    else:
        strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
    if 0 in shape:
        return np.zeros(shape, dtype)
    first = (tensor.data or 0) + tensor.byte_offset
    low = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
    high = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
    span = (ctypes.c_char * ((high - low + 1) * itemsize)).from_address(first + itemsize * low)
    view = np.lib.stride_tricks.as_strided(
        np.frombuffer(span, dtype)[-low:], shape, tuple(itemsize * s for s in strides)
    )
    return np.array(view, copy=True)
