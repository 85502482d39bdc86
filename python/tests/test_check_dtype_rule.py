"""`consumer.keeps-dtype-and-values`: a consumer's result keeps the dtype the capsule describes
and its values, or the import raises. JAX without jax_enable_x64 (its default) breaks it,
run in the checker's own worker process as `dlbridge check jax` runs it; NumPy, PyTorch and
dlbridge keep it; a consumer written here that refuses 64-bit dtypes keeps it, one that
narrows them, or rounds their values, breaks it; the interop matrix names the rule where a
result comes back with another dtype."""

from __future__ import annotations

import importlib.util

import numpy as np
import pytest

from _frameworks import import_framework
from dlbridge.check import consumer_checks
from dlbridge.check.abi import DTYPES
from dlbridge.check.capsules import read_capsule
from dlbridge.check.cli import _stream
from dlbridge.check.frameworks import FRAMEWORKS, Framework
from dlbridge.check.matrix import DTYPE_RULE, LAYOUTS, run_case, run_pair
from dlbridge.check.rules import MUST, RULES

RULE = "consumer.keeps-dtype-and-values"

#: What a narrowing consumer makes of each wide dtype (JAX's choice without x64).
NARROWER = {"int64": "int32", "uint64": "uint32", "float64": "float32", "complex128": "complex64"}


def _consumer(name: str, consume) -> Framework:
    return Framework(name, "numpy", make=np.array, consume=consume, to_numpy=np.asarray)


def narrowing(obj):
    """A from_dlpack that turns every 64-bit dtype into its 32-bit sibling (values wrapped
    or rounded), as JAX does without jax_enable_x64."""
    array = np.from_dlpack(obj)
    with np.errstate(over="ignore"):  # 1e300 becomes inf: the point
        return array.astype(NARROWER.get(array.dtype.name, array.dtype))


def rounding(obj):
    """A from_dlpack that keeps the dtype but goes through 32 bits (values lost)."""
    array = np.from_dlpack(obj)
    narrow = NARROWER.get(array.dtype.name)
    if narrow is None:
        return array
    with np.errstate(over="ignore"):
        return array.astype(narrow).astype(array.dtype)


class _Given:
    """A producer handing out one capsule already taken from another producer."""

    def __init__(self, capsule):
        self.capsule = capsule

    def __dlpack_device__(self):
        return (1, 0)

    def __dlpack__(self, **kwargs):
        return self.capsule


def refusing_wide(obj):
    """A from_dlpack that cannot hold 64-bit dtypes and says so (BufferError), leaving the
    capsule unconsumed, and imports (copies) the rest."""
    capsule = obj.__dlpack__(max_version=(1, 3))
    dtype = read_capsule(capsule)["dtype"]
    name = next((n for n, triple in DTYPES.items() if triple == dtype), str(dtype))
    if name in NARROWER:
        del capsule  # released now, not while the error is raised
        raise BufferError(f"{name} is not supported")
    return np.array(np.from_dlpack(_Given(capsule)), copy=True)


def refusing_all(obj):
    raise TypeError("this consumer imports nothing")


def test_the_rule_is_a_must_citing_the_header():
    rule = RULES[RULE]
    assert rule.level == MUST
    assert any(
        cite.document == "dlpack.h" and "DLTensor::dtype" in cite.section for cite in rule.cites
    )
    assert consumer_checks.CHECKS[RULE] is consumer_checks.keeps_dtype_and_values
    assert DTYPE_RULE == RULE
    # The dtypes where narrowing can happen, with a control that cannot narrow.
    assert {"int64", "uint64", "float64", "complex128", "float32"} <= set(
        consumer_checks.WIDE_VALUES
    )


def test_a_narrowing_consumer_breaks_the_rule():
    outcome, detail = consumer_checks.keeps_dtype_and_values(_consumer("narrowing", narrowing))
    assert outcome == "fail", detail
    assert "int64 sent, int32 received ([1099511627779, -1099511627781, 7] read as [3, -5, 7])" in (
        detail
    )
    assert "uint64 sent, uint32 received" in detail
    assert "float64 sent, float32 received ([0.3333333333333333, 1e+300, -2.5]" in detail
    assert "complex128 sent, complex64 received" in detail
    assert "float32 sent" not in detail  # the control
    assert "jax_enable_x64" not in detail  # the fix is JAX's only


