"""Producer checks: what a framework's tensors do when asked for DLPack capsules.

Each check is a function of the framework that returns `(outcome, detail)` for its rule:
"pass", "fail" or "n/a" (the rule does not apply, with the reason). Capsules are read with
ctypes without being consumed, and imported with dlbridge's validating importer when their
values matter.
"""

from __future__ import annotations

import ctypes
import gc
import sys
from typing import Callable

import numpy as np

from . import catalogue
from . import exchange_table as X
from . import producers as P
from .frameworks import Framework

BASE = np.arange(6, dtype=np.float32).reshape(2, 3)
FLAG_READ_ONLY = P.FLAG_READ_ONLY
FLAG_IS_COPIED = P.FLAG_IS_COPIED

PASS, FAIL, NA = "pass", "fail", "n/a"


class Subject:
    """The tensors a framework's producer checks use, made once."""

    def __init__(self, framework: Framework):
        self.framework = framework
        self.tensor = framework.make(BASE)
        self.known_values = not framework.user_factory
        #: What checks sharing one costly survey computed (the exchange table's kinds).
        self.cache: dict = {}

    def plain_data(self) -> int:
        info = P.read_capsule(self.tensor.__dlpack__(max_version=(1, 3)))
        return (info["data"] or 0) + info["byte_offset"]


def _call(function: Callable, *args, **kwargs):
    """(result, None) or (None, exception)."""
    try:
        return function(*args, **kwargs), None
    except Exception as error:  # noqa: BLE001 - every exception is a finding here
        return None, error


def _describe(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".strip()[:200]


def _raised(error, expected: type, when_nothing: str):
    """The outcome of a call that must raise `expected`: `when_nothing` fails it when it
    raised nothing."""
    if error is None:
        return FAIL, when_nothing
    if isinstance(error, expected):
        return PASS, expected.__name__
    return FAIL, f"raised {_describe(error)}, not {expected.__name__}"


def _values(capsule) -> np.ndarray:
    import dlbridge

    return np.from_dlpack(dlbridge.from_dlpack(capsule))


# ---- __dlpack__ ---------------------------------------------------------------------------


def keyword_only(s: Subject):
    _, error = _call(s.tensor.__dlpack__, None)
    return _raised(error, TypeError,
                   "__dlpack__(None) returned a capsule: a positional argument was accepted")


def accepts_keywords(s: Subject):
    device = s.tensor.__dlpack_device__()
    refused = []
    for keyword, value in [("stream", None), ("max_version", (1, 3)), ("dl_device", device),
                           ("copy", None)]:
        _, error = _call(s.tensor.__dlpack__, **{keyword: value})
        if error is not None:
            refused.append(f"{keyword}={value!r}: {_describe(error)}")
    return (FAIL, "; ".join(refused)) if refused else (PASS, "all four keywords accepted")


def legacy_without_max_version(s: Subject):
    wrong = []
    for label, kwargs in [("no max_version", {}), ("max_version=None", {"max_version": None}),
                          ("max_version=(0, 8)", {"max_version": (0, 8)})]:
        capsule, error = _call(s.tensor.__dlpack__, **kwargs)
        if error is not None:
            wrong.append(f"{label}: {_describe(error)}")
        elif P.capsule_name(capsule) != P.NAME_LEGACY:
            wrong.append(f"{label}: got {P.capsule_name(capsule)!r}")
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, "legacy `dltensor` capsules")


def _versioned_capsules(s: Subject):
    for asked in [(1, 0), (1, 3), (2, 0)]:
        capsule, error = _call(s.tensor.__dlpack__, max_version=asked)
        yield asked, capsule, error


def versioned_capsule(s: Subject):
    wrong = []
    for asked, capsule, error in _versioned_capsules(s):
        if error is not None:
            wrong.append(f"max_version={asked}: {_describe(error)}")
        elif P.capsule_name(capsule) != P.NAME_VERSIONED:
            wrong.append(f"max_version={asked}: got {P.capsule_name(capsule)!r}")
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, "`dltensor_versioned` capsules")


