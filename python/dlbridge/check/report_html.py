"""The report of `dlbridge check` as one self-contained HTML page, for people (`--html FILE`).

The page has no external resources (its Content-Security-Policy forbids them: inline CSS, a
little inline JavaScript, system fonts), and reads without JavaScript: every detail is in the
page, JavaScript only shows a matrix pair's detail beside the grid when its cell is clicked.
From the top:

- a header: dlbridge's, Python's and each framework's version ("version unknown" where the
  report has none), the platform;
- with a baseline compared (`baseline.compare`): the regressions first, the fixed findings;
- a summary table: each framework's verdict and counts;
- the interop matrix as a grid, producers as rows and consumers as columns, each cell a link
  coloured and labelled by its state (`PAIR_STATES`), with a tooltip, and each pair's detail
  below it;
- one section per framework: its findings first, by severity (those that follow from another
  beneath it), then the passes and the rules that do not apply, each collapsed.

Every string of the report is escaped. Tests find their way by stable attributes: each matrix
cell `a.cell` has `data-producer`, `data-consumer` and `data-state`, each framework's section
`id="fw-NAME"` (`section_ids`) and `data-framework`, each rule row `data-rule` and
`data-outcome`. A report of schema version 1 is rendered too (the keys it lacks are taken as
empty).
"""

from __future__ import annotations

import html
import re

from .rules import summarise, verdict

#: The states of a matrix cell, from the best: every case passes; some cases could not be
#: compared (unchecked); the consumer refused some (unsupported); some give wrong values
#: (fail); the pair crashed its process (crash). A cell takes the worst that applies.
PAIR_STATES = ("pass", "unchecked", "unsupported", "fail", "crash")

#: Outcomes that are findings, from the worst: the order of a framework's findings.
_FINDING_ORDER = ("crash", "hang", "fail-MUST", "error", "fail-SHOULD")
_OUTCOME_LABELS = {
    "pass": "PASS",
    "fail": "FAIL",
    "n/a": "N/A",
    "error": "ERROR",
    "crash": "CRASH",
    "hang": "HANG",
}
_VERDICT_CLASSES = {
    "conforms": ("ok", "✓"),
    "conforms (SHOULD failures)": ("warn", "!"),
    "breaks MUST rules": ("bad", "✗"),
    "could not be checked completely": ("error", "?"),
    "crashes or hangs": ("crash", "✕"),
}

_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
_CONTROL = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\ud800-\udfff]")


def _e(value) -> str:
    """`value` as escaped HTML text: markup escaped, colour codes dropped, other control
    characters written as `\\xNN`."""
    text = _ANSI.sub("", str(value))
    text = _CONTROL.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 256 else "?", text)
    return html.escape(text, quote=True)


def _url(value) -> str | None:
    """An http(s) URL, escaped for an attribute; None for anything else (javascript: ...)."""
    text = str(value or "").strip()
    if re.match(r"^https?://[^\s\"'<>]+$", text):
        return html.escape(text, quote=True)
    return None


def section_ids(names) -> dict:
    """Framework name -> the id of its section: "fw-" and the name with every character but
    ASCII letters, digits, "_" and "-" as "-", made unique with "-2", "-3", ... in order."""
    ids: dict = {}
    taken: set = set()
    for name in names:
        base = "fw-" + (re.sub(r"[^A-Za-z0-9_-]", "-", str(name)) or "-")
        candidate, number = base, 1
        while candidate in taken:
            number += 1
            candidate = f"{base}-{number}"
        taken.add(candidate)
        ids[name] = candidate
    return ids


def pair_state(pair: dict) -> str:
    """The state of a matrix pair (`PAIR_STATES`)."""
    if "error" in pair:
        return "crash"
    counts = pair.get("counts", {})
    if counts.get("fail") or pair.get("failures"):
        return "fail"
    if counts.get("unsupported"):
        return "unsupported"
    if counts.get("unchecked") or pair.get("unchecked"):
        return "unchecked"
    return "pass"


def _time(ns) -> str:
    if ns is None:
        return "not timed"
    if ns >= 1_000_000:
        return f"{ns / 1_000_000:.2f} ms"
    if ns >= 1000:
        return f"{ns / 1000:.2f} µs"
    return f"{ns:.0f} ns"


def _copy_word(zero_copy) -> str:
    return {True: "zero-copy", False: "copied"}.get(zero_copy, "zero-copy not known")


def _level(report: dict, rule_id: str) -> str:
    return report.get("rules", {}).get(rule_id, {}).get("level", "")


def _is_finding(result: dict) -> bool:
    return result.get("outcome") in ("fail", "error", "crash", "hang")


