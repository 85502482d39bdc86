"""The aliasing registry of typed arguments (`dlbridge_pyo3`'s `claims`): memory written
through a `TensorArgMut` is never reached through another argument at the same time, on any
thread, in any extension module; everything else is accepted: interleaved views that share
no element, thousands of readers at once.
"""

import sys
import threading

import numpy as np
import pytest

from _frameworks import import_framework
from _helpers import CallsDuringExtraction
from _kernels import kernels as K
from _kernels import require_kernels

torch = import_framework("torch", "torch")


def make(framework, array):
    return array if framework == "numpy" else torch.from_numpy(array)


@pytest.mark.parametrize("width", [4, 5])  # even and odd rows: the columns' parity shifts
@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_interleaved_views_that_share_no_element_are_accepted(framework, width):
    x = make(framework, np.arange(3 * width, dtype=np.float32).reshape(3, width))
    even, odd = x[:, ::2], x[:, 1::2]
    columns = odd.shape[1]
    expected = np.asarray(even[:, :columns]).copy()
    K.copy_into(even[:, :columns], odd[:, :columns])
    assert np.array_equal(np.asarray(x)[:, 1::2][:, :columns], expected)
    # A column read while another is written; a row read while another is written.
    K.copy_into(x[:, 0], x[:, width - 1])
    assert np.array_equal(np.asarray(x)[:, 0], np.asarray(x)[:, width - 1])
    K.copy_into(x[0], x[2])
    assert np.array_equal(np.asarray(x)[0], np.asarray(x)[2])


def test_reversed_views_of_disjoint_halves_are_accepted():
    flat = np.arange(8, dtype=np.float32)
    K.copy_into(flat[:4], flat[::-1][:4])  # elements 0..3 read, 7..4 written
    assert flat.tolist() == [0, 1, 2, 3, 3, 2, 1, 0]
    grid = np.arange(16, dtype=np.float32).reshape(4, 4)
    K.copy_into(grid[:, ::2], grid[:, ::-2])  # columns 0, 2 read; 3, 1 written
    assert grid[:, 3].tolist() == grid[:, 0].tolist()


@pytest.mark.parametrize("framework", ["numpy", "torch"])
def test_views_that_share_an_element_are_refused_naming_both_arguments(framework):
    x = make(framework, np.zeros((4, 5), dtype=np.float32))
    overlapping = [
        (x, x),
        (x[:, 1:], x[:, :-1]),  # shifted by one column
        (x[1, :4], x[:, 1]),  # a row and a column that cross at one element
        (x[:, 0:3:2], x[:, 2:5:2]),  # columns 0, 2 and 2, 4: column 2 in both
    ]
    if framework == "numpy":
        overlapping.append((x[:, ::2], x[:, ::-2]))  # columns 0, 2, 4 and 4, 2, 0
    for read, written in overlapping:
        assert tuple(read.shape) == tuple(written.shape)
        with pytest.raises(ValueError) as refused:
            K.copy_into(read, written)
        assert (
            "tensor argument 2 of this call (written) overlaps the memory of tensor argument 1 "
            "(read)" in str(refused.value)
        )
    assert not np.asarray(x).any(), "a refused call wrote nothing"


class HeldNumber:
    """A number argument whose conversion (`__float__`, which PyO3 calls to extract an
    f32/f64 argument after the tensor arguments before it, whose claims are then held) calls
    `during()` first: a kernel call that holds its tensors for as long as `during` runs."""

    def __init__(self, value, during):
        self.value, self.during = value, during

    def __float__(self):
        self.during()
        return float(self.value)


def _refused_while(background, attempt):
    """Runs `background(during)` on a thread: a kernel call that holds its tensor arguments
    while it converts a `HeldNumber(value, during)`. Calls `attempt()` once while they are
    held, and returns the ValueError it raised (None if it was not refused)."""
    holding, release = threading.Event(), threading.Event()
    failures = []

    def hold():
        holding.set()
        if not release.wait(timeout=120):
            raise TimeoutError("the test thread never released the call")

    def run():
        try:
            background(hold)
        except BaseException as error:  # noqa: BLE001 - asserted below
            failures.append(error)

    thread = threading.Thread(target=run)
    thread.start()
    refusal = None
    try:
        # A bound, not a sleep: the call holds its arguments before `attempt` runs.
        assert holding.wait(timeout=120), "the call on the other thread never held its tensors"
        try:
            attempt()
        except ValueError as error:
            refusal = error
    finally:
        release.set()
        thread.join()
    assert failures == []
    return refusal


def test_a_write_refused_for_a_read_on_another_thread_says_so():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    x, y = np.ones(64, np.float32), np.ones(64, np.float32)
    refusal = _refused_while(
        lambda during: K.slow_total2(x, y, HeldNumber(0.0, during)), lambda: K.fill(x, 1.0)
    )
    assert refusal is not None
    assert str(refusal).startswith(
        "this tensor's memory is being read by a call in progress on another thread: it "
        "cannot be written here (TensorArgMut) until that call returns"
    )
    K.fill(x, 2.0)  # nothing stays claimed
    assert x.tolist() == [2.0] * 64


