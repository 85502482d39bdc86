"""Atheris fuzzer of the two ways bytes from elsewhere become a `dlbridge.Tensor`: the frames of
`dlbridge.distributed` (what arrives from another machine through Ray or Dask) and the pickle
reconstructor (`Tensor.__reduce_ex__`'s `_tensor_from_pickle`, whose arguments any pickle
chooses).

Each input starts from a valid frame or pickle of a small tensor (any dtype dlbridge makes,
0 to 3 dimensions, elements from the input) and corrupts it: header fields replaced by
values of any type (edge integers, other dtype names, nested lists, None, ...), removed or
added, the bytes cut or lengthened, handed over read-only or writable, misaligned; the
reconstructor's arguments replaced likewise. The oracle:

- a typed Python exception (TypeError, ValueError, KeyError, OverflowError, BufferError) or
  a tensor; a crash, a hang or any other exception is a finding;
- an accepted frame gives exactly the tensor its header describes: the header's dtype and
  shape, over exactly the bytes given (`nbytes` of them);
- an accepted pickle gives the dtype, shape and bytes the arguments name.

Run by `fuzz.py rebuild` (see there; `make fuzz-python`).
"""

from __future__ import annotations

import ctypes

import atheris

import dlbridge
from dlbridge import distributed

#: Every dtype dlbridge makes tensors of (`dlbridge.zeros`), whole bytes per element.
DTYPES = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float16",
    "float32",
    "float64",
    "bfloat16",
    "complex64",
    "complex128",
    "float8_e4m3fn",
    "float8_e5m2",
)
#: The header's fields (`dlbridge.distributed`'s frame format 1.0).
FIELDS = ("format", "version", "dtype", "shape", "strides", "device", "flags", "nbytes", "kind")
#: Strings worth trying where a name is expected.
WORDS = (*DTYPES, "int4", "float4_e2m1fn", "dlbridge.frame", "numpy", "torch", "jax", "", "x" * 300)
#: The exceptions a refusal may raise.
REFUSALS = (TypeError, ValueError, KeyError, OverflowError, BufferError)


def any_value(data: atheris.FuzzedDataProvider, depth: int = 0):
    """A value of any type a header or an argument might be given."""
    kind = data.ConsumeIntInRange(0, 11 if depth < 2 else 7)
    if kind == 0:
        return None
    if kind == 1:
        return data.ConsumeBool()
    if kind == 2:
        return data.ConsumeIntInRange(-4, 64)
    if kind == 3:
        return data.PickValueInList(
            [-1, 0, 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64, -(2**63), 10**30]
        )
    if kind == 4:
        return data.ConsumeRegularFloat()
    if kind == 5:
        return data.PickValueInList(list(WORDS))
    if kind == 6:
        return data.ConsumeUnicodeNoSurrogates(data.ConsumeIntInRange(0, 12))
    if kind == 7:
        return data.ConsumeBytes(data.ConsumeIntInRange(0, 16))
    if kind in (8, 9):
        items = [any_value(data, depth + 1) for _ in range(data.ConsumeIntInRange(0, 5))]
        return items if kind == 8 else tuple(items)
    if kind == 10:
        return [data.ConsumeIntInRange(-2, 9) for _ in range(data.ConsumeIntInRange(0, 70))]
    return {data.ConsumeUnicodeNoSurrogates(4): any_value(data, depth + 1) for _ in range(2)}


def small_tensor(data: atheris.FuzzedDataProvider) -> dlbridge.Tensor:
    """A small tensor of any dtype whose bytes come from the input."""
    dtype = data.PickValueInList(list(DTYPES))
    shape = [data.ConsumeIntInRange(0, 4) for _ in range(data.ConsumeIntInRange(0, 3))]
    tensor = dlbridge.zeros(shape, dtype)
    filling = data.ConsumeBytes(tensor.nbytes)
    ctypes.memmove(tensor.data_ptr, filling, len(filling))
    return tensor


