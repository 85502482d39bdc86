"""NumPy, as the checker drives it: its arrays, `np.from_dlpack`, and its catalogue.

Findings (numpy 2.4, CPU): masked arrays export their data with the mask ignored (masked
slots come through as ordinary values); np.matrix exports as a plain 2-d array; the unaligned
float64 view exports a data pointer that is not 8-byte aligned (address % 8 == 1). A field of
packed (i4, f8) records (byte stride 12) is refused: numpy only exports strides that are a
multiple of the itemsize. Read-only and broadcast arrays carry READ_ONLY on the versioned path
and are refused (BufferError) on the legacy path. Zero-size arrays come with strides (0, 0);
0-d ones with NULL shape and strides. numpy writes version 1.0.
"""

from __future__ import annotations

import numpy as np

from .base import kind_list, read_only_copy

NAME = "numpy"
MODULE = "numpy"

#: The NumPy dtypes catalogued as one kind each (`dtype_<name>`).
NUMPY_DTYPES = (
    "bool",
    *(f"{sign}int{bits}" for sign in ("", "u") for bits in (8, 16, 32, 64)),
    *("float16", "float32", "float64", "complex64", "complex128"),
)


def make(array):
    """A copy of `array`."""
    return np.array(array, copy=True)


#: Its from_dlpack.
consume = np.from_dlpack
#: A result read back (it is an array).
to_numpy = np.asarray
#: A read-only copy of an array.
make_read_only = read_only_copy


def consume_copy(obj):
    """`np.from_dlpack(obj, copy=True)`."""
    return np.from_dlpack(obj, copy=True)


def read_only(result) -> bool:
    """Whether the array is not writeable."""
    return not result.flags.writeable


def kinds() -> list:
    """NumPy's odd arrays: read-only, byte-swapped, structured, subclasses, every dtype."""

    def read_only():
        a = np.arange(6.0).reshape(2, 3)
        a.flags.writeable = False
        return a

    def structured():
        return np.array([(1, 2.0), (3, 4.0)], dtype=[("a", "i4"), ("b", "f8")])

    def unaligned():
        buffer = b"\x00" + np.arange(4.0).tobytes()
        return np.frombuffer(buffer, dtype=np.float64, count=4, offset=1)

    entries = [
        (
            "read_only",
            read_only,
            "writeable=False: READ_ONLY on the versioned path, refused on the legacy path",
            {"expected": np.arange(6.0).reshape(2, 3), "read_only": True},
        ),
        (
            "byte_swapped",
            lambda: np.arange(6, dtype=">f4").reshape(2, 3),
            "big-endian '>f4': refused (BufferError, native byte order only)",
        ),
        ("structured", structured, "structured dtype: refused (BufferError)"),
        (
            "object",
            lambda: np.array([1, "a", None], dtype=object),
            "object dtype: refused (BufferError)",
        ),
        ("negative_strides", lambda: np.arange(5.0)[::-1], "a[::-1]: stride -1"),
        (
            "broadcast",
            lambda: np.broadcast_to(np.arange(3.0), (4, 3)),
            "np.broadcast_to: stride 0 and read-only",
            {"expected": np.broadcast_to(np.arange(3.0), (4, 3)).copy(), "read_only": True},
        ),
        (
            "zero_size",
            lambda: np.empty((0, 3)),
            "shape (0, 3): numpy sends strides (0, 0)",
            {"expected": np.empty((0, 3))},
        ),
        ("zero_dim", lambda: np.array(3.5), "0-d array: NULL shape and strides"),
        (
            "longdouble",
            lambda: np.arange(3, dtype=np.longdouble),
            "longdouble (x87 80-bit in 16 bytes): refused (BufferError)",
        ),
        (
            "datetime64",
            lambda: np.arange(3).astype("datetime64[s]"),
            "datetime64: refused (BufferError)",
        ),
        ("unicode", lambda: np.array(["ab", "c"]), "unicode '<U2': refused (BufferError)"),
        (
            "masked_array",
            lambda: np.ma.masked_array([1.0, 2.0, 3.0], mask=[0, 1, 0]),
            "np.ma masked array: exports its data, the mask is ignored",
        ),
        (
            "matrix",
            lambda: np.matrix([[1.0, 2.0], [3.0, 4.0]]),
            "np.matrix subclass: exports as a plain 2-d array",
        ),
        (
            "recarray",
            lambda: structured().view(np.recarray),
            "recarray view of a structured array: refused (BufferError)",
        ),
        (
            "recarray_field",
            lambda: structured().view(np.recarray).b,
            "float64 field of packed (i4, f8) records: byte stride 12, refused (BufferError)",
        ),
        (
            "recarray_field_aligned",
            lambda: np.rec.fromarrays([np.arange(3.0), np.arange(3.0) + 10], names="a,b").b,
            "float64 field of (f8, f8) records: stride 2 (elements), data 8 bytes in",
        ),
        (
            "unaligned_float64",
            unaligned,
            "float64 from a bytes buffer at offset 1: misaligned data, read-only (bytes)",
        ),
        (
            "fortran_order",
            lambda: np.asfortranarray(np.arange(6.0).reshape(2, 3)),
            "Fortran-ordered (2, 3): strides (1, 2)",
        ),
        (
            "noncontiguous_slice",
            lambda: np.arange(20.0).reshape(4, 5)[::2, 1:4],
            "a[::2, 1:4] of (4, 5): strides (10, 1), data past the buffer start",
        ),
    ]
    for name in NUMPY_DTYPES:

        def make(name=name):
            values = np.arange(1, 7).reshape(2, 3)
            if name.startswith("complex"):
                values = values + 0.5j * values[::-1, ::-1]
            return values.astype(name)

        entries.append((f"dtype_{name}", make, f"a (2, 3) array of {name}", {"expected": make()}))
    return kind_list("numpy", entries)