def version_fields(s: Subject):
    seen, wrong = [], []
    for asked, capsule, error in _versioned_capsules(s):
        if error is not None or P.capsule_name(capsule) != P.NAME_VERSIONED:
            continue
        version = P.read_capsule(capsule)["version"]
        seen.append(f"{asked}->{version[0]}.{version[1]}")
        if version[0] != 1 or version[0] > asked[0]:
            wrong.append(f"max_version={asked} gave version {version[0]}.{version[1]}")
    if not seen:
        return NA, "no versioned capsule to read"
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, ", ".join(seen))


def strides_present(s: Subject):
    checked = 0
    for asked, capsule, error in _versioned_capsules(s):
        if error is not None or P.capsule_name(capsule) != P.NAME_VERSIONED:
            continue
        info = P.read_capsule(capsule)
        if info["version"] >= (1, 2) and info["ndim"] > 0:
            checked += 1
            if info["strides"] is None:
                return FAIL, f"version {info['version']} with ndim {info['ndim']}: NULL strides"
    if not checked:
        return NA, "no capsule of version 1.2 or later"
    return PASS, "strides present"


def values(s: Subject):
    if not s.known_values:
        return NA, "a user's factory: the expected values are not known"
    wrong = []
    for label, kwargs in [("legacy", {}), ("versioned", {"max_version": (1, 3)})]:
        capsule, error = _call(s.tensor.__dlpack__, **kwargs)
        if error is not None:
            wrong.append(f"{label}: {_describe(error)}")
            continue
        array, error = _call(_values, capsule)
        if error is not None:
            wrong.append(f"{label}: dlbridge refuses the capsule: {_describe(error)}")
        elif array.dtype != BASE.dtype or array.shape != BASE.shape or not (array == BASE).all():
            wrong.append(f"{label}: read {array.dtype} {array.tolist()}, expected "
                         f"{BASE.dtype} {BASE.tolist()}")
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, "values, shape and dtype as made")


def read_only_flag(s: Subject):
    if s.framework.make_read_only is None:
        return NA, "the framework has no read-only tensors"
    tensor = s.framework.make_read_only(BASE)
    capsule, error = _call(tensor.__dlpack__, max_version=(1, 3))
    if error is not None:
        return FAIL, f"versioned export of read-only data: {_describe(error)}"
    info = P.read_capsule(capsule)
    if info["version"] is None:
        return FAIL, "a legacy capsule for read-only data (it cannot carry READ_ONLY)"
    if not info["flags"] & FLAG_READ_ONLY:
        return FAIL, f"flags {info['flags']:#x} without READ_ONLY"
    return PASS, "READ_ONLY set"


def read_only_legacy_refused(s: Subject):
    if s.framework.make_read_only is None:
        return NA, "the framework has no read-only tensors"
    tensor = s.framework.make_read_only(BASE)
    _, error = _call(tensor.__dlpack__)
    return _raised(error, BufferError, "a legacy capsule was made for read-only data")


def copy_flag(s: Subject):
    original = s.plain_data()
    capsule, error = _call(s.tensor.__dlpack__, max_version=(1, 3), copy=True)
    if error is not None:
        return FAIL, f"copy=True: {_describe(error)}"
    info = P.read_capsule(capsule)
    data = (info["data"] or 0) + info["byte_offset"]
    problems = []
    if data == original:
        problems.append("the capsule shares the tensor's memory")
    if info["version"] is None:
        problems.append("a legacy capsule cannot carry IS_COPIED")
    elif not info["flags"] & FLAG_IS_COPIED:
        problems.append(f"flags {info['flags']:#x} without IS_COPIED")
    return (FAIL, "; ".join(problems)) if problems else (PASS, "a flagged copy")


def no_copy_shares(s: Subject):
    original = s.plain_data()
    capsule, error = _call(s.tensor.__dlpack__, max_version=(1, 3), copy=False)
    if error is not None:
        return FAIL, f"copy=False: {_describe(error)}"
    info = P.read_capsule(capsule)
    if (info["data"] or 0) + info["byte_offset"] != original:
        return FAIL, "copy=False gave other memory"
    return PASS, "shared"


