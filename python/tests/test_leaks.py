"""100,000 exchanges each way leave the process's memory and the sources' reference counts
where they were after warm-up.

RSS is read from /proc/self/statm. After a warm-up (so that allocator pools, caches and
interned objects exist) a loop of 100,000 exchanges must not grow the resident set by more
than RSS_TOLERANCE: a leak of even ~11 bytes per exchange would exceed it. A control test
proves the harness notices a real per-iteration leak.
"""

from __future__ import annotations

import gc
import sys

import numpy as np
import pytest

import dlbridge
from _helpers import refcount, rss_bytes

if not sys.platform.startswith("linux"):
    pytest.skip("RSS is read from /proc/self/statm", allow_module_level=True)

N = 100_000
WARMUP = 3_000
RSS_TOLERANCE = 1 << 20  # 1 MiB


def _run(fn, sources):
    """Warm up, then run `fn` N times; return (RSS growth in bytes, refcount changes)."""
    for _ in range(WARMUP):
        fn()
    gc.collect()
    counts = [refcount(s) for s in sources]
    before = rss_bytes()
    for _ in range(N):
        fn()
    gc.collect()
    growth = rss_bytes() - before
    after = [refcount(s) for s in sources]  # same expression as `counts`: same temporaries
    return growth, [a - c for a, c in zip(after, counts)]


def _check(fn, *sources):
    growth, changes = _run(fn, sources)
    assert changes == [0] * len(sources), f"reference counts changed by {changes}"
    assert growth < RSS_TOLERANCE, f"RSS grew by {growth / 1024:.0f} KiB over {N} exchanges"


# --------------------------------------------------------------------------------------------
# numpy
# --------------------------------------------------------------------------------------------


def test_numpy_to_dlbridge():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    _check(lambda: dlbridge.from_dlpack(a), a)


def test_dlbridge_to_numpy():
    t = dlbridge.from_dlpack(np.arange(16, dtype=np.float32).reshape(4, 4))
    _check(lambda: np.from_dlpack(t), t)


def test_rust_owned_to_numpy():
    t = dlbridge.zeros((4, 4))
    _check(lambda: np.from_dlpack(t), t)


def test_numpy_round_trip_through_dlbridge():
    a = np.arange(16, dtype=np.int64)
    _check(lambda: np.from_dlpack(dlbridge.from_dlpack(a)), a)


def test_numpy_copy_true():
    a = np.arange(16, dtype=np.float64)
    _check(lambda: dlbridge.from_dlpack(a, copy=True), a)


def test_unconsumed_capsules():
    t = dlbridge.arange(16)
    _check(lambda: (t.__dlpack__(), t.__dlpack__(max_version=(1, 3))), t)


def test_buffer_protocol():
    t = dlbridge.arange(16)
    _check(lambda: np.asarray(t).sum(), t)


def test_copy_method():
    t = dlbridge.from_dlpack(np.arange(16, dtype=np.float32).reshape(4, 4).T)
    _check(lambda: t.copy(), t)


def test_refused_export_error_path():
    ro = np.arange(4.0)
    ro.flags.writeable = False
    t = dlbridge.from_dlpack(ro)

    def refused():
        try:
            t.__dlpack__()
        except BufferError:
            pass

    _check(refused, t, ro)


def test_refused_import_error_path():
    bad = np.zeros(4, dtype=np.longdouble)  # numpy's __dlpack__ raises BufferError

    def refused():
        try:
            dlbridge.from_dlpack(bad)
        except BufferError:
            pass

    _check(refused, bad)


def test_harness_detects_a_leak():
    # Control: keeping every capsule must be noticed, or the tests above prove nothing.
    t = dlbridge.arange(16)
    kept = []
    growth, changes = _run(lambda: kept.append(t.__dlpack__(max_version=(1, 3))), [t])
    assert growth > RSS_TOLERANCE
    assert changes[0] >= 0
    kept.clear()


# --------------------------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return pytest.importorskip("torch")


def test_torch_to_dlbridge(torch):
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    _check(lambda: dlbridge.from_dlpack(x), x)


def test_dlbridge_to_torch(torch):
    t = dlbridge.from_dlpack(np.arange(16, dtype=np.float32).reshape(4, 4))
    _check(lambda: torch.from_dlpack(t), t)


def test_rust_owned_to_torch(torch):
    t = dlbridge.zeros((4, 4))
    _check(lambda: torch.from_dlpack(t), t)


def test_torch_round_trip_through_dlbridge(torch):
    x = torch.arange(16, dtype=torch.int32)
    _check(lambda: torch.from_dlpack(dlbridge.from_dlpack(x)), x)
