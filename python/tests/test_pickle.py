"""Pickling dlbridge.Tensor: protocol 5 with out-of-band buffers (zero-copy), protocols 0-4
in-band (copied), every dtype, shape, read-only-ness and sub-byte padding surviving, strided
tensors compacted, device tensors refused, the reconstructor as an input boundary,
`copy.copy`/`copy.deepcopy`, and a tensor sent to a `multiprocessing` worker (spawn) and back.
"""

from __future__ import annotations

import copy
import ctypes
import math
import multiprocessing
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlbridge
from _helpers import IS_COPIED, READ_ONLY, collect, np_address, read_bytes, row_major_strides
from dlbridge.check.abi import (
    kDLBfloat,
    kDLBool,
    kDLComplex,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLFloat,
    kDLFloat4_e2m1fn,
    kDLFloat6_e2m3fn,
    kDLFloat6_e3m2fn,
    kDLFloat8_e3m4,
    kDLFloat8_e8m0fnu,
    kDLInt,
    kDLOpaqueHandle,
    kDLROCM,
    kDLUInt,
)
from dlbridge.check.records import make_managed

PADDED = dlbridge.FLAG_IS_SUBBYTE_TYPE_PADDED

#: The reconstructor that pickles name (what `Tensor.__reduce_ex__` returns).
_tensor_from_pickle = dlbridge.Tensor.__reduce_ex__(dlbridge.zeros(0), 5)[0]

# (name dlbridge reports, (code, bits, lanes)): every kind of dtype dlbridge holds, sub-byte
# and vector types included.
DTYPES = [
    *[(f"int{b}", (kDLInt, b, 1)) for b in (1, 2, 4, 8, 16, 32, 64)],
    *[(f"uint{b}", (kDLUInt, b, 1)) for b in (1, 2, 4, 8, 16, 32, 64)],
    *[(f"float{b}", (kDLFloat, b, 1)) for b in (16, 32, 64)],
    ("bfloat16", (kDLBfloat, 16, 1)),
    *[(f"complex{b}", (kDLComplex, b, 1)) for b in (32, 64, 128)],
    ("bool", (kDLBool, 8, 1)),
    ("handle", (kDLOpaqueHandle, 64, 1)),
    *[(None, (code, 8, 1)) for code in range(kDLFloat8_e3m4, kDLFloat8_e8m0fnu + 1)],
    ("float6_e2m3fn", (kDLFloat6_e2m3fn, 6, 1)),
    ("float6_e3m2fn", (kDLFloat6_e3m2fn, 6, 1)),
    ("float4_e2m1fn", (kDLFloat4_e2m1fn, 4, 1)),
    ("float32x4", (kDLFloat, 32, 4)),
    ("int8x3", (kDLInt, 8, 3)),
]
SUB_BYTE = {code_bits_lanes for _, code_bits_lanes in DTYPES if code_bits_lanes[1] < 8}

PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))


def buffer_address(buffer) -> int:
    """The address of a buffer-protocol object's first byte (read-only ones included)."""
    return np_address(np.frombuffer(buffer, dtype=np.uint8)) if memoryview(buffer).nbytes else 0


def tensor_bytes(t) -> bytes:
    return read_bytes(t.data_ptr, t.nbytes)


def hand_built(shape, dtype, data: bytes, *, read_only=False, padded=False, device=kDLCPU):
    """A dlbridge tensor over hand-built memory holding `data` (any dtype, any flags)."""
    flags = (READ_ONLY if read_only else 0) | (PADDED if padded else 0)
    record = make_managed(shape, dtype, values=data, flags=flags, device=(device, 0))
    t = dlbridge.from_dlpack(record.capsule())
    assert t.nbytes == len(data)
    return t


def dumps_out_of_band(t) -> tuple[bytes, list[pickle.PickleBuffer]]:
    """Pickles `t` with protocol 5, its buffers out-of-band: the stream and the buffers."""
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(t, protocol=5, buffer_callback=buffers.append)
    return data, buffers


