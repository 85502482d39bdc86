"""Producer checks: what a framework's tensors do when asked for DLPack capsules through
`__dlpack__` and `__dlpack_device__` (the C exchange table's checks are `exchange_checks`).

Each check is a function of the `Subject` (`probes`: the framework's tensors, made once)
that returns `(outcome, detail)` for its rule: PASS, FAIL or NA (the rule does not apply,
with the reason). Capsules are read with ctypes without being consumed, and imported with
dlbridge's validating importer when their values matter. `producer.copy-false-needs-copy`'s
check is `probes.copy_false_needs_copy`, which the device checks run on a CUDA tensor too.
"""

from __future__ import annotations

import gc
import sys

import numpy as np

from .abi import FLAG_IS_COPIED, FLAG_READ_ONLY, NAME_LEGACY, NAME_VERSIONED
from .capsule_only import CapsuleOnly
from .capsules import capsule_name, read_capsule
from .probes import (
    BASE,
    Subject,
    call,
    copy_false_needs_copy,
    describe_error,
    expect_raised,
    flagged_read_only,
    on_host,
    read_only_evidence,
    read_values,
)
from .rules import FAIL, NA, PASS

#: How many exchanges `producer.no-leak` makes.
EXCHANGES = 10_000


# ---- __dlpack__ ---------------------------------------------------------------------------


def keyword_only(s: Subject):
    _, error = call(s.tensor.__dlpack__, None)
    return expect_raised(
        error, TypeError, "__dlpack__(None) returned a capsule: a positional argument was accepted"
    )


#: What a read-only tensor's checks say of asking with max_version where the rule does not
#: concern the version: a legacy capsule of it must be refused.
_READ_ONLY_ASKED = " (read-only: asked with max_version=(1, 3), as its legacy export is refused)"


def accepts_keywords(s: Subject):
    device = s.tensor.__dlpack_device__()
    refused = []
    for keyword, value in [
        ("stream", None),
        ("max_version", (1, 3)),
        ("dl_device", device),
        ("copy", None),
    ]:
        kwargs = {keyword: value}
        if s.read_only and keyword != "max_version":
            kwargs["max_version"] = (1, 3)
        _, error = call(s.tensor.__dlpack__, **kwargs)
        if error is not None:
            refused.append(f"{keyword}={value!r}: {describe_error(error)}")
    if refused:
        return FAIL, "; ".join(refused)
    return PASS, "all four keywords accepted" + (_READ_ONLY_ASKED if s.read_only else "")


def legacy_without_max_version(s: Subject):
    wrong, legacy_of_read_only = [], False
    for label, kwargs in [
        ("no max_version", {}),
        ("max_version=None", {"max_version": None}),
        ("max_version=(0, 8)", {"max_version": (0, 8)}),
    ]:
        capsule, error = call(s.tensor.__dlpack__, **kwargs)
        if s.read_only:
            # Read-only data has no legacy capsule: the refusal is the legacy answer, and a
            # capsule given all the same is producer.read-only-legacy-refused's finding.
            if error is None:
                legacy_of_read_only = True
            elif not isinstance(error, BufferError):
                wrong.append(f"{label}: {describe_error(error)}, not BufferError")
        elif error is not None:
            wrong.append(f"{label}: {describe_error(error)}")
        elif capsule_name(capsule) != NAME_LEGACY:
            wrong.append(f"{label}: got {capsule_name(capsule)!r}")
    if wrong:
        return FAIL, "; ".join(wrong)
    if legacy_of_read_only:
        return NA, (
            "read-only data, given as a legacy capsule: producer.read-only-legacy-refused "
            "judges that"
        )
    if s.read_only:
        return PASS, "read-only data: refused (BufferError) on the legacy path, as it must be"
    return PASS, "legacy `dltensor` capsules"


def _versioned_capsules(s: Subject):
    for asked in [(1, 0), (1, 3), (2, 0)]:
        capsule, error = call(s.tensor.__dlpack__, max_version=asked)
        yield asked, capsule, error


