#!/usr/bin/env python3
"""Side-by-side timings of DLPack exchanges of CUDA tensors: dlbridge and its peers, one run.

Needs an NVIDIA GPU with a CUDA build of PyTorch; CuPy and apache-tvm-ffi add their rows
where installed. On the GPU machine, from the kit of `make gpu-kit`: `bash scripts/gpu-run.sh`
(which runs this); by hand, with dlbridge (built with the cargo feature `testing`) and the
example `dlbridge_cuda_saxpy` installed: `python3 benches/gpu_exchange.py`. Prints a Markdown
table of the median time per call (15 interleaved rounds of 2,000 calls, as
benches/python_exchange.py measures the CPU); tensors are float32 on CUDA device 0, 4x4 for
imports and 1024 elements for kernel calls. A kernel call's row times the enqueue only (the
kernels run on the current stream, which is synchronised once per round). Without a GPU it
says so and exits with status 2.
"""

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
        print(f"| {label} | {median / 1000:.2f} µs |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
