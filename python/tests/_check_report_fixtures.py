"""Reports of `dlbridge check` for the tests of its report forms (test_check_reports.py,
test_check_html.py), built here so that they do not depend on the checker's code.

- `v1_report()`: a report in the first JSON form (no schema_version, hint, cites, family,
  caused_by, verdict; a crash was a "fail" whose detail starts "crash:"), NumPy and dlbridge
  with the details a real run prints (some rules left out);
- `upgrade_v1(report)`: that form upgraded to schema version 2;
- `full_report()`: schema version 2 with every outcome, a failure caused by another, a
  framework whose name is 40 characters long and whose version is unknown, a crashed matrix
  pair, failing, unsupported and unchecked matrix cases, and details full of characters that
  HTML and XML must escape.
"""

from __future__ import annotations

import copy

from dlbridge.check.rules import summarise as summarise_results

#: A framework whose name is 40 characters long (the grid and tables must not break on it).
LONG_NAME = "acme_tensors_experimental_dlpack_adapter"
assert len(LONG_NAME) == 40

#: A detail that markup must escape: tags, ampersands, both quotes, a terminal's colour codes
#: (ESC, a control character XML 1.0 forbids) and a NUL.
HOSTILE = "<script>alert('x')</script> & \"quoted\" \x1b[31mred\x1b[0m \x00 <b>end</b>"

_SPEC = "https://data-apis.org/array-api/latest/API_specification/generated/"
_HEADER = "https://github.com/dmlc/dlpack/blob/main/include/dlpack/dlpack.h"

#: The rules the fixtures use, as a version-1 report lists them: id -> (level, section, text).
_RULES_V1 = {
    "producer.keyword-only": (
        "MUST",
        "protocol 3",
        "__dlpack__ takes its arguments by keyword only (a positional argument is a TypeError)",
    ),
    "producer.versioned-capsule": (
        "SHOULD",
        "protocol 3",
        "max_version of major >= 1 gets a `dltensor_versioned` capsule",
    ),
    "producer.version-fields": (
        "MUST",
        "protocol 1, header",
        "a versioned capsule holds version major 1, and no more than the major asked for",
    ),
    "producer.strides-present": (
        "MUST",
        "protocol 1",
        "from version 1.2, strides are not NULL when ndim > 0",
    ),
    "producer.values": (
        "MUST",
        "protocol 1",
        "the capsule describes the tensor's values (shape, dtype, strides, data)",
    ),
    "producer.bad-stream-error-type": (
        "SHOULD",
        "protocol 3",
        "the error for a stream other than None on CPU data is ValueError or BufferError",
    ),
    "producer.no-leak": (
        "MUST",
        "protocol 5",
        "memory and reference counts stay flat over 10,000 exchanges (consumed and not)",
    ),
    "exchange.capsule": (
        "MUST",
        "protocol 6",
        "__dlpack_c_exchange_api__ is a capsule named dlpack_exchange_api on the type",
    ),
    "exchange.dltensor": (
        "MUST",
        "protocol 6",
        "dltensor_from_py_object_no_sync describes the tensor __dlpack__ exports",
    ),
    "device.stream-values": (
        "MUST",
        "protocol 3",
        "a CUDA tensor's __dlpack__ takes stream=-1, 1, 2 and a stream pointer",
    ),
    "consumer.legacy-capsule": (
        "MUST",
        "protocol 1, 3",
        "a legacy `dltensor` capsule is imported with its values",
    ),
    "consumer.deleter-once": (
        "MUST",
        "protocol 5",
        "the producer's deleter runs exactly once, after the result is released",
    ),
    "consumer.copy-true": (
        "MUST",
        "protocol 3, 7",
        "from_dlpack(x, copy=True) never returns memory shared with x",
    ),
    "consumer.copy-true-refused": (
        "SHOULD",
        "protocol 3, 7",
        "where the producer refuses copy=True, from_dlpack(x, copy=True) copies itself",
    ),
}

#: What schema version 2 adds to a rule: id -> (hint, [(document, section, url)]).
_RULES_V2 = {
    "producer.keyword-only": (
        "declare __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None)",
        [("array API standard", "array.__dlpack__", _SPEC + "array_api.array.__dlpack__.html")],
    ),
    "producer.versioned-capsule": (
        "return a DLManagedTensorVersioned capsule when max_version[0] >= 1",
        [("array API standard", "array.__dlpack__", _SPEC + "array_api.array.__dlpack__.html")],
    ),
    "producer.version-fields": (
        "set version.major = DLPACK_MAJOR_VERSION (1) in the versioned tensor",
        [("dlpack.h", "DLPackVersion", _HEADER)],
    ),
    "producer.bad-stream-error-type": (
        "raise BufferError (or ValueError) for a stream on CPU data, not RuntimeError",
        [("array API standard", "array.__dlpack__", _SPEC + "array_api.array.__dlpack__.html")],
    ),
    "consumer.copy-true-refused": (
        "on BufferError for copy=True, import without copy and copy the result yourself",
        [
            ("array API standard", "from_dlpack", _SPEC + "array_api.from_dlpack.html"),
            ("array API standard", "array.__dlpack__", _SPEC + "array_api.array.__dlpack__.html"),
        ],
    ),
}


