"""Consumer checks: a framework's `from_dlpack` fed by producers built here with ctypes
(`fake_producers`), each sending one thing the standard allows or requires a consumer to
handle, with the producer's deleter counted and the capsules handed out looked at afterwards
(renamed `used_*`: `consumer.renames-capsule`); 64-bit dtypes that must not come back narrowed;
`from_dlpack(x, copy=True)` against producers
that copy, refuse to and cannot be asked; then every tensor a real producer's `__dlpack__`
refuses.

Each check is a function of the `Framework` that returns `(outcome, detail)` for its rule:
PASS, FAIL or NA (the rule does not apply, with the reason).
"""

from __future__ import annotations

import ctypes
import gc
import importlib.util
import sys

import numpy as np

from . import capsules
from .abi import FLAG_READ_ONLY, NAME_USED_LEGACY, NAME_USED_VERSIONED
from .capi import PyCapsule_GetDestructor
from .capsules import Refused
from .fake_producers import (
    NegotiatingProducer,
    OldProducer,
    OneTensorProducer,
    RecordingProducer,
)
from .frameworks import FRAMEWORKS, Framework, data_address
from .records import LOST_EXCEPTIONS, ManagedRecord, make_major2, make_managed
from .rules import FAIL, NA, PASS

#: The values of the tensors fed.
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
    lost = LOST_EXCEPTIONS[since:]
    del LOST_EXCEPTIONS[since:]
    for _, kind, value in lost:
        if isinstance(kind, type) and issubclass(kind, BaseException):
            return kind, value
    return None


def _refusal(error: Exception, lost_before: int) -> Refusal:
    """The Refusal of `error`, raised by a consumer since `len(LOST_EXCEPTIONS)` was
    `lost_before`: a SystemError that stands for an exception a toolkit callback had to
    clear is reported as that exception."""
    refusal = Refusal(error)
    lost = _lost_exception(lost_before)
    if lost is not None and isinstance(error, SystemError):
        refusal.kind, refusal.text = lost[0], f"{lost[1]} (raised as the capsule was released)"
    return refusal


def _import(framework: Framework, producer):
    """(numpy copy of the result, read-only or None, shares the producer's data, error)."""
    lost_before = len(LOST_EXCEPTIONS)
    try:
        result = framework.consume(producer)
        array = np.array(framework.to_numpy(result), copy=True)
        read_only = framework.read_only(result)
        shared = data_address(framework.exporter(result))
        del result
        return array, read_only, shared, None
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        return None, None, None, _refusal(error, lost_before)


def _released(record: ManagedRecord) -> int:
    gc.collect()
    return record.deleter_calls


def _judge(array, error, calls: list, expected: np.ndarray, what: str, *, refuse_ok: bool):
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


def _values_case(framework: Framework, record: ManagedRecord, expected: np.ndarray, what: str):
    """Feeds one fixed tensor (whatever the consumer asks for: it must check the capsule's
    name and version itself) and compares the values."""
    producer = OneTensorProducer(record)
    array, _, _, error = _import(framework, producer)
    del producer
    return _judge(array, error, [_released(record)], expected, what, refuse_ok=False)


def _negotiated_case(
    framework: Framework, make, expected: np.ndarray, what: str, *, refuse_ok: bool = False
):
    """Feeds a conforming producer (`NegotiatingProducer` over `make`) and compares."""
    producer = NegotiatingProducer(make)
    array, _, _, error = _import(framework, producer)
    return _judge(array, error, producer.deleter_calls(), expected, what, refuse_ok=refuse_ok)


def legacy_capsule(framework: Framework):
    record = make_managed((2, 3), versioned=False, values=VALUES.tobytes())
    return _values_case(framework, record, VALUES, "legacy capsule")


