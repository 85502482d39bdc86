"""`dlbridge check`'s command line: the exit status (no silent greens), `--rule`, `--fail-on`,
`--baseline`, and the terminal report (causes beneath their root, sections and fix hints,
versions, long names)."""

from __future__ import annotations

import json
import pathlib
import subprocess
import sys

import pytest

from dlbridge.check import exit_status
from dlbridge.check.cli import EXIT_STATUS
from dlbridge.check.report import render_markdown, render_text
from dlbridge.check.rules import RULES
from dlbridge.check.rules import summarise as _summary

LONG_NAME = "a_framework_with_a_name_longer_than_forty_chars"


def _result(rule: str, outcome: str, detail: str = "seen", **extra) -> dict:
    return {"rule": rule, "outcome": outcome, "detail": detail, **extra}


def _report(results: list, *, matrix: list | None = None, name: str = "mylib") -> dict:
    return {
        "schema_version": 2,
        "python": "3.11.7",
        "versions": {"numpy": "2.4.6"},
        "frameworks": {name: results},
        "summary": {name: _summary(results)},
        "matrix": matrix or [],
    }


def _run(*arguments: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "dlbridge", "check", "--quiet", *arguments],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=600,
        check=False,
    )


# ---- the exit status ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "rule", "fail_on", "status"),
    [
        ("pass", "producer.values", "must", 0),
        ("n/a", "producer.values", "must", 0),
        ("fail", "producer.values", "must", 1),
        ("fail", "producer.versioned-capsule", "must", 0),  # a SHOULD rule
        ("fail", "producer.versioned-capsule", "should", 1),
        ("error", "producer.versioned-capsule", "must", 1),  # never taken for a pass
        ("crash", "producer.versioned-capsule", "must", 1),
        ("hang", "producer.values", "must", 1),
    ],
)
def test_the_exit_status_counts_every_finding_at_its_level(outcome, rule, fail_on, status):
    assert exit_status(_report([_result(rule, outcome)]), fail_on) == status


def test_known_findings_of_a_baseline_do_not_fail_the_run():
    report = _report([_result("producer.values", "fail", known=True)])
    assert exit_status(report) == 0
    report["frameworks"]["mylib"].append(_result("producer.copy-flag", "fail"))
    assert exit_status(report) == 1


def test_a_wrong_value_or_a_crash_in_the_matrix_fails_the_run():
    pair = {"producer": "a", "consumer": "b", "failures": {"int64/contiguous": "read 3"}}
    assert exit_status(_report([], matrix=[pair])) == 1
    pair["known_failures"] = ["int64/contiguous"]
    assert exit_status(_report([], matrix=[pair])) == 0
    crashed = {"producer": "a", "consumer": "b", "error": "crash: signal 11"}
    assert exit_status(_report([], matrix=[crashed])) == 1


def test_every_exit_status_is_in_the_help():
    help_text = _run("--help").stdout
    for status in ("0", "1", "2"):
        assert f"\n  {status}  " in help_text, status
    assert EXIT_STATUS.splitlines()[1] in help_text


# ---- the verdict ----------------------------------------------------------------------------


def test_the_verdict_names_the_worst_finding():
    assert _summary([_result("producer.values", "pass")])["verdict"] == "conforms"
    assert _summary([_result("producer.values", "error")])["verdict"] == (
        "could not be checked completely"
    )
    both = [_result("producer.values", "fail"), _result("producer.copy-flag", "crash")]
    summary = _summary(both)
    assert summary["verdict"] == "crashes or hangs"
    assert (summary["must_failures"], summary["crashes"]) == (1, 1)


# ---- the terminal report --------------------------------------------------------------------


def test_a_failure_shows_its_section_and_fix_and_its_followers_beneath_it():
    root = "consumer.renames-capsule"
    results = [
        _result("consumer.legacy-capsule", "fail", "deleters ran [2] times", caused_by=root),
        _result(root, "fail", "the capsule keeps its name"),
        _result("producer.values", "pass", "as made"),
    ]
    text = render_text(_report(results))
    lines = text.splitlines()
    root_line = next(i for i, line in enumerate(lines) if line.startswith(f"  FAIL  MUST   {root}"))
    assert RULES[root].section in lines[root_line + 1]
    assert f"--explain {root}" in lines[root_line + 1]
    assert lines[root_line + 2].strip().startswith("fix:")
    assert lines[root_line + 3].strip() == f"1 more that follow from {root}:"
    assert "consumer.legacy-capsule" in lines[root_line + 4]
    assert lines[root_line + 4].startswith("    FAIL")


