"""No silent skips: the allow-list of python/tests/_skips.py and scripts/python-tests.sh, which
judges every run's JUnit report by it.

Each test here runs the runner (or pytest) on test files of its own, written into a temporary
folder: a file that skips for a reason off the allow-list must fail a strict run (CI=true or
PYTHON_TESTS_STRICT=1) and name the test and the reason; a GPU-only skip must not; outside
strict runs skips are counted and shown, not failed.
"""

from __future__ import annotations

import os
import pathlib
import subprocess
import sys

import pytest

import _skips

ROOT = pathlib.Path(__file__).resolve().parents[2]
RUNNER = ROOT / "scripts" / "python-tests.sh"

FILES = {
    # A framework that is installed and fails to import, as importorskip would have hidden it.
    "test_whole_file.py": (
        "import pytest\n"
        "pytest.skip('torch cannot be imported (OSError: libtorch.so)', allow_module_level=True)\n"
        "def test_never():\n"
        "    raise AssertionError\n"
    ),
    "test_inner.py": (
        "import pytest\n"
        "def test_runs():\n"
        "    pass\n"
        "def test_skips_inside():\n"
        "    pytest.skip('dlbridge runs from a source tree')\n"
    ),
    "test_gpu_only.py": (
        "import pytest\n"
        "def test_runs():\n"
        "    pass\n"
        "def test_needs_a_gpu():\n"
        f"    pytest.skip({_skips.NO_GPU!r} + ': no driver')\n"
    ),
    "test_no_wheel.py": (
        "import pytest\n"
        f"pytest.skip({_skips.NO_WHEEL!r} + ': paddlepaddle', allow_module_level=True)\n"
    ),
    "test_passes.py": "def test_one():\n    pass\ndef test_two():\n    pass\n",
    "test_crashes.py": "import os\ndef test_dies():\n    os.abort()\n",
}


@pytest.fixture
def folder(tmp_path: pathlib.Path) -> pathlib.Path:
    for name, text in FILES.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    return tmp_path


def run_runner(folder: pathlib.Path, runs: dict[str, list[str]], *, strict: bool, **extra: str):
    # Nothing of the run this test is part of (CI, PYTHON_TESTS_ONLY, a sanitizer's settings).
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("CI", "LD_PRELOAD", "DLBRIDGE_REQUIRE_GPU")
        and not k.startswith("PYTHON_TESTS_")
    }
    env.update(extra)
    env["PYTHON"] = sys.executable
    env["PYTHON_TESTS_RUNS"] = "\n".join(
        f"{name}|{' '.join(str(folder / f) for f in files)}" for name, files in runs.items()
    )
    if strict:
        env["CI"] = "true"
    return subprocess.run(
        ["bash", str(RUNNER)],
        capture_output=True,
        text=True,
        env=env,
        cwd=folder,
        timeout=600,
        check=False,
    )


def summary_line(output: str, run: str) -> str:
    lines = [line for line in output.splitlines() if line.split()[:1] == [run]]
    assert lines, output[-3000:]
    return lines[-1]


def test_a_skip_off_the_allow_list_fails_a_strict_run_naming_test_and_reason(folder):
    result = run_runner(folder, {"shared": ["test_passes.py", "test_inner.py"]}, strict=True)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "test_inner::test_skips_inside: dlbridge runs from a source tree" in output
    assert "FAILED: 1 skipped off the allow-list" in summary_line(result.stdout, "shared")
    # The tests that ran are still counted: 3 passed, the skip counted as the failure.
    assert result.stdout.splitlines()[-1] == "3 passed, 1 failed"


def test_a_file_skipped_whole_fails_a_strict_run(folder):
    result = run_runner(folder, {"whole": ["test_whole_file.py"]}, strict=True)
    output = result.stdout + result.stderr
    assert result.returncode == 1, output[-3000:]
    assert "torch cannot be imported (OSError: libtorch.so)" in output
    assert "off the allow-list" in summary_line(result.stdout, "whole")


def test_gpu_skips_are_allowed_and_counted_apart(folder):
    result = run_runner(folder, {"gpu": ["test_gpu_only.py"]}, strict=True)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    line = summary_line(result.stdout, "gpu")
    assert "1 passed" in line and "1 skipped" in line and "need a GPU" in line
    assert "tests that ran: 1 in 1 runs, 1 skipped" in result.stdout


def test_a_framework_without_wheels_is_allowed_off_linux_x86_64_only(folder):
    result = run_runner(folder, {"nowheel": ["test_no_wheel.py"]}, strict=True)
    if _skips.linux_x86_64():
        assert result.returncode == 1, result.stdout[-3000:]
        assert "off the allow-list" in summary_line(result.stdout, "nowheel")
    else:
        assert result.returncode == 0, result.stdout[-3000:]


