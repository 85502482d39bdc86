"""Tensors of any DLPack producer through Ray's object store and Dask's workers, zero-copy
where the receiving framework allows it, with dlbridge as the serializer.

>>> import numpy as np, dlbridge.distributed as dd
>>> header, frames = dd.serialize(np.arange(6, dtype=np.float32).reshape(2, 3))
>>> header["dtype"], header["shape"], header["kind"]
('float32', [2, 3], 'numpy')
>>> dd.deserialize(header, frames)
array([[0., 1., 2.],
       [3., 4., 5.]], dtype=float32)

What a tensor becomes on the way:

- **Sending** reads the tensor through DLPack (`dlbridge.from_dlpack`: no code for any one
  framework), and hands the transport a small header (`dlbridge._dlbridge` module `frames`:
  dtype, bfloat16 and float8 included, shape, strides, device, flags, byte count, and the
  `kind` of tensor to rebuild) and the bytes as one out-of-band buffer, a view of the
  tensor's memory. A strided tensor is compacted once, on the sender.
- **Receiving** validates the header against the bytes (a truncated, corrupted or hostile
  frame is a `ValueError` or `TypeError` naming the field) and rebuilds a tensor of the
  sender's kind over the bytes the transport delivered:

  - NumPy arrays and `dlbridge.Tensor` are views of those bytes (zero-copy), read-only where
    the bytes are: Ray's object store is shared memory that no reader may write, so an array
    from `ray.get` is read-only, as Ray's own NumPy path makes it.
  - PyTorch, JAX, PaddlePaddle and TensorFlow cannot hold read-only memory (PyTorch and
    Paddle write memory flagged READ_ONLY; JAX and TensorFlow take only legacy DLPack
    capsules, which cannot say read-only), so over read-only bytes they get one copy, made by
    dlbridge, and are views (zero-copy) over writable bytes, such as the frames Dask's workers
    receive. What each framework can hold is one table, dlbridge-pyo3's, which `return_like`
    reads too (`dlbridge._dlbridge._framework_table()`); the frames are row-major compact,
    a layout every framework takes.
  - Bytes misaligned for the dtype are copied; `dlbridge.explain` says which happened, and
    why, in its `rebuilt` entry for a `dlbridge.Tensor`.

- **Device tensors** (CUDA, ROCm, ...) are refused with a `TypeError` naming the device: the
  frames of this version carry host memory. Copy the tensor to the host first (`.cpu()`), or
  use the framework's own GPU transport. The header carries `device` and `strides` so that a
  later version can send device memory (CUDA IPC, Ray's tensor transports) in the same format.

Registering:

- `register()` registers dlbridge with Ray (`ray.util.register_serializer`) and Dask
  (`distributed.protocol`'s `dask_serialize` / `dask_deserialize`), in this process, for the
  tensor types of the frameworks named (`"numpy"`, `"torch"`, `"jax"`, `"paddle"`,
  `"tensorflow"`, `"dlbridge"`), of user types (`TensorType`), or, by default, of every
  framework already imported, plus NumPy and `dlbridge.Tensor`. Dask's registrations of
  frameworks not yet imported are made when their first tensor is serialized.
- Ray workers register with `ray.init(runtime_env={"worker_process_setup_hook":
  dlbridge.distributed.ray_setup_hook()})`; Dask workers with `register(client=client)`,
  which installs a worker plugin on every worker, present and future.
"""

from __future__ import annotations

import contextlib
import importlib.util
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Callable

import dlbridge

# The extension's frame functions (private: `dlbridge._dlbridge` has no stubs of its own).
_extension: Any = importlib.import_module("dlbridge._dlbridge")
_frame_of = _extension._frame_of
_tensor_from_frame = _extension._tensor_from_frame
#: What each framework's tensors can hold of a tensor handed to them, by kind: dlbridge-pyo3's
#: table (`FRAMEWORK_HOLDINGS`), the one `return_like` reads, so that a tensor goes to a
#: framework by one rule whichever way it goes.
_FRAMEWORK_TABLE: dict[str, dict[str, Any]] = _extension._framework_table()


