"""A hostile DLPack producer toolkit built on ctypes (used by `dlbridge check` and the tests).

It builds `DLManagedTensor` / `DLManagedTensorVersioned` structs with *any* field values
(negative extents, NULL shape, NULL data, major version 2, NULL deleter, NULL strides in a
1.3 tensor, ...), wraps them in PyCapsules whose destructor follows the DLPack Python
specification, and counts how often each tensor's deleter runs.

Nothing built here is ever freed: every struct, shape/strides array, data buffer and ctypes
callback lives in a module-level registry until the process exits, so a consumer that calls
a deleter twice, or reads a tensor after its deleter ran, sees valid memory and the double
call shows up in `ManagedRecord.deleter_calls` instead of as a crash.

Limitation of ctypes callbacks (CPython 3.11): a ctypes callback cannot run Python code
while an exception is set and then leave that exception set; CPython's call machinery turns
it into "SystemError: error return without exception set". Some consumers (numpy, pyarrow)
release a capsule while their own error is already set. So each callback first takes any
in-flight exception out of the way with PyErr_Fetch (deleter counts stay right) and records
it in LOST_EXCEPTIONS, which conftest.py turns into a test failure naming the lost exception.
The tests bind capsules, producers and tensors to local names and release them with `del` +
collect() once no exception is in flight, so this only fires if a consumer releases one of
our capsules while its error indicator is set.
"""

from __future__ import annotations

import ctypes
import enum
import gc
import struct
from ctypes import (
    CFUNCTYPE,
    POINTER,
    Structure,
    c_char_p,
    c_int,
    c_int32,
    c_int64,
    c_uint8,
    c_uint16,
    c_uint32,
    c_uint64,
    c_void_p,
    py_object,
)

# --------------------------------------------------------------------------------------------
# The C ABI of dlpack.h (v1.3), written from the header's field list.
# --------------------------------------------------------------------------------------------

DLPACK_MAJOR_VERSION = 1
DLPACK_MINOR_VERSION = 3

FLAG_READ_ONLY = 1 << 0
FLAG_IS_COPIED = 1 << 1
FLAG_IS_SUBBYTE_TYPE_PADDED = 1 << 2

# DLDeviceType
kDLCPU = 1
kDLCUDA = 2
kDLCUDAHost = 3
kDLOpenCL = 4
kDLVulkan = 7
kDLMetal = 8
kDLVPI = 9
kDLROCM = 10
kDLROCMHost = 11
kDLExtDev = 12
kDLCUDAManaged = 13
kDLOneAPI = 14
kDLWebGPU = 15
kDLHexagon = 16
kDLMAIA = 17
kDLTrn = 18

# DLDataTypeCode
kDLInt = 0
kDLUInt = 1
kDLFloat = 2
kDLOpaqueHandle = 3
kDLBfloat = 4
kDLComplex = 5
kDLBool = 6
kDLFloat8_e3m4 = 7
kDLFloat8_e4m3 = 8
kDLFloat8_e4m3b11fnuz = 9
kDLFloat8_e4m3fn = 10
kDLFloat8_e4m3fnuz = 11
kDLFloat8_e5m2 = 12
kDLFloat8_e5m2fnuz = 13
kDLFloat8_e8m0fnu = 14
kDLFloat6_e2m3fn = 15
kDLFloat6_e3m2fn = 16
kDLFloat4_e2m1fn = 17


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLDevice(Structure):
    # DLDeviceType is a C enum (int-sized, `int32_t` in C++).
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [
        ("data", c_void_p),
        ("device", DLDevice),
        ("ndim", c_int32),
        ("dtype", DLDataType),
        ("shape", POINTER(c_int64)),
        ("strides", POINTER(c_int64)),
        ("byte_offset", c_uint64),
    ]


# `void (*deleter)(struct DLManagedTensor[Versioned] *self)`: a pointer argument either way;
# declaring it as `void *` lets one callback serve both layouts.
DELETER = CFUNCTYPE(None, c_void_p)


