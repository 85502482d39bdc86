#!/usr/bin/env python3
"""Side-by-side timings of DLPack exchanges in Python: dlbridge and its peers, one run.

Run with the project's environment: `make bench-python` (or, after `make python-build
example-build bench-peers`, `.venv/bin/python benches/python_exchange.py`). Prints a Markdown
table of the median time per call (15 interleaved rounds of 10,000 calls); tensors are 4x4
float32 on the CPU unless a row says otherwise. The peer extensions (nanobind, dlpark,
rust-numpy) are built by `make bench-peers` into `target/peers/python`; rows for a peer that
is not built are left out, and so are the rows of dlbridge's typed arguments where the
extension was built without the cargo feature `testing` (their kernels; `make python-build`
turns it on).
A second table times the kernels of benches/peers/dlbridge-user beside the same kernels
written with rust-numpy, each built as a user's crate is (cargo's default release profile) and
with the workspace's (fat LTO), in the same interleaved run (BENCHMARKS.md, "Typed kernel
arguments and `return_like`, beside rust-numpy");
benches/instructions.py counts their instructions per call under callgrind.
Arguments, if any, keep only the rows whose label (or, in the second table, build or peer)
contains one of them (`python_exchange.py TensorArg matmul`; `python_exchange.py default lto`
keeps the second table and the first's default-profile rows), for comparing two builds row by
row. DLBRIDGE_BENCH_PEERS names another folder of peers than target/peers/python (an older
checkout's, say).
The rows dlbridge has on the chart's exchange paths are timed twice where
benches/peers/build-dlbridge-default-profile.sh has run (`make bench-peers` runs it): with the
installed extension (the workspace's profile, fat LTO) and with the same extension built as a
user's crate is (cargo's default release profile; those rows end in "[default profile]").

A third table times one kernel inside compiled graphs (`jax.jit`, `torch.compile`) beside
floors written by hand in C and C++ (benches/compiled_graphs.py), in an interleaved run of its
own (fewer calls per round: a compiled function's call takes microseconds).

`--json FILE` (first) also writes the run to FILE: the machine, the versions, every row's
median and the kernels' (what benches/chart.py draws; `make bench-python` does both).
"""

import importlib
import importlib.util
import json
import os
import pathlib
import statistics
import sys
import sysconfig
import time

import aliasing_registries
import compiled_graphs
import numpy as np
from measuring import machine

import dlbridge

try:
    import torch
except ImportError:  # pragma: no cover - torch is in the test environment
    torch = None
try:
    import tvm_ffi
except ImportError:  # pragma: no cover - apache-tvm-ffi is in the test environment
    tvm_ffi = None
try:
    from dlbridge._dlbridge import _testing as kernels
except ImportError:  # pragma: no cover - built with the feature `testing` by `make python-build`
    kernels = None
try:
    import dlbridge_matmul as matmul_kernels
except ImportError:  # pragma: no cover - built by `make example-build`
    matmul_kernels = None

# Where `make bench-peers` puts the peers; DLBRIDGE_BENCH_PEERS names another folder (the
# peers of an older checkout, to compare builds).
PEERS = os.environ.get(
    "DLBRIDGE_BENCH_PEERS",
    str(pathlib.Path(__file__).resolve().parent.parent / "target/peers/python"),
)
sys.path.insert(0, PEERS)
try:
    import dlbridge_peer_nanobind as nanobind_peer
except ImportError:  # pragma: no cover - built by `make bench-peers`
    nanobind_peer = None
try:
    import dlbridge_peer_dlpark as dlpark_peer
except ImportError:  # pragma: no cover - built by `make bench-peers`
    dlpark_peer = None
try:
    import dlbridge_peer_rust_numpy as rust_numpy_peer
except ImportError:  # pragma: no cover - built by `make bench-peers`
    rust_numpy_peer = None
try:
    import dlbridge_peer_torch_floor as torch_floor_peer
except ImportError:  # pragma: no cover - built by `make bench-peers`
    torch_floor_peer = None

