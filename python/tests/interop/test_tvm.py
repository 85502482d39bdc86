"""Apache TVM 0.27 (apache-tvm) <-> dlbridge: TVM's own tensors, its `from_dlpack` and its
compiled functions. (tvm-ffi alone, TVM's runtime layer, is interop/test_tvm_ffi.py.)

apache-tvm 0.27.0.post1 facts these tests rely on:
- `tvm.runtime.Tensor` is tvm-ffi's tensor (a subclass of `tvm_ffi.core.Tensor`, registered
  as "ffi.Tensor"); `tvm.runtime.empty(shape, dtype)` allocates it 64-byte aligned;
- `tvm.runtime.from_dlpack(x)` is `tvm_ffi.from_dlpack(x, require_alignment=64,
  require_contiguous=True)`: a tensor whose first byte is not 64-byte aligned is refused with
  RuntimeError "FromDLPack: Data is not aligned to 64 bytes.", a non-compact one with
  "FromDLPack: Tensor is not contiguous." (tvm/ffi/container/tensor.h, FromDLPack);
- dtypes both ways: bool, int8..int64, uint8..uint64, float16, bfloat16, float32, float64,
  the float8 family, float6_e2m3fn, float6_e3m2fn, float4_e2m1fn and the packed sub-byte
  integers int4, uint4, int1, uint1; complex is not a TVM dtype: `tvm.runtime.empty` refuses
  it ("unknown dtype"), `from_dlpack` takes the memory but the tensor's `dtype` (and `numpy()`,
  `repr`) raise ValueError "unknown type_code=5"; re-exported, it is complex again;
- TVM's tensors have no read-only flag: a read-only dlbridge tensor that TVM takes (through
  dlbridge's C exchange table, versioned and flagged READ_ONLY) is writable on TVM's side and
  re-exported without the flag; `__dlpack__(copy=True)` raises BufferError (dlbridge copies);
- a compiled function checks each argument's dtype, shape and compactness, not alignment.
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import (
    FLOAT8_DTYPES,
    INTEGER_DTYPES,
    CountingDeleters,
    HandsOver,
    aligned_empty,
    read_bytes,
    refcount,
    rss_bytes,
    under_address_sanitizer,
    write_bytes,
)

tvm = import_framework("tvm", "apache-tvm")
te = tvm.te

SUBBYTE_BITS = {
    "float6_e2m3fn": 6,
    "float6_e3m2fn": 6,
    "float4_e2m1fn": 4,
    "int4": 4,
    "uint4": 4,
    "int1": 1,
    "uint1": 1,
}
BYTE_DTYPES = ["bool", *INTEGER_DTYPES, "float16", "bfloat16", "float32", "float64"]
TVM_DTYPES = [*BYTE_DTYPES, *FLOAT8_DTYPES, *SUBBYTE_BITS]
#: Sub-byte integers, which legacy tensors hold one byte per element (dlbridge's are packed).
LEGACY_PADDED = ["int4", "uint4", "int1", "uint1"]
NUMPY_NAMES = ["bool", *INTEGER_DTYPES, "float16", "float32", "float64"]
ELEMENT_BITS = {
    "bool": 8,
    "float16": 16,
    "bfloat16": 16,
    "float32": 32,
    "float64": 64,
    **dict.fromkeys(FLOAT8_DTYPES, 8),
    **{name: int(name.lstrip("uint")) for name in INTEGER_DTYPES},
    **SUBBYTE_BITS,
}
SHAPE = (3, 5)
ALIGNMENT = 64


def nbytes(shape, dtype) -> int:
    count = int(np.prod(shape))
    return (count * ELEMENT_BITS[dtype] + 7) // 8  # sub-byte types packed, as both pack them


def pattern(dtype, size) -> bytes:
    if dtype == "bool":
        return bytes(i % 2 for i in range(size))
    return bytes((i * 37 + 11) % 251 for i in range(size))


def test_every_dtype_tvm_lists_is_tested():
    # Sub-byte types of TVM's own parser outside this list would be found here.
    for name in TVM_DTYPES:
        assert str(tvm.runtime.empty((1,), name).dtype) == name


# --------------------------------------------------------------------------------------------
# TVM -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", TVM_DTYPES)
def test_tvm_tensor_to_dlbridge(name):
    y = tvm.runtime.empty(SHAPE, name)
    assert isinstance(y, tvm.runtime.Tensor)
    size = nbytes(SHAPE, name)
    values = pattern(name, size)
    write_bytes(y.data_ptr(), values)
    t = dlbridge.from_dlpack(y)
    assert (t.dtype, t.shape, t.device) == (name, SHAPE, (1, 0))
    assert t.data_ptr == y.data_ptr() and t.data_ptr % ALIGNMENT == 0
    assert t.nbytes == size and read_bytes(t.data_ptr, size) == values
    assert not t.readonly  # TVM's memory is writable, its versioned tensor says so
    write_bytes(t.data_ptr, bytes(size))
    assert read_bytes(y.data_ptr(), size) == bytes(size)  # the same memory both ways


def test_tvm_view_with_byte_offset_to_dlbridge():
    y = tvm.runtime.empty((4, 4), "float32")
    write_bytes(y.data_ptr(), np.arange(16, dtype=np.float32).tobytes())
    view = y._create_view((2, 4), "float32", 32)  # rows 2 and 3
    t = dlbridge.from_dlpack(view)
    assert t.data_ptr == y.data_ptr() + 32 == view.data_ptr()
    np.testing.assert_array_equal(np.asarray(t), [[8, 9, 10, 11], [12, 13, 14, 15]])


def test_tvm_copy_true_is_a_dlbridge_copy_aligned_for_tvm():
    y = tvm.runtime.empty((3, 3), "int16")
    write_bytes(y.data_ptr(), pattern("int16", 18))
    t = dlbridge.from_dlpack(y, copy=True)  # TVM refuses to copy: dlbridge copies
    assert t.flags & dlbridge.FLAG_IS_COPIED and t.data_ptr != y.data_ptr()
    assert t.data_ptr % ALIGNMENT == 0
    assert read_bytes(t.data_ptr, 18) == pattern("int16", 18)
    assert tvm.runtime.from_dlpack(t).data_ptr() == t.data_ptr


def test_tvm_memory_lives_while_dlbridge_holds_it():
    y = tvm.runtime.empty((1000,), "float64")
    write_bytes(y.data_ptr(), np.arange(1000.0).tobytes())
    t = dlbridge.from_dlpack(y)
    del y
    gc.collect()
    np.testing.assert_array_equal(np.asarray(t), np.arange(1000.0))


# --------------------------------------------------------------------------------------------
# dlbridge -> TVM
# --------------------------------------------------------------------------------------------


def _dlbridge_allocations(name):
    """Every way dlbridge allocates memory, for one dtype: the creation functions, a copy of
    a strided tensor, and the copy `__dlpack__(copy=True)` exports (legacy and versioned)."""
    t = dlbridge.zeros(SHAPE, name)
    write_bytes(t.data_ptr, pattern(name, t.nbytes))
    yield "zeros", t
    yield "empty", dlbridge.empty(SHAPE, name)
    yield "copy", t.copy()
    if name in NUMPY_NAMES:  # a strided view, made by NumPy over dlbridge's memory
        strided = np.from_dlpack(dlbridge.zeros((3, 10), name))[:, ::2]
        yield "copy of a strided view", dlbridge.from_dlpack(strided).copy()
    if name in LEGACY_PADDED:
        # A legacy consumer reads these one byte per element: dlbridge's packed tensor is
        # refused on that path (tvm-ffi asks `__dlpack__` for it only without an exchange
        # table; dlbridge's table hands it over versioned).
        with pytest.raises(BufferError, match="legacy"):
            t.__dlpack__(copy=True)
    else:
        yield "__dlpack__(copy=True)", HandsOver(t.__dlpack__(copy=True))
    yield "__dlpack__(copy=True), versioned", t.__dlpack__(copy=True, max_version=(1, 3))


@pytest.mark.parametrize("name", TVM_DTYPES)
def test_every_dlbridge_allocation_is_aligned_and_imports_into_tvm(name):
    for how, source in _dlbridge_allocations(name):
        y = tvm.runtime.from_dlpack(source)  # refused if not 64-byte aligned
        assert isinstance(y, tvm.runtime.Tensor), how
        assert str(y.dtype) == name and tuple(y.shape) == SHAPE, how
        assert y.data_ptr() % ALIGNMENT == 0, how


@pytest.mark.parametrize("name", TVM_DTYPES)
def test_dlbridge_tensor_to_tvm_zero_copy(name):
    t = dlbridge.zeros(SHAPE, name)
    values = pattern(name, t.nbytes)
    write_bytes(t.data_ptr, values)
    y = tvm.runtime.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr
    assert read_bytes(y.data_ptr(), t.nbytes) == values
    del t
    gc.collect()
    assert read_bytes(y.data_ptr(), len(values)) == values  # TVM keeps dlbridge's memory


@pytest.mark.parametrize("name", ["complex64", "complex128"])
def test_complex_is_carried_by_tvm_but_not_named(name):
    # Not a TVM dtype: `tvm.runtime.empty` refuses it; `from_dlpack` takes the memory, but the
    # tensor's dtype cannot be read (ValueError), so no TVM function can use it; handed back,
    # dlbridge sees the same complex tensor.
    with pytest.raises(ValueError, match="unknown dtype"):
        tvm.runtime.empty((2,), name)
    t = dlbridge.arange(4, name)
    rc = refcount(t)
    y = tvm.runtime.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr and tuple(y.shape) == (4,)
    with pytest.raises(ValueError, match="type_code=5"):
        _ = y.dtype
    back = dlbridge.from_dlpack(y)
    assert back.dtype == name and back.data_ptr == t.data_ptr
    np.testing.assert_array_equal(np.asarray(back), np.arange(4))
    del y, back
    gc.collect()
    assert refcount(t) == rc  # TVM released dlbridge's export


def test_misaligned_numpy_view_is_refused_by_tvm_and_released():
    base = aligned_empty((65,), "float32", ALIGNMENT)
    base[:] = np.arange(65)
    view = base[1:]  # 4 bytes past a 64-byte boundary
    t = dlbridge.from_dlpack(view)
    before = (refcount(t), refcount(base))
    for _ in range(1000):  # through dlbridge's C exchange table
        with pytest.raises(RuntimeError, match="not aligned to 64 bytes"):
            tvm.runtime.from_dlpack(t)
    counting = CountingDeleters()
    for _ in range(100):  # through a legacy capsule, its deleter counted
        capsule = counting.interpose_capsule(t.__dlpack__())
        with pytest.raises(RuntimeError, match="not aligned to 64 bytes"):
            tvm.runtime.from_dlpack(HandsOver(capsule))
        del capsule
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (100, 0, [])
    assert (refcount(t), refcount(base)) == before
    np.testing.assert_array_equal(np.asarray(t), np.arange(1, 65))
    copy = t.copy()  # dlbridge's copy is aligned: TVM takes it
    np.testing.assert_array_equal(np.from_dlpack(tvm.runtime.from_dlpack(copy)), view)


@pytest.mark.parametrize(
    "make",
    [lambda a: a.T, lambda a: a[:, ::2], lambda a: a[::-1]],
    ids=["transposed", "stepped", "reversed"],
)
def test_strided_dlbridge_tensors_are_refused_by_tvm(make):
    base = aligned_empty((8, 8), "float32", ALIGNMENT)
    base[...] = np.arange(64).reshape(8, 8)
    view = make(base)
    t = dlbridge.from_dlpack(view)
    rc = refcount(t)
    with pytest.raises(RuntimeError, match=r"not contiguous|not aligned"):
        tvm.runtime.from_dlpack(t)
    gc.collect()
    assert refcount(t) == rc
    y = tvm.runtime.from_dlpack(t.copy())  # compact and aligned
    np.testing.assert_array_equal(np.from_dlpack(y), view)


def test_read_only_is_lost_in_tvm():
    # TVM's tensors have no read-only flag: what it takes as READ_ONLY it re-exports writable.
    # Pass read-only tensors to TVM only as inputs a function does not write.
    src = aligned_empty((4,), "float64", ALIGNMENT)
    src.flags.writeable = False
    t = dlbridge.from_dlpack(src)
    assert t.readonly
    y = tvm.runtime.from_dlpack(t)
    assert y.data_ptr() == t.data_ptr
    assert not dlbridge.from_dlpack(y).readonly


# --------------------------------------------------------------------------------------------
# A compiled function on dlbridge tensors
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["int8", "int32", "uint16", "float16", "float32", "float64"])
def test_compiled_kernel_writes_dlbridge_memory(name):
    n = 10
    a = te.placeholder((n,), name="A", dtype=name)
    b = te.compute((n,), lambda i: a[i] + a[i], name="B")
    double = tvm.compile(te.create_prim_func([a, b]), target="llvm")["main"]
    x = dlbridge.arange(n, name)
    out = dlbridge.zeros((n,), name)
    double(tvm.runtime.from_dlpack(x), tvm.runtime.from_dlpack(out))
    np.testing.assert_array_equal(np.asarray(out), 2 * np.arange(n).astype(name))


def test_compiled_kernel_refuses_wrong_arguments_cleanly():
    a = te.placeholder((4,), name="A", dtype="float32")
    b = te.compute((4,), lambda i: a[i] * 2.0, name="B")
    scale = tvm.compile(te.create_prim_func([a, b]), target="llvm")["main"]
    wrong = dlbridge.zeros((4,), "float64")
    rc = refcount(wrong)
    with pytest.raises(TypeError, match="dtype"):
        scale(tvm.runtime.from_dlpack(wrong), tvm.runtime.from_dlpack(wrong))
    gc.collect()
    assert refcount(wrong) == rc


def test_exchanges_with_tvm_do_not_leak():
    # 20,000 exchanges each way after a warm-up: reference counts unchanged, resident memory
    # grown by less than 1 MiB (a leaked tensor of ~50 bytes per exchange would exceed it; not
    # looked at under AddressSanitizer, whose allocator quarantines freed memory).
    t = dlbridge.zeros((16,), "float32")
    y = tvm.runtime.empty((16,), "float32")

    def exchange():
        tvm.runtime.from_dlpack(t)
        dlbridge.from_dlpack(y)

    for _ in range(1000):
        exchange()
    gc.collect()
    counts, before = (refcount(t), refcount(y)), rss_bytes()
    for _ in range(20_000):
        exchange()
    gc.collect()
    assert (refcount(t), refcount(y)) == counts
    if not under_address_sanitizer():
        assert rss_bytes() - before < 1 << 20


def test_tvm_releases_each_dlbridge_export_once():
    t = dlbridge.zeros((4, 4), "float32")
    counting = CountingDeleters()
    for _ in range(1000):  # legacy capsules (what tvm-ffi asks `__dlpack__` for)
        y = tvm.runtime.from_dlpack(HandsOver(counting.interpose_capsule(t.__dlpack__())))
        assert y.data_ptr() == t.data_ptr
        del y
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1000, 0, [])
