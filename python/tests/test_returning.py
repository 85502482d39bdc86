"""Results returned in the caller's framework (`return_like`): to NumPy as an array made
directly over the tensor's memory with NumPy's C API (no `numpy.from_dlpack`), zero-copy,
kept alive by the array's base, read-only where the tensor is; data types NumPy has no number
for go the `numpy.from_dlpack` way, as before; other frameworks through their exchange table
or `from_dlpack`, whose result is checked to hold the data type and shape returned (JAX
without 64-bit types is refused: interop/test_jax.py); a buffer-protocol input gets a
`memoryview`."""

from __future__ import annotations

import gc

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import np_address
from _kernels import kernels

LIKE = np.zeros(1, dtype=np.float32)


@pytest.mark.parametrize(
    ("dtype", "numpy_dtype"),
    [
        ("bool", np.bool_),
        ("int8", np.int8),
        ("uint8", np.uint8),
        ("int16", np.int16),
        ("uint16", np.uint16),
        ("int32", np.int32),
        ("uint32", np.uint32),
        ("int64", np.int64),
        ("uint64", np.uint64),
        ("float16", np.float16),
        ("float32", np.float32),
        ("float64", np.float64),
        ("complex64", np.complex64),
        ("complex128", np.complex128),
    ],
)
def test_every_numpy_type_comes_back_as_a_plain_array(dtype, numpy_dtype):
    result = kernels.zeros_like_framework(LIKE, dtype, [2, 3])
    assert type(result) is np.ndarray
    assert result.dtype == numpy_dtype
    assert result.shape == (2, 3)
    assert result.flags.c_contiguous
    assert result.flags.writeable
    assert not result.flags.owndata  # Rust memory, owned by the base object
    assert type(result.base).__name__ == "TensorMemory"
    assert not result.any()
    # NumPy's own choice of type number for the width (int64 is `long` on LP64 platforms).
    assert result.dtype.num == np.dtype(numpy_dtype).num


def test_the_array_is_the_tensors_memory_and_keeps_it_alive():
    source = np.arange(12, dtype=np.float64).reshape(3, 4)
    result = kernels.import_return_like(source, LIKE)
    assert np_address(result) == np_address(source)
    assert result.strides == source.strides
    np.testing.assert_array_equal(result, source)
    view = result[1:, ::2]
    del result, source
    gc.collect()
    np.testing.assert_array_equal(view, [[4.0, 6.0], [8.0, 10.0]])


def test_strided_and_offset_tensors_keep_their_layout():
    source = np.arange(24, dtype=np.int32).reshape(4, 6)[1:, ::-2]
    result = kernels.import_return_like(source, LIKE)
    assert np_address(result) == np_address(source)
    assert result.strides == source.strides
    np.testing.assert_array_equal(result, source)


def test_a_read_only_tensor_comes_back_read_only():
    source = np.arange(6.0)
    source.flags.writeable = False
    result = kernels.import_return_like(source, LIKE)
    assert not result.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        result[0] = 1.0


def test_a_legacy_import_of_unknown_writability_comes_back_read_only():
    class LegacyOnly:
        """Answers `__dlpack__` with a legacy capsule only, as JAX and TensorFlow do."""

        def __init__(self, array):
            self.array = array

        def __dlpack__(self, **kwargs):
            return self.array.__dlpack__()

        def __dlpack_device__(self):
            return self.array.__dlpack_device__()

    result = kernels.import_return_like(LegacyOnly(np.arange(3.0)), LIKE)
    assert not result.flags.writeable


def test_types_numpy_has_no_number_for_go_through_from_dlpack():
    # bfloat16: NumPy has no such type, and the answer is `numpy.from_dlpack`'s own, as before.
    with pytest.raises(Exception) as theirs:  # whatever NumPy raises
        np.from_dlpack(dlbridge.zeros([2], dtype="bfloat16"))
    with pytest.raises(type(theirs.value), match=str(theirs.value)):
        kernels.zeros_like_framework(LIKE, "bfloat16", [2])


