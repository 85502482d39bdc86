"""The report forms of `dlbridge check` for machines: the JSON schema (`report_schema.json`),
JUnit XML (`report_junit`) and the comparison with a baseline (`baseline`), on reports built
in `_check_report_fixtures` (schema versions 1 and 2)."""

from __future__ import annotations

import copy
import json
import xml.etree.ElementTree as ET
from importlib import resources

import jsonschema
import pytest

from _check_report_fixtures import (
    HOSTILE,
    LONG_NAME,
    full_report,
    upgrade_v1,
    v1_report,
    with_rule_outcome,
)
from dlbridge.check.baseline import compare, findings, outcome_of
from dlbridge.check.report_junit import render_junit, xml_text

FINDING_OUTCOMES = ("fail", "error", "crash", "hang")

# ---- the JSON schema --------------------------------------------------------------------------


@pytest.fixture(scope="module")
def validator():
    text = resources.files("dlbridge.check").joinpath("report_schema.json").read_text("utf-8")
    schema = json.loads(text)
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def _errors(validator, report) -> list:
    return [error.message for error in validator.iter_errors(report)]


def test_schema_accepts_the_fixtures(validator):
    assert _errors(validator, full_report()) == []
    assert _errors(validator, upgrade_v1(v1_report())) == []


def test_schema_accepts_a_report_compared_with_a_baseline(validator):
    report = full_report()
    base = copy.deepcopy(report)
    base["frameworks"]["numpy"][5]["outcome"] = "pass"  # a regression
    base["frameworks"]["numpy"][0]["outcome"] = "fail"  # fixed
    base["matrix"][5] = {"producer": LONG_NAME, "consumer": "numpy", "error": "crash: x"}
    report = with_rule_outcome(report, LONG_NAME, "producer.versioned-capsule", "crash")
    base["frameworks"][LONG_NAME][3]["outcome"] = "fail"
    compare(report, base)
    report["baseline"]["file"] = "earlier.json"
    assert report["baseline"]["regressions"]
    assert report["baseline"]["fixed"]
    assert _errors(validator, report) == []


def test_schema_accepts_an_empty_run(validator):
    report = full_report()
    report.update(frameworks={}, summary={}, matrix=[], versions={})
    assert _errors(validator, report) == []


@pytest.mark.parametrize(
    ("spoil", "why"),
    [
        (lambda r: r.pop("schema_version"), "no schema_version"),
        (lambda r: r.update(schema_version=1), "another schema version"),
        (lambda r: r["frameworks"]["numpy"][0].update(outcome="FAIL"), "outcome FAIL"),
        (lambda r: r["frameworks"]["numpy"][0].update(outcome="passed"), "outcome passed"),
        (lambda r: r["frameworks"]["numpy"][0].pop("detail"), "a result without detail"),
        (lambda r: r["frameworks"]["numpy"][0].update(extra=1), "a result with an extra key"),
        (lambda r: r["frameworks"]["numpy"][0].update(caused_by=""), "an empty caused_by"),
        (lambda r: r["summary"]["numpy"].pop("verdict"), "a summary without verdict"),
        (lambda r: r["summary"]["numpy"].update(verdict="fine"), "an unknown verdict"),
        (lambda r: r["summary"]["numpy"].update(hangs=-1), "a negative count"),
        (lambda r: r["rules"]["producer.keyword-only"].update(level="MAY"), "level MAY"),
        (lambda r: r["rules"]["producer.keyword-only"].update(family="other"), "a family"),
        (lambda r: r["rules"]["producer.keyword-only"].pop("cites"), "a rule without cites"),
        (lambda r: r["rules"]["producer.keyword-only"]["cites"].append({"url": "x"}), "a cite"),
        (lambda r: r["matrix"][0].pop("counts"), "a pair without counts"),
        (lambda r: r["matrix"][0]["counts"].pop("unchecked"), "counts without unchecked"),
        (lambda r: r["matrix"][0].update(zero_copy="yes"), "zero_copy a string"),
        (lambda r: r["matrix"][0].update(error="crash: x"), "a pair with counts and error"),
        (lambda r: r.update(surprise=True), "an unknown top-level key"),
        (lambda r: r.pop("python"), "no python"),
        (lambda r: r["versions"].update(numpy=None), "a version null"),
        (lambda r: r.update(baseline={"known": 0}), "a baseline without its lists"),
    ],
)
def test_schema_rejects(validator, spoil, why):
    report = full_report()
    spoil(report)
    assert _errors(validator, report), why


