"""Exchange-table checks: the C exchange table (`__dlpack_c_exchange_api__`) a framework's
tensor type publishes, each member called through ctypes and compared with what `__dlpack__`
exports, then the table against `__dlpack__` over every catalogued kind of the framework.

Each check is a function of the `Subject` (`probes`, as the producer checks) that returns
`(outcome, detail)`.
"""

from __future__ import annotations

import ctypes

import numpy as np

from . import capi
from .abi import (
    EXCHANGE_MEMBERS,
    NAME_VERSIONED,
    SET_ERROR,
    DLManagedTensorVersioned,
    DLTensor,
    compact_strides,
)
from .capsules import (
    Exported,
    Refused,
    capsule_name,
    free,
    major_one,
    normalized_strides,
    read_capsule,
    read_exported,
    reference,
    table_member,
)
from .probes import (
    BASE,
    STREAM_SENTINEL,
    Subject,
    call,
    failed_table_call,
    read_values,
    table_function,
    table_of,
    usable_table_of,
)
from .records import make_from_numpy, make_managed
from .rules import FAIL, NA, PASS

MANAGED = "managed_tensor_from_py_object_no_sync"
DESCRIBE = "dltensor_from_py_object_no_sync"
NO_ERROR = "no exception set"

# ---- the table, member by member ----------------------------------------------------------


def exchange_capsule(s: Subject):
    table, why = table_of(type(s.tensor))
    if table is None:
        return NA, why
    if table is False:
        return FAIL, why
    return PASS, "a dlpack_exchange_api capsule"


def exchange_version(s: Subject):
    table, why = table_of(type(s.tensor))
    if not table:
        return NA, why
    version = (table.header.version.major, table.header.version.minor)
    if major_one(table) is None:
        return FAIL, f"version {version[0]}.{version[1]}, and no major-1 table along prev_api"
    return PASS, f"version {version[0]}.{version[1]}"


def exchange_members(s: Subject):
    table, why = usable_table_of(type(s.tensor))
    if table is None:
        return NA, why
    missing = [m for m in EXCHANGE_MEMBERS if m != DESCRIBE and not getattr(table, m)]
    return (FAIL, "NULL: " + ", ".join(missing)) if missing else (PASS, "all set")


def _dlpack_info(s: Subject):
    return read_capsule(s.tensor.__dlpack__(max_version=(1, 3)))


def _same_tensor(info: dict, tensor: DLTensor) -> list:
    ndim = tensor.ndim
    shape = tuple(tensor.shape[i] for i in range(ndim)) if tensor.shape else None
    strides = tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else None
    seen = {
        "data": (tensor.data or 0) + tensor.byte_offset,
        "dtype": (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes),
        "shape": shape,
        "strides": strides,
    }
    expected = {
        "data": (info["data"] or 0) + info["byte_offset"],
        "dtype": info["dtype"],
        "shape": info["shape"],
        "strides": info["strides"],
    }
    return [f"{k}: {seen[k]} vs __dlpack__'s {expected[k]}" for k in seen if seen[k] != expected[k]]


def exchange_from_py_object(s: Subject):
    export, outcome = table_function(s, MANAGED)
    if export is None:
        return outcome
    out = ctypes.POINTER(DLManagedTensorVersioned)()
    status, error = call(export, id(s.tensor), ctypes.byref(out))
    if failure := failed_table_call(status, error):
        return failure
    try:
        managed = out.contents
        if managed.version.major != 1:
            return FAIL, f"version {managed.version.major}.{managed.version.minor}"
        differences = _same_tensor(_dlpack_info(s), managed.dl_tensor)
    finally:
        free(out)
    return (FAIL, "; ".join(differences)) if differences else (PASS, "same as __dlpack__")


def exchange_dltensor(s: Subject):
    describe, outcome = table_function(s, DESCRIBE, missing=(NA, "NULL (allowed)"))
    if describe is None:
        return outcome
    tensor = DLTensor()
    status, error = call(describe, id(s.tensor), ctypes.byref(tensor))
    if failure := failed_table_call(status, error):
        return failure
    differences = _same_tensor(_dlpack_info(s), tensor)
    return (FAIL, "; ".join(differences)) if differences else (PASS, "same as __dlpack__")