def contents(tensor: dlbridge.Tensor) -> tuple:
    """dtype, shape and compact bytes, as dlbridge reads them."""
    compact = tensor.copy()
    return tensor.dtype, tensor.shape, ctypes.string_at(compact.data_ptr, compact.nbytes)


def handed_over(data: atheris.FuzzedDataProvider, raw: bytes):
    """The bytes as a transport or an unpickler might hand them: read-only or writable, cut,
    lengthened, or one byte off their alignment."""
    change = data.ConsumeIntInRange(0, 5)
    if change == 1:
        raw = raw[: data.ConsumeIntInRange(0, len(raw))]
    elif change == 2:
        raw = raw + data.ConsumeBytes(data.ConsumeIntInRange(1, 16))
    elif change == 3:
        raw = memoryview(b"\0" + raw)[1:]  # misaligned by one byte
    form = data.ConsumeIntInRange(0, 2)
    if form == 0:
        return bytes(raw)
    if form == 1:
        return bytearray(raw)
    return memoryview(bytes(raw))


def one_frame(data: atheris.FuzzedDataProvider) -> None:
    header, frames = distributed.serialize(small_tensor(data))
    for _ in range(data.ConsumeIntInRange(0, 4)):
        what = data.ConsumeIntInRange(0, 2)
        field = data.PickValueInList(list(FIELDS))
        if what == 0:
            header[field] = any_value(data)
        elif what == 1:
            header.pop(field, None)
        else:
            header[data.ConsumeUnicodeNoSurrogates(8)] = any_value(data)
    given = handed_over(data, bytes(frames[0].raw()))
    try:
        result = distributed.deserialize(header, [given])
    except REFUSALS:
        return
    dtype, shape, content = contents(dlbridge.from_dlpack(result))
    assert content == bytes(given), "the tensor is not over exactly the bytes given"
    assert len(content) == header["nbytes"], (len(content), header["nbytes"])
    # The shape a list or a tuple (the two sequences the header may hold it in); the dtype as
    # dlbridge names it (`int08` is `int8`).
    named_dtype = dlbridge.zeros(0, header["dtype"]).dtype
    assert list(shape) == list(header["shape"]) and dtype == named_dtype, (dtype, shape, header)


def one_pickle(data: atheris.FuzzedDataProvider) -> None:
    tensor = small_tensor(data)
    protocol = data.PickValueInList([4, 5])
    rebuild, arguments = tensor.__reduce_ex__(protocol)[:2]
    arguments = list(arguments)
    if protocol == 5:
        arguments[0] = bytes(arguments[0].raw())
    arguments[0] = handed_over(data, arguments[0])
    for _ in range(data.ConsumeIntInRange(0, 3)):
        arguments[data.ConsumeIntInRange(1, len(arguments) - 1)] = any_value(data)
    if data.ConsumeIntInRange(0, 7) == 0:
        arguments = arguments[: data.ConsumeIntInRange(0, len(arguments))]
    try:
        result = rebuild(*arguments)
    except REFUSALS:
        return
    dtype, shape, content = contents(result)
    # A shape is a sequence of extents, or one integer (as `dlbridge.zeros(5)` takes it; a
    # bool is an integer in Python).
    named = arguments[2]
    expected = (int(named),) if isinstance(named, int) else tuple(named)
    # The dtype as dlbridge names it: a name may be spelled otherwise (`int1x0302` is
    # `int1x302`).
    named_dtype = dlbridge.zeros(0, arguments[1]).dtype
    assert dtype == named_dtype and tuple(shape) == expected, (dtype, shape, arguments)
    assert content == bytes(arguments[0])[: len(content)], "the bytes differ from the pickle's"


def test_one_input(raw: bytes) -> None:
    data = atheris.FuzzedDataProvider(raw)
    if data.ConsumeBool():
        one_frame(data)
    else:
        one_pickle(data)