def test_schema_rejects_a_version_1_report(validator):
    errors = _errors(validator, v1_report())
    assert any("schema_version" in message for message in errors)


# ---- JUnit XML --------------------------------------------------------------------------------


def _suites(report: dict) -> dict:
    root = ET.fromstring(render_junit(report))
    assert root.tag == "testsuites"
    return {suite.get("name"): suite for suite in root.iter("testsuite")}


def _expected_counts(results: list) -> dict:
    outcomes = [r["outcome"] for r in results]
    known = [r for r in results if r.get("known")]
    return {
        "tests": len(results),
        "failures": sum(o in ("fail", "crash", "hang") for o in outcomes)
        - sum(r["outcome"] in ("fail", "crash", "hang") for r in known),
        "errors": outcomes.count("error") - sum(r["outcome"] == "error" for r in known),
        "skipped": outcomes.count("n/a") + len(known),
    }


def _counts(suite) -> dict:
    return {key: int(suite.get(key)) for key in ("tests", "failures", "errors", "skipped")}


def test_junit_one_suite_per_framework_and_the_matrix():
    report = full_report()
    suites = _suites(report)
    assert list(suites) == [
        *(f"dlbridge check: {name}" for name in report["frameworks"]),
        "dlbridge check: interop matrix",
    ]
    for name, results in report["frameworks"].items():
        suite = suites[f"dlbridge check: {name}"]
        assert _counts(suite) == _expected_counts(results), name
        cases = suite.findall("testcase")
        assert [c.get("name") for c in cases] == [r["rule"] for r in results]
        assert {c.get("classname") for c in cases} == {name}
    # Written out once, for the framework with every outcome.
    assert _counts(suites[f"dlbridge check: {LONG_NAME}"]) == {
        "tests": 12,
        "failures": 6,
        "errors": 2,
        "skipped": 3,
    }


def test_junit_totals_on_the_root():
    root = ET.fromstring(render_junit(full_report()))
    for key in ("tests", "failures", "errors", "skipped"):
        assert int(root.get(key)) == sum(int(s.get(key)) for s in root.iter("testsuite"))


def _case(report: dict, name: str, rule: str):
    suite = _suites(report)[f"dlbridge check: {name}"]
    (case,) = [c for c in suite.findall("testcase") if c.get("name") == rule]
    return case


def test_junit_failures_say_level_hint_citation_and_cause():
    report = full_report()
    should = _case(report, "numpy", "consumer.copy-true-refused").find("failure")
    assert should.get("type") == "SHOULD"
    assert should.get("message").startswith("SHOULD: a producer refusing copy=True")
    assert "SHOULD rule consumer.copy-true-refused" in should.text
    assert "fix: on BufferError for copy=True" in should.text
    assert "https://data-apis.org/array-api/latest/" in should.text
    assert "dlbridge check --explain consumer.copy-true-refused" in should.text
    must = _case(report, LONG_NAME, "producer.version-fields").find("failure")
    assert must.get("type") == "MUST"
    caused = _case(report, LONG_NAME, "producer.values").find("failure")
    assert "(follows from producer.version-fields)" in caused.get("message")
    assert "follows from producer.version-fields" in caused.text


def test_junit_crash_hang_error_na_pass():
    report = full_report()
    crash = _case(report, LONG_NAME, "producer.no-leak")
    assert crash.find("failure").get("type") == "crash"
    assert "signal 11" in crash.find("failure").get("message")
    hang = _case(report, LONG_NAME, "consumer.deleter-once")
    assert hang.find("failure").get("type") == "hang"
    error = _case(report, LONG_NAME, "exchange.capsule")
    assert error.find("error") is not None and error.find("failure") is None
    assert "AttributeError" in error.find("error").get("message")
    na = _case(report, LONG_NAME, "exchange.dltensor")
    assert na.find("skipped").get("message") == "n/a: no exchange table"
    passed = _case(report, "numpy", "producer.keyword-only")
    assert [child.tag for child in passed] == ["system-out"]


