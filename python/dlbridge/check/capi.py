"""The few functions of Python's C API the checker calls through ctypes, each bound once.

`ctypes.pythonapi` hands out one function object per name, shared by every user in the
process: a prototype set on it would hold for all of them, and break those that call it with
other argument types (MXNet's capsule destructor passes the capsule as a `c_void_p` to
`ctypes.pythonapi.PyCapsule_GetPointer`; with `py_object` there, it fails and MXNet's tensor
is never released). So every function here is a separate function object of its own (`_bind`).
"""

from __future__ import annotations

import ctypes
from ctypes import CFUNCTYPE, c_char_p, c_int, c_void_p, py_object

_api = ctypes.pythonapi


def _bind(name: str, restype, *argtypes):
    """A function object of its own for the C API function `name` (see the module's
    docstring), with this prototype; Python's error indicator is checked after each call, as
    for `ctypes.pythonapi`'s functions."""
    function = _api._FuncPtr((name, _api))
    function.argtypes = list(argtypes)
    function.restype = restype
    return function


PyCapsule_New = _bind("PyCapsule_New", py_object, c_void_p, c_char_p, c_void_p)
PyCapsule_GetName = _bind("PyCapsule_GetName", c_char_p, py_object)
PyCapsule_GetPointer = _bind("PyCapsule_GetPointer", c_void_p, py_object, c_char_p)
PyCapsule_SetName = _bind("PyCapsule_SetName", c_int, py_object, c_char_p)
PyCapsule_GetDestructor = _bind("PyCapsule_GetDestructor", c_void_p, py_object)

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

Py_IncRef = _bind("Py_IncRef", None, py_object)
Py_DecRef = _bind("Py_DecRef", None, py_object)


def immortal(obj):
    """`obj`, given a reference that is never dropped: a ctypes callback must not be freed,
    not even during interpreter shutdown when module dictionaries are cleared (a capsule or
    tensor that dies late must still find its code)."""
    Py_IncRef(obj)
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
