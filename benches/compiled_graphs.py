"""Kernels inside compiled graphs, timed for benches/python_exchange.py (`make bench-python`).

One kernel, `out = alpha * x + y` on 4x4 float32, declared once with `dlbridge_pyo3::kernel!`
in benches/peers/dlbridge-user (`axpy_into`, built as a user's crate is and with fat LTO),
called:

- inside `jax.jit` (`dlbridge.jax.kernel`), beside the same work as an XLA FFI handler written
  by hand in C (benches/peers/xla_floor, the floor) and beside JAX's own `alpha * x + y`;
- inside `torch.compile(fullgraph=True)` (inductor; `dlbridge.torch.register`), beside a
  `torch.library` operator written by hand in C++ (benches/peers/torch_floor, the floor) and
  beside PyTorch's own `alpha * x + y`;
- eagerly: the Rust function on NumPy arrays and on PyTorch tensors (the result given), and
  each operator called outside a compiled function.

A compiled function calls the kernel CHAIN times in a row (`x = axpy(x, y)`), so that the
time per kernel call is the function's time over CHAIN, with the framework's fixed cost of
launching a compiled function spread over them; the same function called once (CHAIN = 1) is
timed too. Every implementation's result is checked against NumPy's before any timing.
"""

from __future__ import annotations

import ctypes
import pathlib

import numpy as np

#: Kernel calls in one compiled function.
CHAIN = 32
#: The attribute of every call.
ALPHA = 0.5


def _chained(step, length):
    """`f(x, y)`: `x = step(x, y)` `length` times."""

    def chained(x, y):
        for _ in range(length):
            x = step(x, y)
        return x

    return chained


def _expected(x, y, length):
    for _ in range(length):
        x = np.float32(ALPHA) * x + y
    return x


def jax_cases(user_builds, peers_folder):
    """(measured, implementation, calls per timed call, function) rows of JAX, each function
    returning when its result is ready."""
    try:
        import jax
        import jax.numpy as jnp
    except ImportError:  # pragma: no cover - jax is in the test environment
        return []

    import dlbridge.jax

    rng = np.random.default_rng(0)
    x = jnp.asarray(rng.standard_normal((4, 4), dtype=np.float32))
    y = jnp.asarray(rng.standard_normal((4, 4), dtype=np.float32))
    steps = {}
    for build, module in user_builds.items():
        kernel = dlbridge.jax.kernel(module, "axpy_into")
        steps[build] = lambda x, y, kernel=kernel: kernel(x, y, alpha=ALPHA)
    floor = pathlib.Path(peers_folder) / "dlbridge_peer_xla_floor.so"
    if floor.exists():
        library = ctypes.CDLL(str(floor))
        target = "dlbridge_bench_floor.axpy"
        jax.ffi.register_ffi_target(
            target, jax.ffi.pycapsule(library.dlbridge_floor_axpy), platform="cpu"
        )
        steps["C handler (floor)"] = lambda x, y: jax.ffi.ffi_call(
            target, jax.ShapeDtypeStruct(x.shape, x.dtype)
        )(x, y, alpha=np.float32(ALPHA))
    steps["JAX's own"] = lambda x, y: ALPHA * x + y
    cases = []
    for length, measured in (
        (CHAIN, f"jax.jit, {CHAIN} calls in one function, per call"),
        (1, "jax.jit, one call per function"),
    ):
        expected = _expected(np.asarray(x), np.asarray(y), length)
        for implementation, step in steps.items():
            function = jax.jit(_chained(step, length))
            np.testing.assert_allclose(function(x, y), expected, rtol=1e-5, atol=1e-5)
            cases.append(
                (
                    measured,
                    implementation,
                    length,
                    lambda function=function: function(x, y).block_until_ready(),
                )
            )
    return cases