def _summary(report: dict, name: str) -> dict:
    """A framework's summary: the report's, with what a version-1 report lacks counted from
    its results."""
    results = report.get("frameworks", {}).get(name, [])

    counted = summarise(results, lambda rule_id: _level(report, rule_id) or "MUST")
    given = report.get("summary", {}).get(name, {})
    summary = {**counted, **given}
    if not given.get("verdict"):
        summary["verdict"] = verdict(summary)
    return summary


def _names(report: dict) -> list:
    """Every framework of the report: those checked, then those only in the matrix or the
    versions."""
    names = list(report.get("frameworks", {}))
    for pair in report.get("matrix", ()):
        names += [pair.get("producer"), pair.get("consumer")]
    names += list(report.get("versions", {}))
    return [n for n in dict.fromkeys(names) if n is not None]


def _version(report: dict, name: str) -> str:
    return report.get("versions", {}).get(name) or "version unknown"


# ---- pieces -----------------------------------------------------------------------------------


def _badge(outcome: str) -> str:
    label = _OUTCOME_LABELS.get(outcome, str(outcome).upper())
    css = re.sub(r"[^a-z]", "", str(outcome)) or "other"
    return f'<span class="badge o-{css}">{_e(label)}</span>'


def _verdict(verdict: str) -> str:
    css, symbol = _VERDICT_CLASSES.get(verdict, ("error", "?"))
    return f'<span class="verdict v-{css}"><b aria-hidden="true">{symbol}</b> {_e(verdict)}</span>'


def _name(name: str, href: str | None = None) -> str:
    """A framework's name, wrapped where long (preferably after "_", "." and "-"), the whole
    name in its tooltip too."""
    text = re.sub(r"([_.-])", r"\1<wbr>", _e(name))
    inner = f'<span class="name" title="{_e(name)}">{text}</span>'
    return f'<a href="#{href}">{inner}</a>' if href else inner


def _header(report: dict, ids: dict) -> str:
    facts = [
        ("dlbridge", report.get("dlbridge") or "version unknown"),
        ("Python", report.get("python") or "unknown"),
        ("platform", report.get("platform") or "unknown"),
    ]
    meta = "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
    versions = "".join(
        f'<li>{_name(n, ids.get(n))} <span class="ver">{_e(_version(report, n))}</span></li>'
        for n in _names(report)
    )
    return (
        '<header class="top"><div class="wrap">'
        '<p class="kicker">dlbridge check</p><h1>DLPack conformance report</h1>'
        f'<dl class="meta">{meta}</dl>'
        f'<ul class="versions" aria-label="frameworks checked">{versions}</ul>'
        "</div></header>"
    )


def _nav(report: dict, ids: dict) -> str:
    links = ['<a href="#summary">Summary</a>']
    if report.get("baseline"):
        links.insert(0, '<a href="#baseline">Against the baseline</a>')
    if report.get("matrix"):
        links.append('<a href="#matrix">Interop matrix</a>')
    links += [_name(n, ids[n]) for n in report.get("frameworks", {})]
    return f'<nav class="jump wrap" aria-label="sections">{"".join(links)}</nav>'


def _finding_label(entry: dict) -> str:
    if "rule" in entry:
        worse = f" (was {entry['was']})" if entry.get("was") else ""
        return f"{entry.get('framework')}: {entry['rule']}: {entry.get('outcome')}{worse}"
    if "case" in entry:
        return f"{entry.get('producer')} → {entry.get('consumer')}: {entry['case']}"
    return f"{entry.get('producer')} → {entry.get('consumer')}: {entry.get('error', 'crash')}"


def _baseline(report: dict, ids: dict, rule_ids: dict, pair_ids: dict) -> str:
    baseline = report.get("baseline")
    if not baseline:
        return ""
    regressions = baseline.get("regressions", [])
    fixed = baseline.get("fixed", [])

    def link(entry):
        if "rule" in entry:
            target = rule_ids.get((entry.get("framework"), entry["rule"]))
        else:
            target = pair_ids.get((entry.get("producer"), entry.get("consumer")))
        label = _e(_finding_label(entry))
        return f'<a href="#{target}">{label}</a>' if target else label

    parts = [
        '<section id="baseline" class="card baseline">',
        "<h2>Against the baseline</h2>",
        (
            f"<p>Baseline <code>{_e(baseline.get('file') or '(not named)')}</code>: "
            f'<strong class="count-new">{len(regressions)} new finding(s)</strong>, '
            f"{_e(baseline.get('known', 0))} known (marked KNOWN below), {len(fixed)} fixed.</p>"
        ),
    ]
    if regressions:
        items = "".join(
            f'<li><span class="badge o-new">NEW</span> {link(e)}</li>' for e in regressions
        )
        parts.append(f'<h3>Regressions</h3><ul class="findings">{items}</ul>')
    else:
        parts.append("<p>No regressions: every finding is one the baseline has.</p>")
    if fixed:
        items = "".join(f"<li>{_e(_finding_label(e))}</li>" for e in fixed)
        parts.append(f'<h3>Fixed since the baseline</h3><ul class="findings">{items}</ul>')
    missing = baseline.get("frameworks_not_in_baseline", [])
    if missing:
        names = ", ".join(_name(n, ids.get(n)) for n in missing)
        parts.append(f"<p>Not in the baseline (all their findings are new): {names}.</p>")
    parts.append("</section>")
    return "".join(parts)


