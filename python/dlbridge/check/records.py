"""Hand-built managed tensors with any field values, kept alive forever, each with a deleter
that counts its calls (`ManagedRecord`, `make_managed`, `make_from_numpy`, `make_major2`).

A record builds a `DLManagedTensor` / `DLManagedTensorVersioned` with *any* field values
(negative extents, NULL shape, NULL data, major version 2, NULL deleter, NULL strides in a
1.3 tensor, ...) and wraps it in PyCapsules whose destructor follows the DLPack Python
specification.

Nothing built here is ever freed: every struct, shape/strides array, data buffer and ctypes
callback lives in a module-level registry until the process exits, so a consumer that calls
a deleter twice, or reads a tensor after its deleter ran, sees valid memory and the double
call shows up in `ManagedRecord.deleter_calls` instead of as a crash.

Limitation of ctypes callbacks (CPython 3.11): a ctypes callback cannot run Python code
while an exception is set and then leave that exception set; CPython's call machinery turns
it into "SystemError: error return without exception set". Some consumers (numpy, pyarrow)
release a capsule while their own error is already set. So each callback first takes any
in-flight exception out of the way with PyErr_Fetch (deleter counts stay right) and records
it in LOST_EXCEPTIONS, which the tests' conftest.py turns into a test failure naming the lost
exception. The tests bind capsules, producers and tensors to local names and release them
with `del` + collect() once no exception is in flight, so this only fires if a consumer
releases one of these capsules while its error indicator is set.
"""

from __future__ import annotations

import ctypes
import struct
import sys
from ctypes import POINTER, c_int64, c_void_p, py_object

from . import capi
from .abi import (
    DELETER,
    DTYPES,
    NAME_LEGACY,
    NAME_VERSIONED,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    DLTensor,
    compact_strides,
    itemsize,
    kDLCPU,
)

AUTO = object()  # "compute the natural value"
NULL_NAME = object()  # ManagedRecord.capsule(NULL_NAME): a capsule whose name is NULL
_DUMMY_CTX = ctypes.c_int64(0)  # what manager_ctx points at by default (never read)

# address of a managed struct -> ManagedRecord, kept forever (nothing is ever freed).
_RECORDS: dict[int, ManagedRecord] = {}
# exceptions that were in flight when one of our ctypes callbacks ran (see module docstring).
LOST_EXCEPTIONS: list = []

# ---- the callbacks ------------------------------------------------------------------------


class _ErrorSlots:
    """Three PyObject* slots for PyErr_Fetch, with their byref() objects made in advance."""

    def __init__(self):
        self.slots = (c_void_p(), c_void_p(), c_void_p())
        self.refs = tuple(ctypes.byref(s) for s in self.slots)


def _report_lost(where, type_address, value_address):
    """Record (never raise) an exception that a callback had to take out of flight."""
    try:
        exc_type = ctypes.cast(c_void_p(type_address), py_object).value
        exc_value = ctypes.cast(c_void_p(value_address), py_object).value if value_address else None
        LOST_EXCEPTIONS.append((where, exc_type, exc_value))
        sys.stderr.write(
            f"dlbridge.check.records: a {where} ran while {exc_type.__name__}: {exc_value!r} "
            "was being raised; ctypes callbacks cannot put it back (test-toolkit limitation)\n"
        )
    except BaseException:  # noqa: BLE001 - a callback must never raise
        pass


def _make_deleter(record):
    """The tensor deleter: counts calls on `record`; per-tensor so it shares no state."""
    slots = _ErrorSlots()
    s0, s1, s2 = slots.slots
    r0, r1, r2 = slots.refs
    fetch = capi.fetch_error
    my_address = record.address

    def deleter(address):
        fetch(r0, r1, r2)  # first: take any in-flight exception out of the way
        pending_type, pending_value = s0.value, s1.value
        s0.value = s1.value = s2.value = None
        if address == my_address:
            record._deleter_calls += 1
        else:
            record.wrong_pointer_deleter_calls.append(address)
        if pending_type:
            _report_lost("tensor deleter", pending_type, pending_value)

    return capi.immortal(DELETER(capi.immortal(deleter)))