def versioned_capsule(framework: Framework):
    producer = NegotiatingProducer(
        lambda v: make_managed((2, 3), versioned=v, values=VALUES.tobytes())
    )
    array, _, _, error = _import(framework, producer)
    if not producer.asked_versioned():
        return NA, f"never asks for max_version >= (1, 0): calls {producer.calls}"
    if error is not None:
        return FAIL, f"asked for a versioned capsule, then: {_describe(error)}"
    if not np.array_equal(array, VALUES):
        return FAIL, f"read {array.tolist()}"
    return PASS, f"values right (asked {producer.calls[-1]['max_version']})"


# ---- ownership: the capsule renamed used_* ---------------------------------------------------


def _names_after(framework: Framework, producer, expected: bytes, what: str):
    """(verdict, detail) of one import from `producer` (which keeps its capsules): "renamed"
    where a capsule handed out now carries `expected`, "refused" where the import raised,
    else "kept" (no capsule renamed: its destructor would call the deleter again) or "wrong"
    (renamed, but not `expected`)."""
    _, _, _, error = _import(framework, producer)
    names = producer.capsule_names()
    # Whether each capsule still has a destructor: a consumer may remove it instead of
    # renaming (MLX does), which spares the second deleter call but leaves the capsule
    # looking unconsumed to everything that reads its name.
    destructors = [PyCapsule_GetDestructor(capsule) for capsule in producer.capsules]
    producer.capsules.clear()  # their destructors run now, with no exception in flight
    gc.collect()
    if error is not None:
        return "refused", f"{what}: refused ({_describe(error)[:80]})"
    if expected in names:
        return "renamed", f"{what}: renamed {expected.decode()}"
    used = [name for name in names if name and name.startswith(b"used_")]
    if used:
        shown = ", ".join(repr(name.decode()) for name in used)
        return "wrong", f"{what}: renamed {shown}, not {expected.decode()!r}"
    shown = ", ".join(repr(name.decode() if name else name) for name in names)
    if destructors and not any(destructors):
        return "kept", (
            f"{what}: imported, and the capsule still named {shown}; its destructor was "
            "removed instead, so the deleter ran once, but the name still says unconsumed"
        )
    return "kept", (
        f"{what}: imported, and the capsule still named {shown}: its destructor calls the "
        "deleter again"
    )


def renames_capsule(framework: Framework):
    """The capsule a consumer imports is renamed `used_dltensor` (legacy) or
    `used_dltensor_versioned`: a legacy capsule given whatever the consumer asks, then a
    versioned one where the consumer asks for major version 1 or later."""
    legacy = OneTensorProducer(
        make_managed((2, 3), versioned=False, values=VALUES.tobytes()), keep_capsules=True
    )
    cases = [_names_after(framework, legacy, NAME_USED_LEGACY, "legacy capsule")]
    del legacy
    negotiating = NegotiatingProducer(
        lambda v: make_managed((2, 3), versioned=v, values=VALUES.tobytes()), keep_capsules=True
    )
    case = _names_after(framework, negotiating, NAME_USED_VERSIONED, "versioned capsule")
    if not negotiating.asked_versioned():
        case = ("none", "never asks for max_version >= (1, 0): no versioned capsule")
    cases.append(case)
    negotiating.deleter_calls()
    del negotiating
    problems = [detail for verdict, detail in cases if verdict in ("kept", "wrong")]
    if problems:
        return FAIL, "; ".join(problems)
    if not any(verdict == "renamed" for verdict, _ in cases):
        return NA, "nothing imported: " + "; ".join(detail for _, detail in cases)
    return PASS, "; ".join(detail for _, detail in cases)


def deleter_once(framework: Framework):
    producer = NegotiatingProducer(
        lambda v: make_managed((2, 3), versioned=v, values=VALUES.tobytes())
    )
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
    legacy = make_managed((2, 3), versioned=False, strides=None, values=VALUES.tobytes())
    outcome, detail = _values_case(framework, legacy, VALUES, "legacy, NULL strides")
    if outcome == FAIL:
        return outcome, detail
    producer = NegotiatingProducer(
        lambda v: make_managed(
            (2, 3), versioned=v, version=(1, 1), strides=None, values=VALUES.tobytes()
        )
    )
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
        lambda v: make_managed((3, 1), versioned=v, strides=(1, 77), values=column.tobytes()),
        column,
        "shape (3, 1) strides (1, 77)",
    )


