"""What the checker needs of each framework: how to make one of its tensors from NumPy
values, how its `from_dlpack` is called (also with copy=True), and how to read a result back.
A framework without `__dlpack__` (MXNet) is driven through its DLPack functions by the
adapter of `capsule_only`.

Every framework module is imported lazily, inside the worker process that checks it, so that
frameworks which crash when imported together never meet.
"""

from __future__ import annotations

import importlib
import importlib.util
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from . import capsule_only
from .capsule_only import CapsuleOnly
from .capsules import is_capsule


@dataclass
class Framework:
    """One framework, as producer and consumer.

    `make(array)` returns a tensor of the framework holding `array`'s values (its own memory);
    `make_read_only(array)` one whose data is read-only, where the framework has such a
    thing; `consume(obj)` is its `from_dlpack`; `to_numpy(result)` reads a result back;
    `read_only(result)` says whether a result may not be written (None: no such notion);
    `consume_copy(obj)` is its `from_dlpack(obj, copy=True)` (None: it has no copy parameter).

    A capsule-only framework (no `__dlpack__`) has an `adapter(tensor)` that wraps one of its
    tensors in a `CapsuleOnly`, the producer handed to consumers and producer checks (see
    `exporter`).
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
    #: A user's `module:factory`: one tensor of unknown values, and a consumer only where
    #: the factory returns a `CapsuleOnly` with a `from_capsule`.
    user_factory: bool = False
    consume_copy: Callable[[Any], Any] | None = None
    adapter: Callable[[Any], Any] | None = None
    #: The rules that say nothing about this framework, with why (asked once the framework's
    #: tensors can be made: a user's factory knows only then).
    not_applicable: Callable[[], dict] = dict
    #: Whether `consume` is a from_dlpack at all (a user's factory may have none).
    has_consumer: Callable[[], bool] = lambda: True
    #: The device checks (`device_checks`): a tensor of the framework on CUDA device 0
    #: holding `array`'s values (None: the checker makes no CUDA tensors of it).
    make_cuda: Callable[[np.ndarray], Any] | None = None
    #: A new CUDA stream of the framework on device 0 that does not synchronise with the
    #: legacy default stream: (its handle, the object that keeps it alive).
    new_cuda_stream: Callable[[], tuple[int, Any]] | None = None
    #: The handle of the framework's current CUDA stream on device 0.
    current_cuda_stream: Callable[[], int] | None = None
    #: `write_late(tensor, array)`: enqueues on the framework's current CUDA stream a delay
    #: (a tenth of a second or so of spinning), then the writing of `array`'s values into
    #: the CUDA tensor `tensor` (of `array`'s shape and dtype), and returns at once.
    write_late: Callable[[Any, np.ndarray], None] | None = None

    def exporter(self, tensor):
        """What is handed to a consumer for one of this framework's tensors: the tensor, or
        for a capsule-only framework its `CapsuleOnly` adapter."""
        if self.adapter is None or isinstance(tensor, CapsuleOnly):
            return tensor
        return self.adapter(tensor)

    def available(self) -> bool:
        """Whether the framework can be imported here (without importing it)."""
        if importlib.util.find_spec(self.module) is None:
            return False
        if self.needs_gpu:
            return cuda_driver_present()
        return True


def cuda_driver_present() -> bool:
    """Whether the CUDA driver library is installed (a GPU may still be missing: making a
    CUDA tensor then fails, which callers report)."""
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


def _torch_make_cuda(array):
    return _lazy("torch").from_numpy(np.array(array, copy=True)).to("cuda:0")


def _torch_new_cuda_stream():
    stream = _lazy("torch").cuda.Stream(device=0)
    return stream.cuda_stream, stream


def _torch_current_cuda_stream():
    return _lazy("torch").cuda.current_stream(0).cuda_stream


def _torch_write_late(tensor, array):
    torch = _lazy("torch")
    source = torch.from_numpy(np.array(array, copy=True)).to("cuda:0")
    torch.cuda._sleep(200_000_000)  # about 0.1 s of spinning on the current stream
    tensor.copy_(source)


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


def _dlbridge_consume_copy(obj):
    import dlbridge

    return dlbridge.from_dlpack(obj, copy=True)


def _via_numpy(result):
    return np.from_dlpack(result)


def _mxnet_device(tensor):
    """MXNet's own (device_type, device_id) of an NDArray, from its context."""
    kinds = {"cpu": 1, "cpu_shared": 1, "gpu": 2, "cpu_pinned": 3}
    context = tensor.context
    return kinds[context.device_type], int(context.device_id)


