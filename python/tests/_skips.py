"""The skips a strict run allows, and the judge of a run's JUnit report.

Under CI (`CI=true`) or `PYTHON_TESTS_STRICT=1`, a skipped test fails its run unless the
reason for the skip starts with one of the phrases of `ALLOWED`. Each phrase is written by
exactly one helper of this folder, which decides when it applies:

- `NO_GPU` (`_gpu.py`, the `gpu` marker): the test needs a CUDA GPU and there is none. CI has
  no GPU; the GPU machine runs these tests with DLBRIDGE_REQUIRE_GPU=1, where that skip is a
  failure instead (scripts/gpu-run.sh).
- `NO_WHEEL` (`_frameworks.import_framework`): the framework publishes no wheel for this
  platform or Python, so python/requirements-test.txt leaves it out by an environment marker.
- `NOT_ON_PLATFORM` (`not_on_platform` below): the test reads what only another operating
  system provides (Linux's /proc).

The last two are allowed only off Linux x86_64: every framework has wheels there, and it is
where CI runs. Any other skip (a framework installed but failing to import, a test kernel
missing, a test's own `pytest.skip`) fails a strict run, named with its reason.

`python _skips.py REPORT.xml` is what scripts/python-tests.sh and scripts/gpu-run.sh run after
each pytest process: it prints one line for the shell, `PASSED FAILED SKIPPED ALLOWED GPU`
(-1 for each where the report is missing or unreadable), and, on standard error, each skip
that a strict run does not allow, with its test and reason.
"""

from __future__ import annotations

import os
import platform
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field

import pytest

#: A GPU-only test where there is no GPU (python/tests/_gpu.py writes it).
NO_GPU = "no CUDA GPU here"
#: A framework with no wheel for this platform or Python (python/tests/_frameworks.py).
NO_WHEEL = "no wheel for this platform"
#: A test of what only another operating system has.
NOT_ON_PLATFORM = "not on this platform"

#: The allow-list: each phrase a skip's reason may start with, and why it may.
ALLOWED = {
    NO_GPU: "CI has no GPU; scripts/gpu-run.sh runs these with DLBRIDGE_REQUIRE_GPU=1",
    NO_WHEEL: "the framework has no wheel here (never on Linux x86_64)",
    NOT_ON_PLATFORM: "the test needs another operating system (never on Linux x86_64)",
}

#: The phrases allowed on Linux x86_64 too.
ALLOWED_ON_LINUX_X86_64 = (NO_GPU,)


def strict() -> bool:
    """Whether a skip outside the allow-list fails: under CI, or where the runner asks for it."""
    return os.environ.get("PYTHON_TESTS_STRICT") == "1" or os.environ.get("CI") == "true"


def linux_x86_64() -> bool:
    """Whether this is Linux on x86_64, where every framework has wheels (and CI runs)."""
    return sys.platform.startswith("linux") and platform.machine() in ("x86_64", "AMD64")


def gpu_required() -> bool:
    """Whether GPU tests must run here (DLBRIDGE_REQUIRE_GPU=1, the GPU machine): their skips
    then fail, and are off the allow-list."""
    return os.environ.get("DLBRIDGE_REQUIRE_GPU") == "1"


def allowed(reason: str, *, on_linux_x86_64: bool | None = None) -> bool:
    """Whether a skip for `reason` is on the allow-list here. Where GPU tests must run
    (DLBRIDGE_REQUIRE_GPU=1, the GPU machine), a skip for want of a GPU is not."""
    if on_linux_x86_64 is None:
        on_linux_x86_64 = linux_x86_64()
    phrases = ALLOWED_ON_LINUX_X86_64 if on_linux_x86_64 else tuple(ALLOWED)
    if gpu_required():
        phrases = tuple(phrase for phrase in phrases if phrase != NO_GPU)
    return reason.startswith(phrases)


def not_on_platform(what: str) -> None:
    """Skips the calling test file (or test) because it needs `what`, which this operating
    system does not have. Allowed by strict runs off Linux x86_64 only."""
    pytest.skip(f"{NOT_ON_PLATFORM}: the test needs {what}", allow_module_level=True)


@dataclass
class Report:
    """What a JUnit report of one pytest process counts."""

    passed: int = 0
    failed: int = 0
    skipped: int = 0
    #: (test, reason) of every skip.
    skips: list[tuple[str, str]] = field(default_factory=list)

    def disallowed(self, *, on_linux_x86_64: bool | None = None) -> list[tuple[str, str]]:
        """The skips a strict run does not allow."""
        return [
            (test, reason)
            for test, reason in self.skips
            if not allowed(reason, on_linux_x86_64=on_linux_x86_64)
        ]

    def count(self, phrase: str) -> int:
        """The skips whose reason starts with `phrase`."""
        return sum(reason.startswith(phrase) for _, reason in self.skips)


def skip_reason(element: ET.Element) -> str:
    """The reason of a JUnit `<skipped>` element, as the test gave it. pytest writes a skip at
    collection (a whole file) as text ending in "Skipped: REASON')", and one inside a test as
    the message "REASON"."""
    text = element.text or ""
    if "Skipped: " in text:
        reason = text.split("Skipped: ", 1)[1]
        if reason[-2:] in ("')", '")'):
            reason = reason[:-2]
    else:
        reason = element.get("message", "")
    return " ".join(reason.split())


def read_report(path: str) -> Report:
    """Counts a pytest JUnit report. Raises OSError or ET.ParseError where there is none."""
    root = ET.parse(path).getroot()
    suites = [root] if root.tag == "testsuite" else root.findall("testsuite")
    report = Report()
    tests = 0
    for suite in suites:
        tests += int(suite.get("tests", 0))
        report.failed += int(suite.get("failures", 0)) + int(suite.get("errors", 0))
        report.skipped += int(suite.get("skipped", 0))
    report.passed = tests - report.failed - report.skipped
    for case in root.iter("testcase"):
        for element in case.findall("skipped"):
            test = "::".join(part for part in (case.get("classname"), case.get("name")) if part)
            report.skips.append((test, skip_reason(element)))
    return report


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print(f"usage: {argv[0]} REPORT.xml", file=sys.stderr)
        return 2
    try:
        report = read_report(argv[1])
    except (OSError, ET.ParseError):
        print(-1, -1, -1, -1, -1)
        return 0
    bad = report.disallowed()
    for test, reason in bad:
        print(f"  skipped, not on the allow-list: {test}: {reason}", file=sys.stderr)
    print(
        report.passed,
        report.failed,
        report.skipped,
        report.skipped - len(bad),
        report.count(NO_GPU),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