def zero_size(s: Subject):
    if not s.known_values:
        return NA, "a user's factory makes one tensor only"
    empty, error = _call(s.framework.make, np.zeros((0, 3), dtype=np.float32))
    if error is not None:
        return NA, f"the framework cannot make a (0, 3) tensor: {_describe(error)}"
    capsule, error = _call(empty.__dlpack__, max_version=(1, 3))
    if error is not None:
        return FAIL, f"export of a (0, 3) tensor: {_describe(error)}"
    info = P.read_capsule(capsule)
    if not info["data"] and info["byte_offset"] != 0:
        return FAIL, f"NULL data with byte_offset {info['byte_offset']}"
    _, error = _call(_values, capsule)
    if error is not None:
        return FAIL, f"dlbridge refuses the capsule: {_describe(error)}"
    detail = "NULL data" if not info["data"] else "non-NULL data"
    return PASS, f"exports ({detail}, byte_offset {info['byte_offset']})"


def _device(s: Subject):
    return _call(s.tensor.__dlpack_device__)


def device_tuple(s: Subject):
    device, error = _device(s)
    if error is not None:
        return FAIL, f"__dlpack_device__(): {_describe(error)}"
    if not isinstance(device, tuple) or len(device) != 2 or not isinstance(device[0], int):
        return FAIL, f"returned {device!r}"
    if not isinstance(device[1], int) and device[1] is not None:
        return FAIL, f"returned {device!r}"
    return PASS, repr(tuple(int(v) if v is not None else None for v in device))


def device_id_int(s: Subject):
    device, error = _device(s)
    if error is not None or not isinstance(device, tuple) or len(device) != 2:
        return NA, "no device tuple to read"
    if device[1] is None:
        return FAIL, "device_id is None"
    return PASS, f"device_id {int(device[1])}"


def device_matches_capsule(s: Subject):
    device, error = _device(s)
    if error is not None or not isinstance(device, tuple) or len(device) != 2:
        return NA, "no device tuple to read"
    info = P.read_capsule(s.tensor.__dlpack__(max_version=(1, 3)))
    reported = (int(device[0]), int(device[1] or 0))
    if info["device"] != reported:
        return FAIL, f"__dlpack_device__ says {reported}, the capsule {info['device']}"
    return PASS, f"{reported}"


def _host_tensor(s: Subject) -> bool:
    device, error = _device(s)
    return error is None and int(device[0]) in (1, 3, 11, 13)


def _bad_stream_error(s: Subject):
    return _call(s.tensor.__dlpack__, stream=5)


def bad_stream(s: Subject):
    if not _host_tensor(s):
        return NA, "the tensor is not in host memory"
    _, error = _bad_stream_error(s)
    if error is None:
        return FAIL, "stream=5 accepted for CPU data"
    if isinstance(error, TypeError):
        return FAIL, f"raised {_describe(error)}: consumers read TypeError as an old producer"
    return PASS, f"raised {type(error).__name__}"


def bad_stream_error_type(s: Subject):
    if not _host_tensor(s):
        return NA, "the tensor is not in host memory"
    _, error = _bad_stream_error(s)
    if error is None:
        return NA, "nothing raised (see producer.bad-stream)"
    if isinstance(error, (ValueError, BufferError)):
        return PASS, type(error).__name__
    return FAIL, f"raised {_describe(error)}"


def unreachable_device(s: Subject):
    if not _host_tensor(s):
        return NA, "the tensor is not in host memory"
    _, error = _call(s.tensor.__dlpack__, max_version=(1, 3), dl_device=(2, 0))
    return _raised(error, BufferError, "dl_device=(2, 0) (CUDA) accepted for a CPU tensor on a "
                                       "machine checked without a GPU")


def copy_false_needs_copy(s: Subject):
    if _host_tensor(s):
        return NA, "a tensor in host memory never needs a copy to reach the CPU"
    _, error = _call(s.tensor.__dlpack__, max_version=(1, 3), dl_device=(1, 0), copy=False)
    return _raised(error, BufferError, "copy=False to the CPU from a device tensor succeeded")


def consumed_once(s: Subject):
    import dlbridge

    first = s.tensor.__dlpack__(max_version=(1, 3))
    second = s.tensor.__dlpack__(max_version=(1, 3))
    if first is second:
        return FAIL, "two __dlpack__ calls returned the same capsule"
    imported = dlbridge.from_dlpack(first)  # renames the capsule used_*
    del first, second
    gc.collect()
    if s.known_values and not (np.from_dlpack(imported) == BASE).all():
        return FAIL, "the values changed once the consumed capsule was released"
    return PASS, "a new capsule per call; a consumed capsule leaves the tensor alone"


