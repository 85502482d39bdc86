"""`dlbridge check [NAME ...]`: runs the checks, each framework in processes of its own, and
reports them.

Exit status: 1 when a selected framework breaks a MUST rule (a crash or hang fails the rule
that was being checked), 0 otherwise; 2 for a usage error.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterable

from . import consumer_checks, device_checks, exchange_checks, producer_checks
from .frameworks import FRAMEWORKS, resolve
from .report import render_json, render_markdown, render_text
from .rules import FAIL, MUST, NA, PASS, RULES


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


def check_framework(name: str, timeout: float) -> list:
    """Every rule's result for one framework; a crash or hang is the failure of the check
    that was running, and the rest goes on in a new process."""
    results: dict = {}
    order = [
        *producer_checks.CHECKS,
        *exchange_checks.CHECKS,
        *device_checks.CHECKS,
        *consumer_checks.CHECKS,
    ]
    while True:
        job = {"kind": "framework", "name": name, "skip": sorted(results)}
        done, running, why = _stream(job, timeout, lambda r: results.__setitem__(r["rule"], r))
        if done:
            break
        if running is None or running in results:
            for rule_id in order:
                if rule_id not in results:
                    results[rule_id] = {
                        "rule": rule_id,
                        "outcome": FAIL,
                        "detail": f"not run: {why} before this check",
                    }
            break
        results[running] = {"rule": running, "outcome": FAIL, "detail": f"crash: {why}"}
    return [results[r] for r in order if r in results]


def run_matrix(names: list, timeout: float, progress) -> list:
    """Every producer x consumer pair among `names` (frameworks, not user factories). One
    process per producer; a pair that crashes its process is run again alone, so that a crash
    due to two frameworks in one process is told apart from a crash of the pair itself."""
    consumers = [n for n in names if ":" not in n]
    results = []
    for producer in names:
        pending = [[producer, consumer] for consumer in consumers]
        while pending:
            got = []
            done, running, why = _stream({"kind": "matrix", "pairs": pending}, timeout, got.append)
            results += got
            finished = {(r["producer"], r["consumer"]) for r in got}
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
    """The installed version of each framework of `names`, read from its distribution
    (`Framework.distribution`), else from the distribution of its name."""
    from importlib import metadata

    versions = {}
    for name in names:
        framework = FRAMEWORKS.get(name)
        distribution = (framework.distribution if framework else None) or name
        for candidate in (distribution, name):
            try:
                versions[name] = metadata.version(candidate)
                break
            except metadata.PackageNotFoundError:
                continue
    return versions


def run(names: list, *, matrix: bool = True, timeout: float = 120, progress=None) -> dict:
    """Runs every check for `names` (installed frameworks or module:factory) and returns the
    report as a dict (what `--json` prints)."""
    progress = progress or (lambda message: None)
    frameworks = {}
    for index, name in enumerate(names, 1):
        progress(f"[{index}/{len(names)}] checking {name} ...")
        frameworks[name] = check_framework(name, timeout)
    pairs = run_matrix(names, timeout, progress) if matrix and len(names) > 0 else []
    summary = {}
    for name, results in frameworks.items():
        failed = [r for r in results if r["outcome"] == FAIL]
        summary[name] = {
            "must_failures": sum(1 for r in failed if RULES[r["rule"]].level == MUST),
            "should_failures": sum(1 for r in failed if RULES[r["rule"]].level != MUST),
            "passed": sum(1 for r in results if r["outcome"] == PASS),
            "not_applicable": sum(1 for r in results if r["outcome"] == NA),
        }
    if progress:
        progress("")
    return {
        "python": sys.version.split()[0],
        "versions": _versions(n for n in names if ":" not in n),
        "rules": {
            rule.id: {"level": rule.level, "section": rule.section, "text": rule.text}
            for rule in RULES.values()
        },
        "frameworks": frameworks,
        "summary": summary,
        "matrix": pairs,
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="dlbridge check",
        description="Check DLPack conformance of installed frameworks (producers, consumers, "
        "the C exchange table) and their interop, rule by rule.",
    )
    parser.add_argument(
        "names",
        nargs="*",
        metavar="NAME",
        help=f"frameworks ({', '.join(FRAMEWORKS)}) or module:factory; "
        "default: every installed one",
    )
    output = parser.add_mutually_exclusive_group()
    output.add_argument("--json", action="store_true", help="print the report as JSON")
    output.add_argument("--markdown", action="store_true", help="print Markdown tables")
    parser.add_argument("--no-matrix", action="store_true", help="skip the interop matrix")
    parser.add_argument(
        "--timeout",
        type=float,
        default=120,
        help="seconds one check (or one matrix pair) may take before it is "
        "reported hung (default 120)",
    )
    parser.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    arguments = parser.parse_args(argv)
    names = arguments.names or installed()
    for name in names:
        try:
            framework = resolve(name)
        except ValueError as error:
            parser.error(str(error))
        if not framework.user_factory and not framework.available():
            parser.error(f"{name} is not installed here")
    progress = _progress_printer(not arguments.quiet)
    report = run(
        names, matrix=not arguments.no_matrix, timeout=arguments.timeout, progress=progress
    )
    if arguments.json:
        print(render_json(report))
    elif arguments.markdown:
        print(render_markdown(report))
    else:
        print(render_text(report, colour=sys.stdout.isatty()))
    return 1 if any(s["must_failures"] for s in report["summary"].values()) else 0