#: The counts of a summary that are shown in red where not zero.
_TROUBLE = ("must_failures", "should_failures", "errors", "crashes", "hangs")


def _summary_table(report: dict, ids: dict) -> str:
    columns = [
        ("must_failures", "MUST fails"),
        ("should_failures", "SHOULD fails"),
        ("errors", "errors"),
        ("crashes", "crashes"),
        ("hangs", "hangs"),
        ("passed", "passed"),
        ("not_applicable", "n/a"),
    ]
    head = "".join(f'<th scope="col" class="num">{_e(label)}</th>' for _, label in columns)
    rows = []
    for name in report.get("frameworks", {}):
        summary = _summary(report, name)
        cells = "".join(
            f'<td class="num{" hot" * bool(summary.get(key) and key in _TROUBLE)}">'
            f"{_e(summary.get(key, 0))}</td>"
            for key, _ in columns
        )
        rows.append(
            f'<tr data-framework="{_e(name)}"><th scope="row">{_name(name, ids[name])}</th>'
            f'<td class="ver">{_e(_version(report, name))}</td>'
            f"<td>{_verdict(summary['verdict'])}</td>{cells}</tr>"
        )
    return (
        '<section id="summary" class="card"><h2>Summary</h2>'
        '<div class="scroll"><table class="summary"><thead><tr>'
        '<th scope="col">framework</th><th scope="col">version</th><th scope="col">verdict</th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div></section>"
    )


# ---- the interop matrix -----------------------------------------------------------------------


def _cell_label(pair: dict, state: str) -> tuple:
    """(main label, second line, tooltip) of a matrix cell."""
    route = f"{pair['producer']} → {pair['consumer']}"
    if state == "crash":
        return "✕ crash", "no result", f"{route}: {pair['error']}"
    counts = pair.get("counts", {})
    passed, failed = counts.get("pass", 0), counts.get("fail", len(pair.get("failures", {})))
    unsupported, unchecked = counts.get("unsupported", 0), counts.get("unchecked", 0)
    known = set(pair.get("known_failures", ()))
    parts = []
    if state == "fail":
        main = f"✗ {failed}"
        parts.append(f"{failed} fail" + (f" ({len(known)} known)" if known else ""))
    else:
        main = f"✓ {passed}"
    if state == "fail":
        main += f" · ✓ {passed}"
    elif unsupported:
        main += f" · ⊘ {unsupported}"
    elif unchecked:
        main += f" · ? {unchecked}"
    parts.append(f"{passed} pass")
    if unsupported:
        parts.append(f"{unsupported} unsupported")
    if unchecked:
        parts.append(f"{unchecked} not compared")
    second = f"{_copy_word(pair.get('zero_copy'))} · {_time(pair.get('ns'))}"
    tip = f"{route}: {', '.join(parts)}; {second}"
    if pair.get("note"):
        tip += f"; {pair['note']}"
    return main, second, tip


def _pair_detail(pair: dict, state: str, anchor: str) -> str:
    """One pair's detail (readable without JavaScript; the panel shows a copy)."""
    producer, consumer = pair["producer"], pair["consumer"]
    title = (
        f"<h4>{_name(producer)} → {_name(consumer)} "
        f'<span class="state s-{state}">{_e(state)}</span></h4>'
    )
    body = []
    if state == "crash":
        body.append(f'<p class="detail">{_e(pair["error"])}</p>')
    else:
        counts = pair.get("counts", {})
        facts = [
            ("pass", counts.get("pass", 0)),
            ("fail", counts.get("fail", 0)),
            ("unsupported", counts.get("unsupported", 0)),
            ("not compared", counts.get("unchecked", 0)),
            ("memory", _copy_word(pair.get("zero_copy"))),
            ("one float32 4x3 exchange", _time(pair.get("ns"))),
        ]
        body.append(
            '<dl class="facts">'
            + "".join(f"<div><dt>{_e(k)}</dt><dd>{_e(v)}</dd></div>" for k, v in facts)
            + "</dl>"
        )
        known = set(pair.get("known_failures", ()))
        for key, heading in (("failures", "Wrong values"), ("unchecked", "Not compared")):
            cases = pair.get(key, {})
            if not cases:
                continue
            rows = "".join(
                f"<tr><td><code>{_e(case)}</code>"
                + (' <span class="badge o-known">KNOWN</span>' if case in known else "")
                + f'</td><td class="detail">{_e(detail)}</td></tr>'
                for case, detail in cases.items()
            )
            body.append(
                f'<h5>{heading}</h5><table class="cases"><thead><tr><th>case</th>'
                f"<th>what was seen</th></tr></thead><tbody>{rows}</tbody></table>"
            )
    if pair.get("note"):
        body.append(f'<p class="note">Note: {_e(pair["note"])}</p>')
    if pair.get("known"):
        body.append(
            '<p class="note"><span class="badge o-known">KNOWN</span> the baseline\'s '
            "pair crashed too</p>"
        )
    return f'<article class="pair p-{state}" id="{anchor}">{title}{"".join(body)}</article>'


