"""Atheris fuzzer of everything a Python producer controls when dlbridge imports from it: the
capsule (any name, any context, any descriptor bytes, a destructor or none), the producer's
`__dlpack__` and `__dlpack_device__` (wrong types, exceptions, reused or renamed capsules,
keywords refused), `from_dlpack`'s own keywords, dlbridge's typed kernel arguments reading
and writing what was imported, and dlbridge exporting it again (`Tensor.__dlpack__` with any
request: the export rules of dlbridge-pyo3's `ExportRequest`, legacy and versioned).

Each input describes one managed tensor, built with ctypes in either layout (legacy
`DLManagedTensor` or `DLManagedTensorVersioned`) with every field from the input (version,
flags, dtype, ndim, extents, strides or NULL, byte offset, data pointer, device, deleter or
NULL), one producer around it, and a few operations on the result. The oracle:

- every call ends in a typed exception (TypeError, ValueError, BufferError, OverflowError,
  the producer's own exception propagated) or a correct tensor; a crash, a hang, or any other
  exception is a finding;
- an accepted tensor has the descriptor's shape, dtype and strides (NULL strides read as
  row-major), is over the descriptor's memory unless a copy was asked for, is read-only when
  the tensor said so (or came as a legacy capsule without `legacy_writable`), and holds
  exactly the bytes the descriptor addresses;
- a kernel that writes (`dlbridge._testing.fill`) is refused on a read-only tensor and
  leaves its memory alone; on a writable one it writes exactly the addressed elements;
- an export is a typed refusal or a capsule of the layout asked for (versioned for
  `max_version >= (1, 0)`), over the tensor's memory unless a copy was asked for or needed
  (then flagged IS_COPIED), read-only when the tensor is (never legacy then), holding the
  tensor's elements;
- once everything is dropped, each tensor's deleter has run exactly as often as the protocol
  says (once when dlbridge took the capsule or the capsule's destructor released it, never
  twice, never with another address), and the producer object is freed (no reference leaked).

Descriptors whose memory the fuzzer cannot back (more than BACKED_BYTES addressed) are
imported without copying and never read: reading past a producer's allocation is the
producer's lie, not something a consumer can see. A capsule named as the other layout
(`dltensor` over a versioned struct) is never built, for the same reason: the name is the
only thing that tells a consumer the layout.

Run by `fuzz.py capsules` (see there; `make fuzz-python`).
"""

from __future__ import annotations

import collections
import ctypes
import gc
import math
import weakref
from ctypes import POINTER, c_int64, c_void_p, py_object

import atheris
import numpy as np
from dlbridge._dlbridge import _testing

import dlbridge
from dlbridge.check import capi
from dlbridge.check.abi import (
    DELETER,
    DTYPES,
    FLAG_IS_COPIED,
    FLAG_IS_SUBBYTE_TYPE_PADDED,
    FLAG_READ_ONLY,
    HOST_DEVICES,
    NAME_LEGACY,
    NAME_USED_LEGACY,
    NAME_USED_VERSIONED,
    NAME_VERSIONED,
    DLDataType,
    DLDevice,
    DLManagedTensor,
    DLManagedTensorVersioned,
    DLPackVersion,
    compact_strides,
)
from dlbridge.check.capsules import read_capsule

#: The most bytes a descriptor may address, and its elements may take, for the fuzzer to
#: allocate them and let dlbridge read or copy them.
BACKED_BYTES = 1 << 16
#: How many iterations' structs and buffers stay allocated after their checks: a consumer
#: that kept a pointer past the deleter reads memory still mapped, and the deleter count
#: reports it, instead of a crash far from the cause.
KEPT_ITERATIONS = 64
#: The exceptions a refusal may raise.
REFUSALS = (TypeError, ValueError, BufferError, OverflowError, MemoryError)
#: dtype (code, bits, lanes) -> the name dlbridge reports.
DTYPE_NAMES = {value: name for name, value in DTYPES.items()}
PyCapsule_GetName = capi.PyCapsule_GetName
PyCapsule_SetContext = capi._bind("PyCapsule_SetContext", ctypes.c_int, py_object, c_void_p)


class ProducerError(Exception):
    """What the fuzzed producers raise of their own: dlbridge must let it through."""


