"""The catalogue of odd framework tensors (`dlbridge.check.catalogue`) and the reference reader
(`dlbridge.check.capsules.reference`).

Only numpy and torch are exercised here (they can share a process); the other frameworks'
kinds are run one per process by `python -m dlbridge.check.catalogue FRAMEWORK`.
"""

from __future__ import annotations

import gc
import os
import subprocess
import sys
import warnings

import numpy as np
import pytest

from _frameworks import import_framework
from _helpers import COMPLEX_DTYPES, FLOAT_DTYPES, INTEGER_DTYPES, NUMPY_DTYPES, collect
from dlbridge.check import catalogue
from dlbridge.check.abi import (
    FLAG_IS_SUBBYTE_TYPE_PADDED,
    FLAG_READ_ONLY,
    kDLCPU,
    kDLCUDA,
    kDLFloat4_e2m1fn,
)
from dlbridge.check.capsules import Exported, Refused, normalized_strides, reference
from dlbridge.check.catalogue import TORCH_NEGATED_KINDS, Kind
from dlbridge.check.fake_producers import (
    AlwaysTypeErrorProducer,
    FixedCapsuleProducer,
    IntProducer,
    OldestProducer,
    OldProducer,
    OneTensorProducer,
    RecordingProducer,
    TypeErrorOnMaxVersionProducer,
)
from dlbridge.check.records import make_from_numpy, make_major2, make_managed

if os.environ.get("DLBRIDGE_TESTS_UNDER_ASAN") == "1":
    # Building PyTorch's catalogue probes dtypes through C++ exceptions, which abort under a
    # preloaded AddressSanitizer runtime (conftest.UNDER_ASAN); this file tests the reference
    # reader, not dlbridge's unsafe code.
    pytest.skip("PyTorch's catalogue throws C++ exceptions", allow_module_level=True)
torch = import_framework("torch", "torch")


def _kinds(framework):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return {kind.name: kind for kind in catalogue.kinds(framework)}


NUMPY = _kinds("numpy")
TORCH = _kinds("torch")


def _make(kind):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return kind.make()


def _torch_bytes(tensor) -> bytes:
    """The values of a torch tensor, row-major, as bytes (any dtype)."""
    tensor = tensor.detach().resolve_conj().resolve_neg().contiguous()
    try:
        return tensor.numpy().tobytes()
    except TypeError:  # bfloat16, float8, ...: no numpy dtype; view the same bytes
        return tensor.reshape(-1).view(torch.uint8).numpy().tobytes()


# --------------------------------------------------------------------------------------------
# The catalogue itself.
# --------------------------------------------------------------------------------------------


def test_frameworks_and_unknown_name():
    # The frameworks whose modules define `kinds()`, in the registry's order.
    assert catalogue.FRAMEWORKS == (
        "numpy",
        "torch",
        "jax",
        "tensorflow",
        "paddle",
        "pyarrow",
        "dlbridge",
    )
    with pytest.raises(ValueError, match="unknown framework"):
        catalogue.kinds("mxnet")


