"""`dlbridge check`: every rule is reported broken by a producer or consumer written to break
it, dlbridge itself passes every rule, and a crashing or hanging framework is reported as
such without ending the run."""

from __future__ import annotations

import ctypes
import json
import os
import pathlib
import subprocess
import sys

import numpy as np
import pytest

import _check_subjects as S
import dlbridge
from _frameworks import import_framework
from dlbridge.check import (
    CapsuleOnly,
    cli,
    consumer_checks,
    device_checks,
    exchange_checks,
    producer_checks,
)
from dlbridge.check.abi import (
    CURRENT_WORK_STREAM,
    FLAG_READ_ONLY,
    NAME_EXCHANGE_API,
    NAME_LEGACY,
    NAME_VERSIONED,
    DLManagedTensorVersioned,
    DLPackExchangeAPI,
)
from dlbridge.check.capi import PyCapsule_GetPointer, PyCapsule_New, static_name
from dlbridge.check.capsule_only import NO_COPY_ROUTE, NO_DEVICE_FUNCTION, NOT_APPLICABLE
from dlbridge.check.capsules import (
    capsule_name,
    capsule_table,
    consume_capsule,
    read_capsule,
    release,
    table_member,
)
from dlbridge.check.cli import check_framework, run_matrix
from dlbridge.check.frameworks import FRAMEWORKS, Framework, capsule_only_framework, custom
from dlbridge.check.matrix import run_pair
from dlbridge.check.probes import usable_table_of
from dlbridge.check.records import ManagedRecord, make_from_numpy
from dlbridge.check.rules import FINDINGS, RULES

TESTS = pathlib.Path(__file__).resolve().parent


def _producer_framework(cls) -> Framework:
    return Framework(
        cls.__name__,
        "_check_subjects",
        make=cls,
        consume=dlbridge.from_dlpack,
        to_numpy=np.from_dlpack,
        make_read_only=lambda a: cls(a, read_only=True),
    )


BROKEN_PRODUCERS = [
    ("producer.keyword-only", S.PositionalArguments),
    ("producer.accepts-keywords", S.MissingKeywords),
    ("producer.legacy-without-max-version", S.AlwaysVersioned),
    ("producer.versioned-capsule", S.AlwaysLegacy),
    ("producer.version-fields", S.VersionTwo),
    ("producer.strides-present", S.NullStridesIn13),
    ("producer.values", S.WrongValues),
    ("producer.read-only-flag", S.ReadOnlyUnflagged),
    ("producer.read-only-legacy-refused", S.ReadOnlyUnflagged),
    ("producer.copy-flag", S.CopyIgnored),
    ("producer.no-copy-shares", S.CopyFalseCopies),
    ("producer.zero-size", S.ZeroSizeRefused),
    ("producer.device-tuple", S.DeviceList),
    ("producer.device-id-int", S.DeviceIdNone),
    ("producer.device-matches-capsule", S.DeviceMismatch),
    ("producer.bad-stream", S.StreamIgnored),
    ("producer.bad-stream", S.StreamTypeError),
    ("producer.bad-stream-error-type", S.StreamRuntimeError),
    ("producer.unreachable-device", S.DeviceIgnored),
    ("producer.consumed-once", S.SameCapsule),
    ("producer.no-leak", S.Leaky),
]


@pytest.mark.parametrize(
    ("rule", "cls"), BROKEN_PRODUCERS, ids=[f"{r}-{c.__name__}" for r, c in BROKEN_PRODUCERS]
)
def test_a_producer_breaking_a_rule_is_reported(rule, cls):
    subject = producer_checks.Subject(_producer_framework(cls))
    outcome, detail = producer_checks.CHECKS[rule](subject)
    assert outcome == "fail", f"{cls.__name__} passed {rule}: {detail}"
    # The same rule holds for the well-behaved producer.
    good = producer_checks.Subject(_producer_framework(S.Good))
    assert producer_checks.CHECKS[rule](good)[0] in ("pass", "n/a")


def test_every_producer_rule_testable_on_the_cpu_has_a_breaking_producer():
    covered = {rule for rule, _ in BROKEN_PRODUCERS}
    untestable_here = {
        "producer.copy-false-needs-copy",  # no CPU tensor needs a copy to reach the CPU
    }
    expected = set(producer_checks.CHECKS)
    assert expected - covered == untestable_here


