"""The TVM example (examples/tvm_matmul): one matmul compiled by TVM, run through dlbridge on
NumPy, PyTorch, JAX and (in MXNet's own interpreter) MXNet tensors, zero-copy. Its own process
(scripts/python-tests.sh: "tvm-example"), since it loads TVM's compiler (LLVM) beside
PyTorch and JAX."""

from __future__ import annotations

import importlib.util
import os
import sys

import numpy as np
import pytest

import dlbridge
from _frameworks import every_framework_required, import_framework

tvm = import_framework("tvm", "apache-tvm")
torch = import_framework("torch", "torch")
jax = import_framework("jax", "jax")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEMO = os.path.join(ROOT, "examples", "tvm_matmul", "demo.py")


def _load_demo():
    spec = importlib.util.spec_from_file_location("tvm_matmul_demo", DEMO)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up
    spec.loader.exec_module(module)
    return module


demo = _load_demo()
MODULE = demo.build_matmul()
FMM = MODULE["fmm"]


@pytest.mark.parametrize("leg", ["numpy_leg", "torch_leg", "jax_leg"])
@pytest.mark.parametrize("seed", [0, 7])
def test_each_framework_zero_copy_and_correct(leg, seed):
    result = getattr(demo, leg)(FMM, seed)  # each leg checks against its framework's matmul
    assert result.zero_copy
    assert result.shape == (56, 56) and result.dtype == "float32"
    assert 0 <= result.max_abs_error <= demo.TOLERANCE * 10


def test_the_result_is_written_into_the_callers_tensor():
    x, y = torch.randn(56, 56), torch.randn(56, 56)
    out = torch.zeros(56, 56)
    address = out.data_ptr()
    demo.matmul_through_dlbridge(FMM, x, y, dlbridge.from_dlpack(out))
    assert out.data_ptr() == address
    torch.testing.assert_close(out, x @ y, rtol=1e-4, atol=1e-4)


def test_a_transposed_input_is_refused_by_tvm_not_read_wrongly():
    x = torch.randn(56, 56)
    out = dlbridge.empty((56, 56))
    with pytest.raises(RuntimeError, match=r"not aligned|not contiguous"):
        demo.matmul_through_dlbridge(FMM, x.T, x, out)
    # Through dlbridge's copy (compact, 64-byte aligned) it is taken.
    demo.matmul_through_dlbridge(FMM, dlbridge.from_dlpack(x.T).copy(), x, out)
    np.testing.assert_allclose(np.asarray(out), (x.T @ x).numpy(), rtol=1e-4, atol=1e-4)


def test_the_compiled_function_checks_dtype_and_shape():
    wrong = dlbridge.zeros((56, 56), "float64")
    with pytest.raises(TypeError, match="dtype"):
        FMM(*(tvm.runtime.from_dlpack(wrong) for _ in range(3)))
    small = dlbridge.zeros((8, 8))
    with pytest.raises(ValueError, match=r"Mismatched X\.(shape|strides)"):
        FMM(*(tvm.runtime.from_dlpack(small) for _ in range(3)))


def test_a_read_only_output_is_refused_before_tvm_writes_it():
    # TVM drops READ_ONLY (its tensors have no such flag): the example checks it itself.
    x = jax.numpy.ones((56, 56), dtype=jax.numpy.float32)
    before = np.asarray(x).copy()
    with pytest.raises(ValueError, match="read-only"):
        demo.matmul_through_dlbridge(FMM, x, x, dlbridge.from_dlpack(x))
    np.testing.assert_array_equal(np.asarray(x), before)


def test_aligned_numpy_arrays_and_the_misalignment_demonstration():
    for shape in [(1,), (56, 56), (300, 300)]:
        array = demo.aligned_numpy_empty(shape)
        assert array.ctypes.data % 64 == 0 and array.shape == shape
        assert array.flags.c_contiguous and array.flags.writeable
    lines = demo.alignment_lines()
    assert "not aligned to 64 bytes" in lines[1]


def test_the_mxnet_leg_runs_the_exported_library(tmp_path):
    python = demo.mxnet_python()
    if not os.path.exists(python):
        reason = f"no MXNet interpreter at {python} (scripts/mxnet-env.sh makes it)"
        if every_framework_required():
            pytest.fail(f"{reason}. Under CI on Linux x86_64 every framework must be tested.")
        pytest.skip(reason)
    library = str(tmp_path / "fmm.so")
    MODULE.export_library(library)
    result = demo.mxnet_leg(library, python, seed=3)
    assert result.framework.startswith("mxnet 1.9")
    assert result.zero_copy
    assert result.shape == (56, 56) and result.dtype == "float32"
    assert result.max_abs_error <= demo.TOLERANCE * 10


def test_the_example_prints_a_line_per_framework(capsys):
    demo.main()
    out = capsys.readouterr().out
    for framework, reference in [
        ("numpy", "np.matmul"),
        ("torch", "torch.matmul"),
        ("jax", "jnp.matmul"),
    ]:
        line = next(line for line in out.splitlines() if line.startswith(framework + " "))
        assert "zero-copy: yes" in line and reference in line
    assert any(line.startswith("mxnet ") for line in out.splitlines())
