"""Rust kernels inside `jax.jit`, through XLA's FFI.

Under `jax.jit` a function's arguments are tracers, which have no memory for `__dlpack__` to
hand out, so an extension function taking DLPack tensors cannot be called there. XLA's FFI is
JAX's route for native code: a handler that XLA calls with the arguments' and results' buffers
(allocated by XLA), inside the compiled program, with no call back into Python.

A dlbridge extension publishes its handlers (`dlbridge_pyo3::xla::publish_xla_handlers` in
Rust; each handler's body is `dlbridge::xla::handle`, which describes XLA's buffers as
validated DLPack views). Here:

- `register(module)` registers every handler the module publishes with
  `jax.ffi.register_ffi_target`, as `<module name>.<kernel name>`, once per process, and
  returns the targets by kernel name;
- `call(target, result, *args)` calls one inside traced code (`jax.ffi.ffi_call`), the result's
  shape and dtype stated once: a `jax.ShapeDtypeStruct`, a sequence of them for several
  results, or an array whose shape and dtype the result has.

A handler refuses what its kernel cannot take (a data type, a shape) with XLA's error, raised
by JAX as `XlaRuntimeError` with dlbridge's message; a kernel that panics is an error too,
never a crash.

A kernel declared with `dlbridge_pyo3::kernel!` needs less: `kernel(module, name)` is a JAX
function of it, which checks the tensors' data types and numbers of dimensions and derives the
results' shapes from the kernel's rules at trace time, and returns the results (a mutated
argument's new value among them, in the kernel's order).

`vmap`: `call(..., vmap_method=...)` is `jax.ffi.ffi_call`'s. An elementwise kernel takes
`"broadcast_all"` (the batch is one more leading dimension of every buffer); a kernel that
assumes a rank takes `"sequential"` (one call per batch element).
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from types import ModuleType
from typing import Any

import jax
import jax.ffi
import jax.numpy as jnp
import numpy as np

from . import _kernel_signatures

__all__ = ["call", "kernel", "register", "registered_targets"]

_HANDLERS_ATTRIBUTE = "__dlbridge_xla_handlers__"
_lock = threading.Lock()
# (target, platform) pairs registered in this process: jax.ffi.register_ffi_target takes a
# name once per platform.
_registered: set[tuple[str, str]] = set()


def register(module: ModuleType, *, prefix: str | None = None) -> dict[str, str]:
    """Registers every XLA handler `module` publishes with `jax.ffi.register_ffi_target`, for
    each platform it was built for, under `<prefix>.<kernel name>` (`prefix`: the module's
    `__name__` by default). Returns `{kernel name: target}`; registering again is a no-op.
    `TypeError` for a module that publishes no handlers."""
    handlers = _kernel_signatures.published_dict(
        module,
        _HANDLERS_ATTRIBUTE,
        "XLA handlers",
        "publishes them with dlbridge_pyo3::xla::publish_xla_handlers",
    )
    prefix = module.__name__ if prefix is None else prefix
    targets = {}
    with _lock:
        for name, platforms in handlers.items():
            target = f"{prefix}.{name}"
            for platform, capsule in platforms.items():
                if (target, platform) not in _registered:
                    jax.ffi.register_ffi_target(target, capsule, platform=platform)
                    _registered.add((target, platform))
            targets[name] = target
    return targets


def registered_targets() -> list[tuple[str, str]]:
    """The `(target, platform)` pairs `register` registered in this process, sorted."""
    with _lock:
        return sorted(_registered)


def call(
    target: str,
    result: Any,
    *args: Any,
    vmap_method: str | None = None,
    **attributes: Any,
) -> Any:
    """Calls the handler registered as `target` on `args` (inside `jax.jit` or not) and returns
    its result: `result` is the result's `jax.ShapeDtypeStruct`, a sequence of them for several
    results (a list comes back), or an array-like whose shape and dtype the result has.
    `attributes` go to the handler as XLA attributes."""
    shapes = _result_shapes(result)
    function = jax.ffi.ffi_call(target, shapes, vmap_method=vmap_method)
    return function(*args, **attributes)


def _result_shapes(result: Any) -> Any:
    """`result` as `jax.ffi.ffi_call` takes it."""
    if isinstance(result, jax.ShapeDtypeStruct):
        return result
    if isinstance(result, Sequence) and not isinstance(result, (str, bytes)):
        return [_result_shapes(item) for item in result]
    shape, dtype = getattr(result, "shape", None), getattr(result, "dtype", None)
    if shape is None or dtype is None:
        raise TypeError(
            "result: expected a jax.ShapeDtypeStruct, a sequence of them, or an array with a "
            f"shape and a dtype, got {type(result).__name__}"
        )
    return jax.ShapeDtypeStruct(tuple(shape), dtype)


def kernel(
    module: ModuleType,
    name: str,
    *,
    vmap_method: str = "sequential",
    prefix: str | None = None,
) -> Any:
    """A JAX function of the kernel `name` that `module` declares (`dlbridge_pyo3::kernel!`),
    for `jax.jit` code and eager calls: `f(*tensors, *attributes, **attributes)`, the tensors
    being the kernel's inputs and mutated arguments in order. It returns the results and the
    mutated arguments' new values, in the kernel's order (one array, or a tuple of several).

    At trace time a tensor of a data type or number of dimensions the kernel does not take is
    refused (`TypeError`), and so is a shape its rules refuse (`ValueError`); attributes are
    passed to XLA as scalars of the kernel's types, and are constants of the compiled program
    (under `jax.jit`, close over them or mark them static; a traced one is a `TypeError`).
    `vmap_method`: `"sequential"` (one call per batch element; right for every kernel) or, for
    elementwise kernels, `"broadcast_all"`.
    """
    signature = _kernel_signatures.signature(module, name)
    target = register(module, prefix=prefix)[name]
    results = signature.results

    def function(*args: Any, **kwargs: Any) -> Any:
        tensors, attributes = signature.bind(args, kwargs)
        signature.check_tensors(tensors, lambda tensor: jnp.dtype(tensor.dtype).name)
        _check_platform(signature, tensors)
        output_shapes = iter(signature.result_shapes(tensors))
        by_name = dict(zip((p.name for p in signature.tensors), tensors))
        shapes = [
            jax.ShapeDtypeStruct(
                tuple(by_name[p.name].shape)
                if p.role == _kernel_signatures.MUTATED
                else next(output_shapes),
                jnp.dtype(p.dtype),
            )
            for p in results
        ]
        values = {p.name: _attribute(name, p, attributes[p.name]) for p in signature.attributes}
        outputs = jax.ffi.ffi_call(target, shapes, vmap_method=vmap_method)(*tensors, **values)
        return outputs[0] if len(outputs) == 1 else tuple(outputs)

    function.__name__ = name
    function.__qualname__ = name
    function.__doc__ = getattr(signature.function, "__doc__", None)
    return function


#: JAX's platform names of each kernel platform.
_JAX_PLATFORMS = {"cpu": ("cpu",), "cuda": ("gpu", "cuda")}


def _check_platform(signature: Any, tensors: Sequence[Any]) -> None:
    """Refuses (`TypeError`) a concrete array on a platform the kernel has no handler for (a
    CUDA kernel and CPU arrays), before XLA would; traced arrays are placed later, by XLA."""
    wanted = _JAX_PLATFORMS.get(signature.platform, ())
    for parameter, tensor in zip(signature.tensors, tensors):
        if isinstance(tensor, jax.core.Tracer) or not hasattr(tensor, "devices"):
            continue
        platforms = {device.platform for device in tensor.devices()}
        if not platforms <= set(wanted):
            raise TypeError(
                f"{signature.name}: {parameter.name} is on {', '.join(sorted(platforms))}, but "
                f"the kernel takes {signature.platform} tensors (its XLA handler is for that "
                "platform only)"
            )


def _attribute(kernel: str, parameter: Any, value: Any) -> Any:
    """An attribute's value as XLA takes it: a NumPy scalar of the kernel's type; `TypeError`
    for a traced value (an attribute is part of the compiled program)."""
    if isinstance(value, jax.core.Tracer):
        raise TypeError(
            f"{kernel}: the attribute {parameter.name} is traced, but XLA takes attributes as "
            "constants of the compiled program: close over it, or mark it static "
            "(jax.jit(..., static_argnames=...))"
        )
    return np.dtype(parameter.dtype).type(value)