#: What a call may end in: a refusal, or the producer's own exception let through.
ALLOWED = (*REFUSALS, ProducerError)


# ---- the counted deleter and the capsule destructor: one of each for every tensor -----------

#: managed struct address -> deleter calls; managed struct address -> versioned layout.
DELETER_CALLS: collections.Counter = collections.Counter()
LAYOUTS: dict[int, bool] = {}
#: Exceptions that were being raised when a callback ran (the callback had to take them out
#: of the way, see dlbridge.check.records): a consumer released a capsule while its error
#: was set. Each is a finding.
LOST: list = []
_slots = (c_void_p(), c_void_p(), c_void_p())
_slot_refs = tuple(ctypes.byref(s) for s in _slots)


def _take_pending_error() -> None:
    capi.fetch_error(*_slot_refs)
    if _slots[0].value:
        LOST.append(_slots[0].value)
    for slot in _slots:
        slot.value = None


@DELETER
def counted_deleter(address):
    _take_pending_error()
    DELETER_CALLS[address] += 1


@capi.CAPSULE_DESTRUCTOR
def capsule_destructor(capsule_address):
    """The Python specification's destructor: a capsule nobody took (its name not `used_*`)
    releases its tensor."""
    _take_pending_error()
    name = capi.raw_capsule_name(capsule_address)
    if name is not None and name.startswith(b"used_"):
        return
    address = capi.raw_capsule_pointer(capsule_address, name)
    if address in LAYOUTS:
        layout = DLManagedTensorVersioned if LAYOUTS[address] else DLManagedTensor
        deleter = layout.from_address(address).deleter
        if deleter:
            deleter(address)


DESTRUCTOR_ADDRESS = ctypes.cast(capsule_destructor, c_void_p).value
NAMES = {
    name: capi.static_name(name)
    for name in (
        NAME_LEGACY,
        NAME_VERSIONED,
        NAME_USED_LEGACY,
        NAME_USED_VERSIONED,
        b"dltensor ",
        b"DLTENSOR",
        b"dlpack_exchange_api",
        b"",
    )
}

# ---- descriptors ---------------------------------------------------------------------------

EXTENTS = (0, 1, 2, 3, 4, 7, -1, -(2**63), 2**31, 2**40, 2**62, 2**63 - 1)
STRIDES = (0, 1, 2, 3, -1, -2, -5, 4, 2**31, 2**40, 2**62, -(2**63))
DEVICES = ((1, 0), (1, 0), (1, 0), (3, 0), (13, 0), (2, 0), (2, 1), (8, 0), (99, 0), (1, -1))


