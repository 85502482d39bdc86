"""Hostile and odd producers: every malformed input raises the right exception, names the
field and value, never crashes, and the producer's deleter runs exactly once.

Pattern used throughout: capsules, producers and tensors are bound to local names and
released with `del` + collect() after the `pytest.raises` block, so that the toolkit's ctypes
callbacks never run while an exception propagates (see `dlbridge.check.records`).
"""

from __future__ import annotations

import enum
import struct

import numpy as np
import pytest

import dlbridge
from _helpers import collect, read_bytes
from dlbridge.check.abi import (
    DELETER,
    FLAG_IS_COPIED,
    FLAG_IS_SUBBYTE_TYPE_PADDED,
    FLAG_READ_ONLY,
    NAME_LEGACY,
    NAME_USED_LEGACY,
    NAME_USED_VERSIONED,
    NAME_VERSIONED,
    kDLAscend,
    kDLBcomplex,
    kDLBfloat,
    kDLBool,
    kDLCPU,
    kDLCUDA,
    kDLCUDAHost,
    kDLCUDAManaged,
    kDLFloat,
    kDLFloat4_e2m1fn,
    kDLFloat8_e4m3fn,
    kDLInt,
    kDLROCM,
    kDLTPU,
    kDLTPUHost,
    kDLUInt,
)
from dlbridge.check.capsules import capsule_name, consume_capsule, read_capsule, release
from dlbridge.check.fake_producers import (
    AlwaysTypeErrorProducer,
    BufferErrorProducer,
    CPUDeviceType,
    IntProducer,
    NoneProducer,
    NotACapsuleProducer,
    OldestProducer,
    OldProducer,
    OneTensorProducer,
    RecordingProducer,
    TypeErrorOnMaxVersionProducer,
)
from dlbridge.check.records import NULL_NAME, make_major2, make_managed

V13 = (1, 3)


def _import_fails(obj, exc_type, *fragments):
    """from_dlpack(obj) raises exc_type whose message contains every fragment."""
    with pytest.raises(exc_type) as info:
        dlbridge.from_dlpack(obj)
    err = info.value
    message = str(err)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    # Break the frame <-> traceback cycle so `obj` dies with the caller's `del`.
    err.__traceback__ = None
    del info
    return err


# --------------------------------------------------------------------------------------------
# The toolkit itself, checked with numpy as the consumer (so a toolkit bug is not taken for a
# dlbridge bug).
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_toolkit_tensor_consumed_by_numpy(versioned):
    rec = make_managed((2, 3), "int32", versioned=versioned, values=struct.pack("<6i", *range(6)))
    a = np.from_dlpack(OneTensorProducer(rec))
    assert a.tolist() == [[0, 1, 2], [3, 4, 5]]
    assert a.ctypes.data == rec.data_address
    assert rec.deleter_calls == 0
    del a
    collect()
    assert rec.deleter_calls == 1
    assert rec.destructor_seen == [NAME_USED_VERSIONED if versioned else NAME_USED_LEGACY]


def test_toolkit_destructor_follows_the_spec():
    rec = make_managed((2,))
    for name, frees in [(None, True), (b"not_a_tensor", True), (NAME_USED_VERSIONED, False)]:
        before = rec.deleter_calls
        cap = rec.capsule(name)
        del cap
        collect()
        assert rec.deleter_calls == before + (1 if frees else 0), name
    assert rec.destructor_errors == []
    rec_null = make_managed((2,), deleter=False)
    cap = rec_null.capsule()
    del cap
    collect()
    assert rec_null.deleter_calls == 0 and rec_null.destructor_seen == [NAME_VERSIONED]


def test_toolkit_reads_numpy_capsules():
    a = np.arange(6.0).reshape(2, 3)[:, ::2]
    info = read_capsule(a.__dlpack__(max_version=(1, 0)))
    assert info["name"] == NAME_VERSIONED and info["version"] == (1, 0)
    assert info["shape"] == (2, 2) and info["strides"] == (3, 2)
    assert info["dtype"] == (kDLFloat, 64, 1) and info["data"] == a.ctypes.data
    cap = a.__dlpack__()
    pointer, deleter, name = consume_capsule(cap)
    assert name == NAME_LEGACY and capsule_name(cap) == NAME_USED_LEGACY
    release(pointer, deleter)


