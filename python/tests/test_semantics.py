"""One semantics on every path (`_semantics.py`): every way dlbridge reads a PyTorch, NumPy
or dlbridge tensor (the exchange table, NumPy's array struct, the buffer protocol, raw
capsules, `__dlpack__`; `from_dlpack` and typed arguments) gives the answer of the
producer's own `__dlpack__`, or a stricter one, for every kind of tensor in
`dlbridge.check.catalogue`. The other frameworks run the same check in their interop files.
"""

import json
import os

import pytest

import dlbridge
from _frameworks import import_framework
from _helpers import python_without_exchange_api
from _kernels import kernels as K
from _kernels import require_kernels
from _semantics import HERE, check_kind
from conftest import UNDER_ASAN
from dlbridge.check import catalogue

import_framework("torch", "torch")

#: The PyTorch kinds its exchange table (and, for some, `__dlpack__`) refuses by throwing a
#: C++ exception, which aborts under AddressSanitizer (`conftest.UNDER_ASAN`).
TORCH_REFUSED_IN_CPP = {
    "sparse_coo",
    "sparse_csr",
    "quantized_qint8",
    "nested_strided",
    "nested_jagged",
    "meta",
    "dtype_bcomplex32",
    "dtype_bits16",
    "dtype_bits1x8",
    "dtype_bits2x4",
    "dtype_bits4x2",
    "dtype_bits8",
    "dtype_qint32",
    "dtype_qint8",
    "dtype_quint2x4",
    "dtype_quint4x2",
    "dtype_quint8",
}


def _kinds():
    torch_kinds = [] if UNDER_ASAN else catalogue.kinds("torch")
    for kind in torch_kinds + catalogue.kinds("numpy") + catalogue.kinds("dlbridge"):
        throws = kind.framework == "torch" and kind.name in TORCH_REFUSED_IN_CPP
        marks = [pytest.mark.cpp_exception] if throws else []
        yield pytest.param(kind, marks=marks, id=f"{kind.framework}-{kind.name}")


@pytest.mark.parametrize("kind", list(_kinds()))
def test_every_path_gives_the_answer_of_dlpack(kind):
    problems, _ = check_kind(kind)
    assert problems == []


@pytest.mark.cpp_exception  # builds PyTorch's catalogue
def test_the_fast_paths_are_the_ones_compared():
    taken = {}
    for framework, name in [
        ("torch", "transposed"),
        ("torch", "requires_grad_leaf"),
        ("numpy", "read_only"),
        ("numpy", "masked_array"),
        ("dlbridge", "from_legacy_capsule"),
    ]:
        kind = next(k for k in catalogue.kinds(framework) if k.name == name)
        taken[(framework, name)] = check_kind(kind)[1]
    assert taken[("torch", "transposed")] == {"TensorArg": "exchange", "TensorArgMut": "exchange"}
    # Read as `x.detach()` through the table; never written while grad mode is on.
    assert taken[("torch", "requires_grad_leaf")] == {"TensorArg": "exchange"}
    assert taken[("numpy", "read_only")]["TensorArg"] == "numpy"
    assert taken[("numpy", "read_only")]["buffer TensorArgMut"] == "buffer"
    assert taken[("numpy", "masked_array")]["TensorArg"] == "buffer"
    assert taken[("dlbridge", "from_legacy_capsule")]["TensorArgMut"] == "exchange"


def run_without_exchange_api(framework: str) -> dict:
    """`_semantics.py FRAMEWORK` in a process of its own with `DLBRIDGE_NO_EXCHANGE_API=1`
    (read once per process): the reference path instead of the exchange table."""
    require_kernels()  # the child process calls them
    output = python_without_exchange_api(os.path.join(HERE, "_semantics.py"), framework)
    return json.loads(output.strip().splitlines()[-1])


@pytest.mark.parametrize(
    "framework",
    [pytest.param("torch", marks=pytest.mark.cpp_exception), "numpy", "dlbridge"],
)
def test_every_path_without_the_exchange_api(framework):
    found = run_without_exchange_api(framework)
    assert found["problems"] == []
    if framework != "numpy":
        # No table: the reference path (the buffer path is not taken for a type with one).
        plain = "transposed" if framework == "torch" else "rust_owned"
        assert found["paths"][plain]["TensorArg"] == "dlpack"


@pytest.mark.cpp_exception
def test_what_the_table_cannot_export_is_refused_as_dlpack_refuses_it():
    import torch

    sparse = torch.eye(3).to_sparse()
    quantized = torch.quantize_per_tensor(torch.ones(3), 0.1, 0, torch.qint8)
    for tensor, words in [(sparse, "layout other than torch.strided"), (quantized, "QInt")]:
        for copy in (None, True, False):
            with pytest.raises(BufferError, match=words):
                dlbridge.from_dlpack(tensor, copy=copy)
        with pytest.raises(BufferError, match=words):
            K.total(tensor)
    # The same without the table: `run_without_exchange_api` checks every catalogue kind.