def _rss() -> int | None:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[1]) * 4096
    except OSError:
        return None


def no_leak(s: Subject, exchanges: int = 10_000):
    import dlbridge

    tensor = s.tensor

    def exchange(i):
        if i % 3 == 0:
            dlbridge.from_dlpack(tensor.__dlpack__(max_version=(1, 3)))
        elif i % 3 == 1:
            tensor.__dlpack__(max_version=(1, 3))  # dropped unconsumed
        else:
            tensor.__dlpack__()

    for i in range(300):
        exchange(i)
    gc.collect()
    references = sys.getrefcount(tensor)
    before = _rss()
    for i in range(exchanges):
        exchange(i)
    gc.collect()
    after = _rss()
    grown = sys.getrefcount(tensor) - references
    problems = []
    if grown:
        problems.append(f"the tensor's reference count grew by {grown}")
    if before is not None and after - before > 4 << 20:
        problems.append(f"memory grew by {(after - before) >> 10} KiB")
    if problems:
        return FAIL, f"over {exchanges} exchanges: " + "; ".join(problems)
    growth = "" if before is None else f", memory {max(0, after - before) >> 10} KiB"
    return PASS, f"{exchanges} exchanges: reference count flat{growth}"


# ---- the C exchange table -------------------------------------------------------------------


def _table_of(kind: type):
    """(the table `kind` publishes, None), or (None, why) when it publishes none, or (False,
    why) when its capsule is not a table's."""
    capsule = getattr(kind, "__dlpack_c_exchange_api__", None)
    if capsule is None:
        return None, "the type publishes no __dlpack_c_exchange_api__"
    try:
        return X.capsule_table(capsule), None
    except ValueError as error:
        return False, str(error)


def _table(s: Subject):
    return _table_of(type(s.tensor))


def _usable_table_of(kind: type):
    """(the major-1 table `kind` publishes, None), or (None, why)."""
    table, why = _table_of(kind)
    if not table:
        return None, why
    table = X.major_one(table)
    if table is None:
        return None, "no table of major version 1"
    return table, None


def _usable_table(s: Subject):
    return _usable_table_of(type(s.tensor))


def _member(s: Subject, member: str, missing=(FAIL, "NULL")):
    """(callable, None) for a member of the type's major-1 table, or (None, the outcome to
    report): n/a without a usable table, `missing` when the member is NULL."""
    table, why = _usable_table(s)
    if table is None:
        return None, (NA, why)
    function = X.function(table, member)
    return (function, None) if function is not None else (None, missing)


def _failed_call(status, error):
    """The failure to report for a table call that did not return 0, else None."""
    if error is not None or status != 0:
        return FAIL, f"returned {status}: {_describe(error) if error else 'no error set'}"
    return None


def exchange_capsule(s: Subject):
    table, why = _table(s)
    if table is None:
        return NA, why
    if table is False:
        return FAIL, why
    return PASS, "a dlpack_exchange_api capsule"


def exchange_version(s: Subject):
    table, why = _table(s)
    if not table:
        return NA, why
    version = (table.header.version.major, table.header.version.minor)
    if X.major_one(table) is None:
        return FAIL, f"version {version[0]}.{version[1]}, and no major-1 table along prev_api"
    return PASS, f"version {version[0]}.{version[1]}"


def exchange_members(s: Subject):
    table, why = _usable_table(s)
    if table is None:
        return NA, why
    missing = [m for m in X.MEMBERS if m != "dltensor_from_py_object_no_sync"
               and not getattr(table, m)]
    return (FAIL, "NULL: " + ", ".join(missing)) if missing else (PASS, "all set")


def _dlpack_info(s: Subject):
    return P.read_capsule(s.tensor.__dlpack__(max_version=(1, 3)))


def _same_tensor(info: dict, tensor: P.DLTensor) -> list:
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
    export, outcome = _member(s, "managed_tensor_from_py_object_no_sync")
    if export is None:
        return outcome
    out = ctypes.POINTER(P.DLManagedTensorVersioned)()
    status, error = _call(export, id(s.tensor), ctypes.byref(out))
    if failure := _failed_call(status, error):
        return failure
    try:
        managed = out.contents
        if managed.version.major != 1:
            return FAIL, f"version {managed.version.major}.{managed.version.minor}"
        differences = _same_tensor(_dlpack_info(s), managed.dl_tensor)
    finally:
        X.free(out)
    return (FAIL, "; ".join(differences)) if differences else (PASS, "same as __dlpack__")


