"""Consumer checks: a framework's `from_dlpack` fed by producers built here with ctypes
(`producers.py`), each sending one thing the standard allows or requires a consumer to
handle, with the producer's deleter counted."""

from __future__ import annotations

import gc

import numpy as np

from . import producers as P
from .frameworks import Framework

PASS, FAIL, NA = "pass", "fail", "n/a"

VALUES = np.arange(6, dtype=np.float32).reshape(2, 3)


class Refusal:
    """What a consumer raised, without the exception object: its traceback would keep the
    frames, and with them the capsule and the tensor, alive past the deleter count."""

    def __init__(self, error: BaseException):
        self.kind = type(error)
        self.text = str(error)

    def __repr__(self):
        return f"{self.kind.__name__}: {self.text}"


def _describe(error: Refusal) -> str:
    return repr(error).strip()[:200]


def _lost_exception(since: int):
    """The exception a consumer had set when it released one of the toolkit's capsules (a
    ctypes callback must clear it, and the consumer then reports SystemError instead)."""
    lost = P.LOST_EXCEPTIONS[since:]
    del P.LOST_EXCEPTIONS[since:]
    for _, kind, value in lost:
        if isinstance(kind, type) and issubclass(kind, BaseException):
            return kind, value
    return None


def _import(framework: Framework, producer):
    """(numpy copy of the result, read-only or None, shares the producer's data, error)."""
    lost_before = len(P.LOST_EXCEPTIONS)
    try:
        result = framework.consume(producer)
        array = np.array(framework.to_numpy(result), copy=True)
        read_only = framework.read_only(result)
        shared = _data_address(result)
        del result
        return array, read_only, shared, None
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        refusal = Refusal(error)
        lost = _lost_exception(lost_before)
        if lost is not None and isinstance(error, SystemError):
            refusal.kind = lost[0]
            refusal.text = f"{lost[1]} (raised as the capsule was released)"
        return None, None, None, refusal


def _data_address(result):
    try:
        import dlbridge

        return dlbridge.from_dlpack(result).data_ptr
    except Exception:  # noqa: BLE001 - not every result can be exported again
        return None


class NegotiatingProducer:
    """A conforming producer over hand-made tensors: a legacy capsule unless `max_version`
    asks for major 1 or later, a fresh tensor per call, every call and tensor recorded.
    `make(versioned)` builds the tensor; `read_only` refuses the legacy path as the standard
    says a producer must."""

    def __init__(self, make, read_only: bool = False):
        self.make = make
        self.read_only = read_only
        self.calls: list = []
        self.records: list = []

    def __dlpack_device__(self):
        return (P.kDLCPU, 0)

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        self.calls.append({"max_version": max_version, "copy": copy})
        versioned = max_version is not None and max_version[0] >= 1
        if self.read_only and not versioned:
            raise BufferError("read-only data cannot be exported as a legacy capsule")
        record = self.make(versioned)
        self.records.append(record)
        return record.capsule()

    def asked_versioned(self) -> bool:
        return any(c["max_version"] is not None and c["max_version"][0] >= 1 for c in self.calls)

    def deleter_calls(self) -> list:
        gc.collect()
        return [record.deleter_calls for record in self.records]


def _released(record: P.ManagedRecord) -> int:
    gc.collect()
    return record.deleter_calls


def _judge(array, error, calls: list, expected: np.ndarray, what: str, refuse_ok: bool):
    """The outcome of one import: refused (a pass only where BufferError is allowed), wrong
    values, or right values with every tensor handed out released exactly once."""
    if error is not None:
        if refuse_ok and issubclass(error.kind, BufferError):
            return PASS, f"{what}: refused with BufferError"
        return FAIL, f"{what}: {_describe(error)}"
    if array.shape != expected.shape or not np.array_equal(array, expected):
        return FAIL, f"{what}: read {array.tolist()}, expected {expected.tolist()}"
    if any(c != 1 for c in calls):
        return FAIL, f"{what}: values right, but deleters ran {calls} times"
    return PASS, f"{what}: values right"


def _values_case(framework: Framework, record: P.ManagedRecord, expected: np.ndarray,
                 what: str):
    """Feeds one fixed tensor (whatever the consumer asks for: it must check the capsule's
    name and version itself) and compares the values."""
    producer = P.OneTensorProducer(record)
    array, _, _, error = _import(framework, producer)
    del producer
    return _judge(array, error, [_released(record)], expected, what, refuse_ok=False)


def _negotiated_case(framework: Framework, make, expected: np.ndarray, what: str, *,
                     refuse_ok: bool = False):
    """Feeds a conforming producer (`NegotiatingProducer` over `make`) and compares."""
    producer = NegotiatingProducer(make)
    array, _, _, error = _import(framework, producer)
    return _judge(array, error, producer.deleter_calls(), expected, what, refuse_ok)


def legacy_capsule(framework: Framework):
    record = P.make_managed((2, 3), versioned=False, values=VALUES.tobytes())
    return _values_case(framework, record, VALUES, "legacy capsule")


def versioned_capsule(framework: Framework):
    producer = NegotiatingProducer(
        lambda v: P.make_managed((2, 3), versioned=v, values=VALUES.tobytes()))
    array, _, _, error = _import(framework, producer)
    if not producer.asked_versioned():
        return NA, f"never asks for max_version >= (1, 0): calls {producer.calls}"
    if error is not None:
        return FAIL, f"asked for a versioned capsule, then: {_describe(error)}"
    if not np.array_equal(array, VALUES):
        return FAIL, f"read {array.tolist()}"
    return PASS, f"values right (asked {producer.calls[-1]['max_version']})"