def test_empty_and_zero_dimensional_results():
    empty = kernels.zeros_like_framework(LIKE, "float32", [0, 3])
    assert type(empty) is np.ndarray
    assert empty.shape == (0, 3)
    scalar = kernels.zeros_like_framework(LIKE, "float64", [])
    assert type(scalar) is np.ndarray
    assert scalar.shape == ()


# --- An ndarray result: NumPy's array made over the Array's own buffer (issue 30) ----------

NDARRAY_TYPES = {
    "bool": np.bool_,
    "uint8": np.uint8,
    "int64": np.int64,
    "float16": np.float16,
    "float32": np.float32,
    "float64": np.float64,
    "complex128": np.complex128,
}


def _arange(dtype, shape):
    """What `arange_like_framework` holds: 0, 1, 2, ... in row-major order."""
    values = np.arange(int(np.prod(shape))).reshape(shape)
    if dtype == "bool":
        return values % 2 == 1
    if dtype == "complex128":
        return values + 0.5j
    return values.astype(NDARRAY_TYPES[dtype])


@pytest.mark.parametrize("dtype", sorted(NDARRAY_TYPES))
@pytest.mark.parametrize("layout", ["c", "f", "reversed", "every_other"])
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
def test_an_ndarray_result_is_an_array_over_its_own_buffer(dtype, layout, shape):
    result = kernels.arange_like_framework(LIKE, dtype, list(shape), layout)
    expected = _arange(dtype, shape)
    assert type(result) is np.ndarray
    assert result.dtype == NDARRAY_TYPES[dtype]
    assert result.dtype.num == np.dtype(NDARRAY_TYPES[dtype]).num
    np.testing.assert_array_equal(result, expected)
    assert result.flags.writeable
    assert not result.flags.owndata  # Rust memory, owned by the base object
    assert type(result.base).__name__ == "TensorMemory"
    itemsize = result.itemsize
    if layout == "c":
        assert result.flags.c_contiguous
    elif layout == "f":
        assert result.flags.f_contiguous
    elif layout == "reversed":
        assert result.strides[-1] == -itemsize
    else:
        assert result.strides[-1] == 2 * itemsize
    # One semantics: the tensor path (the same Array returned like a dlbridge tensor, then
    # handed to NumPy) gives the same layout and values.
    through_tensor = np.from_dlpack(
        kernels.arange_like_framework(dlbridge.zeros([1]), dtype, list(shape), layout)
    )
    assert through_tensor.strides == result.strides
    np.testing.assert_array_equal(through_tensor, result)
    # Writable, and kept alive by its views.
    view = result[..., :1]
    result[...] = expected[(0,) * len(shape)]
    np.testing.assert_array_equal(result, np.full(shape, expected[(0,) * len(shape)]))
    del result
    gc.collect()
    np.testing.assert_array_equal(view, np.full(view.shape, expected[(0,) * len(shape)]))


@pytest.mark.parametrize("dtype", sorted(NDARRAY_TYPES))
@pytest.mark.parametrize("shape", [(), (5,), (3, 4), (2, 3, 4)])
def test_a_vec_and_shape_result_is_an_array_over_the_vector(dtype, shape):
    result = kernels.arange_like_framework(LIKE, dtype, list(shape), "vec")
    assert type(result) is np.ndarray
    assert result.dtype == NDARRAY_TYPES[dtype]
    assert result.shape == shape
    assert result.flags.c_contiguous
    assert result.flags.writeable
    assert type(result.base).__name__ == "TensorMemory"
    np.testing.assert_array_equal(result, _arange(dtype, shape))
    through_tensor = np.from_dlpack(
        kernels.arange_like_framework(dlbridge.zeros([1]), dtype, list(shape), "vec")
    )
    assert through_tensor.strides == result.strides