class DLManagedTensor(Structure):
    _fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", DELETER)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [
        ("version", DLPackVersion),
        ("manager_ctx", c_void_p),
        ("deleter", DELETER),
        ("flags", c_uint64),
        ("dl_tensor", DLTensor),
    ]


assert ctypes.sizeof(DLPackVersion) == 8
assert ctypes.sizeof(DLDevice) == 8
assert ctypes.sizeof(DLDataType) == 4
assert ctypes.sizeof(DLTensor) == 48
assert ctypes.sizeof(DLManagedTensor) == 64
assert ctypes.sizeof(DLManagedTensorVersioned) == 80
assert DLManagedTensorVersioned.deleter.offset == 16
assert DLManagedTensorVersioned.dl_tensor.offset == 32
assert DLManagedTensor.deleter.offset == 56

# dtype name -> (code, bits, lanes), using the names dlbridge reports.
DTYPES = {
    "bool": (kDLBool, 8, 1),
    "int8": (kDLInt, 8, 1),
    "int16": (kDLInt, 16, 1),
    "int32": (kDLInt, 32, 1),
    "int64": (kDLInt, 64, 1),
    "uint8": (kDLUInt, 8, 1),
    "uint16": (kDLUInt, 16, 1),
    "uint32": (kDLUInt, 32, 1),
    "uint64": (kDLUInt, 64, 1),
    "float16": (kDLFloat, 16, 1),
    "float32": (kDLFloat, 32, 1),
    "float64": (kDLFloat, 64, 1),
    "bfloat16": (kDLBfloat, 16, 1),
    "complex64": (kDLComplex, 64, 1),
    "complex128": (kDLComplex, 128, 1),
    "float8_e3m4": (kDLFloat8_e3m4, 8, 1),
    "float8_e4m3": (kDLFloat8_e4m3, 8, 1),
    "float8_e4m3b11fnuz": (kDLFloat8_e4m3b11fnuz, 8, 1),
    "float8_e4m3fn": (kDLFloat8_e4m3fn, 8, 1),
    "float8_e4m3fnuz": (kDLFloat8_e4m3fnuz, 8, 1),
    "float8_e5m2": (kDLFloat8_e5m2, 8, 1),
    "float8_e5m2fnuz": (kDLFloat8_e5m2fnuz, 8, 1),
    "float8_e8m0fnu": (kDLFloat8_e8m0fnu, 8, 1),
}


def itemsize(code_bits_lanes) -> int:
    """Bytes per element of a byte-addressable dtype (ceil(bits * lanes / 8))."""
    _, bits, lanes = code_bits_lanes
    return (bits * lanes + 7) // 8


# --------------------------------------------------------------------------------------------
# Python C API through ctypes.
# --------------------------------------------------------------------------------------------

_api = ctypes.pythonapi

PyCapsule_New = _api.PyCapsule_New
PyCapsule_New.argtypes = [c_void_p, c_char_p, c_void_p]
PyCapsule_New.restype = py_object

PyCapsule_GetName = _api.PyCapsule_GetName
PyCapsule_GetName.argtypes = [py_object]
PyCapsule_GetName.restype = c_char_p

PyCapsule_GetPointer = _api.PyCapsule_GetPointer
PyCapsule_GetPointer.argtypes = [py_object, c_char_p]
PyCapsule_GetPointer.restype = c_void_p

PyCapsule_SetName = _api.PyCapsule_SetName
PyCapsule_SetName.argtypes = [py_object, c_char_p]
PyCapsule_SetName.restype = c_int

PyCapsule_IsValid = _api.PyCapsule_IsValid
PyCapsule_IsValid.argtypes = [py_object, c_char_p]
PyCapsule_IsValid.restype = c_int

PyCapsule_GetDestructor = _api.PyCapsule_GetDestructor
PyCapsule_GetDestructor.argtypes = [py_object]
PyCapsule_GetDestructor.restype = c_void_p

# Separate function objects for the destructor callback, taking the capsule as a raw
# address (the capsule is being deallocated: no new reference may be taken to it).
_raw_get_name = ctypes.PYFUNCTYPE(c_char_p, c_void_p)(("PyCapsule_GetName", _api))
_raw_get_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))

