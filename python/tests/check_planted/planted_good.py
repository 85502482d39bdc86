"""plantedlib (plantedlib.py, beside this file), described for `dlbridge check` as its author
would describe it (docs/check-frameworks.md):

    python -m dlbridge check python/tests/check_planted/planted_good.py

The library as described here has no bug planted (`BUGS`): it conforms. planted_bugs.py
describes it with the bugs that the environment variable PLANTED_BUGS names.
"""

from __future__ import annotations

import pathlib
import sys

import numpy as np

from dlbridge.check import Kind

# plantedlib lies beside this description, which the checker loads by its file name.
_HERE = str(pathlib.Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

NAME = "plantedlib"
MODULE = "plantedlib"
#: The bugs planted in the tensors made here and in the consumer (none: planted_bugs.py sets
#: them on its own copy of this module).
BUGS: frozenset = frozenset()


def version() -> str:
    import plantedlib

    return plantedlib.__version__


def make(array):
    """A plantedlib tensor holding a copy of the array's values."""
    import plantedlib

    return plantedlib.Tensor(array, bugs=BUGS)


def make_read_only(array):
    """A plantedlib tensor whose data may not be written."""
    import plantedlib

    return plantedlib.Tensor(array, read_only=True, bugs=BUGS)


def consume(obj):
    """plantedlib.from_dlpack(obj)."""
    import plantedlib

    return plantedlib.from_dlpack(obj, bugs=BUGS)


def consume_copy(obj):
    """plantedlib.from_dlpack(obj, copy=True)."""
    import plantedlib

    return plantedlib.from_dlpack(obj, copy=True, bugs=BUGS)


def to_numpy(result):
    """A result of consume, read back."""
    return result.numpy()


def read_only(result) -> bool:
    """Whether a result of consume may not be written (never: plantedlib copies)."""
    return result.readonly


def kinds() -> list:
    """plantedlib's odd tensors, with the values each holds."""
    import plantedlib

    def tensor(values, **options):
        return plantedlib.Tensor(values, bugs=BUGS, **options)

    grid = np.arange(6.0).reshape(2, 3)
    wide = np.array([2**40 + 3, -(2**40) - 5, 7], dtype=np.int64)
    return [
        Kind(
            NAME,
            "read_only",
            lambda: tensor(grid, read_only=True),
            "read-only data: READ_ONLY on the versioned path, refused on the legacy path",
            expected=grid,
            read_only=True,
        ),
        Kind(
            NAME,
            "frozen_bytes",
            lambda: plantedlib.FrozenBytes(b"\x01\x02\x03\x04", bugs=BUGS),
            "a tensor over immutable bytes (its buffer is read-only)",
            expected=np.array([1, 2, 3, 4], dtype=np.uint8),
            read_only=True,
        ),
        Kind(
            NAME,
            "zero_size",
            lambda: tensor(np.zeros((0, 3), np.float32)),
            "no elements: shape (0, 3)",
            expected=np.zeros((0, 3), np.float32),
        ),
        Kind(
            NAME,
            "zero_dim",
            lambda: tensor(np.array(3.5)),
            "0-d: no shape, no strides",
            expected=np.array(3.5),
        ),
        Kind(
            NAME,
            "transposed",
            lambda: tensor(grid).T,
            "a transposed view: strides (1, 3)",
            expected=grid.T,
        ),
        Kind(
            NAME,
            "reversed",
            lambda: tensor(np.arange(5.0))[::-1],
            "a reversed view: stride -1",
            expected=np.arange(5.0)[::-1],
        ),
        Kind(
            NAME,
            "int64_wide",
            lambda: tensor(wide),
            "int64 values no 32-bit integer holds",
            expected=wide,
        ),
        Kind(
            NAME,
            "bool",
            lambda: tensor([True, False, True]),
            "bool elements (DLPack's kDLBool)",
            expected=np.array([True, False, True]),
        ),
    ]
