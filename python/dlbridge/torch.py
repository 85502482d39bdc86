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
- the implementation, for the dispatch key of the kernel's platform (`CPU` for a kernel of
  host tensors, `CUDA` for one of `CudaArg`s), allocates the results (`torch.empty`, the
  shape from the kernel's rule, on the tensors' device) and calls the Rust kernel on the
  tensors, zero-copy; a CUDA kernel is enqueued on PyTorch's current stream;
- the fake implementation allocates the same results on fake tensors, after refusing a data
  type or number of dimensions the kernel does not take (`TypeError`);
- with `autograd={name: (backward, setup_context)}`, a backward through
  `torch.library.register_autograd`.

Tensors on the other platform are refused by PyTorch's dispatcher (`NotImplementedError`
naming the operator and the dispatch key).
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

#: The dispatch key of each kernel platform.
_DISPATCH_KEYS = {"cpu": "CPU", "cuda": "CUDA"}

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
            library.impl(name, _implementation(signature), _DISPATCH_KEYS[signature.platform])
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


class _Plan:
    """What every call of one kernel's operator does, worked out once: where its tensors are
    among the operator's arguments, what each must be, and how each result is allocated."""

    def __init__(self, signature: KernelSignature):
        self.signature = signature
        passed = [p for p in signature.parameters if p.role != OUTPUT]
        position = {p.name: index for index, p in enumerate(passed)}
        self.tensors = [position[p.name] for p in signature.tensors]
        self.checks = [(position[p.name], p, getattr(torch, p.dtype)) for p in signature.tensors]
        results = [p for p in signature.parameters if p.role == OUTPUT]
        self.dtypes = [getattr(torch, p.dtype) for p in results]
        likes = [position[p.like] for p in results if p.like is not None]
        # Where every result is shaped like a tensor: those tensors' positions.
        self.likes = likes if len(likes) == len(results) else None
        self.order = [p.role == OUTPUT for p in signature.parameters]

    def check(self, args: tuple[Any, ...]) -> None:
        """Refuses (`TypeError`) a tensor whose data type or number of dimensions its
        parameter does not take (at trace time, from the fake implementation)."""
        for index, parameter, dtype in self.checks:
            tensor = args[index]
            if tensor.dtype is not dtype or parameter.ndim not in (None, tensor.dim()):
                self.signature.check_tensors(
                    [args[i] for i in self.tensors],
                    lambda tensor: str(tensor.dtype).removeprefix("torch."),
                )

    def allocate(self, args: tuple[Any, ...]) -> list[torch.Tensor]:
        """The results of a call on `args` (the operator's arguments), allocated: shaped by
        their rules, of their parameters' data types, contiguous, on the first tensor's
        device. A `like` rule keeps the tensor's shape as it is (symbolic under dynamic
        shapes); another rule is Rust's, called with concrete extents."""
        self.check(args)
        if self.likes is not None:
            return [
                torch.empty_like(args[like], dtype=dtype, memory_format=torch.contiguous_format)
                for dtype, like in zip(self.dtypes, self.likes)
            ]
        tensors = [args[i] for i in self.tensors]
        shapes = self.signature.result_shapes(tensors)
        device = tensors[0].device if tensors else torch.device("cpu")
        return [
            torch.empty(shape, dtype=dtype, device=device)
            for dtype, shape in zip(self.dtypes, shapes)
        ]


def _returned(results: list[torch.Tensor]) -> Any:
    if not results:
        return None
    return results[0] if len(results) == 1 else tuple(results)


def _implementation(signature: KernelSignature) -> Callable[..., Any]:
    """The implementation: allocate the results, run the Rust kernel (which checks its
    arguments again, as every call of it does)."""
    plan = _Plan(signature)
    order = plan.order
    function = signature.function

    def implementation(*args: Any) -> Any:
        results = plan.allocate(args)
        passed, written = iter(args), iter(results)
        function(*[next(written) if is_result else next(passed) for is_result in order])
        return _returned(results)

    implementation.__name__ = signature.name
    return implementation


def _fake(signature: KernelSignature) -> Callable[..., Any]:
    """The fake implementation: the results, allocated, not computed."""
    plan = _Plan(signature)

    def fake(*args: Any) -> Any:
        return _returned(plan.allocate(args))

    fake.__name__ = f"{signature.name}_fake"
    return fake
