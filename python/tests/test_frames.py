"""dlbridge.distributed's frames without a cluster: every dtype and the catalogue's tensors
through serialize/deserialize (read-only bytes as Ray's object store gives them, writable
bytes as Dask's comms give them), what each kind becomes (view or copy), device tensors
refused, user types, and the header as an input boundary: every field corrupted, frames
truncated, random corruption (hypothesis) giving a typed error or the very tensor sent.
The clusters' tests are in python/tests/distributed.
"""

from __future__ import annotations

import copy
import ctypes
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import dlbridge
import dlbridge.distributed as dd
from _frameworks import import_framework
from _helpers import IS_COPIED, DlpackOnly, np_address, row_major_strides
from conftest import UNDER_ASAN
from dlbridge.check import catalogue
from dlbridge.check.abi import kDLCUDA, kDLROCM
from dlbridge.check.records import make_managed
from test_pickle import DTYPES, SUB_BYTE, buffer_address, hand_built

READ_ONLY = dlbridge.FLAG_READ_ONLY


def contents(x) -> tuple:
    """What a tensor holds, as dlbridge reads it: dtype, shape and compact bytes."""
    t = x if isinstance(x, dlbridge.Tensor) else dlbridge.from_dlpack(x)
    compact = t.copy()
    return t.dtype, t.shape, ctypes.string_at(compact.data_ptr, compact.nbytes)


def received(frames, read_only: bool) -> list:
    """The frames as a transport hands them back: read-only `bytes` (Ray's object store is
    read-only shared memory) or a writable `bytearray` (Dask's comms)."""
    raw = frames[0].raw()
    return [bytes(raw) if read_only else bytearray(raw)]


def through(x, read_only: bool):
    header, frames = dd.serialize(x)
    header = pickle.loads(pickle.dumps(header))
    return dd.deserialize(header, received(frames, read_only))


def test_doctest_example_and_header_fields():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    header, frames = dd.serialize(a)
    assert header == {
        "format": "dlbridge.frame",
        "version": [1, 0],
        "dtype": "float32",
        "shape": [2, 3],
        "strides": [3, 1],
        "device": [1, 0],
        "flags": 0,
        "nbytes": 24,
        "kind": "numpy",
    }
    [buffer] = frames
    assert isinstance(buffer, pickle.PickleBuffer)
    assert buffer_address(buffer.raw()) == np_address(a)  # the sender does not copy


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only-bytes", "writable-bytes"])
@pytest.mark.parametrize(("name", "code_bits_lanes"), DTYPES, ids=[str(d[1]) for d in DTYPES])
def test_every_dtype_round_trips_as_a_dlbridge_tensor(name, code_bits_lanes, read_only):
    shape = (3, 5)
    padded = code_bits_lanes in SUB_BYTE and code_bits_lanes[1] != 1
    count = 15
    bits, lanes = code_bits_lanes[1], code_bits_lanes[2]
    nbytes = count if padded else (count * bits * lanes + 7) // 8
    data = bytes((7 * i + 3) % 256 for i in range(nbytes))
    if padded:
        data = bytes(b & ((1 << bits) - 1) for b in data)
    t = hand_built(shape, code_bits_lanes, data, padded=padded)
    u = through(t, read_only)
    assert isinstance(u, dlbridge.Tensor)
    assert contents(u) == contents(t)
    assert u.strides == row_major_strides(shape)
    assert (
        u.flags & dlbridge.FLAG_IS_SUBBYTE_TYPE_PADDED
        == t.flags & dlbridge.FLAG_IS_SUBBYTE_TYPE_PADDED
    )
    assert u.readonly == read_only
    rebuilt = dlbridge.explain(u)["rebuilt"]
    assert rebuilt["from"] == "frame" and rebuilt["shared"]


