"""Rust kernels as PyTorch operators, for `torch.compile` without graph breaks.

`torch.compile` cannot trace into an extension function: Dynamo stops at it (a graph break,
or `Unsupported` with `fullgraph=True`). PyTorch's route for native code is a registered
operator, whose schema tells the compiler what the operator reads, writes and returns, and
whose fake implementation tells it the results' shapes without running it.

A kernel declared with `dlbridge_pyo3::kernel!` carries all of that: `register(module)` makes
each kernel `module` publishes an operator `torch.ops.<namespace>.<name>`:

- the schema from the kernel's parameters: a `TensorArg` is `Tensor`, a `TensorArgMut` with a
  shape rule a returned `Tensor`, one without a mutated `Tensor(a!)`, an `f32`/`f64` attribute
  `float`, an integer `int`, a `bool` `bool`;
- the CPU implementation allocates the results (`torch.empty`, the shape from the kernel's
  rule) and calls the Rust kernel on the tensors, zero-copy;
- the fake implementation allocates the same results on fake tensors, after refusing a data
  type or number of dimensions the kernel does not take (`TypeError`);
- with `autograd={name: (backward, setup_context)}`, a backward through
  `torch.library.register_autograd`.

CUDA tensors are not taken yet (the operator has no CUDA implementation; PyTorch raises
`NotImplementedError` naming the operator and the dispatch key).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from types import ModuleType
from typing import Any

import torch
import torch.library

from . import _kernel_signatures
from ._kernel_signatures import ATTRIBUTE, INPUT, MUTATED, OUTPUT, KernelSignature

__all__ = ["register"]

#: PyTorch's schema type of each attribute data type.
_SCHEMA_SCALARS = {
    "float32": "float",
    "float64": "float",
    "int32": "int",
    "int64": "int",
    "bool": "bool",
}

_lock = threading.Lock()
#: The libraries made, by namespace: a `torch.library.Library` must stay alive for its
#: operators to stay registered.
_libraries: dict[str, torch.library.Library] = {}
#: The operators registered, by namespace and kernel name.
_operators: dict[str, dict[str, Any]] = {}


def register(
    module: ModuleType,
    namespace: str | None = None,
    *,
    autograd: dict[str, tuple[Callable[..., Any], Callable[..., Any] | None]] | None = None,
) -> dict[str, Any]:
    """Registers every kernel `module` publishes as an operator `torch.ops.<namespace>.<name>`
    (`namespace`: the module's `__name__` with dots as underscores by default) and returns the
    operators by kernel name. Registering a namespace again returns its operators.
    `autograd`: `{kernel name: (backward, setup_context)}`, as
    `torch.library.register_autograd` takes them."""
    signatures = _kernel_signatures.signatures(module)
    namespace = namespace or module.__name__.replace(".", "_")
    autograd = dict(autograd or {})
    unknown = sorted(set(autograd) - set(signatures))
    if unknown:
        raise KeyError(f"autograd for kernels {module.__name__} does not have: {unknown}")
    with _lock:
        if namespace in _operators:
            return dict(_operators[namespace])
        library = torch.library.Library(namespace, "FRAGMENT")
        operators = {}
        for name, signature in signatures.items():
            qualified = f"{namespace}::{name}"
            library.define(name + schema(signature))
            library.impl(name, _implementation(signature), "CPU")
            torch.library.register_fake(qualified, _fake(signature), lib=library)
            if name in autograd:
                backward, setup_context = autograd[name]
                torch.library.register_autograd(
                    qualified, backward, setup_context=setup_context, lib=library
                )
            operators[name] = getattr(getattr(torch.ops, namespace), name)
        _libraries[namespace] = library
        _operators[namespace] = operators
        return dict(operators)


def schema(signature: KernelSignature) -> str:
    """The operator's schema, without its name: `(Tensor a, Tensor(a!) x, float alpha) ->
    Tensor`."""
    aliases = iter("abcdefghijklmnopqrstuvwxyz")
    arguments = []
    for parameter in signature.parameters:
        if parameter.role == INPUT:
            arguments.append(f"Tensor {parameter.name}")
        elif parameter.role == MUTATED:
            arguments.append(f"Tensor({next(aliases)}!) {parameter.name}")
        elif parameter.role == ATTRIBUTE:
            scalar = _SCHEMA_SCALARS.get(parameter.dtype)
            if scalar is None:
                raise TypeError(
                    f"{signature.name}: attribute {parameter.name} is {parameter.dtype}, which "
                    "a PyTorch schema cannot take"
                )
            arguments.append(f"{scalar} {parameter.name}")
    results = [p for p in signature.parameters if p.role == OUTPUT]
    if not results:
        returns = "()"
    elif len(results) == 1:
        returns = "Tensor"
    else:
        returns = "(" + ", ".join("Tensor" for _ in results) + ")"
    return f"({', '.join(arguments)}) -> {returns}"


def _torch_dtype_name(tensor: torch.Tensor) -> str:
    return str(tensor.dtype).removeprefix("torch.")


def _allocate_results(signature: KernelSignature, args: tuple[Any, ...]) -> list[torch.Tensor]:
    """The results of a call on `args` (the operator's arguments), allocated: shaped by their
    rules, of their parameters' data types, on the first tensor's device. A `like` rule keeps
    the tensor's shape as it is (symbolic under dynamic shapes); another rule is Rust's,
    called with concrete extents."""
    passed = [p for p in signature.parameters if p.role != OUTPUT]
    by_name = dict(zip((p.name for p in passed), args))
    tensors = [by_name[p.name] for p in signature.tensors]
    signature.check_tensors(tensors, _torch_dtype_name)
    results = [p for p in signature.parameters if p.role == OUTPUT]
    if not results:
        return []
    if all(p.like is not None for p in results):
        shapes = [by_name[p.like].shape for p in results]
    else:
        shapes = signature.result_shapes(tensors)
    device = tensors[0].device if tensors else torch.device("cpu")
    return [
        torch.empty(shape, dtype=getattr(torch, p.dtype), device=device)
        for p, shape in zip(results, shapes)
    ]


def _returned(results: list[torch.Tensor]) -> Any:
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)


def _implementation(signature: KernelSignature) -> Callable[..., Any]:
    """The CPU implementation: allocate the results, run the Rust kernel."""
    order = [p.role == OUTPUT for p in signature.parameters]
    function = signature.function

    def implementation(*args: Any) -> Any:
        results = _allocate_results(signature, args)
        passed, written = iter(args), iter(results)
        function(*(next(written) if is_result else next(passed) for is_result in order))
        return _returned(results)

    implementation.__name__ = signature.name
    return implementation


def _fake(signature: KernelSignature) -> Callable[..., Any]:
    """The fake implementation: the results, allocated, not computed."""

    def fake(*args: Any) -> Any:
        return _returned(_allocate_results(signature, args))

    fake.__name__ = f"{signature.name}_fake"
    return fake
