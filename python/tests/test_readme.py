"""Every code block of the README is either run by a test or marked as what it is.

- `python` blocks run here, each in a fresh interpreter with checks of what the block says
  appended (`PYTHON_BLOCKS`); MXNet's, which needs MXNet's own environment, runs in
  python/tests/mxnet/test_mxnet.py.
- `rust` and `rust,ignore` blocks are compiled and run by the Rust tests
  (crates/dlbridge/tests/readme_quick_start.rs, crates/dlbridge-pyo3/tests/readme_blocks.rs,
  which also counts them).
- `sh` blocks are commands: each line must name a make target, script, crate feature, package
  extra or `dlbridge check` option that exists (the checker's own argument parser reads its
  command lines).
- `text` blocks are output, shown as printed.

A block of any other kind, or with none, fails: it would be code that nothing checks.
"""

from __future__ import annotations

import argparse
import os
import pathlib
import re
import shlex
import subprocess
import sys

import pytest
import tomllib

from _frameworks import import_framework
from _helpers import readme_blocks, readme_python_block

ROOT = pathlib.Path(__file__).resolve().parents[2]
KINDS = {"python", "rust", "rust,ignore", "sh", "text"}


def test_every_block_is_of_a_checked_kind():
    unknown = [(line, info) for line, info, _ in readme_blocks() if info not in KINDS]
    assert unknown == [], f"README blocks of no checked kind (line, info string): {unknown}"


#: Each python block of the README (by a line it holds), and what is checked after it ran.
PYTHON_BLOCKS = {
    "t = dlbridge.from_dlpack(array)": (
        "assert x.shape == (3, 4) and x.dtype == torch.float32\n"
        "assert x.sum().item() == 66.0  # the array's values, after the array was deleted\n"
    ),
    "dd.ray_setup_hook": (
        "if __name__ == '__main__':\n"
        "    assert torch.equal(x, torch.ones(1024))\n"
        "    # A tensor sent to a worker and back, through dlbridge's serializer both ways.\n"
        "    total = client.submit(lambda t: t * 2, torch.ones(8)).result()\n"
        "    assert isinstance(total, torch.Tensor) and float(total.sum()) == 16.0\n"
        "    client.close()\n"
        "    ray.shutdown()\n"
    ),
}
#: The python blocks that run elsewhere, and where.
PYTHON_BLOCKS_ELSEWHERE = {"import mxnet as mx": "python/tests/mxnet/test_mxnet.py"}


def test_every_python_block_is_run_by_a_test():
    python = [code for _, info, code in readme_blocks() if info == "python"]
    for code in python:
        owners = [line for line in {**PYTHON_BLOCKS, **PYTHON_BLOCKS_ELSEWHERE} if line in code]
        assert len(owners) == 1, f"a python block of the README that no test runs:\n{code}"
    for where in PYTHON_BLOCKS_ELSEWHERE.values():
        assert "README" in (ROOT / where).read_text(encoding="utf-8"), where


@pytest.mark.parametrize("first_line", list(PYTHON_BLOCKS), ids=["quick-start", "ray-and-dask"])
def test_the_python_block_runs(first_line, tmp_path):
    frameworks = {"torch": "torch", "ray": "ray", "distributed": "distributed"}
    for module, distribution in frameworks.items():
        if module in readme_python_block(first_line):
            import_framework(module, distribution)
    script = tmp_path / "block.py"
    script.write_text(readme_python_block(first_line) + PYTHON_BLOCKS[first_line], encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


# --- sh blocks: commands ------------------------------------------------------------------


def make_targets() -> set[str]:
    text = (ROOT / "Makefile").read_text(encoding="utf-8")
    targets = set()
    for line in text.splitlines():
        match = re.match(r"^([A-Za-z0-9_. -]+):(?!=)", line)
        if match:
            targets.update(match.group(1).split())
    return targets


def crate_features(crate: str) -> set[str]:
    manifest = tomllib.loads((ROOT / "crates" / crate / "Cargo.toml").read_text(encoding="utf-8"))
    return set(manifest.get("features", {}))


def check_parser() -> argparse.ArgumentParser:
    from dlbridge.check import cli

    parser = cli._parser()
    parser.exit_on_error = False
    return parser


def check_command(words: list[str]) -> None:
    """A `dlbridge check` command line: its options must parse."""
    try:
        check_parser().parse_args(words)
    except (argparse.ArgumentError, SystemExit) as error:
        command = f"dlbridge check {shlex.join(words)}"
        raise AssertionError(f"`{command}` does not parse: {error}") from None


def check_sh_line(line: str) -> None:
    words = shlex.split(line, comments=True)
    if not words:
        return
    if words[0] == "make":
        missing = set(words[1:]) - make_targets()
        assert not missing, f"{line!r}: no make target {sorted(missing)}"
    elif words[0] == "bash":
        assert (ROOT / words[1]).is_file(), f"{line!r}: no script {words[1]}"
    elif words[:2] == ["cargo", "add"]:
        crate = words[2]
        assert (ROOT / "crates" / crate / "Cargo.toml").is_file(), f"{line!r}: no crate {crate}"
        if "--features" in words:
            wanted = set(words[words.index("--features") + 1].split(","))
            assert wanted <= crate_features(crate), f"{line!r}: features {wanted}"
    elif words[:2] == ["pip", "install"]:
        project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
        for requirement in words[2:]:
            name, _, extras = requirement.partition("[")
            assert name == project["name"], f"{line!r}: the package is {project['name']}"
            for extra in filter(None, extras.rstrip("]").split(",")):
                assert extra in project["optional-dependencies"], f"{line!r}: no extra {extra}"
    elif words[:3] == ["python", "-m", "dlbridge"] and words[3] == "check":
        check_command(words[4:])
    elif words[:2] == ["dlbridge", "check"]:
        check_command(words[2:])
    elif os.path.basename(words[0]) == "mpiexec":
        script = next(word for word in words if word.endswith(".py"))
        assert (ROOT / script).is_file(), f"{line!r}: no script {script}"
    else:
        raise AssertionError(f"a README command of no kind this test checks: {line!r}")


def test_every_sh_block_names_what_exists():
    checked = 0
    for number, info, code in readme_blocks():
        if info != "sh":
            continue
        for line in code.replace("\\\n", " ").splitlines():
            try:
                check_sh_line(line)
            except AssertionError as error:
                raise AssertionError(f"README.md, the block at line {number}: {error}") from None
            checked += 1
    assert checked >= 15, f"only {checked} command lines found in the README's sh blocks"


def test_the_command_checks_catch_what_does_not_exist():
    # Positive controls: a line naming what does not exist fails each kind of check.
    for line in (
        "make no-such-target",
        "bash scripts/no-such-script.sh",
        "cargo add dlbridge --features no-such-feature",
        'pip install "dlbridge[no-such-extra]"',
        "dlbridge check --no-such-option",
        "rm -rf /",
    ):
        with pytest.raises(AssertionError):
            check_sh_line(line)
