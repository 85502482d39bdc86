"""The interop matrix: every producer x consumer pair, over dtypes and layouts.

A case passes when the consumer's result holds the producer's values; a refusal (any
exception from `from_dlpack`) is "unsupported", wrong values are a failure. The float32
contiguous case also says whether the exchange was zero-copy and how long it takes.

A framework's tensors are made here from known values, which the producer's own reading
(`to_numpy`) confirms. A user's `module:factory` makes one tensor of values the checker does
not know: its one case ("factory-tensor") compares the consumer's result with what the
producer's `__dlpack__` describes, read by the checker's own reader (`capsules.reference`:
ctypes, gathering the elements through the strides), which is no consumer of the matrix, not
dlbridge nor NumPy, so that no consumer is checked against itself. Where that reader cannot
read the values (device memory, elements that are not whole bytes) the case is "unchecked",
and says why.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .abi import DTYPES as DLPACK_DTYPES
from .abi import HOST_DEVICES
from .capsules import Refused, reference
from .frameworks import Framework, data_address
from .rules import FAIL, PASS, UNCHECKED, UNSUPPORTED

DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool", "complex64"]
LAYOUTS = ["contiguous", "transposed", "strided", "zero-size"]
#: The one case of a user's factory: its tensor as made.
FACTORY_CASE = "factory-tensor"
#: The consumer rule a case whose result has another dtype breaks (JAX without
#: jax_enable_x64 reads int64 as int32): `dlbridge check` of the consumer says more.
DTYPE_RULE = "consumer.keeps-dtype-and-values"
OUTCOMES = (PASS, FAIL, UNSUPPORTED, UNCHECKED)


def _base(dtype: str, layout: str) -> np.ndarray:
    if layout == "zero-size":
        return np.zeros((0, 4), dtype=dtype)
    values = np.arange(12).reshape(3, 4)
    return (values % 2 == 1) if dtype == "bool" else values.astype(dtype)


def _shape(x, layout: str):
    """The layout applied with the framework's own operations (its own strides)."""
    if layout == "transposed":
        return x.T
    if layout == "strided":
        return x[:, ::2]
    return x


def _expected(base: np.ndarray, layout: str) -> np.ndarray:
    return np.asarray(_shape(base, layout))


def run_case(producer: Framework, consumer: Framework, dtype: str, layout: str) -> dict:
    """One exchange: {"outcome": PASS, FAIL or UNSUPPORTED, "detail", "zero_copy"}."""
    base = _base(dtype, layout)
    try:
        if producer.make_view is not None and layout in ("transposed", "strided"):
            x = producer.make_view(_shape(np.array(base, copy=True), layout))
        else:
            made = producer.make(base)
            x = _shape(made, layout) if layout != "zero-size" else made
        own = np.asarray(producer.to_numpy(x))
    except Exception as error:  # noqa: BLE001
        return {"outcome": UNSUPPORTED, "detail": f"producer: {type(error).__name__}"}
    if own.dtype != base.dtype:  # e.g. pyarrow's tensors hold bool as uint8
        return {"outcome": UNSUPPORTED, "detail": f"producer makes {own.dtype} of {dtype}"}
    expected = _expected(base, layout)
    if own.shape != expected.shape or not np.array_equal(own, expected):
        return {"outcome": UNSUPPORTED, "detail": "producer: holds other values than made"}
    try:
        result = consumer.consume(producer.exporter(x))
        array = np.asarray(consumer.to_numpy(result))
    except Exception as error:  # noqa: BLE001
        return {
            "outcome": UNSUPPORTED,
            "detail": f"consumer: {type(error).__name__}: {str(error)[:120]}",
        }
    if array.shape != expected.shape or not np.array_equal(array.astype(expected.dtype), expected):
        return {
            "outcome": FAIL,
            "detail": f"read {array.dtype}{array.shape} {array.ravel()[:6].tolist()}, "
            f"expected {expected.dtype}{expected.shape} "
            f"{expected.ravel()[:6].tolist()}{_dtype_note(array.dtype, expected.dtype)}",
        }
    if array.dtype != expected.dtype:
        return {
            "outcome": FAIL,
            "detail": f"dtype {array.dtype}, expected {expected.dtype}"
            f"{_dtype_note(array.dtype, expected.dtype)}",
        }
    return {"outcome": PASS, "detail": "", "zero_copy": _zero_copy(producer, x, consumer, result)}


def _dtype_note(received, sent) -> str:
    """Where a result's dtype is not the one sent, the consumer rule that this breaks."""
    if received == sent:
        return ""
    kind = "narrowed" if np.dtype(received).itemsize < np.dtype(sent).itemsize else "changed"
    return f" ({kind}: {DTYPE_RULE})"


