"""MXNet 1.9.1 <-> dlbridge, both ways, in MXNet's own environment (scripts/mxnet-env.sh:
CPython 3.11, NumPy 1.23.5; scripts/python-tests.sh runs this file with that interpreter).

MXNet speaks DLPack only through functions and only with legacy capsules:
`mx.nd.to_dlpack_for_read(x)` / `mx.nd.to_dlpack_for_write(x)` make a `dltensor` capsule
(compact, NULL strides), and `mx.nd.from_dlpack(capsule)` takes one (no `__dlpack__` objects,
no versioned capsules, compact layouts only). Its bool is `uint1` over one byte per element,
the convention from before kDLBool, which dlbridge reads padded (a legacy sub-byte integer:
DataType::legacy_sub_byte_padding in the core crate).
"""

from __future__ import annotations

import ctypes
import gc
import warnings

import numpy as np
import pytest

import dlbridge
from _docs import python_block
from _helpers import CountingDeleters, read_bytes, rust_tensor_with_bytes
from dlbridge.check.capsules import read_capsule
from dlbridge.check.records import make_managed

with warnings.catch_warnings():
    # MXNet 1.9.1 uses NumPy aliases that NumPy 1.23 deprecates (np.bool).
    warnings.simplefilter("ignore", DeprecationWarning)
    import mxnet as mx

READ_ONLY = dlbridge.FLAG_READ_ONLY
PADDED = dlbridge.FLAG_IS_SUBBYTE_TYPE_PADDED

#: Every dtype MXNet's NDArray has, and the name dlbridge gives MXNet's DLPack type for it.
MXNET_DTYPES = {
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
    "uint8": "uint8",
    "int8": "int8",
    "int32": "int32",
    "int64": "int64",
    "bool": "uint1",  # kDLUInt, bits 1, one byte per element
}
#: What MXNet's from_dlpack takes of dlbridge's types (bool aside: see the bool tests).
TO_MXNET = ["float16", "float32", "float64", "uint8", "int8", "int32", "int64"]

CAPSULE_KINDS = {"read": mx.nd.to_dlpack_for_read, "write": mx.nd.to_dlpack_for_write}
NINE_BOOLS = np.array([1, 0, 0, 1, 0, 0, 1, 1, 0], dtype=bool)


def data_address(x) -> int:
    """The address of an NDArray's first element (MXNet's C API)."""
    address = ctypes.c_void_p()
    mx.base.check_call(mx.base._LIB.MXNDArrayGetData(x.handle, ctypes.byref(address)))
    return address.value


def mxnet_array(dtype: str, shape=(2, 3)):
    count = int(np.prod(shape))
    values = np.arange(count) % 2 if dtype == "bool" else np.arange(count) * 3 - 5
    return mx.nd.array(values.reshape(shape), dtype=dtype)


def contents(t: dlbridge.Tensor) -> bytes:
    return read_bytes(t.data_ptr, t.nbytes)


# --------------------------------------------------------------------------------------------
# MXNet -> dlbridge
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", CAPSULE_KINDS)
@pytest.mark.parametrize("dtype", MXNET_DTYPES)
def test_mxnet_to_dlbridge_zero_copy(dtype, kind):
    x = mxnet_array(dtype)
    t = dlbridge.from_dlpack(CAPSULE_KINDS[kind](x))
    assert t.data_ptr == data_address(x)
    assert (t.dtype, t.shape, t.version) == (MXNET_DTYPES[dtype], (2, 3), None)
    assert t.nbytes == x.asnumpy().nbytes  # bool: one byte per element, none lost
    assert contents(t) == x.asnumpy().tobytes()
    # A legacy capsule cannot say that its memory may be written, not even MXNet's "for
    # write" one: dlbridge holds it read-only, and re-exports it versioned as READ_ONLY.
    assert t.readonly
    assert t.flags == (PADDED if dtype == "bool" else 0)
    assert read_capsule(t.__dlpack__(max_version=(1, 3)))["flags"] == READ_ONLY | t.flags
    # Zero-copy: MXNet's later writes are seen.
    x[:] = 1
    mx.nd.waitall()
    assert contents(t) == x.asnumpy().tobytes()


@pytest.mark.parametrize("dtype", [d for d in MXNET_DTYPES if d != "bool"])
def test_a_write_capsule_vouched_for_is_written_through_dlbridge(dtype):
    """MXNet's `to_dlpack_for_write` hands its memory out to be written; the caller says so
    with `legacy_writable=True`, and what dlbridge writes, MXNet reads in its own array."""
    x = mxnet_array(dtype)
    t = dlbridge.from_dlpack(mx.nd.to_dlpack_for_write(x), legacy_writable=True)
    assert t.data_ptr == data_address(x) and not t.readonly and t.version is None
    # Re-exported versioned without READ_ONLY: other consumers may write it too.
    assert read_capsule(t.__dlpack__(max_version=(1, 3)))["flags"] == 0
    written = np.asarray(memoryview(t))
    written[...] = np.full((2, 3), 7, dtype=dtype)
    assert x.asnumpy().tolist() == np.full((2, 3), 7, dtype=dtype).tolist()


