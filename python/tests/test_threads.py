"""Threads: 8 threads importing, exporting and running kernels with the GIL released, with
NumPy arrays, PyTorch tensors and the C exchange API; tensors exported on one thread and
dropped on another; producers' deleters run on threads that have never held the GIL. No
crash, no deadlock, every deleter once, values and reference counts right. (The Rust side of
deleters without the GIL is also tested in `crates/dlbridge-pyo3/tests/capsules.rs` and the
core's export tests.)"""

from __future__ import annotations

import gc
import queue
import sys
import threading

import numpy as np
import pytest
from dlbridge._dlbridge import _exchange_api_exports

import dlbridge
from _frameworks import import_framework
from _helpers import CountingDeleters, HandsOver, through_exchange_tables
from _kernels import kernels, require_kernels
from dlbridge.check.fake_producers import OneTensorProducer
from dlbridge.check.records import make_managed

THREADS = 8
ROUNDS = 2_000
DEADLINE = 120  # seconds: a deadlock fails the test instead of hanging the suite


def _run(workers):
    errors = []

    def guarded(work):
        try:
            work()
        except BaseException as error:  # noqa: BLE001 - reported by the test
            errors.append(error)

    threads = [threading.Thread(target=guarded, args=(w,)) for w in workers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(DEADLINE)
    assert not any(t.is_alive() for t in threads), "a thread did not finish: deadlock?"
    assert not errors, errors


def test_eight_threads_import_export_and_run_kernels_concurrently():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    sources = [np.arange(12, dtype=np.float32).reshape(3, 4) + i for i in range(THREADS)]
    before = [sys.getrefcount(s) for s in sources]

    def work(i):
        def body():
            source = sources[i]
            out = np.empty_like(source)
            for _ in range(ROUNDS):
                t = dlbridge.from_dlpack(source)  # import (NumPy's struct read directly)
                back = np.from_dlpack(t)  # export through __dlpack__
                assert back[2, 3] == source[2, 3]
                kernels.scale(t, out, 2.0)  # typed arguments, GIL released in the kernel
                assert out[1, 1] == 2.0 * source[1, 1]
                again = dlbridge.from_dlpack(dlbridge.from_dlpack(back))
                assert again.shape == (3, 4)

        return body

    _run([work(i) for i in range(THREADS)])
    gc.collect()
    assert [sys.getrefcount(s) for s in sources] == before


def test_tensors_exported_on_one_thread_are_dropped_on_another():
    handoff: queue.Queue = queue.Queue(maxsize=64)
    records = []
    done = object()

    def produce():
        for i in range(ROUNDS):
            record = make_managed((2, 3), values=np.full(6, i, np.float32).tobytes())
            records.append(record)
            handoff.put(dlbridge.from_dlpack(OneTensorProducer(record)))
        handoff.put(done)

    def consume():
        while (item := handoff.get()) is not done:
            array = np.from_dlpack(item)
            value = float(array[0, 0])
            del item, array  # the last references go here, on this thread
            assert value >= 0

    _run([produce, consume])
    gc.collect()
    assert [r.deleter_calls for r in records] == [1] * ROUNDS


def test_writers_on_separate_threads_never_share_memory():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    # Each thread writes its own array through TensorArgMut while the others read theirs.
    arrays = [np.zeros(1_000, dtype=np.float64) for _ in range(THREADS)]

    def work(i):
        def body():
            for _ in range(ROUNDS // 4):
                kernels.add_one(arrays[i])

        return body

    _run([work(i) for i in range(THREADS)])
    assert all((a == ROUNDS // 4).all() for a in arrays)


@pytest.fixture(scope="module")
def torch():
    return import_framework("torch", "torch")


def test_eight_threads_exchange_torch_tensors_concurrently(torch):
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    # Each round: torch -> dlbridge (through PyTorch's exchange table), dlbridge -> torch
    # (capsule), a typed-argument kernel on torch tensors with the GIL released (borrowed
    # through PyTorch's dltensor_from_py_object_no_sync), and a tensor passed by hand from
    # dlbridge's table to PyTorch's, its deleter counted.
    sources = [torch.arange(12, dtype=torch.float32).reshape(3, 4) + i for i in range(THREADS)]
    before = [sys.getrefcount(s) for s in sources]
    counting = CountingDeleters()
    pass_through_tables = through_exchange_tables(dlbridge.Tensor, torch.Tensor)
    rounds = ROUNDS // 2
    exports_before = _exchange_api_exports()

    def work(i):
        def body():
            source = sources[i]
            out = torch.empty_like(source)
            for _ in range(rounds):
                t = dlbridge.from_dlpack(source)
                back = torch.from_dlpack(t)
                assert back[2, 3] == source[2, 3]
                kernels.scale(source, out, 2.0)
                assert out[1, 1] == 2.0 * source[1, 1]
                through_tables = pass_through_tables(t, counting)
                assert through_tables[0, 1] == source[0, 1]
                del through_tables

        return body

    _run([work(i) for i in range(THREADS)])
    gc.collect()
    assert counting.unexpected == []
    assert (counting.calls, counting.outstanding) == (THREADS * rounds, 0)
    assert _exchange_api_exports() - exports_before == THREADS * rounds
    assert [sys.getrefcount(s) for s in sources] == before


def _torch_source():
    torch = import_framework("torch", "torch")
    return torch.arange(6, dtype=torch.float32)


# The sources whose tensors are released on threads without the GIL.
SOURCES = {
    "numpy": lambda: np.arange(6, dtype=np.float32),
    "torch": _torch_source,
    "dlbridge": lambda: dlbridge.arange(6, dtype="float32"),
}


@pytest.mark.parametrize("producer", sorted(SOURCES))
def test_deleters_run_on_threads_that_never_held_the_gil(producer):
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    # 8 threads at once each import tensors and have them released on a fresh thread that has
    # never held the GIL (`release_on_new_thread`): through interposed capsules (each deleter
    # counted) and through `from_dlpack(source)` itself (the exchange API for PyTorch, NumPy's
    # struct for NumPy, the Arc for dlbridge), the source's reference count flat afterwards.
    make = SOURCES[producer]
    sources = [make() for _ in range(THREADS)]
    before = [sys.getrefcount(s) for s in sources]
    counting = CountingDeleters()
    rounds = ROUNDS // 4

    def work(i):
        def body():
            source = sources[i]
            for _ in range(rounds):
                capsule = counting.interpose_capsule(source.__dlpack__(max_version=(1, 0)))
                kernels.release_on_new_thread(HandsOver(capsule))
                kernels.release_on_new_thread(source)

        return body

    _run([work(i) for i in range(THREADS)])
    gc.collect()
    assert counting.unexpected == []
    assert (counting.calls, counting.outstanding) == (THREADS * rounds, 0)
    assert [sys.getrefcount(s) for s in sources] == before


def test_hand_built_deleters_run_on_threads_that_never_held_the_gil():
    records = [make_managed((2, 3)) for _ in range(ROUNDS // 4)]
    for record in records:
        kernels.release_on_new_thread(OneTensorProducer(record))
    gc.collect()
    assert [r.deleter_calls for r in records] == [1] * len(records)