# --------------------------------------------------------------------------------------------
# What __dlpack__ returns.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "producer_cls",
    [NoneProducer, IntProducer, NotACapsuleProducer],
    ids=["None", "int", "bytes"],
)
def test_dlpack_returning_a_non_capsule_is_type_error(producer_cls):
    producer = producer_cls()
    with pytest.raises(TypeError):
        dlbridge.from_dlpack(producer)


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
@pytest.mark.parametrize("name", [b"not_a_tensor", b"dltensor_v2", b"DLTENSOR"])
@pytest.mark.parametrize("via", ["capsule", "producer"])
def test_wrong_capsule_name_is_value_error(via, name, versioned):
    rec = make_managed((2, 3), versioned=versioned)
    obj = rec.capsule(name) if via == "capsule" else OneTensorProducer(rec, name=name)
    with pytest.raises(ValueError):
        dlbridge.from_dlpack(obj)
    if via == "capsule":
        assert capsule_name(obj) == name  # not renamed: the capsule still owns the tensor
        assert rec.deleter_calls == 0
    # (via a producer, dlbridge dropped the only reference: the destructor already ran)
    del obj
    collect()
    assert rec.deleter_calls == 1  # freed by the capsule destructor


def test_capsule_without_name_is_value_error():
    rec = make_managed((2, 3))
    cap = rec.capsule(NULL_NAME)
    assert capsule_name(cap) is None
    with pytest.raises(ValueError):
        dlbridge.from_dlpack(cap)
    assert rec.deleter_calls == 0
    del cap
    collect()
    assert rec.deleter_calls == 1  # the (spec-following) destructor frees it


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_used_capsule_is_value_error_and_not_released(versioned):
    # A capsule someone else already consumed: dlbridge must refuse it and leave the tensor to
    # its owner (the destructor does nothing for used_* names).
    rec = make_managed((2, 3), versioned=versioned)
    used = NAME_USED_VERSIONED if versioned else NAME_USED_LEGACY
    cap = rec.capsule(used)
    with pytest.raises(ValueError):
        dlbridge.from_dlpack(cap)
    producer = OneTensorProducer(rec, name=used)
    with pytest.raises(ValueError):
        dlbridge.from_dlpack(producer)
    del cap, producer
    collect()
    assert rec.deleter_calls == 0
    rec.call_deleter()  # the "previous consumer" releases it
    assert rec.deleter_calls == 1


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_consumed_capsule_twice(versioned):
    rec = make_managed((2, 3), versioned=versioned)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    with pytest.raises(ValueError):
        dlbridge.from_dlpack(cap)
    del cap
    collect()
    assert rec.deleter_calls == 0
    del t
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Versions.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("minor", [0, 5])
@pytest.mark.parametrize("via", ["capsule", "producer"])
def test_major_version_2_is_buffer_error(via, minor):
    # Every field after `deleter` is poisoned (ndim 2**30, shape at address 8, data at 8, a
    # nonsense dtype): a consumer that reads anything but version and deleter crashes or
    # reports the wrong field.
    rec = make_major2(minor=minor)
    obj = rec.capsule() if via == "capsule" else OneTensorProducer(rec)
    err = _import_fails(obj, BufferError, "version", f"2.{minor}")
    assert "shape" not in str(err) and "ndim" not in str(err)
    del obj, err
    collect()
    assert rec.deleter_calls == 1
    assert rec.wrong_pointer_deleter_calls == []


def test_major_version_0_in_versioned_struct_is_buffer_error():
    rec = make_managed((2, 3), version=(0, 9))
    cap = rec.capsule()
    _import_fails(cap, BufferError, "version", "0.9")
    del cap
    collect()
    assert rec.deleter_calls == 1


def test_major_version_2_with_null_deleter_does_not_crash():
    rec = make_major2(deleter=False)
    cap = rec.capsule()
    _import_fails(cap, BufferError, "version")
    del cap
    collect()
    assert rec.deleter_calls == 0


@pytest.mark.parametrize("version", [(1, 0), (1, 1), (1, 2), (1, 3), (1, 7), (1, 255)])
def test_any_minor_of_major_1_is_accepted(version):
    rec = make_managed((2, 3), "int16", version=version)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.version == version
    assert t.shape == (2, 3)
    del t, cap
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Malformed descriptors: the message names the field and the value.
# --------------------------------------------------------------------------------------------