def exchange_dltensor(s: Subject):
    describe, outcome = _member(s, "dltensor_from_py_object_no_sync",
                                missing=(NA, "NULL (allowed)"))
    if describe is None:
        return outcome
    tensor = P.DLTensor()
    status, error = _call(describe, id(s.tensor), ctypes.byref(tensor))
    if failure := _failed_call(status, error):
        return failure
    differences = _same_tensor(_dlpack_info(s), tensor)
    return (FAIL, "; ".join(differences)) if differences else (PASS, "same as __dlpack__")


def exchange_to_py_object(s: Subject):
    wrap, outcome = _member(s, "managed_tensor_to_py_object_no_sync")
    if wrap is None:
        return outcome
    record = P.make_from_numpy(np.array(BASE, copy=True))
    out = ctypes.c_void_p()
    pointer = ctypes.cast(record.address, ctypes.POINTER(P.DLManagedTensorVersioned))
    status, error = _call(wrap, pointer, ctypes.byref(out))
    if failure := _failed_call(status, error):
        return failure
    wrapped = ctypes.cast(out, ctypes.py_object).value
    ctypes.pythonapi.Py_DecRef(ctypes.py_object(wrapped))  # the call handed us a reference
    if not isinstance(wrapped, type(s.tensor)):
        return FAIL, f"made a {type(wrapped).__name__}, not a {type(s.tensor).__name__}"
    array, error = _call(_values, wrapped)
    if error is None and not (array == BASE).all():
        return FAIL, f"the object reads {array.tolist()}"
    return PASS, f"a {type(wrapped).__name__} over the tensor"


def exchange_allocator(s: Subject):
    allocate, outcome = _member(s, "managed_tensor_allocator")
    if allocate is None:
        return outcome
    prototype = P.make_managed((3, 4), "float32").struct.dl_tensor
    out = ctypes.POINTER(P.DLManagedTensorVersioned)()
    messages = []

    @X.SET_ERROR
    def set_error(_ctx, kind, message):
        messages.append(f"{kind.decode()}: {message.decode()}")

    status, error = _call(allocate, ctypes.byref(prototype), ctypes.byref(out), None, set_error)
    if error is not None or status != 0:
        return FAIL, f"returned {status}: {error or '; '.join(messages) or 'no error set'}"
    try:
        tensor = out.contents.dl_tensor
        shape = tuple(tensor.shape[i] for i in range(tensor.ndim))
        dtype = (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes)
        device = (tensor.device.device_type, tensor.device.device_id)
    finally:
        X.free(out)
    if shape != (3, 4) or dtype != (2, 32, 1) or device != (1, 0):
        return FAIL, f"allocated shape {shape} dtype {dtype} on {device}"
    return PASS, "a (3, 4) float32 CPU tensor"


def exchange_work_stream(s: Subject):
    current, outcome = _member(s, "current_work_stream")
    if current is None:
        return outcome
    sentinel = 0x5EED
    stream = ctypes.c_void_p(sentinel)
    status, error = _call(current, 1, 0, ctypes.byref(stream))
    if failure := _failed_call(status, error):
        return failure
    if stream.value == sentinel:
        return FAIL, "returned 0 without writing the stream"
    if stream.value:
        return FAIL, f"stream {stream.value:#x} for the CPU"
    return PASS, "NULL for the CPU"

# ---- the exchange table against __dlpack__, kind by kind ------------------------------------
#
# A consumer that takes the table's fast path must still give `__dlpack__`'s answer (protocol
# 6): for a framework of the catalogue (`catalogue.kinds`), every catalogued kind is exported
# both ways and compared; for anything else (a user's `module:factory`, a framework without a
# catalogue) the one tensor the checker made. The table comes from each object's own type, as
# a consumer looks it up.

MANAGED = "managed_tensor_from_py_object_no_sync"
DESCRIBE = "dltensor_from_py_object_no_sync"
NO_ERROR = "no exception set"


class _Broken:
    """A table answer that is neither an export nor a refusal (returned 0 without a tensor,
    or handed out something unreadable)."""

    def __init__(self, why: str):
        self.why = why