_MATRIX_LEDE = (
    "Rows produce, columns consume. Each cell counts the dtype &times; layout cases (a "
    "module:factory: its one tensor): passed, wrong values, refused by the consumer, not "
    "compared. Its second line says whether the consumer shares the producer's memory, and "
    "the median time of one float32 4&times;3 exchange. Select a cell for its detail."
)
_LEGEND = (
    ("pass", "✓ 36", "every case passes"),
    ("unchecked", "✓ 30 · ? 6", "some cases not compared (values not readable here)"),
    ("unsupported", "✓ 32 · ⊘ 4", "the consumer refuses some cases"),
    ("fail", "✗ 2 · ✓ 34", "some cases give wrong values"),
    ("crash", "✕ crash", "the pair crashed its process"),
)


def _matrix(report: dict) -> tuple:
    """(the matrix section, (producer, consumer) -> the anchor of its detail)."""
    pairs = report.get("matrix", [])
    if not pairs:
        return "", {}
    producers = list(dict.fromkeys(p["producer"] for p in pairs))
    consumers = list(dict.fromkeys(p["consumer"] for p in pairs))
    by_route = {(p["producer"], p["consumer"]): p for p in pairs}
    anchors = {route: f"pair-{index}" for index, route in enumerate(by_route, 1)}
    head = "".join(f'<th scope="col" class="consumer">{_name(c)}</th>' for c in consumers)
    rows = []
    for producer in producers:
        cells = []
        for consumer in consumers:
            pair = by_route.get((producer, consumer))
            if pair is None:
                cells.append('<td><span class="cell s-none" title="not run">—</span></td>')
                continue
            state = pair_state(pair)
            main, second, tip = _cell_label(pair, state)
            known_cases = set(pair.get("known_failures", ()))
            all_known = state == "fail" and set(pair.get("failures", {})) <= known_cases
            known = " known" if pair.get("known") or all_known else ""
            cells.append(
                f'<td><a class="cell s-{state}{known}" href="#{anchors[(producer, consumer)]}" '
                f'data-producer="{_e(producer)}" data-consumer="{_e(consumer)}" '
                f'data-state="{state}" title="{_e(tip)}">'
                f'<span class="main">{_e(main)}</span>'
                f'<span class="sub">{_e(second)}</span></a></td>'
            )
        row_head = f'<th scope="row" class="producer">{_name(producer)}</th>'
        rows.append(f"<tr>{row_head}{''.join(cells)}</tr>")
    legend = "".join(
        f'<li><span class="swatch s-{state}">{_e(label)}</span> {_e(text)}</li>'
        for state, label, text in _LEGEND
    )
    notable, quiet = [], []
    for route, pair in by_route.items():
        state = pair_state(pair)
        detail = _pair_detail(pair, state, anchors[route])
        (quiet if state == "pass" and not pair.get("note") else notable).append(detail)
    details = "".join(notable) or "<p>Every pair passes every case.</p>"
    if quiet:
        details += (
            f'<details class="quiet"><summary>{len(quiet)} pair(s) where every case passes'
            f"</summary>{''.join(quiet)}</details>"
        )
    section = (
        '<section id="matrix" class="card"><h2>Interop matrix</h2>'
        f'<p class="lede">{_MATRIX_LEDE}</p>'
        f'<ul class="legend" aria-label="legend">{legend}</ul>'
        '<div class="scroll"><table class="grid"><thead><tr>'
        '<th scope="col" class="corner"><span>producer ↓</span> <span>consumer →</span></th>'
        f"{head}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
        '<div id="pair-panel" class="panel" hidden aria-live="polite"></div>'
        f'<h3>Pairs in detail</h3><div class="pairs">{details}</div></section>'
    )
    return section, anchors


# ---- a framework's rules ----------------------------------------------------------------------


def _severity(report: dict, result: dict) -> int:
    outcome = result.get("outcome")
    if outcome == "fail":
        outcome = f"fail-{_level(report, result.get('rule')) or 'MUST'}"
    return _FINDING_ORDER.index(outcome) if outcome in _FINDING_ORDER else len(_FINDING_ORDER)


