"""The frameworks the interop files test, and what happens where one is not installed.

`import_framework("paddle", "paddlepaddle")` imports the framework's module for a test file.
Where it is missing, the whole file is skipped with a reason that says why: the framework has
no wheel for this platform or Python (its requirement in python/requirements-test.txt carries
an environment marker that leaves it out here: PaddlePaddle has none for Python 3.14,
tensorflow-cpu none for macOS or Python 3.14), or it is simply not installed. Under CI on
Linux x86_64, where every framework has wheels, a missing framework fails the file instead:
CI must not pass by skipping a framework's tests. scripts/python-tests.sh reports a file
skipped for want of a wheel as SKIPPED, also where it is strict, except on Linux x86_64.
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys
from types import ModuleType

import pytest

REQUIREMENTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "requirements-test.txt"
)

#: The phrase that a skip for want of a wheel starts with (scripts/python-tests.sh looks for it).
NO_WHEEL = "no wheel for this platform"


def every_framework_required() -> bool:
    """Under CI on Linux x86_64 every framework of python/requirements-test.txt has wheels
    and must be installed."""
    return (
        os.environ.get("CI") == "true"
        and sys.platform.startswith("linux")
        and platform.machine() in ("x86_64", "AMD64")
    )


def requirement_line(distribution: str) -> str | None:
    """The line of python/requirements-test.txt that names `distribution`, if any."""
    try:
        with open(REQUIREMENTS, encoding="utf-8") as requirements:
            lines = requirements.read().splitlines()
    except OSError:
        return None
    for line in lines:
        text = line.split("#", 1)[0].strip()
        name = re.match(r"[A-Za-z0-9._-]+", text)
        if name and name.group(0).lower() == distribution.lower():
            return text
    return None


def left_out_here(line: str) -> bool:
    """Whether the environment marker of a requirement line leaves it out of this platform
    and Python (False without a marker, or where `packaging` cannot say)."""
    if ";" not in line:
        return False
    try:
        from packaging.markers import Marker
    except ImportError:  # pytest depends on packaging; a bare environment may still lack it
        return False
    return not Marker(line.split(";", 1)[1].strip()).evaluate()


def why_missing(module: str, distribution: str, error: ImportError) -> str:
    """The reason for skipping (or failing) a test file whose framework cannot be imported."""
    line = requirement_line(distribution)
    where = f"Python {platform.python_version()} on {sys.platform} {platform.machine()}"
    if line is not None and left_out_here(line):
        return (
            f"{NO_WHEEL}: {distribution} has no wheel for {where}, so "
            f"python/requirements-test.txt leaves it out ({line}); its tests are skipped"
        )
    return (
        f"{module} cannot be imported ({type(error).__name__}: {error}): install {distribution} "
        "(pip install -r python/requirements-test.txt)"
    )


def import_framework(module: str, distribution: str) -> ModuleType:
    """Imports `module` (of the PyPI distribution `distribution`) for a test file, or skips the
    file (fails it under CI on Linux x86_64) saying why it cannot."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        reason = why_missing(module, distribution, error)
    if every_framework_required():
        pytest.fail(
            f"{reason}. Under CI on Linux x86_64 every framework must be tested.", pytrace=False
        )
    pytest.skip(reason, allow_module_level=True)
    raise AssertionError("unreachable")  # pytest.skip raises