def _holds_read_only(kind: str) -> bool:
    """Whether the framework `kind` (a kind of `FRAMEWORKS`) holds read-only memory as it
    is, by the table."""
    return bool(_FRAMEWORK_TABLE[kind]["holds_read_only"])


__all__ = [
    "FRAMEWORKS",
    "SubclassNotSent",
    "TensorType",
    "deserialize",
    "ray_setup_hook",
    "register",
    "register_dask",
    "register_ray",
    "serialize",
    "tensor_type",
]


@dataclass(frozen=True)
class TensorType:
    """A tensor type dlbridge serializes, and how the receiver rebuilds one.

    `kind` is the name that travels in the header (a framework's name, or any string naming a
    user type); `cls` the class whose instances are serialized (instances of subclasses are
    serialized by Ray and Dask only where they register the subclass too); `from_dlpack`
    makes one from a `dlbridge.Tensor` (a DLPack producer); `holds_read_only` says whether
    the result can be a view of read-only memory that no one writes (True for NumPy, whose
    arrays have `writeable=False`); where it is False, read-only bytes are copied first. The
    frameworks dlbridge knows take it from dlbridge-pyo3's table (`_FRAMEWORK_TABLE`).
    """

    kind: str
    cls: type
    from_dlpack: Callable[[dlbridge.Tensor], Any]
    holds_read_only: bool = False


def _numpy_type() -> TensorType:
    import numpy as np

    return TensorType("numpy", np.ndarray, np.from_dlpack, _holds_read_only("numpy"))


def _torch_type() -> TensorType:
    import torch

    return TensorType("torch", torch.Tensor, torch.from_dlpack, _holds_read_only("torch"))


def _jax_type() -> TensorType:
    import jax.dlpack
    import jax.numpy

    # jax.Array is abstract: its arrays are instances of one concrete class.
    return TensorType(
        "jax", type(jax.numpy.zeros(())), jax.dlpack.from_dlpack, _holds_read_only("jax")
    )


def _paddle_from_dlpack(tensor: dlbridge.Tensor) -> Any:
    import paddle

    return paddle.from_dlpack(tensor)


def _paddle_type() -> TensorType:
    import paddle

    return TensorType("paddle", paddle.Tensor, _paddle_from_dlpack, _holds_read_only("paddle"))


def _tensorflow_from_dlpack(tensor: dlbridge.Tensor) -> Any:
    import tensorflow as tf

    # TensorFlow's from_dlpack takes a legacy capsule, not a producer.
    return tf.experimental.dlpack.from_dlpack(tensor.__dlpack__())


def _tensorflow_type() -> TensorType:
    import tensorflow as tf

    return TensorType(
        "tensorflow",
        type(tf.constant(0)),
        _tensorflow_from_dlpack,
        _holds_read_only("tensorflow"),
    )


def _dlbridge_type() -> TensorType:
    return TensorType(
        "dlbridge", dlbridge.Tensor, lambda tensor: tensor, _holds_read_only("dlbridge")
    )


#: The frameworks dlbridge knows: kind -> (the module whose import makes it available, the
#: function that gives its `TensorType`, importing the framework).
FRAMEWORKS: dict[str, tuple[str, Callable[[], TensorType]]] = {
    "numpy": ("numpy", _numpy_type),
    "torch": ("torch", _torch_type),
    "jax": ("jax", _jax_type),
    "paddle": ("paddle", _paddle_type),
    "tensorflow": ("tensorflow", _tensorflow_type),
    "dlbridge": ("dlbridge", _dlbridge_type),
}

#: The types registered in this process, by kind (the receiver's table).
_REGISTERED: dict[str, TensorType] = {}


def tensor_type(kind: str) -> TensorType:
    """The `TensorType` of `kind`: one registered in this process, else a framework dlbridge
    knows (imported now). `KeyError` names the kinds known."""
    registered = _REGISTERED.get(kind)
    if registered is not None:
        return registered
    if kind in FRAMEWORKS:
        return _known_type(kind)
    known = sorted(set(FRAMEWORKS) | set(_REGISTERED))
    raise KeyError(
        f"dlbridge.distributed: no tensor type of kind {kind!r} here (known: {known}); "
        "register the user type (dlbridge.distributed.register(TensorType(...))) in this "
        "process too"
    )


