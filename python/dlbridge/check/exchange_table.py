"""DLPack 1.3's C exchange table (`DLPackExchangeAPI`) seen through ctypes.

The table's functions run with the GIL held and report errors as Python exceptions, so they
are called through `PYFUNCTYPE` prototypes, which keep the GIL and raise the error a call
left set.
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, POINTER, PYFUNCTYPE, Structure, c_char_p, c_int, c_int32, c_void_p

from .producers import DLManagedTensorVersioned, DLPackVersion, DLTensor

CAPSULE_NAME = b"dlpack_exchange_api"

SET_ERROR = CFUNCTYPE(None, c_void_p, c_char_p, c_char_p)
ALLOCATOR = PYFUNCTYPE(
    c_int, POINTER(DLTensor), POINTER(POINTER(DLManagedTensorVersioned)), c_void_p, SET_ERROR
)
FROM_PY_OBJECT = PYFUNCTYPE(c_int, c_void_p, POINTER(POINTER(DLManagedTensorVersioned)))
TO_PY_OBJECT = PYFUNCTYPE(c_int, POINTER(DLManagedTensorVersioned), POINTER(c_void_p))
DLTENSOR_FROM_PY_OBJECT = PYFUNCTYPE(c_int, c_void_p, POINTER(DLTensor))
CURRENT_WORK_STREAM = PYFUNCTYPE(c_int, c_int32, c_int32, POINTER(c_void_p))


class Header(Structure):
    """`DLPackExchangeAPIHeader`."""

    _fields_ = [("version", DLPackVersion), ("prev_api", c_void_p)]


class ExchangeAPI(Structure):
    """`DLPackExchangeAPI`: the header, then five function pointers."""

    _fields_ = [
        ("header", Header),
        ("managed_tensor_allocator", c_void_p),
        ("managed_tensor_from_py_object_no_sync", c_void_p),
        ("managed_tensor_to_py_object_no_sync", c_void_p),
        ("dltensor_from_py_object_no_sync", c_void_p),
        ("current_work_stream", c_void_p),
    ]


MEMBERS = [name for name, _ in ExchangeAPI._fields_[1:]]
PROTOTYPES = {
    "managed_tensor_allocator": ALLOCATOR,
    "managed_tensor_from_py_object_no_sync": FROM_PY_OBJECT,
    "managed_tensor_to_py_object_no_sync": TO_PY_OBJECT,
    "dltensor_from_py_object_no_sync": DLTENSOR_FROM_PY_OBJECT,
    "current_work_stream": CURRENT_WORK_STREAM,
}

_get_name = ctypes.pythonapi.PyCapsule_GetName
_get_name.restype = c_char_p
_get_name.argtypes = [ctypes.py_object]
_get_pointer = ctypes.pythonapi.PyCapsule_GetPointer
_get_pointer.restype = c_void_p
_get_pointer.argtypes = [ctypes.py_object, c_char_p]


def capsule_table(capsule) -> ExchangeAPI:
    """The table in a `dlpack_exchange_api` capsule; ValueError for anything else."""
    if type(capsule).__name__ != "PyCapsule":
        raise ValueError(f"expected a capsule, got {type(capsule).__name__}")
    name = _get_name(capsule)
    if name != CAPSULE_NAME:
        raise ValueError(f"the capsule is named {name!r}, not {CAPSULE_NAME!r}")
    return ExchangeAPI.from_address(_get_pointer(capsule, CAPSULE_NAME))


def major_one(table: ExchangeAPI, limit: int = 16):
    """The first table of major version 1 along `prev_api`, or None."""
    for _ in range(limit):
        if table.header.version.major == 1:
            return table
        if not table.header.prev_api:
            return None
        table = ExchangeAPI.from_address(table.header.prev_api)
    return None


def function(table: ExchangeAPI, member: str):
    """A callable for a member of the table (None when it is NULL)."""
    address = getattr(table, member)
    return PROTOTYPES[member](address) if address else None


def free(tensor_pointer) -> None:
    """Calls the deleter of a `DLManagedTensorVersioned*` handed out by the table."""
    managed = tensor_pointer.contents
    if managed.deleter:
        managed.deleter(ctypes.addressof(managed))
