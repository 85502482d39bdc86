"""Every message a kernel's caller can meet, in one table that a person reviews:
docs/kernel-messages.md, generated here from real calls of the test kernels (typed arguments
of dlbridge-pyo3) with tensors of NumPy, PyTorch, JAX, the buffer protocol and hand-made
DLPack producers.

The test fails when the table in the repository differs from what the calls raise now, so
that a changed message is seen in review: `DLBRIDGE_UPDATE_MESSAGES=1 pytest
test_kernel_messages.py` writes the table anew. And it checks the rules the messages keep:
the user's terms (shapes, strides in elements, data type names; DLPack's field names only
where the producer broke the protocol), and "read-only" only where writability is what
failed, always with the reason.
"""

from __future__ import annotations

import os
import re

import numpy as np
import pytest

import dlbridge
from _frameworks import import_framework
from _kernels import kernels as K
from dlbridge.check.fake_producers import OneTensorProducer
from dlbridge.check.records import make_managed

torch = import_framework("torch", "torch")

#: Several rows make PyTorch throw a C++ exception (its sparse export, the inference check's
#: `_version`), which aborts under AddressSanitizer; JAX is imported only when a row runs.
pytestmark = pytest.mark.cpp_exception


def _jnp():
    return import_framework("jax.numpy", "jax")


ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
TABLE = os.path.join(ROOT, "docs", "kernel-messages.md")

#: DLPack's own words, which belong in messages about producers that broke the protocol only.
DLPACK_WORDS = ("DLTensor", "byte_offset", "DLManagedTensor", "flags =")


def _misaligned():
    return np.frombuffer(bytearray(20), dtype=np.float32, offset=2, count=4)


def _read_only_numpy():
    array = np.zeros(3, dtype=np.float32)
    array.flags.writeable = False
    return array


def _inference_tensor():
    with torch.inference_mode():
        return torch.zeros(3)


def _self_overlapping():
    return torch.zeros(4).as_strided((3, 2), (1, 1))


def _device_tensor():
    return OneTensorProducer(make_managed((3,), "float32", device=(2, 0)), device=(2, 0))


def _negative_extent():
    return OneTensorProducer(make_managed((-1,), "float32", buffer_bytes=16))


def _overlapping_arguments():
    shared = np.zeros(4, dtype=np.float32)
    return K.copy_into(shared, shared)


def _legacy_dlbridge_tensor():
    return dlbridge.from_dlpack(np.zeros(3, dtype=np.float32).__dlpack__())


