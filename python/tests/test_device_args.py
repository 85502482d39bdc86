"""Typed arguments in device memory (`DeviceTensorArg`, `CudaArg` of dlbridge-pyo3), through the
test kernels in `dlbridge._dlbridge._testing`: the device constraint and its errors, the device
pointer, and the stream a kernel must launch on, in its lookup order.

Without a GPU, CUDA and ROCm tensors are faked: producers whose `__dlpack_device__` says
(2, 0) or (10, 0) and whose `__dlpack__` hands out a tensor of that device over host memory
that nothing dereferences (dlbridge never reads device memory). The tests marked `gpu` check
the same on PyTorch, CuPy and JAX tensors on a real GPU, and are skipped without one
(python/tests/_gpu.py).
"""

from __future__ import annotations

import ctypes

import numpy as np
import pytest

import dlbridge
from _gpu import gpu_framework
from _helpers import FakeDeviceTensor
from _kernels import kernels as K
from dlbridge.check.abi import (
    CURRENT_WORK_STREAM,
    FLAG_READ_ONLY,
    NAME_EXCHANGE_API,
    DLPackExchangeAPI,
)
from dlbridge.check.capi import PyCapsule_New, static_name
from dlbridge.check.capsules import capsule_table

kDLCPU, kDLCUDA, kDLROCM = 1, 2, 10


@CURRENT_WORK_STREAM
def _work_stream_0x7000(device_type, device_id, out):
    out[0] = 0x7000 + device_id
    return 0


_TABLES: list = []  # the fake tables live as long as the process (as real ones do)


def _table_with_work_stream() -> bytes:
    """A copy of dlbridge's exchange table whose `current_work_stream` answers 0x7000 + id."""
    table = DLPackExchangeAPI()
    ctypes.memmove(
        ctypes.addressof(table),
        ctypes.addressof(capsule_table(dlbridge.Tensor.__dlpack_c_exchange_api__)),
        ctypes.sizeof(table),
    )
    table.current_work_stream = ctypes.cast(_work_stream_0x7000, ctypes.c_void_p).value
    _TABLES.append(table)
    return PyCapsule_New(ctypes.addressof(table), static_name(NAME_EXCHANGE_API), None)


class FakeDeviceTensorWithTable(FakeDeviceTensor):
    """A fake device tensor whose type publishes an exchange table with a work stream (its
    other members are dlbridge's, which refuse this type: the argument is imported)."""

    __dlpack_c_exchange_api__ = _table_with_work_stream()


def test_a_host_tensor_is_refused_naming_the_argument_and_both_devices():
    with pytest.raises(TypeError) as raised:
        K.cuda_vector(np.zeros(4, dtype=np.float32))
    message = str(raised.value)
    assert "while processing 'x'" in getattr(raised.value, "__notes__", []), raised.value
    assert "on a CUDA device" in message, message
    assert "on CPU:0" in message, message


def test_a_cuda_tensor_gives_its_device_pointer_and_the_legacy_default_stream():
    x = FakeDeviceTensor((5,), device=(kDLCUDA, 1))
    seen = K.cuda_vector(x)
    assert seen["device"] == (kDLCUDA, 1)
    assert seen["ptr"] == x.records[0].first_element_address()
    assert seen["shape"] == (5,) and seen["strides"] == (1,)
    # No exchange table, no known framework: the legacy default stream (handle 0), which
    # `__dlpack__` is asked for as 1 (0 is forbidden for CUDA).
    assert (seen["stream"], seen["stream_source"]) == (0, "legacy-default")
    assert seen["path"] == "dlpack"
    assert [call["stream"] for call in x.calls] == [1]


def test_the_exchange_tables_work_stream_comes_first_and_is_asked_for():
    x = FakeDeviceTensorWithTable((3,), device=(kDLCUDA, 2))
    seen = K.cuda_vector(x)
    assert (seen["stream"], seen["stream_source"]) == (0x7002, "exchange-table")
    # The import asks the producer to make the data ready on that stream.
    assert [call["stream"] for call in x.calls] == [0x7002]


def test_other_dtypes_ranks_and_layouts_are_refused_on_the_device_too():
    with pytest.raises(TypeError, match=r"float32 .* on a CUDA device, got float64 .* on CUDA:0"):
        K.cuda_vector(FakeDeviceTensor(dtype="float64"))
    with pytest.raises(TypeError, match="with 1 dimension on a CUDA device, got float32 shape"):
        K.cuda_vector(FakeDeviceTensor((2, 2)))