def capsule_only_framework(
    name: str,
    module: str,
    make: Callable[[np.ndarray], Any],
    *,
    to_capsule: Callable[[Any], Any],
    from_capsule: Callable[[Any], Any],
    to_numpy: Callable[[Any], np.ndarray],
    device: Callable[[Any], tuple[int, int]] | None = None,
    make_view: Callable[[np.ndarray], Any] | None = None,
) -> Framework:
    """A framework with DLPack functions but no `__dlpack__` (MXNet): its tensors are handed
    out in a `CapsuleOnly` adapter, its consumer is `from_capsule(x.__dlpack__())`, and the
    rules the adapter answers are n/a."""

    def adapter(tensor):
        return CapsuleOnly(
            tensor,
            to_capsule=to_capsule,
            from_capsule=from_capsule,
            to_numpy=to_numpy,
            device=device,
        )

    not_applicable = dict(capsule_only.NOT_APPLICABLE)
    if device is None:
        not_applicable.update(capsule_only.NO_DEVICE_FUNCTION)
    return Framework(
        name,
        module,
        make,
        lambda obj: from_capsule(obj if is_capsule(obj) else obj.__dlpack__()),
        to_numpy,
        make_view=make_view,
        adapter=adapter,
        not_applicable=lambda: not_applicable,
    )


def _mxnet_make(array):
    return _lazy("mxnet").nd.array(array, dtype=array.dtype)


def _mxnet_to_capsule(tensor):
    return _lazy("mxnet").nd.to_dlpack_for_read(tensor)


def _mxnet_from_capsule(capsule):
    return _lazy("mxnet").nd.from_dlpack(capsule)


def _mxnet_framework() -> Framework:
    """MXNet 1.x: `mx.nd.to_dlpack_for_read` and `mx.nd.from_dlpack`, looked up when called
    (the module is imported in the worker only)."""
    return capsule_only_framework(
        "mxnet",
        "mxnet",
        _mxnet_make,
        to_capsule=_mxnet_to_capsule,
        from_capsule=_mxnet_from_capsule,
        to_numpy=lambda t: t.asnumpy(),
        device=_mxnet_device,
    )


def _cupy_make(array):
    return _lazy("cupy").asarray(array)


def _cupy_consume(obj):
    return _lazy("cupy").from_dlpack(obj)


def _cupy_new_cuda_stream():
    stream = _lazy("cupy").cuda.Stream(non_blocking=True)
    return stream.ptr, stream


#: A kernel that spins for `cycles` clock cycles, for `_cupy_write_late`.
_SPIN_KERNEL = """
extern "C" __global__ void spin(long long cycles) {
    long long start = clock64();
    while (clock64() - start < cycles) {}
}
"""


def _cupy_write_late(tensor, array):
    cupy = _lazy("cupy")
    source = cupy.asarray(array)
    spin = cupy.RawKernel(_SPIN_KERNEL, "spin")
    spin((1,), (1,), (np.int64(200_000_000),))  # about 0.1 s, on the current stream
    tensor[...] = source


