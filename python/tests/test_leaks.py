"""100,000 exchanges each way (1,000,000 with `make soak`) leave the process's memory and the
sources' reference counts where they were after warm-up: through capsules, through the C
exchange API and through borrowed typed arguments; and every deleter runs once per export.

RSS is read from /proc/self/statm. After a warm-up (so that allocator pools, caches and
interned objects exist) a loop of 100,000 exchanges must not grow the resident set by more
than RSS_TOLERANCE: a leak of even ~11 bytes per exchange would exceed it. A control test
proves the harness notices a real per-iteration leak. Under AddressSanitizer (`make
sanitize`) the resident set is not looked at, because its allocator quarantines freed memory;
LeakSanitizer reports leaks at exit there, and the reference counts are still checked.

The deleter tests put a counting deleter in front of the real one of every tensor a producer
hands out (`_helpers.CountingDeleters`), for dlbridge's own exports to NumPy and PyTorch and
for theirs to dlbridge, through capsules and through the C exchange API: after N exchanges
the count is N, no tensor is left unreleased, and none is released twice.
"""

from __future__ import annotations

import contextlib
import gc
import os
import pickle
import sys

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import (
    CountingDeleters,
    HandsOver,
    refcount,
    rss_bytes,
    through_exchange_tables,
    under_address_sanitizer,
)
from _kernels import kernels
from _skips import not_on_platform
from dlbridge.check.capsules import release
from dlbridge.check.fake_producers import OneTensorProducer
from dlbridge.check.records import make_managed

if not sys.platform.startswith("linux"):
    not_on_platform("Linux's /proc/self/statm, where RSS is read")

N = int(os.environ.get("DLBRIDGE_SOAK_EXCHANGES", "100000"))
WARMUP = 3_000
RSS_TOLERANCE = 1 << 20  # 1 MiB
#: The fewest exchanges whose kept capsules the RSS tolerance notices (the leak control's).
CONTROL_EXCHANGES = 100_000
UNDER_ASAN = under_address_sanitizer()


def _run(fn, sources, n=N):
    """Warm up, then run `fn` n times; return (RSS growth in bytes, refcount changes)."""
    for _ in range(WARMUP):
        fn()
    gc.collect()
    counts = [refcount(s) for s in sources]
    before = rss_bytes()
    for _ in range(n):
        fn()
    gc.collect()
    growth = rss_bytes() - before
    after = [refcount(s) for s in sources]  # same expression as `counts`: same temporaries
    return growth, [a - c for a, c in zip(after, counts)]


def _check(fn, *sources):
    growth, changes = _run(fn, sources)
    assert changes == [0] * len(sources), f"reference counts changed by {changes}"
    if not UNDER_ASAN:
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
    _check(t.copy, t)


def test_pickle_round_trips():
    # Protocol 5 out-of-band (shared both ways), in-band (a bytearray), protocol 4 (copies),
    # and a refused, corrupted pickle.
    t = dlbridge.from_dlpack(np.arange(64, dtype=np.float32).reshape(8, 8)[:, ::2])
    compact = t.copy()
    # The shape (8, 4) as (9, 4): the bytes no longer fit it.
    corrupted = pickle.dumps(compact, protocol=4).replace(b"K\x08K\x04", b"K\x09K\x04")
    with pytest.raises(ValueError, match="must hold 144 bytes, got 128"):
        pickle.loads(corrupted)

    def round_trips():
        buffers = []
        data = pickle.dumps(compact, protocol=5, buffer_callback=buffers.append)
        pickle.loads(data, buffers=buffers)
        pickle.loads(pickle.dumps(t, protocol=5))
        pickle.loads(pickle.dumps(t, protocol=4))
        with contextlib.suppress(ValueError):
            pickle.loads(corrupted)

    _check(round_trips, t, compact)


def test_refused_export_error_path():
    ro = np.arange(4.0)
    ro.flags.writeable = False
    t = dlbridge.from_dlpack(ro)

    def refused():
        with contextlib.suppress(BufferError):
            t.__dlpack__()

    _check(refused, t, ro)


def test_refused_import_error_path():
    bad = np.zeros(4, dtype=np.longdouble)  # numpy's __dlpack__ raises BufferError

    def refused():
        with contextlib.suppress(BufferError):
            dlbridge.from_dlpack(bad)

    _check(refused, bad)


@pytest.mark.rss
def test_harness_detects_a_leak():
    # Control: keeping every capsule must be noticed, or the tests above prove nothing. The
    # kept capsules exceed the tolerance from 100,000 on: the control keeps at least that many
    # (a smaller DLBRIDGE_SOAK_EXCHANGES makes the tests above coarser, not this one vacuous).
    t = dlbridge.arange(16)
    kept = []
    keep = lambda: kept.append(t.__dlpack__(max_version=(1, 3)))  # noqa: E731
    growth, changes = _run(keep, [t], n=max(N, CONTROL_EXCHANGES))
    assert growth > RSS_TOLERANCE
    assert changes[0] >= 0
    kept.clear()


