"""Factories of plantedlib tensors for `dlbridge check module:factory` (the tests put this
folder on PYTHONPATH): good ones, and ones that cannot be checked at all."""

from __future__ import annotations

import numpy as np
import plantedlib

BASE = np.arange(6, dtype=np.float32).reshape(2, 3)


def make():
    """A plantedlib tensor of (2, 3) float32."""
    return plantedlib.Tensor(BASE)


def read_only():
    """A read-only plantedlib tensor: READ_ONLY on the versioned path, legacy refused."""
    return plantedlib.Tensor(BASE, read_only=True)


def frozen_bytes_unflagged():
    """A tensor over immutable bytes (memoryview(t).readonly) exported without READ_ONLY."""
    return plantedlib.FrozenBytes(bytes(range(8)), bugs={"read-only-unflagged"})


def raises():
    """A factory that cannot make its tensor."""
    raise RuntimeError("plantedlib has no device memory left (planted)")


def returns_int():
    """A factory that returns no tensor at all."""
    return 42
