"""Streams and host copies of device tensors, both ways: the `stream=` that
`dlbridge.from_dlpack` asks a producer for and the stream it records as the one the data is
ready on (`explain(...)["import"]["ready_stream"]`); `Tensor.__dlpack__(stream=...)` checking
the consumer's stream and making it wait for that stream; `dl_device=(1, 0)` copies of CUDA
tensors to the host on either side.

Without a GPU, device tensors are faked (`FakeDeviceTensor`: `__dlpack_device__` says CUDA
or ROCm, the memory is host memory that nothing dereferences), which checks every rule that
needs no driver; where an operation needs the CUDA driver the test checks the error that says
so, or, on a machine with a GPU, that it succeeds. The tests marked `gpu` check stream
ordering and host copies for real on PyTorch and CuPy tensors, and are skipped without one
(python/tests/_gpu.py).
"""

from __future__ import annotations

import contextlib

import numpy as np
import pytest

import dlbridge
from _gpu import cuda_device_count, gpu_framework
from _helpers import FakeDeviceTensor
from test_device_args import FakeDeviceTensorWithTable

kDLCPU, kDLCUDA, kDLROCM = 1, 2, 10
NO_DRIVER = "needs the CUDA driver"


def asked_streams(x: FakeDeviceTensor) -> list:
    """The `stream=` of each `__dlpack__` call, `"absent"` where none was passed."""
    return [call.get("stream", "absent") for call in x.calls]


def ready_stream(x, **keywords):
    """The stream `dlbridge.from_dlpack(x, **keywords)` records the data as ready on."""
    report = dlbridge.explain(x, **keywords)["import"]
    assert "refused" not in report, report
    return report["ready_stream"]


# --- import: the stream asked for -----------------------------------------------------------


def test_a_cuda_import_asks_for_the_producers_current_stream_by_default():
    # A type dlbridge knows nothing of: its current stream is the legacy default stream,
    # asked for as 1 (0 is forbidden for CUDA), recorded as its handle 0.
    x = FakeDeviceTensor((4,))
    dlbridge.from_dlpack(x)
    assert asked_streams(x) == [1]
    assert ready_stream(FakeDeviceTensor((4,))) == 0


def test_a_type_whose_exchange_table_names_its_work_stream_is_asked_for_that_stream():
    x = FakeDeviceTensorWithTable((3,), device=(kDLCUDA, 2))
    dlbridge.from_dlpack(x)
    assert asked_streams(x) == [0x7002]
    assert ready_stream(FakeDeviceTensorWithTable((3,), device=(kDLCUDA, 2))) == 0x7002


@pytest.mark.parametrize(
    ("stream", "asked", "ready"),
    [(-1, -1, None), (1, 1, 1), (2, 2, 2), (0x5000, 0x5000, 0x5000)],
)
def test_an_explicit_stream_is_passed_on_and_recorded(stream, asked, ready):
    x = FakeDeviceTensor((4,))
    tensor = dlbridge.from_dlpack(x, stream=stream)
    assert asked_streams(x) == [asked]
    assert tensor.__dlpack_device__() == (kDLCUDA, 0)
    assert ready_stream(FakeDeviceTensor((4,)), stream=stream) == ready


def test_streams_the_standard_forbids_are_refused_before_the_producer_is_asked():
    x = FakeDeviceTensor((4,))
    with pytest.raises(ValueError, match=r"stream=0 is not a valid DLPack stream .* CUDA:0"):
        dlbridge.from_dlpack(x, stream=0)
    rocm = FakeDeviceTensor((4,), device=(kDLROCM, 1))
    for stream in (1, 2):
        with pytest.raises(ValueError, match=rf"stream={stream} is not a valid .* ROCM:1"):
            dlbridge.from_dlpack(rocm, stream=stream)
    with pytest.raises(ValueError, match=r"stream=-2 is not a DLPack stream"):
        dlbridge.from_dlpack(x, stream=-2)
    with pytest.raises(TypeError):
        dlbridge.from_dlpack(x, stream="default")
    assert x.calls == [] and rocm.calls == []