# ---- the C exchange table -------------------------------------------------------------------


def _table_class(table_or_capsule):
    """A Good producer whose type publishes `table_or_capsule` as its exchange API."""
    capsule = table_or_capsule
    if isinstance(table_or_capsule, DLPackExchangeAPI):
        _TABLES.append(table_or_capsule)
        capsule = _capsule(ctypes.addressof(table_or_capsule), NAME_EXCHANGE_API)
    return type("Published", (S.Good,), {"__dlpack_c_exchange_api__": capsule})


_TABLES: list = []


def _capsule(address, name: bytes):
    return PyCapsule_New(address, static_name(name), None)


def _dlbridge_table() -> DLPackExchangeAPI:
    return capsule_table(dlbridge.Tensor.__dlpack_c_exchange_api__)


def _copy_of_dlbridge_table() -> DLPackExchangeAPI:
    copy = DLPackExchangeAPI()
    ctypes.memmove(ctypes.addressof(copy), ctypes.addressof(_dlbridge_table()), ctypes.sizeof(copy))
    return copy


def _exchange_outcome(rule, cls):
    return exchange_checks.CHECKS[rule](producer_checks.Subject(_producer_framework(cls)))


def test_exchange_rules_pass_for_dlbridge_tensors():
    subject = producer_checks.Subject(FRAMEWORKS["dlbridge"])
    for rule, check in exchange_checks.CHECKS.items():
        if rule == "exchange.refusal-error-type":  # no catalogued dlbridge tensor is refused
            assert check(subject)[0] == "n/a", check(subject)
        else:
            assert check(subject)[0] == "pass", (rule, check(subject))
    _, detail = exchange_checks.CHECKS["exchange.agrees-with-dlpack"](subject)
    assert "catalogued kinds" in detail, detail  # every kind, not only the checker's tensor


def test_exchange_capsule_of_another_name_is_reported():
    cls = _table_class(_capsule(ctypes.addressof(_dlbridge_table()), b"not_the_table"))
    assert _exchange_outcome("exchange.capsule", cls)[0] == "fail"


def test_exchange_table_of_major_2_without_prev_api_is_reported():
    table = _copy_of_dlbridge_table()
    table.header.version.major = 2
    assert _exchange_outcome("exchange.version", _table_class(table))[0] == "fail"


def test_exchange_table_with_a_null_member_is_reported():
    table = _copy_of_dlbridge_table()
    table.managed_tensor_allocator = None
    assert _exchange_outcome("exchange.members", _table_class(table))[0] == "fail"


def test_exchange_functions_that_misbehave_are_reported():
    # The table of a Python producer class calling dlbridge's functions would hand them an
    # object of the wrong type: each is refused with a Python error, and each is reported.
    cls = _table_class(_copy_of_dlbridge_table())
    for rule in ("exchange.from-py-object", "exchange.dltensor", "exchange.to-py-object"):
        assert _exchange_outcome(rule, cls)[0] == "fail", rule


@CURRENT_WORK_STREAM
def _stream_seven(device_type, device_id, out):
    out[0] = 7
    return 0


def test_exchange_work_stream_for_the_cpu_must_be_null():
    table = _copy_of_dlbridge_table()
    table.current_work_stream = ctypes.cast(_stream_seven, ctypes.c_void_p).value
    assert _exchange_outcome("exchange.work-stream", _table_class(table))[0] == "fail"


def test_exchange_allocator_that_fails_is_reported():
    assert _exchange_outcome("exchange.allocator", S.TableAllocatorFails)[0] == "fail"


# Tables agreeing, or not, with their type's own __dlpack__ (the catalogue knows the named
# frameworks only: for these the one tensor the checker makes is compared).
BROKEN_TABLES = [
    ("exchange.agrees-with-dlpack", S.TableExportsRefused, "exported 1 kind __dlpack__ refuses"),
    ("exchange.agrees-with-dlpack", S.TableDropsReadOnly, "READ_ONLY False vs True"),
    (
        "exchange.refusal-error-type",
        S.TableRaisesTypeError,
        "raised TypeError where __dlpack__ raises BufferError",
    ),
]
GOOD_TABLES = [
    ("exchange.agrees-with-dlpack", S.TableAgrees),
    ("exchange.agrees-with-dlpack", S.TableRaisesTypeError),  # both refuse: they agree
    ("exchange.refusal-error-type", S.TableRefusesAlike),
]