def test_module_imports_no_framework():
    code = (
        "import sys\n"
        "import dlbridge.check.catalogue as c\n"
        "heavy = {'torch', 'jax', 'tensorflow', 'paddle', 'pyarrow'}\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
        "c.kinds('numpy')\n"
        "assert not heavy & set(sys.modules), heavy & set(sys.modules)\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


@pytest.mark.parametrize(("framework", "catalogued"), [("numpy", NUMPY), ("torch", TORCH)])
def test_kinds_are_well_formed(framework, catalogued):
    assert catalogued
    for name, kind in catalogued.items():
        assert isinstance(kind, Kind)
        assert kind.framework == framework and kind.name == name
        assert kind.note and "\n" not in kind.note
        assert callable(kind.make)


#: Plain strided PyTorch tensors of odd shapes and layouts, which every path must read.
TORCH_PLAIN_KINDS = [
    "zero_size",
    "zero_dim",
    "channels_last",
    "expanded",
    "storage_offset",
    "flip",
    "transposed",
    "inference_mode",
]


def test_required_kinds_present():
    for name in [
        "read_only",
        "byte_swapped",
        "structured",
        "object",
        "negative_strides",
        "broadcast",
        "zero_size",
        "zero_dim",
        "longdouble",
        "datetime64",
        "unicode",
        "masked_array",
        "matrix",
        "recarray",
        "unaligned_float64",
        "fortran_order",
        "noncontiguous_slice",
    ] + [f"dtype_{d}" for d in NUMPY_DTYPES]:
        assert name in NUMPY, name
    for name in [
        "requires_grad_leaf",
        "non_leaf",
        "requires_grad_leaf_view",
        "non_leaf_view",
        "parameter",
        "parameter_no_grad",
        "sparse_coo",
        "sparse_csr",
        "quantized_qint8",
        "conj_view",
        *TORCH_NEGATED_KINDS,
        "conj_neg_view",
        "nested_strided",
        "nested_jagged",
        "meta",
        *TORCH_PLAIN_KINDS,
    ] + [
        f"dtype_{d}"
        for d in [
            *FLOAT_DTYPES,
            "bfloat16",
            "float8_e4m3fn",
            "float8_e5m2",
            *INTEGER_DTYPES,
            "bool",
            "complex32",
            *COMPLEX_DTYPES,
            "bits8",
        ]
    ]:
        assert name in TORCH, name


@pytest.mark.parametrize(
    ("framework", "name"), [("numpy", n) for n in NUMPY] + [("torch", n) for n in TORCH]
)
def test_every_kind_builds_and_reads(framework, name):
    kind = (NUMPY if framework == "numpy" else TORCH)[name]
    first, second = _make(kind), _make(kind)
    assert first is not second  # a fresh object each call
    result = reference(first)
    assert isinstance(result, (Exported, Refused))
    if isinstance(result, Refused):
        assert result.exception and isinstance(result.message, str)
        return
    assert result.capsule_name == "dltensor_versioned"
    assert result.version is not None and result.version[0] == 1
    assert len(result.shape) == len(result.strides)
    assert result.device == (kDLCPU, 0)
    _, bits, lanes = result.dtype
    if (bits * lanes) % 8 == 0:
        assert result.elements is not None
        assert len(result.elements) == result.size * (bits * lanes // 8)
    else:
        assert result.elements is None


# --------------------------------------------------------------------------------------------
# Element bytes against the framework's own values.
# --------------------------------------------------------------------------------------------

NUMPY_VALUE_KINDS = [
    "read_only",
    "negative_strides",
    "broadcast",
    "zero_size",
    "zero_dim",
    "masked_array",
    "matrix",
    "recarray_field_aligned",
    "unaligned_float64",
    "fortran_order",
    "noncontiguous_slice",
    "dtype_bool",
    "dtype_int8",
    "dtype_uint16",
    "dtype_float16",
    "dtype_complex64",
    "dtype_complex128",
    "dtype_uint64",
]


@pytest.mark.parametrize("name", NUMPY_VALUE_KINDS)
def test_numpy_element_bytes(name):
    array = _make(NUMPY[name])
    result = reference(array)
    assert isinstance(result, Exported), result
    expected = np.ascontiguousarray(np.asarray(array))
    assert result.elements == expected.tobytes()
    assert result.shape == np.shape(array)
    assert result.strides == tuple(s // array.itemsize for s in array.strides)


TORCH_VALUE_KINDS = [
    "parameter_no_grad",
    *TORCH_PLAIN_KINDS,
    "dtype_float32",
    "dtype_bfloat16",
    "dtype_float8_e4m3fn",
    "dtype_complex64",
    "dtype_complex32",
    "dtype_bool",
    "dtype_uint64",
    "dtype_float4_e2m1fn_x2",
]


@pytest.mark.parametrize("name", TORCH_VALUE_KINDS)
def test_torch_element_bytes(name):
    tensor = _make(TORCH[name])
    result = reference(tensor)
    assert isinstance(result, Exported), result
    assert result.elements == _torch_bytes(tensor)
    assert result.shape == tuple(tensor.shape)
    assert normalized_strides(result.shape, result.strides) == normalized_strides(
        tensor.shape, tensor.stride()
    )


def test_torch_expanded_keeps_stride_zero():
    result = reference(_make(TORCH["expanded"]))
    assert result.shape == (3, 4) and result.strides == (1, 0)


def test_numpy_negative_strides_and_broadcast_strides():
    assert reference(_make(NUMPY["negative_strides"])).strides == (-1,)
    assert reference(_make(NUMPY["broadcast"])).strides == (0, 1)


# --------------------------------------------------------------------------------------------
# Refusals and flags.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["requires_grad_leaf", "non_leaf", "requires_grad_leaf_view", "non_leaf_view", "parameter"],
)
def test_torch_requires_grad_is_refused(name):
    tensor = _make(TORCH[name])
    assert tensor.requires_grad
    result = reference(tensor)
    assert isinstance(result, Refused)
    assert result.exception == "BufferError"
    assert result.first_error is None


@pytest.mark.parametrize(
    "name",
    [
        "sparse_coo",
        "sparse_csr",
        "quantized_qint8",
        "conj_view",
        "nested_jagged",
        "meta",
        "dtype_bits8",
    ],
)
def test_torch_unexportable_is_refused(name):
    result = reference(_make(TORCH[name]))
    assert isinstance(result, Refused) and result.exception == "BufferError", result


@pytest.mark.parametrize("name", TORCH_NEGATED_KINDS)
def test_torch_kinds_with_the_negation_bit_carry_it(name):
    """Each kind that stands for the negation bit has it: the differential tests rely on these
    being the lazy views they are named for (a later torch that resolves one would turn the
    kind into an ordinary tensor and the test into one that cannot fail)."""
    assert _make(TORCH[name]).is_neg()


def test_torch_neg_view_documented_behaviour():
    """torch 2.15 exports the negative view without its sign (see the module's Findings);
    if a later torch refuses it, that is the correct answer."""
    tensor = _make(TORCH["neg_view"])
    assert tensor.is_neg()
    result = reference(tensor)
    if isinstance(result, Refused):
        assert result.exception == "BufferError"
    else:
        raw = np.array([2.0, 3.0], dtype=np.float32).tobytes()  # the memory, not the values
        assert result.elements == raw
        assert _torch_bytes(tensor) == (-np.array([2.0, 3.0], dtype=np.float32)).tobytes()


@pytest.mark.parametrize(
    "name",
    [
        "byte_swapped",
        "structured",
        "object",
        "longdouble",
        "datetime64",
        "unicode",
        "recarray",
        "recarray_field",
    ],
)
def test_numpy_unexportable_is_refused(name):
    result = reference(_make(NUMPY[name]))
    assert isinstance(result, Refused) and result.exception == "BufferError", result


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("read_only", True),
        ("broadcast", True),
        ("unaligned_float64", True),
        ("dtype_float64", False),
        ("negative_strides", False),
    ],
)
def test_numpy_read_only_flag(name, expected):
    result = reference(_make(NUMPY[name]))
    assert isinstance(result, Exported)
    assert result.read_only is expected
    assert bool(result.flags & FLAG_READ_ONLY) is expected