def negative_strides(framework: Framework):
    values = np.arange(4, dtype=np.float32)

    def make(versioned):
        # `data` points at the last element (byte_offset 0, which some consumers demand);
        # stride -1 walks back to the first.
        record = make_managed(
            (4,), versioned=versioned, strides=(-1,), data=values.ctypes.data + 12
        )
        record.keep.append(values)
        return record

    return _negotiated_case(framework, make, values[::-1].copy(), "stride -1", refuse_ok=True)


def zero_size_null_data(framework: Framework):
    return _negotiated_case(
        framework,
        lambda v: make_managed((0, 3), versioned=v, data=None),
        np.zeros((0, 3), np.float32),
        "(0, 3), NULL data",
    )


def byte_offset(framework: Framework):
    values = np.arange(8, dtype=np.float32)
    return _negotiated_case(
        framework,
        lambda v: make_managed((2, 3), versioned=v, values=values.tobytes(), byte_offset=8),
        values[2:8].reshape(2, 3),
        "byte_offset 8",
    )


# ---- dtypes kept: no narrowing ----------------------------------------------------------------
#
# A conforming producer (`NegotiatingProducer`) sends one tensor of each 64-bit dtype whose
# values no narrower type holds, and float32 as a control. The result must have the dtype the
# capsule describes and its values bit for bit, or the import must raise. JAX, in its default
# configuration (jax_enable_x64 off), imports int64 as int32 (2**40 + 3 becomes 3), uint64 as
# uint32, float64 as float32 (1e300 becomes inf, 1/3 loses 29 bits) and complex128 as
# complex64, without a word.

#: The tensors fed, by dtype (DLPack's names, which are NumPy's here).
WIDE_VALUES = {
    "int64": np.array([2**40 + 3, -(2**40) - 5, 7], np.int64),
    "uint64": np.array([2**63 + 5, 2**40 + 3, 1], np.uint64),
    "float64": np.array([1 / 3, 1e300, -2.5], np.float64),
    "complex128": np.array([1 / 3 + 1e300j, -1e300 + 0.1j, 2], np.complex128),
    "float32": np.array([1 / 3, 3e38, -2.5], np.float32),  # the control: nothing to narrow
}


def _wide_case(framework: Framework, dtype: str):
    """(verdict, detail) of importing `WIDE_VALUES[dtype]`: a verdict is "kept", "refused",
    "narrowed" (another dtype), "wrong" (the dtype, but other values or shape) or "unread"
    (imported, but not read back)."""
    sent = WIDE_VALUES[dtype]
    producer = NegotiatingProducer(
        lambda v: make_managed(sent.shape, dtype, versioned=v, values=sent.tobytes())
    )
    lost_before = len(LOST_EXCEPTIONS)
    try:
        result = framework.consume(producer)
    except Exception as error:  # noqa: BLE001 - every exception is a refusal here
        return "refused", f"{dtype} ({_describe(_refusal(error, lost_before))[:80]})"
    try:
        array = np.array(framework.to_numpy(result), copy=True)
    except Exception as error:  # noqa: BLE001
        why = f"{type(error).__name__}: {error}"[:120]
        return "unread", f"{dtype} imported, then not read back: {why}"
    finally:
        del result, producer
    if array.dtype != sent.dtype:
        return "narrowed" if array.dtype.itemsize < sent.itemsize else "wrong", (
            f"{dtype} sent, {array.dtype} received ({sent.tolist()} read as {array.tolist()})"
        )
    if array.shape != sent.shape or array.tobytes() != sent.tobytes():
        return "wrong", f"{dtype} kept, but {sent.tolist()} read as {array.tolist()}"
    return "kept", dtype