def versioned_capsule(s: Subject):
    wrong = []
    for asked, capsule, error in _versioned_capsules(s):
        if error is not None:
            wrong.append(f"max_version={asked}: {describe_error(error)}")
        elif capsule_name(capsule) != NAME_VERSIONED:
            wrong.append(f"max_version={asked}: got {capsule_name(capsule)!r}")
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, "`dltensor_versioned` capsules")


def version_fields(s: Subject):
    seen, wrong = [], []
    for asked, capsule, error in _versioned_capsules(s):
        if error is not None or capsule_name(capsule) != NAME_VERSIONED:
            continue
        version = read_capsule(capsule)["version"]
        seen.append(f"{asked}->{version[0]}.{version[1]}")
        if version[0] != 1 or version[0] > asked[0]:
            wrong.append(f"max_version={asked} gave version {version[0]}.{version[1]}")
    if not seen:
        return NA, "no versioned capsule to read"
    return (FAIL, "; ".join(wrong)) if wrong else (PASS, ", ".join(seen))


def strides_present(s: Subject):
    checked = 0
    for _asked, capsule, error in _versioned_capsules(s):
        if error is not None or capsule_name(capsule) != NAME_VERSIONED:
            continue
        info = read_capsule(capsule)
        if info["version"] >= (1, 2) and info["ndim"] > 0:
            checked += 1
            if info["strides"] is None:
                return FAIL, f"version {info['version']} with ndim {info['ndim']}: NULL strides"
    if not checked:
        return NA, "no capsule of version 1.2 or later"
    return PASS, "strides present"


def _known_tensors(s: Subject, which=lambda kind: True) -> list:
    """[(label, tensor, expected values, read-only)]: the checker's own tensor of `BASE`
    (not for a user's factory, whose values are unknown) and every catalogued kind with
    expected values for which `which(kind)` holds."""
    known = [("the checker's (2, 3) float32", s.tensor, BASE, False)] if s.known_values else []
    known.extend(
        (f"kind {kind.name}", s.framework.exporter(kind.make()), kind.expected, kind.read_only)
        for kind in s.framework.catalogue(lambda k: k.expected is not None and which(k))
    )
    return known


def _values_of(label: str, tensor, expected: np.ndarray, read_only: bool) -> list:
    """What is wrong with the values a tensor's capsules describe (legacy, unless read-only,
    and versioned)."""
    expected = np.asarray(expected)
    wrong = []
    paths = [("versioned", {"max_version": (1, 3)})]
    if not read_only:
        paths.insert(0, ("legacy", {}))
    for path, kwargs in paths:
        capsule, error = call(tensor.__dlpack__, **kwargs)
        if error is not None:
            wrong.append(f"{label}, {path}: {describe_error(error)}")
            continue
        array, error = call(read_values, capsule)
        if error is not None:
            wrong.append(f"{label}, {path}: dlbridge refuses the capsule: {describe_error(error)}")
        elif (
            array.dtype != expected.dtype
            or array.shape != expected.shape
            or array.tobytes() != np.ascontiguousarray(expected).tobytes()
        ):
            wrong.append(
                f"{label}, {path}: read {array.dtype}{array.shape} {array.ravel()[:6].tolist()}, "
                f"expected {expected.dtype}{expected.shape} {expected.ravel()[:6].tolist()}"
            )
    return wrong


def values(s: Subject):
    known = _known_tensors(s)
    if not known:
        return NA, (
            "a user's factory: the expected values are not known (a framework description "
            "whose catalogue gives expected values is checked: docs/check-frameworks.md)"
        )
    wrong = [problem for entry in known for problem in _values_of(*entry)]
    if wrong:
        more = f"; and {len(wrong) - 3} more" if len(wrong) > 3 else ""
        return FAIL, "; ".join(wrong[:3]) + more
    return PASS, f"values, shape and dtype as made ({len(known)} tensor(s))"