def _jax_make_cuda(array):
    jax = _lazy("jax")
    return jax.device_put(_jax_make(array), jax.devices("gpu")[0])


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
            consume_copy=lambda o: np.from_dlpack(o, copy=True),
        ),
        Framework(
            "torch",
            "torch",
            _torch_make,
            lambda o: _lazy("torch").from_dlpack(o),
            _torch_to_numpy,
            consume_copy=lambda o: _lazy("torch").from_dlpack(o, copy=True),
            make_cuda=_torch_make_cuda,
            new_cuda_stream=_torch_new_cuda_stream,
            current_cuda_stream=_torch_current_cuda_stream,
            write_late=_torch_write_late,
        ),
        Framework(
            "jax",
            "jax",
            _jax_make,
            _jax_consume,
            np.asarray,
            read_only=lambda r: True,
            consume_copy=lambda o: _lazy("jax.dlpack").from_dlpack(o, copy=True),
            make_cuda=_jax_make_cuda,
        ),
        Framework(
            "tensorflow",
            "tensorflow",
            _tf_make,
            _tf_consume,
            lambda r: r.numpy(),
            read_only=lambda r: True,
        ),
        Framework(
            "paddle",
            "paddle",
            _paddle_make,
            _paddle_consume,
            lambda r: r.numpy(),
            consume_copy=lambda o: _lazy("paddle").from_dlpack(o, copy=True),
        ),
        Framework(
            "pyarrow",
            "pyarrow",
            _arrow_make,
            _arrow_consume,
            lambda r: r.to_numpy(),
            make_read_only=_arrow_read_only_make,
            make_view=_arrow_view,
            read_only=lambda r: not r.is_mutable,
            consume_copy=lambda o: _lazy("pyarrow").Tensor.from_dlpack(o, copy=True),
        ),
        Framework(
            "tvm_ffi",
            "tvm_ffi",
            _tvm_make,
            _tvm_consume,
            _via_numpy,
            make_view=lambda v: _lazy("tvm_ffi").from_dlpack(v),
        ),
        _mxnet_framework(),
        Framework(
            "cupy",
            "cupy",
            _cupy_make,
            _cupy_consume,
            lambda r: r.get(),
            needs_gpu=True,
            consume_copy=lambda o: _lazy("cupy").from_dlpack(o, copy=True),
            make_cuda=_cupy_make,
            new_cuda_stream=_cupy_new_cuda_stream,
            current_cuda_stream=lambda: _lazy("cupy").cuda.get_current_stream(0).ptr,
            write_late=_cupy_write_late,
        ),
        Framework(
            "dlbridge",
            "dlbridge",
            _dlbridge_make,
            _dlbridge_consume,
            _via_numpy,
            make_read_only=_dlbridge_read_only_make,
            read_only=lambda r: r.readonly,
            make_view=_dlbridge_consume,
            consume_copy=_dlbridge_consume_copy,
        ),
    ]
}


def custom(spec: str) -> Framework:
    """A user's producer, `module:factory`: `factory()` returns a tensor object to check (as
    a producer only: there is no consumer to call), or a `CapsuleOnly` (a tensor of a
    framework without `__dlpack__`, with its DLPack functions: a producer through the
    adapter, and a consumer where it has a `from_capsule`)."""
    module_name, _, attribute = spec.partition(":")
    if not module_name or not attribute:
        raise ValueError(f"expected module:factory, got {spec!r}")
    first: list = []

    def make(_array):
        factory = getattr(importlib.import_module(module_name), attribute)
        made = factory()
        if not first:
            first.append(made)
        return made

    def sample():
        """The factory's first tensor (made once), which tells what the factory hands out."""
        if not first:
            make(None)
        return first[0]

    def capsule_only_sample():
        made = sample()
        return made if isinstance(made, CapsuleOnly) else None

    def has_consumer():
        adapter = capsule_only_sample()
        return adapter is not None and adapter.from_capsule is not None

    def consume(obj):
        adapter = capsule_only_sample()
        if adapter is None or adapter.from_capsule is None:
            raise NotImplementedError("a module:factory producer has no from_dlpack")
        return adapter.consume(obj)

    def to_numpy(result):
        adapter = capsule_only_sample()
        if isinstance(result, CapsuleOnly):
            return result.to_numpy(result.tensor)
        if adapter is not None:
            return adapter.to_numpy(result)
        return _via_numpy(result)

    def adapt(tensor):
        adapter = capsule_only_sample()
        return adapter.wrap(tensor) if adapter is not None else tensor

    def not_applicable():
        adapter = capsule_only_sample()
        if adapter is None:
            return {}
        if adapter.device is None:
            return {**capsule_only.NOT_APPLICABLE, **capsule_only.NO_DEVICE_FUNCTION}
        return capsule_only.NOT_APPLICABLE

    return Framework(
        spec,
        module_name,
        make,
        consume,
        to_numpy,
        user_factory=True,
        adapter=adapt,
        has_consumer=has_consumer,
        not_applicable=not_applicable,
    )


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
