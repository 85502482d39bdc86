"""DLPack 1.3's C exchange API on `dlbridge.Tensor`: the table passes every check a consumer
would make (each of the five functions called through ctypes), and real consumers (tvm-ffi,
dlbridge itself) take it."""

import ctypes
from ctypes import POINTER, c_void_p

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import collect, exchange_function
from dlbridge.check.abi import (
    FLAG_READ_ONLY,
    SET_ERROR,
    DLDataType,
    DLDevice,
    DLManagedTensorVersioned,
    DLPackExchangeAPI,
    DLTensor,
)
from dlbridge.check.capsules import capsule_table, free
from dlbridge.check.records import make_from_numpy, make_major2, make_managed

assert ctypes.sizeof(DLPackExchangeAPI) == 56


@pytest.fixture(scope="module")
def table():
    return capsule_table(dlbridge.Tensor.__dlpack_c_exchange_api__)


def _function(name):
    return exchange_function(dlbridge.Tensor, name)


def _free(tensor_pointer):
    """Release a tensor the table handed out, which must carry a deleter."""
    assert tensor_pointer.contents.deleter, "the table handed out a tensor without a deleter"
    free(tensor_pointer)


def test_the_table_is_version_1_3_with_every_member(table):
    assert (table.header.version.major, table.header.version.minor) == (1, 3)
    assert table.header.prev_api is None
    for name, _ in DLPackExchangeAPI._fields_[1:]:
        assert getattr(table, name), name


def test_managed_tensor_from_py_object_shares_memory():
    source = np.arange(6, dtype=np.int32).reshape(2, 3)
    t = dlbridge.from_dlpack(source)
    export = _function("managed_tensor_from_py_object_no_sync")
    out = POINTER(DLManagedTensorVersioned)()
    assert export(id(t), ctypes.byref(out)) == 0
    managed = out.contents
    assert (managed.version.major, managed.version.minor) == (1, 3)
    tensor = managed.dl_tensor
    assert tensor.data == t.data_ptr and tensor.byte_offset == 0
    assert [tensor.shape[i] for i in range(2)] == [2, 3]
    assert [tensor.strides[i] for i in range(2)] == [3, 1]
    assert (tensor.device.device_type, tensor.device.device_id) == (1, 0)
    _free(out)


def test_managed_tensor_from_py_object_keeps_read_only():
    source = np.arange(3.0)
    source.flags.writeable = False
    t = dlbridge.from_dlpack(source)
    export = _function("managed_tensor_from_py_object_no_sync")
    out = POINTER(DLManagedTensorVersioned)()
    assert export(id(t), ctypes.byref(out)) == 0
    assert out.contents.flags & FLAG_READ_ONLY
    _free(out)


def test_managed_tensor_from_py_object_refuses_other_types():
    export = _function("managed_tensor_from_py_object_no_sync")
    out = POINTER(DLManagedTensorVersioned)()
    wrong = object()
    # The error the call leaves set surfaces as an exception of the call.
    with pytest.raises(TypeError):
        export(id(wrong), ctypes.byref(out))
    assert not out


def test_managed_tensor_to_py_object_steals_the_tensor():
    record = make_from_numpy(np.arange(4, dtype=np.float64))
    wrap = _function("managed_tensor_to_py_object_no_sync")
    out = c_void_p()
    tensor_pointer = ctypes.cast(record.address, POINTER(DLManagedTensorVersioned))
    assert wrap(tensor_pointer, ctypes.byref(out)) == 0
    obj = ctypes.cast(out, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(obj))  # the call returned a new reference
    assert isinstance(obj, dlbridge.Tensor)
    assert np.from_dlpack(obj).tolist() == [0.0, 1.0, 2.0, 3.0]
    assert record.deleter_calls == 0
    del obj
    collect()
    assert record.deleter_calls == 1


def test_dltensor_from_py_object_fills_a_borrowed_descriptor():
    source = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    t = dlbridge.from_dlpack(source)
    describe = _function("dltensor_from_py_object_no_sync")
    out = DLTensor()
    assert describe(id(t), ctypes.byref(out)) == 0
    assert out.data == t.data_ptr and out.ndim == 2 and out.byte_offset == 0
    assert [out.shape[i] for i in range(2)] == [3, 2]
    assert [out.strides[i] for i in range(2)] == [4, 2]
    assert (out.dtype.code, out.dtype.bits, out.dtype.lanes) == (2, 32, 1)