# Static C strings for capsule names: PyCapsule keeps the `const char *`, so the bytes
# objects must outlive every capsule. These module-level constants are never freed.
NAME_LEGACY = b"dltensor"
NAME_VERSIONED = b"dltensor_versioned"
NAME_USED_LEGACY = b"used_dltensor"
NAME_USED_VERSIONED = b"used_dltensor_versioned"
NULL_NAME = object()  # ManagedRecord.capsule(NULL_NAME): a capsule whose name is NULL
_NAME_KEEPALIVE: dict[bytes, ctypes.Array] = {}


def _static_name(name: bytes) -> ctypes.Array:
    """A never-freed NUL-terminated copy of `name` (capsule names must be static)."""
    buf = _NAME_KEEPALIVE.get(name)
    if buf is None:
        buf = ctypes.create_string_buffer(name)
        _NAME_KEEPALIVE[name] = buf
    return buf


# --------------------------------------------------------------------------------------------
# The registry and the callbacks.
# --------------------------------------------------------------------------------------------

# address of a managed struct -> ManagedRecord, kept forever (nothing is ever freed).
_RECORDS: dict[int, "ManagedRecord"] = {}
# exceptions that were in flight when one of our ctypes callbacks ran (see module docstring).
LOST_EXCEPTIONS: list = []

# PyErr_Fetch through a fresh function object with no argtypes: its arguments are
# pre-made byref() objects, so calling it runs no Python-level conversion while an exception
# may be set, and the post-call error check of pythonapi functions sees the cleared state.
_fetch_error = _api._FuncPtr(("PyErr_Fetch", _api))
_fetch_error.restype = None


class _ErrorSlots:
    """Three PyObject* slots for PyErr_Fetch, with their byref() objects made in advance."""

    def __init__(self):
        self.slots = (c_void_p(), c_void_p(), c_void_p())
        self.refs = tuple(ctypes.byref(s) for s in self.slots)


def _report_lost(where, type_address, value_address):
    """Record (never raise) an exception that a callback had to take out of flight."""
    try:
        exc_type = ctypes.cast(c_void_p(type_address), py_object).value
        exc_value = (
            ctypes.cast(c_void_p(value_address), py_object).value if value_address else None
        )
        LOST_EXCEPTIONS.append((where, exc_type, exc_value))
        import sys

        sys.stderr.write(
            f"_producers: a {where} ran while {exc_type.__name__}: {exc_value!r} was being "
            "raised; ctypes callbacks cannot put it back (test-toolkit limitation)\n"
        )
    except BaseException:  # noqa: BLE001 - a callback must never raise
        pass


CAPSULE_DESTRUCTOR = CFUNCTYPE(None, c_void_p)

# Never let a callback be freed, not even during interpreter shutdown when module
# dictionaries are cleared: a capsule or tensor that dies late must still find its code.
_api.Py_IncRef.argtypes = [py_object]
_api.Py_IncRef.restype = None


def _immortal(obj):
    _api.Py_IncRef(obj)
    return obj


def _make_deleter(record):
    """The tensor deleter: counts calls on `record`; per-tensor so it shares no state."""
    slots = _ErrorSlots()
    s0, s1, s2 = slots.slots
    r0, r1, r2 = slots.refs
    fetch = _fetch_error
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

    return _immortal(DELETER(_immortal(deleter)))


def _make_capsule_destructor(record):
    """A capsule destructor that follows the DLPack Python specification.

    A `used_*` name means a consumer took ownership: do nothing. Any other name means nobody
    did (never consumed, or a failed import that correctly left the name alone): fetch the
    pointer with PyCapsule_GetPointer and call the tensor's deleter if it is not NULL.
    """
    slots = _ErrorSlots()
    s0, s1, s2 = slots.slots
    r0, r1, r2 = slots.refs
    fetch = _fetch_error
    get_name, get_pointer = _raw_get_name, _raw_get_pointer
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

    return _immortal(CAPSULE_DESTRUCTOR(_immortal(destructor)))