#: The known frameworks' types made so far (making one imports the framework).
_KNOWN: dict[str, TensorType] = {}


def _known_type(kind: str) -> TensorType:
    known = _KNOWN.get(kind)
    if known is None:
        known = _KNOWN[kind] = FRAMEWORKS[kind][1]()
    return known


class SubclassNotSent(TypeError):
    """`serialize` was given an instance of a subclass of a tensor type (a NumPy masked
    array, a `torch.nn.Parameter`): DLPack carries its data but not what the subclass adds
    (a mask, `requires_grad`), so dlbridge does not send it. Dask then falls back to its
    other serializers; Ray registers exact classes only and never asks."""


def _kind_of(x: Any) -> str:
    cls = type(x)
    candidates = list(_REGISTERED.values())
    toplevel = cls.__module__.partition(".")[0]
    framework = {"jaxlib": "jax"}.get(toplevel, toplevel)
    if framework in FRAMEWORKS and framework not in _REGISTERED:
        candidates.append(_known_type(framework))
    for entry in candidates:
        if cls is entry.cls:
            return entry.kind
    for entry in candidates:
        if isinstance(x, entry.cls):
            raise SubclassNotSent(
                f"dlbridge.distributed sends {_qualified(entry.cls)} but not its subclass "
                f"{_qualified(cls)}: DLPack would carry its data and lose what the subclass "
                "adds; send it as the base type, or register a TensorType for it"
            )
    # Any other DLPack producer comes back as a dlbridge.Tensor.
    return "dlbridge"


def _qualified(cls: type) -> str:
    return f"{cls.__module__}.{cls.__qualname__}"


def serialize(x: Any, kind: str | None = None) -> tuple[dict[str, Any], list[Any]]:
    """`(header, frames)` of any DLPack producer's host tensor: the header a dict of plain
    values, `frames` one `pickle.PickleBuffer` over the tensor's bytes (a compact copy for a
    strided tensor). `kind` names what the receiver rebuilds (default: the sender's
    framework, or `"dlbridge"` for a producer dlbridge does not know). A device tensor is
    refused with a `TypeError` naming its device, an instance of a subclass of a tensor type
    (a masked array) with `SubclassNotSent`."""
    if kind is None:
        kind = _kind_of(x)
    tensor = x if isinstance(x, dlbridge.Tensor) else dlbridge.from_dlpack(x)
    try:
        header, data = _frame_of(tensor)
    except TypeError as error:
        name = f"{type(x).__module__}.{type(x).__qualname__}"
        raise TypeError(
            f"dlbridge.distributed cannot send this {name}: {error} (frames carry host "
            "memory in this version)"
        ) from None
    _check_rebuildable(x, kind, header["dtype"])
    header["kind"] = kind
    return header, [data]


#: `_rebuilt_as`'s answers so far, by (kind, dtype).
_REBUILT_AS: dict[tuple[str, str], tuple[str | None, str | None]] = {}


def _rebuilt_as(kind: str, dtype: str) -> tuple[str | None, str | None]:
    """What `kind` makes of a `dtype` tensor from DLPack, found by trying it once on a
    two-element tensor here: `(its dtype's name, None)`, or `(None, why it fails)` (JAX 0.10
    exports float4_e2m1fn but cannot import it); `(None, None)` where nothing can be tried."""
    answer = _REBUILT_AS.get((kind, dtype))
    if answer is None:
        answer = _REBUILT_AS[(kind, dtype)] = _try_rebuilding(kind, dtype)
    return answer


