"""TensorFlow <-> dlbridge.

TensorFlow 2.21 (tensorflow-cpu) facts these tests rely on:
- importing TensorFlow and then PaddlePaddle in one process crashes (SIGSEGV): this file runs
  in its own process (scripts/python-tests.sh);
- `tf.experimental.dlpack.to_dlpack(x)` and `EagerTensor.__dlpack__(*, stream, max_version,
  dl_device, copy)` always return a legacy `dltensor` capsule; copy=True raises RuntimeError
  ("does not support DLPack export with a copy=True"); `__dlpack_device__` returns ints;
- `tf.experimental.dlpack.from_dlpack` takes only a legacy capsule (not an object, not a
  versioned capsule), renames it and clears its destructor;
- dtypes both ways: bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64,
  complex64, complex128 (no float8: "Unsupported Type Codes");
- it imports only compact row-major data: transposed, stepped or negative strides raise
  InvalidArgumentError ("Invalid strides array from DLPack"), size-1 dimensions may carry any
  stride; a non-zero byte_offset is refused (dlbridge always exports byte_offset 0);
  misaligned data is accepted zero-copy; zero-size tensors are exported with NULL data;
- TF tensors are immutable: the write checks below only prove that the memory is shared
  (the buffer of a dlbridge tensor is written, and TF reads the new value).
"""

from __future__ import annotations

import gc
import os

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")

import numpy as np
import pytest

from _frameworks import import_framework

tf = import_framework("tensorflow", "tensorflow-cpu")

import dlbridge
from _helpers import (
    SHAPE_IDS,
    SHAPES,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    rust_tensor_with_bytes,
    size_of,
)
from _semantics import every_path_test
from dlbridge.check.abi import FLAG_READ_ONLY, NAME_USED_LEGACY
from dlbridge.check.capsules import capsule_name, read_capsule

TF_DTYPES = {
    "bool": tf.bool,
    "int8": tf.int8,
    "uint8": tf.uint8,
    "int16": tf.int16,
    "uint16": tf.uint16,
    "int32": tf.int32,
    "uint32": tf.uint32,
    "int64": tf.int64,
    "uint64": tf.uint64,
    "float16": tf.float16,
    "bfloat16": tf.bfloat16,
    "float32": tf.float32,
    "float64": tf.float64,
    "complex64": tf.complex64,
    "complex128": tf.complex128,
}


def _tf_source(shape, name):
    raw = pattern_bytes(name, size_of(shape))
    if name == "bfloat16":
        host = np.frombuffer(raw, dtype=np.uint16).reshape(shape)
        return tf.bitcast(tf.constant(host), tf.bfloat16)
    return tf.constant(np.frombuffer(raw, dtype=name).reshape(shape))


def _tf_address(x) -> int | None:
    """TF's data pointer, read from an (unconsumed, then freed) export capsule."""
    info = read_capsule(tf.experimental.dlpack.to_dlpack(x))
    return None if info["data"] is None else info["data"] + info["byte_offset"]


def _tf_bytes(x) -> bytes:
    if x.dtype == tf.bfloat16:
        return tf.bitcast(x, tf.uint16).numpy().tobytes()
    return x.numpy().tobytes()


def _to_tf(t):
    return tf.experimental.dlpack.from_dlpack(t.__dlpack__())


# --------------------------------------------------------------------------------------------
# TF -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TF_DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_tf_to_dlbridge(shape, name):
    x = _tf_source(shape, name)
    t = dlbridge.from_dlpack(x)  # TF tensors have __dlpack__/__dlpack_device__
    assert t.dtype == name
    assert t.shape == shape
    assert t.version is None  # legacy capsule
    assert t.device == (1, 0)
    if size_of(shape):
        assert t.data_ptr == _tf_address(x)
        assert read_bytes(t.data_ptr, t.nbytes) == _tf_bytes(x)


@pytest.mark.parametrize("name", ["float32", "bfloat16", "bool"])
def test_tf_raw_capsule_to_dlbridge(name):
    x = _tf_source((2, 3), name)
    cap = tf.experimental.dlpack.to_dlpack(x)
    t = dlbridge.from_dlpack(cap)
    assert capsule_name(cap) == NAME_USED_LEGACY
    assert t.dtype == name and t.shape == (2, 3)
    assert read_bytes(t.data_ptr, t.nbytes) == _tf_bytes(x)


def test_tf_memory_kept_alive():
    x = tf.constant(np.arange(6, dtype=np.float32))
    address = _tf_address(x)
    t = dlbridge.from_dlpack(x)
    del x
    gc.collect()
    assert t.data_ptr == address
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4, 5]


def test_tf_copy_true_refusal_propagates():
    # Pins TensorFlow 2.21's behaviour: its __dlpack__ refuses copy=True with RuntimeError (not
    # TypeError, so dlbridge does not retry without keywords), and dlbridge propagates that
    # refusal unchanged rather than making a copy itself (so it never shares the memory).
    x = tf.constant(np.arange(4, dtype=np.int32))
    message = "tf.Tensor does not support DLPack export with a copy=True"
    with pytest.raises(RuntimeError) as tf_refusal:
        x.__dlpack__(copy=True)
    assert str(tf_refusal.value) == message
    with pytest.raises(RuntimeError) as refusal:
        dlbridge.from_dlpack(x, copy=True)
    assert type(refusal.value) is RuntimeError
    assert str(refusal.value) == message


