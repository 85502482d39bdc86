#!/usr/bin/env python3
"""The Rust tests' counts, read from the output of `cargo test`, and its ignored tests judged.

    cargo test ... 2>&1 | tee LOG; python3 scripts/rust-test-counts.py LOG

Prints each test binary's (and doc-test crate's) passed, failed and ignored tests, and the
total, so that a drop in the number of tests that ran shows. Fails (exit 1) when a binary
failed, when no test ran, or when an ignored test's reason is not on the allow-list below:
an ignored test is one that this run did not run, and only those that run elsewhere may be.
A doc example marked `ignore` has no reason, so it is never allowed (mark output as `text`).

A libtest summary line that counts more ignored tests than the test lines named (as a run
with `--quiet` prints them) is judged by the count alone: also a failure.
"""

from __future__ import annotations

import re
import sys

#: Why a Rust test may be ignored by `make test` (`#[ignore = "REASON"]`), and what runs it.
ALLOWED_IGNORES = {
    "needs a GPU": "the GPU kit runs these with --include-ignored (scripts/gpu-run.sh)",
    "a measurement, printed": "make bench-claims runs it in a release build (BENCHMARKS.md)",
    "a deliberate data race, for ThreadSanitizer to report": (
        "scripts/sanitize-threads.sh runs it first, and must see the race reported"
    ),
}

RUNNING = re.compile(r"^\s*(Running|Doc-tests)\s+(.*)$")
IGNORED = re.compile(r"^test (.+?) \.\.\. ignored(?:, (.*))?$")
RESULT = re.compile(
    r"^test result: (ok|FAILED)\. (\d+) passed; (\d+) failed; (\d+) ignored; (\d+) measured"
)


def judge(lines: list[str]) -> tuple[list[str], list[str]]:
    """(the report's lines, the problems found) for the output of `cargo test`."""
    report: list[str] = []
    problems: list[str] = []
    binary = "?"
    named_ignores: list[tuple[str, str | None]] = []
    totals = [0, 0, 0]
    binaries = 0
    for raw in lines:
        line = raw.rstrip("\n")
        if match := RUNNING.match(line):
            binary = match.group(2).split(" (")[0]
            if match.group(1) == "Doc-tests":
                binary = f"doc tests of {binary}"
            named_ignores = []
        elif match := IGNORED.match(line):
            named_ignores.append((match.group(1), match.group(2)))
        elif match := RESULT.match(line):
            passed, failed, ignored = (int(match.group(i)) for i in (2, 3, 4))
            binaries += 1
            totals = [totals[0] + passed, totals[1] + failed, totals[2] + ignored]
            report.append(f"  {passed:6d} passed {failed:4d} failed {ignored:4d} ignored  {binary}")
            if match.group(1) == "FAILED" or failed:
                problems.append(f"{binary}: {failed} failed")
            for test, reason in named_ignores:
                if not (reason and reason.startswith(tuple(ALLOWED_IGNORES))):
                    problems.append(
                        f"{binary}: {test} is ignored ({reason or 'no reason given'}), "
                        "which is not on the allow-list of scripts/rust-test-counts.py"
                    )
            if ignored > len(named_ignores):
                problems.append(
                    f"{binary}: {ignored} ignored, of which only {len(named_ignores)} named"
                )
            named_ignores = []
    report.append(
        f"rust tests that ran: {totals[0] + totals[1]} in {binaries} binaries "
        f"({totals[0]} passed, {totals[1]} failed, {totals[2]} ignored)"
    )
    if totals[0] == 0:
        problems.append("no Rust test ran")
    return report, problems


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} CARGO_TEST_OUTPUT", file=sys.stderr)
        return 2
    with open(argv[1], encoding="utf-8", errors="replace") as output:
        report, problems = judge(output.readlines())
    print("rust-test-counts: per binary")
    print("\n".join(report))
    for problem in problems:
        print(f"rust-test-counts: {problem}", file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