def test_torch_versioned_is_writable():
    result = reference(_make(TORCH["dtype_float32"]))
    assert result.version == (1, 3) and result.read_only is False


@pytest.mark.parametrize(
    "obj_factory",
    [
        lambda: np.arange(6.0).reshape(2, 3),
        lambda: torch.arange(6.0).reshape(2, 3),
    ],
)
def test_legacy_capsule_is_read_only(obj_factory):
    obj = obj_factory()
    result = reference(obj, max_version=None)
    assert isinstance(result, Exported)
    assert result.capsule_name == "dltensor"
    assert result.version is None and result.flags == 0
    assert result.read_only is True
    assert result.elements == np.asarray(obj).tobytes()


def test_numpy_read_only_legacy_is_refused():
    result = reference(_make(NUMPY["read_only"]), max_version=None)
    assert isinstance(result, Refused) and result.exception == "BufferError"


# --------------------------------------------------------------------------------------------
# Lifetimes: the deleter runs exactly once.
# --------------------------------------------------------------------------------------------


@pytest.mark.parametrize("max_version", [(1, 3), None])
def test_deleter_called_once_counted(max_version):
    producer = RecordingProducer(shape=(2, 3), values=np.arange(6.0, dtype=np.float32).tobytes())
    result = reference(producer, max_version=max_version)
    assert isinstance(result, Exported)
    assert result.elements == np.arange(6.0, dtype=np.float32).tobytes()
    assert len(producer.records) == 1
    record = producer.records[0]
    assert record.deleter_calls == 1
    collect()
    assert record.deleter_calls == 1
    assert record.destructor_errors == []
    assert all(name.startswith(b"used_") for name in record.destructor_seen)
    expected = "dltensor" if max_version is None else "dltensor_versioned"
    assert result.capsule_name == expected


@pytest.mark.parametrize("cls", [OldProducer, OldestProducer, TypeErrorOnMaxVersionProducer])
def test_old_producers_are_retried(cls):
    producer = cls(values=np.arange(6.0, dtype=np.float32).tobytes())
    result = reference(producer)
    assert isinstance(result, Exported)
    assert result.first_error is not None and result.first_error.startswith("TypeError")
    assert result.capsule_name == "dltensor" and result.read_only
    assert result.elements == np.arange(6.0, dtype=np.float32).tobytes()
    assert [r.deleter_calls for r in producer.records] == [1]