def keeps_dtype_and_values(framework: Framework):
    cases = {dtype: _wide_case(framework, dtype) for dtype in WIDE_VALUES}
    gc.collect()
    problems = [detail for verdict, detail in cases.values() if verdict not in ("kept", "refused")]
    if problems:
        fix = framework.narrowing_fix
        narrowed = any(verdict == "narrowed" for verdict, _ in cases.values())
        return FAIL, "; ".join(problems) + (f" ({fix})" if fix and narrowed else "")
    kept = [detail for verdict, detail in cases.values() if verdict == "kept"]
    refused = [detail for verdict, detail in cases.values() if verdict == "refused"]
    parts = [f"kept {', '.join(kept)} with their values"] if kept else []
    if refused:
        parts.append(f"refused {'; '.join(refused)}")
    return PASS, "; ".join(parts)


def read_only(framework: Framework):
    records = []

    def make(versioned):
        record = make_managed(
            (2, 3), versioned=versioned, values=VALUES.tobytes(), flags=FLAG_READ_ONLY
        )
        records.append(record)
        return record

    producer = NegotiatingProducer(make, read_only=True)
    _, result_read_only, address, error = _import(framework, producer)
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
    record = make_major2()
    producer = OneTensorProducer(record)
    _, _, _, error = _import(framework, producer)
    del producer
    calls = _released(record)
    if error is None:
        return FAIL, "a version 2.0 tensor was imported"
    if calls != 1:
        return FAIL, f"refused ({error.kind.__name__}), but the deleter ran {calls} times"
    return PASS, f"refused with {error.kind.__name__}, deleter once"


def old_producer(framework: Framework):
    producer = OldProducer(values=VALUES.tobytes())
    array, _, _, error = _import(framework, producer)
    if error is not None:
        return FAIL, f"{_describe(error)} (calls: {producer.calls})"
    if not np.array_equal(array, VALUES):
        return FAIL, f"read {array.tolist()}"
    return PASS, f"retried: {producer.calls}"


# ---- legacy capsules: no flags, so not known to be writable ----------------------------------


def _legacy_result(framework: Framework):
    """Imports a legacy capsule over writable memory (a producer that always answers legacy,
    as JAX and TensorFlow do) and looks at the result while it lives: a dict of `error`
    (a Refusal or None), `read_only`, `shared` (True, False, or None when the result cannot
    be exported again to tell), `reexport` (`capsules.reference` of the result's versioned
    re-export, when it shares the memory and has `__dlpack__`) and `memory` (the address of
    the capsule's first element)."""
    record = make_managed((2, 3), versioned=False, values=VALUES.tobytes())
    producer = OneTensorProducer(record)
    seen = {
        "error": None,
        "read_only": None,
        "shared": None,
        "reexport": None,
        "memory": record.first_element_address(),
    }
    lost_before = len(LOST_EXCEPTIONS)
    try:
        result = framework.consume(producer)
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        seen["error"] = _refusal(error, lost_before)
        return seen
    seen["read_only"] = framework.read_only(result)
    exported = framework.exporter(result)
    address = data_address(exported)
    if address is not None:
        seen["shared"] = address == seen["memory"]
    if seen["shared"] and hasattr(exported, "__dlpack__"):
        seen["reexport"] = capsules.reference(exported, max_version=(1, 3))
    del exported
    del result, producer
    gc.collect()
    return seen


def legacy_read_only(framework: Framework):
    seen = _legacy_result(framework)
    if seen["error"] is not None:
        return NA, f"the legacy capsule was refused: {_describe(seen['error'])}"
    if seen["read_only"] is True:
        return PASS, "read-only result" + ("" if seen["shared"] else " (not shared)")
    if seen["shared"] is None:
        return NA, "cannot tell whether the result shares the memory (it exports nothing)"
    if not seen["shared"]:
        return PASS, "a copy"
    kind = "writable" if seen["read_only"] is False else "in a framework without read-only"
    return FAIL, f"the result shares the legacy capsule's memory and is {kind}"


