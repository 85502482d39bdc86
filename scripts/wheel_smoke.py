"""The smoke test of one installed dlbridge wheel (scripts/test-wheels.sh runs it in a fresh
virtual environment per CPython version, outside the source tree).

It checks that the installed package is the wheel's (not python/dlbridge of the checkout),
that the release wheel left the test kernels out, NumPy -> dlbridge -> NumPy and a
dlbridge-owned tensor -> NumPy -> dlbridge without a copy (same addresses, shared memory, a
write to the original seen through the round trip), and that `dlbridge check dlbridge` finds
no failed MUST rule. That check must exit 0, not merely <= 1 as `make tour` accepts for
third-party frameworks: its status 1 would mean that dlbridge itself breaks a MUST rule of
DLPack, which a release must not. Prints one line, the interpreter's version, on success;
exits non-zero on any failure.

`wheel_smoke.py --site DIR`: the package was installed into DIR (on PYTHONPATH) instead of a
virtual environment (the aarch64 interpreter under qemu, scripts/arm64-python.sh).
"""

from __future__ import annotations

import importlib.metadata
import json
import platform
import subprocess
import sys
from pathlib import Path

import numpy as np

import dlbridge


def check_installed(site: Path | None) -> str:
    """The package comes from the environment's site-packages (or from `site`, the folder it
    was installed into for an interpreter without a virtual environment: the aarch64 one under
    qemu), and its version is the wheel's."""
    location = Path(dlbridge.__file__).resolve()
    where = site.resolve() if site is not None else Path(sys.prefix).resolve()
    assert where in location.parents, f"dlbridge imported from {location}, not {where}"
    version = importlib.metadata.version("dlbridge")
    module_version = getattr(dlbridge, "__version__", None)
    if module_version is not None:
        assert module_version == version, (module_version, version)
    return version


def check_no_test_kernels() -> None:
    """The cargo feature `testing` is off in release wheels."""
    assert not hasattr(dlbridge._dlbridge, "_testing"), "the wheel has the test kernels"
    assert not any(name.endswith("._testing") for name in sys.modules), "test kernels loaded"


def check_numpy_round_trips() -> None:
    """Both ways without a copy: the same memory, equal values, a write seen through both."""
    array = np.arange(24, dtype=np.float32).reshape(4, 6)
    tensor = dlbridge.from_dlpack(array)
    assert tensor.shape == (4, 6) and tensor.dtype == "float32", (tensor.shape, tensor.dtype)
    assert tensor.data_ptr == array.ctypes.data, "NumPy -> dlbridge copied"
    back = np.from_dlpack(tensor)
    assert back.ctypes.data == array.ctypes.data and np.shares_memory(back, array)
    np.testing.assert_array_equal(back, array)
    # (A write to the original, since NumPy < 2.1 makes every imported array read-only.)
    array[1, 2] = -7.0
    assert back[1, 2] == -7.0, "a write to the original is not seen through the round trip"

    owned = dlbridge.arange(10, "int64")
    viewed = np.from_dlpack(owned)
    assert viewed.ctypes.data == owned.data_ptr, "dlbridge -> NumPy copied"
    np.testing.assert_array_equal(viewed, np.arange(10, dtype=np.int64))
    again = dlbridge.from_dlpack(viewed)
    assert again.data_ptr == owned.data_ptr, "NumPy -> dlbridge copied"


def check_conformance() -> None:
    """`python -m dlbridge check dlbridge`: no failed MUST rule (exit status 0)."""
    run = subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", "dlbridge", "--json", "--quiet"],
        capture_output=True,
        text=True,
        check=False,
    )
    if run.returncode != 0:
        sys.stderr.write(run.stdout[-4000:] + run.stderr[-4000:])
        raise SystemExit(f"dlbridge check dlbridge: exit status {run.returncode}")
    summary = json.loads(run.stdout)["summary"]["dlbridge"]
    assert summary["passed"] > 0 and summary["must_failures"] == 0, summary


def main() -> int:
    site = Path(sys.argv[2]) if sys.argv[1:2] == ["--site"] else None
    version = check_installed(site)
    check_no_test_kernels()
    check_numpy_round_trips()
    check_conformance()
    machine = platform.machine()
    print(
        f"dlbridge {version} on CPython {sys.version.split()[0]} ({machine}) with NumPy "
        f"{np.__version__}: ok"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
