"""Every code block of the README is either run by a test or marked as what it is.

- `python` blocks run here, each in a fresh interpreter with checks of what the block says
  appended (`PYTHON_BLOCKS`).
- `rust` blocks are the two quick starts, each equal to a crate README's doc-tested example
  (crates/dlbridge/tests/readme_quick_start.rs, crates/dlbridge-pyo3/tests/readme_blocks.rs,
  which also counts them).
- `sh` blocks are commands: each line must name a make target, script, crate and feature,
  package and extra, or `dlbridge check` option that exists (`_docs.check_sh_line`).
- `text` blocks are output, shown as printed.
- Links to files of the repository must reach a file.

A block of any other kind, or with none, fails: it would be code that nothing checks. The
user guide's blocks are test_guide.py's.
"""

from __future__ import annotations

import re
import subprocess
import sys

import pytest

from _docs import README, ROOT, check_sh_blocks, check_sh_line, markdown_blocks, python_blocks
from _frameworks import import_framework

KINDS = {"python", "rust", "sh", "text"}


def test_every_block_is_of_a_checked_kind():
    blocks = markdown_blocks(README)
    unknown = [(line, info) for line, info, _ in blocks if info not in KINDS]
    assert unknown == [], f"README blocks of no checked kind (line, info string): {unknown}"
    assert {info for _, info, _ in blocks} == KINDS, "the README's kinds of blocks changed"


#: Each python block of the README (by a line it holds), and what is checked after it ran.
PYTHON_BLOCKS = {
    "t = dlbridge.from_dlpack(array)          # zero-copy, validated": (
        "assert x.shape == (3, 4) and x.dtype == torch.float32\n"
        "assert x.sum().item() == 66.0  # the array's values, after the array was deleted\n"
    ),
}


def test_every_python_block_is_run_by_a_test():
    for _, _, code in python_blocks([README]):
        owners = [line for line in PYTHON_BLOCKS if line in code.splitlines()]
        assert len(owners) == 1, f"a python block of the README that no test runs:\n{code}"
    assert len(python_blocks([README])) == len(PYTHON_BLOCKS)


@pytest.mark.parametrize("holding", list(PYTHON_BLOCKS), ids=["quick-start"])
def test_the_python_block_runs(holding, tmp_path):
    (code,) = [code for _, _, code in python_blocks([README]) if holding in code.splitlines()]
    if "torch" in code:
        import_framework("torch", "torch")
    script = tmp_path / "block.py"
    script.write_text(code + PYTHON_BLOCKS[holding], encoding="utf-8")
    result = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        timeout=600,
        check=False,
    )
    assert result.returncode == 0, (result.stdout + result.stderr)[-4000:]


def test_every_sh_block_names_what_exists():
    checked = check_sh_blocks(README)
    assert checked >= 10, f"only {checked} command lines found in the README's sh blocks"


def test_the_command_checks_catch_what_does_not_exist():
    # Positive controls: a line naming what does not exist fails each kind of check.
    for line in (
        "make no-such-target",
        "bash scripts/no-such-script.sh",
        "cargo add dlbridge --features no-such-feature",
        "cargo add --git https://github.com/someone/else dlbridge",
        "cargo add --git https://github.com/dlbridge/dlbridge no-such-crate",
        'pip install "dlbridge[no-such-extra]"',
        'pip install ".[no-such-extra]"',
        'pip install "dlbridge @ git+https://github.com/someone/else"',
        "dlbridge check --no-such-option",
        "rm -rf /",
    ):
        with pytest.raises(AssertionError):
            check_sh_line(line)


def test_links_to_files_reach_them():
    text = README.read_text(encoding="utf-8")
    targets = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [target for target in targets if "://" not in target]
    assert len(local) >= 15, local
    missing = [target for target in local if not (ROOT / target).exists()]
    assert missing == [], f"README links to files that do not exist: {missing}"


def test_the_readme_stays_short():
    # The README is the front door; the guide (docs/guide) is where topics live.
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines <= 260, f"README.md has {lines} lines: move the detail into the guide"


def test_the_readme_names_the_two_commands_for_a_fresh_machine():
    text = README.read_text(encoding="utf-8")
    assert "| `make tour` |" in text and "| `make test` |" in text