def _try_rebuilding(kind: str, dtype: str) -> tuple[str | None, str | None]:
    if kind == "dlbridge":
        return None, None
    try:
        target = tensor_type(kind)
    except KeyError:
        return None, None  # a user's type registered elsewhere only: the receiver decides
    try:
        probe = dlbridge.zeros(2, dtype)
    except (TypeError, ValueError):
        return None, None
    try:
        made = target.from_dlpack(probe)
    except Exception as error:  # noqa: BLE001 - any failure of the framework's import
        return None, f"{type(error).__name__}: {error}"
    made_dtype = getattr(made, "dtype", None)
    return (None if made_dtype is None else str(made_dtype)), None


def _check_rebuildable(x: Any, kind: str, dtype: str) -> None:
    """Refuses, on the sender, a tensor the receiver could not rebuild as it was: one its
    framework cannot import from DLPack, or would import as another dtype (PyTorch's int1
    to int7 travel as int8)."""
    made_dtype, failure = _rebuilt_as(kind, dtype)
    if failure is not None:
        raise TypeError(
            f"dlbridge.distributed does not send this {dtype} tensor as {kind!r}: {kind} "
            f"cannot make a {dtype} tensor from DLPack ({failure}), so the receiver could "
            "not rebuild it; convert it to another dtype first"
        )
    sent_dtype = getattr(x, "dtype", None)
    if made_dtype is not None and sent_dtype is not None and str(sent_dtype) != made_dtype:
        raise TypeError(
            f"dlbridge.distributed does not send this {sent_dtype} tensor: DLPack carries it "
            f"as {dtype}, and {kind} would rebuild it as {made_dtype}, another dtype; "
            "convert it first"
        )


def deserialize(header: dict[str, Any], frames: Sequence[Any]) -> Any:
    """The tensor `serialize` described: of the header's `kind`, over the bytes of
    `frames[0]` (zero-copy where the kind can hold them: see the module's documentation).
    Every header field is checked against the bytes first."""
    if not isinstance(header, dict):
        raise TypeError(f"a dlbridge frame's header must be a dict, got {type(header).__name__}")
    if isinstance(frames, (bytes, bytearray, memoryview, str)) or not isinstance(frames, Sequence):
        raise TypeError(
            "a dlbridge frame's buffers must be a list of one bytes-like object, got "
            f"{type(frames).__name__}"
        )
    if len(frames) != 1:
        raise ValueError(f"a dlbridge frame has one buffer of bytes, got {len(frames)}")
    kind = header.get("kind")
    if not isinstance(kind, str):
        raise TypeError(f"a dlbridge frame's header field 'kind' must be a str, got {kind!r}")
    target = tensor_type(kind)
    tensor = _tensor_from_frame(header, frames[0])
    # The table's rule (return_like's): read-only bytes are copied for a framework that cannot
    # hold them. Layouts need nothing: a frame is row-major compact, which every framework
    # takes.
    if tensor.readonly and not target.holds_read_only:
        tensor = tensor.copy()
    try:
        rebuilt = target.from_dlpack(tensor)
    except (TypeError, ValueError, BufferError, MemoryError):
        raise
    except Exception as error:  # a framework's own failure, said as a refusal
        raise TypeError(
            f"dlbridge.distributed: {kind} cannot rebuild a {tensor.dtype} frame of shape "
            f"{tuple(tensor.shape)} ({type(error).__name__}: {error}); a sender of the same "
            "configuration would have refused to send it"
        ) from error
    if kind != "dlbridge":
        _check_rebuilt(rebuilt, tensor, kind)
    return rebuilt


def _check_rebuilt(rebuilt: Any, tensor: dlbridge.Tensor, kind: str) -> None:
    """Refuses, on the receiver, a tensor its framework rebuilt with another dtype or shape
    than the frame's, rather than hand over other values: JAX narrows 64-bit dtypes while
    `jax_enable_x64` is off (a uint64 frame would arrive as uint32, its values cut), which the
    sender cannot know of when the two processes are configured differently. Read through
    DLPack, without a copy; a framework whose tensors do not export DLPack is not checked."""
    try:
        seen = dlbridge.from_dlpack(rebuilt)
    except (TypeError, BufferError):
        return
    if seen.dtype == tensor.dtype and tuple(seen.shape) == tuple(tensor.shape):
        return
    hint = ""
    if kind == "jax":
        hint = (
            " (JAX narrows 64-bit dtypes while jax_enable_x64 is off: "
            "jax.config.update('jax_enable_x64', True) in the receiving process keeps them)"
        )
    raise TypeError(
        f"dlbridge.distributed: {kind} rebuilt a {tensor.dtype} frame of shape "
        f"{tuple(tensor.shape)} as {seen.dtype} of shape {tuple(seen.shape)}{hint}; refused "
        "rather than handing over other values"
    )