class Descriptor:
    """One managed tensor built from the input, with everything it points at."""

    def __init__(self, data: atheris.FuzzedDataProvider):
        self.versioned = data.ConsumeBool()
        self.version = (
            data.PickValueInList([1, 1, 1, 1, 0, 2, 0xFFFFFFFF]),
            data.PickValueInList([0, 1, 2, 3, 4, 0xFFFFFFFF]),
        )
        self.flags = data.PickValueInList(
            [0, 0, FLAG_READ_ONLY, FLAG_IS_COPIED, FLAG_IS_SUBBYTE_TYPE_PADDED, 1 << 3, 1 << 63]
        ) | data.PickValueInList([0, 0, FLAG_READ_ONLY])
        if data.ConsumeIntInRange(0, 3):
            self.dtype = data.PickValueInList(list(DTYPES.values()))
        else:
            self.dtype = (
                data.ConsumeIntInRange(0, 20),
                data.PickValueInList([0, 1, 2, 4, 6, 8, 16, 32, 64, 128, 255]),
                data.PickValueInList([0, 1, 2, 4, 3, 65535]),
            )
        ndim = data.ConsumeIntInRange(0, 4)
        small = data.ConsumeIntInRange(0, 3) != 0
        self.shape = tuple(
            data.ConsumeIntInRange(0, 4) if small else data.PickValueInList(list(EXTENTS))
            for _ in range(ndim)
        )
        # A false ndim: negative, or past the bound every consumer must put on it (reading
        # a shape array longer than the producer's is a lie nothing can see).
        self.ndim = (
            ndim if data.ConsumeIntInRange(0, 15) else data.PickValueInList([-1, 1025, 2**30])
        )
        self.shape_null = data.ConsumeIntInRange(0, 15) == 0
        stride_form = data.ConsumeIntInRange(0, 5)
        if stride_form == 0:
            self.strides = None
        elif stride_form == 1:
            self.strides = tuple(data.PickValueInList(list(STRIDES)) for _ in range(ndim))
        elif stride_form == 2:  # compact strides, reversed or doubled: views of a larger buffer
            compact = compact_strides(self.shape)
            self.strides = tuple(reversed(compact)) if data.ConsumeBool() else compact
            self.strides = tuple(s * data.PickValueInList([1, 2, -1]) for s in self.strides)
        else:
            self.strides = compact_strides(self.shape)
        self.byte_offset = data.PickValueInList([0, 0, 0, 1, 4, 8, 64, 2**63])
        self.device = data.PickValueInList(list(DEVICES))
        self.data_form = data.PickValueInList(["buffer"] * 6 + ["null", "misaligned", "low"])
        self.deleter = data.ConsumeIntInRange(0, 7) != 0
        self.context = data.PickValueInList([None, None, 1, 2**63])
        self.fill = data.ConsumeBytes(64)
        self.span = self._span()
        # Backed: the fuzzer allocated the addressed bytes, and a copy of the tensor (as
        # large as its elements, broadcast or not) is small enough to ask for.
        self.backed = (
            self.span is not None
            and self.span[1] - self.span[0] <= BACKED_BYTES
            and math.prod(self.shape) * self.itemsize <= BACKED_BYTES
            and self.data_form in ("buffer", "misaligned")
        )
        self._build()

    @property
    def itemsize(self) -> int:
        """Bytes per element; for sub-byte lanes the most they can take (padded, a byte per
        lane), so that the memory allocated holds the tensor however it is stored."""
        _, bits, lanes = self.dtype
        if bits < 8:
            return lanes
        return (bits * lanes + 7) // 8

    def effective_strides(self) -> tuple[int, ...]:
        """The strides a consumer reads: NULL means row-major."""
        if self.strides is None:
            return compact_strides(self.shape)
        return self.strides

    def _span(self) -> tuple[int, int] | None:
        """The lowest and one-past-highest byte (from the data pointer) the descriptor
        addresses, or None where it is not a tensor dlbridge can hold."""
        if self.ndim != len(self.shape) or (self.shape_null and self.shape):
            return None
        if any(e < 0 for e in self.shape) or self.itemsize == 0:
            return None
        if any(e == 0 for e in self.shape):
            return (self.byte_offset, self.byte_offset)
        low = high = self.byte_offset
        for extent, stride in zip(self.shape, self.effective_strides()):
            reach = (extent - 1) * stride * self.itemsize
            if reach < 0:
                low += reach
            else:
                high += reach
        return (low, high + self.itemsize)

    def _build(self) -> None:
        self.keep: list = []
        if self.backed:
            low, high = self.span
            size = high - low + 64
            self.buffer = (ctypes.c_char * size)()
            pattern = self.fill or b"\x5a"
            ctypes.memmove(self.buffer, (pattern * (size // len(pattern) + 1))[:size], size)
            # The data pointer is placed so the lowest addressed byte is the buffer's first.
            data_address = ctypes.addressof(self.buffer) - low
        else:
            self.buffer = (ctypes.c_char * 64)()
            data_address = ctypes.addressof(self.buffer)
        if self.data_form == "null":
            data_address = 0
        elif self.data_form == "misaligned":
            data_address += 1
        elif self.data_form == "low":
            data_address = 8
        self.data_address = data_address % 2**64
        shape = (c_int64 * max(1, len(self.shape)))(*self.shape)
        strides = (c_int64 * max(1, len(self.shape)))(*(self.strides or ()))
        self.keep += [shape, strides]
        managed = DLManagedTensorVersioned() if self.versioned else DLManagedTensor()
        if self.versioned:
            managed.version = DLPackVersion(*self.version)
            managed.flags = self.flags
        tensor = managed.dl_tensor
        tensor.data = self.data_address or None
        tensor.device = DLDevice(*self.device)
        tensor.ndim = self.ndim
        tensor.dtype = DLDataType(*self.dtype)
        tensor.shape = None if self.shape_null else ctypes.cast(shape, POINTER(c_int64))
        tensor.strides = None if self.strides is None else ctypes.cast(strides, POINTER(c_int64))
        tensor.byte_offset = self.byte_offset
        managed.manager_ctx = None
        if self.deleter:
            managed.deleter = counted_deleter
        self.managed = managed
        self.address = ctypes.addressof(managed)
        LAYOUTS[self.address] = self.versioned

    def read_only(self, legacy_writable) -> bool:
        """Whether the producer forbade writes: the READ_ONLY flag, or a legacy capsule
        (which cannot say) taken without the caller's `legacy_writable` promise."""
        if self.versioned:
            return bool(self.flags & FLAG_READ_ONLY)
        return legacy_writable is not True

    def proper_name(self) -> bytes:
        return NAME_VERSIONED if self.versioned else NAME_LEGACY

    def capsule(self, name: bytes, destructor: bool):
        capsule = capi.PyCapsule_New(
            self.address, NAMES[name], DESTRUCTOR_ADDRESS if destructor else None
        )
        if self.context is not None:
            PyCapsule_SetContext(capsule, self.context)
        return capsule

    def addressed_bytes(self) -> bytes:
        """The elements the descriptor addresses, in row-major order (numpy as the oracle)."""
        if any(e == 0 for e in self.shape):
            return b""
        low = self.span[0]
        whole = np.frombuffer(self.buffer, dtype=np.uint8)
        start = self.data_address + self.byte_offset - ctypes.addressof(self.buffer)
        # A dimension of extent 1 never moves: its stride (any value) is not read.
        strides = [
            s * self.itemsize if e > 1 else 0 for e, s in zip(self.shape, self.effective_strides())
        ] + [1]
        view = np.lib.stride_tricks.as_strided(
            whole[start:] if start >= 0 else whole,
            shape=(*self.shape, self.itemsize),
            strides=strides,
        )
        assert start == -low + self.byte_offset or self.data_form != "buffer"
        return view.tobytes()


def any_name(data: atheris.FuzzedDataProvider, described: Descriptor) -> bytes:
    """A capsule name: mostly the layout's own, else any other but the other layout's."""
    if data.ConsumeIntInRange(0, 7):
        return described.proper_name()
    return data.PickValueInList([described.proper_name(), *list(NAMES)[2:]])


# ---- producers -----------------------------------------------------------------------------


class Producer:
    """A `__dlpack__` / `__dlpack_device__` pair whose every answer comes from the input."""

    def __init__(self, data: atheris.FuzzedDataProvider, described: Descriptor):
        self.described = described
        self.signature = data.PickValueInList(["keywords"] * 4 + ["stream", "none", "strict"])
        self.answer = data.PickValueInList(
            ["capsule"] * 6
            + ["renamed", "used", "none", "int", "raise", "buffer_error"]
            + ["type_error", "type_error_on_max_version", "self"]
        )
        self.device_answer = data.PickValueInList(
            ["true"] * 6 + ["cpu", "cuda", "raise", "list", "short", "str", "huge", "none"]
        )
        self.name = any_name(data, described)
        self.destructor = data.ConsumeIntInRange(0, 7) != 0
        self.made: list = []  # every capsule made, kept: none dies while an error is raised
        self.calls: list[dict] = []

    def _capsule(self):
        """The one capsule over the tensor (asked again, the producer hands out the same
        one: two capsules over one tensor would each release it)."""
        if self.made:
            return self.made[0]
        capsule = self.described.capsule(self.name, self.destructor)
        self.made.append(capsule)
        if self.answer == "renamed":
            capi.PyCapsule_SetName(capsule, NAMES[b"dltensor "])
        return capsule

    def _answer(self, kwargs: dict):
        self.calls.append(kwargs)
        if self.signature == "strict":
            unknown = set(kwargs) - {"stream", "max_version", "dl_device", "copy"}
            if unknown:
                raise TypeError(f"unexpected {sorted(unknown)}")
        answer = self.answer
        if answer == "type_error_on_max_version" and "max_version" in kwargs:
            raise TypeError("max_version is not known here")
        if answer == "raise":
            raise ProducerError("the producer failed")
        if answer == "buffer_error":
            raise BufferError("cannot export")
        if answer == "type_error":
            self._capsule()  # made, then the producer fails: the capsule must not leak
            raise TypeError("never")
        if answer == "none":
            return None
        if answer == "int":
            return 7
        if answer == "self":
            return self
        if answer == "used":
            capsule = self._capsule()
            capi.PyCapsule_SetName(capsule, NAMES[b"used_" + self.described.proper_name()])
            return capsule
        return self._capsule()

    def __dlpack_device__(self):
        answer = self.device_answer
        if answer == "true":
            return self.described.device
        if answer == "cpu":
            return (1, 0)
        if answer == "cuda":
            return (2, 0)
        if answer == "raise":
            raise ProducerError("no device")
        if answer == "list":
            return list(self.described.device)
        if answer == "short":
            return (1,)
        if answer == "str":
            return ("cpu", 0)
        if answer == "huge":
            return (2**70, 0)
        return None


class KeywordProducer(Producer):
    def __dlpack__(self, **kwargs):
        return self._answer(kwargs)


class StreamOnlyProducer(Producer):
    def __dlpack__(self, stream=None):
        return self._answer({"stream": stream})


class NoKeywordProducer(Producer):
    def __dlpack__(self):
        return self._answer({})


PRODUCERS = {"keywords": KeywordProducer, "strict": KeywordProducer}
PRODUCERS.update(stream=StreamOnlyProducer, none=NoKeywordProducer)

# ---- one input -----------------------------------------------------------------------------

KEPT: collections.deque = collections.deque(maxlen=KEPT_ITERATIONS)


def keywords(data: atheris.FuzzedDataProvider) -> dict:
    """`from_dlpack`'s keywords, each present or not, mostly sensible."""
    chosen = {}
    if data.ConsumeIntInRange(0, 3) == 0:
        chosen["copy"] = data.PickValueInList([True, False, None, 1, "yes", np.bool_(True)])
    if data.ConsumeIntInRange(0, 5) == 0:
        chosen["device"] = data.PickValueInList(
            [(1, 0), (2, 0), (1,), "cpu", None, (1, 0, 0), (1, 2**40), (3, 0)]
        )
    if data.ConsumeIntInRange(0, 7) == 0:
        chosen["stream"] = data.PickValueInList([None, -1, 0, 1, 2, 2**64, "s", 1.5])
    if data.ConsumeIntInRange(0, 3) == 0:
        chosen["legacy_writable"] = data.PickValueInList([True, False, 0, "x"])
    return chosen


def import_once(subject, chosen: dict):
    """`from_dlpack(subject, **chosen)`: the tensor, or None after a permitted refusal."""
    try:
        return dlbridge.from_dlpack(subject, **chosen)
    except ALLOWED:
        return None


def check_tensor(tensor, described: Descriptor, chosen: dict) -> None:
    """The oracle for an accepted import."""
    assert tensor.shape == described.shape, (tensor.shape, described.shape)
    name = DTYPE_NAMES.get(described.dtype)
    if name is not None:
        assert tensor.dtype == name, (tensor.dtype, name)
    copied = bool(chosen.get("copy")) or "device" in chosen
    if not copied and described.backed and all(described.shape):
        assert tensor.data_ptr == (described.data_address + described.byte_offset) % 2**64, (
            hex(tensor.data_ptr),
            hex(described.data_address),
            described.byte_offset,
        )
        if described.read_only(chosen.get("legacy_writable", False)):
            assert tensor.readonly, "a read-only tensor came out writable"
    host = tensor.device[0] in HOST_DEVICES
    if described.backed and host and name is not None:
        compact = tensor.copy()
        got = ctypes.string_at(compact.data_ptr, compact.nbytes)
        assert got == described.addressed_bytes(), "the tensor's bytes are not the descriptor's"


def check_write(
    subject, described: Descriptor, data: atheris.FuzzedDataProvider, shared: bool, vouched=False
):
    """A writing kernel given `subject` (the producer, the capsule, or the imported tensor):
    refused on read-only memory, which it leaves alone; on writable memory it writes exactly
    the addressed elements. `shared`: the subject is over the descriptor's memory (not a
    copy); `vouched`: it was imported with `legacy_writable=True`."""
    before = bytes(described.buffer)
    value = data.PickValueInList([1.5, -0.0, float("nan")])
    try:
        _testing.fill(subject, value)
    except ALLOWED:
        assert bytes(described.buffer) == before, "a refused write changed the memory"
        return
    assert described.dtype == DTYPES["float32"], f"fill wrote a {described.dtype} tensor"
    if not shared or not described.backed:
        return
    assert not described.read_only(vouched), "memory flagged read-only was written"
    if all(described.shape):
        expected = np.full(described.shape, value, dtype=np.float32).tobytes()
        assert described.addressed_bytes() == expected, "the write missed addressed elements"


def export_request(data: atheris.FuzzedDataProvider) -> dict:
    """`__dlpack__`'s keywords as a consumer might pass them, odd ones included."""
    request = {}
    if data.ConsumeIntInRange(0, 3):
        request["max_version"] = data.PickValueInList(
            [(1, 3), (1, 3), (1, 0), (1, 99), (0, 8), (2, 0), None, (1,), "1.3", (1, 2**70)]
        )
    if data.ConsumeIntInRange(0, 3) == 0:
        request["dl_device"] = data.PickValueInList([(1, 0), (2, 0), (3, 0), (1, 1), None, "cpu"])
    if data.ConsumeIntInRange(0, 3) == 0:
        request["copy"] = data.PickValueInList([True, False, None, 1])
    if data.ConsumeIntInRange(0, 5) == 0:
        request["stream"] = data.PickValueInList([None, -1, 0, 1, 2, "s"])
    return request


def check_export(tensor, described: Descriptor, data: atheris.FuzzedDataProvider) -> None:
    """dlbridge as a producer (`Tensor.__dlpack__`, the export rules of `ExportRequest`):
    a typed refusal or a capsule that describes the tensor as asked; consumed by dlbridge or
    dropped unconsumed (its destructor releases it), the source released exactly once either
    way (checked by the caller)."""
    request = export_request(data)
    try:
        capsule = tensor.__dlpack__(**request)
    except ALLOWED:
        return
    info = read_capsule(capsule)
    max_version = request.get("max_version")
    versioned = isinstance(max_version, tuple) and max_version[0] >= 1
    assert info["name"] == (NAME_VERSIONED if versioned else NAME_LEGACY), (info, request)
    assert info["shape"] == tensor.shape, (info, tensor.shape)
    copied = bool(request.get("copy")) or request.get("dl_device") not in (None, tensor.device)
    if versioned:
        assert bool(info["flags"] & FLAG_IS_COPIED) == copied, (info, request)
        if not copied:
            assert bool(info["flags"] & FLAG_READ_ONLY) == tensor.readonly, (info, request)
    else:
        # Flagged read-only, it cannot go out legacy; read-only for want of flags (itself
        # legacy), it may go out as it came in.
        flagged = tensor.flags & FLAG_READ_ONLY
        assert not flagged or copied, "a tensor flagged read-only went out as a legacy capsule"
    if not copied and all(tensor.shape):
        assert info["data"] + info["byte_offset"] == tensor.data_ptr, (info, request)
    if data.ConsumeBool():
        again = dlbridge.from_dlpack(capsule, legacy_writable=not versioned)
        assert again.shape == tensor.shape and again.dtype == tensor.dtype
        # Whole-byte elements only: a strided tensor of packed sub-byte elements has no
        # compact copy (refused, as the import's own check does not read it either).
        whole_bytes = DTYPE_NAMES.get(described.dtype) is not None
        if whole_bytes and tensor.device[0] in HOST_DEVICES and again.device[0] in HOST_DEVICES:
            one, other = again.copy(), tensor.copy()
            assert ctypes.string_at(one.data_ptr, one.nbytes) == ctypes.string_at(
                other.data_ptr, other.nbytes
            ), "the export's elements differ from the tensor's"


def check_read(subject, described: Descriptor) -> None:
    """A reading kernel: a typed refusal or the sum of the addressed float32 values."""
    try:
        total = _testing.total(subject)
    except ALLOWED:
        return
    assert described.dtype == DTYPES["float32"], f"total read a {described.dtype} tensor"
    if described.backed:
        values = np.frombuffer(described.addressed_bytes(), dtype=np.float32)
        with np.errstate(all="ignore"):  # infinities and NaNs are the fuzzer's to choose
            expected = float(values.astype(np.float64).sum())
            magnitude = float(np.abs(values).sum())
        both_nan = bool(np.isnan(total) and np.isnan(expected))
        close = abs(total - expected) <= 1e-6 * max(1.0, magnitude)
        assert total == expected or both_nan or close, (total, expected)


def expected_deleter_calls(described: Descriptor, made: bool, final_name, destructor: bool):
    """The deleter calls the protocol allows once everything is dropped."""
    if not described.deleter or not made:
        return (0,)
    if final_name is not None and final_name.startswith(b"used_"):
        return (0, 1)  # taken by dlbridge (once), or handed over already used (never)
    return (1,) if destructor else (0,)


def subject_of(data: atheris.FuzzedDataProvider, described: Descriptor):
    """What is handed to dlbridge: a bare capsule, or a producer. Returns the subject, the
    producer (or None), the list the capsules made over the tensor go to, and whether they
    have a destructor."""
    if data.ConsumeIntInRange(0, 3) == 0:
        name = any_name(data, described)
        destructor = data.ConsumeIntInRange(0, 7) != 0
        capsules = [described.capsule(name, destructor)]
        return capsules[0], None, capsules, destructor
    producer = PRODUCERS[data.PickValueInList(list(PRODUCERS))](data, described)
    return producer, producer, producer.made, producer.destructor


def exercise(data, subject, producer, described: Descriptor, chosen: dict, *, readable: bool):
    """One entry point with `subject`, and the oracle on what comes out. Everything it makes
    is dropped when it returns."""
    entry = data.PickValueInList(["from_dlpack"] * 4 + ["fill", "total", "explain"])
    if not readable and entry in ("fill", "total"):
        entry = "from_dlpack"
    if entry == "fill":
        check_write(subject, described, data, True)
    elif entry == "total":
        check_read(subject, described)
    elif entry == "explain":
        try:  # each step's refusal is in the report; only a malformed keyword raises
            report = dlbridge.explain(subject, **chosen)
        except (TypeError, ValueError, OverflowError):
            report = {"import": None}
        assert isinstance(report, dict) and "import" in report, report
    else:
        tensor = import_once(subject, chosen)
        if tensor is None:
            return
        check_tensor(tensor, described, chosen)
        operation = data.ConsumeIntInRange(0, 4)
        if not readable and operation in (1, 2, 4):
            operation = 0
        if operation == 1:
            shared = not chosen.get("copy") and "device" not in chosen
            vouched = chosen.get("legacy_writable", False)
            check_write(tensor, described, data, shared, vouched)
        elif operation == 2:
            check_read(tensor, described)
        elif operation == 3:  # the same producer or capsule again
            again = import_once(subject, chosen)
            assert again is None or producer is not None, "a capsule was imported twice"
        elif operation == 4:
            check_export(tensor, described, data)


def test_one_input(raw: bytes) -> None:
    data = atheris.FuzzedDataProvider(raw)
    described = Descriptor(data)
    KEPT.append(described)
    chosen = keywords(data)
    # Memory the fuzzer did not allocate is never read: no copies of it, no kernels.
    readable = described.backed or described.span is None
    if not readable:
        chosen.pop("device", None)
        if chosen.get("copy"):
            del chosen["copy"]
    subject, producer, capsules, destructor = subject_of(data, described)
    exercise(data, subject, producer, described, chosen, readable=readable)
    made = bool(capsules)
    final_name = PyCapsule_GetName(capsules[0]) if made else None
    watched = weakref.ref(producer) if producer is not None else None
    del subject, producer, capsules
    if watched is not None and watched() is not None:
        gc.collect()
        assert watched() is None, "the producer was never freed (a reference leaked)"
    calls = DELETER_CALLS.pop(described.address, 0)
    allowed = expected_deleter_calls(described, made, final_name, destructor)
    assert calls in allowed, f"the deleter ran {calls} times (name {final_name}, {allowed})"
    assert not DELETER_CALLS, f"deleters ran with other addresses: {dict(DELETER_CALLS)}"
    assert not LOST, f"a capsule was released while an error was set: {LOST}"
    LAYOUTS.pop(described.address, None)