# dlbridge's own extension and the matmul example's, built with cargo's default release
# profile as a user's crate is (benches/peers/build-dlbridge-default-profile.sh), beside the
# installed build (the workspace's profile: fat LTO). They are loaded under names of their own
# (dlbridge_default_profile.*): a module is found by its file and initialised by the last part
# of its name, so both builds live in one process and one interleaved run.
DEFAULT_PROFILE_FOLDER = pathlib.Path(PEERS) / "dlbridge_default_profile"


def load_default_profile_build():
    """{"_dlbridge": module, "dlbridge_matmul": module} of the default-profile build, each left
    out where it is not built."""
    suffix = sysconfig.get_config_var("EXT_SUFFIX")
    modules = {}
    for name in ("_dlbridge", "dlbridge_matmul"):
        path = DEFAULT_PROFILE_FOLDER / f"{name}{suffix}"
        if not path.exists():
            continue
        spec = importlib.util.spec_from_file_location(f"dlbridge_default_profile.{name}", path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
        modules[name] = module
    return modules


DEFAULT_PROFILE_BUILD = load_default_profile_build()

# The same kernels written with dlbridge-pyo3 (benches/peers/dlbridge-user) and with rust-numpy
# (benches/peers/rust-numpy), each built as a user's crate is (cargo's default release profile:
# no LTO, 16 codegen units) and with the workspace's (fat LTO, one codegen unit: `_lto`).
# Each is left out where `make bench-peers` has not built it.
USER_BUILDS = {
    name: importlib.import_module(name)
    for name in (
        "dlbridge_peer_dlbridge_user",
        "dlbridge_peer_dlbridge_user_lto",
        "dlbridge_peer_rust_numpy_lto",
    )
    if importlib.util.find_spec(name) is not None
}


def own_registries():
    """Makes each dlbridge module of the run (the installed extension and matmul example, their
    default-profile builds, the user kernels of both builds) publish and use an aliasing
    registry of its own, as it does alone in a user's process: left to the registry's rule,
    every module but the first to claim would call the first one's registry across modules,
    a cost no user's extension pays (benches/aliasing_registries.py). Before any row's first
    call."""
    ones = np.ones((4, 4), dtype=np.float32)
    first_claims = [("dlbridge", lambda: dlbridge.from_dlpack(ones).copy())]
    if matmul_kernels is not None:
        first_claims.append(("dlbridge_matmul", lambda: matmul_kernels.add(ones, ones)))
    default_profile = DEFAULT_PROFILE_BUILD.get("_dlbridge")
    if default_profile is not None:
        first_claims.append(
            ("_dlbridge [default profile]", lambda: default_profile.from_dlpack(ones).copy())
        )
    default_matmul = DEFAULT_PROFILE_BUILD.get("dlbridge_matmul")
    if default_matmul is not None:
        first_claims.append(
            ("dlbridge_matmul [default profile]", lambda: default_matmul.add(ones, ones))
        )
    for name in ("dlbridge_peer_dlbridge_user", "dlbridge_peer_dlbridge_user_lto"):
        module = USER_BUILDS.get(name)
        if module is not None:
            first_claims.append((name, lambda module=module: module.noop3(ones, ones, ones)))
    published = set()
    for label, first_claim in first_claims:
        aliasing_registries.own_registry(label, first_claim, published)


def per_call_interleaved(functions, calls=10_000, rounds=15, warmup=1_000, settle=None):
    """The median over `rounds` of the mean time of one call, in nanoseconds, per function.

    Rounds are interleaved (each round times every function once), so that a burst of noise
    on a shared machine lands on one sample of many functions rather than on every sample of
    one function, and the medians of one run stay comparable with each other. `settle`, if
    given, is called after the warm-up and after each function's calls, inside the timing
    (benches/gpu_exchange.py synchronises the device there).
    """
    for function in functions:
        for _ in range(warmup):
            function()
    if settle is not None:
        settle()
    samples = [[] for _ in functions]
    for _ in range(rounds):
        for function, own in zip(functions, samples):
            start = time.perf_counter_ns()
            for _ in range(calls):
                function()
            if settle is not None:
                settle()
            own.append((time.perf_counter_ns() - start) / calls)
    return [statistics.median(own) for own in samples]


def user_kernel_cases(torch_module):
    """The rows of the kernels as users build them: (kernel, build, peer, call).

    `build` is "default" (cargo's default release profile) or "lto" (fat LTO, one codegen
    unit); `peer` is "dlbridge" or "rust-numpy" with NumPy inputs, or "dlbridge, torch" with
    PyTorch tensors in and out (rust-numpy takes NumPy arrays only). Every call is checked
    once against NumPy's own result first, so that a faster kernel is never a wrong one.
    """
    rng = np.random.default_rng(0)
    logits = rng.standard_normal((8, 8)).astype(np.float32)
    pixels = rng.integers(0, 256, (16, 16), dtype=np.uint8)
    image = rng.integers(0, 256, (16, 16, 3), dtype=np.uint8)
    # The smallest image: the argument and the returned array's fixed cost decide.
    small_image = rng.integers(0, 256, (4, 4, 3), dtype=np.uint8)
    x64 = rng.standard_normal((4, 4))
    out64 = np.empty((4, 4))
    x32 = rng.standard_normal(16).astype(np.float32)
    y32 = np.zeros(16, dtype=np.float32)
    a32 = rng.standard_normal((4, 4)).astype(np.float32)
    b32 = rng.standard_normal((4, 4)).astype(np.float32)

    def softmax(m):
        e = np.exp(m - m.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)

    gray_weights = np.array([0.299, 0.587, 0.114], dtype=np.float32)
    # (kernel label, arguments, the expected result of the call, the kernel's name)
    kernels = [
        ("no-op, 3 float32 4x4", (a32, b32, a32), None, "noop3"),
        ("add, float32 4x4 (any ndim), new array", (a32, b32), a32 + b32, "add"),
        ("softmax, float32 8x8, new array", (logits,), softmax(logits), "softmax"),
        (
            "histogram, uint8 16x16 (any ndim), new int64 array",
            (pixels,),
            np.bincount(pixels.ravel(), minlength=256),
            "histogram",
        ),
        ("scale, float64 4x4 into `out`", (x64, 2.5, out64), None, "scale_into"),
        ("axpy in place, float32 16", (np.float32(0.5), x32, y32), None, "axpy"),
        (
            "to_gray, uint8 4x4x3, new uint8 4x4",
            (small_image,),
            np.rint(small_image.astype(np.float32) @ gray_weights).astype(np.uint8),
            "to_gray",
        ),
        (
            "to_gray, uint8 16x16x3, new uint8 16x16",
            (image,),
            np.rint(image.astype(np.float32) @ gray_weights).astype(np.uint8),
            "to_gray",
        ),
    ]
    builds = [
        ("default", "dlbridge", "dlbridge_peer_dlbridge_user"),
        ("default", "rust-numpy", "dlbridge_peer_rust_numpy"),
        ("lto", "dlbridge", "dlbridge_peer_dlbridge_user_lto"),
        ("lto", "rust-numpy", "dlbridge_peer_rust_numpy_lto"),
    ]
    modules = dict(USER_BUILDS)
    if rust_numpy_peer is not None:
        modules["dlbridge_peer_rust_numpy"] = rust_numpy_peer
    cases = []
    for label, arguments, expected, name in kernels:
        for build, peer, module_name in builds:
            module = modules.get(module_name)
            if module is None:
                continue
            function = getattr(module, name)
            result = function(*arguments)
            if expected is not None:
                np.testing.assert_allclose(np.asarray(result), expected, rtol=1e-5, atol=1)
            cases.append((label, build, peer, lambda f=function, a=arguments: f(*a)))
            if torch_module is None or not peer.startswith("dlbridge"):
                continue
            tensors = tuple(
                torch_module.from_numpy(a.copy()) if isinstance(a, np.ndarray) else a
                for a in arguments
            )
            result = function(*tensors)
            if expected is not None:
                assert isinstance(result, torch_module.Tensor), type(result)
                np.testing.assert_allclose(result.numpy(), expected, rtol=1e-5, atol=1)
            cases.append((label, build, "dlbridge, torch", lambda f=function, a=tensors: f(*a)))
    return cases


def print_user_kernels(cases, medians):
    """The kernels' table: each build's dlbridge and rust-numpy medians and their ratio."""
    by_key = {
        (label, build, peer): median for (label, build, peer, _), median in zip(cases, medians)
    }
    labels = list(dict.fromkeys(label for label, _, _, _ in cases))
    print()
    print(
        "Kernels as users build them (benches/peers/dlbridge-user and benches/peers/rust-numpy, "
        "NumPy inputs unless `torch`): cargo's default release profile, then fat LTO"
    )
    print()
    print(
        "| kernel | dlbridge, default | rust-numpy, default | ratio | dlbridge, LTO "
        "| rust-numpy, LTO | ratio | dlbridge torch in/out, default | ..., LTO |"
    )
    print("|---|---|---|---|---|---|---|---|---|")

    def cell(key):
        median = by_key.get(key)
        return "-" if median is None else f"{median:,.0f} ns"

    def ratio(build, label):
        ours = by_key.get((label, build, "dlbridge"))
        theirs = by_key.get((label, build, "rust-numpy"))
        return "-" if ours is None or theirs is None else f"{ours / theirs:.2f}"

    for label in labels:
        print(
            f"| {label} | {cell((label, 'default', 'dlbridge'))} "
            f"| {cell((label, 'default', 'rust-numpy'))} | {ratio('default', label)} "
            f"| {cell((label, 'lto', 'dlbridge'))} | {cell((label, 'lto', 'rust-numpy'))} "
            f"| {ratio('lto', label)} | {cell((label, 'default', 'dlbridge, torch'))} "
            f"| {cell((label, 'lto', 'dlbridge, torch'))} |"
        )


def torch_cases(array, tensor):
    """The rows with PyTorch tensors: imports and exports, typed kernel arguments, results in
    PyTorch, and the peers and floors beside each (`array` and `tensor`: main's NumPy array and
    dlbridge tensor, for the crossings between the three)."""
    cases = []
    t = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    cases += [
        ("torch_tensor.__dlpack__()", lambda: t.__dlpack__()),
        ("torch.from_dlpack(numpy_array)", lambda: torch.from_dlpack(array)),
        ("torch.from_dlpack(torch_tensor)", lambda: torch.from_dlpack(t)),
        ("torch.from_dlpack(dlbridge_tensor)", lambda: torch.from_dlpack(tensor)),
        ("numpy.from_dlpack(torch_tensor)", lambda: np.from_dlpack(t)),
        ("dlbridge.from_dlpack(torch_tensor)", lambda: dlbridge.from_dlpack(t)),
    ]
    if tvm_ffi is not None:
        cases += [
            ("tvm_ffi.from_dlpack(torch_tensor)", lambda: tvm_ffi.from_dlpack(t)),
            ("tvm_ffi.from_dlpack(dlbridge_tensor)", lambda: tvm_ffi.from_dlpack(tensor)),
        ]
    if torch_floor_peer is not None:
        # The floors under dlbridge.from_dlpack(torch_tensor), in C: the exchange table's
        # managed tensor in a capsule, and the same after the questions dlbridge must ask
        # through Python because the table does not (requires_grad, is_neg()).
        cases += [
            (
                "from_dlpack(torch_tensor) floor, C: exchange table + capsule, no checks",
                lambda: torch_floor_peer.from_dlpack_by_table(t),
            ),
            (
                "from_dlpack(torch_tensor) floor, C: the same after requires_grad, is_neg()",
                lambda: torch_floor_peer.from_dlpack_by_table_checked(t),
            ),
        ]
    a, b, c = (torch.ones(4, 4) for _ in range(3))
    na, nb, nc = (np.ones((4, 4), dtype=np.float32) for _ in range(3))
    if kernels is not None:
        cases += [
            (
                "no-op, 3 torch tensors, dlbridge TensorArg<f32, Ix2>",
                lambda: kernels.noop3(a, b, c),
            ),
            (
                "no-op, 3 numpy arrays, dlbridge TensorArg<f32, Ix2>",
                lambda: kernels.noop3(na, nb, nc),
            ),
            (
                "no-op, 3 plain objects, PyO3 (the floor)",
                lambda: kernels.noop3_objects(a, b, c),
            ),
        ]
    # A writable argument: for a PyTorch tensor the version counter is bumped after the
    # call, as PyTorch's own in-place operations do; a NumPy array has none.
    w = torch.zeros(16, dtype=torch.float64)
    nw = np.zeros(16)
    if kernels is not None:
        cases += [
            (
                "write, 1 torch tensor (16 float64), dlbridge TensorArgMut<f64, Ix1> (add_one)",
                lambda: kernels.add_one(w),
            ),
            (
                "write, 1 numpy array (16 float64), dlbridge TensorArgMut<f64, Ix1> (add_one)",
                lambda: kernels.add_one(nw),
            ),
        ]
    cases += [
        ("write, 1 torch tensor (16 float64), PyTorch's own w.add_(1)", lambda: w.add_(1)),
    ]
    if tvm_ffi is not None:
        nop = tvm_ffi.get_global_func("testing.nop")
        cases += [
            ("no-op, 3 torch tensors, tvm-ffi `testing.nop`", lambda: nop(a, b, c)),
            ("no-op, 3 numpy arrays, tvm-ffi `testing.nop`", lambda: nop(na, nb, nc)),
        ]
    if torch_floor_peer is not None:
        cases += [
            (
                "no-op, 3 torch tensors, floor in C: exchange table, no checks",
                lambda: torch_floor_peer.noop3_by_table(a, b, c),
            ),
            (
                "no-op, 3 torch tensors, floor in C: exchange table + is_neg() of each",
                lambda: torch_floor_peer.noop3_by_table_checked(a, b, c),
            ),
        ]
    if nanobind_peer is not None:
        cases += [
            (
                "no-op, 3 torch tensors, nanobind `nb::ndarray<const float, ndim<2>, cpu>`",
                lambda: nanobind_peer.noop3(a, b, c),
            ),
            (
                "no-op, 3 numpy arrays, nanobind `nb::ndarray<const float, ndim<2>, cpu>`",
                lambda: nanobind_peer.noop3(na, nb, nc),
            ),
        ]
    if dlpark_peer is not None:
        cases += [
            ("no-op, 3 torch tensors, dlpark", lambda: dlpark_peer.noop3(a, b, c)),
            ("no-op, 3 numpy arrays, dlpark", lambda: dlpark_peer.noop3(na, nb, nc)),
            ("dlpark from_dlpack(torch_tensor)", lambda: dlpark_peer.from_dlpack(t)),
            ("dlpark from_dlpack(numpy_array)", lambda: dlpark_peer.from_dlpack(array)),
        ]
    if rust_numpy_peer is not None:
        cases += [
            (
                "no-op, 3 numpy arrays, rust-numpy `PyReadonlyArray2<f32>`",
                lambda: rust_numpy_peer.noop3(na, nb, nc),
            ),
        ]
    # A result returned in the caller's framework: the same `add` kernel, 4x4 float32.
    if matmul_kernels is not None:
        cases += [
            (
                "add, numpy in, new numpy array out, dlbridge example (`return_like`)",
                lambda: matmul_kernels.add(na, nb),
            ),
            (
                "add, torch in, new torch tensor out, dlbridge example (`return_like`)",
                lambda: matmul_kernels.add(a, b),
            ),
        ]
    if rust_numpy_peer is not None:
        cases += [
            (
                "add, numpy in, new numpy array out, rust-numpy (`into_pyarray`)",
                lambda: rust_numpy_peer.add(na, nb),
            ),
        ]
    if torch_floor_peer is not None:
        # The floor under the torch row above: the same steps by hand in C++, unchecked.
        cases += [
            (
                "add, torch in, new torch tensor out, C++ by hand, exchange table, no checks",
                lambda: torch_floor_peer.add_by_table(a, b),
            ),
            (
                "add, torch in, new torch tensor out, C++ by hand, exchange table + is_neg()",
                lambda: torch_floor_peer.add_by_table_checked(a, b),
            ),
            (
                "new 4x4 torch tensor, no arguments: C++ THPVariable_Wrap(at::empty)",
                torch_floor_peer.empty_wrapped,
            ),
            ("add, torch in, new torch tensor out, PyTorch's own a + b", lambda: a + b),
        ]
    if matmul_kernels is not None:
        x = torch.randn(56, 56)
        y = torch.randn(56, 56)
        out = torch.empty(56, 56)
        cases += [
            (
                "matmul 56x56 float32, dlbridge example (torch in/out)",
                lambda: matmul_kernels.matmul(x, y),
            ),
            ("matmul 56x56 float32, torch.matmul", lambda: torch.matmul(x, y)),
            (
                "matmul 56x56 float32 into out, dlbridge example (TensorArgMut)",
                lambda: matmul_kernels.matmul_into(x, y, out),
            ),
            (
                "matmul 56x56 float32 into out, torch.matmul(out=)",
                lambda: torch.matmul(x, y, out=out),
            ),
        ]
    return cases


def default_profile_cases(array, torch_tensor):
    """The rows of the chart's exchange paths again, with dlbridge's extension and the matmul
    example built with cargo's default release profile (DEFAULT_PROFILE_BUILD): each label is
    its installed build's, with " [default profile]" after it."""
    module = DEFAULT_PROFILE_BUILD.get("_dlbridge")
    matmul = DEFAULT_PROFILE_BUILD.get("dlbridge_matmul")
    cases = []
    na, nb, nc = (np.ones((4, 4), dtype=np.float32) for _ in range(3))
    if module is not None:
        tensor = module.from_dlpack(array)
        cases += [
            (
                "dlbridge.from_dlpack(numpy_array) [default profile]",
                lambda: module.from_dlpack(array),
            ),
            ("dlbridge_tensor.__dlpack__() [default profile]", lambda: tensor.__dlpack__()),
            (
                "no-op, 3 numpy arrays, dlbridge TensorArg<f32, Ix2> [default profile]",
                lambda: module._testing.noop3(na, nb, nc),
            ),
        ]
        if torch_tensor is not None:
            a, b, c = (torch.ones(4, 4) for _ in range(3))
            cases += [
                (
                    "dlbridge.from_dlpack(torch_tensor) [default profile]",
                    lambda: module.from_dlpack(torch_tensor),
                ),
                (
                    "no-op, 3 torch tensors, dlbridge TensorArg<f32, Ix2> [default profile]",
                    lambda: module._testing.noop3(a, b, c),
                ),
            ]
    if matmul is not None:
        cases += [
            (
                "add, numpy in, new numpy array out, dlbridge example (`return_like`) [default profile]",  # noqa: E501
                lambda: matmul.add(na, nb),
            ),
        ]
    return cases


def write_json(path, versions, rows, kernels, compiled):
    """The run as JSON, for benches/chart.py: `rows` are (case, median) of the first table,
    `kernels` (user case, median) of the second, `compiled` the third's records."""
    record = {
        "date": time.strftime("%Y-%m-%d"),
        "machine": machine(),
        "versions": versions,
        "rows": [{"path": label, "ns": median} for (label, _), median in rows],
        "kernels": [
            {"kernel": label, "build": build, "peer": peer, "ns": median}
            for (label, build, peer, _), median in kernels
        ],
        "compiled": compiled,
    }
    pathlib.Path(path).parent.mkdir(parents=True, exist_ok=True)
    pathlib.Path(path).write_text(json.dumps(record, indent=1) + "\n")


def main():
    arguments = sys.argv[1:]
    json_path = None
    if arguments[:1] == ["--json"]:
        json_path, arguments = arguments[1], arguments[2:]
    own_registries()
    array = np.arange(16, dtype=np.float32).reshape(4, 4)
    tensor = dlbridge.from_dlpack(array)
    cases = [
        ("numpy_array.__dlpack__()", lambda: array.__dlpack__()),
        ("dlbridge_tensor.__dlpack__()", lambda: tensor.__dlpack__()),
        (
            "dlbridge_tensor.__dlpack__(max_version=(1, 3))",
            lambda: tensor.__dlpack__(max_version=(1, 3)),
        ),
        ("np.from_dlpack(numpy_array)", lambda: np.from_dlpack(array)),
        ("np.from_dlpack(dlbridge_tensor)", lambda: np.from_dlpack(tensor)),
        ("dlbridge.from_dlpack(numpy_array)", lambda: dlbridge.from_dlpack(array)),
        ("dlbridge.from_dlpack(dlbridge_tensor)", lambda: dlbridge.from_dlpack(tensor)),
    ]
    if torch is not None:
        cases += torch_cases(array, tensor)
    cases += default_profile_cases(
        array, None if torch is None else torch.arange(16, dtype=torch.float32).reshape(4, 4)
    )
    versions = {"python": sys.version.split()[0], "numpy": np.__version__}
    versions["dlbridge"] = getattr(dlbridge, "__version__", "?")
    if torch is not None:
        versions["torch"] = torch.__version__
    if tvm_ffi is not None:
        versions["apache-tvm-ffi"] = tvm_ffi.__version__
    print(
        f"Python {sys.version.split()[0]}, numpy {np.__version__}"
        + (f", torch {torch.__version__}" if torch is not None else "")
        + (f", apache-tvm-ffi {tvm_ffi.__version__}" if tvm_ffi is not None else "")
        + (", nanobind peer built" if nanobind_peer is not None else "")
        + (", dlpark peer built" if dlpark_peer is not None else "")
        + (", rust-numpy peer built" if rust_numpy_peer is not None else "")
        + (", torch floor peer built" if torch_floor_peer is not None else "")
        + (
            ", dlbridge also built with the default profile"
            if "_dlbridge" in DEFAULT_PROFILE_BUILD
            else ""
        )
        + (
            ", dlbridge built without the `testing` feature: no typed-argument rows"
            if kernels is None
            else ""
        )
    )
    user_cases = user_kernel_cases(torch)
    compiled_cases = compiled_graphs.cases(
        {
            "dlbridge, default": USER_BUILDS.get("dlbridge_peer_dlbridge_user"),
            "dlbridge, LTO": USER_BUILDS.get("dlbridge_peer_dlbridge_user_lto"),
        },
        PEERS,
        torch_floor_peer is not None,
    )
    if arguments:
        cases = [case for case in cases if any(word in case[0] for word in arguments)]
        user_cases = [
            case
            for case in user_cases
            if any(word in f"{case[0]} {case[1]} {case[2]}" for word in arguments)
        ]
        compiled_cases = [
            case
            for case in compiled_cases
            if any(word in f"{case[0]} {case[1]}" for word in arguments)
        ]
    # One interleaved run over both tables, so that their medians compare.
    medians = per_call_interleaved(
        [function for _, function in cases] + [case[3] for case in user_cases]
    )
    if cases:
        print()
        print("| path | median per call |")
        print("|---|---|")
        for (label, _), median in zip(cases, medians):
            print(f"| `{label}` | {median:,.0f} ns |")
    if user_cases:
        print_user_kernels(user_cases, medians[len(cases) :])
    compiled_medians = []
    if compiled_cases:
        # Calls of compiled functions take microseconds: fewer per round, interleaved alike.
        compiled_medians = per_call_interleaved(
            [case[3] for case in compiled_cases], calls=1_000, warmup=100
        )
        compiled_graphs.print_table(compiled_cases, compiled_medians)
    if json_path is not None:
        write_json(
            json_path,
            versions,
            list(zip(cases, medians)),
            list(zip(user_cases, medians[len(cases) :])),
            compiled_graphs.records(compiled_cases, compiled_medians),
        )


if __name__ == "__main__":
    main()
