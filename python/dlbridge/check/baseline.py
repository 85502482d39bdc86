"""A report of `dlbridge check` compared with an earlier one, its baseline (`--baseline FILE`).

A *finding* is what makes a run fail: a rule of a framework whose outcome is fail, error,
crash or hang; a case of the interop matrix that gives wrong values; a matrix pair that
crashed. Each finding of the report that the baseline has too is *known* and marked so in
place (`"known": True` on the rule's result or on the crashed pair, the case's id in the pair's
`"known_failures"` list); the others are *regressions*. A finding whose outcome got worse
(`OUTCOME_RANK`: error, fail, hang, crash, from the mildest) is a regression too, and says what
it was. A finding of the baseline that the report no longer has, where the report checked it
again, is *fixed*.

The baseline is a report as `dlbridge check --json` writes it: schema version 2, or version 1
(no `schema_version`), where a crash or a hang was outcome "fail" with a detail starting
"crash:" and a check not run after one was "fail" with a detail starting "not run:".
"""

from __future__ import annotations

#: The schema versions of a report this module reads as a baseline.
READABLE_VERSIONS = (1, 2)

#: The outcomes of a rule that are findings, from the mildest: a finding whose outcome moves
#: up this order (fail -> crash) is a regression, one that moves down (crash -> fail) is known.
#: "error" (the checker could not judge the rule) is the mildest: judging it now and finding a
#: failure is news.
OUTCOME_RANK = {"error": 0, "fail": 1, "hang": 2, "crash": 3}


def _schema_version(report: dict, what: str) -> int:
    """The schema version of `report` (1 where the key is absent); ValueError for anything
    that is not a report this module reads."""
    if not isinstance(report, dict) or not isinstance(report.get("frameworks"), dict):
        raise ValueError(f"the {what} is not a report of dlbridge check (no 'frameworks')")
    version = report.get("schema_version", 1)
    if version not in READABLE_VERSIONS:
        raise ValueError(
            f"the {what} has schema_version {version!r}; this dlbridge reads versions "
            f"{', '.join(map(str, READABLE_VERSIONS))}"
        )
    return version


def outcome_of(result: dict, schema_version: int = 2) -> str:
    """The outcome of one rule's result, as schema version 2 names it: in a version-1 report
    a crash, a hang and a check not run were all "fail", told apart by the detail."""
    outcome = result.get("outcome", "")
    if schema_version >= 2 or outcome != "fail":
        return outcome
    detail = str(result.get("detail", ""))
    if detail.startswith("crash:"):
        return "hang" if detail.rstrip().endswith("(hung)") else "crash"
    if detail.startswith("not run:"):
        return "error"
    return outcome


def findings(report: dict) -> dict:
    """Every finding of `report` (schema version 1 or 2), keyed so that the same finding of
    two reports has the same key: ("rule", framework, rule id) -> outcome, ("case", producer,
    consumer, case id) -> "fail", ("pair", producer, consumer) -> "crash"."""
    version = _schema_version(report, "report")
    found: dict = {}
    for name, results in report["frameworks"].items():
        for result in results:
            outcome = outcome_of(result, version)
            if outcome in OUTCOME_RANK:
                found[("rule", name, result["rule"])] = outcome
    for pair in report.get("matrix", ()):
        producer, consumer = pair["producer"], pair["consumer"]
        if "error" in pair:
            found[("pair", producer, consumer)] = "crash"
        for case in pair.get("failures", {}):
            found[("case", producer, consumer, case)] = "fail"
    return found


def _checked(report: dict) -> set:
    """The keys under which `report` has a result, finding or not: ("rule", framework, rule
    id) for each result, ("pair", producer, consumer) for each pair of the matrix that ran
    (its cases all compared), so that a finding of the baseline is called fixed only where
    the report looked again."""
    checked = {
        ("rule", name, result["rule"])
        for name, results in report["frameworks"].items()
        for result in results
    }
    checked |= {
        ("pair", pair["producer"], pair["consumer"])
        for pair in report.get("matrix", ())
        if "error" not in pair
    }
    return checked