def test_junit_keeps_xml_special_characters():
    text = render_junit(full_report())
    assert "\x1b" not in text and "\x00" not in text
    message = _case(full_report(), LONG_NAME, "producer.bad-stream-error-type").find("failure")
    assert "<script>alert('x')</script> & \"quoted\" red \\x00 <b>end</b>" in message.get("message")
    assert "<script>alert('x')</script>" in message.text


@pytest.mark.parametrize("character", [*map(chr, range(32)), "\x7f", "\ufffe", "\ud800"])
def test_xml_text_is_always_parseable(character):
    text = xml_text(f"a{character}b")
    element = ET.Element("x", a=text)
    element.text = text
    back = ET.fromstring(ET.tostring(element, encoding="unicode"))
    assert back.text.startswith("a") and back.text.endswith("b")


def test_junit_matrix_pairs():
    report = full_report()
    suite = _suites(report)["dlbridge check: interop matrix"]
    cases = {c.get("name"): c for c in suite.findall("testcase")}
    assert len(cases) == len(report["matrix"])
    failing = cases[f"numpy -> {LONG_NAME}"].find("failure")
    assert failing.get("message") == (
        "2 case(s) give wrong values: float64/contiguous, int8/transposed"
    )
    assert "shape (4, 3) for (3, 4) <& 'wrong'>" in failing.text
    crashed = cases[f"{LONG_NAME} -> numpy"].find("error")
    assert crashed.get("type") == "crash"
    assert crashed.get("message") == "crash: the process died (signal 6)"
    assert cases["numpy -> numpy"].find("failure") is None
    assert "36 pass" in cases["numpy -> numpy"].find("system-out").text
    assert _counts(suite) == {"tests": 9, "failures": 2, "errors": 1, "skipped": 0}


def test_junit_known_findings_are_skipped():
    report = full_report()
    compare(report, copy.deepcopy(report))
    suites = _suites(report)
    for suite in suites.values():
        assert suite.get("failures") == "0" and suite.get("errors") == "0", suite.get("name")
    known = _case(report, LONG_NAME, "producer.no-leak").find("skipped")
    assert known.get("message") == "known failure (baseline)"
    assert "crash: the process died" in known.text
    pairs = {c.get("name"): c for c in suites["dlbridge check: interop matrix"]}
    assert pairs[f"{LONG_NAME} -> numpy"].find("skipped").get("message") == (
        "known failure (baseline)"
    )
    # One case of a pair known, one new: the pair fails, naming the new case only.
    report = full_report()
    base = copy.deepcopy(report)
    del base["matrix"][4]["failures"]["int8/transposed"]
    compare(report, base)
    failure = _case_of_pair(report, f"numpy -> {LONG_NAME}").find("failure")
    assert failure.get("message") == "1 case(s) give wrong values: int8/transposed"
    assert "float64/contiguous: values differ" in failure.text
    assert "(known failure, baseline)" in failure.text


def _case_of_pair(report, name):
    suite = _suites(report)["dlbridge check: interop matrix"]
    (case,) = [c for c in suite.findall("testcase") if c.get("name") == name]
    return case


def test_junit_reads_a_version_1_report():
    suites = _suites(v1_report())
    assert _counts(suites["dlbridge check: numpy"])["failures"] == 2
    assert suites["dlbridge check: numpy"].find("properties/property[@name='dlbridge']").get(
        "value"
    ) == ("unknown")


def test_junit_versions_in_properties():
    suites = _suites(full_report())
    props = suites[f"dlbridge check: {LONG_NAME}"].find("properties")
    values = {p.get("name"): p.get("value") for p in props}
    assert values["version"] == "version unknown"
    assert values["python"] == "3.11.7"
    props = suites["dlbridge check: numpy"].find("properties")
    assert {p.get("name"): p.get("value") for p in props}["version"] == "2.4.6"


# ---- the baseline -----------------------------------------------------------------------------


def _report(results: dict, matrix: list | None = None, version: int | None = 2) -> dict:
    """A small report: {framework: [(rule, outcome[, detail])]}."""
    report = {
        "frameworks": {
            name: [
                {"rule": rule, "outcome": outcome, "detail": rest[0] if rest else "seen"}
                for rule, outcome, *rest in rows
            ]
            for name, rows in results.items()
        },
        "matrix": matrix or [],
    }
    if version is not None:
        report["schema_version"] = version
    return report