def test_a_read_refused_for_a_write_on_another_thread_says_so():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    x = torch.zeros(64)
    refusal = _refused_while(
        lambda during: K.fill(x, HeldNumber(1.0, during)), lambda: K.total(x[10:20])
    )
    assert refusal is not None
    assert str(refusal).startswith(
        "this tensor's memory is being written by a call in progress on another thread (as a "
        "TensorArgMut): it cannot be read here until that call returns"
    )
    assert K.total(x) == 64.0


def test_a_call_inside_another_calls_argument_extraction_is_told_from_its_arguments():
    # The outer call holds `x` (read, argument 1) when the extraction of its second argument
    # runs the producer's `__dlpack__`, which writes `x` through another kernel: refused, and
    # said to be the enclosing call's argument, not an argument of the inner call (the load test
    # of issue 33 found the message naming "tensor argument 2 of this call" for a call of one).
    x, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    inner = CallsDuringExtraction(out, lambda: K.fill(x, 5.0))
    K.copy_into(x, inner)
    assert inner.error == (
        "tensor argument 1 of this call (written) overlaps the memory of tensor argument 1 "
        "(read) of a call in progress on this thread that this call runs inside (called from a "
        "producer's __dlpack__ during that call's argument extraction, or from Python code its "
        "kernel called): memory written through a TensorArgMut is reached through no other "
        "argument until that call returns"
    )
    assert x.tolist() == [1.0] * 4 and out.tolist() == [1.0] * 4
    # The arguments of one call keep their own message.
    same_call = r"tensor argument 2 of this call \(written\) overlaps the"
    with pytest.raises(ValueError, match=same_call):
        K.copy_into(x, x)


def test_600_threads_hold_read_claims_on_the_same_tensors_at_once():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    # More claims are alive at once (1,200) than the registry had slots before (256). Each
    # thread's call holds its read claims on `a` and `b` while it converts its number
    # argument, which waits at a barrier of every thread and this one: this thread passes it
    # only when all 600 calls hold both claims, and they hold them until it releases them.
    a, b = np.ones(100, np.float32), torch.ones(100)
    threads = 600
    all_holding = threading.Barrier(threads + 1)
    release = threading.Event()
    results, errors = [], []

    def hold_the_claims():
        all_holding.wait(timeout=120)
        if not release.wait(timeout=120):
            raise TimeoutError("the test thread never released the readers")

    def reader():
        try:
            results.append(K.slow_total2(a, b, HeldNumber(0.0, hold_the_claims)))
        except Exception as error:  # noqa: BLE001 - collected and asserted below
            errors.append(repr(error))

    pool = [threading.Thread(target=reader) for _ in range(threads)]
    for thread in pool:
        thread.start()
    try:
        # A BrokenBarrierError (the test fails) unless all 600 calls hold their claims.
        all_holding.wait(timeout=120)
        assert not all_holding.broken
        # Now every call holds `a` and `b`: a write to either is refused.
        for tensor in (a, b):
            with pytest.raises(ValueError, match="being read by a call in progress on another"):
                K.fill(tensor, 0.0)
    finally:
        release.set()
        for thread in pool:
            thread.join()
    assert errors == []
    assert results == [200.0] * threads
    K.fill(a, 0.0)  # every claim was released
    K.fill(b, 0.0)
    assert not a.any() and not b.any()


@pytest.mark.example_module
def test_interleaved_views_in_a_users_kernel():
    # `matmul_into(a, b, out)` reads `a` and `b` and writes `out`: the even columns of a grid
    # times the identity, into its odd columns.
    import dlbridge_matmul

    grid = np.arange(12, dtype=np.float32).reshape(3, 4)
    expected = grid[:, ::2].copy()
    dlbridge_matmul.matmul_into(grid[:, ::2], np.eye(2, dtype=np.float32), grid[:, 1::2])
    assert np.array_equal(grid[:, 1::2], expected)


@pytest.mark.example_module
def test_the_registry_is_shared_by_every_extension_module():
    require_kernels()  # called on other threads, where a missing kernel cannot stop the test
    import dlbridge_matmul

    shared = sys.modules["_dlbridge_pyo3_shared"]
    assert "aliasing_registry" in vars(shared)
    ones = np.ones((2, 2), np.float32)
    out = np.zeros((2, 2), np.float32)
    # Read through dlbridge's module on one thread, written through the example's on another.
    refusal = _refused_while(
        lambda during: K.slow_total2(out, out, HeldNumber(0.0, during)),
        lambda: dlbridge_matmul.matmul_into(ones, ones, out),
    )
    assert refusal is not None
    assert "being read by a call in progress on another thread" in str(refusal)
    dlbridge_matmul.matmul_into(ones, ones, out)
    assert out.tolist() == [[2.0, 2.0], [2.0, 2.0]]
