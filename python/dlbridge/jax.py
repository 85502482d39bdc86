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

__all__ = ["call", "register", "registered_targets"]

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
    handlers = getattr(module, _HANDLERS_ATTRIBUTE, None)
    if not isinstance(handlers, dict):
        raise TypeError(
            f"{getattr(module, '__name__', module)!r} publishes no XLA handlers (no "
            f"{_HANDLERS_ATTRIBUTE}); its Rust code publishes them with "
            "dlbridge_pyo3::xla::publish_xla_handlers"
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