# --------------------------------------------------------------------------------------------
# torch
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def torch():
    return import_framework("torch", "torch")


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


def test_torch_capsules_to_dlbridge(torch):
    # The capsule path (the exchange API is what `from_dlpack(x)` takes for torch).
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    _check(lambda: dlbridge.from_dlpack(x.__dlpack__(max_version=(1, 3))), x)


def test_ndarray_results_to_numpy():
    # Made over the Array's own buffer, which the array's base frees (issue 30).
    like = np.zeros(1)
    _check(lambda: kernels.arange_like_framework(like, "float64", [4, 4], "reversed"), like)


def test_borrowed_typed_arguments_numpy():
    a = np.arange(16, dtype=np.float32).reshape(4, 4)
    w = np.zeros(8, dtype=np.float64)
    _check(lambda: (kernels.total(a), kernels.add_one(w)), a, w)


def test_borrowed_typed_arguments_torch(torch):
    # Borrowed through PyTorch's dltensor_from_py_object_no_sync: no allocation, no capsule.
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    w = torch.zeros(8, dtype=torch.float64)
    _check(lambda: (kernels.total(x), kernels.add_one(w)), x, w)


def test_deleters_run_once_per_export():
    # Hand-built tensors (kept for the count, so this one is not an RSS test): every export a
    # consumer takes is released exactly once, whatever the path back out.
    records = []
    count = min(N, 20_000)
    for i in range(count):
        record = make_managed((2, 3), versioned=i % 2 == 0)
        records.append(record)
        t = dlbridge.from_dlpack(OneTensorProducer(record))
        if i % 3 == 0:
            np.from_dlpack(t)
        del t
    gc.collect()
    calls = [r.deleter_calls for r in records]
    assert calls == [1] * count, {c: calls.count(c) for c in set(calls)}


# --------------------------------------------------------------------------------------------
# Deleters: one call per export, on every path
# --------------------------------------------------------------------------------------------


def _count_releases(source, exchange):
    """Run `exchange(source, counting)` N times (each hands one tensor of `source`, its deleter
    interposed, to a consumer that drops it at once): every tensor must come back through its
    deleter exactly once, and the source's reference count must not move."""
    counting = CountingDeleters()
    before = refcount(source)
    for _ in range(N):
        exchange(source, counting)
    gc.collect()
    assert counting.unexpected == [], "a deleter ran for a tensor not handed out, or twice"
    assert (counting.calls, counting.outstanding) == (N, 0)
    assert refcount(source) == before


def _through_capsules(consumer, max_version=(1, 3)):
    """An exchange for `_count_releases`: the source's `__dlpack__` capsule (legacy when
    `max_version` is None), its deleter interposed, handed to `consumer`."""

    def exchange(source, counting):
        if max_version is None:
            capsule = source.__dlpack__()
        else:
            capsule = source.__dlpack__(max_version=max_version)
        consumer(HandsOver(counting.interpose_capsule(capsule)))

    return exchange


def test_the_deleter_count_notices_a_lost_and_a_doubly_released_tensor():
    # Control: the counting must see what it is there to catch.
    counting = CountingDeleters()
    lost, twice = make_managed((2,)), make_managed((2,))
    counting.interpose(lost.address)
    counting.interpose(twice.address)
    release(twice.address, twice.struct.deleter)
    release(twice.address, twice.struct.deleter)
    assert (counting.calls, counting.outstanding) == (1, 1)
    assert counting.unexpected == [twice.address]
    assert twice.deleter_calls == 1  # the second call never reached the real deleter
    lost.call_deleter()


def test_dlbridge_exports_to_numpy_are_released_once():
    t = dlbridge.from_dlpack(np.arange(16, dtype=np.float32).reshape(4, 4))
    _count_releases(t, _through_capsules(np.from_dlpack))


def test_dlbridge_legacy_exports_to_numpy_are_released_once():
    _count_releases(dlbridge.arange(16), _through_capsules(np.from_dlpack, max_version=None))


def test_numpy_exports_to_dlbridge_are_released_once():
    a = np.arange(16, dtype=np.float64)
    _count_releases(a, _through_capsules(dlbridge.from_dlpack, max_version=(1, 0)))


def test_dlbridge_exports_to_torch_are_released_once(torch):
    _count_releases(dlbridge.zeros((4, 4)), _through_capsules(torch.from_dlpack))


def test_torch_exports_to_dlbridge_are_released_once(torch):
    x = torch.arange(16, dtype=torch.float32).reshape(4, 4)
    _count_releases(x, _through_capsules(dlbridge.from_dlpack))


def test_dlbridge_exports_through_the_exchange_api_to_torch_are_released_once(torch):
    t = dlbridge.zeros((4, 4))
    _count_releases(t, through_exchange_tables(dlbridge.Tensor, torch.Tensor))


def test_torch_exports_through_the_exchange_api_to_dlbridge_are_released_once(torch):
    x = torch.arange(16, dtype=torch.float32)
    _count_releases(x, through_exchange_tables(torch.Tensor, dlbridge.Tensor))