# --------------------------------------------------------------------------------------------
# Managed tensors with any field values.
# --------------------------------------------------------------------------------------------

AUTO = object()  # "compute the natural value"
_DUMMY_CTX = ctypes.c_int64(0)  # what manager_ctx points at by default (never read)


def _c_int64_array(values):
    if values is None:
        return None
    arr = (c_int64 * max(1, len(values)))(*values)
    return arr


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
        cname = None if name is NULL_NAME else _static_name(name)
        destructor_address = None
        if destructor:
            fn = _make_capsule_destructor(self)
            self.keep.append(fn)
            destructor_address = ctypes.cast(fn, c_void_p).value
        return PyCapsule_New(
            self.address, None if cname is None else ctypes.cast(cname, c_char_p),
            destructor_address,
        )

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
        st, acc = [], 1
        for extent in reversed(shape):
            st.append(acc)
            acc *= max(extent, 1)
        strides = tuple(reversed(st))
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
    tensor.strides = (
        ctypes.cast(strides_arr, POINTER(c_int64)) if strides_arr is not None else None
    )
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


def make_from_numpy(array, *, versioned: bool = True, version=(1, 3), flags: int = 0,
                    strides=AUTO, dtype=AUTO) -> ManagedRecord:
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


# --------------------------------------------------------------------------------------------
# Reading capsules made by others (dlbridge's exports) without consuming them.
# --------------------------------------------------------------------------------------------


def capsule_name(capsule) -> bytes | None:
    return PyCapsule_GetName(capsule)


def read_capsule(capsule) -> dict:
    """Decode the managed tensor inside an unconsumed `dltensor[_versioned]` capsule."""
    name = PyCapsule_GetName(capsule)
    pointer = PyCapsule_GetPointer(capsule, name)
    if name == NAME_VERSIONED:
        managed = DLManagedTensorVersioned.from_address(pointer)
        version = (managed.version.major, managed.version.minor)
        flags = managed.flags
    elif name == NAME_LEGACY:
        managed = DLManagedTensor.from_address(pointer)
        version, flags = None, None
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    t = managed.dl_tensor
    ndim = t.ndim
    shape = tuple(t.shape[i] for i in range(ndim)) if t.shape else None
    strides = tuple(t.strides[i] for i in range(ndim)) if t.strides else None
    return {
        "name": name,
        "address": pointer,
        "version": version,
        "flags": flags,
        "data": t.data,
        "byte_offset": t.byte_offset,
        "device": (t.device.device_type, t.device.device_id),
        "ndim": ndim,
        "dtype": (t.dtype.code, t.dtype.bits, t.dtype.lanes),
        "shape": shape,
        "strides": strides,
        "has_deleter": bool(managed.deleter),
        "manager_ctx": managed.manager_ctx,
    }


def consume_capsule(capsule):
    """Take ownership as a consumer: rename to used_* and return (pointer, deleter, name).

    The caller must call `release(pointer, deleter)` exactly once.
    """
    name = PyCapsule_GetName(capsule)
    pointer = PyCapsule_GetPointer(capsule, name)
    if name == NAME_VERSIONED:
        deleter = DLManagedTensorVersioned.from_address(pointer).deleter
        used = NAME_USED_VERSIONED
    elif name == NAME_LEGACY:
        deleter = DLManagedTensor.from_address(pointer).deleter
        used = NAME_USED_LEGACY
    else:
        raise ValueError(f"not an unconsumed DLPack capsule: {name!r}")
    if PyCapsule_SetName(capsule, ctypes.cast(_static_name(used), c_char_p)) != 0:
        raise RuntimeError("PyCapsule_SetName failed")
    return pointer, deleter, name


def release(pointer, deleter):
    """Call a foreign deleter (ctypes releases the GIL around the call, as C code might)."""
    if deleter:
        deleter(pointer)


# --------------------------------------------------------------------------------------------
# Python producer objects.
# --------------------------------------------------------------------------------------------


class CPUDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2