def test_a_consumer_losing_values_in_the_right_dtype_breaks_the_rule():
    outcome, detail = consumer_checks.keeps_dtype_and_values(_consumer("rounding", rounding))
    assert outcome == "fail", detail
    assert "int64 kept, but [1099511627779, -1099511627781, 7] read as [3, -5, 7]" in detail
    assert "float64 kept, but" in detail


def test_a_consumer_refusing_what_it_cannot_hold_keeps_the_rule():
    outcome, detail = consumer_checks.keeps_dtype_and_values(_consumer("refusing", refusing_wide))
    assert outcome == "pass", detail
    assert detail.startswith("kept float32 with their values; refused int64 (BufferError"), detail
    outcome, detail = consumer_checks.keeps_dtype_and_values(_consumer("nothing", refusing_all))
    assert outcome == "pass", detail
    assert detail.startswith("refused int64 (TypeError: this consumer imports nothing)"), detail


@pytest.mark.parametrize("name", ["numpy", "torch", "dlbridge"])
def test_numpy_torch_and_dlbridge_keep_the_rule(name):
    if name == "torch":
        import_framework("torch", "torch")
    outcome, detail = consumer_checks.keeps_dtype_and_values(FRAMEWORKS[name])
    assert outcome == "pass", detail
    assert detail == "kept int64, uint64, float64, complex128, float32 with their values"


def _in_worker(name: str, monkeypatch, **env) -> dict:
    """The rule's result for framework `name` from the checker's worker process (as
    `dlbridge check NAME` runs it; every other rule skipped), with `env` set."""
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    skip = sorted(set(RULES) - {RULE})
    results = []
    done, running, why = _stream(
        {"kind": "framework", "name": name, "skip": skip}, 300, results.append
    )
    assert done, f"the worker stopped in {running}: {why}"
    assert [r["rule"] for r in results] == [RULE], results
    return results[0]


def _needs(module: str) -> None:
    if importlib.util.find_spec(module) is None:
        pytest.skip(f"{module} is not installed")


def test_jax_without_x64_breaks_the_rule(monkeypatch):
    _needs("jax")
    result = _in_worker("jax", monkeypatch, JAX_ENABLE_X64="0", JAX_PLATFORMS="cpu")
    assert result["outcome"] == "fail", result
    detail = result["detail"]
    assert "int64 sent, int32 received ([1099511627779, -1099511627781, 7] read as [3, -5, 7])" in (
        detail
    )
    assert "float64 sent, float32 received ([0.3333333333333333, 1e+300, -2.5] read as" in detail
    assert "uint64 sent, uint32 received" in detail
    assert "complex128 sent, complex64 received" in detail
    assert 'jax.config.update("jax_enable_x64", True)' in detail


def test_jax_with_x64_keeps_the_rule(monkeypatch):
    """The fix the failure names works."""
    _needs("jax")
    result = _in_worker("jax", monkeypatch, JAX_ENABLE_X64="1", JAX_PLATFORMS="cpu")
    assert result["outcome"] == "pass", result


def test_the_matrix_names_the_rule_for_a_narrowed_dtype():
    narrow = _consumer("narrowing", narrowing)
    case = run_case(FRAMEWORKS["numpy"], narrow, "int64", "contiguous")
    assert case["outcome"] == "fail"
    assert case["detail"] == f"dtype int32, expected int64 (narrowed: {RULE})"
    failures = run_pair(FRAMEWORKS["numpy"], narrow)["failures"]
    assert set(failures) == {f"{d}/{layout}" for d in ("float64", "int64") for layout in LAYOUTS}
    assert all(detail.endswith(f"(narrowed: {RULE})") for detail in failures.values()), failures
    # Wrong values in the dtype sent are no narrowing.
    doubling = _consumer("doubling", lambda o: np.from_dlpack(o) * 2)
    case = run_case(FRAMEWORKS["numpy"], doubling, "int64", "contiguous")
    assert case["outcome"] == "fail" and RULE not in case["detail"], case