def round_trip(t, protocol: int, out_of_band: bool):
    if out_of_band:
        data, buffers = dumps_out_of_band(t)
        return pickle.loads(data, buffers=buffers)
    return pickle.loads(pickle.dumps(t, protocol=protocol))


def assert_same_tensor(u, t):
    assert u.dtype == t.dtype
    assert u.shape == t.shape
    assert u.strides == row_major_strides(t.shape)
    assert u.device == (kDLCPU, 0)
    assert u.readonly == t.readonly
    assert u.flags & PADDED == t.flags & PADDED
    assert u.nbytes == t.nbytes
    assert tensor_bytes(u) == tensor_bytes(t)


@settings(max_examples=150, deadline=None)
@given(
    dtype=st.sampled_from(DTYPES),
    shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    protocol=st.sampled_from(PROTOCOLS),
    out_of_band=st.booleans(),
    read_only=st.booleans(),
    padded=st.booleans(),
    seed=st.integers(0, 255),
)
def test_round_trip_keeps_dtype_shape_bytes_and_flags(
    *, dtype, shape, protocol, out_of_band, read_only, padded, seed
):
    name, code_bits_lanes = dtype
    padded = padded and code_bits_lanes in SUB_BYTE
    lanes_total = math.prod(shape) * code_bits_lanes[2]
    bits = code_bits_lanes[1]
    if bits >= 8:
        nbytes = lanes_total * bits // 8
    else:
        nbytes = lanes_total if padded else (lanes_total * bits + 7) // 8
    if code_bits_lanes[0] == kDLBool:
        data = bytes((seed + i) % 2 for i in range(nbytes))
    else:
        data = bytes((seed + 31 * i) % 256 for i in range(nbytes))
    t = hand_built(shape, code_bits_lanes, data, read_only=read_only, padded=padded)
    if name is not None:
        assert t.dtype == name
    u = round_trip(t, protocol, out_of_band and protocol >= 5)
    assert_same_tensor(u, t)


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (2, 3)], ids=["0d", "empty", "3x0", "2x3"])
def test_zero_size_and_0d(protocol, shape):
    a = np.arange(int(np.prod(shape)), dtype=np.int32).reshape(shape)
    u = round_trip(dlbridge.from_dlpack(a), protocol, out_of_band=False)
    assert u.shape == shape
    np.testing.assert_array_equal(np.from_dlpack(u), a)


def test_out_of_band_buffer_is_the_tensors_memory_and_loads_shares_it():
    a = np.arange(1000, dtype=np.float64)
    t = dlbridge.from_dlpack(a)
    data, buffers = dumps_out_of_band(t)
    assert len(data) < 200  # the 8000 bytes are not in the stream
    [buffer] = buffers
    raw = buffer.raw()
    assert not raw.readonly and raw.nbytes == 8000
    assert buffer_address(raw) == t.data_ptr == np_address(a)
    u = pickle.loads(data, buffers=buffers)
    assert u.data_ptr == t.data_ptr  # the same memory, in the same process
    assert not u.readonly and not u.flags & IS_COPIED
    np.from_dlpack(u)[0] = 42.0
    assert a[0] == 42.0
    del raw


def test_read_only_tensor_travels_as_a_read_only_buffer_and_is_shared():
    a = np.arange(10, dtype=np.int16)
    a.flags.writeable = False
    t = dlbridge.from_dlpack(a)
    assert t.readonly
    data, buffers = dumps_out_of_band(t)
    assert buffers[0].raw().readonly
    # The buffer as a transport would hand it back: writable memory of its own.
    received = bytearray(buffers[0].raw())
    u = pickle.loads(data, buffers=[received])
    assert u.readonly and u.data_ptr == buffer_address(received)
    with pytest.raises(ValueError, match="read-only"):
        np.from_dlpack(u)[0] = 1
    # In-band, protocol 5: pickle writes `bytes`, shared read-only.
    v = pickle.loads(pickle.dumps(t, protocol=5))
    assert v.readonly and not v.flags & IS_COPIED