def _cites(rule: dict) -> str:
    parts = []
    if rule.get("section"):
        parts.append(f'<div class="where">{_e(rule["section"])}</div>')
    for cite in rule.get("cites", ()):
        label = " · ".join(str(cite.get(k)) for k in ("document", "section") if cite.get(k))
        url = _url(cite.get("url"))
        if url:
            parts.append(f'<a class="cite" href="{url}" rel="noopener noreferrer">{_e(label)}</a>')
        else:
            parts.append(f'<span class="cite">{_e(label)}</span>')
    return "".join(parts)


def _rule_row(report: dict, result: dict, row_id: str, *, follower: bool, show_fix: bool) -> str:
    rule_id = str(result.get("rule"))
    rule = report.get("rules", {}).get(rule_id, {})
    outcome = str(result.get("outcome"))
    level = rule.get("level", "")
    marks = ""
    if result.get("known"):
        marks += ' <span class="badge o-known">KNOWN</span>'
    elif report.get("baseline") and _is_finding(result):
        marks += ' <span class="badge o-new">NEW</span>'
    caused = ""
    if result.get("caused_by"):
        caused = f'<div class="follows">↳ follows from <code>{_e(result["caused_by"])}</code></div>'
    text = f'<div class="rule-text">{_e(rule["text"])}</div>' if rule.get("text") else ""
    fix = ""
    if show_fix:
        fix = f'<td class="hint">{_e(rule.get("hint") or "")}</td>'
    classes = "follower" if follower else "root"
    if result.get("known"):
        classes += " known"
    attributes = (
        f'id="{row_id}" class="{classes}" data-rule="{_e(rule_id)}" data-outcome="{_e(outcome)}"'
    )
    if result.get("caused_by"):
        attributes += f' data-caused-by="{_e(result["caused_by"])}"'
    return (
        f"<tr {attributes}><td>{_badge(outcome)}{marks}</td>"
        f'<td><span class="level l-{_e(level.lower())}">{_e(level or "?")}</span></td>'
        f'<td class="rule">{caused}<code>{_e(rule_id)}</code>{text}</td>'
        f"<td>{_cites(rule)}</td>"
        f'<td class="detail">{_e(result.get("detail", ""))}</td>{fix}</tr>'
    )


def _rules_table(rows: list, show_fix: bool) -> str:
    fix = '<th scope="col">fix</th>' if show_fix else ""
    return (
        '<div class="scroll"><table class="rules"><thead><tr>'
        '<th scope="col">outcome</th><th scope="col">level</th><th scope="col">rule</th>'
        '<th scope="col">where the standard says it</th><th scope="col">what was seen</th>'
        f"{fix}</tr></thead><tbody>{''.join(rows)}</tbody></table></div>"
    )


def _grouped_findings(report: dict, results: list) -> list:
    """[(root, [followers])], most severe first; new findings before known ones."""
    found = [r for r in results if _is_finding(r)]
    present = {r.get("rule") for r in found}
    roots = [r for r in found if r.get("caused_by") not in present]
    followers: dict = {}
    for result in found:
        if result.get("caused_by") in present:
            followers.setdefault(result["caused_by"], []).append(result)
    roots.sort(key=lambda r: (bool(r.get("known")), _severity(report, r)))
    return [(root, followers.get(root.get("rule"), [])) for root in roots]


def _framework(report: dict, name: str, section_id: str, rule_ids: dict) -> str:
    results = report.get("frameworks", {}).get(name, [])
    summary = _summary(report, name)

    def row_id(result):
        return rule_ids[(name, result.get("rule"))]

    parts = [
        f'<section class="card framework" id="{section_id}" data-framework="{_e(name)}">',
        (
            f'<h2><span class="fwname">{_e(name)}</span> '
            f'<span class="ver">{_e(_version(report, name))}</span></h2>'
        ),
        (
            f'<p class="status">{_verdict(summary["verdict"])} '
            f'<span class="counts">{_e(summary["must_failures"])} MUST and '
            f"{_e(summary['should_failures'])} SHOULD failure(s), "
            f"{_e(summary['errors'])} error(s), {_e(summary['crashes'])} crash(es), "
            f"{_e(summary['hangs'])} hang(s); {_e(summary['passed'])} passed, "
            f"{_e(summary['not_applicable'])} n/a</span></p>"
        ),
    ]
    grouped = _grouped_findings(report, results)
    rules = report.get("rules", {})
    # The column of fix hints, where a finding's rule has one (a version-1 report has none).
    hints = any(
        rules.get(r.get("rule"), {}).get("hint") for root, more in grouped for r in (root, *more)
    )
    findings = []
    for root, followers in grouped:
        findings.append(_rule_row(report, root, row_id(root), follower=False, show_fix=hints))
        findings += [
            _rule_row(report, f, row_id(f), follower=True, show_fix=hints) for f in followers
        ]
    if findings:
        parts.append(f"<h3>Findings</h3>{_rules_table(findings, show_fix=hints)}")
    else:
        parts.append(
            '<p class="clean">No findings: every rule checked passes or does not apply.</p>'
        )
    for outcome, label in (("pass", "passed"), ("n/a", "not applicable (why in each row)")):
        rows = [
            _rule_row(report, r, row_id(r), follower=False, show_fix=False)
            for r in results
            if r.get("outcome") == outcome
        ]
        if rows:
            parts.append(
                f'<details class="more" data-outcome="{_e(outcome)}"><summary>{len(rows)} '
                f"{label}</summary>{_rules_table(rows, show_fix=False)}</details>"
            )
    others = [r for r in results if r.get("outcome") not in ("pass", "n/a") and not _is_finding(r)]
    if others:
        rows = [_rule_row(report, r, row_id(r), follower=False, show_fix=False) for r in others]
        parts.append(f"<h3>Other outcomes</h3>{_rules_table(rows, show_fix=False)}")
    parts.append("</section>")
    return "".join(parts)


