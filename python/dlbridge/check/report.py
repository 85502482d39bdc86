"""The report of `dlbridge check`: a terminal table (coloured on a TTY), Markdown, JSON."""

from __future__ import annotations

import json

from .rules import FAIL, NA, PASS, RULES, UNCHECKED, UNSUPPORTED

_COLOURS = {PASS: "\x1b[32m", FAIL: "\x1b[31m", NA: "\x1b[33m"}
_RESET = "\x1b[0m"
_LABELS = {PASS: "PASS", FAIL: "FAIL", NA: "n/a"}


def render_json(report: dict) -> str:
    return json.dumps(report, indent=2)


def _label(outcome: str, colour: bool) -> str:
    label = f"{_LABELS.get(outcome, outcome):<4}"
    return f"{_COLOURS.get(outcome, '')}{label}{_RESET}" if colour else label


def _summary_line(name: str, summary: dict) -> str:
    must, should = summary["must_failures"], summary["should_failures"]
    verdict = (
        "breaks MUST rules" if must else ("conforms (SHOULD failures)" if should else "conforms")
    )
    return (
        f"{name}: {must} MUST failure{'s' * (must != 1)}, {should} SHOULD "
        f"failure{'s' * (should != 1)}, {summary['passed']} passed, "
        f"{summary['not_applicable']} n/a: {verdict}"
    )


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
    lines = []
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    lines.append(f"dlbridge check (Python {report['python']}; {versions})")
    for name, results in report["frameworks"].items():
        lines.append("")
        lines.append(name)
        for result in results:
            rule = RULES[result["rule"]]
            detail = " ".join(result["detail"].split())
            lines.append(
                f"  {_label(result['outcome'], colour)} {rule.level:<6} {rule.id:<38} {detail}"
            )
    lines.append("")
    lines.append("Summary")
    for name, summary in report["summary"].items():
        lines.append("  " + _summary_line(name, summary))
    if report["matrix"]:
        producers, consumers, cell = _matrix_rows(report)
        lines.append("")
        lines.append(
            "Interop matrix: rows produce, columns consume; pass/fail/unsupported of "
            "the dtype x layout cases (a module:factory: its one tensor), zero-copy (zc) "
            "or copy, and the median time of one float32 4x3 exchange"
        )
        width = max(18, *(len(c) for c in cell.values())) + 2
        lines.append(" " * 12 + "".join(f"{c:<{width}}" for c in consumers))
        for producer in producers:
            row = "".join(f"{cell.get((producer, c), '-'):<{width}}" for c in consumers)
            lines.append(f"{producer:<12}{row}")
        for key, title in [
            ("failures", "Wrong values in the matrix:"),
            ("unchecked", "Not compared (the producer's values cannot be read independently):"),
        ]:
            cases = [
                f"  {p['producer']} -> {p['consumer']} {case}: {detail}"
                for p in report["matrix"]
                for case, detail in p.get(key, {}).items()
            ]
            if cases:
                lines += ["", title, *cases]
    return "\n".join(lines)


def render_markdown(report: dict) -> str:
    lines = []
    versions = ", ".join(f"{k} {v}" for k, v in report["versions"].items())
    lines.append(f"Python {report['python']}; {versions}.")
    lines.append("")
    lines.append("| framework | MUST failures | SHOULD failures | passed | n/a |")
    lines.append("|---|---|---|---|---|")
    for name, s in report["summary"].items():
        lines.append(
            f"| {name} | {s['must_failures']} | {s['should_failures']} | "
            f"{s['passed']} | {s['not_applicable']} |"
        )
    lines.append("")
    lines.append("Failures, rule by rule:")
    lines.append("")
    lines.append("| framework | rule | level | what was seen |")
    lines.append("|---|---|---|---|")
    any_failure = False
    for name, results in report["frameworks"].items():
        for result in results:
            if result["outcome"] != FAIL:
                continue
            any_failure = True
            rule = RULES[result["rule"]]
            detail = " ".join(result["detail"].split()).replace("|", "\\|")
            lines.append(f"| {name} | `{rule.id}` ({rule.section}) | {rule.level} | {detail} |")
    if not any_failure:
        lines.append("| (none) | | | |")
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
