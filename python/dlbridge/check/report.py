"""The report of `dlbridge check`: a terminal table (coloured on a TTY), Markdown, JSON (its
schema: `report_schema.json`, docs/check-report.md); `report_junit` and `report_html` write
the other two forms."""

from __future__ import annotations

import json

from .rules import (
    CRASH,
    ERROR,
    FAIL,
    FINDINGS,
    HANG,
    NA,
    PASS,
    RULES,
    UNCHECKED,
    UNSUPPORTED,
)

#: The version of the report's JSON form (`report_schema.json`); it changes when a key is
#: removed or its meaning changes.
SCHEMA_VERSION = 2

_COLOURS = {
    PASS: "\x1b[32m",
    FAIL: "\x1b[31m",
    NA: "\x1b[33m",
    ERROR: "\x1b[35m",
    CRASH: "\x1b[1;31m",
    HANG: "\x1b[1;31m",
}
_RESET = "\x1b[0m"
_LABELS = {PASS: "PASS", FAIL: "FAIL", NA: "n/a", ERROR: "ERROR", CRASH: "CRASH", HANG: "HANG"}


def render_json(report: dict) -> str:
    return json.dumps(report, indent=2)


def _label(outcome: str, colour: bool) -> str:
    label = f"{_LABELS.get(outcome, outcome):<5}"
    return f"{_COLOURS.get(outcome, '')}{label}{_RESET}" if colour else label


def _summary_line(name: str, summary: dict) -> str:
    must, should = summary["must_failures"], summary["should_failures"]
    parts = [
        f"{must} MUST failure{'s' * (must != 1)}",
        f"{should} SHOULD failure{'s' * (should != 1)}",
    ]
    for key, one, many in [("errors", "error", "errors"), ("crashes", "crash", "crashes")]:
        if summary.get(key):
            parts.append(f"{summary[key]} {one if summary[key] == 1 else many}")
    if summary.get("hangs"):
        parts.append(f"{summary['hangs']} hang{'s' * (summary['hangs'] != 1)}")
    parts += [f"{summary['passed']} passed", f"{summary['not_applicable']} n/a"]
    return f"{name}: {', '.join(parts)}: {summary.get('verdict', '')}"


def _header(report: dict) -> str:
    """Python, and each framework checked with its version ("version unknown" where none)."""
    versions = report["versions"]
    names = [*report["frameworks"], *(n for n in versions if n not in report["frameworks"])]
    listed = ", ".join(f"{n} {versions.get(n) or '(version unknown)'}" for n in names)
    return f"Python {report['python']}; {listed}"


def _grouped(results: list) -> list:
    """[(result, [results caused by it])]: every result not caused by another, in order, with
    those that follow from it (`caused_by`) beneath it; results known from a baseline are left
    out."""
    shown = [r for r in results if not r.get("known")]
    roots = {r["rule"] for r in shown if not r.get("caused_by")}
    beneath: dict = {}
    for result in shown:
        if result.get("caused_by") in roots:
            beneath.setdefault(result["caused_by"], []).append(result)
    return [
        (result, beneath.get(result["rule"], []))
        for result in shown
        if not result.get("caused_by") or result["caused_by"] not in roots
    ]


def _rule_lines(result: dict, colour: bool, indent: str) -> list:
    rule = RULES[result["rule"]]
    detail = " ".join(result["detail"].split())
    lines = [f"{indent}{_label(result['outcome'], colour)} {rule.level:<6} {rule.id:<38} {detail}"]
    if result["outcome"] in FINDINGS and not result.get("caused_by"):
        pad = indent + " " * 13
        lines.append(f"{pad}see {rule.section} (dlbridge check --explain {rule.id})")
        lines.append(f"{pad}fix: {rule.hint}")
    return lines


def _pair_cell(pair: dict) -> str:
    if "error" in pair:
        return f"CRASH ({pair['error'][:40]})"
    counts = pair["counts"]
    cell = f"{counts[PASS]}/{counts[FAIL]}/{counts[UNSUPPORTED]}"
    if counts.get(UNCHECKED):
        cell += f" +{counts[UNCHECKED]} unchecked"
    if pair.get("zero_copy") is True:
        cell += " zc"
    elif pair.get("zero_copy") is False:
        cell += " copy"
    if pair.get("ns") is not None:
        cell += f" {pair['ns'] / 1000:.2f}us" if pair["ns"] >= 1000 else f" {pair['ns']:.0f}ns"
    return cell


def _matrix_rows(report: dict):
    pairs = report["matrix"]
    producers = list(dict.fromkeys(p["producer"] for p in pairs))
    consumers = list(dict.fromkeys(p["consumer"] for p in pairs))
    cell = {(p["producer"], p["consumer"]): _pair_cell(p) for p in pairs}
    return producers, consumers, cell


