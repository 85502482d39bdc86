"""A framework without wheels for this platform or Python (python/tests/_frameworks.py): its
test file is skipped with a reason naming that, except under CI on Linux x86_64, where it
fails."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import _frameworks
import _skips

HERE = os.path.dirname(os.path.abspath(__file__))

TEST_FILE = """
import _frameworks

_frameworks.REQUIREMENTS = {requirements!r}
framework = _frameworks.import_framework("dlbridge_no_such_framework", "no-such-framework")


def test_never_runs():
    raise AssertionError("the file should have been skipped")
"""


def run_file(tmp_path, requirement: str, ci: bool) -> subprocess.CompletedProcess:
    """Runs pytest on a test file whose framework cannot be imported, with `requirement` as
    its line of the requirements."""
    requirements = tmp_path / "requirements.txt"
    requirements.write_text(f"numpy\n{requirement}\n", encoding="utf-8")
    test_file = tmp_path / "test_missing_framework.py"
    test_file.write_text(TEST_FILE.format(requirements=str(requirements)), encoding="utf-8")
    env = {key: value for key, value in os.environ.items() if key != "CI"}
    env["PYTHONPATH"] = os.pathsep.join([HERE, env.get("PYTHONPATH", "")])
    if ci:
        env["CI"] = "true"
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-rs", "-p", "no:cacheprovider", str(test_file)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
        check=False,
    )


def test_a_framework_without_wheels_here_is_skipped_with_the_reason(tmp_path):
    result = run_file(tmp_path, 'no-such-framework>=1; python_version < "3.0"', ci=False)
    assert result.returncode == 5, result.stdout[-3000:]
    assert "no wheel for this platform: no-such-framework has no wheel for" in result.stdout
    assert "1 skipped" in result.stdout


def test_a_framework_that_is_not_installed_is_skipped_saying_so(tmp_path):
    result = run_file(tmp_path, "no-such-framework>=1", ci=False)
    assert result.returncode == 5, result.stdout[-3000:]
    assert "install no-such-framework" in result.stdout
    assert "no wheel" not in result.stdout


@pytest.mark.parametrize(
    "requirement",
    ['no-such-framework; python_version < "3.0"', "no-such-framework"],
    ids=["no-wheel", "not-installed"],
)
def test_under_ci_a_missing_framework_fails_on_linux_x86_64_only(tmp_path, requirement):
    result = run_file(tmp_path, requirement, ci=True)
    if _skips.linux_x86_64():
        assert result.returncode not in (0, 5), result.stdout[-3000:]
        assert "every framework must be tested" in result.stdout
    else:
        # Elsewhere a framework may lack wheels: skipped, and the runner's allow-list judges.
        assert result.returncode == 5, result.stdout[-3000:]
        assert "every framework must be tested" not in result.stdout


def test_the_requirements_leave_out_only_frameworks_without_wheels():
    for distribution in ("numpy", "torch", "jax", "pyarrow", "apache-tvm-ffi"):
        line = _frameworks.requirement_line(distribution)
        assert line is not None and ";" not in line, line
    for distribution in ("paddlepaddle", "tensorflow-cpu"):
        line = _frameworks.requirement_line(distribution)
        assert line is not None and 'python_version < "3.14"' in line, line
