"""`dlbridge.explain(x)`: how a Rust kernel's typed arguments read an object, which path,
what they see, and why they refuse, for every kind of producer; and that it agrees with what
the arguments do."""

from __future__ import annotations

import array

import numpy as np
import pytest

import dlbridge
from _kernels import kernels


def test_a_numpy_array_is_read_from_its_struct():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    explained = dlbridge.explain(x)
    assert explained["type"] == "numpy.ndarray"
    argument = explained["argument"]
    assert argument == {
        "path": "numpy",
        "dtype": "float32",
        "shape": (3, 2),
        "strides": (4, 2),
        "device": (1, 0),
        "read_only": False,
        "copied": False,
    }
    assert explained["writable_argument"]["path"] == "numpy"


def test_other_host_memory_goes_through_the_buffer_protocol():
    explained = dlbridge.explain(array.array("d", [1.0, 2.0]))
    assert explained["argument"]["path"] == "buffer"
    assert explained["argument"]["dtype"] == "float64"
    explained = dlbridge.explain(memoryview(bytes(4)))
    assert explained["argument"]["read_only"]


def test_dlbridge_tensors_use_the_exchange_table():
    explained = dlbridge.explain(dlbridge.zeros([2, 2]))
    assert explained["argument"]["path"] == "exchange"
    assert not explained["writable_argument"]["read_only"]


def test_a_read_only_array_is_read_but_refused_for_writing_by_the_kernel():
    x = np.zeros(3)
    x.flags.writeable = False
    explained = dlbridge.explain(x)
    assert explained["writable_argument"]["read_only"]
    with pytest.raises(TypeError, match="read-only"):
        kernels.add_one(x)


def test_a_producer_refusal_is_reported_not_raised():
    class Refusing:
        def __dlpack__(self, **kwargs):
            raise BufferError("this producer exports nothing")

        def __dlpack_device__(self):
            return (1, 0)

    explained = dlbridge.explain(Refusing())
    assert explained["argument"] == {"refused": "BufferError: this producer exports nothing"}


def test_it_agrees_with_the_arguments_own_path():
    for x in (np.ones(4, dtype=np.float32), dlbridge.zeros([4]), array.array("f", [0.0] * 4)):
        assert dlbridge.explain(x)["argument"]["path"] == kernels.inspect_argument(x)["path"]


def test_torch_tensors_and_autograd():
    torch = pytest.importorskip("torch")
    explained = dlbridge.explain(torch.ones(2))
    assert explained["argument"]["path"] == "exchange"
    tracked = dlbridge.explain(torch.ones(2, requires_grad=True))
    assert tracked["argument"]["path"] == "exchange"  # the same memory x.detach() reads
    assert tracked["writable_argument"]["refused"].startswith("TypeError")