def render_text(report: dict, colour: bool = False) -> str:
    lines = [f"dlbridge check ({_header(report)})"]
    for name, results in report["frameworks"].items():
        lines.append("")
        lines.append(name)
        for result, caused in _grouped(results):
            lines += _rule_lines(result, colour, "  ")
            if caused:
                lines.append(f"    {len(caused)} more that follow from {result['rule']}:")
                for follower in caused:
                    lines += _rule_lines(follower, colour, "    ")
        known = sum(1 for r in results if r.get("known"))
        if known:
            lines.append(f"  ({known} known failure(s) of the baseline not shown)")
    lines.append("")
    lines.append("Summary")
    for name, summary in report["summary"].items():
        lines.append("  " + _summary_line(name, summary))
    baseline = report.get("baseline")
    if baseline:
        lines.append(
            f"  against the baseline {baseline.get('file')}: "
            f"{len(baseline.get('regressions', []))} new finding(s), {baseline.get('known', 0)} "
            f"known, {len(baseline.get('fixed', []))} fixed"
        )
    if report["matrix"]:
        producers, consumers, cell = _matrix_rows(report)
        lines.append("")
        lines.append(
            "Interop matrix: rows produce, columns consume; pass/fail/unsupported of "
            "the dtype x layout cases (a module:factory: its one tensor), zero-copy (zc) "
            "or copy, and the median time of one float32 4x3 exchange"
        )
        first = max(12, *(len(p) + 2 for p in producers))
        width = max(18, *(len(c) + 2 for c in cell.values()), *(len(c) + 2 for c in consumers))
        lines.append(" " * first + "".join(f"{c:<{width}}" for c in consumers))
        for producer in producers:
            row = "".join(f"{cell.get((producer, c), '-'):<{width}}" for c in consumers)
            lines.append(f"{producer:<{first}}{row}")
        for key, title in [
            ("failures", "Wrong values in the matrix:"),
            ("unchecked", "Not compared (the producer's values cannot be read independently):"),
        ]:
            cases = [
                f"  {p['producer']} -> {p['consumer']} {case}: {detail}"
                for p in report["matrix"]
                for case, detail in p.get(key, {}).items()
                if case not in p.get("known_failures", ())
            ]
            if cases:
                lines += ["", title, *cases]
    return "\n".join(lines)


def render_markdown(report: dict) -> str:
    lines = [f"{_header(report)}.", ""]
    lines.append(
        "| framework | verdict | MUST failures | SHOULD failures | errors, crashes, hangs "
        "| passed | n/a |"
    )
    lines.append("|---|---|---|---|---|---|---|")
    for name, s in report["summary"].items():
        trouble = s.get("errors", 0) + s.get("crashes", 0) + s.get("hangs", 0)
        lines.append(
            f"| {name} | {s.get('verdict', '')} | {s['must_failures']} | {s['should_failures']} "
            f"| {trouble} | {s['passed']} | {s['not_applicable']} |"
        )
    lines.append("")
    lines.append("Findings, rule by rule (those that follow from another are marked so):")
    lines.append("")
    lines.append("| framework | rule | level | outcome | what was seen | fix |")
    lines.append("|---|---|---|---|---|---|")
    any_failure = False
    for name, results in report["frameworks"].items():
        for result in results:
            if result["outcome"] not in FINDINGS or result.get("known"):
                continue
            any_failure = True
            rule = RULES[result["rule"]]
            detail = " ".join(result["detail"].split()).replace("|", "\\|")
            if result.get("caused_by"):
                detail = f"(follows from `{result['caused_by']}`) {detail}"
            lines.append(
                f"| {name} | `{rule.id}` ({rule.section}) | {rule.level} | {result['outcome']} "
                f"| {detail} | {rule.hint} |"
            )
    if not any_failure:
        lines.append("| (none) | | | | | |")
    if report["matrix"]:
        producers, consumers, cell = _matrix_rows(report)
        lines.append("")
        lines.append(
            "Interop matrix (rows produce, columns consume): pass/fail/unsupported "
            "of the dtype x layout cases; zc = zero-copy; median time of one float32 "
            "exchange."
        )
        lines.append("")
        lines.append("| producer \\ consumer | " + " | ".join(consumers) + " |")
        lines.append("|---|" + "---|" * len(consumers))
        lines.extend(
            f"| {producer} | " + " | ".join(cell.get((producer, c), "-") for c in consumers) + " |"
            for producer in producers
        )
    return "\n".join(lines)
