"""The CUDA example extension (examples/cuda_saxpy): one CUDA kernel, compiled at run time with
NVRTC through cudarc, called on PyTorch and CuPy tensors on the GPU through dlbridge's device
arguments, on the caller's current stream, checked against the framework's own `a * x + y`.

Without a GPU only the refusals run: host tensors are refused naming the argument, and fake
CUDA tensors reach the kernel's driver check, which raises RuntimeError (never a panic). The
tests marked `gpu` are skipped there (python/tests/_gpu.py); CuPy has no CPU build, so its
test is GPU-only too.
"""

import pytest

from _frameworks import import_example, import_framework
from _gpu import cuda_device_count, gpu_framework
from _helpers import FakeDeviceTensor

saxpy = import_example("dlbridge_cuda_saxpy", "cuda_saxpy")
torch = import_framework("torch", "torch")

#: More elements than one launch has threads (65535 blocks of 256): the grid-stride loop runs twice.
LARGE = 65_535 * 256 + 1000


def test_host_tensors_are_refused_naming_the_argument():
    with pytest.raises(TypeError, match=r"on a CUDA device, got float32 .* on CPU:0") as raised:
        saxpy.saxpy(2.0, torch.ones(4), torch.ones(4))
    assert "while processing 'x'" in getattr(raised.value, "__notes__", [])


def test_fake_cuda_tensors_are_refused_before_a_launch_and_without_a_driver_raise():
    # Lengths are checked before the driver is touched, so this holds on a GPU machine too.
    with pytest.raises(ValueError, match="one length"):
        saxpy.saxpy(2.0, FakeDeviceTensor((4,)), FakeDeviceTensor((5,)))
    if cuda_device_count() == 0:
        # Without a driver the kernel raises instead of panicking. (With one, fake device
        # addresses would reach a launch: the GPU tests below run real tensors instead.)
        with pytest.raises(RuntimeError, match="no CUDA driver"):
            saxpy.saxpy(2.0, FakeDeviceTensor((4,)), FakeDeviceTensor((4,)))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1, 1000, LARGE])
def test_gpu_torch_saxpy_on_the_current_and_a_side_stream(n):
    torch_cuda = gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())
    generator = torch_cuda.Generator(device="cuda").manual_seed(n)
    x = torch_cuda.randn(n, device="cuda", generator=generator)
    y = torch_cuda.randn(n, device="cuda", generator=generator)
    result = saxpy.saxpy(2.5, x, y)
    assert isinstance(result, torch_cuda.Tensor) and result.device == x.device
    assert result.shape == (n,) and result.dtype == torch_cuda.float32
    torch_cuda.testing.assert_close(result, 2.5 * x + y)
    side = torch_cuda.cuda.Stream()
    side.wait_stream(torch_cuda.cuda.current_stream())
    with torch_cuda.cuda.stream(side):
        # Enqueued on `side` (the current stream there), ordered after the framework's work
        # on `side` without any synchronisation by dlbridge.
        out = torch_cuda.empty_like(x)
        saxpy.saxpy_into(-1.0, x, y, out)
        expected = -1.0 * x + y
        in_place = y.clone()
        saxpy.saxpy_into(3.0, x, in_place, in_place)
    side.synchronize()
    torch_cuda.testing.assert_close(out, expected)
    torch_cuda.testing.assert_close(in_place, 3.0 * x + y)
    with pytest.raises(TypeError, match="on CPU:0"):
        saxpy.saxpy(1.0, x, y.cpu())


@pytest.mark.gpu
def test_gpu_cupy_saxpy_on_the_current_and_a_side_stream():
    cupy = gpu_framework("cupy")
    rng = cupy.random.default_rng(3)
    x = rng.standard_normal(LARGE, dtype=cupy.float32)
    y = rng.standard_normal(LARGE, dtype=cupy.float32)
    result = saxpy.saxpy(2.5, x, y)
    assert isinstance(result, cupy.ndarray) and result.device == x.device
    cupy.testing.assert_allclose(result, 2.5 * x + y, rtol=1e-6, atol=1e-6)
    side = cupy.cuda.Stream()
    with side:
        out = cupy.empty_like(x)
        saxpy.saxpy_into(-1.0, x, y, out)
        expected = -1.0 * x + y
    side.synchronize()
    cupy.testing.assert_allclose(out, expected, rtol=1e-6, atol=1e-6)


@pytest.mark.gpu
def test_gpu_results_are_freed_when_the_framework_drops_them():
    torch_cuda = gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())
    x = torch_cuda.ones(1 << 20, device="cuda")
    torch_cuda.cuda.synchronize()
    free_before, _ = torch_cuda.cuda.mem_get_info()
    for _ in range(50):  # 50 x 4 MiB: would exhaust nothing, but would show as a leak
        result = saxpy.saxpy(1.0, x, x)
        del result
    torch_cuda.cuda.synchronize()
    free_after, _ = torch_cuda.cuda.mem_get_info()
    assert free_before - free_after < 16 << 20, (free_before, free_after)