@pytest.mark.parametrize(
    ("rule", "cls", "seen"), BROKEN_TABLES, ids=[f"{r}-{c.__name__}" for r, c, _ in BROKEN_TABLES]
)
def test_a_table_disagreeing_with_dlpack_is_reported(rule, cls, seen):
    outcome, detail = _exchange_outcome(rule, cls)
    assert outcome == "fail", f"{cls.__name__} passed {rule}: {detail}"
    assert seen in detail, detail


@pytest.mark.parametrize(
    ("rule", "cls"), GOOD_TABLES, ids=[f"{r}-{c.__name__}" for r, c in GOOD_TABLES]
)
def test_a_table_agreeing_with_dlpack_passes(rule, cls):
    outcome, detail = _exchange_outcome(rule, cls)
    assert outcome == "pass", f"{cls.__name__} did not pass {rule}: {detail}"


def test_the_table_export_is_released_exactly_once():
    before = len(S._KEEP)
    assert _exchange_outcome("exchange.agrees-with-dlpack", S.TableAgrees)[0] == "pass"
    exported = [
        r
        for r in S._KEEP[before:]
        if isinstance(r, ManagedRecord) and r.struct.flags & FLAG_READ_ONLY
    ]
    assert exported and all(r.deleter_calls == 1 for r in exported)


def test_every_exchange_rule_has_a_breaking_table():
    covered = {rule for rule, _, _ in BROKEN_TABLES} | {
        "exchange.capsule",
        "exchange.version",
        "exchange.members",
        "exchange.from-py-object",
        "exchange.dltensor",
        "exchange.to-py-object",
        "exchange.allocator",
        "exchange.work-stream",
    }
    assert covered == set(exchange_checks.CHECKS)


# ---- consumers ------------------------------------------------------------------------------


def naive_consumer(
    *,
    ignore_byte_offset=False,
    strict_strides=False,
    null_strides_error=False,
    negative_error=False,
    null_data_error=False,
    writable_view=False,
    accept_major2=False,
    no_retry=False,
    delete_count=1,
    refuse_legacy=False,
    legacy_share=None,
):
    """A from_dlpack written with ctypes, with one bug switched on (float32 only).

    `legacy_share` hands a legacy capsule out as a view of the producer's memory (never
    released): "writable" (the bug), "read-only", or "re-export writable" (read-only, but its
    __dlpack__ re-exports the memory without READ_ONLY)."""

    def consume(obj):
        try:
            capsule = obj.__dlpack__(max_version=(1, 3))
        except TypeError:
            if no_retry:
                raise
            capsule = obj.__dlpack__()
        name = capsule_name(capsule)
        if name == NAME_LEGACY and refuse_legacy:
            raise BufferError("legacy capsules are not supported")
        if name == NAME_VERSIONED:
            pointer = PyCapsule_GetPointer(capsule, name)
            major = DLManagedTensorVersioned.from_address(pointer).version.major
            if major != 1:
                if not accept_major2:
                    raise BufferError(f"major version {major}")
                consume_capsule(capsule)
                return np.zeros(0, np.float32)  # "imported" (without reading anything)
        info = read_capsule(capsule)
        shape = info["shape"] or ()
        strides = info["strides"]
        if strides is None:
            if null_strides_error:
                raise ValueError("NULL strides")
            strides = tuple(int(np.prod(shape[i + 1 :])) for i in range(len(shape)))
        if strict_strides and strides != tuple(
            int(np.prod(shape[i + 1 :])) for i in range(len(shape))
        ):
            raise ValueError(f"strides {strides} are not row-major")
        if any(s < 0 for s in strides) and negative_error:
            raise ValueError("negative strides")
        if not info["data"] and null_data_error:
            raise ValueError("NULL data")
        pointer, deleter, _ = consume_capsule(capsule)
        first = (info["data"] or 0) + (0 if ignore_byte_offset else info["byte_offset"])
        if 0 in shape:
            result = np.zeros(shape, np.float32)
        else:
            low = sum((e - 1) * s for e, s in zip(shape, strides) if s < 0)
            high = sum((e - 1) * s for e, s in zip(shape, strides) if s > 0)
            buffer = (ctypes.c_float * (high - low + 1)).from_address(first + 4 * low)
            view = np.lib.stride_tricks.as_strided(
                np.frombuffer(buffer, np.float32)[-low:], shape, tuple(4 * s for s in strides)
            )
            if writable_view:
                return view  # shares the producer's memory, writable, never released
            if legacy_share and name == NAME_LEGACY:
                if legacy_share != "writable":
                    view.flags.writeable = False
                if legacy_share == "re-export writable":
                    return view.view(WritableReExport)
                return view
            result = np.array(view, copy=True)
        for _ in range(delete_count):
            release(pointer, deleter)
        return result

    return consume


