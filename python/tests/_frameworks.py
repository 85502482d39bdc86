"""The frameworks and example extensions the tests import, and what happens where one is missing.

Every test file imports a framework through `import_framework("paddle", "paddlepaddle")`
(module, PyPI distribution), at module level or in a fixture, never through
`pytest.importorskip` (test_suite_rules.py checks). Where the framework is missing, the file
(or test) is skipped with a reason that says why: the framework has no wheel for this platform
or Python (its requirement in python/requirements-test.txt carries an environment marker that
leaves it out here: PaddlePaddle has none for Python 3.14, tensorflow-cpu none for macOS or
Python 3.14), or it is not installed, or it is installed and fails to import. Under CI on
Linux x86_64, where every framework has wheels, a missing framework fails instead: CI must not
pass by skipping a framework's tests. Only the first reason is on the allow-list of strict
runs (`_skips.NO_WHEEL`), and only off Linux x86_64; any other skip fails a strict run.

`import_example("dlbridge_matmul", "matmul")` does the same for an example extension of
examples/, which `make example-build` installs.
"""

from __future__ import annotations

import importlib
import os
import platform
import re
import sys
from types import ModuleType

import pytest

from _skips import NO_WHEEL, linux_x86_64

REQUIREMENTS = os.path.join(
    os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "requirements-test.txt"
)


def every_framework_required() -> bool:
    """Under CI on Linux x86_64 every framework of python/requirements-test.txt has wheels
    and must be installed."""
    return os.environ.get("CI") == "true" and linux_x86_64()


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


def import_example(module: str, folder: str) -> ModuleType:
    """Imports the example extension `module` (built from examples/`folder`) for a test file,
    or skips the file saying how to build it (a skip no strict run allows)."""
    try:
        return importlib.import_module(module)
    except ImportError as error:
        reason = (
            f"the example extension {module} cannot be imported ({type(error).__name__}: "
            f"{error}): `make example-build` builds examples/{folder} into the environment"
        )
    if every_framework_required():
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason, allow_module_level=True)
    raise AssertionError("unreachable")  # pytest.skip raises
