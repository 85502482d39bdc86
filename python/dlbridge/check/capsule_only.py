"""Frameworks that speak DLPack through functions only: `CapsuleOnly`, the adapter that lets
the checker drive them as producers and consumers.

Some frameworks predate `__dlpack__`: MXNet 1.9 has `mx.nd.to_dlpack_for_read(array)` (a
legacy `dltensor` capsule) and `mx.nd.from_dlpack(capsule)`, and its arrays have neither
`__dlpack__` nor `__dlpack_device__`. `CapsuleOnly(tensor, to_capsule=..., from_capsule=...)`
puts such a tensor and the framework's two functions together:

- as a producer, it is an object with `__dlpack__` and `__dlpack_device__` whose capsule is
  `to_capsule(tensor)`. It answers the keywords as the protocol says a producer that can give
  legacy capsules only does (as JAX does), so that what a consumer does with it is the
  consumer's doing: any `max_version` gets the legacy capsule (the standard lets a producer
  answer with another version; the consumer must check the name); `dl_device` None or the
  tensor's own device is honoured, another raises BufferError; `copy` None or False gives the
  framework's capsule (shared memory), `copy=True` raises BufferError (the function cannot
  copy: a consumer that honours copy=True imports without it and copies itself);
  `stream` None only, anything else raises BufferError (the function cannot make the data
  ready on a stream). `__dlpack_device__` is `device(tensor)` where given (the framework's own
  answer, e.g. MXNet's context), else the device written in a capsule of the tensor.
- as a consumer, `consume(obj)` is `from_capsule(obj.__dlpack__())` (no keywords: the
  function takes legacy capsules), or `from_capsule(obj)` for a capsule.

The rules that say nothing about such a framework, because the adapter answers them and not
the framework, are `NOT_APPLICABLE`: `dlbridge check` reports them n/a with the reason.
"""

from __future__ import annotations

from typing import Any, Callable

from .capsules import is_capsule, read_capsule

#: Rules whose subject is the adapter's own behaviour for a capsule-only framework, with why
#: they are n/a there.
NOT_APPLICABLE = {
    "producer.keyword-only": "capsule-only: no __dlpack__ (the checker's adapter stands in)",
    "producer.accepts-keywords": "capsule-only: its export function takes no keywords",
    "producer.versioned-capsule": (
        "capsule-only: its export function cannot be asked for a version (legacy capsules)"
    ),
    "producer.copy-flag": "capsule-only: its export function cannot be asked for a copy",
    "producer.no-copy-shares": "capsule-only: its export function cannot be asked for a copy",
    "producer.device-tuple": "capsule-only: no __dlpack_device__ (the adapter answers)",
    "producer.device-id-int": "capsule-only: no __dlpack_device__ (the adapter answers)",
    "producer.bad-stream": "capsule-only: its export function takes no stream",
    "producer.bad-stream-error-type": "capsule-only: its export function takes no stream",
    "producer.unreachable-device": "capsule-only: its export function takes no device",
    "producer.copy-false-needs-copy": "capsule-only: its export function takes no device",
    "consumer.old-producer": (
        "capsule-only: the adapter calls __dlpack__() without keywords for from_capsule"
    ),
    "consumer.producer-refusals": (
        "capsule-only: from_capsule takes capsules, which the adapter asks __dlpack__ for"
    ),
    "consumer.producer-refusal-error-type": (
        "capsule-only: from_capsule takes capsules, which the adapter asks __dlpack__ for"
    ),
}
#: The copy rules of a capsule-only consumer: the checker's adapter imports through
#: `from_capsule`, which takes a capsule and has no copy parameter to pass.
NO_COPY_ROUTE = dict.fromkeys(
    ("consumer.copy-true", "consumer.copy-true-refused"),
    "capsule-only: the checker's adapter imports through from_capsule, which takes a "
    "capsule and cannot be asked for a copy",
)
#: Without a `device` function, `__dlpack_device__` reads the capsule: comparing the two says
#: nothing.
NO_DEVICE_FUNCTION = {
    "producer.device-matches-capsule": (
        "capsule-only without a device function: the adapter reads the device from a capsule"
    ),
}


