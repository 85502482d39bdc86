"""The C ABI of `dlpack.h` (v1.3, and the enumerators DLPack's main branch added after it) in
ctypes, written from the header's field list: constants, the tensor structs, the names of
DLPack capsules, and the C exchange table (`DLPackExchangeAPI`).

Nothing here calls anything: reading capsules is `capsules`, building tensors `records`.
The C exchange table's functions run with the GIL held and report errors as Python
exceptions, so their prototypes are `PYFUNCTYPE`s, which keep the GIL and raise the error a
call left set.
"""

from __future__ import annotations

import ctypes
from ctypes import (
    CFUNCTYPE,
    POINTER,
    PYFUNCTYPE,
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
)

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
# After the 1.3 tag, on DLPack's main branch: dmlc/dlpack#188 (TPU, TPUHost), #189 (Ascend).
kDLTPU = 19
kDLTPUHost = 20
kDLAscend = 21

#: Device types whose memory the host can read directly.
HOST_DEVICES = frozenset({kDLCPU, kDLCUDAHost, kDLROCMHost, kDLCUDAManaged, kDLTPUHost})

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
# After the 1.3 tag, on DLPack's main branch (dmlc/dlpack#187): two bfloat16s, 32 bits.
kDLBcomplex = 18


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
    "bcomplex32": (kDLBcomplex, 32, 1),
}


def itemsize(code_bits_lanes) -> int:
    """Bytes per element of a byte-addressable dtype (ceil(bits * lanes / 8))."""
    _, bits, lanes = code_bits_lanes
    return (bits * lanes + 7) // 8


def compact_strides(shape) -> tuple[int, ...]:
    """The strides, in elements, of a compact row-major tensor: what NULL strides mean."""
    strides, acc = [], 1
    for extent in reversed(shape):
        strides.append(acc)
        acc *= max(extent, 1)
    return tuple(reversed(strides))


# ---- capsules -----------------------------------------------------------------------------

# Capsule names of the Python specification. PyCapsule keeps the `const char *` of its name:
# `capi.static_name` makes the never-freed C strings.
NAME_LEGACY = b"dltensor"
NAME_VERSIONED = b"dltensor_versioned"
NAME_USED_LEGACY = b"used_dltensor"
NAME_USED_VERSIONED = b"used_dltensor_versioned"
NAME_EXCHANGE_API = b"dlpack_exchange_api"

# ---- the C exchange table -----------------------------------------------------------------

SET_ERROR = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p)
ALLOCATOR = PYFUNCTYPE(
    c_int, POINTER(DLTensor), POINTER(POINTER(DLManagedTensorVersioned)), c_void_p, SET_ERROR
)
FROM_PY_OBJECT = PYFUNCTYPE(c_int, c_void_p, POINTER(POINTER(DLManagedTensorVersioned)))
TO_PY_OBJECT = PYFUNCTYPE(c_int, POINTER(DLManagedTensorVersioned), POINTER(c_void_p))
DLTENSOR_FROM_PY_OBJECT = PYFUNCTYPE(c_int, c_void_p, POINTER(DLTensor))
CURRENT_WORK_STREAM = PYFUNCTYPE(c_int, c_int32, c_int32, POINTER(c_void_p))


class DLPackExchangeAPIHeader(Structure):
    _fields_ = [("version", DLPackVersion), ("prev_api", c_void_p)]


class DLPackExchangeAPI(Structure):
    """The header, then five function pointers."""

    _fields_ = [
        ("header", DLPackExchangeAPIHeader),
        ("managed_tensor_allocator", c_void_p),
        ("managed_tensor_from_py_object_no_sync", c_void_p),
        ("managed_tensor_to_py_object_no_sync", c_void_p),
        ("dltensor_from_py_object_no_sync", c_void_p),
        ("current_work_stream", c_void_p),
    ]


EXCHANGE_MEMBERS = [name for name, _ in DLPackExchangeAPI._fields_[1:]]
EXCHANGE_PROTOTYPES = {
    "managed_tensor_allocator": ALLOCATOR,
    "managed_tensor_from_py_object_no_sync": FROM_PY_OBJECT,
    "managed_tensor_to_py_object_no_sync": TO_PY_OBJECT,
    "dltensor_from_py_object_no_sync": DLTENSOR_FROM_PY_OBJECT,
    "current_work_stream": CURRENT_WORK_STREAM,
}
