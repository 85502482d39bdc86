"""The package as users install it: its version, its command line, and what works without
NumPy (only the conformance checker needs it, through the extra `dlbridge[check]`)."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from importlib import metadata

import pytest

import dlbridge
from dlbridge.__main__ import main

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# Hides NumPy from the code that follows it, as if it were not installed (`import numpy` then
# raises ModuleNotFoundError), whether or not the test environment has it.
WITHOUT_NUMPY = "import sys; sys.modules['numpy'] = None\n"


def run_python(code: str) -> subprocess.CompletedProcess:
    """Runs `python -c CODE` in a process of its own; returns the finished process."""
    return subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )


def workspace_version() -> str:
    """`version` of [workspace.package] in the root Cargo.toml, which every crate (the
    extension module included) and the Python package take."""
    with open(os.path.join(ROOT, "Cargo.toml"), encoding="utf-8") as manifest:
        text = manifest.read()
    section = text[text.index("[workspace.package]") :]
    found = re.search(r'^version\s*=\s*"([^"]+)"', section, re.MULTILINE)
    assert found, "no version in [workspace.package] of Cargo.toml"
    return found.group(1)


def test_version_is_the_crates_version():
    assert isinstance(dlbridge.__version__, str)
    assert dlbridge.__version__ == workspace_version()


FIX_THE_ENVIRONMENT = (
    "the test suite runs against the package as `make python-build` installs it "
    "(maturin develop into .venv); run `make python-build` and test with .venv/bin/python"
)


@pytest.mark.installed
def test_version_matches_the_installed_metadata():
    try:
        installed = metadata.version("dlbridge")
    except metadata.PackageNotFoundError:
        pytest.fail(
            f"no installed metadata for dlbridge next to {sys.executable}: " + FIX_THE_ENVIRONMENT
        )
    # Cargo.toml's [workspace.package] version is the source of truth; maturin writes it as
    # PEP 440, the same string for a plain x.y.z (0.1.0 today). A pre-release such as
    # 0.2.0-alpha.1 would be written 0.2.0a1: this test must then spell that conversion.
    version = workspace_version()
    assert re.fullmatch(r"\d+\.\d+\.\d+", version), (
        f"Cargo.toml's version {version!r} is not a plain x.y.z: compare its PEP 440 form"
    )
    assert installed == version == dlbridge.__version__, (
        f"installed metadata says {installed}, Cargo.toml {version}: " + FIX_THE_ENVIRONMENT
    )


def test_version_on_the_command_line(capsys):
    assert main(["--version"]) == 0
    assert capsys.readouterr().out == f"dlbridge {dlbridge.__version__}\n"
    assert main(["-V"]) == 0
    assert capsys.readouterr().out == f"dlbridge {dlbridge.__version__}\n"


def test_python_m_dlbridge_version():
    result = subprocess.run(
        [sys.executable, "-m", "dlbridge", "--version"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"dlbridge {dlbridge.__version__}\n"


@pytest.mark.installed
def test_console_script_version():
    script = os.path.join(os.path.dirname(sys.executable), "dlbridge")
    assert os.path.exists(script), (
        f"no `dlbridge` console script next to {sys.executable}: " + FIX_THE_ENVIRONMENT
    )
    result = subprocess.run([script, "--version"], capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr
    assert result.stdout == f"dlbridge {dlbridge.__version__}\n"


def test_help_names_the_version_option(capsys):
    assert main(["--help"]) == 0
    assert "--version" in capsys.readouterr().out


def test_the_protocol_works_without_numpy():
    result = run_python(
        WITHOUT_NUMPY
        + "import dlbridge\n"
        # Rust memory, read through the buffer protocol.
        + "t = dlbridge.arange(6, 'float32')\n"
        + "assert memoryview(t).tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]\n"
        # The exchange, both ways: an object with __dlpack__, and a capsule.
        + "u = dlbridge.from_dlpack(t)\n"
        + "assert (u.shape, u.dtype, u.data_ptr) == ((6,), 'float32', t.data_ptr)\n"
        + "assert type(t.__dlpack__(max_version=(1, 0))).__name__ == 'PyCapsule'\n"
        + "assert dlbridge.explain(t)['import']['copied'] is False\n"
        # Typed arguments read any buffer (bytearray, array.array) without NumPy.
        + "import array\n"
        + "argument = dlbridge.explain(array.array('f', [1.0, 2.0]))['argument']\n"
        + "assert (argument['path'], argument['dtype']) == ('buffer', 'float32'), argument\n"
        + "assert dlbridge.explain(bytearray(3))['writable_argument']['path'] == 'buffer'\n"
        + "assert sys.modules['numpy'] is None\n"
        + "print(dlbridge.__version__)\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == dlbridge.__version__


@pytest.mark.parametrize("how", ["python -m dlbridge", "main()"])
def test_the_checker_without_numpy_says_how_to_install_it(how):
    if how == "main()":
        code = "from dlbridge.__main__ import main\nraise SystemExit(main(['check']))\n"
    else:
        code = (
            "import runpy\nsys.argv = ['dlbridge', 'check']\n"
            "runpy.run_module('dlbridge', run_name='__main__', alter_sys=True)\n"
        )
    result = run_python(WITHOUT_NUMPY + code)
    assert result.returncode == 2, (result.returncode, result.stdout, result.stderr)
    assert 'pip install "dlbridge[check]"' in result.stderr
    assert "Traceback" not in result.stderr, result.stderr
    assert result.stdout == ""


def test_importing_the_checker_without_numpy_names_the_extra():
    result = run_python(
        WITHOUT_NUMPY
        + "try:\n"
        + "    import dlbridge.check\n"
        + "except ModuleNotFoundError as missing:\n"
        + "    assert missing.name == 'numpy', missing.name\n"
        + "    print(missing)\n"
        + "else:\n"
        + "    raise SystemExit('dlbridge.check imported without NumPy')\n"
    )
    assert result.returncode == 0, result.stderr[-3000:]
    assert 'pip install "dlbridge[check]"' in result.stdout
