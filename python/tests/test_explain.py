"""`dlbridge.explain(x)`: what `dlbridge.from_dlpack(x)` does (the path, the negotiation,
whether anything is copied and by whom) and how a Rust kernel's typed arguments read an
object, which path, what they see, and why they refuse, for every kind of producer; and that
it agrees with what the import and the arguments do. (JAX's case: interop/test_jax.py.)"""

from __future__ import annotations

import array

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import collect, python_without_exchange_api
from _kernels import kernels
from dlbridge.check.fake_producers import (
    AlwaysTypeErrorProducer,
    BufferErrorProducer,
    OldestProducer,
    OldProducer,
    RecordingProducer,
)


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
    torch = import_framework("torch", "torch")
    explained = dlbridge.explain(torch.ones(2))
    assert explained["argument"]["path"] == "exchange"
    tracked = dlbridge.explain(torch.ones(2, requires_grad=True))
    assert tracked["argument"]["path"] == "exchange"  # the same memory x.detach() reads
    assert tracked["writable_argument"]["refused"].startswith("TypeError")


# ---- imports: what `dlbridge.from_dlpack(x)` does --------------------------------------------


def agrees_with_from_dlpack(x, **keywords):
    """`explain(x, ...)["import"]` and what `from_dlpack(x, ...)` returns agree."""
    explained = dlbridge.explain(x, **keywords)["import"]
    tensor = dlbridge.from_dlpack(x, **keywords)
    assert explained["read_only"] == tensor.readonly
    assert explained["copied"] == bool(tensor.flags & dlbridge.FLAG_IS_COPIED)
    assert (explained["dtype"], explained["shape"], explained["strides"]) == (
        tensor.dtype,
        tensor.shape,
        tensor.strides,
    )
    assert explained["device"] == tensor.device
    return explained


def test_a_numpy_array_is_imported_from_its_struct():
    x = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]
    explained = dlbridge.explain(x)["import"]
    assert explained == {
        "path": "numpy",
        "negotiation": (),
        "copied": False,
        "copied_by": None,
        "version": dlbridge.DLPACK_VERSION,
        "dtype": "float32",
        "shape": (3, 2),
        "strides": (4, 2),
        "device": (1, 0),
        "read_only": False,
        "ready_stream": None,
        "writability": "writable: a versioned tensor without the READ_ONLY flag",
    }
    assert agrees_with_from_dlpack(x) == explained
    x.flags.writeable = False
    read_only = agrees_with_from_dlpack(x)
    assert read_only["read_only"]
    assert read_only["writability"] == (
        "read-only: the NumPy array is not writeable (its flags.writeable is False)"
    )


def test_writability_says_why_and_legacy_writable_is_the_callers_promise():
    x = np.zeros(3, dtype=np.float32)
    legacy = dlbridge.explain(x.__dlpack__())["import"]
    assert legacy["read_only"] and "legacy capsule" in legacy["writability"]
    vouched = dlbridge.explain(x.__dlpack__(), legacy_writable=True)["import"]
    assert not vouched["read_only"]
    assert vouched["writability"] == "writable: vouched for by the caller (legacy_writable=True)"
    # Versioned tensors keep what their flags say, vouched for or not.
    x.flags.writeable = False
    flagged = dlbridge.explain(x.__dlpack__(max_version=(1, 3)), legacy_writable=True)["import"]
    assert flagged["read_only"]
    assert flagged["writability"] == "read-only: builtins.PyCapsule set the READ_ONLY flag"
    assert dlbridge.from_dlpack(x, legacy_writable=True).readonly
    # And from_dlpack does what explain says.
    y = np.zeros(2, dtype=np.float32)
    assert dlbridge.from_dlpack(y.__dlpack__()).readonly
    vouched_tensor = dlbridge.from_dlpack(y.__dlpack__(), legacy_writable=True)
    np.asarray(memoryview(vouched_tensor))[1] = 4.0
    assert y.tolist() == [0.0, 4.0]


def test_numpy_copies_when_asked_and_says_so():
    x = np.arange(4, dtype=np.int32)
    explained = agrees_with_from_dlpack(x, copy=True)
    # NumPy's `__dlpack__` (2.1 and later) takes `copy` and flags IS_COPIED.
    assert explained["path"] == "dlpack-versioned"
    assert (explained["copied"], explained["copied_by"]) == (True, "producer")
    assert explained["negotiation"] == ()
    assert not agrees_with_from_dlpack(x, copy=False)["copied"]