class RecordingProducer:
    """A well-behaved producer over hand-made tensors that records how it was called.

    `calls` holds one dict per `__dlpack__` call with exactly the keywords the consumer passed.
    It returns a legacy capsule when max_version is absent/None/major<1, else a versioned one.
    `device` is what `__dlpack_device__` reports (the tensor itself always says CPU).
    """

    def __init__(self, shape=(2, 3), dtype="float32", *, device=(kDLCPU, 0), values=None,
                 honour_copy: bool = False, flags: int = 0, refuse_device: bool = False):
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.values = values
        self.flags = flags
        self.honour_copy = honour_copy
        self.refuse_device = refuse_device
        self.calls: list[dict] = []
        self.records: list[ManagedRecord] = []
        self.buffer_record = make_managed(shape, dtype, values=values)  # the "original" memory

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        unknown = set(kwargs) - {"stream", "max_version", "dl_device", "copy"}
        if unknown:
            raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
        dl_device = kwargs.get("dl_device")
        if self.refuse_device and dl_device is not None and tuple(dl_device) != (kDLCPU, 0):
            raise BufferError(f"cannot export to device {dl_device}")
        max_version = kwargs.get("max_version")
        versioned = max_version is not None and max_version[0] >= 1
        flags = self.flags
        data = self.buffer_record.data_address
        copy = kwargs.get("copy")
        if copy and self.honour_copy:
            fresh = make_managed(self.shape, self.dtype, values=self.values)
            data = fresh.data_address
            self.records.append(fresh)  # keeps the buffer alive
            flags |= FLAG_IS_COPIED
        record = make_managed(
            self.shape, self.dtype, versioned=versioned, data=data, flags=flags if versioned else 0
        )
        record.keep.append(self.buffer_record)
        self.records.append(record)
        return record.capsule()


class FixedCapsuleProducer:
    """`__dlpack__` returns whatever `factory()` returns (a capsule, None, an int, ...)."""

    def __init__(self, factory, device=(kDLCPU, 0)):
        self.factory = factory
        self.device = device
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append(
            {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        )
        return self.factory()


class OneTensorProducer:
    """`__dlpack__` hands out one capsule over a given ManagedRecord (once)."""

    def __init__(self, record: ManagedRecord, device=(kDLCPU, 0), name: bytes | None = None):
        self.record = record
        self.device = device
        self.name = name
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        return self.record.capsule(self.name)


class NoneProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: None)


class IntProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: 42)


class NotACapsuleProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: b"dltensor")


class AlwaysTypeErrorProducer:
    """Raises TypeError for every call pattern (as an object with a broken __dlpack__)."""

    def __init__(self):
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, *args, **kwargs):
        self.calls.append(dict(kwargs))
        raise TypeError("this producer refuses every call")


class OldProducer:
    """A pre-2023 producer: `__dlpack__(self, stream=None)`; passing max_version is a
    TypeError raised by Python itself. It returns legacy capsules."""

    def __init__(self, shape=(2, 3), dtype="float32", values=None):
        self.calls: list[dict] = []
        self.shape, self.dtype, self.values = shape, dtype, values
        self.records: list[ManagedRecord] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, stream=None):
        self.calls.append({} if stream is None else {"stream": stream})
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class OldestProducer(OldProducer):
    """`__dlpack__(self)` with no parameters at all."""

    def __dlpack__(self):  # type: ignore[override]
        self.calls.append({})
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class TypeErrorOnMaxVersionProducer(OldProducer):
    """Accepts every keyword in its signature but raises TypeError when max_version is
    passed (some producers check explicitly rather than by signature)."""

    def __dlpack__(self, **kwargs):  # type: ignore[override]
        self.calls.append(dict(kwargs))
        if "max_version" in kwargs:
            raise TypeError("max_version is not supported")
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class BufferErrorProducer:
    def __init__(self, message="this tensor cannot be exported"):
        self.message = message
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        raise BufferError(self.message)


def collect():
    """Run the garbage collector until nothing more is freed."""
    for _ in range(3):
        if gc.collect() == 0:
            break