class WritableReExport(np.ndarray):
    """A read-only array whose __dlpack__ re-exports its memory without READ_ONLY."""

    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        versioned = max_version is not None and max_version[0] >= 1
        return make_from_numpy(np.asarray(self), versioned=versioned).capsule()


class CopyAsked:
    """Forwards every `__dlpack__` call to `producer` with copy=True added."""

    def __init__(self, producer):
        self.producer = producer

    def __dlpack_device__(self):
        return self.producer.__dlpack_device__()

    def __dlpack__(self, **kwargs):
        return self.producer.__dlpack__(copy=True, **kwargs)


def naive_copy_consumer(kind: str):
    """`from_dlpack(x, copy=True)` written on `naive_consumer`: "share" ignores copy and
    hands out a view of the producer's memory (the bug the MUST catches), "propagate" passes
    copy=True on and lets the producer's refusal through (what the SHOULD reports), "good"
    asks for a copy and, refused or unable to ask, imports without and copies."""
    if kind == "share":
        return naive_consumer(writable_view=True)

    def propagate(obj):
        return naive_consumer()(CopyAsked(obj))  # naive_consumer copies whatever it reads

    def good(obj):
        try:
            return propagate(obj)
        except (BufferError, TypeError):
            return naive_consumer()(obj)

    return {"propagate": propagate, "good": good}[kind]


def _consumer_framework(copy=None, **bug) -> Framework:
    return Framework(
        "naive",
        "numpy",
        make=np.array,
        consume=naive_consumer(**bug),
        to_numpy=np.asarray,
        read_only=lambda r: not r.flags.writeable,
        consume_copy=None if copy is None else naive_copy_consumer(copy),
    )


BROKEN_CONSUMERS = [
    ("consumer.legacy-capsule", {"refuse_legacy": True}),
    ("consumer.deleter-once", {"delete_count": 0}),
    ("consumer.deleter-once", {"delete_count": 2}),
    ("consumer.null-strides", {"null_strides_error": True}),
    ("consumer.extent-one-strides", {"strict_strides": True}),
    ("consumer.negative-strides", {"negative_error": True}),
    ("consumer.zero-size-null-data", {"null_data_error": True}),
    ("consumer.byte-offset", {"ignore_byte_offset": True}),
    ("consumer.read-only", {"writable_view": True}),
    ("consumer.major-version-2", {"accept_major2": True}),
    ("consumer.old-producer", {"no_retry": True}),
    ("consumer.legacy-read-only", {"legacy_share": "writable"}),
    ("consumer.legacy-re-export", {"legacy_share": "writable"}),
    ("consumer.legacy-re-export", {"legacy_share": "re-export writable"}),
    ("consumer.copy-true", {"copy": "share"}),
    ("consumer.copy-true-refused", {"copy": "propagate"}),
]
#: The consumer that passes where the bug-free one has nothing to say (it copies).
GOOD_CONSUMERS = {
    "consumer.legacy-read-only": {"legacy_share": "read-only"},
    "consumer.legacy-re-export": {"legacy_share": "read-only"},
    "consumer.copy-true": {"copy": "good"},
    "consumer.copy-true-refused": {"copy": "good"},
}


@pytest.mark.parametrize(
    ("rule", "bug"),
    BROKEN_CONSUMERS,
    ids=[f"{r}-{'-'.join(map(str, next(iter(b.items()))))}" for r, b in BROKEN_CONSUMERS],
)
def test_a_consumer_breaking_a_rule_is_reported(rule, bug):
    outcome, detail = consumer_checks.CHECKS[rule](_consumer_framework(**bug))
    assert outcome == "fail", f"{bug} passed {rule}: {detail}"
    good = _consumer_framework(**GOOD_CONSUMERS.get(rule, {}))
    assert consumer_checks.CHECKS[rule](good)[0] == "pass", rule