def _as_entry(key: tuple, outcome: str, pairs: dict) -> dict:
    """A finding's entry in the lists of `report["baseline"]`."""
    if key[0] == "rule":
        return {"framework": key[1], "rule": key[2], "outcome": outcome}
    if key[0] == "case":
        return {"producer": key[1], "consumer": key[2], "case": key[3]}
    pair = pairs.get((key[1], key[2]), {})
    return {"producer": key[1], "consumer": key[2], "error": pair.get("error") or "crash"}


def _unmark(report: dict) -> None:
    """Removes the marks of an earlier comparison, so that comparing twice marks once."""
    for results in report["frameworks"].values():
        for result in results:
            result.pop("known", None)
    for pair in report.get("matrix", ()):
        pair.pop("known", None)
        pair.pop("known_failures", None)


def compare(report: dict, baseline: dict) -> dict:
    """Compares `report` (schema version 2) with `baseline` (an earlier report, version 1 or
    2): marks each finding of `report` that the baseline has as known, in place (`"known":
    True` on a rule's result or a crashed matrix pair, `"known_failures": [case ids]` on a
    pair), and sets and returns `report["baseline"]`:

    - "file": None (the command line sets the baseline's path);
    - "known": how many findings of the report are known;
    - "regressions": the report's other findings, in the report's order: `{"framework",
      "rule", "outcome"}` (with `"was"`, the baseline's outcome, where it got worse),
      `{"producer", "consumer", "case"}` or, for a crashed pair, `{"producer", "consumer",
      "error"}`;
    - "fixed": the baseline's findings that the report checked again and no longer has, in
      the same forms (their baseline's outcome);
    - "frameworks_not_in_baseline": the report's frameworks that the baseline does not have
      (all their findings are regressions).

    Raises ValueError where either is not a report of a schema version this module reads."""
    _schema_version(report, "report")
    _schema_version(baseline, "baseline")
    _unmark(report)
    before = findings(baseline)
    now = findings(report)
    pairs = {(p["producer"], p["consumer"]): p for p in report.get("matrix", ())}
    regressions: list = []
    known = 0
    for name, results in report["frameworks"].items():
        for result in results:
            key = ("rule", name, result["rule"])
            if key not in now:
                continue
            outcome, was = now[key], before.get(key)
            if was is not None and OUTCOME_RANK[outcome] <= OUTCOME_RANK[was]:
                result["known"] = True
                known += 1
                continue
            entry = _as_entry(key, outcome, pairs)
            if was is not None:
                entry["was"] = was
            regressions.append(entry)
    for pair in report.get("matrix", ()):
        producer, consumer = pair["producer"], pair["consumer"]
        if "error" in pair:
            if ("pair", producer, consumer) in before:
                pair["known"] = True
                known += 1
            else:
                regressions.append(_as_entry(("pair", producer, consumer), "crash", pairs))
            continue
        known_cases = []
        for case in pair.get("failures", {}):
            key = ("case", producer, consumer, case)
            if key in before:
                known_cases.append(case)
            else:
                regressions.append(_as_entry(key, "fail", pairs))
        if known_cases:
            pair["known_failures"] = known_cases
            known += len(known_cases)
    checked = _checked(report)
    base_pairs = {(p["producer"], p["consumer"]): p for p in baseline.get("matrix", ())}
    fixed = []
    for key, outcome in before.items():
        if key in now:
            continue
        looked = ("rule", *key[1:]) if key[0] == "rule" else ("pair", key[1], key[2])
        if looked in checked:
            fixed.append(_as_entry(key, outcome, base_pairs))
    summary = {
        "file": None,
        "known": known,
        "regressions": regressions,
        "fixed": fixed,
        "frameworks_not_in_baseline": [
            name for name in report["frameworks"] if name not in baseline["frameworks"]
        ],
    }
    report["baseline"] = summary
    return summary