def test_rocm_imports_ask_for_rocms_default_stream():
    x = FakeDeviceTensor((4,), device=(kDLROCM, 0))
    dlbridge.from_dlpack(x)
    assert asked_streams(x) == [0]
    y = FakeDeviceTensor((4,), device=(kDLROCM, 0))
    dlbridge.from_dlpack(y, stream=0x9000)
    assert asked_streams(y) == [0x9000]


def test_host_tensors_are_never_asked_for_a_stream():
    x = FakeDeviceTensor((4,), device=(kDLCPU, 0))
    dlbridge.from_dlpack(x, stream=0x5000)
    dlbridge.from_dlpack(x)
    assert asked_streams(x) == ["absent", "absent"]
    assert ready_stream(np.zeros(3)) is None


def test_a_copy_to_the_cpu_passes_no_stream():
    # The standard: with dl_device=CPU, stream must be None (the copy is synchronised).
    x = FakeDeviceTensor((4,))
    with pytest.raises(BufferError, match="copy=False"):
        dlbridge.from_dlpack(x, device=(kDLCPU, 0), copy=False, stream=0x5000)
    assert [(call["dl_device"], call.get("stream", "absent")) for call in x.calls] == [
        ((kDLCPU, 0), "absent")
    ]


def test_a_producer_that_ignores_dl_device_gets_its_cuda_tensor_copied_here_or_refused():
    # The fake hands out a CUDA tensor whatever dl_device says: dlbridge copies it to the
    # host itself, which copy=False forbids.
    with pytest.raises(BufferError, match="copy=False, but the producer gave a tensor on CUDA:0"):
        dlbridge.from_dlpack(FakeDeviceTensor((4,)), device=(kDLCPU, 0), copy=False)
    if cuda_device_count() == 0:
        with pytest.raises(BufferError, match=NO_DRIVER):
            dlbridge.from_dlpack(FakeDeviceTensor((4,)), device=(kDLCPU, 0))
    refused = dlbridge.explain(FakeDeviceTensor((4,)), device=(kDLCPU, 0), copy=False)["import"]
    assert refused["refused"].startswith("BufferError: copy=False"), refused


# --- export: the consumer's stream ----------------------------------------------------------


def cuda_tensor(stream: int | None = None, device=(kDLCUDA, 0)) -> dlbridge.Tensor:
    """A dlbridge tensor over a fake device tensor, ready on `stream` (the producer's current
    stream when None)."""
    x = FakeDeviceTensor((4,), device=device)
    return dlbridge.from_dlpack(x) if stream is None else dlbridge.from_dlpack(x, stream=stream)


def test_a_consumer_on_the_stream_the_data_is_ready_on_needs_no_driver():
    # Ready on the legacy default stream (handle 0): None and 1 both name it.
    tensor = cuda_tensor()
    for keywords in ({}, {"stream": None}, {"stream": 1}, {"stream": -1}):
        capsule = tensor.__dlpack__(max_version=(1, 3), **keywords)
        assert dlbridge.from_dlpack(capsule).__dlpack_device__() == (kDLCUDA, 0)
    on_side_stream = cuda_tensor(0x5000)
    on_side_stream.__dlpack__(stream=0x5000)
    on_side_stream.__dlpack__(stream=-1)
    # Unknown readiness (imported with stream=-1): nothing to order.
    cuda_tensor(-1).__dlpack__(stream=0x6000)


def test_a_consumer_on_another_stream_is_made_to_wait_through_the_driver():
    # Ready on the per-thread default stream, consumed on the legacy one: real streams of
    # every CUDA context, so that on a GPU the wait is really made (the memory is not read).
    tensor = cuda_tensor(2)
    if cuda_device_count() == 0:
        with pytest.raises(BufferError, match=NO_DRIVER):
            tensor.__dlpack__(stream=1)
        with pytest.raises(BufferError, match=NO_DRIVER):
            tensor.__dlpack__()  # None: the legacy default stream
    else:
        tensor.__dlpack__(stream=1)
        tensor.__dlpack__()