def test_writable_tensor_over_a_read_only_buffer_is_a_read_only_view_of_it():
    # As Ray's object store hands buffers back: read-only shared memory. The tensor is a view
    # of it (no copy), read-only, as NumPy's arrays come back; explain says why.
    t = dlbridge.arange(8, "int32")
    data, buffers = dumps_out_of_band(t)
    frozen = bytes(buffers[0].raw())
    u = pickle.loads(data, buffers=[frozen])
    assert u.readonly and not u.flags & IS_COPIED
    assert u.data_ptr == buffer_address(frozen)
    with pytest.raises(ValueError, match="read-only"):
        np.from_dlpack(u)[0] = 1
    rebuilt = dlbridge.explain(u)["rebuilt"]
    assert rebuilt["from"] == "pickle" and rebuilt["shared"]
    assert "read-only: the buffer is read-only" in rebuilt["reason"]
    # Writing means copying, explicitly.
    w = u.copy()
    np.from_dlpack(w)[:] = -1
    assert frozen == bytes(buffers[0].raw())  # the transport's memory is untouched


def test_pickles_made_before_read_only_views_still_copy_a_writable_tensor():
    # The reconstructor's five-argument form (pickles written before the sixth argument):
    # a writable tensor over read-only bytes is copied and stays writable, as it did.
    frozen = bytes(range(16))
    u = _tensor_from_pickle(frozen, "int32", (4,), False, False)
    assert not u.readonly and u.flags & IS_COPIED
    assert u.data_ptr != buffer_address(frozen)
    rebuilt = dlbridge.explain(u)["rebuilt"]
    assert not rebuilt["shared"] and "read-only bytes" in rebuilt["reason"]


def test_explain_has_no_rebuilt_entry_for_other_tensors():
    assert dlbridge.explain(dlbridge.arange(3, "int8"))["rebuilt"] is None
    assert dlbridge.explain(np.arange(3))["rebuilt"] is None


def test_writable_tensor_over_a_writable_buffer_is_shared():
    t = dlbridge.arange(8, "int32")
    data, buffers = dumps_out_of_band(t)
    received = bytearray(buffers[0].raw())
    u = pickle.loads(data, buffers=[received])
    assert not u.readonly and not u.flags & IS_COPIED
    assert u.data_ptr == buffer_address(received)
    np.from_dlpack(u)[0] = 99
    assert received[:4] == (99).to_bytes(4, "little")
    with pytest.raises(BufferError):
        received.extend(b"1234")  # exported: the tensor keeps it from moving
    del u
    collect()
    received.extend(b"1234")


def test_in_band_protocol_5_shares_the_bytearray_pickle_made():
    u = pickle.loads(pickle.dumps(dlbridge.arange(6, "float32"), protocol=5))
    assert not u.readonly and not u.flags & IS_COPIED


@pytest.mark.parametrize("protocol", range(5))
def test_protocols_before_5_copy_in_band(protocol):
    t = dlbridge.arange(6, "float32")
    u = pickle.loads(pickle.dumps(t, protocol=protocol))
    assert not u.readonly and u.flags & IS_COPIED
    assert tensor_bytes(u) == tensor_bytes(t)
    assert pickle.loads(
        pickle.dumps(hand_built((2,), "float32", bytes(8), read_only=True))
    ).readonly


def test_misaligned_buffer_is_copied_to_aligned_memory():
    t = dlbridge.arange(4, "float64")
    data, buffers = dumps_out_of_band(t)
    backing = bytearray(33)
    start = (-buffer_address(backing)) % 8 + 1  # one past an 8-byte boundary
    view = memoryview(backing)[start : start + 32]
    view[:] = buffers[0].raw()
    u = pickle.loads(data, buffers=[view])
    assert u.flags & IS_COPIED and u.data_ptr % 8 == 0
    np.testing.assert_array_equal(np.from_dlpack(u), [0.0, 1.0, 2.0, 3.0])
    rebuilt = dlbridge.explain(u)["rebuilt"]
    assert not rebuilt["shared"] and "not aligned for float64 (8 bytes)" in rebuilt["reason"]
    # Misaligned and read-only, as a transport may hand it: the copy is dlbridge's, writable.
    w = pickle.loads(data, buffers=[view.toreadonly()])
    assert not w.readonly and w.flags & IS_COPIED
    # Read-only, misaligned: the copy stays read-only.
    r = _tensor_from_pickle(view.toreadonly(), "float64", (4,), True, False)
    assert r.readonly and r.flags & IS_COPIED and r.data_ptr % 8 == 0
    del view


