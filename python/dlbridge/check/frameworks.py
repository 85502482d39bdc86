"""What the checker needs of each framework: how to make one of its tensors from NumPy
values, how its `from_dlpack` is called, and how to read a result back.

Every framework module is imported lazily, inside the worker process that checks it, so that
frameworks which crash when imported together never meet.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from .capsules import is_capsule


@dataclass
class Framework:
    """One framework, as producer and consumer.

    `make(array)` returns a tensor of the framework holding `array`'s values (its own memory);
    `make_read_only(array)` one whose data is read-only, where the framework has such a
    thing; `consume(obj)` is its `from_dlpack`; `to_numpy(result)` reads a result back;
    `read_only(result)` says whether a result may not be written (None: no such notion).
    """

    name: str
    module: str
    make: Callable[[np.ndarray], Any]
    consume: Callable[[Any], Any]
    to_numpy: Callable[[Any], np.ndarray]
    make_read_only: Callable[[np.ndarray], Any] | None = None
    read_only: Callable[[Any], bool | None] = lambda result: None
    #: For frameworks without transposition or slicing of their own: a tensor over a NumPy
    #: view, keeping its strides (the interop matrix's layouts).
    make_view: Callable[[np.ndarray], Any] | None = None
    needs_gpu: bool = False
    #: A user's `module:factory`: one tensor of unknown values, and no consumer.
    user_factory: bool = False

    def available(self) -> bool:
        """Whether the framework can be imported here (without importing it)."""
        if importlib.util.find_spec(self.module) is None:
            return False
        if self.needs_gpu:
            return _gpu_present()
        return True


def _gpu_present() -> bool:
    import ctypes.util

    return ctypes.util.find_library("cuda") is not None


def _lazy(module: str):
    return importlib.import_module(module)


def _numpy_read_only(array):
    array = np.array(array, copy=True)
    array.flags.writeable = False
    return array


def _torch_make(array):
    torch = _lazy("torch")
    return torch.from_numpy(np.array(array, copy=True))


def _torch_to_numpy(result):
    return result.detach().resolve_conj().resolve_neg().cpu().numpy()


def _jax_make(array):
    jnp = _lazy("jax.numpy")
    result = jnp.asarray(array)
    if np.dtype(result.dtype) != array.dtype:  # float64 without jax_enable_x64
        raise TypeError(f"jax makes {result.dtype} of {array.dtype}")
    return result


def _jax_consume(obj):
    return _lazy("jax.dlpack").from_dlpack(obj)


def _tf_make(array):
    return _lazy("tensorflow").constant(array)


def _tf_consume(obj):
    # TensorFlow's from_dlpack takes a legacy capsule only, not a producer object.
    capsule = obj if is_capsule(obj) else obj.__dlpack__()
    return _lazy("tensorflow").experimental.dlpack.from_dlpack(capsule)


def _paddle_make(array):
    return _lazy("paddle").to_tensor(array)


def _paddle_consume(obj):
    return _lazy("paddle").from_dlpack(obj)


def _arrow_make(array):
    return _lazy("pyarrow").Tensor.from_numpy(np.array(array, copy=True))


def _arrow_read_only_make(array):
    return _lazy("pyarrow").Tensor.from_numpy(_numpy_read_only(array))


def _arrow_view(view):
    return _lazy("pyarrow").Tensor.from_numpy(view)


def _arrow_consume(obj):
    return _lazy("pyarrow").Tensor.from_dlpack(obj)


def _tvm_make(array):
    return _lazy("tvm_ffi").from_dlpack(np.array(array, copy=True))


def _tvm_consume(obj):
    return _lazy("tvm_ffi").from_dlpack(obj)


def _dlbridge_make(array):
    import dlbridge

    return dlbridge.from_dlpack(np.array(array, copy=True)).copy()


def _dlbridge_read_only_make(array):
    import dlbridge

    return dlbridge.from_dlpack(_numpy_read_only(array))


def _dlbridge_consume(obj):
    import dlbridge

    return dlbridge.from_dlpack(obj)


def _via_numpy(result):
    return np.from_dlpack(result)


def _cupy_make(array):
    return _lazy("cupy").asarray(array)


def _cupy_consume(obj):
    return _lazy("cupy").from_dlpack(obj)


FRAMEWORKS = {
    fw.name: fw
    for fw in [
        Framework(
            "numpy",
            "numpy",
            lambda a: np.array(a, copy=True),
            np.from_dlpack,
            np.asarray,
            make_read_only=_numpy_read_only,
            read_only=lambda r: not r.flags.writeable,
        ),
        Framework(
            "torch", "torch", _torch_make, lambda o: _lazy("torch").from_dlpack(o), _torch_to_numpy
        ),
        Framework("jax", "jax", _jax_make, _jax_consume, np.asarray, read_only=lambda r: True),
        Framework(
            "tensorflow",
            "tensorflow",
            _tf_make,
            _tf_consume,
            lambda r: r.numpy(),
            read_only=lambda r: True,
        ),
        Framework("paddle", "paddle", _paddle_make, _paddle_consume, lambda r: r.numpy()),
        Framework(
            "pyarrow",
            "pyarrow",
            _arrow_make,
            _arrow_consume,
            lambda r: r.to_numpy(),
            make_read_only=_arrow_read_only_make,
            make_view=_arrow_view,
            read_only=lambda r: not r.is_mutable,
        ),
        Framework(
            "tvm_ffi",
            "tvm_ffi",
            _tvm_make,
            _tvm_consume,
            _via_numpy,
            make_view=lambda v: _lazy("tvm_ffi").from_dlpack(v),
        ),
        Framework("cupy", "cupy", _cupy_make, _cupy_consume, lambda r: r.get(), needs_gpu=True),
        Framework(
            "dlbridge",
            "dlbridge",
            _dlbridge_make,
            _dlbridge_consume,
            _via_numpy,
            make_read_only=_dlbridge_read_only_make,
            read_only=lambda r: r.readonly,
            make_view=_dlbridge_consume,
        ),
    ]
}


def custom(spec: str) -> Framework:
    """A user's producer, `module:factory`: `factory()` returns a tensor object to check (as
    a producer only: there is no consumer to call)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected module:factory, got {spec!r}")

    def make(_array):
        factory = getattr(importlib.import_module(module_name), attribute)
        return factory()

    def no_consumer(_obj):
        raise NotImplementedError("a module:factory producer has no from_dlpack")

    return Framework(spec, module_name, make, no_consumer, _via_numpy, user_factory=True)


def data_address(obj):
    """The address of the first element of `obj` as dlbridge imports it, or None when dlbridge
    cannot import it (not every result can be exported again)."""
    try:
        import dlbridge

        return dlbridge.from_dlpack(obj).data_ptr
    except Exception:  # noqa: BLE001 - not every object exports
        return None


def resolve(name: str) -> Framework:
    """The framework of a command-line NAME."""
    if ":" in name:
        return custom(name)
    try:
        return FRAMEWORKS[name]
    except KeyError:
        known = ", ".join(FRAMEWORKS)
        raise ValueError(
            f"unknown framework {name!r} (known: {known}, or module:factory)"
        ) from None