def test_current_work_stream_is_null_on_the_cpu():
    stream = _function("current_work_stream")
    out = c_void_p(12345)
    assert stream(1, 0, ctypes.byref(out)) == 0
    assert out.value is None


def test_the_allocator_makes_rust_owned_tensors_and_reports_errors():
    allocate = _function("managed_tensor_allocator")
    errors = []

    @SET_ERROR
    def set_error(ctx, kind, message):
        errors.append((kind.decode(), message.decode()))

    shape = (ctypes.c_int64 * 2)(2, 3)
    prototype = DLTensor()
    prototype.device = DLDevice(1, 0)
    prototype.ndim = 2
    prototype.dtype = DLDataType(2, 32, 1)
    prototype.shape = ctypes.cast(shape, POINTER(ctypes.c_int64))
    out = POINTER(DLManagedTensorVersioned)()
    assert allocate(ctypes.byref(prototype), ctypes.byref(out), None, set_error) == 0
    tensor = out.contents.dl_tensor
    assert [tensor.shape[i] for i in range(2)] == [2, 3]
    assert tensor.data % 64 == 0
    assert ctypes.string_at(tensor.data, 24) == bytes(24)
    _free(out)
    assert errors == []

    prototype.device = DLDevice(2, 0)  # CUDA: not ours to allocate
    assert allocate(ctypes.byref(prototype), ctypes.byref(out), None, set_error) == -1
    assert errors and errors[0][0] == "BufferError" and "CUDA" in errors[0][1]


def test_null_pointers_from_a_c_caller_are_errors_not_crashes():
    # A C caller's bug: every function refuses NULL where it needs a pointer, with the
    # argument named, and never writes through it.
    t = dlbridge.arange(4)
    export = _function("managed_tensor_from_py_object_no_sync")
    describe = _function("dltensor_from_py_object_no_sync")
    wrap = _function("managed_tensor_to_py_object_no_sync")
    out = POINTER(DLManagedTensorVersioned)()
    with pytest.raises(ValueError, match="output pointer `out` is NULL"):
        export(id(t), None)
    with pytest.raises(ValueError, match="`py_object` is NULL"):
        export(None, ctypes.byref(out))
    with pytest.raises(ValueError, match="output pointer `out` is NULL"):
        describe(id(t), None)
    with pytest.raises(ValueError, match="`py_object` is NULL"):
        describe(None, ctypes.byref(DLTensor()))
    with pytest.raises(BufferError, match="NULL"):
        wrap(None, ctypes.byref(c_void_p()))
    assert not out

    allocate = _function("managed_tensor_allocator")
    errors = []

    @SET_ERROR
    def set_error(ctx, kind, message):
        errors.append(message.decode())

    assert allocate(None, ctypes.byref(out), None, set_error) == -1
    assert allocate(ctypes.byref(DLTensor()), None, None, set_error) == -1
    assert errors == ["NULL prototype or output pointer"] * 2
    stream = _function("current_work_stream")
    assert stream(1, 0, None) == 0


def test_to_py_object_releases_what_it_refuses_exactly_once():
    # The tensor is stolen on failure too: refused (a NULL output slot, a malformed
    # descriptor, an unknown major version), it is released there and then, once.
    wrap = _function("managed_tensor_to_py_object_no_sync")
    cases = {
        "NULL out_py_object": (make_managed((2, 3)), None, ValueError),
        "negative extent": (make_managed((2, -3)), c_void_p(), BufferError),
        "major version 2": (make_major2(), c_void_p(), BufferError),
        "NULL data": (make_managed((2, 3), data=None), c_void_p(), BufferError),
    }
    for what, (record, out, error) in cases.items():
        pointer = ctypes.cast(record.address, POINTER(DLManagedTensorVersioned))
        with pytest.raises(error):
            wrap(pointer, None if out is None else ctypes.byref(out))
        assert record.deleter_calls == 1, what
        assert out is None or out.value is None, what


def test_consumers_take_the_table():
    t = dlbridge.from_dlpack(np.arange(5, dtype=np.int64))
    before = dlbridge._dlbridge._exchange_api_exports()
    again = dlbridge.from_dlpack(t)
    assert again.data_ptr == t.data_ptr
    assert dlbridge._dlbridge._exchange_api_exports() == before + 1
    tvm_ffi = import_framework("tvm_ffi", "apache-tvm-ffi")
    x = tvm_ffi.from_dlpack(t)
    assert dlbridge._dlbridge._exchange_api_exports() == before + 2
    assert tuple(x.shape) == (5,)
