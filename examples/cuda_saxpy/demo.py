"""The CUDA example: one Rust-side CUDA kernel (`a * x + y`) on PyTorch and CuPy tensors on the
GPU, launched on the caller's current stream, checked against each framework's own result.

Run after `make example-build` on a machine with an NVIDIA GPU: `.venv/bin/python
examples/cuda_saxpy/demo.py`. Without a GPU it says so and exits 0; CuPy is optional (it has no
CPU build), and is skipped with a note where it is not installed.
"""

import ctypes
import sys

import dlbridge_cuda_saxpy as kernels


def cuda_devices() -> int:
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    count = ctypes.c_int(0)
    if driver.cuInit(0) != 0 or driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def torch_demo() -> None:
    import torch

    x = torch.randn(1_000_000, device="cuda")
    y = torch.randn(1_000_000, device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        result = kernels.saxpy(2.0, x, y)  # enqueued on `side`; nothing waits
        expected = 2.0 * x + y  # PyTorch's own, on the same stream
    side.synchronize()
    torch.testing.assert_close(result, expected)
    print(f"torch: saxpy of {x.numel():,} float32 on {result.device} matches torch's own")


def cupy_demo() -> None:
    try:
        import cupy
    except ImportError:
        print("cupy: not installed (it has no CPU build); skipped")
        return
    x = cupy.random.standard_normal(1_000_000, dtype=cupy.float32)
    y = cupy.random.standard_normal(1_000_000, dtype=cupy.float32)
    with cupy.cuda.Stream() as side:
        result = kernels.saxpy(2.0, x, y)
        expected = 2.0 * x + y
    side.synchronize()
    cupy.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)
    print(f"cupy: saxpy of {x.size:,} float32 on {result.device} matches cupy's own")


def main() -> int:
    if cuda_devices() == 0:
        print("no CUDA GPU here: the example needs one (it builds and imports without)")
        return 0
    torch_demo()
    cupy_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