def _types(given: Iterable[str | type | TensorType]) -> list[TensorType]:
    named: list[str | type | TensorType] = list(given)
    if not named:
        # The frameworks imported, NumPy where it is installed, and dlbridge.Tensor.
        numpy_installed = importlib.util.find_spec("numpy") is not None
        named = [
            kind
            for kind, (module, _) in FRAMEWORKS.items()
            if module in sys.modules or kind == "dlbridge" or (kind == "numpy" and numpy_installed)
        ]
    types = []
    for entry in named:
        if isinstance(entry, TensorType):
            types.append(entry)
        elif isinstance(entry, str):
            if entry not in FRAMEWORKS:
                raise ValueError(
                    f"dlbridge.distributed knows the frameworks {sorted(FRAMEWORKS)}, not "
                    f"{entry!r}; describe another type with TensorType"
                )
            types.append(_known_type(entry))
        elif isinstance(entry, type):
            match = [
                kind
                for kind, (module, _) in FRAMEWORKS.items()
                if module in sys.modules and _known_type(kind).cls is entry
            ]
            if not match:
                raise ValueError(
                    f"dlbridge.distributed does not know how to rebuild {entry.__qualname__}: "
                    "describe it with TensorType(kind, cls, from_dlpack)"
                )
            types.append(_known_type(match[0]))
        else:
            raise TypeError(
                f"register() takes framework names, tensor classes or TensorType, got {entry!r}"
            )
    for registered in types:
        _REGISTERED[registered.kind] = registered
    return types


def _ray_serializer(kind: str) -> Callable[[Any], tuple[dict[str, Any], Any]]:
    def serializer(x: Any) -> tuple[dict[str, Any], Any]:
        header, frames = serialize(x, kind)
        return header, frames[0]

    return serializer


def _ray_deserialize(value: tuple[dict[str, Any], Any]) -> Any:
    header, data = value
    return deserialize(header, [data])


def register_ray(*types: str | type | TensorType) -> list[str]:
    """Registers dlbridge as Ray's serializer of `types` (see `register`) in this process;
    the kinds registered."""
    import ray.util

    registered = _types(types)
    for entry in registered:
        ray.util.register_serializer(
            entry.cls, serializer=_ray_serializer(entry.kind), deserializer=_ray_deserialize
        )
    return [entry.kind for entry in registered]


def _dask_serializer(kind: str) -> Callable[[Any], tuple[dict[str, Any], list[Any]]]:
    def dask_serialize(x: Any) -> tuple[dict[str, Any], list[Any]]:
        # Dask dispatches subclasses here too (by the class's MRO): leave them to Dask's
        # other serializers, which keep what the subclass adds.
        registered = _REGISTERED.get(kind)
        if registered is not None and type(x) is not registered.cls:
            raise NotImplementedError(f"dlbridge sends {_qualified(registered.cls)} exactly")
        header, frames = serialize(x, kind)
        # Dask's own entries share the header: keep ours under one key. An empty frame goes
        # first: Dask's TCP comm reads a message's first buffer of this kind into the buffer
        # of its small frames, at any offset (misaligned: dlbridge would have to copy), and
        # each later one into memory of its own, which is aligned.
        return {"dlbridge": header}, [memoryview(bytearray(0)), *frames]

    return dask_serialize


def _dask_deserialize(header: dict[str, Any], frames: list[Any]) -> Any:
    ours = header.get("dlbridge") if isinstance(header, dict) else None
    if not isinstance(ours, dict):
        raise ValueError("a Dask frame without dlbridge's header entry ('dlbridge')")
    if len(frames) != 2 or memoryview(frames[0]).nbytes != 0:
        raise ValueError(
            f"a Dask message of dlbridge has an empty frame and the tensor's, got "
            f"{len(frames)} frames"
        )
    return deserialize(ours, frames[1:])


