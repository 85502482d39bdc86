"""JAX <-> dlbridge.

JAX 0.10 facts these tests rely on:
- 64-bit types need `jax_enable_x64` (set below, before any array exists; this file runs in
  its own process);
- `jax.Array.__dlpack__` accepts max_version/copy/dl_device but always returns a legacy
  `dltensor` capsule (so dlbridge sees version None, flags 0, readonly False even though JAX
  arrays are immutable); exports bool, int8..int64, uint8..uint64, float16, bfloat16,
  float32, float64, complex64, complex128 and the float8 family (e3m4, e4m3, e4m3b11fnuz,
  e4m3fn, e4m3fnuz, e5m2, e5m2fnuz, e8m0fnu); int4 has no DLPack equivalent;
- `jax.dlpack.from_dlpack(x)` calls `x.__dlpack__(stream=None)` only (no max_version): it
  needs a legacy capsule, so a read-only dlbridge tensor is refused by dlbridge itself
  (BufferError). It imports all the dtypes above;
- on CPU it imports zero-copy only when the data is 64-byte aligned (otherwise it copies),
  and only "trivial" strides (row-major or a transposition; size-1 dimensions may carry any
  stride); stepped or negative strides raise JaxRuntimeError (UNIMPLEMENTED);
- JAX arrays are immutable: no write test (writing shared memory under a live jax.Array is
  undefined behaviour for JAX), values are compared instead.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

from _frameworks import import_framework

jax = import_framework("jax", "jax")
jax.config.update("jax_enable_x64", True)
jnp = import_framework("jax.numpy", "jax")
ml_dtypes = import_framework("ml_dtypes", "ml_dtypes")

import dlbridge
from _helpers import (
    COMPLEX_DTYPES,
    FLOAT8_DTYPES,
    INTEGER_DTYPES,
    SHAPE_IDS,
    SHAPES,
    aligned_empty,
    np_address,
    pattern_bytes,
    read_bytes,
    refcount,
    size_of,
    write_bytes,
)
from _semantics import every_path_test
from dlbridge.check.abi import FLAG_READ_ONLY, NAME_LEGACY
from dlbridge.check.capsules import capsule_name, read_capsule

JAX_DTYPES = [
    "bool",
    *INTEGER_DTYPES,
    "float16",
    "bfloat16",
    "float32",
    "float64",
    *COMPLEX_DTYPES,
    *FLOAT8_DTYPES,
]


def _np_dtype(name):
    """numpy dtype for a dlbridge dtype name (ml_dtypes for bfloat16 and the float8s)."""
    if name == "bfloat16" or name.startswith("float8_"):
        return np.dtype(getattr(ml_dtypes, name))
    return np.dtype(name)


def _jax_source(shape, name):
    raw = pattern_bytes(name, size_of(shape))
    host = np.frombuffer(raw, dtype=_np_dtype(name)).reshape(shape)
    return jnp.asarray(host)


def _jax_bytes(x) -> bytes:
    return np.asarray(x).tobytes()


# --------------------------------------------------------------------------------------------
# JAX -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", JAX_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_jax_to_dlbridge(shape, name):
    x = _jax_source(shape, name)
    t = dlbridge.from_dlpack(x)
    assert t.dtype == name
    assert t.shape == shape
    assert t.device == (1, 0)
    assert t.version is None  # JAX always answers with a legacy capsule
    if size_of(shape):
        assert t.data_ptr == x.unsafe_buffer_pointer()  # zero-copy
        assert read_bytes(t.data_ptr, t.nbytes) == _jax_bytes(x)


def test_jax_transposed_to_dlbridge():
    # jnp.transpose materialises a new buffer; the exported strides are row-major.
    x = jnp.arange(12.0, dtype=jnp.float32).reshape(3, 4).T
    t = dlbridge.from_dlpack(x)
    assert t.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(t), np.asarray(x))


def test_jax_array_memory_kept_alive():
    x = jnp.arange(6, dtype=jnp.int32)
    address = x.unsafe_buffer_pointer()
    t = dlbridge.from_dlpack(x)
    del x
    gc.collect()
    assert t.data_ptr == address
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4, 5]


def test_jax_copy_true():
    x = jnp.arange(6, dtype=jnp.int32)
    t = dlbridge.from_dlpack(x, copy=True)
    assert t.data_ptr != x.unsafe_buffer_pointer()
    assert np.asarray(t).tolist() == [0, 1, 2, 3, 4, 5]


# --------------------------------------------------------------------------------------------
# dlbridge -> JAX
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", JAX_DTYPES)
@pytest.mark.parametrize("shape", SHAPES, ids=SHAPE_IDS)
def test_dlbridge_to_jax(shape, name):
    t = dlbridge.zeros(shape, dtype=name)
    raw = pattern_bytes(name, size_of(shape))
    write_bytes(t.data_ptr, raw)
    x = jax.dlpack.from_dlpack(t)
    assert x.dtype == _np_dtype(name)
    assert x.shape == shape
    assert _jax_bytes(x) == raw
    if size_of(shape) and t.data_ptr % 64 == 0:
        # JAX shares 64-byte aligned host memory (it copies anything less aligned).
        assert x.unsafe_buffer_pointer() == t.data_ptr


@pytest.mark.parametrize(
    "shape", [(2, 3), (5,), (2, 1, 4), (1,) * 32], ids=["2x3", "5", "2x1x4", "32dims"]
)
def test_dlbridge_aligned_to_jax_is_zero_copy(shape):
    host = aligned_empty(shape, np.float32)
    host[...] = np.arange(size_of(shape), dtype=np.float32).reshape(shape)
    t = dlbridge.from_dlpack(host)
    x = jax.dlpack.from_dlpack(t)
    assert x.unsafe_buffer_pointer() == np_address(host) == t.data_ptr
    np.testing.assert_array_equal(np.asarray(x), host)


def test_dlbridge_transposed_to_jax():
    host = aligned_empty((3, 4), np.float32)
    host[...] = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = dlbridge.from_dlpack(host.T)
    x = jax.dlpack.from_dlpack(t)  # a transposition is a "trivial" layout for XLA
    assert x.shape == (4, 3)
    np.testing.assert_array_equal(np.asarray(x), host.T)


def test_dlbridge_size1_odd_stride_to_jax():
    host = aligned_empty((8,), np.float32)
    host[...] = np.arange(8, dtype=np.float32)
    view = np.lib.stride_tricks.as_strided(host, shape=(2, 1, 4), strides=(16, 4 * 77, 4))
    t = dlbridge.from_dlpack(view)
    x = jax.dlpack.from_dlpack(t)
    np.testing.assert_array_equal(np.asarray(x), view)


def test_dlbridge_stepped_to_jax_is_refused_by_jax():
    # XLA only takes row-major layouts up to a permutation: JAX raises, dlbridge stays intact.
    host = aligned_empty((10,), np.float32)
    t = dlbridge.from_dlpack(host[::2])
    with pytest.raises(Exception, match="stride"):
        jax.dlpack.from_dlpack(t)
    assert t.shape == (5,)


def test_dlbridge_readonly_to_jax_is_buffer_error():
    # JAX asks for a legacy capsule, which cannot say "read-only": dlbridge must refuse.
    host = aligned_empty((4,), np.float32)
    host.flags.writeable = False
    t = dlbridge.from_dlpack(host)
    assert t.readonly
    with pytest.raises(BufferError):
        jax.dlpack.from_dlpack(t)


def test_dlbridge_copy_to_jax():
    t = dlbridge.arange(5, dtype="int64")
    x = jax.dlpack.from_dlpack(t, copy=True)
    assert x.tolist() == [0, 1, 2, 3, 4]
    # JAX 0.10 does not pass copy= to __dlpack__ and, on CPU, shares a 64-byte aligned
    # buffer even with copy=True (its own documentation promises a copy): the pointer is not
    # asserted here.


def test_rust_owned_tensors_are_zero_copy_into_jax():
    # dlbridge allocates its own tensors 64-byte aligned, which XLA needs to share them.
    for dtype in ["int64", "float32", "float64", "complex64"]:
        t = dlbridge.arange(7, dtype=dtype)
        x = jax.dlpack.from_dlpack(t)
        assert x.unsafe_buffer_pointer() == t.data_ptr, dtype
        z = dlbridge.zeros((3, 4), dtype=dtype)
        assert jax.dlpack.from_dlpack(z).unsafe_buffer_pointer() == z.data_ptr, dtype


def test_tensor_released_after_jax_array_dies():
    host = aligned_empty((4,), np.float32)
    t = dlbridge.from_dlpack(host)
    rc = refcount(t)
    x = jax.dlpack.from_dlpack(t)
    assert x.unsafe_buffer_pointer() == t.data_ptr
    del x
    gc.collect()
    assert refcount(t) == rc


def test_jax_array_outlives_dlbridge_tensor():
    host = aligned_empty((4,), np.float64)
    host[...] = [1.0, 2.0, 3.0, 4.0]
    t = dlbridge.from_dlpack(host)
    x = jax.dlpack.from_dlpack(t)
    del t, host
    gc.collect()
    assert x.tolist() == [1.0, 2.0, 3.0, 4.0]


def test_jax_dlbridge_jax_round_trip():
    x = jnp.arange(8, dtype=jnp.bfloat16).reshape(2, 4)
    y = jax.dlpack.from_dlpack(dlbridge.from_dlpack(x))
    assert y.dtype == jnp.bfloat16
    assert y.unsafe_buffer_pointer() == x.unsafe_buffer_pointer()
    assert (np.asarray(y) == np.asarray(x)).all()


# ---- one semantics on every path (`_semantics.py`) -----------------------------------------


test_every_path_gives_the_answer_of_dlpack = every_path_test("jax")


# ---- legacy capsules: writability that is not known is not claimed --------------------------


def test_memory_from_a_legacy_only_producer_is_never_made_writable():
    from _kernels import kernels as K

    source = jnp.arange(4.0, dtype=jnp.float32)
    tensor = dlbridge.from_dlpack(source)  # JAX exports only legacy capsules
    assert tensor.version is None and tensor.readonly
    # The reproduction: NumPy gets a read-only array, the JAX array stays intact.
    array = np.from_dlpack(tensor)
    assert not array.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        array[0] = 42
    assert np.asarray(source).tolist() == [0.0, 1.0, 2.0, 3.0]
    # The versioned re-export says READ_ONLY; the legacy one stays possible.
    info = read_capsule(tensor.__dlpack__(max_version=(1, 3)))
    assert info["flags"] & FLAG_READ_ONLY
    assert capsule_name(tensor.__dlpack__()) == NAME_LEGACY
    # Typed arguments refuse to write it, saying why.
    for argument in (tensor, source):
        with pytest.raises(TypeError, match=r"got float32 shape \(4,\) .*\(read-only"):
            K.fill(argument, 1.0)
    with pytest.raises(TypeError, match="legacy DLPack capsule, which cannot say"):
        K.fill(tensor, 1.0)
    assert K.total(source) == 6.0


def test_explain_says_why_a_jax_array_is_refused_for_writing():
    # JAX exports its host memory read-only through the buffer protocol (and only legacy
    # capsules through DLPack): `dlbridge.explain` shows the path and the read-only flag that
    # make a writable argument refuse it.
    explained = dlbridge.explain(jnp.arange(3.0))
    assert explained["type"].startswith("jaxlib")
    assert explained["argument"]["path"] == "buffer"
    assert explained["argument"]["read_only"]
    assert explained["writable_argument"]["read_only"]


def test_explain_says_a_jax_import_is_a_read_only_legacy_tensor():
    # Asked for a versioned capsule, JAX answers with a legacy one (no retry needed): the
    # import is read-only, since a legacy tensor cannot say its memory may be written.
    explained = dlbridge.explain(jnp.arange(3.0, dtype=jnp.float32))["import"]
    assert explained["path"] == "dlpack-legacy"
    assert (explained["negotiation"], explained["version"]) == ((), None)
    assert (explained["read_only"], explained["copied"]) == (True, False)
    assert (explained["dtype"], explained["shape"], explained["device"]) == (
        "float32",
        (3,),
        (1, 0),
    )
    assert dlbridge.from_dlpack(jnp.arange(3.0)).readonly
    copied = dlbridge.explain(jnp.arange(3.0), copy=True)["import"]
    assert copied["copied"] and not copied["read_only"]


# --- return_like never changes the data type (issue 28) ------------------------------------


def test_return_like_refuses_what_jax_without_x64_would_narrow():
    """JAX's default (64-bit types off) would make int32 of an int64 result, float32 of a
    float64 one: refused, naming both fixes. The module turned x64 on; off here, then on."""
    from _kernels import kernels

    jax.config.update("jax_enable_x64", False)
    try:
        pixels = jnp.asarray(np.arange(12, dtype=np.uint8))
        with pytest.raises(TypeError) as refused:
            kernels.byte_histogram(pixels)
        message = str(refused.value)
        assert "int64" in message and "int32" in message
        assert 'jax.config.update("jax_enable_x64", True)' in message
        assert "narrower data type" in message
        with pytest.raises(TypeError, match="float64"):
            kernels.zeros_like_framework(pixels, "float64", [3])
        kept = kernels.zeros_like_framework(pixels, "float32", [2, 3])
        assert kept.dtype == jnp.float32 and kept.shape == (2, 3)
    finally:
        jax.config.update("jax_enable_x64", True)


def test_return_like_with_x64_keeps_int64_and_float64_values():
    from _kernels import kernels

    pixels = jnp.asarray(np.array([[1, 1], [2, 255]], dtype=np.uint8))
    counts = kernels.byte_histogram(pixels)
    assert counts.dtype == jnp.int64
    assert counts[1] == 2 and counts[2] == 1 and counts[255] == 1 and int(counts.sum()) == 4
    halved = kernels.halves(jnp.asarray(np.array([2.0**60 + 2.0, 1 / 3])))
    assert halved.dtype == jnp.float64
    assert np.asarray(halved).tolist() == [2.0**59 + 1.0, 1 / 6]