def _make_capsule_destructor(record):
    """A capsule destructor that follows the DLPack Python specification.

    A `used_*` name means a consumer took ownership: do nothing. Any other name means nobody
    did (never consumed, or a failed import that correctly left the name alone): fetch the
    pointer with PyCapsule_GetPointer and call the tensor's deleter if it is not NULL.
    """
    slots = _ErrorSlots()
    s0, s1, s2 = slots.slots
    r0, r1, r2 = slots.refs
    fetch = capi.fetch_error
    get_name, get_pointer = capi.raw_capsule_name, capi.raw_capsule_pointer
    layout = DLManagedTensorVersioned if record.versioned else DLManagedTensor

    def destructor(capsule_address):
        fetch(r0, r1, r2)
        pending_type, pending_value = s0.value, s1.value
        s0.value = s1.value = s2.value = None
        try:
            name = get_name(capsule_address)
            record.destructor_seen.append(name)
            if name is None or not name.startswith(b"used_"):
                pointer = get_pointer(capsule_address, name)
                if pointer:
                    # Read the deleter from the struct's memory, as C code would.
                    deleter = layout.from_address(pointer).deleter
                    if deleter:
                        deleter(pointer)
        except BaseException as exc:  # noqa: BLE001 - a callback must never raise
            record.destructor_errors.append(exc)
        if pending_type:
            _report_lost("capsule destructor", pending_type, pending_value)

    return capi.immortal(capi.CAPSULE_DESTRUCTOR(capi.immortal(destructor)))


# ---- managed tensors with any field values ------------------------------------------------


def _c_int64_array(values):
    if values is None:
        return None
    return (c_int64 * max(1, len(values)))(*values)


class ManagedRecord:
    """One hand-built managed tensor and everything it points to (kept alive forever)."""

    def __init__(self, struct_obj, versioned: bool, keep: list, data_address):
        self.struct = struct_obj
        self.versioned = versioned
        self.address = ctypes.addressof(struct_obj)
        self.keep = keep
        self.data_address = data_address  # the DLTensor.data value (None for NULL)
        self._deleter_calls = 0
        self.wrong_pointer_deleter_calls: list = []
        self.destructor_seen: list = []  # capsule names seen by destructor runs, in order
        self.destructor_errors: list = []
        self.deleter_fn = _make_deleter(self)
        _RECORDS[self.address] = self

    # -- observation ---------------------------------------------------------------------
    @property
    def deleter_calls(self) -> int:
        """How many times the deleter ran with this tensor's address."""
        return self._deleter_calls

    @property
    def dl_tensor(self) -> DLTensor:
        return self.struct.dl_tensor

    def first_element_address(self) -> int:
        return (self.data_address or 0) + self.struct.dl_tensor.byte_offset

    # -- capsules ------------------------------------------------------------------------
    def capsule(self, name: bytes | None = None, destructor: bool = True):
        """A new PyCapsule over this tensor. `name` defaults to the layout's proper name;
        NULL_NAME makes a capsule without a name."""
        if name is None:
            name = NAME_VERSIONED if self.versioned else NAME_LEGACY
        cname = None if name is NULL_NAME else capi.static_name(name)
        destructor_address = None
        if destructor:
            fn = _make_capsule_destructor(self)
            self.keep.append(fn)
            destructor_address = ctypes.cast(fn, c_void_p).value
        return capi.PyCapsule_New(self.address, cname, destructor_address)

    def call_deleter(self):
        """Call the deleter as a consumer would (used to release a tensor by hand)."""
        deleter = self.struct.deleter
        if deleter:
            deleter(self.address)

    def __repr__(self):
        kind = "versioned" if self.versioned else "legacy"
        return f"<ManagedRecord {kind} at {self.address:#x}, deleter_calls={self.deleter_calls}>"


