"""The report of `dlbridge check` as JUnit XML, for the test reports of CI dashboards (GitLab,
Jenkins, GitHub's test reporters).

One `<testsuite>` per framework, named "dlbridge check: NAME", with one `<testcase
classname="NAME" name="RULE">` per rule checked:

- pass: a plain test case (what was seen in its `<system-out>`);
- fail: `<failure type="MUST">` or `type="SHOULD"` (a SHOULD rule broken is a failure too),
  its message the level and what was seen, its text the rule, the fix hint and where the
  standard says it; a failure that follows from another says "follows from RULE";
- error (the check itself broke): `<error type="error">`;
- crash, hang: `<failure type="crash">`, `<failure type="hang">`;
- n/a: `<skipped>` with why;
- a finding known from a baseline (`"known": true`, `baseline.compare`): `<skipped
  message="known failure (baseline)">`.

Then one suite "dlbridge check: interop matrix", a test case per producer -> consumer pair: a
failure listing the cases that give wrong values, an error for a pair that crashed.

Characters XML 1.0 cannot carry (control characters such as a terminal's ESC) are written as
`\\xNN`; colour codes are dropped.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

#: A terminal's colour and cursor codes (ESC [ ... letter), dropped from details.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
#: What XML 1.0 cannot hold: C0 controls but tab, LF and CR; lone surrogates; U+FFFE, U+FFFF.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")

KNOWN_MESSAGE = "known failure (baseline)"


def xml_text(value) -> str:
    """`value` as text XML 1.0 can carry: colour codes dropped, other characters it forbids
    written as `\\xNN` (`\\uNNNN` beyond one byte)."""
    text = _ANSI.sub("", str(value))

    def visible(match):
        code = ord(match.group())
        return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"

    return _NOT_XML.sub(visible, text)


def _element(parent, tag: str, text=None, **attributes) -> ET.Element:
    element = ET.SubElement(
        parent, tag, {key: xml_text(value) for key, value in attributes.items()}
    )
    if text:
        element.text = xml_text(text)
    return element


def _rule_text(rule_id: str, rule: dict, result: dict) -> str:
    """The text of a failure: the rule, what was seen, the fix and where the standard says
    it."""
    title = f"{rule.get('level', '?')} rule {rule_id}"
    lines = [
        f"{title}: {rule['text']}" if rule.get("text") else title,
        f"seen: {result.get('detail', '')}",
    ]
    if result.get("caused_by"):
        lines.append(f"follows from {result['caused_by']} (fix that first)")
    if rule.get("hint"):
        lines.append(f"fix: {rule['hint']}")
    if rule.get("section"):
        lines.append(f"see: {rule['section']}")
    lines += [
        f"  {cite.get('document', '')}, {cite.get('section', '')}: {cite.get('url', '')}"
        for cite in rule.get("cites", ())
    ]
    lines.append(f"explain: dlbridge check --explain {rule_id}")
    return "\n".join(lines)


def _message(result: dict, prefix: str = "") -> str:
    message = f"{prefix}{result.get('detail', '')}"
    if result.get("caused_by"):
        message += f" (follows from {result['caused_by']})"
    return message


def _rule_case(suite, name: str, result: dict, rules: dict) -> str:
    """Adds one rule's test case to `suite`; returns what it counts as: "tests", "failures",
    "errors" or "skipped"."""
    rule_id = result["rule"]
    rule = rules.get(rule_id, {})
    level = rule.get("level", "MUST")
    case = _element(suite, "testcase", classname=name, name=rule_id)
    outcome = result.get("outcome")
    text = _rule_text(rule_id, rule, result)
    if outcome in ("fail", "error", "crash", "hang") and result.get("known"):
        _element(case, "skipped", f"{outcome}: {result.get('detail', '')}", message=KNOWN_MESSAGE)
        return "skipped"
    if outcome == "fail":
        _element(case, "failure", text, type=level, message=_message(result, f"{level}: "))
        return "failures"
    if outcome in ("crash", "hang"):
        _element(case, "failure", text, type=outcome, message=_message(result))
        return "failures"
    if outcome == "error":
        _element(case, "error", text, type="error", message=_message(result))
        return "errors"
    if outcome == "n/a":
        _element(case, "skipped", message=f"n/a: {result.get('detail', '')}")
        return "skipped"
    if outcome != "pass":
        _element(case, "error", text, type=str(outcome), message=f"unknown outcome {outcome!r}")
        return "errors"
    _element(case, "system-out", result.get("detail", ""))
    return "tests"


def _pair_text(pair: dict) -> str:
    counts = pair.get("counts", {})
    parts = [f"{counts.get(key, 0)} {key}" for key in ("pass", "fail", "unsupported", "unchecked")]
    zero_copy = {True: "zero-copy", False: "copied", None: "zero-copy not known"}
    parts.append(zero_copy.get(pair.get("zero_copy")))
    if pair.get("ns") is not None:
        parts.append(f"{pair['ns']:.0f} ns per exchange")
    lines = [", ".join(parts)]
    if pair.get("note"):
        lines.append(f"note: {pair['note']}")
    known = set(pair.get("known_failures", ()))
    for case, detail in pair.get("failures", {}).items():
        lines.append(f"{case}: {detail}{' (known failure, baseline)' * (case in known)}")
    lines += [f"{case}: not compared: {why}" for case, why in pair.get("unchecked", {}).items()]
    return "\n".join(lines)


def _pair_case(suite, pair: dict) -> str:
    """Adds one matrix pair's test case to `suite`; returns what it counts as."""
    name = f"{pair['producer']} -> {pair['consumer']}"
    case = _element(suite, "testcase", classname="interop matrix", name=name)
    if "error" in pair:
        if pair.get("known"):
            _element(case, "skipped", pair["error"], message=KNOWN_MESSAGE)
            return "skipped"
        _element(case, "error", pair["error"], type="crash", message=pair["error"])
        return "errors"
    known = set(pair.get("known_failures", ()))
    failing = [case_id for case_id in pair.get("failures", {}) if case_id not in known]
    if failing:
        message = f"{len(failing)} case(s) give wrong values: {', '.join(failing)}"
        _element(case, "failure", _pair_text(pair), type="fail", message=message)
        return "failures"
    if known:
        _element(case, "skipped", _pair_text(pair), message=KNOWN_MESSAGE)
        return "skipped"
    _element(case, "system-out", _pair_text(pair))
    return "tests"