def test_stream_values_are_checked_against_the_tensors_device():
    tensor = cuda_tensor()
    with pytest.raises(ValueError, match=r"stream=0 is not a valid DLPack stream .* CUDA:0"):
        tensor.__dlpack__(stream=0)
    with pytest.raises(ValueError, match=r"stream=-7 is not a DLPack stream"):
        tensor.__dlpack__(stream=-7)
    # Never TypeError: consumers read it as "an old producer without keywords".
    for odd in ("1", 1.5, object()):
        with pytest.raises(ValueError, match="stream must be None or an int"):
            tensor.__dlpack__(stream=odd)
    with pytest.raises(ValueError, match="stream must be None for a tensor on CPU:0"):
        dlbridge.zeros(3).__dlpack__(stream=1)


def test_rocm_streams_are_never_ordered_silently():
    tensor = cuda_tensor(device=(kDLROCM, 0))  # ready on ROCm's default stream, 0
    tensor.__dlpack__()  # None: ROCm's default stream, the one the data is ready on
    tensor.__dlpack__(stream=0)
    tensor.__dlpack__(stream=-1)
    with pytest.raises(BufferError, match="cannot order ROCm streams: pass stream=-1"):
        tensor.__dlpack__(stream=0x5000)
    with pytest.raises(ValueError, match=r"stream=1 is not a valid DLPack stream .* ROCM:0"):
        tensor.__dlpack__(stream=1)


def test_copy_true_of_a_device_tensor_the_producer_did_not_copy_is_refused_clearly():
    # A producer that ignores copy=True (hands out its own memory, IS_COPIED unset): dlbridge
    # copies host memory itself, but makes no copies on a device; it says what to do instead.
    x = FakeDeviceTensor((4,))
    with pytest.raises(
        BufferError,
        match=r"copy=True, but the producer did not copy its tensor "
        r"on CUDA:0 and dlbridge makes no copies on a device",
    ):
        dlbridge.from_dlpack(x, copy=True)
    assert x.calls[0]["copy"] is True


# --- export: copies of device tensors -------------------------------------------------------


def test_host_copies_of_cuda_tensors_follow_the_standards_rules():
    tensor = cuda_tensor()
    with pytest.raises(BufferError, match="copy=False, but exporting a tensor on CUDA:0 to CPU"):
        tensor.__dlpack__(dl_device=(kDLCPU, 0), copy=False)
    with pytest.raises(ValueError, match=r"stream must be None with dl_device=\(1, 0\)"):
        tensor.__dlpack__(dl_device=(kDLCPU, 0), stream=1)
    with pytest.raises(BufferError, match=r"copy=True for a tensor on CUDA:0: dlbridge makes no"):
        tensor.__dlpack__(copy=True)
    with pytest.raises(BufferError, match=r"dl_device=CUDA:1 cannot be reached"):
        tensor.__dlpack__(dl_device=(kDLCUDA, 1))
    # Its own device: shared, whatever copy=False says.
    tensor.__dlpack__(dl_device=(kDLCUDA, 0), copy=False)
    if cuda_device_count() == 0:
        with pytest.raises(BufferError, match=NO_DRIVER):
            tensor.__dlpack__(dl_device=(kDLCPU, 0))
    rocm = cuda_tensor(device=(kDLROCM, 0))
    with pytest.raises(
        BufferError, match="dl_device=CPU:0 cannot be reached from a tensor on ROCM"
    ):
        rocm.__dlpack__(dl_device=(kDLCPU, 0))


# --- on a GPU -----------------------------------------------------------------------------


def _torch_cuda():
    return gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())


@contextlib.contextmanager
def _late_on(torch, stream, cycles=200_000_000):
    """Makes `stream` current, once the device is idle and `cycles` of spinning (200,000,000:
    about 0.1 s) are enqueued there: what the block enqueues lands that much later."""
    torch.cuda.synchronize()
    with torch.cuda.stream(stream):
        torch.cuda._sleep(cycles)
        yield


@pytest.mark.gpu
def test_gpu_a_reexport_makes_the_consumers_stream_wait_for_the_producers():
    torch = _torch_cuda()
    producer, consumer = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    with _late_on(torch, producer):
        x.fill_(7.0)
        tensor = dlbridge.from_dlpack(x)  # ready on `producer`, nothing synchronised
        assert dlbridge.explain(x)["import"]["ready_stream"] == producer.cuda_stream
    with torch.cuda.stream(consumer):
        # torch.from_dlpack passes its current stream: `consumer` must wait for `producer`.
        seen = torch.from_dlpack(tensor)
        total = seen.sum()
    consumer.synchronize()
    assert total.item() == 7.0 * (1 << 20)