def torch_cases(user_builds, torch_floor_loaded):
    """(measured, implementation, calls per timed call, function) rows of PyTorch."""
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is in the test environment
        return []

    import torch._dynamo.config

    import dlbridge.torch

    # Every compiled function here shares one code object (`_chained`'s), each a recompilation
    # of it: more than Dynamo's default limit of 8, past which it would run them uncompiled.
    torch._dynamo.config.recompile_limit = 64
    torch.manual_seed(0)
    x, y = torch.randn(4, 4), torch.randn(4, 4)
    operators = {
        build: dlbridge.torch.register(module)["axpy_into"] for build, module in user_builds.items()
    }
    if torch_floor_loaded:
        operators["C++ operator (floor)"] = torch.ops.dlbridge_floor.axpy
    steps = {name: (lambda x, y, op=op: op(x, y, ALPHA)) for name, op in operators.items()}
    steps["PyTorch's own"] = lambda x, y: ALPHA * x + y
    cases = []
    for length, measured in (
        (CHAIN, f"torch.compile, {CHAIN} calls in one function, per call"),
        (1, "torch.compile, one call per function"),
    ):
        expected = _expected(x.numpy(), y.numpy(), length)
        for implementation, step in steps.items():
            function = torch.compile(_chained(step, length), fullgraph=True)
            np.testing.assert_allclose(function(x, y), expected, rtol=1e-5, atol=1e-5)
            cases.append(
                (measured, implementation, length, lambda function=function: function(x, y))
            )
    for implementation, step in steps.items():
        cases.append(
            ("PyTorch operator, eager call", implementation, 1, lambda step=step: step(x, y))
        )
    return cases


def eager_cases(user_builds):
    """The Rust function itself, eagerly, the result given: NumPy arrays and PyTorch tensors."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((2, 4, 4), dtype=np.float32)
    out = np.empty_like(x)
    cases = []
    for build, module in user_builds.items():
        module.axpy_into(x, y, out, ALPHA)
        np.testing.assert_allclose(out, ALPHA * x + y, rtol=1e-6)
        cases.append(
            (
                "eager Rust function, NumPy arrays, result given",
                build,
                1,
                lambda f=module.axpy_into: f(x, y, out, ALPHA),
            )
        )
    try:
        import torch
    except ImportError:  # pragma: no cover - torch is in the test environment
        return cases
    xt, yt, outt = torch.from_numpy(x), torch.from_numpy(y), torch.empty(4, 4)
    for build, module in user_builds.items():
        cases.append(
            (
                "eager Rust function, PyTorch tensors, result given",
                build,
                1,
                lambda f=module.axpy_into: f(xt, yt, outt, ALPHA),
            )
        )
    return cases


def cases(user_builds, peers_folder, torch_floor_loaded):
    """Every row: (measured, implementation, calls per timed call, function). `user_builds`
    maps "dlbridge, default" and "dlbridge, LTO" to the dlbridge-user modules built."""
    user_builds = {name: module for name, module in user_builds.items() if module is not None}
    return (
        jax_cases(user_builds, peers_folder)
        + torch_cases(user_builds, torch_floor_loaded)
        + eager_cases(user_builds)
    )


#: The table's columns, in order.
COLUMNS = [
    "dlbridge, default",
    "dlbridge, LTO",
    "C handler (floor)",
    "C++ operator (floor)",
    "JAX's own",
    "PyTorch's own",
]


def print_table(rows, medians):
    """The table: per kernel call, each implementation's median, and dlbridge's over the
    floor's."""
    times = {}
    for (measured, implementation, calls, _), median in zip(rows, medians):
        times[(measured, implementation)] = median / calls
    measured_rows = list(dict.fromkeys(measured for measured, _, _, _ in rows))
    print()
    print(
        "Kernels inside compiled graphs (benches/compiled_graphs.py): `alpha * x + y`, 4x4 "
        "float32, time per kernel call; the ratio is dlbridge's (default profile, LTO) over the "
        "floor's"
    )
    print()
    print("| measured | " + " | ".join(COLUMNS) + " | ratio to the floor |")
    print("|---|" + "---|" * (len(COLUMNS) + 1))
    for measured in measured_rows:
        cells = []
        for column in COLUMNS:
            value = times.get((measured, column))
            cells.append("-" if value is None else f"{value:,.0f} ns")
        floor = times.get((measured, "C handler (floor)")) or times.get(
            (measured, "C++ operator (floor)")
        )
        ratios = [
            f"{times[(measured, build)] / floor:.2f}"
            for build in ("dlbridge, default", "dlbridge, LTO")
            if floor and (measured, build) in times
        ]
        print(f"| {measured} | " + " | ".join(cells) + f" | {' / '.join(ratios) or '-'} |")


def records(rows, medians):
    """The rows as JSON records, for benches/chart.py."""
    return [
        {"measured": measured, "implementation": implementation, "ns": median / calls}
        for (measured, implementation, calls, _), median in zip(rows, medians)
    ]