# ---- the page ---------------------------------------------------------------------------------

_CSS = """
:root{--ink:#1f2933;--muted:#52606d;--line:#d9e2ec;--bg:#f5f7fa;--card:#fff;--accent:#1d4ed8;
--pass-bg:#dcfce7;--pass-fg:#14532d;--pass-line:#86efac;--unc-bg:#e0f2fe;--unc-fg:#0c4a6e;
--unc-line:#7dd3fc;--uns-bg:#fef3c7;--uns-fg:#713f12;--uns-line:#fcd34d;--fail-bg:#fee2e2;
--fail-fg:#7f1d1d;--fail-line:#fca5a5;--crash-bg:#7f1d1d;--crash-fg:#fff;--err-bg:#ede9fe;
--err-fg:#4c1d95;--na-bg:#eef2f6;--na-fg:#3e4c59;
font-family:system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans","DejaVu Sans",
"Helvetica Neue",Arial,sans-serif;color:var(--ink);background:var(--bg);line-height:1.45}
*{box-sizing:border-box}body{margin:0}
code,.mono{font-family:ui-monospace,SFMono-Regular,Menlo,Consolas,"DejaVu Sans Mono",monospace;
font-size:.9em}
a{color:var(--accent)}a:focus-visible{outline:3px solid #f59e0b;outline-offset:2px}
.wrap{max-width:1240px;margin:0 auto;padding:0 24px}
.top{background:#102a43;color:#f0f4f8;padding:22px 0 18px}
.top h1{margin:0 0 10px;font-size:1.7rem;font-weight:650;letter-spacing:-.01em}
.kicker{margin:0;text-transform:uppercase;letter-spacing:.12em;font-size:.75rem;color:#9fb3c8}
.meta{display:flex;flex-wrap:wrap;gap:6px 28px;margin:0 0 12px}.meta div{display:flex;gap:8px}
.meta dt{color:#9fb3c8}.meta dd{margin:0;font-weight:600;overflow-wrap:anywhere}
.versions{list-style:none;margin:0;padding:0;display:flex;flex-wrap:wrap;gap:8px}
.versions li{background:#243b53;border-radius:999px;padding:3px 12px;max-width:100%;
display:flex;gap:8px;align-items:baseline}
.versions a{color:#fff;text-decoration:none;min-width:0}.versions .ver{color:#bcccdc}
.name{overflow-wrap:anywhere}
.jump{display:flex;flex-wrap:wrap;gap:6px 18px;padding-top:14px;padding-bottom:4px}
.jump a{text-decoration:none;font-weight:600}
main.wrap{padding-bottom:40px}
.card{background:var(--card);border:1px solid var(--line);border-radius:10px;padding:18px 22px;
margin:18px 0;box-shadow:0 1px 2px rgba(16,42,67,.06)}
h2{margin:0 0 12px;font-size:1.3rem}h3{margin:18px 0 8px;font-size:1.05rem}
h4{margin:0 0 8px;font-size:1rem}h5{margin:10px 0 4px;font-size:.9rem;color:var(--muted)}
.lede{color:var(--muted);margin-top:0;max-width:75em}
.scroll{overflow-x:auto}
table{border-collapse:collapse;width:100%}
th,td{text-align:left;vertical-align:top;padding:7px 10px;border-bottom:1px solid var(--line)}
thead th{font-size:.8rem;text-transform:uppercase;letter-spacing:.04em;color:var(--muted);
border-bottom:2px solid var(--line);white-space:nowrap}
.num{text-align:right;font-variant-numeric:tabular-nums}td.hot{color:var(--fail-fg);font-weight:700}
.summary td.ver,.framework .ver{color:var(--muted)}
.summary thead th{white-space:normal;vertical-align:bottom}.summary td.ver{white-space:nowrap}
.summary th,.summary td{padding:7px 8px}.summary .name{display:inline-block;max-width:14em}
.badge{display:inline-block;font-size:.72rem;font-weight:700;letter-spacing:.04em;
padding:2px 7px;border-radius:4px;border:1px solid transparent;white-space:nowrap}
.o-pass{background:var(--pass-bg);color:var(--pass-fg);border-color:var(--pass-line)}
.o-fail{background:var(--fail-bg);color:var(--fail-fg);border-color:var(--fail-line)}
.o-na{background:var(--na-bg);color:var(--na-fg);border-color:var(--line)}
.o-error{background:var(--err-bg);color:var(--err-fg);border-color:#c4b5fd}
.o-crash,.o-hang{background:var(--crash-bg);color:var(--crash-fg)}
.o-hang{background:#7c2d12}
.o-known{background:#fff;color:var(--muted);border-color:#9aa5b1}
.o-new{background:#1d4ed8;color:#fff}
.verdict{display:inline-flex;gap:6px;align-items:baseline;font-weight:600;padding:2px 10px;
border-radius:999px;white-space:nowrap}
.v-ok{background:var(--pass-bg);color:var(--pass-fg)}.v-warn{background:var(--uns-bg);color:var(--uns-fg)}
.v-bad{background:var(--fail-bg);color:var(--fail-fg)}.v-error{background:var(--err-bg);color:var(--err-fg)}
.v-crash{background:var(--crash-bg);color:var(--crash-fg)}
.level{font-size:.78rem;font-weight:700;letter-spacing:.03em}.l-must{color:#7f1d1d}
.l-should{color:#713f12}
.rules td.rule{min-width:15em}.rules code{font-weight:600}
.rule-text{color:var(--muted);font-size:.86rem;margin-top:2px;max-width:32em}
.where{font-size:.86rem}.cite{display:block;font-size:.82rem}
td.detail,p.detail,.detail{white-space:pre-wrap;overflow-wrap:anywhere;font-size:.9rem;max-width:34em}
td.hint{font-size:.88rem;max-width:22em}
tr.follower td:first-child{padding-left:26px}tr.follower{background:#fbfcfd}
.follows{font-size:.8rem;color:var(--muted);margin-bottom:2px}
tr.known{background:#f8fafc}
details.more{margin-top:10px}details>summary{cursor:pointer;font-weight:600;color:var(--muted);
padding:6px 0}
.status{display:flex;flex-wrap:wrap;gap:8px 14px;align-items:baseline}.counts{color:var(--muted)}
.fwname{overflow-wrap:anywhere}
.legend{list-style:none;padding:0;margin:0 0 14px;display:flex;flex-wrap:wrap;gap:8px 20px;
font-size:.88rem;color:var(--muted)}
.swatch{display:inline-block;padding:1px 8px;border-radius:5px;font-weight:700;border:1px solid}
.grid{width:auto;border-collapse:separate;border-spacing:6px}
.grid th,.grid td{border:0;padding:0;vertical-align:middle}
.grid thead th{text-transform:none;letter-spacing:0;font-size:.88rem;color:var(--ink);
padding:0 4px 4px;text-align:center}
.grid .name{display:inline-block;max-width:11em}
.grid th.producer{text-align:right;padding-right:8px;font-weight:600}
.grid .corner{font-weight:400;color:var(--muted);font-size:.75rem;text-align:left}
.grid .corner span{display:block}
.cell{display:flex;flex-direction:column;justify-content:center;align-items:center;
min-width:9.5em;min-height:3.6em;padding:6px 10px;border-radius:8px;border:1px solid;
text-decoration:none;font-variant-numeric:tabular-nums;transition:transform .08s}
a.cell:hover{transform:translateY(-1px);box-shadow:0 2px 6px rgba(16,42,67,.18)}
a.cell[aria-current]{outline:3px solid var(--accent);outline-offset:2px}
.cell .main{font-weight:700;font-size:1rem}.cell .sub{font-size:.74rem;opacity:.9}
.s-pass{background:var(--pass-bg);color:var(--pass-fg);border-color:var(--pass-line)}
.s-unchecked{background:var(--unc-bg);color:var(--unc-fg);border-color:var(--unc-line)}
.s-unsupported{background:var(--uns-bg);color:var(--uns-fg);border-color:var(--uns-line)}
.s-fail{background:var(--fail-bg);color:var(--fail-fg);border-color:var(--fail-line)}
.s-crash{background:var(--crash-bg);color:var(--crash-fg);border-color:#450a0a;
background-image:repeating-linear-gradient(135deg,transparent 0 8px,rgba(255,255,255,.09) 8px 16px)}
.s-none{background:#fff;color:var(--muted);border-style:dashed;border-color:var(--line)}
.cell.known{border-style:dashed}
.state{font-size:.72rem;font-weight:700;text-transform:uppercase;padding:1px 7px;border-radius:4px;
border:1px solid;vertical-align:middle}
.pairs{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:12px}
.pairs details.quiet{grid-column:1/-1}
.pair{border:1px solid var(--line);border-left-width:5px;border-radius:8px;padding:10px 14px;
min-width:0}
.p-pass{border-left-color:var(--pass-line)}.p-unchecked{border-left-color:var(--unc-line)}
.p-unsupported{border-left-color:var(--uns-line)}.p-fail{border-left-color:#ef4444}
.p-crash{border-left-color:var(--crash-bg)}
.facts{display:flex;flex-wrap:wrap;gap:4px 16px;margin:0;font-size:.86rem}
.facts div{display:flex;gap:6px}.facts dt{color:var(--muted)}.facts dd{margin:0;font-weight:600}
.cases td,.cases th{padding:4px 6px;font-size:.86rem}
.note{font-size:.86rem;color:var(--muted)}
.panel{border:2px solid var(--accent);border-radius:10px;padding:12px 16px;margin:12px 0;
background:#f8fafc;position:relative}
.panel .close{position:absolute;top:8px;right:10px}
.baseline{border-color:#93c5fd}.findings{margin:0;padding-left:18px}.findings li{margin:3px 0}
.count-new{color:#1d4ed8}
.clean{color:var(--pass-fg);font-weight:600}
footer{color:var(--muted);font-size:.85rem;padding:10px 0 30px}
@media print{.jump,.panel{display:none}.card{break-inside:avoid}}
"""