def test_strided_buffer_from_a_transport_is_copied_in_c_order():
    source = np.arange(8, dtype=np.uint8)
    u = _tensor_from_pickle(memoryview(source)[::2], "uint8", (4,), False, False)
    assert u.flags & IS_COPIED
    np.testing.assert_array_equal(np.from_dlpack(u), [0, 2, 4, 6])


@pytest.mark.parametrize("protocol", PROTOCOLS)
@pytest.mark.parametrize("read_only", [False, True])
def test_strided_tensor_is_pickled_as_a_compact_copy(protocol, read_only):
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::-3].T
    a.flags.writeable = not read_only
    t = dlbridge.from_dlpack(a)
    u = round_trip(t, protocol, out_of_band=protocol >= 5)
    assert u.shape == t.shape and u.strides == row_major_strides(t.shape)
    assert u.readonly == read_only
    np.testing.assert_array_equal(np.from_dlpack(u), a)


def test_strided_packed_sub_byte_tensor_is_refused():
    record = make_managed((2, 2), (kDLInt, 4, 1), strides=(1, 2), values=b"\x21\x43")
    t = dlbridge.from_dlpack(record.capsule())
    with pytest.raises(BufferError, match=r"strided int4 tensor: .* strides are \[1, 2\]"):
        pickle.dumps(t, protocol=5)


@pytest.mark.parametrize("device", [kDLCUDA, kDLROCM], ids=["cuda", "rocm"])
@pytest.mark.parametrize("protocol", [2, 5])
def test_device_tensor_is_refused_naming_the_device(device, protocol):
    record = make_managed((4,), "float32", device=(device, 0), data=0x1000)
    t = dlbridge.from_dlpack(record.capsule())
    name = {kDLCUDA: "CUDA", kDLROCM: "ROCM"}[device]
    with pytest.raises(TypeError, match=f"cannot pickle a dlbridge.Tensor on {name}"):
        pickle.dumps(t, protocol=protocol)
    with pytest.raises(BufferError):
        copy.deepcopy(t)


def test_pinned_host_tensor_is_pickled_and_comes_back_on_the_cpu():
    t = hand_built((3,), "int32", b"\x01\0\0\0\x02\0\0\0\x03\0\0\0", device=kDLCUDAHost)
    assert t.device == (kDLCUDAHost, 0)
    u = round_trip(t, 5, out_of_band=True)
    assert u.device == (kDLCPU, 0)
    np.testing.assert_array_equal(np.from_dlpack(u), [1, 2, 3])


class Forged:
    """Pickles as a call of the reconstructor with any arguments: a corrupted pickle."""

    def __init__(self, *args):
        self.args = args

    def __reduce__(self):
        return (_tensor_from_pickle, self.args)