def test_copy_true_refused_by_the_producer_may_be_propagated_but_never_shared():
    propagating = _consumer_framework(copy="propagate")
    outcome, detail = consumer_checks.copy_true(propagating)
    assert outcome == "pass", detail
    assert "a producer refusing copy=True: propagated BufferError" in detail, detail
    sharing = _consumer_framework(copy="share")
    outcome, detail = consumer_checks.copy_true(sharing)
    assert outcome == "fail", detail
    assert "a producer refusing copy=True: the result shares the producer's memory" in detail
    # A from_dlpack without a copy parameter: the rules do not apply (not a pass).
    without = _consumer_framework()
    for check in (consumer_checks.copy_true, consumer_checks.copy_true_refused):
        assert check(without) == ("n/a", "its from_dlpack has no copy parameter")


def test_dlbridge_copies_where_the_producer_cannot():
    ours = FRAMEWORKS["dlbridge"]
    assert consumer_checks.copy_true(ours)[0] == "pass"
    outcome, detail = consumer_checks.copy_true_refused(ours)
    assert outcome == "pass", detail
    # Asked with copy=True, refused, asked again without.
    assert "[{'max_version': (1, 3), 'copy': True}, {'max_version': (1, 3)}]" in detail, detail


def test_legacy_capsules_copied_pass_and_dlbridge_imports_them_read_only():
    copying = _consumer_framework()
    assert consumer_checks.legacy_read_only(copying) == ("pass", "a copy")
    assert consumer_checks.legacy_re_export(copying) == ("n/a", "the result is a copy")
    ours = FRAMEWORKS["dlbridge"]
    assert consumer_checks.legacy_read_only(ours) == ("pass", "read-only result")
    outcome, detail = consumer_checks.legacy_re_export(ours)
    assert outcome == "pass" and "READ_ONLY" in detail, detail


def blind_table_consumer(obj):
    """A from_dlpack that takes the type's exchange table whenever there is one, as tvm-ffi
    does PyTorch's, without asking __dlpack__: the export is copied into NumPy bytes."""
    table = usable_table_of(type(obj))[0]
    if table is None:
        return np.from_dlpack(obj)
    out = ctypes.POINTER(DLManagedTensorVersioned)()
    table_member(table, "managed_tensor_from_py_object_no_sync")(id(obj), ctypes.byref(out))
    exported = exchange_checks._read_export(out)  # released once
    return np.frombuffer(exported.elements or b"", np.uint8).copy()


def test_a_consumer_taking_the_table_blindly_is_reported():
    import_framework("torch", "torch")
    blind = Framework(
        "blind", "numpy", make=np.array, consume=blind_table_consumer, to_numpy=np.asarray
    )
    outcome, detail = consumer_checks.producer_refusals(blind)
    assert outcome == "fail", detail
    assert "torch tensors __dlpack__ refuses: requires_grad_leaf" in detail, detail
    outcome, detail = consumer_checks.producer_refusal_error_type(blind)
    assert outcome == "fail", detail
    assert "torch: raised RuntimeError where __dlpack__ raises BufferError" in detail, detail


def test_dlbridge_refuses_what_producers_refuse():
    import_framework("torch", "torch")
    ours = FRAMEWORKS["dlbridge"]
    outcome, detail = consumer_checks.producer_refusals(ours)
    assert outcome == "pass" and "torch" in detail, detail
    assert consumer_checks.producer_refusal_error_type(ours)[0] == "pass"


def test_the_refusal_rules_never_bring_tensorflow_and_paddle_together():
    tf_like = Framework(
        "tf-like", "tensorflow", make=np.array, consume=np.from_dlpack, to_numpy=np.asarray
    )
    assert consumer_checks._can_import("paddle", tf_like) is not None
    paddle_like = Framework(
        "paddle-like", "paddle", make=np.array, consume=np.from_dlpack, to_numpy=np.asarray
    )
    assert consumer_checks._can_import("tensorflow", paddle_like) is not None


def test_a_consumer_refusing_versioned_capsules_is_reported():
    def legacy_only(obj):
        capsule = obj.__dlpack__(max_version=(1, 3))
        if capsule_name(capsule) != NAME_LEGACY:
            raise BufferError("versioned capsules are not supported")
        return naive_consumer()(obj)

    fw = Framework("legacy-only", "numpy", make=np.array, consume=legacy_only, to_numpy=np.asarray)
    assert consumer_checks.CHECKS["consumer.versioned-capsule"](fw)[0] == "fail"


