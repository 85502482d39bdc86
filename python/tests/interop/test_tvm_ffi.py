"""Apache TVM FFI (apache-tvm-ffi) <-> dlbridge.

apache-tvm-ffi 0.1.15 facts these tests rely on:
- `tvm_ffi.from_dlpack(x, *, require_alignment=0, require_contiguous=False)` uses a type's
  C exchange API when it has one (PyTorch), otherwise calls `x.__dlpack__()` with no
  arguments and needs a legacy `dltensor` capsule (so a read-only dlbridge tensor is refused
  by dlbridge with BufferError); it takes raw legacy capsules too;
- `tvm_ffi.Tensor.__dlpack__(*, stream, max_version, dl_device, copy)` answers
  `dltensor_versioned` 1.3 for max_version >= (1, 0) (copy=True: BufferError "copy not yet
  supported", so dlbridge asks again without copy and copies); `data_ptr()` includes
  byte_offset, a re-export keeps byte_offset as it came;
- dtypes both ways: bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64 and
  the whole float8 family; no complex ("unknown type_code=5": ValueError);
- any strides are kept (transposed, stepped, negative, size-1 dimensions), 32 dimensions and
  zero-size tensors work;
- tvm_ffi.Tensor has no item assignment: writes go through numpy views of the same memory.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from _frameworks import import_framework

tvm_ffi = import_framework("tvm_ffi", "apache-tvm-ffi")

import dlbridge
from _helpers import (
    FLOAT8_DTYPES,
    INTEGER_DTYPES,
    SHAPE_IDS,
    SHAPES,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
    size_of,
)
from dlbridge.check.abi import DTYPES, NAME_USED_LEGACY, itemsize
from dlbridge.check.capsules import capsule_name
from dlbridge.check.fake_producers import OneTensorProducer
from dlbridge.check.records import make_managed

TVM_DTYPES = ["bool", *INTEGER_DTYPES, "float16", "bfloat16", "float32", "float64", *FLOAT8_DTYPES]


def _tvm_source(shape, name):
    """A tvm_ffi.Tensor over dlbridge-independent memory (a ctypes legacy producer)."""
    rec = make_managed(shape, name, versioned=False, values=pattern_bytes(name, size_of(shape)))
    return tvm_ffi.from_dlpack(OneTensorProducer(rec)), rec


def _tvm_bytes(y) -> bytes:
    n = size_of(tuple(y.shape))
    element_size = {"bool": 1}.get(str(y.dtype))
    if element_size is None:
        element_size = itemsize(DTYPES[str(y.dtype)])
    return read_bytes(y.data_ptr(), n * element_size)


# --------------------------------------------------------------------------------------------
# TVM FFI -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TVM_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_tvm_to_dlbridge(shape, name):
    y, rec = _tvm_source(shape, name)
    t = dlbridge.from_dlpack(y)
    assert t.dtype == name
    assert t.shape == shape
    assert t.version == (1, 3)
    assert t.device == (1, 0)
    if size_of(shape):
        assert t.strides == tuple(y.strides)
        assert t.data_ptr == y.data_ptr() == rec.data_address
        assert read_bytes(t.data_ptr, t.nbytes) == _tvm_bytes(y)
    del t, y  # reference counting alone releases the chain (no collector pass needed)
    assert rec.deleter_calls == 1  # ctypes -> tvm -> dlbridge, released once at the end


def test_tvm_writes_seen_both_ways():
    a = np.zeros(4, dtype=np.float32)
    y = tvm_ffi.from_dlpack(a)
    t = dlbridge.from_dlpack(y)
    assert t.data_ptr == y.data_ptr() == np_address(a)
    np.from_dlpack(y)[1] = 5.0  # a write through TVM's tensor
    assert np.asarray(t)[1] == 5.0
    np.asarray(t)[2] = 7.0
    assert np.from_dlpack(y)[2] == 7.0


def test_tvm_copy_true_is_honoured_by_a_copy_here():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    y = tvm_ffi.from_dlpack(a)
    with pytest.raises(BufferError, match="copy"):  # what tvm-ffi itself says
        y.__dlpack__(max_version=(1, 3), copy=True)
    t = dlbridge.from_dlpack(y, copy=True)
    assert t.flags & dlbridge.FLAG_IS_COPIED
    assert not t.readonly
    assert t.data_ptr != y.data_ptr()
    assert t.strides == (2, 1)  # a compact copy
    copied = np.asarray(t)
    np.testing.assert_array_equal(copied, a)
    copied[0, 0] = 42.0
    assert a[0, 0] == 0.0  # TVM's (and NumPy's) memory untouched
    assert dlbridge.explain(y, copy=True)["import"]["negotiation"] == (
        "copy-refused",
        "copied-here",
    )


@pytest.mark.parametrize(
    "make",
    [lambda b: b.T, lambda b: b[::2, 1::2], lambda b: b[::-1], lambda b: b[1:, ::-2]],
    ids=["transposed", "stepped", "reversed", "offset-reversed"],
)
def test_tvm_views_to_dlbridge(make):
    view = make(np.arange(30, dtype=np.int32).reshape(5, 6))
    y = tvm_ffi.from_dlpack(view)
    t = dlbridge.from_dlpack(y)
    assert t.strides == tuple(y.strides) == tuple(s // 4 for s in view.strides)
    assert t.data_ptr == np_address(view)
    np.testing.assert_array_equal(np.asarray(t), view)


def test_tvm_byte_offset_to_dlbridge():
    values = bytes(range(32))
    rec = make_managed((4,), "int32", versioned=False, values=values, byte_offset=8)
    y = tvm_ffi.from_dlpack(OneTensorProducer(rec))
    t = dlbridge.from_dlpack(y)
    assert t.data_ptr == rec.data_address + 8 == y.data_ptr()
    assert read_bytes(t.data_ptr, 16) == values[8:24]


def test_tvm_memory_kept_alive():
    y, rec = _tvm_source((5,), "int64")
    t = dlbridge.from_dlpack(y)
    del y
    gc.collect()
    assert rec.deleter_calls == 0
    assert read_bytes(t.data_ptr, 40) == pattern_bytes("int64", 5)
    del t
    gc.collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# dlbridge -> TVM FFI
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TVM_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_tvm(shape, name):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    y = tvm_ffi.from_dlpack(t)
    assert str(y.dtype) == name
    assert tuple(y.shape) == shape
    if size_of(shape):
        assert y.data_ptr() == t.data_ptr
        assert tuple(y.strides) == t.strides
        assert _tvm_bytes(y) == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_tvm_raw_capsule():
    t = rust_tensor_with_bytes(dlbridge, (2, 3), "float32")
    cap = t.__dlpack__()
    y = tvm_ffi.from_dlpack(cap)
    assert y.data_ptr() == t.data_ptr
    assert capsule_name(cap) == NAME_USED_LEGACY


def test_dlbridge_to_tvm_writes_seen_both_ways():
    t = dlbridge.zeros((3,), dtype="int32")
    y = tvm_ffi.from_dlpack(t)
    np.from_dlpack(y)[0] = 11
    assert np.asarray(t)[0] == 11
    np.asarray(t)[1] = 12
    assert np.from_dlpack(y)[1] == 12


@pytest.mark.parametrize(
    "make",
    [lambda b: b.T, lambda b: b[::2, 1::2], lambda b: b[::-1], lambda b: b[:, ::-3]],
    ids=["transposed", "stepped", "reversed", "reversed-stepped"],
)
def test_dlbridge_views_to_tvm(make):
    view = make(np.arange(30, dtype=np.float64).reshape(5, 6))
    t = dlbridge.from_dlpack(view)
    y = tvm_ffi.from_dlpack(t)
    assert y.data_ptr() == np_address(view)
    assert tuple(y.strides) == t.strides
    np.testing.assert_array_equal(np.from_dlpack(y), view)


def test_dlbridge_readonly_to_tvm_goes_through_the_exchange_api():
    # TVM takes dlbridge.Tensor's C exchange API table, which hands over a versioned tensor
    # flagged READ_ONLY (the legacy capsule TVM asks `__dlpack__` for could not say so, and
    # is refused with BufferError).
    src = np.arange(4.0)
    src.flags.writeable = False
    t = dlbridge.from_dlpack(src)
    before = dlbridge._dlbridge._exchange_api_exports()
    y = tvm_ffi.from_dlpack(t)
    assert dlbridge._dlbridge._exchange_api_exports() == before + 1
    np.testing.assert_array_equal(np.from_dlpack(y), src)
    with pytest.raises(BufferError):
        t.__dlpack__()


def test_tensor_released_after_tvm_tensor_dies():
    t = dlbridge.arange(4)
    rc = refcount(t)
    y = tvm_ffi.from_dlpack(t)
    del y
    gc.collect()
    assert refcount(t) == rc


def test_numpy_dlbridge_tvm_chain_numpy_deleted_first():
    a = np.arange(6, dtype=np.float32)
    address = np_address(a)
    t = dlbridge.from_dlpack(a)
    del a
    y = tvm_ffi.from_dlpack(t)
    del t
    gc.collect()
    assert y.data_ptr() == address
    assert np.from_dlpack(y).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


def test_torch_to_tvm_to_dlbridge_if_torch_present():
    torch = import_framework("torch", "torch")
    x = torch.arange(6, dtype=torch.bfloat16)
    y = tvm_ffi.from_dlpack(x)  # via PyTorch's C exchange API
    t = dlbridge.from_dlpack(y)
    assert t.dtype == "bfloat16"
    assert t.data_ptr == x.data_ptr()