def test_a_vouched_write_capsule_is_a_writable_kernel_argument():
    from _kernels import kernels

    x = mx.nd.zeros((2, 3), dtype="float32")
    out = dlbridge.from_dlpack(mx.nd.to_dlpack_for_write(x), legacy_writable=True)
    kernels.fill(out, 2.5)
    assert x.asnumpy().tolist() == [[2.5] * 3] * 2
    # Unvouched, the same capsule is read-only, to kernels too.
    held = dlbridge.from_dlpack(mx.nd.to_dlpack_for_write(x))
    assert held.readonly
    with pytest.raises(TypeError, match="read-only"):
        kernels.fill(held, 1.0)
    with pytest.raises(ValueError, match="read-only"):
        np.asarray(memoryview(held))[0, 0] = 1.0
    assert x.asnumpy().tolist() == [[2.5] * 3] * 2


def test_explain_says_who_vouched():
    x = mxnet_array("float32")
    vouched = dlbridge.explain(mx.nd.to_dlpack_for_write(x), legacy_writable=True)["import"]
    assert not vouched["read_only"]
    assert "vouched for by the caller (legacy_writable=True)" in vouched["writability"]
    plain = dlbridge.explain(mx.nd.to_dlpack_for_read(x))["import"]
    assert plain["read_only"] and "legacy capsule" in plain["writability"]
    assert "legacy_writable=True" in plain["writability"]


def test_a_vouched_tensor_goes_back_to_mxnet_writable_both_ways():
    x = mxnet_array("int32")
    t = dlbridge.from_dlpack(mx.nd.to_dlpack_for_write(x), legacy_writable=True)
    back = mx.nd.from_dlpack(t.__dlpack__())
    assert data_address(back) == data_address(x)
    back[:] = 5
    mx.nd.waitall()
    assert x.asnumpy().tolist() == [[5] * 3] * 2


def test_mxnet_views_and_scalars():
    x = mx.nd.array(np.arange(12, dtype=np.float32).reshape(3, 4))
    row = dlbridge.from_dlpack(mx.nd.to_dlpack_for_read(x[1]))
    assert row.data_ptr == data_address(x) + 16
    assert np.frombuffer(contents(row), np.float32).tolist() == [4.0, 5.0, 6.0, 7.0]
    scalar = dlbridge.from_dlpack(mx.nd.to_dlpack_for_read(mx.nd.array(np.float32(3.5))))
    assert (scalar.shape, np.frombuffer(contents(scalar), np.float32).tolist()) == ((), [3.5])


def test_the_capsule_is_legacy_and_consumed_once():
    capsule = mx.nd.to_dlpack_for_read(mxnet_array("float32"))
    description = read_capsule(capsule)
    assert (description["name"], description["strides"]) == (b"dltensor", None)
    dlbridge.from_dlpack(capsule)
    with pytest.raises(Exception, match="consumed"):
        dlbridge.from_dlpack(capsule)


# --------------------------------------------------------------------------------------------
# dlbridge -> MXNet
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("dtype", TO_MXNET)
def test_dlbridge_to_mxnet_zero_copy_and_writable(dtype):
    t = rust_tensor_with_bytes(dlbridge, (2, 3), dtype)
    before = contents(t)
    # Asked without max_version, dlbridge answers with the legacy capsule MXNet needs.
    capsule = t.__dlpack__()
    assert read_capsule(capsule)["name"] == b"dltensor"
    m = mx.nd.from_dlpack(capsule)
    assert data_address(m) == t.data_ptr
    assert (m.shape, str(np.dtype(m.dtype))) == ((2, 3), dtype)
    assert m.asnumpy().tobytes() == before
    # dlbridge's own memory is writable: MXNet's writes land in the tensor.
    m[:] = 2
    mx.nd.waitall()
    assert contents(t) == np.full((2, 3), 2, dtype=dtype).tobytes()
    # MXNet keeps the memory alive without the dlbridge object.
    del t
    gc.collect()
    assert m.asnumpy().tolist() == np.full((2, 3), 2, dtype=dtype).tolist()


def test_round_trip_through_mxnet_keeps_the_address():
    source = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = dlbridge.from_dlpack(source)
    m = mx.nd.from_dlpack(t.__dlpack__())
    back = dlbridge.from_dlpack(mx.nd.to_dlpack_for_read(m))
    assert t.data_ptr == data_address(m) == back.data_ptr == source.ctypes.data
    assert np.frombuffer(contents(back), np.float32).tolist() == source.ravel().tolist()