def exchange_to_py_object(s: Subject):
    wrap, outcome = table_function(s, "managed_tensor_to_py_object_no_sync")
    if wrap is None:
        return outcome
    record = make_from_numpy(np.array(BASE, copy=True))
    out = ctypes.c_void_p()
    pointer = ctypes.cast(record.address, ctypes.POINTER(DLManagedTensorVersioned))
    status, error = call(wrap, pointer, ctypes.byref(out))
    if failure := failed_table_call(status, error):
        return failure
    wrapped = ctypes.cast(out, ctypes.py_object).value
    capi.Py_DecRef(wrapped)  # the call handed us a reference
    if not isinstance(wrapped, type(s.tensor)):
        return FAIL, f"made a {type(wrapped).__name__}, not a {type(s.tensor).__name__}"
    array, error = call(read_values, wrapped)
    if error is None and not (array == BASE).all():
        return FAIL, f"the object reads {array.tolist()}"
    return PASS, f"a {type(wrapped).__name__} over the tensor"


def exchange_allocator(s: Subject):
    allocate, outcome = table_function(s, "managed_tensor_allocator")
    if allocate is None:
        return outcome
    prototype = make_managed((3, 4), "float32").struct.dl_tensor
    out = ctypes.POINTER(DLManagedTensorVersioned)()
    messages = []

    @SET_ERROR
    def set_error(_ctx, kind, message):
        messages.append(f"{kind.decode()}: {message.decode()}")

    status, error = call(allocate, ctypes.byref(prototype), ctypes.byref(out), None, set_error)
    if error is not None or status != 0:
        return FAIL, f"returned {status}: {error or '; '.join(messages) or 'no error set'}"
    try:
        tensor = out.contents.dl_tensor
        shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
        device = (tensor.device.device_type, tensor.device.device_id)
    finally:
        free(out)
    if shape != (3, 4) or dtype != (2, 32, 1) or device != (1, 0):
        return FAIL, f"allocated shape {shape} dtype {dtype} on {device}"
    return PASS, "a (3, 4) float32 CPU tensor"


def exchange_work_stream(s: Subject):
    current, outcome = table_function(s, "current_work_stream")
    if current is None:
        return outcome
    stream = ctypes.c_void_p(STREAM_SENTINEL)
    status, error = call(current, 1, 0, ctypes.byref(stream))
    if failure := failed_table_call(status, error):
        return failure
    if stream.value == STREAM_SENTINEL:
        return FAIL, "returned 0 without writing the stream"
    if stream.value:
        return FAIL, f"stream {stream.value:#x} for the CPU"
    return PASS, "NULL for the CPU"


# ---- the table against __dlpack__, kind by kind -------------------------------------------
#
# A consumer that takes the table's fast path must still give `__dlpack__`'s answer (DLPack's
# C exchange API): for a framework with a catalogue (`Framework.kinds`), every catalogued kind
# is exported both ways and compared; for anything else (a user's `module:factory`, a
# framework without a catalogue) the one tensor the checker made. The table comes from each
# object's own type, as a consumer looks it up.


class _Broken:
    """A table answer that is neither an export nor a refusal (returned 0 without a tensor,
    or handed out something unreadable)."""

    def __init__(self, why: str):
        self.why = why


def _refusal(error, status) -> Refused:
    if error is None:
        return Refused(NO_ERROR, f"returned {status} without setting an error")
    return Refused(type(error).__name__, str(error))


def _read_export(out) -> Exported:
    """Reads a tensor the table handed out with the reader `capsules.reference` uses for
    `__dlpack__`'s capsules (through a capsule without destructor over it), which takes it and
    calls its deleter once; released here instead if the reader gave up before taking it."""
    address = ctypes.cast(out, ctypes.c_void_p).value
    capsule = capi.PyCapsule_New(address, capi.static_name(NAME_VERSIONED), None)
    try:
        return read_exported(capsule)
    finally:
        if capsule_name(capsule) == NAME_VERSIONED:
            free(out)


