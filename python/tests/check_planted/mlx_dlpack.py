"""MLX (`mlx.core`, CPU build: `pip install "mlx[cpu]"` on Linux), described for
`dlbridge check` as a user of MLX would describe it (docs/check-frameworks.md):

    python -m dlbridge check python/tests/check_planted/mlx_dlpack.py

MLX's DLPack: `mx.array.__dlpack__` takes the four keywords, `mx.from_dlpack(x, copy=None)`
imports (zero-copy where it can, keeping the strides). MLX arrays have no read-only notion
(so there is no `make_read_only` nor `read_only` here).
"""

from __future__ import annotations

import numpy as np

from dlbridge.check import Kind

NAME = "mlx"
MODULE = "mlx"
DISTRIBUTION = "mlx"


def _dtype(mx, dtype: np.dtype):
    """MLX's dtype of a NumPy dtype (bool is `mx.bool_`); KeyError where MLX has none."""
    name = "bool_" if dtype == np.bool_ else np.dtype(dtype).name
    found = getattr(mx, name, None)
    if not isinstance(found, mx.Dtype):
        raise KeyError(f"MLX has no {dtype}")
    return found


def make(array):
    """An MLX array holding the values, in the NumPy array's dtype (`mx.array` alone makes
    float32 of float64)."""
    import mlx.core as mx

    made = mx.array(array, dtype=_dtype(mx, array.dtype))
    mx.eval(made)
    return made


def consume(obj):
    """mx.from_dlpack(obj)."""
    import mlx.core as mx

    return mx.from_dlpack(obj)


def consume_copy(obj):
    """mx.from_dlpack(obj, copy=True)."""
    import mlx.core as mx

    return mx.from_dlpack(obj, copy=True)


def to_numpy(result):
    """A result read back (through its __array__: a copy)."""
    return np.array(result, copy=True)


def kinds() -> list:
    """A few odd MLX arrays, with their values."""
    import mlx.core as mx

    grid = np.arange(6, dtype=np.float32).reshape(2, 3)
    wide = np.array([2**40 + 3, -(2**40) - 5, 7], dtype=np.int64)
    return [
        Kind(
            NAME,
            "transposed",
            lambda: make(grid).T,
            "a transposed view: strides (1, 3)",
            expected=grid.T,
        ),
        Kind(
            NAME,
            "strided",
            lambda: mx.arange(10, dtype=mx.int32)[::3],
            "every third element: stride 3",
            expected=np.arange(10, dtype=np.int32)[::3],
        ),
        Kind(
            NAME,
            "broadcast",
            lambda: mx.broadcast_to(mx.arange(3, dtype=mx.float32), (2, 3)),
            "mx.broadcast_to: stride 0",
            expected=np.broadcast_to(np.arange(3, dtype=np.float32), (2, 3)).copy(),
        ),
        Kind(
            NAME,
            "zero_size",
            lambda: mx.zeros((0, 3), dtype=mx.float32),
            "no elements: shape (0, 3)",
            expected=np.zeros((0, 3), np.float32),
        ),
        Kind(NAME, "zero_dim", lambda: mx.array(3.5), "0-d", expected=np.array(3.5, np.float32)),
        Kind(NAME, "int64", lambda: make(wide), "int64 beyond 32 bits", expected=np.asarray(wide)),
        Kind(
            NAME,
            "float64",
            lambda: make(np.array([1 / 3, 1e300])),
            "float64 (MLX has it on the CPU only)",
            expected=np.array([1 / 3, 1e300]),
        ),
        Kind(
            NAME,
            "bool",
            lambda: mx.array([True, False, True]),
            "bool elements",
            expected=np.array([True, False, True]),
        ),
        Kind(
            NAME, "bfloat16", lambda: mx.arange(4, dtype=mx.bfloat16), "bfloat16 (no NumPy dtype)"
        ),
    ]
