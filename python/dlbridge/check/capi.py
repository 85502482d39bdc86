"""The few functions of Python's C API the checker calls through ctypes, each bound once.

`ctypes.pythonapi` hands out one function object per name, so the prototypes set here hold
for every user of `ctypes.pythonapi.PyCapsule_*` in the process. The functions a capsule
destructor or a tensor deleter calls are separate function objects: see each one's comment.
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, c_char_p, c_int, c_void_p, py_object

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

#: `void (*PyCapsule_Destructor)(PyObject *)`, the capsule taken as a raw address.
CAPSULE_DESTRUCTOR = CFUNCTYPE(None, c_void_p)

# Separate function objects for a capsule destructor, taking the capsule as a raw address
# (the capsule is being deallocated: no new reference may be taken to it).
raw_capsule_name = ctypes.PYFUNCTYPE(c_char_p, c_void_p)(("PyCapsule_GetName", _api))
raw_capsule_pointer = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(
    ("PyCapsule_GetPointer", _api)
)

# PyErr_Fetch through a fresh function object with no argtypes: its arguments are
# pre-made byref() objects, so calling it runs no Python-level conversion while an exception
# may be set, and the post-call error check of pythonapi functions sees the cleared state.
fetch_error = _api._FuncPtr(("PyErr_Fetch", _api))
fetch_error.restype = None

_api.Py_IncRef.argtypes = [py_object]
_api.Py_IncRef.restype = None

# A fresh function object, so that this prototype is not imposed on other users of
# `ctypes.pythonapi.Py_DecRef`.
Py_DecRef = _api._FuncPtr(("Py_DecRef", _api))
Py_DecRef.argtypes = [py_object]
Py_DecRef.restype = None


def immortal(obj):
    """`obj`, given a reference that is never dropped: a ctypes callback must not be freed,
    not even during interpreter shutdown when module dictionaries are cleared (a capsule or
    tensor that dies late must still find its code)."""
    _api.Py_IncRef(obj)
    return obj


_NAME_KEEPALIVE: dict[bytes, ctypes.Array] = {}


def static_name(name: bytes) -> c_char_p:
    """A never-freed NUL-terminated copy of `name`: PyCapsule keeps the `const char *` of its
    name, which must outlive every capsule."""
    buf = _NAME_KEEPALIVE.get(name)
    if buf is None:
        buf = ctypes.create_string_buffer(name)
        _NAME_KEEPALIVE[name] = buf
    return ctypes.cast(buf, c_char_p)