def _managed_answer(export, obj):
    """What `managed_tensor_from_py_object_no_sync` gives for `obj`: Exported (released
    exactly once), Refused (it returned non-zero) or _Broken."""
    out = ctypes.POINTER(DLManagedTensorVersioned)()
    status, error = call(export, id(obj), ctypes.byref(out))
    if error is not None or status != 0:
        if status == 0 and out:  # exported, and also left an error set
            free(out)
        return _refusal(error, status)
    if not out:
        return _Broken("returned 0 without a tensor")
    try:
        return _read_export(out)
    except ValueError as error:
        return _Broken(f"handed out an unreadable tensor: {error}")


def _describe_answer(describe, obj):
    """What `dltensor_from_py_object_no_sync` gives for `obj`: a dict of the fields it
    describes, Refused or _Broken."""
    tensor = DLTensor()
    status, error = call(describe, id(obj), ctypes.byref(tensor))
    if error is not None or status != 0:
        return _refusal(error, status)
    ndim = tensor.ndim
    if ndim < 0 or (ndim and not tensor.shape):
        return _Broken(f"ndim {ndim} with a{' NULL' if not tensor.shape else 'n'} shape")
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = (
        tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides else compact_strides(shape)
    )
    size = int(np.prod(shape)) if shape else 1
    return {
        "dtype": (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes),
        "shape": shape,
        "strides": normalized_strides(shape, strides),
        "data": ((tensor.data or 0) + tensor.byte_offset if tensor.data else 0) if size else None,
    }


def _fields(exported: Exported) -> dict:
    """The fields compared: data only when there are elements (a zero-size tensor may point
    anywhere, or nowhere), strides normalized (any stride is right on an extent-1 dimension),
    READ_ONLY as the reader understands it (a legacy capsule counts as read-only)."""
    return {
        "dtype": exported.dtype,
        "shape": exported.shape,
        "strides": normalized_strides(exported.shape, exported.strides),
        "data": exported.data if exported.size else None,
        "device": exported.device,
        "elements": exported.elements,
        "READ_ONLY": exported.read_only,
    }


def _mismatches(reference: Exported, answer: dict) -> list:
    expected = _fields(reference)
    return [
        key if key == "elements" else f"{key} {answer[key]} vs {expected[key]}"
        for key in answer
        if answer[key] != expected[key]
    ]


class _Probe:
    """One kind: `__dlpack__`'s answer (`capsules.reference`) and the table's, per member."""

    def __init__(self, kind: str, obj, table):
        self.kind = kind
        self.answers: dict = {}
        export = table_member(table, MANAGED)
        if export is not None:
            self.answers[MANAGED] = _managed_answer(export, obj)
        describe = table_member(table, DESCRIBE)
        if describe is not None:
            self.answers[DESCRIBE] = _describe_answer(describe, obj)
        self.reference = reference(obj)

    def verdict(self, member: str):
        """(bucket, note): "agree", "exported", "refused", "differs" or "broken"."""
        answer = self.answers[member]
        refused = isinstance(self.reference, Refused)
        if isinstance(answer, _Broken):
            return "broken", answer.why
        if isinstance(answer, Refused):
            return ("agree", None) if refused else ("refused", answer.exception)
        if refused:
            return "exported", None
        fields = _fields(answer) if isinstance(answer, Exported) else answer
        differences = _mismatches(self.reference, fields)
        return ("differs", ", ".join(differences)) if differences else ("agree", None)


class _Survey:
    def __init__(self, scope: str, probes: list, skipped: list):
        self.scope, self.probes, self.skipped = scope, probes, skipped

    def members(self) -> list:
        return [m for m in (MANAGED, DESCRIBE) if any(m in p.answers for p in self.probes)]


