"""The subprocess side of `dlbridge check`: runs one job and streams JSON lines.

`python -m dlbridge.check.worker JOB` where JOB is JSON:
- `{"kind": "framework", "name": N, "skip": [rule ids]}`: the producer checks, the device
  checks (on a CUDA tensor of N, n/a without one), then the consumer checks, of framework N
  (the consumer checks that import other frameworks first of all, before N is imported);
- `{"kind": "matrix", "pairs": [[producer, consumer], ...]}`: those interop pairs.

Before each unit of work it prints `{"running": ...}` and after it `{"result": ...}`, flushed,
so that the parent knows which check a crash or a hang happened in and can start a new worker
for what is left.
"""

from __future__ import annotations

import json
import sys
import traceback

from .rules import FAIL, NA


def _emit(message: dict) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def _framework_job(name: str, skip: set) -> None:
    from . import consumer_checks, device_checks, exchange_checks, producer_checks
    from .frameworks import resolve

    framework = resolve(name)
    asked: list = []

    def rules_not_applicable() -> dict:
        """The framework's n/a rules, asked once (a factory makes its tensor to tell)."""
        if not asked:
            try:
                asked.append(dict(framework.not_applicable()))
            except Exception:  # noqa: BLE001 - a factory that fails is reported by the checks
                asked.append({})
        return asked[0]

    def consumer_rule(rule_id):
        _emit({"running": rule_id})
        if framework.user_factory and not _guarded_bool(framework.has_consumer):
            outcome, detail = NA, "a user's factory has no from_dlpack"
        elif rule_id in rules_not_applicable():
            outcome, detail = NA, rules_not_applicable()[rule_id]
        else:
            outcome, detail = _guarded(consumer_checks.CHECKS[rule_id], framework)
        _emit({"result": {"rule": rule_id, "outcome": outcome, "detail": detail}})

    # The consumer checks that import other frameworks come first, before the framework
    # checked is imported (PyTorch cannot build all its tensors once TensorFlow is loaded).
    first = [r for r in consumer_checks.IMPORTS_OTHERS if r not in skip]
    for rule_id in first:
        consumer_rule(rule_id)
    # The producer checks and the exchange table's share one Subject; the device checks one
    # CUDA tensor, where the framework can make one.
    _rules_on_one_subject(
        {**producer_checks.CHECKS, **exchange_checks.CHECKS},
        lambda: _producer_subject(framework),
        skip,
        rules_not_applicable,
    )
    _rules_on_one_subject(
        device_checks.CHECKS, lambda: _cuda_subject(framework), skip, rules_not_applicable
    )
    for rule_id in consumer_checks.CHECKS:
        if rule_id not in skip and rule_id not in first:
            consumer_rule(rule_id)


def _rules_on_one_subject(checks: dict, make_subject, skip: set, rules_not_applicable) -> None:
    """Runs `checks` (rule id -> check of a subject) but those in `skip`, on one subject made
    for the first of them: `make_subject()` gives (subject, None), or (None, why) where none
    can be made, and then every rule is n/a with why."""
    made = False
    subject = why_none = None
    for rule_id, check in checks.items():
        if rule_id in skip:
            continue
        _emit({"running": rule_id})
        if not made:
            subject, why_none = make_subject()
            made = True
        if why_none is not None:
            outcome, detail = NA, why_none
        elif rule_id in rules_not_applicable():
            outcome, detail = NA, rules_not_applicable()[rule_id]
        else:
            outcome, detail = _guarded(check, subject)
        _emit({"result": {"rule": rule_id, "outcome": outcome, "detail": detail}})


def _producer_subject(framework):
    """The framework's tensors for the producer and exchange-table checks, or why not."""
    from .probes import Subject

    try:
        return Subject(framework), None
    except Exception as error:  # noqa: BLE001
        return None, f"cannot make a tensor: {type(error).__name__}: {error}"


def _cuda_subject(framework):
    """The framework's CUDA tensor for the device checks, or why not."""
    from . import device_checks

    try:
        return device_checks.cuda_subject(framework), None
    except device_checks.NoCudaTensor as error:
        return None, str(error)
    except Exception as error:  # noqa: BLE001 - a user's factory, a broken build
        return None, f"cannot make a CUDA tensor: {type(error).__name__}: {error}"


def _guarded_bool(question) -> bool:
    """`question()`, False where it raises (a factory that cannot make its tensor)."""
    try:
        return bool(question())
    except Exception:  # noqa: BLE001
        return False


def _guarded(check, argument):
    try:
        return check(argument)
    except Exception as error:  # noqa: BLE001 - a check that breaks is reported, not fatal
        where = traceback.extract_tb(error.__traceback__)[-1]
        return FAIL, (
            f"the check could not complete: {type(error).__name__}: {error} "
            f"({where.name}:{where.lineno})"
        )[:300]


def _matrix_job(pairs: list) -> None:
    from .frameworks import resolve
    from .matrix import run_pair

    for producer, consumer in pairs:
        _emit({"running": [producer, consumer]})
        try:
            result = run_pair(resolve(producer), resolve(consumer))
        except Exception as error:  # noqa: BLE001
            result = {
                "producer": producer,
                "consumer": consumer,
                "error": f"{type(error).__name__}: {error}"[:300],
            }
        _emit({"result": result})


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    if job["kind"] == "framework":
        _framework_job(job["name"], set(job.get("skip", [])))
    elif job["kind"] == "matrix":
        _matrix_job(job["pairs"])
    else:
        raise SystemExit(f"unknown job kind {job['kind']!r}")
    _emit({"done": True})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