def test_outside_strict_runs_skips_are_shown_not_failed(folder):
    runs = {"shared": ["test_passes.py", "test_inner.py"], "whole": ["test_whole_file.py"]}
    result = run_runner(folder, runs, strict=False)
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-3000:]
    assert "SKIPPED: 1 off the allow-list (not strict" in summary_line(result.stdout, "shared")
    assert "test_inner::test_skips_inside: dlbridge runs from a source tree" in output
    assert "summary (strict: no)" in result.stdout


def test_a_crash_fails_and_every_run_is_counted(folder):
    runs = {"ok": ["test_passes.py"], "crash": ["test_crashes.py"]}
    result = run_runner(folder, runs, strict=False)
    assert result.returncode == 1, result.stdout[-3000:]
    assert "no report" in summary_line(result.stdout, "crash")
    assert "tests that ran: 3 in 2 runs, 0 skipped" in result.stdout
    assert result.stdout.splitlines()[-1] == "2 passed, 1 failed"


def test_left_out_files_are_not_collected_and_said(folder):
    runs = {"shared": ["test_passes.py", "test_crashes.py"]}
    left_out = str(folder / "test_crashes.py")
    result = run_runner(folder, runs, strict=False, PYTHON_TESTS_LEAVE_OUT=left_out)
    assert result.returncode == 0, result.stdout[-3000:]
    assert "left out of every run (PYTHON_TESTS_LEAVE_OUT)" in result.stdout
    assert result.stdout.splitlines()[-1] == "2 passed, 0 failed"


def test_the_report_reader_takes_reasons_as_the_tests_gave_them(folder):
    report = folder / "report.xml"
    subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={report}"]
        + [str(folder / f) for f in ("test_inner.py", "test_gpu_only.py", "test_no_wheel.py")],
        capture_output=True,
        cwd=folder,
        timeout=300,
        check=False,
    )
    counted = _skips.read_report(str(report))
    assert (counted.passed, counted.failed, counted.skipped) == (2, 0, 3)
    reasons = sorted(reason for _, reason in counted.skips)
    assert reasons == sorted(
        [
            "dlbridge runs from a source tree",
            f"{_skips.NO_GPU}: no driver",
            f"{_skips.NO_WHEEL}: paddlepaddle",
        ]
    )
    assert counted.count(_skips.NO_GPU) == 1
    assert sorted(reason for _, reason in counted.disallowed(on_linux_x86_64=True)) == [
        "dlbridge runs from a source tree",
        f"{_skips.NO_WHEEL}: paddlepaddle",
    ]
    assert [reason for _, reason in counted.disallowed(on_linux_x86_64=False)] == [
        "dlbridge runs from a source tree"
    ]


def test_the_allow_list_is_short_and_each_entry_says_why():
    assert len(_skips.ALLOWED) <= 3
    assert all(why for why in _skips.ALLOWED.values())
    assert set(_skips.ALLOWED_ON_LINUX_X86_64) == {_skips.NO_GPU}


# --- the Rust side: ignored tests (scripts/rust-test-counts.py) ---------------------------

CARGO_OUTPUT = """\
     Running unittests src/lib.rs (target/debug/deps/dlbridge-0123)

running 3 tests
test a ... ok
test b ... ok
test canary ... ignored, a deliberate data race, for ThreadSanitizer to report (make sanitize)
test result: ok. 2 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s

     Running tests/cuda.rs (target/debug/deps/cuda-4567)

running 2 tests
test gpu_x ... ignored, needs a GPU
test fake ... ok
test result: ok. 1 passed; 0 failed; 1 ignored; 0 measured; 0 filtered out; finished in 0.01s
{extra}"""


def rust_counts(tmp_path, extra: str = ""):
    log = tmp_path / "cargo-test.log"
    log.write_text(CARGO_OUTPUT.format(extra=extra), encoding="utf-8")
    return subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "rust-test-counts.py"), str(log)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_rust_tests_ignored_for_a_gpu_or_the_canary_pass_and_are_counted(tmp_path):
    result = rust_counts(tmp_path)
    assert result.returncode == 0, result.stderr
    assert "rust tests that ran: 3 in 2 binaries (3 passed, 0 failed, 2 ignored)" in result.stdout


def test_a_rust_test_ignored_for_another_reason_or_none_fails(tmp_path):
    extra = """
   Doc-tests dlbridge

running 2 tests
test src/lib.rs - f (line 3) ... ignored
test slow ... ignored, takes too long
test result: ok. 0 passed; 0 failed; 2 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""
    result = rust_counts(tmp_path, extra)
    assert result.returncode == 1
    assert "doc tests of dlbridge: src/lib.rs - f (line 3) is ignored (no reason given)" in (
        result.stderr
    )
    assert "slow is ignored (takes too long)" in result.stderr


def test_a_failed_rust_binary_fails_the_counts(tmp_path):
    extra = """
     Running tests/views.rs (target/debug/deps/views-89ab)
test result: FAILED. 4 passed; 1 failed; 0 ignored; 0 measured; 0 filtered out; finished in 0.01s
"""
    result = rust_counts(tmp_path, extra)
    assert result.returncode == 1
    assert "tests/views.rs: 1 failed" in result.stderr