#: (situation, call, whether writability is what fails, whether the producer broke DLPack).
CASES = [
    ("a float64 NumPy array for float32", lambda: K.total(np.zeros(3)), False, False),
    ("a JAX int32 array for float32", lambda: K.total(_jnp().zeros(3, "int32")), False, False),
    ("a 2-d array for a 1-d argument", lambda: K.add_one(np.zeros((2, 2))), False, False),
    (
        "a vector for a 2- or 3-dimensional argument",
        lambda: K.matrix_sums(np.zeros(4)),
        False,
        False,
    ),
    ("a 3x3 array for a 2x2 argument", lambda: K.eye2(np.zeros((3, 3))), False, False),
    (
        "a strided array for a C-contiguous argument",
        lambda: K.packed_rgb_total(np.zeros((2, 4, 3), np.uint8)[:, ::2]),
        False,
        False,
    ),
    (
        "an RGB argument given 4 channels",
        lambda: K.channel_means(np.zeros((2, 2, 4), np.uint8)),
        False,
        False,
    ),
    ("a misaligned NumPy view", lambda: K.total(_misaligned()), False, False),
    ("a CUDA tensor for a host argument", lambda: K.total(_device_tensor()), False, False),
    (
        "a host tensor for a CUDA argument",
        lambda: K.cuda_vector(np.zeros(3, dtype=np.float32)),
        False,
        False,
    ),
    ("a list, not a tensor", lambda: K.total([1.0, 2.0]), False, False),
    ("a read-only NumPy array written", lambda: K.fill(_read_only_numpy(), 1.0), True, False),
    (
        "np.broadcast_to written",
        lambda: K.fill(np.broadcast_to(np.zeros(1, np.float32), (4,)), 1.0),
        True,
        False,
    ),
    ("a JAX array written", lambda: K.fill(_jnp().zeros(3, "float32"), 1.0), True, False),
    ("bytes written", lambda: K.add_one(memoryview(bytes(16)).cast("d")), True, False),
    (
        "a legacy capsule written",
        lambda: K.fill(np.zeros(3, dtype=np.float32).__dlpack__(), 1.0),
        True,
        False,
    ),
    (
        "a dlbridge.Tensor from a legacy capsule written",
        lambda: K.fill(_legacy_dlbridge_tensor(), 1.0),
        True,
        False,
    ),
    (
        "a torch.expand (stride 0) written",
        lambda: K.fill(torch.zeros(1).expand(4), 1.0),
        False,
        False,
    ),
    (
        "a self-overlapping as_strided written",
        lambda: K.fill(_self_overlapping(), 1.0),
        False,
        False,
    ),
    ("one array as input and output", _overlapping_arguments, False, False),
    (
        "a tensor that requires grad written in grad mode",
        lambda: K.fill(torch.zeros(3, requires_grad=True), 1.0),
        False,
        False,
    ),
    ("an inference tensor written", lambda: K.fill(_inference_tensor(), 1.0), False, False),
    ("a negated PyTorch view", lambda: K.total(torch.ones(3)._neg_view()), False, False),
    (
        "a conjugated PyTorch view",
        lambda: K.total(torch.ones(3, dtype=torch.complex64).conj()),
        False,
        False,
    ),
    ("a sparse PyTorch tensor", lambda: K.total(torch.eye(3).to_sparse()), False, False),
    (
        "an int64 result returned to JAX without x64",
        lambda: K.byte_histogram(_jnp().zeros(4, "uint8")),
        False,
        False,
    ),
    ("a descriptor with a negative extent", lambda: K.total(_negative_extent()), False, True),
]


def _message(call) -> tuple[str, str]:
    try:
        call()
    except Exception as error:  # noqa: BLE001 - every exception is a row of the table
        text = re.sub(r"0x[0-9a-f]{6,}", "0x…", str(error))
        return type(error).__name__, text
    raise AssertionError("the call was not refused")


def _table() -> str:
    lines = [
        "# What a kernel's caller can meet",
        "",
        "Every refusal of a Rust kernel's typed arguments (dlbridge-pyo3's `TensorArg`,",
        "`TensorArgMut`, `CudaArg`, `return_like`), as raised for real by the test kernels.",
        "Generated by `python/tests/test_kernel_messages.py` (`DLBRIDGE_UPDATE_MESSAGES=1`",
        "writes it anew); the test fails when a message changes and this file does not, so",
        "each change is reviewed here. PyO3 adds `argument 'x':` in front of an argument's",
        "message. Addresses are shown as `0x…`.",
        "",
        "| situation | exception | message |",
        "|---|---|---|",
    ]
    for situation, call, _, _ in CASES:
        kind, text = _message(call)
        text = text.replace("|", "\\|").replace("\n", " ")
        lines.append(f"| {situation} | `{kind}` | {text} |")
    return "\n".join(lines) + "\n"


def test_the_table_is_up_to_date():
    table = _table()
    if os.environ.get("DLBRIDGE_UPDATE_MESSAGES") == "1":
        with open(TABLE, "w", encoding="utf-8") as out:
            out.write(table)
    with open(TABLE, encoding="utf-8") as committed:
        assert committed.read() == table, (
            "a kernel message changed: review it, then DLBRIDGE_UPDATE_MESSAGES=1 pytest "
            "python/tests/test_kernel_messages.py"
        )


@pytest.mark.parametrize(
    ("situation", "call", "writability", "producer_bug"),
    CASES,
    ids=[case[0] for case in CASES],
)
def test_messages_speak_the_users_terms(situation, call, writability, producer_bug):
    _, text = _message(call)
    if not producer_bug:
        for word in DLPACK_WORDS:
            assert word not in text, f"{situation}: {text}"
    else:
        assert "DLPack" in text
    # "read-only" only where writability is what failed, and then with its reason.
    if writability:
        assert re.search(r"\(read-only: .{20,}\)", text), text
    else:
        assert "read-only" not in text, f"{situation}: {text}"
