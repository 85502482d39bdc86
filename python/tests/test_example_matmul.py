"""The example extension (examples/matmul): one Rust matmul and add for NumPy, PyTorch and
JAX, results of the caller's framework, checked against each framework's own operations; its
kernels declared once (`kernel!`) run eagerly, inside `jax.jit` and inside `torch.compile`
(`compiled_graphs.py`)."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from _frameworks import import_example, import_framework

kernels = import_example("dlbridge_matmul", "matmul")
torch = import_framework("torch", "torch")

RNG = np.random.default_rng(1)
A = RNG.standard_normal((56, 56), dtype=np.float32)
B = RNG.standard_normal((56, 56), dtype=np.float32)


def test_numpy_in_numpy_out():
    c = kernels.matmul(A, B)
    assert isinstance(c, np.ndarray) and c.flags.writeable
    np.testing.assert_allclose(c, A @ B, rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(kernels.add(A, B), A + B)


def test_torch_in_torch_out_with_strided_inputs_and_in_place_results():
    a, b = torch.from_numpy(A), torch.from_numpy(B)
    c = kernels.matmul(a.T, b[:, :40])
    assert isinstance(c, torch.Tensor) and c.shape == (56, 40)
    torch.testing.assert_close(c, a.T @ b[:, :40], rtol=1e-4, atol=1e-4)
    out = torch.zeros(56, 56)
    kernels.matmul_into(a, b, out)
    torch.testing.assert_close(out, a @ b, rtol=1e-4, atol=1e-4)
    out_np = np.zeros((56, 56), np.float32)
    kernels.matmul_into(A, B, out_np)
    np.testing.assert_allclose(out_np, A @ B, rtol=1e-4, atol=1e-4)


def test_jax_in_jax_out():
    jax = import_framework("jax", "jax")
    import jax.numpy as jnp

    a, b = jnp.asarray(A), jnp.asarray(B)
    c = kernels.matmul(a, b)
    assert isinstance(c, jax.Array)
    np.testing.assert_allclose(np.asarray(c), np.asarray(a @ b), rtol=1e-3, atol=1e-3)


def test_results_are_rust_memory_shared_not_copied():
    import dlbridge

    c = kernels.matmul(torch.ones(2, 3), torch.ones(3, 2))
    assert dlbridge.from_dlpack(c).data_ptr == c.data_ptr()
    assert c.data_ptr() % 64 == 0  # dlbridge's allocation, handed over zero-copy


def test_shape_errors_are_value_errors():
    with pytest.raises(ValueError, match="inner extents differ"):
        kernels.matmul(A[:, :3], B)
    with pytest.raises(TypeError, match="expected a float32"):
        kernels.matmul(A.astype(np.float64), B)


def test_out_of_the_wrong_shape_is_refused_before_the_kernel_runs():
    out = np.zeros((56, 55), np.float32)
    with pytest.raises(
        ValueError,
        match=r"matmul_into: out has shape \(56, 55\), but its rule "
        r"gives \(56, 56\)",
    ):
        kernels.matmul_into(A, B, out)
    assert not out.any()


def test_the_declared_kernels_run_eagerly_under_jit_and_compiled(tmp_path):
    # `make tour`'s script: each way's result checked against the eager one.
    script = Path(__file__).parents[2] / "examples" / "matmul" / "compiled_graphs.py"
    completed = subprocess.run(
        [sys.executable, str(script)],
        check=False,
        capture_output=True,
        text=True,
        timeout=600,
        cwd=tmp_path,
    )
    assert completed.returncode == 0, completed.stderr
    lines = completed.stdout.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["eager", "jax.jit", "torch.compile"]
    assert "inner extents differ" in lines[3]