def _v1_results(rows: str) -> list:
    """Results from lines "outcome | rule | detail"."""
    results = []
    for line in rows.strip().splitlines():
        outcome, rule, detail = (part.strip() for part in line.split("|", 2))
        results.append({"rule": rule, "outcome": outcome, "detail": detail})
    return results


def _pair(producer, consumer, *, passed=36, failures=None, unsupported=0, unchecked=None, **extra):
    failures = failures or {}
    unchecked = unchecked or {}
    pair = {
        "producer": producer,
        "consumer": consumer,
        "counts": {
            "pass": passed,
            "fail": len(failures),
            "unsupported": unsupported,
            "unchecked": len(unchecked),
        },
        "zero_copy": True,
        "ns": 243.79,
        "failures": failures,
        "unchecked": unchecked,
    }
    pair.update(extra)
    return pair


def v1_report() -> dict:
    """A version-1 report of NumPy and dlbridge, details as a real run prints them."""
    numpy_results = _v1_results(
        """
        pass | producer.keyword-only | TypeError
        pass | producer.versioned-capsule | `dltensor_versioned` capsules
        pass | producer.version-fields | (1, 0)->1.0, (1, 3)->1.0, (2, 0)->1.0
        n/a | producer.strides-present | no capsule of version 1.2 or later
        pass | producer.values | values, shape and dtype as made
        fail | producer.bad-stream-error-type | raised RuntimeError: NumPy: stream=None only.
        pass | producer.no-leak | 10000 exchanges: reference count flat, memory 0 KiB
        n/a | exchange.capsule | the type publishes no __dlpack_c_exchange_api__
        n/a | exchange.dltensor | the type publishes no __dlpack_c_exchange_api__
        n/a | device.stream-values | the checker makes no CUDA tensors of numpy
        pass | consumer.legacy-capsule | legacy capsule: values right
        pass | consumer.deleter-once | 1 tensor(s), each deleter once
        pass | consumer.copy-true | a producer that copies: a copy
        fail | consumer.copy-true-refused | a producer refusing copy=True: propagated BufferError
        """
    )
    dlbridge_results = _v1_results(
        """
        pass | producer.keyword-only | TypeError
        pass | producer.versioned-capsule | `dltensor_versioned` capsules
        pass | producer.version-fields | (1, 0)->1.3, (1, 3)->1.3, (2, 0)->1.3
        pass | producer.strides-present | strides present
        pass | producer.values | values, shape and dtype as made
        pass | producer.bad-stream-error-type | ValueError
        pass | producer.no-leak | 10000 exchanges: reference count flat, memory 0 KiB
        pass | exchange.capsule | a dlpack_exchange_api capsule
        pass | exchange.dltensor | same as __dlpack__
        n/a | device.stream-values | the checker makes no CUDA tensors of dlbridge
        pass | consumer.legacy-capsule | legacy capsule: values right
        pass | consumer.deleter-once | 1 tensor(s), each deleter once
        pass | consumer.copy-true | a producer that copies: a copy
        pass | consumer.copy-true-refused | imported and copied here
        """
    )
    frameworks = {"numpy": numpy_results, "dlbridge": dlbridge_results}
    summary = {}
    for name, results in frameworks.items():
        fails = [r for r in results if r["outcome"] == "fail"]
        summary[name] = {
            "must_failures": sum(_RULES_V1[r["rule"]][0] == "MUST" for r in fails),
            "should_failures": sum(_RULES_V1[r["rule"]][0] == "SHOULD" for r in fails),
            "passed": sum(r["outcome"] == "pass" for r in results),
            "not_applicable": sum(r["outcome"] == "n/a" for r in results),
        }
    return {
        "python": "3.11.7",
        "versions": {"numpy": "2.4.6", "dlbridge": "0.1.0"},
        "rules": {
            rule: {"level": level, "section": section, "text": text}
            for rule, (level, section, text) in _RULES_V1.items()
        },
        "frameworks": frameworks,
        "summary": summary,
        "matrix": [
            _pair("numpy", "numpy"),
            _pair("numpy", "dlbridge", ns=383.78),
            _pair("dlbridge", "numpy", ns=269.57),
            _pair("dlbridge", "dlbridge", ns=424.645),
        ],
    }


def _v2_outcome(result: dict) -> str:
    """A version-1 result's outcome in version 2's words."""
    detail = result["detail"]
    if result["outcome"] == "fail" and detail.startswith("crash:"):
        return "hang" if detail.endswith("(hung)") else "crash"
    if result["outcome"] == "fail" and detail.startswith("not run:"):
        return "error"
    return result["outcome"]


