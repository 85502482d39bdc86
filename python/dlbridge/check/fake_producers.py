"""Hostile and odd DLPack producers, built on the hand-made tensors of `records`: what
`dlbridge check` feeds to every framework's `from_dlpack`, and what the tests feed to
dlbridge's.

Each is a Python object with `__dlpack__` / `__dlpack_device__` that records how it was
called (`calls`) and keeps every tensor it handed out (`records`, where it makes any), so a
test can count each tensor's deleter calls: a conforming producer that negotiates the
capsule (`RecordingProducer`, `NegotiatingProducer`), one that hands out one given tensor
(`OneTensorProducer`) or whatever a factory returns (`FixedCapsuleProducer` and its
`None`/int/bytes variants), old producers without `max_version` (`OldProducer`,
`OldestProducer`, `TypeErrorOnMaxVersionProducer`), and producers that refuse
(`AlwaysTypeErrorProducer`, `BufferErrorProducer`).

`OneTensorProducer` and `NegotiatingProducer` made with `keep_capsules=True` also keep every
capsule they hand out (`capsules`), so that what the consumer did to it can be read after the
import: `capsule_names(producer)` gives the name each carries then (`used_dltensor` or
`used_dltensor_versioned` once a consumer took ownership). Kept capsules are not destroyed
while the producer keeps them: drop them (`producer.capsules.clear()`) before counting
deleter calls.
"""

from __future__ import annotations

import enum
import gc

from .abi import FLAG_IS_COPIED, kDLCPU
from .capsules import capsule_name
from .records import ManagedRecord, make_managed


class CPUDeviceType(enum.IntEnum):
    kDLCPU = 1
    kDLCUDA = 2


class RecordingProducer:
    """A well-behaved producer over hand-made tensors that records how it was called.

    `calls` holds one dict per `__dlpack__` call with exactly the keywords the consumer passed.
    It returns a legacy capsule when max_version is absent/None/major<1, else a versioned one.
    `device` is what `__dlpack_device__` reports (the tensor itself always says CPU).
    `refuse_copy` makes `copy=True` raise `BufferError`, as a producer that cannot copy does
    (tvm-ffi).
    """

    def __init__(
        self,
        shape=(2, 3),
        dtype="float32",
        *,
        device=(kDLCPU, 0),
        values=None,
        honour_copy: bool = False,
        flags: int = 0,
        refuse_device: bool = False,
        refuse_copy: bool = False,
    ):
        self.shape = shape
        self.dtype = dtype
        self.device = device
        self.values = values
        self.flags = flags
        self.honour_copy = honour_copy
        self.refuse_device = refuse_device
        self.refuse_copy = refuse_copy
        self.calls: list[dict] = []
        self.records: list[ManagedRecord] = []
        self.buffer_record = make_managed(shape, dtype, values=values)  # the "original" memory

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        unknown = set(kwargs) - {"stream", "max_version", "dl_device", "copy"}
        if unknown:
            raise TypeError(f"unexpected keyword arguments {sorted(unknown)}")
        dl_device = kwargs.get("dl_device")
        if self.refuse_device and dl_device is not None and tuple(dl_device) != (kDLCPU, 0):
            raise BufferError(f"cannot export to device {dl_device}")
        max_version = kwargs.get("max_version")
        versioned = max_version is not None and max_version[0] >= 1
        flags = self.flags
        data = self.buffer_record.data_address
        copy = kwargs.get("copy")
        if copy and self.refuse_copy:
            raise BufferError("copy not supported by this producer")
        if copy and self.honour_copy:
            fresh = make_managed(self.shape, self.dtype, values=self.values)
            data = fresh.data_address
            self.records.append(fresh)  # keeps the buffer alive
            flags |= FLAG_IS_COPIED
        record = make_managed(
            self.shape, self.dtype, versioned=versioned, data=data, flags=flags if versioned else 0
        )
        record.keep.append(self.buffer_record)
        self.records.append(record)
        return record.capsule()


class FixedCapsuleProducer:
    """`__dlpack__` returns whatever `factory()` returns (a capsule, None, an int, ...)."""

    def __init__(self, factory, device=(kDLCPU, 0)):
        self.factory = factory
        self.device = device
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append(
            {"stream": stream, "max_version": max_version, "dl_device": dl_device, "copy": copy}
        )
        return self.factory()