def _read_only_tensors(s: Subject) -> tuple:
    """([(label, tensor)] of the read-only tensors the framework says it has: its
    `make_read_only`, its catalogue's kinds with `read_only`, a factory's read-only tensor;
    [(label, tensor, why)] of a factory's tensor whose data is read-only by evidence but not
    flagged)."""
    said, unflagged = [], []
    if s.framework.make_read_only is not None:
        said.append(("make_read_only", s.framework.exporter(s.framework.make_read_only(BASE))))
    said.extend(
        (f"kind {kind.name}", s.framework.exporter(kind.make()))
        for kind in s.framework.catalogue(lambda k: k.read_only)
    )
    if s.framework.user_factory:
        evidence = read_only_evidence(s.tensor)
        if flagged_read_only(s.tensor):
            said.append(("the factory's tensor", s.tensor))
        elif evidence is not None:
            unflagged.append(("the factory's tensor", s.tensor, evidence))
    return said, unflagged


_NO_READ_ONLY = (
    "the framework has no read-only tensors (no make_read_only, no catalogued kind with "
    "read_only=True, nor a factory tensor that is read-only)"
)


def read_only_flag(s: Subject):
    said, unflagged = _read_only_tensors(s)
    wrong = [f"{label}: {why}, but READ_ONLY is not set" for label, _, why in unflagged]
    for label, tensor in said:
        capsule, error = call(tensor.__dlpack__, max_version=(1, 3))
        if error is not None:
            wrong.append(f"{label}: versioned export of read-only data: {describe_error(error)}")
            continue
        info = read_capsule(capsule)
        if info["version"] is None:
            wrong.append(
                f"{label}: a legacy capsule for read-only data (it cannot carry READ_ONLY)"
            )
        elif not info["flags"] & FLAG_READ_ONLY:
            wrong.append(f"{label}: flags {info['flags']:#x} without READ_ONLY")
    if wrong:
        return FAIL, "; ".join(wrong)
    if not said:
        return NA, _NO_READ_ONLY
    return PASS, f"READ_ONLY set ({', '.join(label for label, _ in said)})"


def read_only_legacy_refused(s: Subject):
    said, unflagged = _read_only_tensors(s)
    checked = said + [(label, tensor) for label, tensor, _ in unflagged]
    if not checked:
        return NA, _NO_READ_ONLY
    wrong = []
    for label, tensor in checked:
        _, error = call(tensor.__dlpack__)
        outcome, detail = expect_raised(
            error, BufferError, "a legacy capsule was made for read-only data"
        )
        if outcome == FAIL:
            wrong.append(f"{label}: {detail}")
    if wrong:
        return FAIL, "; ".join(wrong)
    return PASS, f"BufferError ({', '.join(label for label, _ in checked)})"


def copy_flag(s: Subject):
    original = s.plain_data()
    capsule, error = call(s.tensor.__dlpack__, max_version=(1, 3), copy=True)
    if error is not None:
        return FAIL, f"copy=True: {describe_error(error)}"
    info = read_capsule(capsule)
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
    capsule, error = call(s.tensor.__dlpack__, max_version=(1, 3), copy=False)
    if error is not None:
        return FAIL, f"copy=False: {describe_error(error)}"
    info = read_capsule(capsule)
    if (info["data"] or 0) + info["byte_offset"] != original:
        return FAIL, "copy=False gave other memory"
    return PASS, "shared"


def zero_size(s: Subject):
    tensors = []
    if s.known_values:
        empty, error = call(s.framework.make, np.zeros((0, 3), dtype=np.float32))
        if error is not None:
            return NA, f"the framework cannot make a (0, 3) tensor: {describe_error(error)}"
        tensors.append(("a (0, 3) tensor", s.framework.exporter(empty)))
    empty_kinds = s.framework.catalogue(lambda k: k.expected is not None and k.expected.size == 0)
    tensors += [(f"kind {kind.name}", s.framework.exporter(kind.make())) for kind in empty_kinds]
    if not tensors:
        return NA, (
            "a user's factory makes one tensor only (a framework description's catalogue may "
            "give a kind without elements)"
        )
    seen = []
    for label, tensor in tensors:
        capsule, error = call(tensor.__dlpack__, max_version=(1, 3))
        if error is not None:
            return FAIL, f"export of {label}: {describe_error(error)}"
        info = read_capsule(capsule)
        if not info["data"] and info["byte_offset"] != 0:
            return FAIL, f"{label}: NULL data with byte_offset {info['byte_offset']}"
        _, error = call(read_values, capsule)
        if error is not None:
            return FAIL, f"{label}: dlbridge refuses the capsule: {describe_error(error)}"
        data = "NULL data" if not info["data"] else "non-NULL data"
        seen.append(f"{label} ({data}, byte_offset {info['byte_offset']})")
    return PASS, "exports " + "; ".join(seen)