def summarise(results: list, rules: dict) -> dict:
    """One framework's summary in schema version 2 (counts and verdict), the levels read from
    the report's `rules`."""
    return summarise_results(results, lambda rule_id: rules[rule_id]["level"])


def upgrade_v1(report: dict, dlbridge_version: str = "0.1.0") -> dict:
    """A version-1 report in schema version 2 (a new dict; `report` is left alone): the rules
    get their family, hint and citations, crashes, hangs and checks not run their outcomes,
    each summary its new counts and verdict."""
    report = copy.deepcopy(report)
    rules = {}
    for rule_id, rule in report["rules"].items():
        hint, cites = _RULES_V2.get(rule_id, ("", []))
        rules[rule_id] = {
            "level": rule["level"],
            "family": rule_id.split(".")[0],
            "text": rule["text"],
            "section": rule["section"],
            "hint": hint,
            "cites": [{"document": d, "section": s, "url": u} for d, s, u in cites],
        }
    frameworks = {
        name: [{**result, "outcome": _v2_outcome(result)} for result in results]
        for name, results in report["frameworks"].items()
    }
    return {
        "schema_version": 2,
        "dlbridge": dlbridge_version,
        "python": report["python"],
        "platform": "Linux-6.1.0-x86_64-with-glibc2.36",
        "versions": report["versions"],
        "rules": rules,
        "frameworks": frameworks,
        "summary": {name: summarise(results, rules) for name, results in frameworks.items()},
        "matrix": report["matrix"],
    }


def full_report() -> dict:
    """Schema version 2 with every outcome kind, a caused_by, a 40-character framework name
    without a version, a crashed matrix pair, and failing, unsupported and unchecked cases."""
    report = upgrade_v1(v1_report())
    report["frameworks"][LONG_NAME] = [
        {"rule": "producer.keyword-only", "outcome": "pass", "detail": "TypeError"},
        {
            "rule": "producer.version-fields",
            "outcome": "fail",
            "detail": "(1, 0)->2.0: a major version 2 tensor for a consumer that asked for 1",
        },
        {
            "rule": "producer.values",
            "outcome": "fail",
            "detail": "the capsule's version is unreadable, so are its values",
            "caused_by": "producer.version-fields",
        },
        {
            "rule": "producer.versioned-capsule",
            "outcome": "fail",
            "detail": "legacy `dltensor` capsules for max_version=(1, 3)",
        },
        {"rule": "producer.strides-present", "outcome": "n/a", "detail": "no capsule of 1.2"},
        {
            "rule": "producer.bad-stream-error-type",
            "outcome": "fail",
            "detail": HOSTILE,
        },
        {
            "rule": "producer.no-leak",
            "outcome": "crash",
            "detail": "crash: the process died (signal 11)",
        },
        {
            "rule": "exchange.capsule",
            "outcome": "error",
            "detail": "the check raised AttributeError: 'NoneType' object has no attribute 'x'",
        },
        {"rule": "exchange.dltensor", "outcome": "n/a", "detail": "no exchange table"},
        {"rule": "device.stream-values", "outcome": "n/a", "detail": "no CUDA tensors"},
        {
            "rule": "consumer.deleter-once",
            "outcome": "hang",
            "detail": "hang: no answer within 120 s (hung)",
        },
        {
            "rule": "consumer.legacy-capsule",
            "outcome": "error",
            "detail": "not run: the process died (signal 11) before this check",
        },
    ]
    report["summary"][LONG_NAME] = summarise(report["frameworks"][LONG_NAME], report["rules"])
    report["matrix"] += [
        _pair(
            "numpy",
            LONG_NAME,
            passed=30,
            failures={
                "float64/contiguous": "values differ: got [0.0, 1.875, 2.0] for [0.0, 1.0, 2.0]",
                "int8/transposed": "shape (4, 3) for (3, 4) <& 'wrong'>",
            },
            unsupported=4,
            zero_copy=False,
            ns=1843.2,
        ),
        {"producer": LONG_NAME, "consumer": "numpy", "error": "crash: the process died (signal 6)"},
        _pair(
            LONG_NAME,
            "dlbridge",
            passed=30,
            unchecked={f"bfloat16/case{i}": "not host memory" for i in range(6)},
            zero_copy=None,
            ns=None,
        ),
        _pair(LONG_NAME, LONG_NAME, passed=0, failures={"factory-tensor": "values differ"}),
        _pair("dlbridge", LONG_NAME, passed=32, unsupported=4, note="ran alone after a crash"),
    ]
    return report


def with_rule_outcome(report: dict, framework: str, rule: str, outcome: str, detail=None):
    """A copy of `report` where one rule's result has another outcome (and detail)."""
    report = copy.deepcopy(report)
    for result in report["frameworks"][framework]:
        if result["rule"] == rule:
            result["outcome"] = outcome
            if detail is not None:
                result["detail"] = detail
    return report