def _suite(parent, name: str, properties: dict) -> ET.Element:
    suite = _element(parent, "testsuite", name=name)
    if properties:
        holder = _element(suite, "properties")
        for key, value in properties.items():
            _element(holder, "property", name=key, value=value)
    return suite


def _count(suite: ET.Element, kinds: list) -> dict:
    counts = {
        "tests": len(kinds),
        "failures": kinds.count("failures"),
        "errors": kinds.count("errors"),
        "skipped": kinds.count("skipped"),
    }
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", "0")
    return counts


def render_junit(report: dict) -> str:
    """The report (a dict of schema version 2; version 1 is read too) as a JUnit XML document:
    a `<testsuites>` root, one `<testsuite>` per framework and one for the interop matrix,
    with the counts (tests, failures, errors, skipped) each has."""
    rules = report.get("rules", {})
    versions = report.get("versions", {})
    root = ET.Element("testsuites", {"name": "dlbridge check"})
    common = {
        "dlbridge": report.get("dlbridge", "unknown"),
        "python": report.get("python", "unknown"),
        "platform": report.get("platform", "unknown"),
    }
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for name, results in report.get("frameworks", {}).items():
        suite = _suite(
            root,
            f"dlbridge check: {name}",
            {**common, "version": versions.get(name) or "version unknown"},
        )
        kinds = [_rule_case(suite, name, result, rules) for result in results]
        for key, value in _count(suite, kinds).items():
            totals[key] += value
    pairs = report.get("matrix", [])
    if pairs:
        suite = _suite(root, "dlbridge check: interop matrix", common)
        kinds = [_pair_case(suite, pair) for pair in pairs]
        for key, value in _count(suite, kinds).items():
            totals[key] += value
    for key, value in totals.items():
        root.set(key, str(value))
    ET.indent(root)
    body = ET.tostring(root, encoding="unicode")
    return f'<?xml version="1.0" encoding="UTF-8"?>\n{body}\n'