def _survey(s: Subject):
    """(_Survey, None), or (None, why the table rules do not apply); computed once."""
    if "survey" in s.cache:
        return s.cache["survey"]
    table, why = usable_table_of(type(s.tensor))
    if table is None:
        result = (None, why)
    else:
        name = s.framework.name
        if s.framework.kinds is not None:
            kinds = [(kind.name, kind.make) for kind in s.framework.kinds()]
            scope = f"{len(kinds)} catalogued kinds"
        else:
            kinds = [("the tensor", lambda: s.tensor)]
            scope = (
                "the factory's tensor"
                if s.framework.user_factory
                else f"its one tensor (no catalogue of {name}'s kinds)"
            )
        probes, skipped = [], []
        for kind, make in kinds:
            obj, error = call(make)
            kind_table = usable_table_of(type(obj))[0] if error is None else None
            if kind_table is None:
                skipped.append(kind)
                continue
            try:
                probes.append(_Probe(kind, obj, kind_table))
            except ValueError:  # __dlpack__ handed out a capsule the reader cannot read
                skipped.append(kind)
            del obj
        result = (
            (_Survey(scope, probes, skipped), None)
            if probes
            else (
                None,
                f"no kind could be made whose type publishes the table ({', '.join(skipped)})",
            )
        )
    s.cache["survey"] = result
    return result


def _names(items) -> str:
    return ", ".join(items)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


_BUCKETS = [
    ("exported", "exported {n} __dlpack__ refuses"),
    ("refused", "refused {n} __dlpack__ exports"),
    ("differs", "differs from __dlpack__ on {n}"),
    ("broken", "broke on {n}"),
]


def exchange_agrees_with_dlpack(s: Subject):
    survey, why = _survey(s)
    if survey is None:
        return NA, why
    problems, previous = [], {}
    for member in survey.members():
        verdicts = [
            (probe.kind, *probe.verdict(member))
            for probe in survey.probes
            if member in probe.answers
        ]
        listed = {}
        for bucket, template in _BUCKETS:
            items = [
                kind if note is None else f"{kind} ({note})"
                for kind, verdict, note in verdicts
                if verdict == bucket
            ]
            if not items:
                continue
            listed[bucket] = items
            if previous.get(bucket) == items:
                problems.append(f"{member}: the same {len(items)}")
            else:
                problems.append(
                    f"{member} {template.format(n=_plural(len(items), 'kind'))}: {_names(items)}"
                )
        previous = listed
    skipped = (
        f"; not built or without the table: {_names(survey.skipped)}" if survey.skipped else ""
    )
    if problems:
        return FAIL, "; ".join(problems) + skipped
    refused = sum(isinstance(p.reference, Refused) for p in survey.probes)
    return PASS, (
        f"agrees on {survey.scope}: {len(survey.probes)} compared, {refused} refused "
        f"by both{skipped}"
    )


def exchange_refusal_error_type(s: Subject):
    survey, why = _survey(s)
    if survey is None:
        return NA, why
    both, problems, previous = 0, [], {}
    for member in survey.members():
        groups: dict = {}
        for probe in survey.probes:
            answer = probe.answers.get(member)
            if not (isinstance(answer, Refused) and isinstance(probe.reference, Refused)):
                continue
            both += 1
            if answer.exception != probe.reference.exception:
                groups.setdefault((answer.exception, probe.reference.exception), []).append(
                    probe.kind
                )
        for (raised, expected), kinds in groups.items():
            if previous.get((raised, expected)) == kinds:
                problems.append(f"{member}: the same {len(kinds)}")
            else:
                problems.append(
                    f"{member} raised {raised} where __dlpack__ raises {expected} "
                    f"on {_plural(len(kinds), 'kind')}: {_names(kinds)}"
                )
        previous = groups
    if not both:
        return NA, f"nothing is refused by both the table and __dlpack__ ({survey.scope} checked)"
    if problems:
        return FAIL, "; ".join(problems)
    return PASS, f"the same exception class as __dlpack__ ({_plural(both, 'refusal')})"


CHECKS = {
    "exchange.capsule": exchange_capsule,
    "exchange.version": exchange_version,
    "exchange.members": exchange_members,
    "exchange.from-py-object": exchange_from_py_object,
    "exchange.dltensor": exchange_dltensor,
    "exchange.to-py-object": exchange_to_py_object,
    "exchange.allocator": exchange_allocator,
    "exchange.work-stream": exchange_work_stream,
    "exchange.agrees-with-dlpack": exchange_agrees_with_dlpack,
    "exchange.refusal-error-type": exchange_refusal_error_type,
}
