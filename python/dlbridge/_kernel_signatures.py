"""The signatures of kernels declared with `dlbridge_pyo3::kernel!`, as a module publishes them
(`__dlbridge_kernels__`), read once for `dlbridge.jax` and `dlbridge.torch`: the parameters and
their roles, the check of a tensor against its parameter, and the results' shapes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import ModuleType
from typing import Any

KERNELS_ATTRIBUTE = "__dlbridge_kernels__"

#: Roles of parameters: read, read and written in place, written (a result), a scalar.
INPUT, MUTATED, OUTPUT, ATTRIBUTE = "input", "mutated", "output", "attribute"


@dataclass(frozen=True)
class Parameter:
    """One parameter of a kernel."""

    name: str
    role: str
    dtype: str  # a DLPack name: "float32", "int64", "bool"
    ndim: int | None  # the number of dimensions the type fixes, None for any
    like: str | None  # a result shaped like this tensor parameter


@dataclass(frozen=True)
class KernelSignature:
    """A kernel's name, parameters, eager function and shape rules."""

    name: str
    parameters: tuple[Parameter, ...]
    function: Callable[..., None]
    output_shapes: Callable[[list[tuple[int, ...]]], list[tuple[int, ...]]]
    platform: str = "cpu"  # where its tensors are: "cpu" (host memory) or "cuda"

    @property
    def tensors(self) -> tuple[Parameter, ...]:
        """The tensors a caller passes: inputs and mutated ones, in order."""
        return tuple(p for p in self.parameters if p.role in (INPUT, MUTATED))

    @property
    def attributes(self) -> tuple[Parameter, ...]:
        """The scalar attributes, in order."""
        return tuple(p for p in self.parameters if p.role == ATTRIBUTE)

    @property
    def results(self) -> tuple[Parameter, ...]:
        """What a functional call returns: results and mutated tensors, in order."""
        return tuple(p for p in self.parameters if p.role in (OUTPUT, MUTATED))

    def bind(self, args: Sequence[Any], kwargs: dict[str, Any]) -> tuple[list[Any], dict[str, Any]]:
        """`(tensors, attributes)` of a call `f(*tensors, *attributes, **attributes)`;
        `TypeError` for a missing, extra or unknown one."""
        tensors, attributes = self.tensors, self.attributes
        if len(args) < len(tensors):
            absent = ", ".join(p.name for p in tensors[len(args) :])
            raise TypeError(f"{self.name}: missing tensor argument(s) {absent}")
        if len(args) > len(tensors) + len(attributes):
            raise TypeError(
                f"{self.name}: takes {len(tensors)} tensors and {len(attributes)} attributes, "
                f"got {len(args)} positional arguments"
            )
        values = dict(zip((p.name for p in attributes), args[len(tensors) :]))
        for name, value in kwargs.items():
            if name not in {p.name for p in attributes}:
                raise TypeError(f"{self.name}: no attribute {name!r}")
            if name in values:
                raise TypeError(f"{self.name}: attribute {name!r} given twice")
            values[name] = value
        missing = [p.name for p in attributes if p.name not in values]
        if missing:
            raise TypeError(f"{self.name}: missing attribute(s) {', '.join(missing)}")
        return list(args[: len(tensors)]), values

    def check_tensors(self, tensors: Sequence[Any], dtype_name: Callable[[Any], str]) -> None:
        """Refuses (`TypeError`) a tensor whose data type or number of dimensions its parameter
        does not take, before anything runs (at trace time inside `jax.jit`)."""
        for parameter, tensor in zip(self.tensors, tensors):
            dtype = dtype_name(tensor)
            ndim = len(tensor.shape)
            if dtype != parameter.dtype or parameter.ndim not in (None, ndim):
                dims = "" if parameter.ndim is None else f" with {parameter.ndim} dimensions"
                raise TypeError(
                    f"{self.name}: {parameter.name}: expected a {parameter.dtype} tensor{dims}, "
                    f"got {dtype} shape {tuple(tensor.shape)}"
                )

    def result_shapes(self, tensors: Sequence[Any]) -> list[tuple[int, ...]]:
        """The shape of every result (the `output` parameters, in order), from the tensors
        passed: `ValueError` with the rule's message."""
        shapes = [tuple(int(extent) for extent in tensor.shape) for tensor in tensors]
        return [tuple(shape) for shape in self.output_shapes(shapes)]


def published_dict(module: ModuleType, attribute: str, what: str, how: str) -> dict[str, Any]:
    """The dict `module` publishes as `attribute`; `TypeError` for a module that publishes
    none, naming `what` it lacks and `how` its Rust code publishes them. The package maturin
    makes around an extension (`name/__init__.py` importing `*` from `name.name`, which leaves
    dunder names behind) is read through to its extension module."""
    published = getattr(module, attribute, None)
    if published is None:
        extension = getattr(module, getattr(module, "__name__", "").rpartition(".")[2], None)
        if isinstance(extension, ModuleType):
            published = getattr(extension, attribute, None)
    if not isinstance(published, dict):
        raise TypeError(
            f"{getattr(module, '__name__', module)!r} publishes no {what} (no {attribute}); "
            f"its Rust code {how}"
        )
    return published


def signatures(module: ModuleType) -> dict[str, KernelSignature]:
    """Every kernel `module` publishes, by name; `TypeError` for a module that publishes none."""
    published = published_dict(
        module,
        KERNELS_ATTRIBUTE,
        "kernels",
        "declares them with dlbridge_pyo3::kernel! and publishes them with "
        "dlbridge_pyo3::kernel::publish_kernels",
    )
    return {
        name: KernelSignature(
            name=name,
            parameters=tuple(Parameter(*parameter) for parameter in entry["parameters"]),
            function=entry["function"],
            output_shapes=entry["output_shapes"],
            platform=entry.get("platform", "cpu"),
        )
        for name, entry in published.items()
    }


def signature(module: ModuleType, name: str) -> KernelSignature:
    """The kernel `name` of `module`; `KeyError` naming those it has."""
    published = signatures(module)
    if name not in published:
        raise KeyError(f"{module.__name__} has no kernel {name!r}; it has {sorted(published)}")
    return published[name]
