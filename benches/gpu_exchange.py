#!/usr/bin/env python3
"""Side-by-side timings of DLPack exchanges of CUDA tensors: dlbridge and its peers, one run.

Needs an NVIDIA GPU with a CUDA build of PyTorch; CuPy and apache-tvm-ffi add their rows
where installed. On the GPU machine, from the kit of `make gpu-kit`: `bash scripts/gpu-run.sh`
(which runs this); by hand, with dlbridge (built with the cargo feature `testing`) and the
example `dlbridge_cuda_saxpy` installed: `python3 benches/gpu_exchange.py`. Prints a Markdown
table of the median time per call (15 interleaved rounds of 2,000 calls, as
benches/python_exchange.py measures the CPU); tensors are float32 on CUDA device 0, 4x4 for
imports and 1024 elements for kernel calls. A kernel call's row times the enqueue only (the
kernels run on the current stream, which is synchronised once per round).

The rows of compiled graphs time the example's `saxpy_out`, declared with
`dlbridge_pyo3::kernel!`: eagerly, as a PyTorch operator (`dlbridge.torch.register`), 32 in a
chain inside `torch.compile(fullgraph=True)` and inside `jax.jit` (XLA's CUDA handler), per
kernel, beside the same chain of the frameworks' own `a * x + y` (which their compilers fuse
into one kernel: the cost of a graph without any custom call). Without a GPU it says so and
exits with status 2.
"""

import os
import sys

# The CPU benchmark's timing loop, beside this file (the script's folder is on sys.path).
from python_exchange import per_call_interleaved


def optional(module):
    try:
        return __import__(module)
    except ImportError:
        return None


def main():
    torch = optional("torch")
    if torch is None or not torch.cuda.is_available():
        print("gpu_exchange: needs an NVIDIA GPU and a CUDA build of PyTorch", file=sys.stderr)
        return 2
    import dlbridge

    cupy = optional("cupy")
    tvm_ffi = optional("tvm_ffi")
    saxpy = optional("dlbridge_cuda_saxpy")
    try:
        from dlbridge._dlbridge import _testing as kernels
    except ImportError:  # built without the feature `testing`: no no-op row
        kernels = None

    t = torch.arange(16, dtype=torch.float32, device="cuda").reshape(4, 4)
    side = torch.cuda.Stream()
    cases = [
        ("torch.from_dlpack(torch_cuda_tensor)", lambda: torch.from_dlpack(t)),
        ("dlbridge.from_dlpack(torch_cuda_tensor)", lambda: dlbridge.from_dlpack(t)),
        (
            "dlbridge.from_dlpack(torch_cuda_tensor, stream=another): an event waited on",
            lambda: dlbridge.from_dlpack(t, stream=side.cuda_stream),
        ),
    ]
    imported = dlbridge.from_dlpack(t)
    cases.append(
        ("torch.from_dlpack(dlbridge_tensor of CUDA memory)", lambda: torch.from_dlpack(imported))
    )
    if cupy is not None:
        cases.append(("cupy.from_dlpack(torch_cuda_tensor)", lambda: cupy.from_dlpack(t)))
    if tvm_ffi is not None:
        cases.append(("tvm_ffi.from_dlpack(torch_cuda_tensor)", lambda: tvm_ffi.from_dlpack(t)))
    x, y, out = (torch.ones(1024, device="cuda") for _ in range(3))
    if kernels is not None:
        cases.append(
            (
                "no-op, 3 torch CUDA tensors, dlbridge CudaArg x2 + CudaArgMut",
                lambda: kernels.cuda_noop3(x, y, out),
            )
        )
    if tvm_ffi is not None:
        nop = tvm_ffi.get_global_func("testing.nop")
        cases.append(("no-op, 3 torch CUDA tensors, tvm-ffi `testing.nop`", lambda: nop(x, y, out)))
    if saxpy is not None:
        cases.append(
            (
                "saxpy into out, 3 torch CUDA tensors (1024), dlbridge example (NVRTC kernel)",
                lambda: saxpy.saxpy_into(2.0, x, y, out),
            )
        )
    cases.append(
        (
            "saxpy into out, 3 torch CUDA tensors (1024), PyTorch's torch.add(y, x, alpha=2, out=)",
            lambda: torch.add(y, x, alpha=2.0, out=out),
        )
    )
    per = {}  # label -> calls of the kernel per call of the function
    left_out = []
    if saxpy is not None:
        rows, left_out = compiled_cases(torch, saxpy, (x, y, out))
        cases += [(label, function) for label, function, _ in rows]
        per = {label: calls for label, _, calls in rows}
    medians = per_call_interleaved(
        [f for _, f in cases], calls=2_000, warmup=200, settle=torch.cuda.synchronize
    )
    print(
        f"{torch.cuda.get_device_name(0)}, Python {sys.version.split()[0]}, "
        f"torch {torch.__version__}"
        + (f", cupy {cupy.__version__}" if cupy is not None else "")
        + (f", apache-tvm-ffi {tvm_ffi.__version__}" if tvm_ffi is not None else "")
        + ("" if kernels is not None else ", dlbridge without `testing`: no no-op row")
        + ("" if saxpy is not None else ", no dlbridge_cuda_saxpy: no example row")
    )
    print()
    print("| call | median per call |")
    print("|---|---:|")
    for (label, _), median in zip(cases, medians):
        print(f"| {label} | {median / per.get(label, 1) / 1000:.2f} µs |")
    for note in left_out:
        print(f"\nLeft out: {note}")
    return 0