BAD_DESCRIPTORS = [
    ("negative-extent", {"shape": (2, -3)}, ["DLTensor.shape[1] = -3"]),
    ("negative-extent-dim0", {"shape": (-1,)}, ["DLTensor.shape[0] = -1"]),
    ("null-shape", {"shape": (2, 3), "shape_null": True}, ["DLTensor.shape", "NULL"]),
    ("null-data-with-elements", {"shape": (2, 3), "data": None}, ["DLTensor.data", "NULL"]),
    ("negative-ndim", {"shape": (2,), "ndim": -1}, ["DLTensor.ndim = -1"]),
    ("huge-ndim", {"shape": (2,), "ndim": 5000}, ["DLTensor.ndim = 5000"]),
    (
        "count-overflow",
        {"shape": (2**62, 2**62), "strides": (1, 1), "buffer_bytes": 64},
        ["DLTensor.shape[1]"],
    ),
    ("zero-bits", {"dtype": (kDLFloat, 0, 1)}, ["DLTensor.dtype"]),
    ("zero-lanes", {"dtype": (kDLFloat, 32, 0)}, ["DLTensor.dtype"]),
    ("float8-with-16-bits", {"dtype": (kDLFloat8_e4m3fn, 16, 1)}, ["DLTensor.dtype"]),
    ("bfloat-with-32-bits", {"dtype": (kDLBfloat, 32, 1)}, ["DLTensor.dtype"]),
    (
        "stride-overflow",
        {"shape": (4,), "strides": (2**62,), "buffer_bytes": 64},
        ["DLTensor.strides[0]"],
    ),
    (
        "address-overflow",
        {"shape": (4,), "data": 2**64 - 8, "byte_offset": 64},
        ["DLTensor.data", "DLTensor.byte_offset"],
    ),
]


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
@pytest.mark.parametrize(
    ("kwargs", "fragments"), [c[1:] for c in BAD_DESCRIPTORS], ids=[c[0] for c in BAD_DESCRIPTORS]
)
def test_malformed_descriptor_is_buffer_error(kwargs, fragments, versioned):
    rec = make_managed(**{"dtype": "float32", **kwargs}, versioned=versioned)
    cap = rec.capsule()
    _import_fails(cap, BufferError, *fragments)
    # A failed import leaves the name alone so that the destructor frees the tensor.
    assert capsule_name(cap) == (NAME_VERSIONED if versioned else NAME_LEGACY)
    del cap
    collect()
    assert rec.deleter_calls == 1
    assert rec.destructor_seen == [NAME_VERSIONED if versioned else NAME_LEGACY]
    # The same struct again, through a producer object this time (a second capsule).
    producer = OneTensorProducer(rec)
    _import_fails(producer, BufferError, *fragments)
    del producer
    collect()
    assert rec.deleter_calls == 2
    assert rec.wrong_pointer_deleter_calls == []


def test_each_malformed_import_calls_deleter_exactly_once():
    for _, kwargs, fragments in BAD_DESCRIPTORS:
        rec = make_managed(**{"dtype": "float32", **kwargs})
        cap = rec.capsule()
        _import_fails(cap, BufferError, *fragments)
        del cap
        collect()
        assert rec.deleter_calls == 1, kwargs


def test_negative_extent_message_exact():
    rec = make_managed((2, -3))
    producer = OneTensorProducer(rec)
    err = _import_fails(producer, BufferError)
    assert "DLTensor.shape[1] = -3" in str(err)
    del producer, err
    collect()
    assert rec.deleter_calls == 1


