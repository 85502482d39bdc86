"""The DLPack story of TVM's 2018 post, with TVM 0.27's real compiler: a 56x56 matmul defined
once with TVM's tensor expressions, compiled once for the CPU (LLVM), and run through dlbridge
on NumPy, PyTorch, JAX and (in MXNet's own interpreter) MXNet tensors, zero-copy, each result
checked against the framework's own matmul. Run by `make tour`.

Every tensor goes framework -> `dlbridge.from_dlpack` -> `tvm.runtime.from_dlpack` -> the
compiled function, so the data pointer TVM computes on is the framework's own (checked).
NumPy, PyTorch and MXNet: the result is written into the caller's output tensor (MXNet's
hands it out with `to_dlpack_for_write`, a legacy capsule that dlbridge imports writable only
because the caller vouches for it: `from_dlpack(..., legacy_writable=True)`). JAX arrays
cannot be written: their output is a tensor dlbridge allocates (64-byte aligned), which TVM
writes and which JAX then takes over zero-copy.

TVM's `from_dlpack` requires 64-byte aligned data (and contiguity): PyTorch, JAX, MXNet and
dlbridge allocate so, NumPy only to 16 bytes, so the NumPy arrays here are allocated at a
64-byte boundary (`aligned_numpy_empty`); the last lines show TVM refusing a misaligned view
and taking dlbridge's copy of it (`Tensor.copy()`, 64-byte aligned).

The MXNet leg: MXNet 1.9.1 needs NumPy 1.23.5 and so an interpreter of its own
(scripts/mxnet-env.sh makes it in target/mxnet-venv; MXNET_PYTHON names another). The
compiled module is exported once as a shared library, which that interpreter loads
(mxnet_leg.py): the same machine code. Without that interpreter the leg is skipped, saying so.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Any

import numpy as np
import tvm
from tvm import te

import dlbridge

N = 56
DTYPE = "float32"
#: What TVM's `from_dlpack` demands of a tensor's first byte (tvm-ffi's FromDLPack check).
TVM_ALIGNMENT = 64
#: float32 sums of 56 products, in another order than the framework's matmul.
TOLERANCE = 1e-4
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MXNET_LEG = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mxnet_leg.py")


def build_matmul(n: int = N, dtype: str = DTYPE) -> Any:
    """`Z = X @ Y` for n x n tensors, as a TVM tensor expression compiled for the CPU: the
    compiled module (a `tvm.runtime.Executable`), whose function is `module["fmm"]`."""
    x = te.placeholder((n, n), name="X", dtype=dtype)
    y = te.placeholder((n, n), name="Y", dtype=dtype)
    k = te.reduce_axis((0, n), name="k")
    z = te.compute((n, n), lambda i, j: te.sum(x[i, k] * y[k, j], axis=k), name="Z")
    function = te.create_prim_func([x, y, z]).with_attr("global_symbol", "fmm")
    return tvm.compile(function, target="llvm")


def to_tvm(tensor: dlbridge.Tensor, *, written: bool) -> Any:
    """A `tvm.runtime.Tensor` over a dlbridge tensor's memory (zero-copy). TVM's tensors have
    no read-only flag and its `from_dlpack` drops DLPack's READ_ONLY, so a tensor the function
    writes is checked here: a read-only one is refused (ValueError). TVM itself refuses
    memory that is not 64-byte aligned or not contiguous (RuntimeError)."""
    if written and tensor.readonly:
        raise ValueError(
            f"the output tensor is read-only (dtype {tensor.dtype}, shape {tensor.shape}): "
            "write into a tensor allocated by dlbridge (dlbridge.empty) and hand it over"
        )
    return tvm.runtime.from_dlpack(tensor)


@dataclass
class Call:
    """One call of the compiled function: the dlbridge tensors handed to TVM (x, y, out) and
    TVM's tensors over them."""

    through_dlbridge: list[dlbridge.Tensor]
    in_tvm: list[Any]

    def zero_copy(self, framework_addresses: list[int]) -> bool:
        """Whether TVM computed on the framework's own memory: the same data address at
        every step, for every argument."""
        return (
            framework_addresses
            == [t.data_ptr for t in self.through_dlbridge]
            == [t.data_ptr() for t in self.in_tvm]
        )