def _zero_copy(producer: Framework, x, consumer: Framework, result):
    source = data_address(producer.exporter(x))
    target = data_address(consumer.exporter(result))
    return None if source is None or target is None else source == target


def _dtype_name(triple) -> str:
    for name, known in DLPACK_DTYPES.items():
        if known == tuple(triple):
            return name
    return f"dtype{tuple(triple)}"


def _held(exported) -> tuple:
    """(NumPy array of what a capsule read by `capsules.reference` describes, None), or
    (None, why it cannot be read here)."""
    name = _dtype_name(exported.dtype)
    if exported.elements is None:
        if exported.device[0] not in HOST_DEVICES:
            where = f"the producer's tensor is on device {exported.device}"
        else:
            where = f"the producer's {name} elements are not whole bytes"
        return None, f"{where}: the checker cannot read its values without a consumer"
    try:
        dtype = np.dtype(name)
    except TypeError:
        return None, f"NumPy has no {name} to read the producer's values"
    return np.frombuffer(exported.elements, dtype).reshape(exported.shape), None


def run_factory_case(producer: Framework, consumer: Framework) -> dict:
    """The one case of a user's factory: the consumer's result against the values the
    producer's `__dlpack__` describes, read by the checker's own reader."""
    try:
        x = producer.exporter(producer.make(None))
        described = reference(x)
    except Exception as error:  # noqa: BLE001
        return {"outcome": UNSUPPORTED, "detail": f"producer: {type(error).__name__}: {error}"}
    if isinstance(described, Refused):
        return {"outcome": UNSUPPORTED, "detail": f"producer: {described.summary()}"}
    try:
        result = consumer.consume(x)
        array = np.asarray(consumer.to_numpy(result))
    except Exception as error:  # noqa: BLE001
        return {
            "outcome": UNSUPPORTED,
            "detail": f"consumer: {type(error).__name__}: {str(error)[:120]}",
        }
    expected, why = _held(described)
    if expected is None:
        return {"outcome": UNCHECKED, "detail": why}
    if array.shape != expected.shape or array.dtype != expected.dtype:
        return {
            "outcome": FAIL,
            "detail": f"read {array.dtype}{array.shape}, the producer holds "
            f"{expected.dtype}{expected.shape}{_dtype_note(array.dtype, expected.dtype)}",
        }
    if np.ascontiguousarray(array).tobytes() != expected.tobytes():
        return {
            "outcome": FAIL,
            "detail": f"read {array.ravel()[:6].tolist()}, the producer holds "
            f"{expected.ravel()[:6].tolist()}",
        }
    return {"outcome": PASS, "detail": "", "zero_copy": _zero_copy(producer, x, consumer, result)}


def time_exchange(consumer: Framework, x, calls: int = 200, rounds: int = 5) -> float:
    """Median over `rounds` of the mean time of `consumer.consume(x)`, in nanoseconds."""
    for _ in range(20):
        consumer.consume(x)  # x as handed to consumers (`Framework.exporter`)
    samples = []
    for _ in range(rounds):
        start = time.perf_counter_ns()
        for _ in range(calls):
            consumer.consume(x)
        samples.append((time.perf_counter_ns() - start) / calls)
    return statistics.median(samples)


def run_pair(producer: Framework, consumer: Framework) -> dict:
    """Every case of one pair, plus zero-copy and timing of float32 contiguous."""
    cases = {}
    if producer.user_factory:
        cases[FACTORY_CASE] = run_factory_case(producer, consumer)
        headline = cases[FACTORY_CASE]
    else:
        for dtype in DTYPES:
            for layout in LAYOUTS:
                cases[f"{dtype}/{layout}"] = run_case(producer, consumer, dtype, layout)
        headline = cases["float32/contiguous"]
    nanoseconds = None
    if headline["outcome"] == PASS:
        try:
            x = producer.exporter(producer.make(_base("float32", "contiguous")))
            nanoseconds = time_exchange(consumer, x)
        except Exception:  # noqa: BLE001 - timing is best effort
            nanoseconds = None
    counts = {k: sum(1 for c in cases.values() if c["outcome"] == k) for k in OUTCOMES}
    return {
        "producer": producer.name,
        "consumer": consumer.name,
        "counts": counts,
        "zero_copy": headline.get("zero_copy"),
        "ns": nanoseconds,
        "failures": {k: c["detail"] for k, c in cases.items() if c["outcome"] == FAIL},
        "unchecked": {k: c["detail"] for k, c in cases.items() if c["outcome"] == UNCHECKED},
    }
