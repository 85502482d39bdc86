"""The code blocks of the user-facing documents, for the tests that run or check them.

The documents are the repository's README.md and the user guide's pages (docs/guide/src,
built by `make guide`). test_readme.py checks the README's blocks, test_guide.py the guide's,
and python/tests/mxnet/test_mxnet.py runs the one python block that needs MXNet's own
environment (`python_block("import mxnet as mx")`). The Rust blocks are doc tests, counted by
crates/dlbridge-pyo3/tests/readme_blocks.rs.

The `sh` blocks hold commands: `check_sh_line` accepts a line only when what it names exists
(a make target, a script, a crate and its features, the package and its extras, a
`dlbridge check` option line, an example script).
"""

from __future__ import annotations

import argparse
import ast
import os
import pathlib
import shlex

import tomllib

ROOT = pathlib.Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
GUIDE = ROOT / "docs" / "guide" / "src"
#: The repository, as Cargo.toml and pyproject.toml name it.
REPOSITORY = "https://github.com/dlbridge/dlbridge"


def guide_pages() -> list[pathlib.Path]:
    """Every page of the guide, SUMMARY.md included."""
    return sorted(GUIDE.glob("*.md"))


def markdown_blocks(path: pathlib.Path) -> list[tuple[int, str, str]]:
    """(line, info string, code) of every fenced block of a Markdown file."""
    found = []
    lines = path.read_text(encoding="utf-8").splitlines()
    start = None
    info = ""
    for number, line in enumerate(lines, 1):
        if not line.startswith("```"):
            continue
        if start is None:
            start, info = number, line[3:].strip()
        else:
            found.append((start, info, "\n".join(lines[start : number - 1]) + "\n"))
            start = None
    assert start is None, f"{path}: the block opened at line {start} is never closed"
    return found


def python_blocks(paths: list[pathlib.Path]) -> list[tuple[pathlib.Path, int, str]]:
    """(file, line, code) of every python block of the files."""
    return [
        (path, line, code)
        for path in paths
        for line, info, code in markdown_blocks(path)
        if info == "python"
    ]


def python_block(holding: str) -> str:
    """The one python block of the README and the guide that holds the line `holding`."""
    matching = [
        code
        for _, _, code in python_blocks([README, *guide_pages()])
        if holding in code.splitlines()
    ]
    assert len(matching) == 1, f"one python block of the README and the guide holds {holding!r}"
    return matching[0]


def imported_modules(code: str) -> set[str]:
    """The top-level modules a block imports."""
    modules = set()
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            modules.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            modules.add(node.module.split(".")[0])
    return modules


# --- sh blocks: commands ------------------------------------------------------------------


def make_targets() -> set[str]:
    import re

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


def check_cargo_add(line: str, words: list[str]) -> None:
    """`cargo add [--git URL] CRATE... [--features A,B]`: the crates are the workspace's
    published crates (or PyO3), the git URL is the repository's, the features exist."""
    crates = []
    index = 2
    while index < len(words):
        word = words[index]
        if word == "--git":
            assert words[index + 1] == REPOSITORY, f"{line!r}: the repository is {REPOSITORY}"
            index += 2
        elif word == "--features":
            wanted = set(words[index + 1].split(","))
            for crate in crates:
                assert wanted <= crate_features(crate), f"{line!r}: features {wanted}"
            index += 2
        else:
            assert not word.startswith("-"), f"{line!r}: an option this test does not know"
            crates.append(word)
            index += 1
    assert crates, f"{line!r}: no crate"
    for crate in crates:
        assert (ROOT / "crates" / crate / "Cargo.toml").is_file(), f"{line!r}: no crate {crate}"


def check_pip_install(line: str, words: list[str]) -> None:
    """`pip install REQUIREMENT...`: the package (with extras that exist), the clone (`.`),
    or the package from the repository's git URL."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    for requirement in words[2:]:
        name, _, url = requirement.partition(" @ ")
        if url:
            assert url == f"git+{REPOSITORY}", f"{line!r}: the repository is git+{REPOSITORY}"
        name, _, extras = name.partition("[")
        if name == ".":
            assert (ROOT / "pyproject.toml").is_file(), f"{line!r}: no pyproject.toml here"
        else:
            assert name == project["name"], f"{line!r}: the package is {project['name']}"
        for extra in filter(None, extras.rstrip("]").split(",")):
            assert extra in project["optional-dependencies"], f"{line!r}: no extra {extra}"


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
        check_cargo_add(line, words)
    elif words[:2] == ["pip", "install"]:
        check_pip_install(line, words)
    elif words[:3] == ["python", "-m", "dlbridge"] and words[3] == "check":
        check_command(words[4:])
    elif words[:2] == ["dlbridge", "check"]:
        check_command(words[2:])
    elif os.path.basename(words[0]) == "mpiexec":
        script = next(word for word in words if word.endswith(".py"))
        assert (ROOT / script).is_file(), f"{line!r}: no script {script}"
    else:
        raise AssertionError(f"a command of no kind this test checks: {line!r}")


def sh_lines(path: pathlib.Path) -> list[tuple[int, str]]:
    """(block line, command line) of every sh block of a file, continuations joined."""
    return [
        (number, line)
        for number, info, code in markdown_blocks(path)
        if info == "sh"
        for line in code.replace("\\\n", " ").splitlines()
    ]


def check_sh_blocks(path: pathlib.Path) -> int:
    """Checks every command line of a file's sh blocks (`check_sh_line`), naming the file and
    the block of a line that fails; the number of lines checked."""
    checked = 0
    for number, line in sh_lines(path):
        try:
            check_sh_line(line)
        except AssertionError as error:
            raise AssertionError(f"{path.name}, the block at line {number}: {error}") from None
        checked += 1
    return checked