def matmul_through_dlbridge(fmm: Any, x: Any, y: Any, out: dlbridge.Tensor) -> Call:
    """Calls the compiled `fmm(x, y, out)` with x and y imported by dlbridge from any DLPack
    producer (or legacy capsule) and out a dlbridge tensor, which it writes."""
    a, b = dlbridge.from_dlpack(x), dlbridge.from_dlpack(y)
    in_tvm = [to_tvm(a, written=False), to_tvm(b, written=False), to_tvm(out, written=True)]
    fmm(*in_tvm)
    return Call([a, b, out], in_tvm)


def aligned_numpy_empty(shape: tuple[int, ...], dtype: str = DTYPE) -> np.ndarray:
    """A NumPy array whose data starts at a 64-byte boundary (NumPy itself aligns to 16)."""
    size = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.empty(size + TVM_ALIGNMENT, dtype=np.uint8)
    start = -raw.ctypes.data % TVM_ALIGNMENT
    return raw[start : start + size].view(dtype).reshape(shape)


@dataclass
class Leg:
    """One framework's run of the compiled function."""

    framework: str
    dtype: str
    shape: tuple[int, ...]
    output: str
    zero_copy: bool
    max_abs_error: float
    reference: str

    def line(self) -> str:
        shape = "x".join(map(str, self.shape))
        return (
            f"{self.framework:<13} {self.dtype} {shape:<6} out: {self.output:<42} "
            f"zero-copy: {'yes' if self.zero_copy else 'NO'}  "
            f"max |fmm - {self.reference}| = {self.max_abs_error:.2e}"
        )


def check_close(result: np.ndarray, expected: np.ndarray) -> float:
    np.testing.assert_allclose(result, expected, rtol=TOLERANCE, atol=TOLERANCE)
    return float(np.max(np.abs(result - expected)))


def numpy_leg(fmm: Any, seed: int = 0) -> Leg:
    """NumPy arrays in, the caller's NumPy array written."""
    rng = np.random.default_rng(seed)
    x, y, out = (aligned_numpy_empty((N, N)) for _ in range(3))
    x[...] = rng.standard_normal((N, N), dtype=np.float32)
    y[...] = rng.standard_normal((N, N), dtype=np.float32)
    out[...] = np.nan
    call = matmul_through_dlbridge(fmm, x, y, dlbridge.from_dlpack(out))
    zero_copy = call.zero_copy([x.ctypes.data, y.ctypes.data, out.ctypes.data])
    error = check_close(out, np.matmul(x, y))
    return Leg(
        f"numpy {np.__version__}",
        str(out.dtype),
        out.shape,
        "the caller's array",
        zero_copy,
        error,
        "np.matmul",
    )


def torch_leg(fmm: Any, seed: int = 0) -> Leg:
    """PyTorch tensors in, the caller's PyTorch tensor written."""
    import torch

    generator = torch.Generator().manual_seed(seed)
    x = torch.randn(N, N, generator=generator)
    y = torch.randn(N, N, generator=generator)
    out = torch.full((N, N), float("nan"))
    call = matmul_through_dlbridge(fmm, x, y, dlbridge.from_dlpack(out))
    zero_copy = call.zero_copy([x.data_ptr(), y.data_ptr(), out.data_ptr()])
    error = check_close(out.numpy(), torch.matmul(x, y).numpy())
    return Leg(
        f"torch {torch.__version__.split('+')[0]}",
        str(out.dtype).removeprefix("torch."),
        tuple(out.shape),
        "the caller's tensor",
        zero_copy,
        error,
        "torch.matmul",
    )


def jax_leg(fmm: Any, seed: int = 0) -> Leg:
    """JAX arrays in (read-only); JAX arrays are immutable, so the output is allocated by
    dlbridge, written by TVM and handed to JAX zero-copy (`jnp.from_dlpack`)."""
    import jax
    import jax.numpy as jnp

    kx, ky = jax.random.split(jax.random.key(seed))
    x = jax.random.normal(kx, (N, N), dtype=jnp.float32)
    y = jax.random.normal(ky, (N, N), dtype=jnp.float32)
    out = dlbridge.empty((N, N), DTYPE)
    call = matmul_through_dlbridge(fmm, x, y, out)
    # JAX's arrays are immutable: dlbridge holds them read-only.
    assert all(t.readonly for t in call.through_dlbridge[:2])
    z = jnp.from_dlpack(out)
    zero_copy = call.zero_copy(
        [x.unsafe_buffer_pointer(), y.unsafe_buffer_pointer(), z.unsafe_buffer_pointer()]
    )
    error = check_close(np.asarray(z), np.asarray(jnp.matmul(x, y)))
    return Leg(
        f"jax {jax.__version__}",
        str(z.dtype),
        tuple(z.shape),
        "allocated by dlbridge, handed to JAX",
        zero_copy,
        error,
        "jnp.matmul",
    )


