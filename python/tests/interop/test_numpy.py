"""NumPy <-> dlbridge.

NumPy 2.x facts these tests rely on (checked against numpy 2.4):
- exports bool, int8..int64, uint8..uint64, float16/32/64, complex64/128 (not longdouble,
  object, strings, datetimes, nor ml_dtypes' bfloat16/float8: BufferError);
- `__dlpack__` returns `dltensor_versioned` with version 1.0 for max_version >= (1, 0), and
  refuses read-only arrays on the legacy path (BufferError), flags them READ_ONLY otherwise;
- copy=True sets IS_COPIED; negative strides are exported as they are;
- `numpy.from_dlpack` always calls `__dlpack__(max_version=(1, 0), dl_device=..., copy=...)`
  with dl_device/copy passed explicitly (None when unset), imports the same dtypes it exports,
  and marks READ_ONLY imports non-writeable;
- `numpy.asarray` never uses DLPack (it goes through the buffer protocol).
"""

from __future__ import annotations

import gc
import weakref

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import (
    IS_COPIED,
    NUMPY_DTYPES,
    READ_ONLY,
    SHAPE_IDS,
    SHAPES,
    collect,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
    size_of,
)
from dlbridge.check.records import make_managed


def _np_source(shape, dtype):
    n = size_of(shape)
    return np.frombuffer(pattern_bytes(dtype, n), dtype=dtype).reshape(shape).copy()


# --------------------------------------------------------------------------------------------
# numpy -> dlbridge
# --------------------------------------------------------------------------------------------


def _import(a, route):
    """`dlbridge.from_dlpack` by the direct path (the array's struct read as it is; dlbridge's
    own export, version 1.3) or by the protocol (`copy=False` is no plain import, so it
    negotiates with `__dlpack__`: NumPy's export, version 1.0)."""
    if route == "direct":
        return dlbridge.from_dlpack(a)
    return dlbridge.from_dlpack(a, copy=False)


ROUTE_VERSION = {"direct": (1, 3), "protocol": (1, 0)}