class CapsuleOnly:
    """A tensor of a framework that has DLPack functions but no `__dlpack__`, with those
    functions: what a `module:factory` returns to have such a framework checked.

    `to_capsule(tensor)` returns a legacy `dltensor` capsule of a tensor (MXNet:
    `mx.nd.to_dlpack_for_read`); `from_capsule(capsule)` imports one (MXNet:
    `mx.nd.from_dlpack`; None where the framework cannot import: no consumer rules then);
    `to_numpy(tensor)` reads one of the framework's tensors back as NumPy (MXNet:
    `lambda a: a.asnumpy()`; None: through `to_capsule` and dlbridge); `device(tensor)` is
    the framework's own `(device_type, device_id)` of a tensor (None: read from a capsule).

    The object is itself a producer (`__dlpack__`, `__dlpack_device__`) over `tensor`,
    answering as a legacy-only producer (see the module's docstring).
    """

    def __init__(
        self,
        tensor: Any,
        *,
        to_capsule: Callable[[Any], Any],
        from_capsule: Callable[[Any], Any] | None = None,
        to_numpy: Callable[[Any], Any] | None = None,
        device: Callable[[Any], tuple[int, int]] | None = None,
    ):
        if not callable(to_capsule):
            raise TypeError(f"to_capsule must be callable, got {type(to_capsule).__name__}")
        for name, value in (("from_capsule", from_capsule), ("to_numpy", to_numpy)):
            if value is not None and not callable(value):
                raise TypeError(f"{name} must be callable or None, got {type(value).__name__}")
        if device is not None and not callable(device):
            raise TypeError(f"device must be callable or None, got {type(device).__name__}")
        self.tensor = tensor
        self.to_capsule = to_capsule
        self.from_capsule = from_capsule
        self.to_numpy_function = to_numpy
        self.device = device

    def __repr__(self) -> str:
        return f"CapsuleOnly({type(self.tensor).__name__}, to_capsule={self.to_capsule!r})"

    def wrap(self, tensor: Any) -> CapsuleOnly:
        """Another tensor of the same framework, with the same functions."""
        return CapsuleOnly(
            tensor,
            to_capsule=self.to_capsule,
            from_capsule=self.from_capsule,
            to_numpy=self.to_numpy_function,
            device=self.device,
        )

    # ---- the producer ---------------------------------------------------------------------

    def __dlpack_device__(self) -> tuple[int, int]:
        if self.device is not None:
            device_type, device_id = self.device(self.tensor)
            return int(device_type), int(device_id)
        device = read_capsule(self.to_capsule(self.tensor))["device"]
        return int(device[0]), int(device[1])

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        if stream is not None:
            raise BufferError(
                f"stream={stream!r}: the framework's export function cannot make the data "
                "ready on a stream"
            )
        if dl_device is not None and tuple(int(v) for v in dl_device) != (self.__dlpack_device__()):
            raise BufferError(
                f"dl_device={tuple(dl_device)!r}: the framework's export function cannot move "
                f"the data from {self.__dlpack_device__()}"
            )
        if copy:
            raise BufferError("copy=True: the framework's export function cannot copy")
        # Any max_version: the legacy capsule (the consumer checks the name).
        return self.to_capsule(self.tensor)

    # ---- the consumer ---------------------------------------------------------------------

    def consume(self, obj: Any) -> Any:
        """`from_capsule` of `obj` (a capsule, or a producer asked `__dlpack__()`)."""
        if self.from_capsule is None:
            raise NotImplementedError("this capsule-only framework has no from_capsule")
        return self.from_capsule(obj if is_capsule(obj) else obj.__dlpack__())

    def to_numpy(self, tensor: Any):
        """A tensor of the framework read back as NumPy."""
        if self.to_numpy_function is not None:
            return self.to_numpy_function(tensor)
        import numpy as np

        import dlbridge

        return np.from_dlpack(dlbridge.from_dlpack(self.to_capsule(tensor)))
