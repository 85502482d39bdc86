"""The CUDA example extension (examples/cuda_saxpy): one CUDA kernel, compiled at run time with
NVRTC through cudarc, called on PyTorch and CuPy tensors on the GPU through dlbridge's device
arguments, on the caller's current stream, checked against the framework's own `a * x + y`.

The kernels declared once with `dlbridge_pyo3::kernel!` (`saxpy_out`, `scale_`) run eagerly,
inside `jax.jit` (XLA's CUDA handler, on XLA's stream) and inside `torch.compile` (operators
with a CUDA implementation), each giving the eager result.

Without a GPU only the refusals and the registrations run: host tensors are refused naming the
argument, fake CUDA tensors reach the kernel's driver check, which raises RuntimeError (never a
panic), and the kernels are published for the CUDA platform alone. The tests marked `gpu` are
skipped there (python/tests/_gpu.py); CuPy has no CPU build, so its test is GPU-only too.
"""

import os

import numpy as np
import pytest

from _frameworks import import_example, import_framework
from _gpu import cuda_device_count, gpu_framework
from _helpers import FakeDeviceTensor

saxpy = import_example("dlbridge_cuda_saxpy", "cuda_saxpy")
torch = import_framework("torch", "torch")
# JAX takes most of the GPU's memory on first use unless told not to; PyTorch and CuPy share
# the device in this process.
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
jax = import_framework("jax", "jax")

import dlbridge.jax  # noqa: E402  (after the environment JAX reads)
import dlbridge.torch  # noqa: E402
from dlbridge import _kernel_signatures  # noqa: E402

OPS = dlbridge.torch.register(saxpy, "dlbridge_cuda_saxpy")

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


# ---- the kernels declared with kernel!: published for CUDA, refusing host tensors -----------


def test_the_kernels_are_published_for_the_cuda_platform_alone():
    signatures = _kernel_signatures.signatures(saxpy)
    assert {name: s.platform for name, s in signatures.items()} == {
        "saxpy_out": "cuda",
        "scale_": "cuda",
    }
    handlers = _kernel_signatures.published_dict(
        saxpy, "__dlbridge_xla_handlers__", "XLA handlers", "publishes them"
    )
    assert {name: sorted(p) for name, p in handlers.items()} == {
        "saxpy_out": ["CUDA"],
        "scale_": ["CUDA"],
    }
    schemas = {name: dlbridge.torch.schema(s) for name, s in signatures.items()}
    assert schemas == {
        "saxpy_out": "(Tensor x, Tensor y, float a) -> Tensor",
        "scale_": "(Tensor(a!) x, float a) -> ()",
    }
    # The operators have a CUDA implementation and no CPU one: PyTorch's dispatcher refuses
    # host tensors, naming the operator and the key.
    for name in signatures:
        qualified = f"dlbridge_cuda_saxpy::{name}"
        assert torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CUDA")
        assert not torch._C._dispatch_has_kernel_for_dispatch_key(qualified, "CPU")
    with pytest.raises(NotImplementedError, match=r"saxpy_out.*CPU"):
        OPS["saxpy_out"](torch.ones(3), torch.ones(3), 2.0)


def test_the_kernels_refuse_host_tensors_eagerly_and_in_jax():
    with pytest.raises(TypeError, match=r"on a CUDA device, got float32 .* on CPU:0"):
        saxpy.saxpy_out(torch.ones(4), torch.ones(4), torch.empty(4), 2.0)
    with pytest.raises(TypeError, match="on a CUDA device"):
        saxpy.scale_(torch.ones(4), 2.0)
    cpu = jax.devices("cpu")[0]
    x = jax.device_put(np.ones(4, np.float32), cpu)
    kernel = dlbridge.jax.kernel(saxpy, "saxpy_out")
    with pytest.raises(TypeError, match="x is on cpu, but the kernel takes cuda tensors"):
        kernel(x, x, 2.0)
    # The type checks come first, as for every kernel.
    with pytest.raises(TypeError, match="expected a float32 tensor with 1 dimensions"):
        kernel(np.ones((2, 2), np.float32), np.ones(4, np.float32), 2.0)


def test_fake_cuda_tensors_reach_the_kernels_driver_check():
    x, y, out = FakeDeviceTensor((4,)), FakeDeviceTensor((4,)), FakeDeviceTensor((4,))
    with pytest.raises(ValueError, match="out has shape \\(5,\\), but its rule gives \\(4,\\)"):
        saxpy.saxpy_out(x, y, FakeDeviceTensor((5,)), 2.0)
    if cuda_device_count() == 0:
        with pytest.raises(ValueError, match="saxpy_out: no CUDA driver"):
            saxpy.saxpy_out(x, y, out, 2.0)


# ---- on the GPU: eager, inside jax.jit, inside torch.compile --------------------------------


def _torch_cuda():
    return gpu_framework("torch", needs_cuda=lambda torch: torch.cuda.is_available())


def _jax_gpu():
    return gpu_framework("jax", needs_cuda=lambda jax: bool(jax.devices("gpu")))