@pytest.mark.gpu
def test_gpu_an_import_on_a_stream_of_the_callers_is_ordered_by_the_producer():
    torch = _torch_cuda()
    producer, mine = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    with _late_on(torch, producer):
        x.fill_(3.0)
        # torch's __dlpack__ makes `mine` wait for `producer` (its current stream).
        tensor = dlbridge.from_dlpack(x, stream=mine.cuda_stream)
    assert dlbridge.explain(x, stream=mine.cuda_stream)["import"]["ready_stream"] == (
        mine.cuda_stream
    )
    with torch.cuda.stream(mine):
        total = torch.from_dlpack(tensor).sum()
    mine.synchronize()
    assert total.item() == 3.0 * (1 << 20)


@pytest.mark.gpu
def test_gpu_host_copies_of_cuda_tensors_wait_for_the_data_and_keep_the_layout():
    torch = _torch_cuda()
    producer = torch.cuda.Stream()
    base = torch.zeros((64, 48), device="cuda")
    with _late_on(torch, producer):
        base.copy_(torch.arange(64 * 48, dtype=torch.float32, device="cuda").reshape(64, 48))
        strided = base[::3, 1::2].t()  # neither row- nor column-major, from an offset
        tensor = dlbridge.from_dlpack(strided)
    # Known without reading the device: `strided.cpu()` would copy on the default stream,
    # which does not wait for `producer`.
    expected = np.arange(64 * 48, dtype=np.float32).reshape(64, 48)[::3, 1::2].T
    host = dlbridge.from_dlpack(tensor.__dlpack__(max_version=(1, 3), dl_device=(kDLCPU, 0)))
    assert host.__dlpack_device__() == (kDLCPU, 0)
    np.testing.assert_array_equal(np.from_dlpack(host), expected)
    # The consumer side: asked for the CPU, either torch copies or dlbridge does.
    imported = dlbridge.from_dlpack(strided, device=(kDLCPU, 0))
    np.testing.assert_array_equal(np.from_dlpack(imported), expected)


@pytest.mark.gpu
def test_gpu_a_wait_that_would_break_a_graph_capture_is_refused():
    torch = _torch_cuda()
    producer, capturing = torch.cuda.Stream(), torch.cuda.Stream()
    x = torch.zeros(1 << 20, device="cuda")
    with _late_on(torch, producer, cycles=2_000_000_000):  # still running during the capture
        x.fill_(1.0)
        tensor = dlbridge.from_dlpack(x)
    # The capture is begun by hand: `torch.cuda.graph` synchronises the device first, which
    # would let the producer's work finish.
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.stream(capturing):
        graph.capture_begin()
        try:
            with pytest.raises(BufferError, match="CUDA graph being captured"):
                tensor.__dlpack__(stream=capturing.cuda_stream)
            total = torch.ones(4, device="cuda").sum()  # the capture goes on, unbroken
        finally:
            graph.capture_end()
    graph.replay()
    torch.cuda.synchronize()
    assert total.item() == 4.0
    # Once the producer's work is done, a capturing consumer needs no wait.
    with torch.cuda.graph(torch.cuda.CUDAGraph(), stream=capturing):
        tensor.__dlpack__(stream=capturing.cuda_stream)
        torch.ones(4, device="cuda").sum()


@pytest.mark.gpu
def test_gpu_cupy_imports_record_cupys_current_stream():
    cupy = gpu_framework("cupy")
    x = cupy.arange(16, dtype=cupy.float32)
    with cupy.cuda.Stream() as side:
        assert dlbridge.explain(x)["import"]["ready_stream"] == side.ptr
        tensor = dlbridge.from_dlpack(x)
        y = cupy.from_dlpack(tensor)  # on `side`: the same stream, no wait needed
        total = float(y.sum())
    assert total == float(np.arange(16, dtype=np.float32).sum())