@pytest.mark.parametrize(
    ("args", "error", "message"),
    [
        ((b"\0" * 15, "float32", (4,), False, False), ValueError, "must hold 16 bytes, got 15"),
        ((b"\0" * 17, "float32", (4,), False, False), ValueError, "must hold 16 bytes, got 17"),
        ((b"\0" * 4, "float32", (-1,), False, False), ValueError, "must be >= 0, got -1"),
        ((b"", "float33", (0,), False, False), ValueError, '"float33" is not a DLPack'),
        ((b"", 10, (0,), False, False), TypeError, "dtype"),
        ((b"", "float32", "ab", False, False), TypeError, "shape"),
        ((b"", "float32", (1.5,), False, False), TypeError, "shape"),
        ((b"\0" * 4, "float32", (1,), 1, False), TypeError, "read_only"),
        ((b"\0" * 4, "float32", (1,), False, True), ValueError, "not a sub-byte type"),
        ((42, "float32", (1,), False, False), TypeError, "bytes-like object"),
        ((b"", "float32", (2**62, 2**62), False, False), ValueError, "would not fit"),
        ((b"", "float64", (2**61,), False, False), ValueError, "would not fit"),
        ((b"\0" * 4, "float32", (1,) * 1025, False, False), ValueError, "at most 1024 dim"),
        ((b"\0" * 2, "int4", (3,), False, True), ValueError, "must hold 3 bytes, got 2"),
        ((b"\0" * 3, "int4", (3,), False, False), ValueError, "must hold 2 bytes, got 3"),
    ],
    ids=[
        "short",
        "long",
        "negative-extent",
        "unknown-dtype",
        "dtype-not-str",
        "shape-not-ints",
        "shape-float",
        "read-only-not-bool",
        "padded-whole-byte",
        "not-a-buffer",
        "element-overflow",
        "byte-overflow",
        "too-many-dims",
        "padded-length",
        "packed-length",
    ],
)
def test_corrupted_pickle_is_a_clear_error(args, error, message):
    data = pickle.dumps(Forged(*args), protocol=5)
    with pytest.raises(error, match=message):
        pickle.loads(data)


def test_copy_and_deepcopy_are_independent_writable_copies():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    a.flags.writeable = False
    t = dlbridge.from_dlpack(a)
    for duplicate in (copy.copy(t), copy.deepcopy(t)):
        assert duplicate.data_ptr != t.data_ptr
        assert not duplicate.readonly and duplicate.flags & IS_COPIED
        np.testing.assert_array_equal(np.from_dlpack(duplicate), a)
    pair = copy.deepcopy([t, t])
    assert pair[0] is pair[1]  # the memo keeps shared references shared


# --------------------------------------------------------------------------------------------
# multiprocessing (spawn: the tensor is pickled, as it must be between processes)
# --------------------------------------------------------------------------------------------


def _describe_and_double(t):
    """Runs in the worker: what arrived, and a new tensor with the values doubled."""
    doubled = dlbridge.from_dlpack(np.from_dlpack(t) * 2) if not t.readonly else t
    return (t.dtype, t.shape, t.readonly, tensor_bytes(t)), doubled


def test_multiprocessing_spawn_carries_tensors_both_ways():
    context = multiprocessing.get_context("spawn")
    writable = dlbridge.from_dlpack(np.arange(12, dtype=np.int64).reshape(3, 4))
    frozen = hand_built((5,), "bfloat16", bytes(range(10)), read_only=True)
    with context.Pool(1) as pool:
        (seen, doubled) = pool.apply_async(_describe_and_double, (writable,)).get(timeout=120)
        (seen_frozen, echoed) = pool.apply_async(_describe_and_double, (frozen,)).get(timeout=60)
    assert seen == ("int64", (3, 4), False, tensor_bytes(writable))
    np.testing.assert_array_equal(np.from_dlpack(doubled), np.from_dlpack(writable) * 2)
    assert seen_frozen == ("bfloat16", (5,), True, bytes(range(10)))
    assert echoed.readonly and echoed.dtype == "bfloat16"
    assert tensor_bytes(echoed) == bytes(range(10))


def test_pickled_tensor_keeps_its_memory_alive():
    a = np.arange(100, dtype=np.uint8)
    t = dlbridge.from_dlpack(a)
    data, buffers = dumps_out_of_band(t)
    address = t.data_ptr
    del t, a
    collect()
    # The PickleBuffer holds the tensor, which holds NumPy's array.
    u = pickle.loads(data, buffers=buffers)
    del buffers
    collect()
    assert u.data_ptr == address
    assert ctypes.string_at(u.data_ptr, 100) == bytes(range(100))