CATALOGUED = ["numpy", "torch", "jax", "dlbridge"]
#: The catalogue's kinds that are instances of a subclass of their framework's tensor type.
#: Tensors the receiving framework cannot rebuild as they were sent, which the sender
#: refuses, naming why: JAX 0.10 exports float4_e2m1fn and its from_dlpack fails on it ("PjRt
#: CPU buffers only support default layout"); PyTorch exports its int1..int7 and uint1..uint7
#: as int8 and uint8, which it would rebuild as torch.int8 and torch.uint8.
NOT_REBUILDABLE = {
    "jax-float4_e2m1fn",
    *(f"torch-dtype_{sign}int{bits}" for sign in ("", "u") for bits in range(1, 8)),
}
SUBCLASSES = {"masked_array", "matrix", "recarray", "parameter", "parameter_no_grad"}


def catalogue_cases():
    # Under AddressSanitizer a C++ exception aborts the process (conftest.py): the catalogues
    # of PyTorch (whose construction probes dtypes that way) and JAX (whose backend throws one
    # while it starts) are not built, and their cases are marked where they are.
    return [
        pytest.param(
            kind,
            id=f"{framework}-{kind.name}",
            marks=[pytest.mark.cpp_exception] if framework in ("torch", "jax") else [],
        )
        for framework in CATALOGUED
        if not (UNDER_ASAN and framework in ("torch", "jax"))
        for kind in catalogue.kinds(framework)
    ]


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only-bytes", "writable-bytes"])
@pytest.mark.parametrize("kind", catalogue_cases())
def test_catalogue_round_trips_or_is_refused_as_dlbridge_refuses_it(kind, read_only):
    try:
        expected = contents(kind.make())
    except Exception as refusal:  # noqa: BLE001 - whatever dlbridge raises, serialize must
        with pytest.raises((type(refusal), dd.SubclassNotSent)):
            dd.serialize(kind.make())
        return
    x = kind.make()
    if kind.name in SUBCLASSES:
        # A subclass whose extra state DLPack would lose (a mask): not sent.
        with pytest.raises(dd.SubclassNotSent, match="but not its subclass"):
            dd.serialize(x)
        return
    if f"{kind.framework}-{kind.name}" in NOT_REBUILDABLE:
        with pytest.raises(TypeError, match=r"cannot make a .* from DLPack|would rebuild it as"):
            dd.serialize(x)
        return
    result = through(x, read_only)
    assert type(result) is type(x)
    assert contents(result) == expected


def test_numpy_array_over_read_only_bytes_is_a_read_only_view():
    a = np.arange(12.0).reshape(3, 4)
    header, frames = dd.serialize(a)
    [data] = received(frames, read_only=True)
    result = dd.deserialize(header, [data])
    assert not result.flags.writeable and np_address(result) == buffer_address(data)
    with pytest.raises(ValueError, match="read-only"):
        result[0, 0] = 1


def test_numpy_array_over_writable_bytes_is_a_writable_view():
    header, frames = dd.serialize(np.arange(4, dtype=np.int64))
    [data] = received(frames, read_only=False)
    result = dd.deserialize(header, [data])
    assert result.flags.writeable and np_address(result) == buffer_address(data)


def test_read_only_array_stays_read_only_over_writable_bytes():
    a = np.arange(4.0)
    a.flags.writeable = False
    result = through(a, read_only=False)
    assert not result.flags.writeable


def test_torch_over_read_only_bytes_is_one_copy_and_over_writable_bytes_a_view():
    torch = import_framework("torch", "torch")
    x = torch.arange(8, dtype=torch.bfloat16)
    header, frames = dd.serialize(x)
    frozen = bytes(frames[0].raw())
    copied = dd.deserialize(header, [frozen])
    assert copied.data_ptr() != buffer_address(frozen)
    copied += 1  # its own memory: the transport's bytes are untouched
    assert frozen == bytes(frames[0].raw())
    writable = bytearray(frames[0].raw())
    shared = dd.deserialize(header, [writable])
    assert shared.data_ptr() == buffer_address(writable)
    assert torch.equal(shared, x)


def test_strided_tensor_is_compacted_once_on_the_sender():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, ::-3].T
    header, frames = dd.serialize(a)
    assert header["strides"] == list(row_major_strides(a.shape))
    assert frames[0].raw().nbytes == a.nbytes
    np.testing.assert_array_equal(through(a, True), a)