def _pair(producer, consumer, *failing):
    return {
        "producer": producer,
        "consumer": consumer,
        "counts": {
            "pass": 4 - len(failing),
            "fail": len(failing),
            "unsupported": 0,
            "unchecked": 0,
        },
        "zero_copy": True,
        "ns": 100.0,
        "failures": dict.fromkeys(failing, "values differ"),
        "unchecked": {},
    }


def _crashed(producer, consumer):
    return {"producer": producer, "consumer": consumer, "error": "crash: signal 11"}


def test_baseline_same_report_everything_known():
    report = full_report()
    summary = compare(report, copy.deepcopy(report))
    assert summary is report["baseline"]
    assert summary["regressions"] == [] and summary["fixed"] == []
    assert summary["frameworks_not_in_baseline"] == []
    assert summary["file"] is None
    every = sum(
        r["outcome"] in FINDING_OUTCOMES for rs in report["frameworks"].values() for r in rs
    )
    cases = sum(len(p.get("failures", {})) for p in report["matrix"])
    assert summary["known"] == every + cases + 1  # + the crashed pair
    for results in report["frameworks"].values():
        for result in results:
            assert result.get("known", False) == (result["outcome"] in FINDING_OUTCOMES)
    for pair in report["matrix"]:
        if "error" in pair:
            assert pair["known"] is True
        else:
            assert pair.get("known_failures", []) == list(pair["failures"])


def test_baseline_new_finding_is_a_regression():
    base = _report({"a": [("r.one", "pass"), ("r.two", "fail")]})
    report = _report({"a": [("r.one", "fail"), ("r.two", "fail")]})
    summary = compare(report, base)
    assert summary["regressions"] == [{"framework": "a", "rule": "r.one", "outcome": "fail"}]
    assert summary["known"] == 1
    assert "known" not in report["frameworks"]["a"][0]
    assert report["frameworks"]["a"][1]["known"] is True


@pytest.mark.parametrize(
    ("was", "now", "regression"),
    [
        ("fail", "crash", True),
        ("fail", "hang", True),
        ("hang", "crash", True),
        ("error", "fail", True),
        ("crash", "fail", False),
        ("crash", "hang", False),
        ("fail", "error", False),
        ("crash", "crash", False),
    ],
)
def test_baseline_worse_outcome_is_a_regression(was, now, regression):
    summary = compare(_report({"a": [("r.x", now)]}), _report({"a": [("r.x", was)]}))
    if regression:
        assert summary["regressions"] == [
            {"framework": "a", "rule": "r.x", "outcome": now, "was": was}
        ]
        assert summary["known"] == 0
    else:
        assert summary["regressions"] == [] and summary["known"] == 1


def test_baseline_framework_not_in_baseline():
    base = _report({"a": [("r.x", "fail")]})
    report = _report({"a": [("r.x", "fail")], "b": [("r.x", "fail"), ("r.y", "error")]})
    summary = compare(report, base)
    assert summary["frameworks_not_in_baseline"] == ["b"]
    assert summary["regressions"] == [
        {"framework": "b", "rule": "r.x", "outcome": "fail"},
        {"framework": "b", "rule": "r.y", "outcome": "error"},
    ]


def test_baseline_fixed_only_where_checked_again():
    base = _report(
        {"a": [("r.x", "fail"), ("r.y", "crash"), ("r.z", "fail")], "gone": [("r.x", "fail")]}
    )
    report = _report({"a": [("r.x", "pass"), ("r.y", "n/a")]})  # r.z not run (--rule)
    summary = compare(report, base)
    assert summary["fixed"] == [
        {"framework": "a", "rule": "r.x", "outcome": "fail"},
        {"framework": "a", "rule": "r.y", "outcome": "crash"},
    ]
    assert summary["regressions"] == [] and summary["known"] == 0