def make_managed(
    shape=(2, 3),
    dtype="float32",
    *,
    versioned: bool = True,
    version=(1, 3),
    strides=AUTO,
    shape_null: bool = False,
    ndim=AUTO,
    data=AUTO,
    values: bytes | None = None,
    byte_offset: int = 0,
    device=(kDLCPU, 0),
    flags: int = 0,
    deleter: bool = True,
    manager_ctx=AUTO,
    buffer_bytes=AUTO,
) -> ManagedRecord:
    """Build a managed tensor with any field values.

    shape:   the extents written into the shape array (may be negative).
    dtype:   a name from DTYPES or a (code, bits, lanes) triple.
    strides: AUTO (row-major, in elements), None (NULL pointer) or a tuple.
    shape_null: write a NULL shape pointer (ndim stays len(shape) unless given).
    ndim:    override DLTensor.ndim.
    data:    AUTO (a fresh zeroed buffer big enough for the extents), None (NULL) or an int
             address used as is.
    values:  bytes copied to the start of the fresh buffer (with data=AUTO).
    buffer_bytes: size of the fresh buffer (AUTO: enough for shape/strides/dtype).
    version: (major, minor) of a versioned tensor.
    deleter: False writes a NULL deleter.
    manager_ctx: AUTO writes a non-NULL dummy (PaddlePaddle 3.3 skips the deleter of a tensor
             whose manager_ctx is NULL); None writes NULL.
    """
    dt = DTYPES[dtype] if isinstance(dtype, str) else tuple(dtype)
    shape = tuple(int(s) for s in shape)
    nd = len(shape) if ndim is AUTO else int(ndim)
    if strides is AUTO:
        strides = compact_strides(shape)
    keep: list = []

    shape_arr = None if shape_null else _c_int64_array(shape)
    strides_arr = None if strides is None else _c_int64_array(tuple(strides))
    keep += [shape_arr, strides_arr]

    data_address = None
    if data is AUTO:
        if buffer_bytes is AUTO:
            span = 1
            if all(e > 0 for e in shape):
                if strides is None:
                    span = 1
                    for e in shape:
                        span *= e
                else:
                    span = 1 + sum((e - 1) * abs(s) for e, s in zip(shape, strides))
            elif shape and any(e == 0 for e in shape):
                span = 0
            buffer_bytes = max(16, span * itemsize(dt) + byte_offset + 64)
        buf = (ctypes.c_char * buffer_bytes)()
        if values is not None:
            ctypes.memmove(buf, values, len(values))
        keep.append(buf)
        data_address = ctypes.addressof(buf)
    elif data is not None:
        data_address = int(data)

    tensor = DLTensor()
    tensor.data = data_address
    tensor.device = DLDevice(int(device[0]), int(device[1]))
    tensor.ndim = nd
    tensor.dtype = DLDataType(*dt)
    tensor.shape = ctypes.cast(shape_arr, POINTER(c_int64)) if shape_arr is not None else None
    tensor.strides = ctypes.cast(strides_arr, POINTER(c_int64)) if strides_arr is not None else None
    tensor.byte_offset = byte_offset

    if versioned:
        managed = DLManagedTensorVersioned()
        managed.version = DLPackVersion(*version)
        managed.flags = flags
    else:
        managed = DLManagedTensor()
    managed.dl_tensor = tensor
    managed.manager_ctx = ctypes.addressof(_DUMMY_CTX) if manager_ctx is AUTO else manager_ctx
    managed.deleter = DELETER()
    record = ManagedRecord(managed, versioned, keep, data_address)
    if deleter:
        managed.deleter = record.deleter_fn
    return record


def make_from_numpy(
    array, *, versioned: bool = True, version=(1, 3), flags: int = 0, strides=AUTO, dtype=AUTO
) -> ManagedRecord:
    """A managed tensor describing a numpy array's memory (the array is kept alive)."""
    import numpy as np

    if dtype is AUTO:
        dtype = np.dtype(array.dtype).name
    dt = DTYPES[dtype] if isinstance(dtype, str) else tuple(dtype)
    isz = itemsize(dt)
    if strides is AUTO:
        assert all(s % isz == 0 for s in array.strides)
        strides = tuple(s // isz for s in array.strides)
    record = make_managed(
        array.shape,
        dt,
        versioned=versioned,
        version=version,
        strides=strides,
        data=array.__array_interface__["data"][0] if array.size else array.ctypes.data,
        flags=flags,
    )
    record.keep.append(array)
    return record


def make_major2(*, deleter: bool = True, minor: int = 0) -> ManagedRecord:
    """A 'version 2.0' tensor: only version, manager_ctx and deleter are meaningful.

    Everything after the deleter is garbage that a correct consumer never reads: a poisoned
    flags word, ndim = 1<<30 and a shape pointer at address 8 (reading it would crash).
    """
    record = make_managed((2, 3), versioned=True, version=(2, minor), deleter=deleter)
    record.struct.flags = 0xFFFF_FFFF_FFFF_FFFF
    record.struct.dl_tensor.ndim = 1 << 30
    ctypes.memmove(
        ctypes.addressof(record.struct.dl_tensor) + DLTensor.shape.offset,
        struct.pack("<Q", 8),
        8,
    )
    record.struct.dl_tensor.strides = None
    record.struct.dl_tensor.data = 8
    record.struct.dl_tensor.dtype = DLDataType(250, 3, 7)
    return record