@pytest.mark.parametrize("shape", [(), (0,), (3, 0), (1,) * 32])
def test_zero_size_0d_and_32_dims(shape):
    a = np.ones(shape, dtype=np.float16)
    result = through(a, True)
    assert result.shape == a.shape and result.dtype == a.dtype
    np.testing.assert_array_equal(result, a)


def test_misaligned_bytes_are_copied_and_explain_says_so():
    t = dlbridge.arange(4, "float64")
    header, frames = dd.serialize(t)
    backing = bytearray(33)
    start = (-buffer_address(backing)) % 8 + 1
    view = memoryview(backing)[start : start + 32]
    view[:] = frames[0].raw()
    u = dd.deserialize(header, [view.toreadonly()])
    assert u.flags & IS_COPIED and u.data_ptr % 8 == 0
    assert "not aligned for float64" in dlbridge.explain(u)["rebuilt"]["reason"]
    np.testing.assert_array_equal(np.from_dlpack(u), [0, 1, 2, 3])
    del view


@pytest.mark.parametrize("device", [kDLCUDA, kDLROCM], ids=["cuda", "rocm"])
def test_device_tensor_is_refused_naming_the_device(device):
    record = make_managed((4,), "float32", device=(device, 0), data=0x1000)
    t = dlbridge.from_dlpack(record.capsule())
    name = {kDLCUDA: "CUDA", kDLROCM: "ROCM"}[device]
    with pytest.raises(TypeError, match=f"cannot send this dlbridge.Tensor: .* on {name}:0"):
        dd.serialize(t)


class Grid(DlpackOnly):
    """A user's tensor type: a DLPack producer dlbridge.distributed does not know."""


def test_user_type_round_trips_through_its_tensor_type():
    grid_type = dd.TensorType("grid", Grid, lambda t: Grid(np.from_dlpack(t)), True)
    assert dd.register(grid_type, ray=False, dask=True) == ["grid"]
    try:
        header, frames = dd.serialize(Grid(np.arange(5)))
        assert header["kind"] == "grid"
        result = dd.deserialize(header, received(frames, True))
        assert isinstance(result, Grid)
        np.testing.assert_array_equal(result.array, np.arange(5))
    finally:
        del dd._REGISTERED["grid"]
    # An unknown producer without a registration comes back as a dlbridge.Tensor.
    header, frames = dd.serialize(Grid(np.arange(3)))
    assert header["kind"] == "dlbridge"
    # A kind the receiver does not know is a clear error.
    header["kind"] = "grid"
    with pytest.raises(KeyError, match="no tensor type of kind 'grid'"):
        dd.deserialize(header, received(frames, True))


def test_register_refuses_unknown_names_and_classes():
    with pytest.raises(ValueError, match="not 'mxnet'"):
        dd.register("mxnet", ray=False, dask=True)
    with pytest.raises(ValueError, match="does not know how to rebuild Grid"):
        dd.register(Grid, ray=False, dask=True)
    with pytest.raises(RuntimeError, match="neither Ray nor Dask"):
        dd.register(ray=False, dask=False)


# -- the header as an input boundary -----------------------------------------------------------


def good_frame():
    header, frames = dd.serialize(np.arange(6, dtype=np.int32).reshape(2, 3))
    return header, bytes(frames[0].raw())


