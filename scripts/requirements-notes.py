#!/usr/bin/env python3
"""Prints a note for each requirement that an environment marker leaves out here.

    python scripts/requirements-notes.py python/requirements-test.txt

`make venv` runs it after installing the test requirements: a framework without wheels for
this platform or Python (PaddlePaddle on Python 3.14, tensorflow-cpu on macOS) is not
installed, and its tests are skipped. Under CI (CI=true) on Linux x86_64, where every
framework has wheels, such a requirement is an error (exit status 1): CI must test them all.
Needs `packaging` (a dependency of pytest, in the requirements).
"""

from __future__ import annotations

import os
import platform
import sys

from packaging.requirements import Requirement


def left_out(path: str) -> list[str]:
    """The requirement lines of `path` whose marker is false here."""
    found = []
    with open(path, encoding="utf-8") as requirements:
        for line in requirements:
            text = line.split("#", 1)[0].strip()
            if not text or text.startswith("-"):
                continue
            requirement = Requirement(text)
            if requirement.marker is not None and not requirement.marker.evaluate():
                found.append(text)
    return found


def main(argv: list[str]) -> int:
    if len(argv) != 1:
        print("usage: requirements-notes.py REQUIREMENTS_FILE", file=sys.stderr)
        return 2
    where = f"Python {platform.python_version()} on {sys.platform} {platform.machine()}"
    strict = (
        os.environ.get("CI") == "true"
        and sys.platform.startswith("linux")
        and platform.machine() in ("x86_64", "AMD64")
    )
    missing = left_out(argv[0])
    for text in missing:
        print(f"note: not installed, no wheel for {where}: {text}; its tests are skipped")
    if missing and strict:
        print(
            "error: under CI on Linux x86_64 every framework of "
            f"{argv[0]} must be installed and tested; use a Python they all have wheels for",
            file=sys.stderr,
        )
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