@pytest.mark.parametrize("route", ["direct", "protocol"])
@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_numpy_to_dlbridge(shape, dtype, route):
    a = _np_source(shape, dtype)
    t = _import(a, route)
    assert t.shape == a.shape
    assert t.dtype == dtype
    assert t.ndim == a.ndim and t.size == a.size and t.nbytes == a.nbytes
    assert t.device == (1, 0)
    assert t.readonly is False
    assert t.version == ROUTE_VERSION[route]
    if a.size:
        assert t.strides == tuple(s // a.itemsize for s in a.strides)
        assert t.data_ptr == np_address(a)  # zero-copy
        assert read_bytes(t.data_ptr, t.nbytes) == a.tobytes()
    np.testing.assert_array_equal(np.asarray(t), a)


def test_numpy_write_seen_by_dlbridge_and_back():
    a = np.zeros((2, 3), dtype=np.float32)
    t = dlbridge.from_dlpack(a)
    a[1, 2] = 42.0
    assert np.asarray(t)[1, 2] == 42.0
    np.asarray(t)[0, 0] = -1.0  # writing through dlbridge's buffer is seen by numpy
    assert a[0, 0] == -1.0


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b.T,
        lambda b: b[::2],
        lambda b: b[:, 1::3],
        lambda b: b[::-1],
        lambda b: b[::-1, ::-2],
        lambda b: b[1:, 2:],
        lambda b: np.lib.stride_tricks.as_strided(b, shape=(3, 1, 4), strides=(48, 7 * 8, 8)),
    ],
    ids=[
        "transposed",
        "stepped-rows",
        "stepped-cols",
        "reversed",
        "reversed-both",
        "offset",
        "size1-odd-stride",
    ],
)
def test_numpy_views_to_dlbridge(make):
    base = np.arange(36, dtype=np.float64).reshape(6, 6)
    a = make(base)
    t = dlbridge.from_dlpack(a)
    assert t.shape == a.shape
    assert t.strides == tuple(s // 8 for s in a.strides)
    assert t.data_ptr == np_address(a)
    np.testing.assert_array_equal(np.asarray(t), a)
    np.testing.assert_array_equal(np.asarray(t.copy()), a)
    # Writes land in the base array.
    np.asarray(t)[(0,) * a.ndim] = -5.0
    assert a[(0,) * a.ndim] == -5.0


def test_numpy_broadcast_view_is_readonly_with_zero_strides():
    a = np.broadcast_to(np.arange(3.0), (4, 3))  # numpy makes this view read-only
    t = dlbridge.from_dlpack(a)
    assert t.strides == (0, 1)
    assert t.readonly is True
    np.testing.assert_array_equal(np.asarray(t), a)


def test_numpy_readonly_to_dlbridge():
    a = np.arange(6, dtype=np.int32)
    a.flags.writeable = False
    t = dlbridge.from_dlpack(a)
    assert t.readonly is True
    assert t.flags & READ_ONLY
    assert t.data_ptr == np_address(a)
    view = np.asarray(t)
    assert not view.flags.writeable
    assert memoryview(t).readonly


def test_numpy_copy_true():
    a = np.arange(6, dtype=np.int16)
    t = dlbridge.from_dlpack(a, copy=True)
    assert t.data_ptr != np_address(a)
    assert t.flags & IS_COPIED  # numpy sets IS_COPIED
    a[0] = 100
    assert np.asarray(t)[0] == 0


def test_numpy_copy_false():
    a = np.arange(6, dtype=np.int16)
    t = dlbridge.from_dlpack(a, copy=False)
    assert t.data_ptr == np_address(a)


@pytest.mark.parametrize("dtype", [np.longdouble, object, "U3", "datetime64[s]"])
def test_numpy_unexportable_dtype_buffer_error_propagates(dtype):
    a = np.zeros(2, dtype=dtype)
    with pytest.raises(BufferError):
        dlbridge.from_dlpack(a)


def test_numpy_zero_size_and_scalar():
    for a in (np.zeros((3, 0), np.float32), np.zeros(0, np.int8), np.array(3.5)):
        t = dlbridge.from_dlpack(a)
        assert t.shape == a.shape and t.size == a.size
        np.testing.assert_array_equal(np.asarray(t), a)


def test_numpy_source_deleted_first_keeps_memory_alive():
    a = np.arange(8, dtype=np.float32)
    ref = weakref.ref(a)
    rc = refcount(a)
    t = dlbridge.from_dlpack(a)
    assert refcount(a) > rc  # the capsule's manager holds the array
    del a
    gc.collect()
    assert ref() is not None
    assert np.asarray(t).tolist() == list(range(8))
    del t
    gc.collect()
    assert ref() is None


# --------------------------------------------------------------------------------------------
# dlbridge -> numpy
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", NUMPY_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_numpy(shape, dtype):
    t = rust_tensor_with_bytes(dlbridge, shape, dtype)
    a = np.from_dlpack(t)
    assert a.shape == shape
    assert a.dtype == np.dtype(dtype)
    assert a.flags.writeable
    if a.size:
        assert np_address(a) == t.data_ptr
    assert a.tobytes() == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_numpy_write_both_ways():
    t = dlbridge.zeros((3,), dtype="int64")
    a = np.from_dlpack(t)
    a[1] = 9
    assert np.asarray(t).tolist() == [0, 9, 0]
    np.asarray(t)[2] = 7
    assert a.tolist() == [0, 9, 7]


@pytest.mark.parametrize(
    "make",
    [
        lambda b: b.T,
        lambda b: b[::2, 1::2],
        lambda b: b[::-1],
        lambda b: b[:, ::-3],
    ],
    ids=["transposed", "stepped", "reversed", "reversed-stepped"],
)
def test_dlbridge_views_to_numpy(make):
    base = np.arange(30, dtype=np.int32).reshape(5, 6)
    view = make(base)
    t = dlbridge.from_dlpack(view)
    a = np.from_dlpack(t)
    assert a.shape == view.shape and a.strides == view.strides
    assert np_address(a) == np_address(view)
    np.testing.assert_array_equal(a, view)


def test_dlbridge_readonly_to_numpy():
    src = np.arange(4.0)
    src.flags.writeable = False
    t = dlbridge.from_dlpack(src)
    a = np.from_dlpack(t)  # numpy asks for a versioned capsule: READ_ONLY is carried
    assert not a.flags.writeable
    assert np_address(a) == np_address(src)


def test_dlbridge_to_numpy_copy_and_device():
    t = rust_tensor_with_bytes(dlbridge, (4,), "float32")
    c = np.from_dlpack(t, copy=True)
    assert np_address(c) != t.data_ptr
    assert c.tobytes() == read_bytes(t.data_ptr, 16)
    d = np.from_dlpack(t, device="cpu")
    assert np_address(d) == t.data_ptr
    s = np.from_dlpack(t, copy=False)
    assert np_address(s) == t.data_ptr


def test_numpy_array_outlives_dlbridge_tensor():
    t = dlbridge.arange(5, dtype="float64")
    a = np.from_dlpack(t)
    del t
    gc.collect()
    assert a.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_numpy_to_dlbridge_to_numpy_source_deleted_first():
    a = np.arange(6, dtype=np.uint16).reshape(2, 3)
    address = np_address(a)
    ref = weakref.ref(a)
    t = dlbridge.from_dlpack(a)
    del a
    b = np.from_dlpack(t)
    del t
    gc.collect()
    assert ref() is not None
    assert np_address(b) == address
    assert b.tolist() == [[0, 1, 2], [3, 4, 5]]
    del b
    gc.collect()
    assert ref() is None


def test_tensor_released_after_numpy_array_dies():
    t = dlbridge.arange(4)
    rc = refcount(t)
    a = np.from_dlpack(t)
    del a
    collect()
    assert refcount(t) == rc


def test_ctypes_legacy_tensor_through_dlbridge_to_numpy():
    rec = make_managed((2, 2), "float32", versioned=False)
    cap = rec.capsule()
    t = dlbridge.from_dlpack(cap)
    a = np.from_dlpack(t)
    assert np_address(a) == rec.data_address
    del t, cap, a
    collect()
    assert rec.deleter_calls == 1


# --------------------------------------------------------------------------------------------
# Random views (hypothesis): any slicing numpy can express survives the round trip.
# --------------------------------------------------------------------------------------------

hypothesis = import_framework("hypothesis", "hypothesis")
st = import_framework("hypothesis.strategies", "hypothesis")


@st.composite
def _views(draw):
    ndim = draw(st.integers(0, 4))
    shape = tuple(draw(st.lists(st.integers(0, 5), min_size=ndim, max_size=ndim)))
    dtype = draw(st.sampled_from(["int8", "uint16", "float32", "float64", "complex64"]))
    base = np.arange(size_of(shape), dtype=dtype).reshape(shape)
    index = []
    for extent in shape:
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        start = draw(st.integers(0, max(extent - 1, 0)))
        index.append(slice(start, None, step) if step > 0 else slice(None, None, step))
    view = base[tuple(index)] if index else base[...]  # (base[()] would be a scalar)
    if view.ndim >= 2 and draw(st.booleans()):
        view = view.swapaxes(0, view.ndim - 1)
    return view


@hypothesis.settings(max_examples=300, deadline=None, database=None)
@hypothesis.given(_views())
def test_random_views_round_trip(view):
    t = dlbridge.from_dlpack(view)
    assert t.shape == view.shape
    if view.size:
        assert t.strides == tuple(s // view.itemsize for s in view.strides)
        assert t.data_ptr == np_address(view)
    np.testing.assert_array_equal(np.asarray(t), view)
    np.testing.assert_array_equal(np.from_dlpack(t), view)
    c = t.copy()
    np.testing.assert_array_equal(np.asarray(c), view)
    if view.size:
        assert np.asarray(c).flags.c_contiguous


# --------------------------------------------------------------------------------------------
# The direct path (NumPy's struct read without __dlpack__) says exactly what __dlpack__ says,
# and leaves to __dlpack__ everything it does not take.
# --------------------------------------------------------------------------------------------


def _description(t):
    return (
        t.shape,
        t.strides if t.size else None,
        t.dtype,
        t.device,
        t.readonly,
        t.data_ptr if t.size else None,
    )


@hypothesis.settings(max_examples=300, deadline=None, database=None)
@hypothesis.given(_views(), st.booleans())
def test_direct_path_agrees_with_dlpack(view, read_only):
    if read_only:
        view.flags.writeable = False
    direct = dlbridge.from_dlpack(view)
    protocol = dlbridge.from_dlpack(view, copy=False)
    assert _description(direct) == _description(protocol)
    assert direct.version == (1, 3) and protocol.version == (1, 0)
    np.testing.assert_array_equal(np.asarray(direct), view)


def test_direct_path_keeps_the_array_alive():
    a = np.arange(6, dtype=np.float64)
    ref = weakref.ref(a)
    t = dlbridge.from_dlpack(a)
    del a
    gc.collect()
    assert ref() is not None
    assert list(np.asarray(t)) == [0, 1, 2, 3, 4, 5]
    del t
    gc.collect()
    assert ref() is None


class _Recorder(np.ndarray):
    """An ndarray subclass that records `__dlpack__` calls: subclasses are not read directly."""

    calls = 0

    def __dlpack__(self, **kwargs):
        type(self).calls += 1
        return super().__dlpack__(**kwargs)


def test_subclasses_go_through_dlpack():
    a = np.arange(4, dtype=np.int32).view(_Recorder)
    t = dlbridge.from_dlpack(a)
    assert _Recorder.calls == 1
    assert list(np.asarray(t)) == [0, 1, 2, 3]
    masked = np.ma.masked_array([1.0, 2.0], mask=[False, True])
    assert type(masked) is not np.ndarray
    dlbridge.from_dlpack(masked)  # masked arrays export their data, as NumPy's __dlpack__ does


@pytest.mark.parametrize(
    ("make", "error"),
    [
        (lambda: np.arange(4, dtype=">i4"), "byte order"),  # byte-swapped
        (lambda: np.zeros(3, dtype=np.longdouble), "DLPack"),
        (lambda: np.array(["a", "b"]), "DLPack"),
        (lambda: np.zeros(4, dtype="datetime64[s]"), "DLPack"),
        (lambda: np.zeros(4, dtype=[("x", "i4"), ("y", "f4")]), "DLPack"),
        (lambda: np.zeros(9, dtype=np.uint8)[1:].view(np.int32), None),  # misaligned: exported
    ],
)
def test_what_the_direct_path_leaves_to_dlpack(make, error):
    """Arrays the direct path does not take give NumPy's own answer: its error, or its export."""
    a = make()
    try:
        expected = a.__dlpack__()
    except (BufferError, TypeError) as e:
        with pytest.raises(type(e)):
            dlbridge.from_dlpack(a)
        return
    assert error is None
    del expected
    t = dlbridge.from_dlpack(a)
    np.testing.assert_array_equal(np.asarray(t), a)


def test_strides_not_in_whole_items_go_through_dlpack():
    """A view whose byte strides are not whole items (a field of a packed record) is left to
    __dlpack__, which refuses it."""
    records = np.zeros(4, dtype=[("a", "u1"), ("b", "<i4")])
    field = records["b"]  # stride 5 bytes, item size 4
    assert field.strides == (5,)
    with pytest.raises(BufferError):
        field.__dlpack__()
    with pytest.raises(BufferError):
        dlbridge.from_dlpack(field)