_JS = """
(function () {
  "use strict";
  var panel = document.getElementById("pair-panel");
  var current = null;
  function hide() {
    if (!panel) return;
    panel.hidden = true;
    panel.textContent = "";
    if (current) current.removeAttribute("aria-current");
    current = null;
  }
  function show(cell) {
    var target = document.getElementById(cell.getAttribute("href").slice(1));
    if (!panel || !target) return false;
    if (current) current.removeAttribute("aria-current");
    panel.textContent = "";
    var close = document.createElement("button");
    close.type = "button";
    close.className = "close";
    close.textContent = "Close";
    close.addEventListener("click", hide);
    panel.appendChild(close);
    Array.prototype.forEach.call(target.childNodes, function (node) {
      panel.appendChild(node.cloneNode(true));
    });
    panel.hidden = false;
    cell.setAttribute("aria-current", "true");
    current = cell;
    return true;
  }
  document.addEventListener("click", function (event) {
    var cell = event.target.closest ? event.target.closest("a.cell") : null;
    if (cell && show(cell)) {
      event.preventDefault();
    }
  });
  document.addEventListener("keydown", function (event) {
    if (event.key === "Escape") hide();
  });
  if (location.hash.indexOf("#pair-") === 0) {
    var cell = document.querySelector('a.cell[href="' + location.hash + '"]');
    if (cell) show(cell);
  }
  document.documentElement.classList.add("js");
})();
"""