def _device(s: Subject):
    return call(s.tensor.__dlpack_device__)


def device_tuple(s: Subject):
    device, error = _device(s)
    if error is not None:
        return FAIL, f"__dlpack_device__(): {describe_error(error)}"
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
    info = read_capsule(s.tensor.__dlpack__(max_version=(1, 3)))
    reported = (int(device[0]), int(device[1] or 0))
    if info["device"] != reported:
        return FAIL, f"__dlpack_device__ says {reported}, the capsule {info['device']}"
    return PASS, f"{reported}"


def _bad_stream_error(s: Subject):
    return call(s.tensor.__dlpack__, stream=5)


def bad_stream(s: Subject):
    if not on_host(s):
        return NA, "the tensor is not in host memory"
    _, error = _bad_stream_error(s)
    if error is None:
        return FAIL, "stream=5 accepted for CPU data"
    if isinstance(error, TypeError):
        return FAIL, f"raised {describe_error(error)}: consumers read TypeError as an old producer"
    return PASS, f"raised {type(error).__name__}"


def bad_stream_error_type(s: Subject):
    if not on_host(s):
        return NA, "the tensor is not in host memory"
    _, error = _bad_stream_error(s)
    if error is None:
        return NA, "nothing raised (see producer.bad-stream)"
    if isinstance(error, (ValueError, BufferError)):
        return PASS, type(error).__name__
    return FAIL, f"raised {describe_error(error)}"


def unreachable_device(s: Subject):
    if not on_host(s):
        return NA, "the tensor is not in host memory"
    _, error = call(s.tensor.__dlpack__, max_version=(1, 3), dl_device=(2, 0))
    return expect_raised(
        error,
        BufferError,
        "dl_device=(2, 0) (CUDA) accepted for a CPU tensor on a machine checked without a GPU",
    )


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


def no_leak(s: Subject, exchanges: int = EXCHANGES):
    import dlbridge

    tensor = s.tensor
    # A capsule-only framework's adapter is the checker's: the framework's tensor is counted.
    counted = tensor.tensor if isinstance(tensor, CapsuleOnly) else tensor

    def exchange(i):
        if i % 3 == 0:
            # Consumed: imported, or refused by dlbridge's validation (NULL strides in 1.3,
            # say: producer.strides-present's finding), which releases it all the same.
            call(dlbridge.from_dlpack, tensor.__dlpack__(max_version=(1, 3)))
        elif i % 3 == 1:
            tensor.__dlpack__(max_version=(1, 3))  # dropped unconsumed
        elif s.read_only:
            call(tensor.__dlpack__)  # refused (producer.read-only-legacy-refused): no leak either
        else:
            tensor.__dlpack__()

    for i in range(300):
        exchange(i)
    gc.collect()
    references = sys.getrefcount(counted)
    before = _rss()
    for i in range(exchanges):
        exchange(i)
    gc.collect()
    after = _rss()
    grown = sys.getrefcount(counted) - references
    problems = []
    if grown:
        problems.append(f"the tensor's reference count grew by {grown}")
    if before is not None and after - before > 4 << 20:
        problems.append(f"memory grew by {(after - before) >> 10} KiB")
    if problems:
        return FAIL, f"over {exchanges} exchanges: " + "; ".join(problems)
    growth = "" if before is None else f", memory {max(0, after - before) >> 10} KiB"
    return PASS, f"{exchanges} exchanges: reference count flat{growth}"


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
}