def test_offset_views_reach_mxnet_with_their_values():
    """MXNet's from_dlpack ignores byte_offset (it reads from `data`); dlbridge exports a view
    with `data` at its first element and byte_offset 0, so MXNet reads the right values."""
    source = np.arange(8, dtype=np.float32)
    t = dlbridge.from_dlpack(source[3:7])
    capsule = t.__dlpack__()
    description = read_capsule(capsule)
    assert (description["data"], description["byte_offset"]) == (source.ctypes.data + 12, 0)
    assert mx.nd.from_dlpack(capsule).asnumpy().tolist() == [3.0, 4.0, 5.0, 6.0]
    # What MXNet does with a producer's non-zero byte_offset: the offset is lost.
    record = make_managed((4,), "float32", versioned=False, values=source.tobytes(), byte_offset=8)
    assert mx.nd.from_dlpack(record.capsule()).asnumpy().tolist() == [0.0, 1.0, 2.0, 3.0]


def test_mxnet_refuses_versioned_capsules_which_are_then_released():
    counting = CountingDeleters()
    capsule = counting.interpose_capsule(dlbridge.zeros((3,)).__dlpack__(max_version=(1, 3)))
    with pytest.raises(AssertionError, match="consumed only once"):
        mx.nd.from_dlpack(capsule)
    del capsule
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])


def _strided_views():
    a = np.arange(24, dtype=np.float32).reshape(4, 6)
    return {
        "transposed": a.T,
        "stepped": a[:, ::2],
        "negative": a[::-1],
    }


@pytest.mark.parametrize("layout", ["transposed", "stepped", "negative"])
def test_strided_tensors_are_refused_by_mxnet_or_copied_honestly(layout):
    view = _strided_views()[layout]
    t = dlbridge.from_dlpack(view)
    counting = CountingDeleters()
    capsule = counting.interpose_capsule(t.__dlpack__())
    assert read_capsule(capsule)["strides"] == tuple(s // 4 for s in view.strides)
    # MXNet checks the strides dlbridge sends and refuses what is not compact, leaving the
    # capsule unconsumed: its destructor releases the tensor once.
    with pytest.raises(mx.base.MXNetError, match="only support compact tensor"):
        mx.nd.from_dlpack(capsule)
    del capsule
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])
    # The honest way in: a compact copy, flagged as one, which MXNet takes.
    copy = dlbridge.from_dlpack(t, copy=True)
    assert copy.flags & dlbridge.FLAG_IS_COPIED
    assert mx.nd.from_dlpack(copy.__dlpack__()).asnumpy().tolist() == view.tolist()


def test_mxnet_refuses_kdlbool():
    counting = CountingDeleters()
    capsule = counting.interpose_capsule(dlbridge.zeros((3,), dtype="bool").__dlpack__())
    with pytest.raises(mx.base.MXNetError, match="Unknown DLDataType"):
        mx.nd.from_dlpack(capsule)
    del capsule
    gc.collect()
    assert (counting.calls, counting.outstanding) == (1, 0)


# --------------------------------------------------------------------------------------------
# bool: uint1 over one byte per element
# --------------------------------------------------------------------------------------------


def test_bool_round_trips_keep_every_value():
    x = mx.nd.array(NINE_BOOLS, dtype="bool")
    t = dlbridge.from_dlpack(mx.nd.to_dlpack_for_read(x))
    assert (t.dtype, t.nbytes, t.flags) == ("uint1", 9, PADDED)
    assert contents(t) == NINE_BOOLS.tobytes()

    # A copy keeps the nine bytes and says that they are padded.
    copy = t.copy()
    assert (copy.nbytes, copy.flags) == (9, dlbridge.FLAG_IS_COPIED | PADDED)
    assert contents(copy) == NINE_BOOLS.tobytes()
    assert read_capsule(copy.__dlpack__(max_version=(1, 3)))["flags"] & PADDED

    # Back to MXNet from the copy (a legacy capsule, one byte per element) and zero-copy.
    from_copy = mx.nd.from_dlpack(copy.__dlpack__())
    assert data_address(from_copy) == copy.data_ptr
    assert from_copy.asnumpy().tolist() == NINE_BOOLS.tolist()
    again = mx.nd.from_dlpack(t.__dlpack__())
    assert data_address(again) == data_address(x)
    assert again.asnumpy().tolist() == NINE_BOOLS.tolist()


def test_padded_bool_has_no_buffer_format():
    t = dlbridge.from_dlpack(mx.nd.to_dlpack_for_read(mx.nd.array(NINE_BOOLS, dtype="bool")))
    with pytest.raises(BufferError, match="uint1"):
        memoryview(t)


# --------------------------------------------------------------------------------------------
# Leaks: every deleter runs once, both ways
# --------------------------------------------------------------------------------------------

EXCHANGES = 2_000