def legacy_re_export(framework: Framework):
    seen = _legacy_result(framework)
    if seen["error"] is not None:
        return NA, f"the legacy capsule was refused: {_describe(seen['error'])}"
    if not seen["shared"]:
        return NA, (
            "the result is a copy"
            if seen["shared"] is False
            else "cannot tell whether the result shares the memory"
        )
    again = seen["reexport"]
    if again is None:
        return NA, "the result has no __dlpack__"
    if isinstance(again, Refused):
        return NA, f"the re-export is refused ({again.exception}: {again.message[:80]})"
    if again.version is None:
        return PASS, "re-exported as a legacy capsule (no claim that the memory is writable)"
    if again.flags & FLAG_READ_ONLY:
        return PASS, f"versioned re-export (v{again.version[0]}.{again.version[1]}) READ_ONLY"
    if again.is_copied or (again.size and again.data != seen["memory"]):
        return PASS, "the re-export is a copy"
    return FAIL, (
        f"the versioned re-export (v{again.version[0]}.{again.version[1]}, flags "
        f"{again.flags:#x}) of the legacy capsule's memory lacks READ_ONLY"
    )


# ---- copy=True ------------------------------------------------------------------------------
#
# Three producers over memory of their own, each asked by `from_dlpack(x, copy=True)`: one
# that copies (a flagged copy in fresh memory), one that refuses copy=True with BufferError
# as tvm-ffi does, and an old one whose `__dlpack__` takes no keywords. After the import the
# producer's memory is overwritten: a result that shows the new values shares it.

#: What the producer's memory is overwritten with after the import.
OVERWRITTEN = VALUES + 100


#: The producers fed, by kind: one that copies, one that refuses copy=True, an old one.
COPYING, REFUSING, OLD = "copying", "refusing", "old"
_COPY_LABELS = {
    COPYING: "a producer that copies",
    REFUSING: "a producer refusing copy=True",
    OLD: "an old producer without copy",
}


def _copy_producers() -> list:
    """[(kind, producer, a function giving the records whose memory a result must not
    share)]."""
    values = VALUES.tobytes()
    copying = RecordingProducer(values=values, honour_copy=True)
    refusing = RecordingProducer(values=values, refuse_copy=True)
    old = OldProducer(values=values)
    return [
        (COPYING, copying, lambda: [copying.buffer_record]),
        (REFUSING, refusing, lambda: [refusing.buffer_record]),
        (OLD, old, lambda: list(old.records)),
    ]


def _import_copy(framework: Framework, producer, shared_memory):
    """(values read before the overwrite, after it, error) of `consume_copy(producer)`;
    the memory the producer exported without copying is overwritten while the result lives."""
    lost_before = len(LOST_EXCEPTIONS)
    try:
        result = framework.consume_copy(producer)
        before = np.array(framework.to_numpy(result), copy=True)
        for record in shared_memory():
            ctypes.memmove(record.first_element_address(), OVERWRITTEN.tobytes(), VALUES.nbytes)
        after = np.array(framework.to_numpy(result), copy=True)
        del result
        return before, after, None
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        return None, None, _refusal(error, lost_before)


def _copy_survey(framework: Framework) -> dict:
    """{kind: (the producer's calls, verdict, detail)}; a verdict is "copy", "shared",
    "wrong", "propagated" (the refusing producer's BufferError) or "raised"."""
    survey = {}
    for kind, producer, shared_memory in _copy_producers():
        before, after, error = _import_copy(framework, producer, shared_memory)
        calls = list(producer.calls)
        del producer
        gc.collect()
        if error is not None:
            propagated = kind == REFUSING and issubclass(error.kind, BufferError)
            survey[kind] = (calls, "propagated" if propagated else "raised", _describe(error))
        elif not np.array_equal(before, VALUES):
            survey[kind] = (calls, "wrong", f"read {before.tolist()}")
        elif np.array_equal(after, OVERWRITTEN):
            survey[kind] = (calls, "shared", "the result shares the producer's memory")
        elif not np.array_equal(after, VALUES):
            survey[kind] = (calls, "wrong", f"then read {after.tolist()}")
        else:
            survey[kind] = (calls, "copy", "a copy")
    return survey


def _no_copy_parameter():
    return NA, "its from_dlpack has no copy parameter"


