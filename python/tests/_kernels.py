"""The test suite's kernels over typed tensor arguments: `dlbridge._dlbridge._testing`.

The extension has them only when built with the cargo feature `testing` (`make python-build`
and the sanitizer run turn it on; release wheels leave it out). `from _kernels import
kernels` gives the submodule, or, in a build without it, a stand-in that stops each test at
the first kernel it calls: skipped, or failed where the suite is strict
(`PYTHON_TESTS_STRICT=1`, or `CI=true`), since a CI build that lost its kernels must not pass
by skipping the tests that use them. The tests that call no kernel run either way.
"""

from __future__ import annotations

import pytest

from _skips import strict
from dlbridge import _dlbridge as _extension

MISSING = (
    "the test kernels (dlbridge._dlbridge._testing) are missing, dlbridge was built without "
    "the `testing` feature: make python-build builds it (maturin develop --features testing)"
)


def _stop(message: str) -> None:
    if strict():  # under CI, or PYTHON_TESTS_STRICT=1 (_skips.py)
        pytest.fail(message, pytrace=False)
    pytest.skip(message)


class _Missing:
    """Stands for the kernels in a build without them: any kernel asked for skips the test
    that asks, or fails it when `strict()`."""

    def __getattr__(self, name: str):
        if name.startswith("__"):  # introspection (copy, pickle, pytest) is not a kernel
            raise AttributeError(name)
        _stop(f"{MISSING} (the test calls _testing.{name})")

    def __repr__(self) -> str:
        return "<dlbridge._dlbridge._testing: missing (built without the `testing` feature)>"


try:
    kernels = _extension._testing
except AttributeError:
    kernels = _Missing()


def require_kernels() -> None:
    """Stops the calling test where the kernels are missing, as a kernel call would: for a
    test whose kernels run elsewhere (in a child process)."""
    if isinstance(kernels, _Missing):
        _stop(MISSING)