def test_baseline_matrix_cases_and_crashed_pairs():
    base = _report(
        {"a": []},
        [_pair("a", "a", "f32/c", "i8/t"), _crashed("a", "b"), _pair("b", "a", "u8/c")],
    )
    report = _report(
        {"a": []},
        [
            _pair("a", "a", "f32/c", "f64/c"),  # one known, one new, one fixed
            _pair("a", "b"),  # crashed before, runs now: fixed
            _crashed("b", "a"),  # a crash where a case failed: new
            _crashed("b", "b"),  # new pair, crashed
        ],
    )
    summary = compare(report, base)
    assert report["matrix"][0]["known_failures"] == ["f32/c"]
    assert "known" not in report["matrix"][2]
    assert summary["known"] == 1
    assert summary["regressions"] == [
        {"producer": "a", "consumer": "a", "case": "f64/c"},
        {"producer": "b", "consumer": "a", "error": "crash: signal 11"},
        {"producer": "b", "consumer": "b", "error": "crash: signal 11"},
    ]
    assert summary["fixed"] == [
        {"producer": "a", "consumer": "a", "case": "i8/t"},
        {"producer": "a", "consumer": "b", "error": "crash: signal 11"},
    ]
    # b -> a crashed now, so whether u8/c still fails is not known: not fixed.


def test_baseline_known_crashed_pair():
    report = _report({}, [_crashed("a", "b")])
    summary = compare(report, _report({}, [_crashed("a", "b")]))
    assert report["matrix"][0]["known"] is True
    assert summary == {
        "file": None,
        "known": 1,
        "regressions": [],
        "fixed": [],
        "frameworks_not_in_baseline": [],
    }


def test_baseline_of_schema_version_1():
    base = _report(
        {
            "a": [
                ("r.crashed", "fail", "crash: the process died (signal 11)"),
                ("r.hung", "fail", "crash: no answer within 120 s (hung)"),
                ("r.not-run", "fail", "not run: the process died (signal 11) before this check"),
                ("r.failed", "fail", "wrong"),
            ]
        },
        version=None,
    )
    assert [outcome_of(r, 1) for r in base["frameworks"]["a"]] == [
        "crash",
        "hang",
        "error",
        "fail",
    ]
    report = _report(
        {
            "a": [
                ("r.crashed", "crash", "crash: the process died (signal 11)"),
                ("r.hung", "crash", "crash: the process died (signal 6)"),  # hang -> crash
                ("r.not-run", "fail", "wrong"),  # error -> fail
                ("r.failed", "fail", "wrong"),
            ]
        }
    )
    summary = compare(report, base)
    assert summary["known"] == 2
    assert summary["regressions"] == [
        {"framework": "a", "rule": "r.hung", "outcome": "crash", "was": "hang"},
        {"framework": "a", "rule": "r.not-run", "outcome": "fail", "was": "error"},
    ]


def test_baseline_from_a_real_version_1_report():
    report = upgrade_v1(v1_report())
    summary = compare(report, v1_report())
    assert summary["regressions"] == [] and summary["fixed"] == []
    assert summary["known"] == 2


def test_baseline_compare_twice_marks_once():
    report = _report({"a": [("r.x", "fail")]}, [_pair("a", "a", "c")])
    compare(report, copy.deepcopy(report))
    assert report["frameworks"]["a"][0]["known"] is True
    summary = compare(report, _report({"a": []}))
    assert "known" not in report["frameworks"]["a"][0]
    assert "known_failures" not in report["matrix"][0]
    assert summary["known"] == 0 and len(summary["regressions"]) == 2


@pytest.mark.parametrize(
    "baseline",
    [[], {}, {"frameworks": []}, {"schema_version": 3, "frameworks": {}}, "report.json"],
)
def test_baseline_that_is_not_a_report(baseline):
    with pytest.raises(ValueError, match="baseline"):
        compare(_report({"a": []}), baseline)


def test_findings_keys():
    keys = findings(full_report())
    assert keys[("rule", LONG_NAME, "producer.no-leak")] == "crash"
    assert keys[("rule", LONG_NAME, "consumer.deleter-once")] == "hang"
    assert keys[("case", "numpy", LONG_NAME, "int8/transposed")] == "fail"
    assert keys[("pair", LONG_NAME, "numpy")] == "crash"
    assert ("rule", "numpy", "producer.keyword-only") not in keys


def test_fixture_has_what_the_tests_need():
    report = full_report()
    outcomes = {r["outcome"] for rs in report["frameworks"].values() for r in rs}
    assert outcomes == {"pass", "fail", "n/a", "error", "crash", "hang"}
    assert any("caused_by" in r for rs in report["frameworks"].values() for r in rs)
    assert any("error" in p for p in report["matrix"])
    assert any(p.get("failures") for p in report["matrix"])
    assert LONG_NAME not in report["versions"]
    assert any(r["detail"] == HOSTILE for r in report["frameworks"][LONG_NAME])