def test_numpy_refusals_are_numpys():
    explained = dlbridge.explain(np.arange(3, dtype=">f4"))
    assert explained["import"]["refused"].startswith("BufferError: ")
    assert explained["import"]["refused"] == explained["argument"]["refused"]


def test_dlbridge_tensors_are_imported_through_the_exchange_table():
    explained = agrees_with_from_dlpack(dlbridge.zeros([2, 2]))
    assert (explained["path"], explained["negotiation"], explained["copied"]) == (
        "exchange",
        (),
        False,
    )
    explained = agrees_with_from_dlpack(dlbridge.zeros([2, 2]), copy=True)
    assert (explained["path"], explained["copied_by"]) == ("dlpack-versioned", "producer")


def test_torch_tensors_are_imported_through_the_exchange_table():
    torch = import_framework("torch", "torch")
    explained = agrees_with_from_dlpack(torch.ones(2, 3))
    assert explained["path"] == "exchange"
    assert (explained["negotiation"], explained["copied"], explained["read_only"]) == (
        (),
        False,
        False,
    )
    assert explained["version"][0] == 1
    tracked = dlbridge.explain(torch.ones(2, requires_grad=True))["import"]
    assert tracked["refused"].startswith("BufferError: ")


def test_torch_copies_when_asked_whoever_makes_the_copy():
    torch = import_framework("torch", "torch")
    explained = agrees_with_from_dlpack(torch.ones(2, 3), copy=True)
    # Not the exchange table: it takes no `copy`. PyTorch 2.15 copies without flagging
    # IS_COPIED, so dlbridge copies again; a PyTorch that flags it is the copier itself.
    assert explained["path"] == "dlpack-versioned"
    assert explained["copied"]
    if explained["copied_by"] == "dlbridge":
        assert explained["negotiation"] == ("copied-here",)
    else:
        assert (explained["copied_by"], explained["negotiation"]) == ("producer", ())


def test_torch_without_the_exchange_table():
    import_framework("torch", "torch")
    # The switch is read once per process: a process of its own.
    code = (
        "import torch, dlbridge\n"
        "explained = dlbridge.explain(torch.ones(3))['import']\n"
        "print(explained['path'], ','.join(explained['negotiation']), explained['copied'])\n"
    )
    output = python_without_exchange_api("-c", code)
    assert output.split() == ["dlpack-versioned", "exchange-disabled", "False"]


def test_old_producers_are_retried_and_their_legacy_tensors_are_read_only():
    old = OldProducer(shape=(2, 3))
    explained = agrees_with_from_dlpack(old)
    assert explained["path"] == "dlpack-legacy"
    assert explained["negotiation"] == ("max-version-refused",)
    assert (explained["version"], explained["read_only"], explained["copied"]) == (
        None,
        True,
        False,
    )
    assert old.calls and all(call == {} for call in old.calls)  # no call with max_version
    # The oldest cannot take `copy` either: asked bare, and the copy is dlbridge's.
    oldest = OldestProducer()
    explained = agrees_with_from_dlpack(oldest, copy=True)
    assert explained["path"] == "dlpack-legacy"
    assert explained["negotiation"] == ("max-version-refused", "keywords-refused", "copied-here")
    assert (explained["copied"], explained["copied_by"], explained["read_only"]) == (
        True,
        "dlbridge",
        False,
    )
    assert explained["version"] is None  # what arrived: a legacy tensor


def test_a_producer_that_forgets_is_copied_gets_a_copy_from_dlbridge():
    forgetful = RecordingProducer(shape=(4,))  # ignores `copy`
    explained = agrees_with_from_dlpack(forgetful, copy=True)
    assert (explained["path"], explained["copied_by"]) == ("dlpack-versioned", "dlbridge")
    assert explained["negotiation"] == ("copied-here",)
    honest = RecordingProducer(shape=(4,), honour_copy=True)
    explained = agrees_with_from_dlpack(honest, copy=True)
    assert (explained["copied_by"], explained["negotiation"]) == ("producer", ())


