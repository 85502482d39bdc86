"""GPU-only tests: the `gpu` marker's skip, and the frameworks they use.

A test marked `@pytest.mark.gpu` runs only where the CUDA driver (`libcuda.so.1`) loads and
reports a device; elsewhere conftest.py skips it at setup with a reason that starts with
`NO_GPU`, also under CI=true (the project's CI has no GPU). Such skips are on the allow-list
of strict runs (_skips.py): scripts/python-tests.sh counts them apart ("need a GPU") in its
summary, so that what awaits a GPU is never hidden. CuPy has no CPU build: where a GPU is
present but CuPy (or a CUDA build of PyTorch, JAX) is not installed, `gpu_framework` skips
with a reason that names the missing package.

On the GPU machine (scripts/gpu-run.sh), DLBRIDGE_REQUIRE_GPU=1 turns both skips into
failures: there, a GPU test that does not run is a finding, never a skip.
"""

from __future__ import annotations

import ctypes
import functools
import importlib
from types import ModuleType
from typing import Callable

import pytest

from _skips import NO_GPU, gpu_required


@functools.cache
def cuda_device_count() -> int:
    """The number of CUDA devices the driver reports; 0 where the driver cannot be loaded or
    initialised (no GPU, no driver, a container without the device)."""
    try:
        driver = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return 0
    if driver.cuInit(0) != 0:
        return 0
    count = ctypes.c_int(0)
    if driver.cuDeviceGetCount(ctypes.byref(count)) != 0:
        return 0
    return count.value


def skip_or_fail(reason: str):
    """Skips the test for `reason`, or fails it where GPU tests must run."""
    if gpu_required():
        pytest.fail(f"DLBRIDGE_REQUIRE_GPU=1, but {reason}")
    pytest.skip(reason)


def skip_reason() -> str | None:
    """Why GPU-only tests are skipped here, or None where a CUDA GPU is present."""
    if cuda_device_count() > 0:
        return None
    return f"{NO_GPU}: the CUDA driver (libcuda.so.1) cannot be loaded or reports no device"


def gpu_framework(
    module: str, *, needs_cuda: Callable[[ModuleType], bool] | None = None
) -> ModuleType:
    """Imports a framework for a GPU test, or skips the test naming what is missing.
    `needs_cuda` says whether the imported module can use the GPU
    (`lambda torch: torch.cuda.is_available()`)."""
    try:
        imported = importlib.import_module(module)
    except ImportError as error:
        skip_or_fail(f"{module} is not installed ({error}): this GPU test needs it")
    if needs_cuda is not None and not needs_cuda(imported):
        skip_or_fail(f"{module} is installed without GPU support here")
    return imported
