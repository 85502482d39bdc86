"""Threads: 8 threads importing, exporting and running kernels with the GIL released, tensors
exported on one thread and dropped on another; no crash, no deadlock, counts and values right.
(The Rust side's deleters on threads without the GIL are tested in
`crates/dlbridge-pyo3/tests/capsules.rs` and the core's export tests.)"""

from __future__ import annotations

import gc
import queue
import sys
import threading

import numpy as np

import _producers as P
import dlbridge
from dlbridge._dlbridge import _testing as kernels

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
            record = P.make_managed((2, 3), values=np.full(6, i, np.float32).tobytes())
            records.append(record)
            handoff.put(dlbridge.from_dlpack(P.OneTensorProducer(record)))
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
    # Each thread writes its own array through TensorArgMut while the others read theirs.
    arrays = [np.zeros(1_000, dtype=np.float64) for _ in range(THREADS)]

    def work(i):
        def body():
            for _ in range(ROUNDS // 4):
                kernels.add_one(arrays[i])
        return body

    _run([work(i) for i in range(THREADS)])
    assert all((a == ROUNDS // 4).all() for a in arrays)