def test_null_deleter_valid_tensor_imports_and_nothing_is_called():
    rec = make_managed((2, 3), "float32", deleter=False, values=struct.pack("<6f", *range(6)))
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert np.asarray(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    del t, cap
    collect()
    assert rec.deleter_calls == 0
    # The destructor either ran and saw the used_ name, or dlbridge cleared it on import.
    assert rec.destructor_seen in ([], [NAME_USED_VERSIONED])


def test_null_deleter_malformed_tensor_no_crash():
    rec = make_managed((2, -3), deleter=False, versioned=False)
    cap = rec.capsule()
    _import_fails(cap, BufferError, "DLTensor.shape[1] = -3")
    del cap
    collect()
    assert rec.deleter_calls == 0
    assert rec.destructor_seen == [NAME_LEGACY]


# --------------------------------------------------------------------------------------------
# NULL strides, NULL shape for scalars, NULL data for empty tensors.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("version", [(1, 2), (1, 3)])
def test_null_strides_in_recent_version_is_buffer_error(version):
    rec = make_managed((2, 3), strides=None, version=version)
    cap = rec.capsule()
    _import_fails(cap, BufferError, "DLTensor.strides", "NULL", f"{version[0]}.{version[1]}")
    del cap
    collect()
    assert rec.deleter_calls == 1


@pytest.mark.parametrize(
    ("versioned", "version"),
    [(False, None), (True, (1, 0)), (True, (1, 1))],
    ids=["legacy", "v1.0", "v1.1"],
)
def test_null_strides_before_1_2_means_row_major(versioned, version):
    values = struct.pack("<6i", *range(6))
    rec = make_managed(
        (2, 3),
        "int32",
        strides=None,
        versioned=versioned,
        version=version or (1, 0),
        values=values,
    )
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.shape == (2, 3)
    assert t.strides == (3, 1)
    assert np.asarray(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    # Re-exported with explicit strides.
    assert read_capsule(t.__dlpack__(max_version=V13))["strides"] == (3, 1)
    del t, cap
    collect()
    assert rec.deleter_calls == 1


@pytest.mark.parametrize("versioned", [True, False], ids=["versioned", "legacy"])
def test_scalar_with_null_shape_and_strides_is_accepted(versioned):
    rec = make_managed(
        (),
        "float64",
        shape_null=True,
        strides=None,
        versioned=versioned,
        values=struct.pack("<d", 2.5),
    )
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.shape == () and t.strides == () and t.size == 1
    assert np.asarray(t)[()] == 2.5
    del t, cap
    collect()
    assert rec.deleter_calls == 1


@pytest.mark.parametrize("shape", [(0,), (3, 0), (0, 5, 2)])
def test_null_data_for_empty_tensor_is_accepted(shape):
    rec = make_managed(shape, "float32", data=None, strides=(7,) * len(shape))
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)  # any strides and a NULL data pointer are fine when empty
    assert t.shape == shape and t.size == 0 and t.nbytes == 0
    assert np.asarray(t).shape == shape
    del t, cap
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Legal oddities that must be accepted.
# --------------------------------------------------------------------------------------------


def test_unknown_flag_bits_are_ignored():
    rec = make_managed((2,), "int8", flags=(1 << 40) | (1 << 7))
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.readonly is False
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_size_one_dimension_with_any_stride():
    values = struct.pack("<8f", *range(8))
    rec = make_managed((2, 1, 4), "float32", strides=(4, 12345, 1), values=values)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.shape == (2, 1, 4)
    np.testing.assert_array_equal(np.asarray(t).reshape(8), np.arange(8, dtype=np.float32))
    np.testing.assert_array_equal(np.asarray(t.copy()).reshape(8), np.arange(8))
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_negative_strides_from_raw_producer():
    values = struct.pack("<6h", *range(6))
    # data points at the last element; strides walk backwards.
    rec0 = make_managed((6,), "int16", values=values)
    rec = make_managed((2, 3), "int16", strides=(-3, -1), data=rec0.data_address + 10)
    rec.keep.append(rec0)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.strides == (-3, -1)
    assert t.data_ptr == rec0.data_address + 10
    assert np.asarray(t).tolist() == [[5, 4, 3], [2, 1, 0]]
    assert np.asarray(t.copy()).tolist() == [[5, 4, 3], [2, 1, 0]]
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_zero_strides_broadcast():
    values = struct.pack("<3i", 7, 8, 9)
    rec = make_managed((4, 3), "int32", strides=(0, 1), values=values)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.strides == (0, 1)
    assert np.asarray(t).tolist() == [[7, 8, 9]] * 4
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_pinned_memory_device_from_dlpack_device_wins():
    # PyTorch reports CUDAHost in __dlpack_device__ for pinned memory but writes CPU into the
    # capsule; the __dlpack_device__ value wins.
    producer = RecordingProducer((4,), "float32", device=(kDLCUDAHost, 0))
    t = dlbridge.from_dlpack(producer)
    assert t.device == (3, 0)
    del t, producer
    collect()


def test_device_memory_called_host_memory_by_dlpack_device_is_refused():
    # The tensor says CUDA:0 while __dlpack_device__ says CPU: believing it would let typed
    # access read a device address from the CPU (issue 27). Only host memories are taken for
    # one another; the tensor is released once.
    record = make_managed((4,), "float32", device=(kDLCUDA, 0))
    producer = OneTensorProducer(record, device=(kDLCPU, 0))
    _import_fails(
        producer,
        BufferError,
        "__dlpack_device__() says CPU:0, but the tensor its __dlpack__() exported is on CUDA:0",
    )
    del producer
    collect()
    assert record.deleter_calls == 1


def test_read_only_flag_is_kept_and_refused_on_legacy_export():
    rec = make_managed((3,), "float32", flags=FLAG_READ_ONLY)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.readonly is True
    with pytest.raises(BufferError):
        t.__dlpack__()
    assert memoryview(t).readonly
    del t, cap
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Producers that raise, and the negotiation.
# --------------------------------------------------------------------------------------------


def test_buffer_error_from_producer_propagates_without_retry():
    producer = BufferErrorProducer("no can do: dtype unsupported")
    with pytest.raises(BufferError, match="no can do"):
        dlbridge.from_dlpack(producer)
    assert producer.calls == [{"max_version": V13}]


def test_type_error_for_every_call_propagates_after_retries():
    producer = AlwaysTypeErrorProducer()
    with pytest.raises(TypeError, match="refuses every call"):
        dlbridge.from_dlpack(producer)
    # First the full call, then retries without max_version (here: without any keyword).
    assert producer.calls[0] == {"max_version": V13}
    retries = producer.calls[1:]
    assert retries and all(call == {} for call in retries)
    assert len(retries) <= 2


@pytest.mark.parametrize("copy", [True, False])
def test_type_error_with_copy_retries_in_order(copy):
    producer = AlwaysTypeErrorProducer()
    with pytest.raises(TypeError, match="refuses every call"):
        dlbridge.from_dlpack(producer, copy=copy)
    # Full call, then without max_version; a last bare call is allowed only because dlbridge
    # then honours `copy` itself (see the OldProducer tests below).
    assert producer.calls[:2] == [{"max_version": V13, "copy": copy}, {"copy": copy}]
    assert producer.calls[2:] in ([], [{}])


def test_old_producer_with_copy_true_still_gives_a_private_copy():
    producer = OldProducer((3,), "int32", values=struct.pack("<3i", 7, 8, 9))
    t = dlbridge.from_dlpack(producer, copy=True)
    rec = producer.records[0]
    assert t.data_ptr != rec.data_address
    assert np.asarray(t).tolist() == [7, 8, 9]
    assert t.flags & FLAG_IS_COPIED
    del t
    collect()
    assert rec.deleter_calls == 1


def test_old_producer_with_copy_false_shares_memory():
    producer = OldProducer((3,), "int32")
    t = dlbridge.from_dlpack(producer, copy=False)
    rec = producer.records[0]
    assert t.data_ptr == rec.data_address
    del t
    collect()
    assert rec.deleter_calls == 1


def test_old_producer_without_max_version_parameter():
    producer = OldProducer((2, 3), "int32", values=struct.pack("<6i", *range(6)))
    t = dlbridge.from_dlpack(producer)
    assert t.version is None  # a legacy capsule
    assert np.asarray(t).tolist() == [[0, 1, 2], [3, 4, 5]]
    # The call with max_version failed in Python's argument binding; the retry succeeded.
    assert producer.calls == [{}]
    rec = producer.records[0]
    del t
    collect()
    assert rec.deleter_calls == 1


def test_oldest_producer_without_any_parameter():
    producer = OldestProducer((3,), "uint8", values=b"\x01\x02\x03")
    t = dlbridge.from_dlpack(producer)
    assert np.asarray(t).tolist() == [1, 2, 3]
    assert producer.calls == [{}]
    rec = producer.records[0]
    del t
    collect()
    assert rec.deleter_calls == 1


def test_producer_raising_type_error_on_max_version_only():
    producer = TypeErrorOnMaxVersionProducer((2,), "int64")
    t = dlbridge.from_dlpack(producer)
    assert producer.calls == [{"max_version": V13}, {}]
    assert t.version is None
    rec = producer.records[0]
    del t
    collect()
    assert rec.deleter_calls == 1


def test_negotiation_passes_only_needed_keywords():
    producer = RecordingProducer((2, 3), "float32")
    t = dlbridge.from_dlpack(producer)
    assert producer.calls == [{"max_version": V13}]  # no stream, dl_device or copy for CPU
    assert t.version == (1, 3)
    del t


@pytest.mark.parametrize("copy", [True, False])
def test_negotiation_passes_copy(copy):
    producer = RecordingProducer((4,), "int32")
    t = dlbridge.from_dlpack(producer, copy=copy)
    assert producer.calls == [{"max_version": V13, "copy": copy}]
    del t


def test_negotiation_device_same_as_producer_is_not_passed():
    producer = RecordingProducer((4,), "int32")
    t = dlbridge.from_dlpack(producer, device=(1, 0))
    assert producer.calls == [{"max_version": V13}]
    del t


def test_negotiation_device_passed_when_it_differs():
    producer = RecordingProducer((4,), "int32", device=(kDLCUDAManaged, 0))
    t = dlbridge.from_dlpack(producer, device=(1, 0))
    assert producer.calls == [{"max_version": V13, "dl_device": (1, 0)}]
    assert t.device == (1, 0)
    del t


def test_negotiation_producer_refusing_the_device_raises_buffer_error():
    producer = RecordingProducer((4,), "int32", refuse_device=True)
    with pytest.raises(BufferError):
        dlbridge.from_dlpack(producer, device=(2, 0))
    assert producer.calls[0]["dl_device"] == (2, 0)


def test_producer_ignoring_the_requested_device_is_buffer_error():
    # Asked for dl_device=CPU, the producer hands over its device tensor anyway: refused with
    # both devices named, and the tensor released once (never read: it is device memory).
    # A CUDA tensor would be copied to the host here (through the CUDA driver), which
    # copy=False forbids; a ROCm tensor cannot be.
    for device, keywords, message in [
        (
            (kDLCUDA, 0),
            {"copy": False},
            "copy=False, but the producer gave a tensor on CUDA:0 where the CPU was asked for",
        ),
        ((kDLROCM, 0), {}, "on ROCM:0, not on the requested device CPU:0"),
    ]:
        record = make_managed((4,), "float32", device=device, data=0x1000)
        producer = OneTensorProducer(record, device=device)
        with pytest.raises(BufferError, match=message):
            dlbridge.from_dlpack(producer, device=(kDLCPU, 0), **keywords)
        assert producer.calls[0]["dl_device"] == (kDLCPU, 0)
        del producer
        collect()
        assert record.deleter_calls == 1


def test_copy_true_with_producer_that_ignores_it_still_copies():
    values = struct.pack("<4i", 1, 2, 3, 4)
    producer = RecordingProducer((4,), "int32", values=values)
    t = dlbridge.from_dlpack(producer, copy=True)
    assert t.data_ptr != producer.buffer_record.data_address
    assert np.asarray(t).tolist() == [1, 2, 3, 4]
    assert producer.calls == [{"max_version": V13, "copy": True}]


def test_copy_true_with_producer_that_copies_is_not_copied_twice():
    values = struct.pack("<4i", 1, 2, 3, 4)
    producer = RecordingProducer((4,), "int32", values=values, honour_copy=True)
    t = dlbridge.from_dlpack(producer, copy=True)
    copied = producer.records[0]  # the fresh buffer the producer made
    assert t.data_ptr == copied.data_address
    assert t.flags & FLAG_IS_COPIED
    assert np.asarray(t).tolist() == [1, 2, 3, 4]


def test_paddle_style_device_id_none():
    producer = RecordingProducer((3,), "float32", device=(1, None))
    t = dlbridge.from_dlpack(producer)
    assert t.device == (1, 0)
    assert producer.calls == [{"max_version": V13}]
    del t


def test_int_enum_device():
    producer = RecordingProducer((3,), "float32", device=(CPUDeviceType.kDLCPU, 0))
    t = dlbridge.from_dlpack(producer)
    assert t.device == (1, 0)
    assert type(t.device[0]) is int
    del t


class _DeviceType(enum.IntEnum):
    CPU = 1


class _DeviceId(enum.IntEnum):
    FIRST = 0


def test_int_enum_device_id():
    producer = RecordingProducer((3,), "float32", device=(_DeviceType.CPU, _DeviceId.FIRST))
    t = dlbridge.from_dlpack(producer)
    assert t.device == (1, 0)
    del t


# --------------------------------------------------------------------------------------------
# Ownership across a chain of consumers.
# --------------------------------------------------------------------------------------------


def test_deleter_runs_once_after_reexport_to_numpy():
    values = struct.pack("<4d", 1.0, 2.0, 3.0, 4.0)
    rec = make_managed((4,), "float64", values=values)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    a = np.from_dlpack(t)
    assert a.ctypes.data == rec.data_address
    del t, cap
    collect()
    assert rec.deleter_calls == 0  # numpy's array still uses the memory
    assert a.tolist() == [1.0, 2.0, 3.0, 4.0]
    del a
    collect()
    assert rec.deleter_calls == 1


def test_many_imports_each_release_once():
    records = [make_managed((3,), "uint8", versioned=bool(i % 2)) for i in range(50)]
    tensors = [dlbridge.from_dlpack(OneTensorProducer(r)) for r in records]
    assert all(r.deleter_calls == 0 for r in records)
    del tensors
    collect()
    assert [r.deleter_calls for r in records] == [1] * 50


@pytest.mark.parametrize("where", ["host-copy", "cuda-to-host"])
def test_a_copy_no_memory_holds_is_memory_error(where):
    # A petabyte of float32: valid, shared without a copy, and a copy of it is a MemoryError.
    # On the host, a broadcast layout over one element (its copy is compact); on a CUDA device,
    # a compact one at a device address (never read: the host copy's buffer comes first).
    # Found by the capsule fuzzer of issue 33: the CUDA tensor's host copy aborted the
    # interpreter in the allocator.
    if where == "host-copy":
        shape, keywords = (2**40, 2**8), {"copy": True}
        record = make_managed(shape, "float32", strides=(0, 0))
    else:
        shape, keywords = (2**48,), {"device": (kDLCPU, 0)}
        record = make_managed(shape, "float32", device=(kDLCUDA, 0), data=0x7F0000000000)
    assert dlbridge.from_dlpack(record.capsule()).shape == shape
    with pytest.raises(MemoryError, match="1125899906842624 bytes could not be allocated"):
        dlbridge.from_dlpack(record.capsule(), **keywords)
    collect()
    assert record.deleter_calls == 2


def test_values_survive_until_tensor_dies():
    values = bytes(range(16))
    rec = make_managed((16,), "uint8", values=values)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    del cap
    collect()
    assert read_bytes(t.data_ptr, 16) == values
    del t
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Vector lanes, sub-byte types, unknown devices, odd __dlpack_device__ answers.
# --------------------------------------------------------------------------------------------


def test_vector_lanes_dtype():
    rec = make_managed((3,), (kDLFloat, 32, 4), values=struct.pack("<12f", *range(12)))
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.dtype == "float32x4"
    assert t.nbytes == 48 and t.size == 3
    assert memoryview(t).itemsize == 16
    assert read_bytes(t.copy().data_ptr, 48) == struct.pack("<12f", *range(12))
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_padded_flag_on_whole_byte_type_is_buffer_error():
    rec = make_managed((3,), "float32", flags=FLAG_IS_SUBBYTE_TYPE_PADDED)
    cap = rec.capsule()
    _import_fails(cap, BufferError, "IS_SUBBYTE_TYPE_PADDED", "DLTensor.dtype")
    del cap
    collect()
    assert rec.deleter_calls == 1


@pytest.mark.parametrize(("n", "packed_bytes"), [(4, 2), (5, 3), (1, 1), (0, 0)])
def test_packed_float4_sizes(n, packed_bytes):
    rec = make_managed((n,), (kDLFloat4_e2m1fn, 4, 1), values=bytes(range(8)))
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.dtype == "float4_e2m1fn"
    assert t.nbytes == packed_bytes  # two elements per byte, rounded up
    c = t.copy()
    assert c.nbytes == packed_bytes
    if packed_bytes > 1:
        # whole bytes are copied exactly (the last, half-used byte may differ in its top bits)
        assert read_bytes(c.data_ptr, packed_bytes - 1) == bytes(range(packed_bytes - 1))
    del t, c, cap
    collect()
    assert rec.deleter_calls == 1


NINE_BOOLS = bytes([1, 0, 0, 1, 0, 0, 1, 1, 0])


@pytest.mark.parametrize(
    "dtype", [(kDLUInt, 1, 1), (kDLUInt, 4, 1), (kDLInt, 2, 1), (kDLBool, 1, 1)]
)
def test_legacy_sub_byte_integers_take_a_byte_per_element(dtype):
    """A legacy capsule has no padded flag: its sub-byte integers (MXNet's bool is uint1) are
    read one byte per element, on every path: size, copy, re-export either way."""
    rec = make_managed((9,), dtype, versioned=False, values=NINE_BOOLS, buffer_bytes=9)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert (t.nbytes, t.flags) == (9, FLAG_IS_SUBBYTE_TYPE_PADDED)
    c = t.copy()
    assert (c.nbytes, c.flags) == (9, FLAG_IS_COPIED | FLAG_IS_SUBBYTE_TYPE_PADDED)
    assert read_bytes(c.data_ptr, 9) == NINE_BOOLS
    info = read_capsule(t.__dlpack__(max_version=V13))
    assert info["flags"] & FLAG_IS_SUBBYTE_TYPE_PADDED
    again = dlbridge.from_dlpack(t.__dlpack__())  # legacy again: still a byte each
    assert (again.nbytes, read_bytes(again.data_ptr, 9)) == (9, NINE_BOOLS)
    del t, c, again, cap
    collect()
    assert rec.deleter_calls == 1


def test_packed_sub_byte_integers_do_not_go_out_legacy():
    rec = make_managed((9,), (kDLUInt, 1, 1), values=b"\x49\x01")
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert (t.nbytes, t.flags) == (2, 0)  # versioned without the flag: packed
    assert read_bytes(t.copy().data_ptr, 2) == b"\x49\x01"
    with pytest.raises(BufferError, match="one byte per element"):
        t.__dlpack__()
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_legacy_sub_byte_vectors_of_no_whole_byte_are_refused():
    rec = make_managed((2,), (kDLUInt, 1, 3), versioned=False, buffer_bytes=8)
    cap = rec.capsule()
    _import_fails(cap, BufferError, "no agreed layout", "DLTensor.dtype")
    del cap
    collect()
    assert rec.deleter_calls == 1


def test_padded_float4():
    rec = make_managed(
        (4,),
        (kDLFloat4_e2m1fn, 4, 1),
        values=b"\x01\x02\x03\x04",
        flags=FLAG_IS_SUBBYTE_TYPE_PADDED,
    )
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.nbytes == 4  # one byte per element
    assert t.flags & FLAG_IS_SUBBYTE_TYPE_PADDED
    with pytest.raises(BufferError):
        t.__dlpack__()  # a legacy capsule cannot say "padded"
    info = read_capsule(t.__dlpack__(max_version=V13))
    assert info["flags"] & FLAG_IS_SUBBYTE_TYPE_PADDED
    c = t.copy()
    assert c.flags & FLAG_IS_SUBBYTE_TYPE_PADDED
    assert read_bytes(c.data_ptr, 4) == b"\x01\x02\x03\x04"
    del t, c, cap
    collect()
    assert rec.deleter_calls == 1


def test_unknown_device_type_is_held_but_never_read():
    rec = make_managed((3,), "float32", device=(99, 0), data=0x1000)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    assert t.device == (99, 0)
    with pytest.raises(BufferError, match=r"needs host memory; this tensor is on DeviceType\(99\)"):
        memoryview(t)
    with pytest.raises(BufferError):
        t.copy()
    del t, cap
    collect()
    assert rec.deleter_calls == 1


def test_dlpack_device_raising_propagates():
    class Raising(RecordingProducer):
        def __dlpack_device__(self):
            raise RuntimeError("no device for you")

    # `__dlpack__` is still asked (its refusal would be the answer: PyTorch's meta tensors
    # fail in `__dlpack_device__` but are refused by `__dlpack__` with BufferError); when it
    # exports all the same, the device's error is raised and the tensor released.
    producer = Raising()
    with pytest.raises(RuntimeError, match="no device for you"):
        dlbridge.from_dlpack(producer)
    assert producer.calls == [{"max_version": (1, 3)}]
    collect()
    assert [record.deleter_calls for record in producer.records] == [1]

    class RaisingAndRefusing(Raising):
        def __dlpack__(self, **kwargs):
            raise BufferError("cannot be exported")

    with pytest.raises(BufferError, match="cannot be exported"):
        dlbridge.from_dlpack(RaisingAndRefusing())


@pytest.mark.parametrize("answer", ["cpu", None, (1,), (1, 0, 0), ("1", 0)])
def test_dlpack_device_malformed_is_type_error(answer):
    class Odd(RecordingProducer):
        def __dlpack_device__(self):
            return answer

    producer = Odd()
    with pytest.raises(TypeError, match=r"expected a \(device_type, device_id\) tuple of ints"):
        dlbridge.from_dlpack(producer)


# --------------------------------------------------------------------------------------------
# Producers' deleters that fail, and producers that raise.
# --------------------------------------------------------------------------------------------


def _with_raising_deleter(record, calls):
    """Give `record` a deleter (Python, through ctypes) that records its call and raises."""

    @DELETER
    def raising(address):
        calls.append(address)
        raise RuntimeError("the producer's deleter failed")

    record.keep.append(raising)
    record.struct.deleter = raising
    return record


@pytest.mark.parametrize("how", ["imported", "refused"])
def test_a_deleter_that_raises_is_reported_and_runs_once(monkeypatch, how):
    # A deleter cannot raise into C: ctypes hands the exception to sys.unraisablehook, and
    # dlbridge goes on. Whether the import succeeded (the deleter runs when the tensor dies)
    # or was refused (it runs during the refusal), it runs once, and a refused import still
    # raises its own error, not the deleter's.
    unraisable = []
    monkeypatch.setattr("sys.unraisablehook", lambda report: unraisable.append(report.exc_value))
    calls: list = []
    shape = (2, 3) if how == "imported" else (2, -3)
    record = _with_raising_deleter(make_managed(shape), calls)
    producer = OneTensorProducer(record)
    if how == "imported":
        t = dlbridge.from_dlpack(producer)
        assert np.from_dlpack(t).shape == (2, 3)
        del t
    else:
        _import_fails(producer, BufferError, "DLTensor.shape[1] = -3")
    del producer
    collect()
    assert calls == [record.address]
    assert [type(e) for e in unraisable] == [RuntimeError]
    assert dlbridge.from_dlpack(np.arange(3)).shape == (3,)  # nothing left set


@pytest.mark.parametrize("error", [RuntimeError, KeyError, MemoryError, KeyboardInterrupt])
def test_dlpack_raising_anything_propagates_unchanged(error):
    class Raising(RecordingProducer):
        def __dlpack__(self, **kwargs):
            raise error("the producer failed")

    producer = Raising()
    with pytest.raises(error):
        dlbridge.from_dlpack(producer)


def test_the_values_dlpack_added_after_1_3_are_named_and_judged():
    # dmlc/dlpack#187-#189, on DLPack's main branch after the 1.3 tag: bcomplex32 (two
    # bfloat16s), TPU, TPUHost (host memory, as CUDAHost is) and Ascend.
    values = struct.pack("<4e", 1.0, -2.0, 0.5, 4.0)  # float16 bytes: placeholders only
    t = dlbridge.from_dlpack(make_managed((2,), (kDLBcomplex, 32, 1), values=values).capsule())
    assert t.dtype == "bcomplex32" and t.nbytes == 8
    # The buffer protocol has no type for it: its raw bits go out as uint32, as bfloat16's go
    # out as uint16. NumPy has none either, and refuses it (with its own RuntimeError).
    view = memoryview(t)
    assert (view.format, view.itemsize, view.shape) == ("I", 4, (2,))
    assert bytes(view) == values
    del view
    with pytest.raises(RuntimeError, match="Unsupported dtype"):
        np.from_dlpack(t)
    del t
    # TPU pinned host memory is host memory: read on the host as CPU memory is.
    host = make_managed(
        (4,), "int32", values=struct.pack("<4i", 1, 2, 3, 4), device=(kDLTPUHost, 0)
    )
    t = dlbridge.from_dlpack(host.capsule())
    assert t.device == (kDLTPUHost, 0) and "TPUHost:0" in repr(t)
    assert memoryview(t).tolist() == [1, 2, 3, 4]
    del t
    # TPU and Ascend memory is device memory: imported and named, never read on the host.
    for device_type, name in ((kDLTPU, "TPU"), (kDLAscend, "Ascend")):
        t = dlbridge.from_dlpack(make_managed((4,), "int32", device=(device_type, 1)).capsule())
        assert f"{name}:1" in repr(t)
        with pytest.raises((BufferError, TypeError), match=f"{name}:1"):
            memoryview(t)
        del t
    collect()
