"""The interop matrix: every producer x consumer pair, over dtypes and layouts.

A case passes when the consumer's result holds the producer's values; a refusal (any
exception from `from_dlpack`) is "unsupported", wrong values are a failure. The float32
contiguous case also says whether the exchange was zero-copy and how long it takes.
"""

from __future__ import annotations

import statistics
import time

import numpy as np

from .frameworks import Framework, data_address
from .rules import FAIL, PASS, UNSUPPORTED

DTYPES = ["float32", "float64", "float16", "int8", "int32", "int64", "uint8", "bool", "complex64"]
LAYOUTS = ["contiguous", "transposed", "strided", "zero-size"]


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
    try:
        result = consumer.consume(x)
        array = np.asarray(consumer.to_numpy(result))
    except Exception as error:  # noqa: BLE001
        return {
            "outcome": UNSUPPORTED,
            "detail": f"consumer: {type(error).__name__}: {str(error)[:120]}",
        }
    expected = _expected(base, layout)
    if array.shape != expected.shape or not np.array_equal(array.astype(expected.dtype), expected):
        return {
            "outcome": FAIL,
            "detail": f"read {array.dtype}{array.shape} {array.ravel()[:6].tolist()}, "
            f"expected {expected.dtype}{expected.shape} "
            f"{expected.ravel()[:6].tolist()}",
        }
    if array.dtype != expected.dtype:
        return {"outcome": FAIL, "detail": f"dtype {array.dtype}, expected {expected.dtype}"}
    source, target = data_address(x), data_address(result)
    zero_copy = None if source is None or target is None else source == target
    return {"outcome": PASS, "detail": "", "zero_copy": zero_copy}


def time_exchange(consumer: Framework, x, calls: int = 200, rounds: int = 5) -> float:
    """Median over `rounds` of the mean time of `consumer.consume(x)`, in nanoseconds."""
    for _ in range(20):
        consumer.consume(x)
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
    for dtype in DTYPES:
        for layout in LAYOUTS:
            cases[f"{dtype}/{layout}"] = run_case(producer, consumer, dtype, layout)
    headline = cases["float32/contiguous"]
    nanoseconds = None
    if headline["outcome"] == PASS:
        try:
            x = producer.make(_base("float32", "contiguous"))
            nanoseconds = time_exchange(consumer, x)
        except Exception:  # noqa: BLE001 - timing is best effort
            nanoseconds = None
    counts = {
        k: sum(1 for c in cases.values() if c["outcome"] == k) for k in (PASS, FAIL, UNSUPPORTED)
    }
    return {
        "producer": producer.name,
        "consumer": consumer.name,
        "counts": counts,
        "zero_copy": headline.get("zero_copy"),
        "ns": nanoseconds,
        "failures": {k: c["detail"] for k, c in cases.items() if c["outcome"] == FAIL},
    }