def test_every_consumer_rule_has_a_breaking_consumer():
    covered = {rule for rule, _ in BROKEN_CONSUMERS} | {
        "consumer.versioned-capsule",  # a test of its own
        # test_a_consumer_taking_the_table_blindly_is_reported:
        "consumer.producer-refusals",
        "consumer.producer-refusal-error-type",
        # test_check_dtype_rule.py: a narrowing consumer, and JAX without jax_enable_x64.
        "consumer.keeps-dtype-and-values",
        # test_check_rules.py: a consumer that never renames the capsule.
        "consumer.renames-capsule",
    }
    assert covered == set(consumer_checks.CHECKS)


def test_every_rule_is_checked_and_every_check_has_a_rule():
    checks = (
        set(producer_checks.CHECKS)
        | set(exchange_checks.CHECKS)
        | set(device_checks.CHECKS)
        | set(consumer_checks.CHECKS)
    )
    assert checks == set(RULES)


# ---- whole runs, in worker processes ----------------------------------------------------------


@pytest.fixture
def subjects_importable(monkeypatch):
    monkeypatch.setenv(
        "PYTHONPATH", os.pathsep.join(filter(None, [str(TESTS), os.environ.get("PYTHONPATH")]))
    )


def test_dlbridge_passes_every_rule():
    results = check_framework("dlbridge", timeout=300)
    assert {r["rule"] for r in results} == set(RULES)
    failures = [r for r in results if r["outcome"] in FINDINGS]
    assert not failures, failures
    not_applicable = {r["rule"]: r["detail"] for r in results if r["outcome"] == "n/a"}
    # No CPU tensor needs a copy; no catalogued dlbridge tensor is refused; dlbridge makes no
    # CUDA tensors of its own, so the device rules say so.
    assert set(not_applicable) == {
        "producer.copy-false-needs-copy",
        "exchange.refusal-error-type",
        *device_checks.CHECKS,
    }
    for rule in device_checks.CHECKS:
        assert "makes no CUDA tensors of dlbridge" in not_applicable[rule], not_applicable[rule]


def test_a_crashing_producer_is_reported_and_the_run_goes_on(subjects_importable):
    results = {r["rule"]: r for r in check_framework("_check_subjects:crashes", timeout=120)}
    crashed = results["producer.bad-stream"]
    assert crashed["outcome"] == "crash" and "crash" in crashed["detail"]
    assert "signal" in crashed["detail"]
    assert results["producer.unreachable-device"]["outcome"] == "pass"  # after the crash
    assert results["producer.no-leak"]["outcome"] == "pass"


#: The silence (seconds) after which the worker running a hanging check is taken as hung, in
#: the test below: only the worker's start (a quarter of a second here) comes before that check.
HANG_SILENCE = 20
#: The silence allowed to a worker with no hanging check left: generous, so that a slow check
#: on a loaded machine is never taken for a hang.
NO_HANG_SILENCE = 600


def test_a_hanging_producer_is_reported_and_the_run_goes_on(subjects_importable, monkeypatch):
    # _check_subjects.Hangs blocks forever (on an event nothing sets) when __dlpack__ is given a
    # stream: in producer.bad-stream and producer.bad-stream-error-type, the first two of the
    # checks run here. Each worker whose checks include one of them gets the short silence
    # limit (so each hang is found HANG_SILENCE s after its worker starts); the worker started
    # after them a generous one, so that the checks that go on cannot be taken for hangs.
    hanging = ["producer.bad-stream", "producer.bad-stream-error-type"]
    producer_order = list(producer_checks.CHECKS)
    only = producer_order[producer_order.index(hanging[0]) :]
    assert only[:2] == hanging
    limits = []
    original = cli._stream

    def stream(job, timeout, on_line):
        assert timeout == NO_HANG_SILENCE  # what check_framework was given
        left = [rule for rule in only if rule not in job["skip"]]
        limits.append((left[0], HANG_SILENCE if set(left) & set(hanging) else NO_HANG_SILENCE))
        return original(job, limits[-1][1], on_line)

    monkeypatch.setattr(cli, "_stream", stream)
    results = check_framework("_check_subjects:hangs", timeout=NO_HANG_SILENCE, only=only)
    by_rule = {r["rule"]: r for r in results}
    assert [r["rule"] for r in results] == only
    # One worker per hang, then one for the rest.
    assert limits == [
        (hanging[0], HANG_SILENCE),
        (hanging[1], HANG_SILENCE),
        ("producer.unreachable-device", NO_HANG_SILENCE),
    ]
    for rule in hanging:
        assert by_rule[rule] == {
            "rule": rule,
            "outcome": "hang",
            "detail": f"hang: no answer within {HANG_SILENCE} s (hung)",
        }
    # The run went on, in a new worker, after the hangs.
    assert by_rule["producer.unreachable-device"]["outcome"] == "pass"
    assert by_rule["producer.consumed-once"]["outcome"] == "pass"
    assert by_rule["producer.no-leak"]["outcome"] == "pass"


