"""PaddlePaddle <-> dlbridge.

PaddlePaddle 3.3 facts these tests rely on:
- importing TensorFlow and then Paddle in one process crashes (SIGSEGV): own process;
- `Tensor.__dlpack_device__()` returns `(DLDeviceType.kDLCPU, None)` for CPU: the device id
  is None (dlbridge must read it as 0); `Tensor.__dlpack__(*, stream, max_version, dl_device,
  copy)` returns `dltensor_versioned` 1.3 for max_version >= (1, 0), legacy otherwise, and
  honours copy=True with IS_COPIED; Paddle also has the C exchange API;
- `paddle.utils.dlpack.from_dlpack` / `paddle.from_dlpack` take objects (calling
  `__dlpack__(max_version=(1, 2))`) or capsules of either kind;
- dtypes exported: bool, int8, uint8, int16, int32, int64, float16, bfloat16, float32,
  float64, complex64, complex128, float8_e4m3fn, float8_e5m2 (Paddle's own "uint16" dtype is
  its old name for bfloat16 and is exported as code 4); imported: the same plus uint32 and
  uint64 — but a DLPack uint16 becomes paddle.bfloat16 (a Paddle bug), so uint16 is not sent;
- strided imports (transposed, stepped) are zero-copy with strides kept; negative strides
  make Paddle try to allocate ~2**64 bytes (MemoryError), so they are not sent;
- at most 9 dimensions: the 32-dimension case is skipped in both directions;
- Paddle ignores READ_ONLY on import (the tensor stays writable);
- Paddle skips the producer's deleter when manager_ctx is NULL (a leak); dlbridge's exports
  carry a non-NULL manager_ctx, which `test_tensor_released_after_paddle_tensor_dies` checks.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from _frameworks import import_framework

paddle = import_framework("paddle", "paddlepaddle")

import dlbridge
from _helpers import (
    IS_COPIED,
    SHAPE_IDS,
    SHAPES,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
    size_of,
    write_bytes,
)
from _semantics import every_path_test
from dlbridge.check.capsules import capsule_name, read_capsule

PADDLE_EXPORT = {
    "bool": "bool",
    "int8": "int8",
    "uint8": "uint8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "float16": "float16",
    "bfloat16": "bfloat16",
    "float32": "float32",
    "float64": "float64",
    "complex64": "complex64",
    "complex128": "complex128",
    "float8_e4m3fn": "float8_e4m3fn",
    "float8_e5m2": "float8_e5m2",
}
PADDLE_IMPORT = dict(PADDLE_EXPORT, uint32="uint32", uint64="uint64")

SHAPES_9 = [(s, i) for s, i in zip(SHAPES, SHAPE_IDS) if len(s) <= 9]


def _paddle_dtype(name):
    return getattr(paddle, PADDLE_IMPORT[name])


def _paddle_source(shape, name):
    x = paddle.zeros(list(shape), dtype=PADDLE_EXPORT[name])
    if size_of(shape):
        write_bytes(x.data_ptr(), pattern_bytes(name, size_of(shape)))
    return x


def _paddle_bytes(x) -> bytes:
    n = int(np.prod(x.shape)) if x.shape else 1
    return read_bytes(x.data_ptr(), n * x.element_size())


# --------------------------------------------------------------------------------------------
# Paddle -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(PADDLE_EXPORT))
@pytest.mark.parametrize("shape", [s for s, _ in SHAPES_9], ids=[i for _, i in SHAPES_9])
def test_paddle_to_dlbridge(shape, name):
    x = _paddle_source(shape, name)
    assert x.__dlpack_device__()[1] is None  # the quirk dlbridge must tolerate
    t = dlbridge.from_dlpack(x)
    assert t.dtype == name
    assert t.shape == shape
    assert t.device == (1, 0)
    assert t.version == (1, 3)
    if size_of(shape):
        assert t.strides == tuple(x.strides)
        assert t.data_ptr == x.data_ptr()
        assert read_bytes(t.data_ptr, t.nbytes) == _paddle_bytes(x)


def test_paddle_writes_seen_both_ways():
    x = paddle.zeros([4], dtype="float32")
    t = dlbridge.from_dlpack(x)
    x[1] = 5.0
    assert np.asarray(t)[1] == 5.0
    np.asarray(t)[2] = 7.0
    assert float(x[2]) == 7.0


def test_paddle_transposed_to_dlbridge():
    base = paddle.arange(12, dtype="float32").reshape([3, 4])
    x = paddle.transpose(base, [1, 0])
    t = dlbridge.from_dlpack(x)
    assert t.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(t), x.numpy())


def test_paddle_copy_true():
    x = paddle.arange(6, dtype="int32")
    t = dlbridge.from_dlpack(x, copy=True)
    assert t.data_ptr != x.data_ptr()
    assert t.flags & IS_COPIED  # Paddle sets IS_COPIED
    x[0] = 100
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4, 5]


def test_paddle_legacy_capsule_to_dlbridge():
    x = paddle.arange(4, dtype="int64")
    cap = paddle.utils.dlpack.to_dlpack(x)
    t = dlbridge.from_dlpack(cap)
    assert t.version is None
    assert t.data_ptr == x.data_ptr()
    assert np.asarray(t).tolist() == [0, 1, 2, 3]


def test_paddle_memory_kept_alive():
    x = paddle.arange(5, dtype="float64")
    address = x.data_ptr()
    t = dlbridge.from_dlpack(x)
    del x
    gc.collect()
    assert t.data_ptr == address
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4]


# --------------------------------------------------------------------------------------------
# dlbridge -> Paddle
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("importer", ["utils", "paddle"])
@pytest.mark.parametrize("name", list(PADDLE_IMPORT))
@pytest.mark.parametrize("shape", [s for s, _ in SHAPES_9], ids=[i for _, i in SHAPES_9])
def test_dlbridge_to_paddle(shape, name, importer):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    fn = paddle.utils.dlpack.from_dlpack if importer == "utils" else paddle.from_dlpack
    x = fn(t)
    assert x.dtype == _paddle_dtype(name)
    assert tuple(x.shape) == shape
    if size_of(shape):
        assert x.data_ptr() == t.data_ptr
        assert _paddle_bytes(x) == read_bytes(t.data_ptr, t.nbytes)


@pytest.mark.parametrize("name", ["float32", "int8"])
def test_dlbridge_capsules_to_paddle(name):
    t = rust_tensor_with_bytes(dlbridge, (2, 3), name)
    for cap in (t.__dlpack__(), t.__dlpack__(max_version=(1, 3))):
        x = paddle.utils.dlpack.from_dlpack(cap)
        assert x.data_ptr() == t.data_ptr
        assert capsule_name(cap).startswith(b"used_")


def test_dlbridge_to_paddle_writes_seen_both_ways():
    t = dlbridge.zeros((2, 2), dtype="float32")
    x = paddle.from_dlpack(t)
    x[0, 1] = 3.0
    assert np.asarray(t)[0, 1] == 3.0
    np.asarray(t)[1, 0] = 4.0
    assert float(x[1, 0]) == 4.0


@pytest.mark.parametrize(
    "make",
    [lambda b: b.T, lambda b: b[::2, 1::2], lambda b: b[1:, 2:]],
    ids=["transposed", "stepped", "offset"],
)
def test_dlbridge_views_to_paddle(make):
    view = make(np.arange(30, dtype=np.float32).reshape(5, 6))
    t = dlbridge.from_dlpack(view)
    x = paddle.from_dlpack(t)
    assert tuple(x.shape) == view.shape
    assert x.data_ptr() == np_address(view)
    assert tuple(x.strides) == t.strides
    np.testing.assert_array_equal(x.numpy(), view)


def test_tensor_released_after_paddle_tensor_dies():
    # Paddle skips the deleter of a tensor whose manager_ctx is NULL: this would leak then.
    t = dlbridge.arange(4)
    rc = refcount(t)
    for versioned in (False, True):
        x = paddle.from_dlpack(t.__dlpack__(max_version=(1, 3)) if versioned else t.__dlpack__())
        del x
        gc.collect()
        assert refcount(t) == rc
        assert read_capsule(t.__dlpack__())["manager_ctx"] is not None


def test_paddle_tensor_outlives_dlbridge_tensor():
    t = dlbridge.arange(5, dtype="float32")
    x = paddle.from_dlpack(t)
    del t
    gc.collect()
    assert x.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_numpy_dlbridge_paddle_chain_numpy_deleted_first():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    address = np_address(a)
    t = dlbridge.from_dlpack(a)
    del a
    x = paddle.from_dlpack(t)
    del t
    gc.collect()
    assert x.data_ptr() == address
    assert x.numpy().tolist() == [[0, 1, 2], [3, 4, 5]]


def test_exchange_api_fast_path_is_taken_for_paddle(monkeypatch):
    # PaddlePaddle publishes DLPack 1.3's C exchange API: dlbridge imports through it without
    # calling __dlpack__.
    x = paddle.to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3))

    def forbidden(self, *args, **kwargs):
        raise AssertionError("__dlpack__ was called: the exchange API was not used")

    monkeypatch.setattr(type(x), "__dlpack__", forbidden)
    t = dlbridge.from_dlpack(x)
    assert t.shape == (2, 3) and t.dtype == "float32"
    assert t.data_ptr == x.data_ptr()
    assert np.from_dlpack(t).tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


# ---- one semantics on every path (`_semantics.py`) -----------------------------------------


test_every_path_gives_the_answer_of_dlpack = every_path_test("paddle")


def test_every_path_without_the_exchange_api():
    from test_semantics import run_without_exchange_api

    found = run_without_exchange_api("paddle")
    assert found["problems"] == []
    assert found["paths"]["plain"]["TensorArg"] == "dlpack"


# ---- autograd: what dlbridge-pyo3's framework rules do for PaddlePaddle ----------------------


def _tracked_leaf():
    leaf = paddle.ones([3])
    leaf.stop_gradient = False
    return leaf


def test_from_dlpack_refuses_a_tensor_that_does_not_stop_gradient():
    leaf = _tracked_leaf()
    for tensor in (leaf, leaf * 2):
        with pytest.raises(BufferError, match="stop_gradient=False"):
            dlbridge.from_dlpack(tensor)
        with pytest.raises(BufferError):  # the reference, for comparison
            tensor.__dlpack__()
    assert dlbridge.from_dlpack(leaf.detach()).shape == (3,)


def test_typed_arguments_follow_paddles_autograd():
    from _kernels import kernels as K

    leaf = _tracked_leaf()
    assert K.total(leaf) == 3.0  # read as detach() does
    with pytest.raises(TypeError, match="stop_gradient=False"):
        K.fill(leaf, 2.0)
    # Paddle's own in-place operation refuses the leaf too.
    with pytest.raises(ValueError, match="can't use inplace strategy"):
        leaf.scale_(2.0)
    with paddle.no_grad():
        K.fill(leaf, 2.0)
    assert leaf.numpy().tolist() == [2.0] * 3
    assert leaf.inplace_version == 1


@pytest.mark.parametrize("writer", ["dlbridge kernel", "scale_"])
def test_writing_a_tensor_saved_for_backward_makes_backward_raise(writer):
    from _kernels import kernels as K

    x = _tracked_leaf()
    w = paddle.full([3], 2.0)
    loss = (x * w).sum()
    if writer == "dlbridge kernel":
        K.fill(w, 5.0)
    else:
        w.scale_(2.0)
    with pytest.raises(RuntimeError, match="modified by an inplace operation"):
        loss.backward()


# -- dlbridge.distributed (Ray and Dask frames) ---------------------------------------------------


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only-bytes", "writable-bytes"])
def test_frames_rebuild_a_paddle_tensor(read_only):
    # Paddle has no read-only tensors (it ignores READ_ONLY): over read-only bytes, such as
    # Ray's object store, the receiver gets a copy; over writable ones, a view.
    import dlbridge.distributed as dd

    for dtype in ("float32", "bfloat16", "int64", "bool", "complex64"):
        x = paddle.arange(12).reshape([3, 4]).astype(dtype)
        header, frames = dd.serialize(x)
        assert header["kind"] == "paddle"
        raw = frames[0].raw()
        data = bytes(raw) if read_only else bytearray(raw)
        result = dd.deserialize(header, [data])
        assert isinstance(result, paddle.Tensor) and result.dtype == x.dtype
        shared = result.data_ptr() == np_address(np.frombuffer(data, np.uint8))
        assert shared != read_only
        np.testing.assert_array_equal(result.astype("float64").numpy(), x.astype("float64").numpy())