def test_a_vec_too_short_for_its_shape_is_the_cores_error_on_every_path():
    with pytest.raises(Exception) as to_numpy:
        kernels.arange_like_framework(LIKE, "float32", [3, 4], "vec_short")
    with pytest.raises(Exception) as to_dlbridge:
        kernels.arange_like_framework(dlbridge.zeros([1]), "float32", [3, 4], "vec_short")
    assert type(to_numpy.value) is type(to_dlbridge.value)
    assert str(to_numpy.value) == str(to_dlbridge.value)
    assert "11" in str(to_numpy.value)  # the values the vector holds, named


def test_an_empty_ndarray_result_goes_the_tensor_way():
    empty = kernels.arange_like_framework(LIKE, "float32", [0, 3], "c")
    assert type(empty) is np.ndarray
    assert empty.shape == (0, 3)


def test_other_frameworks_are_unchanged():
    torch = import_framework("torch", "torch")
    result = kernels.zeros_like_framework(torch.zeros(1), "float32", [2, 2])
    assert type(result) is torch.Tensor
    tensor = kernels.zeros_like_framework(dlbridge.zeros([1]), "int16", [3])
    assert type(tensor) is dlbridge.Tensor
    assert tensor.shape == (3,)


# --- A result never changes data type, shape or values on the way out (issue 28) ---------


@pytest.mark.parametrize(
    "make",
    [
        lambda data: memoryview(bytes(data)),
        bytes,
        bytearray,
        lambda data: __import__("array").array("B", data),
        lambda data: memoryview(bytearray(data)).cast("B", (2, 3)),
    ],
    ids=["memoryview", "bytes", "bytearray", "array.array", "memoryview-2d"],
)
def test_a_buffer_protocol_input_gets_a_memoryview(make):
    data = [1, 1, 2, 255, 0, 1]
    counts = kernels.byte_histogram(make(data))
    assert isinstance(counts, memoryview)
    assert counts.format == "q" and counts.shape == (256,) and counts.itemsize == 8
    assert not counts.readonly
    assert counts[1] == 3 and counts[2] == 1 and counts[255] == 1 and counts[0] == 1
    # A memoryview result goes on as an input: its 2,048 bytes, counted again.
    recounted = kernels.byte_histogram(counts.cast("B"))
    assert isinstance(recounted, memoryview) and sum(recounted.tolist()) == 256 * 8
    # The view keeps the result's memory alive.
    as_array = np.asarray(counts)
    del counts
    gc.collect()
    assert as_array[1] == 3


def test_a_memoryview_result_has_the_shape_and_format_of_the_tensor():
    for dtype, fmt in [("float32", "f"), ("int16", "h"), ("bool", "?"), ("bfloat16", "H")]:
        result = kernels.zeros_like_framework(memoryview(b"x"), dtype, [2, 3])
        assert isinstance(result, memoryview)
        assert (result.format, result.shape) == (fmt, (2, 3))


def test_an_object_without_from_dlpack_or_buffer_is_refused_by_type():
    with pytest.raises(TypeError) as refused:
        kernels.zeros_like_framework(object(), "float32", [2])
    message = str(refused.value)
    assert "object" in message and "buffer protocol" in message


def test_a_type_whose_module_is_not_a_string_is_refused_naming_it():
    # The framework of a template is its type's top-level module, read once per type.
    nameless = type("Nameless", (), {"__module__": 5})
    with pytest.raises(TypeError) as refused:
        kernels.zeros_like_framework(nameless(), "float32", [2])
    message = str(refused.value)
    assert "Nameless" in message and "no __module__ that is a string" in message
    # Asked again (the type's entry is cached now), the same answer.
    with pytest.raises(TypeError, match="no __module__ that is a string"):
        kernels.zeros_like_framework(nameless(), "float32", [2])
    # A class made where the globals have no __name__ has no __module__ at all.
    scope: dict = {}
    exec("Anonymous = type('Anonymous', (), {})", scope)
    assert not hasattr(scope["Anonymous"], "__module__")
    with pytest.raises(TypeError, match="no __module__ that is a string"):
        kernels.zeros_like_framework(scope["Anonymous"](), "float32", [2])
