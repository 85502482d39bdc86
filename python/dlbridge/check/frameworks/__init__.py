"""The frameworks `dlbridge check` knows, one module each, and the registry that orders them.

Each module of this package but `base` describes one framework, following the protocol that
`base`'s docstring sets out (`NAME`, `MODULE`, `make`, `consume`, `to_numpy`, and what else
the framework has: a catalogue of odd tensors, CUDA tensors and streams, a read-only notion,
what must not be imported beside it). `REGISTRY` names them in the order the checker runs and
reports them; `FRAMEWORKS` maps each name to its `Framework`.

Adding a framework is one new module here (say `mylib.py`, following the protocol) and its
name in `REGISTRY`: `dlbridge check mylib` then runs it through every check, the interop
matrix takes it in, `catalogue.kinds("mylib")` lists its kinds where it defines `kinds()`.

A framework module imports nothing of its framework when it is imported (every function
imports it when called, inside the worker process that checks it), so importing this
package imports none of them.
"""

from __future__ import annotations

import importlib

from .base import (
    Framework,
    Kind,
    capsule_only_framework,
    cuda_driver_present,
    custom,
    data_address,
    framework_of,
)

__all__ = [
    "FRAMEWORKS",
    "REGISTRY",
    "Framework",
    "Kind",
    "capsule_only_framework",
    "cuda_driver_present",
    "custom",
    "data_address",
    "framework_of",
    "resolve",
]

#: The framework modules of this package, in the order `dlbridge check` runs and reports them.
REGISTRY = (
    "numpy",
    "torch",
    "jax",
    "tensorflow",
    "paddle",
    "pyarrow",
    "tvm_ffi",
    "mxnet",
    "cupy",
    "dlbridge",
)

#: Every known framework by name, in the registry's order.
FRAMEWORKS = {
    framework.name: framework
    for framework in (
        framework_of(importlib.import_module(f"{__name__}.{module}")) for module in REGISTRY
    )
}


def resolve(name: str) -> Framework:
    """The framework of a command-line NAME: a known one, or a user's `module:factory`."""
    if ":" in name:
        return custom(name)
    try:
        return FRAMEWORKS[name]
    except KeyError:
        known = ", ".join(FRAMEWORKS)
        raise ValueError(
            f"unknown framework {name!r} (known: {known}, or module:factory)"
        ) from None