@pytest.mark.gpu
@pytest.mark.parametrize("n", [0, 1000, LARGE])
def test_gpu_the_kernels_run_eagerly_on_the_callers_stream(n):
    torch_cuda = _torch_cuda()
    generator = torch_cuda.Generator(device="cuda").manual_seed(n)
    x = torch_cuda.randn(n, device="cuda", generator=generator)
    y = torch_cuda.randn(n, device="cuda", generator=generator)
    side = torch_cuda.cuda.Stream()
    side.wait_stream(torch_cuda.cuda.current_stream())
    with torch_cuda.cuda.stream(side):
        out = torch_cuda.empty_like(x)
        saxpy.saxpy_out(x, y, out, 2.5)
        scaled = x.clone()
        saxpy.scale_(scaled, -3.0)
    side.synchronize()
    torch_cuda.testing.assert_close(out, 2.5 * x + y)
    torch_cuda.testing.assert_close(scaled, -3.0 * x)
    with pytest.raises(ValueError, match="one length"):
        saxpy.saxpy_out(x, torch_cuda.ones(n + 1, device="cuda"), torch_cuda.empty_like(x), 1.0)


@pytest.mark.gpu
def test_gpu_the_kernels_run_inside_jax_jit_on_xlas_stream():
    jax_gpu = _jax_gpu()
    import jax.numpy as jnp

    gpu = jax_gpu.devices("gpu")[0]
    rng = np.random.default_rng(0)
    x_host = rng.standard_normal(LARGE, dtype=np.float32)
    y_host = rng.standard_normal(LARGE, dtype=np.float32)
    x, y = jax_gpu.device_put(x_host, gpu), jax_gpu.device_put(y_host, gpu)
    saxpy_out = dlbridge.jax.kernel(saxpy, "saxpy_out")
    scale_ = dlbridge.jax.kernel(saxpy, "scale_")

    @jax_gpu.jit
    def step(x, y):
        # XLA's own work before and after the kernels, on the same stream.
        z = saxpy_out(x * 2.0, y, 0.5)
        return scale_(z + 1.0, 3.0), x

    result, unchanged = step(x, y)
    np.testing.assert_allclose(
        np.asarray(result), 3.0 * (0.5 * (2.0 * x_host) + y_host + 1.0), rtol=1e-5, atol=1e-5
    )
    np.testing.assert_array_equal(np.asarray(unchanged), x_host)  # updated in place: a copy
    # vmap: one call per row ("sequential": the kernels take one dimension).
    rows = jnp.stack([x[:1000], y[:1000]])
    batched = jax_gpu.jit(jax_gpu.vmap(lambda r: saxpy_out(r, r, 2.0)))(rows)
    np.testing.assert_allclose(np.asarray(batched), 3.0 * np.asarray(rows), rtol=1e-6)
    scaled = jax_gpu.jit(jax_gpu.vmap(lambda r: scale_(r, 2.0)))(rows)
    np.testing.assert_allclose(np.asarray(scaled), 2.0 * np.asarray(rows), rtol=1e-6)
    # The body's refusal comes back as XLA's error with the kernel's message.
    with pytest.raises(Exception, match="saxpy_out: saxpy needs vectors of one length"):
        jax_gpu.block_until_ready(jax_gpu.jit(lambda x, y: saxpy_out(x, y, 1.0))(x, y[:10]))


@pytest.mark.gpu
def test_gpu_the_operators_run_inside_torch_compile_and_pass_opcheck():
    torch_cuda = _torch_cuda()
    from torch.library import opcheck

    generator = torch_cuda.Generator(device="cuda").manual_seed(1)
    x = torch_cuda.randn(4096, device="cuda", generator=generator)
    y = torch_cuda.randn(4096, device="cuda", generator=generator)
    opcheck(OPS["saxpy_out"], (x, y, 2.0))
    opcheck(OPS["scale_"], (x.clone(), 2.0))

    def step(x, y):
        z = OPS["saxpy_out"](x.sin(), y, 0.5)
        w = z + 1.0
        OPS["scale_"](w, 3.0)
        return w

    expected = step(x, y)
    compiled = torch_cuda.compile(step, fullgraph=True)
    torch_cuda.testing.assert_close(compiled(x, y), expected)
    torch_cuda.testing.assert_close(expected, 3.0 * (0.5 * x.sin() + y + 1.0))
    # On a side stream: the operators follow PyTorch's current stream, as its own do.
    side = torch_cuda.cuda.Stream()
    side.wait_stream(torch_cuda.cuda.current_stream())
    with torch_cuda.cuda.stream(side):
        on_side = compiled(x, y)
    side.synchronize()
    torch_cuda.testing.assert_close(on_side, expected)


@pytest.mark.gpu
def test_gpu_cupy_arrays_take_the_kernels_too():
    cupy = gpu_framework("cupy")
    x = cupy.arange(1000, dtype=cupy.float32)
    out = cupy.empty_like(x)
    with cupy.cuda.Stream() as side:
        saxpy.saxpy_out(x, x, out, 2.0)
        saxpy.scale_(out, 0.5)
    side.synchronize()
    cupy.testing.assert_allclose(out, 1.5 * x, rtol=1e-6)