def test_the_header_names_every_framework_with_a_version_or_says_it_is_unknown():
    text = render_text(_report([_result("producer.values", "pass")]))
    assert text.splitlines()[0] == (
        "dlbridge check (Python 3.11.7; mylib (version unknown), numpy 2.4.6)"
    )


def test_a_long_producer_name_keeps_the_matrix_aligned():
    pair = {
        "producer": LONG_NAME,
        "consumer": "numpy",
        "counts": {"pass": 36, "fail": 0, "unsupported": 0, "unchecked": 0},
        "zero_copy": True,
        "ns": 250.0,
    }
    text = render_text(_report([], matrix=[pair], name=LONG_NAME))
    row = next(line for line in text.splitlines() if line.startswith(f"{LONG_NAME} "))
    header = next(line for line in text.splitlines() if line.strip().startswith("numpy"))
    assert row[len(LONG_NAME)] == " "  # the name and the first cell never run together
    assert row.index("36/0/0") == header.index("numpy")


def test_markdown_marks_followers_and_carries_the_hint():
    results = [
        _result("consumer.deleter-once", "fail", "deleters ran [2]"),
        _result(
            "consumer.byte-offset", "fail", "deleters ran [2]", caused_by="consumer.deleter-once"
        ),
    ]
    markdown = render_markdown(_report(results))
    assert "(follows from `consumer.deleter-once`)" in markdown
    assert RULES["consumer.deleter-once"].hint in markdown


# ---- whole runs -----------------------------------------------------------------------------


def test_rule_reruns_only_that_rule(tmp_path: pathlib.Path):
    done = _run("numpy", "--rule", "producer.copy-flag", "--json")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert [r["rule"] for r in report["frameworks"]["numpy"]] == ["producer.copy-flag"]
    assert report["matrix"] == []
    assert report["schema_version"] == 2


def test_an_unknown_rule_is_a_usage_error():
    done = _run("numpy", "--rule", "producer.copy-flags")
    assert done.returncode == 2
    assert "producer.copy-flag" in done.stderr  # the near match is named


def test_fail_on_should_fails_a_should_failure():
    # NumPy raises RuntimeError for a stream on CPU data: a SHOULD failure.
    rule = "producer.bad-stream-error-type"
    assert _run("numpy", "--rule", rule).returncode == 0
    assert _run("numpy", "--rule", rule, "--fail-on", "should").returncode == 1


def test_a_baseline_leaves_known_failures_out(tmp_path: pathlib.Path):
    rule = "producer.bad-stream-error-type"
    baseline = tmp_path / "baseline.json"
    first = _run("numpy", "--rule", rule, "--fail-on", "should", "--json-file", str(baseline))
    assert first.returncode == 1
    again = _run("numpy", "--rule", rule, "--fail-on", "should", "--baseline", str(baseline))
    assert again.returncode == 0, again.stdout
    assert "1 known failure(s) of the baseline not shown" in again.stdout


def test_the_guide_counts_the_rules_the_checker_has():
    root = pathlib.Path(__file__).resolve().parents[2]
    guide = (root / "docs" / "guide" / "src" / "checker.md").read_text(encoding="utf-8")
    families: dict = {}
    for rule in RULES.values():
        families.setdefault(rule.id.split(".")[0], []).append(rule.id)
    cuda = len(families["device"])
    exchange = len(families["exchange"]) - 1  # exchange.work-stream-cuda is counted with CUDA
    assert f"**producer** ({len(families['producer'])} rules, and {exchange} on the C" in guide
    assert f"**CUDA tensors** ({cuda} rules, and `exchange.work-stream-cuda`" in guide
    assert f"**consumer** ({len(families['consumer'])} rules)" in guide