def _dask_register(entry: TensorType) -> None:
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    # Dask's own registration of the type, if any, is made first (it is lazy), so that
    # dlbridge's replaces it rather than the other way round.
    for dispatch in (dask_serialize, dask_deserialize):
        with contextlib.suppress(TypeError):  # none registered
            dispatch.dispatch(entry.cls)
    _dask_bind(entry)


def _dask_bind(entry: TensorType) -> None:
    """dlbridge's serializer and deserializer as Dask's for `entry`'s class."""
    from distributed.protocol.serialize import dask_deserialize, dask_serialize

    dask_serialize.register(entry.cls)(_dask_serializer(entry.kind))
    dask_deserialize.register(entry.cls)(_dask_deserialize)


def register_dask(*types: str | type | TensorType, client: Any = None) -> list[str]:
    """Registers dlbridge as Dask's serializer of `types` (see `register`) in this process,
    and on every worker of `client` (present and future, through a worker plugin); the
    kinds registered. With no `types`, frameworks dlbridge knows that are not imported yet
    are registered when Dask first meets one of their tensors."""
    from distributed.protocol.serialize import dask_serialize

    registered = _types(types)
    for entry in registered:
        _dask_register(entry)
    if not types:
        for kind, (module, _) in FRAMEWORKS.items():
            if kind not in _REGISTERED and module not in ("numpy", "dlbridge"):
                dask_serialize.register_lazy(module)(_lazy_dask_registration(kind))
    if client is not None:
        client.register_plugin(_worker_plugin(tuple(types)), name="dlbridge-serializers")
    return [entry.kind for entry in registered]


def _lazy_dask_registration(kind: str) -> Callable[[], None]:
    # Called by Dask's dispatch while it looks the class up: binding directly (asking the
    # dispatch again here would call this registration again).
    def register_when_imported() -> None:
        entry = _REGISTERED[kind] = _known_type(kind)
        _dask_bind(entry)

    return register_when_imported


def _worker_plugin(types: tuple[Any, ...]) -> Any:
    """A Dask worker plugin that registers dlbridge for `types` on each worker as it starts
    (the class is made here, as Dask is imported only when registering with it)."""
    from distributed.diagnostics.plugin import WorkerPlugin

    def setup(self: Any, worker: Any) -> None:
        register_dask(*types)

    plugin_class = type("DlbridgeSerializers", (WorkerPlugin,), {"setup": setup})
    return plugin_class()


def ray_setup_hook(*types: str | type | TensorType) -> Callable[[], None]:
    """A `worker_process_setup_hook` for `ray.init(runtime_env=...)`: registers dlbridge
    with Ray in each worker for `types` (names travel best: a class must be importable
    there)."""

    def setup() -> None:
        register_ray(*types)

    return setup


def register(
    *types: str | type | TensorType,
    ray: bool | None = None,
    dask: bool | None = None,
    client: Any = None,
) -> list[str]:
    """Registers dlbridge as the serializer of `types` with Ray and with Dask, in this process
    (and on `client`'s Dask workers); the kinds registered.

    `types`: framework names (`"numpy"`, `"torch"`, `"jax"`, `"paddle"`, `"tensorflow"`,
    `"dlbridge"`), their tensor classes, or `TensorType` for any other DLPack producer;
    none: every framework already imported, plus NumPy and `dlbridge.Tensor`. `ray` and
    `dask`: whether to register with each (default: where it is installed)."""
    if ray is None:
        ray = importlib.util.find_spec("ray") is not None
    if dask is None:
        dask = importlib.util.find_spec("distributed") is not None
    if not ray and not dask:
        raise RuntimeError(
            "dlbridge.distributed.register: neither Ray nor Dask's distributed is installed"
        )
    kinds: list[str] = []
    if ray:
        kinds = register_ray(*types)
    if dask:
        kinds = register_dask(*types, client=client)
    return kinds