def test_the_rocm_constraint_refuses_cuda_and_passes_rocms_default_stream():
    with pytest.raises(TypeError, match=r"on a ROCm device, got .* on CUDA:0"):
        K.rocm_tensor(FakeDeviceTensor())
    x = FakeDeviceTensor((2, 3), device=(kDLROCM, 0))
    seen = K.rocm_tensor(x)
    assert seen["device"] == (kDLROCM, 0)
    assert seen["shape"] == (2, 3) and seen["strides"] == (3, 1)
    # ROCm's default stream is 0 in `__dlpack__`.
    assert (seen["stream"], [call["stream"] for call in x.calls]) == (0, [0])


def test_any_device_takes_host_tensors_without_a_stream():
    host = np.arange(4, dtype=np.float32)
    seen = K.any_device_tensor(host)
    assert seen["device"] == (kDLCPU, 0)
    assert seen["ptr"] == host.ctypes.data
    assert (seen["stream"], seen["stream_source"]) == (None, "none")
    cuda = FakeDeviceTensor()
    assert K.any_device_tensor(cuda)["device"] == (kDLCUDA, 0)


def test_a_writable_device_argument_refuses_read_only_and_legacy_tensors():
    x = FakeDeviceTensor()
    assert K.cuda_vector_mut(x)["ptr"] == x.records[0].first_element_address()
    with pytest.raises(
        TypeError, match=r"writable float32 .* on a CUDA device.*\(read-only: .*READ_ONLY"
    ):
        K.cuda_vector_mut(FakeDeviceTensor(flags=FLAG_READ_ONLY))
    with pytest.raises(TypeError, match="legacy DLPack capsule"):
        K.cuda_vector_mut(FakeDeviceTensor(legacy=True))


def test_arguments_on_different_streams_are_refused_before_a_launch():
    same_x, same_y = FakeDeviceTensorWithTable(), FakeDeviceTensorWithTable()
    assert K.cuda_pair_stream(same_x, same_y) == 0x7000
    with pytest.raises(ValueError, match="disagree on where the kernel must run"):
        K.cuda_pair_stream(FakeDeviceTensorWithTable(), FakeDeviceTensor())
    with pytest.raises(ValueError, match="disagree"):
        K.cuda_pair_stream(
            FakeDeviceTensor(device=(kDLCUDA, 0)), FakeDeviceTensor(device=(kDLCUDA, 1))
        )


def test_three_arguments_agree_on_one_stream_as_the_benchmarks_no_op_checks():
    # K.cuda_noop3 is benches/gpu_exchange.py's argument handling without a kernel.
    tensors = [FakeDeviceTensorWithTable((2, 2)) for _ in range(3)]
    assert K.cuda_noop3(*tensors) == 0x7000
    with pytest.raises(ValueError, match="disagree"):
        K.cuda_noop3(FakeDeviceTensorWithTable(), FakeDeviceTensorWithTable(), FakeDeviceTensor())
    with pytest.raises(TypeError, match="on a CUDA device"):
        K.cuda_noop3(*tensors[:2], np.zeros(2, dtype=np.float32))


# --- on a GPU -----------------------------------------------------------------------------


@pytest.mark.gpu
def test_gpu_torch_arguments_launch_on_torchs_current_stream():
    torch = gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())
    x = torch.arange(8, dtype=torch.float32, device="cuda")
    seen = K.cuda_vector(x)
    assert seen["device"] == (kDLCUDA, x.device.index or 0)
    assert seen["ptr"] == x.data_ptr()
    assert seen["stream"] == torch.cuda.current_stream().cuda_stream
    # PyTorch >= 2.10 answers through its exchange table, older ones through torch.cuda.
    assert seen["stream_source"] in ("exchange-table", "torch")
    side = torch.cuda.Stream()
    with torch.cuda.stream(side):
        assert K.cuda_vector(x)["stream"] == side.cuda_stream
        y = torch.zeros(8, device="cuda")
        assert K.cuda_pair_stream(x, y) == side.cuda_stream
    with pytest.raises(TypeError, match=r"on a CUDA device, got float32 .* on CPU:0"):
        K.cuda_vector(x.cpu())


@pytest.mark.gpu
def test_gpu_cupy_arguments_launch_on_cupys_current_stream():
    cupy = gpu_framework("cupy")
    x = cupy.arange(8, dtype=cupy.float32)
    seen = K.cuda_vector(x)
    assert seen["ptr"] == x.data.ptr
    assert seen["stream_source"] == "cupy"
    assert seen["stream"] == cupy.cuda.get_current_stream().ptr
    with cupy.cuda.Stream() as side:
        assert K.cuda_vector(x)["stream"] == side.ptr


@pytest.mark.gpu
def test_gpu_jax_arguments_use_the_legacy_default_stream():
    jax = gpu_framework(
        "jax", needs_cuda=lambda jax: any(device.platform == "gpu" for device in jax.devices())
    )
    x = jax.numpy.arange(8, dtype=jax.numpy.float32)
    seen = K.cuda_vector(x)
    assert (seen["stream"], seen["stream_source"]) == (0, "legacy-default")