def deleter_once(framework: Framework):
    producer = NegotiatingProducer(
        lambda v: P.make_managed((2, 3), versioned=v, values=VALUES.tobytes()))
    _, _, _, error = _import(framework, producer)
    calls = producer.deleter_calls()
    if error is not None and not calls:
        return NA, f"nothing imported: {_describe(error)}"
    # A consumer may take one capsule and leave the others to their destructors: every
    # tensor handed out must be released exactly once, by one or the other.
    if any(c != 1 for c in calls):
        return FAIL, f"deleters ran {calls} times for the {len(calls)} tensors handed out"
    return PASS, f"{len(calls)} tensor(s), each deleter once"


def null_strides(framework: Framework):
    legacy = P.make_managed((2, 3), versioned=False, strides=None, values=VALUES.tobytes())
    outcome, detail = _values_case(framework, legacy, VALUES, "legacy, NULL strides")
    if outcome == FAIL:
        return outcome, detail
    producer = NegotiatingProducer(
        lambda v: P.make_managed((2, 3), versioned=v, version=(1, 1), strides=None,
                                 values=VALUES.tobytes()))
    array, _, _, error = _import(framework, producer)
    producer.deleter_calls()
    if not producer.asked_versioned():
        return PASS, f"{detail} (asks for legacy capsules only: no 1.1 case)"
    if error is not None:
        return FAIL, f"version 1.1, NULL strides: {_describe(error)}"
    if not np.array_equal(array, VALUES):
        return FAIL, f"version 1.1, NULL strides: read {array.tolist()}"
    return PASS, "row-major read, legacy and version 1.1"


def extent_one_strides(framework: Framework):
    column = np.arange(3, dtype=np.float32).reshape(3, 1)
    return _negotiated_case(
        framework,
        lambda v: P.make_managed((3, 1), versioned=v, strides=(1, 77), values=column.tobytes()),
        column, "shape (3, 1) strides (1, 77)")


def negative_strides(framework: Framework):
    values = np.arange(4, dtype=np.float32)

    def make(versioned):
        # `data` points at the last element (byte_offset 0, which some consumers demand);
        # stride -1 walks back to the first.
        record = P.make_managed((4,), versioned=versioned, strides=(-1,),
                                data=values.ctypes.data + 12)
        record.keep.append(values)
        return record

    return _negotiated_case(framework, make, values[::-1].copy(), "stride -1",
                            refuse_ok=True)


def zero_size_null_data(framework: Framework):
    return _negotiated_case(
        framework, lambda v: P.make_managed((0, 3), versioned=v, data=None),
        np.zeros((0, 3), np.float32), "(0, 3), NULL data")


def byte_offset(framework: Framework):
    values = np.arange(8, dtype=np.float32)
    return _negotiated_case(
        framework,
        lambda v: P.make_managed((2, 3), versioned=v, values=values.tobytes(), byte_offset=8),
        values[2:8].reshape(2, 3), "byte_offset 8")


def read_only(framework: Framework):
    records = []

    def make(versioned):
        record = P.make_managed((2, 3), versioned=versioned, values=VALUES.tobytes(),
                                flags=P.FLAG_READ_ONLY)
        records.append(record)
        return record

    producer = NegotiatingProducer(make, read_only=True)
    array, result_read_only, address, error = _import(framework, producer)
    producer.deleter_calls()
    if not producer.asked_versioned():
        return NA, "asks for legacy capsules only, which cannot carry READ_ONLY"
    if error is not None:
        if issubclass(error.kind, BufferError):
            return PASS, "refused with BufferError"
        return FAIL, f"{_describe(error)}"
    shared = address is not None and address == records[-1].first_element_address()
    if shared and result_read_only is not True:
        kind = "writable" if result_read_only is False else "in a framework without read-only"
        return FAIL, f"the result shares the READ_ONLY memory and is {kind}"
    return PASS, "read-only result" if shared else "a copy"


def major_version_2(framework: Framework):
    record = P.make_major2()
    producer = P.OneTensorProducer(record)
    _, _, _, error = _import(framework, producer)
    del producer
    calls = _released(record)
    if error is None:
        return FAIL, "a version 2.0 tensor was imported"
    if calls != 1:
        return FAIL, f"refused ({error.kind.__name__}), but the deleter ran {calls} times"
    return PASS, f"refused with {error.kind.__name__}, deleter once"


def old_producer(framework: Framework):
    producer = P.OldProducer(values=VALUES.tobytes())
    array, _, _, error = _import(framework, producer)
    if error is not None:
        return FAIL, f"{_describe(error)} (calls: {producer.calls})"
    if not np.array_equal(array, VALUES):
        return FAIL, f"read {array.tolist()}"
    return PASS, f"retried: {producer.calls}"


CHECKS = {
    "consumer.legacy-capsule": legacy_capsule,
    "consumer.versioned-capsule": versioned_capsule,
    "consumer.deleter-once": deleter_once,
    "consumer.null-strides": null_strides,
    "consumer.extent-one-strides": extent_one_strides,
    "consumer.negative-strides": negative_strides,
    "consumer.zero-size-null-data": zero_size_null_data,
    "consumer.byte-offset": byte_offset,
    "consumer.read-only": read_only,
    "consumer.major-version-2": major_version_2,
    "consumer.old-producer": old_producer,
}
