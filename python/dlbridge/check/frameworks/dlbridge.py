"""dlbridge itself, as the checker drives it: `dlbridge.Tensor`, `dlbridge.from_dlpack`, and
its catalogue.
"""

from __future__ import annotations

import numpy as np

from .base import kind_list, read_only_copy, via_numpy

NAME = "dlbridge"
MODULE = "dlbridge"


def make(array):
    """A tensor in Rust memory holding `array`'s values."""
    import dlbridge

    return dlbridge.from_dlpack(np.array(array, copy=True)).copy()


def make_read_only(array):
    """A read-only NumPy copy of `array`, imported."""
    import dlbridge

    return dlbridge.from_dlpack(read_only_copy(array))


def consume(obj):
    """`dlbridge.from_dlpack(obj)`."""
    import dlbridge

    return dlbridge.from_dlpack(obj)


def consume_copy(obj):
    """`dlbridge.from_dlpack(obj, copy=True)`."""
    import dlbridge

    return dlbridge.from_dlpack(obj, copy=True)


#: A tensor over a NumPy view, keeping its strides: its import.
make_view = consume
#: A result read back through NumPy's from_dlpack.
to_numpy = via_numpy


def read_only(result) -> bool:
    """`result.readonly`."""
    return result.readonly


def kinds() -> list:
    """dlbridge's own tensors: Rust-owned, imported, read-only, bfloat16, float8."""
    import dlbridge

    def read_only():
        array = np.arange(6.0).reshape(2, 3)
        array.flags.writeable = False
        return dlbridge.from_dlpack(array)

    entries = [
        (
            "rust_owned",
            lambda: dlbridge.arange(6, "float32"),
            "Rust-owned memory: writable",
            {"expected": np.arange(6, dtype=np.float32)},
        ),
        (
            "from_numpy",
            lambda: dlbridge.from_dlpack(np.arange(6.0).reshape(2, 3)),
            "a NumPy array imported zero-copy: writable",
            {"expected": np.arange(6.0).reshape(2, 3)},
        ),
        (
            "from_read_only_numpy",
            read_only,
            "a read-only NumPy array imported: READ_ONLY on re-export, never writable",
            {"expected": np.arange(6.0).reshape(2, 3), "read_only": True},
        ),
        (
            "from_legacy_capsule",
            lambda: dlbridge.from_dlpack(np.arange(4.0).__dlpack__()),
            (
                "imported from a legacy capsule (which cannot say its memory may be written): "
                "read-only"
            ),
            # Not `read_only` in the catalogue's sense: its source could not say whether it may
            # be written, and a legacy re-export hands it on as it came (versioned: READ_ONLY).
            {"expected": np.arange(4.0)},
        ),
        (
            "negative_strides",
            lambda: dlbridge.from_dlpack(np.arange(5.0)[::-1]),
            "a reversed NumPy view: stride -1",
            {"expected": np.arange(5.0)[::-1]},
        ),
        (
            "zero_size",
            lambda: dlbridge.zeros((0, 3)),
            "no elements",
            {"expected": np.zeros((0, 3), np.float32)},
        ),
        ("zero_dim", lambda: dlbridge.from_dlpack(np.array(3.0)), "0-d"),
        ("bfloat16", lambda: dlbridge.arange(4, "bfloat16"), "bfloat16 (no buffer format)"),
        ("float8_e4m3fn", lambda: dlbridge.arange(4, "float8_e4m3fn"), "float8"),
    ]
    return kind_list("dlbridge", entries)