def _refusal(error, status) -> catalogue.Refused:
    if error is None:
        return catalogue.Refused(NO_ERROR, f"returned {status} without setting an error")
    return catalogue.Refused(type(error).__name__, str(error))


def _read_export(out) -> catalogue.Exported:
    """Reads a tensor the table handed out with the reader `catalogue.reference` uses for
    `__dlpack__`'s capsules (through a capsule without destructor over it), which takes it and
    calls its deleter once; released here instead if the reader gave up before taking it."""
    address = ctypes.cast(out, ctypes.c_void_p).value
    name = ctypes.cast(P._static_name(P.NAME_VERSIONED), ctypes.c_char_p)
    capsule = P.PyCapsule_New(address, name, None)
    try:
        return catalogue._read(capsule, None)
    finally:
        if P.capsule_name(capsule) == P.NAME_VERSIONED:
            X.free(out)


def _managed_answer(export, obj):
    """What `managed_tensor_from_py_object_no_sync` gives for `obj`: Exported (released
    exactly once), Refused (it returned non-zero) or _Broken."""
    out = ctypes.POINTER(P.DLManagedTensorVersioned)()
    status, error = _call(export, id(obj), ctypes.byref(out))
    if error is not None or status != 0:
        if status == 0 and out:  # exported, and also left an error set
            X.free(out)
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
    tensor = P.DLTensor()
    status, error = _call(describe, id(obj), ctypes.byref(tensor))
    if error is not None or status != 0:
        return _refusal(error, status)
    ndim = tensor.ndim
    if ndim < 0 or (ndim and not tensor.shape):
        return _Broken(f"ndim {ndim} with a{' NULL' if not tensor.shape else 'n'} shape")
    shape = tuple(tensor.shape[i] for i in range(ndim))
    strides = (tuple(tensor.strides[i] for i in range(ndim)) if tensor.strides
               else catalogue._compact_strides(shape))
    size = int(np.prod(shape)) if shape else 1
    return {
        "dtype": (tensor.dtype.code, tensor.dtype.bits, tensor.dtype.lanes),
        "shape": shape,
        "strides": catalogue.normalized_strides(shape, strides),
        "data": ((tensor.data or 0) + tensor.byte_offset if tensor.data else 0) if size else None,
    }


def _fields(exported: catalogue.Exported) -> dict:
    """The fields compared: data only when there are elements (a zero-size tensor may point
    anywhere, or nowhere), strides normalized (any stride is right on an extent-1 dimension),
    READ_ONLY as the reader understands it (a legacy capsule counts as read-only)."""
    return {
        "dtype": exported.dtype,
        "shape": exported.shape,
        "strides": catalogue.normalized_strides(exported.shape, exported.strides),
        "data": exported.data if exported.size else None,
        "device": exported.device,
        "elements": exported.elements,
        "READ_ONLY": exported.read_only,
    }


def _mismatches(reference: catalogue.Exported, answer: dict) -> list:
    expected = _fields(reference)
    return [key if key == "elements" else f"{key} {answer[key]} vs {expected[key]}"
            for key in answer if answer[key] != expected[key]]


