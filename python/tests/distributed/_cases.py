"""What the cluster tests send and how they compare it, importable by the workers too
(the tests put this folder on their PYTHONPATH): the catalogue's tensors of NumPy, PyTorch,
JAX and dlbridge that dlbridge sends, and `contents`, what a tensor holds as dlbridge reads it.
"""

from __future__ import annotations

import ctypes
import os
import signal

import dlbridge
import dlbridge.distributed as dd
from dlbridge.check import catalogue

#: The frameworks whose catalogued tensors travel (TensorFlow and PaddlePaddle cannot share a
#: process; their frames are tested in their own interop runs).
FRAMEWORKS = ("numpy", "torch", "jax", "dlbridge")


def contents(x) -> tuple:
    """The kind, dtype, shape and compact bytes of a tensor, as dlbridge reads it."""
    t = x if isinstance(x, dlbridge.Tensor) else dlbridge.from_dlpack(x)
    compact = t.copy()
    kind = type(x).__module__.partition(".")[0]
    return kind, t.dtype, t.shape, ctypes.string_at(compact.data_ptr, compact.nbytes)


def sendable_cases() -> list[tuple[str, object]]:
    """(name, tensor) for every catalogued tensor of FRAMEWORKS that dlbridge sends (those
    dlbridge refuses to import, subclasses and dtypes the framework cannot rebuild are the
    frame tests' business: python/tests/test_frames.py)."""
    cases = []
    for framework in FRAMEWORKS:
        for kind in catalogue.kinds(framework):
            try:
                x = kind.make()
                dd.serialize(x)
            except Exception:  # noqa: BLE001 - refused, as test_frames checks
                continue
            cases.append((f"{framework}-{kind.name}", x))
    return cases


def describe_all(tensors: list) -> list[tuple]:
    """`contents` of each, computed where this runs (a worker)."""
    return [contents(x) for x in tensors]


def echo(tensors: list) -> list:
    """The tensors, sent back: results travel through the serializer too."""
    return list(tensors)


def registered_kinds() -> list[str]:
    return sorted(dd._REGISTERED)


def die_on_first_attempt(marker: str, tensors: list) -> list[tuple]:
    """Kills its own worker process (SIGKILL) on the first attempt, while holding the
    tensors; on the retry, describes them."""
    if not os.path.exists(marker):
        with open(marker, "w") as f:
            f.write("killed")
        os.kill(os.getpid(), signal.SIGKILL)
    return describe_all(tensors)


def node_address() -> str:
    import socket

    return f"{socket.gethostname()}:{os.getpid()}"


def big_tensors() -> list:
    """24 MiB of tensors of three kinds, the same every call."""
    import numpy as np
    import torch

    return [np.ones(2**20, dtype=np.float64), torch.arange(2**20), dlbridge.zeros(2**20)]