#: No resource from anywhere but the page itself.
_CSP = (
    "default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; "
    "img-src data:; base-uri 'none'; form-action 'none'"
)


def render_html(report: dict) -> str:
    """The report (a dict of schema version 2, or 1) as one self-contained HTML page."""
    frameworks = report.get("frameworks", {})
    ids = section_ids(_names(report))
    rule_ids = {}
    for name, results in frameworks.items():
        for index, result in enumerate(results):
            rule = re.sub(r"[^A-Za-z0-9_-]", "-", str(result.get("rule")))
            rule_ids[(name, result.get("rule"))] = f"{ids[name]}--{rule}-{index}"
    matrix, pair_ids = _matrix(report)
    names = ", ".join(frameworks) or "no framework"
    body = [
        _header(report, ids),
        _nav(report, ids),
        '<main class="wrap">',
        _baseline(report, ids, rule_ids, pair_ids),
        _summary_table(report, ids),
        matrix,
        *(_framework(report, name, ids[name], rule_ids) for name in frameworks),
        "</main>",
        (
            f'<footer class="wrap">Written by dlbridge check {_e(report.get("dlbridge") or "")} '
            f"(report schema version {_e(report.get('schema_version', 1))}). A rule in full: "
            "<code>dlbridge check --explain RULE</code>.</footer>"
        ),
    ]
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en"><head><meta charset="utf-8">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
        f"<title>dlbridge check: {_e(names)}</title>"
        f"<style>{_CSS}</style></head>\n<body>\n"
        + "\n".join(part for part in body if part)
        + f"\n<script>{_JS}</script>\n</body></html>\n"
    )