class _Probe:
    """One kind: `__dlpack__`'s answer (catalogue.reference) and the table's, per member."""

    def __init__(self, kind: str, obj, table):
        self.kind = kind
        self.answers: dict = {}
        export = X.function(table, MANAGED)
        if export is not None:
            self.answers[MANAGED] = _managed_answer(export, obj)
        describe = X.function(table, DESCRIBE)
        if describe is not None:
            self.answers[DESCRIBE] = _describe_answer(describe, obj)
        self.reference = catalogue.reference(obj)

    def verdict(self, member: str):
        """(bucket, note): "agree", "exported", "refused", "differs" or "broken"."""
        answer = self.answers[member]
        refused = isinstance(self.reference, catalogue.Refused)
        if isinstance(answer, _Broken):
            return "broken", answer.why
        if isinstance(answer, catalogue.Refused):
            return ("agree", None) if refused else ("refused", answer.exception)
        if refused:
            return "exported", None
        fields = _fields(answer) if isinstance(answer, catalogue.Exported) else answer
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
    table, why = _usable_table(s)
    if table is None:
        result = (None, why)
    else:
        name = s.framework.name
        if not s.framework.user_factory and name in catalogue.FRAMEWORKS:
            kinds = [(kind.name, kind.make) for kind in catalogue.kinds(name)]
            scope = f"{len(kinds)} catalogued kinds"
        else:
            kinds = [("the tensor", lambda: s.tensor)]
            scope = ("the factory's tensor" if s.framework.user_factory
                     else f"its one tensor (no catalogue of {name}'s kinds)")
        probes, skipped = [], []
        for kind, make in kinds:
            obj, error = _call(make)
            kind_table = _usable_table_of(type(obj))[0] if error is None else None
            if kind_table is None:
                skipped.append(kind)
                continue
            try:
                probes.append(_Probe(kind, obj, kind_table))
            except ValueError:  # __dlpack__ handed out a capsule the reader cannot read
                skipped.append(kind)
            del obj
        result = (_Survey(scope, probes, skipped), None) if probes else (
            None, f"no kind could be made whose type publishes the table ({', '.join(skipped)})")
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
        verdicts = [(probe.kind, *probe.verdict(member))
                    for probe in survey.probes if member in probe.answers]
        listed = {}
        for bucket, template in _BUCKETS:
            items = [kind if note is None else f"{kind} ({note})"
                     for kind, verdict, note in verdicts if verdict == bucket]
            if not items:
                continue
            listed[bucket] = items
            if previous.get(bucket) == items:
                problems.append(f"{member}: the same {len(items)}")
            else:
                problems.append(f"{member} {template.format(n=_plural(len(items), 'kind'))}: "
                                f"{_names(items)}")
        previous = listed
    skipped = f"; not built or without the table: {_names(survey.skipped)}" \
        if survey.skipped else ""
    if problems:
        return FAIL, "; ".join(problems) + skipped
    refused = sum(isinstance(p.reference, catalogue.Refused) for p in survey.probes)
    return PASS, (f"agrees on {survey.scope}: {len(survey.probes)} compared, {refused} refused "
                  f"by both{skipped}")


def exchange_refusal_error_type(s: Subject):
    survey, why = _survey(s)
    if survey is None:
        return NA, why
    both, problems, previous = 0, [], {}
    for member in survey.members():
        groups: dict = {}
        for probe in survey.probes:
            answer = probe.answers.get(member)
            if not (isinstance(answer, catalogue.Refused)
                    and isinstance(probe.reference, catalogue.Refused)):
                continue
            both += 1
            if answer.exception != probe.reference.exception:
                groups.setdefault((answer.exception, probe.reference.exception),
                                  []).append(probe.kind)
        for (raised, expected), kinds in groups.items():
            if previous.get((raised, expected)) == kinds:
                problems.append(f"{member}: the same {len(kinds)}")
            else:
                problems.append(f"{member} raised {raised} where __dlpack__ raises {expected} "
                                f"on {_plural(len(kinds), 'kind')}: {_names(kinds)}")
        previous = groups
    if not both:
        return NA, f"nothing is refused by both the table and __dlpack__ ({survey.scope} checked)"
    if problems:
        return FAIL, "; ".join(problems)
    return PASS, f"the same exception class as __dlpack__ ({_plural(both, 'refusal')})"

CHECKS = {
    "producer.keyword-only": keyword_only,
    "producer.accepts-keywords": accepts_keywords,
    "producer.legacy-without-max-version": legacy_without_max_version,
    "producer.versioned-capsule": versioned_capsule,
    "producer.version-fields": version_fields,
    "producer.strides-present": strides_present,
    "producer.values": values,
    "producer.read-only-flag": read_only_flag,
    "producer.read-only-legacy-refused": read_only_legacy_refused,
    "producer.copy-flag": copy_flag,
    "producer.no-copy-shares": no_copy_shares,
    "producer.zero-size": zero_size,
    "producer.device-tuple": device_tuple,
    "producer.device-id-int": device_id_int,
    "producer.device-matches-capsule": device_matches_capsule,
    "producer.bad-stream": bad_stream,
    "producer.bad-stream-error-type": bad_stream_error_type,
    "producer.unreachable-device": unreachable_device,
    "producer.copy-false-needs-copy": copy_false_needs_copy,
    "producer.consumed-once": consumed_once,
    "producer.no-leak": no_leak,
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