def test_mxnet_deleters_run_once_through_dlbridge():
    x = mxnet_array("float32")
    counting = CountingDeleters()
    for _ in range(EXCHANGES):
        t = dlbridge.from_dlpack(counting.interpose_capsule(mx.nd.to_dlpack_for_read(x)))
        del t
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (EXCHANGES, 0, [])


def test_dlbridge_deleters_run_once_through_mxnet():
    t = dlbridge.zeros((2, 3))
    counting = CountingDeleters()
    for _ in range(EXCHANGES):
        m = mx.nd.from_dlpack(counting.interpose_capsule(t.__dlpack__()))
        del m
    mx.nd.waitall()
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (EXCHANGES, 0, [])


def test_an_unconsumed_mxnet_capsule_is_released_once():
    """MXNet's capsule destructor calls `ctypes.pythonapi.PyCapsule_GetPointer` with a
    `c_void_p`: it works only while nobody imposes another prototype on that shared function
    (dlbridge.check.capi binds its own), and then releases the tensor once."""
    counting = CountingDeleters()
    capsule = counting.interpose_capsule(mx.nd.to_dlpack_for_write(mxnet_array("int32")))
    del capsule
    gc.collect()
    assert (counting.calls, counting.outstanding, counting.unexpected) == (1, 0, [])


# --------------------------------------------------------------------------------------------
# `dlbridge check mxnet`: the checker's capsule-only adapter on the real framework
# --------------------------------------------------------------------------------------------

#: What MXNet 1.9.1 breaks, each seen by hand in this file's tests: non-compact layouts are
#: refused with MXNetError (the protocol asks for BufferError), even the harmless odd stride of
#: an extent-1 dimension and negative strides, and `byte_offset` is ignored (wrong values).
MXNET_MUST_FAILURES = {
    "consumer.extent-one-strides",
    "consumer.negative-strides",
    "consumer.byte-offset",
}


def test_dlbridge_check_mxnet_reports_what_mxnet_breaks_and_nothing_else():
    import json
    import subprocess
    import sys

    run = subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", "mxnet", "dlbridge", "--json", "--quiet"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert run.returncode == 1, run.stderr  # 1: a framework breaks a MUST rule
    report = json.loads(run.stdout)
    assert report["versions"]["mxnet"] == "1.9.1"

    outcomes = {r["rule"]: r for r in report["frameworks"]["mxnet"]}
    must_failures = {
        name
        for name, r in outcomes.items()
        if r["outcome"] == "fail" and report["rules"][name]["level"] == "MUST"
    }
    assert must_failures == MXNET_MUST_FAILURES
    assert "byte_offset 8" in outcomes["consumer.byte-offset"]["detail"]
    # The producer rules it can answer through its functions pass; the rest are n/a, never pass.
    assert outcomes["consumer.legacy-capsule"]["outcome"] == "pass"
    assert outcomes["consumer.deleter-once"]["outcome"] == "pass"
    assert outcomes["producer.keyword-only"]["outcome"] == "n/a"
    assert "capsule-only" in outcomes["producer.keyword-only"]["detail"]

    assert report["summary"]["dlbridge"]["must_failures"] == 0
    assert report["summary"]["dlbridge"]["should_failures"] == 0
    pairs = {(p["producer"], p["consumer"]): p for p in report["matrix"]}
    assert set(pairs) == {(a, b) for a in ("mxnet", "dlbridge") for b in ("mxnet", "dlbridge")}
    for pair in pairs.values():
        assert pair["counts"]["fail"] == 0, pair["failures"]
        assert pair["counts"]["pass"] > 0
        assert pair["zero_copy"] is True


def test_the_guide_factory_for_a_framework_without_dlpack_is_checked(tmp_path):
    # The guide's `mylib.py` (docs/guide/src/checker.md: the python block that imports mxnet),
    # written out as a user would, is a factory `dlbridge check mylib:make` checks, and dlbridge
    # imports its tensor.
    import json
    import os
    import subprocess
    import sys

    mylib = python_block("import mxnet as mx")
    (tmp_path / "mylib.py").write_text(mylib, encoding="utf-8")
    sys.path.insert(0, str(tmp_path))
    try:
        import mylib as module
    finally:
        sys.path.remove(str(tmp_path))
    imported = dlbridge.from_dlpack(module.make())
    assert (imported.shape, imported.dtype) == ((2, 2), "float32")
    assert np.asarray(imported).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    run = subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", "mylib:make", "--json", "--quiet"],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        timeout=300,
        check=False,
    )
    assert run.returncode in (0, 1), run.stderr[-3000:]  # 1: MXNet breaks a MUST rule
    report = json.loads(run.stdout)
    assert "mylib:make" in report["frameworks"], sorted(report["frameworks"])
    assert report["frameworks"]["mylib:make"], "no rule was checked"
