#!/usr/bin/env python3
"""Side-by-side timings of DLPack exchanges in Python: dlbridge and its peers, one run.

Run with the project's environment: `.venv/bin/python benches/python_exchange.py` (after
`make python-build`). Prints a Markdown table of the median time per call, 4x4 float32 CPU.
"""

import statistics
import sys
import time

import numpy as np

import dlbridge

try:
    import torch
except ImportError:  # pragma: no cover - torch is in the test environment
    torch = None


def per_call(function, calls=20_000, repeats=7):
    """Median over `repeats` runs of the mean time of one call, in nanoseconds."""
    for _ in range(1_000):
        function()
    samples = []
    for _ in range(repeats):
        start = time.perf_counter_ns()
        for _ in range(calls):
            function()
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def main():
    array = np.arange(16, dtype=np.float32).reshape(4, 4)
    tensor = dlbridge.from_dlpack(array)
    cases = [
        ("numpy_array.__dlpack__()", lambda: array.__dlpack__()),
        ("dlbridge_tensor.__dlpack__()", lambda: tensor.__dlpack__()),
        ("dlbridge_tensor.__dlpack__(max_version=(1, 3))",
         lambda: tensor.__dlpack__(max_version=(1, 3))),
        ("np.from_dlpack(numpy_array)", lambda: np.from_dlpack(array)),
        ("np.from_dlpack(dlbridge_tensor)", lambda: np.from_dlpack(tensor)),
        ("dlbridge.from_dlpack(numpy_array)", lambda: dlbridge.from_dlpack(array)),
        ("dlbridge.from_dlpack(dlbridge_tensor)", lambda: dlbridge.from_dlpack(tensor)),
    ]
    if torch is not None:
        t = torch.arange(16, dtype=torch.float32).reshape(4, 4)
        cases += [
            ("torch_tensor.__dlpack__()", lambda: t.__dlpack__()),
            ("torch.from_dlpack(numpy_array)", lambda: torch.from_dlpack(array)),
            ("torch.from_dlpack(torch_tensor)", lambda: torch.from_dlpack(t)),
            ("torch.from_dlpack(dlbridge_tensor)", lambda: torch.from_dlpack(tensor)),
            ("dlbridge.from_dlpack(torch_tensor)", lambda: dlbridge.from_dlpack(t)),
        ]
    print(f"Python {sys.version.split()[0]}, numpy {np.__version__}"
          + (f", torch {torch.__version__}" if torch is not None else ""))
    print()
    print("| path | median per call |")
    print("|---|---|")
    for label, function in cases:
        print(f"| `{label}` | {per_call(function):,.0f} ns |")


if __name__ == "__main__":
    main()
