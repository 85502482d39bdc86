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
    describe,
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
    "describe",
    "framework_of",
    "is_known",
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


def is_known(name: str) -> bool:
    """Whether NAME is one of the frameworks of this package (and not a user's)."""
    return name in FRAMEWORKS


def resolve(name: str) -> Framework:
    """The framework of a command-line NAME: a known one, a user's `module:factory`, or a
    user's framework description (a `.py` file or an importable module, `describe`). Raises
    ValueError saying why NAME names no framework; a description's own module is imported
    here (so the command line asks this in a worker process, `preflight`)."""
    if name in FRAMEWORKS:
        return FRAMEWORKS[name]
    if ":" in name and not name.endswith(".py"):
        return custom(name)
    try:
        framework = describe(name)
    except ValueError as error:
        if str(error) in (f"no module named {name}", f"no file {name}"):
            known = ", ".join(FRAMEWORKS)
            raise ValueError(
                f"unknown framework {name!r}: not one the checker knows ({known}), nor a "
                "module:factory, nor a framework description (a .py file or an importable "
                "module following the protocol of docs/check-frameworks.md)"
            ) from None
        raise
    if framework.name in FRAMEWORKS:
        raise ValueError(
            f"{name} describes a framework named {framework.name!r}, which is one the checker "
            "knows: give it another NAME"
        )
    return framework
