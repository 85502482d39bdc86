"""`dlbridge check [NAME ...]`: runs the checks, each framework in processes of its own, and
reports them (terminal, Markdown, JSON, JUnit XML, HTML; `EXIT_STATUS` says what the exit
status means).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterable

from . import consumer_checks, device_checks, exchange_checks, producer_checks
from .baseline import compare, findings
from .frameworks import FRAMEWORKS, is_known
from .report import SCHEMA_VERSION, render_json, render_markdown, render_text
from .report_html import render_html
from .report_junit import render_junit
from .rules import (
    CRASH,
    ERROR,
    FINDINGS,
    HANG,
    MUST,
    RULES,
    SHOULD,
    attach_causes,
    explain,
    list_rules,
    summarise,
)

#: What the exit status says, for `--help` and the README.
EXIT_STATUS = """exit status:
  0  every framework conforms: no MUST rule broken (with --fail-on should, no SHOULD rule
     either), no check crashed, hung or could not complete (with --baseline: nothing new
     against the baseline)
  1  a framework breaks a rule at the --fail-on level, crashes or hangs in a check, or a
     check could not complete (outcome "error": the checker could not judge the rule,
     which is never taken for a pass)
  2  nothing was checked: a usage error, a framework that is not installed or unknown, or a
     user's framework that cannot be checked at all (its module or factory does not import,
     the factory raises, or it returns something without __dlpack__)"""


class FrameworkUnusable(Exception):
    """A framework named on the command line that cannot be checked at all (exit status 2)."""


def _stream(job: dict, timeout: float, on_line) -> tuple:
    """Runs a worker; calls `on_line` for each JSON message. A worker silent for `timeout`
    seconds (one check, or one matrix pair) is taken as hung and killed. Returns (finished,
    what was running when it stopped, why it stopped)."""
    import selectors

    command = [sys.executable, "-m", "dlbridge.check.worker", json.dumps(job)]
    env = dict(os.environ, PYTHONUNBUFFERED="1", TF_CPP_MIN_LOG_LEVEL="3")
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=env)
    running, finished, pending = None, False, b""
    deadline = time.monotonic() + timeout
    descriptor = process.stdout.fileno()
    selector = selectors.DefaultSelector()
    selector.register(descriptor, selectors.EVENT_READ)
    try:
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                process.kill()
                process.wait()
                return False, running, f"no answer within {timeout:.0f} s (hung)"
            if not selector.select(timeout=min(left, 1.0)):
                continue
            # Raw reads: a buffered reader could hold complete lines that `select` no longer
            # announces, and a hang would be blamed on the wrong check.
            chunk = os.read(descriptor, 1 << 16)
            if not chunk:
                break
            deadline = time.monotonic() + timeout  # the timeout is per check
            pending += chunk
            *lines, pending = pending.split(b"\n")
            for line in lines:
                try:
                    message = json.loads(line)
                except ValueError:
                    continue  # a framework printing to stdout
                if not isinstance(message, dict):
                    continue
                if "running" in message:
                    running = message["running"]
                elif "result" in message:
                    on_line(message["result"])
                    running = None
                elif message.get("done"):
                    finished = True
    finally:
        selector.close()
        if process.poll() is None:
            process.kill()
        process.wait()
        process.stdout.close()
    if finished:
        return True, None, None
    code = process.returncode
    why = f"the process died (signal {-code})" if code and code < 0 else f"exit status {code}"
    return False, running, why


def check_framework(name: str, timeout: float, only: Iterable[str] | None = None) -> list:
    """Every rule's result for one framework (or the rules of `only`); a crash or hang is the
    outcome of the check that was running, and the rest goes on in a new process."""
    order = [
        *producer_checks.CHECKS,
        *exchange_checks.CHECKS,
        *device_checks.CHECKS,
        *consumer_checks.CHECKS,
    ]
    if only is not None:
        wanted = set(only)
        order = [rule_id for rule_id in order if rule_id in wanted]
    results: dict = {}
    skipped = sorted(set(RULES) - set(order))
    while True:
        job = {"kind": "framework", "name": name, "skip": skipped + sorted(results)}
        done, running, why = _stream(job, timeout, lambda r: results.__setitem__(r["rule"], r))
        if done:
            break
        outcome = HANG if why.endswith("(hung)") else CRASH
        if running is None or running in results:
            for rule_id in order:
                if rule_id not in results:
                    results[rule_id] = {
                        "rule": rule_id,
                        "outcome": ERROR,
                        "detail": f"not run: {why} before this check",
                    }
            break
        results[running] = {"rule": running, "outcome": outcome, "detail": f"{outcome}: {why}"}
    return [results[r] for r in order if r in results]


def preflight(name: str, timeout: float) -> dict:
    """What a worker process finds of a user's framework (`worker._preflight_job`): its
    display name, whether it has a consumer, its version. Raises FrameworkUnusable saying why
    it cannot be checked at all."""
    got: list = []
    _, _, why = _stream({"kind": "preflight", "name": name}, timeout, got.append)
    if not got:
        raise FrameworkUnusable(f"cannot check {name}: the process stopped ({why}) as it was made")
    if not got[0]["usable"]:
        raise FrameworkUnusable(f"cannot check {name}: {got[0]['why']}")
    return got[0]


def run_matrix(names: list, timeout: float, progress, consumers: list | None = None) -> list:
    """Every producer x consumer pair among `names` (consumers: `consumers`, by default the
    names that are not a `module:factory`). One process per producer; a pair that crashes its
    process is run again alone, so that a crash due to two frameworks in one process is told
    apart from a crash of the pair itself."""
    if consumers is None:
        consumers = [n for n in names if ":" not in n or n.endswith(".py")]
    results = []
    for producer in names:
        pending = [[producer, consumer] for consumer in consumers]
        while pending:
            got = []
            done, running, why = _stream({"kind": "matrix", "pairs": pending}, timeout, got.append)
            results += got
            finished = {(r["spec"][0], r["spec"][1]) for r in got}
            pending = [p for p in pending if tuple(p) not in finished]
            progress(f"matrix: {producer} -> {len(consumers) - len(pending)}/{len(consumers)}")
            if done or not pending:
                break
            if running is None:
                running = pending[0]
            alone = []
            ok, _, why_alone = _stream(
                {"kind": "matrix", "pairs": [running]}, timeout, alone.append
            )
            if ok and alone:
                alone[0]["note"] = f"crashed after other frameworks in one process ({why})"
                results += alone
            else:
                results.append(
                    {
                        "producer": running[0],
                        "consumer": running[1],
                        "spec": list(running),
                        "error": f"crash: {why_alone or why}",
                    }
                )
            pending = [p for p in pending if p != list(running)]
    return results


def installed() -> list:
    return [name for name, fw in FRAMEWORKS.items() if fw.available()]


def _progress_printer(enabled: bool):
    def progress(message: str) -> None:
        if enabled:
            sys.stderr.write(f"\r\x1b[K{message}" if sys.stderr.isatty() else f"{message}\n")
            sys.stderr.flush()

    return progress


def _versions(names: Iterable[str]) -> dict:
    """The installed version of each known framework of `names`, read from its distribution
    (`Framework.distribution`), else from the distribution of its name."""
    from importlib import metadata

    versions = {}
    for name in names:
        framework = FRAMEWORKS[name]
        for candidate in (framework.distribution or name, name):
            try:
                versions[name] = metadata.version(candidate)
                break
            except metadata.PackageNotFoundError:
                continue
    return versions


def _rule_entry(rule) -> dict:
    return {
        "level": rule.level,
        "family": rule.family,
        "text": rule.text,
        "section": rule.section,
        "hint": rule.hint,
        "cites": [{"document": c.document, "section": c.section, "url": c.url} for c in rule.cites],
    }


def run(
    names: list,
    *,
    matrix: bool = True,
    timeout: float = 120,
    progress=None,
    only: Iterable[str] | None = None,
) -> dict:
    """Runs every check (or the rules of `only`) for `names` (installed frameworks, a user's
    framework description or module:factory) and returns the report as a dict (what `--json`
    prints; docs/check-report.md). Raises FrameworkUnusable, before any check, for a user's
    framework that cannot be checked at all."""
    progress = progress or (lambda message: None)
    users = {name: preflight(name, timeout) for name in names if not is_known(name)}
    shown = {name: users[name]["name"] if name in users else name for name in names}
    frameworks = {}
    for index, name in enumerate(names, 1):
        progress(f"[{index}/{len(names)}] checking {shown[name]} ...")
        results = check_framework(name, timeout, only)
        attach_causes(results)
        frameworks[shown[name]] = results
    consumers = [n for n in names if is_known(n) or users[n]["consumer"]]
    pairs = run_matrix(names, timeout, progress, consumers) if matrix and names else []
    for pair in pairs:
        producer, consumer = pair.pop("spec")
        pair["producer"], pair["consumer"] = shown[producer], shown[consumer]
    progress("")
    from dlbridge import __version__

    versions = _versions(n for n in names if is_known(n))
    versions.update({shown[n]: u["version"] for n, u in users.items() if u["version"]})
    return {
        "schema_version": SCHEMA_VERSION,
        "dlbridge": __version__,
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "versions": versions,
        "rules": {rule.id: _rule_entry(rule) for rule in RULES.values()},
        "frameworks": frameworks,
        "summary": {name: summarise(results) for name, results in frameworks.items()},
        "matrix": pairs,
    }


def exit_status(report: dict, fail_on: str = "must") -> int:
    """The exit status of a report (`EXIT_STATUS`): 1 for a finding at the `fail_on` level
    ("must" or "should"), a crash, hang or error, else 0; with a baseline compared
    (`report["baseline"]`), only the findings it does not have count."""
    levels = {MUST} if fail_on == "must" else {MUST, SHOULD}
    for results in report["frameworks"].values():
        for result in results:
            if result.get("known") or result["outcome"] not in FINDINGS:
                continue
            if result["outcome"] != "fail" or RULES[result["rule"]].level in levels:
                return 1
    for pair in report["matrix"]:
        known = set(pair.get("known_failures", ()))
        if "error" in pair and not pair.get("known"):
            return 1
        if set(pair.get("failures", {})) - known:
            return 1
    return 0


def _write(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text)


def _parser() -> argparse.ArgumentParser:
    """The command line of `dlbridge check`."""
    parser = argparse.ArgumentParser(
        prog="dlbridge check",
        # Wrapped here: the raw formatter keeps the exit status table's lines as written.
        description=textwrap.fill(
            "Check DLPack conformance of installed frameworks (producers, consumers, the C "
            "exchange table) and their interop, rule by rule. A framework the checker does not "
            "know is described by a module of yours (docs/check-frameworks.md): give its file "
            "(mylib_dlpack.py) or module name as NAME; module:factory checks one tensor of a "
            "factory, as a producer only.",
            width=90,
        ),
        epilog=EXIT_STATUS,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"frameworks ({', '.join(FRAMEWORKS)}), a framework description (a .py file or "
        "module), or module:factory; default: every installed framework",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--json-file", metavar="FILE", help="also write the JSON report to FILE")
    parser.add_argument("--junit", metavar="FILE", help="also write JUnit XML (CI dashboards)")
    parser.add_argument(
        "--html", metavar="FILE", help="also write an HTML report (one self-contained file)"
    )
    parser.add_argument(
        "--baseline",
        metavar="FILE",
        help="an earlier JSON report: its findings are known, only new ones are reported and "
        "count for the exit status",
    )
    parser.add_argument(
        "--fail-on",
        choices=("must", "should"),
        default="must",
        help="the lowest level of rule whose failure fails the run (default: must)",
    )
    parser.add_argument(
        "--rule",
        action="append",
        metavar="RULE",
        help="run only this rule (repeatable; the interop matrix is then left out)",
    )
    parser.add_argument("--explain", metavar="RULE", help="print one rule in full, and exit")
    parser.add_argument("--list-rules", action="store_true", help="list every rule, and exit")
    parser.add_argument("--no-matrix", action="store_true", help="skip the interop matrix")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds one check (or one matrix pair) may take before it is "
        "reported hung (default 120)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    return parser


def main(argv=None) -> int:
    parser = _parser()
    arguments = parser.parse_args(argv)
    if arguments.list_rules:
        print(list_rules())
        return 0
    if arguments.explain:
        try:
            print(explain(arguments.explain))
        except KeyError as error:
            parser.error(error.args[0])
        return 0
    for rule_id in arguments.rule or ():
        if rule_id not in RULES:
            try:
                explain(rule_id)
            except KeyError as error:
                parser.error(error.args[0])
    names = arguments.names or installed()
    for name in names:
        if is_known(name) and not FRAMEWORKS[name].available():
            parser.error(f"{name} is not installed here")
    baseline = None
    if arguments.baseline:
        try:
            with open(arguments.baseline, encoding="utf-8") as handle:
                baseline = json.load(handle)
            findings(baseline)  # a ValueError where it is no report of dlbridge check
        except (OSError, ValueError) as error:
            parser.error(f"cannot read the baseline {arguments.baseline}: {error}")
    progress = _progress_printer(not arguments.quiet)
    try:
        report = run(
            names,
            matrix=not arguments.no_matrix and not arguments.rule,
            timeout=arguments.timeout,
            progress=progress,
            only=arguments.rule,
        )
    except FrameworkUnusable as error:
        progress("")
        sys.stderr.write(f"dlbridge check: error: {error}\n")
        return 2
    if baseline is not None:
        compare(report, baseline)  # checked before the run (`findings`)
        report["baseline"]["file"] = arguments.baseline
    if arguments.json:
        print(render_json(report))
    elif arguments.markdown:
        print(render_markdown(report))
    else:
        print(render_text(report, colour=sys.stdout.isatty()))
    if arguments.json_file:
        _write(arguments.json_file, render_json(report))
    if arguments.junit:
        _write(arguments.junit, render_junit(report))
    if arguments.html:
        _write(arguments.html, render_html(report))
    return exit_status(report, arguments.fail_on)