@pytest.mark.parametrize(
    ("field", "value", "error", "message"),
    [
        ("format", "numpy.frame", ValueError, "'format' must be \"dlbridge.frame\""),
        ("format", 7, TypeError, "'format' must be a str, got int 7"),
        ("version", [2, 0], ValueError, r"'version' is \[2, 0\]: this dlbridge reads version 1"),
        ("version", "1.0", TypeError, "'version' must be a list"),
        ("version", [1], ValueError, r"'version' is \[1\]"),
        ("dtype", "float33", ValueError, "'dtype' is \"float33\""),
        ("dtype", ["float32"], TypeError, "'dtype' must be a dtype name"),
        ("shape", [2, -3], ValueError, r"'shape' is \[2, -3\]: extents must be >= 0"),
        ("shape", [1] * 1025, ValueError, "'shape' has 1025 dimensions, at most 1024"),
        ("shape", "23", TypeError, "'shape' must be a list of ints, got str"),
        ("shape", [2, 3.5], TypeError, "'shape' must be a list of ints"),
        ("shape", [3, 2], ValueError, r"'strides' is \[3, 1\], not the row-major strides"),
        ("shape", [2**62, 1], ValueError, "would not fit in memory"),
        ("strides", [1, 2], ValueError, r"'strides' is \[1, 2\], not the row-major"),
        ("strides", [3], ValueError, r"'strides' is \[3\]"),
        ("device", [2, 0], ValueError, r"'device' is \[2, 0\]: this dlbridge reads frames of host"),
        ("device", [1, 1], ValueError, r"'device' is \[1, 1\]"),
        ("device", [1], ValueError, r"'device' must be \[device_type, device_id\]"),
        ("flags", -1, TypeError, "'flags' must be an int >= 0, got int -1"),
        ("flags", 4, ValueError, "IS_SUBBYTE_TYPE_PADDED is set for int32"),
        ("nbytes", 23, ValueError, "'nbytes' is 23, but a int32 tensor of shape"),
        ("nbytes", None, TypeError, "'nbytes' must be an int >= 0, got NoneType"),
        ("kind", 3, TypeError, "'kind' must be a str, got 3"),
        ("kind", "mxnet", KeyError, "no tensor type of kind 'mxnet'"),
    ],
)
def test_corrupted_header_field_is_a_clear_error(field, value, error, message):
    header, data = good_frame()
    header[field] = value
    if field == "shape" and value == [2**62, 1]:
        header["strides"] = [1, 1]
    with pytest.raises(error, match=message):
        dd.deserialize(header, [data])


@pytest.mark.parametrize(
    "field", ["format", "version", "dtype", "shape", "strides", "device", "flags", "nbytes"]
)
def test_missing_header_field_is_named(field):
    header, data = good_frame()
    del header[field]
    with pytest.raises(ValueError, match=f"has no field '{field}'"):
        dd.deserialize(header, [data])


def test_unknown_fields_and_flag_bits_are_ignored():
    header, data = good_frame()
    header["future"] = {"anything": 1}
    header["version"] = [1, 7]
    header["flags"] = 1 << 40 | dlbridge.FLAG_IS_COPIED
    np.testing.assert_array_equal(dd.deserialize(header, [data]), np.arange(6).reshape(2, 3))


@pytest.mark.parametrize("cut", [0, 1, 23])
def test_truncated_or_overlong_frame_is_refused(cut):
    header, data = good_frame()
    with pytest.raises(ValueError, match=f"data holds {cut} bytes, its header says 24"):
        dd.deserialize(header, [data[:cut]])
    with pytest.raises(ValueError, match="data holds 25 bytes"):
        dd.deserialize(header, [data + b"!"])


@pytest.mark.parametrize(
    ("header", "frames", "error", "message"),
    [
        (["not", "a", "dict"], [b""], TypeError, "header must be a dict, got list"),
        (None, [b""], TypeError, "header must be a dict, got NoneType"),
        ("good", b"abc", TypeError, "a list of one bytes-like object, got bytes"),
        ("good", [], ValueError, "one buffer of bytes, got 0"),
        ("good", [b"", b""], ValueError, "one buffer of bytes, got 2"),
        ("good", [42], TypeError, "must be a bytes-like object"),
        ("good", ["x" * 24], TypeError, "must be a bytes-like object"),
    ],
)
def test_malformed_frames_are_clear_errors(header, frames, error, message):
    if header == "good":
        header = good_frame()[0]
    with pytest.raises(error, match=message):
        dd.deserialize(header, frames)