def test_always_type_error_is_refused_after_retry():
    producer = AlwaysTypeErrorProducer()
    result = reference(producer)
    assert isinstance(result, Refused) and result.exception == "TypeError"
    assert result.first_error is not None
    assert len(producer.calls) == 2


def test_major_version_2_is_released_not_read():
    record = make_major2()
    producer = FixedCapsuleProducer(record.capsule)
    with pytest.raises(ValueError, match="major version 2"):
        reference(producer)
    collect()
    assert record.deleter_calls == 1


def test_not_a_capsule():
    with pytest.raises(ValueError, match="not a PyCapsule"):
        reference(IntProducer())


def test_numpy_refcount_returns_to_baseline():
    for name in ["dtype_float64", "negative_strides", "read_only", "zero_size", "zero_dim"]:
        array = _make(NUMPY[name])
        gc.collect()
        baseline = sys.getrefcount(array)
        for max_version in [(1, 3), (1, 3), None]:
            reference(array, max_version=max_version)
        gc.collect()
        assert sys.getrefcount(array) == baseline, name


def test_torch_use_count_returns_to_baseline():
    for name in ["dtype_float32", "transposed", "storage_offset", "zero_size", "expanded"]:
        tensor = _make(TORCH[name])
        gc.collect()
        baseline = tensor._use_count()
        for max_version in [(1, 3), (1, 3), None]:
            result = reference(tensor, max_version=max_version)
            assert isinstance(result, Exported)
        gc.collect()
        assert tensor._use_count() == baseline, name


# --------------------------------------------------------------------------------------------
# The reader on hand-built tensors (independent of any framework's export).
# --------------------------------------------------------------------------------------------


def _from_record(record):
    return reference(OneTensorProducer(record))


def test_gather_negative_and_zero_strides():
    base = np.arange(12.0, dtype=np.float32).reshape(3, 4)
    view = base[::-1, ::2]
    record = make_from_numpy(view)
    result = _from_record(record)
    assert result.strides == (-4, 2)
    assert result.elements == np.ascontiguousarray(view).tobytes()
    assert record.deleter_calls == 1

    record = make_from_numpy(base[0], strides=(0,))  # one element repeated
    result = _from_record(record)
    assert result.elements == np.full(4, 0.0, dtype=np.float32).tobytes()


def test_null_strides_mean_row_major():
    values = np.arange(6.0, dtype=np.float32)
    record = make_managed((2, 3), "float32", strides=None, values=values.tobytes())
    result = _from_record(record)
    assert result.strides == (3, 1)
    assert result.elements == values.tobytes()


def test_byte_offset_is_added():
    values = np.arange(8.0, dtype=np.float32)
    record = make_managed((2,), "float32", values=values.tobytes(), byte_offset=8)
    result = _from_record(record)
    assert result.byte_offset == 8
    assert result.data == record.data_address + 8
    assert result.elements == values[2:4].tobytes()


def test_null_data_zero_size():
    record = make_managed((0, 3), "float32", data=None, strides=(7, 9))
    result = _from_record(record)
    assert result.data == 0 and result.elements == b""
    assert normalized_strides(result.shape, result.strides) == (0, 0)


def test_sub_byte_and_device_memory_are_not_gathered():
    record = make_managed((6,), (kDLFloat4_e2m1fn, 4, 1))
    assert _from_record(record).elements is None
    padded = make_managed(
        (6,), (kDLFloat4_e2m1fn, 4, 1), values=bytes(range(1, 7)), flags=FLAG_IS_SUBBYTE_TYPE_PADDED
    )
    assert _from_record(padded).elements == bytes(range(1, 7))
    on_gpu = make_managed((2,), "float32", device=(kDLCUDA, 0))
    result = _from_record(on_gpu)
    assert result.elements is None and result.device == (kDLCUDA, 0)
    assert on_gpu.deleter_calls == 1


def test_normalized_strides():
    assert normalized_strides((2, 1, 3), (3, 99, 1)) == (3, 0, 1)
    assert normalized_strides((0, 3), (3, 1)) == (0, 0)
    assert normalized_strides((), ()) == ()
    assert normalized_strides((4,), (-1,)) == (-1,)
    with pytest.raises(ValueError):
        normalized_strides((2, 3), (1,))
