"""Shared pytest configuration for the dlbridge Python suite.

The hostile-producer toolkit lives in the package, `dlbridge.check`: `abi` (ctypes structs),
`capsules` (reading capsules), `records` (hand-built tensors, counting deleters,
spec-following capsule destructors), `fake_producers` (misbehaving producer classes); the
tests import it from there. `_helpers.py` holds small utilities shared by the test files;
`_kernels.py` hands out the test kernels (`dlbridge._dlbridge._testing`, cargo feature
`testing`), skipping or, under CI, failing a test that calls one in a build without them.
Both are importable from every test file because this directory is put on sys.path here.
"""

from __future__ import annotations

import os
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

# Hypothesis keeps caches in ./.hypothesis by default: keep them out of the source tree.
if "HYPOTHESIS_STORAGE_DIRECTORY" not in os.environ:
    import tempfile

    os.environ["HYPOTHESIS_STORAGE_DIRECTORY"] = os.path.join(
        tempfile.gettempdir(), "dlbridge-tests-hypothesis"
    )

from dlbridge.check import records  # noqa: E402

#: Set by scripts/sanitize-python.sh. Under a preloaded AddressSanitizer runtime a C++
#: exception aborts the process (the sanitizer's `__cxa_throw` interceptor fails its CHECK),
#: and PyTorch raises its Python errors from C++ exceptions: tests that make a framework throw
#: one are marked `cpp_exception` and left out there, and catalogues of PyTorch's tensors (whose
#: construction probes dtypes that way) are not built.
UNDER_ASAN = os.environ.get("DLBRIDGE_TESTS_UNDER_ASAN") == "1"


def pytest_configure(config):
    config.addinivalue_line(
        "markers",
        "cpp_exception: makes a framework throw a C++ exception (left out under AddressSanitizer)",
    )
    config.addinivalue_line(
        "markers",
        "gpu: needs a CUDA GPU (python/tests/_gpu.py); skipped, with a reason starting "
        "'no CUDA GPU here', where there is none, also under CI",
    )
    config.addinivalue_line(
        "markers",
        "installed: reads the installed package's metadata or console script (left out under "
        "AddressSanitizer, whose run imports a staged build that has neither)",
    )
    config.addinivalue_line(
        "markers",
        "rss: judges the process's resident memory (left out under AddressSanitizer, whose "
        "quarantine keeps freed memory resident)",
    )
    config.addinivalue_line(
        "markers",
        "example_module: needs an example extension (examples/matmul, "
        "examples/tensor_libraries), which the AddressSanitizer run neither builds nor "
        "instruments",
    )


def pytest_runtest_setup(item):
    """Skips a test marked `gpu` where no CUDA GPU can be used, or fails it with
    DLBRIDGE_REQUIRE_GPU=1 (python/tests/_gpu.py)."""
    if item.get_closest_marker("gpu") is not None:
        import _gpu

        reason = _gpu.skip_reason()
        if reason is not None:
            _gpu.skip_or_fail(reason)


@pytest.fixture(autouse=True)
def _no_lost_exceptions():
    """Fail a test during which a ctypes callback of the toolkit ran with an exception in
    flight (the exception was lost and the caller saw a SystemError instead)."""
    before = len(records.LOST_EXCEPTIONS)
    yield
    lost = records.LOST_EXCEPTIONS[before:]
    if lost:
        pytest.fail(
            "a ctypes deleter/capsule destructor of the test toolkit ran while an exception "
            f"was being raised, which ctypes cannot preserve: {lost!r}. Either the test let a "
            "capsule/tensor die as a temporary during an exception, or the consumer released "
            "the capsule with its error indicator already set.",
            pytrace=False,
        )


def pytest_report_header(config):
    try:
        import dlbridge

        where = getattr(dlbridge, "__file__", "?")
        return f"dlbridge: {where}"
    except Exception as exc:  # noqa: BLE001
        return f"dlbridge: NOT IMPORTABLE ({type(exc).__name__}: {exc})"