VALUES = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.text(max_size=20),
    st.lists(st.integers(min_value=-(2**65), max_value=2**65), max_size=70),
    st.sampled_from(
        [
            "float32",
            "bfloat16",
            "int4",
            "float4_e2m1fn",
            "dlbridge.frame",
            "numpy",
            "torch",
            "dlbridge",
            "handle",
        ]
    ),
)


@settings(max_examples=400, deadline=None)
@given(
    changes=st.dictionaries(
        st.sampled_from(
            ["format", "version", "dtype", "shape", "strides", "device", "flags", "nbytes", "kind"]
        ),
        VALUES,
        max_size=4,
    ),
    cut=st.integers(min_value=-1, max_value=30),
    read_only=st.booleans(),
)
def test_random_corruption_gives_a_typed_error_or_the_tensor_the_header_describes(
    changes, cut, read_only
):
    header, data = good_frame()
    header.update(changes)
    if cut >= 0:
        data = data[:cut]
    frames = [data if read_only else bytearray(data)]
    try:
        result = dd.deserialize(header, frames)
    except (TypeError, ValueError, KeyError, OverflowError, BufferError):
        return
    # Accepted: the tensor reaches exactly the bytes given, with the header's dtype and shape.
    dtype, shape, content = contents(result)
    assert content == bytes(data) and len(content) == header["nbytes"]
    assert list(shape) == header["shape"] and dtype == header["dtype"]


def test_copy_module_and_pickle_of_a_rebuilt_tensor():
    u = through(dlbridge.arange(5, "int16"), True)
    assert not copy.copy(u).readonly
    v = pickle.loads(pickle.dumps(u, protocol=5))
    assert contents(v) == contents(u)


@pytest.mark.cpp_exception  # JAX's backend throws a C++ exception while it starts
@pytest.mark.parametrize("dtype", ["uint64", "int64", "float64", "complex128"])
def test_a_receiver_that_would_narrow_the_dtype_refuses_the_frame(dtype):
    # A sender whose JAX has jax_enable_x64 on ships 64-bit JAX arrays; a receiver whose JAX
    # has it off (the default) would rebuild them narrowed, their values cut. Found by the
    # atheris fuzzer (fuzz/python/rebuild.py): refused, saying how to keep them.
    jax = import_framework("jax", "jax")

    values = dlbridge.from_dlpack(np.array([2**40 + 5, 7], dtype=np.float64).astype(dtype))
    header, frames = dd.serialize(values)
    header["kind"] = "jax"
    # The receiver is this process, with JAX's default (another test file of the same process
    # may have turned 64-bit dtypes on): set for this test, then put back.
    enabled = jax.config.read("jax_enable_x64")
    jax.config.update("jax_enable_x64", False)
    try:
        with pytest.raises(TypeError, match=r"jax rebuilt a .* frame .* jax_enable_x64"):
            dd.deserialize(header, received(frames, read_only=True))
    finally:
        jax.config.update("jax_enable_x64", enabled)


def test_a_receiver_whose_framework_cannot_hold_the_dtype_refuses_with_a_type_error():
    # NumPy has no float8: its from_dlpack raises RuntimeError("Unsupported dtype in
    # DLTensor."), which reached the caller as it was. Found by fuzz/python/rebuild.py.
    header, frames = dd.serialize(dlbridge.zeros(3, "float8_e4m3fn"))
    header["kind"] = "numpy"
    with pytest.raises(
        TypeError, match=r"numpy cannot rebuild a float8_e4m3fn frame .*RuntimeError"
    ):
        dd.deserialize(header, received(frames, read_only=False))


@pytest.mark.parametrize("field", ["shape", "strides", "version", "device"])
@pytest.mark.parametrize("value", [b"", b"\x02\x03", bytearray(b"\x01"), range(2)])
def test_list_fields_are_lists_not_other_sequences_of_ints(field, value):
    # bytes is a sequence of ints in Python: b"" was read as the shape [] (found by
    # fuzz/python/rebuild.py). The format writes lists; anything else is refused.
    header, data = good_frame()
    header[field] = value
    with pytest.raises(TypeError, match=f"header field '{field}' must be a list"):
        dd.deserialize(header, [data])