def _cli(*args, env=None):
    return subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", *args],
        text=True,
        capture_output=True,
        env=env,
        timeout=600,
        check=False,
    )


def test_cli_json_and_exit_status_for_a_conforming_producer():
    done = _cli("dlbridge", "--no-matrix", "--json", "--quiet")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["summary"]["dlbridge"]["must_failures"] == 0
    assert report["rules"]["producer.copy-flag"]["level"] == "MUST"


def test_cli_exit_status_1_and_markdown_for_a_must_failure(subjects_importable):
    done = _cli(
        "_check_subjects:leaky", "--no-matrix", "--markdown", "--quiet", env=dict(os.environ)
    )
    assert done.returncode == 1, done.stdout + done.stderr
    section = RULES["producer.no-leak"].section
    assert (
        f"| _check_subjects:leaky | `producer.no-leak` ({section}) | MUST | fail |" in done.stdout
    )


def test_cli_refuses_an_unknown_framework():
    done = _cli("no_such_framework")
    assert done.returncode == 2
    assert "unknown framework" in done.stderr


def test_cli_plain_text_has_a_summary_line_and_a_matrix():
    done = _cli("numpy", "dlbridge", "--quiet")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "numpy: 0 MUST failures" in done.stdout
    assert "Interop matrix" in done.stdout
    assert "\x1b[" not in done.stdout  # no colour when not on a terminal


# ---- the interop matrix of a user's factory ---------------------------------------------------


def _corrupting(name: str = "corrupting") -> Framework:
    """A consumer that gets every value wrong (doubled)."""
    return Framework(
        name, "numpy", make=np.array, consume=lambda o: np.from_dlpack(o) * 2, to_numpy=np.asarray
    )


def test_a_factory_matrix_compares_with_the_values_the_producer_holds():
    factory = custom("_check_subjects:other_values")  # values the checker does not make
    for consumer in (FRAMEWORKS["numpy"], FRAMEWORKS["dlbridge"]):
        pair = run_pair(factory, consumer)
        assert pair["counts"] == {"pass": 1, "fail": 0, "unsupported": 0, "unchecked": 0}, pair
        assert pair["failures"] == {} and pair["zero_copy"] is True, pair


def test_a_factory_matrix_still_catches_a_consumer_that_corrupts():
    pair = run_pair(custom("_check_subjects:other_values"), _corrupting())
    assert pair["counts"]["fail"] == 1, pair
    detail = pair["failures"]["factory-tensor"]
    assert "read [14.0, -6.0, 18.0" in detail and "holds [7.0, -3.0, 9.0" in detail, detail


def test_a_factory_matrix_says_when_the_values_cannot_be_read():
    # float4 elements: the checker's reader cannot read them, so nothing is claimed to pass.
    reads_anything = Framework(
        "reads-anything",
        "dlbridge",
        make=np.array,
        consume=dlbridge.from_dlpack,
        to_numpy=lambda result: np.zeros(result.shape, np.uint8),
    )
    pair = run_pair(custom("_check_subjects:sub_byte"), reads_anything)
    assert pair["counts"] == {"pass": 0, "fail": 0, "unsupported": 0, "unchecked": 1}, pair
    detail = pair["unchecked"]["factory-tensor"]
    assert "dtype(17, 4, 1) elements are not whole bytes" in detail, detail