# --------------------------------------------------------------------------------------------
# dlbridge -> TF
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", list(TF_DTYPES))
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_tf(shape, name):
    t = rust_tensor_with_bytes(dlbridge, shape, name)
    x = _to_tf(t)
    assert x.dtype == TF_DTYPES[name]
    assert tuple(x.shape) == shape
    if size_of(shape):
        assert _tf_address(x) == t.data_ptr
    assert _tf_bytes(x) == read_bytes(t.data_ptr, t.nbytes)


def test_dlbridge_to_tf_memory_is_shared():
    t = dlbridge.zeros((4,), dtype="float32")
    x = _to_tf(t)
    np.asarray(t)[2] = 5.0
    assert x.numpy()[2] == 5.0


def test_dlbridge_offset_view_to_tf():
    # A view that starts inside its buffer: dlbridge exports data = first element and
    # byte_offset 0, which is all TF accepts.
    base = np.arange(10, dtype=np.float64)
    t = dlbridge.from_dlpack(base[3:])
    info = read_capsule(t.__dlpack__())
    assert info["byte_offset"] == 0 and info["data"] == np_address(base) + 24
    x = _to_tf(t)
    assert _tf_address(x) == np_address(base) + 24
    assert x.numpy().tolist() == list(range(3, 10))


def test_dlbridge_size1_odd_stride_to_tf():
    base = np.arange(8, dtype=np.float32)
    view = np.lib.stride_tricks.as_strided(base, shape=(2, 1, 4), strides=(16, 4 * 55, 4))
    x = _to_tf(dlbridge.from_dlpack(view))
    np.testing.assert_array_equal(x.numpy(), view)


@pytest.mark.parametrize(
    "make",
    [lambda b: b.T, lambda b: b[::2], lambda b: b[::-1]],
    ids=["transposed", "stepped", "reversed"],
)
def test_dlbridge_strided_to_tf_is_refused_by_tf(make):
    # TF takes only compact row-major data (see the module docstring).
    t = dlbridge.from_dlpack(make(np.arange(12, dtype=np.float32).reshape(4, 3)))
    with pytest.raises(tf.errors.InvalidArgumentError):
        _to_tf(t)


def test_dlbridge_compact_copy_of_strided_goes_to_tf():
    view = np.arange(12, dtype=np.float32).reshape(4, 3).T
    x = _to_tf(dlbridge.from_dlpack(view).copy())
    np.testing.assert_array_equal(x.numpy(), view)


def test_dlbridge_readonly_to_tf_is_buffer_error():
    # TF only takes legacy capsules, which cannot say "read-only".
    src = np.arange(4.0)
    src.flags.writeable = False
    t = dlbridge.from_dlpack(src)
    with pytest.raises(BufferError):
        t.__dlpack__()


def test_tensor_released_after_tf_tensor_dies():
    t = dlbridge.arange(4)
    rc = refcount(t)
    x = _to_tf(t)
    del x
    gc.collect()
    assert refcount(t) == rc


def test_tf_tensor_outlives_dlbridge_tensor():
    t = dlbridge.arange(5, dtype="float32")
    x = _to_tf(t)
    del t
    gc.collect()
    assert x.numpy().tolist() == [0.0, 1.0, 2.0, 3.0, 4.0]


def test_numpy_dlbridge_tf_chain_numpy_deleted_first():
    a = np.arange(6, dtype=np.int64)
    address = np_address(a)
    t = dlbridge.from_dlpack(a)
    del a
    x = _to_tf(t)
    del t
    gc.collect()
    assert _tf_address(x) == address
    assert x.numpy().tolist() == [0, 1, 2, 3, 4, 5]


# ---- one semantics on every path (`_semantics.py`) -----------------------------------------


test_every_path_gives_the_answer_of_dlpack = every_path_test("tensorflow")


def test_memory_from_a_legacy_only_producer_is_never_made_writable():
    from _kernels import kernels as K

    source = tf.constant([1.0, 2.0, 3.0])
    tensor = dlbridge.from_dlpack(source)  # TensorFlow exports only legacy capsules
    assert tensor.version is None and tensor.readonly
    assert not np.from_dlpack(tensor).flags.writeable
    assert read_capsule(tensor.__dlpack__(max_version=(1, 3)))["flags"] & FLAG_READ_ONLY
    with pytest.raises(TypeError, match="legacy DLPack capsule, which cannot say"):
        K.fill(tensor, 0.0)
    with pytest.raises(TypeError, match="read-only"):
        K.fill(source, 0.0)
    assert source.numpy().tolist() == [1.0, 2.0, 3.0]


# -- dlbridge.distributed (Ray and Dask frames) ---------------------------------------------------


@pytest.mark.parametrize("read_only", [True, False], ids=["read-only-bytes", "writable-bytes"])
def test_frames_rebuild_a_tensorflow_tensor(read_only):
    # TensorFlow exports legacy capsules (read-only to dlbridge) and has no read-only tensors:
    # the receiver copies read-only bytes, and shares writable ones.
    import dlbridge.distributed as dd

    for dtype in (tf.float32, tf.bfloat16, tf.int64, tf.bool, tf.complex64):
        x = tf.cast(tf.reshape(tf.range(12), (3, 4)), dtype)
        header, frames = dd.serialize(x)
        assert header["kind"] == "tensorflow" and header["flags"] & FLAG_READ_ONLY
        raw = frames[0].raw()
        data = bytes(raw) if read_only else bytearray(raw)
        result = dd.deserialize(header, [data])
        assert isinstance(result, type(x)) and result.dtype == x.dtype
        np.testing.assert_array_equal(
            tf.cast(result, tf.float64).numpy(), tf.cast(x, tf.float64).numpy()
        )