def mxnet_python() -> str:
    """The interpreter of MXNet's environment: MXNET_PYTHON, or that of scripts/mxnet-env.sh
    (MXNET_ENV, default target/mxnet-venv)."""
    if os.environ.get("MXNET_PYTHON"):
        return os.environ["MXNET_PYTHON"]
    env = os.environ.get("MXNET_ENV", "target/mxnet-venv")
    return os.path.join(ROOT, env, "bin", "python")


def mxnet_leg(library: str, python: str, seed: int = 0) -> Leg:
    """The compiled function, exported as `library`, loaded and run on MXNet's NDArrays in
    MXNet's interpreter `python` (mxnet_leg.py); this checkout's dlbridge comes first on its
    path. A failure there is a RuntimeError with its output."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.path.join(ROOT, "python"), env.get("PYTHONPATH")) if p
    )
    run = subprocess.run(
        [python, MXNET_LEG, library, str(seed)],
        check=False,  # its failure is raised below, with its output
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    if run.returncode != 0:
        raise RuntimeError(
            f"the MXNet leg failed in {python} (exit code {run.returncode}):\n"
            f"{run.stdout}{run.stderr}"
        )
    result = json.loads(run.stdout.strip().splitlines()[-1])
    return Leg(
        result["framework"],
        result["dtype"],
        tuple(result["shape"]),
        "MXNet's own (to_dlpack_for_write, vouched)",
        result["zero_copy"],
        result["max_abs_error"],
        "mx.nd.dot",
    )


def alignment_lines() -> list[str]:
    """What TVM says of a NumPy view 4 bytes past a 64-byte boundary, and that dlbridge's
    copy of it (64-byte aligned) is taken."""
    raw = aligned_numpy_empty((N * N + 1,))
    view = raw[1:].reshape(N, N)
    lines = [f"alignment: a NumPy view at {view.ctypes.data % TVM_ALIGNMENT} bytes past 64 ->"]
    try:
        tvm.runtime.from_dlpack(dlbridge.from_dlpack(view))
        raise AssertionError("TVM took a misaligned tensor")
    except RuntimeError as error:
        lines.append(f"  TVM refuses: {type(error).__name__}: {error}")
    # dlbridge's own copy (from_dlpack(view, copy=True) would be NumPy's copy, 16-byte aligned).
    copy = dlbridge.from_dlpack(view).copy()
    assert copy.data_ptr % TVM_ALIGNMENT == 0
    tvm.runtime.from_dlpack(copy)
    lines.append("  dlbridge.from_dlpack(view).copy() is 64-byte aligned: TVM takes it")
    return lines


def main() -> None:
    module = build_matmul()
    fmm = module["fmm"]
    print(
        f"TVM {tvm.__version__}: fmm = te.compute {N}x{N} {DTYPE} matmul, "
        "compiled once with tvm.compile(target='llvm')"
    )
    legs = [numpy_leg(fmm), torch_leg(fmm), jax_leg(fmm)]
    for leg in legs:
        print(leg.line())
    python = mxnet_python()
    if os.path.exists(python):
        with tempfile.TemporaryDirectory() as folder:
            library = os.path.join(folder, "fmm.so")
            module.export_library(library)
            leg = mxnet_leg(library, python)
        print(f"{leg.line()}  (same fmm, exported .so, MXNet's own interpreter)")
        legs.append(leg)
    else:
        print(
            f"mxnet         skipped: no MXNet interpreter at {python} "
            "(scripts/mxnet-env.sh makes it; MXNET_PYTHON names another)"
        )
    for line in alignment_lines():
        print(line)
    if not all(leg.zero_copy for leg in legs):
        sys.exit("a leg was not zero-copy")


if __name__ == "__main__":
    main()