def test_a_producer_that_cannot_copy_is_asked_again_and_dlbridge_copies():
    expected = np.arange(6, dtype=np.float32).reshape(2, 3)
    refusing = RecordingProducer(shape=(2, 3), values=expected.tobytes(), refuse_copy=True)
    explained = agrees_with_from_dlpack(refusing, copy=True)
    assert explained["negotiation"] == ("copy-refused", "copied-here")
    assert (explained["copied"], explained["copied_by"], explained["read_only"]) == (
        True,
        "dlbridge",
        False,
    )
    # Asked with copy=True, refused, asked again without copy (and nothing else changed).
    assert [call.get("copy") for call in refusing.calls[-2:]] == [True, None]
    assert "copy" not in refusing.calls[-1]
    tensor = dlbridge.from_dlpack(refusing, copy=True)
    copied = np.from_dlpack(tensor)
    np.testing.assert_array_equal(copied, expected)
    copied[0, 0] = 42.0  # the copy is private: the producer's memory is untouched
    again = np.from_dlpack(dlbridge.from_dlpack(refusing))
    assert again[0, 0] == 0.0
    # A refusal that is not about copying stays the producer's: asked again without copy, it
    # refuses the device again, and that error is raised, with the first as its cause.
    with pytest.raises(BufferError, match="cannot export to device") as caught:
        dlbridge.from_dlpack(RecordingProducer(refuse_device=True), copy=True, device=(2, 0))
    assert isinstance(caught.value.__cause__, BufferError)


def test_devices_named_by_dlpack_device_and_host_memory_seen_as_cpu():
    pinned = RecordingProducer(shape=(2,), device=(3, 0))  # CUDAHost; the tensor says CPU
    assert agrees_with_from_dlpack(pinned)["negotiation"] == ("device-from-dlpack-device",)
    # Asked for the CPU, and given a tensor that says CPU: taken as it is (a producer that
    # honoured dl_device must not be relabelled with the device of its original).
    explained = agrees_with_from_dlpack(pinned, device=(1, 0))
    assert explained["negotiation"] == ()
    assert (explained["device"], explained["copied"]) == ((1, 0), False)
    assert pinned.calls[-1]["dl_device"] == (1, 0)


def test_a_raw_capsule_is_consumed_by_the_import_and_said_so_by_the_arguments():
    explained = dlbridge.explain(np.arange(3.0).__dlpack__())
    assert explained["type"] == "builtins.PyCapsule"
    assert explained["import"]["path"] == "capsule"
    assert (explained["import"]["version"], explained["import"]["read_only"]) == (None, True)
    assert "already consumed" in explained["argument"]["refused"]
    versioned = dlbridge.explain(np.arange(3.0).__dlpack__(max_version=(1, 0)))["import"]
    assert (versioned["path"], versioned["version"], versioned["read_only"]) == (
        "capsule",
        (1, 0),
        False,
    )


def test_refusals_are_reported_with_the_exception_that_from_dlpack_raises():
    explained = dlbridge.explain(object())
    assert explained["import"]["refused"].startswith("TypeError: an object of type object")
    with pytest.raises(TypeError, match="not a DLPack producer"):
        dlbridge.from_dlpack(object())
    refusing = BufferErrorProducer("no export today")
    assert dlbridge.explain(refusing)["import"] == {"refused": "BufferError: no export today"}
    stubborn = AlwaysTypeErrorProducer()
    assert dlbridge.explain(stubborn)["import"]["refused"].startswith("TypeError: ")
    # The import first (then the arguments): with max_version, without it, bare.
    assert stubborn.calls[:3] == [{"max_version": dlbridge.DLPACK_VERSION}, {}, {}]
    copied = dlbridge.explain(np.zeros(2), copy=False, device=(2, 0))["import"]
    assert copied["refused"].startswith("BufferError: ")


def test_explain_keywords_are_checked_as_from_dlpacks_are():
    # As from_dlpack's (test_protocol.py): a malformed device is a ValueError.
    with pytest.raises(
        ValueError, match=r"device: TypeError: expected a \(device_type, device_id\)"
    ):
        dlbridge.explain(np.zeros(2), device="cpu")
    with pytest.raises(TypeError):
        dlbridge.explain(np.zeros(2), copy="yes")


def test_the_import_keeps_nothing():
    producer = RecordingProducer(shape=(3,))
    dlbridge.explain(producer)
    dlbridge.explain(producer, copy=True)
    collect()
    # Every tensor handed out (the import's and the arguments') was released, once.
    assert producer.records
    assert [record.deleter_calls for record in producer.records] == [1] * len(producer.records)