#: Kernels per chain in the compiled rows.
CHAIN = 32


def compiled_cases(torch, saxpy, tensors):
    """The rows of the example's `saxpy_out` eagerly and inside compiled graphs, `(label,
    function, kernels per call)`, and the rows left out, with the error: each function is run
    once and checked against the expected values before it is timed."""
    import dlbridge.torch

    x, y, out = tensors
    left_out = []
    operators = dlbridge.torch.register(saxpy, "dlbridge_cuda_saxpy")
    saxpy_op = operators["saxpy_out"]

    def op_chain(x, y):
        for _ in range(CHAIN):
            y = saxpy_op(x, y, 0.5)
        return y

    def torch_chain(x, y):
        for _ in range(CHAIN):
            y = torch.add(y, x, alpha=0.5)
        return y

    expected = x.clone()
    for _ in range(CHAIN):
        expected = 0.5 * x + expected
    rows = [
        (
            "saxpy_out into out (1024), kernel! eager function",
            lambda: saxpy.saxpy_out(x, y, out, 2.0),
            None,
            1,
        ),
        (
            "saxpy_out (1024) as a PyTorch operator, eager (result allocated)",
            lambda: saxpy_op(x, y, 2.0),
            None,
            1,
        ),
    ]
    compiled_ops = torch.compile(op_chain, fullgraph=True)
    compiled_torch = torch.compile(torch_chain, fullgraph=True)
    rows.append(
        (
            f"torch.compile, {CHAIN} saxpy_out operators in a chain, per operator",
            lambda: compiled_ops(x, x),
            expected,
            CHAIN,
        )
    )
    rows.append(
        (
            f"torch.compile, {CHAIN} torch.add(y, x, alpha) in a chain (fused), per add",
            lambda: compiled_torch(x, x),
            expected,
            CHAIN,
        )
    )
    try:
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
        import jax

        import dlbridge.jax

        kernel = dlbridge.jax.kernel(saxpy, "saxpy_out")
        gpu = jax.devices("gpu")[0]
        jx = jax.device_put(x.cpu().numpy(), gpu)

        @jax.jit
        def kernel_chain(x, y):
            for _ in range(CHAIN):
                y = kernel(x, y, 0.5)
            return y

        @jax.jit
        def jax_chain(x, y):
            for _ in range(CHAIN):
                y = 0.5 * x + y
            return y

        rows.append(
            (
                f"jax.jit, {CHAIN} saxpy_out kernels in a chain (XLA's CUDA handler), per kernel",
                lambda: kernel_chain(jx, jx),
                expected,
                CHAIN,
            )
        )
        rows.append(
            (
                f"jax.jit, {CHAIN} a * x + y in a chain (fused), per step",
                lambda: jax_chain(jx, jx),
                expected,
                CHAIN,
            )
        )
    except Exception as error:  # noqa: BLE001 - a row left out says why
        left_out.append(f"the jax.jit rows: {type(error).__name__}: {error}")
    checked = []
    for label, function, want, calls in rows:
        try:
            got = function()
            if want is not None:
                got = torch.from_dlpack(got) if not isinstance(got, torch.Tensor) else got
                torch.testing.assert_close(got, want)
        except Exception as error:  # noqa: BLE001 - a row left out says why
            left_out.append(f"{label}: {type(error).__name__}: {error}")
            continue
        checked.append((label, function, calls))
    return checked, left_out


if __name__ == "__main__":
    raise SystemExit(main())