class OneTensorProducer:
    """`__dlpack__` hands out one capsule over a given ManagedRecord (once). With
    `keep_capsules`, every capsule handed out is kept in `capsules` (see `capsule_names`)."""

    def __init__(
        self,
        record: ManagedRecord,
        device=(kDLCPU, 0),
        name: bytes | None = None,
        *,
        keep_capsules: bool = False,
    ):
        self.record = record
        self.device = device
        self.name = name
        self.calls: list[dict] = []
        self.keep_capsules = keep_capsules
        self.capsules: list = []

    def __dlpack_device__(self):
        return self.device

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        return _kept(self, self.record.capsule(self.name))

    def capsule_names(self) -> list:
        """The names the kept capsules carry now (see `capsule_names`)."""
        return capsule_names(self)


class NoneProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: None)


class IntProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: 42)


class NotACapsuleProducer(FixedCapsuleProducer):
    def __init__(self):
        super().__init__(lambda: b"dltensor")


class AlwaysTypeErrorProducer:
    """Raises TypeError for every call pattern (as an object with a broken __dlpack__)."""

    def __init__(self):
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, *args, **kwargs):
        self.calls.append(dict(kwargs))
        raise TypeError("this producer refuses every call")


class OldProducer:
    """A pre-2023 producer: `__dlpack__(self, stream=None)`; passing max_version is a
    TypeError raised by Python itself. It returns legacy capsules."""

    def __init__(self, shape=(2, 3), dtype="float32", values=None):
        self.calls: list[dict] = []
        self.shape, self.dtype, self.values = shape, dtype, values
        self.records: list[ManagedRecord] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, stream=None):
        self.calls.append({} if stream is None else {"stream": stream})
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class OldestProducer(OldProducer):
    """`__dlpack__(self)` with no parameters at all."""

    def __dlpack__(self):  # type: ignore[override]
        self.calls.append({})
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class TypeErrorOnMaxVersionProducer(OldProducer):
    """Accepts every keyword in its signature but raises TypeError when max_version is
    passed (some producers check explicitly rather than by signature)."""

    def __dlpack__(self, **kwargs):  # type: ignore[override]
        self.calls.append(dict(kwargs))
        if "max_version" in kwargs:
            raise TypeError("max_version is not supported")
        record = make_managed(self.shape, self.dtype, versioned=False, values=self.values)
        self.records.append(record)
        return record.capsule()


class BufferErrorProducer:
    def __init__(self, message="this tensor cannot be exported"):
        self.message = message
        self.calls: list[dict] = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, **kwargs):
        self.calls.append(dict(kwargs))
        raise BufferError(self.message)


class NegotiatingProducer:
    """A conforming producer over hand-made tensors: a legacy capsule unless `max_version`
    asks for major 1 or later, a fresh tensor per call, every call and tensor recorded.
    `make(versioned)` builds the tensor; `read_only` refuses the legacy path as the standard
    says a producer must."""

    def __init__(self, make, read_only: bool = False, *, keep_capsules: bool = False):
        self.make = make
        self.read_only = read_only
        self.calls: list = []
        self.records: list = []
        self.keep_capsules = keep_capsules
        self.capsules: list = []

    def __dlpack_device__(self):
        return (kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"max_version": max_version, "copy": copy})
        versioned = max_version is not None and max_version[0] >= 1
        if self.read_only and not versioned:
            raise BufferError("read-only data cannot be exported as a legacy capsule")
        record = self.make(versioned)
        self.records.append(record)
        return _kept(self, record.capsule())

    def capsule_names(self) -> list:
        """The names the kept capsules carry now (see `capsule_names`)."""
        return capsule_names(self)

    def asked_versioned(self) -> bool:
        return any(c["max_version"] is not None and c["max_version"][0] >= 1 for c in self.calls)

    def deleter_calls(self) -> list:
        gc.collect()
        return [record.deleter_calls for record in self.records]


def _kept(producer, capsule):
    """`capsule`, kept in `producer.capsules` where the producer keeps what it hands out."""
    if producer.keep_capsules:
        producer.capsules.append(capsule)
    return capsule


def capsule_names(producer) -> list:
    """[bytes or None]: the name each capsule `producer` kept (`keep_capsules=True`) carries
    now, in the order handed out."""
    return [capsule_name(capsule) for capsule in producer.capsules]