def copy_true(framework: Framework):
    if framework.consume_copy is None:
        return _no_copy_parameter()
    survey = _copy_survey(framework)
    problems = [
        f"{_COPY_LABELS[kind]}: {detail}"
        for kind, (_, verdict, detail) in survey.items()
        if verdict in ("shared", "wrong") or (verdict == "raised" and kind == COPYING)
    ]
    if problems:
        return FAIL, "; ".join(problems)
    return PASS, "; ".join(
        f"{_COPY_LABELS[kind]}: {'propagated ' * (verdict == 'propagated')}{detail}"
        for kind, (_, verdict, detail) in survey.items()
    )


def copy_true_refused(framework: Framework):
    if framework.consume_copy is None:
        return _no_copy_parameter()
    survey = _copy_survey(framework)
    del survey[COPYING]
    problems = [
        f"{_COPY_LABELS[kind]}: {'propagated ' * (verdict == 'propagated')}{detail}"
        for kind, (_, verdict, detail) in survey.items()
        if verdict in ("propagated", "raised")
    ]
    if problems:
        return FAIL, "; ".join(problems) + " (no copy made here)"
    if any(verdict != "copy" for _, verdict, _ in survey.values()):
        return NA, "no copy, and no refusal either: see consumer.copy-true"
    return PASS, "imported and copied here; " + "; ".join(
        f"{_COPY_LABELS[kind]} was asked {calls}" for kind, (calls, _, _) in survey.items()
    )


# ---- what real producers refuse ---------------------------------------------------------------

#: The frameworks whose C exchange table exports tensors their `__dlpack__` refuses
#: (`Framework.table_exports_refused`: PyTorch's requires grad and conjugate bit,
#: PaddlePaddle's stop_gradient=False): a consumer taking the table must still refuse them.
#: Every catalogued kind they refuse is fed.
TABLE_PRODUCERS = tuple(
    name for name, fw in FRAMEWORKS.items() if fw.table_exports_refused and fw.kinds is not None
)

#: The two checks below import other frameworks: the worker runs them before anything imports
#: the framework checked, and they build every tensor before feeding any.
IMPORTS_OTHERS = ("consumer.producer-refusals", "consumer.producer-refusal-error-type")

_REFUSAL_SURVEYS: dict = {}


def _can_import(producer: str, framework: Framework):
    """None when the framework `producer` may be imported next to `framework` here, else why
    not: never beside a framework it crashes with (`Framework.conflicts`: TensorFlow and
    PaddlePaddle), nor once a module that keeps its tensors from being built is loaded
    (`Framework.built_before`: PyTorch's jagged nested tensor once TensorFlow is)."""
    known = FRAMEWORKS[producer]
    if importlib.util.find_spec(known.module) is None:
        return "not installed"
    for other in sorted(known.conflicts):
        if framework.module.split(".")[0] == other or other in sys.modules:
            return f"never imported with {other}"
    for other in sorted(known.built_before):
        if other in sys.modules:
            return f"its tensors cannot be built once {other} is loaded"
    return None


def _refused_kinds(producer: str) -> list:
    """[(kind, __dlpack__'s Refused, __dlpack_device__'s exception class name or None, a
    fresh object to feed)] for every catalogued kind of `producer` that __dlpack__ refuses.
    Every object is built before any is fed: a consumer's import must not come between."""
    cases = []
    for kind in FRAMEWORKS[producer].kinds():
        try:
            reference = capsules.reference(kind.make())
            obj = kind.make()
        except Exception:  # noqa: BLE001 - a kind that cannot be built is not fed
            reference = obj = None
        if not isinstance(reference, Refused):
            continue
        try:
            obj.__dlpack_device__()
            device_error = None
        except Exception as error:  # noqa: BLE001
            device_error = type(error).__name__
        cases.append((kind.name, reference, device_error, obj))
    return cases


