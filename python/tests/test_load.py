"""Load across extension modules: many threads call the kernels of two extension modules that
link dlbridge-pyo3 (dlbridge's own test kernels and the matmul example's), which share one
aliasing registry (`_dlbridge_pyo3_shared`), with NumPy, PyTorch and JAX arguments, reading
and writing.

Every thread works on tensors of its own, so no call of its may be refused (a false
refusal); and every few calls it makes a call that truly overlaps, which must be refused
every time: an argument read and written by one call, and a call of one module made while a
call of the other holds the memory (from inside the outer call's argument extraction, where a
producer's `__dlpack__` runs, so the overlap is certain, not a matter of timing), in both
directions. The
resident memory after the first half of the calls and after the second must not differ by
more than a few megabytes (a leak of a few bytes per call would show as hundreds).

`make soak` runs it with 1,000 threads of 10,000 calls each (DLBRIDGE_LOAD_THREADS,
DLBRIDGE_LOAD_CALLS); the test suite, with 40 threads of 400. DLBRIDGE_LOAD_SECONDS bounds the
time (default 900): a run that takes longer fails, naming how far it got.
"""

from __future__ import annotations

import os
import threading
import time

import numpy as np
import pytest

from _frameworks import import_example, import_framework
from _helpers import CallsDuringExtraction
from _kernels import kernels as K
from _kernels import require_kernels

torch = import_framework("torch", "torch")

THREADS = int(os.environ.get("DLBRIDGE_LOAD_THREADS", "40"))
CALLS = int(os.environ.get("DLBRIDGE_LOAD_CALLS", "400"))
SECONDS = float(os.environ.get("DLBRIDGE_LOAD_SECONDS", "900"))
#: Growth of the resident memory between the two halves that counts as a leak.
RSS_SLACK = 48 << 20


def resident_bytes() -> int:
    with open("/proc/self/statm", encoding="ascii") as statm:
        return int(statm.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


class Tally:
    """Counts of one thread, summed at the end."""

    def __init__(self):
        self.calls = 0
        self.true_overlaps = 0
        self.refused_overlaps = 0
        self.false_refusals: list[str] = []
        self.wrong_results: list[str] = []


def one_call(tally: Tally, i: int, index: int, own: dict) -> bool:
    """Call `i` of a thread (number `index`) on its own tensors; whether its result is right.
    Every eighth call of eight is a true overlap, refused (counted in `tally`)."""
    import dlbridge_matmul as M

    a, b, c, out, out_torch = (own[k] for k in ("a", "b", "c", "out", "out_torch"))
    step = i % 8
    if step == 0:
        return K.total(a) == 4.0
    if step == 1:
        return np.asarray(M.matmul(a, b)).tolist() == [[2.0, 2.0], [2.0, 2.0]]
    if step == 2:
        K.fill(out, float(index))
        return out[1, 1] == float(index)
    if step == 3:
        M.matmul_into(a, c, out_torch)
        return out_torch[0, 0].item() == 2.0
    if step == 4:
        return K.total(c) == 4.0
    if step == 5:
        K.copy_into(a, out)
        return K.total(b) == 4.0 and out[0, 0] == 1.0
    tally.true_overlaps += 1
    if step == 6:
        # A true overlap in one call: memory read and written by the same call.
        try:
            if i // 8 % 2:
                M.matmul_into(a, b, a)
            else:
                K.copy_into(out, out)
        except ValueError:
            tally.refused_overlaps += 1
        return True
    # A true overlap across modules: one module's call holds `a` (read) while the other
    # module's kernel writes it, from inside the extraction of the outer call's next argument.
    if i // 8 % 2:
        inner = CallsDuringExtraction(b, lambda: K.fill(a, 1.0))
        M.matmul_into(a, inner, out)
        ok = out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
    else:
        inner = CallsDuringExtraction(out, lambda: M.matmul_into(c, c, a))
        K.copy_into(a, inner)
        ok = out.tolist() == [[1.0, 1.0], [1.0, 1.0]]
    tally.refused_overlaps += inner.error is not None and "call in progress" in inner.error
    return ok and a.tolist() == [[1.0, 1.0], [1.0, 1.0]]


def work(tally: Tally, calls: range, index: int, deadline: float) -> None:
    """`calls` calls of a thread on tensors of its own (NumPy, PyTorch, JAX)."""
    import jax.numpy as jnp

    own = {
        "a": np.ones((2, 2), np.float32),
        "b": torch.ones((2, 2)),
        "c": jnp.ones((2, 2), jnp.float32),  # JAX arrays are read-only: read kernels only
        "out": np.zeros((2, 2), np.float32),
        "out_torch": torch.zeros((2, 2)),
    }
    for i in calls:
        if time.monotonic() > deadline:
            return
        try:
            ok = one_call(tally, i, index, own)
        except ValueError as error:
            tally.false_refusals.append(f"call {i} step {i % 8}: {error}")
            continue
        tally.calls += 1
        if not ok:
            tally.wrong_results.append(f"call {i} step {i % 8}")


@pytest.mark.example_module
def test_threads_of_two_modules_share_the_registry_without_false_refusals_or_leaks():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    import_example("dlbridge_matmul", "matmul")
    # Imported here, not at collection: the AddressSanitizer run collects this module and
    # leaves out JAX (whose jaxlib aborts under a preloaded sanitizer runtime).
    import_framework("jax", "jax")
    started = time.monotonic()
    deadline = started + SECONDS
    tallies = [Tally() for _ in range(THREADS)]
    halves = (range(CALLS // 2), range(CALLS // 2, CALLS))
    resident = []
    for half in halves:
        pool = [
            threading.Thread(target=work, args=(tally, half, index, deadline))
            for index, tally in enumerate(tallies)
        ]
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        resident.append(resident_bytes())
    done = sum(t.calls for t in tallies) + sum(len(t.false_refusals) for t in tallies)
    assert time.monotonic() <= deadline, (
        f"{done} of {THREADS * CALLS} calls in DLBRIDGE_LOAD_SECONDS={SECONDS:g}"
    )
    false_refusals = [f for t in tallies for f in t.false_refusals]
    assert false_refusals == [], f"{len(false_refusals)} false refusals: {false_refusals[:3]}"
    wrong = [w for t in tallies for w in t.wrong_results]
    assert wrong == [], f"{len(wrong)} wrong results: {wrong[:3]}"
    overlaps = sum(t.true_overlaps for t in tallies)
    assert overlaps == THREADS * (CALLS // 8 * 2 + (CALLS % 8 > 6))
    assert sum(t.refused_overlaps for t in tallies) == overlaps
    assert sum(t.calls for t in tallies) == THREADS * CALLS
    growth = resident[1] - resident[0]
    print(
        f"\ntest_load: {THREADS} threads x {CALLS} calls in {time.monotonic() - started:.0f} s, "
        f"{overlaps} true overlaps refused, resident {resident[0] >> 20} MiB after the first "
        f"half and {resident[1] >> 20} MiB after the second"
    )
    assert growth < RSS_SLACK, f"resident memory grew by {growth >> 20} MiB in the second half"
    K.fill(np.ones(4, np.float32), 0.0)  # every claim was released
