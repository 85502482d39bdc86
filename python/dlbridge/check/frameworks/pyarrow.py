"""PyArrow, as the checker drives it: its tensors (`pa.Tensor`), `pa.Tensor.from_dlpack`, and
its catalogue.

Findings (pyarrow 26.0.1, CPU): pyarrow arrays are always exported READ_ONLY, tensors from
writable numpy arrays are not. Arrays with nulls, boolean (bit-packed) arrays and
non-numeric types are refused with `ArrowTypeError`, which is a subclass of TypeError: a
consumer following the protocol reads it as "old producer" and retries without max_version,
gets the same error again (and pyarrow warns DeprecationWarning on every legacy export). An
array whose nulls were sliced away exports fine. `ChunkedArray` has no `__dlpack__`. Its
tensors hold bool as uint8 (the matrix's bool cases are unsupported).
"""

from __future__ import annotations

import numpy as np

from .base import kind_list, read_only_copy

NAME = "pyarrow"
MODULE = "pyarrow"


def make(array):
    """A tensor over a copy of `array`."""
    import pyarrow as pa

    return pa.Tensor.from_numpy(np.array(array, copy=True))


def make_read_only(array):
    """A tensor over a read-only copy of `array`."""
    import pyarrow as pa

    return pa.Tensor.from_numpy(read_only_copy(array))


def make_view(view):
    """A tensor over the NumPy view, keeping its strides."""
    import pyarrow as pa

    return pa.Tensor.from_numpy(view)


def consume(obj):
    """`pa.Tensor.from_dlpack(obj)`."""
    import pyarrow as pa

    return pa.Tensor.from_dlpack(obj)


def consume_copy(obj):
    """`pa.Tensor.from_dlpack(obj, copy=True)`."""
    import pyarrow as pa

    return pa.Tensor.from_dlpack(obj, copy=True)


def to_numpy(result):
    """`result.to_numpy()`."""
    return result.to_numpy()


def read_only(result) -> bool:
    """Whether the tensor is not mutable."""
    return not result.is_mutable


def kinds() -> list:
    """PyArrow's arrays and tensors: nulls, slices, booleans, strings."""
    import pyarrow as pa

    entries = [
        (
            "float64",
            lambda: pa.array([1.0, 2.0, 3.0]),
            "pa.array float64 without nulls: always READ_ONLY",
        ),
        ("int32", lambda: pa.array([1, 2, 3], type=pa.int32()), "pa.array int32"),
        (
            "with_nulls",
            lambda: pa.array([1.0, None, 3.0]),
            "an array with nulls: refused with ArrowTypeError (a TypeError subclass)",
        ),
        (
            "tensor",
            lambda: pa.Tensor.from_numpy(np.arange(6.0).reshape(2, 3)),
            "pa.Tensor over a writable numpy array: no READ_ONLY",
        ),
        (
            "tensor_transposed",
            lambda: pa.Tensor.from_numpy(np.arange(6.0).reshape(2, 3).T),
            "pa.Tensor over a Fortran-ordered view: strides (1, 3)",
        ),
        (
            "tensor_read_only",
            lambda: pa.Tensor.from_numpy(np.broadcast_to(np.arange(3.0), (2, 3))),
            "pa.Tensor over a broadcast (read-only, stride 0) numpy view",
        ),
        (
            "bool",
            lambda: pa.array([True, False, True]),
            "bit-packed boolean array: refused with ArrowTypeError",
        ),
        (
            "sliced",
            lambda: pa.array([1.0, 2.0, 3.0, 4.0, 5.0]).slice(2),
            "slice(2): an array offset, data points past the buffer start",
        ),
        (
            "nulls_sliced_away",
            lambda: pa.array([None, 1.0, 2.0]).slice(1),
            "a slice without the null of an array with a validity bitmap: exports",
        ),
        ("empty", lambda: pa.array([], type=pa.float64()), "length 0: NULL data"),
        ("string", lambda: pa.array(["a", "b"]), "string array: refused with ArrowTypeError"),
        (
            "chunked_array",
            lambda: pa.chunked_array([[1.0, 2.0], [3.0]]),
            "ChunkedArray: no __dlpack__ (AttributeError)",
        ),
    ]
    return kind_list("pyarrow", entries)