def _refusal_survey(framework: Framework):
    """({producer: [(kind, __dlpack__'s Refused, __dlpack_device__'s exception class name
    or None, the consumer's Refusal or None when it accepted)]}, the producers left out);
    computed once per framework object."""
    cached = _REFUSAL_SURVEYS.get(id(framework))
    if cached is not None and cached[0] is framework:
        return cached[1]
    feeds, left_out = {}, []
    for producer in TABLE_PRODUCERS:
        why = _can_import(producer, framework)
        if why is None:
            feeds[producer] = _refused_kinds(producer)
        else:
            left_out.append(f"{producer} ({why})")
    fed = {}
    for producer, cases in feeds.items():
        fed[producer] = []
        while cases:
            kind, reference, device_error, obj = cases.pop(0)
            try:
                result = framework.consume(obj)
                refusal = None
                del result
            except Exception as error:  # noqa: BLE001 - every exception is a refusal here
                refusal = Refusal(error)
            fed[producer].append((kind, reference, device_error, refusal))
            del obj
    gc.collect()
    survey = (fed, left_out)
    _REFUSAL_SURVEYS[id(framework)] = (framework, survey)
    return survey


def _left_out(left_out: list) -> str:
    return f"; left out: {', '.join(left_out)}" if left_out else ""


def producer_refusals(framework: Framework):
    fed, left_out = _refusal_survey(framework)
    if not any(fed.values()):
        return NA, "no producer to feed" + _left_out(left_out)
    accepted = []
    for producer, cases in fed.items():
        taken = [kind for kind, _, _, refusal in cases if refusal is None]
        if taken:
            accepted.append(
                f"accepted {len(taken)} of the {len(cases)} {producer} tensors "
                f"__dlpack__ refuses: {', '.join(taken)}"
            )
    if accepted:
        return FAIL, "; ".join(accepted) + _left_out(left_out)
    counts = ", ".join(f"{len(cases)} {producer}" for producer, cases in fed.items() if cases)
    return PASS, f"refused all {counts} tensors __dlpack__ refuses" + _left_out(left_out)


def producer_refusal_error_type(framework: Framework):
    fed, left_out = _refusal_survey(framework)
    groups: dict = {}
    refused = 0
    for producer, cases in fed.items():
        for kind, reference, device_error, refusal in cases:
            if refusal is None:
                continue
            refused += 1
            classes = {c.__name__ for c in refusal.kind.__mro__}
            # A consumer that asks __dlpack_device__ first (as from_dlpack may) passes on its error.
            if reference.exception in classes or device_error in classes:
                continue
            key = (producer, refusal.kind.__name__, reference.exception)
            groups.setdefault(key, []).append((kind, refusal.text))
    if not refused:
        return NA, "no tensor was refused" + _left_out(left_out)
    if groups:
        return FAIL, "; ".join(
            f"{producer}: raised {raised} where __dlpack__ raises {expected} on "
            f"{len(kinds)} kind{'s' * (len(kinds) != 1)}: {', '.join(k for k, _ in kinds)} "
            f"({kinds[0][1].splitlines()[0][:80] if kinds[0][1] else ''})"
            for (producer, raised, expected), kinds in groups.items()
        )
    return PASS, f"the producer's exception class for all {refused} refusals"


CHECKS = {
    "consumer.legacy-capsule": legacy_capsule,
    "consumer.renames-capsule": renames_capsule,
    "consumer.versioned-capsule": versioned_capsule,
    "consumer.deleter-once": deleter_once,
    "consumer.null-strides": null_strides,
    "consumer.extent-one-strides": extent_one_strides,
    "consumer.negative-strides": negative_strides,
    "consumer.zero-size-null-data": zero_size_null_data,
    "consumer.byte-offset": byte_offset,
    "consumer.keeps-dtype-and-values": keeps_dtype_and_values,
    "consumer.read-only": read_only,
    "consumer.legacy-read-only": legacy_read_only,
    "consumer.legacy-re-export": legacy_re_export,
    "consumer.major-version-2": major_version_2,
    "consumer.old-producer": old_producer,
    "consumer.copy-true": copy_true,
    "consumer.copy-true-refused": copy_true_refused,
    "consumer.producer-refusals": producer_refusals,
    "consumer.producer-refusal-error-type": producer_refusal_error_type,
}