def test_a_factory_matrix_runs_in_workers(subjects_importable):
    pairs = run_matrix(["_check_subjects:other_values", "numpy"], 120, lambda _: None)
    by_pair = {(p["producer"], p["consumer"]): p for p in pairs}
    factory_row = by_pair[("_check_subjects:other_values", "numpy")]
    assert factory_row["counts"]["pass"] == 1 and not factory_row["failures"], factory_row
    assert ("numpy", "_check_subjects:other_values") not in by_pair  # a factory consumes nothing


# ---- capsule-only frameworks (MXNet's kind): the adapter ---------------------------------------


def _boxed_framework() -> Framework:
    """The capsule-only framework of `_check_subjects`, built as the `mxnet` entry is."""
    return capsule_only_framework(
        "boxed",
        "_check_subjects",
        lambda array: S.Boxed(np.array(array, copy=True)),
        to_capsule=S.box_to_capsule,
        from_capsule=S.box_from_capsule,
        to_numpy=lambda box: box.array,
        make_view=S.Boxed,
    )


def test_the_adapter_answers_as_a_legacy_only_producer():
    adapter = S.boxed()
    assert not hasattr(adapter.tensor, "__dlpack__")
    assert adapter.__dlpack_device__() == (1, 0)  # read from a capsule
    for keywords in ({}, {"max_version": (1, 3)}, {"copy": False}, {"dl_device": (1, 0)}):
        assert capsule_name(adapter.__dlpack__(**keywords)) == NAME_LEGACY, keywords
    for keywords in ({"copy": True}, {"dl_device": (2, 0)}, {"stream": 1}):
        with pytest.raises(BufferError):
            adapter.__dlpack__(**keywords)
    with pytest.raises(TypeError, match="to_capsule must be callable"):
        CapsuleOnly(S.Boxed(S.BASE), to_capsule=None)


def test_a_capsule_only_framework_in_the_matrix_both_ways():
    boxed = _boxed_framework()
    for producer, consumer in [
        (boxed, FRAMEWORKS["dlbridge"]),
        (FRAMEWORKS["numpy"], boxed),
        (boxed, boxed),
    ]:
        pair = run_pair(producer, consumer)
        counts = pair["counts"]
        assert counts["fail"] == 0 and counts["pass"] == 36, (producer.name, consumer.name, pair)
    # The consumer is checked: one that corrupts is caught.
    corrupting = capsule_only_framework(
        "boxed-corrupting",
        "_check_subjects",
        S.Boxed,
        to_capsule=S.box_to_capsule,
        from_capsule=S.box_from_capsule_corrupting,
        to_numpy=lambda box: box.array,
    )
    pair = run_pair(FRAMEWORKS["numpy"], corrupting)
    assert pair["counts"]["fail"] > 0 and "float32/contiguous" in pair["failures"], pair


def test_a_capsule_only_framework_against_the_consumer_rules():
    boxed = _boxed_framework()
    assert boxed.not_applicable()["consumer.old-producer"].startswith("capsule-only")
    for rule in ("consumer.legacy-capsule", "consumer.deleter-once", "consumer.byte-offset"):
        assert consumer_checks.CHECKS[rule](boxed)[0] == "pass", rule
    assert consumer_checks.CHECKS["consumer.versioned-capsule"](boxed)[0] == "n/a"


def test_a_capsule_only_factory_is_checked_as_producer_and_consumer(subjects_importable):
    results = {r["rule"]: r for r in check_framework("_check_subjects:boxed", timeout=120)}
    outcomes = {rule: r["outcome"] for rule, r in results.items()}
    assert not [r for r in results.values() if r["outcome"] in FINDINGS], results
    for rule, why in {**NOT_APPLICABLE, **NO_DEVICE_FUNCTION, **NO_COPY_ROUTE}.items():
        assert (outcomes[rule], results[rule]["detail"]) == ("n/a", why), rule
    for rule in (
        "producer.legacy-without-max-version",
        "producer.consumed-once",
        "producer.no-leak",
        "consumer.legacy-capsule",
        "consumer.null-strides",
    ):
        assert outcomes[rule] == "pass", results[rule]
    # Without an import function the factory is a producer only.
    results = {r["rule"]: r for r in check_framework("_check_subjects:boxed_export_only", 120)}
    assert results["consumer.legacy-capsule"]["detail"].startswith(
        "a module:factory has no from_dlpack"
    )
    assert results["producer.values"]["outcome"] == "n/a"
    assert results["producer.legacy-without-max-version"]["outcome"] == "pass"
