"""Apache Arrow (pyarrow) <-> dlbridge.

pyarrow 26 facts these tests rely on:
- `pa.Array.__dlpack__` exports 1-D primitive arrays without nulls: int8..int64,
  uint8..uint64, float16/32/64 (bool is bit-packed: ArrowTypeError; strings, temporals:
  ArrowTypeError). Arrays are immutable: the versioned capsule carries READ_ONLY, but the
  legacy capsule is handed out all the same (pyarrow does not refuse read-only data there);
- `pa.Tensor.__dlpack__` exports n-D tensors with their strides, flags 0 (a numpy bool
  tensor is exported as uint8);
- ArrowTypeError is a TypeError subclass, so an array with nulls makes a consumer retry as
  with an old producer before the error propagates;
- `pa.Array.from_dlpack` (1-D, contiguous) and `pa.Tensor.from_dlpack` (n-D, strided, no
  negative strides: ArrowInvalid) call `__dlpack__(max_version=(1, 3), dl_device=None,
  copy=None)` and take objects only (no raw capsules); they import int8..int64, uint8..uint64
  and float16/32/64 only (no bool, complex, bfloat16, float8: ArrowInvalid);
  `Tensor.from_dlpack` keeps READ_ONLY (`is_mutable` False) and makes every zero-size
  tensor immutable; `pa.Tensor.__dlpack__` refuses the legacy path for immutable tensors
  (ArrowNotImplementedError);
- `pa.array(obj)` takes any object with `__arrow_c_array__` (the Arrow PyCapsule interface,
  pyarrow >= 14): a schema with the `arrow.fixed_shape_tensor` extension metadata becomes a
  `pa.FixedShapeTensorArray`; what it imports has immutable buffers, and `to_numpy()` /
  `to_numpy_ndarray()` give read-only views. dlbridge's `return_like` hands results to a pyarrow
  caller this way (the section "return_like: results back to pyarrow" below).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from _frameworks import import_framework

pa = import_framework("pyarrow", "pyarrow")

import dlbridge
from _helpers import (
    FLOAT_DTYPES,
    INTEGER_DTYPES,
    READ_ONLY,
    SHAPE_IDS,
    SHAPES,
    CountingDeleters,
    FakeDeviceTensor,
    HandsOver,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
    size_of,
)
from _kernels import kernels
from _semantics import every_path_test
from dlbridge.check.capsules import read_capsule

ARROW_DTYPES = [*INTEGER_DTYPES, *FLOAT_DTYPES]
ONE_D = [(0,), (1,), (7,)]


def _values(name, n):
    return np.frombuffer(pattern_bytes(name, n), dtype=name).copy()


def _array_address(arr) -> int:
    return arr.buffers()[1].address + arr.offset * arr.type.bit_width // 8


def _tensor_address(x) -> int | None:
    # (pa.Tensor refuses the legacy path for immutable tensors, so ask for a versioned one)
    info = read_capsule(x.__dlpack__(max_version=(1, 3)))
    return None if info["data"] is None else info["data"] + info["byte_offset"]


# --------------------------------------------------------------------------------------------
# Arrow -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ARROW_DTYPES)
@pytest.mark.parametrize("n", [0, 1, 7])
def test_arrow_array_to_dlbridge(name, n):
    arr = pa.array(_values(name, n))
    t = dlbridge.from_dlpack(arr)
    assert t.dtype == name
    assert t.shape == (n,)
    assert t.readonly is True  # Arrow memory is immutable: READ_ONLY on the versioned path
    assert t.flags & READ_ONLY
    assert t.version is not None
    if n:
        assert t.data_ptr == _array_address(arr)
        assert read_bytes(t.data_ptr, t.nbytes) == arr.to_numpy().tobytes()
        assert not np.asarray(t).flags.writeable


def test_arrow_sliced_array_to_dlbridge():
    arr = pa.array(np.arange(10, dtype=np.int64)).slice(3, 4)
    t = dlbridge.from_dlpack(arr)
    assert t.shape == (4,)
    assert t.data_ptr == _array_address(arr)
    assert np.asarray(t).tolist() == [3, 4, 5, 6]


def test_arrow_array_with_nulls_is_refused():
    # pyarrow raises ArrowTypeError (a TypeError) for every call pattern: after the retries
    # dlbridge lets the TypeError through.
    arr = pa.array([1.0, None, 3.0])
    with pytest.raises(TypeError, match="nulls"):
        dlbridge.from_dlpack(arr)


def test_arrow_bool_array_is_refused():
    with pytest.raises(TypeError):
        dlbridge.from_dlpack(pa.array([True, False]))


@pytest.mark.parametrize("name", ARROW_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_arrow_tensor_to_dlbridge(shape, name):
    host = _values(name, size_of(shape)).reshape(shape)
    x = pa.Tensor.from_numpy(host)
    t = dlbridge.from_dlpack(x)
    assert t.dtype == name
    assert t.shape == shape
    if size_of(shape):
        assert t.data_ptr == _tensor_address(x)
        assert t.strides == tuple(s // host.itemsize for s in x.strides)
    np.testing.assert_array_equal(np.asarray(t), host)


def test_arrow_strided_tensor_to_dlbridge():
    host = np.arange(24, dtype=np.float32).reshape(4, 6)[::2, 1::2].T
    x = pa.Tensor.from_numpy(host)
    t = dlbridge.from_dlpack(x)
    assert t.strides == tuple(s // 4 for s in x.strides)
    assert t.data_ptr == np_address(host)
    np.testing.assert_array_equal(np.asarray(t), host)


def test_arrow_memory_kept_alive():
    arr = pa.array(np.arange(5, dtype=np.int32))
    address = _array_address(arr)
    t = dlbridge.from_dlpack(arr)
    del arr
    gc.collect()
    assert t.data_ptr == address
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------------------------
# dlbridge -> Arrow
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ARROW_DTYPES)
@pytest.mark.parametrize("shape", ONE_D, ids=["0", "1", "7"])
def test_dlbridge_to_arrow_array(shape, name):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    arr = pa.Array.from_dlpack(t)
    assert arr.type == pa.from_numpy_dtype(np.dtype(name))
    assert len(arr) == shape[0]
    if shape[0]:
        assert _array_address(arr) == t.data_ptr
    assert arr.to_numpy().tobytes() == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_arrow_array_memory_is_shared():
    t = dlbridge.zeros((3,), dtype="int32")
    arr = pa.Array.from_dlpack(t)
    np.asarray(t)[1] = 42  # Arrow arrays are immutable; this only proves the sharing
    assert arr[1].as_py() == 42


@pytest.mark.parametrize("name", ARROW_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_arrow_tensor(shape, name):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    x = pa.Tensor.from_dlpack(t)
    assert tuple(x.shape) == shape
    assert x.type == pa.from_numpy_dtype(np.dtype(name))
    if size_of(shape):
        assert x.is_mutable  # (pyarrow makes every zero-size tensor immutable)
        assert _tensor_address(x) == t.data_ptr
    assert x.to_numpy().tobytes() == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_arrow_tensor_writes_seen_both_ways():
    t = dlbridge.zeros((2, 3), dtype="float64")
    x = pa.Tensor.from_dlpack(t)
    view = x.to_numpy()
    view[0, 1] = 5.0
    assert np.asarray(t)[0, 1] == 5.0
    np.asarray(t)[1, 2] = 6.0
    assert x.to_numpy()[1, 2] == 6.0


@pytest.mark.parametrize(
    "make",
    [lambda b: b.T, lambda b: b[::2, 1::2], lambda b: b[1:, 2:]],
    ids=["transposed", "stepped", "offset"],
)
def test_dlbridge_views_to_arrow_tensor(make):
    view = make(np.arange(30, dtype=np.int16).reshape(5, 6))
    t = dlbridge.from_dlpack(view)
    x = pa.Tensor.from_dlpack(t)
    assert tuple(x.strides) == view.strides
    assert _tensor_address(x) == np_address(view)
    np.testing.assert_array_equal(x.to_numpy(), view)


def test_dlbridge_negative_strides_refused_by_arrow():
    # Arrow tensors cannot have negative strides (ArrowInvalid).
    t = dlbridge.from_dlpack(np.arange(6, dtype=np.int32)[::-1])
    with pytest.raises(pa.ArrowInvalid):
        pa.Tensor.from_dlpack(t)


def test_dlbridge_readonly_to_arrow_tensor_stays_readonly():
    src = np.arange(6, dtype=np.float32).reshape(2, 3)
    src.flags.writeable = False
    t = dlbridge.from_dlpack(src)
    x = pa.Tensor.from_dlpack(t)
    assert not x.is_mutable  # READ_ONLY went through
    assert _tensor_address(x) == np_address(src)


def test_dlbridge_non_contiguous_to_arrow_array_is_refused():
    t = dlbridge.from_dlpack(np.arange(10, dtype=np.int32)[::2])
    # Pins PyArrow 26's refusal: it takes the capsule, then raises its own ArrowInvalid.
    with pytest.raises(pa.ArrowInvalid, match="Only contiguous one dimensional tensor"):
        pa.Array.from_dlpack(t)


def test_tensor_released_after_arrow_objects_die():
    t = dlbridge.arange(4)
    rc = refcount(t)
    arr = pa.Array.from_dlpack(t)
    x = pa.Tensor.from_dlpack(t)
    del arr, x
    gc.collect()
    assert refcount(t) == rc


def test_numpy_dlbridge_arrow_chain_numpy_deleted_first():
    a = np.arange(6, dtype=np.float32)
    address = np_address(a)
    t = dlbridge.from_dlpack(a)
    del a
    arr = pa.Array.from_dlpack(t)
    del t
    gc.collect()
    assert _array_address(arr) == address
    assert arr.to_pylist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]


# ---- one semantics on every path (`_semantics.py`) -----------------------------------------


test_every_path_gives_the_answer_of_dlpack = every_path_test("pyarrow")


# --------------------------------------------------------------------------------------------
# return_like: results back to pyarrow (the Arrow PyCapsule interface)
# --------------------------------------------------------------------------------------------


def _values_address(arr) -> int:
    """The address of the first value of a primitive or fixed-shape-tensor array."""
    if isinstance(arr, pa.FixedShapeTensorArray):
        return _array_address(arr.storage.flatten())  # (a slice of the values: no copy)
    return _array_address(arr)


@pytest.mark.parametrize("name", ARROW_DTYPES)
def test_each_primitive_type_comes_back_from_a_kernel_as_the_same_pyarrow_array(name):
    arr = pa.array(_values(name, 7))
    result = kernels.import_return_like(arr, arr)
    assert type(result) is type(arr)
    assert result.type == arr.type == pa.from_numpy_dtype(np.dtype(name))
    assert result.null_count == 0
    assert result.equals(arr)
    # Zero-copy both ways: the result's values are the argument's memory (read-only for
    # Python, which pyarrow's immutable arrays can hold as it is).
    assert _array_address(result) == _array_address(arr)
    assert result.buffers()[1].is_mutable is False


@pytest.mark.parametrize("name", ARROW_DTYPES)
def test_a_rust_result_goes_to_pyarrow_without_a_copy(name):
    t = rust_tensor_with_bytes(dlbridge, (5,), name)
    like = pa.array(_values(name, 1))
    result = kernels.import_return_like(t, like)
    assert isinstance(result, pa.Array)
    assert result.type == pa.from_numpy_dtype(np.dtype(name))
    assert _array_address(result) == t.data_ptr
    assert result.to_numpy().tobytes() == read_bytes(t.data_ptr, t.nbytes)


def test_kernels_over_pyarrow_arguments_return_pyarrow_arrays():
    halved = kernels.halves(pa.array([2.0, 5.0, -1.0]))
    assert isinstance(halved, pa.DoubleArray)
    assert halved.to_pylist() == [1.0, 2.5, -0.5]
    counts = kernels.byte_histogram(pa.array(np.array([3, 3, 7], dtype=np.uint8)))
    assert counts.type == pa.int64()
    assert len(counts) == 256
    assert (counts[3].as_py(), counts[7].as_py(), counts[0].as_py()) == (2, 1, 0)


@pytest.mark.parametrize("name", ARROW_DTYPES)
@pytest.mark.parametrize("shape", [(2, 3), (3, 2, 2), (4, 1), (3, 0), (0, 2)], ids=str)
def test_results_of_two_or_more_dimensions_are_fixed_shape_tensor_arrays(shape, name):
    source = _values(name, size_of(shape)).reshape(shape)
    like = pa.array(_values(name, 1))
    result = kernels.import_return_like(source, like)
    assert isinstance(result, pa.FixedShapeTensorArray)
    assert result.type.value_type == pa.from_numpy_dtype(np.dtype(name))
    assert list(result.type.shape) == list(shape[1:])
    assert len(result) == shape[0]
    if size_of(shape):
        assert _values_address(result) == np_address(source)
        np.testing.assert_array_equal(result.to_numpy_ndarray(), source)


def test_a_1d_bool_result_is_copied_into_a_boolean_array():
    like = pa.array([True])
    result = kernels.arange_like_framework(like, "bool", [5], "c")
    assert isinstance(result, pa.BooleanArray)
    assert result.to_pylist() == [False, True, False, True, False]
    # Strided bools are read where they lie.
    result = kernels.arange_like_framework(like, "bool", [4], "every_other")
    assert result.to_pylist() == [False, True, False, True]


@pytest.mark.parametrize(
    ("layout", "shape"),
    [("reversed", [6]), ("every_other", [5]), ("f", [3, 4]), ("reversed", [2, 3])],
)
def test_layouts_arrow_cannot_describe_are_compacted_with_the_same_values(layout, shape):
    like = pa.array([0.0])
    expected = np.arange(np.prod(shape), dtype=np.float64).reshape(shape)
    result = kernels.arange_like_framework(like, "float64", shape, layout)
    values = result.to_numpy_ndarray() if isinstance(result, pa.FixedShapeTensorArray) else result
    np.testing.assert_array_equal(np.asarray(values), expected)


def test_a_strided_view_is_copied_and_its_source_kept_as_it_was():
    source = np.arange(12, dtype=np.int32)
    result = kernels.import_return_like(source[::3], pa.array([0], pa.int32()))
    assert result.to_pylist() == [0, 3, 6, 9]
    assert _array_address(result) != np_address(source)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda like: kernels.arange_like_framework(like, "complex128", [3], "c"), "complex128"),
        (lambda like: kernels.zeros_like_framework(like, "complex64", [2, 2]), "complex64"),
        (lambda like: kernels.zeros_like_framework(like, "bfloat16", [3]), "bfloat16"),
        (lambda like: kernels.zeros_like_framework(like, "float8_e4m3fn", [3]), "float8_e4m3fn"),
        (lambda like: kernels.zeros_like_framework(like, "float32", []), "0-dimensional"),
        (lambda like: kernels.zeros_like_framework(like, "bool", [2, 3]), r"bool .*\(2, 3\)"),
    ],
    ids=["complex128", "complex64", "bfloat16", "float8", "scalar", "2d-bool"],
)
def test_what_arrow_cannot_hold_is_a_type_error_naming_it(make, message):
    like = pa.array([0.0], pa.float32())
    with pytest.raises(TypeError, match=message) as refused:
        make(like)
    assert "pyarrow" in str(refused.value)


def test_a_device_result_is_refused_naming_the_device():
    producer = FakeDeviceTensor()
    with pytest.raises(BufferError, match=r"CUDA:0 memory like a pyarrow .*host"):
        kernels.import_return_like(producer, pa.array([0.0], pa.float32()))
    gc.collect()
    assert producer.records[0].deleter_calls == 1


def _counted_source(counting, shape=(6,)):
    """A NumPy array's versioned capsule whose deleter `counting` counts, in a producer that
    hands it over once; the array, to compare values with."""
    source = np.arange(int(np.prod(shape)), dtype=np.float64).reshape(shape)
    capsule = counting.interpose_capsule(source.__dlpack__(max_version=(1, 3)))
    return HandsOver(capsule), source


@pytest.mark.parametrize("shape", [(6,), (2, 3)], ids=["1d", "2d"])
def test_the_result_is_released_once_when_pyarrow_releases_its_array(shape):
    counting = CountingDeleters()
    producer, source = _counted_source(counting, shape)
    rc = refcount(source)
    result = kernels.import_return_like(producer, pa.array([0.0]))
    del producer
    gc.collect()
    assert counting.calls == 0
    assert _values_address(result) == np_address(source)
    # A slice shares the array's buffers: the tensor lives while any of them does.
    part = result.slice(1, 1)
    del result
    gc.collect()
    assert counting.calls == 0
    assert len(part) == 1
    del part
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])
    assert refcount(source) == rc - 1  # the capsule's reference (its producer) is gone


def _intercepted_producer(monkeypatch, x, like):
    """What `return_like` (through `import_return_like(x, like)`) hands to `pyarrow.array`,
    taken before pyarrow sees it."""
    handed = []
    monkeypatch.setattr(pa, "array", lambda obj, *args, **kwargs: handed.append(obj) or obj)
    try:
        kernels.import_return_like(x, like)
    finally:
        monkeypatch.undo()
    (producer,) = handed
    return producer


def test_capsules_no_consumer_takes_release_the_tensor_once(monkeypatch):
    counting = CountingDeleters()
    source, _ = _counted_source(counting)
    like = pa.array([0.0])
    producer = _intercepted_producer(monkeypatch, source, like)
    assert type(producer).__name__ == "ArrowArrayProducer"
    schema, array = producer.__arrow_c_array__()
    assert '"arrow_schema"' in repr(schema)
    assert '"arrow_array"' in repr(array)
    del producer
    gc.collect()
    assert counting.calls == 0  # the array capsule holds the tensor
    del schema
    gc.collect()
    assert counting.calls == 0
    del array  # never consumed: its destructor calls the release callback
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])


def test_each_export_of_the_producer_holds_the_tensor_until_it_is_released(monkeypatch):
    counting = CountingDeleters()
    source, values = _counted_source(counting)
    like = pa.array([0.0])
    producer = _intercepted_producer(monkeypatch, source, like)
    unconsumed = producer.__arrow_c_array__()
    taken = pa.array(producer)  # pyarrow's own call: a second pair, moved into pyarrow
    assert taken.to_pylist() == values.tolist()
    assert _array_address(taken) == np_address(values)
    del producer, unconsumed
    gc.collect()
    assert counting.calls == 0  # pyarrow's array still holds it
    del taken
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])
