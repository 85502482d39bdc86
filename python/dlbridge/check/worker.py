"""The subprocess side of `dlbridge check`: runs one job and streams JSON lines.

`python -m dlbridge.check.worker JOB` where JOB is JSON:
- `{"kind": "framework", "name": N, "skip": [rule ids]}`: the producer checks, the device
  checks (on a CUDA tensor of N, n/a without one), then the consumer checks, of framework N
  (the consumer checks that import other frameworks first of all, before N is imported);
- `{"kind": "matrix", "pairs": [[producer, consumer], ...]}`: those interop pairs;
- `{"kind": "preflight", "name": N}`: whether a user's framework N (a `module:factory` or a
  description) can be checked at all: its result is `{"usable": True, "name", "consumer",
  "version"}` or `{"usable": False, "why"}`.

Before each unit of work it prints `{"running": ...}` and after it `{"result": ...}`, flushed,
so that the parent knows which check a crash or a hang happened in and can start a new worker
for what is left.
"""

from __future__ import annotations

import json
import sys
import traceback

from .rules import ERROR, NA


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
            outcome, detail = (
                NA,
                (
                    "a module:factory has no from_dlpack (describe the framework to check its "
                    "consumer: docs/check-frameworks.md)"
                ),
            )
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
        without_subject=ERROR,
    )
    _rules_on_one_subject(
        device_checks.CHECKS,
        lambda: _cuda_subject(framework),
        skip,
        rules_not_applicable,
        without_subject=NA,
    )
    for rule_id in consumer_checks.CHECKS:
        if rule_id not in skip and rule_id not in first:
            consumer_rule(rule_id)


def _rules_on_one_subject(
    checks: dict, make_subject, skip: set, rules_not_applicable, *, without_subject: str
) -> None:
    """Runs `checks` (rule id -> check of a subject) but those in `skip`, on one subject made
    for the first of them: `make_subject()` gives (subject, None), or (None, why) where none
    can be made, and then every rule's outcome is `without_subject` (ERROR where the subject
    should exist: a framework whose tensor cannot be made is no pass; NA for a CUDA tensor on
    a machine without one) with why."""
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
            outcome, detail = without_subject, why_none
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
    """`check(argument)`, or (ERROR, what broke) where the check raised: the check could not
    judge the rule, which is no verdict on the framework either way."""
    try:
        return check(argument)
    except Exception as error:  # noqa: BLE001 - a check that breaks is reported, not fatal
        where = traceback.extract_tb(error.__traceback__)[-1]
        return ERROR, (
            f"the check could not complete: {type(error).__name__}: {error} "
            f"({where.name}:{where.lineno})"
        )[:300]


def _preflight_job(name: str) -> None:
    """Whether a user's framework can be checked at all: it resolves, makes a tensor, and the
    tensor (or its capsule-only adapter) has a `__dlpack__`. A factory that cannot be imported
    or called, or that returns something else, must stop the run: checked rule by rule it
    would be all n/a, a green result for nothing."""
    from .frameworks import resolve
    from .frameworks.base import FactoryError
    from .probes import BASE

    _emit({"running": "preflight"})
    try:
        framework = resolve(name)
    except ValueError as error:
        _emit({"result": {"usable": False, "why": str(error)}})
        return
    made_by = f"{name}()" if framework.user_factory else f"{name}: make(array)"
    try:
        made = framework.make(None if framework.user_factory else BASE)
        tensor = framework.exporter(made)
    except FactoryError as error:
        _emit({"result": {"usable": False, "why": str(error)}})
        return
    except Exception as error:  # noqa: BLE001 - whatever the factory raises is the reason
        _emit({"result": {"usable": False, "why": f"{made_by} raised {_one_line(error)}"}})
        return
    if not callable(getattr(tensor, "__dlpack__", None)):
        _emit(
            {
                "result": {
                    "usable": False,
                    "why": f"{made_by} returned a {type(made).__module__}."
                    f"{type(made).__qualname__}, which has no __dlpack__ method (return a "
                    "tensor, or a dlbridge.check.CapsuleOnly for a framework without "
                    "__dlpack__)",
                }
            }
        )
        return
    consumer = not framework.user_factory or _guarded_bool(framework.has_consumer)
    _emit(
        {
            "result": {
                "usable": True,
                "name": framework.name,
                "consumer": consumer,
                "version": _version(framework),
            }
        }
    )


def _one_line(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}".splitlines()[0][:300]


def _version(framework) -> str | None:
    """The framework's version: what it says (`VERSION`, `version()`), else its
    distribution's, else its module's `__version__`."""
    from importlib import metadata

    if framework.version is not None:
        try:
            return str(framework.version())
        except Exception:  # noqa: BLE001 - an unknown version is reported as such
            return None
    top = framework.module.split(".")[0]
    for distribution in dict.fromkeys([framework.distribution or top, top]):
        try:
            return metadata.version(distribution)
        except (metadata.PackageNotFoundError, ValueError):  # noqa: PERF203 - two names at most
            continue
    module = sys.modules.get(top)
    version = getattr(module, "__version__", None)
    return str(version) if version is not None else None


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
        # The names as given (the parent's key): a description's own NAME may differ.
        result["spec"] = [producer, consumer]
        _emit({"result": result})


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    job = json.loads(argv[0])
    if job["kind"] == "framework":
        _framework_job(job["name"], set(job.get("skip", [])))
    elif job["kind"] == "matrix":
        _matrix_job(job["pairs"])
    elif job["kind"] == "preflight":
        _preflight_job(job["name"])
    else:
        raise SystemExit(f"unknown job kind {job['kind']!r}")
    _emit({"done": True})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
