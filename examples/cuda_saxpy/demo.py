"""The CUDA example: one Rust-side CUDA kernel (`a * x + y`) on PyTorch and CuPy tensors on the
GPU, launched on the caller's current stream, checked against each framework's own result; then
the kernels declared with `dlbridge_pyo3::kernel!` inside `torch.compile(fullgraph=True)` and
`jax.jit` (with `vmap`), each checked against the eager result.

Run after `make example-build` on a machine with an NVIDIA GPU: `.venv/bin/python
examples/cuda_saxpy/demo.py`. Without a GPU it says so and exits 0; CuPy is optional (it has no
CPU build), and is skipped with a note where it is not installed.
"""

import ctypes
import os
import sys

import dlbridge_cuda_saxpy as kernels

# JAX takes most of the GPU's memory on first use unless told not to; PyTorch shares the device.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")


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
    side = cupy.cuda.Stream()
    with side:
        result = kernels.saxpy(2.0, x, y)
        expected = 2.0 * x + y
    side.synchronize()
    cupy.testing.assert_allclose(result, expected, rtol=1e-6, atol=1e-6)
    print(f"cupy: saxpy of {x.size:,} float32 on {result.device} matches cupy's own")
    # The result's memory is freed on the stream it was made on, which must outlive it: the
    # result goes first. (Freed after CuPy destroyed `side`, the free would fail, and cudarc
    # would report that failure at the next call it makes in the device's context.)
    del result


def torch_compile_demo() -> None:
    import torch

    import dlbridge.torch

    ops = dlbridge.torch.register(kernels)  # torch.ops.dlbridge_cuda_saxpy.{saxpy_out, scale_}

    def step(x, y):
        z = ops["saxpy_out"](x.sin(), y, 0.5)  # a result shaped like x, on the current stream
        w = z + 1.0
        ops["scale_"](w, 3.0)  # in place
        return w

    x, y = torch.randn(100_000, device="cuda"), torch.randn(100_000, device="cuda")
    eager = step(x, y)
    compiled = torch.compile(step, fullgraph=True)(x, y)
    torch.testing.assert_close(compiled, eager)
    torch.testing.assert_close(eager, 3.0 * (0.5 * x.sin() + y + 1.0))
    print("torch.compile(fullgraph=True): saxpy_out and scale_ as operators give the eager result")


def jax_jit_demo() -> None:
    import jax
    import numpy as np

    import dlbridge.jax

    saxpy_out = dlbridge.jax.kernel(kernels, "saxpy_out")  # XLA's CUDA handler, XLA's stream
    scale_ = dlbridge.jax.kernel(kernels, "scale_")
    rng = np.random.default_rng(0)
    x, y = (jax.device_put(rng.standard_normal(100_000, dtype=np.float32)) for _ in range(2))
    step = jax.jit(lambda x, y: scale_(saxpy_out(jax.numpy.sin(x), y, 0.5) + 1.0, 3.0))
    expected = 3.0 * (0.5 * np.sin(np.asarray(x)) + np.asarray(y) + 1.0)
    np.testing.assert_allclose(np.asarray(step(x, y)), expected, rtol=1e-5, atol=1e-5)
    rows = jax.numpy.stack([x[:1000], y[:1000]])
    batched = jax.jit(jax.vmap(lambda row: saxpy_out(row, row, 2.0)))(rows)
    np.testing.assert_allclose(np.asarray(batched), 3.0 * np.asarray(rows), rtol=1e-6)
    print("jax.jit (and vmap): saxpy_out and scale_ through XLA's FFI give the eager result")


def main() -> int:
    if cuda_devices() == 0:
        print("no CUDA GPU here: the example needs one (it builds and imports without)")
        return 0
    torch_demo()
    cupy_demo()
    torch_compile_demo()
    jax_jit_demo()
    return 0


if __name__ == "__main__":
    sys.exit(main())
